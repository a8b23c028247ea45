/* app/app.c: subcommand dispatch and top-level help. */
#include "app/app.h"

#include <stdio.h>
#include <string.h>

#include "app/commands.h"
#include "tt_version.h" /* TT_VERSION, written at build time by cmake/version.cmake */

typedef struct Command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} Command;

static const Command COMMANDS[] = {
    {"tune", cmd_tune, "tune tasks (single operators or a network's) on a target, live UI or headless"},
    {"tasks", cmd_tasks, "list the tuning tasks of a built-in network"},
    {"space", cmd_space, "show a task's configuration space: knobs, lengths, total"},
    {"sketches", cmd_sketches, "the sketches of a tensor expression (.te) on a target: rules and steps"},
    {"best", cmd_best, "best record per task of a log"},
    {"dump", cmd_dump, "every record of a log as one JSON object per line"},
    {"export", cmd_export, "the best kernel of each task of a log as source that builds without tunetop"},
    {"distill", cmd_distill, "a new log with only the best N records of each task"},
    {"view", cmd_view, "open a log (finished or still growing) in the terminal UI, read-only"},
    {"run", cmd_run, "build a network (or an operator) with a log's best configs, check it, time it"},
    {"import", cmd_import, "import TVM's AutoTVM records into a tunetop log (seeds the search)"},
    {"devices", cmd_devices, "what targets this machine has"},
};

static void usage(FILE *out) {
    fprintf(out, "tunetop " TT_VERSION ": an auto-tuner for tensor kernels with a live terminal front end\n\n"
                 "usage: tunetop COMMAND [options]     (tunetop COMMAND --help for its options)\n\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(out, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(out, "\nexamples:\n"
                 "  tunetop tune --task dense:m=64,n=1024,k=1024 --trials 200 --log dense.log\n"
                 "  tunetop tune --network resnet-18 --trials 2000 --log r18.log\n"
                 "  tunetop best r18.log\n"
                 "\n" EXIT_STATUS_HELP);
}

int app_main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("tunetop " TT_VERSION "\n");
        return 0;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(cmd, COMMANDS[i].name) == 0) return COMMANDS[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tunetop: unknown command '%s' (try tunetop --help)\n", cmd);
    return 2;
}
