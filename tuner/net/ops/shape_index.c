/* tuner/net/ops/shape_index.c: ops whose indices come from data: Gather,
 * GatherElements, GatherND, ScatterElements (and the deprecated Scatter),
 * ScatterND, OneHot, NonZero. Indices may be negative (counted from the end
 * of their axis); an index out of range is an error naming it. */
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/par.h"
#include "tuner/net/ops/shape_ops.h"

static Status norm_index(OpCtx *ctx, int64_t v, int64_t dim, int64_t *out) {
    if (v < -dim || v >= dim)
        return tt_fail(ctx->err, "index %lld is out of range for an axis of %lld", (long long)v, (long long)dim);
    *out = v < 0 ? v + dim : v;
    return TT_OK;
}

static int64_t prod_range(const NdShape *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->dim[i];
    return p;
}

Status Sh_inferSameAs0(OpCtx *ctx) {
    Sh_setOut(ctx, 0, ctx->in[0]->type, &ctx->in[0]->shape);
    return TT_OK;
}

Status Gather_infer(OpCtx *ctx) {
    const NdShape *d = &ctx->in[0]->shape, *q = &ctx->in[1]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    if (d->rank < 0 || q->rank < 0) return TT_OK;
    int axis;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), d->rank, &axis, ctx->err) != TT_OK) return TT_ERR;
    if (d->rank + q->rank - 1 > ND_MAX_RANK) return tt_fail(ctx->err, "the output's rank exceeds %d", ND_MAX_RANK);
    NdShape s = {.rank = 0};
    for (int i = 0; i < axis; i++)
        s.dim[s.rank++] = d->dim[i];
    for (int i = 0; i < q->rank; i++)
        s.dim[s.rank++] = q->dim[i];
    for (int i = axis + 1; i < d->rank; i++)
        s.dim[s.rank++] = d->dim[i];
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

/* Gather's pieces of work (par.h): item (o, j) copies data's block (o, k[j]). */
typedef struct GatherJob {
    const char *x;
    char *y;
    const int64_t *k; /* the indices, normalised */
    int64_t n, dim;   /* indices, data's axis */
    size_t block;     /* bytes */
} GatherJob;

static void gather_items(void *arg, int64_t lo, int64_t hi) {
    const GatherJob *g = arg;
    for (int64_t i = lo; i < hi; i++)
        memcpy(g->y + (size_t)i * g->block, g->x + (size_t)(i / g->n * g->dim + g->k[i % g->n]) * g->block, g->block);
}

Status Gather_run(OpCtx *ctx) {
    if (Gather_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    if (ctx->out[0].count == 0) return TT_OK;
    const NdTensor *x = ctx->in[0], *ind = ctx->in[1];
    int axis;
    Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), x->shape.rank, &axis, ctx->err);
    int64_t outer = prod_range(&x->shape, 0, axis), *k = malloc(sizeof *k * (size_t)ind->count);
    GatherJob g = {.x = x->data, .y = ctx->out[0].data, .k = k, .n = ind->count, .dim = x->shape.dim[axis]};
    g.block = (size_t)prod_range(&x->shape, axis + 1, x->shape.rank) * NdType_size(x->type);
    if (!k) return tt_fail(ctx->err, "out of memory");
    for (int64_t j = 0; j < ind->count; j++)
        if (norm_index(ctx, NdTensor_getInt(ind, j), g.dim, &k[j]) != TT_OK) {
            free(k);
            return TT_ERR;
        }
    Par_range(outer * g.n, (double)(outer * g.n) * (double)g.block / 4, gather_items, &g);
    free(k);
    return TT_OK;
}

/* GatherElements' and ScatterElements' indices: data's rank, and no longer
 * than data on the axes they do not index. */
