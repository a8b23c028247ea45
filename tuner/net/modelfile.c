/* tuner/net/modelfile.c: the binary model file (see modelfile.h). */
#include "tuner/net/modelfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char MAGIC[8] = {'T', 'T', 'N', 'E', 'T', 'v', '1', '\n'};
#define ALIGN 64

/* ---- writing ---- */

typedef struct Out {
    FILE *f;
    bool ok;
} Out;

static void put(Out *o, const void *p, size_t n) {
    if (o->ok && n && fwrite(p, 1, n, o->f) != n) o->ok = false;
}
static void put_u32(Out *o, uint32_t v) { put(o, &v, 4); }
static void put_i64(Out *o, int64_t v) { put(o, &v, 8); }
static void put_str(Out *o, const char *s) {
    uint32_t n = s ? (uint32_t)strlen(s) : 0;
    put_u32(o, n);
    put(o, s, n);
}
static void put_pad(Out *o) {
    static const char zeros[ALIGN];
    long pos = ftell(o->f);
    if (pos < 0)
        o->ok = false;
    else if (pos % ALIGN)
        put(o, zeros, (size_t)(ALIGN - pos % ALIGN));
}

static void put_tensor(Out *o, const NdTensor *t) {
    put_u32(o, (uint32_t)t->type);
    put_u32(o, (uint32_t)t->shape.rank);
    for (int d = 0; d < t->shape.rank; d++)
        put_i64(o, t->shape.dim[d]);
    int64_t bytes = t->data ? t->count * (int64_t)NdType_size(t->type) : 0;
    put_i64(o, bytes);
    put_pad(o);
    put(o, t->data, (size_t)bytes);
}

static void put_attr(Out *o, const NetAttr *a) {
    put_str(o, a->name);
    put_u32(o, (uint32_t)a->kind);
    switch (a->kind) {
    case NATTR_FLOAT:
        put(o, &a->f, 8);
        break;
    case NATTR_INT:
        put_i64(o, a->i);
        break;
    case NATTR_STRING:
        put_str(o, a->s);
        break;
    case NATTR_TENSOR:
        put_tensor(o, &a->t);
        break;
    case NATTR_FLOATS:
        put_u32(o, (uint32_t)a->n);
        put(o, a->floats, sizeof(double) * (size_t)a->n);
        break;
    case NATTR_INTS:
        put_u32(o, (uint32_t)a->n);
        put(o, a->ints, sizeof(int64_t) * (size_t)a->n);
        break;
    case NATTR_STRINGS:
        put_u32(o, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++)
            put_str(o, a->strings[i]);
        break;
    default:
        break; /* graphs and the rest: only the kind, refused when bound */
    }
}

static void put_value(Out *o, const NetValue *v) {
    put_str(o, v->name);
    put_u32(o, (uint32_t)v->type);
    put_u32(o, (uint32_t)(v->shape.rank + 1)); /* 0: unknown */
    for (int d = 0; d < v->shape.rank; d++)
        put_i64(o, v->shape.dim[d]);
    put_u32(o, (uint32_t)(v->is_input | v->is_output << 1 | v->is_const << 2));
    if (v->is_const) put_tensor(o, &v->constant);
}

static void put_node(Out *o, const NetNode *n) {
    put_str(o, n->name);
    put_str(o, n->op);
    put_str(o, n->domain);
    put_u32(o, (uint32_t)n->n_in);
    for (int i = 0; i < n->n_in; i++)
        put_i64(o, n->in[i]);
    put_u32(o, (uint32_t)n->n_out);
    for (int i = 0; i < n->n_out; i++)
        put_i64(o, n->out[i]);
    put_u32(o, (uint32_t)n->n_attrs);
    for (int i = 0; i < n->n_attrs; i++)
        put_attr(o, &n->attrs[i]);
}

Status ModelFile_write(const NetModel *m, const char *path, char *err) {
    Out o = {fopen(path, "wb"), true};
    if (!o.f) return tt_fail(err, "cannot write %s", path);
    put(&o, MAGIC, sizeof MAGIC);
    put_str(&o, m->name);
    put_i64(&o, m->opset);
    int live = 0;
    for (int i = 0; i < m->n_nodes; i++)
        live += !m->nodes[i].dead;
    put_u32(&o, (uint32_t)m->n_values);
    put_u32(&o, (uint32_t)live);
    for (int v = 0; v < m->n_values; v++)
        put_value(&o, &m->values[v]);
    for (int i = 0; i < m->n_nodes; i++)
        if (!m->nodes[i].dead) put_node(&o, &m->nodes[i]);
    put_u32(&o, (uint32_t)m->n_inputs);
    for (int i = 0; i < m->n_inputs; i++)
        put_i64(&o, m->inputs[i]);
    put_u32(&o, (uint32_t)m->n_outputs);
    for (int i = 0; i < m->n_outputs; i++)
        put_i64(&o, m->outputs[i]);
    bool closed = fclose(o.f) == 0;
    if (!o.ok || !closed) {
        remove(path);
        return tt_fail(err, "cannot write %s (disk full?)", path);
    }
    return TT_OK;
}

