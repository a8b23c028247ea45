/* ui/widgets.c: header, scheduler table, status line, key bar and the whole
 * frame (see widgets.h). Plots, inspector and help are in their own files. */
#include "ui/widgets.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/columns.h"
#include "ui/keys.h"
#include "ui/panels.h"

void Ui_formatLatency(double s, char *buf, size_t n) {
    if (!isfinite(s) || s <= 0)
        snprintf(buf, n, "-");
    else if (s < 1e-3)
        snprintf(buf, n, "%.1f us", s * 1e6);
    else if (s < 1e-2)
        snprintf(buf, n, "%.3f ms", s * 1e3);
    else if (s < 0.1)
        snprintf(buf, n, "%.2f ms", s * 1e3); /* 8 cells at most, as the table's Best column */
    else if (s < 1.0)
        snprintf(buf, n, "%.1f ms", s * 1e3);
    else
        snprintf(buf, n, "%.2f s", s);
}

static void format_clock(double s, char *buf, size_t n) {
    long t = s > 0 ? (long)s : 0;
    snprintf(buf, n, "%02ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
}

/* Writes "label value" pairs left to right; returns the next x. */
static int pair(CellBuf *cb, int x, int y, int xend, const char *label, const char *value, CellAttr vattr) {
    if (x >= xend) return x;
    x += CellBuf_text(cb, x, y, label, ATTR_DIM, xend - x);
    if (x < xend) CellBuf_put(cb, x++, y, ' ', ATTR_NORMAL);
    x += CellBuf_text(cb, x, y, value, vattr, xend - x);
    return x + 3;
}

void Header_render(CellBuf *cb, Rect r, const UiState *st) {
    const UiModel *m = &st->model;
    int xend = r.x + r.w;
    char buf[160];
    /* line 1: who and where */
    int x = r.x;
    x += CellBuf_text(cb, x, r.y, "tunetop", ATTR_TITLE, -1) + 2;
    if (m->live && (m->want_all_paused >= 0 ? m->want_all_paused == 1 : m->all_paused))
        x += CellBuf_text(cb, x, r.y, "PAUSED", ATTR_PAUSED, xend - x) + 2;
    x = pair(cb, x, r.y, xend, "target", m->target[0] ? m->target : "?", ATTR_HEADER_VAL);
    x = pair(cb, x, r.y, xend, "device", m->device[0] ? m->device : "?", ATTR_HEADER_VAL);
    if (m->tuner[0]) x = pair(cb, x, r.y, xend, "tuner", m->tuner, ATTR_HEADER_VAL);
    format_clock(m->elapsed_s, buf, sizeof buf);
    /* a log view shows the span of its records' timestamps, not a running clock */
    const char *what = m->live ? "elapsed" : "log span";
    int rw = (int)strlen(buf), lw = (int)strlen(what);
    if (xend - rw - lw - 1 > x) {
        CellBuf_text(cb, xend - rw - lw - 1, r.y, what, ATTR_DIM, lw);
        CellBuf_text(cb, xend - rw, r.y, buf, ATTR_HEADER_VAL, rw);
    }

    /* line 2: progress and activity */
    int y = r.y + 1;
    x = r.x;
    if (m->budget > 0)
        snprintf(buf, sizeof buf, "%d/%d", m->trials, m->budget);
    else
        snprintf(buf, sizeof buf, "%d", m->trials);
    x = pair(cb, x, y, xend, "Trials", buf, ATTR_HEADER_VAL) - 2;
    if (m->budget > 0 && r.w >= 100 && x + 24 < xend) {
        /* a 20-cell progress bar */
        int fill = (int)(20.0 * m->trials / m->budget + 0.5);
        if (fill > 20) fill = 20;
        CellBuf_put(cb, x++, y, '[', ATTR_DIM);
        for (int i = 0; i < 20; i++)
            CellBuf_put(cb, x++, y, i < fill ? '|' : ' ', ATTR_BEST);
        CellBuf_put(cb, x++, y, ']', ATTR_DIM);
        x += 3;
    } else {
        x += 2;
    }
    snprintf(buf, sizeof buf, "%.2f trials/s", m->trials_per_s);
    x += CellBuf_text(cb, x, y, buf, ATTR_HEADER_VAL, xend - x) + 3;
    double eta_s = UiModel_eta(m);
    if (eta_s >= 0) {
        /* when the budget will be spent at this session's rate while it runs: frozen while paused */
        char eta[48];
        format_clock(eta_s, eta, sizeof eta);
        if (m->all_paused) snprintf(eta + strlen(eta), sizeof eta - strlen(eta), " (paused)");
        x = pair(cb, x, y, xend, "ETA", eta, m->all_paused ? ATTR_DIM : ATTR_HEADER_VAL);
    }
    if (m->live) {
        snprintf(buf, sizeof buf, "%d", m->building);
        x = pair(cb, x, y, xend, "compiling", buf, m->building ? ATTR_HEADER_VAL : ATTR_DIM);
        if (m->measuring) {
            int mt = -1;
            for (int i = 0; i < m->n_tasks; i++)
                if (m->tasks[i].row.state == TASK_TUNING) mt = m->tasks[i].id;
            if (mt >= 0)
                snprintf(buf, sizeof buf, "task %d", mt);
            else
                snprintf(buf, sizeof buf, "a task");
        } else {
            snprintf(buf, sizeof buf, m->finished ? "finished" : "idle");
        }
        x = pair(cb, x, y, xend, m->measuring ? "measuring" : "runner", buf, m->measuring ? ATTR_MEASURING : ATTR_DIM);
    }

    /* line 3: the objective and how it moved */
    y = r.y + 2;
    x = r.x;
    char lat[32], first[32];
    Ui_formatLatency(m->est_latency_s, lat, sizeof lat);
    if (isfinite(m->est_latency_s)) {
        x = pair(cb, x, y, xend, "Est. total latency", lat, ATTR_BEST) - 2;
        if (isfinite(m->first_est_s) && m->first_est_s > 0) {
            Ui_formatLatency(m->first_est_s, first, sizeof first);
            double pct = 100.0 * (m->est_latency_s - m->first_est_s) / m->first_est_s;
            if (!m->est_rebased)
                snprintf(buf, sizeof buf, "(first estimate %s, %+.1f%%)", first, pct);
            else if (fabs(pct) < 0.05) /* a task got its first result: not a regression */
                snprintf(buf, sizeof buf, "(now covers %d tasks)", m->est_covers);
            else
                snprintf(buf, sizeof buf, "(now covers %d tasks; since then %+.1f%%)", m->est_covers, pct);
            x += CellBuf_text(cb, x, y, buf, pct < 0 ? ATTR_BEST : ATTR_DIM, xend - x) + 3;
        }
        if (m->est_left_out > 0) {
            /* tasks paused or stopped before their first result */
            snprintf(buf, sizeof buf, "[%d task%s left out: no result]", m->est_left_out,
                     m->est_left_out == 1 ? "" : "s");
            x += CellBuf_text(cb, x, y, buf, ATTR_WARN, xend - x) + 3;
        }
        /* the lower bound: every task at its roof */
        double floor_s = UiModel_roofLatency(m);
        if (floor_s > 0) {
            char at[32];
            Ui_formatLatency(floor_s, at, sizeof at);
            x = pair(cb, x, y, xend, "at roof", at, ATTR_HEADER_VAL);
        }
    } else {
        int missing = 0;
        for (int i = 0; i < m->n_tasks; i++)
            if (m->tasks[i].row.best_gflops <= 0) missing++;
        snprintf(buf, sizeof buf, "n/a until every running task has a result (%d without)", missing);
        x = pair(cb, x, y, xend, "Est. total latency", buf, ATTR_DIM);
    }
    if (m->live && m->next_task >= 0) {
        snprintf(buf, sizeof buf, "%d", m->next_task);
        x = pair(cb, x, y, xend, "next task", buf, ATTR_HEADER_VAL);
    }
    (void)x;
    /* lines 4-5: what the selected task's search strategy says about itself */
    if (r.h > LAYOUT_HEADER_ROWS && st->selected >= 0 && st->selected < m->n_tasks) {
        snprintf(buf, sizeof buf, "task %d search", m->tasks[st->selected].id);
        Header_wrap(cb, r.x, r.y + LAYOUT_HEADER_ROWS, xend, r.h - LAYOUT_HEADER_ROWS, buf,
                    m->tasks[st->selected].strategy);
    }
}

int Header_lines(const UiState *st, int cols) {
    const UiModel *m = &st->model;
    if (st->selected < 0 || st->selected >= m->n_tasks || !m->tasks[st->selected].strategy[0]) return 0;
    char label[32];
    snprintf(label, sizeof label, "task %d search", m->tasks[st->selected].id);
    return Header_wrap(NULL, 0, 0, cols, LAYOUT_HEADER_EXTRA_MAX, label, m->tasks[st->selected].strategy);
}

int Header_wrap(CellBuf *cb, int x0, int y, int xend, int lines, const char *label, const char *text) {
    /* the parts of the text ("a; b; c") fill the lines in order, a part that
     * does not fit on the line starting the next one (cut at the last line);
     * without cb only counts the lines */
    int x = x0 + (int)strlen(label) + 1;
    if (cb) CellBuf_text(cb, x0, y, label, ATTR_DIM, xend - x0);
    int indent = x - x0 < 16 ? x - x0 : 16, line = 0;
    const char *p = text;
    while (*p && line < lines) {
        size_t len = strcspn(p, ";");
        bool last = p[len] == '\0';
        char part[256];
        snprintf(part, sizeof part, "%.*s%s", (int)len, p, last ? "" : ";");
        int w = (int)strlen(part);
        if (x + w > xend && x > x0 + indent && line + 1 < lines) {
            line++;
            x = x0 + indent;
        }
        if (cb) CellBuf_text(cb, x, y + line, part, ATTR_NORMAL, xend - x);
        x += w + 1;
        p += len + (last ? 0 : 1);
        while (*p == ' ')
            p++;
    }
    return line + 1;
}

/* ---- the scheduler table -------------------------------------------------- */

static void cell(CellBuf *cb, int x, int y, int w, bool right, const char *s, CellAttr a) {
    if (w <= 0) return;       /* a hidden column */
    int len = (int)strlen(s); /* table cells are ASCII */
    if (len > w) {
        /* shorten from the right and say so with '~' */
        CellBuf_text(cb, x, y, s, a, w - 1);
        CellBuf_put(cb, x + w - 1, y, '~', ATTR_DIM);
        return;
    }
    CellBuf_text(cb, right ? x + w - len : x, y, s, a, w);
}

/* A label made shorter, one step at a time until it fits in w: shorter words
 * ("conv2d 56x56 64->128 3x3 s2" -> "cv 56x56 64>128 3x3 s2"), no "cv " (the
 * common case), a square size once ("56 64>128 3x3 s2"), the stride glued on
 * ("56 64>128 3x3s2"). */
static void squeeze(const char *in, char *out, size_t n, int w) {
    static const char *const from[] = {"conv2d ", "dwconv ", "dense ", "->"};
    static const char *const to[] = {"cv ", "dw ", "fc ", ">"};
    size_t k = 0;
    while (*in && k + 1 < n) {
        bool done = false;
        for (int i = 0; i < 4 && !done; i++) {
            size_t len = strlen(from[i]);
            if (strncmp(in, from[i], len) != 0) continue;
            for (const char *t = to[i]; *t && k + 1 < n; t++)
                out[k++] = *t;
            in += len;
            done = true;
        }
        if (!done) out[k++] = *in++;
    }
    out[k] = '\0';
    if ((int)strlen(out) > w && strncmp(out, "cv ", 3) == 0) memmove(out, out + 3, strlen(out + 3) + 1);
    if ((int)strlen(out) > w) {
        /* the first "NxN" -> "N" */
        for (char *p = out; *p; p++) {
            if (!isdigit((unsigned char)*p) || (p > out && isdigit((unsigned char)p[-1]))) continue;
            size_t d = strspn(p, "0123456789");
            if (p[d] == 'x' && strncmp(p, p + d + 1, d) == 0 && !isdigit((unsigned char)p[2 * d + 1])) {
                memmove(p + d, p + 2 * d + 1, strlen(p + 2 * d + 1) + 1);
                break;
            }
        }
    }
    if ((int)strlen(out) > w) {
        char *sp = strstr(out, " s");
        if (sp && isdigit((unsigned char)sp[2])) memmove(sp, sp + 1, strlen(sp + 1) + 1);
    }
}

static int count_distinct(char (*s)[UI_LABEL_MAX], int n) {
    int d = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(s[i], s[j]) == 0;
        d += !seen;
    }
    return d;
}

