/* kernels/workload.h: what a tuning task computes.
 *
 * A Workload is an operator with its shape, dtype (float32 only for now),
 * layout and fused epilogue. It has a canonical key (the identity of a task
 * in logs and networks), a FLOP count, a list of argument buffers, and a
 * straightforward reference implementation that every candidate is checked
 * against.
 *
 * Argument convention, shared by every template and target: a kernel takes
 * `float **args`, the inputs first in the order Workload_args lists them and
 * the output LAST. All arguments are dense float32 arrays in the workload's
 * canonical layout:
 *   conv2d NCHW : data[n][ci][h][w], weight[co][ci][kh][kw], (bias[co]), (residual = out shape), out[n][co][oh][ow]
 *   conv2d NHWC : data[n][h][w][ci], weight[kh][kw][ci][co], (bias[co]), (residual), out[n][oh][ow][co]
 *   depthwise   : as conv2d with co = ci * multiplier; weight NCHW: [ci][mult][kh][kw], NHWC: [kh][kw][ci][mult]
 *   dense       : data[m][k], weight[n][k], (bias[n]), out[m][n]          (out = data * weight^T)
 *   batch_matmul: a[b][m][k], b[b][n][k], out[b][m][n]                     (out = a * b^T per batch)
 * Epilogue order: out = act(conv + bias + residual) with each part optional; act is ReLU
 * (relu=1) or ReLU6, a clip to [0, 6] (relu6=1, convolutions only: MobileNet-v2's).
 */
#ifndef TT_KERNELS_WORKLOAD_H
#define TT_KERNELS_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum {
    OP_CONV2D = 0,
    OP_DEPTHWISE_CONV2D,
    OP_DENSE,
    OP_BATCH_MATMUL,
    OP_COUNT,
    /* A tensor expression (`tune --expr FILE.te`, kernels/templates/te/te_task.h). Outside
     * 0..OP_COUNT-1: the loops over the template operators leave it out. */
    OP_EXPR = 64
} OpKind;

typedef enum { LAYOUT_NCHW = 0, LAYOUT_NHWC } Layout;

#define WORKLOAD_KEY_LEN 192
#define WORKLOAD_MAX_ARGS 8

typedef struct Workload {
    OpKind op;
    Layout layout;
    /* conv2d / depthwise_conv2d (depthwise: co = ci * mult, mult >= 1) */
    int64_t n, ci, h, w, co, kh, kw;
    int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
    int64_t mult;
    /* dense (m x k) * (n x k)^T, batch_matmul adds b */
    int64_t m, k, b;
    /* dense uses `n` above as its output-feature count */
    bool bias, relu, residual;
    bool relu6; /* the activation clips to [0, 6] (ReLU6) instead of ReLU; not with relu */
    /* OP_EXPR: what the key spells out (so `best`, `view` and the roofline
     * work from a record's key alone), and the expression itself. */
    char expr_name[32]; /* the file's name without folder and ".te" */
    char expr_te[24];   /* the expression's workload key, "te-" and 16 hex digits (te/dag.h) */
    double expr_flops;
    double expr_bytes;         /* every input read once and the output written once */
    int64_t expr_out;          /* elements of the output */
    int64_t expr_red;          /* the longest reduction of any stage (sets the comparison's tolerance) */
    const struct TeTask *expr; /* the program, in the session that loaded it; NULL from Workload_parse */
} Workload;

const char *Op_name(OpKind op); /* "conv2d", "depthwise_conv2d", "dense", "batch_matmul" */
const char *Layout_name(Layout l);

/* Parses a task SPEC "op:key=value,...". Keys:
 *   conv2d / depthwise_conv2d: n (default 1), ci, h, w, co (conv2d), mult (depthwise,
 *     default 1), kh, kw, stride (or stride_h/stride_w, default 1), pad (or pad_h/pad_w,
 *     default 0), dilation (or dil_h/dil_w, default 1), layout=NCHW|NHWC (default NCHW),
 *     bias=0|1, relu=0|1, relu6=0|1 (a clip to [0, 6]), residual=0|1
 *   dense: m, n, k, bias, relu
 *   batch_matmul: b, m, n, k
 *   expr: name, te, flops, bytes, out, red (the key of a tensor expression, as
 *     Workload_key writes it; the parsed workload has no program: it serves
 *     FLOPs and the roofline, not measurements)
 * Unknown keys, missing required keys, non-numbers, and extents <= 0 (pad < 0)
 * are errors whose message names the key. The output size must be >= 1. */
Status Workload_parse(const char *spec, Workload *out, char *err);

/* Validates derived sizes (output extents >= 1, etc.); Workload_parse calls it. */
Status Workload_validate(const Workload *this, char *err);

/* Canonical key: the spec with every key spelled out in a fixed order, e.g.
 * "conv2d:n=1,ci=256,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1,dilation=1,layout=NCHW"
 * (stride/pad/dilation written as a single value when both axes agree, and
 * bias/relu/residual only when set). Workload_parse(key) gives back an equal workload. */
void Workload_key(const Workload *this, char *buf, size_t n);
bool Workload_equal(const Workload *a, const Workload *b);

int64_t Workload_outH(const Workload *this);
int64_t Workload_outW(const Workload *this);
double Workload_flops(const Workload *this); /* multiply-add = 2 FLOPs; epilogue not counted */
/* The FLOPs a kernel cannot avoid: Workload_flops without the products with
 * a convolution's zero padding (a kernel may skip those taps). The roof's
 * compute ceiling is set by these; GFLOPS figures keep Workload_flops. */
double Workload_usefulFlops(const Workload *this);
/* Compulsory traffic in bytes: every argument (inputs, bias, residual) read
 * once and the output written once, float32 (the roofline's denominator). */
double Workload_compulsoryBytes(const Workload *this);

/* The argument list: names ("data", "weight", "bias", "residual", "out") and
 * element counts; returns the number of args (output last). */
typedef struct ArgInfo {
    const char *name;
    size_t count;
} ArgInfo;
int Workload_args(const Workload *this, ArgInfo *args);

/* Fills the inputs (not the output) with deterministic values in [-1, 1) from seed. */
void Workload_fillInputs(const Workload *this, float **args, uint64_t seed);

/* Straightforward reference into args[last]; single-threaded, simple loops. */
void Workload_reference(const Workload *this, float **args);
/* The same; TT_ERR (one sentence naming the tensor) when the memory for it
 * cannot be had, where Workload_reference aborts (tests only). */
Status Workload_computeReference(const Workload *this, float **args, char *err);

/* Compares a candidate output with the reference. Tolerance scales with the
 * reduction length (float32 summation order differs between kernels). On a
 * mismatch returns false and describes the first bad element in msg. */
bool Workload_compare(const Workload *this, const float *ref, const float *got, char *msg, size_t n);

#endif
