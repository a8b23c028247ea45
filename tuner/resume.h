/* tuner/resume.h: what a record log holds for a session's tasks.
 *
 * Resume_read reads the log once, start to end, through the log's reader
 * (records/log.h), and returns what a session needs to go on where the log
 * left off; the engine applies it (tuner/engine.c) and nothing else reads the
 * log for a session. Per task of the session (matched by task key and
 * template):
 *   - the configs already measured (the visited set), once each: a record of
 *     a config seen before is a duplicate and ignored;
 *   - the results to replay into the task's strategy (index and GFLOPS, file
 *     order) and its tally (trials, errors, best), as the engine keeps them;
 *   - the rounds those trials stand for, at the session's batch;
 *   - the user's last steering (pause, priority, stop), the last steer object
 *     of the task winning;
 *   - the configs imported from another tuner's log (records/tvmimport.h) not
 *     measured here yet, to be measured first, cheapest first;
 *   - with `transfer`, the records of earlier sessions' tasks of the same
 *     template found in the log (the transfer rows of StrategyContext);
 * and for the observers, every restored trial in file order (ResumeTrial),
 * so that the UI's curves and error inspector cover the whole history
 * without reading the log again.
 *
 * For a template whose candidates are entries of a table the search fills
 * (Template.adopt: te.sketch's schedules), each measured record's candidate
 * is handed back to the template, the one change Resume_read makes outside
 * *this, so that the search knows every measured schedule again.
 *
 * Records of other tasks (or beyond a task's space) are counted as foreign
 * and kept in the file. A torn tail stops reading where the good data ends
 * (torn_at); damage is an error and nothing is returned.
 *
 * Ownership: a Resume owns everything in it; the engine takes what it keeps
 * (visited sets, transfer rows and their tasks, trials) by moving the
 * pointers out and zeroing them, and Resume_done frees the rest. No printing,
 * no threads: Resume_read changes nothing but *this. */
#ifndef TT_TUNER_RESUME_H
#define TT_TUNER_RESUME_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/status.h"
#include "records/record.h"
#include "space/space.h"
#include "tuner/task.h"

/* A task's counts and best, from its records: the one rule for the engine's
 * live results and for the records a resume reads. */
typedef struct TaskTally {
    int trials;          /* records (errors included) */
    int errors;          /* records with an error */
    int successes;       /* records without one (compile-only ones included) */
    double best_latency; /* seconds, +inf when none */
    double best_gflops;
    double current_gflops; /* of the latest timed success */
    uint64_t best_index;
} TaskTally;

void TaskTally_init(TaskTally *this);
/* Adds one result (gflops: Record_gflops of it); true when it is a new best
 * (strictly lower mean latency: on a tie the earlier record stays best). */
bool TaskTally_add(TaskTally *this, const Record *rec, double gflops);

/* Results as a strategy takes them: config indices and their GFLOPS. */
typedef struct ResumeRows {
    uint64_t *index;
    double *gflops;
    int n, cap;
} ResumeRows;

typedef struct ResumeTask {
    TaskTally tally;
    VisitedSet visited;   /* measured configs and the queued imported ones */
    ResumeRows replay;    /* the results for the strategy, file order */
    int rounds;           /* ceil(trials / batch) */
    bool steered;         /* a steer object names the task; then: */
    bool paused, stopped; /* paused is false when stopped */
    int priority;
    uint64_t *seeds; /* imported configs to measure first, the first to measure LAST */
    int n_seeds, cap_seeds;
    uint64_t *xfer_index; /* n_xfer transfer rows (with `transfer`) */
    double *xfer_gflops;
    const Task **xfer_task; /* into Resume.xtasks */
    int n_xfer;
} ResumeTask;

/* One restored trial, for the observers. */
typedef struct ResumeTrial {
    int task;         /* session task id */
    int trial;        /* the task's 1-based trial number */
    double timestamp; /* unix seconds of the record */
    double gflops;    /* 0 for errors */
    int error_no;
    bool best;           /* a new best of the task when it was recorded */
    Record *failure;     /* the whole record when it failed (error_no != 0), else NULL; owned */
    Record *best_record; /* the whole record when it was a new best (the UI's best page), else NULL; owned */
} ResumeTrial;

typedef struct Resume {
    ResumeTask *tasks; /* one per session task, same order */
    int n_tasks;
    Task *xtasks; /* earlier sessions' tasks (transfer); owned */
    int n_xtasks;
    ResumeTrial *trials; /* file order; owned */
    int n_trials, cap_trials;
    int restored;             /* measured records restored (n_trials) */
    int foreign;              /* records of other tasks, or beyond a task's space */
    int seeded;               /* imported configs queued */
    int unadopted;            /* measured records of a table-named template whose candidate did not come back */
    off_t torn_at;            /* where a torn tail starts, -1 when the log ended cleanly */
    char unclosed[TT_ERRLEN]; /* LogReader_unclosedNote: the last session ended without its close marker */
} Resume;

/* Reads the log at path for the n tasks. batch: the session's round size (for
 * rounds); transfer: collect earlier sessions' tasks (rebuilt for family and
 * dev). TT_ERR for a log that cannot be opened or is damaged: then *this is
 * empty (still call Resume_done). */
Status Resume_read(Resume *this, const char *path, const Task *tasks, int n, int batch, bool transfer,
                   TargetFamily family, const DeviceInfo *dev, char *err);
/* The one-line summary a resumed session shows ("" when nothing was restored):
 * "resumed PATH: N measured configs of T tasks restored; task 0: ...". */
void Resume_summary(const Resume *this, const char *path, char *out, size_t len);
void Resume_done(Resume *this);
/* Frees n trials (their failure records) and the array. */
void ResumeTrials_free(ResumeTrial *trials, int n);

#endif
