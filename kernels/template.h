/* kernels/template.h: a kernel template for one operator and one target
 * family. A template defines the configuration space of a workload, checks a
 * config cheaply against the device's limits (before any compile), generates
 * source for a config in a dialect, and derives cost-model features from a
 * config without compiling.
 *
 * Templates are const structs registered in one table (kernels/registry.c);
 * Template_find picks the one for a workload and family.
 */
#ifndef TT_KERNELS_TEMPLATE_H
#define TT_KERNELS_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/workload.h"
#include "space/space.h"

typedef enum { FAMILY_CPU = 0, FAMILY_GPU } TargetFamily;
typedef enum { DIALECT_C = 0, DIALECT_CUDA, DIALECT_OPENCL } Dialect;

/* What a template needs to know about the device. For the CPU: vector width
 * and thread count. For GPUs: the limits checked before building, filled from
 * the device when one is present, else from a per-architecture table. */
typedef struct DeviceInfo {
    char name[128]; /* "AMD EPYC (2 cores, AVX-512)", "NVIDIA H100", "pthread-skylake-avx512 (PoCL)" */
    char arch[32];  /* "x86_64-avx512", "sm_90", "opencl" */
    bool present;   /* a device that can run kernels is there (false: compile-only) */
    /* CPU */
    int cores;
    int vector_floats; /* floats per SIMD register: 16 (AVX-512), 8 (AVX2), 4 */
    /* GPU */
    int sm_major, sm_minor;
    int max_threads_per_block;
    int max_block_dim[3];
    int64_t max_shared_bytes_per_block;
    int regs_per_sm; /* 32-bit registers in the register file of one SM */
    int max_regs_per_thread;
    int64_t max_local_bytes_per_thread;
    int multiprocessors;
    int64_t global_mem_bytes;
} DeviceInfo;

/* The generated kernel for one config. Owns `source` (free with KernelSource_done). */
typedef struct KernelSource {
    char *source;   /* complete translation unit in the dialect */
    char entry[64]; /* name of the kernel / entry function */
    /* GPU launch geometry (threads per block = block[0]*block[1]*block[2]) */
    int64_t grid[3];
    int64_t block[3];
    int64_t shared_bytes; /* static shared memory per block, as the template computes it */
    char *steps;          /* owned: a tensor expression's schedule (space/steps.h text), NULL for templates */
} KernelSource;

void KernelSource_init(KernelSource *this);
void KernelSource_done(KernelSource *this);

/* A blocked activation layout, as a CPU template holds a tensor inside its
 * kernel: floats [n][ceil(c / cb)][h_alloc][w_alloc][cb]. Element (n, c, y, x)
 * of the canonical tensor is at (n, c / cb, y + top, x + left, c % cb); when
 * repeat > 1 (depthwise with a channel multiplier) blocked channel c holds
 * canonical channel c / repeat. In an input layout every other float is zero
 * (the padding the kernel reads); in an output layout they are unspecified. */
typedef struct BlockedLayout {
    int64_t n, c, h, w;
    int64_t cb;
    int64_t h_alloc, w_alloc, top, left;
    int64_t repeat;
} BlockedLayout;

/* Floats of a blocked layout. */
int64_t BlockedLayout_floats(const BlockedLayout *this);

#define BLOCKED_INPUT 1  /* the data input is packed into a blocked layout (tt_pack) */
#define BLOCKED_OUTPUT 2 /* the output is written blocked and unpacked by tt_finish */