static Status elements_fit(OpCtx *ctx, const NdShape *d, const NdShape *q) {
    if (d->rank < 0 || q->rank < 0) return TT_OK;
    if (d->rank != q->rank) return tt_fail(ctx->err, "data has rank %d but indices %d", d->rank, q->rank);
    int axis;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), d->rank, &axis, ctx->err) != TT_OK) return TT_ERR;
    for (int i = 0; i < d->rank; i++)
        if (i != axis && q->dim[i] > d->dim[i])
            return tt_fail(ctx->err, "indices are %lld long on axis %d, data only %lld", (long long)q->dim[i], i,
                           (long long)d->dim[i]);
    return TT_OK;
}

Status GatherElements_infer(OpCtx *ctx) {
    const NdShape *d = &ctx->in[0]->shape, *q = &ctx->in[1]->shape;
    if (elements_fit(ctx, d, q) != TT_OK) return TT_ERR;
    Sh_setOut(ctx, 0, ctx->in[0]->type, q);
    return TT_OK;
}

/* Offset into a tensor of strides st of index idx with axis `axis` replaced by k. */
static int64_t offset_with(const int64_t *idx, const int64_t *st, int rank, int axis, int64_t k) {
    int64_t off = 0;
    for (int i = 0; i < rank; i++)
        off += (i == axis ? k : idx[i]) * st[i];
    return off;
}

static void odometer(int64_t *idx, const NdShape *s) {
    for (int i = s->rank - 1; i >= 0 && ++idx[i] == s->dim[i]; i--)
        idx[i] = 0;
}

Status GatherElements_run(OpCtx *ctx) {
    if (GatherElements_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0], *ind = ctx->in[1];
    int axis, r = x->shape.rank;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), r, &axis, ctx->err) != TT_OK) return TT_ERR;
    size_t esize = NdType_size(x->type);
    int64_t st[ND_MAX_RANK], idx[ND_MAX_RANK] = {0};
    Sh_strides(&x->shape, st);
    for (int64_t j = 0; j < ind->count; j++, odometer(idx, &ind->shape)) {
        int64_t k = 0;
        if (norm_index(ctx, NdTensor_getInt(ind, j), x->shape.dim[axis], &k) != TT_OK) return TT_ERR;
        memcpy((char *)ctx->out[0].data + j * (int64_t)esize,
               (const char *)x->data + offset_with(idx, st, r, axis, k) * (int64_t)esize, esize);
    }
    return TT_OK;
}

