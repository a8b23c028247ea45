/* tuner/net/ops/nn_conv.c: Conv and ConvTranspose (1-D, 2-D and 3-D; group,
 * strides, dilations, pads, auto_pad, an optional bias; ConvTranspose's
 * output_padding and output_shape). The kernels are in ops/nn_kern.h. */
#include <string.h>

#include "tuner/net/ops/nn_util.h"

Status Conv_check(const NetNode *node, const NetModel *model, char *err) {
    if (NetNode_attrInt(node, "group", 1) < 1)
        return tt_fail(err, "attribute group=%lld is not positive", (long long)NetNode_attrInt(node, "group", 1));
    return Nn_checkAutoPad(node, err);
}

static Status conv_types(const OpCtx *ctx) {
    for (int i = 0; i < ctx->n_in && i < 3; i++)
        if (Op_requireType(ctx, i, NN_FLOATS) != TT_OK) return TT_ERR;
    return TT_OK;
}

/* The kernel size: kernel_shape, which must agree with the weight, or the
 * weight's spatial dimensions. */
static Status conv_kernel(const NetNode *node, const NdShape *ws, int64_t *k, char *err) {
    int nk, nsp = ws->rank - 2;
    const int64_t *ks = NetNode_attrInts(node, "kernel_shape", &nk);
    if (nk && nk != nsp) return tt_fail(err, "attribute kernel_shape has %d values for %d spatial dimensions", nk, nsp);
    for (int i = 0; i < nsp && i < NN_SP; i++) {
        k[i] = ws->dim[2 + i];
        if (nk && ks[i] != k[i])
            return tt_fail(err, "attribute kernel_shape (%lld in dimension %d) does not match the weight's %lld",
                           (long long)ks[i], i, (long long)k[i]);
    }
    return TT_OK;
}

/* Shapes common to both ops: ranks, group, the bias's length (m outputs). */
static Status conv_shapes(const OpCtx *ctx, const char *what) {
    const NdShape *xs = &ctx->in[0]->shape, *ws = &ctx->in[1]->shape;
    if (xs->rank < 3 || xs->rank > 2 + NN_SP)
        return tt_fail(ctx->err, "input of rank %d: %s takes 1 to %d spatial dimensions", xs->rank, what, NN_SP);
    if (ws->rank != xs->rank) return tt_fail(ctx->err, "weight of rank %d for an input of rank %d", ws->rank, xs->rank);
    return TT_OK;
}

static Status conv_bias(const OpCtx *ctx, int64_t m) {
    const NdTensor *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
    if (b && b->shape.rank >= 0 && (b->shape.rank != 1 || b->shape.dim[0] != m))
        return tt_fail(ctx->err, "bias of %lld elements for %lld output channels",
                       (long long)(b->shape.rank == 1 ? b->shape.dim[0] : -1), (long long)m);
    return TT_OK;
}

static void conv_outShape(const NnConv *cv, int rank, NdShape *out) {
    out->rank = rank;
    out->dim[0] = cv->n;
    out->dim[1] = cv->m;
}

Status Nn_convSetup(const OpCtx *ctx, NnConv *cv, NdShape *out) {
    const NdShape *xs = &ctx->in[0]->shape, *ws = &ctx->in[1]->shape;
    int64_t k[NN_SP];
    if (conv_shapes(ctx, "Conv") != TT_OK || conv_kernel(ctx->node, ws, k, ctx->err) != TT_OK) return TT_ERR;
    cv->group = NetNode_attrInt(ctx->node, "group", 1);
    cv->n = xs->dim[0];
    cv->c = xs->dim[1];
    cv->m = ws->dim[0];
    cv->transposed = false;
    if (cv->group < 1 || ws->dim[1] * cv->group != cv->c)
        return tt_fail(ctx->err, "input has %lld channels; the weight takes %lld per group in %lld groups",
                       (long long)cv->c, (long long)ws->dim[1], (long long)cv->group);
    if (cv->m % cv->group)
        return tt_fail(ctx->err, "%lld output channels do not split into %lld groups", (long long)cv->m,
                       (long long)cv->group);
    if (conv_bias(ctx, cv->m) != TT_OK || NnWin_init(&cv->win, ctx->node, xs, k, false, ctx->err) != TT_OK)
        return TT_ERR;
    conv_outShape(cv, xs->rank, out);
    for (int i = 0; i < cv->win.nsp; i++)
        out->dim[2 + i] = cv->win.out[NN_SP - cv->win.nsp + i];
    return TT_OK;
}

/* Floor division (pads from a negative total padding round like Python's). */
static int64_t floordiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

/* One spatial dimension of ConvTranspose: pads and the output size, which is
 * the forward window's input (w->in[j]). target < 0: no output_shape. */
static void convT_dim(NnWin *w, int j, int64_t x_in, int64_t opad, int64_t target, const char *auto_pad) {
    int64_t full = w->s[j] * (x_in - 1) + opad + (w->k[j] - 1) * w->d[j] + 1;
    bool same = !strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER");
    if (target < 0 && same) target = x_in * w->s[j];
    if (target >= 0) {
        int64_t total = full - target;
        bool upper = !strcmp(auto_pad, "SAME_UPPER");
        w->pb[j] = upper ? floordiv2(total) : total - floordiv2(total);
        w->pe[j] = total - w->pb[j];
        w->in[j] = target;
        return;
    }
    if (!strcmp(auto_pad, "VALID")) w->pb[j] = w->pe[j] = 0;
    w->in[j] = full - w->pb[j] - w->pe[j];
}

