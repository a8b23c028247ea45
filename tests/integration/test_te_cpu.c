/* tests/integration/test_te_cpu.c: the C code of random schedules of twelve
 * tensor expressions, built with the cpu target's compiler and flags, agrees
 * with the reference interpreter; so does the C code of their sketches'
 * schedules (the zero-trial default of each sketch, random annotations,
 * mutations of them).
 *
 * TT_TE_SAMPLES schedules per expression (default 20, so 240 in all); each
 * expression's kernels are built into one shared object. Defined tensors
 * start as NaN so that an element a schedule forgets to write is caught. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/targets/cpu/abi.h"
#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_sketch.h"
#include "tests/check.h"

#include "te_exprs.h"

typedef void (*KernelFn)(float **);

/* Schedule k of dag: the plain sampler's, or (sketches) for k < twice the
 * sketch count the zero-trial default of sketch k % count (AVX-512's, then
 * AVX2's), else a random annotation of sketch k % count mutated k % 3 times,
 * for 16-float and 8-float registers in turn (AVX2 copies matmul's B by strips). */
static void schedule(const TeDag *d, int sketches, int k, Rng *rng, Steps *out) {
    if (!sketches) {
        TeSchedule_sample(d, rng, 0, out);
        return;
    }
    Sketch sk[SKETCH_MAX];
    SketchAnn ann[TE_MAX_TENSORS];
    int n = Sketch_generate(d, 0, 2, sk), i = k % n, vector = (k / n) % 2 ? 8 : 16;
    for (int j = 0; j < n; j++)
        sk[j].vector = vector;
    if (k < 2 * n) {
        Sketch_heuristic(&sk[i], d, vector, ann);
    } else {
        Sketch_annotate(&sk[i], d, rng, ann);
        for (int m = 0; m < k % 3; m++)
            Sketch_mutate(&sk[i], d, rng, ann);
    }
    Sketch_steps(&sk[i], d, ann, out);
}

