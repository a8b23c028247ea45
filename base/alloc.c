/* base/alloc.c: see alloc.h. */
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

static void *checked(void *p) {
    if (!p) abort(); /* out of memory */
    return p;
}

void *tt_malloc(size_t n) { return checked(malloc(n ? n : 1)); }
void *tt_calloc(size_t count, size_t size) { return checked(calloc(count ? count : 1, size ? size : 1)); }
void *tt_realloc(void *p, size_t n) { return checked(realloc(p, n ? n : 1)); }
char *tt_strdup(const char *s) { return checked(strdup(s)); }
char *tt_strndup(const char *s, size_t n) { return checked(strndup(s, n)); }
