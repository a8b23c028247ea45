/* tuner/net/ops/nn_einsum.c: Einsum by its definition: every label of the
 * equation is an index; the output's labels (given after "->", or else the
 * ellipsis and then the labels seen once, in alphabetical order) index the
 * output, and the sum runs over the rest. A label repeated within a term takes
 * a diagonal; "..." stands for the dimensions no letter names, broadcast
 * across the terms. Computed in double, one output element at a time: for the
 * small contractions exporters write (transposes, traces, batched products). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/nn_util.h"

#define EIN_LETTERS 52                         /* a-z then A-Z */
#define EIN_LABELS (EIN_LETTERS + ND_MAX_RANK) /* then the ellipsis dimensions, right-aligned */
#define EIN_MAX_IN 8

typedef struct Ein {
    int n_in;
    int rank[EIN_MAX_IN];
    int lab[EIN_MAX_IN][ND_MAX_RANK]; /* each input axis's label */
    int out_rank, out[ND_MAX_RANK];
    int64_t size[EIN_LABELS]; /* -1: no term has the label */
} Ein;

static int ein_letter(char c) { return islower((unsigned char)c) ? c - 'a' : c - 'A' + 26; }

/* One term's labels for an input of the given rank: *n of them, *ell of
 * them for the ellipsis (-1: none). */
static Status ein_term(const char *t, size_t len, int rank, int *lab, int *n, int *ell, char *err) {
    int letters = 0, k = 0;
    *ell = -1;
    for (size_t i = 0; i < len; i++)
        letters += isalpha((unsigned char)t[i]) != 0;
    for (size_t i = 0; i < len; i++) {
        if (isalpha((unsigned char)t[i])) {
            if (k >= ND_MAX_RANK)
                return tt_fail(err, "term '%.*s' has more labels than rank %d", (int)len, t, ND_MAX_RANK);
            lab[k++] = ein_letter(t[i]);
        } else if (!strncmp(t + i, "...", 3) && *ell < 0) {
            int e = rank - letters;
            if (rank < 0) e = 0;
            if (e < 0 || k + e > ND_MAX_RANK)
                return tt_fail(err, "term '%.*s' does not fit an input of rank %d", (int)len, t, rank);
            *ell = e;
            for (int j = 0; j < e; j++)
                lab[k++] = EIN_LETTERS + ND_MAX_RANK - e + j;
            i += 2;
        } else
            return tt_fail(err, "equation term '%.*s' is not supported", (int)len, t);
    }
    *n = k;
    return TT_OK;
}

/* The implicit output: the ellipsis dimensions, then letters seen once. */
static void ein_implicit(Ein *e, int max_ell) {
    int count[EIN_LETTERS] = {0};
    e->out_rank = 0;
    for (int j = 0; j < max_ell; j++)
        e->out[e->out_rank++] = EIN_LETTERS + ND_MAX_RANK - max_ell + j;
    for (int i = 0; i < e->n_in; i++)
        for (int a = 0; a < e->rank[i]; a++)
            if (e->lab[i][a] < EIN_LETTERS) count[e->lab[i][a]]++;
    for (int l = 0; l < EIN_LETTERS && e->out_rank < ND_MAX_RANK; l++)
        if (count[l] == 1) e->out[e->out_rank++] = l;
}

/* Parses the equation against the inputs' ranks (shapes may be unknown). */
static Status ein_parse(const OpCtx *ctx, Ein *e) {
    const char *eq = NetNode_attrString(ctx->node, "equation", NULL);
    char buf[256];
    size_t n = 0;
    for (const char *p = eq ? eq : ""; *p && n + 1 < sizeof buf; p++)
        if (*p != ' ') buf[n++] = *p;
    buf[n] = '\0';
    if (!eq || ctx->n_in > EIN_MAX_IN)
        return tt_fail(ctx->err, "Einsum needs an equation and at most %d inputs", EIN_MAX_IN);
    char *arrow = strstr(buf, "->");
    const char *t = buf, *end = arrow ? arrow : buf + n;
    int max_ell = 0, ell;
    e->n_in = ctx->n_in;
    for (int i = 0; i < ctx->n_in; i++) {
        const char *c = memchr(t, ',', (size_t)(end - t));
        const char *te = c ? c : end;
        if ((i + 1 < ctx->n_in) != (c != NULL))
            return tt_fail(ctx->err, "equation '%s' does not have %d terms", eq, ctx->n_in);
        if (ein_term(t, (size_t)(te - t), ctx->in[i]->shape.rank, e->lab[i], &e->rank[i], &ell, ctx->err) != TT_OK)
            return TT_ERR;
        max_ell = ell > max_ell ? ell : max_ell;
        t = te + 1;
    }
    if (!arrow) {
        ein_implicit(e, max_ell);
        return TT_OK;
    }
    return ein_term(arrow + 2, strlen(arrow + 2), max_ell + (int)strlen(arrow + 2) - (strstr(arrow, "...") ? 3 : 0),
                    e->out, &e->out_rank, &ell, ctx->err);
}

