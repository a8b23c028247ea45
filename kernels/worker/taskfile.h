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

/* How long a cpu worker reads a newly mapped task's inputs before it times
 * anything: on an AVX2 EPYC (2-core VM) the first timings of a dense layer
 * whose 2 MiB weight had just been mapped ran 1.5x slower (48-60 us against
 * 33-40 for the same kernel later, at load 3.5) until its inputs had been read
 * for some 20-50 ms; ten runs of the kernel (0.5 ms) were not enough, 20 ms of
 * arithmetic alone (the clock) did not help, nor a private anonymous copy of
 * the inputs (not the file mapping's pages). */
#define WORKER_WARM_S 0.05

/* Reads every input and the output buffer, one float per cache line, pass
 * after pass until `seconds` have passed (at least one pass); returns the
 * passes. */
int WorkerTask_warm(const WorkerTask *this, double seconds);

#endif
