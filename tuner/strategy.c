/* tuner/strategy.c: the table of search strategies and the helpers every
 * strategy shares (features and the template's cheap validity check). */
#include "tuner/strategy.h"

#include <string.h>

/* xgb is always listed; built without XGBoost it refuses to create with a
 * message that says so. */
extern const Strategy strategy_grid, strategy_random, strategy_ga, strategy_xgb;

static const Strategy *const STRATEGIES[] = {&strategy_grid, &strategy_random, &strategy_ga, &strategy_xgb};
#define N_STRATEGIES ((int)(sizeof STRATEGIES / sizeof STRATEGIES[0]))

const Strategy *Strategy_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < N_STRATEGIES; i++)
        if (strcmp(STRATEGIES[i]->name, name) == 0) return STRATEGIES[i];
    return NULL;
}

const char *Strategy_names(void) {
    return "xgb, ga, random, grid";
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
