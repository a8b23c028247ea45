/* ui/panels.h: the overlays of the terminal UI (panels.c): the error
 * inspector, the message log, the devices view and the help page, which is
 * generated from the key table (keys.h). Screen_render (widgets.h) draws the
 * one that is open. */
#ifndef TT_UI_PANELS_H
#define TT_UI_PANELS_H

#include "ui/cellbuf.h"
#include "ui/state.h"

/* Also keeps the inspector's list scroll positions in range. */
void InspectorPanel_render(CellBuf *cb, Rect r, UiState *st);
void MessageLog_render(CellBuf *cb, Rect r, UiState *st);
/* The devices view: rank, host, device, state, candidates/s, errors, last heard from. */
void Devices_render(CellBuf *cb, Rect r, const UiState *st);
/* The help page: the key table (keys.h), then the columns and the views. */
void Help_render(CellBuf *cb, Rect r, UiState *st);

#endif
