/* ui/model.h: what the terminal UI knows about a session, apart from any
 * drawing. The same model is fed by a live engine (EV_RESULT records and
 * Engine_snapshot rows) and by `tunetop view LOG` (the log's records), so
 * both show the same table, curves and error groups.
 *
 * Per task: every measured trial as a point (trial number, GFLOPS, error),
 * the best so far, the failed candidates (deep copies of their records)
 * grouped by error class and reason. Per session: the estimated total
 * latency over time.
 *
 * Ownership: the model owns everything it holds. UiModel_addRecord copies
 * what it keeps; the caller still owns the Record it passes. No curses here,
 * no threads: only the UI thread touches a model. */
#ifndef TT_UI_MODEL_H
#define TT_UI_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records/record.h"
#include "tuner/engine.h"
#include "tuner/task.h"

#define UI_REASON_LEN 96
#define UI_NO_REQUEST (-100)

typedef struct UiPoint {
    int trial;    /* 1-based trial number of the task */
    float t;      /* seconds since the first record of the log or session (wall time of the trial) */
    float gflops; /* 0 for a failed trial */
    int8_t error_no;
} UiPoint;

#define UI_REASON_SLOTS 8

/* Failures group by error class and reason "shape": the reason with its
 * numbers taken out, so "shared memory 54 KiB > 48 KiB" and "shared memory
 * 96 KiB > 48 KiB" are one group shown as "shared memory 54-96 KiB > 48 KiB". */
typedef struct UiErrGroup {
    int error_no;
    char key[UI_REASON_LEN];    /* the reason with each number replaced by '#' */
    char reason[UI_REASON_LEN]; /* for display: numbers as the range seen, e.g. "shared memory 54-96 KiB > 48 KiB" */
    int n_slots;                /* numbers in the reason (at most UI_REASON_SLOTS tracked) */
    double lo[UI_REASON_SLOTS], hi[UI_REASON_SLOTS];
    int count;
    int *members; /* indices into UiTask.fails, in arrival order */
    int n_members, cap_members;
} UiErrGroup;

typedef struct UiTask {
    int id;
    char key[REC_KEY_LEN];
    char template_name[REC_NAME_LEN]; /* "" when unknown (a live task's is task->tmpl's) */
    char label[64];
    double flops, weight;
    const Task *task; /* for regenerating sources; NULL when unknown (not owned) */

    UiPoint *points; /* every result in arrival order */
    int n_points, cap_points;
    Record *fails; /* deep copies of failed records */
    Record best;   /* deep copy of the best record seen here (task_key "" when none): the best page (b) */
    int n_fails, cap_fails;
    UiErrGroup *groups; /* in order of first appearance: indices are stable (UiTask_groupOrder sorts) */
    int n_groups, cap_groups;

    /* scheduler row: in a session from the engine's snapshots only, in a view derived from the log's records */
    TaskRow row;
    int want_paused;    /* -1 none; 0/1 while a pause/resume request is not yet in a snapshot */
    bool want_stop;     /* a stop asked for and not yet in a snapshot */
    int want_priority;  /* UI_NO_REQUEST, or a priority asked for and not yet in a snapshot */
    bool from_log;      /* read from a log (`tunetop view`): no live state */
    bool tagged;        /* Space: steering keys and curves act on every tagged task */
    char strategy[256]; /* the strategy's latest status line (EV_STRATEGY), "" if none */
} UiTask;

typedef struct UiSample {
    double t;     /* seconds since the session started */
    double value; /* estimated total latency, seconds */
} UiSample;

typedef struct UiModel {
    UiTask *tasks;
    int n_tasks;
    /* header */
    char target[16];
    char device[128];
    char tuner[32];
    bool live; /* a session (steerable) rather than a log view */
    double elapsed_s;
    int trials, budget;
    double trials_per_s;
    int building, measuring;
    int next_task;
    bool finished;
    double est_latency_s; /* +inf while a task that can still get a result has none */
    int est_left_out;     /* tasks left out of the estimate (paused, stopped or done without a result) */
    bool all_paused;      /* the engine has every task paused (P) */
    int want_all_paused;  /* -1 none; 0/1 while a P request is not yet in a snapshot */
    double first_est_s;   /* the first finite estimate (for "how it has moved"), or the one when the
                             estimate last came to cover more tasks (est_rebased) */
    int est_covers;       /* tasks the live estimate covers (0: no estimate yet) */
    bool est_rebased;     /* first_est_s is where the estimate came to cover est_covers tasks */
    double active_s;      /* session seconds with a task that can run (not every one paused) */
    double last_elapsed_s;
    /* session series */
    UiSample *latency;
    int n_latency, cap_latency;
    double latency_offset;   /* seconds from the first session in LOG.tsv to this one (0: none before) */
    uint64_t dropped_events; /* events the engine dropped (queue full): curves may miss points */
    /* view mode: time base of records */
    double first_ts;
} UiModel;

