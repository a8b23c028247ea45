/* The cell buffer: clipping, UTF-8 in and out, boxes, painting. */
#include "tests/check.h"
#include "ui/cellbuf.h"

TEST(text_is_clipped_to_buffer_and_clip_rect) {
    CellBuf *cb = CellBuf_new(10, 3);
    char row[64];
    CHECK_EQ_INT(CellBuf_text(cb, 7, 0, "abcdef", ATTR_NORMAL, -1), 3);
    CHECK_STR(CellBuf_row(cb, 0, row, sizeof row), "       abc");
    CellBuf_clip(cb, (Rect){2, 1, 3, 1});
    CellBuf_text(cb, 0, 1, "0123456789", ATTR_BEST, -1);
    CellBuf_text(cb, 0, 2, "zzz", ATTR_BEST, -1); /* outside the clip: dropped */
    CHECK_STR(CellBuf_row(cb, 1, row, sizeof row), "  234");
    CHECK_STR(CellBuf_row(cb, 2, row, sizeof row), "");
    CHECK_EQ_INT(CellBuf_at(cb, 2, 1)->attr, ATTR_BEST);
    CHECK(CellBuf_at(cb, 10, 0) == NULL);
    CellBuf_unclip(cb);
    CellBuf_put(cb, -1, 0, 'x', ATTR_NORMAL);
    CellBuf_put(cb, 0, 5, 'x', ATTR_NORMAL);
    CellBuf_delete(cb);
}

TEST(utf8_round_trip_and_control_chars) {
    CellBuf *cb = CellBuf_new(8, 1);
    char row[64];
    CHECK_EQ_INT(CellBuf_text(cb, 0, 0,
                              "a\xe2\xa3\xbf"
                              "b\x01",
                              ATTR_NORMAL, -1),
                 4);
    CHECK_EQ_INT(CellBuf_at(cb, 1, 0)->ch, 0x28FF);
    CHECK_STR(CellBuf_row(cb, 0, row, sizeof row), "a\xe2\xa3\xbf"
                                                   "b?");
    /* a lone continuation byte is not swallowed with what follows */
    CellBuf_clear(cb);
    CellBuf_text(cb, 0, 0, "\x80xy", ATTR_NORMAL, -1);
    CHECK_STR(CellBuf_row(cb, 0, row, sizeof row), "?xy");
    CellBuf_delete(cb);
}

TEST(box_title_and_paint) {
    CellBuf *cb = CellBuf_new(12, 3);
    CellBuf_box(cb, (Rect){0, 0, 12, 3}, "Title", false);
    char *d = CellBuf_dump(cb);
    CHECK_STR(d, "+ Title ---+\n|          |\n+----------+\n");
    free(d);
    CellBuf_paint(cb, (Rect){0, 1, 12, 1}, ATTR_SELECTED);
    CHECK_EQ_INT(CellBuf_at(cb, 5, 1)->attr, ATTR_SELECTED);
    CHECK_EQ_INT(CellBuf_at(cb, 5, 1)->ch, ' ');
    CellBuf_resize(cb, 0, 0);
    d = CellBuf_dump(cb);
    CHECK_STR(d, "");
    free(d);
    CellBuf_delete(cb);
}

int main(void) {
    RUN(text_is_clipped_to_buffer_and_clip_rect);
    RUN(utf8_round_trip_and_control_chars);
    RUN(box_title_and_paint);
    return check_summary();
}
