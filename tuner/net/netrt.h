/* tuner/net/netrt.h: the runtime of the untuned ops of a network program.
 *
 * tuner/net/netrt.c is plain C11 with no tunetop header: it is compiled into
 * tunetop (where tests/unit/test_netrt.c checks every function against the
 * reference of tuner/net/graph_ref.c) and its text, with this header's, is
 * embedded into every generated network program (the build turns both files
 * into a string, tuner/net/netrt_embed.cmake, called from CMakeLists.txt).
 * Tensors are dense float32, NCHW for activations; sizes are long. Outer loops
 * are parallel with OpenMP when the program is built with -fopenmp. Every
 * elementwise function may run in place (y == x). */
#ifndef TTRT_NETRT_H
#define TTRT_NETRT_H

/* y = act(x * scale[c] + shift[c] + res) over [outer][chans][inner]; scale,
 * shift, res may be NULL (1, 0, 0); act is ReLU when relu != 0. Covers
 * bias_add, batch_norm (scale-shift), residual add, ReLU and their chains. */
void ttrt_affine(const float *x, const float *scale, const float *shift, const float *res, float *y, long outer,
                 long chans, long inner, int relu);
void ttrt_clip(const float *x, float *y, long n, float lo, float hi);
void ttrt_gelu(const float *x, float *y, long n); /* 0.5 x (1 + erf(x / sqrt 2)) */
void ttrt_scale(const float *x, float *y, long n, float alpha);
/* x [batch*heads][rows][s] + mask[batch][s] */
void ttrt_mask_add(const float *x, const float *mask, float *y, long batch, long heads, long rows, long s);
/* k x k pooling over [nc][h][w] -> [nc][oh][ow]; avg excludes the padding */
void ttrt_max_pool(const float *x, float *y, long nc, long h, long w, long oh, long ow, long k, long stride, long pad);
void ttrt_avg_pool(const float *x, float *y, long nc, long h, long w, long oh, long ow, long k, long stride, long pad);
void ttrt_global_avg_pool(const float *x, float *y, long nc, long inner);
/* copies x [n][cj][hw] into channels c0.. of y [n][ctotal][hw] */
void ttrt_concat_part(const float *x, float *y, long n, long cj, long ctotal, long c0, long hw);
void ttrt_softmax(const float *x, float *y, long rows, long cols);
void ttrt_layer_norm(const float *x, const float *gamma, const float *beta, float *y, long rows, long cols, float eps);
/* [b*s][heads*d] -> [b*heads][s][d] (kind 0), -> [b*heads][d][s] (kind 1); [b*heads][s][d] -> [b*s][heads*d] (2) */
void ttrt_heads(const float *x, float *y, int kind, long b, long heads, long s, long d);

/* Copies a tensor [n][c][h][w] from one blocked layout to another (the
 * layouts of kernels/template.h's BlockedLayout: element (n, c, y, x) at
 * [n][c' / cb][y + top][x + left][c' % cb] for each blocked channel c' with
 * c' / repeat == c). Only the tensor's elements of dst are written, so dst's
 * zero padding stays zero. On the way: + shift[c] (when shift is not NULL),
 * then act 1: ReLU, act 2: clip to [lo, hi] (0: nothing). */
void ttrt_reblock(const float *src, long s_cb, long s_h_alloc, long s_w_alloc, long s_top, long s_left, long s_repeat,
                  float *dst, long d_cb, long d_h_alloc, long d_w_alloc, long d_top, long d_left, long d_repeat, long n,
                  long c, long h, long w, const float *shift, int act, float lo, float hi);

/* A tensor [n][c][h][w] in a blocked layout as above: floats
 * [n][ceil(c * repeat / cb)][h_alloc][w_alloc][cb], element (n, c, y, x) at
 * [n][c' / cb][y + top][x + left][c' % cb] for each c' with c' / repeat == c.
 * NCHW is {1, h, w, 0, 0, 1}. */
typedef struct ttrt_layout {
    long cb, h_alloc, w_alloc, top, left, repeat;
} ttrt_layout;

/* The one pass that moves a tensor between two layouts and applies on the way
 * y = act(x * scale[c] + shift[c] + res): scale, shift, res may be NULL (1, 0,
 * 0), each of x, res, y has its own layout; act 0: nothing, 1: ReLU, 2: clip to
 * [lo, hi]. Only the tensor's elements of y are written (its padding stays as
 * it was). y may be x when both have the same layout. Covers NCHW <-> blocked
 * transforms, bias_add, batch_norm, residual add, ReLU, ReLU6 and their chains. */
void ttrt_move(const float *x, const ttrt_layout *lx, const float *res, const ttrt_layout *lr, float *y,
               const ttrt_layout *ly, long n, long c, long h, long w, const float *scale, const float *shift, int act,
               float lo, float hi);
/* k x k max pooling of x [n][c][h][w] into y [n][c][oh][ow], each in its layout. */
void ttrt_max_pool_layout(const float *x, const ttrt_layout *lx, float *y, const ttrt_layout *ly, long n, long c,
                          long h, long w, long oh, long ow, long k, long stride, long pad);

#endif
