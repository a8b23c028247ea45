/* kernels/templates/te/te_emit.c: C from a loop nest (LoopNest_emit_c in te_lower.h).
 *
 * Axis values are int64_t locals named after the program's variables (x<id>);
 * expressions of an inlined stage are substituted at each access with its
 * axes bound to the access's indices. Integer `/` and `%` are floor
 * operations (tt_fdiv, tt_fmod); float math uses the f-suffixed functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/templates/te/te_lower.h"

#define TE_GPU_PRIVATE_FLOATS 1024 /* a thread's buffer, in registers or local memory */
#define TE_GPU_SHARED_FLOATS 12288 /* 48 KB of shared memory per block */

/* What differs between C, OpenCL C and CUDA in the emitted text. */
typedef struct Dialect {
    const char *int_t;       /* 64-bit integer type */
    const char *fun[9];      /* exp log sqrt rsqrt tanh erf abs max min on float */
    const char *inf;         /* +infinity as a float expression */
    const char *step[2];     /* a max_over / min_over update: step(acc, x) */
    const char *func_prefix; /* before the helpers' definitions */
    const char *barrier;     /* every thread of the block waits, shared memory settled */
    const char *shared;      /* a shared-memory declaration's qualifier */
    const char *local_id[3], *local_size[3];
} Dialect;

static const Dialect C_DIALECT = {"int64_t",
                                  {"tt_expf", "logf", "sqrtf", NULL, "tanhf", "erff", "fabsf", "tt_fmaxf", "tt_fminf"},
                                  "INFINITY",
                                  {"tt_maxstep", "tt_minstep"},
                                  "static inline",
                                  NULL,
                                  NULL,
                                  {NULL},
                                  {NULL}};
static const Dialect OPENCL_DIALECT = {"long",
                                       {"exp", "log", "sqrt", "rsqrt", "tanh", "erf", "fabs", "fmax", "fmin"},
                                       "INFINITY",
                                       {"fmax", "fmin"},
                                       "static inline",
                                       "barrier(CLK_LOCAL_MEM_FENCE);",
                                       "__local",
                                       {"get_local_id(0)", "get_local_id(1)", "get_local_id(2)"},
                                       {"get_local_size(0)", "get_local_size(1)", "get_local_size(2)"}};
static const Dialect CUDA_DIALECT = {"long long",
                                     {"expf", "logf", "sqrtf", "rsqrtf", "tanhf", "erff", "fabsf", "fmaxf", "fminf"},
                                     "__int_as_float(0x7f800000)",
                                     {"fmaxf", "fminf"},
                                     "static __device__ __forceinline__",
                                     "__syncthreads();",
                                     "__shared__",
                                     {"threadIdx.x", "threadIdx.y", "threadIdx.z"},
                                     {"blockDim.x", "blockDim.y", "blockDim.z"}};

#define HOIST_MAX 8
#define TE_EXPAND_MAX 64 /* most steps of a loop written out as blocks (emit_expanded) */

typedef struct Emit {
    const LoopNest *ln;
    const TeProgram *g;
    StrBuf *out;
    const Dialect *dia;
    int cur;                 /* the stage whose expression is written (its accesses may read a cache) */
    int collapsed;           /* parallel loops still to come that an enclosing `collapse` covers */
    int acc[TE_MAX_TENSORS]; /* per stage: 1 + the depth of the register accumulator its updates go to, or 0 */
    int store_acc;           /* an INIT statement stores the accumulator instead */
    int simd_sum;            /* 1 + the depth of the sum's accumulator a lane loop may reduce (lane_sum), or 0 */
    /* values computed before the vectorized loop around the statement being written: tt_h<id[i]> is
     * hoist[i] (recip[i]: 1 / hoist[i], a divisor) */
    const TeExpr *hoist[HOIST_MAX];
    int recip[HOIST_MAX], id[HOIST_MAX], n_hoist, next_id;
} Emit;

static void expr(Emit *E, const TeExpr *e, char **env, const char *red_value);

/* Whether e is one of the exp calls whose argument is at most 0 or NaN (LoopNest_expAtMost0). */
static int exp_at_most0(const LoopNest *ln, const TeExpr *e) {
    for (int i = 0; i < ln->n_exp_le0; i++)
        if (ln->exp_le0[i] == e) return 1;
    return 0;
}

static void float_lit(const Dialect *dia, StrBuf *out, double v) {
    char buf[48];
    snprintf(buf, sizeof buf, "%.9g", v);
    if (!strpbrk(buf, ".eEin")) strcat(buf, ".0");
    if (strstr(buf, "inf"))
        StrBuf_printf(out, v > 0 ? "(%s)" : "(-%s)", dia->inf);
    else
        StrBuf_printf(out, "%sf", buf);
}

/* The element of tensor at the indices idx (rendered under env): its buffer
 * (T<n>: the kernel's, L<n>: the nest's box) and row-major offset. */
static void element(Emit *E, int tensor, const TeExpr *const *idx, char **env, StrBuf *out) {
    const TeTensor *t = &E->g->tensors[tensor];
    const LnBuffer *b = &E->ln->buf[tensor];
    StrBuf *save = E->out;
    E->out = out;
    if (b->scope == BUF_ARG) { /* ((x0) * shape1 + x1) * shape2 + ... */
        StrBuf_printf(out, "T%d[", tensor);
        for (int d = 0; d < t->ndim; d++)
            StrBuf_append(out, "(");
        for (int d = 0; d < t->ndim; d++) {
            if (d) StrBuf_printf(out, " * %lld + ", (long long)t->shape[d]);
            expr(E, idx[d], env, NULL);
            StrBuf_append(out, ")");
        }
    } else { /* (x0 - base0) * stride0 + ... */
        StrBuf_printf(out, "L%d[", tensor);
        for (int d = 0; d < t->ndim; d++) {
            StrBuf_append(out, d ? " + (" : "(");
            expr(E, idx[d], env, NULL);
            if (b->base[d]) StrBuf_printf(out, " - %s", b->base[d]);
            StrBuf_append(out, ")");
            if (b->stride[d] != 1) StrBuf_printf(out, " * %lld", (long long)b->stride[d]);
        }
    }
    StrBuf_append(out, "]");
    E->out = save;
}

static const char *const COP[] = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};

/* An expression that is safe to evaluate whatever the conditions around it:
 * no tensor access (its index may be proven in bounds only under them) and no
 * integer division or modulo (by zero). */
static int safe_anywhere(const TeExpr *e) {
    if (e->kind == TE_ACCESS) return 0;
    if (e->kind == TE_BIN && e->type == TE_TINT && (e->op == TE_DIV || e->op == TE_MOD)) return 0;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && !safe_anywhere(e->kid[i])) return 0;
    return 1;
}

