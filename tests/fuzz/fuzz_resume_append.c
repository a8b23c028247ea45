/* tests/fuzz/fuzz_resume_append.c: `tune --log EXISTING` on any bytes: the
 * writer opens the file (resume), appends two records and closes it. The
 * file is a memfd (no temporary files). Properties: when the writer refuses,
 * the file is byte for byte what it was; when it accepts, the file reads to
 * its end and holds the records a reader found before the writer touched it
 * (up to a torn tail, which is cut), then the two new ones. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests/fuzz/fuzz_common.h"

static void make(Record *r, int i) {
    Record_init(r);
    snprintf(r->task_key, sizeof r->task_key, "dense:m=1,n=%d,k=8", 8 + i);
    snprintf(r->template_name, sizeof r->template_name, "dense.cpu");
    snprintf(r->target, sizeof r->target, "cpu");
    r->index = (uint64_t)i;
    r->n_costs = 1;
    r->costs[0] = 1e-6 * (i + 1);
}

static char *slurp_fd(int fd, size_t *len) {
    off_t n = lseek(fd, 0, SEEK_END);
    char *b = malloc((size_t)n + 1);
    *len = pread(fd, b, (size_t)n, 0) == n ? (size_t)n : 0;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz-log", MFD_CLOEXEC);
    if (fd < 0) abort();
    if (size && write(fd, data, size) != (ssize_t)size) abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

    char *before;
    LogReadStatus end;
    off_t good;
    int n = fuzz_read_all(data, size, &before, &end, &good);

    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    Status st = LogWriter_open(path, "cpu", &w, &trunc, err);
    size_t len;
    char *after = slurp_fd(fd, &len);
    if (st != TT_OK) {
        PROPERTY(len == size && (size == 0 || memcmp(after, data, size) == 0), "refused (%s) but the file changed",
                 err);
    } else {
        PROPERTY(size == 0 || (n >= 0 && end != LOG_DAMAGED), "accepted a log the reader calls damaged (%d, %d)", n,
                 end);
        Record r;
        for (int i = 0; i < 2; i++) {
            make(&r, i);
            PROPERTY(LogWriter_append(w, &r, err) == TT_OK, "%s", err);
            Record_done(&r);
        }
        LogWriter_close(w);
        free(after);
        after = slurp_fd(fd, &len);
        char *json;
        off_t good2;
        int n2 = fuzz_read_all(after, len, &json, &end, &good2);
        PROPERTY(end == LOG_END && (size_t)good2 == len, "after appending: end %d at %jd of %zu", end, (intmax_t)good2,
                 len);
        PROPERTY(n2 == (n > 0 ? n : 0) + 2, "after appending: %d records, %d before", n2, n);
        PROPERTY(n <= 0 || strncmp(json, before, strlen(before)) == 0, "the records before changed");
        free(json);
    }
    free(after);
    free(before);
    close(fd);
    return 0;
}
