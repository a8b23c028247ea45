/* ui/logview.h: builds the UI model from a record log, for `tunetop view`,
 * and follows the log while another session appends to it.
 *
 * Tasks are rebuilt from each record's task key (Workload_parse + Task_init
 * with the log target's device info) so that the error inspector can
 * regenerate sources; a task whose template is unknown here still shows,
 * without sources. The log's last session object (records/session.h) gives
 * the task IDs and weights, as the live session showed them; its steer
 * objects give each task's pause, stop and priority. An older log without
 * them lists tasks in the order of their first record, with weight 1.
 * A task list given from outside the log (UiLogView_openTasks: a model's, as
 * `tasks --model` numbers it) takes the place of the log's sessions: its
 * tasks are the table's first rows, with its IDs and weights, measured or
 * not, and the log's records of other workloads are left out (counted).
 *
 * Ownership: the view owns the rebuilt tasks; the UiState it fills keeps
 * pointers to them, so UiLogView_done must come after the last render. */
#ifndef TT_UI_LOGVIEW_H
#define TT_UI_LOGVIEW_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/status.h"
#include "kernels/target.h"
#include "records/log.h"
#include "records/tvmlog.h"
#include "tuner/task.h"
#include "ui/state.h"

typedef struct UiLogView {
    char path[1024];
    LogHeader header;
    LogReader
        *reader;  /* tunetop's log, kept open after the last complete object: a poll reads only what was appended */
    long records; /* records shown */
    long reloads; /* times the file was read again from its start (replaced, or cut below what was read) */
    LogFileChange change; /* what the last poll found (LOG_FILE_SAME when nothing) */
    Task **tasks;         /* per model task: the rebuilt Task or NULL (owned) */
    int n_tasks;
    const Target *target; /* NULL when the log's target is unknown here */
    bool torn;            /* the file ends inside a record (a writer is mid-write, or a crash) */
    char note[TT_ERRLEN]; /* what to tell the user about the target / device / tail */
    /* TVM's logs (records/tvmlog.h): format, the reader kept open to follow the file */
    TvmFormat format; /* TVM_FMT_TUNETOP for tunetop's own log */
    TvmReader *tvm;
    TvmRecord *tvm_rec;
    long bad_lines;         /* malformed lines skipped */
    long imported;          /* records imported from TVM into a tunetop log: counted, not shown as measured */
    const LogSession *list; /* the task list given to UiLogView_openTasks (not owned), or NULL */
    long left_out;          /* with a task list: records of other workloads, not shown */
} UiLogView;

/* Reads the whole log into st->model (st should be freshly initialised).
 * TT_ERR with one sentence for a missing, unreadable, non-tunetop or
 * damaged log. */
Status UiLogView_open(UiLogView *this, UiState *st, const char *path, char *err);
/* The same for a log of a given format (TVM_FMT_UNKNOWN: detected from the
 * content): tunetop's, AutoTVM's, the auto-scheduler's or a MetaSchedule work
 * directory. A TVM log's unfinished last line is waited for (torn is set). */
Status UiLogView_openFormat(UiLogView *this, UiState *st, const char *path, TvmFormat fmt, char *err);
/* The same for tunetop's log with a task list given from outside it (not
 * owned; it must outlive the view): its tasks are the rows and IDs. TT_ERR
 * for a TVM log. */
Status UiLogView_openTasks(UiLogView *this, UiState *st, const char *path, TvmFormat fmt, const LogSession *tasks,
                           char *err);
/* Reads what was appended since the last call: tunetop's log from where the
 * last complete object ended (each byte is read once), a TVM log from its
 * last complete line. A tunetop log replaced by another file, or cut below
 * what was read, is read again from its start (the model rebuilt; `change`
 * says which). Returns how many records were added, or -1 (err set) when
 * the log became unreadable or damaged. */
int UiLogView_poll(UiLogView *this, UiState *st, char *err);
void UiLogView_done(UiLogView *this);

#endif
