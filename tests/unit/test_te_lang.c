/* tests/unit/test_te_lang.c: the .te language: every shipped example parses,
 * every error case gives its one file:line:col message, bounds proofs accept
 * padding and reject what can leave a tensor, the interpreter matches
 * values computed by hand, and the lane evaluator gives the bits of the
 * direct walk. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "te/te.h"
#include "tests/check.h"
#include <sys/stat.h>
#include <unistd.h>

static const char *const EXAMPLES[] = {"matmul",
                                       "dense",
                                       "batch_matmul",
                                       "conv2d",
                                       "depthwise",
                                       "softmax",
                                       "layer_norm",
                                       "max_pool",
                                       "dense_bias_gelu",
                                       "conv2d_winograd",
                                       "conv2d_winograd_filter"};

static void example_path(const char *name, char *buf, size_t n) {
    /* TT_TEST_DATA is <source>/tests/data (which need not exist) */
    const char *data = getenv("TT_TEST_DATA");
    char root[400];
    snprintf(root, sizeof root, "%s", data ? data : "tests/data");
    char *slash = strrchr(root, '/');
    if (slash) *slash = 0;
    snprintf(buf, n, "%s/../examples/te/%s.te", root, name);
}

TEST(examples_parse) {
    for (size_t i = 0; i < sizeof EXAMPLES / sizeof *EXAMPLES; i++) {
        char path[512], err[TT_ERRLEN] = "";
        example_path(EXAMPLES[i], path, sizeof path);
        TeProgram *g = TeProgram_load(path, NULL, 0, err);
        if (!g) fprintf(stderr, "%s\n", err);
        CHECK(g != NULL);
        TeProgram_delete(g);
    }
}

TEST(matmul_structure_and_set) {
    char path[512], err[TT_ERRLEN] = "";
    example_path("matmul", path, sizeof path);
    TeSet set = {"N", 64};
    TeProgram *g = TeProgram_load(path, &set, 1, err);
    CHECK(g != NULL);
    if (!g) return;
    CHECK_EQ_INT(g->n_tensors, 3);
    int c = TeProgram_find(g, "C");
    CHECK_EQ_INT(c, 2);
    CHECK_EQ_INT(g->tensors[c].shape[0], 64);
    CHECK_EQ_INT(g->tensors[0].shape[1], 64);
    CHECK(g->tensors[c].is_output);
    CHECK_EQ_INT(g->tensors[c].body->kind, TE_REDUCE);
    CHECK_EQ_INT(g->vars[g->tensors[c].body->axes[0]].extent, 64);
    CHECK_EQ_INT(TeProgram_numel(g, c), 64 * 64);
    TeProgram_delete(g);
}

typedef struct Case {
    const char *src;
    const char *msg; /* the whole message */
} Case;

