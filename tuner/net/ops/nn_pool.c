/* tuner/net/ops/nn_pool.c: MaxPool (with its optional Indices output in row-
 * or column-major order; int8 and uint8 too), AveragePool (count_include_pad),
 * LpPool (p), all with kernel_shape, strides, pads, auto_pad, dilations and
 * ceil_mode over 1 to 3 spatial dimensions; GlobalAveragePool and
 * GlobalMaxPool. Computed in double (exact for the 8-bit types). */
#include <math.h>
#include <string.h>

#include "tuner/net/ops/nn_util.h"
#include "tuner/net/ops/par.h"

static const NdType MAXPOOL_TYPES[] = {ND_F32, ND_F16, ND_F64, ND_I8, ND_U8, ND_UNDEF};

typedef enum { POOL_MAX, POOL_AVG, POOL_LP } PoolKind;

typedef struct PoolArgs {
    NnWin win;
    PoolKind kind;
    bool include_pad; /* AveragePool's count_include_pad */
    bool col_major;   /* MaxPool's storage_order 1 */
    double p;         /* LpPool */
    int64_t planes;   /* N * C */
} PoolArgs;

static PoolKind pool_kind(const char *op) {
    return !strcmp(op, "MaxPool") ? POOL_MAX : !strcmp(op, "AveragePool") ? POOL_AVG : POOL_LP;
}

Status Pool_check(const NetNode *node, const NetModel *model, char *err) {
    int nk;
    NetNode_attrInts(node, "kernel_shape", &nk);
    if (nk == 0) return tt_fail(err, "attribute kernel_shape is missing");
    int64_t ceil_mode = NetNode_attrInt(node, "ceil_mode", 0), order = NetNode_attrInt(node, "storage_order", 0);
    if ((ceil_mode != 0 && ceil_mode != 1) || (order != 0 && order != 1))
        return tt_fail(err, "attributes ceil_mode=%lld, storage_order=%lld: 0 or 1 expected", (long long)ceil_mode,
                       (long long)order);
    if (pool_kind(node->op) == POOL_LP && NetNode_attrFloat(node, "p", 2.0) <= 0)
        return tt_fail(err, "attribute p=%g is not positive", NetNode_attrFloat(node, "p", 2.0));
    return Nn_checkAutoPad(node, err);
}

/* The window and the output shape of a pool on input 0. */
static Status pool_setup(const OpCtx *ctx, PoolArgs *pa, NdShape *ys) {
    const NetNode *node = ctx->node;
    const NdShape *xs = &ctx->in[0]->shape;
    int nk;
    const int64_t *k = NetNode_attrInts(node, "kernel_shape", &nk);
    if (xs->rank < 3 || xs->rank > 2 + NN_SP)
        return tt_fail(ctx->err, "input of rank %d: %s takes 1 to %d spatial dimensions", xs->rank, node->op, NN_SP);
    if (nk != xs->rank - 2)
        return tt_fail(ctx->err, "attribute kernel_shape has %d values for %d spatial dimensions", nk, xs->rank - 2);
    bool ceil_mode = NetNode_attrInt(node, "ceil_mode", 0) != 0;
    if (NnWin_init(&pa->win, node, xs, k, ceil_mode, ctx->err) != TT_OK) return TT_ERR;
    pa->kind = pool_kind(node->op);
    pa->include_pad = NetNode_attrInt(node, "count_include_pad", 0) != 0;
    pa->col_major = NetNode_attrInt(node, "storage_order", 0) == 1;
    pa->p = NetNode_attrFloat(node, "p", 2.0);
    pa->planes = xs->dim[0] * xs->dim[1];
    *ys = *xs;
    for (int i = 0; i < pa->win.nsp; i++)
        ys->dim[2 + i] = pa->win.out[NN_SP - pa->win.nsp + i];
    return TT_OK;
}

Status Pool_infer(OpCtx *ctx) {
    bool is_max = pool_kind(ctx->node->op) == POOL_MAX;
    if (Op_requireType(ctx, 0, is_max ? MAXPOOL_TYPES : NN_FLOATS) != TT_OK) return TT_ERR;
    ctx->out[0].type = ctx->in[0]->type;
    ctx->out[0].shape.rank = -1;
    if (ctx->n_out > 1) {
        ctx->out[1].type = ND_I64;
        ctx->out[1].shape.rank = -1;
    }
    PoolArgs pa;
    if (ctx->in[0]->shape.rank < 0 || pool_setup(ctx, &pa, &ctx->out[0].shape) != TT_OK)
        return ctx->in[0]->shape.rank < 0 ? TT_OK : TT_ERR;
    if (ctx->n_out > 1) ctx->out[1].shape = ctx->out[0].shape;
    return TT_OK;
}

