/* `tunetop view`'s model from a log: tasks by key, points and error groups,
 * following the file as a writer appends, and a clear error for bad logs. */
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "records/log.h"
#include "tests/check.h"
#include "ui/logview.h"
#include "ui/widgets.h"

static char dir[64];
static char path[128];

static void make_record(Record *r, const char *key, uint64_t index, int error_no, const char *msg, double cost,
                        double ts) {
    Record_init(r);
    snprintf(r->task_key, sizeof r->task_key, "%s", key);
    snprintf(r->template_name, sizeof r->template_name, "dense.cpu");
    snprintf(r->target, sizeof r->target, "cpu");
    r->index = index;
    snprintf(r->config, sizeof r->config, "tile=[%llu]", (unsigned long long)index);
    r->timestamp = ts;
    if (error_no)
        Record_setError(r, error_no, msg);
    else {
        r->n_costs = 1;
        r->costs[0] = cost;
    }
}

static void append(LogWriter *w, const char *key, uint64_t index, int error_no, const char *msg, double cost,
                   double ts) {
    Record r;
    char err[TT_ERRLEN];
    make_record(&r, key, index, error_no, msg, cost, ts);
    CHECK(LogWriter_append(w, &r, err) == TT_OK);
    Record_done(&r);
}

#define KEY_A "dense:m=16,n=64,k=64"
#define KEY_B "batch_matmul:b=2,m=16,n=16,k=16"

TEST(view_builds_the_model_and_follows_the_file) {
    char err[TT_ERRLEN];
    LogWriter *w;
    CHECK(LogWriter_open(path, "cpu", &w, NULL, err) == TT_OK);
    append(w, KEY_A, 1, 0, NULL, 1e-5, 1000);
    append(w, KEY_A, 2, 1, "threads 2048 > 1024", 0, 1001);
    append(w, KEY_B, 7, 0, NULL, 2e-6, 1002);
    append(w, KEY_A, 3, 0, NULL, 5e-6, 1004);
    CHECK(LogWriter_sync(w, err) == TT_OK);

    UiState st;
    UiState_init(&st);
    UiLogView v;
    CHECK(UiLogView_open(&v, &st, path, err) == TT_OK);
    CHECK_EQ_INT(st.model.n_tasks, 2);
    CHECK(!st.model.live);
    CHECK_STR(st.model.target, "cpu");
    CHECK_EQ_INT(st.model.trials, 4);
    CHECK_NEAR(st.model.elapsed_s, 4, 1e-9);
    UiTask *a = &st.model.tasks[UiModel_findKey(&st.model, KEY_A)];
    CHECK_EQ_INT(a->n_points, 3);
    CHECK_EQ_INT(a->row.errors, 1);
    CHECK_EQ_INT(a->n_groups, 1);
    CHECK_STR(a->groups[0].reason, "threads 2048 > 1024");
    /* dense 16x64x64: 2*16*64*64 = 131072 FLOP in 5 us = 26.2144 GFLOPS */
    CHECK_NEAR(a->row.best_gflops, 26.2144, 1e-3);
    CHECK(st.model.n_latency >= 1); /* an estimate once both tasks had a result */
    CHECK_NEAR(st.model.est_latency_s, 5e-6 + 2e-6, 1e-12);

    CellBuf *cb = CellBuf_new(100, 30);
    st.utf8 = true;
    Screen_render(cb, &st);
    char *d = CellBuf_dump(cb);
    CHECK_CONTAINS(d, "logged");
    CHECK_CONTAINS(d, "26.21");
    free(d);

    /* the file grows: poll picks up exactly the new records */
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 0);
    append(w, KEY_B, 8, 2, "k.c:1:1: error: x", 0, 1010);
    append(w, KEY_B, 9, 0, NULL, 1e-6, 1011);
    CHECK(LogWriter_sync(w, err) == TT_OK);
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 2);
    UiTask *b = &st.model.tasks[UiModel_findKey(&st.model, KEY_B)];
    CHECK_EQ_INT(b->n_points, 3);
    CHECK_EQ_INT(b->points[2].trial, 3);
    CHECK_EQ_INT(st.model.trials, 6);
    CHECK_NEAR(st.model.est_latency_s, 5e-6 + 1e-6, 1e-12);
    LogWriter_close(w);

    /* a torn tail (a writer mid-record) is not an error: it waits for the rest */
    int fd = open(path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    CHECK(write(fd, "\x8f\xa4task", 6) == 6);
    close(fd);
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 0);
    CHECK(v.torn);
    CellBuf_delete(cb);
    UiState_done(&st);
    UiLogView_done(&v);
}

