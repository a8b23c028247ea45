/* The UI model: error reasons and failing lines, grouping, best so far,
 * snapshots, the latency series and the session estimate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/check.h"
#include "ui/model.h"

static void make_record(Record *r, const char *key, uint64_t index, int error_no, const char *msg, double cost) {
    Record_init(r);
    snprintf(r->task_key, sizeof r->task_key, "%s", key);
    snprintf(r->template_name, sizeof r->template_name, "dense.cpu");
    snprintf(r->target, sizeof r->target, "cpu");
    r->index = index;
    snprintf(r->config, sizeof r->config, "tile=[%llu]", (unsigned long long)index);
    if (error_no)
        Record_setError(r, error_no, msg);
    else {
        r->n_costs = 1;
        r->costs[0] = cost;
    }
}

TEST(error_reason_picks_the_error_line_without_location) {
    char out[UI_REASON_LEN];
    Ui_errorReason("shared memory 68 KiB > 48 KiB", out, sizeof out);
    CHECK_STR(out, "shared memory 68 KiB > 48 KiB");
    Ui_errorReason("In function 'k':\n/tmp/w/k12.c:34:5: error: 'x' undeclared\n   34 | x = 1;\n", out, sizeof out);
    CHECK_STR(out, "'x' undeclared");
    Ui_errorReason("default_program(34): error: identifier \"foo\" is undefined", out, sizeof out);
    CHECK_STR(out, "identifier \"foo\" is undefined");
    Ui_errorReason("\n\n  worker crashed: signal 11 (SIGSEGV)\n", out, sizeof out);
    CHECK_STR(out, "worker crashed: signal 11 (SIGSEGV)");
    Ui_errorReason(NULL, out, sizeof out);
    CHECK_STR(out, "(no message)");
    char small[8];
    Ui_errorReason("a very long reason indeed", small, sizeof small);
    CHECK_STR(small, "a very ");
}

TEST(reason_shape_takes_numbers_out_of_the_reason) {
    char key[UI_REASON_LEN];
    double nums[8];
    CHECK_EQ_INT(Ui_reasonShape("shared memory 68 KiB > 48 KiB", key, sizeof key, nums, 8), 2);
    CHECK_STR(key, "shared memory # KiB > # KiB");
    CHECK_NEAR(nums[0], 68, 0);
    CHECK_NEAR(nums[1], 48, 0);
    CHECK_EQ_INT(Ui_reasonShape("sm_80: k12.c needs 1.5 ms", key, sizeof key, nums, 8), 1);
    CHECK_STR(key, "sm_80: k12.c needs # ms");
    CHECK_NEAR(nums[0], 1.5, 1e-12);
    /* a tile "4x8" is two numbers, a name glued to digits stays literal */
    CHECK_EQ_INT(Ui_reasonShape("3x3 tile 12abc", key, sizeof key, nums, 8), 2);
    CHECK_STR(key, "#x# tile 12abc");
    CHECK_EQ_INT(Ui_reasonShape("register tile 4x8 needs 36 vector registers > 32", key, sizeof key, nums, 8), 4);
    CHECK_STR(key, "register tile #x# needs # vector registers > #");
    CHECK_NEAR(nums[1], 8, 0);
}

TEST(groups_merge_reasons_that_differ_in_numbers) {
    UiModel m;
    UiModel_init(&m);
    int ti = UiModel_addTask(&m, 0, "k", "k", 1, 1, NULL);
    const char *msgs[] = {"shared memory 96 KiB > 48 KiB", "shared memory 54 KiB > 48 KiB",
                          "threads per block 1568 > 1024 (784 threads x 2 virtual threads)",
                          "shared memory 264 KiB > 48 KiB", "shared memory 54 KiB > 48 KiB"};
    for (int i = 0; i < 5; i++) {
        Record r;
        make_record(&r, "k", (uint64_t)i, 1, msgs[i], 0);
        UiModel_addRecord(&m, ti, &r, 0, 0);
        Record_done(&r);
    }
    UiTask *t = &m.tasks[ti];
    CHECK_EQ_INT(t->n_groups, 2);
    CHECK_EQ_INT(t->groups[0].count, 4);
    CHECK_STR(t->groups[0].reason, "shared memory 54-264 KiB > 48 KiB");
    CHECK_STR(t->groups[1].reason, "threads per block 1568 > 1024 (784 threads x 2 virtual threads)");
    /* each member keeps its own full message */
    CHECK_STR(t->fails[t->groups[0].members[1]].error_msg, "shared memory 54 KiB > 48 KiB");
    UiModel_done(&m);
}

