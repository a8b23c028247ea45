/* tuner/net/ops/nn_util.h: what the files of the nn family (ops/nn*.c) share.
 *
 * Not a public header: only ops/nn*.c include it. ops/nn.c holds the family's
 * table (OPS_NN); the op functions live in ops/nn_conv.c, nn_pool.c, nn_norm.c,
 * nn_gemm.c, nn_softmax.c, nn_einsum.c, nn_loss.c, nn_quant.c and nn_rnn.c
 * and are declared here.
 *
 * Precision: Conv, ConvTranspose, Gemm and MatMul compute float32 and float16
 * in float (float accumulation) and float64 in double, with kernels written
 * once (ops/nn_kern.h, instantiated for both). The other ops are light next to
 * them and compute in double from a converted copy, rounding once on the way
 * out. */
#ifndef TT_NET_OPS_NN_UTIL_H
#define TT_NET_OPS_NN_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "tuner/net/ops/op.h"

/* float32, float16, float64 (ND_UNDEF ends it): the types the nn ops take. */
extern const NdType NN_FLOATS[];

/* A window over the spatial dimensions of an N x C x D1 x ... tensor (conv
 * and pools), held as three spatial dimensions: a 1-D or 2-D op has leading
 * dimensions of size 1 (in = out = k = s = d = 1, no pads), so one loop nest
 * serves 1-D, 2-D and 3-D. */
#define NN_SP 3
typedef struct NnWin {
    int nsp; /* the op's own spatial dimensions, 1..NN_SP */
    int64_t in[NN_SP], out[NN_SP], k[NN_SP], s[NN_SP], d[NN_SP], pb[NN_SP], pe[NN_SP];
} NnWin;

/* Reads strides, dilations, pads and auto_pad of the node for input shape x
 * (rank 3..5) and kernel k (x->rank - 2 values), and sets the output sizes
 * (ceil_mode rounds up, but a window that would start in the end padding is
 * dropped). TT_ERR names the attribute that does not fit. */
Status NnWin_init(NnWin *w, const NetNode *node, const NdShape *x, const int64_t *k, bool ceil_mode, char *err);
/* The ints attribute `name` with nsp values (per * nsp for pads), each at
 * least min; absent: every value is def. */
Status Nn_winInts(const NetNode *node, const char *name, int nsp, int per, int64_t min, int64_t def, int64_t *out,
                  char *err);
/* Checks the node's auto_pad attribute (check functions). */
Status Nn_checkAutoPad(const NetNode *node, char *err);
/* Product of the window's kernel sizes, input and output spatial sizes. */
int64_t NnWin_kernel(const NnWin *w);
int64_t NnWin_inSize(const NnWin *w);
int64_t NnWin_outSize(const NnWin *w);

/* Element data in the working precision. Nn_view gives t's data as floats
 * (dbl false) or doubles (dbl true): t's own data when it already is that
 * type, else a converted copy that Nn_viewDone frees. */
typedef struct NnView {
    const void *p;
    void *owned;
} NnView;
Status Nn_view(const NdTensor *t, bool dbl, NnView *v, char *err);
void Nn_viewDone(NnView *v);
/* Allocates out (type, shape) and gives a buffer of floats or doubles to
 * write: out's data when it is that type, else scratch that Nn_outDone
 * converts into out and frees. */
Status Nn_outAlloc(NdTensor *out, NdType type, const NdShape *shape, bool dbl, void **buf, char *err);
void Nn_outDone(NdTensor *out, bool dbl, void *buf);

/* The compute of an op over its inputs' data in the working precision (in[i]
 * NULL for an omitted input) into output 0's buffer y. False: failed (with
 * ctx->err set, or out of memory when it is empty). */
typedef bool (*NnCompute)(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *y);
#define NN_MAX_VIEWS 9
/* Views inputs 0..n-1 as floats or doubles (dbl), allocates output 0 with
 * input 0's type and shape ys, runs fn, converts the result into output 0
 * and frees what it made. */
Status Nn_runViews(OpCtx *ctx, int n, const NdShape *ys, bool dbl, NnCompute fn, const void *arg);

/* The kernels of ops/nn_kern.h, for float (_f) and double (_d). */
/* C (M x N, row stride ldc) += A (M x K) * B (K x N), where A's element (i, k)
 * is a[i*sam + k*sak] and B's (k, j) is b[k*sbk + j*sbn]. False: out of
 * memory for the packed panels. */
bool Nn_gemm_f(int64_t M, int64_t N, int64_t K, const float *a, int64_t sam, int64_t sak, const float *b, int64_t sbk,
               int64_t sbn, float *c, int64_t ldc);
bool Nn_gemm_d(int64_t M, int64_t N, int64_t K, const double *a, int64_t sam, int64_t sak, const double *b, int64_t sbk,
               int64_t sbn, double *c, int64_t ldc);

/* Y (M x N, contiguous) = alpha * Y + beta * C, C's (i, j) at c[i*sci + j*scj]
 * (c NULL: no C). */
void Nn_scaleAdd_f(int64_t M, int64_t N, double alpha, float *y, double beta, const float *c, int64_t sci, int64_t scj);
void Nn_scaleAdd_d(int64_t M, int64_t N, double alpha, double *y, double beta, const double *c, int64_t sci,
                   int64_t scj);

/* One convolution (or transposed convolution): window, batch, channels and
 * groups. For Conv: x is N x C x in, w is M x C/group x k, y N x M x out.
 * For ConvTranspose the window is the forward conv's that maps y to x: x is
 * N x C x win.out, w is C x M/group x k, y is N x M x win.in. */
typedef struct NnConv {
    NnWin win;
    int64_t n, c, m, group;
    bool transposed; /* ConvTranspose */
} NnConv;
/* y = conv(x, w) + bias (bias may be NULL). Returns false when scratch
 * memory runs out. */
