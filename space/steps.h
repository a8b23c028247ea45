/* space/steps.h: a schedule as a list of steps (the template-free search
 * space). A step is plain data: its kind, the stage it acts on (a stage index
 * of the expression's DAG) and a few integers. What each step means follows
 * the auto-scheduler's transform steps; kernels/templates/te/te_lower.c applies them.
 *
 *   split        S it f1 .. fn   loop `it` of stage S becomes n+1 loops: the
 *                                outermost ceil(extent / (f1*..*fn)), then f1..fn
 *   reorder      S p0 .. pk      the stage's loops in this new order (a permutation)
 *   fuse         S it n          loops it..it+n-1 (adjacent, all spatial or all
 *                                reduction) become one
 *   compute_at   S T it          compute S inside loop `it` of stage T, for the
 *                                region T's iterations under that loop read
 *   compute_inline S             substitute S into its consumers (no reduction, not an output)
 *   compute_root S               compute S in its own loop nest (the default)
 *   parallel     S it            a spatial loop runs on all cores (OpenMP on cpu; parallel loops
 *                                nested with nothing else between them run as one, collapsed)
 *   vectorize    S it            the loop is a SIMD loop
 *   unroll       S it            the loop is unrolled
 *   auto_unroll  S it n          unroll loops under `it` up to n steps (the
 *                                auto_unroll_max_step pragma)
 *   bind         S it a          on GPU targets, a spatial loop becomes a thread
 *                                index: a = 0..2 blockIdx.x/y/z, 3..5 threadIdx.x/y/z;
 *                                6..8 vthread.x/y/z: a virtual thread, a loop inside
 *                                each thread (on cpu every bound loop stays a loop)
 *   cache_write  S               add a cache stage: a new stage computes S's value
 *                                (its reduction included) into a local buffer, and
 *                                S becomes a copy of that buffer into its tensor
 *   cache_read   S T m           add a cache stage: a new stage copies tensor T
 *                                (program tensor index: an input or a defined
 *                                tensor) for stage S, which reads the copy; m = 0
 *                                local (a packed buffer on cpu), 1 shared (GPU
 *                                shared memory; a local buffer on cpu), 2 padded
 *                                (cpu: local, holding T inside the border that S's
 *                                guarded reads `if(c, T[idx], v)` stand for, v a
 *                                number, the same in every such read: 0 for a
 *                                convolution, -3.4e38 for max pooling; S reads it
 *                                without the test; c must hold exactly when idx is
 *                                inside T, see LoopNest_padded; a third argument r
 *                                rounds its last extent up to a multiple of r), 3 by
 *                                phases (cpu: local, T's last dimension stored as
 *                                (p mod a, p div a) when S reads it at a * v + s, one
 *                                spatial v, a >= 2 dividing its extent, s of
 *                                reduction variables: S then reads it at unit stride
 *                                along v, see LoopNest_phases)
 *   storage_align S d f o        pad the buffer of cache or computed-at stage S:
 *                                the stride of its dimension d (elements from one
 *                                index of d to the next) becomes the next number
 *                                that is o modulo f (avoids shared-memory bank conflicts)
 *   rfactor      S r f           reduction axis r of S (its r-th, 0-based) is split into
 *                                outer * f + inner (f divides its extent); a new stage
 *                                S.rf[spatial.., inner] reduces over the outer part (and
 *                                S's other reduction axes), and S reduces S.rf over
 *                                inner: the inner part becomes a spatial axis of S.rf,
 *                                which may be vectorized (a sum, max_over or min_over)
 *
 * Stage indices: the stages are the DAG's (te/dag.h) at first. cache_write S,
 * rfactor S .. and cache_read S ... insert the new stage at index S: it is S from
 * the next step on, the stage that was S is S+1, and every stage from S on
 * moves up by one (the auto-scheduler's rule for the cache_write stage; the
 * cache_read stage goes just before its reader, since inputs are no stages
 * here). Each must come before any step gives S loops. A cache stage is an
 * ordinary stage: it is split, reordered and computed at a loop of its reader
 * (compute_at) like the others. A stage computed at a loop stores its values
 * in a buffer local to that loop's body (each iteration of a parallel loop
 * has its own), sized to the region the loop reads; a cache stage computed at
 * root has a buffer of the whole tensor, local to the kernel.
 *
 * Loops are named by their position in the stage's current loop list, which
 * every step updates: replaying the same list always gives the same result.
 *
 * Text form (records, tests): steps separated by "; ", each "name S a b ...",
 * e.g. "split 0 1 8 4; reorder 0 0 2 1 3; parallel 0 0". */
#ifndef TT_SPACE_STEPS_H
#define TT_SPACE_STEPS_H

#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"

#define STEP_MAX_ARGS 24
#define STEPS_MAX 64

typedef enum {
    STEP_SPLIT,
    STEP_REORDER,
    STEP_FUSE,
    STEP_COMPUTE_AT,
    STEP_COMPUTE_INLINE,
    STEP_COMPUTE_ROOT,
    STEP_PARALLEL,
    STEP_VECTORIZE,
    STEP_UNROLL,
    STEP_AUTO_UNROLL,
    STEP_BIND,
    STEP_CACHE_WRITE,
    STEP_CACHE_READ,
    STEP_STORAGE_ALIGN,
    STEP_RFACTOR,
    STEP_KINDS
} StepKind;

typedef struct Step {
    StepKind kind;
    int stage;
    int n_args;
    int64_t arg[STEP_MAX_ARGS];
} Step;

typedef struct Steps {
    int n;
    Step step[STEPS_MAX];
} Steps;

const char *StepKind_name(StepKind k);

/* Appends a step; TT_ERR when the list is full or has too many arguments. */
Status Steps_add(Steps *this, StepKind kind, int stage, const int64_t *args, int n_args, char *err);
/* Appends the text form. */
void Steps_encode(const Steps *this, StrBuf *out);
/* Parses the text form (the argument counts each kind needs are checked:
 * split >= 2, reorder >= 1, fuse 2, compute_at 2, inline/root 0, parallel /
 * vectorize / unroll 1, auto_unroll 2, bind 2, cache_write 0, cache_read
 * 2, storage_align 3, rfactor 2); errors name the step index. */
Status Steps_decode(const char *text, Steps *out, char *err);

#endif