/* issue 13, defect 9: one cause with different tile shapes was 11 groups */
TEST(register_tile_reasons_are_one_group) {
    UiModel m;
    UiModel_init(&m);
    int ti = UiModel_addTask(&m, 0, "k", "k", 1, 1, NULL);
    const int tiles[][3] = {{4, 8, 36}, {8, 4, 40}, {2, 16, 34}, {6, 8, 52}, {8, 8, 68}};
    for (int i = 0; i < 5; i++) {
        char msg[128];
        snprintf(msg, sizeof msg, "register tile %dx%d needs %d vector registers > 32", tiles[i][0], tiles[i][1],
                 tiles[i][2]);
        Record r;
        make_record(&r, "k", (uint64_t)i, 1, msg, 0);
        UiModel_addRecord(&m, ti, &r, 0, 0);
        Record_done(&r);
    }
    CHECK_EQ_INT(m.tasks[ti].n_groups, 1);
    CHECK_EQ_INT(m.tasks[ti].groups[0].count, 5);
    CHECK_STR(m.tasks[ti].groups[0].reason, "register tile 2-8x4-16 needs 34-68 vector registers > 32");
    UiModel_done(&m);
}

TEST(failing_line_from_compiler_messages) {
    CHECK_EQ_INT(Ui_failingLine("k12.c:34:5: error: expected ';'"), 34);
    CHECK_EQ_INT(Ui_failingLine("In file included\n/tmp/x/k7.cu:8: error: bad"), 8);
    CHECK_EQ_INT(Ui_failingLine("default_program(34): error: identifier undefined"), 34);
    CHECK_EQ_INT(Ui_failingLine("k.c:12:3: warning: unused\nk.c:40:1: error: oops"), 40);
    CHECK_EQ_INT(Ui_failingLine("threads per block 2048 > 1024"), 0);
    CHECK_EQ_INT(Ui_failingLine("at 12:30: error somewhere"), 0); /* no file name */
    CHECK_EQ_INT(Ui_failingLine(NULL), 0);
}

TEST(records_build_points_best_and_groups) {
    UiModel m;
    UiModel_init(&m);
    int ti = UiModel_addTask(&m, 0, "dense:m=1,n=8,k=8", "dense 1x8->8", 128, 2, NULL);
    CHECK_EQ_INT(UiModel_findKey(&m, "dense:m=1,n=8,k=8"), ti);
    CHECK_EQ_INT(UiModel_findId(&m, 5), -1);
    Record r;
    make_record(&r, "dense:m=1,n=8,k=8", 1, 0, NULL, 1e-6);
    CHECK(UiModel_addRecord(&m, ti, &r, 0, 0.128));
    Record_done(&r);
    make_record(&r, "dense:m=1,n=8,k=8", 2, 1, "shared memory 68 KiB > 48 KiB", 0);
    CHECK(!UiModel_addRecord(&m, ti, &r, 0, 0));
    Record_done(&r);
    make_record(&r, "dense:m=1,n=8,k=8", 3, 2, "k.c:3:1: error: bad", 0);
    UiModel_addRecord(&m, ti, &r, 0, 0);
    Record_done(&r);
    for (int i = 0; i < 3; i++) {
        make_record(&r, "dense:m=1,n=8,k=8", 10 + i, 1, "shared memory 68 KiB > 48 KiB", 0);
        UiModel_addRecord(&m, ti, &r, 0, 0);
        Record_done(&r);
    }
    make_record(&r, "dense:m=1,n=8,k=8", 20, 0, NULL, 2e-6);
    CHECK(!UiModel_addRecord(&m, ti, &r, 0, 0.064)); /* slower: not a new best */
    Record_done(&r);
    UiTask *t = &m.tasks[ti];
    CHECK_EQ_INT(t->n_points, 7);
    CHECK_EQ_INT(t->points[6].trial, 7);
    CHECK_EQ_INT(t->row.trials, 7);
    CHECK_EQ_INT(t->row.errors, 5);
    CHECK_NEAR(t->row.current_gflops, 0.064, 1e-9);
    CHECK_NEAR(t->row.best_gflops, 0.128, 1e-9);
    CHECK_NEAR(t->row.current_gflops, 0.064, 1e-9);
    CHECK_NEAR(t->row.best_latency_s, 1e-6, 1e-12);
    CHECK_EQ_INT(t->n_groups, 2);
    CHECK_EQ_INT(t->groups[0].count, 4); /* groups keep arrival order: indices stay valid */
    CHECK_STR(t->groups[0].reason, "shared memory 68 KiB > 48 KiB");
    CHECK_EQ_INT(t->groups[1].error_no, 2);
    CHECK_STR(t->fails[t->groups[1].members[0]].error_msg, "k.c:3:1: error: bad"); /* deep copy kept */
    /* a later group that grows past the first is listed first, its index unchanged */
    for (int i = 0; i < 5; i++) {
        make_record(&r, "dense:m=1,n=8,k=8", 30 + i, 2, "k.c:3:1: error: bad", 0);
        UiModel_addRecord(&m, ti, &r, 0, 0);
        Record_done(&r);
    }
    int order[2];
    CHECK_EQ_INT(UiTask_groupOrder(t, order), 2);
    CHECK_EQ_INT(order[0], 1);
    CHECK_EQ_INT(order[1], 0);
    CHECK_EQ_INT(t->groups[1].count, 6);
    double best[12];
    UiTask_bestSoFar(t, best);
    CHECK_NEAR(best[0], 0.128, 1e-6);
    CHECK_NEAR(best[11], 0.128, 1e-6);
    /* estimate: weight 2 x 1 us */
    CHECK_NEAR(UiModel_estimate(&m, NULL), 2e-6, 1e-12);
    UiModel_addTask(&m, 1, "dense:m=2,n=8,k=8", "", 256, 1, NULL);
    CHECK(isinf(UiModel_estimate(&m, NULL)));         /* task 1 has no result yet */
    CHECK_STR(m.tasks[1].label, "dense:m=2,n=8,k=8"); /* empty label: the key */
    UiModel_done(&m);
}

