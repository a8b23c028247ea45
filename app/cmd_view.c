/* app/cmd_view.c: `tunetop view LOG`: the terminal UI over a record log,
 * read-only, following the file while another session appends to it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "records/tvmlog.h"
#include "ui/ui.h"

static volatile int view_stop;

static void on_sigint(int sig) {
    (void)sig;
    view_stop = 1;
}

static void usage(FILE *out) {
    fprintf(out, "usage: tunetop view [--no-color] [--refresh HZ] [--follow|--no-follow] [--format F] LOG\n"
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
                 "  -h, --help    this help\n"
                 "\n"
                 "Keys: ? in the view lists them. Exit status: 0, 1 when the log cannot be\n"
                 "read, 2 for a usage error.\n");
}

int cmd_view(int argc, char **argv) {
    UiOptions opt;
    UiOptions_defaults(&opt);
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--no-color") == 0) {
            opt.color = false;
        } else if (strcmp(a, "--follow") == 0) {
            opt.no_follow = false;
        } else if (strcmp(a, "--no-follow") == 0) {
            opt.no_follow = true;
        } else if (strcmp(a, "--format") == 0 && i + 1 < argc) {
            TvmFormat f;
            char err[TT_ERRLEN];
            if (TvmFormat_parse(argv[++i], &f, err) != TT_OK) {
                fprintf(stderr, "tunetop view: %s\n", err);
                return 2;
            }
            opt.log_format = (int)f;
        } else if (strcmp(a, "--refresh") == 0 && i + 1 < argc) {
            int hz = atoi(argv[++i]);
            if (hz < 1 || hz > 60) {
                fprintf(stderr, "tunetop view: --refresh wants 1..60, not %s\n", argv[i]);
                return 2;
            }
            opt.refresh_hz = hz;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tunetop view: unknown option %s (see tunetop view --help)\n", a);
            return 2;
        } else if (path) {
            fprintf(stderr, "tunetop view: one log at a time (got %s and %s)\n", path, a);
            return 2;
        } else {
            path = a;
        }
    }
    if (!path) {
        fprintf(stderr, "tunetop view: which log? (usage: tunetop view LOG)\n");
        return 2;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    int code = Ui_runView(path, &opt, &view_stop);
    sigaction(SIGINT, &old, NULL);
    return code;
}
