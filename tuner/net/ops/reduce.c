/* tuner/net/ops/reduce.c: the Reduce* family and ArgMax/ArgMin.
 *
 * Reductions accumulate in double whatever the element type and store the
 * result in the input's type. Axes come from the attribute (before opset 18;
 * ReduceSum before 13) or from input 1; no axes means all of them, or the
 * input unchanged with noop_with_empty_axes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/par.h"
#include "tuner/net/ops/shape_ops.h"

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQUARE } ReduceKind;

static const char *const REDUCE_NAMES[] = {"ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
                                           "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                                           "ReduceLogSumExp", "ReduceSumSquare"};

static ReduceKind reduce_kind(const NetNode *n) {
    for (int i = 0; i < (int)(sizeof REDUCE_NAMES / sizeof REDUCE_NAMES[0]); i++)
        if (!strcmp(n->op, REDUCE_NAMES[i])) return (ReduceKind)i;
    return R_SUM;
}

Status Reduce_check(const NetNode *n, const NetModel *m, char *err) {
    (void)m;
    int64_t k = NetNode_attrInt(n, "keepdims", 1);
    if (k != 0 && k != 1) return tt_fail(err, "attribute keepdims=%lld is not 0 or 1", (long long)k);
    return TT_OK;
}

/* Which axes reduce; *noop when the op passes the input through; *known false
 * when the axes input is not constant. */
static Status reduce_mask(OpCtx *ctx, bool *mask, bool *noop, bool *known) {
    int rank = ctx->in[0]->shape.rank, axes[ND_MAX_RANK], n;
    bool given;
    if (Sh_axes(ctx, 1, rank, axes, &n, &given, known) != TT_OK || !*known) return *known ? TT_ERR : TT_OK;
    *noop = n == 0 && NetNode_attrInt(ctx->node, "noop_with_empty_axes", 0) != 0;
    for (int i = 0; i < rank; i++)
        mask[i] = n == 0 && !*noop;
    for (int i = 0; i < n; i++)
        mask[axes[i]] = true;
    return TT_OK;
}

Status Reduce_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    if (in->rank < 0) return TT_OK;
    bool mask[ND_MAX_RANK], noop, known;
    if (reduce_mask(ctx, mask, &noop, &known) != TT_OK || !known) return known ? TT_ERR : TT_OK;
    bool keep = NetNode_attrInt(ctx->node, "keepdims", 1) != 0;
    NdShape s = {.rank = 0};
    for (int i = 0; i < in->rank; i++)
        if (!mask[i] || keep) s.dim[s.rank++] = mask[i] ? 1 : in->dim[i];
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

/* For each input element, the flat index of the output element it reduces into. */
typedef struct {
    int rank;
    int64_t dim[ND_MAX_RANK], ost[ND_MAX_RANK];
    int64_t idx[ND_MAX_RANK], o;
} ReduceWalk;

static void walk_init(ReduceWalk *w, const NdShape *in, const bool *mask) {
    memset(w, 0, sizeof *w);
    w->rank = in->rank;
    int64_t st = 1;
    for (int i = in->rank - 1; i >= 0; i--) {
        w->dim[i] = in->dim[i];
        w->ost[i] = mask[i] ? 0 : st;
        st = Sh_mul(st, mask[i] ? 1 : in->dim[i]);
    }
}

/* The walk at input element i. */
static void walk_seek(ReduceWalk *w, int64_t i) {
    w->o = 0;
    for (int d = w->rank - 1; d >= 0; d--) {
        w->idx[d] = i % w->dim[d];
        i /= w->dim[d];
        w->o += w->idx[d] * w->ost[d];
    }
}

static void walk_next(ReduceWalk *w) {
    for (int i = w->rank - 1; i >= 0; i--) {
        w->o += w->ost[i];
        if (++w->idx[i] < w->dim[i]) return;
        w->o -= w->ost[i] * w->dim[i];
        w->idx[i] = 0;
    }
}

/* One reduction's pieces of work (par.h). The input splits into `slabs`:
 * the leading dimensions that are not reduced, so slab s feeds only outputs
 * [s x outputs/slabs, (s + 1) x ...), each in the input's order, as on one
 * thread. An input whose first dimension is reduced is one slab. */
typedef struct ReduceJob {
    const NdTensor *x;
    NdTensor *y;
    const bool *mask;
    ReduceKind k;
    double *acc;
    const double *shift;
    int64_t slab; /* input elements per slab */
} ReduceJob;

/* acc[o] over slabs [lo, hi) of the input: max per output (R_MAX), min
 * (R_MIN), or the sum of f(v) for the other kinds (shift: the per-output max
 * LogSumExp takes off). */
static void reduce_slabs(void *arg, int64_t lo, int64_t hi) {
    const ReduceJob *j = arg;
    ReduceWalk w;
    walk_init(&w, &j->x->shape, j->mask);
    walk_seek(&w, lo * j->slab);
    for (int64_t i = lo * j->slab; i < hi * j->slab; i++, walk_next(&w)) {
        double v = NdTensor_get(j->x, i), *a = &j->acc[w.o];
        switch (j->k) {
        case R_MAX:
            *a = v > *a || isnan(v) ? v : *a;
            break;
        case R_MIN:
            *a = v < *a || isnan(v) ? v : *a;
            break;
        case R_PROD:
            *a *= v;
            break;
        case R_L1:
            *a += fabs(v);
            break;
        case R_L2:
        case R_SUMSQUARE:
            *a += v * v;
            break;
        case R_LOGSUMEXP:
            *a += exp(v - j->shift[w.o]);
            break;
        default:
            *a += v;
            break;
        }
    }
}

