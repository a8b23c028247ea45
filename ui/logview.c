/* ui/logview.c: see logview.h. */
#include "ui/logview.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels/targets/peak.h"
#include "kernels/workload.h"
#include "records/tvmimport.h"

static void setup_device(UiLogView *this, UiState *st) {
    this->target = Target_find(this->header.target);
    snprintf(st->model.target, sizeof st->model.target, "%s", this->header.target);
    if (!this->target) {
        snprintf(this->note, sizeof this->note, "target \"%s\" is unknown here: sources cannot be regenerated",
                 this->header.target);
        snprintf(st->model.device, sizeof st->model.device, "unknown");
        return;
    }
    st->dialect = this->target->dialect;
    char err[TT_ERRLEN] = "";
    if (this->target->probe && this->target->probe(&st->dev, err) == TT_OK) {
        st->have_dev = true;
    } else if (this->target->offline_info) {
        /* no device here (a CUDA log on a machine without a GPU): use the
         * target's default architecture's limits, good enough to regenerate sources */
        char err2[TT_ERRLEN] = "";
        if (this->target->offline_info(NULL, &st->dev, err2) == TT_OK) {
            st->have_dev = true;
            snprintf(this->note, sizeof this->note, "no %s device here (%s): sources use %s limits", this->target->name,
                     err, st->dev.arch);
        } else {
            snprintf(this->note, sizeof this->note, "no %s device here: %s", this->target->name, err);
        }
    } else {
        snprintf(this->note, sizeof this->note, "no %s device here: %s", this->target->name, err);
    }
    snprintf(st->model.device, sizeof st->model.device, "%s", st->have_dev ? st->dev.name : "none here");
}

/* The model task for a key and template (a workload under two templates is
 * two tasks, a group: records/history.h), adding it (and rebuilding its Task)
 * on first sight. flops_hint > 0: the task's FLOPs when its key is not a
 * tunetop workload (a TVM log's). */
static int task_for_key(UiLogView *this, UiState *st, const char *key, const char *tmpl, double weight,
                        double flops_hint) {
    int ti = UiModel_findTask(&st->model, key, tmpl);
    if (ti >= 0) {
        UiTask *t = &st->model.tasks[ti];
        if (!t->template_name[0] && tmpl) snprintf(t->template_name, sizeof t->template_name, "%s", tmpl);
        return ti;
    }
    Task **nt = realloc(this->tasks, (size_t)(this->n_tasks + 1) * sizeof *nt);
    if (!nt) abort();
    this->tasks = nt;
    Task *task = NULL;
    Workload wl;
    char err[TT_ERRLEN];
    int id = this->n_tasks;
    double flops = flops_hint;
    if (flops_hint <= 0 && Workload_parse(key, &wl, err) == TT_OK) {
        flops = Workload_flops(&wl);
        if (this->target && st->have_dev) {
            task = calloc(1, sizeof *task);
            if (!task) abort();
            const Template *t = Template_forRecord(&wl, this->target->family, tmpl, err);
            if (!t || Task_initWith(task, id, &wl, weight, t, &st->dev, err) != TT_OK) {
                Task_done(task);
                free(task);
                task = NULL;
            }
        }
    }
    this->tasks[this->n_tasks++] = task;
    int first = UiModel_findKey(&st->model, key); /* another template's task of the key: one group */
    ti = UiModel_addTask(&st->model, id, key, task ? task->label : key, flops, weight, task);
    UiTask *t = &st->model.tasks[ti];
    t->from_log = true;
    snprintf(t->template_name, sizeof t->template_name, "%s", tmpl ? tmpl : "");
    if (first >= 0) {
        UiTask *f = &st->model.tasks[first];
        if (!f->row.group) f->row.group = 1 + f->id;
        t->row.group = f->row.group;
    }
    return ti;
}

/* A session object: its tasks in its order (IDs) with their weights. */
static void add_session(UiLogView *this, UiState *st, const LogSession *s) {
    for (int i = 0; i < s->n_tasks; i++) {
        int ti = task_for_key(this, st, s->tasks[i].key, s->tasks[i].template_name, s->tasks[i].weight, 0);
        st->model.tasks[ti].weight = s->tasks[i].weight;
    }
}