/* The hoisted value e stands for (recip: its reciprocal), or -1. */
static int hoisted(const Emit *E, const TeExpr *e, int recip) {
    for (int i = 0; i < E->n_hoist; i++)
        if (E->hoist[i] == e && E->recip[i] == recip) return E->id[i];
    return -1;
}

static void expr(Emit *E, const TeExpr *e, char **env, const char *red_value) {
    StrBuf *o = E->out;
    int h = hoisted(E, e, 0);
    if (h >= 0) {
        StrBuf_printf(o, "tt_h%d", h);
        return;
    }
    if (e->kind == TE_BIN && e->type == TE_TFLOAT && e->op == TE_DIV && (h = hoisted(E, e->kid[1], 1)) >= 0) {
        StrBuf_append(o, "((float)");
        expr(E, e->kid[0], env, red_value);
        StrBuf_printf(o, " * tt_h%d)", h);
        return;
    }
    switch (e->kind) {
    case TE_NUM:
        if (e->type == TE_TINT)
            StrBuf_printf(o, "((%s)%lld)", E->dia->int_t, (long long)e->inum);
        else
            float_lit(E->dia, o, e->num);
        return;
    case TE_VAR:
        StrBuf_append(o, env[e->var]);
        return;
    case TE_ACCESS: {
        int tensor = e->tensor; /* or the cache the stage reads instead */
        const TeStage *cs = &E->ln->dag->stages[E->cur];
        for (int a = 0; a < cs->n_access; a++)
            if (cs->access[a].at == e) tensor = cs->access[a].tensor;
        int st = E->ln->dag->stage_of[tensor], cur = E->cur;
        if (st >= 0 && E->ln->inlined[st]) { /* the producer's value with its axes bound to these indices */
            const TeTensor *t = &E->g->tensors[tensor];
            char *saved[TE_MAX_DIMS];
            StrBuf ix;
            for (int d = 0; d < t->ndim; d++) {
                StrBuf_init(&ix);
                StrBuf *keep = E->out;
                E->out = &ix;
                StrBuf_append(&ix, "(");
                expr(E, e->kid[d], env, NULL);
                StrBuf_append(&ix, ")");
                E->out = keep;
                saved[d] = env[t->axes[d]];
                env[t->axes[d]] = StrBuf_take(&ix);
                StrBuf_done(&ix);
            }
            StrBuf_append(o, "(");
            E->cur = st;
            expr(E, t->body, env, NULL);
            E->cur = cur;
            StrBuf_append(o, ")");
            for (int d = 0; d < t->ndim; d++) {
                free(env[t->axes[d]]);
                env[t->axes[d]] = saved[d];
            }
            return;
        }
        element(E, tensor, (const TeExpr *const *)e->kid, env, o);
        return;
    }
    case TE_NEG:
    case TE_NOT:
        StrBuf_append(o, e->kind == TE_NEG ? "(-" : "(!");
        expr(E, e->kid[0], env, red_value);
        StrBuf_append(o, ")");
        return;
    case TE_BIN:
        if (e->type == TE_TINT && (e->op == TE_DIV || e->op == TE_MOD)) {
            StrBuf_append(o, e->op == TE_DIV ? "tt_fdiv(" : "tt_fmod(");
            expr(E, e->kid[0], env, red_value);
            StrBuf_append(o, ", ");
            expr(E, e->kid[1], env, red_value);
            StrBuf_append(o, ")");
            return;
        }
        StrBuf_append(o, "(");
        if (e->type == TE_TFLOAT) StrBuf_append(o, "(float)");
        expr(E, e->kid[0], env, red_value);
        if ((e->op == TE_AND || e->op == TE_OR) && safe_anywhere(e->kid[0]) && safe_anywhere(e->kid[1]))
            /* both sides of 0/1 values, without branches: the compiler vectorizes a padding test this way
             * (not a short-circuit chain, which it may turn into a bit test of a constant) */
            StrBuf_printf(o, " %s ", e->op == TE_AND ? "&" : "|");
        else
            StrBuf_printf(o, " %s ", COP[e->op]);
        if (e->type == TE_TFLOAT) StrBuf_append(o, "(float)");
        expr(E, e->kid[1], env, red_value);
        StrBuf_append(o, ")");
        return;
    case TE_CALL:
        if (e->type == TE_TINT)
            StrBuf_append(o, e->op == TE_FMAX ? "tt_imax(" : "tt_imin(");
        else if (!E->dia->fun[e->op])
            StrBuf_append(o, "(1.0f / sqrtf((float)"); /* C has no rsqrt */
        else if (E->dia == &C_DIALECT && exp_at_most0(E->ln, e))
            StrBuf_append(o, "tt_expf_le0((float)");
        else
            StrBuf_printf(o, "%s((float)", E->dia->fun[e->op]);
        expr(E, e->kid[0], env, red_value);
        if (e->n_kids == 2) {
            StrBuf_append(o, e->type == TE_TINT ? ", " : ", (float)");
            expr(E, e->kid[1], env, red_value);
        }
        StrBuf_append(o, !E->dia->fun[e->op] && e->type != TE_TINT ? "))" : ")");
        return;
    case TE_IF:
        StrBuf_append(o, "(");
        expr(E, e->kid[0], env, red_value);
        StrBuf_append(o, e->type == TE_TFLOAT ? " ? (float)" : " ? ");
        expr(E, e->kid[1], env, red_value);
        StrBuf_append(o, e->type == TE_TFLOAT ? " : (float)" : " : ");
        expr(E, e->kid[2], env, red_value);
        StrBuf_append(o, ")");
        return;
    case TE_REDUCE:
        StrBuf_append(o, red_value ? red_value : "0.0f");
        return;
    }
}

static void indent(StrBuf *o, int depth) { StrBuf_printf(o, "%*s", 4 * depth, ""); }

/* The factors of a sum's term that read a constant tensor, found through its
 * products (`B[e, r] * B[u, s] * X[..]`), written as the test that each is not
 * zero: a step whose term has a zero factor adds nothing and is skipped, so
 * that once the loops over the constant are unrolled the compiler drops it
 * (it may not drop `acc + 0.0f * x` itself). */
static void nonzero_factors(Emit *E, const TeExpr *e, char **env, StrBuf *out) {
    if (e->kind == TE_BIN && e->op == TE_MUL && e->type == TE_TFLOAT) {
        nonzero_factors(E, e->kid[0], env, out);
        nonzero_factors(E, e->kid[1], env, out);
        return;
    }
    if (e->kind != TE_ACCESS || !E->g->tensors[e->tensor].is_const) return;
    const TeStage *cs = &E->ln->dag->stages[E->cur];
    for (int a = 0; a < cs->n_access; a++)
        if (cs->access[a].at == e && cs->access[a].tensor != e->tensor) return; /* read through a cache */
    StrBuf_append(out, out->len ? " && " : "");
    StrBuf *keep = E->out;
    E->out = out;
    expr(E, e, env, NULL);
    E->out = keep;
    StrBuf_append(out, " != 0.0f");
}

