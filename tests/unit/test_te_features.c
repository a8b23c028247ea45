/* tests/unit/test_te_features.c: the program features of a loop nest
 * (kernels/templates/te/te_features.h) against values worked out by hand on
 * small nests, and extraction over random schedules of every example. */
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "kernels/templates/te/te_features.h"
#include "tests/check.h"

typedef struct Fixture {
    TeProgram *g;
    TeDag d;
    LoopNest ln;
    TeFeatures f;
    int ok;
} Fixture;

static void setup(Fixture *F, const char *src, const char *steps, const char *want_nest) {
    char err[TT_ERRLEN] = "";
    memset(F, 0, sizeof *F);
    TeFeatures_init(&F->f);
    F->g = TeProgram_parse(src, "t.te", NULL, 0, err);
    CHECK(F->g != NULL);
    if (!F->g) return;
    Steps s;
    CHECK(TeDag_build(&F->d, F->g, err) == TT_OK);
    CHECK(Steps_decode(steps, &s, err) == TT_OK);
    if (LoopNest_lower(&F->ln, &F->d, &s, err) != TT_OK) {
        fprintf(stderr, "%s\n", err);
        CHECK(0);
        return;
    }
    StrBuf b;
    StrBuf_init(&b);
    LoopNest_print(&F->ln, &b);
    CHECK_STR(b.data, want_nest);
    StrBuf_done(&b);
    CHECK(TeFeatures_ofNest(&F->f, &F->ln, &s, 1, err) == TT_OK);
    F->ok = 1;
}

static void teardown(Fixture *F) {
    if (F->ok) LoopNest_done(&F->ln);
    TeFeatures_done(&F->f);
    TeProgram_delete(F->g);
}

static const float *row(const Fixture *F, int r) { return F->f.x + (size_t)r * TE_FEATURES; }
static const float *buf(const Fixture *F, int r, int b) { return row(F, r) + TF_BUF + b * TE_BUFFER_FEATURES; }

/* Every buffer feature of one buffer: access type, bytes, unique bytes, lines,
 * unique lines, reuse type, distance (iterations, bytes), count, stride. */
static void check_buffer(const float *b, int acc, double bytes, double ubytes, double lines, double ulines, int reuse,
                         double dis_iter, double dis_bytes, double ct, double stride) {
    for (int a = TB_READ; a <= TB_READ_WRITE; a++)
        CHECK_EQ_INT(b[a], a == acc);
    CHECK_NEAR(b[TB_BYTES], bytes, 1e-6);
    CHECK_NEAR(b[TB_UNIQUE_BYTES], ubytes, 1e-6);
    CHECK_NEAR(b[TB_LINES], lines, 1e-6);
    CHECK_NEAR(b[TB_UNIQUE_LINES], ulines, 1e-6);
    for (int t = TB_REUSE_LOOP; t <= TB_REUSE_NONE; t++)
        CHECK_EQ_INT(b[t], t == reuse);
    CHECK_NEAR(b[TB_REUSE_DIS_ITER], dis_iter, 1e-6);
    CHECK_NEAR(b[TB_REUSE_DIS_BYTES], dis_bytes, 1e-6);
    CHECK_NEAR(b[TB_REUSE_CT], ct, 1e-6);
    double div = ct > 1 ? ct : 1;
    CHECK_NEAR(b[TB_BYTES_D_REUSE], bytes / div, 1e-6);
    CHECK_NEAR(b[TB_UNIQUE_BYTES_D_REUSE], ubytes / div, 1e-6);
    CHECK_NEAR(b[TB_LINES_D_REUSE], lines / div, 1e-6);
    CHECK_NEAR(b[TB_UNIQUE_LINES_D_REUSE], ulines / div, 1e-6);
    CHECK_NEAR(b[TB_STRIDE], stride, 1e-6);
}

/* One annotation group: count, product, innermost extent, position. */
static void check_ann(const float *g, double num, double prod, double len, int pos) {
    CHECK_NEAR(g[TA_NUM], num, 1e-9);
    CHECK_NEAR(g[TA_PROD], prod, 1e-9);
    CHECK_NEAR(g[TA_LEN], len, 1e-9);
    for (int p = TP_NONE; p <= TP_MIXED; p++)
        CHECK_EQ_INT(g[TA_POS + p], p == pos);
}

