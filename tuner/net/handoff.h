/* tuner/net/handoff.h: the tensors a model program's kernels hand to each
 * other in their blocked layouts (part of the model runtime).
 *
 * An exported kernel works in a blocked layout of its own: its run packs the
 * dense input into it, computes, and unpacks the output. Between two kernels
 * the dense tensor is a detour: the plan here finds, once per program, where
 * a kernel can take its data input (and its residual) from the producing
 * kernel's blocked output instead (a copy that is one memcpy per row when the
 * channel blocks agree), and which kernels need not unpack at all because
 * every reader takes their output blocked. Where the two layouts are one and
 * the same without padding, the reader reads the producer's buffer itself
 * (no copy at all). An elementwise chain
 * (tunetop.Elementwise, or a lone op such a chain can hold) between two
 * kernels whose other inputs are single elements runs in place on the
 * producer's blocked buffer (SiLU, HardSwish between a convolution and a
 * depthwise one), and so do the per-channel scale and the global average
 * pool of a squeeze-excitation block (HoOn).
 *
 * The plan (handoff_plan.c) only decides; the program (mprog.c's NAME.c) runs it: it knows
 * each kernel's functions and buffers. */
#ifndef TT_NET_HANDOFF_H
#define TT_NET_HANDOFF_H

#include <stdbool.h>
#include <stdint.h>

#include "tuner/net/model.h"
#include "tuner/net/ops/op.h"

/* A blocked layout as an exported kernel's header describes it (X_N, X_C,
 * ... X_REPEAT): float[n][ceil(c / cb)][h_alloc][w_alloc][cb], element
 * (n, c, y, x) of the tensor at [n][c / cb][y + top][x + left][c % cb]; with
 * repeat > 1, blocked channel c holds the tensor's channel c / repeat. n == 0:
 * no layout. A dense NCHW tensor is {n, c, h, w, 1, h, w, 0, 0, 1}. */
typedef struct HoLayout {
    int64_t n, c, h, w, cb, h_alloc, w_alloc, top, left, repeat;
} HoLayout;

/* What the plan knows of a node's kernel. */
typedef struct HoKernel {
    bool is_kernel;    /* a tunetop.Kernel node with an instance */
    bool reads_inputs; /* its blocked run still reads the dense inputs (no handoff into it) */
    bool res_buffer;   /* it has a blocked residual buffer (its residual can be handed in) */
    HoLayout in, out;  /* its blocked input and output layouts (n == 0: none) */
} HoKernel;

/* How an op other than a kernel works on a kernel's blocked buffer. */
typedef enum HoOn {
    HO_CHAIN = 1, /* an elementwise chain, or a lone pointwise op, in place (Ho_runChain) */
    HO_SCALE,     /* a Mul by a per-channel scale N x C x 1 x 1, in place (Ho_runScale) */
    HO_POOL,      /* a GlobalAveragePool, which reads it (Ho_runPool) */
} HoOn;

typedef struct HoPlan {
    int *data_from; /* per node: the kernel node whose blocked output is copied into its blocked input, or -1 */
    int *res_from;  /* per node with data_from: the kernel node its residual comes from blocked, or -1: dense */
    int *on;        /* per node: the kernel node on whose blocked output it runs (on_kind), or -1 */
    HoOn *on_kind;
    bool *skip_unpack; /* per node: every reader takes its output blocked; the dense tensor is never written */
    bool *borrow_in;   /* per node with data_from: the layouts are one (HoLayout_one): it reads the producer's buffer */
    bool *borrow_res;  /* per node with res_from: likewise for the residual */
    int n_handoffs;    /* kernel outputs never unpacked */
    int n_borrowed;    /* handed-over tensors read in the producer's buffer, never copied */
} HoPlan;

/* The plan of model m (bound and sorted), kernels[i] for each node. */
void HoPlan_make(const NetModel *m, const HoKernel *kernels, HoPlan *plan);
void HoPlan_done(HoPlan *plan);

/* s and d hold the same tensor (d's channels each repeated d->repeat times). */
bool HoLayout_same(const HoLayout *s, const HoLayout *d);
/* s and d are one layout without padding (no border, whole channel blocks): a buffer of s can be read as
 * a buffer of d, garbage in no position. */
bool HoLayout_one(const HoLayout *s, const HoLayout *d);
/* The floats of a buffer in layout l, padding included. */
int64_t HoLayout_floats(const HoLayout *l);
/* The dense NCHW layout of a tensor of n x c x h x w. */
HoLayout HoLayout_dense(int64_t n, int64_t c, int64_t h, int64_t w);
/* Every element of d's interior from src (layout s, HoLayout_same(s, d));
 * d's border is left as it is. Splits the rows over the program's threads. */
void Ho_reblock(const float *src, const HoLayout *s, float *dst, const HoLayout *d);

/* Runs the elementwise chain of ctx (op tunetop.Elementwise, or a lone
 * pointwise op) in place over a blocked buffer of layout l instead of its
 * dense input 0 (whose tensor it does not read), then gives ctx->out[0] its
 * dense shape, unwritten: nothing reads it (HoPlan_make ran the chain this
 * way only then). */
Status Ho_runChain(OpCtx *ctx, float *blocked, const HoLayout *l);
/* The Mul of ctx (HO_SCALE: the tensor by a per-channel scale, in either
 * input) in place over the tensor's blocked buffer; ctx->out[0] as above. */
Status Ho_runScale(OpCtx *ctx, float *blocked, const HoLayout *l);
/* The GlobalAveragePool of ctx over its input's blocked buffer: ctx->out[0]
 * written, dense N x C x 1 x 1. */
Status Ho_runPool(OpCtx *ctx, const float *blocked, const HoLayout *l);

#endif
