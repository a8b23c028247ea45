/* tuner/net/onnx_tensor.c: ONNX TensorProtos into NdTensors: raw data,
 * typed fields, external data files; serialized .pb tensors (onnx_read.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/net/netfile.h"
#include "tuner/net/onnx_pb.h"
#include "tuner/net/onnx_read.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian: this reader copies it as it is"
#endif

NdType OnnxPb_type(int32_t dt) {
    switch (dt) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13:
    case 16:
        return (NdType)dt;
    default:
        return ND_UNDEF;
    }
}

const char *OnnxPb_typeName(int32_t dt) {
    switch (dt) {
    case 0:
        return "undefined";
    case 8:
        return "string";
    case 14:
        return "complex64";
    case 15:
        return "complex128";
    case 17:
        return "float8e4m3fn";
    case 18:
        return "float8e4m3fnuz";
    case 19:
        return "float8e5m2";
    case 20:
        return "float8e5m2fnuz";
    case 21:
        return "uint4";
    case 22:
        return "int4";
    default:
        return OnnxPb_type(dt) != ND_UNDEF ? NdType_name((NdType)dt) : "unknown";
    }
}

/* How many values the typed field of this element type holds. */
static size_t field_count(const Onnx__TensorProto *p, NdType type) {
    switch (type) {
    case ND_F32:
        return p->n_float_data;
    case ND_I64:
        return p->n_int64_data;
    case ND_F64:
        return p->n_double_data;
    case ND_U32:
    case ND_U64:
        return p->n_uint64_data;
    default:
        return p->n_int32_data;
    }
}

/* The typed field's values (float_data, int32_data, ...) into t's elements
 * (field_count checked). */
static void from_fields(const Onnx__TensorProto *p, NdTensor *t) {
    for (int64_t i = 0; i < t->count; i++) {
        switch (t->type) {
        case ND_F32:
            ((float *)t->data)[i] = p->float_data[i];
            break;
        case ND_F64:
            ((double *)t->data)[i] = p->double_data[i];
            break;
        case ND_I64:
            ((int64_t *)t->data)[i] = p->int64_data[i];
            break;
        case ND_U64:
            ((uint64_t *)t->data)[i] = p->uint64_data[i];
            break;
        case ND_U32:
            ((uint32_t *)t->data)[i] = (uint32_t)p->uint64_data[i];
            break;
        case ND_I32:
            ((int32_t *)t->data)[i] = p->int32_data[i];
            break;
        case ND_F16: /* the 16 bits, as the field stores them */
        case ND_BF16:
        case ND_U16:
            ((uint16_t *)t->data)[i] = (uint16_t)p->int32_data[i];
            break;
        case ND_I16:
            ((int16_t *)t->data)[i] = (int16_t)p->int32_data[i];
            break;
        case ND_I8:
            ((int8_t *)t->data)[i] = (int8_t)p->int32_data[i];
            break;
        case ND_BOOL:
            ((uint8_t *)t->data)[i] = p->int32_data[i] != 0;
            break;
        default:
            ((uint8_t *)t->data)[i] = (uint8_t)p->int32_data[i];
            break;
        }
    }
}

/* "location" stays inside dir: relative, no ".." component (and, resolved,
 * still below dir's real path, so a symbolic link cannot lead out). */
static Status external_path(const char *dir, const char *loc, const char *what, char *path, size_t n, char *err) {
    if (!loc || !loc[0]) return tt_fail(err, "%s keeps its data in an external file but names no location", what);
    bool up = !strcmp(loc, "..") || !strncmp(loc, "../", 3) || strstr(loc, "/../") ||
              (strlen(loc) >= 3 && !strcmp(loc + strlen(loc) - 3, "/.."));
    if (loc[0] == '/' || up)
        return tt_fail(err, "%s: external data location '%s' leaves the model's folder", what, loc);
    if ((size_t)snprintf(path, n, "%s/%s", dir, loc) >= n)
        return tt_fail(err, "%s: external data location '%s' is too long", what, loc);
    char real_dir[PATH_MAX], real_file[PATH_MAX];
    if (realpath(dir, real_dir) && realpath(path, real_file)) {
        size_t k = strlen(real_dir);
        if (strncmp(real_file, real_dir, k) != 0 || (real_file[k] != '/' && strcmp(real_dir, "/") != 0))
            return tt_fail(err, "%s: external data '%s' resolves outside the model's folder", what, loc);
    }
    return TT_OK;
}

static Status parse_offset(const char *key, const char *s, const char *what, int64_t *out, char *err) {
    char *end;
    long long v = strtoll(s ? s : "", &end, 10);
    if (!s || !s[0] || *end || v < 0)
        return tt_fail(err, "%s: external data %s '%s' is not a byte count", what, key, s ? s : "");
    *out = v;
    return TT_OK;
}

