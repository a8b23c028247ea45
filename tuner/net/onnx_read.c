/* tuner/net/onnx_read.c: an ONNX ModelProto into a NetModel (onnx_read.h). */
#include "tuner/net/onnx_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/netfile.h"
#include "tuner/net/onnx_pb.h"

static char *dup_bytes(const void *p, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        if (n) memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

static char *dup_str(const char *s) { return dup_bytes(s ? s : "", s ? strlen(s) : 0); }

/* The default domain's opset, checked against the range tunetop reads. */
static Status read_opset(const Onnx__ModelProto *mp, NetModel *m, char *err) {
    int64_t v = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) v = o->has_version ? o->version : 0;
    }
    if (v < 0) return tt_fail(err, "the model imports no opset of the default domain (ai.onnx)");
    if (v < NET_OPSET_MIN || v > NET_OPSET_MAX)
        return tt_fail(err, "the model's opset %lld (ai.onnx) is outside the opsets %d to %d that tunetop reads",
                       (long long)v, NET_OPSET_MIN, NET_OPSET_MAX);
    m->opset = v;
    return TT_OK;
}

static int value_of(NetModel *m, const char *name, char *err) {
    int id = NetModel_find(m, name);
    if (id < 0 && (id = NetModel_addValue(m, name)) < 0) tt_fail(err, "out of memory adding value '%s'", name);
    return id;
}

static Status read_initializers(const Onnx__GraphProto *g, NetModel *m, char *err) {
    if (g->n_sparse_initializer)
        return tt_fail(err, "the graph has a sparse initializer, which tunetop does not support");
    for (size_t i = 0; i < g->n_initializer; i++) {
        Onnx__TensorProto *p = g->initializer[i];
        const char *name = p->name ? p->name : "";
        if (NetModel_find(m, name) >= 0) return tt_fail(err, "initializer '%s' appears twice", name);
        int id = value_of(m, name, err);
        if (id < 0) return TT_ERR;
        char what[300];
        snprintf(what, sizeof what, "initializer '%s'", name);
        NetValue *v = &m->values[id];
        if (OnnxPb_tensorTake(p, m->dir, what, &v->constant, err) != TT_OK) return TT_ERR;
        v->is_const = true;
        v->type = v->constant.type;
        v->shape = v->constant.shape;
    }
    return TT_OK;
}

/* A ValueInfoProto's tensor type: element type and shape. Symbolic and
 * unknown dimensions are -1 (their names go to dim_param when asked). */
static Status value_type(const Onnx__ValueInfoProto *vi, const char *what, NdType *type, NdShape *shape,
                         char **dim_param, char *err) {
    const char *name = vi->name ? vi->name : "";
    *type = ND_UNDEF;
    shape->rank = -1;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp) return TT_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return tt_fail(err,
                       "%s '%s' is not a tensor (a sequence, map, optional or sparse tensor), which tunetop "
                       "does not support",
                       what, name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int32_t dt = tt->has_elem_type ? tt->elem_type : 0;
    if (dt != 0 && OnnxPb_type(dt) == ND_UNDEF)
        return tt_fail(err, "%s '%s' has element type %s, which tunetop does not support", what, name,
                       OnnxPb_typeName(dt));
    *type = OnnxPb_type(dt);
    if (!tt->shape) return TT_OK;
    if (tt->shape->n_dim > ND_MAX_RANK)
        return tt_fail(err, "%s '%s' has rank %zu; tunetop supports up to %d", what, name, tt->shape->n_dim,
                       ND_MAX_RANK);
    shape->rank = (int)tt->shape->n_dim;
    for (int d = 0; d < shape->rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value >= 0;
        shape->dim[d] = known ? dim->dim_value : -1;
        if (dim_param && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dim->dim_param)
            dim_param[d] = dup_str(dim->dim_param);
    }
    return TT_OK;
}

static bool shape_static(const NdShape *s) {
    for (int d = 0; d < s->rank; d++)
        if (s->dim[d] < 0) return false;
    return s->rank >= 0;
}

