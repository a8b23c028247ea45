/* tuner/net/ops/nn_loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * (N x C x d1 ... scores, N x d1 ... integer targets, optional per-class
 * weights, ignore_index, reduction none / sum / mean; the mean divides by the
 * weights of the targets not ignored). SoftmaxCrossEntropyLoss is the first
 * on the log-softmax over C, which is its optional second output. In double. */
#include <math.h>
#include <string.h>

#include "tuner/net/ops/nn_util.h"

static const NdType TARGET_TYPES[] = {ND_I32, ND_I64, ND_UNDEF};

Status Loss_check(const NetNode *node, const NetModel *model, char *err) {
    const char *r = NetNode_attrString(node, "reduction", "mean");
    if (strcmp(r, "none") && strcmp(r, "sum") && strcmp(r, "mean"))
        return tt_fail(err, "attribute reduction='%s' is not supported", r);
    return TT_OK;
}

Status Loss_infer(OpCtx *ctx) {
    if (Nn_inferSame(ctx) != TT_OK || Op_requireType(ctx, 1, TARGET_TYPES) != TT_OK ||
        Op_requireType(ctx, 2, NN_FLOATS) != TT_OK)
        return TT_ERR;
    const NdShape *xs = &ctx->in[0]->shape, *ts = &ctx->in[1]->shape;
    if (ctx->n_out > 1) { /* log_prob */
        ctx->out[1].type = ctx->in[0]->type;
        ctx->out[1].shape = *xs;
    }
    if (xs->rank >= 0 && xs->rank < 2) return tt_fail(ctx->err, "scores of rank %d: N x C x ... expected", xs->rank);
    bool none = !strcmp(NetNode_attrString(ctx->node, "reduction", "mean"), "none");
    ctx->out[0].shape = none ? *ts : (NdShape){.rank = 0};
    if (xs->rank < 0 || ts->rank < 0) return TT_OK;
    bool fits = ts->rank == xs->rank - 1 && ts->dim[0] == xs->dim[0];
    for (int i = 1; fits && i < ts->rank; i++)
        fits = ts->dim[i] == xs->dim[i + 1];
    const NdTensor *w = ctx->n_in > 2 ? ctx->in[2] : NULL;
    if (!fits || (w && w->shape.rank >= 0 && (w->shape.rank != 1 || w->shape.dim[0] != xs->dim[1]))) {
        char a[64], b[64];
        NdShape_str(xs, a, sizeof a);
        NdShape_str(ts, b, sizeof b);
        return tt_fail(ctx->err, "targets of shape %s (or the weights) do not fit scores of shape %s", b, a);
    }
    return TT_OK;
}

/* loss[n, d] = -logp[n, t, d] * w[t] for the target t, 0 where t is
 * ignore_index; reduced into y. */
static bool nll(OpCtx *ctx, const double *logp, const double *target, const double *weight, double *y) {
    int64_t n, c, d;
    Nn_axisSplit(&ctx->in[0]->shape, 1, &n, &c, &d);
    const char *red = NetNode_attrString(ctx->node, "reduction", "mean");
    bool has_ignore = NetNode_attr(ctx->node, "ignore_index") != NULL;
    int64_t ignore = NetNode_attrInt(ctx->node, "ignore_index", 0);
    double sum = 0, wsum = 0;
    for (int64_t i = 0; i < n * d; i++) {
        int64_t t = (int64_t)target[i], b = i / d, k = i % d;
        double loss = 0;
        if (!has_ignore || t != ignore) {
            if (t < 0 || t >= c)
                return tt_fail(ctx->err, "target %lld is outside the %lld classes", (long long)t, (long long)c) ==
                       TT_OK;
            double w = weight ? weight[t] : 1;
            loss = -logp[(b * c + t) * d + k] * w;
            wsum += w;
        }
        if (!strcmp(red, "none")) y[i] = loss;
        sum += loss;
    }
    if (!strcmp(red, "sum"))
        y[0] = sum;
    else if (!strcmp(red, "mean"))
        y[0] = sum / wsum;
    return true;
}

static bool nll_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *y) {
    return nll(ctx, in[0], in[1], in[2], y);
}

/* The log-softmax over C into a scratch (and the log_prob output when asked). */
static bool sce_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *y) {
    const double *x = in[0];
    int64_t n, c, d;
    Nn_axisSplit(&ctx->in[0]->shape, 1, &n, &c, &d);
    NdTensor lp = {0};
    if (NdTensor_alloc(&lp, ND_F64, &ctx->in[0]->shape, ctx->err) != TT_OK) return false;
    double *l = lp.data;
    for (int64_t b = 0; b < n; b++)
        for (int64_t k = 0; k < d; k++) {
            const double *xp = x + b * c * d + k;
            double m = -INFINITY, s = 0;
            for (int64_t j = 0; j < c; j++)
                m = xp[j * d] > m ? xp[j * d] : m;
            for (int64_t j = 0; j < c; j++)
                s += exp(xp[j * d] - m);
            for (int64_t j = 0; j < c; j++)
                l[b * c * d + j * d + k] = xp[j * d] - m - log(s);
        }
    bool ok = nll(ctx, l, in[1], in[2], y);
    if (ok && ctx->n_out > 1 && ctx->node->n_out > 1 && ctx->node->out[1] >= 0) {
        ok = NdTensor_alloc(&ctx->out[1], ctx->in[0]->type, &ctx->in[0]->shape, ctx->err) == TT_OK;
        for (int64_t i = 0; ok && i < lp.count; i++)
            NdTensor_set(&ctx->out[1], i, l[i]);
    }
    NdTensor_free(&lp);
    return ok;
}

static Status loss_run(OpCtx *ctx, NnCompute fn) {
    if (Loss_infer(ctx) != TT_OK) return TT_ERR;
    NdShape ys = ctx->out[0].shape;
    Status st = Nn_runViews(ctx, 3, &ys, true, fn, NULL);
    if (st != TT_OK && ctx->n_out > 1) NdTensor_free(&ctx->out[1]);
    return st;
}

Status Nll_run(OpCtx *ctx) { return loss_run(ctx, nll_compute); }
Status Sce_run(OpCtx *ctx) { return loss_run(ctx, sce_compute); }
