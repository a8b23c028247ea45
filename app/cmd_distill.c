/* app/cmd_distill.c: `tunetop distill LOG -o OUT [--keep N]`: a new log with
 * the best N successful records of each task, written through the LogWriter
 * (so it is a normal log: every command reads it and `tune` resumes it). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/commands.h"
#include "app/opts.h"
#include "records/history.h"
#include "records/log.h"

static void usage(FILE *out) {
    app_help(out, "usage: tunetop distill LOG -o OUT [--keep N] [--force]\n"
                  "\n"
                  "Writes a new record log OUT with, for every task of LOG, its N fastest successful records\n"
                  "(lowest latency, the median of its repeats; default N = 1), in the order LOG has them, after the "
                  "task list of LOG's last\n"
                  "session (IDs, weights, network) and each task's last steering. OUT is a normal log of the same\n"
                  "target: best, dump, view and export read it, and tune --log OUT resumes from it (configs not\n"
                  "kept count as not measured). Failed and compile-only records are left out; a task with no\n"
                  "successful record is named on stderr and left out.\n"
                  "\n"
                  "  -o, --output OUT   the log to write; it must not exist (--force replaces it)\n"
                  "  --keep N           records kept per task (default 1)\n"
                  "  --force            replace OUT if it exists\n"
                  "\n"
                  "OUT is written beside its final name and renamed when complete: an error leaves nothing behind.\n"
                  "A damaged LOG is an error (exit status 1); a torn last record is a warning.\n");
}

typedef struct Ranked {
    int index;
    double cost;
} Ranked;

static int by_cost(const void *a, const void *b) {
    const Ranked *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    return x->index - y->index;
}

static int by_index(const void *a, const void *b) { return ((const Ranked *)a)->index - ((const Ranked *)b)->index; }

enum { O_KEEP = 256, O_FORCE, O_HELP };

static const struct option OWN[] = {{"output", required_argument, 0, 'o'},
                                    {"keep", required_argument, 0, O_KEEP},
                                    {"force", no_argument, 0, O_FORCE},
                                    {"help", no_argument, 0, O_HELP},
                                    {0, 0, 0, 0}};
const CmdOptions DISTILL_OPTIONS = {"distill", OWN, 0};

/* The command line: -1 to go on (*in, *out, *keep, *force), else the exit code. */
static int distill_parse(int argc, char **argv, const char **in, const char **out, int *keep, bool *force) {
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&DISTILL_OPTIONS, longopts, CLI_MAX_OPTS);
    char err[TT_ERRLEN] = "";
    optind = 1;
    opterr = 0;
    int c;
    while (!err[0] && (c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
        if (c == 'o')
            *out = optarg;
        else if (c == O_KEEP)
            opt_int(optarg, "--keep", 1, 1000000, keep, err);
        else if (c == O_FORCE)
            *force = true;
        else if (c == O_HELP)
            return usage(stdout), 0;
        else
            Cli_badOption("distill", c, argv, err);
    }
    struct stat si, so;
    if (err[0]) {
    } else if (optind >= argc) {
        snprintf(err, sizeof err, "give a LOG file");
    } else if (optind + 1 < argc) {
        snprintf(err, sizeof err, "one LOG file only ('%s' is extra)", argv[optind + 1]);
    } else if (!*out) {
        snprintf(err, sizeof err, "give the output log with -o OUT");
    } else if (stat(argv[optind], &si) == 0 && stat(*out, &so) == 0 && si.st_dev == so.st_dev &&
               si.st_ino == so.st_ino) {
        snprintf(err, sizeof err, "OUT is LOG itself; write the distilled log elsewhere");
    }
    if (err[0]) {
        fprintf(stderr, "tunetop distill: %s%s\n", err, strstr(err, "--help)") ? "" : " (see tunetop distill --help)");
        return 2;
    }
    *in = argv[optind];
    return -1;
}

