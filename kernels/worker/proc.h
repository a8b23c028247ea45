/* kernels/worker/proc.h: the session side of the measurement worker: spawn
 * it, send a request and wait for the reply with a deadline, kill and reap a
 * hung or dead worker, respawn it on the next request (see protocol.h). */
#ifndef TT_KERNELS_WORKER_PROC_H
#define TT_KERNELS_WORKER_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/status.h"
#include "kernels/target.h"
#include "kernels/worker/protocol.h"

#define WORKER_MAX_ENV 8

typedef struct WorkerProc {
    char exe[512];
    char mode[16];
    char log_path[512];            /* worker stderr ("" = /dev/null) */
    char env[WORKER_MAX_ENV][128]; /* "NAME=value" overrides */
    int n_env;
    pid_t pid;           /* 0 when not running */
    int fd;              /* session end of the socketpair, -1 when not running */
    unsigned spawns;     /* how many times the worker was started */
    char task_path[512]; /* current task file ("" none) */
    bool task_sent;      /* the running worker has mapped task_path */
} WorkerProc;

/* Locates tunetop-worker: next to the running executable (/proc/self/exe),
 * else TT_WORKER_BUILD_PATH (compile definition), else $TUNETOP_WORKER. */
Status WorkerProc_findExe(char *out, size_t n, char *err);

/* Does not start anything (the worker starts on the first request). exe from
 * WorkerProc_findExe; mode "cpu", "cuda", "opencl"; log_path may be NULL. */
void WorkerProc_init(WorkerProc *this, const char *exe, const char *mode, const char *log_path);
/* Asks the worker to quit, kills it if it does not, reaps it. */
void WorkerProc_done(WorkerProc *this);

/* Sets NAME=value in the worker's environment; when it changes, a running
 * worker is stopped (the next request starts one with the new value). */
Status WorkerProc_setEnv(WorkerProc *this, const char *name, const char *value, char *err);
/* The task file the next measurements use; sent to the worker before the
 * next measure, and again after every restart. path is copied. */
void WorkerProc_setTask(WorkerProc *this, const char *path);

Status WorkerProc_start(WorkerProc *this, char *err); /* no-op when running */
void WorkerProc_kill(WorkerProc *this);               /* SIGKILL to its group, reap */

typedef enum {
    WORKER_OK = 0,  /* reply received */
    WORKER_TIMEOUT, /* no reply in time: the worker was killed and reaped */
    WORKER_DIED,    /* the worker died (msg: "worker killed by signal 11 (Segmentation fault)", then
                     * "; its last output: ..." when it wrote to its log) */
    WORKER_FAILED,  /* could not start or talk to it (msg says why) */
} WorkerCallStatus;

/* Sends one request and waits up to timeout_s for its reply (starting the
 * worker first if needed). On WORKER_OK, *rep and rep_msg (the reply's
 * message, "" when none) are filled. On any other status the worker is dead
 * and reaped, and rep_msg holds the reason. rep_msg holds msg_cap bytes. */
WorkerCallStatus WorkerProc_call(WorkerProc *this, uint32_t type, const void *a, size_t alen, const void *b,
                                 size_t blen, double timeout_s, WorkerReply *rep, char *rep_msg, size_t msg_cap);

/* The whole measurement of one kernel, for a Runner: starts the worker if
 * needed, sends the task if the worker does not have it, sends the request
 * and waits up to run_timeout_s from now. Maps the outcome to out: the
 * worker's reply; a hang -> RUN_TIMEOUT; a death -> RUNTIME_DEVICE with the
 * signal; no task set or no worker -> UNKNOWN_ERROR. Sets out->run_s. */
void WorkerProc_measure(WorkerProc *this, const WorkerMeasureReq *req, const char *source, size_t source_len,
                        double run_timeout_s, MeasureResult *out);

/* Fills a request from the options and the built kernel (number >= 1,
 * repeat clamped to 1..MEASURE_MAX_COSTS). */
void WorkerMeasureReq_fill(WorkerMeasureReq *this, const MeasureOptions *opt, const KernelSource *src,
                           const BuildResult *built);

#endif
