/* tests/unit/test_te_dag.c: stages, analyses and the workload key of the
 * compute DAG built from .te programs. */
#include <stdlib.h>
#include <string.h>

#include "te/dag.h"
#include "tests/check.h"

static TeProgram *load_example(const char *name, const TeSet *sets, int n_sets) {
    const char *data = getenv("TT_TEST_DATA");
    char root[400], path[512], err[TT_ERRLEN] = "";
    snprintf(root, sizeof root, "%s", data ? data : "tests/data");
    char *slash = strrchr(root, '/');
    if (slash) *slash = 0;
    snprintf(path, sizeof path, "%s/../examples/te/%s.te", root, name);
    TeProgram *g = TeProgram_load(path, sets, n_sets, err);
    if (!g) fprintf(stderr, "%s\n", err);
    return g;
}

static TeProgram *parse(const char *src) {
    char err[TT_ERRLEN] = "";
    TeProgram *g = TeProgram_parse(src, "t.te", NULL, 0, err);
    if (!g) fprintf(stderr, "%s\n", err);
    return g;
}

static const TeStage *stage(const TeDag *d, const char *name) {
    int t = TeProgram_find(d->prog, name);
    return t >= 0 && d->stage_of[t] >= 0 ? &d->stages[d->stage_of[t]] : NULL;
}

TEST(matmul_stage) {
    TeSet set = {"N", 64};
    TeProgram *g = load_example("matmul", &set, 1);
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK_EQ_INT(d.n_stages, 1);
    const TeStage *c = stage(&d, "C");
    CHECK(c != NULL);
    CHECK_EQ_INT(c->n_spatial, 2);
    CHECK_EQ_INT(c->n_reduce, 1);
    CHECK_EQ_INT(c->n_access, 2);
    CHECK_EQ_INT(c->access[0].missing_spatial, 1); /* A[i, k] misses j */
    CHECK_EQ_INT(c->access[1].missing_spatial, 1); /* B[k, j] misses i */
    CHECK(c->data_reuse);
    CHECK(!c->injective && !c->inlinable);
    CHECK(c->is_output);
    CHECK_EQ_INT(c->fusible_consumer, -1);
    CHECK_NEAR(d.flops, 2.0 * 64 * 64 * 64, 0);
    TeProgram_delete(g);
}

TEST(example_analyses) {
    TeDag d;
    char err[TT_ERRLEN] = "";
    TeProgram *g = load_example("softmax", NULL, 0);
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK_EQ_INT(d.n_stages, 4);
    CHECK(stage(&d, "E")->inlinable);
    CHECK(stage(&d, "E")->elementwise);
    CHECK(!stage(&d, "Mx")->data_reuse); /* a row reduction re-reads nothing */
    CHECK(!stage(&d, "Y")->inlinable);   /* an output */
    CHECK(stage(&d, "Y")->elementwise);
    CHECK_EQ_INT(stage(&d, "E")->n_consumers, 2);
    TeProgram_delete(g);

    g = load_example("dense_bias_gelu", NULL, 0);
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK(stage(&d, "D")->data_reuse);
    CHECK_EQ_INT(stage(&d, "D")->fusible_consumer, d.stage_of[TeProgram_find(g, "Y")]);
    TeProgram_delete(g);

    g = load_example("conv2d", NULL, 0);
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK(stage(&d, "Y")->data_reuse);
    CHECK_EQ_INT(stage(&d, "Y")->n_reduce, 3);
    CHECK_NEAR(d.flops, 2.0 * 64 * 56 * 56 * 64 * 9, 0);
    TeProgram_delete(g);

    g = load_example("max_pool", NULL, 0);
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK(!stage(&d, "Y")->data_reuse);
    CHECK(!stage(&d, "Y")->injective);
    TeProgram_delete(g);

    g = load_example("layer_norm", NULL, 0);
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK(stage(&d, "Mean")->red != NULL);
    CHECK(stage(&d, "Mean")->red != g->tensors[TeProgram_find(g, "Mean")].body); /* sum(...) / N has a post */
    CHECK(!stage(&d, "Y")->elementwise || stage(&d, "Y")->inlinable == 0);
    TeProgram_delete(g);

    /* a transpose indexes with one variable per dimension: elementwise; i / 2 is not */
    g = parse("input A[4, 8]\nB[i < 8, j < 4] = A[j, i] * 2\nC[i < 8] = B[i, 0] + B[i / 2, 1]\noutput C\n");
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK(stage(&d, "B")->inlinable);
    CHECK(stage(&d, "C")->injective);
    CHECK(!stage(&d, "C")->elementwise); /* B[i / 2, 1] */
    TeProgram_delete(g);
}

static void key_of(const char *src, char *key) {
    TeProgram *g = parse(src);
    TeDag d;
    char err[TT_ERRLEN] = "";
    key[0] = 0;
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (g) strcpy(key, d.key);
    TeProgram_delete(g);
}

