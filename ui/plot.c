/* ui/plot.c: auto-scaled plots in a box: Braille cells (2x4 dots per cell)
 * on UTF-8 terminals, one ASCII mark per cell otherwise; the task's GFLOPS
 * per trial and the session's estimated latency over time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/widgets.h"

#define Y_LABEL_W 8

/* The smallest "nice" number (1, 2, 2.5, 5 x 10^k) >= v. */
static double nice_ceil(double v) {
    if (v <= 0) return 1;
    double e = pow(10, floor(log10(v)));
    const double steps[] = {1, 2, 2.5, 5, 10};
    for (int i = 0; i < 5; i++)
        if (steps[i] * e >= v * (1 - 1e-12)) return steps[i] * e;
    return 10 * e;
}

static void format_axis(double v, char *buf, size_t n) {
    double a = fabs(v);
    if (a == 0)
        snprintf(buf, n, "0");
    else if (a >= 1 && a < 1e5 && fabs(v - round(v)) < 1e-9 * a)
        snprintf(buf, n, "%.0f", v);
    else if (a >= 1e5)
        snprintf(buf, n, "%.3g", v);
    else if (a >= 100)
        snprintf(buf, n, "%.0f", v);
    else if (a >= 10)
        snprintf(buf, n, "%.1f", v);
    else if (a >= 0.01)
        snprintf(buf, n, "%.3g", v);
    else
        snprintf(buf, n, "%.2g", v);
}

/* Braille dot bit for dot column dx (0..1) and row dy (0..3) of a cell. */
static const uint8_t BRAILLE_BIT[2][4] = {{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}};

typedef struct Canvas {
    int cw, ch; /* cells */
    int dw, dh; /* dots */
    bool braille;
    uint8_t *mask; /* per cell: Braille bits, or 1 = point / 2 = line in ASCII */
    uint8_t *attr;
} Canvas;

static void Canvas_dot(Canvas *c, int dx, int dy, bool line, CellAttr attr) {
    if (dx < 0 || dy < 0 || dx >= c->dw || dy >= c->dh) return;
    int cx, cy;
    if (c->braille) {
        cx = dx / 2;
        cy = dy / 4;
        c->mask[cy * c->cw + cx] |= BRAILLE_BIT[dx % 2][dy % 4];
    } else {
        cx = dx;
        cy = dy;
        c->mask[cy * c->cw + cx] |= line ? 2 : 1;
    }
    c->attr[cy * c->cw + cx] = (uint8_t)attr;
}

