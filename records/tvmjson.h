/* records/tvmjson.h: one JSON line as a small read-only tree, for the TVM log
 * readers (records/tvmlog.c).
 *
 * The parsing is yajl's (its event parser); the tree is kept in two arrays
 * owned by the JDoc and reused from line to line, so reading a record
 * allocates nothing once the arrays have grown to the largest line. Nodes are
 * addressed by index; JDOC_NONE (-1) stands for "absent" and every accessor
 * accepts it, so lookups chain like doc["input"][2][0] without checks in
 * between.
 */
#ifndef TT_RECORDS_TVMJSON_H
#define TT_RECORDS_TVMJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JDOC_NONE (-1)

typedef enum { JV_NULL = 0, JV_BOOL, JV_INT, JV_REAL, JV_STR, JV_ARR, JV_OBJ } JvType;

typedef struct JNode {
    uint8_t type;
    int32_t n;     /* children (array, object) */
    int32_t first; /* first child, or JDOC_NONE */
    int32_t last;  /* last child (while building) */
    int32_t next;  /* next sibling, or JDOC_NONE */
    uint32_t key;  /* member of an object: offset of its key in the string arena */
    union {
        int64_t i;  /* JV_INT, JV_BOOL */
        double d;   /* JV_REAL */
        uint32_t s; /* JV_STR: offset in the string arena (NUL-terminated) */
    } v;
} JNode;

typedef struct JDoc {
    JNode *nodes;
    int32_t n, cap;
    char *str;
    size_t slen, scap;
    int32_t stack[128];
    int depth;
    bool too_deep;
    uint32_t pending_key; /* offset of the key for the next member */
    void *yajl;           /* the parser handle, reused */
} JDoc;

void JDoc_init(JDoc *this);
void JDoc_done(JDoc *this);
/* Parses one complete JSON text; the root is node 0. False (why: a short
 * sentence with the column) when it is not JSON. */
bool JDoc_parse(JDoc *this, const char *text, size_t len, char *why, size_t why_len);

JvType JDoc_type(const JDoc *this, int32_t node);                  /* JV_NULL for JDOC_NONE */
int32_t JDoc_at(const JDoc *this, int32_t node, int i);            /* array element i */
int32_t JDoc_get(const JDoc *this, int32_t node, const char *key); /* object member */
int32_t JDoc_size(const JDoc *this, int32_t node);                 /* children of an array or object, else 0 */
const char *JDoc_str(const JDoc *this, int32_t node);              /* NULL unless a string */
bool JDoc_int(const JDoc *this, int32_t node, int64_t *out);       /* an integer, or a real with no fraction */
bool JDoc_num(const JDoc *this, int32_t node, double *out);        /* any number */
/* Iteration over children: for (c = JDoc_first(d, n); c != JDOC_NONE; c = JDoc_next(d, c)) */
int32_t JDoc_first(const JDoc *this, int32_t node);
int32_t JDoc_next(const JDoc *this, int32_t node);

#endif
