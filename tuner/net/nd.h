/* tuner/net/nd.h: N-D tensors of the general network graph (ONNX models).
 *
 * An NdTensor is a dense, row-major array with an element type and a shape of
 * at most ND_MAX_RANK dimensions (rank 0 is a scalar with one element). The
 * element types carry ONNX's TensorProto.DataType numbers, so a model's type
 * field converts by a cast. float16 and bfloat16 are stored as their 16 bits
 * (uint16_t) and computed in float.
 *
 * Ownership: an NdTensor owns `data` (NdTensor_alloc / NdTensor_free). A
 * zeroed NdTensor ({0}) is empty and frees to nothing. No function here
 * prints or exits: sizes are checked for overflow and against ND_MAX_BYTES,
 * and a failure is a status with one sentence (base/status.h). */
#ifndef TT_NET_ND_H
#define TT_NET_ND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum {
    ND_UNDEF = 0,
    ND_F32 = 1,
    ND_U8 = 2,
    ND_I8 = 3,
    ND_U16 = 4,
    ND_I16 = 5,
    ND_I32 = 6,
    ND_I64 = 7,
    ND_STRING = 8, /* recognised only to be refused */
    ND_BOOL = 9,   /* one byte, 0 or 1 */
    ND_F16 = 10,
    ND_F64 = 11,
    ND_U32 = 12,
    ND_U64 = 13,
    ND_BF16 = 16,
    ND_TYPE_MAX = 17
} NdType;

#define ND_MAX_RANK 8
/* The largest tensor one value may hold (bytes): bigger is an error naming it. */
#define ND_MAX_BYTES ((int64_t)1 << 34)

typedef struct NdShape {
    int rank; /* 0..ND_MAX_RANK; -1: unknown (static inference could not tell) */
    int64_t dim[ND_MAX_RANK];
} NdShape;

typedef struct NdTensor {
    NdType type;
    NdShape shape;
    void *data;    /* owned; NULL when the tensor holds no elements or no data yet */
    int64_t count; /* elements (product of dims; 1 for rank 0) */
} NdTensor;

/* "float32", "int64", "bool", "float16", ...; "undefined" for anything else. */
const char *NdType_name(NdType t);
/* Bytes per element; 0 for ND_UNDEF, ND_STRING and unknown numbers. */
size_t NdType_size(NdType t);
/* Types the executor computes with (all of the enum but ND_UNDEF and ND_STRING). */
bool NdType_supported(NdType t);
bool NdType_isFloat(NdType t); /* f16, bf16, f32, f64 */

/* Element count of a known shape, with overflow and the ND_MAX_BYTES limit
 * checked for elements of `type` (what names the tensor in the error is the
 * caller's: the sentence says only "N x ... elements of TYPE exceed ..."). */
Status NdShape_count(const NdShape *s, NdType type, int64_t *count, char *err);
bool NdShape_equal(const NdShape *a, const NdShape *b);
/* Elements of a shape as inference knows it: 1 for rank 0, -1 when the rank
 * or a dimension is unknown (no overflow check: for comparing, not allocating). */
int64_t NdShape_elems(const NdShape *s);
/* "1x3x224x224"; "scalar" for rank 0; "?" for unknown. */
void NdShape_str(const NdShape *s, char *buf, size_t n);
/* numpy's (multidirectional) broadcast of a and b into out; TT_ERR when a
 * dimension pair is neither equal nor 1. */
Status NdShape_broadcast(const NdShape *a, const NdShape *b, NdShape *out, char *err);
/* Row-major strides of s in elements; a broadcast input's strides against an
 * output shape (0 where the input's dimension is 1 or missing). */
void NdShape_strides(const NdShape *s, int64_t *strides);
void NdShape_broadcastStrides(const NdShape *in, const NdShape *out, int64_t *strides);
/* A negative axis counts from the end: -1 is rank-1. TT_ERR outside [-rank, rank). */
Status Nd_axis(int64_t axis, int rank, int *out, char *err);

/* Allocates a zeroed tensor of this type and shape (the previous data is not
 * freed: call on an empty tensor). */
Status NdTensor_alloc(NdTensor *t, NdType type, const NdShape *shape, char *err);
/* The same, not zeroed, for an op that writes every element (a kernel, an
 * elementwise walk): a large output costs no memset. */
Status NdTensor_allocFull(NdTensor *t, NdType type, const NdShape *shape, char *err);
void NdTensor_free(NdTensor *t);
/* The buffer cache of a program that runs the same graph again and again
 * (NAME_create of an exported model holds it, NAME_destroy releases it):
 * while it is held, NdTensor_free keeps buffers of ND_CACHE_MIN_BYTES or
 * more (up to ND_CACHE_SLOTS, the oldest let go first) and NdTensor_alloc
 * hands one of exactly the bytes asked for out again (zeroed, but by NdTensor_allocFull). A second run
 * then takes every large buffer without a page fault (a fresh 1.5 MB buffer
 * costs about as much in page faults as a GELU over it). The last release
 * frees what is kept. Thread-safe; off unless held, so that tunetop's own
 * reference runs free at once (and AddressSanitizer sees every free). */
#define ND_CACHE_SLOTS 512
#define ND_CACHE_MIN_BYTES 65536
void NdCache_hold(void);
void NdCache_release(void);

/* A deep copy into an empty dst. */
Status NdTensor_copy(NdTensor *dst, const NdTensor *src, char *err);

/* Element i as a double, and a double stored into element i (converted to the
 * type: integers truncate toward zero, bool is v != 0). Slow paths only. */
double NdTensor_get(const NdTensor *t, int64_t i);
void NdTensor_set(NdTensor *t, int64_t i, double v);
/* Element i of an integer (or bool) tensor as int64, exactly. */
int64_t NdTensor_getInt(const NdTensor *t, int64_t i);

float Nd_halfToFloat(uint16_t h);
uint16_t Nd_floatToHalf(float f); /* round to nearest even */
float Nd_bf16ToFloat(uint16_t h);
uint16_t Nd_floatToBf16(float f); /* round to nearest even */

#endif
