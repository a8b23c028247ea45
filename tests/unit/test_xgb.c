/* tests/unit/test_xgb.c: the xgb strategy, its cost model and its annealer,
 * on a synthetic smooth objective over a Space built here, with a test
 * template whose precheck rejects register tiles that are too large. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/rng.h"
#include "tests/check.h"
#include "tuner/search/anneal.h"
#include "tuner/search/costmodel.h"
#include "tuner/search/strategy.h"

extern const Strategy strategy_xgb;
extern void (*xgb_fit_hook)(void);

/* ---- the synthetic task -------------------------------------------------------- */

enum { K_X, K_Y, K_K, K_UNROLL, K_VEC };

/* Inner tile x*y above this is "too many registers": the precheck rejects it. */
#define MAX_TILE 64

static bool tile_ok(const Space *s, const int32_t *c) {
    const int64_t *x = Space_split(s, c, K_X), *y = Space_split(s, c, K_Y);
    return x[2] * y[2] <= MAX_TILE;
}

static bool test_precheck(const Workload *wl, const Space *s, const int32_t *c, const DeviceInfo *dev, char *reason,
                          size_t n) {
    if (tile_ok(s, c)) return true;
    snprintf(reason, n, "register tile too large");
    return false;
}

static int test_features(const Workload *wl, const Space *s, const int32_t *c, const DeviceInfo *dev, float *out,
                         int cap) {
    const int64_t *x = Space_split(s, c, K_X), *y = Space_split(s, c, K_Y);
    if (cap < 1) return 0;
    out[0] = (float)(x[2] * y[2]); /* register tile */
    return 1;
}

static const Template TEST_TMPL = {
    .name = "synthetic.test",
    .op = OP_DENSE,
    .family = FAMILY_CPU,
    .precheck = test_precheck,
    .features = test_features,
};

static double l2(int64_t v) { return log2((double)v); }

/* A smooth objective with one broad optimum plus interactions (vector width
 * against the inner x tile, unroll against the k tile). 0 for invalid configs. */
static double synth_gflops(const Space *s, uint64_t index) {
    int32_t c[SPACE_MAX_KNOBS];
    Space_decode(s, index, c);
    if (!tile_ok(s, c)) return 0;
    const int64_t *x = Space_split(s, c, K_X), *y = Space_split(s, c, K_Y), *k = Space_split(s, c, K_K);
    double unroll = (double)Space_option(s, c, K_UNROLL), vec = (double)Space_option(s, c, K_VEC);
    double d = (l2(x[2]) - 3) * (l2(x[2]) - 3) + (l2(x[1]) - 2) * (l2(x[1]) - 2) + (l2(y[2]) - 2) * (l2(y[2]) - 2) +
               (l2(y[1]) - 1.5) * (l2(y[1]) - 1.5) + (l2(k[1]) - 4) * (l2(k[1]) - 4);
    double vec_fit = vec <= (double)x[2] ? 1.0 + 0.1 * log2(vec) : 0.6;
    double unroll_fit = 1.0 - 0.05 * fabs(unroll - l2(k[1]) / 2);
    return 100.0 * exp(-0.12 * d) * vec_fit * unroll_fit;
}

typedef struct Fixture {
    Task task;
    DeviceInfo dev;
    StrategyContext ctx;
    double best; /* max of synth_gflops over the space */
    int n_valid;
} Fixture;

/* plan 0: the full space (125440 configs); small != 0: a tiny one for exhaustion. */
static void Fixture_init(Fixture *f, bool small, int plan_size) {
    memset(f, 0, sizeof *f);
    char err[TT_ERRLEN];
    Space *s = &f->task.space;
    Space_init(s);
    static const int64_t unroll[] = {0, 1, 2, 3}, vec[] = {1, 2, 4, 8, 16};
    bool ok = Space_addSplit(s, "tile_x", small ? 16 : 64, 3, SPLIT_FACTORS, 0, err) == TT_OK &&
              Space_addSplit(s, "tile_y", small ? 16 : 64, 3, SPLIT_FACTORS, 0, err) == TT_OK &&
              Space_addSplit(s, "tile_k", small ? 2 : 128, 2, SPLIT_FACTORS, 0, err) == TT_OK &&
              Space_addOption(s, "unroll", unroll, small ? 1 : 4, err) == TT_OK &&
              Space_addOption(s, "vec", vec, small ? 2 : 5, err) == TT_OK;
    CHECK(ok);
    f->task.tmpl = &TEST_TMPL;
    snprintf(f->task.key, sizeof f->task.key, "synthetic");
    f->ctx.task = &f->task;
    f->ctx.dev = &f->dev;
    f->ctx.plan_size = plan_size;
    for (uint64_t i = 0; i < s->total; i++) {
        double g = synth_gflops(s, i);
        if (g > f->best) f->best = g;
        if (Strategy_valid(&f->ctx, i)) f->n_valid++;
    }
}

