/* tuner/net/ops/nn_util.c: windows, precision views and shared inference of
 * the nn ops (see nn_util.h). */
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/nn_util.h"
#include "tuner/net/ops/par.h"

const NdType NN_FLOATS[] = {ND_F32, ND_F16, ND_F64, ND_UNDEF};

Status Nn_checkAutoPad(const NetNode *node, char *err) {
    const char *ap = NetNode_attrString(node, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER") && strcmp(ap, "VALID"))
        return tt_fail(err, "attribute auto_pad='%s' is not supported", ap);
    return TT_OK;
}

Status Nn_winInts(const NetNode *node, const char *name, int nsp, int per, int64_t min, int64_t def, int64_t *out,
                  char *err) {
    int n;
    const int64_t *v = NetNode_attrInts(node, name, &n);
    if (n == 0 || !v) {
        for (int i = 0; i < nsp * per; i++)
            out[i] = def;
        return TT_OK;
    }
    if (n != nsp * per) return tt_fail(err, "attribute %s has %d values for %d spatial dimensions", name, n, nsp);
    for (int i = 0; i < n; i++) {
        if (v[i] < min)
            return tt_fail(err, "attribute %s has %lld (at least %lld expected)", name, (long long)v[i],
                           (long long)min);
        out[i] = v[i];
    }
    return TT_OK;
}

/* Output size and pads of one spatial dimension j of w. */
static Status win_dim(NnWin *w, int j, const char *auto_pad, bool ceil_mode, char *err) {
    int64_t in = w->in[j], s = w->s[j], ek = (w->k[j] - 1) * w->d[j] + 1;
    if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
        w->out[j] = (in + s - 1) / s;
        int64_t total = (w->out[j] - 1) * s + ek - in;
        if (total < 0) total = 0;
        bool upper = !strcmp(auto_pad, "SAME_UPPER");
        w->pb[j] = upper ? total / 2 : total - total / 2;
        w->pe[j] = total - w->pb[j];
        return TT_OK;
    }
    if (!strcmp(auto_pad, "VALID")) w->pb[j] = w->pe[j] = 0;
    int64_t span = in + w->pb[j] + w->pe[j] - ek;
    if (span < 0)
        return tt_fail(err, "the window spans %lld elements, more than the padded input's %lld", (long long)ek,
                       (long long)(in + w->pb[j] + w->pe[j]));
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + w->pb[j]) out--; /* the last window would start in the end padding */
    w->out[j] = out;
    return TT_OK;
}

Status NnWin_init(NnWin *w, const NetNode *node, const NdShape *x, const int64_t *k, bool ceil_mode, char *err) {
    int nsp = x->rank - 2;
    if (nsp < 1 || nsp > NN_SP)
        return tt_fail(err, "input of rank %d: %s takes 1 to %d spatial dimensions", x->rank, node->op, NN_SP);
    int64_t s[NN_SP], d[NN_SP], p[2 * NN_SP];
    if (Nn_winInts(node, "strides", nsp, 1, 1, 1, s, err) != TT_OK ||
        Nn_winInts(node, "dilations", nsp, 1, 1, 1, d, err) != TT_OK ||
        Nn_winInts(node, "pads", nsp, 2, 0, 0, p, err) != TT_OK)
        return TT_ERR;
    const char *auto_pad = NetNode_attrString(node, "auto_pad", "NOTSET");
    w->nsp = nsp;
    for (int j = 0; j < NN_SP; j++) {
        int i = j - (NN_SP - nsp); /* the op's spatial dimension, or < 0 for a leading unit one */
        w->in[j] = i < 0 ? 1 : x->dim[2 + i];
        w->k[j] = i < 0 ? 1 : k[i];
        w->s[j] = i < 0 ? 1 : s[i];
        w->d[j] = i < 0 ? 1 : d[i];
        w->pb[j] = i < 0 ? 0 : p[i];
        w->pe[j] = i < 0 ? 0 : p[nsp + i];
        if (w->k[j] < 1) return tt_fail(err, "kernel size %lld in spatial dimension %d", (long long)w->k[j], i);
        if (win_dim(w, j, auto_pad, ceil_mode, err) != TT_OK) return TT_ERR;
    }
    return TT_OK;
}

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }
int64_t NnWin_kernel(const NnWin *w) { return prod3(w->k); }
int64_t NnWin_inSize(const NnWin *w) { return prod3(w->in); }
int64_t NnWin_outSize(const NnWin *w) { return prod3(w->out); }

/* A conversion between a tensor's data and floats or doubles, split over the
 * threads (par.h): each element converts on its own. */
typedef struct NnCast {
    const NdTensor *in; /* a view: the tensor read into buf */
    NdTensor *out;      /* an output: buf written into the tensor */
    void *buf;          /* the working side */
    bool dbl;
} NnCast;