/* A group of alternatives (row.group): one workload under two templates counts
 * once in the estimate and the roof latency, with its lower best and roof; a
 * Winograd row's GFLOPS are effective. */
TEST(group_counts_once) {
    UiModel m;
    UiModel_init(&m);
    const char *key = "conv2d:n=1,ci=8,h=8,w=8,co=8,kh=3,kw=3,stride=1,pad=1";
    int a = UiModel_addTask(&m, 0, key, "direct", 1e6, 2, NULL);
    int b = UiModel_addTask(&m, 1, key, "wino", 1e6, 2, NULL);
    int c = UiModel_addTask(&m, 2, "dense:m=1,n=8,k=8", "", 1e6, 1, NULL);
    double lat[] = {3e-3, 1e-3, 5e-3}, roof[] = {500, 2000, 100};
    int ids[] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        m.tasks[ids[i]].row.best_latency_s = lat[i];
        m.tasks[ids[i]].row.best_gflops = 1e6 / lat[i] * 1e-9;
        m.tasks[ids[i]].row.roof_gflops = roof[i];
        m.tasks[ids[i]].row.state = TASK_DONE;
    }
    m.tasks[a].row.group = m.tasks[b].row.group = 1;
    m.tasks[b].row.effective = true;
    CHECK_NEAR(UiModel_estimate(&m, NULL), 2 * 1e-3 + 5e-3, 1e-12);
    CHECK_NEAR(UiModel_roofLatency(&m), 2 * 1e6 / 2000e9 + 1e6 / 100e9, 1e-15);
    CHECK(UiTask_effective(&m.tasks[b]) && !UiTask_effective(&m.tasks[a]));
    CHECK(UiModel_outrun(&m, a) && !UiModel_outrun(&m, b) && !UiModel_outrun(&m, c)); /* the table dims a */
    /* apart, they would count twice */
    m.tasks[a].row.group = m.tasks[b].row.group = 0;
    CHECK_NEAR(UiModel_estimate(&m, NULL), 2 * 3e-3 + 2 * 1e-3 + 5e-3, 1e-12);
    UiModel_done(&m);
}

TEST(a_live_trial_leaves_the_row_to_snapshots) {
    /* a session's trials go into the curves and error groups only: the row
     * (counts, best) is the engine's snapshot's */
    UiModel m;
    UiModel_init(&m);
    int ti = UiModel_addTask(&m, 3, "k", "k", 1, 1, NULL);
    Record r;
    make_record(&r, "k", 0, 5, "mismatch at 0", 0);
    UiModel_addTrial(&m, ti, 4, r.timestamp, 0, r.error_no, &r);
    Record_done(&r);
    UiModel_addTrial(&m, ti, 5, 0, 2.5, 0, NULL);
    const UiTask *t = &m.tasks[ti];
    CHECK_EQ_INT(t->n_points, 2);
    CHECK_EQ_INT(t->points[0].trial, 4);
    CHECK_EQ_INT(t->points[1].trial, 5);
    CHECK_NEAR(t->points[1].gflops, 2.5, 1e-6);
    CHECK_EQ_INT(t->n_fails, 1);
    CHECK_EQ_INT(t->n_groups, 1);
    CHECK_EQ_INT(t->row.trials, 0);
    CHECK_EQ_INT(t->row.errors, 0);
    CHECK(t->row.best_gflops == 0);
    UiModel_done(&m);
}

