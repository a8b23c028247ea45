/* app/cmd_run.c: `tunetop run`: a network (or one operator) built with the
 * best configs of a log, run end to end, checked against the reference, and
 * timed.
 *
 * The graph (tuner/net/networks.c) gives the tasks; each task's kernel is
 * exported (kernels/export/export.h) with its best config, or the template's default
 * with a warning; tuner/net/netprog.c writes the program around them with the
 * untuned-op runtime (tuner/net/netrt.c); cc builds it in a temporary directory;
 * a child process runs it on seeded parameters and inputs, writes the output
 * and times the network. Meanwhile tunetop computes the reference
 * (tuner/net/graph_ref.c) and then compares. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app/commands.h"
#include "app/device.h"
#include "app/opts.h"
#include "base/clock.h"
#include "base/strbuf.h"
#include "kernels/export/export.h"
#include "kernels/template.h"
#include "kernels/templates/te/te_sketch.h"
#include "kernels/templates/te/te_task.h"
#include "records/history.h"
#include "tuner/net/graph_ref.h"
#include "tuner/net/netprog.h"
#include "tuner/net/network.h"
#include "tuner/net/subgraph.h"
#include "tuner/plan.h"

extern char **environ;

static void usage(FILE *out) {
    NetworkOptions nd;
    NetworkOptions_defaults(&nd);
    app_help(out,
             "usage: tunetop run --network NAME --log LOG [options]\n"
             "       tunetop run --task SPEC --log LOG [options]\n"
             "       tunetop run --expr FILE.te [--set NAME=VALUE ...] [--log LOG] [options]\n"
             "\n"
             "Builds the network (or the one operator) with the best config of every task in LOG, runs it on\n"
             "parameters and inputs from a fixed seed, checks the output against a naive reference execution\n"
             "of the same graph, and times it. The kernels are exported as `tunetop export` writes them, with\n"
             "the epilogues each task fuses (bias, residual add, ReLU); the other ops (batch-norm, pooling,\n"
             "concat, softmax, layer-norm, GELU, ...) run in a small runtime compiled into the same program.\n"
             "A task without a successful record in LOG uses its template's default config (a warning says\n"
             "so); a log with none of the tasks is an error. The output must match the reference within\n"
             "|got - ref| <= %g * max|ref| + %g * |ref|; a mismatch names the first bad element.\n"
             "\n"
             "Prints the summary of the timed runs (mean, median, max, min, std over the repeats; each repeat\n"
             "is the mean of NUMBER runs, NUMBER raised until a repeat lasts MIN_REPEAT_MS), beside the\n"
             "tuner's estimate: the sum over tasks of weight x best latency from LOG (kernels only, and with\n"
             "their layout transforms). --profile adds a table per op: time, share, tuned or not, and the\n"
             "layout transforms inside the tuned kernels.\n"
             "\n"
             "  --network NAME      %s\n"
             "  --task SPEC         one operator (as for tune), e.g. conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1\n"
             "  --expr FILE.te      a tensor expression (cpu): its best schedule in LOG (without LOG, or without a\n"
             "                      successful record, the zero-trial default) run in the measurement worker on\n"
             "                      random inputs, checked against the expression interpreter; prints the median\n"
             "  --set NAME=VALUE    override a 'let' of FILE.te, as given to tune (repeatable)\n"
             "  --log LOG           the record log with the tuned configs\n"
             "  --target T          %s (default %s; without a device, cuda only builds the program)\n"
             "  --batch-size B      the network's batch size (default %d)\n"
             "  --image-size S      input image side (default %s)\n"
             "  --seq-len L         bert-base sequence length (default %d)\n"
             "  --threads N         threads of the program (default: all cores)\n"
             "  --number N          runs per repeat (default 1)\n"
             "  --repeat R          timed repeats (default 10)\n"
             "  --min-repeat-ms M   raise NUMBER until one repeat lasts M ms (default 0)\n"
             "  --profile           time every op (a separate pass of NUMBER runs)\n"
             "  --seed S            seed of the parameters and inputs (default 1)\n"
             "  --keep DIR          keep the program's sources, data and binary in DIR (must not exist)\n"
             "  --timeout S         seconds the built program may run (default 600)\n"
             "  --no-chain          every tensor goes through NCHW between ops (blocked kernels pack and unpack\n"
             "                      around themselves), to compare with the default, which keeps tensors blocked\n"
             "  --subgraphs         run the network as the subgraphs `tune --network NAME --subgraphs` tuned: each\n"
             "                      subgraph's best schedule in LOG as C (a subgraph without one: its first\n"
             "                      sketch's zero-trial default), on NCHW tensors; prints the time of every\n"
             "                      subgraph task beside the tuner's estimate. Chosen by itself when LOG holds\n"
             "                      the network's subgraphs and none of its template tasks\n"
             "example: tunetop run --network resnet-18 --log r18.log --repeat 20 --profile\n",
             GRAPH_ATOL, GRAPH_RTOL, Network_names(), Target_names(), Target_default()->name, nd.batch,
             Network_imageSizes(), nd.seq_len);
}

static int usage_error(const char *fmt, const char *a) {
    fprintf(stderr, "tunetop run: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return 2;
}

static int fail(const char *msg) {
    fprintf(stderr, "tunetop run: %s\n", msg);
    return 1;
}

typedef struct RunOptions {
    const char *network, *task, *log, *target, *keep;
    NetworkOptions nopt;
    int threads, number, repeat, min_repeat_ms, timeout_s;
    bool profile, no_chain, subgraphs;
    uint64_t seed;
} RunOptions;

/* ---- files and processes ---- */

static Status write_file(const char *dir, const char *name, const void *data, size_t n, char *err) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return tt_fail(err, "cannot write %s: %s", path, strerror(errno));
    size_t w = fwrite(data, 1, n, f);
    int e = ferror(f);
    if (fclose(f) != 0 || w != n || e) return tt_fail(err, "cannot write %.400s (disk full?)", path);
    return TT_OK;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Spawns argv with stdout and stderr to log_path (appended); returns the pid or -1. */
static pid_t spawn(char *const *argv, const char *log_path, char *const *envp) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 ? pid : -1;
}

/* Waits for pid up to timeout_s (<= 0: forever); kills it on timeout. Returns
 * the wait status, or -1 on timeout. */
static int wait_for(pid_t pid, double timeout_s) {
    double t0 = clock_mono();
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, timeout_s > 0 ? WNOHANG : 0);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return -1;
        if (timeout_s > 0 && clock_mono() - t0 > timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* The first line of a compiler log that says "error", else its first line. */
static void first_error(const char *path, char *out, size_t n) {
    FILE *f = fopen(path, "r");
    snprintf(out, n, "(no compiler output)");
    if (!f) return;
    char line[512];
    bool have = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!have && line[0]) snprintf(out, n, "%s", line), have = true;
        if (strstr(line, "error")) {
            snprintf(out, n, "%s", line);
            break;
        }
    }
    fclose(f);
}

/* ---- the plan of tasks and kernels, and the profile ---- */

typedef struct TaskPlan {
    const Template *tmpl;
    Space space;
    int32_t choice[REC_MAX_KNOBS];
    double latency_s, pack_s; /* from the log; <= 0 when the default config is used */
    bool tuned;
    bool blocked; /* the kernel holds its input or output in a blocked layout */
    bool host;    /* a GPU target without a GPU template for the op: its CPU template runs on the host */
    char why[48]; /* why the default config is used */
    char ext[4];  /* the kernel's source: "c", or "cu" for cuda */
    char prefix[EXPORT_PREFIX_LEN];
    int id; /* its task ID (tunetop tasks, best, the UI): the log's task whose record runs */
} TaskPlan;

/* The ID of a workload's task: the log's task whose record runs (as best numbers it), else
 * the one tune gives it (planned: workloads in order, one ID per template alternative). */
static int task_id(const History *h, const char *key, const Record *best, int planned) {
    const HistoryTask *t = best ? History_findTemplate(h, key, best->template_name) : History_find(h, key);
    return t ? (int)(t - h->tasks) : planned;
}

