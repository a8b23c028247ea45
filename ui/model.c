/* ui/model.c: see model.h. */
#include "ui/model.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

/* Grows a dynamic array to hold at least need elements. */
static void *grow(void *p, int *cap, int need, size_t elem) {
    if (need <= *cap) return p;
    int c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(p, (size_t)c * elem);
    if (!q) abort();
    *cap = c;
    return q;
}

void UiModel_init(UiModel *this) {
    memset(this, 0, sizeof *this);
    this->est_latency_s = INFINITY;
    this->first_est_s = INFINITY;
    this->next_task = -1;
    this->first_ts = 0;
    this->want_all_paused = -1;
}

static void UiTask_done(UiTask *t) {
    Record_done(&t->best);
    free(t->points);
    for (int i = 0; i < t->n_fails; i++)
        Record_done(&t->fails[i]);
    free(t->fails);
    for (int i = 0; i < t->n_groups; i++)
        free(t->groups[i].members);
    free(t->groups);
}

void UiModel_done(UiModel *this) {
    for (int i = 0; i < this->n_tasks; i++)
        UiTask_done(&this->tasks[i]);
    free(this->tasks);
    free(this->latency);
    memset(this, 0, sizeof *this);
}

int UiModel_addTask(UiModel *this, int id, const char *key, const char *label, double flops, double weight,
                    const Task *task) {
    UiTask *n = realloc(this->tasks, (size_t)(this->n_tasks + 1) * sizeof *n);
    if (!n) abort();
    this->tasks = n;
    UiTask *t = &this->tasks[this->n_tasks];
    memset(t, 0, sizeof *t);
    t->id = id;
    snprintf(t->key, sizeof t->key, "%s", key ? key : "");
    snprintf(t->label, sizeof t->label, "%s", label && label[0] ? label : (key ? key : "?"));
    /* a tensor expression's key is long: its file name says it ("expr softmax") */
    if (key && strncmp(key, "expr:name=", 10) == 0 && (!label || !label[0] || strcmp(label, key) == 0))
        snprintf(t->label, sizeof t->label, "expr %.*s", (int)strcspn(key + 10, ","), key + 10);
    t->flops = flops;
    t->weight = weight;
    t->task = task;
    t->want_paused = -1;
    t->want_priority = UI_NO_REQUEST;
    t->row.id = id;
    t->row.state = TASK_QUEUED;
    t->row.best_latency_s = INFINITY;
    t->row.started = -1;
    return this->n_tasks++;
}

int UiModel_findId(const UiModel *this, int id) {
    for (int i = 0; i < this->n_tasks; i++)
        if (this->tasks[i].id == id) return i;
    return -1;
}

int UiModel_findKey(const UiModel *this, const char *key) { return UiModel_findTask(this, key, NULL); }

int UiModel_findTask(const UiModel *this, const char *key, const char *template_name) {
    for (int i = 0; i < this->n_tasks; i++)
        if (Record_sameTask(this->tasks[i].key, this->tasks[i].template_name, key, template_name)) return i;
    return -1;
}

static bool is_loc_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '/' || c == '-'; }

void Ui_errorReason(const char *msg, char *out, size_t n) {
    if (n == 0) return;
    out[0] = '\0';
    if (!msg || !msg[0]) {
        snprintf(out, n, "(no message)");
        return;
    }
    /* pick the line: the first mentioning "error", else the first non-blank */
    const char *line = NULL, *first = NULL;
    for (const char *p = msg; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        bool blank = true;
        for (size_t i = 0; i < len; i++)
            if (!isspace((unsigned char)p[i])) blank = false;
        if (!blank) {
            if (!first) first = p;
            char tmp[512];
            size_t k = len < sizeof tmp - 1 ? len : sizeof tmp - 1;
            memcpy(tmp, p, k);
            tmp[k] = '\0';
            if (!line && strstr(tmp, "error")) line = p;
        }
        if (!e) break;
        p = e + 1;
    }
    if (!line) line = first ? first : msg;
    size_t len = strcspn(line, "\n");
    /* strip "file:34:5:" or "file(34):" locations */
    const char *s = line, *end = line + len;
    const char *q = s;
    while (q < end && is_loc_char(*q))
        q++;
    if (q < end && (*q == ':' || *q == '(') && q > s) {
        const char *r = q + 1;
        if (isdigit((unsigned char)*r)) {
            while (r < end && (isdigit((unsigned char)*r) || *r == ':' || *r == ')'))
                r++;
            if (r < end && (r[-1] == ':' || r[-1] == ')' || *r == ':')) {
                if (*r == ':') r++;
                s = r;
            }
        }
    } else if (*s == '(') {
        const char *r = s + 1;
        while (r < end && isdigit((unsigned char)*r))
            r++;
        if (r < end && *r == ')' && r > s + 1) {
            s = r + 1;
            if (s < end && *s == ':') s++;
        }
    }
    while (s < end && isspace((unsigned char)*s))
        s++;
    if ((size_t)(end - s) >= 6 && strncmp(s, "error:", 6) == 0)
        s += 6;
    else if ((size_t)(end - s) >= 12 && strncmp(s, "fatal error:", 12) == 0)
        s += 12;
    while (s < end && isspace((unsigned char)*s))
        s++;
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    size_t k = (size_t)(end - s);
    if (k >= n) k = n - 1;
    memcpy(out, s, k);
    out[k] = '\0';
    if (!out[0]) snprintf(out, n, "(no message)");
}

