/* tuner/net/handoff.c: blocked tensors handed from kernel to kernel (see handoff.h). */
#include "tuner/net/handoff.h"

#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/elementwise.h"
#include "tuner/net/ops/par.h"

bool HoLayout_same(const HoLayout *s, const HoLayout *d) {
    return s->n > 0 && d->n > 0 && s->repeat == 1 && d->repeat >= 1 && s->n == d->n && s->c * d->repeat == d->c &&
           s->h == d->h && s->w == d->w;
}

bool HoLayout_one(const HoLayout *s, const HoLayout *d) {
    return HoLayout_same(s, d) && d->repeat == 1 && s->cb == d->cb && s->c % s->cb == 0 && s->top == 0 &&
           s->left == 0 && d->top == 0 && d->left == 0 && s->h_alloc == s->h && s->w_alloc == s->w &&
           d->h_alloc == d->h && d->w_alloc == d->w;
}

int64_t HoLayout_floats(const HoLayout *l) {
    return l->n * ((l->c + l->cb - 1) / l->cb) * l->h_alloc * l->w_alloc * l->cb;
}

HoLayout HoLayout_dense(int64_t n, int64_t c, int64_t h, int64_t w) {
    return (HoLayout){.n = n, .c = c, .h = h, .w = w, .cb = 1, .h_alloc = h, .w_alloc = w, .repeat = 1};
}

/* ---- the copy ---- */

typedef struct Reblock {
    const float *src;
    const HoLayout *s;
    float *dst;
    const HoLayout *d;
} Reblock;

/* Where row y of s's channel block b starts (x = 0, lane 0). */
static const float *src_row(const Reblock *r, int64_t n, int64_t b, int64_t y) {
    const HoLayout *s = r->s;
    int64_t blocks = (s->c + s->cb - 1) / s->cb;
    return r->src + (((n * blocks + b) * s->h_alloc + y + s->top) * s->w_alloc + s->left) * s->cb;
}

/* Lanes [l0, l0 + lanes) of row dp (d's block b): per pixel, the lanes in runs that lie in one block of s. */
static void copy_lanes(const Reblock *r, float *dp, int64_t n, int64_t b, int64_t y, int64_t lanes) {
    const HoLayout *s = r->s, *d = r->d;
    if (d->repeat > 1) { /* a depthwise multiplier: lane l holds channel l / repeat */
        for (int64_t l = 0; l < lanes; l++) {
            int64_t ch = (b * d->cb + l) / d->repeat;
            const float *sp = src_row(r, n, ch / s->cb, y) + ch % s->cb;
            for (int64_t x = 0; x < d->w; x++)
                dp[x * d->cb + l] = sp[x * s->cb];
        }
        return;
    }
    for (int64_t l = 0; l < lanes;) {
        int64_t ch = b * d->cb + l, run = s->cb - ch % s->cb < lanes - l ? s->cb - ch % s->cb : lanes - l;
        const float *sp = src_row(r, n, ch / s->cb, y) + ch % s->cb;
        for (int64_t x = 0; x < d->w; x++)
            for (int64_t i = 0; i < run; i++)
                dp[x * d->cb + l + i] = sp[x * s->cb + i];
        l += run;
    }
}

/* Rows [lo, hi) of d: row = (n, channel block, y). */
static void reblock_rows(void *arg, int64_t lo, int64_t hi) {
    const Reblock *r = arg;
    const HoLayout *s = r->s, *d = r->d;
    int64_t blocks = (d->c + d->cb - 1) / d->cb;
    bool same = s->cb == d->cb && d->repeat == 1 && d->c % d->cb == 0;
    for (int64_t row = lo; row < hi; row++) {
        int64_t y = row % d->h, b = row / d->h % blocks, n = row / d->h / blocks;
        float *dp = r->dst + (((n * blocks + b) * d->h_alloc + y + d->top) * d->w_alloc + d->left) * d->cb;
        if (same)
            memcpy(dp, src_row(r, n, b, y), sizeof(float) * (size_t)(d->w * d->cb));
        else
            copy_lanes(r, dp, n, b, y, d->c - b * d->cb < d->cb ? d->c - b * d->cb : d->cb);
    }
}

void Ho_reblock(const float *src, const HoLayout *s, float *dst, const HoLayout *d) {
    Reblock r = {src, s, dst, d};
    int64_t rows = d->n * ((d->c + d->cb - 1) / d->cb) * d->h;
    Par_range(rows, (double)d->n * d->c * d->h * d->w, reblock_rows, &r);
}