static void Fixture_done(Fixture *f) { Space_done(&f->task.space); }

/* ---- cost model ------------------------------------------------------------------ */

TEST(rank_correlation_basics) {
    double a[] = {1, 2, 3, 4, 5}, b[] = {10, 20, 30, 40, 50}, r[] = {5, 4, 3, 2, 1}, t[] = {1, 1, 2, 2, 3};
    CHECK_NEAR(rank_correlation(a, b, 5), 1.0, 1e-12);
    CHECK_NEAR(rank_correlation(a, r, 5), -1.0, 1e-12);
    double c = rank_correlation(a, t, 5);
    CHECK(c > 0.9 && c < 1.0); /* ties share ranks */
    CHECK_NEAR(rank_correlation(a, (double[]){7, 7, 7, 7, 7}, 5), 0.0, 1e-12);
    CHECK_NEAR(rank_correlation(a, b, 1), 0.0, 1e-12);
}

/* Features of n random valid configs and their normalised labels. */
static void sample_rows(Fixture *f, Rng *rng, int n, float *x, float *y, int nf, uint64_t *idx) {
    for (int i = 0; i < n; i++) {
        uint64_t k;
        do
            k = Rng_below(rng, f->task.space.total);
        while (!Strategy_valid(&f->ctx, k));
        idx[i] = k;
        CHECK_EQ_INT(Strategy_features(&f->ctx, k, x + (size_t)i * nf, nf), nf);
        y[i] = (float)(synth_gflops(&f->task.space, k) / f->best);
    }
}

static void model_ranks_heldout(CostLoss loss) {
    Fixture f;
    Fixture_init(&f, false, 64);
    float probe[64];
    int nf = Strategy_features(&f.ctx, 0, probe, 64);
    CHECK(nf == Space_featureCount(&f.task.space) + 1);
    enum { NTRAIN = 500, NTEST = 500 };
    float *x = malloc(sizeof(float) * nf * (NTRAIN + NTEST)), *y = malloc(sizeof(float) * (NTRAIN + NTEST));
    uint64_t idx[NTRAIN + NTEST];
    Rng rng;
    Rng_seed(&rng, 42);
    sample_rows(&f, &rng, NTRAIN + NTEST, x, y, nf, idx);
    CostModelParams p;
    CostModelParams_defaults(&p);
    p.loss = loss;
    char err[TT_ERRLEN] = "";
    CostModel *m = CostModel_train(&p, x, y, NTRAIN, nf, NULL, 0, err);
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "train: %s\n", err);
        goto out;
    }
    CHECK_EQ_INT(CostModel_trainedOn(m), NTRAIN);
    float pred[NTEST];
    CHECK(CostModel_predict(m, x + (size_t)NTRAIN * nf, NTEST, pred, err) == TT_OK);
    double a[NTEST], b[NTEST];
    for (int i = 0; i < NTEST; i++) {
        a[i] = pred[i];
        b[i] = y[NTRAIN + i];
    }
    double corr = rank_correlation(a, b, NTEST);
    printf("  %s loss: held-out rank correlation %.3f (trained in %.3f s)\n", CostLoss_name(loss), corr,
           CostModel_trainSeconds(m));
    CHECK(corr > 0.8);
    CostModel_delete(m);
out:
    free(x);
    free(y);
    Fixture_done(&f);
}

