/* tests/unit/test_engine.c: the engine's control flow with a fake template and
 * a fake target (no compiler, no worker): budget, errors, steering, stop,
 * resume and events. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "base/clock.h"
#include "records/history.h"
#include "records/log.h"
#include "records/logio.h"
#include "tuner/builder.h"
#include "tuner/engine.h"
#include "ui/headless.h"

/* ---- fake template: two option knobs a, b in 0..7 -------------------------- */

static bool fake_applies(const Workload *wl) { return true; }

static Status fake_space(const Workload *wl, const DeviceInfo *dev, Space *s, char *err) {
    int64_t v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    if (Space_addOption(s, "a", v, 8, err) != TT_OK) return TT_ERR;
    return Space_addOption(s, "b", v, 8, err);
}

static bool fake_precheck(const Workload *wl, const Space *s, const int32_t *c, const DeviceInfo *d, char *why,
                          size_t n) {
    if (Space_option(s, c, 0) == 7) {
        snprintf(why, n, "a 7 > 6");
        return false;
    }
    return true;
}

/* The fake kernel's source: "a b", its knobs, a shifted by `slower` (10 ms per 10). */
static Status fake_source(const Space *s, const int32_t *c, int slower, KernelSource *out) {
    char buf[64];
    snprintf(buf, sizeof buf, "%lld %lld", (long long)Space_option(s, c, 0) + slower, (long long)Space_option(s, c, 1));
    out->source = strdup(buf);
    snprintf(out->entry, sizeof out->entry, "fake");
    return TT_OK;
}

static Status fake_generate(const Workload *wl, const Space *s, const int32_t *c, const DeviceInfo *d, Dialect di,
                            KernelSource *out, char *err) {
    return fake_source(s, c, 0, out);
}

/* a second template of the same workload, always 10 ms slower (a group of alternatives) */
static Status fake2_generate(const Workload *wl, const Space *s, const int32_t *c, const DeviceInfo *d, Dialect di,
                             KernelSource *out, char *err) {
    return fake_source(s, c, 10, out);
}

static const Template fake_tmpl = {.name = "fake.cpu",
                                   .op = OP_DENSE,
                                   .family = FAMILY_CPU,
                                   .applies = fake_applies,
                                   .define_space = fake_space,
                                   .precheck = fake_precheck,
                                   .generate = fake_generate};
static const Template fake2_tmpl = {.name = "fake2.cpu",
                                    .op = OP_DENSE,
                                    .family = FAMILY_CPU,
                                    .applies = fake_applies,
                                    .define_space = fake_space,
                                    .precheck = fake_precheck,
                                    .generate = fake2_generate};

/* ---- fake target: b == 5 does not compile; cost = 1 ms * (1 + |a-3| + |b-2|) --- */

static Status fake_probe(DeviceInfo *d, char *err) {
    snprintf(d->name, sizeof d->name, "fake");
    d->present = true;
    return TT_OK;
}

static bool fail_every_build; /* set by a test: nothing compiles */

static void fake_build(const KernelSource *src, const DeviceInfo *dev, const MeasureOptions *opt, const char *wd,
                       uint64_t tag, BuildResult *out) {
    int a, b;
    sscanf(src->source, "%d %d", &a, &b);
    if (b == 5 || fail_every_build) {
        out->error_no = ERR_COMPILE_HOST;
        out->msg = strdup("k.c:3:1: error: expected ';'");
    }
}

static int fake_runner_obj;
static atomic_uint measure_us = 500; /* set by tests while an engine thread measures */
/* A gate in the fake measurement: the measurement numbered measure_hold_at
 * (0-based, counted in measure_count) waits until measure_hold_open, so a test
 * steers the engine at a known point instead of after a guessed delay. */
static atomic_int measure_count, measure_hold_at = -1, measure_hold_open;
static Runner *fake_runner_new(const DeviceInfo *d, char *err) { return (Runner *)&fake_runner_obj; }
static Status fake_set_task(Runner *r, const Workload *wl, char *err) { return TT_OK; }
static void fake_measure(Runner *r, const KernelSource *src, const BuildResult *b, const MeasureOptions *o,
                         MeasureResult *out) {
    int a, bb;
    sscanf(src->source, "%d %d", &a, &bb);
    if (atomic_fetch_add(&measure_count, 1) == atomic_load(&measure_hold_at))
        while (!atomic_load(&measure_hold_open))
            usleep(1000);
    usleep(measure_us);
    out->n_costs = 2;
    out->costs[0] = out->costs[1] = 1e-3 * (1 + abs(a - 3) + abs(bb - 2));
}
static void fake_runner_delete(Runner *r) {}

static const Target fake_target = {.name = "cpu",
                                   .family = FAMILY_CPU,
                                   .dialect = DIALECT_C,
                                   .probe = fake_probe,
                                   .build = fake_build,
                                   .runner_new = fake_runner_new,
                                   .runner_set_task = fake_set_task,
                                   .measure = fake_measure,
                                   .runner_delete = fake_runner_delete};

/* ---- helpers -------------------------------------------------------------- */

static char log_path[256];

static Task *make_tasks(int n) {
    Task *tasks = calloc((size_t)n, sizeof(Task));
    char err[TT_ERRLEN];
    for (int i = 0; i < n; i++) {
        Task *t = &tasks[i];
        t->id = i;
        memset(&t->wl, 0, sizeof t->wl);
        t->wl.op = OP_DENSE;
        t->wl.m = 1;
        t->wl.n = 16 * (i + 1);
        t->wl.k = 16;
        Workload_key(&t->wl, t->key, sizeof t->key);
        t->flops = Workload_flops(&t->wl);
        t->weight = 1;
        snprintf(t->label, sizeof t->label, "fake %d", i);
        t->tmpl = &fake_tmpl;
        Space_init(&t->space);
        fake_space(&t->wl, NULL, &t->space, err);
    }
    return tasks;
}

static void config(EngineConfig *cfg, int trials, const char *strategy) {
    EngineConfig_defaults(cfg);
    cfg->target = &fake_target;
    fake_probe(&cfg->dev, NULL);
    cfg->strategy = strategy;
    cfg->scheduler = "round-robin";
    cfg->trials = trials;
    cfg->batch = 8;
    cfg->builders = 2;
    cfg->log_path = log_path;
    cfg->seed = 7;
}

typedef struct Seen {
    int results, errors_by[ERR_COUNT], finished, per_task[4], logs;
    char last_log[256];
    int n_events, first_round_at, first_strategy_at; /* event positions, 1-based (0: none yet) */
    char all_logs[4096];
    double gflops_sum;
    char strategy[4][256]; /* each task's last strategy line */
    bool heard_others[4];  /* a strategy line said the model learned from other tasks */
} Seen;

static void drain(Engine *e, Seen *seen) {
    EngineEvent ev[64];
    int k;
    while ((k = Engine_drainEvents(e, ev, 64)) > 0) {
        for (int i = 0; i < k; i++) {
            if (ev[i].kind == EV_RESULT) {
                seen->results++;
                if (ev[i].task_id < 4) seen->per_task[ev[i].task_id]++;
                seen->gflops_sum += ev[i].gflops;
                CHECK(ev[i].record != NULL);
                if (ev[i].record) seen->errors_by[ev[i].record->error_no]++;
            }
            seen->n_events++;
            if (ev[i].kind == EV_ROUND && !seen->first_round_at) seen->first_round_at = seen->n_events;
            if (ev[i].kind == EV_STRATEGY && !seen->first_strategy_at) seen->first_strategy_at = seen->n_events;
            if (ev[i].kind == EV_FINISHED) seen->finished++;
            if (ev[i].kind == EV_LOG) {
                seen->logs++;
                snprintf(seen->last_log, sizeof seen->last_log, "%s", ev[i].text);
                size_t len = strlen(seen->all_logs);
                snprintf(seen->all_logs + len, sizeof seen->all_logs - len, "%s\n", ev[i].text);
            }
            if (ev[i].kind == EV_STRATEGY && ev[i].task_id >= 0 && ev[i].task_id < 4) {
                snprintf(seen->strategy[ev[i].task_id], sizeof seen->strategy[0], "%s", ev[i].text);
                if (strstr(ev[i].text, "of other tasks)")) seen->heard_others[ev[i].task_id] = true;
            }
            EngineEvent_done(&ev[i]);
        }
    }
}

