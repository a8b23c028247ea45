/* tuner/net/ops/nn_rnn.c: RNN, GRU and LSTM by their equations: forward,
 * reverse or bidirectional, optional biases, sequence_lens, initial states,
 * LSTM's peepholes and input_forget, GRU's linear_before_reset, clip, the
 * activations by name with their alphas and betas, and layout 0 (sequence
 * first) or 1 (batch first). Gate orders are ONNX's: GRU z, r, h; LSTM i, o,
 * f, c (peepholes i, o, f). Computed in double, one step at a time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/nn_util.h"

typedef double (*ActFn)(double x, double a, double b);

static double act_sigmoid(double x, double a, double b) { return 1 / (1 + exp(-x)); }
static double act_tanh(double x, double a, double b) { return tanh(x); }
static double act_relu(double x, double a, double b) { return x > 0 ? x : 0; }
static double act_hardsigmoid(double x, double a, double b) { return fmax(0, fmin(1, a * x + b)); }
static double act_leakyrelu(double x, double a, double b) { return x < 0 ? a * x : x; }
static double act_affine(double x, double a, double b) { return a * x + b; }
static double act_scaledtanh(double x, double a, double b) { return a * tanh(b * x); }
static double act_thresholdedrelu(double x, double a, double b) { return x > a ? x : 0; }
static double act_elu(double x, double a, double b) { return x < 0 ? a * (exp(x) - 1) : x; }
static double act_softsign(double x, double a, double b) { return x / (1 + fabs(x)); }
static double act_softplus(double x, double a, double b) { return log1p(exp(x)); }

static const struct {
    const char *name;
    ActFn fn;
    double alpha, beta; /* the defaults of the ONNX op of that name */
} ACTS[] = {
    {"Sigmoid", act_sigmoid, 0, 0},
    {"Tanh", act_tanh, 0, 0},
    {"Relu", act_relu, 0, 0},
    {"HardSigmoid", act_hardsigmoid, 0.2, 0.5},
    {"LeakyRelu", act_leakyrelu, 0.01, 0},
    {"Affine", act_affine, 1, 0},
    {"ScaledTanh", act_scaledtanh, 1, 1},
    {"ThresholdedRelu", act_thresholdedrelu, 1, 0},
    {"Elu", act_elu, 1, 0},
    {"Softsign", act_softsign, 0, 0},
    {"Softplus", act_softplus, 0, 0},
};
#define N_ACTS (int)(sizeof ACTS / sizeof ACTS[0])

typedef struct Act {
    ActFn fn;
    double a, b;
} Act;

typedef enum { CELL_RNN, CELL_GRU, CELL_LSTM } CellKind;

typedef struct Rnn {
    CellKind kind;
    int gates, dirs, n_act; /* n_act activations per direction: f (RNN), f g (GRU), f g h (LSTM) */
    int64_t seq, batch, in, hid;
    bool layout1, reverse_only, lbr, input_forget;
    double clip; /* <= 0: none */
    Act act[2][3];
} Rnn;

static CellKind cell_kind(const char *op) {
    return !strcmp(op, "RNN") ? CELL_RNN : !strcmp(op, "GRU") ? CELL_GRU : CELL_LSTM;
}

