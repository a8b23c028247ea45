/* bench/search_bench.c: sample efficiency and throughput of the search
 * strategies on real CPU measurements, in one run.
 *
 * Part 1, sample efficiency. For every task (three ResNet-18 conv2d layers
 * and two classifier dense layers by default), every seed and every tuner (xgb, ga, random), a
 * session with the same trial budget drives the strategy exactly as the
 * engine does (propose a batch of plan_size, precheck, build on the builder
 * pool, measure on the cpu target's runner, update). Every config of a task
 * is measured for real ONCE (GFLOPS of its fastest repeat) and the value is
 * shared by every session that proposes it: all tuners then search the same
 * objective, so a noisy measurement (this machine is shared) cannot favour
 * one of them, and the sessions cost less. Per task, with B = the best GFLOPS any session found:
 * trials each session needed to reach 90% and 95% of B (">N" = never) and the
 * best it reached; over all tasks and seeds the median trials to 95% per
 * tuner and the ratio xgb / random (the goal is <= 1/3). It also reports the
 * strategy's own time per trial (propose + update), the overhead it adds.
 *
 * Part 2, throughput (--engine-trials N > 0): for xgb and random, one real
 * engine session per task (tuner/engine.h, its own log in /tmp), trials per
 * second end to end.
 *
 * Part 3, warm start (--warm-history N > 0): on the first --warm-tasks tasks,
 * a real engine session of N random trials writes a log; then, per seed, a
 * cold xgb session and an xgb session resumed from a copy of that log (the
 * engine replays it into the strategy before the first propose) each measure
 * one plan; the bench prints the mean and best GFLOPS of both first plans.
 *
 * The worker (tunetop-worker) must be built from the same tree.
 *
 * usage: search_bench [--trials N] [--seeds S] [--tuners xgb,ga,random] [--task SPEC ...]
 *                     [--engine-trials N] [--warm-history N] [--warm-tasks K] [--warm-seeds S]
 *                     [--number N] [--repeat R] [--csv FILE]
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "kernels/target.h"
#include "tuner/builder.h"
#include "tuner/engine.h"
#include "tuner/search/strategy.h"

/* Strong references to what the bench needs from the static libraries: the
 * registries once referred to them weakly, which does not pull an object out
 * of a static library; these keep the bench working whatever they do. */
extern const Strategy strategy_xgb;
extern const Target target_cpu;
extern const Template tmpl_conv2d_cpu, tmpl_dense_cpu;
const void *const search_bench_keep[] = {&strategy_xgb, &target_cpu, &tmpl_conv2d_cpu, &tmpl_dense_cpu};

#define MAX_TASKS 16
#define MAX_TUNERS 4
#define MAX_SEEDS 16
#define PLAN 64
/* A pseudo-tuner: xgb warm-started with the other same-template tasks' xgb records (leave one out). */
#define XFER_ROW "xgb+transfer"

static const char *const DEFAULT_TASKS[] = {
    "conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=1,pad=1",
    "conv2d:n=1,ci=128,h=28,w=28,co=128,kh=3,kw=3,stride=1,pad=1",
    "conv2d:n=1,ci=256,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1",
    "dense:m=1,n=1000,k=512",
    /* a second classifier (MobileNet's), so that dense has another task of its template too */
    "dense:m=1,n=1000,k=1024",
};

typedef struct Run {
    int n;           /* trials */
    double *gflops;  /* per trial, in order */
    uint64_t *index; /* the config of each trial */
    double best;
    double strategy_s; /* time inside propose + update */
} Run;

