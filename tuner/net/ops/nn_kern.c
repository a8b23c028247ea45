/* tuner/net/ops/nn_kern.c: the kernels of ops/nn_kern.h for float and double. */
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/nn_util.h"

/* The im2col scratch of a convolution holds at most this many elements: the
 * output rows are taken in bands that fit. */
#define NN_COL_MAX ((int64_t)1 << 21)

/* The outputs o in [lo, hi) of 0..n_out whose input o * s + off is in 0..n_in. */
static void nn_span(int64_t off, int64_t s, int64_t n_in, int64_t n_out, int64_t *lo, int64_t *hi) {
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = n_in - 1 - off >= 0 ? (n_in - 1 - off) / s + 1 : 0;
    if (h > n_out) h = n_out;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* Groups with fewer output channels than this run the direct loops. */
#define NN_DIRECT_M 4

/* The offset of input row (id, ih) that output row r (= od * OH + oh) reads
 * at kernel tap (kd, kh), or -1 when the tap falls in the padding. */
static int64_t nn_row(const NnWin *w, int64_t r, int64_t kd, int64_t kh) {
    int64_t id = (r / w->out[1]) * w->s[0] - w->pb[0] + kd * w->d[0];
    int64_t ih = (r % w->out[1]) * w->s[1] - w->pb[1] + kh * w->d[1];
    if (id < 0 || id >= w->in[0] || ih < 0 || ih >= w->in[1]) return -1;
    return (id * w->in[1] + ih) * w->in[2];
}

/* Output rows per band of an im2col matrix with rows_k rows. */
static int64_t nn_band(int64_t rows_k, int64_t ow, int64_t rows) {
    int64_t per_row = rows_k * ow > 0 ? rows_k * ow : 1, band = NN_COL_MAX / per_row;
    if (band < 1) band = 1;
    return band < rows ? band : (rows > 0 ? rows : 1);
}

/* A 1x1 window with unit strides and no pads: the input is its own im2col. */
static bool nn_pointwise(const NnWin *w) {
    for (int j = 0; j < NN_SP; j++)
        if (w->k[j] != 1 || w->s[j] != 1 || w->pb[j] || w->pe[j]) return false;
    return true;
}

/* The GEMM is compiled twice more by gcc: for x86-64-v3 (AVX2 and FMA),
 * chosen at load time where the CPU has them, and for the baseline. Not under
 * ThreadSanitizer: the clones' resolver runs at relocation time, before the
 * TSan runtime is up, and crashes the program before main. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define NN_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define NN_CLONES
#endif

#define NN_T float
#define NN_FN(x) x##_f
#include "tuner/net/ops/nn_kern.h"
#undef NN_T
#undef NN_FN

#define NN_T double
#define NN_FN(x) x##_d
#include "tuner/net/ops/nn_kern.h"
#undef NN_T
#undef NN_FN
