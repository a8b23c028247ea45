/* tuner/search/strategy_random.c: uniform sampling without replacement over the
 * configs that pass the template's cheap validity check.
 *
 * Like every other strategy but grid (which walks the whole space in order),
 * random search does not spend trials on configs the precheck rejects: it
 * draws until it finds a valid unvisited config. Only when valid ones are
 * hard to find (a nearly exhausted space) does it propose whatever is left,
 * so that a session still ends with the space covered and the invalid
 * configs recorded with their reason. */
#include <stdlib.h>

#include "base/alloc.h"
#include "tuner/search/strategy.h"

/* rejection draws per proposed config before taking any unvisited one */
#define VALID_TRIES 64

typedef struct RandomStrategy {
    StrategyContext ctx;
    const Space *space;
    Rng rng;
} RandomStrategy;

static void *random_create(const StrategyContext *ctx, uint64_t seed, char *err) {
    RandomStrategy *r = tt_calloc(1, sizeof *r);
    r->ctx = *ctx;
    r->space = &ctx->task->space;
    Rng_seed(&r->rng, seed);
    return r;
}

static int random_propose(void *self, VisitedSet *visited, uint64_t *out, int n) {
    RandomStrategy *r = self;
    int k = 0;
    while (k < n) {
        bool found = false;
        for (int t = 0; t < VALID_TRIES && !found; t++) {
            uint64_t i = Rng_below(&r->rng, r->space->total);
            if (VisitedSet_has(visited, i) || !Strategy_valid(&r->ctx, i)) continue;
            VisitedSet_add(visited, i);
            out[k++] = i;
            found = true;
        }
        if (found) continue;
        /* valid configs are rare among the unvisited ones: take any */
        int got = Space_sampleUnvisited(r->space, visited, &r->rng, out + k, n - k);
        k += got;
        break;
    }
    return k;
}

/* Random search does not learn. */
static void random_update(void *self, const uint64_t *index, const double *gflops, int n) {}

static void random_destroy(void *self) { free(self); }

const Strategy strategy_random = {
    .name = "random",
    .create = random_create,
    .propose = random_propose,
    .update = random_update,
    .status = NULL,
    .destroy = random_destroy,
};
