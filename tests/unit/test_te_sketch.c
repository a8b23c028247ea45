/* tests/unit/test_te_sketch.c: the sketch rules (kernels/templates/te/te_sketch.h) on
 * small DAGs: each rule's condition and result (matmul, conv2d, softmax,
 * layer-norm, dense+bias+GELU from examples/te, and a short wide reduction for
 * rfactor / cross-thread reduction), the bare sketch and every random
 * annotation and mutation lower (on cpu with at most SKETCH_MAX_UNROLLED
 * unrolled copies of a loop body), the same seed gives the same steps, and the
 * schedule table of te.sketch (kernels/templates/te/te_task.h) gives back what
 * was put in under the hash of its text. */
#include <stdlib.h>
#include <string.h>

#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_sketch.h"
#include "kernels/templates/te/te_task.h"
#include "tests/check.h"

typedef struct Ex {
    TeProgram *prog;
    TeDag dag;
} Ex;

static void example_path(const char *name, char *path, size_t n) {
    const char *data = getenv("TT_TEST_DATA");
    snprintf(path, n, "%s/../../examples/te/%s.te", data ? data : "tests/data", name);
}

static Ex *load(const char *name, const TeSet *sets, int n_sets) {
    char path[512], err[TT_ERRLEN] = "";
    example_path(name, path, sizeof path);
    Ex *e = calloc(1, sizeof *e);
    e->prog = TeProgram_load(path, sets, n_sets, err);
    if (!e->prog || TeDag_build(&e->dag, e->prog, err) != TT_OK) {
        fprintf(stderr, "%s: %s\n", name, err);
        TeProgram_delete(e->prog);
        free(e);
        return NULL;
    }
    return e;
}

static Ex *parse(const char *text) {
    char err[TT_ERRLEN] = "";
    Ex *e = calloc(1, sizeof *e);
    e->prog = TeProgram_parse(text, "inline.te", NULL, 0, err);
    if (!e->prog || TeDag_build(&e->dag, e->prog, err) != TT_OK) {
        fprintf(stderr, "inline: %s\n", err);
        TeProgram_delete(e->prog);
        free(e);
        return NULL;
    }
    return e;
}

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static void ex_free(Ex *e) {
    if (!e) return;
    TeProgram_delete(e->prog);
    free(e);
}

static int stage_named(const Ex *e, const char *name) {
    for (int k = 0; k < e->dag.n_stages; k++)
        if (strcmp(e->prog->tensors[e->dag.stages[k].tensor].name, name) == 0) return k;
    return -1;
}

static int lowers(const TeDag *dag, const Steps *steps) {
    LoopNest ln;
    char err[TT_ERRLEN];
    if (LoopNest_lower(&ln, dag, steps, err) != TT_OK) {
        StrBuf s;
        StrBuf_init(&s);
        Steps_encode(steps, &s);
        fprintf(stderr, "does not lower: %s\n  steps: %s\n", err, s.data);
        StrBuf_done(&s);
        return 0;
    }
    LoopNest_done(&ln);
    return 1;
}

/* On a GPU, a one-stage expression's schedule is one kernel. */
static int one_kernel(const TeDag *dag, const Steps *steps) {
    LoopNest ln;
    char err[TT_ERRLEN];
    if (LoopNest_lower(&ln, dag, steps, err) != TT_OK) return 0;
    StrBuf src;
    StrBuf_init(&src);
    TeLaunch launches[TE_MAX_LAUNCHES];
    int n = 0;
    Status st = LoopNest_emit_gpu(&ln, 0, "k", &src, launches, &n, err);
    LoopNest_done(&ln);
    StrBuf_done(&src);
    if (st != TT_OK || n != 1) {
        StrBuf s;
        StrBuf_init(&s);
        Steps_encode(steps, &s);
        fprintf(stderr, "not one kernel (%d): %s\n  steps: %s\n", n, st == TT_OK ? "" : err, s.data);
        StrBuf_done(&s);
    }
    return st == TT_OK && n == 1;
}

/* Most copies of an innermost loop that unrolled loops make, over the
 * statements that compute (update, store): the product of the unrolled
 * extents from the nearest loop that is not unrolled (the innermost loop
 * counts when it is unrolled, not when it is a SIMD loop or a loop). */
static int64_t unrolled_copies(const LnNode *n, int64_t copies) {
    if (!n->is_loop) return n->part == LN_UPDATE || n->part == LN_STORE ? copies : 0;
    int innermost = 1;
    for (int i = 0; i < n->n_kids; i++)
        innermost &= !n->kids[i]->is_loop;
    if (n->unroll > 0 && n->ann != ANN_VECTORIZE)
        copies *= n->extent;
    else if (!innermost && n->extent > 1)
        copies = 1;
    int64_t most = 0;
    for (int i = 0; i < n->n_kids; i++) {
        int64_t c = unrolled_copies(n->kids[i], copies);
        most = c > most ? c : most;
    }
    return most;
}

/* The schedule lowers and its unrolled bodies stay within the cap. */
static int lowers_within_cap(const TeDag *dag, const Steps *steps, int gpu) {
    LoopNest ln;
    char err[TT_ERRLEN];
    if (!lowers(dag, steps) || LoopNest_lower(&ln, dag, steps, err) != TT_OK) return 0;
    int64_t copies = unrolled_copies(ln.root, 1);
    LoopNest_done(&ln);
    if (gpu || copies <= SKETCH_MAX_UNROLLED) return 1;
    StrBuf s;
    StrBuf_init(&s);
    Steps_encode(steps, &s);
    fprintf(stderr, "%lld unrolled copies of a loop body (cap %d)\n  steps: %s\n", (long long)copies,
            SKETCH_MAX_UNROLLED, s.data);
    StrBuf_done(&s);
    return 0;
}

/* The zero-trial default of e's first cpu sketch (2 cores, `vector` floats per register) as steps and as text
 * (s initialised here; the caller frees it). */
static void first_default(const Ex *e, int vector, Steps *st, StrBuf *s) {
    Sketch sk[SKETCH_MAX];
    SketchAnn ann[TE_MAX_TENSORS];
    Sketch_generate(&e->dag, 0, 2, sk);
    Sketch_heuristic(&sk[0], &e->dag, vector, ann);
    Sketch_steps(&sk[0], &e->dag, ann, st);
    StrBuf_init(s);
    Steps_encode(st, s);
}

static int has(const SketchStage *st, SketchRule r) { return (st->rules >> r) & 1; }

/* Every sketch: the bare structure, 40 random annotations, each with 4
 * mutations, and the heuristic one lower; the same seed gives the same steps. */
static void check_annotations(const Ex *e, const Sketch *sk, int n) {
    SketchAnn *ann = calloc((size_t)e->dag.n_stages, sizeof *ann),
              *again = calloc((size_t)e->dag.n_stages, sizeof *ann);
    for (int i = 0; i < n; i++) {
        Steps s, t;
        Sketch_steps(&sk[i], &e->dag, NULL, &s);
        CHECK(lowers(&e->dag, &s));
        for (int vector = 8; vector <= 16; vector *= 2) { /* AVX2, AVX-512 */
            Sketch_heuristic(&sk[i], &e->dag, vector, ann);
            Sketch_steps(&sk[i], &e->dag, ann, &s);
            CHECK(lowers_within_cap(&e->dag, &s, sk[i].gpu));
        }
        for (int seed = 0; seed < 40; seed++) {
            Rng rng, rng2;
            Rng_seed(&rng, (uint64_t)seed);
            Rng_seed(&rng2, (uint64_t)seed);
            Sketch_annotate(&sk[i], &e->dag, &rng, ann);
            Sketch_annotate(&sk[i], &e->dag, &rng2, again);
            Sketch_steps(&sk[i], &e->dag, ann, &s);
            Sketch_steps(&sk[i], &e->dag, again, &t);
            StrBuf a, b;
            StrBuf_init(&a);
            StrBuf_init(&b);
            Steps_encode(&s, &a);
            Steps_encode(&t, &b);
            CHECK_STR(a.len ? a.data : "", b.len ? b.data : "");
            StrBuf_done(&a);
            StrBuf_done(&b);
            CHECK(lowers_within_cap(&e->dag, &s, sk[i].gpu));
            if (sk[i].gpu && e->dag.n_stages == 1) CHECK(one_kernel(&e->dag, &s));
            /* read back from the steps alone, the annotation gives the same steps */
            memset(again, 0, (size_t)e->dag.n_stages * sizeof *again);
            CHECK(Sketch_recover(&sk[i], &e->dag, &s, again));
            Sketch_steps(&sk[i], &e->dag, again, &t);
            StrBuf_init(&b);
            Steps_encode(&t, &b);
            StrBuf_init(&a);
            Steps_encode(&s, &a);
            CHECK_STR(a.len ? a.data : "", b.len ? b.data : "");
            StrBuf_done(&a);
            StrBuf_done(&b);
            for (int m = 0; m < 4; m++) {
                Sketch_mutate(&sk[i], &e->dag, &rng, ann);
                Sketch_steps(&sk[i], &e->dag, ann, &s);
                CHECK(lowers_within_cap(&e->dag, &s, sk[i].gpu));
            }
        }
    }
    free(ann);
    free(again);
}