/* The arithmetic counts: the 16 values in layout order. */
static void check_ops(const float *x, const double *want) {
    for (int i = 0; i < 16; i++)
        if (fabs(x[i] - want[i]) > 1e-6) {
            fprintf(stderr, "  op count %d: %g, expected %g\n", i, x[i], want[i]);
            CHECK(0);
        }
}

#define MATMUL4 "input A[4, 4]\ninput B[4, 4]\nC[i < 4, j < 4] = sum(A[i, k] * B[k, j], k < 4)\noutput C\n"

/* 4x4x4 matmul, j split by 2, its inner half moved innermost and vectorized. */
#define MATMUL4_STEPS "split 0 1 2; reorder 0 0 1 3 2; vectorize 0 3"
#define MATMUL4_NEST                                                                                                   \
    "for z0_0 < 4\n"                                                                                                   \
    "  for z0_1 < 4\n"                                                                                                 \
    "    init C i=z0_0 j=z0_1\n"                                                                                       \
    "for i0_0 < 4\n"                                                                                                   \
    "  for i0_3 < 2\n"                                                                                                 \
    "    for i0_2 < 4\n"                                                                                               \
    "      for i0_4 < 2 vectorize\n"                                                                                   \
    "        update C i=i0_0 j=(i0_3 * 2 + i0_4) k=i0_2\n"
