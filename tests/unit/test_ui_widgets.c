/* Widgets rendered into cell buffers and compared as text: the header and
 * table, the curves (Braille and ASCII), the error inspector down to a
 * candidate's regenerated source with the failing line marked, the help
 * page generated from the key table, the key actions (steering through a
 * fake), the too-small screen and the bug report file. */
#include <math.h>
#include <unistd.h>

#include "tests/check.h"
#include "ui/keys.h"
#include "ui/widgets.h"

/* ---- a fake template whose source has a known line 3 ---------------------- */

static Status fake_generate(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                            Dialect dialect, KernelSource *out, char *err) {
    (void)wl, (void)space, (void)choice, (void)dev, (void)dialect, (void)err;
    out->source = strdup("#include <stddef.h>\nvoid k(float **a) {\n    int x = y;\n}\n");
    snprintf(out->entry, sizeof out->entry, "k");
    return TT_OK;
}

static const Template FAKE_TMPL = {.name = "fake.cpu", .op = OP_DENSE, .family = FAMILY_CPU, .generate = fake_generate};

/* ---- a fake steering target ----------------------------------------------- */

static char steer_log[512];
static bool steer_full; /* the fake engine's steering queue is full: it refuses every change */

static bool f_pause(void *c, int id, bool p) {
    (void)c;
    if (steer_full) return false;
    snprintf(steer_log + strlen(steer_log), sizeof steer_log - strlen(steer_log), "pause(%d,%d) ", id, p);
    return true;
}
static bool f_pause_all(void *c, bool p) {
    (void)c;
    if (steer_full) return false;
    snprintf(steer_log + strlen(steer_log), sizeof steer_log - strlen(steer_log), "all(%d) ", p);
    return true;
}
static bool f_prio(void *c, int id, int p) {
    (void)c;
    if (steer_full) return false;
    snprintf(steer_log + strlen(steer_log), sizeof steer_log - strlen(steer_log), "prio(%d,%d) ", id, p);
    return true;
}
static bool f_stop_task(void *c, int id) {
    (void)c;
    if (steer_full) return false;
    snprintf(steer_log + strlen(steer_log), sizeof steer_log - strlen(steer_log), "stop(%d) ", id);
    return true;
}
static void f_stop(void *c) {
    (void)c;
    snprintf(steer_log + strlen(steer_log), sizeof steer_log - strlen(steer_log), "quit ");
}
static const UiSteer FAKE_STEER = {f_pause, f_pause_all, f_prio, f_stop_task, f_stop};

static Task fake_task;

static void add(UiState *st, int ti, uint64_t index, int err, const char *msg, double gflops) {
    Record r;
    Record_init(&r);
    snprintf(r.task_key, sizeof r.task_key, "%s", st->model.tasks[ti].key);
    snprintf(r.config, sizeof r.config, "tile=[%llu,4]", (unsigned long long)index);
    r.index = index;
    if (err)
        Record_setError(&r, err, msg);
    else {
        r.n_costs = 1;
        r.costs[0] = st->model.tasks[ti].flops / gflops / 1e9;
    }
    UiModel_addRecord(&st->model, ti, &r, 0, gflops);
    Record_done(&r);
}

static void setup(UiState *st, bool live) {
    UiState_init(st);
    memset(&fake_task, 0, sizeof fake_task);
    fake_task.tmpl = &FAKE_TMPL;
    snprintf(fake_task.label, sizeof fake_task.label, "dense 1x512->1000");
    UiModel *m = &st->model;
    m->live = live;
    snprintf(m->target, sizeof m->target, "cpu");
    snprintf(m->device, sizeof m->device, "Test CPU (2 cores)");
    snprintf(m->tuner, sizeof m->tuner, "random");
    m->budget = 200;
    UiModel_addTask(m, 0, "conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3", "conv2d 56x56 64->64 3x3", 2.3e8, 2, NULL);
    UiModel_addTask(m, 1, "dense:m=1,n=1000,k=512", "dense 1x512->1000", 1.024e6, 1, &fake_task);
    UiModel_addTask(m, 2, "batch_matmul:b=12,m=128,n=128,k=64", "bmm 12x128x128x64", 2.5e7, 1, NULL);
    for (int i = 1; i <= 30; i++)
        add(st, 0, (uint64_t)i, 0, NULL, 10.0 + i * (i % 3));
    for (int i = 1; i <= 6; i++)
        add(st, 1, (uint64_t)(100 + i), 1, "shared memory 68 KiB > 48 KiB", 0);
    add(st, 1, 200, 2, "/tmp/tt/k200.c:3:13: error: 'y' undeclared (first use in this function)", 0);
    add(st, 1, 201, 0, NULL, 5.5);
    m->tasks[0].row.state = TASK_TUNING;
    m->tasks[0].row.allotted = 64;
    m->tasks[1].row.state = TASK_WAITING;
    m->tasks[2].row.state = TASK_QUEUED;
    m->trials = 38;
    m->elapsed_s = 75;
    m->trials_per_s = 0.5;
    m->measuring = 1;
    UiModel_addLatency(m, 1, 0.010);
    UiModel_addLatency(m, 30, 0.006);
    UiModel_addLatency(m, 70, 0.004);
    st->utf8 = true;
    st->dialect = DIALECT_C;
    st->have_dev = true;
    st->selected = 0;
    if (live) {
        st->steer = &FAKE_STEER;
        st->steer_ctx = NULL;
    }
    UiState_sort(st);
}

