/* tuner/net/mprog.h: a model as a standalone C library (export --model) and
 * the program that `run --model` builds from it.
 *
 * The library is the model runtime (N-D tensors, the model file reader, the
 * executor and every op definition: the same sources tunetop runs, carried as
 * text), the tuned kernels (kernels/export: one per task), and NAME.c, which
 * registers op "tunetop.Kernel" so that each node ModelTasks_rewrite made
 * runs its task's kernel:
 *
 *   NAME_ctx *NAME_create(const char *weights_path);   the model file (ModelFile_write)
 *   int NAME_run(NAME_ctx *ctx, const void *const *inputs, void *const *outputs);
 *   void NAME_destroy(NAME_ctx *ctx);
 *   const char *NAME_error(void);                       why create or run failed
 * plus the inputs' and outputs' names, ONNX element types and element counts
 * (NAME_N_INPUTS, NAME_INPUT_NAMES[], NAME_INPUT_TYPES[], NAME_INPUT_COUNTS[],
 * the same for outputs) and a per-node profile. It builds with cmake alone and
 * links libc, libm and OpenMP. */
#ifndef TT_NET_MPROG_H
#define TT_NET_MPROG_H

#include "base/status.h"
#include "kernels/export/export.h"
#include "tuner/net/model.h"

/* Adds the runtime, NAME.h and NAME.c to the bundle. m is the rewritten
 * model (shapes known); task_prefix[t] names the exported kernel of task t,
 * which the caller adds to the bundle. */
Status ModelProg_bundle(ExportBundle *b, const char *name, const NetModel *m, int n_tasks,
                        const char *const *task_prefix, char *err);

/* main.c of the program `run --model` builds around library NAME:
 *   prog MODEL_FILE IN_0.bin ... OUT_DIR REPEAT PROFILE(0/1)
 * reads each input's raw bytes, runs once, writes OUT_DIR/out_K.bin, then
 * times REPEAT runs and prints "run_ms T" per run, and with PROFILE
 * "node_ms I T OP X" per node (the mean over the timed runs, X of it in the
 * node's layout transforms). malloc'd text. */
char *ModelProg_driver(const char *name);

#endif
