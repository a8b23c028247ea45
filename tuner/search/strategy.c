/* tuner/search/strategy.c: the table of search strategies and the helpers every
 * strategy shares (features and the template's cheap validity check). */
#include "tuner/search/strategy.h"

#include <pthread.h>
#include <string.h>

#include "base/strbuf.h"

/* xgb is always listed; built without XGBoost it refuses to create with a
 * message that says so. */
extern const Strategy strategy_grid, strategy_random, strategy_ga, strategy_xgb, strategy_evolution;

/* The first is the default (--tuner, EngineConfig): xgb, because its model
 * learns from every task of a template in the session and reaches a good
 * config in fewer trials than ga or random once it has (see the Benchmarks
 * section of the README). */
static const Strategy *const STRATEGIES[] = {&strategy_xgb, &strategy_ga, &strategy_random, &strategy_grid,
                                             &strategy_evolution};
#define N_STRATEGIES ((int)(sizeof STRATEGIES / sizeof STRATEGIES[0]))

const Strategy *Strategy_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < N_STRATEGIES; i++)
        if (strcmp(STRATEGIES[i]->name, name) == 0) return STRATEGIES[i];
    return NULL;
}

const Strategy *Strategy_default(void) { return STRATEGIES[0]; }

static char strategy_names[96];
static pthread_once_t strategy_names_once = PTHREAD_ONCE_INIT;

static void strategy_names_init(void) {
    for (int i = 0; i < N_STRATEGIES; i++)
        Names_add(strategy_names, sizeof strategy_names, STRATEGIES[i]->name);
}

const char *Strategy_names(void) {
    pthread_once(&strategy_names_once, strategy_names_init);
    return strategy_names;
}

int Strategy_features(const StrategyContext *ctx, uint64_t index, float *out, int cap) {
    const Task *t = ctx->task;
    int n = Space_features(&t->space, index, out, cap);
    if (t->tmpl && t->tmpl->features && n < cap) {
        int32_t choice[SPACE_MAX_KNOBS];
        Space_decode(&t->space, index, choice);
        n += t->tmpl->features(&t->wl, &t->space, choice, ctx->dev, out + n, cap - n);
    }
    return n;
}

bool Strategy_valid(const StrategyContext *ctx, uint64_t index) {
    const Task *t = ctx->task;
    if (!t->tmpl || !t->tmpl->precheck) return true;
    int32_t choice[SPACE_MAX_KNOBS];
    Space_decode(&t->space, index, choice);
    char reason[256];
    return t->tmpl->precheck(&t->wl, &t->space, choice, ctx->dev, reason, sizeof reason);
}

EvolutionOptions EvolutionOptions_default(void) {
    return (EvolutionOptions){.population = 2048, .generations = 4, .mutation = 0.85, .eps = 0.05, .cost_model = 1};
}
