/* tuner/net/model_tasks.c: template kernels and tasks of a model (see model_tasks.h). */
#include "tuner/net/model_tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

static const NetValue *val(const NetModel *m, int v) { return v >= 0 ? &m->values[v] : NULL; }

static bool is_f32(const NetModel *m, int v, int rank) {
    const NetValue *x = val(m, v);
    return x && x->type == ND_F32 && x->shape.rank == rank;
}

static bool is_const_f32(const NetModel *m, int v, int rank) { return is_f32(m, v, rank) && m->values[v].is_const; }

/* One spatial axis of a Conv: the pads (begin, end) that auto_pad or pads give. */
static bool conv_pads(const NetNode *n, int axis, int64_t in, int64_t k, int64_t s, int64_t d, int64_t *b, int64_t *e) {
    const char *ap = NetNode_attrString(n, "auto_pad", "NOTSET");
    if (!strcmp(ap, "VALID")) {
        *b = *e = 0;
        return true;
    }
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        int64_t out = (in + s - 1) / s, total = (out - 1) * s + (k - 1) * d + 1 - in;
        if (total < 0) total = 0;
        *b = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
        *e = total - *b;
        return true;
    }
    int np;
    const int64_t *pads = NetNode_attrInts(n, "pads", &np);
    *b = np == 4 ? pads[axis] : 0;
    *e = np == 4 ? pads[axis + 2] : 0;
    return np == 0 || np == 4;
}

static int64_t attr_at(const NetNode *n, const char *name, int i, int64_t def) {
    int c;
    const int64_t *v = NetNode_attrInts(n, name, &c);
    return c == 2 ? v[i] : def;
}

/* Conv -> conv2d or depthwise_conv2d; false when no template fits. */
static bool conv_workload(const NetModel *m, const NetNode *n, ModelKernel *k) {
    if (n->n_in < 2 || !is_f32(m, n->in[0], 4) || !is_const_f32(m, n->in[1], 4)) return false;
    const int64_t *x = m->values[n->in[0]].shape.dim, *w = m->values[n->in[1]].shape.dim;
    Workload *wl = &k->wl;
    memset(wl, 0, sizeof *wl);
    wl->layout = LAYOUT_NCHW;
    wl->n = x[0], wl->ci = x[1], wl->h = x[2], wl->w = x[3], wl->co = w[0], wl->kh = w[2], wl->kw = w[3];
    wl->stride_h = attr_at(n, "strides", 0, 1), wl->stride_w = attr_at(n, "strides", 1, 1);
    wl->dil_h = attr_at(n, "dilations", 0, 1), wl->dil_w = attr_at(n, "dilations", 1, 1);
    int64_t pb[2], pe[2];
    if (!conv_pads(n, 0, wl->h, wl->kh, wl->stride_h, wl->dil_h, &pb[0], &pe[0]) ||
        !conv_pads(n, 1, wl->w, wl->kw, wl->stride_w, wl->dil_w, &pb[1], &pe[1]) || pb[0] != pe[0] || pb[1] != pe[1])
        return false;
    wl->pad_h = pb[0], wl->pad_w = pb[1];
    int64_t group = NetNode_attrInt(n, "group", 1);
    if (group == 1 && w[1] == wl->ci)
        wl->op = OP_CONV2D;
    else if (group == wl->ci && w[1] == 1 && wl->co % wl->ci == 0) {
        wl->op = OP_DEPTHWISE_CONV2D;
        wl->mult = wl->co / wl->ci;
    } else
        return false;
    if (n->n_in > 2 && n->in[2] >= 0) {
        if (!is_const_f32(m, n->in[2], 1) || m->values[n->in[2]].shape.dim[0] != wl->co) return false;
        wl->bias = true;
        k->bias = n->in[2];
    }
    k->data = n->in[0], k->weight = n->in[1];
    char err[TT_ERRLEN];
    return Workload_validate(wl, err) == TT_OK;
}

