/* tuner/net/exec.c: the reference executor (exec.h). */
#include "tuner/net/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tuner/net/ops/op.h"

typedef struct Run {
    const NetModel *m;
    const NdTensor **ref; /* per value: where its tensor is now (NULL: none yet, or freed) */
    NdTensor *own;        /* per value: tensors the executor computed */
    int *last;            /* per value: the last live node that reads it (-1: none) */
    NetExecOptions opt;
} Run;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static Status check_input(const NetValue *v, const NdTensor *t, char *err) {
    char want[160], got[160];
    NdShape_str(&v->shape, want, sizeof want);
    NdShape_str(&t->shape, got, sizeof got);
    if (v->type != ND_UNDEF && t->type != v->type)
        return tt_fail(err, "input '%s' is %s; the model takes %s", v->name, NdType_name(t->type),
                       NdType_name(v->type));
    bool ok = v->shape.rank < 0 || v->shape.rank == t->shape.rank;
    for (int d = 0; ok && v->shape.rank > 0 && d < v->shape.rank; d++)
        ok = v->shape.dim[d] < 0 || v->shape.dim[d] == t->shape.dim[d];
    if (!ok) return tt_fail(err, "input '%s' has shape %s; the model takes %s", v->name, got, want);
    if (t->count > 0 && !t->data) return tt_fail(err, "input '%s' has no data", v->name);
    return TT_OK;
}

static Status setup(Run *r, const NdTensor *inputs, int n_inputs, char *err) {
    const NetModel *m = r->m;
    if (n_inputs != m->n_inputs) return tt_fail(err, "the model takes %d inputs; %d were given", m->n_inputs, n_inputs);
    size_t n = (size_t)m->n_values + 1;
    r->ref = calloc(n, sizeof *r->ref);
    r->own = calloc(n, sizeof *r->own);
    r->last = malloc(sizeof *r->last * n);
    if (!r->ref || !r->own || !r->last) return tt_fail(err, "out of memory for the executor's %d values", m->n_values);
    for (int v = 0; v < m->n_values; v++) {
        r->last[v] = -1;
        if (m->values[v].is_const) r->ref[v] = &m->values[v].constant;
    }
    for (int i = 0; i < m->n_inputs; i++) {
        if (check_input(&m->values[m->inputs[i]], &inputs[i], err) != TT_OK) return TT_ERR;
        r->ref[m->inputs[i]] = &inputs[i];
    }
    for (int i = 0; i < m->n_nodes; i++)
        for (int k = 0; !m->nodes[i].dead && k < m->nodes[i].n_in; k++)
            if (m->nodes[i].in[k] >= 0) r->last[m->nodes[i].in[k]] = i;
    return TT_OK;
}

/* Frees a computed value no later node reads (graph outputs stay). */
static void release(Run *r, int v, int after) {
    if (v < 0 || r->m->values[v].is_output || r->last[v] > after || r->ref[v] != &r->own[v]) return;
    NdTensor_free(&r->own[v]);
    r->ref[v] = NULL;
}

/* Takes the node's results: every present output must have been allocated. */
static Status keep_outputs(Run *r, int i, NdTensor *out, const char *label, char *err) {
    const NetNode *n = &r->m->nodes[i];
    for (int k = 0; k < n->n_out; k++) {
        int v = n->out[k];
        if (v < 0) continue;
        if (out[k].type == ND_UNDEF || out[k].shape.rank < 0 || (out[k].count > 0 && !out[k].data))
            return tt_fail(err, "node %s: the op left output %d ('%s') unset", label, k, r->m->values[v].name);
        NdTensor_free(&r->own[v]); /* (empty unless a value is produced twice) */
        r->own[v] = out[k];
        memset(&out[k], 0, sizeof out[k]);
        r->ref[v] = &r->own[v];
        release(r, v, i);
    }
    return TT_OK;
}

static Status run_node(Run *r, int i, char *err) {
    const NetNode *n = &r->m->nodes[i];
    char label[200], why[TT_ERRLEN] = "";
    NetNode_label(n, i, label, sizeof label);
    if (!n->def || !n->def->run)
        return tt_fail(err, "node %s: the op has no definition to run (the model is not bound)", label);
    const NdTensor *in[n->n_in + 1];
    NdTensor out[n->n_out + 1];
    memset(out, 0, sizeof out);
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        in[k] = v >= 0 ? r->ref[v] : NULL;
        if (v >= 0 && !in[k])
            return tt_fail(err, "node %s: input %d ('%s') has no value when the node runs", label, k,
                           r->m->values[v].name);
    }
    for (int k = 0; k < n->n_out; k++)
        out[k].shape.rank = -1;
    OpCtx ctx = {.model = r->m,
                 .node = n,
                 .opset = r->m->opset,
                 .in = in,
                 .n_in = n->n_in,
                 .out = out,
                 .n_out = n->n_out,
                 .err = why,
                 .user = r->opt.user};
    double t0 = r->opt.node_seconds ? now_s() : 0;
    Status st = n->def->run(&ctx);
    if (r->opt.node_seconds) r->opt.node_seconds[i] += now_s() - t0;
    if (st == TT_OK)
        st = keep_outputs(r, i, out, label, err);
    else
        tt_fail(err, "node %s: %s", label, why[0] ? why : "the op failed without saying why");
    for (int k = 0; k < n->n_out; k++)
        NdTensor_free(&out[k]);
    for (int k = 0; k < n->n_in; k++)
        release(r, n->in[k], i);
    return st;
}

static Status take_outputs(Run *r, NdTensor *outputs, char *err) {
    const NetModel *m = r->m;
    for (int j = 0; j < m->n_outputs; j++) {
        int v = m->outputs[j];
        if (!r->ref[v]) return tt_fail(err, "graph output '%s' was not computed", m->values[v].name);
        char why[TT_ERRLEN];
        if (NdTensor_copy(&outputs[j], r->ref[v], why) != TT_OK)
            return tt_fail(err, "graph output '%s': %s", m->values[v].name, why);
    }
    return TT_OK;
}

Status NetExec_run(const NetModel *m, const NdTensor *inputs, int n_inputs, NdTensor *outputs, char *err) {
    return NetExec_runWith(m, inputs, n_inputs, outputs, NULL, err);
}

Status NetExec_runWith(const NetModel *m, const NdTensor *inputs, int n_inputs, NdTensor *outputs,
                       const NetExecOptions *o, char *err) {
    Run r = {.m = m};
    if (o) r.opt = *o;
    Status st = setup(&r, inputs, n_inputs, err);
    for (int i = 0; st == TT_OK && i < m->n_nodes; i++)
        if (!m->nodes[i].dead) st = run_node(&r, i, err);
    if (st == TT_OK) st = take_outputs(&r, outputs, err);
    if (st != TT_OK)
        for (int j = 0; j < m->n_outputs; j++)
            NdTensor_free(&outputs[j]);
    for (int v = 0; r.own && v < m->n_values; v++)
        NdTensor_free(&r.own[v]);
    free(r.ref);
    free(r.own);
    free(r.last);
    return st;
}
