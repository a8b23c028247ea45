/* bench/tvmlog_bench.c: how fast `tunetop best` reads an AutoTVM log, and that
 * its memory grows with workloads, not lines.
 *
 *   tvmlog_bench [--lines N] [--workloads W] [--repeat R] [--no-python]
 *
 * Writes a synthetic AutoTVM log of N lines (default 400000) over W conv2d
 * workloads (default 200), lines shaped like TopHub's CUDA records (about 560
 * bytes), then times the `best` path (TvmReader + TvmSummary: every line
 * parsed with yajl into the reused tree) R times (default 5) and prints the median lines/s and
 * MB/s per CPU second of the process (the wall-clock figure beside it: on a
 * shared machine the wall clock also counts the other processes). The same is done for 4N lines of the same W workloads
 * in a child process each, whose peak RSS is printed beside: it stays flat when memory grows with workloads. The
 * reference, in the same run: Python's json.loads over the same file line by line (how TVM's own record reader reads a
 * log), unless --no-python or python3 is missing. Machine and load average printed at the end. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "records/tvmlog.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds of this process: on a shared machine the wall clock measures the others too */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long write_log(const char *path, long lines, int workloads) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    unsigned s = 12345;
    for (long i = 0; i < lines; i++) {
        int w = (int)(i % workloads);
        int co = 16 * (1 + w), ci = 32 * (1 + w % 8), hw = 7 << (w % 4);
        s = s * 1103515245u + 12345u;
        fprintf(f,
                "{\"input\": [\"cuda -model=titanx\", \"conv2d_nchw.cuda\", [[\"TENSOR\", [1, %d, %d, %d], "
                "\"float32\"], [\"TENSOR\", [%d, %d, 3, 3], \"float32\"], [1, 1], [1, 1, 1, 1], [1, 1], "
                "\"float32\"], {}], \"config\": {\"index\": %u, \"code_hash\": null, \"entity\": [[\"tile_f\", "
                "\"sp\", [-1, 2, 8, 1]], [\"tile_y\", \"sp\", [-1, 1, 7, 1]], [\"tile_x\", \"sp\", [-1, 1, 7, 1]], "
                "[\"tile_rc\", \"sp\", [-1, 4]], [\"tile_ry\", \"sp\", [-1, 1]], [\"tile_rx\", \"sp\", [-1, 3]], "
                "[\"auto_unroll_max_step\", \"ot\", 512], [\"unroll_explicit\", \"ot\", 1]]}, \"result\": "
                "[[%.10g], 0, 1.93, 1535423916.7184713], \"version\": 0.2, \"tvm_version\": \"0.7.dev0\"}\n",
                ci, hw, hw, co, ci, s % 100000000u, 1e-5 + (s % 1000) * 1e-7);
    }
    long size = ftell(f);
    fclose(f);
    return size;
}

/* One pass of the best path; returns CPU seconds (wall seconds in *wall), or -1. */
static double best_pass(const char *path, long *records, int *tasks, double *wall) {
    double t0 = cpu_now(), w0 = now();
    TvmReader *r;
    char err[TT_ERRLEN];
    if (TvmReader_open(path, TVM_FMT_AUTOTVM, &r, err) != TT_OK) {
        fprintf(stderr, "tvmlog_bench: %s\n", err);
        return -1;
    }
    TvmSummary s;
    TvmSummary_init(&s, TVM_FMT_AUTOTVM);
    TvmRecord *rec = malloc(sizeof *rec);
    TvmReadStatus st;
    while ((st = TvmReader_next(r, rec, err)) != TVM_END)
        if (st == TVM_RECORD)
            TvmSummary_add(&s, rec);
        else if (st == TVM_IOERR || st == TVM_PARTIAL)
            break;
    double t = cpu_now() - t0;
    *wall = now() - w0;
    *records = s.n_records;
    *tasks = s.n_tasks;
    free(rec);
    TvmSummary_done(&s);
    TvmReader_close(r);
    return t;
}

/* Peak RSS (KiB) of a child process that runs one best pass. */
static long child_rss(const char *path) {
    pid_t pid = fork();
    if (pid == 0) {
        long n;
        int t;
        double w;
        _exit(best_pass(path, &n, &t, &w) < 0 ? 1 : 0);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) return -1;
    return ru.ru_maxrss;
}

