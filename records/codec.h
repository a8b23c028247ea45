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

/* How deeply containers nest in the whole object at p[0..n): 0 for a scalar,
 * 1 for a flat map, 2 for a record (a map holding arrays). Stops counting at
 * limit + 1 (limit at most MSGPACK_MAX_DEPTH). The reader refuses objects
 * nested deeper than LOG_MAX_DEPTH before the unpacker, whose stack is
 * MSGPACK_EMBED_STACK_SIZE (32) deep, could fail on them. */
#define MSGPACK_MAX_DEPTH 64
#define LOG_MAX_DEPTH 16
int Msgpack_depth(const unsigned char *p, size_t n, int limit);

/* Msgpack_scan and Msgpack_depth in one pass, as the log reader needs
 * both: the same result and *len as Msgpack_scan, and on SCAN_COMPLETE
 * *depth = Msgpack_depth(p, *len, limit). */
ScanResult Msgpack_scanDepth(const unsigned char *p, size_t n, size_t *len, int limit, int *depth);

/* Checksums. The log writer seals every object it writes (the header and
 * each record): one more map entry, the key "crc" and a uint32 written as
 * 0xce + 4 big-endian bytes, is appended, and its value is the CRC-32C of all
 * the object's bytes before those 4 (the map's count, every key and value,
 * and the "crc" key itself). So a flipped bit anywhere in a record, a number
 * included, fails the check; readers that do not know the key ignore it.
 * A map written by an older version has no seal (SEAL_NONE). */
#define SEAL_LEN 9 /* 0xa3 "crc" 0xce b0 b1 b2 b3 */
typedef enum { SEAL_NONE = 0, SEAL_OK, SEAL_BAD } SealState;
/* Appends the seal to the encoded map in *bytes (realloc'd; the map count
 * grows by one, a fixmap of 15 becoming a map16). TT_ERR when it is not a map. */
Status Msgpack_seal(char **bytes, size_t *len, char *err);
/* The seal of the whole object p[0..len). On SEAL_BAD, *stored and *computed
 * (may be NULL) receive both checksums. */
SealState Msgpack_checkSeal(const unsigned char *p, size_t len, uint32_t *stored, uint32_t *computed);
/* Chaining (format version 2): before its seal, the writer appends two more
 * entries to every object, "seq" (0xcf + 8 bytes: the record's number in its
 * session, 1 for the first; for the header, a session object and a steer or
 * close object, the records of the session so far) and "prev" (0xce + 4
 * bytes: the seal of the object before it, 0 when that had none), so that a
 * duplicated, reordered or missing record is damage. Fixed widths: a reader
 * finds both at the end of the object without decoding it. */
#define CHAIN_LEN 23 /* 0xa3 "seq" 0xcf 8 bytes, 0xa4 "prev" 0xce 4 bytes */
Status Msgpack_chain(char **bytes, size_t *len, uint64_t seq, uint32_t prev, char *err);
/* The chain entries of a sealed object; false when it carries none. */
bool Msgpack_chainOf(const unsigned char *p, size_t len, uint64_t *seq, uint32_t *prev);
/* The stored checksum of a sealed object, 0 when it has no seal. */
uint32_t Msgpack_sealValue(const unsigned char *p, size_t len);
/* The kind of an object from its first entry, without decoding: 1 session,
 * 2 steer, 3 close (the marker of a clean stop), 0 anything else (a record). */
int Msgpack_kindOf(const unsigned char *p, size_t n);
/* Record_encode, then Msgpack_seal: a record exactly as the log writer writes it. */
Status Record_encodeSealed(const Record *this, char **bytes, size_t *len, char *err);
/* True when p[0..n) ends with the bytes of a seal: the end of a whole record
 * as the writer writes it (a torn write never ends there). */
bool Msgpack_endsWithSeal(const unsigned char *p, size_t n);
/* The same with one of the seal's 5 type and key bytes changed: a whole
 * record whose seal itself was damaged into a longer type. */
bool Msgpack_endsNearSeal(const unsigned char *p, size_t n);

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
/* The number in o (float or integer) as a double; else "key \"name\" is not a number". */
Status Msgpack_number(const msgpack_object *o, const char *name, double *out, char *err);

/* The same straight from the bytes of one whole object, as the log reader
 * returns them (Msgpack_scan said it is complete and valid, and it nests at
 * most LOG_MAX_DEPTH deep), without unpacking or allocating: the same
 * record, or the same error, as Record_fromObject on the unpacked object.
 * When the map has a "kind" key it is a session or steer object
 * (records/session.h): *has_kind is set, nothing is decoded, and the caller
 * unpacks it. */
Status Record_fromBytes(const unsigned char *p, size_t n, Record *rec, bool *has_kind, char *err);

/* The header object: encoding (malloc'd bytes, caller frees) and decoding.
 * LogHeader_fromObject fails with a sentence when obj is not a tunetop header. */
Status LogHeader_encode(const LogHeader *this, char **bytes, size_t *len, char *err);
Status LogHeader_fromObject(const msgpack_object *obj, LogHeader *out, char *err);

#endif
