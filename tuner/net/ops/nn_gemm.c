/* tuner/net/ops/nn_gemm.c: Gemm (alpha, beta, transA, transB, C broadcast to
 * M x N or omitted; before opset 7 the broadcast attribute asked for the
 * same) and MatMul (numpy's matmul: a 1-D operand gains and then
 * loses a unit dimension, batch dimensions broadcast). Both run the blocked
 * GEMM of ops/nn_kern.h. */
#include "tuner/net/ops/nn_util.h"

static Status mm_types(const OpCtx *ctx, int n) {
    for (int i = 0; i < ctx->n_in && i < n; i++)
        if (Op_requireType(ctx, i, NN_FLOATS) != TT_OK) return TT_ERR;
    return TT_OK;
}

Status Gemm_check(const NetNode *node, const NetModel *model, char *err) {
    int64_t ta = NetNode_attrInt(node, "transA", 0), tb = NetNode_attrInt(node, "transB", 0);
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
        return tt_fail(err, "attributes transA=%lld, transB=%lld: 0 or 1 expected", (long long)ta, (long long)tb);
    if (NetNode_attr(node, "broadcast")) return tt_fail(err, "attribute broadcast (before opset 7) is not supported");
    return TT_OK;
}

/* M, N, K of Gemm from A's and B's shapes, and C's fit to M x N. */
static Status geNn_matmulDims(const OpCtx *ctx, int64_t *m, int64_t *n, int64_t *k) {
    const NdShape *as = &ctx->in[0]->shape, *bs = &ctx->in[1]->shape;
    if (as->rank != 2 || bs->rank != 2)
        return tt_fail(ctx->err, "Gemm takes 2-D A and B, not ranks %d and %d", as->rank, bs->rank);
    bool ta = NetNode_attrInt(ctx->node, "transA", 0), tb = NetNode_attrInt(ctx->node, "transB", 0);
    *m = as->dim[ta ? 1 : 0];
    *k = as->dim[ta ? 0 : 1];
    *n = bs->dim[tb ? 0 : 1];
    int64_t kb = bs->dim[tb ? 1 : 0];
    if (kb != *k) return tt_fail(ctx->err, "A's %lld columns do not match B's %lld rows", (long long)*k, (long long)kb);
    const NdTensor *c = ctx->n_in > 2 ? ctx->in[2] : NULL;
    if (c && c->shape.rank >= 0) {
        NdShape y = {.rank = 2, .dim = {*m, *n}}, b;
        if (c->shape.rank > 2 || NdShape_broadcast(&c->shape, &y, &b, ctx->err) != TT_OK || !NdShape_equal(&b, &y)) {
            char cs[64];
            NdShape_str(&c->shape, cs, sizeof cs);
            return tt_fail(ctx->err, "C of shape %s does not broadcast to %lldx%lld", cs, (long long)*m, (long long)*n);
        }
    }
    return TT_OK;
}

Status Gemm_infer(OpCtx *ctx) {
    if (mm_types(ctx, 3) != TT_OK) return TT_ERR;
    ctx->out[0].type = ctx->in[0]->type;
    ctx->out[0].shape.rank = -1;
    int64_t m, n, k;
    if (ctx->in[0]->shape.rank < 0 || ctx->in[1]->shape.rank < 0) return TT_OK;
    if (geNn_matmulDims(ctx, &m, &n, &k) != TT_OK) return TT_ERR;
    ctx->out[0].shape = (NdShape){.rank = 2, .dim = {m, n}};
    return TT_OK;
}

/* Y = alpha * A * B + beta * C in the working precision. */
static bool geNn_matmul(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *y) {
    int64_t m, n, k, st[2] = {0, 0};
    geNn_matmulDims(ctx, &m, &n, &k);
    bool ta = NetNode_attrInt(ctx->node, "transA", 0), tb = NetNode_attrInt(ctx->node, "transB", 0);
    int64_t sam = ta ? 1 : k, sak = ta ? m : 1, sbk = tb ? 1 : n, sbn = tb ? k : 1;
    double alpha = NetNode_attrFloat(ctx->node, "alpha", 1.0), beta = NetNode_attrFloat(ctx->node, "beta", 1.0);
    if (in[2]) {
        NdShape ys = {.rank = 2, .dim = {m, n}};
        NdShape_broadcastStrides(&ctx->in[2]->shape, &ys, st);
    }
    if (dbl) {
        if (!Nn_gemm_d(m, n, k, in[0], sam, sak, in[1], sbk, sbn, y, n)) return false;
        Nn_scaleAdd_d(m, n, alpha, y, beta, in[2], st[0], st[1]);
    } else {
        if (!Nn_gemm_f(m, n, k, in[0], sam, sak, in[1], sbk, sbn, y, n)) return false;
        Nn_scaleAdd_f(m, n, alpha, y, beta, in[2], st[0], st[1]);
    }
    return true;
}

Status Gemm_run(OpCtx *ctx) {
    if (Gemm_infer(ctx) != TT_OK) return TT_ERR;
    NdShape ys = ctx->out[0].shape;
    return Nn_runViews(ctx, 3, &ys, ctx->in[0]->type == ND_F64, geNn_matmul, NULL);
}

