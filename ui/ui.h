/* ui/ui.h: the ncurses front end.
 *
 * Ui_runSession shows a live session and steers it through the engine API;
 * Ui_runView shows a log read-only (a finished log, or one another session is
 * still appending to: it follows the file). Both return a process exit code
 * and restore the terminal on every path (quit, Ctrl-C, fatal signal). */
#ifndef TT_UI_UI_H
#define TT_UI_UI_H

#include <stdbool.h>

#include "records/session.h"
#include "tuner/engine.h"

typedef struct UiOptions {
    bool color;              /* false with --no-color or NO_COLOR */
    int refresh_hz;          /* default 10 */
    const char *target;      /* for view mode headers */
    int log_format;          /* view: a TvmFormat (0 = detect from the content) */
    bool no_follow;          /* view: read the log once, do not follow it */
    const char *notice;      /* a session's first message (what a resume restored), NULL or "" for none */
    const LogSession *tasks; /* view: the table's tasks, IDs and weights (a model's: UiLogView_openTasks);
                                NULL: the log's own */
} UiOptions;

void UiOptions_defaults(UiOptions *this); /* honours NO_COLOR */

/* stop_flag is set by the SIGINT handler of app/; the UI treats it as `q`. */
int Ui_runSession(Engine *engine, const UiOptions *opt, volatile int *stop_flag);
int Ui_runView(const char *log_path, const UiOptions *opt, volatile int *stop_flag);

#endif
