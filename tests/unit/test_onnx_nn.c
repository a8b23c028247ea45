/* tests/unit/test_onnx_nn.c: the nn ops (tuner/net/ops/nn*.c) against their
 * definitions: naive loops written here from ONNX's formulas (conv and conv
 * transpose as sums and scatters over every index, gemm and matmul as triple
 * loops, the norms and softmax from their equations) and values worked out by
 * hand (pools with ceil_mode, count_include_pad). Each node is built by hand
 * and goes through its op's check, infer and run; infer's shapes must agree
 * with run's. Also: the refusals, and the rate of a ResNet-sized conv. */
#include <stdint.h>
#include <time.h>

#include "base/rng.h"
#include "tests/check.h"
#include "tuner/net/model.h"
#include "tuner/net/ops/op.h"

/* ---- nodes and tensors ---- */

static NetModel M; /* owns the test's nodes and their attributes */
static char ERR[TT_ERRLEN];

static NetNode *mk(const char *op, int n_in, int n_out, int n_attrs) {
    int i = NetModel_addNode(&M, "", op, "", n_in, n_out, n_attrs);
    NetNode *n = &M.nodes[i];
    for (int k = 0; k < n_in; k++)
        n->in[k] = NetModel_addValue(&M, "in");
    for (int k = 0; k < n_out; k++)
        n->out[k] = NetModel_addValue(&M, "out");
    return n;
}

static NetAttr *slot(NetNode *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (!n->attrs[i].name) {
            n->attrs[i].name = strdup(name);
            return &n->attrs[i];
        }
    fprintf(stderr, "no attribute slot left for %s\n", name);
    abort();
}

static void a_int(NetNode *n, const char *name, int64_t v) {
    NetAttr *a = slot(n, name);
    a->kind = NATTR_INT;
    a->i = v;
}

static void a_float(NetNode *n, const char *name, double v) {
    NetAttr *a = slot(n, name);
    a->kind = NATTR_FLOAT;
    a->f = v;
}

static void a_str(NetNode *n, const char *name, const char *v) {
    NetAttr *a = slot(n, name);
    a->kind = NATTR_STRING;
    a->s = strdup(v);
}

