/* kernels/templates/te/te_sketch.h: sketches of a tensor expression (the
 * program structures of template-free search) and their annotation into
 * complete schedules (space/steps.h).
 *
 * Sketch_generate applies rules to the DAG (te/dag.h) stage by stage, from the
 * output backwards; per target, in this order (the table RULES in
 * te_sketch_rules.c: each rule a name, a condition and an action), a rule
 * either does not apply (the next is tried), applies and lets the next rules
 * run, or applies and ends the stage:
 *   cpu  always-inline, padded window (Sketch_pooling), rfactor, add cache
 *        stage, multi-level tiling with fusion, multi-level tiling, skip (add
 *        cache stage forks: a local accumulator tiled SS(RRS), see te_sketch_print.c,
 *        and in-place SSRSRS; a tiled stage that reads an input through padding
 *        first gets a padded copy of it at root, so that no test remains in its
 *        inner loops; a pooling-like stage reads a padded copy too, computed at
 *        root or at one of its loops, the window innermost: SK_POOL)
 *   gpu  shared-memory cache_read, always-inline, cross-thread reduction,
 *        rfactor, multi-level tiling (SSSRRSRS, outer tiles bound to blockIdx
 *        and threadIdx), skip
 * A rule with two outcomes forks the sketch (add cache stage and multi-level
 * tiling with fusion also keep the plain tiling in place). Rules whose steps
 * the schedule IR lacks (rfactor, shared-memory cache_read, cross-thread
 * reduction) are still checked: the sketch notes that their condition held
 * and what was done instead. A DAG where no rule applies gets
 * one sketch of root stages with a note.
 *
 * A sketch fixes, per stage, how it is computed (inlined, tiled with a
 * structure, the tiled consumer of a fused producer, computed at its consumer
 * or at root); an annotation (SketchAnn per stage) fills in everything else:
 * tile sizes, how many outer loops are fused and run in parallel (cpu),
 * vectorizing the innermost loop, the auto-unroll limit from the target's set,
 * the compute location of an untiled stage with one consumer, and on GPUs the
 * loops bound to blockIdx / threadIdx. Sketch_steps turns a sketch and an
 * annotation into steps that always lower; the same pair gives the same steps. */
#ifndef TT_KERNELS_TE_SKETCH_H
#define TT_KERNELS_TE_SKETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/rng.h"
#include "base/strbuf.h"
#include "space/steps.h"
#include "te/dag.h"

#define SKETCH_MAX 8
#define SKETCH_AXES (2 * TE_MAX_DIMS)
#define SKETCH_LEVELS 5 /* most split levels of one axis (GPU spatial: SSSRRSRS has five S) */

typedef enum {
    RULE_INLINE,       /* always-inline: elementwise, not an output */
    RULE_RFACTOR,      /* cpu: the reads run along a reduction axis, or a long reduction with little spatial work */
    RULE_CACHE_WRITE,  /* cpu: data reuse and no fusible consumer: a local accumulator (cache_write) */
    RULE_TILE_FUSION,  /* data reuse with one elementwise consumer: tile it, compute the stage at its tile */
    RULE_TILE,         /* data reuse: multi-level tiling */
    RULE_SHARED_READ,  /* gpu, data reuse: shared-memory cache_read of the inputs (noted, not applied) */
    RULE_CROSS_THREAD, /* gpu, a reduction without data reuse (no cross-thread reduction yet) */
    RULE_WINDOW,       /* cpu: a pooling-like stage (Sketch_pooling): a padded copy, the window innermost */
    RULE_SKIP,         /* nothing else: the stage keeps its loops (annotated) */
    RULE_KINDS
} SketchRule;

const char *SketchRule_name(SketchRule r);

typedef enum {
    SK_ROOT,     /* its own loop nest (annotated: parallel, vectorize, unroll, compute location); on cpu a sum over
                  * a small constant's indices runs its last axis vectorized with the constant's axes unrolled
                  * inside, and a copy between layouts the axis its reads run along right outside its last */
    SK_INLINE,   /* computed inside its consumers */
    SK_TILED,    /* multi-level tiling with the target's structure */
    SK_CONSUMER, /* the consumer of a fused producer: tiled over its spatial axes, the producer at its tile */
    SK_FUSED,    /* computed at its consumer's tile (the consumer is SK_CONSUMER) */
    SK_INPLACE,  /* cpu: multi-level tiling SSRSRS without a cache stage, accumulating in the tensor */
    SK_RFACTOR,  /* cpu: rfactor, the new stage's inner lanes vectorized in a local accumulator */
    SK_POOL,     /* cpu, pooling-like: a padded copy of its input, and of that one by phases when the window strides
                  * (cache_read .. 3), at root or computed at one of its outer loops,
                  * its last two spatial axes split (outer, inner), the loops ordered outer axes, y outer, x outer,
                  * y inner, x inner (vectorized), then the window (unrolled): the window's value is accumulated
                  * in a register per lane, with no test */
} SketchHow;

typedef struct SketchStage {
    SketchHow how;
    unsigned rules; /* bit per SketchRule whose condition held for the stage */
    int consumer;   /* SK_FUSED: the consumer stage; else -1 */
    uint64_t pad;   /* cpu, a stage with data reuse: bit t for each program tensor t it reads through zero padding
                     * (LoopNest_padded): its steps start with `cache_read S t 2`, a padded copy at root */
} SketchStage;

