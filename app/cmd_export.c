/* app/cmd_export.c: `tunetop export LOG -o DIR`: the best config of each task
 * of a record log as self-contained source (kernels/export/export.h), with an
 * umbrella header and a CMakeLists.txt that builds a static and a shared
 * library. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/commands.h"
#include "app/device.h"
#include "app/opts.h"
#include "kernels/export/export.h"
#include "kernels/target.h"
#include "kernels/templates/te/te_task.h"
#include "records/history.h"
#include "space/steps.h"
#include "tuner/net/network.h"

static void usage(FILE *out) {
    NetworkOptions nd;
    NetworkOptions_defaults(&nd);
    app_help(out,
             "usage: tunetop export LOG -o DIR [options]\n"
             "\n"
             "Writes, for the best successful record of each task of the record log LOG, source that builds and\n"
             "runs without tunetop: one kernel per task with its own header (the ABI: create with the weights,\n"
             "packed once; run; destroy; the blocked-layout pack / run / unpack steps as functions of their own),\n"
             "one umbrella header DIR/NAME.h and a DIR/CMakeLists.txt that builds libNAME.a and libNAME.so.\n"
             "The dialect follows the log's target: cpu gives C (compiled with cc -O3 -march=native -fopenmp),\n"
             "opencl gives .cl kernels plus host C on the OpenCL API, cuda gives .cu files on the CUDA Runtime API.\n"
             "Every kernel starts with a comment naming its workload, template, config (text and index), measured\n"
             "latency and GFLOPS, this log and the date. A task whose trials all failed gets the template's\n"
             "default config (the first valid one) with a warning; --strict refuses instead.\n"
             "\n"
             "which tasks (default: every task of the log):\n"
             "  --task SPEC           a task, e.g. dense:m=64,n=1024,k=1024 (repeatable)\n"
             "  --network NAME        every task of a built-in network (%s)\n"
             "  --expr FILE.te        the tensor expression tuned with `tune --expr FILE.te` (repeatable): its\n"
             "                        best schedule (a log's expressions export only with their file)\n"
             "  --set NAME=VALUE      override a 'let' of the .te files, as given to tune (repeatable)\n"
             "  --batch-size B --layout NCHW|NHWC --image-size S --seq-len L --ops conv2d,dense,...\n"
             "                        network options, as given to tune (defaults %d, %s, the network's, %d, all)\n"
             "output:\n"
             "  -o, --output DIR      the directory to write; it must not exist or be empty\n"
             "  --force               replace DIR even when it is not empty\n"
             "  --name NAME           library and umbrella header name (default tunetop_kernels)\n"
             "  --strict              refuse tasks without a successful record instead of using the default config\n"
             "  --target T            check that the log is of target T (the log says which)\n"
             "  --arch ARCH           the architecture whose limits configs are checked against (default %s)\n"
             "\n"
             "Errors (one line, exit status 1; nothing is written): requested tasks the log has no record of\n"
             "(named), a log of another target than --target, an output directory that is not empty (without\n"
             "--force), a directory that cannot be written or a full disk. Usage errors exit with status 2.\n",
             Network_names(), nd.batch, Layout_name(nd.layout), nd.seq_len, app_arch_defaults());
}

enum { O_FORCE = 256, O_NAME, O_STRICT, O_TARGET, O_ARCH, O_HELP };

typedef struct Want {
    Workload wl;
    char key[WORKLOAD_KEY_LEN];
} Want;

static Dialect dialect_of(const Target *t) { return t->dialect; }

/* "conv2d_3": op name and task ID */
static void make_prefix(const Workload *wl, int i, char *buf, size_t n) {
    snprintf(buf, n, "%s_%d", Op_name(wl->op), i);
}

static const struct option OWN[] = {{"output", required_argument, 0, 'o'},      {"force", no_argument, 0, O_FORCE},
                                    {"name", required_argument, 0, O_NAME},     {"strict", no_argument, 0, O_STRICT},
                                    {"target", required_argument, 0, O_TARGET}, {"arch", required_argument, 0, O_ARCH},
                                    {"help", no_argument, 0, O_HELP},           {0, 0, 0, 0}};
const CmdOptions EXPORT_OPTIONS = {"export", OWN, SEL_TASK | SEL_NETWORK | SEL_SHAPE | SEL_EXPR | SEL_SET};

