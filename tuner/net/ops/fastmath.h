/* tuner/net/ops/fastmath.h: float32 exp, sigmoid, tanh and erf written so
 * that a loop over a run of elements vectorizes (no branches, no calls, no
 * conversion of a float to an integer), for the activations that dominate
 * the untuned time of real models (EfficientNet's SiLU, BERT's and ViT's
 * GELU). glibc's expf, tanhf and erff are scalar calls, 5 to 10 ns each.
 *
 * Accuracy, checked over a sweep of every exponent by test_onnx_elementwise
 * against the double functions: exp within 1 ulp, sigmoid within 3, tanh
 * within 2, erf within 3, GELU (x (1 + erf(x / sqrt 2)) / 2) within 6;
 * +-0 keep their sign, +-inf and NaN give what C's functions give. The
 * polynomials are this file's own fits (least squares in double over
 * Chebyshev nodes, evaluated in float32) except exp's, the classic Cody-Waite
 * reduction with a degree-6 polynomial, and tanh's odd polynomial. */
#ifndef TT_NET_OPS_FASTMATH_H
#define TT_NET_OPS_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* GCC if-converts a float comparison that feeds more float arithmetic (the
 * clamps and range selects below) only when it may assume that comparisons
 * do not trap, so a file that includes this header is compiled without
 * trapping math from here on: tunetop never reads the floating-point
 * exception flags, and the values computed are the same. Clang vectorizes
 * these loops as they are. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

static inline float ff_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline uint32_t ff_u32(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* e^x: x = n ln2 + r with |r| <= ln2/2, e^r by a polynomial, 2^n applied as
 * two halves so that results near FLT_MAX and in the subnormal range scale
 * without overflowing an intermediate. */
static inline float ff_exp(float x) {
    float c = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x; /* NaN passes through */
    float t = c * 1.44269504f + 12582912.0f;                 /* 1.5 * 2^23: n lands in the low bits */
    float n = t - 12582912.0f;
    int32_t k = (int32_t)(ff_u32(t) - 0x4b400000u);
    float r = c - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t k1 = k / 2, k2 = k - k1;
    return p * ff_bits((uint32_t)(k1 + 127) << 23) * ff_bits((uint32_t)(k2 + 127) << 23); /* NaN: p is NaN */
}

/* 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below, so that the tail keeps
 * its subnormal values instead of 1 / inf. */
static inline float ff_sigmoid(float x) {
    float e = ff_exp(-fabsf(x));
    return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

/* tanh: an odd polynomial below 0.625, 1 - 2 / (e^2|x| + 1) above. */
static inline float ff_tanh(float x) {
    float a = fabsf(x), z = x * x;
    float q = -5.70498872745e-3f;
    q = q * z + 2.06390887954e-2f;
    q = q * z - 5.37397155531e-2f;
    q = q * z + 1.33314422036e-1f;
    q = q * z - 3.33332819422e-1f;
    float small = x * (1.0f + z * q);
    float big = copysignf(1.0f - 2.0f / (ff_exp(2.0f * a) + 1.0f), x);
    return a < 0.625f ? small : big;
}

/* erf(x) for |x| < 1: x P(x^2). */
static inline float ff_erf_small(float x) {
    float z = x * x, p = 7.898068542e-05f;
    p = p * z - 8.024316634e-04f;
    p = p * z + 5.190049965e-03f;
    p = p * z - 2.685480702e-02f;
    p = p * z + 1.128361240e-01f;
    p = p * z - 3.761262884e-01f;
    p = p * z + 1.128379167e+00f;
    return x * p;
}

/* e^(-k v^2) as e^(-k h^2) e^(-k (v-h)(v+h)) with h = v cut to 12 bits: h^2
 * is exact, so the rounding of v^2 does not grow into the result (k: 1 or
 * 1/2, exact factors). */
static inline float ff_exp_negsq(float v, float k) {
    float h = ff_bits(ff_u32(v) & 0xfffff000u);
    return ff_exp(-k * (h * h)) * ff_exp(-k * ((v - h) * (v + h)));
}

/* erfc(a) for a >= 0.7 given e = e^-a^2: e Q(1/a), Q fitted to erfc(a) e^a^2
 * on [0.7, 10] (degree 12, within 3.5e-8), evaluated in double: its
 * coefficients alternate in sign and would cancel in float. */
static inline float ff_erfc_big(float a, float e) {
    double u = 1.0 / a, q = -3.3256733267715720e-03;
    q = q * u + 4.1885000742603144e-02;
    q = q * u - 2.3246311089397279e-01;
    q = q * u + 7.5368299332258726e-01;
    q = q * u - 1.5862428334405339e+00;
    q = q * u + 2.2580571662782605e+00;
    q = q * u - 2.1556317632493425e+00;
    q = q * u + 1.2416063321665294e+00;
    q = q * u - 2.0141620491639431e-01;
    q = q * u - 2.4965919707627804e-01;
    q = q * u - 3.2821645667364453e-03;
    q = q * u + 5.6437765521529593e-01;
    q = q * u - 4.6227887899402819e-06;
    return a > 10.0f ? 0.0f : e * (float)q; /* (+inf would give 0 x NaN) */
}

static inline float ff_erf(float x) {
    float a = fabsf(x);
    return a < 1.0f ? ff_erf_small(x) : copysignf(1.0f - ff_erfc_big(a, ff_exp_negsq(a, 1.0f)), x);
}

/* GELU's (1 + erf(x / sqrt 2)) / 2, without the cancellation of 1 + erf far
 * below zero, and with e^(-x^2 / 2) from x itself (x / sqrt 2 rounded first
 * would cost 2 t^2 ulps of erfc(t)). */
static inline float ff_gelu_cdf(float x) {
    float a = fabsf(x) * 0.70710678f;
    float c = a < 0.7f ? 1.0f - ff_erf_small(a) : ff_erfc_big(a, ff_exp_negsq(x, 0.5f)); /* erfc(|x| / sqrt 2) */
    return x < 0.0f ? 0.5f * c : 1.0f - 0.5f * c;
}

#endif