int Ui_failingLine(const char *msg) {
    if (!msg) return 0;
    for (const char *p = msg; *p; p++) {
        /* "name.ext:LINE:COL: error" or "name.ext:LINE: error" */
        if (*p == ':' && p > msg && isdigit((unsigned char)p[1])) {
            const char *b = p;
            while (b > msg && is_loc_char(b[-1]))
                b--;
            if (b == p || !memchr(b, '.', (size_t)(p - b))) continue;
            char *e;
            long line = strtol(p + 1, &e, 10);
            if (*e == ':' && isdigit((unsigned char)e[1])) strtol(e + 1, &e, 10);
            if (*e != ':') continue;
            while (e[1] == ' ')
                e++;
            if (strncmp(e + 1, "error", 5) == 0 || strncmp(e + 1, "fatal error", 11) == 0)
                return line > 0 && line < 1000000 ? (int)line : 0;
        }
        /* "(LINE): error" as NVRTC and some OpenCL compilers write it */
        if (*p == '(' && isdigit((unsigned char)p[1])) {
            char *e;
            long line = strtol(p + 1, &e, 10);
            if (*e == ')' && e[1] == ':') {
                const char *r = e + 2;
                while (*r == ' ')
                    r++;
                if (strncmp(r, "error", 5) == 0) return line > 0 && line < 1000000 ? (int)line : 0;
            }
        }
    }
    return 0;
}

/* "4x8" is two numbers (a tile or a shape), "sm_80" or "k12" none. */
static bool dims_x(const char *x, const char *start) {
    return *x == 'x' && x > start && isdigit((unsigned char)x[-1]) && isdigit((unsigned char)x[1]);
}

static bool starts_number(const char *s, const char *start) {
    if (!isdigit((unsigned char)*s)) return false;
    if (s > start && dims_x(s - 1, start)) return true;
    if (s > start && (isalnum((unsigned char)s[-1]) || s[-1] == '_' || s[-1] == '.')) return false;
    return true;
}

/* The end of the number at s, or s when the digits run into a name ("12abc"). */
static const char *number_end(const char *s) {
    const char *e = s;
    while (isdigit((unsigned char)*e))
        e++;
    if (*e == '.' && isdigit((unsigned char)e[1])) {
        e++;
        while (isdigit((unsigned char)*e))
            e++;
    }
    if (*e == 'x' && isdigit((unsigned char)e[1])) return e;
    if (isalpha((unsigned char)*e) || *e == '_') return s;
    return e;
}

int Ui_reasonShape(const char *reason, char *key, size_t n, double *nums, int max) {
    size_t k = 0;
    int count = 0;
    for (const char *p = reason; *p;) {
        const char *e = starts_number(p, reason) ? number_end(p) : p;
        if (e > p) {
            if (count < max) nums[count] = strtod(p, NULL);
            count++;
            if (k + 1 < n) key[k++] = '#';
            p = e;
        } else {
            /* a name with digits in it stays whole */
            if (k + 1 < n) key[k++] = *p;
            p++;
            while (*p && (isalnum((unsigned char)*p) || *p == '_') && (isalnum((unsigned char)p[-1]) || p[-1] == '_') &&
                   !starts_number(p, reason)) {
                if (k + 1 < n) key[k++] = *p;
                p++;
            }
        }
    }
    if (n) key[k < n ? k : n - 1] = '\0';
    return count;
}

