/* te/arith.c: what the parser, the interpreter, bounds and the DAG all use
 * (see te.h): integer floor division and modulo as `.te` defines them,
 * rounding to an element type, comparisons, and the size of a tensor. Apart
 * from them, so that none of those files calls another in a circle. */
#include <math.h>

#include "te/te.h"

int64_t te_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

int64_t te_floormod(int64_t a, int64_t b) { return a - te_floordiv(a, b) * b; }

/* Round to nearest even half-precision value (range: +-65504, then inf). */
static double round_f16(double v) {
    if (isnan(v) || isinf(v) || v == 0) return v;
    double a = fabs(v);
    if (a >= 65520.0) return v > 0 ? INFINITY : -INFINITY;
    int e;
    frexp(a, &e);               /* a = m * 2^e, m in [0.5, 1) */
    int exp2 = e - 1;           /* a in [2^exp2, 2^(exp2+1)) */
    if (exp2 < -14) exp2 = -14; /* subnormals share the smallest step */
    double step = ldexp(1.0, exp2 - 10);
    double r = nearbyint(a / step) * step; /* the default rounding mode is to nearest even */
    return v < 0 ? -r : r;
}

double te_round_to(TeDtype dtype, double v) { return dtype == TE_F16 ? round_f16(v) : (double)(float)v; }

int te_compare(int op, double x, double y) {
    switch (op) {
    case TE_LT:
        return x < y;
    case TE_LE:
        return x <= y;
    case TE_GT:
        return x > y;
    case TE_GE:
        return x >= y;
    case TE_EQ:
        return x == y;
    default:
        return x != y;
    }
}

int64_t TeProgram_numel(const TeProgram *this, int t) {
    int64_t n = 1;
    for (int d = 0; d < this->tensors[t].ndim; d++)
        n *= this->tensors[t].shape[d];
    return n;
}
