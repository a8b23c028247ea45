/* tuner/task.c: building a Task from a workload. */
#include "tuner/task.h"

#include <stdio.h>
#include <string.h>

static void make_label(const Workload *wl, char *buf, size_t n) {
    switch (wl->op) {
    case OP_CONV2D:
    case OP_DEPTHWISE_CONV2D:
        snprintf(buf, n, "%s %lldx%lld %lld->%lld %lldx%lld%s", wl->op == OP_CONV2D ? "conv2d" : "dwconv",
                 (long long)wl->h, (long long)wl->w, (long long)wl->ci, (long long)wl->co, (long long)wl->kh,
                 (long long)wl->kw, wl->stride_h > 1 ? " s2" : "");
        if (wl->stride_h > 2) snprintf(buf + strlen(buf) - 3, n - strlen(buf) + 3, " s%lld", (long long)wl->stride_h);
        break;
    case OP_DENSE:
        snprintf(buf, n, "dense %lldx%lld->%lld", (long long)wl->m, (long long)wl->k, (long long)wl->n);
        break;
    case OP_BATCH_MATMUL:
        snprintf(buf, n, "bmm %lldx%lldx%lldx%lld", (long long)wl->b, (long long)wl->m, (long long)wl->n,
                 (long long)wl->k);
        break;
    case OP_EXPR:
        snprintf(buf, n, "expr %s", wl->expr_name);
        break;
    default:
        snprintf(buf, n, "%s", Op_name(wl->op));
    }
}

/* What a task is whatever its template: id, workload, weight, key, FLOPs, label. */
static void task_basics(Task *this, int id, const Workload *wl, double weight) {
    memset(this, 0, sizeof *this);
    this->id = id;
    this->wl = *wl;
    this->weight = weight;
    Workload_key(wl, this->key, sizeof this->key);
    this->flops = Workload_flops(wl);
    make_label(wl, this->label, sizeof this->label);
}

Status Task_init(Task *this, int id, const Workload *wl, double weight, TargetFamily family, const DeviceInfo *dev,
                 char *err) {
    const Template *tmpl = Template_find(wl, family, err);
    if (tmpl) return Task_initWith(this, id, wl, weight, tmpl, dev, err);
    task_basics(this, id, wl, weight); /* named in the caller's message */
    Space_init(&this->space);
    return TT_ERR;
}

Status Task_initWith(Task *this, int id, const Workload *wl, double weight, const Template *tmpl, const DeviceInfo *dev,
                     char *err) {
    task_basics(this, id, wl, weight);
    if (Template_effective(tmpl)) {
        size_t len = strlen(this->label);
        snprintf(this->label + len, sizeof this->label - len, " wino");
    }
    this->tmpl = tmpl;
    Space_init(&this->space);
    if (tmpl->op != wl->op || (tmpl->applies && !tmpl->applies(wl)))
        return tt_fail(err, "%s: template %s does not apply", this->key, tmpl->name);
    char why[TT_ERRLEN];
    if (this->tmpl->define_space(wl, dev, &this->space, why) != TT_OK) {
        Space_done(&this->space);
        return tt_fail(err, "%s: %s", this->key, why);
    }
    return TT_OK;
}

void Task_done(Task *this) { Space_done(&this->space); }

Roof Task_roof(const Task *this, const MachineFigures *m, int threads) {
    double exec = this->tmpl && this->tmpl->min_flops ? this->tmpl->min_flops(&this->wl) : 0;
    return Roof_forArithmetic(m, threads, &this->wl, exec);
}
