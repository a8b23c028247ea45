/* tests/unit/test_te_lower.c: schedule steps as data (encode/decode), their
 * errors (each names the step index), the loop nest they lower to, and replay
 * determinism over random schedules. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/targets/cpu/abi.h"
#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_task.h"
#include "tests/check.h"

static TeProgram *parse(const char *src) {
    char err[TT_ERRLEN] = "";
    TeProgram *g = TeProgram_parse(src, "t.te", NULL, 0, err);
    if (!g) fprintf(stderr, "%s\n", err);
    return g;
}

/* C source built into a shared object as the cpu target builds it, in a temporary folder of its own: c_path is
 * the source (to read its assembly), k the kernel (NULL when the build failed, which is checked). */
typedef struct Built {
    char dir[32], c_path[64], so_path[64];
    void *so;
    void (*k)(float **);
} Built;

static void build_c(const char *code, Built *b) {
    memset(b, 0, sizeof *b);
    snprintf(b->dir, sizeof b->dir, "/tmp/tt-te-lower.XXXXXX");
    CHECK(mkdtemp(b->dir) != NULL);
    snprintf(b->c_path, sizeof b->c_path, "%s/k.c", b->dir);
    snprintf(b->so_path, sizeof b->so_path, "%s/k.so", b->dir);
    FILE *f = fopen(b->c_path, "w");
    CHECK(f != NULL);
    if (f) fputs(code, f), fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cc %s -o %s %s -lm", TT_CPU_CFLAGS, b->so_path, b->c_path);
    CHECK_EQ_INT(system(cmd), 0);
    b->so = dlopen(b->so_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    b->k = b->so ? (void (*)(float **))dlsym(b->so, "k") : NULL;
    CHECK(b->k != NULL);
}

static void built_done(Built *b) {
    if (b->so) dlclose(b->so);
    unlink(b->so_path);
    unlink(b->c_path);
    rmdir(b->dir);
}

/* The C of kernel "k" for program text under schedule steps, into c (initialised by the caller); 0 when a stage
 * fails (checked). */
static int emit_c_of(const char *text, const char *steps, StrBuf *c) {
    TeProgram *g = parse(text);
    TeDag d;
    Steps s;
    LoopNest ln;
    char err[TT_ERRLEN] = "";
    int ok = g && TeDag_build(&d, g, err) == TT_OK && Steps_decode(steps, &s, err) == TT_OK &&
             LoopNest_lower(&ln, &d, &s, err) == TT_OK;
    if (!ok) fprintf(stderr, "%s: %s\n", steps, err);
    CHECK(ok);
    if (ok) LoopNest_emit_c(&ln, "k", c), LoopNest_done(&ln);
    TeProgram_delete(g);
    return ok;
}

#define MATMUL "input A[6, 4]\ninput B[4, 5]\nC[i < 6, j < 5] = sum(A[i, k] * B[k, j], k < 4)\noutput C\n"

TEST(encode_decode) {
    Steps s = {0}, t;
    char err[TT_ERRLEN] = "";
    int64_t a[] = {1, 8, 4};
    CHECK(Steps_add(&s, STEP_SPLIT, 0, a, 3, err) == TT_OK);
    int64_t r[] = {0, 2, 1, 3};
    CHECK(Steps_add(&s, STEP_REORDER, 0, r, 4, err) == TT_OK);
    CHECK(Steps_add(&s, STEP_COMPUTE_INLINE, 2, NULL, 0, err) == TT_OK);
    int64_t au[] = {0, 512};
    CHECK(Steps_add(&s, STEP_AUTO_UNROLL, 0, au, 2, err) == TT_OK);
    CHECK(Steps_add(&s, STEP_PARALLEL, 0, a, 2, err) == TT_ERR);
    CHECK_STR(err, "step 4 (parallel): 2 arguments, expected 1..1");
    StrBuf b;
    StrBuf_init(&b);
    Steps_encode(&s, &b);
    CHECK_STR(b.data, "split 0 1 8 4; reorder 0 0 2 1 3; compute_inline 2; auto_unroll 0 0 512");
    CHECK(Steps_decode(b.data, &t, err) == TT_OK);
    CHECK_EQ_INT(t.n, 4);
    StrBuf c;
    StrBuf_init(&c);
    Steps_encode(&t, &c);
    CHECK_STR(c.data, b.data);
    StrBuf_done(&b);
    StrBuf_done(&c);
    CHECK(Steps_decode("", &t, err) == TT_OK && t.n == 0);
    CHECK(Steps_decode("split 0 1 8; twist 0", &t, err) == TT_ERR);
    CHECK_STR(err, "step 1: unknown step 'twist'");
    CHECK(Steps_decode("split 0 x", &t, err) == TT_ERR);
    CHECK_STR(err, "step 0 (split): 'x' is not a whole number");
    CHECK(Steps_decode("fuse 0 1", &t, err) == TT_ERR);
    CHECK_STR(err, "step 0 (fuse): 1 arguments, expected 2..2");
}

TEST(lowered_matmul) {
    TeProgram *g = parse(MATMUL);
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    Steps s;
    CHECK(Steps_decode("split 0 0 2; split 0 2 4; reorder 0 0 2 1 4 3; parallel 0 0; vectorize 0 4", &s, err) == TT_OK);
    LoopNest ln;
    if (LoopNest_lower(&ln, &d, &s, err) != TT_OK) {
        fprintf(stderr, "%s\n", err);
        CHECK(0);
        return;
    }
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_print(&ln, &b);
    /* i = 3*2, j = 2*4 (inexact: guard), reduction innermost but j's inner loop after k: INIT apart */
    CHECK_STR(
        b.data,
        "for z0_0 < 6\n"
        "  for z0_1 < 5\n"
        "    init C i=z0_0 j=z0_1\n"
        "for i0_3 < 3 parallel\n"
        "  for i0_5 < 2\n"
        "    for i0_4 < 2\n"
        "      for i0_2 < 4\n"
        "        for i0_6 < 4 vectorize\n"
        "          update C i=(i0_3 * 2 + i0_4) j=(i0_5 * 4 + i0_6) k=i0_2 if (i0_3 * 2 + i0_4) < 6 && (i0_5 * 4 + "
        "i0_6) < 5 && i0_2 < 4\n");
    StrBuf_done(&b);
    LoopNest_done(&ln);

    /* reduction innermost: INIT and POST around it, in the same body */
    CHECK(Steps_decode("fuse 0 0 2; unroll 0 1", &s, err) == TT_OK);
    if (LoopNest_lower(&ln, &d, &s, err) != TT_OK) {
        fprintf(stderr, "%s\n", err);
        CHECK(0);
        return;
    }
    StrBuf_init(&b);
    LoopNest_print(&ln, &b);
    CHECK_STR(b.data, "for i0_3 < 30\n"
                      "  init C i=(i0_3 / 5) j=(i0_3 % 5)\n"
                      "  for i0_2 < 4 unroll 4\n"
                      "    update C i=(i0_3 / 5) j=(i0_3 % 5) k=i0_2\n");
    StrBuf_done(&b);
    LoopNest_done(&ln);
    TeProgram_delete(g);
}

TEST(compute_at_region_and_inline) {
    TeProgram *g = parse("input A[10]\nB[i < 10] = A[i] * 2\nC[i < 8] = B[i] + B[i + 2]\nD[i < 8] = C[i] + 1\n"
                         "output D\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    Steps s;
    /* C inlined into D; D split 2 x 4; B computed at D's outer loop: region of 4 + 2 */
    LoopNest ln;
    CHECK(Steps_decode("compute_inline 1; split 2 0 4; compute_at 0 2 0", &s, err) == TT_OK);
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_ERR);
    CHECK_STR(err, "step 2 (compute_at 0): stage B is read by C, which is not D nor computed at a loop of it");
    CHECK(Steps_decode("split 1 0 4; compute_at 0 1 0", &s, err) == TT_OK);
    if (LoopNest_lower(&ln, &d, &s, err) != TT_OK) {
        fprintf(stderr, "%s\n", err);
        CHECK(0);
        return;
    }
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_print(&ln, &b);
    CHECK_STR(b.data, "for i1_1 < 2\n"
                      "  alloc B[6]\n"
                      "  for i0_0 < 6\n"
                      "    store B i=(0 + 4 * i1_1) + i0_0\n"
                      "  for i1_2 < 4\n"
                      "    store C i=(i1_1 * 4 + i1_2)\n"
                      "for i2_0 < 8\n"
                      "  store D i=i2_0\n");
    StrBuf_clear(&b);
    LoopNest_emit_c(&ln, "k", &b); /* B is a box of 6 local to the loop, indexed from its base */
    CHECK_CONTAINS(b.data, "float L1[6];");
    CHECK_CONTAINS(b.data, "L1[(x0 - (0 + 4 * i1_1))] = ");
    CHECK_CONTAINS(b.data, "(float)L1[(x1 - (0 + 4 * i1_1))] + (float)L1[((x1 + ((int64_t)2)) - (0 + 4 * i1_1))]");
    StrBuf_done(&b);
    LoopNest_done(&ln);
    TeProgram_delete(g);
}

/* cache_write adds the computing stage at the stage's index; cache_read a
 * copy just before its reader; both computed at a loop of their reader. */
TEST(cache_stages) {
    TeProgram *g = parse(MATMUL);
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    static const char *const CASES[][2] = {
        {"cache_write 0; split 1 0 2; parallel 1 0; compute_at 0 1 1",
         "for i1_2 < 3 parallel\n"
         "  for i1_3 < 2\n"
         "    alloc C.local[1, 5]\n"
         "    for i0_0 < 1\n"
         "      for i0_1 < 5\n"
         "        init C.local i=(0 + 2 * i1_2 + 1 * i1_3) + i0_0 j=i0_1\n"
         "        for i0_2 < 4\n"
         "          update C.local i=(0 + 2 * i1_2 + 1 * i1_3) + i0_0 j=i0_1 k=i0_2\n"
         "    for i1_1 < 5\n"
         "      store C i=(i1_2 * 2 + i1_3) j=i1_1\n"},
        {"cache_write 0; split 1 0 2; split 1 2 5; compute_at 0 1 1; split 0 2 2; reorder 0 2 0 1 3",
         "for i1_2 < 3\n"
         "  for i1_3 < 2\n"
         "    alloc C.local[1, 5]\n"
         "    for z0_0 < 1\n"
         "      for z0_1 < 5\n"
         "        init C.local i=(0 + 2 * i1_2 + 1 * i1_3) + z0_0 j=z0_1\n"
         "    for i0_3 < 2\n"
         "      for i0_0 < 1\n"
         "        for i0_1 < 5\n"
         "          for i0_4 < 2\n"
         "            update C.local i=(0 + 2 * i1_2 + 1 * i1_3) + i0_0 j=i0_1 k=(i0_3 * 2 + i0_4)\n"
         "    for i1_4 < 1\n"
         "      for i1_5 < 5\n"
         "        store C i=(i1_2 * 2 + i1_3) j=(i1_4 * 5 + i1_5)\n"},
        {"cache_write 0; cache_read 0 0 1; split 2 0 2; compute_at 1 2 1; split 1 2 2; compute_at 0 1 2",
         "for i2_2 < 3\n"
         "  for i2_3 < 2\n"
         "    alloc C.local[1, 5]\n"
         "    for i1_0 < 1\n"
         "      for i1_1 < 5\n"
         "        init C.local i=(0 + 2 * i2_2 + 1 * i2_3) + i1_0 j=i1_1\n"
         "        for i1_3 < 2\n"
         "          alloc A.shared[1, 2] shared\n"
         "          for i0_0 < 1\n"
         "            for i0_1 < 2\n"
         "              store A.shared c0=(0 + 1 * i1_0 + 2 * i2_2 + 1 * i2_3) + i0_0 c1=(0 + 2 * i1_3) + i0_1\n"
         "          for i1_4 < 2\n"
         "            update C.local i=(0 + 2 * i2_2 + 1 * i2_3) + i1_0 j=i1_1 k=(i1_3 * 2 + i1_4)\n"
         "    for i2_1 < 5\n"
         "      store C i=(i2_2 * 2 + i2_3) j=i2_1\n"},
        /* a copy computed at a loop of the stage its reader is computed at, around it: B's column of the j loop */
        {"cache_write 0; cache_read 0 1 0; reorder 2 1 0; compute_at 1 2 1; compute_at 0 2 0",
         "for i2_1 < 5\n"
         "  alloc B.local[4, 1]\n"
         "  for i0_0 < 4\n"
         "    for i0_1 < 1\n"
         "      store B.local c0=i0_0 c1=(0 + 1 * i2_1) + i0_1\n"
         "  for i2_0 < 6\n"
         "    alloc C.local[1, 1]\n"
         "    for i1_0 < 1\n"
         "      for i1_1 < 1\n"
         "        init C.local i=(0 + 1 * i2_0) + i1_0 j=(0 + 1 * i2_1) + i1_1\n"
         "        for i1_2 < 4\n"
         "          update C.local i=(0 + 1 * i2_0) + i1_0 j=(0 + 1 * i2_1) + i1_1 k=i1_2\n"
         "    store C i=i2_0 j=i2_1\n"},
        {"cache_read 0 0 0; split 1 2 2; compute_at 0 1 2",
         "for i1_0 < 6\n"
         "  for i1_1 < 5\n"
         "    init C i=i1_0 j=i1_1\n"
         "    for i1_3 < 2\n"
         "      alloc A.local[1, 2]\n"
         "      for i0_0 < 1\n"
         "        for i0_1 < 2\n"
         "          store A.local c0=(0 + 1 * i1_0) + i0_0 c1=(0 + 2 * i1_3) + i0_1\n"
         "      for i1_4 < 2\n"
         "        update C i=i1_0 j=i1_1 k=(i1_3 * 2 + i1_4)\n"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        Steps s;
        LoopNest ln;
        CHECK(Steps_decode(CASES[i][0], &s, err) == TT_OK);
        if (LoopNest_lower(&ln, &d, &s, err) != TT_OK) {
            fprintf(stderr, "%s\n", err);
            CHECK(0);
            continue;
        }
        StrBuf b;
        StrBuf_init(&b);
        LoopNest_print(&ln, &b);
        CHECK_STR(b.data, CASES[i][1]);
        StrBuf_done(&b);
        LoopNest_done(&ln);
    }
    TeProgram_delete(g);
}

typedef struct Bad {
    const char *steps, *msg;
} Bad;

TEST(step_errors) {
    TeProgram *g = parse("input A[6, 4]\nE[i < 6, k < 4] = exp(A[i, k])\nC[i < 6] = sum(E[i, k], k < 4)\noutput C\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    static const Bad BAD[] = {
        {"split 1 0 2; split 1 5 2", "step 1 (split 1): loop 5 does not exist (the stage has 3 loops)"},
        {"split 1 0 4 4", "step 0 (split 1): factors multiply to more than the loop's extent 6"},
        {"split 1 0 0", "step 0 (split 1): factor 0 is not positive"},
        {"reorder 1 1 0 1", "step 0 (reorder 1): 3 positions for 2 loops"},
        {"reorder 1 1 1", "step 0 (reorder 1): loop 1 appears twice"},
        {"fuse 1 0 2", "step 0 (fuse 1): cannot fuse a spatial loop with a reduction loop"},
        {"parallel 1 1", "step 0 (parallel 1): loop 1 is a reduction loop; its steps depend on each other"},
        {"compute_inline 1", "step 0 (compute_inline 1): stage C is an output; only a stage without reduction that is "
                             "not an output inlines"},
        {"split 0 0 2; compute_inline 0", "step 1 (compute_inline 0): stage E was given loops by step 0"},
        {"compute_inline 0; split 0 0 2", "step 1 (split 0): stage E is inlined: it has no loops"},
        {"compute_at 0 1 0; split 0 0 2; compute_inline 0",
         "step 2 (compute_inline 0): stage E was given loops by step 1"},
        {"compute_at 0 1 0; fuse 1 0 2", "step 1 (fuse 1): cannot fuse a spatial loop with a reduction loop"},
        {"compute_at 0 1 1; split 1 1 2", "step 0 (compute_at 0): the loop it computes at was split or fused by a "
                                          "later step"},
        {"split 1 0 3; vectorize 1 1; compute_at 0 1 1",
         "step 2 (compute_at 0): loop 1 of C, at or around this point, is vectorized"},
        {"cache_write 2", "step 0 (cache_write 2): stage 2 does not exist (2 stages)"},
        {"split 1 0 2; cache_write 1", "step 1 (cache_write 1): stage C was given loops by step 0"},
        {"compute_inline 0; cache_write 0", "step 1 (cache_write 0): stage E is inlined"},
        {"compute_at 0 1 0; cache_write 1", "step 1 (cache_write 1): stage E is computed at C (step 0)"},
        {"cache_read 1 0 0", "step 0 (cache_read 1): stage C does not read tensor 0"},
        {"cache_read 1 1 4",
         "step 0 (cache_read 1): memory 4 is not 0 (local), 1 (shared), 2 (padded) or 3 (by phases)"},
        {"cache_read 1 1 3", "step 0 (cache_read 1): stage C reads E at last indices other than a * v + (reduction "
                             "variables) with one spatial variable v and one stride a >= 2: no phases"},
        {"cache_read 1 1 0 2",
         "step 0 (cache_read 1): a third argument is a padded copy's (memory 2) rounding, at least 1"},
        {"cache_read 1 1 2",
         "step 0 (cache_read 1): stage C reads tensor E through no padding `if(c, E[..], v)` (v a number)"},
        {"cache_write 1; cache_write 3", "step 1 (cache_write 3): stage 3 does not exist (3 stages)"},
        {"cache_write 1; compute_at 1 2 1", "step 1 (compute_at 1): loop 1 does not exist (the stage has 1 loops)"},
        {"compute_at 0 0 0", "step 0 (compute_at 0): target stage 0 is not another stage"},
        {"vectorize 7 0", "step 0 (vectorize 7): stage 7 does not exist (2 stages)"},
        {"bind 1 1 3", "step 0 (bind 1): loop 1 is a reduction loop"},
        {"bind 1 0 9", "step 0 (bind 1): thread index 9 is not 0..8 (blockIdx.x/y/z, threadIdx.x/y/z, vthread.x/y/z)"},
        {"storage_align 1 0 4 1",
         "step 0 (storage_align 1): stage C has no buffer of its own: align a cache stage or one computed at a loop"},
        {"cache_write 1; storage_align 1 1 4 1",
         "step 1 (storage_align 1): dimension 1 does not exist (C.local has 1)"},
        {"cache_write 1; storage_align 1 0 4 4",
         "step 1 (storage_align 1): factor 4 and offset 4: need factor >= 1, 0 <= offset < factor"},
        {"cache_read 1 1 1; bind 1 0 3", "step 1 (bind 1): stage E.shared fills shared memory with every thread of the "
                                         "block: its loops are not bound"},
        {"split 1 0 2; bind 1 0 0; bind 1 1 0", "step 2 (bind 1): a block index is bound twice"},
        {"cache_write 1; compute_at 0 2 0",
         "step 1 (compute_at 0): stage E is read by C.local, which is not C nor computed at a loop of it"},
        {"cache_write 1; split 2 0 2; compute_at 1 2 0; compute_at 0 2 1",
         "step 3 (compute_at 0): its reader C.local is not computed inside this loop of C"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        Steps s;
        LoopNest ln;
        CHECK(Steps_decode(BAD[i].steps, &s, err) == TT_OK);
        CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_ERR);
        CHECK_STR(err, BAD[i].msg);
    }
    TeProgram_delete(g);
}

/* Replaying a schedule, or its text read back, gives the same loop nest. */
TEST(replay_is_deterministic) {
    static const char *const SRC[] = {
        MATMUL,
        "input X[3, 10]\nM[i < 3] = max_over(X[i, j], j < 10)\nE[i < 3, j < 10] = exp(X[i, j] - M[i])\n"
        "S[i < 3] = sum(E[i, j], j < 10)\nY[i < 3, j < 10] = E[i, j] / S[i]\noutput Y\n",
        "input X[4, 6]\ninput W[5, 6]\nD[i < 4, j < 5] = sum(X[i, k] * W[j, k], k < 6)\n"
        "Y[i < 4, j < 5] = max(D[i, j], 0)\noutput Y\n",
    };
    Rng rng;
    Rng_seed(&rng, 7);
    int lowered = 0;
    for (size_t e = 0; e < sizeof SRC / sizeof *SRC; e++) {
        TeProgram *g = parse(SRC[e]);
        TeDag d;
        char err[TT_ERRLEN] = "";
        CHECK(g && TeDag_build(&d, g, err) == TT_OK);
        if (!g) continue;
        for (int k = 0; k < 40; k++) {
            Steps s, t;
            TeSchedule_sample(&d, &rng, 0, &s);
            StrBuf text, a, b;
            StrBuf_init(&text);
            StrBuf_init(&a);
            StrBuf_init(&b);
            Steps_encode(&s, &text);
            LoopNest l1, l2;
            if (LoopNest_lower(&l1, &d, &s, err) != TT_OK) {
                fprintf(stderr, "sample '%s' does not lower: %s\n", text.data, err);
                CHECK(0);
                StrBuf_done(&text), StrBuf_done(&a), StrBuf_done(&b);
                continue;
            }
            CHECK(Steps_decode(text.data, &t, err) == TT_OK);
            CHECK(LoopNest_lower(&l2, &d, &t, err) == TT_OK);
            LoopNest_print(&l1, &a);
            LoopNest_print(&l2, &b);
            CHECK_STR(a.data, b.data);
            lowered++;
            LoopNest_done(&l1);
            LoopNest_done(&l2);
            StrBuf_done(&text), StrBuf_done(&a), StrBuf_done(&b);
        }
        TeProgram_delete(g);
    }
    CHECK_EQ_INT(lowered, 120);
}

/* GPU code: bound loops become thread indices; a stage computed at a loop has a private buffer. */
TEST(gpu_emit) {
    TeProgram *g = parse(MATMUL);
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    Steps s;
    LoopNest ln;
    CHECK(Steps_decode("split 0 1 4; bind 0 0 0; bind 0 2 3", &s, err) == TT_OK);
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_OK);
    StrBuf b;
    StrBuf_init(&b);
    TeLaunch l[TE_MAX_LAUNCHES];
    int n = 0;
    CHECK(LoopNest_emit_gpu(&ln, 1, "k", &b, l, &n, err) == TT_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(l[0].grid[0], 6);
    CHECK_EQ_INT(l[0].block[0], 4);
    CHECK_CONTAINS(b.data, "extern \"C\" __global__ void k0(float *__restrict__ T0");
    CHECK_CONTAINS(b.data, "const long long i0_0 = (long long)blockIdx.x;");
    CHECK_CONTAINS(b.data, "const long long i0_4 = (long long)threadIdx.x;");
    StrBuf_clear(&b);
    CHECK(LoopNest_emit_gpu(&ln, 0, "k", &b, l, &n, err) == TT_OK);
    CHECK_CONTAINS(b.data, "__kernel void k0(__global float *restrict T0");
    CHECK_CONTAINS(b.data, "get_local_id(0)");
    StrBuf_done(&b);
    LoopNest_done(&ln);
    TeProgram_delete(g);

    g = parse("input A[10]\nB[i < 10] = A[i] * 2\nC[i < 8] = B[i] + B[i + 2]\noutput C\n");
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK(Steps_decode("split 1 0 4; compute_at 0 1 0", &s, err) == TT_OK);
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_OK);
    StrBuf_init(&b);
    CHECK(LoopNest_emit_gpu(&ln, 0, "k", &b, l, &n, err) == TT_OK);
    CHECK_CONTAINS(b.data, "    float L1[6];");
    StrBuf_done(&b);
    LoopNest_done(&ln);
    TeProgram_delete(g);

    /* A in shared memory, rows padded to 5: the block's threads fill it in turn between barriers */
    g = parse(MATMUL);
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK(Steps_decode("cache_read 0 0 1; split 1 0 3; bind 1 0 0; bind 1 1 3; compute_at 0 1 0; storage_align 0 0 4 1",
                       &s, err) == TT_OK);
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_OK);
    StrBuf_init(&b);
    LoopNest_print(&ln, &b);
    CHECK_CONTAINS(b.data, "  alloc A.shared[3, 4] stride0=5 shared\n");
    StrBuf_clear(&b);
    CHECK(LoopNest_emit_gpu(&ln, 0, "k", &b, l, &n, err) == TT_OK);
    CHECK_EQ_INT(l[0].shared_floats, 15);
    CHECK_CONTAINS(b.data, "    __local float L3[15];\n");
    CHECK_CONTAINS(b.data, "tt_tid = get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * "
                           "get_local_id(2)), tt_nt = 3;");
    CHECK_CONTAINS(b.data, "barrier(CLK_LOCAL_MEM_FENCE);\n        long tt_c3 = 0;");
    CHECK_CONTAINS(b.data, "if (tt_c3++ % tt_nt == tt_tid");
    CHECK_CONTAINS(b.data, "L3[(x3 - (0 + 3 * i1_3)) * 5 + (x4)]");
    StrBuf_clear(&b);
    CHECK(LoopNest_emit_gpu(&ln, 1, "k", &b, l, &n, err) == TT_OK);
    CHECK_CONTAINS(b.data, "    __shared__ float L3[15];\n");
    CHECK_CONTAINS(b.data, "__syncthreads();");
    StrBuf_done(&b);
    LoopNest_done(&ln);
    TeProgram_delete(g);
}