TEST(model_rank_loss_ranks_heldout) { model_ranks_heldout(COST_LOSS_RANK); }
TEST(model_reg_loss_ranks_heldout) { model_ranks_heldout(COST_LOSS_REG); }

TEST(model_rejects_too_little_data) {
    char err[TT_ERRLEN] = "";
    CostModelParams p;
    CostModelParams_defaults(&p);
    float x[2] = {1, 2}, y[1] = {1};
    CHECK(CostModel_train(&p, x, y, 1, 2, NULL, 0, err) == NULL);
    CHECK_CONTAINS(err, "at least 2 points");
    CostLoss l;
    CHECK(CostLoss_parse("reg", &l, err) == TT_OK && l == COST_LOSS_REG);
    CHECK(CostLoss_parse("rnak", &l, err) == TT_ERR);
    CHECK_CONTAINS(err, "rnak");
}

/* ---- annealer --------------------------------------------------------------------- */

static Status exact_score(void *ctx, const uint64_t *index, int n, float *out, char *err) {
    Fixture *f = ctx;
    for (int i = 0; i < n; i++)
        out[i] = Strategy_valid(&f->ctx, index[i]) ? (float)(synth_gflops(&f->task.space, index[i]) / f->best)
                                                   : ANNEAL_INVALID;
    return TT_OK;
}

TEST(anneal_finds_top_configs_and_respects_exclusions) {
    Fixture f;
    Fixture_init(&f, false, 64);
    AnnealParams ap;
    AnnealParams_defaults(&ap);
    Annealer a;
    Annealer_init(&a, &f.task.space, &ap, 7);
    VisitedSet ex;
    VisitedSet_init(&ex);
    /* exclude the global optimum and 1000 random configs */
    uint64_t best_idx = 0;
    for (uint64_t i = 0; i < f.task.space.total; i++)
        if (synth_gflops(&f.task.space, i) == f.best) best_idx = i;
    VisitedSet_add(&ex, best_idx);
    Rng rng;
    Rng_seed(&rng, 3);
    for (int i = 0; i < 1000; i++)
        VisitedSet_add(&ex, Rng_below(&rng, f.task.space.total));
    uint64_t out[64];
    float sc[64];
    int n = 0;
    char err[TT_ERRLEN];
    double t0 = clock_mono();
    CHECK(Annealer_run(&a, exact_score, &f, &ex, 64, out, sc, &n, err) == TT_OK);
    double dt = clock_mono() - t0;
    CHECK_EQ_INT(n, 64);
    printf("  anneal: %d steps in %.3f s, best %.3f, 64th %.3f of the optimum\n", a.last_steps, dt, sc[0], sc[n - 1]);
    CHECK(sc[0] >= 0.95);
    for (int i = 0; i < n; i++) {
        CHECK(!VisitedSet_has(&ex, out[i]));
        CHECK(Strategy_valid(&f.ctx, out[i]));
        if (i) CHECK(sc[i] <= sc[i - 1]);
        for (int j = 0; j < i; j++)
            CHECK(out[i] != out[j]);
    }
    VisitedSet_done(&ex);
    Annealer_done(&a);
    Fixture_done(&f);
}

/* ---- the strategy --------------------------------------------------------------------- */

typedef struct RunStats {
    int trials_to_95; /* proposals until a config >= 95% of the optimum was measured (-1: never) */
    double best;
} RunStats;

/* Drives a strategy like the engine does: propose a batch, measure (the
 * synthetic objective), update. Checks every proposal on the way. */
static RunStats drive(Fixture *f, const Strategy *st, void *self, VisitedSet *visited, int budget, int batch) {
    RunStats r = {-1, 0};
    uint64_t idx[64];
    double g[64];
    int trials = 0;
    while (trials < budget) {
        int want = budget - trials < batch ? budget - trials : batch;
        int got = st->propose(self, visited, idx, want);
        if (got == 0) break;
        for (int i = 0; i < got; i++) {
            CHECK(Strategy_valid(&f->ctx, idx[i]));
            CHECK(VisitedSet_has(visited, idx[i]));
            g[i] = synth_gflops(&f->task.space, idx[i]);
            trials++;
            if (g[i] > r.best) r.best = g[i];
            if (r.trials_to_95 < 0 && g[i] >= 0.95 * f->best) r.trials_to_95 = trials;
        }
        st->update(self, idx, g, got);
    }
    return r;
}

