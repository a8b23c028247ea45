/* records/log.h: the append-only, crash-safe record log.
 *
 * File: a header map {"format": "tunetop-log", "version": 2, "created": f64,
 * "target": str}, then Records. Since version 2 every object is chained to
 * the one before it and carries its sequence number (records/codec.h), and a
 * clean stop ends with a close marker {"kind": "close", "ts": f64} whose
 * sequence number is the session's record count; version 1 logs still read. Each record is written with ONE write(2) on
 * an O_APPEND descriptor; LogWriter_sync fsyncs (the engine calls it at the
 * end of every batch), so a crash loses at most the batch in flight.
 *
 * Only one writer at a time: LogWriter_open takes an exclusive, non-blocking
 * flock and fails with a clear message when another session holds it.
 *
 * Checksums: the writer seals the header and every record with a CRC-32C
 * (see Msgpack_seal in records/codec.h); a reader checks every sealed object
 * and calls a mismatch damage, at the object's byte offset, like any other.
 * Once the header or a record carried a checksum, every later object must:
 * a record without one is damage too. Logs written before checksums existed
 * still read, unchecked (LogReader_uncheckedRecords counts those records).
 * Decoding also refuses costs that are not finite and positive.
 *
 * Every open/write/fsync/ftruncate of the writer goes through the seam in
 * records/logio.h, where a test can make any one of them fail.
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
#define LOG_FORMAT_VERSION 2

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
/* The same over bytes in memory (not copied: they must outlive the reader);
 * name stands for the path in messages. For tests and fuzzing. */
Status LogReader_openBuffer(const void *bytes, size_t len, const char *name, LogReader **out, LogHeader *header,
                            char *err);
/* A memory reader sees only the first len bytes of its buffer; following it
 * (LogReader_follow) after a larger len reads what was "appended". */
void LogReader_setBufferLength(LogReader *this, size_t len);
/* Records read so far that carried no checksum (written before checksums). */
long LogReader_uncheckedRecords(const LogReader *this);
/* After the last object was read: whether the log's last session (the
 * records since the last session object, or the header) was ended by a
 * clean stop, which writes a close marker, and how many records it holds.
 * False when that session was written before logs carried sequence numbers
 * and close markers (format version 1): nothing is known then. */
bool LogReader_lastSession(const LogReader *this, bool *closed, long *records);
/* The same as one sentence for the user, after the last object was read:
 * true (and the sentence in note) when that session has no close marker
 * (a log that holds only its header is not told of). */
bool LogReader_unclosedNote(const LogReader *this, char *note, size_t cap);
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
 * record. After LOG_DAMAGED it reads the damaged object again: the same
 * bytes are the same damage, but whether bytes at the end of a file are a
 * torn record or damage can depend on where the file ends. */
void LogReader_follow(LogReader *this);
/* Bytes read from the file (or buffer) so far, the header included: a
 * follower reads each byte of a growing log once. */
long long LogReader_bytesRead(const LogReader *this);
/* What became of the file since the last check, for a follower (LogReader_follow
 * then reads what was appended). CHANGED: its size differs (grown, or a torn
 * tail cut off by a resuming writer); TRUNCATED: cut below the data already
 * read; REPLACED: the path names another file now (renamed over, deleted and
 * written anew); GONE: the path names nothing readable. For the last three the
 * reader cannot go on: open the path again. msg (may be NULL) receives one
 * sentence for them. */
typedef enum {
    LOG_FILE_SAME = 0,
    LOG_FILE_CHANGED,
    LOG_FILE_TRUNCATED,
    LOG_FILE_REPLACED,
    LOG_FILE_GONE
} LogFileChange;
LogFileChange LogReader_check(LogReader *this, char *msg);
/* For bench/log_bench only: with false, readers skip computing the CRC of
 * each object (its trailer is still recognised), to measure what the check
 * costs. Never switched off by tunetop itself. */
void Log_setChecksumVerification(bool on);
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
/* Appends one record, sealed with its checksum, with a single write(2).
 * On failure a partial record is cut off again, nothing is counted, and the
 * writer has failed for good: every later append and sync returns the same
 * error (the caller stops; nothing pretends success). */
Status LogWriter_append(LogWriter *this, const Record *rec, char *err);
/* Appends a session / steer object (records/session.h), sealed like a record,
 * one write(2) each; they are not counted as records. */
Status LogWriter_appendSession(LogWriter *this, const LogSession *s, char *err);
Status LogWriter_appendSteer(LogWriter *this, const LogSteer *s, char *err);
/* fsync, then checks that the path still names the open file (device and
 * inode): a log deleted, renamed or replaced while a session writes it is a
 * failure (LogWriter_moved), as is a failed fsync. Both are final. It also
 * checks (as every append does) the file's size and last bytes against the
 * writer's own offset and the bytes it wrote: a log copied over, cut or
 * appended to by another hand is a failure too (LogWriter_moved), and
 * LogWriter_saveCopy then writes the header and this writer's objects. */
Status LogWriter_sync(LogWriter *this, char *err);
/* Complete records in the file (restored ones included, the header not);
 * once another hand changed the file, the ones this writer wrote (what a
 * recovery copy holds). */
long LogWriter_records(LogWriter *this);
/* Of those, the ones written since the last successful sync. */
long LogWriter_unsynced(LogWriter *this);
bool LogWriter_failed(LogWriter *this);
bool LogWriter_moved(LogWriter *this);
/* Writes the file's complete contents, read from the open descriptor (a log
 * with no links left cannot be linked back), to a new file: PATH.recovered
 * (or .recovered.N), else in $TMPDIR or /tmp. dest receives its path. */
Status LogWriter_saveCopy(LogWriter *this, char *dest, size_t dest_len, char *err);
void LogWriter_close(LogWriter *this); /* syncs (unless it failed), unlocks, closes */
/* A clean stop: appends the close marker (the session's record count, see
 * LogReader_lastSession), syncs, and closes. On TT_ERR the writer is still
 * open (the caller closes it, and tells the error): the log then reads as a
 * session that ended without a close marker. */
Status LogWriter_closeMarked(LogWriter *this, char *err);

#endif