/* A constant tensor's elements as an initializer. */
static void const_values(const TeTensor *t, StrBuf *out) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    StrBuf_printf(out, "[%lld] = {", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        StrBuf_append(out, i ? ", " : "");
        float_lit(&C_DIALECT, out, t->values[i]);
    }
    StrBuf_append(out, "};\n");
}

static int64_t buffer_floats(const LoopNest *ln, int tensor) { return ln->buf[tensor].floats; }

static const LnBuffer *buffer_of(const Emit *E, const LnNode *n) {
    return &E->ln->buf[E->ln->dag->stages[n->stage].tensor];
}

/* On a GPU a shared buffer is declared at the kernel's top and filled by every thread in turn. */
static int gpu_shared(const Emit *E, const LnNode *n) {
    return E->dia != &C_DIALECT && buffer_of(E, n)->scope == BUF_SHARED;
}

/* On cpu a large buffer is on the heap, freed at the end of its block, aligned to a cache line (malloc's
 * buffers of that size start 16 bytes past one, and every other 32-byte load of a row would span two). */
static int on_heap(const Emit *E, const LnNode *n) {
    return E->dia == &C_DIALECT && n->part == LN_ALLOC &&
           buffer_floats(E->ln, E->ln->dag->stages[n->stage].tensor) > TE_STACK_FLOATS;
}

/* On cpu a plain copy of a tensor (`cache_read S T 0`) is read through a
 * restrict pointer: gcc then keeps a register tile that reads it in registers
 * across its reduction loop, which it does not beside a second local array
 * (matmul's B copied per column strip, 4 x 16 accumulators: 80 -> 36 ms). */
static int restrict_copy(const Emit *E, const LnNode *n) {
    const TeExpr *body = E->g->tensors[E->ln->dag->stages[n->stage].tensor].body;
    return E->dia == &C_DIALECT && body && body->kind == TE_ACCESS;
}

static void emit_alloc(Emit *E, const LnNode *n, int depth) {
    int t = E->ln->dag->stages[n->stage].tensor;
    long long floats = (long long)buffer_floats(E->ln, t);
    const char *qual = restrict_copy(E, n) ? "restrict " : "";
    indent(E->out, depth);
    if (on_heap(E, n))
        StrBuf_printf(E->out, "float *%sL%d = (float *)aligned_alloc(64, %lld);\n", qual, t,
                      (floats * 4 + 63) / 64 * 64);
    else if (gpu_shared(E, n)) /* its readers of the last round are done; count the elements to share them out */
        StrBuf_printf(E->out, "%s\n%*s%s tt_c%d = 0;\n", E->dia->barrier, 4 * depth, "", E->dia->int_t, t);
    else if (*qual)
        StrBuf_printf(E->out, "float L%ds[%lld], *restrict L%d = L%ds;\n", t, floats, t, t);
    else
        StrBuf_printf(E->out, "float L%d[%lld];\n", t, floats);
}

/* Frees the heap buffers declared among kids. */
static void free_heap(Emit *E, const LnNode *block, int depth) {
    for (int i = 0; i < block->n_kids; i++)
        if (!block->kids[i]->is_loop && on_heap(E, block->kids[i])) {
            indent(E->out, depth);
            StrBuf_printf(E->out, "free(L%d);\n", E->ln->dag->stages[block->kids[i]->stage].tensor);
        }
}

static void emit_stmt(Emit *E, const LnNode *n, int depth) {
    StrBuf *o = E->out;
    if (n->part == LN_ALLOC) {
        emit_alloc(E, n, depth);
        return;
    }
    const TeStage *ts = &E->ln->dag->stages[n->stage];
    const TeTensor *t = &E->g->tensors[ts->tensor];
    static __thread char *env[TE_MAX_VARS];
    char names[2 * TE_MAX_DIMS][16];
    indent(o, depth);
    StrBuf_append(o, "{\n");
    int n_axes = n->part == LN_UPDATE ? ts->n_spatial + ts->n_reduce : ts->n_spatial;
    for (int a = 0; a < n_axes; a++) {
        int v = a < ts->n_spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial];
        snprintf(names[a], sizeof names[a], "x%d", v);
        env[v] = names[a];
        indent(o, depth + 1);
        StrBuf_printf(o, "const %s x%d = %s;\n", E->dia->int_t, v, n->axis[a]);
    }
    indent(o, depth + 1);
    E->cur = n->stage;
    StrBuf nonzero;
    StrBuf_init(&nonzero);
    if (n->part == LN_UPDATE && ts->red->op == TE_SUM) nonzero_factors(E, ts->red->kid[0], env, &nonzero);
    if (n->part == LN_STORE && gpu_shared(E, n)) /* element number c is the job of thread c % threads */
        StrBuf_printf(o, "if (tt_c%d++ %% tt_nt == tt_tid%s%s) ", ts->tensor, n->guard ? " && " : "",
                      n->guard ? n->guard : "");
    else if (n->guard && nonzero.len)
        StrBuf_printf(o, "if ((%s) && %s) ", n->guard, nonzero.data);
    else if (n->guard || nonzero.len)
        StrBuf_printf(o, "if (%s) ", n->guard ? n->guard : nonzero.data);
    StrBuf_done(&nonzero);
    StrBuf out_ref;
    StrBuf_init(&out_ref);
    TeExpr axes[TE_MAX_DIMS];
    const TeExpr *ix[TE_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        memset(&axes[d], 0, sizeof axes[d]);
        axes[d].kind = TE_VAR;
        axes[d].type = TE_TINT;
        axes[d].var = t->axes[d];
        ix[d] = &axes[d];
    }
    element(E, ts->tensor, ix, env, &out_ref);
    int acc = E->acc[n->stage];
    if (acc && n->part == LN_UPDATE) { /* the register accumulator (see emit_block) */
        StrBuf_clear(&out_ref);
        StrBuf_printf(&out_ref, "tt_acc%d", acc - 1);
    }
    StrBuf_append(o, out_ref.data);
    StrBuf_append(o, " = ");
    int rop = ts->red ? ts->red->op : -1;
    if (acc && n->part == LN_INIT && E->store_acc) {
        StrBuf_printf(o, "tt_acc%d;\n", acc - 1);
        StrBuf_done(&out_ref);
        indent(o, depth);
        StrBuf_append(o, "}\n");
        return;
    }
    switch (n->part) {
    case LN_STORE:
        expr(E, t->body, env, NULL);
        break;
    case LN_INIT:
        if (rop == TE_SUM)
            StrBuf_append(o, "0.0f");
        else
            StrBuf_printf(o, rop == TE_MAX_OVER ? "(-%s)" : "(%s)", E->dia->inf);
        break;
    case LN_UPDATE:
        if (rop == TE_SUM)
            StrBuf_printf(o, "%s + (float)", out_ref.data);
        else
            StrBuf_printf(o, "%s(%s, (float)", E->dia->step[rop == TE_MAX_OVER ? 0 : 1], out_ref.data);
        expr(E, ts->red->kid[0], env, NULL);
        if (rop != TE_SUM) StrBuf_append(o, ")");
        break;
    case LN_POST:
        expr(E, t->body, env, out_ref.data);
        break;
    case LN_ALLOC: /* emit_alloc */
        break;
    }
    StrBuf_append(o, ";\n");
    StrBuf_done(&out_ref);
    indent(o, depth);
    StrBuf_append(o, "}\n");
}

