/* ui/widgets.h: the widgets of the terminal UI. Each renders a UiState (or a
 * plot spec) into a rectangle of a CellBuf; none includes curses, so tests
 * render them into buffers and compare text. Screen_render lays out and
 * renders a whole frame, the widgets here and the overlays of panels.h. */
#ifndef TT_UI_WIDGETS_H
#define TT_UI_WIDGETS_H

#include <stdbool.h>

#include "ui/cellbuf.h"
#include "ui/state.h"

typedef struct PlotSeries {
    const double *x, *y;
    int n;
    bool line; /* joined line (else separate points) */
    bool step; /* with line: a staircase (value holds until the next point) */
    CellAttr attr;
} PlotSeries;

typedef struct PlotSpec {
    const char *title;  /* in the top border */
    const char *xlabel; /* under the x axis, centred */
    bool y_from_zero;   /* y axis starts at 0 (GFLOPS); else at the data minimum */
    bool log_y;         /* logarithmic y (values <= 0 are skipped); labels stay in data units */
    double y_scale;     /* multiply y values for the labels (1e3: seconds -> ms) */
    bool braille;       /* 2x4 dots per cell (UTF-8), else one ASCII mark per cell */
    const char *empty;  /* text shown when there is no data */
} PlotSpec;

/* A boxed plot with auto-scaled axes and labels. */
void Plot_render(CellBuf *cb, Rect r, const PlotSpec *spec, const PlotSeries *series, int n_series);

void Header_render(CellBuf *cb, Rect r, const UiState *st);
/* Lines the header needs under its three at this width: the selected task's
 * search status wrapped (at most LAYOUT_HEADER_EXTRA_MAX), 0 when it has none. */
int Header_lines(const UiState *st, int cols);
/* "label" then text's "; "-separated parts over up to `lines` lines from
 * (x0, y), a part that would cross xend starting the next line; returns the
 * lines used. cb NULL: only counts them. */
int Header_wrap(CellBuf *cb, int x0, int y, int xend, int lines, const char *label, const char *text);
/* Also scrolls st->table_top so that the selected row is visible, and keeps r in st->table_rect. */
void Table_render(CellBuf *cb, Rect r, UiState *st);
void TaskCurve_render(CellBuf *cb, Rect r, const UiState *st);
void SessionCurve_render(CellBuf *cb, Rect r, const UiState *st);
void Status_render(CellBuf *cb, Rect r, const UiState *st);
void KeyBar_render(CellBuf *cb, Rect r, const UiState *st);

/* Clears cb and renders a whole frame at cb's size. */
void Screen_render(CellBuf *cb, UiState *st);

#define UI_LABEL_MAX 64
/* Task labels for a column of w cells: as they are when they fit, else with
 * shorter words ("conv2d" -> "cv", "->" -> ">"), else cut in the middle with
 * '~' where that tells the most labels apart. Returns how many differ. */
int Ui_shortLabels(const char *const *labels, int n, int w, char (*out)[UI_LABEL_MAX]);

/* Formats seconds as "812.4 us", "1.234 ms", "2.51 s" (or "-" when not finite). */
void Ui_formatLatency(double s, char *buf, size_t n);

#endif
