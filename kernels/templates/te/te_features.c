/* kernels/templates/te/te_features.c: program features of a loop nest (see te_features.h).
 *
 * A statement's axis values and guard are text written by the lowering
 * (te_lower.c) over the enclosing loop variables; they are parsed back into
 * small integer expression trees (Ix) whose leaves are loop levels. The
 * statement's value (the stage's .te expression) is walked with each stage
 * variable bound to its axis tree, which gives every access's index as a tree
 * over the loops: point values give strides, interval arithmetic gives the
 * region a scope of loops touches. */
#include "kernels/templates/te/te_features.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_TUPLES 16
#define ELEM_BYTES 4.0
#define LINE_BYTES 64.0
#define BIG ((int64_t)1 << 40)

/* ---- integer expressions over the enclosing loops -------------------------- */

typedef enum {
    IX_CONST,
    IX_LOOP,
    IX_ADD,
    IX_SUB,
    IX_MUL,
    IX_DIV,
    IX_MOD,
    IX_MIN,
    IX_MAX,
    IX_NEG,
    IX_SELECT,
    IX_CMP,
    IX_AND,
    IX_OR,
    IX_NOT
} IxKind;

typedef struct IxNode {
    IxKind kind;
    int op; /* IX_CMP: TeBinOp */
    int a, b, c;
    int64_t v;     /* IX_CONST: value; IX_LOOP: level */
    uint64_t uses; /* loop levels used */
} IxNode;

typedef struct Ix {
    IxNode *n;
    int len, cap;
} Ix;

static int ix_new(Ix *ar, IxKind kind, int a, int b, int c, int64_t v) {
    if (ar->len == ar->cap) {
        ar->cap = ar->cap ? 2 * ar->cap : 256;
        ar->n = realloc(ar->n, sizeof(IxNode) * (size_t)ar->cap);
        if (!ar->n) abort();
    }
    IxNode *n = &ar->n[ar->len];
    *n = (IxNode){.kind = kind, .a = a, .b = b, .c = c, .v = v};
    if (kind == IX_LOOP) n->uses = (uint64_t)1 << v;
    if (a >= 0 && kind != IX_CONST && kind != IX_LOOP) n->uses |= ar->n[a].uses;
    if (b >= 0) n->uses |= ar->n[b].uses;
    if (c >= 0) n->uses |= ar->n[c].uses;
    return ar->len++;
}

static int64_t floordiv(int64_t a, int64_t b) { return b == 0 ? 0 : te_floordiv(a, b); }
static int64_t floormod(int64_t a, int64_t b) { return b == 0 ? 0 : te_floormod(a, b); }

/* Value of node i with loop level k at val[k]. */
static int64_t ix_point(const Ix *ar, int i, const int64_t *val) {
    const IxNode *n = &ar->n[i];
    switch (n->kind) {
    case IX_CONST:
        return n->v;
    case IX_LOOP:
        return val[n->v];
    case IX_NEG:
        return -ix_point(ar, n->a, val);
    case IX_NOT:
        return !ix_point(ar, n->a, val);
    case IX_SELECT:
        return ix_point(ar, n->a, val) ? ix_point(ar, n->b, val) : ix_point(ar, n->c, val);
    default:
        break;
    }
    int64_t x = ix_point(ar, n->a, val), y = ix_point(ar, n->b, val);
    switch (n->kind) {
    case IX_ADD:
        return x + y;
    case IX_SUB:
        return x - y;
    case IX_MUL:
        return x * y;
    case IX_DIV:
        return floordiv(x, y);
    case IX_MOD:
        return floormod(x, y);
    case IX_MIN:
        return x < y ? x : y;
    case IX_MAX:
        return x > y ? x : y;
    case IX_CMP:
        return te_compare(n->op, (double)x, (double)y); /* index values: exact in a double */
    case IX_AND:
        return x && y;
    default:
        return x || y;
    }
}

static int64_t min4(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t m = a < b ? a : b;
    m = m < c ? m : c;
    return m < d ? m : d;
}
static int64_t max4(int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t m = a > b ? a : b;
    m = m > c ? m : c;
    return m > d ? m : d;
}

