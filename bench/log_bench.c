/* bench/log_bench.c: what the record checksum costs `tunetop best`.
 *
 *   log_bench [--records N] [--repeat R] [--dir DIR]
 *
 * Writes a log of N realistic records (default 1,000,000: task keys, knob
 * choices, config text, three costs, timings, every 5th an error with a
 * message) with the real writer, then loads it whole into a History
 * (History_load: read, check, decode, group by task) R times (default 5)
 * with the CRC-32C check on and off, alternating, and prints the median
 * records per second of each (process CPU time) and their ratio. The same
 * file is read both ways (from the page cache), so the difference is the
 * checksum alone. Then, as a figure free of the loader's noise, the CRC-32C
 * alone over the file's bytes, against the median load time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include "base/clock.h"
#include "bench/log_gen.h"
#include "records/crc32c.h"
#include "records/history.h"
#include "records/log.h"

/* CPU seconds of this process: the load is single-threaded, and on a shared
 * machine CPU time is far steadier than wall time. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    long n = 1000000;
    int repeat = 5;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
            n = atol(argv[++i]);
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else {
            fprintf(stderr, "usage: log_bench [--records N] [--repeat R] [--dir DIR]\n");
            return 2;
        }
    }
    if (n < 1 || repeat < 1 || repeat > 99) return 2;
    char path[512];
    snprintf(path, sizeof path, "%s/tt-log-bench-%d.log", dir, (int)getpid());
    unlink(path);
    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    if (LogWriter_open(path, "cpu", &w, &trunc, err)) {
        fprintf(stderr, "log_bench: %s\n", err);
        return 1;
    }
    Record r;
    Record_init(&r);
    double t0 = clock_mono();
    for (long i = 0; i < n; i++) {
        LogGen_record(&r, i, 20);
        if (LogWriter_append(w, &r, err)) {
            fprintf(stderr, "log_bench: %s\n", err);
            return 1;
        }
    }
    Record_done(&r);
    LogWriter_close(w);
    struct stat st;
    stat(path, &st);
    printf("log: %ld records, %.1f MB, written in %.2f s\n", n, st.st_size / 1e6, clock_mono() - t0);

    double on[100], off[100];
    for (int k = 0; k < repeat; k++) {
        for (int pass = 0; pass < 2; pass++) { /* alternate, so drift hits both alike */
            bool check = (k + pass) % 2 == 0;
            Log_setChecksumVerification(check);
            History h;
            double s = cpu_s();
            Status ok = History_load(&h, path, err);
            double dt = cpu_s() - s;
            if (ok != TT_OK || h.n_records != (size_t)n || h.unchecked != 0) {
                fprintf(stderr, "log_bench: read %zu records (%s)\n", h.n_records, ok ? err : "ok");
                return 1;
            }
            History_done(&h);
            (check ? on : off)[k] = n / dt;
            printf("  run %d checksum %-3s %.3f s  %.0f records/s\n", k + 1, check ? "on" : "off", dt, n / dt);
        }
    }
    Log_setChecksumVerification(true);
    qsort(on, (size_t)repeat, sizeof on[0], cmp);
    qsort(off, (size_t)repeat, sizeof off[0], cmp);
    double mon = on[repeat / 2], moff = off[repeat / 2];
    printf("median of %d: checksum on %.0f records/s, off %.0f records/s: the check costs %.2f%% of the rate\n", repeat,
           mon, moff, 100.0 * (1 - mon / moff));

    /* the checksum's own cost: CRC-32C over every byte of the file, from memory */
    FILE *f = fopen(path, "rb");
    char *bytes = malloc((size_t)st.st_size);
    if (!f || !bytes || fread(bytes, 1, (size_t)st.st_size, f) != (size_t)st.st_size) return 1;
    fclose(f);
    double best = 1e30;
    uint32_t sink = 0;
    for (int k = 0; k < repeat; k++) {
        double s = cpu_s();
        sink ^= Crc32c_update(0, bytes, (size_t)st.st_size);
        double dt = cpu_s() - s;
        if (dt < best) best = dt;
    }
    free(bytes);
    printf(
        "CRC-32C alone over the %.1f MB: %.4f s (%.2f GB/s, crc %08x) = %.2f%% of the median checked load (%.3f s)\n",
        st.st_size / 1e6, best, st.st_size / best / 1e9, sink, 100.0 * best / (n / mon), n / mon);
    unlink(path);
    return 0;
}