/* ---- reading: a cursor over the whole file in memory ---- */

typedef struct In {
    const unsigned char *p;
    size_t len, pos;
    bool ok;
    const char *what; /* what failed to read, for the message */
} In;

static bool take(In *in, void *dst, size_t n, const char *what) {
    if (!in->ok || n > in->len - in->pos) {
        if (in->ok) in->what = what;
        in->ok = false;
        if (dst && n <= 64) memset(dst, 0, n);
        return false;
    }
    if (dst) memcpy(dst, in->p + in->pos, n);
    in->pos += n;
    return true;
}
static uint32_t get_u32(In *in, const char *what) {
    uint32_t v = 0;
    take(in, &v, 4, what);
    return v;
}
static int64_t get_i64(In *in, const char *what) {
    int64_t v = 0;
    take(in, &v, 8, what);
    return v;
}
static char *get_str(In *in, const char *what) {
    uint32_t n = get_u32(in, what);
    if (!in->ok || n > in->len - in->pos) {
        if (in->ok) in->what = what;
        in->ok = false;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        in->ok = false;
        in->what = "memory";
        return NULL;
    }
    memcpy(s, in->p + in->pos, n);
    s[n] = '\0';
    in->pos += n;
    return s;
}
/* An id in [-1, limit). */
static int get_id(In *in, int limit, const char *what) {
    int64_t v = get_i64(in, what);
    if (in->ok && (v < -1 || v >= limit)) {
        in->ok = false;
        in->what = what;
    }
    return (int)v;
}

static void get_tensor(In *in, NdTensor *t) {
    NdShape s = {0};
    NdType type = (NdType)get_u32(in, "a tensor's type");
    s.rank = (int)get_u32(in, "a tensor's rank");
    if (s.rank > ND_MAX_RANK) {
        in->ok = false;
        in->what = "a tensor's rank";
        return;
    }
    for (int d = 0; d < s.rank; d++)
        s.dim[d] = get_i64(in, "a tensor's shape");
    int64_t bytes = get_i64(in, "a tensor's size");
    if (in->pos % ALIGN) take(in, NULL, ALIGN - in->pos % ALIGN, "padding");
    char e[TT_ERRLEN];
    if (!in->ok || NdTensor_alloc(t, type, &s, e) != TT_OK ||
        (bytes != 0 && bytes != t->count * (int64_t)NdType_size(type))) {
        in->ok = false;
        in->what = in->what ? in->what : "a tensor's data";
        return;
    }
    take(in, t->data, (size_t)bytes, "a tensor's data");
}

static void get_attr(In *in, NetAttr *a) {
    a->name = get_str(in, "an attribute's name");
    a->kind = (NetAttrKind)get_u32(in, "an attribute's kind");
    switch (a->kind) {
    case NATTR_FLOAT:
        take(in, &a->f, 8, "an attribute");
        break;
    case NATTR_INT:
        a->i = get_i64(in, "an attribute");
        break;
    case NATTR_STRING:
        a->s = get_str(in, "an attribute");
        break;
    case NATTR_TENSOR:
        get_tensor(in, &a->t);
        break;
    case NATTR_FLOATS:
    case NATTR_INTS: {
        uint32_t n = get_u32(in, "an attribute's count");
        if (!in->ok || n > (in->len - in->pos) / 8) {
            in->ok = false;
            in->what = "an attribute's list";
            return;
        }
        a->n = (int)n;
        void *p = malloc(8 * (size_t)n + 8);
        *(a->kind == NATTR_INTS ? (void **)&a->ints : (void **)&a->floats) = p;
        take(in, p, 8 * (size_t)n, "an attribute's list");
        break;
    }
    case NATTR_STRINGS: {
        uint32_t n = get_u32(in, "an attribute's count");
        if (!in->ok || n > (in->len - in->pos) / 4) {
            in->ok = false;
            in->what = "an attribute's list";
            return;
        }
        a->strings = calloc((size_t)n + 1, sizeof(char *));
        for (uint32_t i = 0; i < n && in->ok; i++, a->n++)
            a->strings[i] = get_str(in, "an attribute's strings");
        break;
    }
    default:
        break;
    }
}

