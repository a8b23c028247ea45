/* kernels/templates/cpu/cpu_gen.h: helpers shared by the CPU templates (conv2d,
 * depthwise, dense, batch_matmul): the common prelude of every generated
 * translation unit, option lists built from extents, the vector register
 * budget of the machine, and cache sizes for the working-set features.
 *
 * Generated kernels follow kernels/targets/cpu/abi.h. They use GCC vector extensions
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

/* Starts a generated translation unit: initialises sb (the caller must not
 * have), writes a comment naming the template and the config, then the
 * prelude. The caller appends its #defines and functions, then calls
 * CpuGen_finish. */
void CpuGen_begin(StrBuf *sb, const char *name, const Space *space, const int32_t *choice, int vf);
/* Moves the text of sb into out->source (freed with KernelSource_done), names
 * the entry tt_run and releases sb. */
void CpuGen_finish(StrBuf *sb, KernelSource *out);

/* Argument order of every CPU template (abi.h): data 0, weights 1, then the
 * bias and the residual when present, then the output. Sets *ai_bias and
 * *ai_res (-1 when absent) and returns the output index. */
int CpuGen_argIndices(bool bias, bool residual, int *ai_bias, int *ai_res);

/* Bracket the helpers that run once (tt_setup, tt_teardown): they are compiled
 * at -O1, which halves the compile time of a candidate (0.21 -> 0.13 s CPU for
 * a ResNet conv). */
void CpuGen_beginHelpers(StrBuf *sb);
void CpuGen_endHelpers(StrBuf *sb);
/* Bracket tt_pack and tt_finish: they run with every call of an exported
 * kernel (a network's), so there, where the export defines TT_HOT_HELPERS,
 * they compile at the file's -O3; in a tuning candidate, whose timed part is
 * tt_run, at -O1 like the other helpers (-O3 cost `run` of ResNet-50 a
 * quarter more compile time). */
void CpuGen_beginPackHelpers(StrBuf *sb, int vf); /* and tt_transpose, which they use */
void CpuGen_endPackHelpers(StrBuf *sb);

/* Writes the divisors of x that are <= cap into out (ascending, at most max
 * values, keeping the largest ones when there are too many); returns count. */
int CpuGen_divisors(int64_t x, int64_t cap, int64_t *out, int max);
/* The extent of a padded input dimension: in + 2 * pad, or more where out outputs (the output extent
 * rounded up to a register tile) with this stride, dilation and kernel size read further. */
int64_t CpuGen_paddedExtent(int64_t in, int64_t pad, int64_t out, int64_t stride, int64_t dil, int64_t k);
/* Keeps the values of in[] that are <= cap (at least the first one). */
int CpuGen_filterLE(const int64_t *in, int n, int64_t cap, int64_t *out);

/* For the blocked-output templates (conv2d, depthwise): appends the residual
 * packing loop (when ai_res >= 0) and the closing brace of tt_pack, then
 * tt_finish, which unpacks s->out [n][c/OCB][oh][OWP][OCB] into args[ai_out]
 * in the canonical layout. Uses the macros N, CO, OH, OW, OWP, OCB, OCC and
 * the state fields s->args, s->res, s->out. */
void CpuGen_emitResidualAndFinish(StrBuf *sb, bool nhwc, int ai_res, int ai_out);

/* For the conv2d and depthwise templates: opens tt_pack and packs the data,
 * args[0] in NCHW (or NHWC) with CI channels, into s->in
 * [n][c/B][h + PH][w + PW][B] with `chans` channels (the macro names B = block
 * and chans), blocked channel c holding canonical channel c / mult (the
 * depthwise channel multiplier; "1" for a conv); the zero border stays from
 * tt_alloc. The caller closes tt_pack (CpuGen_emitResidualAndFinish does).
 * Uses N, CI, H, W, PH, PW, IN_C, IN_H. */
void CpuGen_emitPackInput(StrBuf *sb, bool nhwc, const char *block, const char *chans, const char *mult);

/* "#define NAME value" lines, one per name of the space-separated list, the
 * values in the same order: CpuGen_defines(sb, "N CI", p.N, p.CI). A list and
 * values of different lengths are a programming error (abort). */
#define CpuGen_defines(sb, names, ...)                                                                                 \
    CpuGen_emitDefines(sb, names, (const int64_t[]){__VA_ARGS__},                                                      \
                       (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
void CpuGen_emitDefines(StrBuf *sb, const char *names, const int64_t *values, int n_values);

/* For the blocked-output templates: the state struct St (args, in, w, bias,
 * res, out) and the start of tt_setup, which allocates in and w with the given
 * float counts (C expressions over the caller's macros; out and res hold
 * N * O_N floats, res only when RESIDUAL) and copies the bias from
 * args[ai_bias] when ai_bias >= 0. The caller then fills s->w and closes
 * tt_setup ("return 0; }"). */
void CpuGen_emitBlockedSetup(StrBuf *sb, const char *in_floats, const char *w_floats, int ai_bias);
/* tt_teardown for the St of CpuGen_emitBlockedSetup. */
void CpuGen_emitBlockedTeardown(StrBuf *sb);

/* Register tile of the blocked-output tt_run: nv vectors of output channels by
 * rn output columns, accumulators a<v>_<r>. TileInit declares b<v> (from
 * s->bias + occ * OCB when bias, else zero) and starts every accumulator at
 * it. TileStore adds the residual (rb, when residual), applies the
 * activation act (CpuGen_act) and stores to ob; column r of the tile is at
 * col + r * rstride floats, where col is a C expression of the tile's first
 * column (e.g. "owo * OCB"). */
void CpuGen_emitTileInit(StrBuf *sb, int nv, int rn, int vf, bool bias);
void CpuGen_emitTileStore(StrBuf *sb, int nv, int rn, int vf, const char *col, int64_t rstride, bool residual, int act);
/* The workload's activation epilogue: none, ReLU or ReLU6 (a clip to [0, 6]). */
enum { CPU_ACT_NONE = 0, CPU_ACT_RELU = 1, CPU_ACT_RELU6 = 2 };
int CpuGen_act(const Workload *wl);
/* "v = RELU(v);" or "v = RELU6(v);" for act (nothing for CPU_ACT_NONE). */
void CpuGen_emitAct(StrBuf *sb, int act, const char *v);

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

/* ---- zero-trial defaults (Template.default_config) ---------------------------
 * The defaults pick option values by name. CpuGen_pick sets knob `name` of
 * choice to its largest value <= want (its smallest value when none is);
 * false when the space has no such knob. CpuGen_values points *out at the
 * knob's values and returns how many (0 when absent). */
bool CpuGen_pick(const Space *space, int32_t *choice, const char *name, int64_t want);
int CpuGen_values(const Space *space, const char *name, const int64_t **out);
/* Starts a default: every knob at its first value. */
void CpuGen_clearChoice(const Space *space, int32_t *choice);
/* The channel block the CPU templates' defaults share, in vectors: two
 * vectors (16 floats with AVX2, 32 with AVX-512) when the channels fill them,
 * so that consecutive layers hold activations in the same blocked layout. */
#define CPU_DEFAULT_BLOCK_VECS 2

/* log2(1 + x) as a float feature. */
float CpuGen_log2p(double x);
/* Copies the n features of v into out, at most cap; returns how many. */
int CpuGen_copyFeatures(const float *v, int n, float *out, int cap);

#endif
