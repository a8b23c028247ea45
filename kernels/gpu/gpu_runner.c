/* kernels/gpu/gpu_runner.c: the session side of GPU measurements. The kernel
 * runs in tunetop-worker (mode "cuda" or "opencl"), so an illegal address or a
 * hung kernel kills the worker, not the session; kernels/workerproc.c does the
 * process and protocol work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/gpu/gpu.h"
#include "kernels/workerproc.h"

struct Runner {
    WorkerProc proc;
    char dir[256];
    char task_path[300];
    bool has_task;
    unsigned n_tasks;
};

Runner *GpuRunner_new(const char *mode, const DeviceInfo *dev, char *err) {
    char exe[512];
    if (WorkerProc_findExe(exe, sizeof exe, err) != TT_OK) return NULL;
    Runner *r = calloc(1, sizeof *r);
    if (!r) {
        tt_fail(err, "out of memory");
        return NULL;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(r->dir, sizeof r->dir, "%s/tunetop-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", mode);
    if (!mkdtemp(r->dir)) {
        tt_fail(err, "cannot create a temp directory in %s", tmp && *tmp ? tmp : "/tmp");
        free(r);
        return NULL;
    }
    char log[600];
    snprintf(log, sizeof log, "%s/worker.log", r->dir);
    WorkerProc_init(&r->proc, exe, mode, log);
    return r;
}

Status GpuRunner_setTask(Runner *r, const Workload *wl, char *err) {
    /* A new name per task: the worker keeps a task mapped until it is sent a
     * different path, so rewriting the same file would go unnoticed. */
    char path[300];
    snprintf(path, sizeof path, "%s/task%u.bin", r->dir, ++r->n_tasks);
    if (WorkerTask_write(wl, path, err) != TT_OK) return TT_ERR;
    WorkerProc_setTask(&r->proc, path);
    if (r->has_task) unlink(r->task_path);
    snprintf(r->task_path, sizeof r->task_path, "%s", path);
    r->has_task = true;
    return TT_OK;
}

void GpuRunner_measure(Runner *r, const KernelSource *src, const BuildResult *built, const MeasureOptions *opt,
                       bool send_source, MeasureResult *out) {
    WorkerMeasureReq req;
    WorkerMeasureReq_fill(&req, opt, src, built);
    const char *text = send_source && src->source ? src->source : NULL;
    WorkerProc_measure(&r->proc, &req, text, text ? strlen(text) : 0, opt->run_timeout_s, out);
}

void GpuRunner_delete(Runner *r) {
    if (!r) return;
    WorkerProc_done(&r->proc);
    if (r->has_task) unlink(r->task_path);
    char log[600];
    snprintf(log, sizeof log, "%s/worker.log", r->dir);
    unlink(log);
    rmdir(r->dir);
    free(r);
}
