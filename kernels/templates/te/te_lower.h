/* kernels/templates/te/te_lower.h: lowering a schedule (space/steps.h) of a tensor
 * expression's DAG (te/dag.h) to a loop nest, and C code from the loop nest.
 *
 * The loop nest is a tree of loops and statements. A loop has a variable,
 * an extent (it runs 0..extent-1) and an annotation (parallel, vectorize,
 * unroll count). A statement computes one element of a stage: it states the
 * value of each of the stage's axes as an expression of the enclosing loop
 * variables, a guard (when splits do not divide, or a computed-at region
 * reaches outside the tensor) and which part it is: the whole value of a
 * stage without reduction (STORE), or a reduction's INIT, UPDATE (one step)
 * and POST (the expression around the reduction, such as `/ N`).
 *
 * A reduction stage whose reduction loops are all inside its spatial loops
 * gets INIT before and POST after its reduction loops; otherwise INIT and
 * POST are loop nests of their own before and after the main nest.
 *
 * Replaying the same steps gives the same tree (LoopNest_print is its
 * canonical text). A step that does not apply is an error naming its index:
 * "step 3 (split): ...". */
#ifndef TT_KERNELS_TE_LOWER_H
#define TT_KERNELS_TE_LOWER_H

#include "base/rng.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "space/steps.h"
#include "te/dag.h"

typedef enum { LN_STORE, LN_INIT, LN_UPDATE, LN_POST, LN_ALLOC } LnPart;
typedef enum { ANN_NONE, ANN_PARALLEL, ANN_VECTORIZE, ANN_UNROLL } LnAnn;

typedef struct LnNode {
    int is_loop;
    /* loop */
    char var[24];
    int64_t extent;
    LnAnn ann;
    int64_t unroll; /* unroll this many (0: no pragma) */
    int bind;       /* 0, or 1 + the GPU index it is bound to (blockIdx.x/y/z, threadIdx.x/y/z, vthread.x/y/z) */
    /* statement (LN_ALLOC: the buffer of `stage` is declared here, for the rest of the enclosing block,
     * and the next `extent` nodes fill it) */
    int stage;
    LnPart part;
    char *axis[2 * TE_MAX_DIMS]; /* spatial axes, then reduction axes */
    char *guard;                 /* NULL: always */
    /* children (loops and the root block) */
    int n_kids, cap_kids;
    struct LnNode **kids;
} LnNode;

/* Where a tensor's elements live. A buffer of the nest (local) holds a box of
 * the tensor: element (x0, x1, ..) is at (x0 - base0) * stride0 + (x1 - base1)
 * * stride1 + ..., where base is an expression of the enclosing loops (NULL:
 * 0) and the strides are row-major over ext, padded as storage_align asks.
 * On a GPU a shared buffer is filled by all threads of the block together,
 * between two barriers. */
typedef enum { BUF_ARG, BUF_LOCAL, BUF_SHARED } LnScope;
typedef struct LnBuffer {
    LnScope scope;
    int64_t ext[TE_MAX_DIMS];
    char *base[TE_MAX_DIMS];
    int64_t stride[TE_MAX_DIMS]; /* row-major, padded by storage_align */
    int64_t floats;              /* elements to allocate */
} LnBuffer;

typedef struct LoopNest {
    const TeDag *dag;             /* the DAG the steps made: the given one plus its cache stages (owned) */
    LnNode *root;                 /* a block: a loop node with extent 1 and no variable */
    int inlined[TE_MAX_TENSORS];  /* per stage: computed inside its consumers */
    int n_args;                   /* the given program's tensors, the kernel's buffers t[0..n_args-1] */
    LnBuffer buf[TE_MAX_TENSORS]; /* per program tensor (cache tensors from n_args on) */
    TeDag *own_dag;
    TeProgram *own_prog; /* a copy of the program with the cache tensors; expression nodes shared or in pool */
    TeExpr *pool;
    int n_pool;
    TeExpr **extra; /* nodes rfactor made (each its own allocation) */
    int n_extra, cap_extra;
    /* the given program's exp calls whose argument is at most 0 or NaN (LoopNest_expAtMost0), which C computes
     * without the overflow branch of e^x */
    const TeExpr *exp_le0[TE_MAX_TENSORS];
    int n_exp_le0;
} LoopNest;

/* Applies steps to dag's default schedule and lowers it into *out (the caller
 * calls LoopNest_done). dag and its program must outlive the nest. On error
 * nothing is left to free. */
Status LoopNest_lower(LoopNest *out, const TeDag *dag, const Steps *steps, char *err);
void LoopNest_done(LoopNest *this);