static const Case ERRORS[] = {
    {"input A[4]\nB[i < 4] = A[i] +\noutput B\n", "t.te:2:18: expected an expression, found end of line"},
    {"input A[4]\nB[i < 4] = A[i] $ 2\noutput B\n", "t.te:2:17: unexpected character '$'"},
    {"input A[4]\nB[i < 4] = Z[i]\noutput B\n", "t.te:2:12: unknown tensor 'Z'"},
    {"input A[4]\nB[i < 4] = A[q]\noutput B\n", "t.te:2:14: unknown variable 'q'"},
    {"input A[4]\nB[i < 4, i < 4] = A[i]\noutput B\n", "t.te:2:10: variable 'i' is bound twice (first at 2:3)"},
    {"input A[4]\nB[i < 4] = sum(A[i], i < 4)\noutput B\n", "t.te:2:22: variable 'i' is bound twice (first at 2:3)"},
    {"input A[4, 4]\nB[i < 4] = A[i]\noutput B\n", "t.te:2:12: 'A' has 2 dimensions, accessed with 1 index"},
    {"input A[4]\nB[i < 4] = A[i + 1]\noutput B\n",
     "t.te:2:12: access to A may leave it: index 1 of 1 ranges over [1, 4]; valid is [0, 3]"},
    {"input A[4]\nB[i < 4] = if(i > 0, A[i - 2], 0)\noutput B\n",
     "t.te:2:22: access to A may leave it: index 1 of 1 ranges over [-1, 1]; valid is [0, 3]"},
    {"input A[4]\nB[i < 4] = foo(A[i])\noutput B\n", "t.te:2:12: unknown function 'foo'"},
    {"input A[4]\nB[i < 4] = A[i]\n", "t.te:3:1: no 'output' line"},
    {"let N = 0\ninput A[4]\nB[i < N] = A[i]\noutput B\n", "t.te:3:7: extent of 'i' is 0; it must be positive"},
    {"input A[0]\nB[i < 4] = 1\noutput B\n", "t.te:1:9: dimension 0 of 'A' is 0; it must be positive"},
    {"input A[4]\nB[i < 4] = A[i / 0]\noutput B\n", "t.te:2:16: integer division by zero"},
    {"input A[4]\nB[i < 4, j < 4] = A[i / j]\noutput B\n",
     "t.te:2:23: the divisor of '/' ranges over [0, 3], which includes 0"},
    {"input A[4]\nB[i < 4] = A[i * 0.5]\noutput B\n",
     "t.te:2:16: an index must be an integer expression (iteration variables, lets, integers)"},
    {"input A[4]\nB[i < 4] = if(A[i], 1, 0)\noutput B\n",
     "t.te:2:15: the condition of if must be a condition (a comparison, &&, || or !)"},
    {"input A[4]\nB[i < 4] = exp(A[i], 2)\noutput B\n", "t.te:2:20: exp takes 1 argument; expected ')', found ','"},
    {"input A[4]\nA[i < 4] = 1\noutput A\n", "t.te:2:1: 'A' is already defined at line 1"},
    {"input A[4]\noutput A\n", "t.te:2:8: 'A' is an input; an output must be defined"},
    {"input A[4]\nB[i < 4] = B[i]\noutput B\n", "t.te:2:12: unknown tensor 'B'"},
    {"input A[4] f64\nB[i < 4] = A[i]\noutput B\n", "t.te:1:12: unknown element type 'f64' (f32 or f16)"},
    {"input A[4]\nB[i < 4] = sum(A[i])\noutput B\n", "t.te:2:20: sum needs at least one axis such as 'k < N'"},
    {"input A[4]\nB[i < 4] = A[i] % 2\noutput B\n", "t.te:2:17: '%' needs integer operands"},
    {"input A[4]\nB[i < 4] = A[i]\noutput C\n", "t.te:3:8: unknown tensor 'C'"},
    {"let N = 4\nlet N = 5\ninput A[N]\n", "t.te:2:5: 'N' is already a let constant"},
    {"input A[4]\nB[i < 4] = A\noutput B\n", "t.te:2:12: tensor 'A' used without indices"},
    {"input A[4]\nB[i < 4] = (A[i]\noutput B\n", "t.te:3:1: expected ')', found 'output'"},
    {"input A[4]\nB[i < 4] = 1.5.2\noutput B\n", "t.te:2:12: malformed number"},
    {"input A[4]\nB[i < 4] = A[i] A[i]\noutput B\n", "t.te:2:17: expected end of line, found 'A'"},
    {"input sum[4]\n", "t.te:1:7: 'sum' is a reserved word"},
    {"const B[2, 2] = [1, 2, 3]\n", "t.te:1:7: 'B' has 4 elements; 3 values given"},
    {"const B[2] = [1, 2, 3]\n", "t.te:1:7: 'B' has 2 elements; 3 values given"},
    {"const B[2] = [1, 1.5.2]\n", "t.te:1:18: malformed number"},
    {"input A[2]\nconst B[2] = [1, A[0]]\n",
     "t.te:2:18: a value of 'B' must be a number (an expression of numbers and lets)"},
    {"const B[2] = [1, 1.0 / 0]\n", "t.te:1:18: value 1 of 'B' is inf, not a finite float"},
    {"const B[2] = [1, 1e39]\n", "t.te:1:18: value 1 of 'B' is 1e+39, not a finite float"},
    {"const B[256, 257] = [1]\n", "t.te:1:7: 'B' has more than 65536 elements"},
    {"input X[4294967296, 4294967296]\n", "t.te:1:7: 'X' has more than 4294967296 elements"},
    /* sizes in bytes computed from a shape must not wrap: N = 2^31 fails at the parse */
    {"let N = 2147483648\ninput A[N, N]\n", "t.te:2:7: 'A' has more than 4294967296 elements"},
    {"input A[4]\nB[i < 2147483648, j < 4] = A[0]\n", "t.te:2:1: 'B' has more than 4294967296 elements"},
    /* nesting is bounded: the parser and the bounds walk recurse */
    {"input A[4]\nB[i < 4] = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((A[i]"
     "))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))\n",
     "t.te:2:76: the expression nests more than 64 levels deep"},
    {"input A[4]\nB[i < 4] = A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + "
     "A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + "
     "A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + "
     "A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + "
     "A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i] + A[i]\n",
     "t.te:2:1: the value of 'B' nests more than 64 levels deep (a chain of operators counts each)"},
    {"const B[2] = [1, 2 < 3]\n", "t.te:1:20: a value must be a number, not a condition"},
    {"const B[2] = [1, 2\n", "t.te:2:1: expected ']', found end of file"},
    {"const B[2]\n", "t.te:1:11: expected '=', found end of line"},
    {"const B[2] = [1, 2]\noutput B\n", "t.te:2:8: 'B' is a constant; an output must be defined"},
    {"const B[2] = [1, 2]\nB[i < 2] = 1\noutput B\n", "t.te:2:1: 'B' is already defined at line 1"},
    {"const B[2] = [1, 2]\nC[i < 4] = B[i]\noutput C\n",
     "t.te:2:12: access to B may leave it: index 1 of 1 ranges over [0, 3]; valid is [0, 1]"},
};

