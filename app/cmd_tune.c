/* app/cmd_tune.c: `tunetop tune`. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "app/commands.h"
#include "app/device.h"
#include "app/expr.h"
#include "app/opts.h"
#include "kernels/targets/gpu_build.h"
#include "kernels/templates/te/te_task.h"
#include "records/log.h"
#include "tuner/cluster/cluster.h"
#include "tuner/engine.h"
#include "tuner/net/model_load.h"
#include "tuner/net/network.h"
#include "tuner/net/subgraph.h"
#include "tuner/plan.h"
#include "tuner/scheduler.h"
#include "tuner/search/strategy.h"
#include "ui/headless.h"
#include "ui/ui.h"

static volatile sig_atomic_t g_stop;

/* the signal that asked to stop, 0 = none */
static void on_signal(int sig) { g_stop = sig; }

/* Under an MPI launcher (tuner/cluster.h): this process's rank, the world's
 * size and, on rank 0 of a world of several, the cluster host. */
typedef struct TuneMpi {
    int rank, size;
    double rank_timeout;
    int local_measure; /* --local-measure: 1 yes, 0 no, -1 the default rule (local_measure_default) */
    int devices[64];   /* --devices LIST */
    int n_devices;
    ClusterHost *host;
} TuneMpi;

static int g_mpi_size = 1; /* for the resume hint */

/* Under mpirun, rank 0's stdin is a pipe from mpirun and its process group is
 * not the terminal's foreground group: for the UI it takes the terminal it
 * was launched from (its controlling terminal), as a foreground job would,
 * and gives it back afterwards. Returns the terminal's descriptor, or -1 when
 * there is none (then the session runs headless). */
static int take_terminal(pid_t *old_pgrp) {
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0) return -1;
    signal(SIGTTOU, SIG_IGN); /* a background group may take the terminal only so */
    *old_pgrp = tcgetpgrp(fd);
    if (*old_pgrp < 0 || tcsetpgrp(fd, getpgrp()) != 0) {
        close(fd);
        return -1;
    }
    dup2(fd, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);
    return fd;
}

static void give_terminal(int fd, pid_t old_pgrp) {
    if (fd < 0) return;
    fflush(stdout);
    tcsetpgrp(fd, old_pgrp);
    close(fd);
}

/* The help's first half: what to tune, and where. */
static void usage_what(FILE *out) {
    NetworkOptions nd;
    NetworkOptions_defaults(&nd);
    app_help(
        out,
        "usage: tunetop tune (--task SPEC ... | --network NAME | --model FILE.onnx | --expr FILE.te ...) [options]\n"
        "\n"
        "Tunes each task's kernel on the target: a strategy proposes configs, builder threads compile them,\n"
        "an isolated worker process measures them, and every measurement is appended to the record log.\n"
        "Opens the terminal UI when stdout is a terminal; prints progress lines otherwise (or --headless).\n"
        "\n"
        "what to tune:\n"
        "  --task SPEC           an operator, e.g. conv2d:n=1,ci=256,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1\n"
        "                        or dense:m=64,n=1024,k=1024 (repeatable; see `tunetop space --help`)\n"
        "  --network NAME        every task of a built-in network (%s)\n"
        "  --model FILE.onnx     every Conv, Gemm and MatMul of an ONNX model that a template fits (see\n"
        "                        tunetop tasks --model; `run --model` builds the whole model from the log)\n"
        "  --input-shape NAME=DIMS  fixes a symbolic input dimension of --model, e.g. input=1x3x224x224\n"
        "  --subgraphs           with --network: tune the network as subgraphs instead (each anchor op with\n"
        "                        its elementwise consumers, the other ops on their own; see tunetop tasks\n"
        "                        --subgraphs), as tensor expressions searched by evolution (cpu target)\n"
        "  --expr FILE.te        a tensor expression (repeatable; see examples/te and tunetop sketches). On\n"
        "                        cpu it is searched by evolution over its sketches (--tuner random or grid:\n"
        "                        by the plain sampler's numbered random schedules instead); on opencl and\n"
        "                        cuda by the plain sampler unless --tuner evolution (cuda: one-stage\n"
        "                        expressions only, one kernel). Every candidate is checked against the\n"
        "                        interpreter\n"
        "  --set NAME=VALUE      overrides `let NAME` of every --expr file (repeatable)\n"
        "  --batch-size B --layout NCHW|NHWC --image-size S --seq-len L --ops conv2d,dense,...\n"
        "                        network options: the network's batch size, layout, image side, sequence\n"
        "                        length, the ops to tune (defaults %d, %s, the network's (%s), %d, all ops)\n"
        "where:\n"
        "  --target T            %s (default %s)\n"
        "  --arch ARCH           limits to check against without a device (default %s)\n"
        "  --compile-only        build and record resources, do not run (checks a space offline)\n"
        "  --template NAME       the tasks it applies to use only this template; by default a workload that\n"
        "                        several templates handle is a group of alternatives tuned side by side:\n"
        "                        conv2d 3x3 stride 1 on the cpu gets a direct task and a Winograd one\n"
        "                        (conv2d_winograd.cpu, F(m x m, 3x3), labelled \"wino\"), counted once in\n"
        "                        the estimate with the faster best, and `run` uses the faster\n",
        Network_names(), nd.batch, Layout_name(nd.layout), Network_imageSizes(), nd.seq_len, Target_names(),
        Target_default()->name, app_arch_defaults());
}

