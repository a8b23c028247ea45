/* tuner/scheduler.h: the task scheduler decides which task gets the next
 * round of measurements. Strategies: "gradient" (spend rounds where
 * the estimated total latency falls most) and "round-robin". Called from the engine thread only.
 *
 * The engine calls TaskScheduler_next before each round, measures up to
 * `batch` configs of the returned task, then TaskScheduler_update with the
 * task's new best latency. Steering composes: a paused task is never picked;
 * priority p multiplies the task's gradient by 2^p (round-robin: a task with
 * higher priority goes first in each cycle); a done task is never picked.
 */
#ifndef TT_TUNER_SCHEDULER_H
#define TT_TUNER_SCHEDULER_H

#include <stdbool.h>

#include "base/status.h"

typedef struct SchedTaskState {
    double weight;
    double flops;
    int op;           /* OpKind, for similarity groups */
    bool paused;
    bool done;        /* exhausted, early-stopped, or stopped by the user */
    int priority;     /* -3..+3, 0 = normal */
} SchedTaskState;

typedef struct TaskScheduler TaskScheduler;

TaskScheduler *TaskScheduler_new(const char *strategy, int n_tasks, char *err);
void TaskScheduler_delete(TaskScheduler *this);

/* Next task to tune, or -1 when every task is done or paused. */
int TaskScheduler_next(TaskScheduler *this, const SchedTaskState *tasks);
/* After a round on task i: its best latency in seconds (+inf if none yet). */
void TaskScheduler_update(TaskScheduler *this, int task, double best_latency_s);
/* Replays history on resume: task i had `rounds` rounds and reached best. */
void TaskScheduler_restore(TaskScheduler *this, int task, int rounds, double best_latency_s);

const char *TaskScheduler_names(void); /* "gradient, round-robin" */

#endif