void UiModel_init(UiModel *this);
/* Seconds until the budget is spent at the session's rate over the time it
 * ran: frozen while every task is paused; < 0 when unknown or finished. */
double UiModel_eta(const UiModel *this);
void UiModel_done(UiModel *this);

/* Adds a task (the model copies the strings). `task` may be NULL. Returns its index. */
int UiModel_addTask(UiModel *this, int id, const char *key, const char *label, double flops, double weight,
                    const Task *task);
/* Index of the task with this id / key, -1 if none. */
int UiModel_findId(const UiModel *this, int id);
int UiModel_findKey(const UiModel *this, const char *key);
/* The task of this key and template (NULL or "": any; records/record.h
 * Record_sameTask), or -1. */
int UiModel_findTask(const UiModel *this, const char *key, const char *template_name);

/* One trial of task index ti: a point (trial is the task's 1-based trial
 * number, <= 0: the next one; timestamp in unix seconds) and, for a failure
 * (error_no != 0), the record copied into the error groups. The row is left
 * alone: a live session's rows come from the engine's snapshots only. */
void UiModel_addTrial(UiModel *this, int ti, int trial, double timestamp, double gflops, int error_no,
                      const Record *failure);
/* A record of a log (the view): UiModel_addTrial, then the row derived from
 * it (trials, errors, best, roof). Returns true when this trial improved the
 * task's best. */
bool UiModel_addRecord(UiModel *this, int ti, const Record *rec, int trial, double gflops);

/* Copies the rows and header figures of a snapshot (rows matched by id). */
void UiModel_applySnapshot(UiModel *this, const SessionSnapshot *snap);

/* Appends a point to the latency series (skips +inf and repeats of the same value at close times). */
void UiModel_addLatency(UiModel *this, double t, double latency_s);
/* Earlier sessions' estimates from a log's LOG.tsv (unix_time, session_s,
 * trials, est_latency_ms, task per line), so the latency curve continues
 * across resumes: their points go first, at their seconds since the first
 * line, and latency_offset shifts this session's (which started at
 * session_start unix seconds) behind them. Returns the points added (0 when
 * the file is missing). */
int UiModel_loadLatencyTsv(UiModel *this, const char *path, double session_start);

/* The estimate over the rows (tuner/event.h: LatencyEstimate): a task
 * without a result is left out (counted in *left_out, which may be NULL) when
 * it cannot get one now: read from a log, paused, stopped or done. */
double UiModel_estimate(const UiModel *this, int *left_out);
/* The task's GFLOPS are effective GFLOPS (a Winograd task: the direct
 * convolution's FLOPs over the time): its row says so, or (a log) its best
 * record's template is such a template (kernels/template.h Template_effective). */
bool UiTask_effective(const UiTask *this);
/* Task ti has an alternative in its group (row.group) with a lower best: the
 * network runs that one (the table dims this one's best). */
bool UiModel_outrun(const UiModel *this, int ti);
/* The lower bound: sum of weight x the latency at each task's roof; 0 when a
 * task has no roof. */
double UiModel_roofLatency(const UiModel *this);

/* The grouping reason of an error message: the first line that says
 * "error" (else the first non-empty line), with a leading "file:line:col:"
 * location and "error:" prefix removed, trimmed to n-1 bytes. */
void Ui_errorReason(const char *msg, char *out, size_t n);
/* Splits a reason into its shape (numbers replaced by '#', key) and its
 * numbers (at most max); a number is a digit run not glued to a name (so
 * "sm_80" and "k12.c" stay literal). Returns how many numbers it found. */
int Ui_reasonShape(const char *reason, char *key, size_t n, double *nums, int max);

/* The source line a compiler message names: "k12.c:34:5: error" or
 * "(34): error" -> 34. 0 when none is named. */
int Ui_failingLine(const char *msg);

/* Group indices by count, largest first (ties: first seen first) into order
 * (n_groups ints); returns n_groups. */
int UiTask_groupOrder(const UiTask *this, int *order);

/* Best-so-far GFLOPS after each point of a task, into out (n_points values). */
void UiTask_bestSoFar(const UiTask *this, double *out);

#endif
