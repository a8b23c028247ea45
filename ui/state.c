/* ui/state.c: see state.h (the inspector's detail page is in inspector.c). */
#include "ui/state.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void UiState_init(UiState *this) {
    memset(this, 0, sizeof *this);
    UiModel_init(&this->model);
    this->view.curves = true;
    this->insp.mark_line = -1;
    this->insp.task = -1;
}

void UiState_done(UiState *this) {
    Inspector_freeDetail(&this->insp);
    free(this->msgs);
    this->msgs = NULL;
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

/* Case-insensitive substring. */
static bool contains(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return true;
    }
    return n == 0;
}

bool UiState_filterMatches(const UiState *this, int ti) {
    if (!this->filter[0]) return true;
    const UiTask *t = &this->model.tasks[ti];
    char id[16];
    snprintf(id, sizeof id, "%d", t->id);
    return strcmp(id, this->filter) == 0 || contains(t->label, this->filter) || contains(t->key, this->filter);
}

void UiState_sort(UiState *this) {
    int n = this->model.n_tasks;
    free(this->order);
    this->order = malloc((size_t)(n ? n : 1) * sizeof *this->order);
    if (!this->order) abort();
    int k = 0;
    for (int i = 0; i < n; i++)
        if (UiState_filterMatches(this, i)) this->order[k++] = i;
    this->n_order = k;
    /* insertion sort: stable, and task counts are small */
    for (int i = 1; i < k; i++) {
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
    /* the selection stays on a shown task */
    bool shown = false;
    for (int i = 0; i < k; i++)
        if (this->order[i] == this->selected) shown = true;
    if (!shown && k > 0) this->selected = this->order[0];
}

int UiState_taggedCount(const UiState *this) {
    int n = 0;
    for (int i = 0; i < this->model.n_tasks; i++)
        n += this->model.tasks[i].tagged;
    return n;
}

int UiState_targets(const UiState *this, int *out) {
    int n = 0;
    for (int i = 0; i < this->model.n_tasks; i++)
        if (this->model.tasks[i].tagged) out[n++] = i;
    if (n == 0 && this->selected >= 0 && this->selected < this->model.n_tasks) out[n++] = this->selected;
    return n;
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
    if (!this->status[0]) return;
    if (this->n_msgs == UI_MESSAGES_MAX) {
        /* the oldest goes */
        memmove(this->msgs, this->msgs + 1, (size_t)(UI_MESSAGES_MAX - 1) * sizeof *this->msgs);
        this->n_msgs--;
    }
    if (this->n_msgs == this->cap_msgs) {
        this->cap_msgs = this->cap_msgs ? this->cap_msgs * 2 : 64;
        this->msgs = realloc(this->msgs, (size_t)this->cap_msgs * sizeof *this->msgs);
        if (!this->msgs) abort();
    }
    UiMessage *m = &this->msgs[this->n_msgs++];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->wall = ts.tv_sec + ts.tv_nsec * 1e-9;
    this->status_wall = m->wall;
    this->status_task = this->selected;
    m->attr = attr;
    snprintf(m->text, sizeof m->text, "%s", this->status);
}

bool UiState_expireStatus(UiState *this, double wall_now) {
    if (!this->status[0] || this->confirm != CONFIRM_NONE || this->stopping) return false;
    if (wall_now - this->status_wall < UI_STATUS_TTL_S && this->selected == this->status_task) return false;
    this->status[0] = '\0';
    return true;
}

const char *UiState_taskStateText(const UiTask *t) {
    if (t->from_log)
        return t->row.state == TASK_STOPPED ? "stopped" : t->row.state == TASK_PAUSED ? "paused" : "logged";
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
