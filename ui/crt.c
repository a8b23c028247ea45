/* ui/crt.c: the terminal layer (see crt.h). */
#define NCURSES_WIDECHAR 1
#include "ui/crt.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ui/keys.h"

static bool crt_active;
static bool crt_color;
static volatile sig_atomic_t crt_interrupt;
static attr_t crt_attrs[ATTR_COUNT];

static const int FATAL_SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_FATAL ((int)(sizeof FATAL_SIGNALS / sizeof FATAL_SIGNALS[0]))
static struct sigaction old_fatal[N_FATAL], old_int, old_term, old_hup;
static bool own_int, own_term, own_hup;

/* A fatal signal: give the terminal back, then die of the same signal. endwin
 * is not async-signal-safe, but the process is dying anyway and a broken
 * terminal is the worse outcome (htop does the same). */
static void on_fatal(int sig) {
    if (crt_active) {
        endwin();
        crt_active = false;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void on_interrupt(int sig) {
    (void)sig;
    crt_interrupt = 1;
}

bool CRT_interrupted(void) { return crt_interrupt != 0; }

static void setup_attrs(bool color) {
    /* monochrome scheme first; colours replace it where available */
    const attr_t mono[ATTR_COUNT] = {
        [ATTR_NORMAL] = A_NORMAL,    [ATTR_DIM] = A_DIM,
        [ATTR_TITLE] = A_REVERSE,    [ATTR_HEADER_VAL] = A_BOLD,
        [ATTR_SELECTED] = A_REVERSE, [ATTR_MEASURING] = A_BOLD,
        [ATTR_BEST] = A_BOLD,        [ATTR_FAILED] = A_UNDERLINE,
        [ATTR_PAUSED] = A_DIM,       [ATTR_DONE] = A_NORMAL,
        [ATTR_WARN] = A_BOLD,        [ATTR_KEY] = A_BOLD,
        [ATTR_KEYBAR] = A_REVERSE,   [ATTR_MARK] = A_REVERSE | A_BOLD,
        [ATTR_SERIES1] = A_NORMAL,   [ATTR_SERIES2] = A_BOLD,
        [ATTR_SERIES3] = A_BOLD,     [ATTR_SERIES4] = A_NORMAL,
    };
    memcpy(crt_attrs, mono, sizeof mono);
    if (!color || !has_colors()) return;
    start_color();
    use_default_colors();
    struct {
        CellAttr a;
        short fg, bg;
        attr_t extra;
    } scheme[] = {
        {ATTR_DIM, COLOR_CYAN, -1, 0},
        {ATTR_TITLE, COLOR_BLACK, COLOR_GREEN, 0},
        {ATTR_HEADER_VAL, COLOR_CYAN, -1, A_BOLD},
        {ATTR_SELECTED, COLOR_BLACK, COLOR_CYAN, 0},
        {ATTR_MEASURING, COLOR_YELLOW, -1, A_BOLD},
        {ATTR_BEST, COLOR_GREEN, -1, A_BOLD},
        {ATTR_FAILED, COLOR_RED, -1, A_BOLD},
        {ATTR_PAUSED, COLOR_MAGENTA, -1, 0},
        {ATTR_DONE, COLOR_BLUE, -1, A_BOLD},
        {ATTR_WARN, COLOR_YELLOW, -1, A_BOLD},
        {ATTR_KEY, COLOR_WHITE, COLOR_BLACK, A_BOLD},
        {ATTR_KEYBAR, COLOR_BLACK, COLOR_CYAN, 0},
        {ATTR_MARK, COLOR_WHITE, COLOR_RED, A_BOLD},
        {ATTR_SERIES1, COLOR_CYAN, -1, 0},
        {ATTR_SERIES2, COLOR_GREEN, -1, A_BOLD},
        {ATTR_SERIES3, COLOR_YELLOW, -1, A_BOLD},
        {ATTR_SERIES4, COLOR_MAGENTA, -1, 0},
    };
    for (int i = 0; i < (int)(sizeof scheme / sizeof scheme[0]); i++) {
        short pair = (short)(i + 1);
        init_pair(pair, scheme[i].fg, scheme[i].bg);
        crt_attrs[scheme[i].a] = COLOR_PAIR(pair) | scheme[i].extra;
    }
}

bool CRT_init(bool color, bool *utf8, char *err, size_t n) {
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        snprintf(err, n, "the terminal UI needs a terminal on stdin and stdout");
        return false;
    }
    /* only the character type: number formatting elsewhere (records, JSON)
     * must not change with the user's locale */
    setlocale(LC_CTYPE, "");
    const char *cs = nl_langinfo(CODESET);
    *utf8 = cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
    if (!initscr()) {
        snprintf(err, n, "cannot initialise the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
        return false;
    }
    crt_active = true;
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    /* clicks and the wheel; a shifted click still selects text in most terminals */
    mousemask(BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
    mouseinterval(0);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    crt_color = color;
    setup_attrs(color);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_fatal;
    for (int i = 0; i < N_FATAL; i++)
        sigaction(FATAL_SIGNALS[i], &sa, &old_fatal[i]);
    /* SIGINT / SIGTERM: only when the application left them at the default */
    crt_interrupt = 0;
    sa.sa_handler = on_interrupt;
    struct sigaction cur;
    sigaction(SIGINT, NULL, &cur);
    own_int = cur.sa_handler == SIG_DFL;
    if (own_int) sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, NULL, &cur);
    own_term = cur.sa_handler == SIG_DFL;
    if (own_term) sigaction(SIGTERM, &sa, &old_term);
    /* the terminal went away: stop gracefully rather than die mid-batch */
    sigaction(SIGHUP, NULL, &cur);
    own_hup = cur.sa_handler == SIG_DFL;
    if (own_hup) sigaction(SIGHUP, &sa, &old_hup);
    return true;
}

void CRT_done(void) {
    if (!crt_active) return;
    curs_set(1);
    endwin();
    crt_active = false;
    for (int i = 0; i < N_FATAL; i++)
        sigaction(FATAL_SIGNALS[i], &old_fatal[i], NULL);
    if (own_int) sigaction(SIGINT, &old_int, NULL);
    if (own_term) sigaction(SIGTERM, &old_term, NULL);
    if (own_hup) sigaction(SIGHUP, &old_hup, NULL);
    own_int = own_term = own_hup = false;
}

void CRT_size(int *rows, int *cols) { getmaxyx(stdscr, *rows, *cols); }

void CRT_blit(const CellBuf *cb) {
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    for (int y = 0; y < cb->h && y < rows; y++) {
        for (int x = 0; x < cb->w && x < cols; x++) {
            /* the bottom-right cell: writing it would scroll the screen */
            if (y == rows - 1 && x == cols - 1) continue;
            const Cell *c = &cb->cells[y * cb->w + x];
            attr_t a = crt_attrs[c->attr < ATTR_COUNT ? c->attr : 0];
            if (c->ch < 0x80) {
                mvaddch(y, x, (chtype)c->ch | a);
            } else {
                wchar_t wc[2] = {(wchar_t)c->ch, 0};
                cchar_t cc;
                setcchar(&cc, wc, a, (short)PAIR_NUMBER(a), NULL);
                mvadd_wch(y, x, &cc);
            }
        }
    }
    refresh();
}

bool CRT_mouse(int *x, int *y, int *button) {
    MEVENT ev;
    if (getmouse(&ev) != OK) return false;
    *x = ev.x;
    *y = ev.y;
    if (ev.bstate & BUTTON4_PRESSED)
        *button = UI_MOUSE_WHEEL_UP;
    else if (ev.bstate & BUTTON5_PRESSED)
        *button = UI_MOUSE_WHEEL_DOWN;
    else if (ev.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED))
        *button = UI_MOUSE_CLICK;
    else
        return false;
    return true;
}

int CRT_readKey(void) {
    int ch = getch();
    switch (ch) {
    case ERR:
        return -1;
    case KEY_UP:
        return UI_KEY_UP;
    case KEY_DOWN:
        return UI_KEY_DOWN;
    case KEY_LEFT:
        return UI_KEY_LEFT;
    case KEY_RIGHT:
        return UI_KEY_RIGHT;
    case KEY_PPAGE:
        return UI_KEY_PGUP;
    case KEY_NPAGE:
        return UI_KEY_PGDN;
    case KEY_HOME:
        return UI_KEY_HOME;
    case KEY_END:
        return UI_KEY_END;
    case KEY_ENTER:
        return UI_KEY_ENTER;
    case KEY_BACKSPACE:
        return UI_KEY_BACKSPACE;
    case KEY_F(1):
        return UI_KEY_F1;
    case KEY_F(3):
        return UI_KEY_F3;
    case KEY_F(6):
        return UI_KEY_F6;
    case KEY_F(10):
        return UI_KEY_F10;
    case KEY_MOUSE:
        return UI_KEY_MOUSE;
    case KEY_RESIZE:
        return UI_KEY_RESIZE;
    default:
        return ch;
    }
}
