/* app/cmd_records.c: `tunetop best LOG` and `tunetop dump LOG`, the two
 * read-only views of a record log (tunetop's, or TVM's: see tvm_best). */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/model.h"
#include "base/strbuf.h"
#include "kernels/target.h"
#include "kernels/targets/machine.h"
#include "kernels/targets/peak.h"
#include "kernels/workload.h"
#include "records/log.h"
#include "records/summary.h"
#include "records/tvmlog.h"
#include "space/space.h"
#include "tuner/net/model_build.h"

/* Reads every record of a TVM log, calling fn on each. Returns 0, or 1 when
 * reading failed (said on stderr). Malformed lines are counted in *bad and,
 * with verbose, named on stderr; an unfinished last line too. */
static int each_record(const char *cmd, const char *path, TvmFormat fmt, bool verbose, long *bad,
                       void (*fn)(const TvmRecord *, void *), void *ctx) {
    TvmReader *rd;
    char err[TT_ERRLEN];
    if (TvmReader_open(path, fmt, &rd, err) != TT_OK) {
        fprintf(stderr, "tunetop %s: %s\n", cmd, err);
        return 1;
    }
    TvmRecord *rec = malloc(sizeof *rec);
    if (!rec) abort();
    int rc = 0;
    *bad = 0;
    for (;;) {
        TvmReadStatus st = TvmReader_next(rd, rec, err);
        if (st == TVM_RECORD) {
            fn(rec, ctx);
        } else if (st == TVM_BAD) {
            (*bad)++;
            if (verbose) fprintf(stderr, "tunetop %s: %s: skipped %s\n", cmd, path, err);
        } else if (st == TVM_PARTIAL) {
            (*bad)++;
            if (verbose) fprintf(stderr, "tunetop %s: %s: skipped %s\n", cmd, path, err);
            break;
        } else if (st == TVM_IOERR) {
            fprintf(stderr, "tunetop %s: %s\n", cmd, err);
            rc = 1;
            break;
        } else {
            break;
        }
    }
    free(rec);
    TvmReader_close(rd);
    return rc;
}

static void add_summary(const TvmRecord *rec, void *ctx) { TvmSummary_add(ctx, rec); }

static const char *TVM_ERR_NAMES[] = {
    "NO_ERROR",     "INSTANTIATION_ERROR", "COMPILE_HOST", "COMPILE_DEVICE", "RUNTIME_DEVICE",
    "WRONG_ANSWER", "BUILD_TIMEOUT",       "RUN_TIMEOUT",  "UNKNOWN_ERROR",  "other"};

static int tvm_best(const char *path, int fmt_, bool verbose) {
    TvmFormat fmt = (TvmFormat)fmt_;
    TvmSummary s;
    TvmSummary_init(&s, fmt);
    long bad = 0;
    int rc = each_record("best", path, fmt, verbose, &bad, add_summary, &s);
    if (rc && s.n_records == 0 && bad == 0) { /* not read at all: its one line was said */
        TvmSummary_done(&s);
        return rc;
    }
    long errors = 0;
    int with = 0;
    for (int i = 0; i < s.n_tasks; i++) {
        errors += s.tasks[i].n_errors;
        with += isfinite(s.tasks[i].best_mean);
    }
    printf("log %s: %s, %ld record%s, %d workload%s (%d with a result), %d task name%s, %ld failed, %ld malformed "
           "line%s skipped\n",
           path, TvmFormat_name(fmt), s.n_records, s.n_records == 1 ? "" : "s", s.n_tasks, s.n_tasks == 1 ? "" : "s",
           with, s.n_task_names, s.n_task_names == 1 ? "" : "s", errors, bad, bad == 1 ? "" : "s");
    /* workloads per task name */
    for (int n = 0; n < s.n_task_names; n++) {
        int w = 0;
        long r = 0;
        for (int i = 0; i < s.n_tasks; i++)
            if (strcmp(s.tasks[i].task, s.task_names[n]) == 0) w++, r += s.tasks[i].n_records;
        printf("  %-32s %4d workload%s %6ld record%s\n", s.task_names[n], w, w == 1 ? " " : "s", r, r == 1 ? "" : "s");
    }
    printf("latencies are TVM's, measured where the log was written\n");
    for (int i = 0; i < s.n_tasks; i++) {
        const TvmTaskSummary *t = &s.tasks[i];
        printf("\nworkload %d/%d  %s\n", i + 1, s.n_tasks, t->key);
        printf("  task      %s   target %s\n", t->task, t->target);
        if (!isfinite(t->best_mean)) {
            printf("  best      none: no successful record\n");
        } else {
            if (t->best_has_index)
                printf("  best      %s  (config index %" PRId64 ", line %ld)\n", t->best_config, t->best_index,
                       t->best_line);
            else
                printf("  best      %s  (line %ld)\n", t->best_config, t->best_line);
            printf("  latency   %#.5g ms\n", t->best_mean * 1e3);
        }
        printf("  trials    %ld (", t->n_records);
        if (!t->n_errors)
            printf("no errors");
        else {
            printf("%ld error%s:", t->n_errors, t->n_errors == 1 ? "" : "s");
            const char *sep = " ";
            for (int e = 1; e < 10; e++)
                if (t->errno_count[e]) printf("%s%s %ld", sep, TVM_ERR_NAMES[e], t->errno_count[e]), sep = ", ";
        }
        printf(")\n");
        long faults = t->cost_faults[1] + t->cost_faults[2] + t->cost_faults[3];
        if (faults) { /* no error, yet no latency: never a best */
            printf("  left out  %ld record%s whose cost is no latency (", faults, faults == 1 ? "" : "s");
            const char *sep = "";
            for (int k = 1; k < 4; k++)
                if (t->cost_faults[k]) printf("%s%ld with %s", sep, t->cost_faults[k], TVM_COST_FAULTS[k]), sep = ", ";
            printf(")\n");
        }
    }
    fflush(stdout);
    if (bad)
        fprintf(stderr, "tunetop best: %s: %ld malformed line%s skipped%s\n", path, bad, bad == 1 ? "" : "s",
                verbose ? "" : " (--verbose names them)");
    TvmSummary_done(&s);
    return rc;
}

