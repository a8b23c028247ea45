/* tuner/plan.c: see plan.h. */
#include "tuner/plan.h"

#include <stdio.h>
#include <stdlib.h>

int Plan_alternatives(const Workload *wl, TargetFamily family, const Template **out, int cap) {
    if (wl->op == OP_EXPR) return 0; /* an expression's search picks its schedule; no alternatives */
    int n = Template_alternatives(wl, family, out, cap);
    return n > cap ? cap : n;
}

/* The template workload w is tuned with when the request says which; NULL: the family's default. */
static const Template *chosen_for(const PlanRequest *r, const Workload *w) {
    if (r->only && r->only->op == w->op && (!r->only->applies || r->only->applies(w))) return r->only;
    if (r->expr && w->op == OP_EXPR) return r->expr;
    return NULL;
}

/* Appends the tasks of workload i at tasks[*n]: its first template, then its alternatives. */
static Status add_workload(const PlanRequest *r, int i, Task *tasks, int *n, char *err) {
    const Workload *w = &r->wls[i];
    double weight = r->weights ? r->weights[i] : 1;
    const Template *with = chosen_for(r, w);
    const Template *alts[PLAN_MAX_ALTERNATIVES];
    int n_alt = r->only ? 0 : Plan_alternatives(w, r->family, alts, PLAN_MAX_ALTERNATIVES);
    int first = *n;
    Status st = with ? Task_initWith(&tasks[*n], *n, w, weight, with, r->dev, err)
                     : Task_init(&tasks[*n], *n, w, weight, r->family, r->dev, err);
    if (st != TT_OK) {
        char why[TT_ERRLEN];
        snprintf(why, sizeof why, "%s", err);
        return tt_fail(err, "task %d: %s", first, why);
    }
    (*n)++;
    for (int a = 1; a < n_alt; a++) {
        char why[TT_ERRLEN];
        if (Task_initWith(&tasks[*n], *n, w, weight, alts[a], r->dev, why) != TT_OK) {
            Task_done(&tasks[*n]); /* an empty space for this workload: not a task */
            continue;
        }
        tasks[first].group = tasks[*n].group = first + 1;
        (*n)++;
    }
    return TT_OK;
}

Status Plan_tasks(const PlanRequest *r, Task **tasks, int *n_tasks, char *err) {
    int cap = 0;
    for (int i = 0; i < r->n_wl; i++) {
        const Template *alts[PLAN_MAX_ALTERNATIVES];
        int n_alt = r->only ? 0 : Plan_alternatives(&r->wls[i], r->family, alts, PLAN_MAX_ALTERNATIVES);
        cap += n_alt > 1 ? n_alt : 1;
    }
    *tasks = calloc((size_t)cap + 1, sizeof **tasks);
    if (!*tasks) abort();
    *n_tasks = 0;
    for (int i = 0; i < r->n_wl; i++) {
        if (add_workload(r, i, *tasks, n_tasks, err) == TT_OK) continue;
        for (int j = 0; j < *n_tasks; j++)
            Task_done(&(*tasks)[j]);
        free(*tasks);
        *tasks = NULL;
        *n_tasks = 0;
        return TT_ERR;
    }
    return TT_OK;
}
