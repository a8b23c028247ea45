/* tuner/net/ops/shape_view.c: data movement through a strided view of the
 * input: Slice, Expand, Tile, DepthToSpace, SpaceToDepth. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/shape_ops.h"

/* ---- Slice ---- */

typedef struct {
    int64_t start[ND_MAX_RANK], step[ND_MAX_RANK];
    NdShape out;
} SliceView;

/* One slice parameter list: attribute `name` before opset 10, else input i.
 * NULL with *n = -1 when absent, *known false when not constant. */
static Status slice_param(OpCtx *ctx, const char *name, int i, int64_t **v, int64_t *n, bool *known) {
    int na = 0;
    const int64_t *a = NetNode_attrInts(ctx->node, name, &na);
    *v = NULL;
    *n = -1;
    if (a) {
        *v = malloc(sizeof **v * (size_t)(na ? na : 1));
        if (!*v) return tt_fail(ctx->err, "out of memory");
        memcpy(*v, a, sizeof **v * (size_t)na);
        *n = na;
        return TT_OK;
    }
    if (!Sh_has(ctx, i)) return TT_OK;
    if (!Sh_known(ctx, i)) {
        *known = false;
        return TT_OK;
    }
    return Sh_ints(ctx, i, v, n);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ONNX's rule: negative indices count from the end, then clamp to the
 * range a step of that sign can reach. */
static void slice_axis(SliceView *sv, int ax, int64_t dim, int64_t start, int64_t end, int64_t step) {
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
        start = clamp64(start, 0, dim);
        end = clamp64(end, 0, dim);
    } else {
        start = clamp64(start, 0, dim - 1);
        end = clamp64(end, -1, dim - 1);
    }
    /* a step longer than the axis takes one element: clamped, so strides times steps cannot overflow */
    int64_t most = dim > 0 ? dim : 1;
    step = step > most ? most : step < -most ? -most : step;
    int64_t span = step > 0 ? end - start : start - end, mag = step > 0 ? step : -step;
    sv->start[ax] = start;
    sv->step[ax] = step;
    sv->out.dim[ax] = span > 0 ? (span - 1) / mag + 1 : 0;
}

/* The view; *known false when a parameter input is not constant. */
static Status slice_view(OpCtx *ctx, SliceView *sv, bool *known) {
    const NdShape *in = &ctx->in[0]->shape;
    int64_t *p[4] = {NULL, NULL, NULL, NULL}, n[4];
    static const char *names[4] = {"starts", "ends", "axes", "steps"};
    *known = true;
    Status st = TT_OK;
    for (int k = 0; k < 4 && st == TT_OK; k++)
        st = slice_param(ctx, names[k], k + 1, &p[k], &n[k], known);
    if (st == TT_OK && *known) {
        sv->out = *in;
        for (int i = 0; i < in->rank; i++) {
            sv->start[i] = 0;
            sv->step[i] = 1;
        }
        if (!p[0] || !p[1] || n[0] != n[1] || (p[2] && n[2] != n[0]) || (p[3] && n[3] != n[0]))
            st = tt_fail(ctx->err, "starts, ends, axes and steps must have the same length");
        bool seen[ND_MAX_RANK] = {false};
        for (int64_t j = 0; st == TT_OK && j < n[0]; j++) {
            int ax;
            int64_t step = p[3] ? p[3][j] : 1;
            if (Nd_axis(p[2] ? p[2][j] : j, in->rank, &ax, ctx->err) != TT_OK)
                st = TT_ERR;
            else if (seen[ax] || step == 0)
                st = tt_fail(ctx->err, step == 0 ? "a step is 0" : "axis %d is sliced twice", ax);
            else {
                seen[ax] = true;
                slice_axis(sv, ax, in->dim[ax], p[0][j], p[1][j], step);
            }
        }
    }
    for (int k = 0; k < 4; k++)
        free(p[k]);
    return st;
}

