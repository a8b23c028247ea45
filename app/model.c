/* app/model.c: see model.h. */
#include "app/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/device.h"
#include "tuner/net/model_load.h"
#include "tuner/plan.h"

Status AppModelTasks_load(AppModelTasks *this, const TaskSelect *sel, char *err) {
    memset(this, 0, sizeof *this);
    const Target *target;
    if (app_resolve_device("cpu", NULL, true, &target, &this->dev, err) != TT_OK) return TT_ERR;
    NetworkTask *nt = NULL;
    int n_nt = 0;
    if (Model_extract(sel->model, sel->input_shapes, sel->n_input_shapes, sel->nopt.op_mask, &nt, &n_nt, &this->untuned,
                      &this->n_untuned, err) != TT_OK)
        return TT_ERR;
    for (int i = 0; i < this->n_untuned; i++)
        this->untuned_ops += this->untuned[i].count;
    Status st = TT_OK;
    if (n_nt == 0)
        st = tt_fail(err,
                     "%s has no tunable task (no Conv, Gemm or MatMul a template fits%s; see tunetop tasks --model)",
                     sel->model, sel->ops ? " among --ops" : "");
    Workload *wls = calloc((size_t)n_nt + 1, sizeof *wls);
    double *weights = calloc((size_t)n_nt + 1, sizeof *weights);
    if (!wls || !weights) abort();
    for (int i = 0; i < n_nt; i++)
        wls[i] = nt[i].wl, weights[i] = nt[i].weight;
    PlanRequest req = {.wls = wls, .weights = weights, .n_wl = n_nt, .family = target->family, .dev = &this->dev};
    if (st == TT_OK) st = Plan_tasks(&req, &this->tasks, &this->n_tasks, err);
    this->n_workloads = n_nt;
    free(wls);
    free(weights);
    free(nt);
    if (st != TT_OK) AppModelTasks_done(this);
    return st;
}

void AppModelTasks_done(AppModelTasks *this) {
    for (int i = 0; i < this->n_tasks; i++)
        Task_done(&this->tasks[i]);
    free(this->tasks);
    free(this->untuned);
    memset(this, 0, sizeof *this);
}

void AppModelTasks_session(const AppModelTasks *this, const char *model, LogSession *out) {
    LogSession_init(out);
    snprintf(out->network, sizeof out->network, "%s", model);
    for (int i = 0; i < this->n_tasks; i++)
        LogSession_addTask(out, this->tasks[i].key, this->tasks[i].tmpl->name, this->tasks[i].weight, model);
}
