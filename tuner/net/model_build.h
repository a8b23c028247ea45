/* tuner/net/model_build.h: the C library of a model from a log's best
 * records: what `run --model` compiles and `export --model` writes.
 *
 * For each task of the model it takes the log's best successful record of
 * the task's workload (the template the record names, so a Winograd best
 * builds the Winograd kernel) or, with no such record, the template's
 * zero-trial default config; exports that kernel as tt_kT; and adds the model
 * runtime and NAME.c (mprog.h). The model must be the rewritten one
 * (ModelTasks_rewrite), and the bundle's dialect C. */
#ifndef TT_NET_MODEL_BUILD_H
#define TT_NET_MODEL_BUILD_H

#include <stdbool.h>

#include "base/status.h"
#include "kernels/export/export.h"
#include "kernels/target.h"
#include "records/history.h"
#include "space/space.h"
#include "tuner/net/model_tasks.h"

typedef struct ModelBuildTask {
    const Template *tmpl;
    bool tuned;       /* from a record (false: the default config) */
    double latency_s; /* the record's cost (0: none) */
    char why[64];     /* untuned: "no record", "no record it can rebuild" */
} ModelBuildTask;

/* The kernel run --model and export --model build for a task's workload wl:
 * best is the log's best record of the workload over every template
 * (History_bestOfKey; NULL: the log has none). The template is the one the
 * record names (the workload's default template without a record), and the
 * kernel takes the record's config when the record fits that template's
 * space, else the template's zero-trial default config. Fills space (the
 * caller's, initialised; Space_done after) and rep; *use: the record used, or
 * NULL. TT_ERR when the workload has no template or no space here. */
Status ModelBuild_pick(const Workload *wl, const Record *best, const DeviceInfo *dev, Space *space, ModelBuildTask *rep,
                       const Record **use, char *err);

/* h may be NULL (no log: every task at its default). report: one entry per
 * task (may be NULL). TT_ERR when a task has no template or a kernel cannot
 * be generated. */
Status ModelBuild_bundle(const NetModel *rewritten, const ModelTasks *mt, const History *h, const DeviceInfo *dev,
                         const char *name, ExportBundle *b, ModelBuildTask *report, char *err);

#endif
