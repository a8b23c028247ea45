/* tuner/net/ops/nn_quant.c: the 8-bit ops of the nn family: ConvInteger and
 * MatMulInteger (int32 sums of (a - a_zero_point) * (b - b_zero_point)) and
 * QLinearConv and QLinearMatMul (that sum, plus QLinearConv's int32 bias,
 * times a_scale * b_scale / y_scale, rounded half to even, plus
 * y_zero_point, saturated to its type). Zero points and scales are one value
 * or one per output channel (conv weights), per row of A or per column of B.
 * The sums run in double through the float ops' kernels: exact for 8-bit
 * operands. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/nn_util.h"

static const NdType Q8[] = {ND_U8, ND_I8, ND_UNDEF};

/* Where each operand sits among the inputs (-1: not an input of the op). */
typedef struct QLayout {
    int a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp, bias;
} QLayout;
static const QLayout INTEGER = {0, -1, 2, 1, -1, 3, -1, -1, -1};
static const QLayout QLINEAR = {0, 1, 2, 3, 4, 5, 6, 7, 8};

static const QLayout *q_layout(const OpCtx *ctx) { return strncmp(ctx->node->op, "QLinear", 7) ? &INTEGER : &QLINEAR; }

static const NdTensor *q_in(const OpCtx *ctx, int i) { return i >= 0 && i < ctx->n_in ? ctx->in[i] : NULL; }

/* A context with A and B as inputs 0 and 1 alone, for the float ops' shapes. */
static OpCtx q_shadow(const OpCtx *ctx, const QLayout *l, const NdTensor **two) {
    OpCtx s = *ctx;
    two[0] = ctx->in[l->a];
    two[1] = ctx->in[l->b];
    s.in = two;
    s.n_in = 2;
    return s;
}

/* int32 for the Integer ops; else y_zero_point's type (uint8 without one). */
static NdType q_outType(const OpCtx *ctx, const QLayout *l) {
    const NdTensor *zp = q_in(ctx, l->y_zp);
    return l->y_zp < 0 ? ND_I32 : zp ? zp->type : ND_U8;
}

static Status q_infer(OpCtx *ctx, bool conv) {
    const QLayout *l = q_layout(ctx);
    const NdTensor *two[2];
    if (Op_requireType(ctx, l->a, Q8) != TT_OK || Op_requireType(ctx, l->b, Q8) != TT_OK ||
        (l->y_zp >= 0 && Op_requireType(ctx, l->y_zp, Q8) != TT_OK))
        return TT_ERR;
    ctx->out[0].type = q_outType(ctx, l);
    ctx->out[0].shape.rank = -1;
    if (ctx->in[l->a]->shape.rank < 0 || ctx->in[l->b]->shape.rank < 0) return TT_OK;
    OpCtx s = q_shadow(ctx, l, two);
    NnConv cv;
    MmDims d;
    Status st = conv ? Nn_convSetup(&s, &cv, &ctx->out[0].shape) : Nn_matmulDims(&s, &d, &ctx->out[0].shape);
    return st;
}

Status QConv_infer(OpCtx *ctx) { return q_infer(ctx, true); }
Status QMatMul_infer(OpCtx *ctx) { return q_infer(ctx, false); }

/* Element (i / inner) % count of t (one value: that one; none: 0). */
static double pick(const NdTensor *t, int64_t i, int64_t inner) {
    if (!t || t->count == 0) return 0;
    return NdTensor_get(t, t->count == 1 ? 0 : (i / (inner > 0 ? inner : 1)) % t->count);
}

/* t minus its zero point zp (picked with inner), as doubles (free them). */
static double *q_shift(const NdTensor *t, const NdTensor *zp, int64_t inner) {
    double *v = malloc(sizeof *v * (size_t)(t->count > 0 ? t->count : 1));
    for (int64_t i = 0; v && i < t->count; i++)
        v[i] = NdTensor_get(t, i) - pick(zp, i, inner);
    return v;
}