/* In C, && and || of conditions that are safe to evaluate anywhere become & and | (no branch: a padding test
 * vectorizes); a side with an access or an integer division keeps the short circuit. Parallel loops nested
 * with nothing between them are one collapsed OpenMP loop. */
TEST(conditions_and_collapsed_loops_in_c) {
    TeProgram *g = parse("input X[8]\nY[i < 10, j < 4] = if((i >= 1 && i < 9) || j == 2, 1, 0) + "
                         "if(i >= 1 && i < 9, X[i - 1], 0) + if(j > 0 && 8 / j > 3, 1, 0)\noutput Y\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    Steps s;
    CHECK(Steps_decode("parallel 0 0; parallel 0 1", &s, err) == TT_OK);
    LoopNest ln;
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_OK);
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_emit_c(&ln, "k", &b);
    CHECK_CONTAINS(b.data, "#pragma omp parallel for collapse(2)\n");
    CHECK(strstr(b.data, "#pragma omp parallel for\n") == NULL);
    CHECK_CONTAINS(b.data, "(((x0 >= ((int64_t)1)) & (x0 < ((int64_t)9))) | (x1 == ((int64_t)2)))");
    CHECK_CONTAINS(b.data, "((x1 > ((int64_t)0)) && (tt_fdiv(((int64_t)8), x1) > ((int64_t)3)))");
    StrBuf_done(&b);
    LoopNest_done(&ln);
    TeProgram_delete(g);
}