static char *screen(UiState *st, int w, int h) {
    CellBuf *cb = CellBuf_new(w, h);
    Screen_render(cb, st);
    char *d = CellBuf_dump(cb);
    CellBuf_delete(cb);
    if (getenv("TT_UI_SHOW")) fprintf(stderr, "---- %dx%d ----\n%s", w, h, d); /* to look at the frames */
    return d;
}

static bool has_braille(const char *s) {
    return strstr(s, "\xe2\xa0") || strstr(s, "\xe2\xa1") || strstr(s, "\xe2\xa2") || strstr(s, "\xe2\xa3");
}

TEST(main_screen_header_table_curves) {
    UiState st;
    setup(&st, true);
    char *d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "target cpu");
    CHECK_CONTAINS(d, "device Test CPU (2 cores)");
    CHECK_CONTAINS(d, "tuner random");
    CHECK_CONTAINS(d, "00:01:15");
    CHECK_CONTAINS(d, "Trials 38/200");
    CHECK_CONTAINS(d, "measuring task 0");
    CHECK_CONTAINS(d, "Est. total latency 4.000 ms (first estimate 10.00 ms, -60.0%)");
    CHECK_CONTAINS(d, "Progress");
    CHECK_CONTAINS(d, "> ");
    CHECK_CONTAINS(d, "conv2d 56x56 64->64 3x3");
    CHECK_CONTAINS(d, "30/64");
    CHECK_CONTAINS(d, "tuning");
    CHECK_CONTAINS(d, "queued");
    CHECK_CONTAINS(d, "GFLOPS per trial");
    CHECK_CONTAINS(d, "Est. total latency (ms) over time");
    CHECK(has_braille(d));
    /* the best GFLOPS of task 0: 10 + 29*2 = 68 */
    CHECK_CONTAINS(d, "68.00");
    /* task 1 row: 7 errors */
    char line[256];
    const char *row = strstr(d, "dense 1x512->1000");
    CHECK(row != NULL);
    if (row) {
        size_t n = strcspn(row, "\n");
        snprintf(line, sizeof line, "%.*s", (int)n, row);
        CHECK_CONTAINS(line, " 7 ");
        CHECK_CONTAINS(line, "waiting");
    }
    free(d);
    /* ASCII plots when the terminal is not UTF-8 */
    st.utf8 = false;
    d = screen(&st, 120, 40);
    CHECK(!has_braille(d));
    CHECK_CONTAINS(d, "*");
    CHECK_CONTAINS(d, "+----");
    free(d);
    UiState_done(&st);
}

TEST(every_size_renders_inside_and_small_says_so) {
    UiState st;
    setup(&st, true);
    for (int h = 24; h <= 62; h += 2)
        for (int w = 80; w <= 220; w += 7) {
            char *d = screen(&st, w, h);
            CHECK_CONTAINS(d, "Progress");
            CHECK_CONTAINS(d, "Help");
            free(d);
        }
    char *d = screen(&st, 79, 30);
    CHECK_CONTAINS(d, "terminal too small: need 80x24 (now 79x30)");
    free(d);
    d = screen(&st, 120, 10);
    CHECK_CONTAINS(d, "terminal too small: need 80x24");
    free(d);
    /* more tasks than rows: the table scrolls with the selection and says which rows it shows */
    for (int i = 3; i < 30; i++) {
        char key[32];
        snprintf(key, sizeof key, "dense:m=%d,n=8,k=8", i);
        UiModel_addTask(&st.model, i, key, key, 1e6, 1, NULL);
    }
    UiState_sort(&st); /* as the UI loop does after new tasks or events */
    UiKeys_handle(&st, UI_KEY_END);
    d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, "Task    23-30/30");
    CHECK_CONTAINS(d, "   29 dense:m=29,n=8,~");
    CHECK_CONTAINS(d, "Err State    Pri");
    free(d);
    UiKeys_handle(&st, UI_KEY_HOME);
    d = screen(&st, 5, 1); /* never crashes, even absurdly small */
    free(d);
    /* 80x24 has room for one curve: the task's, or with l the session's */
    d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, "GFLOPS per trial");
    CHECK(strstr(d, "over time") == NULL);
    free(d);
    UiKeys_handle(&st, 'l');
    d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, "Est. total latency (ms) over time");
    CHECK(strstr(d, "GFLOPS per trial") == NULL);
    free(d);
    UiState_done(&st);
}