static int random_trials_to_95(Fixture *f, uint64_t seed, int budget) {
    Rng rng;
    Rng_seed(&rng, seed);
    VisitedSet v;
    VisitedSet_init(&v);
    int trials = 0, hit = -1;
    while (trials < budget && hit < 0) {
        uint64_t k = Rng_below(&rng, f->task.space.total);
        if (!Strategy_valid(&f->ctx, k) || !VisitedSet_add(&v, k)) continue;
        trials++;
        if (synth_gflops(&f->task.space, k) >= 0.95 * f->best) hit = trials;
    }
    VisitedSet_done(&v);
    return hit < 0 ? budget + 1 : hit;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

TEST(xgb_beats_random_to_95_percent) {
    Fixture f;
    Fixture_init(&f, false, 64);
    enum { SEEDS = 3, BUDGET = 1500 };
    int xt[SEEDS], rt[SEEDS];
    for (int s = 0; s < SEEDS; s++) {
        char err[TT_ERRLEN] = "";
        void *self = strategy_xgb.create(&f.ctx, 100 + s, err);
        CHECK(self != NULL);
        if (!self) {
            fprintf(stderr, "create: %s\n", err);
            break;
        }
        VisitedSet v;
        VisitedSet_init(&v);
        RunStats r = drive(&f, &strategy_xgb, self, &v, BUDGET, 64);
        xt[s] = r.trials_to_95 < 0 ? BUDGET + 1 : r.trials_to_95;
        rt[s] = random_trials_to_95(&f, 100 + s, 20000);
        char line[256];
        strategy_xgb.status(self, line, sizeof line);
        printf("  seed %d: xgb reached 95%% in %d trials, random in %d; %s\n", s, xt[s], rt[s], line);
        CHECK_CONTAINS(line, "model: fitted on");
        CHECK_CONTAINS(line, "rank corr");
        VisitedSet_done(&v);
        strategy_xgb.destroy(self);
    }
    qsort(xt, SEEDS, sizeof(int), cmp_int);
    qsort(rt, SEEDS, sizeof(int), cmp_int);
    printf("  median trials to 95%%: xgb %d, random %d\n", xt[SEEDS / 2], rt[SEEDS / 2]);
    CHECK(xt[SEEDS / 2] <= BUDGET);
    CHECK(xt[SEEDS / 2] < rt[SEEDS / 2]);
    Fixture_done(&f);
}

TEST(xgb_never_proposes_visited_or_invalid) {
    Fixture f;
    Fixture_init(&f, false, 32);
    char err[TT_ERRLEN] = "";
    void *self = strategy_xgb.create(&f.ctx, 5, err);
    CHECK(self != NULL);
    if (!self) return;
    VisitedSet v, pre;
    VisitedSet_init(&v);
    VisitedSet_init(&pre);
    Rng rng;
    Rng_seed(&rng, 11);
    for (int i = 0; i < 3000; i++) {
        uint64_t k = Rng_below(&rng, f.task.space.total);
        VisitedSet_add(&v, k);
        VisitedSet_add(&pre, k);
    }
    VisitedSet seen;
    VisitedSet_init(&seen);
    uint64_t idx[32];
    double g[32];
    for (int round = 0; round < 30; round++) {
        int got = strategy_xgb.propose(self, &v, idx, 32);
        CHECK_EQ_INT(got, 32);
        for (int i = 0; i < got; i++) {
            CHECK(!VisitedSet_has(&pre, idx[i]));
            CHECK(VisitedSet_add(&seen, idx[i])); /* never twice */
            CHECK(Strategy_valid(&f.ctx, idx[i]));
            g[i] = synth_gflops(&f.task.space, idx[i]);
        }
        strategy_xgb.update(self, idx, g, got);
    }
    VisitedSet_done(&seen);
    VisitedSet_done(&pre);
    VisitedSet_done(&v);
    strategy_xgb.destroy(self);
    Fixture_done(&f);
}

TEST(xgb_exhausts_a_small_space_exactly_once) {
    Fixture f;
    Fixture_init(&f, true, 16);
    CHECK(f.n_valid > 0 && (uint64_t)f.n_valid < f.task.space.total); /* some configs invalid */
    char err[TT_ERRLEN] = "";
    void *self = strategy_xgb.create(&f.ctx, 9, err);
    CHECK(self != NULL);
    if (!self) return;
    VisitedSet v, seen;
    VisitedSet_init(&v);
    VisitedSet_init(&seen);
    uint64_t idx[16];
    double g[16];
    int total = 0;
    for (int round = 0; round < 1000; round++) {
        int got = strategy_xgb.propose(self, &v, idx, 16);
        if (got == 0) break;
        for (int i = 0; i < got; i++) {
            CHECK(VisitedSet_add(&seen, idx[i]));
            CHECK(Strategy_valid(&f.ctx, idx[i]));
            g[i] = synth_gflops(&f.task.space, idx[i]);
        }
        total += got;
        strategy_xgb.update(self, idx, g, got);
    }
    printf("  small space: %llu configs, %d valid, %d proposed\n", (unsigned long long)f.task.space.total, f.n_valid,
           total);
    CHECK_EQ_INT(total, f.n_valid);
    CHECK_EQ_INT(strategy_xgb.propose(self, &v, idx, 16), 0);
    VisitedSet_done(&seen);
    VisitedSet_done(&v);
    strategy_xgb.destroy(self);
    Fixture_done(&f);
}

/* Mean synthetic score of the first plan, cold or after 200 replayed results. */
static double first_plan_mean(Fixture *f, uint64_t seed, bool warm) {
    char err[TT_ERRLEN] = "";
    void *self = strategy_xgb.create(&f->ctx, seed, err);
    CHECK(self != NULL);
    if (!self) return 0;
    VisitedSet v;
    VisitedSet_init(&v);
    if (warm) {
        /* a log replay: 200 random measured configs (invalid ones included, as failures) */
        Rng rng;
        Rng_seed(&rng, seed * 31 + 1);
        uint64_t idx[200];
        double g[200];
        for (int i = 0; i < 200; i++) {
            do
                idx[i] = Rng_below(&rng, f->task.space.total);
            while (!VisitedSet_add(&v, idx[i]));
            g[i] = synth_gflops(&f->task.space, idx[i]);
        }
        strategy_xgb.update(self, idx, g, 200);
    }
    uint64_t out[64];
    int got = strategy_xgb.propose(self, &v, out, 64);
    CHECK_EQ_INT(got, 64);
    double sum = 0;
    for (int i = 0; i < got; i++)
        sum += synth_gflops(&f->task.space, out[i]);
    VisitedSet_done(&v);
    strategy_xgb.destroy(self);
    return got ? sum / got / f->best : 0;
}

TEST(xgb_warm_start_proposes_a_better_first_plan) {
    Fixture f;
    Fixture_init(&f, false, 64);
    enum { SEEDS = 5 };
    int better = 0;
    double cold_sum = 0, warm_sum = 0;
    for (int s = 0; s < SEEDS; s++) {
        double cold = first_plan_mean(&f, 200 + s, false), warm = first_plan_mean(&f, 200 + s, true);
        printf("  seed %d: first plan mean %.3f cold, %.3f warm (of the optimum)\n", s, cold, warm);
        cold_sum += cold;
        warm_sum += warm;
        if (warm > cold) better++;
    }
    CHECK(warm_sum > cold_sum * 1.5);
    CHECK(better >= SEEDS - 1);
    Fixture_done(&f);
}

static bool status_has(void *self, const char *what) {
    char line[256];
    strategy_xgb.status(self, line, sizeof line);
    return strstr(line, what) != NULL;
}

/* A gate the refit thread stops at (through xgb_fit_hook) until the test opens it. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int entered, open;
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static void gate_hold(void) {
    pthread_mutex_lock(&gate.lock);
    gate.entered++;
    pthread_cond_broadcast(&gate.cond);
    while (!gate.open)
        pthread_cond_wait(&gate.cond, &gate.lock);
    pthread_mutex_unlock(&gate.lock);
}

static void gate_open(void) {
    pthread_mutex_lock(&gate.lock);
    gate.open = 1;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
}

/* If propose waited for the refit, it would wait forever on the closed gate:
 * this watchdog opens it after a minute so the test fails instead of hanging. */
static void *gate_watchdog(void *arg) {
    (void)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&gate.lock);
    while (!gate.open)
        if (pthread_cond_timedwait(&gate.cond, &gate.lock, &until) != 0) break;
    int opened_here = !gate.open;
    gate.open = 1;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
    return (void *)(intptr_t)opened_here;
}

