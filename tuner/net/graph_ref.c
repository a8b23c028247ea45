/* tuner/net/graph_ref.c: seeded data and the naive reference execution of a graph. */
#include "tuner/net/graph_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

static void fill(Rng *rng, float *p, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(lo + (hi - lo) * Rng_uniform(rng));
}

Status GraphData_make(const Graph *g, uint64_t seed, float **params_out, float **input_out, char *err) {
    *params_out = *input_out = NULL;
    float *params = malloc((size_t)(g->n_params ? g->n_params : 1) * sizeof(float));
    int64_t n_in = Graph_inputFloats(g);
    float *input = malloc((size_t)n_in * sizeof(float));
    if (!params || !input) {
        free(params);
        free(input);
        return tt_fail(err, "out of memory for %lld parameters", (long long)g->n_params);
    }
    Rng rng;
    Rng_seed(&rng, seed * 0x9e3779b97f4a7c15ULL + 7);
    fill(&rng, input, n_in, -1, 1);
    for (int i = 0; i < g->n_ops; i++) {
        const GraphOp *op = &g->ops[i];
        const GraphTensor *x = &g->tensors[op->in[0]];
        float *p0 = params + op->param_off[0], *p1 = params + op->param_off[1];
        int64_t c0 = op->param_count[0], c1 = op->param_count[1];
        switch (op->kind) {
        case GOP_CONV2D:
        case GOP_DEPTHWISE: {
            double fan_in = (double)((op->kind == GOP_DEPTHWISE ? 1 : op->wl.ci) * op->wl.kh * op->wl.kw);
            double a = sqrt(6.0 / fan_in); /* variance 2 / fan_in */
            /* the last conv of a residual branch: small, so that deep ResNets do not grow without bound */
            int c = Graph_onlyReader(g, op->out);
            if (c >= 0 && g->ops[c].kind == GOP_BIAS_ADD) c = Graph_onlyReader(g, g->ops[c].out);
            if (c >= 0 && g->ops[c].kind == GOP_ADD) a *= 0.25;
            fill(&rng, p0, c0, -a, a);
            break;
        }
        case GOP_DENSE: {
            double a = sqrt(3.0 / (double)op->wl.k); /* variance 1 / k */
            fill(&rng, p0, c0, -a, a);
            break;
        }
        case GOP_BIAS_ADD:
            fill(&rng, p0, c0, -0.1, 0.1);
            break;
        case GOP_BATCH_NORM:
            fill(&rng, p0, c0, 0.5, 1.0);
            fill(&rng, p1, c1, -0.1, 0.1);
            break;
        case GOP_LAYER_NORM:
            fill(&rng, p0, c0, 0.8, 1.2);
            fill(&rng, p1, c1, -0.1, 0.1);
            break;
        case GOP_MASK_ADD: {
            int64_t b = op->k, s = x->dim[x->ndim - 1];
            for (int64_t bi = 0; bi < b; bi++)
                for (int64_t j = 0; j < s; j++)
                    p0[bi * s + j] = (bi % 2 == 1 && j >= s - s / 4 && j > 0) ? -10000.0f : 0.0f;
            break;
        }
        default:
            break;
        }
    }
    *params_out = params;
    *input_out = input;
    return TT_OK;
}

/* ---- one op ---- */