TEST(matmul_is_tiled_on_cpu_and_gpu) {
    TeSet set[] = {{"N", 24}};
    Ex *e = load("matmul", set, 1);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    int n = Sketch_generate(&e->dag, 0, 2, sk);
    CHECK_EQ_INT(n, 2); /* add cache stage forks: a local accumulator, and tiled in place */
    CHECK_EQ_INT(sk[0].st[0].how, SK_TILED);
    CHECK(has(&sk[0].st[0], RULE_TILE));
    CHECK(has(&sk[0].st[0], RULE_CACHE_WRITE)); /* data reuse and no consumer: the condition holds */
    CHECK(!has(&sk[0].st[0], RULE_INLINE) && !has(&sk[0].st[0], RULE_SKIP));
    CHECK(sk[0].note[0] == '\0');
    CHECK_EQ_INT(sk[1].st[0].how, SK_INPLACE);
    CHECK(has(&sk[1].st[0], RULE_TILE) && !has(&sk[1].st[0], RULE_CACHE_WRITE));
    StrBuf s;
    StrBuf_init(&s);
    Sketch_format(&sk[0], &e->dag, &s);
    /* the copy (stage 1) SSS: i0 j0 i1 j1 i2 j2; the accumulation computed at j1, its k split in two
     * and its loops k0 k1 i j (the register tile innermost) */
    CHECK_CONTAINS(s.data, "cache_write 0; split 1 1 ? ?; split 1 0 ? ?; reorder 1 0 3 1 4 2 5; compute_at 0 1 3; "
                           "split 0 2 ?; reorder 0 2 3 0 1");
    CHECK_CONTAINS(s.data, "SS(RRS)");
    StrBuf_clear(&s);
    Sketch_format(&sk[1], &e->dag, &s);
    /* SSRSRS: i and j in four levels, k in two, reordered i0 j0 i1 j1 k0 i2 j2 k1 i3 j3 */
    CHECK_CONTAINS(s.data, "split 0 2 ?; split 0 1 ? ? ?; split 0 0 ? ? ?; reorder 0 0 4 1 5 8 2 6 9 3 7");
    CHECK_CONTAINS(s.data, "SSRSRS in place");
    check_annotations(e, sk, n);
    n = Sketch_generate(&e->dag, 1, 2, sk);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(sk[0].st[0].how, SK_TILED);
    CHECK(has(&sk[0].st[0], RULE_SHARED_READ));
    CHECK(!has(&sk[0].st[0], RULE_CACHE_WRITE));
    StrBuf_clear(&s);
    Sketch_format(&sk[0], &e->dag, &s);
    /* the accumulation in a cache_write stage computed per thread; its copy (now
     * stage 1) tiled SSSS: i0 j0 i1 j1 i2 j2 i3 j3, computed at j2 */
    CHECK_CONTAINS(s.data,
                   "cache_write 0; split 1 1 ? ? ?; split 1 0 ? ? ?; reorder 1 0 4 1 5 2 6 3 7; compute_at 0 1 5");
    check_annotations(e, sk, n);
    /* an annotated GPU sketch binds i0, j0 to blockIdx.x, y and i2, j2 to threadIdx.x, y */
    SketchAnn ann[1];
    Sketch_heuristic(&sk[0], &e->dag, 16, ann);
    Steps st;
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    StrBuf_clear(&s);
    Steps_encode(&st, &s);
    CHECK_CONTAINS(s.data, "bind 1 0 0; bind 1 1 1; bind 1 4 3; bind 1 5 4; compute_at 0 1 5");
    CHECK(one_kernel(&e->dag, &st));
    StrBuf_done(&s);
    ex_free(e);
}

/* The line of the loop nest's text that starts (after its indent) with `what`. */
static const char *nest_line(const char *text, const char *what) {
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        const char *q = p;
        while (*q == ' ')
            q++;
        if (strncmp(q, what, strlen(what)) == 0) return q;
    }
    return NULL;
}

/* Whether the line at `line` holds `what`. */
static int line_has(const char *line, const char *what) {
    const char *end = strchr(line, '\n'), *at = strstr(line, what);
    return at && (!end || at < end);
}

TEST(the_cpu_default_accumulates_in_a_register_tile) {
    TeSet set[] = {{"N", 64}};
    Ex *e = load("matmul", set, 1);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    Sketch_generate(&e->dag, 0, 2, sk);
    SketchAnn ann[2];
    Sketch_heuristic(&sk[0], &e->dag, 16, ann);
    Steps st;
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    LoopNest ln;
    char err[TT_ERRLEN];
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    StrBuf s, c;
    StrBuf_init(&s);
    StrBuf_init(&c);
    LoopNest_print(&ln, &s);
    LoopNest_emit_c(&ln, "k", &c);
    /* two vectors of 16 wide, eight rows: 16 accumulators, computed at the copy's second tile level; the
     * copy's outer loops (i0 of 1, j0 of 2: two cores) run in parallel as one */
    CHECK_CONTAINS(s.data, "alloc C.local[8, 32]");
    CHECK_CONTAINS(c.data, "#pragma omp parallel for collapse(2)");
    /* k outside the tile, the rows unrolled, the 32 columns one SIMD loop; the box lies inside C: no guard */
    const char *k = nest_line(s.data, "for i0_3 < 64"), *rows = nest_line(s.data, "for i0_0 < 8 unroll 8"),
               *cols = nest_line(s.data, "for i0_1 < 32 vectorize"), *upd = nest_line(s.data, "update C.local");
    CHECK(k && rows && cols && upd && k < rows && rows < cols && cols < upd);
    CHECK(upd && !line_has(upd, " if "));
    LoopNest_done(&ln);
    /* a tile that does not divide the tensor keeps the guard */
    Steps odd;
    CHECK(Steps_decode("cache_write 0; split 1 0 5; split 1 2 16; reorder 1 0 2 1 3; compute_at 0 1 1", &odd, err) ==
          TT_OK);
    CHECK(LoopNest_lower(&ln, &e->dag, &odd, err) == TT_OK);
    StrBuf_clear(&s);
    LoopNest_print(&ln, &s);
    upd = nest_line(s.data, "update C.local");
    CHECK(upd && line_has(upd, " if ") && line_has(upd, "< 64"));
    LoopNest_done(&ln);
    StrBuf_done(&s);
    StrBuf_done(&c);
    ex_free(e);
}

/* The floats of the register tile (level 2 of the copy's spatial axes) of matmul's sketch 0 under ann. */
static int64_t matmul_tile(const SketchAnn *ann) { return (int64_t)ann[0].f[0][1] * ann[0].f[1][1]; }

/* The register tile of random annotations and mutations stays within the vector register file the sketch is
 * given: 16 registers of 8 floats with AVX2 (a larger tile spills), 32 of 16 with AVX-512 or an unknown width,
 * where tiles past 128 floats are drawn too. */