static void a_ints(NetNode *n, const char *name, const int64_t *v, int count) {
    NetAttr *a = slot(n, name);
    a->kind = NATTR_INTS;
    a->n = count;
    a->ints = malloc(sizeof *a->ints * (size_t)count);
    memcpy(a->ints, v, sizeof *a->ints * (size_t)count);
}
#define INTS(n, name, ...)                                                                                             \
    a_ints(n, name, (const int64_t[]){__VA_ARGS__}, (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

static NdShape shp(int rank, const int64_t *d) {
    NdShape s = {.rank = rank};
    for (int i = 0; i < rank; i++)
        s.dim[i] = d[i];
    return s;
}
#define SHAPE(...) shp((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__})

/* A tensor of uniform values in [-2, 2) from a seed. */
static NdTensor rnd(NdType t, NdShape s, uint64_t seed) {
    NdTensor x = {0};
    NdTensor_alloc(&x, t, &s, ERR);
    Rng r;
    Rng_seed(&r, seed);
    for (int64_t i = 0; i < x.count; i++)
        NdTensor_set(&x, i, 4 * Rng_uniform(&r) - 2);
    return x;
}

static NdTensor vals(NdType t, NdShape s, const double *v) {
    NdTensor x = {0};
    NdTensor_alloc(&x, t, &s, ERR);
    for (int64_t i = 0; i < x.count; i++)
        NdTensor_set(&x, i, v[i]);
    return x;
}

/* The node through check, infer and run (opset given); infer's outputs must
 * match run's in type and shape. */
static Status run(NetNode *n, int64_t opset, const NdTensor **in, int n_in, NdTensor *out, int n_out) {
    const OpDef *d = Op_find("", n->op);
    ERR[0] = '\0';
    if (!d) return tt_fail(ERR, "no op %s", n->op);
    if (d->check && d->check(n, &M, ERR) != TT_OK) return TT_ERR;
    NdTensor inf[4] = {{0}};
    OpCtx c = {.model = &M, .node = n, .opset = opset, .in = in, .n_in = n_in, .out = inf, .n_out = n_out, .err = ERR};
    if (d->infer(&c) != TT_OK) return TT_ERR;
    c.out = out;
    if (d->run(&c) != TT_OK) return TT_ERR;
    for (int i = 0; i < n_out; i++)
        if (out[i].data && (!NdShape_equal(&inf[i].shape, &out[i].shape) || inf[i].type != out[i].type)) {
            fprintf(stderr, "%s output %d: infer and run disagree\n", n->op, i);
            return TT_ERR;
        }
    if (d->flops && !(d->flops(&c) >= 0)) return tt_fail(ERR, "%s: flops not a count", n->op);
    return TT_OK;
}

static void free_all(NdTensor *t, int n) {
    for (int i = 0; i < n; i++)
        NdTensor_free(&t[i]);
}

/* got against want[] within tol * (1 + |want|); prints the first miss. */
static bool near(const NdTensor *got, const double *want, int64_t n, double tol) {
    if (got->count != n) {
        fprintf(stderr, "%lld elements, %lld expected\n", (long long)got->count, (long long)n);
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        double g = NdTensor_get(got, i);
        if (!(fabs(g - want[i]) <= tol * (1 + fabs(want[i])))) {
            fprintf(stderr, "element %lld: %.9g, expected %.9g\n", (long long)i, g, want[i]);
            return false;
        }
    }
    return true;
}

static void unflat(int64_t f, const NdShape *s, int64_t *idx) {
    for (int i = s->rank - 1; i >= 0; i--) {
        idx[i] = f % s->dim[i];
        f /= s->dim[i];
    }
}

static int64_t flat(const int64_t *idx, const NdShape *s) {
    int64_t f = 0;
    for (int i = 0; i < s->rank; i++)
        f = f * s->dim[i] + idx[i];
    return f;
}

/* ---- convolution: the definition ---- */

typedef struct Geo {
    int64_t group, s[3], d[3], pb[3], pe[3], op[3];
} Geo;

/* y[n, m, o] = b[m] + sum over c of group(m), kernel k of x[n, c, o*s - pb + k*d] * w[m, c', k] */
static double *conv_ref(const NdTensor *x, const NdTensor *w, const NdTensor *b, const Geo *g, NdShape *ys) {
    int nsp = x->shape.rank - 2;
    *ys = x->shape;
    ys->dim[1] = w->shape.dim[0];
    for (int i = 0; i < nsp; i++) {
        int64_t ek = (w->shape.dim[2 + i] - 1) * g->d[i] + 1;
        ys->dim[2 + i] = (x->shape.dim[2 + i] + g->pb[i] + g->pe[i] - ek) / g->s[i] + 1;
    }
    int64_t ny;
    NdShape_count(ys, ND_F64, &ny, ERR);
    double *y = calloc((size_t)ny, sizeof *y);
    int64_t cg = w->shape.dim[1], mg = w->shape.dim[0] / g->group, yi[8] = {0}, wi[8] = {0}, xi[8] = {0};
    for (int64_t f = 0; f < ny; f++) {
        unflat(f, ys, yi);
        double acc = b ? NdTensor_get(b, yi[1]) : 0;
        for (int64_t wf = 0; wf < w->count / w->shape.dim[0]; wf++) {
            NdShape wsub = w->shape;
            wsub.dim[0] = 1;
            unflat(wf, &wsub, wi);
            wi[0] = yi[1];
            xi[0] = yi[0];
            xi[1] = (yi[1] / mg) * cg + wi[1];
            bool inside = true;
            for (int i = 0; i < nsp; i++) {
                xi[2 + i] = yi[2 + i] * g->s[i] - g->pb[i] + wi[2 + i] * g->d[i];
                inside = inside && xi[2 + i] >= 0 && xi[2 + i] < x->shape.dim[2 + i];
            }
            if (inside) acc += NdTensor_get(x, flat(xi, &x->shape)) * NdTensor_get(w, flat(wi, &w->shape));
        }
        y[f] = acc;
    }
    return y;
}

static NetNode *conv_node(const char *op, const Geo *g, int nsp, int n_in, int extra) {
    NetNode *n = mk(op, n_in, 1, 5 + extra);
    a_int(n, "group", g->group);
    a_ints(n, "strides", g->s, nsp);
    a_ints(n, "dilations", g->d, nsp);
    int64_t pads[6];
    for (int i = 0; i < nsp; i++) {
        pads[i] = g->pb[i];
        pads[nsp + i] = g->pe[i];
    }
    a_ints(n, "pads", pads, 2 * nsp);
    return n;
}

/* Conv of random x, w (and bias) against conv_ref. */
static void conv_case(NdType t, NdShape xs, NdShape ws, bool bias, const Geo *g, double tol) {
    NdTensor x = rnd(t, xs, 1), w = rnd(t, ws, 2), b = rnd(t, SHAPE(ws.dim[0]), 3), y = {0};
    NetNode *n = conv_node("Conv", g, xs.rank - 2, bias ? 3 : 2, 0);
    const NdTensor *in[3] = {&x, &w, &b};
    CHECK(run(n, 17, in, bias ? 3 : 2, &y, 1) == TT_OK);
    NdShape ys;
    double *want = conv_ref(&x, &w, bias ? &b : NULL, g, &ys);
    CHECK(NdShape_equal(&y.shape, &ys));
    CHECK(y.type == t);
    CHECK(near(&y, want, y.count, tol));
    free(want);
    NdTensor_free(&x);
    NdTensor_free(&w);
    NdTensor_free(&b);
    NdTensor_free(&y);
}

TEST(conv2d_groups_dilations_asymmetric_pads) {
    Geo g = {.group = 2, .s = {2, 1}, .d = {2, 1}, .pb = {1, 0}, .pe = {2, 1}};
    conv_case(ND_F32, SHAPE(2, 4, 7, 6), SHAPE(6, 2, 3, 2), true, &g, 1e-5);
    Geo dw = {.group = 3, .s = {1, 2}, .d = {1, 3}, .pb = {0, 2}, .pe = {1, 0}};
    conv_case(ND_F32, SHAPE(1, 3, 5, 9), SHAPE(3, 1, 3, 3), false, &dw, 1e-5);
}

TEST(conv_1d_3d_float64_float16) {
    Geo g1 = {.group = 1, .s = {3}, .d = {2}, .pb = {2}, .pe = {0}};
    conv_case(ND_F64, SHAPE(2, 3, 11), SHAPE(4, 3, 3), true, &g1, 1e-12);
    Geo g3 = {.group = 2, .s = {1, 2, 1}, .d = {1, 1, 2}, .pb = {1, 0, 1}, .pe = {0, 1, 2}};
    conv_case(ND_F64, SHAPE(1, 4, 4, 5, 6), SHAPE(2, 2, 2, 3, 2), true, &g3, 1e-12);
    Geo g2 = {.group = 1, .s = {1, 1}, .d = {1, 1}, .pb = {1, 1}, .pe = {1, 1}};
    conv_case(ND_F16, SHAPE(1, 2, 5, 5), SHAPE(3, 2, 3, 3), true, &g2, 2e-2);
}

TEST(conv_pointwise_and_banded) {
    Geo one = {.group = 1, .s = {1, 1}, .d = {1, 1}};
    conv_case(ND_F32, SHAPE(2, 16, 5, 7), SHAPE(9, 16, 1, 1), true, &one, 1e-5);
    /* 64 channels x 3x3 x 64 columns x 64 rows: more than one band of im2col */
    Geo same = {.group = 1, .s = {1, 1}, .d = {1, 1}, .pb = {1, 1}, .pe = {1, 1}};
    conv_case(ND_F32, SHAPE(1, 64, 64, 64), SHAPE(5, 64, 3, 3), false, &same, 1e-4);
}

/* auto_pad with an even kernel: SAME_UPPER puts the odd pad at the end,
 * SAME_LOWER at the beginning; VALID has none. */
static void auto_pad_case(const char *mode, int64_t pb, int64_t pe, int64_t stride) {
    NdTensor x = rnd(ND_F32, SHAPE(1, 2, 5, 6), 4), w = rnd(ND_F32, SHAPE(3, 2, 2, 2), 5), y = {0};
    NetNode *n = mk("Conv", 2, 1, 3);
    a_str(n, "auto_pad", mode);
    INTS(n, "strides", stride, stride);
    INTS(n, "kernel_shape", 2, 2);
    const NdTensor *in[2] = {&x, &w};
    CHECK(run(n, 17, in, 2, &y, 1) == TT_OK);
    Geo g = {.group = 1, .s = {stride, stride}, .d = {1, 1}, .pb = {pb, pb}, .pe = {pe, pe}};
    NdShape ys;
    double *want = conv_ref(&x, &w, NULL, &g, &ys);
    if (strcmp(mode, "VALID")) /* SAME: ceil(in / stride) */
        CHECK(ys.dim[2] == (5 + stride - 1) / stride && ys.dim[3] == (6 + stride - 1) / stride);
    CHECK(NdShape_equal(&y.shape, &ys));
    CHECK(near(&y, want, y.count, 1e-5));
    free(want);
    NdTensor_free(&x);
    NdTensor_free(&w);
    NdTensor_free(&y);
}

TEST(conv_auto_pad) {
    auto_pad_case("SAME_UPPER", 0, 1, 1);
    auto_pad_case("SAME_LOWER", 1, 0, 1);
    auto_pad_case("VALID", 0, 0, 1);
    /* stride 2: 5 rows -> 3 need one pad row at the end; 6 columns -> 3 need
     * none (a pad column at the end is never read) */
    auto_pad_case("SAME_UPPER", 0, 1, 2);
}

/* ---- conv transpose: the scatter that defines it ---- */

/* y[n, m, i*s - pb + k*d] += x[n, c, i] * w[c, m', k], m = group(c) * M' + m' */
static double *convT_ref(const NdTensor *x, const NdTensor *w, const NdTensor *b, const Geo *g, const int64_t *ysp,
                         NdShape *ys) {
    int nsp = x->shape.rank - 2;
    int64_t mg = w->shape.dim[1], cg = x->shape.dim[1] / g->group, ny, xi[8], wi[8], yi[8];
    *ys = x->shape;
    ys->dim[1] = mg * g->group;
    for (int i = 0; i < nsp; i++)
        ys->dim[2 + i] = ysp[i];
    NdShape_count(ys, ND_F64, &ny, ERR);
    double *y = calloc((size_t)ny, sizeof *y);
    for (int64_t f = 0; f < ny; f++) {
        unflat(f, ys, yi);
        y[f] = b ? NdTensor_get(b, yi[1]) : 0;
    }
    for (int64_t xf = 0; xf < x->count; xf++) {
        unflat(xf, &x->shape, xi);
        for (int64_t wf = 0; wf < w->count / w->shape.dim[0]; wf++) {
            NdShape wsub = w->shape;
            wsub.dim[0] = 1;
            unflat(wf, &wsub, wi);
            wi[0] = xi[1];
            yi[0] = xi[0];
            yi[1] = (xi[1] / cg) * mg + wi[1];
            bool inside = true;
            for (int i = 0; i < nsp; i++) {
                yi[2 + i] = xi[2 + i] * g->s[i] - g->pb[i] + wi[2 + i] * g->d[i];
                inside = inside && yi[2 + i] >= 0 && yi[2 + i] < ysp[i];
            }
            if (inside) y[flat(yi, ys)] += NdTensor_get(x, xf) * NdTensor_get(w, flat(wi, &w->shape));
        }
    }
    return y;
}

TEST(conv_transpose_groups_strides_dilations_output_padding) {
    Geo g = {.group = 2, .s = {2, 3}, .d = {1, 2}, .pb = {1, 0}, .pe = {0, 2}, .op = {1, 1}};
    NdTensor x = rnd(ND_F32, SHAPE(2, 4, 3, 4), 6), w = rnd(ND_F32, SHAPE(4, 3, 3, 3), 7);
    NdTensor b = rnd(ND_F32, SHAPE(6), 8), y = {0};
    NetNode *n = conv_node("ConvTranspose", &g, 2, 3, 1);
    INTS(n, "output_padding", 1, 1);
    const NdTensor *in[3] = {&x, &w, &b};
    CHECK(run(n, 17, in, 3, &y, 1) == TT_OK);
    /* rows: 2 * (3 - 1) + 1 + 3 - 1 - 0 = 7; columns: 3 * (4 - 1) + 1 + 5 - 0 - 2 = 13 */
    NdShape ys;
    double *want = convT_ref(&x, &w, &b, &g, (const int64_t[]){7, 13}, &ys);
    CHECK(NdShape_equal(&y.shape, &ys));
    CHECK(near(&y, want, y.count, 1e-5));
    free(want);
    NdTensor_free(&y);

    /* output_shape 1-D: 5 inputs, stride 2, kernel 3 give 11 at full size;
     * asking 12 pads -1 at the end (an extra output that only the bias reaches) */
    NdTensor x1 = rnd(ND_F64, SHAPE(1, 2, 5), 9), w1 = rnd(ND_F64, SHAPE(2, 1, 3), 10), b1 = rnd(ND_F64, SHAPE(1), 11);
    NetNode *n1 = mk("ConvTranspose", 3, 1, 2);
    INTS(n1, "strides", 2);
    INTS(n1, "output_shape", 12);
    const NdTensor *in1[3] = {&x1, &w1, &b1};
    CHECK(run(n1, 17, in1, 3, &y, 1) == TT_OK);
    Geo g1 = {.group = 1, .s = {2}, .d = {1}};
    want = convT_ref(&x1, &w1, &b1, &g1, (const int64_t[]){12}, &ys);
    CHECK(NdShape_equal(&y.shape, &ys));
    CHECK(near(&y, want, y.count, 1e-12));
    free(want);
    NdTensor xs[] = {x, w, b, y, x1, w1, b1};
    free_all(xs, 7);
}

/* A random window in spatial dimension i of g: kernel k, input size in. */
static void random_dim(Rng *r, Geo *g, int i, int64_t *k, int64_t *in) {
    *k = 1 + (int64_t)Rng_below(r, 3);
    g->s[i] = 1 + (int64_t)Rng_below(r, 3);
    g->d[i] = 1 + (int64_t)Rng_below(r, 2);
    g->pb[i] = (int64_t)Rng_below(r, 3);
    g->pe[i] = (int64_t)Rng_below(r, 3);
    g->op[i] = (int64_t)Rng_below(r, (uint64_t)g->s[i]); /* output_padding < stride */
    *in = 1 + (int64_t)Rng_below(r, 8);
    if (*in + g->pb[i] + g->pe[i] < (*k - 1) * g->d[i] + 1) *in = (*k - 1) * g->d[i] + 1;
}

/* 1-D to 3-D, groups of 1 to 3 with 1 to 6 outputs each (the direct loops
 * below 4, the GEMM above), strides, dilations, asymmetric pads. */
TEST(conv_and_conv_transpose_random_geometries) {
    Rng r;
    Rng_seed(&r, 99);
    for (int it = 0; it < 60; it++) {
        int nsp = 1 + (int)Rng_below(&r, 3);
        int64_t cg = 1 + (int64_t)Rng_below(&r, 3), mg = 1 + (int64_t)Rng_below(&r, 6), k, in, ysp[3];
        Geo g = {.group = 1 + (int64_t)Rng_below(&r, 3)};
        NdShape xs = {.rank = nsp + 2, .dim = {1 + (int64_t)Rng_below(&r, 2), g.group * cg}};
        NdShape ws = {.rank = nsp + 2, .dim = {g.group * mg, cg}}, wt = {.rank = nsp + 2, .dim = {g.group * cg, mg}};
        for (int i = 0; i < nsp; i++) {
            random_dim(&r, &g, i, &k, &in);
            xs.dim[2 + i] = in;
            ws.dim[2 + i] = wt.dim[2 + i] = k;
            ysp[i] = g.s[i] * (in - 1) + g.op[i] + (k - 1) * g.d[i] + 1 - g.pb[i] - g.pe[i];
        }
        conv_case(ND_F32, xs, ws, it % 2, &g, 1e-5);
        bool fits = true; /* the transposed output must keep at least one element */
        for (int i = 0; i < nsp; i++)
            fits = fits && ysp[i] >= 1;
        if (!fits) continue;
        NdTensor x = rnd(ND_F64, xs, 3), w = rnd(ND_F64, wt, 4), y = {0};
        NetNode *n = conv_node("ConvTranspose", &g, nsp, 2, 1);
        a_ints(n, "output_padding", g.op, nsp);
        const NdTensor *ins[2] = {&x, &w};
        CHECK(run(n, 17, ins, 2, &y, 1) == TT_OK);
        NdShape ys;
        double *want = convT_ref(&x, &w, NULL, &g, ysp, &ys);
        CHECK(NdShape_equal(&y.shape, &ys) && near(&y, want, y.count, 1e-12));
        free(want);
        NdTensor all[] = {x, w, y};
        free_all(all, 3);
    }
}

/* ---- Gemm and MatMul ---- */

TEST(gemm_transposes_alpha_beta_broadcast_c) {
    NdTensor a = rnd(ND_F32, SHAPE(7, 5), 12), b = rnd(ND_F32, SHAPE(3, 7), 13), c = rnd(ND_F32, SHAPE(3), 14);
    NdTensor y = {0}, y2 = {0};
    NetNode *n = mk("Gemm", 3, 1, 4);
    a_int(n, "transA", 1);
    a_int(n, "transB", 1);
    a_float(n, "alpha", 0.5);
    a_float(n, "beta", 2.0);
    const NdTensor *in[3] = {&a, &b, &c};
    CHECK(run(n, 13, in, 3, &y, 1) == TT_OK);
    double want[15], want2[15];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0;
            for (int k = 0; k < 7; k++)
                s += NdTensor_get(&a, k * 5 + i) * NdTensor_get(&b, j * 7 + k);
            want[i * 3 + j] = 0.5 * s + 2.0 * NdTensor_get(&c, j);
            want2[i * 3 + j] = s;
        }
    CHECK(y.shape.rank == 2 && y.shape.dim[0] == 5 && y.shape.dim[1] == 3);
    CHECK(near(&y, want, 15, 1e-5));
    NetNode *n2 = mk("Gemm", 2, 1, 2); /* no C */
    a_int(n2, "transA", 1);
    a_int(n2, "transB", 1);
    CHECK(run(n2, 13, in, 2, &y2, 1) == TT_OK);
    CHECK(near(&y2, want2, 15, 1e-5));
    NdTensor all[] = {a, b, c, y, y2};
    free_all(all, 5);
}

/* numpy's matmul by its definition, for a (.., m, k) and b (.., k, n). */
static void matmul_case(NdShape as, NdShape bs, NdShape ys_want, NdType t) {
    NdTensor a = rnd(t, as, 15), b = rnd(t, bs, 16), y = {0};
    NetNode *n = mk("MatMul", 2, 1, 0);
    const NdTensor *in[2] = {&a, &b};
    CHECK(run(n, 13, in, 2, &y, 1) == TT_OK);
    CHECK(NdShape_equal(&y.shape, &ys_want));
    NdShape a2 = as, b2 = bs; /* 1-D operands as 1 x k and k x 1 */
    if (as.rank == 1) a2 = SHAPE(1, as.dim[0]);
    if (bs.rank == 1) b2 = SHAPE(bs.dim[0], 1);
    int64_t m = a2.dim[a2.rank - 2], k = a2.dim[a2.rank - 1], nn = b2.dim[b2.rank - 1];
    NdShape ab = {.rank = a2.rank - 2}, bb = {.rank = b2.rank - 2}, ob;
    memcpy(ab.dim, a2.dim, sizeof(int64_t) * (size_t)ab.rank);
    memcpy(bb.dim, b2.dim, sizeof(int64_t) * (size_t)bb.rank);
    NdShape_broadcast(&ab, &bb, &ob, ERR);
    int64_t nb, sa[8], sb[8], oi[8];
    NdShape_count(&ob, ND_F64, &nb, ERR);
    NdShape_broadcastStrides(&ab, &ob, sa);
    NdShape_broadcastStrides(&bb, &ob, sb);
    double *want = calloc((size_t)(nb * m * nn), sizeof *want);
    for (int64_t q = 0; q < nb; q++) {
        unflat(q, &ob, oi);
        int64_t pa = 0, pb = 0;
        for (int i = 0; i < ob.rank; i++) {
            pa += oi[i] * sa[i];
            pb += oi[i] * sb[i];
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < nn; j++)
                for (int64_t l = 0; l < k; l++)
                    want[(q * m + i) * nn + j] +=
                        NdTensor_get(&a, (pa * m + i) * k + l) * NdTensor_get(&b, (pb * k + l) * nn + j);
    }
    CHECK(near(&y, want, nb * m * nn, t == ND_F64 ? 1e-12 : 1e-5));
    free(want);
    NdTensor all[] = {a, b, y};
    free_all(all, 3);
}

TEST(matmul_batched_broadcast_and_vectors) {
    matmul_case(SHAPE(2, 1, 3, 4), SHAPE(3, 4, 5), SHAPE(2, 3, 3, 5), ND_F32);
    matmul_case(SHAPE(2, 3, 9, 4), SHAPE(4, 13), SHAPE(2, 3, 9, 13), ND_F32);
    matmul_case(SHAPE(4, 6), SHAPE(3, 6, 2), SHAPE(3, 4, 2), ND_F64);
    matmul_case(SHAPE(4), SHAPE(4, 5), SHAPE(5), ND_F32);
    matmul_case(SHAPE(2, 3, 4), SHAPE(4), SHAPE(2, 3), ND_F64);
    matmul_case(SHAPE(7), SHAPE(7), (NdShape){.rank = 0}, ND_F32);
}

/* ---- pools: values by hand ---- */

static const double ONE_TO_16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

TEST(maxpool_ceil_mode_and_indices) {
    NdTensor x = vals(ND_F32, SHAPE(1, 1, 4, 4), ONE_TO_16), y[2] = {{0}}, z[2] = {{0}};
    NetNode *n = mk("MaxPool", 1, 2, 3);
    INTS(n, "kernel_shape", 3, 3);
    INTS(n, "strides", 2, 2);
    a_int(n, "ceil_mode", 1);
    const NdTensor *in[1] = {&x};
    CHECK(run(n, 12, in, 1, y, 2) == TT_OK);
    /* windows start at rows/columns 0 and 2: the second one is cut to 2 wide */
    CHECK(y[0].shape.dim[2] == 2 && y[0].shape.dim[3] == 2);
    CHECK(near(&y[0], (const double[]){11, 12, 15, 16}, 4, 0));
    CHECK(y[1].type == ND_I64);
    CHECK(near(&y[1], (const double[]){10, 11, 14, 15}, 4, 0));
    NetNode *n2 = mk("MaxPool", 1, 2, 4); /* column-major indices: w * H + h */
    INTS(n2, "kernel_shape", 3, 3);
    INTS(n2, "strides", 2, 2);
    a_int(n2, "ceil_mode", 1);
    a_int(n2, "storage_order", 1);
    CHECK(run(n2, 12, in, 1, z, 2) == TT_OK);
    CHECK(near(&z[1], (const double[]){2 * 4 + 2, 3 * 4 + 2, 2 * 4 + 3, 3 * 4 + 3}, 4, 0));
    NdTensor u8 = vals(ND_U8, SHAPE(1, 1, 4, 4), ONE_TO_16), yu = {0};
    NetNode *n3 = mk("MaxPool", 1, 1, 1); /* floor mode: one window */
    INTS(n3, "kernel_shape", 3, 3);
    const NdTensor *in3[1] = {&u8};
    CHECK(run(n3, 12, in3, 1, &yu, 1) == TT_OK);
    CHECK(yu.type == ND_U8 && near(&yu, (const double[]){11, 12, 15, 16}, 4, 0));
    NdTensor all[] = {x, y[0], y[1], z[0], z[1], u8, yu};
    free_all(all, 7);
}

TEST(averagepool_ceil_mode_and_count_include_pad) {
    NdTensor x = vals(ND_F32, SHAPE(1, 1, 4, 4), ONE_TO_16), y = {0};
    NetNode *n = mk("AveragePool", 1, 1, 3);
    INTS(n, "kernel_shape", 3, 3);
    INTS(n, "strides", 2, 2);
    a_int(n, "ceil_mode", 1);
    const NdTensor *in[1] = {&x};
    CHECK(run(n, 12, in, 1, &y, 1) == TT_OK);
    /* (1+2+3+5+6+7+9+10+11)/9, (3+4+7+8+11+12)/6, (9+10+11+13+14+15)/6, (11+12+15+16)/4 */
    CHECK(near(&y, (const double[]){6, 7.5, 12, 13.5}, 4, 1e-6));
    NdTensor_free(&y);
    NdTensor x3 = vals(ND_F64, SHAPE(1, 1, 3, 3), ONE_TO_16);
    const NdTensor *in3[1] = {&x3};
    for (int include = 0; include < 2; include++) {
        NetNode *p = mk("AveragePool", 1, 1, 4);
        INTS(p, "kernel_shape", 2, 2);
        INTS(p, "strides", 2, 2);
        INTS(p, "pads", 1, 1, 1, 1);
        a_int(p, "count_include_pad", include);
        CHECK(run(p, 12, in3, 1, &y, 1) == TT_OK);
        /* windows {1}, {2,3}, {4,7}, {5,6,8,9}: over 4 places, or over the values */
        CHECK(near(&y, include ? (const double[]){0.25, 1.25, 2.75, 7} : (const double[]){1, 2.5, 5.5, 7}, 4, 1e-12));
        NdTensor_free(&y);
    }
    NetNode *lp = mk("LpPool", 1, 1, 3);
    INTS(lp, "kernel_shape", 2, 2);
    INTS(lp, "strides", 2, 2);
    a_float(lp, "p", 2);
    CHECK(run(lp, 18, in, 1, &y, 1) == TT_OK);
    CHECK(near(&y,
               (const double[]){sqrt(1 + 4 + 25 + 36), sqrt(9 + 16 + 49 + 64), sqrt(81 + 100 + 169 + 196),
                                sqrt(121 + 144 + 225 + 256)},
               4, 1e-6));
    NdTensor all[] = {x, y, x3};
    free_all(all, 3);
}

TEST(global_pools) {
    NdTensor x = vals(ND_F32, SHAPE(1, 2, 2, 4), ONE_TO_16), y = {0}, z = {0};
    const NdTensor *in[1] = {&x};
    CHECK(run(mk("GlobalAveragePool", 1, 1, 0), 13, in, 1, &y, 1) == TT_OK);
    CHECK(NdShape_equal(&y.shape, &(NdShape){.rank = 4, .dim = {1, 2, 1, 1}}));
    CHECK(near(&y, (const double[]){4.5, 12.5}, 2, 1e-6));
    CHECK(run(mk("GlobalMaxPool", 1, 1, 0), 13, in, 1, &z, 1) == TT_OK);
    CHECK(near(&z, (const double[]){8, 16}, 2, 0));
    NdTensor all[] = {x, y, z};
    free_all(all, 3);
}

/* ---- normalizations: the equations ---- */

/* mean and 1/sqrt(var + eps) of n values at x[i * st] */
static void stats(const NdTensor *x, int64_t at, int64_t n, int64_t st, double eps, double *mean, double *inv) {
    double s = 0, v = 0;
    for (int64_t i = 0; i < n; i++)
        s += NdTensor_get(x, at + i * st);
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double d = NdTensor_get(x, at + i * st) - *mean;
        v += d * d;
    }
    *inv = 1 / sqrt(v / (double)n + eps);
}

