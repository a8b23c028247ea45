/* te/bounds.c: proves every access of a defined tensor in bounds.
 *
 * Interval arithmetic over the iteration ranges, with one refinement that
 * makes zero padding provable: an index expression that is linear in the
 * variables (sum of constant * variable, plus a constant) is matched against
 * the linear facts learnt from the enclosing conditions. The condition of
 * `if(y + r >= 1 && y + r < 57, X[y + r - 1], 0)` gives the fact
 * "y + r in [1, 56]" inside the then-branch, so `y + r - 1` is in [0, 55]
 * there. A fact on a single variable also narrows that variable's range.
 * The same walk proves every integer divisor non-zero. */
#include <stdio.h>
#include <string.h>

#include "te/te.h"

#define BIG ((int64_t)1 << 60)
#define MAX_TERMS TE_LIN_TERMS
#define MAX_FACTS 32

typedef TeLin Lin;

typedef struct Fact {
    Lin terms; /* c == 0 */
    int64_t lo, hi;
} Fact;

typedef struct Env {
    int64_t lo[TE_MAX_VARS], hi[TE_MAX_VARS];
    Fact facts[MAX_FACTS];
    int n_facts;
} Env;

static int64_t clamp(__int128 v) { return v > BIG ? BIG : v < -BIG ? -BIG : (int64_t)v; }

/* ---- linear forms ----------------------------------------------------------- */

static void lin_add_term(Lin *l, int var, int64_t coef) {
    for (int i = 0; i < l->n; i++)
        if (l->var[i] == var) {
            l->coef[i] += coef;
            return;
        }
    l->var[l->n] = var, l->coef[l->n] = coef, l->n++;
}

/* Sorted by variable, zero coefficients dropped, so equal forms compare equal. */
static void lin_normalise(Lin *l) {
    int k = 0;
    for (int i = 0; i < l->n; i++)
        if (l->coef[i]) l->var[k] = l->var[i], l->coef[k] = l->coef[i], k++;
    l->n = k;
    for (int i = 1; i < l->n; i++)
        for (int j = i; j > 0 && l->var[j - 1] > l->var[j]; j--) {
            int tv = l->var[j];
            int64_t tc = l->coef[j];
            l->var[j] = l->var[j - 1], l->coef[j] = l->coef[j - 1];
            l->var[j - 1] = tv, l->coef[j - 1] = tc;
        }
}

/* 1 when e is linear (then *l holds it, normalised); 0 otherwise. */
static int lin_of(const TeExpr *e, Lin *l) {
    memset(l, 0, sizeof *l);
    if (e->type != TE_TINT) return 0;
    switch (e->kind) {
    case TE_NUM:
        l->c = e->inum;
        return 1;
    case TE_VAR:
        lin_add_term(l, e->var, 1);
        return 1;
    case TE_NEG: {
        if (!lin_of(e->kid[0], l)) return 0;
        for (int i = 0; i < l->n; i++)
            l->coef[i] = -l->coef[i];
        l->c = -l->c;
        return 1;
    }
    case TE_BIN: {
        Lin a, b;
        if (e->op != TE_ADD && e->op != TE_SUB && e->op != TE_MUL) return 0;
        if (!lin_of(e->kid[0], &a) || !lin_of(e->kid[1], &b)) return 0;
        if (e->op == TE_MUL) {
            if (a.n && b.n) return 0;
            Lin *v = a.n ? &a : &b;
            int64_t k = a.n ? b.c : a.c;
            *l = *v;
            for (int i = 0; i < l->n; i++)
                l->coef[i] *= k;
            l->c *= k;
        } else {
            int64_t s = e->op == TE_SUB ? -1 : 1;
            *l = a;
            if (l->n + b.n > MAX_TERMS) return 0;
            for (int i = 0; i < b.n; i++)
                lin_add_term(l, b.var[i], s * b.coef[i]);
            l->c += s * b.c;
        }
        lin_normalise(l);
        return 1;
    }
    default:
        return 0;
    }
}

int te_linear(const TeExpr *e, TeLin *out) { return lin_of(e, out); }

static int lin_same(const Lin *a, const Lin *b, int64_t sign) {
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (a->var[i] != b->var[i] || a->coef[i] != sign * b->coef[i]) return 0;
    return 1;
}

/* ---- intervals -------------------------------------------------------------- */

static int64_t fdiv(int64_t a, int64_t b) { return te_floordiv(a, b); }

static void interval(const Env *env, const TeExpr *e, int64_t *lo, int64_t *hi);

