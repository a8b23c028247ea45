/* tuner/net/ops/op.h: one definition per operator.
 *
 * Every ONNX op that tunetop runs is one OpDef, written once and used by all
 * that needs the op: the binder (check), shape inference and constant folding
 * (infer, run), the reference executor (run) and the conformance test. An op
 * family lives in one file (ops/elementwise.c, ops/conv.c, ...) and exports
 * its table; ops/registry.c lists the tables.
 *
 * The contract of each function:
 *   check(node, model, err)   attributes, input and output counts, and the
 *                             model's opset: TT_ERR with one sentence naming
 *                             what is unsupported ("attribute mode='cubic' is
 *                             not supported"). The caller prefixes the node.
 *                             Input types may still be unknown here.
 *   infer(ctx)                the outputs' types and shapes from the inputs'
 *                             types and shapes. ctx->in[i] has type and shape
 *                             (rank -1: unknown) and data only when that input
 *                             is a constant (NULL otherwise). Sets
 *                             ctx->out[i].type and .shape; a shape that
 *                             depends on data it does not have stays rank -1.
 *                             TT_ERR for inputs that cannot go together
 *                             (mismatched shapes, a dtype the op refuses).
 *   run(ctx)                  computes the outputs: every input has data
 *                             (except omitted optional inputs: ctx->in[i] is
 *                             NULL). The outputs are empty NdTensors; run
 *                             allocates each (NdTensor_alloc) and fills it.
 *                             Usually it calls its own infer first.
 * None of them prints or exits; errors go into ctx->err (TT_ERRLEN bytes).
 * Float math follows ONNX's reference: float32 math for float32 tensors
 * (double accumulation is allowed), float16 computed in float32. */
#ifndef TT_NET_OPS_OP_H
#define TT_NET_OPS_OP_H

#include "base/status.h"
#include "tuner/net/model.h"
#include "tuner/net/nd.h"

typedef struct OpCtx {
    const NetModel *model;
    const NetNode *node;
    int64_t opset;       /* the model's opset of the default domain */
    const NdTensor **in; /* n_in entries; NULL for an omitted optional input */
    int n_in;
    NdTensor *out; /* n_out entries (an omitted optional output still gets a slot) */
    int n_out;
    char *err;
    void *user; /* the executor's caller's pointer (NetExecOptions.user): ops of a program use it */
} OpCtx;

typedef struct OpDef {
    const char *name;     /* op_type */
    const char *domain;   /* "" (ai.onnx) or "com.microsoft" etc. */
    int min_in, max_in;   /* accepted input counts (max -1: variadic) */
    int min_out, max_out; /* accepted output counts */
    Status (*check)(const NetNode *node, const NetModel *model, char *err); /* may be NULL: nothing to check */
    Status (*infer)(OpCtx *ctx);
    Status (*run)(OpCtx *ctx);
    /* What the op costs per output element, for the task table and the estimate
     * of untuned ops (FLOPs of the whole node; NULL: 0). */
    double (*flops)(const OpCtx *ctx);
} OpDef;

/* The op of this type and domain ("" and "ai.onnx" are the same domain), or NULL. */
const OpDef *Op_find(const char *domain, const char *name);
/* Adds a table of ops (ending with a NULL name) that Op_find searches before
 * the built-in ones: an exported program's tunetop.Kernel op. One table at a
 * time; NULL removes it. */
void Op_register(const OpDef *table);
/* Every op tunetop knows, for listings: *n set to the count. */
const OpDef *const *Op_all(int *n);

/* ---- fused elementwise chains (op tunetop.Elementwise, ops/elementwise_fused.c) ---- */

#define OP_FUSED_MAX_STEPS 16 /* steps of one fused chain */
#define OP_FUSED_ARGS 3       /* argument slots per step (the most inputs of a fusable op) */
/* Whether a node of this op type (default domain) with n_in inputs can be a
 * float32 step of a fused chain: an elementwise op whose float32 kernel
 * writes its input's type (not Where, Cast or a comparison), at most
 * OP_FUSED_ARGS inputs, and for Sum, Max and Min exactly two. */
bool Op_fusableStep(const char *op, int n_in);

/* ---- helpers the op files share (ops/common.c) ---- */

/* The input's data as a vector of int64 (an ints input such as Reshape's
 * shape, Slice's starts, ReduceMean's axes since opset 18). TT_ERR when the
 * tensor is not an integer type. *out is malloc'd (free it). */
Status Op_int64s(const NdTensor *t, int64_t **out, int64_t *n, char *err);
/* Sets out[0] of an elementwise op: the broadcast of every present input's
 * shape, with the given type. */
Status Op_inferBroadcast(OpCtx *ctx, NdType type);
/* TT_ERR unless input i has one of the types in the list (ND_UNDEF ends it):
 * "input 1 is int8; Foo takes float32, float16, float64". Unknown types pass. */
Status Op_requireType(const OpCtx *ctx, int i, const NdType *allowed);

/* The tables of the op families (ops/registry.c gathers them). */
extern const OpDef OPS_ELEMENTWISE[]; /* ops/elementwise.c: math, activations, logic, Cast, Where */
extern const OpDef OPS_NN[];          /* ops/nn.c: Conv, ConvTranspose, pools, normalizations, Gemm, MatMul, Softmax */
extern const OpDef OPS_SHAPE[];       /* ops/shape.c: Reshape ... Resize, reductions, Constant, Range */
/* Each table ends with an entry whose name is NULL. */

#endif
