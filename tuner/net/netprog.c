/* tuner/net/netprog.c: the execution plan and the generated network program.
 *
 * The program (main.c) is called as
 *     net DATA OUT NUMBER REPEAT MIN_REPEAT_MS PROFILE THREADS
 * DATA holds the parameters then the input (raw float32, native order), OUT
 * receives the output tensor. It prints, one per line:
 *     TT_OUTPUT <floats>             after the first run wrote OUT
 *     TT_RUN <number> <seconds>      per repeat: mean seconds of one run over <number> runs
 *     TT_STEP <i> <seconds>          with PROFILE=1: mean seconds of step i (a separate pass of NUMBER runs)
 * and exits 0; on failure a line on stderr and exit 3. Timing follows the
 * usual evaluator: each repeat runs NUMBER times, and NUMBER grows until a
 * repeat lasts MIN_REPEAT_MS. */
#include "tuner/net/netprog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/template.h"
#include "tuner/net/netrt_text.h" /* generated from netrt.h and netrt.c: NETRT_HEADER_TEXT, NETRT_SOURCE_TEXT */

const char *NetProg_runtimeSource(void) { return NETRT_SOURCE_TEXT; }
const char *NetProg_runtimeHeader(void) { return NETRT_HEADER_TEXT; }

/* The tensor at the end of tunable op i's epilogue chain. */
static int chain_end(const GraphTasks *gt, const Graph *g, int i) {
    int t = g->ops[i].out;
    if (gt->epi_bias[i] >= 0) t = g->ops[gt->epi_bias[i]].out;
    if (gt->epi_add[i] >= 0) t = g->ops[gt->epi_add[i]].out;
    if (gt->epi_relu[i] >= 0) t = g->ops[gt->epi_relu[i]].out;
    return t;
}

static bool is_elementwise(GraphOpKind k) {
    return k == GOP_BIAS_ADD || k == GOP_BATCH_NORM || k == GOP_RELU || k == GOP_CLIP || k == GOP_ADD;
}

void NetPlan_taskKernels(const Graph *g, const GraphTasks *gt, const int *blocked, const BlockedLayout *layouts_in,
                         const BlockedLayout *layouts_out, NetOpKernel *ok) {
    for (int i = 0; i < g->n_ops; i++) {
        memset(&ok[i], 0, sizeof ok[i]);
        int t = gt->task[i];
        ok[i].kernel = t;
        if (t < 0) continue;
        ok[i].mask = blocked ? blocked[t] : 0;
        if (layouts_in) ok[i].in = layouts_in[t];
        if (layouts_out) ok[i].out = layouts_out[t];
        ok[i].bias = gt->tasks[t].wl.bias;
        ok[i].residual = gt->tasks[t].wl.residual;
        ok[i].relu = gt->tasks[t].wl.relu;
        ok[i].relu6 = gt->tasks[t].wl.relu6;
    }
}

/* ---- building the plan ---- */

typedef struct PlanCtx {
    NetPlan *p;
    const Graph *g;
    const GraphTasks *gt;
    const NetOpKernel *ok;
    bool flat;
} PlanCtx;

