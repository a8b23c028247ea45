/* tuner/net/model_build.c: the C library of a model (see model_build.h). */
#include "tuner/net/model_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space.h"
#include "tuner/net/mprog.h"

Status ModelBuild_pick(const Workload *wl, const Record *best, const DeviceInfo *dev, Space *space, ModelBuildTask *rep,
                       const Record **use, char *err) {
    *use = NULL;
    memset(rep, 0, sizeof *rep);
    const Template *tmpl = Template_forRecord(wl, FAMILY_CPU, best ? best->template_name : NULL, err);
    if (!tmpl) return TT_ERR;
    Status st = tmpl->define_space(wl, dev, space, err);
    /* the record's config only where this template can rebuild it */
    if (st == TT_OK && best && strcmp(best->template_name, tmpl->name) == 0 && best->n_choice == space->n_knobs)
        *use = best;
    rep->tmpl = tmpl;
    rep->tuned = *use != NULL;
    rep->latency_s = *use && (*use)->n_costs > 0 ? Record_cost(*use) : 0;
    snprintf(rep->why, sizeof rep->why, "%s", *use ? "" : best ? "no record it can rebuild" : "no record");
    return st;
}

/* Exports task t's kernel as tt_kT into the bundle. */
static Status export_task(const NetworkTask *task, int t, const History *h, const DeviceInfo *dev, ExportBundle *b,
                          ModelBuildTask *rep, char *err) {
    char key[WORKLOAD_KEY_LEN];
    Workload_key(&task->wl, key, sizeof key);
    Space space;
    Space_init(&space);
    int32_t choice[SPACE_MAX_KNOBS];
    const Record *use;
    Status st = ModelBuild_pick(&task->wl, h ? History_bestOfKey(h, key) : NULL, dev, &space, rep, &use, err);
    if (!rep->tmpl) {
        Space_done(&space);
        return TT_ERR;
    }
    if (use)
        memcpy(choice, use->choice, sizeof(int32_t) * (size_t)space.n_knobs);
    else if (st == TT_OK)
        st = Export_defaultChoice(rep->tmpl, &task->wl, &space, dev, choice, err);
    char prefix[EXPORT_PREFIX_LEN];
    snprintf(prefix, sizeof prefix, "tt_k%d", t);
    ExportKernel k;
    memset(&k, 0, sizeof k);
    ExportRequest req = {.wl = &task->wl,
                         .tmpl = rep->tmpl,
                         .space = &space,
                         .choice = choice,
                         .dev = dev,
                         .dialect = DIALECT_C,
                         .prefix = prefix,
                         .meta = {.latency_s = rep->latency_s, .pack_s = -1, .note = use ? NULL : rep->why}};
    if (st == TT_OK) st = Export_kernel(&req, &k, err);
    if (st == TT_OK) st = ExportBundle_add(b, &k, err);
    ExportKernel_done(&k);
    Space_done(&space);
    return st;
}

Status ModelBuild_bundle(const NetModel *rewritten, const ModelTasks *mt, const History *h, const DeviceInfo *dev,
                         const char *name, ExportBundle *b, ModelBuildTask *report, char *err) {
    char(*prefix)[EXPORT_PREFIX_LEN] = calloc((size_t)mt->n_tasks + 1, EXPORT_PREFIX_LEN);
    const char **names = calloc((size_t)mt->n_tasks + 1, sizeof *names);
    ModelBuildTask *rep = report ? report : calloc((size_t)mt->n_tasks + 1, sizeof *rep);
    Status st = prefix && names && rep ? TT_OK : tt_fail(err, "out of memory");
    for (int t = 0; st == TT_OK && t < mt->n_tasks; t++) {
        snprintf(prefix[t], EXPORT_PREFIX_LEN, "tt_k%d", t);
        names[t] = prefix[t];
        st = export_task(&mt->tasks[t], t, h, dev, b, &rep[t], err);
    }
    if (st == TT_OK) st = ModelProg_bundle(b, name, rewritten, mt->n_tasks, names, err);
    free(prefix);
    free(names);
    if (rep != report) free(rep);
    return st;
}