static Status from_external(const Onnx__TensorProto *p, const char *dir, const char *what, NdTensor *t, char *err) {
    if (!dir) return tt_fail(err, "%s keeps its data in an external file, which a model read from memory cannot", what);
    const char *loc = NULL;
    int64_t offset = 0, length = -1;
    for (size_t i = 0; i < p->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = p->external_data[i];
        if (!e->key) continue;
        if (!strcmp(e->key, "location"))
            loc = e->value;
        else if (!strcmp(e->key, "offset") && parse_offset("offset", e->value, what, &offset, err) != TT_OK)
            return TT_ERR;
        else if (!strcmp(e->key, "length") && parse_offset("length", e->value, what, &length, err) != TT_OK)
            return TT_ERR;
    }
    char path[PATH_MAX];
    if (external_path(dir, loc, what, path, sizeof path, err) != TT_OK) return TT_ERR;
    int64_t need = t->count * (int64_t)NdType_size(t->type), size;
    if (length >= 0 && length != need)
        return tt_fail(err, "%s: external data length %lld is not the %lld bytes of its elements", what,
                       (long long)length, (long long)need);
    int fd;
    char why[TT_ERRLEN];
    if (NetFile_open(path, &fd, &size, why) != TT_OK) return tt_fail(err, "%s: external data: %s", what, why);
    Status st = TT_OK;
    NdShape shape = t->shape;
    if (offset > size || size - offset < need)
        st = tt_fail(err, "%s: external data file '%s' has %lld bytes; %lld are needed from offset %lld", what, loc,
                     (long long)size, (long long)need, (long long)offset);
    else if (NdTensor_alloc(t, t->type, &shape, why) != TT_OK)
        st = tt_fail(err, "%s: %s", what, why);
    else if (need > 0 && NetFile_readAt(fd, offset, t->data, (size_t)need, path, why) != TT_OK) {
        NdTensor_free(t);
        st = tt_fail(err, "%s: %s", what, why);
    }
    close(fd);
    return st;
}

/* Checks the declared type and dims; t gets its type, shape and count. */
static Status tensor_shape(const Onnx__TensorProto *p, const char *what, NdTensor *t, char *err) {
    int32_t dt = p->has_data_type ? p->data_type : 0;
    NdType type = OnnxPb_type(dt);
    if (type == ND_UNDEF)
        return tt_fail(err, "%s has data type %s, which tunetop does not support", what, OnnxPb_typeName(dt));
    if (p->n_dims > ND_MAX_RANK)
        return tt_fail(err, "%s has rank %zu; tunetop supports up to %d", what, p->n_dims, ND_MAX_RANK);
    if (p->segment) return tt_fail(err, "%s is a segment of a tensor, which tunetop does not support", what);
    NdShape s = {.rank = (int)p->n_dims};
    for (size_t i = 0; i < p->n_dims; i++)
        s.dim[i] = p->dims[i];
    char why[TT_ERRLEN];
    int64_t count;
    if (NdShape_count(&s, type, &count, why) != TT_OK) return tt_fail(err, "%s: %s", what, why);
    t->type = type;
    t->shape = s;
    t->count = count;
    return TT_OK;
}

Status OnnxPb_tensor(const Onnx__TensorProto *p, const char *dir, const char *what, NdTensor *t, char *err) {
    NdTensor shape = {0};
    if (tensor_shape(p, what, &shape, err) != TT_OK) return TT_ERR;
    if (p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        *t = shape; /* from_external allocates once the file is known to hold the data */
        t->data = NULL;
        Status st = from_external(p, dir, what, t, err);
        if (st != TT_OK) memset(t, 0, sizeof *t);
        return st;
    }
    /* the data is checked against the shape before anything is allocated */
    int64_t bytes = shape.count * (int64_t)NdType_size(shape.type);
    if (p->has_raw_data && (int64_t)p->raw_data.len != bytes)
        return tt_fail(err, "%s has %zu bytes of raw data for %lld bytes of elements", what, p->raw_data.len,
                       (long long)bytes);
    size_t n = field_count(p, shape.type);
    if (!p->has_raw_data && (int64_t)n != shape.count)
        return tt_fail(err, "%s has %zu values for its %lld elements", what, n, (long long)shape.count);
    char why[TT_ERRLEN];
    if (NdTensor_alloc(t, shape.type, &shape.shape, why) != TT_OK) return tt_fail(err, "%s: %s", what, why);
    if (p->has_raw_data && bytes > 0)
        memcpy(t->data, p->raw_data.data, (size_t)bytes);
    else if (!p->has_raw_data)
        from_fields(p, t);
    return TT_OK;
}

Status OnnxPb_tensorTake(Onnx__TensorProto *p, const char *dir, const char *what, NdTensor *t, char *err) {
    NdTensor shape = {0};
    bool external = p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (external || !p->has_raw_data || !p->raw_data.data || tensor_shape(p, what, &shape, NULL) != TT_OK ||
        shape.count * (int64_t)NdType_size(shape.type) != (int64_t)p->raw_data.len)
        return OnnxPb_tensor(p, dir, what, t, err);
    *t = shape; /* protobuf-c malloc'd the bytes on their own: the tensor takes them */
    t->data = p->raw_data.data;
    p->raw_data.data = NULL;
    p->raw_data.len = 0;
    p->has_raw_data = 0;
    return TT_OK;
}

Status Onnx_readTensorMemory(const void *data, size_t len, NdTensor *t, char *name, size_t n, char *err) {
    Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, len, data);
    if (!p) return tt_fail(err, "not a serialized ONNX tensor: the protobuf does not decode (truncated or corrupt)");
    char what[300];
    snprintf(what, sizeof what, "tensor '%s'", p->name ? p->name : "");
    Status st = OnnxPb_tensorTake(p, NULL, what, t, err);
    if (st == TT_OK && name && n) snprintf(name, n, "%s", p->name ? p->name : "");
    onnx__tensor_proto__free_unpacked(p, NULL);
    return st;
}

Status Onnx_readTensor(const char *path, NdTensor *t, char *name, size_t n, char *err) {
    void *data;
    size_t len;
    if (NetFile_read(path, ONNX_MAX_MODEL_BYTES, &data, &len, err) != TT_OK) return TT_ERR;
    char why[TT_ERRLEN];
    Status st = Onnx_readTensorMemory(data, len, t, name, n, why);
    free(data);
    if (st != TT_OK) return tt_fail(err, "%s: %s", path, why);
    return TT_OK;
}