int Ui_shortLabels(const char *const *labels, int n, int w, char (*out)[UI_LABEL_MAX]) {
    if (w >= UI_LABEL_MAX) w = UI_LABEL_MAX - 1;
    int longest = 0;
    for (int i = 0; i < n; i++) {
        snprintf(out[i], UI_LABEL_MAX, "%s", labels[i]);
        if ((int)strlen(out[i]) > w) squeeze(labels[i], out[i], UI_LABEL_MAX, w);
        if ((int)strlen(out[i]) > longest) longest = (int)strlen(out[i]);
    }
    if (longest <= w || w < 3 || n == 0) return count_distinct(out, n);
    /* Too long still: keep a head and a tail with '~' between, the same split for
     * every row; the split that tells the most rows apart wins (the longer head on a tie). */
    char(*trial)[UI_LABEL_MAX] = malloc((size_t)n * sizeof *trial);
    if (!trial) abort();
    int best_tail = 0, best_d = -1;
    for (int tail = 0; tail <= w - 2; tail++) {
        for (int i = 0; i < n; i++) {
            int len = (int)strlen(out[i]);
            if (len <= w) {
                snprintf(trial[i], UI_LABEL_MAX, "%s", out[i]);
                continue;
            }
            int head = w - 1 - tail;
            snprintf(trial[i], UI_LABEL_MAX, "%.*s~%s", head, out[i], out[i] + len - tail);
        }
        int d = count_distinct(trial, n);
        if (d > best_d) best_d = d, best_tail = tail;
    }
    for (int i = 0; i < n; i++) {
        int len = (int)strlen(out[i]);
        if (len <= w) continue;
        char tmp[UI_LABEL_MAX];
        snprintf(tmp, sizeof tmp, "%.*s~%s", w - 1 - best_tail, out[i], out[i] + len - best_tail);
        snprintf(out[i], UI_LABEL_MAX, "%s", tmp);
    }
    free(trial);
    return best_d;
}