Status GatherND_infer(OpCtx *ctx) {
    const NdShape *d = &ctx->in[0]->shape, *q = &ctx->in[1]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    if (d->rank < 0 || q->rank < 0) return TT_OK;
    int64_t b = NetNode_attrInt(ctx->node, "batch_dims", 0);
    int64_t k = q->rank > 0 ? q->dim[q->rank - 1] : -1;
    if (q->rank < 1 || b < 0 || b >= q->rank || k < 1 || b + k > d->rank)
        return tt_fail(ctx->err, "indices of shape rank %d do not fit data of rank %d with batch_dims %lld", q->rank,
                       d->rank, (long long)b);
    for (int i = 0; i < b; i++)
        if (q->dim[i] != d->dim[i])
            return tt_fail(ctx->err, "batch dimension %d is %lld in indices but %lld in data", i, (long long)q->dim[i],
                           (long long)d->dim[i]);
    NdShape s = {.rank = 0};
    for (int i = 0; i < q->rank - 1; i++)
        s.dim[s.rank++] = q->dim[i];
    for (int64_t i = b + k; i < d->rank; i++)
        s.dim[s.rank++] = d->dim[i];
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

Status GatherND_run(OpCtx *ctx) {
    if (GatherND_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    if (ctx->out[0].count == 0) return TT_OK;
    const NdTensor *x = ctx->in[0], *ind = ctx->in[1];
    int b = (int)NetNode_attrInt(ctx->node, "batch_dims", 0), q = ind->shape.rank;
    int k = (int)ind->shape.dim[q - 1];
    int64_t st[ND_MAX_RANK], batches = prod_range(&x->shape, 0, b);
    Sh_strides(&x->shape, st);
    int64_t per_batch = batches ? ind->count / k / batches : 0, batch_size = b > 0 ? st[b - 1] : 0;
    size_t esize = NdType_size(x->type), block = (size_t)prod_range(&x->shape, b + k, x->shape.rank) * esize;
    for (int64_t t = 0; t < ind->count / k; t++) {
        int64_t off = (per_batch ? t / per_batch : 0) * batch_size, j = 0;
        for (int i = 0; i < k; i++) {
            if (norm_index(ctx, NdTensor_getInt(ind, t * k + i), x->shape.dim[b + i], &j) != TT_OK) return TT_ERR;
            off += j * st[b + i];
        }
        memcpy((char *)ctx->out[0].data + (size_t)t * block, (const char *)x->data + off * (int64_t)esize, block);
    }
    return TT_OK;
}

/* ---- ScatterElements, ScatterND ---- */

typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } Reduction;

static int reduction_of(const NetNode *n) {
    static const char *names[] = {"none", "add", "mul", "max", "min"};
    const char *r = NetNode_attrString(n, "reduction", "none");
    for (int i = 0; i < 5; i++)
        if (!strcmp(r, names[i])) return i;
    return -1;
}

Status Scatter_check(const NetNode *n, const NetModel *m, char *err) {
    (void)m;
    if (reduction_of(n) < 0)
        return tt_fail(err, "attribute reduction='%s' is not supported", NetNode_attrString(n, "reduction", ""));
    return TT_OK;
}

/* y[dst] = reduce(y[dst], u[src]). */
static void scatter_one(NdTensor *y, int64_t dst, const NdTensor *u, int64_t src, Reduction red) {
    size_t es = NdType_size(y->type);
    if (red == RED_NONE) {
        memcpy((char *)y->data + dst * (int64_t)es, (const char *)u->data + src * (int64_t)es, es);
        return;
    }
    double a = NdTensor_get(y, dst), b = NdTensor_get(u, src);
    double r = red == RED_ADD ? a + b : red == RED_MUL ? a * b : red == RED_MAX ? (a > b ? a : b) : (a < b ? a : b);
    NdTensor_set(y, dst, r);
}

static Status scatter_start(OpCtx *ctx) {
    if (Sh_inferSameAs0(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0], *u = ctx->in[2];
    if (u->type != x->type)
        return tt_fail(ctx->err, "updates are %s but data %s", NdType_name(u->type), NdType_name(x->type));
    if (x->count > 0) memcpy(ctx->out[0].data, x->data, (size_t)x->count * NdType_size(x->type));
    return TT_OK;
}

Status ScatterElements_run(OpCtx *ctx) {
    if (scatter_start(ctx) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0], *ind = ctx->in[1], *u = ctx->in[2];
    int axis, r = x->shape.rank;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), r, &axis, ctx->err) != TT_OK) return TT_ERR;
    if (!NdShape_equal(&ind->shape, &u->shape))
        return tt_fail(ctx->err, "indices and updates must have the same shape");
    if (elements_fit(ctx, &x->shape, &ind->shape) != TT_OK) return TT_ERR;
    Reduction red = (Reduction)reduction_of(ctx->node);
    int64_t st[ND_MAX_RANK], idx[ND_MAX_RANK] = {0};
    Sh_strides(&x->shape, st);
    for (int64_t j = 0; j < ind->count; j++, odometer(idx, &ind->shape)) {
        int64_t k = 0;
        if (norm_index(ctx, NdTensor_getInt(ind, j), x->shape.dim[axis], &k) != TT_OK) return TT_ERR;
        scatter_one(&ctx->out[0], offset_with(idx, st, r, axis, k), u, j, red);
    }
    return TT_OK;
}