/* The profile's rows name workload indices ("task 2 dense ..."): the task IDs instead. */
static void relabel(NetPlan *plan, const TaskPlan *tp, int n_tasks) {
    for (int s = 0; s < plan->n_steps; s++) {
        char *l = plan->steps[s].label, rest[sizeof plan->steps[s].label];
        int t, n;
        if (sscanf(l, "task %d%n", &t, &n) != 1 || t < 0 || t >= n_tasks) continue;
        snprintf(rest, sizeof rest, "%s", l + n);
        snprintf(l, sizeof plan->steps[s].label, "task %d%.80s", tp[t].id, rest);
    }
}

/* A kernel of the program: a task's config, exported for the task's workload
 * or for a variant of it that fuses one occurrence's whole epilogue (bias,
 * residual, ReLU) into the kernel. Tasks merge occurrences with different
 * epilogues (tuner/net/networks.c), and a template's space does not depend on the
 * epilogue, so the tuned config applies to the variant as it is. */
typedef struct KernelPlan {
    int task;
    bool host;
    Workload wl;
    Space space;
    int mask;
    BlockedLayout in, out;
    char prefix[EXPORT_PREFIX_LEN];
    char ext[4];
} KernelPlan;

static bool same_space(const Space *a, const Space *b) {
    if (a->n_knobs != b->n_knobs || a->total != b->total) return false;
    for (int k = 0; k < a->n_knobs; k++) {
        const Knob *x = &a->knobs[k], *y = &b->knobs[k];
        if (strcmp(x->name, y->name) != 0 || x->kind != y->kind || x->len != y->len) return false;
        if (x->kind == KNOB_OPTION &&
            (x->n_values != y->n_values || memcmp(x->values, y->values, (size_t)x->n_values * sizeof x->values[0])))
            return false;
        if (x->kind == KNOB_SPLIT &&
            (x->num_outputs != y->num_outputs || x->extent != y->extent ||
             memcmp(x->factors, y->factors, (size_t)x->len * (size_t)x->num_outputs * sizeof(int64_t))))
            return false;
    }
    return true;
}

