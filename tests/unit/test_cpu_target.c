/* tests/unit/test_cpu_target.c: the cpu target and the measurement worker,
 * with hand-written kernels (kernels/targets/cpu/abi.h) for a tiny dense workload:
 * correct, wrong, unwritten, crashing, hanging, slow to compile, and broken. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "kernels/target.h"
#include "kernels/targets/cpu/abi.h"
#include "kernels/targets/runner.h"
#include "kernels/worker/proc.h"
#include "kernels/worker/taskfile.h"
#include "kernels/workload.h"
#include "tests/check.h"

extern const Target target_cpu;

static char g_dir[256];    /* build directory of this test */
static uint64_t g_tag = 1; /* unique artifact tags */
static DeviceInfo g_dev;

/* A dense kernel out[m][n] = sum_k data[m][k] * weight[n][k]; `body` is the
 * statement stored for each element (acc holds the sum), `extra_run` runs at
 * the start of tt_run, `teardown` at the end of tt_teardown. */
static char *dense_source(int M, int N, int K, const char *body, const char *extra_run, const char *teardown) {
    StrBuf sb;
    StrBuf_init(&sb);
    StrBuf_printf(&sb,
                  "#include <stdlib.h>\n#include <stdio.h>\n#include <omp.h>\n"
                  "#define M %d\n#define N %d\n#define K %d\n"
                  "typedef struct { float *a, *w, *o; } S;\n"
                  "static long calls;\n"
                  "int tt_setup(float **args, void **state) {\n"
                  "    S *s = malloc(sizeof *s); s->a = args[0]; s->w = args[1]; s->o = args[2];\n"
                  "    *state = s; return 0;\n}\n"
                  "void tt_pack(void *st) { (void)st; }\n"
                  "void tt_run(void *st) {\n    S *s = st; calls++;\n    %s\n"
                  "    for (int m = 0; m < M; m++) for (int n = 0; n < N; n++) {\n"
                  "        float acc = 0; for (int k = 0; k < K; k++) acc += s->a[m * K + k] * s->w[n * K + k];\n"
                  "        %s\n    }\n}\n"
                  "void tt_finish(void *st) { (void)st; }\n"
                  "void tt_teardown(void *st) { free(st); %s }\n",
                  M, N, K, extra_run, body, teardown);
    char *text = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return text;
}

#define STORE "s->o[m * N + n] = acc;"

static void build(const char *source, const MeasureOptions *opt, BuildResult *out) {
    KernelSource src;
    KernelSource_init(&src);
    src.source = strdup(source);
    snprintf(src.entry, sizeof src.entry, "tt_run");
    BuildResult_init(out);
    target_cpu.build(&src, &g_dev, opt, g_dir, g_tag++, out);
    KernelSource_done(&src);
}

static void measure(Runner *r, const BuildResult *b, const MeasureOptions *opt, MeasureResult *out) {
    KernelSource src;
    KernelSource_init(&src);
    snprintf(src.entry, sizeof src.entry, "tt_run");
    MeasureResult_init(out);
    target_cpu.measure(r, &src, b, opt, out);
}

static Runner *g_runner;
static Workload g_wl;

static void set_dense(int m, int n, int k) {
    char spec[64], err[TT_ERRLEN];
    snprintf(spec, sizeof spec, "dense:m=%d,n=%d,k=%d", m, n, k);
    CHECK(Workload_parse(spec, &g_wl, err) == TT_OK);
    CHECK(target_cpu.runner_set_task(g_runner, &g_wl, err) == TT_OK);
}

static long read_number(const char *path) {
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1) v = -1;
        fclose(f);
    }
    return v;
}

TEST(probe_describes_this_cpu) {
    char err[TT_ERRLEN];
    CHECK(target_cpu.probe(&g_dev, err) == TT_OK);
    CHECK(g_dev.present);
    CHECK(g_dev.cores >= 1);
    CHECK(g_dev.vector_floats == 4 || g_dev.vector_floats == 8 || g_dev.vector_floats == 16);
    CHECK(strlen(g_dev.name) > 0);
    CHECK(strlen(g_dev.arch) > 0);
    if (__builtin_cpu_supports("avx512f")) CHECK_EQ_INT(g_dev.vector_floats, 16);
    printf("probe: %s, arch %s, %d floats per vector\n", g_dev.name, g_dev.arch, g_dev.vector_floats);
}