TEST(error_messages) {
    for (size_t i = 0; i < sizeof ERRORS / sizeof *ERRORS; i++) {
        char err[TT_ERRLEN] = "";
        TeProgram *g = TeProgram_parse(ERRORS[i].src, "t.te", NULL, 0, err);
        CHECK(g == NULL);
        TeProgram_delete(g);
        CHECK_STR(err, ERRORS[i].msg);
    }
}

TEST(set_of_unknown_name) {
    char err[TT_ERRLEN] = "";
    TeSet set = {"M", 8};
    TeProgram *g = TeProgram_parse("let N = 4\ninput A[N]\nB[i < N] = A[i]\noutput B\n", "t.te", &set, 1, err);
    CHECK(g == NULL);
    CHECK_STR(err, "t.te:1:1: --set M: the file has no 'let M'");
    TeSet zero = {"N", 0};
    g = TeProgram_parse("let N = 4\ninput A[N]\nB[i < N] = A[i]\noutput B\n", "t.te", &zero, 1, err);
    CHECK(g == NULL);
    CHECK_STR(err, "t.te:2:9: dimension 0 of 'A' is 0; it must be positive");
}

/* Proofs that need the enclosing conditions, and ones that need none. */
TEST(bounds_accepted) {
    static const char *const OK[] = {
        "input A[4]\nB[i < 6] = if(i >= 1 && i < 5, A[i - 1], 0)\noutput B\n",
        "input A[4]\nB[i < 6] = if(i < 1 || i >= 5, 0, A[i - 1])\noutput B\n",
        "input A[4]\nB[i < 6] = if(!(i < 1 || i > 4), A[i - 1], 0)\noutput B\n",
        "input A[4]\nB[i < 6, r < 3] = if(i + r >= 2 && i + r < 6, A[i + r - 2], 0)\noutput B\n",
        "input A[4]\nB[i < 6, r < 3] = if(2 <= r + i && 6 > r + i, A[r + i - 2], 0)\noutput B\n",
        "input A[8]\nB[i < 4, j < 2] = A[i * 2 + j]\noutput B\n",
        "input A[4, 2]\nB[i < 8] = A[i / 2, i % 2]\noutput B\n",
        "input A[4]\nB[i < 9] = A[min(i, 3)]\noutput B\n",
        "input A[4]\nB[i < 6] = A[max(i - 2, 0)]\noutput B\n",
        "input A[4]\nB[i < 5] = if(i > 0 && A[i - 1] > 0, 1, 0) + if(i == 4, 2, A[i % 4])\noutput B\n",
        "input A[4]\nB[i < 4] = A[3 - i]\noutput B\n",
        "input A[16]\nB[i < 4, j < 4] = sum(A[(i + k) % 16], k < 4) + A[4 * j + i]\noutput B\n",
        "input A[4]\nB[i < 8] = if(i % 2 == 0, 1, 0) * A[i / 2]\noutput B\n",
        "input A[4]\nB[i < 8] = A[-i / -2]\noutput B\n",
        "input A[4]\nB[i < 7] = A[if(i < 4, i, 6 - i)]\noutput B\n",
    };
    for (size_t i = 0; i < sizeof OK / sizeof *OK; i++) {
        char err[TT_ERRLEN] = "";
        TeProgram *g = TeProgram_parse(OK[i], "t.te", NULL, 0, err);
        if (!g) fprintf(stderr, "case %zu: %s\n", i, err);
        CHECK(g != NULL);
        TeProgram_delete(g);
    }
}

