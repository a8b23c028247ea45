/* tuner/search/strategy_grid.c: every config in flat-index order, skipping those
 * already visited (measured in an earlier session, or by another proposer). */
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "tuner/search/strategy.h"

typedef struct Grid {
    const Space *space;
    uint64_t next; /* first index not yet looked at */
} Grid;

static void *grid_create(const StrategyContext *ctx, uint64_t seed, char *err) {
    Grid *g = tt_calloc(1, sizeof *g);
    g->space = &ctx->task->space;
    return g;
}

static int grid_propose(void *self, VisitedSet *visited, uint64_t *out, int n) {
    Grid *g = self;
    int got = 0;
    while (got < n && g->next < g->space->total) {
        uint64_t i = g->next++;
        if (VisitedSet_add(visited, i)) out[got++] = i;
    }
    return got;
}

/* Grid order does not depend on results. */
static void grid_update(void *self, const uint64_t *index, const double *gflops, int n) {}

static bool grid_status(void *self, char *buf, size_t n) {
    Grid *g = self;
    snprintf(buf, n, "grid: at index %llu of %llu", (unsigned long long)g->next, (unsigned long long)g->space->total);
    return true;
}

static void grid_destroy(void *self) { free(self); }

const Strategy strategy_grid = {
    .name = "grid",
    .create = grid_create,
    .propose = grid_propose,
    .update = grid_update,
    .status = grid_status,
    .destroy = grid_destroy,
};
