/* tuner/net/passes.c: fixing the inputs' shapes and shape inference
 * (passes.h); the folding passes are in passes_fold.c. */
#include "tuner/net/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/op.h"

static int find_input(const NetModel *m, const char *name, size_t len) {
    for (int i = 0; i < m->n_inputs; i++) {
        const char *n = m->values[m->inputs[i]].name;
        if (strlen(n) == len && !strncmp(n, name, len)) return m->inputs[i];
    }
    return -1;
}

/* "1x3x224x224" into s; TT_ERR for anything else. */
static Status parse_dims(const char *spec, const char *text, NdShape *s, char *err) {
    s->rank = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || s->rank == ND_MAX_RANK || (*end && *end != 'x'))
            return tt_fail(err, "--input-shape '%s': expected NAME=DxDx...D with up to %d dimensions", spec,
                           ND_MAX_RANK);
        s->dim[s->rank++] = d;
        p = *end ? end + 1 : end;
    }
    return TT_OK;
}

static Status apply_spec(NetModel *m, const char *spec, char *err) {
    const char *eq = strchr(spec, '=');
    if (!eq) return tt_fail(err, "--input-shape '%s': expected NAME=1x3x224x224", spec);
    int v = find_input(m, spec, (size_t)(eq - spec));
    if (v < 0) return tt_fail(err, "--input-shape '%s': the model has no input '%.*s'", spec, (int)(eq - spec), spec);
    NdShape s;
    if (parse_dims(spec, eq + 1, &s, err) != TT_OK) return TT_ERR;
    NetValue *val = &m->values[v];
    if (val->shape.rank >= 0 && val->shape.rank != s.rank)
        return tt_fail(err, "--input-shape '%s': input '%s' has %d dimensions in the model", spec, val->name,
                       val->shape.rank);
    for (int d = 0; val->shape.rank >= 0 && d < s.rank; d++)
        if (val->shape.dim[d] >= 0 && val->shape.dim[d] != s.dim[d])
            return tt_fail(err, "--input-shape '%s': dimension %d of input '%s' is %lld in the model", spec, d,
                           val->name, (long long)val->shape.dim[d]);
    /* the symbolic names bound here bind the same names on other inputs */
    for (int d = 0; val->dim_param && val->shape.rank >= 0 && d < s.rank; d++) {
        const char *name = val->dim_param[d];
        for (int i = 0; name && i < m->n_inputs; i++) {
            NetValue *o = &m->values[m->inputs[i]];
            for (int e = 0; o != val && o->dim_param && e < o->shape.rank; e++)
                if (o->dim_param[e] && o->shape.dim[e] < 0 && !strcmp(o->dim_param[e], name))
                    o->shape.dim[e] = s.dim[d];
        }
    }
    val->shape = s;
    return TT_OK;
}

Status NetPass_fixInputs(NetModel *m, const char *const *specs, int n_specs, char *err) {
    for (int i = 0; i < n_specs; i++)
        if (apply_spec(m, specs[i], err) != TT_OK) return TT_ERR;
    for (int i = 0; i < m->n_inputs; i++) {
        const NetValue *v = &m->values[m->inputs[i]];
        if (v->shape.rank < 0)
            return tt_fail(err, "input '%s' has no shape in the model: give it with --input-shape %s=1x3x224x224",
                           v->name, v->name);
        for (int d = 0; d < v->shape.rank; d++) {
            if (v->shape.dim[d] >= 0) continue;
            const char *sym = v->dim_param ? v->dim_param[d] : NULL;
            return tt_fail(err, "input '%s' has %s%s%s as dimension %d: give its size with --input-shape %s=...",
                           v->name, sym ? "the symbolic dimension '" : "an unknown dimension", sym ? sym : "",
                           sym ? "'" : "", d, v->name);
        }
    }
    return TT_OK;
}

/* What infer sees of a value: type and shape, data only for constants; a
 * shape with an unknown dimension is unknown. */
static void view_of(const NetValue *v, NdTensor *t) {
    if (v->is_const) {
        *t = v->constant;
        return;
    }
    memset(t, 0, sizeof *t);
    t->type = v->type;
    t->shape = v->shape;
    t->count = 1;
    for (int d = 0; d < v->shape.rank; d++) {
        if (v->shape.dim[d] < 0) t->shape.rank = -1;
        t->count *= v->shape.dim[d] > 0 ? v->shape.dim[d] : 0;
    }
    if (t->shape.rank < 0) t->count = 0;
}

/* Records one inferred output, checked against what the model declares. */
static Status record(NetValue *v, const NdTensor *o, const char *label, char *err) {
    char a[160], b[160];
    if (o->type != ND_UNDEF) {
        if (v->type != ND_UNDEF && v->type != o->type)
            return tt_fail(err, "node %s: output '%s' is inferred as %s, but the model declares %s", label, v->name,
                           NdType_name(o->type), NdType_name(v->type));
        v->type = o->type;
    }
    if (o->shape.rank >= 0) {
        if (v->shape.rank >= 0 && !NdShape_equal(&v->shape, &o->shape)) {
            NdShape_str(&o->shape, a, sizeof a);
            NdShape_str(&v->shape, b, sizeof b);
            return tt_fail(err, "node %s: output '%s' is inferred as %s, but the model declares %s", label, v->name, a,
                           b);
        }
        v->shape = o->shape;
    }
    return TT_OK;
}

static Status infer_node(NetModel *m, int i, char *err) {
    NetNode *n = &m->nodes[i];
    char label[200], why[TT_ERRLEN] = "";
    NetNode_label(n, i, label, sizeof label);
    if (!n->def) return tt_fail(err, "node %s: the op is not bound", label);
    if (!n->def->infer) return TT_OK;
    NdTensor views[n->n_in + 1], out[n->n_out + 1];
    const NdTensor *in[n->n_in + 1];
    for (int k = 0; k < n->n_in; k++) {
        in[k] = n->in[k] >= 0 ? &views[k] : NULL;
        if (n->in[k] >= 0) view_of(&m->values[n->in[k]], &views[k]);
    }
    memset(out, 0, sizeof out);
    for (int k = 0; k < n->n_out; k++)
        out[k].shape.rank = -1;
    OpCtx ctx = {
        .model = m, .node = n, .opset = m->opset, .in = in, .n_in = n->n_in, .out = out, .n_out = n->n_out, .err = why};
    Status st = n->def->infer(&ctx);
    if (st != TT_OK) tt_fail(err, "node %s: %s", label, why[0] ? why : "shape inference failed without saying why");
    for (int k = 0; st == TT_OK && k < n->n_out; k++)
        if (n->out[k] >= 0) st = record(&m->values[n->out[k]], &out[k], label, err);
    for (int k = 0; k < n->n_out; k++)
        NdTensor_free(&out[k]); /* (infer gives no data; in case one did) */
    return st;
}

Status NetPass_inferShapes(NetModel *m, char *err) {
    for (int i = 0; i < m->n_nodes; i++)
        if (!m->nodes[i].dead && infer_node(m, i, err) != TT_OK) return TT_ERR;
    return TT_OK;
}
