/* tests/unit/test_cpu_templates.c: the CPU templates (conv2d, depthwise,
 * dense, batch_matmul) generate C that compiles and matches the reference on
 * small, odd shapes, for several random configs per workload.
 *
 * The test does what the cpu target does, in-process: generate a config's
 * source, compile it with `cc` + TT_CPU_CFLAGS into a temporary shared object
 * (two compiles at a time), dlopen it, call tt_setup / tt_pack / tt_run /
 * tt_finish / tt_teardown, and compare the output with Workload_reference. */
#include "tests/unit/cpu_templates_common.h"

TEST(conv2d_nchw_odd) {
    check_case("conv2d:n=1,ci=3,h=11,w=13,co=7,kh=3,kw=3,stride=1,pad=1", &tmpl_conv2d_cpu, 11);
    check_case("conv2d:n=2,ci=8,h=9,w=9,co=20,kh=3,kw=3,stride=2,pad=0", &tmpl_conv2d_cpu, 12);
    check_case("conv2d:n=1,ci=5,h=17,w=10,co=17,kh=7,kw=7,stride=2,pad=3,bias=1,relu=1", &tmpl_conv2d_cpu, 13);
    check_case("conv2d:n=1,ci=6,h=12,w=12,co=16,kh=3,kw=3,pad=2,dilation=2,bias=1,relu=1,residual=1", &tmpl_conv2d_cpu,
               14);
    check_case("conv2d:n=1,ci=32,h=8,w=8,co=48,kh=1,kw=1,stride=2,pad=0", &tmpl_conv2d_cpu, 15);
    /* ReLU6 (MobileNet-v2's clip to [0, 6]): 288 taps, so many sums exceed 6 */
    check_case("conv2d:n=1,ci=32,h=9,w=9,co=24,kh=3,kw=3,pad=1,bias=1,relu6=1", &tmpl_conv2d_cpu, 16);
}

TEST(conv2d_nhwc) {
    check_case("conv2d:n=1,ci=5,h=10,w=7,co=17,kh=3,kw=3,stride=2,pad=3,layout=NHWC,bias=1,relu=1", &tmpl_conv2d_cpu,
               21);
    check_case("conv2d:n=2,ci=16,h=8,w=9,co=32,kh=1,kw=1,layout=NHWC,residual=1", &tmpl_conv2d_cpu, 22);
    /* the output written in place (no tt_finish), with the whole epilogue */
    g_force_knob = "out_direct", g_force_value = 1;
    check_case("conv2d:n=2,ci=5,h=9,w=12,co=32,kh=3,kw=3,pad=1,layout=NHWC,bias=1,relu=1,residual=1", &tmpl_conv2d_cpu,
               24);
    g_force_knob = NULL;
    check_case("conv2d:n=1,ci=7,h=13,w=13,co=24,kh=3,kw=5,pad=2,dilation=2,layout=NHWC,bias=1,relu=1,residual=1",
               &tmpl_conv2d_cpu, 23);
}

/* split 1: the parallel loop's iterations dealt out one at a time to the two threads */
TEST(conv2d_split_interleaved) {
    g_force_knob = "split", g_force_value = 1;
    check_case("conv2d:n=2,ci=8,h=9,w=9,co=20,kh=3,kw=3,stride=2,pad=1,bias=1,relu=1", &tmpl_conv2d_cpu, 25);
    check_case("conv2d:n=1,ci=16,h=7,w=7,co=48,kh=3,kw=3,pad=1,layout=NHWC,residual=1", &tmpl_conv2d_cpu, 26);
    g_force_knob = NULL;
}

TEST(depthwise) {
    check_case("depthwise_conv2d:n=1,ci=13,h=9,w=11,kh=3,kw=3,pad=1", &tmpl_depthwise_cpu, 31);
    check_case("depthwise_conv2d:n=1,ci=8,mult=2,h=8,w=8,kh=3,kw=3,stride=2,pad=1,layout=NHWC,bias=1,relu=1",
               &tmpl_depthwise_cpu, 32);
    check_case("depthwise_conv2d:n=2,ci=32,h=7,w=7,kh=3,kw=3,pad=2,dilation=2,residual=1", &tmpl_depthwise_cpu, 33);
    check_case("depthwise_conv2d:n=1,ci=17,h=12,w=12,kh=5,kw=5,stride=2,pad=0,layout=NHWC", &tmpl_depthwise_cpu, 34);
    check_case("depthwise_conv2d:n=1,ci=16,h=9,w=9,kh=5,kw=5,pad=2,layout=NHWC,bias=1,relu6=1", &tmpl_depthwise_cpu,
               35);
}

