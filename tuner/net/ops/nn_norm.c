/* tuner/net/ops/nn_norm.c: BatchNormalization (inference), InstanceNormalization,
 * LayerNormalization (axis, epsilon, stash_type; Mean and InvStdDev outputs),
 * GroupNormalization (scale and bias per group as in opset 18, or per channel
 * as in 21: told apart by their length), LpNormalization and LRN. Computed in
 * double; statistics are the population mean and variance. */
#include <math.h>
#include <stdlib.h>

#include "tuner/net/ops/nn_util.h"
#include "tuner/net/ops/par.h"

/* What a normalisation's pieces of work read (par.h): planes (Batch-,
 * Instance-, GroupNormalization, LRN), lines (LpNormalization) or rows
 * (LayerNormalization), each computed on its own. */
typedef struct NormJob {
    OpCtx *ctx;
    const double *x, *scale, *bias, *mean, *var;
    double *y, eps;
    int64_t c, inner, g, cg, len, p; /* p: LpNormalization's */
    const int64_t *ms, *mb;          /* LayerNormalization: scale's and bias's element per position */
    bool per_group;
} NormJob;

/* The cost of the statistics and the affine map, in element operations (par.h). */
#define NORM_COST 8.0

/* Mean and 1 / sqrt(variance + eps) of x[0..n). */
static void norm_stats(const double *x, int64_t n, double eps, double *mean, double *inv) {
    double s = 0, v = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    double m = n ? s / (double)n : 0;
    for (int64_t i = 0; i < n; i++)
        v += (x[i] - m) * (x[i] - m);
    *mean = m;
    *inv = 1.0 / sqrt((n ? v / (double)n : 0) + eps);
}

/* Inputs first..last (those present and of known shape) are 1-D of length c. */
static Status per_channel(const OpCtx *ctx, int first, int last, int64_t c) {
    for (int i = first; i <= last && i < ctx->n_in; i++) {
        const NdTensor *t = ctx->in[i];
        if (!t || t->shape.rank < 0) continue;
        if (t->shape.rank != 1 || t->shape.dim[0] != c)
            return tt_fail(ctx->err, "input %d has %lld elements for %lld channels", i,
                           (long long)(t->shape.rank == 1 ? t->shape.dim[0] : t->count), (long long)c);
    }
    return TT_OK;
}

/* Output 0 like input 0, inputs 1.. float; input 0 of rank >= 2 whose
 * channels (dimension 1) match inputs first..last. */
static Status channel_infer(OpCtx *ctx, int first, int last) {
    if (Nn_inferSame(ctx) != TT_OK) return TT_ERR;
    for (int i = 1; i < ctx->n_in; i++)
        if (Op_requireType(ctx, i, NN_FLOATS) != TT_OK) return TT_ERR;
    const NdShape *xs = &ctx->in[0]->shape;
    if (xs->rank < 0) return TT_OK;
    if (xs->rank < 2) return tt_fail(ctx->err, "input of rank %d: %s takes N x C x ...", xs->rank, ctx->node->op);
    return first > last ? TT_OK : per_channel(ctx, first, last, xs->dim[1]);
}

static Status run_same(OpCtx *ctx, int n_in, Status (*infer)(OpCtx *), NnCompute fn, const void *arg) {
    if (infer(ctx) != TT_OK) return TT_ERR;
    NdShape ys = ctx->out[0].shape;
    return Nn_runViews(ctx, n_in, &ys, true, fn, arg);
}

/* ---- BatchNormalization ---- */

Status BatchNorm_check(const NetNode *node, const NetModel *model, char *err) {
    if (NetNode_attrInt(node, "training_mode", 0) != 0)
        return tt_fail(err, "attribute training_mode=1 is not supported (inference only)");
    if (NetNode_attrInt(node, "spatial", 1) != 1) return tt_fail(err, "attribute spatial=0 is not supported");
    for (int i = 1; i < node->n_out; i++)
        if (node->out[i] >= 0)
            return tt_fail(err, "output %d (a training statistic) is not supported (inference only)", i);
    return TT_OK;
}

Status BatchNorm_infer(OpCtx *ctx) { return channel_infer(ctx, 1, 4); }

