/* tuner/search/strategy.h: a search strategy proposes configs of one task to
 * measure and learns from their results. One instance per task; called only
 * from the engine thread (a strategy may run its own background thread, e.g.
 * to train a cost model, but propose/update must not block on it for long).
 *
 * Strategies are const structs registered in one table (tuner/search/strategy.c):
 * "grid", "random", "ga", "xgb", and "evolution" (schedules of tensor
 * expressions, the one strategy of te.sketch tasks).
 */
#ifndef TT_TUNER_STRATEGY_H
#define TT_TUNER_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/template.h"
#include "space/space.h"
#include "te/dag.h"
#include "tuner/task.h"

/* The evolution strategy's settings (tune --population, --generations,
 * --mutation, --eps-greedy); the defaults are the auto-scheduler's. */
typedef struct EvolutionOptions {
    int population;  /* candidates per generation (2048) */
    int generations; /* generations per round (4) */
    double mutation; /* probability that a child is a mutation, else a crossover (0.85) */
    double eps;      /* share of each round's measured candidates drawn at random (0.05) */
    int cost_model;  /* 1: children ranked by the learned cost model; 0: by their measured ancestors */
} EvolutionOptions;
EvolutionOptions EvolutionOptions_default(void);
#define EVO_POPULATION_MAX 65536 /* population 2..this */
#define EVO_GENERATIONS_MAX 100  /* generations 0..this; mutation and eps 0..1 */

/* Warm start of the evolution's cost model (one model shared by every
 * evolution of the process): adds the records of the log at path whose task
 * is one of dags (other tasks' expressions; read during the call only), so
 * the model's first fit learns from them too. Call before the engine starts;
 * the model lives at least until Evolution_warmEnd. *added counts the
 * programs added. Fails (err) without XGBoost or on a damaged log (the
 * records before the damage stay added). */
Status Evolution_warmStart(const char *path, const TeDag *const *dags, int n_dags, int *added, char *err);
/* Programs added by warm starts so far. */
int Evolution_warmPrograms(void);
/* Lets the model go when no evolution uses it (after the engine is deleted). */
void Evolution_warmEnd(void);

/* What a strategy may look at. Owned by the engine; valid for the strategy's life. */
typedef struct StrategyContext {
    const Task *task;
    const DeviceInfo *dev;
    int plan_size; /* batch size the engine will ask for (default 64) */
    /* Records of other tasks of the same template, for --transfer (may be empty). */
    int n_transfer;
    const uint64_t *transfer_index; /* config indices in each transfer task's own space */
    const double *transfer_gflops;
    const Task *const *transfer_task;
    EvolutionOptions evolution; /* for the evolution strategy */
    int threads;                /* CPU kernel threads (0 = all cores): the cores a zero-trial default keeps busy */
} StrategyContext;

/* Features of a config: Space_features followed by the template's features.
 * Writes at most cap floats, returns the count (the same for every config of a task). */
int Strategy_features(const StrategyContext *ctx, uint64_t index, float *out, int cap);
/* The template's cheap validity check for a config (true = may be valid). */
bool Strategy_valid(const StrategyContext *ctx, uint64_t index);

typedef struct Strategy {
    const char *name;
    void *(*create)(const StrategyContext *ctx, uint64_t seed, char *err);
    /* Proposes up to n configs not in visited, adds each to visited, writes
     * them to out, returns how many (0 = nothing left to propose). */
    int (*propose)(void *self, VisitedSet *visited, uint64_t *out, int n);
    /* Results of measured configs: gflops is 0 for a failed config. Also used
     * to replay a log on resume before the first propose. */
    void (*update)(void *self, const uint64_t *index, const double *gflops, int n);
    /* Results of another task of the same template (index in that task's own
     * space; the Task outlives the strategy): the engine reports every other
     * task's results of the session here, so a model-based strategy learns
     * from the whole network. May be NULL (the strategy ignores them). */
    void (*learn_other)(void *self, const Task *task, const uint64_t *index, const double *gflops, int n);
    /* One line about what the strategy is doing ("model: 320 pts, rank corr 0.71");
     * false when there is nothing to say. May be NULL. */
    bool (*status)(void *self, char *buf, size_t n);
    void (*destroy)(void *self);
} Strategy;

const Strategy *Strategy_find(const char *name);
/* "xgb, ga, random, grid": the table's names, for help and error messages */
const char *Strategy_names(void);
/* The default strategy (xgb), the first of the table. */
const Strategy *Strategy_default(void);

#endif
