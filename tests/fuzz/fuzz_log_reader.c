/* tests/fuzz/fuzz_log_reader.c: the log reader over any bytes.
 * Properties: it never crashes or reads past the data; the good offset is
 * within the data; a log read to its end ends exactly at its last byte; and
 * the records it returned, written again the way the writer writes them,
 * make a log that reads to the end and gives the same records back. */
#include <stdint.h>

#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *json;
    LogReadStatus end;
    off_t good;
    int n = fuzz_read_all(data, size, &json, &end, &good);
    if (n < 0) return 0;
    PROPERTY(good >= 0 && (size_t)good <= size, "good offset %jd of %zu bytes", (intmax_t)good, size);
    PROPERTY(end != LOG_END || (size_t)good == size, "END at %jd of %zu bytes", (intmax_t)good, size);

    /* write what was read again, as the writer writes it */
    LogReader *rd;
    LogHeader h;
    char err[TT_ERRLEN];
    PROPERTY(LogReader_openBuffer(data, size, "fuzz", &rd, &h, err) == TT_OK, "%s", err);
    size_t cap = 4096, used = 0;
    char *out = malloc(cap), *bytes;
    size_t len;
    h.version = LOG_FORMAT_VERSION;
    PROPERTY(LogHeader_encode(&h, &bytes, &len, err) == TT_OK && Msgpack_seal(&bytes, &len, err) == TT_OK, "%s", err);
    memcpy(out, bytes, len);
    used = len;
    free(bytes);
    Record rec;
    Record_init(&rec);
    while (LogReader_next(rd, &rec, err) == LOG_RECORD) {
        PROPERTY(Record_encodeSealed(&rec, &bytes, &len, err) == TT_OK, "a record the reader accepted: %s", err);
        if (used + len > cap) {
            while (used + len > cap)
                cap *= 2;
            out = realloc(out, cap);
        }
        memcpy(out + used, bytes, len);
        used += len;
        free(bytes);
    }
    Record_done(&rec);
    LogReader_close(rd);
    char *json2;
    off_t good2;
    int n2 = fuzz_read_all(out, used, &json2, &end, &good2);
    PROPERTY(n2 == n && end == LOG_END && (size_t)good2 == used, "rewritten: %d of %d records, end %d", n2, n, end);
    PROPERTY(strcmp(json, json2) == 0, "rewritten records differ:\n%s\nvs\n%s", json, json2);
    free(json2);
    free(json);
    free(out);
    return 0;
}
