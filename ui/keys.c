/* ui/keys.c: the key table and its actions (see keys.h). */
#include "ui/keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/columns.h"

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
    if (st->view.overlay == OVERLAY_MESSAGES) {
        st->msg_scroll += delta;
        if (st->msg_scroll < 0) st->msg_scroll = 0;
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
    st->insp.best = false;
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

/* b: the selected task's best candidate (config, steps, loop nest, source); again to close. */
static int act_best(UiState *st) {
    if (st->view.overlay == OVERLAY_INSPECTOR && st->insp.best) {
        st->view.overlay = OVERLAY_NONE;
        Inspector_freeDetail(&st->insp);
        st->insp.best = false;
        return REACT_RELAYOUT | REACT_REDRAW;
    }
    if (!selected_task(st)) return REACT_NONE;
    if (!Inspector_openBest(st, st->selected)) {
        if (selected_task(st)->row.best_gflops > 0)
            UiState_setStatus(st, ATTR_WARN, "the best was restored from the log: tunetop best LOG shows it");
        else
            UiState_setStatus(st, ATTR_WARN, "no successful candidate yet for this task");
        return REACT_REDRAW;
    }
    st->view.overlay = OVERLAY_INSPECTOR;
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
        in->hscroll = 0;
    }
    return REACT_REDRAW;
}

/* Esc / Backspace / Left: one level up, or close the panel. */
static int act_back(UiState *st) {
    if (st->view.overlay == OVERLAY_INSPECTOR && st->insp.best) {
        st->view.overlay = OVERLAY_NONE;
        Inspector_freeDetail(&st->insp);
        st->insp.best = false;
        return REACT_RELAYOUT | REACT_REDRAW;
    }
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

/* ---- steering: the tagged tasks, else the selected one */

static bool open_task(const UiTask *t) { return t->row.state != TASK_DONE && t->row.state != TASK_STOPPED; }

/* "task 3" or "3 tagged tasks" */
static void targets_name(UiState *st, int n, const int *ids, char *buf, size_t len) {
    if (n == 1)
        snprintf(buf, len, "task %d", st->model.tasks[ids[0]].id);
    else
        snprintf(buf, len, "%d tagged tasks", n);
}

static bool own_pause(const UiTask *t) { return t->want_paused >= 0 ? t->want_paused == 1 : t->row.user_paused; }

static int *target_buf(UiState *st) {
    int *ids = malloc(sizeof(int) * (size_t)(st->model.n_tasks + 1));
    if (!ids) abort();
    return ids;
}

/* A steering change the engine did not queue (its queue is full) is said,
 * never dropped silently: the view keeps what the engine has. */
#define STEER_QUEUE_FULL "the engine's steering queue is full"

static void steering_refused(UiState *st, int refused, const char *what) {
    UiState_setStatus(st, ATTR_WARN, "%s: %d change%s not made (%s); press the key again in a moment", STEER_QUEUE_FULL,
                      refused, refused == 1 ? "" : "s", what);
}

static int act_pause(UiState *st) {
    if (!can_steer(st)) return REACT_REDRAW;
    int *ids = target_buf(st);
    int n = UiState_targets(st, ids), k = 0;
    /* pause them all unless every open one is paused already */
    bool pause = false;
    for (int i = 0; i < n; i++)
        if (open_task(&st->model.tasks[ids[i]]) && !own_pause(&st->model.tasks[ids[i]])) pause = true;
    char what[64] = "";
    if (n) targets_name(st, n, ids, what, sizeof what);
    int refused = 0;
    for (int i = 0; i < n; i++) {
        UiTask *t = &st->model.tasks[ids[i]];
        if (!open_task(t)) continue;
        if (!st->steer->pause(st->steer_ctx, t->id, pause)) {
            refused++;
            continue;
        }
        t->want_paused = pause;
        ids[k++] = ids[i];
    }
    if (refused) {
        steering_refused(st, refused, pause ? "pause" : "resume");
    } else if (n && k == 0) {
        UiState_setStatus(st, ATTR_WARN, "%s: done or stopped, nothing to pause", what);
    } else if (k) {
        targets_name(st, k, ids, what, sizeof what);
        bool all = st->model.want_all_paused >= 0 ? st->model.want_all_paused == 1 : st->model.all_paused;
        UiState_setStatus(st, ATTR_NORMAL, "%s %s%s", pause ? "pausing" : "resuming", what,
                          all ? " (all tasks are paused: P resumes them)" : "");
    }
    free(ids);
    return REACT_REDRAW;
}

static int act_pause_all(UiState *st) {
    if (!can_steer(st)) return REACT_REDRAW;
    bool all = st->model.want_all_paused >= 0 ? st->model.want_all_paused == 1 : st->model.all_paused;
    if (!st->steer->pause_all(st->steer_ctx, !all)) {
        steering_refused(st, 1, all ? "resume all" : "pause all");
        return REACT_REDRAW;
    }
    st->model.want_all_paused = !all;
    int own = 0;
    for (int i = 0; i < st->model.n_tasks; i++)
        own += open_task(&st->model.tasks[i]) && own_pause(&st->model.tasks[i]);
    if (!all)
        UiState_setStatus(st, ATTR_NORMAL, "pausing all tasks (P again resumes them)");
    else if (own)
        UiState_setStatus(st, ATTR_NORMAL, "resuming all tasks; %d paused one by one stay%s paused", own,
                          own == 1 ? "s" : "");
    else
        UiState_setStatus(st, ATTR_NORMAL, "resuming all tasks");
    return REACT_REDRAW;
}

static int change_priority(UiState *st, int delta) {
    if (!can_steer(st)) return REACT_REDRAW;
    int *ids = target_buf(st);
    int n = UiState_targets(st, ids), p = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        UiTask *t = &st->model.tasks[ids[i]];
        p = t->row.priority + delta;
        if (p > 3) p = 3;
        if (p < -3) p = -3;
        if (!st->steer->set_priority(st->steer_ctx, t->id, p)) {
            refused++;
            continue;
        }
        t->row.priority = p;
        t->want_priority = p; /* shown until a snapshot confirms it */
    }
    if (refused)
        steering_refused(st, refused, "priority");
    else if (n == 1)
        UiState_setStatus(st, ATTR_NORMAL, "task %d priority %+d", st->model.tasks[ids[0]].id, p);
    else if (n > 1)
        UiState_setStatus(st, ATTR_NORMAL, "priority %+d for %d tagged tasks", delta, n);
    free(ids);
    return REACT_REDRAW;
}

