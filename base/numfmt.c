/* base/numfmt.c: see numfmt.h.
 *
 * The doubles: the decimal digits come from one multiplication in long
 * double (64-bit significand on x86-64): v x 10^k, with 10^k exact, is off
 * by at most 2^-64 of itself, far less than the 0.5 that rounding to an
 * integer needs. Wherever that error could change the answer (a value that
 * lies that close to halfway between two decimals, or to halfway between two
 * doubles for the read-back test), and outside the range where 10^k is exact,
 * the work is left to snprintf and strtod, which are always right. */
#include "base/numfmt.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t NumFmt_u64(char *out, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    return n;
}

size_t NumFmt_i64(char *out, int64_t v) {
    if (v >= 0) return NumFmt_u64(out, (uint64_t)v);
    out[0] = '-';
    return 1 + NumFmt_u64(out + 1, (uint64_t)0 - (uint64_t)v);
}

/* x86's 80-bit long double: a 64-bit significand, stored first, explicit leading bit */
#if LDBL_MANT_DIG == 64 && (defined(__x86_64__) || defined(__i386__))
#define FAST_DOUBLES 1
#define MAX_EXACT_POW10 27 /* 10^27 = 2^27 x 5^27, and 5^27 < 2^64 */

/* exact: each literal is an integer below 2^64 x 2^27 with at most 64 significant bits */
static const long double POW10[MAX_EXACT_POW10 + 1] = {
    1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,  1e10L, 1e11L, 1e12L, 1e13L,
    1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};

/* a x 10^k (a > 0), rounded once; false when 10^|k| is not exact */
static bool scale(long double a, int k, long double *x) {
    if (k > MAX_EXACT_POW10 || k < -MAX_EXACT_POW10) return false;
    *x = k >= 0 ? a * POW10[k] : a / POW10[-k];
    return true;
}

/* The binary exponent field of a normal double (2^(field - 1023) <= a < 2^(field - 1022)). */
static int exp_field(double a) {
    uint64_t u;
    memcpy(&u, &a, sizeof u);
    return (int)(u >> 52 & 0x7ff);
}

/* The `precision` significant digits of a > 0 correctly rounded (*digits,
 * in [10^(p-1), 10^p)) and the decimal exponent of the first; false when unsure. */
static bool digits_of(double a, int precision, uint64_t *digits, int *exp10) {
    /* floor(log10(a)), or one below: 2^b <= a < 2^(b+1) with b = field - 1023; the loop corrects it */
    int b = exp_field(a) - 1023;
    int e = b >= 0 ? (int)(b * 0.30102999566398120) : -(int)(-b * 0.30102999566398120) - 1;
    uint64_t lo = 1;
    for (int i = 1; i < precision; i++)
        lo *= 10;
    long double x;
    for (int tries = 0;; tries++) { /* log10 may be one off near a power of ten */
        if (tries == 3 || !scale(a, precision - 1 - e, &x)) return false;
        if (x < (long double)lo)
            e--;
        else if (x >= (long double)lo * 10)
            e++;
        else
            break;
    }
    /* x < 10^17 < 2^63: x + 2^63 lies in [2^63, 2^64), where the significand is an integer, so the
     * addition rounds x to the nearest integer, and the significand's bits hold 2^63 + that integer
     * (this, not a conversion to an integer type, which switches the x87 rounding mode, each time) */
    long double y = x + 0x1p63L;
    uint64_t sig;
    memcpy(&sig, &y, sizeof sig);
    long double frac = x - (y - 0x1p63L);               /* in [-0.5, 0.5], exact */
    long double tol = x * 0x1p-62L;                     /* 4 x the error bound of x */
    if (fabsl(fabsl(frac) - 0.5L) <= tol) return false; /* too close to halfway to round for sure */
    uint64_t n = sig - ((uint64_t)1 << 63);
    if (n == lo * 10) {
        n = lo;
        e++;
    }
    *digits = n;
    *exp10 = e;
    return true;
}

