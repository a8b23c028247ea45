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
    fprintf(out, "usage: tunetop distill LOG -o OUT [--keep N] [--force]\n"
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

int cmd_distill(int argc, char **argv) {
    static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                             {"keep", required_argument, 0, O_KEEP},
                                             {"force", no_argument, 0, O_FORCE},
                                             {"help", no_argument, 0, O_HELP},
                                             {0, 0, 0, 0}};
    const char *out = NULL;
    int keep = 1;
    bool force = false;
    char err[TT_ERRLEN] = "";
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case O_KEEP:
            if (opt_int(optarg, "--keep", 1, 1000000, &keep, err) != TT_OK) goto usage_error;
            break;
        case O_FORCE:
            force = true;
            break;
        case O_HELP:
            usage(stdout);
            return 0;
        case ':':
            snprintf(err, sizeof err, "option '%s' needs a value", argv[optind - 1]);
            goto usage_error;
        default:
            snprintf(err, sizeof err, "unknown option '%s'", argv[optind - 1]);
            goto usage_error;
        }
    }
    if (optind >= argc) {
        snprintf(err, sizeof err, "give a LOG file");
        goto usage_error;
    }
    if (optind + 1 < argc) {
        snprintf(err, sizeof err, "one LOG file only ('%s' is extra)", argv[optind + 1]);
        goto usage_error;
    }
    if (!out) {
        snprintf(err, sizeof err, "give the output log with -o OUT");
        goto usage_error;
    }
    const char *in = argv[optind];
    struct stat si, so;
    if (stat(in, &si) == 0 && stat(out, &so) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
        snprintf(err, sizeof err, "OUT is LOG itself; write the distilled log elsewhere");
        goto usage_error;
    }
    if (!force && access(out, F_OK) == 0) {
        fprintf(stderr, "tunetop distill: %s exists (use --force to replace it)\n", out);
        return 1;
    }

    History h;
    int rc = 1;
    if (History_load(&h, in, err) != TT_OK) {
        fprintf(stderr, "tunetop distill: %s\n", err);
        History_done(&h);
        return 1;
    }
    if (h.end == LOG_TORN) fprintf(stderr, "tunetop distill: warning: %s (read up to there)\n", h.end_msg);

    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", out, (long)getpid());
    unlink(tmp);
    LogWriter *w = NULL;
    off_t trunc;
    Ranked *r = NULL;
    size_t written = 0;
    int tasks_kept = 0, tasks_empty = 0;
    if (LogWriter_open(tmp, h.header.target, &w, &trunc, err) != TT_OK) {
        fprintf(stderr, "tunetop distill: %s\n", err);
        goto done;
    }
    /* the last session's task list (IDs, weights, network) and each task's last steering, so that the
     * distilled log shows and resumes the same tasks the same way */
    if (h.session.n_tasks > 0 && LogWriter_appendSession(w, &h.session, err) != TT_OK) {
        fprintf(stderr, "tunetop distill: %s\n", err);
        goto done;
    }
    for (int t = 0; t < h.n_tasks; t++) {
        if (h.tasks[t].steer && LogWriter_appendSteer(w, h.tasks[t].steer, err) != TT_OK) {
            fprintf(stderr, "tunetop distill: %s\n", err);
            goto done;
        }
    }
    for (int t = 0; t < h.n_tasks; t++) {
        const HistoryTask *ht = &h.tasks[t];
        free(r);
        r = calloc((size_t)ht->n_records + 1, sizeof *r);
        int n = 0;
        for (int i = 0; i < ht->n_records; i++) {
            double m = Record_cost(&ht->records[i]);
            if (ht->records[i].error_no == 0 && isfinite(m)) r[n++] = (Ranked){i, m};
        }
        if (!n) {
            fprintf(stderr, "tunetop distill: %s: no successful record among %d, left out\n", ht->key, ht->n_records);
            tasks_empty++;
            continue;
        }
        qsort(r, (size_t)n, sizeof *r, by_cost);
        if (n > keep) n = keep;
        qsort(r, (size_t)n, sizeof *r, by_index);
        for (int i = 0; i < n; i++) {
            if (LogWriter_append(w, &ht->records[r[i].index], err) != TT_OK) {
                fprintf(stderr, "tunetop distill: %s\n", err);
                goto done;
            }
            written++;
        }
        tasks_kept++;
    }
    if (LogWriter_sync(w, err) != TT_OK || LogWriter_closeMarked(w, err) != TT_OK) {
        fprintf(stderr, "tunetop distill: %s\n", err);
        goto done;
    }
    w = NULL;
    if (rename(tmp, out) != 0) {
        fprintf(stderr, "tunetop distill: cannot rename %s to %s: %s\n", tmp, out, strerror(errno));
        goto done;
    }
    tmp[0] = '\0';
    printf("distilled %s (%zu records, %d tasks) into %s: %zu record%s, %d task%s, at most %d per task%s\n", in,
           h.n_records, h.n_tasks, out, written, written == 1 ? "" : "s", tasks_kept, tasks_kept == 1 ? "" : "s", keep,
           tasks_empty ? " (tasks without a successful record left out)" : "");
    rc = 0;
done:
    if (w) LogWriter_close(w);
    if (tmp[0]) unlink(tmp);
    free(r);
    History_done(&h);
    return rc;

usage_error:
    fprintf(stderr, "tunetop distill: %s (see tunetop distill --help)\n", err);
    return 2;
}
