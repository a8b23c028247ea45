/* ui/panels.c: the error inspector, the message log, the devices view and the
 * help page (see panels.h). */
#include "ui/panels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/target.h"
#include "ui/keys.h"

/* Keeps a list selection visible: adjusts *top for `sel` in `rows` lines. */
static void keep_visible(int sel, int rows, int n, int *top) {
    if (sel < *top) *top = sel;
    if (sel >= *top + rows) *top = sel - rows + 1;
    if (*top > n - rows) *top = n - rows;
    if (*top < 0) *top = 0;
}

static void groups_page(CellBuf *cb, Rect in, UiState *st, const UiTask *t) {
    Inspector *ins = &st->insp;
    if (t->n_groups == 0) {
        CellBuf_text(cb, in.x + 1, in.y + 1, "No failed candidates for this task.", ATTR_DIM, in.w - 2);
        return;
    }
    CellBuf_printf(cb, in.x, in.y, ATTR_TITLE, in.w, "%7s  %-20s %s", "Count", "Class", "Reason");
    int rows = in.h - 2;
    int *order = malloc(sizeof(int) * (size_t)t->n_groups);
    if (!order) abort();
    UiTask_groupOrder(t, order);
    int sel = 0;
    for (int i = 0; i < t->n_groups; i++)
        if (order[i] == ins->group) sel = i;
    keep_visible(sel, rows, t->n_groups, &ins->group_top);
    for (int i = 0; i < rows && ins->group_top + i < t->n_groups; i++) {
        int g = order[ins->group_top + i];
        const UiErrGroup *gr = &t->groups[g];
        int y = in.y + 1 + i;
        CellBuf_printf(cb, in.x, y, ATTR_NORMAL, in.w, "%7d  %-20s %s", gr->count, MeasureError_name(gr->error_no),
                       gr->reason);
        CellBuf_paint(cb, (Rect){in.x, y, 7, 1}, ATTR_FAILED);
        if (g == ins->group) CellBuf_paint(cb, (Rect){in.x, y, in.w, 1}, ATTR_SELECTED);
    }
    free(order);
    CellBuf_text(cb, in.x, in.y + in.h - 1, "Enter: candidates of the group   Esc: close   Up/Down: select", ATTR_DIM,
                 in.w);
}

static void candidates_page(CellBuf *cb, Rect in, UiState *st, const UiTask *t) {
    Inspector *ins = &st->insp;
    const UiErrGroup *gr = &t->groups[ins->group];
    CellBuf_printf(cb, in.x, in.y, ATTR_TITLE, in.w, "%s: %s (%d)", MeasureError_name(gr->error_no), gr->reason,
                   gr->count);
    int rows = in.h - 2;
    keep_visible(ins->cand, rows, gr->n_members, &ins->cand_top);
    for (int i = 0; i < rows && ins->cand_top + i < gr->n_members; i++) {
        int c = ins->cand_top + i;
        const Record *rec = &t->fails[gr->members[c]];
        int y = in.y + 1 + i;
        CellBuf_printf(cb, in.x, y, ATTR_NORMAL, in.w, "#%-10llu %s", (unsigned long long)rec->index, rec->config);
        if (c == ins->cand) CellBuf_paint(cb, (Rect){in.x, y, in.w, 1}, ATTR_SELECTED);
    }
    CellBuf_text(cb, in.x, in.y + in.h - 1, "Enter: open the candidate   w: write it to a file   Esc: back", ATTR_DIM,
                 in.w);
}

static void detail_page(CellBuf *cb, Rect in, UiState *st) {
    Inspector *ins = &st->insp;
    int rows = in.h - 1;
    if (ins->scroll > ins->n_lines - rows) ins->scroll = ins->n_lines - rows;
    if (ins->scroll < 0) ins->scroll = 0;
    for (int i = 0; i < rows && ins->scroll + i < ins->n_lines; i++) {
        int l = ins->scroll + i;
        /* from column hscroll on (whole UTF-8 characters) */
        const char *text = ins->lines[l];
        for (int skip = ins->hscroll; skip > 0 && *text; skip--) {
            text++;
            while ((*text & 0xc0) == 0x80)
                text++;
        }
        CellBuf_text(cb, in.x, in.y + i, text, (CellAttr)ins->attrs[l], in.w);
        if (l == ins->mark_line) CellBuf_paint(cb, (Rect){in.x, in.y + i, in.w, 1}, ATTR_MARK);
    }
    CellBuf_printf(
        cb, in.x, in.y + in.h - 1, ATTR_DIM, in.w,
        "lines %d-%d of %d, column %d   Up/Down/PgUp/PgDn, Left/Right: scroll   w: write to a file   Esc: back",
        ins->n_lines ? ins->scroll + 1 : 0, ins->scroll + rows < ins->n_lines ? ins->scroll + rows : ins->n_lines,
        ins->n_lines, ins->hscroll + 1);
}