static void emit_node(Emit *E, const LnNode *n, int depth);

/* ---- invariants of a vectorized loop (C) ---------------------------------------------
 * Under `omp simd` the compiler computes every value in every lane, also one that does not change along the
 * loop (a row's 1 / sqrt(variance), 1 / sum). So what the statement of a vectorized loop computes from values
 * that do not depend on the loop, a call or a division, is computed once before it (tt_h<n>), and a division by
 * such a value becomes a product with its reciprocal (within an ulp of the quotient). */

static int name_char(char c) { return c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z'); }

/* Whether loop variable var occurs in text as a name of its own. */
static int names_var(const char *text, const char *var) {
    for (const char *p = strstr(text, var); p; p = strstr(p + 1, var))
        if (!(p > text && name_char(p[-1])) && !name_char(p[strlen(var)])) return 1;
    return 0;
}

/* The tensor an access of the current stage reads (the stage may read a cache instead). */
static int read_tensor(const Emit *E, const TeExpr *e) {
    const TeStage *cs = &E->ln->dag->stages[E->cur];
    for (int a = 0; a < cs->n_access; a++)
        if (cs->access[a].at == e) return cs->access[a].tensor;
    return e->tensor;
}

/* e depends on no varying variable, no reduction value and not the tensor the statement writes. */
static int invariant(const Emit *E, const TeExpr *e, const int *vary) {
    if (e->kind == TE_REDUCE || (e->kind == TE_VAR && vary[e->var])) return 0;
    if (e->kind == TE_ACCESS && read_tensor(E, e) == E->ln->dag->stages[E->cur].tensor) return 0;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && !invariant(E, e->kid[i], vary)) return 0;
    return 1;
}

/* e has a float call or division (in an inlined producer's value too). */
static int costly(const Emit *E, const TeExpr *e) {
    if (e->type == TE_TFLOAT && (e->kind == TE_CALL || (e->kind == TE_BIN && e->op == TE_DIV))) return 1;
    if (e->kind == TE_ACCESS) {
        int st = E->ln->dag->stage_of[read_tensor(E, e)];
        return st >= 0 && E->ln->inlined[st] && costly(E, E->g->tensors[read_tensor(E, e)].body);
    }
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && costly(E, e->kid[i])) return 1;
    return 0;
}

static void add_hoist(Emit *E, const TeExpr *e, int recip) {
    if (E->n_hoist == HOIST_MAX || hoisted(E, e, recip) >= 0) return;
    E->hoist[E->n_hoist] = e, E->recip[E->n_hoist] = recip, E->id[E->n_hoist] = E->next_id + E->n_hoist;
    E->n_hoist++;
}

/* The largest invariant costly parts of e, and the invariant divisors. Not inside a conditional's branches
 * (their reads may be valid only under the condition) nor an access's indices. */
static void find_hoists(Emit *E, const TeExpr *e, const int *vary) {
    if (e->type != TE_TFLOAT || e->kind == TE_IF || e->kind == TE_ACCESS) {
        if (e->type == TE_TFLOAT && e->kind != TE_NUM && invariant(E, e, vary) && costly(E, e)) add_hoist(E, e, 0);
        return;
    }
    if (e->kind != TE_NUM && invariant(E, e, vary) && costly(E, e)) {
        add_hoist(E, e, 0);
        return;
    }
    if (e->kind == TE_BIN && e->op == TE_DIV && invariant(E, e->kid[1], vary)) add_hoist(E, e->kid[1], 1);
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i]) find_hoists(E, e->kid[i], vary);
}

/* The vectorized loop at the end of the chain of loops from n, each the only kid of the one before and none
 * parallel, whose body is one unguarded statement; NULL if there is none. */
static const LnNode *simd_chain_end(const LnNode *n) {
    for (; n->is_loop && n->ann != ANN_PARALLEL && !n->bind && n->n_kids == 1; n = n->kids[0]) {
        if (n->ann != ANN_VECTORIZE) continue;
        const LnNode *s = n->kids[0];
        int part_ok = s->part == LN_STORE || s->part == LN_UPDATE || s->part == LN_POST;
        return !s->is_loop && !s->guard && part_ok ? n : NULL;
    }
    return NULL;
}

/* The hoisted values of the statement at the end of the chain from `from` to the vectorized loop `simd` when
 * every loop of the chain varies: their number, into E->hoist. vary[] and env[] are filled for its axes. */
static int hoists_over(Emit *E, const LnNode *from, const LnNode *simd, int *vary, char **env, char (*names)[16]) {
    const LnNode *s = simd->kids[0];
    const TeStage *ts = &E->ln->dag->stages[s->stage];
    int n_axes = s->part == LN_UPDATE ? ts->n_spatial + ts->n_reduce : ts->n_spatial;
    for (int a = 0; a < n_axes; a++) {
        int v = a < ts->n_spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial];
        vary[v] = 0;
        for (const LnNode *l = from;; l = l->kids[0]) {
            vary[v] |= names_var(s->axis[a], l->var);
            if (l == simd) break;
        }
        snprintf(names[a], sizeof names[a], "x%d", v);
        env[v] = names[a];
    }
    E->cur = s->stage;
    E->n_hoist = 0;
    find_hoists(E, s->part == LN_UPDATE ? ts->red->kid[0] : E->g->tensors[ts->tensor].body, vary);
    return E->n_hoist;
}

/* Before loop n (C), when it starts a chain of loops down to a vectorized loop around one unguarded statement
 * (simd_chain_end) and no block is open: if what the statement computes from values invariant in the whole
 * chain is all that is invariant in the vectorized loop alone, opens a block with the statement's invariant
 * axes and those values, and returns 1 (the caller closes it); else 0 (a loop further in may open it). */