static void ref_conv(const GraphOp *op, const float *x, const float *w, float *y) {
    const Workload *wl = &op->wl;
    bool dw = op->kind == GOP_DEPTHWISE;
    int64_t N = wl->n, CI = wl->ci, H = wl->h, W = wl->w, CO = wl->co, KH = wl->kh, KW = wl->kw;
    int64_t OH = (H + 2 * wl->pad_h - KH) / wl->stride_h + 1, OW = (W + 2 * wl->pad_w - KW) / wl->stride_w + 1;
    int64_t mult = dw ? CO / CI : 1;
    double *acc = malloc((size_t)(OH * OW) * sizeof(double));
    if (!acc) abort();
    for (int64_t n = 0; n < N; n++)
        for (int64_t co = 0; co < CO; co++) {
            for (int64_t i = 0; i < OH * OW; i++)
                acc[i] = 0;
            int64_t cbeg = dw ? co / mult : 0, cend = dw ? cbeg + 1 : CI;
            for (int64_t ci = cbeg; ci < cend; ci++)
                for (int64_t kh = 0; kh < KH; kh++)
                    for (int64_t kw = 0; kw < KW; kw++) {
                        double wv = dw ? w[(co * KH + kh) * KW + kw] : w[((co * CI + ci) * KH + kh) * KW + kw];
                        const float *plane = x + (n * CI + ci) * H * W;
                        for (int64_t oh = 0; oh < OH; oh++) {
                            int64_t ih = oh * wl->stride_h - wl->pad_h + kh;
                            if (ih < 0 || ih >= H) continue;
                            for (int64_t ow = 0; ow < OW; ow++) {
                                int64_t iw = ow * wl->stride_w - wl->pad_w + kw;
                                if (iw < 0 || iw >= W) continue;
                                acc[oh * OW + ow] += wv * plane[ih * W + iw];
                            }
                        }
                    }
            for (int64_t i = 0; i < OH * OW; i++)
                y[(n * CO + co) * OH * OW + i] = (float)acc[i];
        }
    free(acc);
}

/* out[b][m][n] = sum_k a[b][m][k] * bt[b][n][k] */
static void ref_matmul(int64_t B, int64_t M, int64_t N, int64_t K, const float *a, const float *bt, float *y) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                const float *ar = a + (b * M + m) * K, *br = bt + (b * N + n) * K;
                for (int64_t k = 0; k < K; k++)
                    s += (double)ar[k] * br[k];
                y[(b * M + m) * N + n] = (float)s;
            }
}

static void ref_pool(const GraphOp *op, const GraphTensor *xt, const GraphTensor *yt, const float *x, float *y) {
    int64_t N = xt->dim[0], C = xt->dim[1], H = xt->dim[2], W = xt->dim[3], OH = yt->dim[2], OW = yt->dim[3];
    for (int64_t nc = 0; nc < N * C; nc++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                double best = -INFINITY, sum = 0;
                int64_t cnt = 0;
                for (int64_t kh = 0; kh < op->k; kh++)
                    for (int64_t kw = 0; kw < op->k; kw++) {
                        int64_t ih = oh * op->stride - op->pad + kh, iw = ow * op->stride - op->pad + kw;
                        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                        double v = x[nc * H * W + ih * W + iw];
                        best = v > best ? v : best;
                        sum += v;
                        cnt++;
                    }
                y[nc * OH * OW + oh * OW + ow] = (float)(op->kind == GOP_MAX_POOL ? best : sum / (double)cnt);
            }
}

