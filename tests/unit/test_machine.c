/* tests/unit/test_machine.c: the roofline arithmetic, the machine figures'
 * cache (format, damage, foreign machine) and, in the quick mode, one real
 * measurement: reused from the cache, measured again on request or when the
 * cache is damaged. Figures are only checked for sanity (the machine is
 * shared; they are whatever it gives). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/target.h"
#include "kernels/targets/machine.h"
#include "kernels/templates/cpu/conv2d_winograd_cpu.h"
#include "tests/check.h"

static MachineFigures figures(void) {
    MachineFigures m;
    memset(&m, 0, sizeof m);
    snprintf(m.target, sizeof m.target, "cpu");
    snprintf(m.key, sizeof m.key, "0123456789abcdef");
    snprintf(m.model, sizeof m.model, "Test CPU");
    snprintf(m.isa, sizeof m.isa, "AVX2");
    m.cores = 4;
    m.vector_floats = 8;
    m.peak1_gflops = 100;
    m.peak_gflops = 400;
    m.bw1_gbs = 10;
    m.bw_gbs = 40;
    m.l2_bw1_gbs = 50;
    m.l2_bw_gbs = 200;
    m.l3_bw1_gbs = 30;
    m.l3_bw_gbs = 120;
    m.l1d_bytes = 32 << 10;
    m.l2_bytes = 1 << 20;
    m.l3_bytes = 32 << 20;
    m.measured_at = 1.7e9;
    m.measure_s = 2.5;
    m.triad_bytes = 3 << 20;
    return m;
}

TEST(test_interpolation) {
    MachineFigures m = figures();
    CHECK_NEAR(Machine_peakFor(&m, 1), 100, 1e-9);
    CHECK_NEAR(Machine_peakFor(&m, 4), 400, 1e-9);
    CHECK_NEAR(Machine_peakFor(&m, 0), 400, 1e-9);  /* 0 = all cores */
    CHECK_NEAR(Machine_peakFor(&m, 64), 400, 1e-9); /* more than the cores: all */
    CHECK_NEAR(Machine_peakFor(&m, 2), 200, 1e-9);  /* linear in between */
    CHECK_NEAR(Machine_bandwidthFor(&m, 3), 30, 1e-9);
    CHECK_NEAR(Machine_levelBandwidthFor(&m, ROOF_LEVEL_L2, 1), 50, 1e-9);
    CHECK_NEAR(Machine_levelBandwidthFor(&m, ROOF_LEVEL_L3, 4), 120, 1e-9);
}

