/* tuner/net/model_tasks.h: which nodes of a model a template kernel computes.
 *
 * After the passes (shapes known, constants folded, batch-norm folded), every
 * node that a template fits becomes a kernel node with a Workload:
 *   Conv 2-D, float32, constant weight, symmetric pads: conv2d (group 1) or
 *     depthwise_conv2d (group = input channels), with dilation and stride;
 *   Gemm with a constant B (transA 0, alpha 1, beta 1) and MatMul of a
 *     float32 activation by a constant 2-D matrix: dense (m = the product of
 *     the activation's leading dimensions), the weight transposed at load
 *     time when the model stores it [k][n];
 *   MatMul of two float32 activations of one rank >= 3 with equal batch
 *     dimensions (attention's two matmuls): batch_matmul (b = the product of
 *     the batch dimensions), its second operand transposed at run time.
 * A kernel node fuses what follows it when the kernel can compute it and
 * nothing else reads the intermediate: its bias (Conv's third input, Gemm's
 * C, a MatMul's following Add of a constant [n] vector), then for a
 * convolution a residual Add of a tensor of its output shape, then Relu (or
 * a Clip to [0, 6] for a convolution: ReLU6). The fused nodes are listed
 * with the kernel node; they do not run on their own.
 *
 * Identical workloads merge into one task (weight = occurrences, first
 * occurrence first), as for the built-in networks. Every other live node is
 * an untuned op, listed by op type with a count. */
#ifndef TT_NET_MODEL_TASKS_H
#define TT_NET_MODEL_TASKS_H

#include "base/status.h"
#include "kernels/workload.h"
#include "tuner/net/model.h"
#include "tuner/net/network.h"

#define MODEL_MAX_FUSED 3

typedef struct ModelKernel {
    int node;                   /* the Conv / Gemm / MatMul node */
    int task;                   /* index into the tasks */
    Workload wl;                /* with the epilogue it fuses */
    int fused[MODEL_MAX_FUSED]; /* nodes it computes besides its own (bias Add, residual Add, Relu / Clip) */
    int n_fused;
    int data, weight, bias, residual; /* value ids (-1: none) */
    int out;                          /* the value the kernel writes (the last fused node's output) */
    bool transpose_weight;            /* the constant weight is [k][n]: transpose it into [n][k] */
    bool runtime_b;                   /* batch_matmul: `weight` is an activation [batch][k][n], transposed per run */
} ModelKernel;

typedef struct ModelTasks {
    NetworkTask *tasks;
    int n_tasks;
    NetworkUntuned *untuned; /* op type and count ("Softmax", 12) */
    int n_untuned;
    ModelKernel *kernels; /* one per kernel node, in node order */
    int n_kernels;
    int *kernel_of; /* per node: index into kernels of the kernel that computes it (its own or fused), or -1 */
} ModelTasks;

/* Derives the tasks of a model whose shapes are known (NetPass_inferShapes).
 * op_mask as in NetworkOptions (bit 1u << OpKind; 0 = all). */
Status ModelTasks_build(const NetModel *m, unsigned op_mask, ModelTasks *out, char *err);
void ModelTasks_done(ModelTasks *t);

/* The program's form of the model: each kernel node and the nodes it fuses
 * become one node of op "Kernel" in domain "tunetop" with inputs (data,
 * weight, bias or -1, residual or -1), output the kernel's output value, and
 * attributes task (the task index), transpose_weight (0/1), workload (the
 * key) and runtime_b (0/1: batch_matmul, its "weight" an activation). The replaced nodes are marked dead and the nodes
 * re-sorted. */
Status ModelTasks_rewrite(NetModel *m, const ModelTasks *t, char *err);

#endif
