/* te/dag.c: stages, accesses, analyses and the workload key (see dag.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "te/dag.h"

/* ---- formatting ------------------------------------------------------------- */

static const char *const BIN[] = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
static const char *const FUN[] = {"exp", "log", "sqrt", "rsqrt", "tanh", "erf", "abs", "max", "min"};
static const char *const RED[] = {"sum", "max_over", "min_over"};

/* The shortest text that reads back as the same double. */
static void format_number(StrBuf *out, const TeExpr *e) {
    if (e->type == TE_TINT) {
        StrBuf_printf(out, "%lld", (long long)e->inum);
        return;
    }
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, e->num);
        if (strtod(buf, NULL) == e->num) break;
    }
    /* keep it a float literal */
    if (!strpbrk(buf, ".eEin")) strcat(buf, ".0");
    StrBuf_append(out, buf);
}

typedef struct Names {
    const TeProgram *prog;
    const char *const *var; /* NULL: the program's own names */
    const char *const *tensor;
} Names;

static void fmt(const Names *n, const TeExpr *e, StrBuf *out) {
    const TeProgram *g = n->prog;
    switch (e->kind) {
    case TE_NUM:
        format_number(out, e);
        return;
    case TE_VAR:
        StrBuf_append(out, n->var ? n->var[e->var] : g->vars[e->var].name);
        return;
    case TE_ACCESS:
        StrBuf_append(out, n->tensor ? n->tensor[e->tensor] : g->tensors[e->tensor].name);
        StrBuf_append(out, "[");
        for (int i = 0; i < e->n_kids; i++) {
            if (i) StrBuf_append(out, ", ");
            fmt(n, e->kid[i], out);
        }
        StrBuf_append(out, "]");
        return;
    case TE_NEG:
    case TE_NOT:
        StrBuf_append(out, e->kind == TE_NEG ? "-" : "!");
        fmt(n, e->kid[0], out);
        return;
    case TE_BIN:
        StrBuf_append(out, "(");
        fmt(n, e->kid[0], out);
        StrBuf_printf(out, " %s ", BIN[e->op]);
        fmt(n, e->kid[1], out);
        StrBuf_append(out, ")");
        return;
    case TE_CALL:
    case TE_IF:
        StrBuf_append(out, e->kind == TE_IF ? "if" : FUN[e->op]);
        StrBuf_append(out, "(");
        for (int i = 0; i < e->n_kids; i++) {
            if (i) StrBuf_append(out, ", ");
            fmt(n, e->kid[i], out);
        }
        StrBuf_append(out, ")");
        return;
    case TE_REDUCE:
        StrBuf_printf(out, "%s(", RED[e->op]);
        fmt(n, e->kid[0], out);
        for (int i = 0; i < e->n_axes; i++) {
            int v = e->axes[i];
            StrBuf_printf(out, ", %s < %lld", n->var ? n->var[v] : g->vars[v].name, (long long)g->vars[v].extent);
        }
        StrBuf_append(out, ")");
        return;
    }
}

void TeExpr_format(const TeProgram *prog, const TeExpr *e, StrBuf *out) {
    Names n = {prog, NULL, NULL};
    fmt(&n, e, out);
}

/* ---- building --------------------------------------------------------------- */

static Status find_reduction(const TeProgram *g, const TeExpr *e, int under, const TeExpr **red, char *err) {
    if (e->kind == TE_REDUCE) {
        if (under || *red)
            return tt_fail(err,
                           "%s:%d:%d: a tensor's value may hold one reduction, not under 'if' nor inside another "
                           "reduction; define this one as a tensor of its own",
                           g->file, e->line, e->col);
        *red = e;
        return find_reduction(g, e->kid[0], 1, red, err);
    }
    for (int i = 0; i < e->n_kids; i++)
        if (find_reduction(g, e->kid[i], under || e->kind == TE_IF, red, err)) return TT_ERR;
    return TT_OK;
}

static void uses_vars(const TeExpr *e, int *used) {
    if (e->kind == TE_VAR) used[e->var] = 1;
    for (int i = 0; i < e->n_kids; i++)
        uses_vars(e->kid[i], used);
}