TEST(workload_key) {
    char a[TE_KEY_LEN], b[TE_KEY_LEN], c[TE_KEY_LEN], e[TE_KEY_LEN], f[TE_KEY_LEN];
    key_of("let N = 64\ninput A[N, N]\ninput B[N, N]\nC[i < N, j < N] = sum(A[i, k] * B[k, j], k < N)\noutput C\n", a);
    key_of("# the same, renamed and respaced\n\ninput  X [64,64]  f32\ninput Y[ 64 , 64 ]\n"
           "Z[ row<64 ,col< 64]=sum( X[row,kk]*Y[kk,col] ,kk<64)   # comment\noutput Z",
           b);
    key_of("let N = 64\ninput A[N, N]\ninput B[N, N]\nC[i < N, j < N] = sum(A[i, k] * B[j, k], k < N)\noutput C\n", c);
    key_of("let N = 32\ninput A[N, N]\ninput B[N, N]\nC[i < N, j < N] = sum(A[i, k] * B[k, j], k < N)\noutput C\n", e);
    key_of("let N = 64\ninput A[N, N] f16\ninput B[N, N]\nC[i < N, j < N] = sum(A[i, k] * B[k, j], k < N)\noutput C\n",
           f);
    CHECK_EQ_INT(strlen(a), 19);
    CHECK_STR(a, b);
    CHECK(strcmp(a, c) != 0); /* B transposed */
    CHECK(strcmp(a, e) != 0); /* other size */
    CHECK(strcmp(a, f) != 0); /* other element type */

    TeProgram *g = parse("input A[4]\nB[i < 4] = sum(A[k] * 0.1, k < 4) / 4 + 1e-5\noutput B\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    StrBuf s;
    StrBuf_init(&s);
    TeDag_canonical(&d, &s);
    CHECK_STR(s.data, "t0[4]f32\nt1[4]=((sum((t0[r0] * 0.1), r0 < 4) / 4) + 1e-05) out\n");
    StrBuf_done(&s);
    TeProgram_delete(g);
}

/* A constant tensor is no stage, its reads are no data reuse, and its values are part of the key. */
TEST(constant_tensors) {
    char a[TE_KEY_LEN], b[TE_KEY_LEN], c[TE_KEY_LEN];
    key_of("const B[2, 3] = [1, 0, -1, 0.5, 2, 0]\ninput X[3, 8]\n"
           "Y[i < 2, j < 8] = sum(B[i, k] * X[k, j], k < 3)\noutput Y\n",
           a);
    key_of("const G[2,3]=[1,0,-1,\n 1.0 / 2, 2, 0]\ninput Z[3, 8]\nO[p < 2, q < 8] = sum(G[p, r] * Z[r, q], r < 3)\n"
           "output O\n",
           b);
    key_of("const B[2, 3] = [1, 0, -1, 0.5, 2, 1]\ninput X[3, 8]\n"
           "Y[i < 2, j < 8] = sum(B[i, k] * X[k, j], k < 3)\noutput Y\n",
           c);
    CHECK_STR(a, b);
    CHECK(strcmp(a, c) != 0); /* one value differs */
    TeProgram *g = parse("const B[2, 3] = [1, 0, -1, 0.5, 2, 0]\ninput X[3, 8]\n"
                         "Y[i < 2, j < 8] = sum(B[i, k] * X[k, j], k < 3)\noutput Y\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK_EQ_INT(d.n_stages, 1);
    CHECK_EQ_INT(d.stage_of[0], -1);
    CHECK(!d.stages[0].data_reuse); /* B[i, k] misses j, X[k, j] misses i: one axis of data */
    StrBuf s;
    StrBuf_init(&s);
    TeDag_canonical(&d, &s);
    CHECK_STR(s.data,
              "t0[2,3]=const(1,0,-1,0.5,2,0)\nt1[3,8]f32\nt2[2,8]=sum((t0[s0, r0] * t1[r0, s1]), r0 < 3) out\n");
    StrBuf_done(&s);
    TeProgram_delete(g);
}

TEST(reduction_placement_errors) {
    static const char *const SRC[][2] = {
        {"input A[4]\nB[i < 4] = sum(A[k], k < 4) + sum(A[k], k < 4)\noutput B\n",
         "t.te:2:31: a tensor's value may hold one reduction, not under 'if' nor inside another reduction; define this "
         "one as a tensor of its own"},
        {"input A[4]\nB[i < 4] = if(i > 0, sum(A[k], k < 4), 0)\noutput B\n",
         "t.te:2:22: a tensor's value may hold one reduction, not under 'if' nor inside another reduction; define this "
         "one as a tensor of its own"},
        {"input A[4]\nB[i < 4] = sum(sum(A[k], k < 4), l < 2)\noutput B\n",
         "t.te:2:16: a tensor's value may hold one reduction, not under 'if' nor inside another reduction; define this "
         "one as a tensor of its own"},
    };
    for (size_t i = 0; i < sizeof SRC / sizeof *SRC; i++) {
        TeProgram *g = parse(SRC[i][0]);
        CHECK(g != NULL);
        if (!g) continue;
        TeDag d;
        char err[TT_ERRLEN] = "";
        CHECK(TeDag_build(&d, g, err) == TT_ERR);
        CHECK_STR(err, SRC[i][1]);
        TeProgram_delete(g);
    }
}

int main(void) {
    RUN(matmul_stage);
    RUN(example_analyses);
    RUN(workload_key);
    RUN(constant_tensors);
    RUN(reduction_placement_errors);
    return check_summary();
}