static double median(double *v, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct ProfRow {
    char label[96];
    int count;
    double s, est;
    NetStepKind kind;
} ProfRow;

static int cmp_prof(const void *a, const void *b) {
    double x = ((const ProfRow *)a)->s, y = ((const ProfRow *)b)->s;
    return x < y ? 1 : x > y ? -1 : 0;
}

static const char *kind_text(NetStepKind k) {
    switch (k) {
    case NSTEP_KERNEL:
        return "yes     -";
    case NSTEP_PACK:
        return "layout  NCHW->blocked";
    case NSTEP_UNPACK:
        return "layout  blocked->NCHW";
    case NSTEP_REBLOCK:
        return "layout  blocked->blocked";
    default:
        return "no      -";
    }
}

/* step_est: per step the tuner's latency of its kernel (subgraphs; NULL: none), printed beside the time. */
static void print_profile(const NetPlan *plan, const double *step_s, const double *step_est) {
    ProfRow *rows = calloc((size_t)plan->n_steps + 1, sizeof *rows);
    if (!rows) return;
    int n = 0;
    double total = 0, share[5] = {0};
    for (int s = 0; s < plan->n_steps; s++) {
        const NetStep *st = &plan->steps[s];
        int r = 0;
        while (r < n && strcmp(rows[r].label, st->label) != 0)
            r++;
        if (r == n) {
            snprintf(rows[n].label, sizeof rows[n].label, "%s", st->label);
            rows[n].kind = st->kind;
            n++;
        }
        rows[r].count++;
        rows[r].s += step_s[s];
        rows[r].est += step_est ? step_est[s] : 0;
        total += step_s[s];
        share[st->kind] += step_s[s];
    }
    qsort(rows, (size_t)n, sizeof *rows, cmp_prof);
    if (step_est) {
        double est = 0;
        printf("\nPer-subgraph time (mean of the profiled runs; the subgraphs of one task summed) and the tuner's "
               "estimate:\n");
        printf("  %-58s %5s %11s %7s %14s %7s\n", "subgraph task", "count", "time (ms)", "share", "estimate (ms)",
               "ratio");
        for (int r = 0; r < n; r++) {
            printf("  %-58.58s %5d %11.4f %6.1f%% %14.4f %7.2f\n", rows[r].label, rows[r].count, rows[r].s * 1e3,
                   total > 0 ? 100.0 * rows[r].s / total : 0, rows[r].est * 1e3,
                   rows[r].est > 0 ? rows[r].s / rows[r].est : 0);
            est += rows[r].est;
        }
        printf("  total %.4f ms over %d subgraphs; estimate %.4f ms (ratio %.2f)\n", total * 1e3, plan->n_steps,
               est * 1e3, est > 0 ? total / est : 0);
        free(rows);
        return;
    }
    printf("\nPer-op profile (mean of the profiled runs; steps with the same label summed):\n");
    printf("  %-58s %5s %11s %7s  %-7s %s\n", "op", "count", "time (ms)", "share", "tuned", "layout transform");
    for (int r = 0; r < n; r++)
        printf("  %-58.58s %5d %11.4f %6.1f%%  %s\n", rows[r].label, rows[r].count, rows[r].s * 1e3,
               total > 0 ? 100.0 * rows[r].s / total : 0, kind_text(rows[r].kind));
    double lay = share[NSTEP_PACK] + share[NSTEP_UNPACK] + share[NSTEP_REBLOCK];
    printf("  total %.4f ms: tuned kernels %.1f%%, layout transforms %.1f%%, untuned ops %.1f%% "
           "(%d tensors kept blocked, never in NCHW)\n",
           total * 1e3, total > 0 ? 100 * share[NSTEP_KERNEL] / total : 0, total > 0 ? 100 * lay / total : 0,
           total > 0 ? 100 * share[NSTEP_RUNTIME] / total : 0, plan->kept_blocked);
    free(rows);
}

/* ---- a network run as subgraphs (tuner/net/subgraph.h) ---- */

/* The expression task of subgraph task t and its workload key. */
static Status subgraph_task(const Subgraphs *sg, int t, TeTask **task, Workload *wl, char *key, char *err) {
    if (TeTask_fromText(sg->tasks[t].te, sg->tasks[t].name, task, wl, err) != TT_OK) return TT_ERR;
    Workload_key(wl, key, WORKLOAD_KEY_LEN);
    return TT_OK;
}

/* Whether the log holds records of the network's subgraphs and none of its template tasks. */
static bool log_has_subgraphs(const Graph *g, const GraphTasks *gt, const History *h) {
    for (int t = 0; t < gt->n_tasks; t++) {
        char key[WORKLOAD_KEY_LEN];
        Workload_key(&gt->tasks[t].wl, key, sizeof key);
        if (History_find(h, key)) return false;
    }
    Subgraphs sg;
    char err[TT_ERRLEN];
    if (Subgraphs_make(g, &sg, err) != TT_OK) return false;
    bool found = false;
    for (int t = 0; t < sg.n_tasks && !found; t++) {
        TeTask *task;
        Workload wl;
        char key[WORKLOAD_KEY_LEN];
        if (subgraph_task(&sg, t, &task, &wl, key, err) != TT_OK) continue;
        found = History_find(h, key) != NULL;
        TeTask_delete(task);
    }
    Subgraphs_done(&sg);
    return found;
}

/* The kernel of every subgraph task: the schedule of its best record in the
 * log (its steps), or, without one, the zero-trial default of its first
 * sketch (a warning says so); the C of it with the entry points renamed
 * (prefix sgkT) into sources[t]. The plan gets one kernel step per subgraph
 * in the order they run, step_est[k] the best latency of its task (0: none). */
static Status plan_subgraphs(const RunOptions *o, const Subgraphs *sg, const History *h, const DeviceInfo *dev,
                             char **prefixes, char **sources, NetPlan *plan, double *step_est, int *n_tuned,
                             int *n_timed, double *est, char *err) {
    double *lat = calloc((size_t)sg->n_tasks + 1, sizeof *lat);
    if (!lat) abort();
    Status st = TT_OK;
    for (int t = 0; t < sg->n_tasks && st == TT_OK; t++) {
        TeTask *task;
        Workload wl;
        char key[WORKLOAD_KEY_LEN];
        if ((st = subgraph_task(sg, t, &task, &wl, key, err)) != TT_OK) break;
        const Record *best = History_bestOfKey(h, key);
        Steps steps;
        char why[TT_ERRLEN];
        bool tuned = best && best->steps && Steps_decode(best->steps, &steps, why) == TT_OK;
        if (tuned) {
            (*n_tuned)++;
            if (best->n_costs > 0) {
                lat[t] = Record_cost(best);
                (*n_timed)++;
                *est += sg->tasks[t].weight * lat[t];
            }
        } else {
            Sketch sk[SKETCH_MAX];
            SketchAnn ann[TE_MAX_TENSORS];
            Sketch_generate(&task->dag, 0, dev->cores, sk);
            Sketch_heuristic(&sk[0], &task->dag, dev->vector_floats, ann);
            Sketch_steps(&sk[0], &task->dag, ann, &steps);
            fprintf(stderr,
                    "tunetop run: warning: task %d (%s) has %s in %s: using its first sketch's zero-trial "
                    "default\n",
                    t, key, History_find(h, key) ? "no successful record" : "no record", o->log);
        }
        KernelSource ks;
        KernelSource_init(&ks);
        st = TeTask_source(task, &steps, &ks, err);
        if (st == TT_OK) {
            StrBuf b;
            StrBuf_init(&b);
            NetProg_renameKernel(prefixes[t], ks.source, &b);
            sources[t] = StrBuf_take(&b);
            StrBuf_done(&b);
        }
        KernelSource_done(&ks);
        TeTask_delete(task);
    }
    plan->steps = calloc((size_t)sg->n_sg + 1, sizeof *plan->steps);
    if (!plan->steps) abort();
    for (int k = 0; st == TT_OK && k < sg->n_sg; k++) {
        const Subgraph *x = &sg->sg[sg->order[k]];
        NetStep *ns = &plan->steps[plan->n_steps++];
        ns->kind = NSTEP_KERNEL;
        ns->op = sg->ops[x->first];
        ns->kernel = x->task;
        ns->out = x->out;
        snprintf(ns->label, sizeof ns->label, "task %d %.80s", x->task, x->label);
        step_est[k] = lat[x->task];
    }
    free(lat);
    return st;
}

/* ---- the run: its state, passed from phase to phase ---- */

/* Everything one run builds: the graph and the log, the plan of the program's kernels, the
 * program's directory and data, the reference and the output. */
typedef struct RunState {
    const RunOptions *o;
    char err[TT_ERRLEN]; /* the message of the phase that failed */
    const char *what;    /* the network's name or the --task spec */
    Graph g;
    GraphTasks gt;
    /* the target: cpu, C kernels; opencl / cuda, the GPU templates' kernels with their host code (run
     * copies in and out) */
    const Target *target;
    DeviceInfo dev;
    DeviceInfo hostdev; /* the cpu, for the ops a GPU target has no template for */
    bool host_ok;       /* hostdev is resolved */
    TargetFamily family;
    Dialect dialect;
    bool is_cpu, is_ocl, is_cuda;
    History h;
    bool sg_mode; /* the network runs as its subgraphs */
    Subgraphs sg;
    char **sg_sources; /* subgraph mode: per subgraph task, its kernel's C */
    double *step_est;  /* subgraph mode: per step, the best latency of its task (0: none) */
    int n_listed;      /* tasks of the program: the templates' or the subgraphs' */
    TaskPlan *tp;      /* per template task, its template and config */
    char **prefixes;   /* per kernel, the prefix of its entry points */
    int *masks;        /* per template task, the blocked layouts of its kernel */
    int n_tuned, n_timed;
    double est_kernel, est_with_pack; /* the tuner's estimate: kernels only, and with their layout transforms */
    int n_kp;
    KernelPlan *kp;
    NetOpKernel *opk; /* per op, its kernel */
    NetPlan plan;
    char dir[1024]; /* the program's directory */
    StrBuf sb;      /* the program's main.c */
    float *params, *input, *ref, *got;
} RunState;

/* The graph of --network or --task and its tasks; 0, else the usage error's exit code. */
static int run_graph(RunState *r) {
    const RunOptions *o = r->o;
    Workload task_wl;
    r->what = o->network;
    if (o->task) {
        if (Workload_parse(o->task, &task_wl, r->err) != TT_OK) return usage_error("--task %s", r->err);
        if (Network_taskGraph(&task_wl, &r->g, r->err) != TT_OK) return usage_error("--task: %s", r->err);
        r->what = o->task;
    } else if (Network_graph(o->network, &o->nopt, &r->g, r->err) != TT_OK) {
        return usage_error("%s", r->err);
    }
    Graph_tasks(&r->g, 0, &r->gt);
    return 0;
}

/* The target and its device; 0, else the exit code (the message printed). */
static int run_target(RunState *r) {
    const Target *named = Target_find(r->o->target);
    if (!named) {
        char msg[TT_ERRLEN];
        snprintf(msg, sizeof msg, "unknown target '%s' (choose from: %s)", r->o->target, Target_names());
        return usage_error("%s", msg);
    }
    r->family = named->family;
    r->dialect = named->dialect;
    r->is_cpu = r->dialect == DIALECT_C;
    r->is_ocl = r->dialect == DIALECT_OPENCL;
    r->is_cuda = r->dialect == DIALECT_CUDA;
    /* a target with offline limits (cuda) and no device: its default architecture's limits, so that the
     * program is still generated and compiled */
    if (app_resolve_device(r->o->target, NULL, named->offline_info != NULL, &r->target, &r->dev, r->err) != TT_OK)
        return fail(r->err);
    return 0;
}

/* The log, which must be for the run's target; 0, else 1 (the message printed). */
static int run_log(RunState *r) {
    const RunOptions *o = r->o;
    if (History_load(&r->h, o->log, r->err) != TT_OK) {
        fprintf(stderr, "tunetop run: %s\n", r->err);
        return 1;
    }
    if (r->h.end == LOG_TORN) fprintf(stderr, "tunetop run: warning: %s (read up to there)\n", r->h.end_msg);
    if (r->h.header.target[0] && strcmp(r->h.header.target, o->target) != 0) {
        fprintf(stderr, "tunetop run: log %s is for target %s, not %s\n", o->log, r->h.header.target, o->target);
        return 1;
    }
    return 0;
}

/* Whether the network runs as its subgraphs (said when the log decides it), and the per-task arrays. */
static void run_start(RunState *r) {
    const RunOptions *o = r->o;
    r->sg_mode = o->subgraphs;
    if (!r->sg_mode && o->network && log_has_subgraphs(&r->g, &r->gt, &r->h)) {
        fprintf(stderr,
                "tunetop run: %s holds %s's subgraphs and none of its template tasks: running it as "
                "subgraphs (--subgraphs)\n",
                o->log, o->network);
        r->sg_mode = true;
    }
    r->n_listed = r->gt.n_tasks;
    size_t n = (size_t)(r->gt.n_tasks ? r->gt.n_tasks : 1);
    r->tp = calloc(n, sizeof *r->tp);
    r->prefixes = calloc(n, sizeof *r->prefixes);
    r->masks = calloc(n, sizeof *r->masks);
    if (!r->tp || !r->prefixes || !r->masks) abort();
    for (int t = 0; t < r->gt.n_tasks; t++)
        Space_init(&r->tp[t].space);
    StrBuf_init(&r->sb);
}

/* ---- planning the kernels ---- */

/* Subgraph mode: one kernel per subgraph task (prefix sgkT), its C and the plan's steps. */
static Status plan_subgraph_run(RunState *r) {
    const RunOptions *o = r->o;
    if (!r->is_cpu) return tt_fail(r->err, "--subgraphs runs on the cpu target");
    if (Subgraphs_make(&r->g, &r->sg, r->err) != TT_OK) return TT_ERR;
    r->n_listed = r->sg.n_tasks;
    r->kp = calloc((size_t)r->sg.n_tasks + 1, sizeof *r->kp);
    r->sg_sources = calloc((size_t)r->sg.n_tasks + 1, sizeof *r->sg_sources);
    r->step_est = calloc((size_t)r->sg.n_sg + 1, sizeof *r->step_est);
    free(r->prefixes);
    r->prefixes = calloc((size_t)r->sg.n_tasks + 1, sizeof *r->prefixes);
    if (!r->kp || !r->sg_sources || !r->step_est || !r->prefixes) abort();
    for (r->n_kp = 0; r->n_kp < r->sg.n_tasks; r->n_kp++) {
        KernelPlan *q = &r->kp[r->n_kp];
        Space_init(&q->space);
        snprintf(q->prefix, sizeof q->prefix, "sgk%d", r->n_kp);
        snprintf(q->ext, sizeof q->ext, "c");
        r->prefixes[r->n_kp] = q->prefix;
    }
    if (plan_subgraphs(o, &r->sg, &r->h, &r->dev, r->prefixes, r->sg_sources, &r->plan, r->step_est, &r->n_tuned,
                       &r->n_timed, &r->est_kernel, r->err) != TT_OK)
        return TT_ERR;
    r->est_with_pack = r->est_kernel;
    if (r->n_tuned == 0)
        return tt_fail(r->err, "log %s has no successful record for any of the %d subgraph tasks of %s", o->log,
                       r->sg.n_tasks, o->network);
    return TT_OK;
}

/* The template of task p's workload for its record best (NULL: none); a GPU target without a
 * template for the op (batch_matmul) runs the op's CPU template on the host, in C. */
static Status task_template(RunState *r, TaskPlan *p, const Workload *wl, const Record *best) {
    p->tmpl = Template_forRecord(wl, r->family, best ? best->template_name : NULL, r->err);
    if (!p->tmpl && !r->is_cpu) {
        char e2[TT_ERRLEN];
        const Target *ht;
        p->tmpl = Template_find(wl, FAMILY_CPU, e2);
        if (p->tmpl && !r->host_ok && app_resolve_device("cpu", NULL, false, &ht, &r->hostdev, e2) != TT_OK)
            p->tmpl = NULL;
        if (p->tmpl) r->host_ok = p->host = true;
    }
    return p->tmpl ? TT_OK : TT_ERR;
}

/* Task t's config from its best record, when the record is of the task's template and names a
 * config of its space (and adds to the estimate); false when it does not. */
static bool use_record(RunState *r, int t, const Record *best) {
    TaskPlan *p = &r->tp[t];
    /* a record written before knobs were appended to the space (the parallel split) has fewer
     * choices; its index still names the same config (an appended knob's first value) */
    if (!best || strcmp(best->template_name, p->tmpl->name) != 0 ||
        !(best->n_choice == p->space.n_knobs || (best->n_choice < p->space.n_knobs && best->index < p->space.total)))
        return false;
    /* a compile-only record (cuda without a device) gives a config but no latency */
    if (best->n_choice == p->space.n_knobs)
        memcpy(p->choice, best->choice, sizeof p->choice);
    else
        Space_decode(&p->space, best->index, p->choice);
    p->latency_s = best->n_costs > 0 ? Record_cost(best) : 0;
    p->pack_s = best->pack_s;
    p->tuned = true;
    r->n_tuned++;
    if (best->n_costs > 0) {
        double w = r->gt.tasks[t].weight;
        r->n_timed++;
        r->est_kernel += w * p->latency_s;
        r->est_with_pack += w * (p->latency_s + (best->pack_s > 0 ? best->pack_s : 0));
    }
    return true;
}

/* Template task t's plan: its ID, template, space, prefix and config (the log's best, else the
 * template's default, with the reason why), and its kernel's blocked layouts. */
static Status plan_task(RunState *r, int t, int *planned) {
    TaskPlan *p = &r->tp[t];
    const Workload *wl = &r->gt.tasks[t].wl;
    char key[WORKLOAD_KEY_LEN];
    Workload_key(wl, key, sizeof key);
    /* a workload tuned under two templates (direct and Winograd) runs the faster */
    const HistoryTask *ht = History_find(&r->h, key);
    const Record *best = History_bestOfKey(&r->h, key);
    for (int i = 0; ht && !best && i < ht->n_records; i++)
        if (ht->records[i].error_no == 0) best = &ht->records[i]; /* compile-only: built, never timed */
    const Template *alts[PLAN_MAX_ALTERNATIVES];
    int n_alt = Plan_alternatives(wl, r->family, alts, PLAN_MAX_ALTERNATIVES);
    p->id = task_id(&r->h, key, best, *planned);
    *planned += n_alt > 1 ? n_alt : 1;
    if (task_template(r, p, wl, best) != TT_OK) return TT_ERR;
    const DeviceInfo *pdev = p->host ? &r->hostdev : &r->dev;
    if (p->tmpl->define_space(wl, pdev, &p->space, r->err) != TT_OK) return TT_ERR;
    snprintf(p->prefix, sizeof p->prefix, "tt_k%d", t);
    snprintf(p->ext, sizeof p->ext, "c");
    r->prefixes[t] = p->prefix;
    if (!use_record(r, t, best)) {
        if (Export_defaultChoice(p->tmpl, wl, &p->space, pdev, p->choice, r->err) != TT_OK) return TT_ERR;
        snprintf(p->why, sizeof p->why, "%s",
                 !ht                          ? "no record"
                 : best && best->n_costs == 0 ? "no timed record"
                                              : "no usable successful record");
    }
    BlockedLayout bin, bout;
    r->masks[t] = r->is_cpu && p->tmpl->blocked ? p->tmpl->blocked(wl, &p->space, p->choice, &r->dev, &bin, &bout) : 0;
    p->blocked = r->masks[t] != 0;
    return TT_OK;
}

/* An error when no task has a record in the log; else a warning per task that runs its
 * template's default config. */
static Status warn_defaults(RunState *r) {
    const RunOptions *o = r->o;
    char key[WORKLOAD_KEY_LEN];
    if (r->gt.n_tasks > 0 && r->n_tuned == 0) {
        Workload_key(&r->gt.tasks[0].wl, key, sizeof key);
        if (o->task) return tt_fail(r->err, "log %s has no successful record for the task %s", o->log, key);
        return tt_fail(r->err, "log %s has no successful record for any of the %d tasks of %s (task 0: %s)", o->log,
                       r->gt.n_tasks, o->network, key);
    }
    for (int t = 0; t < r->gt.n_tasks; t++) {
        const TaskPlan *p = &r->tp[t];
        if (p->tuned) continue;
        Workload_key(&r->gt.tasks[t].wl, key, sizeof key);
        if (p->host) {
            fprintf(
                stderr,
                "tunetop run: warning: task %d (%s) has no %s template: it runs on the host with %s's default config\n",
                p->id, key, o->target, p->tmpl->name);
            continue;
        }
        fprintf(stderr, "tunetop run: warning: task %d (%s) has %s in %s: using %s's default config\n", p->id, key,
                p->why, o->log, p->tmpl->name);
    }
    return TT_OK;
}

/* Op i's workload with the op's whole epilogue (bias, residual, ReLU) when the target is the cpu
 * and the template takes that variant with task p's space and config; else its task's workload. */
static Workload fused_workload(RunState *r, int i, const TaskPlan *p) {
    const Graph *g = &r->g;
    const GraphTasks *gt = &r->gt;
    Workload w = gt->tasks[gt->task[i]].wl;
    if (!r->is_cpu) return w;
    Workload v = w;
    v.bias = gt->epi_bias[i] >= 0;
    v.residual = gt->epi_add[i] >= 0;
    v.relu = gt->epi_relu[i] >= 0 && g->ops[gt->epi_relu[i]].kind == GOP_RELU;
    v.relu6 = gt->epi_relu[i] >= 0 && g->ops[gt->epi_relu[i]].kind == GOP_CLIP;
    char why[160];
    char e2[TT_ERRLEN];
    Space vs;
    Space_init(&vs);
    if ((v.bias != w.bias || v.residual != w.residual || v.relu != w.relu || v.relu6 != w.relu6) &&
        p->tmpl->applies(&v) && p->tmpl->define_space(&v, &r->dev, &vs, e2) == TT_OK && same_space(&vs, &p->space) &&
        (!p->tmpl->precheck || p->tmpl->precheck(&v, &vs, p->choice, &r->dev, why, sizeof why)))
        w = v;
    Space_done(&vs);
    return w;
}

/* The kernel of task t for workload w: the one planned already, else a new one; -1 on error. */
static int kernel_for(RunState *r, int t, const Workload *w) {
    const TaskPlan *p = &r->tp[t];
    KernelPlan *kp = r->kp;
    for (int k = 0; k < r->n_kp; k++)
        if (kp[k].task == t && kp[k].wl.bias == w->bias && kp[k].wl.residual == w->residual &&
            kp[k].wl.relu == w->relu && kp[k].wl.relu6 == w->relu6)
            return k;
    int k = r->n_kp++;
    KernelPlan *q = &kp[k];
    q->task = t;
    q->host = p->host;
    q->wl = *w;
    Space_init(&q->space);
    if (p->tmpl->define_space(w, p->host ? &r->hostdev : &r->dev, &q->space, r->err) != TT_OK) return -1;
    q->mask = r->is_cpu && p->tmpl->blocked ? p->tmpl->blocked(w, &q->space, p->choice, &r->dev, &q->in, &q->out) : 0;
    snprintf(q->prefix, sizeof q->prefix, "tt_k%d", k);
    snprintf(q->ext, sizeof q->ext, "c");
    return k;
}

/* The kernels: per tunable op, its task's config for the op's whole epilogue when the template
 * allows; then one prefix per kernel. */
static Status plan_kernels(RunState *r) {
    r->kp = calloc((size_t)r->g.n_ops + 1, sizeof *r->kp);
    r->opk = calloc((size_t)r->g.n_ops + 1, sizeof *r->opk);
    if (!r->kp || !r->opk) abort();
    for (int i = 0; i < r->g.n_ops; i++) {
        int t = r->gt.task[i];
        if (t < 0) continue;
        Workload w = fused_workload(r, i, &r->tp[t]);
        int k = kernel_for(r, t, &w);
        if (k < 0) return TT_ERR;
        const KernelPlan *q = &r->kp[k];
        r->opk[i] = (NetOpKernel){k, q->mask, q->in, q->out, w.bias, w.residual, w.relu, w.relu6};
    }
    free(r->prefixes);
    r->prefixes = calloc((size_t)r->n_kp + 1, sizeof *r->prefixes);
    if (!r->prefixes) abort();
    for (int k = 0; k < r->n_kp; k++)
        r->prefixes[k] = r->kp[k].prefix;
    return TT_OK;
}

/* The template tasks' configs, the warnings for the defaults, and the program's kernels. */
static Status plan_template_run(RunState *r) {
    int planned = 0; /* the ID tune gives the next workload's first task */
    for (int t = 0; t < r->gt.n_tasks; t++)
        if (plan_task(r, t, &planned) != TT_OK) return TT_ERR;
    if (warn_defaults(r) != TT_OK) return TT_ERR;
    return plan_kernels(r);
}

/* ---- writing the program ---- */

/* The program's directory: --keep DIR (created), else a new temporary directory. */
static Status make_dir(RunState *r) {
    const RunOptions *o = r->o;
    if (o->keep) {
        if (mkdir(o->keep, 0755) != 0)
            return tt_fail(r->err, "--keep %s: %s", o->keep,
                           errno == EEXIST ? "exists (give a new directory)" : strerror(errno));
        snprintf(r->dir, sizeof r->dir, "%s", o->keep);
        return TT_OK;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(r->dir, sizeof r->dir, "%s/tunetop-run-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(r->dir)) {
        snprintf(r->err, sizeof r->err, "cannot create a temporary directory in %s: %s", tmp && tmp[0] ? tmp : "/tmp",
                 strerror(errno));
        r->dir[0] = 0;
        return TT_ERR;
    }
    return TT_OK;
}

/* Exports kernel q with its task's config into the program's directory (q->ext "cu" when a file is CUDA). */
static Status export_kernel(RunState *r, KernelPlan *q) {
    const TaskPlan *p = &r->tp[q->task];
    ExportRequest req;
    memset(&req, 0, sizeof req);
    req.wl = &q->wl;
    req.tmpl = p->tmpl;
    req.space = &q->space;
    req.choice = p->choice;
    req.dev = q->host ? &r->hostdev : &r->dev;
    req.dialect = q->host ? DIALECT_C : r->dialect;
    req.prefix = q->prefix;
    req.meta.latency_s = p->tuned ? p->latency_s : 0;
    req.meta.pack_s = p->tuned ? p->pack_s : -1;
    req.meta.log_path = r->o->log;
    req.meta.note = p->tuned ? NULL : "no successful record in the log: the template's default config";
    ExportKernel k;
    memset(&k, 0, sizeof k);
    if (Export_kernel(&req, &k, r->err) != TT_OK) return TT_ERR;
    Status st = TT_OK;
    for (int f = 0; f < k.n_files && st == TT_OK; f++) {
        size_t len = strlen(k.files[f].name);
        if (len > 3 && strcmp(k.files[f].name + len - 3, ".cu") == 0) snprintf(q->ext, sizeof q->ext, "cu");
        st = write_file(r->dir, k.files[f].name, k.files[f].text, strlen(k.files[f].text), r->err);
    }
    ExportKernel_done(&k);
    return st;
}

/* The program's sources in its directory: the kernels, main.c (the plan as C) and the runtime. */
static Status write_program(RunState *r) {
    const char *const *prefixes = (const char *const *)r->prefixes;
    if (r->sg_mode) {
        for (int k = 0; k < r->n_kp; k++) {
            char name[EXPORT_PREFIX_LEN + 4];
            snprintf(name, sizeof name, "%s.c", r->kp[k].prefix);
            if (write_file(r->dir, name, r->sg_sources[k], strlen(r->sg_sources[k]), r->err) != TT_OK) return TT_ERR;
        }
        NetProg_writeSubgraphs(&r->g, &r->sg, prefixes, &r->sb);
    } else {
        for (int k = 0; k < r->n_kp; k++)
            if (export_kernel(r, &r->kp[k]) != TT_OK) return TT_ERR;
        if (NetPlan_make(&r->g, &r->gt, r->opk, r->o->no_chain, &r->plan, r->err) != TT_OK) return TT_ERR;
        relabel(&r->plan, r->tp, r->gt.n_tasks);
        NetProg_write(&r->plan, prefixes, r->n_kp, &r->sb);
    }
    if (write_file(r->dir, "main.c", r->sb.data, r->sb.len, r->err) != TT_OK) return TT_ERR;
    if (write_file(r->dir, "netrt.h", NetProg_runtimeHeader(), strlen(NetProg_runtimeHeader()), r->err) != TT_OK ||
        write_file(r->dir, "netrt.c", NetProg_runtimeSource(), strlen(NetProg_runtimeSource()), r->err) != TT_OK)
        return TT_ERR;
    return TT_OK;
}

/* The seeded parameters and inputs, written to data.bin (with --keep, the graph as graph.json too). */
static Status write_data(RunState *r) {
    const Graph *g = &r->g;
    if (GraphData_make(g, r->o->seed, &r->params, &r->input, r->err) != TT_OK) return TT_ERR;
    if (r->o->keep) {
        /* the graph for other tools (the network bench's ONNX export reads it with data.bin) */
        StrBuf js;
        StrBuf_init(&js);
        Status jst = Graph_toJson(g, &js, r->err);
        if (jst == TT_OK) jst = write_file(r->dir, "graph.json", js.data, js.len, r->err);
        StrBuf_done(&js);
        if (jst != TT_OK) return TT_ERR;
    }
    char path[1100];
    snprintf(path, sizeof path, "%s/data.bin", r->dir);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(r->params, sizeof(float), (size_t)g->n_params, f) == (size_t)g->n_params &&
              fwrite(r->input, sizeof(float), (size_t)Graph_inputFloats(g), f) == (size_t)Graph_inputFloats(g);
    if (f && fclose(f) != 0) ok = false;
    if (!ok) return tt_fail(r->err, "cannot write %.400s (disk full?)", path);
    return TT_OK;
}

/* ---- building the program ---- */

/* The base name of source i of the program: the kernels', then netrt, then main. */
static const char *source_base(const RunState *r, int i) {
    return i < r->n_kp ? r->kp[i].prefix : i == r->n_kp ? "netrt" : "main";
}

/* nvcc is looked up on PATH; the usual install prefix is added when it is not there. */
static void add_cuda_path(void) {
    if (access("/usr/local/cuda/bin/nvcc", X_OK) != 0) return;
    const char *path = getenv("PATH");
    if (!path || !strstr(path, "/usr/local/cuda/bin")) {
        char np[4096];
        snprintf(np, sizeof np, "%s:/usr/local/cuda/bin", path ? path : "/usr/bin:/bin");
        setenv("PATH", np, 1);
    }
}

/* Starts compiling source i (cc, or nvcc for a CUDA kernel) to an object, its output to log_path; the pid or -1. */
static pid_t spawn_compile(const RunState *r, int i, const char *log_path) {
    char src[1200], obj[1200];
    const char *base = source_base(r, i);
    bool cu = i < r->n_kp && strcmp(r->kp[i].ext, "cu") == 0;
    snprintf(src, sizeof src, "%s/%s.%s", r->dir, base, cu ? "cu" : "c");
    snprintf(obj, sizeof obj, "%s/%s.o", r->dir, base);
    char inc[1100], arch[48];
    snprintf(inc, sizeof inc, "-I%s", r->dir);
    snprintf(arch, sizeof arch, "-arch=%s",
             strncmp(r->dev.arch, "sm_", 3) == 0 ? r->dev.arch : r->target->default_arch);
    char *cc_argv[] = {"cc", "-O3", "-march=native", "-fopenmp", "-std=gnu11", "-w", inc, "-c", src, "-o", obj, NULL};
    char *nvcc_argv[] = {"nvcc", "-O3", arch, "-w", inc, "-c", src, "-o", obj, NULL};
    return spawn(cu ? nvcc_argv : cc_argv, log_path, NULL);
}

/* Compiles the sources, two at a time, and computes the reference meanwhile. */
static Status compile_sources(RunState *r, const char *log_path) {
    int n_src = r->n_kp + 2;
    int next = 0, running = 0, bad = 0;
    bool ref_done = false;
    while (next < n_src || running > 0) {
        for (; next < n_src && running < 2; next++) {
            if (spawn_compile(r, next, log_path) < 0)
                bad++;
            else
                running++;
        }
        if (!ref_done) {
            if (Graph_reference(&r->g, r->params, r->input, &r->ref, r->err) != TT_OK) bad++;
            ref_done = true;
            continue;
        }
        int status;
        pid_t p = waitpid(-1, &status, 0);
        if (p < 0 && errno == EINTR) continue;
        if (p < 0) break;
        running--;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) bad++;
    }
    if (!ref_done || !r->ref) {
        if (!r->err[0]) snprintf(r->err, sizeof r->err, "the reference execution failed");
        return TT_ERR;
    }
    if (bad) {
        char line[512];
        first_error(log_path, line, sizeof line);
        snprintf(r->err, sizeof r->err, "building the program failed: %.200s (log: %.200s)", line, log_path);
        if (!r->o->keep)
            snprintf(r->err + strlen(r->err), sizeof r->err - strlen(r->err),
                     "; the directory is removed, --keep DIR keeps it");
        return TT_ERR;
    }
    return TT_OK;
}

/* Links the objects into the program `net` (with OpenCL, or the CUDA runtime). */
static Status link_program(RunState *r, const char *log_path) {
    int n_src = r->n_kp + 2, n_args = 0;
    char **argv = calloc((size_t)(n_src + 16), sizeof *argv);
    if (!argv) abort();
    argv[n_args++] = strdup("cc");
    argv[n_args++] = strdup("-fopenmp");
    argv[n_args++] = strdup("-o");
    char path[1100];
    snprintf(path, sizeof path, "%s/net", r->dir);
    argv[n_args++] = strdup(path);
    for (int i = 0; i < n_src; i++) {
        snprintf(path, sizeof path, "%s/%s.o", r->dir, source_base(r, i));
        argv[n_args++] = strdup(path);
    }
    argv[n_args++] = strdup("-lm");
    if (r->is_ocl) argv[n_args++] = strdup("-lOpenCL");
    if (r->is_cuda) {
        argv[n_args++] = strdup("-L/usr/local/cuda/lib64");
        argv[n_args++] = strdup("-lcudart");
        argv[n_args++] = strdup("-lstdc++");
    }
    pid_t pid = spawn(argv, log_path, NULL);
    int status = pid > 0 ? wait_for(pid, 0) : -1;
    for (int i = 0; i < n_args; i++)
        free(argv[i]);
    free(argv);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char line[512];
        first_error(log_path, line, sizeof line);
        return tt_fail(r->err, "linking the program failed: %.400s", line);
    }
    return TT_OK;
}