TEST(random_register_tiles_stay_within_the_vector_registers) {
    CHECK_EQ_INT(Sketch_tileFloats(8), 128);
    CHECK_EQ_INT(Sketch_tileFloats(16), 512);
    CHECK_EQ_INT(Sketch_tileFloats(0), 512);
    Ex *e = load("matmul", NULL, 0);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    Sketch_generate(&e->dag, 0, 2, sk);
    CHECK_EQ_INT(sk[0].st[0].how, SK_TILED);
    static const int VECTORS[] = {8, 16, 0};
    for (int v = 0; v < 3; v++) {
        sk[0].vector = VECTORS[v];
        Rng rng;
        Rng_seed(&rng, 7);
        int64_t most = 0;
        for (int i = 0; i < 400; i++) {
            SketchAnn ann[2];
            Sketch_annotate(&sk[0], &e->dag, &rng, ann);
            for (int m = 0; m < 4; m++) {
                int64_t t = matmul_tile(ann);
                CHECK(t <= Sketch_tileFloats(VECTORS[v]));
                if (t > most) most = t;
                Sketch_mutate(&sk[0], &e->dag, &rng, ann);
            }
        }
        if (VECTORS[v] == 8)
            CHECK_EQ_INT(most, 128); /* the default's size is drawn */
        else
            CHECK(most > 128);
    }
    ex_free(e);
}

/* AVX2 (16 registers of 8 floats): matmul's zero-trial default copies B by strips of 16 columns at the copy's
 * level-0 loop of j, around the register tiles that read it, and the tile holds at most 12 accumulators (4 x 16:
 * the strip's two registers and A's broadcast beside them); AVX-512 keeps 16 (8 x 32) and no copy. Inputs that
 * move along another tiled axis too (A, conv2d's X) or not along the vector axis in their last index (dense's
 * W[j, k]) are not copied. An annotation with the copy is read back from its steps. */
TEST(avx2_matmul_copies_b_by_strips_beside_12_accumulators) {
    TeSet set[] = {{"N", 64}};
    Ex *e = load("matmul", set, 1);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    Sketch_generate(&e->dag, 0, 2, sk);
    SketchAnn ann[1], back[1];
    Steps st;
    StrBuf s;
    StrBuf_init(&s);
    sk[0].vector = 8;
    CHECK(Sketch_packs(&sk[0], &e->dag, 0));
    Sketch_heuristic(&sk[0], &e->dag, 8, ann);
    CHECK_EQ_INT(ann[0].at, 0);
    CHECK_EQ_INT(ann[0].f[0][1], 4);  /* rows */
    CHECK_EQ_INT(ann[0].f[1][1], 16); /* two registers of 8 lanes */
    CHECK(matmul_tile(ann) / 8 <= 12);
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    Steps_encode(&st, &s);
    CHECK_CONTAINS(s.data, "cache_write 0; cache_read 0 1 0;");
    CHECK_CONTAINS(s.data, "compute_at 1 2 3;");               /* the accumulation at the register tile */
    CHECK_CONTAINS(s.data, "compute_at 0 2 1; vectorize 0 1"); /* the copy at j's level-0 loop */
    CHECK(Sketch_recover(&sk[0], &e->dag, &st, back));
    CHECK_EQ_INT(back[0].at, 0);
    LoopNest ln;
    char err[TT_ERRLEN];
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    StrBuf_clear(&s);
    LoopNest_print(&ln, &s);
    const char *strip = nest_line(s.data, "for i2_2 < 4 parallel"), *copy = nest_line(s.data, "alloc B.local[64, 16]"),
               *tile = nest_line(s.data, "alloc C.local[4, 16]"), *upd = nest_line(s.data, "update C.local");
    CHECK(strip && copy && tile && upd && strip < copy && copy < tile && tile < upd);
    LoopNest_done(&ln);
    StrBuf_clear(&s);
    sk[0].vector = 16; /* AVX-512: as before */
    CHECK(!Sketch_packs(&sk[0], &e->dag, 0));
    Sketch_heuristic(&sk[0], &e->dag, 16, ann);
    CHECK_EQ_INT(ann[0].at, -1);
    CHECK_EQ_INT(matmul_tile(ann), 256);
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    Steps_encode(&st, &s);
    CHECK(strstr(s.data, "cache_read") == NULL);
    StrBuf_done(&s);
    ex_free(e);
    static const char *const NONE[] = {"dense", "conv2d"};
    for (int i = 0; i < 2; i++) {
        e = load(NONE[i], NULL, 0);
        CHECK(e);
        if (!e) continue;
        int n = Sketch_generate(&e->dag, 0, 2, sk);
        for (int j = 0; j < n; j++) {
            sk[j].vector = 8;
            for (int k = 0; k < e->dag.n_stages; k++)
                CHECK(!Sketch_packs(&sk[j], &e->dag, k));
        }
        ex_free(e);
    }
}

TEST(dense_with_an_elementwise_consumer_forks_into_fused_and_plain) {
    TeSet set[] = {{"M", 8}, {"N", 12}, {"K", 16}};
    Ex *e = load("dense_bias_gelu", set, 3);
    CHECK(e);
    if (!e) return;
    int d = stage_named(e, "D"), y = stage_named(e, "Y");
    CHECK(d >= 0 && y >= 0 && e->dag.stages[d].fusible_consumer == y);
    Sketch sk[SKETCH_MAX];
    int n = Sketch_generate(&e->dag, 0, 2, sk);
    CHECK_EQ_INT(n, 3); /* D reads W[j, k] along k: an rfactor sketch too, first */
    CHECK_EQ_INT(sk[0].st[d].how, SK_RFACTOR);
    /* plain: D tiled in place, Y its own nest (skip) */
    CHECK_EQ_INT(sk[1].st[d].how, SK_INPLACE);
    CHECK_EQ_INT(sk[1].st[y].how, SK_ROOT);
    CHECK(has(&sk[1].st[y], RULE_SKIP));
    CHECK(!has(&sk[1].st[d], RULE_CACHE_WRITE)); /* a fusible consumer: no cache stage */
    /* fused: Y tiled, D computed at Y's tile */
    CHECK_EQ_INT(sk[2].st[d].how, SK_FUSED);
    CHECK_EQ_INT(sk[2].st[d].consumer, y);
    CHECK_EQ_INT(sk[2].st[y].how, SK_CONSUMER);
    CHECK(has(&sk[2].st[d], RULE_TILE_FUSION) && has(&sk[2].st[y], RULE_TILE_FUSION));
    StrBuf s;
    StrBuf_init(&s);
    Sketch_format(&sk[2], &e->dag, &s);
    CHECK_CONTAINS(s.data, "compute_at 0 1 1"); /* after Y's first level of tiles */
    StrBuf_done(&s);
    check_annotations(e, sk, n);
    /* a GPU cannot compute a stage at another one's tile: no fused sketch */
    n = Sketch_generate(&e->dag, 1, 2, sk);
    CHECK_EQ_INT(n, 1);
    ex_free(e);
}

TEST(softmax_computes_its_exp_once_and_forks_the_inlined_one) {
    TeSet set[] = {{"M", 40}, {"N", 10}};
    Ex *e = load("softmax", set, 2);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    int n = Sketch_generate(&e->dag, 0, 2, sk);
    /* the row max and the row sum read along j: each forks an rfactor sketch; E = exp(..) is read by S and Y,
     * so inlining would compute it twice: each of those sketches keeps it in a loop nest of its own and forks one
     * that inlines it */
    CHECK_EQ_INT(n, 8);
    int ex = stage_named(e, "E"), y = stage_named(e, "Y"), s = stage_named(e, "S"), mx = stage_named(e, "Mx");
    CHECK(sk[0].st[s].how == SK_RFACTOR && sk[0].st[mx].how == SK_RFACTOR); /* both first, then one, none */
    CHECK(sk[0].st[ex].how == SK_ROOT && has(&sk[0].st[ex], RULE_SKIP) && !has(&sk[0].st[ex], RULE_INLINE));
    int inlined = 0, own = 0;
    for (int i = 0; i < n; i++) {
        inlined += sk[i].st[ex].how == SK_INLINE && has(&sk[i].st[ex], RULE_INLINE);
        own += sk[i].st[ex].how == SK_ROOT;
    }
    CHECK(inlined == 4 && own == 4);
    Sketch first = sk[0];
    sk[0] = sk[n - 1];
    CHECK_EQ_INT(sk[0].st[s].how, SK_ROOT);
    CHECK_EQ_INT(sk[0].st[y].how, SK_ROOT); /* an output is never inlined */
    CHECK(has(&sk[0].st[y], RULE_SKIP) && has(&sk[0].st[s], RULE_SKIP));
    CHECK(sk[0].note[0] == '\0');
    sk[0] = first;
    check_annotations(e, sk, n);
    ex_free(e);
    /* exp read by one stage only, or math that is cheap: always inlined, no fork */
    const char *one[] = {"input X[8, 16]\nE[i < 8, j < 16] = exp(X[i, j])\nS[i < 8] = sum(E[i, j], j < 16)\noutput S\n",
                         "input X[8, 16]\nE[i < 8, j < 16] = X[i, j] * 2\nS[i < 8] = sum(E[i, j], j < 16)\n"
                         "Y[i < 8, j < 16] = E[i, j] / S[i]\noutput Y\n"};
    for (int q = 0; q < 2; q++) {
        e = parse(one[q]);
        CHECK(e);
        if (!e) continue;
        n = Sketch_generate(&e->dag, 0, 2, sk);
        ex = stage_named(e, "E");
        for (int i = 0; i < n; i++)
            CHECK_EQ_INT(sk[i].st[ex].how, SK_INLINE);
        ex_free(e);
    }
}