static int open_hoists(Emit *E, const LnNode *n, int depth) {
    const LnNode *simd = E->dia == &C_DIALECT && !E->n_hoist ? simd_chain_end(n) : NULL;
    if (!simd) return 0;
    int vary[TE_MAX_VARS] = {0};
    char *env[TE_MAX_VARS] = {0}, names[2 * TE_MAX_DIMS][16];
    int count = hoists_over(E, simd, simd, vary, env, names);
    const TeExpr *inner[HOIST_MAX];
    int recip[HOIST_MAX];
    memcpy(inner, E->hoist, sizeof inner);
    memcpy(recip, E->recip, sizeof recip);
    int same = count > 0 && hoists_over(E, n, simd, vary, env, names) == count;
    for (int i = 0; same && i < count; i++)
        same = E->hoist[i] == inner[i] && E->recip[i] == recip[i];
    if (!same) {
        E->n_hoist = 0;
        return 0;
    }
    const LnNode *s = simd->kids[0];
    const TeStage *ts = &E->ln->dag->stages[s->stage];
    int n_axes = s->part == LN_UPDATE ? ts->n_spatial + ts->n_reduce : ts->n_spatial;
    indent(E->out, depth);
    StrBuf_append(E->out, "{\n");
    for (int a = 0; a < n_axes; a++) {
        int v = a < ts->n_spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial];
        if (vary[v]) continue;
        indent(E->out, depth + 1);
        StrBuf_printf(E->out, "const %s x%d = %s;\n", E->dia->int_t, v, s->axis[a]);
    }
    for (int i = 0; i < count; i++) { /* each written without the others */
        indent(E->out, depth + 1);
        StrBuf_printf(E->out, "const float tt_h%d = %s", E->id[i], E->recip[i] ? "1.0f / (float)" : "");
        E->n_hoist = 0;
        expr(E, E->hoist[i], env, NULL);
        E->n_hoist = count;
        StrBuf_append(E->out, ";\n");
    }
    E->next_id += count;
    return 1;
}

/* The kids of a loop or block; a shared buffer's filling ends with a barrier,
 * heap buffers are freed at the end. */
static int has_update(const LnNode *n, int stage) {
    if (!n->is_loop) return n->part == LN_UPDATE && n->stage == stage;
    for (int i = 0; i < n->n_kids; i++)
        if (has_update(n->kids[i], stage)) return 1;
    return 0;
}

/* Kid i of block n starts a reduction whose loops all lie inside its element's statements: its INIT, then a
 * loop nest of reduction loops (and the producers computed there) around its UPDATE. */
static int whole_reduction(const LnNode *n, int i) {
    const LnNode *k = n->kids[i];
    return !k->is_loop && k->part == LN_INIT && i + 1 < n->n_kids && n->kids[i + 1]->is_loop &&
           has_update(n->kids[i + 1], k->stage);
}

/* C: such a reduction accumulates in a variable, stored once after its loops (the INIT statement, stored last):
 * the compiler keeps it in a register, and vectorizes a loop around it (it does neither with an element of
 * memory). */
static void emit_whole_reduction(Emit *E, const LnNode *init, const LnNode *loops, int depth) {
    const TeStage *ts = &E->ln->dag->stages[init->stage];
    int rop = ts->red->op;
    indent(E->out, depth);
    StrBuf_printf(E->out, "{\n");
    indent(E->out, depth + 1);
    if (rop == TE_SUM) /* -0, the identity of IEEE addition (-0 + x is x, also for x = +0): the compiler folds the
                        * first step into a copy (0 + x it must compute, for x = -0) */
        StrBuf_printf(E->out, "float tt_acc%d = -0.0f;\n", depth);
    else
        StrBuf_printf(E->out, rop == TE_MAX_OVER ? "float tt_acc%d = (-%s);\n" : "float tt_acc%d = (%s);\n", depth,
                      E->dia->inf);
    E->acc[init->stage] = depth + 1;
    int outer_sum = E->simd_sum;
    E->simd_sum = rop == TE_SUM ? depth + 1 : 0;
    emit_node(E, loops, depth + 1);
    E->simd_sum = outer_sum;
    E->store_acc = 1;
    emit_stmt(E, init, depth + 1);
    E->store_acc = 0;
    E->acc[init->stage] = 0;
    indent(E->out, depth);
    StrBuf_printf(E->out, "}\n");
}

static void emit_block(Emit *E, const LnNode *n, int depth) {
    int barrier_after = -1;
    for (int i = 0; i < n->n_kids; i++) {
        const LnNode *k = n->kids[i];
        if (E->dia == &C_DIALECT && whole_reduction(n, i)) {
            emit_whole_reduction(E, k, n->kids[i + 1], depth);
            i++;
            continue;
        }
        emit_node(E, k, depth);
        if (!k->is_loop && k->part == LN_ALLOC && gpu_shared(E, k)) barrier_after = i + (int)k->extent;
        if (i == barrier_after) indent(E->out, depth), StrBuf_printf(E->out, "%s\n", E->dia->barrier);
    }
    free_heap(E, n, depth);
}

/* ---- loops over a constant's indices (C) --------------------------------------------------
 * A fully unrolled loop whose variable reaches an index of a constant tensor (a Winograd transform's
 * `Bt[e, r]`) is written out as one block per step, its variable a number in each: the compiler then reads the
 * constant's element at a known index as a number before it vectorizes (a zero term's `if (T0[..] != 0.0f)`
 * is dropped, a product by 1 is no multiply), which `#pragma GCC unroll` on a loop around a vectorized one does
 * not do early enough. */

static int uses_var_expr(const TeExpr *e, int var) {
    if (e->kind == TE_VAR) return e->var == var;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && uses_var_expr(e->kid[i], var)) return 1;
    return 0;
}

/* Whether expression e of the current stage reads a constant tensor at an index that names loop variable var
 * through the statement's axes (env: each variable's axis text). */
static int reads_const_at(const Emit *E, const TeExpr *e, char **env, const char *var) {
    if (e->kind == TE_ACCESS && E->g->tensors[e->tensor].is_const && read_tensor(E, e) == e->tensor) {
        for (int d = 0; d < e->n_kids; d++)
            for (int v = 0; v < TE_MAX_VARS; v++)
                if (env[v] && uses_var_expr(e->kid[d], v) && names_var(env[v], var)) return 1;
        return 0;
    }
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && reads_const_at(E, e->kid[i], env, var)) return 1;
    return 0;
}

/* Whether a statement under n reads a constant at an index that moves with loop variable var. */
static int const_loop(Emit *E, const LnNode *n, const char *var) {
    if (n->is_loop) {
        for (int i = 0; i < n->n_kids; i++)
            if (const_loop(E, n->kids[i], var)) return 1;
        return 0;
    }
    if (n->part == LN_ALLOC || n->part == LN_INIT) return 0;
    const TeStage *ts = &E->ln->dag->stages[n->stage];
    char *env[TE_MAX_VARS] = {0};
    int n_axes = n->part == LN_UPDATE ? ts->n_spatial + ts->n_reduce : ts->n_spatial;
    for (int a = 0; a < n_axes; a++)
        env[a < ts->n_spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial]] = n->axis[a];
    int cur = E->cur;
    E->cur = n->stage;
    int found = reads_const_at(E, n->part == LN_UPDATE ? ts->red->kid[0] : E->g->tensors[ts->tensor].body, env, var);
    E->cur = cur;
    return found;
}

