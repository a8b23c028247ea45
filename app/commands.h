/* app/commands.h: one function per subcommand. Each parses its own options,
 * prints its own --help, and returns the process exit code (0 ok, 1 runtime
 * failure, 2 usage error). */
#ifndef TT_APP_COMMANDS_H
#define TT_APP_COMMANDS_H

int cmd_tune(int argc, char **argv);    /* app/cmd_tune.c */
int cmd_space(int argc, char **argv);   /* app/cmd_space.c */
int cmd_devices(int argc, char **argv); /* app/cmd_devices.c */
int cmd_best(int argc, char **argv);    /* app/cmd_records.c */
int cmd_dump(int argc, char **argv);    /* app/cmd_records.c */
int cmd_tasks(int argc, char **argv);   /* app/cmd_tasks.c */
int cmd_view(int argc, char **argv);    /* app/cmd_view.c */
int cmd_run(int argc, char **argv);     /* app/cmd_run.c */

#endif