static NetStep *push(PlanCtx *c, NetStepKind kind, int op, const char *label) {
    NetPlan *p = c->p;
    if (p->n_steps == p->cap_steps) {
        p->cap_steps = p->cap_steps ? 2 * p->cap_steps : 64;
        p->steps = realloc(p->steps, (size_t)p->cap_steps * sizeof *p->steps);
        if (!p->steps) abort();
    }
    NetStep *s = &p->steps[p->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->op = op;
    s->op2 = s->kernel = s->out = s->in_t = s->in2_t = s->out_t = s->scale_op = s->shift_op = -1;
    s->res.tensor = -2;
    snprintf(s->label, sizeof s->label, "%.95s", label);
    return s;
}

static void add_view(PlanCtx *c, int t, NetLocKind loc, int op) {
    NetPlan *p = c->p;
    if (p->n_views == p->cap_views) {
        p->cap_views = p->cap_views ? 2 * p->cap_views : 64;
        p->views = realloc(p->views, (size_t)p->cap_views * sizeof *p->views);
        if (!p->views) abort();
    }
    p->views[p->n_views++] = (NetView){t, loc, op};
    if (loc == LOC_NCHW && p->alias[t] < 0) p->alias[t] = t;
}

static int find_view(const PlanCtx *c, int t, NetLocKind loc, int op) {
    for (int v = 0; v < c->p->n_views; v++) {
        const NetView *w = &c->p->views[v];
        if (w->tensor == t && w->loc == loc && (loc == LOC_NCHW || loc == LOC_BUF || w->op == op)) return v;
    }
    return -1;
}

static void view_block(const PlanCtx *c, NetView v, int64_t *cb, int64_t *repeat) {
    *cb = 1, *repeat = 1;
    if (v.loc == LOC_BUF) *cb = v.op;
    if (v.loc == LOC_NCHW || v.loc == LOC_BUF || !c->ok) return;
    const BlockedLayout *l = v.loc == LOC_IN ? &c->ok[v.op].in : &c->ok[v.op].out;
    *cb = l->cb, *repeat = l->repeat;
}

/* A view of t to read from: one with the block size of the destination when
 * there is one (the move's fast path), else the first (where t was written). */
static NetView read_view(const PlanCtx *c, int t, NetView dst) {
    int64_t dcb, drep;
    view_block(c, dst, &dcb, &drep);
    int first = -1;
    for (int v = 0; v < c->p->n_views; v++) {
        const NetView *w = &c->p->views[v];
        if (w->tensor != t) continue;
        if (first < 0) first = v;
        int64_t cb, rep;
        view_block(c, *w, &cb, &rep);
        if (cb == dcb && rep == 1 && drep == 1) return *w;
    }
    if (first < 0) abort(); /* the Kahn order makes every input ready */
    return c->p->views[first];
}

static void kernel_label(const PlanCtx *c, int op, char *buf, size_t n) {
    char shape[64];
    Graph_shapeStr(c->g, c->g->ops[op].out, shape, sizeof shape);
    snprintf(buf, n, "task %d %s %s", c->gt->task[op], GraphOp_kindName(c->g->ops[op].kind), shape);
}

static NetStepKind move_kind(NetView src, NetView dst) {
    if (src.loc == LOC_NCHW) return NSTEP_PACK;
    return dst.loc == LOC_NCHW ? NSTEP_UNPACK : NSTEP_REBLOCK;
}

/* Makes tensor t available at (loc, op): nothing when it is there, else a move
 * (a layout transform) from an existing view. */
static void ensure(PlanCtx *c, int t, NetLocKind loc, int op) {
    if (find_view(c, t, loc, op) >= 0) return;
    NetView dst = {t, loc, op};
    if (c->flat && loc != LOC_NCHW) ensure(c, t, LOC_NCHW, -1);
    NetView src = c->flat && loc != LOC_NCHW ? (NetView){t, LOC_NCHW, -1} : read_view(c, t, dst);
    char base[96], label[96];
    if (loc == LOC_IN || loc == LOC_RES) {
        kernel_label(c, op, base, sizeof base);
        if (loc == LOC_RES) snprintf(base + strlen(base), sizeof base - strlen(base), " residual");
    } else {
        int pr = c->g->tensors[t].producer;
        if (pr >= 0 && c->gt->epi_of[pr] >= 0) pr = c->gt->epi_of[pr];
        if (pr >= 0 && GraphOp_isTunable(c->g->ops[pr].kind))
            kernel_label(c, pr, base, sizeof base);
        else {
            char shape[64];
            Graph_shapeStr(c->g, t, shape, sizeof shape);
            snprintf(base, sizeof base, "%s %s", pr >= 0 ? GraphOp_kindName(c->g->ops[pr].kind) : "input", shape);
        }
    }
    NetStepKind k = move_kind(src, dst);
    snprintf(label, sizeof label, "%.70s: %s", base,
             k == NSTEP_PACK     ? "NCHW->blocked"
             : k == NSTEP_UNPACK ? "blocked->NCHW"
                                 : "blocked->blocked");
    NetStep *s = push(c, k, op, label);
    s->move = true;
    s->out = t;
    s->src = src;
    s->dst = dst;
    add_view(c, t, loc, op);
}

/* Where t is written: where its first reader that cares wants it (a kernel's
 * blocked input or residual buffer, or NCHW); NCHW when no reader cares. */
static NetView wanted(const PlanCtx *c, int t, NetView from) {
    const Graph *g = c->g;
    const GraphTasks *gt = c->gt;
    NetView nchw = {t, LOC_NCHW, -1};
    if (c->flat || !c->ok || t == g->output || g->tensors[t].ndim != 4) return nchw;
    for (int i = 0; i < g->n_ops; i++) {
        const GraphOp *op = &g->ops[i];
        bool reads = false;
        for (int j = 0; j < op->n_in; j++)
            reads |= op->in[j] == t;
        if (!reads) continue;
        if (GraphOp_isTunable(op->kind)) {
            if (gt->task[i] >= 0 && (c->ok[i].mask & BLOCKED_INPUT) && op->in[0] == t &&
                (op->n_in < 2 || op->in[1] != t))
                return (NetView){t, LOC_IN, i};
            return nchw;
        }
        int k = gt->epi_of[i];
        if (k >= 0 && i == gt->epi_add[k] && c->ok[k].residual) {
            if ((c->ok[k].mask & BLOCKED_OUTPUT) && op->in[1] == t && op->in[0] != t) return (NetView){t, LOC_RES, k};
            return nchw;
        }
        if (is_elementwise(op->kind) || op->kind == GOP_MAX_POOL) continue;
        return nchw;
    }
    /* only elementwise ops and pools read it: blocked like the view it comes from */
    int64_t cb, rep;
    view_block(c, from, &cb, &rep);
    if (from.tensor < -1 || cb <= 1 || rep != 1) return nchw;
    return (NetView){t, LOC_BUF, (int)cb};
}

/* An elementwise group: y = act(x * scale + shift + res) over ops that each
 * read the previous one's output as its only reader. */
typedef struct Group {
    int x, res, bn, bias, act, out, n;
    double lo, hi;
} Group;

/* The plan's units and their progress: a tunable op with its whole epilogue
 * chain, a group of elementwise ops, or any other op alone. */
typedef struct Units {
    int *head;   /* per op: the op heading its unit */
    int *first;  /* per unit head: its first member (op order) */
    int *nextm;  /* per op: the next member of its unit, or -1 */
    bool *done;  /* per unit head: its steps are emitted */
    bool *ready; /* per tensor: written by an emitted unit (or an input) */
    Group *grp;  /* per elementwise unit head: its group */
    int n_units;
} Units;

/* The group headed by elementwise op h: h, then its output's only reader while that reader is an
 * add (the residual) or an activation the group does not have yet; the members join h's unit. */
static void group_make(const Graph *g, const GraphTasks *gt, int *head, int h, Group *G) {
    const GraphOp *op = &g->ops[h];
    G->x = op->in[0];
    G->res = op->kind == GOP_ADD ? op->in[1] : -1;
    G->bn = op->kind == GOP_BATCH_NORM ? h : -1;
    G->bias = op->kind == GOP_BIAS_ADD ? h : -1;
    G->act = op->kind == GOP_RELU ? 1 : op->kind == GOP_CLIP ? 2 : 0;
    G->lo = op->alpha, G->hi = op->beta;
    G->out = op->out;
    G->n = 1;
    for (;;) {
        if (G->out == g->output) break;
        int k = Graph_onlyReader(g, G->out);
        if (k < 0 || head[k] != k || gt->epi_of[k] >= 0 || k < h) break;
        const GraphOp *o2 = &g->ops[k];
        if (o2->kind == GOP_ADD && G->res < 0 && !G->act && o2->in[0] != o2->in[1])
            G->res = o2->in[0] == G->out ? o2->in[1] : o2->in[0];
        else if ((o2->kind == GOP_RELU || o2->kind == GOP_CLIP) && !G->act) {
            G->act = o2->kind == GOP_RELU ? 1 : 2;
            G->lo = o2->alpha, G->hi = o2->beta;
        } else
            break;
        head[k] = h;
        G->out = o2->out;
        G->n++;
    }
}

/* The units of the graph's ops, their members in op order, and the graph's inputs ready. */
static void units_make(const Graph *g, const GraphTasks *gt, Units *u) {
    int n = g->n_ops;
    u->head = malloc((size_t)(n + 1) * sizeof(int));
    u->first = malloc((size_t)(n + 1) * sizeof(int));
    u->nextm = malloc((size_t)(n + 1) * sizeof(int));
    u->done = calloc((size_t)(n + 1), sizeof(bool));
    u->ready = calloc((size_t)g->n_tensors, sizeof(bool));
    u->grp = calloc((size_t)(n + 1), sizeof *u->grp);
    if (!u->head || !u->first || !u->nextm || !u->done || !u->ready || !u->grp) abort();
    for (int i = 0; i < g->n_inputs; i++)
        u->ready[g->inputs[i]] = true;
    for (int i = 0; i < n; i++)
        u->head[i] = gt->epi_of[i] >= 0 ? gt->epi_of[i] : i;
    for (int h = 0; h < n; h++)
        if (u->head[h] == h && gt->epi_of[h] < 0 && is_elementwise(g->ops[h].kind))
            group_make(g, gt, u->head, h, &u->grp[h]);
    for (int i = 0; i < n; i++)
        u->first[i] = u->nextm[i] = -1;
    for (int j = n - 1; j >= 0; j--) { /* members of each unit, in op order */
        u->nextm[j] = u->first[u->head[j]];
        u->first[u->head[j]] = j;
    }
    u->n_units = 0;
    for (int i = 0; i < n; i++)
        u->n_units += u->head[i] == i;
}

/* Frees the units. */
static void units_done(Units *u) {
    free(u->head), free(u->first), free(u->nextm), free(u->done), free(u->ready), free(u->grp);
}

/* Kahn over units in op order: the first unit not run yet whose every input
 * from outside itself is ready; -1 when none is (a cycle). */
static int next_unit(const Graph *g, const Units *u) {
    for (int i = 0; i < g->n_ops; i++) {
        if (u->head[i] != i || u->done[i]) continue;
        bool okk = true;
        for (int j = u->first[i]; j >= 0 && okk; j = u->nextm[j]) {
            for (int k = 0; k < g->ops[j].n_in && okk; k++) {
                int t = g->ops[j].in[k], p = g->tensors[t].producer;
                if (p >= 0 && u->head[p] == i) continue; /* inside the unit */
                okk = u->ready[t];
            }
        }
        if (okk) return i;
    }
    return -1;
}

/* The kernel of tunable op i: ok[i], else its task's kernel with the task's epilogue. */
static NetOpKernel op_kernel(const PlanCtx *c, int i) {
    if (c->ok) return c->ok[i];
    const GraphTasks *gt = c->gt;
    const Workload *tw = &gt->tasks[gt->task[i]].wl;
    return (NetOpKernel){
        .kernel = gt->task[i], .bias = tw->bias, .residual = tw->residual, .relu = tw->relu, .relu6 = tw->relu6};
}

/* The inputs of kernel kk of op pick where it reads them: its data input blocked or NCHW, a
 * batch_matmul's second input or the fused residual; *in_t, *in2_t the NCHW tensors passed. */
static void kernel_inputs(PlanCtx *c, int pick, const NetOpKernel *kk, int *in_t, int *in2_t) {
    const Graph *g = c->g;
    const GraphOp *op = &g->ops[pick];
    if (kk->mask & BLOCKED_INPUT)
        ensure(c, op->in[0], LOC_IN, pick);
    else
        ensure(c, op->in[0], LOC_NCHW, -1), *in_t = op->in[0];
    if (op->kind == GOP_BATCH_MATMUL) {
        ensure(c, op->in[1], LOC_NCHW, -1);
        *in2_t = op->in[1];
    } else if (kk->residual) {
        int r = g->ops[c->gt->epi_add[pick]].in[1];
        if (kk->mask & BLOCKED_OUTPUT)
            ensure(c, r, LOC_RES, pick);
        else
            ensure(c, r, LOC_NCHW, -1), *in2_t = r;
    }
}

/* The runtime step after kernel op pick for the epilogue ops its kernel leaves (rb bias_add, ra
 * add, rr activation; -1: fused or none): from the kernel's output (bout: its blocked buffer)
 * into where tensor end is wanted. */
static void emit_rest(PlanCtx *c, int pick, int end, int rb, int ra, int rr, bool bout) {
    const Graph *g = c->g;
    bool rclip = rr >= 0 && g->ops[rr].kind == GOP_CLIP; /* the activation left: ReLU6 */
    char l3[96], shape[64];
    Graph_shapeStr(g, end, shape, sizeof shape);
    snprintf(l3, sizeof l3, "%s%s%s%s%s %s", rb >= 0 ? "bias_add" : "", rb >= 0 && (ra >= 0 || rr >= 0) ? "+" : "",
             ra >= 0 ? "add" : "", ra >= 0 && rr >= 0 ? "+" : "",
             rr < 0  ? ""
             : rclip ? "clip"
                     : "relu",
             shape);
    NetView dst = bout ? wanted(c, end, (NetView){-1, LOC_OUT, pick}) : (NetView){end, LOC_NCHW, -1};
    NetView res = {-2, LOC_NCHW, -1};
    if (ra >= 0) {
        int r = g->ops[ra].in[1];
        if (c->flat) ensure(c, r, LOC_NCHW, -1);
        res = c->flat ? (NetView){r, LOC_NCHW, -1} : read_view(c, r, dst);
    }
    NetStep *e = push(c, NSTEP_RUNTIME, pick, l3); /* after ensure(): push may move the steps */
    e->move = true;
    e->out = end;
    e->src = bout ? (NetView){-1, LOC_OUT, pick} : dst;
    e->dst = dst;
    e->res = res;
    e->shift_op = rb;
    e->act = rr < 0 ? 0 : rclip ? 2 : 1;
    if (rclip) e->lo = g->ops[rr].alpha, e->hi = g->ops[rr].beta;
    add_view(c, end, dst.loc, dst.op);
}

/* The kernel step of tunable op pick (its inputs made ready where it reads them), then a
 * runtime step for the epilogue ops its kernel does not fuse. */
static void emit_kernel(PlanCtx *c, Units *u, int pick) {
    const Graph *g = c->g;
    const GraphTasks *gt = c->gt;
    NetOpKernel kk = op_kernel(c, pick);
    int end = chain_end(gt, g, pick);
    char label[96];
    kernel_label(c, pick, label, sizeof label);
    int rb = gt->epi_bias[pick] >= 0 && !kk.bias ? gt->epi_bias[pick] : -1;
    int ra = gt->epi_add[pick] >= 0 && !kk.residual ? gt->epi_add[pick] : -1;
    int rr = gt->epi_relu[pick] >= 0 && !kk.relu && !kk.relu6 ? gt->epi_relu[pick] : -1;
    bool rest = rb >= 0 || ra >= 0 || rr >= 0;
    int in_t = -1, in2_t = -1;
    kernel_inputs(c, pick, &kk, &in_t, &in2_t);
    NetStep *s = push(c, NSTEP_KERNEL, pick, label);
    s->kernel = kk.kernel;
    s->in_t = in_t;
    s->in2_t = in2_t;
    s->blocked = kk.mask != 0;
    s->out = rest ? -1 : end;
    bool bout = (kk.mask & BLOCKED_OUTPUT) != 0;
    if (!bout) {
        s->out_t = end;
        if (c->p->alias[end] < 0) c->p->alias[end] = end;
    }
    if (!rest)
        add_view(c, end, bout ? LOC_OUT : LOC_NCHW, bout ? pick : -1);
    else
        emit_rest(c, pick, end, rb, ra, rr, bout);
    u->ready[end] = true;
}

/* The one runtime step of the elementwise group headed by op pick, labelled with its members. */
static void emit_group(PlanCtx *c, Units *u, int pick) {
    const Graph *g = c->g;
    const Group *G = &u->grp[pick];
    bool flat = c->flat;
    NetView dst =
        wanted(c, G->out, flat ? (NetView){-2, LOC_NCHW, -1} : read_view(c, G->x, (NetView){-1, LOC_NCHW, -1}));
    NetView src, res = {-2, LOC_NCHW, -1};
    if (flat) {
        ensure(c, G->x, LOC_NCHW, -1);
        src = (NetView){G->x, LOC_NCHW, -1};
        if (G->res >= 0) ensure(c, G->res, LOC_NCHW, -1), res = (NetView){G->res, LOC_NCHW, -1};
    } else {
        src = read_view(c, G->x, dst);
        if (G->res >= 0) res = read_view(c, G->res, dst);
    }
    char label[96] = "", shape[64];
    for (int j = u->first[pick]; j >= 0; j = u->nextm[j])
        if (u->head[j] == pick)
            snprintf(label + strlen(label), sizeof label - strlen(label), "%s%s", label[0] ? "+" : "",
                     GraphOp_kindName(g->ops[j].kind));
    Graph_shapeStr(g, G->x, shape, sizeof shape);
    snprintf(label + strlen(label), sizeof label - strlen(label), " %s", shape);
    NetStep *s = push(c, NSTEP_RUNTIME, pick, label);
    s->move = true;
    s->out = G->out;
    s->src = src;
    s->res = res;
    s->dst = dst;
    s->scale_op = G->bn;
    s->shift_op = G->bias >= 0 ? G->bias : G->bn;
    s->act = G->act;
    s->lo = G->lo, s->hi = G->hi;
    add_view(c, G->out, dst.loc, dst.op);
    u->ready[G->out] = true;
}

/* A max pool (not flat): on the blocked view its input has when it can, written where its output is wanted. */
static void emit_max_pool(PlanCtx *c, Units *u, int pick) {
    const GraphOp *op = &c->g->ops[pick];
    char label[96];
    NetView dst = wanted(c, op->out, read_view(c, op->in[0], (NetView){-1, LOC_NCHW, -1}));
    Graph_runLabel(c->g, pick, 1, label, sizeof label);
    NetView src = read_view(c, op->in[0], dst);
    NetStep *s = push(c, NSTEP_RUNTIME, pick, label);
    s->out = op->out;
    s->src = src;
    s->dst = dst;
    add_view(c, op->out, dst.loc, dst.op);
    u->ready[op->out] = true;
}

/* Any other op on NCHW tensors: a flatten is a view of its input, the rest one runtime step. */
static void emit_op(PlanCtx *c, Units *u, int pick) {
    const GraphOp *op = &c->g->ops[pick];
    if (op->kind == GOP_FLATTEN) {
        ensure(c, op->in[0], LOC_NCHW, -1);
        c->p->alias[op->out] = c->p->alias[op->in[0]]; /* NCHW flatten is a view */
        add_view(c, op->out, LOC_NCHW, -1);
        u->ready[op->out] = true;
        return;
    }
    for (int j = 0; j < op->n_in; j++)
        ensure(c, op->in[j], LOC_NCHW, -1);
    char label[96];
    Graph_runLabel(c->g, pick, 1, label, sizeof label);
    NetStep *s = push(c, NSTEP_RUNTIME, pick, label);
    s->out = op->out;
    s->src = (NetView){op->in[0], LOC_NCHW, -1};
    s->dst = (NetView){op->out, LOC_NCHW, -1};
    add_view(c, op->out, LOC_NCHW, -1);
    u->ready[op->out] = true;
}

/* The steps of the unit headed by op pick. */
static void emit_unit(PlanCtx *c, Units *u, int pick) {
    GraphOpKind kind = c->g->ops[pick].kind;
    if (GraphOp_isTunable(kind))
        emit_kernel(c, u, pick);
    else if (is_elementwise(kind) && c->gt->epi_of[pick] < 0)
        emit_group(c, u, pick);
    else if (kind == GOP_MAX_POOL && !c->flat)
        emit_max_pool(c, u, pick);
    else
        emit_op(c, u, pick);
}

/* Tensors a blocked kernel wrote or read that never went through NCHW. */
static int kept_blocked(const NetPlan *plan, const Graph *g) {
    int n = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        bool blockedv = false;
        for (int v = 0; v < plan->n_views; v++)
            blockedv |= plan->views[v].tensor == t && plan->views[v].loc != LOC_NCHW;
        n += blockedv && plan->alias[t] < 0;
    }
    return n;
}

