/* bench/kernel_bench.c: kernel quality of the CPU templates against vendor
 * libraries, in one run on this machine.
 *
 * For each task of a standard set (ResNet-18 conv2d layers, GEMM 1024^3, the
 * 1x512->1000 classifier) the bench searches the template's space with a
 * fixed trial budget, then times the best configs against oneDNN (conv2d,
 * through the C API with its preferred layouts) and OpenBLAS (cblas_sgemm for
 * dense), with 1 thread and with all threads. Medians of several repeats.
 *
 * The search lives behind one function (bench_tune_local): it generates a
 * batch of candidates, compiles them two at a time with `cc` + TT_CPU_CFLAGS,
 * loads each shared object in-process, checks it against Workload_reference
 * and times tt_run. Only tt_run is timed, as for oneDNN (whose layout
 * reorders are done once outside the timing) and OpenBLAS (which packs
 * inside the call: that favours us a little on GEMM; the dense weight panel
 * is packed in tt_setup like a deployed model's pre-packed weights). The pack
 * and finish time of the best config is printed apart.
 *
 * With --tuner NAME the search is the real tuner instead (bench_tune_engine:
 * an engine session per task on the cpu target, its worker and strategy);
 * the final timings and baselines are the same in both modes.
 *
 * A task is searched with every CPU template that applies to it (conv2d 3x3
 * stride 1: the direct template and the Winograd one, the same budget each),
 * and the faster one is kept per thread count; --template SUBSTR keeps only
 * the templates whose name contains SUBSTR. GFLOPS are always the direct
 * convolution's FLOPs over the time ("effective" for Winograd, which does
 * fewer multiply-adds). oneDNN is asked for its direct algorithm and for its
 * own choice (auto, which may pick Winograd); its column is the faster one.
 *
 * With --roof the bench takes the machine's roofline figures the sessions use
 * (kernels/targets/machine.h: the FMA-chain peak and the triad and read bandwidths,
 * from the cache, measured first when there are none; --remeasure measures
 * them again in this run) and adds, per task and thread count, the task's
 * roof and the share of it the tuned kernel and the vendor reach; at the end
 * it sets the measured peak against OpenBLAS's fastest SGEMM (which cannot
 * exceed it).
 *
 * Usage: kernel_bench [--trials N] [--repeat R] [--only SUBSTR] [--seed S] [--threads T] [--tuner NAME] [--roof]
 */
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <dnnl.h>

#include "base/clock.h"
#include "base/rng.h"
#include "kernels/target.h"
#include "kernels/targets/cpu/abi.h"
#include "kernels/targets/machine.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "space/space.h"
#include "tuner/engine.h"
#include "tuner/task.h"

/* registry.c refers to the templates weakly: a strong reference pulls them out of the static library */
extern const Template tmpl_conv2d_cpu, tmpl_conv2d_winograd_cpu, tmpl_depthwise_cpu, tmpl_dense_cpu,
    tmpl_batch_matmul_cpu;
extern const Target target_cpu;
__attribute__((used)) static const void *const keep_symbols[] = {&tmpl_conv2d_cpu,       &tmpl_conv2d_winograd_cpu,
                                                                 &tmpl_depthwise_cpu,    &tmpl_dense_cpu,
                                                                 &tmpl_batch_matmul_cpu, &target_cpu};

#define MAX_BATCH 8
#define TOP_K 6

typedef struct Options {
    int trials; /* search budget per task */
    int repeat; /* repeats for the final timings (median) */
    const char *only;
    uint64_t seed;
    int threads;       /* "all threads" count */
    const char *tuner; /* NULL: the bench's own local search; else drive the engine with this strategy */
    bool roof;         /* print each task's roof and shares */
    bool remeasure;    /* --roof: measure the machine in this run instead of reading the cache */
    int n_specs;       /* --task SPEC: tasks instead of the standard set */
    const char *specs[16];
    const char *template; /* --template SUBSTR: only these templates */
} Options;

static const char *const STANDARD_TASKS[][2] = {
    {"conv 56x56 64->64 3x3", "conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=1,pad=1"},
    {"conv 28x28 128->128 3x3", "conv2d:n=1,ci=128,h=28,w=28,co=128,kh=3,kw=3,stride=1,pad=1"},
    {"conv 14x14 256->256 3x3", "conv2d:n=1,ci=256,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1"},
    {"conv 7x7 512->512 3x3", "conv2d:n=1,ci=512,h=7,w=7,co=512,kh=3,kw=3,stride=1,pad=1"},
    {"conv 224x224 3->64 7x7 s2", "conv2d:n=1,ci=3,h=224,w=224,co=64,kh=7,kw=7,stride=2,pad=3"},
    {"conv 56x56 64->128 1x1 s2", "conv2d:n=1,ci=64,h=56,w=56,co=128,kh=1,kw=1,stride=2,pad=0"},
    {"gemm 1024^3", "dense:m=1024,n=1024,k=1024"},
    {"dense 1x512->1000", "dense:m=1,n=1000,k=512"},
};
#define N_TASKS ((int)(sizeof STANDARD_TASKS / sizeof STANDARD_TASKS[0]))

/* ---- timing ------------------------------------------------------------- */

typedef void (*RunFn)(void *ctx);

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The machine is shared: with one thread, time with the calling thread's CPU
 * clock so that being descheduled by other processes does not count (the
 * vendor libraries also run in the calling thread then, so it is the same
 * clock for both); with several threads, wall time. */
static clockid_t g_clock = CLOCK_MONOTONIC;
static double g_last_min; /* fastest repeat of the last time_median */

