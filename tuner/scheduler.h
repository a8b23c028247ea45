/* tuner/scheduler.h: the task scheduler decides which task gets the next
 * round of measurements. Strategies: "gradient" (spend rounds where
 * the estimated total latency falls most) and "round-robin". Called from the engine thread only.
 *
 * The engine calls TaskScheduler_next before each round, measures up to
 * `batch` configs of the returned task, then TaskScheduler_update with the
 * task's new best latency. Steering composes: a paused task is never picked;
 * priority p multiplies the task's gradient by 2^p (round-robin: a task with
 * higher priority goes first in each cycle); a done task is never picked.
 *
 * Roof stop (gradient only, TaskScheduler_setRoofStop): a task whose best
 * reaches the fraction F of its roof (roof_s / best >= F, roof_s being the
 * lowest latency its roofline allows) is "at roof" and gets no more rounds:
 * there is little left to gain there. A raised priority (> 0) overrides it,
 * so the user can still push such a task on.
 */
#ifndef TT_TUNER_SCHEDULER_H
#define TT_TUNER_SCHEDULER_H

#include <stdbool.h>

#include "base/status.h"

typedef struct SchedTaskState {
    double weight;
    double flops;
    int op; /* OpKind, for similarity groups */
    bool paused;
    bool done;     /* exhausted, early-stopped, or stopped by the user */
    int priority;  /* -3..+3, 0 = normal */
    double roof_s; /* lowest latency the task's roofline allows (0 = unknown) */
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

/* Fraction of the roof at which the gradient scheduler stops giving a task
 * rounds (0 = off, the default of a new scheduler). */
void TaskScheduler_setRoofStop(TaskScheduler *this, double fraction);
/* True when task i (whose state is *task) is at its roof by the rule above
 * (priority not counted), after the rounds recorded so far. */
bool TaskScheduler_atRoof(const TaskScheduler *this, int i, const SchedTaskState *task);

const char *TaskScheduler_names(void);   /* "gradient, round-robin": the table's names */
const char *TaskScheduler_default(void); /* "gradient", the first of the table (NULL to TaskScheduler_new) */

#endif
