/* records/summary.h: a log read once, front to back, into what `tunetop best`
 * prints: per task, its best record, its best imported record and counts.
 * Memory grows with the number of tasks, not of records (a History, see
 * records/history.h, keeps every record).
 *
 * Tasks are in the same ID order as a History's: the task list of the log's
 * last session object first, in its order, then tasks only earlier sessions
 * or older logs knew, in the order the log first mentions them. The best and
 * the counts are the ones History keeps (the lowest Record_cost among
 * error_no == 0, the first on a tie).
 *
 * Ownership: the LogSummary owns its tasks and their records;
 * LogSummary_done frees them.
 */
#ifndef TT_RECORDS_SUMMARY_H
#define TT_RECORDS_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/keyindex.h"
#include "base/status.h"
#include "records/history.h"
#include "records/log.h"
#include "records/record.h"
#include "records/session.h"

typedef struct SummaryTask {
    char key[REC_KEY_LEN];            /* task key, as in the records */
    char template_name[REC_NAME_LEN]; /* of the task's first record (or its session entry) */
    long n_records;
    long n_errors;                         /* records with error_no != 0 */
    long errno_count[HISTORY_ERRNO_SLOTS]; /* as HistoryTask's: [0] = successful records */
    long n_built;                          /* successful records without costs (compile-only sessions) */
    long n_imported;                       /* imported records (Record_isImported) */
    bool has_best, has_best_imported;
    Record best;                /* lowest Record_cost among error_no == 0 (the first on a tie); valid when has_best */
    Record best_imported;       /* lowest src_cost among imported records (the first on a tie) */
    double weight;              /* from the last session object that lists the task; 1 when none does */
    char network[REC_NAME_LEN]; /* its network there ("" for a --task or an older log) */
    bool steered;
    LogSteer steer; /* the task's last steering state, when steered */
} SummaryTask;

typedef struct LogSummary {
    LogHeader header;
    SummaryTask *tasks; /* n_tasks, ID order after LogSummary_load; owned */
    int n_tasks;
    int cap;
    size_t n_records;
    LogReadStatus end;        /* LOG_END, LOG_TORN or LOG_DAMAGED: how reading stopped */
    off_t good_offset;        /* where the good data ends */
    long unchecked;           /* records without a checksum (written before checksums existed) */
    char end_msg[TT_ERRLEN];  /* the reader's sentence for LOG_TORN / LOG_DAMAGED, else "" */
    char unclosed[TT_ERRLEN]; /* LogReader_unclosedNote, or "" */
    KeyIndex index;           /* task key -> entry of tasks */
} LogSummary;

/* Reads the log at path, as History_load does (same statuses and messages):
 * TT_OK when it was read to its end or to a torn tail; TT_ERR when it cannot
 * be opened or is not a log (nothing read), or is damaged (end ==
 * LOG_DAMAGED, err names the offset, the records before the damage count).
 * The caller calls LogSummary_done in every case. */
Status LogSummary_load(LogSummary *this, const char *path, char *err);
void LogSummary_done(LogSummary *this);

/* A task is a key under one template (records/history.h). The first task
 * with this key (any template), or NULL. */
const SummaryTask *LogSummary_find(const LogSummary *this, const char *task_key);
/* The task of this key and template (NULL or "": any), or NULL. */
const SummaryTask *LogSummary_findTemplate(const LogSummary *this, const char *task_key, const char *template_name);

/* The best record of the key over all its templates (History_bestOfKey's), or NULL. */
const Record *LogSummary_bestOfKey(const LogSummary *this, const char *task_key);

/* Puts the tasks in the order of a task list given from outside the log (a
 * model's, as `tasks --model` numbers it): the list's tasks first, task i is
 * the list's task i with its weight and network (one the log has no record of
 * is there, empty); then the log's tasks of the list's workloads under
 * another template, with their workload's weight. The log's tasks of other
 * workloads are dropped: *other_tasks and *other_records count them. */
void LogSummary_useTasks(LogSummary *this, const LogSession *list, int *other_tasks, long *other_records);

#endif
