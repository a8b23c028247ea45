/* bench/cuda_compile_bench.c: CUDA candidates compiled per second.
 *
 *   cuda_compile_bench [N] [THREADS] [ARCH]     (defaults: 60, 2, sm_90)
 *
 * For each workload below (ResNet-18 layers, the seed 003 layer among them),
 * draws random configs of its GPU template that pass the precheck against
 * the offline ARCH limits, and builds N of them through target_cuda.build
 * (NVRTC -> PTX -> nvJitLink -> cubin, in-process) on THREADS builder threads,
 * as the engine's builder pool does. Prints per workload and overall:
 * candidates compiled per second (wall), seconds per compile per thread, and
 * the outcomes. Prechecked-out configs are not counted: they cost no compile. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/rng.h"
#include "kernels/target.h"
#include "kernels/template.h"

extern const Target target_cuda;

typedef struct Bench {
    Workload wl;
    const Template *tmpl;
    Space space;
    DeviceInfo dev;
    uint64_t *idx;
    int n;
    atomic_int next, ok, inst, fail;
    atomic_ullong tag;
    double busy_s; /* summed build_s (guarded by mu) */
    pthread_mutex_t mu;
    const char *workdir;
} Bench;

static void *builder(void *p) {
    Bench *b = p;
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    for (;;) {
        int i = atomic_fetch_add(&b->next, 1);
        if (i >= b->n) break;
        int32_t choice[SPACE_MAX_KNOBS];
        Space_decode(&b->space, b->idx[i], choice);
        KernelSource src;
        KernelSource_init(&src);
        char err[TT_ERRLEN];
        if (b->tmpl->generate(&b->wl, &b->space, choice, &b->dev, DIALECT_CUDA, &src, err) != TT_OK) {
            atomic_fetch_add(&b->fail, 1);
            continue;
        }
        BuildResult br;
        BuildResult_init(&br);
        target_cuda.build(&src, &b->dev, &opt, b->workdir, atomic_fetch_add(&b->tag, 1), &br);
        atomic_fetch_add(br.error_no == ERR_NO_ERROR        ? &b->ok
                         : br.error_no == ERR_INSTANTIATION ? &b->inst
                                                            : &b->fail,
                         1);
        if (br.error_no != ERR_NO_ERROR) {
            char cfg[512];
            Space_format(&b->space, choice, cfg, sizeof cfg);
            fprintf(stderr, "  %s after %.1f s: %.200s\n    (%s)\n", MeasureError_name(br.error_no), br.build_s,
                    br.msg ? br.msg : "", cfg);
        }
        pthread_mutex_lock(&b->mu);
        b->busy_s += br.build_s;
        pthread_mutex_unlock(&b->mu);
        BuildResult_done(&br);
        KernelSource_done(&src);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 60;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    const char *arch = argc > 3 ? argv[3] : "sm_90";
    if (n < 1 || threads < 1 || threads > 64) {
        fprintf(stderr, "usage: cuda_compile_bench [N >= 1] [THREADS 1..64] [ARCH]\n");
        return 2;
    }
    static const char *SPECS[] = {
        "conv2d:n=1,ci=512,h=7,w=7,co=512,kh=3,kw=3,stride=1,pad=1",
        "conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=1,pad=1",
        "depthwise_conv2d:n=1,ci=256,h=14,w=14,mult=1,kh=3,kw=3,stride=1,pad=1",
        "dense:m=1,n=1000,k=512,bias=1",
        "dense:m=64,n=512,k=512",
    };
    char workdir[] = "/tmp/tt_cuda_bench_XXXXXX";
    if (!mkdtemp(workdir)) {
        perror("mkdtemp");
        return 1;
    }
    printf("cuda_compile_bench: %d candidates per workload, %d builder threads, %s\n", n, threads, arch);
    int total_ok = 0, total = 0;
    double total_wall = 0;
    for (size_t w = 0; w < sizeof SPECS / sizeof SPECS[0]; w++) {
        Bench b;
        memset(&b, 0, sizeof b);
        pthread_mutex_init(&b.mu, NULL);
        b.workdir = workdir;
        char err[TT_ERRLEN];
        if (target_cuda.offline_info(arch, &b.dev, err) != TT_OK || Workload_parse(SPECS[w], &b.wl, err) != TT_OK ||
            !(b.tmpl = Template_find(&b.wl, FAMILY_GPU, err))) {
            fprintf(stderr, "%s: %s\n", SPECS[w], err);
            return 1;
        }
        Space_init(&b.space);
        if (b.tmpl->define_space(&b.wl, &b.dev, &b.space, err) != TT_OK) {
            fprintf(stderr, "%s: %s\n", SPECS[w], err);
            return 1;
        }
        b.idx = calloc((size_t)n, sizeof *b.idx);
        Rng rng;
        Rng_seed(&rng, 2026 + w);
        VisitedSet vs;
        VisitedSet_init(&vs);
        int drawn = 0;
        while (b.n < n && drawn < 1000000) {
            uint64_t i;
            if (Space_sampleUnvisited(&b.space, &vs, &rng, &i, 1) != 1) break;
            drawn++;
            int32_t choice[SPACE_MAX_KNOBS];
            Space_decode(&b.space, i, choice);
            char reason[256];
            if (b.tmpl->precheck(&b.wl, &b.space, choice, &b.dev, reason, sizeof reason)) b.idx[b.n++] = i;
        }
        VisitedSet_done(&vs);
        double t0 = clock_mono();
        pthread_t th[64];
        for (int t = 0; t < threads; t++)
            pthread_create(&th[t], NULL, builder, &b);
        for (int t = 0; t < threads; t++)
            pthread_join(th[t], NULL);
        double wall = clock_mono() - t0;
        printf("%-72s %3d built in %6.1f s: %5.2f candidates/s, %.2f s per compile per thread "
               "(ok %d, register-file rejected %d, failed %d; %d drawn to find %d valid)\n",
               SPECS[w], b.n, wall, b.n / wall, b.busy_s / (b.n ? b.n : 1), b.ok, b.inst, b.fail, drawn, b.n);
        fflush(stdout);
        total += b.n;
        total_ok += b.ok;
        total_wall += wall;
        free(b.idx);
        Space_done(&b.space);
        pthread_mutex_destroy(&b.mu);
    }
    printf("overall: %d candidates in %.1f s = %.2f candidates/s with %d threads (%d compiled ok)\n", total, total_wall,
           total / total_wall, threads, total_ok);
    rmdir(workdir);
    return 0;
}