static void lin_interval(const Env *env, const Lin *l, int64_t *lo, int64_t *hi) {
    __int128 a = l->c, b = l->c;
    for (int i = 0; i < l->n; i++) {
        __int128 x = (__int128)l->coef[i] * env->lo[l->var[i]], y = (__int128)l->coef[i] * env->hi[l->var[i]];
        a += x < y ? x : y;
        b += x < y ? y : x;
    }
    *lo = clamp(a), *hi = clamp(b);
    for (int f = 0; f < env->n_facts; f++) {
        const Fact *F = &env->facts[f];
        int64_t flo = -BIG, fhi = BIG;
        if (lin_same(l, &F->terms, 1))
            flo = F->lo, fhi = F->hi;
        else if (lin_same(l, &F->terms, -1))
            flo = -F->hi, fhi = -F->lo;
        else
            continue;
        flo = clamp((__int128)flo + l->c), fhi = clamp((__int128)fhi + l->c);
        if (flo > *lo) *lo = flo;
        if (fhi < *hi) *hi = fhi;
    }
}

static void corners(int64_t al, int64_t ah, int64_t bl, int64_t bh, int op, int64_t *lo, int64_t *hi) {
    int64_t a[2] = {al, ah}, b[2] = {bl, bh};
    *lo = BIG, *hi = -BIG;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            int64_t v = op == TE_MUL ? clamp((__int128)a[i] * b[j]) : fdiv(a[i], b[j]);
            if (v < *lo) *lo = v;
            if (v > *hi) *hi = v;
        }
}

static void narrow(Env *env, const TeExpr *cond, int positive);

static void interval(const Env *env, const TeExpr *e, int64_t *lo, int64_t *hi) {
    Lin l;
    if (lin_of(e, &l)) {
        lin_interval(env, &l, lo, hi);
        return;
    }
    int64_t al, ah, bl, bh;
    switch (e->kind) {
    case TE_NEG:
        interval(env, e->kid[0], &al, &ah);
        *lo = -ah, *hi = -al;
        return;
    case TE_BIN:
        interval(env, e->kid[0], &al, &ah);
        interval(env, e->kid[1], &bl, &bh);
        switch (e->op) {
        case TE_ADD:
            *lo = clamp((__int128)al + bl), *hi = clamp((__int128)ah + bh);
            return;
        case TE_SUB:
            *lo = clamp((__int128)al - bh), *hi = clamp((__int128)ah - bl);
            return;
        case TE_MUL:
            corners(al, ah, bl, bh, TE_MUL, lo, hi);
            return;
        case TE_DIV:
            /* a divisor that may be zero is reported by the walk; an empty one
             * (bl > bh: a branch its conditions rule out) has no corners to divide by */
            if (bl > bh || (bl <= 0 && bh >= 0)) break;
            corners(al, ah, bl, bh, TE_DIV, lo, hi);
            return;
        case TE_MOD:
            if (bl > 0) {
                if (bl == bh && fdiv(al, bl) == fdiv(ah, bl))
                    *lo = te_floormod(al, bl), *hi = te_floormod(ah, bl);
                else if (al >= 0 && ah < bl)
                    *lo = al, *hi = ah;
                else
                    *lo = 0, *hi = bh - 1;
                return;
            }
            if (bh < 0) {
                *lo = bl + 1, *hi = 0;
                return;
            }
            break;
        }
        break;
    case TE_CALL: /* integer max / min */
        interval(env, e->kid[0], &al, &ah);
        interval(env, e->kid[1], &bl, &bh);
        if (e->op == TE_FMAX)
            *lo = al > bl ? al : bl, *hi = ah > bh ? ah : bh;
        else
            *lo = al < bl ? al : bl, *hi = ah < bh ? ah : bh;
        return;
    case TE_IF: {
        Env t = *env, f = *env;
        narrow(&t, e->kid[0], 1);
        narrow(&f, e->kid[0], 0);
        interval(&t, e->kid[1], &al, &ah);
        interval(&f, e->kid[2], &bl, &bh);
        *lo = al < bl ? al : bl, *hi = ah > bh ? ah : bh;
        return;
    }
    default:
        break;
    }
    *lo = -BIG, *hi = BIG;
}

/* ---- facts from conditions -------------------------------------------------- */

static void add_fact(Env *env, Lin *terms, int64_t lo, int64_t hi) {
    if (terms->n == 0) return; /* a constant condition narrows nothing */
    if (terms->n == 1) {       /* k * v in [lo, hi] */
        int v = terms->var[0];
        int64_t k = terms->coef[0], vl, vh;
        if (k > 0)
            vl = lo <= -BIG ? -BIG : -fdiv(-lo, k), vh = hi >= BIG ? BIG : fdiv(hi, k);
        else
            vl = hi >= BIG ? -BIG : -fdiv(hi, -k), vh = lo <= -BIG ? BIG : fdiv(-lo, -k);
        if (vl > env->lo[v]) env->lo[v] = vl;
        if (vh < env->hi[v]) env->hi[v] = vh;
    }
    if (env->n_facts == MAX_FACTS) return;
    Fact *f = &env->facts[env->n_facts++];
    f->terms = *terms;
    f->lo = lo, f->hi = hi;
}