static void set_threads(int threads) {
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    g_clock = threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median seconds per call over `repeat` repeats, each of enough calls to last min_s. */
static double time_median(RunFn fn, void *ctx, int repeat, double min_s) {
    fn(ctx); /* warm-up */
    double t0 = now_s();
    fn(ctx);
    double one = now_s() - t0;
    int number = one > 0 ? (int)(min_s / one) + 1 : 1000;
    if (number > 100000) number = 100000;
    double costs[64];
    if (repeat > 64) repeat = 64;
    for (int r = 0; r < repeat; r++) {
        t0 = now_s();
        for (int i = 0; i < number; i++)
            fn(ctx);
        costs[r] = (now_s() - t0) / number;
    }
    qsort(costs, (size_t)repeat, sizeof costs[0], cmp_double);
    g_last_min = costs[0];
    return costs[repeat / 2];
}

/* ---- one loaded kernel ---------------------------------------------------- */

typedef struct Kernel {
    void *so;
    void *state;
    tt_state_fn pack, run, finish, teardown;
} Kernel;

static void kernel_run(void *k) { ((Kernel *)k)->run(((Kernel *)k)->state); }
static void kernel_packFinish(void *k) {
    Kernel *kk = k;
    kk->pack(kk->state);
    kk->finish(kk->state);
}

static bool kernel_load(Kernel *k, const char *so, float **args, char *why, size_t n) {
    memset(k, 0, sizeof *k);
    k->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!k->so) {
        snprintf(why, n, "dlopen: %s", dlerror());
        return false;
    }
    tt_setup_fn setup = (tt_setup_fn)dlsym(k->so, "tt_setup");
    k->pack = (tt_state_fn)dlsym(k->so, "tt_pack");
    k->run = (tt_state_fn)dlsym(k->so, TT_CPU_ENTRY);
    k->finish = (tt_state_fn)dlsym(k->so, "tt_finish");
    k->teardown = (tt_state_fn)dlsym(k->so, "tt_teardown");
    if (!setup || !k->pack || !k->run || !k->finish || !k->teardown) {
        snprintf(why, n, "missing ABI symbol");
        dlclose(k->so);
        return false;
    }
    if (setup(args, &k->state) != 0) {
        snprintf(why, n, "tt_setup failed");
        k->teardown(k->state);
        dlclose(k->so);
        return false;
    }
    return true;
}

static void kernel_unload(Kernel *k) {
    k->teardown(k->state);
    dlclose(k->so);
}

/* ---- a task: workload, space, buffers, reference ---------------------------- */

typedef struct BenchTask {
    const char *label;
    Workload wl;
    const Template *tmpl;
    Space space;
    int nargs;
    ArgInfo info[WORKLOAD_MAX_ARGS];
    float **args;
    float *ref;
    double flops;
} BenchTask;

typedef struct Cand {
    uint64_t index;
    double secs; /* tt_run, median; +inf when failed */
} Cand;

typedef struct TuneStats {
    int trials, invalid, failed;
    double worst_s; /* slowest correct trial (the spread of the space) */
    double wall_s, cc_s_sum, cc_cpu_sum;
    double self_cpu_s; /* CPU seconds of this process in the search: loading, checking, timing */
    int cc_n;
    Cand top[TOP_K]; /* best first */
    int n_top;
} TuneStats;

static char g_dir[256];
static DeviceInfo g_dev;

static Status task_init(BenchTask *t, const char *label, const char *spec, const Template *tmpl, char *err) {
    memset(t, 0, sizeof *t);
    t->label = label;
    if (Workload_parse(spec, &t->wl, err) != TT_OK) return TT_ERR;
    t->tmpl = tmpl ? tmpl : Template_find(&t->wl, FAMILY_CPU, err);
    if (!t->tmpl) return TT_ERR;
    Space_init(&t->space);
    if (t->tmpl->define_space(&t->wl, &g_dev, &t->space, err) != TT_OK) return TT_ERR;
    t->nargs = Workload_args(&t->wl, t->info);
    t->args = calloc((size_t)t->nargs, sizeof *t->args);
    for (int i = 0; i < t->nargs; i++)
        t->args[i] = calloc(t->info[i].count, sizeof(float));
    Workload_fillInputs(&t->wl, t->args, 7);
    size_t out_n = t->info[t->nargs - 1].count;
    Workload_reference(&t->wl, t->args);
    t->ref = malloc(out_n * sizeof(float));
    memcpy(t->ref, t->args[t->nargs - 1], out_n * sizeof(float));
    t->flops = Workload_flops(&t->wl);
    return TT_OK;
}

static void task_done(BenchTask *t) {
    for (int i = 0; i < t->nargs; i++)
        free(t->args[i]);
    free(t->args);
    free(t->ref);
    Space_done(&t->space);
}

/* Writes the source of config `index` to path; false when precheck or generation fails. */
static bool task_writeSource(BenchTask *t, uint64_t index, const char *path) {
    int32_t choice[SPACE_MAX_KNOBS];
    Space_decode(&t->space, index, choice);
    char reason[256], err[TT_ERRLEN];
    if (!t->tmpl->precheck(&t->wl, &t->space, choice, &g_dev, reason, sizeof reason)) return false;
    KernelSource ks;
    KernelSource_init(&ks);
    if (t->tmpl->generate(&t->wl, &t->space, choice, &g_dev, DIALECT_C, &ks, err) != TT_OK) return false;
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(ks.source, f) >= 0;
    if (f) fclose(f);
    KernelSource_done(&ks);
    return ok;
}

/* Runs and checks a built kernel once, then times it; +inf on any failure. */
static double task_measure(BenchTask *t, const char *so, int repeat, double min_s, double *pack_s, double *min_out) {
    Kernel k;
    char why[512];
    if (!kernel_load(&k, so, t->args, why, sizeof why)) return INFINITY;
    float *out = t->args[t->nargs - 1];
    size_t out_n = t->info[t->nargs - 1].count;
    for (size_t i = 0; i < out_n; i++)
        out[i] = NAN;
    k.pack(k.state);
    k.run(k.state);
    k.finish(k.state);
    double secs = INFINITY;
    if (Workload_compare(&t->wl, t->ref, out, why, sizeof why)) {
        secs = time_median(kernel_run, &k, repeat, min_s);
        if (min_out) *min_out = g_last_min;
        if (pack_s) *pack_s = time_median(kernel_packFinish, &k, 3, min_s);
    } else {
        fprintf(stderr, "  WRONG_ANSWER %s: %s\n", so, why);
    }
    kernel_unload(&k);
    return secs;
}