TEST(inspector_groups_candidates_and_source) {
    UiState st;
    setup(&st, true);
    UiKeys_handle(&st, 'j'); /* select task 1 */
    CHECK_EQ_INT(st.selected, 1);
    CHECK(UiKeys_handle(&st, 'e') & REACT_RELAYOUT);
    char *d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "Errors of task 1 dense 1x512->1000: 7 failed of 8 trials");
    CHECK_CONTAINS(d, "      6  INSTANTIATION_ERROR  shared memory 68 KiB > 48 KiB");
    CHECK_CONTAINS(d, "      1  COMPILE_HOST         'y' undeclared (first use in this function)");
    free(d);
    UiKeys_handle(&st, UI_KEY_DOWN);
    UiKeys_handle(&st, UI_KEY_ENTER); /* the compile error group */
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "COMPILE_HOST: 'y' undeclared (first use in this function) (1)");
    CHECK_CONTAINS(d, "#200        tile=[200,4]");
    free(d);
    UiKeys_handle(&st, UI_KEY_ENTER); /* the candidate */
    CHECK_EQ_INT(st.insp.level, INSP_DETAIL);
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "Config #200: tile=[200,4]");
    CHECK_CONTAINS(d, "Error: COMPILE_HOST (2)");
    CHECK_CONTAINS(d, "/tmp/tt/k200.c:3:13: error: 'y' undeclared");
    CHECK_CONTAINS(d, ">>   3      int x = y;");
    CHECK_CONTAINS(d, "     2  void k(float **a) {");
    free(d);
    CHECK(st.insp.mark_line >= 0);
    /* the report file */
    char dir[] = "/tmp/tt_ui_test_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    st.report_dir = dir;
    UiKeys_handle(&st, 'w');
    CHECK_CONTAINS(st.status, "wrote ");
    char path[512];
    snprintf(path, sizeof path, "%s/tunetop-bug-task1-200.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        char buf[4096];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        CHECK_CONTAINS(buf, "Config #200: tile=[200,4]");
        CHECK_CONTAINS(buf, "'y' undeclared");
        CHECK_CONTAINS(buf, "    int x = y;");
        unlink(path);
    }
    rmdir(dir);
    /* back out level by level, then close */
    UiKeys_handle(&st, UI_KEY_ESC);
    CHECK_EQ_INT(st.insp.level, INSP_CANDIDATES);
    UiKeys_handle(&st, UI_KEY_ESC);
    CHECK_EQ_INT(st.insp.level, INSP_GROUPS);
    UiKeys_handle(&st, 'q'); /* q closes the panel first, it does not quit */
    CHECK_EQ_INT(st.view.overlay, OVERLAY_NONE);
    CHECK(!st.quit_requested);
    UiState_done(&st);
}

TEST(inspector_selection_follows_its_group_when_counts_change) {
    UiState st;
    setup(&st, true);
    UiKeys_handle(&st, 'j');
    UiKeys_handle(&st, 'e');
    UiKeys_handle(&st, UI_KEY_DOWN); /* the compile-error group, listed second */
    int g = st.insp.group;
    CHECK_EQ_INT(st.model.tasks[1].groups[g].error_no, 2);
    for (int i = 0; i < 8; i++)
        add(&st, 1, (uint64_t)(300 + i), 2, "/tmp/tt/k.c:3:13: error: 'y' undeclared (first use in this function)", 0);
    char *d = screen(&st, 120, 40);
    CHECK_EQ_INT(st.insp.group, g); /* still the same group, now listed first */
    CHECK_CONTAINS(d, "      9  COMPILE_HOST");
    free(d);
    UiKeys_handle(&st, UI_KEY_ENTER);
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "COMPILE_HOST: 'y' undeclared (first use in this function) (9)");
    free(d);
    UiState_done(&st);
}

TEST(inspector_wraps_long_configs) {
    UiState st;
    setup(&st, true);
    Record r;
    Record_init(&r);
    snprintf(r.config, sizeof r.config,
             "tile_f=[2,1,4,8] tile_y=[2,1,14,1] tile_x=[1,2,2,7] tile_rc=[2,16,2] tile_ry=[1,3,1] tile_rx=[1,1,3] "
             "auto_unroll_max_step=0 unroll_explicit=1");
    r.index = 27936371;
    Record_setError(&r, 1, "shared memory 96 KiB > 48 KiB");
    UiModel_addRecord(&st.model, 2, &r, 0, 0);
    Record_done(&r);
    UiKeys_handle(&st, 'j');
    UiKeys_handle(&st, 'j');
    UiKeys_handle(&st, 'e');
    UiKeys_handle(&st, UI_KEY_ENTER);
    UiKeys_handle(&st, UI_KEY_ENTER);
    char *d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, "Config #27936371: tile_f=[2,1,4,8] tile_y=[2,1,14,1] tile_x=[1,2,2,7]");
    CHECK_CONTAINS(d, "    tile_rc=[2,16,2] tile_ry=[1,3,1] tile_rx=[1,1,3] auto_unroll_max_step=0");
    CHECK_CONTAINS(d, "    unroll_explicit=1");
    free(d);
    UiState_done(&st);
}