/* A branch its conditions rule out: the divisor's range, [0, -3], is empty.
 * The bounds pass divided by its zero end (SIGFPE; found by fuzz_te_parse);
 * now the quotient is unbounded and the access is refused in one line. */
TEST(empty_divisor_range) {
    char err[TT_ERRLEN] = "";
    TeProgram *g = TeProgram_parse("input A[4]\nB[i < 6] = if(i > 3 && i < 2, A[(i - 4) / (i - 4)], 0)\noutput B\n",
                                   "t.te", NULL, 0, err);
    CHECK(g == NULL);
    CHECK(strstr(err, "access to A may leave it") != NULL);
    TeProgram_delete(g);
}

static TeProgram *parse_ok(const char *src) {
    char err[TT_ERRLEN] = "";
    TeProgram *g = TeProgram_parse(src, "t.te", NULL, 0, err);
    if (!g) fprintf(stderr, "%s\n", err);
    return g;
}

TEST(interpreter_by_hand) {
    /* 2x2 matmul: [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50] */
    TeProgram *g =
        parse_ok("input A[2, 2]\ninput B[2, 2]\nC[i < 2, j < 2] = sum(A[i, k] * B[k, j], k < 2)\noutput C\n");
    CHECK(g != NULL);
    if (!g) return;
    double a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8}, c[4] = {0};
    double *v[] = {a, b, c};
    TeProgram_eval(g, v);
    CHECK_NEAR(c[0], 19, 0);
    CHECK_NEAR(c[1], 22, 0);
    CHECK_NEAR(c[2], 43, 0);
    CHECK_NEAR(c[3], 50, 0);
    TeProgram_delete(g);

    /* softmax of one row [0, ln 3]: e = [1, 3], sum 4, y = [0.25, 0.75] */
    g = parse_ok("input X[1, 2]\nM[i < 1] = max_over(X[i, j], j < 2)\nE[i < 1, j < 2] = exp(X[i, j] - M[i])\n"
                 "S[i < 1] = sum(E[i, j], j < 2)\nY[i < 1, j < 2] = E[i, j] / S[i]\noutput Y\n");
    CHECK(g != NULL);
    if (!g) return;
    double x[] = {0, log(3.0)}, m[1], e[2], s[1], y[2];
    double *w[] = {x, m, e, s, y};
    TeProgram_eval(g, w);
    CHECK_NEAR(m[0], (float)log(3.0), 1e-7);
    CHECK_NEAR(s[0], 4.0 / 3.0, 1e-6);
    CHECK_NEAR(y[0], 0.25, 1e-6);
    CHECK_NEAR(y[1], 0.75, 1e-6);
    TeProgram_delete(g);

    /* zero padding, floor division and modulo on negative numbers, min_over, if */
    g = parse_ok("input A[3]\nP[i < 5] = if(i >= 1 && i < 4, A[i - 1], 0)\n"
                 "Q[i < 5] = (i - 2) / 2 + 10 * ((i - 2) % 3)\n"
                 "R[i < 1] = min_over(A[k] * -1, k < 3) + max(2, 3) + abs(-4.5) + sqrt(16) + rsqrt(4)\n"
                 "output P\noutput Q\noutput R\n");
    CHECK(g != NULL);
    if (!g) return;
    double av[] = {7, 8, 9}, p[5], q[5], r[1];
    double *u[] = {av, p, q, r};
    TeProgram_eval(g, u);
    double want_p[] = {0, 7, 8, 9, 0};
    /* i-2 = -2,-1,0,1,2: floor /2 = -1,-1,0,0,1; floor %3 = 1,2,0,1,2 */
    double want_q[] = {9, 19, 0, 10, 21};
    for (int i = 0; i < 5; i++) {
        CHECK_NEAR(p[i], want_p[i], 0);
        CHECK_NEAR(q[i], want_q[i], 0);
    }
    CHECK_NEAR(r[0], -9 + 3 + 4.5 + 4 + 0.5, 0);
    TeProgram_delete(g);
}