/* Every wait on the engine has a deadline: a hang fails the test with a line
 * instead of running into CTest's timeout. */
#define WAIT_S 60.0
static bool waiting(double t0, const char *what) {
    if (clock_mono() - t0 < WAIT_S) return true;
    fprintf(stderr, "%s: no %s within %.0f s\n", check_current, what, WAIT_S);
    check_current_failed = 1;
    return false;
}

static void run_to_end(Engine *e, Seen *seen) {
    struct pollfd p = {.fd = Engine_eventFd(e), .events = POLLIN};
    double t0 = clock_mono();
    while (!seen->finished && waiting(t0, "end of session")) {
        poll(&p, 1, 100);
        drain(e, seen);
    }
    Engine_wait(e);
    drain(e, seen);
}

/* A whole session on n fake tasks, start to finish; false when it could not start. */
static bool run_session(const EngineConfig *cfg, int n, Seen *seen) {
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(cfg, make_tasks(n), n, err);
    CHECK(e != NULL);
    if (!e) return false;
    bool started = Engine_start(e, NULL, 0, err) == TT_OK;
    CHECK(started);
    if (started) run_to_end(e, seen);
    Engine_delete(e);
    return started;
}

/* Records in the log: count, and whether any (task, index) repeats. */
static int log_records(int *dups) {
    LogReader *rd;
    LogHeader h;
    char err[TT_ERRLEN];
    if (LogReader_open(log_path, &rd, &h, err) != TT_OK) return -1;
    Record rec;
    Record_init(&rec);
    int n = 0;
    static char keys[1024][256];
    *dups = 0;
    while (LogReader_next(rd, &rec, err) == LOG_RECORD) {
        char k[256];
        snprintf(k, sizeof k, "%s#%llu", rec.task_key, (unsigned long long)rec.index);
        for (int i = 0; i < n && i < 1024; i++)
            if (strcmp(keys[i], k) == 0) (*dups)++;
        if (n < 1024) snprintf(keys[n], sizeof keys[n], "%s", k);
        n++;
    }
    Record_done(&rec);
    LogReader_close(rd);
    return n;
}

/* ---- tests ---------------------------------------------------------------- */

TEST(budget_errors_and_best) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 64, "grid");
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(1), 1, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    run_to_end(e, &seen);
    CHECK_EQ_INT(seen.results, 64);
    CHECK_EQ_INT(seen.errors_by[ERR_INSTANTIATION], 8); /* a == 7 */
    CHECK_EQ_INT(seen.errors_by[ERR_COMPILE_HOST], 7);  /* b == 5, a != 7 */
    CHECK_EQ_INT(seen.errors_by[ERR_NO_ERROR], 49);
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    CHECK_EQ_INT(snap.trials, 64);
    CHECK_EQ_INT(snap.rows[0].errors, 15);
    CHECK_NEAR(snap.rows[0].best_latency_s, 1e-3, 1e-9);
    int32_t choice[2];
    Space_decode(&Engine_task(e, 0)->space, snap.rows[0].best_index, choice);
    CHECK_EQ_INT(choice[0], 3);
    CHECK_EQ_INT(choice[1], 2);
    CHECK(snap.rows[0].state == TASK_DONE);
    CHECK(isfinite(snap.est_latency_s));
    SessionSnapshot_done(&snap);
    Engine_delete(e);
    int dups;
    CHECK_EQ_INT(log_records(&dups), 64);
    CHECK_EQ_INT(dups, 0);
}

TEST(paused_task_gets_nothing_then_resume_restores) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 24, "random");
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(2), 2, err);
    CHECK(e != NULL);
    if (!e) return;
    Engine_pause(e, 1, true);
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    run_to_end(e, &seen);
    CHECK_EQ_INT(seen.per_task[0], 24);
    CHECK_EQ_INT(seen.per_task[1], 0);
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    CHECK(snap.rows[1].state == TASK_PAUSED);
    SessionSnapshot_done(&snap);
    Engine_delete(e);

    /* same log, larger budget: 24 restored, 16 new, nothing measured twice;
     * task 1's pause is restored from the log (and says so), then lifted */
    config(&cfg, 40, "random");
    e = Engine_new(&cfg, make_tasks(2), 2, err);
    char resumed[512] = "";
    CHECK(Engine_start(e, resumed, sizeof resumed, err) == TT_OK);
    CHECK_CONTAINS(resumed, "24 measured configs");
    CHECK_CONTAINS(resumed, "steering restored: task 1 paused");
    Engine_snapshot(e, &snap);
    CHECK(snap.rows[1].state == TASK_PAUSED);
    SessionSnapshot_done(&snap);
    Engine_pause(e, 1, false);
    Seen seen2 = {0};
    run_to_end(e, &seen2);
    CHECK_EQ_INT(seen2.results, 16);
    Engine_snapshot(e, &snap);
    CHECK_EQ_INT(snap.trials, 40);
    CHECK_EQ_INT(snap.rows[0].trials + snap.rows[1].trials, 40);
    CHECK(snap.rows[1].trials > 0);
    SessionSnapshot_done(&snap);
    Engine_delete(e);
    int dups;
    CHECK_EQ_INT(log_records(&dups), 40);
    CHECK_EQ_INT(dups, 0);
}

TEST(pause_mid_round_loses_no_config) {
    /* grid over the whole 64-config space in one round of 64: the 21st
     * measurement is held until the task is paused; the pause takes effect
     * before the rest of the round (the task shows paused with fewer than 64
     * measured); after resuming, every config is still measured exactly once */
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 64, "grid");
    cfg.batch = 64;
    atomic_store(&measure_count, 0);
    atomic_store(&measure_hold_open, 0);
    atomic_store(&measure_hold_at, 20);
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(1), 1, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    struct pollfd p = {.fd = Engine_eventFd(e), .events = POLLIN};
    double t0 = clock_mono();
    while (atomic_load(&measure_count) <= 20 && waiting(t0, "21st measurement")) {
        poll(&p, 1, 100);
        drain(e, &seen);
    }
    CHECK(Engine_pause(e, 0, true));
    atomic_store(&measure_hold_open, 1);
    TaskState state = TASK_TUNING;
    t0 = clock_mono();
    while (state != TASK_PAUSED && waiting(t0, "paused state")) {
        poll(&p, 1, 100);
        drain(e, &seen);
        SessionSnapshot snap;
        Engine_snapshot(e, &snap);
        state = snap.rows[0].state;
        SessionSnapshot_done(&snap);
    }
    drain(e, &seen);
    int measured = atomic_load(&measure_count);
    printf("  paused after %d measurements (%d results) of the round of 64\n", measured, seen.results);
    CHECK(state == TASK_PAUSED);
    CHECK(measured < 64); /* the pause cut the round short */
    CHECK(seen.results < 64);
    atomic_store(&measure_hold_at, -1);
    Engine_pause(e, 0, false);
    run_to_end(e, &seen);
    CHECK_EQ_INT(seen.results, 64);
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    CHECK_EQ_INT(snap.rows[0].trials, 64);
    CHECK_NEAR(snap.rows[0].best_latency_s, 1e-3, 1e-9);
    SessionSnapshot_done(&snap);
    Engine_delete(e);
    int dups;
    CHECK_EQ_INT(log_records(&dups), 64);
    CHECK_EQ_INT(dups, 0);
}

