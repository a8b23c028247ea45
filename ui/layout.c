/* ui/layout.c: see layout.h. */
#include "ui/layout.h"

#include <string.h>

bool Rect_empty(Rect r) { return r.w <= 0 || r.h <= 0; }

bool Rect_overlaps(Rect a, Rect b) {
    if (Rect_empty(a) || Rect_empty(b)) return false;
    return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

bool Rect_inside(Rect r, int rows, int cols) { return r.x >= 0 && r.y >= 0 && r.x + r.w <= cols && r.y + r.h <= rows; }

void ScreenLayout_compute(int rows, int cols, const LayoutView *view, ScreenLayout *out) {
    memset(out, 0, sizeof *out);
    if (rows < LAYOUT_MIN_ROWS || cols < LAYOUT_MIN_COLS) {
        out->too_small = true;
        out->message = (Rect){0, 0, cols > 0 ? cols : 0, rows > 0 ? rows : 0};
        return;
    }
    int extra = view->header_extra < 0                         ? 0
                : view->header_extra > LAYOUT_HEADER_EXTRA_MAX ? LAYOUT_HEADER_EXTRA_MAX
                                                               : view->header_extra;
    out->header = (Rect){0, 0, cols, LAYOUT_HEADER_ROWS + extra};
    out->status = (Rect){0, rows - 2, cols, 1};
    out->keybar = (Rect){0, rows - 1, cols, 1};
    int top = LAYOUT_HEADER_ROWS + extra, body = rows - 2 - top; /* >= 17 */
    if (view->overlay != OVERLAY_NONE) {
        out->overlay = (Rect){0, top, cols, body};
        return;
    }
    if (!view->curves) {
        out->table = (Rect){0, top, cols, body};
        return;
    }
    /* The table takes what its rows need (header line + rows), but leaves the
     * curves at least 10 lines and never drops below 4 lines itself. */
    int want = (view->table_rows > 0 ? view->table_rows : 1) + 1;
    int min_curves = 10;
    int table_h = want;
    if (table_h > body - min_curves) table_h = body - min_curves;
    if (table_h < 4) table_h = 4;
    if (table_h < body / 3 && want > table_h) table_h = body / 3;
    out->table = (Rect){0, top, cols, table_h};
    int cy = top + table_h, ch = body - table_h;
    if (cols >= 120) {
        /* side by side: the task curve gets the larger part */
        int lw = cols * 3 / 5;
        out->task_curve = (Rect){0, cy, lw, ch};
        out->session_curve = (Rect){lw, cy, cols - lw, ch};
    } else if (ch >= 16) {
        int th = ch / 2 + ch % 2;
        out->task_curve = (Rect){0, cy, cols, th};
        out->session_curve = (Rect){0, cy + th, cols, ch - th};
    } else {
        out->task_curve = (Rect){0, cy, cols, ch};
    }
}

int ScreenLayout_rects(const ScreenLayout *this, Rect *out) {
    const Rect all[] = {this->message,       this->header,  this->table,  this->task_curve,
                        this->session_curve, this->overlay, this->status, this->keybar};
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!Rect_empty(all[i])) out[n++] = all[i];
    return n;
}