/* Planes [lo, hi) of N x C. */
static void bn_planes(void *arg, int64_t lo, int64_t hi) {
    const NormJob *j = arg;
    for (int64_t p = lo; p < hi; p++) {
        int64_t ch = p % j->c;
        double a = j->scale[ch] / sqrt(j->var[ch] + j->eps), o = j->bias[ch] - j->mean[ch] * a;
        const double *xp = j->x + p * j->inner;
        double *yp = j->y + p * j->inner;
        for (int64_t i = 0; i < j->inner; i++)
            yp[i] = xp[i] * a + o;
    }
}

static bool bn_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    NormJob j = {.x = in[0], .scale = in[1], .bias = in[2], .mean = in[3], .var = in[4], .y = yv};
    int64_t n;
    j.eps = NetNode_attrFloat(ctx->node, "epsilon", 1e-5);
    Nn_axisSplit(&ctx->in[0]->shape, 1, &n, &j.c, &j.inner);
    Par_range(n * j.c, 2.0 * (double)(n * j.c * j.inner), bn_planes, &j);
    return true;
}

Status BatchNorm_run(OpCtx *ctx) { return run_same(ctx, 5, BatchNorm_infer, bn_compute, NULL); }

/* ---- InstanceNormalization ---- */

Status InstanceNorm_infer(OpCtx *ctx) { return channel_infer(ctx, 1, 2); }

static void in_planes(void *arg, int64_t lo, int64_t hi) {
    const NormJob *j = arg;
    int64_t inner = j->inner;
    for (int64_t p = lo; p < hi; p++) {
        double mean, inv;
        norm_stats(j->x + p * inner, inner, j->eps, &mean, &inv);
        double a = j->scale[p % j->c] * inv, o = j->bias[p % j->c] - mean * a;
        for (int64_t i = 0; i < inner; i++)
            j->y[p * inner + i] = j->x[p * inner + i] * a + o;
    }
}

static bool in_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    NormJob j = {.x = in[0], .scale = in[1], .bias = in[2], .y = yv};
    int64_t n;
    j.eps = NetNode_attrFloat(ctx->node, "epsilon", 1e-5);
    Nn_axisSplit(&ctx->in[0]->shape, 1, &n, &j.c, &j.inner);
    Par_range(n * j.c, NORM_COST * (double)(n * j.c * j.inner), in_planes, &j);
    return true;
}

Status InstanceNorm_run(OpCtx *ctx) { return run_same(ctx, 3, InstanceNorm_infer, in_compute, NULL); }

/* ---- GroupNormalization ---- */

Status GroupNorm_check(const NetNode *node, const NetModel *model, char *err) {
    if (!NetNode_attr(node, "num_groups") || NetNode_attrInt(node, "num_groups", 0) < 1)
        return tt_fail(err, "attribute num_groups is missing or not positive");
    return TT_OK;
}

/* scale and bias have num_groups (opset 18) or C (opset 21) elements. */
Status GroupNorm_infer(OpCtx *ctx) {
    if (channel_infer(ctx, 1, 0) != TT_OK) return TT_ERR;
    if (ctx->in[0]->shape.rank < 0 || ctx->in[1]->shape.rank < 0) return TT_OK;
    int64_t c = ctx->in[0]->shape.dim[1], g = NetNode_attrInt(ctx->node, "num_groups", 1);
    if (g < 1 || c % g)
        return tt_fail(ctx->err, "%lld channels do not split into %lld groups", (long long)c, (long long)g);
    if (ctx->in[1]->shape.rank == 1 && ctx->in[1]->shape.dim[0] == g) return per_channel(ctx, 1, 2, g);
    return per_channel(ctx, 1, 2, c);
}

/* Groups [lo, hi) of N x num_groups. */
static void gn_groups(void *arg, int64_t lo, int64_t hi) {
    const NormJob *j = arg;
    int64_t g = j->g, cg = j->cg, inner = j->inner;
    for (int64_t p = lo; p < hi; p++) {
        double mean, inv;
        norm_stats(j->x + p * cg * inner, cg * inner, j->eps, &mean, &inv);
        for (int64_t ch = 0; ch < cg; ch++) {
            int64_t k = j->per_group ? p % g : (p % g) * cg + ch, base = (p * cg + ch) * inner;
            double a = j->scale[k] * inv, o = j->bias[k] - mean * a;
            for (int64_t i = 0; i < inner; i++)
                j->y[base + i] = j->x[base + i] * a + o;
        }
    }
}

