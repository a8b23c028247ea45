/* tuner/resume.c: see resume.h. */
#include "tuner/resume.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/target.h"
#include "records/log.h"

void TaskTally_init(TaskTally *this) {
    memset(this, 0, sizeof *this);
    this->best_latency = INFINITY;
}

bool TaskTally_add(TaskTally *this, const Record *rec, double gflops) {
    this->trials++;
    if (rec->error_no != ERR_NO_ERROR) {
        this->errors++;
        return false;
    }
    this->successes++;
    if (rec->n_costs == 0) return false; /* compile-only: built, no timing */
    this->current_gflops = gflops;
    double lat = Record_cost(rec);
    if (!(lat < this->best_latency)) return false;
    this->best_latency = lat;
    this->best_gflops = gflops;
    this->best_index = rec->index;
    return true;
}

/* Grows an array of elem-sized items to hold n + 1. */
static void *grow(void *p, int n, int *cap, size_t elem) {
    if (n < *cap) return p;
    *cap = *cap ? *cap * 2 : 64;
    void *q = realloc(p, (size_t)*cap * elem);
    if (!q) abort();
    return q;
}

static void rows_push(ResumeRows *r, uint64_t index, double gflops) {
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->index = realloc(r->index, (size_t)r->cap * sizeof *r->index);
        r->gflops = realloc(r->gflops, (size_t)r->cap * sizeof *r->gflops);
        if (!r->index || !r->gflops) abort();
    }
    r->index[r->n] = index;
    r->gflops[r->n] = gflops;
    r->n++;
}

static void rows_free(ResumeRows *r) {
    free(r->index);
    free(r->gflops);
}

/* An imported config and the cost it had where it was measured. */
typedef struct Seed {
    uint64_t index;
    double cost;
} Seed;

typedef struct Seeds {
    Seed *v;
    int n, cap;
} Seeds;

/* What reading collects beyond the Resume itself. */
typedef struct Reading {
    const Task *tasks;
    int n;
    TargetFamily family;
    const DeviceInfo *dev;
    Seeds *seeds;      /* per task */
    ResumeRows *xrows; /* per earlier-session task: its records (transfer) */
} Reading;

static int task_of(const Reading *rd, const char *key, const char *tmpl) {
    for (int i = 0; i < rd->n; i++)
        if (strcmp(rd->tasks[i].key, key) == 0 && strcmp(rd->tasks[i].tmpl->name, tmpl) == 0) return i;
    return -1;
}

/* The earlier-session task a foreign record belongs to (created on first
 * sight from its key), or -1 when it cannot be one (unparsable key, a
 * template no session task has). */
static int xtask_of(Resume *this, Reading *rd, const Record *rec) {
    for (int x = 0; x < this->n_xtasks; x++) /* one workload can have tasks of two templates (conv2d 3x3) */
        if (strcmp(this->xtasks[x].key, rec->task_key) == 0 &&
            strcmp(this->xtasks[x].tmpl->name, rec->template_name) == 0)
            return x;
    bool wanted = false;
    for (int t = 0; t < rd->n; t++)
        if (strcmp(rd->tasks[t].tmpl->name, rec->template_name) == 0) wanted = true;
    if (!wanted) return -1;
    Workload wl;
    char err[TT_ERRLEN];
    if (Workload_parse(rec->task_key, &wl, err) != TT_OK) return -1;
    Task task;
    const Template *tmpl = Template_byName(rec->template_name);
    if (!tmpl || tmpl->family != rd->family) return -1;
    if (Task_initWith(&task, -1, &wl, 1, tmpl, rd->dev, err) != TT_OK) return -1;
    int x = this->n_xtasks++;
    this->xtasks = realloc(this->xtasks, (size_t)this->n_xtasks * sizeof *this->xtasks);
    rd->xrows = realloc(rd->xrows, (size_t)this->n_xtasks * sizeof *rd->xrows);
    if (!this->xtasks || !rd->xrows) abort();
    this->xtasks[x] = task;
    rd->xrows[x] = (ResumeRows){0};
    return x;
}

/* A measured record of session task t. */
static void add_measured(Resume *this, int t, const Task *task, const Record *rec) {
    ResumeTask *rt = &this->tasks[t];
    if (!VisitedSet_add(&rt->visited, rec->index)) return; /* a duplicate record */
    if (task->tmpl->adopt) {
        /* a candidate named by the template's table (a schedule of te.sketch):
         * known again, so the search can build on it; one whose steps do not
         * come back stays visited all the same */
        char err[TT_ERRLEN];
        if (task->tmpl->adopt(&task->wl, rec->index, rec->steps, rec->config, err) != TT_OK) this->unadopted++;
    }
    double g = Record_gflops(rec, task->flops);
    bool best = TaskTally_add(&rt->tally, rec, g);
    rows_push(&rt->replay, rec->index, g);
    this->trials = grow(this->trials, this->n_trials, &this->cap_trials, sizeof *this->trials);
    ResumeTrial *tr = &this->trials[this->n_trials++];
    *tr = (ResumeTrial){.task = t,
                        .trial = rt->tally.trials,
                        .timestamp = rec->timestamp,
                        .gflops = g,
                        .error_no = rec->error_no,
                        .best = best};
    if (rec->error_no != ERR_NO_ERROR) {
        tr->failure = malloc(sizeof *tr->failure);
        if (!tr->failure) abort();
        Record_init(tr->failure);
        Record_copy(tr->failure, rec);
    } else if (best) {
        tr->best_record = malloc(sizeof *tr->best_record);
        if (!tr->best_record) abort();
        Record_init(tr->best_record);
        Record_copy(tr->best_record, rec);
    }
    this->restored++;
}