/* The help's second half: how (search, measurement), output, and the MPI options. */
static void usage_how(FILE *out) {
    EngineConfig d;
    EngineConfig_defaults(&d);
    app_help(out,
             "how:\n"
             "  --trials N            total measurements over all tasks, restored ones included (default %d)\n"
             "  --tuner NAME          %s (default %s; --expr: evolution unless random or grid)\n"
             "  --population N --generations N --mutation P --eps-greedy P\n"
             "                        evolution (--expr): candidates per generation (2..%d, default %d), generations\n"
             "                        per round (0..%d, default %d), share of children that are mutations rather\n"
             "                        than crossovers (default %g), share of each round measured at random (default\n"
             "                        %g). Children are ranked by the learned cost model (XGBoost on program\n"
             "                        features) once it is fit on two measured schedules, by what their measured\n"
             "                        ancestor measured before that\n"
             "  --cost-model xgb|none evolution: none ranks children by their measured ancestors only (to compare)\n"
             "  --warm-start LOG      evolution: the cost model learns first from LOG's records of other expressions\n"
             "                        (repeatable): an expression is found as NAME.te beside an --expr file, with\n"
             "                        --set or its own lets, when its key matches\n"
             "  --scheduler NAME      %s (default %s)\n"
             "  --early-stopping N    a task is done after N trials without improvement (default off)\n"
             "  --round-size N        measurements per round (default min(64, trials / tasks)); a task's first\n"
             "                        round is at most trials / (4 x tasks), so the scheduler starts choosing early\n"
             "  --builders N          parallel compiles (default: cores)\n"
             "  --threads N           threads inside a CPU kernel (default: all cores)\n"
             "  --number N --repeat N --min-repeat-ms MS\n"
             "                        timing: runs per repeat, repeats, minimum repeat length (default %d, %d, %d);\n"
             "                        a candidate's latency is the median of its repeats\n"
             "  --timeout S           run timeout per candidate in seconds (default %g)\n"
             "  --build-timeout S     compile timeout per candidate in seconds (default %g)\n"
             "  --seed S              random seed (default %llu)\n"
             "  --roof-stop F         the gradient scheduler gives no more rounds to a task whose best reaches\n"
             "                        F of its roofline (default %g; 0 = off; a raised priority overrides it)\n"
             "  --no-roof             no roofline: do not load or measure the machine's figures\n"
             "  --transfer            xgb also learns from the log's records of earlier sessions' tasks of the\n"
             "                        same template (this session's tasks always learn from each other)\n"
             "output:\n"
             "  --log FILE            record log (default tunetop.log); an existing log is resumed: its configs\n"
             "                        are not measured again and its bests and trial counts are restored\n"
             "  --headless            never open the UI\n"
             "  --table-every S       headless: print the scheduler table every S seconds (default 30)\n"
             "  --no-color            monochrome UI (NO_COLOR is honoured too)\n"
             "under mpirun / srun (rank 0 is the session, ranks >= 1 build and measure; see docs/mpi.md):\n"
             "  --rank-timeout S      a measure server not heard from for S seconds is lost and its candidates\n"
             "                        go to the other ranks (default 20)\n"
             "  --local-measure yes|no\n"
             "                        rank 0 builds and measures too (default: yes when it has a device of the\n"
             "                        target that no other rank of its node measures on; cpu: when it is alone\n"
             "                        on its node)\n"
             "  --devices LIST        cuda, opencl: the devices of a node its ranks use, e.g. 0,1: a rank takes\n"
             "                        LIST[node-local rank mod its length] (default: node-local rank mod the\n"
             "                        node's device count); cpu: one device, --threads per rank\n"
             "\n"
             "Latency and GFLOPS (table, curves, progress lines) are of the kernel alone; the layout transforms of\n"
             "blocked CPU templates are timed apart (pack_s): `tunetop best` shows both figures. A Winograd task's\n"
             "GFLOPS and roof are effective GFLOPS (the direct convolution's FLOPs over the time; marked \"eff\"),\n"
             "which may exceed the machine's peak; its roof is computed from its own arithmetic.\n"
             "\n" EXIT_STATUS_HELP,
             d.trials, Strategy_names(), d.strategy, EVO_POPULATION_MAX, d.evolution.population, EVO_GENERATIONS_MAX,
             d.evolution.generations, d.evolution.mutation, d.evolution.eps, TaskScheduler_names(), d.scheduler,
             d.measure.number, d.measure.repeat, d.measure.min_repeat_ms, d.measure.run_timeout_s,
             d.measure.build_timeout_s, (unsigned long long)d.seed, d.roof_stop);
}

/* Names and defaults come from the registries and the defaults functions. */
static void usage(FILE *out) {
    usage_what(out);
    usage_how(out);
}

/* The command line, quoted for a shell, to tell the user how to resume. */
static void print_resume_hint(int argc, char **argv) {
    if (g_mpi_size > 1)
        fprintf(stderr, "resume with: mpirun -np %d tunetop", g_mpi_size);
    else
        fprintf(stderr, "resume with: tunetop");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool plain = a[0] != '\0';
        for (const char *p = a; *p; p++)
            if (!(isalnum((unsigned char)*p) || strchr("-_=.,:/+", *p))) plain = false;
        if (plain)
            fprintf(stderr, " %s", a);
        else {
            fputs(" '", stderr);
            for (const char *p = a; *p; p++) {
                if (*p == '\'')
                    fputs("'\\''", stderr);
                else
                    fputc(*p, stderr);
            }
            fputc('\'', stderr);
        }
    }
    fputc('\n', stderr);
}

enum {
    O_TARGET = 256,
    O_ARCH,
    O_COMPILE_ONLY,
    O_TRIALS,
    O_TUNER,
    O_SCHED,
    O_EARLY,
    O_ROUND,
    O_BUILDERS,
    O_THREADS,
    O_NUMBER,
    O_REPEAT,
    O_MINREP,
    O_TIMEOUT,
    O_BTIMEOUT,
    O_SEED,
    O_ROOF_STOP,
    O_NO_ROOF,
    O_TRANSFER,
    O_LOG,
    O_HEADLESS,
    O_TABLE,
    O_NOCOLOR,
    O_HELP,
    O_RANK_TIMEOUT,
    O_TEMPLATE,
    O_LOCAL_MEASURE,
    O_DEVICES,
    O_POPULATION,
    O_GENERATIONS,
    O_MUTATION,
    O_EPS,
    O_COST_MODEL,
    O_WARM_START
};

/* The loaded --expr programs: their workloads point at them until the session ends. */
static TeTask *g_exprs[APP_MAX_SETS];
static int g_n_exprs;
/* The --subgraphs expressions (tuner/net/subgraph.h), as long as the session runs. */
static TeTask **g_subgraphs;
static int g_n_subgraphs;

/* Warm start (--warm-start): the records of other
 * expressions in these logs train the evolution's cost model before the
 * first round. An expression is found by the name its records carry, as
 * NAME.te in the folder of an --expr file, parsed with this session's --set
 * values or with its own lets, and used only when its key is the records'.
 * The session's own expressions are left to the resume. Prints one line. */
#define WARM_MAX 256

/* An expression whose records a warm-start log holds: its name, its key and how many records. */
typedef struct WarmSeen {
    char name[32], te[24];
    long records;
} WarmSeen;

/* The expressions the logs' records name (at most WARM_MAX); their count. */
static int warm_scan(const char *const *logs, int n_logs, WarmSeen *seen) {
    int n_seen = 0;
    char err[TT_ERRLEN];
    for (int i = 0; i < n_logs; i++) {
        LogReader *r;
        LogHeader h;
        if (LogReader_open(logs[i], &r, &h, err) != TT_OK) continue; /* the session says what is wrong with --log */
        Record rec;
        Record_init(&rec);
        while (LogReader_next(r, &rec, err) == LOG_RECORD) {
            const char *name = strstr(rec.task_key, "expr:name="), *te = strstr(rec.task_key, ",te=te-");
            if (name != rec.task_key || !te || !rec.steps) continue;
            name += 10, te += 4;
            size_t ln = strcspn(name, ","), lt = strcspn(te, ",");
            int k = 0;
            while (k < n_seen && !(strlen(seen[k].te) == lt && strncmp(seen[k].te, te, lt) == 0))
                k++;
            if (k == n_seen) {
                if (n_seen == WARM_MAX || ln >= sizeof seen[k].name || lt >= sizeof seen[k].te) continue;
                snprintf(seen[k].name, sizeof seen[k].name, "%.*s", (int)ln, name);
                snprintf(seen[k].te, sizeof seen[k].te, "%.*s", (int)lt, te);
                seen[k].records = 0;
                n_seen++;
            }
            seen[k].records++;
        }
        Record_done(&rec);
        LogReader_close(r);
    }
    return n_seen;
}

