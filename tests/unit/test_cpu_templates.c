/* tests/unit/test_cpu_templates.c: the CPU templates (conv2d, depthwise,
 * dense, batch_matmul) generate C that compiles and matches the reference on
 * small, odd shapes, for several random configs per workload.
 *
 * The test does what the cpu target does, in-process: generate a config's
 * source, compile it with `cc` + TT_CPU_CFLAGS into a temporary shared object
 * (two compiles at a time), dlopen it, call tt_setup / tt_pack / tt_run /
 * tt_finish / tt_teardown, and compare the output with Workload_reference. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/strbuf.h"
#include "kernels/cpu/abi.h"
#include "kernels/cpu/conv2d_winograd_cpu.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "space/space.h"
#include "tests/check.h"

extern const Template tmpl_conv2d_cpu, tmpl_conv2d_winograd_cpu, tmpl_depthwise_cpu, tmpl_dense_cpu, tmpl_batch_matmul_cpu;

#define CONFIGS_PER_CASE 3 /* 2 random + the valid config with the biggest unrolled register tile */
#define MAX_JOBS 64

static char g_dir[256];
static DeviceInfo g_dev;

typedef struct Job {
    char src[320], so[320];
    pid_t pid;
    int status; /* exit status of cc, -1 while unknown */
    char cfg[256];
} Job;

static void dev_init(DeviceInfo *dev) {
    memset(dev, 0, sizeof *dev);
    snprintf(dev->name, sizeof dev->name, "test cpu");
    snprintf(dev->arch, sizeof dev->arch, "x86_64");
    dev->present = true;
    dev->cores = 2;
    dev->vector_floats = __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("avx2") ? 8 : 4;
}

static pid_t spawn_cc(const char *src, const char *so) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cc %s -o %s %s", TT_CPU_CFLAGS, so, src);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Compiles the jobs, two at a time. */
static void compile_all(Job *jobs, int n) {
    int next = 0, running = 0;
    while (next < n || running > 0) {
        while (running < 2 && next < n) {
            jobs[next].pid = spawn_cc(jobs[next].src, jobs[next].so);
            jobs[next].status = -1;
            next++, running++;
        }
        int st;
        pid_t done = wait(&st);
        if (done < 0) break;
        for (int i = 0; i < next; i++)
            if (jobs[i].pid == done) jobs[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        running--;
    }
}

static float **alloc_args(const Workload *wl, int *nargs, ArgInfo *info) {
    *nargs = Workload_args(wl, info);
    float **args = calloc((size_t)*nargs, sizeof *args);
    for (int i = 0; i < *nargs; i++)
        args[i] = calloc(info[i].count ? info[i].count : 1, sizeof(float));
    return args;
}

static void free_args(float **args, int n) {
    for (int i = 0; i < n; i++)
        free(args[i]);
    free(args);
}

/* Loads a compiled kernel, runs the ABI sequence on args, returns false on failure. */
static bool run_so(const char *so, float **args, char *why, size_t n) {
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, n, "dlopen: %s", dlerror());
        return false;
    }
    tt_setup_fn setup = (tt_setup_fn)dlsym(h, "tt_setup");
    tt_state_fn pack = (tt_state_fn)dlsym(h, "tt_pack"), run = (tt_state_fn)dlsym(h, TT_CPU_ENTRY);
    tt_state_fn finish = (tt_state_fn)dlsym(h, "tt_finish"), teardown = (tt_state_fn)dlsym(h, "tt_teardown");
    bool ok = false;
    void *state = NULL;
    if (!setup || !pack || !run || !finish || !teardown) {
        snprintf(why, n, "missing ABI symbol");
    } else if (setup(args, &state) != 0) {
        snprintf(why, n, "tt_setup failed");
        teardown(state);
    } else {
        pack(state);
        run(state);
        run(state); /* a second run must give the same output (accumulators reset) */
        finish(state);
        teardown(state);
        ok = true;
    }
    dlclose(h);
    return ok;
}

