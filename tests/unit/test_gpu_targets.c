/* tests/unit/test_gpu_targets.c: the opencl and cuda targets end to end
 * through their Target structs: probe, build (artifact, errors), and
 * measurement in tunetop-worker (correct kernel, wrong kernel, cuda worker
 * without a driver). Uses the OpenCL device present (PoCL here). */
#include <unistd.h>

#include "base/clock.h"
#include "base/rng.h"
#include "kernels/target.h"
#include "kernels/targets/gpu_build.h"
#include "kernels/targets/runner.h"
#include "kernels/template.h"
#include "kernels/templates/gpu/gpu.h"
#include "tests/check.h"

/* Under AddressSanitizer: PoCL's LLVM and NVRTC keep allocations past exit
 * (third-party, seen on a cold PoCL kernel cache); they are not tunetop's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:libpocl.so\nleak:libLLVM\nleak:libnvrtc\nleak:libnvJitLink\nleak:libcudart\n";
}

extern const Target target_cuda, target_opencl;
extern const Template tmpl_dense_gpu;

static char workdir[] = "/tmp/tt_gpu_targets_XXXXXX";
static DeviceInfo ocl_dev;
static bool have_ocl;
static bool cuda_not_built;

/* A small valid dense config and its OpenCL source. */
static void dense_source(const Workload *wl, Dialect d, KernelSource *src) {
    Space s;
    Space_init(&s);
    char err[TT_ERRLEN], reason[256];
    CHECK(tmpl_dense_gpu.define_space(wl, &ocl_dev, &s, err) == TT_OK);
    Rng rng;
    Rng_seed(&rng, 3);
    int32_t choice[SPACE_MAX_KNOBS];
    for (int tries = 0; tries < 1000; tries++) {
        Space_decode(&s, Rng_below(&rng, s.total), choice);
        if (tmpl_dense_gpu.precheck(wl, &s, choice, &ocl_dev, reason, sizeof reason)) break;
    }
    CHECK(tmpl_dense_gpu.generate(wl, &s, choice, &ocl_dev, d, src, err) == TT_OK);
    Space_done(&s);
}

