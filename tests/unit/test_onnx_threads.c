/* tests/unit/test_onnx_threads.c: the untuned ops on more than one thread
 * (tuner/net/ops/par.h), in the model runtime as `run --model` and exported
 * libraries build it: with OpenMP (CMake links this test to tt_netrt_omp).
 *
 * Each op runs on shapes past the threshold (PAR_MIN_WORK), once with
 * omp_set_num_threads(1) and once with 2. Checked: the one-thread run split
 * nothing and the two-thread run split a loop (Par_teams), the outputs agree
 * bit for bit, and where it is easy they agree with a plain loop written here
 * (exactly for additions, copies and maxima; within 1e-6 for the
 * normalisations, which compute in double). Shapes are odd-sized, so that the
 * split falls inside a row of the broadcast walk and inside a box row. */
#include <stdint.h>

#include "tests/check.h"
#include "tuner/net/handoff.h"
#include "tuner/net/model.h"
#include "tuner/net/ops/op.h"
#include "tuner/net/ops/par.h"

#ifdef _OPENMP
#include <omp.h>

static NetModel M; /* owns the nodes and their attributes */
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

/* Uniform values in [-2, 2) from a seed (xorshift64*). */
static NdTensor rnd(NdType t, NdShape s, uint64_t seed) {
    NdTensor x = {0};
    NdTensor_alloc(&x, t, &s, ERR);
    uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < x.count; i++) {
        r ^= r >> 12;
        r ^= r << 25;
        r ^= r >> 27;
        NdTensor_set(&x, i, 4 * (double)((r * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0 - 2);
    }
    return x;
}

/* The node through its op's check, infer and run. */
static Status run(NetNode *n, int64_t opset, const NdTensor **in, int n_in, NdTensor *out, int n_out) {
    const OpDef *d = Op_find(n->domain, n->op);
    ERR[0] = '\0';
    if (!d) return tt_fail(ERR, "no op %s", n->op);
    if (d->check && d->check(n, &M, ERR) != TT_OK) return TT_ERR;
    OpCtx c = {.model = &M, .node = n, .opset = opset, .in = in, .n_in = n_in, .out = out, .n_out = n_out, .err = ERR};
    return d->run(&c);
}

static bool same_bits(const NdTensor *a, const NdTensor *b) {
    return a->type == b->type && NdShape_equal(&a->shape, &b->shape) && a->count == b->count &&
           (a->count == 0 || !memcmp(a->data, b->data, (size_t)a->count * NdType_size(a->type)));
}

static void free_all(NdTensor *t, int n) {
    for (int i = 0; i < n; i++)
        NdTensor_free(&t[i]);
}

/* Runs the node on one thread, then on two; out gets the two-thread outputs.
 * The two-thread run must have split a loop, the one-thread run none. */
static void twice(NetNode *n, int64_t opset, const NdTensor **in, int n_in, NdTensor *out, int n_out) {
    NdTensor one[4] = {{0}};
    omp_set_num_threads(1);
    long teams = Par_teams();
    Status s1 = run(n, opset, in, n_in, one, n_out);
    if (s1 != TT_OK) fprintf(stderr, "%s on 1 thread: %s\n", n->op, ERR);
    CHECK(s1 == TT_OK);
    CHECK_EQ_INT(Par_teams(), teams);
    omp_set_num_threads(2);
    Status s2 = run(n, opset, in, n_in, out, n_out);
    if (s2 != TT_OK) fprintf(stderr, "%s on 2 threads: %s\n", n->op, ERR);
    CHECK(s2 == TT_OK);
    CHECK(Par_teams() > teams);
    for (int i = 0; i < n_out; i++) {
        bool same = same_bits(&one[i], &out[i]);
        if (!same) fprintf(stderr, "%s output %d: 1 and 2 threads differ\n", n->op, i);
        CHECK(same);
    }
    free_all(one, n_out);
}

static const float *F(const NdTensor *t) { return t->data; }

/* ---- par.h itself ---- */

TEST(threads_follow_the_work) {
    omp_set_num_threads(2);
    CHECK_EQ_INT(Par_threads(1000, 1000), 1);                  /* small: no team */
    CHECK_EQ_INT(Par_threads(1 << 20, 1.9 * PAR_MIN_WORK), 1); /* under two threads' worth */
    CHECK_EQ_INT(Par_threads(1 << 20, 2 * PAR_MIN_WORK), 2);
    CHECK_EQ_INT(Par_threads(1, 1e9), 1); /* one item cannot split */
    omp_set_num_threads(1);
    CHECK_EQ_INT(Par_threads(1 << 20, 1e9), 1);
    omp_set_num_threads(2);
    int inner = 0;
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 0) inner = Par_threads(1 << 20, 1e9); /* inside a region: one */
    CHECK_EQ_INT(inner, 1);
}