TEST(batch_and_instance_norm) {
    NdTensor x = rnd(ND_F32, SHAPE(2, 3, 4, 5), 20), sc = rnd(ND_F32, SHAPE(3), 21), b = rnd(ND_F32, SHAPE(3), 22);
    NdTensor mean = rnd(ND_F32, SHAPE(3), 23), var = rnd(ND_F32, SHAPE(3), 24), y = {0}, z = {0};
    for (int c = 0; c < 3; c++)
        NdTensor_set(&var, c, fabs(NdTensor_get(&var, c)) + 0.1);
    NetNode *n = mk("BatchNormalization", 5, 1, 1);
    a_float(n, "epsilon", 1e-3);
    const NdTensor *in[5] = {&x, &sc, &b, &mean, &var};
    CHECK(run(n, 15, in, 5, &y, 1) == TT_OK);
    double want[120], want2[120];
    for (int64_t i = 0; i < 120; i++) {
        int c = (int)(i / 20 % 3);
        want[i] =
            (NdTensor_get(&x, i) - NdTensor_get(&mean, c)) / sqrt(NdTensor_get(&var, c) + 1e-3) * NdTensor_get(&sc, c) +
            NdTensor_get(&b, c);
    }
    CHECK(near(&y, want, 120, 1e-5));
    NetNode *in_node = mk("InstanceNormalization", 3, 1, 1);
    a_float(in_node, "epsilon", 1e-2);
    CHECK(run(in_node, 15, in, 3, &z, 1) == TT_OK);
    for (int64_t p = 0; p < 6; p++) {
        double m, inv;
        stats(&x, p * 20, 20, 1, 1e-2, &m, &inv);
        for (int64_t i = 0; i < 20; i++)
            want2[p * 20 + i] =
                (NdTensor_get(&x, p * 20 + i) - m) * inv * NdTensor_get(&sc, p % 3) + NdTensor_get(&b, p % 3);
    }
    CHECK(near(&z, want2, 120, 1e-5));
    NdTensor all[] = {x, sc, b, mean, var, y, z};
    free_all(all, 7);
}

