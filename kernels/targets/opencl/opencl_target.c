/* kernels/targets/opencl/opencl_target.c: the "opencl" target: the OpenCL dialect of
 * the GPU templates, built by the OpenCL runtime (clBuildProgram; the build log
 * on failure is the COMPILE_DEVICE message) and measured in tunetop-worker,
 * mode "opencl", with profiling events. On this project's machines the device
 * is PoCL on the CPU, which is how the GPU templates' indexing and tiling are
 * checked for numerical correctness without a GPU.
 *
 * The session opens one device for building (once, shared by the builder
 * threads: OpenCL 1.2 calls other than clSetKernelArg are thread-safe). The
 * build runs on a helper thread with the build timeout, abandoned past it, as
 * for NVRTC. Builds take turns (one compiler slot): PoCL compiles under a
 * process-wide lock anyway, and without turns a build's deadline would run
 * out while it queues behind others (or behind an abandoned straggler), so
 * one slow candidate would time out every candidate after it. The timeout
 * thus counts a candidate's own compile only, except behind an abandoned build: a
 * build waits for that straggler at most one more build timeout and is then
 * reported BUILD_TIMEOUT unbuilt, so that a compile that never ends cannot stop
 * the session. The artifact is the device binary of the program; the worker
 * loads it, or rebuilds from the source sent along when the binary is refused.
 *
 * Test-only fault: TUNETOP_OCL_BUILD_SLEEP_S=S makes every build's helper
 * sleep S seconds before compiling, a compile that outlives its timeout. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "kernels/target.h"
#include "kernels/targets/gpu_build.h"
#include "kernels/targets/opencl/ocl.h"
#include "kernels/targets/runner.h"
#include "kernels/worker/mode.h"

#ifdef TT_HAVE_OPENCL

static OclDevice session_dev;
static Status session_status = TT_ERR;
static char session_err[TT_ERRLEN];
static pthread_once_t session_once = PTHREAD_ONCE_INIT;

static void session_open(void) { session_status = OclDevice_open(&session_dev, session_err); }

static Status session_device(char *err) {
    pthread_once(&session_once, session_open);
    if (session_status != TT_OK) return tt_fail(err, "%s", session_err);
    return TT_OK;
}

static Status ocl_probe(DeviceInfo *out, char *err) {
    if (session_device(err) != TT_OK) return TT_ERR;
    OclDevice_info(&session_dev, out);
    return TT_OK;
}

static pthread_mutex_t slot_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slot_cv = PTHREAD_COND_INITIALIZER;
static bool slot_busy;
static bool slot_abandoned;      /* the build holding the slot was abandoned */
static double slot_abandoned_at; /* clock_mono() then */
static unsigned long slot_turn;  /* counts the builds that took the slot */

/* Takes the compiler slot (*turn: this build's turn, for slot_abandon).
 * Behind an abandoned build it waits at most timeout_s past the abandonment
 * (when timeout_s > 0): false then, and *waited_s says how long that build
 * has been abandoned. */
static bool slot_acquire(double timeout_s, unsigned long *turn, double *waited_s) {
    pthread_mutex_lock(&slot_mu);
    while (slot_busy) {
        if (!slot_abandoned || timeout_s <= 0) {
            pthread_cond_wait(&slot_cv, &slot_mu);
            continue;
        }
        double left = slot_abandoned_at + timeout_s - clock_mono();
        if (left <= 0) {
            *waited_s = clock_mono() - slot_abandoned_at;
            pthread_mutex_unlock(&slot_mu);
            return false;
        }
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline); /* slot_cv waits on the realtime clock */
        double whole = floor(left);
        deadline.tv_sec += (time_t)whole;
        deadline.tv_nsec += (long)((left - whole) * 1e9);
        if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
        int rc = pthread_cond_timedwait(&slot_cv, &slot_mu, &deadline);
        if (rc != 0 && rc != ETIMEDOUT) abort();
    }
    slot_busy = true;
    slot_abandoned = false;
    *turn = ++slot_turn;
    pthread_mutex_unlock(&slot_mu);
    return true;
}

/* The build of that turn was abandoned: builds waiting for the slot it holds
 * now wait at most one build timeout more. Nothing when that build has ended
 * meanwhile (the slot is free, or another build's). */
static void slot_abandon(unsigned long turn) {
    pthread_mutex_lock(&slot_mu);
    if (slot_busy && slot_turn == turn) {
        slot_abandoned = true;
        slot_abandoned_at = clock_mono();
        pthread_cond_broadcast(&slot_cv);
    }
    pthread_mutex_unlock(&slot_mu);
}

/* Called by the helper thread when its compile ends, abandoned or not. */
static void slot_release(void) {
    pthread_mutex_lock(&slot_mu);
    slot_busy = false;
    pthread_cond_broadcast(&slot_cv);
    pthread_mutex_unlock(&slot_mu);
}

typedef struct OclJob {
    char *source;
    double sleep_s; /* TUNETOP_OCL_BUILD_SLEEP_S (test-only): seconds slept before compiling */
    bool ok;
    char *log;
    unsigned char *bin;
    size_t bin_len;
} OclJob;

static void job_drop(void *p) {
    OclJob *j = p;
    free(j->source);
    free(j->log);
    free(j->bin);
    free(j);
}

