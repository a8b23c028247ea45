/* tuner/net/ops/shape_resize.c: Resize (opsets 10 to 19) and the deprecated
 * Upsample, one code path.
 *
 * Each resized axis gets a table: for every output index, the input indices
 * it reads ("taps": 1 for nearest, 2 for linear, 4 for cubic) and their
 * weights. An output element is the sum over the product of its axes' taps,
 * so N-D linear and cubic are separable. Nearest copies bytes and works on
 * every element type. Before opset 11 (Resize 10, Upsample) the coordinate
 * mapping is asymmetric, and nearest rounds down when upsampling and up when
 * downsampling, as ONNX Runtime runs those opsets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/shape_ops.h"

/* Output dimensions beyond this are refused (a NaN or huge scale must not reach a cast). */
#define RESIZE_LIMIT ((int64_t)1 << 40)

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum { C_HALF_PIXEL, C_ASYMMETRIC, C_ALIGN_CORNERS, C_PYTORCH, C_TF_HALF_NN, C_TF_CROP, C_HALF_SYMMETRIC };
/* N_LEGACY: before opset 11, rounding down when upsampling and up when
 * downsampling (what ONNX Runtime does for those opsets). */
enum { N_ROUND_FLOOR, N_ROUND_CEIL, N_FLOOR, N_CEIL, N_LEGACY };

static const char *const MODES[] = {"nearest", "linear", "cubic", NULL};
static const char *const COORDS[] = {
    "half_pixel",           "asymmetric",         "align_corners",        "pytorch_half_pixel",
    "tf_half_pixel_for_nn", "tf_crop_and_resize", "half_pixel_symmetric", NULL};
static const char *const NEARESTS[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};

static int lookup(const char *const *names, const char *s) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], s)) return i;
    if (names == MODES && !strcmp(s, "bilinear")) /* Upsample-1's name */
        return M_LINEAR;
    return -1;
}

static bool legacy(const NetNode *n, int64_t opset) { return !strcmp(n->op, "Upsample") || opset < 11; }

Status Resize_check(const NetNode *n, const NetModel *m, char *err) {
    struct {
        const char *attr, *def;
        const char *const *names;
    } s[] = {{"mode", "nearest", MODES},
             {"coordinate_transformation_mode", "half_pixel", COORDS},
             {"nearest_mode", "round_prefer_floor", NEARESTS}};
    for (int i = 0; i < 3; i++) {
        const char *v = NetNode_attrString(n, s[i].attr, s[i].def);
        if (lookup(s[i].names, v) < 0) return tt_fail(err, "attribute %s='%s' is not supported", s[i].attr, v);
    }
    if (NetNode_attrInt(n, "antialias", 0) != 0) return tt_fail(err, "attribute antialias=1 is not supported");
    const char *keep = NetNode_attrString(n, "keep_aspect_ratio_policy", "stretch");
    if (strcmp(keep, "stretch") && strcmp(keep, "not_larger") && strcmp(keep, "not_smaller"))
        return tt_fail(err, "attribute keep_aspect_ratio_policy='%s' is not supported", keep);
    (void)m;
    return TT_OK;
}

typedef struct {
    int rank, mode, coord, nearest;
    int64_t in[ND_MAX_RANK], out[ND_MAX_RANK];
    double scale[ND_MAX_RANK], roi0[ND_MAX_RANK], roi1[ND_MAX_RANK];
} ResizePlan;

/* A float list from attribute `attr` or input i (NULL, *n 0 when neither has
 * values); *known false when the input is not constant. */
static Status float_list(OpCtx *ctx, const char *attr, int i, double **v, int *n, bool *known) {
    int na = 0;
    const double *a = attr ? NetNode_attrFloats(ctx->node, attr, &na) : NULL;
    *v = NULL;
    *n = 0;
    if (!a && (i < 0 || !Sh_has(ctx, i) || (ctx->in[i]->shape.rank >= 0 && Sh_count(&ctx->in[i]->shape) == 0)))
        return TT_OK;
    if (!a && !Sh_known(ctx, i)) {
        *known = false;
        return TT_OK;
    }
    int64_t cnt = a ? na : ctx->in[i]->count;
    *v = malloc(sizeof **v * (size_t)(cnt ? cnt : 1));
    if (!*v) return tt_fail(ctx->err, "out of memory");
    for (int64_t k = 0; k < cnt; k++)
        (*v)[k] = a ? a[k] : NdTensor_get(ctx->in[i], k);
    *n = (int)cnt;
    return TT_OK;
}