TEST(layer_norm_axis_and_statistics) {
    NdTensor x = rnd(ND_F32, SHAPE(2, 3, 4), 25), sc = rnd(ND_F32, SHAPE(3, 4), 26), b = rnd(ND_F32, SHAPE(4), 27);
    NdTensor y[3] = {{0}};
    NetNode *n = mk("LayerNormalization", 3, 3, 2);
    a_int(n, "axis", 1);
    a_float(n, "epsilon", 1e-4);
    const NdTensor *in[3] = {&x, &sc, &b};
    CHECK(run(n, 17, in, 3, y, 3) == TT_OK);
    double want[24], wm[2], wi[2];
    for (int o = 0; o < 2; o++) {
        stats(&x, o * 12, 12, 1, 1e-4, &wm[o], &wi[o]);
        for (int j = 0; j < 12; j++)
            want[o * 12 + j] =
                (NdTensor_get(&x, o * 12 + j) - wm[o]) * wi[o] * NdTensor_get(&sc, j) + NdTensor_get(&b, j % 4);
    }
    CHECK(near(&y[0], want, 24, 1e-5));
    CHECK(NdShape_equal(&y[1].shape, &(NdShape){.rank = 3, .dim = {2, 1, 1}}));
    CHECK(y[1].type == ND_F32 && near(&y[1], wm, 2, 1e-6) && near(&y[2], wi, 2, 1e-5));
    NdTensor all[] = {x, sc, b, y[0], y[1], y[2]};
    free_all(all, 6);
}