/* Kernel positions along dimension j of window w that start at `start`:
 * those inside the input [lo, hi), and how many fall inside the padded input. */
static int64_t pool_span(const NnWin *w, int j, int64_t start, int64_t *lo, int64_t *hi) {
    int64_t l = 0, h = 0, padded = 0;
    bool seen = false;
    for (int64_t k = 0; k < w->k[j]; k++) {
        int64_t i = start + k * w->d[j];
        if (i >= -w->pb[j] && i < w->in[j] + w->pe[j]) padded++;
        if (i >= 0 && i < w->in[j]) {
            if (!seen) l = k;
            h = k + 1;
            seen = true;
        }
    }
    *lo = l;
    *hi = seen ? h : l;
    return padded;
}

/* One output element of plane x at window start st[3]; *arg the flat input
 * index of the maximum (MaxPool). */
static double pool_one(const PoolArgs *pa, const double *x, const int64_t *st, int64_t *arg) {
    const NnWin *w = &pa->win;
    int64_t lo[NN_SP], hi[NN_SP], padded = 1, count = 0, best = -1;
    for (int j = 0; j < NN_SP; j++)
        padded *= pool_span(w, j, st[j], &lo[j], &hi[j]);
    double acc = pa->kind == POOL_MAX ? -INFINITY : 0;
    for (int64_t a = lo[0]; a < hi[0]; a++)
        for (int64_t b = lo[1]; b < hi[1]; b++)
            for (int64_t c = lo[2]; c < hi[2]; c++) {
                int64_t id = st[0] + a * w->d[0], ih = st[1] + b * w->d[1], iw = st[2] + c * w->d[2];
                double v = x[(id * w->in[1] + ih) * w->in[2] + iw];
                count++;
                if (pa->kind == POOL_AVG)
                    acc += v;
                else if (pa->kind == POOL_LP)
                    acc += pow(fabs(v), pa->p);
                else if (v > acc || best < 0) {
                    acc = v;
                    best = pa->col_major ? (iw * w->in[1] + ih) * w->in[0] + id : (id * w->in[1] + ih) * w->in[2] + iw;
                }
            }
    *arg = best;
    if (pa->kind == POOL_AVG) return count ? acc / (double)(pa->include_pad ? padded : count) : NAN;
    if (pa->kind == POOL_LP) return pow(acc, 1.0 / pa->p);
    return count ? acc : NAN;
}

/* A pool's output rows, handed to the threads (par.h): row r is (plane,
 * od, oh) = r / (out[0] x out[1]), ... with its out[2] elements. */
typedef struct PoolJob {
    const PoolArgs *pa;
    const void *x;
    void *y;
    int64_t *ind; /* MaxPool's Indices, or NULL */
} PoolJob;

/* The work of a pool, in element operations: a window per output element. */
static double pool_work(const PoolArgs *pa) {
    return (double)pa->planes * (double)NnWin_outSize(&pa->win) * (double)NnWin_kernel(&pa->win);
}

static void pool_rows(void *arg, int64_t lo, int64_t hi) {
    const PoolJob *j = arg;
    const PoolArgs *pa = j->pa;
    const NnWin *w = &pa->win;
    int64_t is = NnWin_inSize(w), rows = w->out[0] * w->out[1];
    double *y = j->y;
    for (int64_t r = lo; r < hi; r++) {
        int64_t pl = r / rows, od = r % rows / w->out[1], oh = r % w->out[1], o = r * w->out[2];
        const double *x = (const double *)j->x + pl * is;
        for (int64_t ow = 0; ow < w->out[2]; ow++, o++) {
            int64_t st[NN_SP] = {od * w->s[0] - w->pb[0], oh * w->s[1] - w->pb[1], ow * w->s[2] - w->pb[2]};
            int64_t best;
            y[o] = pool_one(pa, x, st, &best);
            if (j->ind) j->ind[o] = best < 0 ? -1 : pl * is + best;
        }
    }
}

