/* tuner/netprog.c: the execution plan and the generated network program.
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
#include "tuner/netprog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/template.h"
#include "tuner/netrt_text.h" /* generated from netrt.h and netrt.c: NETRT_HEADER_TEXT, NETRT_SOURCE_TEXT */

const char *NetProg_runtimeSource(void) { return NETRT_SOURCE_TEXT; }
const char *NetProg_runtimeHeader(void) { return NETRT_HEADER_TEXT; }

static int only_consumer(const Graph *g, int t) {
    int found = -1, c = 0;
    for (int i = 0; i < g->n_ops; i++)
        for (int j = 0; j < g->ops[i].n_in; j++)
            if (g->ops[i].in[j] == t) c++, found = i;
    return c == 1 ? found : -1;
}

/* The tensor at the end of tunable op i's epilogue chain. */
static int chain_end(const GraphTasks *gt, const Graph *g, int i) {
    int t = g->ops[i].out;
    if (gt->epi_bias[i] >= 0) t = g->ops[gt->epi_bias[i]].out;
    if (gt->epi_add[i] >= 0) t = g->ops[gt->epi_add[i]].out;
    if (gt->epi_relu[i] >= 0) t = g->ops[gt->epi_relu[i]].out;
    return t;
}

static NetStep *add_step(NetPlan *plan, StepKind kind, int op, int task, int out, const char *label) {
    NetStep *s = &plan->steps[plan->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->op = op;
    s->op2 = -1;
    s->task = task;
    s->out = out;
    s->res = -1;
    s->rest_bias = s->rest_add = s->rest_relu = s->to_op = -1;
    snprintf(s->label, sizeof s->label, "%.95s", label);
    return s;
}

Status NetPlan_make(const Graph *g, const GraphTasks *gt, const int *blocked, NetPlan *plan, char *err) {
    memset(plan, 0, sizeof *plan);
    plan->g = g;
    plan->gt = gt;
    int n = g->n_ops;
    plan->steps = calloc((size_t)(4 * n + 1), sizeof *plan->steps);
    bool *chained_in = calloc((size_t)(n + 1), sizeof(bool));
    bool *absorbed = calloc((size_t)(n + 1), sizeof(bool)); /* a clip applied by a reblock step */
    if (!chained_in || !absorbed) abort();
    plan->alias = malloc((size_t)g->n_tensors * sizeof(int));
    int *head = malloc((size_t)(n + 1) * sizeof(int));   /* per op: the op heading its unit */
    bool *done = calloc((size_t)(n + 1), sizeof(bool)); /* per unit head */
    bool *ready = calloc((size_t)g->n_tensors, sizeof(bool));
    if (!plan->steps || !plan->alias || !head || !done || !ready) abort();

    /* units: a tunable op with its whole epilogue chain; a batch_norm with the
     * relu that is its only reader; every other op alone */
    for (int i = 0; i < n; i++)
        head[i] = gt->epi_of[i] >= 0 ? gt->epi_of[i] : i;
    for (int i = 0; i < n; i++) {
        if (g->ops[i].kind != GOP_BATCH_NORM || gt->epi_of[i] >= 0) continue;
        int c = only_consumer(g, g->ops[i].out);
        if (c >= 0 && g->ops[c].kind == GOP_RELU && gt->epi_of[c] < 0) head[c] = i;
    }
    for (int t = 0; t < g->n_tensors; t++)
        plan->alias[t] = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        ready[g->inputs[i]] = true;
        plan->alias[g->inputs[i]] = g->inputs[i];
    }

    /* Kahn over units in op order: a unit runs once every input it reads
     * from outside itself is ready. */
    int emitted = 0, units = 0;
    for (int i = 0; i < n; i++)
        units += head[i] == i;
    while (emitted < units) {
        int pick = -1;
        for (int i = 0; i < n && pick < 0; i++) {
            if (head[i] != i || done[i]) continue;
            bool ok = true;
            for (int j = 0; j < n && ok; j++) {
                if (head[j] != i) continue;
                for (int k = 0; k < g->ops[j].n_in && ok; k++) {
                    int t = g->ops[j].in[k], p = g->tensors[t].producer;
                    if (p >= 0 && head[p] == i) continue; /* inside the unit */
                    ok = ready[t];
                }
            }
            if (ok) pick = i;
        }
        if (pick < 0) {
            NetPlan_done(plan);
            free(head), free(done), free(ready), free(chained_in), free(absorbed);
            return tt_fail(err, "graph %s: no op can run next (a cycle)", g->name);
        }
        done[pick] = true;
        emitted++;
        const GraphOp *op = &g->ops[pick];
        if (GraphOp_isTunable(op->kind)) {
            int end = chain_end(gt, g, pick), t = gt->task[pick];
            const Workload *tw = &gt->tasks[t].wl;
            int mask = blocked ? blocked[t] : 0;
            char shape[64], label[96];
            Graph_shapeStr(g, op->out, shape, sizeof shape);
            snprintf(label, sizeof label, "task %d %s %s", t, GraphOp_kindName(op->kind), shape);
            int rb = gt->epi_bias[pick] >= 0 && !tw->bias ? gt->epi_bias[pick] : -1;
            int ra = gt->epi_add[pick] >= 0 && !tw->residual ? gt->epi_add[pick] : -1;
            int rr = gt->epi_relu[pick] >= 0 && !tw->relu ? gt->epi_relu[pick] : -1;
            bool rest = rb >= 0 || ra >= 0 || rr >= 0;
            /* Does the output stay blocked into the next kernel? The copy between the two blocked
             * layouts also applies an unfused bias and relu, or a clip that is the only reader. */
            int next = only_consumer(g, end), via = end, clip = -1;
            if (next >= 0 && g->ops[next].kind == GOP_CLIP && !rest && g->ops[next].out != g->output) {
                clip = next;
                via = g->ops[clip].out;
                next = only_consumer(g, via);
            }
            bool chain_out = false;
            if (blocked && (mask & BLOCKED_OUTPUT) && ra < 0 && end != g->output && next >= 0 &&
                (g->ops[next].kind == GOP_CONV2D || g->ops[next].kind == GOP_DEPTHWISE) && g->ops[next].in[0] == via &&
                gt->task[next] >= 0) {
                const Workload *nw = &gt->tasks[gt->task[next]].wl;
                chain_out = (blocked[gt->task[next]] & BLOCKED_INPUT) && !nw->residual;
            }
            if (!chain_out) clip = -1;
            int res = tw->residual ? g->ops[gt->epi_add[pick]].in[1] : -1;
            char l2[128];
            if (mask && !chained_in[pick]) {
                snprintf(l2, sizeof l2, "%.90s: NCHW->blocked", label);
                add_step(plan, STEP_PACK, pick, t, end, l2)->res = res;
            }
            NetStep *s = add_step(plan, STEP_KERNEL, pick, t, end, label);
            s->res = res;
            s->chain_in = chained_in[pick];
            s->split = mask != 0;
            if (mask & BLOCKED_OUTPUT) {
                if (chain_out) {
                    snprintf(l2, sizeof l2, "%.80s: blocked->blocked%s%s%s", label, rb >= 0 ? " +bias" : "",
                             rr >= 0 ? " +relu" : "", clip >= 0 ? " +clip" : "");
                    NetStep *r = add_step(plan, STEP_REBLOCK, pick, t, end, l2);
                    r->to_op = next;
                    r->op2 = clip;
                    r->rest_bias = rb;
                    r->rest_relu = rr;
                    chained_in[next] = true;
                    if (clip >= 0) absorbed[clip] = true;
                    rest = false; /* applied by the copy */
                } else {
                    snprintf(l2, sizeof l2, "%.90s: blocked->NCHW", label);
                    add_step(plan, STEP_UNPACK, pick, t, end, l2);
                }
            }
            if (rest) {
                char l3[96];
                snprintf(l3, sizeof l3, "%s%s%s%s%s %s", rb >= 0 ? "bias_add" : "", rb >= 0 && (ra >= 0 || rr >= 0) ? "+" : "",
                         ra >= 0 ? "add" : "", ra >= 0 && rr >= 0 ? "+" : "", rr >= 0 ? "relu" : "", shape);
                NetStep *e = add_step(plan, STEP_RUNTIME, pick, -1, end, l3);
                e->res = ra >= 0 ? g->ops[ra].in[1] : -1;
                e->rest_bias = rb;
                e->rest_add = ra;
                e->rest_relu = rr;
            }
            plan->alias[end] = end;
            ready[end] = true;
            continue;
        }
        int second = -1;
        for (int j = 0; j < n; j++)
            if (j != pick && head[j] == pick) second = j;
        int out = second >= 0 ? g->ops[second].out : op->out;
        if (absorbed[pick]) {
            ready[out] = true; /* never materialised: its only reader gets it blocked */
            continue;
        }
        if (op->kind == GOP_FLATTEN) {
            plan->alias[out] = plan->alias[op->in[0]]; /* NCHW flatten is a view */
            ready[out] = true;
            continue;
        }
        NetStep *s = add_step(plan, STEP_RUNTIME, pick, -1, out, "");
        s->op2 = second;
        Graph_runLabel(g, pick, second >= 0 ? 2 : 1, s->label, sizeof s->label);
        plan->alias[out] = out;
        ready[out] = true;
    }
    free(head), free(done), free(ready), free(chained_in), free(absorbed);
    return TT_OK;
}