/* When set, every config of check_case has this option knob at this value. */
static const char *g_force_knob;
static int64_t g_force_value;
/* When g_n_each > 0, check_case checks g_n_each configs, config i with the
 * knob g_force_knob at g_each[i] (and prints how close each came to the
 * tolerance of Workload_compare). */
static int64_t g_each[8];
static int g_n_each;

/* The worst |got - ref| as a share of Workload_compare's tolerance for a conv2d
 * (atol = 1e-4 sqrt(K), rtol = 1e-4, K = ci kh kw): 1.0 is the limit. */
static double conv_errorShare(const Workload *wl, const float *ref, const float *got, size_t n) {
    double K = (double)(wl->ci * wl->kh * wl->kw), atol = 1e-4 * sqrt(K), worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]) / (atol + 1e-4 * fabs((double)ref[i]));
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

/* The precheck-valid config of a space with the largest accumulators x unrolled
 * steps (features 0 and 6 of every CPU template): the hardest one to compile. */
static uint64_t biggest_valid(const Template *t, const Workload *wl, const Space *space) {
    uint64_t best = 0;
    double best_size = -1;
    int32_t choice[SPACE_MAX_KNOBS];
    uint64_t step = space->total > 20000 ? space->total / 20000 : 1;
    for (uint64_t i = 0; i < space->total; i += step) {
        Space_decode(space, i, choice);
        char reason[256];
        float f[64];
        if (g_force_knob && Space_optionByName(space, choice, g_force_knob) != g_force_value) continue;
        if (!t->precheck(wl, space, choice, &g_dev, reason, sizeof reason)) continue;
        if (t->features(wl, space, choice, &g_dev, f, 64) < 7) continue;
        if ((double)f[0] * f[6] > best_size) best_size = (double)f[0] * f[6], best = i;
    }
    return best;
}

/* Checks a workload with CONFIGS_PER_CASE precheck-valid configs. */
static void check_case(const char *spec, const Template *t, uint64_t seed) {
    char err[TT_ERRLEN] = "";
    Workload wl;
    if (Workload_parse(spec, &wl, err) != TT_OK) {
        fprintf(stderr, "parse %s: %s\n", spec, err);
        CHECK(0);
        return;
    }
    CHECK(t->applies(&wl));
    Space space;
    Space_init(&space);
    Status st = t->define_space(&wl, &g_dev, &space, err);
    CHECK(st == TT_OK);
    if (st != TT_OK) {
        fprintf(stderr, "%s: %s\n", spec, err);
        Space_done(&space);
        return;
    }
    CHECK(space.total > 1);

    Rng rng;
    Rng_seed(&rng, seed);
    int want = g_n_each > 0 ? g_n_each : CONFIGS_PER_CASE;
    Job jobs[8];
    int n = 0;
    int32_t choice[SPACE_MAX_KNOBS];
    for (int tries = 0; tries < 5000 && n < want; tries++) {
        if (g_n_each > 0) g_force_value = g_each[n];
        uint64_t idx = n == want - 1 ? biggest_valid(t, &wl, &space) : Rng_below(&rng, space.total);
        if (g_n_each > 0 && tries % 2 == 0) idx = Rng_below(&rng, space.total);
        Space_decode(&space, idx, choice);
        char reason[256];
        if (g_force_knob && Space_optionByName(&space, choice, g_force_knob) != g_force_value) continue;
        if (!t->precheck(&wl, &space, choice, &g_dev, reason, sizeof reason)) continue;
        KernelSource ks;
        KernelSource_init(&ks);
        CHECK(t->generate(&wl, &space, choice, &g_dev, DIALECT_C, &ks, err) == TT_OK);
        float feats[64];
        CHECK(t->features(&wl, &space, choice, &g_dev, feats, 64) > 4);
        Job *j = &jobs[n];
        Space_format(&space, choice, j->cfg, sizeof j->cfg);
        snprintf(j->src, sizeof j->src, "%s/k%llu_%d.c", g_dir, (unsigned long long)seed, n);
        snprintf(j->so, sizeof j->so, "%s/k%llu_%d.so", g_dir, (unsigned long long)seed, n);
        FILE *f = fopen(j->src, "w");
        CHECK(f != NULL);
        if (f) {
            fputs(ks.source, f);
            fclose(f);
            n++;
        }
        KernelSource_done(&ks);
    }
    CHECK_EQ_INT(n, want);
    compile_all(jobs, n);

    ArgInfo info[WORKLOAD_MAX_ARGS];
    int nargs;
    float **args = alloc_args(&wl, &nargs, info);
    Workload_fillInputs(&wl, args, seed);
    size_t out_n = info[nargs - 1].count;
    float *ref = malloc(out_n * sizeof(float));
    Workload_reference(&wl, args);
    memcpy(ref, args[nargs - 1], out_n * sizeof(float));
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(jobs[i].status, 0);
        if (jobs[i].status != 0) {
            fprintf(stderr, "%s [%s]: compile failed (%s)\n", spec, jobs[i].cfg, jobs[i].src);
            continue;
        }
        for (size_t e = 0; e < out_n; e++)
            args[nargs - 1][e] = 12345.0f; /* poison */
        char why[512] = "";
        bool ran = run_so(jobs[i].so, args, why, sizeof why);
        CHECK(ran);
        bool same = ran && Workload_compare(&wl, ref, args[nargs - 1], why, sizeof why);
        CHECK(same);
        if (ran && g_n_each > 0)
            printf("  %s [%s]: worst error %.3f of the tolerance\n", spec, jobs[i].cfg,
                   conv_errorShare(&wl, ref, args[nargs - 1], out_n));
        if (!same)
            fprintf(stderr, "%s [%s]: %s (%s)\n", spec, jobs[i].cfg, why, jobs[i].src);
        else {
            unlink(jobs[i].src);
        }
        unlink(jobs[i].so);
    }
    free(ref);
    free_args(args, nargs);
    Space_done(&space);
}