/* Range [*lo, *hi] of node i with loop level k over [llo[k], lhi[k]]. */
static void ix_range(const Ix *ar, int i, const int64_t *llo, const int64_t *lhi, int64_t *lo, int64_t *hi) {
    const IxNode *n = &ar->n[i];
    int64_t a0, a1, b0, b1;
    switch (n->kind) {
    case IX_CONST:
        *lo = *hi = n->v;
        return;
    case IX_LOOP:
        *lo = llo[n->v], *hi = lhi[n->v];
        return;
    case IX_NEG:
        ix_range(ar, n->a, llo, lhi, &a0, &a1);
        *lo = -a1, *hi = -a0;
        return;
    case IX_CMP:
    case IX_AND:
    case IX_OR:
    case IX_NOT:
        *lo = 0, *hi = 1;
        return;
    case IX_SELECT:
        ix_range(ar, n->b, llo, lhi, &a0, &a1);
        ix_range(ar, n->c, llo, lhi, &b0, &b1);
        *lo = a0 < b0 ? a0 : b0, *hi = a1 > b1 ? a1 : b1;
        return;
    default:
        break;
    }
    ix_range(ar, n->a, llo, lhi, &a0, &a1);
    ix_range(ar, n->b, llo, lhi, &b0, &b1);
    switch (n->kind) {
    case IX_ADD:
        *lo = a0 + b0, *hi = a1 + b1;
        return;
    case IX_SUB:
        *lo = a0 - b1, *hi = a1 - b0;
        return;
    case IX_MUL:
        *lo = min4(a0 * b0, a0 * b1, a1 * b0, a1 * b1);
        *hi = max4(a0 * b0, a0 * b1, a1 * b0, a1 * b1);
        return;
    case IX_DIV:
        if (b0 == b1 && b0 > 0) {
            *lo = floordiv(a0, b0), *hi = floordiv(a1, b0);
        } else if (b0 > 0 || b1 < 0) {
            *lo = min4(floordiv(a0, b0), floordiv(a0, b1), floordiv(a1, b0), floordiv(a1, b1));
            *hi = max4(floordiv(a0, b0), floordiv(a0, b1), floordiv(a1, b0), floordiv(a1, b1));
        } else {
            *lo = -BIG, *hi = BIG;
        }
        return;
    case IX_MOD:
        if (b0 == b1 && b0 > 0 && floordiv(a0, b0) == floordiv(a1, b0)) {
            *lo = floormod(a0, b0), *hi = floormod(a1, b0);
        } else if (b0 > 0) {
            *lo = 0, *hi = b1 - 1;
        } else {
            *lo = -BIG, *hi = BIG;
        }
        return;
    case IX_MIN:
        *lo = a0 < b0 ? a0 : b0, *hi = a1 < b1 ? a1 : b1;
        return;
    default:
        *lo = a0 > b0 ? a0 : b0, *hi = a1 > b1 ? a1 : b1;
        return; /* IX_MAX */
    }
}

static int ix_equal(const Ix *ar, int x, int y) {
    if (x == y) return 1;
    if (x < 0 || y < 0) return 0;
    const IxNode *a = &ar->n[x], *b = &ar->n[y];
    if (a->kind != b->kind || a->op != b->op || a->uses != b->uses) return 0;
    if (a->kind == IX_CONST || a->kind == IX_LOOP) return a->v == b->v;
    return ix_equal(ar, a->a, b->a) && ix_equal(ar, a->b, b->b) && ix_equal(ar, a->c, b->c);
}

/* ---- the counts ----------------------------------------------------------------- */

/* float: mad addsub mul divmod cmp math other; int: the same seven; bool; select */
enum { C_MAD, C_ADDSUB, C_MUL, C_DIVMOD, C_CMP, C_MATH, C_OTHER };
#define C_INT 7
#define C_BOOL 14
#define C_SELECT 15

/* Operators of a parsed axis or guard tree (integers). */
static void count_ix(const Ix *ar, int i, double *cnt) {
    const IxNode *n = &ar->n[i];
    switch (n->kind) {
    case IX_CONST:
    case IX_LOOP:
        return;
    case IX_ADD:
    case IX_SUB: {
        int m = ar->n[n->a].kind == IX_MUL ? n->a : ar->n[n->b].kind == IX_MUL ? n->b : -1;
        if (m >= 0) {
            cnt[C_INT + C_MAD]++;
            count_ix(ar, ar->n[m].a, cnt);
            count_ix(ar, ar->n[m].b, cnt);
            count_ix(ar, m == n->a ? n->b : n->a, cnt);
            return;
        }
        cnt[C_INT + C_ADDSUB]++;
        break;
    }
    case IX_NEG:
        cnt[C_INT + C_ADDSUB]++;
        break;
    case IX_MUL:
        cnt[C_INT + C_MUL]++;
        break;
    case IX_DIV:
    case IX_MOD:
        cnt[C_INT + C_DIVMOD]++;
        break;
    case IX_MIN:
    case IX_MAX:
        cnt[C_INT + C_OTHER]++;
        break;
    case IX_CMP:
        cnt[C_INT + C_CMP]++;
        break;
    case IX_AND:
    case IX_OR:
    case IX_NOT:
        cnt[C_BOOL]++;
        break;
    case IX_SELECT:
        cnt[C_SELECT]++;
        break;
    }
    if (n->a >= 0) count_ix(ar, n->a, cnt);
    if (n->b >= 0) count_ix(ar, n->b, cnt);
    if (n->c >= 0) count_ix(ar, n->c, cnt);
}

/* ---- parsing the lowering's axis and guard text ---------------------------------- */

typedef struct Parser {
    const char *s;
    const LnNode *const *stack;
    int depth;
    Ix *ar;
    int bad;
} Parser;

static void skip(Parser *P) {
    while (*P->s == ' ')
        P->s++;
}

static int accept(Parser *P, const char *tok) {
    skip(P);
    size_t n = strlen(tok);
    if (strncmp(P->s, tok, n) != 0) return 0;
    /* "<" must not take the first character of "<=" (and so on) */
    if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!') && P->s[1] == '=') return 0;
    P->s += n;
    return 1;
}

static int p_or(Parser *P);

static int p_primary(Parser *P) {
    skip(P);
    if (accept(P, "(")) {
        int e = p_or(P);
        if (!accept(P, ")")) P->bad = 1;
        return e;
    }
    if (isdigit((unsigned char)*P->s)) {
        char *end;
        long long v = strtoll(P->s, &end, 10);
        P->s = end;
        return ix_new(P->ar, IX_CONST, -1, -1, -1, v);
    }
    if (isalpha((unsigned char)*P->s)) {
        const char *st = P->s;
        while (isalnum((unsigned char)*P->s) || *P->s == '_')
            P->s++;
        size_t len = (size_t)(P->s - st);
        for (int k = P->depth - 1; k >= 0; k--)
            if (strlen(P->stack[k]->var) == len && strncmp(P->stack[k]->var, st, len) == 0)
                return ix_new(P->ar, IX_LOOP, -1, -1, -1, k);
    }
    P->bad = 1;
    return ix_new(P->ar, IX_CONST, -1, -1, -1, 0);
}