void Graph_referenceOp(const Graph *g, const GraphOp *op, const float *params, const float *const *ins, float *y) {
    const GraphTensor *xt = &g->tensors[op->in[0]], *yt = &g->tensors[op->out];
    const float *x = ins[0];
    const float *p0 = params + op->param_off[0], *p1 = params + op->param_off[1];
    int64_t count = GraphTensor_count(yt);
    int64_t outer = xt->dim[0], chans = xt->ndim > 1 ? xt->dim[1] : 1, inner = 1;
    for (int i = 2; i < xt->ndim; i++)
        inner *= xt->dim[i];
    int64_t last = xt->dim[xt->ndim - 1], rows = GraphTensor_count(xt) / last;
    switch (op->kind) {
    case GOP_CONV2D:
    case GOP_DEPTHWISE:
        ref_conv(op, x, p0, y);
        break;
    case GOP_DENSE:
        ref_matmul(1, op->wl.m, op->wl.n, op->wl.k, x, p0, y);
        break;
    case GOP_BATCH_MATMUL:
        ref_matmul(op->wl.b, op->wl.m, op->wl.n, op->wl.k, x, ins[1], y);
        break;
    case GOP_BIAS_ADD:
    case GOP_BATCH_NORM:
        for (int64_t o = 0; o < outer; o++)
            for (int64_t c = 0; c < chans; c++)
                for (int64_t i = 0; i < inner; i++) {
                    int64_t at = (o * chans + c) * inner + i;
                    y[at] = op->kind == GOP_BIAS_ADD ? (float)((double)x[at] + p0[c])
                                                     : (float)((double)x[at] * p0[c] + p1[c]);
                }
        break;
    case GOP_RELU:
        for (int64_t i = 0; i < count; i++)
            y[i] = x[i] > 0 ? x[i] : 0;
        break;
    case GOP_CLIP:
        for (int64_t i = 0; i < count; i++)
            y[i] = (float)fmin(fmax(x[i], op->alpha), op->beta);
        break;
    case GOP_GELU:
        for (int64_t i = 0; i < count; i++)
            y[i] = (float)(0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0))));
        break;
    case GOP_SCALE:
        for (int64_t i = 0; i < count; i++)
            y[i] = (float)(x[i] * op->alpha);
        break;
    case GOP_ADD:
        for (int64_t i = 0; i < count; i++)
            y[i] = (float)((double)x[i] + ins[1][i]);
        break;
    case GOP_MASK_ADD: {
        int64_t heads = xt->dim[0] / op->k, s = last;
        for (int64_t i = 0; i < count; i++) {
            int64_t bh = i / (xt->dim[1] * s), j = i % s;
            y[i] = (float)((double)x[i] + p0[(bh / heads) * s + j]);
        }
        break;
    }
    case GOP_MAX_POOL:
    case GOP_AVG_POOL:
        ref_pool(op, xt, yt, x, y);
        break;
    case GOP_GLOBAL_AVG_POOL:
        for (int64_t nc = 0; nc < outer * chans; nc++) {
            double s = 0;
            for (int64_t i = 0; i < inner; i++)
                s += x[nc * inner + i];
            y[nc] = (float)(s / (double)inner);
        }
        break;
    case GOP_CONCAT: {
        int64_t N = yt->dim[0], C = yt->dim[1], HW = yt->dim[2] * yt->dim[3], c0 = 0;
        for (int j = 0; j < op->n_in; j++) {
            int64_t cj = g->tensors[op->in[j]].dim[1];
            for (int64_t n = 0; n < N; n++)
                for (int64_t c = 0; c < cj; c++)
                    for (int64_t i = 0; i < HW; i++)
                        y[(n * C + c0 + c) * HW + i] = ins[j][(n * cj + c) * HW + i];
            c0 += cj;
        }
        break;
    }
    case GOP_SOFTMAX:
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * last;
            double mx = -INFINITY, s = 0;
            for (int64_t j = 0; j < last; j++)
                mx = xr[j] > mx ? xr[j] : mx;
            for (int64_t j = 0; j < last; j++)
                s += exp(xr[j] - mx);
            for (int64_t j = 0; j < last; j++)
                y[r * last + j] = (float)(exp(xr[j] - mx) / s);
        }
        break;
    case GOP_LAYER_NORM:
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * last;
            double mean = 0, var = 0;
            for (int64_t j = 0; j < last; j++)
                mean += xr[j];
            mean /= (double)last;
            for (int64_t j = 0; j < last; j++)
                var += (xr[j] - mean) * (xr[j] - mean);
            var /= (double)last;
            double inv = 1.0 / sqrt(var + op->alpha);
            for (int64_t j = 0; j < last; j++)
                y[r * last + j] = (float)((xr[j] - mean) * inv * p0[j] + p1[j]);
        }
        break;
    case GOP_FLATTEN:
        memcpy(y, x, (size_t)count * sizeof(float));
        break;
    case GOP_SPLIT_HEADS:
    case GOP_SPLIT_HEADS_T:
    case GOP_MERGE_HEADS: {
        int64_t B, H, S, D;
        GraphOp_heads(g, op, &B, &H, &S, &D);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < S; i++)
                    for (int64_t e = 0; e < D; e++) {
                        int64_t flat = (b * S + i) * H * D + h * D + e; /* [b*s][heads*d] */
                        int64_t hs = ((b * H + h) * S + i) * D + e;     /* [b*heads][s][d] */
                        int64_t ht = ((b * H + h) * D + e) * S + i;     /* [b*heads][d][s] */
                        if (op->kind == GOP_SPLIT_HEADS)
                            y[hs] = x[flat];
                        else if (op->kind == GOP_SPLIT_HEADS_T)
                            y[ht] = x[flat];
                        else
                            y[flat] = x[hs];
                    }
        break;
    }
    case GOP_COUNT:
        break;
    }
}

