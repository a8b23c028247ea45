/* tuner/plan.h: a tuning request turned into the session's tasks.
 *
 * A command gathers workloads (from --task, a network, --expr files) with
 * their weights; Plan_tasks makes one task per workload and template, in the
 * order every command numbers them: workloads in order, and a workload that
 * several templates handle (conv2d 3x3 stride 1 on the cpu: direct and
 * Winograd) is a group of alternatives, one task each, unless the request
 * names one template. The index of a task in that list is its ID everywhere:
 * `tasks`, the UI, the log's session list, `best`, `run --profile`, `export`.
 *
 * No printing, no exiting: a failure is TT_ERR with one sentence in err. */
#ifndef TT_TUNER_PLAN_H
#define TT_TUNER_PLAN_H

#include "kernels/template.h"
#include "tuner/task.h"

#define PLAN_MAX_ALTERNATIVES 8

typedef struct PlanRequest {
    const Workload *wls; /* n_wl workloads, each one task (or one group); not owned */
    const double *weights;
    int n_wl;
    TargetFamily family;
    const DeviceInfo *dev;
    const Template *only; /* --template: the workloads it applies to use only it; NULL: every alternative */
    const Template *expr; /* the template of tensor-expression workloads; NULL: the family's default */
} PlanRequest;

/* The tasks of the request, IDs 0..*n_tasks-1 (*tasks: the caller frees with
 * Task_done on each and free). TT_ERR when a workload has no template or an
 * empty space; err names its index. An alternative whose space is empty for
 * its workload is left out (it is not a task). */
Status Plan_tasks(const PlanRequest *r, Task **tasks, int *n_tasks, char *err);

/* The templates a workload is tuned under by default on the family, the first
 * the one Template_find picks; returns their count (at most cap). */
int Plan_alternatives(const Workload *wl, TargetFamily family, const Template **out, int cap);

#endif
