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

#endif