static int p_unary(Parser *P) {
    if (accept(P, "-")) return ix_new(P->ar, IX_NEG, p_unary(P), -1, -1, 0);
    if (accept(P, "!")) return ix_new(P->ar, IX_NOT, p_unary(P), -1, -1, 0);
    return p_primary(P);
}

static int p_mul(Parser *P) {
    int e = p_unary(P);
    for (;;) {
        IxKind k = accept(P, "*") ? IX_MUL : accept(P, "/") ? IX_DIV : accept(P, "%") ? IX_MOD : IX_CONST;
        if (k == IX_CONST) return e;
        int r = p_unary(P);
        e = ix_new(P->ar, k, e, r, -1, 0);
    }
}

static int p_add(Parser *P) {
    int e = p_mul(P);
    for (;;) {
        IxKind k = accept(P, "+") ? IX_ADD : accept(P, "-") ? IX_SUB : IX_CONST;
        if (k == IX_CONST) return e;
        int r = p_mul(P);
        e = ix_new(P->ar, k, e, r, -1, 0);
    }
}

static int p_cmp(Parser *P) {
    int e = p_add(P);
    static const struct {
        const char *tok;
        int op;
    } OPS[] = {{"<=", TE_LE}, {">=", TE_GE}, {"==", TE_EQ}, {"!=", TE_NE}, {"<", TE_LT}, {">", TE_GT}};
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
        if (accept(P, OPS[i].tok)) {
            int r = p_add(P);
            e = ix_new(P->ar, IX_CMP, e, r, -1, 0);
            P->ar->n[e].op = OPS[i].op;
            return e;
        }
    return e;
}

static int p_and(Parser *P) {
    int e = p_cmp(P);
    while (accept(P, "&&")) {
        int r = p_cmp(P);
        e = ix_new(P->ar, IX_AND, e, r, -1, 0);
    }
    return e;
}

static int p_or(Parser *P) {
    int e = p_and(P);
    while (accept(P, "||")) {
        int r = p_and(P);
        e = ix_new(P->ar, IX_OR, e, r, -1, 0);
    }
    return e;
}

/* ---- one statement --------------------------------------------------------------- */

typedef struct Buf {
    int tensor, nd, read, write, n_tup;
    int tup[MAX_TUPLES][TE_MAX_DIMS];
    double reg[MAX_DEPTH + 1]; /* elements touched with loop levels >= k over their range */
    float f[TE_BUFFER_FEATURES];
    double lines;
} Buf;

/* A statement found by the first pass: where it is and what it touches. */
typedef struct StmtRef {
    const LnNode *node;
    const LnNode *stack[MAX_DEPTH];
    int depth;
    uint64_t tensors; /* bit t: the statement reads or writes program tensor t */
} StmtRef;

typedef struct Ctx {
    const LoopNest *ln;
    const TeDag *dag;
    const TeProgram *g;
    const StmtRef *refs;
    int n_refs, is_gpu;
    int64_t auto_unroll[TE_MAX_TENSORS]; /* per stage: its largest auto_unroll max step */
    double alloc_outer[TE_MAX_TENSORS];  /* per stage with a buffer of the nest: iterations of the loops around it */
    /* the statement being extracted */
    const StmtRef *ref;
    Ix ar;
    int env[TE_MAX_VARS];
    double cnt[16];
    int n_buf;
    Buf buf[TE_MAX_TENSORS];
    const char *bad_text; /* a text of the lowering that did not parse */
} Ctx;

static Buf *buf_of(Ctx *C, int tensor) {
    for (int i = 0; i < C->n_buf; i++)
        if (C->buf[i].tensor == tensor) return &C->buf[i];
    Buf *b = &C->buf[C->n_buf++];
    memset(b, 0, sizeof *b);
    b->tensor = tensor;
    b->nd = C->g->tensors[tensor].ndim;
    return b;
}

static int parse_ix(Ctx *C, const char *text);

/* Records an access; idx is in the tensor's coordinates. A buffer of the nest
 * holds a box of the tensor: its index is idx minus the box's base. */
static void add_access(Ctx *C, int tensor, const int *idx_in, int write) {
    Buf *b = buf_of(C, tensor);
    const LnBuffer *lb = &C->ln->buf[tensor];
    int idx[TE_MAX_DIMS];
    for (int d = 0; d < b->nd; d++) {
        idx[d] = idx_in[d];
        if (lb->scope != BUF_ARG && lb->base[d])
            idx[d] = ix_new(&C->ar, IX_SUB, idx[d], parse_ix(C, lb->base[d]), -1, 0);
    }
    if (write)
        b->write = 1;
    else
        b->read = 1;
    for (int t = 0; t < b->n_tup; t++) {
        int same = 1;
        for (int d = 0; d < b->nd && same; d++)
            same = ix_equal(&C->ar, b->tup[t][d], idx[d]);
        if (same) return;
    }
    if (b->n_tup == MAX_TUPLES) return;
    memcpy(b->tup[b->n_tup++], idx, sizeof(int) * (size_t)b->nd);
}

