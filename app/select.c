/* app/select.c: the task-selection options (TaskSelect, app/cli.h): one parser
 * for tune, tasks, run and export, and best's and view's --model. */
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "app/opts.h"

void TaskSelect_init(TaskSelect *this) {
    memset(this, 0, sizeof *this);
    NetworkOptions_defaults(&this->nopt);
}

void TaskSelect_done(TaskSelect *this) {
    for (int i = 0; i < this->n_sets; i++)
        free((char *)this->sets[i].name);
    this->n_sets = 0;
}

static Status add_arg(const char **list, int *n, const char *arg, const char *name, char *err) {
    if (*n == APP_MAX_SETS) return tt_fail(err, "--%s: at most %d", name, APP_MAX_SETS);
    list[(*n)++] = arg;
    return TT_OK;
}

bool TaskSelect_parse(TaskSelect *this, int c, const char *arg, Status *st, char *err) {
    if (c < SEL_VAL_BASE || c >= SEL_VAL_BASE + 16) return false;
    unsigned bit = 1u << (c - SEL_VAL_BASE);
    if (bit == SEL_BATCH_ALIAS) bit = SEL_BATCH_SIZE;
    this->given |= bit;
    *st = TT_OK;
    switch (bit) {
    case SEL_TASK:
        *st = add_arg(this->specs, &this->n_specs, arg, "task", err);
        break;
    case SEL_NETWORK:
        this->network = arg;
        break;
    case SEL_BATCH_SIZE:
        *st = opt_int(arg, "--batch-size", 1, 4096, &this->nopt.batch, err);
        break;
    case SEL_LAYOUT:
        *st = opt_layout(arg, &this->nopt.layout, err);
        break;
    case SEL_IMAGE_SIZE:
        *st = opt_int(arg, "--image-size", 8, 4096, &this->nopt.image_size, err);
        break;
    case SEL_SEQ_LEN:
        *st = opt_int(arg, "--seq-len", 1, 65536, &this->nopt.seq_len, err);
        break;
    case SEL_OPS:
        this->ops = arg;
        *st = Network_parseOps(arg, &this->nopt.op_mask, err);
        break;
    case SEL_EXPR:
        *st = add_arg(this->exprs, &this->n_exprs, arg, "expr", err);
        break;
    case SEL_SET:
        if (this->n_sets == APP_MAX_SETS)
            *st = tt_fail(err, "--set: at most %d", APP_MAX_SETS);
        else if ((*st = app_parse_set(arg, &this->sets[this->n_sets], err)) == TT_OK)
            this->n_sets++;
        break;
    case SEL_SUBGRAPHS:
        this->subgraphs = true;
        break;
    case SEL_MODEL:
        this->model = arg;
        break;
    case SEL_INPUT_SHAPE:
        if (!strchr(arg, '='))
            *st = tt_fail(err, "--input-shape %s: give NAME=DIMS, e.g. input=1x3x224x224", arg);
        else
            *st = add_arg(this->input_shapes, &this->n_input_shapes, arg, "input-shape", err);
        break;
    default:
        break;
    }
    return true;
}
