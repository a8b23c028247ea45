/* tuner/net/ops/elementwise_fused.c: op "tunetop.Elementwise", a chain (or
 * small DAG) of float32 elementwise ops computed in one pass over blocks of
 * the output, as NetPass_fuseElementwise (passes.h) writes it.
 *
 * Inputs: 0 is the tensor the chain starts from; the others are what its
 * steps read besides each other: tensors of input 0's shape, or single
 * elements (held for the whole run). Output: input 0's shape, float32.
 * Attributes:
 *   ops   STRINGS  the op type of each step, in order ("Div", "Erf", ...)
 *   args  INTS     EW_MAX_IN per step: -1 an omitted input, 0..n_in-1 a node
 *                  input, n_in + s the result of step s (s before this step)
 *   "S.name"       step S's own attributes (e.g. "2.alpha"), as the op had them
 * The last step's result is the output. Each step runs its op's own float32
 * kernel (elementwise.h) over the block, so the output is bit for bit what
 * the unfused ops compute; only the intermediate tensors are gone. The
 * blocks split over the program's threads (par.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/elementwise.h"
#include "tuner/net/ops/par.h"

#define FUSED_BLOCK 512 /* elements per block: every step's block stays in L1 */

typedef struct FusedPlan {
    int n; /* steps */
    const char *const *ops;
    const int64_t *args;
    const char *op1;          /* a lone op's plan (single_plan): ops points here */
    int64_t args1[EW_MAX_IN]; /* and args here */
    EwKernel kern[OP_FUSED_MAX_STEPS];
    EwPrm prm[OP_FUSED_MAX_STEPS];
} FusedPlan;

/* Step s of the node as a node of its own (its attributes, names unprefixed),
 * so that the op's param function reads them as it reads the original's. */
static void step_node(const NetNode *n, const char *op, int s, NetNode *view, NetAttr *attrs) {
    char prefix[16];
    int len = snprintf(prefix, sizeof prefix, "%d.", s);
    memset(view, 0, sizeof *view);
    view->op = (char *)op;
    view->domain = (char *)"";
    view->attrs = attrs;
    for (int i = 0; i < n->n_attrs; i++)
        if (!strncmp(n->attrs[i].name, prefix, (size_t)len)) {
            attrs[view->n_attrs] = n->attrs[i];
            attrs[view->n_attrs++].name = n->attrs[i].name + len;
        }
}

/* Reads and checks the attributes; with ctx (not NULL), also each step's kernel and parameters. */
static Status fused_plan(const NetNode *node, int n_in, const OpCtx *ctx, FusedPlan *p, char *err) {
    const NetAttr *ops = NetNode_attr(node, "ops");
    int n_args = 0;
    p->args = NetNode_attrInts(node, "args", &n_args);
    if (!ops || ops->kind != NATTR_STRINGS || ops->n < 1 || ops->n > OP_FUSED_MAX_STEPS)
        return tt_fail(err, "attribute ops must list 1 to %d op types", OP_FUSED_MAX_STEPS);
    p->n = ops->n;
    p->ops = (const char *const *)ops->strings;
    if (n_args != p->n * EW_MAX_IN) return tt_fail(err, "attribute args must hold %d values per step", EW_MAX_IN);
    for (int s = 0; s < p->n; s++) {
        const EwSpec *spec = Ew_spec(p->ops[s]);
        if (!spec || !Ew_fusable(spec))
            return tt_fail(err, "step %d: op %s is not a float32 elementwise op", s, p->ops[s]);
        const OpDef *def = Op_find("", p->ops[s]);
        int last = -1; /* the last argument given: the step's input count is last + 1 */
        for (int k = 0; k < EW_MAX_IN; k++) {
            int64_t a = p->args[s * EW_MAX_IN + k];
            if (a < -1 || a >= n_in + s) return tt_fail(err, "step %d: argument %d refers to %lld", s, k, (long long)a);
            if (a >= 0) last = k;
            /* the kernels read every input up to the op's least count (Add's second, say) */
            if (a < 0 && def && k < def->min_in)
                return tt_fail(err, "step %d: %s's input %d is omitted", s, p->ops[s], k);
        }
        if (!Op_fusableStep(p->ops[s], last + 1))
            return tt_fail(err, "step %d: %s does not take %d inputs in a fused chain", s, p->ops[s], last + 1);
        if (!ctx) continue;
        NetNode view;
        NetAttr attrs[node->n_attrs + 1];
        step_node(node, p->ops[s], s, &view, attrs);
        OpCtx sc = *ctx;
        sc.node = &view;
        memset(&p->prm[s], 0, sizeof p->prm[s]);
        if (spec->param) spec->param(&sc, &p->prm[s]);
        p->kern[s] = spec->k[p->prm[s].variant][EW_F32];
        if (!p->kern[s]) return tt_fail(err, "step %d: %s has no float32 kernel for its attributes", s, p->ops[s]);
    }
    return TT_OK;
}

/* A node of a fusable elementwise op (not tunetop.Elementwise) as a plan of one step over its own inputs,
 * which reads its attributes as the op does. */
