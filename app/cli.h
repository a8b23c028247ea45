/* app/cli.h: the grammar every subcommand shares.
 *
 * - Each command describes its options once, as a CmdOptions: its own long
 *   options plus the task-selection options it takes (TaskSelect below).
 *   Cli_longopts merges them for getopt_long; `tunetop --options CMD` (used by
 *   cmake/docs.cmake for the completion) prints the same table, so the
 *   completion offers exactly what the command accepts.
 * - An option whose val carries OPT_HIDDEN is accepted but not offered: a
 *   deprecated spelling. The command masks the bit off (OPT_VAL).
 * - app_help prints a help text with every line at most CLI_HELP_COLS wide.
 *
 * TaskSelect: which tasks a command works on (--task, --network and the
 * network's shape, --expr with --set, --subgraphs, --model). One parser for
 * tune, tasks, run and export, and for best's and view's --model; one more
 * selection option is one more SEL_ bit, one table row and one case in
 * TaskSelect_parse. */
#ifndef TT_APP_CLI_H
#define TT_APP_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "app/expr.h"
#include "base/status.h"
#include "tuner/net/network.h"

#define CLI_HELP_COLS 100
#define OPT_HIDDEN 0x100000
#define OPT_VAL(c) ((c) & ~OPT_HIDDEN)
#define CLI_MAX_OPTS 96

/* the task-selection options, as bits of CmdOptions.select */
enum {
    SEL_TASK = 1u << 0,         /* --task SPEC (repeatable) */
    SEL_NETWORK = 1u << 1,      /* --network NAME */
    SEL_BATCH_SIZE = 1u << 2,   /* --batch-size B (the network's batch) */
    SEL_LAYOUT = 1u << 3,       /* --layout NCHW|NHWC */
    SEL_IMAGE_SIZE = 1u << 4,   /* --image-size S */
    SEL_SEQ_LEN = 1u << 5,      /* --seq-len L */
    SEL_OPS = 1u << 6,          /* --ops LIST */
    SEL_EXPR = 1u << 7,         /* --expr FILE.te (repeatable) */
    SEL_SET = 1u << 8,          /* --set NAME=VALUE (repeatable) */
    SEL_SUBGRAPHS = 1u << 9,    /* --subgraphs */
    SEL_BATCH_ALIAS = 1u << 10, /* --batch B, hidden: the old spelling of --batch-size */
    SEL_MODEL = 1u << 11,       /* --model FILE.onnx */
    SEL_INPUT_SHAPE = 1u << 12  /* --input-shape NAME=DIMS (repeatable): a symbolic input dimension fixed */
};
#define SEL_SHAPE (SEL_BATCH_SIZE | SEL_LAYOUT | SEL_IMAGE_SIZE | SEL_SEQ_LEN | SEL_OPS)
/* getopt vals of the selection options: SEL_VAL_BASE + the bit's index */
#define SEL_VAL_BASE 0x8000

typedef struct CmdOptions {
    const char *name;         /* the command */
    const struct option *own; /* its own options, terminated by a zero entry */
    unsigned select;          /* SEL_ bits it takes */
} CmdOptions;

typedef struct TaskSelect {
    const char *specs[APP_MAX_SETS]; /* --task */
    int n_specs;
    const char *network;
    NetworkOptions nopt; /* --batch-size, --layout, --image-size, --seq-len, --ops (parsed) */
    const char *ops;     /* --ops as given */
    const char *exprs[APP_MAX_SETS];
    int n_exprs;
    TeSet sets[APP_MAX_SETS]; /* --set; the names are owned (TaskSelect_done) */
    int n_sets;
    bool subgraphs;
    const char *model; /* --model */
    const char *input_shapes[APP_MAX_SETS];
    int n_input_shapes;
    unsigned given; /* SEL_ bits of the options the command line held */
} TaskSelect;

void TaskSelect_init(TaskSelect *this);
void TaskSelect_done(TaskSelect *this);
/* Handles getopt's c when it is a selection option: returns true, with *st
 * TT_ERR and err set when its value is bad. False: not a selection option. */
bool TaskSelect_parse(TaskSelect *this, int c, const char *arg, Status *st, char *err);
/* The --batch-size, --layout, ... options given ("" when none), to name them in a usage error. */
const char *TaskSelect_shapeGiven(const TaskSelect *this, char *buf, size_t n);

/* The merged getopt table of a command (own options first); returns the count. */
int Cli_longopts(const CmdOptions *co, struct option *out, int cap);
/* `tunetop --options CMD`: one line per offered option, "--NAME<TAB>VALUES", where
 * VALUES is "-" (no value), "@file", "@dir", "" (a value, nothing to offer) or a
 * space-separated list of words. */
void Cli_printOptions(const CmdOptions *co, FILE *out);

/* The usual getopt complaints in the command's words: unknown option, missing value. */
void Cli_badOption(const char *cmd, int c, char **argv, char *err);

/* printf to out, then every line longer than CLI_HELP_COLS is wrapped at a
 * space, continuing under the text of an option line ("  --opt X   text"). */
void app_help(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