TEST(matmul_split_vectorize) {
    Fixture F;
    /* The reduction loop k (i0_2) is not innermost, so the INIT is a nest of
     * its own before the main nest (te_lower.h). */
    setup(&F, MATMUL4, MATMUL4_STEPS, MATMUL4_NEST);
    if (!F.ok) return teardown(&F);
    CHECK_EQ_INT(F.f.n, 2);

    /* Row 0, the INIT C[z0_0, z0_1] = 0: no arithmetic, two loops of 4
     * (outer_prod 16), nothing annotated, one buffer (C, written). */
    const float *x = row(&F, 0);
    CHECK_EQ_INT(F.f.stage[0], 0);
    CHECK_EQ_INT(F.f.part[0], LN_INIT);
    static const double none[16] = {0};
    check_ops(x, none);
    check_ann(x + TF_VEC, 0, 0, 0, TP_NONE);
    check_ann(x + TF_UNROLL, 0, 0, 0, TP_NONE);
    check_ann(x + TF_PAR, 0, 0, 0, TP_NONE);
    for (int i = TF_IS_GPU; i <= TF_VTHREAD; i++)
        CHECK_EQ_INT(x[i], 0); /* no bound loop: a CPU nest */
    CHECK_EQ_INT(F.f.buffer[0], 2);
    CHECK_EQ_INT(F.f.buffer[1], -1);
    /* C: 16 stores of 4 bytes = 64 bytes, all 16 elements (64 unique bytes).
     * The inner loop z0_1 moves C by 1 element (4 bytes): 16 executions *
     * 4/64 of a line = 1 line; the 16 elements are contiguous: 1 unique line.
     * Both loops move C and no other statement is under them: no reuse. */
    check_buffer(buf(&F, 0, 0), TB_WRITE, 64, 64, 1, 1, TB_REUSE_NONE, 0, 0, 0, 1);
    for (int i = TF_BUF + TE_BUFFER_FEATURES; i < TF_CURVE; i++)
        CHECK_EQ_INT(x[i], 0);
    for (int i = TF_CURVE; i < TF_CURVE + TE_CURVE_POINTS; i++)
        CHECK_EQ_INT(x[i], 0);         /* no float operation: no intensity */
    CHECK_EQ_INT(x[TF_ALLOC_SIZE], 0); /* C is the output: the program does not allocate it */
    CHECK_EQ_INT(x[TF_OUTER_PROD], 16);
    CHECK_EQ_INT(x[TF_NUM_LOOPS], 2);
    CHECK_EQ_INT(x[TF_AUTO_UNROLL], 0);

    /* Row 1, the UPDATE C[i,j] = C[i,j] + A[i,k] * B[k,j] under 4*2*4*2 = 64
     * executions: one float mad each (64); the axis value j = i0_3 * 2 + i0_4
     * is one integer mad each (64). */
    x = row(&F, 1);
    CHECK_EQ_INT(F.f.part[1], LN_UPDATE);
    double ops[16] = {0};
    ops[TF_FLOAT_MAD] = 64;
    ops[TF_INT_MAD] = 64;
    check_ops(x, ops);
    /* i0_4 (extent 2) is vectorized; only the spatial axis j uses it, and it
     * is the innermost of the statement's spatial loops (i0_0, i0_3, i0_4). */
    check_ann(x + TF_VEC, 1, 2, 2, TP_INNER_SPATIAL);
    check_ann(x + TF_UNROLL, 0, 0, 0, TP_NONE);
    check_ann(x + TF_PAR, 0, 0, 0, TP_NONE);
    /* Lines per buffer: B[k, j] and C[i, j] move by 1 element along i0_4:
     * 64 * 4/64 = 4 lines; A[i, k] does not move along i0_4 (2 executions
     * share an element) and moves by 1 along i0_2: 64 / 2 * 4/64 = 2 lines.
     * So the order is B (4), C (4; the tie goes to the lower tensor), A (2). */
    CHECK_EQ_INT(F.f.buffer[5], 1);
    CHECK_EQ_INT(F.f.buffer[6], 2);
    CHECK_EQ_INT(F.f.buffer[7], 0);
    CHECK_EQ_INT(F.f.buffer[8], -1);
    /* B: 64 reads * 4 bytes = 256; all 16 elements (64 bytes, one line).
     * Reuse from the inside out: i0_4 moves j, i0_2 moves k, i0_3 moves j,
     * i0_0 does not appear in B[k, j]: loop reuse, count 4, distance 2*4*2 =
     * 16 iterations, and in bytes what one i0_0 iteration touches: all of B
     * (64) + a row of C (16) + a row of A (16) = 96. */
    check_buffer(buf(&F, 1, 0), TB_READ, 256, 64, 4, 1, TB_REUSE_LOOP, 16, 96, 4, 1);
    /* C, read and written at the same index (one tuple): 256 bytes, 64
     * unique, 4 lines, 1 unique line. i0_4 moves it, i0_2 (k) does not: loop
     * reuse, count 4, distance 2 iterations (i0_4), bytes of one i0_2
     * iteration: 2 of C + 2 of B + 1 of A = 5 elements = 20 bytes. */
    check_buffer(buf(&F, 1, 1), TB_READ_WRITE, 256, 64, 4, 1, TB_REUSE_LOOP, 2, 20, 4, 1);
    /* A: i0_4 does not move it: loop reuse at once, count 2, distance 1
     * iteration, bytes of one statement execution: 3 elements = 12. Stride
     * along the innermost loop: 0. */
    check_buffer(buf(&F, 1, 2), TB_READ, 256, 64, 2, 1, TB_REUSE_LOOP, 1, 12, 2, 0);
    /* Intensity: a mad is 2 flops. Levels (flops / bytes touched):
     *   statement alone   2 / 12 (A, B, C one element each)   log2 flops 1
     *   + i0_4 (2)        4 / 20 (A 1, B 2, C 2)               2
     *   + i0_2 (4)       16 / 56 (A 4, B 8, C 2)               4
     *   + i0_3 (2)       32 / 96 (A 4, B 16, C 4)              5
     *   + i0_0 (4)      128 / 192 (all 16 of each)             7
     * Point j samples log2 flops = 7 * j / 10, interpolating between levels:
     * 0.7 -> 1/6; 1.4 -> 1/6 + (0.2 - 1/6) * 0.4; 2.1 -> 0.2 + (2/7 - 0.2) *
     * 0.1/2; ...; 7 -> 2/3. */
    double lv[] = {2.0 / 12, 4.0 / 20, 16.0 / 56, 32.0 / 96, 128.0 / 192}, lc[] = {1, 2, 4, 5, 7};
    for (int j = 0; j < TE_CURVE_POINTS; j++) {
        double t = 7.0 * (j + 1) / 10;
        int m = 0;
        while (lc[m] < t - 1e-9)
            m++;
        double want = m == 0 ? lv[0] : lv[m - 1] + (lv[m] - lv[m - 1]) * (t - lc[m - 1]) / (lc[m] - lc[m - 1]);
        CHECK_NEAR(x[TF_CURVE + j], want, 1e-6);
    }
    CHECK_NEAR(x[TF_CURVE + 0], 1.0 / 6, 1e-6);
    CHECK_NEAR(x[TF_CURVE + 1], 0.18, 1e-6);
    CHECK_NEAR(x[TF_CURVE + 9], 2.0 / 3, 1e-6);
    CHECK_EQ_INT(x[TF_OUTER_PROD], 64);
    CHECK_EQ_INT(x[TF_NUM_LOOPS], 4);
    teardown(&F);
}

