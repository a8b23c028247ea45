/* tuner/net/graph.c: the network graph, its builders, and task extraction. */
#include "tuner/net/graph.h"

#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const KIND_NAMES[GOP_COUNT] = {"conv2d",
                                                  "depthwise_conv2d",
                                                  "dense",
                                                  "batch_matmul",
                                                  "bias_add",
                                                  "batch_norm",
                                                  "relu",
                                                  "clip",
                                                  "gelu",
                                                  "scale",
                                                  "add",
                                                  "mask",
                                                  "max_pool2d",
                                                  "avg_pool2d",
                                                  "global_avg_pool2d",
                                                  "concatenate",
                                                  "softmax",
                                                  "layer_norm",
                                                  "flatten",
                                                  "split_heads",
                                                  "split_heads_t",
                                                  "merge_heads"};

const char *GraphOp_kindName(GraphOpKind k) { return k >= 0 && k < GOP_COUNT ? KIND_NAMES[k] : "?"; }

bool GraphOp_isTunable(GraphOpKind k) {
    return k == GOP_CONV2D || k == GOP_DEPTHWISE || k == GOP_DENSE || k == GOP_BATCH_MATMUL;
}

bool GraphOp_isLayout(GraphOpKind k) {
    return k == GOP_FLATTEN || k == GOP_SPLIT_HEADS || k == GOP_SPLIT_HEADS_T || k == GOP_MERGE_HEADS;
}

static void *grow(void *p, int *cap, size_t elem) {
    int ncap = *cap ? *cap * 2 : 64;
    void *q = realloc(p, (size_t)ncap * elem);
    if (!q) abort(); /* out of memory is not recoverable here (as in base/strbuf) */
    *cap = ncap;
    return q;
}

void Graph_init(Graph *this, const char *name, Layout layout, int64_t batch) {
    memset(this, 0, sizeof *this);
    snprintf(this->name, sizeof this->name, "%s", name ? name : "");
    this->layout = layout;
    this->batch = batch;
    this->input = this->output = -1;
}

void Graph_done(Graph *this) {
    free(this->tensors);
    free(this->ops);
    memset(this, 0, sizeof *this);
}

int64_t GraphTensor_count(const GraphTensor *t) {
    int64_t c = 1;
    for (int i = 0; i < t->ndim; i++)
        c *= t->dim[i];
    return c;
}

static int new_tensor(Graph *this, int ndim, const int64_t *dim, int producer) {
    if (this->n_tensors == this->cap_tensors)
        this->tensors = grow(this->tensors, &this->cap_tensors, sizeof *this->tensors);
    GraphTensor *t = &this->tensors[this->n_tensors];
    memset(t, 0, sizeof *t);
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        t->dim[i] = dim[i];
        if (dim[i] < 1) {
            this->too_small = true;
            t->dim[i] = 1;
        }
    }
    t->producer = producer;
    this->output = this->n_tensors;
    return this->n_tensors++;
}

/* Appends an op reading ins; its output tensor gets the given shape. */
static GraphOp *new_op(Graph *this, GraphOpKind kind, const int *ins, int n_in, int ndim, const int64_t *dim) {
    if (this->n_ops == this->cap_ops) this->ops = grow(this->ops, &this->cap_ops, sizeof *this->ops);
    GraphOp *op = &this->ops[this->n_ops];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->n_in = n_in;
    for (int i = 0; i < n_in; i++)
        op->in[i] = ins[i];
    op->out = new_tensor(this, ndim, dim, this->n_ops);
    this->n_ops++;
    return op;
}

static void add_param(Graph *this, GraphOp *op, int64_t count) {
    op->param_off[op->n_params] = this->n_params;
    op->param_count[op->n_params] = count;
    op->n_params++;
    this->n_params += count;
}

int Graph_input(Graph *this, int ndim, const int64_t *dim) {
    if (this->n_inputs == GRAPH_MAX_INPUTS) abort(); /* a programming error in a network definition */
    int t = new_tensor(this, ndim, dim, -1);
    if (this->n_inputs == 0) this->input = t;
    this->inputs[this->n_inputs++] = t;
    return t;
}

int64_t Graph_inputOffset(const Graph *this, int i) {
    int64_t off = 0;
    for (int k = 0; k < i && k < this->n_inputs; k++)
        off += GraphTensor_count(&this->tensors[this->inputs[k]]);
    return off;
}

