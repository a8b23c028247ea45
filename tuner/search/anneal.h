/* tuner/search/anneal.h: simulated annealing over a Space, guided by a score
 * function (the cost model's predictions).
 *
 * n_chains chains walk the space at once; each step moves every chain to a
 * random neighbour (Space_neighbour), scores all the moves with ONE call of
 * the score function, and accepts a move with probability
 * exp(min((new - old) / T, 1)), T falling linearly from temp_start to
 * temp_end over max_steps. The best k distinct configs seen that are not
 * excluded and not invalid form the "top set"; the run stops after max_steps,
 * or after early_stop steps without a change of the top set. Chains keep
 * their positions between runs, so the next plan continues from where the
 * last one ended.
 *
 * Ownership: an Annealer owns its chain arrays (Annealer_init/done). It keeps
 * a pointer to the Space, which must outlive it. Not thread-safe.
 */
#ifndef TT_TUNER_ANNEAL_H
#define TT_TUNER_ANNEAL_H

#include <math.h>
#include <stdint.h>

#include "base/rng.h"
#include "base/status.h"
#include "space/space.h"

/* Score of a config that must never be proposed (fails the template's precheck). */
#define ANNEAL_INVALID (-INFINITY)

/* Writes scores of n configs to out (larger is better; ANNEAL_INVALID for an
 * invalid config). Called once per annealing step. */
typedef Status (*AnnealScoreFn)(void *ctx, const uint64_t *index, int n, float *out, char *err);

typedef struct AnnealParams {
    int n_chains;      /* 128 */
    int max_steps;     /* 500 */
    int early_stop;    /* 50 steps without a change of the top set */
    double temp_start; /* 1 */
    double temp_end;   /* 0 */
} AnnealParams;

void AnnealParams_defaults(AnnealParams *this);

typedef struct Annealer {
    const Space *space;
    AnnealParams params;
    Rng rng;
    int n_points;     /* chains placed so far (0 before the first run or setPoints) */
    uint64_t *points; /* n_chains chain positions */
    float *scores;    /* their last scores (stale between runs: the model changes) */
    int last_steps;   /* steps the last run took */
} Annealer;

void Annealer_init(Annealer *this, const Space *space, const AnnealParams *params, uint64_t seed);
void Annealer_done(Annealer *this);

/* Places the chains (up to n_chains of points; the rest stay where they are,
 * or start at random indices on the next run if never placed). */
void Annealer_setPoints(Annealer *this, const uint64_t *points, int n);

/* Runs the annealing and writes up to k best configs, best first, into out
 * (and their scores into out_scores, may be NULL); *n_out receives the count.
 * exclude (may be NULL) lists configs never to return (visited ones).
 * Fails only when the score function fails. */
Status Annealer_run(Annealer *this, AnnealScoreFn score, void *ctx, const VisitedSet *exclude, int k, uint64_t *out,
                    float *out_scores, int *n_out, char *err);

#endif
