/* kernels/targets/cuda/cuda_target.c: the "cuda" target.
 *
 * Build, in-process and thread-safe in the builder threads: NVRTC compiles
 * the CUDA dialect of a GPU template to PTX for compute_XY, nvJitLink turns
 * the PTX into a cubin for sm_XY with -verbose, and ptxas's info log gives the
 * registers, spills, stack (local) and shared bytes of the kernel. A kernel
 * whose registers x threads do not fit the register file is rejected here
 * (INSTANTIATION_ERROR) before it reaches a device.
 *
 * Timeout: NVRTC cannot be interrupted, so each compile runs on a helper
 * thread (kernels/targets/gpu_build.c); past build_timeout_s the builder reports
 * BUILD_TIMEOUT and the helper is abandoned to finish in the background.
 *
 * Measurement: in tunetop-worker, mode "cuda" (kernels/targets/cuda/worker_cuda.c).
 * Without a driver or a device the probe says so in one line; building still
 * works against the offline per-architecture limits. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "kernels/target.h"
#include "kernels/targets/cuda/cuda_arch.h"
#include "kernels/targets/gpu_build.h"
#include "kernels/targets/runner.h"
#include "kernels/templates/gpu/gpu.h"
#include "kernels/worker/mode.h"

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nvJitLink.h>
#include <nvrtc.h>
#endif

static Status cuda_offline_info(const char *arch, DeviceInfo *out, char *err) { return CudaArch_info(arch, out, err); }

#ifdef TT_HAVE_CUDA

static Status cuda_probe(DeviceInfo *out, char *err) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e == cudaErrorInitializationError ||
        (e == cudaSuccess && count == 0)) {
        const char *why = e == cudaErrorInsufficientDriver ? "no CUDA driver found" : "no CUDA device found";
        return tt_fail(err, "%s (%s)", why, e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
    }
    if (e != cudaSuccess) return tt_fail(err, "cudaGetDeviceCount failed: %s", cudaGetErrorString(e));
    struct cudaDeviceProp p;
    e = cudaGetDeviceProperties(&p, 0);
    if (e != cudaSuccess) return tt_fail(err, "cudaGetDeviceProperties failed: %s", cudaGetErrorString(e));
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%.120s", p.name);
    snprintf(out->arch, sizeof out->arch, "sm_%d%d", p.major, p.minor);
    out->present = true;
    out->sm_major = p.major;
    out->sm_minor = p.minor;
    out->max_threads_per_block = p.maxThreadsPerBlock;
    for (int i = 0; i < 3; i++)
        out->max_block_dim[i] = p.maxThreadsDim[i];
    out->max_shared_bytes_per_block = (int64_t)p.sharedMemPerBlock; /* static limit, no opt-in */
    out->regs_per_sm = p.regsPerMultiprocessor;
    out->max_regs_per_thread = 255;
    out->max_local_bytes_per_thread = 512 * 1024;
    out->multiprocessors = p.multiProcessorCount;
    out->global_mem_bytes = (int64_t)p.totalGlobalMem;
    return TT_OK;
}

/* One compile, owned by the helper thread while it runs. */
typedef struct CudaJob {
    char *source;
    char arch[16]; /* "90" */
    int error_no;
    char *log; /* NVRTC or nvJitLink error log, or the ptxas info log on success */
    void *cubin;
    size_t cubin_len;
} CudaJob;

static void job_drop(void *p) {
    CudaJob *j = p;
    free(j->source);
    free(j->log);
    free(j->cubin);
    free(j);
}

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

