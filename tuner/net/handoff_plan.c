/* tuner/net/handoff_plan.c: which tensors a model program's kernels hand to
 * each other blocked, and which ops run on a kernel's blocked buffer
 * (HoPlan_make, handoff.h). */
#include <stdlib.h>
#include <string.h>

#include "tuner/net/handoff.h"
#include "tuner/net/ops/elementwise.h"

/* ---- the ops that run on a blocked buffer ---- */

static bool onnx_domain(const NetNode *e) { return !e->domain[0] || !strcmp(e->domain, "ai.onnx"); }

/* A tunetop.Elementwise node, or a lone node of an op such a chain can hold (HardSwish, Sigmoid, ...),
 * from float32 to float32, whose inputs besides input 0 are single float32 elements. */
static bool pointwise_chain(const NetModel *m, int q) {
    const NetNode *e = &m->nodes[q];
    bool chain = !strcmp(e->op, "Elementwise") && !strcmp(e->domain, "tunetop");
    const EwSpec *spec = chain || !onnx_domain(e) ? NULL : Ew_spec(e->op);
    bool lone = spec && Ew_fusable(spec) && Op_fusableStep(e->op, e->n_in);
    if ((!chain && !lone) || e->n_in < 1 || e->in[0] < 0 || e->n_out != 1 || e->out[0] < 0 ||
        m->values[e->in[0]].type != ND_F32 || m->values[e->out[0]].type != ND_F32)
        return false;
    for (int j = 1; j < e->n_in; j++)
        if (e->in[j] >= 0 && (NdShape_elems(&m->values[e->in[j]].shape) != 1 || m->values[e->in[j]].type != ND_F32))
            return false;
    return true;
}

static bool nchw_f32(const NetValue *v) {
    return v->type == ND_F32 && v->shape.rank == 4 && NdShape_elems(&v->shape) > 0;
}

/* Mul(X, S) or Mul(S, X) of a float32 N x C x H x W tensor X (H x W > 1) by a float32 per-channel
 * scale S (N or 1) x C x 1 x 1, as squeeze-excitation blocks end: X's input slot, or -1. */
static int scale_slot(const NetModel *m, int q) {
    const NetNode *e = &m->nodes[q];
    if (strcmp(e->op, "Mul") || !onnx_domain(e) || e->n_in != 2 || e->n_out != 1 || e->in[0] < 0 || e->in[1] < 0 ||
        e->out[0] < 0)
        return -1;
    const NetValue *y = &m->values[e->out[0]];
    for (int slot = 0; slot < 2; slot++) {
        const NetValue *x = &m->values[e->in[slot]], *s = &m->values[e->in[1 - slot]];
        const int64_t *xd = x->shape.dim, *sd = s->shape.dim;
        if (nchw_f32(x) && xd[2] * xd[3] > 1 && nchw_f32(s) && sd[1] == xd[1] && sd[2] == 1 && sd[3] == 1 &&
            (sd[0] == 1 || sd[0] == xd[0]) && y->type == ND_F32 && NdShape_equal(&y->shape, &x->shape))
            return slot;
    }
    return -1;
}

/* The input slot in which node q would read a kernel's blocked buffer, and how (*kind); -1: q cannot. */
static int on_slot(const NetModel *m, int q, HoOn *kind) {
    const NetNode *e = &m->nodes[q];
    int slot;
    if (pointwise_chain(m, q)) return *kind = HO_CHAIN, 0;
    if ((slot = scale_slot(m, q)) >= 0) return *kind = HO_SCALE, slot;
    if (!strcmp(e->op, "GlobalAveragePool") && onnx_domain(e) && e->n_in == 1 && e->in[0] >= 0 && e->n_out == 1 &&
        e->out[0] >= 0 && nchw_f32(&m->values[e->in[0]]) && m->values[e->out[0]].type == ND_F32)
        return *kind = HO_POOL, 0;
    return -1;
}

/* Every reader of value v but node q runs before q (which then changes the buffer in place). */
static bool read_before(const NetModel *m, int v, int q) {
    for (int i = q + 1; i < m->n_nodes; i++)
        for (int j = 0; j < m->nodes[i].n_in; j++)
            if (m->nodes[i].in[j] == v) return false;
    return true;
}