double Gemm_flops(const OpCtx *ctx) {
    const NdShape *as = &ctx->in[0]->shape, *ys = &ctx->out[0].shape;
    if (as->rank != 2 || ys->rank != 2) return 0;
    bool ta = NetNode_attrInt(ctx->node, "transA", 0);
    return 2.0 * (double)ys->dim[0] * (double)ys->dim[1] * (double)as->dim[ta ? 0 : 1];
}

Status Nn_matmulDims(const OpCtx *ctx, MmDims *d, NdShape *ys) {
    const NdShape *as = &ctx->in[0]->shape, *bs = &ctx->in[1]->shape;
    if (as->rank < 1 || bs->rank < 1)
        return tt_fail(ctx->err, "MatMul of a scalar (ranks %d and %d)", as->rank, bs->rank);
    d->m = as->rank > 1 ? as->dim[as->rank - 2] : 1;
    d->k = as->dim[as->rank - 1];
    int64_t kb = bs->dim[bs->rank > 1 ? bs->rank - 2 : 0];
    d->n = bs->rank > 1 ? bs->dim[bs->rank - 1] : 1;
    if (kb != d->k)
        return tt_fail(ctx->err, "A's %lld columns do not match B's %lld rows", (long long)d->k, (long long)kb);
    d->abatch = (NdShape){.rank = as->rank > 2 ? as->rank - 2 : 0};
    d->bbatch = (NdShape){.rank = bs->rank > 2 ? bs->rank - 2 : 0};
    for (int i = 0; i < d->abatch.rank; i++)
        d->abatch.dim[i] = as->dim[i];
    for (int i = 0; i < d->bbatch.rank; i++)
        d->bbatch.dim[i] = bs->dim[i];
    if (NdShape_broadcast(&d->abatch, &d->bbatch, &d->batch, ctx->err) != TT_OK) return TT_ERR;
    *ys = d->batch;
    if (as->rank > 1) ys->dim[ys->rank++] = d->m;
    if (bs->rank > 1) ys->dim[ys->rank++] = d->n;
    if (ys->rank > ND_MAX_RANK) return tt_fail(ctx->err, "the output's rank exceeds %d", ND_MAX_RANK);
    return TT_OK;
}

Status MatMul_infer(OpCtx *ctx) {
    if (mm_types(ctx, 2) != TT_OK) return TT_ERR;
    ctx->out[0].type = ctx->in[0]->type;
    ctx->out[0].shape.rank = -1;
    MmDims d;
    if (ctx->in[0]->shape.rank < 0 || ctx->in[1]->shape.rank < 0) return TT_OK;
    return Nn_matmulDims(ctx, &d, &ctx->out[0].shape);
}

/* One GEMM per output batch index, at A's and B's broadcast offsets; when B
 * has no batch dimensions, A's batch and rows are one taller matrix. */
bool Nn_matmul(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *y) {
    const MmDims *d = arg;
    int64_t nb = 1, sa[ND_MAX_RANK], sb[ND_MAX_RANK], m = d->m;
    for (int i = 0; i < d->batch.rank; i++)
        nb *= d->batch.dim[i];
    if (d->bbatch.rank == 0 && d->abatch.rank == d->batch.rank) {
        m *= nb;
        nb = 1;
    }
    NdShape_broadcastStrides(&d->abatch, &d->batch, sa);
    NdShape_broadcastStrides(&d->bbatch, &d->batch, sb);
    size_t es = dbl ? sizeof(double) : sizeof(float);
    for (int64_t b = 0; b < nb; b++) {
        int64_t rest = b, oa = 0, ob = 0;
        for (int i = d->batch.rank - 1; i >= 0 && nb > 1; i--) {
            int64_t idx = rest % d->batch.dim[i];
            rest /= d->batch.dim[i];
            oa += idx * sa[i];
            ob += idx * sb[i];
        }
        const char *pa = (const char *)in[0] + (size_t)(oa * d->m * d->k) * es;
        const char *pb = (const char *)in[1] + (size_t)(ob * d->k * d->n) * es;
        char *py = (char *)y + (size_t)(b * m * d->n) * es;
        bool ok =
            dbl ? Nn_gemm_d(m, d->n, d->k, (const double *)pa, d->k, 1, (const double *)pb, d->n, 1, (double *)py, d->n)
                : Nn_gemm_f(m, d->n, d->k, (const float *)pa, d->k, 1, (const float *)pb, d->n, 1, (float *)py, d->n);
        if (!ok) return false;
    }
    return true;
}

Status MatMul_run(OpCtx *ctx) {
    MmDims d;
    NdShape ys;
    if (mm_types(ctx, 2) != TT_OK || Nn_matmulDims(ctx, &d, &ys) != TT_OK) return TT_ERR;
    return Nn_runViews(ctx, 2, &ys, ctx->in[0]->type == ND_F64, Nn_matmul, &d);
}

double MatMul_flops(const OpCtx *ctx) {
    const NdShape *as = &ctx->in[0]->shape, *ys = &ctx->out[0].shape;
    if (as->rank < 1 || ys->rank < 0) return 0;
    double c = 2.0 * (double)as->dim[as->rank - 1];
    for (int i = 0; i < ys->rank; i++)
        c *= (double)ys->dim[i];
    return c;
}