TEST(inspector_without_template_says_why) {
    UiState st;
    setup(&st, true);
    add(&st, 0, 999, 4, "worker crashed: signal 11", 0);
    UiKeys_handle(&st, 'e');
    UiKeys_handle(&st, UI_KEY_ENTER);
    UiKeys_handle(&st, UI_KEY_ENTER);
    char *d = screen(&st, 100, 30);
    CHECK_CONTAINS(d, "worker crashed: signal 11");
    CHECK_CONTAINS(d, "cannot regenerate: no template");
    free(d);
    UiState_done(&st);
}

TEST(help_lists_every_key_of_the_table) {
    UiState st;
    setup(&st, true);
    UiKeys_handle(&st, '?');
    CHECK_EQ_INT(st.view.overlay, OVERLAY_HELP);
    char *d = screen(&st, 200, 60);
    int n;
    const UiKey *keys = UiKeys_table(&n);
    for (int i = 0; i < n; i++) {
        if (!keys[i].help) continue;
        CHECK_CONTAINS(d, keys[i].help);
    }
    CHECK_CONTAINS(d, "Current: GFLOPS of the last successful config of the");
    CHECK_CONTAINS(d, "Progress     a/b: a = trials measured");
    free(d);
    /* at 80x24 the page scrolls to its end */
    for (int i = 0; i < 80; i++)
        UiKeys_handle(&st, UI_KEY_DOWN);
    d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, "(earlier sessions of the log included, from LOG.tsv)");
    CHECK(strstr(d, "Keys") == NULL); /* scrolled past the top */
    free(d);
    UiKeys_handle(&st, '?');
    CHECK_EQ_INT(st.view.overlay, OVERLAY_NONE);
    UiState_done(&st);
}

TEST(steering_keys_call_the_engine_and_show_at_once) {
    UiState st;
    setup(&st, true);
    steer_log[0] = '\0';
    UiKeys_handle(&st, 'p');
    char *d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "pausing");
    free(d);
    /* the snapshot confirms: paused */
    st.model.tasks[0].row.state = TASK_PAUSED;
    st.model.tasks[0].row.user_paused = true;
    TaskRow rows[3];
    for (int i = 0; i < 3; i++)
        rows[i] = st.model.tasks[i].row;
    SessionSnapshot s = {.n_tasks = 3, .rows = rows, .est_latency_s = INFINITY, .budget = 200};
    UiModel_applySnapshot(&st.model, &s);
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "paused");
    free(d);
    UiKeys_handle(&st, 'p');
    UiKeys_handle(&st, '+');
    UiKeys_handle(&st, '+');
    UiKeys_handle(&st, 'j');
    UiKeys_handle(&st, '-');
    UiKeys_handle(&st, 's');
    CHECK_CONTAINS(st.status, "stop task 1 for good");
    UiKeys_handle(&st, 'n'); /* s asks first: any key but y says no */
    CHECK_CONTAINS(st.status, "nothing stopped");
    UiKeys_handle(&st, 's');
    UiKeys_handle(&st, 'y');
    UiKeys_handle(&st, 'P');
    CHECK_STR(steer_log, "pause(0,1) pause(0,0) prio(0,1) prio(0,2) prio(1,-1) stop(1) all(1) ");
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "stopping"); /* task 1, until the engine reports it stopped */
    free(d);
    st.model.tasks[1].row.state = TASK_STOPPED;
    for (int i = 0; i < 3; i++)
        rows[i] = st.model.tasks[i].row;
    UiModel_applySnapshot(&st.model, &s);
    CHECK(!st.model.tasks[1].want_stop);
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "+2");
    free(d);
    /* sorting by errors puts task 1 first */
    while (st.sort != SORT_ERRORS)
        UiKeys_handle(&st, 'o');
    CHECK_EQ_INT(st.order[0], 1);
    UiKeys_handle(&st, 'O');
    CHECK_EQ_INT(st.order[2], 1);
    /* q asks, then a graceful stop through the engine, the loop waits for it */
    int r = UiKeys_handle(&st, 'q');
    CHECK(!st.stopping);
    CHECK_CONTAINS(st.status, "stop the session and quit");
    d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, "stop the session and quit? y/q: quit (the same command resumes), other key: no");
    free(d);
    CHECK(!UiState_expireStatus(&st, st.status_wall + 60)); /* a question waits for its answer */
    UiKeys_handle(&st, 'x');
    CHECK(!st.stopping);
    UiKeys_handle(&st, 'q');
    r = UiKeys_handle(&st, 'y');
    CHECK(!(r & REACT_QUIT));
    CHECK(st.stopping);
    CHECK_CONTAINS(steer_log, "quit");
    d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, "stopping...");
    free(d);
    UiState_done(&st);
}