/* The kernel node whose blocked buffer holds value v once the ops on the way have run on it: v's
 * producer, or the kernel below the in-place ops (chains, per-channel scales) that compute v. Those are
 * marked (on, on_kind) as they are found; check_on confirms them. A chain must be its input's only
 * reader, a scale its input's last. */
static int blocked_source(const NetModel *m, const NetReaders *r, const HoKernel *kernels, int v, HoPlan *plan) {
    int q = v >= 0 ? m->values[v].producer : -1;
    HoOn kind;
    if (q < 0) return -1;
    if (kernels[q].is_kernel) return q;
    if (plan->on[q] >= 0) return plan->on_kind[q] == HO_POOL ? -1 : plan->on[q];
    int slot = on_slot(m, q, &kind);
    if (slot < 0 || kind == HO_POOL) return -1;
    int u = m->nodes[q].in[slot], p = blocked_source(m, r, kernels, u, plan);
    if (p < 0 || (kind == HO_CHAIN && NetReaders_sole(r, u) != q) || (kind == HO_SCALE && !read_before(m, u, q)))
        return -1;
    plan->on[q] = p, plan->on_kind[q] = kind;
    return p;
}

/* ---- kernels ---- */

/* Whether kernel node k can take kernel p's blocked output as its data input (slot 0) or residual (3). */
static bool takes_blocked(const NetModel *m, const HoKernel *kernels, int k, int slot, int p) {
    const NetNode *n = &m->nodes[k];
    const HoKernel *hk = &kernels[k];
    bool residual = n->n_in > 3 && n->in[3] >= 0;
    if (p < 0 || !hk->is_kernel || hk->reads_inputs || n->n_in < 1 || n->in[0] < 0 || (residual && !hk->res_buffer))
        return false;
    return HoLayout_same(&kernels[p].out, slot == 0 ? &hk->in : &hk->out);
}

/* Node k's sources: a kernel's data input's and, when that is handed over and it has one, its residual's;
 * a global pool's input. */
static void plan_node(const NetModel *m, const NetReaders *r, const HoKernel *kernels, int k, HoPlan *plan) {
    const NetNode *n = &m->nodes[k];
    HoOn kind;
    if (!kernels[k].is_kernel) {
        int p = on_slot(m, k, &kind) == 0 && kind == HO_POOL ? blocked_source(m, r, kernels, n->in[0], plan) : -1;
        if (p >= 0 && kernels[p].out.repeat == 1) plan->on[k] = p, plan->on_kind[k] = HO_POOL;
        return;
    }
    int p = n->n_in > 0 ? blocked_source(m, r, kernels, n->in[0], plan) : -1;
    if (!takes_blocked(m, kernels, k, 0, p)) return;
    plan->data_from[k] = p;
    p = n->n_in > 3 ? blocked_source(m, r, kernels, n->in[3], plan) : -1;
    if (takes_blocked(m, kernels, k, 3, p)) plan->res_from[k] = p;
}

/* ---- what holds ---- */

/* Whether node i, reading kernel p's buffer (or the ops' on it) in input slot, takes it blocked. */
static bool takes_on(const NetModel *m, const HoPlan *plan, int i, int slot, int p) {
    HoOn kind;
    return (slot == 0 && plan->data_from[i] == p) || (slot == 3 && plan->res_from[i] == p) ||
           (plan->on[i] == p && on_slot(m, i, &kind) == slot);
}

/* In-place op q does not run on the buffer after all: nor does what took its result from there. */
static void withdraw(const NetModel *m, HoPlan *plan, int q) {
    int p = plan->on[q], v = m->nodes[q].out[0];
    HoOn kind;
    plan->on[q] = -1;
    for (int i = 0; i < m->n_nodes; i++)
        for (int j = 0; j < m->nodes[i].n_in; j++) {
            if (m->nodes[i].in[j] != v) continue;
            if (j == 0 && plan->data_from[i] == p) plan->data_from[i] = plan->res_from[i] = -1;
            if (j == 3 && plan->res_from[i] == p) plan->res_from[i] = -1;
            if (plan->on[i] == p && on_slot(m, i, &kind) == j) {
                if (plan->on_kind[i] == HO_POOL)
                    plan->on[i] = -1;
                else
                    withdraw(m, plan, i);
            }
        }
}

