/* records/history.c: a log loaded into memory, grouped by task. */
#include "records/history.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a: task keys are short strings, a few to a few hundred per log */
static uint64_t key_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n);
    if (!q) abort(); /* out of memory is not recoverable here, as in StrBuf */
    return q;
}

void History_init(History *this) {
    memset(this, 0, sizeof *this);
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
    free(this->slots);
    History_init(this);
}

/* Slot of key in the index: the one holding it, or the empty one where it goes. */
static size_t slot_of(const History *this, const char *key) {
    size_t mask = this->n_slots - 1;
    for (size_t s = (size_t)key_hash(key) & mask;; s = (s + 1) & mask) {
        int t = this->slots[s];
        if (t < 0 || strcmp(this->tasks[t].key, key) == 0) return s;
    }
}

static void rehash(History *this, size_t n_slots) {
    free(this->slots);
    this->slots = xrealloc(NULL, n_slots * sizeof *this->slots);
    this->n_slots = n_slots;
    for (size_t s = 0; s < n_slots; s++)
        this->slots[s] = -1;
    for (int t = 0; t < this->n_tasks; t++)
        this->slots[slot_of(this, this->tasks[t].key)] = t;
}

const HistoryTask *History_find(const History *this, const char *task_key) {
    if (!this->n_slots) return NULL;
    int t = this->slots[slot_of(this, task_key)];
    return t < 0 ? NULL : &this->tasks[t];
}

static HistoryTask *task_for(History *this, const Record *rec) {
    if (this->n_slots) {
        int t = this->slots[slot_of(this, rec->task_key)];
        if (t >= 0) return &this->tasks[t];
    }
    if (this->n_tasks == this->cap) {
        this->cap = this->cap ? this->cap * 2 : 8;
        this->tasks = xrealloc(this->tasks, (size_t)this->cap * sizeof *this->tasks);
    }
    HistoryTask *task = &this->tasks[this->n_tasks++];
    memset(task, 0, sizeof *task);
    snprintf(task->key, sizeof task->key, "%s", rec->task_key);
    snprintf(task->template_name, sizeof task->template_name, "%s", rec->template_name);
    task->best = -1;
    /* keep the index at most half full */
    if ((size_t)this->n_tasks * 2 > this->n_slots)
        rehash(this, this->n_slots ? this->n_slots * 2 : 64);
    else
        this->slots[slot_of(this, task->key)] = this->n_tasks - 1;
    return task;
}

/* Takes ownership of rec's contents (rec is left initialised and empty). */
static void add_taken(History *this, Record *rec) {
    HistoryTask *task = task_for(this, rec);
    if (task->n_records == task->cap) {
        task->cap = task->cap ? task->cap * 2 : 16;
        task->records = xrealloc(task->records, (size_t)task->cap * sizeof *task->records);
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
        double m = Record_mean(r);
        /* strictly lower: on a tie the earlier record stays best */
        if (isfinite(m) && (task->best < 0 || m < Record_mean(&task->records[task->best]))) task->best = i;
    }
    this->n_records++;
}

void History_add(History *this, const Record *rec) {
    Record copy;
    Record_init(&copy);
    Record_copy(&copy, rec);
    add_taken(this, &copy);
}

Status History_load(History *this, const char *path, char *err) {
    History_init(this);
    LogReader *r;
    if (LogReader_open(path, &r, &this->header, err)) return TT_ERR;
    Record rec;
    Record_init(&rec);
    LogReadStatus st;
    while ((st = LogReader_next(r, &rec, this->end_msg)) == LOG_RECORD)
        add_taken(this, &rec);
    Record_done(&rec);
    this->end = st;
    this->good_offset = LogReader_goodOffset(r);
    this->unchecked = LogReader_uncheckedRecords(r);
    LogReader_close(r);
    if (st == LOG_END) this->end_msg[0] = '\0';
    if (st == LOG_DAMAGED) return tt_fail(err, "%s", this->end_msg);
    return TT_OK;
}

const Record *HistoryTask_best(const HistoryTask *this) { return this->best < 0 ? NULL : &this->records[this->best]; }
