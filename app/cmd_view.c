/* app/cmd_view.c: `tunetop view LOG`: the terminal UI over a record log,
 * read-only, following the file while another session appends to it. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/model.h"
#include "app/opts.h"
#include "records/log.h"
#include "records/tvmlog.h"
#include "ui/ui.h"

static volatile int view_stop;

static void on_sigint(int sig) {
    (void)sig;
    view_stop = 1;
}

static void usage(FILE *out) {
    app_help(out, "usage: tunetop view [--no-color] [--refresh HZ] [--follow|--no-follow] [--format F] LOG\n"
                  "       tunetop view --model FILE.onnx [--input-shape NAME=DIMS ...] [--ops LIST] [options] LOG\n"
                  "\n"
                  "Shows a record log in the terminal UI: the scheduler table, the GFLOPS\n"
                  "curves and the error inspector, as during a session but read-only. The\n"
                  "view follows the log while another session appends to it.\n"
                  "\n"
                  "  --no-color    monochrome (also when NO_COLOR is set)\n"
                  "  --refresh HZ  frames per second (default 10)\n"
                  "  --follow      follow the log as another program appends to it (the default); an\n"
                  "                unfinished last line is waited for\n"
                  "  --no-follow   read the log once\n"
                  "  --format F    tunetop|autotvm|autoscheduler|metaschedule (default: from the content);\n"
                  "                LOG may be a TVM record file or a MetaSchedule work directory, whose\n"
                  "                latencies TVM measured where the log was written\n"
                  "  --model FILE.onnx  the table's rows are the model's tasks, with the IDs, order and\n"
                  "                     weights `tunetop tasks --model FILE.onnx` lists (a task without a\n"
                  "                     record: 0 trials), so the estimate covers the whole model; the log's\n"
                  "                     records of other workloads are not shown (counted on the status\n"
                  "                     line). For tunetop's logs of the cpu target.\n"
                  "  --input-shape NAME=DIMS  with --model: fixes a symbolic input dimension\n"
                  "  --ops LIST    with --model: only these ops' tasks, as tune --model --ops LIST\n"
                  "  -h, --help    this help\n"
                  "\n"
                  "Keys: ? in the view lists them. Exit status: 0, 1 when the log cannot be\n"
                  "read, 2 for a usage error.\n");
}

enum { O_NO_COLOR = 256, O_FOLLOW, O_NO_FOLLOW, O_FORMAT, O_REFRESH, O_HELP };
static const struct option OWN[] = {{"no-color", no_argument, 0, O_NO_COLOR},
                                    {"follow", no_argument, 0, O_FOLLOW},
                                    {"no-follow", no_argument, 0, O_NO_FOLLOW},
                                    {"format", required_argument, 0, O_FORMAT},
                                    {"refresh", required_argument, 0, O_REFRESH},
                                    {"help", no_argument, 0, O_HELP},
                                    {0, 0, 0, 0}};
const CmdOptions VIEW_OPTIONS = {"view", OWN, SEL_MODEL | SEL_INPUT_SHAPE | SEL_OPS};

/* --model and what goes with it; -1 to go on, else the exit code (said). */
static int check_model(const TaskSelect *sel, const UiOptions *opt, const char *path) {
    if (!sel->given) return -1;
    char err[TT_ERRLEN];
    if (!sel->model) {
        fprintf(stderr, "tunetop view: --input-shape and --ops go with --model FILE.onnx (see tunetop view --help)\n");
        return 2;
    }
    if (!sel->model[0]) {
        fprintf(stderr, "tunetop view: --model needs FILE.onnx\n");
        return 2;
    }
    TvmFormat fmt = (TvmFormat)opt->log_format;
    if (fmt == TVM_FMT_UNKNOWN && TvmLog_detect(path, &fmt, err) != TT_OK) {
        fprintf(stderr, "tunetop view: %s\n", err);
        return 1;
    }
    if (fmt != TVM_FMT_TUNETOP) {
        fprintf(stderr, "tunetop view: --model reads a log of tunetop's (`tune --model`), not %s's\n",
                TvmFormat_name(fmt));
        return 2;
    }
    LogReader *r;
    LogHeader h;
    if (LogReader_open(path, &r, &h, err) != TT_OK) {
        fprintf(stderr, "tunetop view: %s\n", err);
        return 1;
    }
    LogReader_close(r);
    if (strcmp(h.target, "cpu") != 0) {
        fprintf(stderr, "tunetop view: %s is a log of target %s; a model runs on the cpu target\n", path, h.target);
        return 1;
    }
    return -1;
}

/* The options into opt, sel and *path; -1 to go on, else the exit code. */
static int parse(int argc, char **argv, UiOptions *opt, TaskSelect *sel, const char **path) {
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&VIEW_OPTIONS, longopts, CLI_MAX_OPTS);
    char err[TT_ERRLEN];
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        TvmFormat f;
        Status st = TT_OK;
        if (TaskSelect_parse(sel, OPT_VAL(c), optarg, &st, err)) {
            if (st == TT_OK) continue;
            fprintf(stderr, "tunetop view: %s\n", err);
            return 2;
        }
        switch (c) {
        case O_HELP:
            usage(stdout);
            return 0;
        case O_NO_COLOR:
            opt->color = false;
            break;
        case O_FOLLOW:
        case O_NO_FOLLOW:
            opt->no_follow = c == O_NO_FOLLOW;
            break;
        case O_FORMAT:
            if (TvmFormat_parse(optarg, &f, err) != TT_OK) {
                fprintf(stderr, "tunetop view: %s\n", err);
                return 2;
            }
            opt->log_format = (int)f;
            break;
        case O_REFRESH:
            if (opt_int(optarg, "--refresh", 1, 60, &opt->refresh_hz, err) != TT_OK) {
                fprintf(stderr, "tunetop view: %s\n", err);
                return 2;
            }
            break;
        default:
            Cli_badOption("view", c, argv, err);
            fprintf(stderr, "tunetop view: %s\n", err);
            return 2;
        }
    }
    if (optind + 1 < argc) {
        fprintf(stderr, "tunetop view: one log at a time (got %s and %s)\n", argv[optind], argv[optind + 1]);
        return 2;
    }
    if (optind == argc) {
        fprintf(stderr, "tunetop view: which log? (usage: tunetop view LOG)\n");
        return 2;
    }
    *path = argv[optind];
    return check_model(sel, opt, *path);
}

/* The UI over the log (opt->tasks: the model's tasks, or NULL). */
static int view(const char *path, const UiOptions *opt) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    int code = Ui_runView(path, opt, &view_stop);
    sigaction(SIGINT, &old, NULL);
    return code;
}

int cmd_view(int argc, char **argv) {
    UiOptions opt;
    UiOptions_defaults(&opt);
    TaskSelect sel;
    TaskSelect_init(&sel);
    const char *path = NULL;
    int rc = parse(argc, argv, &opt, &sel, &path);
    AppModelTasks mt;
    memset(&mt, 0, sizeof mt);
    LogSession list;
    LogSession_init(&list);
    char err[TT_ERRLEN];
    if (rc < 0 && sel.model && AppModelTasks_load(&mt, &sel, err) != TT_OK) {
        fprintf(stderr, "tunetop view: %s\n", err);
        rc = 1;
    }
    if (rc < 0 && sel.model) {
        AppModelTasks_session(&mt, sel.model, &list);
        opt.tasks = &list;
    }
    if (rc < 0) rc = view(path, &opt);
    LogSession_done(&list);
    AppModelTasks_done(&mt);
    TaskSelect_done(&sel);
    return rc;
}