/* Bresenham between two dots. */
static void Canvas_line(Canvas *c, int x0, int y0, int x1, int y1, CellAttr attr) {
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    int dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (int guard = 0; guard < 100000; guard++) {
        Canvas_dot(c, x0, y0, true, attr);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

void Plot_render(CellBuf *cb, Rect r, const PlotSpec *spec, const PlotSeries *series, int n_series) {
    CellBuf_box(cb, r, spec->title, spec->braille);
    int px = r.x + 1 + Y_LABEL_W, py = r.y + 1;
    int pw = r.w - 2 - Y_LABEL_W, ph = r.h - 3; /* last inner row: x labels */
    if (pw < 4 || ph < 2) return;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    int total = 0;
    for (int s = 0; s < n_series; s++)
        for (int i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = spec->log_y ? log10(series[s].y[i]) : series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            xmin = fmin(xmin, x);
            xmax = fmax(xmax, x);
            ymin = fmin(ymin, y);
            ymax = fmax(ymax, y);
            total++;
        }
    if (total == 0) {
        /* centred, one line per '\n' */
        const char *msg = spec->empty ? spec->empty : "no data yet";
        int y = py + ph / 2 - 1;
        for (const char *s = msg; *s; y++) {
            int len = (int)strcspn(s, "\n");
            char line[128];
            snprintf(line, sizeof line, "%.*s", len, s);
            CellBuf_text(cb, px + (pw > len ? (pw - len) / 2 : 0), y, line, ATTR_DIM, pw);
            s += len;
            if (*s) s++;
        }
        return;
    }
    double scale = spec->y_scale > 0 ? spec->y_scale : 1;
    if (spec->y_from_zero) {
        ymin = 0;
        ymax = nice_ceil(ymax * scale) / scale;
    } else {
        double pad = (ymax - ymin) * 0.05;
        if (pad <= 0) pad = fabs(ymax) * 0.1 + 1e-12;
        ymin -= pad;
        ymax += pad;
        if (ymin < 0 && spec->y_scale > 0 && !spec->log_y) ymin = 0;
    }
    if (ymax <= ymin) ymax = ymin + 1;
    if (xmax <= xmin) xmax = xmin + 1;

    Canvas c = {.cw = pw, .ch = ph, .braille = spec->braille};
    c.dw = spec->braille ? pw * 2 : pw;
    c.dh = spec->braille ? ph * 4 : ph;
    c.mask = calloc((size_t)pw * ph, 1);
    c.attr = calloc((size_t)pw * ph, 1);
    if (!c.mask || !c.attr) abort();
    for (int s = 0; s < n_series; s++) {
        int lx = -1, ly = -1;
        for (int i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = spec->log_y ? log10(series[s].y[i]) : series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            int dx = (int)lround((x - xmin) / (xmax - xmin) * (c.dw - 1));
            int dy = (c.dh - 1) - (int)lround((y - ymin) / (ymax - ymin) * (c.dh - 1));
            if (series[s].line && series[s].step && lx >= 0) {
                Canvas_line(&c, lx, ly, dx, ly, series[s].attr);
                Canvas_line(&c, dx, ly, dx, dy, series[s].attr);
            } else if (series[s].line && lx >= 0)
                Canvas_line(&c, lx, ly, dx, dy, series[s].attr);
            else
                Canvas_dot(&c, dx, dy, series[s].line, series[s].attr);
            lx = dx;
            ly = dy;
        }
    }
    for (int y = 0; y < ph; y++)
        for (int x = 0; x < pw; x++) {
            uint8_t m = c.mask[y * pw + x];
            if (!m) continue;
            uint32_t ch = spec->braille ? 0x2800u + m : (m & 2 ? '*' : '.');
            CellBuf_put(cb, px + x, py + y, ch, (CellAttr)c.attr[y * pw + x]);
        }
    free(c.mask);
    free(c.attr);

    /* y labels: top, middle, bottom; a tick column at the plot's left edge */
    char lab[32];
    /* labels at the top, the middle value and the bottom, each on the row
     * where that value is drawn */
    const double vs[3] = {ymax, (ymax + ymin) / 2, ymin};
    int ys[3];
    for (int i = 0; i < 3; i++)
        ys[i] = (int)lround((ymax - vs[i]) / (ymax - ymin) * (ph - 1));
    for (int i = 0; i < 3; i++) {
        if (i == 1 && (ys[1] <= ys[0] || ys[1] >= ys[2])) continue;
        format_axis((spec->log_y ? pow(10, vs[i]) : vs[i]) * scale, lab, sizeof lab);
        int len = (int)strlen(lab);
        if (len > Y_LABEL_W - 1) len = Y_LABEL_W - 1;
        CellBuf_text(cb, px - 1 - len, py + ys[i], lab, ATTR_DIM, Y_LABEL_W - 1);
    }
    for (int y = 0; y < ph; y++)
        CellBuf_put(cb, px - 1, py + y, spec->braille ? 0x2502 : '|', ATTR_DIM);
    /* x labels on the last inner row */
    int ly = r.y + r.h - 2;
    format_axis(xmin, lab, sizeof lab);
    CellBuf_text(cb, px, ly, lab, ATTR_DIM, pw);
    format_axis(xmax, lab, sizeof lab);
    int len = (int)strlen(lab);
    CellBuf_text(cb, px + pw - len, ly, lab, ATTR_DIM, len);
    if (spec->xlabel) {
        int xl = (int)strlen(spec->xlabel);
        if (xl < pw - 16) CellBuf_text(cb, px + (pw - xl) / 2, ly, spec->xlabel, ATTR_DIM, xl);
    }
}

static const CellAttr SERIES_ATTRS[4] = {ATTR_SERIES1, ATTR_SERIES2, ATTR_SERIES3, ATTR_SERIES4};

/* x of a task's point i: its trial number, or the seconds since the first record (x). */
static double point_x(const UiState *st, const UiTask *t, int i) {
    return st->xaxis == XAXIS_TIME ? t->points[i].t : t->points[i].trial;
}

static const char *x_label(const UiState *st) {
    return st->xaxis == XAXIS_TIME ? "seconds since the first record" : "trial";
}

/* Several tagged tasks: each one's best GFLOPS so far, one series per task. */
static void tagged_curves(CellBuf *cb, Rect r, const UiState *st, bool braille) {
    const UiModel *m = &st->model;
    int n_series = 0, total = 0;
    for (int i = 0; i < m->n_tasks; i++)
        if (m->tasks[i].tagged) n_series++, total += m->tasks[i].n_points;
    double *buf = malloc(sizeof(double) * (size_t)(total ? total : 1) * 2);
    PlotSeries *s = calloc((size_t)n_series, sizeof *s);
    if (!buf || !s) abort();
    char title[200];
    int off = snprintf(title, sizeof title, "Tasks");
    int k = 0, at = 0;
    for (int i = 0; i < m->n_tasks && k < n_series; i++) {
        const UiTask *t = &m->tasks[i];
        if (!t->tagged) continue;
        double *x = buf + 2 * at, *y = x + t->n_points;
        UiTask_bestSoFar(t, y);
        for (int j = 0; j < t->n_points; j++) {
            x[j] = point_x(st, t, j);
            if (y[j] <= 0) y[j] = NAN;
        }
        s[k] = (PlotSeries){x, y, t->n_points, true, true, SERIES_ATTRS[k % 4]};
        if (off < (int)sizeof title)
            off += snprintf(title + off, sizeof title - (size_t)off, "%s %d", k ? "," : "", t->id);
        at += t->n_points;
        k++;
    }
    if (off < (int)sizeof title)
        snprintf(title + off, sizeof title - (size_t)off, ": best GFLOPS so far%s", st->log_y ? " (log)" : "");
    PlotSpec spec = {.title = title,
                     .xlabel = x_label(st),
                     .y_from_zero = !st->log_y,
                     .log_y = st->log_y,
                     .braille = braille,
                     .empty = "no trials measured yet"};
    Plot_render(cb, r, &spec, s, k);
    free(s);
    free(buf);
}

void TaskCurve_render(CellBuf *cb, Rect r, const UiState *st) {
    bool braille = st->utf8 && !st->ascii_plots;
    if (UiState_taggedCount(st) > 0) {
        tagged_curves(cb, r, st, braille);
        return;
    }
    if (st->selected < 0 || st->selected >= st->model.n_tasks) {
        PlotSpec spec = {.title = "GFLOPS per trial", .braille = braille, .empty = "no task selected"};
        Plot_render(cb, r, &spec, NULL, 0);
        return;
    }
    const UiTask *t = &st->model.tasks[st->selected];
    int n = t->n_points;
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1) * 4);
    if (!x) abort();
    double *ok_y = x + n, *best = x + 2 * n, *fail_y = x + 3 * n;
    UiTask_bestSoFar(t, best);
    for (int i = 0; i < n; i++) {
        if (best[i] <= 0) best[i] = NAN; /* no line before the first success */
        x[i] = point_x(st, t, i);
        ok_y[i] = t->points[i].error_no ? NAN : t->points[i].gflops;
        /* a failure sits on 0; a log axis has no 0: failures are left out there */
        fail_y[i] = t->points[i].error_no && !st->log_y ? 0 : NAN;
    }
    const char *unit = UiTask_effective(t) ? (st->log_y ? "effective GFLOPS (log)" : "effective GFLOPS")
                       : st->log_y         ? "GFLOPS (log)"
                                           : "GFLOPS";
    /* the task's roof: a flat line across the trials, named in the title */
    double roof = t->row.roof_gflops;
    double roof_x[2] = {n ? x[0] : 0, n ? x[n - 1] : 0}, roof_y[2] = {roof, roof};
    char roof_txt[64] = "";
    if (roof > 0)
        snprintf(roof_txt, sizeof roof_txt, "roof %.4g %s", roof,
                 t->row.roof_bound
                     ? (t->row.roof_bound == ROOF_LEVEL_DRAM ? "memory-bound" : Roof_boundText(t->row.roof_bound))
                     : "compute-bound");
    char title[200];
    snprintf(title, sizeof title, "Task %d %s: %s per trial (dots measured, dots on 0 failed, %s best so far%s%s)",
             t->id, t->label, unit, braille ? "line" : "*", roof > 0 ? "; flat line: " : "", roof_txt);
    if ((int)strlen(title) > r.w - 6)
        snprintf(title, sizeof title, "Task %d %s: %s per trial, best so far%s%s", t->id, t->label, unit,
                 roof > 0 ? ", " : "", roof_txt);
    /* narrower: keep the label, shorten the roof to its value and what bounds it */
    if ((int)strlen(title) > r.w - 6 && roof > 0)
        snprintf(title, sizeof title, "Task %d %s: %s, roof %.4g %s", t->id, t->label, unit, roof,
                 t->row.roof_bound ? "memory" : "compute");
    if ((int)strlen(title) > r.w - 6)
        snprintf(title, sizeof title, "Task %d %s: %s per trial, best so far", t->id, t->label, unit);
    if ((int)strlen(title) > r.w - 6 && roof > 0)
        snprintf(title, sizeof title, "Task %d: %s, roof %.4g %s", t->id, unit, roof,
                 t->row.roof_bound ? "memory" : "compute");
    if ((int)strlen(title) > r.w - 6) snprintf(title, sizeof title, "Task %d: %s per trial, best so far", t->id, unit);
    PlotSeries s[4] = {
        {roof_x, roof_y, roof > 0 && n > 0 ? 2 : 0, true, false, ATTR_SERIES4},
        {x, fail_y, n, false, false, ATTR_FAILED},
        {x, ok_y, n, false, false, ATTR_SERIES1},
        {x, best, n, true, true, ATTR_SERIES2},
    };
    PlotSpec spec = {.title = title,
                     .xlabel = x_label(st),
                     .y_from_zero = !st->log_y,
                     .log_y = st->log_y,
                     .braille = braille,
                     .empty = "no trials measured yet"};
    Plot_render(cb, r, &spec, s, 4);
    free(x);
}

