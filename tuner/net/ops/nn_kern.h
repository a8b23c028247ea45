/* tuner/net/ops/nn_kern.h: the compute kernels of Conv, ConvTranspose, Gemm
 * and MatMul, written once for an element type.
 *
 * ops/nn_kern.c includes this file twice: with NN_T float and NN_FN(x) x##_f,
 * and with NN_T double and NN_FN(x) x##_d (declarations in nn_util.h).
 *
 * GEMM: C += A * B in blocks: a KC x NC block of B is packed into panels of
 * NR columns, and a micro-kernel keeps an MR x NR tile of C in registers
 * while it runs down K (the NR loop is what gcc vectorises). Convolution is
 * that GEMM over an im2col matrix built for a band of output rows at a time
 * (so the scratch stays under NN_COL_MAX elements); a 1x1 convolution with
 * unit strides and no pads multiplies the input directly. The transposed
 * convolution is the GEMM of the weights' transpose with x, scattered back
 * (col2im). */

#define MR 6
#define VL (32 / (int)sizeof(NN_T)) /* lanes of a 32-byte vector */
#define NV 2                        /* vectors per row of the tile */
#define NR (NV * VL)
#define KC 256
#define NC 512

typedef NN_T NN_FN(vec) __attribute__((vector_size(32)));

/* C[0:mr, 0:nr] += A[0:mr, 0:kc] * the packed panel bp (kc x NR), with the
 * MR x NR tile in vector registers (gcc's vector extension: one AVX register
 * per vector, or two SSE ones in the baseline build). */
