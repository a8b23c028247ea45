/* kernels/templates/te/te_task.h: a tensor expression as a tuning task.
 *
 * `tune --expr FILE.te` loads the program into a TeTask and describes it by a
 * Workload of kind OP_EXPR whose `expr` points here, so that the task, the
 * runner, the worker, the records, `best` and `view` treat it like any other
 * workload. The candidates come from the template "te.cpu" (registered with
 * the others in kernels/registry.c): its space is the numbers of random
 * schedules, 0..TE_SAMPLES-1; candidate n is the schedule TeSchedule_sample
 * draws from a generator seeded with n, lowered to a loop nest and emitted as
 * C in the cpu ABI (kernels/targets/cpu/abi.h). Its step list goes into the
 * KernelSource and from there into the record ("steps"), which replays it.
 * The template "te.gpu" does the same for the opencl and cuda targets with the
 * gpu sampler (bound loops; on cuda for one-stage expressions, TeTask_gpu_fits).
 *
 * Arguments (kernels/workload.h's convention): the program's inputs in file
 * order, then its one output. Intermediate tensors live in the kernel's own
 * scratch (allocated by tt_setup, not timed). The reference is the
 * interpreter (te/eval.c, double accumulation). */
#ifndef TT_KERNELS_TE_TASK_H
#define TT_KERNELS_TE_TASK_H

#include <stdint.h>

#include "base/status.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "space/steps.h"
#include "te/dag.h"

#define TE_SAMPLES (1u << 20) /* schedules a task's space numbers */

struct TeSchedTable;

typedef struct TeTask {
    TeProgram *prog;
    TeDag dag;
    int out; /* the output tensor */
    int n_in;
    int in[WORKLOAD_MAX_ARGS];  /* the input tensors, in file order */
    struct TeSchedTable *table; /* the schedule candidates of te.sketch (below) */
} TeTask;

/* Loads and checks path (with --set overrides) for tuning and fills *wl
 * (OP_EXPR, pointing at the new task). One "file:line:col: ..." sentence (or
 * "file: ...") on error: a parse error, more than one output, more than
 * WORKLOAD_MAX_ARGS - 1 inputs. */
Status TeTask_load(const char *path, const TeSet *sets, int n_sets, TeTask **out, Workload *wl, char *err);
/* The same for a program's text (no --set), named `name` in messages and in
 * the workload (up to its first '.', ',', ':', '=' or space), e.g. a network's subgraph. */
Status TeTask_fromText(const char *text, const char *name, TeTask **out, Workload *wl, char *err);
void TeTask_delete(TeTask *this);

/* Workload_args of the task (names are the program's tensor names). */
int TeTask_args(const TeTask *this, ArgInfo *args);
/* Rounds f16 inputs in place, evaluates the program in double and writes the
 * output (rounded to float) into args[last]. */
Status TeTask_reference(const TeTask *this, float **args, char *err); /* TT_ERR: out of memory, naming the tensor */

/* The schedule numbered `sample` (the same number gives the same steps). */
void TeTask_sample(const TeTask *this, uint64_t sample, Steps *out);
/* A complete cpu-ABI translation unit for steps into out (source, entry, and
 * the steps' text in out->steps). TT_ERR names the step that does not apply. */
Status TeTask_source(const TeTask *this, const Steps *steps, KernelSource *out, char *err);
/* The zero-trial default schedule on a cpu like dev (its cores and vector
 * width): the first sketch with the heuristic's annotation, what `run` and
 * `export` build when a log has no successful record of the task. */
void TeTask_defaultSteps(const TeTask *this, const DeviceInfo *dev, Steps *out);

/* TT_OK when the task can be tuned on a GPU target: on opencl any (a program
 * of several kernels starts with its launch plan, kernels/targets/launch_plan.h:
 * intermediates are scratch buffers); on cuda one that defines one tensor,
 * its output, declared after its inputs (the cuda worker launches one kernel
 * on the inputs and the output). Else one sentence naming the file. */
Status TeTask_gpu_fits(const TeTask *this, Dialect dialect, char *err);
/* OpenCL (dialect DIALECT_OPENCL) or CUDA source of steps as one kernel with
 * its launch shape in out->grid/block and the steps' text in out->steps. Fails
 * (one sentence) when the task does not fit a GPU or the schedule needs more
 * than one kernel launch. */
Status TeTask_source_gpu(const TeTask *this, const Steps *steps, Dialect dialect, KernelSource *out, char *err);

/* ---- schedule candidates (the template te.sketch) ----------------------------
 * A candidate of te.sketch is a step list, not a number: the sketch search
 * (kernels/templates/te/te_sketch.h, tuner/search/strategy_evolution.c) makes them.
 * Its config index is TeSched_index of the steps' text (a 40-bit hash, so the
 * same schedule found twice is one candidate, measured once), and the task's
 * table maps the indices it has seen to their steps. The record of a
 * candidate holds the steps; on resume the engine gives them back to the
 * table (the template's `adopt`), so every measured schedule is known again
 * and none is measured twice. The table is shared by the engine thread (which
 * adds) and the builder threads (which look up): it locks. */
#define TE_SCHED_BITS 40
uint64_t TeSched_index(const char *steps_text);
/* Adds steps made from sketch number `sketch` (-1: not known) and gives its
 * index. TT_ERR only when different steps already have that index (a hash
 * collision: the caller drops the candidate). Adding the same steps again
 * keeps the first entry. */
Status TeTask_addSchedule(const TeTask *this, const Steps *steps, int sketch, uint64_t *index, char *err);
/* The steps and sketch number (may be NULL) of index; false when the table
 * does not hold it. */
bool TeTask_schedule(const TeTask *this, uint64_t index, Steps *out, int *sketch);
/* Entries in the table. */
int TeTask_scheduleCount(const TeTask *this);
/* The config text of a te.sketch candidate: "sketch 1, schedule 00a3f29c1e". */
void TeSched_label(uint64_t index, int sketch, char *buf, size_t n);

extern const Template tmpl_te_cpu, tmpl_te_gpu, tmpl_te_sketch, tmpl_te_sketch_gpu;

#endif
