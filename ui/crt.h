/* ui/crt.h: the only code that talks to curses. CRT_init / CRT_done own the
 * terminal's set-up and teardown; fatal signals restore the terminal before
 * the process dies, and SIGINT / SIGTERM / SIGHUP (when nobody else handles them)
 * only set a flag that the main loop reads. Only the main thread calls these. */
#ifndef TT_UI_CRT_H
#define TT_UI_CRT_H

#include <stdbool.h>

#include "ui/cellbuf.h"

/* Sets up the terminal. *utf8 tells whether the locale is UTF-8 (Braille and
 * line drawing). TT_ERR-like false when stdin/stdout is not a terminal. */
bool CRT_init(bool color, bool *utf8, char *err, size_t n);
void CRT_done(void);
/* Current size of the terminal. */
void CRT_size(int *rows, int *cols);
/* Copies a buffer of the terminal's size to the screen and refreshes. */
void CRT_blit(const CellBuf *cb);
/* The next key as a UI key code (see ui/keys.h), or -1 when none is waiting. */
int CRT_readKey(void);
/* After CRT_readKey returned UI_KEY_MOUSE: where and what (UI_MOUSE_*); false for other mouse events. */
bool CRT_mouse(int *x, int *y, int *button);
/* True once SIGINT, SIGTERM or SIGHUP arrived while the UI's own handlers were installed. */
bool CRT_interrupted(void);

#endif