/* The forward window of ConvTranspose (see NnConv in nn_util.h). */
static Status convT_window(const OpCtx *ctx, const int64_t *k, NnWin *w) {
    const NdShape *xs = &ctx->in[0]->shape;
    int nsp = xs->rank - 2, n_os;
    int64_t s[NN_SP], d[NN_SP], p[2 * NN_SP], op[NN_SP];
    const NetNode *node = ctx->node;
    if (Nn_winInts(node, "strides", nsp, 1, 1, 1, s, ctx->err) != TT_OK ||
        Nn_winInts(node, "dilations", nsp, 1, 1, 1, d, ctx->err) != TT_OK ||
        Nn_winInts(node, "pads", nsp, 2, 0, 0, p, ctx->err) != TT_OK ||
        Nn_winInts(node, "output_padding", nsp, 1, 0, 0, op, ctx->err) != TT_OK)
        return TT_ERR;
    const int64_t *os = NetNode_attrInts(node, "output_shape", &n_os);
    if (n_os && n_os != nsp && n_os != nsp + 2)
        return tt_fail(ctx->err, "attribute output_shape has %d values for %d spatial dimensions", n_os, nsp);
    const char *auto_pad = NetNode_attrString(node, "auto_pad", "NOTSET");
    w->nsp = nsp;
    for (int j = 0; j < NN_SP; j++) {
        int i = j - (NN_SP - nsp);
        w->k[j] = i < 0 ? 1 : k[i];
        w->s[j] = i < 0 ? 1 : s[i];
        w->d[j] = i < 0 ? 1 : d[i];
        w->pb[j] = i < 0 ? 0 : p[i];
        w->pe[j] = i < 0 ? 0 : p[nsp + i];
        w->out[j] = i < 0 ? 1 : xs->dim[2 + i];
        int64_t target = (i < 0 || !n_os) ? -1 : os[n_os - nsp + i];
        convT_dim(w, j, w->out[j], i < 0 ? 0 : op[i], target, auto_pad);
        if (w->in[j] < 0)
            return tt_fail(ctx->err, "the output's spatial dimension %d would be %lld", i, (long long)w->in[j]);
    }
    return TT_OK;
}

static Status convT_setup(const OpCtx *ctx, NnConv *cv, NdShape *out) {
    const NdShape *xs = &ctx->in[0]->shape, *ws = &ctx->in[1]->shape;
    int64_t k[NN_SP];
    if (conv_shapes(ctx, "ConvTranspose") != TT_OK || conv_kernel(ctx->node, ws, k, ctx->err) != TT_OK) return TT_ERR;
    cv->group = NetNode_attrInt(ctx->node, "group", 1);
    cv->n = xs->dim[0];
    cv->c = xs->dim[1];
    cv->m = ws->dim[1] * cv->group;
    cv->transposed = true;
    if (cv->group < 1 || ws->dim[0] != cv->c || cv->c % cv->group)
        return tt_fail(ctx->err, "input has %lld channels; the weight takes %lld in %lld groups", (long long)cv->c,
                       (long long)ws->dim[0], (long long)cv->group);
    if (conv_bias(ctx, cv->m) != TT_OK || convT_window(ctx, k, &cv->win) != TT_OK) return TT_ERR;
    conv_outShape(cv, xs->rank, out);
    for (int i = 0; i < cv->win.nsp; i++)
        out->dim[2 + i] = cv->win.in[NN_SP - cv->win.nsp + i];
    return TT_OK;
}

typedef Status (*ConvSetup)(const OpCtx *ctx, NnConv *cv, NdShape *out);

static Status conv_infer(OpCtx *ctx, ConvSetup setup) {
    if (conv_types(ctx) != TT_OK) return TT_ERR;
    ctx->out[0].type = ctx->in[0]->type;
    ctx->out[0].shape.rank = -1;
    if (ctx->in[0]->shape.rank < 0 || ctx->in[1]->shape.rank < 0) return TT_OK;
    NnConv cv;
    return setup(ctx, &cv, &ctx->out[0].shape);
}

Status Conv_infer(OpCtx *ctx) { return conv_infer(ctx, Nn_convSetup); }
Status ConvT_infer(OpCtx *ctx) { return conv_infer(ctx, convT_setup); }

static bool conv_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *y) {
    const NnConv *cv = arg;
    if (dbl) return (cv->transposed ? Nn_convT_d : Nn_conv_d)(cv, in[0], in[1], in[2], y);
    return (cv->transposed ? Nn_convT_f : Nn_conv_f)(cv, in[0], in[1], in[2], y);
}

static Status conv_run(OpCtx *ctx, ConvSetup setup) {
    NnConv cv;
    NdShape os;
    if (conv_types(ctx) != TT_OK || setup(ctx, &cv, &os) != TT_OK) return TT_ERR;
    return Nn_runViews(ctx, 3, &os, ctx->in[0]->type == ND_F64, conv_compute, &cv);
}

Status Conv_run(OpCtx *ctx) { return conv_run(ctx, Nn_convSetup); }
Status ConvT_run(OpCtx *ctx) { return conv_run(ctx, convT_setup); }

/* 2 * multiply-adds: each output element of Conv sums C/group * kernel
 * products; each input element of ConvTranspose feeds M/group * kernel. */
double Conv_flops(const OpCtx *ctx) {
    const NdShape *ys = &ctx->out[0].shape, *ws = &ctx->in[1]->shape;
    return ys->rank < 0 || ws->rank < 0 ? 0 : 2 * Nn_count(ys) * Nn_count(ws) / (double)(ws->dim[0] ? ws->dim[0] : 1);
}

double ConvT_flops(const OpCtx *ctx) {
    const NdShape *xs = &ctx->in[0]->shape, *ws = &ctx->in[1]->shape;
    return xs->rank < 0 || ws->rank < 0 ? 0 : 2 * Nn_count(xs) * Nn_count(ws) / (double)(ws->dim[0] ? ws->dim[0] : 1);
}