/* scale and bias per channel (opset 21) or per group (opset 18). */
static void group_norm_case(int per) {
    NdTensor x = rnd(ND_F64, SHAPE(2, 6, 5), 28), sc = rnd(ND_F64, SHAPE(per), 29), b = rnd(ND_F64, SHAPE(per), 30);
    NdTensor y = {0};
    NetNode *n = mk("GroupNormalization", 3, 1, 2);
    a_int(n, "num_groups", 3);
    a_float(n, "epsilon", 1e-5);
    const NdTensor *in[3] = {&x, &sc, &b};
    CHECK(run(n, per == 6 ? 21 : 18, in, 3, &y, 1) == TT_OK);
    double want[60];
    for (int p = 0; p < 6; p++) { /* (n, group): 2 channels x 5 */
        double m, inv;
        stats(&x, p * 10, 10, 1, 1e-5, &m, &inv);
        for (int j = 0; j < 10; j++) {
            int k = per == 6 ? (p % 3) * 2 + j / 5 : p % 3;
            want[p * 10 + j] = (NdTensor_get(&x, p * 10 + j) - m) * inv * NdTensor_get(&sc, k) + NdTensor_get(&b, k);
        }
    }
    CHECK(near(&y, want, 60, 1e-12));
    NdTensor all[] = {x, sc, b, y};
    free_all(all, 4);
}