static int seed_by_cost_desc(const void *a, const void *b) {
    double x = ((const Seed *)a)->cost, y = ((const Seed *)b)->cost;
    return (x < y) - (x > y);
}

static void free_reading(Reading *rd, int n_xtasks) {
    for (int t = 0; rd->seeds && t < rd->n; t++)
        free(rd->seeds[t].v);
    free(rd->seeds);
    for (int x = 0; x < n_xtasks; x++)
        rows_free(&rd->xrows[x]);
    free(rd->xrows);
}

/* The transfer rows of each session task: every record of the earlier
 * sessions' tasks of its template, task by task in first-seen order. */
static void build_transfer(Resume *this, const Reading *rd) {
    for (int t = 0; t < this->n_tasks; t++) {
        ResumeTask *rt = &this->tasks[t];
        int n = 0;
        for (int x = 0; x < this->n_xtasks; x++)
            if (this->xtasks[x].tmpl == rd->tasks[t].tmpl) n += rd->xrows[x].n;
        if (!n) continue;
        rt->xfer_index = malloc((size_t)n * sizeof *rt->xfer_index);
        rt->xfer_gflops = malloc((size_t)n * sizeof *rt->xfer_gflops);
        rt->xfer_task = malloc((size_t)n * sizeof *rt->xfer_task);
        if (!rt->xfer_index || !rt->xfer_gflops || !rt->xfer_task) abort();
        for (int x = 0; x < this->n_xtasks; x++) {
            if (this->xtasks[x].tmpl != rd->tasks[t].tmpl) continue;
            for (int k = 0; k < rd->xrows[x].n; k++) {
                rt->xfer_index[rt->n_xfer] = rd->xrows[x].index[k];
                rt->xfer_gflops[rt->n_xfer] = rd->xrows[x].gflops[k];
                rt->xfer_task[rt->n_xfer] = &this->xtasks[x];
                rt->n_xfer++;
            }
        }
    }
}

static void empty(Resume *this) {
    memset(this, 0, sizeof *this);
    this->torn_at = -1;
}

Status Resume_read(Resume *this, const char *path, const Task *tasks, int n, int batch, bool transfer,
                   TargetFamily family, const DeviceInfo *dev, char *err) {
    empty(this);
    LogReader *lr = NULL;
    LogHeader hdr;
    if (LogReader_open(path, &lr, &hdr, err) != TT_OK) return TT_ERR;
    this->n_tasks = n;
    this->tasks = calloc((size_t)(n > 0 ? n : 1), sizeof *this->tasks);
    Reading rd = {.tasks = tasks, .n = n, .family = family, .dev = dev};
    rd.seeds = calloc((size_t)(n > 0 ? n : 1), sizeof *rd.seeds);
    if (!this->tasks || !rd.seeds) abort();
    for (int t = 0; t < n; t++) {
        TaskTally_init(&this->tasks[t].tally);
        VisitedSet_init(&this->tasks[t].visited);
    }
    LogEntry e;
    LogEntry_init(&e);
    char msg[TT_ERRLEN] = "";
    LogReadStatus st;
    while ((st = LogReader_nextEntry(lr, &e, msg)) == LOG_RECORD) {
        if (e.kind == LOG_OBJ_STEER) {
            int t = task_of(&rd, e.steer.key, e.steer.template_name);
            if (t >= 0) {
                ResumeTask *rt = &this->tasks[t];
                rt->steered = true;
                rt->stopped = e.steer.stopped;
                rt->paused = e.steer.paused && !e.steer.stopped;
                rt->priority = e.steer.priority;
            }
            continue;
        }
        if (e.kind != LOG_OBJ_RECORD) continue;
        const Record *rec = &e.rec;
        int t = task_of(&rd, rec->task_key, rec->template_name);
        if (t < 0) {
            this->foreign++;
            if (transfer) {
                int x = xtask_of(this, &rd, rec);
                if (x >= 0 && rec->index < this->xtasks[x].space.total)
                    rows_push(&rd.xrows[x], rec->index, Record_gflops(rec, this->xtasks[x].flops));
            }
            continue;
        }
        if (rec->index >= tasks[t].space.total) {
            this->foreign++;
            continue;
        }
        if (Record_isImported(rec)) {
            Seeds *sd = &rd.seeds[t];
            sd->v = grow(sd->v, sd->n, &sd->cap, sizeof *sd->v);
            sd->v[sd->n++] = (Seed){rec->index, rec->src_cost};
            continue;
        }
        add_measured(this, t, &tasks[t], rec);
    }
    LogEntry_done(&e);
    if (st == LOG_TORN) this->torn_at = LogReader_goodOffset(lr);
    LogReader_unclosedNote(lr, this->unclosed, sizeof this->unclosed);
    LogReader_close(lr);
    if (st == LOG_DAMAGED) {
        free_reading(&rd, this->n_xtasks);
        Resume_done(this);
        return tt_fail(err, "%s: %s", path, msg);
    }
    /* imported configs not measured here: the cheapest is measured first, and
     * the engine pops pending configs from the end */
    for (int t = 0; t < n; t++) {
        ResumeTask *rt = &this->tasks[t];
        const Seeds *sd = &rd.seeds[t];
        if (sd->n) qsort(sd->v, (size_t)sd->n, sizeof *sd->v, seed_by_cost_desc);
        for (int i = 0; i < sd->n; i++) {
            if (!VisitedSet_add(&rt->visited, sd->v[i].index)) continue;
            rt->seeds = grow(rt->seeds, rt->n_seeds, &rt->cap_seeds, sizeof(uint64_t));
            rt->seeds[rt->n_seeds++] = sd->v[i].index;
            this->seeded++;
        }
        if (rt->tally.trials > 0) rt->rounds = (rt->tally.trials + batch - 1) / (batch > 0 ? batch : 1);
    }
    if (transfer) build_transfer(this, &rd);
    free_reading(&rd, this->n_xtasks);
    return TT_OK;
}