static void print_json(const TvmRecord *rec, void *ctx) {
    (void)ctx;
    char *j = TvmRecord_toJson(rec);
    puts(j);
    free(j);
}

static int tvm_dump(const char *path, int fmt, bool verbose) {
    long bad = 0;
    int rc = each_record("dump", path, (TvmFormat)fmt, verbose, &bad, print_json, NULL);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tunetop dump: cannot write the output\n");
        return 1;
    }
    if (bad)
        fprintf(stderr, "tunetop dump: %s: %ld malformed line%s skipped%s\n", path, bad, bad == 1 ? "" : "s",
                verbose ? "" : " (--verbose names them)");
    return rc;
}

static void best_usage(FILE *out) {
    app_help(out, "usage: tunetop best [--verbose] LOG\n"
                  "       tunetop best --json|--json-array LOG\n"
                  "       tunetop best --model FILE.onnx [--input-shape NAME=DIMS ...] [--ops LIST] [--json] LOG\n"
                  "\n"
                  "Prints, for every task of the record log LOG, in ID order (the task list of the log's last\n"
                  "session, as the live table showed it; a log without one: the order of first mention): the\n"
                  "task key, the template, its ID (the one `tunetop tasks`, the UI, `run --profile` and `export`\n"
                  "use), weight and network, the steering it was left with, the best config (its text and flat\n"
                  "index), its latency (the median of its repeats, in ms), its speed in GFLOPS (the task's FLOPs / "
                  "latency; a multiply-add counts\n"
                  "as 2 FLOPs), and the number of trials and of failed trials by error (by error number).\n"
                  "A task none of whose trials succeeded says so.\n"
                  "The roof is the task's roofline recorded with the best (min(peak, bandwidth x FLOPs/byte) on\n"
                  "the machine and threads that measured it; see tunetop devices) and the share of it the best\n"
                  "reaches; a best above its roof is flagged as a warning (the roof or the measurement is wrong).\n"
                  "  --json        JSON Lines instead: one JSON object per task and line (keys id, task, tmpl,\n"
                  "                alternatives, used_by_run, config, index, latency_ms, with_layout_ms (latency\n"
                  "                with the layout transforms, for blocked templates), gflops, trials, errors,\n"
                  "                roof_gflops, roof_bound (compute, L2, L3 or DRAM), roof_share, machine_key,\n"
                  "                this_machine; null where unknown)\n"
                  "  --json-array  the same objects as one JSON document: an array (for `python3 -m json.tool`)\n"
                  "\n"
                  "Which figure: latency and speed are of the kernel alone (the timed run, as the tuner, the UI's\n"
                  "table and its curves rank configs). A template that keeps data in a blocked layout (the CPU\n"
                  "conv2d and depthwise) also converts the input to it and the output back, timed apart as pack_s;\n"
                  "the '+layout' line gives latency and speed with those transforms, the cost of the kernel when\n"
                  "it is called on canonical (NCHW / NHWC) tensors, and their share.\n"
                  "\n"
                  "A log whose last record was cut short by a crash is read up to that record, with a warning.\n"
                  "A damaged log is read up to the damage, then reported with its byte offset (exit status 1).\n"
                  "Every record carries a checksum (CRC-32C) that is checked as it is read: a record whose bytes\n"
                  "changed is damage, as is a cost that is not a positive number of seconds. A best faster than\n"
                  "twice this machine's peak estimate for the log's target is flagged (\"check\").\n"
                  "\n"
                  "  --verbose   also say whether the records were checked (logs written before checksums\n"
                  "              existed still read, unchecked)\n"
                  "\n"
                  "With --model FILE.onnx the tasks are the model's instead, with the IDs and in the order\n"
                  "`tunetop tasks --model FILE.onnx` lists them (give the --input-shape and --ops that tune\n"
                  "was given), each with its best record in LOG (a task LOG has no record of: \"no record: runs\n"
                  "its zero-trial default\") and what `run --model` and `export --model` build for its workload\n"
                  "(the log's best of the workload over its templates, when that template can rebuild it). The\n"
                  "last lines: the estimated kernel latency (sum of weight x that best; the workloads at their\n"
                  "default config are left out and counted) and the untuned ops, which run in tunetop's op\n"
                  "library. LOG's records of other workloads are left out (counted); a LOG none of whose records\n"
                  "is of the model says so on stderr. LOG must be a log of the cpu target. With --json the\n"
                  "objects also have weight and run_default (run --model builds this task at its zero-trial\n"
                  "default config), and used_by_run says which task of a workload run --model builds.\n"
                  "  --model FILE.onnx        an ONNX model (see tunetop tasks --model)\n"
                  "  --input-shape NAME=DIMS  fixes a symbolic input dimension, e.g. input=1x3x224x224\n"
                  "  --ops LIST               only these ops' tasks, as tune --model --ops LIST\n"
                  "\n"
                  "LOG may also be one of TVM's: an AutoTVM record file, an auto-scheduler record file, or a\n"
                  "MetaSchedule work directory, told apart by their content (--format tunetop|autotvm|\n"
                  "autoscheduler|metaschedule forces one). TVM's latencies were measured by TVM, on its machine.\n"
                  "Malformed lines are skipped and counted; --verbose names their line numbers.\n");
}