static int split_list(char *s, const char **out, int max) {
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

/* ---- part 1: sessions over shared measurements ------------------------------ */

/* index -> GFLOPS of every config of the task measured so far (open addressing). */
typedef struct Measured {
    uint64_t *key; /* UINT64_MAX = empty */
    double *gflops;
    uint64_t cap, count;
} Measured;

static void Measured_init(Measured *m) {
    m->cap = 1 << 14;
    m->count = 0;
    m->key = malloc(sizeof(uint64_t) * m->cap);
    m->gflops = malloc(sizeof(double) * m->cap);
    if (!m->key || !m->gflops) abort();
    memset(m->key, 0xff, sizeof(uint64_t) * m->cap);
}

static void Measured_done(Measured *m) {
    free(m->key);
    free(m->gflops);
}

static uint64_t Measured_slot(const Measured *m, uint64_t k) {
    uint64_t h = k * 0x9e3779b97f4a7c15ULL;
    for (uint64_t i = (h >> 17) & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
        if (m->key[i] == k || m->key[i] == UINT64_MAX) return i;
}

static bool Measured_get(const Measured *m, uint64_t k, double *g) {
    uint64_t i = Measured_slot(m, k);
    if (m->key[i] != k) return false;
    *g = m->gflops[i];
    return true;
}

static void Measured_put(Measured *m, uint64_t k, double g) {
    if (2 * (m->count + 1) > m->cap) {
        Measured old = *m;
        m->cap *= 2;
        m->count = 0;
        m->key = malloc(sizeof(uint64_t) * m->cap);
        m->gflops = malloc(sizeof(double) * m->cap);
        if (!m->key || !m->gflops) abort();
        memset(m->key, 0xff, sizeof(uint64_t) * m->cap);
        for (uint64_t i = 0; i < old.cap; i++)
            if (old.key[i] != UINT64_MAX) Measured_put(m, old.key[i], old.gflops[i]);
        Measured_done(&old);
    }
    uint64_t i = Measured_slot(m, k);
    if (m->key[i] != k) m->count++;
    m->key[i] = k;
    m->gflops[i] = g;
}

typedef struct Lab {
    const Target *target;
    DeviceInfo dev;
    MeasureOptions mo;
    BuilderPool *pool;
    Runner *runner;
    const Task *runner_task;
    char workdir[64];
    long built, failed;
    double measure_s;
} Lab;

/* Measures the configs of a batch that no session measured yet: precheck,
 * build in parallel on the pool, time one by one (never during a compile). */
static void measure_batch(Lab *lab, const Task *task, Measured *m, const uint64_t *idx, int n) {
    double t0 = clock_mono();
    BuildJob *jobs = malloc(sizeof(BuildJob) * (size_t)(n ? n : 1));
    if (!jobs) abort();
    int nb = 0;
    for (int i = 0; i < n; i++) {
        double g;
        if (Measured_get(m, idx[i], &g)) continue;
        BuildJob *job = &jobs[nb];
        BuildJob_init(job, task, idx[i]);
        char reason[256];
        if (task->tmpl->precheck &&
            !task->tmpl->precheck(&task->wl, &task->space, job->choice, &lab->dev, reason, sizeof reason)) {
            Measured_put(m, idx[i], 0);
            BuildJob_done(job);
            continue;
        }
        nb++;
    }
    BuilderPool_run(lab->pool, jobs, nb, NULL);
    char err[TT_ERRLEN];
    for (int i = 0; i < nb; i++) {
        BuildJob *job = &jobs[i];
        double g = 0;
        char why[256];
        snprintf(why, sizeof why, "%s", job->result.msg ? job->result.msg : MeasureError_name(job->result.error_no));
        lab->built++;
        if (job->result.error_no == ERR_NO_ERROR) {
            if (lab->runner_task != task) {
                if (lab->target->runner_set_task(lab->runner, &task->wl, err) != TT_OK)
                    fprintf(stderr, "    runner: %s\n", err);
                lab->runner_task = task;
            }
            MeasureResult mr;
            MeasureResult_init(&mr);
            lab->target->measure(lab->runner, &job->src, &job->result, &lab->mo, &mr);
            snprintf(why, sizeof why, "%s", mr.msg ? mr.msg : MeasureError_name(mr.error_no));
            if (mr.error_no == ERR_NO_ERROR && mr.n_costs > 0) {
                /* The fastest repeat: on a shared machine other processes only
                 * ever slow a run down, so the minimum is the steadiest estimate. */
                double best = mr.costs[0];
                for (int c = 1; c < mr.n_costs; c++)
                    if (mr.costs[c] < best) best = mr.costs[c];
                if (best > 0) g = task->flops / best / 1e9;
            } else if (mr.error_no == ERR_RUNTIME_DEVICE || mr.error_no == ERR_RUN_TIMEOUT) {
                lab->runner_task = NULL; /* the worker restarts: set the task again */
            }
            MeasureResult_done(&mr);
        }
        /* the first few failures, so that a broken setup shows at once */
        if (g <= 0 && lab->failed++ < 3)
            fprintf(stderr, "    config %llu failed: %.200s\n", (unsigned long long)job->index, why);
        Measured_put(m, job->index, g);
        BuildJob_done(job);
    }
    free(jobs);
    lab->measure_s += clock_mono() - t0;
}

/* Records of other tasks handed to a strategy as --transfer does. */
typedef struct Transfer {
    int n;
    uint64_t *index;
    double *gflops;
    const Task **task;
} Transfer;

/* Leave one out: the records of the sessions (row k_src, seed s) of every
 * other task of task t's template, as an earlier session logged them. */
static Transfer leave_one_out(const Task *tasks, const bool *ok, int n_tasks, int t, Run runs[][MAX_TUNERS][MAX_SEEDS],
                              int k_src, int s) {
    Transfer x = {0};
    int cap = 1;
    for (int o = 0; o < n_tasks; o++)
        if (o != t && ok[o] && tasks[o].tmpl == tasks[t].tmpl) cap += runs[o][k_src][s].n;
    x.index = malloc(sizeof(uint64_t) * (size_t)cap);
    x.gflops = malloc(sizeof(double) * (size_t)cap);
    x.task = malloc(sizeof(Task *) * (size_t)cap);
    if (!x.index || !x.gflops || !x.task) abort();
    for (int o = 0; o < n_tasks; o++) {
        if (o == t || !ok[o] || tasks[o].tmpl != tasks[t].tmpl) continue;
        const Run *src = &runs[o][k_src][s];
        for (int i = 0; i < src->n; i++, x.n++) {
            x.index[x.n] = src->index[i];
            x.gflops[x.n] = src->gflops[i];
            x.task[x.n] = &tasks[o];
        }
    }
    return x;
}

/* One session: the strategy proposes PLAN configs at a time, as in the engine. */
static int run_strategy(Lab *lab, const Task *task, Measured *m, const Strategy *st, const Transfer *xfer,
                        uint64_t seed, int trials, Run *run, char *status, size_t status_len) {
    char err[TT_ERRLEN] = "";
    memset(run, 0, sizeof *run);
    run->gflops = calloc((size_t)trials + 1, sizeof(double));
    run->index = calloc((size_t)trials + 1, sizeof(uint64_t));
    if (!run->gflops || !run->index) abort();
    StrategyContext ctx = {.task = task, .dev = &lab->dev, .plan_size = PLAN};
    if (xfer) {
        ctx.n_transfer = xfer->n;
        ctx.transfer_index = xfer->index;
        ctx.transfer_gflops = xfer->gflops;
        ctx.transfer_task = xfer->task;
    }
    void *self = st->create(&ctx, seed, err);
    if (!self) {
        fprintf(stderr, "search_bench: %s: %s\n", st->name, err);
        return -1;
    }
    VisitedSet visited;
    VisitedSet_init(&visited);
    uint64_t idx[PLAN];
    double g[PLAN];
    while (run->n < trials) {
        int want = trials - run->n < PLAN ? trials - run->n : PLAN;
        double t0 = clock_mono();
        int got = st->propose(self, &visited, idx, want);
        run->strategy_s += clock_mono() - t0;
        if (got == 0) break;
        measure_batch(lab, task, m, idx, got);
        for (int i = 0; i < got; i++) {
            Measured_get(m, idx[i], &g[i]);
            run->index[run->n] = idx[i];
            run->gflops[run->n++] = g[i];
            if (g[i] > run->best) run->best = g[i];
        }
        t0 = clock_mono();
        st->update(self, idx, g, got);
        run->strategy_s += clock_mono() - t0;
    }
    status[0] = '\0';
    if (st->status) st->status(self, status, status_len);
    st->destroy(self);
    VisitedSet_done(&visited);
    return 0;
}

/* ---- part 2: real engine sessions, for throughput ---------------------------- */

/* One engine session on one task with log `log_path` (resumed when it exists).
 * gflops (may be NULL, room for `trials`) receives this session's results in
 * order; *n_out how many there were, *n_invalid (may be NULL) how many of
 * them the precheck rejected (recorded at once, never built); *elapsed the wall time. */
static int run_engine(Lab *lab, const Workload *wl, const char *tuner, uint64_t seed, int trials, const char *log_path,
                      double *gflops, int *n_out, int *n_invalid, double *elapsed) {
    char err[TT_ERRLEN];
    *n_out = 0;
    if (n_invalid) *n_invalid = 0;
    *elapsed = 0;
    Task *task = calloc(1, sizeof(Task));
    if (!task) abort();
    if (Task_init(task, 0, wl, 1, lab->target->family, &lab->dev, err) != TT_OK) {
        fprintf(stderr, "search_bench: %s\n", err);
        free(task);
        return -1;
    }
    EngineConfig cfg;
    EngineConfig_defaults(&cfg);
    cfg.target = lab->target;
    cfg.dev = lab->dev;
    cfg.measure = lab->mo;
    cfg.strategy = tuner;
    cfg.scheduler = "round-robin";
    cfg.trials = trials;
    cfg.log_path = log_path;
    cfg.seed = seed;
    Engine *engine = Engine_new(&cfg, task, 1, err);
    if (!engine) {
        fprintf(stderr, "search_bench: %s\n", err);
        return -1;
    }
    char resumed[512];
    if (Engine_start(engine, resumed, sizeof resumed, err) != TT_OK) {
        fprintf(stderr, "search_bench: %s\n", err);
        Engine_delete(engine);
        return -1;
    }
    double t0 = clock_mono();
    EngineEvent ev[64];
    int n = 0;
    for (;;) {
        struct pollfd p = {.fd = Engine_eventFd(engine), .events = POLLIN};
        poll(&p, 1, 200);
        int got = Engine_drainEvents(engine, ev, 64);
        for (int i = 0; i < got; i++) {
            if (ev[i].kind == EV_RESULT) {
                if (gflops && n < trials) gflops[n] = ev[i].gflops;
                n++;
                if (n_invalid && ev[i].record && ev[i].record->error_no == ERR_INSTANTIATION) (*n_invalid)++;
            }
            EngineEvent_done(&ev[i]);
        }
        if (!got && Engine_finished(engine)) break;
    }
    Engine_wait(engine);
    *elapsed = clock_mono() - t0;
    *n_out = n;
    if (Engine_droppedEvents(engine))
        fprintf(stderr, "    warning: %llu engine events dropped\n", (unsigned long long)Engine_droppedEvents(engine));
    Engine_delete(engine);
    char tsv[300];
    snprintf(tsv, sizeof tsv, "%s.tsv", log_path);
    unlink(tsv);
    return 0;
}

static int copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    if (!a || !b) {
        if (a) fclose(a);
        return -1;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0)
        fwrite(buf, 1, n, b);
    fclose(a);
    return fclose(b) == 0 ? 0 : -1;
}

static double mean_of(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return n ? s / n : 0;
}

static double max_of(const double *v, int n) {
    double m = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > m) m = v[i];
    return m;
}

