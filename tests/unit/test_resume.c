/* tests/unit/test_resume.c: what tuner/resume.c returns for a given log:
 * visited sets without duplicates, replays in file order, tallies and bests,
 * rounds, the last steering of each task, imported configs to measure first,
 * transfer rows of earlier sessions' tasks, the trials for the observers,
 * and what a torn tail and damage give. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/target.h"
#include "records/log.h"
#include "tests/check.h"
#include "tuner/resume.h"

#define KEY_A "dense:m=16,n=64,k=64"
#define KEY_B "dense:m=16,n=32,k=64"
#define KEY_X "dense:m=8,n=64,k=64" /* an earlier session's task of the same template */

static char dir[64], path[128];
static DeviceInfo dev;
static const Target *cpu;

static bool make_task(Task *t, int id, const char *key) {
    Workload wl;
    char err[TT_ERRLEN];
    if (Workload_parse(key, &wl, err) != TT_OK || Task_init(t, id, &wl, 1, cpu->family, &dev, err) != TT_OK) {
        fprintf(stderr, "task %s: %s\n", key, err);
        return false;
    }
    return true;
}

static void append(LogWriter *w, const Task *t, const char *key, uint64_t index, int error_no, double cost, double ts) {
    Record r;
    Record_init(&r);
    snprintf(r.task_key, sizeof r.task_key, "%s", key);
    snprintf(r.template_name, sizeof r.template_name, "%s", t->tmpl->name);
    snprintf(r.target, sizeof r.target, "cpu");
    r.index = index;
    r.timestamp = ts;
    if (error_no) {
        Record_setError(&r, error_no, "k.c:3:1: error: expected ';'");
    } else {
        r.n_costs = 2;
        r.costs[0] = r.costs[1] = cost;
    }
    char err[TT_ERRLEN];
    CHECK(LogWriter_append(w, &r, err) == TT_OK);
    Record_done(&r);
}

static void append_imported(LogWriter *w, const Task *t, uint64_t index, double src_cost) {
    Record r;
    Record_init(&r);
    snprintf(r.task_key, sizeof r.task_key, "%s", t->key);
    snprintf(r.template_name, sizeof r.template_name, "%s", t->tmpl->name);
    snprintf(r.target, sizeof r.target, "cpu");
    r.index = index;
    snprintf(r.src, sizeof r.src, "autotvm test.log:%llu", (unsigned long long)index);
    r.src_cost = src_cost;
    char err[TT_ERRLEN];
    CHECK(LogWriter_append(w, &r, err) == TT_OK);
    Record_done(&r);
}

static void steer(LogWriter *w, const Task *t, bool paused, bool stopped, int priority) {
    LogSteer s = {.timestamp = 5, .paused = paused, .stopped = stopped, .priority = priority};
    snprintf(s.key, sizeof s.key, "%s", t->key);
    snprintf(s.template_name, sizeof s.template_name, "%s", t->tmpl->name);
    char err[TT_ERRLEN];
    CHECK(LogWriter_appendSteer(w, &s, err) == TT_OK);
}

static Task tasks[2], xtask;

/* The log every test starts from: task A 5 records (one failed, one a
 * duplicate), task B 2, an earlier session's task X 2, one record beyond A's
 * space, three imported configs of B (one already measured), and steering:
 * A paused then priority +2 (the last wins), B stopped. */
static void write_log(void) {
    unlink(path);
    LogWriter *w;
    char err[TT_ERRLEN];
    CHECK(LogWriter_open(path, "cpu", &w, NULL, err) == TT_OK);
    LogSession s;
    LogSession_init(&s);
    LogSession_addTask(&s, KEY_X, xtask.tmpl->name, 1, "");
    CHECK(LogWriter_appendSession(w, &s, err) == TT_OK);
    LogSession_done(&s);
    append(w, &xtask, KEY_X, 4, 0, 2e-5, 90);
    append(w, &xtask, KEY_X, 6, 0, 1e-5, 91);
    append(w, &tasks[0], KEY_A, 3, 0, 4e-5, 100);
    append(w, &tasks[0], KEY_A, 8, ERR_COMPILE_HOST, 0, 101);
    append(w, &tasks[1], KEY_B, 2, 0, 1e-5, 102);
    append(w, &tasks[0], KEY_A, 5, 0, 2e-5, 103);
    append(w, &tasks[0], KEY_A, 3, 0, 1e-6, 104); /* a duplicate of config 3: ignored */
    append(w, &tasks[0], KEY_A, 9, 0, 3e-5, 105);
    append(w, &tasks[0], KEY_A, tasks[0].space.total + 1, 0, 1e-5, 106); /* beyond the space: foreign */
    append_imported(w, &tasks[1], 11, 3e-5);
    append_imported(w, &tasks[1], 12, 1e-5);
    append_imported(w, &tasks[1], 2, 1e-6); /* measured here already */
    append(w, &tasks[1], KEY_B, 4, 0, 2e-5, 107);
    steer(w, &tasks[0], true, false, 0);
    steer(w, &tasks[0], false, false, 2);
    steer(w, &tasks[1], true, true, -1);
    LogWriter_close(w);
}