static void dump_usage(FILE *out) {
    app_help(out, "usage: tunetop dump LOG\n"
                  "\n"
                  "Prints every record of the record log LOG as JSON Lines (one JSON object per line), in file\n"
                  "order, with\n"
                  "the keys task, tmpl, target, index, choice, config, costs (seconds), err (error number,\n"
                  "0 = measured), msg, build_s, run_s, pack_s, ts (unix time), regs, spills, smem, lmem\n"
                  "(GPU resources; null when not measured). For example: tunetop dump x.log | jq .costs\n"
                  "\n"
                  "A torn last record (a crash in the middle of a write) is reported on stderr as a warning\n"
                  "(exit status 0); any other damage is an error with its byte offset (exit status 1).\n"
                  "An imported record also has src (where it came from) and src_cost (its cost there, seconds).\n"
                  "\n"
                  "TVM's logs (--format F forces one, --verbose names malformed lines; see tunetop best --help)\n"
                  "print one object per record with the keys format, line, target, task, workload, index, config,\n"
                  "costs, err, all_cost, ts.\n");
}

/* Parses `NAME [--help] [--verbose] [--json] LOG` (--verbose / --json only
 * when verbose / json is not NULL); returns -1 and sets *path to go on, or an
 * exit code. */
/* TVM's logs: --format F forces one (*fmt: that or the detected one), and --verbose is taken
 * for them (*tvm_verbose) even where tunetop's logs have none. */
static const struct option BEST_OWN[] = {{"help", no_argument, 0, 'h'},         {"verbose", no_argument, 0, 'v'},
                                         {"json", no_argument, 0, 'j'},         {"json-array", no_argument, 0, 'J'},
                                         {"format", required_argument, 0, 'f'}, {0, 0, 0, 0}};
static const struct option DUMP_OWN[] = {{"help", no_argument, 0, 'h'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"format", required_argument, 0, 'f'},
                                         {0, 0, 0, 0}};
const CmdOptions BEST_OPTIONS = {"best", BEST_OWN, SEL_MODEL | SEL_INPUT_SHAPE | SEL_OPS};
const CmdOptions DUMP_OPTIONS = {"dump", DUMP_OWN, 0};

/* --model and the options that go with it (best only); -1 to go on, else the exit code. */
static int check_model(const char *name, const TaskSelect *sel, TvmFormat fmt) {
    if (!sel || !sel->given) return -1;
    if (!sel->model) {
        fprintf(stderr, "tunetop %s: --input-shape and --ops go with --model FILE.onnx (see tunetop %s --help)\n", name,
                name);
        return 2;
    }
    if (!sel->model[0]) {
        fprintf(stderr, "tunetop %s: --model needs FILE.onnx\n", name);
        return 2;
    }
    if (fmt != TVM_FMT_TUNETOP) {
        fprintf(stderr, "tunetop %s: --model reads a log of tunetop's (`tune --model`), not %s's\n", name,
                TvmFormat_name(fmt));
        return 2;
    }
    return -1;
}

/* *json: 0 text, 1 JSON Lines, 2 one JSON array; sel: best's --model (NULL for dump) */
static int parse_args(const char *name, void (*usage)(FILE *), int argc, char **argv, const char **path, bool *verbose,
                      int *json, TvmFormat *fmt, bool *tvm_verbose, TaskSelect *sel) {
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(json ? &BEST_OPTIONS : &DUMP_OPTIONS, longopts, CLI_MAX_OPTS);
    optind = 1;
    opterr = 0;
    int c;
    char ferr[TT_ERRLEN];
    *fmt = TVM_FMT_UNKNOWN;
    *tvm_verbose = false;
    while ((c = getopt_long(argc, argv, ":hv", longopts, NULL)) != -1) {
        Status sst = TT_OK;
        if (sel && TaskSelect_parse(sel, OPT_VAL(c), optarg, &sst, ferr)) {
            if (sst == TT_OK) continue;
            fprintf(stderr, "tunetop %s: %s\n", name, ferr);
            return 2;
        }
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        if (c == 'v') {
            *tvm_verbose = true;
            if (verbose) *verbose = true;
            continue;
        }
        if (c == 'f') {
            if (TvmFormat_parse(optarg, fmt, ferr) != TT_OK) {
                fprintf(stderr, "tunetop %s: %s\n", name, ferr);
                return 2;
            }
            continue;
        }
        if ((c == 'j' || c == 'J') && json) {
            *json = c == 'j' ? 1 : 2;
            continue;
        }
        Cli_badOption(name, c, argv, ferr);
        fprintf(stderr, "tunetop %s: %s\n", name, ferr);
        return 2;
    }
    if (optind >= argc) {
        fprintf(stderr, "tunetop %s: give a LOG file (see tunetop %s --help)\n", name, name);
        return 2;
    }
    if (optind + 1 < argc) {
        fprintf(stderr, "tunetop %s: one LOG file only ('%s' is extra)\n", name, argv[optind + 1]);
        return 2;
    }
    *path = argv[optind];
    if (*fmt == TVM_FMT_UNKNOWN && TvmLog_detect(*path, fmt, ferr) != TT_OK) {
        fprintf(stderr, "tunetop %s: %s\n", name, ferr);
        return 1;
    }
    if (*fmt == TVM_FMT_TUNETOP && *tvm_verbose && !verbose) {
        fprintf(stderr, "tunetop %s: unknown option '--verbose' (see tunetop %s --help)\n", name, name);
        return 2;
    }
    if (*fmt != TVM_FMT_TUNETOP && json && *json) {
        fprintf(stderr, "tunetop %s: --json is for tunetop's logs (tunetop dump prints TVM's records as JSON)\n", name);
        return 2;
    }
    return check_model(name, sel, *fmt);
}

/* "12 errors: INSTANTIATION_ERROR 10, WRONG_ANSWER 2" */
/* A schedule's steps (a tensor expression's candidate), wrapped at "; " to fit
 * 100 columns; the text is the one `tunetop dump` shows and Steps_decode reads. */
static void print_steps(const char *steps) {
    const char *p = steps;
    const char *label = "  steps     ";
    if (!*p) printf("%s(none: the default loop nests)\n", label);
    while (*p) {
        size_t len = strlen(p), cut = len;
        if (len > 88) {
            cut = 0;
            for (size_t i = 0; i + 1 < len && i < 88; i++)
                if (p[i] == ';' && p[i + 1] == ' ') cut = i + 1;
            if (cut == 0) cut = len;
        }
        printf("%s%.*s\n", label, (int)cut, p);
        label = "            ";
        p += cut;
        while (*p == ' ')
            p++;
    }
}