/* The plan: every unit, in an order its inputs allow, as its steps; the output ends in NCHW. */
Status NetPlan_make(const Graph *g, const GraphTasks *gt, const NetOpKernel *ok, bool flat, NetPlan *plan, char *err) {
    memset(plan, 0, sizeof *plan);
    plan->g = g;
    plan->gt = gt;
    PlanCtx c = {plan, g, gt, NULL, flat};
    if (ok) {
        NetOpKernel *copy = malloc((size_t)(g->n_ops + 1) * sizeof *copy);
        if (!copy) abort();
        memcpy(copy, ok, (size_t)g->n_ops * sizeof *copy);
        plan->ok = copy;
        c.ok = copy;
    }
    plan->alias = malloc((size_t)g->n_tensors * sizeof(int));
    if (!plan->alias) abort();
    for (int t = 0; t < g->n_tensors; t++)
        plan->alias[t] = -1;
    for (int i = 0; i < g->n_inputs; i++)
        add_view(&c, g->inputs[i], LOC_NCHW, -1);
    Units u;
    units_make(g, gt, &u);
    for (int emitted = 0; emitted < u.n_units; emitted++) {
        int pick = next_unit(g, &u);
        if (pick < 0) {
            NetPlan_done(plan);
            units_done(&u);
            return tt_fail(err, "graph %s: no op can run next (a cycle)", g->name);
        }
        u.done[pick] = true;
        emit_unit(&c, &u, pick);
    }
    ensure(&c, g->output, LOC_NCHW, -1);
    plan->kept_blocked = kept_blocked(plan, g);
    units_done(&u);
    return TT_OK;
}