TEST(xgb_propose_does_not_wait_for_a_refit) {
    Fixture f;
    Fixture_init(&f, false, 64);
    char err[TT_ERRLEN] = "";
    void *self = strategy_xgb.create(&f.ctx, 77, err);
    CHECK(self != NULL);
    if (!self) return;
    VisitedSet v;
    VisitedSet_init(&v);
    enum { BIG = 3000 };
    uint64_t *idx = malloc(sizeof(uint64_t) * BIG);
    double *g = malloc(sizeof(double) * BIG);
    Rng rng;
    Rng_seed(&rng, 5);
    for (int i = 0; i < BIG; i++) {
        do
            idx[i] = Rng_below(&rng, f.task.space.total);
        while (!VisitedSet_add(&v, idx[i]));
        g[i] = synth_gflops(&f.task.space, idx[i]);
    }
    strategy_xgb.update(self, idx, g, 100);
    uint64_t out[64];
    CHECK_EQ_INT(strategy_xgb.propose(self, &v, out, 64), 64); /* first model: synchronous, on 100 points */
    CHECK(status_has(self, "fitted on 100 points"));
    /* the background refit on BIG points is held at the gate until the test opens it */
    xgb_fit_hook = gate_hold;
    pthread_t dog;
    CHECK(pthread_create(&dog, NULL, gate_watchdog, NULL) == 0);
    strategy_xgb.update(self, idx + 100, g + 100, BIG - 100); /* starts the background refit */
    pthread_mutex_lock(&gate.lock);
    while (!gate.entered && !gate.open)
        pthread_cond_wait(&gate.cond, &gate.lock);
    pthread_mutex_unlock(&gate.lock);
    int got = strategy_xgb.propose(self, &v, out, 64); /* a new plan: anneals with the old model */
    bool in_flight = status_has(self, "refitting");
    bool still_fitted_on_100 = status_has(self, "fitted on 100 points");
    pthread_mutex_lock(&gate.lock);
    bool gate_closed = !gate.open;
    pthread_mutex_unlock(&gate.lock);
    gate_open();
    void *dog_opened;
    pthread_join(dog, &dog_opened);
    xgb_fit_hook = NULL;
    /* propose returned while the refit was held: it planned with the old model */
    CHECK_EQ_INT(got, 64);
    CHECK(gate_closed);
    CHECK(dog_opened == NULL);
    CHECK(in_flight);
    CHECK(still_fitted_on_100);
    /* once the refit may run, its model replaces the old one (the wait is a bound, not a check of time) */
    double t1 = clock_mono();
    while (status_has(self, "refitting") && clock_mono() - t1 < 120)
        usleep(2000);
    char line[256];
    strategy_xgb.status(self, line, sizeof line);
    printf("  %s\n", line);
    CHECK_CONTAINS(line, "fitted on 3000 points");
    free(idx);
    free(g);
    VisitedSet_done(&v);
    strategy_xgb.destroy(self);
    Fixture_done(&f);
}