TEST(correct_kernel_measures) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *s = dense_source(4, 8, 16, STORE, "", "");
    BuildResult b;
    build(s, &opt, &b);
    free(s);
    CHECK_EQ_INT(b.error_no, ERR_NO_ERROR);
    CHECK(b.build_s > 0);
    CHECK(access(b.path, R_OK) == 0);
    char c_path[300];
    snprintf(c_path, sizeof c_path, "%s/k%llu.c", g_dir, (unsigned long long)(g_tag - 1));
    CHECK(access(c_path, F_OK) != 0); /* the source is removed after the build */
    set_dense(4, 8, 16);
    MeasureResult m;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    if (m.msg) fprintf(stderr, "unexpected message: %s\n", m.msg);
    CHECK_EQ_INT(m.n_costs, 3);
    /* consistent figures, not fast ones (speed belongs in bench/): each repeat
     * of `number` runs, and the packing, happened inside the measurement */
    for (int i = 0; i < m.n_costs; i++)
        CHECK(m.costs[i] > 0 && m.costs[i] * opt.number <= m.run_s);
    CHECK(m.pack_s >= 0 && m.pack_s <= m.run_s);
    CHECK(m.run_s > 0);
    printf("build %.3f s, measure %.4f s, cost %.3g s\n", b.build_s, m.run_s, m.costs[0]);
    MeasureResult_done(&m);
    BuildResult_done(&b);
    CHECK(access(b.path, F_OK) != 0 || b.path[0] == '\0');
}

TEST(slow_cutoff_stops_after_one_repeat) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *s = dense_source(4, 8, 16, STORE, "", "");
    BuildResult b;
    build(s, &opt, &b);
    free(s);
    CHECK_EQ_INT(b.error_no, ERR_NO_ERROR);
    set_dense(4, 8, 16);
    MeasureResult m;
    opt.slow_cutoff_s = 1e-12; /* every run is slower than this */
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(m.n_costs, 1);
    MeasureResult_done(&m);
    opt.slow_cutoff_s = 10; /* no run is slower than this */
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.n_costs, 3);
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

TEST(syntax_error_is_compile_host_with_the_message) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    BuildResult b;
    build("int tt_setup(float **args, void **state) { return 0 }\n", &opt, &b);
    CHECK_EQ_INT(b.error_no, ERR_COMPILE_HOST);
    CHECK_CONTAINS(b.msg, "error");
    CHECK_CONTAINS(b.msg, "expected");
    CHECK_STR(b.path, "");
    BuildResult_done(&b);
}

TEST(undefined_function_is_compile_host) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *s = dense_source(4, 8, 16, STORE, "void tt_no_such_function(void); tt_no_such_function();", "");
    BuildResult b;
    build(s, &opt, &b);
    free(s);
    CHECK_EQ_INT(b.error_no, ERR_COMPILE_HOST);
    CHECK_CONTAINS(b.msg, "tt_no_such_function");
    BuildResult_done(&b);
}

TEST(abi_violations_are_runtime_device) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    set_dense(4, 8, 16);
    /* no tt_pack */
    BuildResult b;
    build("int tt_setup(float **a, void **s) { return 0; }\nvoid tt_run(void *s) {}\n"
          "void tt_finish(void *s) {}\nvoid tt_teardown(void *s) {}\n",
          &opt, &b);
    CHECK_EQ_INT(b.error_no, ERR_NO_ERROR);
    MeasureResult m;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_RUNTIME_DEVICE);
    CHECK_CONTAINS(m.msg, "does not export tt_pack");
    MeasureResult_done(&m);
    BuildResult_done(&b);
    /* tt_setup fails */
    build("int tt_setup(float **a, void **s) { return 7; }\nvoid tt_pack(void *s) {}\nvoid tt_run(void *s) {}\n"
          "void tt_finish(void *s) {}\nvoid tt_teardown(void *s) {}\n",
          &opt, &b);
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_RUNTIME_DEVICE);
    CHECK_CONTAINS(m.msg, "tt_setup failed (returned 7)");
    MeasureResult_done(&m);
    BuildResult_done(&b);
    /* inputs are read-only: writing into them crashes the worker, not later runs */
    char *s = dense_source(4, 8, 16, STORE, "s->a[0] = 0;", "");
    build(s, &opt, &b);
    free(s);
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_RUNTIME_DEVICE);
    CHECK_CONTAINS(m.msg, "signal 11");
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

