/* tuner/net/npy.c: numpy .npy files (npy.h). */
#include "tuner/net/npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/netfile.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error ".npy data is read and written as little-endian bytes as they are"
#endif

static const struct {
    const char *descr; /* as written; reading also takes '=' and '|' for '<' */
    NdType type;
} DESCRS[] = {{"<f4", ND_F32}, {"<f8", ND_F64}, {"<f2", ND_F16}, {"<i8", ND_I64}, {"<i4", ND_I32}, {"<i2", ND_I16},
              {"|i1", ND_I8},  {"<u8", ND_U64}, {"<u4", ND_U32}, {"<u2", ND_U16}, {"|u1", ND_U8},  {"|b1", ND_BOOL}};
#define N_DESCRS (sizeof DESCRS / sizeof DESCRS[0])

static NdType descr_type(const char *d) {
    if (strlen(d) != 3 || (d[0] != '<' && d[0] != '|' && d[0] != '=')) return ND_UNDEF;
    for (size_t i = 0; i < N_DESCRS; i++)
        if (!strcmp(d + 1, DESCRS[i].descr + 1) && (d[0] == '<' || d[0] == '=' || d[2] == '1')) return DESCRS[i].type;
    return ND_UNDEF;
}

/* The value after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key) {
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    const char *p = strstr(h, quoted);
    if (!p) return NULL;
    p += strlen(quoted);
    while (isspace((unsigned char)*p))
        p++;
    if (*p++ != ':') return NULL;
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

static Status parse_shape(const char *p, const char *what, NdShape *s, char *err) {
    if (!p || *p++ != '(') return tt_fail(err, "%s: the .npy header has no shape", what);
    s->rank = 0;
    for (;;) {
        while (isspace((unsigned char)*p) || *p == ',')
            p++;
        if (*p == ')') return TT_OK;
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || errno) return tt_fail(err, "%s: the .npy header's shape does not parse", what);
        if (s->rank == ND_MAX_RANK) return tt_fail(err, "%s: the array has more than %d dimensions", what, ND_MAX_RANK);
        s->dim[s->rank++] = d;
        p = end;
    }
}

/* The header dict's text (NUL-terminated copy in h) and where the data starts. */
static Status header(const unsigned char *b, size_t len, const char *what, char *h, size_t hn, size_t *data_at,
                     char *err) {
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return tt_fail(err, "%s is not a .npy file (no \\x93NUMPY magic)", what);
    int major = b[6];
    size_t hlen, at;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        at = 10;
    } else if ((major == 2 || major == 3) && len >= 12) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        at = 12;
    } else
        return tt_fail(err, "%s: .npy format version %d.%d is not one tunetop reads", what, major, b[7]);
    if (hlen > len - at || hlen >= hn) return tt_fail(err, "%s: the .npy header is cut short or too long", what);
    memcpy(h, b + at, hlen);
    h[hlen] = '\0';
    *data_at = at + hlen;
    return TT_OK;
}

Status Npy_readMemory(const void *data, size_t len, const char *what, NdTensor *t, char *err) {
    char h[4096], descr[16] = "";
    size_t at = 0;
    if (header(data, len, what, h, sizeof h, &at, err) != TT_OK) return TT_ERR;
    const char *d = dict_value(h, "descr"), *f = dict_value(h, "fortran_order");
    if (!d || sscanf(d, "'%15[^']'", descr) != 1) return tt_fail(err, "%s: the .npy header has no descr", what);
    NdType type = descr_type(descr);
    if (type == ND_UNDEF)
        return tt_fail(err, "%s: numpy type '%s' is not one tunetop reads (C-order little-endian numbers or bool)",
                       what, descr);
    if (!f || strncmp(f, "False", 5) != 0)
        return tt_fail(err, "%s: the array is in Fortran order (or says nothing of it); tunetop reads C order only",
                       what);
    NdShape s;
    if (parse_shape(dict_value(h, "shape"), what, &s, err) != TT_OK) return TT_ERR;
    int64_t count;
    char why[TT_ERRLEN];
    if (NdShape_count(&s, type, &count, why) != TT_OK) return tt_fail(err, "%s: %s", what, why);
    size_t bytes = (size_t)count * NdType_size(type);
    if (len - at != bytes)
        return tt_fail(err, "%s has %zu bytes of data; its %s array of %s needs %zu", what, len - at, descr,
                       NdType_name(type), bytes);
    if (NdTensor_alloc(t, type, &s, why) != TT_OK) return tt_fail(err, "%s: %s", what, why);
    if (bytes) memcpy(t->data, (const char *)data + at, bytes);
    return TT_OK;
}

Status Npy_read(const char *path, NdTensor *t, char *err) {
    void *data;
    size_t len;
    if (NetFile_read(path, ND_MAX_BYTES + 65536, &data, &len, err) != TT_OK) return TT_ERR;
    Status st = Npy_readMemory(data, len, path, t, err);
    free(data);
    return st;
}

static const char *type_descr(NdType t) {
    for (size_t i = 0; i < N_DESCRS; i++)
        if (DESCRS[i].type == t) return DESCRS[i].descr;
    return NULL;
}

Status Npy_write(const char *path, const NdTensor *t, char *err) {
    const char *descr = type_descr(t->type);
    if (!descr) return tt_fail(err, "%s: numpy has no type for %s", path, NdType_name(t->type));
    char shape[ND_MAX_RANK * 24 + 8] = "(";
    for (int d = 0; d < t->shape.rank; d++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld,%s", (long long)t->shape.dim[d],
                 d + 1 < t->shape.rank ? " " : "");
    if (t->shape.rank > 1) shape[strlen(shape) - 1] = '\0'; /* (2, 3) but (3,) */
    strcat(shape, ")");
    char h[512];
    int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    int total = ((10 + n + 1 + 63) / 64) * 64; /* magic, version, length, dict, spaces, '\n' */
    memset(h + n, ' ', (size_t)(total - 10 - n - 1));
    h[total - 10 - 1] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return tt_fail(err, "cannot write '%s': %s", path, strerror(errno));
    unsigned char pre[10] = {
        0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)((total - 10) & 0xff), (unsigned char)((total - 10) >> 8)};
    size_t bytes = (size_t)t->count * NdType_size(t->type);
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h, 1, (size_t)(total - 10), f) == (size_t)(total - 10) &&
              (bytes == 0 || fwrite(t->data, 1, bytes, f) == bytes);
    if (fclose(f) != 0) ok = false;
    return ok ? TT_OK : tt_fail(err, "cannot write '%s': %s", path, strerror(errno));
}