static void format_num(double v, char *buf, size_t n) {
    if (v == (double)(long long)v && fabs(v) < 1e15)
        snprintf(buf, n, "%lld", (long long)v);
    else
        snprintf(buf, n, "%g", v);
}

/* Rebuilds the display reason of a group from its key and number ranges. */
static void group_display(UiErrGroup *g) {
    size_t k = 0, n = sizeof g->reason;
    int slot = 0;
    for (const char *p = g->key; *p && k + 1 < n; p++) {
        if (*p != '#') {
            g->reason[k++] = *p;
            continue;
        }
        char num[64] = "?", a[32], b[32];
        if (slot < UI_REASON_SLOTS && slot < g->n_slots) {
            format_num(g->lo[slot], a, sizeof a);
            format_num(g->hi[slot], b, sizeof b);
            if (g->lo[slot] == g->hi[slot])
                snprintf(num, sizeof num, "%s", a);
            else
                snprintf(num, sizeof num, "%s-%s", a, b);
        }
        slot++;
        for (const char *q = num; *q && k + 1 < n; q++)
            g->reason[k++] = *q;
    }
    g->reason[k] = '\0';
}

static void UiTask_addFail(UiTask *t, const Record *rec) {
    t->fails = grow(t->fails, &t->cap_fails, t->n_fails + 1, sizeof *t->fails);
    Record *f = &t->fails[t->n_fails];
    Record_init(f);
    Record_copy(f, rec);
    int fi = t->n_fails++;
    char reason[UI_REASON_LEN], key[UI_REASON_LEN];
    double nums[UI_REASON_SLOTS];
    Ui_errorReason(rec->error_msg, reason, sizeof reason);
    int n_nums = Ui_reasonShape(reason, key, sizeof key, nums, UI_REASON_SLOTS);
    int g = -1;
    for (int i = 0; i < t->n_groups; i++)
        if (t->groups[i].error_no == rec->error_no && strcmp(t->groups[i].key, key) == 0) g = i;
    if (g < 0) {
        t->groups = grow(t->groups, &t->cap_groups, t->n_groups + 1, sizeof *t->groups);
        g = t->n_groups++;
        UiErrGroup *ng = &t->groups[g];
        memset(ng, 0, sizeof *ng);
        ng->error_no = rec->error_no;
        snprintf(ng->key, sizeof ng->key, "%s", key);
        ng->n_slots = n_nums;
        for (int i = 0; i < n_nums && i < UI_REASON_SLOTS; i++)
            ng->lo[i] = ng->hi[i] = nums[i];
    }
    UiErrGroup *gr = &t->groups[g];
    for (int i = 0; i < n_nums && i < UI_REASON_SLOTS; i++) {
        if (nums[i] < gr->lo[i]) gr->lo[i] = nums[i];
        if (nums[i] > gr->hi[i]) gr->hi[i] = nums[i];
    }
    group_display(gr);
    gr->members = grow(gr->members, &gr->cap_members, gr->n_members + 1, sizeof *gr->members);
    gr->members[gr->n_members++] = fi;
    gr->count++;
}

void UiModel_addTrial(UiModel *this, int ti, int trial, double timestamp, double gflops, int error_no,
                      const Record *failure) {
    if (ti < 0 || ti >= this->n_tasks) return;
    UiTask *t = &this->tasks[ti];
    if (trial <= 0) trial = t->n_points ? t->points[t->n_points - 1].trial + 1 : 1;
    t->points = grow(t->points, &t->cap_points, t->n_points + 1, sizeof *t->points);
    if (this->first_ts == 0 && timestamp > 0) this->first_ts = timestamp;
    float at = timestamp > 0 ? (float)(timestamp - this->first_ts) : 0.0f;
    t->points[t->n_points++] = (UiPoint){trial, at, error_no ? 0.0f : (float)gflops, (int8_t)error_no};
    if (error_no && failure) UiTask_addFail(t, failure);
}

bool UiModel_addRecord(UiModel *this, int ti, const Record *rec, int trial, double gflops) {
    if (ti < 0 || ti >= this->n_tasks) return false;
    UiTask *t = &this->tasks[ti];
    UiModel_addTrial(this, ti, trial, rec->timestamp, gflops, rec->error_no, rec);
    trial = t->points[t->n_points - 1].trial;
    bool improved = false;
    if (trial > t->row.trials) t->row.trials = trial;
    if (rec->error_no) {
        t->row.errors++;
    } else if (gflops > 0) {
        t->row.current_gflops = gflops;
        if (gflops > t->row.best_gflops) {
            t->row.best_gflops = gflops;
            t->row.best_latency_s = Record_cost(rec);
            t->row.best_index = rec->index;
            Record_copy(&t->best, rec);
            improved = true;
            /* in a log view, the roof recorded with the best (its machine's) */
            if (rec->roof_gflops > 0) {
                t->row.roof_gflops = rec->roof_gflops;
                t->row.roof_bound = rec->roof_bound;
            }
        }
    }
    return improved;
}

