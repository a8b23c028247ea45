/* tests/fuzz/fuzz_tvm_reader.c: the AutoTVM and auto-scheduler JSON-lines
 * readers (records/tvmlog.c) and format detection, over the input's bytes
 * (TvmLog_detectMemory and TvmReader_openMemory: the line splitting and
 * parsing of a file, without a file). Properties: reading always ends; every
 * line is a record, a malformed line or the unfinished last one; a best is
 * always a positive, finite latency; every record converts to JSON and to a
 * tunetop Record. */
#include <math.h>
#include <stdint.h>

#include "records/tvmlog.h"
#include "tests/fuzz/fuzz_common.h"

static void read_as(const uint8_t *data, size_t size, TvmFormat fmt) {
    TvmReader *r;
    char err[TT_ERRLEN];
    PROPERTY(TvmReader_openMemory(data, size, "fuzz.log", fmt, &r, err) == TT_OK, "cannot open the input: %s", err);
    TvmRecord *rec = malloc(sizeof *rec);
    TvmSummary s;
    TvmSummary_init(&s, fmt);
    Record out;
    Record_init(&out);
    long records = 0;
    TvmReadStatus st;
    while ((st = TvmReader_next(r, rec, err)) != TVM_END && st != TVM_PARTIAL) {
        if (st != TVM_RECORD) continue;
        records++;
        TvmSummary_add(&s, rec);
        char *j = TvmRecord_toJson(rec);
        PROPERTY(j != NULL, "a record without JSON");
        free(j);
        TvmRecord_toRecord(rec, &out);
        PROPERTY(records <= TvmReader_lines(r) + 1, "%ld records from %ld lines", records, TvmReader_lines(r));
    }
    PROPERTY(s.n_records == records, "summary holds %ld of %ld records", s.n_records, records);
    for (int i = 0; i < s.n_tasks; i++)
        PROPERTY(isinf(s.tasks[i].best_mean) || (isfinite(s.tasks[i].best_mean) && s.tasks[i].best_mean > 0),
                 "a best latency of %g", s.tasks[i].best_mean);
    Record_done(&out);
    TvmSummary_done(&s);
    free(rec);
    TvmReader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    TvmFormat f;
    char err[TT_ERRLEN];
    if (TvmLog_detectMemory(data, size, "fuzz.log", &f, err) != TT_OK)
        PROPERTY(err[0] && !strchr(err, '\n'), "refused without a line");
    read_as(data, size, TVM_FMT_AUTOTVM);
    read_as(data, size, TVM_FMT_ANSOR);
    return 0;
}