/* Gemm with a constant B, or MatMul by a constant 2-D matrix -> dense. */
static bool dense_workload(const NetModel *m, const NetNode *n, ModelKernel *k) {
    bool gemm = !strcmp(n->op, "Gemm");
    const NetValue *a = val(m, n->in[0]), *b = n->n_in > 1 ? val(m, n->in[1]) : NULL;
    if (!a || !b || a->type != ND_F32 || a->shape.rank < 2 || !is_const_f32(m, n->in[1], 2)) return false;
    bool tb = gemm && NetNode_attrInt(n, "transB", 0);
    if (gemm && (a->shape.rank != 2 || NetNode_attrInt(n, "transA", 0) || NetNode_attrFloat(n, "alpha", 1.0) != 1.0))
        return false;
    Workload *wl = &k->wl;
    memset(wl, 0, sizeof *wl);
    wl->op = OP_DENSE;
    wl->layout = LAYOUT_NCHW;
    wl->k = a->shape.dim[a->shape.rank - 1];
    wl->n = tb ? b->shape.dim[0] : b->shape.dim[1];
    if ((tb ? b->shape.dim[1] : b->shape.dim[0]) != wl->k) return false;
    wl->m = 1;
    for (int i = 0; i < a->shape.rank - 1; i++)
        wl->m *= a->shape.dim[i];
    k->transpose_weight = !tb;
    k->data = n->in[0], k->weight = n->in[1];
    if (gemm && n->n_in > 2 && n->in[2] >= 0) {
        const NetValue *c = &m->values[n->in[2]];
        bool vec = c->is_const && c->type == ND_F32 && c->constant.count == wl->n &&
                   (c->shape.rank == 1 || (c->shape.rank == 2 && c->shape.dim[0] == 1));
        if (!vec || NetNode_attrFloat(n, "beta", 1.0) != 1.0) return false;
        wl->bias = true;
        k->bias = n->in[2];
    }
    char err[TT_ERRLEN];
    return Workload_validate(wl, err) == TT_OK;
}

/* MatMul of two float32 activations of one rank >= 3 with the same batch
 * dimensions (attention's Q x K^T and P x V) -> batch_matmul; the kernel wants
 * b as [batch][n][k], so the program transposes B's last two axes at run time. */
static bool batch_matmul_workload(const NetModel *m, const NetNode *n, ModelKernel *k) {
    if (strcmp(n->op, "MatMul") || n->n_in != 2) return false;
    const NetValue *a = val(m, n->in[0]), *b = val(m, n->in[1]);
    if (!a || !b || a->is_const || b->is_const || a->type != ND_F32 || b->type != ND_F32) return false;
    int r = a->shape.rank;
    if (r < 3 || b->shape.rank != r || a->shape.dim[r - 1] != b->shape.dim[r - 2]) return false;
    Workload *wl = &k->wl;
    memset(wl, 0, sizeof *wl);
    wl->op = OP_BATCH_MATMUL;
    wl->layout = LAYOUT_NCHW;
    wl->b = 1;
    for (int i = 0; i < r - 2; i++) {
        if (a->shape.dim[i] != b->shape.dim[i]) return false; /* broadcast batches: the op library's */
        wl->b *= a->shape.dim[i];
    }
    wl->m = a->shape.dim[r - 2];
    wl->k = a->shape.dim[r - 1];
    wl->n = b->shape.dim[r - 1];
    k->data = n->in[0], k->weight = n->in[1];
    k->runtime_b = true;
    char err[TT_ERRLEN];
    return Workload_validate(wl, err) == TT_OK;
}

/* The other input of a two-input node, given one of them. */
static int other_input(const NetNode *n, int v) { return n->n_in == 2 ? (n->in[0] == v ? n->in[1] : n->in[0]) : -1; }

/* A Clip of v to exactly [0, 6] (attributes before opset 11, constant inputs after). */
static bool is_relu6(const NetModel *m, const NetNode *n) {
    if (strcmp(n->op, "Clip")) return false;
    double lo = NetNode_attrFloat(n, "min", -INFINITY), hi = NetNode_attrFloat(n, "max", INFINITY);
    for (int i = 1; i < n->n_in && i < 3; i++) {
        const NetValue *c = val(m, n->in[i]);
        if (!c || !c->is_const || c->constant.count != 1) return false;
        *(i == 1 ? &lo : &hi) = NdTensor_get(&c->constant, 0);
    }
    return lo == 0.0 && hi == 6.0;
}