static void print_errors(const SummaryTask *t) {
    if (t->n_errors == 0) {
        printf("no errors");
        return;
    }
    printf("%ld error%s:", t->n_errors, t->n_errors == 1 ? "" : "s");
    const char *sep = " ";
    for (int e = 1; e < HISTORY_ERRNO_SLOTS; e++) {
        if (!t->errno_count[e]) continue;
        const char *name = e < ERR_COUNT ? MeasureError_name(e) : "other";
        printf("%s%s %ld", sep, name, t->errno_count[e]);
        sep = ", ";
    }
}

/* The task's template keeps data in a blocked layout (its pack_s is layout transforms, not call overhead). */
static bool has_layout_transforms(const SummaryTask *t, int family) {
    Workload wl;
    char err[TT_ERRLEN];
    if (family < 0 || Workload_parse(t->key, &wl, err) != TT_OK) return false;
    const Template *tmpl = Template_forRecord(&wl, (TargetFamily)family, t->template_name, err);
    return tmpl && tmpl->blocked && strcmp(tmpl->name, t->template_name) == 0;
}

/* The task's GFLOPS are effective ones (a Winograd template: fewer FLOPs than the workload counts). */
static const char *gflops_unit(const SummaryTask *t) {
    return Template_effective(Template_byName(t->template_name)) ? "effective GFLOPS" : "GFLOPS";
}

/* The other tasks of the same workload (a group of alternatives: the key
 * under another template), one line naming them and which is the faster. */
/* The fastest task of task i's workload (i itself when alone or when none has
 * a timed best); *members: how many tasks the workload has. */
static int group_fastest(const LogSummary *h, int i, int *members) {
    const SummaryTask *t = &h->tasks[i];
    int fastest = i;
    *members = 0;
    for (int j = 0; j < h->n_tasks; j++) {
        const SummaryTask *o = &h->tasks[j];
        if (strcmp(o->key, t->key) != 0) continue;
        (*members)++;
        if (o->has_best && o->best.n_costs > 0 &&
            (!h->tasks[fastest].has_best || Record_cost(&o->best) < Record_cost(&h->tasks[fastest].best)))
            fastest = j;
    }
    return fastest;
}

static void print_group(const LogSummary *h, int i) {
    const SummaryTask *t = &h->tasks[i];
    int members, fastest = group_fastest(h, i, &members);
    if (members < 2) return;
    printf("  group    ");
    for (int j = 0; j < h->n_tasks; j++)
        if (j != i && strcmp(h->tasks[j].key, t->key) == 0) printf(" ID %d (%s)", j, h->tasks[j].template_name);
    printf(" tunes the same workload; %s\n",
           !h->tasks[fastest].has_best ? "none of them has a result yet"
           : fastest == i              ? "this one is the faster: run and export use it, the estimate counts it"
                                       : "the faster is used by run and export and counted in the estimate");
}

/* Task i is the first of its workload's tasks (the one whose group the estimate counts). */
static bool first_of_key(const LogSummary *h, int i) {
    for (int j = 0; j < i; j++)
        if (strcmp(h->tasks[j].key, h->tasks[i].key) == 0) return false;
    return true;
}

/* The roof recorded with the best, and the share of it the best reaches. */
static void print_roof(const Record *best, double gflops, const char *this_key, const char *unit) {
    if (best->roof_gflops <= 0) {
        printf("  roof      not recorded (the session had no roofline figures)\n");
        return;
    }
    double share = Roof_share(gflops, best->roof_gflops);
    bool here = strcmp(best->machine_key, this_key) == 0;
    printf("  roof      %.2f %s, %s; the best is %.1f%% of it (machine %s%s)\n", best->roof_gflops, unit,
           Roof_boundText(best->roof_bound), 100 * share, best->machine_key[0] ? best->machine_key : "?",
           here ? ", this machine" : ", another machine");
    if (share > 1)
        printf("  WARNING   the best is above its roof (%.1f%%): the roof or the measurement is wrong\n", 100 * share);
}

static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static const Record *task_best(const SummaryTask *t) { return t->has_best ? &t->best : NULL; }

/* pick: with --model, what run --model builds for the task's workload (NULL: a log alone) */
static void print_task_json(const LogSummary *h, int i, const char *this_key, int family, const ModelBuildTask *pick) {
    const SummaryTask *t = &h->tasks[i];
    const Record *best = task_best(t);
    printf("{\"id\":%d,\"task\":", i);
    json_string(t->key);
    printf(",\"tmpl\":");
    json_string(t->template_name);
    /* the IDs of the workload's tasks under other templates, and whether run and export build this one */
    int members, fastest = group_fastest(h, i, &members);
    printf(",\"alternatives\":[");
    for (int j = 0, n = 0; j < h->n_tasks; j++)
        if (j != i && strcmp(h->tasks[j].key, t->key) == 0) printf("%s%d", n++ ? "," : "", j);
    if (pick) { /* the task whose kernel run --model builds, from its best or at its default config */
        bool used = pick->tmpl && strcmp(pick->tmpl->name, t->template_name) == 0;
        printf("],\"used_by_run\":%s,\"weight\":%g,\"run_default\":%s", used ? "true" : "false", t->weight,
               used && !pick->tuned ? "true" : "false");
    } else {
        printf("],\"used_by_run\":%s", fastest == i ? "true" : "false");
    }
    double gflops = 0;
    Workload wl;
    char err[TT_ERRLEN];
    bool have_wl = Workload_parse(t->key, &wl, err) == TT_OK;
    if (best) {
        gflops = have_wl ? Record_gflops(best, Workload_flops(&wl)) : 0;
        printf(",\"config\":");
        json_string(best->config);
        printf(",\"index\":%llu,\"latency_ms\":%.9g", (unsigned long long)best->index, Record_cost(best) * 1e3);
        if (best->steps) { /* a tensor expression's schedule, as dump shows it and Steps_decode reads it */
            printf(",\"steps\":");
            json_string(best->steps);
        }
        if (has_layout_transforms(t, family) && best->pack_s > 0)
            printf(",\"with_layout_ms\":%.9g", (Record_cost(best) + best->pack_s) * 1e3);
        else
            printf(",\"with_layout_ms\":null");
        if (have_wl)
            printf(",\"gflops\":%.6g", gflops);
        else
            printf(",\"gflops\":null");
    } else {
        printf(",\"config\":null,\"index\":null,\"latency_ms\":null,\"with_layout_ms\":null,\"gflops\":null");
    }
    printf(",\"trials\":%ld,\"errors\":%ld", t->n_records, t->n_errors);
    if (best && best->roof_gflops > 0 && have_wl) {
        printf(",\"roof_gflops\":%.6g,\"roof_bound\":\"%s\",\"roof_share\":%.6g,\"machine_key\":", best->roof_gflops,
               best->roof_bound ? Roof_levelName(best->roof_bound) : "compute", Roof_share(gflops, best->roof_gflops));
        json_string(best->machine_key);
        printf(",\"this_machine\":%s}", strcmp(best->machine_key, this_key) == 0 ? "true" : "false");
    } else {
        printf(",\"roof_gflops\":null,\"roof_bound\":null,\"roof_share\":null,\"machine_key\":null,"
               "\"this_machine\":null}");
    }
}

