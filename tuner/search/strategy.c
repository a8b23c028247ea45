/* tuner/search/strategy.c: the table of search strategies (see strategy.h);
 * the helpers every strategy shares are in strategy_shared.c, so that the
 * table and the strategies do not call each other in a circle. */
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