Status Slice_infer(OpCtx *ctx) {
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    if (ctx->in[0]->shape.rank < 0) return TT_OK;
    SliceView sv;
    bool known;
    if (slice_view(ctx, &sv, &known) != TT_OK) return TT_ERR;
    if (known) Sh_setOut(ctx, 0, ctx->in[0]->type, &sv.out);
    return TT_OK;
}

Status Slice_run(OpCtx *ctx) {
    SliceView sv;
    bool known;
    if (slice_view(ctx, &sv, &known) != TT_OK || Slice_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    NdTensor *y = &ctx->out[0];
    int64_t ist[ND_MAX_RANK], sst[ND_MAX_RANK], ost[ND_MAX_RANK], off = 0;
    Sh_strides(&x->shape, ist);
    Sh_strides(&y->shape, ost);
    for (int i = 0; i < x->shape.rank; i++) {
        off += sv.start[i] * ist[i];
        sst[i] = ist[i] * sv.step[i];
    }
    size_t esize = NdType_size(x->type);
    if (y->count > 0)
        Sh_copy(y->shape.rank, y->shape.dim, y->data, ost, (const char *)x->data + off * (int64_t)esize, sst, esize);
    return TT_OK;
}

/* ---- Expand, Tile ---- */

/* The shape input 1 asks for (Expand's shape, Tile's repeats); *known false when not constant. */
static Status shape_input(OpCtx *ctx, NdShape *s, bool *known) {
    *known = Sh_known(ctx, 1);
    if (!*known) return TT_OK;
    int64_t *v, n;
    if (Sh_ints(ctx, 1, &v, &n) != TT_OK) return TT_ERR;
    Status st = TT_OK;
    if (n > ND_MAX_RANK)
        st = tt_fail(ctx->err, "input 1 has %lld entries; at most %d are supported", (long long)n, ND_MAX_RANK);
    s->rank = (int)n;
    for (int i = 0; st == TT_OK && i < n; i++) {
        s->dim[i] = v[i];
        if (v[i] < 0) st = tt_fail(ctx->err, "input 1 has a negative entry %lld", (long long)v[i]);
    }
    free(v);
    return st;
}

Status Expand_infer(OpCtx *ctx) {
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    NdShape s, out;
    bool known;
    if (shape_input(ctx, &s, &known) != TT_OK) return TT_ERR;
    if (!known || ctx->in[0]->shape.rank < 0) return TT_OK;
    if (NdShape_broadcast(&ctx->in[0]->shape, &s, &out, ctx->err) != TT_OK) return TT_ERR;
    Sh_setOut(ctx, 0, ctx->in[0]->type, &out);
    return TT_OK;
}

Status Expand_run(OpCtx *ctx) {
    if (Expand_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    NdTensor *y = &ctx->out[0];
    int64_t sst[ND_MAX_RANK], ost[ND_MAX_RANK];
    if (y->count == 0) return TT_OK;
    NdShape_broadcastStrides(&x->shape, &y->shape, sst);
    Sh_strides(&y->shape, ost);
    Sh_copy(y->shape.rank, y->shape.dim, y->data, ost, x->data, sst, NdType_size(x->type));
    return TT_OK;
}

Status Tile_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    NdShape rep;
    bool known;
    if (shape_input(ctx, &rep, &known) != TT_OK) return TT_ERR;
    if (!known || in->rank < 0) return TT_OK;
    if (rep.rank != in->rank)
        return tt_fail(ctx->err, "repeats has %d entries for a rank-%d input", rep.rank, in->rank);
    NdShape s = *in;
    for (int i = 0; i < in->rank; i++) {
        if (rep.dim[i] > 0 && s.dim[i] > INT64_MAX / rep.dim[i])
            return tt_fail(ctx->err, "repeats of %lld overflow axis %d", (long long)rep.dim[i], i);
        s.dim[i] *= rep.dim[i];
    }
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

Status Tile_run(OpCtx *ctx) {
    if (Tile_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    NdTensor *y = &ctx->out[0];
    int r = x->shape.rank;
    int64_t ist[ND_MAX_RANK], dims[SH_MAX_VIEW], sst[SH_MAX_VIEW], dst[SH_MAX_VIEW];
    Sh_strides(&x->shape, ist);
    for (int i = 0; i < r; i++) { /* axis i seen as (repeat, dim): the repeat re-reads the same source */
        dims[2 * i] = x->shape.dim[i] ? y->shape.dim[i] / x->shape.dim[i] : 0;
        dims[2 * i + 1] = x->shape.dim[i];
        sst[2 * i] = 0;
        sst[2 * i + 1] = ist[i];
    }
    for (int64_t k = 2 * r - 1, st = 1; k >= 0; k--) {
        dst[k] = st;
        st = Sh_mul(st, dims[k]);
    }
    Sh_copy(2 * r, dims, y->data, dst, x->data, sst, NdType_size(x->type));
    return TT_OK;
}

/* ---- DepthToSpace, SpaceToDepth ---- */

Status DepthToSpace_check(const NetNode *n, const NetModel *m, char *err) {
    (void)m;
    const char *mode = NetNode_attrString(n, "mode", "DCR");
    if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
        return tt_fail(err, "attribute mode='%s' is not supported", mode);
    if (NetNode_attrInt(n, "blocksize", 0) <= 0) return tt_fail(err, "attribute blocksize must be positive");
    return TT_OK;
}

/* Both ops: a rank-4 input, the block size b; to_space says which way. */
static Status d2s_infer(OpCtx *ctx, bool to_space) {
    const NdShape *in = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    if (in->rank < 0) return TT_OK;
    int64_t b = NetNode_attrInt(ctx->node, "blocksize", 0);
    if (in->rank != 4 || b <= 0 || b > (1 << 20))
        return tt_fail(ctx->err, "expected a rank-4 input and a positive blocksize");
    NdShape s = *in;
    if (to_space) {
        if (in->dim[1] % (b * b))
            return tt_fail(ctx->err, "channels %lld are not a multiple of blocksize^2", (long long)in->dim[1]);
        s.dim[1] /= b * b;
        s.dim[2] *= b;
        s.dim[3] *= b;
    } else {
        if (in->dim[2] % b || in->dim[3] % b)
            return tt_fail(ctx->err, "height and width must be multiples of blocksize %lld", (long long)b);
        s.dim[1] *= b * b;
        s.dim[2] /= b;
        s.dim[3] /= b;
    }
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

Status DepthToSpace_infer(OpCtx *ctx) { return d2s_infer(ctx, true); }
Status SpaceToDepth_infer(OpCtx *ctx) { return d2s_infer(ctx, false); }

Status DepthToSpace_run(OpCtx *ctx) {
    if (DepthToSpace_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    int64_t b = NetNode_attrInt(ctx->node, "blocksize", 0), n = x->shape.dim[0], c = x->shape.dim[1] / (b * b),
            h = x->shape.dim[2], w = x->shape.dim[3];
    bool crd = strcmp(NetNode_attrString(ctx->node, "mode", "DCR"), "CRD") == 0;
    int64_t dcr[6] = {n, b, b, c, h, w}, crdv[6] = {n, c, b, b, h, w};
    static const int perm_dcr[6] = {0, 3, 4, 1, 5, 2}, perm_crd[6] = {0, 1, 4, 2, 5, 3};
    Sh_transpose(6, crd ? crdv : dcr, crd ? perm_crd : perm_dcr, ctx->out[0].data, x->data, NdType_size(x->type));
    return TT_OK;
}

Status SpaceToDepth_run(OpCtx *ctx) {
    if (SpaceToDepth_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    int64_t b = NetNode_attrInt(ctx->node, "blocksize", 0);
    int64_t v[6] = {x->shape.dim[0], x->shape.dim[1], x->shape.dim[2] / b, b, x->shape.dim[3] / b, b};
    static const int perm[6] = {0, 3, 5, 1, 2, 4};
    Sh_transpose(6, v, perm, ctx->out[0].data, x->data, NdType_size(x->type));
    return TT_OK;
}