/* With a task list: the key is one of its workloads (the log's records of others are left out). */
static bool listed(const UiLogView *this, const char *key) {
    if (!this->list) return true;
    for (int i = 0; i < this->list->n_tasks; i++)
        if (strcmp(this->list->tasks[i].key, key) == 0) return true;
    return false;
}

static void note_left_out(UiLogView *this) {
    const char *list = this->list->network[0] ? this->list->network : "the task list";
    if (this->records == 0)
        snprintf(this->note, sizeof this->note, "none of the log's %ld records is of a workload of %.300s",
                 this->left_out, list);
    else
        snprintf(this->note, sizeof this->note, "%ld record%s of workloads not in %.300s not shown", this->left_out,
                 this->left_out == 1 ? "" : "s", list);
}

/* A steer object: the task's pause, stop and priority as the session left them. */
static void add_steer(UiLogView *this, UiState *st, const LogSteer *s) {
    int ti = task_for_key(this, st, s->key, s->template_name, 1.0, 0);
    TaskRow *row = &st->model.tasks[ti].row;
    row->priority = s->priority;
    row->user_paused = s->paused;
    row->state = s->stopped ? TASK_STOPPED : s->paused ? TASK_PAUSED : TASK_WAITING;
}

/* The estimate over the tasks with a result (the others left out and
 * counted). It joins the latency series, and can be the "first estimate",
 * only once every task has a result or was paused or stopped without one, as
 * in the live session: a partial sum early in the log is no estimate of it. */
static void update_estimate(UiModel *m, double t_s) {
    double est = UiModel_estimate(m, &m->est_left_out);
    if (!isfinite(est)) return;
    for (int i = 0; i < m->n_tasks; i++) {
        const UiTask *t = &m->tasks[i];
        bool result = isfinite(t->row.best_latency_s) && t->row.best_gflops > 0;
        if (!result && t->row.state != TASK_PAUSED && t->row.state != TASK_STOPPED) {
            m->est_latency_s = est; /* the header shows it, with the tasks left out */
            return;
        }
    }
    UiModel_addLatency(m, t_s, est);
}

static void add(UiLogView *this, UiState *st, const Record *rec, double flops_hint) {
    UiModel *m = &st->model;
    if (Record_isImported(rec)) { /* measured elsewhere: not a trial of this log */
        this->imported++;
        snprintf(this->note, sizeof this->note, "%ld records imported from TVM (not measured here) are not shown",
                 this->imported);
        return;
    }
    /* a TVM log's tasks stay one per workload, whatever template TVM names */
    int ti = task_for_key(this, st, rec->task_key, this->format == TVM_FMT_TUNETOP ? rec->template_name : NULL, 1.0,
                          flops_hint);
    UiTask *t = &m->tasks[ti];
    double g = rec->error_no ? 0 : Record_gflops(rec, t->flops);
    if (m->first_ts == 0 || rec->timestamp < m->first_ts) m->first_ts = rec->timestamp;
    char why[256];
    /* against the peak: the GFLOPS executed (a Winograd task's effective GFLOPS are more) */
    double executed = t->task ? Template_executedGflops(t->task->tmpl, &t->task->wl, g) : g;
    if (UiModel_addRecord(m, ti, rec, 0, g) && st->have_dev && Device_beyondPeak(&st->dev, executed, why, sizeof why))
        UiState_setStatus(st, ATTR_WARN, "task %d best: %s", t->id, why);
    /* a workload whose FLOPs are unknown (a TVM log's, not a tunetop workload) still has a best latency */
    if (t->flops <= 0 && rec->error_no == 0) {
        double lat = Record_cost(rec);
        if (isfinite(lat) && !(lat >= t->row.best_latency_s)) {
            t->row.best_latency_s = lat;
            t->row.best_index = rec->index;
        }
    }
    t->from_log = true;
    m->trials++;
    double t_s = rec->timestamp - m->first_ts;
    if (t_s > m->elapsed_s) m->elapsed_s = t_s;
    m->trials_per_s = m->elapsed_s > 0 ? m->trials / m->elapsed_s : 0;
    update_estimate(m, t_s);
}