/* The first line of best: what the log holds. */
static void print_log_head(const LogSummary *h, const char *path) {
    int with_result = 0;
    long errors = 0;
    for (int i = 0; i < h->n_tasks; i++) {
        with_result += h->tasks[i].has_best;
        errors += h->tasks[i].n_errors;
    }
    printf("log %s: target %s, %zu record%s, %d task%s (%d with a result), %ld failed trial%s\n", path,
           h->header.target, h->n_records, h->n_records == 1 ? "" : "s", h->n_tasks, h->n_tasks == 1 ? "" : "s",
           with_result, errors, errors == 1 ? "" : "s");
}

/* The log's target as this machine has it, to flag a best beyond its peak. */
static bool log_device(const LogSummary *h, DeviceInfo *dev) {
    const Target *target = Target_find(h->header.target);
    char err[TT_ERRLEN];
    memset(dev, 0, sizeof *dev);
    return target && target->probe && target->probe(dev, err) == TT_OK;
}

/* Where a best record was measured (older logs do not say) and the resources its kernel uses. */
static void print_best_where(const Record *best) {
    if (best->host[0] || best->device[0]) {
        printf("  measured  on %s", best->host[0] ? best->host : "?");
        if (best->rank > 0) printf(", rank %d", best->rank);
        if (best->device[0]) printf(", %s", best->device);
        printf("\n");
    }
    if (best->regs >= 0 || best->shared_bytes >= 0 || best->spills >= 0 || best->local_bytes >= 0) {
        printf("  resources");
        if (best->regs >= 0) printf(" %d registers", best->regs);
        if (best->shared_bytes >= 0) printf(" %lld B shared", (long long)best->shared_bytes);
        if (best->local_bytes >= 0) printf(" %lld B local", (long long)best->local_bytes);
        if (best->spills >= 0) printf(" %d spills", best->spills);
        printf("\n");
    }
}

/* Task t's best record: its config, latency, speed (against the device's peak: *beyond counts a
 * best beyond it), with the layout transforms, and where it was measured. */
static void print_task_best(const SummaryTask *t, const Record *best, int family, const DeviceInfo *dev, int *beyond) {
    printf("  best      %s  (config index %llu)\n", best->config[0] ? best->config : "(no config text)",
           (unsigned long long)best->index);
    if (best->steps) print_steps(best->steps);
    double cost = Record_cost(best);
    printf("  latency   %#.5g ms  (median of %d repeat%s)\n", cost * 1e3, best->n_costs, best->n_costs == 1 ? "" : "s");
    Workload wl;
    char err[TT_ERRLEN];
    bool parsed = Workload_parse(t->key, &wl, err) == TT_OK;
    char why[256];
    if (parsed) {
        double g = Record_gflops(best, Workload_flops(&wl));
        printf("  speed     %.2f %s%s\n", g, gflops_unit(t),
               strcmp(gflops_unit(t), "GFLOPS") ? " (the direct convolution's FLOPs over the time)" : "");
        /* against the peak: the FLOPs the kernel executes (a Winograd task's effective GFLOPS are more) */
        double executed = Template_executedGflops(Template_byName(t->template_name), &wl, g);
        if (dev && Device_beyondPeak(dev, executed, why, sizeof why)) {
            printf("  check     %s\n", why);
            (*beyond)++;
        }
    } else
        printf("  speed     n/a (the task key does not parse: %s)\n", err);
    if (has_layout_transforms(t, family) && best->pack_s > 0 && isfinite(cost)) {
        double with = cost + best->pack_s;
        printf("  +layout   %#.5g ms", with * 1e3);
        if (parsed) printf(", %.2f %s", Workload_flops(&wl) / with / 1e9, gflops_unit(t));
        printf("  with the layout transforms (pack_s %#.3g ms, %.1f%%)\n", best->pack_s * 1e3,
               100.0 * best->pack_s / with);
    }
    print_best_where(best);
}