TEST(conv2d_nchw_odd) {
    check_case("conv2d:n=1,ci=3,h=11,w=13,co=7,kh=3,kw=3,stride=1,pad=1", &tmpl_conv2d_cpu, 11);
    check_case("conv2d:n=2,ci=8,h=9,w=9,co=20,kh=3,kw=3,stride=2,pad=0", &tmpl_conv2d_cpu, 12);
    check_case("conv2d:n=1,ci=5,h=17,w=10,co=17,kh=7,kw=7,stride=2,pad=3,bias=1,relu=1", &tmpl_conv2d_cpu, 13);
    check_case("conv2d:n=1,ci=6,h=12,w=12,co=16,kh=3,kw=3,pad=2,dilation=2,bias=1,relu=1,residual=1", &tmpl_conv2d_cpu,
               14);
    check_case("conv2d:n=1,ci=32,h=8,w=8,co=48,kh=1,kw=1,stride=2,pad=0", &tmpl_conv2d_cpu, 15);
}

TEST(conv2d_nhwc) {
    check_case("conv2d:n=1,ci=5,h=10,w=7,co=17,kh=3,kw=3,stride=2,pad=3,layout=NHWC,bias=1,relu=1", &tmpl_conv2d_cpu,
               21);
    check_case("conv2d:n=2,ci=16,h=8,w=9,co=32,kh=1,kw=1,layout=NHWC,residual=1", &tmpl_conv2d_cpu, 22);
    /* the output written in place (no tt_finish), with the whole epilogue */
    g_force_knob = "out_direct", g_force_value = 1;
    check_case("conv2d:n=2,ci=5,h=9,w=12,co=32,kh=3,kw=3,pad=1,layout=NHWC,bias=1,relu=1,residual=1", &tmpl_conv2d_cpu,
               24);
    g_force_knob = NULL;
    check_case("conv2d:n=1,ci=7,h=13,w=13,co=24,kh=3,kw=5,pad=2,dilation=2,layout=NHWC,bias=1,relu=1,residual=1",
               &tmpl_conv2d_cpu, 23);
}