/* Builds the program (the reference computed meanwhile) and says so; an error also when there
 * is no device to run it on. */
static Status build_program(RunState *r) {
    const RunOptions *o = r->o;
    double t_build = clock_mono();
    char log_path[1100];
    snprintf(log_path, sizeof log_path, "%s/build.log", r->dir);
    if (r->is_cuda) add_cuda_path();
    if (compile_sources(r, log_path) != TT_OK || link_program(r, log_path) != TT_OK) return TT_ERR;
    printf("%s: %d ops, %d steps, %d %s (%d from %s, %d default), built for %s in %.1f s\n", r->what, r->g.n_ops,
           r->plan.n_steps, r->n_listed, r->sg_mode ? "tasks" : "kernels, one per workload: its fastest task",
           r->n_tuned, o->log, r->n_listed - r->n_tuned, o->target, clock_mono() - t_build);
    fflush(stdout);
    if (!r->dev.present)
        return tt_fail(r->err, "no %s device on this machine: the program was built, not run", o->target);
    return TT_OK;
}

/* ---- running the program ---- */

/* What the program wrote to its log: the timed runs, the time of every step, whether it wrote its
 * output, and its last other line (the error, when it failed). */
typedef struct RunLog {
    double runs[4096];
    int n_runs, n_steps;
    double *step_s;
    bool have_out;
    char last_err[512];
} RunLog;