static void collect(const TeProgram *g, TeStage *s, const TeExpr *e, int in_reduce) {
    if (e->kind == TE_ACCESS && s->n_access < TE_MAX_ACCESSES) {
        TeAccess *a = &s->access[s->n_access++];
        a->tensor = e->tensor;
        a->at = e;
        a->in_reduce = in_reduce;
        int used[TE_MAX_VARS] = {0};
        uses_vars(e, used);
        /* a constant's element is a number of the code, not data a tile could keep */
        for (int d = 0; d < s->n_spatial && !g->tensors[e->tensor].is_const; d++)
            a->missing_spatial += !used[s->spatial[d]];
    }
    for (int i = 0; i < e->n_kids; i++)
        collect(g, s, e->kid[i], in_reduce || e->kind == TE_REDUCE);
}

/* Floating-point operations of one evaluation of e (index arithmetic and
 * conditions are not counted). Reductions count their body once per step. */
static double flops_of(const TeProgram *g, const TeExpr *e) {
    if (e->kind == TE_IF) {
        double a = flops_of(g, e->kid[1]), b = flops_of(g, e->kid[2]);
        return a > b ? a : b;
    }
    if (e->type != TE_TFLOAT) return 0;
    double f = 0;
    for (int i = 0; i < e->n_kids; i++)
        f += flops_of(g, e->kid[i]);
    if (e->kind == TE_BIN || e->kind == TE_CALL || e->kind == TE_NEG) f += 1;
    if (e->kind == TE_REDUCE) {
        double n = 1;
        for (int i = 0; i < e->n_axes; i++)
            n *= (double)g->vars[e->axes[i]].extent;
        f = n * (f + 1);
    }
    return f;
}

static int is_elementwise(const TeStage *s) {
    if (s->red) return 0;
    for (int a = 0; a < s->n_access; a++) {
        const TeExpr *at = s->access[a].at;
        for (int d = 0; d < at->n_kids; d++) {
            const TeExpr *ix = at->kid[d];
            if (ix->kind == TE_NUM) continue;
            if (ix->kind != TE_VAR) return 0;
        }
    }
    return 1;
}