void Resume_summary(const Resume *this, const char *path, char *out, size_t len) {
    if (!out || !len) return;
    out[0] = '\0';
    char steer_text[1024] = "";
    int steer_off = 0, tasks_with = 0;
    for (int t = 0; t < this->n_tasks; t++) {
        const ResumeTask *rt = &this->tasks[t];
        if (rt->tally.trials > 0) tasks_with++;
        if (!rt->steered) continue;
        char what[96] = "";
        if (rt->stopped)
            snprintf(what, sizeof what, "stopped");
        else if (rt->paused && rt->priority)
            snprintf(what, sizeof what, "paused, priority %+d", rt->priority);
        else if (rt->paused)
            snprintf(what, sizeof what, "paused");
        else if (rt->priority)
            snprintf(what, sizeof what, "priority %+d", rt->priority);
        if (what[0] && steer_off < (int)sizeof steer_text)
            steer_off += snprintf(steer_text + steer_off, sizeof steer_text - (size_t)steer_off, "%stask %d %s",
                                  steer_off ? ", " : "", t, what);
    }
    if (this->restored || steer_text[0]) {
        int off = snprintf(out, len, "resumed %s: %d measured configs of %d task%s restored", path, this->restored,
                           tasks_with, tasks_with == 1 ? "" : "s");
        for (int t = 0; t < this->n_tasks && off < (int)len; t++) {
            const TaskTally *ty = &this->tasks[t].tally;
            if (!ty->trials) continue;
            off += snprintf(out + off, len - (size_t)off, "; task %d: %d trials, best %.2f GFLOPS", t, ty->trials,
                            ty->best_gflops);
        }
        if (this->foreign && off < (int)len)
            off += snprintf(out + off, len - (size_t)off, "; %d records of other tasks kept", this->foreign);
        if (steer_text[0] && off < (int)len)
            snprintf(out + off, len - (size_t)off, "; steering restored: %s (p, +/- change it)", steer_text);
    }
    if (this->unclosed[0]) {
        size_t off = strlen(out);
        if (off < len) snprintf(out + off, len - off, "%s%s", off ? "; " : "", this->unclosed);
    }
    if (this->seeded) {
        size_t off = strlen(out);
        if (off < len)
            snprintf(out + off, len - off, "%s%d imported config%s (measured elsewhere) queued to measure first",
                     off ? "; " : "", this->seeded, this->seeded == 1 ? "" : "s");
    }
}

void Resume_done(Resume *this) {
    for (int t = 0; t < this->n_tasks; t++) {
        ResumeTask *rt = &this->tasks[t];
        VisitedSet_done(&rt->visited);
        rows_free(&rt->replay);
        free(rt->seeds);
        free(rt->xfer_index);
        free(rt->xfer_gflops);
        free(rt->xfer_task);
    }
    free(this->tasks);
    for (int x = 0; x < this->n_xtasks; x++)
        Task_done(&this->xtasks[x]);
    free(this->xtasks);
    ResumeTrials_free(this->trials, this->n_trials);
    empty(this);
}

void ResumeTrials_free(ResumeTrial *trials, int n) {
    for (int i = 0; i < n; i++) {
        if (trials[i].best_record) {
            Record_done(trials[i].best_record);
            free(trials[i].best_record);
        }
        if (!trials[i].failure) continue;
        Record_done(trials[i].failure);
        free(trials[i].failure);
    }
    free(trials);
}