static CellAttr state_attr(const UiTask *t) {
    switch (t->row.state) {
    case TASK_TUNING:
        return ATTR_MEASURING;
    case TASK_PAUSED:
        return ATTR_PAUSED;
    case TASK_STOPPED:
        return ATTR_PAUSED;
    case TASK_DONE:
    case TASK_AT_ROOF:
        return ATTR_DONE;
    default:
        return t->want_paused >= 0 ? ATTR_PAUSED : ATTR_NORMAL;
    }
}

static void format_gflops(double g, char *buf, size_t n) {
    if (g <= 0)
        snprintf(buf, n, "-");
    else if (g < 100)
        snprintf(buf, n, "%.2f", g);
    else
        snprintf(buf, n, "%.1f", g);
}

void Table_render(CellBuf *cb, Rect r, UiState *st) {
    st->table_rect = r;
    if (r.h < 1) return;
    int w[COL_N];
    Table_columnWidths(r.w, w);
    /* column titles, the sorted column marked */
    CellBuf_fill(cb, (Rect){r.x, r.y, r.w, 1}, ' ', ATTR_TITLE);
    int x = r.x;
    for (int c = 0; c < COL_N; c++) {
        char t[32];
        bool sorted = TABLE_COLUMNS[c].sort == st->sort;
        snprintf(t, sizeof t, "%s%s", TABLE_COLUMNS[c].title, sorted ? (st->sort_desc ? "v" : "^") : "");
        if (c == COL_BEST_MS) snprintf(t, sizeof t, "Best%s", sorted ? (st->sort_desc ? "v" : "^") : "");
        cell(cb, x, r.y, w[c], TABLE_COLUMNS[c].right, t, ATTR_TITLE);
        x += w[c] + 1;
    }
    int rows = r.h - 1;
    if (st->n_order != st->model.n_tasks || st->filter[0]) UiState_sort(st);
    if (st->filter[0] || st->filter_editing) {
        /* the filter, in the Task column's title */
        char f[96];
        snprintf(f, sizeof f, "/%s%s", st->filter, st->filter_editing ? "_" : "");
        int tx = r.x + w[COL_MARK] + 1 + w[COL_ID] + 1 + 5;
        CellBuf_text(cb, tx, r.y, f, ATTR_WARN, w[COL_TASK] - 5);
    }
    if (st->n_order == 0) {
        CellBuf_text(cb, r.x + 2, r.y + 1, st->filter[0] ? "no task matches the filter" : "no tasks yet", ATTR_DIM,
                     r.w - 2);
        return;
    }
    /* labels short enough for the column and still telling the shown tasks apart */
    const char **labels = malloc((size_t)st->n_order * sizeof *labels);
    char(*shown)[UI_LABEL_MAX] = malloc((size_t)st->n_order * sizeof *shown);
    if (!labels || !shown) abort();
    for (int i = 0; i < st->n_order; i++)
        labels[i] = st->model.tasks[st->order[i]].label;
    Ui_shortLabels(labels, st->n_order, w[COL_TASK], shown);
    int pos = UiState_selectedPos(st);
    if (pos < st->table_top) st->table_top = pos;
    if (pos >= st->table_top + rows) st->table_top = pos - rows + 1;
    if (st->table_top > st->n_order - rows) st->table_top = st->n_order - rows;
    if (st->table_top < 0) st->table_top = 0;
    for (int i = 0; i < rows && st->table_top + i < st->n_order; i++) {
        int ti = st->order[st->table_top + i];
        UiTask *t = &st->model.tasks[ti];
        int y = r.y + 1 + i;
        char b[64];
        x = r.x;
        bool measuring = t->row.state == TASK_TUNING;
        cell(cb, x, y, w[COL_MARK], false,
             t->tagged   ? "*"
             : measuring ? ">"
                         : " ",
             t->tagged ? ATTR_WARN : ATTR_MEASURING);
        x += w[COL_MARK] + 1;
        snprintf(b, sizeof b, "%d", t->id);
        cell(cb, x, y, w[COL_ID], true, b, ATTR_NORMAL);
        x += w[COL_ID] + 1;
        cell(cb, x, y, w[COL_TASK], false, shown[st->table_top + i], ATTR_NORMAL);
        x += w[COL_TASK] + 1;
        snprintf(b, sizeof b, "%g", t->weight);
        cell(cb, x, y, w[COL_WEIGHT], true, b, ATTR_NORMAL);
        x += w[COL_WEIGHT] + 1;
        if (t->row.allotted > 0)
            snprintf(b, sizeof b, "%d/%d", t->row.trials, t->row.allotted);
        else
            snprintf(b, sizeof b, "%d", t->row.trials);
        cell(cb, x, y, w[COL_TRIALS], true, b, ATTR_NORMAL);
        x += w[COL_TRIALS] + 1;
        Ui_formatLatency(t->row.best_latency_s, b, sizeof b);
        cell(cb, x, y, w[COL_BEST_MS], true, b, ATTR_NORMAL);
        x += w[COL_BEST_MS] + 1;
        /* effective GFLOPS (a Winograd task) end in "e"; the best of a group member that the other
         * member beats is dimmed (the network runs the other) */
        bool eff = UiTask_effective(t);
        format_gflops(t->row.best_gflops, b, sizeof b);
        if (eff && t->row.best_gflops > 0) strncat(b, "e", sizeof b - strlen(b) - 1);
        cell(cb, x, y, w[COL_BEST_GF], true, b, UiModel_outrun(&st->model, ti) ? ATTR_DIM : ATTR_BEST);
        x += w[COL_BEST_GF] + 1;
        /* the best's share of the task's roof; above 100% is a warning, never clamped */
        double share = Roof_share(t->row.best_gflops, t->row.roof_gflops);
        if (share > 0)
            snprintf(b, sizeof b, share > 1 ? "%.0f!" : "%.0f", 100 * share);
        else
            snprintf(b, sizeof b, "-");
        cell(cb, x, y, w[COL_ROOF], true, b, share > 1 ? ATTR_WARN : share >= 0.9 ? ATTR_BEST : ATTR_NORMAL);
        x += w[COL_ROOF] + 1;
        format_gflops(t->row.current_gflops, b, sizeof b);
        if (eff && t->row.current_gflops > 0) strncat(b, "e", sizeof b - strlen(b) - 1);
        cell(cb, x, y, w[COL_CUR_GF], true, b, ATTR_NORMAL);
        x += w[COL_CUR_GF] + 1;
        snprintf(b, sizeof b, "%d", t->row.errors);
        cell(cb, x, y, w[COL_ERR], true, b, t->row.errors ? ATTR_FAILED : ATTR_DIM);
        x += w[COL_ERR] + 1;
        cell(cb, x, y, w[COL_STATE], false, UiState_taskStateText(t), state_attr(t));
        x += w[COL_STATE] + 1;
        snprintf(b, sizeof b, "%+d", t->row.priority);
        cell(cb, x, y, w[COL_PRI], true, t->row.priority ? b : "0", ATTR_NORMAL);
        if (ti == st->selected) CellBuf_paint(cb, (Rect){r.x, y, r.w, 1}, ATTR_SELECTED);
    }
    free(labels);
    free(shown);
    if (st->n_order > rows) {
        /* which rows are shown, in the Task column's title (always there) */
        char more[48];
        snprintf(more, sizeof more, "%d-%d/%d", st->table_top + 1,
                 st->table_top + rows < st->n_order ? st->table_top + rows : st->n_order, st->n_order);
        int tx = r.x + w[COL_MARK] + 1 + w[COL_ID] + 1;
        int len = (int)strlen(more);
        if (w[COL_TASK] >= len + 6) CellBuf_text(cb, tx + w[COL_TASK] - len, r.y, more, ATTR_TITLE, len);
    }
}

