/* tests/fuzz/fuzz_common.h: what the libFuzzer harnesses share. Each harness
 * checks a property, and a broken property aborts (libFuzzer keeps the input
 * as a crash file). */
#ifndef TT_FUZZ_COMMON_H
#define TT_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records/codec.h"
#include "records/log.h"
#include "records/record.h"

#define PROPERTY(cond, ...)                                                                                            \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "property broken at %s:%d: %s: ", __FILE__, __LINE__, #cond);                              \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

/* Every record of the log in bytes[0..len), as JSON lines (one string,
 * malloc'd), with the end status and the offset where good data ends.
 * Returns the number of records, -1 when the header does not open. */
static inline int fuzz_read_all(const void *bytes, size_t len, char **json, LogReadStatus *end, off_t *good) {
    LogReader *rd;
    LogHeader h;
    char err[TT_ERRLEN];
    *json = NULL;
    if (LogReader_openBuffer(bytes, len, "fuzz", &rd, &h, err) != TT_OK) return -1;
    size_t cap = 256, used = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    Record rec;
    Record_init(&rec);
    int n = 0;
    LogReadStatus st;
    while ((st = LogReader_next(rd, &rec, err)) == LOG_RECORD) {
        char *j = Record_toJson(&rec);
        size_t k = strlen(j);
        if (used + k + 2 > cap) {
            while (used + k + 2 > cap)
                cap *= 2;
            out = realloc(out, cap);
        }
        memcpy(out + used, j, k);
        used += k;
        out[used++] = '\n';
        out[used] = '\0';
        free(j);
        n++;
    }
    Record_done(&rec);
    *end = st;
    *good = LogReader_goodOffset(rd);
    LogReader_close(rd);
    *json = out;
    return n;
}

#endif