/* A constant tensor is filled by both evaluators with its f32 values and read like an input. */
TEST(constant_tensor_evaluation) {
    TeProgram *g = parse_ok("let D = 4\nconst B[2, 3] = [1, -2, 0.1,\n"
                            "                  1.0 / D, 7 / 2, -(3)]   # integer / floors\n"
                            "input A[3]\nY[i < 2] = sum(B[i, k] * A[k], k < 3)\noutput Y\n");
    CHECK(g != NULL);
    if (!g) return;
    int b = TeProgram_find(g, "B");
    CHECK(g->tensors[b].is_const && !g->tensors[b].is_input && !te_is_defined(&g->tensors[b]));
    for (int direct = 0; direct < 2; direct++) {
        double a[3] = {1, 2, 3}, bv[6], y[2];
        double *values[] = {bv, a, y};
        if (direct)
            TeProgram_evalDirect(g, values);
        else
            TeProgram_eval(g, values);
        CHECK_NEAR(bv[2], (double)0.1f, 0);
        CHECK_NEAR(bv[4], 3, 0);
        CHECK_NEAR(y[0], (double)(float)(1 - 4 + 3 * (double)0.1f), 0);
        CHECK_NEAR(y[1], 0.25 + 6 - 9, 0);
    }
    TeProgram_delete(g);
}

/* Runs both evaluators on g with pseudo-random inputs in [-2, 2] and checks
 * every defined tensor bit for bit. */
static void check_same_bits(const TeProgram *g, const char *what) {
    double *a[TE_MAX_TENSORS] = {0}, *b[TE_MAX_TENSORS] = {0};
    uint64_t x = 88172645463325252ULL;
    for (int t = 0; t < g->n_tensors; t++) {
        size_t n = (size_t)TeProgram_numel(g, t);
        a[t] = calloc(n, sizeof(double));
        b[t] = calloc(n, sizeof(double));
        if (!g->tensors[t].is_input) continue;
        for (size_t k = 0; k < n; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            a[t][k] = b[t][k] = te_round_to(g->tensors[t].dtype, (double)(x >> 11) / (double)(1ULL << 53) * 4 - 2);
        }
    }
    TeProgram_eval(g, a);
    TeProgram_evalDirect(g, b);
    for (int t = 0; t < g->n_tensors; t++) {
        size_t n = (size_t)TeProgram_numel(g, t);
        int same = memcmp(a[t], b[t], n * sizeof(double)) == 0;
        if (!same) fprintf(stderr, "%s: tensor %s differs\n", what, g->tensors[t].name);
        CHECK(same);
        free(a[t]);
        free(b[t]);
    }
}

