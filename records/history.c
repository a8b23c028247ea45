/* records/history.c: a log loaded into memory, grouped by task. */
#include "records/history.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/keyindex.h"

static const char *key_of(const void *tasks, int i) { return ((const HistoryTask *)tasks)[i].key; }
static const char *tmpl_of(const void *tasks, int i) { return ((const HistoryTask *)tasks)[i].template_name; }

void History_init(History *this) {
    memset(this, 0, sizeof *this);
    KeyIndex_initPair(&this->index, key_of, tmpl_of);
    this->end = LOG_END;
}

void History_done(History *this) {
    for (int t = 0; t < this->n_tasks; t++) {
        HistoryTask *task = &this->tasks[t];
        for (int i = 0; i < task->n_records; i++)
            Record_done(&task->records[i]);
        free(task->records);
    }
    free(this->tasks);
    KeyIndex_done(&this->index);
    LogSession_done(&this->session);
    free(this->steers);
    History_init(this);
}

const HistoryTask *History_find(const History *this, const char *task_key) {
    return History_findTemplate(this, task_key, NULL);
}

const HistoryTask *History_findTemplate(const History *this, const char *task_key, const char *template_name) {
    int t = KeyIndex_findPair(&this->index, this->tasks, task_key, template_name);
    return t < 0 ? NULL : &this->tasks[t];
}

const Record *History_bestOfKey(const History *this, const char *task_key) {
    const Record *best = NULL;
    for (int t = 0; t < this->n_tasks; t++) {
        const Record *b = strcmp(this->tasks[t].key, task_key) == 0 ? HistoryTask_best(&this->tasks[t]) : NULL;
        if (b && (!best || Record_cost(b) < Record_cost(best))) best = b;
    }
    return best;
}

/* A task is a key under one template (history.h): the same key under another template is another task. */
static HistoryTask *task_for_key(History *this, const char *key, const char *tmpl) {
    int t = KeyIndex_findPair(&this->index, this->tasks, key, tmpl);
    if (t >= 0) {
        HistoryTask *task = &this->tasks[t];
        if (!task->template_name[0]) snprintf(task->template_name, sizeof task->template_name, "%s", tmpl);
        return task;
    }
    if (this->n_tasks == this->cap) {
        this->cap = this->cap ? this->cap * 2 : 8;
        this->tasks = tt_realloc(this->tasks, (size_t)this->cap * sizeof *this->tasks);
    }
    HistoryTask *task = &this->tasks[this->n_tasks++];
    memset(task, 0, sizeof *task);
    snprintf(task->key, sizeof task->key, "%s", key);
    snprintf(task->template_name, sizeof task->template_name, "%s", tmpl);
    task->best = -1;
    task->weight = 1;
    KeyIndex_added(&this->index, this->tasks, this->n_tasks);
    return task;
}

static HistoryTask *task_for(History *this, const Record *rec) {
    return task_for_key(this, rec->task_key, rec->template_name);
}

/* Takes ownership of rec's contents (rec is left initialised and empty). */
static void add_taken(History *this, Record *rec) {
    HistoryTask *task = task_for(this, rec);
    if (task->n_records == task->cap) {
        task->cap = task->cap ? task->cap * 2 : 16;
        task->records = tt_realloc(task->records, (size_t)task->cap * sizeof *task->records);
    }
    int i = task->n_records++;
    task->records[i] = *rec;
    Record_init(rec);
    const Record *r = &task->records[i];
    if (r->error_no != 0) {
        task->n_errors++;
        task->errno_count[r->error_no < HISTORY_ERRNO_SLOTS - 1 ? r->error_no : HISTORY_ERRNO_SLOTS - 1]++;
    } else {
        task->errno_count[0]++;
        double m = Record_cost(r);
        /* strictly lower: on a tie the earlier record stays best */
        if (isfinite(m) && (task->best < 0 || m < Record_cost(&task->records[task->best]))) task->best = i;
    }
    this->n_records++;
}

/* Tasks into ID order: the last session's list first (see history.h). */
static void order_by_session(History *this) {
    int *order, *from;
    if (!LogSession_order((&this->session), &this->index, this->tasks, this->n_tasks, &order, &from)) return;
    HistoryTask *sorted = tt_realloc(NULL, (size_t)(this->cap ? this->cap : 1) * sizeof *sorted);
    for (int i = 0; i < this->n_tasks; i++) {
        sorted[i] = this->tasks[order[i]];
        if (from[i] < 0) continue;
        sorted[i].weight = (&this->session)->tasks[from[i]].weight;
        snprintf(sorted[i].network, sizeof sorted[i].network, "%s", (&this->session)->tasks[from[i]].network);
    }
    free(order);
    free(from);
    free(this->tasks);
    this->tasks = sorted;
    KeyIndex_rebuild(&this->index, this->tasks, this->n_tasks);
}

Status History_load(History *this, const char *path, char *err) {
    History_init(this);
    LogReader *r;
    if (LogReader_open(path, &r, &this->header, err)) return TT_ERR;
    LogEntry e;
    LogEntry_init(&e);
    LogReadStatus st;
    int cap_steers = 0;
    while ((st = LogReader_nextEntry(r, &e, this->end_msg)) == LOG_RECORD) {
        if (e.kind == LOG_OBJ_RECORD) {
            add_taken(this, &e.rec);
        } else if (e.kind == LOG_OBJ_SESSION) {
            /* the session's tasks exist from here on, measured or not */
            for (int i = 0; i < e.session.n_tasks; i++)
                task_for_key(this, e.session.tasks[i].key, e.session.tasks[i].template_name);
            LogSession_copy(&this->session, &e.session);
            this->n_sessions++;
        } else {
            if (this->n_steers == cap_steers) {
                cap_steers = cap_steers ? cap_steers * 2 : 16;
                this->steers = tt_realloc(this->steers, (size_t)cap_steers * sizeof *this->steers);
            }
            this->steers[this->n_steers++] = e.steer;
        }
    }
    LogEntry_done(&e);
    this->end = st;
    this->good_offset = LogReader_goodOffset(r);
    this->unchecked = LogReader_uncheckedRecords(r);
    LogReader_unclosedNote(r, this->unclosed, sizeof this->unclosed);
    LogReader_close(r);
    order_by_session(this);
    for (int i = 0; i < this->n_steers; i++) {
        HistoryTask *t = (HistoryTask *)History_findTemplate(this, this->steers[i].key, this->steers[i].template_name);
        if (t) t->steer = &this->steers[i];
    }
    if (st == LOG_END) this->end_msg[0] = '\0';
    if (st == LOG_DAMAGED) return tt_fail(err, "%s", this->end_msg);
    return TT_OK;
}

const Record *HistoryTask_best(const HistoryTask *this) { return this->best < 0 ? NULL : &this->records[this->best]; }