/* Writes loop n (fully unrolled, its variable in a constant's index) as one block per step. */
static int emit_expanded(Emit *E, const LnNode *n, int depth) {
    if (E->dia != &C_DIALECT || n->ann != ANN_UNROLL || n->unroll < n->extent || n->extent > TE_EXPAND_MAX ||
        !const_loop(E, n, n->var))
        return 0;
    for (int64_t i = 0; i < n->extent; i++) {
        indent(E->out, depth);
        StrBuf_printf(E->out, "{ const %s %s = %lld;\n", E->dia->int_t, n->var, (long long)i);
        emit_block(E, n, depth + 1);
        indent(E->out, depth);
        StrBuf_append(E->out, "}\n");
    }
    return 1;
}

/* Whether loop n is an unrolled loop of a sum accumulated in a variable (emit_whole_reduction) whose body is
 * the sum's one step: the lane sum of an rfactor stage (`Y[j] = sum(Y.rf[j, l], l < 32)`). Written as an
 * `omp simd` reduction, the compiler may reassociate it (a tree of vector adds and one horizontal sum) instead
 * of a chain of 31 dependent scalar adds, 3 cycles each, per element (a dense layer of 1000 rows on an AVX2
 * EPYC, its rows' sums computed one after another: 41 -> 37 us of CPU, the template's 37-39). */
static int lane_sum(const Emit *E, const LnNode *n) {
    return E->simd_sum > 0 && n->ann == ANN_UNROLL && n->n_kids == 1 && !n->kids[0]->is_loop &&
           n->kids[0]->part == LN_UPDATE && E->acc[n->kids[0]->stage] == E->simd_sum;
}

static void emit_node(Emit *E, const LnNode *n, int depth) {
    StrBuf *o = E->out;
    if (!n->is_loop) {
        emit_stmt(E, n, depth);
        return;
    }
    if (emit_expanded(E, n, depth)) return;
    if (n->bind && n->bind <= 6 && E->dia != &C_DIALECT) { /* the loop is the thread index (a vthread a loop) */
        static const char *const CU[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                         "threadIdx.x", "threadIdx.y", "threadIdx.z"};
        static const char *const CL[] = {"get_group_id(0)", "get_group_id(1)", "get_group_id(2)",
                                         "get_local_id(0)", "get_local_id(1)", "get_local_id(2)"};
        indent(o, depth);
        StrBuf_printf(o, "{ const %s %s = (%s)%s;\n", E->dia->int_t, n->var, E->dia->int_t,
                      (E->dia == &CUDA_DIALECT ? CU : CL)[n->bind - 1]);
        emit_block(E, n, depth + 1);
        indent(o, depth);
        StrBuf_append(o, "}\n");
        return;
    }
    int c = E->dia == &C_DIALECT;
    if (c && n->ann == ANN_PARALLEL && E->collapsed > 0) {
        E->collapsed--;
    } else if (c && n->ann == ANN_PARALLEL) { /* perfectly nested parallel loops run as one */
        int chain = 1;
        for (const LnNode *m = n; m->n_kids == 1 && m->kids[0]->is_loop && m->kids[0]->ann == ANN_PARALLEL;
             m = m->kids[0])
            chain++;
        indent(o, depth);
        if (chain > 1)
            StrBuf_printf(o, "#pragma omp parallel for collapse(%d)\n", chain);
        else
            StrBuf_append(o, "#pragma omp parallel for\n");
        E->collapsed = chain - 1;
    }
    int block = open_hoists(E, n, depth);
    depth += block;
    if (c && n->ann == ANN_VECTORIZE) indent(o, depth), StrBuf_append(o, "#pragma omp simd\n");
    if (c && lane_sum(E, n)) {
        indent(o, depth), StrBuf_printf(o, "#pragma omp simd reduction(+ : tt_acc%d)\n", E->simd_sum - 1);
    } else if (c && n->unroll > 0)
        indent(o, depth),
            StrBuf_printf(o, "#pragma GCC unroll %lld\n", (long long)(n->unroll < 65535 ? n->unroll : 65534));
    indent(o, depth);
    StrBuf_printf(o, "for (%s %s = 0; %s < %lld; %s++) {\n", E->dia->int_t, n->var, n->var, (long long)n->extent,
                  n->var);
    emit_block(E, n, depth + 1);
    indent(o, depth);
    StrBuf_append(o, "}\n");
    if (block) E->n_hoist = 0, indent(o, depth - 1), StrBuf_append(o, "}\n");
}

/* ---- a register tile and the compiler ------------------------------------------------------------------
 * A register tile (an update statement in a vectorized loop, inside unrolled spatial loops, the rows, inside a
 * reduction loop) that reads an operand along the vector axis but not along the rows (matmul's B[k, j] beside
 * the rows of i) loads that operand once per iteration of the reduction and uses it once per row. gcc -O3 on x86
 * folds such a load into every FMA that uses it, so the tile reloads it once per row: 4 rows x 2 registers (a
 * 1024^3 matmul on AVX2) issue 12 loads per 8 FMAs, bound by the two vector loads a cycle. With gcc's pre-RA
 * scheduler on, pressure-aware, the operand stays in registers: on an AVX2 EPYC (gcc 12, one thread) the
 * matmul's zero-trial default runs in 24.6 ms of CPU instead of 35.7 (OpenBLAS 23.5), batch_matmul's in about
 * half the time. The source of such a kernel turns it on from its start (`#pragma GCC optimize`: the helpers,
 * the kernel, and the code after it that calls it and may inline it) when its reductions are all such tiles;
 * other kernels keep the plain flags (a convolution, whose window is unrolled inside the tile, ran 20% slower
 * with it). Other compilers skip it. */

/* Whether an access in e reads along the vector axis (an index names simd) and not along any row (rows[]). */
static int reads_row_invariant(const TeExpr *e, char **axis_of, const char *simd, const char *const *rows, int n) {
    if (e->kind == TE_ACCESS) {
        int along = 0, across = 0;
        for (int d = 0; d < e->n_kids; d++)
            for (int v = 0; v < TE_MAX_VARS; v++) {
                if (!axis_of[v] || !uses_var_expr(e->kid[d], v)) continue;
                along |= names_var(axis_of[v], simd);
                for (int r = 0; r < n; r++)
                    across |= names_var(axis_of[v], rows[r]);
            }
        if (along && !across) return 1;
    }
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && reads_row_invariant(e->kid[i], axis_of, simd, rows, n)) return 1;
    return 0;
}

