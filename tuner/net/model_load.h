/* tuner/net/model_load.h: an ONNX model ready for tunetop: read, bound and
 * through the passes (passes.h), and its tasks for `tasks` and `tune`. */
#ifndef TT_NET_MODEL_LOAD_H
#define TT_NET_MODEL_LOAD_H

#include "base/status.h"
#include "tuner/net/model.h"
#include "tuner/net/model_tasks.h"
#include "tuner/net/network.h"

/* Reads the model, binds its ops, fixes the input shapes ("NAME=1x3x224x224"),
 * infers shapes, removes Identity and Dropout, folds constants and batch
 * norms, and infers shapes again. On TT_ERR m is left empty. */
Status Model_load(const char *path, const char *const *input_shapes, int n_input_shapes, NetModel *m, char *err);

/* The tasks of a model file as Network_extract gives a built-in network's:
 * *tasks and *untuned malloc'd (free them). op_mask as in NetworkOptions. */
Status Model_extract(const char *path, const char *const *input_shapes, int n_input_shapes, unsigned op_mask,
                     NetworkTask **tasks, int *n_tasks, NetworkUntuned **untuned, int *n_untuned, char *err);

#endif