TEST(dense) {
    check_case("dense:m=1,n=37,k=29", &tmpl_dense_cpu, 41);
    check_case("dense:m=64,n=50,k=33,bias=1,relu=1", &tmpl_dense_cpu, 42);
    check_case("dense:m=7,n=16,k=300", &tmpl_dense_cpu, 43);
    check_case("dense:m=1,n=100,k=64,bias=1", &tmpl_dense_cpu, 44);
}

TEST(batch_matmul) {
    check_case("batch_matmul:b=3,m=5,n=19,k=11", &tmpl_batch_matmul_cpu, 51);
    check_case("batch_matmul:b=2,m=16,n=32,k=64", &tmpl_batch_matmul_cpu, 52);
}

/* Degenerate but legal shapes: single elements, a kernel larger than the input, stride 3. */
TEST(extremes) {
    check_case("conv2d:n=1,ci=1,h=1,w=1,co=1,kh=1,kw=1", &tmpl_conv2d_cpu, 61);
    check_case("conv2d:n=1,ci=2,h=3,w=2,co=3,kh=5,kw=5,pad=2,bias=1,relu=1,residual=1", &tmpl_conv2d_cpu, 62);
    check_case("conv2d:n=3,ci=3,h=5,w=31,co=33,kh=1,kw=3,stride=3,pad=1,layout=NHWC", &tmpl_conv2d_cpu, 63);
    check_case("depthwise_conv2d:n=1,ci=1,h=2,w=2,kh=3,kw=3,pad=1,mult=3", &tmpl_depthwise_cpu, 64);
    check_case("batch_matmul:b=1,m=1,n=1,k=1", &tmpl_batch_matmul_cpu, 67);
}

/* A register tile larger than the register file is rejected before any compile, with numbers. */
TEST(precheck_registers) {
    char err[TT_ERRLEN];
    Workload wl;
    CHECK(Workload_parse("conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    Space space;
    Space_init(&space);
    CHECK(tmpl_conv2d_cpu.define_space(&wl, &g_dev, &space, err) == TT_OK);
    int32_t choice[SPACE_MAX_KNOBS];
    int invalid = 0, valid = 0;
    char reason[256] = "";
    for (uint64_t i = 0; i < space.total; i++) {
        Space_decode(&space, i, choice);
        char r[256];
        if (tmpl_conv2d_cpu.precheck(&wl, &space, choice, &g_dev, r, sizeof r)) {
            valid++;
        } else {
            if (!invalid) snprintf(reason, sizeof reason, "%s", r);
            invalid++;
        }
    }
    CHECK(valid > 100);
    CHECK(invalid > 0);
    CHECK_CONTAINS(reason, "vector registers >");
    Space_done(&space);

    /* dense: 14 rows x 4 vectors = 56 accumulators cannot fit */
    CHECK(Workload_parse("dense:m=64,n=256,k=64", &wl, err) == TT_OK);
    Space_init(&space);
    CHECK(tmpl_dense_cpu.define_space(&wl, &g_dev, &space, err) == TT_OK);
    invalid = 0;
    for (uint64_t i = 0; i < space.total && !invalid; i++) {
        Space_decode(&space, i, choice);
        if (!tmpl_dense_cpu.precheck(&wl, &space, choice, &g_dev, reason, sizeof reason)) invalid++;
    }
    CHECK(invalid > 0);
    CHECK_CONTAINS(reason, "vector registers >");
    Space_done(&space);
}

int main(void) {
    dev_init(&g_dev);
    /* Kernels bring libgomp with them; keep it loaded so that dlclose of a kernel
     * never unmaps the code its idle OpenMP threads are still running. */
    if (!dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL)) fprintf(stderr, "note: libgomp not preloaded\n");
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tt_cpu_tmpl_XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(conv2d_nchw_odd);
    RUN(conv2d_nhwc);
    RUN(conv2d_split_interleaved);
    RUN(depthwise);
    RUN(dense);
    RUN(batch_matmul);
    RUN(extremes);
    RUN(precheck_registers);
    if (!check_failed) rmdir(g_dir); /* failed sources stay for inspection */
    return check_summary();
}