void InspectorPanel_render(CellBuf *cb, Rect r, UiState *st) {
    Inspector *ins = &st->insp;
    if (ins->task < 0 || ins->task >= st->model.n_tasks) {
        CellBuf_box(cb, r, "Error inspector", st->utf8);
        CellBuf_text(cb, r.x + 2, r.y + 1, "no task selected", ATTR_DIM, r.w - 4);
        return;
    }
    const UiTask *t = &st->model.tasks[ins->task];
    char title[160];
    if (ins->best)
        snprintf(title, sizeof title, "Best candidate of task %d %s (b or Esc: close)", t->id, t->label);
    else
        snprintf(title, sizeof title, "Errors of task %d %s: %d failed of %d trials", t->id, t->label, t->n_fails,
                 t->n_points);
    CellBuf_box(cb, r, title, st->utf8);
    Rect in = {r.x + 1, r.y + 1, r.w - 2, r.h - 2};
    if (in.w < 10 || in.h < 3) return;
    if (ins->best)
        detail_page(cb, in, st);
    else if (ins->level == INSP_GROUPS || t->n_groups == 0)
        groups_page(cb, in, st, t);
    else if (ins->level == INSP_CANDIDATES)
        candidates_page(cb, in, st, t);
    else
        detail_page(cb, in, st);
}

/* ---- the message log ------------------------------------------------------ */

/* Wraps message i at width w into display lines; returns how many (at most max).
 * starts[k] and lens[k] give each line's part of the text. */
static int wrap_message(const char *text, int w, int *starts, int *lens, int max) {
    int n = 0, len = (int)strlen(text), at = 0;
    if (w < 1) w = 1;
    do {
        int take = len - at < w ? len - at : w;
        if (at + take < len) {
            /* break at the last space that fits */
            int sp = take;
            while (sp > w / 2 && text[at + sp] != ' ')
                sp--;
            if (text[at + sp] == ' ') take = sp;
        }
        if (n < max) {
            starts[n] = at;
            lens[n] = take;
        }
        n++;
        at += take;
        while (text[at] == ' ')
            at++;
    } while (at < len);
    return n < max ? n : max;
}

void MessageLog_render(CellBuf *cb, Rect r, UiState *st) {
    char title[96];
    snprintf(title, sizeof title, "Messages (%d; m or Esc closes; Up/Down scroll)", st->n_msgs);
    CellBuf_box(cb, r, title, st->utf8);
    Rect in = {r.x + 1, r.y + 1, r.w - 2, r.h - 2};
    if (in.h < 1 || in.w < 12) return;
    if (st->n_msgs == 0) {
        CellBuf_text(cb, in.x + 1, in.y, "no messages yet", ATTR_DIM, in.w - 1);
        return;
    }
    /* every message wrapped under its time; msg_scroll counts display lines */
    int tw = in.w - 9;
    int total = 0;
    int starts[16], lens[16];
    for (int i = 0; i < st->n_msgs; i++)
        total += wrap_message(st->msgs[i].text, tw, starts, lens, 16);
    int max_top = total - in.h;
    if (max_top < 0) max_top = 0;
    if (st->msg_scroll > max_top) st->msg_scroll = max_top;
    if (st->msg_scroll < 0) st->msg_scroll = 0;
    int line = 0, y = in.y;
    for (int i = 0; i < st->n_msgs && y < in.y + in.h; i++) {
        const UiMessage *m = &st->msgs[i];
        int n = wrap_message(m->text, tw, starts, lens, 16);
        for (int k = 0; k < n && y < in.y + in.h; k++, line++) {
            if (line < st->msg_scroll) continue;
            if (k == 0) {
                time_t tt = (time_t)m->wall;
                struct tm tmv;
                localtime_r(&tt, &tmv);
                char when[16];
                strftime(when, sizeof when, "%H:%M:%S", &tmv);
                CellBuf_text(cb, in.x, y, when, ATTR_DIM, 8);
            }
            CellBuf_text(cb, in.x + 9, y, m->text + starts[k], m->attr, lens[k]);
            y++;
        }
    }
}

/* ---- help: generated from the key table ---------------------------------- */

