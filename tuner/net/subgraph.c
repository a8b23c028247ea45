/* tuner/net/subgraph.c: the partition of a network graph into subgraphs and
 * their tensor expressions (see subgraph.h). */
#include "tuner/net/subgraph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/strbuf.h"
#include "te/dag.h"
#include "te/te.h"

static bool is_elementwise(GraphOpKind k) {
    return k == GOP_BIAS_ADD || k == GOP_BATCH_NORM || k == GOP_RELU || k == GOP_CLIP || k == GOP_GELU ||
           k == GOP_SCALE || k == GOP_ADD || k == GOP_MASK_ADD;
}

/* Inputs an op adds to a chain besides the tensor it continues. */
static int extra_args(const GraphOp *op) { return op->n_params + (op->kind == GOP_ADD ? 1 : 0); }

/* ---- the expression text ---- */

typedef struct Writer {
    const Graph *g;
    Subgraph *sg;
    StrBuf decls, body;
    char names[SUBGRAPH_MAX_IN][8];
    int n_stages;
} Writer;

/* A float literal the parser reads as a float ("6.0", "1e-05"). */
static void lit(char *buf, size_t n, double v) {
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, n, "%.1f", v);
    else
        snprintf(buf, n, "%.9g", v);
}

static void dims_text(const int64_t *d, int nd, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < nd && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "", (long long)d[i]);
}

/* The name of an input (added on first use) with the declared shape d. */
static const char *arg(Writer *w, int tensor, int op, int param, const int64_t *d, int nd) {
    Subgraph *s = w->sg;
    for (int a = 0; a < s->n_args; a++)
        if (s->args[a].tensor == tensor && (tensor >= 0 || (s->args[a].op == op && s->args[a].param == param)))
            return w->names[a];
    int a = s->n_args++; /* the caller checked the count */
    s->args[a] = (SubgraphArg){tensor, op, param};
    snprintf(w->names[a], sizeof w->names[a], "I%d", a);
    char ds[96];
    dims_text(d, nd, ds, sizeof ds);
    StrBuf_printf(&w->decls, "input I%d[%s]\n", a, ds);
    return w->names[a];
}

static const char *tensor_arg(Writer *w, int t) {
    const GraphTensor *x = &w->g->tensors[t];
    return arg(w, t, -1, -1, x->dim, x->ndim);
}

static const char *param_arg(Writer *w, int op, int p, const int64_t *d, int nd) { return arg(w, -1, op, p, d, nd); }

/* "v0 < 1, v1 < 64, ..." for the stage's spatial axes, and "v0, v1, ..." */
static void axes(const int64_t *d, int nd, char *decl, size_t nd_len, char *use, size_t nu) {
    size_t a = 0, b = 0;
    decl[0] = use[0] = 0;
    for (int i = 0; i < nd; i++) {
        a += (size_t)snprintf(decl + a, nd_len - a, "%sv%d < %lld", i ? ", " : "", i, (long long)d[i]);
        b += (size_t)snprintf(use + b, nu - b, "%sv%d", i ? ", " : "", i);
    }
}

/* Starts a stage over shape d: "S3[v0 < .., ...] = "; returns its name in name. */
static void stage(Writer *w, const int64_t *d, int nd, char *name, size_t n) {
    snprintf(name, n, "S%d", w->n_stages++);
    char decl[256], use[64];
    axes(d, nd, decl, sizeof decl, use, sizeof use);
    StrBuf_printf(&w->body, "%s[%s] =\n    ", name, decl);
}

/* "v0, v1" over the first nd spatial variables */
static void vars(int nd, char *buf, size_t n) {
    size_t u = 0;
    buf[0] = 0;
    for (int i = 0; i < nd; i++)
        u += (size_t)snprintf(buf + u, n - u, "%sv%d", i ? ", " : "", i);
}

/* The window of a convolution or pooling at output (v2, v3) and taps (rh, rw):
 * the input's row and column and the condition that they are inside the
 * image ("" without padding). */