/* A constant tensor is an array of the code (C: static const; OpenCL: __constant, its parameter unused), and
 * a sum's step whose term has a constant factor runs only where that factor is not zero. */
TEST(constant_tensor_emission) {
    TeProgram *g = parse("const B[2, 3] = [4, 0, -5, 0.5, 1, 0]\ninput X[3, 8]\n"
                         "Y[i < 2, j < 8] = sum(B[i, k] * X[k, j] * B[i, 2 - k], k < 3)\noutput Y\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    Steps s = {0};
    LoopNest ln;
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_OK);
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_emit_c(&ln, "k", &b);
    CHECK_CONTAINS(b.data, "    static const float T0[6] = {4.0f, 0.0f, -5.0f, 0.5f, 1.0f, 0.0f};\n");
    CHECK(strstr(b.data, "t[0]") == NULL);
    CHECK_CONTAINS(b.data, "float *restrict T1 = t[1];");
    CHECK_CONTAINS(
        b.data,
        "if (T0[((x0) * 3 + x2)] != 0.0f && T0[((x0) * 3 + (((int64_t)2) - x2))] != 0.0f) tt_acc3 = tt_acc3 + ");
    StrBuf_clear(&b);
    TeLaunch l[TE_MAX_LAUNCHES];
    int n = 0;
    CHECK(LoopNest_emit_gpu(&ln, 0, "k", &b, l, &n, err) == TT_OK);
    CHECK_CONTAINS(b.data, "__global float *restrict tt_unused0, __global float *restrict T1");
    CHECK_CONTAINS(b.data, "    __constant float T0[6] = {4.0f, 0.0f, -5.0f, 0.5f, 1.0f, 0.0f};\n");
    StrBuf_done(&b);
    LoopNest_done(&ln);
    TeProgram_delete(g);
}

