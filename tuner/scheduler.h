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
 *
 * Groups of alternatives (SchedTaskState.group): the same workload under
 * several templates (conv2d 3x3 stride 1: direct and Winograd). The objective
 * counts a group once, weight x the lowest best of its members, so a member's
 * round is worth what it can take off the group's best: a member far behind
 * the other gets rounds only while its expected gain could still beat the
 * other's best. The roof stop of a member: the group's best reaches F of the
 * member's own roof (roof_s / group best >= F), i.e. the member cannot improve
 * the group by more than 1/F even at its roof. Each member's roof is computed
 * from its own arithmetic (tuner/task.h Task_roof): a Winograd member's is
 * below the direct one's latency, so the direct member stops when the group's
 * best (either member's) reaches its roof, the Winograd member only when the
 * group reaches the Winograd roof. A group of one is the single-task rule.
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
    int group;     /* tasks with the same nonzero group are alternatives (see above); 0 = alone */
    int tmpl;      /* the template (any number that tells templates apart), for similarity groups */
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
/* True when task i is at its roof by the rule above (priority not counted),
 * after the rounds recorded so far; tasks holds every task's state (a group's
 * best is its members'). */
bool TaskScheduler_atRoof(const TaskScheduler *this, int i, const SchedTaskState *tasks);
/* The best latency of task i's group (its own when alone; NO result: +inf). */
double TaskScheduler_groupBest(const TaskScheduler *this, int i, const SchedTaskState *tasks);

const char *TaskScheduler_names(void);   /* "gradient, round-robin": the table's names */
const char *TaskScheduler_default(void); /* "gradient", the first of the table (NULL to TaskScheduler_new) */

#endif