/* ---- compile -------------------------------------------------------------- */

typedef struct Build {
    char src[320], so[320];
    pid_t pid;
    double t0, secs, cpu_s; /* wall and CPU (user + system) seconds of the compiler */
    int status;
} Build;

static void build_all(Build *b, int n) {
    int next = 0, running = 0;
    while (next < n || running > 0) {
        while (running < 2 && next < n) {
            char cmd[1024];
            snprintf(cmd, sizeof cmd, "cc %s -o %s %s", TT_CPU_CFLAGS, b[next].so, b[next].src);
            b[next].t0 = clock_mono();
            b[next].status = -1;
            pid_t pid = fork();
            if (pid == 0) {
                execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
                _exit(127);
            }
            b[next].pid = pid;
            next++, running++;
        }
        int st;
        struct rusage ru;
        pid_t done = wait4(-1, &st, 0, &ru);
        if (done < 0) break;
        for (int i = 0; i < next; i++)
            if (b[i].pid == done) {
                b[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
                b[i].secs = clock_mono() - b[i].t0;
                b[i].cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                             (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
            }
        running--;
    }
}

/* ---- search ----------------------------------------------------------------- */

static void top_insert(TuneStats *s, uint64_t index, double secs) {
    if (!isfinite(secs)) return;
    int pos = s->n_top;
    while (pos > 0 && s->top[pos - 1].secs > secs)
        pos--;
    if (pos >= TOP_K) return;
    int last = s->n_top < TOP_K ? s->n_top : TOP_K - 1;
    for (int i = last; i > pos; i--)
        s->top[i] = s->top[i - 1];
    s->top[pos] = (Cand){index, secs};
    if (s->n_top < TOP_K) s->n_top++;
}

/* Proposes a batch: random configs at first, then half mutations of the top configs. */
static int propose(BenchTask *t, TuneStats *s, VisitedSet *seen, Rng *rng, uint64_t *out, int n) {
    int m = 0;
    for (int tries = 0; m < n && tries < 2000; tries++) {
        uint64_t idx;
        if (s->n_top > 0 && (tries & 1)) {
            idx = s->top[Rng_below(rng, (uint64_t)s->n_top)].index;
            int steps = 1 + (int)Rng_below(rng, 2);
            for (int i = 0; i < steps; i++)
                idx = Space_neighbour(&t->space, idx, rng);
        } else {
            idx = Rng_below(rng, t->space.total);
        }
        if (VisitedSet_has(seen, idx)) continue;
        int32_t choice[SPACE_MAX_KNOBS];
        char reason[256];
        Space_decode(&t->space, idx, choice);
        VisitedSet_add(seen, idx);
        if (!t->tmpl->precheck(&t->wl, &t->space, choice, &g_dev, reason, sizeof reason)) {
            s->invalid++;
            continue;
        }
        out[m++] = idx;
    }
    return m;
}

/* The local search: batches of MAX_BATCH, compiled two at a time, measured one by one
 * (no compile runs while a kernel is timed). Replaceable by the engine. */
static double self_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

static void bench_tune_local(BenchTask *t, const Options *opt, int threads, TuneStats *s) {
    memset(s, 0, sizeof *s);
    double cpu0 = self_cpu();
    Rng rng;
    Rng_seed(&rng, opt->seed);
    VisitedSet seen;
    VisitedSet_init(&seen);
    set_threads(threads);
    double t0 = clock_mono();
    while (s->trials < opt->trials) {
        uint64_t idx[MAX_BATCH];
        int want = opt->trials - s->trials < MAX_BATCH ? opt->trials - s->trials : MAX_BATCH;
        int n = propose(t, s, &seen, &rng, idx, want);
        if (n == 0) break;
        Build b[MAX_BATCH];
        int nb = 0;
        for (int i = 0; i < n; i++) {
            snprintf(b[nb].src, sizeof b[nb].src, "%s/c%d.c", g_dir, nb);
            snprintf(b[nb].so, sizeof b[nb].so, "%s/c%d_%llu.so", g_dir, nb, (unsigned long long)idx[i]);
            if (task_writeSource(t, idx[i], b[nb].src)) idx[nb++] = idx[i];
        }
        build_all(b, nb);
        for (int i = 0; i < nb; i++) {
            s->trials++;
            s->cc_s_sum += b[i].secs, s->cc_cpu_sum += b[i].cpu_s, s->cc_n++;
            double secs = b[i].status == 0 ? task_measure(t, b[i].so, 3, 0.01, NULL, NULL) : INFINITY;
            if (!isfinite(secs))
                s->failed++;
            else if (secs > s->worst_s)
                s->worst_s = secs;
            top_insert(s, idx[i], secs);
            unlink(b[i].so);
            unlink(b[i].src);
        }
    }
    s->wall_s = clock_mono() - t0;
    s->self_cpu_s = self_cpu() - cpu0;
    VisitedSet_done(&seen);
}

/* The same job through the real tuner: one engine session per task on the cpu
 * target (compile pool, isolated measurement worker, the chosen strategy), one
 * kernel thread. The top configs are collected from the result events. */
static Status bench_tune_engine(BenchTask *t, const Options *opt, TuneStats *s, char *err) {
    memset(s, 0, sizeof *s);
    const Target *target = Target_find("cpu");
    if (!target) return tt_fail(err, "the cpu target is not built in");
    EngineConfig cfg;
    EngineConfig_defaults(&cfg);
    cfg.target = target;
    cfg.dev = g_dev;
    cfg.strategy = opt->tuner;
    cfg.trials = opt->trials;
    cfg.seed = opt->seed;
    cfg.measure.threads = 1;
    char log[400], tsv[420];
    snprintf(log, sizeof log, "%s/engine.log", g_dir);
    snprintf(tsv, sizeof tsv, "%s.tsv", log); /* the engine's table beside the log */
    unlink(log);
    unlink(tsv);
    cfg.log_path = log;
    Task *tasks = calloc(1, sizeof *tasks);
    if (!tasks || Task_initWith(&tasks[0], 0, &t->wl, 1.0, t->tmpl, &cfg.dev, err) != TT_OK) {
        free(tasks);
        return TT_ERR;
    }
    Engine *e = Engine_new(&cfg, tasks, 1, err); /* owns tasks from here */
    if (!e) return TT_ERR;
    if (Engine_start(e, NULL, 0, err) != TT_OK) {
        Engine_delete(e);
        unlink(log);
        unlink(tsv);
        return TT_ERR;
    }
    double t0 = clock_mono();
    EngineEvent ev[64];
    struct pollfd pfd = {.fd = Engine_eventFd(e), .events = POLLIN};
    bool finished = false;
    while (!finished) {
        finished = Engine_finished(e);
        poll(&pfd, 1, 200);
        int got;
        while ((got = Engine_drainEvents(e, ev, 64)) > 0) {
            for (int i = 0; i < got; i++) {
                if (ev[i].kind == EV_RESULT && ev[i].record) {
                    s->cc_s_sum += ev[i].record->build_s, s->cc_cpu_sum += ev[i].record->build_s, s->cc_n++;
                    double secs = ev[i].gflops > 0 ? t->flops / (ev[i].gflops * 1e9) : INFINITY;
                    if (isfinite(secs) && secs > s->worst_s) s->worst_s = secs;
                    top_insert(s, ev[i].record->index, secs);
                }
                EngineEvent_done(&ev[i]);
            }
        }
    }
    Engine_wait(e);
    s->wall_s = clock_mono() - t0;
    SessionSnapshot snap;
    Engine_snapshot(e, &snap);
    s->trials = snap.trials;
    if (snap.n_tasks > 0) {
        s->failed = snap.rows[0].errors;
        bool have = false;
        for (int i = 0; i < s->n_top; i++)
            have |= s->top[i].index == snap.rows[0].best_index;
        if (!have && isfinite(snap.rows[0].best_latency_s))
            top_insert(s, snap.rows[0].best_index, snap.rows[0].best_latency_s);
    }
    SessionSnapshot_done(&snap);
    Engine_delete(e);
    unlink(log);
    unlink(tsv);
    return TT_OK;
}

/* Re-times the top configs with more repeats at a thread count; returns the best seconds. */
/* The knobs that only decide how the threads share the work (the parallel
 * split): the search runs at one thread, where they make no difference, so
 * the retiming at more threads tries each of their values on the top configs. */
static const char *const PARALLEL_KNOBS[] = {"split", "xform", "order"};

/* Candidates to retime: the top n configs and, at more than one thread,
 * their variants over the parallel knobs (precheck-valid, no duplicates). */
static int retime_candidates(const BenchTask *t, const TuneStats *s, int threads, int n, uint64_t *out, int cap) {
    int m = 0;
    for (int i = 0; i < s->n_top && i < n; i++) {
        int32_t base[SPACE_MAX_KNOBS];
        Space_decode(&t->space, s->top[i].index, base);
        int knobs[4], nk = 0;
        for (int k = 0; k < (int)(sizeof PARALLEL_KNOBS / sizeof *PARALLEL_KNOBS); k++) {
            int ki = Space_knobIndex(&t->space, PARALLEL_KNOBS[k]);
            if (threads > 1 && ki >= 0 && t->space.knobs[ki].len > 1) knobs[nk++] = ki;
        }
        /* every combination of the parallel knobs' values (2 x 2 at most in these templates) */
        int combos = 1;
        for (int k = 0; k < nk; k++)
            combos *= t->space.knobs[knobs[k]].len;
        for (int c = 0; c < combos; c++) {
            int32_t ch[SPACE_MAX_KNOBS];
            memcpy(ch, base, sizeof ch);
            for (int k = 0, r = c; k < nk; k++) {
                ch[knobs[k]] = r % t->space.knobs[knobs[k]].len;
                r /= t->space.knobs[knobs[k]].len;
            }
            char reason[256];
            if (!t->tmpl->precheck(&t->wl, &t->space, ch, &g_dev, reason, sizeof reason)) continue;
            uint64_t idx = Space_encode(&t->space, ch);
            bool dup = false;
            for (int j = 0; j < m; j++)
                dup = dup || out[j] == idx;
            if (!dup && m < cap) out[m++] = idx;
        }
    }
    return m;
}

static double bench_retime(BenchTask *t, const TuneStats *s, int threads, int repeat, int n, uint64_t *best,
                           double *pack_s, double *best_min) {
    set_threads(threads);
    double best_s = INFINITY;
    uint64_t cand[TOP_K * 8];
    int n_cand = retime_candidates(t, s, threads, n, cand, TOP_K * 8);
    for (int i = 0; i < n_cand; i++) {
        char src[320], so[320];
        snprintf(src, sizeof src, "%s/final.c", g_dir);
        snprintf(so, sizeof so, "%s/final_%d_%d.so", g_dir, threads, i);
        Build b;
        memset(&b, 0, sizeof b);
        snprintf(b.src, sizeof b.src, "%s", src);
        snprintf(b.so, sizeof b.so, "%s", so);
        if (!task_writeSource(t, cand[i], src)) continue;
        build_all(&b, 1);
        double ps = 0, mn = INFINITY;
        double secs = b.status == 0 ? task_measure(t, so, repeat, 0.05, &ps, &mn) : INFINITY;
        if (secs < best_s) {
            best_s = secs;
            *best_min = mn;
            *best = cand[i];
            *pack_s = ps;
        }
        unlink(so);
        unlink(src);
    }
    return best_s;
}

/* ---- oneDNN and OpenBLAS ------------------------------------------------------- */

typedef struct Dnnl {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[3];
    dnnl_primitive_desc_t pd;
    char impl[64];
} Dnnl;

static void dnnl_run(void *ctx) {
    Dnnl *d = ctx;
    dnnl_exec_arg_t a[3] = {{DNNL_ARG_SRC, d->mem[0]}, {DNNL_ARG_WEIGHTS, d->mem[1]}, {DNNL_ARG_DST, d->mem[2]}};
    dnnl_primitive_execute(d->prim, d->stream, 3, a);
    dnnl_stream_wait(d->stream);
}

/* oneDNN convolution with its preferred layouts (format_tag any); seconds or NAN. */
static double bench_dnnl_conv(const Workload *wl, dnnl_alg_kind_t alg, int threads, int repeat, char *impl,
                              size_t impl_n) {
    set_threads(threads);
    Dnnl d;
    memset(&d, 0, sizeof d);
    double secs = NAN;
    if (dnnl_engine_create(&d.eng, dnnl_cpu, 0) != dnnl_success) return NAN;
    dnnl_stream_create(&d.stream, d.eng, dnnl_stream_default_flags);
    int64_t oh = Workload_outH(wl), ow = Workload_outW(wl);
    dnnl_dims_t sd = {wl->n, wl->ci, wl->h, wl->w}, wd = {wl->co, wl->ci, wl->kh, wl->kw}, dd = {wl->n, wl->co, oh, ow};
    dnnl_dims_t strides = {wl->stride_h, wl->stride_w}, dil = {wl->dil_h - 1, wl->dil_w - 1},
                pad = {wl->pad_h, wl->pad_w};
    /* oneDNN's right padding makes its output size come out as ours */
    dnnl_dims_t pad_r = {(oh - 1) * wl->stride_h + (wl->kh - 1) * wl->dil_h + 1 - wl->h - wl->pad_h,
                         (ow - 1) * wl->stride_w + (wl->kw - 1) * wl->dil_w + 1 - wl->w - wl->pad_w};
    dnnl_memory_desc_t smd, wmd, dmd;
    dnnl_memory_desc_init_by_tag(&smd, 4, sd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wmd, 4, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dmd, 4, dd, dnnl_f32, dnnl_format_tag_any);
    dnnl_convolution_desc_t cd;
    if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, &smd, &wmd, NULL, &dmd, strides,
                                                   dil, pad, pad_r) != dnnl_success)
        goto out;
    if (dnnl_primitive_desc_create(&d.pd, &cd, NULL, d.eng, NULL) != dnnl_success) goto out;
    const char *name = NULL;
    dnnl_primitive_desc_query(d.pd, dnnl_query_impl_info_str, 0, &name);
    snprintf(impl, impl_n, "%s", name ? name : "?");
    dnnl_query_t q[3] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md};
    for (int i = 0; i < 3; i++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(d.pd, q[i], 0);
        if (dnnl_memory_create(&d.mem[i], md, d.eng, DNNL_MEMORY_ALLOCATE) != dnnl_success) goto out;
        void *h = NULL;
        dnnl_memory_get_data_handle(d.mem[i], &h);
        size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);
        for (size_t e = 0; e < n; e++)
            ((float *)h)[e] = (float)((e * 2654435761u) % 1000) / 1000.0f - 0.5f;
    }
    if (dnnl_primitive_create(&d.prim, d.pd) != dnnl_success) goto out;
    secs = time_median(dnnl_run, &d, repeat, 0.05);