TEST(lane_evaluator_equals_direct) {
    /* every example, its sizes cut to at most 20 (the kernel sizes stay) */
    for (size_t i = 0; i < sizeof EXAMPLES / sizeof *EXAMPLES; i++) {
        char path[512], err[TT_ERRLEN] = "";
        example_path(EXAMPLES[i], path, sizeof path);
        TeProgram *full = TeProgram_load(path, NULL, 0, err);
        CHECK(full != NULL);
        if (!full) continue;
        TeSet sets[TE_MAX_LETS];
        int n = 0;
        for (int l = 0; l < full->n_lets; l++)
            if (full->lets[l].value > 20) sets[n] = (TeSet){full->lets[l].name, 20 - n % 3}, n++;
        TeProgram *g = TeProgram_load(path, sets, n, err);
        if (!g) fprintf(stderr, "%s: %s\n", EXAMPLES[i], err);
        CHECK(g != NULL);
        if (g) check_same_bits(g, EXAMPLES[i]);
        TeProgram_delete(g);
        TeProgram_delete(full);
    }
    /* conditions guarding accesses (the untaken side would leave the tensor), && and || on lanes and on
     * reduction variables, a reduction whose term is uniform for some k only, integer arithmetic with
     * negative floor division, min/max on integers, f16 inputs, runs longer than one batch of lanes */
    static const char *const CASES[] = {
        "input A[600]\nP[i < 602] = if(i >= 1 && i < 601, A[i - 1], -1)\noutput P\n",
        "input A[8, 300]\nB[i < 8, j < 300] = if(j < 1 || j >= 299, 0, A[i, j - 1] + A[i, j + 1])\noutput B\n",
        "input A[5, 7]\nS[i < 5, j < 7] = sum(if(k < 2, A[i, k], A[i, j] * k), k < 7)\noutput S\n",
        "input A[4, 9]\nM[i < 4, j < 9] = max_over(if(j - k >= 0 && j - k < 9, A[i, j - k], -5), k < 3)\n"
        "N[i < 4, j < 9] = min_over(M[i, k] - A[i, j], k < 9)\noutput N\n",
        "Q[i < 7, j < 300] = (i - 3) / 2 * 100 + (j - 150) % 7 + max(i, j / 50) - min(j, 4)\noutput Q\n",
        "input A[6, 33] f16\nB[i < 6, j < 33] = exp(A[i, j]) * rsqrt(abs(A[i, j]) + 1) + tanh(A[i, j])\n"
        "C[i < 6] = sum(sum(B[i, j] * A[i, k], k < 33), j < 33)\noutput C\n",
        "input A[3, 1]\nB[i < 3, j < 1] = if(!(i == 1), -A[i, j], erf(A[i, j]))\noutput B\n",
        "input A[900]\nQ[i < 300] = if(i < 100, i * 3, 7 - i) + A[2 * i + 3 * (i % 2)] + A[899 - i * 2]\noutput Q\n",
    };
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        TeProgram *g = parse_ok(CASES[i]);
        CHECK(g != NULL);
        if (!g) continue;
        char what[32];
        snprintf(what, sizeof what, "case %zu", i);
        check_same_bits(g, what);
        TeProgram_delete(g);
    }
}

/* conv2d_winograd.te with U from conv2d_winograd_filter.te gives conv2d.te's output on the same X and F
 * (in double, up to the f32 rounding of the intermediate tensors): sizes whose tiles divide the output and
 * sizes whose last tiles reach past it. */
static double *run_example(const char *name, const TeSet *sets, int n_sets, const char *const *in_names,
                           double *const *in, const char *out_name, size_t *numel) {
    char path[512], err[TT_ERRLEN] = "";
    example_path(name, path, sizeof path);
    TeProgram *g = TeProgram_load(path, sets, n_sets, err);
    if (!g) fprintf(stderr, "%s\n", err);
    CHECK(g != NULL);
    if (!g) return NULL;
    double *values[TE_MAX_TENSORS] = {0};
    for (int t = 0; t < g->n_tensors; t++)
        values[t] = calloc((size_t)TeProgram_numel(g, t), sizeof(double));
    for (int i = 0; in_names[i]; i++) {
        int t = TeProgram_find(g, in_names[i]);
        CHECK(t >= 0 && g->tensors[t].is_input);
        memcpy(values[t], in[i], sizeof(double) * (size_t)TeProgram_numel(g, t));
    }
    TeProgram_eval(g, values);
    int o = TeProgram_find(g, out_name);
    *numel = (size_t)TeProgram_numel(g, o);
    double *out = values[o];
    for (int t = 0; t < g->n_tensors; t++)
        if (t != o) free(values[t]);
    TeProgram_delete(g);
    return out;
}