TEST(snapshot_and_latency_series) {
    UiModel m;
    UiModel_init(&m);
    UiModel_addTask(&m, 0, "a", "a", 1, 1, NULL);
    UiModel_addTask(&m, 1, "b", "b", 1, 1, NULL);
    m.tasks[1].want_paused = 1;
    TaskRow rows[2] = {{.id = 1, .state = TASK_TUNING, .trials = 5, .allotted = 64, .best_latency_s = INFINITY},
                       {.id = 0, .state = TASK_QUEUED, .best_latency_s = 0.001, .best_gflops = 3}};
    SessionSnapshot s = {
        .elapsed_s = 12, .trials = 5, .budget = 100, .est_latency_s = INFINITY, .n_tasks = 2, .rows = rows};
    UiModel_applySnapshot(&m, &s);
    CHECK_EQ_INT(m.tasks[1].row.trials, 5);
    CHECK_EQ_INT(m.tasks[1].row.allotted, 64);
    CHECK_EQ_INT(m.tasks[1].want_paused, 1); /* not confirmed yet */
    CHECK_NEAR(m.tasks[0].row.best_gflops, 3, 1e-9);
    CHECK(isinf(m.est_latency_s));
    rows[0].state = TASK_PAUSED;
    s.est_latency_s = 0.004;
    s.elapsed_s = 1;
    UiModel_applySnapshot(&m, &s);            /* the estimate also goes into the series */
    CHECK_EQ_INT(m.tasks[1].want_paused, -1); /* confirmed */
    CHECK_NEAR(m.est_latency_s, 0.004, 1e-12);
    CHECK_NEAR(m.first_est_s, 0.004, 1e-12);
    UiModel_addLatency(&m, 1, INFINITY); /* ignored */
    UiModel_addLatency(&m, 2, 0.003);
    UiModel_addLatency(&m, 2.5, 0.003); /* same value shortly after: ignored */
    UiModel_addLatency(&m, 5, 0.002);
    UiModel_addLatency(&m, 4, 0.001); /* time never goes back */
    CHECK_EQ_INT(m.n_latency, 4);
    CHECK_NEAR(m.latency[0].value, 0.004, 1e-12);
    CHECK_NEAR(m.latency[3].t, 5, 1e-12);
    CHECK_NEAR(m.est_latency_s, 0.001, 1e-12);
    CHECK_NEAR(m.first_est_s, 0.004, 1e-12);
    UiModel_done(&m);
}

/* the ETA counts the time the session could run: frozen while every task is paused */
TEST(eta_frozen_while_paused) {
    UiModel m;
    UiModel_init(&m);
    m.live = true;
    UiModel_addTask(&m, 0, "a", "a", 1, 1, NULL);
    TaskRow rows[1] = {{.id = 0, .state = TASK_TUNING, .best_latency_s = INFINITY}};
    SessionSnapshot s = {.elapsed_s = 10,
                         .trials = 10,
                         .budget = 110,
                         .trials_per_s = 1,
                         .est_latency_s = INFINITY,
                         .n_tasks = 1,
                         .rows = rows};
    UiModel_applySnapshot(&m, &s);
    UiModel_applySnapshot(&m, &s);
    CHECK_NEAR(UiModel_eta(&m), 100, 1e-9); /* 100 trials left at 1 per second */
    s.all_paused = true;
    rows[0].state = TASK_PAUSED;
    UiModel_applySnapshot(&m, &s); /* the pause is seen */
    double at_pause = UiModel_eta(&m);
    for (int t = 20; t <= 300; t += 10) { /* paused: no trials, and the session's average rate falls */
        s.elapsed_s = t;
        s.trials_per_s = 10.0 / t;
        UiModel_applySnapshot(&m, &s);
    }
    CHECK_NEAR(UiModel_eta(&m), at_pause, 1e-6);
    s.all_paused = false; /* resumed: the clock runs again, at the rate of the time it ran */
    rows[0].state = TASK_TUNING;
    UiModel_applySnapshot(&m, &s);
    s.elapsed_s = 310;
    s.trials = 20;
    s.trials_per_s = 20.0 / 310;
    UiModel_applySnapshot(&m, &s);
    CHECK_NEAR(UiModel_eta(&m), 90, 1e-6); /* 20 trials in the 20 s it ran: 90 left */
    UiModel_done(&m);
}