/* Index tree of an integer .te expression under the current bindings. */
static int ix_of_te(Ctx *C, const TeExpr *e) {
    Ix *ar = &C->ar;
    switch (e->kind) {
    case TE_NUM:
        return ix_new(ar, IX_CONST, -1, -1, -1, e->type == TE_TINT ? e->inum : (int64_t)e->num);
    case TE_VAR:
        return C->env[e->var] >= 0 ? C->env[e->var] : ix_new(ar, IX_CONST, -1, -1, -1, 0);
    case TE_NEG:
        return ix_new(ar, IX_NEG, ix_of_te(C, e->kid[0]), -1, -1, 0);
    case TE_NOT:
        return ix_new(ar, IX_NOT, ix_of_te(C, e->kid[0]), -1, -1, 0);
    case TE_IF: {
        int c = ix_of_te(C, e->kid[0]), a = ix_of_te(C, e->kid[1]), b = ix_of_te(C, e->kid[2]);
        return ix_new(ar, IX_SELECT, c, a, b, 0);
    }
    case TE_CALL: {
        int a = ix_of_te(C, e->kid[0]);
        if (e->op == TE_ABS) return ix_new(ar, IX_MAX, a, ix_new(ar, IX_NEG, a, -1, -1, 0), -1, 0);
        int b = e->n_kids > 1 ? ix_of_te(C, e->kid[1]) : a;
        return ix_new(ar, e->op == TE_FMIN ? IX_MIN : IX_MAX, a, b, -1, 0);
    }
    case TE_BIN: {
        int a = ix_of_te(C, e->kid[0]), b = ix_of_te(C, e->kid[1]);
        static const IxKind K[] = {IX_ADD, IX_SUB, IX_MUL, IX_DIV, IX_MOD, IX_CMP, IX_CMP,
                                   IX_CMP, IX_CMP, IX_CMP, IX_CMP, IX_AND, IX_OR};
        int n = ix_new(ar, K[e->op], a, b, -1, 0);
        if (K[e->op] == IX_CMP) ar->n[n].op = e->op;
        return n;
    }
    default: /* tensors hold floats: no access or reduction is an integer */
        return ix_new(ar, IX_CONST, -1, -1, -1, 0);
    }
}

static int is_mul(const TeExpr *e, TeType type) { return e->kind == TE_BIN && e->op == TE_MUL && e->type == type; }

static void visit(Ctx *C, const TeExpr *e);

/* A float or integer operator of kind k (C_*) on values of type t. */
static void count_op(Ctx *C, TeType t, int k) { C->cnt[(t == TE_TINT ? C_INT : 0) + k]++; }

static void visit_access(Ctx *C, const TeExpr *e) {
    int idx[TE_MAX_DIMS];
    for (int d = 0; d < e->n_kids; d++) {
        visit(C, e->kid[d]);
        idx[d] = ix_of_te(C, e->kid[d]);
    }
    if (C->g->tensors[e->tensor].is_const) return; /* a number of the code, not a buffer */
    int st = C->dag->stage_of[e->tensor];
    if (st < 0 || !C->ln->inlined[st]) {
        add_access(C, e->tensor, idx, 0);
        return;
    }
    /* an inlined stage: its value, with its axes bound to these indices */
    const TeTensor *t = &C->g->tensors[e->tensor];
    int saved[TE_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        saved[d] = C->env[t->axes[d]];
        C->env[t->axes[d]] = idx[d];
    }
    visit(C, t->body);
    for (int d = 0; d < t->ndim; d++)
        C->env[t->axes[d]] = saved[d];
}

/* Counts the operators of a value expression and records its accesses. */
static void visit(Ctx *C, const TeExpr *e) {
    switch (e->kind) {
    case TE_NUM:
    case TE_VAR:
    case TE_REDUCE: /* a POST reads the accumulator: the stage's own element */
        return;
    case TE_ACCESS:
        visit_access(C, e);
        return;
    case TE_NEG:
        count_op(C, e->type, C_ADDSUB);
        break;
    case TE_NOT:
        C->cnt[C_BOOL]++;
        break;
    case TE_IF:
        C->cnt[C_SELECT]++;
        break;
    case TE_CALL:
        count_op(C, e->type, e->type == TE_TFLOAT && e->op <= TE_ERF ? C_MATH : C_OTHER);
        break;
    case TE_BIN:
        switch (e->op) {
        case TE_ADD:
        case TE_SUB:
            if (is_mul(e->kid[0], e->type) || is_mul(e->kid[1], e->type)) {
                const TeExpr *m = is_mul(e->kid[0], e->type) ? e->kid[0] : e->kid[1];
                count_op(C, e->type, C_MAD);
                visit(C, m->kid[0]);
                visit(C, m->kid[1]);
                visit(C, m == e->kid[0] ? e->kid[1] : e->kid[0]);
                return;
            }
            count_op(C, e->type, C_ADDSUB);
            break;
        case TE_MUL:
            count_op(C, e->type, C_MUL);
            break;
        case TE_DIV:
        case TE_MOD:
            count_op(C, e->type, C_DIVMOD);
            break;
        case TE_AND:
        case TE_OR:
            C->cnt[C_BOOL]++;
            break;
        default:
            count_op(C, e->kid[0]->type, C_CMP);
            break;
        }
        break;
    }
    for (int i = 0; i < e->n_kids; i++)
        visit(C, e->kid[i]);
}

static double slog(double x) { return x < 0 ? -log2(1 - x) : log2(1 + x); }