/* ---- status line and key bar --------------------------------------------- */

void Status_render(CellBuf *cb, Rect r, const UiState *st) {
    if (st->filter_editing) {
        char b[160];
        snprintf(b, sizeof b, "filter: %s_   (Enter: keep, Esc: clear; matches %d of %d tasks)", st->filter,
                 st->n_order, st->model.n_tasks);
        CellBuf_text(cb, r.x, r.y, b, ATTR_WARN, r.w);
        return;
    }
    if (st->stopping) {
        char b[400];
        snprintf(b, sizeof b, "stopping... builds in flight finish and their results are saved%s%s",
                 st->status[0] ? " | " : "", st->status);
        CellBuf_text(cb, r.x, r.y, b, ATTR_WARN, r.w);
        return;
    }
    if (st->status[0])
        CellBuf_text(cb, r.x, r.y, st->status, st->status_attr, r.w);
    else
        CellBuf_text(cb, r.x, r.y, "Press ? for help on keys and columns.", ATTR_DIM, r.w);
}

void KeyBar_render(CellBuf *cb, Rect r, const UiState *st) {
    int n;
    const UiKey *keys = UiKeys_table(&n);
    int x = r.x, xend = r.x + r.w;
    CellBuf_fill(cb, r, ' ', ATTR_KEYBAR);
    for (int i = 0; i < n && x < xend; i++) {
        if (!keys[i].bar) continue;
        /* steering makes no sense in a read-only view */
        if (!st->model.live && (keys[i].key == 'p' || keys[i].key == 'P' || keys[i].key == '+' || keys[i].key == '-' ||
                                keys[i].key == 's'))
            continue;
        x += CellBuf_text(cb, x, r.y, keys[i].name, ATTR_KEY, xend - x);
        x += CellBuf_text(cb, x, r.y, ":", ATTR_KEYBAR, xend - x);
        x += CellBuf_text(cb, x, r.y, keys[i].bar, ATTR_KEYBAR, xend - x);
        x += 1;
    }
}