/* Output sizes and scales of the axes listed (all when naxes covers the rank). */
static Status plan_sizes(OpCtx *ctx, ResizePlan *p, const int *axes, int na, const double *scales, int ns,
                         const double *sizes, int nz) {
    if ((ns > 0) == (nz > 0)) return tt_fail(ctx->err, "exactly one of scales and sizes must be given");
    if ((ns && ns != na) || (nz && nz != na))
        return tt_fail(ctx->err, "scales or sizes have %d entries for %d axes", ns ? ns : nz, na);
    const char *keep = NetNode_attrString(ctx->node, "keep_aspect_ratio_policy", "stretch");
    double common = !strcmp(keep, "not_larger") ? INFINITY : 0;
    for (int j = 0; nz && strcmp(keep, "stretch") && j < na; j++) {
        double s = sizes[j] / (double)p->in[axes[j]];
        common = !strcmp(keep, "not_larger") ? fmin(common, s) : fmax(common, s);
    }
    for (int j = 0; j < na; j++) {
        int a = axes[j];
        if (ns) {
            p->scale[a] = scales[j];
            double o = floor((double)p->in[a] * scales[j] + 1e-9);
            p->out[a] = o >= 0 && o <= RESIZE_LIMIT ? (int64_t)o : -1;
        } else if (strcmp(keep, "stretch")) {
            p->scale[a] = common;
            double o = floor(common * (double)p->in[a] + 0.5);
            p->out[a] = o >= 0 && o <= RESIZE_LIMIT ? (int64_t)o : -1;
        } else {
            p->out[a] = sizes[j] >= 0 && sizes[j] <= RESIZE_LIMIT ? (int64_t)sizes[j] : -1;
            p->scale[a] = p->in[a] ? (double)p->out[a] / (double)p->in[a] : 1;
        }
        if (!(p->scale[a] > 0) || p->out[a] < 0 || p->out[a] > RESIZE_LIMIT)
            return tt_fail(ctx->err, "axis %d: scale %g or size %lld is not positive or too large", a, p->scale[a],
                           (long long)p->out[a]);
    }
    return TT_OK;
}

static Status resize_plan(OpCtx *ctx, ResizePlan *p, bool *known) {
    const NdShape *in = &ctx->in[0]->shape;
    bool old = legacy(ctx->node, ctx->opset);
    memset(p, 0, sizeof *p);
    p->rank = in->rank;
    p->mode = lookup(MODES, NetNode_attrString(ctx->node, "mode", "nearest"));
    p->coord = old ? C_ASYMMETRIC
                   : lookup(COORDS, NetNode_attrString(ctx->node, "coordinate_transformation_mode", "half_pixel"));
    p->nearest = old ? N_LEGACY : lookup(NEARESTS, NetNode_attrString(ctx->node, "nearest_mode", "round_prefer_floor"));
    int axes[ND_MAX_RANK], na = 0, ns = 0, nz = 0, nr = 0;
    for (int i = 0; i < in->rank; i++) {
        p->in[i] = p->out[i] = in->dim[i];
        p->scale[i] = p->roi1[i] = 1;
    }
    const int64_t *ax = NetNode_attrInts(ctx->node, "axes", &na);
    for (int j = 0; j < (ax ? na : in->rank); j++)
        if (Nd_axis(ax ? ax[j] : j, in->rank, &axes[j], ctx->err) != TT_OK) return TT_ERR;
    na = ax ? na : in->rank;
    double *scales = NULL, *sizes = NULL, *roi = NULL;
    *known = true;
    Status st = float_list(ctx, "scales", old ? 1 : 2, &scales, &ns, known);
    if (st == TT_OK) st = float_list(ctx, NULL, old ? -1 : 3, &sizes, &nz, known);
    if (st == TT_OK && p->coord == C_TF_CROP) st = float_list(ctx, NULL, 1, &roi, &nr, known);
    if (st == TT_OK && *known) st = plan_sizes(ctx, p, axes, na, scales, ns, sizes, nz);
    if (st == TT_OK && *known && p->coord == C_TF_CROP && nr != 2 * na)
        st = tt_fail(ctx->err, "tf_crop_and_resize needs a roi of %d values, got %d", 2 * na, nr);
    for (int j = 0; st == TT_OK && *known && roi && j < na; j++) {
        p->roi0[axes[j]] = roi[j];
        p->roi1[axes[j]] = roi[na + j];
    }
    free(scales);
    free(sizes);
    free(roi);
    return st;
}