static void run_schedules(int sketches) {
    int per = te_test_samples(), total = 0, wrong = 0, cached = 0, both = 0;
    char dir[] = "/tmp/tt-te-cpu.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    Rng rng;
    Rng_seed(&rng, 20261125);
    for (size_t e = 0; e < TE_TEST_N_EXPRS; e++) {
        char err[TT_ERRLEN] = "";
        TeProgram *g = te_test_load(&TE_TEST_EXPRS[e], err);
        if (!g) {
            fprintf(stderr, "expression %zu: %s\n", e, err);
            CHECK(0);
            continue;
        }
        static TeDag d;
        CHECK(TeDag_build(&d, g, err) == TT_OK);
        /* inputs and the reference */
        double *ref[TE_MAX_TENSORS];
        for (int t = 0; t < g->n_tensors; t++) {
            int64_t n = TeProgram_numel(g, t);
            ref[t] = malloc(sizeof(double) * n);
            for (int64_t i = 0; i < n; i++)
                ref[t][i] = g->tensors[t].is_input ? te_round_to(TE_F32, Rng_uniform(&rng) * 2 - 1) : NAN;
        }
        TeProgram_eval(g, ref);
        /* every kernel of this expression in one source */
        StrBuf src;
        StrBuf_init(&src);
        Steps *steps = calloc(per, sizeof(Steps));
        for (int k = 0; k < per; k++) {
            schedule(&d, sketches, k, &rng, &steps[k]);
            int w = te_test_has(&steps[k], STEP_CACHE_WRITE), r = te_test_has(&steps[k], STEP_CACHE_READ);
            cached += w || r;
            both += w && r;
            LoopNest ln;
            if (LoopNest_lower(&ln, &d, &steps[k], err) != TT_OK) {
                fprintf(stderr, "expression %zu sample %d: %s\n", e, k, err);
                CHECK(0);
                StrBuf_printf(&src, "void k%d(float **t) { (void)t; }\n", k);
                continue;
            }
            char fn[16];
            snprintf(fn, sizeof fn, "k%d", k);
            StrBuf one;
            StrBuf_init(&one);
            LoopNest_emit_c(&ln, fn, &one);
            /* the helpers are static: keep one copy */
            const char *body = k ? strstr(one.data, "void k") : one.data;
            StrBuf_append(&src, body);
            StrBuf_done(&one);
            LoopNest_done(&ln);
        }
        char c_path[256], so_path[256], cmd[1024];
        snprintf(c_path, sizeof c_path, "%s/e%zu.c", dir, e);
        snprintf(so_path, sizeof so_path, "%s/e%zu.so", dir, e);
        FILE *f = fopen(c_path, "w");
        fputs(src.data, f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "cc %s -o %s %s -lm", TT_CPU_CFLAGS, so_path, c_path);
        int rc = system(cmd);
        CHECK_EQ_INT(rc, 0);
        void *so = rc == 0 ? dlopen(so_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) : NULL;
        CHECK(so != NULL);
        for (int k = 0; so && k < per; k++) {
            char fn[16];
            snprintf(fn, sizeof fn, "k%d", k);
            KernelFn kf = (KernelFn)dlsym(so, fn);
            float *buf[TE_MAX_TENSORS];
            for (int t = 0; t < g->n_tensors; t++) {
                int64_t n = TeProgram_numel(g, t);
                buf[t] = malloc(sizeof(float) * n);
                for (int64_t i = 0; i < n; i++)
                    buf[t][i] = g->tensors[t].is_input ? (float)ref[t][i] : NAN;
            }
            kf(buf);
            int bad = 0;
            for (int t = 0; t < g->n_tensors && !bad; t++) {
                if (!g->tensors[t].is_output) continue;
                for (int64_t i = 0; i < TeProgram_numel(g, t) && !bad; i++) {
                    double r = ref[t][i], v = buf[t][i];
                    if (!(fabs(r - v) <= 1e-4 + 1e-4 * fabs(r))) {
                        StrBuf text;
                        StrBuf_init(&text);
                        Steps_encode(&steps[k], &text);
                        fprintf(stderr, "expression %zu (%s) schedule '%s': %s[%lld] = %g, expected %g\n", e,
                                TE_TEST_EXPRS[e].example ? TE_TEST_EXPRS[e].example : "inline", text.data,
                                g->tensors[t].name, (long long)i, v, r);
                        StrBuf_done(&text);
                        bad = 1;
                    }
                }
            }
            wrong += bad;
            total++;
            for (int t = 0; t < g->n_tensors; t++)
                free(buf[t]);
        }
        if (so) dlclose(so); /* RTLD_NODELETE: OpenMP threads of the object live on */
        unlink(c_path);
        unlink(so_path);
        StrBuf_done(&src);
        free(steps);
        for (int t = 0; t < g->n_tensors; t++)
            free(ref[t]);
        TeProgram_delete(g);
    }
    rmdir(dir);
    printf("%d %s schedules over %zu expressions run on cpu (%d with a cache stage, %d with both kinds), %d wrong\n",
           total, sketches ? "sketch" : "random", (size_t)TE_TEST_N_EXPRS, cached, both, wrong);
    CHECK_EQ_INT(wrong, 0);
    CHECK(cached >= per / 2 && (sketches || both >= 1)); /* the cache steps are exercised */
    CHECK_EQ_INT(total, per * TE_TEST_N_EXPRS);
}

TEST(random_schedules_match_interpreter) { run_schedules(0); }

TEST(sketch_schedules_match_interpreter) { run_schedules(1); }

/* The generated C's exp (tt_expf, a polynomial that vectorizes, also without AVX-512's masks) against exp in
 * double over a vectorized loop, which the compiler does vectorize: within 1.5 ulp wherever e^x is a normal float
 * (from -87.3365 to 88.7228), exactly 0 where it is below 2^-126 (denormal results are flushed), inf from 88.73 on,
 * NaN kept. */
