/* kernels/cpu/cpu_gen.h: helpers shared by the CPU templates (conv2d,
 * depthwise, dense, batch_matmul): the common prelude of every generated
 * translation unit, option lists built from extents, the vector register
 * budget of the machine, and cache sizes for the working-set features.
 *
 * Generated kernels follow kernels/cpu/abi.h. They use GCC vector extensions
 * sized by DeviceInfo.vector_floats (typedef `vf`), unaligned loads and
 * stores through LD/ST, and OpenMP over an outer loop. */
#ifndef TT_KERNELS_CPU_CPU_GEN_H
#define TT_KERNELS_CPU_CPU_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "kernels/template.h"

/* Floats per vector for a device (vector_floats, 4 when unset or invalid). */
int CpuGen_vf(const DeviceInfo *dev);
/* Architectural vector registers: 32 with AVX-512 (16 floats), else 16. */
int CpuGen_vregs(const DeviceInfo *dev);

/* Appends the prelude: includes, the vf/vi vector types, LD/ST, RELU,
 * MIN, an aligned allocator tt_alloc (zeroed, 64-byte aligned). */
void CpuGen_prelude(StrBuf *sb, int vf);

/* Bracket the untimed or apart-timed helpers (tt_setup, tt_pack, tt_finish,
 * tt_teardown): they are compiled at -O1, which halves the compile time of a
 * candidate (0.21 -> 0.13 s CPU for a ResNet conv) and measured no slower. */
void CpuGen_beginHelpers(StrBuf *sb);
void CpuGen_endHelpers(StrBuf *sb);

/* Writes the divisors of x that are <= cap into out (ascending, at most max
 * values, keeping the largest ones when there are too many); returns count. */
int CpuGen_divisors(int64_t x, int64_t cap, int64_t *out, int max);
/* Keeps the values of in[] that are <= cap (at least the first one). */
int CpuGen_filterLE(const int64_t *in, int n, int64_t cap, int64_t *out);

/* For the blocked-output templates (conv2d, depthwise): appends the residual
 * packing loop (when ai_res >= 0) and the closing brace of tt_pack, then
 * tt_finish, which unpacks s->out [n][c/OCB][oh][OWP][OCB] into args[ai_out]
 * in the canonical layout. Uses the macros N, CO, OH, OW, OWP, OCB, OCC and
 * the state fields s->args, s->res, s->out. */
void CpuGen_emitResidualAndFinish(StrBuf *sb, bool nhwc, int ai_res, int ai_out);

/* Template features (Template.features) of every CPU template start with the
 * same seven values, so that a model can be shared between operators:
 *   0 accumulators in the register tile   1 vector registers the tile needs
 *   2 vector width (floats)               3 innermost output extent (floats)
 *   4 register tile width                 5 innermost reduction extent
 *   6 unrolled steps of the inner loop
 * then log2 working-set bytes of the L1 / L2 / L3 levels, whether the L1 and
 * L2 sets fit, the padding waste and the parallel iterations. */
#define CPU_FEATURE_ACCUMULATORS 0
#define CPU_FEATURE_UNROLLED 6

/* Per-core cache sizes used by the working-set features (bytes). */
#define CPU_L1_BYTES (32 * 1024)
#define CPU_L2_BYTES (1024 * 1024)
#define CPU_L3_BYTES (32 * 1024 * 1024)

/* log2(1 + x) as a float feature. */
float CpuGen_log2p(double x);

#endif
