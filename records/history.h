/* records/history.h: a whole log in memory, grouped by task (key and template).
 *
 * Used by `tunetop best`, `export`, `run` and `distill`, and the tests (a
 * session's resume reads the log through tuner/resume.h, `view` through
 * ui/logview.h; all of them with records/log.h's reader).
 *
 * Tasks are in ID order: the task list of the log's last session object
 * (records/session.h) first, in its order, so task i here is task i of that
 * session; then tasks only earlier
 * sessions or older logs knew, in the order the log first mentions them.
 * Each task's records keep file order.
 *
 * Ownership: the History owns every HistoryTask and Record in it;
 * History_done frees them all. Pointers returned by History_find stay valid
 * until History_done.
 */
#ifndef TT_RECORDS_HISTORY_H
#define TT_RECORDS_HISTORY_H

#include <stddef.h>
#include <sys/types.h>

#include "base/keyindex.h"
#include "base/status.h"
#include "records/log.h"
#include "records/record.h"

/* error numbers 0..HISTORY_ERRNO_SLOTS-2 are counted one by one; larger ones
 * (from a later version) share the last slot */
#define HISTORY_ERRNO_SLOTS 10

typedef struct HistoryTask {
    char key[REC_KEY_LEN];            /* task key, as in the records */
    char template_name[REC_NAME_LEN]; /* of the task's first record */
    Record *records;                  /* n_records, file order; owned */
    int n_records;
    int cap;
    int best; /* index into records of the lowest Record_cost among error_no == 0 (the first on a tie); -1 if none */
    int n_errors;                         /* records with error_no != 0 */
    int errno_count[HISTORY_ERRNO_SLOTS]; /* records per error number; [0] = successful records */
    double weight;                        /* from the last session object that lists the task; 1 when none does */
    char network[REC_NAME_LEN];           /* its network there ("" for a --task or an older log) */
    const LogSteer *steer; /* the task's last steering state (into History.steers), NULL if never steered */
} HistoryTask;

typedef struct History {
    LogHeader header;
    HistoryTask *tasks; /* n_tasks, first-seen order; owned */
    int n_tasks;
    int cap;
    size_t n_records;
    LogSession session; /* the last session object (n_tasks == 0 when the log has none) */
    int n_sessions;     /* session objects in the log */
    LogSteer *steers;   /* every steer object, file order; owned */
    int n_steers;
    LogReadStatus end;        /* LOG_END, LOG_TORN or LOG_DAMAGED: how reading stopped */
    off_t good_offset;        /* where the good data ends */
    long unchecked;           /* records without a checksum (written before checksums existed) */
    char end_msg[TT_ERRLEN];  /* the reader's sentence for LOG_TORN / LOG_DAMAGED, else "" */
    char unclosed[TT_ERRLEN]; /* LogReader_unclosedNote, or "" */
    KeyIndex index;           /* task key -> entry of tasks */
} History;

/* An empty history (no header: header.version == 0). */
void History_init(History *this);

/* Initialises this and loads every record of the log at path. Returns TT_OK when the log was read
 * to its end or to a torn tail (end says which; end_msg describes the tear).
 * Returns TT_ERR when the file cannot be opened or is not a log (nothing
 * loaded), or is damaged: then err names the byte offset, and the records
 * before the damage are loaded (end == LOG_DAMAGED). In every case the caller
 * calls History_done afterwards. */
Status History_load(History *this, const char *path, char *err);
void History_done(History *this);

/* A task is a workload (its key) under one template: conv2d 3x3 stride 1
 * tuned with the direct and the Winograd template is two tasks (a group of
 * alternatives, tuner/task.h). The first task with this key (any template), or NULL. */
const HistoryTask *History_find(const History *this, const char *task_key);
/* The task of this key and template (NULL or "": any), or NULL. */
const HistoryTask *History_findTemplate(const History *this, const char *task_key, const char *template_name);
/* The best record of the key over all its templates (what a network runs), or NULL. */
const Record *History_bestOfKey(const History *this, const char *task_key);

/* The best record of a task, or NULL when it has no successful record. */
const Record *HistoryTask_best(const HistoryTask *this);

#endif
