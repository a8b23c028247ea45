/* tests/integration/test_distill.c: `tunetop distill` on a log of 2000
 * records (13 tasks with the keys of a ResNet-18 session, random costs, ties,
 * failed and compile-only trials, one task whose trials all failed) through
 * the real binary: the distilled log has exactly the best record of each task,
 * in the original order, `tunetop best` prints the same best
 * configs, latencies and speeds for both logs, and --keep 3 keeps the three
 * fastest successful records of each task. A task whose trials all failed is
 * left out and named. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "records/history.h"
#include "records/log.h"
#include "tests/check.h"
#include "tuner/net/network.h"

static char g_dir[256], g_tt[512];

#define N_RECORDS 2000

static int g_n_tasks;
static char g_keys[64][WORKLOAD_KEY_LEN];

static void write_log(const char *path, int n_records, bool failed_task) {
    NetworkOptions opt;
    NetworkOptions_defaults(&opt);
    NetworkTask *nt;
    NetworkUntuned *un;
    int n_nt, n_un;
    char err[TT_ERRLEN];
    CHECK(Network_extract("resnet-18", &opt, &nt, &n_nt, &un, &n_un, err) == TT_OK);
    g_n_tasks = n_nt < 64 ? n_nt : 64;
    for (int i = 0; i < g_n_tasks; i++)
        Workload_key(&nt[i].wl, g_keys[i], sizeof g_keys[i]);
    free(nt);
    free(un);
    LogWriter *w;
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    Rng rng;
    Rng_seed(&rng, 7);
    for (int i = 0; i < n_records; i++) {
        int t = i < g_n_tasks ? i : (int)Rng_below(&rng, (uint64_t)g_n_tasks);
        Record r;
        Record_init(&r);
        snprintf(r.task_key, sizeof r.task_key, "%s", g_keys[t]);
        snprintf(r.template_name, sizeof r.template_name, "%s",
                 strncmp(g_keys[t], "dense", 5) ? "conv2d_nchwc.cpu" : "dense_panel.cpu");
        snprintf(r.target, sizeof r.target, "cpu");
        r.index = (uint64_t)i;
        r.n_choice = 1;
        r.choice[0] = i;
        snprintf(r.config, sizeof r.config, "k=%d", i);
        /* costs on a coarse grid so that ties happen (the first in file order is the best) */
        double base = 1e-3 * (double)(1 + Rng_below(&rng, 40)) / (double)(1 + t);
        r.n_costs = 3;
        for (int c = 0; c < 3; c++)
            r.costs[c] = base;
        r.pack_s = base * 0.1;
        r.timestamp = 1.7e9 + i;
        uint64_t kind = Rng_below(&rng, 10);
        if (failed_task && t == g_n_tasks - 2) kind = 0; /* this task: every trial failed */
        if (kind == 0) Record_setError(&r, 1 + (int)Rng_below(&rng, 7), "failed");
        if (kind == 1) r.n_costs = 0; /* compile-only: built, never timed */
        char werr[TT_ERRLEN];
        CHECK(LogWriter_append(w, &r, werr) == TT_OK);
        Record_done(&r);
    }
    LogWriter_close(w);
}

/* `tunetop best` output without the trial counts (they differ by design). */
static char *best_output(const char *log) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s best %s | grep -E '^task|^  (template|best|latency|speed|\\+layout) '", g_tt, log);
    FILE *p = popen(cmd, "r");
    if (!p) return strdup("");
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    pclose(p);
    return buf;
}

