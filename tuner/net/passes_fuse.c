/* tuner/net/passes_fuse.c: float32 elementwise chains fused into one node of
 * op tunetop.Elementwise (passes.h, NetPass_fuseElementwise).
 *
 * From each float32 value (the root: a graph input or any node's output) the
 * pass sweeps the nodes after its producer in order and gathers the
 * elementwise nodes that read the root or a gathered node's result, when each
 * of their other inputs is a single element or a tensor of the root's shape
 * computed before the first gathered node (so the fused node cannot depend on
 * itself). Of what it gathered, it keeps the latest node whose ancestors
 * within the gathering are read by nothing else: those ancestors and that
 * node become the steps, and its result is the fused node's output. The
 * steps keep their inputs, their order and their attributes, so the fused
 * node computes bit for bit what they did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/ops/op.h"
#include "tuner/net/passes.h"

typedef struct Gather {
    int root;
    int n; /* nodes gathered, in node order */
    int node[OP_FUSED_MAX_STEPS];
    bool keep[OP_FUSED_MAX_STEPS]; /* the steps chosen among them */
    int exit;                      /* index into node[] of the step whose result is the output */
} Gather;

typedef struct Fuse {
    NetModel *m;
    NetReaders r;
    int n_nodes;     /* the nodes before the pass: the only candidates (fused nodes go after them) */
    bool *taken;     /* per node of those: already a step of a fused node */
    bool *in_region; /* per value: the root or a gathered node's result (during one gathering) */
    int made;
} Fuse;

static bool simple_attrs(const NetNode *n) {
    for (int i = 0; i < n->n_attrs; i++) {
        NetAttrKind k = n->attrs[i].kind;
        if ((k != NATTR_FLOAT && k != NATTR_INT && k != NATTR_STRING) || !strcmp(n->attrs[i].name, "broadcast"))
            return false;
    }
    return true;
}

static bool candidate(const Fuse *f, int i, const NdShape *shape) {
    const NetNode *n = &f->m->nodes[i];
    if (n->dead || f->taken[i] || (n->domain[0] && strcmp(n->domain, "ai.onnx")) || n->n_out != 1 || n->out[0] < 0 ||
        !simple_attrs(n) || !Op_fusableStep(n->op, n->n_in))
        return false;
    const NetValue *y = &f->m->values[n->out[0]];
    return y->type == ND_F32 && NdShape_equal(&y->shape, shape);
}

/* Whether node i joins the gathering: it reads a gathered value, and its other inputs may be read as they are. */
static bool joins(const Fuse *f, const Gather *g, int i) {
    const NetModel *m = f->m;
    const NetNode *n = &m->nodes[i];
    const NdShape *shape = &m->values[g->root].shape;
    int first = g->n ? g->node[0] : i;
    bool linked = false;
    for (int k = 0; k < n->n_in; k++) {
        int v = n->in[k];
        if (v < 0) continue;
        if (f->in_region[v]) {
            linked = true;
            continue;
        }
        const NetValue *x = &m->values[v];
        if (x->type != ND_F32) return false;
        int64_t c = NdShape_elems(&x->shape);
        if (c != 1 && !(NdShape_equal(&x->shape, shape) && x->producer < first)) return false;
    }
    return linked;
}

static int gathered_producer(const Gather *g, const NetModel *m, int v) {
    for (int t = 0; t < g->n; t++)
        if (m->nodes[g->node[t]].out[0] == v) return t;
    return -1;
}

/* Marks in keep[] node c and its ancestors among the gathered; true when
 * they are at least two and only they read their results (c's aside). */
static bool choose(const Fuse *f, Gather *g, int c) {
    const NetModel *m = f->m;
    memset(g->keep, 0, sizeof g->keep);
    g->keep[c] = true;
    int count = 1;
    for (int j = c; j >= 0; j--) {
        const NetNode *n = &m->nodes[g->node[j]];
        for (int k = 0; g->keep[j] && k < n->n_in; k++) {
            int t = gathered_producer(g, m, n->in[k]);
            if (t >= 0 && !g->keep[t]) g->keep[t] = true, count++;
        }
    }
    if (count < 2) return false;
    for (int t = 0; t < c; t++) {
        if (!g->keep[t]) continue;
        int v = m->nodes[g->node[t]].out[0], inner = 0;
        for (int j = t + 1; j <= c; j++)
            for (int k = 0; g->keep[j] && k < m->nodes[g->node[j]].n_in; k++)
                inner += m->nodes[g->node[j]].in[k] == v;
        if (inner != f->r.count[v]) return false;
    }
    g->exit = c;
    return true;
}

static void gather(Fuse *f, Gather *g, int root, int from) {
    NetModel *m = f->m;
    g->root = root;
    g->n = 0;
    f->in_region[root] = true;
    for (int i = from; i < f->n_nodes && g->n < OP_FUSED_MAX_STEPS; i++)
        if (candidate(f, i, &m->values[root].shape) && joins(f, g, i)) {
            g->node[g->n++] = i;
            f->in_region[m->nodes[i].out[0]] = true;
        }
    f->in_region[root] = false;
    for (int t = 0; t < g->n; t++)
        f->in_region[m->nodes[g->node[t]].out[0]] = false;
}

static void set_attr(NetAttr *a, const char *name, NetAttrKind kind) {
    memset(a, 0, sizeof *a);
    a->name = strdup(name);
    a->kind = kind;
    if (!a->name) abort();
}