#define ELEMRED "input A[4, 8]\nB[i < 4, j < 8] = exp(A[i, j]) * 2\nS[i < 4] = sum(B[i, j], j < 8) / 8\noutput S\n"

/* An elementwise stage B (kept as a buffer, vectorized) and a reduction S
 * with a post `/ 8`, its j split by 4 and unrolled, its i parallel. */
TEST(elementwise_reduction) {
    Fixture F;
    setup(&F, ELEMRED, "split 1 1 4; parallel 1 0; unroll 1 2; vectorize 0 1",
          "for i0_0 < 4\n"
          "  for i0_1 < 8 vectorize\n"
          "    store B i=i0_0 j=i0_1\n"
          "for i1_0 < 4 parallel\n"
          "  init S i=i1_0\n"
          "  for i1_2 < 2\n"
          "    for i1_3 < 4 unroll 4\n"
          "      update S i=i1_0 j=(i1_2 * 4 + i1_3)\n"
          "  post S i=i1_0\n");
    if (!F.ok) return teardown(&F);
    CHECK_EQ_INT(F.f.n, 4);

    /* Row 0, B[i,j] = exp(A[i,j]) * 2, 32 executions: 32 float mul, 32 math
     * functions; the innermost (spatial) loop is vectorized by 8. */
    const float *x = row(&F, 0);
    double ops[16] = {0};
    ops[TF_FLOAT_MUL] = 32;
    ops[TF_FLOAT_MATH] = 32;
    check_ops(x, ops);
    check_ann(x + TF_VEC, 1, 8, 8, TP_INNER_SPATIAL);
    check_ann(x + TF_PAR, 0, 0, 0, TP_NONE);
    /* A and B move by one element along i0_1: 32 * 4/64 = 2 lines each (tie:
     * A, tensor 0, first); 128 bytes, 128 unique bytes in 2 contiguous lines;
     * every loop moves both: no reuse. */
    CHECK_EQ_INT(F.f.buffer[0], 0);
    CHECK_EQ_INT(F.f.buffer[1], 1);
    check_buffer(buf(&F, 0, 0), TB_READ, 128, 128, 2, 2, TB_REUSE_NONE, 0, 0, 0, 1);
    check_buffer(buf(&F, 0, 1), TB_WRITE, 128, 128, 2, 2, TB_REUSE_NONE, 0, 0, 0, 1);
    /* 2 flops per 8 bytes at every level: a flat curve of 0.25. */
    for (int j = 0; j < TE_CURVE_POINTS; j++)
        CHECK_NEAR(x[TF_CURVE + j], 0.25, 1e-6);
    /* B is intermediate: allocated once (4 * 8 * 4 bytes), 32 stores per allocation. */
    CHECK_EQ_INT(x[TF_ALLOC_SIZE], 128);
    CHECK_EQ_INT(x[TF_ALLOC_PROD], 128);
    CHECK_EQ_INT(x[TF_ALLOC_OUTER_PROD], 1);
    CHECK_EQ_INT(x[TF_ALLOC_INNER_PROD], 32);

    /* Row 1, INIT S[i] = 0 under the parallel i1_0 (4): no arithmetic;
     * parallel 1 loop of 4, the innermost spatial loop of the statement. S
     * is written 4 times (16 bytes, 16 unique, 1 line). The UPDATE and the
     * POST under i1_0 touch S too: serial reuse, count 2, distance 1
     * iteration (no loop inside i1_0 around the INIT), 4 bytes. */
    x = row(&F, 1);
    CHECK_EQ_INT(F.f.part[1], LN_INIT);
    check_ops(x, (double[16]){0});
    check_ann(x + TF_PAR, 1, 4, 4, TP_INNER_SPATIAL);
    check_buffer(buf(&F, 1, 0), TB_WRITE, 16, 16, 1, 1, TB_REUSE_SERIAL, 1, 4, 2, 1);

    /* Row 2, UPDATE S[i] += B[i, j], j = i1_2 * 4 + i1_3, 32 executions:
     * 32 float add (the sum), 32 integer mad (the axis value). i1_3 is
     * unrolled by 4 and used only by the reduction axis: inner reduction. */
    x = row(&F, 2);
    memset(ops, 0, sizeof ops);
    ops[TF_FLOAT_ADDSUB] = 32;
    ops[TF_INT_MAD] = 32;
    check_ops(x, ops);
    check_ann(x + TF_UNROLL, 1, 4, 4, TP_INNER_REDUCE);
    check_ann(x + TF_PAR, 1, 4, 4, TP_INNER_SPATIAL); /* i1_0, the only spatial loop, counts as inner */
    check_ann(x + TF_VEC, 0, 0, 0, TP_NONE);
    /* B moves by 1 along i1_3: 32 * 4/64 = 2 lines, 128 bytes, 2 unique
     * lines; every loop moves it: no loop reuse, and no other statement under
     * i1_0 reads B: none. S: 32 executions, 4 elements; it does not move
     * along i1_3 nor i1_2 (4 * 2 = 8 executions per element) and moves by 1
     * along i1_0: 32 / 8 * 4/64 = 0.25, so 1 line; loop reuse at i1_3,
     * count 4, distance 1, 8 bytes (B and S one element each). */
    CHECK_EQ_INT(F.f.buffer[10], 1);
    CHECK_EQ_INT(F.f.buffer[11], 2);
    check_buffer(buf(&F, 2, 0), TB_READ, 128, 128, 2, 2, TB_REUSE_NONE, 0, 0, 0, 1);
    check_buffer(buf(&F, 2, 1), TB_READ_WRITE, 128, 16, 1, 1, TB_REUSE_LOOP, 1, 8, 4, 0);
    CHECK_EQ_INT(x[TF_ALLOC_SIZE], 0);
    CHECK_EQ_INT(x[TF_NUM_LOOPS], 3);

    /* Row 3, POST S[i] = S[i] / 8: 4 float divisions; S read and written,
     * serial reuse with the INIT and UPDATE (count 2). */
    x = row(&F, 3);
    CHECK_EQ_INT(F.f.part[3], LN_POST);
    memset(ops, 0, sizeof ops);
    ops[TF_FLOAT_DIVMOD] = 4;
    check_ops(x, ops);
    check_buffer(buf(&F, 3, 0), TB_READ_WRITE, 16, 16, 1, 1, TB_REUSE_SERIAL, 1, 4, 2, 1);
    teardown(&F);
}