/* The sums into output 0: as they are (int32), or requantised. The scales
 * of A and B are picked with a_inner and b_inner along the output. */
static Status q_store(OpCtx *ctx, const NdShape *ys, const double *acc, int64_t a_inner, int64_t b_inner) {
    const QLayout *l = q_layout(ctx);
    NdType t = q_outType(ctx, l);
    if (NdTensor_alloc(&ctx->out[0], t, ys, ctx->err) != TT_OK) return TT_ERR;
    double lo = t == ND_U8 ? 0 : -128, hi = t == ND_U8 ? 255 : 127;
    for (int64_t i = 0; i < ctx->out[0].count; i++) {
        double v = acc[i];
        if (l->y_scale >= 0) {
            double s = pick(q_in(ctx, l->a_scale), i, a_inner) * pick(q_in(ctx, l->b_scale), i, b_inner) /
                       pick(q_in(ctx, l->y_scale), i, 1);
            v = nearbyint(v * s) + pick(q_in(ctx, l->y_zp), i, 1);
            v = v < lo ? lo : v > hi ? hi : v;
        }
        NdTensor_set(&ctx->out[0], i, v);
    }
    return TT_OK;
}

/* Shifted operands, the double kernel, the store; frees what it made. */
static Status q_run(OpCtx *ctx, bool conv) {
    const QLayout *l = q_layout(ctx);
    const NdTensor *two[2], *a = ctx->in[l->a], *b = ctx->in[l->b], *bias = q_in(ctx, l->bias);
    NnConv cv;
    MmDims d;
    NdShape ys;
    OpCtx s = q_shadow(ctx, l, two);
    if (q_infer(ctx, conv) != TT_OK || (conv ? Nn_convSetup(&s, &cv, &ys) : Nn_matmulDims(&s, &d, &ys)) != TT_OK)
        return TT_ERR;
    int64_t ny;
    if (NdShape_count(&ys, ND_F64, &ny, ctx->err) != TT_OK) return TT_ERR;
    /* the zero points: per output channel of the conv weight, per row of A (k
     * long) and per column of B */
    int64_t a_in = conv ? 1 : d.k, b_in = conv ? b->count / (cv.m > 0 ? cv.m : 1) : 1;
    double *av = q_shift(a, q_in(ctx, l->a_zp), a_in), *bv = q_shift(b, q_in(ctx, l->b_zp), b_in);
    double *bb = bias ? q_shift(bias, NULL, 1) : NULL, *y = calloc((size_t)(ny > 0 ? ny : 1), sizeof *y);
    bool ok = av && bv && y && (!bias || bb);
    if (ok) ok = conv ? Nn_conv_d(&cv, av, bv, bb, y) : Nn_matmul(ctx, &d, true, (const void *const[]){av, bv}, y);
    Status st = ok ? q_store(ctx, &ys, y, conv ? 1 : d.n, conv ? NnWin_outSize(&cv.win) : 1)
                   : tt_fail(ctx->err, "out of memory for %s", ctx->node->op);
    free(av);
    free(bv);
    free(bb);
    free(y);
    return st;
}

Status QConv_run(OpCtx *ctx) { return q_run(ctx, true); }
Status QMatMul_run(OpCtx *ctx) { return q_run(ctx, false); }

double QConv_flops(const OpCtx *ctx) {
    const NdShape *ws = &ctx->in[q_layout(ctx)->b]->shape;
    if (ws->rank < 1 || ws->dim[0] == 0) return 0;
    return 2 * Nn_count(&ctx->out[0].shape) * Nn_count(ws) / (double)ws->dim[0];
}

double QMatMul_flops(const OpCtx *ctx) {
    const NdShape *as = &ctx->in[0]->shape;
    return as->rank < 1 ? 0 : 2 * Nn_count(&ctx->out[0].shape) * (double)as->dim[as->rank - 1];
}