/* A change the engine's full steering queue refused is said, and the view keeps the engine's state. */
TEST(full_steering_queue_is_reported_not_dropped) {
    UiState st;
    setup(&st, true);
    steer_log[0] = '\0';
    steer_full = true;
    int prio = st.model.tasks[0].row.priority;
    int want_paused = st.model.tasks[0].want_paused; /* -1: no request pending */
    bool want_stop = st.model.tasks[0].want_stop;
    UiKeys_handle(&st, 'p');
    CHECK_CONTAINS(st.status, "steering queue is full: 1 change not made (pause)");
    CHECK_EQ_INT(st.model.tasks[0].want_paused, -1);
    CHECK_EQ_INT(want_paused, -1);
    UiKeys_handle(&st, '+');
    CHECK_CONTAINS(st.status, "steering queue is full: 1 change not made (priority)");
    CHECK_EQ_INT(st.model.tasks[0].row.priority, prio);
    UiKeys_handle(&st, 'P');
    CHECK_CONTAINS(st.status, "steering queue is full: 1 change not made (pause all)");
    CHECK_EQ_INT(st.model.want_all_paused, -1);
    UiKeys_handle(&st, 's');
    UiKeys_handle(&st, 'y');
    CHECK_CONTAINS(st.status, "steering queue is full: 1 change not made (stop)");
    CHECK_EQ_INT(st.model.tasks[0].want_stop, want_stop);
    CHECK_STR(steer_log, "");
    /* room again: the same key works */
    steer_full = false;
    UiKeys_handle(&st, 'p');
    CHECK_CONTAINS(st.status, "pausing");
    CHECK_STR(steer_log, "pause(0,1) ");
    UiState_done(&st);
}

TEST(view_mode_is_read_only) {
    UiState st;
    setup(&st, false);
    UiKeys_handle(&st, 'p');
    CHECK_CONTAINS(st.status, "read-only view");
    char *d = screen(&st, 120, 40);
    CHECK(strstr(d, "Pause") == NULL); /* no steering keys in the key bar */
    CHECK_CONTAINS(d, "Errors");
    free(d);
    CHECK(UiKeys_handle(&st, 'q') & REACT_QUIT);
    UiState_done(&st);
}

TEST(plot_scales_and_labels_axes) {
    CellBuf *cb = CellBuf_new(40, 12);
    double x[3] = {1, 2, 3}, y[3] = {10, 20, 40};
    PlotSeries s = {x, y, 3, true, false, ATTR_SERIES1};
    PlotSpec spec = {.title = "T", .xlabel = "trial", .y_from_zero = true, .braille = false};
    Plot_render(cb, (Rect){0, 0, 40, 12}, &spec, &s, 1);
    char *d = CellBuf_dump(cb);
    CHECK_CONTAINS(d, "     50|"); /* nice ceiling of 40 */
    CHECK_CONTAINS(d, "      0|");
    CHECK_CONTAINS(d, "trial");
    /* the line reaches the top-right region: the last point (3, 40) is at 80% of 50 */
    char row[128];
    CellBuf_row(cb, 3, row, sizeof row);
    CHECK(strchr(row, '*') != NULL);
    free(d);
    CellBuf_clear(cb);
    spec.empty = "nothing here";
    Plot_render(cb, (Rect){0, 0, 40, 12}, &spec, NULL, 0);
    d = CellBuf_dump(cb);
    CHECK_CONTAINS(d, "nothing here");
    free(d);
    CellBuf_delete(cb);
}

/* issue 13, defect 8: at 80x24 the ResNet-18 conv2d tasks read differently */
TEST(short_labels_tell_tasks_apart) {
    const char *r18[] = {"conv2d 224x224 3->64 7x7 s2",
                         "conv2d 56x56 64->64 3x3",
                         "conv2d 56x56 64->64 1x1",
                         "conv2d 56x56 64->128 3x3 s2",
                         "conv2d 28x28 128->128 3x3",
                         "conv2d 56x56 64->128 1x1 s2",
                         "conv2d 28x28 128->256 3x3 s2",
                         "conv2d 14x14 256->256 3x3",
                         "conv2d 28x28 128->256 1x1 s2",
                         "conv2d 14x14 256->512 3x3 s2",
                         "conv2d 7x7 512->512 3x3",
                         "conv2d 14x14 256->512 1x1 s2",
                         "dense 1x512->1000"};
    char out[13][UI_LABEL_MAX];
    for (int w = 8; w <= 30; w++) {
        int d = Ui_shortLabels(r18, 13, w, out);
        for (int i = 0; i < 13; i++)
            CHECK((int)strlen(out[i]) <= w);
        if (w >= 10) CHECK_EQ_INT(d, 13);
    }
    /* the 80-column width: every number kept, as few words shortened as the width needs */
    Ui_shortLabels(r18, 13, 16, out);
    CHECK_STR(out[1], "56x56 64>64 3x3");
    CHECK_STR(out[5], "56 64>128 1x1 s2");
    CHECK_STR(out[0], "224 3>64 7x7 s2");
    CHECK_STR(out[12], "fc 1x512>1000");
    /* a table at 80x24 shows them so */
    UiState st;
    UiState_init(&st);
    st.model.live = true;
    for (int i = 0; i < 13; i++)
        UiModel_addTask(&st.model, i, r18[i], r18[i], 1e9, 1, NULL);
    UiState_sort(&st);
    st.view.curves = false;
    char *d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, " 9 14 256>512 3x3s2 ");
    CHECK_CONTAINS(d, "10 7x7 512>512 3x3 ");
    free(d);
    UiState_done(&st);
}