/* Size of dimension d in memory: the box of a buffer of the nest, else the tensor's. */
static int64_t layout_dim(const Ctx *C, int tensor, int d) {
    const LnBuffer *b = &C->ln->buf[tensor];
    return b->scope != BUF_ARG && b->ext[d] > 0 ? b->ext[d] : C->g->tensors[tensor].shape[d];
}

/* Elements of b touched when loop levels >= level run over their ranges
 * (the others at 0): the bounding box of its accesses, clipped to the tensor. */
static double region(const Ctx *C, const Buf *b, int level, int64_t *span) {
    int64_t llo[MAX_DEPTH] = {0}, lhi[MAX_DEPTH] = {0};
    for (int k = level; k < C->ref->depth; k++)
        lhi[k] = C->ref->stack[k]->extent - 1;
    double elems = 1;
    for (int d = 0; d < b->nd; d++) {
        int64_t lo = BIG, hi = -BIG;
        for (int u = 0; u < b->n_tup; u++) {
            int64_t l, h;
            ix_range(&C->ar, b->tup[u][d], llo, lhi, &l, &h);
            if (l < lo) lo = l;
            if (h > hi) hi = h;
        }
        if (lo < 0) lo = 0;
        if (hi > layout_dim(C, b->tensor, d) - 1) hi = layout_dim(C, b->tensor, d) - 1;
        int64_t s = hi >= lo ? hi - lo + 1 : 1;
        if (span) span[d] = s;
        elems *= (double)s;
    }
    return elems;
}

/* Elements between consecutive iterations of loop level k in b (0: k does not move it). */
static int64_t stride_of(const Ctx *C, const Buf *b, int k) {
    int64_t v0[MAX_DEPTH] = {0}, v1[MAX_DEPTH] = {0};
    v1[k] = 1;
    int64_t best = 0;
    for (int u = 0; u < b->n_tup; u++) {
        int64_t inner = 1;
        for (int d = b->nd - 1; d >= 0; d--) {
            int i = b->tup[u][d];
            if (C->ar.n[i].uses >> k & 1) {
                int64_t c = ix_point(&C->ar, i, v1) - ix_point(&C->ar, i, v0);
                int64_t s = (c < 0 ? -c : c) * inner;
                if (s && (!best || s < best)) best = s;
                break;
            }
            inner *= layout_dim(C, b->tensor, d);
        }
    }
    return best;
}

/* Statements other than the current one under the loop at level k that touch tensor. */
static int serial_users(const Ctx *C, int k, int tensor) {
    int n = 0;
    for (int i = 0; i < C->n_refs; i++) {
        const StmtRef *r = &C->refs[i];
        if (r == C->ref || r->depth <= k || r->stack[k] != C->ref->stack[k]) continue;
        if (r->tensors >> tensor & 1) n++;
    }
    return n;
}

static void buffer_features(Ctx *C, Buf *b, double outer) {
    int depth = C->ref->depth;
    float *f = b->f;
    memset(f, 0, sizeof b->f);
    f[b->read && b->write ? TB_READ_WRITE : b->write ? TB_WRITE : TB_READ] = 1;
    double bytes = outer * ELEM_BYTES * b->n_tup;
    int64_t span[TE_MAX_DIMS];
    double unique = region(C, b, 0, span);
    /* lines: consecutive executions under loops that do not move the buffer hit the same element */
    double ratio = 1;
    int64_t s = 0;
    for (int k = depth - 1; k >= 0 && !s; k--) {
        s = stride_of(C, b, k);
        if (!s) ratio *= (double)C->ref->stack[k]->extent;
    }
    double lines = outer / ratio * fmin(1.0, (double)s * ELEM_BYTES / LINE_BYTES);
    if (lines < 1) lines = 1;
    /* unique lines: rows of contiguous elements of the touched box */
    double run = (double)span[b->nd - 1];
    for (int d = b->nd - 1; d > 0 && span[d] == layout_dim(C, b->tensor, d); d--)
        run *= (double)span[d - 1];
    double ulines = unique / run * ceil(run * ELEM_BYTES / LINE_BYTES);
    if (ulines < 1) ulines = 1;
    /* reuse, from the innermost loop out */
    int type = TB_REUSE_NONE;
    double dis_iter = 0, dis_bytes = 0, ct = 0;
    for (int k = depth - 1; k >= 0 && type == TB_REUSE_NONE; k--) {
        int64_t ext = C->ref->stack[k]->extent;
        int users = serial_users(C, k, b->tensor);
        if (ext > 1 && b->reg[k] == b->reg[k + 1])
            type = TB_REUSE_LOOP, ct = (double)ext;
        else if (users > 0)
            type = TB_REUSE_SERIAL, ct = users;
        else
            continue;
        dis_iter = 1;
        for (int j = k + 1; j < depth; j++)
            dis_iter *= (double)C->ref->stack[j]->extent;
        for (int i = 0; i < C->n_buf; i++)
            dis_bytes += C->buf[i].reg[k + 1] * ELEM_BYTES;
    }
    double div = ct > 1 ? ct : 1;
    f[TB_BYTES] = (float)bytes;
    f[TB_UNIQUE_BYTES] = (float)(unique * ELEM_BYTES);
    f[TB_LINES] = (float)lines;
    f[TB_UNIQUE_LINES] = (float)ulines;
    f[type] = 1;
    f[TB_REUSE_DIS_ITER] = (float)dis_iter;
    f[TB_REUSE_DIS_BYTES] = (float)dis_bytes;
    f[TB_REUSE_CT] = (float)ct;
    f[TB_BYTES_D_REUSE] = (float)(bytes / div);
    f[TB_UNIQUE_BYTES_D_REUSE] = (float)(unique * ELEM_BYTES / div);
    f[TB_LINES_D_REUSE] = (float)(lines / div);
    f[TB_UNIQUE_LINES_D_REUSE] = (float)(ulines / div);
    f[TB_STRIDE] = depth > 0 ? (float)stride_of(C, b, depth - 1) : 0;
    b->lines = lines;
}

