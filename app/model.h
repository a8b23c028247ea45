/* app/model.h: the tasks of --model as every command numbers them, for the
 * commands that look a model up in a log (`best --model`, `view --model`).
 *
 * The workloads are Model_extract's (`tasks --model` and `tune --model` read
 * the same), the tasks Plan_tasks's on the cpu target (`tune --model` makes
 * them the same way): a workload several templates handle is a group of
 * alternatives, one task and ID each. */
#ifndef TT_APP_MODEL_H
#define TT_APP_MODEL_H

#include "app/cli.h"
#include "base/status.h"
#include "records/session.h"
#include "tuner/task.h"

typedef struct AppModelTasks {
    Task *tasks; /* ID order; owned */
    int n_tasks;
    int n_workloads;
    NetworkUntuned *untuned; /* op type and count; owned */
    int n_untuned;
    int untuned_ops; /* the sum of the counts */
    DeviceInfo dev;  /* the cpu's, which shaped the spaces */
} AppModelTasks;

/* The tasks of sel->model (with sel's --input-shape and --ops). TT_ERR with
 * one sentence: the model cannot be read, or it has no tunable task. */
Status AppModelTasks_load(AppModelTasks *this, const TaskSelect *sel, char *err);
void AppModelTasks_done(AppModelTasks *this);
/* The task list as a log's session object lists one (key, template, weight;
 * network: the model's path), for what orders a log's tasks by it. */
void AppModelTasks_session(const AppModelTasks *this, const char *model, LogSession *out);

#endif