/* The results g of the 64 configs in out reach the strategy, it proposes
 * the next 64 (into out), the refit the results started finishes; line
 * receives the status after it. */
static void measure_then_refit(void *self, VisitedSet *v, uint64_t *out, const double *g, char *line, size_t n) {
    strategy_xgb.update(self, out, g, 64);
    CHECK_EQ_INT(strategy_xgb.propose(self, v, out, 64), 64);
    double t0 = clock_mono();
    while (status_has(self, "refitting") && clock_mono() - t0 < 30)
        usleep(2000);
    strategy_xgb.status(self, line, n);
    printf("  %s\n", line);
}

TEST(xgb_transfer_trains_the_first_model) {
    /* Records of two other tasks with the same template seed the first plan;
     * two sources make the rank loss train on groups (pairs within a task). */
    Fixture f, other[2];
    Fixture_init(&f, false, 64);
    Fixture_init(&other[0], false, 64);
    Fixture_init(&other[1], false, 64);
    enum { NX = 300 };
    uint64_t xi[NX];
    double xg[NX];
    const Task *xt[NX];
    Rng rng;
    Rng_seed(&rng, 17);
    for (int i = 0; i < NX; i++) {
        Fixture *o = &other[i % 2];
        xi[i] = Rng_below(&rng, o->task.space.total);
        /* other scales: labels are normalised per source task */
        xg[i] = (i % 2 ? 3 : 0.5) * synth_gflops(&o->task.space, xi[i]);
        xt[i] = &o->task;
    }
    f.ctx.n_transfer = NX;
    f.ctx.transfer_index = xi;
    f.ctx.transfer_gflops = xg;
    f.ctx.transfer_task = xt;
    char err[TT_ERRLEN] = "";
    void *self = strategy_xgb.create(&f.ctx, 3, err);
    CHECK(self != NULL);
    if (!self) return;
    VisitedSet v;
    VisitedSet_init(&v);
    uint64_t out[64];
    double g[64];
    CHECK_EQ_INT(strategy_xgb.propose(self, &v, out, 64), 64);
    double sum = 0;
    for (int i = 0; i < 64; i++) {
        g[i] = synth_gflops(&f.task.space, out[i]);
        sum += g[i] / f.best;
    }
    char line[256];
    strategy_xgb.status(self, line, sizeof line);
    printf("  transfer: first plan mean %.3f of the optimum; %s\n", sum / 64, line);
    CHECK_CONTAINS(line, "300 of other tasks");
    /* with its own results too: three groups */
    measure_then_refit(self, &v, out, g, line, sizeof line);
    CHECK_CONTAINS(line, "fitted on 364 points");
    CHECK(strstr(line, "failed") == NULL);
    f.ctx.n_transfer = 0;
    double cold = first_plan_mean(&f, 3, false);
    CHECK(sum / 64 > 1.5 * cold);
    VisitedSet_done(&v);
    strategy_xgb.destroy(self);
    Fixture_done(&other[1]);
    Fixture_done(&other[0]);
    Fixture_done(&f);
}

