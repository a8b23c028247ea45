/* app/cmd_devices.c: `tunetop devices`: what targets this machine has, and
 * the limits their roofline uses (measured and cached for cpu, computed from
 * the architecture for cuda). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "app/commands.h"
#include "kernels/target.h"
#include "kernels/targets/machine.h"

static void print_bytes(const char *name, int64_t b, bool *first) {
    if (b <= 0) return;
    printf("%s%s ", *first ? "" : ", ", name);
    if (b >= (1 << 20) && b % (1 << 20) == 0)
        printf("%lld MiB", (long long)(b >> 20));
    else
        printf("%lld KiB", (long long)(b >> 10));
    *first = false;
}

static void print_cpu_figures(const MachineFigures *m, const char *path, const char *note) {
    bool first = true;
    printf("        caches: ");
    print_bytes("L1d", m->l1d_bytes, &first);
    print_bytes("L2", m->l2_bytes, &first);
    print_bytes("L3", m->l3_bytes, &first);
    printf("%s\n", first ? "unknown (no /sys/devices/system/cpu/cpu0/cache)" : " (cpu0, from sysfs)");
    printf("        peak FP32: %.1f GFLOPS one core, %.1f GFLOPS all %d cores\n", m->peak1_gflops, m->peak_gflops,
           m->cores);
    printf("                   (measured: independent FMA chains on %d-float %s vectors, compiled and run like the\n"
           "                   candidate kernels; the best of many runs of about a millisecond)\n",
           m->vector_floats, m->isa);
    printf("        memory:    %.1f GB/s one core, %.1f GB/s all %d cores\n", m->bw1_gbs, m->bw_gbs, m->cores);
    printf("                   (measured: STREAM triad a = b + s*c over %.0f MiB in three arrays, 24 bytes per\n"
           "                   element; the best run)\n",
           (double)m->triad_bytes / (1 << 20));
    char when[64] = "?";
    time_t t = (time_t)m->measured_at;
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
    printf("        caches:    triad within half the L2: %.1f GB/s one core, %.1f GB/s all cores; within half the L3:\n"
           "                   %.1f GB/s, %.1f GB/s (a task whose bytes fit a cache is timed from it)\n",
           m->l2_bw1_gbs, m->l2_bw_gbs, m->l3_bw1_gbs, m->l3_bw_gbs);
    if (m->rd_bw1_gbs > 0)
        printf(
            "        reads:     a read-only sum over the same footprints: memory %.1f / %.1f GB/s, L3 %.1f / %.1f,\n"
            "                   L2 %.1f / %.1f (one core / all cores; the roof takes the faster of read and triad)\n",
            m->rd_bw1_gbs, m->rd_bw_gbs, m->l3_rd1_gbs, m->l3_rd_gbs, m->l2_rd1_gbs, m->l2_rd_gbs);
    printf("        ridge:     %.2f FLOP/byte at all cores (tasks below it are memory-bound)\n",
           m->peak_gflops / m->bw_gbs);
    if (m->cores > 1 && (m->peak_gflops < m->peak1_gflops || m->bw_gbs < m->bw1_gbs))
        printf("        warning:   an all-core figure is below the one-core figure: other processes were busy\n"
               "                   while measuring; run `tunetop devices --remeasure` on an idle machine\n");
    if (note && *note)
        printf("        figures:   %s; %.1f s; cached in %s (machine key %s)%s\n", note, m->measure_s, path, m->key,
               m->quick ? "; quick test mode: rough figures" : "");
    else
        printf("        figures:   cached in %s, measured %s in %.1f s (machine key %s)%s; --remeasure measures "
               "again\n",
               path, when, m->measure_s, m->key, m->quick ? "; quick test mode: rough figures" : "");
}

static void print_gpu_figures(const MachineFigures *m) {
    printf("        roof:      %.0f GFLOPS FP32, %.0f GB/s (computed from the %s architecture table for %d SMs, not "
           "measured)\n",
           m->peak_gflops, m->bw_gbs, m->isa, m->cores);
}

static void usage(FILE *out) {
    app_help(out, "usage: tunetop devices [--remeasure] [--quick]\n\n"
                  "Lists each target with its device and limits, or the one-line reason it cannot run here.\n"
                  "For cpu it also shows the figures the roofline uses: FP32 peak and memory bandwidth for one\n"
                  "and for all cores, measured once and cached in $XDG_CACHE_HOME/tunetop (else ~/.cache/tunetop),\n"
                  "keyed by the processor model, its flags and the core count.\n\n"
                  "  --remeasure  measure again and replace the cached figures\n"
                  "  --quick      a small, fast measurement (well under a second; rough figures, for tests)\n");
}

static const struct option OWN[] = {
    {"remeasure", no_argument, 0, 'r'}, {"quick", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
const CmdOptions DEVICES_OPTIONS = {"devices", OWN, 0};

int cmd_devices(int argc, char **argv) {
    bool remeasure = false, quick = false;
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&DEVICES_OPTIONS, longopts, CLI_MAX_OPTS);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        } else if (c == 'r' || c == 'q') {
            *(c == 'r' ? &remeasure : &quick) = true;
        } else {
            char err[TT_ERRLEN];
            Cli_badOption("devices", c, argv, err);
            fprintf(stderr, "tunetop devices: %s\n", err);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tunetop devices: unexpected argument '%s' (see tunetop devices --help)\n", argv[optind]);
        return 2;
    }
    const Target *const *targets;
    int n = Target_all(&targets);
    int usable = 0;
    bool figures_failed = false;
    for (int i = 0; i < n; i++) {
        const Target *t = targets[i];
        if (!t) continue;
        DeviceInfo d;
        memset(&d, 0, sizeof d);
        char err[TT_ERRLEN] = "";
        if (t->probe(&d, err) != TT_OK) {
            printf("%-7s unavailable: %s\n", t->name, err);
            DeviceInfo off;
            memset(&off, 0, sizeof off);
            char why[TT_ERRLEN];
            MachineFigures m;
            if (t->family != FAMILY_CPU && t->offline_info && t->offline_info(NULL, &off, why) == TT_OK &&
                Machine_computedGpu(&off, &m, why) == TT_OK)
                print_gpu_figures(&m);
            continue;
        }
        usable++;
        printf("%-7s %s [%s]\n", t->name, d.name, d.arch);
        if (t->family == FAMILY_CPU) {
            printf("        %d cores, %d floats per vector register\n", d.cores, d.vector_floats);
            MachineFigures m;
            MachineMeasureOptions mo = {.quick = quick};
            char note[TT_ERRLEN] = "", path[1024] = "";
            char perr[TT_ERRLEN];
            if (Machine_cachePath("cpu", path, sizeof path, perr) != TT_OK)
                snprintf(path, sizeof path, "(nowhere: %s)", perr);
            if (Machine_getCpu(&d, remeasure, &mo, &m, note, sizeof note, err) != TT_OK) {
                printf("        roof figures: not measured: %s\n", err);
                figures_failed = true;
            } else {
                print_cpu_figures(&m, path, note);
            }
        } else {
            printf("        max threads/block %d (x %d, y %d, z %d), shared/block %lld KiB", d.max_threads_per_block,
                   d.max_block_dim[0], d.max_block_dim[1], d.max_block_dim[2],
                   (long long)(d.max_shared_bytes_per_block / 1024));
            if (d.regs_per_sm > 0)
                printf(", registers/SM %d, max registers/thread %d", d.regs_per_sm, d.max_regs_per_thread);
            if (d.multiprocessors > 0) printf(", %d compute units", d.multiprocessors);
            if (d.global_mem_bytes > 0) printf(", %.1f GiB", (double)d.global_mem_bytes / (1 << 30));
            printf("\n");
            MachineFigures m;
            char why[TT_ERRLEN];
            if (t->family != FAMILY_CPU && d.sm_major > 0 && Machine_computedGpu(&d, &m, why) == TT_OK)
                print_gpu_figures(&m);
        }
    }
    if (figures_failed) return 1;
    return usable ? 0 : 1;
}
