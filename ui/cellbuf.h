/* ui/cellbuf.h: a rectangle of character cells with semantic attributes.
 *
 * Widgets render into a CellBuf; only ui/crt.c copies a CellBuf to the
 * terminal, so every widget can be tested by rendering into a buffer and
 * comparing text. Characters are Unicode code points (Braille plot cells are
 * U+2800..U+28FF); attributes are semantic (what the cell means), and the
 * terminal layer maps them to colours or to a monochrome scheme.
 *
 * Ownership: CellBuf_new allocates, CellBuf_delete frees. Writes outside the
 * buffer or outside the clip rectangle are dropped, never an error. */
#ifndef TT_UI_CELLBUF_H
#define TT_UI_CELLBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    ATTR_NORMAL = 0,
    ATTR_DIM,        /* secondary text, axes */
    ATTR_TITLE,      /* panel titles, column headers */
    ATTR_HEADER_VAL, /* values in the header lines */
    ATTR_SELECTED,   /* the selected row */
    ATTR_MEASURING,  /* the task being measured now */
    ATTR_BEST,       /* best values, improvements */
    ATTR_FAILED,     /* errors, failed candidates */
    ATTR_PAUSED,     /* paused / stopped tasks */
    ATTR_DONE,       /* finished tasks */
    ATTR_WARN,       /* warnings in the status line */
    ATTR_KEY,        /* key names in the key bar and help */
    ATTR_KEYBAR,     /* key bar descriptions */
    ATTR_MARK,       /* the failing source line in the inspector */
    ATTR_SERIES1,    /* plot series 1..4 */
    ATTR_SERIES2,
    ATTR_SERIES3,
    ATTR_SERIES4,
    ATTR_COUNT
} CellAttr;

typedef struct Cell {
    uint32_t ch; /* code point; ' ' when blank */
    uint8_t attr;
} Cell;

typedef struct Rect {
    int x, y, w, h;
} Rect;

typedef struct CellBuf {
    int w, h;
    Cell *cells;
    Rect clip; /* writes outside it are dropped; the whole buffer by default */
} CellBuf;

CellBuf *CellBuf_new(int w, int h);
void CellBuf_delete(CellBuf *this);
/* Resizes and clears (contents are lost). */
void CellBuf_resize(CellBuf *this, int w, int h);
void CellBuf_clear(CellBuf *this);
/* Restricts writes to r (intersected with the buffer); CellBuf_unclip lifts it. */
void CellBuf_clip(CellBuf *this, Rect r);
void CellBuf_unclip(CellBuf *this);

void CellBuf_put(CellBuf *this, int x, int y, uint32_t ch, CellAttr attr);
/* Writes UTF-8 text from (x, y), at most maxw cells (maxw < 0: to the clip
 * edge); returns the number of cells written. Control characters become '?'. */
int CellBuf_text(CellBuf *this, int x, int y, const char *utf8, CellAttr attr, int maxw);
/* printf into at most maxw cells. */
int CellBuf_printf(CellBuf *this, int x, int y, CellAttr attr, int maxw, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Fills a rectangle with ch. */
void CellBuf_fill(CellBuf *this, Rect r, uint32_t ch, CellAttr attr);
/* Sets the attribute of a rectangle, keeping the characters (row highlight). */
void CellBuf_paint(CellBuf *this, Rect r, CellAttr attr);
/* A box border with a title in the top edge (ASCII or line-drawing). */
void CellBuf_box(CellBuf *this, Rect r, const char *title, bool unicode);

const Cell *CellBuf_at(const CellBuf *this, int x, int y); /* NULL outside */
/* Row y as UTF-8 with trailing blanks removed, into buf (n bytes). For tests
 * and screen dumps. Returns buf. */
char *CellBuf_row(const CellBuf *this, int y, char *buf, size_t n);
/* The whole buffer as UTF-8 lines ("\n" after each); malloc'd, caller frees. */
char *CellBuf_dump(const CellBuf *this);

/* Encodes one code point as UTF-8 into out (>= 5 bytes), returns the byte count. */
int utf8_encode(uint32_t cp, char *out);

#endif