void NetPlan_done(NetPlan *this) {
    free(this->steps);
    free(this->alias);
    free(this->views);
    free((void *)this->ok);
    memset(this, 0, sizeof *this);
}

/* ---- program text ---- */

static void dims(const Graph *g, int t, long *outer, long *chans, long *inner) {
    const GraphTensor *x = &g->tensors[t];
    *outer = (long)x->dim[0];
    *chans = x->ndim > 1 ? (long)x->dim[1] : 1;
    *inner = 1;
    for (int i = 2; i < x->ndim; i++)
        *inner *= (long)x->dim[i];
}

/* n, c, h, w of a tensor as the moves see it (not 4-D: [outer][chans][1][inner]) */
static void dims4(const Graph *g, int t, long d[4]) {
    const GraphTensor *x = &g->tensors[t];
    if (x->ndim == 4) {
        for (int i = 0; i < 4; i++)
            d[i] = (long)x->dim[i];
        return;
    }
    dims(g, t, &d[0], &d[1], &d[3]);
    d[2] = 1;
}

#define TB(t) (plan->alias[(t)])

static const char *kprefix(const NetPlan *plan, const char *const *prefixes, int op) {
    return prefixes[plan->ok ? plan->ok[op].kernel : plan->gt->task[op]];
}

/* The pointer and the layout of a view of a tensor with dims d. */
static void view_text(const NetPlan *plan, const char *const *prefixes, NetView v, const long d[4], char *ptr,
                      size_t np, char *lay, size_t nl) {
    if (v.loc == LOC_NCHW) {
        snprintf(ptr, np, "T[%d]", TB(v.tensor));
        snprintf(lay, nl, "&(const ttrt_layout){1, %ld, %ld, 0, 0, 1}", d[2], d[3]);
        return;
    }
    if (v.loc == LOC_BUF) {
        snprintf(ptr, np, "B[%d]", v.tensor);
        snprintf(lay, nl, "&(const ttrt_layout){%d, %ld, %ld, 0, 0, 1}", v.op, d[2], d[3]);
        return;
    }
    const char *P = kprefix(plan, prefixes, v.op);
    const char *fn = v.loc == LOC_IN ? "blocked_input" : v.loc == LOC_OUT ? "blocked_output" : "blocked_residual";
    const char *m = v.loc == LOC_IN ? "BLOCKED_IN" : "BLOCKED_OUT";
    snprintf(ptr, np, "%s_%s(K%d)", P, fn, v.op);
    snprintf(lay, nl,
             "&(const ttrt_layout){%s_%s_CB, %s_%s_H_ALLOC, %s_%s_W_ALLOC, %s_%s_TOP, %s_%s_LEFT, %s_%s_REPEAT}", P, m,
             P, m, P, m, P, m, P, m, P, m);
}