Status Resize_infer(OpCtx *ctx) {
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    if (ctx->in[0]->shape.rank < 0) return TT_OK;
    ResizePlan p;
    bool known;
    if (resize_plan(ctx, &p, &known) != TT_OK) return TT_ERR;
    if (known) {
        NdShape s = {.rank = p.rank};
        memcpy(s.dim, p.out, sizeof p.out[0] * (size_t)p.rank);
        Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    }
    return TT_OK;
}

/* Where output index x of axis a falls in the input's coordinates. The
 * resized length is the scale times the input's (not the rounded output
 * size), as ONNX's reference has it when scales are given. */
static double source_coord(const ResizePlan *p, int a, int64_t x) {
    double s = p->scale[a], in = (double)p->in[a], len = s * in, xo = (double)x;
    switch (p->coord) {
    case C_ASYMMETRIC:
        return xo / s;
    case C_ALIGN_CORNERS:
        return len == 1 ? 0 : xo * (in - 1) / (len - 1);
    case C_PYTORCH:
        return len > 1 ? (xo + 0.5) / s - 0.5 : 0;
    case C_TF_HALF_NN:
        return (xo + 0.5) / s;
    case C_TF_CROP: {
        double r0 = p->roi0[a], r1 = p->roi1[a];
        return len > 1 ? r0 * (in - 1) + xo * (r1 - r0) * (in - 1) / (len - 1) : 0.5 * (r0 + r1) * (in - 1);
    }
    case C_HALF_SYMMETRIC: {
        double adj = (double)p->out[a] / len, off = in / 2 * (1 - adj);
        return off + (xo + 0.5) / s - 0.5;
    }
    default:
        return (xo + 0.5) / s - 0.5;
    }
}

static int64_t nearest_index(int mode, double x) {
    double f = floor(x), frac = x - f;
    switch (mode) {
    case N_FLOOR:
        return (int64_t)f;
    case N_CEIL:
        return (int64_t)ceil(x);
    case N_ROUND_CEIL:
        return (int64_t)(frac >= 0.5 ? f + 1 : f);
    default:
        return (int64_t)(frac > 0.5 ? f + 1 : f);
    }
}

static void cubic_weights(double t, double a, double *w) {
    double u = 1 - t;
    w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
    w[3] = ((a * (u + 1) - 5 * a) * (u + 1) + 8 * a) * (u + 1) - 4 * a;
}

/* The taps of one axis. */
typedef struct {
    int taps;
    int64_t *idx; /* out * taps */
    double *w;    /* out * taps */
    bool *outside;
} AxisTaps;

static int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

static Status axis_taps(OpCtx *ctx, const ResizePlan *p, int a, AxisTaps *t) {
    int64_t n = p->in[a], out = p->out[a];
    bool identity = n == out && p->scale[a] == 1 && p->coord != C_TF_CROP;
    t->taps = identity || p->mode == M_NEAREST ? 1 : p->mode == M_LINEAR ? 2 : 4;
    t->idx = malloc(sizeof *t->idx * (size_t)(out * t->taps + 1));
    t->w = malloc(sizeof *t->w * (size_t)(out * t->taps + 1));
    t->outside = calloc((size_t)out + 1, sizeof *t->outside);
    if (!t->idx || !t->w || !t->outside) return tt_fail(ctx->err, "out of memory");
    double ca = NetNode_attrFloat(ctx->node, "cubic_coeff_a", -0.75);
    bool exclude = NetNode_attrInt(ctx->node, "exclude_outside", 0) != 0;
    for (int64_t x = 0; x < out; x++) {
        double c = identity ? (double)x : source_coord(p, a, x), f = floor(c), w[4] = {1, 0, 0, 0}, sum = 0;
        int64_t *ix = t->idx + x * t->taps, base = (int64_t)f;
        t->outside[x] = p->coord == C_TF_CROP && (c < 0 || c > (double)(n - 1));
        if (t->taps == 1)
            ix[0] = identity
                        ? x
                        : nearest_index(p->nearest == N_LEGACY ? (p->scale[a] < 1 ? N_CEIL : N_FLOOR) : p->nearest, c);
        else if (t->taps == 2) {
            ix[0] = base, ix[1] = base + 1, w[0] = 1 - (c - f), w[1] = c - f;
        } else {
            cubic_weights(c - f, ca, w);
            for (int k = 0; k < 4; k++)
                ix[k] = base - 1 + k;
        }
        for (int k = 0; k < t->taps; k++) {
            if (exclude && t->taps == 4 && (ix[k] < 0 || ix[k] >= n)) w[k] = 0;
            sum += w[k];
        }
        for (int k = 0; k < t->taps; k++) {
            t->w[x * t->taps + k] = exclude && t->taps == 4 && sum != 0 ? w[k] / sum : w[k];
            ix[k] = clamp_index(ix[k], n);
        }
    }
    return TT_OK;
}

