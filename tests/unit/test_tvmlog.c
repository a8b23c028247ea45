/* tests/unit/test_tvmlog.c: TVM's log formats (records/tvmlog.c) and the
 * AutoTVM import (records/tvmimport.c), on the committed fixtures in
 * tests/data/tvm, written from the documented formats. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "kernels/target.h"
#include "records/codec.h"
#include "records/tvmimport.h"
#include "records/tvmlog.h"
#include "tests/check.h"

static char path_buf[1024];
static const char *data(const char *name) {
    const char *d = getenv("TT_TEST_DATA");
    snprintf(path_buf, sizeof path_buf, "%s/tvm/%s", d ? d : "tests/data", name);
    return path_buf;
}

TEST(detects_each_format) {
    char err[TT_ERRLEN];
    TvmFormat f;
    CHECK(TvmLog_detect(data("autotvm_cuda.log"), &f, err) == TT_OK);
    CHECK_EQ_INT(f, TVM_FMT_AUTOTVM);
    CHECK(TvmLog_detect(data("autoscheduler.json"), &f, err) == TT_OK);
    CHECK_EQ_INT(f, TVM_FMT_ANSOR);
    CHECK(TvmLog_detect(data("ms_work"), &f, err) == TT_OK);
    CHECK_EQ_INT(f, TVM_FMT_METASCHEDULE);
    CHECK(TvmLog_detect(data("ms_work/database_tuning_record.json"), &f, err) == TT_OK);
    CHECK_EQ_INT(f, TVM_FMT_METASCHEDULE);
    char tmp[] = "/tmp/tt_tvm_XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(write(fd, "{\"a\": 1}\nnot json\n", 18) == 18);
    close(fd);
    CHECK(TvmLog_detect(tmp, &f, err) == TT_ERR);
    CHECK_CONTAINS(err, "is not a tunetop log");
    /* a comment line first, as in TopHub's logs */
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const char *txt =
        "# pre-tuned parameters\n{\"i\": [\"cuda\", \"conv2d_nchw.cuda\", [], {}, [], {\"i\": 1, \"e\": []}], "
        "\"r\": [[1.0], 0, 1, 2], \"v\": 0.1}\n# end\n";
    CHECK(write(fd, txt, strlen(txt)) == (ssize_t)strlen(txt));
    close(fd);
    CHECK(TvmLog_detect(tmp, &f, err) == TT_OK && f == TVM_FMT_AUTOTVM);
    TvmReader *r;
    TvmRecord *rec = malloc(sizeof *rec);
    CHECK(TvmReader_open(tmp, f, &r, err) == TT_OK);
    CHECK_EQ_INT(TvmReader_next(r, rec, err), TVM_RECORD);
    CHECK_EQ_INT(rec->line, 2);
    CHECK_EQ_INT(TvmReader_next(r, rec, err), TVM_END);
    CHECK_EQ_INT(TvmReader_bad(r), 0);
    TvmReader_close(r);
    free(rec);
    unlink(tmp);
    CHECK(TvmFormat_parse("ansor", &f, err) == TT_OK && f == TVM_FMT_ANSOR);
    CHECK(TvmFormat_parse("json", &f, err) == TT_ERR);
}

