/* tuner/net/ops/shape_util.c: the strided copy and the input helpers of the
 * shape family (see shape_ops.h). */
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/shape_ops.h"

static void copy_elem(char *d, const char *s, size_t esize) {
    switch (esize) {
    case 1:
        *d = *s;
        break;
    case 2:
        memcpy(d, s, 2);
        break;
    case 4:
        memcpy(d, s, 4);
        break;
    case 8:
        memcpy(d, s, 8);
        break;
    default:
        memcpy(d, s, esize);
        break;
    }
}

void Sh_copy(int rank, const int64_t *dims, void *dst, const int64_t *dst_st, const void *src, const int64_t *src_st,
             size_t esize) {
    for (int i = 0; i < rank; i++)
        if (dims[i] <= 0) return;
    char *d = dst;
    const char *s = src;
    if (rank == 0) {
        copy_elem(d, s, esize);
        return;
    }
    int64_t idx[SH_MAX_VIEW] = {0};
    int last = rank - 1;
    int64_t n = dims[last], ds = dst_st[last] * (int64_t)esize, ss = src_st[last] * (int64_t)esize;
    bool contiguous = dst_st[last] == 1 && src_st[last] == 1;
    for (;;) {
        if (contiguous)
            memcpy(d, s, (size_t)n * esize);
        else
            for (int64_t j = 0; j < n; j++)
                copy_elem(d + j * ds, s + j * ss, esize);
        int k = last - 1;
        for (; k >= 0; k--) { /* odometer over the outer axes */
            d += dst_st[k] * (int64_t)esize;
            s += src_st[k] * (int64_t)esize;
            if (++idx[k] < dims[k]) break;
            d -= dst_st[k] * dims[k] * (int64_t)esize;
            s -= src_st[k] * dims[k] * (int64_t)esize;
            idx[k] = 0;
        }
        if (k < 0) return;
    }
}

void Sh_transpose(int rank, const int64_t *dims, const int *perm, void *dst, const void *src, size_t esize) {
    NdShape in = {.rank = rank}, out = {.rank = rank};
    int64_t in_st[ND_MAX_RANK], src_st[ND_MAX_RANK], dst_st[ND_MAX_RANK], odims[ND_MAX_RANK];
    for (int i = 0; i < rank; i++)
        in.dim[i] = dims[i];
    Sh_strides(&in, in_st);
    for (int k = 0; k < rank; k++) {
        odims[k] = out.dim[k] = dims[perm[k]];
        src_st[k] = in_st[perm[k]];
    }
    Sh_strides(&out, dst_st);
    Sh_copy(rank, odims, dst, dst_st, src, src_st, esize);
}

int64_t Sh_mul(int64_t a, int64_t b) { return b != 0 && a > INT64_MAX / b ? 0 : a * b; }

void Sh_strides(const NdShape *s, int64_t *strides) {
    int64_t st = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        strides[i] = st;
        st = Sh_mul(st, s->dim[i]);
    }
}

int64_t Sh_count(const NdShape *s) {
    int64_t c = 1;
    for (int i = 0; i < s->rank; i++)
        if (s->dim[i] <= 0) return 0;
    for (int i = 0; i < s->rank; i++)
        c = c > INT64_MAX / s->dim[i] ? INT64_MAX : c * s->dim[i];
    return c;
}

bool Sh_has(const OpCtx *ctx, int i) { return i < ctx->n_in && ctx->in[i] != NULL; }

bool Sh_known(const OpCtx *ctx, int i) {
    if (!Sh_has(ctx, i)) return false;
    const NdTensor *t = ctx->in[i];
    return t->data != NULL || (t->shape.rank >= 0 && Sh_count(&t->shape) == 0);
}

Status Sh_ints(const OpCtx *ctx, int i, int64_t **v, int64_t *n) {
    const NdTensor *t = ctx->in[i];
    if (t->data == NULL) { /* no elements */
        *v = calloc(1, sizeof **v);
        *n = 0;
        return *v ? TT_OK : tt_fail(ctx->err, "out of memory");
    }
    if (Op_int64s(t, v, n, ctx->err) != TT_OK)
        return tt_fail(ctx->err, "input %d must be an integer tensor, not %s", i, NdType_name(t->type));
    return TT_OK;
}

Status Sh_axes(const OpCtx *ctx, int input, int rank, int *out, int *n, bool *given, bool *known) {
    int na = 0;
    const int64_t *attr = NetNode_attrInts(ctx->node, "axes", &na);
    int64_t *buf = NULL, cnt = na;
    *given = attr != NULL || Sh_has(ctx, input);
    *known = true;
    *n = 0;
    if (!attr && Sh_has(ctx, input)) {
        if (!Sh_known(ctx, input)) {
            *known = false;
            return TT_OK;
        }
        if (Sh_ints(ctx, input, &buf, &cnt) != TT_OK) return TT_ERR;
        attr = buf;
    }
    Status st = TT_OK;
    if (cnt > rank) st = tt_fail(ctx->err, "%lld axes for a rank-%d tensor", (long long)cnt, rank);
    for (int64_t i = 0; st == TT_OK && i < cnt; i++) {
        if (Nd_axis(attr[i], rank, &out[i], ctx->err) != TT_OK) st = TT_ERR;
        for (int64_t j = 0; st == TT_OK && j < i; j++)
            if (out[j] == out[i]) st = tt_fail(ctx->err, "axis %d is given twice", out[i]);
    }
    *n = (int)cnt;
    free(buf);
    return st;
}

Status Sh_alloc(OpCtx *ctx, int k) {
    NdTensor *t = &ctx->out[k];
    NdType type = t->type;
    NdShape shape = t->shape;
    if (shape.rank < 0) return tt_fail(ctx->err, "output %d's shape is not known", k);
    t->data = NULL;
    return NdTensor_alloc(t, type, &shape, ctx->err);
}

void Sh_setOut(OpCtx *ctx, int k, NdType type, const NdShape *shape) {
    ctx->out[k].type = type;
    ctx->out[k].shape = *shape;
}

void Sh_unknown(OpCtx *ctx, int k, NdType type) {
    ctx->out[k].type = type;
    ctx->out[k].shape.rank = -1;
}

double Sh_flopsIn0(const OpCtx *ctx) {
    if (ctx->n_in < 1 || !ctx->in || !ctx->in[0] || ctx->in[0]->shape.rank < 0) return 0;
    return (double)Sh_count(&ctx->in[0]->shape);
}