TEST(test_compulsory_bytes) {
    Workload wl;
    char err[TT_ERRLEN];
    CHECK(Workload_parse("dense:m=64,n=1024,k=1024", &wl, err) == TT_OK);
    CHECK_NEAR(Workload_compulsoryBytes(&wl), 4.0 * (64 * 1024 + 1024 * 1024 + 64 * 1024), 0);
    CHECK(Workload_parse("dense:m=64,n=1024,k=1024,bias=1", &wl, err) == TT_OK);
    CHECK_NEAR(Workload_compulsoryBytes(&wl), 4.0 * (64 * 1024 + 1024 * 1024 + 1024 + 64 * 1024), 0);
    CHECK(Workload_parse("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    CHECK_NEAR(Workload_compulsoryBytes(&wl), 4.0 * (64 * 56 * 56 + 64 * 64 * 9 + 64 * 56 * 56), 0);
}

/* The bandwidth of `bytes` when `cap` of them sit in a faster level. */
static double blend(double bytes, double cap, double fast, double slow) {
    double f = cap < bytes ? cap : bytes;
    return bytes / (f / fast + (bytes - f) / slow);
}

/* A kernel may skip a convolution's zero-padding taps: the roof's compute
 * ceiling counts only the taps it cannot skip, in the units of the task's GFLOPS. */
TEST(test_useful_flops_and_workload_roof) {
    char err[TT_ERRLEN];
    Workload wl;
    CHECK(Workload_parse("conv2d:ci=512,h=7,w=7,co=512,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    /* per axis 7 outputs x 3 taps = 21 pairs, 2 of them in the padding */
    CHECK_NEAR(Workload_usefulFlops(&wl) / Workload_flops(&wl), (19.0 / 21) * (19.0 / 21), 1e-12);
    MachineFigures m = figures();
    Roof r = Roof_forWorkload(&m, 1, &wl);
    CHECK(!r.memory_bound);
    CHECK_NEAR(r.gflops, 100 * (21.0 / 19) * (21.0 / 19), 1e-9);
    /* stride 2, pad 3, 7x7 taps over 224: the same count done by hand */
    CHECK(Workload_parse("conv2d:ci=3,h=224,w=224,co=64,kh=7,kw=7,stride=2,pad=3", &wl, err) == TT_OK);
    double valid = 0;
    for (int o = 0; o < 112; o++)
        for (int t = 0; t < 7; t++)
            valid += o * 2 - 3 + t >= 0 && o * 2 - 3 + t < 224;
    CHECK_NEAR(Workload_usefulFlops(&wl) / Workload_flops(&wl), (valid / (112 * 7)) * (valid / (112 * 7)), 1e-12);
    /* no padding, or not a convolution: every product counts */
    CHECK(Workload_parse("conv2d:ci=64,h=56,w=56,co=64,kh=1,kw=1", &wl, err) == TT_OK);
    CHECK_NEAR(Workload_usefulFlops(&wl), Workload_flops(&wl), 0);
    CHECK(Workload_parse("dense:m=64,n=1024,k=1024", &wl, err) == TT_OK);
    CHECK_NEAR(Workload_usefulFlops(&wl), Workload_flops(&wl), 0);
    CHECK_NEAR(Roof_forWorkload(&m, 1, &wl).gflops,
               Roof_compute(&m, 1, Workload_flops(&wl), Workload_compulsoryBytes(&wl)).gflops, 1e-9);
}

/* A Winograd kernel's roof: its own arithmetic (the a^2 GEMMs of its cheapest
 * tile size), in the task's (effective) GFLOPS: above the peak. */
TEST(test_winograd_roof) {
    char err[TT_ERRLEN];
    Workload wl;
    CHECK(Workload_parse("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    /* m = 6: 10 x 10 tiles of 8 x 8; m = 4: 14 x 14 of 6 x 6; m = 2: 28 x 28 of 4 x 4 */
    double m6 = 2.0 * 100 * 64 * 64 * 64, m4 = 2.0 * 196 * 36 * 64 * 64, m2 = 2.0 * 784 * 16 * 64 * 64;
    CHECK(m6 < m4 && m6 < m2);
    CHECK_NEAR(WinogradCpu_minFlops(&wl), m6, 1e-3);
    CHECK(Workload_parse("conv2d:ci=512,h=7,w=7,co=512,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    CHECK_NEAR(WinogradCpu_minFlops(&wl), 2.0 * 4 * 36 * 512 * 512, 1e-3); /* m = 4: 2 x 2 tiles of 6 x 6 */
    MachineFigures m = figures();
    Roof r = Roof_forArithmetic(&m, 1, &wl, WinogradCpu_minFlops(&wl));
    CHECK(!r.memory_bound);
    CHECK_NEAR(r.gflops, 100 * Workload_flops(&wl) / WinogradCpu_minFlops(&wl), 1e-9);
    CHECK(r.gflops > 300); /* 3.06x the peak of 100 */
    CHECK_NEAR(Roof_forArithmetic(&m, 1, &wl, 0).gflops, Roof_forWorkload(&m, 1, &wl).gflops, 1e-12);
}

TEST(test_roof_arithmetic) {
    MachineFigures m = figures();
    /* GEMM 1024^3: 2 GFLOP over 12 MiB (in the L3): intensity 170 FLOP/B, compute-bound */
    double flops = 2.0 * 1024 * 1024 * 1024, bytes = 3.0 * 4 * 1024 * 1024;
    Roof r = Roof_compute(&m, 1, flops, bytes);
    CHECK_NEAR(r.gflops, 100, 1e-9);
    CHECK(!r.memory_bound);
    CHECK_EQ_INT(r.level, ROOF_LEVEL_L3);
    CHECK_NEAR(r.intensity, flops / bytes, 1e-9);
    CHECK_NEAR(Roof_compute(&m, 4, flops, bytes).gflops, 400, 1e-9);
    /* a matrix-vector product past the L3: 0.5 FLOP/B, memory-bound at DRAM speed */
    double mv_bytes = 4.0 * (8192.0 * 8192 + 8192 + 8192), mv_flops = 2.0 * 8192 * 8192;
    r = Roof_compute(&m, 1, mv_flops, mv_bytes);
    CHECK(r.memory_bound);
    CHECK_EQ_INT(r.level, ROOF_LEVEL_DRAM);
    /* the 32 MiB the L3 holds go at the L3's speed */
    double l3 = 32 << 20;
    CHECK_NEAR(r.gflops, blend(mv_bytes, l3, 30, 10) * mv_flops / mv_bytes, 1e-9);
    CHECK(r.gflops > 10 * mv_flops / mv_bytes && r.gflops < 11 * mv_flops / mv_bytes);
    CHECK_NEAR(Roof_compute(&m, 4, mv_flops, mv_bytes).gflops, blend(mv_bytes, l3, 120, 40) * mv_flops / mv_bytes,
               1e-9);
    CHECK_STR(Roof_boundText(r.memory_bound ? r.level : 0), "memory-bound (DRAM)");
    /* the same within the L2 (1 thread: 1 MiB; 4 threads: their 4 MiB together) */
    double l2_bytes = 3.0 * (1 << 20), l2_flops = l2_bytes * 0.5;
    r = Roof_compute(&m, 1, l2_flops, l2_bytes);
    CHECK_EQ_INT(r.level, ROOF_LEVEL_L3);
    CHECK_NEAR(r.gflops, blend(l2_bytes, 1 << 20, 50, 30) * 0.5, 1e-9); /* a third from the L2 */
    r = Roof_compute(&m, 4, l2_flops, l2_bytes);
    CHECK_EQ_INT(r.level, ROOF_LEVEL_L2);
    CHECK_NEAR(r.gflops, 200 * 0.5, 1e-9);
    /* in the L1: no bandwidth limit below the peak */
    r = Roof_compute(&m, 1, 8192, 16384);
    CHECK_EQ_INT(r.level, ROOF_LEVEL_L1);
    CHECK(!r.memory_bound);
    CHECK_NEAR(r.gflops, 100, 1e-9);
    /* the L2 not measured: the L3 serves */
    MachineFigures no_l2 = m;
    no_l2.l2_bw1_gbs = no_l2.l2_bw_gbs = 0;
    CHECK_EQ_INT(Roof_compute(&no_l2, 4, l2_flops, l2_bytes).level, ROOF_LEVEL_L3);
    /* a read-only sweep faster than the triad: the roof takes it (an upper bound) */
    MachineFigures reads = m;
    reads.rd_bw1_gbs = 16;
    reads.rd_bw_gbs = 8; /* slower than the triad at all cores: the triad's 40 stays */
    CHECK_NEAR(Roof_compute(&reads, 1, mv_flops, mv_bytes).gflops, blend(mv_bytes, l3, 30, 16) * mv_flops / mv_bytes,
               1e-9);
    CHECK_NEAR(Roof_compute(&reads, 4, mv_flops, mv_bytes).gflops, blend(mv_bytes, l3, 120, 40) * mv_flops / mv_bytes,
               1e-9);
    reads.l3_rd1_gbs = 45;
    CHECK_NEAR(Roof_compute(&reads, 1, l2_flops, l2_bytes).gflops, blend(l2_bytes, 1 << 20, 50, 45) * 0.5, 1e-9);
    /* unknown: zero, never a made-up figure */
    CHECK_NEAR(Roof_compute(&m, 1, 0, bytes).gflops, 0, 0);
    CHECK_NEAR(Roof_compute(NULL, 1, flops, bytes).gflops, 0, 0);
    MachineFigures empty;
    memset(&empty, 0, sizeof empty);
    CHECK_NEAR(Roof_compute(&empty, 1, flops, bytes).gflops, 0, 0);
    /* share and latency: above 1 is kept, never clamped */
    CHECK_NEAR(Roof_share(50, 100), 0.5, 1e-12);
    CHECK_NEAR(Roof_share(120, 100), 1.2, 1e-12);
    CHECK_NEAR(Roof_share(50, 0), 0, 0);
    CHECK_NEAR(Roof_latency(2e9, 100), 0.02, 1e-12);
    CHECK_NEAR(Roof_latency(2e9, 0), 0, 0);
}

TEST(test_key) {
    char a[MACHINE_KEY_LEN], b[MACHINE_KEY_LEN], c[MACHINE_KEY_LEN], d[MACHINE_KEY_LEN];
    Machine_keyOf("cpu", "AMD EPYC", "fma avx2", 2, a);
    Machine_keyOf("cpu", "AMD EPYC", "fma avx2", 2, b);
    Machine_keyOf("cpu", "AMD EPYC", "fma avx2 avx512f", 2, c);
    Machine_keyOf("cpu", "AMD EPYC", "fma avx2", 4, d);
    CHECK_EQ_INT(strlen(a), 16);
    CHECK_STR(a, b);
    CHECK(strcmp(a, c) != 0); /* other flags: another machine */
    CHECK(strcmp(a, d) != 0); /* other core count */
    char here[MACHINE_KEY_LEN], model[96] = "";
    Machine_cpuKey(here, model, sizeof model);
    CHECK_EQ_INT(strlen(here), 16);
    CHECK(model[0] != '\0');
}

TEST(test_format_parse) {
    MachineFigures m = figures(), back;
    char why[TT_ERRLEN] = "";
    char *text = Machine_format(&m);
    CHECK(Machine_parse(text, &back, why) == TT_OK);
    CHECK_STR(back.key, m.key);
    CHECK_STR(back.model, m.model);
    CHECK_EQ_INT(back.cores, 4);
    CHECK_NEAR(back.peak_gflops, 400, 0);
    CHECK_NEAR(back.bw1_gbs, 10, 0);
    CHECK_NEAR(back.l3_bw_gbs, 120, 0);
    CHECK_EQ_INT(back.l2_bytes, 1 << 20);
    /* a file without the read-only figures (written before they existed) still reads */
    char *old = strdup(text);
    CHECK(strstr(old, "rd_bw1_gbs=") != NULL);
    free(old);
    /* one changed digit: the checksum says so */
    char *bad = strdup(text);
    char *p = strstr(bad, "peak_gflops=4");
    CHECK(p != NULL);
    if (p) p[strlen("peak_gflops=")] = '9';
    CHECK(Machine_parse(bad, &back, why) == TT_ERR);
    CHECK_CONTAINS(why, "checksum");
    /* cut short */
    strcpy(bad, text);
    bad[strlen(bad) / 2] = '\0';
    CHECK(Machine_parse(bad, &back, why) == TT_ERR);
    /* not a cache file */
    CHECK(Machine_parse("hello\n", &back, why) == TT_ERR);
    CHECK_CONTAINS(why, "tunetop-machine");
    /* a well-formed file with a figure that is not positive */
    MachineFigures neg = figures();
    neg.bw_gbs = -1;
    char *t2 = Machine_format(&neg);
    CHECK(Machine_parse(t2, &back, why) == TT_ERR);
    CHECK_CONTAINS(why, "bw_gbs");
    free(t2);
    free(bad);
    free(text);
}

static char g_dir[256];

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

TEST(test_cache_file) {
    char path[512], why[TT_ERRLEN] = "";
    CHECK(Machine_cachePath("cpu", path, sizeof path, why) == TT_OK);
    CHECK(strncmp(path, g_dir, strlen(g_dir)) == 0); /* under $XDG_CACHE_HOME */
    CHECK_CONTAINS(path, "/tunetop/machine-cpu.txt");
    MachineFigures m = figures(), back;
    CHECK(Machine_load(path, m.key, &back, why) == TT_ERR);
    CHECK_CONTAINS(why, "no cached figures");
    CHECK(Machine_save(path, &m, why) == TT_OK); /* creates the directory */
    CHECK(Machine_load(path, m.key, &back, why) == TT_OK);
    CHECK_NEAR(back.peak1_gflops, 100, 0);
    CHECK(Machine_load(path, "fedcba9876543210", &back, why) == TT_ERR);
    CHECK_CONTAINS(why, "another machine");
    write_text(path, "\x01\x02garbage");
    CHECK(Machine_load(path, m.key, &back, why) == TT_ERR);
    CHECK_CONTAINS(why, "damaged");
}

/* The real thing, small: measure, reuse, remeasure, and a damaged cache. */
TEST(test_get_cpu_quick) {
    const Target *cpu = Target_find("cpu");
    CHECK(cpu != NULL);
    if (!cpu) return;
    DeviceInfo dev;
    char err[TT_ERRLEN] = "", note[TT_ERRLEN] = "", path[512];
    CHECK(cpu->probe(&dev, err) == TT_OK);
    CHECK(Machine_cachePath("cpu", path, sizeof path, err) == TT_OK);
    unlink(path);
    MachineMeasureOptions mo = {.quick = true};
    MachineFigures m, again;
    CHECK(Machine_getCpu(&dev, false, &mo, &m, note, sizeof note, err) == TT_OK);
    printf("quick figures: peak %.1f / %.1f GFLOPS, bandwidth %.1f / %.1f GB/s (%s)\n", m.peak1_gflops, m.peak_gflops,
           m.bw1_gbs, m.bw_gbs, note);
    CHECK_CONTAINS(note, "measured now");
    CHECK(m.quick);
    CHECK(m.peak1_gflops > 0.1 && m.peak1_gflops < 1e5);
    CHECK(m.peak_gflops > 0.1 && m.bw1_gbs > 0.01 && m.bw_gbs > 0.01);
    CHECK(m.measure_s > 0);
    CHECK_EQ_INT(m.cores, dev.cores);
    /* the second call reads the cache: the very same figures, no note */
    CHECK(Machine_getCpu(&dev, false, &mo, &again, note, sizeof note, err) == TT_OK);
    CHECK_STR(note, "");
    CHECK(again.peak1_gflops == m.peak1_gflops && again.measured_at == m.measured_at);
    /* --remeasure */
    CHECK(Machine_getCpu(&dev, true, &mo, &again, note, sizeof note, err) == TT_OK);
    CHECK_CONTAINS(note, "--remeasure");
    CHECK(again.measured_at >= m.measured_at);
    /* a damaged cache is measured anew, with a note */
    write_text(path, "tunetop-machine 1\nkey=nonsense\n");
    CHECK(Machine_getCpu(&dev, false, &mo, &again, note, sizeof note, err) == TT_OK);
    CHECK_CONTAINS(note, "damaged");
    CHECK(Machine_load(path, again.key, &m, err) == TT_OK); /* and rewritten */
    /* another machine's figures are not used */
    MachineFigures foreign = figures();
    CHECK(Machine_save(path, &foreign, err) == TT_OK);
    CHECK(Machine_getCpu(&dev, false, &mo, &again, note, sizeof note, err) == TT_OK);
    CHECK_CONTAINS(note, "another machine");
    CHECK(strcmp(again.key, foreign.key) != 0);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tt-machine-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) return 1;
    setenv("XDG_CACHE_HOME", g_dir, 1);
    RUN(test_interpolation);
    RUN(test_compulsory_bytes);
    RUN(test_roof_arithmetic);
    RUN(test_useful_flops_and_workload_roof);
    RUN(test_winograd_roof);
    RUN(test_key);
    RUN(test_format_parse);
    RUN(test_cache_file);
    RUN(test_get_cpu_quick);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return check_summary();
}