/* issue 13: the htop / nvtop / btop habits, without a terminal */
TEST(filter_tags_messages_mouse_and_header_marks) {
    UiState st;
    setup(&st, true);
    steer_log[0] = '\0';
    /* / filters by part of a label, key or an ID; Enter keeps, Esc clears */
    UiKeys_handle(&st, '/');
    CHECK(st.filter_editing);
    UiKeys_handle(&st, 'b');
    UiKeys_handle(&st, 'm');
    UiKeys_handle(&st, 'm');
    UiKeys_handle(&st, UI_KEY_ENTER);
    CHECK_EQ_INT(st.n_order, 1);
    CHECK_EQ_INT(st.order[0], 2);
    CHECK_EQ_INT(st.selected, 2); /* the selection moves to a shown task */
    char *d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "/bmm");
    CHECK(strstr(d, "dense 1x512->1000") == NULL);
    free(d);
    UiKeys_handle(&st, UI_KEY_F3);
    UiKeys_handle(&st, UI_KEY_ESC);
    CHECK_EQ_INT(st.n_order, 3);
    /* Space tags and moves down; p + s act on every tagged task */
    UiKeys_handle(&st, UI_KEY_HOME);
    UiKeys_handle(&st, ' ');
    UiKeys_handle(&st, UI_KEY_DOWN);
    UiKeys_handle(&st, ' ');
    CHECK_EQ_INT(UiState_taggedCount(&st), 2);
    CHECK(st.model.tasks[0].tagged && st.model.tasks[2].tagged);
    UiKeys_handle(&st, 'p');
    UiKeys_handle(&st, '+');
    UiKeys_handle(&st, 's');
    CHECK_CONTAINS(st.status, "stop 2 tagged tasks for good");
    UiKeys_handle(&st, 'y');
    CHECK_STR(steer_log, "pause(0,1) pause(2,1) prio(0,1) prio(2,1) stop(0) stop(2) ");
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "Tasks 0, 2: best GFLOPS so far");
    CHECK_CONTAINS(d, "*   0 conv2d");
    free(d);
    /* x: wall time on the x axis, L: log y */
    UiKeys_handle(&st, 'x');
    UiKeys_handle(&st, 'L');
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "seconds since the first record");
    CHECK_CONTAINS(d, "best GFLOPS so far (log)");
    CHECK_CONTAINS(d, "Est. total latency (ms, log) over time");
    free(d);
    UiKeys_handle(&st, 'U');
    CHECK_EQ_INT(UiState_taggedCount(&st), 0);
    /* m: every status message with its time */
    UiKeys_handle(&st, 'm');
    CHECK_EQ_INT(st.view.overlay, OVERLAY_MESSAGES);
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "Messages (");
    CHECK_CONTAINS(d, "tagged task 0; 1 tagged");
    CHECK_CONTAINS(d, "stopping 2 tagged tasks");
    CHECK_CONTAINS(d, ":"); /* HH:MM:SS before each */
    free(d);
    UiKeys_handle(&st, 'm');
    /* long messages wrap under their time at 80 columns */
    UiState_setStatus(&st, ATTR_NORMAL,
                      "resumed x.log: 60 measured configs of 12 tasks restored; task 0: 4 trials, "
                      "best 8.92 GFLOPS; task 1: 4 trials, best 9.90 GFLOPS TAILWORD");
    UiKeys_handle(&st, 'm');
    d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, "TAILWORD");
    free(d);
    UiKeys_handle(&st, 'm');
    /* the mouse: a click on a row selects it, on a title sorts, the wheel scrolls */
    d = screen(&st, 120, 40); /* lays the table out */
    free(d);
    Rect t = st.table_rect;
    st.mouse_button = UI_MOUSE_CLICK;
    st.mouse_x = t.x + 10;
    st.mouse_y = t.y + 2; /* the second row */
    UiKeys_handle(&st, UI_KEY_MOUSE);
    CHECK_EQ_INT(st.selected, st.order[1]);
    st.mouse_y = t.y; /* the title line, over "Err" */
    d = screen(&st, 120, 40);
    const char *line = d;
    for (int y = 0; y < t.y; y++)
        line = strchr(line, '\n') + 1;
    const char *err_col = strstr(line, "Err");
    CHECK(err_col != NULL);
    st.mouse_x = (int)(err_col - line);
    free(d);
    UiKeys_handle(&st, UI_KEY_MOUSE);
    CHECK_EQ_INT(st.sort, SORT_ERRORS);
    st.mouse_button = UI_MOUSE_WHEEL_DOWN;
    UiKeys_handle(&st, UI_KEY_MOUSE);
    CHECK_EQ_INT(UiState_selectedPos(&st), 2);
    /* the header: PAUSED while every task is, tasks left out of the estimate, the ETA */
    st.model.all_paused = true;
    st.model.active_s = st.model.elapsed_s; /* it ran all the time until now */
    st.model.est_left_out = 1;
    st.model.est_latency_s = 0.004;
    d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "tunetop  PAUSED");
    CHECK_CONTAINS(d, "[1 task left out: no result]");
    CHECK_CONTAINS(d, "ETA 00:05:24 (paused)"); /* (200 - 38) / 0.5 s */
    free(d);
    UiState_done(&st);
}