/* Whether update statement s, inside the loops loop[0..depth-1] (outermost first), is such a register tile. */
static int tile_statement(const LoopNest *ln, const LnNode *s, const LnNode *const *loop, int depth) {
    if (depth < 3 || loop[depth - 1]->ann != ANN_VECTORIZE || loop[depth - 1]->extent < 2) return 0;
    const TeStage *ts = &ln->dag->stages[s->stage];
    const char *rows[TE_MAX_DIMS * 4];
    int n = 0, red_loop = 0;
    for (int j = depth - 2; j >= 0 && !red_loop; j--) {
        const LnNode *l = loop[j];
        int red = 0;
        for (int a = ts->n_spatial; a < ts->n_spatial + ts->n_reduce; a++)
            red |= names_var(s->axis[a], l->var);
        if (l->extent < 2) continue;
        if (l->ann == ANN_UNROLL && !red && n < (int)(sizeof rows / sizeof *rows))
            rows[n++] = l->var;
        else if (red && l->ann != ANN_UNROLL)
            red_loop = 1;
        else
            return 0; /* an unrolled reduction (a window) or another loop between the tile and its reduction */
    }
    char *axis_of[TE_MAX_VARS] = {0};
    for (int a = 0; a < ts->n_spatial + ts->n_reduce; a++)
        axis_of[a < ts->n_spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial]] = s->axis[a];
    return red_loop && n > 0 && reads_row_invariant(ts->red->kid[0], axis_of, loop[depth - 1]->var, rows, n);
}

/* Counts the update statements under n (inside loop[0..depth-1]): tiles[0] those that are no such register
 * tile, tiles[1] those that are. */
static void register_tiles(const LoopNest *ln, const LnNode *n, const LnNode **loop, int depth, int *tiles) {
    if (!n->is_loop) {
        if (n->part == LN_UPDATE) tiles[tile_statement(ln, n, loop, depth)]++;
        return;
    }
    const LnNode *inner[64];
    int d = 0;
    for (int j = 0; j < depth && d < 63; j++)
        inner[d++] = loop[j];
    if (n != ln->root) inner[d++] = n;
    for (int i = 0; i < n->n_kids; i++)
        register_tiles(ln, n->kids[i], inner, d, tiles);
}

/* Whether the nest's reductions are all such register tiles (a Winograd convolution's transforms, products
 * with a constant unrolled around a vector loop, ran 2.2x slower with the scheduler on). */
static int register_tile(const LoopNest *ln) {
    int tiles[2] = {0, 0};
    register_tiles(ln, ln->root, NULL, 0, tiles);
    return tiles[1] > 0 && tiles[0] == 0;
}

/* Guarded so that several kernels can share one source. */
static void helpers(const Dialect *d, StrBuf *out) {
    StrBuf_printf(
        out,
        "#ifndef TT_TE_HELPERS\n#define TT_TE_HELPERS\n"
        "%s %s tt_fdiv(%s a, %s b) { %s q = a / b; return (a %% b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }\n"
        "%s %s tt_fmod(%s a, %s b) { return a - tt_fdiv(a, b) * b; }\n"
        "%s %s tt_imax(%s a, %s b) { return a > b ? a : b; }\n"
        "%s %s tt_imin(%s a, %s b) { return a < b ? a : b; }\n#endif\n",
        d->func_prefix, d->int_t, d->int_t, d->int_t, d->int_t, d->func_prefix, d->int_t, d->int_t, d->int_t,
        d->func_prefix, d->int_t, d->int_t, d->int_t, d->func_prefix, d->int_t, d->int_t, d->int_t);
}

void LoopNest_emit_c(const LoopNest *this, const char *fn, StrBuf *out) {
    Emit E = {.ln = this, .g = this->dag->prog, .out = out, .dia = &C_DIALECT};
    StrBuf_append(out, "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n");
    if (register_tile(this))
        StrBuf_append(out, "#if defined(__GNUC__) && !defined(__clang__)\n"
                           "#pragma GCC optimize(\"schedule-insns\", \"sched-pressure\")\n#endif\n");
    helpers(&C_DIALECT, out);
    /* fmaxf / fminf (the larger / smaller, a NaN only when both are) as compares and a select, which the
     * compiler vectorizes: the library calls it does not */
    StrBuf_append(out, "#ifndef TT_TE_FMINMAX\n#define TT_TE_FMINMAX\n"
                       "static inline float tt_fmaxf(float a, float b) { return a > b || b != b ? a : b; }\n"
                       "static inline float tt_fminf(float a, float b) { return a < b || b != b ? a : b; }\n"
                       /* a max_over / min_over step as the interpreter takes it (one compare and a select: vmaxps) */
                       "static inline float tt_maxstep(float acc, float x) { return x > acc ? x : acc; }\n"
                       "static inline float tt_minstep(float acc, float x) { return x < acc ? x : acc; }\n"
                       /* expf of float arithmetic only, so that a loop of it vectorizes (no float-to-int
                        * conversion, whose trap the compiler will not if-convert): n = round(x / ln 2) by adding
                        * 1.5 * 2^23, y = 1 + r + r^2 p(r) of the rest r, in [0.7, 1.42] (p of degree 5 by pairs
                        * of terms in r^2: a shorter chain of dependent FMAs than Horner's), and 2^n by adding n's bits
                        * (the low bits of that sum, shifted) to y's exponent: within 1.5 ulp wherever e^x is a normal
                        * float (tests/integration/test_te_cpu.c), 0 where it is below 2^-126 (x < -87.33654): denormal
                        * results are flushed to 0, which saves the two half scales and their multiplies that an exact
                        * denormal needs; x * inf (inf, or NaN kept) where x > 88.72283 (e^x overflows) or is NaN. The
                        * outer ranges select bits by masks: as `x < a ? b : x` the compiler's partial redundancy
                        * elimination folds the constant path, leaving the polynomial on one branch, which without
                        * masked vector instructions (AVX2) keeps the whole loop scalar */
                       /* e^(x - n ln 2), for n the integer nearest x / ln 2 */
                       "static inline float tt_exp_rest(float x, float n) {\n"
                       "    float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;\n"
                       "    float r2 = r * r;\n"
                       "    float a = 1.9875691500e-4f * r + 1.3981999507e-3f, b = 8.3334519073e-3f * r + "
                       "4.1665795894e-2f;\n"
                       "    float p = (a * r2 + b) * r2 + (1.6666665459e-1f * r + 5.0000001201e-1f);\n"
                       "    return (p * r2 + r) + 1.0f;\n"
                       "}\n"
                       "static inline float tt_expf(float x) {\n"
                       "    union { float f; uint32_t i; } k = {x * 1.44269504088896341f + 12582912.0f}, y, o = {x * "
                       "INFINITY};\n"
                       "    float n = k.f - 12582912.0f;\n"
                       "    y.f = tt_exp_rest(x, n);\n"
                       "    uint32_t out = -(uint32_t)!(x <= 88.72283f), small = -(uint32_t)(x < -87.33654f);\n"
                       "    y.i = (((y.i + (k.i << 23)) & ~out) | (o.i & out)) & ~small;\n"
                       "    return y.f;\n"
                       "}\n"
                       /* the same where x is at most 0 or NaN (a softmax's x minus its row's maximum): no overflow
                        * to select, so 2^n comes from n converted to an integer, and only the flush to 0 is a
                        * mask: 3 vector operations fewer than tt_expf. n goes to the conversion only where it is
                        * at least -128 (a float out of int's range or NaN does not convert in C): below, the
                        * result is flushed to 0 anyway, and a NaN's n becomes 0, which keeps y NaN */
                       "static inline float tt_expf_le0(float x) {\n"
                       "    union { float f; uint32_t i; } y;\n"
                       "    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;\n"
                       "    y.f = tt_exp_rest(x, n);\n"
                       "    float m = n >= -128.0f ? n : 0.0f;\n"
                       "    y.i = (y.i + ((uint32_t)(int32_t)m << 23)) & ~-(uint32_t)(x < -87.33654f);\n"
                       "    return y.f;\n"
                       "}\n#endif\n");
    StrBuf_printf(out, "void %s(float **t) {\n", fn);
    for (int i = 0; i < this->n_args; i++) {
        const TeTensor *tt = &this->dag->prog->tensors[i];
        if (!tt->is_const) {
            StrBuf_printf(out, "    float *restrict T%d = t[%d];\n", i, i);
            continue;
        }
        StrBuf_printf(out, "    static const float T%d", i); /* numbers the compiler folds into the code */
        const_values(tt, out);
    }
    emit_block(&E, this->root, 1);
    StrBuf_append(out, "}\n");
}