int64_t Graph_inputFloats(const Graph *this) { return Graph_inputOffset(this, this->n_inputs); }

static int64_t out_extent(int64_t in, int64_t k, int64_t stride, int64_t pad) {
    int64_t span = in + 2 * pad - k;
    return span < 0 ? 0 : span / stride + 1;
}

int Graph_conv(Graph *this, GraphOpKind kind, int x, int64_t co, int64_t kh, int64_t kw, int64_t stride, int64_t ph,
               int64_t pw) {
    const GraphTensor *t = &this->tensors[x];
    Workload wl;
    memset(&wl, 0, sizeof wl);
    wl.op = kind == GOP_DEPTHWISE ? OP_DEPTHWISE_CONV2D : OP_CONV2D;
    wl.layout = this->layout;
    wl.n = t->dim[0];
    wl.ci = t->dim[1];
    wl.h = t->dim[2];
    wl.w = t->dim[3];
    wl.co = kind == GOP_DEPTHWISE ? t->dim[1] : co;
    wl.mult = 1;
    wl.kh = kh;
    wl.kw = kw;
    wl.stride_h = wl.stride_w = stride;
    wl.pad_h = ph;
    wl.pad_w = pw;
    wl.dil_h = wl.dil_w = 1;
    int64_t dim[4] = {wl.n, wl.co, out_extent(wl.h, kh, stride, ph), out_extent(wl.w, kw, stride, pw)};
    GraphOp *op = new_op(this, kind, &x, 1, 4, dim);
    op->wl = wl;
    add_param(this, op, wl.co * (kind == GOP_DEPTHWISE ? 1 : wl.ci) * kh * kw);
    return op->out;
}

int Graph_dense(Graph *this, int x, int64_t n) {
    const GraphTensor *t = &this->tensors[x];
    Workload wl;
    memset(&wl, 0, sizeof wl);
    wl.op = OP_DENSE;
    wl.layout = LAYOUT_NCHW; /* meaningless for dense; fixed so that keys agree */
    wl.m = t->dim[0];
    wl.k = t->dim[1];
    wl.n = n;
    int64_t dim[2] = {wl.m, n};
    GraphOp *op = new_op(this, GOP_DENSE, &x, 1, 2, dim);
    op->wl = wl;
    add_param(this, op, n * wl.k);
    return op->out;
}

int Graph_batchMatmul(Graph *this, int a, int b) {
    const GraphTensor *ta = &this->tensors[a], *tb = &this->tensors[b];
    Workload wl;
    memset(&wl, 0, sizeof wl);
    wl.op = OP_BATCH_MATMUL;
    wl.layout = LAYOUT_NCHW;
    wl.b = ta->dim[0];
    wl.m = ta->dim[1];
    wl.k = ta->dim[2];
    wl.n = tb->dim[1];
    int ins[2] = {a, b};
    int64_t dim[3] = {wl.b, wl.m, wl.n};
    GraphOp *op = new_op(this, GOP_BATCH_MATMUL, ins, 2, 3, dim);
    op->wl = wl;
    return op->out;
}

int Graph_unary(Graph *this, GraphOpKind kind, int x, double alpha, double beta, bool joins_prev) {
    GraphTensor t = this->tensors[x];
    int ndim = t.ndim;
    int64_t dim[4];
    memcpy(dim, t.dim, sizeof dim);
    if (kind == GOP_FLATTEN) {
        ndim = 2;
        dim[1] = GraphTensor_count(&t) / t.dim[0];
    } else if (kind == GOP_GLOBAL_AVG_POOL) {
        dim[2] = dim[3] = 1;
    }
    GraphOp *op = new_op(this, kind, &x, 1, ndim, dim);
    op->alpha = alpha;
    op->beta = beta;
    op->joins_prev = joins_prev;
    if (kind == GOP_BIAS_ADD) add_param(this, op, t.dim[1]);
    if (kind == GOP_BATCH_NORM) add_param(this, op, t.dim[1]), add_param(this, op, t.dim[1]);
    if (kind == GOP_LAYER_NORM) add_param(this, op, t.dim[t.ndim - 1]), add_param(this, op, t.dim[t.ndim - 1]);
    return op->out;
}

int Graph_add(Graph *this, int x, int y, bool joins_prev) {
    int ins[2] = {x, y};
    GraphTensor t = this->tensors[x];
    GraphOp *op = new_op(this, GOP_ADD, ins, 2, t.ndim, t.dim);
    op->joins_prev = joins_prev;
    return op->out;
}

