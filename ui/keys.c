/* ui/keys.c: the key table and its actions (see keys.h). */
#include "ui/keys.h"

#include <stdio.h>
#include <stdlib.h>

static UiTask *selected_task(UiState *st) {
    if (st->selected < 0 || st->selected >= st->model.n_tasks) return NULL;
    return &st->model.tasks[st->selected];
}

static bool can_steer(UiState *st) {
    if (st->steer) return true;
    UiState_setStatus(st, ATTR_WARN, "read-only view: steering needs a live session (tunetop tune)");
    return false;
}

/* ---- movement: the table, the inspector or the help page, whichever is open */

static void clamp_inspector(UiState *st) {
    Inspector *in = &st->insp;
    if (in->task < 0 || in->task >= st->model.n_tasks) return;
    const UiTask *t = &st->model.tasks[in->task];
    if (in->group >= t->n_groups) in->group = t->n_groups - 1;
    if (in->group < 0) in->group = 0;
    int nc = t->n_groups ? t->groups[in->group].n_members : 0;
    if (in->cand >= nc) in->cand = nc - 1;
    if (in->cand < 0) in->cand = 0;
    if (in->scroll > in->n_lines - 1) in->scroll = in->n_lines - 1;
    if (in->scroll < 0) in->scroll = 0;
}

/* Moves the inspector's group selection by delta in display order (by count). */
static void move_group(UiState *st, int delta) {
    Inspector *in = &st->insp;
    if (in->task < 0 || in->task >= st->model.n_tasks) return;
    const UiTask *t = &st->model.tasks[in->task];
    if (t->n_groups == 0) return;
    int *order = malloc(sizeof(int) * (size_t)t->n_groups);
    if (!order) abort();
    UiTask_groupOrder(t, order);
    int pos = 0;
    for (int i = 0; i < t->n_groups; i++)
        if (order[i] == in->group) pos = i;
    pos += delta;
    if (pos < 0) pos = 0;
    if (pos >= t->n_groups) pos = t->n_groups - 1;
    in->group = order[pos];
    free(order);
}

static int move_by(UiState *st, int delta) {
    if (st->view.overlay == OVERLAY_HELP) {
        st->help_scroll += delta;
        if (st->help_scroll < 0) st->help_scroll = 0;
        return REACT_REDRAW;
    }
    if (st->view.overlay == OVERLAY_INSPECTOR) {
        Inspector *in = &st->insp;
        if (in->level == INSP_GROUPS)
            move_group(st, delta);
        else if (in->level == INSP_CANDIDATES)
            in->cand += delta;
        else
            in->scroll += delta;
        clamp_inspector(st);
        return REACT_REDRAW;
    }
    if (st->n_order == 0) return REACT_NONE;
    int pos = UiState_selectedPos(st) + delta;
    if (pos < 0) pos = 0;
    if (pos >= st->n_order) pos = st->n_order - 1;
    st->selected = st->order[pos];
    return REACT_REDRAW;
}

static int act_up(UiState *st) { return move_by(st, -1); }
static int act_down(UiState *st) { return move_by(st, 1); }
static int act_pgup(UiState *st) { return move_by(st, -10); }
static int act_pgdn(UiState *st) { return move_by(st, 10); }
static int act_home(UiState *st) { return move_by(st, -1000000); }
static int act_end(UiState *st) { return move_by(st, 1000000); }

/* ---- panels */

static int act_help(UiState *st) {
    st->view.overlay = st->view.overlay == OVERLAY_HELP ? OVERLAY_NONE : OVERLAY_HELP;
    st->help_scroll = 0;
    return REACT_RELAYOUT | REACT_REDRAW;
}

static void open_inspector(UiState *st) {
    Inspector_freeDetail(&st->insp);
    st->insp.level = INSP_GROUPS;
    st->insp.task = st->selected;
    st->insp.group = st->insp.group_top = st->insp.cand = st->insp.cand_top = st->insp.scroll = 0;
    st->view.overlay = OVERLAY_INSPECTOR;
    move_group(st, -1000000); /* the largest group */
}

static int act_errors(UiState *st) {
    if (st->view.overlay == OVERLAY_INSPECTOR) {
        st->view.overlay = OVERLAY_NONE;
        Inspector_freeDetail(&st->insp);
    } else {
        if (!selected_task(st)) return REACT_NONE;
        open_inspector(st);
    }
    return REACT_RELAYOUT | REACT_REDRAW;
}

static int act_enter(UiState *st) {
    if (st->view.overlay == OVERLAY_NONE) {
        if (!selected_task(st)) return REACT_NONE;
        open_inspector(st);
        return REACT_RELAYOUT | REACT_REDRAW;
    }
    if (st->view.overlay != OVERLAY_INSPECTOR) return REACT_NONE;
    Inspector *in = &st->insp;
    if (in->task < 0 || in->task >= st->model.n_tasks) return REACT_NONE;
    const UiTask *t = &st->model.tasks[in->task];
    if (in->level == INSP_GROUPS && t->n_groups > 0) {
        in->level = INSP_CANDIDATES;
        in->cand = in->cand_top = 0;
    } else if (in->level == INSP_CANDIDATES && t->n_groups > 0 && in->cand < t->groups[in->group].n_members) {
        Inspector_openDetail(st, in->task, t->groups[in->group].members[in->cand]);
        in->level = INSP_DETAIL;
        in->scroll = in->mark_line > 5 ? in->mark_line - 5 : 0;
    }
    return REACT_REDRAW;
}