/* Output element with index idx: the weighted sum over the product of the axes' taps. */
static double resize_point(const NdTensor *x, const AxisTaps *t, const int64_t *idx, const int64_t *st, int r) {
    int tap[ND_MAX_RANK] = {0};
    double sum = 0;
    for (;;) {
        double w = 1;
        int64_t off = 0;
        for (int a = 0; a < r; a++) {
            int64_t k = idx[a] * t[a].taps + tap[a];
            w *= t[a].w[k];
            off += t[a].idx[k] * st[a];
        }
        if (w != 0) sum += w * NdTensor_get(x, off);
        int a = r - 1;
        for (; a >= 0 && ++tap[a] == t[a].taps; a--)
            tap[a] = 0;
        if (a < 0) return sum;
    }
}

static void resize_fill(OpCtx *ctx, const ResizePlan *p, const AxisTaps *t) {
    const NdTensor *x = ctx->in[0];
    NdTensor *y = &ctx->out[0];
    int r = p->rank;
    int64_t st[ND_MAX_RANK], idx[ND_MAX_RANK] = {0};
    Sh_strides(&x->shape, st);
    size_t es = NdType_size(x->type);
    double extrap = NetNode_attrFloat(ctx->node, "extrapolation_value", 0);
    for (int64_t o = 0; o < y->count; o++) {
        bool outside = false;
        int64_t off = 0;
        for (int a = 0; a < r; a++) {
            outside |= t[a].outside[idx[a]];
            off += t[a].idx[idx[a] * t[a].taps] * st[a];
        }
        if (outside)
            NdTensor_set(y, o, extrap);
        else if (p->mode == M_NEAREST)
            memcpy((char *)y->data + o * (int64_t)es, (const char *)x->data + off * (int64_t)es, es);
        else {
            double v = resize_point(x, t, idx, st, r);
            NdTensor_set(y, o, NdType_isFloat(y->type) ? v : nearbyint(v));
        }
        for (int a = r - 1; a >= 0 && ++idx[a] == p->out[a]; a--)
            idx[a] = 0;
    }
}

Status Resize_run(OpCtx *ctx) {
    ResizePlan p;
    bool known;
    if (Resize_infer(ctx) != TT_OK || resize_plan(ctx, &p, &known) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    if (ctx->out[0].count == 0) return TT_OK;
    if (ctx->in[0]->count == 0) return tt_fail(ctx->err, "an empty input cannot be resized to a non-empty output");
    AxisTaps t[ND_MAX_RANK];
    memset(t, 0, sizeof t);
    Status st = TT_OK;
    for (int a = 0; a < p.rank && st == TT_OK; a++)
        st = axis_taps(ctx, &p, a, &t[a]);
    if (st == TT_OK) resize_fill(ctx, &p, t);
    for (int a = 0; a < p.rank; a++) {
        free(t[a].idx);
        free(t[a].w);
        free(t[a].outside);
    }
    return st;
}

double Resize_flops(const OpCtx *ctx) {
    const char *mode = NetNode_attrString(ctx->node, "mode", "nearest");
    if (!ctx->out || ctx->n_out < 1 || ctx->out[0].shape.rank < 0 || lookup(MODES, mode) == M_NEAREST ||
        Sh_flopsIn0(ctx) == 0)
        return 0;
    int resized = 0;
    for (int i = 0; i < ctx->out[0].shape.rank && ctx->in[0]->shape.rank == ctx->out[0].shape.rank; i++)
        resized += ctx->in[0]->shape.dim[i] != ctx->out[0].shape.dim[i];
    double taps = pow(lookup(MODES, mode) == M_LINEAR ? 2 : 4, resized);
    return 2 * taps * (double)Sh_count(&ctx->out[0].shape);
}