static bool pool_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    const PoolArgs *pa = arg;
    PoolJob j = {.pa = pa, .x = in[0], .y = yv};
    if (pa->kind == POOL_MAX && ctx->n_out > 1 && ctx->node->n_out > 1 && ctx->node->out[1] >= 0) {
        if (NdTensor_alloc(&ctx->out[1], ND_I64, &ctx->out[0].shape, ctx->err) != TT_OK) return false;
        j.ind = ctx->out[1].data;
    }
    Par_range(pa->planes * pa->win.out[0] * pa->win.out[1], pool_work(pa), pool_rows, &j);
    return true;
}

/* The kernel positions [*lo, *hi) of dimension j whose input index, from
 * window start `start`, falls inside the input. */
static void valid_taps(const NnWin *w, int j, int64_t start, int64_t *lo, int64_t *hi) {
    int64_t d = w->d[j], l = start < 0 ? (-start + d - 1) / d : 0, h = (w->in[j] - start + d - 1) / d;
    *lo = l;
    *hi = h < w->k[j] ? h : w->k[j];
}

/* MaxPool of float32 without the Indices output, straight from the input (the
 * general path converts every element to double): the same first-taken,
 * NaN-skipping maximum, NaN for a window with no input element. */
static float maxpool_one_f32(const NnWin *w, const float *x, const int64_t *st) {
    int64_t lo[NN_SP], hi[NN_SP];
    for (int j = 0; j < NN_SP; j++)
        valid_taps(w, j, st[j], &lo[j], &hi[j]);
    float m = NAN;
    bool first = true;
    for (int64_t a = lo[0]; a < hi[0]; a++)
        for (int64_t b = lo[1]; b < hi[1]; b++) {
            const float *row = x + ((st[0] + a * w->d[0]) * w->in[1] + st[1] + b * w->d[1]) * w->in[2];
            for (int64_t c = lo[2]; c < hi[2]; c++) {
                float v = row[st[2] + c * w->d[2]];
                if (first || v > m) m = v;
                first = false;
            }
        }
    return m;
}

/* Output rows [lo, hi) (see PoolJob). */
static void maxpool_rows_f32(void *arg, int64_t lo, int64_t hi) {
    const PoolJob *j = arg;
    const NnWin *w = &j->pa->win;
    int64_t is = NnWin_inSize(w), rows = w->out[0] * w->out[1];
    float *y = (float *)j->y + lo * w->out[2];
    for (int64_t r = lo; r < hi; r++) {
        int64_t pl = r / rows, od = r % rows / w->out[1], oh = r % w->out[1];
        for (int64_t ow = 0; ow < w->out[2]; ow++) {
            int64_t st[NN_SP] = {od * w->s[0] - w->pb[0], oh * w->s[1] - w->pb[1], ow * w->s[2] - w->pb[2]};
            *y++ = maxpool_one_f32(w, (const float *)j->x + pl * is, st);
        }
    }
}

static Status pool_run(OpCtx *ctx) {
    PoolArgs pa;
    NdShape ys;
    bool is_max = pool_kind(ctx->node->op) == POOL_MAX;
    if (Op_requireType(ctx, 0, is_max ? MAXPOOL_TYPES : NN_FLOATS) != TT_OK || pool_setup(ctx, &pa, &ys) != TT_OK)
        return TT_ERR;
    bool indices = ctx->n_out > 1 && ctx->node->n_out > 1 && ctx->node->out[1] >= 0;
    if (is_max && !indices && ctx->in[0]->type == ND_F32) {
        if (NdTensor_alloc(&ctx->out[0], ND_F32, &ys, ctx->err) != TT_OK) return TT_ERR;
        PoolJob j = {.pa = &pa, .x = ctx->in[0]->data, .y = ctx->out[0].data};
        Par_range(pa.planes * pa.win.out[0] * pa.win.out[1], pool_work(&pa), maxpool_rows_f32, &j);
        return TT_OK;
    }
    Status st = Nn_runViews(ctx, 1, &ys, true, pool_compute, &pa);
    if (st != TT_OK && ctx->n_out > 1) NdTensor_free(&ctx->out[1]);
    return st;
}

Status MaxPool_run(OpCtx *ctx) { return pool_run(ctx); }
Status AvgPool_run(OpCtx *ctx) { return pool_run(ctx); }
Status LpPool_run(OpCtx *ctx) { return pool_run(ctx); }

double Pool_flops(const OpCtx *ctx) {
    int nk;
    const int64_t *k = NetNode_attrInts(ctx->node, "kernel_shape", &nk);
    double kk = 1;
    for (int i = 0; i < nk; i++)
        kk *= (double)k[i];
    return Nn_count(&ctx->out[0].shape) * kk;
}

