/* tests/unit/cpu_templates_common.h: what test_cpu_templates and
 * test_cpu_winograd share: generate configs of a CPU template, compile them
 * with `cc` + TT_CPU_CFLAGS (two at a time), dlopen, run the ABI sequence and
 * compare with Workload_reference (check_case). Static: one test per executable. */
#ifndef TT_TESTS_CPU_TEMPLATES_COMMON_H
#define TT_TESTS_CPU_TEMPLATES_COMMON_H

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
#include "kernels/targets/cpu/abi.h"
#include "kernels/template.h"
#include "kernels/templates/cpu/conv2d_winograd_cpu.h"
#include "kernels/workload.h"
#include "space/space.h"
#include "tests/check.h"

extern const Template tmpl_conv2d_cpu, tmpl_conv2d_winograd_cpu, tmpl_depthwise_cpu, tmpl_dense_cpu,
    tmpl_batch_matmul_cpu;

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

#endif