/* The same with B inlined and j split by 3 (not a divisor of 8): the guard's
 * compares and the inlined body's operators are counted at the update. */
TEST(inlined_guarded) {
    Fixture F;
    setup(&F, ELEMRED, "compute_inline 0; split 1 1 3; parallel 1 0; auto_unroll 1 1 16",
          "for i1_0 < 4 parallel\n"
          "  init S i=i1_0 if i1_0 < 4\n"
          "  for i1_2 < 3\n"
          "    for i1_3 < 3 unroll 3\n"
          "      update S i=i1_0 j=(i1_2 * 3 + i1_3) if i1_0 < 4 && (i1_2 * 3 + i1_3) < 8\n"
          "  post S i=i1_0 if i1_0 < 4\n");
    if (!F.ok) return teardown(&F);
    CHECK_EQ_INT(F.f.n, 3);
    /* UPDATE, 4*3*3 = 36 executions, each: S + exp(A[i, j]) * 2 is a float
     * add, a mul, an exp (the inlined B); j's value is an integer mad, and the
     * guard `i < 4 && (i1_2 * 3 + i1_3) < 8` one more mad, 2 compares, 1 &&. */
    const float *x = row(&F, 1);
    double ops[16] = {0};
    ops[TF_FLOAT_ADDSUB] = 36;
    ops[TF_FLOAT_MUL] = 36;
    ops[TF_FLOAT_MATH] = 36;
    ops[TF_INT_MAD] = 72;
    ops[TF_INT_CMP] = 72;
    ops[TF_BOOL_OP] = 36;
    check_ops(x, ops);
    /* The update reads A (not B: it is inlined): 36 * 4 = 144 bytes, but only
     * the 32 elements of A (the guard's tail is clipped): 128 unique bytes;
     * lines 36 * 4/64 = 2.25. */
    CHECK_EQ_INT(F.f.buffer[5], 0);
    CHECK_NEAR(buf(&F, 1, 0)[TB_BYTES], 144, 1e-6);
    CHECK_NEAR(buf(&F, 1, 0)[TB_UNIQUE_BYTES], 128, 1e-6);
    CHECK_NEAR(buf(&F, 1, 0)[TB_LINES], 2.25, 1e-6);
    /* auto_unroll 16 on S's loop: every S statement reports it. */
    for (int r = 0; r < 3; r++)
        CHECK_EQ_INT(row(&F, r)[TF_AUTO_UNROLL], 16);
    /* INIT: the guard i1_0 < 4 is one integer compare per execution. */
    CHECK_EQ_INT(row(&F, 0)[TF_INT_CMP], 4);
    teardown(&F);
}

