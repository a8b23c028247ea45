/* records/tvmjson.c: see tvmjson.h. */
#include "records/tvmjson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "base/alloc.h"

static uint32_t put_str(JDoc *d, const unsigned char *s, size_t len) {
    if (d->slen + len + 1 > d->scap) {
        while (d->slen + len + 1 > d->scap)
            d->scap = d->scap ? d->scap * 2 : 4096;
        d->str = tt_realloc(d->str, d->scap);
    }
    uint32_t off = (uint32_t)d->slen;
    memcpy(d->str + off, s, len);
    d->str[off + len] = '\0';
    d->slen += len + 1;
    return off;
}

/* A new node, linked under the innermost open container. */
static JNode *add(JDoc *d, JvType type) {
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 256;
        d->nodes = tt_realloc(d->nodes, (size_t)d->cap * sizeof *d->nodes);
    }
    int32_t id = d->n++;
    JNode *x = &d->nodes[id];
    x->type = (uint8_t)type;
    x->n = 0;
    x->first = x->last = x->next = JDOC_NONE;
    x->key = 0;
    if (d->depth > 0) {
        JNode *p = &d->nodes[d->stack[d->depth - 1]];
        if (p->type == JV_OBJ) x->key = d->pending_key;
        if (p->last == JDOC_NONE)
            p->first = id;
        else
            d->nodes[p->last].next = id;
        p->last = id;
        p->n++;
    }
    return x;
}

static int on_null(void *ctx) {
    add(ctx, JV_NULL);
    return 1;
}
static int on_bool(void *ctx, int b) {
    add(ctx, JV_BOOL)->v.i = b != 0;
    return 1;
}
static int on_int(void *ctx, long long i) {
    add(ctx, JV_INT)->v.i = i;
    return 1;
}
static int on_double(void *ctx, double v) {
    add(ctx, JV_REAL)->v.d = v;
    return 1;
}
static int on_string(void *ctx, const unsigned char *s, size_t len) {
    JDoc *d = ctx;
    uint32_t off = put_str(d, s, len); /* before add(): the node pointer must not outlive a realloc */
    add(d, JV_STR)->v.s = off;
    return 1;
}
static int open_node(JDoc *d, JvType type) {
    if (d->depth == (int)(sizeof d->stack / sizeof d->stack[0])) {
        d->too_deep = true;
        return 0;
    }
    add(d, type);
    d->stack[d->depth++] = d->n - 1;
    return 1;
}
static int on_start_map(void *ctx) { return open_node(ctx, JV_OBJ); }
static int on_start_array(void *ctx) { return open_node(ctx, JV_ARR); }
static int on_end(void *ctx) {
    JDoc *d = ctx;
    d->depth--;
    return 1;
}
static int on_key(void *ctx, const unsigned char *s, size_t len) {
    JDoc *d = ctx;
    d->pending_key = put_str(d, s, len);
    return 1;
}

static const yajl_callbacks CALLBACKS = {
    on_null, on_bool, on_int, on_double, NULL, on_string, on_start_map, on_key, on_end, on_start_array, on_end,
};

void JDoc_init(JDoc *this) { memset(this, 0, sizeof *this); }

void JDoc_done(JDoc *this) {
    if (this->yajl) yajl_free(this->yajl);
    free(this->nodes);
    free(this->str);
    memset(this, 0, sizeof *this);
}

bool JDoc_parse(JDoc *this, const char *text, size_t len, char *why, size_t why_len) {
    this->n = 0;
    this->slen = 0;
    this->depth = 0;
    this->too_deep = false;
    /* a fresh handle per text: yajl keeps its state after an error */
    if (this->yajl) yajl_free(this->yajl);
    this->yajl = yajl_alloc(&CALLBACKS, NULL, this);
    if (!this->yajl) abort();
    yajl_handle h = this->yajl;
    yajl_status st = yajl_parse(h, (const unsigned char *)text, len);
    if (st == yajl_status_ok) st = yajl_complete_parse(h);
    if (st == yajl_status_ok && this->n > 0) return true;
    if (this->too_deep) {
        snprintf(why, why_len, "nested deeper than %zu levels", sizeof this->stack / sizeof this->stack[0]);
    } else if (st == yajl_status_ok) {
        snprintf(why, why_len, "empty");
    } else {
        unsigned char *msg = yajl_get_error(h, 0, NULL, 0);
        size_t at = yajl_get_bytes_consumed(h);
        snprintf(why, why_len, "%s at column %zu", msg ? (const char *)msg : "parse error", at + 1);
        /* yajl's message ends its sentence with a newline: keep ours on one line */
        for (char *c = why; *c; c++)
            if (*c == '\n' || *c == '\r') *c = ' ';
        for (char *c = strstr(why, ".  at"); c; c = strstr(c, ".  at"))
            memmove(c, c + 2, strlen(c + 2) + 1);
        if (msg) yajl_free_error(h, msg);
    }
    return false;
}

static const JNode *node(const JDoc *d, int32_t n) { return n >= 0 && n < d->n ? &d->nodes[n] : NULL; }

JvType JDoc_type(const JDoc *this, int32_t n) {
    const JNode *x = node(this, n);
    return x ? (JvType)x->type : JV_NULL;
}

int32_t JDoc_first(const JDoc *this, int32_t n) {
    const JNode *x = node(this, n);
    return x && (x->type == JV_ARR || x->type == JV_OBJ) ? x->first : JDOC_NONE;
}

int32_t JDoc_next(const JDoc *this, int32_t n) {
    const JNode *x = node(this, n);
    return x ? x->next : JDOC_NONE;
}

int32_t JDoc_at(const JDoc *this, int32_t n, int i) {
    const JNode *x = node(this, n);
    if (!x || x->type != JV_ARR || i < 0 || i >= x->n) return JDOC_NONE;
    int32_t c = x->first;
    while (i-- > 0)
        c = this->nodes[c].next;
    return c;
}

int32_t JDoc_get(const JDoc *this, int32_t n, const char *key) {
    const JNode *x = node(this, n);
    if (!x || x->type != JV_OBJ) return JDOC_NONE;
    for (int32_t c = x->first; c != JDOC_NONE; c = this->nodes[c].next)
        if (strcmp(this->str + this->nodes[c].key, key) == 0) return c;
    return JDOC_NONE;
}

int32_t JDoc_size(const JDoc *this, int32_t n) {
    const JNode *x = node(this, n);
    return x && (x->type == JV_ARR || x->type == JV_OBJ) ? x->n : 0;
}

const char *JDoc_str(const JDoc *this, int32_t n) {
    const JNode *x = node(this, n);
    return x && x->type == JV_STR ? this->str + x->v.s : NULL;
}

bool JDoc_int(const JDoc *this, int32_t n, int64_t *out) {
    const JNode *x = node(this, n);
    if (!x) return false;
    if (x->type == JV_INT) {
        *out = x->v.i;
        return true;
    }
    if (x->type == JV_REAL && x->v.d == floor(x->v.d) && fabs(x->v.d) < 9e18) {
        *out = (int64_t)x->v.d;
        return true;
    }
    return false;
}

bool JDoc_num(const JDoc *this, int32_t n, double *out) {
    const JNode *x = node(this, n);
    if (!x) return false;
    if (x->type == JV_INT)
        *out = (double)x->v.i;
    else if (x->type == JV_REAL)
        *out = x->v.d;
    else
        return false;
    return true;
}