/* Fills the launch shape from the bound loops under n; fails on a buffer
 * a GPU thread cannot hold. */
static Status launch_shape(const LoopNest *ln, const LnNode *n, TeLaunch *l, char *err) {
    if (!n->is_loop && n->part == LN_ALLOC) {
        int t = ln->dag->stages[n->stage].tensor;
        const char *name = ln->dag->prog->tensors[t].name;
        if (ln->buf[t].scope == BUF_SHARED) {
            l->shared_floats += buffer_floats(ln, t);
            if (l->shared_floats > TE_GPU_SHARED_FLOATS)
                return tt_fail(err, "%s: %lld floats of shared memory per block, more than %d", name,
                               (long long)l->shared_floats, TE_GPU_SHARED_FLOATS);
        } else if (buffer_floats(ln, t) > TE_GPU_PRIVATE_FLOATS)
            return tt_fail(err, "%s: a buffer of %lld floats per thread, more than %d", name,
                           (long long)buffer_floats(ln, t), TE_GPU_PRIVATE_FLOATS);
    }
    if (!n->is_loop) return TT_OK;
    if (n->bind && n->bind <= 6) {
        int64_t *dim = n->bind <= 3 ? &l->grid[n->bind - 1] : &l->block[n->bind - 4];
        *dim = n->extent;
    }
    for (int i = 0; i < n->n_kids; i++)
        if (launch_shape(ln, n->kids[i], l, err)) return TT_ERR;
    return TT_OK;
}

static void shared_decls(Emit *E, const LnNode *n) {
    if (!n->is_loop && n->part == LN_ALLOC && gpu_shared(E, n)) {
        int t = E->ln->dag->stages[n->stage].tensor;
        StrBuf_printf(E->out, "    %s float L%d[%lld];\n", E->dia->shared, t, (long long)buffer_floats(E->ln, t));
    }
    for (int i = 0; n->is_loop && i < n->n_kids; i++)
        shared_decls(E, n->kids[i]);
}

Status LoopNest_emit_gpu(const LoopNest *this, int cuda, const char *prefix, StrBuf *out, TeLaunch *launches,
                         int *n_launches, char *err) {
    const Dialect *d = cuda ? &CUDA_DIALECT : &OPENCL_DIALECT;
    Emit E = {.ln = this, .g = this->dag->prog, .out = out, .dia = d};
    *n_launches = 0;
    helpers(d, out);
    for (int k = 0; k < this->root->n_kids && k < TE_MAX_LAUNCHES; k++) {
        TeLaunch *l = &launches[(*n_launches)++];
        snprintf(l->name, sizeof l->name, "%s%d", prefix, k);
        for (int a = 0; a < 3; a++)
            l->grid[a] = l->block[a] = 1;
        l->shared_floats = 0;
        if (!this->root->kids[k]->is_loop)
            return tt_fail(err, "%s: a cache stage computed at root needs a global buffer; compute it at a loop",
                           this->dag->prog->tensors[this->dag->stages[this->root->kids[k]->stage].tensor].name);
        if (launch_shape(this, this->root->kids[k], l, err)) return TT_ERR;
        if (l->block[0] * l->block[1] * l->block[2] > 1024)
            return tt_fail(err, "kernel %d: %lld threads per block, more than 1024", k,
                           (long long)(l->block[0] * l->block[1] * l->block[2]));
        StrBuf_printf(out, "%s void %s(", cuda ? "extern \"C\" __global__" : "__kernel", l->name);
        for (int i = 0; i < this->n_args; i++) /* a constant's parameter is unused: its values are in the code */
            StrBuf_printf(out, "%s%sfloat *%s %s%d", i ? ", " : "", cuda ? "" : "__global ",
                          cuda ? "__restrict__" : "restrict", E.g->tensors[i].is_const ? "tt_unused" : "T", i);
        StrBuf_append(out, ") {\n");
        for (int i = 0; i < this->n_args; i++)
            if (E.g->tensors[i].is_const) {
                StrBuf_printf(out, "    %s float T%d", cuda ? "const" : "__constant", i);
                const_values(&E.g->tensors[i], out);
            }
        if (l->shared_floats) { /* the block's shared buffers, the thread's number in it */
            shared_decls(&E, this->root->kids[k]);
            StrBuf_printf(out, "    const %s tt_tid = %s + %s * (%s + %s * %s), tt_nt = %lld;\n", d->int_t,
                          d->local_id[0], d->local_size[0], d->local_id[1], d->local_size[1], d->local_id[2],
                          (long long)(l->block[0] * l->block[1] * l->block[2]));
        }
        emit_node(&E, this->root->kids[k], 1);
        StrBuf_append(out, "}\n");
    }
    return TT_OK;
}