/* Reads the objects appended since the last call (the reader stays open at
 * the end of the last complete object). Returns the records added or -1. */
static int read_new(UiLogView *this, UiState *st, char *err) {
    LogEntry e;
    LogEntry_init(&e);
    int added = 0, objects = 0;
    char msg[TT_ERRLEN];
    this->torn = false;
    for (;;) {
        msg[0] = '\0';
        LogReadStatus s = LogReader_nextEntry(this->reader, &e, msg);
        if (s == LOG_END) break;
        if (s == LOG_TORN) {
            this->torn = true;
            break;
        }
        if (s == LOG_DAMAGED) {
            snprintf(err, TT_ERRLEN, "%.200s: %.280s", this->path, msg[0] ? msg : "damaged record");
            LogEntry_done(&e);
            return -1;
        }
        objects++;
        if (e.kind == LOG_OBJ_SESSION) {
            if (!this->list) add_session(this, st, &e.session); /* a given task list keeps its IDs */
        } else if (e.kind == LOG_OBJ_STEER) {
            if (listed(this, e.steer.key)) add_steer(this, st, &e.steer);
        } else if (!listed(this, e.rec.task_key)) {
            this->left_out++;
        } else {
            add(this, st, &e.rec, 0);
            this->records++;
            added++;
        }
    }
    if (added == 0 && objects > 0) update_estimate(&st->model, st->model.elapsed_s);
    if (this->left_out) note_left_out(this);
    LogEntry_done(&e);
    return added;
}

/* The last session object of the log, so that its task list gives the IDs
 * (and the tasks the estimate waits for) from the first record on: a log
 * may hold several sessions. A scan of its own, at open only. */
static void last_session(const char *path, LogSession *out) {
    LogReader *r;
    LogHeader h;
    char err[TT_ERRLEN];
    if (LogReader_open(path, &r, &h, err) != TT_OK) return;
    LogEntry e;
    LogEntry_init(&e);
    while (LogReader_nextEntry(r, &e, err) == LOG_RECORD)
        if (e.kind == LOG_OBJ_SESSION) LogSession_copy(out, &e.session);
    LogEntry_done(&e);
    LogReader_close(r);
}

/* Opens tunetop's log and reads it whole, once. */
static Status open_log(UiLogView *this, UiState *st, char *err) {
    if (LogReader_open(this->path, &this->reader, &this->header, err) != TT_OK) return TT_ERR;
    setup_device(this, st);
    LogSession last;
    LogSession_init(&last);
    if (!this->list) last_session(this->path, &last);
    add_session(this, st, this->list ? this->list : &last);
    LogSession_done(&last);
    if (read_new(this, st, err) < 0) return TT_ERR;
    LogReader_check(this->reader, NULL); /* the size read so far */
    return TT_OK;
}

static void free_tasks(UiLogView *this) {
    for (int i = 0; i < this->n_tasks; i++) {
        if (!this->tasks[i]) continue;
        Task_done(this->tasks[i]);
        free(this->tasks[i]);
    }
    free(this->tasks);
    this->tasks = NULL;
    this->n_tasks = 0;
}

/* The file was replaced or cut below what was read: the model is built
 * again from the file's start (closing what shows a task of the old one). */
static int reload(UiLogView *this, UiState *st, char *err) {
    LogReader_close(this->reader);
    this->reader = NULL;
    Inspector_freeDetail(&st->insp);
    if (st->view.overlay == OVERLAY_INSPECTOR) st->view.overlay = OVERLAY_NONE;
    st->insp.task = -1;
    UiModel_done(&st->model);
    UiModel_init(&st->model);
    free_tasks(this);
    this->records = 0;
    this->left_out = 0;
    this->note[0] = '\0';
    st->selected = 0;
    st->table_top = 0;
    this->reloads++;
    if (open_log(this, st, err) != TT_OK) return -1;
    UiState_sort(st);
    return (int)this->records;
}