out:
    if (d.prim) dnnl_primitive_destroy(d.prim);
    for (int i = 0; i < 3; i++)
        if (d.mem[i]) dnnl_memory_destroy(d.mem[i]);
    if (d.pd) dnnl_primitive_desc_destroy(d.pd);
    dnnl_stream_destroy(d.stream);
    dnnl_engine_destroy(d.eng);
    return secs;
}

typedef struct Blas {
    const Workload *wl;
    float *a, *b, *c;
} Blas;

static void blas_run(void *ctx) {
    Blas *x = ctx;
    const Workload *wl = x->wl;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)wl->m, (int)wl->n, (int)wl->k, 1.0f, x->a, (int)wl->k,
                x->b, (int)wl->k, 0.0f, x->c, (int)wl->n);
}

static double bench_blas_dense(BenchTask *t, int threads, int repeat) {
    set_threads(threads);
    Blas x = {&t->wl, t->args[0], t->args[1], t->args[t->nargs - 1]};
    return time_median(blas_run, &x, repeat, 0.05);
}

/* ---- main ------------------------------------------------------------------------- */

/* A number for the table, "-" when not measured. */
static const char *num(char *buf, double x, int decimals) {
    if (isfinite(x))
        snprintf(buf, 16, "%.*f", decimals, x);
    else
        snprintf(buf, 16, "-");
    return buf;
}

