/* records/tvmlog.h: reading TVM's own tuning logs.
 *
 * Formats, told apart by their content (TvmLog_detect):
 *  - AutoTVM records, one JSON object per line: {"input": [target, task_name,
 *    args, kwargs], "config": {"index", "code_hash", "entity": [[knob, kind,
 *    value], ...]}, "result": [costs, error_no, all_cost, timestamp], ...}, and
 *    the older compact form {"i": [target, task_name, args, kwargs, workload,
 *    config], "r": [...], "v": 0.1} whose config has "i" (index) and "e"
 *    (entity) keys. Both may be mixed in one file.
 *  - auto-scheduler records: {"i": [[workload_key, target, ...], [[], steps]],
 *    "r": [costs, error_no, all_cost, timestamp], "v": "v0.6"}.
 *  - a MetaSchedule work directory: database_workload.json (a line per
 *    workload: [structural hash, module]) and database_tuning_record.json (a
 *    line per record: [workload_index, [trace, run_secs, target, args_info]]).
 *    A record without a run time, or with MetaSchedule's 1e10 s "failed"
 *    marker, is a failure (error 8, UNKNOWN_ERROR: no reason is stored).
 *  - tunetop's own msgpack log (records/log.h), reported as TVM_FMT_TUNETOP so
 *    that callers can hand it to LogReader instead.
 *
 * Lines that start with '#' are comments (TopHub logs open with one) and are
 * skipped, as TVM's own loader does. Lines are parsed with yajl (records/tvmjson.h), one at a time: a reader holds one
 * line, never the file. A line that is not a record of the format is skipped and counted (TVM_BAD, with its line
 * number). A last line without its newline is a record when it parses; otherwise it is TVM_PARTIAL: a writer may be in
 * the middle of it, and after TvmReader_follow the next call reads it again with whatever has been appended.
 *
 * Nothing here prints; every failure is a Status with a sentence.
 */
#ifndef TT_RECORDS_TVMLOG_H
#define TT_RECORDS_TVMLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/keyindex.h"
#include "base/status.h"
#include "records/record.h"

typedef enum {
    TVM_FMT_UNKNOWN = 0,
    TVM_FMT_TUNETOP,      /* tunetop's msgpack log */
    TVM_FMT_AUTOTVM,      /* AutoTVM JSON lines (full and compact forms) */
    TVM_FMT_ANSOR,        /* auto-scheduler JSON lines */
    TVM_FMT_METASCHEDULE, /* MetaSchedule work directory */
} TvmFormat;

const char *TvmFormat_name(TvmFormat f); /* "tunetop", "autotvm", "autoscheduler", "metaschedule" */
/* Parses a --format value ("tunetop", "autotvm", "autoscheduler" or "ansor", "metaschedule"). */
Status TvmFormat_parse(const char *s, TvmFormat *out, char *err);

/* Which format path holds (a directory is a MetaSchedule work directory when
 * it has database_tuning_record.json). TT_ERR with one sentence when the path
 * is missing, empty, or of no known format. */
Status TvmLog_detect(const char *path, TvmFormat *out, char *err);
/* The same for the contents of a file in bytes[0..len) (name names it in
 * err). MetaSchedule records are refused: they are read from a directory. */
Status TvmLog_detectMemory(const void *bytes, size_t len, const char *name, TvmFormat *out, char *err);

#define TVM_MAX_ARGS 10
#define TVM_MAX_DIMS 8
#define TVM_MAX_KNOBS 16
#define TVM_TARGET_LEN 64
#define TVM_TASK_LEN 64

typedef enum { TVM_ARG_TENSOR = 0, TVM_ARG_INTS, TVM_ARG_INT, TVM_ARG_STR, TVM_ARG_OTHER } TvmArgKind;

/* One argument of an AutoTVM task: a tensor (shape in v, dtype in s), a list of
 * ints (strides, padding, dilation), an int, or a string (layout, dtype). */
typedef struct TvmArg {
    TvmArgKind kind;
    int n;
    int64_t v[TVM_MAX_DIMS];
    char s[24];
} TvmArg;

/* One knob of an AutoTVM config entity: ["tile_f", "sp", [-1, 2, 8, 1]]. */
typedef struct TvmKnob {
    char name[32];
    char kind[4]; /* "sp", "re", "an", "ot", ... */
    bool is_list; /* v holds n ints (a split, a reorder) */
    bool is_int;  /* v[0] is the value (an option) */
    int n;
    int64_t v[TVM_MAX_DIMS];
} TvmKnob;