static bool gn_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    NormJob j = {.x = in[0], .scale = in[1], .bias = in[2], .y = yv};
    int64_t n;
    j.eps = NetNode_attrFloat(ctx->node, "epsilon", 1e-5);
    j.g = NetNode_attrInt(ctx->node, "num_groups", 1);
    Nn_axisSplit(&ctx->in[0]->shape, 1, &n, &j.c, &j.inner);
    j.cg = j.c / j.g;
    j.per_group = ctx->in[1]->count == j.g && j.g != j.c;
    Par_range(n * j.g, NORM_COST * (double)(n * j.c * j.inner), gn_groups, &j);
    return true;
}

Status GroupNorm_run(OpCtx *ctx) { return run_same(ctx, 3, GroupNorm_infer, gn_compute, NULL); }

/* ---- LayerNormalization ---- */

Status LayerNorm_check(const NetNode *node, const NetModel *model, char *err) {
    int64_t stash = NetNode_attrInt(node, "stash_type", 1);
    if (!NdType_isFloat((NdType)stash))
        return tt_fail(err, "attribute stash_type=%lld is not a float type", (long long)stash);
    return TT_OK;
}

/* The normalised axis, and the shape of Mean and InvStdDev (X's with the
 * normalised dimensions 1). Scale and B must broadcast to X's dimensions
 * from the axis on. */
static Status ln_setup(OpCtx *ctx, int *axis, NdShape *stat) {
    const NdShape *xs = &ctx->in[0]->shape;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", -1), xs->rank, axis, ctx->err) != TT_OK) return TT_ERR;
    NdShape norm = {.rank = xs->rank - *axis}, b;
    for (int i = *axis; i < xs->rank; i++)
        norm.dim[i - *axis] = xs->dim[i];
    for (int i = 1; i < 3 && i < ctx->n_in; i++) {
        const NdTensor *t = ctx->in[i];
        if (t && t->shape.rank >= 0 &&
            (NdShape_broadcast(&t->shape, &norm, &b, ctx->err) != TT_OK || !NdShape_equal(&b, &norm))) {
            char ts[64], ns[64];
            NdShape_str(&t->shape, ts, sizeof ts);
            NdShape_str(&norm, ns, sizeof ns);
            return tt_fail(ctx->err, "input %d of shape %s does not broadcast to the normalised %s", i, ts, ns);
        }
    }
    *stat = *xs;
    for (int i = *axis; i < xs->rank; i++)
        stat->dim[i] = 1;
    return TT_OK;
}

Status LayerNorm_infer(OpCtx *ctx) {
    if (Nn_inferSame(ctx) != TT_OK || Op_requireType(ctx, 1, NN_FLOATS) != TT_OK ||
        Op_requireType(ctx, 2, NN_FLOATS) != TT_OK)
        return TT_ERR;
    for (int i = 1; i < 3 && i < ctx->n_out; i++) {
        ctx->out[i].type = (NdType)NetNode_attrInt(ctx->node, "stash_type", 1);
        ctx->out[i].shape.rank = -1;
    }
    if (ctx->in[0]->shape.rank < 0) return TT_OK;
    int axis;
    NdShape stat;
    if (ln_setup(ctx, &axis, &stat) != TT_OK) return TT_ERR;
    for (int i = 1; i < 3 && i < ctx->n_out; i++)
        ctx->out[i].shape = stat;
    return TT_OK;
}

/* For each element of `to`, the offset of the element of s broadcast to it. */
static int64_t *bcast_map(const NdShape *s, const NdShape *to, int64_t n) {
    int64_t st[ND_MAX_RANK], *map = malloc(sizeof *map * (size_t)(n > 0 ? n : 1));
    if (!map) return NULL;
    NdShape_broadcastStrides(s, to, st);
    for (int64_t j = 0; j < n; j++) {
        int64_t rest = j, off = 0;
        for (int i = to->rank - 1; i >= 0; i--) {
            off += (rest % to->dim[i]) * st[i];
            rest /= to->dim[i];
        }
        map[j] = off;
    }
    return map;
}

