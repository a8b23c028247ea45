/* tuner/net/exec.h: the reference executor of the general graph.
 *
 * NetExec_run runs a bound, sorted NetModel (NetModel_bind, NetModel_sort)
 * node by node with each op's run (ops/op.h). A value lives only while a
 * later node reads it: it is freed after its last reader, unless it is a
 * graph output. Constants are read in place from the model.
 *
 * Ownership: the inputs are borrowed; the outputs are written into
 * outputs[0..m->n_outputs), which must be empty NdTensors, and belong to the
 * caller (NdTensor_free each) on TT_OK; on TT_ERR they are left empty.
 * Errors name the node ("node 'X' (Reshape): ..."). */
#ifndef TT_NET_EXEC_H
#define TT_NET_EXEC_H

#include "base/status.h"
#include "tuner/net/model.h"
#include "tuner/net/nd.h"

/* inputs: one tensor per graph input, in m->inputs' order. Each must have the
 * input's element type, and its shape must agree with the dimensions the
 * model fixes (a symbolic or unknown dimension takes any size). */
Status NetExec_run(const NetModel *m, const NdTensor *inputs, int n_inputs, NdTensor *outputs, char *err);

typedef struct NetExecOptions {
    void *user;           /* handed to every op as OpCtx.user (a program's kernels find their state there) */
    double *node_seconds; /* NULL, or m->n_nodes entries: each node's run time is added to its entry */
} NetExecOptions;

/* NetExec_run with options (o may be NULL). */
Status NetExec_runWith(const NetModel *m, const NdTensor *inputs, int n_inputs, NdTensor *outputs,
                       const NetExecOptions *o, char *err);

#endif