/* Whether stage `stage` of dag reads tensor `tensor` through padding: at
 * least one read `if(c, T[idx], v)` with v a number (0 for a convolution,
 * -3.4e38 for max pooling), the same v in every such read, and each such
 * condition c holding exactly where idx is inside T (checked over every value
 * of the variables c and idx use, at most 2^20 of them). Then shape[] is the
 * extent of each dimension of the box those reads cover (T's own included),
 * lo[] the position of T's element 0 in it and *fill the value v: what
 * `cache_read S T 2` copies. Otherwise why (NULL or TT_ERRLEN bytes) says
 * why not in one sentence. */
int LoopNest_padded(const TeDag *dag, int stage, int tensor, int64_t *lo, int64_t *shape, double *fill, char *why);

/* The phases of `cache_read S T 3` (a copy of T whose last dimension is
 * stored by phases: position p at (p mod a, p div a)): a >= 2 when every read
 * of T in stage S has a last index a * v + (reduction variables and a
 * constant) with one spatial variable v and one stride a (max pooling's
 * 2 * x + s over its padded copy), else 0. The copy's reads then move at unit
 * stride with v. */
int64_t LoopNest_phases(const TeDag *dag, int stage, int tensor);

/* Whether e, an exp call of prog, has an argument that is at most 0 or NaN wherever it is evaluated: A[a..] -
 * B[b..] where B is defined as max_over(A[..]) whose indices are each one variable, B's own axes where the
 * subtrahend's indices (b..) stand the same as a.. there, and reduction axes over the whole of A's dimension
 * where the others stand (a row's max: softmax's `exp(X[i, j] - Mx[i])`, Mx[i] = max_over(X[i, j], j < N)). */
int LoopNest_expAtMost0(const TeProgram *prog, const TeExpr *e);

/* Canonical text of the tree, one line per loop or statement. */
void LoopNest_print(const LoopNest *this, StrBuf *out);

/* C source of `void fn(float **t)`, where t[i] is the buffer of program
 * tensor i (row-major float; inputs read, defined tensors written, inlined
 * ones and those computed at a loop unused). Parallel loops use OpenMP,
 * vectorized loops `omp simd`; buffers of the nest are arrays local to their
 * block (on the heap beyond TE_STACK_FLOATS elements). */
#define TE_STACK_FLOATS 16384
void LoopNest_emit_c(const LoopNest *this, const char *fn, StrBuf *out);

/* One kernel of a GPU program: its entry point and launch shape. */
typedef struct TeLaunch {
    char name[32];
    int64_t grid[3], block[3];
    int64_t shared_floats; /* shared memory per block */
} TeLaunch;

#define TE_MAX_LAUNCHES (3 * TE_MAX_TENSORS)

/* OpenCL C (cuda = 0) or CUDA C++ (cuda = 1) of the loop nest: one kernel per
 * top-level nest, launched in order with the shapes in launches[]. Its
 * parameters are every program tensor in order (global float buffers). Bound
 * loops become thread indices (guarded when a split leaves a tail); other
 * loops run inside each thread; a stage computed at a loop has a buffer
 * private to each thread. Fails for more than 1024 threads per block, a
 * cache stage at root, a private buffer of more than 1024 floats. */
Status LoopNest_emit_gpu(const LoopNest *this, int cuda, const char *prefix, StrBuf *out, TeLaunch *launches,
                         int *n_launches, char *err);

/* A random schedule of dag (the plain sampler of template-free search): stages
 * from the last to the first; an inlinable stage may be inlined; a producer
 * whose one consumer is scheduled may be computed at one of its loops (outside
 * any vectorized loop); a stage with data reuse may get cache stages
 * (cache_write, cache_read of one of its inputs, or both) computed at one
 * of its loops or at root, and a stage computed at a loop gets loops of its
 * own too; every other stage gets random 2- or
 * 3-level splits of its axes (factors mostly dividing, sometimes not), a
 * random loop order, sometimes a fuse of its two outer loops, and random
 * parallel / vectorize / unroll / auto_unroll choices. With gpu set there is
 * no parallel or vectorize; instead the outer spatial loop of a stage at root
 * may be bound to blockIdx.x, another spatial loop (at most 1024 steps) to
 * threadIdx.x and a short one to vthread.x; the cache_read stage is in shared
 * memory, cache stages are always computed at a loop, sometimes with
 * storage_align. Every sample lowers (and, with gpu, emits: a draw whose
 * buffers exceed the limits is replaced by one without cache stages or
 * compute_at). */
void TeSchedule_sample(const TeDag *dag, Rng *rng, int gpu, Steps *out);

#endif