/* An op runs in place only when every reader takes its result blocked (nothing reads the dense tensor,
 * which is never written) and it is no graph output. One that fails is withdrawn with what relied on
 * it (a residual is handed only beside the data), which may fail another: until nothing changes. */
static void check_on(const NetModel *m, HoPlan *plan) {
    for (bool changed = true; changed;) {
        changed = false;
        for (int q = 0; q < m->n_nodes; q++) {
            int p = plan->on[q], v = m->nodes[q].out[0];
            if (p < 0 || plan->on_kind[q] == HO_POOL) continue;
            bool ok = true;
            for (int o = 0; o < m->n_outputs; o++)
                ok = ok && m->outputs[o] != v;
            for (int i = 0; ok && i < m->n_nodes; i++)
                for (int j = 0; j < m->nodes[i].n_in; j++)
                    ok = ok && (m->nodes[i].in[j] != v || takes_on(m, plan, i, j, p));
            if (!ok) withdraw(m, plan, q), changed = true;
        }
    }
}

/* Which kernels unpack (a reader needs the dense output) and which read in the producer's buffer. */
static void count(const NetModel *m, const HoKernel *kernels, const NetReaders *r, HoPlan *plan) {
    int nn = m->n_nodes;
    bool *dense_read = calloc((size_t)nn + 1, sizeof(bool)); /* per kernel node: a reader needs its dense output */
    if (!dense_read) abort();
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < m->nodes[i].n_in; j++) {
            int v = m->nodes[i].in[j], p = v >= 0 ? m->values[v].producer : -1;
            if (p >= 0 && kernels[p].is_kernel && !takes_on(m, plan, i, j, p)) dense_read[p] = true;
        }
    for (int o = 0; o < m->n_outputs; o++) /* the caller reads the graph's outputs dense */
        if (m->values[m->outputs[o]].producer >= 0) dense_read[m->values[m->outputs[o]].producer] = true;
    plan->n_handoffs = plan->n_borrowed = 0;
    for (int k = 0; k < nn; k++) {
        int d = plan->data_from[k], q = plan->res_from[k], v = kernels[k].is_kernel ? m->nodes[k].out[0] : -1;
        plan->borrow_in[k] = d >= 0 && HoLayout_one(&kernels[d].out, &kernels[k].in);
        plan->borrow_res[k] = q >= 0 && HoLayout_one(&kernels[q].out, &kernels[k].out);
        plan->n_borrowed += plan->borrow_in[k] + plan->borrow_res[k];
        plan->skip_unpack[k] = v >= 0 && !dense_read[k] && r->count[v] > 0;
        plan->n_handoffs += plan->skip_unpack[k];
    }
    free(dense_read);
}

void HoPlan_make(const NetModel *m, const HoKernel *kernels, HoPlan *plan) {
    int nn = m->n_nodes;
    plan->data_from = malloc(sizeof(int) * (size_t)(nn + 1));
    plan->res_from = malloc(sizeof(int) * (size_t)(nn + 1));
    plan->on = malloc(sizeof(int) * (size_t)(nn + 1));
    plan->on_kind = calloc((size_t)nn + 1, sizeof(HoOn));
    plan->skip_unpack = calloc((size_t)nn + 1, sizeof(bool));
    plan->borrow_in = calloc((size_t)nn + 1, sizeof(bool));
    plan->borrow_res = calloc((size_t)nn + 1, sizeof(bool));
    if (!plan->data_from || !plan->res_from || !plan->on || !plan->on_kind || !plan->skip_unpack || !plan->borrow_in ||
        !plan->borrow_res)
        abort();
    for (int i = 0; i < nn; i++)
        plan->data_from[i] = plan->res_from[i] = plan->on[i] = -1;
    NetReaders r;
    NetReaders_init(&r, m);
    for (int k = 0; k < nn; k++)
        plan_node(m, &r, kernels, k, plan);
    check_on(m, plan);
    count(m, kernels, &r, plan);
    NetReaders_done(&r);
}

void HoPlan_done(HoPlan *plan) {
    free(plan->data_from);
    free(plan->res_from);
    free(plan->on);
    free(plan->on_kind);
    free(plan->skip_unpack);
    free(plan->borrow_in);
    free(plan->borrow_res);
    memset(plan, 0, sizeof *plan);
}
