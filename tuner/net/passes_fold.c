/* tuner/net/passes_fold.c: constant folding, Identity/Dropout removal and
 * BatchNormalization folded into Conv (passes.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/op.h"
#include "tuner/net/passes.h"

/* ---- constant folding ---- */

static bool is_random(const char *op) {
    return !strncmp(op, "Random", 6) || !strcmp(op, "Multinomial") || !strcmp(op, "Bernoulli") ||
           !strcmp(op, "Dropout");
}

/* Shape and Size read only their input's shape: a known one folds them. */
static bool reads_shape_only(const NetModel *m, const NetNode *n) {
    if ((strcmp(n->op, "Shape") && strcmp(n->op, "Size")) || n->n_in < 1 || n->in[0] < 0) return false;
    const NdShape *s = &m->values[n->in[0]].shape;
    for (int d = 0; d < s->rank; d++)
        if (s->dim[d] < 0) return false;
    return s->rank >= 0 && m->values[n->in[0]].type != ND_UNDEF;
}

static bool foldable(const NetModel *m, const NetNode *n) {
    if (n->dead || !n->def || !n->def->run || is_random(n->op) || n->domain[0]) return false;
    if (reads_shape_only(m, n)) return true;
    int present = 0;
    for (int k = 0; k < n->n_in; k++) {
        if (n->in[k] < 0) continue;
        if (!m->values[n->in[k]].is_const) return false;
        present++;
    }
    return present > 0 || !strcmp(n->op, "Constant");
}

static Status fold_node(NetModel *m, int i, char *err) {
    NetNode *n = &m->nodes[i];
    char label[200], why[TT_ERRLEN] = "";
    NetNode_label(n, i, label, sizeof label);
    NdTensor shape_view = {0}, out[n->n_out + 1];
    const NdTensor *in[n->n_in + 1];
    for (int k = 0; k < n->n_in; k++)
        in[k] = n->in[k] >= 0 ? &m->values[n->in[k]].constant : NULL;
    if (reads_shape_only(m, n) && !m->values[n->in[0]].is_const) {
        const NetValue *v = &m->values[n->in[0]];
        shape_view = (NdTensor){.type = v->type, .shape = v->shape, .data = NULL};
        NdShape_count(&v->shape, v->type, &shape_view.count, NULL);
        in[0] = &shape_view;
    }
    memset(out, 0, sizeof out);
    for (int k = 0; k < n->n_out; k++)
        out[k].shape.rank = -1;
    OpCtx ctx = {
        .model = m, .node = n, .opset = m->opset, .in = in, .n_in = n->n_in, .out = out, .n_out = n->n_out, .err = why};
    if (n->def->run(&ctx) != TT_OK) {
        for (int k = 0; k < n->n_out; k++)
            NdTensor_free(&out[k]);
        return tt_fail(err, "node %s: folding a constant: %s", label, why[0] ? why : "the op failed");
    }
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0 || out[k].type == ND_UNDEF) {
            NdTensor_free(&out[k]);
            continue;
        }
        NetValue *v = &m->values[n->out[k]];
        NdTensor_free(&v->constant);
        v->constant = out[k];
        v->is_const = true;
        v->type = out[k].type;
        v->shape = out[k].shape;
        v->producer = -1;
    }
    n->dead = true;
    return TT_OK;
}

Status NetPass_foldConstants(NetModel *m, int *folded, char *err) {
    int count = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        if (!foldable(m, &m->nodes[i])) continue;
        if (fold_node(m, i, err) != TT_OK) return TT_ERR;
        count++;
    }
    if (folded) *folded = count;
    return count ? NetModel_sort(m, err) : TT_OK;
}

/* ---- Identity and Dropout ---- */

static bool is_read(const NetModel *m, int v) {
    if (m->values[v].is_output) return true;
    for (int i = 0; i < m->n_nodes; i++)
        for (int k = 0; !m->nodes[i].dead && k < m->nodes[i].n_in; k++)
            if (m->nodes[i].in[k] == v) return true;
    return false;
}

