#include "base/strbuf.h"

#include "base/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reserve(StrBuf *this, size_t extra) {
    size_t need = this->len + extra + 1;
    if (need <= this->cap) return;
    size_t cap = this->cap ? this->cap : 256;
    while (cap < need)
        cap *= 2;
    this->data = tt_realloc(this->data, cap);
    this->cap = cap;
}

void StrBuf_init(StrBuf *this) {
    this->data = NULL;
    this->len = this->cap = 0;
    reserve(this, 0);
    this->data[0] = '\0';
}

void StrBuf_done(StrBuf *this) {
    free(this->data);
    this->data = NULL;
    this->len = this->cap = 0;
}

void StrBuf_clear(StrBuf *this) {
    this->len = 0;
    if (this->data) this->data[0] = '\0';
}

void StrBuf_appendn(StrBuf *this, const char *s, size_t n) {
    reserve(this, n);
    memcpy(this->data + this->len, s, n);
    this->len += n;
    this->data[this->len] = '\0';
}

void StrBuf_append(StrBuf *this, const char *s) { StrBuf_appendn(this, s, strlen(s)); }

void StrBuf_printf(StrBuf *this, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        reserve(this, (size_t)n);
        vsnprintf(this->data + this->len, (size_t)n + 1, fmt, ap2);
        this->len += (size_t)n;
    }
    va_end(ap2);
}

char *StrBuf_take(StrBuf *this) {
    char *p = this->data;
    this->data = NULL;
    this->len = this->cap = 0;
    return p;
}

void Names_add(char *list, size_t n, const char *name) {
    size_t len = strnlen(list, n);
    if (len + 1 >= n) return;
    snprintf(list + len, n - len, "%s%s", len ? ", " : "", name);
}
