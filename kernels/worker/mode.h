/* kernels/worker/mode.h: what a mode of tunetop-worker implements. Each
 * target defines its mode beside it (kernels/targets/<name>/worker_<name>.c,
 * `const WorkerMode worker_mode_<name>`) and points Target.worker at it;
 * tunetop-worker runs the mode of the target its argument names. */
#ifndef TT_KERNELS_WORKER_MODE_H
#define TT_KERNELS_WORKER_MODE_H

#include <stdbool.h>
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
    /* The kernels read the task's inputs in host memory: the worker reads them
     * for WORKER_WARM_S once a task is mapped (taskfile.h), before any timing. */
    bool warm_inputs;
} WorkerMode;

#endif