/* Part 3: a resumed xgb session (the engine replays a log of `history`
 * random trials into the strategy before its first propose) against a cold
 * xgb session: mean and best GFLOPS of the first plan of each. */
static void warm_start(Lab *lab, const Task *task, int history, int seeds) {
    char hist[200], path[220];
    snprintf(hist, sizeof hist, "%s/history.log", lab->workdir);
    unlink(hist);
    int n = 0;
    double el = 0;
    if (run_engine(lab, &task->wl, "random", 99, history, hist, NULL, &n, NULL, &el) != 0) return;
    printf("  %s: history of %d random trials (%.0f s)\n", task->label, n, el);
    double *g = calloc(PLAN, sizeof(double));
    if (!g) abort();
    for (int s = 0; s < seeds; s++) {
        double cold_mean, cold_best, warm_mean, warm_best;
        snprintf(path, sizeof path, "%s/cold.log", lab->workdir);
        unlink(path);
        if (run_engine(lab, &task->wl, "xgb", 500 + (uint64_t)s, PLAN, path, g, &n, NULL, &el) != 0) break;
        cold_mean = mean_of(g, n < PLAN ? n : PLAN);
        cold_best = max_of(g, n < PLAN ? n : PLAN);
        unlink(path);
        snprintf(path, sizeof path, "%s/warm.log", lab->workdir);
        if (copy_file(hist, path) != 0) break;
        if (run_engine(lab, &task->wl, "xgb", 500 + (uint64_t)s, history + PLAN, path, g, &n, NULL, &el) != 0) break;
        warm_mean = mean_of(g, n < PLAN ? n : PLAN);
        warm_best = max_of(g, n < PLAN ? n : PLAN);
        unlink(path);
        printf("    seed %d first plan (%d trials): cold mean %.2f best %.2f | resumed mean %.2f best %.2f GFLOPS%s\n",
               s, n, cold_mean, cold_best, warm_mean, warm_best, warm_mean > cold_mean ? "  (resumed better)" : "");
        fflush(stdout);
    }
    free(g);
    unlink(hist);
}

