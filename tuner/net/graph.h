/* tuner/net/graph.h: a network as a small dataflow graph.
 *
 * A Graph has tensors (shapes) and ops (kind, input tensors, one output
 * tensor, attributes, constant parameters). The built-in networks
 * (tuner/net/networks.c) are written as programs that add ops to a graph; the
 * tuning tasks (Graph_tasks), the executed program (app/cmd_run.c through
 * tuner/net/netprog.c) and the reference execution (tuner/net/graph_ref.c) are all
 * derived from the same graph, so what is tuned and what runs cannot disagree.
 *
 * Shapes are logical and do not depend on the layout option: an activation is
 * [n][c][h][w], a matrix [rows][cols], a batch of matrices [b][rows][cols].
 * The layout only changes the tunable ops' workloads and the shape strings of
 * the untuned listing. Data (graph_ref.c, the generated program) is NCHW.
 *
 * Ops:
 *   conv2d, depthwise_conv2d  in: data; params: weight (OIHW / [ci][mult][kh][kw])
 *   dense                     in: data [m][k]; params: weight [n][k]
 *   batch_matmul              in: a [b][m][k], b [b][n][k] -> [b][m][n]
 *   bias_add                  x + bias[c] (a layer's bias, or a batch-norm folded into the layer before it)
 *   batch_norm                inference batch-norm as a per-channel scale and shift: x * s[c] + t[c]
 *   relu, clip(lo,hi), gelu (erf form), scale (x * alpha)
 *   add                       in: x, y of one shape
 *   mask_add                  x[b*heads][i][j] + mask[b][j]   (attention mask; params: mask [b][s])
 *   max_pool2d, avg_pool2d    k x k, stride, pad (avg excludes padding)
 *   global_avg_pool2d         -> [n][c][1][1]
 *   concatenate               along channels
 *   softmax, layer_norm       over the last axis (layer_norm params: gamma, beta; eps = alpha)
 *   flatten                   [n][c][h][w] -> [n][c*h*w]         (layout only: a view in NCHW)
 *   split_heads               [b*s][heads*d] -> [b*heads][s][d]  (alpha unused; k = heads, stride = s)
 *   split_heads_t             [b*s][heads*d] -> [b*heads][d][s]
 *   merge_heads               [b*heads][s][d] -> [b*s][heads*d]
 *
 * Epilogues. A tunable op's occurrence epilogue is read off the graph: the
 * chain bias_add? add? relu? that follows it, each op the only consumer of
 * the previous one's output, in that order (add: convolutions only, as the
 * templates fuse a residual there; the add's second input is the residual).
 */
#ifndef TT_TUNER_GRAPH_H
#define TT_TUNER_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/workload.h"

typedef enum {
    GOP_CONV2D = 0,
    GOP_DEPTHWISE,
    GOP_DENSE,
    GOP_BATCH_MATMUL,
    GOP_BIAS_ADD,
    GOP_BATCH_NORM,
    GOP_RELU,
    GOP_CLIP,
    GOP_GELU,
    GOP_SCALE,
    GOP_ADD,
    GOP_MASK_ADD,
    GOP_MAX_POOL,
    GOP_AVG_POOL,
    GOP_GLOBAL_AVG_POOL,
    GOP_CONCAT,
    GOP_SOFTMAX,
    GOP_LAYER_NORM,
    GOP_FLATTEN,
    GOP_SPLIT_HEADS,
    GOP_SPLIT_HEADS_T,
    GOP_MERGE_HEADS,
    GOP_COUNT
} GraphOpKind;

const char *GraphOp_kindName(GraphOpKind k); /* "conv2d", "bias_add", "max_pool2d", ... */
bool GraphOp_isTunable(GraphOpKind k);       /* conv2d, depthwise, dense, batch_matmul */
bool GraphOp_isLayout(GraphOpKind k);        /* flatten, split/merge heads: data movement only */

#define GRAPH_MAX_IN 8
#define GRAPH_MAX_PARAMS 2
#define GRAPH_MAX_INPUTS 4

typedef struct GraphTensor {
    int ndim;
    int64_t dim[4];
    int producer; /* op index; -1 for the graph input */
} GraphTensor;

typedef struct GraphOp {
    GraphOpKind kind;
    int in[GRAPH_MAX_IN];
    int n_in;
    int out;
    Workload wl;            /* tunable ops: the operator and shape, no epilogue flags */
    int64_t k, stride, pad; /* pools; split/merge heads: k = heads, stride = sequence length */
    double alpha, beta;     /* clip: lo, hi; scale: factor; layer_norm: eps */
    int n_params;
    int64_t param_off[GRAPH_MAX_PARAMS]; /* offset in the graph's parameter array (floats) */
    int64_t param_count[GRAPH_MAX_PARAMS];
    bool joins_prev; /* untuned listing: one entry with the op before it ("batch_norm+relu") */
} GraphOp;

typedef struct Graph {
    char name[32];
    Layout layout;
    int64_t batch;
    GraphTensor *tensors;
    int n_tensors, cap_tensors;
    GraphOp *ops;
    int n_ops, cap_ops;
    int input, output;            /* tensor ids: the first input, the output */
    int inputs[GRAPH_MAX_INPUTS]; /* every input, in the order of the data (a residual or a second matrix) */
    int n_inputs;
    int64_t n_params; /* floats of every constant parameter */
    bool too_small;   /* some layer's output would be empty */
} Graph;

