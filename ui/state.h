/* ui/state.h: everything the terminal UI keeps between frames: the model,
 * the view options, the selection, the inspector's place, the status line,
 * and how to steer the session. No curses here: key actions and widgets
 * work on a UiState, and tests drive both without a terminal. */
#ifndef TT_UI_STATE_H
#define TT_UI_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/template.h"
#include "tuner/backend.h"
#include "ui/cellbuf.h"
#include "ui/layout.h"
#include "ui/model.h"

/* How key actions steer a session. In `tunetop view` there is none (NULL):
 * steering keys then say the view is read-only. */
/* Each call returns false when the change was not queued (the engine's
 * steering queue is full): the UI says so and keeps its view unchanged. */
typedef struct UiSteer {
    bool (*pause)(void *ctx, int task_id, bool paused);
    bool (*pause_all)(void *ctx, bool paused);
    bool (*set_priority)(void *ctx, int task_id, int priority);
    bool (*stop_task)(void *ctx, int task_id);
    void (*request_stop)(void *ctx);
} UiSteer;

typedef enum { SORT_ID = 0, SORT_SHARE, SORT_TRIALS, SORT_BEST, SORT_ERRORS, SORT_COUNT } SortKey;

const char *SortKey_name(SortKey k); /* "ID", "latency share", ... */

typedef enum { INSP_GROUPS = 0, INSP_CANDIDATES, INSP_DETAIL } InspLevel;

typedef struct Inspector {
    InspLevel level;
    int task; /* model task index */
    int group, group_top;
    int cand, cand_top;
    int scroll;  /* first detail line shown */
    int hscroll; /* first column shown of the detail lines (long lines at 80 columns) */
    /* detail page of the open candidate (built by Inspector_openDetail) */
    char **lines;
    uint8_t *attrs; /* CellAttr per line */
    int n_lines;
    int mark_line; /* index in lines of the failing source line, -1 if none */
    bool best;     /* the detail page is the task's best candidate (b), not a failure */
} Inspector;

/* One status message with the wall time it was shown (the message log, m). */
typedef struct UiMessage {
    double wall; /* unix seconds */
    CellAttr attr;
    char text[256];
} UiMessage;

#define UI_MESSAGES_MAX 1000
#define UI_FILTER_LEN 64

/* A question the status line asks; the next key answers it (y confirms). */
typedef enum { CONFIRM_NONE = 0, CONFIRM_STOP_TASKS, CONFIRM_QUIT } Confirm;

/* Curves' x axis: the task's trial number or the wall time of each trial. */
typedef enum { XAXIS_TRIALS = 0, XAXIS_TIME } XAxis;

#define UI_MAX_DEVICES 32

typedef struct UiState {
    UiModel model;
    LayoutView view;
    int selected;  /* model task index of the selected row */
    int table_top; /* first displayed row (scrolling) */
    SortKey sort;
    bool sort_desc;
    int *order; /* display order: model task indices (UiState_sort) */
    int n_order;
    Inspector insp;
    int help_scroll;
    char status[256];
    CellAttr status_attr;
    double status_wall; /* unix seconds the status line was set */
    int status_task;    /* the task selected then: the line goes when another is selected */
    bool utf8;          /* Braille plots and line drawing */
    bool ascii_plots;   /* user toggle: ASCII plots even on UTF-8 */
    bool latency_first; /* where only one curve fits: the session latency instead of the task GFLOPS */
    bool quit_requested;
    bool stopping;   /* quit requested, waiting for the engine */
    Confirm confirm; /* the question the status line asks now */
    /* message log: every status message, oldest first (at most UI_MESSAGES_MAX) */
    UiMessage *msgs;
    int n_msgs, cap_msgs;
    int msg_scroll;
    /* the table filter (/ or F3): tasks whose ID, label or key contains it */
    char filter[UI_FILTER_LEN];
    bool filter_editing;
    /* curves */
    XAxis xaxis;
    bool log_y; /* logarithmic y axis for GFLOPS and latency */
    /* where the table was drawn last (mouse clicks) */
    Rect table_rect;
    int mouse_x, mouse_y, mouse_button; /* the last mouse event (UI_MOUSE_*) */
    const UiSteer *steer;
    void *steer_ctx;
    /* regenerating sources in the inspector */
    DeviceInfo dev;
    bool have_dev;
    Dialect dialect;
    const char *report_dir; /* where `w` writes bug reports ("." when NULL) */
    /* the devices view (d): who builds and measures, refreshed every frame */
    DeviceRow devices[UI_MAX_DEVICES];
    int n_devices;
} UiState;

void UiState_init(UiState *this);
void UiState_done(UiState *this); /* frees the model and the inspector page */

/* Recomputes the display order after sort key, filter or data changes (tasks
 * the filter hides are not in it; the selection moves to a shown task). */
void UiState_sort(UiState *this);
/* True when task index ti passes the filter. */
bool UiState_filterMatches(const UiState *this, int ti);
/* Tasks the steering keys act on: the tagged ones, else the selected one.
 * Writes model task indices into out (room for n_tasks); returns the count. */
int UiState_targets(const UiState *this, int *out);
int UiState_taggedCount(const UiState *this);
/* Position of the selected task in the display order (0 when none). */
int UiState_selectedPos(const UiState *this);
#define UI_STATUS_TTL_S 8.0
/* Clears the status line once it is UI_STATUS_TTL_S old or another task is
 * selected (it stays in the message log), unless it asks a question. Returns
 * true when it cleared it (redraw). */
bool UiState_expireStatus(UiState *this, double wall_now);
/* Shows a status line and keeps it in the message log with the time. */
void UiState_setStatus(UiState *this, CellAttr attr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The state column text: engine state, or "pausing"/"resuming" while a
 * request is not yet confirmed by a snapshot. */
const char *UiState_taskStateText(const UiTask *t);

/* Inspector: fills the detail page of failed candidate `fail` of task index
 * ti (config, error, full message, regenerated source with the failing line
 * marked). Frees any previous page. */
void Inspector_openDetail(UiState *this, int ti, int fail);
/* The detail page of task ti's best candidate: its config, steps (a tensor
 * expression's schedule), lowered loop nest (when the expression is loaded)
 * and source. False when the task has no successful candidate yet. */
bool Inspector_openBest(UiState *this, int ti);
void Inspector_freeDetail(Inspector *this);
/* Writes the candidate (config, error, source) to a text file in
 * report_dir; on success copies the path into path and returns true, else
 * writes the reason into path. */
bool Inspector_writeReport(UiState *this, char *path, size_t n);

#endif