/* ---- report ------------------------------------------------------------------ */

/* 1-based trial at which the run first reached frac * best; n + 1 when never. */
static int trials_to(const Run *r, double best, double frac) {
    for (int i = 0; i < r->n; i++)
        if (r->gflops[i] >= frac * best) return i + 1;
    return r->n + 1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    if (n == 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fmt_trials(char *buf, size_t n, int t, int budget) {
    if (t > budget)
        snprintf(buf, n, ">%d", budget);
    else
        snprintf(buf, n, "%d", t);
}

static void usage(void) {
    fprintf(stderr, "usage: search_bench [--trials N] [--seeds S] [--tuners xgb,ga,random] [--task SPEC ...]\n"
                    "                    [--engine-trials N] [--warm-history N] [--warm-tasks K] [--warm-seeds S]\n"
                    "                    [--number N] [--repeat R] [--csv FILE]\n");
}

int main(int argc, char **argv) {
    int trials = 192, n_seeds = 3, engine_trials = 0, warm_history = 0, warm_tasks = 1, warm_seeds = 2;
    const char *tuners[MAX_TUNERS] = {"xgb", "ga", "random", XFER_ROW};
    int n_tuners = 4;
    const char *specs[MAX_TASKS];
    int n_specs = 0;
    const char *csv_path = NULL;
    Lab lab;
    memset(&lab, 0, sizeof lab);
    MeasureOptions_defaults(&lab.mo);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) {
            usage();
            return 2;
        }
        char *v = argv[++i];
        if (!strcmp(a, "--trials"))
            trials = atoi(v);
        else if (!strcmp(a, "--seeds"))
            n_seeds = atoi(v);
        else if (!strcmp(a, "--tuners"))
            n_tuners = split_list(v, tuners, MAX_TUNERS);
        else if (!strcmp(a, "--task") && n_specs < MAX_TASKS)
            specs[n_specs++] = v;
        else if (!strcmp(a, "--engine-trials"))
            engine_trials = atoi(v);
        else if (!strcmp(a, "--warm-history"))
            warm_history = atoi(v);
        else if (!strcmp(a, "--warm-tasks"))
            warm_tasks = atoi(v);
        else if (!strcmp(a, "--warm-seeds"))
            warm_seeds = atoi(v);
        else if (!strcmp(a, "--number"))
            lab.mo.number = atoi(v);
        else if (!strcmp(a, "--repeat"))
            lab.mo.repeat = atoi(v);
        else if (!strcmp(a, "--csv"))
            csv_path = v;
        else {
            usage();
            return 2;
        }
    }
    if (trials < 0 || n_seeds < 1 || n_seeds > MAX_SEEDS || n_tuners < 1 || engine_trials < 0) {
        fprintf(stderr, "search_bench: bad --trials, --seeds, --tuners or --engine-trials\n");
        return 2;
    }
    if (!n_specs)
        for (size_t i = 0; i < sizeof DEFAULT_TASKS / sizeof DEFAULT_TASKS[0]; i++)
            specs[n_specs++] = DEFAULT_TASKS[i];
    const Strategy *strat[MAX_TUNERS];
    bool xfer_row[MAX_TUNERS] = {0};
    for (int k = 0; k < n_tuners; k++)
        if ((xfer_row[k] = !strcmp(tuners[k], XFER_ROW)) ? !(strat[k] = Strategy_find("xgb"))
                                                         : !(strat[k] = Strategy_find(tuners[k]))) {
            fprintf(stderr, "search_bench: unknown tuner '%s' (known: %s)\n", tuners[k], Strategy_names());
            return 2;
        }

    char err[TT_ERRLEN];
    lab.target = Target_find("cpu");
    if (!lab.target || lab.target->probe(&lab.dev, err) != TT_OK) {
        fprintf(stderr, "search_bench: cpu target: %s\n", lab.target ? err : "not built");
        return 1;
    }
    snprintf(lab.workdir, sizeof lab.workdir, "/tmp/search_bench-XXXXXX");
    if (!mkdtemp(lab.workdir)) {
        fprintf(stderr, "search_bench: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    lab.pool = BuilderPool_new(lab.dev.cores > 0 ? lab.dev.cores : 2, lab.target, &lab.dev, &lab.mo, lab.workdir);
    lab.runner = lab.target->runner_new(&lab.dev, err);
    if (!lab.pool || !lab.runner) {
        fprintf(stderr, "search_bench: %s\n", lab.runner ? "builder pool" : err);
        return 1;
    }
    Task tasks[MAX_TASKS];
    bool ok_task[MAX_TASKS] = {0};
    for (int t = 0; t < n_specs; t++) {
        Workload wl;
        if (Workload_parse(specs[t], &wl, err) != TT_OK) {
            fprintf(stderr, "search_bench: %s: %s\n", specs[t], err);
            return 2;
        }
        ok_task[t] = Task_init(&tasks[t], t, &wl, 1, lab.target->family, &lab.dev, err) == TT_OK;
        if (!ok_task[t]) fprintf(stderr, "search_bench: task %s skipped: %s\n", specs[t], err);
    }
    printf("search_bench: %d tasks x %d tuners x %d seeds, %d trials per session (plan %d), on %s (number %d, "
           "repeat %d)\n",
           n_specs, n_tuners, n_seeds, trials, PLAN, lab.dev.name, lab.mo.number, lab.mo.repeat);

    static Run runs[MAX_TASKS][MAX_TUNERS][MAX_SEEDS];
    static Measured measured[MAX_TASKS];
    double bench_t0 = clock_mono();
    if (trials > 0) {
        /* Plain tuners first, task by task; then the transfer rows, which
         * need the other tasks' sessions. */
        int k_src = 0;
        for (int k = 0; k < n_tuners; k++)
            if (!strcmp(tuners[k], "xgb")) k_src = k;
        for (int pass = 0; pass < 2; pass++)
            for (int t = 0; t < n_specs; t++) {
                if (!ok_task[t]) continue;
                if (pass == 0) {
                    Measured_init(&measured[t]);
                    printf("task %d: %s (%s, %llu configs)\n", t, specs[t], tasks[t].tmpl->name,
                           (unsigned long long)tasks[t].space.total);
                }
                for (int s = 0; s < n_seeds && ok_task[t]; s++)
                    for (int k = 0; k < n_tuners && ok_task[t]; k++) {
                        if (xfer_row[k] != (pass == 1)) continue;
                        Run *r = &runs[t][k][s];
                        char status[256];
                        Transfer xfer = {0};
                        if (xfer_row[k]) xfer = leave_one_out(tasks, ok_task, n_specs, t, runs, k_src, s);
                        int rc = run_strategy(&lab, &tasks[t], &measured[t], strat[k], xfer_row[k] ? &xfer : NULL,
                                              1000 + (uint64_t)s, trials, r, status, sizeof status);
                        free(xfer.index);
                        free(xfer.gflops);
                        free(xfer.task);
                        if (rc != 0) {
                            ok_task[t] = false;
                            break;
                        }
                        printf("  task %d seed %d %-13s %4d trials, best %8.2f GFLOPS, strategy %.1f ms/trial%s%s\n", t,
                               s, tuners[k], r->n, r->best, r->n ? 1e3 * r->strategy_s / r->n : 0,
                               status[0] ? "; " : "", status);
                        if (xfer_row[k]) printf("        (transfer: %d records of other tasks)\n", xfer.n);
                        fflush(stdout);
                    }
                if (pass == 0)
                    printf("  %llu distinct configs measured for this task so far\n",
                           (unsigned long long)measured[t].count);
            }
        for (int t = 0; t < n_specs; t++)
            if (measured[t].key) Measured_done(&measured[t]);
        printf("measured %ld kernels (%ld failed or invalid) in %.0f s\n", lab.built, lab.failed, lab.measure_s);

        FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
        if (csv) fprintf(csv, "task,tuner,seed,trial,index,gflops\n");
        double med95[MAX_TUNERS];
        printf("\nper task (B = max over every tuner and seed; per seed: trials to 90%% / 95%% of B, best reached)\n");
        for (int t = 0; t < n_specs; t++) {
            if (!ok_task[t]) continue;
            double best = 0;
            for (int k = 0; k < n_tuners; k++)
                for (int s = 0; s < n_seeds; s++)
                    if (runs[t][k][s].best > best) best = runs[t][k][s].best;
            printf("  %s  B = %.2f GFLOPS\n", tasks[t].label, best);
            for (int k = 0; k < n_tuners; k++) {
                double t90[MAX_SEEDS], t95[MAX_SEEDS], b[MAX_SEEDS];
                printf("    %-12s", tuners[k]);
                for (int s = 0; s < n_seeds; s++) {
                    const Run *r = &runs[t][k][s];
                    t90[s] = trials_to(r, best, 0.90);
                    t95[s] = trials_to(r, best, 0.95);
                    b[s] = r->best;
                    char a90[16], a95[16];
                    fmt_trials(a90, sizeof a90, (int)t90[s], r->n);
                    fmt_trials(a95, sizeof a95, (int)t95[s], r->n);
                    printf(" | %4s %4s %7.2f", a90, a95, r->best);
                    if (csv)
                        for (int i = 0; i < r->n; i++)
                            fprintf(csv, "%d,%s,%d,%d,%llu,%.4f\n", t, tuners[k], s, i + 1,
                                    (unsigned long long)r->index[i], r->gflops[i]);
                }
                printf(" | median %.0f %.0f %.2f\n", median(t90, n_seeds), median(t95, n_seeds), median(b, n_seeds));
            }
        }
        if (csv) fclose(csv);

        printf("\noverall (median over tasks x seeds; a session that never reached the mark counts as trials+1)\n");
        for (int k = 0; k < n_tuners; k++) {
            double v95[MAX_TASKS * MAX_SEEDS], v90[MAX_TASKS * MAX_SEEDS], strat_s = 0, n_trials = 0;
            int m = 0, reached = 0;
            for (int t = 0; t < n_specs; t++) {
                if (!ok_task[t]) continue;
                double best = 0;
                for (int kk = 0; kk < n_tuners; kk++)
                    for (int s = 0; s < n_seeds; s++)
                        if (runs[t][kk][s].best > best) best = runs[t][kk][s].best;
                for (int s = 0; s < n_seeds; s++) {
                    const Run *r = &runs[t][k][s];
                    v90[m] = trials_to(r, best, 0.90);
                    v95[m] = trials_to(r, best, 0.95);
                    if (v95[m] <= r->n) reached++;
                    m++;
                    strat_s += r->strategy_s;
                    n_trials += r->n;
                }
            }
            med95[k] = median(v95, m);
            printf("  %-12s trials to 90%%: %6.1f  to 95%%: %6.1f  (95%% reached in %d of %d sessions)  strategy %.2f "
                   "ms/trial\n",
                   tuners[k], median(v90, m), med95[k], reached, m, n_trials > 0 ? 1e3 * strat_s / n_trials : 0);
        }
        int kr = -1;
        for (int k = 0; k < n_tuners; k++)
            if (!strcmp(tuners[k], "random")) kr = k;
        for (int k = 0; k < n_tuners && kr >= 0; k++)
            if (!strcmp(strat[k]->name, "xgb"))
                printf("  %s / random median trials to 95%%: %.2f (goal <= 0.33)\n", tuners[k], med95[k] / med95[kr]);
    }

    if (engine_trials > 0) {
        printf("\nthroughput: real engine sessions, %d trials per task\n", engine_trials);
        const char *tp[2] = {"xgb", "random"};
        double tot_n[2] = {0, 0}, tot_s[2] = {0, 0}, tot_valid[2] = {0, 0};
        for (int t = 0; t < n_specs; t++) {
            if (!ok_task[t]) continue;
            for (int j = 0; j < 2; j++) {
                /* alternate which tuner goes first: the machine's load drifts */
                int k = (j + t) % 2, n = 0, bad = 0;
                double el = 0;
                char path[200];
                snprintf(path, sizeof path, "%s/engine.log", lab.workdir);
                unlink(path);
                int rc = run_engine(&lab, &tasks[t].wl, tp[k], 7, engine_trials, path, NULL, &n, &bad, &el);
                unlink(path);
                if (rc != 0) continue;
                printf("  %-24s %-6s %4d trials (%2d precheck-invalid) in %6.1f s: %.2f trials/s, %.2f built/s\n",
                       tasks[t].label, tp[k], n, bad, el, el > 0 ? n / el : 0, el > 0 ? (n - bad) / el : 0);
                fflush(stdout);
                tot_n[k] += n;
                tot_valid[k] += n - bad;
                tot_s[k] += el;
            }
        }
        double rx = tot_s[0] > 0 ? tot_n[0] / tot_s[0] : 0, rr = tot_s[1] > 0 ? tot_n[1] / tot_s[1] : 0;
        printf("  overall: xgb %.2f trials/s, random %.2f trials/s, ratio %.2f (goal 0.90..1.10)\n", rx, rr,
               rr > 0 ? rx / rr : 0);
        /* random proposes precheck-invalid configs, which cost no compile;
         * xgb never does, so compare the trials that were built too */
        double vx = tot_s[0] > 0 ? tot_valid[0] / tot_s[0] : 0, vr = tot_s[1] > 0 ? tot_valid[1] / tot_s[1] : 0;
        printf("  built (valid) trials: xgb %.2f/s, random %.2f/s, ratio %.2f\n", vx, vr, vr > 0 ? vx / vr : 0);
    }
    if (warm_history > 0) {
        printf("\nwarm start: resumed vs cold xgb session, first plan of %d\n", PLAN);
        for (int t = 0, done = 0; t < n_specs && done < warm_tasks; t++)
            if (ok_task[t]) {
                warm_start(&lab, &tasks[t], warm_history, warm_seeds);
                done++;
            }
    }
    printf("wall time %.0f s\n", clock_mono() - bench_t0);

    for (int t = 0; t < n_specs; t++) {
        if (ok_task[t]) Task_done(&tasks[t]);
        for (int k = 0; k < n_tuners; k++)
            for (int s = 0; s < n_seeds; s++) {
                free(runs[t][k][s].gflops);
                free(runs[t][k][s].index);
            }
    }
    lab.target->runner_delete(lab.runner);
    BuilderPool_delete(lab.pool);
    rmdir(lab.workdir);
    return 0;
}