static void fuse(ModelKernel *k, int node, const NetNode *n) {
    k->fused[k->n_fused++] = node;
    k->out = n->out[0];
}

/* A MatMul's bias: an Add of a constant vector of n floats that broadcasts over the last axis. */
static bool is_bias_add(const NetModel *m, const NetNode *add, int v, int64_t width) {
    const NetValue *c = val(m, other_input(add, v));
    return c && c->is_const && c->type == ND_F32 && c->constant.count == width && c->shape.rank >= 1 &&
           c->shape.dim[c->shape.rank - 1] == width;
}

/* The node that alone reads v and that no kernel has fused yet (a residual
 * Add of two convolutions is fused into one of them, not both), or -1. */
static int sole_free_reader(const NetReaders *r, const int *kernel_of, int v) {
    int n = NetReaders_sole(r, v);
    return n >= 0 && kernel_of[n] < 0 ? n : -1;
}

/* Follows the kernel node's output through the epilogue the workload can fuse. */
static void fuse_epilogue(const NetModel *m, const NetReaders *r, const int *kernel_of, ModelKernel *k) {
    if (k->wl.op == OP_BATCH_MATMUL) return; /* its kernel has no epilogue */
    bool conv = k->wl.op == OP_CONV2D || k->wl.op == OP_DEPTHWISE_CONV2D;
    int next = sole_free_reader(r, kernel_of, k->out);
    if (next >= 0 && k->wl.op == OP_DENSE && !k->wl.bias && !strcmp(m->nodes[next].op, "Add") &&
        is_bias_add(m, &m->nodes[next], k->out, k->wl.n)) {
        k->wl.bias = true;
        k->bias = other_input(&m->nodes[next], k->out);
        fuse(k, next, &m->nodes[next]);
        next = sole_free_reader(r, kernel_of, k->out);
    }
    if (next >= 0 && conv && !strcmp(m->nodes[next].op, "Add")) {
        int res = other_input(&m->nodes[next], k->out);
        const NetValue *rv = val(m, res), *ov = val(m, k->out);
        if (rv && res != k->out && rv->type == ND_F32 && NdShape_equal(&rv->shape, &ov->shape)) {
            k->wl.residual = true;
            k->residual = res;
            fuse(k, next, &m->nodes[next]);
            next = sole_free_reader(r, kernel_of, k->out);
        }
    }
    if (next >= 0 && !strcmp(m->nodes[next].op, "Relu")) {
        k->wl.relu = true;
        fuse(k, next, &m->nodes[next]);
    } else if (next >= 0 && conv && is_relu6(m, &m->nodes[next])) {
        k->wl.relu6 = true;
        fuse(k, next, &m->nodes[next]);
    }
}

static int add_task(ModelTasks *t, const Workload *wl) {
    for (int i = 0; i < t->n_tasks; i++)
        if (Workload_equal(&t->tasks[i].wl, wl)) {
            t->tasks[i].weight++;
            return i;
        }
    t->tasks = tt_realloc(t->tasks, sizeof *t->tasks * (size_t)(t->n_tasks + 1));
    t->tasks[t->n_tasks] = (NetworkTask){.wl = *wl, .weight = 1};
    return t->n_tasks++;
}

static void add_untuned(ModelTasks *t, const char *op) {
    for (int i = 0; i < t->n_untuned; i++)
        if (!strcmp(t->untuned[i].name, op)) {
            t->untuned[i].count++;
            return;
        }
    t->untuned = tt_realloc(t->untuned, sizeof *t->untuned * (size_t)(t->n_untuned + 1));
    NetworkUntuned *u = &t->untuned[t->n_untuned++];
    memset(u, 0, sizeof *u);
    strncpy(u->name, op, sizeof u->name - 1);
    u->count = 1;
}

