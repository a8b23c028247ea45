/* tests/fuzz/fuzz_log_follow.c: a follower (`view` on a growing log) against
 * a fresh reader. The first byte of the input picks how the bytes arrive (a
 * few at a time, in steps of 1..256); the rest is the log. Property: the
 * follower returns exactly the records a fresh reader of the whole file
 * returns, and ends the same way (damage stays damage, at the same offset). */
#include <stdint.h>

#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t step = (size_t)data[0] + 1;
    data++, size--;
    char *json;
    LogReadStatus end;
    off_t good;
    int n = fuzz_read_all(data, size, &json, &end, &good);
    if (n < 0) return 0;

    /* the follower opens once the header is there */
    LogReader *rd;
    LogHeader h;
    char err[TT_ERRLEN];
    size_t visible = 0;
    while (LogReader_openBuffer(data, visible, "fuzz", &rd, &h, err) != TT_OK) {
        PROPERTY(visible < size, "the whole log opens but no prefix does");
        visible = visible + step < size ? visible + step : size;
    }
    size_t cap = 256, used = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    Record rec;
    Record_init(&rec);
    int got = 0;
    LogReadStatus st;
    for (;;) {
        while ((st = LogReader_next(rd, &rec, err)) == LOG_RECORD) {
            char *j = Record_toJson(&rec);
            size_t k = strlen(j);
            while (used + k + 2 > cap)
                cap *= 2;
            out = realloc(out, cap);
            memcpy(out + used, j, k);
            used += k;
            out[used++] = '\n';
            out[used] = '\0';
            free(j);
            got++;
        }
        if (visible == size) break; /* (damage found earlier stays, unless it depended on where the bytes ended) */
        visible = visible + step < size ? visible + step : size;
        LogReader_setBufferLength(rd, visible);
        LogReader_follow(rd);
    }
    off_t fgood = LogReader_goodOffset(rd);
    Record_done(&rec);
    LogReader_close(rd);
    PROPERTY(got == n && strcmp(out, json) == 0, "follower read %d records, fresh reader %d", got, n);
    PROPERTY(st == end, "follower ended %d, fresh reader %d", st, end);
    PROPERTY(fgood == good, "follower good offset %jd, fresh %jd", (intmax_t)fgood, (intmax_t)good);
    free(out);
    free(json);
    return 0;
}