/* B computed at S's loop i1_0: a buffer of the nest, the box B[1, 8]
 * declared in each i1_0 iteration, indexed as B[i - i1_0, j]. */
TEST(computed_at_buffer) {
    Fixture F;
    setup(&F, ELEMRED, "split 1 1 4; compute_at 0 1 0",
          "for i1_0 < 4\n"
          "  alloc B[1, 8]\n"
          "  for i0_0 < 1\n"
          "    for i0_1 < 8\n"
          "      store B i=(0 + 1 * i1_0) + i0_0 j=i0_1\n"
          "  init S i=i1_0\n"
          "  for i1_2 < 2\n"
          "    for i1_3 < 4\n"
          "      update S i=i1_0 j=(i1_2 * 4 + i1_3)\n"
          "  post S i=i1_0\n");
    if (!F.ok) return teardown(&F);
    CHECK_EQ_INT(F.f.n, 4); /* the alloc line is no statement */
    /* Row 0, the store of B, 4*1*8 = 32 executions. Its axis i = (0 + 1 *
     * i1_0) + i0_0 is an integer mad and an add (the box lies inside B: no
     * guard); the value exp(A) * 2 a mul and an exp. */
    const float *x = row(&F, 0);
    double ops[16] = {0};
    ops[TF_FLOAT_MUL] = 32;
    ops[TF_FLOAT_MATH] = 32;
    ops[TF_INT_MAD] = 32;
    ops[TF_INT_ADDSUB] = 32;
    check_ops(x, ops);
    /* A (tensor 0) and B (1) both 2 lines (32 * 4/64), the tie to A. A: the
     * whole tensor, no loop repeats an element: no reuse. B's index is i - i1_0
     * = i0_0 (always 0), j: 8 elements = 32 unique bytes in one line; i0_1
     * moves it, i0_0 has one step, i1_0 does not move it (the box is reused):
     * loop reuse, count 4, distance 1 * 8 iterations, and in bytes one i1_0
     * iteration: A's row (32) + the box (32) = 64. */
    CHECK_EQ_INT(F.f.buffer[0], 0);
    CHECK_EQ_INT(F.f.buffer[1], 1);
    check_buffer(buf(&F, 0, 0), TB_READ, 128, 128, 2, 2, TB_REUSE_NONE, 0, 0, 0, 1);
    check_buffer(buf(&F, 0, 1), TB_WRITE, 128, 32, 2, 1, TB_REUSE_LOOP, 8, 64, 4, 1);
    /* Allocation: 1 * 8 floats = 32 bytes, declared in each of the 4 i1_0
     * iterations (128 bytes in all), 32 / 4 = 8 stores per allocation. */
    CHECK_EQ_INT(x[TF_ALLOC_SIZE], 32);
    CHECK_EQ_INT(x[TF_ALLOC_PROD], 128);
    CHECK_EQ_INT(x[TF_ALLOC_OUTER_PROD], 4);
    CHECK_EQ_INT(x[TF_ALLOC_INNER_PROD], 8);
    /* Row 2, the update reads the box at [i1_0 - i1_0, j]: 32 unique bytes,
     * moved by 1 along i1_3 (32 * 4/64 = 2 lines), reused along i1_0 (count
     * 4, distance 2 * 4 = 8 iterations, bytes of one i1_0 iteration: the box
     * 32 + S's element 4 = 36). */
    CHECK_EQ_INT(F.f.buffer[10], 1);
    check_buffer(buf(&F, 2, 0), TB_READ, 128, 32, 2, 1, TB_REUSE_LOOP, 8, 36, 4, 1);
    CHECK_EQ_INT(row(&F, 2)[TF_ALLOC_SIZE], 0); /* S is the output */
    teardown(&F);
}

