/* tuner/net/ops/shape_move.c: ops that only move bytes, whatever the element
 * type: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
 * Slice, Expand, Tile, DepthToSpace, SpaceToDepth. Each is a shape rule in
 * its infer and one or a few calls of Sh_copy in its run. */
#include <stdint.h>
#include <stdlib.h>

#include "tuner/net/ops/shape_ops.h"

Status Sh_runView(OpCtx *ctx) {
    if (Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    NdTensor *y = &ctx->out[0];
    if (y->count != x->count)
        return tt_fail(ctx->err, "the output has %lld elements but the input %lld", (long long)y->count,
                       (long long)x->count);
    Sh_copyFlat(y->data, x->data, x->count, NdType_size(x->type));
    return TT_OK;
}

Status Reshape_check(const NetNode *n, const NetModel *m, char *err) {
    (void)m;
    if (NetNode_attr(n, "shape")) return tt_fail(err, "attribute shape (Reshape before opset 5) is not supported");
    return TT_OK;
}

/* The output shape of Reshape from the requested dims v[0..n). */
static Status reshape_dims(OpCtx *ctx, const int64_t *v, int64_t n, NdShape *s, bool *known) {
    const NdShape *in = &ctx->in[0]->shape;
    bool allowzero = NetNode_attrInt(ctx->node, "allowzero", 0) != 0;
    int neg = -1;
    int64_t prod = 1;
    *known = in->rank >= 0;
    if (n > ND_MAX_RANK)
        return tt_fail(ctx->err, "shape has %lld dimensions; at most %d are supported", (long long)n, ND_MAX_RANK);
    s->rank = (int)n;
    for (int i = 0; i < n; i++) {
        int64_t d = v[i];
        if (d == 0 && !allowzero) {
            if (in->rank < 0) return TT_OK;
            if (i >= in->rank) return tt_fail(ctx->err, "shape[%d] is 0 but the input has rank %d", i, in->rank);
            d = in->dim[i];
        } else if (d == -1) {
            if (neg >= 0) return tt_fail(ctx->err, "shape has more than one -1");
            neg = i;
            d = 1;
        } else if (d < 0)
            return tt_fail(ctx->err, "shape[%d] is %lld", i, (long long)d);
        s->dim[i] = d;
        if (d != 0 && prod > INT64_MAX / d) return tt_fail(ctx->err, "the shape's element count overflows");
        prod *= d;
    }
    if (in->rank < 0) return TT_OK;
    int64_t total = Sh_count(in);
    if (neg >= 0) {
        if (prod == 0 || total % prod != 0)
            return tt_fail(ctx->err, "cannot infer the -1 of the shape: %lld elements over %lld", (long long)total,
                           (long long)prod);
        s->dim[neg] = total / prod;
    } else if (prod != total)
        return tt_fail(ctx->err, "cannot reshape %lld elements into %lld", (long long)total, (long long)prod);
    return TT_OK;
}

Status Reshape_infer(OpCtx *ctx) {
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    if (!Sh_known(ctx, 1)) return TT_OK;
    int64_t *v, n;
    if (Sh_ints(ctx, 1, &v, &n) != TT_OK) return TT_ERR;
    NdShape s;
    bool known;
    Status st = reshape_dims(ctx, v, n, &s, &known);
    free(v);
    if (st == TT_OK && known) Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return st;
}

Status Reshape_run(OpCtx *ctx) {
    if (Reshape_infer(ctx) != TT_OK) return TT_ERR;
    return Sh_runView(ctx);
}

Status Flatten_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    if (in->rank < 0) return TT_OK;
    int64_t given = NetNode_attrInt(ctx->node, "axis", 1), axis = given < 0 ? given + in->rank : given;
    if (axis < 0 || axis > in->rank) /* [-r, r]: -1 is the last axis */
        return tt_fail(ctx->err, "axis %lld is outside [-%d, %d]", (long long)given, in->rank, in->rank);
    NdShape s = {.rank = 2, .dim = {1, 1}};
    for (int i = 0; i < in->rank; i++)
        s.dim[i < axis ? 0 : 1] *= in->dim[i];
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

Status Flatten_run(OpCtx *ctx) { return Flatten_infer(ctx) != TT_OK ? TT_ERR : Sh_runView(ctx); }

Status Squeeze_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    if (in->rank < 0) return TT_OK;
    int axes[ND_MAX_RANK], n;
    bool given, known;
    if (Sh_axes(ctx, 1, in->rank, axes, &n, &given, &known) != TT_OK || !known) return known ? TT_ERR : TT_OK;
    bool drop[ND_MAX_RANK] = {false};
    for (int i = 0; i < in->rank; i++)
        drop[i] = n == 0 && in->dim[i] == 1;
    for (int i = 0; i < n; i++) {
        if (in->dim[axes[i]] != 1)
            return tt_fail(ctx->err, "axis %d has size %lld, not 1", axes[i], (long long)in->dim[axes[i]]);
        drop[axes[i]] = true;
    }
    NdShape s = {.rank = 0};
    for (int i = 0; i < in->rank; i++)
        if (!drop[i]) s.dim[s.rank++] = in->dim[i];
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

Status Squeeze_run(OpCtx *ctx) { return Squeeze_infer(ctx) != TT_OK ? TT_ERR : Sh_runView(ctx); }

Status Unsqueeze_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    int na = 0;
    NetNode_attrInts(ctx->node, "axes", &na);
    if (!NetNode_attr(ctx->node, "axes") && Sh_has(ctx, 1))
        na = ctx->in[1]->shape.rank == 1 ? (int)ctx->in[1]->shape.dim[0] : -1;
    if (in->rank < 0 || na < 0) return TT_OK;
    int r = in->rank + na, axes[ND_MAX_RANK], n;
    bool given, known;
    if (r > ND_MAX_RANK)
        return tt_fail(ctx->err, "the output would have rank %d; at most %d is supported", r, ND_MAX_RANK);
    if (Sh_axes(ctx, 1, r, axes, &n, &given, &known) != TT_OK || !known) return known ? TT_ERR : TT_OK;
    if (!given || n == 0) return tt_fail(ctx->err, "Unsqueeze needs axes");
    bool one[ND_MAX_RANK] = {false};
    for (int i = 0; i < n; i++)
        one[axes[i]] = true;
    NdShape s = {.rank = r};
    for (int i = 0, j = 0; i < r; i++)
        s.dim[i] = one[i] ? 1 : in->dim[j++];
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

Status Unsqueeze_run(OpCtx *ctx) { return Unsqueeze_infer(ctx) != TT_OK ? TT_ERR : Sh_runView(ctx); }

static Status transpose_perm(OpCtx *ctx, int *perm) {
    int rank = ctx->in[0]->shape.rank, np = 0;
    const int64_t *p = NetNode_attrInts(ctx->node, "perm", &np);
    if (p && np != rank) return tt_fail(ctx->err, "perm has %d entries for a rank-%d input", np, rank);
    bool seen[ND_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++) {
        int64_t v = p ? p[i] : rank - 1 - i;
        if (v < 0 || v >= rank || seen[v]) return tt_fail(ctx->err, "perm is not a permutation of 0..%d", rank - 1);
        seen[v] = true;
        perm[i] = (int)v;
    }
    return TT_OK;
}

Status Transpose_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    int perm[ND_MAX_RANK];
    if (in->rank < 0) return TT_OK;
    if (transpose_perm(ctx, perm) != TT_OK) return TT_ERR;
    NdShape s = {.rank = in->rank};
    for (int i = 0; i < in->rank; i++)
        s.dim[i] = in->dim[perm[i]];
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

Status Transpose_run(OpCtx *ctx) {
    int perm[ND_MAX_RANK];
    if (Transpose_infer(ctx) != TT_OK || transpose_perm(ctx, perm) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    Sh_transpose(x->shape.rank, x->shape.dim, perm, ctx->out[0].data, x->data, NdType_size(x->type));
    return TT_OK;
}

Status Concat_infer(OpCtx *ctx) {
    const NdTensor *x0 = ctx->in[0];
    Sh_unknown(ctx, 0, x0->type);
    for (int i = 0; i < ctx->n_in; i++)
        if (!ctx->in[i] || ctx->in[i]->shape.rank < 0) return TT_OK;
    int rank = x0->shape.rank, axis;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), rank, &axis, ctx->err) != TT_OK) return TT_ERR;
    NdShape s = x0->shape;
    s.dim[axis] = 0;
    for (int i = 0; i < ctx->n_in; i++) {
        const NdShape *si = &ctx->in[i]->shape;
        if (ctx->in[i]->type != x0->type)
            return tt_fail(ctx->err, "input %d is %s but input 0 is %s", i, NdType_name(ctx->in[i]->type),
                           NdType_name(x0->type));
        for (int d = 0; d < rank; d++)
            if (si->rank != rank || (d != axis && si->dim[d] != s.dim[d]))
                return tt_fail(ctx->err, "input %d's shape does not match input 0's outside axis %d", i, axis);
        s.dim[axis] += si->dim[axis];
    }
    Sh_setOut(ctx, 0, x0->type, &s);
    return TT_OK;
}