TEST(group_norm_per_channel_and_per_group) {
    group_norm_case(6);
    group_norm_case(3);
}

TEST(lp_normalization_and_lrn) {
    NdTensor x = rnd(ND_F32, SHAPE(2, 5, 3), 31), y = {0}, z = {0};
    const NdTensor *in[1] = {&x};
    NetNode *n = mk("LpNormalization", 1, 1, 2);
    a_int(n, "axis", 1);
    a_int(n, "p", 1);
    CHECK(run(n, 13, in, 1, &y, 1) == TT_OK);
    double want[30], want2[30];
    for (int o = 0; o < 2; o++)
        for (int i = 0; i < 3; i++) {
            double s = 0;
            for (int c = 0; c < 5; c++)
                s += fabs(NdTensor_get(&x, (o * 5 + c) * 3 + i));
            for (int c = 0; c < 5; c++)
                want[(o * 5 + c) * 3 + i] = NdTensor_get(&x, (o * 5 + c) * 3 + i) / s;
        }
    CHECK(near(&y, want, 30, 1e-5));
    NetNode *l = mk("LRN", 1, 1, 4);
    a_int(l, "size", 4); /* channels c-1 .. c+2 */
    a_float(l, "alpha", 0.3);
    a_float(l, "beta", 0.6);
    a_float(l, "bias", 2);
    CHECK(run(l, 13, in, 1, &z, 1) == TT_OK);
    for (int64_t f = 0; f < 30; f++) {
        int64_t o = f / 15, c = f / 3 % 5, i = f % 3;
        double s = 0;
        for (int64_t k = c - 1; k <= c + 2; k++)
            if (k >= 0 && k < 5) s += pow(NdTensor_get(&x, (o * 5 + k) * 3 + i), 2);
        want2[f] = NdTensor_get(&x, f) / pow(2 + 0.3 / 4 * s, 0.6);
    }
    CHECK(near(&z, want2, 30, 1e-5));
    NdTensor all[] = {x, y, z};
    free_all(all, 3);
}

TEST(mean_variance_normalization) {
    /* per channel over N, H, W: {1, 3} and {2, 6} become -1, 1 */
    NdTensor x = vals(ND_F32, SHAPE(1, 2, 1, 2), (const double[]){1, 3, 2, 6}), y = {0};
    const NdTensor *in[1] = {&x};
    CHECK(run(mk("MeanVarianceNormalization", 1, 1, 0), 13, in, 1, &y, 1) == TT_OK);
    CHECK(near(&y, (const double[]){-1, 1, -1, 1}, 4, 1e-6));
    NdTensor all[] = {x, y};
    free_all(all, 2);
}

/* ---- softmax family ---- */

TEST(softmax_coerced_before_13_single_axis_after) {
    NdTensor x = rnd(ND_F32, SHAPE(2, 3, 4), 32), y = {0}, z = {0}, h = {0};
    const NdTensor *in[1] = {&x};
    NetNode *n = mk("Softmax", 1, 1, 1);
    a_int(n, "axis", 1);
    CHECK(run(n, 11, in, 1, &y, 1) == TT_OK); /* rows of 12 */
    CHECK(run(n, 13, in, 1, &z, 1) == TT_OK); /* columns of 3 along axis 1 */
    double w11[24], w13[24];
    for (int o = 0; o < 2; o++) {
        double s = 0;
        for (int j = 0; j < 12; j++)
            s += exp(NdTensor_get(&x, o * 12 + j));
        for (int j = 0; j < 12; j++)
            w11[o * 12 + j] = exp(NdTensor_get(&x, o * 12 + j)) / s;
        for (int i = 0; i < 4; i++) {
            double t = 0;
            for (int c = 0; c < 3; c++)
                t += exp(NdTensor_get(&x, o * 12 + c * 4 + i));
            for (int c = 0; c < 3; c++)
                w13[o * 12 + c * 4 + i] = exp(NdTensor_get(&x, o * 12 + c * 4 + i)) / t;
        }
    }
    CHECK(near(&y, w11, 24, 1e-6));
    CHECK(near(&z, w13, 24, 1e-6));
    NdTensor_free(&y);
    NetNode *ls = mk("LogSoftmax", 1, 1, 0); /* default axis -1 */
    CHECK(run(ls, 13, in, 1, &y, 1) == TT_OK);
    for (int r = 0; r < 6; r++) {
        double s = 0;
        for (int j = 0; j < 4; j++)
            s += exp(NdTensor_get(&x, r * 4 + j));
        for (int j = 0; j < 4; j++)
            w13[r * 4 + j] = NdTensor_get(&x, r * 4 + j) - log(s);
    }
    CHECK(near(&y, w13, 24, 1e-5));
    NdTensor t = vals(ND_F32, SHAPE(2, 3), (const double[]){1, 3, 3, -1, -2, -3}); /* a tie: the first wins */
    const NdTensor *tin[1] = {&t};
    CHECK(run(mk("Hardmax", 1, 1, 0), 13, tin, 1, &h, 1) == TT_OK);
    CHECK(near(&h, (const double[]){0, 1, 0, 1, 0, 0}, 6, 0));
    NdTensor all[] = {x, y, z, h, t};
    free_all(all, 5);
}

/* ---- refusals: one sentence naming what is not supported ---- */

TEST(refusals) {
    NdTensor xi = rnd(ND_I32, SHAPE(1, 1, 3, 3), 33), w = rnd(ND_F32, SHAPE(1, 1, 1, 1), 34), y = {0};
    const NdTensor *in[2] = {&xi, &w};
    CHECK(run(mk("Conv", 2, 1, 0), 13, in, 2, &y, 1) == TT_ERR);
    CHECK_STR(ERR, "input 0 is int32; Conv takes float32, float16, float64");
    NetNode *bn = mk("BatchNormalization", 5, 1, 1);
    a_int(bn, "training_mode", 1);
    CHECK(Op_find("", "BatchNormalization")->check(bn, &M, ERR) == TT_ERR);
    CHECK_CONTAINS(ERR, "training_mode=1 is not supported");
    NetNode *mp = mk("MaxPool", 1, 1, 0);
    CHECK(Op_find("", "MaxPool")->check(mp, &M, ERR) == TT_ERR);
    CHECK_CONTAINS(ERR, "kernel_shape is missing");
    NdTensor x = rnd(ND_F32, SHAPE(1, 4, 3, 3), 35), w3 = rnd(ND_F32, SHAPE(2, 3, 1, 1), 36);
    const NdTensor *in2[2] = {&x, &w3};
    NetNode *g = mk("Conv", 2, 1, 1);
    a_int(g, "group", 2);
    CHECK(run(g, 13, in2, 2, &y, 1) == TT_ERR);
    CHECK_CONTAINS(ERR, "4 channels");
    NetNode *ap = mk("Conv", 2, 1, 1);
    a_str(ap, "auto_pad", "SAME");
    CHECK(run(ap, 13, in2, 2, &y, 1) == TT_ERR);
    CHECK_STR(ERR, "attribute auto_pad='SAME' is not supported");
    NdTensor all[] = {xi, w, x, w3};
    free_all(all, 4);
}

