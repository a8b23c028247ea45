/* te/dag.h: the compute DAG of a parsed `.te` program.
 *
 * One stage per defined tensor (not inputs, not constants), in file order (a producer always comes before
 * its consumers). A stage's value is
 *     out[spatial...] = post(reduce_op(body, reduce axes...))
 * where the reduction is optional and post is the identity when the reduction
 * is the whole value (layer-norm's `sum(...) / N` has a post). A stage holds
 * at most one reduction, not under an `if` and not inside another reduction.
 *
 * Analyses (what a schedule search asks of a stage):
 *   injective    no reduction: each output element reads a fixed set of inputs
 *   elementwise  injective, and every index of every access is one spatial
 *                variable or a constant (broadcasts such as Bias[j] included)
 *   inlinable    elementwise and not an output: can be computed inside its
 *                consumers (compute_inline)
 *   data_reuse   has a reduction and its reads leave out spatial axes at least
 *                twice in total (matmul: A[i,k] misses j, B[k,j] misses i): the
 *                same input element is re-read, so multi-level tiling pays
 *                (reads of a constant tensor count for nothing: its elements
 *                are numbers of the emitted code)
 *   fusible_consumer  for a data-reuse stage that is not an output: its one
 *                consumer, when that consumer is elementwise and reads the
 *                stage at exactly its spatial variables (tile the producer and
 *                compute it at the consumer's tiles)
 *
 * The workload key is a hash of a canonical text of the whole program (tensors
 * and variables renamed by position, lets folded, one spacing), so the same
 * computation written with other names or spacing has the same key. */
#ifndef TT_TE_DAG_H
#define TT_TE_DAG_H

#include "base/status.h"
#include "base/strbuf.h"
#include "te/te.h"

#define TE_MAX_ACCESSES 32
#define TE_KEY_LEN 24

typedef struct TeAccess {
    int tensor;          /* program tensor read */
    const TeExpr *at;    /* the TE_ACCESS node */
    int in_reduce;       /* inside the reduction body */
    int missing_spatial; /* spatial axes of the stage that no index uses */
} TeAccess;

typedef struct TeStage {
    int tensor; /* the program tensor it defines */
    int n_spatial;
    int spatial[TE_MAX_DIMS]; /* variable indices, outermost first */
    int n_reduce;
    int reduce[TE_MAX_DIMS];
    const TeExpr *red; /* the TE_REDUCE node, or NULL */
    int n_access;
    TeAccess access[TE_MAX_ACCESSES];
    int n_consumers;
    int consumers[TE_MAX_TENSORS]; /* stage indices */
    int is_output, injective, elementwise, inlinable, data_reuse;
    int fusible_consumer; /* stage index or -1 */
    double flops;         /* floating-point operations of the whole stage */
} TeStage;

typedef struct TeDag {
    const TeProgram *prog; /* borrowed: must outlive the DAG */
    int n_stages;
    TeStage stages[TE_MAX_TENSORS];
    int stage_of[TE_MAX_TENSORS]; /* program tensor -> stage index, -1 for inputs */
    double flops;
    char key[TE_KEY_LEN]; /* "te-" and 16 hex digits */
} TeDag;

/* Builds the DAG of prog into *out. Fails with "file:line:col: ..." when a
 * stage holds two reductions or one under an `if` or inside another. */
Status TeDag_build(TeDag *out, const TeProgram *prog, char *err);

/* Appends the canonical text of the program (what the key hashes). */
void TeDag_canonical(const TeDag *this, StrBuf *out);

/* Appends e written in `.te` syntax with the program's own names. */
void TeExpr_format(const TeProgram *prog, const TeExpr *e, StrBuf *out);

#endif
