/* ui/columns.h: the columns of the scheduler table (title, width, alignment,
 * the sort key each shows) and where they fall at a width. The table widget
 * draws them (widgets.c); the key handler finds the column under a mouse click
 * (keys.c) without knowing how the table is drawn. */
#ifndef TT_UI_COLUMNS_H
#define TT_UI_COLUMNS_H

#include <stdbool.h>

#include "ui/cellbuf.h"
#include "ui/state.h"

typedef struct TableColumn {
    const char *title;
    int width;
    bool right;   /* right-aligned */
    SortKey sort; /* the sort key it shows, or SORT_COUNT */
} TableColumn;

enum {
    COL_MARK,
    COL_ID,
    COL_TASK,
    COL_WEIGHT,
    COL_TRIALS,
    COL_BEST_MS,
    COL_BEST_GF,
    COL_ROOF,
    COL_CUR_GF,
    COL_ERR,
    COL_STATE,
    COL_PRI,
    COL_N
};

extern const TableColumn TABLE_COLUMNS[COL_N];

/* The width of each column (-1: hidden) of a table `total` cells wide. */
void Table_columnWidths(int total, int *w);
/* The sort key of the column title at x in a table drawn in r (SORT_COUNT: none). */
SortKey Table_sortKeyAt(Rect r, int x);

#endif