static const char *PY = "import json,sys,time\n"
                        "t=time.process_time();n=0\n"
                        "for line in open(sys.argv[1]):\n"
                        "    json.loads(line);n+=1\n"
                        "print(n/(time.process_time()-t))\n";

int main(int argc, char **argv) {
    long lines = 400000;
    int workloads = 200, repeat = 5;
    bool python = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--lines") == 0 && i + 1 < argc)
            lines = atol(argv[++i]);
        else if (strcmp(argv[i], "--workloads") == 0 && i + 1 < argc)
            workloads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-python") == 0)
            python = false;
        else {
            fprintf(stderr, "usage: tvmlog_bench [--lines N] [--workloads W] [--repeat R] [--no-python]\n");
            return 2;
        }
    }
    if (lines < 1 || workloads < 1 || repeat < 1) return 2;
    char dir[] = "/tmp/tvmlog_bench_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char small[128], big[128];
    snprintf(small, sizeof small, "%s/n.log", dir);
    snprintf(big, sizeof big, "%s/4n.log", dir);
    long bytes = write_log(small, lines, workloads), bytes4 = write_log(big, 4 * lines, workloads);
    if (bytes < 0 || bytes4 < 0) return 1;
    printf("AutoTVM log: %ld lines, %d workloads, %.1f MB (%.0f bytes/line)\n", lines, workloads, bytes / 1e6,
           (double)bytes / lines);

    double *t = malloc(sizeof(double) * (size_t)repeat), *wt = malloc(sizeof(double) * (size_t)repeat);
    long n = 0;
    int tasks = 0;
    for (int r = 0; r < repeat; r++)
        t[r] = best_pass(small, &n, &tasks, &wt[r]);
    qsort(t, (size_t)repeat, sizeof *t, cmp_d);
    qsort(wt, (size_t)repeat, sizeof *wt, cmp_d);
    double med = t[repeat / 2];
    printf("tunetop best path (yajl): median of %d: %.3f CPU s  %.0f lines/s  %.1f MB/s per CPU second "
           "(wall: median %.3f s, %.0f lines/s)  (%ld records, %d workloads)\n",
           repeat, med, lines / med, bytes / 1e6 / med, wt[repeat / 2], lines / wt[repeat / 2], n, tasks);
    long rss1 = child_rss(small), rss4 = child_rss(big);
    printf("peak RSS of one pass: %ld KiB at %ld lines, %ld KiB at %ld lines (same %d workloads)\n", rss1, lines, rss4,
           4 * lines, workloads);
    if (python) {
        char cmd[512];
        char py[128]; /* the script goes through a file: quoting it on a command line is fragile */
        snprintf(py, sizeof py, "%s/ref.py", dir);
        FILE *f = fopen(py, "w");
        if (f) {
            fputs(PY, f);
            fclose(f);
            snprintf(cmd, sizeof cmd, "python3 %s %s 2>/dev/null", py, small);
            double best = 0;
            for (int r = 0; r < 3; r++) {
                FILE *p = popen(cmd, "r");
                double v = 0;
                if (p && fscanf(p, "%lf", &v) == 1 && v > best) best = v;
                if (p) pclose(p);
            }
            if (best > 0)
                printf("reference: Python json.loads per line (as TVM reads its logs): best of 3 %.0f lines/s per CPU "
                       "second; tunetop %.1fx\n",
                       best, lines / med / best);
            else
                printf("reference: python3 not available\n");
            unlink(py);
        }
    }
    char host[256] = "";
    FILE *c = popen("lscpu | sed -n 's/^Model name: *//p'", "r");
    if (c && fgets(host, sizeof host, c)) host[strcspn(host, "\n")] = '\0';
    if (c) pclose(c);
    double la[3] = {0};
    getloadavg(la, 3);
    printf("machine: %s, %ld cores online; load average %.2f %.2f %.2f\n", host, sysconf(_SC_NPROCESSORS_ONLN), la[0],
           la[1], la[2]);
    unlink(small);
    unlink(big);
    rmdir(dir);
    free(t);
    free(wt);
    return 0;
}