TEST(stop_task_and_stop_session) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 1000, "random");
    cfg.batch = 4;
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(2), 2, err);
    CHECK(e != NULL);
    if (!e) return;
    Engine_stopTask(e, 0);
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    struct pollfd p = {.fd = Engine_eventFd(e), .events = POLLIN};
    double t0 = clock_mono();
    while (seen.results < 12 && waiting(t0, "12 results")) {
        poll(&p, 1, 100);
        drain(e, &seen);
    }
    Engine_requestStop(e);
    run_to_end(e, &seen);
    CHECK_EQ_INT(seen.per_task[0], 0);
    CHECK(seen.results >= 12 && seen.results < 64);
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    CHECK(snap.rows[0].state == TASK_STOPPED);
    CHECK(snap.finished);
    SessionSnapshot_done(&snap);
    Engine_delete(e);
    int dups;
    CHECK_EQ_INT(log_records(&dups), seen.results);
}

/* One single-task session on the log; returns the mean GFLOPS of the
 * results it measured (failed configs count 0). */
static double session_mean(const char *tuner, uint64_t seed, int trials, int *n_out) {
    EngineConfig cfg;
    config(&cfg, trials, tuner);
    cfg.seed = seed;
    Seen seen = {0};
    if (!run_session(&cfg, 1, &seen)) return 0;
    *n_out = seen.results;
    return seen.results ? seen.gflops_sum / seen.results : 0;
}

TEST(resumed_xgb_plans_better_than_a_cold_start) {
    /* Per seed: a cold xgb session's first plan (8 configs) against the
     * first plan of an xgb session resumed from a log of 16 random trials
     * (the engine replays the log into the model before its first plan).
     * The fake target's GFLOPS are a deterministic function of the config. */
    int better = 0;
    double cold_sum = 0, warm_sum = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        int n;
        unlink(log_path);
        double cold = session_mean("xgb", seed, 8, &n);
        CHECK_EQ_INT(n, 8);
        unlink(log_path);
        session_mean("random", 100 + seed, 16, &n);
        CHECK_EQ_INT(n, 16);
        double warm = session_mean("xgb", seed, 24, &n);
        CHECK_EQ_INT(n, 8);
        /* the best config runs 1 ms: 2 x 16 x 16 FLOP in 1 ms */
        const double opt = 512 / 1e-3 / 1e9;
        printf("  seed %d: first plan mean %.2f of the optimum cold, %.2f resumed\n", (int)seed, cold / opt,
               warm / opt);
        better += warm > cold;
        cold_sum += cold;
        warm_sum += warm;
    }
    CHECK(better >= 3);
    CHECK(warm_sum > 1.2 * cold_sum);
}

/* Runs a 2-task xgb session of one round per task; true when task 1's
 * strategy said it learned from the other task. */
static bool task1_learned_from_task0(bool isolate) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 16, "xgb");
    cfg.isolate = isolate;
    Seen seen = {0};
    if (!run_session(&cfg, 2, &seen)) return false;
    printf("  isolate=%d: task 1 says \"%s\"\n", isolate, seen.strategy[1]);
    return seen.heard_others[1];
}

TEST(tasks_of_a_template_learn_from_each_other) {
    /* task 0 measures its round first; task 1's model then knows its 8 results */
    CHECK(task1_learned_from_task0(false));
    CHECK(!task1_learned_from_task0(true));
}

/* ---- issue 13: steering that holds over a long session --------------------------- */

/* Drains until cond says stop (checked after every batch of events), with a deadline. */
static bool run_until(Engine *e, Seen *seen, bool (*cond)(Engine *, const Seen *), double secs) {
    struct pollfd p = {.fd = Engine_eventFd(e), .events = POLLIN};
    for (int i = 0; i < (int)(secs * 10); i++) {
        poll(&p, 1, 100);
        drain(e, seen);
        if (cond(e, seen)) return true;
    }
    return false;
}

static bool has_8_results(Engine *e, const Seen *s) {
    (void)e;
    return s->results >= 8;
}

/* defect 2: pause, priority and stop are written to the log and restored on resume */
TEST(steering_survives_a_restart) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 1000, "random");
    cfg.batch = 4;
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(3), 3, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Engine_pause(e, 0, true);
    Engine_stopTask(e, 1);
    Engine_setPriority(e, 2, 2);
    Seen seen = {0};
    CHECK(run_until(e, &seen, has_8_results, 30));
    Engine_requestStop(e);
    run_to_end(e, &seen);
    Engine_delete(e);

    e = Engine_new(&cfg, make_tasks(3), 3, err);
    char resumed[1024] = "";
    CHECK(Engine_start(e, resumed, sizeof resumed, err) == TT_OK);
    CHECK_CONTAINS(resumed, "steering restored: task 0 paused, task 1 stopped, task 2 priority +2");
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    CHECK(snap.rows[0].state == TASK_PAUSED);
    CHECK(snap.rows[0].user_paused);
    CHECK(snap.rows[1].state == TASK_STOPPED);
    CHECK_EQ_INT(snap.rows[2].priority, 2);
    SessionSnapshot_done(&snap);
    Seen seen2 = {0};
    CHECK(run_until(e, &seen2, has_8_results, 30));
    Engine_requestStop(e);
    run_to_end(e, &seen2);
    CHECK_EQ_INT(seen2.per_task[0], 0);
    CHECK_EQ_INT(seen2.per_task[1], 0);
    Engine_delete(e);

    /* defect 1: the log's task list gives every reader the session's IDs */
    History h;
    CHECK(History_load(&h, log_path, err) == TT_OK);
    CHECK_EQ_INT(h.n_sessions, 2);
    CHECK_EQ_INT(h.n_tasks, 3);
    Task *tasks = make_tasks(3);
    for (int t = 0; t < 3 && t < h.n_tasks; t++)
        CHECK_STR(h.tasks[t].key, tasks[t].key);
    for (int t = 0; t < 3; t++)
        Task_done(&tasks[t]);
    free(tasks);
    CHECK(h.tasks[1].steer && h.tasks[1].steer->stopped);
    History_done(&h);
}

/* defect 3: a task stopped before its first result leaves the others' estimate standing */
TEST(estimate_leaves_out_a_task_stopped_without_a_result) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 24, "random");
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(2), 2, err);
    CHECK(e != NULL);
    if (!e) return;
    Engine_stopTask(e, 1);
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    run_to_end(e, &seen);
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    CHECK(isfinite(snap.est_latency_s));
    CHECK_EQ_INT(snap.est_left_out, 1);
    CHECK_NEAR(snap.est_latency_s, snap.rows[0].best_latency_s, 1e-12);
    SessionSnapshot_done(&snap);
    Engine_delete(e);
}

/* A group of alternatives: tasks 0 and 1 are one workload under two templates
 * (task 1's kernels 10 ms slower), task 2 another. The estimate counts the
 * group once, with its faster best; both members are rows of their own, and
 * the log lists both (a key under two templates is two tasks). */