TEST(bad_logs_give_one_clear_sentence) {
    char err[TT_ERRLEN];
    UiState st;
    UiState_init(&st);
    UiLogView v;
    char missing[160];
    snprintf(missing, sizeof missing, "%s/none.log", dir);
    CHECK(UiLogView_open(&v, &st, missing, err) == TT_ERR);
    CHECK_CONTAINS(err, "none.log");
    CHECK(strchr(err, '\n') == NULL);
    UiLogView_done(&v);
    char junk[160];
    snprintf(junk, sizeof junk, "%s/junk.log", dir);
    FILE *f = fopen(junk, "w");
    fputs("this is not a log\n", f);
    fclose(f);
    CHECK(UiLogView_open(&v, &st, junk, err) == TT_ERR);
    CHECK_CONTAINS(err, "junk.log");
    UiLogView_done(&v);
    UiState_done(&st);
    unlink(junk);
}

/* issue 13, defect 1: the view numbers and weighs tasks as the session did,
 * shows the steering, and starts its estimate series when the live one did */
TEST(view_takes_ids_weights_and_steering_from_the_log) {
    char err[TT_ERRLEN];
    char spath[160];
    snprintf(spath, sizeof spath, "%s/session.log", dir);
    unlink(spath);
    LogWriter *w;
    CHECK(LogWriter_open(spath, "cpu", &w, NULL, err) == TT_OK);
    LogSession s;
    LogSession_init(&s);
    LogSession_addTask(&s, KEY_A, "dense.cpu", 1, "");
    LogSession_addTask(&s, KEY_B, "dense.cpu", 3, ""); /* the template the records name */
    CHECK(LogWriter_appendSession(w, &s, err) == TT_OK);
    LogSession_done(&s);
    /* task 1 measured first (the user raised it) */
    append(w, KEY_B, 7, 0, NULL, 2e-6, 1000);
    LogSteer steer = {.priority = 3, .paused = true};
    snprintf(steer.key, sizeof steer.key, "%s", KEY_B);
    CHECK(LogWriter_appendSteer(w, &steer, err) == TT_OK);
    CHECK(LogWriter_sync(w, err) == TT_OK);

    UiState st;
    UiState_init(&st);
    UiLogView v;
    CHECK(UiLogView_open(&v, &st, spath, err) == TT_OK);
    CHECK_EQ_INT(st.model.n_tasks, 2);
    CHECK_STR(st.model.tasks[0].key, KEY_A);
    CHECK_EQ_INT(st.model.tasks[1].id, 1);
    CHECK_NEAR(st.model.tasks[1].weight, 3, 0);
    CHECK_EQ_INT(st.model.tasks[1].row.priority, 3);
    CHECK_STR(UiState_taskStateText(&st.model.tasks[1]), "paused");
    CHECK_EQ_INT(v.records, 1);
    /* task 0 has no result yet: the partial sum is shown, but is no "first estimate" */
    CHECK_NEAR(st.model.est_latency_s, 3 * 2e-6, 1e-12);
    CHECK_EQ_INT(st.model.est_left_out, 1);
    CHECK(!isfinite(st.model.first_est_s));
    append(w, KEY_A, 1, 0, NULL, 1e-5, 1001);
    CHECK(LogWriter_sync(w, err) == TT_OK);
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 1);
    CHECK_NEAR(st.model.est_latency_s, 1e-5 + 3 * 2e-6, 1e-12);
    CHECK_NEAR(st.model.first_est_s, 1e-5 + 3 * 2e-6, 1e-12);
    CHECK_EQ_INT(st.model.est_left_out, 0);
    LogWriter_close(w);
    UiState_done(&st);
    UiLogView_done(&v);
    unlink(spath);
}