static void window(int64_t H, int64_t W, int64_t sh, int64_t sw, int64_t ph, int64_t pw, const char *rh, const char *rw,
                   char cond[256], char *ih, char *iw, size_t n) {
    char yh[64], xw[64];
    if (sh == 1)
        snprintf(yh, sizeof yh, "v2 + %s", rh);
    else
        snprintf(yh, sizeof yh, "v2 * %lld + %s", (long long)sh, rh);
    if (sw == 1)
        snprintf(xw, sizeof xw, "v3 + %s", rw);
    else
        snprintf(xw, sizeof xw, "v3 * %lld + %s", (long long)sw, rw);
    if (ph)
        snprintf(ih, n, "%s - %lld", yh, (long long)ph);
    else
        snprintf(ih, n, "%s", yh);
    if (pw)
        snprintf(iw, n, "%s - %lld", xw, (long long)pw);
    else
        snprintf(iw, n, "%s", xw);
    size_t u = 0;
    cond[0] = 0;
    if (ph) u += (size_t)snprintf(cond, 256, "%s >= %lld && %s < %lld", yh, (long long)ph, yh, (long long)(H + ph));
    if (pw)
        snprintf(cond + u, 256 - u, "%s%s >= %lld && %s < %lld", u ? " && " : "", xw, (long long)pw, xw,
                 (long long)(W + pw));
}

/* The padded read "if(COND, X[v0, CHAN, row, col], ZERO)" (no if without padding). */
static void window_read(StrBuf *o, const char *x, const char *chan, int64_t H, int64_t W, int64_t sh, int64_t sw,
                        int64_t ph, int64_t pw, const char *rh, const char *rw, const char *zero) {
    char cond[256], ih[96], iw[96];
    window(H, W, sh, sw, ph, pw, rh, rw, cond, ih, iw, sizeof ih);
    if (!cond[0])
        StrBuf_printf(o, "%s[v0, %s, %s, %s]", x, chan, ih, iw);
    else
        StrBuf_printf(o, "if(%s, %s[v0, %s, %s, %s], %s)", cond, x, chan, ih, iw, zero);
}