TEST(build_timeout_kills_the_compiler) {
    /* 10^5 dependent statements: seconds of -O3 work, far beyond 0.3 s. */
    const char *src =
        "#define A s = s * 1.0001f + 0.5f;\n#define B A A A A A A A A A A\n#define C B B B B B B B B B B\n"
        "#define D C C C C C C C C C C\n#define E D D D D D D D D D D\n#define F E E E E E E E E E E\n"
        "float f(float s) { F return s; }\n";
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.build_timeout_s = 0.3;
    BuildResult b;
    double t0 = clock_mono();
    build(src, &opt, &b);
    double took = clock_mono() - t0;
    CHECK_EQ_INT(b.error_no, ERR_BUILD_TIMEOUT);
    CHECK_CONTAINS(b.msg, "longer than 0.3 s");
    CHECK(took < 6.0); /* killed, not left to finish its seconds of work */
    CHECK(b.build_s >= 0.3);
    CHECK_STR(b.path, "");
    BuildResult_done(&b);
}

TEST(wrong_values_are_wrong_answer) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *s = dense_source(4, 8, 16, "s->o[m * N + n] = (m == 2 && n == 5) ? acc + 1.0f : acc;", "", "");
    BuildResult b;
    build(s, &opt, &b);
    free(s);
    CHECK_EQ_INT(b.error_no, ERR_NO_ERROR);
    set_dense(4, 8, 16);
    MeasureResult m;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_WRONG_ANSWER);
    CHECK_CONTAINS(m.msg, "out[21]"); /* the first bad element: m=2, n=5 */
    CHECK_EQ_INT(m.n_costs, 0);
    MeasureResult_done(&m);

    /* without the check the same kernel is timed */
    opt.check_correctness = false;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(m.n_costs, 3);
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

TEST(unwritten_output_is_wrong_answer) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *s = dense_source(4, 8, 16, "if (m < 3) s->o[m * N + n] = acc;", "", "");
    BuildResult b;
    build(s, &opt, &b);
    free(s);
    set_dense(4, 8, 16);
    MeasureResult m;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_WRONG_ANSWER);
    CHECK_CONTAINS(m.msg, "out[24]");
    CHECK_CONTAINS(m.msg, "nan");
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

TEST(crash_is_runtime_device_and_the_next_measure_works) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *bad = dense_source(4, 8, 16, STORE, "if (calls > 0) *(volatile int *)16 = 1;", "");
    char *good = dense_source(4, 8, 16, STORE, "", "");
    BuildResult bb, bg;
    build(bad, &opt, &bb);
    build(good, &opt, &bg);
    free(bad);
    free(good);
    set_dense(4, 8, 16);
    MeasureResult m;
    measure(g_runner, &bb, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_RUNTIME_DEVICE);
    CHECK_CONTAINS(m.msg, "worker killed by signal 11");
    CHECK_CONTAINS(m.msg, "Segmentation fault");
    MeasureResult_done(&m);
    measure(g_runner, &bg, &opt, &m); /* a fresh worker, which gets the task again */
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(m.n_costs, 3);
    MeasureResult_done(&m);
    BuildResult_done(&bb);
    BuildResult_done(&bg);
}

TEST(abort_quotes_the_last_output_of_the_worker) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *bad = dense_source(4, 8, 16, STORE, "fprintf(stderr, \"kernel says goodbye\\n\"); abort();", "");
    BuildResult b;
    build(bad, &opt, &b);
    free(bad);
    CHECK_EQ_INT(b.error_no, ERR_NO_ERROR);
    set_dense(4, 8, 16);
    MeasureResult m;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_RUNTIME_DEVICE);
    CHECK_CONTAINS(m.msg, "signal 6");
    CHECK_CONTAINS(m.msg, "its last output: kernel says goodbye");
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