int Graph_maskAdd(Graph *this, int x, int64_t batch, bool joins_prev) {
    GraphTensor t = this->tensors[x];
    GraphOp *op = new_op(this, GOP_MASK_ADD, &x, 1, t.ndim, t.dim);
    op->joins_prev = joins_prev;
    op->k = batch;
    add_param(this, op, batch * t.dim[t.ndim - 1]);
    return op->out;
}

int Graph_pool(Graph *this, GraphOpKind kind, int x, int64_t k, int64_t stride, int64_t pad) {
    GraphTensor t = this->tensors[x];
    int64_t dim[4] = {t.dim[0], t.dim[1], out_extent(t.dim[2], k, stride, pad), out_extent(t.dim[3], k, stride, pad)};
    GraphOp *op = new_op(this, kind, &x, 1, 4, dim);
    op->k = k;
    op->stride = stride;
    op->pad = pad;
    return op->out;
}

int Graph_concat(Graph *this, const int *xs, int n) {
    GraphTensor t = this->tensors[xs[0]];
    int64_t dim[4] = {t.dim[0], 0, t.dim[2], t.dim[3]};
    for (int i = 0; i < n; i++)
        dim[1] += this->tensors[xs[i]].dim[1];
    return new_op(this, GOP_CONCAT, xs, n, 4, dim)->out;
}

int Graph_heads(Graph *this, GraphOpKind kind, int x, int64_t heads, int64_t seq) {
    GraphTensor t = this->tensors[x];
    int64_t dim[3];
    int ndim;
    if (kind == GOP_MERGE_HEADS) {
        int64_t b = t.dim[0] / heads;
        dim[0] = b * t.dim[1];
        dim[1] = heads * t.dim[2];
        ndim = 2;
    } else {
        int64_t b = t.dim[0] / seq, d = t.dim[1] / heads;
        dim[0] = b * heads;
        dim[1] = kind == GOP_SPLIT_HEADS ? seq : d;
        dim[2] = kind == GOP_SPLIT_HEADS ? d : seq;
        ndim = 3;
    }
    GraphOp *op = new_op(this, kind, &x, 1, ndim, dim);
    op->k = heads;
    op->stride = seq;
    return op->out;
}

void GraphOp_heads(const Graph *g, const GraphOp *op, int64_t *B, int64_t *H, int64_t *S, int64_t *D) {
    const GraphTensor *xt = &g->tensors[op->in[0]];
    *H = op->k;
    *S = op->stride;
    if (op->kind == GOP_MERGE_HEADS)
        *D = xt->dim[2], *B = xt->dim[0] / *H;
    else
        *D = xt->dim[1] / *H, *B = xt->dim[0] / *S;
}

int Graph_consumers(const Graph *this, int t) {
    int c = 0;
    for (int i = 0; i < this->n_ops; i++)
        for (int j = 0; j < this->ops[i].n_in; j++)
            c += this->ops[i].in[j] == t;
    return c;
}

Status Graph_order(const Graph *this, int *order, char *err) {
    int n = this->n_ops;
    bool *done = calloc((size_t)(n ? n : 1), sizeof *done);
    if (!done) return tt_fail(err, "out of memory ordering %d ops", n);
    /* Repeatedly take the first op (in added order) whose inputs are all ready. */
    int k = 0, start = 0;
    while (k < n) {
        int pick = -1;
        for (int i = start; i < n && pick < 0; i++) {
            if (done[i]) continue;
            bool ready = true;
            for (int j = 0; j < this->ops[i].n_in && ready; j++) {
                int p = this->tensors[this->ops[i].in[j]].producer;
                ready = p < 0 || done[p];
            }
            if (ready) pick = i;
        }
        if (pick < 0) {
            free(done);
            return tt_fail(err, "graph %s has a cycle", this->name);
        }
        done[pick] = true;
        order[k++] = pick;
        while (start < n && done[start])
            start++;
    }
    free(done);
    return TT_OK;
}

void Graph_shapeStr(const Graph *this, int t, char *buf, size_t n) {
    const GraphTensor *x = &this->tensors[t];
    if (x->ndim == 4 && this->layout == LAYOUT_NHWC) {
        snprintf(buf, n, "%lldx%lldx%lldx%lld", (long long)x->dim[0], (long long)x->dim[2], (long long)x->dim[3],
                 (long long)x->dim[1]);
        return;
    }
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < x->ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? "x" : "", (long long)x->dim[i]);
}