/* The expression s names, as NAME.te beside an --expr file (with the --set values, else its own
 * lets) whose key is the records'; NULL when not found or when it is one of the session's own
 * (*own then true). */
static TeTask *warm_find(const WarmSeen *s, const char *const *expr_paths, int n_expr, const TeSet *sets, int n_sets,
                         bool *own) {
    char err[TT_ERRLEN];
    *own = false;
    for (int i = 0; i < g_n_exprs; i++)
        *own |= strcmp(g_exprs[i]->dag.key, s->te) == 0;
    TeTask *t = NULL;
    for (int i = 0; i < n_expr && !*own && !t; i++) {
        const char *slash = strrchr(expr_paths[i], '/');
        char path[1024];
        snprintf(path, sizeof path, "%.*s%s.te", slash ? (int)(slash - expr_paths[i] + 1) : 0, expr_paths[i], s->name);
        for (int with_sets = 1; with_sets >= 0 && !t && access(path, R_OK) == 0; with_sets--) {
            Workload wl;
            if (TeTask_load(path, sets, with_sets ? n_sets : 0, &t, &wl, err) == TT_OK &&
                strcmp(t->dag.key, s->te) != 0) {
                TeTask_delete(t);
                t = NULL;
            }
            if (!n_sets) break;
        }
    }
    return t;
}

/* Warm start: the expressions found train the cost model first; prints one line. */
static void warm_start(const char *const *logs, int n_logs, const char *const *expr_paths, int n_expr,
                       const TeSet *sets, int n_sets) {
    WarmSeen seen[WARM_MAX];
    int n_seen = warm_scan(logs, n_logs, seen);
    char err[TT_ERRLEN];
    TeTask *found[WARM_MAX];
    const TeDag *dags[WARM_MAX];
    int n_found = 0;
    long unknown = 0;
    for (int k = 0; k < n_seen; k++) {
        bool own;
        TeTask *t = warm_find(&seen[k], expr_paths, n_expr, sets, n_sets, &own);
        if (t) {
            found[n_found] = t;
            dags[n_found++] = &t->dag;
        } else if (!own) {
            unknown += seen[k].records;
        }
    }
    int added = 0;
    char why[TT_ERRLEN] = "";
    for (int i = 0; i < n_logs && n_found; i++) {
        int k = 0;
        if (Evolution_warmStart(logs[i], dags, n_found, &k, err) != TT_OK && !why[0])
            snprintf(why, sizeof why, "; %.200s", err);
        added += k;
    }
    for (int i = 0; i < n_found; i++)
        TeTask_delete(found[i]);
    if (n_found || unknown)
        printf("warm start: the cost model learns first from %d schedules of %d other expression%s%s", added, n_found,
               n_found == 1 ? "" : "s", why);
    if (unknown) printf(" (%ld records of expressions not found beside the --expr files are left out)", unknown);
    if (n_found || unknown) printf("\n");
    fflush(stdout);
}

static int tune_main(int argc, char **argv, TuneMpi *mpi);

/* Appends the subgraph tasks of a network (tuner/net/subgraph.h) to wls / weights:
 * each an expression task (te.sketch) with weight = its occurrences. */
static Status subgraph_tasks(const char *network, const NetworkOptions *nopt, Workload **wls, double **weights,
                             int *n_wl, char *err) {
    Graph g;
    if (Network_graph(network, nopt, &g, err) != TT_OK) return TT_ERR;
    Subgraphs sg;
    Status st = Subgraphs_make(&g, &sg, err);
    Graph_done(&g);
    if (st != TT_OK) return TT_ERR;
    *wls = realloc(*wls, (size_t)(*n_wl + sg.n_tasks + 1) * sizeof(Workload));
    *weights = realloc(*weights, (size_t)(*n_wl + sg.n_tasks + 1) * sizeof(double));
    g_subgraphs = realloc(g_subgraphs, (size_t)(g_n_subgraphs + sg.n_tasks + 1) * sizeof *g_subgraphs);
    if (!*wls || !*weights || !g_subgraphs) abort();
    for (int t = 0; t < sg.n_tasks && st == TT_OK; t++) {
        st = TeTask_fromText(sg.tasks[t].te, sg.tasks[t].name, &g_subgraphs[g_n_subgraphs], &(*wls)[*n_wl], err);
        if (st != TT_OK) break;
        g_n_subgraphs++;
        (*weights)[(*n_wl)++] = sg.tasks[t].weight;
    }
    Subgraphs_done(&sg);
    return st;
}

/* --devices 0,1,3 */
static Status parse_devices(const char *s, TuneMpi *mpi, char *err) {
    mpi->n_devices = 0;
    const char *p = s;
    for (;;) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 1023 || (*end && *end != ','))
            return tt_fail(err, "--devices takes device numbers separated by commas (e.g. 0,1), not '%s'", s);
        if (mpi->n_devices == (int)(sizeof mpi->devices / sizeof *mpi->devices))
            return tt_fail(err, "--devices: at most %d devices", mpi->n_devices);
        mpi->devices[mpi->n_devices++] = (int)v;
        if (!*end) return TT_OK;
        p = end + 1;
    }
}

/* The device a rank of a node measures on: --devices LIST[local rank mod its
 * length], else local rank mod the node's device count (-1: not known). */
static int device_of(const Target *t, const TuneMpi *mpi, int local_rank) {
    if (mpi->n_devices) return mpi->devices[local_rank % mpi->n_devices];
    int count = t->device_count ? t->device_count() : 0;
    return count > 0 ? local_rank % count : -1;
}

/* Picks this rank's device (targets with several per node, under MPI or with
 * --devices) before anything opens one; *index receives it (-1: none picked). */
static Status pick_device(const char *target_name, const TuneMpi *mpi, int *index, char *err) {
    *index = -1;
    const Target *t = Target_find(target_name);
    if (!t || !t->select_device) {
        if (t && mpi->n_devices)
            return tt_fail(err,
                           "--devices applies to targets with several devices (cuda, opencl); the %s target "
                           "has one per node: --threads sets each rank's threads",
                           t->name);
        return TT_OK;
    }
    if (mpi->size == 1 && !mpi->n_devices) return TT_OK; /* alone: the target's first device, as always */
    int local_rank, local_size;
    Cluster_node(&local_rank, &local_size);
    int d = device_of(t, mpi, local_rank);
    if (d < 0) return TT_OK; /* none found: the probe says why */
    *index = d;
    return t->select_device(d, err);
}

/* Whether rank 0 measures when --local-measure is not given (it has its
 * device, since it got this far): only when no other rank of its node
 * measures on the same device. On the cpu target every rank of a node shares
 * the node's cores (the servers of rank 0's node already build and time on
 * them; one more would only wait for the node lock), so: when it is alone on
 * its node. */