static void machine_name(char *buf, size_t n) {
    snprintf(buf, n, "unknown cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ')
                    c++;
                c[strcspn(c, "\n")] = '\0';
                snprintf(buf, n, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

static void usage(void) {
    fprintf(stderr, "usage: kernel_bench [--trials N] [--repeat R] [--only SUBSTR] [--seed S] [--threads T]"
                    " [--tuner xgb|ga|random|grid] [--task SPEC]... [--template SUBSTR] [--roof [--remeasure]]\n"
                    "  without --tuner the bench searches with its own in-process loop; with it, through the engine\n");
    exit(2);
}

int main(int argc, char **argv) {
    Options opt = {.trials = 48, .repeat = 7, .only = NULL, .seed = 1, .threads = 0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--roof") == 0 || strcmp(argv[i], "--remeasure") == 0) {
            opt.roof = true;
            opt.remeasure = opt.remeasure || strcmp(argv[i], "--remeasure") == 0;
            continue;
        }
        if (i + 1 >= argc) usage();
        if (strcmp(argv[i], "--trials") == 0)
            opt.trials = atoi(argv[++i]);
        else if (strcmp(argv[i], "--repeat") == 0)
            opt.repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0)
            opt.only = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0)
            opt.seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--threads") == 0)
            opt.threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--tuner") == 0)
            opt.tuner = argv[++i];
        else if (strcmp(argv[i], "--template") == 0)
            opt.template = argv[++i];
        else if (strcmp(argv[i], "--task") == 0 && opt.n_specs < 16)
            opt.specs[opt.n_specs++] = argv[++i];
        else
            usage();
    }
    if (opt.trials < 1 || opt.repeat < 1) usage();
    int all = opt.threads > 0 ? opt.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);

    memset(&g_dev, 0, sizeof g_dev);
    char err0[TT_ERRLEN];
    const Target *cpu = Target_find("cpu");
    if (opt.tuner && (!cpu || cpu->probe(&g_dev, err0) != TT_OK)) {
        fprintf(stderr, "kernel_bench: cpu target: %s\n", cpu ? err0 : "not built in");
        return 1;
    }
    if (!opt.tuner) { /* the same probe the engine would do, without needing the target */
        g_dev.present = true;
        g_dev.cores = all;
        g_dev.vector_floats = __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("avx2") ? 8 : 4;
    }
    machine_name(g_dev.name, sizeof g_dev.name);
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tt_kbench_XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    printf("tunetop kernel bench | %s | %d threads | vector %d floats | %s\n", g_dev.name, all, g_dev.vector_floats,
           date);
    if (opt.tuner)
        printf("search: engine, tuner %s, cpu target worker, %d trials per task at 1 thread;", opt.tuner, opt.trials);
    else
        printf("search: local (random + mutation of the top %d), %d trials per task at 1 thread;", TOP_K, opt.trials);
    printf(" final timings: median of %d; GFLOPS from tt_run only\n\n", opt.repeat);
    MachineFigures mf;
    memset(&mf, 0, sizeof mf);
    double blas_best1 = NAN, blas_bestn = NAN; /* fastest SGEMM 1024^3 repeats, GFLOPS */
    if (opt.roof) {
        DeviceInfo md;
        char merr[TT_ERRLEN];
        const Target *mt = Target_find("cpu");
        char note[TT_ERRLEN] = "";
        if (!mt || mt->probe(&md, merr) != TT_OK ||
            Machine_getCpu(&md, opt.remeasure, NULL, &mf, note, sizeof note, merr) != TT_OK) {
            fprintf(stderr, "kernel_bench: --roof: %s\n", mt ? merr : "no cpu target");
            return 1;
        }
        char when[64] = "?";
        time_t mt_at = (time_t)mf.measured_at;
        strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&mt_at));
        printf("machine figures (%s; measured %s in %.1f s): peak FP32 %.1f GFLOPS 1 core, %.1f GFLOPS %d cores; triad "
               "%.1f / %.1f "
               "GB/s (memory), %.1f / %.1f (L3), %.1f / %.1f (L2)\n\n",
               note[0] ? note : "the cache", when, mf.measure_s, mf.peak1_gflops, mf.peak_gflops, mf.cores, mf.bw1_gbs,
               mf.bw_gbs, mf.l3_bw1_gbs, mf.l3_bw_gbs, mf.l2_bw1_gbs, mf.l2_bw_gbs);
    }
    printf("%-26s %7s %7s %7s %6s | %7s %7s %7s %6s %6s | %6s %6s %5s | %s\n", "task", "tuned1", "onednn1", "blas1",
           "ratio1", "tunedN", "onednnN", "blasN", "ratioN", "rN_min", "pk+fin", "trial/s", "cc_cpu",
           "best config (1 thread)");
    double sum_ratio1 = 0;
    int n_ratio1 = 0;

    double sum_trials = 0, sum_wall = 0, sum_cc = 0, sum_cc_cpu = 0, sum_self = 0;
    int sum_cc_n = 0;
    int n_tasks = opt.n_specs ? opt.n_specs : N_TASKS;
    for (int ti = 0; ti < n_tasks; ti++) {
        const char *label = opt.n_specs ? opt.specs[ti] : STANDARD_TASKS[ti][0];
        const char *spec = opt.n_specs ? opt.specs[ti] : STANDARD_TASKS[ti][1];
        if (opt.only && !strstr(label, opt.only) && !strstr(spec, opt.only)) continue;
        char err[TT_ERRLEN];
        Workload pw;
        if (Workload_parse(spec, &pw, err) != TT_OK) {
            printf("%-26s error: %s\n", label, err);
            continue;
        }
        /* every cpu template for the workload (conv2d 3x3 stride 1: direct and Winograd), the same budget each */
        const Template *const *all_t;
        int n_all = Template_all(&all_t), n_use = 0;
        const Template *use[4];
        for (int k = 0; k < n_all && n_use < 4; k++)
            if (all_t[k]->family == FAMILY_CPU && all_t[k]->op == pw.op &&
                (!all_t[k]->applies || all_t[k]->applies(&pw)) &&
                (!opt.template || strstr(all_t[k]->name, opt.template)))
                use[n_use++] = all_t[k];
        if (!n_use) {
            printf("%-26s error: no cpu template%s\n", label, opt.template ? " matches --template" : "");
            continue;
        }
        BenchTask tv[4];
        TuneStats sv[4];
        double t1v[4], tnv[4], pack1v[4], packnv[4], t1minv[4], tnminv[4];
        uint64_t best1v[4], bestnv[4];
        int k1 = 0, kn = 0, n_ok = 0;
        for (int k = 0; k < n_use; k++) {
            BenchTask *tk = &tv[n_ok];
            TuneStats *sk = &sv[n_ok];
            set_threads(1);
            if (task_init(tk, label, spec, use[k], err) != TT_OK) {
                printf("%-26s error: %s: %s\n", label, use[k]->name, err);
                continue;
            }
            if (!opt.tuner) {
                bench_tune_local(tk, &opt, 1, sk);
            } else if (bench_tune_engine(tk, &opt, sk, err) != TT_OK) {
                printf("%-26s engine error: %s\n", tk->label, err);
                task_done(tk);
                continue;
            }
            sum_trials += sk->trials, sum_wall += sk->wall_s, sum_cc += sk->cc_s_sum, sum_cc_n += sk->cc_n;
            sum_cc_cpu += sk->cc_cpu_sum, sum_self += sk->self_cpu_s;
            best1v[n_ok] = bestnv[n_ok] = 0;
            pack1v[n_ok] = packnv[n_ok] = 0;
            t1minv[n_ok] = tnminv[n_ok] = INFINITY;
            t1v[n_ok] = bench_retime(tk, sk, 1, opt.repeat, 3, &best1v[n_ok], &pack1v[n_ok], &t1minv[n_ok]);
            tnv[n_ok] = bench_retime(tk, sk, all, opt.repeat, TOP_K, &bestnv[n_ok], &packnv[n_ok], &tnminv[n_ok]);
            if (t1v[n_ok] < t1v[k1]) k1 = n_ok;
            if (tnv[n_ok] < tnv[kn]) kn = n_ok;
            n_ok++;
        }
        if (!n_ok) continue;
        BenchTask t = tv[k1]; /* a view of the fastest at 1 thread; the buffers stay owned by tv */
        TuneStats s = sv[k1];
        uint64_t best1 = best1v[k1];
        double pack1 = pack1v[k1], t1 = t1v[k1], tn = tnv[kn], tnmin = tnminv[kn], refnmin = NAN;
        /* vendor baselines (without the fused epilogue): oneDNN for conv2d (the faster of its direct algorithm and
         * its own choice), OpenBLAS for dense; none else */
        bool conv = t.wl.op == OP_CONV2D;
        char impl[64] = "", impl_auto[64] = "";
        double v1 = NAN, vn = NAN, b1 = NAN, bn = NAN, vd1 = NAN, vdn = NAN, va1 = NAN, van = NAN, vdn_min, van_min;
        g_last_min = NAN;
        if (conv) {
            vd1 = bench_dnnl_conv(&t.wl, dnnl_convolution_direct, 1, opt.repeat, impl, sizeof impl);
            vdn = bench_dnnl_conv(&t.wl, dnnl_convolution_direct, all, opt.repeat, impl, sizeof impl);
            vdn_min = g_last_min;
            va1 = bench_dnnl_conv(&t.wl, dnnl_convolution_auto, 1, opt.repeat, impl_auto, sizeof impl_auto);
            van = bench_dnnl_conv(&t.wl, dnnl_convolution_auto, all, opt.repeat, impl_auto, sizeof impl_auto);
            van_min = g_last_min;
            v1 = isfinite(va1) && !(vd1 <= va1) ? va1 : vd1;
            vn = isfinite(van) && !(vdn <= van) ? van : vdn;
            refnmin = vn == van ? van_min : vdn_min;
        } else if (t.wl.op == OP_DENSE) {
            b1 = bench_blas_dense(&t, 1, opt.repeat);
            bn = bench_blas_dense(&t, all, opt.repeat);
            refnmin = g_last_min;
        }
        double g = t.flops * 1e-9;
        double ref1 = conv ? v1 : b1, refn = conv ? vn : bn;
        int32_t choice[SPACE_MAX_KNOBS];
        char cfg[256] = "-";
        if (s.n_top) {
            Space_decode(&t.space, best1, choice);
            char kc[220];
            Space_format(&t.space, choice, kc, sizeof kc);
            snprintf(cfg, sizeof cfg, "%s%s",
                     n_use > 1 ? (t.tmpl == &tmpl_conv2d_winograd_cpu ? "winograd " : "direct ") : "", kc);
        }
        char c[10][16];
        printf("%-26s %7s %7s %7s %6s | %7s %7s %7s %6s %6s | %6.2f %6.1f %5.2f | %s\n", t.label, num(c[0], g / t1, 1),
               num(c[1], g / v1, 1), num(c[2], g / b1, 1), num(c[3], ref1 / t1, 2), num(c[4], g / tn, 1),
               num(c[5], g / vn, 1), num(c[6], g / bn, 1), num(c[7], refn / tn, 2), num(c[8], refnmin / tnmin, 2),
               pack1 * 1e3, s.wall_s > 0 ? s.trials / s.wall_s : 0.0, s.cc_n ? s.cc_cpu_sum / s.cc_n : 0.0, cfg);
        if (isfinite(ref1 / t1)) sum_ratio1 += log(ref1 / t1), n_ratio1++;
        if (opt.roof) {
            /* the tuned kernel against its template's roof (a Winograd one's from its own arithmetic, in
             * effective GFLOPS), the vendor's against the direct convolution's */
            double ex = t.tmpl->min_flops ? t.tmpl->min_flops(&t.wl) : 0;
            Roof r1 = Roof_forArithmetic(&mf, 1, &t.wl, ex), rn = Roof_forArithmetic(&mf, all, &t.wl, ex);
            Roof v1 = Roof_forWorkload(&mf, 1, &t.wl), vn = Roof_forWorkload(&mf, all, &t.wl);
            const char *eff = Template_effective(t.tmpl) ? " effective" : "";
            printf("%-26s   roof: 1 thread %.1f%s GFLOPS %s, tuned %s%% vendor %s%% | %d threads %.1f%s GFLOPS %s, "
                   "tuned %s%% vendor %s%% (fastest repeats: tuned %s%% vendor %s%%)\n",
                   "", r1.gflops, eff, Roof_boundText(r1.memory_bound ? r1.level : 0),
                   num(c[0], 100 * g / t1 / r1.gflops, 0), num(c[1], 100 * g / ref1 / v1.gflops, 0), all, rn.gflops,
                   eff, Roof_boundText(rn.memory_bound ? rn.level : 0), num(c[2], 100 * g / tn / rn.gflops, 0),
                   num(c[3], 100 * g / refn / vn.gflops, 0), num(c[4], 100 * g / tnmin / rn.gflops, 0),
                   num(c[5], 100 * g / refnmin / vn.gflops, 0));
            if (t.wl.op == OP_DENSE && t.wl.m == 1024 && t.wl.n == 1024 && t.wl.k == 1024) {
                /* OpenBLAS's fastest repeat at 1 thread: time it again to read it */
                bench_blas_dense(&t, 1, opt.repeat);
                blas_best1 = g / g_last_min;
                blas_bestn = g / refnmin;
            }
        }
        char rejected[32];
        if (opt.tuner)
            snprintf(rejected, sizeof rejected, "n/a"); /* the engine does not report them */
        else
            snprintf(rejected, sizeof rejected, "%d", s.invalid);
        printf("%-26s   (%d trials: %d failed, %s rejected by precheck; slowest correct trial %.1f GFLOPS = %.1fx"
               " slower than the best; oneDNN impl %s)\n",
               "", s.trials, s.failed, rejected, s.worst_s > 0 ? g / s.worst_s : 0.0,
               s.n_top && s.worst_s > 0 ? s.worst_s / s.top[0].secs : 0.0, impl[0] ? impl : "-");
        if (n_ok > 1 || conv) {
            printf("%-26s  ", "");
            for (int k = 0; k < n_ok; k++) {
                int32_t ch[SPACE_MAX_KNOBS];
                char kc[200] = "-", kn[200] = "-";
                if (sv[k].n_top) {
                    Space_decode(&tv[k].space, best1v[k], ch);
                    Space_format(&tv[k].space, ch, kc, sizeof kc);
                    Space_decode(&tv[k].space, bestnv[k], ch);
                    Space_format(&tv[k].space, ch, kn, sizeof kn);
                }
                printf(" %s%s %s / %s GFLOPS [%s] [%d threads: %s] (%d trials; 1->%d threads x%s, fastest repeats "
                       "x%s);",
                       tv[k].tmpl->name, tv[k].tmpl == &tmpl_conv2d_winograd_cpu ? " (effective)" : "",
                       num(c[0], g / t1v[k], 1), num(c[1], g / tnv[k], 1), kc, all, kn, sv[k].trials, all,
                       num(c[2], t1v[k] / tnv[k], 2), num(c[3], t1minv[k] / tnminv[k], 2));
            }
            if (conv)
                printf(" oneDNN direct %s / %s, auto %s / %s (%s; 1->%d threads x%s)", num(c[4], g / vd1, 1),
                       num(c[5], g / vdn, 1), num(c[6], g / va1, 1), num(c[7], g / van, 1),
                       impl_auto[0] ? impl_auto : "-", all, num(c[8], v1 / vn, 2));
            printf("\n");
        }
        fflush(stdout);
        for (int k = 0; k < n_ok; k++)
            task_done(&tv[k]);
    }
    if (n_ratio1) printf("\ngeometric mean of ratio1 (tuned / vendor, 1 thread): %.2f\n", exp(sum_ratio1 / n_ratio1));
    if (opt.roof && isfinite(blas_best1))
        printf("measured peak vs OpenBLAS SGEMM 1024^3 (fastest repeat, cannot exceed the peak): 1 thread %.1f of %.1f "
               "GFLOPS = %.0f%%; %d threads %.1f of %.1f GFLOPS = %.0f%%\n",
               blas_best1, mf.peak1_gflops, 100 * blas_best1 / mf.peak1_gflops, all, blas_bestn, mf.peak_gflops,
               100 * blas_bestn / mf.peak_gflops);
    printf("\nGFLOPS columns: tuned (the faster template, best config), oneDNN (faster of direct and auto) / OpenBLAS;"
           " ratio = tuned / vendor (>1: faster). GFLOPS are the direct convolution's FLOPs over the time, also for"
           " Winograd (effective GFLOPS). 1 = one thread (timed with the thread's CPU clock), N = %d threads (wall "
           "clock, median;"
           " rN_min compares the fastest repeats, less sensitive to other processes).\n",
           all);
    printf("pk+fin = ms of tt_pack + tt_finish (layout transforms, timed apart). cc_cpu = mean CPU seconds of cc per"
           " candidate (2 compiles in parallel; with --tuner: the engine's build seconds).\n");
    printf("overall: %.0f trials in %.1f s = %.2f trials/s; compile per candidate: %.2f s wall, %.2f s CPU\n",
           sum_trials, sum_wall, sum_wall > 0 ? sum_trials / sum_wall : 0.0, sum_cc_n ? sum_cc / sum_cc_n : 0.0,
           sum_cc_n ? sum_cc_cpu / sum_cc_n : 0.0);
    if (!opt.tuner && sum_trials > 0) {
        /* the local loop compiles a batch on 2 cores, then measures one by one */
        double cc = sum_cc_cpu / sum_trials, meas = sum_self / sum_trials;
        printf("CPU per trial: compile %.3f s + load/check/time %.3f s; on 2 idle cores that is about %.1f trials/s\n",
               cc, meas, 1.0 / (cc / 2 + meas));
    }
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) > 0)
        printf("load average at the end: %.2f (shared machine: wall times are noisy)\n", load[0]);
    rmdir(g_dir);
    return 0;
}