/* The row sum of E, which Y reads again, is computed at Y's row (with its S.rf and local: one row of 40 lanes, 5
 * AVX2 registers, no parallel loop of its own), so that Y reads E's row from the L1 cache; the row max of the
 * input X at E's row, whose exp reads X's row again; layer-norm's Var, which reads X too but has cheap arithmetic
 * after it, stays a pass of its own over 8 rows. */
TEST(softmax_sums_each_row_where_it_divides) {
    TeSet set[] = {{"M", 16}, {"N", 1000}};
    Ex *e = load("softmax", set, 2);
    CHECK(e);
    if (!e) return;
    Steps st;
    StrBuf s;
    first_default(e, 8, &st, &s);
    /* S is stage 2, Y 3; after S's rfactor and cache_write, S.rf's copy is 3, S 4, Y 5 */
    CHECK_CONTAINS(s.data, "rfactor 2 0 40; cache_write 2; split 3 0 1; vectorize 3 2; compute_at 2 3 0;");
    CHECK_CONTAINS(s.data, "unroll 4 1; compute_at 4 5 0; compute_at 3 5 0;");
    /* Mx, a max of the input X, at E's row too: E's exp reads X's row again, from the L1 cache */
    CHECK_CONTAINS(s.data, "rfactor 0 0 40; cache_write 0; split 1 0 1; vectorize 1 2;");
    CHECK_CONTAINS(s.data, "unroll 2 1; compute_at 2 3 0; compute_at 1 3 0");
    LoopNest ln;
    char err[TT_ERRLEN] = "";
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    StrBuf p;
    StrBuf_init(&p);
    LoopNest_print(&ln, &p);
    CHECK_CONTAINS(p.data,
                   "for i7_0 < 16 parallel\n  alloc S.rf[1, 40]\n  for i5_2 < 1\n    alloc S.rf.local[1, 40]\n");
    CHECK_CONTAINS(p.data, "  alloc S[1]\n");
    StrBuf_done(&p);
    LoopNest_done(&ln);
    StrBuf_done(&s);
    ex_free(e);
    TeSet ln_set[] = {{"M", 16}, {"N", 768}};
    e = load("layer_norm", ln_set, 2);
    CHECK(e);
    if (!e) return;
    first_default(e, 8, &st, &s);
    /* neither the variance at Y's row (cheap arithmetic after it: its pass of 8 rows wins) */
    CHECK(strstr(s.data, "compute_at 5 6 0") == NULL && strstr(s.data, "compute_at 4 6 0") == NULL);
    CHECK(strstr(s.data, "compute_at 3 4 0") == NULL && strstr(s.data, "compute_at 2 4 0") == NULL);
    CHECK_CONTAINS(s.data, "rfactor 1 0 8; cache_write 1; split 2 0 8; parallel 2 0;");
    StrBuf_done(&s);
    ex_free(e);
}

/* On one core the zero-trial default runs no loop in parallel (an OpenMP region of one thread costs its entry and
 * nothing runs beside it); on two it does. */
TEST(one_core_gets_no_parallel_loop) {
    static const char *const OPS[] = {"layer_norm", "softmax", "matmul"};
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++) {
        Ex *e = load(OPS[i], NULL, 0);
        CHECK(e);
        if (!e) continue;
        for (int cores = 1; cores <= 2; cores++) {
            Sketch sk[SKETCH_MAX];
            SketchAnn ann[TE_MAX_TENSORS];
            Steps st;
            Sketch_generate(&e->dag, 0, cores, sk);
            Sketch_heuristic(&sk[0], &e->dag, 8, ann);
            Sketch_steps(&sk[0], &e->dag, ann, &st);
            StrBuf s;
            StrBuf_init(&s);
            Steps_encode(&st, &s);
            CHECK_EQ_INT(strstr(s.data, "parallel") != NULL, cores > 1);
            CHECK(lowers(&e->dag, &st));
            StrBuf_done(&s);
        }
        ex_free(e);
    }
}

TEST(layer_norm_gets_root_stages_and_a_note) {
    TeSet set[] = {{"M", 40}, {"N", 12}};
    Ex *e = load("layer_norm", set, 2);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    int n = Sketch_generate(&e->dag, 0, 2, sk);
    CHECK_EQ_INT(n, 4); /* Mean and Var read along j (Var's read of Mean[i] stays put): rfactor sketches */
    Sketch first = sk[0];
    sk[0] = sk[n - 1]; /* the last: no rfactor */
    for (int k = 0; k < e->dag.n_stages; k++) {
        CHECK_EQ_INT(sk[0].st[k].how, SK_ROOT);
        CHECK_EQ_INT(sk[0].st[k].rules, 1u << RULE_SKIP);
    }
    CHECK_CONTAINS(sk[0].note, "no rule but skip applies");
    Steps st;
    Sketch_steps(&sk[0], &e->dag, NULL, &st);
    CHECK_EQ_INT(st.n, 0); /* the naive schedule: default loop nests */
    sk[0] = first;
    check_annotations(e, sk, n);
    sk[0] = sk[n - 1];
    /* Var (one consumer, Y) may be computed at a loop of Y */
    int var = stage_named(e, "Var");
    SketchAnn ann[8];
    Sketch_heuristic(&sk[0], &e->dag, 16, ann);
    ann[var].at = 0;
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    StrBuf s;
    StrBuf_init(&s);
    Steps_encode(&st, &s);
    char want[32];
    snprintf(want, sizeof want, "compute_at %d %d 0", var, stage_named(e, "Y"));
    CHECK_CONTAINS(s.data, want);
    CHECK_CONTAINS(s.data, "parallel 2 0"); /* Var's buffer is private to each iteration of Y's parallel loop */
    CHECK(lowers(&e->dag, &st));
    StrBuf_done(&s);
    /* the zero-trial default runs Y's rows in parallel and each row as one SIMD loop (no split, no fuse), so
     * the row's rsqrt is computed once per row before it */
    Sketch_heuristic(&first, &e->dag, 4, ann); /* 4 divides N = 12: a split was possible */
    Sketch_steps(&first, &e->dag, ann, &st);
    StrBuf_init(&s);
    Steps_encode(&st, &s);
    int y = stage_named(e, "Y");
    snprintf(want, sizeof want, "parallel %d 0; vectorize %d 1;", y, y);
    CHECK(strncmp(s.data, want, strlen(want)) == 0);
    snprintf(want, sizeof want, "fuse %d ", y);
    CHECK(strstr(s.data, want) == NULL);
    StrBuf_done(&s);
    ex_free(e);
}

TEST(conv2d_is_tiled_within_the_step_limits) {
    TeSet set[] = {{"C", 4}, {"H", 6}, {"W", 6}, {"K", 8}};
    Ex *e = load("conv2d", set, 4);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    for (int gpu = 0; gpu < 2; gpu++) {
        int n = Sketch_generate(&e->dag, gpu, 2, sk);
        CHECK_EQ_INT(n, gpu ? 1 : 2);
        CHECK_EQ_INT(sk[0].st[0].how, SK_TILED);
        check_annotations(e, sk, n);
    }
    ex_free(e);
    /* ResNet-18's layer (56x56, 64 channels): tiles of up to 512 floats and a 3x3 window, where the unrolled
     * copies of a body would reach thousands without the cap */
    e = load("conv2d", NULL, 0);
    CHECK(e);
    if (!e) return;
    check_annotations(e, sk, Sketch_generate(&e->dag, 0, 2, sk));
    ex_free(e);
}