static bool local_measure_default(const Target *target, const TuneMpi *mpi) {
    int local_rank, local_size;
    Cluster_node(&local_rank, &local_size);
    if (!target->select_device) return local_size == 1;
    int mine = device_of(target, mpi, local_rank);
    for (int k = 0; k < local_size; k++)
        if (k != local_rank && device_of(target, mpi, k) == mine) return false;
    return true;
}

int cmd_tune(int argc, char **argv) {
    TuneMpi mpi = {.rank = 0, .size = 1, .rank_timeout = 20, .local_measure = -1};
    bool launched = Cluster_launched();
    if (launched && Cluster_available()) {
        char err[TT_ERRLEN];
        if (Cluster_init(&argc, &argv, &mpi.rank, &mpi.size, err) != TT_OK) {
            fprintf(stderr, "tunetop tune: %s\n", err);
            return 1;
        }
    } else if (launched) {
        const char *n = getenv("OMPI_COMM_WORLD_SIZE");
        if (!n) n = getenv("PMI_SIZE");
        if (n && atoi(n) > 1) {
            fprintf(stderr,
                    "tunetop tune: started by an MPI launcher with %s ranks, but this tunetop was built without "
                    "MPI (install libopenmpi-dev and rebuild)\n",
                    n);
            return 1;
        }
    }
    g_mpi_size = mpi.size;
    int rc = tune_main(argc, argv, &mpi);
    Evolution_warmEnd();
    for (int i = 0; i < g_n_exprs; i++)
        TeTask_delete(g_exprs[i]);
    g_n_exprs = 0;
    for (int i = 0; i < g_n_subgraphs; i++)
        TeTask_delete(g_subgraphs[i]);
    free(g_subgraphs);
    g_subgraphs = NULL;
    g_n_subgraphs = 0;
    if (mpi.rank == 0 && mpi.size > 1 && !mpi.host) Cluster_quitServers(mpi.size);
    ClusterHost_delete(mpi.host);
    if (launched && Cluster_available()) Cluster_finalize();
    return rc;
}

static const struct option OWN[] = {{"target", required_argument, 0, O_TARGET},
                                    {"arch", required_argument, 0, O_ARCH},
                                    {"compile-only", no_argument, 0, O_COMPILE_ONLY},
                                    {"trials", required_argument, 0, O_TRIALS},
                                    {"tuner", required_argument, 0, O_TUNER},
                                    {"scheduler", required_argument, 0, O_SCHED},
                                    {"early-stopping", required_argument, 0, O_EARLY},
                                    {"round-size", required_argument, 0, O_ROUND},
                                    {"batch", required_argument, 0, O_ROUND | OPT_HIDDEN}, /* the old name */
                                    {"builders", required_argument, 0, O_BUILDERS},
                                    {"threads", required_argument, 0, O_THREADS},
                                    {"number", required_argument, 0, O_NUMBER},
                                    {"repeat", required_argument, 0, O_REPEAT},
                                    {"min-repeat-ms", required_argument, 0, O_MINREP},
                                    {"timeout", required_argument, 0, O_TIMEOUT},
                                    {"build-timeout", required_argument, 0, O_BTIMEOUT},
                                    {"seed", required_argument, 0, O_SEED},
                                    {"transfer", no_argument, 0, O_TRANSFER},
                                    {"log", required_argument, 0, O_LOG},
                                    {"headless", no_argument, 0, O_HEADLESS},
                                    {"table-every", required_argument, 0, O_TABLE},
                                    {"no-color", no_argument, 0, O_NOCOLOR},
                                    {"roof-stop", required_argument, 0, O_ROOF_STOP},
                                    {"no-roof", no_argument, 0, O_NO_ROOF},
                                    {"help", no_argument, 0, O_HELP},
                                    {"rank-timeout", required_argument, 0, O_RANK_TIMEOUT},
                                    {"template", required_argument, 0, O_TEMPLATE},
                                    {"local-measure", required_argument, 0, O_LOCAL_MEASURE},
                                    {"devices", required_argument, 0, O_DEVICES},
                                    {"population", required_argument, 0, O_POPULATION},
                                    {"generations", required_argument, 0, O_GENERATIONS},
                                    {"mutation", required_argument, 0, O_MUTATION},
                                    {"eps-greedy", required_argument, 0, O_EPS},
                                    {"cost-model", required_argument, 0, O_COST_MODEL},
                                    {"warm-start", required_argument, 0, O_WARM_START},
                                    {0, 0, 0, 0}};
const CmdOptions TUNE_OPTIONS = {
    "tune", OWN, SEL_TASK | SEL_NETWORK | SEL_SHAPE | SEL_EXPR | SEL_SET | SEL_SUBGRAPHS | SEL_MODEL | SEL_INPUT_SHAPE};

/* What the command line asks for: tune_parse fills it, tune_check decides the
 * strategy rules, the rest of tune_main turns it into a session. */
typedef struct TuneRequest {
    EngineConfig cfg;
    const char *target_name, *arch, *tmpl_name;
    TaskSelect sel;
    const char *warm_logs[APP_MAX_SETS + 1];
    int n_warm;
    bool tuner_given, headless, color, roof;
    double table_every;
    bool plain_sampler; /* --expr tasks by the plain sampler (te.cpu, te.gpu) */
    bool gpu_sketch;    /* --expr on a GPU target by sketches (te.sketch.gpu) */
} TuneRequest;

/* The options of the search and the measurement (EngineConfig); 1 handled (*st says how), 0 not one of them. */
static int engine_option(TuneRequest *q, int c, const char *arg, Status *st, char *err) {
    *st = TT_OK;
    EngineConfig *cfg = &q->cfg;
    switch (OPT_VAL(c)) {
    case O_TRIALS:
        *st = opt_int(arg, "--trials", 1, 100000000, &cfg->trials, err);
        return 1;
    case O_TUNER:
        cfg->strategy = arg;
        q->tuner_given = true;
        return 1;
    case O_SCHED:
        cfg->scheduler = arg;
        return 1;
    case O_EARLY:
        *st = opt_int(arg, "--early-stopping", 0, 100000000, &cfg->early_stopping, err);
        return 1;
    case O_ROUND:
        *st = opt_int(arg, c & OPT_HIDDEN ? "--batch" : "--round-size", 1, 4096, &cfg->batch, err);
        return 1;
    case O_BUILDERS:
        *st = opt_int(arg, "--builders", 1, 256, &cfg->builders, err);
        return 1;
    case O_THREADS:
        *st = opt_int(arg, "--threads", 0, 1024, &cfg->measure.threads, err);
        return 1;
    case O_NUMBER:
        *st = opt_int(arg, "--number", 1, 1000000, &cfg->measure.number, err);
        return 1;
    case O_REPEAT:
        *st = opt_int(arg, "--repeat", 1, 16, &cfg->measure.repeat, err);
        return 1;
    case O_MINREP:
        *st = opt_int(arg, "--min-repeat-ms", 0, 100000, &cfg->measure.min_repeat_ms, err);
        return 1;
    case O_TIMEOUT:
        *st = opt_double(arg, "--timeout", 0.01, 3600, &cfg->measure.run_timeout_s, err);
        return 1;
    case O_BTIMEOUT:
        *st = opt_double(arg, "--build-timeout", 0.01, 3600, &cfg->measure.build_timeout_s, err);
        return 1;
    case O_SEED:
        *st = opt_u64(arg, "--seed", &cfg->seed, err);
        return 1;
    case O_ROOF_STOP:
        *st = opt_double(arg, "--roof-stop", 0, 10, &cfg->roof_stop, err);
        return 1;
    case O_POPULATION:
        *st = opt_int(arg, "--population", 2, EVO_POPULATION_MAX, &cfg->evolution.population, err);
        return 1;
    case O_GENERATIONS:
        *st = opt_int(arg, "--generations", 0, EVO_GENERATIONS_MAX, &cfg->evolution.generations, err);
        return 1;
    case O_MUTATION:
        *st = opt_double(arg, "--mutation", 0, 1, &cfg->evolution.mutation, err);
        return 1;
    case O_EPS:
        *st = opt_double(arg, "--eps-greedy", 0, 1, &cfg->evolution.eps, err);
        return 1;
    case O_COST_MODEL:
        if (strcmp(arg, "xgb") != 0 && strcmp(arg, "none") != 0)
            *st = tt_fail(err, "--cost-model takes xgb or none, not '%s'", arg);
        else
            cfg->evolution.cost_model = strcmp(arg, "xgb") == 0;
        return 1;
    default:
        return 0;
    }
}

