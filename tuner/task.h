/* tuner/task.h: one tuning task = a workload, the template chosen for it on
 * the session's target family, and that template's configuration space.
 * The immutable part of a task (everything in this struct) may be read by
 * any thread once the engine has started; the engine keeps the mutable
 * tuning state elsewhere. */
#ifndef TT_TUNER_TASK_H
#define TT_TUNER_TASK_H

#include "base/status.h"
#include "kernels/targets/machine.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "space/space.h"

typedef struct Task {
    int id;
    Workload wl;
    char key[WORKLOAD_KEY_LEN];
    const Template *tmpl;
    Space space;
    double flops;
    double weight;  /* occurrences in the network (1 for a --task) */
    char label[64]; /* short display name, e.g. "conv2d 14x14 256->256 3x3" ("... 3x3 wino" for an
                       effective-GFLOPS template, Template_effective) */
    /* Groups of alternatives: the same workload under several templates
     * (Template_alternatives), tuned side by side; the network runs the
     * faster. group: 0 alone, else 1 + the id of the group's first task, the
     * same for every member; a group counts once in the latency estimate, with
     * the lowest best of its members. */
    int group;
} Task;

/* Fills a task for a workload: finds the template for the family, defines the
 * space. TT_ERR names what is wrong (no template, degenerate extent, space too large). */
Status Task_init(Task *this, int id, const Workload *wl, double weight, TargetFamily family, const DeviceInfo *dev,
                 char *err);
/* The same with a given template (one of Template_all whose applies() holds),
 * e.g. the Winograd conv2d template, which Template_find does not pick. */
Status Task_initWith(Task *this, int id, const Workload *wl, double weight, const Template *tmpl, const DeviceInfo *dev,
                     char *err);
void Task_done(Task *this);
/* The task's roofline in its GFLOPS: Roof_forArithmetic with its template's
 * own arithmetic (Template.min_flops) when it has one, else Roof_forWorkload. */
Roof Task_roof(const Task *this, const MachineFigures *m, int threads);

#endif
