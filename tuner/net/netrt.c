/* tuner/net/netrt.c: the untuned-op runtime (see tuner/net/netrt.h). Self-contained:
 * embedded as text into generated network programs. */
#ifndef TTRT_EMBEDDED
#include "tuner/net/netrt.h"
#endif

#include <float.h>
#include <math.h>
#include <string.h>

/* Parallel loops over `work` floats: small ops stay on one thread, where
 * waking a team would cost more than the op. */
#ifdef _OPENMP
#define TTRT_PRAGMA(x) _Pragma(#x)
#define TTRT_PAR(work) TTRT_PRAGMA(omp parallel for schedule(static) if ((work) > 65536))
#define TTRT_PAR2(work) TTRT_PRAGMA(omp parallel for collapse(2) schedule(static) if ((work) > 65536))
#else
#define TTRT_PAR(work)
#define TTRT_PAR2(work)
#endif

void ttrt_affine(const float *x, const float *scale, const float *shift, const float *res, float *y, long outer,
                 long chans, long inner, int relu) {
    TTRT_PAR2(outer * chans * inner)
    for (long o = 0; o < outer; o++)
        for (long c = 0; c < chans; c++) {
            long base = (o * chans + c) * inner;
            float s = scale ? scale[c] : 1.0f, t = shift ? shift[c] : 0.0f;
            const float *xr = x + base, *rr = res ? res + base : NULL;
            float *yr = y + base;
            if (rr) {
                for (long i = 0; i < inner; i++) {
                    float v = xr[i] * s + t + rr[i];
                    yr[i] = relu && v < 0 ? 0 : v;
                }
            } else {
                for (long i = 0; i < inner; i++) {
                    float v = xr[i] * s + t;
                    yr[i] = relu && v < 0 ? 0 : v;
                }
            }
        }
}

void ttrt_clip(const float *x, float *y, long n, float lo, float hi) {
    TTRT_PAR(n)
    for (long i = 0; i < n; i++) {
        float v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
    }
}