/* The keep fastest successful records of a task, in the log's order; -1 when it has none, else how many. */
static int append_fastest(LogWriter *w, const HistoryTask *ht, int keep, char *err) {
    Ranked *r = calloc((size_t)ht->n_records + 1, sizeof *r);
    if (!r) abort();
    int n = 0;
    for (int i = 0; i < ht->n_records; i++) {
        double m = Record_cost(&ht->records[i]);
        if (ht->records[i].error_no == 0 && isfinite(m)) r[n++] = (Ranked){i, m};
    }
    if (n) {
        qsort(r, (size_t)n, sizeof *r, by_cost);
        if (n > keep) n = keep;
        qsort(r, (size_t)n, sizeof *r, by_index);
    }
    for (int i = 0; i < n; i++)
        if (LogWriter_append(w, &ht->records[r[i].index], err) != TT_OK) n = -2;
    free(r);
    return n ? n : -1;
}

/* The distilled log at path: the last session's task list (IDs, weights, network) and each task's last
 * steering, so that it shows and resumes the same tasks the same way, then each task's fastest records. */
static Status distill_write(const History *h, const char *path, int keep, size_t *written, int *kept, int *empty,
                            char *err) {
    LogWriter *w = NULL;
    off_t trunc;
    if (LogWriter_open(path, h->header.target, &w, &trunc, err) != TT_OK) return TT_ERR;
    Status st = TT_OK;
    if (h->session.n_tasks > 0) st = LogWriter_appendSession(w, &h->session, err);
    for (int t = 0; t < h->n_tasks && st == TT_OK; t++)
        if (h->tasks[t].steer) st = LogWriter_appendSteer(w, h->tasks[t].steer, err);
    for (int t = 0; t < h->n_tasks && st == TT_OK; t++) {
        int n = append_fastest(w, &h->tasks[t], keep, err);
        if (n == -2) {
            st = TT_ERR;
        } else if (n < 0) {
            fprintf(stderr, "tunetop distill: %s: no successful record among %d, left out\n", h->tasks[t].key,
                    h->tasks[t].n_records);
            (*empty)++;
        } else {
            *written += (size_t)n;
            (*kept)++;
        }
    }
    if (st == TT_OK) st = LogWriter_sync(w, err);
    if (st == TT_OK) st = LogWriter_closeMarked(w, err); /* a clean end: the close marker (closes w) */
    if (st != TT_OK) LogWriter_close(w);
    return st;
}

int cmd_distill(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int keep = 1;
    bool force = false;
    int rc = distill_parse(argc, argv, &in, &out, &keep, &force);
    if (rc >= 0) return rc;
    if (!force && access(out, F_OK) == 0) {
        fprintf(stderr, "tunetop distill: %s exists (use --force to replace it)\n", out);
        return 1;
    }
    char err[TT_ERRLEN] = "";
    History h;
    if (History_load(&h, in, err) != TT_OK) {
        fprintf(stderr, "tunetop distill: %s\n", err);
        History_done(&h);
        return 1;
    }
    if (h.end == LOG_TORN) fprintf(stderr, "tunetop distill: warning: %s (read up to there)\n", h.end_msg);
    /* written beside its final name and renamed when complete: an error leaves nothing behind */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", out, (long)getpid());
    unlink(tmp);
    size_t written = 0;
    int kept = 0, empty = 0;
    if (distill_write(&h, tmp, keep, &written, &kept, &empty, err) != TT_OK) {
        fprintf(stderr, "tunetop distill: %s\n", err);
    } else if (rename(tmp, out) != 0) {
        fprintf(stderr, "tunetop distill: cannot rename %s to %s: %s\n", tmp, out, strerror(errno));
    } else {
        printf("distilled %s (%zu records, %d tasks) into %s: %zu record%s, %d task%s, at most %d per task%s\n", in,
               h.n_records, h.n_tasks, out, written, written == 1 ? "" : "s", kept, kept == 1 ? "" : "s", keep,
               empty ? " (tasks without a successful record left out)" : "");
        rc = 0;
    }
    if (rc != 0) {
        unlink(tmp);
        rc = 1;
    }
    History_done(&h);
    return rc;
}