TEST(reads_autotvm_both_forms_and_counts_bad_lines) {
    TvmReader *r;
    char err[TT_ERRLEN];
    CHECK(TvmReader_open(data("autotvm_cuda.log"), TVM_FMT_AUTOTVM, &r, err) == TT_OK);
    TvmRecord *rec = malloc(sizeof *rec);
    int n = 0, bad = 0;
    long bad_line = 0;
    TvmReadStatus st;
    while ((st = TvmReader_next(r, rec, err)) != TVM_END) {
        if (st == TVM_BAD) {
            bad++;
            bad_line = strncmp(err, "line ", 5) == 0 ? atol(err + 5) : -1;
            continue;
        }
        CHECK_EQ_INT(st, TVM_RECORD);
        n++;
        if (rec->line == 2) {
            CHECK_STR(rec->task, "conv2d_nchw.cuda");
            CHECK_STR(rec->target, "cuda -model=unknown");
            CHECK_EQ_INT(rec->n_knobs, 8);
            CHECK_EQ_INT(rec->knobs[0].v[0], -1);
            CHECK_EQ_INT(rec->n_costs, 2);
            CHECK_NEAR(TvmRecord_mean(rec), 0.00012, 1e-12);
            CHECK(rec->has_index && rec->index == 68962171);
            CHECK_CONTAINS(rec->key, "conv2d_nchw.cuda(1x64x56x56,64x64x3x3,[1,1],[1,1,1,1],[1,1],float32)");
        }
        if (rec->line == 3) CHECK_EQ_INT(rec->error_no, 4);
        if (rec->line == 5) { /* the compact form: "i", "r", config in i[5] with "e" */
            CHECK_STR(rec->task, "topi_nn_conv2d");
            CHECK_EQ_INT(rec->n_knobs, 8);
            CHECK_STR(rec->knobs[4].name, "tile_rx");
        }
    }
    CHECK_EQ_INT(n, 9);
    CHECK_EQ_INT(bad, 1);
    CHECK_EQ_INT(bad_line, 9);
    CHECK_EQ_INT(TvmReader_bad(r), 1);
    TvmReader_close(r);
    free(rec);
}

static void summarise(const char *path, TvmFormat fmt, TvmSummary *s) {
    TvmReader *r;
    char err[TT_ERRLEN];
    TvmSummary_init(s, fmt);
    CHECK(TvmReader_open(path, fmt, &r, err) == TT_OK);
    TvmRecord *rec = malloc(sizeof *rec);
    TvmReadStatus st;
    while ((st = TvmReader_next(r, rec, err)) != TVM_END)
        if (st == TVM_RECORD) TvmSummary_add(s, rec);
    free(rec);
    TvmReader_close(r);
}

TEST(best_per_workload_in_each_format) {
    TvmSummary s;
    summarise(data("autotvm_cuda.log"), TVM_FMT_AUTOTVM, &s);
    CHECK_EQ_INT(s.n_records, 9);
    CHECK_EQ_INT(s.n_tasks, 7);
    CHECK_EQ_INT(s.tasks[0].n_records, 3);
    CHECK_EQ_INT(s.tasks[0].n_errors, 1);
    CHECK_NEAR(s.tasks[0].best_mean, 0.00012, 1e-12);
    CHECK_EQ_INT(s.tasks[0].best_line, 2);
    TvmSummary_done(&s);

    summarise(data("autoscheduler.json"), TVM_FMT_ANSOR, &s);
    CHECK_EQ_INT(s.n_tasks, 2);
    CHECK_NEAR(s.tasks[0].best_mean, 0.00018, 1e-12);
    CHECK_CONTAINS(s.tasks[0].best_config, "SP[1,8,7]");
    CHECK_EQ_INT(s.tasks[1].n_errors, 1);
    CHECK_NEAR(s.tasks[1].best_mean, 3.3e-05, 1e-12);
    TvmSummary_done(&s);

    summarise(data("ms_work"), TVM_FMT_METASCHEDULE, &s);
    CHECK_EQ_INT(s.n_records, 4);
    CHECK_EQ_INT(s.n_tasks, 2);
    CHECK_NEAR(s.tasks[0].best_mean, 0.0003, 1e-12); /* mean of 0.29, 0.31, 0.30 ms */
    CHECK_EQ_INT(s.tasks[0].n_errors, 1);            /* the 1e10 "failed" run */
    CHECK_CONTAINS(s.tasks[0].key, "0x6a1b2c3d4e5f6071");
    TvmSummary_done(&s);
}

static void append(const char *path, const char *s) {
    FILE *f = fopen(path, "ab");
    fputs(s, f);
    fclose(f);
}

