/* records/session.h: the log's objects other than measurements.
 *
 * Besides the header and the Records, a log holds two kinds of objects, each
 * a msgpack map whose FIRST key is "kind" (so a torn one is recognised as the
 * start of an object the writer writes, see Record_isPrefix):
 *
 *   session  {"kind": "session", "ts": f64, "network": str,
 *             "tasks": [{"task": str, "tmpl": str, "weight": f64, "net": str}, ...]}
 *            written when a session starts: its task list in ID order (task i
 *            has ID i), so every command shows the IDs the live session showed,
 *            and the weights, so a view estimates what the session estimated.
 *   steer    {"kind": "steer", "ts": f64, "task": str, "tmpl": str,
 *            "paused": bool, "priority": int, "stopped": bool}
 *            a task's steering state after the user changed it; the last one of
 *            a task wins, and a resumed session restores it.
 *
 * A reader that predates these objects would call them damage; the readers
 * of this version yield them through LogReader_nextEntry, and LogReader_next
 * (records only) skips them. Logs without them read as before.
 *
 * Ownership: a LogSession owns its task array (LogSession_done frees it).
 */
#ifndef TT_RECORDS_SESSION_H
#define TT_RECORDS_SESSION_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/keyindex.h"
#include "base/status.h"
#include "records/record.h"

#define LOG_MAX_SESSION_TASKS 4096

typedef struct LogSessionTask {
    char key[REC_KEY_LEN];
    char template_name[REC_NAME_LEN];
    double weight;
    char network[REC_NAME_LEN]; /* "" for a --task */
} LogSessionTask;

typedef struct LogSession {
    double timestamp;
    char network[REC_NAME_LEN]; /* "" when the tasks were given one by one */
    LogSessionTask *tasks;      /* n_tasks, ID order; owned */
    int n_tasks;
} LogSession;

typedef struct LogSteer {
    double timestamp;
    char key[REC_KEY_LEN];
    char template_name[REC_NAME_LEN];
    bool paused, stopped;
    int priority; /* -3..+3 */
} LogSteer;

typedef enum { LOG_OBJ_RECORD = 0, LOG_OBJ_SESSION, LOG_OBJ_STEER } LogObjectKind;

/* One object of the log as LogReader_nextEntry yields it: `kind` says which
 * member is filled. Initialise with LogEntry_init, release with LogEntry_done. */
typedef struct LogEntry {
    LogObjectKind kind;
    Record rec;
    LogSession session;
    LogSteer steer;
} LogEntry;

void LogEntry_init(LogEntry *this);
void LogEntry_done(LogEntry *this);

void LogSession_init(LogSession *this);
void LogSession_done(LogSession *this);
void LogSession_copy(LogSession *dst, const LogSession *src); /* dst initialised or done */
/* Appends a task (copying the strings). */
void LogSession_addTask(LogSession *this, const char *key, const char *tmpl, double weight, const char *network);

/* A log's task table put in ID order, the session's list first: order[i] is
 * the entry that goes to position i (the session's tasks found in the index,
 * in the session's order, then the others as they were) and from[i] the
 * session task it matched, or -1. Both arrays hold n_entries (malloc'd; the
 * caller frees); false, with nothing allocated, when the session lists none. */
bool LogSession_order(const LogSession *this, const KeyIndex *index, const void *entries, int n_entries, int **order,
                      int **from);

/* Encodings (malloc'd bytes, the caller frees). */
Status LogSession_encode(const LogSession *this, char **bytes, size_t *len, char *err);
Status LogSteer_encode(const LogSteer *this, char **bytes, size_t *len, char *err);

/* The kind of an unpacked object: a map whose "kind" key names one, else
 * LOG_OBJ_RECORD (a Record has no "kind"). TT_ERR when "kind" names a kind
 * this version does not know. */
Status LogObject_kind(const msgpack_object *obj, LogObjectKind *kind, char *err);
Status LogSession_fromObject(const msgpack_object *obj, LogSession *out, char *err);
Status LogSteer_fromObject(const msgpack_object *obj, LogSteer *out, char *err);

#endif
