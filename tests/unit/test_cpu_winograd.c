/* tests/unit/test_cpu_winograd.c: the Winograd conv2d template
 * (conv2d_winograd.cpu): its transform matrices are exact, and its kernels
 * match the direct reference within Workload_compare's tolerance on odd
 * shapes and every ResNet-18 3x3 stride-1 layer, for each tile size m = 2,
 * 4, 6 (the worst error is printed as a share of the tolerance). */
#include "tests/unit/cpu_templates_common.h"

/* The transform matrices of F(m, 3) compute the 1-D correlation exactly:
 * sum_j at[i][j] g[j][k] bt[j][l] = [l == i + k]. */
TEST(winograd_matrices) {
    for (int m = 2; m <= 6; m += 2) {
        double at[WG_MAX_A][WG_MAX_A], g[WG_MAX_A][3], bt[WG_MAX_A][WG_MAX_A];
        WinogradCpu_matrices(m, at, g, bt);
        double worst = 0;
        for (int i = 0; i < m; i++)
            for (int k = 0; k < 3; k++)
                for (int l = 0; l < m + 2; l++) {
                    double sum = 0;
                    for (int j = 0; j < m + 2; j++)
                        sum += at[i][j] * g[j][k] * bt[j][l];
                    double d = fabs(sum - (l == i + k ? 1.0 : 0.0));
                    if (d > worst) worst = d;
                }
        CHECK(worst < 1e-12);
    }
}

static void check_winogradEachM(const char *spec, uint64_t seed) {
    g_force_knob = "m";
    g_each[0] = 2, g_each[1] = 4, g_each[2] = 6, g_n_each = 3;
    check_case(spec, &tmpl_conv2d_winograd_cpu, seed);
    g_force_knob = NULL, g_n_each = 0;
}

/* Odd shapes: spatial sizes that are no multiple of any tile, odd channel
 * counts, no / wider padding, a batch, NHWC, the whole epilogue; each tile size. */
TEST(conv2d_winograd_odd) {
    check_winogradEachM("conv2d:n=1,ci=3,h=11,w=13,co=7,kh=3,kw=3,pad=1", 71);
    check_winogradEachM("conv2d:n=2,ci=17,h=9,w=7,co=33,kh=3,kw=3,pad=0,bias=1,relu=1", 72);
    check_winogradEachM("conv2d:n=1,ci=5,h=10,w=7,co=17,kh=3,kw=3,pad=2,layout=NHWC,bias=1,relu=1,residual=1", 73);
    check_winogradEachM("conv2d:n=1,ci=20,h=1,w=5,co=9,kh=3,kw=3,pad=1,residual=1", 74);
    check_winogradEachM("conv2d:n=1,ci=31,h=15,w=15,co=31,kh=3,kw=3,pad=1,bias=1", 75);
    check_winogradEachM("conv2d:n=1,ci=32,h=10,w=9,co=17,kh=3,kw=3,pad=1,bias=1,relu6=1", 76); /* ReLU6 */
}

/* Every 3x3 stride-1 layer of ResNet-18, each tile size, within Workload_compare's tolerance. */
TEST(conv2d_winograd_resnet18) {
    check_winogradEachM("conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1", 81);
    check_winogradEachM("conv2d:n=1,ci=128,h=28,w=28,co=128,kh=3,kw=3,pad=1,bias=1,relu=1", 82);
    check_winogradEachM("conv2d:n=1,ci=256,h=14,w=14,co=256,kh=3,kw=3,pad=1,bias=1,residual=1", 83);
    check_winogradEachM("conv2d:n=1,ci=512,h=7,w=7,co=512,kh=3,kw=3,pad=1", 84);
}

/* xform 1: each thread transforms the input tiles of its own tile blocks (no
 * shared V, no barrier); odd shapes, a batch, NHWC with the whole epilogue, and
 * a layer with many tile blocks, on the two threads of the test device. */
TEST(conv2d_winograd_per_thread_transform) {
    g_force_knob = "xform", g_force_value = 1;
    check_case("conv2d:n=1,ci=3,h=11,w=13,co=7,kh=3,kw=3,pad=1", &tmpl_conv2d_winograd_cpu, 91);
    check_case("conv2d:n=2,ci=17,h=9,w=7,co=33,kh=3,kw=3,pad=0,bias=1,relu=1", &tmpl_conv2d_winograd_cpu, 92);
    check_case("conv2d:n=1,ci=5,h=10,w=7,co=17,kh=3,kw=3,pad=2,layout=NHWC,bias=1,relu6=1,residual=1",
               &tmpl_conv2d_winograd_cpu, 93);
    check_case("conv2d:n=1,ci=64,h=28,w=28,co=64,kh=3,kw=3,pad=1,bias=1", &tmpl_conv2d_winograd_cpu, 94);
    g_force_knob = NULL;
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
    RUN(winograd_matrices);
    RUN(conv2d_winograd_odd);
    RUN(conv2d_winograd_resnet18);
    RUN(conv2d_winograd_per_thread_transform);
    if (!check_failed) rmdir(g_dir); /* failed sources stay for inspection */
    return check_summary();
}