TEST(half_written_last_line_is_waited_for) {
    char tmp[] = "/tmp/tt_tvm_XXXXXX";
    close(mkstemp(tmp));
    const char *l1 =
        "{\"i\": [[\"[\\\"abc\\\", 1]\", \"llvm\"], [[], []]], \"r\": [[0.5], 0, 1, 2], \"v\": \"v0.6\"}\n";
    append(tmp, l1);
    append(tmp, "{\"i\": [[\"[\\\"abc\\\", 1]\", \"llvm\"], [[], []]], \"r\": [[0.2");
    TvmReader *r;
    char err[TT_ERRLEN];
    CHECK(TvmReader_open(tmp, TVM_FMT_ANSOR, &r, err) == TT_OK);
    TvmRecord *rec = malloc(sizeof *rec);
    CHECK_EQ_INT(TvmReader_next(r, rec, err), TVM_RECORD);
    CHECK_EQ_INT(TvmReader_next(r, rec, err), TVM_PARTIAL);
    CHECK_CONTAINS(err, "line 2 is unfinished");
    CHECK_EQ_INT(TvmReader_bad(r), 0);
    TvmReader_follow(r);
    CHECK_EQ_INT(TvmReader_next(r, rec, err), TVM_PARTIAL); /* nothing new yet */
    append(tmp, "5], 0, 1, 3], \"v\": \"v0.6\"}");          /* whole, still no newline */
    TvmReader_follow(r);
    CHECK_EQ_INT(TvmReader_next(r, rec, err), TVM_RECORD);
    CHECK_NEAR(rec->costs[0], 0.25, 1e-12);
    CHECK_EQ_INT(rec->line, 2);
    append(tmp, "\n");
    TvmReader_follow(r);
    CHECK_EQ_INT(TvmReader_next(r, rec, err), TVM_END);
    CHECK_EQ_INT(TvmReader_lines(r), 2);
    TvmReader_close(r);
    free(rec);
    unlink(tmp);
}

static TvmMapper *mapper(void) {
    const Target *tg = Target_find("cuda"), *tc = Target_find("cpu");
    DeviceInfo gpu, cpu;
    char err[TT_ERRLEN];
    bool g = tg && tg->offline_info && tg->offline_info("sm_80", &gpu, err) == TT_OK;
    bool c = tc && tc->probe && tc->probe(&cpu, err) == TT_OK;
    return TvmMapper_new(c ? &cpu : NULL, g ? &gpu : NULL);
}

