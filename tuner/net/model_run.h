/* tuner/net/model_run.h: `run --model` as a library call: load the model,
 * build its program from a log's best records (model_build.h), compile it,
 * run it on the inputs, check its outputs against the reference executor and
 * time it. The command only parses options into a request and prints the
 * result.
 *
 * The program runs in a child process (a crashing kernel cannot take tunetop
 * down) in a temporary directory that is removed afterwards unless
 * keep_dir is set. */
#ifndef TT_NET_MODEL_RUN_H
#define TT_NET_MODEL_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/target.h"
#include "records/history.h"
#include "tuner/net/model.h"
#include "tuner/net/model_build.h"
#include "tuner/net/model_tasks.h"

#define MODEL_MAX_IO 16

typedef struct ModelRunRequest {
    const char *model_path;
    const char *input_shapes[MODEL_MAX_IO]; /* "NAME=1x3x224x224" */
    int n_input_shapes;
    const char *inputs[MODEL_MAX_IO]; /* "NAME=FILE.npy" or "NAME=FILE.pb" */
    int n_inputs;
    const History *history; /* NULL: every task at its default config */
    const DeviceInfo *dev;
    int threads;            /* OMP_NUM_THREADS of the program (0: the machine's cores) */
    int repeat;             /* timed runs after the checked one */
    bool profile;           /* time every node */
    uint64_t seed;          /* random inputs */
    double rtol;            /* outputs agree when max |got - want| <= rtol * max |want| (and NaN where NaN) */
    const char *output_dir; /* write OUTPUT_NAME.npy there (NULL: not written) */
    const char *keep_dir;   /* build in this directory and keep it (NULL: a temporary one, removed) */
} ModelRunRequest;

typedef struct ModelNodeTime {
    char op[32];
    double ms;       /* mean per run */
    double xform_ms; /* of ms, a Kernel node's layout transforms: pack (or blocked copy) and unpack */
    int task;        /* a Kernel node's task index, else -1 */
} ModelNodeTime;

typedef struct ModelRunResult {
    NetModel model; /* the model as loaded (for names and shapes); NetModel_done in ModelRunResult_done */
    ModelTasks tasks;
    ModelBuildTask *build; /* per task */
    double compile_s;
    double *run_ms; /* repeat entries */
    int n_runs;
    double max_err;       /* max |got - want| / max |want| over every output */
    int worst_output;     /* where max_err is */
    bool matches;         /* every output within rtol */
    ModelNodeTime *nodes; /* profile: one per program node */
    int n_nodes;
    int *node_task; /* per program node: its task index (a Kernel node) or -1 */
    int handoffs;   /* profile: kernel outputs handed to the next kernel blocked, never unpacked */
    int borrowed;   /* profile: handed-over tensors read in the producer's buffer, never copied */
    int n_prog_nodes;
} ModelRunResult;

Status ModelRun_run(const ModelRunRequest *req, ModelRunResult *res, char *err);
void ModelRunResult_done(ModelRunResult *res);

#endif