/* An unrolled loop whose variable reaches a constant's index is written out, one block per step with the
 * variable a number, so that the compiler reads the constant's elements as numbers before it vectorizes the loop
 * around them: the zero terms' tests fold away (no compare is left in the code), so do the products by 1, and
 * the result is right. */
TEST(loops_over_a_constant_are_written_out) {
    StrBuf b;
    StrBuf_init(&b);
    if (!emit_c_of("const B[2, 3] = [4, 0, -5, 0, 1, 1]\ninput X[3, 8]\n"
                   "Y[i < 2, j < 8] = sum(B[i, k] * X[k, j], k < 3)\noutput Y\n",
                   "reorder 0 1 0 2; vectorize 0 0; unroll 0 1; unroll 0 2", &b)) {
        StrBuf_done(&b);
        return;
    }
    CHECK_CONTAINS(b.data, "{ const int64_t i0_0 = 1;\n");
    CHECK_CONTAINS(b.data, "{ const int64_t i0_2 = 2;\n");
    CHECK(strstr(b.data, "for (int64_t i0_2") == NULL);
    Built bu;
    build_c(b.data, &bu);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cc %s -S -o - %s | grep -qE 'vcmp|comis'", TT_CPU_CFLAGS, bu.c_path);
    CHECK(system(cmd) != 0);
    /* 4 x0 - 5 x2 and x1 + x2 over the 8 lanes of j: three packed operations (a multiply, a fused multiply-add,
     * an add), the accumulators' start (-0, the identity of addition) folded too */
    snprintf(cmd, sizeof cmd, "test $(cc %s -S -o - %s | grep -cE '\\bv(add|sub|mul|f[a-z]*)[0-9]*ps\\b') -le 3",
             TT_CPU_CFLAGS, bu.c_path);
    CHECK_EQ_INT(system(cmd), 0);
    void (*k)(float **) = bu.k;
    float x[24], y[16], *t[3] = {NULL, x, y};
    for (int i = 0; i < 24; i++)
        x[i] = (float)(i % 7) - 2.5f;
    if (k) k(t);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 8; j++) {
            float want = i == 0 ? 4 * x[j] - 5 * x[16 + j] : x[8 + j] + x[16 + j];
            CHECK(y[i * 8 + j] == want);
        }
    built_done(&bu);
    StrBuf_done(&b);
}