typedef struct TvmRecord {
    TvmFormat format;
    long line;                   /* 1-based line number in its file */
    char target[TVM_TARGET_LEN]; /* "cuda -model=titanx", "llvm -mcpu=skylake" (cut to fit) */
    char task[TVM_TASK_LEN]; /* "conv2d_nchw.cuda"; auto-scheduler: the workload's hash; MetaSchedule: "workload N" */
    char key[REC_KEY_LEN];   /* the workload: task name and arguments (what `best` groups by) */
    int n_args;
    TvmArg args[TVM_MAX_ARGS]; /* AutoTVM task arguments; MetaSchedule args_info tensors */
    bool has_index;
    int64_t index; /* the config index TVM stored (AutoTVM) */
    int n_knobs;
    TvmKnob knobs[TVM_MAX_KNOBS]; /* AutoTVM entity */
    char config[REC_CONFIG_LEN];  /* human text of the config */
    int n_costs;
    double costs[REC_MAX_COSTS]; /* seconds */
    int error_no;                /* TVM's MeasureErrorNo (0 = measured) */
    double all_cost, timestamp;
} TvmRecord;

/* Mean of the costs in seconds; +inf when error_no != 0, there is none, or
 * one is not a latency (<= 0, NaN or infinite: TvmRecord_costFault says
 * which), so that such a record is never a best. */
double TvmRecord_mean(const TvmRecord *this);
/* Why a record without an error has no usable cost: 0 it has one, 1 a cost
 * <= 0 (TVM writes -1 for some failures), 2 a NaN or infinite cost, 3 no cost. */
int TvmRecord_costFault(const TvmRecord *this);
extern const char *const TVM_COST_FAULTS[4];

/* The record as a tunetop Record for the viewers (task key = rec->key, the
 * TVM task name as template, costs and error as they are). */
void TvmRecord_toRecord(const TvmRecord *this, Record *out);

/* One line of the JSON form printed by `tunetop dump` for a TVM record
 * (format, line, target, task, workload key, index, config, costs, err,
 * all_cost, ts). malloc'd. */
char *TvmRecord_toJson(const TvmRecord *this);

typedef enum {
    TVM_RECORD = 0, /* rec holds the next record */
    TVM_END,        /* end of the data (for now, when following) */
    TVM_PARTIAL,    /* the file ends inside a line (msg says where); the line is kept for later */
    TVM_BAD,        /* a malformed line was skipped (msg: "line N: why") */
    TVM_IOERR,      /* reading failed (msg says why); final */
} TvmReadStatus;

typedef struct TvmReader TvmReader;

/* Opens path in format fmt (not TVM_FMT_TUNETOP: use LogReader for that). For a
 * MetaSchedule directory the workload file is read here (it grows with
 * workloads, not records) and records come from the tuning-record file. */
Status TvmReader_open(const char *path, TvmFormat fmt, TvmReader **out, char *err);
/* Reads the AutoTVM or auto-scheduler lines in bytes[0..len) (kept by the
 * caller until TvmReader_close; name names them in messages), with the same
 * parsing as a file: an unfinished last line is TVM_PARTIAL unless it parses,
 * and TvmReader_follow does nothing (the bytes do not grow). */
Status TvmReader_openMemory(const void *bytes, size_t len, const char *name, TvmFormat fmt, TvmReader **out, char *err);
TvmReadStatus TvmReader_next(TvmReader *this, TvmRecord *rec, char *msg);
/* After TVM_END or TVM_PARTIAL, lets the next call read what was appended since. */
void TvmReader_follow(TvmReader *this);
long TvmReader_lines(const TvmReader *this);        /* complete lines consumed so far */
long TvmReader_bad(const TvmReader *this);          /* malformed lines skipped so far */
long TvmReader_partialBytes(const TvmReader *this); /* bytes of an unfinished last line held back */
void TvmReader_close(TvmReader *this);

/* ---- best per workload, streaming: memory grows with workloads, not lines ---- */

typedef struct TvmTaskSummary {
    char key[REC_KEY_LEN];
    char task[TVM_TASK_LEN];
    char target[TVM_TARGET_LEN];
    long n_records, n_errors;
    long errno_count[10]; /* per TVM error number, the last slot shared by 9 and above */
    double best_mean;     /* +inf when none succeeded */
    long cost_faults[4];  /* records without an error whose cost is no latency, by TvmRecord_costFault */
    long best_line;
    bool best_has_index;
    int64_t best_index;
    char best_config[REC_CONFIG_LEN];
} TvmTaskSummary;

typedef struct TvmSummary {
    TvmFormat format;
    TvmTaskSummary *tasks; /* first-seen order */
    int n_tasks, cap;
    long n_records, n_bad;
    int n_task_names; /* distinct TVM task names */
    char **task_names;
    KeyIndex index; /* key -> entry of tasks */
} TvmSummary;

void TvmSummary_init(TvmSummary *this, TvmFormat fmt);
void TvmSummary_add(TvmSummary *this, const TvmRecord *rec);
void TvmSummary_done(TvmSummary *this);

#endif