static Status read_inputs(const Onnx__GraphProto *g, NetModel *m, char *err) {
    m->inputs = malloc(sizeof *m->inputs * (g->n_input + 1));
    if (!m->inputs) return tt_fail(err, "out of memory");
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        const char *name = vi->name ? vi->name : "";
        int id = NetModel_find(m, name);
        if (id >= 0 && m->values[id].is_const)
            continue; /* an initializer listed as an input too (IR < 4): a constant */
        if (id >= 0) return tt_fail(err, "graph input '%s' appears twice", name);
        if ((id = value_of(m, name, err)) < 0) return TT_ERR;
        NetValue *v = &m->values[id];
        v->dim_param = calloc(ND_MAX_RANK, sizeof *v->dim_param);
        if (!v->dim_param) return tt_fail(err, "out of memory");
        if (value_type(vi, "graph input", &v->type, &v->shape, v->dim_param, err) != TT_OK) return TT_ERR;
        v->is_input = true;
        m->inputs[m->n_inputs++] = id;
    }
    return TT_OK;
}

/* Graph outputs and value_info: declared types, and shapes when static. */
static Status read_infos(const Onnx__GraphProto *g, NetModel *m, char *err) {
    m->outputs = malloc(sizeof *m->outputs * (g->n_output + 1));
    if (!m->outputs) return tt_fail(err, "out of memory");
    for (size_t i = 0; i < g->n_output + g->n_value_info; i++) {
        bool out = i < g->n_output;
        const Onnx__ValueInfoProto *vi = out ? g->output[i] : g->value_info[i - g->n_output];
        NdType type;
        NdShape shape;
        if (value_type(vi, out ? "graph output" : "value", &type, &shape, NULL, err) != TT_OK) return TT_ERR;
        int id = out ? value_of(m, vi->name ? vi->name : "", err) : NetModel_find(m, vi->name ? vi->name : "");
        if (out && id < 0) return TT_ERR;
        if (id < 0) /* information about a value no node mentions */
            continue;
        NetValue *v = &m->values[id];
        if (out) {
            v->is_output = true;
            m->outputs[m->n_outputs++] = id;
        }
        if (v->is_const || v->is_input) continue;
        v->type = type;
        if (shape_static(&shape)) v->shape = shape;
    }
    return TT_OK;
}

static Status attr_list(NetAttr *a, const Onnx__AttributeProto *p, char *err) {
    a->n = (int)(a->kind == NATTR_FLOATS ? p->n_floats : a->kind == NATTR_INTS ? p->n_ints : p->n_strings);
    size_t n = (size_t)a->n + 1;
    if (a->kind == NATTR_FLOATS && (a->floats = malloc(sizeof *a->floats * n)))
        for (int k = 0; k < a->n; k++)
            a->floats[k] = p->floats[k];
    if (a->kind == NATTR_INTS && (a->ints = malloc(sizeof *a->ints * n)) && a->n)
        memcpy(a->ints, p->ints, sizeof *a->ints * (size_t)a->n);
    if (a->kind == NATTR_STRINGS && (a->strings = calloc(n, sizeof *a->strings)))
        for (int k = 0; k < a->n; k++)
            if (!(a->strings[k] = dup_bytes(p->strings[k].data, p->strings[k].len)))
                return tt_fail(err, "out of memory");
    if (!a->floats && !a->ints && !a->strings) return tt_fail(err, "out of memory");
    return TT_OK;
}

/* The attribute's kind: its type, or for older models that leave the type
 * out, the field that is set. */
static NetAttrKind attr_kind(const Onnx__AttributeProto *p) {
    switch (p->has_type ? p->type : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        return NATTR_FLOAT;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        return NATTR_INT;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        return NATTR_STRING;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        return p->t ? NATTR_TENSOR : NATTR_OTHER;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        return NATTR_GRAPH;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        return NATTR_FLOATS;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        return NATTR_INTS;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        return NATTR_STRINGS;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
        break;
    default:
        return NATTR_OTHER;
    }
    if (p->has_f) return NATTR_FLOAT;
    if (p->has_i) return NATTR_INT;
    if (p->has_s) return NATTR_STRING;
    if (p->t) return NATTR_TENSOR;
    if (p->g || p->n_graphs) return NATTR_GRAPH;
    if (p->n_floats) return NATTR_FLOATS;
    if (p->n_ints) return NATTR_INTS;
    return p->n_strings ? NATTR_STRINGS : NATTR_OTHER;
}