/* One export: the options, the tasks wanted, the log, the files being made. */
typedef struct ExportJob {
    const char *log_path, *out_dir, *name, *want_target, *arch;
    bool force, strict;
    TaskSelect sel;
    Want *want;
    int n_want;
    History h;
    const Target *target;
    DeviceInfo dev;
    ExportBundle b;
    Space space;                 /* the space of the task being exported */
    TeTask *exprs[APP_MAX_SETS]; /* --expr, loaded (owned) */
    int n_exprs;
    char *default_steps; /* the zero-trial schedule of the expression being exported (owned) */
    char date[64];
    int defaults; /* kernels exported with the template's default config */
} ExportJob;

/* The command line into j: -1 to go on, 0 after --help, 2 a usage error (err). */
static int export_parse(ExportJob *j, int argc, char **argv, char *err) {
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&EXPORT_OPTIONS, longopts, CLI_MAX_OPTS);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
        Status ok = TT_OK;
        if (TaskSelect_parse(&j->sel, OPT_VAL(c), optarg, &ok, err)) {
        } else if (c == 'o') {
            j->out_dir = optarg;
        } else if (c == O_FORCE || c == O_STRICT) {
            *(c == O_FORCE ? &j->force : &j->strict) = true;
        } else if (c == O_NAME) {
            j->name = optarg;
        } else if (c == O_TARGET) {
            j->want_target = optarg;
        } else if (c == O_ARCH) {
            j->arch = optarg;
        } else if (c == O_HELP) {
            usage(stdout);
            return 0;
        } else {
            Cli_badOption("export", c, argv, err);
            ok = TT_ERR;
        }
        if (ok != TT_OK) return 2;
    }
    const TaskSelect *s = &j->sel;
    Status st = TT_OK;
    if (optind >= argc)
        st = tt_fail(err, "give a LOG file");
    else if (optind + 1 < argc)
        st = tt_fail(err, "one LOG file only ('%s' is extra)", argv[optind + 1]);
    else if (!j->out_dir)
        st = tt_fail(err, "give the output directory with -o DIR");
    else if (s->network && s->n_specs)
        st = tt_fail(err, "give --task or --network, not both");
    else if (s->network && s->n_exprs)
        st = tt_fail(err, "give --expr or --network, not both");
    else if (s->n_sets && !s->n_exprs)
        st = tt_fail(err, "--set needs --expr FILE.te");
    else if ((s->given & SEL_SHAPE) && !s->network)
        st = tt_fail(err, "network options need --network");
    else if (Export_checkPrefix(j->name, err) != TT_OK)
        st = tt_fail(err, "--name '%s' must be a C name (letters, digits, '_')", j->name);
    else if (j->want_target && !Target_find(j->want_target))
        st = tt_fail(err, "unknown target '%s' (choose from: %s)", j->want_target, Target_names());
    if (st != TT_OK) return 2;
    j->log_path = argv[optind];
    return -1;
}

/* The expressions of --expr (with --set) as tasks of j->want; TT_ERR: err is the file's error. */
static Status asked_exprs(ExportJob *j, char *err) {
    const TaskSelect *s = &j->sel;
    for (int i = 0; i < s->n_exprs; i++) {
        Want *w = &j->want[j->n_want];
        if (TeTask_load(s->exprs[i], s->sets, s->n_sets, &j->exprs[j->n_exprs], &w->wl, err) != TT_OK) return TT_ERR;
        j->n_exprs++;
        Workload_key(&w->wl, w->key, sizeof w->key);
        j->n_want++;
    }
    return TT_OK;
}

/* The tasks --task, --expr or --network asks for; TT_ERR: err is the usage error. */
static Status asked_tasks(ExportJob *j, char *err) {
    const TaskSelect *s = &j->sel;
    if (s->n_specs || s->n_exprs) {
        j->want = calloc((size_t)(s->n_specs + s->n_exprs), sizeof *j->want);
        if (!j->want) abort();
        if (asked_exprs(j, err) != TT_OK) return TT_ERR;
        for (int i = 0; i < s->n_specs; i++) {
            char why[TT_ERRLEN];
            if (Workload_parse(s->specs[i], &j->want[j->n_want].wl, why) != TT_OK)
                return tt_fail(err, "--task %s: %s", s->specs[i], why);
            Workload_key(&j->want[j->n_want].wl, j->want[j->n_want].key, sizeof j->want[j->n_want].key);
            j->n_want++;
        }
    } else if (s->network) {
        NetworkTask *nt = NULL;
        NetworkUntuned *un = NULL;
        int n_nt = 0, n_un = 0;
        if (Network_extract(s->network, &s->nopt, &nt, &n_nt, &un, &n_un, err) != TT_OK) return TT_ERR;
        j->want = calloc((size_t)n_nt + 1, sizeof *j->want);
        for (int i = 0; i < n_nt; i++) {
            j->want[j->n_want].wl = nt[i].wl;
            Workload_key(&nt[i].wl, j->want[j->n_want].key, sizeof j->want[j->n_want].key);
            j->n_want++;
        }
        free(nt);
        free(un);
    }
    return TT_OK;
}