/* conv2d on cpu: every tiled sketch first copies X with its zero padding (at root), so the accumulation reads
 * the copy without a test; the default puts the 3x3 window whole in the inner reduction level, unrolled around
 * the register tile, with the channel loop outside it; gpu sketches keep the tests. */
TEST(conv2d_reads_a_padded_copy_and_unrolls_its_window) {
    TeSet set[] = {{"C", 4}, {"H", 6}, {"W", 6}, {"K", 8}};
    Ex *e = load("conv2d", set, 4);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    int n = Sketch_generate(&e->dag, 0, 2, sk);
    for (int i = 0; i < n; i++) {
        CHECK(sk[i].st[0].pad == 1); /* X, tensor 0 */
        Steps st;
        Sketch_steps(&sk[i], &e->dag, NULL, &st);
        CHECK(st.n > 0 && st.step[0].kind == STEP_CACHE_READ && st.step[0].stage == 0 && st.step[0].arg[0] == 0 &&
              st.step[0].arg[1] == 2);
        StrBuf f;
        StrBuf_init(&f);
        Sketch_format(&sk[i], &e->dag, &f);
        CHECK_CONTAINS(f.data, "padded copy of X at root");
        StrBuf_done(&f);
    }
    SketchAnn ann[4];
    Sketch_heuristic(&sk[0], &e->dag, 16, ann);
    Steps st;
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    LoopNest ln;
    char err[TT_ERRLEN];
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    StrBuf s;
    StrBuf_init(&s);
    LoopNest_print(&ln, &s);
    CHECK_CONTAINS(s.data, "alloc X.pad[1, 4, 8, 8]");
    /* AVX-512: a tile of 16 rows, 2 of y (the window slides along y: X[.., y + r, ..]) and 8 of k, of 6
     * lanes; 16 x 9 copies would pass the cap, so the window's r, whose copies share rows of X, whole in the
     * inner level and unrolled (48 copies), its s a loop outside */
    CHECK_CONTAINS(s.data, "alloc Y.local[1, 8, 2, 6]");
    const char *c = nest_line(s.data, "for i1_11 < 4"), *w = nest_line(s.data, "for i1_7 < 3"),
               *r = nest_line(s.data, "for i1_10 < 3 unroll 3"), *upd = nest_line(s.data, "update Y.local");
    CHECK(c && r && w && upd && c < w && w < r && r < upd);
    CHECK(upd && !line_has(upd, " if "));
    CHECK_EQ_INT(unrolled_copies(ln.root, 1), 48);
    LoopNest_done(&ln);
    StrBuf_done(&s);
    Sketch_generate(&e->dag, 1, 2, sk);
    CHECK(sk[0].st[0].pad == 0);
    ex_free(e);
    /* AVX2, two output channels: 2 rows of y and 2 of k, the whole window unrolled around them (36 copies) */
    TeSet two[] = {{"C", 4}, {"H", 6}, {"W", 6}, {"K", 2}};
    e = load("conv2d", two, 4);
    CHECK(e);
    if (!e) return;
    Sketch_generate(&e->dag, 0, 2, sk);
    Sketch_heuristic(&sk[0], &e->dag, 8, ann);
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    StrBuf_init(&s);
    LoopNest_print(&ln, &s);
    CHECK_CONTAINS(s.data, "alloc Y.local[1, 2, 2, 6]");
    c = nest_line(s.data, "for i1_11 < 4"), r = nest_line(s.data, "for i1_10 < 3 unroll 3"),
    w = nest_line(s.data, "for i1_8 < 3 unroll 3"), upd = nest_line(s.data, "update Y.local");
    CHECK(c && r && w && upd && c < r && r < w && w < upd);
    CHECK_EQ_INT(unrolled_copies(ln.root, 1), 36);
    LoopNest_done(&ln);
    StrBuf_done(&s);
    ex_free(e);
    /* ResNet-18's layer on AVX2: 8 rows at most (16 of one register spill), 2 of y and 4 of k, one register
     * of x; the window's r unrolled (24 copies), its s a loop, and inside it 16 input channels, so that the
     * loop next to the tile is a long one */
    e = load("conv2d", NULL, 0);
    CHECK(e);
    if (!e) return;
    Sketch_generate(&e->dag, 0, 2, sk);
    Sketch_heuristic(&sk[0], &e->dag, 8, ann);
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    StrBuf_init(&s);
    LoopNest_print(&ln, &s);
    CHECK_CONTAINS(s.data, "alloc Y.local[1, 4, 2, 8]");
    w = nest_line(s.data, "for i1_7 < 3"), c = nest_line(s.data, "for i1_12 < 16"),
    r = nest_line(s.data, "for i1_10 < 3 unroll 3");
    CHECK(w && c && r && w < c && c < r);
    CHECK_EQ_INT(unrolled_copies(ln.root, 1), 24);
    LoopNest_done(&ln);
    StrBuf_done(&s);
    ex_free(e);
}

/* The AVX2 default of a matmul is a register tile that reads B's row along the vector axis, the same for its 4
 * rows: its C turns on gcc's pressure-aware pre-RA scheduler (te_emit), which keeps that row in registers; a
 * convolution's default (its window unrolled inside the tile) and a Winograd convolution's (transforms beside
 * the GEMM) do not. */
TEST(avx2_matmul_default_turns_on_the_scheduler) {
    static const char *const OPS[] = {"matmul", "conv2d", "conv2d_winograd"};
    for (int i = 0; i < 3; i++) {
        TeSet set[] = {{"N", 64}};
        Ex *e = load(OPS[i], set, i == 0);
        CHECK(e);
        if (!e) continue;
        Steps st;
        StrBuf s;
        first_default(e, 8, &st, &s);
        LoopNest ln;
        char err[TT_ERRLEN];
        CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
        StrBuf_clear(&s);
        LoopNest_emit_c(&ln, "k", &s);
        CHECK((strstr(s.data, "#pragma GCC optimize(\"schedule-insns\", \"sched-pressure\")") != NULL) == (i == 0));
        LoopNest_done(&ln);
        StrBuf_done(&s);
        ex_free(e);
    }
}

/* Max pooling (a window read through padding, no data reuse) reads a padded copy of X, computed per channel by
 * default, its window innermost and unrolled inside the vectorized row, with no test left; an elementwise stage,
 * a reduction without padding and a matmul are not pooling-like. */