/* The fused node's inputs: the root, then every other value a step reads, once each. */
static int fused_inputs(const NetModel *m, const Gather *g, int *in) {
    int n = 0;
    in[n++] = g->root;
    for (int t = 0; t <= g->exit; t++) {
        const NetNode *s = &m->nodes[g->node[t]];
        for (int k = 0; g->keep[t] && k < s->n_in; k++) {
            int v = s->in[k], j = 0;
            if (v < 0 || gathered_producer(g, m, v) >= 0) continue;
            while (j < n && in[j] != v)
                j++;
            if (j == n) in[n++] = v;
        }
    }
    return n;
}

/* ops, args and each step's attributes ("S.name"). */
static void fused_attrs(NetModel *m, int idx, const Gather *g, const int *in, int n_in, const int *step_of) {
    NetNode *f = &m->nodes[idx];
    int steps = 0, a = 2;
    for (int t = 0; t <= g->exit; t++)
        steps += g->keep[t];
    set_attr(&f->attrs[0], "ops", NATTR_STRINGS);
    set_attr(&f->attrs[1], "args", NATTR_INTS);
    f->attrs[0].strings = calloc((size_t)steps, sizeof(char *));
    f->attrs[1].ints = malloc(sizeof(int64_t) * (size_t)steps * OP_FUSED_ARGS);
    if (!f->attrs[0].strings || !f->attrs[1].ints) abort();
    f->attrs[0].n = steps;
    f->attrs[1].n = steps * OP_FUSED_ARGS;
    for (int t = 0, s = 0; t <= g->exit; t++) {
        if (!g->keep[t]) continue;
        const NetNode *src = &m->nodes[g->node[t]];
        f->attrs[0].strings[s] = strdup(src->op);
        for (int k = 0; k < OP_FUSED_ARGS; k++) {
            int v = k < src->n_in ? src->in[k] : -1, p = v >= 0 ? gathered_producer(g, m, v) : -1, j = 0;
            while (v >= 0 && p < 0 && in[j] != v)
                j++;
            f->attrs[1].ints[s * OP_FUSED_ARGS + k] = v < 0 ? -1 : p >= 0 ? n_in + step_of[p] : j;
        }
        for (int i = 0; i < src->n_attrs; i++) {
            char name[256];
            snprintf(name, sizeof name, "%d.%s", s, src->attrs[i].name);
            NetAttr *d = &f->attrs[a++];
            set_attr(d, name, src->attrs[i].kind);
            d->f = src->attrs[i].f;
            d->i = src->attrs[i].i;
            if (src->attrs[i].s && !(d->s = strdup(src->attrs[i].s))) abort();
        }
        s++;
    }
}

/* Replaces the chosen steps by one node of op tunetop.Elementwise. */
static void rewrite(Fuse *f, const Gather *g) {
    NetModel *m = f->m;
    int in[OP_FUSED_MAX_STEPS * OP_FUSED_ARGS + 1], step_of[OP_FUSED_MAX_STEPS], n_attrs = 2, steps = 0;
    char name[128] = "";
    int n_in = fused_inputs(m, g, in);
    for (int t = 0; t <= g->exit; t++) {
        if (!g->keep[t]) continue;
        const NetNode *s = &m->nodes[g->node[t]];
        step_of[t] = steps++;
        n_attrs += s->n_attrs;
        size_t used = strlen(name);
        snprintf(name + used, sizeof name - used, "%s%s", used ? "+" : "", s->op);
    }
    int out = m->nodes[g->node[g->exit]].out[0];
    int idx = NetModel_addNode(m, name, "Elementwise", "tunetop", n_in, 1, n_attrs);
    NetNode *node = &m->nodes[idx];
    memcpy(node->in, in, sizeof(int) * (size_t)n_in);
    node->out[0] = out;
    node->def = Op_find("tunetop", "Elementwise");
    fused_attrs(m, idx, g, in, n_in, step_of);
    for (int t = 0; t <= g->exit; t++)
        if (g->keep[t]) m->nodes[g->node[t]].dead = f->taken[g->node[t]] = true;
    f->made++;
}

static void fuse_from(Fuse *f, int root, int from) {
    const NetValue *v = &f->m->values[root];
    if (v->type != ND_F32 || v->is_const || NdShape_elems(&v->shape) < 1) return;
    Gather g;
    gather(f, &g, root, from);
    for (int c = g.n - 1; c >= 1; c--)
        if (choose(f, &g, c)) {
            rewrite(f, &g);
            return;
        }
}

Status NetPass_fuseElementwise(NetModel *m, int *fused, char *err) {
    int n_nodes = m->n_nodes;
    Fuse f = {.m = m, .n_nodes = n_nodes};
    f.taken = calloc((size_t)n_nodes + 1, sizeof *f.taken);
    f.in_region = calloc((size_t)m->n_values + 1, sizeof *f.in_region);
    if (!f.taken || !f.in_region) abort();
    NetReaders_init(&f.r, m);
    for (int i = 0; i < m->n_inputs; i++)
        fuse_from(&f, m->inputs[i], 0);
    for (int i = 0; i < n_nodes; i++)
        for (int k = 0; !m->nodes[i].dead && k < m->nodes[i].n_out; k++)
            if (m->nodes[i].out[k] >= 0) fuse_from(&f, m->nodes[i].out[k], i + 1);
    NetReaders_done(&f.r);
    free(f.taken);
    free(f.in_region);
    if (fused) *fused = f.made;
    if (!f.made) return TT_OK;
    NetModel_dropDead(m);
    return NetModel_sort(m, err);
}