Status Graph_reference(const Graph *g, const float *params, const float *input, float **out, char *err) {
    *out = NULL;
    int *order = malloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof(int));
    int *uses = calloc((size_t)g->n_tensors, sizeof(int));
    float **buf = calloc((size_t)g->n_tensors, sizeof(float *));
    if (!order || !uses || !buf) {
        free(order), free(uses), free(buf);
        return tt_fail(err, "out of memory for the reference");
    }
    Status st = Graph_order(g, order, err);
    for (int i = 0; i < g->n_inputs; i++)
        buf[g->inputs[i]] = (float *)input + Graph_inputOffset(g, i); /* never freed: producer < 0 */
    for (int i = 0; i < g->n_ops; i++)
        for (int j = 0; j < g->ops[i].n_in; j++)
            uses[g->ops[i].in[j]]++;
    uses[g->output]++; /* kept to the end */
    for (int k = 0; k < g->n_ops && st == TT_OK; k++) {
        const GraphOp *op = &g->ops[order[k]];
        const float *ins[GRAPH_MAX_IN];
        for (int j = 0; j < op->n_in; j++)
            ins[j] = buf[op->in[j]];
        buf[op->out] = malloc((size_t)GraphTensor_count(&g->tensors[op->out]) * sizeof(float));
        if (!buf[op->out]) {
            st = tt_fail(err, "out of memory for the reference's tensor %d", op->out);
            break;
        }
        Graph_referenceOp(g, op, params, ins, buf[op->out]);
        for (int j = 0; j < op->n_in; j++)
            if (--uses[op->in[j]] == 0 && g->tensors[op->in[j]].producer >= 0) {
                free(buf[op->in[j]]);
                buf[op->in[j]] = NULL;
            }
    }
    if (st == TT_OK) {
        *out = buf[g->output];
        buf[g->output] = NULL;
    }
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer >= 0) free(buf[t]);
    free(buf);
    free(uses);
    free(order);
    return st;
}

bool Graph_compare(const Graph *g, const float *ref, const float *got, char *msg, size_t n) {
    const GraphTensor *t = &g->tensors[g->output];
    int64_t count = GraphTensor_count(t), bad = 0, first = -1;
    double mx = 0, worst = 0;
    for (int64_t i = 0; i < count; i++)
        mx = fabs(ref[i]) > mx ? fabs(ref[i]) : mx;
    for (int64_t i = 0; i < count; i++) {
        double r = ref[i], d = fabs((double)got[i] - r);
        if (!(d <= GRAPH_ATOL * mx + GRAPH_RTOL * fabs(r))) { /* written so that NaN fails */
            if (bad++ == 0) first = i;
            if (!(d <= worst)) worst = d;
        }
    }
    if (bad == 0) return true;
    if (msg && n) {
        char where[96] = "";
        size_t used = 0;
        int64_t rest = first;
        int64_t idx[4] = {0};
        for (int d = t->ndim - 1; d >= 0; d--)
            idx[d] = rest % t->dim[d], rest /= t->dim[d];
        for (int d = 0; d < t->ndim && used < sizeof where; d++)
            used += (size_t)snprintf(where + used, sizeof where - used, "[%lld]", (long long)idx[d]);
        snprintf(msg, n, "output%s (element %lld): got %.6g, want %.6g (tolerance %.3g); %lld of %lld elements differ",
                 where, (long long)first, (double)got[first], (double)ref[first],
                 GRAPH_ATOL * mx + GRAPH_RTOL * fabs((double)ref[first]), (long long)bad, (long long)count);
    }
    return false;
}
