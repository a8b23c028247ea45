/* app/app.c: subcommand dispatch and top-level help. */
#include "app/app.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/commands.h"
#include "tt_version.h" /* TT_VERSION, written at build time by cmake/version.cmake */
#include "ui/keys.h"

typedef struct Command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const CmdOptions *options;
} Command;

static const Command COMMANDS[] = {
    {"tune", cmd_tune, "tune tasks (single operators or a network's) on a target, live UI or headless", &TUNE_OPTIONS},
    {"tasks", cmd_tasks, "list the tuning tasks of a built-in network", &TASKS_OPTIONS},
    {"space", cmd_space, "show a task's configuration space: knobs, lengths, total", &SPACE_OPTIONS},
    {"sketches", cmd_sketches, "the sketches of a tensor expression (.te) on a target: rules and steps",
     &SKETCHES_OPTIONS},
    {"best", cmd_best, "best record per task of a log", &BEST_OPTIONS},
    {"dump", cmd_dump, "every record of a log as one JSON object per line", &DUMP_OPTIONS},
    {"export", cmd_export, "the best kernel of each task of a log as source that builds without tunetop",
     &EXPORT_OPTIONS},
    {"distill", cmd_distill, "a new log with only the best N records of each task", &DISTILL_OPTIONS},
    {"view", cmd_view, "open a log (finished or still growing) in the terminal UI, read-only", &VIEW_OPTIONS},
    {"run", cmd_run, "build a network (or an operator) with a log's best configs, check it, time it", &RUN_OPTIONS},
    {"import", cmd_import, "import TVM's AutoTVM records into a tunetop log (seeds the search)", &IMPORT_OPTIONS},
    {"devices", cmd_devices, "what targets this machine has", &DEVICES_OPTIONS},
};

static void usage(FILE *out) {
    fprintf(out, "tunetop " TT_VERSION ": an auto-tuner for tensor kernels with a live terminal front end\n\n"
                 "usage: tunetop COMMAND [options]     (tunetop help COMMAND, or COMMAND -h, for its options)\n\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(out, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(out, "\nexamples:\n"
                 "  tunetop tune --task dense:m=64,n=1024,k=1024 --trials 200 --log dense.log\n"
                 "  tunetop tune --network resnet-18 --trials 2000 --log r18.log\n"
                 "  tunetop best r18.log\n"
                 "\n" EXIT_STATUS_HELP);
}

enum { N_COMMANDS = sizeof COMMANDS / sizeof COMMANDS[0] };

static const Command *find(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, COMMANDS[i].name) == 0) return &COMMANDS[i];
    return NULL;
}

/* Runs a command with -h spelled --help (every command takes both), up to a "--". */
static int run_command(const Command *c, int argc, char **argv) {
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args) abort();
    bool options = true;
    for (int i = 0; i < argc; i++) {
        args[i] = argv[i];
        if (options && strcmp(argv[i], "--") == 0) options = false;
        if (options && i > 0 && strcmp(argv[i], "-h") == 0) args[i] = "--help";
    }
    int rc = c->run(argc, args);
    free(args);
    return rc;
}

/* `tunetop help [COMMAND]` */
static int help(int argc, char **argv) {
    if (argc < 3) {
        usage(stdout);
        return 0;
    }
    const Command *c = find(argv[2]);
    if (!c || argc > 3) {
        fprintf(stderr, "tunetop help: %s '%s' (try tunetop --help)\n",
                c ? "one command at a time, not" : "unknown command", c ? argv[3] : argv[2]);
        return 2;
    }
    char *args[] = {argv[2], "--help", NULL};
    return c->run(2, args);
}

/* `tunetop --options COMMAND`: the options it accepts, for the completion (cmake/docs.cmake) */
static int options(int argc, char **argv) {
    const Command *c = argc == 3 ? find(argv[2]) : NULL;
    if (!c) {
        fprintf(stderr, "tunetop --options: give one command\n");
        return 2;
    }
    Cli_printOptions(c->options, stdout);
    return 0;
}

/* `tunetop --keys`: the UI's key table, "KEY<TAB>what it does" (for the man page) */
static int keys(void) {
    int n;
    const UiKey *k = UiKeys_table(&n);
    for (int i = 0; i < n; i++)
        if (k[i].name && k[i].help) printf("%s\t%s\n", k[i].name, k[i].help);
    return 0;
}

int app_main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "help") == 0) return help(argc, argv);
    if (strcmp(cmd, "--options") == 0) return options(argc, argv);
    if (strcmp(cmd, "--keys") == 0) return keys();
    if (strcmp(cmd, "--version") == 0) {
        printf("tunetop " TT_VERSION "\n");
        return 0;
    }
    const Command *c = find(cmd);
    if (c) return run_command(c, argc - 1, argv + 1);
    fprintf(stderr, "tunetop: unknown command '%s' (try tunetop --help)\n", cmd);
    return 2;
}