static int act_prio_up(UiState *st) { return change_priority(st, 1); }
static int act_prio_down(UiState *st) { return change_priority(st, -1); }

/* s asks first: a stop is for good in this session and is kept on resume. */
static int act_stop_task(UiState *st) {
    if (!can_steer(st)) return REACT_REDRAW;
    int *ids = target_buf(st);
    int n = UiState_targets(st, ids), open = 0;
    for (int i = 0; i < n; i++)
        open += open_task(&st->model.tasks[ids[i]]);
    char what[64] = "";
    if (n) targets_name(st, n, ids, what, sizeof what);
    free(ids);
    if (!n) return REACT_NONE;
    if (!open) {
        UiState_setStatus(st, ATTR_WARN, "%s: already done or stopped", what);
        return REACT_REDRAW;
    }
    st->confirm = CONFIRM_STOP_TASKS;
    UiState_setStatus(st, ATTR_WARN, "stop %s for good (kept on resume)? y: stop, other key: no", what);
    return REACT_REDRAW;
}

static void stop_targets(UiState *st) {
    int *ids = target_buf(st);
    int n = UiState_targets(st, ids), k = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        UiTask *t = &st->model.tasks[ids[i]];
        if (!open_task(t)) continue;
        if (!st->steer->stop_task(st->steer_ctx, t->id)) {
            refused++;
            continue;
        }
        t->want_stop = true; /* "stopping" until a snapshot confirms */
        ids[k++] = ids[i];
    }
    char what[64] = "nothing";
    if (k) targets_name(st, k, ids, what, sizeof what);
    if (refused)
        steering_refused(st, refused, "stop");
    else
        UiState_setStatus(st, ATTR_NORMAL, "stopping %s (records stay in the log)", what);
    free(ids);
}