static inline __attribute__((always_inline)) void NN_FN(kern)(int64_t kc, const NN_T *a, int64_t sam, int64_t sak,
                                                              int mr, const NN_T *bp, NN_T *c, int64_t ldc, int nr) {
    const NN_T *ar[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        ar[r] = a + (r < mr ? r : mr - 1) * sam; /* rows past mr repeat the last one and are not stored */
    NN_FN(vec) acc[MR][NV] = {{{0}}};
    for (int64_t k = 0; k < kc; k++) {
        NN_FN(vec) b[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            memcpy(&b[v], bp + k * NR + v * VL, sizeof b[v]);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            NN_T av = ar[r][k * sak];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[r][v] += av * b[v];
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            for (int l = 0; l < VL; l++)
                if (r < mr && v * VL + l < nr) c[r * ldc + v * VL + l] += acc[r][v][l];
}

/* B[0:kc, 0:nc] into panels of NR columns (zero-filled past nc). */
static inline __attribute__((always_inline)) void NN_FN(pack)(int64_t kc, int64_t nc, const NN_T *b, int64_t sbk,
                                                              int64_t sbn, NN_T *bp) {
    for (int64_t j0 = 0; j0 < nc; j0 += NR) {
        int64_t nr = nc - j0 < NR ? nc - j0 : NR;
        NN_T *dst = bp + j0 * kc;
        for (int64_t k = 0; k < kc; k++) {
            const NN_T *src = b + k * sbk + j0 * sbn;
            for (int64_t j = 0; j < NR; j++)
                dst[k * NR + j] = j < nr ? src[j * sbn] : 0;
        }
    }
}

NN_CLONES bool NN_FN(Nn_gemm)(int64_t M, int64_t N, int64_t K, const NN_T *a, int64_t sam, int64_t sak, const NN_T *b,
                              int64_t sbk, int64_t sbn, NN_T *c, int64_t ldc) {
    if (M <= 0 || N <= 0 || K <= 0) return true;
    NN_T *bp = malloc(sizeof *bp * KC * NC);
    if (!bp) return false;
    for (int64_t j0 = 0; j0 < N; j0 += NC) {
        int64_t nc = N - j0 < NC ? N - j0 : NC;
        for (int64_t k0 = 0; k0 < K; k0 += KC) {
            int64_t kc = K - k0 < KC ? K - k0 : KC;
            NN_FN(pack)(kc, nc, b + k0 * sbk + j0 * sbn, sbk, sbn, bp);
            for (int64_t i0 = 0; i0 < M; i0 += MR) {
                int mr = (int)(M - i0 < MR ? M - i0 : MR);
                for (int64_t jj = 0; jj < nc; jj += NR)
                    NN_FN(kern)
                (kc, a + i0 * sam + k0 * sak, sam, sak, mr, bp + jj * kc, c + i0 * ldc + j0 + jj, ldc,
                 (int)(nc - jj < NR ? nc - jj : NR));
            }
        }
    }
    free(bp);
    return true;
}

/* Y (M x N) = alpha * Y + beta * C, where C's element (i, j) is
 * c[i*sci + j*scj] (strides 0 broadcast C); no C: Y = alpha * Y. */
void NN_FN(Nn_scaleAdd)(int64_t M, int64_t N, double alpha, NN_T *y, double beta, const NN_T *c, int64_t sci,
                        int64_t scj) {
    NN_T a = (NN_T)alpha, b = (NN_T)beta;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            y[i * N + j] = a * y[i * N + j] + (c ? b * c[i * sci + j * scj] : 0);
}

/* Rows r0..r1 (r = od * OH + oh) of the im2col matrix of one group of x:
 * row (ic, kd, kh, kw), column (r - r0) * OW + ow. */
static void NN_FN(im2col)(const NnWin *w, const NN_T *x, int64_t cg, int64_t r0, int64_t r1, NN_T *col) {
    int64_t OW = w->out[2], ncol = (r1 - r0) * OW, row = 0;
    for (int64_t ic = 0; ic < cg; ic++)
        for (int64_t kd = 0; kd < w->k[0]; kd++)
            for (int64_t kh = 0; kh < w->k[1]; kh++)
                for (int64_t kw = 0; kw < w->k[2]; kw++, row++) {
                    int64_t off = kw * w->d[2] - w->pb[2], lo, hi;
                    nn_span(off, w->s[2], w->in[2], OW, &lo, &hi);
                    for (int64_t r = r0; r < r1; r++) {
                        NN_T *dst = col + row * ncol + (r - r0) * OW;
                        int64_t at = nn_row(w, r, kd, kh);
                        if (at < 0) {
                            memset(dst, 0, sizeof *dst * (size_t)OW);
                            continue;
                        }
                        const NN_T *src = x + ic * NnWin_inSize(w) + at + off;
                        for (int64_t ow = 0; ow < lo; ow++)
                            dst[ow] = 0;
                        for (int64_t ow = lo; ow < hi; ow++)
                            dst[ow] = src[ow * w->s[2]];
                        for (int64_t ow = hi; ow < OW; ow++)
                            dst[ow] = 0;
                    }
                }
}

/* The inverse scatter: y (one group, M' x in) += col's rows r0..r1. */
static void NN_FN(col2im)(const NnWin *w, const NN_T *col, int64_t mg, int64_t r0, int64_t r1, NN_T *y) {
    int64_t OW = w->out[2], ncol = (r1 - r0) * OW, row = 0;
    for (int64_t oc = 0; oc < mg; oc++)
        for (int64_t kd = 0; kd < w->k[0]; kd++)
            for (int64_t kh = 0; kh < w->k[1]; kh++)
                for (int64_t kw = 0; kw < w->k[2]; kw++, row++) {
                    int64_t off = kw * w->d[2] - w->pb[2], lo, hi;
                    nn_span(off, w->s[2], w->in[2], OW, &lo, &hi);
                    for (int64_t r = r0; r < r1; r++) {
                        int64_t at = nn_row(w, r, kd, kh);
                        if (at < 0) continue;
                        const NN_T *src = col + row * ncol + (r - r0) * OW;
                        NN_T *dst = y + oc * NnWin_inSize(w) + at + off;
                        for (int64_t ow = lo; ow < hi; ow++)
                            dst[ow * w->s[2]] += src[ow];
                    }
                }
}

/* Direct loops for a group with few output channels (depthwise): each
 * kernel tap adds a weighted, shifted input row to an output row, the
 * innermost loop running along the output row. */
static void NN_FN(conv_direct)(const NnWin *w, const NN_T *x, const NN_T *wt, int64_t cg, int64_t mg, NN_T *y) {
    int64_t OW = w->out[2], rows = w->out[0] * w->out[1], kk = NnWin_kernel(w);
    for (int64_t oc = 0; oc < mg; oc++)
        for (int64_t ic = 0; ic < cg; ic++) {
            const NN_T *xc = x + ic * NnWin_inSize(w), *wc = wt + (oc * cg + ic) * kk;
            for (int64_t kd = 0; kd < w->k[0]; kd++)
                for (int64_t kh = 0; kh < w->k[1]; kh++)
                    for (int64_t kw = 0; kw < w->k[2]; kw++) {
                        NN_T wv = wc[(kd * w->k[1] + kh) * w->k[2] + kw];
                        int64_t off = kw * w->d[2] - w->pb[2], lo, hi;
                        nn_span(off, w->s[2], w->in[2], OW, &lo, &hi);
                        for (int64_t r = 0; r < rows; r++) {
                            int64_t at = nn_row(w, r, kd, kh);
                            if (at < 0) continue;
                            const NN_T *src = xc + at + off;
                            NN_T *dst = y + oc * rows * OW + r * OW;
                            for (int64_t ow = lo; ow < hi; ow++)
                                dst[ow] += wv * src[ow * w->s[2]];
                        }
                    }
        }
}

static void NN_FN(fill_bias)(NN_T *y, const NN_T *bias, int64_t m, int64_t plane) {
    for (int64_t oc = 0; oc < m; oc++)
        for (int64_t p = 0; p < plane; p++)
            y[oc * plane + p] = bias ? bias[oc] : 0;
}

bool NN_FN(Nn_conv)(const NnConv *cv, const NN_T *x, const NN_T *w, const NN_T *bias, NN_T *y) {
    const NnWin *wn = &cv->win;
    int64_t cg = cv->c / cv->group, mg = cv->m / cv->group, kc = cg * NnWin_kernel(wn);
    int64_t P = NnWin_outSize(wn), IS = NnWin_inSize(wn), OW = wn->out[2], rows = wn->out[0] * wn->out[1];
    int64_t band = nn_band(kc, OW, rows);
    bool direct = mg < NN_DIRECT_M, pointwise = nn_pointwise(wn);
    NN_T *col = NULL;
    if (!direct && !pointwise && !(col = malloc(sizeof *col * (size_t)(kc * band * OW)))) return false;
    bool ok = true;
    for (int64_t n = 0; n < cv->n; n++)
        for (int64_t g = 0; g < cv->group; g++) {
            const NN_T *xg = x + (n * cv->c + g * cg) * IS, *wg = w + g * mg * kc;
            NN_T *yg = y + (n * cv->m + g * mg) * P;
            NN_FN(fill_bias)(yg, bias ? bias + g * mg : NULL, mg, P);
            if (direct) {
                NN_FN(conv_direct)(wn, xg, wg, cg, mg, yg);
                continue;
            }
            if (pointwise) {
                ok = ok && NN_FN(Nn_gemm)(mg, P, kc, wg, kc, 1, xg, P, 1, yg, P);
                continue;
            }
            for (int64_t r0 = 0; r0 < rows; r0 += band) {
                int64_t r1 = r0 + band < rows ? r0 + band : rows, nc = (r1 - r0) * OW;
                NN_FN(im2col)(wn, xg, cg, r0, r1, col);
                ok = ok && NN_FN(Nn_gemm)(mg, nc, kc, wg, kc, 1, col, nc, 1, yg + r0 * OW, P);
            }
        }
    free(col);
    return ok;
}

bool NN_FN(Nn_convT)(const NnConv *cv, const NN_T *x, const NN_T *w, const NN_T *bias, NN_T *y) {
    const NnWin *wn = &cv->win;
    int64_t cg = cv->c / cv->group, mg = cv->m / cv->group, kk = NnWin_kernel(wn), mk = mg * kk;
    int64_t P = NnWin_outSize(wn), YS = NnWin_inSize(wn), OW = wn->out[2], rows = wn->out[0] * wn->out[1];
    int64_t band = nn_band(mk, OW, rows);
    NN_T *col = malloc(sizeof *col * (size_t)(mk * band * OW > 0 ? mk * band * OW : 1));
    if (!col) return false;
    bool ok = true;
    for (int64_t n = 0; n < cv->n; n++)
        for (int64_t g = 0; g < cv->group; g++) {
            const NN_T *xg = x + (n * cv->c + g * cg) * P, *wg = w + g * cg * mk;
            NN_T *yg = y + (n * cv->m + g * mg) * YS;
            NN_FN(fill_bias)(yg, bias ? bias + g * mg : NULL, mg, YS);
            for (int64_t r0 = 0; r0 < rows; r0 += band) {
                int64_t r1 = r0 + band < rows ? r0 + band : rows, nc = (r1 - r0) * OW;
                memset(col, 0, sizeof *col * (size_t)(mk * nc));
                /* col[(oc, k), p] = sum over ic of w[ic, oc, k] * x[ic, p] */
                ok = ok && NN_FN(Nn_gemm)(mk, nc, cg, wg, 1, mk, xg + r0 * OW, P, 1, col, nc);
                NN_FN(col2im)(wn, col, mg, r0, r1, yg);
            }
        }
    free(col);
    return ok;
}

#undef MR
#undef VL
#undef NV
#undef NR
#undef KC
#undef NC
