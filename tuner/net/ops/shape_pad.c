/* tuner/net/ops/shape_pad.c: Pad (constant, reflect, edge, wrap) and Trilu:
 * ops that write some output elements from the input and others from a
 * constant. */
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/shape_ops.h"

/* Pads beyond this are refused before they can overflow a dimension. */
#define PAD_LIMIT ((int64_t)1 << 40)

typedef enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } PadMode;

static int pad_mode(const NetNode *n) {
    static const char *names[] = {"constant", "reflect", "edge", "wrap"};
    const char *mode = NetNode_attrString(n, "mode", "constant");
    for (int i = 0; i < 4; i++)
        if (!strcmp(mode, names[i])) return i;
    return -1;
}

Status Pad_check(const NetNode *n, const NetModel *m, char *err) {
    (void)m;
    if (pad_mode(n) < 0) return tt_fail(err, "attribute mode='%s' is not supported", NetNode_attrString(n, "mode", ""));
    if (n->n_in < 2 && !NetNode_attr(n, "pads"))
        return tt_fail(err, "Pad needs pads (an attribute before opset 11, input 1 after)");
    return TT_OK;
}

/* begin[i] and end[i] of every axis; *known false when an input driving them is not constant. */
static Status pad_amounts(OpCtx *ctx, int64_t *begin, int64_t *end, bool *known) {
    int rank = ctx->in[0]->shape.rank, np = 0, axes[ND_MAX_RANK], na;
    bool given;
    const int64_t *attr = NetNode_attrInts(ctx->node, "pads", &np);
    int64_t *buf = NULL, n = np;
    *known = Sh_known(ctx, 1) || attr;
    if (!*known) return TT_OK;
    if (Sh_axes(ctx, 3, rank, axes, &na, &given, known) != TT_OK || !*known) return *known ? TT_ERR : TT_OK;
    if (!given || na == 0)
        for (na = 0; na < rank; na++)
            axes[na] = na;
    if (!attr) {
        if (Sh_ints(ctx, 1, &buf, &n) != TT_OK) return TT_ERR;
        attr = buf;
    }
    Status st = TT_OK;
    memset(begin, 0, sizeof *begin * ND_MAX_RANK);
    memset(end, 0, sizeof *end * ND_MAX_RANK);
    if (n != 2 * na) st = tt_fail(ctx->err, "pads has %lld entries for %d axes", (long long)n, na);
    for (int i = 0; st == TT_OK && i < na; i++) {
        if (attr[i] < -PAD_LIMIT || attr[i] > PAD_LIMIT || attr[na + i] < -PAD_LIMIT || attr[na + i] > PAD_LIMIT)
            st = tt_fail(ctx->err, "pads of axis %d are beyond +-2^40", axes[i]);
        begin[axes[i]] = attr[i];
        end[axes[i]] = attr[na + i];
    }
    free(buf);
    return st;
}

Status Pad_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    Sh_unknown(ctx, 0, ctx->in[0]->type);
    int64_t b[ND_MAX_RANK], e[ND_MAX_RANK];
    bool known;
    if (in->rank < 0) return TT_OK;
    if (pad_amounts(ctx, b, e, &known) != TT_OK || !known) return known ? TT_ERR : TT_OK;
    NdShape s = *in;
    for (int i = 0; i < in->rank; i++) {
        s.dim[i] += b[i] + e[i];
        if (s.dim[i] < 0) return tt_fail(ctx->err, "pads make axis %d negative", i);
    }
    Sh_setOut(ctx, 0, ctx->in[0]->type, &s);
    return TT_OK;
}

/* The source index of output index o on one axis in reflect, edge or wrap mode. */
static int64_t pad_source(PadMode mode, int64_t o, int64_t begin, int64_t dim) {
    int64_t i = o - begin;
    if (i >= 0 && i < dim) return i;
    switch (mode) {
    case PAD_EDGE:
        return i < 0 ? 0 : dim - 1;
    case PAD_WRAP:
        return ((i % dim) + dim) % dim;
    case PAD_REFLECT: {
        if (dim == 1) return 0;
        int64_t p = 2 * (dim - 1), k = ((i % p) + p) % p;
        return k < dim ? k : p - k;
    }
    default: /* constant mode never asks */
        return 0;
    }
}

/* The constant as one element of the output's type (from input 2 or attribute value). */
static void pad_value(OpCtx *ctx, char *val) {
    const NdTensor *y = &ctx->out[0];
    size_t esize = NdType_size(y->type);
    memset(val, 0, 8);
    if (Sh_has(ctx, 2) && ctx->in[2]->data && ctx->in[2]->count > 0 && ctx->in[2]->type == y->type)
        memcpy(val, ctx->in[2]->data, esize);
    else if (NetNode_attr(ctx->node, "value")) {
        NdTensor one = {.type = y->type, .data = val, .count = 1};
        NdTensor_set(&one, 0, NetNode_attrFloat(ctx->node, "value", 0));
    }
}