/* The activations (attribute or the op's defaults), checked by name. */
static Status rnn_acts(const NetNode *node, Rnn *r, char *err) {
    static const char *const DEF[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    const NetAttr *names = NetNode_attr(node, "activations");
    int na, nb, n = names && names->kind == NATTR_STRINGS ? names->n : 0;
    const double *al = NetNode_attrFloats(node, "activation_alpha", &na),
                 *be = NetNode_attrFloats(node, "activation_beta", &nb);
    if (n && n != r->n_act * r->dirs)
        return tt_fail(err, "attribute activations has %d names for %d", n, r->n_act * r->dirs);
    for (int k = 0; k < r->n_act * r->dirs; k++) {
        const char *name = n ? names->strings[k] : DEF[r->kind][k % r->n_act];
        int a = 0;
        while (a < N_ACTS && strcmp(ACTS[a].name, name))
            a++;
        if (a == N_ACTS) return tt_fail(err, "activation '%s' is not supported", name);
        r->act[k / r->n_act][k % r->n_act] =
            (Act){ACTS[a].fn, k < na ? al[k] : ACTS[a].alpha, k < nb ? be[k] : ACTS[a].beta};
    }
    return TT_OK;
}

/* Attributes of the node into r (sizes come with the shapes). */
static Status rnn_attrs(const NetNode *node, Rnn *r, char *err) {
    memset(r, 0, sizeof *r);
    r->kind = cell_kind(node->op);
    r->gates = r->kind == CELL_RNN ? 1 : r->kind == CELL_GRU ? 3 : 4;
    r->n_act = r->kind == CELL_RNN ? 1 : r->kind == CELL_GRU ? 2 : 3;
    const char *dir = NetNode_attrString(node, "direction", "forward");
    if (strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional"))
        return tt_fail(err, "attribute direction='%s' is not supported", dir);
    r->dirs = strcmp(dir, "bidirectional") ? 1 : 2;
    r->reverse_only = !strcmp(dir, "reverse");
    r->layout1 = NetNode_attrInt(node, "layout", 0) == 1;
    r->lbr = NetNode_attrInt(node, "linear_before_reset", 0) != 0;
    r->input_forget = NetNode_attrInt(node, "input_forget", 0) != 0;
    r->clip = NetNode_attrFloat(node, "clip", 0);
    return rnn_acts(node, r, err);
}

Status Rnn_check(const NetNode *node, const NetModel *model, char *err) {
    Rnn r;
    return rnn_attrs(node, &r, err);
}

/* Sizes from X, W and R, and the shapes of Y and Y_h (= Y_c). */
static Status rnn_setup(const OpCtx *ctx, Rnn *r, NdShape *ys, NdShape *hs) {
    if (rnn_attrs(ctx->node, r, ctx->err) != TT_OK) return TT_ERR;
    const NdShape *xs = &ctx->in[0]->shape, *ws = &ctx->in[1]->shape, *rs = &ctx->in[2]->shape;
    if (xs->rank != 3 || ws->rank != 3 || rs->rank != 3)
        return tt_fail(ctx->err, "X, W and R of ranks %d, %d, %d: 3 expected", xs->rank, ws->rank, rs->rank);
    r->seq = xs->dim[r->layout1 ? 1 : 0];
    r->batch = xs->dim[r->layout1 ? 0 : 1];
    r->in = xs->dim[2];
    r->hid = NetNode_attrInt(ctx->node, "hidden_size", rs->dim[2]);
    if (ws->dim[0] != r->dirs || ws->dim[1] != r->gates * r->hid || ws->dim[2] != r->in || rs->dim[0] != r->dirs ||
        rs->dim[1] != r->gates * r->hid || rs->dim[2] != r->hid)
        return tt_fail(ctx->err, "W or R does not fit %d direction(s), %d gates of %lld and %lld inputs", r->dirs,
                       r->gates, (long long)r->hid, (long long)r->in);
    for (int i = 3; i < ctx->n_in; i++) {
        const NdTensor *t = ctx->in[i];
        int64_t want = i == 3   ? r->dirs * 2 * r->gates * r->hid
                       : i == 4 ? r->batch
                       : i == 7 ? r->dirs * 3 * r->hid
                                : r->dirs * r->batch * r->hid;
        if (t && t->shape.rank >= 0 && t->count != want)
            return tt_fail(ctx->err, "input %d has %lld elements, %lld expected", i, (long long)t->count,
                           (long long)want);
    }
    *ys = r->layout1 ? (NdShape){.rank = 4, .dim = {r->batch, r->seq, r->dirs, r->hid}}
                     : (NdShape){.rank = 4, .dim = {r->seq, r->dirs, r->batch, r->hid}};
    *hs = r->layout1 ? (NdShape){.rank = 3, .dim = {r->batch, r->dirs, r->hid}}
                     : (NdShape){.rank = 3, .dim = {r->dirs, r->batch, r->hid}};
    return TT_OK;
}

Status Rnn_infer(OpCtx *ctx) {
    for (int i = 0; i < ctx->n_in; i++)
        if (i != 4 && Op_requireType(ctx, i, NN_FLOATS) != TT_OK) return TT_ERR;
    for (int i = 0; i < ctx->n_out; i++) {
        ctx->out[i].type = ctx->in[0]->type;
        ctx->out[i].shape.rank = -1;
    }
    if (ctx->in[0]->shape.rank < 0 || ctx->in[1]->shape.rank < 0 || ctx->in[2]->shape.rank < 0) return TT_OK;
    Rnn r;
    NdShape ys, hs;
    if (rnn_setup(ctx, &r, &ys, &hs) != TT_OK) return TT_ERR;
    for (int i = 0; i < ctx->n_out; i++)
        ctx->out[i].shape = i == 0 ? ys : hs;
    return TT_OK;
}

static double clipped(const Rnn *r, double v) { return r->clip > 0 ? fmax(-r->clip, fmin(r->clip, v)) : v; }

static double act(const Act *a, double v) { return a->fn(v, a->a, a->b); }

/* The weights of one direction and the step's scratch. */
typedef struct Dir {
    const double *w, *r, *wb, *rb, *p; /* wb, rb, p NULL when absent */
    const Act *act;
    double *xw, *hr, *tmp; /* gates * hid each, tmp hid */
} Dir;

/* xw = W x + Wb and hr = R h + Rb for every gate row. */
static void rnn_gemv(const Rnn *r, const Dir *d, const double *x, const double *h) {
    for (int64_t j = 0; j < r->gates * r->hid; j++) {
        double a = d->wb ? d->wb[j] : 0, b = d->rb ? d->rb[j] : 0;
        for (int64_t i = 0; i < r->in; i++)
            a += d->w[j * r->in + i] * x[i];
        for (int64_t i = 0; i < r->hid; i++)
            b += d->r[j * r->hid + i] * h[i];
        d->xw[j] = a;
        d->hr[j] = b;
    }
}

/* GRU's candidate without linear_before_reset: R_h (r . h) + Rb_h. */
static void gru_reset_product(const Rnn *r, const Dir *d, const double *h) {
    int64_t H = r->hid;
    for (int64_t i = 0; i < H; i++)
        d->tmp[i] = act(&d->act[0], clipped(r, d->xw[H + i] + d->hr[H + i])) * h[i];
    for (int64_t j = 0; j < H; j++) {
        double s = d->rb ? d->rb[2 * H + j] : 0;
        for (int64_t i = 0; i < H; i++)
            s += d->r[(2 * H + j) * H + i] * d->tmp[i];
        d->hr[2 * H + j] = s;
    }
}

/* One step of one batch row: h (and c) updated in place. */
static void rnn_step(const Rnn *r, const Dir *d, const double *x, double *h, double *c) {
    int64_t H = r->hid;
    rnn_gemv(r, d, x, h);
    if (r->kind == CELL_GRU && !r->lbr) gru_reset_product(r, d, h);
    for (int64_t j = 0; j < H; j++) {
        const double *xw = d->xw, *hr = d->hr;
        if (r->kind == CELL_RNN) {
            h[j] = act(&d->act[0], clipped(r, xw[j] + hr[j]));
        } else if (r->kind == CELL_GRU) {
            double z = act(&d->act[0], clipped(r, xw[j] + hr[j]));
            double rr = r->lbr ? act(&d->act[0], clipped(r, xw[H + j] + hr[H + j])) : 1;
            double hh = act(&d->act[1], clipped(r, xw[2 * H + j] + rr * hr[2 * H + j]));
            h[j] = (1 - z) * hh + z * h[j];
        } else {
            double pi = d->p ? d->p[j] : 0, po = d->p ? d->p[H + j] : 0, pf = d->p ? d->p[2 * H + j] : 0;
            double i = act(&d->act[0], clipped(r, xw[j] + hr[j] + pi * c[j]));
            double f = r->input_forget ? 1 - i : act(&d->act[0], clipped(r, xw[2 * H + j] + hr[2 * H + j] + pf * c[j]));
            double g = act(&d->act[1], clipped(r, xw[3 * H + j] + hr[3 * H + j]));
            c[j] = f * c[j] + i * g;
            double o = act(&d->act[0], clipped(r, xw[H + j] + hr[H + j] + po * c[j]));
            h[j] = o * act(&d->act[2], c[j]);
        }
    }
}

/* Offsets of X[t, b], Y[t, d, b] and Y_h[d, b] in either layout. */
static int64_t x_at(const Rnn *r, int64_t t, int64_t b) {
    return (r->layout1 ? b * r->seq + t : t * r->batch + b) * r->in;
}
static int64_t y_at(const Rnn *r, int64_t t, int d, int64_t b) {
    return (r->layout1 ? (b * r->seq + t) * r->dirs + d : (t * r->dirs + d) * r->batch + b) * r->hid;
}
static int64_t h_at(const Rnn *r, int d, int64_t b) {
    return (r->layout1 ? b * r->dirs + d : d * r->batch + b) * r->hid;
}

/* One direction over every batch row: Y's steps, and the last h and c. */
static void rnn_dir(const Rnn *r, int dir, const double *const *v, Dir *d, double *y, double *yh, double *yc) {
    int64_t G = r->gates, H = r->hid;
    const double *x = v[0], *seq_lens = v[4], *h0 = v[5], *c0 = v[6];
    d->w = v[1] + dir * G * H * r->in;
    d->r = v[2] + dir * G * H * H;
    d->wb = v[3] ? v[3] + dir * 2 * G * H : NULL;
    d->rb = v[3] ? d->wb + G * H : NULL;
    d->p = v[7] ? v[7] + dir * 3 * H : NULL;
    d->act = r->act[dir];
    bool rev = r->reverse_only || dir == 1;
    for (int64_t b = 0; b < r->batch; b++) {
        double *h = yh + h_at(r, dir, b), *c = yc + h_at(r, dir, b);
        for (int64_t j = 0; j < H; j++) {
            h[j] = h0 ? h0[h_at(r, dir, b) + j] : 0;
            c[j] = c0 ? c0[h_at(r, dir, b) + j] : 0;
        }
        int64_t len = seq_lens ? (int64_t)seq_lens[b] : r->seq;
        len = len < 0 ? 0 : len > r->seq ? r->seq : len;
        for (int64_t s = 0; s < len; s++) {
            int64_t t = rev ? len - 1 - s : s;
            rnn_step(r, d, x + x_at(r, t, b), h, c);
            memcpy(y + y_at(r, t, dir, b), h, sizeof *h * (size_t)H);
        }
    }
}

/* Y into output 0 (Nn_runViews' buffer); Y_h and Y_c computed beside it and
 * stored into outputs 1 and 2 when the node has them. */
static bool rnn_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *y) {
    const Rnn *r = arg;
    int64_t nh = r->dirs * r->batch * r->hid, gh = r->gates * r->hid;
    double *yh = calloc((size_t)(nh > 0 ? nh : 1), sizeof(double)),
           *yc = calloc((size_t)(nh > 0 ? nh : 1), sizeof(double));
    double *scratch = malloc(sizeof(double) * (size_t)(2 * gh + r->hid + 1));
    bool ok = yh && yc && scratch;
    Dir d = {.xw = scratch, .hr = scratch ? scratch + gh : NULL, .tmp = scratch ? scratch + 2 * gh : NULL};
    for (int dir = 0; ok && dir < r->dirs; dir++)
        rnn_dir(r, dir, (const double *const *)in, &d, y, yh, yc);
    NdShape hs = ctx->out[0].shape;
    hs.rank = 3;
    hs.dim[0] = r->layout1 ? r->batch : r->dirs;
    hs.dim[1] = r->layout1 ? r->dirs : r->batch;
    hs.dim[2] = r->hid;
    for (int k = 1; ok && k < ctx->n_out && k < 3; k++) {
        ok = NdTensor_alloc(&ctx->out[k], ctx->in[0]->type, &hs, ctx->err) == TT_OK;
        for (int64_t i = 0; ok && i < nh; i++)
            NdTensor_set(&ctx->out[k], i, (k == 1 ? yh : yc)[i]);
    }
    free(yh);
    free(yc);
    free(scratch);
    return ok;
}

Status Rnn_run(OpCtx *ctx) {
    Rnn r;
    NdShape ys, hs;
    if (Rnn_infer(ctx) != TT_OK || rnn_setup(ctx, &r, &ys, &hs) != TT_OK) return TT_ERR;
    Status st = Nn_runViews(ctx, 8, &ys, true, rnn_compute, &r);
    for (int k = 1; st != TT_OK && k < ctx->n_out; k++)
        NdTensor_free(&ctx->out[k]);
    return st;
}

double Rnn_flops(const OpCtx *ctx) {
    const NdShape *xs = &ctx->in[0]->shape, *ws = &ctx->in[1]->shape, *rs = &ctx->in[2]->shape;
    if (xs->rank != 3 || ws->rank != 3 || rs->rank != 3) return 0;
    return 2.0 * (double)(xs->dim[0] * xs->dim[1]) * (double)ws->dim[0] * (double)ws->dim[1] *
           (double)(ws->dim[2] + rs->dim[2]);
}
