/* kernels/targets/machine.h: the machine's limits, measured once and kept, and the
 * roofline of a task computed from them.
 *
 * MachineFigures are the FP32 peak and the memory bandwidth of one target on
 * this machine, for one core and for all cores, with the cache sizes. For the
 * cpu target they are measured (Machine_measureCpu): two generated kernels,
 * compiled and run exactly like candidate kernels (the cpu target's compiler
 * flags, the isolated measurement worker, OpenMP threads):
 *   - peak: independent chains of fused multiply-adds on vectors of the
 *     widest instruction set the target uses (DeviceInfo.vector_floats),
 *     enough chains to cover the FMA latency on every FMA port;
 *   - bandwidth: a STREAM triad a[i] = b[i] + s * c[i] over three arrays
 *     that together are several times the last-level cache (24 bytes moved
 *     per element, as STREAM counts them); and the same triad over arrays
 *     that fit half the L2 and half the L3, for the cache levels; and a
 *     read-only sum over the same footprints (the faster of the two counts).
 * Each is the best of several repeats of a fraction of a second: the best,
 * because on a shared machine every disturbance makes a run slower, never
 * faster.
 *
 * For cuda there is nothing to run without a device: the figures are computed
 * from the architecture (Machine_computedGpu) and labelled as such.
 *
 * The cache is one small text file per target under the user's cache
 * directory ($XDG_CACHE_HOME/tunetop, else ~/.cache/tunetop), keyed by the
 * processor model, its flags and the core count (Machine_key). A file that is
 * missing, damaged (does not parse, bad checksum, figures that are not
 * positive) or foreign (another machine's key) is not trusted: Machine_load
 * says why and the caller measures anew.
 *
 * The roof of a task (Roof_compute) is min(peak, bandwidth x FLOPs / bytes)
 * for the session's thread count, where bytes are the task's compulsory
 * traffic (every input read once, the output written once,
 * Workload_compulsoryBytes). The threads in between 1 and all cores are
 * interpolated linearly. Candidates are timed over repeated runs, so a task
 * whose compulsory bytes fit a cache runs from that cache: the bandwidth is
 * that of the smallest level holding them (the L1 counts as no limit, the L2
 * as the threads' L2s together, the L3 as shared), else the memory's. Taking
 * the faster level when in doubt keeps the roof an upper bound; for the same
 * reason the part of the bytes the level below holds counts at that level's
 * bandwidth (a working set of twice the L2 runs half from the L2).
 *
 * Library code: nothing here prints; errors are a Status and a sentence.
 */
#ifndef TT_KERNELS_MACHINE_H
#define TT_KERNELS_MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/template.h"
#include "kernels/workload.h"

#define MACHINE_KEY_LEN 17 /* 16 hex digits */

typedef struct MachineFigures {
    char target[16];           /* "cpu", "cuda" */
    char key[MACHINE_KEY_LEN]; /* Machine_key */
    char model[96];            /* processor / device model */
    char isa[16];              /* "AVX-512", "AVX2", "NEON", "sm_90" */
    int cores;                 /* cores the figures for "all" use (GPU: SMs) */
    int vector_floats;
    bool computed;                /* true: from a table or device properties, not measured */
    bool quick;                   /* measured in the small, fast mode (tests): the figures are rough */
    double peak1_gflops;          /* FP32, one core */
    double peak_gflops;           /* FP32, all cores */
    double bw1_gbs;               /* memory bandwidth, one core, GB/s (1e9 bytes) */
    double bw_gbs;                /* all cores */
    double l2_bw1_gbs, l2_bw_gbs; /* triad within the L2 (0 = not measured) */
    double l3_bw1_gbs, l3_bw_gbs; /* triad within the L3 (0 = not measured) */
    /* A read-only sweep (a sum) over the same footprints: kernels that mostly
     * read (a matrix-vector product streams its weights) go faster than a
     * triad; the roof takes the faster of the two. 0 = not measured. */
    double rd_bw1_gbs, rd_bw_gbs, l2_rd1_gbs, l2_rd_gbs, l3_rd1_gbs, l3_rd_gbs;
    int64_t l1d_bytes, l2_bytes, l3_bytes; /* per the first core; 0 = unknown */
    double measured_at;                    /* unix time */
    double measure_s;                      /* how long measuring took */
    int64_t triad_bytes;                   /* bytes of the three triad arrays */
} MachineFigures;

/* ---- roofline arithmetic (pure) --------------------------------------------- */

/* Where a task's compulsory bytes live while it is timed. */
typedef enum { ROOF_LEVEL_L1 = 1, ROOF_LEVEL_L2 = 2, ROOF_LEVEL_L3 = 3, ROOF_LEVEL_DRAM = 4 } RoofLevel;

typedef struct Roof {
    double gflops;      /* the task's roof; 0 = unknown */
    double peak_gflops; /* peak for the threads */
    double bw_gbs;      /* bandwidth of the level for the threads (0 for the L1: no limit) */
    double intensity;   /* FLOPs per compulsory byte */
    int level;          /* RoofLevel */
    bool memory_bound;  /* bandwidth x intensity < peak */
} Roof;

/* "L1", "L2", "L3", "DRAM" */
const char *Roof_levelName(int level);
/* What bounds it: "compute-bound" or "memory-bound (DRAM)"; bound is 0 for
 * compute, else the RoofLevel (the records' "roof_mem"). */
