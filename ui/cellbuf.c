/* ui/cellbuf.c: see cellbuf.h. */
#include "ui/cellbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

CellBuf *CellBuf_new(int w, int h) {
    CellBuf *this = calloc(1, sizeof *this);
    if (!this) abort();
    CellBuf_resize(this, w, h);
    return this;
}

void CellBuf_delete(CellBuf *this) {
    if (!this) return;
    free(this->cells);
    free(this);
}

void CellBuf_resize(CellBuf *this, int w, int h) {
    if (w < 0) w = 0;
    if (h < 0) h = 0;
    free(this->cells);
    this->w = w;
    this->h = h;
    /* +1 so that a 0x0 buffer still has a valid pointer */
    this->cells = calloc((size_t)w * (size_t)h + 1, sizeof(Cell));
    if (!this->cells) abort();
    CellBuf_unclip(this);
    CellBuf_clear(this);
}

void CellBuf_clear(CellBuf *this) {
    for (int i = 0; i < this->w * this->h; i++) {
        this->cells[i].ch = ' ';
        this->cells[i].attr = ATTR_NORMAL;
    }
}

void CellBuf_unclip(CellBuf *this) { this->clip = (Rect){0, 0, this->w, this->h}; }

void CellBuf_clip(CellBuf *this, Rect r) {
    int x0 = r.x < 0 ? 0 : r.x, y0 = r.y < 0 ? 0 : r.y;
    int x1 = r.x + r.w > this->w ? this->w : r.x + r.w;
    int y1 = r.y + r.h > this->h ? this->h : r.y + r.h;
    this->clip = (Rect){x0, y0, x1 > x0 ? x1 - x0 : 0, y1 > y0 ? y1 - y0 : 0};
}

static bool inside(const CellBuf *this, int x, int y) {
    return x >= this->clip.x && y >= this->clip.y && x < this->clip.x + this->clip.w && y < this->clip.y + this->clip.h;
}

void CellBuf_put(CellBuf *this, int x, int y, uint32_t ch, CellAttr attr) {
    if (!inside(this, x, y)) return;
    Cell *c = &this->cells[y * this->w + x];
    c->ch = ch;
    c->attr = (uint8_t)attr;
}

/* Decodes one UTF-8 sequence; invalid bytes decode as '?' one byte at a time. */
static uint32_t utf8_next(const unsigned char **p) {
    const unsigned char *s = *p;
    uint32_t cp;
    int extra;
    if (s[0] < 0x80) {
        *p = s + 1;
        return s[0];
    } else if ((s[0] & 0xE0) == 0xC0) {
        cp = s[0] & 0x1F;
        extra = 1;
    } else if ((s[0] & 0xF0) == 0xE0) {
        cp = s[0] & 0x0F;
        extra = 2;
    } else if ((s[0] & 0xF8) == 0xF0) {
        cp = s[0] & 0x07;
        extra = 3;
    } else {
        *p = s + 1;
        return '?';
    }
    for (int i = 1; i <= extra; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *p = s + 1;
            return '?';
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    *p = s + 1 + extra;
    return cp;
}

int CellBuf_text(CellBuf *this, int x, int y, const char *utf8, CellAttr attr, int maxw) {
    if (!utf8) return 0;
    if (maxw < 0) maxw = this->clip.x + this->clip.w - x;
    const unsigned char *p = (const unsigned char *)utf8;
    int n = 0;
    while (*p && n < maxw) {
        uint32_t cp = utf8_next(&p);
        if (cp == '\t') cp = ' ';
        if (cp < 0x20 || cp == 0x7F) cp = '?';
        CellBuf_put(this, x + n, y, cp, attr);
        n++;
    }
    return n;
}

int CellBuf_printf(CellBuf *this, int x, int y, CellAttr attr, int maxw, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return CellBuf_text(this, x, y, buf, attr, maxw);
}

void CellBuf_fill(CellBuf *this, Rect r, uint32_t ch, CellAttr attr) {
    for (int y = r.y; y < r.y + r.h; y++)
        for (int x = r.x; x < r.x + r.w; x++)
            CellBuf_put(this, x, y, ch, attr);
}

void CellBuf_paint(CellBuf *this, Rect r, CellAttr attr) {
    for (int y = r.y; y < r.y + r.h; y++)
        for (int x = r.x; x < r.x + r.w; x++)
            if (inside(this, x, y)) this->cells[y * this->w + x].attr = (uint8_t)attr;
}

void CellBuf_box(CellBuf *this, Rect r, const char *title, bool unicode) {
    if (r.w < 2 || r.h < 2) return;
    uint32_t hz = unicode ? 0x2500 : '-', vt = unicode ? 0x2502 : '|';
    uint32_t tl = unicode ? 0x250C : '+', tr = unicode ? 0x2510 : '+';
    uint32_t bl = unicode ? 0x2514 : '+', br = unicode ? 0x2518 : '+';
    int x1 = r.x + r.w - 1, y1 = r.y + r.h - 1;
    for (int x = r.x + 1; x < x1; x++) {
        CellBuf_put(this, x, r.y, hz, ATTR_DIM);
        CellBuf_put(this, x, y1, hz, ATTR_DIM);
    }
    for (int y = r.y + 1; y < y1; y++) {
        CellBuf_put(this, r.x, y, vt, ATTR_DIM);
        CellBuf_put(this, x1, y, vt, ATTR_DIM);
    }
    CellBuf_put(this, r.x, r.y, tl, ATTR_DIM);
    CellBuf_put(this, x1, r.y, tr, ATTR_DIM);
    CellBuf_put(this, r.x, y1, bl, ATTR_DIM);
    CellBuf_put(this, x1, y1, br, ATTR_DIM);
    if (title && title[0] && r.w > 6) {
        CellBuf_put(this, r.x + 1, r.y, ' ', ATTR_TITLE);
        int n = CellBuf_text(this, r.x + 2, r.y, title, ATTR_TITLE, r.w - 5);
        CellBuf_put(this, r.x + 2 + n, r.y, ' ', ATTR_TITLE);
    }
}

const Cell *CellBuf_at(const CellBuf *this, int x, int y) {
    if (x < 0 || y < 0 || x >= this->w || y >= this->h) return NULL;
    return &this->cells[y * this->w + x];
}

int utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

char *CellBuf_row(const CellBuf *this, int y, char *buf, size_t n) {
    size_t len = 0, keep = 0;
    if (n == 0) return buf;
    buf[0] = '\0';
    if (y < 0 || y >= this->h) return buf;
    for (int x = 0; x < this->w; x++) {
        char enc[5];
        int k = utf8_encode(this->cells[y * this->w + x].ch, enc);
        if (len + (size_t)k + 1 > n) break;
        memcpy(buf + len, enc, (size_t)k);
        len += (size_t)k;
        if (this->cells[y * this->w + x].ch != ' ') keep = len;
    }
    buf[keep] = '\0';
    return buf;
}

char *CellBuf_dump(const CellBuf *this) {
    StrBuf sb;
    StrBuf_init(&sb);
    size_t n = (size_t)this->w * 4 + 1;
    char *line = malloc(n);
    if (!line) abort();
    for (int y = 0; y < this->h; y++) {
        StrBuf_append(&sb, CellBuf_row(this, y, line, n));
        StrBuf_append(&sb, "\n");
    }
    free(line);
    char *out = StrBuf_take(&sb);
    StrBuf_done(&sb); /* take leaves an empty, allocated buffer */
    return out;
}