/* The options of where, what is written and how it is shown; 1 handled (*st says how), 0 not one of them. */
static int session_option(TuneRequest *q, TuneMpi *mpi, int c, const char *arg, Status *st, char *err) {
    *st = TT_OK;
    switch (OPT_VAL(c)) {
    case O_TARGET:
        q->target_name = arg;
        break;
    case O_ARCH:
        q->arch = arg;
        break;
    case O_TEMPLATE:
        q->tmpl_name = arg;
        break;
    case O_COMPILE_ONLY:
        q->cfg.measure.compile_only = true;
        break;
    case O_NO_ROOF:
        q->roof = false;
        break;
    case O_TRANSFER:
        q->cfg.transfer = true;
        break;
    case O_LOG:
        q->cfg.log_path = arg;
        break;
    case O_HEADLESS:
        q->headless = true;
        break;
    case O_TABLE:
        *st = opt_double(arg, "--table-every", 0.1, 1e6, &q->table_every, err);
        break;
    case O_NOCOLOR:
        q->color = false;
        break;
    case O_RANK_TIMEOUT:
        *st = opt_double(arg, "--rank-timeout", 0.5, 86400, &mpi->rank_timeout, err);
        break;
    case O_LOCAL_MEASURE:
        if (strcmp(arg, "yes") == 0 || strcmp(arg, "no") == 0)
            mpi->local_measure = strcmp(arg, "yes") == 0;
        else
            *st = tt_fail(err, "--local-measure takes yes or no, not '%s'", arg);
        break;
    case O_DEVICES:
        *st = parse_devices(arg, mpi, err);
        break;
    case O_WARM_START:
        if (q->n_warm == APP_MAX_SETS)
            *st = tt_fail(err, "--warm-start: at most %d logs", APP_MAX_SETS);
        else if (access(arg, R_OK) != 0)
            *st = tt_fail(err, "--warm-start %s: %s", arg, strerror(errno));
        else
            q->warm_logs[q->n_warm++] = arg;
        break;
    default:
        return 0;
    }
    return 1;
}

/* The command line into q: -1 to go on, 0 after --help, 2 a usage error (err). */
static int tune_parse(int argc, char **argv, TuneRequest *q, TuneMpi *mpi, char *err) {
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&TUNE_OPTIONS, longopts, CLI_MAX_OPTS);
    optind = 1;
    opterr = 0;
    int c;
    /* the leading ':' makes a missing value ':' instead of an unknown option */
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        Status ok = TT_OK;
        if (OPT_VAL(c) == O_HELP) {
            usage(stdout);
            return 0;
        }
        if (!TaskSelect_parse(&q->sel, OPT_VAL(c), optarg, &ok, err) && !session_option(q, mpi, c, optarg, &ok, err) &&
            !engine_option(q, c, optarg, &ok, err)) {
            Cli_badOption("tune", c, argv, err);
            ok = TT_ERR;
        }
        if (ok != TT_OK) return 2;
    }
    if (optind < argc) {
        tt_fail(err, "unexpected argument '%s' (see tunetop tune --help)", argv[optind]);
        return 2;
    }
    if (!Target_find(q->target_name)) {
        tt_fail(err, "unknown target '%s' (choose from: %s)", q->target_name, Target_names());
        return 2;
    }
    return -1;
}

/* What to tune, against what it is tuned with: TT_ERR with the usage error. */
static Status check_selection(const TuneRequest *q, const TuneMpi *mpi, char *err) {
    const TaskSelect *s = &q->sel;
    if (!s->n_specs && !s->network && !s->n_exprs && !s->model)
        return tt_fail(err, "nothing to tune: give --task SPEC, --network NAME, --model FILE.onnx or --expr FILE.te "
                            "(see tunetop tune --help)");
    if (s->model && (s->network || s->subgraphs || (s->given & (SEL_SHAPE & ~SEL_OPS))))
        return tt_fail(err, "--model takes --input-shape and --ops; --network, --subgraphs and the network's shape "
                            "options do not apply");
    if (s->subgraphs && (!s->network || s->ops || s->nopt.layout != LAYOUT_NCHW || q->tmpl_name))
        return tt_fail(err, "--subgraphs tunes a --network's subgraphs (every op, NCHW); --ops, --layout and "
                            "--template do not apply");
    if (s->subgraphs && strcmp(q->target_name, "cpu") != 0)
        return tt_fail(err, "--subgraphs is tuned on the cpu target (its expressions are searched by sketches there)");
    if (s->n_sets && !s->n_exprs) return tt_fail(err, "--set applies to --expr files; there is none");
    if (mpi->size == 1 && mpi->local_measure == 0)
        return tt_fail(err,
                       "--local-measure no leaves nothing to measure without measure servers (mpirun -np 2 or more)");
    /* a server rebuilds a task from its key, and an expression's key does not carry its program */
    if (mpi->size > 1 && (s->n_exprs > 0 || s->subgraphs))
        return tt_fail(err, "--expr tasks cannot be measured by MPI ranks yet: run them without mpirun");
    return TT_OK;
}

/* The strategy rules. An expression is searched by evolution over its
 * sketches (template te.sketch, cpu), or with --tuner random / grid by the
 * plain sampler (te.cpu, te.gpu: numbered random schedules); template tasks
 * take --tuner. Sets q->cfg.strategy, plain_sampler and gpu_sketch. */
