/* tuner/net/onnx_pb.h: what onnx_read.c and onnx_tensor.c share (private to
 * the reader: only these two files see protobuf-c's generated types). */
#ifndef TT_NET_ONNX_PB_H
#define TT_NET_ONNX_PB_H

#include "onnx/onnx.pb-c.h"
#include "tuner/net/nd.h"

/* A TensorProto into an empty NdTensor. what: how messages name it ("initializer
 * 'w'", "attribute 'value' of node 'c' (Constant)"). dir: the folder of
 * external data (NULL: external data is refused). */
Status OnnxPb_tensor(const Onnx__TensorProto *p, const char *dir, const char *what, NdTensor *t, char *err);
/* The same, taking raw_data's bytes out of p instead of copying them (p
 * must come from an unpack with protobuf-c's default allocator, which
 * mallocs each bytes field on its own; free_unpacked then skips them). */
Status OnnxPb_tensorTake(Onnx__TensorProto *p, const char *dir, const char *what, NdTensor *t, char *err);
/* ONNX's data type number as an NdType; ND_UNDEF for types tunetop has no
 * storage for (string, complex, float8). */
NdType OnnxPb_type(int32_t data_type);
/* The ONNX name of a data type number ("complex64", "float8e4m3fn", ...). */
const char *OnnxPb_typeName(int32_t data_type);

#endif