typedef struct Template {
    const char *name; /* "conv2d_nchwc.cpu", "conv2d_direct.gpu", ... */
    OpKind op;
    TargetFamily family;
    /* true when this template handles the workload (layout, epilogue, ...) */
    bool (*applies)(const Workload *wl);
    /* Fills an initialised, empty space. */
    Status (*define_space)(const Workload *wl, const DeviceInfo *dev, Space *space, char *err);
    /* Cheap validity check, no compile. On false writes the reason with numbers,
     * e.g. "threads per block 2048 > 1024" or "shared memory 68 KiB > 48 KiB". */
    bool (*precheck)(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev, char *reason,
                     size_t n);
    /* Generates source for a config. */
    Status (*generate)(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                       Dialect dialect, KernelSource *out, char *err);
    /* Template-derived cost-model features (threads per block, shared bytes,
     * register tile, working set, ...); writes at most cap, returns count.
     * May be NULL. */
    int (*features)(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev, float *out,
                    int cap);
    /* The blocked layouts a CPU config keeps its data input and output in
     * (the state of kernels/templates/cpu/cpu_gen.h's CpuGen_emitBlockedSetup); returns
     * BLOCKED_INPUT | BLOCKED_OUTPUT for those it holds blocked and fills
     * *in / *out for them. NULL = nothing blocked. Used by the exporter
     * (kernels/export/export.h) so that consecutive layers can stay blocked. */
    int (*blocked)(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                   BlockedLayout *in, BlockedLayout *out);
    /* The config text of a record (NULL: Space_format of the choice). */
    void (*label)(const Workload *wl, uint64_t index, char *buf, size_t n);
    /* For a template whose config index names an entry of a table the search
     * fills (te.sketch: schedules found by evolution): the candidate of a
     * record read on resume (its index, steps and config text) goes back into
     * the table. NULL when the index is the whole candidate. */
    Status (*adopt)(const Workload *wl, uint64_t index, const char *steps, const char *config, char *err);
    /* The strategy that searches this template's space whatever --tuner says
     * (te.sketch: "evolution"), or NULL. */
    const char *strategy;
    /* The fewest FLOPs any config of this template executes for the workload
     * (its own arithmetic, e.g. a Winograd template's multiply-adds of its
     * largest tile), for its roofline; NULL = the workload's useful FLOPs
     * (Workload_usefulFlops). Such a template's GFLOPS are effective GFLOPS:
     * the workload's FLOPs over the time, which may exceed the peak. */
    double (*min_flops)(const Workload *wl);
    /* The zero-trial default: a config chosen from the workload and the
     * device alone (vector width, registers, cores, caches), what a task with
     * no tuning record is built with. Writes *choice (space->n_knobs entries);
     * TT_ERR when it has none. Export_defaultChoice checks it with precheck
     * and falls back to the lowest valid index. NULL = that fallback alone. */
    Status (*default_config)(const Workload *wl, const Space *space, const DeviceInfo *dev, int32_t *choice, char *err);
} Template;

/* The registered template for a workload and family, or NULL (err says why). */
const Template *Template_find(const Workload *wl, TargetFamily family, char *err);
/* The registered template of this name ("conv2d_winograd.cpu"), or NULL: the
 * template a record was measured with, which need not be Template_find's
 * (conv2d 3x3 stride 1 has the direct and the Winograd template). */
const Template *Template_byName(const char *name);
/* The template that builds a log's best record of a workload: the record's own
 * template (name) when it is registered for this family and handles the
 * workload, else Template_find's. What export and run build with, so that a
 * task whose best is a Winograd record runs the Winograd kernel. */
const Template *Template_forRecord(const Workload *wl, TargetFamily family, const char *name, char *err);
/* The templates of a family that handle the workload, in table order (so
 * Template_find's first): up to cap into out, returns how many there are.
 * More than one (conv2d 3x3 stride 1 on the cpu: direct and Winograd) makes
 * the task a group of alternatives that `tune` searches side by side. */
int Template_alternatives(const Workload *wl, TargetFamily family, const Template **out, int cap);
/* True when the template's GFLOPS are effective ones (min_flops set: it does
 * fewer FLOPs than the workload counts). */
bool Template_effective(const Template *this);
/* The GFLOPS a kernel of the template executes at a (workload) GFLOPS
 * figure: for an effective template gflops x min_flops / flops (a lower
 * bound, what to compare with the machine's peak), else gflops. */
double Template_executedGflops(const Template *this, const Workload *wl, double gflops);
/* All registered templates (for listings and tests); returns the count. */
int Template_all(const Template *const **out);

#endif
