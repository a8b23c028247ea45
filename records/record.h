/* records/record.h: one measurement, as written to and read from the log.
 *
 * The log is an append-only file of msgpack objects: one header map, then one
 * map per measurement (see records/log.h). Records are plain values: a
 * Record owns its heap strings (error_msg, steps) and Record_done frees them.
 *
 * Encoded keys (msgpack map, string keys, stable across versions):
 *   "task" str, "tmpl" str, "target" str, "index" uint, "choice" [int...],
 *   "config" str (human text), "costs" [float64...], "err" int, "msg" str,
 *   "build_s" f64, "run_s" f64, "pack_s" f64, "ts" f64 (unix time),
 *   "regs" int, "spills" int, "smem" int, "lmem" int (GPU resources; absent = -1),
 *   "src" str, "src_cost" f64 (only on a record imported from another tuner's
 *   log, see records/tvmimport.h: where it came from and the mean cost it had
 *   there, in seconds; such a record has no costs of its own: it was never
 *   measured on this machine)
 *   "roof" f64 (the task's roofline in GFLOP/s for the session's threads on the
 *   machine that measured it), "roof_mem" int (0 = compute-bound, else the
 *   memory level that bounds it: 2 L2, 3 L3, 4 DRAM), "mkey" str
 *   (that machine's key, kernels/targets/machine.h); all three absent = no roof known
 *   "host" str, "rank" int, "dev" str: the host name, the MPI rank (0 for a
 *   session of one process) and the device that built and measured it (absent
 *   in logs of older versions: unknown)
 *   "steps" str (a schedule of a tensor expression, space/steps.h text form:
 *   replaying it gives the candidate's loop nest; absent for template configs)
 * A reader ignores keys it does not know, so later versions may add keys.
 */
#ifndef TT_RECORDS_RECORD_H
#define TT_RECORDS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define REC_KEY_LEN 192
#define REC_NAME_LEN 64
#define REC_MAX_KNOBS 16
#define REC_MAX_COSTS 16
#define REC_CONFIG_LEN 256
#define REC_SRC_LEN 96
#define REC_HOST_LEN 64
#define REC_DEV_LEN 128

typedef struct Record {
    char task_key[REC_KEY_LEN]; /* Workload_key */
    char template_name[REC_NAME_LEN];
    char target[16];
    uint64_t index; /* flat config index */
    int n_choice;
    int32_t choice[REC_MAX_KNOBS];
    char config[REC_CONFIG_LEN]; /* Space_format text */
    int n_costs;
    double costs[REC_MAX_COSTS]; /* seconds */
    int error_no;                /* MeasureErrorNo */
    char *error_msg;             /* owned, NULL if none */
    double build_s, run_s, pack_s, timestamp;
    int regs, spills; /* -1 = not measured */
    int64_t shared_bytes, local_bytes;
    char src[REC_SRC_LEN];    /* "" = measured by tunetop; else the import source ("autotvm cuda_v0.10.log:12") */
    double src_cost;          /* imported: the source's mean cost in seconds (measured elsewhere) */
    double roof_gflops;       /* 0 = not known */
    int roof_bound;           /* 0 = compute-bound, else the memory level: 2 L2, 3 L3, 4 DRAM */
    char machine_key[17];     /* "" = not known */
    char host[REC_HOST_LEN];  /* "" = not known (an older log) */
    int rank;                 /* -1 = not known */
    char device[REC_DEV_LEN]; /* "" = not known */
    char *steps;              /* owned: the schedule's steps (space/steps.h text), NULL for a template config */
} Record;

/* True for a record imported from another tuner's log (never measured here). */
static inline bool Record_isImported(const Record *this) { return this->src[0] != '\0'; }

void Record_init(Record *this);                   /* zeroes, resources -1 */
void Record_done(Record *this);                   /* frees error_msg and steps */
void Record_copy(Record *dst, const Record *src); /* deep copy; dst must be initialised or done */
void Record_setError(Record *this, int error_no, const char *msg);

/* The record's latency in seconds: the median of its costs (each cost a
 * repeat's mean run time; with an even count the mean of the middle two), so
 * one repeat that a busy machine preempted does not move it; +inf when
 * error_no != 0 or no costs. */
double Record_cost(const Record *this);
/* A task is a workload (task key) under one template: true when (key, tmpl)
 * and (key2, tmpl2) name the same task; an empty or NULL template matches any
 * (older objects without one). */
bool Record_sameTask(const char *key, const char *tmpl, const char *key2, const char *tmpl2);
/* flops / Record_cost / 1e9, 0 when the record is an error. */
double Record_gflops(const Record *this, double flops);

/* Encoding to a caller-owned byte buffer (malloc'd, *len bytes; free it). */
Status Record_encode(const Record *this, char **bytes, size_t *len, char *err);

/* The JSON form (one object, one line, no trailing newline) used by `tunetop dump`. */
char *Record_toJson(const Record *this); /* malloc'd */
struct StrBuf;
/* The same, appended to out (base/strbuf.h): a reused buffer for many records. */
void Record_appendJson(const Record *this, struct StrBuf *out);

#endif
