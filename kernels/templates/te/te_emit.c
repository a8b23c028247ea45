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
    const char *func_prefix; /* before the helpers' definitions */
    const char *barrier;     /* every thread of the block waits, shared memory settled */
    const char *shared;      /* a shared-memory declaration's qualifier */
    const char *local_id[3], *local_size[3];
} Dialect;

static const Dialect C_DIALECT = {
    "int64_t",  {"tt_expf", "logf", "sqrtf", NULL, "tanhf", "erff", "fabsf", "tt_fmaxf", "tt_fminf"},
    "INFINITY", "static inline",
    NULL,       NULL,
    {NULL},     {NULL}};
static const Dialect OPENCL_DIALECT = {"long",
                                       {"exp", "log", "sqrt", "rsqrt", "tanh", "erf", "fabs", "fmax", "fmin"},
                                       "INFINITY",
                                       "static inline",
                                       "barrier(CLK_LOCAL_MEM_FENCE);",
                                       "__local",
                                       {"get_local_id(0)", "get_local_id(1)", "get_local_id(2)"},
                                       {"get_local_size(0)", "get_local_size(1)", "get_local_size(2)"}};
static const Dialect CUDA_DIALECT = {"long long",
                                     {"expf", "logf", "sqrtf", "rsqrtf", "tanhf", "erff", "fabsf", "fmaxf", "fminf"},
                                     "__int_as_float(0x7f800000)",
                                     "static __device__ __forceinline__",
                                     "__syncthreads();",
                                     "__shared__",
                                     {"threadIdx.x", "threadIdx.y", "threadIdx.z"},
                                     {"blockDim.x", "blockDim.y", "blockDim.z"}};

typedef struct Emit {
    const LoopNest *ln;
    const TeProgram *g;
    StrBuf *out;
    const Dialect *dia;
    int cur;       /* the stage whose expression is written (its accesses may read a cache) */
    int collapsed; /* parallel loops still to come that an enclosing `collapse` covers */
} Emit;

static void expr(Emit *E, const TeExpr *e, char **env, const char *red_value);

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

static void expr(Emit *E, const TeExpr *e, char **env, const char *red_value) {
    StrBuf *o = E->out;
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

/* On cpu a large buffer is on the heap, freed at the end of its block. */
static int on_heap(const Emit *E, const LnNode *n) {
    return E->dia == &C_DIALECT && n->part == LN_ALLOC &&
           buffer_floats(E->ln, E->ln->dag->stages[n->stage].tensor) > TE_STACK_FLOATS;
}

static void emit_alloc(Emit *E, const LnNode *n, int depth) {
    int t = E->ln->dag->stages[n->stage].tensor;
    long long floats = (long long)buffer_floats(E->ln, t);
    indent(E->out, depth);
    if (on_heap(E, n))
        StrBuf_printf(E->out, "float *L%d = (float *)malloc(sizeof(float) * %lld);\n", t, floats);
    else if (gpu_shared(E, n)) /* its readers of the last round are done; count the elements to share them out */
        StrBuf_printf(E->out, "%s\n%*s%s tt_c%d = 0;\n", E->dia->barrier, 4 * depth, "", E->dia->int_t, t);
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
    StrBuf_append(o, out_ref.data);
    StrBuf_append(o, " = ");
    int rop = ts->red ? ts->red->op : -1;
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
            StrBuf_printf(o, "%s(%s, (float)", E->dia->fun[rop == TE_MAX_OVER ? TE_FMAX : TE_FMIN], out_ref.data);
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

/* The kids of a loop or block; a shared buffer's filling ends with a barrier,
 * heap buffers are freed at the end. */
static void emit_block(Emit *E, const LnNode *n, int depth) {
    int barrier_after = -1;
    for (int i = 0; i < n->n_kids; i++) {
        const LnNode *k = n->kids[i];
        emit_node(E, k, depth);
        if (!k->is_loop && k->part == LN_ALLOC && gpu_shared(E, k)) barrier_after = i + (int)k->extent;
        if (i == barrier_after) indent(E->out, depth), StrBuf_printf(E->out, "%s\n", E->dia->barrier);
    }
    free_heap(E, n, depth);
}

static void emit_node(Emit *E, const LnNode *n, int depth) {
    StrBuf *o = E->out;
    if (!n->is_loop) {
        emit_stmt(E, n, depth);
        return;
    }
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
    if (c && n->ann == ANN_VECTORIZE) indent(o, depth), StrBuf_append(o, "#pragma omp simd\n");
    if (c && n->unroll > 0)
        indent(o, depth),
            StrBuf_printf(o, "#pragma GCC unroll %lld\n", (long long)(n->unroll < 65535 ? n->unroll : 65534));
    indent(o, depth);
    StrBuf_printf(o, "for (%s %s = 0; %s < %lld; %s++) {\n", E->dia->int_t, n->var, n->var, (long long)n->extent,
                  n->var);
    emit_block(E, n, depth + 1);
    indent(o, depth);
    StrBuf_append(o, "}\n");
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
    Emit E = {this, this->dag->prog, out, &C_DIALECT, 0, 0};
    StrBuf_append(out, "#include <math.h>\n#include <stdint.h>\n#include <stdlib.h>\n");
    helpers(&C_DIALECT, out);
    /* fmaxf / fminf (the larger / smaller, a NaN only when both are) as compares and a select, which the
     * compiler vectorizes: the library calls it does not */
    StrBuf_append(out, "#ifndef TT_TE_FMINMAX\n#define TT_TE_FMINMAX\n"
                       "static inline float tt_fmaxf(float a, float b) { return a > b || b != b ? a : b; }\n"
                       "static inline float tt_fminf(float a, float b) { return a < b || b != b ? a : b; }\n"
                       /* expf of float arithmetic only, so that a loop of it vectorizes (no float-to-int
                        * conversion, whose trap the compiler will not if-convert beside the clamps): n = round(x /
                        * ln 2) by adding 1.5 * 2^23, 2^n as two halves built from n's bits (denormal results and
                        * the overflow to inf come out right), a degree-6 polynomial of the rest; within 1.01 ulp
                        * over [-104, 88.8] (tests/integration/test_te_cpu.c), 0 below, inf above, NaN kept */
                       "static inline float tt_expf(float x) {\n"
                       "    x = x < -104.0f ? -104.0f : x;\n"
                       "    x = x > 88.8f ? 88.8f : x;\n"
                       "    union { float f; int32_t i; } k = {x * 1.44269504088896341f + 12582912.0f};\n"
                       "    float n = k.f - 12582912.0f;\n"
                       "    int32_t ni = k.i - 0x4B400000, h = ni >> 1;\n"
                       "    float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;\n"
                       "    float p = 1.9875691500e-4f;\n"
                       "    p = p * r + 1.3981999507e-3f;\n"
                       "    p = p * r + 8.3334519073e-3f;\n"
                       "    p = p * r + 4.1665795894e-2f;\n"
                       "    p = p * r + 1.6666665459e-1f;\n"
                       "    p = p * r + 5.0000001201e-1f;\n"
                       "    union { int32_t i; float f; } s1 = {(h + 127) << 23}, s2 = {(ni - h + 127) << 23};\n"
                       "    return (p * r * r + r + 1.0f) * s1.f * s2.f;\n"
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
    Emit E = {this, this->dag->prog, out, d, 0, 0};
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