/* none: what the best line says of a task without a record */
static void print_task(const LogSummary *h, int i, const char *this_key, int family, const DeviceInfo *dev, int *beyond,
                       const char *none) {
    const SummaryTask *t = &h->tasks[i];
    printf("task %d  %s\n", i, t->key);
    printf("  template  %s\n", t->template_name);
    /* the ID the live session showed (the log's task list), its weight, the steering it was left with */
    printf("  ID        %d  weight %g%s%s\n", i, t->weight, t->network[0] ? "  network " : "", t->network);
    print_group(h, i);
    if (t->steered && (t->steer.stopped || t->steer.paused || t->steer.priority)) {
        printf("  steering ");
        if (t->steer.stopped) printf(" stopped");
        if (t->steer.paused) printf(" paused");
        if (t->steer.priority) printf(" priority %+d", t->steer.priority);
        printf("\n");
    }
    const Record *best = task_best(t);
    long built = t->n_built;       /* compile-only records: built, never timed */
    long imported = t->n_imported; /* imported from another tuner's log: never measured here */
    const Record *best_imported = t->has_best_imported ? &t->best_imported : NULL;
    if (best_imported)
        printf("  imported  %ld record%s, not measured here; best there %#.5g ms (%s, config index %llu)\n", imported,
               imported == 1 ? "" : "s", best_imported->src_cost * 1e3, best_imported->src,
               (unsigned long long)best_imported->index);
    if (t->n_records == 0) {
        printf("  best      %s\n", none);
    } else if (!best && imported && !built && t->n_records == imported) {
        printf("  best      none measured here yet (imported records only)\n");
    } else if (!best && built) {
        printf("  best      none timed: a compile-only session (%ld of %ld configs built, no timings)\n", built,
               t->n_records);
    } else if (!best) {
        printf("  best      none: no successful record (%ld trial%s, all failed)\n", t->n_records,
               t->n_records == 1 ? "" : "s");
    } else {
        print_task_best(t, best, family, dev, beyond);
    }
    printf("  trials    %ld (", t->n_records);
    print_errors(t);
    printf(")\n");
    Workload wl;
    char err[TT_ERRLEN];
    if (best && Workload_parse(t->key, &wl, err) == TT_OK)
        print_roof(best, Record_gflops(best, Workload_flops(&wl)), this_key, gflops_unit(t));
}

/* The session's objective, as the live header showed it (weights from the log's task list), and
 * the same at every task's recorded roof; a workload tuned under several templates (a group)
 * counts once: its fastest task, its lowest roof. */
static void print_estimate(const LogSummary *h) {
    char err[TT_ERRLEN];
    double est = 0, floor_s = 0;
    int left_out = 0, n_groups = 0;
    bool all_roofs = true;
    for (int i = 0; i < h->n_tasks; i++) {
        if (!first_of_key(h, i)) continue;
        n_groups++;
        const Record *b = NULL;
        double roof_s = INFINITY;
        Workload wl;
        bool parsed = Workload_parse(h->tasks[i].key, &wl, err) == TT_OK;
        for (int j = i; j < h->n_tasks; j++) {
            const Record *bj = task_best(&h->tasks[j]);
            if (strcmp(h->tasks[j].key, h->tasks[i].key) != 0 || !bj || bj->n_costs <= 0) continue;
            if (!b || Record_cost(bj) < Record_cost(b)) b = bj;
            if (bj->roof_gflops > 0 && parsed && Roof_latency(Workload_flops(&wl), bj->roof_gflops) < roof_s)
                roof_s = Roof_latency(Workload_flops(&wl), bj->roof_gflops);
        }
        if (b) {
            est += h->tasks[i].weight * Record_cost(b);
            if (isfinite(roof_s))
                floor_s += h->tasks[i].weight * roof_s;
            else
                all_roofs = false;
        } else {
            left_out++;
        }
    }
    if (n_groups > left_out) {
        printf("\nestimated total latency %.4g ms (sum of weight x best latency%s", est * 1e3,
               n_groups < h->n_tasks ? "; a workload tuned under two templates counts once, the faster" : "");
        if (left_out) printf("; %d task%s without a result left out", left_out, left_out == 1 ? "" : "s");
        printf(")\n");
        if (all_roofs && floor_s > 0)
            printf("at the roofline %.4g ms (every task at its recorded roof; the best is %.1f%% of the way)\n",
                   floor_s * 1e3, 100 * floor_s / est);
    }
}

/* best --model: the model's tasks (h->tasks[0..n_ids-1], then its workloads under other templates the
 * log holds) and what run --model builds for each task's workload. */
typedef struct BestModel {
    const char *path;
    AppModelTasks mt;
    int n_ids;
    ModelBuildTask *pick; /* per task of h, the same for every task of a workload */
    int other_tasks;      /* the log's tasks of other workloads, left out */
    long other_records;
    long records; /* the log's records of the model's workloads */
} BestModel;

static void BestModel_done(BestModel *bm) {
    AppModelTasks_done(&bm->mt);
    free(bm->pick);
}

/* The log's tasks in the model's order, and for each what run --model builds (ModelBuild_pick, as
 * run and export pick: the log's best of the workload over its templates). -1, or the exit code. */
static int model_tasks(BestModel *bm, LogSummary *h, const char *log) {
    if (h->n_records && strcmp(h->header.target, "cpu") != 0) {
        fprintf(stderr, "tunetop best: %s is a log of target %s; a model runs on the cpu target\n", log,
                h->header.target);
        return 1;
    }
    LogSession list;
    AppModelTasks_session(&bm->mt, bm->path, &list);
    LogSummary_useTasks(h, &list, &bm->other_tasks, &bm->other_records);
    LogSession_done(&list);
    bm->n_ids = bm->mt.n_tasks;
    bm->pick = calloc((size_t)h->n_tasks + 1, sizeof *bm->pick);
    if (!bm->pick) abort();
    for (int i = 0; i < h->n_tasks; i++) {
        const SummaryTask *t = &h->tasks[i];
        bm->records += t->n_records;
        Workload wl;
        char err[TT_ERRLEN];
        Space space;
        Space_init(&space);
        const Record *use;
        if (Workload_parse(t->key, &wl, err) == TT_OK)
            ModelBuild_pick(&wl, LogSummary_bestOfKey(h, t->key), &bm->mt.dev, &space, &bm->pick[i], &use, err);
        Space_done(&space);
    }
    return -1;
}

