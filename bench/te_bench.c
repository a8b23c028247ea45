/* bench/te_bench.c: the tensor-expression path on cpu, per shipped example:
 * lowering time and compile time per candidate (median) of N random
 * schedules, and the best GFLOPS among them.
 *
 *   te_bench [--trials N] [--seed S] [--only SUBSTR] [--examples DIR]
 *
 * Each candidate is sampled, lowered, emitted as C, compiled alone with the
 * cpu target's compiler and flags, loaded and timed in this process (median
 * of 3 runs after a warm-up; checked against the interpreter first when the
 * expression is small enough to interpret in a few seconds). This is not the
 * tuner: the isolated runner is not involved, so a crashing kernel would end
 * the bench (every sampled schedule is checked by tests/integration/test_te_cpu). */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "kernels/targets/cpu/abi.h"
#include "kernels/templates/te/te_lower.h"

static const char *const EXAMPLES[] = {"matmul",  "dense",      "batch_matmul", "conv2d",         "depthwise",
                                       "softmax", "layer_norm", "max_pool",     "dense_bias_gelu"};

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    if (n == 0) return NAN;
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    int trials = 16;
    uint64_t seed = 1;
    const char *only = NULL, *dir = "examples/te";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--trials") && i + 1 < argc)
            trials = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--examples") && i + 1 < argc)
            dir = argv[++i];
        else {
            fprintf(stderr, "usage: te_bench [--trials N] [--seed S] [--only SUBSTR] [--examples DIR]\n");
            return 2;
        }
    }
    if (trials < 1) trials = 1;
    char tmp[] = "/tmp/tt-te-bench.XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    Rng rng;
    Rng_seed(&rng, seed);
    printf("%-16s %8s %6s %10s %10s %6s %9s  %s\n", "example", "GFLOP", "valid", "lower ms", "compile s", "wrong",
           "best GF/s", "best schedule");
    for (size_t e = 0; e < sizeof EXAMPLES / sizeof *EXAMPLES; e++) {
        if (only && !strstr(EXAMPLES[e], only)) continue;
        char path[512], err[TT_ERRLEN];
        snprintf(path, sizeof path, "%s/%s.te", dir, EXAMPLES[e]);
        TeProgram *g = TeProgram_load(path, NULL, 0, err);
        static TeDag d;
        if (!g || TeDag_build(&d, g, err) != TT_OK) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        float *buf[TE_MAX_TENSORS];
        double *ref[TE_MAX_TENSORS];
        for (int t = 0; t < g->n_tensors; t++) {
            int64_t n = TeProgram_numel(g, t);
            buf[t] = malloc(sizeof(float) * n);
            ref[t] = malloc(sizeof(double) * n);
            for (int64_t i = 0; i < n; i++)
                ref[t][i] = g->tensors[t].is_input ? (float)(Rng_uniform(&rng) - 0.5) : 0;
        }
        int check = d.flops < 1e8; /* the tree-walking interpreter is slow: check only small expressions */
        if (check) TeProgram_eval(g, ref);
        double *lower_ms = malloc(sizeof(double) * trials), *compile_s = malloc(sizeof(double) * trials);
        int n_ok = 0, wrong = 0;
        double best = 0;
        char best_steps[1024] = "-";
        for (int k = 0; k < trials; k++) {
            Steps s;
            TeSchedule_sample(&d, &rng, 0, &s);
            LoopNest ln;
            double t0 = clock_mono();
            if (LoopNest_lower(&ln, &d, &s, err) != TT_OK) {
                fprintf(stderr, "%s: %s\n", EXAMPLES[e], err);
                continue;
            }
            StrBuf c;
            StrBuf_init(&c);
            LoopNest_emit_c(&ln, "kernel", &c);
            lower_ms[n_ok] = (clock_mono() - t0) * 1e3;
            LoopNest_done(&ln);
            char c_path[300], so_path[300], cmd[1024];
            snprintf(c_path, sizeof c_path, "%s/k%zu_%d.c", tmp, e, k);
            snprintf(so_path, sizeof so_path, "%s/k%zu_%d.so", tmp, e, k);
            FILE *f = fopen(c_path, "w");
            fputs(c.data, f);
            fclose(f);
            StrBuf_done(&c);
            snprintf(cmd, sizeof cmd, "cc %s -o %s %s -lm", TT_CPU_CFLAGS, so_path, c_path);
            t0 = clock_mono();
            int rc = system(cmd);
            compile_s[n_ok] = clock_mono() - t0;
            unlink(c_path);
            if (rc != 0) {
                fprintf(stderr, "%s: candidate %d does not compile\n", EXAMPLES[e], k);
                continue;
            }
            void *so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
            unlink(so_path);
            void (*fn)(float **) = so ? (void (*)(float **))dlsym(so, "kernel") : NULL;
            if (!fn) continue;
            n_ok++;
            for (int t = 0; t < g->n_tensors; t++)
                for (int64_t i = 0; i < TeProgram_numel(g, t); i++)
                    buf[t][i] = g->tensors[t].is_input ? (float)ref[t][i] : NAN;
            fn(buf); /* warm-up, and the check */
            int bad = 0;
            for (int t = 0; check && t < g->n_tensors && !bad; t++)
                if (g->tensors[t].is_output)
                    for (int64_t i = 0; i < TeProgram_numel(g, t) && !bad; i++)
                        bad = !(fabs(ref[t][i] - buf[t][i]) <= 1e-3 + 1e-3 * fabs(ref[t][i]));
            if (bad) {
                wrong++;
                continue;
            }
            double runs[3];
            for (int r = 0; r < 3; r++) {
                t0 = clock_mono();
                fn(buf);
                runs[r] = clock_mono() - t0;
            }
            double gf = d.flops / median(runs, 3) / 1e9;
            if (gf > best) {
                best = gf;
                StrBuf b;
                StrBuf_init(&b);
                Steps_encode(&s, &b);
                snprintf(best_steps, sizeof best_steps, "%s", b.data);
                StrBuf_done(&b);
            }
        }
        printf("%-16s %8.4f %3d/%-2d %10.3f %10.2f %6d %9.2f  %s%s\n", EXAMPLES[e], d.flops / 1e9, n_ok, trials,
               median(lower_ms, n_ok), median(compile_s, n_ok), wrong, best, best_steps, check ? "" : " (unchecked)");
        fflush(stdout);
        free(lower_ms);
        free(compile_s);
        for (int t = 0; t < g->n_tensors; t++)
            free(buf[t]), free(ref[t]);
        TeProgram_delete(g);
    }
    rmdir(tmp);
    struct utsname u;
    uname(&u);
    double load[3] = {0};
    getloadavg(load, 3);
    printf("machine %s, load average %.2f %.2f %.2f\n", u.machine, load[0], load[1], load[2]);
    return 0;
}