/* `view --model`: a task list given from outside the log is the table: its
 * IDs and weights, a task without a record as a row with 0 trials (left out
 * of the estimate and counted); the log's session objects do not renumber
 * it, and its records of other workloads are left out with a note. */
TEST(a_task_list_from_outside_is_the_table) {
    char err[TT_ERRLEN];
    char lpath[160];
    snprintf(lpath, sizeof lpath, "%s/list.log", dir);
    unlink(lpath);
    LogWriter *w;
    CHECK(LogWriter_open(lpath, "cpu", &w, NULL, err) == TT_OK);
    LogSession s;
    LogSession_init(&s);
    LogSession_addTask(&s, KEY_B, "dense.cpu", 1, "");
    CHECK(LogWriter_appendSession(w, &s, err) == TT_OK);
    LogSession_done(&s);
    append(w, KEY_B, 7, 0, NULL, 2e-6, 1000); /* not in the list */
    append(w, KEY_A, 1, 0, NULL, 1e-5, 1001);
    CHECK(LogWriter_sync(w, err) == TT_OK);

    LogSession list;
    LogSession_init(&list);
    snprintf(list.network, sizeof list.network, "m.onnx");
    LogSession_addTask(&list, "dense:m=8,n=8,k=8", "dense.cpu", 1, "m.onnx");
    LogSession_addTask(&list, KEY_A, "dense.cpu", 2, "m.onnx");
    UiState st;
    UiState_init(&st);
    UiLogView v;
    CHECK(UiLogView_openTasks(&v, &st, lpath, TVM_FMT_UNKNOWN, &list, err) == TT_OK);
    CHECK_EQ_INT(st.model.n_tasks, 2);
    CHECK_EQ_INT(st.model.tasks[0].id, 0);
    CHECK_STR(st.model.tasks[0].key, "dense:m=8,n=8,k=8");
    CHECK_EQ_INT(st.model.tasks[0].row.trials, 0);
    CHECK_STR(st.model.tasks[1].key, KEY_A);
    CHECK_NEAR(st.model.tasks[1].weight, 2, 0);
    CHECK_EQ_INT(v.records, 1);
    CHECK_EQ_INT(v.left_out, 1);
    CHECK_CONTAINS(v.note, "1 record of workloads not in m.onnx not shown");
    CHECK_NEAR(st.model.est_latency_s, 2 * 1e-5, 1e-12);
    CHECK_EQ_INT(st.model.est_left_out, 1);
    /* the file grows: the same rule */
    append(w, KEY_B, 8, 0, NULL, 1e-6, 1002);
    append(w, KEY_A, 2, 0, NULL, 5e-6, 1003);
    CHECK(LogWriter_sync(w, err) == TT_OK);
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 1);
    CHECK_EQ_INT(st.model.n_tasks, 2);
    CHECK_EQ_INT(v.left_out, 2);
    LogWriter_close(w);
    UiState_done(&st);
    UiLogView_done(&v);
    LogSession_done(&list);
    unlink(lpath);
}

static off_t size_of(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 ? sb.st_size : -1;
}

/* Following reads each appended byte once (not the log again from its
 * start), goes on after a resuming writer cut a torn tail, and notices a file
 * cut below what was read, replaced, or deleted. */