/* ---- the chain in place ---- */

Status Ho_runChain(OpCtx *ctx, float *blocked, const HoLayout *l) {
    NdTensor x = {.type = ND_F32, .data = blocked, .count = HoLayout_floats(l)};
    x.shape.rank = 1;
    x.shape.dim[0] = x.count;
    const NdTensor *in[ctx->n_in + 1];
    for (int k = 0; k < ctx->n_in; k++)
        in[k] = k ? ctx->in[k] : &x;
    OpCtx e = *ctx;
    e.in = in;
    NdShape shape = ctx->model->values[ctx->node->out[0]].shape;
    if (Ew_fusedRunInto(&e, blocked) != TT_OK) return TT_ERR;
    return NdTensor_allocFull(&ctx->out[0], ND_F32, &shape, ctx->err);
}

/* ---- the plan ---- */

/* A tunetop.Elementwise node, or a lone node of an op such a chain can hold (HardSwish, Sigmoid, ...),
 * from float32 to float32, whose inputs besides input 0 are single float32 elements. */
static bool pointwise_chain(const NetModel *m, int q) {
    const NetNode *e = &m->nodes[q];
    bool chain = !strcmp(e->op, "Elementwise") && !strcmp(e->domain, "tunetop");
    const EwSpec *spec = chain || (e->domain[0] && strcmp(e->domain, "ai.onnx")) ? NULL : Ew_spec(e->op);
    bool lone = spec && Ew_fusable(spec) && Op_fusableStep(e->op, e->n_in);
    if ((!chain && !lone) || e->n_in < 1 || e->in[0] < 0 || e->n_out != 1 || e->out[0] < 0 ||
        m->values[e->in[0]].type != ND_F32 || m->values[e->out[0]].type != ND_F32)
        return false;
    for (int j = 1; j < e->n_in; j++)
        if (e->in[j] >= 0 && (NdShape_elems(&m->values[e->in[j]].shape) != 1 || m->values[e->in[j]].type != ND_F32))
            return false;
    return true;
}

/* The kernel node whose blocked output holds value v: its producer, or the producer of the pointwise
 * chain (*ew) that computes v, whose input only the chain reads (so the chain may run in place there). */
static int blocked_source(const NetModel *m, const NetReaders *r, const HoKernel *kernels, int v, int *ew) {
    int q = v >= 0 ? m->values[v].producer : -1;
    *ew = -1;
    if (q < 0) return -1;
    if (kernels[q].is_kernel) return q;
    if (!pointwise_chain(m, q)) return -1;
    int u = m->nodes[q].in[0], p = m->values[u].producer;
    if (p < 0 || !kernels[p].is_kernel || NetReaders_sole(r, u) != q) return -1;
    *ew = q;
    return p;
}

/* Whether kernel node k can take kernel p's blocked output as its data input (slot 0) or residual (3). */
static bool takes_blocked(const NetModel *m, const HoKernel *kernels, int k, int slot, int p) {
    const NetNode *n = &m->nodes[k];
    const HoKernel *hk = &kernels[k];
    bool residual = n->n_in > 3 && n->in[3] >= 0;
    if (p < 0 || !hk->is_kernel || hk->reads_inputs || n->n_in < 1 || n->in[0] < 0 || (residual && !hk->res_buffer))
        return false;
    return HoLayout_same(&kernels[p].out, slot == 0 ? &hk->in : &hk->out);
}

/* Kernel node k's sources: its data input's and, when that is handed over and k has one, its residual's.
 * A chain between is marked to run in place (ew_on) for now: check_chains confirms it. */
static void plan_node(const NetModel *m, const NetReaders *r, const HoKernel *kernels, int k, HoPlan *plan) {
    const NetNode *n = &m->nodes[k];
    int ew, p = n->n_in > 0 ? blocked_source(m, r, kernels, n->in[0], &ew) : -1;
    if (!takes_blocked(m, kernels, k, 0, p)) return;
    plan->data_from[k] = p;
    if (ew >= 0) plan->ew_on[ew] = p;
    p = n->n_in > 3 ? blocked_source(m, r, kernels, n->in[3], &ew) : -1;
    if (!takes_blocked(m, kernels, k, 3, p)) return;
    plan->res_from[k] = p;
    if (ew >= 0) plan->ew_on[ew] = p;
}

/* A chain runs in place only when every reader takes its result blocked (nothing reads the dense
 * tensor, which is never written) and it is no graph output. A chain that fails takes its readers'
 * handoffs with it (a residual is handed only beside the data), which may fail another chain: until
 * nothing changes. */