void SessionCurve_render(CellBuf *cb, Rect r, const UiState *st) {
    const UiModel *m = &st->model;
    bool braille = st->utf8 && !st->ascii_plots;
    int n = m->n_latency;
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1) * 2);
    if (!x) abort();
    double *y = x + n;
    for (int i = 0; i < n; i++) {
        x[i] = m->latency[i].t;
        y[i] = m->latency[i].value;
    }
    /* the unit follows the magnitude: small networks run in microseconds */
    double top = 0;
    for (int i = 0; i < n; i++)
        top = fmax(top, y[i]);
    bool us = n > 0 && top < 1e-3;
    /* an estimate that fell by more than 10x reads better on a log axis */
    double low = top;
    for (int i = 0; i < n; i++)
        low = fmin(low, y[i]);
    bool log_y = st->log_y || (n > 1 && low > 0 && top / low > 10);
    PlotSeries s = {x, y, n, true, true, ATTR_SERIES3};
    PlotSpec spec = {.title =
                         us ? (log_y ? "Est. total latency (us, log) over time" : "Est. total latency (us) over time")
                            : (log_y ? "Est. total latency (ms, log) over time" : "Est. total latency (ms) over time"),
                     .log_y = log_y,
                     .xlabel = m->latency_offset > 0 ? "seconds (earlier sessions from LOG.tsv)" : "seconds",
                     .y_scale = us ? 1e6 : 1e3,
                     .braille = braille,
                     .empty = "no estimate yet:\nevery task needs a result"};
    Plot_render(cb, r, &spec, &s, 1);
    free(x);
}