TEST(xgb_learns_from_the_sessions_other_tasks) {
    /* The engine reports other tasks' results through learn_other, after
     * create and before this task's first plan (a network session): the
     * first plan is then planned by a model, not drawn at random. */
    Fixture f, other;
    Fixture_init(&f, false, 64);
    Fixture_init(&other, false, 64);
    char err[TT_ERRLEN] = "";
    void *self = strategy_xgb.create(&f.ctx, 5, err);
    CHECK(self != NULL);
    if (!self) return;
    char line[256];
    enum { NO = 160 };
    uint64_t oi[NO];
    double og[NO];
    Rng rng;
    Rng_seed(&rng, 23);
    for (int i = 0; i < NO; i++) {
        oi[i] = Rng_below(&rng, other.task.space.total);
        og[i] = 7 * synth_gflops(&other.task.space, oi[i]);
    }
    /* its own task and foreign indices are ignored */
    strategy_xgb.learn_other(self, &f.task, oi, og, NO);
    uint64_t bad = other.task.space.total + 3;
    strategy_xgb.learn_other(self, &other.task, &bad, og, 1);
    strategy_xgb.status(self, line, sizeof line);
    CHECK_CONTAINS(line, "model: none yet");
    strategy_xgb.learn_other(self, &other.task, oi, og, NO / 2);
    strategy_xgb.learn_other(self, &other.task, oi + NO / 2, og + NO / 2, NO / 2);
    VisitedSet v;
    VisitedSet_init(&v);
    uint64_t out[64];
    CHECK_EQ_INT(strategy_xgb.propose(self, &v, out, 64), 64);
    double sum = 0;
    for (int i = 0; i < 64; i++)
        sum += synth_gflops(&f.task.space, out[i]) / f.best;
    strategy_xgb.status(self, line, sizeof line);
    printf("  peers: first plan mean %.3f of the optimum; %s\n", sum / 64, line);
    CHECK_CONTAINS(line, "fitted on 160 points (160 of other tasks)");
    double cold = first_plan_mean(&f, 5, false);
    CHECK(sum / 64 > 1.5 * cold);
    /* a big network: fits use an even thinning of the other tasks' rows */
    enum { BIG = 20000 };
    uint64_t *bi = malloc(sizeof(uint64_t) * BIG);
    double *bg = malloc(sizeof(double) * BIG);
    for (int i = 0; i < BIG; i++) {
        bi[i] = Rng_below(&rng, other.task.space.total);
        bg[i] = synth_gflops(&other.task.space, bi[i]);
    }
    strategy_xgb.learn_other(self, &other.task, bi, bg, BIG);
    double g[64];
    for (int i = 0; i < 64; i++)
        g[i] = synth_gflops(&f.task.space, out[i]);
    measure_then_refit(self, &v, out, g, line, sizeof line);
    /* 20160 rows, every third: 6720 */
    CHECK_CONTAINS(line, "fitted on 6784 points (6720 of other tasks)");
    free(bi);
    free(bg);
    VisitedSet_done(&v);
    strategy_xgb.destroy(self);
    Fixture_done(&other);
    Fixture_done(&f);
}

