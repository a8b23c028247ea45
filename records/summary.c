/* records/summary.c: a log summarised per task in one pass (see summary.h). */
#include "records/summary.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

static const char *key_of(const void *tasks, int i) { return ((const SummaryTask *)tasks)[i].key; }
static const char *tmpl_of(const void *tasks, int i) { return ((const SummaryTask *)tasks)[i].template_name; }

void LogSummary_done(LogSummary *this) {
    for (int t = 0; t < this->n_tasks; t++) {
        Record_done(&this->tasks[t].best);
        Record_done(&this->tasks[t].best_imported);
    }
    free(this->tasks);
    KeyIndex_done(&this->index);
    memset(this, 0, sizeof *this);
    KeyIndex_initPair(&this->index, key_of, tmpl_of);
    this->end = LOG_END;
}

const SummaryTask *LogSummary_find(const LogSummary *this, const char *task_key) {
    return LogSummary_findTemplate(this, task_key, NULL);
}

const SummaryTask *LogSummary_findTemplate(const LogSummary *this, const char *task_key, const char *template_name) {
    int t = KeyIndex_findPair(&this->index, this->tasks, task_key, template_name);
    return t < 0 ? NULL : &this->tasks[t];
}

/* A task is a key under one template (history.h): the same key under another template is another task. */
static SummaryTask *task_for_key(LogSummary *this, const char *key, const char *tmpl) {
    int t = KeyIndex_findPair(&this->index, this->tasks, key, tmpl);
    if (t >= 0) {
        SummaryTask *task = &this->tasks[t];
        if (!task->template_name[0]) snprintf(task->template_name, sizeof task->template_name, "%s", tmpl);
        return task;
    }
    if (this->n_tasks == this->cap) {
        this->cap = this->cap ? this->cap * 2 : 8;
        this->tasks = tt_realloc(this->tasks, (size_t)this->cap * sizeof *this->tasks);
    }
    SummaryTask *task = &this->tasks[this->n_tasks++];
    memset(task, 0, sizeof *task);
    snprintf(task->key, sizeof task->key, "%s", key);
    snprintf(task->template_name, sizeof task->template_name, "%s", tmpl);
    Record_init(&task->best);
    Record_init(&task->best_imported);
    task->weight = 1;
    KeyIndex_added(&this->index, this->tasks, this->n_tasks);
    return task;
}

/* Counts rec into its task; a new best takes rec's contents (rec is left
 * initialised and empty then). */
static void add(LogSummary *this, Record *rec) {
    SummaryTask *task = task_for_key(this, rec->task_key, rec->template_name);
    task->n_records++;
    this->n_records++;
    if (Record_isImported(rec)) {
        task->n_imported++;
    } else if (rec->error_no == 0 && rec->n_costs == 0) {
        task->n_built++;
    }
    if (rec->error_no != 0) {
        task->n_errors++;
        task->errno_count[rec->error_no < HISTORY_ERRNO_SLOTS - 1 ? rec->error_no : HISTORY_ERRNO_SLOTS - 1]++;
    } else {
        task->errno_count[0]++;
    }
    if (Record_isImported(rec)) {
        if (!task->has_best_imported || rec->src_cost < task->best_imported.src_cost) {
            Record_done(&task->best_imported);
            task->best_imported = *rec;
            task->has_best_imported = true;
            Record_init(rec);
            return;
        }
    }
    if (rec->error_no == 0) {
        double m = Record_cost(rec);
        /* strictly lower: on a tie the earlier record stays best */
        if (isfinite(m) && (!task->has_best || m < Record_cost(&task->best))) {
            Record_done(&task->best);
            task->best = *rec;
            task->has_best = true;
            Record_init(rec);
        }
    }
}

/* Steering of keys that have no task yet (the last one of each key): a
 * task that appears later in the log takes it, unless steered again after. */
typedef struct PendingSteers {
    LogSteer *v;
    int n, cap;
} PendingSteers;

static void pending_add(PendingSteers *p, const LogSteer *s) {
    for (int i = 0; i < p->n; i++)
        if (Record_sameTask(p->v[i].key, p->v[i].template_name, s->key, s->template_name)) {
            p->v[i] = *s;
            return;
        }
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->v = tt_realloc(p->v, (size_t)p->cap * sizeof *p->v);
    }
    p->v[p->n++] = *s;
}

