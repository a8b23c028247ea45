/* tests/unit/test_gpu_opencl.c: the GPU templates' OpenCL dialect run on the
 * OpenCL device present (PoCL on the CPU here), in-process, against
 * Workload_reference, on small shapes and odd ones (prime extents, stride 2,
 * padding 0 and 3, batch 2, multiplier 3, fused epilogues).
 *
 * Random configs that pass the precheck against the device's limits are
 * built with clBuildProgram, run once on NaN-filled output, and compared with
 * Workload_compare. TT_OCL_CONFIGS sets the configs per template, spread
 * over its two shapes (default 4, so the unit run stays short;
 * tests/integration/test_gpu_opencl_full.sh runs 50). Skips (exit 77, CHECK_SKIP) when OpenCL is not built in or no
 * device. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/rng.h"
#include "kernels/target.h"
#include "kernels/template.h"
#include "tests/check.h"

/* Under AddressSanitizer: PoCL's LLVM and NVRTC keep allocations past exit
 * (third-party, seen on a cold PoCL kernel cache); they are not tunetop's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:libpocl.so\nleak:libLLVM\nleak:libnvrtc\nleak:libnvJitLink\nleak:libcudart\n";
}

#ifdef TT_HAVE_OPENCL
#include "kernels/targets/opencl/ocl.h"

static DeviceInfo dev;

typedef struct Case {
    const char *spec;
    Workload wl;
    const Template *tmpl;
    Space space;
    float *args[WORKLOAD_MAX_ARGS];
    size_t counts[WORKLOAD_MAX_ARGS];
    int nargs;
    uint64_t idx[4096];
    int n_valid;
    atomic_int next, passed, failed;
} Case;

static int configs_per_template(void) {
    const char *e = getenv("TT_OCL_CONFIGS");
    return e && atoi(e) > 0 ? atoi(e) : 4;
}

static void *runner(void *p) {
    Case *c = p;
    OclDevice od;
    char err[TT_ERRLEN];
    if (OclDevice_open(&od, err) != TT_OK) {
        fprintf(stderr, "%s\n", err);
        atomic_fetch_add(&c->failed, 1);
        return NULL;
    }
    size_t out_n = c->counts[c->nargs - 1];
    float *got = malloc(out_n * sizeof(float));
    for (;;) {
        int i = atomic_fetch_add(&c->next, 1);
        if (i >= c->n_valid) break;
        int32_t choice[SPACE_MAX_KNOBS];
        Space_decode(&c->space, c->idx[i], choice);
        char cfg[512];
        Space_format(&c->space, choice, cfg, sizeof cfg);
        KernelSource src;
        KernelSource_init(&src);
        bool ok = false;
        if (c->tmpl->generate(&c->wl, &c->space, choice, &dev, DIALECT_OPENCL, &src, err) != TT_OK) {
            fprintf(stderr, "%s: generate: %s (%s)\n", c->spec, err, cfg);
        } else {
            cl_program prog;
            char *log = NULL;
            if (Ocl_buildSource(&od, src.source, &prog, &log) != TT_OK) {
                fprintf(stderr, "%s: build failed (%s):\n%.1500s\n", c->spec, cfg, log ? log : "");
            } else {
                OclExec ex;
                double t;
                char msg[512];
                if (OclExec_init(&ex, &od, prog, src.entry, src.grid, src.block, c->args, c->counts, c->nargs, err) !=
                        TT_OK ||
                    OclExec_run(&ex, 1, &t, err) != TT_OK || OclExec_readOutput(&ex, got, err) != TT_OK) {
                    fprintf(stderr, "%s: run failed: %s (%s)\n", c->spec, err, cfg);
                } else if (!Workload_compare(&c->wl, c->args[c->nargs - 1], got, msg, sizeof msg)) {
                    fprintf(stderr, "%s: WRONG ANSWER: %s (%s)\n", c->spec, msg, cfg);
                } else {
                    ok = true;
                }
                OclExec_done(&ex);
                clReleaseProgram(prog);
            }
            free(log);
        }
        KernelSource_done(&src);
        atomic_fetch_add(ok ? &c->passed : &c->failed, 1);
    }
    free(got);
    OclDevice_close(&od);
    return NULL;
}

/* shapes: how many shapes the template's configs are spread over. */
static void run_case(const char *spec, int shapes) {
    Case *c = calloc(1, sizeof *c);
    c->spec = spec;
    char err[TT_ERRLEN];
    CHECK(Workload_parse(spec, &c->wl, err) == TT_OK);
    c->tmpl = Template_find(&c->wl, FAMILY_GPU, err);
    CHECK(c->tmpl != NULL);
    if (!c->tmpl) {
        free(c);
        return;
    }
    Space_init(&c->space);
    CHECK(c->tmpl->define_space(&c->wl, &dev, &c->space, err) == TT_OK);
    ArgInfo info[WORKLOAD_MAX_ARGS];
    c->nargs = Workload_args(&c->wl, info);
    for (int i = 0; i < c->nargs; i++) {
        c->counts[i] = info[i].count;
        c->args[i] = malloc(info[i].count * sizeof(float));
    }
    Workload_fillInputs(&c->wl, c->args, 42);
    Workload_reference(&c->wl, c->args); /* into args[last]: the expected output */

    /* Random valid configs: draw without replacement, keep what the precheck accepts. */
    int want = (configs_per_template() + shapes - 1) / shapes;
    VisitedSet vs;
    VisitedSet_init(&vs);
    Rng rng;
    Rng_seed(&rng, 7);
    int rejected = 0;
    while (c->n_valid < want) {
        uint64_t idx;
        if (Space_sampleUnvisited(&c->space, &vs, &rng, &idx, 1) != 1) break;
        int32_t choice[SPACE_MAX_KNOBS];
        Space_decode(&c->space, idx, choice);
        char reason[256];
        if (c->tmpl->precheck(&c->wl, &c->space, choice, &dev, reason, sizeof reason))
            c->idx[c->n_valid++] = idx;
        else
            rejected++;
    }
    VisitedSet_done(&vs);
    double t0 = clock_mono();
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, runner, c);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("%-28s %-72s %2d configs: %2d match, %d fail (precheck rejected %d on the way); %.1f s\n", c->tmpl->name,
           spec, c->n_valid, c->passed, c->failed, rejected, clock_mono() - t0);
    fflush(stdout);
    CHECK_EQ_INT(c->failed, 0);
    CHECK_EQ_INT(c->passed, c->n_valid);
    CHECK(c->n_valid == want || c->n_valid + rejected == (int)c->space.total); /* fewer only when exhausted */
    for (int i = 0; i < c->nargs; i++)
        free(c->args[i]);
    Space_done(&c->space);
    free(c);
}