/* Mean and InvStdDev, when the node asks for them. */
static Status ln_stats_alloc(OpCtx *ctx, const NdShape *stat) {
    for (int i = 1; i < 3 && i < ctx->n_out && i < ctx->node->n_out; i++)
        if (ctx->node->out[i] >= 0 &&
            NdTensor_alloc(&ctx->out[i], (NdType)NetNode_attrInt(ctx->node, "stash_type", 1), stat, ctx->err) != TT_OK)
            return TT_ERR;
    return TT_OK;
}

/* Rows [lo, hi): each normalised on its own; Mean and InvStdDev, when asked
 * for, get the row's element. */
static void ln_rows(void *arg, int64_t lo, int64_t hi) {
    const NormJob *j = arg;
    OpCtx *ctx = j->ctx;
    int64_t inner = j->inner;
    for (int64_t o = lo; o < hi; o++) {
        const double *x = j->x + o * inner;
        double *y = j->y + o * inner, mean, inv;
        norm_stats(x, inner, j->eps, &mean, &inv);
        for (int64_t k = 0; k < inner; k++)
            y[k] = (x[k] - mean) * inv * j->scale[j->ms[k]] + (j->bias ? j->bias[j->mb[k]] : 0);
        if (ctx->n_out > 1 && ctx->out[1].data) NdTensor_set(&ctx->out[1], o, mean);
        if (ctx->n_out > 2 && ctx->out[2].data) NdTensor_set(&ctx->out[2], o, inv);
    }
}

static bool ln_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    const NdShape *xs = &ctx->in[0]->shape;
    const double *bias = in[2];
    int axis;
    NdShape stat, norm = {.rank = 0};
    if (ln_setup(ctx, &axis, &stat) != TT_OK || ln_stats_alloc(ctx, &stat) != TT_OK) return false;
    for (int i = axis; i < xs->rank; i++)
        norm.dim[norm.rank++] = xs->dim[i];
    int64_t outer, len, inner;
    Nn_axisSplit(xs, axis, &outer, &len, &inner);
    inner *= len;
    int64_t *ms = bcast_map(&ctx->in[1]->shape, &norm, inner);
    int64_t *mb = bias ? bcast_map(&ctx->in[2]->shape, &norm, inner) : NULL;
    bool ok = ms && (!bias || mb);
    NormJob j = {.ctx = ctx, .x = in[0], .scale = in[1], .bias = bias, .y = yv, .inner = inner, .ms = ms, .mb = mb};
    j.eps = NetNode_attrFloat(ctx->node, "epsilon", 1e-5);
    if (ok) Par_range(outer, NORM_COST * (double)(outer * inner), ln_rows, &j);
    free(ms);
    free(mb);
    return ok;
}

Status LayerNorm_run(OpCtx *ctx) {
    Status st = run_same(ctx, 3, LayerNorm_infer, ln_compute, NULL);
    for (int i = 1; st != TT_OK && i < 3 && i < ctx->n_out; i++)
        NdTensor_free(&ctx->out[i]);
    return st;
}

/* ---- MeanVarianceNormalization ---- */

/* The offset of element i (of shape s) among the elements its reduction over
 * `axes` (a bit per dimension) keeps: the dimensions not reduced. */
static int64_t kept_at(const NdShape *s, unsigned axes, int64_t i) {
    int64_t at = 0, scale = 1;
    for (int d = s->rank - 1; d >= 0; d--) {
        int64_t idx = i % s->dim[d];
        i /= s->dim[d];
        if (!(axes >> d & 1)) {
            at += idx * scale;
            scale *= s->dim[d];
        }
    }
    return at;
}

/* y = (x - mean) / (sqrt(variance) + 1e-9) over `axes` (default 0, 2, 3). */
static bool mvn_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    const NdShape *xs = &ctx->in[0]->shape;
    int na;
    const int64_t *axes = NetNode_attrInts(ctx->node, "axes", &na);
    unsigned mask = 0;
    int64_t kept = 1, n = ctx->in[0]->count;
    for (int i = 0; i < (axes ? na : 3); i++) {
        int ax;
        if (Nd_axis(axes ? axes[i] : (int64_t[]){0, 2, 3}[i], xs->rank, &ax, ctx->err) != TT_OK) return false;
        mask |= 1u << ax;
    }
    for (int d = 0; d < xs->rank; d++)
        kept *= mask >> d & 1 ? 1 : xs->dim[d];
    double *sum = calloc((size_t)(2 * kept + 1), sizeof *sum), *sq = sum + kept, *y = yv;
    const double *x = in[0];
    if (!sum) return false;
    double per = kept ? (double)n / (double)kept : 1;
    for (int64_t i = 0; i < n; i++)
        sum[kept_at(xs, mask, i)] += x[i] / per;
    for (int64_t i = 0; i < n; i++) {
        double dv = x[i] - sum[kept_at(xs, mask, i)];
        sq[kept_at(xs, mask, i)] += dv * dv / per;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t k = kept_at(xs, mask, i);
        y[i] = (x[i] - sum[k]) / (sqrt(sq[k]) + 1e-9);
    }
    free(sum);
    return true;
}

