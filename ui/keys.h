/* ui/keys.h: the one key table. Each entry maps a key to an action that
 * works on the UiState and returns reaction flags; the help screen and the
 * key bar are generated from this same table, so they cannot drift from
 * what the keys do. Key codes are the UI's own (the terminal layer
 * translates curses codes), so the table is tested without a terminal. */
#ifndef TT_UI_KEYS_H
#define TT_UI_KEYS_H

#include "ui/state.h"

enum {
    UI_KEY_UP = 0x1001,
    UI_KEY_DOWN,
    UI_KEY_LEFT,
    UI_KEY_RIGHT,
    UI_KEY_PGUP,
    UI_KEY_PGDN,
    UI_KEY_HOME,
    UI_KEY_END,
    UI_KEY_ENTER,
    UI_KEY_ESC,
    UI_KEY_BACKSPACE,
    UI_KEY_F1,
    UI_KEY_RESIZE,
    UI_KEY_F3,
    UI_KEY_F6,
    UI_KEY_F10,
    UI_KEY_MOUSE, /* st->mouse_x, mouse_y, mouse_button say what happened */
};

enum { UI_MOUSE_CLICK = 1, UI_MOUSE_WHEEL_UP, UI_MOUSE_WHEEL_DOWN };

typedef enum {
    REACT_NONE = 0,
    REACT_REDRAW = 1,   /* draw the screen again */
    REACT_RELAYOUT = 2, /* the layout changed (panels shown / hidden) */
    REACT_QUIT = 4,     /* leave the UI now (after a graceful stop) */
} Reaction;

typedef int (*UiAction)(UiState *st);

typedef struct UiKey {
    int key;          /* character or UI_KEY_* */
    const char *name; /* as shown in help: "Up/k" */
    const char *bar;  /* short label for the key bar, NULL = not in the bar */
    const char *help; /* one line for the help screen */
    UiAction action;
} UiKey;

/* The table; *n receives the entry count. Several keys may share an action
 * (then only the first entry of that action has a name and help). */
const UiKey *UiKeys_table(int *n);
/* Runs the action bound to key; REACT_NONE for unbound keys. While the
 * filter is being typed, keys edit it; while the status line asks a question
 * (st->confirm), y (or the same key again) confirms and any other key cancels. */
int UiKeys_handle(UiState *st, int key);
/* Quits without asking (Ctrl-C, SIGTERM, a lost terminal): a graceful stop. */
int UiKeys_quitNow(UiState *st);

#endif