TEST(hang_is_run_timeout_and_the_next_measure_works) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.run_timeout_s = 1.0;
    char *bad = dense_source(4, 8, 16, STORE, "for (volatile int spin = 1; spin;) {}", "");
    char *good = dense_source(4, 8, 16, STORE, "", "");
    BuildResult bb, bg;
    build(bad, &opt, &bb);
    build(good, &opt, &bg);
    free(bad);
    free(good);
    set_dense(4, 8, 16);
    MeasureResult m;
    double t0 = clock_mono();
    measure(g_runner, &bb, &opt, &m);
    double took = clock_mono() - t0;
    CHECK_EQ_INT(m.error_no, ERR_RUN_TIMEOUT);
    CHECK_CONTAINS(m.msg, "within 1 s");
    /* killed at its limit, not at the end of something longer (the slack is for a loaded machine) */
    CHECK(took >= 1.0 && took < 6.0);
    CHECK(m.run_s >= 1.0 && m.run_s < 6.0);
    MeasureResult_done(&m);
    opt.run_timeout_s = 30.0; /* the fresh worker's start is not what this checks */
    measure(g_runner, &bg, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    MeasureResult_done(&m);
    BuildResult_done(&bb);
    BuildResult_done(&bg);
}

TEST(number_repeat_and_min_repeat_ms) {
    char counter[300], cmd[400];
    snprintf(counter, sizeof counter, "%s/calls.txt", g_dir);
    snprintf(cmd, sizeof cmd, "FILE *f = fopen(\"%s\", \"w\"); if (f) { fprintf(f, \"%%ld\\n\", calls); fclose(f); }",
             counter);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *s = dense_source(4, 8, 16, STORE, "", cmd);
    BuildResult b;
    build(s, &opt, &b);
    free(s);
    CHECK_EQ_INT(b.error_no, ERR_NO_ERROR);
    set_dense(4, 8, 16);

    /* number 4, repeat 3: one warm-up, 12 timed runs, one run between pack and finish */
    MeasureResult m;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(read_number(counter), 1 + 12 + 1);
    MeasureResult_done(&m);

    /* min_repeat_ms 40 raises number for this ~100 ns kernel: each of the 2 repeats lasts >= 40 ms */
    opt.number = 1;
    opt.repeat = 2;
    opt.min_repeat_ms = 40;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(m.n_costs, 2);
    long calls = read_number(counter);
    CHECK(calls > 1000);
    CHECK(m.run_s >= 0.08);
    double cost_sum = (m.costs[0] + m.costs[1]) / 2;
    CHECK(cost_sum > 0 && cost_sum < 40e-3);
    printf("min_repeat_ms 40: %ld runs, %.3g s per run, measure took %.3f s\n", calls, cost_sum, m.run_s);
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

/* A kernel whose run lasts 120 ms or more (it sleeps): a repeat is one run
 * (WORKER_REPEAT_CAP_S), and the correctness run times the pack and finish,
 * so number 4 x repeat 3 costs 1 + 3 runs, not 1 + 12 + 1; past the slow
 * cutoff, 1 + 1. */
TEST(slow_kernel_repeats_are_single_runs) {
    char counter[300], cmd[400];
    snprintf(counter, sizeof counter, "%s/calls.txt", g_dir);
    snprintf(cmd, sizeof cmd, "FILE *f = fopen(\"%s\", \"w\"); if (f) { fprintf(f, \"%%ld\\n\", calls); fclose(f); }",
             counter);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *s = dense_source(4, 8, 16, STORE, "extern int usleep(unsigned); usleep(120000);", cmd);
    BuildResult b;
    build(s, &opt, &b);
    free(s);
    CHECK_EQ_INT(b.error_no, ERR_NO_ERROR);
    set_dense(4, 8, 16);
    MeasureResult m;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(m.n_costs, 3);
    for (int i = 0; i < m.n_costs; i++)
        CHECK(m.costs[i] >= 0.12);
    CHECK(m.pack_s >= 0 && m.pack_s < 0.12);
    CHECK_EQ_INT(read_number(counter), 1 + 3);
    MeasureResult_done(&m);
    opt.slow_cutoff_s = 0.05;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(m.n_costs, 1);
    CHECK(m.costs[0] >= 0.12);
    CHECK_EQ_INT(read_number(counter), 1 + 1);
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

/* With a slow cutoff the run timeout is 8x the cutoff, at least 2 s, at most
 * --timeout: a hanging candidate is killed after 2 s, not 10, and says why. */
TEST(slow_cutoff_shortens_the_run_timeout) {
    CHECK(Runner_slowTimeout(0) == 0);
    CHECK(Runner_slowTimeout(0.01) == RUNNER_SLOW_TIMEOUT_FLOOR_S);
    CHECK(Runner_slowTimeout(1.0) == 8.0);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.run_timeout_s = 30;
    opt.slow_cutoff_s = 0.01;
    char *bad = dense_source(4, 8, 16, STORE, "for (volatile int spin = 1; spin;) {}", "");
    BuildResult b;
    build(bad, &opt, &b);
    free(bad);
    set_dense(4, 8, 16);
    MeasureResult m;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_RUN_TIMEOUT);
    CHECK_CONTAINS(m.msg, "within 2 s");
    CHECK_CONTAINS(m.msg, "slow cutoff");
    CHECK(m.run_s >= 2.0 && m.run_s < 30);
    MeasureResult_done(&m);
    opt.slow_cutoff_s = 10; /* 80 s: --timeout (1 s here) is the smaller */
    opt.run_timeout_s = 1;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_RUN_TIMEOUT);
    CHECK_CONTAINS(m.msg, "within 1 s; worker killed");
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

TEST(threads_option_sets_the_worker_threads) __attribute__((unused));
TEST(threads_option_sets_the_worker_threads) {
    char out[300], cmd[400];
    snprintf(out, sizeof out, "%s/threads.txt", g_dir);
    snprintf(cmd, sizeof cmd,
             "FILE *f = fopen(\"%s\", \"w\"); if (f) { fprintf(f, \"%%d\\n\", omp_get_max_threads()); fclose(f); }",
             out);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *s = dense_source(4, 8, 16, STORE, "", cmd);
    BuildResult b;
    build(s, &opt, &b);
    free(s);
    set_dense(4, 8, 16);
    MeasureResult m;
    opt.threads = 1;
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(read_number(out), 1);
    MeasureResult_done(&m);
    opt.threads = 0; /* all cores */
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK_EQ_INT(read_number(out), g_dev.cores);
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

TEST(task_change_uses_the_new_reference) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *s1 = dense_source(3, 5, 7, STORE, "", "");
    char *s2 = dense_source(4, 8, 16, STORE, "", "");
    BuildResult b1, b2;
    build(s1, &opt, &b1);
    build(s2, &opt, &b2);
    free(s1);
    free(s2);
    MeasureResult m;
    set_dense(3, 5, 7);
    measure(g_runner, &b1, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    MeasureResult_done(&m);
    set_dense(4, 8, 16);
    measure(g_runner, &b2, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    MeasureResult_done(&m);
    /* the 3x5x7 kernel reads inside the 4x8x16 buffers but computes the wrong thing */
    measure(g_runner, &b1, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_WRONG_ANSWER);
    MeasureResult_done(&m);
    BuildResult_done(&b1);
    BuildResult_done(&b2);
}

/* A new task's inputs are read for WORKER_WARM_S before its first timing: the
 * first measurement after a task change lasts that long at least, and the next
 * one of the same task works. (That it does not pay the warm-up again is a
 * matter of speed, for bench/: under load no bound on it holds.) */
TEST(task_change_warms_the_inputs_once) {
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    char *src = dense_source(5, 6, 7, STORE, "", "");
    BuildResult b;
    build(src, &opt, &b);
    free(src);
    MeasureResult m;
    set_dense(5, 6, 7);
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    CHECK(m.run_s >= WORKER_WARM_S);
    MeasureResult_done(&m);
    measure(g_runner, &b, &opt, &m);
    CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
    MeasureResult_done(&m);
    BuildResult_done(&b);
}

/* WorkerTask_warm reads for the time given, one pass at least. */
TEST(warm_reads_the_task_for_the_time_given) {
    char path[300], err[TT_ERRLEN];
    snprintf(path, sizeof path, "%s/warm_task.bin", g_dir);
    Workload wl;
    CHECK(Workload_parse("dense:m=2,n=64,k=64", &wl, err) == TT_OK);
    CHECK(WorkerTask_write(&wl, path, err) == TT_OK);
    WorkerTask task;
    CHECK(WorkerTask_map(&task, path, err) == TT_OK);
    CHECK_EQ_INT(WorkerTask_warm(&task, 0), 1);
    double t0 = clock_mono();
    int passes = WorkerTask_warm(&task, 0.01);
    CHECK(clock_mono() - t0 >= 0.01);
    CHECK(passes >= 1);
    WorkerTask_unmap(&task);
    unlink(path);
}

typedef struct BuildJob {
    int first;
    BuildResult res[4];
} BuildJob;

static void *build_thread(void *arg) {
    BuildJob *job = arg;
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    for (int i = 0; i < 4; i++) {
        char body[96];
        snprintf(body, sizeof body, "s->o[m * N + n] = acc + %d.0f * 0;", job->first + i);
        char *s = dense_source(4, 8, 16, body, "", "");
        KernelSource src;
        KernelSource_init(&src);
        src.source = s;
        BuildResult_init(&job->res[i]);
        target_cpu.build(&src, &g_dev, &opt, g_dir, 1000 + (uint64_t)(job->first + i), &job->res[i]);
        KernelSource_done(&src);
    }
    return NULL;
}

TEST(builds_from_two_threads) {
    BuildJob jobs[2] = {{.first = 0}, {.first = 4}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, build_thread, &jobs[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    set_dense(4, 8, 16);
    for (int j = 0; j < 2; j++) {
        for (int i = 0; i < 4; i++) {
            BuildResult *b = &jobs[j].res[i];
            CHECK_EQ_INT(b->error_no, ERR_NO_ERROR);
            MeasureResult m;
            measure(g_runner, b, &opt, &m);
            CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
            MeasureResult_done(&m);
            BuildResult_done(b);
        }
    }
}

TEST(worker_protocol_ping_sigint_and_death) {
    char exe[512], err[TT_ERRLEN], msg[256];
    CHECK(WorkerProc_findExe(exe, sizeof exe, err) == TT_OK);
    WorkerProc wp;
    WorkerProc_init(&wp, exe, "cpu", NULL);
    WorkerReply rep;
    CHECK_EQ_INT(WorkerProc_call(&wp, WMSG_PING, NULL, 0, NULL, 0, 5.0, &rep, msg, sizeof msg), WORKER_OK);
    CHECK(wp.pid > 0);
    pid_t first = wp.pid;
    /* Ctrl-C reaches the terminal's process group; the worker has its own and blocks SIGINT anyway. */
    CHECK(getpgid(first) == first);
    kill(first, SIGINT);
    usleep(50000);
    double t0 = clock_mono();
    int n = 200;
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(WorkerProc_call(&wp, WMSG_PING, NULL, 0, NULL, 0, 5.0, &rep, msg, sizeof msg), WORKER_OK);
    double rtt = (clock_mono() - t0) / n;
    CHECK_EQ_INT(wp.pid, first); /* survived SIGINT */
    printf("worker round trip: %.1f us\n", rtt * 1e6);

    kill(first, SIGKILL);
    CHECK_EQ_INT(WorkerProc_call(&wp, WMSG_PING, NULL, 0, NULL, 0, 5.0, &rep, msg, sizeof msg), WORKER_DIED);
    CHECK_CONTAINS(msg, "signal 9");
    CHECK_EQ_INT(wp.pid, 0);
    CHECK_EQ_INT(WorkerProc_call(&wp, WMSG_PING, NULL, 0, NULL, 0, 5.0, &rep, msg, sizeof msg), WORKER_OK);
    CHECK(wp.pid != first);
    WorkerProc_done(&wp);
    CHECK_EQ_INT(wp.pid, 0);

    WorkerProc_init(&wp, "/nonexistent/tunetop-worker", "cpu", NULL);
    CHECK_EQ_INT(WorkerProc_call(&wp, WMSG_PING, NULL, 0, NULL, 0, 5.0, &rep, msg, sizeof msg), WORKER_FAILED);
    CHECK_CONTAINS(msg, "/nonexistent/tunetop-worker");
    WorkerProc_done(&wp);

    WorkerProc_init(&wp, exe, "no-such-mode", NULL);
    WorkerMeasureReq req;
    memset(&req, 0, sizeof req);
    CHECK_EQ_INT(WorkerProc_call(&wp, WMSG_MEASURE, &req, sizeof req, NULL, 0, 5.0, &rep, msg, sizeof msg), WORKER_OK);
    CHECK_EQ_INT(rep.error_no, ERR_RUNTIME_DEVICE);
    CHECK_CONTAINS(msg, "no-such-mode");
    WorkerProc_done(&wp);
}

TEST(measure_overhead) {
    /* number 1, repeat 1 of a ~100 ns kernel: run_s is the cost of one
     * measurement itself (round trip, dlopen, setup, compare, dlclose). */
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.number = 1;
    opt.repeat = 1;
    char *s = dense_source(4, 8, 16, STORE, "", "");
    BuildResult b;
    build(s, &opt, &b);
    free(s);
    set_dense(4, 8, 16);
    MeasureResult m;
    measure(g_runner, &b, &opt, &m); /* the worker may need a restart after the previous test */
    MeasureResult_done(&m);
    double t0 = clock_mono();
    int n = 50;
    for (int i = 0; i < n; i++) {
        measure(g_runner, &b, &opt, &m);
        CHECK_EQ_INT(m.error_no, ERR_NO_ERROR);
        MeasureResult_done(&m);
    }
    double per = (clock_mono() - t0) / n;
    CHECK(per < 0.5);
    printf("overhead per measurement (tiny kernel, number 1, repeat 1): %.3f ms\n", per * 1e3);
    BuildResult_done(&b);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tt-test-cpu-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    char err[TT_ERRLEN];
    RUN(probe_describes_this_cpu);
    g_runner = target_cpu.runner_new(&g_dev, err);
    if (!g_runner) {
        fprintf(stderr, "runner_new: %s (build the tunetop-worker target)\n", err);
        return 1;
    }
    RUN(correct_kernel_measures);
    RUN(slow_cutoff_stops_after_one_repeat);
    RUN(syntax_error_is_compile_host_with_the_message);
    RUN(undefined_function_is_compile_host);
    RUN(abi_violations_are_runtime_device);
    RUN(build_timeout_kills_the_compiler);
    RUN(wrong_values_are_wrong_answer);
    RUN(unwritten_output_is_wrong_answer);
    RUN(crash_is_runtime_device_and_the_next_measure_works);
    RUN(abort_quotes_the_last_output_of_the_worker);
    RUN(hang_is_run_timeout_and_the_next_measure_works);
    RUN(number_repeat_and_min_repeat_ms);
    RUN(slow_kernel_repeats_are_single_runs);
    RUN(slow_cutoff_shortens_the_run_timeout);
#ifndef TT_CPU_TSAN /* under ThreadSanitizer candidates are built without OpenMP (kernels/targets/cpu/abi.h) */
    RUN(threads_option_sets_the_worker_threads);
#endif
    RUN(task_change_uses_the_new_reference);
    RUN(task_change_warms_the_inputs_once);
    RUN(warm_reads_the_task_for_the_time_given);
    RUN(builds_from_two_threads);
    RUN(worker_protocol_ping_sigint_and_death);
    RUN(measure_overhead);
    target_cpu.runner_delete(g_runner);

    char path[400];
    const char *leftovers[] = {"calls.txt", "threads.txt"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, leftovers[i]);
        unlink(path);
    }
    if (rmdir(g_dir) != 0) {
        fprintf(stderr, "build directory %s not empty after the test: %s\n", g_dir, strerror(errno));
        check_failed++;
    }
    return check_summary();
}