/* Every workload of the log, once (a workload tuned under two templates is one kernel: the faster). */
static Status log_tasks(ExportJob *j, char *err) {
    const History *h = &j->h;
    if (h->n_tasks == 0) return tt_fail(err, "%s has no records", j->log_path);
    j->want = calloc((size_t)h->n_tasks, sizeof *j->want);
    for (int i = 0; i < h->n_tasks; i++) {
        char why[TT_ERRLEN];
        if (History_find(h, h->tasks[i].key) != &h->tasks[i]) continue;
        if (Workload_parse(h->tasks[i].key, &j->want[j->n_want].wl, why) != TT_OK)
            return tt_fail(err, "%s: task key '%s' does not parse: %s", j->log_path, h->tasks[i].key, why);
        snprintf(j->want[j->n_want].key, sizeof j->want[j->n_want].key, "%s", h->tasks[i].key);
        j->n_want++;
    }
    return TT_OK;
}

/* An --expr whose workload key the log has no record of: names the log's expressions, if any. */
static Status expr_not_in_log(const ExportJob *j, const Workload *wl, char *err) {
    char seen[TT_ERRLEN] = "";
    int n = 0;
    for (int t = 0; t < j->h.n_tasks; t++) {
        Workload other;
        char why[TT_ERRLEN];
        if (Workload_parse(j->h.tasks[t].key, &other, why) != TT_OK || other.op != OP_EXPR) continue;
        size_t len = strlen(seen);
        if (n++ < 3)
            snprintf(seen + len, sizeof seen - len, "%s%s (%s)", len ? ", " : "", other.expr_name, other.expr_te);
    }
    return tt_fail(err,
                   "%s has no records of the expression %s (%s) that --expr%s gives: %s%s (another file or other "
                   "--set values than the log was tuned with?)",
                   j->log_path, wl->expr_name, wl->expr_te, j->sel.n_sets ? " with --set" : "",
                   n ? "the log's expressions are " : "the log holds no expression", seen);
}

/* The log, its target, the tasks to export (all of them with records) and the device. */
static Status export_load(ExportJob *j, char *err) {
    if (History_load(&j->h, j->log_path, err) != TT_OK) return TT_ERR;
    if (j->h.end == LOG_TORN) fprintf(stderr, "tunetop export: warning: %s (read up to there)\n", j->h.end_msg);
    const char *target_name = j->h.header.target;
    if (j->want_target && strcmp(j->want_target, target_name) != 0)
        return tt_fail(err, "%s is a log of target %s, not %s", j->log_path, target_name, j->want_target);
    if (!j->sel.n_specs && !j->sel.n_exprs && !j->sel.network && log_tasks(j, err) != TT_OK) return TT_ERR;
    /* every requested task must have records in the log */
    int missing = 0;
    char names[TT_ERRLEN] = "";
    for (int i = 0; i < j->n_want; i++) {
        if (History_find(&j->h, j->want[i].key)) continue;
        if (j->want[i].wl.op == OP_EXPR) return expr_not_in_log(j, &j->want[i].wl, err);
        if (missing < 3) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", missing ? "; " : "", j->want[i].key);
        }
        missing++;
    }
    if (missing)
        return tt_fail(err, "%s has no records for %d of the %d requested task%s: %s%s", j->log_path, missing,
                       j->n_want, j->n_want == 1 ? "" : "s", names, missing > 3 ? "; ..." : "");
    const Target *named = Target_find(target_name);
    bool offline = named && named->offline_info; /* no device needed to export for it */
    return app_resolve_device(target_name, j->arch, offline, &j->target, &j->dev, err);
}

