/* tuner/te_score.h: the cost model evolution ranks schedules of tensor
 * expressions with (tuner/strategy_evolution.c). A model scores lowered loop
 * nests (kernels/templates/te/te_lower.h); higher means predicted faster, on
 * any scale. One instance per process, shared by every sketch-searched task of
 * a session, so it can learn across tasks (and normalise per task itself).
 * Called only from the engine thread. */
#ifndef TT_TUNER_TE_SCORE_H
#define TT_TUNER_TE_SCORE_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/templates/te/te_lower.h"
#include "tuner/task.h"

typedef struct TeScoreModel {
    const char *name;
    void *(*create)(char *err); /* NULL and err on failure */
    /* n candidates of one task: out[i] = the predicted score of ln[i] */
    void (*predict)(void *m, const Task *task, const LoopNest *const *ln, int n, double *out);
    /* measured results of one task: gflops[i] = 0 for a failed candidate */
    void (*update)(void *m, const Task *task, const LoopNest *const *ln, const double *gflops, int n);
    /* one line for the UI ("model: 320 pts, rank corr 0.71"); false = nothing to say; may be NULL */
    bool (*status)(void *m, char *buf, size_t n);
    void (*destroy)(void *m);
} TeScoreModel;

/* The learned model evolution uses, or NULL when none is built in: then a
 * candidate scores what the measured schedule it was mutated from measured
 * (fresh random ones score 0), see strategy_evolution.c. */
const TeScoreModel *TeScoreModel_default(void);

#endif