/* ---- the elementwise engine ---- */

TEST(add_same_shape_and_per_channel_bias) {
    NetNode *n = mk("Add", 2, 1, 0);
    NdTensor a = rnd(ND_F32, SHAPE(3, 37, 41, 43), 1), b = rnd(ND_F32, SHAPE(3, 37, 41, 43), 2);
    NdTensor bias = rnd(ND_F32, SHAPE(37, 1, 1), 3), y[1] = {{0}}, z[1] = {{0}};
    const NdTensor *in[2] = {&a, &b}, *in_b[2] = {&a, &bias};
    twice(n, 14, in, 2, y, 1);
    twice(n, 14, in_b, 2, z, 1);
    int64_t bad = 0;
    for (int64_t i = 0; i < a.count && y[0].data && z[0].data; i++) {
        bad += F(&y[0])[i] != F(&a)[i] + F(&b)[i];
        bad += F(&z[0])[i] != F(&a)[i] + F(&bias)[i / (41 * 43) % 37];
    }
    CHECK_EQ_INT(bad, 0);
    free_all(y, 1);
    free_all(z, 1);
    NdTensor_free(&a);
    NdTensor_free(&b);
    NdTensor_free(&bias);
}

TEST(erf_and_where_with_broadcast) {
    NetNode *e = mk("Erf", 1, 1, 0), *w = mk("Where", 3, 1, 0);
    NdTensor x = rnd(ND_F32, SHAPE(61, 997), 4), y[1] = {{0}};
    const NdTensor *in[1] = {&x};
    twice(e, 13, in, 1, y, 1);
    int64_t bad = 0;
    for (int64_t i = 0; i < x.count && y[0].data; i++)
        bad += !(fabsf(F(&y[0])[i] - erff(F(&x)[i])) <= 1e-6f); /* fastmath.h's erf: within 3 ulps */
    CHECK_EQ_INT(bad, 0);
    NdTensor c = {0}, a = rnd(ND_F32, SHAPE(1, 13, 131, 127), 5), b = rnd(ND_F32, SHAPE(1), 6), o[1] = {{0}};
    NdShape cs = SHAPE(1, 1, 131, 127);
    NdTensor_alloc(&c, ND_BOOL, &cs, ERR);
    for (int64_t i = 0; i < c.count; i++)
        ((uint8_t *)c.data)[i] = (uint8_t)(i % 3 != 0);
    const NdTensor *win[3] = {&c, &a, &b};
    twice(w, 16, win, 3, o, 1);
    bad = 0;
    for (int64_t i = 0; i < a.count && o[0].data; i++)
        bad += F(&o[0])[i] != (i % (131 * 127) % 3 ? F(&a)[i] : F(&b)[0]);
    CHECK_EQ_INT(bad, 0);
    free_all(y, 1);
    free_all(o, 1);
    NdTensor_free(&x);
    NdTensor_free(&c);
    NdTensor_free(&a);
    NdTensor_free(&b);
}

/* float16 goes through the engine's conversion blocks; Cast through its own split. */
TEST(float16_blocks_and_cast) {
    NetNode *m = mk("Mul", 2, 1, 0), *c = mk("Cast", 1, 1, 1);
    a_int(c, "to", ND_F16);
    NdTensor a = rnd(ND_F16, SHAPE(301, 303), 7), b = rnd(ND_F16, SHAPE(303), 8), x = rnd(ND_F32, SHAPE(301, 303), 9);
    NdTensor y[1] = {{0}}, h[1] = {{0}};
    const NdTensor *in[2] = {&a, &b}, *xin[1] = {&x};
    twice(m, 14, in, 2, y, 1);
    twice(c, 19, xin, 1, h, 1);
    int64_t bad = 0;
    for (int64_t i = 0; i < x.count && h[0].data; i++)
        bad += ((const uint16_t *)h[0].data)[i] != Nd_floatToHalf(F(&x)[i]);
    CHECK_EQ_INT(bad, 0);
    free_all(y, 1);
    free_all(h, 1);
    NdTensor_free(&a);
    NdTensor_free(&b);
    NdTensor_free(&x);
}