TEST(import_maps_knobs_and_recomputes_indices) {
    TvmMapper *m = mapper();
    TvmReader *r;
    char err[TT_ERRLEN];
    CHECK(TvmReader_open(data("autotvm_cuda.log"), TVM_FMT_AUTOTVM, &r, err) == TT_OK);
    TvmRecord *rec = malloc(sizeof *rec);
    Record out;
    Record_init(&out);
    TvmReadStatus st;
    int seen = 0;
    while ((st = TvmReader_next(r, rec, err)) != TVM_END) {
        if (st != TVM_RECORD) continue;
        TvmMapResult res;
        TvmMapper_map(m, rec, "fixture.log", &out, &res);
        seen++;
        switch (rec->line) {
        case 1:
        case 2:
            CHECK_EQ_INT(res.reason, TVM_MAP_OK);
            CHECK(res.widened); /* tile_rc [-1, 4] -> [16, 1, 4] */
            CHECK(res.tvm_index_checked && res.tvm_index_agrees);
            CHECK_STR(out.template_name, "conv2d_direct.gpu");
            CHECK_STR(out.target, "cuda");
            CHECK(Record_isImported(&out));
            CHECK_EQ_INT(out.n_costs, 0);
            if (rec->line == 2) {
                CHECK_NEAR(out.src_cost, 0.00012, 1e-12);
                CHECK_STR(out.src, "autotvm fixture.log:2");
                CHECK_CONTAINS(out.config, "tile_f=[4,2,8,1]"); /* -1 resolved from 64 */
                CHECK_CONTAINS(out.config, "tile_rc=[16,1,4]");
            }
            break;
        case 3:
            CHECK_EQ_INT(res.reason, TVM_MAP_FAILED);
            break;
        case 4:
            CHECK_EQ_INT(res.reason, TVM_MAP_OK);
            CHECK(res.tvm_index_agrees);
            CHECK_STR(out.template_name, "depthwise_conv2d_direct.gpu");
            break;
        case 5: /* an old record: its stored index is from another knob set */
            CHECK_EQ_INT(res.reason, TVM_MAP_OK);
            CHECK(res.tvm_index_checked && !res.tvm_index_agrees);
            break;
        case 6:
            CHECK_EQ_INT(res.reason, TVM_MAP_TASK);
            break;
        case 7:
            CHECK_EQ_INT(res.reason, TVM_MAP_KNOB_MISSING);
            break;
        case 8:
            CHECK_EQ_INT(res.reason, TVM_MAP_NO_TEMPLATE);
            break;
        case 10:
            CHECK(res.reason == TVM_MAP_KNOB_EXTRA || res.reason == TVM_MAP_TARGET);
            break;
        default:
            CHECK(0);
        }
    }
    CHECK_EQ_INT(seen, 9);
    Record_done(&out);
    free(rec);
    TvmReader_close(r);
    TvmMapper_delete(m);
}

TEST(import_resolves_swapped_rx_ry_and_rejects_bad_values) {
    TvmMapper *m = mapper();
    TvmRecord *rec = calloc(1, sizeof *rec);
    rec->format = TVM_FMT_AUTOTVM;
    snprintf(rec->target, sizeof rec->target, "cuda");
    snprintf(rec->task, sizeof rec->task, "conv2d_nchw.cuda");
    rec->n_args = 6;
    rec->args[0] = (TvmArg){TVM_ARG_TENSOR, 4, {1, 16, 8, 8}, "float32"};
    rec->args[1] = (TvmArg){TVM_ARG_TENSOR, 4, {16, 16, 3, 1}, "float32"};
    rec->args[2] = (TvmArg){TVM_ARG_INTS, 2, {1, 1}, ""};
    rec->args[3] = (TvmArg){TVM_ARG_INTS, 4, {1, 0, 1, 0}, ""};
    rec->args[4] = (TvmArg){TVM_ARG_INTS, 2, {1, 1}, ""};
    rec->args[5] = (TvmArg){TVM_ARG_STR, 0, {0}, "float32"};
    const char *names[] = {
        "tile_f", "tile_y", "tile_x", "tile_rc", "tile_rx", "tile_ry", "auto_unroll_max_step", "unroll_explicit"};
    int64_t vals[][4] = {{2, 1, 8, 1}, {8, 1, 1, 1}, {1, 1, 8, 1}, {4, 4}, {1, 3}, {1, 1}, {512}, {0}};
    int lens[] = {4, 4, 4, 2, 2, 2, 1, 1};
    rec->n_knobs = 8;
    for (int i = 0; i < 8; i++) {
        TvmKnob *k = &rec->knobs[i];
        snprintf(k->name, sizeof k->name, "%s", names[i]);
        k->is_list = lens[i] > 1 || i < 6;
        k->is_int = i >= 6;
        k->n = lens[i];
        for (int j = 0; j < lens[i]; j++)
            k->v[j] = vals[i][j];
    }
    rec->n_costs = 1;
    rec->costs[0] = 1e-4;
    rec->line = 1;
    Record out;
    Record_init(&out);
    TvmMapResult res;
    TvmMapper_map(m, rec, "x", &out, &res);
    CHECK_EQ_INT(res.reason, TVM_MAP_OK);
    CHECK(res.swapped_rx_ry); /* tile_rx multiplies to 3 = the kernel height */
    CHECK_CONTAINS(out.config, "tile_ry=[1,1,3]");
    rec->knobs[0].v[0] = 3; /* 3*1*8*1 != 16 */
    TvmMapper_map(m, rec, "x", &out, &res);
    CHECK_EQ_INT(res.reason, TVM_MAP_VALUE);
    CHECK_CONTAINS(res.why, "tile_f");
    rec->knobs[0].v[0] = -1;
    rec->knobs[6].v[0] = 16; /* not a candidate */
    TvmMapper_map(m, rec, "x", &out, &res);
    CHECK_EQ_INT(res.reason, TVM_MAP_VALUE);
    Record_done(&out);
    free(rec);
    TvmMapper_delete(m);
}