static int act_tag(UiState *st) {
    if (st->view.overlay != OVERLAY_NONE) return REACT_NONE;
    UiTask *t = selected_task(st);
    if (!t) return REACT_NONE;
    t->tagged = !t->tagged;
    int n = UiState_taggedCount(st);
    UiState_setStatus(st, ATTR_NORMAL, "%s task %d; %d tagged (p + - s act on them, curves show them, U untags)",
                      t->tagged ? "tagged" : "untagged", t->id, n);
    move_by(st, 1);
    return REACT_REDRAW;
}

static int act_untag(UiState *st) {
    for (int i = 0; i < st->model.n_tasks; i++)
        st->model.tasks[i].tagged = false;
    UiState_setStatus(st, ATTR_NORMAL, "no task tagged");
    return REACT_REDRAW;
}

static int act_filter(UiState *st) {
    if (st->view.overlay != OVERLAY_NONE) return REACT_NONE;
    st->filter_editing = true;
    return REACT_REDRAW;
}

static int act_messages(UiState *st) {
    st->view.overlay = st->view.overlay == OVERLAY_MESSAGES ? OVERLAY_NONE : OVERLAY_MESSAGES;
    st->msg_scroll = 1000000; /* the newest at the bottom */
    return REACT_RELAYOUT | REACT_REDRAW;
}

static int act_devices(UiState *st) {
    st->view.overlay = st->view.overlay == OVERLAY_DEVICES ? OVERLAY_NONE : OVERLAY_DEVICES;
    return REACT_RELAYOUT | REACT_REDRAW;
}

static int act_sort_next(UiState *st) { return act_sort(st); }

static int act_sort_prev(UiState *st) {
    st->sort = (SortKey)((st->sort + SORT_COUNT - 1) % SORT_COUNT);
    st->sort_desc = st->sort != SORT_ID;
    UiState_sort(st);
    UiState_setStatus(st, ATTR_NORMAL, "sorted by %s", SortKey_name(st->sort));
    return REACT_REDRAW;
}

static int act_xaxis(UiState *st) {
    st->xaxis = st->xaxis == XAXIS_TRIALS ? XAXIS_TIME : XAXIS_TRIALS;
    UiState_setStatus(st, ATTR_NORMAL, "curves: x axis in %s", st->xaxis == XAXIS_TIME ? "wall time" : "trials");
    return REACT_REDRAW;
}

static int act_log_y(UiState *st) {
    st->log_y = !st->log_y;
    UiState_setStatus(st, ATTR_NORMAL, "curves: %s y axis", st->log_y ? "logarithmic" : "linear");
    return REACT_REDRAW;
}

/* Right in the inspector's detail page: scroll long lines (Left scrolls back, then goes back). */
static int act_right(UiState *st) {
    if (st->view.overlay != OVERLAY_INSPECTOR || st->insp.level != INSP_DETAIL) return REACT_NONE;
    st->insp.hscroll += 8;
    return REACT_REDRAW;
}

static int act_left(UiState *st) {
    if (st->view.overlay == OVERLAY_INSPECTOR && st->insp.level == INSP_DETAIL && st->insp.hscroll > 0) {
        st->insp.hscroll = st->insp.hscroll > 8 ? st->insp.hscroll - 8 : 0;
        return REACT_REDRAW;
    }
    return act_back(st);
}

