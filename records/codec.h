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
#include <stddef.h>

#include "base/status.h"
#include "records/log.h"
#include "records/record.h"

#define REC_MSG_MAX (64 * 1024)
#define LOG_MAX_RECORD (1024 * 1024)

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
