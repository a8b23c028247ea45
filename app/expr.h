/* app/expr.h: the tensor-expression (.te) side of the commands. */
#ifndef TT_APP_EXPR_H
#define TT_APP_EXPR_H

#include "base/status.h"
#include "te/te.h"

#define APP_MAX_SETS 32

/* Parses a --set argument "NAME=VALUE"; out->name is allocated (the caller frees it). */
Status app_parse_set(const char *arg, TeSet *out, char *err);

/* `tunetop tasks --expr PATH`: prints the DAG; returns the exit code (2 and one
 * "file:line:col: ..." line on stderr for bad input). */
int app_tasks_expr(const char *path, const TeSet *sets, int n_sets);

/* `tunetop run --expr PATH [--log LOG]` (app/cmd_run_expr.c): the expression's best schedule in the log
 * (without a log, or with no successful record, the zero-trial default) built by the cpu target, run
 * in the measurement worker on its random inputs, checked against the expression interpreter and
 * timed. */
typedef struct ExprRun {
    const char *path;
    const TeSet *sets;
    int n_sets;
    const char *log; /* NULL: no log, the zero-trial default schedule */
    const char *target;
    int number, repeat, min_repeat_ms, threads, timeout_s;
} ExprRun;

/* Prints the outcome; returns the exit code (1 and one "tunetop run: ..." line on failure, 2 for a bad .te). */
int app_run_expr(const ExprRun *r);

#endif