static void job_compile(void *p) {
    CudaJob *j = p;
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, j->source, "tunetop_kernel.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        j->error_no = ERR_COMPILE_DEVICE;
        j->log = dup_or_null(nvrtcGetErrorString(r));
        return;
    }
    char opt_arch[64];
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=compute_%s", j->arch);
    const char *opts[] = {opt_arch, "--std=c++17"};
    r = nvrtcCompileProgram(prog, 2, opts);
    if (r != NVRTC_SUCCESS) {
        size_t n = 0;
        nvrtcGetProgramLogSize(prog, &n);
        char *log = malloc(n + 64);
        if (!log) abort();
        int k = snprintf(log, 64, "nvrtc: %s\n", nvrtcGetErrorString(r));
        if (n > 1) nvrtcGetProgramLog(prog, log + k);
        j->error_no = ERR_COMPILE_DEVICE;
        j->log = log;
        nvrtcDestroyProgram(&prog);
        return;
    }
    size_t ptx_len = 0;
    nvrtcGetPTXSize(prog, &ptx_len);
    char *ptx = malloc(ptx_len + 1);
    if (!ptx) abort();
    nvrtcGetPTX(prog, ptx);
    nvrtcDestroyProgram(&prog);

    char lopt_arch[32];
    snprintf(lopt_arch, sizeof lopt_arch, "-arch=sm_%s", j->arch);
    const char *lopts[] = {lopt_arch, "-verbose"};
    nvJitLinkHandle h;
    nvJitLinkResult lr = nvJitLinkCreate(&h, 2, lopts);
    if (lr != NVJITLINK_SUCCESS) {
        char buf[96];
        snprintf(buf, sizeof buf, "nvJitLinkCreate failed (%d) for sm_%s", (int)lr, j->arch);
        j->error_no = ERR_COMPILE_DEVICE;
        j->log = strdup(buf);
        free(ptx);
        return;
    }
    lr = nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx, ptx_len, "tunetop_kernel");
    if (lr == NVJITLINK_SUCCESS) lr = nvJitLinkComplete(h);
    free(ptx);
    if (lr != NVJITLINK_SUCCESS) {
        size_t n = 0;
        nvJitLinkGetErrorLogSize(h, &n);
        char *log = malloc(n + 64);
        if (!log) abort();
        int k = snprintf(log, 64, "nvJitLink error %d\n", (int)lr);
        log[k] = '\0';
        if (n > 0) nvJitLinkGetErrorLog(h, log + k);
        j->error_no = ERR_COMPILE_DEVICE;
        j->log = log;
        nvJitLinkDestroy(&h);
        return;
    }
    size_t n = 0;
    nvJitLinkGetInfoLogSize(h, &n);
    j->log = calloc(1, n + 1);
    if (!j->log) abort();
    if (n > 0) nvJitLinkGetInfoLog(h, j->log);
    nvJitLinkGetLinkedCubinSize(h, &j->cubin_len);
    j->cubin = malloc(j->cubin_len ? j->cubin_len : 1);
    if (!j->cubin) abort();
    nvJitLinkGetLinkedCubin(h, j->cubin);
    nvJitLinkDestroy(&h);
    j->error_no = ERR_NO_ERROR;
}

/* Reads ptxas's "Used N registers, ... M bytes smem" and "S bytes stack frame,
 * X bytes spill stores, Y bytes spill loads" lines. Returns false when the
 * log has no register line (an unexpected toolkit). */
static bool parse_resources(const char *log, BuildResult *out) {
    bool found = false;
    for (const char *p = log; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), p);
        if (strncmp(line, "ptxas", 5) == 0) {
            const char *u = strstr(line, "Used ");
            int regs;
            if (u && sscanf(u, "Used %d registers", &regs) == 1) {
                out->regs_per_thread = regs;
                found = true;
                const char *sm = strstr(u, " bytes smem");
                if (sm) {
                    const char *q = sm;
                    while (q > u && q[-1] >= '0' && q[-1] <= '9')
                        q--;
                    out->shared_bytes = atoll(q);
                } else {
                    out->shared_bytes = 0;
                }
            }
            long long stack, spill_st, spill_ld;
            const char *s = strstr(line, "bytes stack frame");
            if (s) {
                const char *q = s - 1;
                while (q > line && (q[-1] == ' '))
                    q--;
                while (q > line && q[-1] >= '0' && q[-1] <= '9')
                    q--;
                if (sscanf(q, "%lld bytes stack frame, %lld bytes spill stores, %lld bytes spill loads", &stack,
                           &spill_st, &spill_ld) == 3) {
                    out->local_bytes = stack;
                    out->spill_bytes = (int)(spill_st + spill_ld);
                }
            }
        }
        p += len + (nl ? 1 : 0);
    }
    return found;
}