TEST(follow_reads_only_the_new_bytes_and_notices_a_new_file) {
    char err[TT_ERRLEN];
    unlink(path);
    LogWriter *w;
    CHECK(LogWriter_open(path, "cpu", &w, NULL, err) == TT_OK);
    for (int i = 0; i < 50; i++)
        append(w, KEY_A, (uint64_t)i, i % 7 == 3, "threads 2048 > 1024", 1e-5 + i * 1e-7, 1000 + i);
    CHECK(LogWriter_sync(w, err) == TT_OK);
    off_t size0 = size_of(path);

    UiState st;
    UiState_init(&st);
    UiLogView v;
    CHECK(UiLogView_open(&v, &st, path, err) == TT_OK);
    CHECK_EQ_INT(v.records, 50);
    CHECK_EQ_INT(LogReader_bytesRead(v.reader), size0);
    /* nothing new: nothing read */
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 0);
    CHECK_EQ_INT(LogReader_bytesRead(v.reader), size0);
    CHECK(v.change == LOG_FILE_SAME);
    /* one record appended: exactly its bytes are read */
    append(w, KEY_B, 3, 0, NULL, 2e-6, 1100);
    CHECK(LogWriter_sync(w, err) == TT_OK);
    off_t size1 = size_of(path);
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 1);
    CHECK(v.change == LOG_FILE_CHANGED);
    CHECK_EQ_INT(LogReader_bytesRead(v.reader), size1);
    CHECK_EQ_INT(st.model.trials, 51);
    LogWriter_close(w);

    /* a crash mid-record, then a resuming writer cuts the torn tail and appends */
    int fd = open(path, O_WRONLY | O_APPEND);
    CHECK(write(fd, "\x8f\xa4task", 6) == 6);
    close(fd);
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 0);
    CHECK(v.torn);
    off_t cut = -1;
    CHECK(LogWriter_open(path, "cpu", &w, &cut, err) == TT_OK);
    CHECK_EQ_INT(cut, size1);
    append(w, KEY_B, 4, 0, NULL, 1e-6, 1101);
    CHECK(LogWriter_sync(w, err) == TT_OK);
    LogWriter_close(w);
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 1);
    CHECK(!v.torn);
    CHECK_EQ_INT(v.reloads, 0);
    CHECK_EQ_INT(st.model.trials, 52);

    /* cut below what was read: read again from the start */
    off_t keep = size0 / 2;
    CHECK(truncate(path, keep) == 0);
    int n = UiLogView_poll(&v, &st, err);
    CHECK(v.change == LOG_FILE_TRUNCATED);
    CHECK_EQ_INT(v.reloads, 1);
    CHECK(n > 0 && n < 50);
    CHECK_EQ_INT(v.records, n);
    CHECK_EQ_INT(st.model.trials, n);
    CHECK_EQ_INT(st.model.n_tasks, 1);
    CHECK(v.torn); /* half a record at the end now */

    /* replaced by another log (renamed over the path): its records only */
    char other[160];
    snprintf(other, sizeof other, "%s/other.log", dir);
    unlink(other);
    CHECK(LogWriter_open(other, "cpu", &w, NULL, err) == TT_OK);
    append(w, KEY_B, 1, 0, NULL, 4e-6, 2000);
    append(w, KEY_B, 2, 0, NULL, 3e-6, 2001);
    CHECK(LogWriter_sync(w, err) == TT_OK);
    LogWriter_close(w);
    CHECK(rename(other, path) == 0);
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), 2);
    CHECK(v.change == LOG_FILE_REPLACED);
    CHECK_EQ_INT(v.reloads, 2);
    CHECK_EQ_INT(st.model.n_tasks, 1);
    CHECK_STR(st.model.tasks[0].key, KEY_B);
    CHECK_EQ_INT(st.model.trials, 2);
    CHECK(!v.torn);

    /* deleted: one sentence */
    unlink(path);
    CHECK_EQ_INT(UiLogView_poll(&v, &st, err), -1);
    CHECK_CONTAINS(err, "no longer readable");
    UiState_done(&st);
    UiLogView_done(&v);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tt_ui_logview_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/a.log", dir);
    RUN(view_builds_the_model_and_follows_the_file);
    RUN(bad_logs_give_one_clear_sentence);
    RUN(view_takes_ids_weights_and_steering_from_the_log);
    RUN(a_task_list_from_outside_is_the_table);
    RUN(follow_reads_only_the_new_bytes_and_notices_a_new_file);
    unlink(path);
    rmdir(dir);
    return check_summary();
}