static const char *const HELP_COLUMNS[] = {
    "Columns of the scheduler table",
    "  >            the task being measured right now (* instead: a tagged task)",
    "  ID           task number (as in the log and in `tunetop best`)",
    "  Task         operator and shape (the full key is in the inspector);",
    "               wino: the Winograd twin of a conv2d task (see README);",
    "               the twin whose BestGF is dimmed is the slower one",
    "  Wt           weight: how often the workload occurs in the network",
    "  Progress     a/b: a = trials measured for the task (errors included),",
    "               b = trials the scheduler plans to give it",
    "  Best         best latency of one run of the kernel",
    "  BestGF       Best: GFLOPS of the fastest config so far (ending in e: a",
    "               wino task's effective GFLOPS, may exceed the peak)",
    "  Roof%        BestGF as a share of the task's roofline: min(peak,",
    "               bandwidth x FLOPs/byte), measured (tunetop devices);",
    "               over 100 (marked !) means the roof or a timing is wrong",
    "  CurGF        Current: GFLOPS of the last successful config of the",
    "               latest batch (- when the whole batch failed)",
    "  Err          failed candidates: invalid config, compile error, crash,",
    "               wrong answer, timeout (e shows them grouped)",
    "  State        queued, tuning, waiting (for its next round), paused,",
    "               done, stopped, at roof (Best reached --roof-stop of its",
    "               roof: no more rounds unless its priority is raised);",
    "               pausing/resuming until the engine confirms",
    "  Pri          priority -3..+3: each step doubles (or halves) the",
    "               task's share in the scheduler's choice",
    "",
    "Header",
    "  PAUSED       every task is paused (P); P again resumes all but those",
    "               paused one by one (p)",
    "  Trials a/b   trials of the session / total budget, trials per second,",
    "               ETA: when the budget is spent at this rate",
    "  compiling    candidates being compiled; measuring: the task being timed",
    "  Est. total latency  sum of weight x best latency over tasks (the",
    "               scheduler's objective) and its change since the first one;",
    "               [N left out]: tasks paused or stopped before any result;",
    "               at roof: the same if every task reached its roof",
    "",
    "Curves",
    "  left: the selected task's GFLOPS per trial (failures sit on 0) and",
    "        the best so far, or with tasks tagged (Space) each one's best",
    "        so far; x: trial number or wall time (x), L: log scale",
    "  right: the estimated total latency over time",
    "        (earlier sessions of the log included, from LOG.tsv)",
    "  roof: the selected task's roofline, a flat line in the left curve,",
    "        with what bounds it (compute, or memory and from which level)",
};

void Help_render(CellBuf *cb, Rect r, UiState *st) {
    CellBuf_box(cb, r, "Help (? or Esc closes; Up/Down scroll)", st->utf8);
    Rect in = {r.x + 2, r.y + 1, r.w - 4, r.h - 2};
    int n;
    const UiKey *keys = UiKeys_table(&n);
    int n_help = 0;
    for (int i = 0; i < n; i++)
        if (keys[i].help) n_help++;
    int n_cols = (int)(sizeof HELP_COLUMNS / sizeof HELP_COLUMNS[0]);
    int total = 1 + n_help + 1 + n_cols;
    int max_top = total - in.h;
    if (max_top < 0) max_top = 0;
    if (st->help_scroll > max_top) st->help_scroll = max_top;
    int line = 0, y = in.y;
#define EMIT(draw)                                                                                                     \
    do {                                                                                                               \
        if (line >= st->help_scroll && y < in.y + in.h) {                                                              \
            draw;                                                                                                      \
            y++;                                                                                                       \
        }                                                                                                              \
        line++;                                                                                                        \
    } while (0)
    EMIT(CellBuf_text(cb, in.x, y, "Keys", ATTR_TITLE, in.w));
    for (int i = 0; i < n; i++) {
        if (!keys[i].help) continue;
        EMIT({
            CellBuf_text(cb, in.x + 2, y, keys[i].name, ATTR_KEY, 11);
            CellBuf_text(cb, in.x + 13, y, keys[i].help, ATTR_NORMAL, in.w - 13);
        });
    }
    EMIT((void)0);
    for (int i = 0; i < n_cols; i++) {
        const char *s = HELP_COLUMNS[i];
        EMIT(CellBuf_text(cb, in.x, y, s, s[0] != ' ' ? ATTR_TITLE : ATTR_NORMAL, in.w));
    }
#undef EMIT
}

void Devices_render(CellBuf *cb, Rect r, const UiState *st) {
    char title[96];
    snprintf(title, sizeof title, "Devices (%d; d or Esc closes)", st->n_devices);
    CellBuf_box(cb, r, title, st->utf8);
    Rect in = {r.x + 1, r.y + 1, r.w - 2, r.h - 2};
    if (in.h < 2 || in.w < 40) return;
    char line[512];
    snprintf(line, sizeof line, "%4s  %-14s %-30s %-9s %7s %8s %6s %6s %7s", "rank", "host", "device", "state",
             "cand/s", "measured", "errors", "held", "heard");
    CellBuf_text(cb, in.x, in.y, line, ATTR_TITLE, in.w);
    if (st->n_devices == 0) {
        CellBuf_text(cb, in.x, in.y + 1, "no device reported yet", ATTR_DIM, in.w);
        return;
    }
    for (int i = 0; i < st->n_devices && i + 1 < in.h; i++) {
        const DeviceRow *d = &st->devices[i];
        char heard[16];
        if (d->rank == 0)
            snprintf(heard, sizeof heard, "-"); /* this process */
        else
            snprintf(heard, sizeof heard, "%.1fs ago", d->last_heard_s);
        snprintf(line, sizeof line, "%4d  %-14.14s %-30.30s %-9s %7.2f %8d %6d %6d %7s", d->rank, d->host, d->device,
                 DeviceState_name(d->state), d->cand_per_s, d->measured, d->errors, d->in_flight, heard);
        CellAttr a = d->state == DEVSTATE_LOST || d->state == DEVSTATE_FAILED ? ATTR_FAILED
                     : d->state == DEVSTATE_MEASURING                         ? ATTR_MEASURING
                     : d->state == DEVSTATE_DONE                              ? ATTR_DONE
                                                                              : ATTR_NORMAL;
        CellBuf_text(cb, in.x, in.y + 1 + i, line, a, in.w);
    }
}