/* A click on a row selects it, on a column title sorts by that column; the wheel scrolls. */
static int act_mouse(UiState *st) {
    if (st->mouse_button == UI_MOUSE_WHEEL_UP) return move_by(st, -3);
    if (st->mouse_button == UI_MOUSE_WHEEL_DOWN) return move_by(st, 3);
    if (st->mouse_button != UI_MOUSE_CLICK || st->view.overlay != OVERLAY_NONE) return REACT_NONE;
    Rect r = st->table_rect;
    if (r.h < 1 || st->mouse_x < r.x || st->mouse_x >= r.x + r.w || st->mouse_y < r.y || st->mouse_y >= r.y + r.h)
        return REACT_NONE;
    if (st->mouse_y == r.y) {
        SortKey k = Table_sortKeyAt(r, st->mouse_x);
        if (k == SORT_COUNT) return REACT_NONE;
        if (k == st->sort)
            st->sort_desc = !st->sort_desc;
        else
            st->sort = k, st->sort_desc = k != SORT_ID;
        UiState_sort(st);
        UiState_setStatus(st, ATTR_NORMAL, "sorted by %s, %s", SortKey_name(st->sort),
                          st->sort_desc ? "descending" : "ascending");
        return REACT_REDRAW;
    }
    int pos = st->table_top + (st->mouse_y - r.y - 1);
    if (pos < 0 || pos >= st->n_order) return REACT_NONE;
    st->selected = st->order[pos];
    return REACT_REDRAW;
}