/* ---- softmax and normalisations ---- */

/* Softmax over the last axis (the float32 path) and over axis 1 (the double path). */
TEST(softmax_rows_and_inner_axis) {
    NetNode *s = mk("Softmax", 1, 1, 0), *l = mk("LogSoftmax", 1, 1, 0), *s1 = mk("Softmax", 1, 1, 1);
    a_int(s1, "axis", 1);
    NdTensor x = rnd(ND_F32, SHAPE(12, 129, 127), 10), z = rnd(ND_F32, SHAPE(4, 300, 51), 11);
    NdTensor y[1] = {{0}}, ly[1] = {{0}}, zy[1] = {{0}};
    const NdTensor *in[1] = {&x}, *zin[1] = {&z};
    twice(s, 13, in, 1, y, 1);
    twice(l, 13, in, 1, ly, 1);
    twice(s1, 13, zin, 1, zy, 1);
    double worst = 0;
    for (int64_t r = 0; r < 12 * 129 && y[0].data && ly[0].data; r++) {
        const float *xr = F(&x) + r * 127;
        double m = xr[0], sum = 0;
        for (int k = 1; k < 127; k++)
            m = xr[k] > m ? xr[k] : m;
        for (int k = 0; k < 127; k++)
            sum += exp(xr[k] - m);
        for (int k = 0; k < 127; k++) {
            worst = fmax(worst, fabs(F(&y[0])[r * 127 + k] - exp(xr[k] - m) / sum));
            worst = fmax(worst, fabs(F(&ly[0])[r * 127 + k] - (xr[k] - m - log(sum))) / 8);
        }
    }
    CHECK(worst < 1e-6);
    free_all(y, 1);
    free_all(ly, 1);
    free_all(zy, 1);
    NdTensor_free(&x);
    NdTensor_free(&z);
}

TEST(layer_norm_rows_and_statistics) {
    NetNode *n = mk("LayerNormalization", 3, 3, 0);
    NdTensor x = rnd(ND_F32, SHAPE(3, 85, 768), 12), sc = rnd(ND_F32, SHAPE(768), 13), b = rnd(ND_F32, SHAPE(768), 14);
    NdTensor y[3] = {{0}};
    const NdTensor *in[3] = {&x, &sc, &b};
    twice(n, 17, in, 3, y, 3);
    double worst = 0;
    for (int64_t r = 0; r < 3 * 85 && y[0].data && y[2].data; r++) {
        const float *xr = F(&x) + r * 768;
        double mean = 0, var = 0;
        for (int k = 0; k < 768; k++)
            mean += xr[k] / 768.0;
        for (int k = 0; k < 768; k++)
            var += (xr[k] - mean) * (xr[k] - mean) / 768.0;
        double inv = 1 / sqrt(var + 1e-5);
        for (int k = 0; k < 768; k++)
            worst = fmax(worst, fabs(F(&y[0])[r * 768 + k] - ((xr[k] - mean) * inv * F(&sc)[k] + F(&b)[k])));
        worst = fmax(worst, fabs(F(&y[1])[r] - mean) + fabs(F(&y[2])[r] - inv) / inv);
    }
    CHECK(worst < 1e-5);
    free_all(y, 3);
    NdTensor_free(&x);
    NdTensor_free(&sc);
    NdTensor_free(&b);
}

/* Batch-, Instance- and GroupNormalization and LpNormalization: 1 against 2 threads. */
TEST(plane_norms) {
    NetNode *bn = mk("BatchNormalization", 5, 1, 0), *in_ = mk("InstanceNormalization", 3, 1, 0);
    NetNode *gn = mk("GroupNormalization", 3, 1, 1), *lp = mk("LpNormalization", 1, 1, 1);
    a_int(gn, "num_groups", 8);
    a_int(lp, "axis", 1);
    NdTensor x = rnd(ND_F32, SHAPE(2, 64, 29, 31), 15), s = rnd(ND_F32, SHAPE(64), 16), b = rnd(ND_F32, SHAPE(64), 17);
    NdTensor mean = rnd(ND_F32, SHAPE(64), 18), var = rnd(ND_F32, SHAPE(64), 19), y[1] = {{0}};
    for (int64_t i = 0; i < var.count; i++)
        ((float *)var.data)[i] = fabsf(F(&var)[i]) + 0.5f;
    const NdTensor *bin[5] = {&x, &s, &b, &mean, &var};
    twice(bn, 15, bin, 5, y, 1);
    free_all(y, 1);
    twice(in_, 6, bin, 3, y, 1);
    free_all(y, 1);
    twice(gn, 21, bin, 3, y, 1);
    free_all(y, 1);
    twice(lp, 1, bin, 1, y, 1);
    free_all(y, 1);
    NdTensor_free(&x);
    NdTensor_free(&s);
    NdTensor_free(&b);
    NdTensor_free(&mean);
    NdTensor_free(&var);
}

