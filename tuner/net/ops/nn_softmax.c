/* tuner/net/ops/nn_softmax.c: Softmax, LogSoftmax and Hardmax (before opset 13
 * the input is seen as 2-D, split at `axis` (default 1); from 13 on, one axis,
 * default -1), and Dropout in inference (the identity, its mask all true). */
#include <math.h>
#include <string.h>

#include "tuner/net/ops/fastmath.h"
#include "tuner/net/ops/nn_util.h"
#include "tuner/net/ops/par.h"

typedef enum { SM_SOFT, SM_LOG, SM_HARD } SmKind;

Status Softmax_infer(OpCtx *ctx) { return Nn_inferSame(ctx); }

/* The input as outer x len x inner lines along which the op runs. */
static Status sm_split(const OpCtx *ctx, int64_t *outer, int64_t *len, int64_t *inner) {
    const NdShape *xs = &ctx->in[0]->shape;
    bool coerce = ctx->opset < 13;
    int axis;
    if (xs->rank == 0) {
        *outer = *len = *inner = 1;
        return TT_OK;
    }
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", coerce ? 1 : -1), xs->rank, &axis, ctx->err) != TT_OK) return TT_ERR;
    Nn_axisSplit(xs, axis, outer, len, inner);
    if (coerce) {
        *len *= *inner;
        *inner = 1;
    }
    return TT_OK;
}

/* One line x[0], x[st], ... (n elements) into y. */
static void sm_line(SmKind kind, const double *x, double *y, int64_t n, int64_t st) {
    double m = -INFINITY, sum = 0;
    int64_t at = 0;
    for (int64_t k = 0; k < n; k++)
        if (x[k * st] > m || k == 0) {
            m = x[k * st];
            at = k;
        }
    if (kind == SM_HARD) {
        for (int64_t k = 0; k < n; k++)
            y[k * st] = k == at;
        return;
    }
    for (int64_t k = 0; k < n; k++)
        sum += exp(x[k * st] - m);
    double lsum = log(sum);
    for (int64_t k = 0; k < n; k++)
        y[k * st] = kind == SM_LOG ? x[k * st] - m - lsum : exp(x[k * st] - m) / sum;
}

/* Softmax's lines, handed to the threads (par.h): line l is (outer l / inner,
 * inner l % inner) of the general path, or row l of the float32 one. */
typedef struct SmJob {
    SmKind kind;
    const void *x;
    void *y;
    int64_t len, inner;
} SmJob;

static void sm_lines(void *arg, int64_t lo, int64_t hi) {
    const SmJob *j = arg;
    for (int64_t l = lo; l < hi; l++) {
        int64_t at = l / j->inner * j->len * j->inner + l % j->inner;
        sm_line(j->kind, (const double *)j->x + at, (double *)j->y + at, j->len, j->inner);
    }
}

/* A line's cost in element operations: exp twice per element, and the rest. */
#define SM_COST 20.0

static bool sm_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    int64_t outer, len, inner;
    if (sm_split(ctx, &outer, &len, &inner) != TT_OK) return false;
    SmJob j = {.kind = *(const SmKind *)arg, .x = in[0], .y = yv, .len = len, .inner = inner};
    Par_range(outer * inner, SM_COST * (double)(outer * inner * len), sm_lines, &j);
    return true;
}

/* Softmax / LogSoftmax of float32 lines that are contiguous (the last axis,
 * as transformers' attention has it), straight from the input: the maximum
 * first-taken as in sm_line, each exponential computed once (fastmath.h's,
 * vectorized), the sum kept in double. The general path converts every element to double and back. */
static void sm_rows_f32(SmKind kind, const float *x, float *y, int64_t lines, int64_t n) {
    for (int64_t l = 0; l < lines; l++, x += n, y += n) {
        float m = x[0];
        for (int64_t k = 1; k < n; k++)
            if (x[k] > m) m = x[k];
        double sum = 0;
        for (int64_t k = 0; k < n; k++) /* vectorized (fastmath.h) */
            y[k] = ff_exp(x[k] - m);
        for (int64_t k = 0; k < n; k++)
            sum += y[k];
        if (kind == SM_LOG) {
            float lsum = (float)log(sum);
            for (int64_t k = 0; k < n; k++)
                y[k] = x[k] - m - lsum;
            continue;
        }
        float inv = (float)(1 / sum);
        for (int64_t k = 0; k < n; k++)
            y[k] *= inv;
    }
}