/* issue 13, defect 9: long lines of a candidate's page scroll sideways at 80 columns */
TEST(inspector_scrolls_long_lines) {
    UiState st;
    setup(&st, true);
    char msg[400];
    snprintf(msg, sizeof msg, "k.c:1:1: error: %0300d ENDMARK", 7);
    add(&st, 0, 998, 2, msg, 0);
    UiKeys_handle(&st, 'e');
    UiKeys_handle(&st, UI_KEY_ENTER);
    UiKeys_handle(&st, UI_KEY_ENTER);
    CHECK_EQ_INT(st.insp.level, INSP_DETAIL);
    char *d = screen(&st, 80, 24);
    CHECK(strstr(d, "ENDMARK") == NULL);
    CHECK_CONTAINS(d, "column 1 ");
    free(d);
    /* Right scrolls 8 columns at a time: the end of the line comes into view */
    bool seen = false;
    for (int i = 0; i < 60 && !seen; i++) {
        UiKeys_handle(&st, UI_KEY_RIGHT);
        d = screen(&st, 80, 24);
        seen = strstr(d, "ENDMARK") != NULL;
        free(d);
    }
    CHECK(seen);
    CHECK(st.insp.hscroll >= 240);
    while (st.insp.hscroll > 0)
        UiKeys_handle(&st, UI_KEY_LEFT);
    CHECK_EQ_INT(st.insp.level, INSP_DETAIL); /* Left scrolled back before going back */
    UiKeys_handle(&st, UI_KEY_LEFT);
    CHECK_EQ_INT(st.insp.level, INSP_CANDIDATES);
    UiState_done(&st);
}

TEST(key_table_is_consistent) {
    int n;
    const UiKey *keys = UiKeys_table(&n);
    CHECK(n > 10);
    for (int i = 0; i < n; i++) {
        CHECK(keys[i].action != NULL);
        for (int j = i + 1; j < n; j++)
            if (keys[i].key == keys[j].key) {
                fprintf(stderr, "key %d bound twice\n", keys[i].key);
                CHECK(false);
            }
        /* the first entry of each action documents it */
        bool first = true;
        for (int j = 0; j < i; j++)
            if (keys[j].action == keys[i].action) first = false;
        if (first) CHECK(keys[i].name && keys[i].help);
        if (keys[i].bar) CHECK(keys[i].name != NULL);
    }
    UiState st;
    setup(&st, true);
    CHECK_EQ_INT(UiKeys_handle(&st, 'Z'), REACT_NONE); /* unbound */
    UiState_done(&st);
}

TEST(strategy_line_of_the_selected_task) {
    UiState st;
    setup(&st, true);
    snprintf(st.model.tasks[0].strategy, sizeof st.model.tasks[0].strategy, "model: 320 pts, rank corr 0.71");
    char *d = screen(&st, 160, 40);
    CHECK_CONTAINS(d, "task 0 search model: 320 pts, rank corr 0.71");
    free(d);
    UiKeys_handle(&st, 'j');
    d = screen(&st, 160, 40);
    CHECK(strstr(d, "rank corr") == NULL);
    free(d);
    UiState_done(&st);
}

TEST(latency_curve_goes_log_when_it_falls_far) {
    UiState st;
    setup(&st, true);
    UiModel_addLatency(&st.model, 80, 0.0002); /* 10 ms -> 0.2 ms: 50x */
    char *d = screen(&st, 120, 40);
    CHECK_CONTAINS(d, "Est. total latency (ms, log) over time");
    CHECK_CONTAINS(d, "  0.164"); /* bottom label: 0.2 ms less padding (in log space), in ms */
    free(d);
    UiState_done(&st);
}

/* The roofline in the table (Roof% of the best, a warning above 100, never
 * clamped; at narrow widths in CurGF's place), the state "at roof", the roof
 * in the task curve's title and the lower bound in the header. */