/* The head op's stages; the name of its result in cur. */
static void head(Writer *w, int i, char *cur, size_t n) {
    const Graph *g = w->g;
    const GraphOp *op = &g->ops[i];
    const GraphTensor *xt = &g->tensors[op->in[0]], *yt = &g->tensors[op->out];
    StrBuf *o = &w->body;
    char v[64];
    vars(yt->ndim, v, sizeof v);
    switch (op->kind) {
    case GOP_CONV2D:
    case GOP_DEPTHWISE: {
        const Workload *wl = &op->wl;
        bool dw = op->kind == GOP_DEPTHWISE;
        const char *x = tensor_arg(w, op->in[0]);
        int64_t fd[4] = {wl->co, wl->ci, wl->kh, wl->kw}, fdw[3] = {wl->co, wl->kh, wl->kw};
        const char *f = dw ? param_arg(w, i, 0, fdw, 3) : param_arg(w, i, 0, fd, 4);
        stage(w, yt->dim, yt->ndim, cur, n);
        StrBuf_append(o, "sum(");
        window_read(o, x, dw ? "v1" : "r0", wl->h, wl->w, wl->stride_h, wl->stride_w, wl->pad_h, wl->pad_w, "r1", "r2",
                    "0");
        if (dw)
            StrBuf_printf(o, " * %s[v1, r1, r2], r1 < %lld, r2 < %lld)\n", f, (long long)wl->kh, (long long)wl->kw);
        else
            StrBuf_printf(o, " * %s[v1, r0, r1, r2], r0 < %lld, r1 < %lld, r2 < %lld)\n", f, (long long)wl->ci,
                          (long long)wl->kh, (long long)wl->kw);
        break;
    }
    case GOP_DENSE: {
        const char *x = tensor_arg(w, op->in[0]);
        int64_t wd[2] = {op->wl.n, op->wl.k};
        const char *f = param_arg(w, i, 0, wd, 2);
        stage(w, yt->dim, yt->ndim, cur, n);
        StrBuf_printf(o, "sum(%s[v0, r0] * %s[v1, r0], r0 < %lld)\n", x, f, (long long)op->wl.k);
        break;
    }
    case GOP_BATCH_MATMUL: {
        const char *a = tensor_arg(w, op->in[0]);
        const char *b = tensor_arg(w, op->in[1]);
        stage(w, yt->dim, yt->ndim, cur, n);
        StrBuf_printf(o, "sum(%s[v0, v1, r0] * %s[v0, v2, r0], r0 < %lld)\n", a, b, (long long)op->wl.k);
        break;
    }
    case GOP_MAX_POOL:
    case GOP_AVG_POOL: {
        const char *x = tensor_arg(w, op->in[0]);
        int64_t H = xt->dim[2], W = xt->dim[3];
        char red[64];
        snprintf(red, sizeof red, "r0 < %lld, r1 < %lld", (long long)op->k, (long long)op->k);
        if (op->kind == GOP_MAX_POOL) {
            stage(w, yt->dim, yt->ndim, cur, n);
            StrBuf_append(o, "max_over(");
            window_read(o, x, "v1", H, W, op->stride, op->stride, op->pad, op->pad, "r0", "r1", "-3.4e38");
            StrBuf_printf(o, ", %s)\n", red);
        } else if (!op->pad) {
            stage(w, yt->dim, yt->ndim, cur, n);
            StrBuf_append(o, "sum(");
            window_read(o, x, "v1", H, W, op->stride, op->stride, 0, 0, "r0", "r1", "0");
            StrBuf_printf(o, ", %s) / %lld\n", red, (long long)(op->k * op->k));
        } else {
            /* the mean over the window's taps inside the image (padding excluded) */
            char sum[8], cnt[8];
            stage(w, yt->dim, yt->ndim, sum, sizeof sum);
            StrBuf_append(o, "sum(");
            window_read(o, x, "v1", H, W, op->stride, op->stride, op->pad, op->pad, "r0", "r1", "0");
            StrBuf_printf(o, ", %s)\n", red);
            int64_t cd[4] = {1, 1, yt->dim[2], yt->dim[3]};
            stage(w, cd, 4, cnt, sizeof cnt);
            StrBuf_append(o, "sum(");
            char cond[256], ih[96], iw[96];
            window(H, W, op->stride, op->stride, op->pad, op->pad, "r0", "r1", cond, ih, iw, sizeof ih);
            StrBuf_printf(o, "if(%s, 1.0, 0.0), %s)\n", cond, red);
            stage(w, yt->dim, yt->ndim, cur, n);
            StrBuf_printf(o, "%s[%s] / %s[0, 0, v2, v3]\n", sum, v, cnt);
        }
        break;
    }
    case GOP_GLOBAL_AVG_POOL: {
        const char *x = tensor_arg(w, op->in[0]);
        stage(w, yt->dim, yt->ndim, cur, n);
        StrBuf_printf(o, "sum(%s[v0, v1, r0, r1], r0 < %lld, r1 < %lld) / %lld\n", x, (long long)xt->dim[2],
                      (long long)xt->dim[3], (long long)(xt->dim[2] * xt->dim[3]));
        break;
    }
    case GOP_SOFTMAX:
    case GOP_LAYER_NORM: {
        const char *x = tensor_arg(w, op->in[0]);
        int nd = xt->ndim;
        int64_t last = xt->dim[nd - 1];
        char rv[64], mx[8], e[8], s[8];
        vars(nd - 1, rv, sizeof rv);
        const char *sep = nd > 1 ? ", " : "";
        if (op->kind == GOP_SOFTMAX) {
            stage(w, xt->dim, nd - 1, mx, sizeof mx);
            StrBuf_printf(o, "max_over(%s[%s%sr0], r0 < %lld)\n", x, rv, sep, (long long)last);
            stage(w, xt->dim, nd, e, sizeof e);
            StrBuf_printf(o, "exp(%s[%s] - %s[%s])\n", x, v, mx, rv);
            stage(w, xt->dim, nd - 1, s, sizeof s);
            StrBuf_printf(o, "sum(%s[%s%sr0], r0 < %lld)\n", e, rv, sep, (long long)last);
            stage(w, yt->dim, nd, cur, n);
            StrBuf_printf(o, "%s[%s] / %s[%s]\n", e, v, s, rv);
        } else {
            int64_t pd[1] = {last};
            const char *gm = param_arg(w, i, 0, pd, 1), *bt = param_arg(w, i, 1, pd, 1);
            char eps[32];
            lit(eps, sizeof eps, op->alpha);
            stage(w, xt->dim, nd - 1, mx, sizeof mx);
            StrBuf_printf(o, "sum(%s[%s%sr0], r0 < %lld) / %lld\n", x, rv, sep, (long long)last, (long long)last);
            stage(w, xt->dim, nd - 1, s, sizeof s);
            StrBuf_printf(o, "sum((%s[%s%sr0] - %s[%s]) * (%s[%s%sr0] - %s[%s]), r0 < %lld) / %lld\n", x, rv, sep, mx,
                          rv, x, rv, sep, mx, rv, (long long)last, (long long)last);
            stage(w, yt->dim, nd, cur, n);
            StrBuf_printf(o, "(%s[%s] - %s[%s]) * rsqrt(%s[%s] + %s) * %s[v%d] + %s[v%d]\n", x, v, mx, rv, s, rv, eps,
                          gm, nd - 1, bt, nd - 1);
        }
        break;
    }
    case GOP_CONCAT: {
        const char *xs[GRAPH_MAX_IN];
        for (int j = 0; j < op->n_in; j++)
            xs[j] = tensor_arg(w, op->in[j]);
        stage(w, yt->dim, yt->ndim, cur, n);
        int64_t c0 = 0;
        for (int j = 0; j < op->n_in; j++) {
            int64_t cj = g->tensors[op->in[j]].dim[1];
            if (j) StrBuf_append(o, " + ");
            if (op->n_in == 1)
                StrBuf_printf(o, "%s[v0, v1, v2, v3]", xs[j]);
            else if (j == 0)
                StrBuf_printf(o, "if(v1 < %lld, %s[v0, v1, v2, v3], 0.0)", (long long)cj, xs[j]);
            else if (j == op->n_in - 1)
                StrBuf_printf(o, "if(v1 >= %lld, %s[v0, v1 - %lld, v2, v3], 0.0)", (long long)c0, xs[j], (long long)c0);
            else
                StrBuf_printf(o, "if(v1 >= %lld && v1 < %lld, %s[v0, v1 - %lld, v2, v3], 0.0)", (long long)c0,
                              (long long)(c0 + cj), xs[j], (long long)c0);
            c0 += cj;
        }
        StrBuf_append(o, "\n");
        break;
    }
    case GOP_FLATTEN: {
        /* the input seen as [n][c*h*w]: a copy */
        int64_t d[2] = {yt->dim[0], yt->dim[1]};
        const char *x = arg(w, op->in[0], -1, -1, d, 2);
        stage(w, yt->dim, yt->ndim, cur, n);
        StrBuf_printf(o, "%s[v0, v1]\n", x);
        break;
    }
    case GOP_SPLIT_HEADS:
    case GOP_SPLIT_HEADS_T:
    case GOP_MERGE_HEADS: {
        /* 4-D views: [b][s][heads][d] <-> [b][heads][s][d] (or [b][heads][d][s]) */
        int64_t B, H, S, D;
        GraphOp_heads(g, op, &B, &H, &S, &D);
        int64_t flat[4] = {B, S, H, D}, hs[4] = {B, H, S, D}, ht[4] = {B, H, D, S};
        if (op->kind == GOP_MERGE_HEADS) {
            const char *x = arg(w, op->in[0], -1, -1, hs, 4);
            stage(w, flat, 4, cur, n);
            StrBuf_printf(o, "%s[v0, v2, v1, v3]\n", x);
        } else {
            const char *x = arg(w, op->in[0], -1, -1, flat, 4);
            stage(w, op->kind == GOP_SPLIT_HEADS ? hs : ht, 4, cur, n);
            if (op->kind == GOP_SPLIT_HEADS)
                StrBuf_printf(o, "%s[v0, v2, v1, v3]\n", x);
            else
                StrBuf_printf(o, "%s[v0, v3, v1, v2]\n", x);
        }
        break;
    }
    default: /* an elementwise op heading its chain: its input is read as it is */
        snprintf(cur, n, "%s", tensor_arg(w, op->in[0]));
        break;
    }
}

