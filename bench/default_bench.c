/* bench/default_bench.c: the zero-trial defaults of the CPU templates against
 * the old default and a short search, on the layers of built-in networks.
 *
 * For each task of the networks (deduplicated across them), with the template
 * Template_find gives it (what `run` builds a task without a record with), it
 * times three configs at 1 thread and at all threads:
 *   old    the lowest flat index that passes the precheck (the default before
 *          Template.default_config),
 *   new    Export_defaultChoice (the template's default_config),
 *   tuned  the fastest of a short search (--trials, random then mutations of
 *          the best, timed at 1 thread; its 3 best re-timed at each count).
 * Only tt_run is timed (--repeat repeats of at least 20 ms each): at 1 thread
 * the median in the thread's CPU time, at more the fastest repeat in wall
 * time (now_s: on a shared machine the rest mostly measures the others). Each kernel is checked against
 * Workload_reference before it is timed. The table (Markdown, ms per call) goes to stdout with the machine and the
 * date, per-network weighted sums last (each task times its occurrences: the kernels' share of an inference).
 *
 * --model FILE.onnx takes the tasks of an ONNX model instead (as `tasks --model`
 * lists them; the model's inputs must have fixed shapes).
 *
 * Usage: default_bench [--network NAME | --model FILE.onnx]... [--trials N] [--repeat R] [--only SUBSTR]
 *                      [--seed S]
 */
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/rng.h"
#include "kernels/export/export.h"
#include "kernels/target.h"
#include "kernels/targets/cpu/abi.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "space/space.h"
#include "tuner/net/model_load.h"
#include "tuner/net/network.h"

extern const Template tmpl_conv2d_cpu, tmpl_conv2d_winograd_cpu, tmpl_depthwise_cpu, tmpl_dense_cpu,
    tmpl_batch_matmul_cpu;
extern const Target target_cpu;
__attribute__((used)) static const void *const keep_symbols[] = {&tmpl_conv2d_cpu,       &tmpl_conv2d_winograd_cpu,
                                                                 &tmpl_depthwise_cpu,    &tmpl_dense_cpu,
                                                                 &tmpl_batch_matmul_cpu, &target_cpu};

#define MAX_NETS 8
#define MAX_TASKS 256
#define BATCH 8
#define TOP 3

typedef struct Options {
    const char *nets[MAX_NETS];
    int n_nets;
    int trials, repeat;
    const char *only;
    uint64_t seed;
} Options;

typedef struct Row {
    char net[32];
    int weight;
    Workload wl;
    const Template *tmpl;
    double ms[3][2]; /* [old, new, tuned][1 thread, all threads] */
    char cfg_new[160], cfg_tuned[160];
} Row;

static char g_dir[256];
static DeviceInfo g_dev;
static clockid_t g_clock = CLOCK_MONOTONIC;

/* ---- timing --------------------------------------------------------------- */

static int g_threads = 1;

