/* tuner/net/onnx_read.h: ONNX files into tunetop's general graph.
 *
 * The protobuf is decoded by protobuf-c, from C that protoc-c generates out of
 * Debian's onnx.proto at build time (CMakeLists.txt). The reader converts a
 * ModelProto into a NetModel (model.h): graph inputs that are not
 * initializers (element types, shapes, symbolic dimension names), initializers
 * as constant values (inline raw or typed data, or external data files next
 * to the model), value_info, nodes with their attributes of every kind
 * (Constant nodes stay nodes), then sorts the nodes. It does not bind ops:
 * NetModel_bind does.
 *
 * Every error is one sentence, naming the node and its op, or the tensor,
 * where there is one. On TT_ERR the model is left empty (NetModel_done'd).
 * Nothing here prints or exits. */
#ifndef TT_NET_ONNX_READ_H
#define TT_NET_ONNX_READ_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "tuner/net/model.h"
#include "tuner/net/nd.h"

/* The largest model file (protobuf's own limit is 2 GiB; weights beyond it
 * live in external data files). */
#define ONNX_MAX_MODEL_BYTES ((int64_t)2 << 30)

/* Reads the model at path into m (initialised here; NetModel_done it). The
 * model's folder is where external data files are looked for. */
Status Onnx_read(const char *path, NetModel *m, char *err);
/* The same from bytes in memory. dir: the folder of external data files, or
 * NULL to refuse external data (what the fuzzer uses). */
Status Onnx_readMemory(const void *data, size_t len, const char *dir, NetModel *m, char *err);

/* A serialized TensorProto (.pb, as ONNX's test data stores inputs and
 * outputs) into an empty t; its name (may be "") into name[n]. */
Status Onnx_readTensor(const char *path, NdTensor *t, char *name, size_t n, char *err);
Status Onnx_readTensorMemory(const void *data, size_t len, NdTensor *t, char *name, size_t n, char *err);

#endif