TEST(max_pool_reads_a_padded_copy_with_its_window_innermost) {
    TeSet set[] = {{"C", 4}, {"H", 10}, {"W", 12}};
    Ex *e = load("max_pool", set, 3);
    CHECK(e);
    if (!e) return;
    CHECK(Sketch_pooling(&e->dag, 0));
    Sketch sk[SKETCH_MAX];
    int n = Sketch_generate(&e->dag, 0, 2, sk);
    CHECK_EQ_INT(n, 1);
    CHECK(sk[0].st[0].how == SK_POOL && has(&sk[0].st[0], RULE_WINDOW) && sk[0].st[0].pad == 1);
    StrBuf f;
    StrBuf_init(&f);
    Sketch_format(&sk[0], &e->dag, &f);
    CHECK_CONTAINS(f.data, "stage 0 Y        padded window  -> own loop nest over a padded copy, the window "
                           "innermost, padded copy of X\n");
    /* X padded (its last extent rounded to 2 phases), the padded copy by phases (2 * x + s) with its phase loop
     * innermost and unrolled, then Y's loops */
    CHECK_CONTAINS(f.data, "steps: cache_read 0 0 2 2; cache_read 1 2 3; reorder 1 0 1 2 4 3; unroll 1 4; split 2 3 "
                           "?; split 2 2 ?; reorder 2 0 1 2 4 3 5 6 7\n");
    CHECK(strstr(f.data, "note:") == NULL);
    StrBuf_done(&f);
    SketchAnn ann[2];
    Sketch_heuristic(&sk[0], &e->dag, 16, ann);
    Steps st;
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    LoopNest ln;
    char err[TT_ERRLEN];
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    StrBuf s;
    StrBuf_init(&s);
    LoopNest_print(&ln, &s);
    /* the copies per channel (parallel), then the rows: x whole and vectorized, the 3 x 3 window unrolled inside */
    const char *c = nest_line(s.data, "for i2_1 < 4 parallel"),
               *ph = nest_line(s.data, "alloc X.pad.ph[1, 1, 11, 2, 7]"),
               *pad = nest_line(s.data, "alloc X.pad[1, 1, 11, 14]"), *x = nest_line(s.data, "for i2_7 < 6 vectorize"),
               *r = nest_line(s.data, "for i2_4 < 3 unroll 3"), *w = nest_line(s.data, "for i2_5 < 3 unroll 3"),
               *upd = nest_line(s.data, "update Y");
    CHECK(c && ph && pad && x && r && w && upd && c < ph && ph < pad && pad < x && x < r && r < w && w < upd);
    /* the copy by phases runs along its source: q (i1_4) outside, the two phases of a pair (i1_3) unrolled inside */
    const char *q = nest_line(s.data, "for i1_4 < 7"), *phase = nest_line(s.data, "for i1_3 < 2 unroll 2"),
               *store = nest_line(s.data, "store X.pad.ph");
    CHECK(q && phase && store && pad < q && q < phase && phase < store && store < x);
    CHECK(upd && !line_has(upd, " if "));
    LoopNest_done(&ln);
    StrBuf_done(&s);
    check_annotations(e, sk, n);
    Sketch_generate(&e->dag, 1, 2, sk);
    CHECK(sk[0].st[0].pad == 0 && sk[0].st[0].how != SK_POOL);
    ex_free(e);
    static const char *const NOT[] = {
        "input A[4, 6]\nB[i < 4, j < 6] = A[i, j] * 2\noutput B\n",                              /* elementwise */
        "input A[4, 6]\nM[i < 4] = max_over(A[i, j], j < 6)\noutput M\n",                        /* no padding */
        "input A[4, 600]\nM[i < 4] = max_over(if(j >= 1, A[i, j - 1], 0), j < 601)\noutput M\n", /* a long window */
    };
    for (size_t i = 0; i < sizeof NOT / sizeof *NOT; i++) {
        e = parse(NOT[i]);
        CHECK(e);
        if (!e) continue;
        for (int k = 0; k < e->dag.n_stages; k++)
            CHECK(!Sketch_pooling(&e->dag, k));
        ex_free(e);
    }
    TeSet mm[] = {{"N", 8}};
    e = load("matmul", mm, 1);
    CHECK(e && !Sketch_pooling(&e->dag, 0));
    ex_free(e);
}

TEST(a_short_wide_reduction_meets_rfactor_and_cross_thread) {
    Ex *e = parse("input A[4, 4096]\nS[i < 4] = sum(A[i, k], k < 4096)\noutput S\n");
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    int n = Sketch_generate(&e->dag, 0, 2, sk);
    /* cpu: rfactor forks (the reads run along k), its sketch first; the other goes on to skip */
    CHECK_EQ_INT(n, 2);
    CHECK(has(&sk[1].st[0], RULE_SKIP) && !has(&sk[1].st[0], RULE_RFACTOR));
    CHECK(has(&sk[0].st[0], RULE_RFACTOR));
    CHECK_EQ_INT(sk[0].st[0].how, SK_RFACTOR);
    CHECK(strstr(sk[0].note, "rfactor") == NULL);
    check_annotations(e, sk, n);
    n = Sketch_generate(&e->dag, 1, 2, sk);
    CHECK(has(&sk[0].st[0], RULE_CROSS_THREAD));
    CHECK_CONTAINS(sk[0].note, "cross-thread reduction");
    CHECK_CONTAINS(sk[0].note, "rfactor: no step yet"); /* the GPU has no rfactor sketch */
    ex_free(e);
    /* reads along the spatial axis (A[k, i]) and enough spatial work: no rfactor */
    e = parse("input A[64, 512]\nS[i < 512] = sum(A[k, i], k < 64)\noutput S\n");
    CHECK(e);
    if (!e) return;
    n = Sketch_generate(&e->dag, 0, 2, sk);
    CHECK_EQ_INT(n, 1);
    CHECK(!has(&sk[0].st[0], RULE_RFACTOR));
    ex_free(e);
}

/* A dense layer reads W[j, k] along k: the rfactor sketch splits k by the SIMD width into S.rf, whose 16 lanes
 * are a vectorized local accumulator of 8 rows; the sum over the lanes is unrolled. */
TEST(dense_gets_an_rfactor_sketch) {
    TeSet set[] = {{"N", 40}, {"K", 64}};
    Ex *e = load("dense", set, 2);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    int n = Sketch_generate(&e->dag, 0, 2, sk), rf = -1;
    for (int i = 0; i < n; i++)
        if (sk[i].st[0].how == SK_RFACTOR) rf = i;
    CHECK(rf >= 0);
    if (rf < 0) return ex_free(e);
    CHECK(has(&sk[rf].st[0], RULE_RFACTOR));
    SketchAnn ann[1];
    Sketch_heuristic(&sk[rf], &e->dag, 16, ann);
    Steps st;
    Sketch_steps(&sk[rf], &e->dag, ann, &st);
    StrBuf s;
    StrBuf_init(&s);
    Steps_encode(&st, &s);
    /* one dense row of X (M = 1): S.rf per row of W, four vectors of lanes (rf_blocks), W read as one stream */
    CHECK_STR(s.data, "rfactor 0 0 64; split 1 1 1; parallel 1 0; parallel 1 1; compute_at 0 1 1; reorder 0 3 0 1 2; "
                      "unroll 0 2; vectorize 0 3; unroll 1 3");
    LoopNest ln;
    char err[TT_ERRLEN];
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    StrBuf_clear(&s);
    LoopNest_print(&ln, &s);
    CHECK_CONTAINS(s.data, "alloc Y.rf[1, 1, 64]");
    CHECK_CONTAINS(s.data, "for i0_2 < 64 vectorize\n");
    StrBuf_clear(&s);
    LoopNest_emit_c(&ln, "k", &s); /* Y sums each row's 64 lanes as a SIMD reduction, not a chain of adds */
    CHECK_CONTAINS(s.data, "#pragma omp simd reduction(+ : tt_acc");
    CHECK(!strstr(s.data, "#pragma GCC unroll 64"));
    LoopNest_done(&ln);
    CHECK(Sketch_recover(&sk[rf], &e->dag, &st, ann));
    CHECK_EQ_INT(ann[0].at, 1);
    /* S.rf at root (at -1), 8 rows of 16 lanes: a local accumulator of the copy's rows */
    ann[0].at = -1;
    ann[0].f[1][0] = 8;
    ann[0].f[2][0] = 16;
    Sketch_steps(&sk[rf], &e->dag, ann, &st);
    StrBuf_clear(&s);
    Steps_encode(&st, &s);
    CHECK_STR(s.data, "rfactor 0 0 16; cache_write 0; split 1 1 8; parallel 1 0; parallel 1 1; vectorize 1 3; "
                      "compute_at 0 1 1; reorder 0 3 0 1 2; unroll 0 2; vectorize 0 3; unroll 2 2");
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    StrBuf_clear(&s);
    LoopNest_print(&ln, &s);
    CHECK_CONTAINS(s.data, "alloc Y.rf.local[1, 8, 16]");
    CHECK_CONTAINS(s.data, "        for i0_1 < 8 unroll 8\n          for i0_2 < 16 vectorize\n"
                           "            update Y.rf.local");
    LoopNest_done(&ln);
    /* the local-accumulator sketch does not vectorize j (W would be gathered) */
    int tiled = rf == 0 ? 1 : 0;
    Sketch_heuristic(&sk[tiled], &e->dag, 16, ann);
    CHECK_EQ_INT(sk[tiled].st[0].how, SK_TILED);
    CHECK_EQ_INT(ann[0].vec, 0);
    StrBuf_done(&s);
    check_annotations(e, sk, n);
    ex_free(e);
    /* two rows of X (M = 2): each W row is used twice, S.rf stays at root by default */
    TeSet set2[] = {{"M", 2}, {"N", 40}, {"K", 64}};
    e = load("dense", set2, 3);
    CHECK(e);
    if (!e) return;
    n = Sketch_generate(&e->dag, 0, 2, sk), rf = -1;
    for (int i = 0; i < n; i++)
        if (sk[i].st[0].how == SK_RFACTOR) rf = i;
    if (rf >= 0) {
        Sketch_heuristic(&sk[rf], &e->dag, 16, ann);
        CHECK_EQ_INT(ann[0].at, -1);
    }
    ex_free(e);
}