/* a task that gets its first result makes the estimate cover one more task: not a regression */
TEST(estimate_covering_a_new_task) {
    UiModel m;
    UiModel_init(&m);
    m.live = true;
    UiModel_addTask(&m, 0, "a", "a", 1, 1, NULL);
    UiModel_addTask(&m, 1, "b", "b", 1, 1, NULL);
    TaskRow rows[2] = {{.id = 0, .state = TASK_WAITING, .best_latency_s = 0.001},
                       {.id = 1, .state = TASK_PAUSED, .best_latency_s = INFINITY}};
    SessionSnapshot s = {
        .elapsed_s = 1, .budget = 100, .est_latency_s = 0.001, .est_left_out = 1, .n_tasks = 2, .rows = rows};
    UiModel_applySnapshot(&m, &s);
    CHECK_EQ_INT(m.est_covers, 1);
    CHECK(!m.est_rebased);
    CHECK_NEAR(m.first_est_s, 0.001, 1e-12);
    s.est_latency_s = 0.0012; /* task 1 resumed and measured: the sum grows */
    s.est_left_out = 0;
    rows[1].state = TASK_WAITING;
    UiModel_applySnapshot(&m, &s);
    CHECK_EQ_INT(m.est_covers, 2);
    CHECK(m.est_rebased);
    CHECK_NEAR(m.first_est_s, 0.0012, 1e-12); /* how it moves is measured from here */
    UiModel_done(&m);
}

/* the latency curve goes on across resumes: earlier sessions from LOG.tsv */
TEST(latency_curve_continues_from_the_tsv) {
    char path[256];
    snprintf(path, sizeof path, "%s/tt-ui-model-%d.tsv", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    fprintf(f, "unix_time\tsession_s\ttrials\test_latency_ms\ttask\n");
    fprintf(f, "1000.0\t1.0\t4\t-1.000000\t0\n"); /* no estimate yet */
    fprintf(f, "1002.0\t3.0\t8\t20.000000\t1\n");
    fprintf(f, "1010.0\t11.0\t12\t15.000000\t0\n");
    fprintf(f, "1100.0\t1.0\t16\t14.000000\t0\n"); /* this session's own line: not loaded */
    fclose(f);
    UiModel m;
    UiModel_init(&m);
    CHECK_EQ_INT(UiModel_loadLatencyTsv(&m, path, 1050.0), 2);
    CHECK_EQ_INT(m.n_latency, 2);
    CHECK_NEAR(m.latency[0].t, 2.0, 1e-9);
    CHECK_NEAR(m.latency[1].value, 0.015, 1e-12);
    CHECK_NEAR(m.latency_offset, 50.0, 1e-9);
    CHECK_NEAR(m.first_est_s, 0.020, 1e-12);
    /* this session's points come after them */
    SessionSnapshot s = {.elapsed_s = 5, .est_latency_s = 0.012, .n_tasks = 0, .rows = NULL, .budget = 10};
    UiModel_applySnapshot(&m, &s);
    CHECK_NEAR(m.latency[m.n_latency - 1].t, 55.0, 1e-9);
    UiModel_done(&m);
    unlink(path);
    UiModel_init(&m);
    CHECK_EQ_INT(UiModel_loadLatencyTsv(&m, "/nonexistent/x.tsv", 1.0), 0);
    UiModel_done(&m);
}

int main(void) {
    RUN(error_reason_picks_the_error_line_without_location);
    RUN(reason_shape_takes_numbers_out_of_the_reason);
    RUN(groups_merge_reasons_that_differ_in_numbers);
    RUN(register_tile_reasons_are_one_group);
    RUN(latency_curve_continues_from_the_tsv);
    RUN(failing_line_from_compiler_messages);
    RUN(records_build_points_best_and_groups);
    RUN(a_live_trial_leaves_the_row_to_snapshots);
    RUN(group_counts_once);
    RUN(snapshot_and_latency_series);
    RUN(eta_frozen_while_paused);
    RUN(estimate_covering_a_new_task);
    return check_summary();
}