/* A cpu buffer beyond TE_STACK_FLOATS (a cache stage at root of 160 x 160) is on the heap, aligned to a cache
 * line, and freed at the end of its block; the result is right. */
TEST(heap_buffer_is_aligned) {
    StrBuf b;
    StrBuf_init(&b);
    if (!emit_c_of("input A[160, 8]\ninput B[8, 160]\nC[i < 160, j < 160] = sum(A[i, k] * B[k, j], k < 8)\noutput C\n",
                   "cache_write 0; vectorize 0 1", &b)) {
        StrBuf_done(&b);
        return;
    }
    CHECK_CONTAINS(b.data, "float *L3 = (float *)aligned_alloc(64, 102400);\n");
    CHECK_CONTAINS(b.data, "free(L3);\n");
    Built bu;
    build_c(b.data, &bu);
    float *a = malloc(sizeof(float) * 160 * 8), *bb = malloc(sizeof(float) * 8 * 160),
          *c = malloc(sizeof(float) * 160 * 160);
    float *t[3] = {a, bb, c};
    for (int i = 0; i < 160 * 8; i++)
        a[i] = (float)(i % 5) - 2, bb[i] = (float)(i % 3) - 1;
    if (bu.k) bu.k(t);
    for (int i = 0; i < 160; i += 53)
        for (int j = 0; j < 160; j += 37) {
            float want = 0;
            for (int k = 0; k < 8; k++)
                want += a[i * 8 + k] * bb[k * 160 + j];
            CHECK(c[i * 160 + j] == want);
        }
    free(a);
    free(bb);
    free(c);
    built_done(&bu);
    StrBuf_done(&b);
}

/* A vectorized loop's statement: what it computes from values that do not change along the loop (a row's
 * rsqrt, a divisor) is computed once before the loop (before the outermost loop of a chain around it that it
 * does not depend on), a division by such a value is a product with its
 * reciprocal; nothing is hoisted out of a conditional's branches, from a guarded statement, or when it
 * varies. */
TEST(invariants_before_vectorized_loop) {
    TeProgram *g = parse("input X[4, 6]\ninput V[4]\ninput S[4]\n"
                         "Y[i < 4, j < 6] = X[i, j] * rsqrt(V[i] + 1) / S[i] + if(i > 0, X[i, j] / S[i - 1], 0) "
                         "+ exp(X[i, j]) / X[i, j]\noutput Y\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    Steps s;
    CHECK(Steps_decode("parallel 0 0; vectorize 0 1", &s, err) == TT_OK);
    LoopNest ln;
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_OK);
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_emit_c(&ln, "k", &b);
    CHECK_CONTAINS(b.data,
                   "        {\n"
                   "            const int64_t x0 = i0_0;\n"
                   "            const float tt_h0 = 1.0f / (float)T2[(x0)];\n"
                   "            const float tt_h1 = (1.0f / sqrtf((float)((float)T1[(x0)] + (float)((int64_t)1))));\n"
                   "            #pragma omp simd\n");
    CHECK_CONTAINS(b.data, "((float)((float)((float)T0[((x0) * 6 + x1)] * (float)tt_h1) * tt_h0)");
    CHECK_CONTAINS(b.data, "((float)T0[((x0) * 6 + x1)] / (float)T2[((x0 - ((int64_t)1)))])"); /* in a branch */
    CHECK_CONTAINS(b.data, "((float)tt_expf((float)T0[((x0) * 6 + x1)]) / (float)T0[((x0) * 6 + x1)])"); /* varies */
    StrBuf_done(&b);
    LoopNest_done(&ln);
    /* with the row split in two loops, before the outer one: the values are computed once per row */
    CHECK(Steps_decode("split 0 1 2; vectorize 0 2", &s, err) == TT_OK && LoopNest_lower(&ln, &d, &s, err) == TT_OK);
    StrBuf_init(&b);
    LoopNest_emit_c(&ln, "k", &b);
    CHECK_CONTAINS(b.data,
                   "            const float tt_h1 = (1.0f / sqrtf((float)((float)T1[(x0)] + (float)((int64_t)1))));\n"
                   "            for (int64_t i0_2 = 0; i0_2 < 3; i0_2++) {\n"
                   "                #pragma omp simd\n");
    StrBuf_done(&b);
    LoopNest_done(&ln);
    /* not before a loop that is not vectorized, nor around a guarded statement (a split that does not divide) */
    const char *plain[] = {"parallel 0 0", "split 0 1 4; vectorize 0 2"};
    for (int i = 0; i < 2; i++) {
        CHECK(Steps_decode(plain[i], &s, err) == TT_OK && LoopNest_lower(&ln, &d, &s, err) == TT_OK);
        StrBuf_init(&b);
        LoopNest_emit_c(&ln, "k", &b);
        CHECK(strstr(b.data, "tt_h") == NULL);
        StrBuf_done(&b);
        LoopNest_done(&ln);
    }
    TeProgram_delete(g);
}

/* cache_read S T 2: a padded copy of T (zeros around it) that S reads without its padding tests; only where
 * each test holds exactly when its index is inside T. */
