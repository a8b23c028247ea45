/* ui/state.c: see state.h (the inspector's detail page is in inspector.c). */
#include "ui/state.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void UiState_init(UiState *this) {
    memset(this, 0, sizeof *this);
    UiModel_init(&this->model);
    this->view.curves = true;
    this->insp.mark_line = -1;
    this->insp.task = -1;
}

void UiState_done(UiState *this) {
    Inspector_freeDetail(&this->insp);
    UiModel_done(&this->model);
    free(this->order);
    this->order = NULL;
}

const char *SortKey_name(SortKey k) {
    switch (k) {
    case SORT_ID:
        return "ID";
    case SORT_SHARE:
        return "latency share (weight x best)";
    case SORT_TRIALS:
        return "trials";
    case SORT_BEST:
        return "best GFLOPS";
    case SORT_ERRORS:
        return "errors";
    default:
        return "?";
    }
}

static double sort_value(const UiTask *t, SortKey k) {
    switch (k) {
    case SORT_SHARE:
        return isfinite(t->row.best_latency_s) ? t->weight * t->row.best_latency_s : 1e300;
    case SORT_TRIALS:
        return t->row.trials;
    case SORT_BEST:
        return t->row.best_gflops;
    case SORT_ERRORS:
        return t->row.errors;
    default:
        return t->id;
    }
}

void UiState_sort(UiState *this) {
    int n = this->model.n_tasks;
    if (n != this->n_order) {
        free(this->order);
        this->order = malloc((size_t)(n ? n : 1) * sizeof *this->order);
        if (!this->order) abort();
        this->n_order = n;
    }
    for (int i = 0; i < n; i++)
        this->order[i] = i;
    /* insertion sort: stable, and task counts are small */
    for (int i = 1; i < n; i++) {
        int v = this->order[i], j = i;
        const UiTask *tv = &this->model.tasks[v];
        while (j > 0) {
            const UiTask *tp = &this->model.tasks[this->order[j - 1]];
            double a = sort_value(tp, this->sort), b = sort_value(tv, this->sort);
            bool before = this->sort_desc ? b > a : b < a;
            if (!before) break;
            this->order[j] = this->order[j - 1];
            j--;
        }
        this->order[j] = v;
    }
}

int UiState_selectedPos(const UiState *this) {
    for (int i = 0; i < this->n_order; i++)
        if (this->order[i] == this->selected) return i;
    return 0;
}

void UiState_setStatus(UiState *this, CellAttr attr, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(this->status, sizeof this->status, fmt, ap);
    va_end(ap);
    this->status_attr = attr;
}

const char *UiState_taskStateText(const UiTask *t) {
    if (t->from_log) return "logged";
    if (t->want_stop && t->row.state != TASK_STOPPED && t->row.state != TASK_DONE) return "stopping";
    if (t->want_paused == 1 && t->row.state != TASK_PAUSED) return "pausing";
    if (t->want_paused == 0 && t->row.state == TASK_PAUSED) return "resuming";
    switch (t->row.state) {
    case TASK_QUEUED:
        return "queued";
    case TASK_TUNING:
        return "tuning";
    case TASK_WAITING:
        return "waiting";
    case TASK_PAUSED:
        return "paused";
    case TASK_DONE:
        return "done";
    case TASK_STOPPED:
        return "stopped";
    case TASK_AT_ROOF:
        return "at roof";
    }
    return "?";
}
