/* tuner/search/strategy_ga.c: a genetic algorithm over knob vectors
 * (population 100, 3 elites, mutation probability 0.1, parents drawn
 * in proportion to fitness normalised by the best, single-point crossover).
 *
 * Adapted to propose/update arriving in batches and out of step (the engine
 * measures one batch while it asks for the next): the parents are the latest
 * pop_size results, whatever generation they came from, plus the elites (the
 * best configs seen so far, replayed ones included). When the children of
 * one breeding run out, the next are bred from that window. Breeding from a
 * per-generation pool instead would, with results one batch late, often find
 * no results of the current generation and fall back to the elites alone.
 * Until half a population of results is in, the GA proposes random configs.
 * Children that were visited, duplicate a sibling, or fail the template's
 * pre-check are mutated again (one knob at a time); failing that, replaced by
 * a random config. A proposed config is never one already in `visited`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "tuner/search/strategy.h"

#define GA_POP 100
#define GA_ELITE 3
#define GA_MUTATION 0.1
#define GA_FIX_TRIES 32 /* re-mutations of a bad child before replacing it */
#define GA_RANDOM_TRIES 64

typedef struct Member {
    uint64_t index;
    double score; /* GFLOPS, 0 for a failed config */
} Member;

typedef struct GA {
    StrategyContext ctx; /* copied: the engine's struct may be a temporary */
    const Space *space;
    Rng rng;
    int pop_size, elite_num;
    /* the latest pop_size results, a ring */
    Member *window;
    int window_n, window_head;
    /* children bred but not yet proposed */
    uint64_t *pending;
    int pending_n, pending_pos;
    Member elites[GA_ELITE];
    int n_elites;
    int generation;
    uint64_t n_results;
} GA;

static void *ga_create(const StrategyContext *ctx, uint64_t seed, char *err) {
    GA *g = tt_calloc(1, sizeof *g);
    g->ctx = *ctx;
    g->space = &ctx->task->space;
    Rng_seed(&g->rng, seed);
    g->pop_size = g->space->total < GA_POP ? (int)g->space->total : GA_POP;
    if (g->pop_size < 1) g->pop_size = 1;
    g->elite_num = g->pop_size < GA_ELITE ? g->pop_size : GA_ELITE;
    g->window = tt_malloc((size_t)g->pop_size * sizeof *g->window);
    g->pending = tt_malloc((size_t)g->pop_size * sizeof *g->pending);
    return g;
}

static void ga_destroy(void *self) {
    GA *g = self;
    if (!g) return;
    free(g->window);
    free(g->pending);
    free(g);
}

/* Keeps the elite_num best results seen so far (each config once). */
static void elites_offer(GA *g, uint64_t index, double score) {
    for (int i = 0; i < g->n_elites; i++)
        if (g->elites[i].index == index) return; /* a config is measured once */
    int pos = g->n_elites;
    if (pos == g->elite_num) {
        if (score <= g->elites[pos - 1].score) return;
        pos--;
    } else {
        g->n_elites++;
    }
    /* insertion into the array sorted best first */
    while (pos > 0 && g->elites[pos - 1].score < score) {
        g->elites[pos] = g->elites[pos - 1];
        pos--;
    }
    g->elites[pos] = (Member){index, score};
}

static void ga_update(void *self, const uint64_t *index, const double *gflops, int n) {
    GA *g = self;
    for (int i = 0; i < n; i++) {
        double s = gflops[i] > 0 ? gflops[i] : 0;
        g->n_results++;
        elites_offer(g, index[i], s);
        g->window[g->window_head] = (Member){index[i], s};
        g->window_head = (g->window_head + 1) % g->pop_size;
        if (g->window_n < g->pop_size) g->window_n++;
    }
}

/* A random config that is not visited, not in `avoid`, and passes the
 * pre-check; UINT64_MAX when none turned up within the tries. */
static uint64_t random_config(GA *g, const VisitedSet *visited, const VisitedSet *avoid) {
    uint64_t fallback = UINT64_MAX;
    for (int t = 0; t < GA_RANDOM_TRIES; t++) {
        uint64_t i = Rng_below(&g->rng, g->space->total);
        if (VisitedSet_has(visited, i) || (avoid && VisitedSet_has(avoid, i))) continue;
        if (Strategy_valid(&g->ctx, i)) return i;
        if (fallback == UINT64_MAX) fallback = i;
    }
    return fallback;
}

/* Roulette choice over parents' fitness (already normalised, all > 0). */
static int pick(GA *g, const double *fit, int n, double sum, int not ) {
    for (;;) {
        double r = Rng_uniform(&g->rng) * sum;
        int i = 0;
        while (i < n - 1 && r >= fit[i])
            r -= fit[i++];
        if (i != not || n == 1) return i;
    }
}