static int cmp_buf(const void *x, const void *y) {
    const Buf *a = x, *b = y;
    if (a->lines != b->lines) return a->lines > b->lines ? -1 : 1;
    return a->tensor - b->tensor;
}

/* Annotation group at f (TF_VEC / TF_UNROLL / TF_PAR) for loops matching want. */
static void annotation(const Ctx *C, float *f, int want, uint64_t spatial, uint64_t reduce) {
    const StmtRef *r = C->ref;
    int inner = -1;
    double num = 0, prod = 1;
    for (int k = 0; k < r->depth; k++) {
        const LnNode *l = r->stack[k];
        int match = want == 0 ? l->ann == ANN_VECTORIZE : want == 1 ? l->unroll > 0 : l->ann == ANN_PARALLEL;
        if (!match) continue;
        num++;
        prod *= (double)l->extent;
        inner = k;
    }
    f[TA_NUM] = (float)num;
    f[TA_PROD] = num ? (float)prod : 0;
    f[TA_LEN] = inner >= 0 ? (float)r->stack[inner]->extent : 0;
    int pos = TP_NONE;
    if (inner >= 0) {
        int sp = spatial >> inner & 1, rd = reduce >> inner & 1;
        if (sp == rd) {
            pos = TP_MIXED;
        } else {
            /* the statement's loops of the same kind, outermost and innermost */
            uint64_t mine = sp ? spatial & ~reduce : reduce & ~spatial;
            int first = -1, last = -1;
            for (int k = 0; k < r->depth; k++)
                if (mine >> k & 1) {
                    if (first < 0) first = k;
                    last = k;
                }
            int base = sp ? TP_INNER_SPATIAL : TP_INNER_REDUCE;
            pos = inner == last ? base : inner == first ? base + 2 : base + 1;
        }
    }
    f[TA_POS + pos] = 1;
}

static void curve(const Ctx *C, double fpe, float *f) {
    int depth = C->ref->depth;
    double logc[MAX_DEPTH + 1], inten[MAX_DEPTH + 1], comp = fpe;
    if (fpe <= 0) return;
    for (int m = 0; m <= depth; m++) {
        int level = depth - m; /* loops >= level in scope */
        if (m) comp *= (double)C->ref->stack[level]->extent;
        double bytes = 0;
        for (int i = 0; i < C->n_buf; i++)
            bytes += C->buf[i].reg[level] * ELEM_BYTES;
        logc[m] = log2(comp);
        inten[m] = comp / (bytes > 0 ? bytes : 1);
    }
    for (int j = 0; j < TE_CURVE_POINTS; j++) {
        double t = logc[depth] * (j + 1) / TE_CURVE_POINTS;
        int m = 0;
        while (m < depth && logc[m] < t - 1e-9)
            m++;
        double v = inten[m];
        if (m > 0 && logc[m] > logc[m - 1])
            v = inten[m - 1] + (inten[m] - inten[m - 1]) * (t - logc[m - 1]) / (logc[m] - logc[m - 1]);
        f[j] = (float)v;
    }
}

/* Stage whose loop a loop variable is ("i3_7", "r2_0", ...: the digits after its letter). */
static int stage_of_var(const char *var) { return isdigit((unsigned char)var[1]) ? atoi(var + 1) : -1; }

/* The tree of a text of the lowering; on a text it did not write (a bug),
 * remembers it for the statement's error and gives 0. */
static int parse_ix(Ctx *C, const char *text) {
    Parser P = {text, C->ref->stack, C->ref->depth, &C->ar, 0};
    int e = p_or(&P);
    skip(&P);
    if (!P.bad && !*P.s) return e;
    if (!C->bad_text) C->bad_text = text;
    return ix_new(&C->ar, IX_CONST, -1, -1, -1, 0);
}

static Status parse_text(Ctx *C, const char *text, int *out, char *err) {
    *out = parse_ix(C, text);
    if (C->bad_text) return tt_fail(err, "features: cannot read the lowering's text '%s'", C->bad_text);
    return TT_OK;
}