/* Esc / Backspace / Left: one level up, or close the panel. */
static int act_back(UiState *st) {
    if (st->view.overlay == OVERLAY_INSPECTOR && st->insp.level > INSP_GROUPS) {
        if (st->insp.level == INSP_DETAIL) Inspector_freeDetail(&st->insp);
        st->insp.level--;
        return REACT_REDRAW;
    }
    if (st->view.overlay != OVERLAY_NONE) {
        st->view.overlay = OVERLAY_NONE;
        Inspector_freeDetail(&st->insp);
        return REACT_RELAYOUT | REACT_REDRAW;
    }
    return REACT_NONE;
}

static int act_curves(UiState *st) {
    st->view.curves = !st->view.curves;
    UiState_setStatus(st, ATTR_NORMAL, "curves %s", st->view.curves ? "shown" : "hidden");
    return REACT_RELAYOUT | REACT_REDRAW;
}

static int act_ascii(UiState *st) {
    st->ascii_plots = !st->ascii_plots;
    UiState_setStatus(st, ATTR_NORMAL, "plots drawn with %s", st->ascii_plots || !st->utf8 ? "ASCII" : "Braille");
    return REACT_REDRAW;
}

static int act_latency_first(UiState *st) {
    st->latency_first = !st->latency_first;
    UiState_setStatus(st, ATTR_NORMAL, "where one curve fits: %s",
                      st->latency_first ? "estimated total latency" : "the selected task's GFLOPS");
    return REACT_REDRAW;
}

static int act_sort(UiState *st) {
    st->sort = (SortKey)((st->sort + 1) % SORT_COUNT);
    st->sort_desc = st->sort != SORT_ID;
    UiState_sort(st);
    UiState_setStatus(st, ATTR_NORMAL, "sorted by %s", SortKey_name(st->sort));
    return REACT_REDRAW;
}

static int act_reverse(UiState *st) {
    st->sort_desc = !st->sort_desc;
    UiState_sort(st);
    UiState_setStatus(st, ATTR_NORMAL, "sorted by %s, %s", SortKey_name(st->sort),
                      st->sort_desc ? "descending" : "ascending");
    return REACT_REDRAW;
}

/* ---- steering */

static int act_pause(UiState *st) {
    UiTask *t = selected_task(st);
    if (!t || !can_steer(st)) return REACT_REDRAW;
    if (t->row.state == TASK_DONE || t->row.state == TASK_STOPPED) {
        UiState_setStatus(st, ATTR_WARN, "task %d is %s: nothing to pause", t->id, UiState_taskStateText(t));
        return REACT_REDRAW;
    }
    bool paused = t->want_paused >= 0 ? t->want_paused == 1 : t->row.state == TASK_PAUSED;
    st->steer->pause(st->steer_ctx, t->id, !paused);
    t->want_paused = !paused;
    UiState_setStatus(st, ATTR_NORMAL, "%s task %d", paused ? "resuming" : "pausing", t->id);
    return REACT_REDRAW;
}

static int act_pause_all(UiState *st) {
    if (!can_steer(st)) return REACT_REDRAW;
    bool any_running = false;
    for (int i = 0; i < st->model.n_tasks; i++) {
        UiTask *t = &st->model.tasks[i];
        bool paused = t->want_paused >= 0 ? t->want_paused == 1 : t->row.state == TASK_PAUSED;
        if (!paused && t->row.state != TASK_DONE && t->row.state != TASK_STOPPED) any_running = true;
    }
    st->steer->pause_all(st->steer_ctx, any_running);
    for (int i = 0; i < st->model.n_tasks; i++) {
        UiTask *t = &st->model.tasks[i];
        if (t->row.state != TASK_DONE && t->row.state != TASK_STOPPED) t->want_paused = any_running;
    }
    UiState_setStatus(st, ATTR_NORMAL, "%s every task", any_running ? "pausing" : "resuming");
    return REACT_REDRAW;
}

static int change_priority(UiState *st, int delta) {
    UiTask *t = selected_task(st);
    if (!t || !can_steer(st)) return REACT_REDRAW;
    int p = t->row.priority + delta;
    if (p > 3) p = 3;
    if (p < -3) p = -3;
    st->steer->set_priority(st->steer_ctx, t->id, p);
    t->row.priority = p;
    t->want_priority = p; /* shown until a snapshot confirms it */
    UiState_setStatus(st, ATTR_NORMAL, "task %d priority %+d", t->id, p);
    return REACT_REDRAW;
}

