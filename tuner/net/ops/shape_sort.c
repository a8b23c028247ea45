/* tuner/net/ops/shape_sort.c: ops that walk one axis in order: TopK and
 * CumSum. Both view the input as (outer, axis, inner). */
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/shape_ops.h"

typedef struct {
    double v;
    int64_t i;
} Ranked;

/* Ties keep the lower index first, as ONNX asks. */
static int by_largest(const void *a, const void *b) {
    const Ranked *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int by_smallest(const void *a, const void *b) {
    const Ranked *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The axis and k; *known false when K is not constant. */
static Status topk_params(OpCtx *ctx, int *axis, int64_t *k, bool *known) {
    const NdShape *in = &ctx->in[0]->shape;
    *known = false;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", -1), in->rank, axis, ctx->err) != TT_OK) return TT_ERR;
    if (Sh_has(ctx, 1)) {
        if (!Sh_known(ctx, 1)) return TT_OK;
        if (ctx->in[1]->count != 1) return tt_fail(ctx->err, "K must hold one element");
        *k = NdTensor_getInt(ctx->in[1], 0);
    } else
        *k = NetNode_attrInt(ctx->node, "k", -1);
    if (*k < 0 || *k > in->dim[*axis])
        return tt_fail(ctx->err, "k %lld is outside [0, %lld]", (long long)*k, (long long)in->dim[*axis]);
    *known = true;
    return TT_OK;
}

Status TopK_infer(OpCtx *ctx) {
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    Sh_unknown(ctx, 1, ND_I64);
    if (ctx->in[0]->shape.rank < 0) return TT_OK;
    int axis;
    int64_t k;
    bool known;
    if (topk_params(ctx, &axis, &k, &known) != TT_OK || !known) return known ? TT_ERR : TT_OK;
    NdShape s = ctx->in[0]->shape;
    s.dim[axis] = k;
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    Sh_setOut(ctx, 1, ND_I64, &s);
    return TT_OK;
}

Status TopK_run(OpCtx *ctx) {
    int axis;
    int64_t k;
    bool known;
    if (TopK_infer(ctx) != TT_OK || topk_params(ctx, &axis, &k, &known) != TT_OK || Sh_alloc(ctx, 0) != TT_OK ||
        Sh_alloc(ctx, 1) != TT_OK)
        return TT_ERR;
    const NdTensor *x = ctx->in[0];
    const NdShape *s = &x->shape;
    int64_t n = s->dim[axis], inner = 1, outer = 1;
    for (int i = 0; i < s->rank; i++)
        *(i < axis ? &outer : &inner) *= i == axis ? 1 : s->dim[i];
    Ranked *row = malloc(sizeof *row * (size_t)(n ? n : 1));
    if (!row) return tt_fail(ctx->err, "out of memory");
    bool largest = NetNode_attrInt(ctx->node, "largest", 1) != 0;
    size_t es = NdType_size(x->type);
    int64_t *ind = ctx->out[1].data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            for (int64_t j = 0; j < n; j++)
                row[j] = (Ranked){NdTensor_get(x, (o * n + j) * inner + in), j};
            qsort(row, (size_t)n, sizeof *row, largest ? by_largest : by_smallest);
            for (int64_t j = 0; j < k; j++) {
                int64_t dst = (o * k + j) * inner + in, src = (o * n + row[j].i) * inner + in;
                memcpy((char *)ctx->out[0].data + dst * (int64_t)es, (const char *)x->data + src * (int64_t)es, es);
                ind[dst] = row[j].i;
            }
        }
    free(row);
    return TT_OK;
}

Status CumSum_run(OpCtx *ctx) {
    if (Sh_inferSameAs0(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    NdTensor *y = &ctx->out[0];
    int axis;
    if (ctx->in[1]->count != 1) return tt_fail(ctx->err, "axis must hold one element");
    if (Nd_axis(NdTensor_getInt(ctx->in[1], 0), x->shape.rank, &axis, ctx->err) != TT_OK) return TT_ERR;
    bool exclusive = NetNode_attrInt(ctx->node, "exclusive", 0) != 0;
    bool reverse = NetNode_attrInt(ctx->node, "reverse", 0) != 0;
    int64_t n = x->shape.dim[axis], inner = 1, outer = 1;
    for (int i = 0; i < x->shape.rank; i++)
        *(i < axis ? &outer : &inner) *= i == axis ? 1 : x->shape.dim[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            double acc = 0;
            for (int64_t j = 0; j < n; j++) {
                int64_t e = (o * n + (reverse ? n - 1 - j : j)) * inner + in;
                double v = NdTensor_get(x, e);
                if (!exclusive) acc += v;
                NdTensor_set(y, e, acc);
                if (exclusive) acc += v;
            }
        }
    return TT_OK;
}
