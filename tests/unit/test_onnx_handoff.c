/* tests/unit/test_onnx_handoff.c: the blocked handoffs of a model program
 * (tuner/net/handoff.h). Ho_reblock against the layouts' own definition on
 * random pairs of layouts (channel blocks, padding, a depthwise multiplier,
 * dense on either side), with sentinels in every padding position; and
 * HoPlan_make on small graphs of kernel nodes: what is handed on, what must
 * stay dense and why; Ho_runChain of a lone op in place, Ho_runPool and
 * Ho_runScale of a squeeze-excitation block. */
#include <math.h>

#include "base/rng.h"
#include "tests/check.h"
#include "tuner/net/handoff.h"

/* ---- Ho_reblock ---- */

#define SENTINEL -777.0f

/* The float index of (n, c, y, x) in layout l: c is a blocked channel (< l->c). */
static int64_t at(const HoLayout *l, int64_t n, int64_t c, int64_t y, int64_t x) {
    int64_t blocks = (l->c + l->cb - 1) / l->cb;
    return (((n * blocks + c / l->cb) * l->h_alloc + y + l->top) * l->w_alloc + x + l->left) * l->cb + c % l->cb;
}

static float value(int64_t n, int64_t c, int64_t y, int64_t x) { return (float)(((n * 97 + c) * 31 + y) * 37 + x); }

static HoLayout random_layout(Rng *r, int64_t n, int64_t c, int64_t h, int64_t w, int64_t repeat) {
    static const int64_t CB[] = {1, 2, 4, 8, 16, 24};
    HoLayout l = {.n = n, .c = c * repeat, .h = h, .w = w, .cb = CB[Rng_below(r, 6)], .repeat = repeat};
    l.top = (int64_t)Rng_below(r, 3), l.left = (int64_t)Rng_below(r, 3);
    l.h_alloc = h + l.top + (int64_t)Rng_below(r, 3), l.w_alloc = w + l.left + (int64_t)Rng_below(r, 4);
    return l;
}

/* One pair: every interior element right, every other float of d still its sentinel. */
static bool reblock_case(const HoLayout *s, const HoLayout *d) {
    int64_t ns = HoLayout_floats(s), nd = HoLayout_floats(d);
    float *src = malloc(sizeof(float) * (size_t)ns), *dst = malloc(sizeof(float) * (size_t)nd);
    char *interior = calloc((size_t)nd, 1);
    for (int64_t i = 0; i < ns; i++)
        src[i] = SENTINEL * 2; /* s's padding: never copied */
    for (int64_t i = 0; i < nd; i++)
        dst[i] = SENTINEL;
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t c = 0; c < s->c; c++)
            for (int64_t y = 0; y < s->h; y++)
                for (int64_t x = 0; x < s->w; x++)
                    src[at(s, n, c, y, x)] = value(n, c, y, x);
    Ho_reblock(src, s, dst, d);
    bool ok = true;
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t c = 0; c < d->c; c++)
            for (int64_t y = 0; y < d->h; y++)
                for (int64_t x = 0; x < d->w; x++) {
                    int64_t i = at(d, n, c, y, x);
                    interior[i] = 1;
                    ok = ok && dst[i] == value(n, c / d->repeat, y, x);
                }
    for (int64_t i = 0; i < nd; i++)
        ok = ok && (interior[i] || dst[i] == SENTINEL);
    free(src);
    free(dst);
    free(interior);
    return ok;
}