TEST(group_counts_once_in_the_estimate) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 48, "random");
    cfg.scheduler = "gradient";
    char err[TT_ERRLEN] = "";
    Task *tasks = make_tasks(3);
    tasks[1].wl = tasks[0].wl;
    snprintf(tasks[1].key, sizeof tasks[1].key, "%s", tasks[0].key);
    tasks[1].flops = tasks[0].flops;
    tasks[1].tmpl = &fake2_tmpl;
    tasks[0].group = tasks[1].group = 1;
    Engine *e = Engine_new(&cfg, tasks, 3, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    run_to_end(e, &seen);
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    CHECK(snap.rows[0].trials > 0 && snap.rows[1].trials > 0 && snap.rows[2].trials > 0);
    CHECK(snap.rows[1].best_latency_s > snap.rows[0].best_latency_s);
    CHECK_EQ_INT(snap.rows[0].group, 1);
    CHECK_EQ_INT(snap.rows[1].group, 1);
    CHECK_EQ_INT(snap.rows[2].group, 0);
    CHECK_NEAR(snap.est_latency_s, snap.rows[0].best_latency_s + snap.rows[2].best_latency_s, 1e-12);
    printf("  group: trials %d (faster template) and %d, other task %d; estimate %.1f ms\n", snap.rows[0].trials,
           snap.rows[1].trials, snap.rows[2].trials, snap.est_latency_s * 1e3);
    SessionSnapshot_done(&snap);
    Engine_delete(e);
    History h;
    CHECK(History_load(&h, log_path, err) == TT_OK);
    CHECK_EQ_INT(h.n_tasks, 3);
    CHECK_STR(h.tasks[1].template_name, "fake2.cpu");
    CHECK(strcmp(History_bestOfKey(&h, h.tasks[0].key)->template_name, "fake.cpu") == 0);
    History_done(&h);
}

static bool all_shown_paused(Engine *e, const Seen *s) {
    (void)s;
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    bool ok = snap.all_paused;
    for (int t = 0; t < snap.n_tasks; t++)
        if (snap.rows[t].state != TASK_PAUSED) ok = false;
    SessionSnapshot_done(&snap);
    return ok;
}

static int after_resume;
static bool twelve_more(Engine *e, const Seen *s) {
    (void)e;
    return s->per_task[0] + s->per_task[2] >= after_resume + 12;
}

/* defect 4: P twice keeps the pauses set on single tasks, and says "all tasks" */
TEST(pause_all_twice_keeps_single_pauses) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 1000, "random");
    cfg.batch = 4;
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(3), 3, err);
    CHECK(e != NULL);
    if (!e) return;
    Engine_pause(e, 1, true);
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    CHECK(run_until(e, &seen, has_8_results, 30));
    Engine_pauseAll(e, true);
    CHECK(run_until(e, &seen, all_shown_paused, 30));
    Engine_pauseAll(e, false);
    after_resume = seen.per_task[0] + seen.per_task[2];
    CHECK(run_until(e, &seen, twelve_more, 30));
    CHECK_CONTAINS(seen.all_logs, "all tasks paused (P resumes them)\n");
    CHECK_CONTAINS(seen.all_logs, "all tasks resumed, but 1 paused one by one stays paused");
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    CHECK(!snap.all_paused);
    CHECK(snap.rows[1].state == TASK_PAUSED);
    CHECK(snap.rows[1].user_paused);
    SessionSnapshot_done(&snap);
    CHECK_EQ_INT(seen.per_task[1], 0);
    Engine_requestStop(e);
    run_to_end(e, &seen);
    Engine_delete(e);
}

static bool task0_started(Engine *e, const Seen *s) {
    (void)e;
    return s->per_task[0] >= 1;
}
static bool others_started(Engine *e, const Seen *s) {
    (void)e;
    return s->per_task[1] > 0 && s->per_task[2] > 0;
}

/* defect 5: a task paused during its first round gets a whole first round
 * when resumed, even where the gradient rule prefers the heavy tasks */
TEST(task_paused_in_its_first_round_is_not_starved) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 100, "random"); /* first rounds of 100 / (4 x 3) = 8 */
    cfg.scheduler = "gradient";
    cfg.batch = 16;
    char err[TT_ERRLEN] = "";
    Task *tasks = make_tasks(3);
    tasks[1].weight = tasks[2].weight = 1000;
    Engine *e = Engine_new(&cfg, tasks, 3, err);
    CHECK(e != NULL);
    if (!e) return;
    measure_us = 5000;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    CHECK(run_until(e, &seen, task0_started, 30));
    Engine_pause(e, 0, true);
    CHECK(run_until(e, &seen, others_started, 30));
    int first = seen.per_task[0];
    measure_us = 500;
    Engine_pause(e, 0, false);
    run_to_end(e, &seen);
    fprintf(stderr, "  task 0: %d trials before its pause, %d in all; tasks 1, 2: %d, %d\n", first, seen.per_task[0],
            seen.per_task[1], seen.per_task[2]);
    CHECK(first < 8);                     /* the pause did cut its first round */
    CHECK(seen.per_task[0] >= first + 8); /* then it got a whole first round */
    Engine_delete(e);
}

/* defect 6: every task's first round fits in the first quarter of the budget */
TEST(first_round_fits_in_a_quarter_of_the_budget) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 400, "random");
    cfg.scheduler = "gradient";
    cfg.batch = 0;
    char err[TT_ERRLEN] = "";
    enum { N = 12 };
    Engine *e = Engine_new(&cfg, make_tasks(N), N, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    int per[N] = {0}, total = 0, when_all = -1;
    bool finished = false;
    struct pollfd p = {.fd = Engine_eventFd(e), .events = POLLIN};
    while (!finished) {
        poll(&p, 1, 100);
        EngineEvent ev[64];
        int k;
        while ((k = Engine_drainEvents(e, ev, 64)) > 0)
            for (int i = 0; i < k; i++) {
                if (ev[i].kind == EV_RESULT) {
                    per[ev[i].task_id]++;
                    total++;
                    bool all = true;
                    for (int t = 0; t < N; t++)
                        all = all && per[t] > 0;
                    if (all && when_all < 0) when_all = total;
                }
                if (ev[i].kind == EV_FINISHED) finished = true;
                EngineEvent_done(&ev[i]);
            }
    }
    Engine_wait(e);
    fprintf(stderr, "  every task had a result after %d of 400 trials\n", when_all);
    CHECK(when_all > 0 && when_all <= 100);
    CHECK_EQ_INT(total, 400);
    Engine_delete(e);
}

/* defect 11: the strategy's line comes after the round it describes, never before the first progress */
TEST(strategy_line_follows_its_round) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 16, "xgb");
    Seen seen = {0};
    CHECK(run_session(&cfg, 1, &seen));
    CHECK(seen.first_round_at > 0);
    CHECK(seen.first_strategy_at > seen.first_round_at);
    CHECK(strstr(seen.strategy[0], "none yet (") == NULL);
}

/* defect 10: a session that finished is not "stopped" by a later q, and its clock stops */
TEST(finished_session_is_not_stopped_afterwards) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 16, "random");
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(1), 1, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    struct pollfd p = {.fd = Engine_eventFd(e), .events = POLLIN};
    double t0 = clock_mono();
    while (!seen.finished && waiting(t0, "end of session")) {
        poll(&p, 1, 100);
        drain(e, &seen);
    }
    SessionSnapshot a, b;
    Engine_snapshot(e, &a);
    usleep(300000);
    Engine_requestStop(e); /* q after the end */
    Engine_wait(e);
    Engine_snapshot(e, &b);
    CHECK(b.finished);
    CHECK(!b.stopped);
    CHECK_NEAR(a.elapsed_s, b.elapsed_s, 1e-9);
    CHECK_NEAR(a.trials_per_s, b.trials_per_s, 1e-9);
    SessionSnapshot_done(&a);
    SessionSnapshot_done(&b);
    Engine_delete(e);
}

/* defect 11: headless mode ends even when a full queue dropped the last event */
TEST(headless_ends_when_the_last_event_was_dropped) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 32, "random");
    cfg.event_queue = 4;
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(1), 1, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    double t0 = clock_mono();
    while (!Engine_finished(e) && waiting(t0, "end of session"))
        usleep(20000);
    /* the last event is pushed (and dropped) just after the end */
    while (Engine_droppedEvents(e) == 0 && waiting(t0, "dropped event"))
        usleep(5000);
    CHECK(Engine_droppedEvents(e) > 0);
    /* (and a round's strategy line follows its progress, checked below with a queue that keeps all) */
    FILE *out = fopen("/dev/null", "w");
    volatile int stop = 0;
    alarm(60); /* a hang fails the test instead of blocking the suite */
    CHECK_EQ_INT(Headless_run(e, out, &stop, 0), 0);
    alarm(0);
    fclose(out);
    Engine_wait(e);
    Engine_delete(e);
}

