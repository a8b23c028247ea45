/* ui/layout.h: where each panel goes, as a pure function of the terminal size
 * and the view options. No curses here: the layout is tested over a sweep of
 * sizes (no overlap, inside the screen, nothing empty) and rebuilt from
 * scratch on every resize. */
#ifndef TT_UI_LAYOUT_H
#define TT_UI_LAYOUT_H

#include <stdbool.h>

#include "ui/cellbuf.h"

#define LAYOUT_MIN_COLS 80
#define LAYOUT_MIN_ROWS 24
#define LAYOUT_HEADER_ROWS 3
#define LAYOUT_HEADER_EXTRA_MAX 3

typedef enum { OVERLAY_NONE = 0, OVERLAY_HELP, OVERLAY_INSPECTOR, OVERLAY_MESSAGES, OVERLAY_DEVICES } Overlay;

typedef struct LayoutView {
    bool curves;      /* show the curves panels under the table */
    Overlay overlay;  /* a full-body panel in place of table and curves */
    int table_rows;   /* data rows the table would like (task count) */
    int header_extra; /* lines under the header's three (0..LAYOUT_HEADER_EXTRA_MAX): the search's status */
} LayoutView;

typedef struct ScreenLayout {
    bool too_small; /* below 80x24: only `message` is set */
    Rect message;
    Rect header;        /* LAYOUT_HEADER_ROWS (+ header_extra) lines at the top */
    Rect table;         /* column header line + rows (h = 0 when an overlay is shown) */
    Rect task_curve;    /* selected task GFLOPS per trial (h = 0 when hidden) */
    Rect session_curve; /* estimated total latency over time (h = 0 when hidden) */
    Rect overlay;       /* help or inspector (h = 0 when none) */
    Rect status;        /* one line: messages */
    Rect keybar;        /* one line: key hints */
} ScreenLayout;

void ScreenLayout_compute(int rows, int cols, const LayoutView *view, ScreenLayout *out);

/* Every non-empty rectangle of a layout, for checks; returns the count (<= 8). */
int ScreenLayout_rects(const ScreenLayout *this, Rect *out);

bool Rect_empty(Rect r);
bool Rect_overlaps(Rect a, Rect b);
bool Rect_inside(Rect r, int rows, int cols);

#endif
