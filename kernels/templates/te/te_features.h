/* kernels/templates/te/te_features.h: program features of a lowered loop nest
 * (te_lower.h), the input of the learned cost model of template-free search.
 *
 * One row of TE_FEATURES (164) floats per statement (a buffer store: STORE,
 * INIT, UPDATE or POST) of the nest, in the nest's order. A statement
 * "executes" once per iteration of its enclosing loops; outer_prod is the
 * product of their extents. Every buffer element is a 4-byte float (the
 * emitted code stores every tensor as float). Rows hold either the raw
 * values below or (the model's input) every value except the one-hot groups
 * and the intensity curve passed through slog(x) = sign(x) log2(1 + |x|).
 *
 * Layout (offsets are the TF_* constants):
 *
 *  0..15  arithmetic, per statement execution times outer_prod. The
 *         operators of the expression as written in the .te program are
 *         counted where they are evaluated (an inlined stage's body at each
 *         access to it, an access's index expressions once per access), and
 *         so are the operators of the statement's axis values (counted once:
 *         the emitted code computes them once) and of its guard. Float:
 *         mad (a * b + c or a * b - c: one mad, not a mul and an add; also a
 *         sum's update acc + a * b), add/sub (and negation), mul, div/mod,
 *         compare, math functions (exp log sqrt rsqrt tanh erf), other
 *         functions (abs max min; a max_over/min_over update); then the same
 *         seven for integers; boolean ops (&& || !); selects (if).
 * 16..26  vectorize: number of enclosing vectorized loops, product of their
 *         extents, extent of the innermost one, its position (8 one-hot:
 *         none, inner/middle/outer spatial, inner/middle/outer reduction,
 *         mixed). A loop is spatial (reduction) for the statement when only
 *         its spatial (reduction) axis values use it, mixed when both or
 *         neither do; inner/outer: innermost/outermost of the statement's
 *         loops of that kind (a lone one is inner), else middle.
 * 27..37  unroll, the same for loops with an unroll count (explicit unroll,
 *         or under auto_unroll).
 * 38..48  parallel, the same for parallel loops.
 * 49..56  GPU: 1 when any loop of the nest is bound to a thread index; the
 *         extents of the enclosing loops bound to blockIdx.x/y/z and
 *         threadIdx.x/y/z (1 when none); the virtual thread extent (1: the
 *         loop nest has no virtual threads). All 0 in a nest with no bound loop.
 * 57..146 buffers (a constant tensor is none: its elements are numbers of
 *         the code): up to 5 buffers the statement reads or writes, the ones
 *         with the most cache lines first (ties: lower tensor index), 18 each
 *         (offsets TB_* within a buffer), zeros for missing buffers:
 *           access type (3 one-hot: read, write, read and write);
 *           bytes: outer_prod * 4 * the number of distinct index tuples;
 *           unique bytes: the elements the whole nest touches (the bounding
 *             box of the accesses with every enclosing loop over its range,
 *             clipped to the tensor) * 4;
 *           lines: cache lines (64 bytes) moved, outer_prod divided by the
 *             product of the extents of the loops inside the innermost loop
 *             that moves the buffer, times min(1, stride * 4 / 64), at least 1;
 *           unique lines: the box's rows of contiguous elements times the
 *             lines per row;
 *           reuse type (3 one-hot: loop, serial, none), found from the
 *             innermost enclosing loop outwards: "loop" at the first loop
 *             whose iterations all touch the same elements of the buffer
 *             (reuse count = its extent), else "serial" at the first loop
 *             under which another statement accesses the buffer (count = the
 *             number of those statements); reuse distance in iterations
 *             (product of the extents of the loops inside that loop) and in
 *             bytes (what the statement's buffers touch in one iteration of
 *             that loop); reuse count;
 *           bytes, unique bytes, lines, unique lines divided by max(1, count);
 *           stride: elements between consecutive iterations of the innermost
 *             loop (0 when that loop does not move the buffer).
 *         The stride of a loop in a buffer: over the buffer's accesses, from
 *         the last dimension outwards, the first dimension whose index uses
 *         the loop gives |coefficient| * product of the later dimensions'
 *         sizes (the coefficient is the change of the index when the loop
 *         goes from 0 to 1 with every other loop at 0); the smallest over
 *         the accesses.
 *147..156 arithmetic intensity curve: at each loop level (the statement
 *         alone, then with each enclosing loop from the innermost out),
 *         float ops (a mad counts 2) over bytes touched by its buffers in
 *         that scope; sampled where the log2 of the ops reaches 1/10 .. 10/10
 *         of its total, interpolated linearly between levels.
 *157..160 allocation (statements writing a buffer the program allocates: a
 *         buffer of the nest, declared inside some loops (LN_ALLOC), or an
 *         intermediate tensor, allocated once outside every loop; zeros for
 *         the output): size in bytes, size * allocations, allocations (the
 *         iterations of the loops around the declaration), executions per
 *         allocation (outer_prod / allocations).
 *         A buffer of the nest (LnBuffer not BUF_ARG) is indexed within
 *         its box: the tensor index minus the box's base, clipped to the
 *         box's extents. Its unique bytes, strides, lines and reuse are the
 *         buffer's (reused from one iteration of the loops around its
 *         declaration to the next), not those of the whole tensor.
 *161..163 outer loops: outer_prod, number of enclosing loops, the largest
 *         auto_unroll max step given to the statement's stage or to a stage
 *         whose loops enclose it.
 *
 * No printing: errors are one sentence in err. */