/* Whether some task can run: not every task paused, stopped or done. */
static bool can_run(const UiModel *this) {
    if (this->all_paused) return false;
    for (int i = 0; i < this->n_tasks; i++) {
        TaskState s = this->tasks[i].row.state;
        if (s == TASK_QUEUED || s == TASK_TUNING || s == TASK_WAITING) return true;
    }
    return this->n_tasks == 0;
}

double UiModel_eta(const UiModel *this) {
    if (!this->live || this->finished || this->budget <= this->trials || this->active_s <= 0) return -1;
    double session_trials = this->trials_per_s * this->elapsed_s; /* the rate is of this session's trials */
    if (session_trials <= 0) return -1;
    return (this->budget - this->trials) * this->active_s / session_trials;
}

/* The estimate's coverage: when it comes to cover more (or fewer) tasks, "how it
 * has moved" starts again from there instead of reading the new task as a regression. */
static void cover(UiModel *this, const SessionSnapshot *snap) {
    if (!isfinite(snap->est_latency_s)) return;
    int covers = this->n_tasks - snap->est_left_out;
    if (this->est_covers > 0 && covers != this->est_covers) {
        this->first_est_s = snap->est_latency_s;
        this->est_rebased = true;
    }
    this->est_covers = covers;
}

void UiModel_applySnapshot(UiModel *this, const SessionSnapshot *snap) {
    /* the time the session could run (ETA): the interval just past counts unless it was all paused */
    if (snap->elapsed_s > this->last_elapsed_s && can_run(this))
        this->active_s += snap->elapsed_s - this->last_elapsed_s;
    this->last_elapsed_s = snap->elapsed_s;
    this->elapsed_s = snap->elapsed_s;
    this->trials = snap->trials;
    this->budget = snap->budget;
    this->trials_per_s = snap->trials_per_s;
    this->building = snap->building;
    this->measuring = snap->measuring;
    this->next_task = snap->next_task;
    this->finished = snap->finished;
    this->all_paused = snap->all_paused;
    this->est_left_out = snap->est_left_out;
    if (this->want_all_paused >= 0 && (this->want_all_paused == 1) == snap->all_paused) this->want_all_paused = -1;
    if (!isfinite(snap->est_latency_s)) this->est_latency_s = INFINITY;
    cover(this, snap);
    /* the series takes every estimate the snapshots show too, so the curve
     * and the header's "first estimate" agree */
    if (isfinite(snap->est_latency_s))
        UiModel_addLatency(this, snap->elapsed_s + this->latency_offset, snap->est_latency_s);
    for (int r = 0; r < snap->n_tasks; r++) {
        int ti = UiModel_findId(this, snap->rows[r].id);
        if (ti < 0) continue;
        UiTask *t = &this->tasks[ti];
        t->row = snap->rows[r];
        /* a steering request shows until the engine has applied it */
        if (t->want_stop && (t->row.state == TASK_STOPPED || t->row.state == TASK_DONE)) t->want_stop = false;
        if (t->want_priority != UI_NO_REQUEST) {
            if (t->row.priority == t->want_priority || t->row.state == TASK_DONE || t->row.state == TASK_STOPPED)
                t->want_priority = UI_NO_REQUEST;
            else
                t->row.priority = t->want_priority;
        }
        if (t->want_paused >= 0) {
            bool paused = t->row.state == TASK_PAUSED;
            /* the request is visible once the engine reports it (or the task ended) */
            if (paused == (t->want_paused == 1) || t->row.state == TASK_DONE || t->row.state == TASK_STOPPED)
                t->want_paused = -1;
        }
    }
}

void UiModel_addLatency(UiModel *this, double t, double latency_s) {
    if (!isfinite(latency_s) || latency_s <= 0) return;
    if (!isfinite(this->first_est_s)) this->first_est_s = latency_s;
    this->est_latency_s = latency_s;
    if (this->n_latency > 0) {
        UiSample *last = &this->latency[this->n_latency - 1];
        if (last->value == latency_s && t - last->t < 1.0) return;
        if (t < last->t) t = last->t;
    }
    this->latency = grow(this->latency, &this->cap_latency, this->n_latency + 1, sizeof *this->latency);
    this->latency[this->n_latency++] = (UiSample){t, latency_s};
}