typedef struct Sketch {
    int gpu;
    int cores;  /* cpu: the cores the zero-trial default keeps busy */
    int vector; /* cpu: floats per SIMD register, for the register tile's cap (0: unknown, the AVX-512 cap) */
    int n_stages;
    SketchStage st[TE_MAX_TENSORS];
    char note[160]; /* what could not be done (rules without steps, no rule applied) */
} Sketch;

/* Sketches of dag for a target (gpu = 0: cpu with `cores` cores; 1: a GPU).
 * Writes at most SKETCH_MAX, returns the count (at least 1). */
int Sketch_generate(const TeDag *dag, int gpu, int cores, Sketch *out);

/* What an annotation chooses for one stage. */
typedef struct SketchAnn {
    int32_t f[SKETCH_AXES][SKETCH_LEVELS - 1]; /* inner split factors of each axis (spatial, then reduction) */
    int8_t par;                                /* cpu: outer spatial loops fused and run in parallel (0: none) */
    int8_t vec;                                /* vectorize the innermost loop when it is spatial */
    int8_t unroll;                             /* index into the target's auto-unroll set */
    int8_t at; /* SK_ROOT with one consumer: -1 root, else a loop of the consumer; SK_FUSED: tile level;
                * SK_TILED: >= 0 copies the input Sketch_packs names by strips of the vector axis;
                * SK_POOL: the loop of the stage its padded copies are computed at, or -1 (root);
                * SK_RFACTOR: -1 S.rf at root, 0 S with S.rf at its consumer's row, 1 S.rf per block of S's rows */
} SketchAnn;

/* Whether stage k is pooling-like: a reduction without data reuse over a
 * small window (at most 64 elements) that reads an input through padding
 * (LoopNest_padded: max pooling's `if(c, X[..], -3.4e38)`). On cpu it reads a
 * padded copy of that input (SK_POOL). */
int Sketch_pooling(const TeDag *dag, int k);

/* Most copies of the innermost loop that the unrolled loops of one body make
 * on cpu (an accumulation's register-tile rows times its unrolled reduction
 * steps; its auto-unroll limit counts a SIMD loop as one statement per lane):
 * gcc -O3 vectorizes each copy on its own, so its time grows faster than
 * their count (0.5 s at 72 copies, 1.3 s at 144). */
#define SKETCH_MAX_UNROLLED 64

/* Whether a cpu annotation of tiled stage k may copy one of its inputs by strips (SketchAnn.at >= 0): with
 * AVX2 or narrower registers (Sketch.vector 1..15), an input read along the vector axis in its last index, with
 * a reduction variable and no other tiled variable (matmul's B[k, j]); the copy (`cache_read`) is computed at
 * the level-0 loop of the vector axis of the stage's copy, around the register tiles that read it. */
int Sketch_packs(const Sketch *sk, const TeDag *dag, int k);

/* The most floats a register tile of a cpu annotation holds: the vector register
 * file for `vector`-float registers (512 with AVX-512 or an unknown width, 128
 * with AVX2). Random annotations and mutations stay within it (Sketch.vector). */
int Sketch_tileFloats(int vector);

/* The auto-unroll limits of a target ({0, 16, 64, 512}; GPUs add 1024). */
int Sketch_unrollSet(int gpu, const int64_t **values);

/* A random annotation of sketch sk into ann[dag->n_stages]. */
void Sketch_annotate(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann);
/* Changes one random decision of ann: a tile size (a factor moved between two
 * levels of an axis), the parallel granularity, the unroll limit, the
 * vectorize choice, or a compute location. */
void Sketch_mutate(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann);
/* The zero-trial default: a heuristic annotation. On cpu a tiled stage gets
 * a register tile of one or two SIMD widths (`vector` floats; else a multiple
 * of 8 or 4 floats that divides the axis) on its last spatial axis (none when
 * no read runs along it: a few scalar accumulators) times as many rows as 16
 * accumulator registers allow, at most half the vector registers (16 rows on
 * AVX-512, 8 on AVX2), taken first from the axes whose reuse saves vector
 * loads; short reduction axes (a window) whole in the inner level while the
 * rows times their copies stay within SKETCH_MAX_UNROLLED; the level above it
 * covers the rest of the other axes (so the inputs' blocks are reused from
 * cache), the outer level is parallel with at least `cores` iterations (in a
 * batch of products, axes that every read uses, the vector axis' blocks stay
 * in the level above the tile and the batch axes give those iterations). An
 * rfactor stage: lanes of the SIMD width (or a multiple of 8 or 4 dividing the
 * reduction), up to 8 rows. A stage of its own: its whole last axis one SIMD
 * loop (a row's invariants are then computed once per row), the outer loops
 * parallel, unroll 64. */
void Sketch_heuristic(const Sketch *sk, const TeDag *dag, int vector, SketchAnn *ann);

/* The steps of sketch sk with annotation ann (NULL: every factor 1 and no
 * annotation, the bare structure). */
void Sketch_steps(const Sketch *sk, const TeDag *dag, const SketchAnn *ann, Steps *out);

/* The annotation of sketch sk that gives exactly steps (a measured schedule
 * read back from a record), into ann[dag->n_stages]; false when sk with no
 * annotation gives these steps. */
bool Sketch_recover(const Sketch *sk, const TeDag *dag, const Steps *steps, SketchAnn *ann);

/* The sketch for `tunetop sketches`: one line per stage with the rules that
 * made it, then the step list with the tile sizes an annotation fills as "?". */
void Sketch_format(const Sketch *sk, const TeDag *dag, StrBuf *out);

#endif