/* An elementwise op of the chain applied to cur (the tensor `from` of the graph). */
static void elementwise(Writer *w, int i, int from, char *cur, size_t n) {
    const Graph *g = w->g;
    const GraphOp *op = &g->ops[i];
    const GraphTensor *yt = &g->tensors[op->out];
    StrBuf *o = &w->body;
    char v[64], x[16];
    vars(yt->ndim, v, sizeof v);
    snprintf(x, sizeof x, "%s", cur);
    int64_t cd[1] = {yt->ndim > 1 ? yt->dim[1] : yt->dim[0]};
    const char *p0 = NULL, *p1 = NULL, *r = NULL;
    if (op->kind == GOP_BIAS_ADD) p0 = param_arg(w, i, 0, cd, 1);
    if (op->kind == GOP_BATCH_NORM) p0 = param_arg(w, i, 0, cd, 1), p1 = param_arg(w, i, 1, cd, 1);
    if (op->kind == GOP_ADD) r = op->in[0] == from && op->in[1] == from ? x : tensor_arg(w, op->in[op->in[0] == from]);
    int64_t heads = 1, md[2] = {0, 0};
    if (op->kind == GOP_MASK_ADD) {
        heads = g->tensors[op->in[0]].dim[0] / op->k;
        md[0] = op->k;
        md[1] = yt->dim[yt->ndim - 1];
        p0 = param_arg(w, i, 0, md, 2);
    }
    char a[32], b[32];
    stage(w, yt->dim, yt->ndim, cur, n);
    switch (op->kind) {
    case GOP_BIAS_ADD:
        StrBuf_printf(o, "%s[%s] + %s[v1]\n", x, v, p0);
        break;
    case GOP_BATCH_NORM:
        StrBuf_printf(o, "%s[%s] * %s[v1] + %s[v1]\n", x, v, p0, p1);
        break;
    case GOP_RELU:
        StrBuf_printf(o, "max(%s[%s], 0.0)\n", x, v);
        break;
    case GOP_CLIP:
        lit(a, sizeof a, op->alpha);
        lit(b, sizeof b, op->beta);
        StrBuf_printf(o, "min(max(%s[%s], %s), %s)\n", x, v, a, b);
        break;
    case GOP_GELU:
        StrBuf_printf(o, "0.5 * %s[%s] * (1.0 + erf(%s[%s] * 0.7071067811865476))\n", x, v, x, v);
        break;
    case GOP_SCALE:
        lit(a, sizeof a, op->alpha);
        StrBuf_printf(o, "%s[%s] * %s\n", x, v, a);
        break;
    case GOP_ADD:
        StrBuf_printf(o, "%s[%s] + %s[%s]\n", x, v, r, v);
        break;
    case GOP_MASK_ADD:
        if (heads == 1)
            StrBuf_printf(o, "%s[%s] + %s[v0, v%d]\n", x, v, p0, yt->ndim - 1);
        else
            StrBuf_printf(o, "%s[%s] + %s[v0 / %lld, v%d]\n", x, v, p0, (long long)heads, yt->ndim - 1);
        break;
    default:
        break;
    }
}