/* The schedule of expression want i: its best record's steps, or with none the zero-trial default (a
 * warning; --strict refuses). */
static Status pick_schedule(ExportJob *j, int i, const Record *best, int32_t *choice, ExportRequest *req, char *note,
                            size_t n_note, char *err) {
    const Want *w = &j->want[i];
    if (best) {
        if (!best->steps) return tt_fail(err, "%s: the log's best record holds no schedule steps", w->key);
        if (best->n_choice == j->space.n_knobs) memcpy(choice, best->choice, (size_t)j->space.n_knobs * sizeof *choice);
        req->steps = best->steps;
        req->meta.latency_s = Record_cost(best);
        return TT_OK;
    }
    if (j->strict) return tt_fail(err, "%s has no successful record for %s (--strict)", j->log_path, w->key);
    if (dialect_of(j->target) != DIALECT_C)
        return tt_fail(err, "%s has no successful record for %s (the zero-trial default schedule is for cpu)",
                       j->log_path, w->key);
    Steps steps;
    TeTask_defaultSteps(w->wl.expr, &j->dev, &steps);
    StrBuf sb;
    StrBuf_init(&sb);
    Steps_encode(&steps, &sb);
    free(j->default_steps);
    j->default_steps = StrBuf_take(&sb);
    StrBuf_done(&sb);
    req->steps = j->default_steps;
    const HistoryTask *ht = History_find(&j->h, w->key);
    snprintf(note, n_note, "no successful record among the log's %d trials: the zero-trial default schedule",
             ht->n_records);
    req->meta.note = note;
    fprintf(stderr,
            "tunetop export: warning: %s has no successful record (%d trial%s): exported with the zero-trial "
            "default schedule\n",
            w->key, ht->n_records, ht->n_records == 1 ? "" : "s");
    j->defaults++;
    return TT_OK;
}

/* The config of want i: its best record's, or with none the template's default (a warning; --strict refuses). */
static Status pick_config(ExportJob *j, int i, const Template *tmpl, const Record *best, int32_t *choice,
                          ExportRequest *req, char *note, size_t n_note, char *err) {
    const Want *w = &j->want[i];
    if (best && strcmp(best->template_name, tmpl->name) != 0)
        return tt_fail(err, "%s: the log's best record is of template %s, this build has %s", w->key,
                       best->template_name, tmpl->name);
    if (w->wl.op == OP_EXPR) return pick_schedule(j, i, best, choice, req, note, n_note, err);
    if (best) {
        if (best->n_choice == j->space.n_knobs)
            memcpy(choice, best->choice, (size_t)j->space.n_knobs * sizeof *choice);
        else
            Space_decode(&j->space, best->index, choice);
        char text[REC_CONFIG_LEN];
        Space_format(&j->space, choice, text, sizeof text);
        if (best->config[0] && strcmp(text, best->config) != 0)
            return tt_fail(err,
                           "%s: the log's best config (%s) is not in this machine's space for the template (here: "
                           "%s); was the log tuned on another kind of %s?",
                           w->key, best->config, text, j->h.header.target);
        req->meta.latency_s = Record_cost(best);
        req->meta.pack_s = best->pack_s;
        return TT_OK;
    }
    if (j->strict) return tt_fail(err, "%s has no successful record for %s (--strict)", j->log_path, w->key);
    char why[TT_ERRLEN];
    if (Export_defaultChoice(tmpl, &w->wl, &j->space, &j->dev, choice, why) != TT_OK)
        return tt_fail(err, "%s: %s", w->key, why);
    const HistoryTask *ht = History_find(&j->h, w->key);
    snprintf(note, n_note, "no successful record among the log's %d trials: the template's default config",
             ht->n_records);
    req->meta.note = note;
    fprintf(stderr,
            "tunetop export: warning: %s has no successful record (%d trial%s): exported with the template's "
            "default config (index %llu)\n",
            w->key, ht->n_records, ht->n_records == 1 ? "" : "s", (unsigned long long)Space_encode(&j->space, choice));
    j->defaults++;
    return TT_OK;
}