bool Nn_conv_f(const NnConv *cv, const float *x, const float *w, const float *bias, float *y);
bool Nn_conv_d(const NnConv *cv, const double *x, const double *w, const double *bias, double *y);
bool Nn_convT_f(const NnConv *cv, const float *x, const float *w, const float *bias, float *y);
bool Nn_convT_d(const NnConv *cv, const double *x, const double *w, const double *bias, double *y);

/* Conv's geometry and output shape from x (in[0]), w (in[1]) and the bias
 * (in[2], optional); the quantized convolutions call it on a context of
 * their own with those inputs. */
Status Nn_convSetup(const OpCtx *ctx, NnConv *cv, NdShape *out);

/* MatMul's shapes: the batch dimensions broadcast, m x k times k x n. */
typedef struct MmDims {
    NdShape batch, abatch, bbatch; /* the output's batch dimensions; A's and B's own */
    int64_t m, n, k;
} MmDims;
/* From A (in[0]) and B (in[1]); ys: the output shape. */
Status Nn_matmulDims(const OpCtx *ctx, MmDims *d, NdShape *ys);
/* The NnCompute of MatMul (arg: its MmDims). */
bool Nn_matmul(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *y);

/* Op functions (their files say what each supports). */
Status Conv_check(const NetNode *node, const NetModel *model, char *err);
Status Conv_infer(OpCtx *ctx);
Status Conv_run(OpCtx *ctx);
double Conv_flops(const OpCtx *ctx);
Status ConvT_infer(OpCtx *ctx);
Status ConvT_run(OpCtx *ctx);
double ConvT_flops(const OpCtx *ctx);

Status Gemm_check(const NetNode *node, const NetModel *model, char *err);
Status Gemm_infer(OpCtx *ctx);
Status Gemm_run(OpCtx *ctx);
double Gemm_flops(const OpCtx *ctx);
Status MatMul_infer(OpCtx *ctx);
Status MatMul_run(OpCtx *ctx);
double MatMul_flops(const OpCtx *ctx);

Status Pool_check(const NetNode *node, const NetModel *model, char *err);
Status Pool_infer(OpCtx *ctx);
Status MaxPool_run(OpCtx *ctx);
Status AvgPool_run(OpCtx *ctx);
Status LpPool_run(OpCtx *ctx);
double Pool_flops(const OpCtx *ctx);
Status GlobalPool_infer(OpCtx *ctx);
Status GlobalAvgPool_run(OpCtx *ctx);
Status GlobalMaxPool_run(OpCtx *ctx);
double GlobalPool_flops(const OpCtx *ctx);

Status BatchNorm_check(const NetNode *node, const NetModel *model, char *err);
Status BatchNorm_infer(OpCtx *ctx);
Status BatchNorm_run(OpCtx *ctx);
Status InstanceNorm_infer(OpCtx *ctx);
Status InstanceNorm_run(OpCtx *ctx);
Status LayerNorm_check(const NetNode *node, const NetModel *model, char *err);
Status LayerNorm_infer(OpCtx *ctx);
Status LayerNorm_run(OpCtx *ctx);
Status GroupNorm_check(const NetNode *node, const NetModel *model, char *err);
Status GroupNorm_infer(OpCtx *ctx);
Status GroupNorm_run(OpCtx *ctx);
Status Mvn_run(OpCtx *ctx);
Status LpNorm_check(const NetNode *node, const NetModel *model, char *err);
Status LpNorm_run(OpCtx *ctx);
Status Lrn_check(const NetNode *node, const NetModel *model, char *err);
Status Lrn_run(OpCtx *ctx);
double Norm_flops(const OpCtx *ctx);

/* Softmax, LogSoftmax, Hardmax (one run each), Dropout. */
Status Softmax_infer(OpCtx *ctx);
Status Softmax_run(OpCtx *ctx);
Status LogSoftmax_run(OpCtx *ctx);
Status Hardmax_run(OpCtx *ctx);
double Softmax_flops(const OpCtx *ctx);
Status Dropout_check(const NetNode *node, const NetModel *model, char *err);
Status Dropout_infer(OpCtx *ctx);
Status Dropout_run(OpCtx *ctx);

/* s as outer x s->dim[axis] x inner (axis == rank: len 1). */
void Nn_axisSplit(const NdShape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner);
/* Elements of a shape as a double (0 for an unknown shape): for flops. */
double Nn_count(const NdShape *s);

Status Einsum_check(const NetNode *node, const NetModel *model, char *err);
Status Einsum_infer(OpCtx *ctx);
Status Einsum_run(OpCtx *ctx);
double Einsum_flops(const OpCtx *ctx);

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ops/nn_loss.c). */
Status Loss_check(const NetNode *node, const NetModel *model, char *err);
Status Loss_infer(OpCtx *ctx);
Status Nll_run(OpCtx *ctx);
Status Sce_run(OpCtx *ctx);

/* ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul (ops/nn_quant.c). */
Status QConv_infer(OpCtx *ctx);
Status QConv_run(OpCtx *ctx);
Status QMatMul_infer(OpCtx *ctx);
Status QMatMul_run(OpCtx *ctx);
double QConv_flops(const OpCtx *ctx);
double QMatMul_flops(const OpCtx *ctx);

/* RNN, GRU and LSTM (ops/nn_rnn.c). */
Status Rnn_check(const NetNode *node, const NetModel *model, char *err);
Status Rnn_infer(OpCtx *ctx);
Status Rnn_run(OpCtx *ctx);
double Rnn_flops(const OpCtx *ctx);

/* Output 0 has input 0's type and shape, for float inputs only. */
Status Nn_inferSame(OpCtx *ctx);

#endif