/* ---- pools and reductions ---- */

TEST(max_and_average_pools) {
    NetNode *mp = mk("MaxPool", 1, 1, 3), *mpi = mk("MaxPool", 1, 2, 3), *ap = mk("AveragePool", 1, 1, 3);
    NetNode *gap = mk("GlobalAveragePool", 1, 1, 0);
    NetNode *pools[3] = {mp, mpi, ap};
    for (int i = 0; i < 3; i++) {
        INTS(pools[i], "kernel_shape", 3, 3);
        INTS(pools[i], "strides", 2, 2);
        INTS(pools[i], "pads", 1, 1, 1, 1);
    }
    NdTensor x = rnd(ND_F32, SHAPE(1, 64, 57, 59), 20), y[1] = {{0}}, yi[2] = {{0}}, ya[1] = {{0}}, g[1] = {{0}};
    const NdTensor *in[1] = {&x};
    twice(mp, 12, in, 1, y, 1);
    twice(mpi, 12, in, 1, yi, 2);
    twice(ap, 19, in, 1, ya, 1);
    twice(gap, 1, in, 1, g, 1);
    int64_t bad = 0, o = 0;
    for (int64_t c = 0; c < 64 && y[0].data; c++)
        for (int64_t oh = 0; oh < 29; oh++)
            for (int64_t ow = 0; ow < 30; ow++, o++) {
                float m = -INFINITY;
                for (int64_t i = oh * 2 - 1; i <= oh * 2 + 1; i++)
                    for (int64_t j = ow * 2 - 1; j <= ow * 2 + 1; j++)
                        if (i >= 0 && i < 57 && j >= 0 && j < 59) m = fmaxf(m, F(&x)[(c * 57 + i) * 59 + j]);
                bad += F(&y[0])[o] != m || F(&yi[0])[o] != m;
            }
    CHECK_EQ_INT(bad, 0);
    int64_t bad_mean = 0; /* the global mean of each plane, against a plain double sum */
    for (int64_t c = 0; c < 64 && g[0].data; c++) {
        double sum = 0;
        for (int64_t i = 0; i < 57 * 59; i++)
            sum += F(&x)[c * 57 * 59 + i];
        bad_mean += !(fabs(F(&g[0])[c] - sum / (57 * 59)) <= 1e-6 * fabs(sum / (57 * 59)) + 1e-12);
    }
    CHECK_EQ_INT(bad_mean, 0);
    free_all(y, 1);
    free_all(yi, 2);
    free_all(ya, 1);
    free_all(g, 1);
    NdTensor_free(&x);
}

TEST(reductions_over_slabs) {
    NetNode *mean = mk("ReduceMean", 1, 1, 1), *sum = mk("ReduceSum", 2, 1, 0), *lse = mk("ReduceLogSumExp", 1, 1, 1);
    NetNode *am = mk("ArgMax", 1, 1, 1);
    INTS(mean, "axes", -1);
    INTS(lse, "axes", 2, 3);
    a_int(am, "axis", 1);
    NdTensor x = rnd(ND_F32, SHAPE(4, 64, 31, 33), 21), axes = {0}, y[1] = {{0}}, s[1] = {{0}}, l[1] = {{0}};
    NdTensor a[1] = {{0}};
    NdShape as = SHAPE(2);
    NdTensor_alloc(&axes, ND_I64, &as, ERR);
    ((int64_t *)axes.data)[0] = 1;
    ((int64_t *)axes.data)[1] = 3;
    const NdTensor *in[1] = {&x}, *sin[2] = {&x, &axes};
    twice(mean, 13, in, 1, y, 1);
    twice(sum, 13, sin, 2, s, 1);
    twice(lse, 13, in, 1, l, 1);
    twice(am, 13, in, 1, a, 1);
    double worst = 0;
    for (int64_t r = 0; r < 4 * 64 * 31 && y[0].data; r++) {
        double m = 0;
        for (int k = 0; k < 33; k++)
            m += F(&x)[r * 33 + k];
        worst = fmax(worst, fabs(F(&y[0])[r] - m / 33));
    }
    CHECK(worst < 1e-6);
    int64_t bad = 0;
    for (int64_t b = 0; b < 4 && a[0].data; b++)
        for (int64_t i = 0; i < 31 * 33; i++) {
            int64_t best = 0;
            for (int64_t c = 1; c < 64; c++)
                best = F(&x)[(b * 64 + c) * 31 * 33 + i] > F(&x)[(b * 64 + best) * 31 * 33 + i] ? c : best;
            bad += ((const int64_t *)a[0].data)[b * 31 * 33 + i] != best;
        }
    CHECK_EQ_INT(bad, 0);
    free_all(y, 1);
    free_all(s, 1);
    free_all(l, 1);
    free_all(a, 1);
    NdTensor_free(&x);
    NdTensor_free(&axes);
}