/* The ID of the task of key i's workload under template tmpl, or -1. */
static int task_id(const LogSummary *h, int i, const Template *tmpl) {
    const SummaryTask *t = tmpl ? LogSummary_findTemplate(h, h->tasks[i].key, tmpl->name) : NULL;
    return t ? (int)(t - h->tasks) : -1;
}

/* Task i runs its own zero-trial default in run --model (no record of its workload the template can rebuild). */
static bool runs_own_default(const BestModel *bm, const LogSummary *h, int i) {
    const ModelBuildTask *p = &bm->pick[i];
    return p->tmpl && !p->tuned && strcmp(p->tmpl->name, h->tasks[i].template_name) == 0;
}

/* Why run --model builds a default config: ModelBuild_pick's reason in best's words. */
static const char *default_why(const ModelBuildTask *p) {
    return strcmp(p->why, "no record") == 0 ? "no successful record of the workload in the log"
                                            : "the log's best of the workload is no record it can rebuild";
}

/* What run --model and export --model build for task i's workload. */
static void print_model_run(const BestModel *bm, const LogSummary *h, int i) {
    const ModelBuildTask *p = &bm->pick[i];
    int id = task_id(h, i, p->tmpl);
    if (!p->tmpl)
        printf("  run       none: no template here for the workload\n");
    else if (id == i && p->tuned)
        printf("  run       `run --model` and `export --model` build this best\n");
    else if (id == i && h->tasks[i].n_records) /* without records the best line said it */
        printf("  run       runs its zero-trial default config (%s)\n", default_why(p));
    else if (id != i && p->tuned)
        printf("  run       `run --model` builds ID %d's best (%s), the workload's fastest\n", id, p->tmpl->name);
    else if (id != i)
        printf("  run       runs ID %d's zero-trial default config (%s; %s)\n", id, p->tmpl->name, default_why(p));
}

/* The model-level lines: the kernels' estimate (weight x the latency of what run --model builds, a workload at
 * its default config left out) and the untuned ops. */
static void print_model_estimate(const BestModel *bm, const LogSummary *h) {
    double est = 0;
    int workloads = 0, left_out = 0;
    for (int i = 0; i < h->n_tasks; i++) {
        if (!first_of_key(h, i)) continue;
        workloads++;
        if (bm->pick[i].tuned && bm->pick[i].latency_s > 0)
            est += h->tasks[i].weight * bm->pick[i].latency_s;
        else
            left_out++;
    }
    printf("\n");
    if (left_out == workloads)
        printf("no estimate: every one of the %d workloads runs its zero-trial default config (no record in the log)\n",
               workloads);
    else
        printf("estimated kernel latency %.4g ms (sum of weight x best latency of what `run --model` builds, over %d "
               "workload%s%s",
               est * 1e3, workloads - left_out, workloads - left_out == 1 ? "" : "s",
               workloads < h->n_tasks ? "; a workload under two templates counts once, the faster" : "");
    if (left_out && left_out < workloads)
        printf("; %d workload%s at %s zero-trial default left out", left_out, left_out == 1 ? "" : "s",
               left_out == 1 ? "its" : "their");
    if (left_out < workloads) printf(")\n");
    printf("untuned ops: %d in %d kind%s", bm->mt.untuned_ops, bm->mt.n_untuned, bm->mt.n_untuned == 1 ? "" : "s");
    for (int i = 0; i < bm->mt.n_untuned; i++)
        printf("%s%s %d", i ? ", " : " (", bm->mt.untuned[i].name, bm->mt.untuned[i].count);
    printf("%s, run by tunetop's op library (not in the estimate)\n", bm->mt.n_untuned ? ")" : "");
}

/* The lines above the tasks of best --model. */
static void print_model_head(const BestModel *bm, const LogSummary *h, const char *log) {
    int with = 0;
    for (int i = 0; i < h->n_tasks; i++)
        with += first_of_key(h, i) && LogSummary_bestOfKey(h, h->tasks[i].key);
    printf("model %s: %d tasks (IDs as `tunetop tasks --model` lists them) for %d workloads, %d with a result in "
           "the log\n",
           bm->path, bm->n_ids, bm->mt.n_workloads, with);
    printf("log %s: target %s, %zu record%s, %ld of them of the model's workloads", log, h->header.target, h->n_records,
           h->n_records == 1 ? "" : "s", bm->records);
    if (bm->other_tasks)
        printf(" (%ld in %d task%s of other workloads, left out)", bm->other_records, bm->other_tasks,
               bm->other_tasks == 1 ? "" : "s");
    printf("\n");
    if (h->n_tasks > bm->n_ids)
        printf("IDs %d to %d: the log's tasks of the model's workloads under templates `tasks --model` does not "
               "list (tune --template)\n",
               bm->n_ids, h->n_tasks - 1);
}

/* Tasks, estimate, as text or JSON (bm: best --model, else NULL); *beyond counts the bests flagged "check". */
static void print_best(const LogSummary *h, const char *path, int json, const BestModel *bm, int *beyond) {
    char this_key[MACHINE_KEY_LEN];
    Machine_cpuKey(this_key, NULL, 0);
    const Target *target = Target_find(h->header.target);
    int family = target ? (int)target->family : -1;
    DeviceInfo dev;
    bool have_dev = log_device(h, &dev);
    if (json) {
        if (json == 2) printf("[");
        for (int i = 0; i < h->n_tasks; i++) {
            if (json == 2 && i) printf(",\n");
            print_task_json(h, i, this_key, family, bm ? &bm->pick[i] : NULL);
            if (json == 1) printf("\n");
        }
        if (json == 2) printf("]\n");
        return;
    }
    if (bm) print_model_head(bm, h, path);
    if (!bm) print_log_head(h, path);
    bool any_pack = false;
    for (int i = 0; i < h->n_tasks; i++) {
        const Record *b = task_best(&h->tasks[i]);
        any_pack = any_pack || (b && b->pack_s > 0 && has_layout_transforms(&h->tasks[i], family));
    }
    if (any_pack)
        printf("latency and speed: the kernel alone (as tuned and shown in the UI); +layout: with the layout "
               "transforms timed apart\n");
    for (int i = 0; i < h->n_tasks; i++) {
        printf("\n");
        const char *none = bm && runs_own_default(bm, h, i) ? "no record: runs its zero-trial default"
                           : bm                             ? "none: no record in the log"
                                                            : "none: not measured yet";
        print_task(h, i, this_key, family, have_dev ? &dev : NULL, beyond, none);
        if (bm) print_model_run(bm, h, i);
    }
    if (h->n_tasks == 0) printf("no records yet\n");
    if (bm)
        print_model_estimate(bm, h);
    else
        print_estimate(h);
}