Status Concat_run(OpCtx *ctx) {
    if (Concat_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    NdTensor *y = &ctx->out[0];
    int rank = y->shape.rank, axis;
    Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), rank, &axis, ctx->err);
    size_t esize = NdType_size(y->type);
    int64_t ost[ND_MAX_RANK], ist[ND_MAX_RANK], offset = 0;
    Sh_strides(&y->shape, ost);
    for (int i = 0; i < ctx->n_in; i++) {
        const NdTensor *x = ctx->in[i];
        Sh_strides(&x->shape, ist);
        Sh_copy(rank, x->shape.dim, (char *)y->data + offset * (int64_t)esize, ost, x->data, ist, esize);
        offset += x->shape.dim[axis] * ost[axis];
    }
    return TT_OK;
}

/* The size of each output along the axis; *known false when a split input is not constant. */
static Status split_sizes(OpCtx *ctx, int axis, int64_t *sizes, bool *known) {
    int64_t d = ctx->in[0]->shape.dim[axis], sum = 0;
    int ns = 0, n = ctx->n_out;
    const int64_t *attr = NetNode_attrInts(ctx->node, "split", &ns);
    int64_t *buf = NULL, cnt = ns;
    *known = true;
    if (!attr && Sh_has(ctx, 1)) {
        if (!Sh_known(ctx, 1)) {
            *known = false;
            return TT_OK;
        }
        if (Sh_ints(ctx, 1, &buf, &cnt) != TT_OK) return TT_ERR;
        attr = buf;
    }
    Status st = TT_OK;
    if (attr) {
        if (cnt != n) st = tt_fail(ctx->err, "split has %lld sizes for %d outputs", (long long)cnt, n);
        for (int i = 0; st == TT_OK && i < n; i++) {
            sizes[i] = attr[i];
            if (attr[i] < 0 || attr[i] > d)
                st = tt_fail(ctx->err, "split size %lld is outside [0, %lld]", (long long)attr[i], (long long)d);
            sum += st == TT_OK ? attr[i] : 0;
        }
        if (st == TT_OK && sum != d)
            st = tt_fail(ctx->err, "split sizes add up to %lld, not %lld", (long long)sum, (long long)d);
    } else {
        int64_t chunk = (d + n - 1) / n; /* num_outputs: the last part may be smaller */
        for (int i = 0; i < n; i++) {
            sizes[i] = d - sum < chunk ? d - sum : chunk;
            sum += sizes[i];
        }
    }
    free(buf);
    return st;
}