static void replace_reads(NetModel *m, int from, int to) {
    for (int i = 0; i < m->n_nodes; i++)
        for (int k = 0; !m->nodes[i].dead && k < m->nodes[i].n_in; k++)
            if (m->nodes[i].in[k] == from) m->nodes[i].in[k] = to;
}

static bool removable(const NetModel *m, const NetNode *n) {
    if (n->dead || n->domain[0] || n->n_in < 1 || n->in[0] < 0 || n->n_out < 1 || n->out[0] < 0) return false;
    if (!strcmp(n->op, "Identity")) return true;
    if (strcmp(n->op, "Dropout")) return false;
    if (n->n_out > 1 && n->out[1] >= 0 && is_read(m, n->out[1])) return false; /* the mask is used */
    if (n->n_in > 2 && n->in[2] >= 0) { /* training_mode: only a constant false is inference */
        const NetValue *t = &m->values[n->in[2]];
        if (!t->is_const || t->constant.count != 1 || NdTensor_getInt(&t->constant, 0) != 0) return false;
    }
    return true;
}

/* Rewires one Identity-like node away; false when it must stay (its output
 * is a graph output and its input cannot take the output's name). */
static bool remove_one(NetModel *m, NetNode *n) {
    int a = n->in[0], b = n->out[0];
    if (!m->values[b].is_output) {
        n->dead = true;
        replace_reads(m, b, a);
        return true;
    }
    int p = m->values[a].producer;
    const NetValue *va = &m->values[a];
    if (p < 0 || m->nodes[p].dead || va->is_output || va->is_input || va->is_const) return false;
    n->dead = true;
    for (int k = 0; k < m->nodes[p].n_out; k++)
        if (m->nodes[p].out[k] == a) m->nodes[p].out[k] = b;
    replace_reads(m, a, b);
    return true;
}

Status NetPass_removeIdentity(NetModel *m, int *removed, char *err) {
    int count = 0;
    for (int i = 0; i < m->n_nodes; i++)
        if (removable(m, &m->nodes[i]) && remove_one(m, &m->nodes[i])) count++;
    if (removed) *removed = count;
    return count ? NetModel_sort(m, err) : TT_OK;
}

/* ---- BatchNormalization into Conv ---- */

static const NdTensor *const_float(const NetModel *m, int v, int64_t count) {
    if (v < 0 || !m->values[v].is_const || !NdType_isFloat(m->values[v].constant.type)) return NULL;
    const NdTensor *t = &m->values[v].constant;
    return count < 0 || t->count == count ? t : NULL;
}

/* The BN node that a Conv at c can absorb, or -1. */
static int absorbable_bn(const NetModel *m, const NetReaders *r, int c) {
    const NetNode *conv = &m->nodes[c];
    if (conv->dead || strcmp(conv->op, "Conv") || conv->domain[0] || conv->n_out != 1 || conv->out[0] < 0 ||
        conv->n_in < 2)
        return -1;
    const NdTensor *w = const_float(m, conv->in[1], -1);
    if (!w || w->shape.rank < 3 || w->shape.dim[0] <= 0) return -1;
    int64_t oc = w->shape.dim[0];
    if (conv->n_in > 2 && conv->in[2] >= 0 && !const_float(m, conv->in[2], oc)) return -1;
    int b = NetReaders_sole(r, conv->out[0]);
    if (b < 0) return -1;
    const NetNode *bn = &m->nodes[b];
    if (strcmp(bn->op, "BatchNormalization") || bn->domain[0] || bn->n_in != 5 || bn->in[0] != conv->out[0] ||
        bn->out[0] < 0 || NetNode_attrInt(bn, "training_mode", 0) != 0)
        return -1;
    for (int k = 1; k < bn->n_out; k++)
        if (bn->out[k] >= 0 && is_read(m, bn->out[k])) return -1;
    for (int k = 1; k < 5; k++)
        if (!const_float(m, bn->in[k], oc)) return -1;
    return b;
}