/* Outputs [lo, hi): the accumulator's final value, stored in y's type. */
static void reduce_finish(void *arg, int64_t lo, int64_t hi) {
    const ReduceJob *j = arg;
    int64_t n = j->y->count ? j->x->count / j->y->count : 0;
    for (int64_t o = lo; o < hi; o++) {
        double v = j->acc[o];
        switch (j->k) {
        case R_MEAN:
            v = n ? v / (double)n : NAN;
            break;
        case R_L2:
            v = sqrt(v);
            break;
        case R_LOGSUM:
            v = log(v);
            break;
        case R_LOGSUMEXP:
            v = log(v) + j->shift[o];
            break;
        default:
            break;
        }
        NdTensor_set(j->y, o, v);
    }
}

/* One pass over the input, split by slabs. */
static void reduce_pass(ReduceJob *j, ReduceKind k) {
    const NdShape *s = &j->x->shape;
    int64_t slabs = 1;
    if (j->x->count == 0) return;
    for (int d = 0; d < s->rank && !j->mask[d]; d++)
        slabs *= s->dim[d];
    j->k = k;
    j->slab = slabs ? j->x->count / slabs : 0;
    Par_range(slabs, (k == R_LOGSUMEXP ? 10.0 : 2.0) * (double)j->x->count, reduce_slabs, j);
}

Status Reduce_run(OpCtx *ctx) {
    if (Reduce_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    NdTensor *y = &ctx->out[0];
    bool mask[ND_MAX_RANK], noop, known;
    reduce_mask(ctx, mask, &noop, &known);
    if (noop) return y->count ? (memcpy(y->data, x->data, (size_t)y->count * NdType_size(y->type)), TT_OK) : TT_OK;
    ReduceKind k = reduce_kind(ctx->node);
    double *acc = malloc(sizeof *acc * 2 * (size_t)(y->count ? y->count : 1)), *shift = acc + y->count;
    if (!acc) return tt_fail(ctx->err, "out of memory");
    double init = k == R_MAX || k == R_LOGSUMEXP ? -INFINITY : k == R_MIN ? INFINITY : k == R_PROD ? 1 : 0;
    for (int64_t o = 0; o < y->count; o++)
        acc[o] = init;
    ReduceJob j = {.x = x, .y = y, .mask = mask, .acc = acc, .shift = shift};
    if (k == R_LOGSUMEXP) {
        reduce_pass(&j, R_MAX);
        for (int64_t o = 0; o < y->count; o++) {
            shift[o] = isfinite(acc[o]) ? acc[o] : 0;
            acc[o] = 0;
        }
    }
    reduce_pass(&j, k);
    Par_range(y->count, 4.0 * (double)y->count, reduce_finish, &j);
    free(acc);
    return TT_OK;
}

/* ---- ArgMax, ArgMin ---- */

Status ArgMinMax_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ND_I64);
    if (in->rank < 0) return TT_OK;
    int axis;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), in->rank, &axis, ctx->err) != TT_OK) return TT_ERR;
    bool keep = NetNode_attrInt(ctx->node, "keepdims", 1) != 0;
    NdShape s = {.rank = 0};
    for (int i = 0; i < in->rank; i++)
        if (i != axis || keep) s.dim[s.rank++] = i == axis ? 1 : in->dim[i];
    Sh_setOut(ctx, 0, ND_I64, &s);
    return TT_OK;
}

/* ArgMax's and ArgMin's lines (par.h): line l is (outer l / inner, inner
 * l % inner), n elements along the axis. */
typedef struct ArgJob {
    const NdTensor *x;
    int64_t *y, n, inner;
    bool is_max, last;
} ArgJob;

static void arg_lines(void *arg, int64_t lo, int64_t hi) {
    const ArgJob *j = arg;
    for (int64_t l = lo; l < hi; l++) {
        int64_t base = l / j->inner * j->n * j->inner + l % j->inner, best = 0;
        double bv = NdTensor_get(j->x, base);
        for (int64_t i = 1; i < j->n; i++) {
            double v = NdTensor_get(j->x, base + i * j->inner);
            bool better = j->is_max ? (v > bv || (j->last && v == bv)) : (v < bv || (j->last && v == bv));
            if (better) {
                best = i;
                bv = v;
            }
        }
        j->y[l] = best;
    }
}

Status ArgMinMax_run(OpCtx *ctx) {
    if (ArgMinMax_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    int axis;
    Nd_axis(NetNode_attrInt(ctx->node, "axis", 0), x->shape.rank, &axis, ctx->err);
    bool is_max = !strcmp(ctx->node->op, "ArgMax");
    bool last = NetNode_attrInt(ctx->node, "select_last_index", 0) != 0;
    int64_t n = x->shape.dim[axis], inner = 1, outer = 1;
    if (n == 0) return tt_fail(ctx->err, "axis %d is empty", axis);
    for (int i = 0; i < x->shape.rank; i++)
        *(i < axis ? &outer : &inner) *= i == axis ? 1 : x->shape.dim[i];
    ArgJob j = {.x = x, .y = ctx->out[0].data, .n = n, .inner = inner, .is_max = is_max, .last = last};
    Par_range(outer * inner, 2.0 * (double)x->count, arg_lines, &j);
    return TT_OK;
}