TEST(dropout_inference_identity_and_training_refused) {
    NdTensor x = rnd(ND_F32, SHAPE(3, 4), 37), r = vals(ND_F32, (NdShape){.rank = 0}, (const double[]){0.3});
    NdTensor t = vals(ND_BOOL, (NdShape){.rank = 0}, (const double[]){1}), f = {0}, y[2] = {{0}};
    NdTensor_alloc(&f, ND_BOOL, &(NdShape){.rank = 0}, ERR);
    NetNode *n = mk("Dropout", 3, 2, 0);
    const NdTensor *in[3] = {&x, &r, &f};
    CHECK(run(n, 13, in, 3, y, 2) == TT_OK);
    CHECK(y[1].type == ND_BOOL && y[1].count == 12);
    double want[12], ones[12];
    for (int i = 0; i < 12; i++) {
        want[i] = NdTensor_get(&x, i);
        ones[i] = 1;
    }
    CHECK(near(&y[0], want, 12, 0) && near(&y[1], ones, 12, 0));
    free_all(y, 2);
    in[2] = &t;
    CHECK(run(n, 13, in, 3, y, 2) == TT_ERR);
    CHECK_CONTAINS(ERR, "training_mode true with ratio 0.3 is not supported");
    M.values[n->in[2]].is_input = true; /* fed at run time: refused when bound */
    CHECK(Op_find("", "Dropout")->check(n, &M, ERR) == TT_ERR);
    CHECK_CONTAINS(ERR, "training_mode is fed at run time");
    NdTensor all[] = {x, r, t, f};
    free_all(all, 4);
}

/* ---- Einsum ---- */

static Status einsum(const char *eq, const NdTensor **in, int n_in, NdTensor *y) {
    NetNode *n = mk("Einsum", n_in, 1, 1);
    a_str(n, "equation", eq);
    return run(n, 13, in, n_in, y, 1);
}

TEST(einsum_products_diagonals_ellipsis_implicit_output) {
    NdTensor a = rnd(ND_F32, SHAPE(2, 3, 4), 42), b = rnd(ND_F32, SHAPE(2, 4, 5), 43), y = {0};
    const NdTensor *ab[2] = {&a, &b};
    CHECK(einsum("bij, bjk -> bik", ab, 2, &y) == TT_OK);
    double want[40] = {0};
    for (int q = 0; q < 2; q++)
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 5; k++)
                for (int j = 0; j < 4; j++)
                    want[(q * 3 + i) * 5 + k] +=
                        NdTensor_get(&a, (q * 3 + i) * 4 + j) * NdTensor_get(&b, (q * 4 + j) * 5 + k);
    CHECK(NdShape_equal(&y.shape, &(NdShape){.rank = 3, .dim = {2, 3, 5}}) && near(&y, want, 30, 1e-5));
    NdTensor_free(&y);
    const NdTensor *one[1] = {&a};
    CHECK(einsum("...ij->...ji", one, 1, &y) == TT_OK); /* a transpose of the last two */
    for (int q = 0; q < 2; q++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                want[(q * 4 + j) * 3 + i] = NdTensor_get(&a, (q * 3 + i) * 4 + j);
    CHECK(NdShape_equal(&y.shape, &(NdShape){.rank = 3, .dim = {2, 4, 3}}) && near(&y, want, 24, 0));
    NdTensor_free(&y);
    NdTensor sq = rnd(ND_F64, SHAPE(3, 3), 44), v = rnd(ND_F64, SHAPE(3), 45);
    const NdTensor *d[1] = {&sq}, *vv[2] = {&v, &v};
    CHECK(einsum("ii->i", d, 1, &y) == TT_OK);
    CHECK(near(&y, (const double[]){NdTensor_get(&sq, 0), NdTensor_get(&sq, 4), NdTensor_get(&sq, 8)}, 3, 0));
    NdTensor_free(&y);
    CHECK(einsum("i,i", vv, 2, &y) == TT_OK); /* implicit: no label left, a scalar */
    double dot = 0;
    for (int i = 0; i < 3; i++)
        dot += NdTensor_get(&v, i) * NdTensor_get(&v, i);
    CHECK(y.shape.rank == 0 && near(&y, &dot, 1, 1e-12));
    NdTensor_free(&y);
    CHECK(einsum("ij,j->i,j", vv, 2, &y) == TT_ERR);
    NdTensor all[] = {a, b, sq, v};
    free_all(all, 4);
}

/* ---- losses ---- */

TEST(nll_and_softmax_cross_entropy_losses) {
    NdTensor x = vals(ND_F32, SHAPE(2, 3), (const double[]){-1, -2, -3, -4, -5, -6});
    NdTensor t = vals(ND_I64, SHAPE(2), (const double[]){2, 0}), w = vals(ND_F32, SHAPE(3), (const double[]){1, 2, 3});
    NdTensor y = {0}, z = {0}, s[2] = {{0}};
    const NdTensor *in[3] = {&x, &t, &w};
    NetNode *n = mk("NegativeLogLikelihoodLoss", 3, 1, 0); /* mean over the targets' weights */
    CHECK(run(n, 13, in, 3, &y, 1) == TT_OK);
    CHECK(y.shape.rank == 0 && near(&y, (const double[]){(3.0 * 3 + 4 * 1) / (3 + 1)}, 1, 1e-6));
    NetNode *ig = mk("NegativeLogLikelihoodLoss", 3, 1, 2);
    a_int(ig, "ignore_index", 0);
    a_str(ig, "reduction", "none");
    CHECK(run(ig, 13, in, 3, &z, 1) == TT_OK);
    CHECK(NdShape_equal(&z.shape, &t.shape) && near(&z, (const double[]){9, 0}, 2, 1e-6));
    NdTensor sc = vals(ND_F64, SHAPE(1, 3), (const double[]){1, 2, 3}),
             lab = vals(ND_I32, SHAPE(1), (const double[]){2});
    const NdTensor *sin[2] = {&sc, &lab};
    NetNode *sce = mk("SoftmaxCrossEntropyLoss", 2, 2, 1);
    a_str(sce, "reduction", "sum");
    CHECK(run(sce, 13, sin, 2, s, 2) == TT_OK);
    double lse = log(exp(1) + exp(2) + exp(3));
    CHECK(near(&s[0], (const double[]){lse - 3}, 1, 1e-12));
    CHECK(near(&s[1], (const double[]){1 - lse, 2 - lse, 3 - lse}, 3, 1e-12));
    NdTensor bad = vals(ND_I64, SHAPE(2), (const double[]){3, 0});
    NdTensor_free(&y);
    in[1] = &bad;
    CHECK(run(n, 13, in, 3, &y, 1) == TT_ERR);
    CHECK_CONTAINS(ERR, "target 3 is outside the 3 classes");
    NdTensor all[] = {x, t, w, y, z, s[0], s[1], sc, lab, bad};
    free_all(all, 10);
}

