/* kernels/templates/gpu/gpu.h: what the GPU templates share (private to kernels/).
 *
 * The templates write kernels once against a small neutral vocabulary, and a
 * per-dialect prelude maps it to CUDA C++ or OpenCL C:
 *   TT_KERNEL(x, y, z)   kernel prefix up to the name, with the block size
 *                        (CUDA: extern "C" __global__ void __launch_bounds__;
 *                        OpenCL: __kernel reqd_work_group_size void)
 *   GLOBAL               pointer qualifier of kernel arguments
 *   RESTRICT             no-alias qualifier
 *   SHARED               per-block (local) array qualifier
 *   BARRIER()            block-wide barrier on shared memory
 *   BIDX_X/Y/Z TIDX_X/Y/Z  block and thread indices (as int)
 *   TT_UNROLL            full-unroll pragma for the next loop
 * Kernel arguments are one pointer per Workload_args entry, in that order
 * (inputs first, the output last). */
#ifndef TT_KERNELS_GPU_GPU_H
#define TT_KERNELS_GPU_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "kernels/target.h"
#include "kernels/template.h"

/* The prelude text of a dialect (static storage). */
const char *Gpu_prelude(Dialect dialect);

/* The kernel parameter list "(GLOBAL const float *RESTRICT data, ..., GLOBAL float *RESTRICT out)"
 * for a workload, appended to sb. */
void Gpu_appendParams(StrBuf *sb, const Workload *wl);

/* Loop unrolling by the auto_unroll_max_step / unroll_explicit knobs: a loop
 * whose nest (itself and the loops inside it) runs at most max_step
 * iterations is unrolled; explicit = the generator replicates the body itself,
 * else it emits TT_UNROLL and leaves the unrolling to the device compiler. */
typedef struct GpuUnroll {
    int64_t max_step;
    bool explicit_;
} GpuUnroll;

typedef struct GpuLoop {
    const char *var;
    int64_t extent;
} GpuLoop;

/* Appends a loop nest (loops[0] outermost) around body (one or more statements
 * that use the loop variables as ints). Extent-1 loops become constants. */
void Gpu_emitNest(StrBuf *sb, const GpuLoop *loops, int n, const char *body, const GpuUnroll *unroll, int indent);

/* Checks a launch against the device: each thread axis against its limit,
 * threads per block (virtual threads counted too, as the reference's validity
 * check does), static shared bytes and local bytes per thread, and grid extents.
 * On false writes the first violated limit with numbers into reason. */
bool Gpu_checkLaunch(const DeviceInfo *dev, const int64_t block[3], int64_t vthreads, const int64_t grid[3],
                     int64_t shared_bytes, int64_t local_bytes, char *reason, size_t n);

/* Human size for messages: "68 KiB" when a whole number of KiB, else "48.5 KiB". */
void Gpu_formatKiB(int64_t bytes, char *buf, size_t n);

/* Common cost-model features of a launch: log2 threads, log2 vthreads, shared KiB,
 * log2 register-tile floats, log2 blocks. Returns how many it wrote (<= cap). */
int Gpu_launchFeatures(const int64_t block[3], int64_t vthreads, const int64_t grid[3], int64_t shared_bytes,
                       int64_t tile_floats, float *out, int cap);

/* The fused operations after a kernel's sum v: bias (indexed by the
 * expression channel), residual (indexed by o; only convolutions take one)
 * and relu, appended to body as statements. */
void Gpu_appendFused(StrBuf *body, const Workload *wl, const char *channel);

/* The NCHW output tiling the conv2d and depthwise templates share: output
 * channels f, rows y and columns x, each split block / virtual thread /
 * thread / inner; the batch rides on blockIdx.z with the channel blocks.
 * Threads: x[2] x y[2] x f[2]; each keeps a register tile acc of
 * (f[1]*f[3]) x (y[1]*y[3]) x (x[1]*x[3]) floats. */
void Gpu_tileGeometry(const int64_t f[4], const int64_t y[4], const int64_t x[4], int64_t batch, int64_t grid[3],
                      int64_t block[3]);

/* Gpu_checkLaunch and Gpu_launchFeatures of such a tiling with shared_bytes
 * of shared memory. */
bool Gpu_checkTile(const DeviceInfo *dev, const int64_t f[4], const int64_t y[4], const int64_t x[4], int64_t batch,
                   int64_t shared_bytes, char *reason, size_t n);
int Gpu_tileFeatures(const int64_t f[4], const int64_t y[4], const int64_t x[4], int64_t batch, int64_t shared_bytes,
                     float *out, int cap);

/* Opens the kernel entry of such a tiling: shared arrays AA[a_size] and
 * WW[w_size], the zeroed acc, the thread ids tx ty tz tid, the batch nb,
 * the block origin f0 y0 x0 and dn, the batch's input image (wl->ci x h x w). */
void Gpu_emitTileHead(StrBuf *sb, const char *entry, const Workload *wl, const int64_t f[4], const int64_t y[4],
                      const int64_t x[4], int64_t a_size, int64_t w_size, const GpuUnroll *unroll);

/* Closes it: adds the fused operations to each acc value, stores it in out
 * (co x out rows x out columns per batch) and ends the kernel. */
void Gpu_emitTileStore(StrBuf *sb, const Workload *wl, const int64_t f[4], const int64_t y[4], const int64_t x[4],
                       int64_t co, const GpuUnroll *unroll);

#endif
