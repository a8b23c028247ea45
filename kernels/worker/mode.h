/* kernels/worker/mode.h: what a mode of tunetop-worker implements (one per
 * target, beside it: kernels/targets/<mode>/worker_<mode>.c). */
#ifndef TT_KERNELS_WORKER_MODE_H
#define TT_KERNELS_WORKER_MODE_H

#include <stddef.h>

#include "base/status.h"
#include "kernels/worker/protocol.h"
#include "kernels/worker/taskfile.h"
#include "kernels/worker/timing.h"

typedef struct WorkerMode {
    const char *name; /* "cpu", "cuda", "opencl" */
    /* Once at worker start (load a runtime, create a context). May be NULL.
     * A failure makes every measure reply RUNTIME_DEVICE with this sentence. */
    Status (*init)(char *err);
    /* Loads, runs, checks and times one kernel. `task` is NULL when no task
     * was set (the mode replies UNKNOWN_ERROR). source/source_len: the bytes
     * after the request (may be 0). Writes error message into msg (msg_cap
     * bytes, "" when none). */
    void (*measure)(const WorkerTask *task, const WorkerMeasureReq *req, const char *source, size_t source_len,
                    WorkerReply *rep, char *msg, size_t msg_cap);
    void (*done)(void); /* may be NULL */
} WorkerMode;

/* Defined in kernels/targets/<mode>/worker_<mode>.c (the worker executable only);
 * worker_main.c refers to them weakly, so a mode not written yet is reported
 * as "mode not built" rather than breaking the link. */
extern const WorkerMode worker_mode_cpu, worker_mode_cuda, worker_mode_opencl;

#endif