TEST(depthwise) {
    check_case("depthwise_conv2d:n=1,ci=13,h=9,w=11,kh=3,kw=3,pad=1", &tmpl_depthwise_cpu, 31);
    check_case("depthwise_conv2d:n=1,ci=8,mult=2,h=8,w=8,kh=3,kw=3,stride=2,pad=1,layout=NHWC,bias=1,relu=1",
               &tmpl_depthwise_cpu, 32);
    check_case("depthwise_conv2d:n=2,ci=32,h=7,w=7,kh=3,kw=3,pad=2,dilation=2,residual=1", &tmpl_depthwise_cpu, 33);
    check_case("depthwise_conv2d:n=1,ci=17,h=12,w=12,kh=5,kw=5,stride=2,pad=0,layout=NHWC", &tmpl_depthwise_cpu, 34);
}

TEST(dense) {
    check_case("dense:m=1,n=37,k=29", &tmpl_dense_cpu, 41);
    check_case("dense:m=64,n=50,k=33,bias=1,relu=1", &tmpl_dense_cpu, 42);
    check_case("dense:m=7,n=16,k=300", &tmpl_dense_cpu, 43);
    check_case("dense:m=1,n=100,k=64,bias=1", &tmpl_dense_cpu, 44);
}

TEST(batch_matmul) {
    check_case("batch_matmul:b=3,m=5,n=19,k=11", &tmpl_batch_matmul_cpu, 51);
    check_case("batch_matmul:b=2,m=16,n=32,k=64", &tmpl_batch_matmul_cpu, 52);
}

/* The transform matrices of F(m, 3) compute the 1-D correlation exactly:
 * sum_j at[i][j] g[j][k] bt[j][l] = [l == i + k]. */
TEST(winograd_matrices) {
    for (int m = 2; m <= 6; m += 2) {
        double at[WG_MAX_A][WG_MAX_A], g[WG_MAX_A][3], bt[WG_MAX_A][WG_MAX_A];
        WinogradCpu_matrices(m, at, g, bt);
        double worst = 0;
        for (int i = 0; i < m; i++)
            for (int k = 0; k < 3; k++)
                for (int l = 0; l < m + 2; l++) {
                    double sum = 0;
                    for (int j = 0; j < m + 2; j++)
                        sum += at[i][j] * g[j][k] * bt[j][l];
                    double d = fabs(sum - (l == i + k ? 1.0 : 0.0));
                    if (d > worst) worst = d;
                }
        CHECK(worst < 1e-12);
    }
}

static void check_winogradEachM(const char *spec, uint64_t seed) {
    g_force_knob = "m";
    g_each[0] = 2, g_each[1] = 4, g_each[2] = 6, g_n_each = 3;
    check_case(spec, &tmpl_conv2d_winograd_cpu, seed);
    g_force_knob = NULL, g_n_each = 0;
}

/* Odd shapes: spatial sizes that are no multiple of any tile, odd channel
 * counts, no / wider padding, a batch, NHWC, the whole epilogue; each tile size. */
TEST(conv2d_winograd_odd) {
    check_winogradEachM("conv2d:n=1,ci=3,h=11,w=13,co=7,kh=3,kw=3,pad=1", 71);
    check_winogradEachM("conv2d:n=2,ci=17,h=9,w=7,co=33,kh=3,kw=3,pad=0,bias=1,relu=1", 72);
    check_winogradEachM("conv2d:n=1,ci=5,h=10,w=7,co=17,kh=3,kw=3,pad=2,layout=NHWC,bias=1,relu=1,residual=1", 73);
    check_winogradEachM("conv2d:n=1,ci=20,h=1,w=5,co=9,kh=3,kw=3,pad=1,residual=1", 74);
    check_winogradEachM("conv2d:n=1,ci=31,h=15,w=15,co=31,kh=3,kw=3,pad=1,bias=1", 75);
}

