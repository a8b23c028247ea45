/* tuner/net/nd.c: N-D tensors (see nd.h). */
#include "tuner/net/nd.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *NdType_name(NdType t) {
    switch (t) {
    case ND_F32:
        return "float32";
    case ND_U8:
        return "uint8";
    case ND_I8:
        return "int8";
    case ND_U16:
        return "uint16";
    case ND_I16:
        return "int16";
    case ND_I32:
        return "int32";
    case ND_I64:
        return "int64";
    case ND_STRING:
        return "string";
    case ND_BOOL:
        return "bool";
    case ND_F16:
        return "float16";
    case ND_F64:
        return "float64";
    case ND_U32:
        return "uint32";
    case ND_U64:
        return "uint64";
    case ND_BF16:
        return "bfloat16";
    default:
        return "undefined";
    }
}

size_t NdType_size(NdType t) {
    switch (t) {
    case ND_U8:
    case ND_I8:
    case ND_BOOL:
        return 1;
    case ND_U16:
    case ND_I16:
    case ND_F16:
    case ND_BF16:
        return 2;
    case ND_F32:
    case ND_I32:
    case ND_U32:
        return 4;
    case ND_I64:
    case ND_F64:
    case ND_U64:
        return 8;
    default:
        return 0;
    }
}

bool NdType_supported(NdType t) { return t != ND_STRING && NdType_size(t) > 0; }

bool NdType_isFloat(NdType t) { return t == ND_F32 || t == ND_F64 || t == ND_F16 || t == ND_BF16; }

Status NdShape_count(const NdShape *s, NdType type, int64_t *count, char *err) {
    if (s->rank < 0) return tt_fail(err, "the shape is not known");
    if (s->rank > ND_MAX_RANK)
        return tt_fail(err, "rank %d exceeds the largest supported rank %d", s->rank, ND_MAX_RANK);
    size_t esize = NdType_size(type);
    int64_t limit = ND_MAX_BYTES / (int64_t)(esize ? esize : 1);
    int64_t c = 1;
    for (int i = 0; i < s->rank; i++) {
        int64_t d = s->dim[i];
        if (d < 0) return tt_fail(err, "dimension %d is negative (%lld)", i, (long long)d);
        if (d != 0 && c > limit / d) {
            char sh[128];
            NdShape_str(s, sh, sizeof sh);
            return tt_fail(err, "%s elements of %s exceed the %lld GiB a tensor may hold", sh, NdType_name(type),
                           (long long)(ND_MAX_BYTES >> 30));
        }
        c *= d;
    }
    *count = c;
    return TT_OK;
}

int64_t NdShape_elems(const NdShape *s) {
    int64_t c = 1;
    for (int d = 0; d < s->rank; d++)
        c = s->dim[d] < 0 || c < 0 ? -1 : c * s->dim[d];
    return s->rank < 0 ? -1 : c;
}

bool NdShape_equal(const NdShape *a, const NdShape *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return false;
    return true;
}

void NdShape_str(const NdShape *s, char *buf, size_t n) {
    if (n == 0) return;
    if (s->rank < 0) {
        snprintf(buf, n, "?");
        return;
    }
    if (s->rank == 0) {
        snprintf(buf, n, "scalar");
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->rank && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%lld", i ? "x" : "", (long long)s->dim[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
}

Status NdShape_broadcast(const NdShape *a, const NdShape *b, NdShape *out, char *err) {
    if (a->rank < 0 || b->rank < 0) {
        out->rank = -1;
        return TT_OK;
    }
    int r = a->rank > b->rank ? a->rank : b->rank;
    NdShape o = {.rank = r};
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da == db || db == 1)
            o.dim[i] = da;
        else if (da == 1)
            o.dim[i] = db;
        else {
            char sa[128], sb[128];
            NdShape_str(a, sa, sizeof sa);
            NdShape_str(b, sb, sizeof sb);
            return tt_fail(err, "shapes %s and %s do not broadcast (dimension %d: %lld vs %lld)", sa, sb, i,
                           (long long)da, (long long)db);
        }
    }
    *out = o;
    return TT_OK;
}

void NdShape_strides(const NdShape *s, int64_t *strides) {
    int64_t st = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        strides[i] = st;
        st *= s->dim[i];
    }
}