TEST(opencl_build_and_measure) {
    Workload wl;
    char err[TT_ERRLEN];
    CHECK(Workload_parse("dense:m=3,n=20,k=24,bias=1,relu=1", &wl, err) == TT_OK);
    KernelSource src;
    KernelSource_init(&src);
    dense_source(&wl, DIALECT_OPENCL, &src);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.run_timeout_s = 120;   /* PoCL compiles the work-group function at first launch */
    opt.build_timeout_s = 600; /* a bound for a hang, not a speed check: PoCL is slow on a loaded machine */
    BuildResult br;
    BuildResult_init(&br);
    target_opencl.build(&src, &ocl_dev, &opt, workdir, 1, &br);
    CHECK_EQ_INT(br.error_no, ERR_NO_ERROR);
    CHECK(br.path[0] && access(br.path, R_OK) == 0);

    Runner *r = target_opencl.runner_new(&ocl_dev, err);
    CHECK(r != NULL);
    if (!r) return;
    CHECK(target_opencl.runner_set_task(r, &wl, err) == TT_OK);
    MeasureResult mr;
    MeasureResult_init(&mr);
    target_opencl.measure(r, &src, &br, &opt, &mr);
    printf("opencl dense: error %s, %d costs, first %.3g s, msg %s\n", MeasureError_name(mr.error_no), mr.n_costs,
           mr.costs[0], mr.msg ? mr.msg : "-");
    CHECK_EQ_INT(mr.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(mr.n_costs, opt.repeat);
    for (int i = 0; i < mr.n_costs; i++)
        CHECK(mr.costs[i] > 0);
    MeasureResult_done(&mr);

    /* The same kernel with its relu dropped gives a WRONG_ANSWER, not a time. */
    char *relu = strstr(src.source, "v = v > 0.0f ? v : 0.0f;");
    CHECK(relu != NULL);
    if (relu) memcpy(relu, "                        ", 24);
    BuildResult bad;
    BuildResult_init(&bad);
    target_opencl.build(&src, &ocl_dev, &opt, workdir, 2, &bad);
    CHECK_EQ_INT(bad.error_no, ERR_NO_ERROR);
    MeasureResult_init(&mr);
    target_opencl.measure(r, &src, &bad, &opt, &mr);
    CHECK_EQ_INT(mr.error_no, ERR_WRONG_ANSWER);
    CHECK(mr.msg != NULL);
    printf("wrong kernel: %s\n", mr.msg ? mr.msg : "-");
    MeasureResult_done(&mr);
    BuildResult_done(&bad);

    target_opencl.runner_delete(r);
    BuildResult_done(&br);
    CHECK(access(br.path, F_OK) != 0);
    KernelSource_done(&src);
}

TEST(opencl_compile_error_has_log) {
    KernelSource src;
    KernelSource_init(&src);
    src.source = strdup("__kernel void tt_bad(__global float *out) { out[0] = not_declared; }\n");
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.build_timeout_s = 600; /* the error, not a timeout, even on a loaded machine */
    BuildResult br;
    BuildResult_init(&br);
    target_opencl.build(&src, &ocl_dev, &opt, workdir, 3, &br);
    CHECK_EQ_INT(br.error_no, ERR_COMPILE_DEVICE);
    CHECK_CONTAINS(br.msg, "not_declared");
    BuildResult_done(&br);
    KernelSource_done(&src);
}

/* A PoCL build past its timeout (the test-only TUNETOP_OCL_BUILD_SLEEP_S makes
 * the compile sleep 4 s first) is abandoned: BUILD_TIMEOUT, and the caller
 * has its answer at the timeout, not when the compile ends. A build queued
 * behind that straggler gives up one timeout later, and once the straggler
 * has ended the next build compiles: the session goes on without it. */
TEST(opencl_build_timeout_abandons) {
    Workload wl;
    char err[TT_ERRLEN];
    CHECK(Workload_parse("dense:m=3,n=20,k=24", &wl, err) == TT_OK);
    KernelSource src;
    KernelSource_init(&src);
    dense_source(&wl, DIALECT_OPENCL, &src);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.build_timeout_s = 0.5;
    const double bound_s = 2; /* the answers come at 0.5 s; 2 s leaves room for a loaded machine */

    setenv("TUNETOP_OCL_BUILD_SLEEP_S", "4", 1);
    BuildResult br;
    BuildResult_init(&br);
    double t0 = clock_mono();
    target_opencl.build(&src, &ocl_dev, &opt, workdir, 11, &br);
    double took = clock_mono() - t0;
    unsetenv("TUNETOP_OCL_BUILD_SLEEP_S");
    printf("abandoned build: %s after %.2f s: %s\n", MeasureError_name(br.error_no), took, br.msg ? br.msg : "-");
    CHECK_EQ_INT(br.error_no, ERR_BUILD_TIMEOUT);
    CHECK_CONTAINS(br.msg, "abandoned");
    CHECK(br.build_s >= opt.build_timeout_s);
    CHECK(took < bound_s);
    CHECK(Gpu_abandonedRunning() >= 1);
    BuildResult_done(&br);

    /* the straggler still holds the compiler: the next build waits one timeout, then gives up */
    BuildResult queued;
    BuildResult_init(&queued);
    t0 = clock_mono();
    target_opencl.build(&src, &ocl_dev, &opt, workdir, 12, &queued);
    took = clock_mono() - t0;
    printf("queued build: %s after %.2f s: %s\n", MeasureError_name(queued.error_no), took,
           queued.msg ? queued.msg : "-");
    CHECK_EQ_INT(queued.error_no, ERR_BUILD_TIMEOUT);
    CHECK(took < bound_s);
    BuildResult_done(&queued);

    /* after the straggler: a build with a real timeout compiles */
    opt.build_timeout_s = 600;
    BuildResult next;
    BuildResult_init(&next);
    t0 = clock_mono();
    target_opencl.build(&src, &ocl_dev, &opt, workdir, 13, &next);
    printf("next build: %s after %.2f s\n", MeasureError_name(next.error_no), clock_mono() - t0);
    CHECK_EQ_INT(next.error_no, ERR_NO_ERROR);
    BuildResult_done(&next);
    for (int i = 0; i < 100 && Gpu_abandonedRunning() > 0; i++)
        usleep(10000); /* the helper counts itself out just after it frees the compiler */
    CHECK_EQ_INT(Gpu_abandonedRunning(), 0);
    KernelSource_done(&src);
}

/* The cuda worker mode on a machine without a driver: a clean one-line
 * RUNTIME_DEVICE answer, not a crash. With a GPU it must measure instead. */
TEST(cuda_worker_without_device) {
    DeviceInfo dev;
    char err[TT_ERRLEN];
    bool present = target_cuda.probe(&dev, err) == TT_OK;
    if (!present) CHECK(target_cuda.offline_info("sm_90", &dev, err) == TT_OK);
    Workload wl;
    CHECK(Workload_parse("dense:m=3,n=20,k=24", &wl, err) == TT_OK);
    KernelSource src;
    KernelSource_init(&src);
    dense_source(&wl, DIALECT_CUDA, &src);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    BuildResult br;
    BuildResult_init(&br);
    target_cuda.build(&src, &dev, &opt, workdir, 4, &br);
    if (br.msg && strstr(br.msg, "not built in")) {
        cuda_not_built = true; /* main reports the skip */
        BuildResult_done(&br);
        KernelSource_done(&src);
        return;
    }
    CHECK_EQ_INT(br.error_no, ERR_NO_ERROR);
    if (!present) {
        CHECK(target_cuda.runner_new(&dev, err) == NULL); /* no device: the target refuses a runner */
        CHECK_CONTAINS(err, "no device");
    }
    /* The worker's cuda mode itself, bypassing that refusal. */
    Runner *r = Runner_new("cuda", err);
    CHECK(r != NULL);
    if (r) {
        CHECK(Runner_setTask(r, &wl, err) == TT_OK);
        MeasureResult mr;
        MeasureResult_init(&mr);
        Runner_measure(r, &src, &br, &opt, NULL, &mr);
        printf("cuda worker: %s: %s\n", MeasureError_name(mr.error_no), mr.msg ? mr.msg : "-");
        if (present) {
            CHECK_EQ_INT(mr.error_no, ERR_NO_ERROR);
        } else {
            CHECK_EQ_INT(mr.error_no, ERR_RUNTIME_DEVICE);
            CHECK_CONTAINS(mr.msg, "cuda: ");
            CHECK(mr.msg && !strchr(mr.msg, '\n'));
        }
        MeasureResult_done(&mr);
        Runner_delete(r);
    }
    BuildResult_done(&br);
    KernelSource_done(&src);
}

/* The CUDA device test: a dense kernel built for the device present, launched
 * and timed through the target's runner in tunetop-worker. Its own CTest entry
 * (test_gpu_cuda_device), skipped with the probe's reason where there is no
 * CUDA device or CUDA is not built in. */
static int cuda_on_device(void) {
    char err[TT_ERRLEN], why[TT_ERRLEN + 32];
    DeviceInfo dev;
    if (target_cuda.probe(&dev, err) != TT_OK) {
        snprintf(why, sizeof why, "no CUDA device: %s", err);
        return check_skip("cuda-device", why);
    }
    ocl_dev = dev; /* dense_source picks its config for this device */
    printf("cuda device: %s (%s)\n", dev.name, dev.arch);
    check_current = "cuda_on_device";
    Workload wl;
    CHECK(Workload_parse("dense:m=3,n=20,k=24", &wl, err) == TT_OK);
    KernelSource src;
    KernelSource_init(&src);
    dense_source(&wl, DIALECT_CUDA, &src);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    BuildResult br;
    BuildResult_init(&br);
    target_cuda.build(&src, &dev, &opt, workdir, 4, &br);
    CHECK_EQ_INT(br.error_no, ERR_NO_ERROR);
    Runner *r = target_cuda.runner_new(&dev, err);
    CHECK(r != NULL);
    if (r) {
        CHECK(Runner_setTask(r, &wl, err) == TT_OK);
        MeasureResult mr;
        MeasureResult_init(&mr);
        Runner_measure(r, &src, &br, &opt, NULL, &mr);
        printf("cuda dense: %s, %d costs, msg %s\n", MeasureError_name(mr.error_no), mr.n_costs, mr.msg ? mr.msg : "-");
        CHECK_EQ_INT(mr.error_no, ERR_NO_ERROR);
        CHECK_EQ_INT(mr.n_costs, opt.repeat);
        for (int i = 0; i < mr.n_costs; i++)
            CHECK(mr.costs[i] > 0);
        MeasureResult_done(&mr);
        Runner_delete(r);
    }
    BuildResult_done(&br);
    KernelSource_done(&src);
    if (check_current_failed)
        check_failed++;
    else
        check_passed++;
    return check_summary();
}

int main(int argc, char **argv) {
    if (!mkdtemp(workdir)) return 1;
    if (argc > 1 && strcmp(argv[1], "cuda-device") == 0) {
        int rc = cuda_on_device();
        rmdir(workdir);
        return rc;
    }
    char err[TT_ERRLEN];
    have_ocl = target_opencl.probe(&ocl_dev, err) == TT_OK;
    if (argc > 1 && strcmp(argv[1], "opencl") == 0) {
        /* its own CTest entry (test_gpu_targets_opencl): skipped, not passed, without a device */
        int rc;
        if (have_ocl) {
            printf("opencl device: %s\n", ocl_dev.name);
            RUN(opencl_build_and_measure);
            RUN(opencl_compile_error_has_log);
            RUN(opencl_build_timeout_abandons);
            rc = check_summary();
        } else {
            char why[TT_ERRLEN + 32];
            snprintf(why, sizeof why, "no OpenCL device: %s", err);
            rc = check_skip("opencl", why);
        }
        rmdir(workdir);
        return rc;
    }
    if (!have_ocl) target_cuda.offline_info("sm_90", &ocl_dev, err);
    RUN(cuda_worker_without_device);
    rmdir(workdir);
    if (cuda_not_built) return check_skip("nvrtc", "CUDA not built in: the cuda target and worker were not checked");
    return check_summary();
}