static Status check_strategy(TuneRequest *q, char *err) {
    const TaskSelect *s = &q->sel;
    EngineConfig *cfg = &q->cfg;
    q->plain_sampler = q->tuner_given && (strcmp(cfg->strategy, "random") == 0 || strcmp(cfg->strategy, "grid") == 0);
    bool evolution_given = q->tuner_given && strcmp(cfg->strategy, "evolution") == 0;
    if (evolution_given && (s->n_specs || (s->network && !s->subgraphs)))
        return tt_fail(err, "--tuner evolution searches the schedules of --expr tasks; template tasks take xgb, ga, "
                            "random or grid (an --expr task is searched by evolution whatever --tuner says, unless "
                            "random or grid)");
    /* te.sketch tasks name their own strategy; the session's tuner (shown in the UI) is evolution when they are all */
    if (evolution_given) cfg->strategy = Strategy_default()->name;
    if ((s->n_exprs || s->subgraphs) && !s->n_specs && (!s->network || s->subgraphs) && !q->plain_sampler &&
        !q->tuner_given)
        cfg->strategy = "evolution";
    /* on a GPU target the sketch search (te.sketch.gpu) is asked for by name; the plain sampler is the default */
    const Target *named = Target_find(q->target_name);
    if (s->n_exprs && named && named->family == FAMILY_GPU && !q->plain_sampler) {
        if (q->tuner_given && !evolution_given)
            return tt_fail(err, "--expr on a GPU target is tuned with --tuner random or grid (numbered random "
                                "schedules) or evolution (sketches)");
        q->gpu_sketch = evolution_given;
        if (!q->gpu_sketch) {
            cfg->strategy = "random";
            q->plain_sampler = true;
        }
    }
    if (!Strategy_find(cfg->strategy))
        return tt_fail(err, "unknown tuner '%s' (choose from: %s)", cfg->strategy, Strategy_names());
    if (q->n_warm && (!s->n_exprs || q->plain_sampler || !cfg->evolution.cost_model))
        return tt_fail(err,
                       "--warm-start trains the cost model of the evolution of --expr tasks; this session has none");
    return TT_OK;
}

/* Workloads of a network (its tasks, weight = occurrences) or of its subgraphs, appended. */
static Status network_workloads(TuneRequest *q, Workload **wls, double **weights, int *n_wl, char *err) {
    const TaskSelect *s = &q->sel;
    if (s->subgraphs) {
        if (subgraph_tasks(s->network, &s->nopt, wls, weights, n_wl, err) != TT_OK) return TT_ERR;
        /* nothing left untuned: every subgraph task gets at least its first schedule (the zero-trial default) */
        if (q->cfg.trials < *n_wl) {
            fprintf(stderr,
                    "tunetop tune: --trials %d is fewer than the %d subgraph tasks: raised to %d, one each at least\n",
                    q->cfg.trials, *n_wl, *n_wl);
            q->cfg.trials = *n_wl;
        }
        return TT_OK;
    }
    NetworkTask *nt = NULL;
    NetworkUntuned *un = NULL;
    int n_nt = 0, n_un = 0;
    if (s->model ? Model_extract(s->model, s->input_shapes, s->n_input_shapes, s->nopt.op_mask, &nt, &n_nt, &un, &n_un,
                                 err) != TT_OK
                 : Network_extract(s->network, &s->nopt, &nt, &n_nt, &un, &n_un, err) != TT_OK)
        return TT_ERR;
    *wls = realloc(*wls, (size_t)(*n_wl + n_nt + 1) * sizeof(Workload));
    *weights = realloc(*weights, (size_t)(*n_wl + n_nt + 1) * sizeof(double));
    if (!*wls || !*weights) abort();
    for (int i = 0; i < n_nt; i++) {
        (*wls)[*n_wl] = nt[i].wl;
        (*weights)[(*n_wl)++] = nt[i].weight;
    }
    free(nt);
    free(un);
    return TT_OK;
}

/* Every workload of the request, each valid before anything touches the log
 * (the same workload given twice is one, its weights summed). TT_ERR: err is
 * the usage error; *wls and *weights are freed then. */
static Status tune_workloads(TuneRequest *q, Workload **wls, double **weights, int *n_wl, char *err) {
    TaskSelect *s = &q->sel;
    *wls = calloc((size_t)(s->n_specs + s->n_exprs) + 1, sizeof(Workload));
    *weights = calloc((size_t)(s->n_specs + s->n_exprs) + 1, sizeof(double));
    if (!*wls || !*weights) abort();
    *n_wl = 0;
    Status st = TT_OK;
    for (int i = 0; i < s->n_exprs && st == TT_OK; i++) {
        st = TeTask_load(s->exprs[i], s->sets, s->n_sets, &g_exprs[g_n_exprs], &(*wls)[*n_wl], err);
        if (st == TT_OK) g_n_exprs++, (*weights)[(*n_wl)++] = 1;
    }
    if (st == TT_OK && s->n_exprs && !q->plain_sampler && q->cfg.evolution.cost_model && q->n_warm)
        warm_start(q->warm_logs, q->n_warm, s->exprs, s->n_exprs, s->sets, s->n_sets);
    for (int i = 0; i < s->n_specs && st == TT_OK; i++) {
        char why[TT_ERRLEN];
        if ((st = Workload_parse(s->specs[i], &(*wls)[*n_wl], why)) != TT_OK)
            tt_fail(err, "--task %s: %s", s->specs[i], why);
        else
            (*weights)[(*n_wl)++] = 1;
    }
    if (st == TT_OK && (s->network || s->model)) st = network_workloads(q, wls, weights, n_wl, err);
    if (st != TT_OK) {
        free(*wls);
        free(*weights);
        return TT_ERR;
    }
    for (int i = 0; i < *n_wl; i++)
        for (int j = i + 1; j < *n_wl; j++)
            if (Workload_equal(&(*wls)[i], &(*wls)[j])) {
                (*weights)[i] += (*weights)[j];
                (*wls)[j] = (*wls)[--(*n_wl)];
                (*weights)[j] = (*weights)[*n_wl];
                j--;
            }
    return TT_OK;
}

/* Why this rank has no device: the probe's own line, with the target's name and the device's number. */
static void device_why(const Target *target, int dev_index, char *why, size_t n) {
    DeviceInfo d;
    if (target->probe(&d, why) != TT_OK && strncmp(why, target->name, strlen(target->name)) != 0) {
        char t[TT_ERRLEN];
        snprintf(t, sizeof t, "%s: %.400s", target->name, why);
        snprintf(why, n, "%s", t);
    }
    char which[32];
    snprintf(which, sizeof which, "device %d", dev_index);
    if (dev_index >= 0 && !strstr(why, which)) {
        size_t len = strlen(why);
        snprintf(why + len, n - len, " (%s)", which);
    }
}

