/* tuner/net/ops/shape_ops.h: what the shape family's files (shape*.c,
 * reduce.c) share: the one strided-copy routine every data-movement op goes
 * through, small helpers for inputs that drive a shape, and the functions
 * the OPS_SHAPE table in shape.c lists. Private to tuner/net/ops/. */
#ifndef TT_NET_OPS_SHAPE_OPS_H
#define TT_NET_OPS_SHAPE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tuner/net/ops/op.h"

/* The largest rank of a copy view: Tile views each axis as (repeat, dim). */
#define SH_MAX_VIEW (2 * ND_MAX_RANK)

/* Copies a rank-`rank` box of `dims` elements of `esize` bytes from src to
 * dst; each side walks its own element strides (negative for a reversed
 * Slice, 0 for a broadcast Expand). Transpose, Slice, Expand, Tile, Concat,
 * Split, Pad, DepthToSpace and SpaceToDepth all reduce to this. The rows of
 * the box (its last axis) are split over the threads (par.h), so dst's
 * strides must not write one element twice (none of those ops does). */
void Sh_copy(int rank, const int64_t *dims, void *dst, const int64_t *dst_st, const void *src, const int64_t *src_st,
             size_t esize);
/* n elements of esize bytes from src to dst (not overlapping), split over the threads. */
void Sh_copyFlat(void *dst, const void *src, int64_t n, size_t esize);
/* Writes a transpose of src (viewed with shape `dims`) into dense dst:
 * output axis k is source axis perm[k]. */
void Sh_transpose(int rank, const int64_t *dims, const int *perm, void *dst, const void *src, size_t esize);

/* Row-major strides in elements, like NdShape_strides, but an empty tensor
 * whose other dimensions are huge gets meaningless strides instead of
 * overflowing (nothing reads them: it has no elements). */
void Sh_strides(const NdShape *s, int64_t *strides);
/* a * b for non-negative sizes; 0 when it would overflow (only for empty tensors' strides). */
int64_t Sh_mul(int64_t a, int64_t b);
/* Product of a known shape's dimensions (1 for rank 0; INT64_MAX when it overflows). */
int64_t Sh_count(const NdShape *s);
/* Input i is present (not an omitted optional input). */
bool Sh_has(const OpCtx *ctx, int i);
/* Input i's values are known: it is constant, or it has no elements. */
bool Sh_known(const OpCtx *ctx, int i);
/* Input i's values as int64 (malloc'd; free it). */
Status Sh_ints(const OpCtx *ctx, int i, int64_t **v, int64_t *n);
/* Axes from attribute "axes" or, when absent, input `input` (opsets where
 * they moved to an input). *known false when that input is not constant;
 * *given false when neither is there. Each axis normalised against `rank`,
 * duplicates refused. out has room for ND_MAX_RANK. */
Status Sh_axes(const OpCtx *ctx, int input, int rank, int *out, int *n, bool *given, bool *known);
/* Allocates out[k] with the type and shape infer set. */
Status Sh_alloc(OpCtx *ctx, int k);
/* Sets out[k]'s type and shape in one call. */
void Sh_setOut(OpCtx *ctx, int k, NdType type, const NdShape *shape);
/* Sets out[k]'s type and an unknown shape. */
void Sh_unknown(OpCtx *ctx, int k, NdType type);
/* The element count of input 0 (0 when unknown): the cost of ops that touch each input element once. */
double Sh_flopsIn0(const OpCtx *ctx);

/* ---- shape_move.c: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split ---- */
/* A copy of input 0 under the shape infer set (Reshape, Flatten, Squeeze, Unsqueeze, Identity). */
Status Sh_runView(OpCtx *ctx);
Status Reshape_check(const NetNode *n, const NetModel *m, char *err);
Status Reshape_infer(OpCtx *ctx);
Status Reshape_run(OpCtx *ctx);
Status Flatten_infer(OpCtx *ctx);
Status Flatten_run(OpCtx *ctx);
Status Squeeze_infer(OpCtx *ctx);
Status Squeeze_run(OpCtx *ctx);
Status Unsqueeze_infer(OpCtx *ctx);
Status Unsqueeze_run(OpCtx *ctx);
Status Transpose_infer(OpCtx *ctx);
Status Transpose_run(OpCtx *ctx);
Status Concat_infer(OpCtx *ctx);
Status Concat_run(OpCtx *ctx);
Status Split_infer(OpCtx *ctx);
Status Split_run(OpCtx *ctx);
/* ---- shape_view.c: Slice, Expand, Tile, DepthToSpace, SpaceToDepth ---- */
Status Slice_infer(OpCtx *ctx);
Status Slice_run(OpCtx *ctx);
Status Expand_infer(OpCtx *ctx);
Status Expand_run(OpCtx *ctx);
Status Tile_infer(OpCtx *ctx);
Status Tile_run(OpCtx *ctx);
Status DepthToSpace_check(const NetNode *n, const NetModel *m, char *err);
Status DepthToSpace_infer(OpCtx *ctx);
Status DepthToSpace_run(OpCtx *ctx);
Status SpaceToDepth_infer(OpCtx *ctx);
Status SpaceToDepth_run(OpCtx *ctx);

/* ---- shape_pad.c ---- */
Status Pad_check(const NetNode *n, const NetModel *m, char *err);
Status Pad_infer(OpCtx *ctx);
Status Pad_run(OpCtx *ctx);
Status Trilu_infer(OpCtx *ctx);
Status Trilu_run(OpCtx *ctx);

/* ---- shape_index.c ---- */
Status Gather_infer(OpCtx *ctx);
Status Gather_run(OpCtx *ctx);
Status GatherElements_infer(OpCtx *ctx);
Status GatherElements_run(OpCtx *ctx);
Status GatherND_infer(OpCtx *ctx);
Status GatherND_run(OpCtx *ctx);
Status Scatter_check(const NetNode *n, const NetModel *m, char *err);
Status ScatterElements_run(OpCtx *ctx);
Status ScatterND_run(OpCtx *ctx);
/* Output 0 has input 0's type and shape (Identity, scatters, CumSum). */
Status Sh_inferSameAs0(OpCtx *ctx);
Status OneHot_infer(OpCtx *ctx);
Status OneHot_run(OpCtx *ctx);
Status NonZero_infer(OpCtx *ctx);
Status NonZero_run(OpCtx *ctx);

/* ---- shape_sort.c ---- */
Status TopK_infer(OpCtx *ctx);
Status TopK_run(OpCtx *ctx);
Status CumSum_run(OpCtx *ctx);

/* ---- shape_resize.c ---- */
Status Resize_check(const NetNode *n, const NetModel *m, char *err);
Status Resize_infer(OpCtx *ctx);
Status Resize_run(OpCtx *ctx);
double Resize_flops(const OpCtx *ctx);

/* ---- reduce.c ---- */
Status Reduce_check(const NetNode *n, const NetModel *m, char *err);
Status Reduce_infer(OpCtx *ctx);
Status Reduce_run(OpCtx *ctx);
Status ArgMinMax_infer(OpCtx *ctx);
Status ArgMinMax_run(OpCtx *ctx);

#endif