TEST(reblock_random_layouts) {
    Rng r;
    Rng_seed(&r, 11);
    int bad = 0, cases = 400, same_blocks = 0;
    for (int i = 0; i < cases; i++) {
        int64_t n = 1 + (int64_t)Rng_below(&r, 2), c = 1 + (int64_t)Rng_below(&r, 40);
        int64_t h = 1 + (int64_t)Rng_below(&r, 6), w = 1 + (int64_t)Rng_below(&r, 9);
        HoLayout s = random_layout(&r, n, c, h, w, 1), d = random_layout(&r, n, c, h, w, 1 + (i % 5 == 0));
        if (i % 7 == 0) s = HoLayout_dense(n, c, h, w);
        if (i % 3 == 0) d.cb = s.cb; /* the memcpy rows when c is a multiple */
        same_blocks += s.cb == d.cb && d.repeat == 1 && d.c % d.cb == 0;
        CHECK(HoLayout_same(&s, &d));
        if (!reblock_case(&s, &d) && bad++ < 5)
            fprintf(stderr, "  s cb %lld c %lld, d cb %lld c %lld repeat %lld: wrong\n", (long long)s.cb,
                    (long long)s.c, (long long)d.cb, (long long)d.c, (long long)d.repeat);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(same_blocks > 20); /* both paths ran */
}

TEST(layouts_of_other_tensors_are_not_the_same) {
    HoLayout a = HoLayout_dense(1, 16, 8, 8), b = a;
    CHECK(HoLayout_same(&a, &b));
    b.h = 9;
    CHECK(!HoLayout_same(&a, &b));
    b = a, b.c = 32, b.repeat = 2; /* a depthwise multiplier of 2 reads 16 channels */
    CHECK(HoLayout_same(&a, &b));
    CHECK(!HoLayout_same(&b, &a)); /* a repeated layout is no source */
    HoLayout none = {0};
    CHECK(!HoLayout_same(&none, &a));
    CHECK(!HoLayout_same(&a, &none));
}

/* ---- HoPlan_make ---- */

static int val(NetModel *m, const char *name) {
    int v = NetModel_find(m, name);
    if (v >= 0) return v;
    v = NetModel_addValue(m, name);
    m->values[v].type = ND_F32;
    m->values[v].shape = (NdShape){.rank = 4, .dim = {1, 8, 4, 4}};
    return v;
}

/* A node op(in...) -> y, domain tunetop for Kernel and Elementwise; NULL ends the inputs, "" omits one. */
static int node(NetModel *m, const char *op, const char *y, const char *a, const char *b, const char *c,
                const char *d) {
    const char *in[4] = {a, b, c, d};
    int n_in = 0;
    while (n_in < 4 && in[n_in])
        n_in++;
    bool ours = !strcmp(op, "Kernel") || !strcmp(op, "Elementwise");
    int i = NetModel_addNode(m, y, op, ours ? "tunetop" : "", n_in, 1, 0);
    for (int k = 0; k < n_in; k++)
        m->nodes[i].in[k] = in[k][0] ? val(m, in[k]) : -1;
    m->nodes[i].out[0] = val(m, y);
    return i;
}

static void scalar(NetModel *m, const char *name) {
    int v = val(m, name);
    m->values[v].is_const = true;
    m->values[v].shape = (NdShape){.rank = 0};
}

static void output(NetModel *m, const char *name) {
    m->outputs = realloc(m->outputs, sizeof *m->outputs * (size_t)(m->n_outputs + 1));
    m->outputs[m->n_outputs++] = val(m, name);
}

/* Every Kernel node blocked on both sides over the values' 1x8x4x4, channel blocks 8 in and 4 out. */
static HoKernel *kernels_of(const NetModel *m) {
    HoKernel *k = calloc((size_t)m->n_nodes + 1, sizeof *k);
    for (int i = 0; i < m->n_nodes; i++)
        if (!strcmp(m->nodes[i].op, "Kernel"))
            k[i] = (HoKernel){.is_kernel = true,
                              .res_buffer = true,
                              .in = {1, 8, 4, 4, 8, 6, 6, 1, 1, 1},
                              .out = {1, 8, 4, 4, 4, 4, 4, 0, 0, 1}};
    return k;
}

/* The node that computes value name (after sorting: the nodes' places change). */
static int producer(NetModel *m, const char *name) { return m->values[val(m, name)].producer; }

/* x the graph's input, w a constant (the kernels' weights), then ordered. */
static bool sorted(NetModel *m) {
    char err[TT_ERRLEN] = "";
    m->values[val(m, "x")].is_input = true;
    m->values[val(m, "w")].is_const = true;
    if (NetModel_sort(m, err) == TT_OK) return true;
    fprintf(stderr, "  sort: %s\n", err);
    return false;
}

/* x -> K0 -> a -> K1 -> b -> SiLU-like chain (b * 0.5) -> c -> K2 (residual a) -> y (output) */
TEST(plan_hands_on_through_a_chain_and_a_residual) {
    NetModel m;
    NetModel_init(&m);
    scalar(&m, "half");
    int k0 = node(&m, "Kernel", "a", "x", "w", "", NULL);
    int k1 = node(&m, "Kernel", "b", "a", "w", "", NULL);
    int e = node(&m, "Elementwise", "c", "b", "half", NULL, NULL);
    int k2 = node(&m, "Kernel", "y", "c", "w", "", "a");
    output(&m, "y");
    CHECK(sorted(&m));
    HoKernel *k = kernels_of(&m);
    HoPlan p;
    HoPlan_make(&m, k, &p);
    CHECK_EQ_INT(p.data_from[k0], -1); /* x is a graph input */
    CHECK_EQ_INT(p.data_from[k1], k0);
    CHECK_EQ_INT(p.data_from[k2], k1); /* through the chain, in place on K1's output */
    CHECK_EQ_INT(p.on[e], k1);
    CHECK_EQ_INT(p.res_from[k2], k0); /* a: K2's residual, blocked too */
    CHECK(p.skip_unpack[k0] && p.skip_unpack[k1]);
    CHECK(!p.skip_unpack[k2]); /* the graph's output */
    CHECK_EQ_INT(p.n_handoffs, 2);
    HoPlan_done(&p);
    free(k);
    NetModel_done(&m);
}

/* What keeps a tensor dense: another op reads it, a chain with a tensor operand, a kernel that
 * reads its inputs dense, layouts of different tensors. */
TEST(plan_keeps_dense_what_a_dense_reader_needs) {
    NetModel m;
    NetModel_init(&m);
    int k0 = node(&m, "Kernel", "a", "x", "w", "", NULL);
    int relu = node(&m, "Relu", "r", "a", NULL, NULL, NULL);
    int k1 = node(&m, "Kernel", "b", "a", "w", "", NULL);       /* takes a blocked; Relu still needs it dense */
    int e = node(&m, "Elementwise", "c", "b", "r", NULL, NULL); /* r is a tensor: not in place */
    int k2 = node(&m, "Kernel", "d", "c", "w", "", NULL);
    int k3 = node(&m, "Kernel", "f", "d", "w", "", NULL); /* reads its inputs dense */
    int k4 = node(&m, "Kernel", "g", "f", "w", "", NULL); /* another tensor's layout */
    output(&m, "g");
    CHECK(sorted(&m));
    HoKernel *k = kernels_of(&m);
    k[k3].reads_inputs = true;
    k[k4].in.h = 5;
    HoPlan p;
    HoPlan_make(&m, k, &p);
    CHECK_EQ_INT(p.data_from[k1], k0);
    CHECK(!p.skip_unpack[k0]);
    CHECK_EQ_INT(p.data_from[k2], -1);
    CHECK_EQ_INT(p.on[e], -1);
    CHECK_EQ_INT(p.data_from[k3], -1);
    CHECK_EQ_INT(p.data_from[k4], -1);
    for (int i = 0; i < m.n_nodes; i++)
        CHECK(!p.skip_unpack[i]);
    CHECK_EQ_INT(p.n_handoffs, 0);
    CHECK_EQ_INT(p.data_from[relu], -1);
    HoPlan_done(&p);
    free(k);
    NetModel_done(&m);
}

/* A lone pointwise op read by two kernels, one as data and one as residual: in place on K0's output,
 * both take it blocked. */
TEST(plan_runs_a_lone_op_in_place_for_two_readers) {
    NetModel m;
    NetModel_init(&m);
    int k0 = node(&m, "Kernel", "a", "x", "w", "", NULL);
    int sig = node(&m, "Sigmoid", "s", "a", NULL, NULL, NULL);
    int k1 = node(&m, "Kernel", "b", "s", "w", "", NULL);
    int k2 = node(&m, "Kernel", "y", "b", "w", "", "s");
    output(&m, "y");
    CHECK(sorted(&m));
    HoKernel *k = kernels_of(&m);
    HoPlan p;
    HoPlan_make(&m, k, &p);
    CHECK_EQ_INT(p.on[sig], k0);
    CHECK_EQ_INT(p.data_from[k1], k0);
    CHECK_EQ_INT(p.data_from[k2], k1);
    CHECK_EQ_INT(p.res_from[k2], k0);
    CHECK(p.skip_unpack[k0] && p.skip_unpack[k1] && !p.skip_unpack[k2]);
    CHECK_EQ_INT(p.n_handoffs, 2);
    HoPlan_done(&p);
    free(k);
    NetModel_done(&m);
}

/* A chain one of whose readers needs the dense result cannot run in place, and takes back the handoffs
 * that relied on it: K2's data (through s1), then K2's residual (a residual goes only beside the data),
 * and with it the second chain, whose other reader K3 must then pack s2 from the dense tensor. */
TEST(plan_withdraws_chains_a_dense_reader_needs) {
    NetModel m;
    NetModel_init(&m);
    int k0 = node(&m, "Kernel", "a", "x", "w", "", NULL);
    int q1 = node(&m, "Sigmoid", "s1", "a", NULL, NULL, NULL);
    node(&m, "Relu", "r", "s1", NULL, NULL, NULL); /* reads s1 dense */
    int k1 = node(&m, "Kernel", "b", "x", "w", "", NULL);
    int q2 = node(&m, "Tanh", "s2", "b", NULL, NULL, NULL);
    int k2 = node(&m, "Kernel", "y", "s1", "w", "", "s2");
    int k3 = node(&m, "Kernel", "z", "s2", "w", "", NULL);
    output(&m, "y");
    output(&m, "z");
    output(&m, "r");
    CHECK(sorted(&m));
    HoKernel *k = kernels_of(&m);
    HoPlan p;
    HoPlan_make(&m, k, &p);
    CHECK_EQ_INT(p.on[q1], -1);
    CHECK_EQ_INT(p.on[q2], -1);
    CHECK_EQ_INT(p.data_from[k2], -1);
    CHECK_EQ_INT(p.res_from[k2], -1);
    CHECK_EQ_INT(p.data_from[k3], -1);
    CHECK(!p.skip_unpack[k0] && !p.skip_unpack[k1]);
    CHECK_EQ_INT(p.n_handoffs, 0);
    HoPlan_done(&p);
    free(k);
    NetModel_done(&m);
}

TEST(one_layout_only_without_padding) {
    HoLayout a = {1, 16, 7, 7, 8, 7, 7, 0, 0, 1}, b = a;
    CHECK(HoLayout_one(&a, &b));
    b.cb = 16;
    CHECK(!HoLayout_one(&a, &b)); /* same tensor, other blocks */
    b = a, b.w_alloc = 8;
    CHECK(!HoLayout_one(&a, &b) && !HoLayout_one(&b, &a)); /* a padded column */
    b = a, b.h_alloc = 9, b.top = 1;
    CHECK(!HoLayout_one(&a, &b));
    HoLayout c = {1, 12, 7, 7, 8, 7, 7, 0, 0, 1};
    CHECK(!HoLayout_one(&c, &c)); /* a padded channel block */
}

/* Kernels whose layouts are one: the reader borrows the producer's buffer, data and residual; a
 * padded reader copies. */
TEST(plan_borrows_where_the_layouts_are_one) {
    NetModel m;
    NetModel_init(&m);
    int k0 = node(&m, "Kernel", "a", "x", "w", "", NULL);
    int k1 = node(&m, "Kernel", "b", "a", "w", "", NULL);
    int k2 = node(&m, "Kernel", "c", "b", "w", "", "a");
    int k3 = node(&m, "Kernel", "y", "c", "w", "", NULL);
    output(&m, "y");
    CHECK(sorted(&m));
    HoKernel *k = kernels_of(&m);
    HoLayout plain = {1, 8, 4, 4, 8, 4, 4, 0, 0, 1};
    for (int i = 0; i < m.n_nodes; i++)
        if (k[i].is_kernel) k[i].in = k[i].out = plain;
    k[k3].in = (HoLayout){1, 8, 4, 4, 8, 6, 6, 1, 1, 1}; /* a 3x3 reader: its own padded buffer */
    HoPlan p;
    HoPlan_make(&m, k, &p);
    CHECK(p.borrow_in[k1] && p.borrow_in[k2] && p.borrow_res[k2]);
    CHECK_EQ_INT(p.data_from[k3], k2);
    CHECK(!p.borrow_in[k3] && !p.borrow_in[k0]);
    CHECK_EQ_INT(p.n_borrowed, 3);
    HoPlan_done(&p);
    free(k);
    NetModel_done(&m);
}

/* x -> K0 -> a -> Sigmoid -> s; GlobalAveragePool(s) -> g -> K1 -> h (1x8x1x1); Mul(h, s) -> t -> K2 -> y:
 * a squeeze-excitation block. The chain, the pool and the scale all work on K0's buffer, K2 takes
 * the result from there, K0 never unpacks. With a kernel reading s after the scale, nothing does. */
static void squeeze_excitation(bool late_reader) {
    NetModel m;
    NetModel_init(&m);
    node(&m, "Kernel", "a", "x", "w", "", NULL);
    node(&m, "Sigmoid", "s", "a", NULL, NULL, NULL);
    node(&m, "GlobalAveragePool", "g", "s", NULL, NULL, NULL);
    node(&m, "Kernel", "h", "g", "w", "", NULL);
    node(&m, "Mul", "t", "h", "s", NULL, NULL);
    node(&m, "Kernel", "y", "t", "w", "", NULL);
    if (late_reader) node(&m, "Kernel", "z", "s", "w", "", "t"); /* after the scale: it reads t too */
    m.values[val(&m, "g")].shape = m.values[val(&m, "h")].shape = (NdShape){.rank = 4, .dim = {1, 8, 1, 1}};
    output(&m, "y");
    if (late_reader) output(&m, "z");
    CHECK(sorted(&m));
    int k0 = producer(&m, "a"), sig = producer(&m, "s"), gap = producer(&m, "g"), k1 = producer(&m, "h"),
        mul = producer(&m, "t"), k2 = producer(&m, "y"), k3 = late_reader ? producer(&m, "z") : -1;
    CHECK(!late_reader || k3 > mul);
    HoKernel *k = kernels_of(&m);
    HoPlan p;
    HoPlan_make(&m, k, &p);
    int want = late_reader ? -1 : k0;
    CHECK_EQ_INT(p.on[sig], want);
    CHECK_EQ_INT(p.on[gap], want);
    CHECK_EQ_INT(p.on[mul], want);
    CHECK_EQ_INT(p.data_from[k2], want);
    CHECK_EQ_INT(p.data_from[k1], -1); /* the pooled tensor is dense */
    if (!late_reader) CHECK(p.on_kind[sig] == HO_CHAIN && p.on_kind[gap] == HO_POOL && p.on_kind[mul] == HO_SCALE);
    if (late_reader) CHECK_EQ_INT(p.data_from[k3], -1);
    CHECK(p.skip_unpack[k0] == !late_reader);
    HoPlan_done(&p);
    free(k);
    NetModel_done(&m);
}

TEST(plan_runs_squeeze_excitation_on_the_buffer) { squeeze_excitation(false); }
TEST(plan_keeps_squeeze_excitation_dense_for_a_later_reader) { squeeze_excitation(true); }

/* Ho_runPool and Ho_runScale over a blocked buffer with a border and a padded channel block, against
 * the definitions on the dense tensor: means within 1e-6, products exact, the scale in either input. */
TEST(pool_and_scale_on_a_blocked_buffer) {
    NetModel m;
    NetModel_init(&m);
    int gap = node(&m, "GlobalAveragePool", "g", "x", NULL, NULL, NULL);
    int mul = node(&m, "Mul", "y", "s", "x", NULL, NULL);
    NdShape xs = {.rank = 4, .dim = {2, 12, 5, 3}}, ss = {.rank = 4, .dim = {2, 12, 1, 1}};
    m.values[val(&m, "x")].shape = m.values[val(&m, "y")].shape = xs;
    m.values[val(&m, "g")].shape = m.values[val(&m, "s")].shape = ss;
    HoLayout d = HoLayout_dense(2, 12, 5, 3), b = {2, 12, 5, 3, 8, 7, 6, 1, 2, 1};
    NdTensor x = {.type = ND_F32, .shape = xs, .count = 360}, sc = {.type = ND_F32, .shape = ss, .count = 24};
    float xv[360], sv[24], back[360];
    for (int e = 0; e < 360; e++)
        xv[e] = (float)((e * 37) % 101) * 0.03f - 1.2f;
    for (int e = 0; e < 24; e++)
        sv[e] = 0.5f + (float)e * 0.125f;
    x.data = xv, sc.data = sv;
    float *blocked = calloc((size_t)HoLayout_floats(&b), sizeof(float));
    Ho_reblock(xv, &d, blocked, &b);
    char err[TT_ERRLEN] = "";
    NdTensor g = {0}, y = {0};
    const NdTensor *gin[1] = {&x}, *min[2] = {&sc, &x};
    OpCtx c = {.model = &m, .node = &m.nodes[gap], .in = gin, .n_in = 1, .out = &g, .n_out = 1, .err = err};
    CHECK(Ho_runPool(&c, blocked, &b) == TT_OK);
    double worst = 0;
    for (int nc = 0; nc < 24; nc++) {
        double sum = 0;
        for (int i = 0; i < 15; i++)
            sum += xv[nc * 15 + i];
        worst = fmax(worst, fabs(((float *)g.data)[nc] - sum / 15));
    }
    CHECK(worst < 1e-6);
    c = (OpCtx){.model = &m, .node = &m.nodes[mul], .in = min, .n_in = 2, .out = &y, .n_out = 1, .err = err};
    CHECK(Ho_runScale(&c, blocked, &b) == TT_OK);
    CHECK_EQ_INT((int)y.count, 360);
    Ho_reblock(blocked, &b, back, &d);
    int wrong = 0;
    for (int e = 0; e < 360; e++)
        wrong += back[e] != xv[e] * sv[e / 15];
    CHECK_EQ_INT(wrong, 0);
    free(blocked);
    NdTensor_free(&g);
    NdTensor_free(&y);
    NetModel_done(&m);
}

/* Ho_runChain on a lone node with attributes (HardSigmoid, alpha 0.3, beta 0.4), in place over a blocked
 * buffer: every interior element as the op computes it on the dense tensor. */
TEST(lone_op_runs_in_place_on_a_blocked_buffer) {
    NetModel m;
    NetModel_init(&m);
    int i = node(&m, "HardSigmoid", "y", "x", NULL, NULL, NULL);
    m.values[val(&m, "x")].is_input = true;
    NetNode *n = &m.nodes[i];
    free(n->attrs); /* the node was added without attributes */
    n->attrs = calloc(2, sizeof *n->attrs);
    n->attrs[0] = (NetAttr){.name = strdup("alpha"), .kind = NATTR_FLOAT, .f = 0.3};
    n->attrs[1] = (NetAttr){.name = strdup("beta"), .kind = NATTR_FLOAT, .f = 0.4};
    n->n_attrs = 2;
    char err[TT_ERRLEN] = "";
    CHECK(NetModel_bind(&m, err) == TT_OK);
    HoLayout d = HoLayout_dense(1, 8, 4, 4), b = {1, 8, 4, 4, 4, 6, 7, 1, 2, 1};
    NdTensor dense = {.type = ND_F32, .shape = m.values[val(&m, "x")].shape, .count = 128}, ref = {0}, out = {0};
    dense.data = malloc(sizeof(float) * 128);
    for (int e = 0; e < 128; e++)
        ((float *)dense.data)[e] = (float)(e % 23) * 0.25f - 2.5f;
    float *blocked = calloc((size_t)HoLayout_floats(&b), sizeof(float));
    Ho_reblock(dense.data, &d, blocked, &b);
    const NdTensor *in[1] = {&dense};
    OpCtx c = {.model = &m, .node = n, .opset = 17, .in = in, .n_in = 1, .out = &ref, .n_out = 1, .err = err};
    CHECK(n->def && n->def->run(&c) == TT_OK); /* the op itself, dense */
    c.out = &out;
    CHECK(Ho_runChain(&c, blocked, &b) == TT_OK);
    CHECK_EQ_INT((int)out.count, 128); /* the dense output has its shape, unwritten */
    float *back = calloc(128, sizeof(float));
    Ho_reblock(blocked, &b, back, &d);
    int wrong = 0;
    for (int e = 0; e < 128; e++)
        wrong += back[e] != ((float *)ref.data)[e];
    CHECK_EQ_INT(wrong, 0);
    CHECK(((float *)ref.data)[0] == 0.0f && ((float *)ref.data)[10] == 0.4f); /* -2.5 -> 0, 0 -> beta */
    free(back);
    free(blocked);
    free(dense.data);
    NdTensor_free(&ref);
    NdTensor_free(&out);
    NetModel_done(&m);
}

/* A lone Clip without its min (an omitted optional input) in place: every element min(x, 0.5). */
TEST(lone_op_with_an_omitted_input_runs_in_place) {
    NetModel m;
    NetModel_init(&m);
    scalar(&m, "hi");
    int i = node(&m, "Clip", "y", "x", "", "hi", NULL);
    char err[TT_ERRLEN] = "";
    CHECK(NetModel_bind(&m, err) == TT_OK);
    float xv[40], hi = 0.5f;
    for (int e = 0; e < 40; e++)
        xv[e] = (float)e * 0.05f - 1.0f;
    NdTensor x = {.type = ND_F32, .count = 40, .data = xv}, h = {.type = ND_F32, .count = 1, .data = &hi}, out = {0};
    x.shape = (NdShape){.rank = 1, .dim = {40}};
    const NdTensor *in[3] = {&x, NULL, &h};
    OpCtx c = {.model = &m, .node = &m.nodes[i], .opset = 17, .in = in, .n_in = 3, .out = &out, .n_out = 1, .err = err};
    HoLayout flat = {1, 40, 1, 1, 8, 1, 1, 0, 0, 1}; /* 5 blocks of 8 channels: the 40 floats in a row */
    CHECK(Ho_runChain(&c, xv, &flat) == TT_OK);
    int wrong = 0;
    for (int e = 0; e < 40; e++)
        wrong += xv[e] != fminf((float)e * 0.05f - 1.0f, 0.5f);
    CHECK_EQ_INT(wrong, 0);
    NdTensor_free(&out);
    NetModel_done(&m);
}

int main(void) {
    RUN(reblock_random_layouts);
    RUN(layouts_of_other_tensors_are_not_the_same);
    RUN(plan_hands_on_through_a_chain_and_a_residual);
    RUN(plan_keeps_dense_what_a_dense_reader_needs);
    RUN(plan_runs_a_lone_op_in_place_for_two_readers);
    RUN(plan_withdraws_chains_a_dense_reader_needs);
    RUN(lone_op_runs_in_place_on_a_blocked_buffer);
    RUN(lone_op_with_an_omitted_input_runs_in_place);
    RUN(one_layout_only_without_padding);
    RUN(plan_borrows_where_the_layouts_are_one);
    RUN(plan_runs_squeeze_excitation_on_the_buffer);
    RUN(plan_keeps_squeeze_excitation_dense_for_a_later_reader);
    RUN(pool_and_scale_on_a_blocked_buffer);
    return check_summary();
}