/* Does consumer c read stage s at exactly s's spatial variables' positions? */
static int reads_exactly(const TeDag *dag, const TeStage *c, const TeStage *s) {
    const TeTensor *ct = &dag->prog->tensors[c->tensor];
    const TeTensor *st = &dag->prog->tensors[s->tensor];
    if (ct->ndim != st->ndim) return 0;
    for (int d = 0; d < ct->ndim; d++)
        if (ct->shape[d] != st->shape[d]) return 0;
    for (int a = 0; a < c->n_access; a++) {
        const TeExpr *at = c->access[a].at;
        if (at->tensor != s->tensor) continue;
        for (int d = 0; d < at->n_kids; d++)
            if (at->kid[d]->kind != TE_VAR || at->kid[d]->var != c->spatial[d]) return 0;
    }
    return 1;
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

Status TeDag_build(TeDag *out, const TeProgram *g, char *err) {
    memset(out, 0, sizeof *out);
    out->prog = g;
    for (int t = 0; t < g->n_tensors; t++) {
        out->stage_of[t] = -1;
        const TeTensor *tt = &g->tensors[t];
        if (!te_is_defined(tt)) continue;
        TeStage *s = &out->stages[out->n_stages];
        s->tensor = t;
        s->fusible_consumer = -1;
        s->is_output = tt->is_output;
        s->n_spatial = tt->ndim;
        memcpy(s->spatial, tt->axes, sizeof s->spatial);
        if (find_reduction(g, tt->body, 0, &s->red, err)) return TT_ERR;
        if (s->red) {
            s->n_reduce = s->red->n_axes;
            memcpy(s->reduce, s->red->axes, sizeof s->reduce);
        }
        collect(g, s, tt->body, 0);
        if (s->n_access == TE_MAX_ACCESSES)
            return tt_fail(err, "%s:%d:%d: more than %d tensor accesses in one definition", g->file, tt->line, tt->col,
                           TE_MAX_ACCESSES - 1);
        double numel = (double)TeProgram_numel(g, t);
        s->flops = numel * flops_of(g, tt->body);
        out->flops += s->flops;
        s->injective = !s->red;
        s->elementwise = is_elementwise(s);
        s->inlinable = s->elementwise && !s->is_output;
        int missing = 0;
        for (int a = 0; a < s->n_access; a++)
            missing += s->access[a].missing_spatial;
        s->data_reuse = s->red && missing >= 2;
        out->stage_of[t] = out->n_stages++;
    }
    for (int i = 0; i < out->n_stages; i++) {
        TeStage *s = &out->stages[i];
        for (int a = 0; a < s->n_access; a++) {
            int p = out->stage_of[s->access[a].tensor];
            if (p < 0) continue;
            TeStage *ps = &out->stages[p];
            int seen = 0;
            for (int k = 0; k < ps->n_consumers; k++)
                seen |= ps->consumers[k] == i;
            if (!seen) ps->consumers[ps->n_consumers++] = i;
        }
    }
    for (int i = 0; i < out->n_stages; i++) {
        TeStage *s = &out->stages[i];
        if (!s->data_reuse || s->is_output || s->n_consumers != 1) continue;
        TeStage *c = &out->stages[s->consumers[0]];
        if (c->elementwise && reads_exactly(out, c, s)) s->fusible_consumer = s->consumers[0];
    }
    StrBuf canon;
    StrBuf_init(&canon);
    TeDag_canonical(out, &canon);
    snprintf(out->key, sizeof out->key, "te-%016llx", (unsigned long long)fnv1a(canon.data));
    StrBuf_done(&canon);
    return TT_OK;
}

void TeDag_canonical(const TeDag *this, StrBuf *out) {
    const TeProgram *g = this->prog;
    static __thread char vname[TE_MAX_VARS][12], tname[TE_MAX_TENSORS][12];
    const char *vp[TE_MAX_VARS], *tp[TE_MAX_TENSORS];
    for (int t = 0; t < g->n_tensors; t++)
        snprintf(tname[t], sizeof tname[t], "t%d", t), tp[t] = tname[t];
    /* variables by role and position: spatial s0.., reduction variables r0..
     * in binding order within their definition */
    int nr = 0, last_tensor = -1;
    for (int v = 0; v < g->n_vars; v++)
        vp[v] = vname[v];
    for (int t = 0; t < g->n_tensors; t++) {
        const TeTensor *tt = &g->tensors[t];
        if (!te_is_defined(tt)) continue;
        for (int d = 0; d < tt->ndim; d++)
            snprintf(vname[tt->axes[d]], sizeof vname[0], "s%d", d);
    }
    for (int v = 0; v < g->n_vars; v++) {
        if (!g->vars[v].is_reduce) continue;
        /* reduction variables are numbered per definition: find which one */
        int owner = -1;
        for (int t = 0; t < g->n_tensors; t++)
            if (te_is_defined(&g->tensors[t]) && g->tensors[t].axes[0] < v) owner = t;
        if (owner != last_tensor) nr = 0, last_tensor = owner;
        snprintf(vname[v], sizeof vname[0], "r%d", nr++);
    }
    Names n = {g, vp, tp};
    for (int t = 0; t < g->n_tensors; t++) {
        const TeTensor *tt = &g->tensors[t];
        StrBuf_printf(out, "t%d[", t);
        for (int d = 0; d < tt->ndim; d++)
            StrBuf_printf(out, "%s%lld", d ? "," : "", (long long)tt->shape[d]);
        if (tt->is_input) {
            StrBuf_printf(out, "]%s\n", tt->dtype == TE_F16 ? "f16" : "f32");
            continue;
        }
        if (tt->is_const) { /* its values are part of the computation */
            StrBuf_append(out, "]=const");
            for (int64_t i = 0; i < TeProgram_numel(g, t); i++)
                StrBuf_printf(out, "%s%.9g", i ? "," : "(", tt->values[i]);
            StrBuf_append(out, ")\n");
            continue;
        }
        StrBuf_append(out, "]=");
        fmt(&n, tt->body, out);
        StrBuf_printf(out, "%s\n", tt->is_output ? " out" : "");
    }
}