/* The roof stop through the engine. The fake target's best config runs 1 ms;
 * the machine's figures put task 0's roof at 1/1.05 ms (its best is then 95%
 * of the roof, any other config under 48%) and task 1's (twice the FLOPs) at
 * 2/1.05 ms. Both reach their roofs long before the budget: the session ends
 * early with both "at roof", and every record carries its roof. Resumed, a
 * task at its roof gets no trials unless its priority is raised. */
static void roof_config(EngineConfig *cfg, int trials, double stop) {
    config(cfg, trials, "grid");
    cfg->scheduler = "gradient";
    cfg->roof_stop = stop;
    cfg->have_machine = true;
    MachineFigures *m = &cfg->machine;
    memset(m, 0, sizeof *m);
    snprintf(m->key, sizeof m->key, "00000000000000aa");
    m->cores = 1;
    m->peak1_gflops = m->peak_gflops = 512 / 1e-3 / 1e9 * 1.05;
    m->bw1_gbs = m->bw_gbs = 1e6; /* compute-bound */
}

TEST(roof_stop_through_the_engine) {
    unlink(log_path);
    EngineConfig cfg;
    roof_config(&cfg, 128, 0.9);
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(2), 2, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen seen = {0};
    run_to_end(e, &seen);
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    printf("  roof stop: %d of 128 trials (task 0 %d, task 1 %d), lower bound %.3f ms\n", seen.results,
           seen.per_task[0], seen.per_task[1], snap.roof_latency_s * 1e3);
    CHECK(seen.results < 128);
    for (int t = 0; t < 2; t++) {
        CHECK(snap.rows[t].state == TASK_AT_ROOF);
        CHECK_NEAR(snap.rows[t].roof_gflops, 512 / 1e-3 / 1e9 * 1.05, 1e-12); /* compute-bound: the peak */
        CHECK_EQ_INT(snap.rows[t].roof_bound, 0);
        CHECK(Roof_share(snap.rows[t].best_gflops, snap.rows[t].roof_gflops) >= 0.9);
    }
    CHECK_NEAR(snap.roof_latency_s, 3 / 1.05e3, 1e-9); /* (1 + 2) ms / 1.05 */
    SessionSnapshot_done(&snap);
    Engine_delete(e);
    /* every record carries the roof and the machine's key */
    LogReader *rd;
    LogHeader h;
    CHECK(LogReader_open(log_path, &rd, &h, err) == TT_OK);
    Record rec;
    Record_init(&rec);
    int n = 0, with_roof = 0;
    while (LogReader_next(rd, &rec, err) == LOG_RECORD) {
        n++;
        with_roof += rec.roof_gflops > 0 && strcmp(rec.machine_key, "00000000000000aa") == 0;
    }
    Record_done(&rec);
    LogReader_close(rd);
    CHECK_EQ_INT(with_roof, n);

    /* resumed: nothing to do at the roof... */
    roof_config(&cfg, 256, 0.9);
    Seen again = {0};
    CHECK(run_session(&cfg, 2, &again));
    CHECK_EQ_INT(again.results, 0);
    /* ...until task 0's priority is raised: it gets trials, task 1 none */
    e = Engine_new(&cfg, make_tasks(2), 2, err);
    CHECK(e != NULL);
    if (!e) return;
    Engine_setPriority(e, 0, 1);
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    Seen raised = {0};
    run_to_end(e, &raised);
    printf("  priority +1 on task 0: %d more trials (task 0 %d, task 1 %d)\n", raised.results, raised.per_task[0],
           raised.per_task[1]);
    CHECK(raised.per_task[0] > 0);
    CHECK_EQ_INT(raised.per_task[1], 0);
    Engine_delete(e);
    /* --roof-stop 0: the tasks get trials again */
    int dups;
    roof_config(&cfg, log_records(&dups) + 32, 0);
    Seen off = {0};
    CHECK(run_session(&cfg, 2, &off));
    CHECK_EQ_INT(off.results, 32);
}

/* ---- faults in the log: every call of the seam fails in turn ---------------- */

#define FAULT_MAX_KEYS 256

/* (task, index) keys of records: published as EV_RESULT, or found in the log. */
typedef struct KeySet {
    int n;
    char key[FAULT_MAX_KEYS][224];
} KeySet;

static void keyset_add(KeySet *s, const Record *r) {
    if (s->n < FAULT_MAX_KEYS)
        snprintf(s->key[s->n++], sizeof s->key[0], "%s#%llu", r->task_key, (unsigned long long)r->index);
}

static bool keyset_has(const KeySet *s, const char *k) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->key[i], k) == 0) return true;
    return false;
}

/* Reads the log: its records into s; false when it is damaged (a torn tail is
 * allowed: a partial record that even the cut-off failed to remove). */
static bool read_log_keys(KeySet *s, LogReadStatus *end) {
    s->n = 0;
    LogReader *rd;
    char err[TT_ERRLEN];
    *end = LOG_END;
    if (LogReader_open(log_path, &rd, NULL, err) != TT_OK)
        return strstr(err, "is empty") || strstr(err, "does not exist");
    Record rec;
    Record_init(&rec);
    LogReadStatus st;
    while ((st = LogReader_next(rd, &rec, err)) == LOG_RECORD)
        keyset_add(s, &rec);
    Record_done(&rec);
    LogReader_close(rd);
    *end = st;
    return st != LOG_DAMAGED;
}

/* One session with the nth seam call failing; before = the log's records
 * at the start (resume). Checks the log against what was published. */
static int fault_session(int nth, int error, bool short_write, const KeySet *before, long *calls,
                         int *records_checked) {
    EngineConfig cfg;
    config(&cfg, 24, "random");
    char err[TT_ERRLEN] = "";
    LogIo_failAt(nth, error, short_write);
    Engine *e = Engine_new(&cfg, make_tasks(2), 2, err);
    CHECK(e != NULL);
    if (!e) return 0;
    KeySet pub = {0};
    bool started = Engine_start(e, NULL, 0, err) == TT_OK;
    LogOutcome lo = {0};
    if (started) {
        struct pollfd p = {.fd = Engine_eventFd(e), .events = POLLIN};
        bool finished = false;
        while (!finished) {
            poll(&p, 1, 100);
            EngineEvent ev[64];
            int k;
            while ((k = Engine_drainEvents(e, ev, 64)) > 0)
                for (int i = 0; i < k; i++) {
                    if (ev[i].kind == EV_RESULT) keyset_add(&pub, ev[i].record);
                    if (ev[i].kind == EV_FINISHED) finished = true;
                    EngineEvent_done(&ev[i]);
                }
        }
        Engine_wait(e);
        Engine_logOutcome(e, &lo);
    }
    Engine_delete(e);
    int fired = LogIo_faults();
    *calls = LogIo_calls();
    LogIo_failAt(0, 0, false);

    KeySet in_log;
    LogReadStatus end;
    bool clean = read_log_keys(&in_log, &end);
    int problems = 0;
    /* the log reads cleanly; it holds every record published and the ones it
     * held before, and none that was not published */
    if (!clean) problems++;
    for (int i = 0; i < pub.n; i++)
        if (!keyset_has(&in_log, pub.key[i])) problems++;
    for (int i = 0; i < before->n; i++)
        if (!keyset_has(&in_log, before->key[i])) problems++;
    for (int i = 0; i < in_log.n; i++)
        if (!keyset_has(&pub, in_log.key[i]) && !keyset_has(before, in_log.key[i])) problems++;
    if (started && lo.records != in_log.n) problems++;
    /* a fault that fired is a failed session: it did not start, or the log failed */
    if (fired && started && !lo.failed) problems++;
    if (!fired && (!started || lo.failed)) problems++;
    *records_checked += in_log.n;
    if (problems)
        fprintf(stderr,
                "  call %d (%s%s): fired %d, started %d, failed %d, published %d, in log %d (before %d), end %d: %s\n",
                nth, strerror(error), short_write ? ", short write" : "", fired, started, lo.failed, pub.n, in_log.n,
                before->n, end, lo.error);
    return problems == 0 && fired;
}