static void emit_step(StrBuf *sb, const NetPlan *plan, const NetStep *s, const char *const *prefixes) {
    const Graph *g = plan->g;
    const GraphOp *op = s->op >= 0 ? &g->ops[s->op] : NULL;
    long outer, chans, inner;
    if (s->move) {
        long d[4];
        dims4(g, s->out, d);
        char sp[160], sl[320], rp[160] = "0", rl[320] = "0", dp[160], dl[320], scale[48] = "0", shift[48] = "0";
        NetView src = s->src;
        if (src.tensor < 0) src.tensor = s->out;
        view_text(plan, prefixes, src, d, sp, sizeof sp, sl, sizeof sl);
        if (s->res.tensor >= 0) view_text(plan, prefixes, s->res, d, rp, sizeof rp, rl, sizeof rl);
        view_text(plan, prefixes, s->dst, d, dp, sizeof dp, dl, sizeof dl);
        if (s->scale_op >= 0) snprintf(scale, sizeof scale, "P + %lld", (long long)g->ops[s->scale_op].param_off[0]);
        if (s->shift_op >= 0)
            snprintf(shift, sizeof shift, "P + %lld",
                     (long long)g->ops[s->shift_op].param_off[g->ops[s->shift_op].kind == GOP_BATCH_NORM ? 1 : 0]);
        StrBuf_printf(sb,
                      "        ttrt_move(%s, %s,\n                  %s, %s,\n                  %s, %s,\n"
                      "                  %ld, %ld, %ld, %ld, %s, %s, %d, %.9ef, %.9ef);\n",
                      sp, sl, rp, rl, dp, dl, d[0], d[1], d[2], d[3], scale, shift, s->act, s->act == 2 ? s->lo : 0.0,
                      s->act == 2 ? s->hi : 0.0);
        return;
    }
    if (s->kind == NSTEP_KERNEL) {
        const char *P = prefixes[s->kernel];
        char first[32] = "0", second[32] = "0", out[32] = "0";
        if (s->in_t >= 0) snprintf(first, sizeof first, "T[%d]", TB(s->in_t));
        if (s->in2_t >= 0) snprintf(second, sizeof second, "T[%d]", TB(s->in2_t));
        if (s->out_t >= 0) snprintf(out, sizeof out, "T[%d]", TB(s->out_t));
        StrBuf_printf(sb, "        { const float *in[2] = {%s, %s};\n", first, second);
        StrBuf_printf(sb, "          if (%s_%s(K%d, in, %s))", P, s->blocked ? "run_blocked" : "run", s->op, out);
        StrBuf_printf(sb, " fail(\"step %d (%s) failed\"); }\n", (int)(s - plan->steps), s->label);
        return;
    }
    if (op->kind == GOP_MAX_POOL && !(s->src.loc == LOC_NCHW && s->dst.loc == LOC_NCHW)) {
        const GraphTensor *xt = &g->tensors[op->in[0]], *yt = &g->tensors[s->out];
        long dx[4], dy[4];
        dims4(g, op->in[0], dx);
        dims4(g, s->out, dy);
        char sp[160], sl[320], dp[160], dl[320];
        view_text(plan, prefixes, s->src, dx, sp, sizeof sp, sl, sizeof sl);
        view_text(plan, prefixes, s->dst, dy, dp, sizeof dp, dl, sizeof dl);
        StrBuf_printf(sb,
                      "        ttrt_max_pool_layout(%s, %s,\n                  %s, %s,\n"
                      "                  %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld);\n",
                      sp, sl, dp, dl, (long long)xt->dim[0], (long long)xt->dim[1], (long long)xt->dim[2],
                      (long long)xt->dim[3], (long long)yt->dim[2], (long long)yt->dim[3], (long long)op->k,
                      (long long)op->stride, (long long)op->pad);
        return;
    }
    const GraphTensor *xt = &g->tensors[op->in[0]], *yt = &g->tensors[s->out];
    int x = TB(op->in[0]), y = TB(s->out);
    long count = (long)GraphTensor_count(yt), last = (long)xt->dim[xt->ndim - 1];
    long long p0 = (long long)op->param_off[0], p1 = (long long)op->param_off[1];
    dims(g, op->in[0], &outer, &chans, &inner);
    switch (op->kind) {
    case GOP_GELU:
        StrBuf_printf(sb, "        ttrt_gelu(T[%d], T[%d], %ld);\n", x, y, count);
        break;
    case GOP_SCALE:
        StrBuf_printf(sb, "        ttrt_scale(T[%d], T[%d], %ld, %.9ef);\n", x, y, count, op->alpha);
        break;
    case GOP_MASK_ADD:
        StrBuf_printf(sb, "        ttrt_mask_add(T[%d], P + %lld, T[%d], %lld, %lld, %lld, %ld);\n", x, p0, y,
                      (long long)op->k, (long long)(xt->dim[0] / op->k), (long long)xt->dim[1], last);
        break;
    case GOP_MAX_POOL:
    case GOP_AVG_POOL:
        StrBuf_printf(sb, "        ttrt_%s(T[%d], T[%d], %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld);\n",
                      op->kind == GOP_MAX_POOL ? "max_pool" : "avg_pool", x, y, (long long)(xt->dim[0] * xt->dim[1]),
                      (long long)xt->dim[2], (long long)xt->dim[3], (long long)yt->dim[2], (long long)yt->dim[3],
                      (long long)op->k, (long long)op->stride, (long long)op->pad);
        break;
    case GOP_GLOBAL_AVG_POOL:
        StrBuf_printf(sb, "        ttrt_global_avg_pool(T[%d], T[%d], %ld, %ld);\n", x, y, outer * chans, inner);
        break;
    case GOP_CONCAT: {
        long long c0 = 0;
        for (int j = 0; j < op->n_in; j++) {
            const GraphTensor *t = &g->tensors[op->in[j]];
            StrBuf_printf(sb, "        ttrt_concat_part(T[%d], T[%d], %lld, %lld, %lld, %lld, %lld);\n", TB(op->in[j]),
                          y, (long long)t->dim[0], (long long)t->dim[1], (long long)yt->dim[1], c0,
                          (long long)(t->dim[2] * t->dim[3]));
            c0 += t->dim[1];
        }
        break;
    }
    case GOP_SOFTMAX:
        StrBuf_printf(sb, "        ttrt_softmax(T[%d], T[%d], %ld, %ld);\n", x, y, count / last, last);
        break;
    case GOP_LAYER_NORM:
        StrBuf_printf(sb, "        ttrt_layer_norm(T[%d], P + %lld, P + %lld, T[%d], %ld, %ld, %.9ef);\n", x, p0, p1, y,
                      count / last, last, op->alpha);
        break;
    case GOP_SPLIT_HEADS:
    case GOP_SPLIT_HEADS_T:
    case GOP_MERGE_HEADS: {
        int64_t B, H, S, D;
        GraphOp_heads(g, op, &B, &H, &S, &D);
        StrBuf_printf(sb, "        ttrt_heads(T[%d], T[%d], %d, %lld, %lld, %lld, %lld);\n", x, y,
                      op->kind == GOP_SPLIT_HEADS     ? 0
                      : op->kind == GOP_SPLIT_HEADS_T ? 1
                                                      : 2,
                      (long long)B, (long long)H, (long long)S, (long long)D);
        break;
    }
    default:
        StrBuf_printf(sb, "        fail(\"op kind %s has no runtime\");\n", GraphOp_kindName(op->kind));
    }
}