/* A measure server (rank >= 1): builds and measures what rank 0 sends until it says quit. */
static int serve(const TuneRequest *q, const Target *target, Status dev_ok, const char *why) {
    char line[TT_ERRLEN + 64], err[TT_ERRLEN];
    snprintf(line, sizeof line, "%s", why);
    ServerConfig sc = {.target = target ? target : Target_find("cpu"),
                       .dev = q->cfg.dev,
                       .measure = q->cfg.measure,
                       .builders = q->cfg.builders,
                       .device_error = dev_ok == TT_OK ? NULL : line};
    if (ClusterServer_run(&sc, err) != TT_OK) {
        fprintf(stderr, "tunetop tune: %s\n", err);
        return 1;
    }
    return 0;
}

/* This rank's device into q->cfg (target, dev); -1 to go on as the session
 * (*measure_here: rank 0 measures too), else the exit code (a server's, or an
 * error's). */
static int tune_device(TuneRequest *q, TuneMpi *mpi, bool *measure_here) {
    char err[TT_ERRLEN], dev_why[TT_ERRLEN] = "", host[REC_HOST_LEN] = "?";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    int dev_index = -1;
    if (pick_device(q->target_name, mpi, &dev_index, err) != TT_OK) {
        if (mpi->rank == 0) fprintf(stderr, "tunetop tune: %s\n", err);
        return 2;
    }
    const Target *target = NULL;
    EngineConfig *cfg = &q->cfg;
    Status dev_ok = app_resolve_device(q->target_name, q->arch, cfg->measure.compile_only, &target, &cfg->dev, err);
    if (dev_ok != TT_OK && target) device_why(target, dev_index, dev_why, sizeof dev_why);
    if (dev_ok == TT_OK && dev_index >= 0) { /* which of the node's devices */
        size_t len = strlen(cfg->dev.name);
        snprintf(cfg->dev.name + len, sizeof cfg->dev.name - len, " #%d", dev_index);
    }
    if (mpi->rank > 0) return serve(q, target, dev_ok, dev_why[0] ? dev_why : err);
    *measure_here = false;
    if (dev_ok != TT_OK && mpi->size > 1 && mpi->local_measure != 1 && target && target->offline_info &&
        app_resolve_device(q->target_name, q->arch, true, &target, &cfg->dev, err) == TT_OK) {
        /* rank 0 of a GPU session need not have a GPU: the servers measure */
        fprintf(stderr,
                "tunetop tune: rank 0 on %s cannot open its device (%s): it does not measure; candidates are checked "
                "against the limits of %s (--arch)\n",
                host, dev_why, cfg->dev.arch);
    } else if (dev_ok != TT_OK) {
        if (mpi->size > 1)
            fprintf(stderr, "tunetop tune: rank 0 on %s cannot open its device: %s\n", host,
                    dev_why[0] ? dev_why : err);
        else
            fprintf(stderr, "tunetop tune: %s\n", err);
        return 1;
    } else if (mpi->size > 1) {
        *measure_here = mpi->local_measure >= 0 ? mpi->local_measure : local_measure_default(target, mpi);
    }
    cfg->target = target;
    cfg->network = q->sel.network ? q->sel.network : q->sel.model;
    return -1;
}

/* The roofline: the cpu target's measured figures (measured once per machine,
 * a few seconds, then read from the cache). */
static void tune_roof(TuneRequest *q) {
    EngineConfig *cfg = &q->cfg;
    if (!q->roof || cfg->target->family != FAMILY_CPU || cfg->measure.compile_only) return;
    char note[TT_ERRLEN] = "", merr[TT_ERRLEN] = "";
    if (Machine_getCpu(&cfg->dev, false, NULL, &cfg->machine, note, sizeof note, merr) != TT_OK) {
        fprintf(stderr, "tunetop tune: no roofline for this session: %s\n", merr);
        return;
    }
    cfg->have_machine = true;
    if (note[0])
        fprintf(stderr, "roofline: %s (%.0f GFLOPS, %.1f GB/s on all %d cores; see tunetop devices)\n", note,
                cfg->machine.peak_gflops, cfg->machine.bw_gbs, cfg->machine.cores);
}

/* The session's tasks (tuner/plan.h): one per workload and template, a workload
 * more than one template handles (conv2d 3x3 stride 1 on the cpu: direct and
 * Winograd) a group of alternatives tuned side by side, unless --template picks
 * one. TT_ERR: err is the usage error. */
static Status tune_tasks(const TuneRequest *q, const Workload *wls, const double *weights, int n_wl, Task **tasks,
                         int *n_tasks, char *err) {
    const Target *target = q->cfg.target;
    const Template *chosen = q->tmpl_name ? Template_byName(q->tmpl_name) : NULL;
    if (chosen && chosen->family != target->family) chosen = NULL;
    int n_chosen = 0;
    for (int i = 0; chosen && i < n_wl; i++)
        n_chosen += chosen->op == wls[i].op && (!chosen->applies || chosen->applies(&wls[i]));
    if (q->tmpl_name && !n_chosen)
        return tt_fail(err, "--template %s: %s", q->tmpl_name,
                       chosen ? "applies to none of the tasks" : "no such template for this target");
    const Template *expr_tmpl = NULL;
    if (q->plain_sampler || q->gpu_sketch)
        expr_tmpl = q->gpu_sketch ? &tmpl_te_sketch_gpu : target->family == FAMILY_GPU ? &tmpl_te_gpu : &tmpl_te_cpu;
    PlanRequest req = {.wls = wls,
                       .weights = weights,
                       .n_wl = n_wl,
                       .family = target->family,
                       .dev = &q->cfg.dev,
                       .only = chosen,
                       .expr = expr_tmpl};
    return Plan_tasks(&req, tasks, n_tasks, err);
}

/* The last lines: what the log holds, how to resume; returns the exit status given the UI's rc. */
/* A session that stopped on a fault of the machine, or in which no trial
 * succeeded, must not look like a success: exit 1, with one line. */
static int honest_exit(Engine *engine, const SessionSnapshot *snap, const LogOutcome *lo, const char *log, int rc) {
    char machine[TT_ERRLEN];
    if (!lo->failed && Engine_machineFault(engine, machine, sizeof machine)) {
        fprintf(stderr,
                "tunetop: stopped: %s: a fault of this machine, not of the candidate (failed twice; not recorded, a "
                "resume measures it)\n",
                machine);
        if (rc == 0 || rc >= 128) rc = 1;
    }
    int succeeded = 0;
    for (int t = 0; t < snap->n_tasks; t++)
        succeeded += snap->rows[t].trials - snap->rows[t].errors;
    if (rc == 0 && !lo->failed && snap->trials > snap->restored && succeeded == 0) {
        /* an unattended run must not look like a success when nothing worked */
        fprintf(stderr, "tunetop: no trial succeeded (%d failed); the reasons: tunetop best --verbose %s\n",
                snap->trials, log);
        rc = 1;
    }
    return rc;
}