void NetPlan_done(NetPlan *this) {
    free(this->steps);
    free(this->alias);
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

#define TB(t) (plan->alias[(t)])

static void emit_step(StrBuf *sb, const NetPlan *plan, const NetStep *s, const char *const *prefixes) {
    const Graph *g = plan->g;
    const GraphOp *op = &g->ops[s->op];
    long outer, chans, inner;
    const char *P = s->task >= 0 ? prefixes[s->task] : "";
    if (s->kind == STEP_UNPACK) {
        StrBuf_printf(sb, "        %s_unpack_output(K%d, T[%d]);\n", P, s->op, TB(s->out));
        return;
    }
    if (s->kind == STEP_REBLOCK) {
        const char *Q = prefixes[plan->gt->task[s->to_op]];
        const GraphTensor *t = &g->tensors[s->out];
        char shift[48] = "0";
        if (s->rest_bias >= 0) snprintf(shift, sizeof shift, "P + %lld", (long long)g->ops[s->rest_bias].param_off[0]);
        StrBuf_printf(sb,
                      "        ttrt_reblock(%s_blocked_output(K%d), %s_BLOCKED_OUT_CB, %s_BLOCKED_OUT_H_ALLOC, "
                      "%s_BLOCKED_OUT_W_ALLOC, %s_BLOCKED_OUT_TOP, %s_BLOCKED_OUT_LEFT, %s_BLOCKED_OUT_REPEAT,\n"
                      "                     %s_blocked_input(K%d), %s_BLOCKED_IN_CB, %s_BLOCKED_IN_H_ALLOC, "
                      "%s_BLOCKED_IN_W_ALLOC, %s_BLOCKED_IN_TOP, %s_BLOCKED_IN_LEFT, %s_BLOCKED_IN_REPEAT,\n"
                      "                     %lld, %lld, %lld, %lld, %s, %d, %.9ef, %.9ef);\n",
                      P, s->op, P, P, P, P, P, P, Q, s->to_op, Q, Q, Q, Q, Q, Q, (long long)t->dim[0],
                      (long long)t->dim[1], (long long)t->dim[2], (long long)t->dim[3], shift,
                      s->rest_relu >= 0 ? 1 : s->op2 >= 0 ? 2 : 0, s->op2 >= 0 ? g->ops[s->op2].alpha : 0.0,
                      s->op2 >= 0 ? g->ops[s->op2].beta : 0.0);
        return;
    }
    if (s->kind == STEP_KERNEL || s->kind == STEP_PACK) {
        char second[32] = "0";
        if (op->kind == GOP_BATCH_MATMUL)
            snprintf(second, sizeof second, "T[%d]", TB(op->in[1]));
        else if (s->res >= 0)
            snprintf(second, sizeof second, "T[%d]", TB(s->res));
        /* a chained input is in the kernel's blocked buffer already: the data pointer is not read */
        char first[32] = "0";
        if (!s->chain_in) snprintf(first, sizeof first, "T[%d]", TB(op->in[0]));
        StrBuf_printf(sb, "        { const float *in[2] = {%s, %s};\n", first, second);
        const char *fn = s->split ? "run_blocked" : "run";
        if (s->kind == STEP_PACK)
            StrBuf_printf(sb, "          if (%s_pack_input(K%d, in))", P, s->op);
        else
            StrBuf_printf(sb, "          if (%s_%s(K%d, %s, T[%d]))", P, fn, s->op, s->chain_in ? "0" : "in", TB(s->out));
        StrBuf_printf(sb, " fail(\"step %d (%s) failed\"); (void)in; }\n", (int)(s - plan->steps), s->label);
        return;
    }
    if (s->kind == STEP_RUNTIME && (s->rest_bias >= 0 || s->rest_add >= 0 || s->rest_relu >= 0)) {
        dims(g, s->out, &outer, &chans, &inner);
        char bias[48] = "0", res[32] = "0";
        if (s->rest_bias >= 0) snprintf(bias, sizeof bias, "P + %lld", (long long)g->ops[s->rest_bias].param_off[0]);
        if (s->res >= 0) snprintf(res, sizeof res, "T[%d]", TB(s->res));
        StrBuf_printf(sb, "        ttrt_affine(T[%d], 0, %s, %s, T[%d], %ld, %ld, %ld, %d);\n", TB(s->out), bias, res,
                      TB(s->out), outer, chans, inner, s->rest_relu >= 0);
        return;
    }
    const GraphTensor *xt = &g->tensors[op->in[0]], *yt = &g->tensors[s->out];
    int x = TB(op->in[0]), y = TB(s->out);
    long count = (long)GraphTensor_count(yt), last = (long)xt->dim[xt->ndim - 1];
    long long p0 = (long long)op->param_off[0], p1 = (long long)op->param_off[1];
    dims(g, op->in[0], &outer, &chans, &inner);
    int relu = s->op2 >= 0;
    switch (op->kind) {
    case GOP_BIAS_ADD:
        StrBuf_printf(sb, "        ttrt_affine(T[%d], 0, P + %lld, 0, T[%d], %ld, %ld, %ld, %d);\n", x, p0, y, outer,
                      chans, inner, relu);
        break;
    case GOP_BATCH_NORM:
        StrBuf_printf(sb, "        ttrt_affine(T[%d], P + %lld, P + %lld, 0, T[%d], %ld, %ld, %ld, %d);\n", x, p0, p1,
                      y, outer, chans, inner, relu);
        break;
    case GOP_RELU:
        StrBuf_printf(sb, "        ttrt_affine(T[%d], 0, 0, 0, T[%d], 1, 1, %ld, 1);\n", x, y, count);
        break;
    case GOP_ADD:
        StrBuf_printf(sb, "        ttrt_affine(T[%d], 0, 0, T[%d], T[%d], 1, 1, %ld, 0);\n", x, TB(op->in[1]), y,
                      count);
        break;
    case GOP_CLIP:
        StrBuf_printf(sb, "        ttrt_clip(T[%d], T[%d], %ld, %.9ef, %.9ef);\n", x, y, count, op->alpha, op->beta);
        break;
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
                      op->kind == GOP_MAX_POOL ? "max_pool" : "avg_pool", x, y,
                      (long long)(xt->dim[0] * xt->dim[1]), (long long)xt->dim[2], (long long)xt->dim[3],
                      (long long)yt->dim[2], (long long)yt->dim[3], (long long)op->k, (long long)op->stride,
                      (long long)op->pad);
        break;
    case GOP_GLOBAL_AVG_POOL:
        StrBuf_printf(sb, "        ttrt_global_avg_pool(T[%d], T[%d], %ld, %ld);\n", x, y, outer * chans, inner);
        break;
    case GOP_CONCAT: {
        long long c0 = 0;
        for (int j = 0; j < op->n_in; j++) {
            const GraphTensor *t = &g->tensors[op->in[j]];
            StrBuf_printf(sb, "        ttrt_concat_part(T[%d], T[%d], %lld, %lld, %lld, %lld, %lld);\n",
                          TB(op->in[j]), y, (long long)t->dim[0], (long long)t->dim[1], (long long)yt->dim[1], c0,
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
        long long H = op->k, S = op->stride, D, B;
        if (op->kind == GOP_MERGE_HEADS)
            D = xt->dim[2], B = xt->dim[0] / H;
        else
            D = xt->dim[1] / H, B = xt->dim[0] / S;
        StrBuf_printf(sb, "        ttrt_heads(T[%d], T[%d], %d, %lld, %lld, %lld, %lld);\n", x, y,
                      op->kind == GOP_SPLIT_HEADS ? 0 : op->kind == GOP_SPLIT_HEADS_T ? 1 : 2, B, H, S, D);
        break;
    }
    default:
        StrBuf_printf(sb, "        fail(\"op kind %s has no runtime\");\n", GraphOp_kindName(op->kind));
    }
}

void NetProg_write(const NetPlan *plan, const char *const *prefixes, StrBuf *sb) {
    const Graph *g = plan->g;
    const GraphTasks *gt = plan->gt;
    StrBuf_printf(sb,
                  "/* %s: the network program generated by tunetop run (%d steps, %d tasks).\n"
                  " * usage: net DATA OUT NUMBER REPEAT MIN_REPEAT_MS PROFILE THREADS */\n"
                  "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n"
                  "#ifdef _OPENMP\n#include <omp.h>\n#endif\n#include \"netrt.h\"\n",
                  g->name, plan->n_steps, gt->n_tasks);
    for (int t = 0; t < gt->n_tasks; t++)
        StrBuf_printf(sb, "#include \"%s.h\"\n", prefixes[t]);
    StrBuf_printf(sb, "\n#define N_TENSORS %d\n#define N_STEPS %d\n#define N_PARAMS %lldLL\n#define N_INPUT %lldLL\n"
                      "#define N_OUTPUT %lldLL\n",
                  g->n_tensors, plan->n_steps, (long long)g->n_params,
                  (long long)Graph_inputFloats(g),
                  (long long)GraphTensor_count(&g->tensors[g->output]));
    StrBuf_append(sb, "static float *T[N_TENSORS];\nstatic float *P;\n");
    for (int s = 0; s < plan->n_steps; s++)
        if (plan->steps[s].kind == STEP_KERNEL)
            StrBuf_printf(sb, "static %s_t *K%d;\n", prefixes[plan->steps[s].task], plan->steps[s].op);
    StrBuf_append(sb, "\nstatic void fail(const char *msg) {\n    fprintf(stderr, \"%s\\n\", msg);\n    exit(3);\n}\n\n"
                      "static double now(void) {\n    struct timespec ts;\n    clock_gettime(CLOCK_MONOTONIC, &ts);\n"
                      "    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;\n}\n\n"
                      "static void step(int i) {\n    switch (i) {\n");
    for (int s = 0; s < plan->n_steps; s++) {
        StrBuf_printf(sb, "    case %d: /* %s */\n", s, plan->steps[s].label);
        emit_step(sb, plan, &plan->steps[s], prefixes);
        StrBuf_append(sb, "        break;\n");
    }
    StrBuf_append(sb, "    }\n}\n\n"
                      "static void run_all(double *prof) {\n"
                      "    for (int i = 0; i < N_STEPS; i++) {\n"
                      "        double t0 = prof ? now() : 0;\n"
                      "        step(i);\n"
                      "        if (prof) prof[i] += now() - t0;\n"
                      "    }\n}\n\n");
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
    for (int s = 0; s < plan->n_steps; s++) {
        const NetStep *st = &plan->steps[s];
        if (st->kind != STEP_KERNEL) continue;
        const GraphOp *op = &g->ops[st->op];
        const Workload *tw = &gt->tasks[st->task].wl;
        char bias[48] = "";
        if (tw->bias) snprintf(bias, sizeof bias, ", P + %lld", (long long)g->ops[gt->epi_bias[st->op]].param_off[0]);
        if (op->kind == GOP_BATCH_MATMUL)
            StrBuf_printf(sb, "    { const float *c[1] = {0}; K%d = %s_create(c); }\n", st->op, prefixes[st->task]);
        else
            StrBuf_printf(sb, "    { const float *c[2] = {P + %lld%s}; K%d = %s_create(c); }\n",
                          (long long)op->param_off[0], bias, st->op, prefixes[st->task]);
        StrBuf_printf(sb, "    if (!K%d) fail(\"creating the kernel of step %d (%s) failed\");\n", st->op, s,
                      st->label);
    }
    StrBuf_append(sb, "}\n\n");
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
                  plan->alias[g->output]);
    StrBuf_append(
        sb,
        "    printf(\"TT_OUTPUT %lld\\n\", (long long)N_OUTPUT);\n"
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
    for (int s = 0; s < plan->n_steps; s++)
        if (plan->steps[s].kind == STEP_KERNEL)
            StrBuf_printf(sb, "    %s_destroy(K%d);\n", prefixes[plan->steps[s].task], plan->steps[s].op);
    StrBuf_append(sb, "    return 0;\n}\n");
}