/* The expression of subgraph s into *text (owned by the caller). */
static void write_te(const Graph *g, Subgraph *s, const int *ops, char **text) {
    Writer w;
    memset(&w, 0, sizeof w);
    w.g = g;
    w.sg = s;
    StrBuf_init(&w.decls);
    StrBuf_init(&w.body);
    s->n_args = 0;
    char cur[16];
    head(&w, ops[0], cur, sizeof cur);
    int from = is_elementwise(g->ops[ops[0]].kind) ? g->ops[ops[0]].in[0] : g->ops[ops[0]].out;
    for (int k = is_elementwise(g->ops[ops[0]].kind) ? 0 : 1; k < s->n_ops; k++) {
        elementwise(&w, ops[k], from, cur, sizeof cur);
        from = g->ops[ops[k]].out;
    }
    StrBuf out;
    StrBuf_init(&out);
    StrBuf_printf(&out, "# %s (a subgraph of %s)\n%s%soutput %s\n", s->label, g->name, w.decls.data ? w.decls.data : "",
                  w.body.data ? w.body.data : "", cur);
    *text = StrBuf_take(&out);
    StrBuf_done(&out);
    StrBuf_done(&w.decls);
    StrBuf_done(&w.body);
}

/* ---- the partition ---- */

void Subgraphs_done(Subgraphs *this) {
    for (int t = 0; t < this->n_tasks; t++)
        free(this->tasks[t].te);
    free(this->tasks);
    free(this->sg);
    free(this->ops);
    free(this->of_op);
    free(this->order);
    memset(this, 0, sizeof *this);
}