Status Split_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    for (int k = 0; k < ctx->n_out; k++)
        Sh_unknown(ctx, k, ctx->in[0]->type);
    int64_t no = NetNode_attrInt(ctx->node, "num_outputs", ctx->n_out);
    if (no != ctx->n_out)
        return tt_fail(ctx->err, "num_outputs is %lld but the node has %d outputs", (long long)no, ctx->n_out);
    if (in->rank < 0) return TT_OK;
    int axis;
    bool known;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), in->rank, &axis, ctx->err) != TT_OK) return TT_ERR;
    int64_t *sizes = malloc(sizeof *sizes * (size_t)ctx->n_out);
    if (!sizes) return tt_fail(ctx->err, "out of memory");
    Status st = split_sizes(ctx, axis, sizes, &known);
    for (int k = 0; st == TT_OK && known && k < ctx->n_out; k++) {
        NdShape s = *in;
        s.dim[axis] = sizes[k];
        Sh_setOut(ctx, k, ctx->in[0]->type, &s);
    }
    free(sizes);
    return st;
}

Status Split_run(OpCtx *ctx) {
    if (Split_infer(ctx) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    int axis;
    Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), x->shape.rank, &axis, ctx->err);
    size_t esize = NdType_size(x->type);
    int64_t ist[ND_MAX_RANK], ost[ND_MAX_RANK], offset = 0;
    Sh_strides(&x->shape, ist);
    for (int k = 0; k < ctx->n_out; k++) {
        if (Sh_alloc(ctx, k) != TT_OK) return TT_ERR;
        NdTensor *y = &ctx->out[k];
        Sh_strides(&y->shape, ost);
        Sh_copy(y->shape.rank, y->shape.dim, y->data, ost, (const char *)x->data + offset * (int64_t)esize, ist, esize);
        offset += y->shape.dim[axis] * ist[axis];
    }
    return TT_OK;
}
