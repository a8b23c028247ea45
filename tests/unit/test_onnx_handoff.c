/* tests/unit/test_onnx_handoff.c: the blocked handoffs of a model program
 * (tuner/net/handoff.h). Ho_reblock against the layouts' own definition on
 * random pairs of layouts (channel blocks, padding, a depthwise multiplier,
 * dense on either side), with sentinels in every padding position; and
 * HoPlan_make on small graphs of kernel nodes: what is handed on, what must
 * stay dense and why. */
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
    CHECK_EQ_INT(p.ew_on[e], k1);
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
    CHECK_EQ_INT(p.ew_on[e], -1);
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

int main(void) {
    RUN(reblock_random_layouts);
    RUN(layouts_of_other_tensors_are_not_the_same);
    RUN(plan_hands_on_through_a_chain_and_a_residual);
    RUN(plan_keeps_dense_what_a_dense_reader_needs);
    return check_summary();
}