static off_t file_size(void) {
    int fd = open(path, O_RDONLY);
    off_t n = lseek(fd, 0, SEEK_END);
    close(fd);
    return n;
}

TEST(a_log_gives_back_what_the_session_restores) {
    write_log();
    Resume r;
    char err[TT_ERRLEN] = "";
    CHECK(Resume_read(&r, path, tasks, 2, 2, false, cpu->family, &dev, err) == TT_OK);
    CHECK_EQ_INT(r.n_tasks, 2);
    CHECK_EQ_INT(r.restored, 6);
    CHECK_EQ_INT(r.foreign, 3); /* X's two and the one beyond A's space */
    CHECK_EQ_INT(r.torn_at, -1);
    const ResumeTask *a = &r.tasks[0], *b = &r.tasks[1];
    /* A: 3, 8 (failed), 5, 9; the duplicate of 3 left out */
    CHECK_EQ_INT(a->tally.trials, 4);
    CHECK_EQ_INT(a->tally.errors, 1);
    CHECK_EQ_INT(a->tally.successes, 3);
    CHECK_NEAR(a->tally.best_latency, 2e-5, 1e-15);
    CHECK_EQ_INT(a->tally.best_index, 5);
    CHECK_NEAR(a->tally.current_gflops, tasks[0].flops / 3e-5 / 1e9, 1e-9);
    CHECK_EQ_INT(a->visited.count, 4);
    CHECK_EQ_INT(a->replay.n, 4);
    uint64_t want[4] = {3, 8, 5, 9};
    for (int i = 0; i < 4 && i < a->replay.n; i++)
        CHECK_EQ_INT(a->replay.index[i], want[i]);
    CHECK(a->replay.gflops[1] == 0);
    CHECK_EQ_INT(a->rounds, 2); /* 4 trials at a batch of 2 */
    CHECK(a->steered && !a->paused && !a->stopped);
    CHECK_EQ_INT(a->priority, 2);
    CHECK_EQ_INT(a->n_seeds, 0);
    /* B: 2 and 4 measured; imported 11 and 12 queued, the cheaper (12) popped first */
    CHECK_EQ_INT(b->tally.trials, 2);
    CHECK_EQ_INT(b->rounds, 1);
    CHECK_EQ_INT(b->visited.count, 4);
    CHECK_EQ_INT(b->n_seeds, 2);
    if (b->n_seeds == 2) {
        CHECK_EQ_INT(b->seeds[0], 11);
        CHECK_EQ_INT(b->seeds[1], 12);
    }
    CHECK_EQ_INT(r.seeded, 2);
    CHECK(b->steered && b->stopped && !b->paused);
    CHECK_EQ_INT(b->priority, -1);
    /* no transfer asked for: no rows, no earlier tasks rebuilt */
    CHECK_EQ_INT(a->n_xfer, 0);
    CHECK_EQ_INT(r.n_xtasks, 0);
    /* the observers' trials: file order, per-task numbers, failures whole */
    CHECK_EQ_INT(r.n_trials, 6);
    int tasks_of[6] = {0, 0, 1, 0, 0, 1}, trial_of[6] = {1, 2, 1, 3, 4, 2};
    bool best_of[6] = {true, false, true, true, false, false};
    for (int i = 0; i < 6 && i < r.n_trials; i++) {
        CHECK_EQ_INT(r.trials[i].task, tasks_of[i]);
        CHECK_EQ_INT(r.trials[i].trial, trial_of[i]);
        CHECK(r.trials[i].best == best_of[i]);
        CHECK((r.trials[i].failure != NULL) == (i == 1));
    }
    if (r.n_trials > 1 && r.trials[1].failure) {
        CHECK_EQ_INT(r.trials[1].error_no, ERR_COMPILE_HOST);
        CHECK_CONTAINS(r.trials[1].failure->error_msg, "expected ';'");
        CHECK_NEAR(r.trials[1].timestamp, 101, 1e-9);
    }
    char summary[1024];
    Resume_summary(&r, path, summary, sizeof summary);
    CHECK_CONTAINS(summary, "6 measured configs of 2 tasks restored");
    CHECK_CONTAINS(summary, "task 0: 4 trials");
    CHECK_CONTAINS(summary, "3 records of other tasks kept");
    CHECK_CONTAINS(summary, "steering restored: task 0 priority +2, task 1 stopped");
    CHECK_CONTAINS(summary, "2 imported configs (measured elsewhere) queued to measure first");
    Resume_done(&r);
}