/* A reduction over the first axis is one slab: at two threads it must not
 * split (the threads would add into the same sums), and its sums keep the
 * input's order, so a double sum in that order here gives the same bits. */
TEST(reduction_over_the_first_axis_stays_whole) {
    NetNode *sum = mk("ReduceSum", 2, 1, 0);
    NdTensor x = rnd(ND_F32, SHAPE(5, 64, 31, 33), 23), axes = {0}, y[1] = {{0}};
    NdShape as = SHAPE(2);
    NdTensor_alloc(&axes, ND_I64, &as, ERR);
    ((int64_t *)axes.data)[0] = 0;
    ((int64_t *)axes.data)[1] = 2;
    const NdTensor *in[2] = {&x, &axes};
    omp_set_num_threads(2);
    long teams = Par_teams();
    CHECK(run(sum, 13, in, 2, y, 1) == TT_OK);
    CHECK_EQ_INT(Par_teams(), teams);
    double *acc = calloc(64 * 33, sizeof *acc);
    for (int64_t i = 0; i < x.count; i++)
        acc[i / (31 * 33) % 64 * 33 + i % 33] += F(&x)[i];
    int64_t bad = 0;
    for (int64_t o = 0; o < 64 * 33 && y[0].data; o++)
        bad += F(&y[0])[o] != (float)acc[o];
    CHECK_EQ_INT(bad, 0);
    free(acc);
    free_all(y, 1);
    NdTensor_free(&x);
    NdTensor_free(&axes);
}

/* ---- data movement ---- */

TEST(transpose_concat_gather_reshape) {
    NetNode *t = mk("Transpose", 1, 1, 1), *c = mk("Concat", 3, 1, 1), *g = mk("Gather", 2, 1, 1);
    NetNode *r = mk("Reshape", 2, 1, 0);
    INTS(t, "perm", 0, 2, 1, 3);
    a_int(c, "axis", 1);
    a_int(g, "axis", 1);
    NdTensor x = rnd(ND_F32, SHAPE(1, 129, 12, 65), 22), y[1] = {{0}}, cy[1] = {{0}}, gy[1] = {{0}}, ry[1] = {{0}};
    NdTensor ids = {0}, shape = {0};
    NdShape is = SHAPE(131), ss = SHAPE(2);
    NdTensor_alloc(&ids, ND_I64, &is, ERR);
    NdTensor_alloc(&shape, ND_I64, &ss, ERR);
    for (int64_t i = 0; i < ids.count; i++)
        ((int64_t *)ids.data)[i] = (i * 37) % 129 - (i % 2 ? 129 : 0); /* negative ones count from the end */
    ((int64_t *)shape.data)[0] = 65;
    ((int64_t *)shape.data)[1] = -1;
    const NdTensor *in[1] = {&x}, *cin[3] = {&x, &x, &x}, *gin[2] = {&x, &ids}, *rin[2] = {&x, &shape};
    twice(t, 13, in, 1, y, 1);
    twice(c, 13, cin, 3, cy, 1);
    twice(g, 13, gin, 2, gy, 1);
    twice(r, 14, rin, 2, ry, 1);
    int64_t bad = 0;
    for (int64_t a = 0; a < 129 && y[0].data && cy[0].data; a++)
        for (int64_t h = 0; h < 12; h++)
            for (int64_t k = 0; k < 65; k++) {
                float v = F(&x)[(a * 12 + h) * 65 + k];
                bad += F(&y[0])[(h * 129 + a) * 65 + k] != v;
                bad += F(&cy[0])[((258 + a) * 12 + h) * 65 + k] != v;
            }
    for (int64_t i = 0; i < 131 && gy[0].data; i++)
        bad += memcmp(F(&gy[0]) + i * 12 * 65, F(&x) + (i * 37) % 129 * 12 * 65, 12 * 65 * sizeof(float)) != 0;
    CHECK_EQ_INT(bad, 0);
    CHECK(ry[0].data && !memcmp(ry[0].data, x.data, (size_t)x.count * sizeof(float)));
    free_all(y, 1);
    free_all(cy, 1);
    free_all(gy, 1);
    free_all(ry, 1);
    NdTensor_free(&x);
    NdTensor_free(&ids);
    NdTensor_free(&shape);
}