static void cast_range(void *arg, int64_t lo, int64_t hi) {
    const NnCast *c = arg;
    float *f = c->buf;
    double *d = c->buf;
    if (c->in && c->dbl && c->in->type == ND_F32)
        for (int64_t i = lo; i < hi; i++)
            d[i] = ((const float *)c->in->data)[i];
    else if (c->in && c->dbl)
        for (int64_t i = lo; i < hi; i++)
            d[i] = NdTensor_get(c->in, i);
    else if (c->in)
        for (int64_t i = lo; i < hi; i++)
            f[i] = (float)NdTensor_get(c->in, i);
    else if (c->dbl && c->out->type == ND_F32)
        for (int64_t i = lo; i < hi; i++)
            ((float *)c->out->data)[i] = (float)d[i];
    else
        for (int64_t i = lo; i < hi; i++)
            NdTensor_set(c->out, i, c->dbl ? d[i] : (double)f[i]);
}

Status Nn_view(const NdTensor *t, bool dbl, NnView *v, char *err) {
    v->owned = NULL;
    v->p = t->data;
    if (t->type == (dbl ? ND_F64 : ND_F32)) return TT_OK;
    int64_t n = t->count;
    void *buf = malloc((size_t)(n > 0 ? n : 1) * (dbl ? sizeof(double) : sizeof(float)));
    if (!buf) return tt_fail(err, "out of memory converting %lld elements", (long long)n);
    NnCast c = {.in = t, .buf = buf, .dbl = dbl};
    Par_range(n, (double)n, cast_range, &c);
    v->owned = buf;
    v->p = buf;
    return TT_OK;
}

void Nn_viewDone(NnView *v) {
    free(v->owned);
    v->owned = NULL;
    v->p = NULL;
}

Status Nn_outAlloc(NdTensor *out, NdType type, const NdShape *shape, bool dbl, void **buf, char *err) {
    if (NdTensor_alloc(out, type, shape, err) != TT_OK) return TT_ERR;
    if (type == (dbl ? ND_F64 : ND_F32)) {
        *buf = out->data;
        return TT_OK;
    }
    *buf = calloc((size_t)(out->count > 0 ? out->count : 1), dbl ? sizeof(double) : sizeof(float));
    if (!*buf) {
        NdTensor_free(out);
        return tt_fail(err, "out of memory for %lld elements of scratch", (long long)out->count);
    }
    return TT_OK;
}

void Nn_outDone(NdTensor *out, bool dbl, void *buf) {
    if (buf == out->data) return;
    NnCast c = {.out = out, .buf = buf, .dbl = dbl};
    Par_range(out->count, (double)out->count, cast_range, &c);
    free(buf);
}

Status Nn_inferSame(OpCtx *ctx) {
    if (Op_requireType(ctx, 0, NN_FLOATS) != TT_OK) return TT_ERR;
    ctx->out[0].type = ctx->in[0]->type;
    ctx->out[0].shape = ctx->in[0]->shape;
    return TT_OK;
}

Status Nn_runViews(OpCtx *ctx, int n, const NdShape *ys, bool dbl, NnCompute fn, const void *arg) {
    NnView v[NN_MAX_VIEWS] = {{0}};
    const void *p[NN_MAX_VIEWS] = {0};
    void *y = NULL;
    Status st = TT_ERR;
    for (int i = 0; i < n && i < NN_MAX_VIEWS; i++) {
        if (i < ctx->n_in && ctx->in[i] && Nn_view(ctx->in[i], dbl, &v[i], ctx->err) != TT_OK) goto done;
        p[i] = v[i].p;
    }
    if (Nn_outAlloc(&ctx->out[0], ctx->in[0]->type, ys, dbl, &y, ctx->err) != TT_OK) goto done;
    ctx->err[0] = '\0';
    bool ok = fn(ctx, arg, dbl, p, y);
    Nn_outDone(&ctx->out[0], dbl, y);
    if (ok)
        st = TT_OK;
    else {
        NdTensor_free(&ctx->out[0]);
        if (!ctx->err[0]) tt_fail(ctx->err, "out of memory for %s's scratch", ctx->node ? ctx->node->op : "the op");
    }
done:
    for (int i = 0; i < NN_MAX_VIEWS; i++)
        Nn_viewDone(&v[i]);
    return st;
}

void Nn_axisSplit(const NdShape *s, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
    int64_t o = 1, in = 1;
    for (int i = 0; i < axis; i++)
        o *= s->dim[i];
    for (int i = axis + 1; i < s->rank; i++)
        in *= s->dim[i];
    *outer = o;
    *len = axis < s->rank ? s->dim[axis] : 1;
    *inner = in;
}

double Nn_count(const NdShape *s) {
    double c = 1;
    for (int i = 0; i < s->rank; i++)
        c *= (double)s->dim[i];
    return s->rank < 0 ? 0 : c;
}