/* ---- 8-bit conv and matmul ---- */

TEST(integer_and_qlinear_conv_matmul) {
    NdTensor x = vals(ND_U8, SHAPE(1, 1, 2, 2), (const double[]){1, 2, 3, 4}),
             w = vals(ND_U8, SHAPE(1, 1, 1, 1), (const double[]){3});
    NdTensor one = vals(ND_U8, (NdShape){.rank = 0}, (const double[]){1}), y = {0}, z = {0};
    const NdTensor *in[4] = {&x, &w, &one, &one};
    CHECK(run(mk("ConvInteger", 4, 1, 0), 13, in, 4, &y, 1) == TT_OK);
    CHECK(y.type == ND_I32 && near(&y, (const double[]){0, 2, 4, 6}, 4, 0));
    /* (2-1)(3-2) + (4-1)(5-2) = 10; 10 * 0.5 * 0.25 / 0.1 = 12.5 rounds to even 12; + 10 */
    NdTensor a = vals(ND_U8, SHAPE(1, 2), (const double[]){2, 4}), b = vals(ND_U8, SHAPE(2, 1), (const double[]){3, 5});
    NdTensor as = vals(ND_F32, (NdShape){.rank = 0}, (const double[]){0.5}),
             bs = vals(ND_F32, (NdShape){.rank = 0}, (const double[]){0.25});
    NdTensor bz = vals(ND_U8, (NdShape){.rank = 0}, (const double[]){2}),
             ysc = vals(ND_F32, (NdShape){.rank = 0}, (const double[]){0.1});
    NdTensor yz = vals(ND_U8, (NdShape){.rank = 0}, (const double[]){10});
    const NdTensor *q[8] = {&a, &as, &one, &b, &bs, &bz, &ysc, &yz};
    CHECK(run(mk("QLinearMatMul", 8, 1, 0), 13, q, 8, &z, 1) == TT_OK);
    CHECK(z.type == ND_U8 && near(&z, (const double[]){22}, 1, 0));
    NdTensor all[] = {x, w, one, y, z, a, b, as, bs, bz, ysc, yz};
    free_all(all, 12);
}

/* ---- recurrent ---- */

TEST(rnn_forward_and_bidirectional) {
    NdTensor x = vals(ND_F32, SHAPE(2, 1, 1), (const double[]){1, 2}),
             w = vals(ND_F32, SHAPE(1, 1, 1), (const double[]){1});
    NdTensor r = vals(ND_F32, SHAPE(1, 1, 1), (const double[]){0.5}), y[2] = {{0}}, z[2] = {{0}};
    const NdTensor *in[3] = {&x, &w, &r};
    CHECK(run(mk("RNN", 3, 2, 0), 14, in, 3, y, 2) == TT_OK); /* h_t = tanh(x_t + 0.5 h_t-1) */
    double h1 = tanh(1), h2 = tanh(2 + 0.5 * h1);
    CHECK(NdShape_equal(&y[0].shape, &(NdShape){.rank = 4, .dim = {2, 1, 1, 1}}) &&
          near(&y[0], (const double[]){h1, h2}, 2, 1e-6));
    CHECK(near(&y[1], &h2, 1, 1e-6));
    NdTensor w2 = vals(ND_F32, SHAPE(2, 1, 1), (const double[]){1, 1}),
             r2 = vals(ND_F32, SHAPE(2, 1, 1), (const double[]){0.5, 0.5});
    const NdTensor *in2[3] = {&x, &w2, &r2};
    NetNode *n = mk("RNN", 3, 2, 1);
    a_str(n, "direction", "bidirectional");
    CHECK(run(n, 14, in2, 3, z, 2) == TT_OK); /* backwards: tanh(2) at t = 1, then tanh(1 + 0.5 tanh(2)) at t = 0 */
    double b1 = tanh(2), b0 = tanh(1 + 0.5 * b1);
    CHECK(near(&z[0], (const double[]){h1, b0, h2, b1}, 4, 1e-6) && near(&z[1], (const double[]){h2, b0}, 2, 1e-6));
    NdTensor all[] = {x, w, r, y[0], y[1], z[0], z[1], w2, r2};
    free_all(all, 9);
}

/* ---- speed: a ResNet-50 3x3 conv (64 -> 64 channels, 56 x 56) ---- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine may be shared */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

TEST(conv_and_matmul_rate) {
    NdTensor x = rnd(ND_F32, SHAPE(1, 64, 56, 56), 38), w = rnd(ND_F32, SHAPE(64, 64, 3, 3), 39), y = {0};
    NetNode *n = mk("Conv", 2, 1, 1);
    INTS(n, "pads", 1, 1, 1, 1);
    const NdTensor *in[2] = {&x, &w};
    double t0 = now();
    CHECK(run(n, 13, in, 2, &y, 1) == TT_OK);
    double dt = now() - t0, flops = 2.0 * 64 * 56 * 56 * 64 * 9;
    printf("conv 64x56x56 3x3 -> 64: %.1f ms, %.2f GFLOP/s\n", dt * 1e3, flops / dt * 1e-9);
    NdTensor a = rnd(ND_F32, SHAPE(128, 768), 40), b = rnd(ND_F32, SHAPE(768, 768), 41), z = {0};
    const NdTensor *mm[2] = {&a, &b};
    t0 = now();
    CHECK(run(mk("MatMul", 2, 1, 0), 13, mm, 2, &z, 1) == TT_OK);
    dt = now() - t0;
    printf("matmul 128x768 * 768x768: %.1f ms, %.2f GFLOP/s\n", dt * 1e3, 2.0 * 128 * 768 * 768 / dt * 1e-9);
    NdTensor all[] = {x, w, y, a, b, z};
    free_all(all, 6);
}

int main(void) {
    NetModel_init(&M);
    RUN(conv2d_groups_dilations_asymmetric_pads);
    RUN(conv_1d_3d_float64_float16);
    RUN(conv_pointwise_and_banded);
    RUN(conv_auto_pad);
    RUN(conv_transpose_groups_strides_dilations_output_padding);
    RUN(conv_and_conv_transpose_random_geometries);
    RUN(gemm_transposes_alpha_beta_broadcast_c);
    RUN(matmul_batched_broadcast_and_vectors);
    RUN(maxpool_ceil_mode_and_indices);
    RUN(averagepool_ceil_mode_and_count_include_pad);
    RUN(global_pools);
    RUN(batch_and_instance_norm);
    RUN(layer_norm_axis_and_statistics);
    RUN(group_norm_per_channel_and_per_group);
    RUN(lp_normalization_and_lrn);
    RUN(mean_variance_normalization);
    RUN(softmax_coerced_before_13_single_axis_after);
    RUN(refusals);
    RUN(dropout_inference_identity_and_training_refused);
    RUN(einsum_products_diagonals_ellipsis_implicit_output);
    RUN(nll_and_softmax_cross_entropy_losses);
    RUN(integer_and_qlinear_conv_matmul);
    RUN(rnn_forward_and_bidirectional);
    RUN(conv_and_matmul_rate);
    NetModel_done(&M);
    return check_summary();
}