#ifndef TT_KERNELS_TE_FEATURES_H
#define TT_KERNELS_TE_FEATURES_H

#include "base/status.h"
#include "kernels/templates/te/te_lower.h"

#define TE_FEATURES 164
#define TE_FEATURE_BUFFERS 5
#define TE_BUFFER_FEATURES 18
#define TE_CURVE_POINTS 10

enum {
    TF_FLOAT_MAD = 0,
    TF_FLOAT_ADDSUB,
    TF_FLOAT_MUL,
    TF_FLOAT_DIVMOD,
    TF_FLOAT_CMP,
    TF_FLOAT_MATH,
    TF_FLOAT_OTHER,
    TF_INT_MAD,
    TF_INT_ADDSUB,
    TF_INT_MUL,
    TF_INT_DIVMOD,
    TF_INT_CMP,
    TF_INT_MATH,
    TF_INT_OTHER,
    TF_BOOL_OP,
    TF_SELECT_OP,
    TF_VEC = 16,    /* num, prod, len, pos[8] */
    TF_UNROLL = 27, /* num, prod, len, pos[8] */
    TF_PAR = 38,    /* num, prod, len, pos[8] */
    TF_IS_GPU = 49,
    TF_BLOCK_X,
    TF_BLOCK_Y,
    TF_BLOCK_Z,
    TF_THREAD_X,
    TF_THREAD_Y,
    TF_THREAD_Z,
    TF_VTHREAD,
    TF_BUF = 57, /* TE_FEATURE_BUFFERS x TE_BUFFER_FEATURES */
    TF_CURVE = 147,
    TF_ALLOC_SIZE = 157,
    TF_ALLOC_PROD,
    TF_ALLOC_OUTER_PROD,
    TF_ALLOC_INNER_PROD,
    TF_OUTER_PROD = 161,
    TF_NUM_LOOPS,
    TF_AUTO_UNROLL,
    TF_END
};

/* Within an annotation group (TF_VEC, TF_UNROLL, TF_PAR). */
enum { TA_NUM = 0, TA_PROD, TA_LEN, TA_POS };
/* Position one-hot index (TA_POS + this). */
enum {
    TP_NONE = 0,
    TP_INNER_SPATIAL,
    TP_MIDDLE_SPATIAL,
    TP_OUTER_SPATIAL,
    TP_INNER_REDUCE,
    TP_MIDDLE_REDUCE,
    TP_OUTER_REDUCE,
    TP_MIXED
};
/* Within a buffer (TF_BUF + b * TE_BUFFER_FEATURES + this). */
enum {
    TB_READ = 0,
    TB_WRITE,
    TB_READ_WRITE,
    TB_BYTES,
    TB_UNIQUE_BYTES,
    TB_LINES,
    TB_UNIQUE_LINES,
    TB_REUSE_LOOP,
    TB_REUSE_SERIAL,
    TB_REUSE_NONE,
    TB_REUSE_DIS_ITER,
    TB_REUSE_DIS_BYTES,
    TB_REUSE_CT,
    TB_BYTES_D_REUSE,
    TB_UNIQUE_BYTES_D_REUSE,
    TB_LINES_D_REUSE,
    TB_UNIQUE_LINES_D_REUSE,
    TB_STRIDE
};

/* The rows of one program. Reused from call to call (the arrays grow). */
typedef struct TeFeatures {
    int n;        /* statements */
    float *x;     /* n * TE_FEATURES */
    int *stage;   /* per row: the statement's stage */
    LnPart *part; /* per row: its part */
    int *buffer;  /* per row: TE_FEATURE_BUFFERS program tensors in row order, -1 when missing */
    int cap;
} TeFeatures;

void TeFeatures_init(TeFeatures *this);
void TeFeatures_done(TeFeatures *this);

/* Replaces this's rows by those of the nest. steps (may be NULL) are the
 * steps it was lowered from, for the auto_unroll max step. raw: the values
 * as documented above; else slog'ed (see the top). Fails only on an axis or
 * guard text the lowering did not write (a bug), naming it. */
Status TeFeatures_ofNest(TeFeatures *this, const LoopNest *ln, const Steps *steps, int raw, char *err);
/* Lowers steps on dag and extracts the features (the model's form, not raw).
 * Fails with the lowering's error when a step does not apply. */
Status TeFeatures_extract(TeFeatures *this, const TeDag *dag, const Steps *steps, char *err);

#endif
