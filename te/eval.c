/* te/eval.c: the reference interpreter (see TeProgram_eval in te.h).
 * Integer-typed expressions are evaluated in 64-bit integers (floor `/` and
 * `%`), everything else in double; reductions accumulate in double. */
#include <math.h>
#include <string.h>

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

typedef struct Ctx {
    const TeProgram *g;
    double **values;
    int64_t var[TE_MAX_VARS];
} Ctx;

static double eval_num(Ctx *c, const TeExpr *e);
static int eval_bool(Ctx *c, const TeExpr *e);

static int64_t eval_int(Ctx *c, const TeExpr *e) {
    switch (e->kind) {
    case TE_NUM:
        return e->inum;
    case TE_VAR:
        return c->var[e->var];
    case TE_NEG:
        return -eval_int(c, e->kid[0]);
    case TE_IF:
        return eval_bool(c, e->kid[0]) ? eval_int(c, e->kid[1]) : eval_int(c, e->kid[2]);
    case TE_CALL: {
        int64_t a = eval_int(c, e->kid[0]), b = eval_int(c, e->kid[1]);
        return e->op == TE_FMAX ? (a > b ? a : b) : (a < b ? a : b);
    }
    case TE_BIN: {
        int64_t a = eval_int(c, e->kid[0]), b = eval_int(c, e->kid[1]);
        switch (e->op) {
        case TE_ADD:
            return a + b;
        case TE_SUB:
            return a - b;
        case TE_MUL:
            return a * b;
        case TE_DIV:
            return te_floordiv(a, b);
        default:
            return te_floormod(a, b);
        }
    }
    default:
        return 0; /* not integer-typed */
    }
}

static int eval_bool(Ctx *c, const TeExpr *e) {
    if (e->kind == TE_NOT) return !eval_bool(c, e->kid[0]);
    if (e->op == TE_AND) return eval_bool(c, e->kid[0]) && eval_bool(c, e->kid[1]);
    if (e->op == TE_OR) return eval_bool(c, e->kid[0]) || eval_bool(c, e->kid[1]);
    double a = eval_num(c, e->kid[0]), b = eval_num(c, e->kid[1]);
    switch (e->op) {
    case TE_LT:
        return a < b;
    case TE_LE:
        return a <= b;
    case TE_GT:
        return a > b;
    case TE_GE:
        return a >= b;
    case TE_EQ:
        return a == b;
    default:
        return a != b;
    }
}

static double eval_reduce(Ctx *c, const TeExpr *e, int axis) {
    if (axis == e->n_axes) return eval_num(c, e->kid[0]);
    int v = e->axes[axis];
    double acc = e->op == TE_SUM ? 0.0 : e->op == TE_MAX_OVER ? -INFINITY : INFINITY;
    for (int64_t i = 0; i < c->g->vars[v].extent; i++) {
        c->var[v] = i;
        double x = eval_reduce(c, e, axis + 1);
        if (e->op == TE_SUM)
            acc += x;
        else if (e->op == TE_MAX_OVER)
            acc = x > acc ? x : acc;
        else
            acc = x < acc ? x : acc;
    }
    return acc;
}

static double eval_num(Ctx *c, const TeExpr *e) {
    if (e->type == TE_TINT) return (double)eval_int(c, e);
    switch (e->kind) {
    case TE_NUM:
        return e->num;
    case TE_NEG:
        return -eval_num(c, e->kid[0]);
    case TE_IF:
        return eval_bool(c, e->kid[0]) ? eval_num(c, e->kid[1]) : eval_num(c, e->kid[2]);
    case TE_ACCESS: {
        const TeTensor *t = &c->g->tensors[e->tensor];
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++)
            off = off * t->shape[d] + eval_int(c, e->kid[d]);
        return c->values[e->tensor][off];
    }
    case TE_CALL: {
        double a = eval_num(c, e->kid[0]);
        switch (e->op) {
        case TE_EXP:
            return exp(a);
        case TE_LOG:
            return log(a);
        case TE_SQRT:
            return sqrt(a);
        case TE_RSQRT:
            return 1.0 / sqrt(a);
        case TE_TANH:
            return tanh(a);
        case TE_ERF:
            return erf(a);
        case TE_ABS:
            return fabs(a);
        case TE_FMAX:
            return fmax(a, eval_num(c, e->kid[1]));
        default:
            return fmin(a, eval_num(c, e->kid[1]));
        }
    }
    case TE_BIN: {
        double a = eval_num(c, e->kid[0]), b = eval_num(c, e->kid[1]);
        switch (e->op) {
        case TE_ADD:
            return a + b;
        case TE_SUB:
            return a - b;
        case TE_MUL:
            return a * b;
        default:
            return a / b;
        }
    }
    case TE_REDUCE:
        return eval_reduce(c, e, 0);
    default:
        return 0; /* TE_VAR is integer-typed; TE_NOT is a condition */
    }
}

static void eval_tensor(Ctx *c, const TeTensor *t, double *out, int d, int64_t off) {
    if (d == t->ndim) {
        out[off] = te_round_to(t->dtype, eval_num(c, t->body));
        return;
    }
    for (int64_t i = 0; i < t->shape[d]; i++) {
        c->var[t->axes[d]] = i;
        eval_tensor(c, t, out, d + 1, off * t->shape[d] + i);
    }
}

void TeProgram_eval(const TeProgram *this, double **values) {
    static __thread Ctx c;
    memset(&c, 0, sizeof c);
    c.g = this;
    c.values = values;
    for (int t = 0; t < this->n_tensors; t++)
        if (!this->tensors[t].is_input) eval_tensor(&c, &this->tensors[t], values[t], 0, 0);
}