/* How many times the buffer of tensor t is filled: the product of the extents of the loops around its
 * allocation (0: none under n). */
static int64_t alloc_trips(const LoopNest *ln, const LnNode *n, int t, int64_t outer) {
    if (!n->is_loop) return n->part == LN_ALLOC && ln->dag->stages[n->stage].tensor == t ? outer : 0;
    for (int i = 0; i < n->n_kids; i++) {
        int64_t r = alloc_trips(ln, n->kids[i], t, outer * (n->extent > 0 ? n->extent : 1));
        if (r) return r;
    }
    return 0;
}

/* Winograd as an expression: the batched GEMM is tiled, the transforms over constant matrices are stages of
 * their own (their reads of the constants make no rfactor), and a stage read through floor division or modulo
 * (Z2, by the output's y / 4, y % 4) stays at root whatever the annotation. */
TEST(winograd_tiles_its_gemm_and_keeps_div_mod_producers_at_root) {
    TeSet set[] = {{"C", 8}, {"K", 8}, {"H", 10}, {"W", 9}};
    Ex *e = load("conv2d_winograd", set, 4);
    CHECK(e);
    if (!e) return;
    Sketch sk[SKETCH_MAX];
    int n = Sketch_generate(&e->dag, 0, 2, sk), z = stage_named(e, "Z"), z2 = stage_named(e, "Z2");
    CHECK(n >= 2);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < e->dag.n_stages; k++) {
            CHECK(sk[i].st[k].how != SK_RFACTOR);
            if (k == z) CHECK(sk[i].st[k].how == SK_TILED || sk[i].st[k].how == SK_INPLACE);
        }
    SketchAnn *ann = calloc((size_t)e->dag.n_stages, sizeof *ann);
    char at_z2[32];
    snprintf(at_z2, sizeof at_z2, "compute_at %d ", z2);
    int moved_v1 = 0;
    for (int seed = 0; seed < 60; seed++) {
        Rng rng;
        Rng_seed(&rng, (uint64_t)seed);
        Sketch_annotate(&sk[seed % n], &e->dag, &rng, ann);
        for (int m = 0; m < 3; m++) {
            Steps st;
            Sketch_steps(&sk[seed % n], &e->dag, ann, &st);
            StrBuf s;
            StrBuf_init(&s);
            Steps_encode(&st, &s);
            CHECK(strstr(s.data, at_z2) == NULL);
            moved_v1 |= strstr(s.data, "compute_at 1 ") != NULL; /* V1, read by V at tw * 4 + s: it may move */
            /* a stage computed at a loop is not computed thousands of times over, as at a fused loop each of whose
             * iterations reads the whole box of the loops it fuses (a chain of compute_at may still repeat a
             * producer, 59 times at most here) */
            LoopNest ln;
            char err[TT_ERRLEN];
            CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
            for (int t = 0; t < ln.n_args; t++)
                if (ln.buf[t].scope == BUF_LOCAL &&
                    ln.buf[t].floats * alloc_trips(&ln, ln.root, t, 1) > 64 * TeProgram_numel(e->prog, t)) {
                    fprintf(
                        stderr, "%s computed %lld times over: %s\n", e->prog->tensors[t].name,
                        (long long)(ln.buf[t].floats * alloc_trips(&ln, ln.root, t, 1) / TeProgram_numel(e->prog, t)),
                        s.data);
                    CHECK(0);
                }
            LoopNest_done(&ln);
            StrBuf_done(&s);
            Sketch_mutate(&sk[seed % n], &e->dag, &rng, ann);
        }
    }
    CHECK(moved_v1);
    /* the transforms (sums over a constant's index) run along channels, the constant's axes unrolled inside:
     * V1 = sum(Bt[e, r] * Xp[n, th * 4 + r, xx, c], r < 6) loops n.th, xx, c (vectorized), e, r */
    Sketch_heuristic(&sk[0], &e->dag, 8, ann);
    Steps st;
    Sketch_steps(&sk[0], &e->dag, ann, &st);
    StrBuf s;
    StrBuf_init(&s);
    Steps_encode(&st, &s);
    CHECK_CONTAINS(s.data, "reorder 1 0 1 3 4 2 5; fuse 1 0 2; parallel 1 0; vectorize 1 2; unroll 1 3; unroll 1 4;");
    CHECK_CONTAINS(s.data, "reorder 2 0 2 3 4 5 1 6; fuse 2 0 2; parallel 2 0; vectorize 2 3; unroll 2 4; unroll 2 5;");
    /* the copy back to NCHW reads Z2[.., x % 4, k] along k: k right outside x, y outside k */
    CHECK(starts_with(s.data, "reorder 6 0 2 1 3; fuse 6 0 2; parallel 6 0; vectorize 6 2;"));
    /* the output transform's columns (Z1, read by Z2 at plain variables) are computed at Z2's loop tw, outside v
     * (Z1's constant axis, unrolled in Z1's own loops), Z2's outer loops parallel and not fused; V1, read by V at
     * tw * 4 + s, stays at root */
    CHECK_CONTAINS(s.data, "reorder 5 0 1 3 4 5 2 6; parallel 5 0; parallel 5 1; vectorize 5 4; unroll 5 5; "
                           "unroll 5 6; compute_at 4 5 2; reorder 4 0 1 2 3 5 4 6; vectorize 4 4; unroll 4 5; "
                           "unroll 4 6;");
    CHECK(strstr(s.data, "compute_at 1 ") == NULL);
    LoopNest ln;
    char err[TT_ERRLEN];
    CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
    int z1 = e->dag.stages[stage_named(e, "Z1")].tensor;
    CHECK(ln.buf[z1].scope == BUF_LOCAL); /* once per element: 6 x 4 x 8 floats per tile of Z2 */
    CHECK_EQ_INT(ln.buf[z1].floats, 6 * 4 * 8);
    CHECK_EQ_INT(ln.buf[z1].floats * alloc_trips(&ln, ln.root, z1, 1), TeProgram_numel(e->prog, z1));
    LoopNest_done(&ln);
    StrBuf_done(&s);
    free(ann);
    check_annotations(e, sk, n);
    ex_free(e);
}

/* A batch of small GEMMs (b in every read): the blocks of the vector axis k run in the level above the register
 * tile, inside the batch, and the outer level's iterations for the cores come from b; a GEMM without a batch
 * keeps k's blocks in the outer level. */
TEST(a_batch_of_products_runs_its_vector_blocks_inside_the_batch) {
    static const char *const src[] = {
        "input V[6, 32, 64]\ninput U[6, 64, 64]\nZ[b < 6, i < 32, k < 64] = sum(V[b, i, c] * U[b, c, k], c < 64)\n"
        "output Z\n",
        "input V[32, 64]\ninput U[64, 64]\nZ[i < 32, k < 64] = sum(V[i, c] * U[c, k], c < 64)\noutput Z\n"};
    for (int i = 0; i < 2; i++) {
        Ex *e = parse(src[i]);
        CHECK(e);
        if (!e) continue;
        Sketch sk[SKETCH_MAX];
        SketchAnn ann[TE_MAX_TENSORS];
        Sketch_generate(&e->dag, 0, 2, sk);
        CHECK(sk[0].st[0].how == SK_TILED);
        Sketch_heuristic(&sk[0], &e->dag, 8, ann);
        CHECK_EQ_INT(ann[0].f[i ? 1 : 2][1], 16);        /* two AVX2 registers of k */
        CHECK_EQ_INT(ann[0].f[i ? 1 : 2][0], i ? 1 : 4); /* k's four blocks: inside the batch, or outer */
        if (i == 0) CHECK_EQ_INT(6 / ann[0].f[0][0], 2); /* b: 2 outer iterations for the 2 cores */
        Steps st;
        LoopNest ln;
        char err[TT_ERRLEN];
        Sketch_steps(&sk[0], &e->dag, ann, &st);
        CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
        LoopNest_done(&ln);
        ex_free(e);
    }
}