void Graph_init(Graph *this, const char *name, Layout layout, int64_t batch);
void Graph_done(Graph *this);

/* Builders (used by tuner/net/networks.c). Each returns the output tensor id.
 * Graph_input adds an input (at most GRAPH_MAX_INPUTS; the first is `input`). */
int Graph_input(Graph *this, int ndim, const int64_t *dim);
int Graph_conv(Graph *this, GraphOpKind kind, int x, int64_t co, int64_t kh, int64_t kw, int64_t stride, int64_t ph,
               int64_t pw);
int Graph_dense(Graph *this, int x, int64_t n);
int Graph_batchMatmul(Graph *this, int a, int b);
/* A clip to [0, 6] (ReLU6): a conv2d / depthwise epilogue (Workload.relu6). */
bool GraphOp_isRelu6(const GraphOp *op);
/* Elementwise / per-channel ops on x (bias_add, batch_norm, relu, gelu, clip, scale, softmax, layer_norm,
 * flatten, global_avg_pool2d); alpha/beta as in GraphOp. */
int Graph_unary(Graph *this, GraphOpKind kind, int x, double alpha, double beta, bool joins_prev);
int Graph_add(Graph *this, int x, int y, bool joins_prev);
int Graph_maskAdd(Graph *this, int x, int64_t batch, bool joins_prev);
int Graph_pool(Graph *this, GraphOpKind kind, int x, int64_t k, int64_t stride, int64_t pad);
int Graph_concat(Graph *this, const int *xs, int n);
int Graph_heads(Graph *this, GraphOpKind kind, int x, int64_t heads, int64_t seq);

/* The dimensions of a head reshape (split_heads, split_heads_t, merge_heads):
 * batch B, heads H, sequence S, head width D. */
void GraphOp_heads(const Graph *g, const GraphOp *op, int64_t *B, int64_t *H, int64_t *S, int64_t *D);

/* Number of ops that read tensor t (an op reading it twice counts twice). */
int Graph_consumers(const Graph *this, int t);
/* The one op that reads tensor t, once; -1 when none or several do. */
int Graph_onlyReader(const Graph *g, int t);
/* A topological order of the ops (the order ops were added, except that an op
 * waits for every op producing its inputs). order has n_ops entries. */
Status Graph_order(const Graph *this, int *order, char *err);
int64_t GraphTensor_count(const GraphTensor *t);
/* Floats of all inputs together, and the offset of input i in that block. */
int64_t Graph_inputFloats(const Graph *this);
int64_t Graph_inputOffset(const Graph *this, int i);
/* "1x64x56x56" (4-D tensors in the graph's layout order), "1x1000". */
void Graph_shapeStr(const Graph *this, int t, char *buf, size_t n);

/* "batch_norm+relu 1x64x56x56", "max_pool2d 1x64x112x112 3x3 s2": the kinds
 * of ops first..first+n-1 and the first one's shape (pools: their input). */
void Graph_runLabel(const Graph *this, int first, int n, char *buf, size_t len);

/* The graph as one JSON object (what other tools need to rebuild it, e.g. the
 * network bench's ONNX export): name, inputs, output, n_params, tensors
 * (id, shape), and the ops in Graph_order with kind, in, out, params
 * ([offset, count] into the parameter array) and their attributes. Appends
 * to sb (base/strbuf.h). TT_ERR when the graph has a cycle. */
struct StrBuf;
Status Graph_toJson(const Graph *this, struct StrBuf *sb, char *err);

/* ---- tasks derived from the graph ---- */

typedef struct GraphTask {
    Workload wl; /* with the epilogue parts fused for every occurrence */
    int weight;
} GraphTask;

typedef struct GraphUntuned {
    char name[64];
    int count;
} GraphUntuned;

/* Per op:
 *   task[i]     task index of a tunable op kept by the op mask, else -1
 *   epi_of[i]   for a bias_add/add/relu in a tunable op's occurrence epilogue: that op, else -1
 *   fused[i]    true when epi_of[i] >= 0, that op has a task, and the task's kernel computes this op
 * The tunable op's occurrence epilogue is epi_bias/epi_add/epi_relu (op indices or -1; epi_relu is a
 * ReLU, or a conv's clip to [0, 6]: GraphOp_isRelu6). */
typedef struct GraphTasks {
    GraphTask *tasks;
    int n_tasks;
    GraphUntuned *untuned;
    int n_untuned, cap_untuned;
    int *task, *epi_of, *epi_bias, *epi_add, *epi_relu;
    bool *fused;
} GraphTasks;

/* Derives the tasks: identical operator shapes merge into one task (weight =
 * occurrences, first-occurrence order); a task fuses bias or residual when
 * every occurrence has it and relu only when every occurrence has the same
 * epilogue. op_mask: bit (1u << OpKind) per tunable op to keep (0 = all).
 * The untuned list names the other ops in graph order (runs of joins_prev ops
 * as one entry, layout-only ops left out), then the epilogue parts a task does
 * not fuse; identical names are one entry with a count. */
void Graph_tasks(const Graph *this, unsigned op_mask, GraphTasks *out);
void GraphTasks_done(GraphTasks *this);

#endif