Status Graph_toJson(const Graph *this, StrBuf *sb, char *err) {
    int *order = malloc((size_t)(this->n_ops ? this->n_ops : 1) * sizeof(int));
    if (!order) return tt_fail(err, "out of memory");
    if (Graph_order(this, order, err) != TT_OK) {
        free(order);
        return TT_ERR;
    }
    StrBuf_printf(sb, "{\"name\": \"%s\", \"layout\": \"NCHW\", \"inputs\": [", this->name);
    for (int i = 0; i < this->n_inputs; i++)
        StrBuf_printf(sb, "%s%d", i ? ", " : "", this->inputs[i]);
    StrBuf_printf(sb, "], \"output\": %d, \"n_params\": %lld,\n \"tensors\": [", this->output,
                  (long long)this->n_params);
    for (int t = 0; t < this->n_tensors; t++) {
        StrBuf_printf(sb, "%s[", t ? ", " : "");
        for (int d = 0; d < this->tensors[t].ndim; d++)
            StrBuf_printf(sb, "%s%lld", d ? ", " : "", (long long)this->tensors[t].dim[d]);
        StrBuf_append(sb, "]");
    }
    StrBuf_append(sb, "],\n \"ops\": [\n");
    for (int k = 0; k < this->n_ops; k++) {
        const GraphOp *op = &this->ops[order[k]];
        StrBuf_printf(sb, "  {\"kind\": \"%s\", \"in\": [", GraphOp_kindName(op->kind));
        for (int j = 0; j < op->n_in; j++)
            StrBuf_printf(sb, "%s%d", j ? ", " : "", op->in[j]);
        StrBuf_printf(sb, "], \"out\": %d, \"params\": [", op->out);
        for (int j = 0; j < op->n_params; j++)
            StrBuf_printf(sb, "%s[%lld, %lld]", j ? ", " : "", (long long)op->param_off[j],
                          (long long)op->param_count[j]);
        const Workload *wl = &op->wl;
        StrBuf_printf(sb,
                      "], \"attrs\": {\"k\": %lld, \"stride\": %lld, \"pad\": %lld, \"alpha\": %.17g, "
                      "\"beta\": %.17g",
                      (long long)op->k, (long long)op->stride, (long long)op->pad, op->alpha, op->beta);
        if (op->kind == GOP_CONV2D || op->kind == GOP_DEPTHWISE)
            StrBuf_printf(sb,
                          ", \"co\": %lld, \"kh\": %lld, \"kw\": %lld, \"stride_h\": %lld, \"stride_w\": %lld, "
                          "\"pad_h\": %lld, \"pad_w\": %lld, \"group\": %lld",
                          (long long)wl->co, (long long)wl->kh, (long long)wl->kw, (long long)wl->stride_h,
                          (long long)wl->stride_w, (long long)wl->pad_h, (long long)wl->pad_w,
                          (long long)(op->kind == GOP_DEPTHWISE ? wl->ci : 1));
        if (op->kind == GOP_DENSE) StrBuf_printf(sb, ", \"n\": %lld", (long long)wl->n);
        StrBuf_printf(sb, "}}%s\n", k + 1 < this->n_ops ? "," : "");
    }
    StrBuf_append(sb, " ]}\n");
    free(order);
    return TT_OK;
}

/* ---- task extraction ---- */

static void add_untuned(GraphTasks *this, const char *name) {
    for (int i = 0; i < this->n_untuned; i++) {
        if (strncmp(this->untuned[i].name, name, sizeof this->untuned[i].name - 1) == 0) {
            this->untuned[i].count++;
            return;
        }
    }
    if (this->n_untuned == this->cap_untuned)
        this->untuned = grow(this->untuned, &this->cap_untuned, sizeof *this->untuned);
    GraphUntuned *u = &this->untuned[this->n_untuned++];
    memset(u, 0, sizeof *u);
    snprintf(u->name, sizeof u->name, "%.63s", name);
    u->count = 1;
}

int Graph_onlyReader(const Graph *g, int t) {
    int found = -1, c = 0;
    for (int i = 0; i < g->n_ops; i++)
        for (int j = 0; j < g->ops[i].n_in; j++)
            if (g->ops[i].in[j] == t) c++, found = i;
    return c == 1 ? found : -1;
}