/* The environment of the program: this one with OMP_NUM_THREADS=the threads (omp holds it) and,
 * unless set, OMP_WAIT_POLICY=passive. The caller frees the array. */
static char **program_env(const RunState *r, char *omp, size_t omp_len) {
    int n_env = 0;
    while (environ[n_env])
        n_env++;
    char **envp = calloc((size_t)n_env + 3, sizeof *envp);
    if (!envp) abort();
    int k = 0;
    bool wait_policy = false;
    for (int i = 0; i < n_env; i++) {
        if (strncmp(environ[i], "OMP_NUM_THREADS=", 16) != 0) envp[k++] = environ[i];
        if (strncmp(environ[i], "OMP_WAIT_POLICY=", 16) == 0) wait_policy = true;
    }
    /* Threads that spin while they wait for each other lose badly when the cores are shared (measured:
     * a MobileNet-v2 program at 2 threads on 2 busy cores, 10.5 s spinning vs 0.18 s passive). */
    if (!wait_policy) envp[k++] = "OMP_WAIT_POLICY=passive";
    int threads = r->o->threads > 0 ? r->o->threads : r->dev.cores > 0 ? r->dev.cores : 1;
    snprintf(omp, omp_len, "OMP_NUM_THREADS=%d", threads);
    envp[k++] = omp;
    return envp;
}