/* A log of 10 records and a torn tail, for the resumed sessions. */
static void prepare_resume_log(KeySet *before) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 10, "random");
    Seen seen = {0};
    run_session(&cfg, 2, &seen);
    FILE *f = fopen(log_path, "ab");
    fwrite("\x8f\xa4task\xa5", 1, 7, f); /* the start of a record: a crash mid-write */
    fclose(f);
    LogReadStatus end;
    read_log_keys(before, &end);
}

TEST(every_log_call_failing_in_turn_loses_nothing_and_invents_nothing) {
    const int errs[] = {ENOSPC, EIO, EFBIG};
    KeySet none = {0}, before;
    long clean_calls[2] = {0, 0};
    int sessions = 0, passed = 0, records_checked = 0;
    for (int resume = 0; resume < 2; resume++) {
        /* a clean session first: how many seam calls it makes */
        if (resume)
            prepare_resume_log(&before);
        else
            unlink(log_path);
        int ignored = 0;
        long calls;
        fault_session(0, 0, false, resume ? &before : &none, &calls, &ignored);
        clean_calls[resume] = calls;
        for (long nth = 1; nth <= calls; nth++)
            for (int kind = 0; kind < 4; kind++) {
                if (resume)
                    prepare_resume_log(&before);
                else
                    unlink(log_path);
                long c;
                sessions++;
                passed +=
                    fault_session((int)nth, errs[kind % 3], kind == 3, resume ? &before : &none, &c, &records_checked);
            }
    }
    printf(
        "  log faults: %d sessions (each of %ld + %ld seam calls failing in turn with ENOSPC, EIO, EFBIG and a short "
        "write), %d records checked: %d clean (every published record in the log, nothing else, the session "
        "failed)\n",
        sessions, clean_calls[0], clean_calls[1], records_checked, passed);
    CHECK(clean_calls[0] > 24);
    CHECK_EQ_INT(passed, sessions);
}

/* ---- a measure backend (tuner/backend.h), as the MPI ranks are one ----------- */

/* Hands outcomes back newest first (completion order is not submission
 * order); the first time it sees every 5th job it gives it back unmeasured
 * (as a lost rank would), once it says a note; b == 5 fails to build. */
typedef struct FakeBackend {
    BackendJob jobs[256];
    int n;
    int seen_jobs, unmeasured, notes;
    uint64_t given_back[256]; /* index + 1 of jobs given back unmeasured */
    int n_given_back;
    int machine_faults; /* measurements that fail as a killed worker does: 0 none, -1 every one */
    uint64_t faulted;   /* index + 1 of the last job that did */
} FakeBackend;

/* A measurement of job j failed by its rank's machine (the worker killed from outside). */
static void fb_machine_fault(FakeBackend *fb, const BackendJob *j, BackendOutcome *out) {
    out->kind = OUTCOME_MEASURED;
    out->mr.error_no = ERR_RUNTIME_DEVICE;
    out->mr.machine_fault = true;
    out->mr.msg = strdup("worker killed by signal 9 (from outside: not the kernel's fault)");
    snprintf(out->host, sizeof out->host, "fakehost");
    out->rank = 2;
    fb->faulted = j->index + 1;
    if (fb->machine_faults > 0) fb->machine_faults--;
}

static void fb_submit(void *ctx, const BackendJob *jobs, int n) {
    FakeBackend *fb = ctx;
    for (int i = 0; i < n && fb->n < 256; i++)
        fb->jobs[fb->n++] = jobs[i];
}

static void fb_measure(const BackendJob *jp, BackendOutcome *out);

static bool fb_next(void *ctx, BackendOutcome *out, double timeout_s) {
    FakeBackend *fb = ctx;
    memset(out, 0, sizeof *out);
    MeasureResult_init(&out->mr);
    if (fb->notes == 0) {
        fb->notes++;
        out->kind = OUTCOME_NOTE;
        out->warn = true;
        snprintf(out->note, sizeof out->note, "rank 2 on fakehost: a note");
        return true;
    }
    if (fb->n == 0) return false;
    BackendJob j = fb->jobs[--fb->n];
    out->cookie = j.cookie;
    bool again = false;
    for (int i = 0; i < fb->n_given_back; i++)
        again |= fb->given_back[i] == j.index + 1;
    if (++fb->seen_jobs % 5 == 0 && !again && fb->n_given_back < 256) {
        out->kind = OUTCOME_UNMEASURED;
        fb->given_back[fb->n_given_back++] = j.index + 1;
        fb->unmeasured++;
        return true;
    }
    if (fb->machine_faults != 0 && fb->seen_jobs > 2) {
        fb_machine_fault(fb, &j, out);
        return true;
    }
    fb_measure(&j, out);
    return true;
}

/* A measured outcome of job j from rank 2 of fakehost (b == 5 fails to build). */
static void fb_measure(const BackendJob *jp, BackendOutcome *out) {
    BackendJob j = *jp;
    out->cookie = j.cookie;
    out->kind = OUTCOME_MEASURED;
    int32_t c[2];
    Space sp;
    Space_init(&sp);
    char err[TT_ERRLEN];
    fake_space(NULL, NULL, &sp, err);
    Space_decode(&sp, j.index, c);
    int a = (int)Space_option(&sp, c, 0), b = (int)Space_option(&sp, c, 1);
    Space_done(&sp);
    out->regs = out->spills = -1;
    out->shared_bytes = out->local_bytes = -1;
    if (b == 5) {
        out->build_error = ERR_COMPILE_HOST;
        out->mr.msg = strdup("k.c:3:1: error: expected ';'");
    } else {
        out->mr.n_costs = 2;
        out->mr.costs[0] = out->mr.costs[1] = 1e-3 * (1 + abs(a - 3) + abs(b - 2));
    }
    snprintf(out->host, sizeof out->host, "fakehost");
    out->rank = 2;
    snprintf(out->device, sizeof out->device, "fake device");
}

static void fb_cancel(void *ctx, int group) {}

static int fb_devices(void *ctx, DeviceRow *out, int max) {
    if (max < 1) return 0;
    memset(out, 0, sizeof *out);
    out->rank = 2;
    snprintf(out->host, sizeof out->host, "fakehost");
    out->state = DEVSTATE_MEASURING;
    return 1;
}

TEST(measure_backend_records_completion_order_and_requeues) {
    unlink(log_path);
    FakeBackend fb = {0};
    MeasureBackend be = {.ctx = &fb, .submit = fb_submit, .next = fb_next, .cancel = fb_cancel, .devices = fb_devices};
    EngineConfig cfg;
    config(&cfg, 40, "random");
    cfg.backend = &be;
    Seen seen = {0};
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(1), 1, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    DeviceRow rows[4];
    CHECK_EQ_INT(Engine_devices(e, rows, 4), 1);
    CHECK_EQ_INT(rows[0].rank, 2);
    run_to_end(e, &seen);
    CHECK_EQ_INT(seen.results, 40);
    CHECK(fb.unmeasured > 0);
    CHECK(strstr(seen.all_logs, "rank 2 on fakehost: a note") != NULL);
    Engine_delete(e);
    int dups;
    CHECK_EQ_INT(log_records(&dups), 40);
    CHECK_EQ_INT(dups, 0);
    /* every record says where it was measured; a job given back unmeasured was measured later */
    LogReader *rd;
    LogHeader h;
    CHECK(LogReader_open(log_path, &rd, &h, err) == TT_OK);
    Record rec;
    Record_init(&rec);
    int here = 0, compile_errors = 0, requeued_measured = 0;
    while (LogReader_next(rd, &rec, err) == LOG_RECORD) {
        if (strcmp(rec.host, "fakehost") == 0 && rec.rank == 2 && strcmp(rec.device, "fake device") == 0) here++;
        if (rec.error_no == ERR_COMPILE_HOST) compile_errors++;
        for (int i = 0; i < fb.n_given_back; i++)
            requeued_measured += fb.given_back[i] == rec.index + 1;
    }
    Record_done(&rec);
    LogReader_close(rd);
    /* INSTANTIATION errors never reach the backend: they name this process */
    CHECK(here > 0);
    CHECK(compile_errors > 0);
    CHECK(requeued_measured > 0);
}