TEST(winograd_equals_direct) {
    static const int64_t SIZES[][4] = {{8, 6, 16, 12}, {5, 7, 13, 10}};
    for (size_t z = 0; z < sizeof SIZES / sizeof *SIZES; z++) {
        const int64_t c = SIZES[z][0], k = SIZES[z][1], h = SIZES[z][2], w = SIZES[z][3];
        TeSet sets[] = {{"C", c}, {"K", k}, {"H", h}, {"W", w}};
        size_t nx = (size_t)(c * h * w), nf = (size_t)(k * c * 9), nu, ny, nyw;
        double *x = malloc(nx * sizeof(double)), *f = malloc(nf * sizeof(double));
        uint64_t s = 0x9e3779b97f4a7c15ULL + z;
        for (size_t i = 0; i < nx + nf; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            double v = te_round_to(TE_F32, (double)(s >> 11) / (double)(1ULL << 53) * 2 - 1);
            if (i < nx)
                x[i] = v;
            else
                f[i - nx] = v;
        }
        const char *xf[] = {"X", "F", NULL}, *fo[] = {"F", NULL}, *xu[] = {"X", "U", NULL};
        double *direct = run_example("conv2d", sets, 4, xf, (double *const[]){x, f}, "Y", &ny);
        double *u = run_example("conv2d_winograd_filter", sets, 2, fo, (double *const[]){f}, "U", &nu);
        double *wino = u ? run_example("conv2d_winograd", sets, 4, xu, (double *const[]){x, u}, "Y", &nyw) : NULL;
        CHECK(direct && wino);
        if (direct && wino) {
            CHECK_EQ_INT((int64_t)ny, k * h * w);
            CHECK_EQ_INT((int64_t)nyw, (int64_t)ny);
            double worst = 0;
            for (size_t i = 0; i < ny; i++)
                worst = fmax(worst, fabs(wino[i] - direct[i]) / (1e-4 * sqrt((double)c * 9) + 1e-4 * fabs(direct[i])));
            if (worst > 0.5) fprintf(stderr, "size %zu: the worst error is %.3f of the tolerance\n", z, worst);
            CHECK(worst <= 0.5);
        }
        free(direct), free(u), free(wino), free(x), free(f);
    }
}

TEST(f16_rounding) {
    CHECK_NEAR(te_round_to(TE_F16, 1.0 + 1.0 / 4096), 1.0, 0); /* below half a step */
    CHECK_NEAR(te_round_to(TE_F16, 1.0 + 3.0 / 2048), 1.0 + 2.0 / 1024, 0);
    CHECK_NEAR(te_round_to(TE_F16, 65504.0), 65504.0, 0);
    CHECK(isinf(te_round_to(TE_F16, 1e6)));
    CHECK_NEAR(te_round_to(TE_F32, 0.1), (double)0.1f, 0);
    CHECK_EQ_INT(te_floordiv(-3, 2), -2);
    CHECK_EQ_INT(te_floormod(-3, 2), 1);
    CHECK_EQ_INT(te_floordiv(3, -2), -2);
    CHECK_EQ_INT(te_floormod(3, -2), -1);
}

/* The file reader refuses a FIFO or a device at once (it would wait, or never end). */
TEST(load_refuses_fifos_and_devices) {
    char fifo[64], err[TT_ERRLEN];
    snprintf(fifo, sizeof fifo, "/tmp/tt_tefifo_%d", (int)getpid());
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(TeProgram_load(fifo, NULL, 0, err) == NULL);
    CHECK_CONTAINS(err, "not a regular file");
    CHECK(TeProgram_load("/dev/urandom", NULL, 0, err) == NULL);
    CHECK_CONTAINS(err, "not a regular file");
    unlink(fifo);
}

int main(void) {
    RUN(load_refuses_fifos_and_devices);
    RUN(examples_parse);
    RUN(matmul_structure_and_set);
    RUN(error_messages);
    RUN(set_of_unknown_name);
    RUN(bounds_accepted);
    RUN(empty_divisor_range);
    RUN(interpreter_by_hand);
    RUN(lane_evaluator_equals_direct);
    RUN(constant_tensor_evaluation);
    RUN(winograd_equals_direct);
    RUN(f16_rounding);
    return check_summary();
}