/* Runs the program on data.bin (its output to out.bin, its log to log_path) within the timeout;
 * the wait status, -1 on timeout, -2 when it did not start. */
static int spawn_program(const RunState *r, const char *log_path) {
    const RunOptions *o = r->o;
    char prog[1100], data[1100], outp[1100];
    snprintf(prog, sizeof prog, "%s/net", r->dir);
    snprintf(data, sizeof data, "%s/data.bin", r->dir);
    snprintf(outp, sizeof outp, "%s/out.bin", r->dir);
    char number[16], repeat[16], minms[16], prof[4], threads[16];
    snprintf(number, sizeof number, "%d", o->number);
    snprintf(repeat, sizeof repeat, "%d", o->repeat);
    snprintf(minms, sizeof minms, "%d", o->min_repeat_ms);
    snprintf(prof, sizeof prof, "%d", o->profile ? 1 : 0);
    snprintf(threads, sizeof threads, "%d", o->threads);
    if (r->sg_mode) snprintf(prof, sizeof prof, "1"); /* the per-subgraph table is the summary's */
    char *argv[] = {prog, data, outp, number, repeat, minms, prof, threads, NULL};
    char omp[48];
    char **envp = program_env(r, omp, sizeof omp);
    pid_t pid = spawn(argv, log_path, envp);
    int status = pid > 0 ? wait_for(pid, o->timeout_s) : -2;
    free(envp);
    return status;
}

