/* tuner/net/subgraph.h: a network graph partitioned into subgraphs, each a
 * tensor expression tuned without templates (`--subgraphs`).
 *
 * The partition follows the auto-scheduler's fusion: every op that is not
 * elementwise heads a subgraph (an anchor: conv2d, depthwise, dense,
 * batch_matmul; or a reduction or data movement of its own: pooling, global
 * average pooling, softmax, layer-norm, concat, flatten, the attention's head
 * reshapes), and its elementwise consumers (bias_add, batch-norm as a
 * scale and shift, relu, clip, gelu, scale, a residual add, the attention
 * mask) join it while each is the only reader of the tensor before it. An
 * elementwise op that cannot join (it reads the graph input, or a tensor that
 * has other readers) heads a subgraph of its own and takes its own chain.
 * Layout ops (flatten, head reshapes) take no chain: their output is a view.
 * So every op of the graph is in exactly one subgraph, only a subgraph's last
 * tensor is read outside it, and the subgraphs run in the order of their
 * last ops.
 *
 * Each subgraph is written as a `.te` program (te/te.h): its inputs are the
 * graph tensors it reads and the ops' parameters (weights, bias, batch-norm
 * scale and shift, layer-norm gamma and beta, the attention mask), one stage
 * per op, the last stage its output, all in NCHW as the graph's data. Two
 * subgraphs with the same compute DAG key (te/dag.h: the same computation
 * whatever the names) are one task whose weight is the number of
 * occurrences; the task's expression is named "sgK-KIND" (K its index). */
#ifndef TT_TUNER_SUBGRAPH_H
#define TT_TUNER_SUBGRAPH_H

#include <stdint.h>

#include "base/status.h"
#include "tuner/net/graph.h"

#define SUBGRAPH_MAX_IN 7 /* WORKLOAD_MAX_ARGS - 1: inputs of a te task */

/* One input of a subgraph's expression: a graph tensor (param < 0) or
 * parameter `param` of op `op` (a slice of the graph's parameter array). */
typedef struct SubgraphArg {
    int tensor; /* graph tensor, or -1 */
    int op, param;
} SubgraphArg;

typedef struct Subgraph {
    int first; /* its ops: Subgraphs.ops[first .. first + n_ops - 1], head first, in chain order */
    int n_ops;
    int out; /* the graph tensor it writes */
    int task;
    int n_args;
    SubgraphArg args[SUBGRAPH_MAX_IN];
    char label[96]; /* "conv2d+bias_add+relu 1x64x56x56" */
} Subgraph;

typedef struct SubgraphTask {
    int sg;     /* its first subgraph */
    int weight; /* subgraphs with its computation */
    char *te;   /* the expression's text */
    char key[24];
    char name[32]; /* "sg3-conv2d": the expression's name in its workload */
    double flops;
} SubgraphTask;

typedef struct Subgraphs {
    Subgraph *sg;
    int n_sg;
    int *ops;   /* op indices, grouped by subgraph */
    int *of_op; /* per op: its subgraph */
    int *order; /* subgraph indices in an order where each one's inputs are ready */
    SubgraphTask *tasks;
    int n_tasks;
} Subgraphs;

/* Partitions g. TT_ERR (one sentence) when a subgraph's expression does not
 * parse or has too many inputs, which would be a bug of this file. */
Status Subgraphs_make(const Graph *g, Subgraphs *out, char *err);
void Subgraphs_done(Subgraphs *this);

#endif
