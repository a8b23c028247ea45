/* records/log.h: the append-only, crash-safe record log.
 *
 * File: a header map {"format": "tunetop-log", "version": 1, "created": f64,
 * "target": str}, then Records. Each record is written with ONE write(2) on
 * an O_APPEND descriptor; LogWriter_sync fsyncs (the engine calls it at the
 * end of every batch), so a crash loses at most the batch in flight.
 *
 * Only one writer at a time: LogWriter_open takes an exclusive, non-blocking
 * flock and fails with a clear message when another session holds it.
 *
 * Reading: a torn last record (the file ends inside an object) is a normal
 * event, reported as LOG_TORN with the offset where the good data ends;
 * LogWriter_open on such a file truncates it there (and says so through
 * `truncated_at`). Any other damage (bytes that are not a record, a record of
 * the wrong type) is LOG_DAMAGED with the byte offset. Neither ever crashes
 * or silently skips.
 */
#ifndef TT_RECORDS_LOG_H
#define TT_RECORDS_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/status.h"
#include "records/record.h"
#include "records/session.h"

#define LOG_FORMAT_NAME "tunetop-log"
#define LOG_FORMAT_VERSION 1

typedef struct LogHeader {
    int version;
    double created;
    char target[16];
} LogHeader;

typedef enum { LOG_RECORD = 0, LOG_END, LOG_TORN, LOG_DAMAGED } LogReadStatus;

typedef struct LogReader LogReader;

/* Opens a log for reading and reads its header. TT_ERR (with the path in the
 * message) when missing, unreadable, empty, or not a tunetop log. */
Status LogReader_open(const char *path, LogReader **out, LogHeader *header, char *err);
/* Reads the next record into rec (initialised by the caller; previous
 * contents are released), skipping the session and steer objects. On
 * LOG_TORN / LOG_DAMAGED, msg names the offset. */
LogReadStatus LogReader_next(LogReader *this, Record *rec, char *msg);
/* Reads the next object of any kind (records/session.h) into e (initialised
 * by the caller with LogEntry_init); e->kind says which member holds it. */
LogReadStatus LogReader_nextEntry(LogReader *this, LogEntry *e, char *msg);
/* Following a log another session is still appending to: after LOG_END or
 * LOG_TORN (a record being written right now), makes the next LogReader_next
 * read whatever has been appended since, from the end of the last complete
 * record. LOG_DAMAGED stays final. */
void LogReader_follow(LogReader *this);
/* Offset just after the last complete record read. */
off_t LogReader_goodOffset(const LogReader *this);
void LogReader_close(LogReader *this);

typedef struct LogWriter LogWriter;

/* Opens (creating with a header if absent) a log for appending and locks it.
 * An existing log must be a tunetop log of the same target, else TT_ERR and
 * the file is left untouched. A torn tail is truncated; *truncated_at is set
 * to its offset (or -1 when the file was clean). Damage other than a torn
 * tail is an error: the file is never modified in that case. */
Status LogWriter_open(const char *path, const char *target, LogWriter **out, off_t *truncated_at, char *err);
/* Appends one record with a single write(2). */
Status LogWriter_append(LogWriter *this, const Record *rec, char *err);
/* Appends a session / steer object (records/session.h), one write(2) each. */
Status LogWriter_appendSession(LogWriter *this, const LogSession *s, char *err);
Status LogWriter_appendSteer(LogWriter *this, const LogSteer *s, char *err);
Status LogWriter_sync(LogWriter *this, char *err);
void LogWriter_close(LogWriter *this); /* syncs, unlocks, closes */

#endif