static int add_const(NetModel *m, const char *base, const char *suffix, NdTensor *t) {
    char name[512];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    for (int k = 2; NetModel_find(m, name) >= 0; k++)
        snprintf(name, sizeof name, "%s%s%d", base, suffix, k);
    int v = NetModel_addValue(m, name);
    if (v < 0) return -1;
    NetValue *val = &m->values[v];
    val->constant = *t;
    val->is_const = true;
    val->type = t->type;
    val->shape = t->shape;
    return v;
}

static Status fold_bn(NetModel *m, int c, int b, char *err) {
    const NetNode *bn = &m->nodes[b], *conv = &m->nodes[c];
    const NdTensor *w = &m->values[conv->in[1]].constant;
    const NdTensor *bias = conv->n_in > 2 && conv->in[2] >= 0 ? &m->values[conv->in[2]].constant : NULL;
    const NdTensor *sc = &m->values[bn->in[1]].constant, *sh = &m->values[bn->in[2]].constant;
    const NdTensor *mean = &m->values[bn->in[3]].constant, *var = &m->values[bn->in[4]].constant;
    double eps = NetNode_attrFloat(bn, "epsilon", 1e-5);
    int64_t oc = w->shape.dim[0], per = w->count / oc;
    NdTensor w2 = {0}, b2 = {0};
    NdShape bs = {.rank = 1, .dim = {oc}};
    if (NdTensor_copy(&w2, w, err) != TT_OK || NdTensor_alloc(&b2, w->type, &bs, err) != TT_OK) {
        NdTensor_free(&w2);
        return TT_ERR;
    }
    for (int64_t o = 0; o < oc; o++) {
        double s = NdTensor_get(sc, o) / sqrt(NdTensor_get(var, o) + eps);
        for (int64_t j = 0; j < per; j++)
            NdTensor_set(&w2, o * per + j, NdTensor_get(w, o * per + j) * s);
        double b0 = bias ? NdTensor_get(bias, o) : 0.0;
        NdTensor_set(&b2, o, (b0 - NdTensor_get(mean, o)) * s + NdTensor_get(sh, o));
    }
    char base[400];
    snprintf(base, sizeof base, "%s", m->values[conv->in[1]].name);
    int wv = add_const(m, base, "_bnfolded", &w2), bv = wv >= 0 ? add_const(m, base, "_bnfolded_bias", &b2) : -1;
    if (wv < 0 || bv < 0) {
        if (wv < 0) NdTensor_free(&w2);
        NdTensor_free(&b2);
        return tt_fail(err, "out of memory folding a batch norm");
    }
    NetNode *cn = &m->nodes[c];
    if (cn->n_in < 3) {
        int *in = realloc(cn->in, sizeof *in * 3);
        if (!in) return tt_fail(err, "out of memory folding a batch norm");
        cn->in = in;
        cn->n_in = 3;
    }
    cn->in[1] = wv;
    cn->in[2] = bv;
    cn->out[0] = m->nodes[b].out[0];
    m->nodes[b].dead = true;
    return TT_OK;
}

Status NetPass_foldBatchNorm(NetModel *m, int *folded, char *err) {
    int count = 0;
    /* a fold kills one BN and changes no other Conv's readers: one snapshot serves the loop */
    NetReaders r;
    NetReaders_init(&r, m);
    for (int c = 0; c < m->n_nodes; c++) {
        int b = absorbable_bn(m, &r, c);
        if (b < 0) continue;
        if (fold_bn(m, c, b, err) != TT_OK) {
            NetReaders_done(&r);
            return TT_ERR;
        }
        count++;
    }
    NetReaders_done(&r);
    if (folded) *folded = count;
    return count ? NetModel_sort(m, err) : TT_OK;
}