TEST(padded_copy) {
    static const char *const SRC =
        "input X[2, 6]\ninput W[3]\nY[c < 2, i < 6] = sum(if(i + r >= 1 && i + r < 7, X[c, i + r - 1], 0) * W[r], "
        "r < 3)\noutput Y\n";
    TeProgram *g = parse(SRC);
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    int64_t lo[TE_MAX_DIMS], shape[TE_MAX_DIMS];
    double fill = 1;
    CHECK(LoopNest_padded(&d, 0, 0, lo, shape, &fill, NULL));
    CHECK(lo[0] == 0 && shape[0] == 2 && lo[1] == 1 && shape[1] == 8 && fill == 0);
    CHECK(!LoopNest_padded(&d, 0, 1, lo, shape, &fill, err)); /* W is read without a test */
    CHECK_STR(err, "stage Y reads tensor W through no padding `if(c, W[..], v)` (v a number)");
    Steps s;
    CHECK(Steps_decode("cache_read 0 0 2", &s, err) == TT_OK);
    LoopNest ln;
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_OK);
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_print(&ln, &b);
    CHECK_STR(b.data, "alloc X.pad[2, 8]\n"
                      "for i0_0 < 2\n"
                      "  for i0_1 < 8\n"
                      "    store X.pad c0=i0_0 c1=i0_1\n"
                      "for i1_0 < 2\n"
                      "  for i1_1 < 6\n"
                      "    init Y c=i1_0 i=i1_1\n"
                      "    for i1_2 < 3\n"
                      "      update Y c=i1_0 i=i1_1 r=i1_2\n");
    StrBuf_clear(&b);
    LoopNest_emit_c(&ln, "k", &b);
    /* the copy tests its own index; Y reads it at i + r - 1 + 1 with no test */
    CHECK_CONTAINS(b.data, "(x4 >= ((int64_t)1)) & (x4 < ((int64_t)7))");
    CHECK_CONTAINS(b.data, "L3[(x0) * 8 + ((((x1 + x2) - ((int64_t)1)) + ((int64_t)1)))]");
    CHECK(strstr(b.data, "(x1 + x2) >= ") == NULL);
    StrBuf_done(&b);
    LoopNest_done(&ln);
    TeProgram_delete(g);
    /* a test that leaves out an element inside X (i + r < 6), or two values outside X: no padded copy */
    static const char *const NOT[][2] = {
        {"input X[6]\ninput W[3]\nY[i < 6] = sum(if(i + r >= 1 && i + r < 6, X[i + r - 1], 0) * W[r], r < 3)\n"
         "output Y\n",
         "step 0 (cache_read 0): stage Y reads tensor X through a test `if(c, X[..], v)` whose c is not shown to hold "
         "exactly where the index is inside X"},
        {"input X[6]\nY[i < 6] = sum(if(i + r >= 1 && i + r < 7, X[i + r - 1], 0) + "
         "if(i + r >= 1 && i + r < 7, X[i + r - 1], -1), r < 3)\noutput Y\n",
         "step 0 (cache_read 0): stage Y reads tensor X padded with 0 and with -1: a padded copy holds one value"}};
    for (size_t i = 0; i < sizeof NOT / sizeof *NOT; i++) {
        g = parse(NOT[i][0]);
        CHECK(g && TeDag_build(&d, g, err) == TT_OK);
        if (!g) continue;
        CHECK(!LoopNest_padded(&d, 0, 0, lo, shape, &fill, NULL));
        CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_ERR);
        CHECK_STR(err, NOT[i][1]);
        TeProgram_delete(g);
    }
}

/* Max pooling pads with -3.4e38: the padded copy holds X inside a border of -3.4e38f, and the C code of the
 * pooling over it (some windows wholly in the border) gives the interpreter's bits. */