/* %g's layout of digits (precision of them) with exponent e, sign first. */
static size_t layout(char *out, bool neg, uint64_t digits, int precision, int e) {
    char d[24];
    for (int i = precision - 1; i >= 0; i--, digits /= 10)
        d[i] = (char)('0' + digits % 10);
    int nd = precision; /* %g drops trailing zeros of the fraction */
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    size_t n = 0;
    if (neg) out[n++] = '-';
    if (e < -4 || e >= precision) {
        out[n++] = d[0];
        if (nd > 1) {
            out[n++] = '.';
            memcpy(out + n, d + 1, (size_t)nd - 1);
            n += (size_t)nd - 1;
        }
        out[n++] = 'e';
        out[n++] = e < 0 ? '-' : '+';
        int ae = e < 0 ? -e : e;
        if (ae >= 100) out[n++] = (char)('0' + ae / 100);
        out[n++] = (char)('0' + ae / 10 % 10);
        out[n++] = (char)('0' + ae % 10);
    } else if (e >= 0) {
        for (int i = 0; i <= e; i++)
            out[n++] = i < nd ? d[i] : '0';
        if (nd > e + 1) {
            out[n++] = '.';
            memcpy(out + n, d + e + 1, (size_t)(nd - e - 1));
            n += (size_t)(nd - e - 1);
        }
    } else {
        out[n++] = '0';
        out[n++] = '.';
        for (int i = 0; i < -e - 1; i++)
            out[n++] = '0';
        memcpy(out + n, d, (size_t)nd);
        n += (size_t)nd;
    }
    out[n] = '\0';
    return n;
}

/* Whether digits x 10^(e - precision + 1) reads back as a (> 0, a normal
 * double that is not a power of two); *sure false when too close to call. */
static bool reads_back(double a, uint64_t digits, int precision, int e, bool *sure) {
    long double y;
    *sure = false;
    if (!scale((long double)digits, e - precision + 1, &y)) return false;
    /* a in [2^b, 2^(b+1)), b = field - 1023: ulp 2^(b-52), half of it 2^(b-53) (a normal double too) */
    uint64_t half_bits = (uint64_t)(exp_field(a) - 53) << 52;
    double half;
    memcpy(&half, &half_bits, sizeof half);
    long double half_ulp = half;
    long double d = fabsl(y - (long double)a);
    if (fabsl(d - half_ulp) <= y * 0x1p-62L) return false;
    *sure = true;
    return d < half_ulp;
}

/* a usable for the fast path: normal, not tiny or huge, not a power of two */
static bool fast_range(double a) {
    if (!(a >= 1e-250 && a <= 1e250)) return false;
    uint64_t u;
    memcpy(&u, &a, sizeof u);
    return (u & ((1ull << 52) - 1)) != 0;
}
#endif

size_t NumFmt_g(char *out, double v, int precision) {
#ifdef FAST_DOUBLES
    double a = fabs(v);
    uint64_t digits;
    int e;
    if ((precision == 15 || precision == 17) && isfinite(v) && fast_range(a) && digits_of(a, precision, &digits, &e))
        return layout(out, signbit(v) != 0, digits, precision, e);
#endif
    return (size_t)snprintf(out, 32, "%.*g", precision, v);
}

size_t NumFmt_double(char *out, double v) {
    if (v == 0) return (size_t)snprintf(out, 32, "%s", signbit(v) ? "-0" : "0");
#ifdef FAST_DOUBLES
    double a = fabs(v);
    uint64_t digits;
    int e;
    if (isfinite(v) && fast_range(a) && digits_of(a, 15, &digits, &e)) {
        bool sure;
        bool back = reads_back(a, digits, 15, e, &sure);
        if (sure) return back ? layout(out, signbit(v) != 0, digits, 15, e) : NumFmt_g(out, v, 17);
    }
#endif
    size_t n = (size_t)snprintf(out, 32, "%.15g", v);
    if (strtod(out, NULL) != v) n = (size_t)snprintf(out, 32, "%.17g", v);
    return n;
}
