/* tuner/net/model_order.c: NetModel_sort (Kahn's algorithm over the live
 * nodes) and NetModel_bind (each node's op definition), see model.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/model.h"
#include "tuner/net/ops/op.h"

/* Sets every value's producer from the live nodes; TT_ERR for a value
 * produced twice, or produced by a node while being an input or initializer. */
static Status set_producers(NetModel *m, char *err) {
    for (int v = 0; v < m->n_values; v++)
        m->values[v].producer = -1;
    for (int i = 0; i < m->n_nodes; i++) {
        const NetNode *n = &m->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0) continue;
            NetValue *val = &m->values[v];
            char a[160], b[160];
            NetNode_label(n, i, a, sizeof a);
            if (val->producer >= 0) {
                NetNode_label(&m->nodes[val->producer], val->producer, b, sizeof b);
                return tt_fail(err, "node %s writes '%s', which node %s writes too", a, val->name, b);
            }
            if (val->is_input || val->is_const)
                return tt_fail(err, "node %s writes '%s', which is a graph input or an initializer", a, val->name);
            val->producer = i;
        }
    }
    return TT_OK;
}

/* TT_ERR naming the first live node that reads a value nothing provides, or
 * a graph output nothing provides. */
static Status check_reads(const NetModel *m, char *err) {
    for (int i = 0; i < m->n_nodes; i++) {
        const NetNode *n = &m->nodes[i];
        for (int k = 0; !n->dead && k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0) continue;
            const NetValue *val = &m->values[v];
            if (val->producer < 0 && !val->is_input && !val->is_const) {
                char a[160];
                NetNode_label(n, i, a, sizeof a);
                return tt_fail(err, "node %s reads '%s', which nothing produces (no node, input or initializer)", a,
                               val->name);
            }
        }
    }
    for (int j = 0; j < m->n_outputs; j++) {
        const NetValue *val = &m->values[m->outputs[j]];
        if (val->producer < 0 && !val->is_input && !val->is_const)
            return tt_fail(err, "graph output '%s' is produced by nothing", val->name);
    }
    return TT_OK;
}

/* A node on a cycle: from an unplaced node, follow unplaced producers n times. */
static Status cycle_error(const NetModel *m, const bool *placed, char *err) {
    int i = 0;
    while (i < m->n_nodes && (placed[i] || m->nodes[i].dead))
        i++;
    for (int step = 0; step < m->n_nodes; step++) {
        const NetNode *n = &m->nodes[i];
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v >= 0 && m->values[v].producer >= 0 && !placed[m->values[v].producer]) {
                i = m->values[v].producer;
                break;
            }
        }
    }
    char a[160];
    NetNode_label(&m->nodes[i], i, a, sizeof a);
    return tt_fail(err, "node %s is on a cycle: its inputs depend on its own outputs", a);
}

/* Consumers of each value as lists in one array (CSR): first[v]..first[v+1]. */
static Status consumers(const NetModel *m, int **first_out, int **list_out, char *err) {
    int *first = calloc((size_t)m->n_values + 1, sizeof *first);
    int total = 0;
    for (int i = 0; i < m->n_nodes; i++)
        for (int k = 0; !m->nodes[i].dead && k < m->nodes[i].n_in; k++)
            total++;
    int *list = malloc(sizeof *list * (size_t)(total + 1));
    int *fill = calloc((size_t)m->n_values + 1, sizeof *fill);
    if (!first || !list || !fill) {
        free(first), free(list), free(fill);
        return tt_fail(err, "out of memory sorting %d nodes", m->n_nodes);
    }
    for (int i = 0; i < m->n_nodes; i++)
        for (int k = 0; !m->nodes[i].dead && k < m->nodes[i].n_in; k++)
            if (m->nodes[i].in[k] >= 0) first[m->nodes[i].in[k] + 1]++;
    for (int v = 0; v < m->n_values; v++)
        first[v + 1] += first[v];
    for (int i = 0; i < m->n_nodes; i++)
        for (int k = 0; !m->nodes[i].dead && k < m->nodes[i].n_in; k++) {
            int v = m->nodes[i].in[k];
            if (v >= 0) list[first[v] + fill[v]++] = i;
        }
    free(fill);
    *first_out = first;
    *list_out = list;
    return TT_OK;
}