static void check_chains(const NetModel *m, HoPlan *plan) {
    for (bool changed = true; changed;) {
        changed = false;
        for (int q = 0; q < m->n_nodes; q++) {
            int p = plan->ew_on[q], v = m->nodes[q].out[0];
            if (p < 0) continue;
            bool ok = true;
            for (int o = 0; o < m->n_outputs; o++)
                ok = ok && m->outputs[o] != v;
            for (int i = 0; ok && i < m->n_nodes; i++)
                for (int j = 0; j < m->nodes[i].n_in; j++)
                    if (m->nodes[i].in[j] == v)
                        ok = ok && ((j == 0 && plan->data_from[i] == p) || (j == 3 && plan->res_from[i] == p));
            if (ok) continue;
            plan->ew_on[q] = -1, changed = true;
            for (int i = 0; i < m->n_nodes; i++) {
                const NetNode *n = &m->nodes[i];
                if (n->n_in > 0 && n->in[0] == v) plan->data_from[i] = plan->res_from[i] = -1;
                if (n->n_in > 3 && n->in[3] == v) plan->res_from[i] = -1;
            }
        }
    }
}

void HoPlan_make(const NetModel *m, const HoKernel *kernels, HoPlan *plan) {
    int nn = m->n_nodes;
    plan->data_from = malloc(sizeof(int) * (size_t)(nn + 1));
    plan->res_from = malloc(sizeof(int) * (size_t)(nn + 1));
    plan->ew_on = malloc(sizeof(int) * (size_t)(nn + 1));
    plan->skip_unpack = calloc((size_t)nn + 1, sizeof(bool));
    plan->borrow_in = calloc((size_t)nn + 1, sizeof(bool));
    plan->borrow_res = calloc((size_t)nn + 1, sizeof(bool));
    bool *dense_read = calloc((size_t)nn + 1, sizeof(bool)); /* per kernel node: a reader needs its dense output */
    if (!plan->data_from || !plan->res_from || !plan->ew_on || !plan->skip_unpack || !plan->borrow_in ||
        !plan->borrow_res || !dense_read)
        abort();
    for (int i = 0; i < nn; i++)
        plan->data_from[i] = plan->res_from[i] = plan->ew_on[i] = -1;
    NetReaders r;
    NetReaders_init(&r, m);
    for (int k = 0; k < nn; k++)
        plan_node(m, &r, kernels, k, plan);
    check_chains(m, plan);
    /* a reader takes a kernel's output blocked in input 0 (data_from, or a chain in place) or 3 (res_from) */
    for (int i = 0; i < nn; i++) {
        const NetNode *n = &m->nodes[i];
        for (int j = 0; j < n->n_in; j++) {
            int v = n->in[j], p = v >= 0 ? m->values[v].producer : -1;
            if (p < 0 || !kernels[p].is_kernel) continue;
            bool blocked =
                (j == 0 && (plan->data_from[i] == p || plan->ew_on[i] == p)) || (j == 3 && plan->res_from[i] == p);
            if (!blocked) dense_read[p] = true;
        }
    }
    for (int o = 0; o < m->n_outputs; o++) /* the caller reads the graph's outputs dense */
        if (m->values[m->outputs[o]].producer >= 0) dense_read[m->values[m->outputs[o]].producer] = true;
    plan->n_borrowed = 0;
    for (int k = 0; k < nn; k++) {
        int d = plan->data_from[k], q = plan->res_from[k];
        plan->borrow_in[k] = d >= 0 && HoLayout_one(&kernels[d].out, &kernels[k].in);
        plan->borrow_res[k] = q >= 0 && HoLayout_one(&kernels[q].out, &kernels[k].out);
        plan->n_borrowed += plan->borrow_in[k] + plan->borrow_res[k];
    }
    plan->n_handoffs = 0;
    for (int p = 0; p < nn; p++) {
        int v = kernels[p].is_kernel ? m->nodes[p].out[0] : -1;
        if (v < 0 || dense_read[p] || r.count[v] == 0) continue;
        plan->skip_unpack[p] = true;
        plan->n_handoffs++;
    }
    NetReaders_done(&r);
    free(dense_read);
}

void HoPlan_done(HoPlan *plan) {
    free(plan->data_from);
    free(plan->res_from);
    free(plan->ew_on);
    free(plan->skip_unpack);
    free(plan->borrow_in);
    free(plan->borrow_res);
    memset(plan, 0, sizeof *plan);
}
