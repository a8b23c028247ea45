/* tuner/net/ops/shape_util.c: the strided copy and the input helpers of the
 * shape family (see shape_ops.h). */
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/par.h"
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

/* A box copy's pieces of work (par.h): row r is the r-th position of the
 * outer axes (row-major), with its dims[rank - 1] elements. */
typedef struct ShCopy {
    int rank;
    const int64_t *dims, *dst_st, *src_st;
    char *dst;
    const char *src;
    size_t esize;
} ShCopy;

static void copy_rows(void *arg, int64_t lo, int64_t hi) {
    const ShCopy *c = arg;
    int last = c->rank - 1;
    int64_t idx[SH_MAX_VIEW] = {0}, es = (int64_t)c->esize, row = lo, n = c->dims[last];
    int64_t ds = c->dst_st[last] * es, ss = c->src_st[last] * es;
    char *d = c->dst;
    const char *s = c->src;
    for (int k = last - 1; k >= 0; k--) { /* the odometer at row lo */
        idx[k] = row % c->dims[k];
        row /= c->dims[k];
        d += idx[k] * c->dst_st[k] * es;
        s += idx[k] * c->src_st[k] * es;
    }
    bool contiguous = c->dst_st[last] == 1 && c->src_st[last] == 1;
    for (int64_t r = lo; r < hi; r++) {
        if (contiguous)
            memcpy(d, s, (size_t)n * c->esize);
        else
            for (int64_t j = 0; j < n; j++)
                copy_elem(d + j * ds, s + j * ss, c->esize);
        for (int k = last - 1; k >= 0; k--) { /* odometer over the outer axes */
            d += c->dst_st[k] * es;
            s += c->src_st[k] * es;
            if (++idx[k] < c->dims[k]) break;
            d -= c->dst_st[k] * c->dims[k] * es;
            s -= c->src_st[k] * c->dims[k] * es;
            idx[k] = 0;
        }
    }
}

void Sh_copy(int rank, const int64_t *dims, void *dst, const int64_t *dst_st, const void *src, const int64_t *src_st,
             size_t esize) {
    int64_t rows = 1;
    for (int i = 0; i < rank; i++)
        if (dims[i] <= 0) return;
    if (rank == 0) {
        copy_elem(dst, src, esize);
        return;
    }
    for (int i = 0; i < rank - 1; i++)
        rows *= dims[i];
    ShCopy c = {rank, dims, dst_st, src_st, dst, src, esize};
    Par_range(rows, (double)rows * (double)dims[rank - 1] * (double)esize / 4, copy_rows, &c);
}

/* Elements [lo, hi) of a flat copy. */
typedef struct ShFlat {
    char *dst;
    const char *src;
    size_t esize;
} ShFlat;

static void flat_range(void *arg, int64_t lo, int64_t hi) {
    const ShFlat *f = arg;
    memcpy(f->dst + (size_t)lo * f->esize, f->src + (size_t)lo * f->esize, (size_t)(hi - lo) * f->esize);
}

void Sh_copyFlat(void *dst, const void *src, int64_t n, size_t esize) {
    ShFlat f = {dst, src, esize};
    Par_range(n, (double)n * (double)esize / 4, flat_range, &f);
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