static void job_build(void *p) {
    OclJob *j = p;
    if (j->sleep_s > 0) {
        struct timespec ts = {(time_t)j->sleep_s, (long)((j->sleep_s - floor(j->sleep_s)) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    cl_program prog;
    j->ok = Ocl_buildSource(&session_dev, j->source, &prog, &j->log) == TT_OK;
    if (j->ok) {
        j->bin = Ocl_programBinary(prog, &j->bin_len);
        clReleaseProgram(prog);
    }
    slot_release();
}

static void ocl_build(const KernelSource *src, const DeviceInfo *dev, const MeasureOptions *opt, const char *workdir,
                      uint64_t tag, BuildResult *out) {
    double t0 = clock_mono();
    char err[TT_ERRLEN];
    if (session_device(err) != TT_OK) {
        out->error_no = ERR_COMPILE_DEVICE;
        out->msg = strdup(err);
        out->build_s = clock_mono() - t0;
        return;
    }
    OclJob *j = calloc(1, sizeof *j);
    if (!j) abort();
    j->source = strdup(src->source ? src->source : "");
    if (!j->source) abort();
    const char *sleep_env = getenv("TUNETOP_OCL_BUILD_SLEEP_S"); /* read here: the helper thread must not getenv */
    j->sleep_s = sleep_env ? atof(sleep_env) : 0;
    double timeout = opt ? opt->build_timeout_s : 0;
    double waited = 0;
    unsigned long turn = 0;
    if (!slot_acquire(timeout, &turn, &waited)) { /* when taken, released by job_build */
        char buf[200];
        snprintf(buf, sizeof buf,
                 "OpenCL build not started: the compiler is still busy with a build abandoned %.3g s ago "
                 "(%d such now)",
                 waited, Gpu_abandonedRunning());
        job_drop(j);
        out->error_no = ERR_BUILD_TIMEOUT;
        out->msg = strdup(buf);
        out->build_s = clock_mono() - t0;
        return;
    }
    if (!Gpu_runTimed(job_build, job_drop, j, timeout)) {
        slot_abandon(turn);
        char buf[200];
        snprintf(buf, sizeof buf,
                 "OpenCL build still running after %.3g s; abandoned (it finishes in the background, %d such now)",
                 timeout, Gpu_abandonedRunning());
        out->error_no = ERR_BUILD_TIMEOUT;
        out->msg = strdup(buf);
        out->build_s = clock_mono() - t0;
        return;
    }
    out->build_s = clock_mono() - t0;
    if (!j->ok) {
        out->error_no = ERR_COMPILE_DEVICE;
        out->msg = j->log ? j->log : strdup("clBuildProgram failed without a log");
        j->log = NULL;
        job_drop(j);
        return;
    }
    out->error_no = ERR_NO_ERROR;
    out->shared_bytes = src->shared_bytes;
    if (workdir && *workdir && j->bin) {
        snprintf(out->path, sizeof out->path, "%s/tt_ocl_%016llx.bin", workdir, (unsigned long long)tag);
        FILE *f = fopen(out->path, "wb");
        bool ok = f && fwrite(j->bin, 1, j->bin_len, f) == j->bin_len;
        if (f && fclose(f) != 0) ok = false;
        if (!ok) {
            remove(out->path);
            out->path[0] = '\0'; /* the worker rebuilds from source */
        }
    }
    out->msg = j->log;
    j->log = NULL;
    job_drop(j);
}

static Runner *ocl_runner_new(const DeviceInfo *dev, char *err) { return Runner_new("opencl", err); }

static void ocl_measure(Runner *r, const KernelSource *src, const BuildResult *built, const MeasureOptions *opt,
                        MeasureResult *out) {
    Runner_measure(r, src, built, opt, src->source, out);
}

#else

static Status ocl_probe(DeviceInfo *out, char *err) {
    return tt_fail(err, "opencl: not built in (OpenCL headers and ICD loader not found at build time)");
}

static void ocl_build(const KernelSource *src, const DeviceInfo *dev, const MeasureOptions *opt, const char *workdir,
                      uint64_t tag, BuildResult *out) {
    out->error_no = ERR_COMPILE_DEVICE;
    out->msg = strdup("opencl: not built in");
}

static Runner *ocl_runner_new(const DeviceInfo *dev, char *err) {
    tt_fail(err, "opencl: not built in");
    return NULL;
}

static void ocl_measure(Runner *r, const KernelSource *src, const BuildResult *built, const MeasureOptions *opt,
                        MeasureResult *out) {
    out->error_no = ERR_UNKNOWN;
}

#endif

static Status ocl_set_task(Runner *r, const Workload *wl, char *err) { return Runner_setTask(r, wl, err); }

#ifdef TT_HAVE_OPENCL
static int ocl_device_count(void) { return OclDevice_count(); }
#else
static int ocl_device_count(void) { return 0; }
#endif

/* OclDevice_open (here and in the worker, which inherits it) opens the device
 * TUNETOP_OPENCL_DEVICE names. */
static Status ocl_select_device(int index, char *err) {
    char v[16];
    snprintf(v, sizeof v, "%d", index);
    if (setenv("TUNETOP_OPENCL_DEVICE", v, 1) != 0) return tt_fail(err, "opencl: cannot set TUNETOP_OPENCL_DEVICE");
    return TT_OK;
}

extern const WorkerMode worker_mode_opencl; /* worker_opencl.c */

const Target target_opencl = {
    .name = "opencl",
    .family = FAMILY_GPU,
    .dialect = DIALECT_OPENCL,
    .probe = ocl_probe,
    .offline_info = NULL,
    .device_count = ocl_device_count,
    .select_device = ocl_select_device,
    .build = ocl_build,
    .runner_new = ocl_runner_new,
    .runner_set_task = ocl_set_task,
    .measure = ocl_measure,
    .runner_delete = Runner_delete,
    .worker = &worker_mode_opencl,
};
