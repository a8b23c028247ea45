/* app/cmd_model.c: `run --model` and `export --model`: an ONNX model built
 * with a log's best kernels (or every task's default config without a log).
 * The work is library calls (tuner/net/model_run.h, model_build.h); this file
 * parses options and prints. cmd_run and cmd_export hand over to it when
 * their arguments name --model. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/commands.h"
#include "app/device.h"
#include "app/opts.h"
#include "records/history.h"
#include "tuner/net/model_load.h"
#include "tuner/net/model_run.h"
#include "tuner/net/modelfile.h"
#include "tuner/net/passes.h"

bool app_names_model(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--model") || !strncmp(argv[i], "--model=", 8)) return true;
    return false;
}

static void run_usage(FILE *out) {
    fprintf(out,
            "usage: tunetop run --model FILE.onnx [--log LOG] [--input NAME=FILE ...] [--input-shape NAME=DIMS ...]\n"
            "                   [--output-dir DIR] [--threads N] [--repeat N] [--profile] [--seed S] [--keep DIR]\n"
            "\n"
            "Builds the model as a program: every task's kernel from the log's best record (its zero-trial\n"
            "default without a log or a record), every other op from tunetop's op library. Runs it once on\n"
            "the inputs, checks every output against tunetop's reference executor, then times it.\n"
            "\n"
            "  --model FILE        an ONNX model (opsets %d to %d)\n"
            "  --log LOG           a log of `tune --model FILE` (default: none, every task at its default)\n"
            "  --input NAME=FILE   an input as .npy or ONNX TensorProto .pb (repeatable; default random\n"
            "                      from --seed: floats in [-1, 1), integers in [0, 16))\n"
            "  --input-shape NAME=DIMS  fixes a symbolic input dimension, e.g. input=1x3x224x224\n"
            "  --output-dir DIR    writes DIR/OUTPUT_NAME.npy per graph output\n"
            "  --threads N         threads of the kernels (default: all cores)\n"
            "  --repeat N          timed runs after the checked one (default 10)\n"
            "  --profile           time every node and print the time by op\n"
            "  --rtol R            outputs agree when max |got - want| <= R x max |want| (default 1e-3)\n"
            "  --seed S            seed of random inputs (default 1)\n"
            "  --keep DIR          build in DIR and keep the program\n"
            "\n"
            "Exit status: 0 when the outputs match, 1 when they do not or the build fails, 2 usage.\n",
            NET_OPSET_MIN, NET_OPSET_MAX);
}

static int usage_error(const char *cmd, const char *msg) {
    fprintf(stderr, "tunetop %s: %s (see tunetop %s --help)\n", cmd, msg, cmd);
    return 2;
}

/* Loads the log (NULL path: none) into h; prints and returns 1 on failure. */
static int load_log(const char *cmd, const char *path, History *h) {
    char err[TT_ERRLEN];
    History_init(h);
    if (!path) return 0;
    if (History_load(h, path, err) != TT_OK) {
        fprintf(stderr, "tunetop %s: %s\n", cmd, err);
        return 1;
    }
    if (h->end == LOG_TORN) fprintf(stderr, "tunetop %s: warning: %s (read up to there)\n", cmd, h->end_msg);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The profile by op type: count, mean ms per run, share of the nodes' sum. */
static void print_profile(const ModelRunResult *res, double mean_ms) {
    typedef struct {
        char op[32];
        int count;
        double ms;
    } Row;
    Row rows[128];
    int n = 0, kernels = 0;
    double total = 0, xform = 0;
    for (int i = 0; i < res->n_nodes; i++) {
        xform += res->nodes[i].xform_ms;
        kernels += res->nodes[i].task >= 0;
        int r = 0;
        while (r < n && strcmp(rows[r].op, res->nodes[i].op))
            r++;
        if (r == n && n < 128) rows[n++] = (Row){.count = 0, .ms = 0}, snprintf(rows[r].op, 32, "%s", res->nodes[i].op);
        if (r < n) rows[r].count++, rows[r].ms += res->nodes[i].ms;
        total += res->nodes[i].ms;
    }
    for (int a = 0; a < n; a++) /* largest first */
        for (int b = a + 1; b < n; b++)
            if (rows[b].ms > rows[a].ms) {
                Row t = rows[a];
                rows[a] = rows[b], rows[b] = t;
            }
    printf("\nProfile (mean per run; Kernel = a tuned kernel with the ops it fuses):\n%-22s %6s %10s %7s\n", "op",
           "nodes", "ms", "share");
    for (int r = 0; r < n; r++)
        printf("%-22s %6d %10.4f %6.1f%%\n", rows[r].op, rows[r].count, rows[r].ms,
               total > 0 ? 100 * rows[r].ms / total : 0);
    printf("%-22s %6d %10.4f   (a run's mean %.4f ms: %.4f ms outside the nodes)\n", "total", res->n_nodes, total,
           mean_ms, mean_ms - total);
    printf("Layout transforms inside the %d kernel nodes (the pack or blocked copy of an input, the unpack of an\n"
           "output): %.4f ms, %.1f%% of the nodes' sum\n",
           kernels, xform, total > 0 ? 100 * xform / total : 0);
    printf("%d kernel outputs handed to the next kernel blocked, never in the dense layout; %d tensors read in\n"
           "the producer's buffer, never copied\n",
           res->handoffs, res->borrowed);
}

/* The Kernel rows by task, slowest first (at most 12): where a model's kernel time goes. */
static void print_task_profile(const ModelRunResult *res) {
    int n = res->tasks.n_tasks, *order = malloc(sizeof *order * (size_t)(n + 1)),
        *count = calloc((size_t)n + 1, sizeof *count);
    double *ms = calloc(2 * (size_t)n + 1, sizeof *ms), *xf = ms + n, total = 0;
    for (int i = 0; i < res->n_nodes; i++) {
        int t = res->nodes[i].task;
        if (t < 0 || t >= n) continue;
        count[t]++, ms[t] += res->nodes[i].ms, xf[t] += res->nodes[i].xform_ms, total += res->nodes[i].ms;
    }
    for (int t = 0; t < n; t++)
        order[t] = t;
    for (int a = 0; a < n; a++) /* largest first */
        for (int b = a + 1; b < n; b++)
            if (ms[order[b]] > ms[order[a]]) {
                int x = order[a];
                order[a] = order[b], order[b] = x;
            }
    printf("\nKernels by task (slowest first; xform: the ms of layout transforms; GFLOPS of the ms without them):\n"
           "%-5s %6s %10s %8s %7s %8s  %s\n",
           "task", "nodes", "ms", "xform", "share", "GFLOPS", "workload");
    for (int r = 0; r < n && r < 12 && ms[order[r]] > 0; r++) {
        int t = order[r];
        char key[WORKLOAD_KEY_LEN];
        Workload_key(&res->tasks.tasks[t].wl, key, sizeof key);
        double run_ms = ms[t] - xf[t], gflops = Workload_flops(&res->tasks.tasks[t].wl) * count[t] / (run_ms * 1e6);
        printf("%-5d %6d %10.4f %8.4f %6.1f%% %8.2f  %.70s\n", t, count[t], ms[t], xf[t],
               total > 0 ? 100 * ms[t] / total : 0, run_ms > 0 ? gflops : 0, key);
    }
    free(order), free(count), free(ms);
}

static void print_result(const ModelRunRequest *req, const ModelRunResult *res, const char *log) {
    int tuned = 0;
    double est = 0;
    for (int t = 0; t < res->tasks.n_tasks; t++) {
        tuned += res->build[t].tuned;
        est += res->tasks.tasks[t].weight * res->build[t].latency_s;
    }
    char from[256];
    if (log)
        snprintf(from, sizeof from, "%d from %s, %d at their default config", tuned, log, res->tasks.n_tasks - tuned);
    else
        snprintf(from, sizeof from, "no log: every task at its default config");
    printf("Model %s: %d inputs, %d outputs; %d kernel nodes in %d tasks (%s)\n", req->model_path, res->model.n_inputs,
           res->model.n_outputs, res->tasks.n_kernels, res->tasks.n_tasks, from);
    printf("Target cpu: %s; program built in %.1f s\n", req->dev->name, res->compile_s);
    const NetValue *worst = &res->model.values[res->model.outputs[res->worst_output]];
    if (res->matches)
        printf("Output matches the reference (largest error %.3g of the largest |value|, output '%s')\n", res->max_err,
               worst->name);
    else
        printf("Output DIFFERS from the reference: error %.3g of the largest |value| in output '%s' (tolerance %g)\n",
               res->max_err, worst->name, req->rtol);
    char threads[32] = "every core";
    if (req->threads) snprintf(threads, sizeof threads, "%d thread%s", req->threads, req->threads > 1 ? "s" : "");
    double *t = malloc(sizeof *t * (size_t)(res->n_runs + 1));
    memcpy(t, res->run_ms, sizeof *t * (size_t)res->n_runs);
    qsort(t, (size_t)res->n_runs, sizeof *t, cmp_double);
    double median = res->n_runs ? t[res->n_runs / 2] : 0;
    if (res->n_runs)
        printf("Latency: median %.3f ms, min %.3f ms over %d runs (%s)\n", median, t[0], res->n_runs, threads);
    if (tuned == res->tasks.n_tasks && est > 0)
        printf("Kernels' estimate (weight x best latency): %.3f ms; measured / estimate = %.2f\n", est * 1e3,
               median / (est * 1e3));
    double mean = 0;
    for (int i = 0; i < res->n_runs; i++)
        mean += res->run_ms[i] / res->n_runs;
    if (req->profile) print_profile(res, mean), print_task_profile(res);
    if (req->output_dir) printf("Outputs written to %s/\n", req->output_dir);
    free(t);
}

static Status add_spec(const char **list, int *n, const char *opt, const char *v, char *err) {
    if (*n == MODEL_MAX_IO) return tt_fail(err, "%s: at most %d", opt, MODEL_MAX_IO);
    if (!strchr(v, '=')) return tt_fail(err, "%s %s: give NAME=%s", opt, v, strcmp(opt, "--input") ? "DIMS" : "FILE");
    list[(*n)++] = v;
    return TT_OK;
}

/* One of `run --model`'s options into req, log or target; 1 done, 0 not one of them. */
static int model_option(ModelRunRequest *req, const char **log, const char **target, int c, const char *arg, Status *st,
                        char *err) {
    *st = TT_OK;
    switch (c) {
    case 'm':
        req->model_path = arg;
        break;
    case 'L':
        *log = arg;
        break;
    case 'I':
        *st = add_spec(req->inputs, &req->n_inputs, "--input", arg, err);
        break;
    case 'S':
        *st = add_spec(req->input_shapes, &req->n_input_shapes, "--input-shape", arg, err);
        break;
    case 'o':
        req->output_dir = arg;
        break;
    case 'j':
        *st = opt_int(arg, "--threads", 1, 1024, &req->threads, err);
        break;
    case 'R':
        *st = opt_int(arg, "--repeat", 1, 100000, &req->repeat, err);
        break;
    case 'p':
        req->profile = true;
        break;
    case 'r':
        *st = opt_double(arg, "--rtol", 0, 1, &req->rtol, err);
        break;
    case 's':
        *st = opt_u64(arg, "--seed", &req->seed, err);
        break;
    case 'k':
        req->keep_dir = arg;
        break;
    case 'T':
        *target = arg;
        break;
    default:
        return 0;
    }
    return 1;
}

/* `run --model`'s arguments into req, log and target; -1 when they hold, else the exit code (0 after --help). */
static int model_args(int argc, char **argv, ModelRunRequest *req, const char **log, const char **target) {
    static const struct option longopts[] = {{"model", required_argument, 0, 'm'},
                                             {"log", required_argument, 0, 'L'},
                                             {"input", required_argument, 0, 'I'},
                                             {"input-shape", required_argument, 0, 'S'},
                                             {"output-dir", required_argument, 0, 'o'},
                                             {"threads", required_argument, 0, 'j'},
                                             {"repeat", required_argument, 0, 'R'},
                                             {"profile", no_argument, 0, 'p'},
                                             {"rtol", required_argument, 0, 'r'},
                                             {"seed", required_argument, 0, 's'},
                                             {"keep", required_argument, 0, 'k'},
                                             {"target", required_argument, 0, 'T'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    char err[TT_ERRLEN] = "";
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        Status st = TT_OK;
        if (c == 'h') {
            run_usage(stdout);
            return 0;
        }
        if (c == ':') {
            snprintf(err, sizeof err, "%s needs a value", argv[optind - 1]);
            return usage_error("run", err);
        }
        if (!model_option(req, log, target, c, optarg, &st, err)) {
            snprintf(err, sizeof err, "unknown option '%s' with --model", argv[optind - 1]);
            return usage_error("run", err);
        }
        if (st != TT_OK) return usage_error("run", err);
    }
    if (optind < argc) {
        snprintf(err, sizeof err, "unexpected argument '%s'", argv[optind]);
        return usage_error("run", err);
    }
    if (!req->model_path || !req->model_path[0]) return usage_error("run", "--model needs FILE.onnx");
    if (strcmp(*target, "cpu")) return usage_error("run", "--model runs on the cpu target only");
    return -1;
}

/* `tunetop run --model FILE.onnx`: the model built with the log's kernels, run, checked and timed. */
int cmd_run_model(int argc, char **argv) {
    ModelRunRequest req = {.repeat = 10, .seed = 1, .rtol = 1e-3};
    const char *log = NULL, *target = "cpu";
    int rc = model_args(argc, argv, &req, &log, &target);
    if (rc >= 0) return rc;
    char err[TT_ERRLEN] = "";
    const Target *tg;
    DeviceInfo dev;
    if (app_resolve_device("cpu", NULL, false, &tg, &dev, err) != TT_OK) {
        fprintf(stderr, "tunetop run: %s\n", err);
        return 1;
    }
    req.dev = &dev;
    History h;
    if (load_log("run", log, &h)) return 1;
    req.history = log ? &h : NULL;
    ModelRunResult res;
    Status st = ModelRun_run(&req, &res, err);
    if (st == TT_OK)
        print_result(&req, &res, log);
    else
        fprintf(stderr, "tunetop run: %s\n", err);
    rc = st != TT_OK || !res.matches ? 1 : 0;
    ModelRunResult_done(&res);
    History_done(&h);
    return rc;
}

static void export_usage(FILE *out) {
    fprintf(out, "usage: tunetop export --model FILE.onnx -o DIR [LOG] [--input-shape NAME=DIMS ...] [--name NAME]\n"
                 "                      [--force] [--strict]\n"
                 "\n"
                 "Writes the whole model as a standalone C library: NAME_create(weights_path), NAME_run(ctx,\n"
                 "inputs, outputs), NAME_destroy(ctx) in DIR/NAME.h, the weights and graph in DIR/NAME.weights, one\n"
                 "kernel per task from LOG's best record (its default config without a log or a record; --strict\n"
                 "refuses instead), tunetop's op library for the other ops, and DIR/CMakeLists.txt building\n"
                 "libNAME.a and libNAME.so with cmake alone (libc, libm and OpenMP).\n"
                 "\n"
                 "  -o, --output DIR  the directory to write; it must not exist or be empty (--force replaces it)\n"
                 "  --name NAME       the library's name and the prefix of its functions (default: net)\n");
}

/* Writes the model's library into dir. */
static Status export_model(const char *path, const char *const *shapes, int n_shapes, const History *h,
                           const char *name, const char *dir, bool force, bool strict, char *err) {
    const Target *tg;
    DeviceInfo dev;
    if (app_resolve_device("cpu", NULL, false, &tg, &dev, err) != TT_OK) return TT_ERR;
    NetModel m;
    NetModel_init(&m);
    if (Model_load(path, shapes, n_shapes, &m, err) != TT_OK) return TT_ERR;
    ModelTasks mt;
    Status st = ModelTasks_build(&m, 0, &mt, err);
    if (st == TT_OK) st = ModelTasks_rewrite(&m, &mt, err);
    if (st == TT_OK) st = NetPass_fuseElementwise(&m, NULL, err);
    ExportBundle b;
    ExportBundle_init(&b, name, DIALECT_C, &dev);
    ModelBuildTask *rep = calloc((size_t)mt.n_tasks + 1, sizeof *rep);
    if (st == TT_OK) st = ModelBuild_bundle(&m, &mt, h, &dev, name, &b, rep, err);
    for (int t = 0; st == TT_OK && t < mt.n_tasks; t++) {
        if (rep[t].tuned) continue;
        char key[WORKLOAD_KEY_LEN];
        Workload_key(&mt.tasks[t].wl, key, sizeof key);
        if (strict)
            st = tt_fail(err, "task %d (%s) has %s in the log (--strict)", t, key, rep[t].why);
        else
            fprintf(stderr, "tunetop export: warning: task %d (%s): %s, the default config\n", t, key, rep[t].why);
    }
    if (st == TT_OK) st = ExportBundle_write(&b, dir, force, err);
    char wpath[4096];
    snprintf(wpath, sizeof wpath, "%s/%s.weights", dir, name);
    if (st == TT_OK) st = ModelFile_write(&m, wpath, err);
    if (st == TT_OK)
        printf("Wrote %s: lib%s (%d kernels for %d tasks, the op library for %d other nodes) and %s\n", dir, name,
               mt.n_kernels, mt.n_tasks, m.n_nodes - mt.n_kernels, wpath);
    free(rep);
    ExportBundle_done(&b);
    ModelTasks_done(&mt);
    NetModel_done(&m);
    return st;
}

int cmd_export_model(int argc, char **argv) {
    static const struct option longopts[] = {{"model", required_argument, 0, 'm'},
                                             {"output", required_argument, 0, 'o'},
                                             {"input-shape", required_argument, 0, 'S'},
                                             {"name", required_argument, 0, 'n'},
                                             {"force", no_argument, 0, 'f'},
                                             {"strict", no_argument, 0, 's'},
                                             {"log", required_argument, 0, 'L'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *model = NULL, *dir = NULL, *name = "net", *log = NULL, *shapes[MODEL_MAX_IO];
    int n_shapes = 0;
    bool force = false, strict = false;
    char err[TT_ERRLEN] = "";
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        Status st = TT_OK;
        switch (c) {
        case 'm':
            model = optarg;
            break;
        case 'o':
            dir = optarg;
            break;
        case 'S':
            st = add_spec(shapes, &n_shapes, "--input-shape", optarg, err);
            break;
        case 'n':
            name = optarg;
            st = Export_checkPrefix(name, err);
            break;
        case 'f':
            force = true;
            break;
        case 's':
            strict = true;
            break;
        case 'L':
            log = optarg;
            break;
        case 'h':
            export_usage(stdout);
            return 0;
        case ':':
            snprintf(err, sizeof err, "%s needs a value", argv[optind - 1]);
            return usage_error("export", err);
        default:
            snprintf(err, sizeof err, "unknown option '%s' with --model", argv[optind - 1]);
            return usage_error("export", err);
        }
        if (st != TT_OK) return usage_error("export", err);
    }
    if (optind < argc && !log) log = argv[optind++];
    if (optind < argc) {
        snprintf(err, sizeof err, "unexpected argument '%s'", argv[optind]);
        return usage_error("export", err);
    }
    if (!model) return usage_error("export", "--model needs FILE.onnx");
    if (!dir) return usage_error("export", "give the directory to write with -o DIR");
    History h;
    if (load_log("export", log, &h)) return 1;
    Status st = export_model(model, shapes, n_shapes, log ? &h : NULL, name, dir, force, strict, err);
    if (st != TT_OK) fprintf(stderr, "tunetop export: %s\n", err);
    History_done(&h);
    return st == TT_OK ? 0 : 1;
}