/* Per template: a small shape and an odd one (prime extents, stride 2 on one
 * axis, padding 0 on one axis and 3 on the other, batch 2, fused epilogue);
 * dense has its small-batch and large-batch variants, each odd. */
TEST(conv2d_small) { run_case("conv2d:n=1,ci=4,h=6,w=6,co=8,kh=3,kw=3,stride=1,pad=1,bias=1,relu=1", 2); }
TEST(conv2d_odd) {
    run_case("conv2d:n=2,ci=3,h=11,w=7,co=5,kh=3,kw=5,stride_h=2,stride_w=1,pad_h=0,pad_w=3,residual=1,relu=1", 2);
}
TEST(depthwise_small) { run_case("depthwise_conv2d:n=1,ci=4,h=8,w=8,mult=1,kh=3,kw=3,stride=1,pad=1,bias=1", 2); }
TEST(depthwise_odd) {
    run_case("depthwise_conv2d:n=2,ci=3,h=11,w=7,mult=3,kh=5,kw=3,stride_h=2,stride_w=1,pad_h=3,pad_w=0,relu=1", 2);
}
TEST(dense_small_batch_odd) { run_case("dense:m=3,n=26,k=51,bias=1,relu=1", 2); }
TEST(dense_large_batch_odd) { run_case("dense:m=37,n=11,k=13,bias=1", 2); }

int main(void) {
    OclDevice od;
    char err[TT_ERRLEN];
    if (OclDevice_open(&od, err) != TT_OK) {
        char why[TT_ERRLEN + 32];
        snprintf(why, sizeof why, "no OpenCL device: %s", err);
        return check_skip("opencl", why);
    }
    OclDevice_info(&od, &dev);
    OclDevice_close(&od);
    printf("device: %s, max work-group %d, local memory %lld bytes\n", dev.name, dev.max_threads_per_block,
           (long long)dev.max_shared_bytes_per_block);
    RUN(conv2d_small);
    RUN(conv2d_odd);
    RUN(depthwise_small);
    RUN(depthwise_odd);
    RUN(dense_small_batch_odd);
    RUN(dense_large_batch_odd);
    return check_summary();
}

#else
int main(void) {
    (void)check_current;
    (void)check_current_failed;
    return check_skip("opencl", "OpenCL not built in");
}
#endif
