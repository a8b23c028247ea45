/* kernels/worker/taskfile.h: the task file, the inputs and reference output
 * of one task shared by the session and the worker (see protocol.h). */
#ifndef TT_KERNELS_WORKER_TASKFILE_H
#define TT_KERNELS_WORKER_TASKFILE_H

#include <stddef.h>

#include "base/status.h"
#include "kernels/workload.h"

/* Session side: fills the inputs (seed fixed per workload), computes the
 * reference output and writes both to `path` (replaced atomically). */
Status WorkerTask_write(const Workload *wl, const char *path, char *err);

/* Worker side: a mapped task. args[0 .. nargs-2] point into the read-only
 * mapping; args[nargs-1] is a private, 64-byte aligned output buffer that the
 * task owns; ref is the reference output (read-only). */
typedef struct WorkerTask {
    Workload wl;
    int nargs;
    size_t counts[WORKLOAD_MAX_ARGS]; /* elements per argument */
    float *args[WORKLOAD_MAX_ARGS];
    const float *ref;
    void *map;
    size_t map_len;
} WorkerTask;

Status WorkerTask_map(WorkerTask *this, const char *path, char *err); /* this is zeroed on failure */
void WorkerTask_unmap(WorkerTask *this);                              /* safe on a zeroed task */

#endif
