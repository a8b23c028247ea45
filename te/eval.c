/* te/eval.c: the reference interpreter (see TeProgram_eval in te.h).
 * Integer-typed expressions are evaluated in 64-bit integers (floor `/` and
 * `%`), everything else in double; reductions accumulate in double.
 *
 * Two evaluators of the same definition live here. TeProgram_evalDirect walks
 * the expression tree once per element. TeProgram_eval walks it once per run
 * of up to LANES elements along a tensor's last dimension and does the
 * arithmetic in plain loops over those lanes; every element gets the same
 * operations in the same order (a reduction still accumulates its terms one
 * by one in the order of its axes), so both give the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "te/te.h"

typedef struct Ctx {
    const TeProgram *g;
    double **values;
    int64_t var[TE_MAX_VARS];
} Ctx;

/* The operators, one value at a time: both evaluators below apply them. */
static int64_t int_op(int kind, int op, int64_t a, int64_t b) {
    if (kind == TE_CALL) return op == TE_FMAX ? (a > b ? a : b) : (a < b ? a : b);
    switch (op) {
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

static double call(int op, double a, double b) {
    switch (op) {
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
        return fmax(a, b);
    default:
        return fmin(a, b);
    }
}

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
    case TE_CALL:
    case TE_BIN:
        return int_op(e->kind, e->op, eval_int(c, e->kid[0]), eval_int(c, e->kid[1]));
    default:
        return 0; /* not integer-typed */
    }
}