static int act_prio_up(UiState *st) { return change_priority(st, 1); }
static int act_prio_down(UiState *st) { return change_priority(st, -1); }

static int act_stop_task(UiState *st) {
    UiTask *t = selected_task(st);
    if (!t || !can_steer(st)) return REACT_REDRAW;
    if (t->row.state == TASK_DONE || t->row.state == TASK_STOPPED) {
        UiState_setStatus(st, ATTR_WARN, "task %d is already %s", t->id, UiState_taskStateText(t));
        return REACT_REDRAW;
    }
    st->steer->stop_task(st->steer_ctx, t->id);
    t->want_stop = true; /* "stopping" until a snapshot confirms */
    UiState_setStatus(st, ATTR_NORMAL, "stopping task %d (its records stay in the log)", t->id);
    return REACT_REDRAW;
}

static int act_write(UiState *st) {
    if (st->view.overlay != OVERLAY_INSPECTOR || st->insp.level == INSP_GROUPS) {
        UiState_setStatus(st, ATTR_WARN, "w writes a failed candidate: open one in the error inspector (e)");
        return REACT_REDRAW;
    }
    char path[512];
    if (Inspector_writeReport(st, path, sizeof path))
        UiState_setStatus(st, ATTR_BEST, "wrote %s", path);
    else
        UiState_setStatus(st, ATTR_FAILED, "cannot write the report: %s", path);
    return REACT_REDRAW;
}

static int act_quit(UiState *st) {
    if (st->view.overlay != OVERLAY_NONE) return act_back(st) | REACT_RELAYOUT;
    if (st->stopping) return REACT_NONE;
    st->quit_requested = true;
    if (st->steer) {
        st->steer->request_stop(st->steer_ctx);
        st->stopping = true;
        st->status[0] = '\0'; /* the status line says "stopping..." while it lasts */
        return REACT_REDRAW;
    }
    return REACT_QUIT;
}

static const UiKey KEYS[] = {
    {UI_KEY_UP, "Up/k", NULL, "select the previous task (or line, in a panel)", act_up},
    {'k', NULL, NULL, NULL, act_up},
    {UI_KEY_DOWN, "Down/j", NULL, "select the next task (or line, in a panel)", act_down},
    {'j', NULL, NULL, NULL, act_down},
    {UI_KEY_PGUP, "PgUp", NULL, "ten lines up", act_pgup},
    {UI_KEY_PGDN, "PgDn", NULL, "ten lines down", act_pgdn},
    {UI_KEY_HOME, "Home", NULL, "first line", act_home},
    {UI_KEY_END, "End", NULL, "last line", act_end},
    {UI_KEY_ENTER, "Enter", NULL, "error inspector; in it: open a group, then a candidate", act_enter},
    {UI_KEY_ESC, "Esc/Left", NULL, "back one level in the inspector, or close the panel", act_back},
    {UI_KEY_LEFT, NULL, NULL, NULL, act_back},
    {UI_KEY_BACKSPACE, NULL, NULL, NULL, act_back},
    {'p', "p", "Pause", "pause / resume the selected task", act_pause},
    {'P', "P", "All", "pause every task, or resume them all when all are paused", act_pause_all},
    {'+', "+", "Prio+", "raise the selected task's priority (max +3; each step doubles it)", act_prio_up},
    {'=', NULL, NULL, NULL, act_prio_up},
    {'-', "-", "Prio-", "lower the selected task's priority (down to -3)", act_prio_down},
    {'s', "s", "Stop", "stop the selected task for good (its records stay)", act_stop_task},
    {'e', "e", "Errors", "error inspector: the task's failures by class and reason", act_errors},
    {'c', "c", "Curves", "show / hide the curves under the table", act_curves},
    {'a', "a", NULL, "draw plots with ASCII instead of Braille (toggle)", act_ascii},
    {'l', "l", NULL, "where only one curve fits (small terminals): latency or task GFLOPS", act_latency_first},
    {'o', "o", "Sort", "sort by the next column: ID, latency share, trials, best, errors", act_sort},
    {'O', "O", NULL, "reverse the sort order", act_reverse},
    {'w', "w", NULL, "inspector: write the candidate (source, config, error) to a file", act_write},
    {'?', "?", "Help", "this help (again to close)", act_help},
    {UI_KEY_F1, NULL, NULL, NULL, act_help},
    {'h', NULL, NULL, NULL, act_help},
    {'q', "q", "Quit", "close the panel; else stop the session gracefully and quit", act_quit},
};

const UiKey *UiKeys_table(int *n) {
    *n = (int)(sizeof KEYS / sizeof KEYS[0]);
    return KEYS;
}

int UiKeys_handle(UiState *st, int key) {
    if (key == '\n' || key == '\r') key = UI_KEY_ENTER;
    if (key == 27) key = UI_KEY_ESC;
    if (key == 127 || key == 8) key = UI_KEY_BACKSPACE;
    int n;
    const UiKey *t = UiKeys_table(&n);
    for (int i = 0; i < n; i++)
        if (t[i].key == key) return t[i].action(st);
    return REACT_NONE;
}
