/* records/codec.h: the msgpack form of a Record and of the log header, as
 * used by records/log.c, records/history.c and the tests. Record_encode and
 * Record_toJson are declared in records/record.h.
 *
 * Record_encode cuts an error message longer than REC_MSG_MAX bytes (a whole
 * compiler log) and marks the cut with "... [truncated]", so that one record
 * always stays far below LOG_MAX_RECORD, the size above which a reader calls
 * an object damage rather than a torn tail.
 */
#ifndef TT_RECORDS_CODEC_H
#define TT_RECORDS_CODEC_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "records/log.h"
#include "records/record.h"

#define REC_MSG_MAX (64 * 1024)
#define LOG_MAX_RECORD (1024 * 1024)

/* Walks the msgpack object at p[0..n) without decoding or allocating.
 * SCAN_COMPLETE: it is whole, *len = its length. SCAN_INCOMPLETE: more bytes
 * are needed. SCAN_INVALID: *len = the position of a byte that cannot start
 * a value (0xc1). The log reader runs it before the unpacker sees an object,
 * so that a corrupt element count can never make the unpacker allocate
 * gigabytes (each element takes at least one byte). */
typedef enum { SCAN_COMPLETE = 0, SCAN_INCOMPLETE, SCAN_INVALID } ScanResult;
ScanResult Msgpack_scan(const unsigned char *p, size_t n, size_t *len);

/* True when p[0..n) can be the beginning of a record as Record_encode writes
 * it: a map (fixmap, or map16 of fewer than 256 keys) whose first key is "task" (or "kind": a session or
 * steer object, records/session.h). A torn tail must pass this test;
 * anything else at the end of a log is damage. */
bool Record_isPrefix(const unsigned char *p, size_t n);

/* Decodes one record from bytes holding exactly one msgpack object. rec must be
 * initialised (its previous error_msg is released). TT_ERR says what is wrong. */
Status Record_decode(const char *bytes, size_t len, Record *rec, char *err);

/* The same from an already unpacked object; TT_ERR when it is not a record map
 * (missing required key, wrong type, a string too long for its field). */
Status Record_fromObject(const msgpack_object *obj, Record *rec, char *err);

/* The header object: encoding (malloc'd bytes, caller frees) and decoding.
 * LogHeader_fromObject fails with a sentence when obj is not a tunetop header. */
Status LogHeader_encode(const LogHeader *this, char **bytes, size_t *len, char *err);
Status LogHeader_fromObject(const msgpack_object *obj, LogHeader *out, char *err);

#endif
