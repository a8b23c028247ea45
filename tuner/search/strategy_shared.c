/* tuner/search/strategy_shared.c: the helpers every strategy shares (see
 * strategy.h): features, the template's cheap validity check, the evolution's
 * default options. */
#include "tuner/search/strategy.h"

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