static void get_value(In *in, NetModel *m) {
    char *name = get_str(in, "a value's name");
    if (!in->ok) return;
    int id = NetModel_addValue(m, name); /* it may move m->values: index after the call */
    free(name);
    if (id < 0) {
        in->ok = false;
        in->what = "memory";
        return;
    }
    NetValue *v = &m->values[id];
    v->type = (NdType)get_u32(in, "a value's type");
    v->shape.rank = (int)get_u32(in, "a value's rank") - 1;
    if (v->shape.rank > ND_MAX_RANK) {
        in->ok = false;
        in->what = "a value's rank";
        return;
    }
    for (int d = 0; d < v->shape.rank; d++)
        v->shape.dim[d] = get_i64(in, "a value's shape");
    uint32_t flags = get_u32(in, "a value's flags");
    v->is_input = flags & 1, v->is_output = (flags >> 1) & 1, v->is_const = (flags >> 2) & 1;
    if (v->is_const) get_tensor(in, &v->constant);
}

static int *get_ids(In *in, int n_values, int *count, const char *what);

static void get_node(In *in, NetModel *m, int n_values) {
    char *name = get_str(in, "a node's name"), *op = get_str(in, "a node's op"), *dom = get_str(in, "a node's domain");
    int n_in = 0, n_out = 0;
    int *ins = get_ids(in, n_values, &n_in, "a node's inputs");
    int *outs = get_ids(in, n_values, &n_out, "a node's outputs");
    uint32_t n_attrs = get_u32(in, "a node's attributes");
    if (in->ok && n_attrs > (in->len - in->pos) / 8) {
        in->ok = false;
        in->what = "a node's attributes";
    }
    if (in->ok) {
        int idx = NetModel_addNode(m, name, op, dom, n_in, n_out, (int)n_attrs); /* may move m->nodes */
        NetNode *n = &m->nodes[idx];
        memcpy(n->in, ins, sizeof(int) * (size_t)n_in);
        memcpy(n->out, outs, sizeof(int) * (size_t)n_out);
        for (uint32_t i = 0; i < n_attrs && in->ok; i++)
            get_attr(in, &n->attrs[i]);
    }
    free(name), free(op), free(dom), free(ins), free(outs);
}

static int *get_ids(In *in, int n_values, int *count, const char *what) {
    uint32_t n = get_u32(in, what);
    if (!in->ok || n > (in->len - in->pos) / 8) {
        in->ok = false;
        in->what = what;
        return NULL;
    }
    int *ids = malloc(sizeof(int) * ((size_t)n + 1));
    for (uint32_t i = 0; i < n; i++)
        ids[i] = get_id(in, n_values, what);
    *count = (int)n;
    return ids;
}

static Status load_file(const char *path, In *in, char *err) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f) return tt_fail(err, "cannot open %s", path);
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return tt_fail(err, "%s is not a regular file", path);
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    size_t got = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!buf || got != (size_t)st.st_size) {
        free(buf);
        return tt_fail(err, "cannot read %s", path);
    }
    *in = (In){.p = buf, .len = got, .ok = true};
    return TT_OK;
}

Status ModelFile_read(const char *path, NetModel *m, char *err) {
    In in = {0};
    if (load_file(path, &in, err) != TT_OK) return TT_ERR;
    char magic[8];
    if (!take(&in, magic, 8, "the magic") || memcmp(magic, MAGIC, 8)) {
        free((void *)in.p);
        return tt_fail(err, "%s is not a tunetop model file", path);
    }
    m->name = get_str(&in, "the name");
    m->opset = get_i64(&in, "the opset");
    uint32_t n_values = get_u32(&in, "the value count"), n_nodes = get_u32(&in, "the node count");
    if (in.ok && (n_values > in.len / 16 || n_nodes > in.len / 16)) {
        in.ok = false;
        in.what = "the counts";
    }
    for (uint32_t v = 0; v < n_values && in.ok; v++)
        get_value(&in, m);
    for (uint32_t i = 0; i < n_nodes && in.ok; i++)
        get_node(&in, m, (int)n_values);
    m->inputs = get_ids(&in, (int)n_values, &m->n_inputs, "the inputs");
    m->outputs = get_ids(&in, (int)n_values, &m->n_outputs, "the outputs");
    free((void *)in.p);
    if (!in.ok || m->n_values != (int)n_values) {
        NetModel_done(m);
        NetModel_init(m);
        return tt_fail(err, "%s is damaged: %s at byte %zu does not read", path, in.what ? in.what : "a record",
                       in.pos);
    }
    return TT_OK;
}