/* Breeds up to pop_size children into pending. Returns how many. */
static int breed(GA *g, const VisitedSet *visited) {
    const Space *sp = g->space;
    int np = 0;
    Member *parents = malloc((size_t)(g->window_n + g->n_elites) * sizeof *parents);
    double *fit = malloc((size_t)(g->window_n + g->n_elites) * sizeof *fit);
    if (!parents || !fit) abort();
    for (int i = 0; i < g->window_n; i++)
        parents[np++] = g->window[i];
    for (int i = 0; i < g->n_elites; i++)
        parents[np++] = g->elites[i];
    /* fitness normalised by the best; the epsilon keeps failed configs
     * selectable (all failed: uniform choice) */
    double best = 0, sum = 0;
    for (int i = 0; i < np; i++)
        if (parents[i].score > best) best = parents[i].score;
    for (int i = 0; i < np; i++) {
        fit[i] = (best > 0 ? parents[i].score / best : 0) + 1e-8;
        sum += fit[i];
    }
    VisitedSet kids;
    VisitedSet_init(&kids);
    int n_kids = 0;
    int32_t a[SPACE_MAX_KNOBS], b[SPACE_MAX_KNOBS], c[SPACE_MAX_KNOBS];
    int nk = sp->n_knobs;
    for (int k = 0; k < g->pop_size; k++) {
        int p1 = pick(g, fit, np, sum, -1), p2 = pick(g, fit, np, sum, p1);
        Space_decode(sp, parents[p1].index, a);
        Space_decode(sp, parents[p2].index, b);
        /* single point: knobs [0, point) from the first parent, the rest from the second */
        int point = nk > 1 ? 1 + (int)Rng_below(&g->rng, (uint64_t)(nk - 1)) : (int)Rng_below(&g->rng, 2);
        for (int j = 0; j < nk; j++)
            c[j] = j < point ? a[j] : b[j];
        for (int j = 0; j < nk; j++)
            if (sp->knobs[j].len > 1 && Rng_uniform(&g->rng) < GA_MUTATION)
                c[j] = (int32_t)((c[j] + 1 + (int64_t)Rng_below(&g->rng, sp->knobs[j].len - 1)) %
                                 (int64_t)sp->knobs[j].len);
        uint64_t child = Space_encode(sp, c);
        bool ok = false;
        for (int t = 0; t < GA_FIX_TRIES && !ok; t++) {
            ok = !VisitedSet_has(visited, child) && !VisitedSet_has(&kids, child) && Strategy_valid(&g->ctx, child);
            if (!ok) child = Space_neighbour(sp, child, &g->rng);
        }
        if (!ok) child = random_config(g, visited, &kids);
        if (child == UINT64_MAX) continue; /* nearly exhausted: propose() falls back to random sampling */
        VisitedSet_add(&kids, child);
        g->pending[n_kids++] = child;
    }
    VisitedSet_done(&kids);
    free(parents);
    free(fit);
    return n_kids;
}

/* Results needed before breeding: half a population (half lets the first children go out while the rest of the
 * first random batch is still being measured). */
static int breed_threshold(const GA *g) { return g->pop_size / 2 > 2 ? g->pop_size / 2 : 2; }

static int ga_propose(void *self, VisitedSet *visited, uint64_t *out, int n) {
    GA *g = self;
    int got = 0;
    bool dry = false; /* a breeding in this call found nothing new: do not retry per config */
    while (got < n) {
        if (g->pending_pos < g->pending_n) {
            uint64_t i = g->pending[g->pending_pos++];
            if (VisitedSet_add(visited, i)) out[got++] = i; /* else visited since it was bred: skip */
            continue;
        }
        if (!dry && g->window_n >= breed_threshold(g)) {
            g->pending_n = breed(g, visited);
            g->pending_pos = 0;
            g->generation++;
            if (g->pending_n > 0) continue;
            dry = true;
        }
        /* Too few results to breed from (or breeding found nothing new): random. */
        uint64_t i = random_config(g, visited, NULL);
        if (i != UINT64_MAX) {
            VisitedSet_add(visited, i);
        } else if (Space_sampleUnvisited(g->space, visited, &g->rng, &i, 1) != 1) {
            break; /* the space is exhausted */
        }
        out[got++] = i;
    }
    return got;
}

static bool ga_status(void *self, char *buf, size_t n) {
    GA *g = self;
    if (g->n_elites == 0) {
        snprintf(buf, n, "ga: generation %d, no results yet", g->generation);
    } else {
        snprintf(buf, n, "ga: generation %d, %llu results, best %.1f GFLOPS", g->generation,
                 (unsigned long long)g->n_results, g->elites[0].score);
    }
    return true;
}

const Strategy strategy_ga = {
    .name = "ga",
    .create = ga_create,
    .propose = ga_propose,
    .update = ga_update,
    .status = ga_status,
    .destroy = ga_destroy,
};