TEST(generated_exp_is_accurate) {
    enum { N = 1 << 20 };
    char err[TT_ERRLEN] = "", text[128];
    snprintf(text, sizeof text, "input X[%d]\nY[i < %d] = exp(X[i])\noutput Y\n", N + 6, N + 6);
    TeProgram *g = TeProgram_parse(text, "exp.te", NULL, 0, err);
    CHECK(g != NULL);
    if (!g) return;
    static TeDag d;
    CHECK(TeDag_build(&d, g, err) == TT_OK);
    Steps steps;
    LoopNest ln;
    CHECK(Steps_decode("vectorize 0 0", &steps, err) == TT_OK && LoopNest_lower(&ln, &d, &steps, err) == TT_OK);
    StrBuf src;
    StrBuf_init(&src);
    LoopNest_emit_c(&ln, "k", &src);
    LoopNest_done(&ln);
    char dir[] = "/tmp/tt-te-exp.XXXXXX", c_path[64], so_path[64], cmd[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(c_path, sizeof c_path, "%s/exp.c", dir);
    snprintf(so_path, sizeof so_path, "%s/exp.so", dir);
    FILE *f = fopen(c_path, "w");
    fputs(src.data, f);
    fclose(f);
    StrBuf_done(&src);
    snprintf(cmd, sizeof cmd, "cc %s -o %s %s -lm", TT_CPU_CFLAGS, so_path, c_path);
    CHECK_EQ_INT(system(cmd), 0);
    /* the loop is vectorized: packed float multiplies in its assembly (a scalar loop has only mulss) */
    snprintf(cmd, sizeof cmd, "cc %s -S -o - %s | grep -qE 'mulps|fmadd[0-9]*ps'", TT_CPU_CFLAGS, c_path);
    CHECK_EQ_INT(system(cmd), 0);
    void *so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    KernelFn k = so ? (KernelFn)dlsym(so, "k") : NULL;
    CHECK(k != NULL);
    float *x = malloc(sizeof(float) * (N + 6)), *y = malloc(sizeof(float) * (N + 6));
    for (int i = 0; i < N; i++) /* -105 .. 89 evenly, then the ends */
        x[i] = (float)(-105.0 + 194.0 * i / N);
    const float ends[6] = {NAN, INFINITY, -INFINITY, 88.73f, -200.0f, 0.0f};
    memcpy(x + N, ends, sizeof ends);
    if (k) k((float *[]){x, y});
    double worst = 0;
    int wrong_ends = 0, flushed = 0;
    for (int i = 0; k && i < N; i++) {
        double e = exp((double)x[i]);
        if (e > 3.4028234663852886e38) { /* overflows a float */
            wrong_ends += !isinf(y[i]);
            continue;
        }
        if (e < 1.1754943508222875e-38) { /* a denormal or 0: flushed to 0 */
            flushed += y[i] == 0.0f;
            wrong_ends += y[i] != 0.0f;
            continue;
        }
        double ulp = ldexp(1, ilogb(e) - 23);
        double u = fabs(y[i] - e) / ulp;
        if (!(u <= worst)) worst = u;
    }
    if (k) {
        wrong_ends += !isnan(y[N]) + !(isinf(y[N + 1]) && y[N + 1] > 0) + (y[N + 2] != 0.0f) + !isinf(y[N + 3]) +
                      (y[N + 4] != 0.0f) + (y[N + 5] != 1.0f);
        printf("generated exp over [-105, 89]: worst %.3f ulp over the normal results, %d below 2^-126 flushed to "
               "0\n",
               worst, flushed);
    }
    CHECK(worst <= 1.5);
    CHECK(flushed > 0); /* the grid reaches below -87.34 */
    CHECK_EQ_INT(wrong_ends, 0);
    free(x);
    free(y);
    if (so) dlclose(so);
    unlink(c_path);
    unlink(so_path);
    rmdir(dir);
    TeProgram_delete(g);
}

int main(void) {
    RUN(generated_exp_is_accurate);
    RUN(random_schedules_match_interpreter);
    RUN(sketch_schedules_match_interpreter);
    return check_summary();
}
