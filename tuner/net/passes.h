/* tuner/net/passes.h: passes over the general graph (model.h), each small
 * and tested on its own (tests/unit/test_onnx_passes.c), in the spirit of
 * ONNX Runtime's graph transformers. They run on a sorted, bound model
 * (NetModel_sort, NetModel_bind) and leave it sorted; a node a pass removes
 * is marked dead. Errors name the node ("node 'X' (Reshape): ...") or the
 * input. Nothing here prints or exits.
 *
 * A typical pipeline: fixInputs, inferShapes, removeIdentity, foldConstants,
 * foldBatchNorm, inferShapes again; a program adds fuseElementwise. */
#ifndef TT_NET_PASSES_H
#define TT_NET_PASSES_H

#include "base/status.h"
#include "tuner/net/model.h"

/* Fixes the graph inputs' shapes from specs "NAME=1x3x224x224" (what
 * --input-shape gives); a spec's dims must agree with the dims the model
 * fixes. A symbolic dimension bound on one input binds the same name on the
 * others. TT_ERR when a spec names no input, or when an input is left with a
 * dimension unknown: one line naming the input and the dimension. */
Status NetPass_fixInputs(NetModel *m, const char *const *specs, int n_specs, char *err);

/* Walks the nodes in order and records each output's type and shape from
 * its op's infer (constant inputs come with their data, so a Reshape by a
 * constant shape is known). A dimension that is not known (<0) makes the
 * whole shape unknown to infer. TT_ERR names the node: inputs that cannot
 * go together, or an inferred type or shape that contradicts the model's
 * own declaration. */
Status NetPass_inferShapes(NetModel *m, char *err);

/* Runs every node whose inputs are all constants; its outputs become
 * constants and the node dies (Shape -> Gather -> Concat -> Reshape chains
 * fold once shapes are known: Shape of a known input is folded here too).
 * *folded (may be NULL): how many nodes died. */
Status NetPass_foldConstants(NetModel *m, int *folded, char *err);

/* Removes Identity, and Dropout in inference (its mask unused), rewiring
 * their readers to the input. *removed may be NULL. */
Status NetPass_removeIdentity(NetModel *m, int *removed, char *err);

/* Folds a BatchNormalization into the Conv before it when the conv's output
 * is read only by it and the weight, bias and the four BN parameters are
 * constants: W' = W * s, b' = (b - mean) * s + B with s = scale / sqrt(var +
 * epsilon) per output channel. *folded may be NULL. */
Status NetPass_foldBatchNorm(NetModel *m, int *folded, char *err);

/* Fuses chains of float32 elementwise ops into one node of op
 * tunetop.Elementwise each (ops/elementwise_fused.c), computed in one pass
 * over blocks of the output with no intermediate tensors, bit for bit what
 * the ops computed one by one: SiLU's Sigmoid and Mul, GELU's Div, Erf, Add,
 * Mul and Mul. A chain starts from any float32 value and takes the
 * elementwise nodes that read it or each other, whose other inputs are single
 * elements or tensors of its shape; its intermediate results must be read by
 * nothing else, and it has at least two steps. Runs on the program's form of
 * a model (after ModelTasks_rewrite, so that kernels keep their epilogues);
 * leaves the model sorted. *fused (may be NULL): the fused nodes made. */
Status NetPass_fuseElementwise(NetModel *m, int *fused, char *err);

#endif