static int run(const char *args) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s >/dev/null", g_tt, args);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(distill_2000_records) {
    char log[300], out[300], out3[300], args[1000];
    snprintf(log, sizeof log, "%s/big.log", g_dir);
    snprintf(out, sizeof out, "%s/best.log", g_dir);
    snprintf(out3, sizeof out3, "%s/best3.log", g_dir);
    write_log(log, N_RECORDS, false);
    History h, d, d3;
    char err[TT_ERRLEN];
    CHECK(History_load(&h, log, err) == TT_OK);
    CHECK_EQ_INT(h.n_records, N_RECORDS);
    CHECK_EQ_INT(h.n_tasks, g_n_tasks);

    snprintf(args, sizeof args, "distill %s -o %s", log, out);
    CHECK_EQ_INT(run(args), 0);
    CHECK(History_load(&d, out, err) == TT_OK);
    /* one record per task */
    CHECK_EQ_INT(d.n_tasks, g_n_tasks);
    CHECK_EQ_INT(d.n_records, g_n_tasks);
    CHECK(strcmp(d.header.target, "cpu") == 0);
    for (int i = 0, j = 0; i < h.n_tasks; i++) {
        const Record *b = HistoryTask_best(&h.tasks[i]);
        if (!b) continue;
        CHECK(j < d.n_tasks && strcmp(d.tasks[j].key, h.tasks[i].key) == 0); /* order kept */
        const Record *db = j < d.n_tasks ? HistoryTask_best(&d.tasks[j]) : NULL;
        CHECK(db && db->index == b->index && Record_cost(db) == Record_cost(b) && db->pack_s == b->pack_s);
        j++;
    }
    char *b1 = best_output(log), *b2 = best_output(out);
    CHECK(strlen(b1) > 100);
    CHECK(strcmp(b1, b2) == 0);
    if (strcmp(b1, b2) != 0) fprintf(stderr, "best differs:\n%s\n---\n%s\n", b1, b2);
    free(b1);
    free(b2);

    snprintf(args, sizeof args, "distill %s -o %s --keep 3", log, out3);
    CHECK_EQ_INT(run(args), 0);
    CHECK(History_load(&d3, out3, err) == TT_OK);
    for (int i = 0, j = 0; i < h.n_tasks; i++) {
        const HistoryTask *t = &h.tasks[i];
        int ok = 0;
        double means[4096];
        for (int k = 0; k < t->n_records; k++) {
            double m = Record_cost(&t->records[k]);
            if (t->records[k].error_no == 0 && isfinite(m)) means[ok++] = m;
        }
        if (!ok) continue;
        const HistoryTask *dt = &d3.tasks[j++];
        CHECK_EQ_INT(dt->n_records, ok < 3 ? ok : 3);
        /* every kept record is at least as fast as every record left out */
        double worst_kept = 0;
        for (int k = 0; k < dt->n_records; k++)
            worst_kept = fmax(worst_kept, Record_cost(&dt->records[k]));
        int faster = 0;
        for (int k = 0; k < ok; k++)
            faster += means[k] < worst_kept;
        CHECK(faster <= 2);
        for (int k = 1; k < dt->n_records; k++) /* original file order */
            CHECK(dt->records[k].index > dt->records[k - 1].index);
    }
    /* a task whose trials all failed: left out, named on stderr */
    char flog[300], fout[300], ferr[300];
    snprintf(flog, sizeof flog, "%s/failed.log", g_dir);
    snprintf(fout, sizeof fout, "%s/failed_best.log", g_dir);
    snprintf(ferr, sizeof ferr, "%s/failed.err", g_dir);
    write_log(flog, 200, true);
    snprintf(args, sizeof args, "distill %s -o %s 2>%s", flog, fout, ferr);
    CHECK_EQ_INT(run(args), 0);
    History f;
    CHECK(History_load(&f, fout, err) == TT_OK);
    CHECK_EQ_INT(f.n_tasks, g_n_tasks - 1);
    CHECK(History_find(&f, g_keys[g_n_tasks - 2]) == NULL);
    History_done(&f);
    FILE *fe = fopen(ferr, "r");
    char line[1024] = "";
    CHECK(fe && fgets(line, sizeof line, fe));
    if (fe) fclose(fe);
    CHECK(strstr(line, g_keys[g_n_tasks - 2]) && strstr(line, "no successful record"));
    /* bad input */
    snprintf(args, sizeof args, "distill %s -o %s 2>/dev/null", log, out);
    CHECK_EQ_INT(run(args), 1); /* exists */
    snprintf(args, sizeof args, "distill %s -o %s 2>/dev/null", log, log);
    CHECK_EQ_INT(run(args), 2); /* itself */
    snprintf(args, sizeof args, "distill %s/missing.log -o %s/x.log 2>/dev/null", g_dir, g_dir);
    CHECK_EQ_INT(run(args), 1);
    char x[400];
    snprintf(x, sizeof x, "%s/x.log", g_dir);
    CHECK(access(x, F_OK) != 0);
    History_done(&h);
    History_done(&d);
    History_done(&d3);
}

int main(void) {
    const char *bin = getenv("TT_BINARY_DIR");
    snprintf(g_tt, sizeof g_tt, "%s/tunetop", bin ? bin : "build");
    if (access(g_tt, X_OK) != 0) {
        fprintf(stderr, "no tunetop binary at %s\n", g_tt);
        return 1;
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/tt_distill_XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    RUN(distill_2000_records);
    int rc = check_summary();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (rc == 0 && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return rc;
}
