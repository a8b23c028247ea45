/* base/alloc.h: allocation that cannot fail. Out of memory is not a
 * recoverable condition for a tuner (as in StrBuf): each of these aborts
 * instead of returning NULL, so callers never check, and no library folder
 * turns it into an error sentence of its own. */
#ifndef TT_BASE_ALLOC_H
#define TT_BASE_ALLOC_H

#include <stddef.h>

void *tt_malloc(size_t n); /* n == 0 allocates 1 byte */
void *tt_calloc(size_t count, size_t size);
void *tt_realloc(void *p, size_t n); /* n == 0 keeps 1 byte */
char *tt_strdup(const char *s);
char *tt_strndup(const char *s, size_t n);

#endif