static int eval_bool(Ctx *c, const TeExpr *e) {
    if (e->kind == TE_NOT) return !eval_bool(c, e->kid[0]);
    if (e->op == TE_AND) return eval_bool(c, e->kid[0]) && eval_bool(c, e->kid[1]);
    if (e->op == TE_OR) return eval_bool(c, e->kid[0]) || eval_bool(c, e->kid[1]);
    return te_compare(e->op, eval_num(c, e->kid[0]), eval_num(c, e->kid[1]));
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
        return call(e->op, a, e->op == TE_FMAX || e->op == TE_FMIN ? eval_num(c, e->kid[1]) : 0.0);
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

/* A constant tensor's elements, as the program holds them. */
static void fill_const(const TeProgram *g, int t, double *out) {
    memcpy(out, g->tensors[t].values, sizeof(double) * (size_t)TeProgram_numel(g, t));
}

void TeProgram_evalDirect(const TeProgram *this, double **values) {
    static __thread Ctx c;
    memset(&c, 0, sizeof c);
    c.g = this;
    c.values = values;
    for (int t = 0; t < this->n_tensors; t++)
        if (this->tensors[t].is_const)
            fill_const(this, t, values[t]);
        else if (!this->tensors[t].is_input)
            eval_tensor(&c, &this->tensors[t], values[t], 0, 0);
}

/* ---- the lane evaluator ----
 * A lane vector holds one value per element of the run: the run's variable
 * (vvar) is base + lane, every other variable is the scalar var[]. Each
 * evaluator writes its result into out and says what shape it has:
 *   VEC      every active lane is set;
 *   UNIFORM  it does not depend on the lane: only out[0] is set;
 *   AFFINE   (integers only) lane l is out[0] + l * out[1], as an index
 *            that moves with the run's variable, so an access along it
 *            reads a strided row without a vector of offsets.
 * Where a condition (if, &&, ||) lets only some elements evaluate an operand,
 * the operand gets a mask and touches only the active lanes, so an access is
 * made exactly for the elements the direct walk makes it for. */
#define LANES 256

typedef union Lane {
    double f;
    int64_t i;
} Lane;

enum { VEC, UNIFORM, AFFINE };

typedef struct VCtx {
    const TeProgram *g;
    double **values;
    int64_t var[TE_MAX_VARS];
    int vvar;     /* the variable along the lanes, -1 for none */
    int64_t base; /* its value in lane 0 */
    int n;        /* lanes in this run */
    Lane *stack;  /* scratch vectors, LANES each, used as a stack */
    size_t top;
} VCtx;

/* Runs the statement for every active lane l (mask NULL: all of them). */
#define LANE_LOOP(c, mask, l, ...)                                                                                     \
    do {                                                                                                               \
        if (!(mask)) {                                                                                                 \
            for (int l = 0; l < (c)->n; l++) {                                                                         \
                __VA_ARGS__;                                                                                           \
            }                                                                                                          \
        } else {                                                                                                       \
            for (int l = 0; l < (c)->n; l++)                                                                           \
                if ((mask)[l].i) {                                                                                     \
                    __VA_ARGS__;                                                                                       \
                }                                                                                                      \
        }                                                                                                              \
    } while (0)

static Lane *push(VCtx *c) {
    Lane *p = c->stack + c->top;
    c->top += LANES;
    return p;
}

static int any_lane(const VCtx *c, const Lane *mask) {
    if (!mask) return 1;
    for (int l = 0; l < c->n; l++)
        if (mask[l].i) return 1;
    return 0;
}

static int vnum(VCtx *c, const TeExpr *e, const Lane *mask, Lane *out);
static int vbool(VCtx *c, const TeExpr *e, const Lane *mask, Lane *out);
static int vint(VCtx *c, const TeExpr *e, const Lane *mask, Lane *out);

/* Makes an integer result of the given shape a VEC. */
static void ivec(VCtx *c, const Lane *mask, Lane *v, int shape) {
    int64_t s = v[0].i, st = shape == AFFINE ? v[1].i : 0;
    if (shape != VEC) LANE_LOOP(c, mask, l, v[l].i = s + l * st);
}

/* Makes a float result a VEC. */
static void fvec(VCtx *c, const Lane *mask, Lane *v, int shape) {
    double s = v[0].f;
    if (shape != VEC) LANE_LOOP(c, mask, l, v[l].f = s);
}

/* m = the active lanes where cond is (want != 0) */
static void submask(VCtx *c, const Lane *mask, const Lane *cond, int want, Lane *m) {
    for (int l = 0; l < c->n; l++)
        m[l].i = (!mask || mask[l].i) && (cond[l].i != 0) == (want != 0);
}

/* Evaluates if(kid0, kid1, kid2) with the branch evaluator f (vint or vnum). */
static int vif(VCtx *c, const TeExpr *e, const Lane *mask, Lane *out,
               int (*f)(VCtx *, const TeExpr *, const Lane *, Lane *)) {
    size_t top = c->top;
    Lane *cond = push(c);
    int shape;
    if (vbool(c, e->kid[0], mask, cond) == UNIFORM) {
        shape = f(c, e->kid[cond[0].i ? 1 : 2], mask, out);
    } else {
        Lane *m = push(c), *b = push(c);
        void (*vec)(VCtx *, const Lane *, Lane *, int) = f == vint ? ivec : fvec;
        submask(c, mask, cond, 1, m);
        if (any_lane(c, m)) vec(c, m, out, f(c, e->kid[1], m, out));
        submask(c, mask, cond, 0, m);
        if (any_lane(c, m)) vec(c, m, b, f(c, e->kid[2], m, b));
        LANE_LOOP(c, mask, l, if (!cond[l].i) out[l] = b[l]);
        shape = VEC;
    }
    c->top = top;
    return shape;
}

static int vint(VCtx *c, const TeExpr *e, const Lane *mask, Lane *out) {
    switch (e->kind) {
    case TE_NUM:
        out[0].i = e->inum;
        return UNIFORM;
    case TE_VAR:
        if (e->var != c->vvar) {
            out[0].i = c->var[e->var];
            return UNIFORM;
        }
        out[0].i = c->base, out[1].i = 1;
        return AFFINE;
    case TE_NEG: {
        int s = vint(c, e->kid[0], mask, out);
        if (s == VEC)
            LANE_LOOP(c, mask, l, out[l].i = -out[l].i);
        else
            out[0].i = -out[0].i, out[1].i = -out[1].i;
        return s;
    }
    case TE_IF:
        return vif(c, e, mask, out, vint);
    case TE_CALL:
    case TE_BIN: {
        size_t top = c->top;
        Lane *b = push(c);
        int sa = vint(c, e->kid[0], mask, out), sb = vint(c, e->kid[1], mask, b), shape;
        int kind = e->kind, op = e->op;
        if (sa == UNIFORM && sb == UNIFORM) {
            out[0].i = int_op(kind, op, out[0].i, b[0].i);
            shape = UNIFORM;
        } else if (kind == TE_BIN && (op == TE_ADD || op == TE_SUB) && sa != VEC && sb != VEC) {
            int64_t sign = op == TE_ADD ? 1 : -1,
                    st = (sa == AFFINE ? out[1].i : 0) + sign * (sb == AFFINE ? b[1].i : 0);
            out[0].i += sign * b[0].i;
            out[1].i = st;
            shape = AFFINE;
        } else if (kind == TE_BIN && op == TE_MUL && sa != VEC && sb != VEC && (sa == UNIFORM || sb == UNIFORM)) {
            int64_t k = sa == UNIFORM ? out[0].i : b[0].i;
            const Lane *a = sa == UNIFORM ? b : out;
            int64_t s = a[0].i * k, st = a[1].i * k;
            out[0].i = s, out[1].i = st;
            shape = AFFINE;
        } else {
            ivec(c, mask, out, sa);
            ivec(c, mask, b, sb);
            LANE_LOOP(c, mask, l, out[l].i = int_op(kind, op, out[l].i, b[l].i));
            shape = VEC;
        }
        c->top = top;
        return shape;
    }
    default:
        out[0].i = 0; /* not integer-typed */
        return UNIFORM;
    }
}

/* Conditions: 0 or 1 in .i, shape VEC or UNIFORM. */
static int vbool(VCtx *c, const TeExpr *e, const Lane *mask, Lane *out) {
    if (e->kind == TE_NOT) {
        int s = vbool(c, e->kid[0], mask, out);
        if (s == UNIFORM)
            out[0].i = !out[0].i;
        else
            LANE_LOOP(c, mask, l, out[l].i = !out[l].i);
        return s;
    }
    size_t top = c->top;
    Lane *b = push(c);
    int shape;
    if (e->op == TE_AND || e->op == TE_OR) {
        /* the right operand is evaluated only where the left one does not decide */
        int and = e->op == TE_AND;
        if (vbool(c, e->kid[0], mask, out) == UNIFORM) {
            shape = (out[0].i != 0) == and? vbool(c, e->kid[1], mask, out) : UNIFORM;
        } else {
            Lane *m = push(c);
            submask(c, mask, out, and, m);
            if (any_lane(c, m)) {
                int sb = vbool(c, e->kid[1], m, b);
                LANE_LOOP(c, m, l, out[l].i = b[sb == UNIFORM ? 0 : l].i);
            }
            shape = VEC;
        }
    } else {
        int sa = vnum(c, e->kid[0], mask, out), sb = vnum(c, e->kid[1], mask, b), op = e->op;
        if (sa == UNIFORM && sb == UNIFORM) {
            out[0].i = te_compare(op, out[0].f, b[0].f);
            shape = UNIFORM;
        } else {
            fvec(c, mask, out, sa);
            fvec(c, mask, b, sb);
            LANE_LOOP(c, mask, l, out[l].i = te_compare(op, out[l].f, b[l].f));
            shape = VEC;
        }
    }
    c->top = top;
    return shape;
}

static int vaccess(VCtx *c, const TeExpr *e, const Lane *mask, Lane *out) {
    const TeTensor *t = &c->g->tensors[e->tensor];
    const double *src = c->values[e->tensor];
    size_t top = c->top;
    Lane *off = push(c), *idx = push(c);
    int shape = UNIFORM;
    off[0].i = 0, off[1].i = 0;
    for (int d = 0; d < t->ndim; d++) {
        int si = vint(c, e->kid[d], mask, idx);
        int64_t n = t->shape[d];
        if (shape != VEC && si != VEC) {
            off[0].i = off[0].i * n + idx[0].i;
            off[1].i = off[1].i * n + (si == AFFINE ? idx[1].i : 0);
            if (si == AFFINE) shape = AFFINE;
        } else {
            ivec(c, mask, off, shape);
            ivec(c, mask, idx, si);
            LANE_LOOP(c, mask, l, off[l].i = off[l].i * n + idx[l].i);
            shape = VEC;
        }
    }
    if (shape == AFFINE && off[1].i == 0) shape = UNIFORM;
    if (shape == UNIFORM) {
        out[0].f = src[off[0].i];
    } else if (shape == AFFINE) {
        const double *p = src + off[0].i;
        int64_t st = off[1].i;
        if (st == 1 && !mask)
            memcpy(out, p, (size_t)c->n * sizeof *out);
        else
            LANE_LOOP(c, mask, l, out[l].f = p[l * st]);
        shape = VEC;
    } else {
        LANE_LOOP(c, mask, l, out[l].f = src[off[l].i]);
    }
    c->top = top;
    return shape;
}

/* Accumulates the reduction's terms over its axes from axis on, in the order
 * of the direct walk, into acc; *shape tracks whether acc is still uniform. */
static void vreduce(VCtx *c, const TeExpr *e, int axis, const Lane *mask, Lane *acc, int *shape, Lane *x) {
    if (axis == e->n_axes) {
        int sx = vnum(c, e->kid[0], mask, x), op = e->op;
        if (*shape == UNIFORM && sx == UNIFORM) {
            double v = x[0].f, a = acc[0].f;
            acc[0].f = op == TE_SUM ? a + v : op == TE_MAX_OVER ? (v > a ? v : a) : (v < a ? v : a);
            return;
        }
        fvec(c, mask, acc, *shape);
        *shape = VEC;
        if (sx == UNIFORM) {
            double v = x[0].f;
            if (op == TE_SUM)
                LANE_LOOP(c, mask, l, acc[l].f += v);
            else if (op == TE_MAX_OVER)
                LANE_LOOP(c, mask, l, acc[l].f = v > acc[l].f ? v : acc[l].f);
            else
                LANE_LOOP(c, mask, l, acc[l].f = v < acc[l].f ? v : acc[l].f);
        } else if (op == TE_SUM) {
            LANE_LOOP(c, mask, l, acc[l].f += x[l].f);
        } else if (op == TE_MAX_OVER) {
            LANE_LOOP(c, mask, l, acc[l].f = x[l].f > acc[l].f ? x[l].f : acc[l].f);
        } else {
            LANE_LOOP(c, mask, l, acc[l].f = x[l].f < acc[l].f ? x[l].f : acc[l].f);
        }
        return;
    }
    int v = e->axes[axis];
    for (int64_t i = 0; i < c->g->vars[v].extent; i++) {
        c->var[v] = i;
        vreduce(c, e, axis + 1, mask, acc, shape, x);
    }
}

/* Floats: shape VEC or UNIFORM. */
static int vnum(VCtx *c, const TeExpr *e, const Lane *mask, Lane *out) {
    if (e->type == TE_TINT) {
        int s = vint(c, e, mask, out);
        if (s == UNIFORM) {
            out[0].f = (double)out[0].i;
            return UNIFORM;
        }
        ivec(c, mask, out, s);
        LANE_LOOP(c, mask, l, out[l].f = (double)out[l].i);
        return VEC;
    }
    switch (e->kind) {
    case TE_NUM:
        out[0].f = e->num;
        return UNIFORM;
    case TE_NEG: {
        int s = vnum(c, e->kid[0], mask, out);
        if (s == UNIFORM)
            out[0].f = -out[0].f;
        else
            LANE_LOOP(c, mask, l, out[l].f = -out[l].f);
        return s;
    }
    case TE_IF:
        return vif(c, e, mask, out, vnum);
    case TE_ACCESS:
        return vaccess(c, e, mask, out);
    case TE_CALL:
    case TE_BIN: {
        size_t top = c->top;
        Lane *b = push(c);
        int two = e->kind == TE_BIN || e->op == TE_FMAX || e->op == TE_FMIN;
        int sa = vnum(c, e->kid[0], mask, out), sb = two ? vnum(c, e->kid[1], mask, b) : UNIFORM, op = e->op;
        if (!two) b[0].f = 0;
        int shape = sa == UNIFORM && sb == UNIFORM ? UNIFORM : VEC;
        if (e->kind == TE_CALL) {
            if (shape == UNIFORM) {
                out[0].f = call(op, out[0].f, b[0].f);
            } else {
                fvec(c, mask, out, sa);
                fvec(c, mask, b, sb);
                LANE_LOOP(c, mask, l, out[l].f = call(op, out[l].f, b[l].f));
            }
        } else if (shape == UNIFORM) {
            double x = out[0].f, y = b[0].f;
            out[0].f = op == TE_ADD ? x + y : op == TE_SUB ? x - y : op == TE_MUL ? x * y : x / y;
        } else if (sa == UNIFORM || sb == UNIFORM) {
            /* one side uniform: keep it in a scalar, in its place in the operation */
            double k = sa == UNIFORM ? out[0].f : b[0].f;
            const Lane *v = sa == UNIFORM ? b : out;
            int left = sa == UNIFORM;
            if (op == TE_ADD)
                LANE_LOOP(c, mask, l, out[l].f = left ? k + v[l].f : v[l].f + k);
            else if (op == TE_MUL)
                LANE_LOOP(c, mask, l, out[l].f = left ? k * v[l].f : v[l].f * k);
            else if (op == TE_SUB)
                LANE_LOOP(c, mask, l, out[l].f = left ? k - v[l].f : v[l].f - k);
            else
                LANE_LOOP(c, mask, l, out[l].f = left ? k / v[l].f : v[l].f / k);
        } else if (op == TE_ADD) {
            LANE_LOOP(c, mask, l, out[l].f += b[l].f);
        } else if (op == TE_MUL) {
            LANE_LOOP(c, mask, l, out[l].f *= b[l].f);
        } else if (op == TE_SUB) {
            LANE_LOOP(c, mask, l, out[l].f -= b[l].f);
        } else {
            LANE_LOOP(c, mask, l, out[l].f /= b[l].f);
        }
        c->top = top;
        return shape;
    }
    case TE_REDUCE: {
        size_t top = c->top;
        Lane *x = push(c);
        out[0].f = e->op == TE_SUM ? 0.0 : e->op == TE_MAX_OVER ? -INFINITY : INFINITY;
        int shape = UNIFORM;
        vreduce(c, e, 0, mask, out, &shape, x);
        c->top = top;
        return shape;
    }
    default:
        out[0].f = 0; /* TE_VAR is integer-typed; TE_NOT is a condition */
        return UNIFORM;
    }
}

static int depth(const TeExpr *e) {
    int d = 0;
    for (int k = 0; k < e->n_kids; k++) {
        int x = depth(e->kid[k]);
        if (x > d) d = x;
    }
    return d + 1;
}

static void vtensor(VCtx *c, const TeTensor *t, double *out, int d, int64_t off) {
    if (d >= t->ndim - 1) {
        int64_t len = t->ndim ? t->shape[d] : 1;
        c->vvar = t->ndim ? t->axes[d] : -1;
        Lane *v = push(c);
        for (int64_t base = 0; base < len; base += LANES) {
            c->base = base;
            c->n = (int)(len - base < LANES ? len - base : LANES);
            int s = vnum(c, t->body, NULL, v);
            double *o = out + off * len + base;
            for (int l = 0; l < c->n; l++)
                o[l] = te_round_to(t->dtype, v[s == UNIFORM ? 0 : l].f);
        }
        c->top -= LANES;
        return;
    }
    for (int64_t i = 0; i < t->shape[d]; i++) {
        c->var[t->axes[d]] = i;
        vtensor(c, t, out, d + 1, off * t->shape[d] + i);
    }
}

void TeProgram_eval(const TeProgram *this, double **values) {
    int deep = 1;
    for (int t = 0; t < this->n_tensors; t++)
        if (te_is_defined(&this->tensors[t])) {
            int d = depth(this->tensors[t].body);
            if (d > deep) deep = d;
        }
    /* at most three scratch vectors live per level of the tree, and one for the result */
    VCtx *c = calloc(1, sizeof *c);
    Lane *stack = c ? malloc(((size_t)deep * 3 + 1) * LANES * sizeof *stack) : NULL;
    if (!stack) abort(); /* out of memory, as in StrBuf */
    c->g = this;
    c->values = values;
    c->stack = stack;
    for (int t = 0; t < this->n_tensors; t++)
        if (this->tensors[t].is_const)
            fill_const(this, t, values[t]);
        else if (!this->tensors[t].is_input)
            vtensor(c, &this->tensors[t], values[t], 0, 0);
    free(stack);
    free(c);
}