/* Reads the program's log into rl (rl->step_s has a slot per step). */
static void read_run_log(const RunState *r, const char *log_path, RunLog *rl) {
    FILE *f = fopen(log_path, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        int a, nn;
        double s;
        if (sscanf(line, "TT_RUN %d %lf", &nn, &s) == 2 && rl->n_runs < 4096)
            rl->runs[rl->n_runs++] = s;
        else if (sscanf(line, "TT_STEP %d %lf", &a, &s) == 2 && a >= 0 && a < r->plan.n_steps)
            rl->step_s[a] = s, rl->n_steps++;
        else if (strncmp(line, "TT_OUTPUT", 9) == 0)
            rl->have_out = true;
        else if (line[0] && line[0] != '\n')
            snprintf(rl->last_err, sizeof rl->last_err, "%s", line);
    }
    if (f) fclose(f);
    rl->last_err[strcspn(rl->last_err, "\n")] = 0;
}

/* An error when the program failed (its signal, or its last line) or wrote no output. */
static Status program_status(RunState *r, int status, const RunLog *rl) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && rl->have_out) return TT_OK;
    const char *last = rl->last_err;
    if (WIFSIGNALED(status))
        snprintf(r->err, sizeof r->err, "the program died with signal %d (%s)%s%.300s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), last[0] ? ": " : "", last);
    else
        snprintf(r->err, sizeof r->err, "the program failed%s%.400s", last[0] ? ": " : "", last[0] ? last : "");
    return TT_ERR;
}

/* Reads the program's output (out.bin) and checks it against the reference. */
static Status check_output(RunState *r) {
    const Graph *g = &r->g;
    char outp[1100];
    snprintf(outp, sizeof outp, "%s/out.bin", r->dir);
    int64_t n_out = GraphTensor_count(&g->tensors[g->output]);
    r->got = malloc((size_t)n_out * sizeof(float));
    FILE *f = fopen(outp, "rb");
    bool ok = f && r->got && fread(r->got, sizeof(float), (size_t)n_out, f) == (size_t)n_out;
    if (f) fclose(f);
    if (!ok) return tt_fail(r->err, "the program's output %.400s is missing or short", outp);
    char msg[512];
    if (!Graph_compare(g, r->ref, r->got, msg, sizeof msg))
        return tt_fail(r->err, "%.80s: the output does not match the reference: %.360s", r->what, msg);
    double mx = 0;
    for (int64_t i = 0; i < n_out; i++)
        mx = fabs(r->ref[i]) > mx ? fabs(r->ref[i]) : mx;
    printf("output matches the reference: %lld elements within %g * max|ref| (%.3g) + %g * |ref| (seed %llu)\n",
           (long long)n_out, GRAPH_ATOL, mx, GRAPH_RTOL, (unsigned long long)r->o->seed);
    return TT_OK;
}

/* Prints the summary of the timed runs, the tuner's estimate beside it, and the profile. */
static void report_times(const RunState *r, const RunLog *rl) {
    const RunOptions *o = r->o;
    int n_runs = rl->n_runs;
    double ms[4096], mean = 0, mx_ms = 0, mn_ms = INFINITY, sd = 0;
    for (int i = 0; i < n_runs; i++) {
        ms[i] = rl->runs[i] * 1e3;
        mean += ms[i];
        mx_ms = ms[i] > mx_ms ? ms[i] : mx_ms;
        mn_ms = ms[i] < mn_ms ? ms[i] : mn_ms;
    }
    mean /= n_runs ? n_runs : 1;
    for (int i = 0; i < n_runs; i++)
        sd += (ms[i] - mean) * (ms[i] - mean);
    sd = n_runs ? sqrt(sd / n_runs) : 0;
    double med = n_runs ? median(ms, n_runs) : 0;
    int threads = o->threads > 0 ? o->threads : r->dev.cores;
    printf("Execution time summary (%d repeats, %d thread%s):\n", n_runs, threads, threads == 1 ? "" : "s");
    printf(" mean (ms)   median (ms)    max (ms)     min (ms)     std (ms)  \n");
    printf("%10.4f   %10.4f   %10.4f   %10.4f   %10.4f\n", mean, med, mx_ms, mn_ms, sd);
    double ratio = r->est_kernel > 0 ? med / (r->est_kernel * 1e3) : 0;
    if (r->n_timed > 0 && r->sg_mode)
        printf("Tuner's estimate: %.4f ms (weight x best latency over %d of %d subgraph tasks; every op is in a "
               "subgraph); measured median / estimate = %.2f\n",
               r->est_kernel * 1e3, r->n_timed, r->n_listed, ratio);
    else if (r->n_timed > 0)
        printf("Tuner's estimate: %.4f ms kernels only, %.4f ms with their layout transforms (weight x best "
               "latency over %d of %d tasks; untuned ops not included); measured median / estimate = %.2f\n",
               r->est_kernel * 1e3, r->est_with_pack * 1e3, r->n_timed, r->gt.n_tasks, ratio);
    if ((o->profile || r->sg_mode) && rl->n_steps == r->plan.n_steps) print_profile(&r->plan, rl->step_s, r->step_est);
}

/* Runs the program, checks its output against the reference and prints the times. */
static Status run_program(RunState *r) {
    char log_path[1100];
    snprintf(log_path, sizeof log_path, "%s/run.log", r->dir);
    int status = spawn_program(r, log_path);
    if (status == -1)
        return tt_fail(r->err, "the program ran longer than %d s and was stopped (--timeout)", r->o->timeout_s);
    RunLog *rl = calloc(1, sizeof *rl);
    if (!rl) abort();
    rl->step_s = calloc((size_t)r->plan.n_steps + 1, sizeof *rl->step_s);
    read_run_log(r, log_path, rl);
    Status st = program_status(r, status, rl);
    if (st == TT_OK) st = check_output(r);
    if (st == TT_OK) report_times(r, rl);
    free(rl->step_s);
    free(rl);
    return st;
}