/* ---- the program's frame: the protocol every network program follows ----
 * usage: net DATA OUT NUMBER REPEAT MIN_REPEAT_MS PROFILE THREADS; it prints
 * TT_OUTPUT n, then TT_RUN number seconds per repeat, then with PROFILE one
 * TT_STEP i seconds per step (app/cmd_run.c reads them). */

/* The sizes main() reads the data file and writes the output with. */
static void write_sizes(StrBuf *sb, const Graph *g, int n_steps) {
    StrBuf_printf(sb,
                  "\n#define N_TENSORS %d\n#define N_STEPS %d\n#define N_PARAMS %lldLL\n#define N_INPUT %lldLL\n"
                  "#define N_OUTPUT %lldLL\n",
                  g->n_tensors, n_steps, (long long)g->n_params, (long long)Graph_inputFloats(g),
                  (long long)GraphTensor_count(&g->tensors[g->output]));
}

static void write_helpers(StrBuf *sb) {
    StrBuf_append(sb, "\nstatic void fail(const char *msg) {\n    fprintf(stderr, \"%s\\n\", msg);\n    exit(3);\n}\n\n"
                      "static double now(void) {\n    struct timespec ts;\n    clock_gettime(CLOCK_MONOTONIC, &ts);\n"
                      "    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;\n}\n\n");
}