/* Constant mode: the output filled with the constant, then the part of the
 * input that survives (negative pads crop) copied in as one strided box. */
static void pad_constant(const NdTensor *x, NdTensor *y, const int64_t *b, const char *val) {
    size_t es = NdType_size(x->type);
    static const char zero[8];
    if (memcmp(val, zero, es) != 0)
        for (int64_t o = 0; o < y->count; o++)
            memcpy((char *)y->data + o * (int64_t)es, val, es);
    int r = x->shape.rank;
    int64_t ist[ND_MAX_RANK], ost[ND_MAX_RANK], dims[ND_MAX_RANK], src = 0, dst = 0;
    Sh_strides(&x->shape, ist);
    Sh_strides(&y->shape, ost);
    for (int i = 0; i < r; i++) {
        int64_t from = b[i] < 0 ? -b[i] : 0, to = b[i] > 0 ? b[i] : 0;
        int64_t n = x->shape.dim[i] - from, room = y->shape.dim[i] - to;
        dims[i] = n < room ? n : room;
        src += from * ist[i];
        dst += to * ost[i];
    }
    Sh_copy(r, dims, (char *)y->data + dst * (int64_t)es, ost, (const char *)x->data + src * (int64_t)es, ist, es);
}

Status Pad_run(OpCtx *ctx) {
    int64_t b[ND_MAX_RANK], e[ND_MAX_RANK];
    bool known;
    if (Pad_infer(ctx) != TT_OK || pad_amounts(ctx, b, e, &known) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    NdTensor *y = &ctx->out[0];
    PadMode mode = (PadMode)pad_mode(ctx->node);
    int r = x->shape.rank;
    size_t esize = NdType_size(x->type);
    char val[8];
    pad_value(ctx, val);
    if (mode == PAD_CONSTANT) {
        pad_constant(x, y, b, val);
        return TT_OK;
    }
    for (int i = 0; i < r; i++)
        if (x->shape.dim[i] == 0 && y->shape.dim[i] > 0)
            return tt_fail(ctx->err, "mode %s cannot pad the empty axis %d", NetNode_attrString(ctx->node, "mode", ""),
                           i);
    int64_t ist[ND_MAX_RANK], idx[ND_MAX_RANK] = {0};
    Sh_strides(&x->shape, ist);
    char *out = y->data;
    for (int64_t o = 0; o < y->count; o++) { /* reflect, edge, wrap: each output element finds its source */
        int64_t off = 0;
        for (int i = 0; i < r; i++)
            off += pad_source(mode, idx[i], b[i], x->shape.dim[i]) * ist[i];
        memcpy(out + o * (int64_t)esize, (const char *)x->data + off * (int64_t)esize, esize);
        for (int i = r - 1; i >= 0 && ++idx[i] == y->shape.dim[i]; i--)
            idx[i] = 0;
    }
    return TT_OK;
}

Status Trilu_infer(OpCtx *ctx) {
    const NdShape *in = &ctx->in[0]->shape;
    if (in->rank >= 0 && in->rank < 2) return tt_fail(ctx->err, "Trilu needs a rank of at least 2, got %d", in->rank);
    Sh_setOut(ctx, 0, ctx->in[0]->type, in);
    return TT_OK;
}

Status Trilu_run(OpCtx *ctx) {
    if (Trilu_infer(ctx) != TT_OK || Sh_alloc(ctx, 0) != TT_OK) return TT_ERR;
    const NdTensor *x = ctx->in[0];
    NdTensor *y = &ctx->out[0];
    int64_t k = Sh_has(ctx, 1) && ctx->in[1]->count > 0 ? NdTensor_getInt(ctx->in[1], 0) : 0;
    bool upper = NetNode_attrInt(ctx->node, "upper", 1) != 0;
    int r = x->shape.rank;
    int64_t rows = x->shape.dim[r - 2], cols = x->shape.dim[r - 1];
    size_t esize = NdType_size(x->type);
    if (y->count == 0) return TT_OK;
    memcpy(y->data, x->data, (size_t)y->count * esize);
    char *d = y->data;
    for (int64_t m = 0; m < y->count / (rows * cols); m++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
                if (upper ? j - i < k : j - i > k) memset(d + ((m * rows + i) * cols + j) * (int64_t)esize, 0, esize);
    return TT_OK;
}
