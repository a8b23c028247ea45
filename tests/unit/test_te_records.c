/* tests/unit/test_te_records.c: a schedule's step list stored in a record
 * (the "steps" key), written to a log, read back and replayed gives the
 * identical loop nest; records without steps read as before. A tensor
 * expression as a task (kernels/templates/te/te_task.h): its workload key parses back, the
 * same schedule number gives the same steps, and the comparison the worker
 * makes rejects wrong outputs even when they are small (a softmax's); its cpu
 * unit gives its intermediate tensors buffers aligned to a cache line. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/targets/cpu/abi.h"
#include "kernels/targets/launch_plan.h"
#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_task.h"
#include "records/log.h"
#include "tests/check.h"

static const char *const EXAMPLES[] = {"softmax", "layer_norm", "max_pool", "dense_bias_gelu", "matmul", "conv2d"};
#define N_EXAMPLES ((int)(sizeof EXAMPLES / sizeof *EXAMPLES))
#define PER_EXAMPLE 12

static TeProgram *load_example(const char *name, char *err) {
    const char *data = getenv("TT_TEST_DATA");
    char path[512];
    snprintf(path, sizeof path, "%s/../../examples/te/%s.te", data ? data : "tests/data", name);
    return TeProgram_load(path, NULL, 0, err);
}

static void print_nest(const TeDag *d, const Steps *s, StrBuf *out, char *err) {
    LoopNest ln;
    if (LoopNest_lower(&ln, d, s, err) != TT_OK) {
        StrBuf_printf(out, "(does not lower: %s)", err);
        return;
    }
    LoopNest_print(&ln, out);
    LoopNest_done(&ln);
}

TEST(steps_round_trip_through_a_log) {
    char path[] = "/tmp/tt-te-records.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    char err[TT_ERRLEN] = "";
    LogWriter *w = NULL;
    off_t torn = 0;
    CHECK(LogWriter_open(path, "cpu", &w, &torn, err) == TT_OK);
    if (!w) return;

    static TeDag dags[N_EXAMPLES];
    TeProgram *progs[N_EXAMPLES] = {0};
    StrBuf nests[N_EXAMPLES][PER_EXAMPLE];
    Rng rng;
    Rng_seed(&rng, 2026);
    /* one template record without steps among them */
    Record plain;
    Record_init(&plain);
    snprintf(plain.task_key, sizeof plain.task_key, "dense:m=4,n=4,k=4");
    snprintf(plain.template_name, sizeof plain.template_name, "dense.cpu");
    snprintf(plain.target, sizeof plain.target, "cpu");
    plain.n_costs = 1;
    plain.costs[0] = 1e-6;
    CHECK(LogWriter_append(w, &plain, err) == TT_OK);
    for (int e = 0; e < N_EXAMPLES; e++) {
        progs[e] = load_example(EXAMPLES[e], err);
        if (!progs[e]) fprintf(stderr, "%s: %s\n", EXAMPLES[e], err);
        CHECK(progs[e] && TeDag_build(&dags[e], progs[e], err) == TT_OK);
        for (int k = 0; k < PER_EXAMPLE; k++) {
            StrBuf_init(&nests[e][k]);
            if (!progs[e]) continue;
            Steps s;
            TeSchedule_sample(&dags[e], &rng, 0, &s);
            print_nest(&dags[e], &s, &nests[e][k], err);
            StrBuf text;
            StrBuf_init(&text);
            Steps_encode(&s, &text);
            Record rec;
            Record_init(&rec);
            snprintf(rec.task_key, sizeof rec.task_key, "expr:name=%s,te=%s", EXAMPLES[e], dags[e].key);
            snprintf(rec.template_name, sizeof rec.template_name, "te.cpu");
            snprintf(rec.target, sizeof rec.target, "cpu");
            rec.index = (uint64_t)(e * PER_EXAMPLE + k);
            rec.n_costs = 1;
            rec.costs[0] = 1e-3 * (k + 1);
            rec.steps = StrBuf_take(&text);
            StrBuf_done(&text);
            CHECK(LogWriter_append(w, &rec, err) == TT_OK);
            Record_done(&rec);
        }
    }
    LogWriter_close(w);

    LogReader *r = NULL;
    LogHeader h;
    CHECK(LogReader_open(path, &r, &h, err) == TT_OK);
    int replayed = 0, plain_seen = 0;
    Record rec;
    Record_init(&rec);
    char msg[TT_ERRLEN];
    while (r && LogReader_next(r, &rec, msg) == LOG_RECORD) {
        if (strcmp(rec.template_name, "dense.cpu") == 0) {
            CHECK(rec.steps == NULL);
            char *json = Record_toJson(&rec);
            CHECK(strstr(json, "\"steps\"") == NULL);
            free(json);
            plain_seen++;
            continue;
        }
        CHECK(rec.steps != NULL);
        if (!rec.steps) continue;
        int e = (int)(rec.index / PER_EXAMPLE), k = (int)(rec.index % PER_EXAMPLE);
        CHECK(e < N_EXAMPLES);
        if (e >= N_EXAMPLES) continue;
        Steps s;
        CHECK(Steps_decode(rec.steps, &s, err) == TT_OK);
        StrBuf again;
        StrBuf_init(&again);
        print_nest(&dags[e], &s, &again, err);
        CHECK_STR(again.data, nests[e][k].data);
        if (strcmp(again.data, nests[e][k].data) == 0) replayed++;
        StrBuf_done(&again);
        char *json = Record_toJson(&rec);
        CHECK(strstr(json, "\"steps\":\"") != NULL);
        free(json);
    }
    Record_done(&rec);
    if (r) LogReader_close(r);
    CHECK_EQ_INT(plain_seen, 1);
    CHECK_EQ_INT(replayed, N_EXAMPLES * PER_EXAMPLE);
    for (int e = 0; e < N_EXAMPLES; e++) {
        for (int k = 0; k < PER_EXAMPLE; k++)
            StrBuf_done(&nests[e][k]);
        TeProgram_delete(progs[e]);
    }
    unlink(path);
}