/* Closes step()'s switch and adds run_all(). */
static void write_run_all(StrBuf *sb) {
    StrBuf_append(sb, "    }\n}\n\n"
                      "static void run_all(double *prof) {\n"
                      "    for (int i = 0; i < N_STEPS; i++) {\n"
                      "        double t0 = prof ? now() : 0;\n"
                      "        step(i);\n"
                      "        if (prof) prof[i] += now() - t0;\n"
                      "    }\n}\n\n");
}

/* main() up to its cleanup: read the data, setup(), one run, the output from
 * T[out_tensor], the timed repeats, the profile. */
static void write_main(StrBuf *sb, int out_tensor) {
    StrBuf_append(
        sb,
        "int main(int argc, char **argv) {\n"
        "    if (argc != 8) fail(\"usage: net DATA OUT NUMBER REPEAT MIN_REPEAT_MS PROFILE THREADS\");\n"
        "    int number = atoi(argv[3]), repeat = atoi(argv[4]), profile = atoi(argv[6]), threads = atoi(argv[7]);\n"
        "    double min_ms = atof(argv[5]);\n"
        "    if (number < 1 || repeat < 1) fail(\"NUMBER and REPEAT must be >= 1\");\n"
        "#ifdef _OPENMP\n    if (threads > 0) omp_set_num_threads(threads);\n#else\n    (void)threads;\n#endif\n"
        "    float *data = malloc((size_t)(N_PARAMS + N_INPUT) * sizeof(float));\n"
        "    FILE *f = fopen(argv[1], \"rb\");\n"
        "    if (!data || !f) fail(\"cannot read the data file\");\n"
        "    if (fread(data, sizeof(float), (size_t)(N_PARAMS + N_INPUT), f) != (size_t)(N_PARAMS + N_INPUT))\n"
        "        fail(\"the data file is short\");\n"
        "    fclose(f);\n"
        "    setup(data);\n"
        "    run_all(0);\n"
        "    f = fopen(argv[2], \"wb\");\n");
    StrBuf_printf(sb,
                  "    if (!f || fwrite(T[%d], sizeof(float), (size_t)N_OUTPUT, f) != (size_t)N_OUTPUT || fclose(f))\n"
                  "        fail(\"cannot write the output file\");\n",
                  out_tensor);
    StrBuf_append(sb, "    printf(\"TT_OUTPUT %lld\\n\", (long long)N_OUTPUT);\n"
                      "    fflush(stdout);\n"
                      "    for (int r = 0; r < repeat; r++) {\n"
                      "        int n = number;\n"
                      "        for (;;) {\n"
                      "            double t0 = now();\n"
                      "            for (int j = 0; j < n; j++) run_all(0);\n"
                      "            double dt = now() - t0;\n"
                      "            if (dt * 1e3 >= min_ms || n >= 1000000) {\n"
                      "                printf(\"TT_RUN %d %.9e\\n\", n, dt / n);\n"
                      "                break;\n"
                      "            }\n"
                      "            double per = dt / n > 1e-9 ? dt / n : 1e-9;\n"
                      "            int want = (int)(min_ms * 1e-3 / per * 1.618) + 1;\n"
                      "            n = want > (int)(n * 1.618) + 1 ? want : (int)(n * 1.618) + 1;\n"
                      "        }\n"
                      "        fflush(stdout);\n"
                      "    }\n"
                      "    if (profile) {\n"
                      "        static double prof[N_STEPS];\n"
                      "        for (int j = 0; j < number; j++) run_all(prof);\n"
                      "        for (int i = 0; i < N_STEPS; i++) printf(\"TT_STEP %d %.9e\\n\", i, prof[i] / number);\n"
                      "    }\n");
}

void NetProg_write(const NetPlan *plan, const char *const *prefixes, int n_kernels, StrBuf *sb) {
    const Graph *g = plan->g;
    const GraphTasks *gt = plan->gt;
    StrBuf_printf(sb,
                  "/* %s: the network program generated by tunetop run (%d steps, %d tasks).\n"
                  " * usage: net DATA OUT NUMBER REPEAT MIN_REPEAT_MS PROFILE THREADS */\n"
                  "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n"
                  "#ifdef _OPENMP\n#include <omp.h>\n#endif\n#include \"netrt.h\"\n",
                  g->name, plan->n_steps, gt->n_tasks);
    for (int k = 0; k < n_kernels; k++)
        StrBuf_printf(sb, "#include \"%s.h\"\n", prefixes[k]);
    write_sizes(sb, g, plan->n_steps);
    StrBuf_append(sb, "static float *T[N_TENSORS], *B[N_TENSORS];\nstatic float *P;\n");
    for (int s = 0; s < plan->n_steps; s++)
        if (plan->steps[s].kind == NSTEP_KERNEL)
            StrBuf_printf(sb, "static %s_t *K%d;\n", prefixes[plan->steps[s].kernel], plan->steps[s].op);
    write_helpers(sb);
    StrBuf_append(sb, "static void step(int i) {\n    switch (i) {\n");
    for (int s = 0; s < plan->n_steps; s++) {
        StrBuf_printf(sb, "    case %d: /* %s */\n", s, plan->steps[s].label);
        emit_step(sb, plan, &plan->steps[s], prefixes);
        StrBuf_append(sb, "        break;\n");
    }
    write_run_all(sb);
    /* setup: buffers and kernels */
    StrBuf_append(sb, "static void setup(float *data) {\n    P = data;\n");
    for (int t = 0; t < g->n_tensors; t++) {
        if (plan->alias[t] != t) continue;
        if (g->tensors[t].producer < 0) {
            int i = 0;
            while (i < g->n_inputs && g->inputs[i] != t)
                i++;
            StrBuf_printf(sb, "    T[%d] = data + N_PARAMS + %lld;\n", t, (long long)Graph_inputOffset(g, i));
        } else
            StrBuf_printf(sb, "    if (!(T[%d] = calloc(%lld, sizeof(float)))) fail(\"out of memory\");\n", t,
                          (long long)GraphTensor_count(&g->tensors[t]));
    }
    for (int v = 0; v < plan->n_views; v++) {
        const NetView *w = &plan->views[v];
        if (w->loc != LOC_BUF) continue;
        const GraphTensor *x = &g->tensors[w->tensor];
        long long blocks = (x->dim[1] + w->op - 1) / w->op;
        StrBuf_printf(sb, "    if (!(B[%d] = calloc(%lld, sizeof(float)))) fail(\"out of memory\");\n", w->tensor,
                      (long long)x->dim[0] * blocks * w->op * x->dim[2] * x->dim[3]);
    }
    for (int s = 0; s < plan->n_steps; s++) {
        const NetStep *st = &plan->steps[s];
        if (st->kind != NSTEP_KERNEL) continue;
        const GraphOp *op = &g->ops[st->op];
        bool kbias = plan->ok ? plan->ok[st->op].bias : gt->tasks[gt->task[st->op]].wl.bias;
        char bias[48] = "";
        if (kbias) snprintf(bias, sizeof bias, ", P + %lld", (long long)g->ops[gt->epi_bias[st->op]].param_off[0]);
        if (op->kind == GOP_BATCH_MATMUL)
            StrBuf_printf(sb, "    { const float *c[1] = {0}; K%d = %s_create(c); }\n", st->op, prefixes[st->kernel]);
        else
            StrBuf_printf(sb, "    { const float *c[2] = {P + %lld%s}; K%d = %s_create(c); }\n",
                          (long long)op->param_off[0], bias, st->op, prefixes[st->kernel]);
        StrBuf_printf(sb, "    if (!K%d) fail(\"creating the kernel of step %d (%s) failed\");\n", st->op, s,
                      st->label);
    }
    StrBuf_append(sb, "}\n\n");
    write_main(sb, plan->alias[g->output]);
    for (int s = 0; s < plan->n_steps; s++)
        if (plan->steps[s].kind == NSTEP_KERNEL)
            StrBuf_printf(sb, "    %s_destroy(K%d);\n", prefixes[plan->steps[s].kernel], plan->steps[s].op);
    StrBuf_append(sb, "    return 0;\n}\n");
}

