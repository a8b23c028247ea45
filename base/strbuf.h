/* base/strbuf.h: a growable, always NUL-terminated string used to generate
 * kernel source and messages. The StrBuf owns its memory: StrBuf_done frees
 * it; StrBuf_take hands the char* to the caller (who then frees it) and
 * leaves the buffer owning nothing: StrBuf_done after it is harmless but not
 * needed, and appending to it again starts a new allocation. Allocation failure aborts (out of memory is not a
 * recoverable condition for a tuner). */
#ifndef TT_BASE_STRBUF_H
#define TT_BASE_STRBUF_H

#include <stddef.h>

typedef struct StrBuf {
    char *data;
    size_t len;
    size_t cap;
} StrBuf;

void StrBuf_init(StrBuf *this);
void StrBuf_done(StrBuf *this);
void StrBuf_clear(StrBuf *this);
void StrBuf_append(StrBuf *this, const char *s);
void StrBuf_appendn(StrBuf *this, const char *s, size_t n);
void StrBuf_printf(StrBuf *this, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *StrBuf_take(StrBuf *this);

/* Appends ", name" to a list of names in a fixed buffer of n bytes (just
 * "name" when the list is empty); truncates, never overflows. The registries
 * build their names lists for help and error messages from their tables with it. */
void Names_add(char *list, size_t n, const char *name);

#endif
