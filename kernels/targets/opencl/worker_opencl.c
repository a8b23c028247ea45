/* kernels/targets/opencl/worker_opencl.c: the "opencl" mode of tunetop-worker. Loads
 * the program binary the opencl target built (or rebuilds the source sent
 * along when the binary is refused), runs the kernel (or the kernels of the
 * launch plan the source starts with, kernels/targets/launch_plan.h) once on NaN-filled
 * output, checks it against the task's reference, then times it with
 * profiling events (device time from the first launch's start to the last
 * launch's end). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/worker/mode.h"

#ifdef TT_HAVE_OPENCL
#include "kernels/targets/gpu_build.h"
#include "kernels/targets/opencl/ocl.h"

static OclDevice dev;

static Status ocl_init(char *err) { return OclDevice_open(&dev, err); }

static void ocl_done(void) { OclDevice_close(&dev); }

typedef struct Timing {
    OclExec *ex;
    bool failed;
    char err[TT_ERRLEN];
} Timing;

static void run_once(void *ctx) {
    Timing *t = ctx;
    if (!t->failed && OclExec_run(t->ex, 1, NULL, t->err) != TT_OK) t->failed = true;
}

static double timer(void *ctx, int n) {
    Timing *t = ctx;
    double s = 0;
    if (!t->failed && OclExec_run(t->ex, n, &s, t->err) != TT_OK) t->failed = true;
    return s;
}

static void ocl_measure(const WorkerTask *task, const WorkerMeasureReq *req, const char *source, size_t source_len,
                        WorkerReply *rep, char *msg, size_t cap) {
    if (!task) {
        rep->error_no = ERR_UNKNOWN;
        snprintf(msg, cap, "no task set in the worker");
        return;
    }
    cl_program prog = NULL;
    char *log = NULL;
    Status st = TT_ERR;
    if (req->path[0]) {
        size_t len = 0;
        unsigned char *bin = Gpu_readFile(req->path, &len);
        if (bin) st = Ocl_buildBinary(&dev, bin, len, &prog, &log);
        free(bin);
    }
    if (st != TT_OK && source_len > 0) {
        free(log);
        log = NULL;
        char *src = strndup(source, source_len);
        if (!src) abort();
        st = Ocl_buildSource(&dev, src, &prog, &log);
        free(src);
    }
    if (st != TT_OK) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        snprintf(msg, cap, "cannot load the program: %s", log ? log : "no binary and no source");
        free(log);
        return;
    }
    free(log);
    OclExec ex;
    memset(&ex, 0, sizeof ex);
    char err[TT_ERRLEN];
    LaunchPlan plan; /* a program of several kernels says so in its first line */
    int planned = source_len > 0 ? LaunchPlan_parse(source, &plan, err) : 0;
    if (planned < 0 ||
        (planned ? OclExec_initPlan(&ex, &dev, prog, &plan, task->args, task->counts, task->nargs, err)
                 : OclExec_init(&ex, &dev, prog, req->entry, req->grid, req->block, task->args, task->counts,
                                task->nargs, err)) != TT_OK ||
        OclExec_run(&ex, 1, NULL, err) != TT_OK) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        snprintf(msg, cap, "%s", err);
        OclExec_done(&ex);
        clReleaseProgram(prog);
        return;
    }
    float *out = task->args[task->nargs - 1];
    if (req->check_correctness) {
        if (OclExec_readOutput(&ex, out, err) != TT_OK) {
            rep->error_no = ERR_RUNTIME_DEVICE;
            snprintf(msg, cap, "%s", err);
        } else if (!Workload_compare(&task->wl, task->ref, out, msg, cap)) {
            rep->error_no = ERR_WRONG_ANSWER;
        }
    }
    if (rep->error_no == ERR_NO_ERROR) {
        Timing t = {.ex = &ex};
        WorkerMode_time(run_once, timer, &t, req, rep);
        if (t.failed) {
            rep->error_no = ERR_RUNTIME_DEVICE;
            rep->n_costs = 0;
            snprintf(msg, cap, "%s", t.err);
        }
    }
    OclExec_done(&ex);
    clReleaseProgram(prog);
}

const WorkerMode worker_mode_opencl = {
    .name = "opencl",
    .init = ocl_init,
    .measure = ocl_measure,
    .done = ocl_done,
};

#else

static Status ocl_init(char *err) { return tt_fail(err, "opencl: not built in"); }

static void ocl_measure(const WorkerTask *task, const WorkerMeasureReq *req, const char *source, size_t source_len,
                        WorkerReply *rep, char *msg, size_t cap) {
    rep->error_no = ERR_RUNTIME_DEVICE;
    snprintf(msg, cap, "opencl: not built in");
}

const WorkerMode worker_mode_opencl = {.name = "opencl", .init = ocl_init, .measure = ocl_measure, .done = NULL};

#endif