TEST(xgb_ignores_indices_outside_the_space) {
    Fixture f;
    Fixture_init(&f, false, 64);
    char err[TT_ERRLEN] = "";
    void *self = strategy_xgb.create(&f.ctx, 8, err);
    CHECK(self != NULL);
    if (!self) return;
    VisitedSet v;
    VisitedSet_init(&v);
    uint64_t idx[101];
    double g[101];
    for (int i = 0; i < 100; i++) {
        idx[i] = (uint64_t)i * 997;
        g[i] = synth_gflops(&f.task.space, idx[i]);
        VisitedSet_add(&v, idx[i]);
    }
    idx[100] = f.task.space.total + 3; /* e.g. a log written for another space */
    g[100] = 1e6;
    strategy_xgb.update(self, idx, g, 101);
    uint64_t out[64];
    CHECK_EQ_INT(strategy_xgb.propose(self, &v, out, 64), 64);
    CHECK(status_has(self, "fitted on 100 points"));
    for (int i = 0; i < 64; i++)
        CHECK(out[i] < f.task.space.total);
    VisitedSet_done(&v);
    strategy_xgb.destroy(self);
    Fixture_done(&f);
}

/* Without XGBoost the strategy must refuse to start, saying why. */
TEST(xgb_refuses_without_xgboost) {
    Fixture f;
    Fixture_init(&f, true, 16);
    char err[TT_ERRLEN] = "";
    CHECK(strategy_xgb.create(&f.ctx, 1, err) == NULL);
    CHECK_CONTAINS(err, "XGBoost");
    Fixture_done(&f);
}

int main(void) {
    char err[TT_ERRLEN] = "";
    if (!CostModel_available(err)) {
        /* the two tests that need no model, then a skip (or a failure under TUNETOP_REQUIRE=xgboost) */
        RUN(rank_correlation_basics);
        RUN(xgb_refuses_without_xgboost);
        return check_skip("xgboost", err);
    }
    RUN(rank_correlation_basics);
    RUN(model_rank_loss_ranks_heldout);
    RUN(model_reg_loss_ranks_heldout);
    RUN(model_rejects_too_little_data);
    RUN(anneal_finds_top_configs_and_respects_exclusions);
    RUN(xgb_never_proposes_visited_or_invalid);
    RUN(xgb_exhausts_a_small_space_exactly_once);
    RUN(xgb_warm_start_proposes_a_better_first_plan);
    RUN(xgb_transfer_trains_the_first_model);
    RUN(xgb_learns_from_the_sessions_other_tasks);
    RUN(xgb_ignores_indices_outside_the_space);
    RUN(xgb_propose_does_not_wait_for_a_refit);
    RUN(xgb_beats_random_to_95_percent);
    return check_summary();
}
