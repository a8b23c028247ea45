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

/* A tunetop.Elementwise node whose inputs besides input 0 are single elements. */
static bool pointwise_chain(const NetModel *m, int q) {
    const NetNode *e = &m->nodes[q];
    if (strcmp(e->op, "Elementwise") || strcmp(e->domain, "tunetop") || e->n_in < 1 || e->in[0] < 0) return false;
    for (int j = 1; j < e->n_in; j++)
        if (e->in[j] >= 0 && NdShape_elems(&m->values[e->in[j]].shape) != 1) return false;
    return true;
}

/* The kernel node whose blocked output can be kernel node k's data input: its producer, or
 * the producer of the one pointwise chain (*ew) between them, each read by nothing else. */
static int data_source(const NetModel *m, const NetReaders *r, const HoKernel *kernels, int k, int *ew) {
    int v = m->nodes[k].in[0], q = m->values[v].producer;
    *ew = -1;
    if (q < 0) return -1;
    if (kernels[q].is_kernel) return q;
    if (!pointwise_chain(m, q) || NetReaders_sole(r, v) != k) return -1;
    int u = m->nodes[q].in[0], p = m->values[u].producer;
    if (p < 0 || !kernels[p].is_kernel || NetReaders_sole(r, u) != q) return -1;
    *ew = q;
    return p;
}

/* Kernel node k's sources: its data input's and, when it has one, its residual's. */
static void plan_node(const NetModel *m, const NetReaders *r, const HoKernel *kernels, int k, HoPlan *plan) {
    const NetNode *n = &m->nodes[k];
    const HoKernel *hk = &kernels[k];
    bool residual = n->n_in > 3 && n->in[3] >= 0;
    if (!hk->is_kernel || hk->reads_inputs || n->n_in < 1 || n->in[0] < 0 || (residual && !hk->res_buffer)) return;
    int ew, p = data_source(m, r, kernels, k, &ew);
    if (p < 0 || !HoLayout_same(&kernels[p].out, &hk->in)) return;
    plan->data_from[k] = p;
    if (ew >= 0) plan->ew_on[ew] = p;
    if (!residual) return;
    int q = m->values[n->in[3]].producer;
    if (q >= 0 && kernels[q].is_kernel && HoLayout_same(&kernels[q].out, &hk->out)) plan->res_from[k] = q;
}

void HoPlan_make(const NetModel *m, const HoKernel *kernels, HoPlan *plan) {
    int nn = m->n_nodes;
    plan->data_from = malloc(sizeof(int) * (size_t)(nn + 1));
    plan->res_from = malloc(sizeof(int) * (size_t)(nn + 1));
    plan->ew_on = malloc(sizeof(int) * (size_t)(nn + 1));
    plan->skip_unpack = calloc((size_t)nn + 1, sizeof(bool));
    bool *dense_read = calloc((size_t)nn + 1, sizeof(bool)); /* per kernel node: a reader needs its dense output */
    if (!plan->data_from || !plan->res_from || !plan->ew_on || !plan->skip_unpack || !dense_read) abort();
    for (int i = 0; i < nn; i++)
        plan->data_from[i] = plan->res_from[i] = plan->ew_on[i] = -1;
    NetReaders r;
    NetReaders_init(&r, m);
    for (int k = 0; k < nn; k++)
        plan_node(m, &r, kernels, k, plan);
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
    memset(plan, 0, sizeof *plan);
}