int UiModel_loadLatencyTsv(UiModel *this, const char *path, double session_start) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    double first = -1;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        double wall, session_s, est_ms;
        int trials;
        if (sscanf(line, "%lf %lf %d %lf", &wall, &session_s, &trials, &est_ms) != 4) continue; /* the header */
        if (wall > session_start) break; /* this session's own lines */
        if (first < 0) first = wall;
        if (est_ms > 0) {
            UiModel_addLatency(this, wall - first, est_ms * 1e-3);
            n++;
        }
    }
    fclose(f);
    if (first >= 0) this->latency_offset = session_start - first;
    return n;
}

bool UiTask_effective(const UiTask *this) {
    return this->row.effective || Template_effective(Template_byName(this->template_name)) ||
           (this->best.template_name[0] && Template_effective(Template_byName(this->best.template_name)));
}

/* Tasks i and j are one task or alternatives of one group (tuner/task.h). */
static bool same_group(const UiModel *this, int i, int j) {
    return i == j || (this->tasks[i].row.group != 0 && this->tasks[i].row.group == this->tasks[j].row.group);
}

/* Task i is the first of its group (or alone): the one that counts the group. */
static bool group_first(const UiModel *this, int i) {
    for (int j = 0; j < i; j++)
        if (same_group(this, i, j)) return false;
    return true;
}

bool UiModel_outrun(const UiModel *this, int ti) {
    const UiTask *t = &this->tasks[ti];
    if (!t->row.group || !(t->row.best_gflops > 0)) return false;
    for (int j = 0; j < this->n_tasks; j++)
        if (j != ti && same_group(this, ti, j) && this->tasks[j].row.best_gflops > 0 &&
            this->tasks[j].row.best_latency_s < t->row.best_latency_s)
            return true;
    return false;
}

double UiModel_estimate(const UiModel *this, int *left_out) {
    LatencyEstimate est;
    LatencyEstimate_init(&est);
    for (int i = 0; i < this->n_tasks; i++) {
        if (!group_first(this, i)) continue; /* a group counts once, with its lowest best */
        double best = INFINITY;
        bool closed = true;
        for (int j = i; j < this->n_tasks; j++) {
            const UiTask *t = &this->tasks[j];
            if (!same_group(this, i, j)) continue;
            /* a best without GFLOPS (a TVM workload's unknown FLOPs) is no result here */
            if (t->row.best_gflops > 0 && t->row.best_latency_s < best) best = t->row.best_latency_s;
            closed = closed && (t->from_log || t->row.state == TASK_PAUSED || t->row.state == TASK_STOPPED ||
                                t->row.state == TASK_DONE);
        }
        LatencyEstimate_add(&est, this->tasks[i].weight, best, closed);
    }
    return LatencyEstimate_value(&est, left_out);
}

double UiModel_roofLatency(const UiModel *this) {
    double sum = 0;
    for (int i = 0; i < this->n_tasks; i++) {
        const UiTask *t = &this->tasks[i];
        if (t->row.roof_gflops <= 0 || t->flops <= 0) return 0;
    }
    for (int i = 0; i < this->n_tasks; i++) {
        if (!group_first(this, i)) continue;
        double low = INFINITY;
        for (int j = i; j < this->n_tasks; j++) {
            const UiTask *t = &this->tasks[j];
            double s = t->flops / (t->row.roof_gflops * 1e9);
            if (same_group(this, i, j) && s < low) low = s;
        }
        sum += this->tasks[i].weight * low;
    }
    return this->n_tasks ? sum : 0;
}

int UiTask_groupOrder(const UiTask *this, int *order) {
    int n = this->n_groups;
    for (int i = 0; i < n; i++)
        order[i] = i;
    /* insertion sort, stable: equal counts keep arrival order */
    for (int i = 1; i < n; i++) {
        int v = order[i], j = i;
        while (j > 0 && this->groups[order[j - 1]].count < this->groups[v].count) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    return n;
}

void UiTask_bestSoFar(const UiTask *this, double *out) {
    double best = 0;
    for (int i = 0; i < this->n_points; i++) {
        if (this->points[i].gflops > best) best = this->points[i].gflops;
        out[i] = best;
    }
}
