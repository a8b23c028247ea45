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

/* ---- a squeeze-excitation block on the blocked buffer ---- */

typedef struct OnBlocks {
    float *buf;
    const HoLayout *l;
    const float *scale; /* Ho_runScale: [sn][c] */
    int64_t sn;
    float *mean; /* Ho_runPool: [n][c] */
} OnBlocks;

/* Channel blocks [lo, hi) (n, block): every position, padding too, times its lane's channel scale (1 on
 * a padding lane). */
static void scale_blocks(void *arg, int64_t lo, int64_t hi) {
    const OnBlocks *o = arg;
    const HoLayout *l = o->l;
    int64_t blocks = (l->c + l->cb - 1) / l->cb, cb = l->cb, pixels = l->h_alloc * l->w_alloc;
    float sv[cb];
    for (int64_t nb = lo; nb < hi; nb++) {
        int64_t n = nb / blocks, b = nb % blocks;
        for (int64_t i = 0; i < cb; i++)
            sv[i] = b * cb + i < l->c ? o->scale[(o->sn > 1 ? n : 0) * l->c + b * cb + i] : 1.0f;
        float *px = o->buf + nb * pixels * cb;
        for (int64_t p = 0; p < pixels; p++, px += cb)
            for (int64_t i = 0; i < cb; i++)
                px[i] *= sv[i];
    }
}

Status Ho_runScale(OpCtx *ctx, float *blocked, const HoLayout *l) {
    if (ctx->n_in != 2 || !ctx->in[0] || !ctx->in[1]) return tt_fail(ctx->err, "a scale takes two inputs");
    int slot = ctx->in[0]->count > ctx->in[1]->count ? 0 : 1; /* the tensor; the other is the scale */
    const NdTensor *s = ctx->in[1 - slot];
    if (s->type != ND_F32 || s->count % l->c != 0) return tt_fail(ctx->err, "the scale is not a float per channel");
    OnBlocks o = {.buf = blocked, .l = l, .scale = s->data, .sn = s->count / l->c};
    int64_t blocks = l->n * ((l->c + l->cb - 1) / l->cb);
    Par_range(blocks, (double)HoLayout_floats(l), scale_blocks, &o);
    NdShape shape = ctx->model->values[ctx->node->out[0]].shape;
    return NdTensor_allocFull(&ctx->out[0], ND_F32, &shape, ctx->err);
}

/* Channel blocks [lo, hi): each lane's mean over the interior, summed in double. */
static void pool_blocks(void *arg, int64_t lo, int64_t hi) {
    const OnBlocks *o = arg;
    const HoLayout *l = o->l;
    int64_t blocks = (l->c + l->cb - 1) / l->cb, cb = l->cb;
    double acc[cb];
    for (int64_t nb = lo; nb < hi; nb++) {
        int64_t n = nb / blocks, b = nb % blocks;
        for (int64_t i = 0; i < cb; i++)
            acc[i] = 0;
        for (int64_t y = 0; y < l->h; y++) {
            const float *px = o->buf + ((nb * l->h_alloc + y + l->top) * l->w_alloc + l->left) * cb;
            for (int64_t x = 0; x < l->w; x++, px += cb)
                for (int64_t i = 0; i < cb; i++)
                    acc[i] += px[i];
        }
        for (int64_t i = 0; i < cb && b * cb + i < l->c; i++)
            o->mean[n * l->c + b * cb + i] = (float)(acc[i] / (double)(l->h * l->w));
    }
}

Status Ho_runPool(OpCtx *ctx, const float *blocked, const HoLayout *l) {
    NdShape shape = ctx->model->values[ctx->node->out[0]].shape;
    if (NdShape_elems(&shape) != l->n * l->c) return tt_fail(ctx->err, "the pool's output is not one per channel");
    if (NdTensor_allocFull(&ctx->out[0], ND_F32, &shape, ctx->err) != TT_OK) return TT_ERR;
    OnBlocks o = {.buf = (float *)blocked, .l = l, .mean = ctx->out[0].data};
    Par_range(l->n * ((l->c + l->cb - 1) / l->cb), (double)l->n * l->c * l->h * l->w, pool_blocks, &o);
    return TT_OK;
}