TEST(imported_fields_round_trip) {
    Record a, b;
    Record_init(&a);
    Record_init(&b);
    snprintf(a.task_key, sizeof a.task_key, "dense:m=1,n=8,k=8");
    snprintf(a.src, sizeof a.src, "autotvm x.log:3");
    a.src_cost = 1.5e-5;
    char *bytes, err[TT_ERRLEN];
    size_t len;
    CHECK(Record_encode(&a, &bytes, &len, err) == TT_OK);
    CHECK(Record_decode(bytes, len, &b, err) == TT_OK);
    CHECK_STR(b.src, "autotvm x.log:3");
    CHECK_NEAR(b.src_cost, 1.5e-5, 0);
    CHECK(Record_isImported(&b));
    char *j = Record_toJson(&b);
    CHECK_CONTAINS(j, "\"src\":\"autotvm x.log:3\"");
    free(j);
    free(bytes);
    Record_done(&a);
    Record_done(&b);
}

/* A record without an error whose cost is not a latency (TVM writes -1 for
 * some failures; 0 and no cost are no latency either) is counted by its
 * reason and never a best, in both formats. */
TEST(costs_that_are_not_latencies_are_never_a_best) {
    char src[1100];
    size_t n;
    FILE *f = fopen(data("autoscheduler.json"), "r");
    CHECK(f && fgets(src, sizeof src, f));
    fclose(f);
    n = strlen(src);
    const char *good = "\"r\": [[0.00021, 0.00022]";
    char *at = strstr(src, good);
    CHECK(at != NULL);
    const char *bad[] = {"\"r\": [[-1]", "\"r\": [[0]", "\"r\": [[]", "\"r\": [[0.5, -0.5]"};
    char path[64];
    snprintf(path, sizeof path, "/tmp/tt_tvmcost_%d.json", (int)getpid());
    f = fopen(path, "w");
    for (int i = 0; i < 4; i++)
        fprintf(f, "%.*s%s%s", (int)(at - src), src, bad[i], at + strlen(good));
    fclose(f);
    TvmSummary s;
    summarise(path, TVM_FMT_ANSOR, &s);
    CHECK_EQ_INT(s.n_records, 4);
    CHECK_EQ_INT(s.n_tasks, 1);
    CHECK(!isfinite(s.tasks[0].best_mean)); /* none is a best */
    CHECK_EQ_INT(s.tasks[0].cost_faults[1], 3);
    CHECK_EQ_INT(s.tasks[0].cost_faults[3], 1); /* no cost at all */
    TvmSummary_done(&s);
    /* one good record among them is the best */
    f = fopen(path, "a");
    fwrite(src, 1, n, f);
    fclose(f);
    summarise(path, TVM_FMT_ANSOR, &s);
    CHECK_NEAR(s.tasks[0].best_mean, 0.000215, 1e-12);
    TvmSummary_done(&s);
    unlink(path);
}