/* Tasks into ID order: the last session's list first (see summary.h). */
static void order_by_session(LogSummary *this, const LogSession *s) {
    int *order, *from;
    if (!LogSession_order(s, &this->index, this->tasks, this->n_tasks, &order, &from)) return;
    SummaryTask *sorted = tt_realloc(NULL, (size_t)(this->cap ? this->cap : 1) * sizeof *sorted);
    for (int i = 0; i < this->n_tasks; i++) {
        sorted[i] = this->tasks[order[i]];
        if (from[i] < 0) continue;
        sorted[i].weight = s->tasks[from[i]].weight;
        snprintf(sorted[i].network, sizeof sorted[i].network, "%s", s->tasks[from[i]].network);
    }
    free(order);
    free(from);
    free(this->tasks);
    this->tasks = sorted;
    KeyIndex_rebuild(&this->index, this->tasks, this->n_tasks);
}

const Record *LogSummary_bestOfKey(const LogSummary *this, const char *task_key) {
    const Record *best = NULL;
    for (int t = 0; t < this->n_tasks; t++) {
        const SummaryTask *task = &this->tasks[t];
        const Record *b = task->has_best && strcmp(task->key, task_key) == 0 ? &task->best : NULL;
        if (b && (!best || Record_cost(b) < Record_cost(best))) best = b;
    }
    return best;
}

/* The first task of the list with this key, or -1. */
static int list_find(const LogSession *list, const char *key) {
    for (int i = 0; i < list->n_tasks; i++)
        if (strcmp(list->tasks[i].key, key) == 0) return i;
    return -1;
}

void LogSummary_useTasks(LogSummary *this, const LogSession *list, int *other_tasks, long *other_records) {
    *other_tasks = 0;
    *other_records = 0;
    for (int i = 0; i < list->n_tasks; i++)
        task_for_key(this, list->tasks[i].key, list->tasks[i].template_name);
    order_by_session(this, list);
    int kept = list->n_tasks;
    for (int i = list->n_tasks; i < this->n_tasks; i++) {
        SummaryTask *t = &this->tasks[i];
        int in = list_find(list, t->key);
        if (in >= 0) { /* the workload under a template the list does not name */
            t->weight = list->tasks[in].weight;
            snprintf(t->network, sizeof t->network, "%s", list->tasks[in].network);
            this->tasks[kept++] = *t;
            continue;
        }
        (*other_tasks)++;
        *other_records += t->n_records;
        Record_done(&t->best);
        Record_done(&t->best_imported);
    }
    this->n_tasks = kept;
    KeyIndex_rebuild(&this->index, this->tasks, this->n_tasks);
}

Status LogSummary_load(LogSummary *this, const char *path, char *err) {
    memset(this, 0, sizeof *this);
    KeyIndex_initPair(&this->index, key_of, tmpl_of);
    this->end = LOG_END;
    LogReader *r;
    if (LogReader_open(path, &r, &this->header, err)) return TT_ERR;
    LogEntry e;
    LogEntry_init(&e);
    LogSession last;
    LogSession_init(&last);
    PendingSteers pending = {0};
    LogReadStatus st;
    while ((st = LogReader_nextEntry(r, &e, this->end_msg)) == LOG_RECORD) {
        if (e.kind == LOG_OBJ_RECORD) {
            add(this, &e.rec);
        } else if (e.kind == LOG_OBJ_SESSION) {
            /* the session's tasks exist from here on, measured or not */
            for (int i = 0; i < e.session.n_tasks; i++)
                task_for_key(this, e.session.tasks[i].key, e.session.tasks[i].template_name);
            LogSession_copy(&last, &e.session);
        } else {
            /* steering of a key the log never mentions otherwise is not a task */
            SummaryTask *t = (SummaryTask *)LogSummary_findTemplate(this, e.steer.key, e.steer.template_name);
            if (t) {
                t->steer = e.steer;
                t->steered = true;
            } else {
                pending_add(&pending, &e.steer);
            }
        }
    }
    LogEntry_done(&e);
    this->end = st;
    this->good_offset = LogReader_goodOffset(r);
    this->unchecked = LogReader_uncheckedRecords(r);
    LogReader_unclosedNote(r, this->unclosed, sizeof this->unclosed);
    LogReader_close(r);
    for (int i = 0; i < pending.n; i++) {
        SummaryTask *t = (SummaryTask *)LogSummary_findTemplate(this, pending.v[i].key, pending.v[i].template_name);
        if (t && !t->steered) {
            t->steer = pending.v[i];
            t->steered = true;
        }
    }
    free(pending.v);
    order_by_session(this, &last);
    LogSession_done(&last);
    if (st == LOG_END) this->end_msg[0] = '\0';
    if (st == LOG_DAMAGED) return tt_fail(err, "%s", this->end_msg);
    return TT_OK;
}