const char *Roof_boundText(int bound);

/* Peak / bandwidth for `threads` (0 or >= cores = all cores), interpolated
 * linearly between one core and all cores. */
double Machine_peakFor(const MachineFigures *this, int threads);
double Machine_bandwidthFor(const MachineFigures *this, int threads); /* memory (DRAM) */
/* Bandwidth of a level (ROOF_LEVEL_L2, L3, DRAM) for threads; 0 when not measured. */
double Machine_levelBandwidthFor(const MachineFigures *this, int level, int threads);

/* roof = min(peak, bw x flops / bytes). A zeroed Roof when the figures or the
 * workload's sizes are not positive. */
Roof Roof_compute(const MachineFigures *m, int threads, double flops, double bytes);
/* The roof of a workload in the units of its GFLOPS figures (Workload_flops
 * over the time): Roof_compute on the FLOPs it cannot avoid
 * (Workload_usefulFlops), scaled by flops / useful, so a convolution whose
 * kernel skips the zero-padding taps is not shown beyond its roof. */
struct Workload;
Roof Roof_forWorkload(const MachineFigures *m, int threads, const struct Workload *wl);
/* The same for a kernel that executes exec_flops (a template's own
 * arithmetic, e.g. Winograd's: template.h min_flops) instead of the useful
 * FLOPs; still in the workload's GFLOPS (effective GFLOPS, which may exceed
 * the peak). exec_flops <= 0 = Roof_forWorkload. */
Roof Roof_forArithmetic(const MachineFigures *m, int threads, const struct Workload *wl, double exec_flops);
/* Share of the roof a rate reaches (1.0 = at the roof; may exceed 1: never
 * clamped); 0 when the roof is unknown. */
double Roof_share(double gflops, double roof_gflops);
/* The lowest latency the roof allows: flops / roof, seconds (0 if unknown). */
double Roof_latency(double flops, double roof_gflops);

/* ---- the machine key and the cache ------------------------------------------ */

/* FNV-1a 64 of "target|model|flags|cores" as 16 hex digits. */
void Machine_keyOf(const char *target, const char *model, const char *flags, int cores, char *out);
/* This machine's key for the cpu target (/proc/cpuinfo model name and flags,
 * the cores this process may use). model (may be NULL) receives the model. */
void Machine_cpuKey(char *key, char *model, size_t model_len);

/* "$XDG_CACHE_HOME/tunetop/machine-<target>.txt" (or ~/.cache/...).
 * TT_ERR when neither variable gives a directory. */
Status Machine_cachePath(const char *target, char *out, size_t n, char *err);

/* Text form (key=value lines, then a checksum line). */
char *Machine_format(const MachineFigures *this); /* malloc'd */
/* Parses a cache file's text: TT_ERR with why when damaged. */
Status Machine_parse(const char *text, MachineFigures *out, char *why);

/* Loads the cache. TT_ERR with why: "no cached figures", "damaged: ...",
 * "measured on another machine (...)". expect_key NULL skips the key check. */
Status Machine_load(const char *path, const char *expect_key, MachineFigures *out, char *why);
/* Writes atomically (temp file, rename); creates the directory. */
Status Machine_save(const char *path, const MachineFigures *this, char *err);

/* ---- measuring ---------------------------------------------------------------- */

typedef struct MachineMeasureOptions {
    bool quick;          /* tests: small buffers, few runs, no cache levels (two kernels to build) */
    int repeats;         /* measurements of 16 runs each, per kernel (0 = 4, quick 1) */
    const char *workdir; /* for the two kernels' builds (NULL = a private temp dir) */
} MachineMeasureOptions;

/* Builds and runs the peak and triad kernels for the cpu target in the
 * measurement worker. dev from the cpu target's probe. A few seconds. */
Status Machine_measureCpu(const DeviceInfo *dev, const MachineMeasureOptions *opt, MachineFigures *out, char *err);

/* Cache sizes of cpu0 from /sys/devices/system/cpu/cpu0/cache (0 when absent). */
void Machine_cacheSizes(int64_t *l1d, int64_t *l2, int64_t *l3);

/* The generated kernels' sources (for the measurement, and for tests). */
char *Machine_peakSource(int vector_floats, int chains, long iters);       /* malloc'd */
char *Machine_triadSource(int64_t elements, int sweeps);                   /* malloc'd */
char *Machine_readSource(int vector_floats, int64_t elements, int sweeps); /* malloc'd */

/* GPU figures from the architecture table (sm_major/minor, SMs): FP32 lanes
 * per SM x 2 x a typical boost clock, and the memory bandwidth of the
 * architecture's reference part. computed = true. TT_ERR for an unknown
 * architecture. */
Status Machine_computedGpu(const DeviceInfo *dev, MachineFigures *out, char *err);

/* Loads the cached figures of the cpu target (whatever mode measured them),
 * or measures (in opt's mode; opt may be NULL) and caches them.
 * note (may be NULL, note_len bytes) receives one sentence when the cache was
 * not used ("measured: no cached figures", "measured anew: the cache file ...
 * is damaged (...)"), else "". */
Status Machine_getCpu(const DeviceInfo *dev, bool remeasure, const MachineMeasureOptions *opt, MachineFigures *out,
                      char *note, size_t note_len, char *err);

#endif
