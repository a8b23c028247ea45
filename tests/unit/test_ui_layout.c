/* Layout over a sweep of terminal sizes and views: every panel inside the
 * screen, no two overlapping, none empty, and the too-small case below 80x24. */
#include "tests/check.h"
#include "ui/layout.h"

static void check_layout(int rows, int cols, const LayoutView *v) {
    ScreenLayout l;
    ScreenLayout_compute(rows, cols, v, &l);
    if (rows < LAYOUT_MIN_ROWS || cols < LAYOUT_MIN_COLS) {
        CHECK(l.too_small);
        return;
    }
    CHECK(!l.too_small);
    Rect r[8];
    int n = ScreenLayout_rects(&l, r);
    for (int i = 0; i < n; i++) {
        if (!Rect_inside(r[i], rows, cols)) {
            fprintf(stderr, "outside at %dx%d: rect %d {%d,%d,%d,%d}\n", cols, rows, i, r[i].x, r[i].y, r[i].w, r[i].h);
            CHECK(false);
        }
        for (int j = i + 1; j < n; j++)
            if (Rect_overlaps(r[i], r[j])) {
                fprintf(stderr, "overlap at %dx%d: %d and %d\n", cols, rows, i, j);
                CHECK(false);
            }
    }
    /* the always-present panels */
    CHECK(!Rect_empty(l.header) && !Rect_empty(l.status) && !Rect_empty(l.keybar));
    CHECK_EQ_INT(l.keybar.y, rows - 1);
    CHECK_EQ_INT(l.header.h, LAYOUT_HEADER_ROWS + v->header_extra); /* the search's status lines */
    if (v->overlay != OVERLAY_NONE) {
        CHECK(!Rect_empty(l.overlay));
        CHECK(Rect_empty(l.table));
        CHECK(l.overlay.h >= LAYOUT_MIN_ROWS - 5 - v->header_extra);
    } else {
        CHECK(!Rect_empty(l.table));
        CHECK(l.table.h >= 4); /* column titles + at least 3 rows */
        if (v->curves) {
            CHECK(!Rect_empty(l.task_curve));
            CHECK(l.task_curve.h >= 6 && l.task_curve.w >= 40);
        } else {
            CHECK(Rect_empty(l.task_curve) && Rect_empty(l.session_curve));
        }
    }
    /* everything between header and status is used: no stray gap rows */
    int used = 0;
    for (int i = 0; i < n; i++)
        used += r[i].w * r[i].h;
    CHECK_EQ_INT(used, rows * cols);
}

TEST(sweep_sizes_and_views) {
    const int task_counts[] = {0, 1, 2, 12, 40, 200};
    for (int rows = 10; rows <= 80; rows++)
        for (int cols = 40; cols <= 260; cols += 3)
            for (int curves = 0; curves < 2; curves++)
                for (int ov = 0; ov < 3; ov++)
                    for (int tc = 0; tc < 6; tc++)
                        for (int extra = 0; extra <= LAYOUT_HEADER_EXTRA_MAX; extra++) {
                            LayoutView v = {curves, (Overlay)ov, task_counts[tc], extra};
                            check_layout(rows, cols, &v);
                        }
}

TEST(too_small_below_80x24) {
    LayoutView v = {true, OVERLAY_NONE, 3, 0};
    ScreenLayout l;
    ScreenLayout_compute(23, 120, &v, &l);
    CHECK(l.too_small);
    ScreenLayout_compute(40, 79, &v, &l);
    CHECK(l.too_small);
    ScreenLayout_compute(24, 80, &v, &l);
    CHECK(!l.too_small);
    ScreenLayout_compute(0, 0, &v, &l);
    CHECK(l.too_small);
    CHECK(Rect_empty(l.message));
}

TEST(wide_terminals_put_curves_side_by_side) {
    LayoutView v = {true, OVERLAY_NONE, 5, 0};
    ScreenLayout l;
    ScreenLayout_compute(60, 200, &v, &l);
    CHECK(!Rect_empty(l.session_curve));
    CHECK_EQ_INT(l.task_curve.y, l.session_curve.y);
    CHECK_EQ_INT(l.table.h, 6); /* exactly what five rows need: the rest goes to the curves */
    ScreenLayout_compute(24, 80, &v, &l);
    CHECK(l.task_curve.w == 80);
}

int main(void) {
    RUN(sweep_sizes_and_views);
    RUN(too_small_below_80x24);
    RUN(wide_terminals_put_curves_side_by_side);
    return check_summary();
}
