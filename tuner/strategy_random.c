/* tuner/strategy_random.c: uniform sampling without replacement. */
#include <stdlib.h>

#include "tuner/strategy.h"

typedef struct RandomStrategy {
    const Space *space;
    Rng rng;
} RandomStrategy;

static void *random_create(const StrategyContext *ctx, uint64_t seed, char *err) {
    RandomStrategy *r = calloc(1, sizeof *r);
    if (!r) {
        tt_fail(err, "random: out of memory");
        return NULL;
    }
    r->space = &ctx->task->space;
    Rng_seed(&r->rng, seed);
    return r;
}

static int random_propose(void *self, VisitedSet *visited, uint64_t *out, int n) {
    RandomStrategy *r = self;
    return Space_sampleUnvisited(r->space, visited, &r->rng, out, n);
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