static Status statement(Ctx *C, float *x, int *buffers, char *err) {
    const StmtRef *r = C->ref;
    const LnNode *n = r->node;
    const TeStage *ts = &C->dag->stages[n->stage];
    const TeTensor *t = &C->g->tensors[ts->tensor];
    C->ar.len = 0;
    C->n_buf = 0;
    C->bad_text = NULL;
    memset(C->cnt, 0, sizeof C->cnt);
    for (int v = 0; v < TE_MAX_VARS; v++)
        C->env[v] = -1;
    /* the axis values (computed once per execution) and the guard */
    int n_axes = n->part == LN_UPDATE ? ts->n_spatial + ts->n_reduce : ts->n_spatial;
    uint64_t spatial = 0, reduce = 0;
    for (int a = 0; a < n_axes; a++) {
        int ix;
        if (parse_text(C, n->axis[a], &ix, err) != TT_OK) return TT_ERR;
        count_ix(&C->ar, ix, C->cnt);
        int v = a < ts->n_spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial];
        C->env[v] = ix;
        if (a < ts->n_spatial)
            spatial |= C->ar.n[ix].uses;
        else
            reduce |= C->ar.n[ix].uses;
    }
    if (n->guard) {
        int ix;
        if (parse_text(C, n->guard, &ix, err) != TT_OK) return TT_ERR;
        count_ix(&C->ar, ix, C->cnt);
    }
    /* the value and the store */
    int own[TE_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++)
        own[d] = C->env[t->axes[d]];
    switch (n->part) {
    case LN_STORE:
        visit(C, t->body);
        break;
    case LN_INIT:
        break;
    case LN_UPDATE: {
        const TeExpr *body = ts->red->kid[0];
        if (ts->red->op != TE_SUM) {
            C->cnt[C_OTHER]++;
            visit(C, body);
        } else if (is_mul(body, TE_TFLOAT)) {
            C->cnt[C_MAD]++;
            visit(C, body->kid[0]);
            visit(C, body->kid[1]);
        } else {
            C->cnt[C_ADDSUB]++;
            visit(C, body);
        }
        add_access(C, ts->tensor, own, 0);
        break;
    }
    case LN_POST:
        visit(C, t->body);
        add_access(C, ts->tensor, own, 0);
        break;
    case LN_ALLOC: /* not a statement: walk() skips it */
        break;
    }
    add_access(C, ts->tensor, own, 1);
    if (C->bad_text) return tt_fail(err, "features: cannot read the lowering's text '%s'", C->bad_text);

    double outer = 1;
    for (int k = 0; k < r->depth; k++)
        outer *= (double)r->stack[k]->extent;
    memset(x, 0, sizeof(float) * TE_FEATURES);
    for (int i = 0; i < 16; i++)
        x[i] = (float)(C->cnt[i] * outer);
    annotation(C, x + TF_VEC, 0, spatial, reduce);
    annotation(C, x + TF_UNROLL, 1, spatial, reduce);
    annotation(C, x + TF_PAR, 2, spatial, reduce);
    x[TF_IS_GPU] = (float)C->is_gpu;
    for (int i = TF_BLOCK_X; i <= TF_VTHREAD && C->is_gpu; i++)
        x[i] = 1;
    for (int k = 0; k < r->depth; k++)
        if (r->stack[k]->bind) x[TF_BLOCK_X + r->stack[k]->bind - 1] = (float)r->stack[k]->extent;

    for (int i = 0; i < C->n_buf; i++)
        for (int k = 0; k <= r->depth; k++)
            C->buf[i].reg[k] = region(C, &C->buf[i], k, NULL);
    for (int i = 0; i < C->n_buf; i++)
        buffer_features(C, &C->buf[i], outer);
    double fpe = 2 * C->cnt[C_MAD];
    for (int i = C_ADDSUB; i <= C_OTHER; i++)
        fpe += C->cnt[i];
    curve(C, fpe, x + TF_CURVE);
    qsort(C->buf, (size_t)C->n_buf, sizeof(Buf), cmp_buf);
    for (int i = 0; i < TE_FEATURE_BUFFERS; i++) {
        buffers[i] = i < C->n_buf ? C->buf[i].tensor : -1;
        if (i < C->n_buf) memcpy(x + TF_BUF + i * TE_BUFFER_FEATURES, C->buf[i].f, sizeof C->buf[i].f);
    }

    if (C->ln->buf[ts->tensor].scope != BUF_ARG || !t->is_output) {
        double size = ELEM_BYTES, allocs = C->alloc_outer[n->stage] > 0 ? C->alloc_outer[n->stage] : 1;
        for (int d = 0; d < t->ndim; d++)
            size *= (double)layout_dim(C, ts->tensor, d);
        x[TF_ALLOC_SIZE] = (float)size;
        x[TF_ALLOC_PROD] = (float)(size * allocs);
        x[TF_ALLOC_OUTER_PROD] = (float)allocs;
        x[TF_ALLOC_INNER_PROD] = (float)(outer / allocs);
    }
    x[TF_OUTER_PROD] = (float)outer;
    x[TF_NUM_LOOPS] = (float)r->depth;
    int64_t au = C->auto_unroll[n->stage];
    for (int k = 0; k < r->depth; k++) {
        int s = stage_of_var(r->stack[k]->var);
        if (s >= 0 && s < C->dag->n_stages && C->auto_unroll[s] > au) au = C->auto_unroll[s];
    }
    x[TF_AUTO_UNROLL] = (float)au;
    return TT_OK;
}

/* ---- the first pass: where the statements are ------------------------------------ */

static void tensors_read(const TeDag *dag, const LoopNest *ln, const TeExpr *e, uint64_t *mask) {
    if (e->kind == TE_REDUCE) return; /* a POST's reduction stands for the accumulator */
    if (e->kind == TE_ACCESS) {
        int st = dag->stage_of[e->tensor];
        if (st >= 0 && ln->inlined[st])
            tensors_read(dag, ln, dag->prog->tensors[e->tensor].body, mask);
        else if (!dag->prog->tensors[e->tensor].is_const)
            *mask |= (uint64_t)1 << e->tensor;
    }
    for (int i = 0; i < e->n_kids; i++)
        tensors_read(dag, ln, e->kid[i], mask);
}

typedef struct Walk {
    const LoopNest *ln;
    StmtRef *refs;
    int n, cap, is_gpu, too_deep;
    const LnNode *stack[MAX_DEPTH];
    double alloc_outer[TE_MAX_TENSORS];
} Walk;