/* Every 3x3 stride-1 layer of ResNet-18, each tile size, within Workload_compare's tolerance. */
TEST(conv2d_winograd_resnet18) {
    check_winogradEachM("conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1", 81);
    check_winogradEachM("conv2d:n=1,ci=128,h=28,w=28,co=128,kh=3,kw=3,pad=1,bias=1,relu=1", 82);
    check_winogradEachM("conv2d:n=1,ci=256,h=14,w=14,co=256,kh=3,kw=3,pad=1,bias=1,residual=1", 83);
    check_winogradEachM("conv2d:n=1,ci=512,h=7,w=7,co=512,kh=3,kw=3,pad=1", 84);
}

/* Degenerate but legal shapes: single elements, a kernel larger than the input, stride 3. */
TEST(extremes) {
    check_case("conv2d:n=1,ci=1,h=1,w=1,co=1,kh=1,kw=1", &tmpl_conv2d_cpu, 61);
    check_case("conv2d:n=1,ci=2,h=3,w=2,co=3,kh=5,kw=5,pad=2,bias=1,relu=1,residual=1", &tmpl_conv2d_cpu, 62);
    check_case("conv2d:n=3,ci=3,h=5,w=31,co=33,kh=1,kw=3,stride=3,pad=1,layout=NHWC", &tmpl_conv2d_cpu, 63);
    check_case("depthwise_conv2d:n=1,ci=1,h=2,w=2,kh=3,kw=3,pad=1,mult=3", &tmpl_depthwise_cpu, 64);
    check_case("batch_matmul:b=1,m=1,n=1,k=1", &tmpl_batch_matmul_cpu, 67);
}

/* A register tile larger than the register file is rejected before any compile, with numbers. */
TEST(precheck_registers) {
    char err[TT_ERRLEN];
    Workload wl;
    CHECK(Workload_parse("conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    Space space;
    Space_init(&space);
    CHECK(tmpl_conv2d_cpu.define_space(&wl, &g_dev, &space, err) == TT_OK);
    int32_t choice[SPACE_MAX_KNOBS];
    int invalid = 0, valid = 0;
    char reason[256] = "";
    for (uint64_t i = 0; i < space.total; i++) {
        Space_decode(&space, i, choice);
        char r[256];
        if (tmpl_conv2d_cpu.precheck(&wl, &space, choice, &g_dev, r, sizeof r)) {
            valid++;
        } else {
            if (!invalid) snprintf(reason, sizeof reason, "%s", r);
            invalid++;
        }
    }
    CHECK(valid > 100);
    CHECK(invalid > 0);
    CHECK_CONTAINS(reason, "vector registers >");
    Space_done(&space);

    /* dense: 14 rows x 4 vectors = 56 accumulators cannot fit */
    CHECK(Workload_parse("dense:m=64,n=256,k=64", &wl, err) == TT_OK);
    Space_init(&space);
    CHECK(tmpl_dense_cpu.define_space(&wl, &g_dev, &space, err) == TT_OK);
    invalid = 0;
    for (uint64_t i = 0; i < space.total && !invalid; i++) {
        Space_decode(&space, i, choice);
        if (!tmpl_dense_cpu.precheck(&wl, &space, choice, &g_dev, reason, sizeof reason)) invalid++;
    }
    CHECK(invalid > 0);
    CHECK_CONTAINS(reason, "vector registers >");
    Space_done(&space);
}

int main(void) {
    dev_init(&g_dev);
    /* Kernels bring libgomp with them; keep it loaded so that dlclose of a kernel
     * never unmaps the code its idle OpenMP threads are still running. */
    if (!dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL)) fprintf(stderr, "note: libgomp not preloaded\n");
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tt_cpu_tmpl_XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(conv2d_nchw_odd);
    RUN(conv2d_nhwc);
    RUN(depthwise);
    RUN(dense);
    RUN(batch_matmul);
    RUN(winograd_matrices);
    RUN(conv2d_winograd_odd);
    RUN(conv2d_winograd_resnet18);
    RUN(extremes);
    RUN(precheck_registers);
    if (!check_failed) rmdir(g_dir); /* failed sources stay for inspection */
    return check_summary();
}