Status ScatterND_run(OpCtx *ctx) {
    if (scatter_start(ctx) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0], *ind = ctx->in[1], *u = ctx->in[2];
    int q = ind->shape.rank;
    int64_t k = q > 0 ? ind->shape.dim[q - 1] : 0;
    if (q < 1 || k < 1 || k > x->shape.rank)
        return tt_fail(ctx->err, "indices' last dimension must be in [1, %d]", x->shape.rank);
    int64_t st[ND_MAX_RANK], inner = prod_range(&x->shape, (int)k, x->shape.rank), tuples = ind->count / k;
    Sh_strides(&x->shape, st);
    if (u->count != tuples * inner)
        return tt_fail(ctx->err, "updates have %lld elements, expected %lld", (long long)u->count,
                       (long long)(tuples * inner));
    Reduction red = (Reduction)reduction_of(ctx->node);
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off = 0, j = 0;
        for (int i = 0; i < k; i++) {
            if (norm_index(ctx, NdTensor_getInt(ind, t * k + i), x->shape.dim[i], &j) != TT_OK) return TT_ERR;
            off += j * st[i];
        }
        for (int64_t e = 0; e < inner; e++)
            scatter_one(&ctx->out[0], off + e, u, t * inner + e, red);
    }
    return TT_OK;
}

/* ---- OneHot, NonZero ---- */

Status OneHot_infer(OpCtx *ctx) {
    const NdShape *q = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ctx->in[2]->type);
    if (q->rank < 0 || !Sh_known(ctx, 1) || ctx->in[1]->count < 1) return TT_OK;
    int axis;
    if (q->rank + 1 > ND_MAX_RANK ||
        Nd_axis(NetNode_attrInt(ctx->node, "axis", -1), q->rank + 1, &axis, ctx->err) != TT_OK)
        return tt_fail(ctx->err, "axis or rank out of range for OneHot");
    double dd = NdTensor_get(ctx->in[1], 0);
    if (!(dd >= 1 && dd < 1e15)) return tt_fail(ctx->err, "depth %g is not a positive size", dd);
    int64_t depth = (int64_t)dd;
    NdShape s = {.rank = q->rank + 1};
    for (int i = 0, j = 0; i < s.rank; i++)
        s.dim[i] = i == axis ? depth : q->dim[j++];
    Sh_setOut(ctx, 0, ctx->in[2]->type, &s);
    return TT_OK;
}

Status OneHot_run(OpCtx *ctx) {
    if (OneHot_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *ind = ctx->in[0], *val = ctx->in[2];
    NdTensor *y = &ctx->out[0];
    if (val->count != 2) return tt_fail(ctx->err, "values must hold two elements (off, on)");
    int axis;
    Nd_axis(NetNode_attrInt(ctx->node, "axis", -1), ind->shape.rank + 1, &axis, ctx->err);
    int64_t depth = y->shape.dim[axis], inner = prod_range(&ind->shape, axis, ind->shape.rank);
    size_t es = NdType_size(y->type);
    for (int64_t o = 0; o < y->count; o++)
        memcpy((char *)y->data + o * (int64_t)es, val->data, es);
    for (int64_t j = 0; j < ind->count; j++) {
        int64_t v = (int64_t)NdTensor_get(ind, j);
        if (v < 0) v += depth;
        if (v < 0 || v >= depth) continue; /* out of range: the row stays off */
        int64_t o = (j / inner * depth + v) * inner + j % inner;
        memcpy((char *)y->data + o * (int64_t)es, (const char *)val->data + es, es);
    }
    return TT_OK;
}

Status NonZero_infer(OpCtx *ctx) {
    Sh_unknown(ctx, 0, ND_I64);
    return TT_OK;
}

Status NonZero_run(OpCtx *ctx) {
    const NdTensor *x = ctx->in[0];
    int r = x->shape.rank > 0 ? x->shape.rank : 1;
    int64_t nnz = 0;
    for (int64_t i = 0; i < x->count; i++)
        nnz += NdTensor_get(x, i) != 0.0;
    NdShape s = {.rank = 2, .dim = {r, nnz}};
    Sh_setOut(ctx, 0, ND_I64, &s);
    if (Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    int64_t *y = ctx->out[0].data, idx[ND_MAX_RANK] = {0}, c = 0;
    for (int64_t i = 0; i < x->count; i++, odometer(idx, &x->shape)) {
        if (NdTensor_get(x, i) == 0.0) continue;
        for (int d = 0; d < x->shape.rank; d++)
            y[d * nnz + c] = idx[d];
        c++;
    }
    return TT_OK;
}