TEST(padded_copy_of_max_pool) {
    TeProgram *g = parse("input X[2, 7, 6]\nY[c < 2, y < 5, x < 4] = max_over(if(2 * y + r >= 3 && 2 * y + r < 10 && "
                         "2 * x + s >= 1 && 2 * x + s < 7, X[c, 2 * y + r - 3, 2 * x + s - 1], -3.4e38), r < 3, "
                         "s < 3)\noutput Y\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    int64_t lo[TE_MAX_DIMS], shape[TE_MAX_DIMS];
    double fill = 0;
    CHECK(LoopNest_padded(&d, 0, 0, lo, shape, &fill, NULL));
    CHECK(fill == -3.4e38 && lo[1] == 3 && shape[1] == 11 && lo[2] == 1 && shape[2] == 9);
    Steps s;
    CHECK(Steps_decode("cache_read 0 0 2; vectorize 1 2", &s, err) == TT_OK);
    LoopNest ln;
    if (LoopNest_lower(&ln, &d, &s, err) != TT_OK) {
        fprintf(stderr, "%s\n", err);
        CHECK(0);
        TeProgram_delete(g);
        return;
    }
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_emit_c(&ln, "k", &b);
    LoopNest_done(&ln);
    /* the copy's border, and nowhere else: Y's reads have no test left */
    const char *border_value = strstr(b.data, " : (float)-3.4e+38f)");
    CHECK(border_value && !strstr(border_value + 20, "-3.4e+38f"));
    /* the window's maximum in a register variable (the interpreter's step), stored once */
    const char *update = strstr(b.data, " = tt_maxstep(tt_acc");
    CHECK(update && !strchr(update, '?'));
    CHECK_CONTAINS(b.data, " = (-INFINITY);\n");
    CHECK_CONTAINS(b.data, "] = tt_acc");
    /* build it as the cpu target does and compare with the interpreter, bit for bit */
    Built bu;
    build_c(b.data, &bu);
    StrBuf_done(&b);
    void (*k)(float **) = bu.k;
    double x[84], y[40];
    float xf[84], yf[40];
    for (int i = 0; i < 84; i++)
        xf[i] = (float)(x[i] = (double)((i * 37) % 23) - 30.25);
    double *values[2] = {x, y};
    float *bufs[2] = {xf, yf};
    TeProgram_eval(g, values);
    if (k) k(bufs);
    int same = 1, border = 0;
    for (int i = 0; i < 40; i++) {
        float want = (float)y[i];
        same &= memcmp(&want, &yf[i], sizeof want) == 0;
        border += yf[i] == -3.4e38f;
    }
    CHECK(same);
    CHECK_EQ_INT(border, 8); /* y = 0 reads only the border: 2 channels x 4 columns */
    built_done(&bu);
    TeProgram_delete(g);
}

/* cache_read S T 3: a copy of T by phases (position p of its last dimension at (p mod 2, p div 2)), here of max
 * pooling's padded copy (its last extent rounded to 2 phases): Y reads it at unit stride along x, and gives the
 * interpreter's bits. */
TEST(copy_by_phases_of_max_pool) {
    TeProgram *g = parse("input X[2, 7, 6]\nY[c < 2, y < 5, x < 4] = max_over(if(2 * y + r >= 3 && 2 * y + r < 10 && "
                         "2 * x + s >= 1 && 2 * x + s < 7, X[c, 2 * y + r - 3, 2 * x + s - 1], -3.4e38), r < 3, "
                         "s < 3)\noutput Y\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    CHECK_EQ_INT(LoopNest_phases(&d, 0, 0), 2);
    Steps s;
    LoopNest ln;
    /* the padded copy's last extent is 9: no 2 phases of it unless rounded to 10 */
    CHECK(Steps_decode("cache_read 0 0 2; cache_read 1 2 3", &s, err) == TT_OK);
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_ERR);
    CHECK_STR(err, "step 1 (cache_read 1): the last extent 9 of X.pad is no multiple of its 2 phases");
    CHECK(Steps_decode("cache_read 0 0 2 2; cache_read 1 2 3; unroll 2 3; unroll 2 4; vectorize 2 2", &s, err) ==
          TT_OK);
    if (LoopNest_lower(&ln, &d, &s, err) != TT_OK) {
        fprintf(stderr, "%s\n", err);
        CHECK(0);
        TeProgram_delete(g);
        return;
    }
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_print(&ln, &b);
    CHECK_CONTAINS(b.data, "alloc X.pad[2, 11, 10]\n");
    CHECK_CONTAINS(b.data, "alloc X.pad.ph[2, 11, 2, 5]\n");
    StrBuf_clear(&b);
    LoopNest_emit_c(&ln, "k", &b);
    LoopNest_done(&ln);
    /* the copy reads X.pad at 2 * q + phase; Y reads the copy at (s mod 2, x + s div 2) */
    CHECK_CONTAINS(b.data, "] = L2[(x8) * 110 + (x9) * 10 + (((((int64_t)2) * x11) + x10))];");
    CHECK_CONTAINS(b.data, "(tt_fmod((x4 + ((int64_t)0)), ((int64_t)2))) * 5 + ((x2 + tt_fdiv((x4 + ((int64_t)0)), "
                           "((int64_t)2))))]");
    float x[84], y[40];
    double xd[84], yd[40];
    for (int i = 0; i < 84; i++)
        x[i] = (float)(xd[i] = (double)((i * 37) % 23) - 11.5);
    Built bu;
    build_c(b.data, &bu);
    StrBuf_done(&b);
    void (*k)(float **) = bu.k;
    double *values[2] = {xd, yd};
    float *bufs[2] = {x, y};
    TeProgram_eval(g, values);
    if (k) k(bufs);
    int same = 1;
    for (int i = 0; i < 40; i++) {
        float want = (float)yd[i];
        same &= memcmp(&want, &y[i], sizeof want) == 0;
    }
    CHECK(same);
    built_done(&bu);
    TeProgram_delete(g);
}

/* rfactor: the split reduction's inner part is a spatial axis of Y.rf (vectorized here); Y sums Y.rf and keeps
 * the rest of its value (the / 8). */
TEST(rfactor_stage) {
    TeProgram *g = parse("input X[2, 8]\ninput W[3, 8]\nY[i < 2, j < 3] = sum(X[i, k] * W[j, k], k < 8) / 8\n"
                         "output Y\n");
    TeDag d;
    char err[TT_ERRLEN] = "";
    CHECK(g && TeDag_build(&d, g, err) == TT_OK);
    if (!g) return;
    Steps s;
    CHECK(Steps_decode("rfactor 0 0 4; vectorize 0 2", &s, err) == TT_OK);
    LoopNest ln;
    CHECK(LoopNest_lower(&ln, &d, &s, err) == TT_OK);
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_print(&ln, &b);
    CHECK_STR(b.data, "alloc Y.rf[2, 3, 4]\n"
                      "for i0_0 < 2\n"
                      "  for i0_1 < 3\n"
                      "    for i0_2 < 4 vectorize\n"
                      "      init Y.rf i=i0_0 j=i0_1 k.i=i0_2\n"
                      "      for i0_3 < 2\n"
                      "        update Y.rf i=i0_0 j=i0_1 k.i=i0_2 k.o=i0_3\n"
                      "for i1_0 < 2\n"
                      "  for i1_1 < 3\n"
                      "    init Y i=i1_0 j=i1_1\n"
                      "    for i1_2 < 4\n"
                      "      update Y i=i1_0 j=i1_1 k.r=i1_2\n"
                      "    post Y i=i1_0 j=i1_1\n");
    StrBuf_clear(&b);
    LoopNest_emit_c(&ln, "k", &b);
    CHECK_CONTAINS(b.data, "T0[((x0) * 8 + ((x3 * ((int64_t)4)) + x4))]"); /* k = k.o * 4 + k.i */
    CHECK_CONTAINS(b.data, "((float)T2[((x0) * 3 + x1)] / (float)((int64_t)8))");
    StrBuf_done(&b);
    LoopNest_done(&ln);
    /* Y.rf can be computed at Y's loops, like any producer */
    CHECK(Steps_decode("rfactor 0 0 4; compute_at 0 1 1", &s, err) == TT_OK);
    if (LoopNest_lower(&ln, &d, &s, err) == TT_OK)
        LoopNest_done(&ln);
    else
        CHECK(0);
    static const char *const BAD[][2] = {
        {"rfactor 0 0 3", "step 0 (rfactor 0): factor 3 does not divide the axis' extent 8"},
        {"rfactor 0 1 2", "step 0 (rfactor 0): reduction axis 1 does not exist (Y has 1)"},
        {"split 0 0 2; rfactor 0 0 2", "step 1 (rfactor 0): stage Y was given loops by step 0"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        CHECK(Steps_decode(BAD[i][0], &s, err) == TT_OK);
        CHECK(LoopNest_lower(&ln, &d, &s, err) != TT_OK);
        CHECK_STR(err, BAD[i][1]);
    }
    TeProgram_delete(g);
}

/* exp of a value minus the max that takes it in (softmax's `exp(X[i, j] - Mx[i])`) is at most 0 or NaN: C computes
 * it as tt_expf_le0, without the overflow branch; within 1.5 ulp where e^x is a normal float, 0 below 2^-126 and
 * for -inf, NaN kept. Other differences keep tt_expf. */
TEST(exp_of_x_minus_its_max) {
    enum { N = 4096 };
    static const struct {
        const char *body; /* Mx, then E */
        int le0;
    } CASES[] = {
        {"Mx[i < 2] = max_over(X[i, j], j < 4096)\nE[i < 2, j < 4096] = exp(X[i, j] - Mx[i])", 1},
        {"Mx[i < 2] = min_over(X[i, j], j < 4096)\nE[i < 2, j < 4096] = exp(X[i, j] - Mx[i])", 0},
        {"Mx[i < 2] = max_over(X[i, j], j < 4096)\nE[i < 2, j < 4096] = exp(Mx[i] - X[i, j])", 0},
        {"Mx[i < 2] = max_over(X[i, j], j < 4096)\nE[i < 2, j < 4096] = exp(X[i, j] - Mx[1 - i])", 0},
        {"Mx[i < 2] = max_over(X[i, j], j < 2048)\nE[i < 2, j < 4096] = exp(X[i, j] - Mx[i])", 0},
        {"Mx[i < 2] = max_over(X[i, j], j < 4096) + 1\nE[i < 2, j < 4096] = exp(X[i, j] - Mx[i])", 0},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++) {
        char text[256], err[TT_ERRLEN] = "";
        snprintf(text, sizeof text, "input X[2, %d]\n%s\noutput E\n", N, CASES[c].body);
        TeProgram *g = parse(text);
        CHECK(g != NULL);
        if (!g) continue;
        CHECK_EQ_INT(LoopNest_expAtMost0(g, g->tensors[2].body), CASES[c].le0);
        static TeDag d;
        Steps s;
        LoopNest ln;
        CHECK(TeDag_build(&d, g, err) == TT_OK && Steps_decode("vectorize 1 1", &s, err) == TT_OK &&
              LoopNest_lower(&ln, &d, &s, err) == TT_OK);
        StrBuf b;
        StrBuf_init(&b);
        LoopNest_emit_c(&ln, "k", &b);
        LoopNest_done(&ln);
        CHECK_EQ_INT(strstr(b.data, "= tt_expf_le0(") != NULL, CASES[c].le0);
        if (c == 0) { /* row 0 from -200 to 0 (flushed below -87.34), row 1 with NaN and -inf */
            Built k;
            build_c(b.data, &k);
            float *x = malloc(sizeof(float) * 2 * N), mx[2] = {0}, *y = malloc(sizeof(float) * 2 * N);
            for (int i = 0; i < 2 * N; i++)
                x[i] = i < N ? (float)(-200.0 * (N - 1 - i) / (N - 1)) : (float)((i - N) % 13) - 3.0f;
            x[N + 5] = NAN, x[N + 6] = -INFINITY;
            if (k.k) k.k((float *[]){x, mx, y});
            double worst = 0;
            int wrong = 0, flushed = 0;
            for (int i = 0; k.k && i < 2 * N; i++) {
                if (i == N + 5 || i == N + 6) continue;
                double e = exp((double)(x[i] - (i < N ? 0.0f : 9.0f)));
                if (e < 1.1754943508222875e-38) {
                    flushed += y[i] == 0.0f, wrong += y[i] != 0.0f;
                    continue;
                }
                double u = fabs(y[i] - e) / ldexp(1, ilogb(e) - 23);
                if (!(u <= worst)) worst = u;
            }
            if (k.k) wrong += !isnan(y[N + 5]) + (y[N + 6] != 0.0f) + (y[N - 1] != 1.0f);
            CHECK(worst <= 1.5);
            CHECK(flushed > 0);
            CHECK_EQ_INT(wrong, 0);
            free(x);
            free(y);
            built_done(&k);
        }
        StrBuf_done(&b);
        TeProgram_delete(g);
    }
}

/* A sum over one unrolled loop whose body is its one step (an rfactor stage's lane sum) is written as an omp simd
 * reduction (the compiler adds the lanes as a tree); a max, or a sum's loop left rolled, is not. */
TEST(unrolled_lane_sum_is_a_simd_reduction) {
    static const char *const CASES[][3] = {
        {"input X[2, 8]\ninput W[3, 8]\nY[i < 2, j < 3] = sum(X[i, k] * W[j, k], k < 8)\noutput Y\n",
         "rfactor 0 0 4; unroll 1 2", "1"},
        {"input X[2, 8]\ninput W[3, 8]\nY[i < 2, j < 3] = sum(X[i, k] * W[j, k], k < 8)\noutput Y\n", "rfactor 0 0 4",
         "0"},
        {"input X[3, 8]\nM[i < 3] = max_over(X[i, k], k < 8)\noutput M\n", "rfactor 0 0 4; unroll 1 1", "0"},
    };
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++) {
        StrBuf b;
        StrBuf_init(&b);
        emit_c_of(CASES[c][0], CASES[c][1], &b);
        int simd = strstr(b.data, "#pragma omp simd reduction(+ : tt_acc") != NULL;
        CHECK_EQ_INT(simd, CASES[c][2][0] - '0');
        if (CASES[c][2][0] == '1') CHECK(!strstr(b.data, "#pragma GCC unroll 4"));
        StrBuf_done(&b);
    }
}

/* A register tile (rows unrolled around a vectorized loop, inside the reduction loop) that reads an operand
 * along the vector axis but not along the rows (B.local[k, j]) turns on gcc's pressure-aware pre-RA scheduler:
 * compiled so, the tile loads each register of that operand once per step of k, not once per row (no FMA reads
 * memory: gcc folds the load into each FMA otherwise), and computes the product right. A tile whose rows are a
 * loop, or with an unrolled reduction between its rows and its reduction loop (a window), does not. */
#define PRAGMA_SCHED "#pragma GCC optimize(\"schedule-insns\", \"sched-pressure\")"
TEST(register_tile_keeps_its_vector_operand) {
    static const char *const MM = "input A[16, 32]\ninput B[32, 32]\n"
                                  "C[i < 16, j < 32] = sum(A[i, k] * B[k, j], k < 32)\noutput C\n";
    static const char *const TILE = "cache_write 0; cache_read 0 1 0; split 2 1 1 16; split 2 0 2 4; "
                                    "reorder 2 0 3 1 4 2 5; vectorize 2 5; compute_at 1 2 3; split 1 2 1; "
                                    "reorder 1 2 3 0 1; unroll 1 2; vectorize 1 3; compute_at 0 2 1; vectorize 0 1";
    static const char *const NOT[] = {
        /* the rows a loop */
        "cache_write 0; cache_read 0 1 0; split 2 1 1 16; split 2 0 2 4; reorder 2 0 3 1 4 2 5; vectorize 2 5; "
        "compute_at 1 2 3; split 1 2 1; reorder 1 2 3 0 1; vectorize 1 3; compute_at 0 2 1; vectorize 0 1",
        /* k's inner part unrolled between the rows and k's loop */
        "cache_write 0; split 1 1 1 16; split 1 0 2 4; reorder 1 0 3 1 4 2 5; vectorize 1 5; compute_at 0 1 3; "
        "split 0 2 4; reorder 0 2 3 0 1; unroll 0 1; unroll 0 2; vectorize 0 3"};
    StrBuf b;
    StrBuf_init(&b);
    for (size_t i = 0; i < sizeof NOT / sizeof *NOT; i++) {
        StrBuf_clear(&b);
        emit_c_of(MM, NOT[i], &b);
        CHECK(strstr(b.data, "schedule-insns") == NULL);
    }
    StrBuf_clear(&b);
    emit_c_of(MM, TILE, &b);
    CHECK_CONTAINS(b.data, PRAGMA_SCHED);
    Built bu;
    build_c(b.data, &bu);
    /* with FMA (x86, gcc): the tile's FMAs read registers only */
    char cmd[640];
    snprintf(cmd, sizeof cmd,
             "cc %s -S -o - %s | grep -E '\\bvfmadd[0-9]+ps\\b' > %s/fma.txt; test -s %s/fma.txt || exit 0; "
             "! grep -q '(' %s/fma.txt",
             TT_CPU_CFLAGS, bu.c_path, bu.dir, bu.dir, bu.dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/fma.txt", bu.dir);
    unlink(cmd);
    float a[16 * 32], bb[32 * 32], c[16 * 32], *t[3] = {a, bb, c};
    for (int i = 0; i < 16 * 32; i++)
        a[i] = (float)(i % 13) - 6.0f;
    for (int i = 0; i < 32 * 32; i++)
        bb[i] = (float)(i % 7) * 0.5f - 1.0f;
    if (bu.k) bu.k(t);
    for (int i = 0; i < 16 && bu.k; i++)
        for (int j = 0; j < 32; j++) {
            float want = 0;
            for (int k = 0; k < 32; k++)
                want += a[i * 32 + k] * bb[k * 32 + j];
            CHECK_NEAR(c[i * 32 + j], want, 1e-3);
        }
    built_done(&bu);
    StrBuf_done(&b);
}

int main(void) {
    RUN(gpu_emit);
    RUN(encode_decode);
    RUN(lowered_matmul);
    RUN(compute_at_region_and_inline);
    RUN(step_errors);
    RUN(cache_stages);
    RUN(replay_is_deterministic);
    RUN(conditions_and_collapsed_loops_in_c);
    RUN(invariants_before_vectorized_loop);
    RUN(rfactor_stage);
    RUN(exp_of_x_minus_its_max);
    RUN(unrolled_lane_sum_is_a_simd_reduction);
    RUN(padded_copy);
    RUN(padded_copy_of_max_pool);
    RUN(copy_by_phases_of_max_pool);
    RUN(constant_tensor_emission);
    RUN(loops_over_a_constant_are_written_out);
    RUN(register_tile_keeps_its_vector_operand);
    RUN(heap_buffer_is_aligned);
    return check_summary();
}