/* The table row of task `id` (its line starts with the mark column, then the ID). */
static const char *row_of(const char *screen, int id, char *line, size_t n) {
    for (const char *p = screen; *p;) {
        size_t len = strcspn(p, "\n");
        int got = -1, used = 0;
        if (len > 2 && (p[0] == ' ' || p[0] == '>' || p[0] == '*') && sscanf(p + 1, "%d%n", &got, &used) == 1 &&
            got == id && strstr(p, "Task") != p && p[1] == ' ') {
            snprintf(line, n, "%.*s", (int)len, p);
            return line;
        }
        p += len;
        if (*p) p++;
    }
    return NULL;
}

TEST(roof_column_and_line) {
    UiState st;
    setup(&st, true);
    UiModel *m = &st.model;
    m->tasks[0].row.roof_gflops = 80; /* best 68: 85% */
    m->tasks[1].row.roof_gflops = 5;  /* best 5.5: 110%, a warning */
    m->tasks[1].row.roof_bound = ROOF_LEVEL_DRAM;
    m->tasks[1].row.state = TASK_AT_ROOF;
    m->tasks[2].row.roof_gflops = 100; /* no best yet */
    char line[512];
    for (int wide = 0; wide < 2; wide++) {
        char *d = wide ? screen(&st, 200, 60) : screen(&st, 80, 24);
        CHECK_CONTAINS(d, " Roof%");
        if (wide)
            CHECK_CONTAINS(d, "CurGF");
        else
            CHECK(strstr(d, "CurGF") == NULL);
        CHECK(row_of(d, 0, line, sizeof line) != NULL);
        CHECK_CONTAINS(line, " 85 ");
        CHECK(row_of(d, 1, line, sizeof line) != NULL);
        CHECK_CONTAINS(line, " 110! ");
        CHECK_CONTAINS(line, "at roof");
        CHECK(row_of(d, 2, line, sizeof line) != NULL);
        CHECK(strstr(line, "%") == NULL);
        /* the lower bound: 2 x 2.3e8 / 80e9 + 1.024e6 / 5e9 + 2.5e7 / 100e9 = 6.2 ms */
        CHECK_CONTAINS(d, "-60.0%)   at roof 6.205 ms");
        CHECK_CONTAINS(d, "roof 80 compute");
        free(d);
    }
    /* the roof is drawn inside the plot: it sets the top of the y axis */
    st.selected = 1;
    char *d = screen(&st, 200, 60);
    CHECK_CONTAINS(d, "roof 5 memory");
    free(d);
    UiState_done(&st);
}

/* a status line goes after a while, or when another task is selected; the message log keeps it */
TEST(status_lines_expire) {
    UiState st;
    setup(&st, true);
    UiState_setStatus(&st, ATTR_NORMAL, "task 0 paused");
    CHECK(!UiState_expireStatus(&st, st.status_wall + 1));
    CHECK_CONTAINS(st.status, "task 0 paused");
    CHECK(UiState_expireStatus(&st, st.status_wall + UI_STATUS_TTL_S + 1));
    CHECK(st.status[0] == '\0');
    char *d = screen(&st, 80, 24);
    CHECK_CONTAINS(d, "Press ? for help");
    free(d);
    UiKeys_handle(&st, ' '); /* tags the task and moves on: its message stays */
    CHECK_CONTAINS(st.status, "tagged");
    CHECK(!UiState_expireStatus(&st, st.status_wall + 1));
    UiState_setStatus(&st, ATTR_NORMAL, "about this task");
    UiKeys_handle(&st, UI_KEY_DOWN); /* another task's page */
    CHECK(UiState_expireStatus(&st, st.status_wall));
    CHECK(st.n_msgs >= 2);
    CHECK_CONTAINS(st.msgs[st.n_msgs - 1].text, "about this task");
    UiState_done(&st);
}

int main(void) {
    RUN(latency_curve_goes_log_when_it_falls_far);
    RUN(key_table_is_consistent);
    RUN(strategy_line_of_the_selected_task);
    RUN(main_screen_header_table_curves);
    RUN(every_size_renders_inside_and_small_says_so);
    RUN(inspector_groups_candidates_and_source);
    RUN(inspector_selection_follows_its_group_when_counts_change);
    RUN(inspector_wraps_long_configs);
    RUN(inspector_without_template_says_why);
    RUN(help_lists_every_key_of_the_table);
    RUN(steering_keys_call_the_engine_and_show_at_once);
    RUN(full_steering_queue_is_reported_not_dropped);
    RUN(view_mode_is_read_only);
    RUN(short_labels_tell_tasks_apart);
    RUN(filter_tags_messages_mouse_and_header_marks);
    RUN(inspector_scrolls_long_lines);
    RUN(plot_scales_and_labels_axes);
    RUN(roof_column_and_line);
    RUN(status_lines_expire);
    return check_summary();
}