Status Mvn_run(OpCtx *ctx) { return run_same(ctx, 1, Nn_inferSame, mvn_compute, NULL); }

/* ---- LpNormalization and LRN ---- */

Status LpNorm_check(const NetNode *node, const NetModel *model, char *err) {
    int64_t p = NetNode_attrInt(node, "p", 2);
    if (p != 1 && p != 2) return tt_fail(err, "attribute p=%lld is not supported (1 or 2)", (long long)p);
    return TT_OK;
}

/* Lines [lo, hi) of outer x inner. */
static void lpn_lines(void *arg, int64_t lo, int64_t hi) {
    const NormJob *j = arg;
    int64_t len = j->len, inner = j->inner;
    for (int64_t l = lo; l < hi; l++) {
        int64_t base = l / inner * len * inner + l % inner;
        double s = 0;
        for (int64_t k = 0; k < len; k++) {
            double v = j->x[base + k * inner];
            s += j->p == 1 ? fabs(v) : v * v;
        }
        double norm = j->p == 1 ? s : sqrt(s);
        for (int64_t k = 0; k < len; k++)
            j->y[base + k * inner] = j->x[base + k * inner] / norm;
    }
}

static bool lpn_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    NormJob j = {.x = in[0], .y = yv, .p = NetNode_attrInt(ctx->node, "p", 2)};
    int64_t outer;
    int axis;
    if (Nd_axis(NetNode_attrInt(ctx->node, "axis", -1), ctx->in[0]->shape.rank, &axis, ctx->err) != TT_OK) return false;
    Nn_axisSplit(&ctx->in[0]->shape, axis, &outer, &j.len, &j.inner);
    Par_range(outer * j.inner, 4.0 * (double)(outer * j.len * j.inner), lpn_lines, &j);
    return true;
}

Status LpNorm_run(OpCtx *ctx) { return run_same(ctx, 1, Nn_inferSame, lpn_compute, NULL); }

Status Lrn_check(const NetNode *node, const NetModel *model, char *err) {
    if (NetNode_attrInt(node, "size", 0) < 1) return tt_fail(err, "attribute size is missing or not positive");
    return TT_OK;
}

/* y = x / (bias + alpha / size * sum of x^2 over the size channels around)^beta */
static bool lrn_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    const NetNode *node = ctx->node;
    const double *x = in[0];
    double *y = yv, alpha = NetNode_attrFloat(node, "alpha", 1e-4), beta = NetNode_attrFloat(node, "beta", 0.75);
    double bias = NetNode_attrFloat(node, "bias", 1.0);
    int64_t size = NetNode_attrInt(node, "size", 1), n, c, inner;
    if (ctx->in[0]->shape.rank < 2)
        return tt_fail(ctx->err, "input of rank %d: LRN takes N x C x ...", ctx->in[0]->shape.rank) == TT_OK;
    Nn_axisSplit(&ctx->in[0]->shape, 1, &n, &c, &inner);
    int64_t before = (size - 1) / 2, after = size - 1 - before;
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t i = 0; i < inner; i++) {
                double s = 0;
                for (int64_t k = ch - before; k <= ch + after; k++)
                    if (k >= 0 && k < c) {
                        double v = x[(b * c + k) * inner + i];
                        s += v * v;
                    }
                int64_t at = (b * c + ch) * inner + i;
                y[at] = x[at] / pow(bias + alpha / (double)size * s, beta);
            }
    return true;
}

Status Lrn_run(OpCtx *ctx) { return run_same(ctx, 1, Nn_inferSame, lrn_compute, NULL); }

double Norm_flops(const OpCtx *ctx) { return 5 * Nn_count(&ctx->in[0]->shape); }