/* A fused chain (op tunetop.Elementwise: SiLU, x * sigmoid(x)) splits by blocks. */
TEST(fused_chain_blocks) {
    NetNode *f = mk("Elementwise", 1, 1, 2);
    free(f->domain);
    f->domain = strdup("tunetop");
    NetAttr *ops = slot(f, "ops");
    ops->kind = NATTR_STRINGS;
    ops->n = 2;
    ops->strings = malloc(2 * sizeof(char *));
    ops->strings[0] = strdup("Sigmoid");
    ops->strings[1] = strdup("Mul");
    INTS(f, "args", 0, -1, -1, 0, 1, -1); /* Sigmoid(x); Mul(x, step 0) */
    NdTensor x = rnd(ND_F32, SHAPE(61, 997), 9), y[1] = {{0}};
    const NdTensor *in[1] = {&x};
    twice(f, 17, in, 1, y, 1);
    int64_t bad = 0;
    for (int64_t i = 0; i < x.count && y[0].data; i++)
        bad += !(fabsf(F(&y[0])[i] - F(&x)[i] / (1 + expf(-F(&x)[i]))) <= 1e-6f);
    CHECK_EQ_INT(bad, 0);
    free_all(y, 1);
    NdTensor_free(&x);
}

/* A blocked handoff's copy (handoff.h) splits by rows: channel blocks 16 -> 8 (lane runs) and 8 -> 8 (memcpy). */
TEST(reblock_rows) {
    for (int same = 0; same < 2; same++) {
        HoLayout s = {1, 48, 56, 57, same ? 8 : 16, 56, 57, 0, 0, 1}, d = {1, 48, 56, 57, 8, 58, 59, 1, 1, 1};
        int64_t ns = HoLayout_floats(&s), nd = HoLayout_floats(&d);
        float *src = malloc(sizeof(float) * (size_t)ns), *one = calloc((size_t)nd, sizeof(float)),
              *two = calloc((size_t)nd, sizeof(float));
        for (int64_t i = 0; i < ns; i++)
            src[i] = (float)i;
        omp_set_num_threads(1);
        long teams = Par_teams();
        Ho_reblock(src, &s, one, &d);
        CHECK_EQ_INT(Par_teams(), teams);
        omp_set_num_threads(2);
        Ho_reblock(src, &s, two, &d);
        CHECK(Par_teams() > teams);
        CHECK(memcmp(one, two, sizeof(float) * (size_t)nd) == 0);
        CHECK(one[((0 * 58 + 1) * 59 + 1) * 8 + 0] == src[0]); /* (0, 0, 0, 0): past d's border */
        free(src), free(one), free(two);
    }
}

int main(void) {
    omp_set_dynamic(0);
    if (omp_get_thread_limit() < 2) return check_skip("openmp", "OMP_THREAD_LIMIT allows one thread");
    NetModel_init(&M);
    RUN(threads_follow_the_work);
    RUN(add_same_shape_and_per_channel_bias);
    RUN(erf_and_where_with_broadcast);
    RUN(float16_blocks_and_cast);
    RUN(softmax_rows_and_inner_axis);
    RUN(layer_norm_rows_and_statistics);
    RUN(plane_norms);
    RUN(max_and_average_pools);
    RUN(reductions_over_slabs);
    RUN(reduction_over_the_first_axis_stays_whole);
    RUN(transpose_concat_gather_reshape);
    RUN(fused_chain_blocks);
    RUN(reblock_rows);
    NetModel_done(&M);
    return check_summary();
}

#else

int main(void) { return check_skip("openmp", "this compiler has no OpenMP: the op library runs on one thread"); }

#endif