/* The warnings after the tasks, and the exit status. */
static int best_end(const LogSummary *h, bool verbose, int beyond, const BestModel *bm) {
    int rc = 0;
    if (bm && h->n_records && !bm->records)
        fprintf(stderr,
                "tunetop best: warning: no record of the log is of a workload of %s (a log of another model, or of "
                "other --input-shape / --ops?): every task at its zero-trial default\n",
                bm->path);
    if (beyond)
        fprintf(stderr,
                "tunetop best: warning: %d best%s beyond %gx the %s device's peak estimate (see \"check\" above)\n",
                beyond, beyond == 1 ? " is" : "s are", PEAK_FLAG_MULTIPLE, h->header.target);
    if (verbose && h->unchecked)
        fprintf(stderr,
                "tunetop best: %ld record%s carry no checksum (written before checksums existed): read "
                "unchecked\n",
                h->unchecked, h->unchecked == 1 ? "" : "s");
    else if (verbose && h->n_records && h->end != LOG_DAMAGED)
        fprintf(stderr, "tunetop best: every record's checksum is correct\n");
    else if (verbose && h->n_records)
        fprintf(stderr, "tunetop best: the checksums of the %zu records before the damage are correct\n", h->n_records);
    if (h->unclosed[0]) fprintf(stderr, "tunetop best: warning: %s\n", h->unclosed);
    if (h->end == LOG_TORN) {
        fprintf(stderr, "tunetop best: warning: %s (read up to there; tune --log truncates it on resume)\n",
                h->end_msg);
    } else if (h->end == LOG_DAMAGED) {
        fprintf(stderr, "tunetop best: error: %s (results above are from the records before it)\n", h->end_msg);
        rc = 1;
    }
    return rc;
}

/* tunetop's log (with --model: its records of the model's tasks). */
static int best_log(const char *path, bool verbose, int json, const TaskSelect *sel) {
    BestModel bm;
    memset(&bm, 0, sizeof bm);
    bm.path = sel->model;
    char err[TT_ERRLEN];
    if (sel->model && AppModelTasks_load(&bm.mt, sel, err) != TT_OK) {
        fprintf(stderr, "tunetop best: %s\n", err);
        return 1;
    }
    /* one pass over the log, keeping per task only its best records and counts */
    LogSummary h;
    Status st = LogSummary_load(&h, path, err);
    int rc = -1;
    if (st != TT_OK && h.end != LOG_DAMAGED) {
        fprintf(stderr, "tunetop best: %s\n", err);
        rc = 1;
    }
    if (rc < 0 && sel->model) rc = model_tasks(&bm, &h, path);
    if (rc < 0) {
        int beyond = 0;
        print_best(&h, path, json, sel->model ? &bm : NULL, &beyond);
        fflush(stdout);
        rc = best_end(&h, verbose, beyond, sel->model ? &bm : NULL);
    }
    BestModel_done(&bm);
    LogSummary_done(&h);
    return rc;
}

int cmd_best(int argc, char **argv) {
    const char *path;
    bool verbose = false, tvm_verbose;
    int json = 0;
    TvmFormat fmt;
    TaskSelect sel;
    TaskSelect_init(&sel);
    int rc = parse_args("best", best_usage, argc, argv, &path, &verbose, &json, &fmt, &tvm_verbose, &sel);
    if (rc < 0 && fmt != TVM_FMT_TUNETOP) rc = tvm_best(path, fmt, tvm_verbose);
    if (rc < 0) rc = best_log(path, verbose, json, &sel);
    TaskSelect_done(&sel);
    return rc;
}

int cmd_dump(int argc, char **argv) {
    const char *path;
    bool tvm_verbose;
    TvmFormat fmt;
    int rc = parse_args("dump", dump_usage, argc, argv, &path, NULL, NULL, &fmt, &tvm_verbose, NULL);
    if (rc >= 0) return rc;
    if (fmt != TVM_FMT_TUNETOP) return tvm_dump(path, fmt, tvm_verbose);

    LogReader *rd;
    char err[TT_ERRLEN];
    if (LogReader_open(path, &rd, NULL, err) != TT_OK) {
        fprintf(stderr, "tunetop dump: %s\n", err);
        return 1;
    }
    Record rec;
    Record_init(&rec);
    StrBuf line; /* one buffer for every record's line */
    StrBuf_init(&line);
    LogReadStatus st;
    while ((st = LogReader_next(rd, &rec, err)) == LOG_RECORD) {
        StrBuf_clear(&line);
        Record_appendJson(&rec, &line);
        StrBuf_appendn(&line, "\n", 1);
        fwrite(line.data, 1, line.len, stdout);
    }
    StrBuf_done(&line);
    Record_done(&rec);
    char unclosed[TT_ERRLEN];
    bool open_end = LogReader_unclosedNote(rd, unclosed, sizeof unclosed);
    LogReader_close(rd);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tunetop dump: cannot write the output\n");
        return 1;
    }
    if (open_end) fprintf(stderr, "tunetop dump: warning: %s\n", unclosed);
    if (st == LOG_TORN) {
        fprintf(stderr, "tunetop dump: warning: %s\n", err);
    } else if (st == LOG_DAMAGED) {
        fprintf(stderr, "tunetop dump: error: %s\n", err);
        return 1;
    }
    return 0;
}