/* Inputs the head op takes (before its chain). */
static int head_args(const GraphOp *op) {
    if (is_elementwise(op->kind)) return 1 + extra_args(op);
    int n = op->n_params;
    for (int j = 0; j < op->n_in; j++) {
        bool dup = false;
        for (int k = 0; k < j; k++)
            dup |= op->in[k] == op->in[j];
        n += !dup;
    }
    return n;
}

Status Subgraphs_make(const Graph *g, Subgraphs *out, char *err) {
    memset(out, 0, sizeof *out);
    int n = g->n_ops, cap = n ? n : 1;
    out->sg = tt_calloc((size_t)cap, sizeof *out->sg);
    out->ops = tt_malloc((size_t)cap * sizeof(int));
    out->of_op = tt_malloc((size_t)cap * sizeof(int));
    out->order = tt_malloc((size_t)cap * sizeof(int));
    out->tasks = tt_calloc((size_t)cap, sizeof *out->tasks);
    int *topo = tt_malloc((size_t)cap * sizeof(int)), *pos = tt_malloc((size_t)cap * sizeof(int));
    for (int i = 0; i < n; i++)
        out->of_op[i] = -1;
    Status st = Graph_order(g, topo, err);
    for (int k = 0; st == TT_OK && k < n; k++)
        pos[topo[k]] = k;

    /* heads: every op that is not elementwise, then elementwise ops no chain took, in topological order */
    int n_listed = 0;
    for (int pass = 0; st == TT_OK && pass < 2; pass++) {
        for (int k = 0; k < n; k++) {
            int i = topo[k];
            if (out->of_op[i] >= 0 || (pass == 0 && is_elementwise(g->ops[i].kind))) continue;
            int si = out->n_sg++;
            Subgraph *s = &out->sg[si];
            s->first = n_listed;
            out->ops[n_listed++] = i;
            out->of_op[i] = si;
            s->n_ops = 1;
            int args = head_args(&g->ops[i]), t = g->ops[i].out;
            /* the chain: elementwise ops, each the only reader of the tensor before it */
            for (;;) {
                if (GraphOp_isLayout(g->ops[i].kind) || t == g->output) break;
                int c = Graph_onlyReader(g, t);
                if (c < 0 || !is_elementwise(g->ops[c].kind) || out->of_op[c] >= 0) break;
                if (g->ops[c].kind != GOP_ADD && g->ops[c].in[0] != t) break;
                if (args + extra_args(&g->ops[c]) > SUBGRAPH_MAX_IN) break;
                args += extra_args(&g->ops[c]);
                out->ops[n_listed++] = c;
                out->of_op[c] = si;
                s->n_ops++;
                t = g->ops[c].out;
            }
            s->out = t;
        }
    }
    /* labels and the order of their last ops */
    for (int si = 0; st == TT_OK && si < out->n_sg; si++) {
        Subgraph *s = &out->sg[si];
        char kinds[64] = "";
        for (int k = 0; k < s->n_ops; k++) {
            const GraphOp *o = &g->ops[out->ops[s->first + k]];
            char part[32];
            if (o->kind == GOP_CLIP)
                snprintf(part, sizeof part, "clip(%g,%g)", o->alpha, o->beta);
            else
                snprintf(part, sizeof part, "%s", GraphOp_kindName(o->kind));
            if (k) strncat(kinds, "+", sizeof kinds - strlen(kinds) - 1);
            strncat(kinds, part, sizeof kinds - strlen(kinds) - 1);
        }
        const GraphOp *h = &g->ops[out->ops[s->first]];
        char shape[64];
        bool pool = h->kind == GOP_MAX_POOL || h->kind == GOP_AVG_POOL || h->kind == GOP_GLOBAL_AVG_POOL ||
                    h->kind == GOP_SOFTMAX || h->kind == GOP_LAYER_NORM;
        Graph_shapeStr(g, pool || is_elementwise(h->kind) ? h->in[0] : h->out, shape, sizeof shape);
        snprintf(s->label, sizeof s->label, "%s %s", kinds, shape);
        out->order[si] = si;
    }
    int ns = out->n_sg;
    for (int a = 1; st == TT_OK && a < ns; a++) /* insertion sort by the position of the last op */
        for (int b = a; b > 0; b--) {
            const Subgraph *x = &out->sg[out->order[b - 1]], *y = &out->sg[out->order[b]];
            if (pos[out->ops[x->first + x->n_ops - 1]] <= pos[out->ops[y->first + y->n_ops - 1]]) break;
            int tmp = out->order[b - 1];
            out->order[b - 1] = out->order[b];
            out->order[b] = tmp;
        }

    /* expressions and tasks: the same compute DAG key is one task */
    for (int k = 0; st == TT_OK && k < ns; k++) {
        int si = out->order[k];
        Subgraph *s = &out->sg[si];
        char *text = NULL;
        write_te(g, s, out->ops + s->first, &text);
        char file[64];
        snprintf(file, sizeof file, "%s/subgraph %d", g->name, si);
        TeProgram *prog = TeProgram_parse(text, file, NULL, 0, err);
        TeDag dag;
        if (!prog || TeDag_build(&dag, prog, err) != TT_OK) {
            char e2[TT_ERRLEN];
            snprintf(e2, sizeof e2, "%s", err);
            tt_fail(err, "%s: the expression of subgraph %d (%s) does not parse: %.300s", g->name, si, s->label, e2);
            TeProgram_delete(prog);
            free(text);
            st = TT_ERR;
            break;
        }
        int t = 0;
        while (t < out->n_tasks && strcmp(out->tasks[t].key, dag.key) != 0)
            t++;
        if (t == out->n_tasks) {
            SubgraphTask *task = &out->tasks[out->n_tasks++];
            task->sg = si;
            task->te = text;
            text = NULL;
            snprintf(task->key, sizeof task->key, "%s", dag.key);
            const GraphOp *h = &g->ops[out->ops[s->first]];
            snprintf(task->name, sizeof task->name, "sg%d-%.16s", t % 10000, GraphOp_kindName(h->kind));
            task->flops = dag.flops;
        }
        out->tasks[t].weight++;
        s->task = t;
        free(text);
        TeProgram_delete(prog);
    }
    free(topo);
    free(pos);
    if (st != TT_OK) Subgraphs_done(out);
    return st;
}