void NdShape_broadcastStrides(const NdShape *in, const NdShape *out, int64_t *strides) {
    int64_t own[ND_MAX_RANK];
    NdShape_strides(in, own);
    int off = out->rank - in->rank;
    for (int i = 0; i < out->rank; i++) {
        int j = i - off;
        strides[i] = (j < 0 || in->dim[j] == 1) ? 0 : own[j];
    }
}

Status Nd_axis(int64_t axis, int rank, int *out, char *err) {
    if (axis < -(int64_t)rank || axis >= rank)
        return tt_fail(err, "axis %lld is outside [-%d, %d)", (long long)axis, rank, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return TT_OK;
}

/* ---- the buffer cache (nd.h) ---- */

static struct {
    atomic_flag lock;
    int holders;
    int n;
    struct {
        void *p;
        size_t bytes;
    } slot[ND_CACHE_SLOTS];
} cache = {.lock = ATOMIC_FLAG_INIT};

static void cache_lock(void) {
    while (atomic_flag_test_and_set_explicit(&cache.lock, memory_order_acquire))
        ;
}

static void cache_unlock(void) { atomic_flag_clear_explicit(&cache.lock, memory_order_release); }

void NdCache_hold(void) {
    cache_lock();
    cache.holders++;
    cache_unlock();
}

void NdCache_release(void) {
    cache_lock();
    if (cache.holders > 0 && --cache.holders == 0) {
        for (int i = 0; i < cache.n; i++)
            free(cache.slot[i].p);
        cache.n = 0;
    }
    cache_unlock();
}

/* A kept buffer of exactly `bytes` (the newest such), or NULL. */
static void *cache_take(size_t bytes) {
    void *p = NULL;
    cache_lock();
    for (int i = cache.n - 1; cache.holders > 0 && i >= 0 && !p; i--)
        if (cache.slot[i].bytes == bytes) {
            p = cache.slot[i].p;
            cache.slot[i] = cache.slot[--cache.n];
        }
    cache_unlock();
    return p;
}

/* Keeps p when the cache is held (true), letting the oldest buffer go when it is full. */
static bool cache_keep(void *p, size_t bytes) {
    void *drop = NULL;
    bool kept = false;
    cache_lock();
    if (cache.holders > 0 && bytes >= ND_CACHE_MIN_BYTES) {
        if (cache.n == ND_CACHE_SLOTS) {
            drop = cache.slot[0].p;
            memmove(&cache.slot[0], &cache.slot[1], sizeof cache.slot[0] * (ND_CACHE_SLOTS - 1));
            cache.n--;
        }
        cache.slot[cache.n].p = p;
        cache.slot[cache.n++].bytes = bytes;
        kept = true;
    }
    cache_unlock();
    free(drop);
    return kept;
}

static Status nd_alloc(NdTensor *t, NdType type, const NdShape *shape, bool zero, char *err) {
    if (!NdType_supported(type)) return tt_fail(err, "element type %s is not supported", NdType_name(type));
    int64_t count;
    if (NdShape_count(shape, type, &count, err) != TT_OK) return TT_ERR;
    size_t bytes = (size_t)count * NdType_size(type);
    void *data = NULL;
    if (bytes >= ND_CACHE_MIN_BYTES && (data = cache_take(bytes)) && zero) memset(data, 0, bytes);
    if (bytes > 0 && !data) {
        data = zero ? calloc(1, bytes) : malloc(bytes);
        if (!data) return tt_fail(err, "out of memory for %lld bytes", (long long)bytes);
    }
    t->type = type;
    t->shape = *shape;
    t->data = data;
    t->count = count;
    return TT_OK;
}

Status NdTensor_alloc(NdTensor *t, NdType type, const NdShape *shape, char *err) {
    return nd_alloc(t, type, shape, true, err);
}

Status NdTensor_allocFull(NdTensor *t, NdType type, const NdShape *shape, char *err) {
    return nd_alloc(t, type, shape, false, err);
}

void NdTensor_free(NdTensor *t) {
    size_t bytes = t->data && t->count > 0 ? (size_t)t->count * NdType_size(t->type) : 0;
    if (!t->data || !cache_keep(t->data, bytes)) free(t->data);
    memset(t, 0, sizeof *t);
    t->shape.rank = -1;
}

Status NdTensor_copy(NdTensor *dst, const NdTensor *src, char *err) {
    if (NdTensor_alloc(dst, src->type, &src->shape, err) != TT_OK) return TT_ERR;
    if (src->count > 0 && src->data) memcpy(dst->data, src->data, (size_t)src->count * NdType_size(src->type));
    return TT_OK;
}

double NdTensor_get(const NdTensor *t, int64_t i) {
    const void *d = t->data;
    switch (t->type) {
    case ND_F32:
        return ((const float *)d)[i];
    case ND_F64:
        return ((const double *)d)[i];
    case ND_F16:
        return Nd_halfToFloat(((const uint16_t *)d)[i]);
    case ND_BF16:
        return Nd_bf16ToFloat(((const uint16_t *)d)[i]);
    case ND_U8:
        return ((const uint8_t *)d)[i];
    case ND_I8:
        return ((const int8_t *)d)[i];
    case ND_U16:
        return ((const uint16_t *)d)[i];
    case ND_I16:
        return ((const int16_t *)d)[i];
    case ND_I32:
        return ((const int32_t *)d)[i];
    case ND_I64:
        return (double)((const int64_t *)d)[i];
    case ND_U32:
        return ((const uint32_t *)d)[i];
    case ND_U64:
        return (double)((const uint64_t *)d)[i];
    case ND_BOOL:
        return ((const uint8_t *)d)[i] ? 1.0 : 0.0;
    default:
        return 0.0;
    }
}

int64_t NdTensor_getInt(const NdTensor *t, int64_t i) {
    const void *d = t->data;
    switch (t->type) {
    case ND_U8:
        return ((const uint8_t *)d)[i];
    case ND_I8:
        return ((const int8_t *)d)[i];
    case ND_U16:
        return ((const uint16_t *)d)[i];
    case ND_I16:
        return ((const int16_t *)d)[i];
    case ND_I32:
        return ((const int32_t *)d)[i];
    case ND_I64:
        return ((const int64_t *)d)[i];
    case ND_U32:
        return ((const uint32_t *)d)[i];
    case ND_U64:
        return (int64_t)((const uint64_t *)d)[i];
    case ND_BOOL:
        return ((const uint8_t *)d)[i] ? 1 : 0;
    default: {
        double v = NdTensor_get(t, i);
        return isfinite(v) && fabs(v) < 9.2e18 ? (int64_t)v : 0;
    }
    }
}

/* Converts a double to an integer type's range the way C's casts do for
 * in-range values; out of range and NaN (undefined in C) become 0 or wrap. */
static int64_t to_int(double v) {
    if (!isfinite(v) || fabs(v) >= 9.2e18) return 0;
    return (int64_t)v;
}

void NdTensor_set(NdTensor *t, int64_t i, double v) {
    void *d = t->data;
    switch (t->type) {
    case ND_F32:
        ((float *)d)[i] = (float)v;
        break;
    case ND_F64:
        ((double *)d)[i] = v;
        break;
    case ND_F16:
        ((uint16_t *)d)[i] = Nd_floatToHalf((float)v);
        break;
    case ND_BF16:
        ((uint16_t *)d)[i] = Nd_floatToBf16((float)v);
        break;
    case ND_U8:
        ((uint8_t *)d)[i] = (uint8_t)to_int(v);
        break;
    case ND_I8:
        ((int8_t *)d)[i] = (int8_t)to_int(v);
        break;
    case ND_U16:
        ((uint16_t *)d)[i] = (uint16_t)to_int(v);
        break;
    case ND_I16:
        ((int16_t *)d)[i] = (int16_t)to_int(v);
        break;
    case ND_I32:
        ((int32_t *)d)[i] = (int32_t)to_int(v);
        break;
    case ND_I64:
        ((int64_t *)d)[i] = to_int(v);
        break;
    case ND_U32:
        ((uint32_t *)d)[i] = (uint32_t)to_int(v);
        break;
    case ND_U64:
        ((uint64_t *)d)[i] = (uint64_t)to_int(v);
        break;
    case ND_BOOL:
        ((uint8_t *)d)[i] = v != 0.0;
        break;
    default:
        break;
    }
}

float Nd_halfToFloat(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0)
            bits = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31)
        bits = sign | 0x7f800000u | (man << 13);
    else
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t Nd_floatToHalf(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
    if (exp == 0xff) /* inf or NaN (a NaN keeps a payload bit) */
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) { /* subnormal or zero */
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++; /* a carry into the exponent is the correct rounding up */
    return (uint16_t)half;
}

float Nd_bf16ToFloat(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t Nd_floatToBf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffff)) return (uint16_t)((x >> 16) | 0x40);
    uint32_t rounding = 0x7fff + ((x >> 16) & 1);
    return (uint16_t)((x + rounding) >> 16);
}
