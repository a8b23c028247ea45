/* kernels/targets/runner.c: see runner.h. The kernel runs in tunetop-worker, so a
 * crash, an illegal address or a hang kills the worker, not the session;
 * kernels/worker/ does the process and protocol work. */
#include "kernels/targets/runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/tmpdir.h"
#include "kernels/worker/proc.h"
#include "kernels/worker/taskfile.h"

struct Runner {
    WorkerProc proc;
    char dir[256];
    char task_path[320];
    bool has_task;
    int lock_fd; /* base/tmpdir.h: held while the directory is in use */
    Workload wl;
    unsigned n_tasks;
};

Runner *Runner_new(const char *mode, char *err) {
    char exe[512];
    if (WorkerProc_findExe(exe, sizeof exe, err) != TT_OK) return NULL;
    Runner *this = calloc(1, sizeof *this);
    if (!this) {
        tt_fail(err, "out of memory");
        return NULL;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(this->dir, sizeof this->dir, "%s/tunetop-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", mode);
    if (!mkdtemp(this->dir)) {
        tt_fail(err, "cannot create a runner directory %s: %s", this->dir, strerror(errno));
        free(this);
        return NULL;
    }
    this->lock_fd = TmpDir_lock(this->dir);
    char log[300];
    snprintf(log, sizeof log, "%s/worker.log", this->dir);
    WorkerProc_init(&this->proc, exe, mode, log);
    return this;
}

Status Runner_setTask(Runner *this, const Workload *wl, char *err) {
    if (this->has_task && Workload_equal(&this->wl, wl)) return TT_OK;
    /* A new name per task: the worker keeps a task mapped until it is sent a
     * different path, so rewriting the same file would go unnoticed. */
    char path[320];
    snprintf(path, sizeof path, "%s/task%u.bin", this->dir, ++this->n_tasks);
    if (WorkerTask_write(wl, path, err) != TT_OK) return TT_ERR;
    WorkerProc_setTask(&this->proc, path);
    if (this->has_task) unlink(this->task_path);
    snprintf(this->task_path, sizeof this->task_path, "%s", path);
    this->wl = *wl;
    this->has_task = true;
    return TT_OK;
}

Status Runner_setEnv(Runner *this, const char *name, const char *value, char *err) {
    return WorkerProc_setEnv(&this->proc, name, value, err);
}

void Runner_measure(Runner *this, const KernelSource *src, const BuildResult *built, const MeasureOptions *opt,
                    const char *source, MeasureResult *out) {
    out->n_costs = 0;
    if (!built || built->error_no != ERR_NO_ERROR) {
        out->error_no = ERR_UNKNOWN;
        free(out->msg);
        out->msg = strdup("nothing to measure: the kernel was not built");
        out->run_s = 0;
        return;
    }
    WorkerMeasureReq req;
    WorkerMeasureReq_fill(&req, opt, src, built);
    double timeout = opt->run_timeout_s > 0 ? opt->run_timeout_s : 10.0;
    double slow = Runner_slowTimeout(opt->slow_cutoff_s);
    bool cut = slow > 0 && slow < timeout;
    WorkerProc_measure(&this->proc, &req, source, source ? strlen(source) : 0, cut ? slow : timeout, out);
    if (cut && out->error_no == ERR_RUN_TIMEOUT) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "kernel did not finish within %.3g s (%dx the slow cutoff, which is %.3g ms; --timeout is %.3g s); "
                 "worker killed",
                 slow, RUNNER_SLOW_TIMEOUT_FACTOR, opt->slow_cutoff_s * 1e3, timeout);
        free(out->msg);
        out->msg = strdup(msg);
    }
}

double Runner_slowTimeout(double slow_cutoff_s) {
    if (!(slow_cutoff_s > 0)) return 0;
    double t = RUNNER_SLOW_TIMEOUT_FACTOR * slow_cutoff_s;
    return t > RUNNER_SLOW_TIMEOUT_FLOOR_S ? t : RUNNER_SLOW_TIMEOUT_FLOOR_S;
}

void Runner_delete(Runner *this) {
    if (!this) return;
    WorkerProc_done(&this->proc);
    if (this->has_task) unlink(this->task_path);
    TmpDir_remove(this->dir); /* the worker's log, its lock, what a kernel left */
    if (this->lock_fd >= 0) close(this->lock_fd);
    free(this);
}