/* The model's form: slog on counts, one-hot groups and the curve as they are. */
TEST(transformed) {
    Fixture F;
    setup(&F, MATMUL4, MATMUL4_STEPS, MATMUL4_NEST);
    if (!F.ok) return teardown(&F);
    char err[TT_ERRLEN] = "";
    Steps s;
    CHECK(Steps_decode(MATMUL4_STEPS, &s, err) == TT_OK);
    TeFeatures t;
    TeFeatures_init(&t);
    CHECK(TeFeatures_extract(&t, &F.d, &s, err) == TT_OK);
    CHECK_EQ_INT(t.n, 2);
    const float *x = t.x + TE_FEATURES;
    CHECK_NEAR(x[TF_FLOAT_MAD], log2(65), 1e-5);                /* 64 -> log2(1 + 64) */
    CHECK_NEAR(x[TF_VEC + TA_POS + TP_INNER_SPATIAL], 1, 1e-9); /* one-hot: unchanged */
    CHECK_NEAR(x[TF_BUF + TB_BYTES], log2(257), 1e-5);
    CHECK_NEAR(x[TF_CURVE + 1], 0.18, 1e-6); /* curve: unchanged */
    TeFeatures_done(&t);
    teardown(&F);
}

/* Every random schedule of every example extracts: one row per statement,
 * finite values, and the same rows when extracted again. */
TEST(random_schedules) {
    const char *dir = getenv("TT_TEST_DATA");
    char path[1024];
    static const char *const files[] = {"matmul.te",          "conv2d.te",   "softmax.te",   "layer_norm.te",
                                        "dense_bias_gelu.te", "max_pool.te", "depthwise.te", "batch_matmul.te"};
    for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
        snprintf(path, sizeof path, "%s/../../examples/te/%s", dir ? dir : "tests/data", files[fi]);
        char err[TT_ERRLEN] = "";
        TeProgram *g = TeProgram_load(path, NULL, 0, err);
        if (!g) {
            fprintf(stderr, "%s\n", err);
            CHECK(0);
            continue;
        }
        TeDag d;
        CHECK(TeDag_build(&d, g, err) == TT_OK);
        TeFeatures a, b;
        TeFeatures_init(&a);
        TeFeatures_init(&b);
        Rng rng;
        Rng_seed(&rng, 7 + fi);
        for (int i = 0; i < 40; i++) {
            Steps s;
            TeSchedule_sample(&d, &rng, i % 4 == 3, &s);
            LoopNest ln;
            if (LoopNest_lower(&ln, &d, &s, err) != TT_OK) {
                fprintf(stderr, "%s: %s\n", files[fi], err);
                CHECK(0);
                continue;
            }
            StrBuf p;
            StrBuf_init(&p);
            LoopNest_print(&ln, &p);
            int stmts = 0; /* lines that are not loops */
            for (const char *line = p.data; *line; line = strchr(line, '\n') + 1) {
                const char *w = line + strspn(line, " ");
                stmts += strncmp(w, "for ", 4) != 0 && strncmp(w, "alloc ", 6) != 0;
            }
            StrBuf_done(&p);
            if (TeFeatures_ofNest(&a, &ln, &s, 0, err) != TT_OK) {
                fprintf(stderr, "%s: %s\n", files[fi], err);
                CHECK(0);
            }
            CHECK_EQ_INT(a.n, stmts);
            CHECK(TeFeatures_extract(&b, &d, &s, err) == TT_OK);
            CHECK_EQ_INT(b.n, a.n);
            CHECK(memcmp(a.x, b.x, sizeof(float) * TE_FEATURES * (size_t)a.n) == 0);
            for (int k = 0; k < a.n * TE_FEATURES; k++)
                if (!isfinite(a.x[k])) {
                    fprintf(stderr, "%s: feature %d of row %d is %g\n", files[fi], k % TE_FEATURES, k / TE_FEATURES,
                            a.x[k]);
                    CHECK(0);
                    break;
                }
            LoopNest_done(&ln);
        }
        TeFeatures_done(&a);
        TeFeatures_done(&b);
        TeProgram_delete(g);
    }
}

int main(void) {
    RUN(matmul_split_vectorize);
    RUN(elementwise_reduction);
    RUN(inlined_guarded);
    RUN(computed_at_buffer);
    RUN(transformed);
    RUN(random_schedules);
    return check_summary();
}