/* Tries node i as a kernel node; on success appends it (with its epilogue) to t. */
static bool try_kernel(const NetModel *m, const NetReaders *r, unsigned op_mask, int i, ModelTasks *t) {
    const NetNode *n = &m->nodes[i];
    ModelKernel k = {.node = i, .data = -1, .weight = -1, .bias = -1, .residual = -1, .out = n->out[0]};
    bool ok = false;
    if (!strcmp(n->op, "Conv"))
        ok = conv_workload(m, n, &k);
    else if (!strcmp(n->op, "Gemm") || !strcmp(n->op, "MatMul"))
        ok = dense_workload(m, n, &k) || batch_matmul_workload(m, n, &k);
    if (!ok || (op_mask && !(op_mask & (1u << k.wl.op)))) return false;
    fuse_epilogue(m, r, t->kernel_of, &k);
    k.task = add_task(t, &k.wl);
    t->kernels = tt_realloc(t->kernels, sizeof *t->kernels * (size_t)(t->n_kernels + 1));
    t->kernels[t->n_kernels] = k;
    t->kernel_of[i] = t->n_kernels;
    for (int f = 0; f < k.n_fused; f++)
        t->kernel_of[k.fused[f]] = t->n_kernels;
    t->n_kernels++;
    return true;
}

Status ModelTasks_build(const NetModel *m, unsigned op_mask, ModelTasks *out, char *err) {
    memset(out, 0, sizeof *out);
    out->kernel_of = tt_malloc(sizeof(int) * ((size_t)m->n_nodes + 1));
    for (int i = 0; i < m->n_nodes; i++)
        out->kernel_of[i] = -1;
    NetReaders r;
    NetReaders_init(&r, m);
    for (int i = 0; i < m->n_nodes; i++) {
        const NetNode *n = &m->nodes[i];
        if (n->dead || out->kernel_of[i] >= 0) continue;
        if (n->n_out < 1 || n->out[0] < 0) {
            NetReaders_done(&r);
            ModelTasks_done(out);
            return tt_fail(err, "node #%d (%s) has no output", i, n->op);
        }
        try_kernel(m, &r, op_mask, i, out);
    }
    for (int i = 0; i < m->n_nodes; i++)
        if (!m->nodes[i].dead && out->kernel_of[i] < 0 && strcmp(m->nodes[i].op, "Constant"))
            add_untuned(out, m->nodes[i].op);
    NetReaders_done(&r);
    return TT_OK;
}

void ModelTasks_done(ModelTasks *t) {
    free(t->tasks);
    free(t->untuned);
    free(t->kernels);
    free(t->kernel_of);
    memset(t, 0, sizeof *t);
}

static void set_int_attr(NetAttr *a, const char *name, int64_t v) {
    a->name = tt_strdup(name);
    a->kind = NATTR_INT;
    a->i = v;
}

Status ModelTasks_rewrite(NetModel *m, const ModelTasks *t, char *err) {
    for (int j = 0; j < t->n_kernels; j++) {
        const ModelKernel *k = &t->kernels[j];
        char name[64];
        snprintf(name, sizeof name, "kernel%d", j);
        int idx = NetModel_addNode(m, name, "Kernel", "tunetop", 4, 1, 4);
        NetNode *n = &m->nodes[idx];
        n->in[0] = k->data, n->in[1] = k->weight, n->in[2] = k->bias, n->in[3] = k->residual;
        n->out[0] = k->out;
        set_int_attr(&n->attrs[0], "task", k->task);
        set_int_attr(&n->attrs[1], "transpose_weight", k->transpose_weight);
        char key[WORKLOAD_KEY_LEN];
        Workload_key(&k->wl, key, sizeof key);
        n->attrs[2].name = tt_strdup("workload");
        n->attrs[2].kind = NATTR_STRING;
        n->attrs[2].s = tt_strdup(key);
        set_int_attr(&n->attrs[3], "runtime_b", k->runtime_b);
        m->nodes[k->node].dead = true;
        for (int f = 0; f < k->n_fused; f++)
            m->nodes[k->fused[f]].dead = true;
    }
    NetModel_dropDead(m);
    return NetModel_sort(m, err);
}
