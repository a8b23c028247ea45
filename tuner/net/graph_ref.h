/* tuner/net/graph_ref.h: data for a graph from a fixed seed, and the naive
 * reference execution that `tunetop run` checks a generated program against.
 *
 * The reference is written on its own: plain loops over NCHW tensors, one op
 * at a time in Graph_order, sums in double, no blocking, no threads, none of
 * the runtime (tuner/net/netrt.c) or the templates' code. */
#ifndef TT_TUNER_GRAPH_REF_H
#define TT_TUNER_GRAPH_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "tuner/net/graph.h"

/* The graph's constant parameters (g->n_params floats, in op order, each op's
 * params at its param_off) and its inputs (Graph_inputFloats, one after the
 * other), from seed. Weights are scaled by
 * fan-in (He for convolutions, 1/k for dense) so that activations keep their
 * size through deep networks; biases and shifts are small; batch-norm scales
 * are in [0.5, 1); the attention mask hides the last positions of odd batch
 * entries. TT_ERR on out of memory. Free both with free(). */
Status GraphData_make(const Graph *g, uint64_t seed, float **params, float **input, char *err);

/* Runs the graph on params and input; *out gets the output tensor (malloc'd,
 * GraphTensor_count floats). */
Status Graph_reference(const Graph *g, const float *params, const float *input, float **out, char *err);

/* One op of the reference on explicit buffers: ins[i] holds op->in[i]'s
 * tensor, out the op's output tensor (used by the runtime's unit tests). */
void Graph_referenceOp(const Graph *g, const GraphOp *op, const float *params, const float *const *ins, float *out);

/* The tolerance of a network's output against the reference:
 * |got - ref| <= GRAPH_ATOL * max|ref| + GRAPH_RTOL * |ref|. Float32 kernels
 * summing in another order drift from the double-accumulated reference by
 * about 1e-6 relative per layer; 1e-3 of the output's largest value allows
 * for a hundred layers and still catches a wrong term (which moves an output
 * by a whole product). On a mismatch returns false and describes the first
 * bad element (flat index, coordinates, values) in msg. */
#define GRAPH_ATOL 1e-3
#define GRAPH_RTOL 1e-3
bool Graph_compare(const Graph *g, const float *ref, const float *got, char *msg, size_t n);

#endif
