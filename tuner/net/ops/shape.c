/* tuner/net/ops/shape.c: the shape and data-movement family's table
 * (OPS_SHAPE), and its smallest ops: Constant, ConstantOfShape, Shape, Size,
 * Identity, Range, EyeLike. The others live in shape_move.c, shape_view.c,
 * shape_pad.c, shape_index.c, shape_sort.c, shape_resize.c and reduce.c
 * (shape_ops.h lists them). Most ops move bytes, so they take every element
 * type exactly; the ones that compute (reductions, ArgMax/ArgMin and TopK's
 * comparisons, CumSum, Range of floats, scatters with a reduction, Resize's
 * linear and cubic modes) work in double and store into the type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/shape_ops.h"

/* ---- Constant ---- */

static const char *const CONSTANT_ATTRS[] = {"value", "value_float", "value_floats", "value_int", "value_ints", NULL};

static Status Constant_check(const NetNode *n, const NetModel *m, char *err) {
    (void)m;
    int found = 0;
    for (int i = 0; i < n->n_attrs; i++) {
        const char *name = n->attrs[i].name;
        bool known = false;
        for (int k = 0; CONSTANT_ATTRS[k]; k++)
            known |= !strcmp(name, CONSTANT_ATTRS[k]);
        if (!known) return tt_fail(err, "attribute %s is not supported", name);
        found++;
    }
    if (found != 1) return tt_fail(err, "Constant needs exactly one value attribute, got %d", found);
    const NetAttr *v = NetNode_attr(n, "value");
    if (v && (v->kind != NATTR_TENSOR || !NdType_supported(v->t.type)))
        return tt_fail(err, "attribute value is not a tensor of a supported type");
    return TT_OK;
}

static Status Constant_infer(OpCtx *ctx) {
    const NetAttr *a = &ctx->node->attrs[0];
    NdShape s = {.rank = a->kind == NATTR_FLOATS || a->kind == NATTR_INTS ? 1 : 0, .dim = {a->n}};
    if (a->kind == NATTR_TENSOR)
        Sh_setOut(ctx, 0, a->t.type, &a->t.shape);
    else
        Sh_setOut(ctx, 0, a->kind == NATTR_FLOAT || a->kind == NATTR_FLOATS ? ND_F32 : ND_I64, &s);
    return TT_OK;
}

