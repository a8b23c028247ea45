/* kernels/targets/cuda/worker_cuda.c: the "cuda" mode of tunetop-worker.
 *
 * Loads the cubin the cuda target built as a CUDA library
 * (cudaLibraryLoadData / cudaLibraryGetKernel), copies the task's inputs to
 * the device, launches once on NaN-filled output, checks against the
 * reference, then times launches with CUDA events (number / repeat /
 * min_repeat_ms through WorkerMode_time). A launch error that poisons the
 * context (illegal address and the like) is reported and the device reset,
 * so the next kernel starts clean.
 *
 * No machine of this project has a GPU: this code is compiled and reviewed,
 * never run here; on these machines init fails with the driver's one-line
 * reason and every request is answered with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/worker/mode.h"

#ifdef TT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/targets/gpu_build.h"

static cudaStream_t stream;
static cudaEvent_t ev_start, ev_stop;

static Status cuda_init(char *err) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return tt_fail(err, "cuda: %s", cudaGetErrorString(e));
    if (count == 0) return tt_fail(err, "cuda: no CUDA device found");
    if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaFree(NULL)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreate(&ev_start)) != cudaSuccess || (e = cudaEventCreate(&ev_stop)) != cudaSuccess)
        return tt_fail(err, "cuda: cannot set up the device: %s", cudaGetErrorString(e));
    return TT_OK;
}

static void cuda_done(void) {
    cudaEventDestroy(ev_start);
    cudaEventDestroy(ev_stop);
    cudaStreamDestroy(stream);
}

typedef struct Launch {
    cudaKernel_t kernel;
    dim3 grid, block;
    void *params[WORKLOAD_MAX_ARGS];
    cudaError_t error;
} Launch;

static void run_once(void *ctx) {
    Launch *l = ctx;
    if (l->error != cudaSuccess) return;
    l->error = cudaLaunchKernel((const void *)l->kernel, l->grid, l->block, l->params, 0, stream);
    if (l->error == cudaSuccess) l->error = cudaStreamSynchronize(stream);
}

/* Device time of n back-to-back launches. */
static double timer(void *ctx, int n) {
    Launch *l = ctx;
    if (l->error != cudaSuccess) return 0;
    cudaEventRecord(ev_start, stream);
    for (int i = 0; i < n && l->error == cudaSuccess; i++)
        l->error = cudaLaunchKernel((const void *)l->kernel, l->grid, l->block, l->params, 0, stream);
    cudaEventRecord(ev_stop, stream);
    cudaError_t e = cudaEventSynchronize(ev_stop);
    if (l->error == cudaSuccess) l->error = e;
    float ms = 0;
    if (l->error == cudaSuccess) cudaEventElapsedTime(&ms, ev_start, ev_stop);
    return ms * 1e-3;
}

/* Errors after which the context cannot be used again. */
static bool sticky(cudaError_t e) {
    return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorMisalignedAddress ||
           e == cudaErrorIllegalInstruction || e == cudaErrorHardwareStackError || e == cudaErrorInvalidPc ||
           e == cudaErrorAssert || e == cudaErrorLaunchTimeout;
}

static void cuda_measure(const WorkerTask *task, const WorkerMeasureReq *req, const char *source, size_t source_len,
                         WorkerReply *rep, char *msg, size_t cap) {
    if (!task) {
        rep->error_no = ERR_UNKNOWN;
        snprintf(msg, cap, "no task set in the worker");
        return;
    }
    size_t cubin_len = 0;
    void *cubin = Gpu_readFile(req->path, &cubin_len);
    if (!cubin) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        snprintf(msg, cap, "cannot read the cubin %s", req->path);
        return;
    }
    cudaLibrary_t lib = NULL;
    Launch l;
    memset(&l, 0, sizeof l);
    float *dev_args[WORKLOAD_MAX_ARGS] = {0};
    cudaError_t e = cudaLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
    free(cubin);
    if (e != cudaSuccess) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        snprintf(msg, cap, "cudaLibraryLoadData: %s", cudaGetErrorString(e));
        return;
    }
    const char *what = "cudaLibraryGetKernel";
    e = cudaLibraryGetKernel(&l.kernel, lib, req->entry);
    int last = task->nargs - 1;
    for (int i = 0; e == cudaSuccess && i < task->nargs; i++) {
        size_t bytes = task->counts[i] * sizeof(float);
        what = "cudaMalloc";
        e = cudaMalloc((void **)&dev_args[i], bytes ? bytes : sizeof(float));
        if (e != cudaSuccess) break;
        what = "cudaMemcpy";
        if (i < last)
            e = cudaMemcpy(dev_args[i], task->args[i], bytes, cudaMemcpyHostToDevice);
        else
            e = cudaMemset(dev_args[i], 0xff, bytes); /* all-ones floats are NaN: unwritten output fails the check */
        l.params[i] = &dev_args[i];
    }
    if (e != cudaSuccess) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        snprintf(msg, cap, "%s: %s", what, cudaGetErrorString(e));
        goto out;
    }
    l.grid.x = (unsigned)req->grid[0], l.grid.y = (unsigned)req->grid[1], l.grid.z = (unsigned)req->grid[2];
    l.block.x = (unsigned)req->block[0], l.block.y = (unsigned)req->block[1], l.block.z = (unsigned)req->block[2];
    run_once(&l);
    if (l.error != cudaSuccess) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        snprintf(msg, cap, "kernel launch: %s", cudaGetErrorString(l.error));
        goto out;
    }
    if (req->check_correctness) {
        float *out = task->args[last];
        e = cudaMemcpy(out, dev_args[last], task->counts[last] * sizeof(float), cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) {
            rep->error_no = ERR_RUNTIME_DEVICE;
            snprintf(msg, cap, "cudaMemcpy of the output: %s", cudaGetErrorString(e));
            goto out;
        }
        if (!Workload_compare(&task->wl, task->ref, out, msg, cap)) {
            rep->error_no = ERR_WRONG_ANSWER;
            goto out;
        }
    }
    WorkerMode_time(run_once, timer, &l, req, rep);
    if (l.error != cudaSuccess) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        rep->n_costs = 0;
        snprintf(msg, cap, "kernel launch while timing: %s", cudaGetErrorString(l.error));
    }
out:
    if (sticky(l.error) || sticky(e)) {
        /* The context is lost: drop it (and with it every allocation) and start over. */
        cudaDeviceReset();
        cuda_done();
        char err[TT_ERRLEN];
        if (cuda_init(err) != TT_OK) snprintf(msg + strlen(msg), cap - strlen(msg), "; %s", err);
        return;
    }
    for (int i = 0; i < task->nargs; i++)
        if (dev_args[i]) cudaFree(dev_args[i]);
    cudaLibraryUnload(lib);
}

const WorkerMode worker_mode_cuda = {
    .name = "cuda",
    .init = cuda_init,
    .measure = cuda_measure,
    .done = cuda_done,
};

#else

static Status cuda_init(char *err) { return tt_fail(err, "cuda: not built in"); }

static void cuda_measure(const WorkerTask *task, const WorkerMeasureReq *req, const char *source, size_t source_len,
                         WorkerReply *rep, char *msg, size_t cap) {
    rep->error_no = ERR_RUNTIME_DEVICE;
    snprintf(msg, cap, "cuda: not built in");
}

const WorkerMode worker_mode_cuda = {.name = "cuda", .init = cuda_init, .measure = cuda_measure, .done = NULL};

#endif
