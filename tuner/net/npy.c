/* tuner/net/npy.c: numpy's .npy files (see npy.h). */
#include "tuner/net/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/net/netfile.h"

static const struct {
    const char *descr;
    NdType type;
} DESCRS[] = {
    {"f4", ND_F32}, {"f8", ND_F64}, {"f2", ND_F16}, {"i8", ND_I64}, {"i4", ND_I32}, {"i2", ND_I16}, {"i1", ND_I8},
    {"u1", ND_U8},  {"u2", ND_U16}, {"u4", ND_U32}, {"u8", ND_U64}, {"b1", ND_BOOL},
};
#define N_DESCRS (sizeof DESCRS / sizeof DESCRS[0])

/* The value text after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key)
{
    char q[32];
    snprintf(q, sizeof q, "'%s'", key);
    const char *p = strstr(h, q);
    if (!p)
        return NULL;
    p = strchr(p + strlen(q), ':');
    if (!p)
        return NULL;
    for (p++; *p == ' '; p++)
        ;
    return p;
}

static Status parse_header(const char *h, const char *path, NdType *type, NdShape *shape, char *err)
{
    const char *d = dict_value(h, "descr"), *f = dict_value(h, "fortran_order"), *s = dict_value(h, "shape");
    if (!d || !f || !s || *d != '\'' || *s != '(')
        return tt_fail(err, "%s: the .npy header lacks descr, fortran_order or shape", path);
    if (!strncmp(f, "True", 4))
        return tt_fail(err, "%s: a Fortran-order array (save it with numpy.ascontiguousarray)", path);
    char endian = d[1];
    *type = ND_UNDEF;
    for (size_t i = 0; i < N_DESCRS; i++)
        if (!strncmp(d + 2, DESCRS[i].descr, 2) && d[4] == '\'')
            *type = DESCRS[i].type;
    if (*type == ND_UNDEF || endian == '>')
        return tt_fail(err, "%s: dtype %.8s is not one tunetop reads (little-endian numbers and bools)", path, d);
    shape->rank = 0;
    for (const char *p = s + 1; *p && *p != ')';) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p)
            break;
        if (shape->rank == ND_MAX_RANK || v < 0)
            return tt_fail(err, "%s: the shape is not one tunetop holds", path);
        shape->dim[shape->rank++] = v;
        for (p = end; *p == ',' || *p == ' ' || *p == 'L'; p++)
            ;
    }
    return TT_OK;
}

Status Npy_read(const char *path, NdTensor *t, char *err)
{
    void *data;
    size_t len;
    if (NetFile_read(path, ND_MAX_BYTES + 65536, &data, &len, err) != TT_OK)
        return TT_ERR;
    const unsigned char *p = data;
    Status st = TT_OK;
    size_t hlen = 0, start = 0;
    if (len < 10 || memcmp(p, "\x93NUMPY", 6) || (p[6] != 1 && p[6] != 2))
        st = tt_fail(err, "%s is not a .npy file", path);
    else if (p[6] == 1)
        hlen = (size_t)p[8] | (size_t)p[9] << 8, start = 10;
    else if (len >= 12)
        hlen = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24, start = 12;
    if (st == TT_OK && (start == 0 || hlen > len - start))
        st = tt_fail(err, "%s: the .npy header is cut", path);
    NdType type = ND_UNDEF;
    NdShape shape = {0};
    if (st == TT_OK) {
        char *h = malloc(hlen + 1);
        memcpy(h, p + start, hlen);
        h[hlen] = '\0';
        st = parse_header(h, path, &type, &shape, err);
        free(h);
    }
    if (st == TT_OK && NdTensor_alloc(t, type, &shape, err) != TT_OK)
        st = TT_ERR;
    size_t bytes = st == TT_OK ? (size_t)t->count * NdType_size(type) : 0;
    if (st == TT_OK && bytes > len - start - hlen) {
        NdTensor_free(t);
        st = tt_fail(err, "%s: the data is shorter than its shape says", path);
    } else if (st == TT_OK && bytes)
        memcpy(t->data, p + start + hlen, bytes);
    free(data);
    return st;
}

Status Npy_write(const char *path, const NdTensor *t, char *err)
{
    const char *descr = NULL;
    for (size_t i = 0; i < N_DESCRS; i++)
        if (DESCRS[i].type == t->type)
            descr = DESCRS[i].descr;
    if (!descr)
        return tt_fail(err, "%s: no .npy dtype for %s", path, NdType_name(t->type));
    char h[1024], dims[512] = "";
    size_t used = 0;
    for (int d = 0; d < t->shape.rank; d++)
        used += (size_t)snprintf(dims + used, sizeof dims - used, "%lld%s", (long long)t->shape.dim[d],
                                 t->shape.rank == 1 || d + 1 < t->shape.rank ? ", " : "");
    int n = snprintf(h, sizeof h, "{'descr': '%c%s', 'fortran_order': False, 'shape': (%s), }",
                     NdType_size(t->type) == 1 ? '|' : '<', descr, dims);
    while ((10 + n + 1) % 64)
        h[n++] = ' ';
    h[n++] = '\n';
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
    FILE *f = fopen(path, "wb");
    size_t bytes = (size_t)t->count * NdType_size(t->type);
    bool ok = f && fwrite(pre, 1, 10, f) == 10 && fwrite(h, 1, (size_t)n, f) == (size_t)n &&
              (bytes == 0 || fwrite(t->data, 1, bytes, f) == bytes);
    if (f && fclose(f) != 0)
        ok = false;
    return ok ? TT_OK : tt_fail(err, "cannot write %s", path);
}
