/* tests/integration/te_exprs.h: the expressions the tensor-expression
 * sweeps (test_te_cpu, test_te_gpu) schedule at random: ten shipped examples
 * at small sizes and three inline programs (floor division and modulo,
 * stencils with compute_at regions, two outputs). */
#ifndef TT_TESTS_TE_EXPRS_H
#define TT_TESTS_TE_EXPRS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/steps.h"
#include "te/te.h"

typedef struct TeTestExpr {
    const char *example; /* a shipped example with small sizes, or NULL */
    const char *sets;    /* "N=4,M=3" */
    const char *src;     /* inline source when example is NULL */
} TeTestExpr;

static const TeTestExpr TE_TEST_EXPRS[] = {
    {"matmul", "N=13", NULL},
    {"dense", "M=3,N=10,K=7", NULL},
    {"batch_matmul", "B=2,M=5,N=6,K=4", NULL},
    {"conv2d", "C=3,H=6,W=7,K=4", NULL},
    {"depthwise", "C=3,H=9,W=8", NULL},
    {"softmax", "M=3,N=10", NULL},
    {"layer_norm", "M=4,N=12", NULL},
    {"max_pool", "C=2,H=9,W=6", NULL},
    {"dense_bias_gelu", "M=4,N=6,K=5", NULL},
    {"conv2d_winograd", "C=3,H=10,W=7,K=4", NULL}, /* constant tensors; the last tiles reach past the output */
    {NULL, NULL,
     "input A[6, 4]\nB[i < 8, j < 3] = A[(i * 3 + j) / 4, (i * 3 + j) % 4] * 2\n"
     "C[i < 24] = B[i / 3, i % 3] - min(A[i % 6, i / 6], 0.5)\noutput C\n"},
    {NULL, NULL,
     "input A[12, 10]\nB[i < 12, j < 10] = abs(A[i, j]) + 1\n"
     "C[i < 10, j < 8] = sum(B[i + r, j + s] * 0.25, r < 3, s < 3)\nD[i < 10, j < 8] = sqrt(C[i, j])\n"
     "output D\n"},
    {NULL, NULL,
     "input X[5, 9]\nA[i < 5, j < 3] = sum(X[i, 3 * j + k], k < 3) / 3\n"
     "M[i < 5] = min_over(if(j != 1, A[i, j], 100), j < 3) + log(1 + exp(tanh(A[i, 1])))\n"
     "output M\noutput A\n"},
};

static int te_test_samples(void) {
    const char *s = getenv("TT_TE_SAMPLES");
    int n = s ? atoi(s) : 20;
    return n > 0 ? n : 20;
}

static TeProgram *te_test_load(const TeTestExpr *x, char *err) {
    if (!x->example) return TeProgram_parse(x->src, "inline.te", NULL, 0, err);
    const char *data = getenv("TT_TEST_DATA");
    char root[400], path[512], sets_buf[128];
    snprintf(root, sizeof root, "%s", data ? data : "tests/data");
    char *slash = strrchr(root, '/');
    if (slash) *slash = 0;
    snprintf(path, sizeof path, "%s/../examples/te/%s.te", root, x->example);
    TeSet sets[8];
    int n = 0;
    snprintf(sets_buf, sizeof sets_buf, "%s", x->sets);
    for (char *save = NULL, *w = strtok_r(sets_buf, ",", &save); w && n < 8; w = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(w, '=');
        *eq = 0;
        sets[n].name = w;
        sets[n++].value = atoll(eq + 1);
    }
    return TeProgram_load(path, sets, n, err);
}

/* Whether a schedule uses a step of this kind. */
static inline int te_test_has(const Steps *s, StepKind kind) {
    for (int i = 0; i < s->n; i++)
        if (s->step[i].kind == kind) return 1;
    return 0;
}

#define TE_TEST_N_EXPRS ((int)(sizeof TE_TEST_EXPRS / sizeof *TE_TEST_EXPRS))

#endif