/* Want i as a kernel of the bundle, named by its task ID (tunetop tasks, best, the UI). */
static Status export_one(ExportJob *j, int i, char *err) {
    const Want *w = &j->want[i];
    const Record *best = History_bestOfKey(&j->h, w->key);
    if (best && best->n_costs == 0) best = NULL; /* compile-only records: nothing measured */
    char why[TT_ERRLEN];
    if (w->wl.op == OP_EXPR && !w->wl.expr)
        return tt_fail(err,
                       "%s holds the expression %s (%s): give its file with --expr FILE.te (and the --set values it "
                       "was tuned with) to export it",
                       j->log_path, w->wl.expr_name, w->wl.expr_te);
    const Template *tmpl = Template_forRecord(&w->wl, j->target->family, best ? best->template_name : NULL, why);
    if (!tmpl) return tt_fail(err, "%s: %s", w->key, why);
    Space_done(&j->space); /* the previous task's */
    if (tmpl->define_space(&w->wl, &j->dev, &j->space, why) != TT_OK) return tt_fail(err, "%s: %s", w->key, why);
    int32_t choice[SPACE_MAX_KNOBS] = {0};
    ExportRequest req = {.wl = &w->wl,
                         .tmpl = tmpl,
                         .space = &j->space,
                         .choice = choice,
                         .dev = &j->dev,
                         .dialect = dialect_of(j->target)};
    req.meta.log_path = j->log_path;
    req.meta.date = j->date;
    req.meta.pack_s = -1;
    char note[TT_ERRLEN] = "";
    if (pick_config(j, i, tmpl, best, choice, &req, note, sizeof note, err) != TT_OK) return TT_ERR;
    const HistoryTask *used = History_findTemplate(&j->h, w->key, tmpl->name);
    if (!used) used = History_find(&j->h, w->key);
    char prefix[EXPORT_PREFIX_LEN];
    make_prefix(&w->wl, (int)(used - j->h.tasks), prefix, sizeof prefix);
    req.prefix = prefix;
    ExportKernel k;
    if (Export_kernel(&req, &k, why) != TT_OK) return tt_fail(err, "%s: %s", w->key, why);
    if (ExportBundle_add(&j->b, &k, why) != TT_OK) {
        ExportKernel_done(&k);
        return tt_fail(err, "%s: %s", w->key, why);
    }
    return TT_OK;
}

/* Every wanted kernel into the bundle, then the bundle into out_dir. */
static Status export_all(ExportJob *j, char *err) {
    ExportBundle_init(&j->b, j->name, dialect_of(j->target), &j->dev);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(j->date, sizeof j->date, "%Y-%m-%d %H:%M:%S UTC", &tm);
    for (int i = 0; i < j->n_want; i++)
        if (export_one(j, i, err) != TT_OK) return TT_ERR;
    if (ExportBundle_write(&j->b, j->out_dir, j->force, err) != TT_OK) return TT_ERR;
    printf("exported %d %s kernel%s to %s (%d with the default config): %s.h, CMakeLists.txt -> lib%s.a, lib%s.so\n",
           j->b.n_kernels, Export_dialectName(dialect_of(j->target)), j->b.n_kernels == 1 ? "" : "s", j->out_dir,
           j->defaults, j->name, j->name, j->name);
    printf("build: cmake -S %s -B %s/build && cmake --build %s/build\n", j->out_dir, j->out_dir, j->out_dir);
    return TT_OK;
}

int cmd_export(int argc, char **argv) {
    if (app_names_model(argc, argv)) return cmd_export_model(argc, argv);
    ExportJob j;
    memset(&j, 0, sizeof j);
    j.name = "tunetop_kernels";
    TaskSelect_init(&j.sel);
    History_init(&j.h);
    Space_init(&j.space);
    char err[TT_ERRLEN] = "";
    int rc = export_parse(&j, argc, argv, err);
    if (rc < 0 && asked_tasks(&j, err) != TT_OK) rc = 2;
    if (rc == 2)
        fprintf(stderr, "tunetop export: %s%s\n", err, strstr(err, "--help)") ? "" : " (see tunetop export --help)");
    if (rc < 0) rc = export_load(&j, err) == TT_OK && export_all(&j, err) == TT_OK ? 0 : 1;
    if (rc == 1) fprintf(stderr, "tunetop export: %s\n", err);
    Space_done(&j.space);
    ExportBundle_done(&j.b);
    for (int i = 0; i < j.n_exprs; i++)
        TeTask_delete(j.exprs[i]);
    free(j.default_steps);
    History_done(&j.h);
    free(j.want);
    TaskSelect_done(&j.sel);
    return rc;
}