/* Each label's size from the inputs' shapes (1 broadcasts), and the output shape. */
static Status ein_sizes(const OpCtx *ctx, Ein *e, NdShape *ys) {
    for (int l = 0; l < EIN_LABELS; l++)
        e->size[l] = -1;
    for (int i = 0; i < e->n_in; i++) {
        if (e->rank[i] != ctx->in[i]->shape.rank)
            return tt_fail(ctx->err, "input %d of rank %d does not fit its term's %d labels", i, ctx->in[i]->shape.rank,
                           e->rank[i]);
        for (int a = 0; a < e->rank[i]; a++) {
            int64_t d = ctx->in[i]->shape.dim[a], *s = &e->size[e->lab[i][a]];
            if (*s >= 0 && d != *s && d != 1 && *s != 1)
                return tt_fail(ctx->err, "input %d's dimension %d (%lld) does not match %lld", i, a, (long long)d,
                               (long long)*s);
            if (*s < 0 || *s == 1) *s = d;
        }
    }
    ys->rank = e->out_rank;
    for (int a = 0; a < e->out_rank; a++) {
        if (e->size[e->out[a]] < 0) return tt_fail(ctx->err, "output label %d appears in no input", a);
        ys->dim[a] = e->size[e->out[a]];
    }
    return TT_OK;
}

Status Einsum_check(const NetNode *node, const NetModel *model, char *err) {
    if (!NetNode_attrString(node, "equation", NULL)) return tt_fail(err, "attribute equation is missing");
    return TT_OK;
}

Status Einsum_infer(OpCtx *ctx) {
    for (int i = 0; i < ctx->n_in; i++)
        if (Op_requireType(ctx, i, NN_FLOATS) != TT_OK) return TT_ERR;
    ctx->out[0].type = ctx->in[0]->type;
    ctx->out[0].shape.rank = -1;
    for (int i = 0; i < ctx->n_in; i++)
        if (ctx->in[i]->shape.rank < 0) return TT_OK;
    Ein e;
    return ein_parse(ctx, &e) != TT_OK ? TT_ERR : ein_sizes(ctx, &e, &ctx->out[0].shape);
}

/* The odometer over every label in use: the output's first, the summed after. */
static bool ein_compute(OpCtx *ctx, const void *arg, bool dbl, const void *const *in, void *yv) {
    const Ein *e = arg;
    int order[EIN_LABELS], n = 0, is_out[EIN_LABELS] = {0};
    int64_t st[EIN_MAX_IN][EIN_LABELS] = {{0}}, idx[EIN_LABELS] = {0}, off[EIN_MAX_IN] = {0}, inner = 1;
    for (int a = 0; a < e->out_rank; a++)
        is_out[e->out[a]] = 1, order[n++] = e->out[a];
    for (int l = 0; l < EIN_LABELS; l++)
        if (e->size[l] >= 0 && !is_out[l]) order[n++] = l, inner *= e->size[l];
    for (int i = 0; i < e->n_in; i++) {
        int64_t s[ND_MAX_RANK];
        NdShape_strides(&ctx->in[i]->shape, s);
        for (int a = 0; a < e->rank[i]; a++)
            st[i][e->lab[i][a]] += ctx->in[i]->shape.dim[a] == 1 ? 0 : s[a];
    }
    double *y = yv;
    for (int64_t o = 0; o < ctx->out[0].count; o++) {
        double acc = 0;
        for (int64_t q = 0; q < inner; q++) {
            double p = 1;
            for (int i = 0; i < e->n_in; i++)
                p *= ((const double *)in[i])[off[i]];
            acc += p;
            for (int k = n - 1; k >= 0; k--) { /* next index: the last label fastest */
                int l = order[k];
                for (int i = 0; i < e->n_in; i++)
                    off[i] += st[i][l];
                if (++idx[l] < e->size[l]) break;
                for (int i = 0; i < e->n_in; i++)
                    off[i] -= st[i][l] * e->size[l];
                idx[l] = 0;
            }
        }
        y[o] = acc;
    }
    return true;
}

Status Einsum_run(OpCtx *ctx) {
    Ein e;
    NdShape ys;
    if (Einsum_infer(ctx) != TT_OK || ein_parse(ctx, &e) != TT_OK || ein_sizes(ctx, &e, &ys) != TT_OK) return TT_ERR;
    return Nn_runViews(ctx, ctx->n_in, &ys, true, ein_compute, &e);
}

double Einsum_flops(const OpCtx *ctx) {
    Ein e;
    NdShape ys;
    if (ein_parse(ctx, &e) != TT_OK || ein_sizes(ctx, &e, &ys) != TT_OK) return 0;
    double c = (double)ctx->n_in;
    for (int l = 0; l < EIN_LABELS; l++)
        c *= e.size[l] > 0 ? (double)e.size[l] : 1;
    return c;
}
