/* app/commands.h: one function per subcommand. Each parses its own options,
 * prints its own --help, and returns the process exit code (0 ok, 1 runtime
 * failure, 2 usage error). */
#ifndef TT_APP_COMMANDS_H
#define TT_APP_COMMANDS_H

#include <stdbool.h>

int cmd_tune(int argc, char **argv);    /* app/cmd_tune.c */
int cmd_space(int argc, char **argv);   /* app/cmd_space.c */
int cmd_devices(int argc, char **argv); /* app/cmd_devices.c */
int cmd_best(int argc, char **argv);    /* app/cmd_records.c */
int cmd_dump(int argc, char **argv);    /* app/cmd_records.c */
int cmd_tasks(int argc, char **argv);   /* app/cmd_tasks.c */
int cmd_view(int argc, char **argv);    /* app/cmd_view.c */
int cmd_import(int argc, char **argv);  /* app/cmd_tvm.c */

/* app/cmd_tvm.c: `best` and `dump` on TVM's logs (fmt: a TvmFormat other than tunetop) */
int tvm_best(const char *path, int fmt, bool verbose);
int tvm_dump(const char *path, int fmt, bool verbose);

#endif
