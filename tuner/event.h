/* tuner/event.h: what the engine tells its observers, as plain values.
 *
 * The engine (tuner/engine.h) publishes an EngineEvent for each recorded
 * result, state change, status line and round; the bounded queue that carries
 * them is tuner/eventq.h. This header depends on neither, so the queue and
 * the engine each include it and not each other.
 *
 * Ownership: an EV_RESULT event owns its heap Record; whoever drains the
 * event calls EngineEvent_done. */
#ifndef TT_TUNER_EVENT_H
#define TT_TUNER_EVENT_H

#include <stdbool.h>

#include "records/record.h"

typedef enum {
    TASK_QUEUED = 0, /* not started yet */
    TASK_TUNING,     /* being measured now */
    TASK_WAITING,    /* started, waiting for its next round */
    TASK_PAUSED,
    TASK_DONE,    /* space exhausted, early-stopped, or budget spent */
    TASK_STOPPED, /* stopped by the user */
    TASK_AT_ROOF  /* its best reached the roof-stop share of its roof: no more rounds unless its priority is raised */
} TaskState;

const char *TaskState_name(TaskState s); /* "queued", "tuning", "waiting", "paused", "done", "stopped", "at roof" */

typedef enum {
    EV_RESULT = 0, /* a measurement was recorded: `record` (owned by the event) */
    EV_TASK_STATE, /* a task changed state / priority */
    EV_LOG,        /* a line for the status bar or the headless log */
    EV_ROUND,      /* a scheduler round ended: est_latency_s, trials */
    EV_STRATEGY,   /* strategy status line for task_id in text */
    EV_FINISHED    /* the session ended (budget, all done, or stop) */
} EventKind;

typedef enum { LOG_INFO = 0, LOG_WARN, LOG_ERROR } LogLevel;

typedef struct EngineEvent {
    EventKind kind;
    int task_id;
    double time_s; /* engine seconds since start */
    /* EV_RESULT */
    Record *record; /* heap; the consumer owns it after drain (EngineEvent_done frees) */
    int trial;      /* this task's trial number of the result (1-based) */
    double gflops;  /* 0 for errors */
    bool best;      /* the result is the task's new best */
    /* EV_TASK_STATE */
    TaskState state;
    int priority;
    /* EV_ROUND */
    double est_latency_s;
    int trials;
    /* EV_LOG, EV_STRATEGY */
    LogLevel level;
    char text[256];
} EngineEvent;

void EngineEvent_done(EngineEvent *this);

/* The session's estimated total latency, sum(weight x best latency) over the
 * tasks with a result, in one place for the engine's snapshots and the log
 * viewer. A task without a result is left out (and counted) when it cannot
 * get one now (paused, stopped, done, or read from a log); any other task
 * without one makes the estimate +inf, as does a session whose every task is
 * left out. Add every task, then read the value. */
typedef struct LatencyEstimate {
    double sum;
    int tasks, left_out;
    bool open_without; /* a task that can still get a result has none */
} LatencyEstimate;

void LatencyEstimate_init(LatencyEstimate *this);
/* best_latency_s: +inf (or <= 0) when the task has no result; closed: it cannot get one now. */
void LatencyEstimate_add(LatencyEstimate *this, double weight, double best_latency_s, bool closed);
/* The estimate (+inf as above); *left_out (may be NULL) receives the tasks left out. */
double LatencyEstimate_value(const LatencyEstimate *this, int *left_out);

#endif