static int report_outcome(Engine *engine, const TuneRequest *q, const TuneMpi *mpi, int rc, int argc, char **argv) {
    const char *log = q->cfg.log_path;
    SessionSnapshot snap;
    Engine_snapshot(engine, &snap);
    LogOutcome lo;
    Engine_logOutcome(engine, &lo);
    bool finished = snap.trials >= snap.budget;
    if (lo.failed) {
        /* never "synced" here: say what the log holds and what was lost */
        fprintf(stderr, "tunetop tune: %s\n", lo.error);
        if (lo.moved && lo.recovery[0])
            fprintf(stderr, "stopped: the log's %ld records were copied to %s; move it back to %s to resume\n",
                    lo.records, lo.recovery, log);
        else if (lo.moved)
            fprintf(stderr, "stopped: no recovery copy could be written (%s); the %ld records of the log are lost\n",
                    lo.recovery_error, lo.records);
        else
            fprintf(stderr, "stopped: %s holds %ld records%s; %d measured result%s could not be written and %s lost\n",
                    log, lo.records, lo.unsynced ? " (the last ones not confirmed on disk: the sync failed)" : "",
                    lo.lost, lo.lost == 1 ? "" : "s", lo.lost == 1 ? "was" : "were");
        rc = EXIT_LOG_FAILED;
    } else if (snap.stopped || !snap.finished) {
        /* a session that ended on its own is done, even when q or Ctrl-C came afterwards */
        fprintf(stderr, "stopped after %d trials; every measured record is synced to %s\n", snap.trials, log);
        if (Engine_abandoned(engine))
            fprintf(stderr, "stopped without waiting for what was still building or running (it never ended)\n");
        print_resume_hint(argc, argv);
        if (rc == 0 && g_stop) rc = 128 + g_stop; /* 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP; `q` is a normal exit */
        if (rc == 0 && ClusterHost_failed(mpi->host)) rc = 1; /* no rank could measure */
    } else if (snap.restored >= snap.budget && snap.trials == snap.restored) {
        fprintf(stderr,
                "the budget of %d trials is already spent: %s holds %d; nothing measured (raise --trials to go on)\n",
                snap.budget, log, snap.restored);
    } else {
        fprintf(stderr, "%s: %d trials in %s; best configs: tunetop best %s\n",
                finished ? "done" : "finished (every task done)", snap.trials, log, log);
    }
    rc = honest_exit(engine, &snap, &lo, log, rc);
    SessionSnapshot_done(&snap);
    return rc;
}

/* The UI when stdout and stdin are a terminal (under mpirun: the terminal rank 0 was started from), else
 * the headless progress lines; returns the UI's code. */
static int watch(Engine *engine, const TuneRequest *q, const TuneMpi *mpi, const char *resumed) {
    int tty_fd = -1;
    pid_t tty_pgrp = 0;
    if (mpi->size > 1 && !q->headless && !(isatty(STDOUT_FILENO) && isatty(STDIN_FILENO)))
        tty_fd = take_terminal(&tty_pgrp);
    bool use_ui = !q->headless && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
    /* the UI shows what was restored in its message log from the first frame */
    if (resumed[0] && !use_ui) fprintf(stdout, "%s\n", resumed);
    fflush(stdout);
    int rc;
    if (use_ui) {
        UiOptions uo;
        UiOptions_defaults(&uo);
        if (!q->color) uo.color = false;
        uo.target = q->cfg.target->name;
        uo.notice = resumed;
        rc = Ui_runSession(engine, &uo, &g_stop);
    } else {
        rc = Headless_run(engine, stdout, &g_stop, q->table_every);
    }
    give_terminal(tty_fd, tty_pgrp);
    return rc;
}

/* The session: the engine over the tasks (it takes them), watched until it ends. */
static int tune_session(TuneRequest *q, TuneMpi *mpi, Task *tasks, int n_tasks, bool measure_here, int argc,
                        char **argv) {
    char err[TT_ERRLEN];
    EngineConfig *cfg = &q->cfg;
    if (mpi->size > 1) {
        ServerConfig local = {
            .target = cfg->target, .dev = cfg->dev, .measure = cfg->measure, .builders = cfg->builders};
        mpi->host = ClusterHost_new(mpi->size, mpi->rank_timeout, &cfg->dev, measure_here ? &local : NULL, err);
        if (!mpi->host) {
            fprintf(stderr, "tunetop tune: %s\n", err);
            for (int i = 0; i < n_tasks; i++)
                Task_done(&tasks[i]);
            free(tasks);
            return 1;
        }
        cfg->backend = ClusterHost_backend(mpi->host);
    }
    Engine *engine = Engine_new(cfg, tasks, n_tasks, err);
    if (!engine) {
        fprintf(stderr, "tunetop tune: %s\n", err);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* the terminal closed: the same bounded stop, and the resume line */
    signal(SIGPIPE, SIG_IGN);
    char resumed[2048] = "";
    if (Engine_start(engine, resumed, sizeof resumed, err) != TT_OK) {
        fprintf(stderr, "tunetop tune: %s\n", err);
        Engine_delete(engine);
        return 1;
    }
    int rc = watch(engine, q, mpi, resumed);
    Engine_wait(engine);
    ClusterHost_finish(mpi->host); /* the servers quit */
    rc = report_outcome(engine, q, mpi, rc, argc, argv);
    bool left_behind = Engine_abandoned(engine);
    Engine_delete(engine);
    if (left_behind || Gpu_abandonedRunning() > 0) {
        /* a build or a measurement still runs in a thread: the libraries'
         * static destructors must not run under it (a crash at exit), and
         * waiting for it would make the stop unbounded */
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    return rc;
}

/* tune: parse into a request, check it, turn it into workloads, a device and tasks, run the session. */
static int tune_main(int argc, char **argv, TuneMpi *mpi) {
    TuneRequest q = {.target_name = Target_default()->name, .color = true, .roof = true, .table_every = 30};
    EngineConfig_defaults(&q.cfg);
    q.cfg.log_path = "tunetop.log";
    TaskSelect_init(&q.sel);
    char err[TT_ERRLEN] = "";
    int rc = tune_parse(argc, argv, &q, mpi, err);
    if (rc < 0 && (check_selection(&q, mpi, err) != TT_OK || check_strategy(&q, err) != TT_OK)) rc = 2;
    Workload *wls = NULL;
    double *weights = NULL;
    int n_wl = 0;
    if (rc < 0 && tune_workloads(&q, &wls, &weights, &n_wl, err) != TT_OK) rc = 2;
    TaskSelect_done(&q.sel);
    if (rc == 2 && mpi->rank == 0) /* every rank read the same command line: one says what is wrong */
        fprintf(stderr, "tunetop tune: %s\n", err);
    if (rc >= 0) return rc;
    bool measure_here = false;
    rc = tune_device(&q, mpi, &measure_here);
    Task *tasks = NULL;
    int n_tasks = 0;
    if (rc < 0) {
        tune_roof(&q);
        if (tune_tasks(&q, wls, weights, n_wl, &tasks, &n_tasks, err) != TT_OK) {
            fprintf(stderr, "tunetop tune: %s\n", err);
            rc = 2;
        }
    }
    free(wls);
    free(weights);
    if (rc >= 0) return rc;
    return tune_session(&q, mpi, tasks, n_tasks, measure_here, argc, argv);
}