void Screen_render(CellBuf *cb, UiState *st) {
    CellBuf_clear(cb);
    CellBuf_unclip(cb);
    st->view.table_rows = st->model.n_tasks;
    st->view.header_extra = Header_lines(st, cb->w);
    ScreenLayout lay;
    ScreenLayout_compute(cb->h, cb->w, &st->view, &lay);
    if (lay.too_small) {
        char msg[96];
        snprintf(msg, sizeof msg, "terminal too small: need %dx%d (now %dx%d)", LAYOUT_MIN_COLS, LAYOUT_MIN_ROWS, cb->w,
                 cb->h);
        int len = (int)strlen(msg);
        int x = cb->w > len ? (cb->w - len) / 2 : 0;
        CellBuf_text(cb, x, cb->h / 2, msg, ATTR_WARN, cb->w);
        if (cb->h > 2) CellBuf_text(cb, x, cb->h / 2 + 1, "q quits", ATTR_DIM, cb->w);
        return;
    }
    const Rect parts[] = {lay.header,  lay.table,  lay.task_curve, lay.session_curve,
                          lay.overlay, lay.status, lay.keybar};
    for (int i = 0; i < (int)(sizeof parts / sizeof parts[0]); i++) {
        Rect p = parts[i];
        if (Rect_empty(p)) continue;
        CellBuf_clip(cb, p);
        if (i == 0)
            Header_render(cb, p, st);
        else if (i == 1)
            Table_render(cb, p, st);
        else if (i == 2 && st->latency_first && Rect_empty(lay.session_curve))
            SessionCurve_render(cb, p, st);
        else if (i == 2)
            TaskCurve_render(cb, p, st);
        else if (i == 3)
            SessionCurve_render(cb, p, st);
        else if (i == 4 && st->view.overlay == OVERLAY_HELP)
            Help_render(cb, p, st);
        else if (i == 4 && st->view.overlay == OVERLAY_MESSAGES)
            MessageLog_render(cb, p, st);
        else if (i == 4 && st->view.overlay == OVERLAY_DEVICES)
            Devices_render(cb, p, st);
        else if (i == 4)
            InspectorPanel_render(cb, p, st);
        else if (i == 5)
            Status_render(cb, p, st);
        else
            KeyBar_render(cb, p, st);
    }
    CellBuf_unclip(cb);
}
