/* tuner/net/network.h: built-in networks and task extraction.
 *
 * A network is a graph (tuner/net/graph.h) with shapes for a batch size, layout
 * and image size. Extraction turns each tunable op into a Workload with its
 * fused epilogue (bias, ReLU, residual add where the graph has them right
 * after the op) and merges identical workloads into one task whose weight is
 * the number of occurrences. Ops without a template (pooling, softmax,
 * elementwise) are reported as untuned. */
#ifndef TT_TUNER_NETWORK_H
#define TT_TUNER_NETWORK_H

#include "base/status.h"
#include "kernels/workload.h"
#include "tuner/net/graph.h"

typedef struct NetworkOptions {
    int batch;        /* default 1 */
    Layout layout;    /* default NCHW */
    int image_size;   /* 0 = the network's default (224, 299 for inception-v3) */
    int seq_len;      /* bert-base; default 128 */
    unsigned op_mask; /* bit (1u << OpKind) per op to keep; 0 = all */
} NetworkOptions;

void NetworkOptions_defaults(NetworkOptions *this);

typedef struct NetworkTask {
    Workload wl;
    int weight; /* occurrences */
} NetworkTask;

typedef struct NetworkUntuned {
    char name[64]; /* "max_pool2d 112x112x64 3x3 s2", "softmax 1x1000" */
    int count;
} NetworkUntuned;

/* Extracts the tasks of a network, in first-occurrence order. *tasks and
 * *untuned are malloc'd arrays the caller frees. TT_ERR for an unknown name
 * (the message lists the known ones) or bad options. */
Status Network_extract(const char *name, const NetworkOptions *opt, NetworkTask **tasks, int *n_tasks,
                       NetworkUntuned **untuned, int *n_untuned, char *err);

/* Builds the network's graph (Graph_done frees it). TT_ERR for an unknown
 * name or bad options, with g left empty. */
Status Network_graph(const char *name, const NetworkOptions *opt, Graph *g, char *err);

/* The graph of one operator (`run --task`): its inputs (data, and the
 * residual, or both matrices of a batch_matmul), the op, and its epilogue as
 * ops (bias_add, add, relu), so that Graph_tasks gives back exactly wl.
 * TT_ERR for an NHWC workload (graphs execute in NCHW). */
Status Network_taskGraph(const Workload *wl, Graph *g, char *err);

/* Total number of layers of one op kind in the network before dedup (for checks). */
int Network_layerCount(const char *name, const NetworkOptions *opt, OpKind op);

const char *Network_names(void);      /* "resnet-18, resnet-34, ...": the table's names */
const char *Network_imageSizes(void); /* the default image sizes: "224; 299 for inception-v3" */
/* A network's default image side (224, 299), 0 for one without images
 * (bert-base: a sequence), -1 for an unknown name. */
int Network_defaultImage(const char *name);

/* Parses "conv2d,dense" into an op mask; TT_ERR names an unknown op. */
Status Network_parseOps(const char *list, unsigned *mask, char *err);

#endif