void ttrt_gelu(const float *x, float *y, long n) {
    TTRT_PAR(n * 8)
    for (long i = 0; i < n; i++)
        y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

void ttrt_scale(const float *x, float *y, long n, float alpha) {
    TTRT_PAR(n)
    for (long i = 0; i < n; i++)
        y[i] = x[i] * alpha;
}

void ttrt_mask_add(const float *x, const float *mask, float *y, long batch, long heads, long rows, long s) {
    TTRT_PAR(batch * heads * rows * s)
    for (long r = 0; r < batch * heads * rows; r++) {
        const float *m = mask + (r / (heads * rows)) * s;
        for (long j = 0; j < s; j++)
            y[r * s + j] = x[r * s + j] + m[j];
    }
}

static void pool(const float *x, float *y, long nc, long h, long w, long oh, long ow, long k, long stride, long pad,
                 int max) {
    TTRT_PAR(nc * oh * ow * k * k)
    for (long p = 0; p < nc; p++) {
        const float *in = x + p * h * w;
        float *out = y + p * oh * ow;
        for (long i = 0; i < oh; i++) {
            long h0 = i * stride - pad, h1 = h0 + k;
            h0 = h0 < 0 ? 0 : h0;
            h1 = h1 > h ? h : h1;
            for (long j = 0; j < ow; j++) {
                long w0 = j * stride - pad, w1 = w0 + k;
                w0 = w0 < 0 ? 0 : w0;
                w1 = w1 > w ? w : w1;
                float best = -FLT_MAX, sum = 0;
                for (long a = h0; a < h1; a++)
                    for (long b = w0; b < w1; b++) {
                        float v = in[a * w + b];
                        best = v > best ? v : best;
                        sum += v;
                    }
                out[i * ow + j] = max ? best : sum / (float)((h1 - h0) * (w1 - w0));
            }
        }
    }
}

void ttrt_max_pool(const float *x, float *y, long nc, long h, long w, long oh, long ow, long k, long stride, long pad) {
    pool(x, y, nc, h, w, oh, ow, k, stride, pad, 1);
}

void ttrt_avg_pool(const float *x, float *y, long nc, long h, long w, long oh, long ow, long k, long stride, long pad) {
    pool(x, y, nc, h, w, oh, ow, k, stride, pad, 0);
}

void ttrt_global_avg_pool(const float *x, float *y, long nc, long inner) {
    TTRT_PAR(nc * inner)
    for (long p = 0; p < nc; p++) {
        float s = 0;
        for (long i = 0; i < inner; i++)
            s += x[p * inner + i];
        y[p] = s / (float)inner;
    }
}

void ttrt_concat_part(const float *x, float *y, long n, long cj, long ctotal, long c0, long hw) {
    TTRT_PAR2(n * cj * hw)
    for (long i = 0; i < n; i++)
        for (long c = 0; c < cj; c++)
            memcpy(y + (i * ctotal + c0 + c) * hw, x + (i * cj + c) * hw, (size_t)hw * sizeof(float));
}

void ttrt_softmax(const float *x, float *y, long rows, long cols) {
    TTRT_PAR(rows * cols * 4)
    for (long r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = -FLT_MAX, s = 0;
        for (long j = 0; j < cols; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (long j = 0; j < cols; j++) {
            yr[j] = expf(xr[j] - mx);
            s += yr[j];
        }
        float inv = 1.0f / s;
        for (long j = 0; j < cols; j++)
            yr[j] *= inv;
    }
}

void ttrt_layer_norm(const float *x, const float *gamma, const float *beta, float *y, long rows, long cols, float eps) {
    TTRT_PAR(rows * cols * 3)
    for (long r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mean = 0, var = 0;
        for (long j = 0; j < cols; j++)
            mean += xr[j];
        mean /= (float)cols;
        for (long j = 0; j < cols; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= (float)cols;
        float inv = 1.0f / sqrtf(var + eps);
        for (long j = 0; j < cols; j++)
            yr[j] = (xr[j] - mean) * inv * gamma[j] + beta[j];
    }
}

void ttrt_heads(const float *x, float *y, int kind, long b, long heads, long s, long d) {
    TTRT_PAR2(b * heads * s * d)
    for (long bi = 0; bi < b; bi++)
        for (long h = 0; h < heads; h++)
            for (long i = 0; i < s; i++) {
                long flat = (bi * s + i) * heads * d + h * d, hs = ((bi * heads + h) * s + i) * d;
                if (kind == 0)
                    memcpy(y + hs, x + flat, (size_t)d * sizeof(float));
                else if (kind == 2)
                    memcpy(y + flat, x + hs, (size_t)d * sizeof(float));
                else
                    for (long e = 0; e < d; e++)
                        y[((bi * heads + h) * d + e) * s + i] = x[flat + e];
            }
}

void ttrt_reblock(const float *src, long s_cb, long s_h_alloc, long s_w_alloc, long s_top, long s_left, long s_repeat,
                  float *dst, long d_cb, long d_h_alloc, long d_w_alloc, long d_top, long d_left, long d_repeat, long n,
                  long c, long h, long w, const float *shift, int act, float lo, float hi) {
    if (act == 1) lo = 0, hi = FLT_MAX;
    if (act == 0) lo = -FLT_MAX, hi = FLT_MAX;
    long s_blocks = (c * s_repeat + s_cb - 1) / s_cb, d_blocks = (c * d_repeat + d_cb - 1) / d_cb;
    TTRT_PAR2(n * c * d_repeat * h * w)
    for (long i = 0; i < n; i++)
        for (long dc = 0; dc < c * d_repeat; dc++) {
            long cc = dc / d_repeat, sc = cc * s_repeat;
            const float *sp = src + ((i * s_blocks + sc / s_cb) * s_h_alloc * s_w_alloc) * s_cb + sc % s_cb;
            float *dp = dst + ((i * d_blocks + dc / d_cb) * d_h_alloc * d_w_alloc) * d_cb + dc % d_cb;
            float t = shift ? shift[cc] : 0.0f;
            for (long y = 0; y < h; y++)
                for (long x = 0; x < w; x++) {
                    float v = sp[((y + s_top) * s_w_alloc + x + s_left) * s_cb] + t;
                    v = v < lo ? lo : v;
                    dp[((y + d_top) * d_w_alloc + x + d_left) * d_cb] = v > hi ? hi : v;
                }
        }
}

#ifdef _OPENMP
#define TTRT_PAR3(work) TTRT_PRAGMA(omp parallel for collapse(3) schedule(static) if ((work) > 65536))
#else
#define TTRT_PAR3(work)
#endif

static long ttrt_blocks(const ttrt_layout *l, long c) { return (c * l->repeat + l->cb - 1) / l->cb; }

/* Offset of the row (n, blocked channel bc, y) of a layout: element x is at +x * cb. */
static long ttrt_row(const ttrt_layout *l, long blocks, long i, long bc, long y) {
    return (((i * blocks + bc / l->cb) * l->h_alloc + y + l->top) * l->w_alloc + l->left) * l->cb + bc % l->cb;
}

#define TTRT_ACT(v) ((v) < lo ? lo : (v) > hi ? hi : (v))

/* w columns of len channels: y[xx * sy + k] = act(x[xx * sx + k] * s[k] + t[k] + r[xx * sr + k]) */
static inline __attribute__((always_inline)) void ttrt_run(const float *xp, long sx, const float *rp, long sr,
                                                           float *yp, long sy, long w, const float *s, const float *t,
                                                           long len, float lo, float hi) {
    if (rp)
        for (long xx = 0; xx < w; xx++)
            for (long k = 0; k < len; k++) {
                float v = xp[xx * sx + k] * s[k] + t[k] + rp[xx * sr + k];
                yp[xx * sy + k] = TTRT_ACT(v);
            }
    else
        for (long xx = 0; xx < w; xx++)
            for (long k = 0; k < len; k++) {
                float v = xp[xx * sx + k] * s[k] + t[k];
                yp[xx * sy + k] = TTRT_ACT(v);
            }
}

/* The operands of one ttrt_move: x (and res) read, y written, each in its layout; scale and
 * shift per channel (NULL: 1 and 0); the activation's bounds lo, hi; the blocks of each layout. */
typedef struct ttrt_mv {
    const float *x, *res, *scale, *shift;
    float *y;
    const ttrt_layout *lx, *lr, *ly;
    long n, c, h, w, bx, by, br;
    float lo, hi;
} ttrt_mv;

/* Every operand in the same blocks of cb <= 256 channels: rows of w * cb floats in every operand,
 * the inner loop runs over contiguous channels. */
static void ttrt_move_same(const ttrt_mv *m) {
    const float *x = m->x, *res = m->res, *scale = m->scale, *shift = m->shift;
    float *y = m->y;
    const ttrt_layout *lx = m->lx, *lr = m->lr, *ly = m->ly;
    long n = m->n, c = m->c, h = m->h, w = m->w, bx = m->bx, by = m->by, br = m->br;
    float lo = m->lo, hi = m->hi;
    long cb = ly->cb;
    TTRT_PAR3(n * c * h * w)
    for (long i = 0; i < n; i++)
        for (long b = 0; b < by; b++)
            for (long yy = 0; yy < h; yy++) {
                long c0 = b * cb, kc = c - c0 < cb ? c - c0 : cb;
                const float *xp = x + ttrt_row(lx, bx, i, c0, yy);
                const float *rp = res ? res + ttrt_row(lr, br, i, c0, yy) : NULL;
                float *yp = y + ttrt_row(ly, by, i, c0, yy);
                float s[256], t[256];
                for (long k = 0; k < kc; k++) {
                    s[k] = scale ? scale[c0 + k] : 1.0f;
                    t[k] = shift ? shift[c0 + k] : 0.0f;
                }
                if (cb == 1) {
                    float s0 = scale ? scale[c0] : 1.0f, t0 = shift ? shift[c0] : 0.0f;
                    if (rp)
                        for (long xx = 0; xx < w; xx++) {
                            float v = xp[xx] * s0 + t0 + rp[xx];
                            yp[xx] = TTRT_ACT(v);
                        }
                    else
                        for (long xx = 0; xx < w; xx++) {
                            float v = xp[xx] * s0 + t0;
                            yp[xx] = TTRT_ACT(v);
                        }
                } else if (kc == cb) {
                    for (long xx = 0; xx < w; xx++) {
                        const float *xv = xp + xx * cb, *rv = rp ? rp + xx * cb : NULL;
                        float *yv = yp + xx * cb;
                        if (rv)
                            for (long k = 0; k < cb; k++) {
                                float v = xv[k] * s[k] + t[k] + rv[k];
                                yv[k] = TTRT_ACT(v);
                            }
                        else
                            for (long k = 0; k < cb; k++) {
                                float v = xv[k] * s[k] + t[k];
                                yv[k] = TTRT_ACT(v);
                            }
                    }
                } else {
                    for (long xx = 0; xx < w; xx++)
                        for (long k = 0; k < kc; k++) {
                            float v = xp[xx * cb + k] * s[k] + t[k] + (rp ? rp[xx * cb + k] : 0.0f);
                            yp[xx * cb + k] = TTRT_ACT(v);
                        }
                }
            }
}

/* Blocked -> NCHW (x's blocks of at most 256 channels): per row of x's blocks, each column's
 * channels go to their own rows of y. */
static void ttrt_move_to_nchw(const ttrt_mv *m) {
    const float *x = m->x, *res = m->res, *scale = m->scale, *shift = m->shift;
    float *y = m->y;
    const ttrt_layout *lx = m->lx, *lr = m->lr, *ly = m->ly;
    long n = m->n, c = m->c, h = m->h, w = m->w, bx = m->bx, by = m->by, br = m->br;
    float lo = m->lo, hi = m->hi;
    long xcb = lx->cb;
    TTRT_PAR3(n * c * h * w)
    for (long i = 0; i < n; i++)
        for (long b = 0; b < bx; b++)
            for (long yy = 0; yy < h; yy++) {
                long c0 = b * xcb, kc = c - c0 < xcb ? c - c0 : xcb;
                const float *xp = x + ttrt_row(lx, bx, i, c0, yy);
                for (long k = 0; k < kc; k++) {
                    float s = scale ? scale[c0 + k] : 1.0f, t = shift ? shift[c0 + k] : 0.0f;
                    const float *rp = res ? res + ttrt_row(lr, br, i, c0 + k, yy) : NULL;
                    float *yp = y + ttrt_row(ly, by, i, c0 + k, yy);
                    long sr = res ? lr->cb : 0;
                    for (long xx = 0; xx < w; xx++) {
                        float v = xp[xx * xcb + k] * s + t + (rp ? rp[xx * sr] : 0.0f);
                        yp[xx] = TTRT_ACT(v);
                    }
                }
            }
}

/* NCHW -> blocked (y's blocks of at most 256 channels): per row of y's blocks, gather the
 * block's channels column by column. */
static void ttrt_move_from_nchw(const ttrt_mv *m) {
    const float *x = m->x, *res = m->res, *scale = m->scale, *shift = m->shift;
    float *y = m->y;
    const ttrt_layout *lx = m->lx, *lr = m->lr, *ly = m->ly;
    long n = m->n, c = m->c, h = m->h, w = m->w, bx = m->bx, by = m->by, br = m->br;
    float lo = m->lo, hi = m->hi;
    long cb = ly->cb;
    TTRT_PAR3(n * c * h * w)
    for (long i = 0; i < n; i++)
        for (long b = 0; b < by; b++)
            for (long yy = 0; yy < h; yy++) {
                long c0 = b * cb, kc = c - c0 < cb ? c - c0 : cb;
                const float *xr[256], *rr[256];
                float s[256], t[256];
                for (long k = 0; k < kc; k++) {
                    xr[k] = x + ttrt_row(lx, bx, i, c0 + k, yy);
                    rr[k] = res ? res + ttrt_row(lr, br, i, c0 + k, yy) : NULL;
                    s[k] = scale ? scale[c0 + k] : 1.0f;
                    t[k] = shift ? shift[c0 + k] : 0.0f;
                }
                float *yp = y + ttrt_row(ly, by, i, c0, yy);
                for (long xx = 0; xx < w; xx++)
                    for (long k = 0; k < kc; k++) {
                        float v = xr[k][xx] * s[k] + t[k] + (res ? rr[k][xx] : 0.0f);
                        yp[xx * cb + k] = TTRT_ACT(v);
                    }
            }
}

/* Different block sizes (y's at most 256 channels): per row of y's blocks, runs of channels that
 * stay inside one block of x (and of res), so that the inner loop is over contiguous channels on
 * both sides. */
static void ttrt_move_reblock(const ttrt_mv *m) {
    const float *x = m->x, *res = m->res, *scale = m->scale, *shift = m->shift;
    float *y = m->y;
    const ttrt_layout *lx = m->lx, *lr = m->lr, *ly = m->ly;
    long n = m->n, c = m->c, h = m->h, w = m->w, bx = m->bx, by = m->by, br = m->br;
    float lo = m->lo, hi = m->hi;
    long cb = ly->cb;
    TTRT_PAR3(n * c * h * w)
    for (long i = 0; i < n; i++)
        for (long b = 0; b < by; b++)
            for (long yy = 0; yy < h; yy++) {
                long c0 = b * cb, kc = c - c0 < cb ? c - c0 : cb;
                float *yrow = y + ttrt_row(ly, by, i, c0, yy);
                for (long cs = c0; cs < c0 + kc;) {
                    long ce = (cs / lx->cb + 1) * lx->cb;
                    if (res && (cs / lr->cb + 1) * lr->cb < ce) ce = (cs / lr->cb + 1) * lr->cb;
                    if (ce > c0 + kc) ce = c0 + kc;
                    long len = ce - cs, sx = lx->cb, sr = res ? lr->cb : 0;
                    const float *xp = x + ttrt_row(lx, bx, i, cs, yy);
                    const float *rp = res ? res + ttrt_row(lr, br, i, cs, yy) : NULL;
                    float *yp = yrow + (cs - c0);
                    float s[256], t[256];
                    for (long k = 0; k < len; k++) {
                        s[k] = scale ? scale[cs + k] : 1.0f;
                        t[k] = shift ? shift[cs + k] : 0.0f;
                    }
                    switch (len) { /* constant lengths: the inner loop becomes one vector */
                    case 4:
                        ttrt_run(xp, sx, rp, sr, yp, cb, w, s, t, 4, lo, hi);
                        break;
                    case 8:
                        ttrt_run(xp, sx, rp, sr, yp, cb, w, s, t, 8, lo, hi);
                        break;
                    case 16:
                        ttrt_run(xp, sx, rp, sr, yp, cb, w, s, t, 16, lo, hi);
                        break;
                    default:
                        ttrt_run(xp, sx, rp, sr, yp, cb, w, s, t, len, lo, hi);
                    }
                    cs = ce;
                }
            }
}

/* Channel multipliers: one row (n, blocked channel of y, y) at a time, strided. */
static void ttrt_move_repeat(const ttrt_mv *m) {
    const float *x = m->x, *res = m->res, *scale = m->scale, *shift = m->shift;
    float *y = m->y;
    const ttrt_layout *lx = m->lx, *lr = m->lr, *ly = m->ly;
    long n = m->n, c = m->c, h = m->h, w = m->w, bx = m->bx, by = m->by, br = m->br;
    float lo = m->lo, hi = m->hi;

    long cy = c * ly->repeat;
    TTRT_PAR3(n * cy * h * w)
    for (long i = 0; i < n; i++)
        for (long dc = 0; dc < cy; dc++)
            for (long yy = 0; yy < h; yy++) {
                long cc = dc / ly->repeat;
                const float *xp = x + ttrt_row(lx, bx, i, cc * lx->repeat, yy);
                const float *rp = res ? res + ttrt_row(lr, br, i, cc * lr->repeat, yy) : NULL;
                float *yp = y + ttrt_row(ly, by, i, dc, yy);
                float s = scale ? scale[cc] : 1.0f, t = shift ? shift[cc] : 0.0f;
                long sx = lx->cb, sr = res ? lr->cb : 0, sy = ly->cb;
                for (long xx = 0; xx < w; xx++) {
                    float v = xp[xx * sx] * s + t + (rp ? rp[xx * sr] : 0.0f);
                    yp[xx * sy] = TTRT_ACT(v);
                }
            }
}

/* One pass of a tensor between layouts (netrt.h): the loop its layouts allow. */
void ttrt_move(const float *x, const ttrt_layout *lx, const float *res, const ttrt_layout *lr, float *y,
               const ttrt_layout *ly, long n, long c, long h, long w, const float *scale, const float *shift, int act,
               float lo, float hi) {
    if (act == 1) lo = 0, hi = FLT_MAX;
    if (act == 0) lo = -FLT_MAX, hi = FLT_MAX;
    ttrt_mv m = {x,
                 res,
                 scale,
                 shift,
                 y,
                 lx,
                 lr,
                 ly,
                 n,
                 c,
                 h,
                 w,
                 ttrt_blocks(lx, c),
                 ttrt_blocks(ly, c),
                 res ? ttrt_blocks(lr, c) : 0,
                 lo,
                 hi};
    long cb = ly->cb;
    int same = lx->cb == cb && lx->repeat == 1 && ly->repeat == 1 && (!res || (lr->cb == cb && lr->repeat == 1));
    if (same && cb <= 256)
        ttrt_move_same(&m);
    else if (cb == 1 && lx->repeat == 1 && ly->repeat == 1 && (!res || lr->repeat == 1) && lx->cb <= 256)
        ttrt_move_to_nchw(&m);
    else if (lx->cb == 1 && (!res || lr->cb == 1) && lx->repeat == 1 && ly->repeat == 1 && (!res || lr->repeat == 1) &&
             cb <= 256)
        ttrt_move_from_nchw(&m);
    else if (lx->repeat == 1 && ly->repeat == 1 && (!res || lr->repeat == 1) && cb <= 256)
        ttrt_move_reblock(&m);
    else
        ttrt_move_repeat(&m);
}

void ttrt_max_pool_layout(const float *x, const ttrt_layout *lx, float *y, const ttrt_layout *ly, long n, long c,
                          long h, long w, long oh, long ow, long k, long stride, long pad) {
    long bx = ttrt_blocks(lx, c), by = ttrt_blocks(ly, c), cb = ly->cb;
    if (lx->cb == cb && lx->repeat == 1 && ly->repeat == 1 && cb <= 256) {
        TTRT_PAR3(n * c * oh * ow * k * k)
        for (long i = 0; i < n; i++)
            for (long b = 0; b < by; b++)
                for (long oy = 0; oy < oh; oy++) {
                    long c0 = b * cb, kc = c - c0 < cb ? c - c0 : cb;
                    long y0 = oy * stride - pad, y1 = y0 + k;
                    y0 = y0 < 0 ? 0 : y0;
                    y1 = y1 > h ? h : y1;
                    float *yp = y + ttrt_row(ly, by, i, c0, oy);
                    for (long ox = 0; ox < ow; ox++) {
                        long x0 = ox * stride - pad, x1 = x0 + k;
                        x0 = x0 < 0 ? 0 : x0;
                        x1 = x1 > w ? w : x1;
                        float m[256];
                        for (long q = 0; q < cb; q++)
                            m[q] = -FLT_MAX;
                        for (long a = y0; a < y1; a++) {
                            const float *xp = x + ttrt_row(lx, bx, i, c0, a);
                            for (long bb = x0; bb < x1; bb++)
                                for (long q = 0; q < cb; q++) {
                                    float v = xp[bb * cb + q];
                                    m[q] = v > m[q] ? v : m[q];
                                }
                        }
                        for (long q = 0; q < kc; q++)
                            yp[ox * cb + q] = m[q];
                    }
                }
        return;
    }
    long cy = c * ly->repeat;
    TTRT_PAR3(n * cy * oh * ow * k * k)
    for (long i = 0; i < n; i++)
        for (long dc = 0; dc < cy; dc++)
            for (long oy = 0; oy < oh; oy++) {
                long cc = dc / ly->repeat;
                long y0 = oy * stride - pad, y1 = y0 + k;
                y0 = y0 < 0 ? 0 : y0;
                y1 = y1 > h ? h : y1;
                float *yp = y + ttrt_row(ly, by, i, dc, oy);
                for (long ox = 0; ox < ow; ox++) {
                    long x0 = ox * stride - pad, x1 = x0 + k;
                    x0 = x0 < 0 ? 0 : x0;
                    x1 = x1 > w ? w : x1;
                    float m = -FLT_MAX;
                    for (long a = y0; a < y1; a++) {
                        const float *xp = x + ttrt_row(lx, bx, i, cc * lx->repeat, a);
                        for (long bb = x0; bb < x1; bb++)
                            m = xp[bb * lx->cb] > m ? xp[bb * lx->cb] : m;
                    }
                    yp[ox * ly->cb] = m;
                }
            }
}
