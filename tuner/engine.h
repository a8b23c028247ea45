/* tuner/engine.h: a tuning session.
 *
 * The engine owns the tasks, a strategy per task, the task scheduler, the
 * builder pool, the runner and the record log, and runs them on its own
 * threads. Observers (the headless reporter, the terminal UI) never block it:
 *   - events (value structs, tuner/event.h) go into a bounded queue; Engine_eventFd becomes
 *     readable when there are some; Engine_drainEvents takes them out;
 *   - Engine_snapshot copies the scheduler table under a short lock;
 *   - steering calls (pause, priority, stop) are safe from any thread: they
 *     queue a command that the engine applies before its next decision.
 *
 * Life: Engine_new -> Engine_start -> (events / steering) -> Engine_wait ->
 * Engine_delete. Engine_requestStop asks for a graceful stop: builds in
 * flight finish, measured results are recorded and synced, nothing new starts.
 */
#ifndef TT_TUNER_ENGINE_H
#define TT_TUNER_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/target.h"
#include "kernels/targets/machine.h"
#include "records/record.h"
#include "tuner/backend.h"
#include "tuner/event.h"
#include "tuner/resume.h"
#include "tuner/search/strategy.h"
#include "tuner/task.h"

typedef struct EngineConfig {
    const Target *target;
    DeviceInfo dev;
    MeasureOptions measure;
    const char *strategy;  /* Strategy_names(); default (and NULL) Strategy_default() */
    const char *scheduler; /* TaskScheduler_names(); default (and NULL) TaskScheduler_default() */
    int trials;            /* total measurement budget over all tasks */
    int early_stopping;    /* per task: stop after this many trials without improvement (0 = off) */
    int batch;             /* measures per round (0 = min(64, trials / tasks)) */
    int builders;          /* builder threads (0 = cores) */
    const char *log_path;  /* record log (required) */
    const char *workdir;   /* for build artifacts (NULL = a private temp dir) */
    uint64_t seed;
    bool transfer;       /* also learn from earlier sessions' tasks found in the log */
    int event_queue;     /* events the queue holds before it drops some (0 = 8192) */
    const char *network; /* the network the tasks came from, for the log's session object (NULL = none) */
    bool isolate;        /* tasks do not learn from each other (default: every task's results
                            reach the other tasks of its template, see Strategy.learn_other) */
    /* The machine's figures for each task's roofline (kernels/targets/machine.h), for
     * the cpu target; without them no task has a roof. */
    bool have_machine;
    MachineFigures machine;
    double roof_stop; /* the gradient scheduler stops a task at this fraction of its roof (0 = off; default 0.9) */
    /* Where candidates are built and measured: NULL = this process (builder
     * pool and runner); else a backend (tuner/backend.h, e.g. MPI ranks) that
     * outlives the engine. */
    const MeasureBackend *backend;
    EvolutionOptions evolution; /* the evolution strategy of te.sketch tasks (EvolutionOptions_default) */
} EngineConfig;

void EngineConfig_defaults(EngineConfig *this);

/* One row of the scheduler table. */
typedef struct TaskRow {
    int id;
    TaskState state;
    int priority;
    int trials;            /* measured configs (errors included) */
    int allotted;          /* trials this task may still get by the current plan + trials */
    int errors;            /* failed configs */
    double best_latency_s; /* +inf when none */
    double best_gflops;    /* 0 when none */
    double current_gflops; /* last successful config of the latest batch (0 if the batch all failed) */
    uint64_t best_index;
    bool user_paused;   /* paused on its own (p), apart from a pause of every task (P) */
    double started;     /* engine seconds when the task's first round started (-1 = not yet) */
    double elapsed_s;   /* seconds spent on this task */
    double roof_gflops; /* the task's roofline for the session's threads (0 = unknown) */
    int roof_bound;     /* 0 = compute-bound, else the memory level (kernels/targets/machine.h RoofLevel) */
    int group;          /* its group of alternatives (tuner/task.h: 0 alone, else 1 + the first member's id) */
    bool effective;     /* its GFLOPS (and roof) are effective GFLOPS (Template_effective: Winograd) */
} TaskRow;

typedef struct SessionSnapshot {
    double elapsed_s;
    int trials;   /* total measured this session + restored */
    int restored; /* of those, restored from the log when the session started */
    int budget;
    double trials_per_s;   /* this session's rate */
    double est_latency_s;  /* sum of weight * best latency over the tasks with a result; +inf while a task
                              that can still get one has none */
    int est_left_out;      /* tasks left out of the estimate: paused, stopped or done without a result */
    bool all_paused;       /* every task is paused (P), apart from their own pauses */
    double roof_latency_s; /* lower bound: sum of weight * latency at the roof (0 = some task has no roof) */
    int next_task;         /* scheduler's next pick, -1 if none */
    int building;          /* candidates being compiled now (with a backend: servers building) */
    int measuring;         /* 1 while the runner times a kernel (with a backend: servers timing) */
    bool finished;
    bool stopped; /* a stop was requested before the session finished on its own */
    int n_tasks;
    TaskRow *rows; /* n_tasks rows; owned by the snapshot */
} SessionSnapshot;