Status GlobalPool_infer(OpCtx *ctx) {
    if (Nn_inferSame(ctx) != TT_OK) return TT_ERR;
    NdShape *ys = &ctx->out[0].shape;
    if (ys->rank >= 0 && ys->rank < 3)
        return tt_fail(ctx->err, "input of rank %d: %s takes N x C x spatial dimensions", ys->rank, ctx->node->op);
    for (int i = 2; i < ys->rank; i++)
        ys->dim[i] = 1;
    return TT_OK;
}

/* A global pool's planes of n elements each, reduced to the maximum or the mean. */
typedef struct GlobalJob {
    const double *x;
    double *y;
    int64_t n;
    bool is_max;
} GlobalJob;

static void global_planes(void *arg, int64_t lo, int64_t hi) {
    const GlobalJob *j = arg;
    int64_t n = j->n;
    for (int64_t pl = lo; pl < hi; pl++) {
        const double *x = j->x + pl * n;
        double acc = j->is_max ? -INFINITY : 0;
        for (int64_t i = 0; i < n; i++)
            acc = j->is_max ? (x[i] > acc ? x[i] : acc) : acc + x[i];
        j->y[pl] = n == 0 ? NAN : j->is_max ? acc : acc / (double)n;
    }
}

/* Each of the N * C planes reduced to its mean or its maximum, a plane per
 * item (par.h): a plane's sum keeps its order. */
static bool global_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    const NdShape *xs = &ctx->in[0]->shape;
    GlobalJob j = {.x = in[0], .y = yv, .n = 1, .is_max = arg != NULL};
    int64_t planes = xs->dim[0] * xs->dim[1];
    for (int i = 2; i < xs->rank; i++)
        j.n *= xs->dim[i];
    Par_range(planes, (double)(planes * j.n), global_planes, &j);
    return true;
}

/* float32 planes straight from the input (the general path first copies it all to double): the
 * mean's sum in double over 8 interleaved partial sums (vectorizable), added up in a fixed order;
 * the maximum as the general path takes it. */
typedef struct GlobalF32Job {
    const float *x;
    float *y;
    int64_t n;
    bool is_max;
} GlobalF32Job;

static double plane_sum_f32(const float *x, int64_t n) {
    double part[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            part[k] += (double)x[i + k];
    double acc = ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
    for (; i < n; i++)
        acc += (double)x[i];
    return acc;
}

static void global_planes_f32(void *arg, int64_t lo, int64_t hi) {
    const GlobalF32Job *j = arg;
    for (int64_t pl = lo; pl < hi; pl++) {
        const float *x = j->x + pl * j->n;
        if (!j->is_max) {
            j->y[pl] = j->n == 0 ? NAN : (float)(plane_sum_f32(x, j->n) / (double)j->n);
            continue;
        }
        float acc = -INFINITY;
        for (int64_t i = 0; i < j->n; i++)
            acc = x[i] > acc ? x[i] : acc;
        j->y[pl] = j->n == 0 ? NAN : acc;
    }
}

static Status global_run(OpCtx *ctx, bool is_max) {
    if (GlobalPool_infer(ctx) != TT_OK) return TT_ERR;
    NdShape ys = ctx->out[0].shape;
    const NdTensor *x = ctx->in[0];
    if (x->type == ND_F32) {
        ctx->out[0].type = ND_UNDEF;
        if (NdTensor_allocFull(&ctx->out[0], ND_F32, &ys, ctx->err) != TT_OK) return TT_ERR;
        GlobalF32Job j = {.x = x->data, .y = ctx->out[0].data, .n = 1, .is_max = is_max};
        for (int i = 2; i < x->shape.rank; i++)
            j.n *= x->shape.dim[i];
        int64_t planes = x->shape.dim[0] * x->shape.dim[1];
        Par_range(planes, (double)(planes * j.n), global_planes_f32, &j);
        return TT_OK;
    }
    static const int max_tag = 1;
    return Nn_runViews(ctx, 1, &ys, true, global_compute, is_max ? &max_tag : NULL);
}

Status GlobalAvgPool_run(OpCtx *ctx) { return global_run(ctx, false); }
Status GlobalMaxPool_run(OpCtx *ctx) { return global_run(ctx, true); }

double GlobalPool_flops(const OpCtx *ctx) { return Nn_count(&ctx->in[0]->shape); }
