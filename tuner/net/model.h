/* tuner/net/model.h: a network as a general graph of N-D tensors (the form an
 * ONNX model is read into).
 *
 * A NetModel has values (named tensors: graph inputs, constants, node outputs)
 * and nodes (an op type, input and output value ids, attributes). Every value
 * carries its element type and, where inference could tell, its shape. A
 * constant value holds its data (initializers, Constant nodes, and what
 * constant folding computed).
 *
 * Ownership: the model owns every string, attribute, constant and array in
 * it; NetModel_done frees them all. Nodes and values refer to each other by
 * index. Nodes are kept in a topological order once NetModel_sort has run
 * (the reader runs it), so an executor walks them front to back.
 *
 * Who writes what:
 *   tuner/net/onnx_read.c   ONNX protobuf -> NetModel (reader, external data)
 *   tuner/net/passes.c      shape inference, constant folding, BN into conv, identity removal
 *   tuner/net/exec.c        the reference executor (NetExec_run)
 *   tuner/net/ops/        one definition per op (ops/op.h) used by all of the above */
#ifndef TT_NET_MODEL_H
#define TT_NET_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "tuner/net/nd.h"

typedef enum {
    NATTR_FLOAT = 1,
    NATTR_INT = 2,
    NATTR_STRING = 3,
    NATTR_TENSOR = 4,
    NATTR_GRAPH = 5, /* recognised only to be refused (If, Loop, Scan) */
    NATTR_FLOATS = 6,
    NATTR_INTS = 7,
    NATTR_STRINGS = 8,
    NATTR_OTHER = 99 /* sparse tensors, type protos: refused by the ops that meet them */
} NetAttrKind;

typedef struct NetAttr {
    char *name;
    NetAttrKind kind;
    double f;       /* NATTR_FLOAT */
    int64_t i;      /* NATTR_INT */
    char *s;        /* NATTR_STRING (NUL-terminated copy) */
    NdTensor t;     /* NATTR_TENSOR */
    int n;          /* NATTR_FLOATS / INTS / STRINGS: the count */
    double *floats; /* NATTR_FLOATS */
    int64_t *ints;  /* NATTR_INTS */
    char **strings; /* NATTR_STRINGS */
} NetAttr;

typedef struct NetValue {
    char *name;
    NdType type;      /* ND_UNDEF until known */
    NdShape shape;    /* rank -1 until known */
    char **dim_param; /* per dimension of a graph input: its symbolic name, or NULL (NULL array: none) */
    int producer;     /* node index, or -1 (graph input or initializer) */
    bool is_input;    /* a graph input the user feeds (initializers excluded) */
    bool is_output;   /* a graph output */
    bool is_const;    /* constant holds the value */
    NdTensor constant;
} NetValue;

typedef struct NetNode {
    char *name;   /* the node's name, or "" when the model gave none */
    char *op;     /* op_type: "Conv", "MatMul", ... */
    char *domain; /* "" for the default ONNX domain */
    int n_in, n_out;
    int *in;  /* value ids; -1 for an omitted optional input ("") */
    int *out; /* value ids; -1 for an omitted optional output */
    int n_attrs;
    NetAttr *attrs;
    const struct OpDef *def; /* ops/op.h: set by NetModel_bind */
    bool dead;               /* removed by a pass; skipped by everything */
} NetNode;

typedef struct NetModel {
    char *name;    /* the graph's name */
    char *dir;     /* the model file's folder (external data is relative to it) */
    int64_t opset; /* the default domain's opset version */
    NetValue *values;
    int n_values, cap_values;
    NetNode *nodes;
    int n_nodes, cap_nodes;
    int *inputs; /* graph inputs (not initializers), in the model's order */
    int n_inputs;
    int *outputs; /* graph outputs, in the model's order */
    int n_outputs;
    /* model.c's index of value names (open addressing; NetModel_find): kept
     * by NetModel_addValue, rebuilt when absent. Nothing else touches it. */
    int *name_index;
    int index_cap;
} NetModel;

/* The opsets of the default domain that tunetop reads. */
#define NET_OPSET_MIN 1
#define NET_OPSET_MAX 21

void NetModel_init(NetModel *m);
void NetModel_done(NetModel *m);

/* Adds a value (name copied; type ND_UNDEF, shape unknown, producer -1) and
 * returns its id. Names are not checked for uniqueness here: NetModel_find
 * returns the first. */
int NetModel_addValue(NetModel *m, const char *name);
int NetModel_find(const NetModel *m, const char *name); /* -1 when absent */
/* Adds a node with room for n_in inputs and n_out outputs (set to -1) and
 * n_attrs zeroed attributes; strings copied. Returns its index. */
int NetModel_addNode(NetModel *m, const char *name, const char *op, const char *domain, int n_in, int n_out,
                     int n_attrs);

/* Orders the nodes so that each comes after the producers of its inputs, and
 * sets every value's producer. TT_ERR names a node on a cycle, a value read
 * before anything produces it ("node 'X' (Add) reads 'y', which nothing
 * produces"), or a value produced twice. */
Status NetModel_sort(NetModel *m, char *err);
/* Looks up every live node's op definition (ops/op.h) and checks its
 * attributes and input count. TT_ERR: "node 'X' (Foo): unsupported op" and
 * the like, one sentence naming the node and the op. */
Status NetModel_bind(NetModel *m, char *err);

/* Drops dead nodes, keeping the order of the others (node indices change;
 * NetModel_sort again to set the producers). */
void NetModel_dropDead(NetModel *m);

/* Who reads each value: how many live nodes' inputs (a graph output counts as
 * one more reader), and the one node that reads it when there is exactly one.
 * A snapshot: changes to the graph after NetReaders_init are not seen. */
typedef struct NetReaders {
    int *count, *only;
} NetReaders;
void NetReaders_init(NetReaders *r, const NetModel *m);
void NetReaders_done(NetReaders *r);
/* The node that alone reads value v (v not a graph output), or -1. */
int NetReaders_sole(const NetReaders *r, int v);

/* "'name' (Op)", or "#12 (Op)" for an unnamed node: how messages name a node. */
void NetNode_label(const NetNode *n, int index, char *buf, size_t len);

/* Attributes. The getters return `def` when the attribute is absent. */
const NetAttr *NetNode_attr(const NetNode *n, const char *name);
int64_t NetNode_attrInt(const NetNode *n, const char *name, int64_t def);
double NetNode_attrFloat(const NetNode *n, const char *name, double def);
const char *NetNode_attrString(const NetNode *n, const char *name, const char *def);
/* The ints of an INTS attribute and their count (*count = 0 and NULL when absent). */
const int64_t *NetNode_attrInts(const NetNode *n, const char *name, int *count);
const double *NetNode_attrFloats(const NetNode *n, const char *name, int *count);

#endif