static Status single_plan(const OpCtx *ctx, FusedPlan *p) {
    const NetNode *n = ctx->node;
    const EwSpec *spec = Ew_spec(n->op);
    if (!spec || !Ew_fusable(spec) || n->n_in > EW_MAX_IN || !Op_fusableStep(n->op, n->n_in))
        return tt_fail(ctx->err, "op %s is not a float32 elementwise op of a fused chain", n->op);
    p->n = 1;
    p->op1 = n->op;
    p->ops = &p->op1;
    for (int k = 0; k < EW_MAX_IN; k++)
        p->args1[k] = k < n->n_in && n->in[k] >= 0 ? k : -1;
    p->args = p->args1;
    memset(&p->prm[0], 0, sizeof p->prm[0]);
    if (spec->param) spec->param(ctx, &p->prm[0]);
    p->kern[0] = spec->k[p->prm[0].variant][EW_F32];
    return p->kern[0] ? TT_OK : tt_fail(ctx->err, "%s has no float32 kernel for its attributes", n->op);
}

Status Ew_fusedCheck(const NetNode *node, const NetModel *model, char *err) {
    (void)model;
    FusedPlan p;
    return fused_plan(node, node->n_in, NULL, &p, err);
}

Status Ew_fusedInfer(OpCtx *ctx) {
    const NdTensor *x = ctx->in[0];
    if (!x) return tt_fail(ctx->err, "input 0 is missing");
    for (int k = 0; k < ctx->n_in; k++) {
        const NdTensor *t = ctx->in[k];
        if (!t || t->type == ND_UNDEF) continue;
        if (t->type != ND_F32)
            return tt_fail(ctx->err, "input %d is %s; a fused chain computes float32", k, NdType_name(t->type));
        if (k > 0 && t->shape.rank >= 0 && x->shape.rank >= 0 && !NdShape_equal(&t->shape, &x->shape) &&
            NdShape_elems(&t->shape) != 1)
            return tt_fail(ctx->err, "input %d is neither input 0's shape nor a single element", k);
    }
    ctx->out[0].type = ND_F32;
    ctx->out[0].shape = x->shape;
    return TT_OK;
}

/* Elements [at, at + m) of every step, the last one into the output. */
static void fused_block(const FusedPlan *p, const OpCtx *ctx, float *y, int64_t at, int64_t m) {
    float tmp[OP_FUSED_MAX_STEPS][FUSED_BLOCK];
    for (int s = 0; s < p->n; s++) {
        EwArgs a = {.out = s == p->n - 1 ? y + at : tmp[s], .p = &p->prm[s]};
        for (int k = 0; k < EW_MAX_IN; k++) {
            int64_t r = p->args[s * EW_MAX_IN + k];
            if (r < 0) continue;
            if (r >= ctx->n_in) {
                a.in[k] = tmp[r - ctx->n_in];
                a.st[k] = 1;
            } else {
                const NdTensor *t = ctx->in[r];
                a.st[k] = t->count != 1;
                a.in[k] = (const float *)t->data + (a.st[k] ? at : 0);
            }
        }
        p->kern[s](&a, m);
    }
}

/* Element operations per output element: the steps' own figures. */
static double plan_flops(const FusedPlan *p) {
    double per = 0;
    for (int s = 0; s < p->n; s++)
        per += Ew_spec(p->ops[s])->flops;
    return per;
}

typedef struct FusedJob {
    const FusedPlan *p;
    const OpCtx *ctx;
    float *y;
    int64_t count;
} FusedJob;

/* Blocks [lo, hi) of the output (par.h: each block is computed alike on any thread). */
static void fused_blocks(void *arg, int64_t lo, int64_t hi) {
    const FusedJob *j = arg;
    for (int64_t b = lo; b < hi; b++) {
        int64_t at = b * FUSED_BLOCK;
        fused_block(j->p, j->ctx, j->y, at, j->count - at < FUSED_BLOCK ? j->count - at : FUSED_BLOCK);
    }
}

Status Ew_fusedRunInto(OpCtx *ctx, float *y) {
    FusedPlan p;
    bool chain = !strcmp(ctx->node->op, "Elementwise") && !strcmp(ctx->node->domain, "tunetop");
    if (Ew_fusedInfer(ctx) != TT_OK ||
        (chain ? fused_plan(ctx->node, ctx->n_in, ctx, &p, ctx->err) : single_plan(ctx, &p)) != TT_OK)
        return TT_ERR;
    for (int k = 0; k < ctx->n_in; k++) /* a lone op's omitted optional input (Clip's min) has no slot */
        if (!ctx->in[k] && ctx->node->in[k] >= 0) return tt_fail(ctx->err, "input %d is missing", k);
    FusedJob j = {.p = &p, .ctx = ctx, .y = y, .count = ctx->in[0]->count};
    Par_range((j.count + FUSED_BLOCK - 1) / FUSED_BLOCK, plan_flops(&p) * (double)j.count, fused_blocks, &j);
    return TT_OK;
}

Status Ew_fusedRun(OpCtx *ctx) {
    if (Ew_fusedInfer(ctx) != TT_OK) return TT_ERR;
    NdShape shape = ctx->out[0].shape;
    ctx->out[0].type = ND_UNDEF;
    if (NdTensor_allocFull(&ctx->out[0], ND_F32, &shape, ctx->err) != TT_OK) return TT_ERR;
    return Ew_fusedRunInto(ctx, ctx->out[0].data);
}

double Ew_fusedFlops(const OpCtx *ctx) {
    FusedPlan p;
    char err[TT_ERRLEN];
    int64_t count = ctx->in[0] ? NdShape_elems(&ctx->in[0]->shape) : -1;
    if (count < 0 || fused_plan(ctx->node, ctx->n_in, NULL, &p, err) != TT_OK) return 0;
    return plan_flops(&p) * (double)count;
}