/* At 1 thread the thread's own CPU clock (time spent descheduled by the other
 * processes of a shared machine does not count); above, wall time, of which
 * time_run keeps the fastest repeat (the one least disturbed). */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void set_threads(int threads) {
    omp_set_num_threads(threads);
    g_threads = threads > 0 ? threads : 1;
    g_clock = g_threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median seconds of tt_run over repeat repeats, each of enough calls to last min_s. */
static double time_run(tt_state_fn run, void *state, int repeat, double min_s) {
    run(state);
    double t0 = now_s();
    run(state);
    double one = now_s() - t0;
    int number = one > 0 ? (int)(min_s / one) + 1 : 100;
    if (number > 10000) number = 10000;
    double costs[32];
    if (repeat > 32) repeat = 32;
    for (int r = 0; r < repeat; r++) {
        t0 = now_s();
        for (int i = 0; i < number; i++)
            run(state);
        costs[r] = (now_s() - t0) / number;
    }
    qsort(costs, (size_t)repeat, sizeof costs[0], cmp_double);
    return g_threads == 1 ? costs[repeat / 2] : costs[0];
}

/* ---- one task's buffers ------------------------------------------------------ */

typedef struct Bufs {
    int nargs;
    ArgInfo info[WORKLOAD_MAX_ARGS];
    float **args;
    float *ref;
} Bufs;

static void bufs_init(Bufs *b, const Workload *wl) {
    b->nargs = Workload_args(wl, b->info);
    b->args = calloc((size_t)b->nargs, sizeof *b->args);
    for (int i = 0; i < b->nargs; i++)
        b->args[i] = calloc(b->info[i].count ? b->info[i].count : 1, sizeof(float));
    Workload_fillInputs(wl, b->args, 7);
    size_t out_n = b->info[b->nargs - 1].count;
    Workload_reference(wl, b->args);
    b->ref = malloc(out_n * sizeof(float));
    memcpy(b->ref, b->args[b->nargs - 1], out_n * sizeof(float));
}

static void bufs_done(Bufs *b) {
    for (int i = 0; i < b->nargs; i++)
        free(b->args[i]);
    free(b->args);
    free(b->ref);
}

/* Loads a built kernel, checks it once, then times tt_run at each thread count
 * in threads[0..n); ms[i] = +inf on any failure. */
static void measure_so(const Workload *wl, Bufs *b, const char *so, const int *threads, int n, int repeat, double *ms) {
    for (int i = 0; i < n; i++)
        ms[i] = INFINITY;
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    tt_setup_fn setup = (tt_setup_fn)dlsym(h, "tt_setup");
    tt_state_fn pack = (tt_state_fn)dlsym(h, "tt_pack"), run = (tt_state_fn)dlsym(h, TT_CPU_ENTRY);
    tt_state_fn finish = (tt_state_fn)dlsym(h, "tt_finish"), teardown = (tt_state_fn)dlsym(h, "tt_teardown");
    void *state = NULL;
    if (setup && pack && run && finish && teardown && setup(b->args, &state) == 0) {
        float *out = b->args[b->nargs - 1];
        size_t out_n = b->info[b->nargs - 1].count;
        for (size_t e = 0; e < out_n; e++)
            out[e] = NAN;
        set_threads(threads[0]);
        pack(state), run(state), finish(state);
        char why[512];
        if (Workload_compare(wl, b->ref, out, why, sizeof why)) {
            for (int i = 0; i < n; i++) {
                set_threads(threads[i]);
                ms[i] = 1e3 * time_run(run, state, repeat, 0.02);
            }
        } else {
            fprintf(stderr, "  wrong answer (%s): %s\n", so, why);
        }
    }
    if (teardown) teardown(state);
    dlclose(h);
}

/* ---- building configs -------------------------------------------------------- */

typedef struct Build {
    char src[320], so[320];
    pid_t pid;
    int status;
} Build;

/* Writes the source of a config; false when generation fails. */
static bool write_source(const Template *t, const Workload *wl, const Space *space, const int32_t *choice,
                         const char *path) {
    char err[TT_ERRLEN];
    KernelSource ks;
    KernelSource_init(&ks);
    bool ok = t->generate(wl, space, choice, &g_dev, DIALECT_C, &ks, err) == TT_OK;
    FILE *f = ok ? fopen(path, "w") : NULL;
    ok = f && fputs(ks.source, f) >= 0;
    if (f) fclose(f);
    KernelSource_done(&ks);
    return ok;
}

/* Compiles the builds two at a time (the machine's cores). */
static void build_all(Build *b, int n) {
    int next = 0, running = 0;
    while (next < n || running > 0) {
        while (running < 2 && next < n) {
            char cmd[1024];
            snprintf(cmd, sizeof cmd, "cc %s -o %s %s", TT_CPU_CFLAGS, b[next].so, b[next].src);
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
        pid_t done = wait(&st);
        if (done < 0) break;
        for (int i = 0; i < next; i++)
            if (b[i].pid == done) b[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        running--;
    }
}

/* Builds and measures the configs idx[0..n) at the thread counts; ms[i * nt + j]. */
static void measure_configs(const Row *r, const Space *space, Bufs *bufs, const uint64_t *idx, int n,
                            const int *threads, int nt, int repeat, double *ms) {
    Build b[BATCH];
    for (int i = 0; i < n; i++) {
        int32_t choice[SPACE_MAX_KNOBS];
        Space_decode(space, idx[i], choice);
        snprintf(b[i].src, sizeof b[i].src, "%s/c%d.c", g_dir, i);
        snprintf(b[i].so, sizeof b[i].so, "%s/c%d_%llu.so", g_dir, i, (unsigned long long)idx[i]);
        if (!write_source(r->tmpl, &r->wl, space, choice, b[i].src))
            snprintf(b[i].src, sizeof b[i].src, "/nonexistent.c");
    }
    build_all(b, n);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < nt; j++)
            ms[i * nt + j] = INFINITY;
        if (b[i].status == 0) measure_so(&r->wl, bufs, b[i].so, threads, nt, repeat, ms + i * nt);
        unlink(b[i].so);
        unlink(b[i].src);
    }
}

/* ---- the short search ---------------------------------------------------------- */

typedef struct Top {
    uint64_t index[TOP];
    double ms[TOP];
    int n;
} Top;

static void top_insert(Top *t, uint64_t index, double ms) {
    if (!isfinite(ms)) return;
    int pos = t->n;
    while (pos > 0 && t->ms[pos - 1] > ms)
        pos--;
    if (pos >= TOP) return;
    for (int i = (t->n < TOP ? t->n : TOP - 1); i > pos; i--)
        t->index[i] = t->index[i - 1], t->ms[i] = t->ms[i - 1];
    t->index[pos] = index, t->ms[pos] = ms;
    if (t->n < TOP) t->n++;
}

/* Up to n new precheck-valid configs: random, and every other one a neighbour of a best one. */
static int propose(const Row *r, const Space *space, const Top *top, VisitedSet *seen, Rng *rng, uint64_t *out, int n) {
    int m = 0;
    for (int tries = 0; m < n && tries < 4000; tries++) {
        uint64_t idx = Rng_below(rng, space->total);
        if (top->n > 0 && (tries & 1)) idx = Space_neighbour(space, top->index[Rng_below(rng, (uint64_t)top->n)], rng);
        if (VisitedSet_has(seen, idx)) continue;
        VisitedSet_add(seen, idx);
        int32_t choice[SPACE_MAX_KNOBS];
        char reason[TT_ERRLEN];
        Space_decode(space, idx, choice);
        if (r->tmpl->precheck(&r->wl, space, choice, &g_dev, reason, sizeof reason)) out[m++] = idx;
    }
    return m;
}

/* The search at 1 thread, then its TOP best re-timed at 1 and all threads. */
static void search(Row *r, const Space *space, Bufs *bufs, const Options *opt, const uint64_t *seeds, int n_seeds) {
    Top top = {0};
    Rng rng;
    Rng_seed(&rng, opt->seed);
    VisitedSet seen;
    VisitedSet_init(&seen);
    const int one = 1;
    for (int i = 0; i < n_seeds; i++) /* the defaults count as measured: the search is on top of them */
        VisitedSet_add(&seen, seeds[i]);
    for (int done = 0; done < opt->trials;) {
        uint64_t idx[BATCH];
        int want = opt->trials - done < BATCH ? opt->trials - done : BATCH;
        int n = propose(r, space, &top, &seen, &rng, idx, want);
        if (n == 0) break;
        double ms[BATCH];
        measure_configs(r, space, bufs, idx, n, &one, 1, 3, ms);
        for (int i = 0; i < n; i++)
            top_insert(&top, idx[i], ms[i]);
        done += n;
    }
    VisitedSet_done(&seen);
    int threads[2] = {1, g_dev.cores > 1 ? g_dev.cores : 1};
    double ms[TOP * 2];
    measure_configs(r, space, bufs, top.index, top.n, threads, 2, opt->repeat, ms);
    r->ms[2][0] = r->ms[2][1] = INFINITY;
    for (int i = 0; i < top.n; i++)
        for (int j = 0; j < 2; j++)
            if (ms[i * 2 + j] < r->ms[2][j]) {
                r->ms[2][j] = ms[i * 2 + j];
                if (j == 0) {
                    int32_t choice[SPACE_MAX_KNOBS];
                    Space_decode(space, top.index[i], choice);
                    Space_format(space, choice, r->cfg_tuned, sizeof r->cfg_tuned);
                }
            }
}

/* Old default, new default and the search for one row. */
static void bench_row(Row *r, const Options *opt) {
    char err[TT_ERRLEN] = "";
    Space space;
    Space_init(&space);
    for (int k = 0; k < 3; k++)
        r->ms[k][0] = r->ms[k][1] = INFINITY;
    if (r->tmpl->define_space(&r->wl, &g_dev, &space, err) != TT_OK) {
        fprintf(stderr, "  %s\n", err);
        Space_done(&space);
        return;
    }
    Template old = *r->tmpl;
    old.default_config = NULL; /* the default before the template hook */
    int32_t c_old[SPACE_MAX_KNOBS], c_new[SPACE_MAX_KNOBS];
    uint64_t idx[2] = {0, 0};
    if (Export_defaultChoice(&old, &r->wl, &space, &g_dev, c_old, err) == TT_OK &&
        Export_defaultChoice(r->tmpl, &r->wl, &space, &g_dev, c_new, err) == TT_OK) {
        idx[0] = Space_encode(&space, c_old), idx[1] = Space_encode(&space, c_new);
        Space_format(&space, c_new, r->cfg_new, sizeof r->cfg_new);
        Bufs bufs;
        bufs_init(&bufs, &r->wl);
        int threads[2] = {1, g_dev.cores > 1 ? g_dev.cores : 1};
        double ms[4];
        measure_configs(r, &space, &bufs, idx, 2, threads, 2, opt->repeat, ms);
        memcpy(r->ms[0], ms, sizeof r->ms[0]);
        memcpy(r->ms[1], ms + 2, sizeof r->ms[1]);
        if (opt->trials > 0) search(r, &space, &bufs, opt, idx, 2);
        bufs_done(&bufs);
    } else {
        fprintf(stderr, "  %s\n", err);
    }
    Space_done(&space);
}

/* ---- table ------------------------------------------------------------------------ */

static const char *num(char *buf, double x) {
    if (isfinite(x))
        snprintf(buf, 24, x < 10 ? "%.3f" : "%.1f", x);
    else
        snprintf(buf, 24, "-");
    return buf;
}

static void machine_name(char *buf, size_t n) {
    snprintf(buf, n, "unknown cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
            char *c = strchr(line, ':') + 1;
            c += strspn(c, " \t");
            c[strcspn(c, "\n")] = '\0';
            snprintf(buf, n, "%s", c);
            break;
        }
    fclose(f);
}

static void print_header(const Options *opt) {
    char cpu[128], date[64];
    machine_name(cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    printf("# Zero-trial defaults of the CPU templates\n\n");
    printf("Machine: %s, %d cores, %d floats per vector (%s); %s. Search: %d trials at 1 thread (random, then "
           "neighbours of the best), its %d best re-timed. ms per tt_run call: 1T the median of %d repeats in the "
           "thread's CPU time, T (= %d threads) the fastest repeat in wall time.\n\n",
           cpu, g_dev.cores, g_dev.vector_floats, g_dev.name, date, opt->trials, TOP, opt->repeat, g_dev.cores);
    printf("| network | w | workload | old 1T | new 1T | tuned 1T | old T | new T | tuned T | old/new T |"
           " new/tuned T | new config | tuned config (1T) |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

static void print_row(const Row *r) {
    char key[WORKLOAD_KEY_LEN], b[8][24];
    Workload_key(&r->wl, key, sizeof key);
    printf("| %s | %d | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r->net, r->weight, key,
           num(b[0], r->ms[0][0]), num(b[1], r->ms[1][0]), num(b[2], r->ms[2][0]), num(b[3], r->ms[0][1]),
           num(b[4], r->ms[1][1]), num(b[5], r->ms[2][1]), num(b[6], r->ms[0][1] / r->ms[1][1]),
           num(b[7], r->ms[1][1] / r->ms[2][1]), r->cfg_new, r->cfg_tuned);
    fflush(stdout);
}

/* The name of a network in the tables: a built-in network's, a model's file name without the folder and
 * ".onnx". Returns whether it is a model file. */
static bool net_label(const char *name, char *out, size_t cap) {
    size_t len = strlen(name);
    bool model = len > 5 && strcmp(name + len - 5, ".onnx") == 0;
    const char *slash = strrchr(name, '/'), *base = model && slash ? slash + 1 : name;
    snprintf(out, cap, "%.*s", (int)(strlen(base) - (model ? 5 : 0)), base);
    return model;
}

/* Per network: the weighted sums (occurrences x ms) of each column, over the rows it has. */
static void print_sums(const Row *rows, int n, const Options *opt) {
    printf("\nKernels of one inference (sum of occurrences x ms over the network's tasks):\n\n");
    printf("| network | tasks | old 1T | new 1T | tuned 1T | old T | new T | tuned T | old/new T | new/tuned T |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < opt->n_nets; k++) {
        double s[3][2] = {{0}};
        int tasks = 0;
        char label[32];
        net_label(opt->nets[k], label, sizeof label);
        for (int i = 0; i < n; i++) {
            if (strcmp(rows[i].net, label) != 0) continue;
            tasks++;
            for (int c = 0; c < 3; c++)
                for (int t = 0; t < 2; t++)
                    s[c][t] += rows[i].weight * rows[i].ms[c][t];
        }
        char b[8][24];
        printf("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", label, tasks, num(b[0], s[0][0]),
               num(b[1], s[1][0]), num(b[2], s[2][0]), num(b[3], s[0][1]), num(b[4], s[1][1]), num(b[5], s[2][1]),
               num(b[6], s[0][1] / s[1][1]), num(b[7], s[1][1] / s[2][1]));
    }
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(void) {
    fprintf(stderr, "usage: default_bench [--network NAME | --model FILE.onnx]... [--trials N] [--repeat R]\n"
                    "                     [--only SUBSTR] [--seed S]\n"
                    "  networks by default: resnet-18 resnet-50 mobilenet-v2 bert-base\n");
    exit(2);
}

static void parse(int argc, char **argv, Options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->trials = 64, opt->repeat = 5, opt->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) usage();
        if ((strcmp(a, "--network") == 0 || strcmp(a, "--model") == 0) && opt->n_nets < MAX_NETS)
            opt->nets[opt->n_nets++] = v;
        else if (strcmp(a, "--trials") == 0)
            opt->trials = atoi(v);
        else if (strcmp(a, "--repeat") == 0)
            opt->repeat = atoi(v) > 0 ? atoi(v) : 1;
        else if (strcmp(a, "--only") == 0)
            opt->only = v;
        else if (strcmp(a, "--seed") == 0)
            opt->seed = strtoull(v, NULL, 10);
        else
            usage();
        i++;
    }
    if (opt->n_nets == 0) {
        static const char *const DEF[] = {"resnet-18", "resnet-50", "mobilenet-v2", "bert-base"};
        for (int i = 0; i < 4; i++)
            opt->nets[opt->n_nets++] = DEF[i];
    }
}

/* The tasks of the networks, each workload once (the first network that has it). */
static int collect(const Options *opt, Row *rows) {
    int n = 0;
    for (int k = 0; k < opt->n_nets; k++) {
        NetworkOptions nopt;
        NetworkOptions_defaults(&nopt);
        NetworkTask *tasks = NULL;
        NetworkUntuned *untuned = NULL;
        int n_tasks = 0, n_untuned = 0;
        char err[TT_ERRLEN] = "", key[WORKLOAD_KEY_LEN], other[WORKLOAD_KEY_LEN];
        const char *name = opt->nets[k];
        char label[32];
        Status st = net_label(name, label, sizeof label)
                        ? Model_extract(name, NULL, 0, 0, &tasks, &n_tasks, &untuned, &n_untuned, err)
                        : Network_extract(name, &nopt, &tasks, &n_tasks, &untuned, &n_untuned, err);
        if (st != TT_OK) {
            fprintf(stderr, "%s: %s\n", opt->nets[k], err);
            continue;
        }
        for (int i = 0; i < n_tasks && n < MAX_TASKS; i++) {
            Workload_key(&tasks[i].wl, key, sizeof key);
            bool seen = false;
            for (int j = 0; j < n && !seen; j++)
                seen = strcmp(rows[j].net, label) == 0 &&
                       (Workload_key(&rows[j].wl, other, sizeof other), strcmp(key, other) == 0);
            const Template *t = Template_find(&tasks[i].wl, FAMILY_CPU, err);
            if (seen || !t || (opt->only && !strstr(key, opt->only))) continue;
            memset(&rows[n], 0, sizeof rows[n]);
            snprintf(rows[n].net, sizeof rows[n].net, "%s", label);
            rows[n].weight = tasks[i].weight, rows[n].wl = tasks[i].wl, rows[n].tmpl = t;
            n++;
        }
        free(tasks);
        free(untuned);
    }
    return n;
}

int main(int argc, char **argv) {
    Options opt;
    parse(argc, argv, &opt);
    char err[TT_ERRLEN] = "";
    if (target_cpu.probe(&g_dev, err) != TT_OK) {
        fprintf(stderr, "default_bench: no cpu device: %s\n", err);
        return 1;
    }
    /* kernels bring libgomp; keep it loaded so that dlclose never unmaps code its idle threads run */
    dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tt_default_bench_XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    static Row rows[MAX_TASKS];
    int n = collect(&opt, rows);
    print_header(&opt);
    for (int i = 0; i < n; i++) {
        char key[WORKLOAD_KEY_LEN];
        Workload_key(&rows[i].wl, key, sizeof key);
        fprintf(stderr, "[%d/%d] %s %s\n", i + 1, n, rows[i].net, key);
        int same = -1; /* a workload of an earlier network: its measurements */
        for (int j = 0; j < i && same < 0; j++) {
            char other[WORKLOAD_KEY_LEN];
            Workload_key(&rows[j].wl, other, sizeof other);
            if (strcmp(key, other) == 0) same = j;
        }
        if (same >= 0) {
            memcpy(rows[i].ms, rows[same].ms, sizeof rows[i].ms);
            memcpy(rows[i].cfg_new, rows[same].cfg_new, sizeof rows[i].cfg_new);
            memcpy(rows[i].cfg_tuned, rows[same].cfg_tuned, sizeof rows[i].cfg_tuned);
        } else {
            bench_row(&rows[i], &opt);
        }
        print_row(&rows[i]);
    }
    print_sums(rows, n, &opt);
    rmdir(g_dir);
    return 0;
}