/* Record_copy gives the copy its own steps; Record_done frees them. */
TEST(record_copy_owns_steps) {
    Record a, b;
    Record_init(&a);
    Record_init(&b);
    a.steps = strdup("split 0 1 8; parallel 0 0");
    Record_copy(&b, &a);
    CHECK(b.steps != a.steps);
    CHECK_STR(b.steps, "split 0 1 8; parallel 0 0");
    Record_done(&a);
    CHECK(a.steps == NULL);
    CHECK_STR(b.steps, "split 0 1 8; parallel 0 0");
    Record_done(&b);
}

TEST(expr_task_key_sample_and_compare) {
    const char *data = getenv("TT_TEST_DATA");
    char path[512], err[TT_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/../../examples/te/softmax.te", data ? data : "tests/data");
    TeSet sets[] = {{"M", 4}, {"N", 50}};
    TeTask *t = NULL;
    Workload wl;
    CHECK(TeTask_load(path, sets, 2, &t, &wl, err) == TT_OK);
    if (!t) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    char key[WORKLOAD_KEY_LEN];
    Workload_key(&wl, key, sizeof key);
    CHECK(strncmp(key, "expr:name=softmax,te=te-", 24) == 0);
    Workload back;
    CHECK(Workload_parse(key, &back, err) == TT_OK);
    CHECK(back.op == OP_EXPR && back.expr == NULL);
    CHECK(Workload_equal(&wl, &back));
    CHECK_NEAR(Workload_flops(&back), Workload_flops(&wl), 0);
    CHECK_NEAR(Workload_compulsoryBytes(&back), 4.0 * (200 + 200), 0);
    CHECK_EQ_INT(back.expr_out, 200);
    CHECK_EQ_INT(back.expr_red, 50);
    CHECK(Workload_parse("expr:name=x,te=te-1,flops=1,bytes=1,out=1", &back, err) == TT_ERR);
    CHECK_STR(err, "red: missing key for expr");

    /* the same number, the same steps and source; the source is a cpu-ABI unit */
    KernelSource a, b;
    KernelSource_init(&a);
    KernelSource_init(&b);
    Steps s1, s2;
    TeTask_sample(t, 4242, &s1);
    TeTask_sample(t, 4242, &s2);
    CHECK(TeTask_source(t, &s1, &a, err) == TT_OK);
    CHECK(TeTask_source(t, &s2, &b, err) == TT_OK);
    CHECK(a.steps && b.steps && strcmp(a.steps, b.steps) == 0);
    CHECK(a.source && b.source && strcmp(a.source, b.source) == 0);
    CHECK(a.source && strstr(a.source, "int tt_setup(float **args, void **state)") != NULL);
    KernelSource_done(&a);
    KernelSource_done(&b);

    /* the reference: each row of a softmax sums to 1; a 2% error in one element fails */
    ArgInfo info[WORKLOAD_MAX_ARGS];
    int n = Workload_args(&wl, info);
    CHECK_EQ_INT(n, 2);
    CHECK_STR(info[0].name, "X");
    float *args[2] = {malloc(sizeof(float) * info[0].count), malloc(sizeof(float) * info[1].count)};
    Workload_fillInputs(&wl, args, 1);
    Workload_reference(&wl, args);
    double row = 0;
    for (int j = 0; j < 50; j++)
        row += args[1][j];
    CHECK_NEAR(row, 1.0, 1e-5);
    float *got = malloc(sizeof(float) * info[1].count);
    memcpy(got, args[1], sizeof(float) * info[1].count);
    char msg[256] = "";
    CHECK(Workload_compare(&wl, args[1], got, msg, sizeof msg));
    got[17] *= 1.02f;
    CHECK(!Workload_compare(&wl, args[1], got, msg, sizeof msg));
    CHECK(strstr(msg, "element 17 of the output of softmax") != NULL);
    memset(got, 0, sizeof(float) * info[1].count);
    CHECK(!Workload_compare(&wl, args[1], got, msg, sizeof msg));
    free(got);
    free(args[0]);
    free(args[1]);
    TeTask_delete(t);
}

/* The cpu unit of a task built as the worker builds it: its setup gives every
 * intermediate tensor a buffer aligned to a cache line (a buffer of 480 KB, which
 * malloc maps 16 bytes past a page boundary), and its run computes the reference. */
TEST(expr_task_scratch_is_aligned) {
    char err[TT_ERRLEN] = "";
    TeTask *t = NULL;
    Workload wl;
    const char *text = "input A[300, 400]\nB[i < 300, j < 400] = A[i, j] * 2\n"
                       "C[i < 300, j < 400] = B[i, j] + 1\nD[i < 300, j < 400] = C[i, j] * B[i, j]\noutput D\n";
    CHECK(TeTask_fromText(text, "scratch", &t, &wl, err) == TT_OK);
    if (!t) return;
    Steps none = {0};
    KernelSource src;
    KernelSource_init(&src);
    CHECK(TeTask_source(t, &none, &src, err) == TT_OK);
    char dir[] = "/tmp/tt-te-scratch.XXXXXX", c_path[64], so_path[64], cmd[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(c_path, sizeof c_path, "%s/k.c", dir);
    snprintf(so_path, sizeof so_path, "%s/k.so", dir);
    FILE *f = fopen(c_path, "w");
    CHECK(f != NULL);
    if (f) fputs(src.source, f), fclose(f);
    snprintf(cmd, sizeof cmd, "cc %s -o %s %s -lm", TT_CPU_CFLAGS, so_path, c_path);
    CHECK_EQ_INT(system(cmd), 0);
    void *so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    int (*setup)(float **, void **) = so ? (int (*)(float **, void **))dlsym(so, "tt_setup") : NULL;
    void (*run)(void *) = so ? (void (*)(void *))dlsym(so, "tt_run") : NULL;
    void (*teardown)(void *) = so ? (void (*)(void *))dlsym(so, "tt_teardown") : NULL;
    CHECK(setup && run && teardown);
    float *a = malloc(sizeof(float) * 300 * 400), *d = malloc(sizeof(float) * 300 * 400);
    float *args[2] = {a, d};
    void *state = NULL;
    if (setup && run && teardown && a && d) {
        for (int i = 0; i < 300 * 400; i++)
            a[i] = (float)(i % 17) - 8;
        CHECK_EQ_INT(setup(args, &state), 0);
        float **tensors = state; /* TtState: every program tensor's buffer, in program order */
        int b = TeProgram_find(t->prog, "B"), c = TeProgram_find(t->prog, "C");
        CHECK(b >= 0 && c >= 0);
        CHECK_EQ_INT((int)((uintptr_t)tensors[b] % 64), 0);
        CHECK_EQ_INT((int)((uintptr_t)tensors[c] % 64), 0);
        run(state);
        CHECK_NEAR(d[401], (2 * a[401] + 1) * 2 * a[401], 0);
        teardown(state);
    }
    free(a);
    free(d);
    if (so) dlclose(so);
    unlink(so_path);
    unlink(c_path);
    rmdir(dir);
    KernelSource_done(&src);
    TeTask_delete(t);
}

/* te.gpu: the template a GPU target finds for an expression. Each number is
 * one kernel (entry tt_te_k0) with its launch shape; the same number gives the
 * same source; the recorded steps replay to that source; multi-stage
 * expressions are refused in define_space with one sentence. */
TEST(gpu_template_candidates) {
    const char *data = getenv("TT_TEST_DATA");
    char path[512], err[TT_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/../../examples/te/dense.te", data ? data : "tests/data");
    TeSet sets[] = {{"M", 3}, {"N", 20}, {"K", 17}};
    TeTask *t = NULL;
    Workload wl;
    CHECK(TeTask_load(path, sets, 3, &t, &wl, err) == TT_OK);
    if (!t) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK(Template_find(&wl, FAMILY_GPU, err) == &tmpl_te_gpu);
    CHECK(Template_find(&wl, FAMILY_CPU, err) == &tmpl_te_sketch); /* on cpu an expression evolves by default */
    DeviceInfo dev = {0};
    Space space;
    Space_init(&space);
    CHECK(tmpl_te_gpu.define_space(&wl, &dev, &space, err) == TT_OK);
    int bound = 0;
    for (uint64_t n = 0; n < 40; n++) {
        uint64_t index = n * 26189 % TE_SAMPLES;
        int32_t choice[16];
        Space_decode(&space, index, choice);
        KernelSource a, b, r;
        KernelSource_init(&a);
        KernelSource_init(&b);
        KernelSource_init(&r);
        Dialect dl = n % 4 == 3 ? DIALECT_CUDA : DIALECT_OPENCL;
        CHECK(tmpl_te_gpu.generate(&wl, &space, choice, &dev, dl, &a, err) == TT_OK);
        CHECK(tmpl_te_gpu.generate(&wl, &space, choice, &dev, dl, &b, err) == TT_OK);
        CHECK(a.source && b.source && strcmp(a.source, b.source) == 0);
        CHECK_STR(a.entry, "tt_te_k0");
        CHECK(a.source && strstr(a.source, dl == DIALECT_CUDA ? "__global__" : "__kernel") != NULL);
        LaunchPlan plan; /* on opencl a reduction that initialises apart is a second kernel */
        int planned = a.source ? LaunchPlan_parse(a.source, &plan, err) : -1;
        CHECK(planned == 0 || (planned == 1 && dl == DIALECT_OPENCL && plan.n_launches == 2));
        CHECK(a.source && (planned == 1) == (strstr(a.source, "tt_te_k1") != NULL));
        int64_t threads = a.block[0] * a.block[1] * a.block[2];
        CHECK(threads >= 1 && threads <= 1024 && a.grid[0] >= 1 && a.grid[1] >= 1 && a.grid[2] >= 1);
        for (int k = 0; planned == 1 && k < plan.n_launches; k++)
            threads *= plan.launch[k].block[0] * plan.launch[k].grid[0];
        if (threads > 1 || a.grid[0] > 1) bound++;
        Steps steps;
        CHECK(a.steps && Steps_decode(a.steps, &steps, err) == TT_OK);
        CHECK(a.steps && TeTask_source_gpu(t, &steps, dl, &r, err) == TT_OK);
        CHECK(r.source && a.source && strcmp(r.source, a.source) == 0);
        CHECK(r.grid[0] == a.grid[0] && r.block[0] == a.block[0]);
        KernelSource_done(&a);
        KernelSource_done(&b);
        KernelSource_done(&r);
    }
    CHECK(bound >= 20); /* most schedules bind loops to GPU indices */
    Space_done(&space);
    TeTask_delete(t);

    snprintf(path, sizeof path, "%s/../../examples/te/softmax.te", data ? data : "tests/data");
    TeSet ssets[] = {{"M", 4}, {"N", 50}};
    CHECK(TeTask_load(path, ssets, 2, &t, &wl, err) == TT_OK);
    if (!t) return;
    /* on opencl a program of several kernels with scratch buffers, its launch plan first */
    Space_init(&space);
    CHECK(tmpl_te_gpu.define_space(&wl, &dev, &space, err) == TT_OK);
    int multi = 0;
    for (uint64_t n = 0; n < 12; n++) {
        int32_t choice[16];
        Space_decode(&space, n * 7919 % TE_SAMPLES, choice);
        KernelSource a;
        KernelSource_init(&a);
        CHECK(tmpl_te_gpu.generate(&wl, &space, choice, &dev, DIALECT_OPENCL, &a, err) == TT_OK);
        LaunchPlan plan;
        CHECK(a.source && LaunchPlan_parse(a.source, &plan, err) == 1);
        /* X is argument 0, Y argument 1, Mx E S scratch */
        CHECK(plan.n_params == 5 && plan.param[0] == 0 && plan.param[1] < 0 && plan.scratch[1] == 4 &&
              plan.param[2] < 0 && plan.scratch[2] == 200 && plan.param[4] == 1);
        CHECK(plan.n_launches >= 1 && strcmp(plan.launch[0].entry, "tt_te_k0") == 0);
        multi += plan.n_launches > 1;
        StrBuf again;
        StrBuf_init(&again);
        LaunchPlan_format(&plan, &again);
        CHECK(a.source && strncmp(a.source, again.data, again.len) == 0);
        StrBuf_done(&again);
        KernelSource_done(&a);
    }
    CHECK(multi >= 6);
    Space_done(&space);
    /* the cuda worker runs one kernel */
    snprintf(dev.arch, sizeof dev.arch, "sm_80");
    Space_init(&space);
    CHECK(tmpl_te_gpu.define_space(&wl, &dev, &space, err) == TT_ERR);
    CHECK_CONTAINS(err, "softmax.te: on the cuda target an expression is tuned when it defines one tensor");
    Space_done(&space);
    Space_init(&space);
    CHECK(tmpl_te_cpu.define_space(&wl, &dev, &space, err) == TT_OK);
    Space_done(&space);
    TeTask_delete(t);
}

/* The launch plan's line: read back as written; a source without it is one kernel; a broken line is an error. */
TEST(launch_plan_text) {
    char err[TT_ERRLEN] = "";
    LaunchPlan p = {.n_params = 3, .param = {0, -1, 1}, .scratch = {0, 120, 0}, .n_launches = 2};
    snprintf(p.launch[0].entry, sizeof p.launch[0].entry, "k0");
    snprintf(p.launch[1].entry, sizeof p.launch[1].entry, "k1");
    for (int a = 0; a < 3; a++)
        p.launch[0].grid[a] = p.launch[0].block[a] = p.launch[1].grid[a] = p.launch[1].block[a] = a + 1;
    StrBuf b;
    StrBuf_init(&b);
    LaunchPlan_format(&p, &b);
    CHECK_STR(b.data, "/* tunetop launches: params A0 S120 A1; k0 1 2 3 1 2 3; k1 1 2 3 1 2 3 */\n");
    StrBuf_append(&b, "__kernel void k0() {}\n");
    LaunchPlan q;
    CHECK(LaunchPlan_parse(b.data, &q, err) == 1);
    CHECK(q.n_params == 3 && q.param[1] == -1 && q.scratch[1] == 120 && q.param[2] == 1 && q.n_launches == 2);
    CHECK(strcmp(q.launch[1].entry, "k1") == 0 && q.launch[1].block[2] == 3);
    StrBuf_done(&b);
    CHECK(LaunchPlan_parse("__kernel void k0() {}\n", &q, err) == 0);
    CHECK(LaunchPlan_parse("/* tunetop launches: params A0; k0 1 1 */", &q, err) == -1);
    CHECK_STR(err, "launch plan: kernel 0 is not 'entry g0 g1 g2 b0 b1 b2'");
    CHECK(LaunchPlan_parse("/* tunetop launches: params A0; k0 1 1 1 1 1 1", &q, err) == -1);
    CHECK_STR(err, "launch plan: no end of the line");
}

int main(void) {
    RUN(launch_plan_text);
    RUN(gpu_template_candidates);
    RUN(expr_task_key_sample_and_compare);
    RUN(expr_task_scratch_is_aligned);
    RUN(steps_round_trip_through_a_log);
    RUN(record_copy_owns_steps);
    return check_summary();
}
