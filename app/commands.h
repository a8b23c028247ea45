/* app/commands.h: one function per subcommand. Each parses its own options,
 * prints its own --help, and returns the process exit code (0 ok, 1 runtime
 * failure, 2 usage error, with a "tunetop CMD: " line). */
#ifndef TT_APP_COMMANDS_H
#define TT_APP_COMMANDS_H

#include "app/cli.h"

/* Exit statuses of every command (documented in `tunetop --help`, `tunetop
 * tune --help` and the README): 0 done, 1 error, 2 usage error, 3 the record
 * log could not be written (the records in it are kept; results measured
 * after the failure were lost), 128 + N stopped by signal N (130 Ctrl-C, 143 SIGTERM). */
enum { EXIT_DONE = 0, EXIT_ERROR = 1, EXIT_USAGE = 2, EXIT_LOG_FAILED = 3 };
#define EXIT_STATUS_HELP                                                                                               \
    "exit status: 0 done, 1 error, 2 usage error, 3 the record log could not be written (the records in it\n"          \
    "are kept, the results measured after the failure were lost), 130/143 stopped by Ctrl-C/SIGTERM\n"

/* Each command's options (app/cli.h), beside the command. */
extern const CmdOptions TUNE_OPTIONS, TASKS_OPTIONS, SPACE_OPTIONS, SKETCHES_OPTIONS, BEST_OPTIONS, DUMP_OPTIONS,
    EXPORT_OPTIONS, DISTILL_OPTIONS, VIEW_OPTIONS, RUN_OPTIONS, IMPORT_OPTIONS, DEVICES_OPTIONS;

int cmd_tune(int argc, char **argv);    /* app/cmd_tune.c */
int cmd_space(int argc, char **argv);   /* app/cmd_space.c */
int cmd_devices(int argc, char **argv); /* app/cmd_devices.c */
int cmd_best(int argc, char **argv);    /* app/cmd_records.c */
int cmd_dump(int argc, char **argv);    /* app/cmd_records.c */
int cmd_tasks(int argc, char **argv);   /* app/cmd_tasks.c */
int cmd_view(int argc, char **argv);    /* app/cmd_view.c */
int cmd_run(int argc, char **argv);     /* app/cmd_run.c */
/* app/cmd_model.c: run and export of an ONNX model (--model), which cmd_run and cmd_export hand over to */
int cmd_run_model(int argc, char **argv);
int cmd_export_model(int argc, char **argv);
bool app_names_model(int argc, char **argv); /* an argument is --model */
int cmd_import(int argc, char **argv);       /* app/cmd_tvm.c */
int cmd_export(int argc, char **argv);       /* app/cmd_export.c */
int cmd_distill(int argc, char **argv);      /* app/cmd_distill.c */
int cmd_sketches(int argc, char **argv);     /* app/cmd_sketch.c */

#endif