static Status Constant_run(OpCtx *ctx) {
    const NetAttr *a = &ctx->node->attrs[0];
    if (Constant_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    NdTensor *y = &ctx->out[0];
    if (a->kind == NATTR_TENSOR) {
        if (y->count > 0 && a->t.data) memcpy(y->data, a->t.data, (size_t)y->count * NdType_size(y->type));
        return TT_OK;
    }
    for (int64_t i = 0; i < y->count; i++) {
        if (a->kind == NATTR_INTS || a->kind == NATTR_INT)
            ((int64_t *)y->data)[i] = a->kind == NATTR_INTS ? a->ints[i] : a->i;
        else
            NdTensor_set(y, i, a->kind == NATTR_FLOATS ? a->floats[i] : a->f);
    }
    return TT_OK;
}

/* ---- ConstantOfShape ---- */

static Status ConstantOfShape_check(const NetNode *n, const NetModel *m, char *err) {
    (void)m;
    const NetAttr *v = NetNode_attr(n, "value");
    if (v && (v->kind != NATTR_TENSOR || v->t.count != 1 || !NdType_supported(v->t.type)))
        return tt_fail(err, "attribute value must be a one-element tensor of a supported type");
    return TT_OK;
}

static Status ConstantOfShape_infer(OpCtx *ctx) {
    const NetAttr *v = NetNode_attr(ctx->node, "value");
    NdType type = v ? v->t.type : ND_F32;
    Sh_unknown(ctx, 0, type);
    if (!Sh_known(ctx, 0)) return TT_OK;
    int64_t *d, n;
    if (Sh_ints(ctx, 0, &d, &n) != TT_OK) return TT_ERR;
    Status st = n > ND_MAX_RANK ? tt_fail(ctx->err, "the shape has %lld dimensions", (long long)n) : TT_OK;
    NdShape s = {.rank = (int)n};
    for (int i = 0; st == TT_OK && i < n; i++) {
        s.dim[i] = d[i];
        if (d[i] < 0) st = tt_fail(ctx->err, "dimension %d is negative", i);
    }
    free(d);
    if (st == TT_OK) Sh_setOut(ctx, 0, type, &s);
    return st;
}

static Status ConstantOfShape_run(OpCtx *ctx) {
    if (ConstantOfShape_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NetAttr *v = NetNode_attr(ctx->node, "value");
    NdTensor *y = &ctx->out[0];
    size_t es = NdType_size(y->type);
    for (int64_t i = 0; v && v->t.data && i < y->count; i++)
        memcpy((char *)y->data + i * (int64_t)es, v->t.data, es);
    return TT_OK; /* without value: zeros, as allocated */
}

/* ---- Shape, Size, Identity ---- */

/* Shape's [start, end) after clamping (opset 15). */
static void shape_range(const OpCtx *ctx, int rank, int64_t *start, int64_t *end) {
    int64_t s = NetNode_attrInt(ctx->node, "start", 0), e = NetNode_attrInt(ctx->node, "end", rank);
    s = s < 0 ? s + rank : s;
    e = e < 0 ? e + rank : e;
    *start = s < 0 ? 0 : s > rank ? rank : s;
    *end = e < 0 ? 0 : e > rank ? rank : e;
}

static Status Shape_infer(OpCtx *ctx) {
    int rank = ctx->in[0]->shape.rank;
    Sh_unknown(ctx, 0, ND_I64);
    if (rank < 0) return TT_OK;
    int64_t s, e;
    shape_range(ctx, rank, &s, &e);
    NdShape out = {.rank = 1, .dim = {e > s ? e - s : 0}};
    Sh_setOut(ctx, 0, ND_I64, &out);
    return TT_OK;
}

static Status Shape_run(OpCtx *ctx) {
    if (Shape_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    int64_t s, e;
    shape_range(ctx, ctx->in[0]->shape.rank, &s, &e);
    for (int64_t i = s; i < e; i++)
        ((int64_t *)ctx->out[0].data)[i - s] = ctx->in[0]->shape.dim[i];
    return TT_OK;
}

static Status Size_infer(OpCtx *ctx) {
    NdShape s = {.rank = 0};
    Sh_setOut(ctx, 0, ND_I64, &s);
    return TT_OK;
}

static Status Size_run(OpCtx *ctx) {
    if (Size_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    *(int64_t *)ctx->out[0].data = Sh_count(&ctx->in[0]->shape);
    return TT_OK;
}

static Status Identity_run(OpCtx *ctx) {
    Sh_inferSameAs0(ctx);
    return Sh_runView(ctx);
}

/* ---- Range, EyeLike ---- */

static Status range_count(const OpCtx *ctx, int64_t *n) {
    for (int i = 0; i < 3; i++)
        if (ctx->in[i]->count != 1) return tt_fail(ctx->err, "input %d must hold one element", i);
    double start = NdTensor_get(ctx->in[0], 0), limit = NdTensor_get(ctx->in[1], 0),
           delta = NdTensor_get(ctx->in[2], 0);
    if (delta == 0) return tt_fail(ctx->err, "delta is 0");
    double c = ceil((limit - start) / delta);
    if (!(c < 1e15)) return tt_fail(ctx->err, "the range has too many elements");
    *n = c > 0 ? (int64_t)c : 0;
    return TT_OK;
}

static Status Range_infer(OpCtx *ctx) {
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    for (int i = 0; i < 3; i++)
        if (!Sh_known(ctx, i)) return TT_OK;
    NdShape s = {.rank = 1};
    if (range_count(ctx, &s.dim[0]) != TT_OK) return TT_ERR;
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

static Status Range_run(OpCtx *ctx) {
    if (Range_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    NdTensor *y = &ctx->out[0];
    bool is_int = !NdType_isFloat(y->type);
    for (int64_t i = 0; i < y->count; i++) {
        if (is_int) { /* exact in int64, then stored in the type */
            uint64_t start = (uint64_t)NdTensor_getInt(ctx->in[0], 0), delta = (uint64_t)NdTensor_getInt(ctx->in[2], 0);
            int64_t v = (int64_t)(start + (uint64_t)i * delta); /* wraps where the type would, never undefined */
            NdTensor_set(y, i, (double)v);
        } else
            NdTensor_set(y, i, NdTensor_get(ctx->in[0], 0) + (double)i * NdTensor_get(ctx->in[2], 0));
    }
    return TT_OK;
}

static Status EyeLike_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    NdType t = (NdType)NetNode_attrInt(ctx->node, "dtype", ctx->in[0]->type);
    if (!NdType_supported(t)) return tt_fail(ctx->err, "dtype %s is not supported", NdType_name(t));
    if (in->rank >= 0 && in->rank != 2) return tt_fail(ctx->err, "EyeLike needs a rank-2 input, got %d", in->rank);
    Sh_setOut(ctx, 0, t, in);
    return TT_OK;
}

static Status EyeLike_run(OpCtx *ctx) {
    if (EyeLike_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    NdTensor *y = &ctx->out[0];
    int64_t k = NetNode_attrInt(ctx->node, "k", 0), rows = y->shape.dim[0], cols = y->shape.dim[1];
    if (k >= cols || k <= -rows) return TT_OK; /* the diagonal misses the matrix (and i + k cannot overflow below) */
    for (int64_t i = 0; i < rows; i++)
        if (i + k >= 0 && i + k < cols) NdTensor_set(y, i * cols + i + k, 1);
    return TT_OK;
}

/* ---- costs ---- */

static double flops_in0(const OpCtx *ctx) { return Sh_flopsIn0(ctx); }

static double flops_topk(const OpCtx *ctx) {
    double n = Sh_flopsIn0(ctx);
    return n > 1 ? n * log2(n) : n;
}

#define OP(nm, lo, hi, nout, chk, inf, rn, fl)                                                                         \
    {                                                                                                                  \
        .name = nm, .domain = "", .min_in = lo, .max_in = hi, .min_out = 1, .max_out = nout, .check = chk,             \
        .infer = inf, .run = rn, .flops = fl                                                                           \
    }
#define REDUCE(nm) OP(nm, 1, 2, 1, Reduce_check, Reduce_infer, Reduce_run, flops_in0)

const OpDef OPS_SHAPE[] = {
    OP("Constant", 0, 0, 1, Constant_check, Constant_infer, Constant_run, NULL),
    OP("ConstantOfShape", 1, 1, 1, ConstantOfShape_check, ConstantOfShape_infer, ConstantOfShape_run, NULL),
    OP("Shape", 1, 1, 1, NULL, Shape_infer, Shape_run, NULL),
    OP("Size", 1, 1, 1, NULL, Size_infer, Size_run, NULL),
    OP("Identity", 1, 1, 1, NULL, Sh_inferSameAs0, Identity_run, NULL),
    OP("Reshape", 1, 2, 1, Reshape_check, Reshape_infer, Reshape_run, NULL),
    OP("Flatten", 1, 1, 1, NULL, Flatten_infer, Flatten_run, NULL),
    OP("Squeeze", 1, 2, 1, NULL, Squeeze_infer, Squeeze_run, NULL),
    OP("Unsqueeze", 1, 2, 1, NULL, Unsqueeze_infer, Unsqueeze_run, NULL),
    OP("Transpose", 1, 1, 1, NULL, Transpose_infer, Transpose_run, NULL),
    OP("Concat", 1, -1, 1, NULL, Concat_infer, Concat_run, NULL),
    OP("Split", 1, 2, 256, NULL, Split_infer, Split_run, NULL),
    OP("Slice", 1, 5, 1, NULL, Slice_infer, Slice_run, NULL),
    OP("Expand", 2, 2, 1, NULL, Expand_infer, Expand_run, NULL),
    OP("Tile", 2, 2, 1, NULL, Tile_infer, Tile_run, NULL),
    OP("DepthToSpace", 1, 1, 1, DepthToSpace_check, DepthToSpace_infer, DepthToSpace_run, NULL),
    OP("SpaceToDepth", 1, 1, 1, DepthToSpace_check, SpaceToDepth_infer, SpaceToDepth_run, NULL),
    OP("Pad", 1, 4, 1, Pad_check, Pad_infer, Pad_run, NULL),
    OP("Trilu", 1, 2, 1, NULL, Trilu_infer, Trilu_run, NULL),
    OP("Gather", 2, 2, 1, NULL, Gather_infer, Gather_run, NULL),
    OP("GatherElements", 2, 2, 1, NULL, GatherElements_infer, GatherElements_run, NULL),
    OP("GatherND", 2, 2, 1, NULL, GatherND_infer, GatherND_run, NULL),
    OP("ScatterElements", 3, 3, 1, Scatter_check, Sh_inferSameAs0, ScatterElements_run, NULL),
    OP("Scatter", 3, 3, 1, Scatter_check, Sh_inferSameAs0, ScatterElements_run, NULL),
    OP("ScatterND", 3, 3, 1, Scatter_check, Sh_inferSameAs0, ScatterND_run, NULL),
    OP("OneHot", 3, 3, 1, NULL, OneHot_infer, OneHot_run, NULL),
    OP("NonZero", 1, 1, 1, NULL, NonZero_infer, NonZero_run, NULL),
    OP("TopK", 1, 2, 2, NULL, TopK_infer, TopK_run, flops_topk),
    OP("CumSum", 2, 2, 1, NULL, Sh_inferSameAs0, CumSum_run, flops_in0),
    OP("Range", 3, 3, 1, NULL, Range_infer, Range_run, NULL),
    OP("EyeLike", 1, 1, 1, NULL, EyeLike_infer, EyeLike_run, NULL),
    OP("Resize", 1, 4, 1, Resize_check, Resize_infer, Resize_run, Resize_flops),
    OP("Upsample", 1, 2, 1, Resize_check, Resize_infer, Resize_run, Resize_flops),
    OP("ArgMax", 1, 1, 1, NULL, ArgMinMax_infer, ArgMinMax_run, flops_in0),
    OP("ArgMin", 1, 1, 1, NULL, ArgMinMax_infer, ArgMinMax_run, flops_in0),
    REDUCE("ReduceSum"),
    REDUCE("ReduceMean"),
    REDUCE("ReduceMax"),
    REDUCE("ReduceMin"),
    REDUCE("ReduceProd"),
    REDUCE("ReduceL1"),
    REDUCE("ReduceL2"),
    REDUCE("ReduceLogSum"),
    REDUCE("ReduceLogSumExp"),
    REDUCE("ReduceSumSquare"),
    {.name = NULL},
};
