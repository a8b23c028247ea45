/* ui/columns.c: the scheduler table's columns (see columns.h). */
#include "ui/columns.h"

const TableColumn TABLE_COLUMNS[COL_N] = {
    {"", 1, false, SORT_COUNT},     {"ID", 3, true, SORT_ID},           {"Task", 0, false, SORT_COUNT},
    {"Wt", 3, true, SORT_COUNT},    {"Progress", 9, true, SORT_TRIALS}, {"Best", 8, true, SORT_SHARE},
    {"BestGF", 7, true, SORT_BEST}, {"Roof%", 6, true, SORT_COUNT},     {"CurGF", 7, true, SORT_COUNT},
    {"Err", 4, true, SORT_ERRORS},  {"State", 8, false, SORT_COUNT},    {"Pri", 3, true, SORT_COUNT},
};

/* Below this width the Roof% column takes the place of CurGF (the
 * current GFLOPS are in the curve), so the other columns keep their widths. */
#define ROOF_AND_CURRENT_COLS 100

void Table_columnWidths(int total, int *w) {
    int fixed = 0;
    for (int c = 0; c < COL_N; c++) {
        w[c] = TABLE_COLUMNS[c].width;
        if (total < ROOF_AND_CURRENT_COLS && c == COL_ROOF) w[c] = TABLE_COLUMNS[COL_CUR_GF].width;
        if (total < ROOF_AND_CURRENT_COLS && c == COL_CUR_GF) w[c] = -1; /* hidden: no cell, no separator */
        if (c != COL_TASK) fixed += w[c] + 1;
    }
    w[COL_TASK] = total - fixed - 1;
    if (w[COL_TASK] < 8) w[COL_TASK] = 8;
    if (w[COL_TASK] > 60) w[COL_TASK] = 60;
}

SortKey Table_sortKeyAt(Rect r, int x) {
    int w[COL_N];
    Table_columnWidths(r.w, w);
    int cx = r.x;
    for (int c = 0; c < COL_N; c++) {
        if (x >= cx && x < cx + w[c] + 1) return TABLE_COLUMNS[c].sort;
        cx += w[c] + 1;
    }
    return SORT_COUNT;
}