/* A copy between layouts runs the loop its reads run along right outside its last loop; a copy that reads along
 * its last axis, or along two axes, keeps its order. */
TEST(a_transposing_copy_reads_along_the_loop_outside_its_last) {
    static const char *const src[] = {
        "input Z[4, 16, 8]\nY[k < 8, y < 4, x < 16] = Z[y, x, k] * 2\noutput Y\n",
        "input Z[8, 4, 16]\nY[k < 8, y < 4, x < 16] = Z[k, y, x] * 2\noutput Y\n",
        "input Z[4, 16, 8]\ninput W[8, 4, 16]\nY[k < 8, y < 4, x < 16] = Z[y, x, k] + W[k, y, x]\noutput Y\n"};
    for (int i = 0; i < 3; i++) {
        Ex *e = parse(src[i]);
        CHECK(e);
        if (!e) continue;
        Steps st;
        StrBuf s;
        first_default(e, 8, &st, &s);
        if (i == 0)
            CHECK(starts_with(s.data, "reorder 0 1 0 2; "));
        else
            CHECK(strstr(s.data, "reorder") == NULL);
        StrBuf_done(&s);
        ex_free(e);
    }
}

/* A sum over a constant's index unrolls the constant's axes inside the vectorized last axis only while their
 * copies stay within SKETCH_MAX_UNROLLED, and only when every reduction axis indexes the constant. */
#define B9 "1, 0, 0, 0, 0, 0, 0, 0, 1, "
#define B81 B9 B9 B9 B9 B9 B9 B9 B9 "1, 0, 0, 0, 0, 0, 0, 0, 1"

TEST(a_product_with_a_constant_unrolls_its_axes_within_the_cap) {
    static const char *const src[] = {
        "const B[4, 4] = [1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1]\ninput X[4, 16]\n"
        "Y[e < 4, c < 16] = sum(B[e, r] * X[r, c], r < 4)\noutput Y\n",
        "const B[9, 9] = [" B81 "]\ninput X[9, 16]\n"
        "Y[e < 9, c < 16] = sum(B[e, r] * X[r, c], r < 9)\noutput Y\n",
        "const B[4, 4] = [1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1]\ninput X[4, 8, 16]\n"
        "Y[e < 4, c < 16] = sum(B[e, r] * X[r, q, c], r < 4, q < 8)\noutput Y\n"};
    for (int i = 0; i < 3; i++) {
        Ex *e = parse(src[i]);
        CHECK(e);
        if (!e) continue;
        Steps st;
        StrBuf s;
        first_default(e, 8, &st, &s);
        if (i == 0)
            CHECK_CONTAINS(s.data, "reorder 0 1 0 2; vectorize 0 0; unroll 0 1; unroll 0 2");
        else /* 81 copies; a reduction axis q that is no constant's */
            CHECK(strstr(s.data, "; unroll 0 ") == NULL && !starts_with(s.data, "unroll 0 "));
        LoopNest ln;
        char err[TT_ERRLEN];
        CHECK(LoopNest_lower(&ln, &e->dag, &st, err) == TT_OK);
        LoopNest_done(&ln);
        StrBuf_done(&s);
        ex_free(e);
    }
}

TEST(the_schedule_table_gives_back_what_it_holds) {
    char path[512], err[TT_ERRLEN] = "";
    example_path("matmul", path, sizeof path);
    TeSet set[] = {{"N", 16}};
    TeTask *t = NULL;
    Workload wl;
    CHECK(TeTask_load(path, set, 1, &t, &wl, err) == TT_OK);
    if (!t) return;
    Steps a, b, back;
    CHECK(Steps_decode("split 0 1 4; parallel 0 0", &a, err) == TT_OK);
    CHECK(Steps_decode("split 0 1 8; parallel 0 0", &b, err) == TT_OK);
    uint64_t ia, ib, ia2;
    CHECK(TeTask_addSchedule(t, &a, 0, &ia, err) == TT_OK);
    CHECK(TeTask_addSchedule(t, &b, 1, &ib, err) == TT_OK);
    CHECK(TeTask_addSchedule(t, &a, 0, &ia2, err) == TT_OK);
    CHECK(ia == ia2 && ia != ib);
    CHECK(ia < (1ULL << TE_SCHED_BITS));
    CHECK_EQ_INT(TeTask_scheduleCount(t), 2);
    CHECK(ia == TeSched_index("split 0 1 4; parallel 0 0"));
    int sketch = -9;
    CHECK(TeTask_schedule(t, ib, &back, &sketch));
    CHECK_EQ_INT(sketch, 1);
    StrBuf s;
    StrBuf_init(&s);
    Steps_encode(&back, &s);
    CHECK_STR(s.data, "split 0 1 8; parallel 0 0");
    StrBuf_done(&s);
    CHECK(!TeTask_schedule(t, ia ^ 1, &back, NULL));
    /* the template: a record's steps come back under its index; other steps under it are refused */
    char label[64];
    tmpl_te_sketch.label(&wl, ib, label, sizeof label);
    CHECK_CONTAINS(label, "sketch 1, schedule ");
    Steps c;
    CHECK(Steps_decode("split 0 0 2", &c, err) == TT_OK);
    uint64_t ic = TeSched_index("split 0 0 2");
    CHECK(tmpl_te_sketch.adopt(&wl, ic, "split 0 0 2", "sketch 0, schedule x", err) == TT_OK);
    CHECK(TeTask_schedule(t, ic, &back, &sketch) && sketch == 0);
    CHECK(tmpl_te_sketch.adopt(&wl, ic ^ 1, "split 0 0 2", "", err) != TT_OK);
    CHECK_CONTAINS(err, "hash to");
    for (int i = 0; i < 600; i++) { /* the table grows */
        Steps g;
        int64_t f = 1 + i % 16, args[2] = {0, f};
        g.n = 0;
        Steps_add(&g, STEP_SPLIT, 0, args, 2, err);
        int64_t au[2] = {0, i}; /* auto_unroll max step i: 600 different lists */
        Steps_add(&g, STEP_AUTO_UNROLL, 0, au, 2, err);
        uint64_t ig;
        CHECK(TeTask_addSchedule(t, &g, 2, &ig, err) == TT_OK);
        CHECK(TeTask_schedule(t, ig, &back, NULL) && back.n == 2 && back.step[1].arg[1] == i);
    }
    CHECK_EQ_INT(TeTask_scheduleCount(t), 603);
    TeTask_delete(t);
}

int main(void) {
    RUN(matmul_is_tiled_on_cpu_and_gpu);
    RUN(the_cpu_default_accumulates_in_a_register_tile);
    RUN(random_register_tiles_stay_within_the_vector_registers);
    RUN(avx2_matmul_copies_b_by_strips_beside_12_accumulators);
    RUN(avx2_matmul_default_turns_on_the_scheduler);
    RUN(dense_with_an_elementwise_consumer_forks_into_fused_and_plain);
    RUN(softmax_computes_its_exp_once_and_forks_the_inlined_one);
    RUN(layer_norm_gets_root_stages_and_a_note);
    RUN(softmax_sums_each_row_where_it_divides);
    RUN(one_core_gets_no_parallel_loop);
    RUN(conv2d_is_tiled_within_the_step_limits);
    RUN(conv2d_reads_a_padded_copy_and_unrolls_its_window);
    RUN(max_pool_reads_a_padded_copy_with_its_window_innermost);
    RUN(a_short_wide_reduction_meets_rfactor_and_cross_thread);
    RUN(dense_gets_an_rfactor_sketch);
    RUN(winograd_tiles_its_gemm_and_keeps_div_mod_producers_at_root);
    RUN(a_product_with_a_constant_unrolls_its_axes_within_the_cap);
    RUN(a_transposing_copy_reads_along_the_loop_outside_its_last);
    RUN(a_batch_of_products_runs_its_vector_blocks_inside_the_batch);
    RUN(the_schedule_table_gives_back_what_it_holds);
    return check_summary();
}