bool GraphOp_isRelu6(const GraphOp *op) { return op->kind == GOP_CLIP && op->alpha == 0 && op->beta == 6; }

/* Same operator and shape: the identity of what the template tunes. */
static bool same_shape(const Workload *a, const Workload *b) {
    Workload x = *a, y = *b;
    x.bias = x.relu = x.residual = x.relu6 = false;
    y.bias = y.relu = y.residual = y.relu6 = false;
    return memcmp(&x, &y, sizeof x) == 0; /* both were zeroed before filling, so padding is equal */
}

void Graph_runLabel(const Graph *this, int first, int n, char *buf, size_t len) {
    const GraphOp *op = &this->ops[first];
    char kinds[64] = "";
    for (int j = first; j < first + n; j++) {
        const GraphOp *o = &this->ops[j];
        char k[32];
        if (o->kind == GOP_CLIP)
            snprintf(k, sizeof k, "clip(%g,%g)", o->alpha, o->beta);
        else
            snprintf(k, sizeof k, "%s", GraphOp_kindName(o->kind));
        if (j > first) strncat(kinds, "+", sizeof kinds - strlen(kinds) - 1);
        strncat(kinds, k, sizeof kinds - strlen(kinds) - 1);
    }
    char shape[64];
    bool pool = op->kind == GOP_MAX_POOL || op->kind == GOP_AVG_POOL || op->kind == GOP_GLOBAL_AVG_POOL;
    Graph_shapeStr(this, pool ? op->in[0] : op->out, shape, sizeof shape);
    if (op->kind == GOP_MAX_POOL || op->kind == GOP_AVG_POOL)
        snprintf(buf, len, "%s %s %lldx%lld s%lld", kinds, shape, (long long)op->k, (long long)op->k,
                 (long long)op->stride);
    else
        snprintf(buf, len, "%s %s", kinds, shape);
}

/* The listing name of the run of untuned ops starting at op i (i and the
 * ops after it with joins_prev); returns the index after the run. */
static int run_name(const Graph *g, const GraphTasks *t, int i, char *buf, size_t n) {
    int j = i + 1;
    while (j < g->n_ops && g->ops[j].joins_prev && t->epi_of[j] < 0)
        j++;
    Graph_runLabel(g, i, j - i, buf, n);
    return j;
}