/* ---- a network run as subgraphs ---- */

static const char *const TE_ABI[] = {"tt_setup", "tt_pack", "tt_run", "tt_finish", "tt_teardown", "tt_te_kernel"};

void NetProg_renameKernel(const char *prefix, const char *source, StrBuf *out) {
    StrBuf_printf(out, "/* the cpu kernel ABI's entry points of %s */\n", prefix);
    for (size_t i = 0; i < sizeof TE_ABI / sizeof TE_ABI[0]; i++)
        StrBuf_printf(out, "#define %s %s%s\n", TE_ABI[i], prefix, TE_ABI[i] + 2); /* tt_run -> PREFIX_run */
    StrBuf_append(out, source);
}

void NetProg_writeSubgraphs(const Graph *g, const Subgraphs *sg, const char *const *prefixes, StrBuf *sb) {
    StrBuf_printf(sb,
                  "/* %s: the network program generated by tunetop run --subgraphs (%d subgraphs, %d tasks).\n"
                  " * usage: net DATA OUT NUMBER REPEAT MIN_REPEAT_MS PROFILE THREADS */\n"
                  "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n"
                  "#ifdef _OPENMP\n#include <omp.h>\n#endif\n",
                  g->name, sg->n_sg, sg->n_tasks);
    for (int t = 0; t < sg->n_tasks; t++)
        StrBuf_printf(sb,
                      "int %s_setup(float **args, void **state);\nvoid %s_run(void *state);\n"
                      "void %s_teardown(void *state);\n",
                      prefixes[t], prefixes[t], prefixes[t]);
    write_sizes(sb, g, sg->n_sg);
    StrBuf_append(sb, "static float *T[N_TENSORS];\nstatic float *P;\nstatic void *S[N_STEPS];\n");
    write_helpers(sb);
    StrBuf_append(sb, "static void step(int i) {\n    switch (i) {\n");
    for (int k = 0; k < sg->n_sg; k++) {
        const Subgraph *s = &sg->sg[sg->order[k]];
        StrBuf_printf(sb, "    case %d: /* %s */\n        %s_run(S[%d]);\n        break;\n", k, s->label,
                      prefixes[s->task], k);
    }
    write_run_all(sb);
    StrBuf_append(sb, "static void setup(float *data) {\n    P = data;\n");
    for (int i = 0; i < g->n_inputs; i++)
        StrBuf_printf(sb, "    T[%d] = data + N_PARAMS + %lld;\n", g->inputs[i], (long long)Graph_inputOffset(g, i));
    for (int k = 0; k < sg->n_sg; k++) {
        const Subgraph *s = &sg->sg[sg->order[k]];
        StrBuf_printf(sb, "    if (!(T[%d] = calloc(%lld, sizeof(float)))) fail(\"out of memory\");\n", s->out,
                      (long long)GraphTensor_count(&g->tensors[s->out]));
    }
    for (int k = 0; k < sg->n_sg; k++) {
        const Subgraph *s = &sg->sg[sg->order[k]];
        /* the operand array outlives setup (static): a kernel reads its operands from it at every run */
        StrBuf_printf(sb, "    { static float *a[%d];", s->n_args + 1);
        for (int a = 0; a < s->n_args; a++) {
            const SubgraphArg *x = &s->args[a];
            if (x->tensor >= 0)
                StrBuf_printf(sb, " a[%d] = T[%d];", a, x->tensor);
            else
                StrBuf_printf(sb, " a[%d] = P + %lld;", a, (long long)g->ops[x->op].param_off[x->param]);
        }
        StrBuf_printf(sb,
                      " a[%d] = T[%d];\n      if (%s_setup(a, &S[%d])) fail(\"setting up step %d (%s) failed\"); }\n",
                      s->n_args, s->out, prefixes[s->task], k, k, s->label);
    }
    StrBuf_append(sb, "}\n\n");
    write_main(sb, g->output);
    for (int k = 0; k < sg->n_sg; k++)
        StrBuf_printf(sb, "    %s_teardown(S[%d]);\n", prefixes[sg->sg[sg->order[k]].task], k);
    StrBuf_append(sb, "    return 0;\n}\n");
}