void SessionSnapshot_done(SessionSnapshot *this);

typedef struct Engine Engine;

/* Takes ownership of tasks (an array of n Task, malloc'd, each initialised). */
Engine *Engine_new(const EngineConfig *cfg, Task *tasks, int n, char *err);
/* Opens and locks the log (resuming from it: records, then the steering the
 * user left: pauses, priorities, stops), appends the session object (the task
 * list, records/session.h), starts the threads. On TT_ERR nothing was written
 * to an existing log. `resumed` (may be NULL) receives a one-line summary of
 * what was restored ("" for a fresh log). */
Status Engine_start(Engine *this, char *resumed, size_t resumed_len, char *err);

int Engine_taskCount(const Engine *this);
const Task *Engine_task(const Engine *this, int id);
const EngineConfig *Engine_config(const Engine *this);

/* Steering: thread-safe, applied before the engine's next decision. A task's
 * pause, priority and stop are written to the log (a steer object) and
 * restored by a resumed session. Engine_pauseAll pauses every task on top of
 * their own pauses: resuming all leaves the tasks paused one by one paused
 * (and is not kept across a restart). */
/* Each returns false, queueing nothing, when the engine has not yet applied
 * the steering queue's ENGINE_MAX_COMMANDS earlier commands (the caller says
 * so: the change was not made). */
#define ENGINE_MAX_COMMANDS 256
bool Engine_pause(Engine *this, int task_id, bool paused);
bool Engine_pauseAll(Engine *this, bool paused);
bool Engine_setPriority(Engine *this, int task_id, int priority); /* clamped to -3..+3 */
bool Engine_stopTask(Engine *this, int task_id);
void Engine_requestStop(Engine *this);

int Engine_eventFd(const Engine *this);
/* Moves up to max queued events into out; returns the count. */
int Engine_drainEvents(Engine *this, EngineEvent *out, int max);
/* Events dropped because the queue was full (observers resync with snapshots). */
uint64_t Engine_droppedEvents(const Engine *this);

void Engine_snapshot(Engine *this, SessionSnapshot *out);
/* The devices that build and measure (the backend's, or this process's own
 * as rank 0); up to max rows, returns the count. Any thread. */
int Engine_devices(Engine *this, DeviceRow *out, int max);
/* The trials restored from the log when the session started (file order,
 * tuner/resume.h), for an observer that shows the whole history: the first
 * call hands them over (*out, free with ResumeTrials_free) and returns how
 * many; later calls return 0. They precede every EV_RESULT of the session. */
int Engine_takeRestored(Engine *this, ResumeTrial **out);
bool Engine_finished(Engine *this);
/* A stop asked for more than ENGINE_STOP_GRACE_S ago has not finished yet:
 * the UI and the headless loop stop waiting for it (Engine_wait then
 * abandons what is in flight). */
#define ENGINE_STOP_GRACE_S 3.5
bool Engine_stopOverdue(Engine *this);
/* Engine_wait gave up on the engine thread after a stop: a build or a
 * measurement was still running. The log was synced; Engine_delete frees
 * nothing (the caller ends the process). */
bool Engine_abandoned(const Engine *this);
/* A build or measurement failed for a reason outside the candidate (no space
 * or a file limit in the temp folder, the worker killed from outside, out of
 * memory in the harness) and again when measured once more: the session
 * stopped, and that candidate was not recorded. out receives the failure. */
bool Engine_machineFault(Engine *this, char *out, size_t cap);

/* How the record log came through the session. A record is published (an
 * EV_RESULT, a trial, maybe a best) only after its write succeeded; when a
 * write or an fsync fails, or the log's path stops naming the file the
 * session writes (deleted, renamed, replaced), the log has failed: nothing
 * more is written (a failed fsync is never retried), the session stops, and
 * for a deleted or replaced file the records are copied to `recovery`. */
typedef struct LogOutcome {
    bool failed;
    bool moved;            /* the path no longer named the file */
    long records;          /* complete records in the log file (after Engine_wait) */
    long unsynced;         /* of those, written after the last successful fsync (after Engine_wait) */
    int lost;              /* measured results that could not be written */
    char error[TT_ERRLEN]; /* the first failure */
    char recovery[1024];   /* where the records were copied, "" if not */
    char recovery_error[TT_ERRLEN];
} LogOutcome;
void Engine_logOutcome(Engine *this, LogOutcome *out);
/* Waits for the threads to end (after finishing or a stop); syncs and closes the log. */
void Engine_wait(Engine *this); /* after a stop, waits at most ENGINE_STOP_GRACE_S in all */
void Engine_delete(Engine *this);

#endif