static Status read_attr(NetModel *m, NetAttr *a, const Onnx__AttributeProto *p, const char *label, char *err) {
    a->name = dup_str(p->name);
    if (!a->name) return tt_fail(err, "out of memory");
    a->kind = attr_kind(p);
    switch (a->kind) {
    case NATTR_FLOAT:
        a->f = p->f;
        return TT_OK;
    case NATTR_INT:
        a->i = p->i;
        return TT_OK;
    case NATTR_STRING:
        a->s = dup_bytes(p->s.data, p->s.len);
        return a->s ? TT_OK : tt_fail(err, "out of memory");
    case NATTR_TENSOR: {
        char what[400];
        snprintf(what, sizeof what, "attribute '%s' of node %s", a->name, label);
        return OnnxPb_tensor(p->t, m->dir, what, &a->t, err);
    }
    case NATTR_FLOATS:
    case NATTR_INTS:
    case NATTR_STRINGS:
        return attr_list(a, p, err);
    default:
        return TT_OK; /* graphs, sparse tensors, type protos: the kind is recorded, the op refuses it */
    }
}

static Status read_node(const Onnx__NodeProto *np, NetModel *m, char *err) {
    int i = NetModel_addNode(m, np->name, np->op_type, np->domain, (int)np->n_input, (int)np->n_output,
                             (int)np->n_attribute);
    if (i < 0) return tt_fail(err, "out of memory adding node '%s'", np->name ? np->name : "");
    char label[200];
    NetNode_label(&m->nodes[i], i, label, sizeof label);
    if (!np->op_type || !np->op_type[0]) return tt_fail(err, "node %s has no op type", label);
    for (size_t k = 0; k < np->n_input + np->n_output; k++) {
        bool in = k < np->n_input;
        const char *name = in ? np->input[k] : np->output[k - np->n_input];
        int id = -1;
        if (name && name[0] && (id = value_of(m, name, err)) < 0) return TT_ERR;
        if (in)
            m->nodes[i].in[k] = id;
        else
            m->nodes[i].out[k - np->n_input] = id;
    }
    for (size_t k = 0; k < np->n_attribute; k++)
        if (read_attr(m, &m->nodes[i].attrs[k], np->attribute[k], label, err) != TT_OK) return TT_ERR;
    return TT_OK;
}

static Status read_model(const Onnx__ModelProto *mp, NetModel *m, char *err) {
    if (read_opset(mp, m, err) != TT_OK) return TT_ERR;
    const Onnx__GraphProto *g = mp->graph;
    if (!g) return tt_fail(err, "the model has no graph");
    m->name = dup_str(g->name);
    if (!m->name) return tt_fail(err, "out of memory");
    if (read_initializers(g, m, err) != TT_OK || read_inputs(g, m, err) != TT_OK) return TT_ERR;
    for (size_t i = 0; i < g->n_node; i++)
        if (read_node(g->node[i], m, err) != TT_OK) return TT_ERR;
    if (read_infos(g, m, err) != TT_OK) return TT_ERR;
    return NetModel_sort(m, err);
}

Status Onnx_readMemory(const void *data, size_t len, const char *dir, NetModel *m, char *err) {
    NetModel_init(m);
    if (dir && !(m->dir = dup_str(dir))) return tt_fail(err, "out of memory");
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp) {
        NetModel_done(m);
        return tt_fail(err, "not an ONNX model: the protobuf does not decode (truncated or corrupt)");
    }
    Status st = read_model(mp, m, err);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (st != TT_OK) NetModel_done(m);
    return st;
}

Status Onnx_read(const char *path, NetModel *m, char *err) {
    NetModel_init(m);
    void *data;
    size_t len;
    if (NetFile_read(path, ONNX_MAX_MODEL_BYTES, &data, &len, err) != TT_OK) return TT_ERR;
    char *dir = NetFile_dir(path);
    if (!dir) {
        free(data);
        return tt_fail(err, "out of memory");
    }
    char why[TT_ERRLEN];
    Status st = Onnx_readMemory(data, len, dir, m, why);
    free(dir);
    free(data);
    if (st != TT_OK) return tt_fail(err, "%s: %s", path, why);
    return TT_OK;
}