static void arch_digits(const DeviceInfo *dev, char *out, size_t n) {
    if (strncmp(dev->arch, "sm_", 3) == 0 && dev->arch[3])
        snprintf(out, n, "%s", dev->arch + 3);
    else if (dev->sm_major > 0)
        snprintf(out, n, "%d%d", dev->sm_major, dev->sm_minor);
    else
        snprintf(out, n, "90");
}

static void cuda_build(const KernelSource *src, const DeviceInfo *dev, const MeasureOptions *opt, const char *workdir,
                       uint64_t tag, BuildResult *out) {
    double t0 = clock_mono();
    CudaJob *j = calloc(1, sizeof *j);
    if (!j) abort();
    j->source = strdup(src->source ? src->source : "");
    if (!j->source) abort();
    arch_digits(dev, j->arch, sizeof j->arch);
    double timeout = opt ? opt->build_timeout_s : 0;
    if (!Gpu_runTimed(job_compile, job_drop, j, timeout)) {
        char buf[200];
        snprintf(buf, sizeof buf,
                 "NVRTC compile still running after %.3g s; abandoned (it finishes in the background, %d such now)",
                 timeout, Gpu_abandonedRunning());
        out->error_no = ERR_BUILD_TIMEOUT;
        out->msg = strdup(buf);
        out->build_s = clock_mono() - t0;
        return;
    }
    out->error_no = j->error_no;
    if (j->error_no != ERR_NO_ERROR) {
        out->msg = j->log;
        j->log = NULL;
        job_drop(j);
        out->build_s = clock_mono() - t0;
        return;
    }
    if (!parse_resources(j->log, out)) {
        out->error_no = ERR_COMPILE_DEVICE;
        size_t n = strlen(j->log) + 96;
        out->msg = malloc(n);
        if (!out->msg) abort();
        snprintf(out->msg, n, "no register count in nvJitLink's verbose log:\n%s", j->log);
        job_drop(j);
        out->build_s = clock_mono() - t0;
        return;
    }
    int64_t threads = src->block[0] * src->block[1] * src->block[2];
    char reason[256] = "";
    if (dev->regs_per_sm > 0 && (int64_t)out->regs_per_thread * threads > dev->regs_per_sm)
        snprintf(reason, sizeof reason, "registers %d x threads %lld = %lld > register file %d", out->regs_per_thread,
                 (long long)threads, (long long)out->regs_per_thread * threads, dev->regs_per_sm);
    else if (dev->max_regs_per_thread > 0 && out->regs_per_thread > dev->max_regs_per_thread)
        snprintf(reason, sizeof reason, "registers per thread %d > %d", out->regs_per_thread, dev->max_regs_per_thread);
    else if (dev->max_shared_bytes_per_block > 0 && out->shared_bytes > dev->max_shared_bytes_per_block) {
        char a[32], b[32];
        Gpu_formatKiB(out->shared_bytes, a, sizeof a);
        Gpu_formatKiB(dev->max_shared_bytes_per_block, b, sizeof b);
        snprintf(reason, sizeof reason, "shared memory %s > %s (ptxas)", a, b);
    }
    if (reason[0]) {
        out->error_no = ERR_INSTANTIATION;
        out->msg = strdup(reason);
        job_drop(j);
        out->build_s = clock_mono() - t0;
        return;
    }
    if (workdir && *workdir) {
        snprintf(out->path, sizeof out->path, "%s/tt_cuda_%016llx.cubin", workdir, (unsigned long long)tag);
        FILE *f = fopen(out->path, "wb");
        bool ok = f && fwrite(j->cubin, 1, j->cubin_len, f) == j->cubin_len;
        if (f && fclose(f) != 0) ok = false;
        if (!ok) {
            char buf[400];
            snprintf(buf, sizeof buf, "cannot write the cubin to %s", out->path);
            remove(out->path);
            out->path[0] = '\0';
            out->error_no = ERR_COMPILE_HOST;
            out->msg = strdup(buf);
            job_drop(j);
            out->build_s = clock_mono() - t0;
            return;
        }
    }
    /* Keep ptxas's lines: they are the resources a user wants to see. */
    out->msg = j->log;
    j->log = NULL;
    job_drop(j);
    out->build_s = clock_mono() - t0;
}