/* A rank's machine fault (its worker killed from outside) is not the
 * candidate's: never recorded, the job is measured again; the same rank
 * failing so twice in a row stops the session, with no error records. */
TEST(backend_machine_fault_is_not_the_candidates) {
    for (int always = 0; always <= 1; always++) {
        unlink(log_path);
        FakeBackend fb = {.machine_faults = always ? -1 : 1};
        MeasureBackend be = {
            .ctx = &fb, .submit = fb_submit, .next = fb_next, .cancel = fb_cancel, .devices = fb_devices};
        EngineConfig cfg;
        config(&cfg, 40, "random");
        cfg.backend = &be;
        Seen seen = {0};
        char err[TT_ERRLEN] = "", why[TT_ERRLEN] = "";
        Engine *e = Engine_new(&cfg, make_tasks(1), 1, err);
        CHECK(e != NULL);
        if (!e) return;
        CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
        run_to_end(e, &seen);
        CHECK(strstr(seen.all_logs, "a fault of that machine, not of the candidate") != NULL);
        CHECK_EQ_INT(Engine_machineFault(e, why, sizeof why), always);
        Engine_delete(e);
        int dups;
        int n = log_records(&dups);
        CHECK_EQ_INT(seen.errors_by[ERR_RUNTIME_DEVICE], 0);
        if (!always) {
            CHECK_EQ_INT(n, 40); /* the faulted job too, measured again */
            LogReader *rd;
            LogHeader h;
            CHECK(LogReader_open(log_path, &rd, &h, err) == TT_OK);
            Record rec;
            Record_init(&rec);
            int again = 0;
            while (LogReader_next(rd, &rec, err) == LOG_RECORD) {
                again += rec.index + 1 == fb.faulted;
                CHECK(rec.error_no != ERR_RUNTIME_DEVICE);
            }
            Record_done(&rec);
            LogReader_close(rd);
            CHECK_EQ_INT(again, 1);
        } else {
            CHECK(strstr(why, "rank 2 (fakehost): worker killed by signal 9") != NULL);
            CHECK(n < 40);
        }
    }
}

/* A backend of four slots whose first job is slow: it comes back only after
 * SLOW_AFTER others (a slow rank). Outcomes in submission order otherwise. */
#define SLOW_AFTER 20
typedef struct SlowBackend {
    BackendJob q[512];
    int head, tail;
    BackendJob held;
    bool holding, held_back;
    int given;    /* outcomes given back */
    int held_pos; /* outcomes given before the slow one */
    int submits;  /* submit calls */
} SlowBackend;

static void sb_submit(void *ctx, const BackendJob *jobs, int n) {
    SlowBackend *sb = ctx;
    sb->submits++;
    for (int i = 0; i < n; i++) {
        if (!sb->holding && !sb->held_back) {
            sb->held = jobs[i];
            sb->holding = true;
        } else if (sb->tail < 512) {
            sb->q[sb->tail++] = jobs[i];
        }
    }
}

static int sb_want(void *ctx) {
    SlowBackend *sb = ctx;
    return 4 - sb->holding - (sb->tail - sb->head);
}

static bool sb_next(void *ctx, BackendOutcome *out, double timeout_s) {
    SlowBackend *sb = ctx;
    memset(out, 0, sizeof *out);
    MeasureResult_init(&out->mr);
    if (sb->holding && (sb->given >= SLOW_AFTER || sb->head == sb->tail)) {
        if (sb->head == sb->tail && sb->given < SLOW_AFTER) return false; /* the slow job is not done yet */
        sb->holding = false;
        sb->held_back = true;
        sb->held_pos = sb->given++;
        fb_measure(&sb->held, out);
        return true;
    }
    if (sb->head == sb->tail) return false;
    sb->given++;
    fb_measure(&sb->q[sb->head++], out);
    return true;
}

/* A slow job does not stall the session: the engine keeps the backend's free
 * slots filled with further rounds, records their results as they come, and
 * the slow one when it comes; nothing is measured twice. */
TEST(measure_backend_is_a_queue) {
    unlink(log_path);
    SlowBackend sb = {0};
    MeasureBackend be = {
        .ctx = &sb, .submit = sb_submit, .next = sb_next, .cancel = fb_cancel, .want = sb_want, .devices = fb_devices};
    EngineConfig cfg;
    config(&cfg, 40, "random");
    cfg.backend = &be;
    Seen seen = {0};
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(2), 2, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    run_to_end(e, &seen);
    CHECK_EQ_INT(seen.results, 40);
    CHECK(sb.held_back);
    CHECK_EQ_INT(sb.held_pos, SLOW_AFTER); /* 20 results of later rounds came first */
    CHECK(sb.submits >= 4);                /* rounds of 8 kept coming while the slow job was out */
    Engine_delete(e);
    int dups;
    CHECK_EQ_INT(log_records(&dups), 40);
    CHECK_EQ_INT(dups, 0);
}

/* Steering beyond the queue's room is refused (false), not dropped silently;
 * an engine not started never drains its queue. */
TEST(full_steering_queue_refuses) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 8, "grid");
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(1), 1, err);
    CHECK(e != NULL);
    if (!e) return;
    int accepted = 0;
    for (int i = 0; i < ENGINE_MAX_COMMANDS; i++)
        accepted += Engine_setPriority(e, 0, i % 2);
    CHECK_EQ_INT(accepted, ENGINE_MAX_COMMANDS);
    CHECK(!Engine_setPriority(e, 0, 1));
    CHECK(!Engine_pause(e, 0, true));
    CHECK(!Engine_pauseAll(e, true));
    CHECK(!Engine_stopTask(e, 0));
    Engine_delete(e);
}

TEST(bad_config_is_an_error) {
    EngineConfig cfg;
    config(&cfg, 10, "no-such-tuner");
    char err[TT_ERRLEN] = "";
    Task *tasks = make_tasks(1);
    Engine *e = Engine_new(&cfg, tasks, 1, err);
    CHECK(e == NULL);
    CHECK_CONTAINS(err, "no-such-tuner");
    Task_done(&tasks[0]);
    free(tasks);
}

TEST(every_trial_failed_is_warned_once_by_the_engine) {
    /* the one home of the warning: the engine's EV_LOG (the UI shows it as it is) */
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 40, "grid");
    fail_every_build = true;
    Seen seen = {0};
    run_session(&cfg, 1, &seen);
    fail_every_build = false;
    CHECK_EQ_INT(seen.results, 40);
    int warnings = 0;
    for (const char *p = seen.all_logs; (p = strstr(p, "every trial of task 0 failed so far")); p++)
        warnings++;
    CHECK_EQ_INT(warnings, 1);
}

