/* bench/log_read_bench.c: how fast `tunetop best` and `tunetop dump` read a
 * large log, and how much memory `best` takes.
 *
 *   log_read_bench [--tunetop PATH] [--reference PATH] [--records N] [--tasks T]
 *                  [--repeat R] [--dir DIR] [--keep]
 *
 * Writes a log of N records (default 1,000,000) over T tasks (default 20)
 * with tunetop's own writer (the records of bench/log_gen.h), and one of N/10
 * records over the same tasks. Then runs, R times (default 5), the tunetop
 * binary (default: the one of this build tree) as `best LOG` and
 * `dump LOG > /dev/null`, as child processes, and reads each one's wall
 * time, CPU time (user + system) and peak resident set size (wait4's
 * ru_maxrss). With --reference, a second tunetop binary (an older build) runs
 * the same commands on the same files, alternating with the first so that
 * drift on a shared machine hits both alike, and the ratios are printed.
 * Every run must exit 0. The N/10 log shows whether `best`'s memory grows
 * with the records (it should grow with the tasks only). Prints medians.
 * --keep leaves both logs in DIR (for profiling) and prints their paths. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "bench/log_gen.h"
#include "records/log.h"

typedef struct Run {
    double wall, cpu, rss_mb;
} Run;

/* Runs `exe cmd log` with stdout to /dev/null; 0 on exit status 0. */
static int run(const char *exe, const char *cmd, const char *log, Run *out) {
    double t0 = clock_mono();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127); /* stderr too: best warns on these made-up costs */
        execl(exe, exe, cmd, log, (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return -1;
    out->wall = clock_mono() - t0;
    out->cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec * 1e-6;
    out->rss_mb = (double)ru.ru_maxrss / 1024.0; /* kB on Linux */
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "log_read_bench: %s %s %s exited with %d\n", exe, cmd, log,
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

static int write_log(const char *path, long n, int tasks) {
    unlink(path);
    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    if (LogWriter_open(path, "cpu", &w, &trunc, err)) {
        fprintf(stderr, "log_read_bench: %s\n", err);
        return -1;
    }
    Record r;
    Record_init(&r);
    for (long i = 0; i < n; i++) {
        LogGen_record(&r, i, tasks);
        if (LogWriter_append(w, &r, err)) {
            fprintf(stderr, "log_read_bench: %s\n", err);
            Record_done(&r);
            LogWriter_close(w);
            return -1;
        }
    }
    Record_done(&r);
    LogWriter_close(w);
    return 0;
}

enum { BEST, DUMP, BEST_SMALL, N_CASES };
static const char *CASE_CMD[N_CASES] = {"best", "dump", "best"};

int main(int argc, char **argv) {
    long n = 1000000;
    int tasks = 20, repeat = 5;
    bool keep = false;
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    const char *exe[2] = {NULL, NULL};
    char self_dir[PATH_MAX], default_exe[PATH_MAX + 16];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
            n = atol(argv[++i]);
        else if (strcmp(argv[i], "--tasks") == 0 && i + 1 < argc)
            tasks = atoi(argv[++i]);
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--keep") == 0)
            keep = true;
        else if (strcmp(argv[i], "--tunetop") == 0 && i + 1 < argc)
            exe[0] = argv[++i];
        else if (strcmp(argv[i], "--reference") == 0 && i + 1 < argc)
            exe[1] = argv[++i];
        else {
            fprintf(stderr, "usage: log_read_bench [--tunetop PATH] [--reference PATH] [--records N] [--tasks T] "
                            "[--repeat R] [--dir DIR] [--keep]\n");
            return 2;
        }
    }
    if (n < 10 || tasks < 1 || repeat < 1 || repeat > 99) return 2;
    if (!exe[0]) { /* the build tree's tunetop: bench/.. */
        ssize_t k = readlink("/proc/self/exe", self_dir, sizeof self_dir - 1);
        if (k <= 0) return 1;
        self_dir[k] = '\0';
        snprintf(default_exe, sizeof default_exe, "%s/../tunetop", dirname(self_dir));
        exe[0] = default_exe;
    }
    int n_exe = exe[1] ? 2 : 1;
    for (int e = 0; e < n_exe; e++)
        if (access(exe[e], X_OK) != 0) {
            fprintf(stderr, "log_read_bench: %s is not an executable (--tunetop / --reference)\n", exe[e]);
            return 2;
        }

    char path[512], small[512];
    snprintf(path, sizeof path, "%s/tt-log-read-bench-%d.log", dir, (int)getpid());
    snprintf(small, sizeof small, "%s/tt-log-read-bench-%d-small.log", dir, (int)getpid());
    double t0 = clock_mono();
    if (write_log(path, n, tasks) || write_log(small, n / 10, tasks)) return 1;
    struct stat st;
    stat(path, &st);
    printf("log: %ld records over %d tasks, %.1f MB, written in %.2f s (and one of %ld records)\n", n, tasks,
           st.st_size / 1e6, clock_mono() - t0, n / 10);

    static double wall[2][N_CASES][100], cpu[2][N_CASES][100], rss[2][N_CASES][100];
    int rc = 0;
    for (int k = 0; k < repeat && !rc; k++)
        for (int c = 0; c < N_CASES && !rc; c++)
            for (int j = 0; j < n_exe && !rc; j++) {
                int e = (k + j) % n_exe; /* alternate which binary goes first */
                Run r;
                if (run(exe[e], CASE_CMD[c], c == BEST_SMALL ? small : path, &r)) {
                    rc = 1;
                    break;
                }
                wall[e][c][k] = r.wall, cpu[e][c][k] = r.cpu, rss[e][c][k] = r.rss_mb;
            }
    if (keep) {
        printf("kept %s and %s\n", path, small);
    } else {
        unlink(path);
        unlink(small);
    }
    if (rc) return 1;

    double med[2][N_CASES][3];
    for (int e = 0; e < n_exe; e++) {
        printf("%s %s\n", e ? "reference" : "tunetop  ", exe[e]);
        for (int c = 0; c < N_CASES; c++) {
            long recs = c == BEST_SMALL ? n / 10 : n;
            med[e][c][0] = median(wall[e][c], repeat);
            med[e][c][1] = median(cpu[e][c], repeat);
            med[e][c][2] = median(rss[e][c], repeat);
            printf("  %-4s %8ld records: wall %7.3f s (%9.0f records/s)  cpu %7.3f s (%9.0f records/s)  peak RSS "
                   "%7.1f MB\n",
                   CASE_CMD[c], recs, med[e][c][0], recs / med[e][c][0], med[e][c][1], recs / med[e][c][1],
                   med[e][c][2]);
        }
    }
    printf("medians of %d runs", repeat);
    if (n_exe == 2) {
        printf("; tunetop against the reference: best %.2fx as fast (wall), %.2fx the memory; dump %.2fx as fast",
               med[1][BEST][0] / med[0][BEST][0], med[0][BEST][2] / med[1][BEST][2], med[1][DUMP][0] / med[0][DUMP][0]);
    }
    printf("\nbest's peak RSS at %ld records is %.2fx that at %ld records (1.00 = does not grow with the records)\n", n,
           med[0][BEST][2] / med[0][BEST_SMALL][2], n / 10);
    return 0;
}
