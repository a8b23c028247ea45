/* tuner/net/model.c: the general network graph's storage (see model.h):
 * values with a name index, nodes, attributes, labels, readers. Ordering and binding
 * are in model_order.c. */
#include "tuner/net/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s) {
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void NetModel_init(NetModel *m) {
    memset(m, 0, sizeof *m);
    m->opset = NET_OPSET_MAX;
}

static void attr_free(NetAttr *a) {
    free(a->name);
    free(a->s);
    NdTensor_free(&a->t);
    free(a->floats);
    free(a->ints);
    for (int i = 0; a->strings && i < a->n; i++)
        free(a->strings[i]);
    free(a->strings);
}

static void node_free(NetNode *n) {
    free(n->name);
    free(n->op);
    free(n->domain);
    free(n->in);
    free(n->out);
    for (int i = 0; i < n->n_attrs; i++)
        attr_free(&n->attrs[i]);
    free(n->attrs);
}

void NetModel_done(NetModel *m) {
    for (int i = 0; i < m->n_values; i++) {
        NetValue *v = &m->values[i];
        for (int d = 0; v->dim_param && d < ND_MAX_RANK; d++)
            free(v->dim_param[d]);
        free(v->dim_param);
        free(v->name);
        NdTensor_free(&v->constant);
    }
    for (int i = 0; i < m->n_nodes; i++)
        node_free(&m->nodes[i]);
    free(m->values);
    free(m->nodes);
    free(m->inputs);
    free(m->outputs);
    free(m->name);
    free(m->dir);
    free(m->name_index);
    memset(m, 0, sizeof *m);
}

/* ---- the name index: open addressing over value ids, FNV-1a hashes ---- */

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* Inserts id unless a value of the same name is there (the first one wins). */
static void index_put(int *slots, int cap, const NetValue *values, int id) {
    uint32_t mask = (uint32_t)cap - 1;
    for (uint32_t h = hash_str(values[id].name) & mask;; h = (h + 1) & mask) {
        if (slots[h] < 0) {
            slots[h] = id;
            return;
        }
        if (!strcmp(values[slots[h]].name, values[id].name)) return;
    }
}

static bool index_rebuild(NetModel *m, int cap) {
    int *slots = malloc(sizeof *slots * (size_t)cap);
    if (!slots) return false;
    for (int i = 0; i < cap; i++)
        slots[i] = -1;
    for (int i = 0; i < m->n_values; i++)
        index_put(slots, cap, m->values, i);
    free(m->name_index);
    m->name_index = slots;
    m->index_cap = cap;
    return true;
}

/* Room for one more value in the index (load at most one half). */
static bool index_reserve(NetModel *m) {
    if (m->name_index && (m->n_values + 1) * 2 <= m->index_cap) return true;
    int cap = 64;
    while (cap < (m->n_values + 1) * 2)
        cap *= 2;
    return index_rebuild(m, cap);
}

int NetModel_addValue(NetModel *m, const char *name) {
    if (m->n_values == m->cap_values) {
        int cap = m->cap_values ? m->cap_values * 2 : 64;
        NetValue *v = realloc(m->values, sizeof *v * (size_t)cap);
        if (!v) return -1;
        m->values = v;
        m->cap_values = cap;
    }
    if (!index_reserve(m)) return -1;
    NetValue *v = &m->values[m->n_values];
    memset(v, 0, sizeof *v);
    v->name = dup_str(name);
    if (!v->name) return -1;
    v->shape.rank = -1;
    v->constant.shape.rank = -1;
    v->producer = -1;
    int id = m->n_values++;
    index_put(m->name_index, m->index_cap, m->values, id);
    return id;
}

int NetModel_find(const NetModel *m, const char *name) {
    if (!name) return -1;
    if (!m->name_index) { /* a model that did not come through addValue's index */
        for (int i = 0; i < m->n_values; i++)
            if (!strcmp(m->values[i].name, name)) return i;
        return -1;
    }
    uint32_t mask = (uint32_t)m->index_cap - 1;
    for (uint32_t h = hash_str(name) & mask; m->name_index[h] >= 0; h = (h + 1) & mask)
        if (!strcmp(m->values[m->name_index[h]].name, name)) return m->name_index[h];
    return -1;
}