static Runner *cuda_runner_new(const DeviceInfo *dev, char *err) {
    if (!dev->present) {
        tt_fail(err, "cuda: no device to measure on (%s); use compile-only mode or another target", dev->name);
        return NULL;
    }
    return Runner_new("cuda", err);
}

static void cuda_measure(Runner *r, const KernelSource *src, const BuildResult *built, const MeasureOptions *opt,
                         MeasureResult *out) {
    Runner_measure(r, src, built, opt, NULL, out);
}

#else /* !TT_HAVE_CUDA */

static Status cuda_probe(DeviceInfo *out, char *err) {
    return tt_fail(err, "not built in (CUDA toolkit with NVRTC and nvJitLink not found at build time)");
}

static void cuda_build(const KernelSource *src, const DeviceInfo *dev, const MeasureOptions *opt, const char *workdir,
                       uint64_t tag, BuildResult *out) {
    out->error_no = ERR_COMPILE_DEVICE;
    out->msg = strdup("cuda: not built in (CUDA toolkit with NVRTC and nvJitLink not found at build time)");
}

static Runner *cuda_runner_new(const DeviceInfo *dev, char *err) {
    tt_fail(err, "cuda: not built in");
    return NULL;
}

static void cuda_measure(Runner *r, const KernelSource *src, const BuildResult *built, const MeasureOptions *opt,
                         MeasureResult *out) {
    out->error_no = ERR_UNKNOWN;
}

#endif

static Status cuda_set_task(Runner *r, const Workload *wl, char *err) { return Runner_setTask(r, wl, err); }

/* The devices this process may use: the entries of CUDA_VISIBLE_DEVICES when
 * it is set, else the driver's device files (/dev/nvidia0, ...). Neither
 * starts the CUDA runtime, which reads CUDA_VISIBLE_DEVICES once, when it
 * starts: so select_device can still narrow it to one device. */
static int cuda_device_count(void) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (v) {
        if (!*v) return 0;
        int n = 1;
        for (const char *p = v; *p; p++)
            n += *p == ',';
        return n;
    }
    DIR *d = opendir("/dev");
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *p = e->d_name;
        if (strncmp(p, "nvidia", 6) != 0 || !p[6]) continue;
        for (p += 6; isdigit((unsigned char)*p); p++)
            ;
        n += *p == '\0';
    }
    closedir(d);
    return n;
}

/* Device `index` of those visible becomes the only one (device 0 for the
 * probe and the worker). */
static Status cuda_select_device(int index, char *err) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    char pick[64];
    if (v) {
        const char *p = v;
        for (int i = 0; i < index && p; i++) {
            p = strchr(p, ',');
            if (p) p++;
        }
        if (!p || !*p || *p == ',')
            return tt_fail(err, "cuda: no device %d among CUDA_VISIBLE_DEVICES=%.64s", index, v);
        size_t n = strcspn(p, ",");
        snprintf(pick, sizeof pick, "%.*s", (int)(n < sizeof pick - 1 ? n : sizeof pick - 1), p);
    } else {
        snprintf(pick, sizeof pick, "%d", index);
    }
    if (setenv("CUDA_VISIBLE_DEVICES", pick, 1) != 0) return tt_fail(err, "cuda: cannot set CUDA_VISIBLE_DEVICES");
    return TT_OK;
}

extern const WorkerMode worker_mode_cuda; /* worker_cuda.c */

const Target target_cuda = {
    .name = "cuda",
    .family = FAMILY_GPU,
    .dialect = DIALECT_CUDA,
    .probe = cuda_probe,
    .offline_info = cuda_offline_info,
    .default_arch = CUDA_DEFAULT_ARCH,
    .device_count = cuda_device_count,
    .select_device = cuda_select_device,
    .build = cuda_build,
    .runner_new = cuda_runner_new,
    .runner_set_task = cuda_set_task,
    .measure = cuda_measure,
    .runner_delete = Runner_delete,
    .worker = &worker_mode_cuda,
};