/* Removes the program's directory (or says where --keep kept it) and frees the run's state. */
static void run_done(RunState *r, int rc) {
    if (r->dir[0] && !r->o->keep) remove_tree(r->dir);
    if (r->dir[0] && r->o->keep && rc == 0)
        printf("program kept in %s (main.c, kernels, netrt.c, net; graph.json, data.bin = parameters then inputs, "
               "float32; out.bin)\n",
               r->dir);
    StrBuf_done(&r->sb);
    free(r->params);
    free(r->input);
    free(r->ref);
    free(r->got);
    NetPlan_done(&r->plan);
    for (int t = 0; t < r->gt.n_tasks; t++)
        Space_done(&r->tp[t].space);
    for (int k = 0; r->kp && k < r->n_kp; k++)
        Space_done(&r->kp[k].space);
    free(r->kp);
    free(r->opk);
    free(r->tp);
    free(r->prefixes);
    free(r->masks);
    for (int t = 0; r->sg_sources && t < r->sg.n_tasks; t++)
        free(r->sg_sources[t]);
    free(r->sg_sources);
    free(r->step_est);
    Subgraphs_done(&r->sg);
    History_done(&r->h);
    GraphTasks_done(&r->gt);
    Graph_done(&r->g);
}

/* `tunetop run` of a network or one operator: load, plan, write, build, run, check, report. */
static int run(const RunOptions *o) {
    RunState *r = calloc(1, sizeof *r);
    if (!r) abort();
    r->o = o;
    int rc = run_graph(r);
    if (rc == 0) {
        rc = run_target(r);
        if (rc == 0 && (rc = run_log(r)) != 0) History_done(&r->h);
        if (rc != 0) GraphTasks_done(&r->gt), Graph_done(&r->g);
    }
    if (rc != 0) {
        free(r);
        return rc;
    }
    run_start(r);
    Status st = r->sg_mode ? plan_subgraph_run(r) : plan_template_run(r);
    if (st == TT_OK) st = make_dir(r);
    if (st == TT_OK) st = write_program(r);
    if (st == TT_OK) st = write_data(r);
    if (st == TT_OK) st = build_program(r);
    if (st == TT_OK) st = run_program(r);
    if (st != TT_OK) fprintf(stderr, "tunetop run: %s\n", r->err);
    rc = st == TT_OK ? 0 : 1;
    run_done(r, rc);
    free(r);
    return rc;
}

static const struct option OWN[] = {{"log", required_argument, 0, 'L'},
                                    {"target", required_argument, 0, 'T'},
                                    {"threads", required_argument, 0, 'j'},
                                    {"number", required_argument, 0, 'N'},
                                    {"repeat", required_argument, 0, 'R'},
                                    {"min-repeat-ms", required_argument, 0, 'M'},
                                    {"profile", no_argument, 0, 'p'},
                                    {"seed", required_argument, 0, 'S'},
                                    {"keep", required_argument, 0, 'k'},
                                    {"timeout", required_argument, 0, 'o'},
                                    {"no-chain", no_argument, 0, 'C'},
                                    {"help", no_argument, 0, 'h'},
                                    {0, 0, 0, 0}};
const CmdOptions RUN_OPTIONS = {"run", OWN,
                                SEL_TASK | SEL_NETWORK | SEL_BATCH_SIZE | SEL_IMAGE_SIZE | SEL_SEQ_LEN | SEL_SUBGRAPHS |
                                    SEL_BATCH_ALIAS | SEL_EXPR | SEL_SET};

/* One of run's own options into o; 1 done, 0 --help, -1 not one of them. */
static int run_option(RunOptions *o, int c, const char *arg, Status *st, char *err) {
    *st = TT_OK;
    switch (c) {
    case 'L':
        o->log = arg;
        break;
    case 'T':
        o->target = arg;
        break;
    case 'j':
        *st = opt_int(arg, "--threads", 1, 1024, &o->threads, err);
        break;
    case 'N':
        *st = opt_int(arg, "--number", 1, 1000000, &o->number, err);
        break;
    case 'R':
        *st = opt_int(arg, "--repeat", 1, 4096, &o->repeat, err);
        break;
    case 'M':
        *st = opt_int(arg, "--min-repeat-ms", 0, 3600000, &o->min_repeat_ms, err);
        break;
    case 'p':
        o->profile = true;
        break;
    case 'C':
        o->no_chain = true;
        break;
    case 'S':
        *st = opt_u64(arg, "--seed", &o->seed, err);
        break;
    case 'k':
        o->keep = arg;
        break;
    case 'o':
        *st = opt_int(arg, "--timeout", 1, 86400, &o->timeout_s, err);
        break;
    case 'h':
        return 0;
    default:
        return -1;
    }
    return 1;
}

/* The selection's and the options' checks; NULL when they hold, else the usage error. */
static const char *run_check(const RunOptions *o, const TaskSelect *sel) {
    if (sel->n_sets && !sel->n_exprs) return "--set needs --expr FILE.te";
    if (sel->n_exprs > 1) return "one --expr FILE.te at a time";
    if (sel->n_exprs && (o->network || o->task || o->subgraphs || o->profile || o->no_chain || o->keep))
        return "--expr runs one expression; --network, --task, --subgraphs, --profile, --no-chain and --keep do not "
               "apply";
    if (sel->n_exprs) return NULL;
    if (sel->n_specs > 1) return "one --task SPEC at a time";
    if (!o->network == !o->task) return "give --network NAME or --task SPEC (one of them)";
    if (!o->log) return "give --log LOG (the log with the tuned configs)";
    if (o->subgraphs && (o->task || o->no_chain))
        return "--subgraphs runs a --network as its subgraphs; --task and --no-chain do not apply";
    if (o->task && (sel->given & SEL_SHAPE))
        return "--batch-size, --image-size and --seq-len are for --network; a --task SPEC has its shape";
    return NULL;
}

int cmd_run(int argc, char **argv) {
    if (app_names_model(argc, argv)) return cmd_run_model(argc, argv);
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&RUN_OPTIONS, longopts, CLI_MAX_OPTS);
    RunOptions o;
    memset(&o, 0, sizeof o);
    o.target = Target_default()->name;
    o.number = 1;
    o.repeat = 10;
    o.seed = 1;
    o.timeout_s = 600;
    TaskSelect sel;
    TaskSelect_init(&sel);
    char err[TT_ERRLEN] = "";
    optind = 1;
    opterr = 0;
    int c, rc = -1;
    while (rc < 0 && (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        Status st = TT_OK;
        if (!TaskSelect_parse(&sel, OPT_VAL(c), optarg, &st, err)) {
            int r = run_option(&o, c, optarg, &st, err);
            if (r == 0) usage(stdout), rc = 0;
            if (r < 0) Cli_badOption("run", c, argv, err), st = TT_ERR;
        }
        if (st != TT_OK) rc = usage_error("%s", err);
    }
    if (rc < 0 && optind < argc) rc = usage_error("unexpected argument '%s' (see tunetop run --help)", argv[optind]);
    o.network = sel.network;
    o.task = sel.n_specs ? sel.specs[0] : NULL;
    o.nopt = sel.nopt;
    o.subgraphs = sel.subgraphs;
    const char *bad = rc < 0 ? run_check(&o, &sel) : NULL;
    if (bad) rc = usage_error("%s", bad);
    if (rc < 0 && !Target_find(o.target)) {
        snprintf(err, sizeof err, "unknown target '%s' (choose from: %s)", o.target, Target_names());
        rc = usage_error("%s", err);
    }
    if (rc < 0 && sel.n_exprs) {
        ExprRun er = {.path = sel.exprs[0],
                      .sets = sel.sets,
                      .n_sets = sel.n_sets,
                      .log = o.log,
                      .target = o.target,
                      .number = o.number,
                      .repeat = o.repeat,
                      .min_repeat_ms = o.min_repeat_ms,
                      .threads = o.threads,
                      .timeout_s = o.timeout_s};
        rc = app_run_expr(&er);
    }
    if (rc < 0) rc = run(&o);
    TaskSelect_done(&sel);
    return rc;
}