static void narrow(Env *env, const TeExpr *cond, int positive) {
    if (cond->kind == TE_NOT) {
        narrow(env, cond->kid[0], !positive);
        return;
    }
    if (cond->kind != TE_BIN) return;
    int op = cond->op;
    if ((op == TE_AND && positive) || (op == TE_OR && !positive)) {
        narrow(env, cond->kid[0], positive);
        narrow(env, cond->kid[1], positive);
        return;
    }
    if (op < TE_LT || op > TE_NE) return;
    Lin a, b;
    if (!lin_of(cond->kid[0], &a) || !lin_of(cond->kid[1], &b) || a.n + b.n > MAX_TERMS) return;
    for (int i = 0; i < b.n; i++)
        lin_add_term(&a, b.var[i], -b.coef[i]);
    a.c -= b.c;
    lin_normalise(&a);
    int64_t c = a.c; /* terms + c OP 0 */
    a.c = 0;
    if (!positive) {
        static const int NEG[] = {
            [TE_LT] = TE_GE, [TE_LE] = TE_GT, [TE_GT] = TE_LE, [TE_GE] = TE_LT, [TE_EQ] = TE_NE, [TE_NE] = TE_EQ};
        op = NEG[op];
    }
    switch (op) {
    case TE_LT:
        add_fact(env, &a, -BIG, -1 - c);
        break;
    case TE_LE:
        add_fact(env, &a, -BIG, -c);
        break;
    case TE_GT:
        add_fact(env, &a, 1 - c, BIG);
        break;
    case TE_GE:
        add_fact(env, &a, -c, BIG);
        break;
    case TE_EQ:
        add_fact(env, &a, -c, -c);
        break;
    default:
        break;
    }
}

/* ---- the walk --------------------------------------------------------------- */

static Status walk(const TeProgram *g, const Env *env, const TeExpr *e, int depth, char *err) {
    /* the parser keeps expressions TE_MAX_DEPTH deep; an Env is kilobytes:
     * an expression built some other way must not overflow the stack here */
    if (depth > TE_MAX_DEPTH)
        return tt_fail(err, "%s:%d:%d: the expression nests more than %d levels deep", g->file, e->line, e->col,
                       TE_MAX_DEPTH);
    switch (e->kind) {
    case TE_IF: {
        if (walk(g, env, e->kid[0], depth + 1, err)) return TT_ERR;
        Env t = *env, f = *env;
        narrow(&t, e->kid[0], 1);
        narrow(&f, e->kid[0], 0);
        return walk(g, &t, e->kid[1], depth + 1, err) || walk(g, &f, e->kid[2], depth + 1, err) ? TT_ERR : TT_OK;
    }
    case TE_BIN:
        if (walk(g, env, e->kid[0], depth + 1, err)) return TT_ERR;
        if (e->op == TE_AND || e->op == TE_OR) { /* the right side runs only when the left allows */
            Env r = *env;
            narrow(&r, e->kid[0], e->op == TE_AND);
            return walk(g, &r, e->kid[1], depth + 1, err);
        }
        if (walk(g, env, e->kid[1], depth + 1, err)) return TT_ERR;
        if ((e->op == TE_DIV || e->op == TE_MOD) && e->type == TE_TINT) {
            int64_t lo, hi;
            interval(env, e->kid[1], &lo, &hi);
            if (lo <= 0 && hi >= 0)
                return tt_fail(err, "%s:%d:%d: the divisor of '%s' ranges over [%lld, %lld], which includes 0", g->file,
                               e->line, e->col, e->op == TE_DIV ? "/" : "%", (long long)lo, (long long)hi);
        }
        return TT_OK;
    case TE_ACCESS: {
        const TeTensor *t = &g->tensors[e->tensor];
        for (int d = 0; d < e->n_kids; d++) {
            if (walk(g, env, e->kid[d], depth + 1, err)) return TT_ERR;
            int64_t lo, hi;
            interval(env, e->kid[d], &lo, &hi);
            if (lo < 0 || hi > t->shape[d] - 1) {
                char range[64];
                if (lo <= -BIG || hi >= BIG)
                    snprintf(range, sizeof range, "is unbounded");
                else
                    snprintf(range, sizeof range, "ranges over [%lld, %lld]", (long long)lo, (long long)hi);
                return tt_fail(err, "%s:%d:%d: access to %s may leave it: index %d of %d %s; valid is [0, %lld]",
                               g->file, e->line, e->col, t->name, d + 1, t->ndim, range, (long long)(t->shape[d] - 1));
            }
        }
        return TT_OK;
    }
    default:
        for (int i = 0; i < e->n_kids; i++)
            if (walk(g, env, e->kid[i], depth + 1, err)) return TT_ERR;
        return TT_OK;
    }
}

Status te_check_bounds(const TeProgram *this, int tensor, char *err) {
    static __thread Env env; /* large: keep it off the stack */
    memset(&env, 0, sizeof env);
    for (int v = 0; v < this->n_vars; v++)
        env.lo[v] = 0, env.hi[v] = this->vars[v].extent - 1;
    return walk(this, &env, this->tensors[tensor].body, 0, err);
}