TEST(restored_trials_are_handed_over_once_before_new_results) {
    unlink(log_path);
    EngineConfig cfg;
    config(&cfg, 24, "grid");
    Seen seen = {0};
    CHECK(run_session(&cfg, 2, &seen));
    CHECK_EQ_INT(seen.results, 24);
    int errors = seen.results - seen.errors_by[ERR_NO_ERROR];

    config(&cfg, 40, "grid");
    char err[TT_ERRLEN] = "";
    Engine *e = Engine_new(&cfg, make_tasks(2), 2, err);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(Engine_start(e, NULL, 0, err) == TT_OK);
    ResumeTrial *tr = NULL;
    int n = Engine_takeRestored(e, &tr);
    CHECK_EQ_INT(n, 24);
    int per_task[2] = {0, 0}, fails = 0, bests = 0;
    bool numbered = true, failures_whole = true;
    for (int i = 0; i < n; i++) {
        if (tr[i].task < 0 || tr[i].task > 1) continue;
        numbered &= tr[i].trial == ++per_task[tr[i].task];
        if (tr[i].error_no) {
            fails++;
            failures_whole &= tr[i].failure && tr[i].failure->error_no == tr[i].error_no && tr[i].gflops == 0;
        } else {
            failures_whole &= tr[i].failure == NULL && tr[i].gflops > 0;
        }
        bests += tr[i].best;
    }
    CHECK(numbered);
    CHECK(failures_whole);
    CHECK_EQ_INT(fails, errors);
    CHECK(bests >= 2); /* each task's first success at least */
    ResumeTrials_free(tr, n);
    ResumeTrial *again = NULL;
    CHECK_EQ_INT(Engine_takeRestored(e, &again), 0);
    CHECK(again == NULL);
    /* the session's own results go on from the restored trial numbers */
    EngineEvent ev[64];
    int first_trial[2] = {0, 0};
    Seen seen2 = {0};
    struct pollfd p = {.fd = Engine_eventFd(e), .events = POLLIN};
    while (!seen2.finished) {
        poll(&p, 1, 100);
        int k = Engine_drainEvents(e, ev, 64);
        for (int i = 0; i < k; i++) {
            if (ev[i].kind == EV_RESULT && ev[i].task_id >= 0 && ev[i].task_id < 2 && !first_trial[ev[i].task_id])
                first_trial[ev[i].task_id] = ev[i].trial;
            if (ev[i].kind == EV_RESULT) seen2.results++;
            if (ev[i].kind == EV_FINISHED) seen2.finished++;
            EngineEvent_done(&ev[i]);
        }
    }
    Engine_wait(e);
    CHECK_EQ_INT(seen2.results, 16);
    for (int t = 0; t < 2; t++)
        if (first_trial[t]) CHECK_EQ_INT(first_trial[t], per_task[t] + 1);
    Engine_delete(e);
}

/* ---- the builder pool's compile cache ------------------------------------- */

static atomic_int file_builds; /* compiles file_build did */

/* writes the source text as the artifact wd/kTAG.so; b == 5 does not compile */
static void file_build(const KernelSource *src, const DeviceInfo *dev, const MeasureOptions *opt, const char *wd,
                       uint64_t tag, BuildResult *out) {
    atomic_fetch_add(&file_builds, 1);
    int a, b;
    sscanf(src->source, "%d %d", &a, &b);
    if (b == 5) {
        out->error_no = ERR_COMPILE_HOST;
        out->msg = strdup("k.c:3:1: error: expected ';'");
        return;
    }
    snprintf(out->path, sizeof out->path, "%s/k%llu.so", wd, (unsigned long long)tag);
    FILE *f = fopen(out->path, "w");
    if (f) {
        fputs(src->source, f);
        fclose(f);
    }
    out->regs_per_thread = 10 * a + b;
}

static const Target file_target = {.name = "cpu", .family = FAMILY_CPU, .dialect = DIALECT_C, .build = file_build};

static void read_text(const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* The same source twice: one compile, the second job gets a file of its own
 * with the same content and resources; failed builds are never reused; the
 * pool leaves nothing behind. */
TEST(builder_compiles_a_source_once) {
    char dir[] = "/tmp/tt-builder-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    Task *tasks = make_tasks(1);
    DeviceInfo dev;
    memset(&dev, 0, sizeof dev);
    MeasureOptions mo;
    MeasureOptions_defaults(&mo);
    BuilderPool *pool = BuilderPool_new(2, &file_target, &dev, &mo, dir);
    /* a=1 b=2 twice, a=3 b=2, a=1 b=5 (fails) twice */
    int32_t want[5][2] = {{1, 2}, {1, 2}, {3, 2}, {1, 5}, {1, 5}};
    BuildJob jobs[5];
    for (int i = 0; i < 5; i++) {
        int32_t c[SPACE_MAX_KNOBS] = {want[i][0], want[i][1]};
        BuildJob_init(&jobs[i], &tasks[0], Space_encode(&tasks[0].space, c));
    }
    atomic_store(&file_builds, 0);
    BuilderPool_run(pool, jobs, 1, NULL); /* the first alone: the second must find it */
    BuilderPool_run(pool, jobs + 1, 4, NULL);
    CHECK_EQ_INT(atomic_load(&file_builds), 4);
    CHECK_EQ_INT(BuilderPool_cacheHits(pool), 1);
    CHECK_EQ_INT(jobs[1].result.error_no, ERR_NO_ERROR);
    CHECK(strcmp(jobs[0].result.path, jobs[1].result.path) != 0);
    char t0[64], t1[64];
    read_text(jobs[0].result.path, t0, sizeof t0);
    read_text(jobs[1].result.path, t1, sizeof t1);
    CHECK_STR(t0, "1 2");
    CHECK_STR(t1, "1 2");
    CHECK_EQ_INT(jobs[1].result.regs_per_thread, 12);
    CHECK_EQ_INT(jobs[2].result.regs_per_thread, 32);
    CHECK_EQ_INT(jobs[3].result.error_no, ERR_COMPILE_HOST);
    CHECK_EQ_INT(jobs[4].result.error_no, ERR_COMPILE_HOST);
    for (int i = 0; i < 5; i++)
        BuildJob_done(&jobs[i]);
    BuilderPool_delete(pool);
    CHECK(rmdir(dir) == 0); /* empty: the jobs' files and the cache's copies are gone */
    Task_done(&tasks[0]);
    free(tasks);
}

int main(void) {
    snprintf(log_path, sizeof log_path, "%s/tt-engine-%d.log", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    RUN(budget_errors_and_best);
    RUN(measure_backend_records_completion_order_and_requeues);
    RUN(measure_backend_is_a_queue);
    RUN(backend_machine_fault_is_not_the_candidates);
    RUN(paused_task_gets_nothing_then_resume_restores);
    RUN(pause_mid_round_loses_no_config);
    RUN(stop_task_and_stop_session);
    RUN(tasks_of_a_template_learn_from_each_other);
    RUN(roof_stop_through_the_engine);
    RUN(resumed_xgb_plans_better_than_a_cold_start);
    RUN(steering_survives_a_restart);
    RUN(estimate_leaves_out_a_task_stopped_without_a_result);
    RUN(group_counts_once_in_the_estimate);
    RUN(pause_all_twice_keeps_single_pauses);
    RUN(task_paused_in_its_first_round_is_not_starved);
    RUN(first_round_fits_in_a_quarter_of_the_budget);
    RUN(finished_session_is_not_stopped_afterwards);
    RUN(headless_ends_when_the_last_event_was_dropped);
    RUN(strategy_line_follows_its_round);
    RUN(full_steering_queue_refuses);
    RUN(bad_config_is_an_error);
    RUN(every_trial_failed_is_warned_once_by_the_engine);
    RUN(restored_trials_are_handed_over_once_before_new_results);
    RUN(every_log_call_failing_in_turn_loses_nothing_and_invents_nothing);
    RUN(builder_compiles_a_source_once);
    unlink(log_path);
    char tsv[300];
    snprintf(tsv, sizeof tsv, "%s.tsv", log_path);
    unlink(tsv);
    return check_summary();
}
