/* tuner/backend.h: a measure backend, the engine's one hook for building and
 * measuring candidates somewhere other than its own builder pool and runner
 * (tuner/cluster/cluster.h: measure servers on other MPI ranks).
 *
 * The engine submits jobs (a round of a task at a time, and several rounds
 * while `want` says the backend has free slots), then takes outcomes in
 * completion order, whatever their round, until every job came back:
 * measured (build and measurement results,
 * raw: the engine turns them into records as it does its own), or
 * unmeasured (cancelled, or no rank left to measure it: never recorded, so
 * proposed again later or by a resume). Notes are lines for the user
 * (a rank lost, a rank that cannot open its device).
 *
 * All calls come from the engine thread, except `devices`, which any thread
 * may call (the UI's devices view, the headless reporter).
 */
#ifndef TT_TUNER_BACKEND_H
#define TT_TUNER_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/target.h"
#include "kernels/workload.h"

#define BACKEND_HOST_LEN 64
#define BACKEND_DEV_LEN 128

typedef struct BackendJob {
    int cookie;                      /* the engine's number for the job, given back in its outcome */
    int group;                       /* the engine's task: `cancel` takes it */
    char task_key[WORKLOAD_KEY_LEN]; /* Workload_key: the measuring side rebuilds the task from it */
    char template_name[64];
    uint64_t index;       /* flat config index */
    double slow_cutoff_s; /* MeasureOptions.slow_cutoff_s for this job (0 = off) */
} BackendJob;

typedef enum { OUTCOME_MEASURED = 0, OUTCOME_UNMEASURED, OUTCOME_NOTE } OutcomeKind;

typedef struct BackendOutcome {
    OutcomeKind kind;
    int cookie;
    /* the build (BuildResult's fields) */
    int build_error;
    double build_s;
    int regs, spills;
    int64_t shared_bytes, local_bytes;
    /* the measurement (MeasureResult's fields); error_no ERR_NO_ERROR with no
     * costs when the build failed (then msg is the build's) */
    MeasureResult mr; /* owns mr.msg: MeasureResult_done */
    /* where it ran */
    char host[BACKEND_HOST_LEN];
    int rank;
    char device[BACKEND_DEV_LEN];
    /* OUTCOME_NOTE: a line for the user; warn = a warning, else information;
     * fatal = nothing more can be measured: the session stops */
    bool warn, fatal;
    char note[256];
} BackendOutcome;

/* One row of the devices view. */
typedef enum {
    DEVSTATE_STARTING = 0,
    DEVSTATE_IDLE,
    DEVSTATE_BUILDING,
    DEVSTATE_MEASURING,
    DEVSTATE_LOST,
    DEVSTATE_FAILED,
    DEVSTATE_DONE
} DeviceState;
const char *DeviceState_name(DeviceState s); /* "starting", "idle", "building", "measuring", "lost", "failed", "done" */

typedef struct DeviceRow {
    int rank;
    char host[BACKEND_HOST_LEN];
    char device[BACKEND_DEV_LEN];
    DeviceState state;
    int measured;        /* outcomes it sent back (errors included) */
    int errors;          /* of those, failed builds or measurements */
    int in_flight;       /* jobs it holds now */
    double cand_per_s;   /* measured / seconds since it got its first job */
    double last_heard_s; /* seconds since its last message */
} DeviceRow;

typedef struct MeasureBackend {
    void *ctx;
    void (*submit)(void *ctx, const BackendJob *jobs, int n);
    /* Waits up to timeout_s for the next outcome; false when none came. */
    bool (*next)(void *ctx, BackendOutcome *out, double timeout_s);
    /* Jobs of `group` (-1: every job) not handed out yet come back
     * unmeasured; those in flight come back when measured, or unmeasured
     * after a short grace. */
    void (*cancel)(void *ctx, int group);
    /* How many more jobs it could hand out now: its free slots less the jobs
     * it holds queued (<= 0: enough queued). NULL: the engine submits a round
     * only when the previous one came back. */
    int (*want)(void *ctx);
    /* Copies up to max rows; returns the count. */
    int (*devices)(void *ctx, DeviceRow *out, int max);
} MeasureBackend;

#endif