/* Reads the TVM records appended since the last call. Returns the count added or -1. */
static int read_tvm(UiLogView *this, UiState *st, char *err) {
    int added = 0;
    Record rec;
    Record_init(&rec);
    char msg[TT_ERRLEN];
    this->torn = false;
    for (;;) {
        TvmReadStatus s = TvmReader_next(this->tvm, this->tvm_rec, msg);
        if (s == TVM_END) break;
        if (s == TVM_PARTIAL) { /* a writer is in the middle of a line: wait for the rest */
            this->torn = true;
            break;
        }
        if (s == TVM_BAD) {
            this->bad_lines++;
            snprintf(this->note, sizeof this->note, "%ld malformed line%s skipped (last: %.200s)", this->bad_lines,
                     this->bad_lines == 1 ? "" : "s", msg);
            continue;
        }
        if (s == TVM_IOERR) {
            snprintf(err, TT_ERRLEN, "%.480s", msg);
            Record_done(&rec);
            return -1;
        }
        Workload wl;
        TvmMapReason why;
        char werr[TT_ERRLEN];
        double flops = TvmRecord_workload(this->tvm_rec, &wl, &why, werr) == TT_OK ? Workload_flops(&wl) : 0;
        TvmRecord_toRecord(this->tvm_rec, &rec);
        add(this, st, &rec, flops);
        this->records++;
        added++;
    }
    Record_done(&rec);
    return added;
}

Status UiLogView_open(UiLogView *this, UiState *st, const char *path, char *err) {
    return UiLogView_openFormat(this, st, path, TVM_FMT_UNKNOWN, err);
}

Status UiLogView_openFormat(UiLogView *this, UiState *st, const char *path, TvmFormat fmt, char *err) {
    return UiLogView_openTasks(this, st, path, fmt, NULL, err);
}

Status UiLogView_openTasks(UiLogView *this, UiState *st, const char *path, TvmFormat fmt, const LogSession *tasks,
                           char *err) {
    memset(this, 0, sizeof *this);
    this->list = tasks;
    snprintf(this->path, sizeof this->path, "%s", path);
    st->model.live = false;
    if (fmt == TVM_FMT_UNKNOWN && TvmLog_detect(path, &fmt, err) != TT_OK) return TT_ERR;
    this->format = fmt;
    if (fmt != TVM_FMT_TUNETOP && tasks)
        return tt_fail(err, "%.200s is a log of %s's: a task list orders tunetop's logs only", path,
                       TvmFormat_name(fmt));
    if (fmt != TVM_FMT_TUNETOP) {
        if (TvmReader_open(path, fmt, &this->tvm, err) != TT_OK) return TT_ERR;
        this->tvm_rec = malloc(sizeof *this->tvm_rec);
        if (!this->tvm_rec) abort();
        snprintf(st->model.target, sizeof st->model.target, "%s", TvmFormat_name(fmt));
        snprintf(st->model.device, sizeof st->model.device, "TVM's (latencies measured where the log was written)");
        if (read_tvm(this, st, err) < 0) return TT_ERR;
        st->selected = 0;
        UiState_sort(st);
        return TT_OK;
    }
    if (open_log(this, st, err) != TT_OK) return TT_ERR;
    st->selected = 0;
    UiState_sort(st);
    return TT_OK;
}

int UiLogView_poll(UiLogView *this, UiState *st, char *err) {
    this->change = LOG_FILE_SAME;
    if (this->tvm) {
        TvmReader_follow(this->tvm);
        int n = read_tvm(this, st, err);
        if (n > 0) UiState_sort(st);
        return n;
    }
    char why[TT_ERRLEN];
    LogFileChange c = this->reader ? LogReader_check(this->reader, why) : LOG_FILE_REPLACED;
    if (c == LOG_FILE_SAME) return 0;
    if (c == LOG_FILE_GONE) {
        snprintf(err, TT_ERRLEN, "%s", why);
        return -1;
    }
    this->change = c;
    if (c == LOG_FILE_TRUNCATED || c == LOG_FILE_REPLACED) return reload(this, st, err);
    LogReader_follow(this->reader);
    int n = read_new(this, st, err);
    if (n > 0) UiState_sort(st);
    return n;
}

void UiLogView_done(UiLogView *this) {
    TvmReader_close(this->tvm);
    this->tvm = NULL;
    free(this->tvm_rec);
    this->tvm_rec = NULL;
    LogReader_close(this->reader);
    this->reader = NULL;
    free_tasks(this);
}