TEST(transfer_rows_come_from_earlier_sessions_tasks) {
    write_log();
    Resume r;
    char err[TT_ERRLEN] = "";
    CHECK(Resume_read(&r, path, tasks, 2, 2, true, cpu->family, &dev, err) == TT_OK);
    CHECK_EQ_INT(r.n_xtasks, 1);
    if (r.n_xtasks == 1) CHECK_STR(r.xtasks[0].key, KEY_X);
    for (int t = 0; t < 2; t++) {
        const ResumeTask *rt = &r.tasks[t];
        CHECK_EQ_INT(rt->n_xfer, 2);
        if (rt->n_xfer != 2) continue;
        CHECK_EQ_INT(rt->xfer_index[0], 4);
        CHECK_EQ_INT(rt->xfer_index[1], 6);
        CHECK(rt->xfer_task[0] == &r.xtasks[0]);
        CHECK_NEAR(rt->xfer_gflops[1], xtask.flops / 1e-5 / 1e9, 1e-9);
    }
    Resume_done(&r);
}

TEST(a_torn_tail_stops_where_the_good_data_ends) {
    write_log();
    off_t good = file_size();
    /* the first bytes of one more record: a crash in the middle of a write */
    LogWriter *w;
    char err[TT_ERRLEN] = "";
    CHECK(LogWriter_open(path, "cpu", &w, NULL, err) == TT_OK);
    append(w, &tasks[0], KEY_A, 20, 0, 1e-5, 200);
    LogWriter_close(w);
    off_t whole = file_size();
    CHECK(truncate(path, whole - 7) == 0);
    Resume r;
    CHECK(Resume_read(&r, path, tasks, 2, 2, false, cpu->family, &dev, err) == TT_OK);
    CHECK_EQ_INT(r.torn_at, good);
    CHECK_EQ_INT(r.restored, 6);
    CHECK(!VisitedSet_has(&r.tasks[0].visited, 20));
    Resume_done(&r);
}

TEST(damage_is_an_error_and_returns_nothing) {
    write_log();
    off_t good = file_size();
    int fd = open(path, O_WRONLY | O_APPEND);
    CHECK(write(fd, "\xc1garbage that is no record", 26) == 26); /* 0xc1: never a msgpack type */
    close(fd);
    Resume r;
    char err[TT_ERRLEN] = "";
    CHECK(Resume_read(&r, path, tasks, 2, 2, false, cpu->family, &dev, err) == TT_ERR);
    CHECK_CONTAINS(err, path);
    char at[32];
    snprintf(at, sizeof at, "%lld", (long long)good);
    CHECK_CONTAINS(err, at);
    CHECK_EQ_INT(r.n_tasks, 0);
    CHECK_EQ_INT(r.n_trials, 0);
    Resume_done(&r);
    /* and a log that is not there */
    CHECK(Resume_read(&r, "/nonexistent/tunetop.log", tasks, 2, 2, false, cpu->family, &dev, err) == TT_ERR);
    CHECK_CONTAINS(err, "does not exist");
    Resume_done(&r);
}

TEST(an_empty_log_restores_nothing) {
    unlink(path);
    LogWriter *w;
    char err[TT_ERRLEN] = "";
    CHECK(LogWriter_open(path, "cpu", &w, NULL, err) == TT_OK);
    LogWriter_close(w);
    Resume r;
    CHECK(Resume_read(&r, path, tasks, 2, 8, true, cpu->family, &dev, err) == TT_OK);
    CHECK_EQ_INT(r.restored, 0);
    CHECK_EQ_INT(r.tasks[0].rounds, 0);
    CHECK(isinf(r.tasks[1].tally.best_latency));
    char summary[256];
    Resume_summary(&r, path, summary, sizeof summary);
    CHECK_STR(summary, "");
    Resume_done(&r);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tt_resume_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/r.log", dir);
    char err[TT_ERRLEN];
    cpu = Target_find("cpu");
    if (!cpu || cpu->probe(&dev, err) != TT_OK) {
        fprintf(stderr, "cpu target: %s\n", cpu ? err : "missing");
        return 1;
    }
    if (!make_task(&tasks[0], 0, KEY_A) || !make_task(&tasks[1], 1, KEY_B) || !make_task(&xtask, 5, KEY_X)) return 1;
    RUN(a_log_gives_back_what_the_session_restores);
    RUN(transfer_rows_come_from_earlier_sessions_tasks);
    RUN(a_torn_tail_stops_where_the_good_data_ends);
    RUN(damage_is_an_error_and_returns_nothing);
    RUN(an_empty_log_restores_nothing);
    Task_done(&tasks[0]);
    Task_done(&tasks[1]);
    Task_done(&xtask);
    unlink(path);
    rmdir(dir);
    return check_summary();
}