static void walk(Walk *W, const LnNode *n, int depth) {
    if (n->is_loop) {
        if (n->bind) W->is_gpu = 1;
        if (depth == MAX_DEPTH) {
            W->too_deep = 1;
            return;
        }
        W->stack[depth] = n;
        for (int i = 0; i < n->n_kids; i++)
            walk(W, n->kids[i], depth + 1);
        return;
    }
    if (n->part == LN_ALLOC) { /* a buffer's declaration: where its allocation happens, no statement */
        double outer = 1;
        for (int k = 0; k < depth; k++)
            outer *= (double)W->stack[k]->extent;
        if (n->stage >= 0 && n->stage < TE_MAX_TENSORS) W->alloc_outer[n->stage] = outer;
        return;
    }
    if (W->n == W->cap) {
        W->cap = W->cap ? 2 * W->cap : 16;
        W->refs = realloc(W->refs, sizeof(StmtRef) * (size_t)W->cap);
        if (!W->refs) abort();
    }
    StmtRef *r = &W->refs[W->n++];
    r->node = n;
    r->depth = depth;
    memcpy(r->stack, W->stack, sizeof(LnNode *) * (size_t)depth);
    const TeDag *dag = W->ln->dag;
    const TeStage *ts = &dag->stages[n->stage];
    r->tensors = (uint64_t)1 << ts->tensor;
    const TeExpr *body = dag->prog->tensors[ts->tensor].body;
    if (n->part == LN_UPDATE) tensors_read(dag, W->ln, ts->red->kid[0], &r->tensors);
    if (n->part == LN_STORE || n->part == LN_POST) tensors_read(dag, W->ln, body, &r->tensors);
}

/* ---- the interface ---------------------------------------------------------------- */

void TeFeatures_init(TeFeatures *this) { memset(this, 0, sizeof *this); }

void TeFeatures_done(TeFeatures *this) {
    free(this->x);
    free(this->stage);
    free(this->part);
    free(this->buffer);
    memset(this, 0, sizeof *this);
}

static void reserve(TeFeatures *this, int n) {
    if (n <= this->cap) return;
    this->cap = n;
    this->x = realloc(this->x, sizeof(float) * TE_FEATURES * (size_t)n);
    this->stage = realloc(this->stage, sizeof(int) * (size_t)n);
    this->part = realloc(this->part, sizeof(LnPart) * (size_t)n);
    this->buffer = realloc(this->buffer, sizeof(int) * TE_FEATURE_BUFFERS * (size_t)n);
    if (!this->x || !this->stage || !this->part || !this->buffer) abort();
}

static int one_hot(int i) {
    int b = (i - TF_BUF) % TE_BUFFER_FEATURES;
    if (i >= TF_BUF && i < TF_CURVE) return b <= TB_READ_WRITE || (b >= TB_REUSE_LOOP && b <= TB_REUSE_NONE);
    for (int g = TF_VEC; g <= TF_PAR; g += 11)
        if (i >= g + TA_POS && i < g + 11) return 1;
    return i == TF_IS_GPU || (i >= TF_CURVE && i < TF_CURVE + TE_CURVE_POINTS);
}

Status TeFeatures_ofNest(TeFeatures *this, const LoopNest *ln, const Steps *steps, int raw, char *err) {
    this->n = 0;
    Walk W = {.ln = ln};
    for (int i = 0; i < ln->root->n_kids; i++)
        walk(&W, ln->root->kids[i], 0);
    if (W.too_deep) {
        free(W.refs);
        return tt_fail(err, "features: the loop nest is more than %d loops deep", MAX_DEPTH);
    }
    Ctx *C = calloc(1, sizeof *C);
    if (!C) abort();
    C->ln = ln;
    C->dag = ln->dag;
    C->g = ln->dag->prog;
    C->refs = W.refs;
    C->n_refs = W.n;
    C->is_gpu = W.is_gpu;
    memcpy(C->alloc_outer, W.alloc_outer, sizeof C->alloc_outer);
    for (int i = 0; steps && i < steps->n; i++) {
        const Step *s = &steps->step[i];
        if (s->kind == STEP_AUTO_UNROLL && s->stage >= 0 && s->stage < TE_MAX_TENSORS &&
            s->arg[1] > C->auto_unroll[s->stage])
            C->auto_unroll[s->stage] = s->arg[1];
    }
    reserve(this, W.n);
    Status st = TT_OK;
    for (int i = 0; i < W.n && st == TT_OK; i++) {
        C->ref = &W.refs[i];
        float *x = this->x + (size_t)i * TE_FEATURES;
        st = statement(C, x, this->buffer + (size_t)i * TE_FEATURE_BUFFERS, err);
        this->stage[i] = W.refs[i].node->stage;
        this->part[i] = W.refs[i].node->part;
        if (!raw)
            for (int j = 0; j < TE_FEATURES; j++)
                if (!one_hot(j)) x[j] = (float)slog(x[j]);
    }
    if (st == TT_OK) this->n = W.n;
    free(C->ar.n);
    free(C);
    free(W.refs);
    return st;
}

Status TeFeatures_extract(TeFeatures *this, const TeDag *dag, const Steps *steps, char *err) {
    LoopNest ln;
    if (LoopNest_lower(&ln, dag, steps, err) != TT_OK) return TT_ERR;
    Status st = TeFeatures_ofNest(this, &ln, steps, 0, err);
    LoopNest_done(&ln);
    return st;
}