/* Kahn's algorithm: order[] gets the live nodes, producers first. */
static Status kahn(const NetModel *m, int *order, int *n_order, char *err) {
    int *first = NULL, *list = NULL;
    if (consumers(m, &first, &list, err) != TT_OK) return TT_ERR;
    int *pending = calloc((size_t)m->n_nodes + 1, sizeof *pending);
    bool *placed = calloc((size_t)m->n_nodes + 1, sizeof *placed);
    Status st = TT_OK;
    if (!pending || !placed) {
        st = tt_fail(err, "out of memory sorting %d nodes", m->n_nodes);
        goto done;
    }
    int head = 0, tail = 0, live = 0;
    for (int i = 0; i < m->n_nodes; i++) {
        const NetNode *n = &m->nodes[i];
        if (n->dead) continue;
        live++;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && m->values[n->in[k]].producer >= 0) pending[i]++;
        if (!pending[i]) order[tail++] = i;
    }
    while (head < tail) {
        int i = order[head++];
        placed[i] = true;
        const NetNode *n = &m->nodes[i];
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            for (int c = v >= 0 ? first[v] : 0; v >= 0 && c < first[v + 1]; c++)
                if (--pending[list[c]] == 0) order[tail++] = list[c];
        }
    }
    *n_order = tail;
    if (tail < live) st = cycle_error(m, placed, err);
done:
    free(first), free(list), free(pending), free(placed);
    return st;
}

Status NetModel_sort(NetModel *m, char *err) {
    if (set_producers(m, err) != TT_OK || check_reads(m, err) != TT_OK) return TT_ERR;
    int *order = malloc(sizeof *order * (size_t)(m->n_nodes + 1));
    NetNode *nodes = malloc(sizeof *nodes * (size_t)(m->cap_nodes + 1));
    int n_order = 0;
    if (!order || !nodes) {
        free(order), free(nodes);
        return tt_fail(err, "out of memory sorting %d nodes", m->n_nodes);
    }
    if (kahn(m, order, &n_order, err) != TT_OK) {
        free(order), free(nodes);
        return TT_ERR;
    }
    int k = 0;
    for (int j = 0; j < n_order; j++)
        nodes[k++] = m->nodes[order[j]];
    for (int i = 0; i < m->n_nodes; i++) /* dead nodes keep their memory, at the end */
        if (m->nodes[i].dead) nodes[k++] = m->nodes[i];
    free(m->nodes);
    m->nodes = nodes;
    m->cap_nodes = m->cap_nodes + 1;
    free(order);
    return set_producers(m, err);
}

static Status check_counts(const NetNode *n, const OpDef *d, const char *label, char *err) {
    if (n->n_in < d->min_in || (d->max_in >= 0 && n->n_in > d->max_in))
        return tt_fail(err, "node %s: has %d inputs; %s takes %d to %d", label, n->n_in, n->op, d->min_in, d->max_in);
    if (n->n_out < d->min_out || (d->max_out >= 0 && n->n_out > d->max_out))
        return tt_fail(err, "node %s: has %d outputs; %s gives %d to %d", label, n->n_out, n->op, d->min_out,
                       d->max_out);
    for (int k = 0; k < d->min_in && k < n->n_in; k++)
        if (n->in[k] < 0) return tt_fail(err, "node %s: input %d is required but omitted", label, k);
    return TT_OK;
}

Status NetModel_bind(NetModel *m, char *err) {
    for (int i = 0; i < m->n_nodes; i++) {
        NetNode *n = &m->nodes[i];
        if (n->dead) continue;
        char label[200], why[TT_ERRLEN];
        NetNode_label(n, i, label, sizeof label);
        const OpDef *d = Op_find(n->domain, n->op);
        if (!d)
            return tt_fail(err, "node %s: unsupported op %s (domain %s)", label, n->op,
                           n->domain[0] ? n->domain : "ai.onnx");
        if (check_counts(n, d, label, err) != TT_OK) return TT_ERR;
        why[0] = '\0';
        if (d->check && d->check(n, m, why) != TT_OK)
            return tt_fail(err, "node %s: %s", label, why[0] ? why : "refused by the op");
        n->def = d;
    }
    return TT_OK;
}