void Graph_tasks(const Graph *this, unsigned op_mask, GraphTasks *out) {
    memset(out, 0, sizeof *out);
    int n_ops = this->n_ops, cap = n_ops ? n_ops : 1;
    out->task = malloc((size_t)cap * 5 * sizeof(int));
    out->fused = calloc((size_t)cap, sizeof(bool));
    out->tasks = calloc((size_t)cap, sizeof *out->tasks);
    bool *all = calloc((size_t)cap * 3, sizeof(bool));
    if (!out->task || !out->fused || !out->tasks || !all) abort();
    out->epi_of = out->task + cap;
    out->epi_bias = out->epi_of + cap;
    out->epi_add = out->epi_bias + cap;
    out->epi_relu = out->epi_add + cap;
    bool *all_bias = all, *all_res = all + cap, *all_same = all + 2 * cap;
    for (int i = 0; i < n_ops; i++)
        out->task[i] = out->epi_of[i] = out->epi_bias[i] = out->epi_add[i] = out->epi_relu[i] = -1;

    /* every tunable op's occurrence epilogue, whether or not the mask keeps it */
    for (int i = 0; i < n_ops; i++) {
        const GraphOp *op = &this->ops[i];
        if (!GraphOp_isTunable(op->kind)) continue;
        int t = op->out, c = Graph_onlyReader(this, t);
        if (c >= 0 && this->ops[c].kind == GOP_BIAS_ADD && this->ops[c].in[0] == t && op->kind != GOP_BATCH_MATMUL) {
            out->epi_bias[i] = c;
            out->epi_of[c] = i;
            t = this->ops[c].out;
            c = Graph_onlyReader(this, t);
        }
        if (c >= 0 && this->ops[c].kind == GOP_ADD && this->ops[c].in[0] == t &&
            (op->kind == GOP_CONV2D || op->kind == GOP_DEPTHWISE)) {
            out->epi_add[i] = c;
            out->epi_of[c] = i;
            t = this->ops[c].out;
            c = Graph_onlyReader(this, t);
        }
        /* the activation: ReLU, or a conv's ReLU6 (a clip to [0, 6], MobileNet-v2's) */
        if (c >= 0 && op->kind != GOP_BATCH_MATMUL &&
            (this->ops[c].kind == GOP_RELU ||
             (GraphOp_isRelu6(&this->ops[c]) && (op->kind == GOP_CONV2D || op->kind == GOP_DEPTHWISE)))) {
            out->epi_relu[i] = c;
            out->epi_of[c] = i;
        }
    }

    /* merge identical shapes */
    int n = 0;
    for (int i = 0; i < n_ops; i++) {
        const GraphOp *op = &this->ops[i];
        if (!GraphOp_isTunable(op->kind)) continue;
        if (op_mask && !(op_mask & (1u << op->wl.op))) continue;
        Workload wl = op->wl;
        wl.bias = out->epi_bias[i] >= 0;
        wl.residual = out->epi_add[i] >= 0;
        wl.relu = out->epi_relu[i] >= 0 && this->ops[out->epi_relu[i]].kind == GOP_RELU;
        wl.relu6 = out->epi_relu[i] >= 0 && this->ops[out->epi_relu[i]].kind == GOP_CLIP;
        int t = 0;
        while (t < n && !same_shape(&out->tasks[t].wl, &wl))
            t++;
        if (t == n) {
            out->tasks[n].wl = wl;
            all_bias[n] = all_res[n] = all_same[n] = true;
            n++;
        }
        const Workload *first = &out->tasks[t].wl;
        all_bias[t] = all_bias[t] && wl.bias;
        all_res[t] = all_res[t] && wl.residual;
        all_same[t] = all_same[t] && wl.bias == first->bias && wl.relu == first->relu &&
                      wl.residual == first->residual && wl.relu6 == first->relu6;
        out->tasks[t].weight++;
        out->task[i] = t;
    }
    for (int t = 0; t < n; t++) {
        out->tasks[t].wl.bias = all_bias[t];
        out->tasks[t].wl.residual = all_res[t];
        out->tasks[t].wl.relu = all_same[t] && out->tasks[t].wl.relu;
        out->tasks[t].wl.relu6 = all_same[t] && out->tasks[t].wl.relu6;
    }
    out->n_tasks = n;
    for (int i = 0; i < n_ops; i++) {
        int t = out->task[i];
        if (t < 0) continue;
        const Workload *tw = &out->tasks[t].wl;
        if (out->epi_bias[i] >= 0 && tw->bias) out->fused[out->epi_bias[i]] = true;
        if (out->epi_add[i] >= 0 && tw->residual) out->fused[out->epi_add[i]] = true;
        if (out->epi_relu[i] >= 0 && (tw->relu || tw->relu6)) out->fused[out->epi_relu[i]] = true;
    }

    /* untuned listing: standalone ops in graph order, then the unfused epilogue parts */
    for (int i = 0; i < n_ops;) {
        const GraphOp *op = &this->ops[i];
        if (GraphOp_isTunable(op->kind) || GraphOp_isLayout(op->kind) || out->epi_of[i] >= 0) {
            i++;
            continue;
        }
        char name[160];
        i = run_name(this, out, i, name, sizeof name);
        add_untuned(out, name);
    }
    for (int i = 0; i < n_ops; i++) {
        if (out->task[i] < 0) continue;
        bool bias = out->epi_bias[i] >= 0 && !out->fused[out->epi_bias[i]];
        bool res = out->epi_add[i] >= 0 && !out->fused[out->epi_add[i]];
        bool relu = out->epi_relu[i] >= 0 && !out->fused[out->epi_relu[i]];
        if (!bias && !res && !relu) continue;
        char shape[64], name[160];
        Graph_shapeStr(this, this->ops[i].out, shape, sizeof shape);
        snprintf(name, sizeof name, "%s%s%s%s%s %s", bias ? "bias_add" : "", bias && (res || relu) ? "+" : "",
                 res ? "add" : "", res && relu ? "+" : "",
                 !relu                                          ? ""
                 : this->ops[out->epi_relu[i]].kind == GOP_CLIP ? "clip(0,6)"
                                                                : "relu",
                 shape);
        add_untuned(out, name);
    }
    free(all);
}

void GraphTasks_done(GraphTasks *this) {
    free(this->tasks);
    free(this->untuned);
    free(this->task);
    free(this->fused);
    memset(this, 0, sizeof *this);
}
