/* kernels/templates/te/te_sketch_impl.h: what the files of the sketch search
 * share and nothing else includes: questions about the DAG (te_sketch_steps.c), the
 * loop model's layout of a sketch (te_sketch_steps.c) and the bounds of an
 * annotation (te_sketch_annotate.c). The rules (te_sketch_rules.c), annotation,
 * mutation (te_sketch_mutate.c), the zero-trial default
 * (te_sketch_heuristic.c), recovery (te_sketch_recover.c) and printing
 * (te_sketch_print.c) use them; the public side is te_sketch.h. */
#ifndef TT_KERNELS_TE_SKETCH_IMPL_H
#define TT_KERNELS_TE_SKETCH_IMPL_H

#include "kernels/templates/te/te_sketch.h"

/* ---- the DAG (te_sketch_steps.c) ---- */

/* The product of the extents of vars[0..n). */
int64_t sk_axes_product(const TeDag *dag, const int *vars, int n);
/* Whether rfactor pays: a reduction longer than the spatial work, which alone cannot keep the cores busy. */
int sk_needs_rfactor(const TeDag *dag, const TeStage *ts, int cores);
/* Whether expression e uses variable var. */
int sk_uses_var(const TeExpr *e, int var);
/* Whether a read moving along vx has an index adding y and r (a sliding window: X[.., y + r, ..]). */
int sk_slides(const TeStage *ts, int vx, int y, int r);
/* Whether some read of ts moves with var in its innermost index. */
int sk_reads_along(const TeStage *ts, int var);
/* The reduction axis rfactor splits on cpu, or -1. */
int sk_rfactor_axis(const TeDag *dag, int k, int cores);
/* Whether e calls exp, log, tanh or erf. */
int sk_transcendental(const TeExpr *e);

/* ---- the layout of a sketch's stages (te_sketch_steps.c) ---- */

/* Levels of each axis of stage k under SketchHow how into lev; returns the loops. */
int sk_axis_levels(const TeDag *dag, int k, int how, int gpu, int *lev);
/* The extent of axis a of stage k (spatial axes, then reduction axes). */
int64_t sk_axis_extent(const TeDag *dag, int k, int a);
/* The axes of stage k unrolled as a product with a small constant (cpu, at root), or 0. */
unsigned sk_const_unrolled(const Sketch *sk, const TeDag *dag, int k);
/* Whether root stage k may be computed at a loop of its one consumer. */
int sk_may_move(const Sketch *sk, const TeDag *dag, int k);
/* Whether rfactor stage k may be computed at its consumer's outermost loop (SketchAnn.at 0). */
int sk_rf_at_row(const Sketch *sk, const TeDag *dag, int k);
/* Whether rfactor stage k goes at its consumer's row by default (they stream one shared input). */
int sk_rf_streams_shared(const Sketch *sk, const TeDag *dag, int k);
/* The spatial extents that a stage computed at tiled stage t's tile covers. */
void sk_tile_box(const TeDag *dag, int t, SketchHow how, const SketchAnn *a, int at_level0, int64_t *box);
/* Loops at tile level 0 of a tiled stage or consumer on cpu. */
int sk_level0_loops(const TeDag *dag, int k);
/* The input of tiled stage k that an annotation may copy by strips, or -1. */
int sk_packed_input(const TeDag *dag, const SketchStage *st, int k);
/* The rows axis of an rfactor sketch, or -1. */
int sk_rf_rows(const TeDag *dag, int k);
/* Another location for rfactor stage k than at, of those its DAG allows. */
int8_t sk_rf_other_at(const Sketch *sk, const TeDag *dag, int k, int8_t at, Rng *rng);
/* Whether rfactor stage k computes S.rf per row of blocks by default (rf_blocks). */
int sk_rf_streams_rows(const TeDag *dag, int k, int cores);

/* ---- the bounds of an annotation (te_sketch_annotate.c) ---- */

/* Spatial plus reduction axes of stage k. */
int sk_stage_axes(const TeDag *dag, int k);
/* The split levels of axis a of stage k under sketch sk. */
int sk_levels_for(const Sketch *sk, const TeDag *dag, int k, int a);
/* Whether annotation a of stage k keeps the register tile (cpu) or the threads and tile (gpu) in bounds. */
bool sk_tile_fits(const Sketch *sk, const TeDag *dag, int k, const SketchAnn *a);
/* A random location of a pooling-like stage's padded copies. */
int8_t sk_pool_at(const TeDag *dag, int k, Rng *rng);

#endif