static int act_write(UiState *st) {
    if (st->view.overlay != OVERLAY_INSPECTOR || st->insp.level == INSP_GROUPS || st->insp.best) {
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

int UiKeys_quitNow(UiState *st) {
    st->confirm = CONFIRM_NONE;
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

/* q closes a panel; else, in a session still running, asks before stopping it. */
static int act_quit(UiState *st) {
    if (st->view.overlay != OVERLAY_NONE) return act_back(st) | REACT_RELAYOUT;
    if (st->stopping) return REACT_NONE;
    if (st->steer && !st->model.finished) {
        st->confirm = CONFIRM_QUIT;
        UiState_setStatus(st, ATTR_WARN,
                          "stop the session and quit? y/q: quit (the same command resumes), other key: no");
        return REACT_REDRAW;
    }
    return UiKeys_quitNow(st);
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
    {UI_KEY_MOUSE, "mouse", NULL, "click a row: select it; click a column title: sort by it; wheel: scroll", act_mouse},
    {UI_KEY_ENTER, "Enter", NULL, "error inspector; in it: open a group, then a candidate", act_enter},
    {UI_KEY_ESC, "Esc", NULL, "back one level in the inspector, or close the panel", act_back},
    {UI_KEY_LEFT, "Left", NULL, "inspector page scrolled right: scroll back; else like Esc", act_left},
    {UI_KEY_BACKSPACE, NULL, NULL, NULL, act_back},
    {UI_KEY_RIGHT, "Right", NULL, "inspector page: scroll long lines right (Left scrolls back)", act_right},
    {' ', "Space", NULL, "tag / untag the selected task (p + - s then act on every tagged task)", act_tag},
    {'U', "U", NULL, "untag every task", act_untag},
    {'p', "p", "Pause", "pause / resume the selected (or tagged) tasks", act_pause},
    {'P', "P", "All", "pause all tasks; again: resume them (tasks paused with p stay paused)", act_pause_all},
    {'+', "+", "Prio+", "raise the priority of the selected (or tagged) tasks (max +3; each step doubles it)",
     act_prio_up},
    {'=', NULL, NULL, NULL, act_prio_up},
    {'-', "-", "Prio-", "lower the priority of the selected (or tagged) tasks (down to -3)", act_prio_down},
    {'s', "s", "Stop", "stop the selected (or tagged) tasks for good, after a y (records stay)", act_stop_task},
    {'/', "/ or F3", NULL, "filter the table: type part of a name or an ID, Enter keeps it, Esc clears", act_filter},
    {UI_KEY_F3, NULL, NULL, NULL, act_filter},
    {'e', "e", "Errors", "error inspector: the task's failures by class and reason", act_errors},
    {'b', "b", NULL, "best candidate of the task: config, steps, loop nest (expressions), source", act_best},
    {'c', "c", "Curves", "show / hide the curves under the table", act_curves},
    {'x', "x", NULL, "curves: x axis in trials or in wall time (toggle)", act_xaxis},
    {'L', "L", NULL, "curves: logarithmic y axis (toggle)", act_log_y},
    {'a', "a", NULL, "draw plots with ASCII instead of Braille (toggle)", act_ascii},
    {'l', "l", NULL, "where only one curve fits (small terminals): latency or task GFLOPS", act_latency_first},
    {'m', "m", NULL, "message log: every status message with its time (again to close)", act_messages},
    {'d', "d", NULL, "devices: the ranks that build and measure, their state and rate (again to close)", act_devices},
    {'o', "o", "Sort", "sort by the next column: ID, latency share, trials, best, errors", act_sort},
    {'>', "> or F6", NULL, "sort by the next column (clicking a column title sorts by it)", act_sort_next},
    {UI_KEY_F6, NULL, NULL, NULL, act_sort_next},
    {'<', "<", NULL, "sort by the previous column", act_sort_prev},
    {'O', "O", NULL, "reverse the sort order", act_reverse},
    {'w', "w", NULL, "inspector: write the candidate (source, config, error) to a file", act_write},
    {'?', "?", "Help", "this help, also F1 and h (again to close)", act_help},
    {UI_KEY_F1, NULL, NULL, NULL, act_help},
    {'h', NULL, NULL, NULL, act_help},
    {'q', "q", "Quit", "close the panel; else stop the session gracefully and quit (asks first; F10 too)", act_quit},
    {UI_KEY_F10, NULL, NULL, NULL, act_quit},
};

const UiKey *UiKeys_table(int *n) {
    *n = (int)(sizeof KEYS / sizeof KEYS[0]);
    return KEYS;
}

/* Typing the filter: printable keys add, Backspace removes, Enter keeps it, Esc clears it. */
static int filter_key(UiState *st, int key) {
    size_t len = strlen(st->filter);
    if (key == UI_KEY_ENTER) {
        st->filter_editing = false;
        if (st->filter[0])
            UiState_setStatus(st, ATTR_NORMAL, "filter \"%s\": %d of %d tasks shown (/ then Esc clears it)", st->filter,
                              st->n_order, st->model.n_tasks);
    } else if (key == UI_KEY_ESC) {
        st->filter_editing = false;
        st->filter[0] = '\0';
        UiState_setStatus(st, ATTR_NORMAL, "filter cleared");
    } else if (key == UI_KEY_BACKSPACE) {
        if (len) st->filter[len - 1] = '\0';
    } else if (key >= 32 && key < 127 && len + 1 < sizeof st->filter) {
        st->filter[len] = (char)key;
        st->filter[len + 1] = '\0';
    } else {
        return REACT_NONE;
    }
    UiState_sort(st);
    return REACT_REDRAW;
}

int UiKeys_handle(UiState *st, int key) {
    if (key == '\n' || key == '\r') key = UI_KEY_ENTER;
    if (key == 27) key = UI_KEY_ESC;
    if (key == 127 || key == 8) key = UI_KEY_BACKSPACE;
    if (st->filter_editing) return filter_key(st, key);
    if (st->confirm != CONFIRM_NONE && key != UI_KEY_MOUSE) {
        Confirm c = st->confirm;
        st->confirm = CONFIRM_NONE;
        bool yes = key == 'y' || key == 'Y' || (c == CONFIRM_QUIT && (key == 'q' || key == UI_KEY_F10));
        if (!yes) {
            UiState_setStatus(st, ATTR_NORMAL, c == CONFIRM_QUIT ? "not quitting" : "nothing stopped");
            return REACT_REDRAW;
        }
        if (c == CONFIRM_QUIT) return UiKeys_quitNow(st);
        stop_targets(st);
        return REACT_REDRAW;
    }
    int n;
    const UiKey *t = UiKeys_table(&n);
    for (int i = 0; i < n; i++) {
        if (t[i].key != key) continue;
        double set_at = st->status_wall;
        int r = t[i].action(st);
        /* a message this key left is about the task selected after it (Space tags and moves on) */
        if (st->status_wall != set_at) st->status_task = st->selected;
        return r;
    }
    return REACT_NONE;
}
