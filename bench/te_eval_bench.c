/* bench/te_eval_bench.c: the reference interpreter's cost per shipped example
 * at its full size: the direct tree walk (TeProgram_evalDirect, one element
 * at a time) against the lane evaluator (TeProgram_eval, which every task's
 * reference output comes from), in one run, and whether their results are
 * the same bits.
 *
 *   te_eval_bench [--only SUBSTR] [--examples DIR] [--repeat N]
 *
 * Prints per example the CPU seconds of each (the median of N runs, default
 * 1: the direct walk of conv2d takes several seconds) and their ratio. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "te/te.h"

static const char *const EXAMPLES[] = {"matmul",  "dense",      "batch_matmul", "conv2d",         "depthwise",
                                       "softmax", "layer_norm", "max_pool",     "dense_bias_gelu"};

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double timed(const TeProgram *g, double **v, int direct, int repeat) {
    double t[16];
    for (int r = 0; r < repeat; r++) {
        double t0 = cpu_s();
        if (direct)
            TeProgram_evalDirect(g, v);
        else
            TeProgram_eval(g, v);
        t[r] = cpu_s() - t0;
    }
    qsort(t, (size_t)repeat, sizeof *t, cmp);
    return t[repeat / 2];
}

int main(int argc, char **argv) {
    const char *only = NULL, *dir = "examples/te";
    int repeat = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--examples") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc && atoi(argv[i + 1]) >= 1 && atoi(argv[i + 1]) <= 16)
            repeat = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: te_eval_bench [--only SUBSTR] [--examples DIR] [--repeat 1..16]\n");
            return 2;
        }
    }
    printf("%-16s %12s %12s %8s %s\n", "example", "direct_s", "lanes_s", "ratio", "same");
    int bad = 0;
    for (size_t e = 0; e < sizeof EXAMPLES / sizeof *EXAMPLES; e++) {
        if (only && !strstr(EXAMPLES[e], only)) continue;
        char path[512], err[TT_ERRLEN] = "";
        snprintf(path, sizeof path, "%s/%s.te", dir, EXAMPLES[e]);
        TeProgram *g = TeProgram_load(path, NULL, 0, err);
        if (!g) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        double *a[TE_MAX_TENSORS] = {0}, *b[TE_MAX_TENSORS] = {0};
        uint64_t x = 88172645463325252ULL;
        for (int t = 0; t < g->n_tensors; t++) {
            size_t n = (size_t)TeProgram_numel(g, t);
            a[t] = calloc(n, sizeof(double));
            b[t] = calloc(n, sizeof(double));
            if (!a[t] || !b[t]) return 1;
            if (!g->tensors[t].is_input) continue;
            for (size_t k = 0; k < n; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                a[t][k] = b[t][k] = (double)(float)((double)(x >> 11) / (double)(1ULL << 53) * 2 - 1);
            }
        }
        double td = timed(g, b, 1, repeat), tl = timed(g, a, 0, repeat);
        int same = 1;
        for (int t = 0; t < g->n_tensors; t++) {
            same &= memcmp(a[t], b[t], (size_t)TeProgram_numel(g, t) * sizeof(double)) == 0;
            free(a[t]);
            free(b[t]);
        }
        bad |= !same;
        printf("%-16s %12.3f %12.3f %8.1f %s\n", EXAMPLES[e], td, tl, td / (tl > 1e-9 ? tl : 1e-9),
               same ? "yes" : "NO");
        fflush(stdout);
        TeProgram_delete(g);
    }
    return bad;
}