/* A FIFO or a device is refused at once, whatever the format says. */
TEST(readers_refuse_fifos_and_devices) {
    char fifo[64], err[TT_ERRLEN];
    snprintf(fifo, sizeof fifo, "/tmp/tt_tvmfifo_%d", (int)getpid());
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0);
    TvmFormat f;
    CHECK(TvmLog_detect(fifo, &f, err) == TT_ERR);
    CHECK_CONTAINS(err, "is a FIFO, not a log file");
    const TvmFormat fmts[] = {TVM_FMT_AUTOTVM, TVM_FMT_ANSOR};
    for (int i = 0; i < 2; i++) {
        TvmReader *r = NULL;
        CHECK(TvmReader_open(fifo, fmts[i], &r, err) == TT_ERR);
        CHECK_CONTAINS(err, "is a FIFO, not a log file");
        CHECK(TvmReader_open("/dev/urandom", fmts[i], &r, err) == TT_ERR);
        CHECK_CONTAINS(err, "is a character device, not a log file");
    }
    unlink(fifo);
}

/* A line whose arrays are long (here 200,000 costs, all but the last not
 * numbers, and as many knobs) reads in time linear in its length: each loop
 * steps from one element to the next (it took minutes when each element was
 * found from the first). From memory, as from a file. */
TEST(long_arrays_read_in_linear_time) {
    const int n = 200000;
    size_t cap = (size_t)n * 32 + 4096, p = 0;
    char *line = malloc(cap);
    p += (size_t)snprintf(line + p, cap - p,
                          "{\"input\": [\"cuda\", \"conv2d_nchw.cuda\", [[\"TENSOR\", [1, 64, 56, 56], \"float32\"]], "
                          "{}], \"config\": {\"index\": 0, \"code_hash\": null, \"entity\": [");
    for (int i = 0; i < n; i++)
        p += (size_t)snprintf(line + p, cap - p, "%s[\"k%d\", \"ot\", %d]", i ? ", " : "", i, i);
    p += (size_t)snprintf(line + p, cap - p, "]}, \"result\": [[");
    for (int i = 0; i < n; i++)
        p += (size_t)snprintf(line + p, cap - p, "\"x\", ");
    p += (size_t)snprintf(line + p, cap - p, "0.0009], 0, 1.5, 1700000000.0], \"version\": 0.2}\n");
    char err[TT_ERRLEN];
    TvmFormat f;
    double t0 = clock_mono();
    CHECK(TvmLog_detectMemory(line, p, "long.log", &f, err) == TT_OK && f == TVM_FMT_AUTOTVM);
    TvmReader *r;
    TvmRecord *rec = malloc(sizeof *rec);
    CHECK(TvmReader_openMemory(line, p, "long.log", f, &r, err) == TT_OK);
    CHECK_EQ_INT(TvmReader_next(r, rec, err), TVM_RECORD);
    CHECK_EQ_INT(rec->n_costs, 1);
    CHECK_EQ_INT(rec->n_knobs, TVM_MAX_KNOBS);
    CHECK_EQ_INT(TvmReader_next(r, rec, err), TVM_END);
    TvmReader_close(r);
    double took = clock_mono() - t0;
    printf("a %zu-byte line with %d knobs and %d costs: %.3f s\n", p, n, n, took);
    CHECK(took < 10); /* about 0.1 s; minutes when quadratic */
    CHECK(TvmReader_openMemory(line, p, "long.log", TVM_FMT_METASCHEDULE, &r, err) == TT_ERR);
    free(rec);
    free(line);
}

int main(void) {
    RUN(costs_that_are_not_latencies_are_never_a_best);
    RUN(readers_refuse_fifos_and_devices);
    RUN(detects_each_format);
    RUN(reads_autotvm_both_forms_and_counts_bad_lines);
    RUN(best_per_workload_in_each_format);
    RUN(half_written_last_line_is_waited_for);
    RUN(import_maps_knobs_and_recomputes_indices);
    RUN(import_resolves_swapped_rx_ry_and_rejects_bad_values);
    RUN(imported_fields_round_trip);
    RUN(long_arrays_read_in_linear_time);
    return check_summary();
}