int NetModel_addNode(NetModel *m, const char *name, const char *op, const char *domain, int n_in, int n_out,
                     int n_attrs) {
    if (m->n_nodes == m->cap_nodes) {
        int cap = m->cap_nodes ? m->cap_nodes * 2 : 32;
        NetNode *n = realloc(m->nodes, sizeof *n * (size_t)cap);
        if (!n) return -1;
        m->nodes = n;
        m->cap_nodes = cap;
    }
    NetNode *n = &m->nodes[m->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = dup_str(name);
    n->op = dup_str(op);
    n->domain = dup_str(domain);
    n->in = malloc(sizeof *n->in * (size_t)(n_in > 0 ? n_in : 1));
    n->out = malloc(sizeof *n->out * (size_t)(n_out > 0 ? n_out : 1));
    n->attrs = calloc((size_t)(n_attrs > 0 ? n_attrs : 1), sizeof *n->attrs);
    if (!n->name || !n->op || !n->domain || !n->in || !n->out || !n->attrs) {
        node_free(n);
        return -1;
    }
    for (int i = 0; i < n_in; i++)
        n->in[i] = -1;
    for (int i = 0; i < n_out; i++)
        n->out[i] = -1;
    for (int i = 0; i < n_attrs; i++)
        n->attrs[i].t.shape.rank = -1;
    n->n_in = n_in;
    n->n_out = n_out;
    n->n_attrs = n_attrs;
    return m->n_nodes++;
}

void NetModel_dropDead(NetModel *m) {
    int k = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        if (m->nodes[i].dead)
            node_free(&m->nodes[i]);
        else
            m->nodes[k++] = m->nodes[i];
    }
    m->n_nodes = k;
}

void NetNode_label(const NetNode *n, int index, char *buf, size_t len) {
    if (n->name && n->name[0])
        snprintf(buf, len, "'%s' (%s)", n->name, n->op);
    else
        snprintf(buf, len, "#%d (%s)", index, n->op);
}

/* ---- attributes ---- */

const NetAttr *NetNode_attr(const NetNode *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name && !strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

int64_t NetNode_attrInt(const NetNode *n, const char *name, int64_t def) {
    const NetAttr *a = NetNode_attr(n, name);
    return a && a->kind == NATTR_INT ? a->i : def;
}

double NetNode_attrFloat(const NetNode *n, const char *name, double def) {
    const NetAttr *a = NetNode_attr(n, name);
    if (a && a->kind == NATTR_FLOAT) return a->f;
    return a && a->kind == NATTR_INT ? (double)a->i : def;
}

const char *NetNode_attrString(const NetNode *n, const char *name, const char *def) {
    const NetAttr *a = NetNode_attr(n, name);
    return a && a->kind == NATTR_STRING && a->s ? a->s : def;
}

const int64_t *NetNode_attrInts(const NetNode *n, const char *name, int *count) {
    const NetAttr *a = NetNode_attr(n, name);
    if (!a || a->kind != NATTR_INTS) {
        *count = 0;
        return NULL;
    }
    *count = a->n;
    return a->ints;
}

const double *NetNode_attrFloats(const NetNode *n, const char *name, int *count) {
    const NetAttr *a = NetNode_attr(n, name);
    if (!a || a->kind != NATTR_FLOATS) {
        *count = 0;
        return NULL;
    }
    *count = a->n;
    return a->floats;
}

void NetReaders_init(NetReaders *r, const NetModel *m) {
    /* out of memory aborts, as tt_malloc does (this file is also the standalone runtime's, without base/alloc) */
    r->count = calloc((size_t)m->n_values + 1, sizeof(int));
    r->only = malloc(sizeof(int) * ((size_t)m->n_values + 1));
    if (!r->count || !r->only) abort();
    for (int v = 0; v < m->n_values; v++)
        r->only[v] = -1;
    for (int i = 0; i < m->n_nodes; i++) {
        const NetNode *n = &m->nodes[i];
        if (n->dead) continue;
        for (int j = 0; j < n->n_in; j++)
            if (n->in[j] >= 0) {
                r->count[n->in[j]]++;
                r->only[n->in[j]] = i;
            }
    }
    for (int o = 0; o < m->n_outputs; o++)
        r->count[m->outputs[o]]++;
}

void NetReaders_done(NetReaders *r) {
    free(r->count);
    free(r->only);
}

int NetReaders_sole(const NetReaders *r, int v) { return v >= 0 && r->count[v] == 1 ? r->only[v] : -1; }