static void sm_range_f32(void *arg, int64_t lo, int64_t hi) {
    const SmJob *j = arg;
    sm_rows_f32(j->kind, (const float *)j->x + lo * j->len, (float *)j->y + lo * j->len, hi - lo, j->len);
}

static Status sm_run(OpCtx *ctx, SmKind kind) {
    if (Softmax_infer(ctx) != TT_OK) return TT_ERR;
    NdShape ys = ctx->out[0].shape;
    int64_t outer, len, inner;
    if (kind != SM_HARD && ctx->in[0]->type == ND_F32 && sm_split(ctx, &outer, &len, &inner) == TT_OK && inner == 1 &&
        len > 0) {
        if (NdTensor_alloc(&ctx->out[0], ND_F32, &ys, ctx->err) != TT_OK) return TT_ERR;
        SmJob j = {.kind = kind, .x = ctx->in[0]->data, .y = ctx->out[0].data, .len = len, .inner = 1};
        Par_range(outer, SM_COST * (double)(outer * len), sm_range_f32, &j);
        return TT_OK;
    }
    return Nn_runViews(ctx, 1, &ys, true, sm_compute, &kind);
}

Status Softmax_run(OpCtx *ctx) { return sm_run(ctx, SM_SOFT); }
Status LogSoftmax_run(OpCtx *ctx) { return sm_run(ctx, SM_LOG); }
Status Hardmax_run(OpCtx *ctx) { return sm_run(ctx, SM_HARD); }

double Softmax_flops(const OpCtx *ctx) { return 4 * Nn_count(&ctx->in[0]->shape); }

/* ---- Dropout ---- */

/* Training with a ratio other than 0 drops at random: refused. */
static Status dropout_training(double ratio, bool training, char *err) {
    if (training && ratio != 0)
        return tt_fail(err, "training_mode true with ratio %g is not supported (inference only)", ratio);
    return TT_OK;
}

/* Refused at bind time: training_mode true, or fed by the user at run time
 * (it may be true then), unless the ratio is a constant 0 (the identity in
 * either mode). Dropout_run checks the values it gets again. */
Status Dropout_check(const NetNode *node, const NetModel *model, char *err) {
    if (node->n_in < 3 || node->in[2] < 0 || !model) return TT_OK;
    const NetValue *t = &model->values[node->in[2]], *r = node->in[1] >= 0 ? &model->values[node->in[1]] : NULL;
    if (r && r->is_const && r->constant.count >= 1 && NdTensor_get(&r->constant, 0) == 0) return TT_OK;
    if (t->is_input)
        return tt_fail(err, "input training_mode is fed at run time: only inference (training_mode false) is "
                            "supported");
    if (t->is_const && t->constant.count >= 1 && NdTensor_getInt(&t->constant, 0) != 0)
        return tt_fail(err, "training_mode true is not supported (inference only)");
    return TT_OK;
}

Status Dropout_infer(OpCtx *ctx) {
    if (Nn_inferSame(ctx) != TT_OK) return TT_ERR;
    if (ctx->n_out > 1) {
        ctx->out[1].type = ND_BOOL;
        ctx->out[1].shape = ctx->in[0]->shape;
    }
    return TT_OK;
}

Status Dropout_run(OpCtx *ctx) {
    const NdTensor *r = ctx->n_in > 1 ? ctx->in[1] : NULL, *t = ctx->n_in > 2 ? ctx->in[2] : NULL;
    double ratio = r && r->count > 0 ? NdTensor_get(r, 0) : NetNode_attrFloat(ctx->node, "ratio", 0.5);
    if (Dropout_infer(ctx) != TT_OK ||
        dropout_training(ratio, t && t->count > 0 && NdTensor_getInt(t, 0) != 0, ctx->err) != TT_OK)
        return TT_ERR;
    if (NdTensor_copy(&ctx->out[0], ctx->in[0], ctx->err) != TT_OK) return TT_ERR;
    if (ctx->n_out > 1 && ctx->node->n_out > 1 && ctx->node->out[1] >= 0) {
        if (NdTensor_alloc(&ctx->out[1], ND_BOOL, &ctx->in[0]->shape, ctx->err) != TT_OK) {
            NdTensor_free(&ctx->out[0]);
            return TT_ERR;
        }
        if (ctx->out[1].count > 0) memset(ctx->out[1].data, 1, (size_t)ctx->out[1].count);
    }
    return TT_OK;
}
