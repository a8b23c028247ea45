/* tuner/search/strategy_xgb.c: model-based search.
 *
 * A cost model (gradient-boosted trees, tuner/search/costmodel.h) learns from every
 * measured config of the task; simulated annealing (tuner/search/anneal.h) over the
 * space, scored by the model, picks the next plan: the top-scoring unvisited
 * configs (picked for diversity from twice as many candidates), with the
 * last 5% random. The first plan is random unless the model already has
 * data: a log replayed on resume, results of the session's other tasks of
 * the same template (learn_other), or --transfer records.
 *
 * Threads: everything runs on the engine thread except refits, which a
 * private background thread does on a snapshot of the data, at a low
 * priority, so measurement does not wait for training: propose() plans with
 * the current model, and a newer model replaces it when it is ready. Two
 * bounded exceptions: the very first model is trained synchronously (there
 * is nothing to plan with before it, and it is bounded: at most about
 * MAX_OTHER_ROWS rows of other tasks plus the replayed log), and a new plan waits
 * for an in-flight refit at most 1% of the wall time the previous plan took
 * (GRACE_FRACTION), so that when training is fast next to measurement each
 * plan uses the freshest model rather than one a plan old.
 *
 * The loss is "rank" unless the environment variable TUNETOP_XGB_LOSS says
 * "reg" (StrategyContext has no option slot for it).
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/rng.h"
#include "tuner/search/anneal.h"
#include "tuner/search/costmodel.h"
#include "tuner/search/strategy.h"

#define MAX_FEATURES 256
#define CACHE_SLOTS 16384 /* feature cache entries (direct-mapped) */
#define RANDOM_TRIES 64   /* rejection draws per wanted random config before the exhaustive fallback */
#define MIN_CORR_POINTS 8 /* measured plan entries needed to report a rank correlation */
#define TRAIN_NICE 10     /* the refit thread yields to measurement and compilation */
/* A new plan may wait for an in-flight refit up to this fraction of the wall
 * time the previous plan took (its measurement), capped: training then costs
 * at most 1% of throughput, and when it is fast next to measurement (the
 * usual case) every plan uses the freshest model instead of one plan behind. */
#define GRACE_FRACTION 0.01
#define GRACE_MAX_S 2.0
/* A plan is picked from this many times as many annealing candidates, for diversity (pick_diverse). */
#define CANDIDATE_FACTOR 2
/* At most about this many rows of other tasks go into a fit. */
#define MAX_OTHER_ROWS 8192
/* What a knob value no earlier pick of the plan has is worth, against the
 * candidate's rank among the candidates (0..1). */
#define DIVERSITY_WEIGHT 0.25

/* A training snapshot handed to the background thread (owned by whoever holds it). */
typedef struct FitJob {
    float *x, *y;
    unsigned *groups;
    int n, nf, n_groups;
    int n_other; /* rows of other tasks among the n */
} FitJob;

static void FitJob_free(FitJob *job) {
    if (!job) return;
    free(job->x);
    free(job->y);
    free(job->groups);
    free(job);
}

typedef struct XgbTuner {
    StrategyContext ctx;
    const Space *space;
    int nf; /* features per config */
    CostModelParams params;
    Rng rng;
    Annealer annealer;
    bool annealer_placed;

    /* this task's measured data (engine thread) */
    int n_data, cap_data;
    uint64_t *data_index;
    double *data_gflops;
    float *data_x;
    double best_gflops;

    /* Rows of other tasks of the template (--transfer records, and results
     * the session's other tasks report through learn_other): features in their
     * own task's space, raw GFLOPS, source; labels are normalised per source
     * when a fit is made, and each source is its own rank group. */
    int n_xfer, cap_xfer;
    float *xfer_x;
    double *xfer_g;
    int *xfer_src;
    int n_src, cap_src;
    const Task **src_task;
    double *src_best;

    /* model (engine thread only) */
    CostModel *model;
    int launched_at; /* n_data when the last fit was started */

    /* background refit */
    pthread_t thread;
    bool have_thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool quit, busy;  /* under lock */
    FitJob *job;      /* next job, under lock */
    CostModel *ready; /* finished model not yet taken, under lock */
    int ready_other;  /* its rows of other tasks, under lock */
    int model_other;  /* rows of other tasks the current model was fitted on */
    char fit_err[TT_ERRLEN];
    int fits, failed_fits;
    char last_err[TT_ERRLEN];

    /* the plan being proposed */
    int plan_cap, plan_n, plan_pos;
    uint64_t *plan;
    float *plan_pred; /* model score of each entry (NAN when planned without a model) */
    uint64_t *cand;   /* annealing candidates, CANDIDATE_FACTOR x plan_cap, best first */
    float *cand_score;
    bool *plan_marked; /* already in visited (exhaustive fallback) */

    /* rank correlation on the last plan: predicted vs measured of proposed entries */
    int eval_n, eval_measured;
    uint64_t *eval_idx;
    double *eval_pred, *eval_meas;
    bool *eval_done;
    double last_corr;
    int last_corr_n;

    /* feature cache: index -> validity + features */
    uint64_t *cache_key; /* UINT64_MAX = empty */
    unsigned char *cache_ok;
    float *cache_x;

    /* scratch for scoring */
    int scratch_cap;
    float *scratch_x, *scratch_out;
    int *scratch_row;
    double anneal_s;
    double last_build; /* clock_mono at the last plan build (0 = none yet) */
    double waited_s;   /* total grace waits */
} XgbTuner;

/* ---- features -------------------------------------------------------------- */

static uint64_t mix64(uint64_t x) {
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    return x ^ (x >> 33);
}

/* Features and validity of a config of this task, through the cache. Returns
 * a pointer to nf floats (valid until the next call) and sets *valid. */
static const float *features_of(XgbTuner *this, uint64_t index, bool *valid) {
    uint64_t slot = mix64(index) & (CACHE_SLOTS - 1);
    float *row = this->cache_x + slot * (uint64_t)this->nf;
    if (this->cache_key[slot] != index) {
        float tmp[MAX_FEATURES];
        int got = Strategy_features(&this->ctx, index, tmp, MAX_FEATURES);
        memset(row, 0, sizeof(float) * (size_t)this->nf);
        memcpy(row, tmp, sizeof(float) * (size_t)(got < this->nf ? got : this->nf));
        this->cache_ok[slot] = Strategy_valid(&this->ctx, index);
        this->cache_key[slot] = index;
    }
    *valid = this->cache_ok[slot];
    return row;
}

static void ensure_scratch(XgbTuner *this, int n) {
    if (n <= this->scratch_cap) return;
    this->scratch_cap = n;
    this->scratch_x = realloc(this->scratch_x, sizeof(float) * (size_t)n * (size_t)this->nf);
    this->scratch_out = realloc(this->scratch_out, sizeof(float) * (size_t)n);
    this->scratch_row = realloc(this->scratch_row, sizeof(int) * (size_t)n);
    if (!this->scratch_x || !this->scratch_out || !this->scratch_row) abort();
}

/* AnnealScoreFn: one batched prediction for all valid configs of the step. */
static Status score_configs(void *self, const uint64_t *index, int n, float *out, char *err) {
    XgbTuner *this = self;
    ensure_scratch(this, n);
    int m = 0;
    for (int i = 0; i < n; i++) {
        bool valid;
        const float *f = features_of(this, index[i], &valid);
        if (!valid) {
            out[i] = ANNEAL_INVALID;
            continue;
        }
        memcpy(this->scratch_x + (size_t)m * (size_t)this->nf, f, sizeof(float) * (size_t)this->nf);
        this->scratch_row[m++] = i;
    }
    if (m == 0) return TT_OK;
    if (CostModel_predict(this->model, this->scratch_x, m, this->scratch_out, err) != TT_OK) return TT_ERR;
    for (int j = 0; j < m; j++)
        out[this->scratch_row[j]] = this->scratch_out[j];
    return TT_OK;
}

/* ---- training data ------------------------------------------------------------ */

/* A snapshot of everything to train on: the other tasks' rows, one group per
 * source task, then this task's rows as one group; labels = GFLOPS / best of
 * the row's own task (failed = 0). A source none of whose configs ran is left out. */
static FitJob *make_job(XgbTuner *this) {
    int n = this->n_xfer + this->n_data;
    FitJob *job = calloc(1, sizeof *job);
    if (!job) abort();
    job->nf = this->nf;
    job->x = malloc(sizeof(float) * (size_t)(n ? n : 1) * (size_t)this->nf);
    job->y = malloc(sizeof(float) * (size_t)(n ? n : 1));
    job->groups = malloc(sizeof(unsigned) * (size_t)(this->n_src + 1));
    if (!job->x || !job->y || !job->groups) abort();
    size_t row = sizeof(float) * (size_t)this->nf;
    /* a large network's records are thinned evenly: the fit stays fast */
    int stride = (this->n_xfer + MAX_OTHER_ROWS - 1) / MAX_OTHER_ROWS;
    if (stride < 1) stride = 1;
    int k = 0;
    for (int src = 0; src < this->n_src; src++) {
        double best = this->src_best[src];
        if (best <= 0) continue;
        int start = k;
        for (int i = 0, seen = 0; i < this->n_xfer; i++) {
            if (this->xfer_src[i] != src || seen++ % stride) continue;
            memcpy(job->x + (size_t)k * (size_t)this->nf, this->xfer_x + (size_t)i * (size_t)this->nf, row);
            job->y[k++] = (float)(this->xfer_g[i] / best);
        }
        job->groups[job->n_groups++] = (unsigned)(k - start);
    }
    job->n_other = k;
    if (this->n_data) {
        memcpy(job->x + (size_t)k * (size_t)this->nf, this->data_x, row * (size_t)this->n_data);
        for (int i = 0; i < this->n_data; i++)
            job->y[k + i] = this->best_gflops > 0 ? (float)(this->data_gflops[i] / this->best_gflops) : 0;
        k += this->n_data;
        job->groups[job->n_groups++] = (unsigned)this->n_data;
    }
    job->n = k;
    return job;
}

/* Two rows of other tasks a fit would use (their task has a config that ran). */
static bool others_trainable(const XgbTuner *this) {
    for (int i = 0, n = 0; i < this->n_xfer; i++)
        if (this->src_best[this->xfer_src[i]] > 0 && ++n >= 2) return true;
    return false;
}

/* Training makes sense once some config has run (labels not all zero). */
static bool can_train(const XgbTuner *this) {
    return (this->n_data >= 2 && this->best_gflops > 0) || others_trainable(this);
}

static CostModel *train_job(const CostModelParams *params, const FitJob *job, char *err) {
    /* Groups only matter to the rank loss (pairs never cross tasks); one group = none. */
    bool grouped = params->loss == COST_LOSS_RANK && job->n_groups > 1;
    return CostModel_train(params, job->x, job->y, job->n, job->nf, grouped ? job->groups : NULL,
                           grouped ? job->n_groups : 0, err);
}

/* ---- background refit -------------------------------------------------------- */

/* Test hook: when set, the refit thread calls it after taking a job and before
 * training, so a test can hold a refit in flight on purpose (tests/unit/test_xgb.c). */
void (*xgb_fit_hook)(void);

static void *fit_main(void *arg) {
    XgbTuner *this = arg;
    /* Lower priority: on the cpu target this thread competes with the kernels being timed. */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), TRAIN_NICE);
    pthread_mutex_lock(&this->lock);
    for (;;) {
        while (!this->quit && !this->job)
            pthread_cond_wait(&this->cond, &this->lock);
        if (this->quit) break;
        FitJob *job = this->job;
        this->job = NULL;
        this->busy = true;
        CostModelParams params = this->params;
        pthread_mutex_unlock(&this->lock);
        if (xgb_fit_hook) xgb_fit_hook();

        char err[TT_ERRLEN] = "";
        CostModel *m = train_job(&params, job, err);
        int n_other = job->n_other;
        FitJob_free(job);

        pthread_mutex_lock(&this->lock);
        this->busy = false;
        if (m) {
            /* a model still waiting is older than this one */
            CostModel_delete(this->ready);
            this->ready = m;
            this->ready_other = n_other;
        } else {
            snprintf(this->fit_err, sizeof this->fit_err, "%s", err);
        }
        pthread_cond_broadcast(&this->cond);
    }
    pthread_mutex_unlock(&this->lock);
    return NULL;
}

static bool start_thread(XgbTuner *this) {
    if (this->have_thread) return true;
    /* The thread inherits a fully blocked mask: signals go to the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&this->thread, NULL, fit_main, this);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    this->have_thread = rc == 0;
    return this->have_thread;
}

/* Takes a finished background model if it is newer than the current one. */
static void take_ready(XgbTuner *this) {
    if (!this->have_thread) return;
    pthread_mutex_lock(&this->lock);
    CostModel *m = this->ready;
    int n_other = this->ready_other;
    this->ready = NULL;
    if (this->fit_err[0]) {
        this->failed_fits++;
        snprintf(this->last_err, sizeof this->last_err, "%s", this->fit_err);
        this->fit_err[0] = '\0';
    }
    pthread_mutex_unlock(&this->lock);
    if (!m) return;
    if (this->model && CostModel_trainedOn(this->model) >= CostModel_trainedOn(m)) {
        CostModel_delete(m);
        return;
    }
    CostModel_delete(this->model);
    this->model = m;
    this->model_other = n_other;
    this->fits++;
}

static bool fit_in_flight(XgbTuner *this) {
    if (!this->have_thread) return false;
    pthread_mutex_lock(&this->lock);
    bool busy = this->busy || this->job;
    pthread_mutex_unlock(&this->lock);
    return busy;
}

/* Waits up to `grace` seconds for the queued or running refit to finish. */
static void wait_for_fit(XgbTuner *this, double grace) {
    if (!this->have_thread || grace <= 0) return;
    double t0 = clock_mono();
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double end = (double)until.tv_sec + until.tv_nsec * 1e-9 + grace;
    until.tv_sec = (time_t)end;
    until.tv_nsec = (long)((end - (double)until.tv_sec) * 1e9);
    pthread_mutex_lock(&this->lock);
    while ((this->busy || this->job) && !this->quit)
        if (pthread_cond_timedwait(&this->cond, &this->lock, &until) != 0) break;
    pthread_mutex_unlock(&this->lock);
    this->waited_s += clock_mono() - t0;
}

/* Trains on the current data here, on the engine thread: the first model
 * (there is nothing to plan with before it), or every model when no thread
 * could be started. */
static void fit_now(XgbTuner *this) {
    char err[TT_ERRLEN];
    FitJob *job = make_job(this);
    CostModel *m = train_job(&this->params, job, err);
    int n_other = job->n_other;
    FitJob_free(job);
    this->launched_at = this->n_data;
    if (!m) {
        this->failed_fits++;
        snprintf(this->last_err, sizeof this->last_err, "%s", err);
        return;
    }
    CostModel_delete(this->model);
    this->model = m;
    this->model_other = n_other;
    this->fits++;
}

/* Queues a refit on the current data (a queued, not yet started job is replaced). */
static void launch_fit(XgbTuner *this) {
    if (!can_train(this)) return;
    if (!start_thread(this)) {
        fit_now(this); /* no thread: fit here rather than never */
        return;
    }
    FitJob *job = make_job(this);
    pthread_mutex_lock(&this->lock);
    FitJob_free(this->job);
    this->job = job;
    pthread_cond_signal(&this->cond);
    pthread_mutex_unlock(&this->lock);
    this->launched_at = this->n_data;
}

/* ---- rank correlation of the last plan --------------------------------------- */

static void finish_eval(XgbTuner *this) {
    if (this->eval_measured >= MIN_CORR_POINTS) {
        double *p = malloc(sizeof(double) * (size_t)this->eval_measured);
        double *m = malloc(sizeof(double) * (size_t)this->eval_measured);
        if (!p || !m) abort();
        int k = 0;
        for (int i = 0; i < this->eval_n; i++) {
            if (!this->eval_done[i]) continue;
            p[k] = this->eval_pred[i];
            m[k++] = this->eval_meas[i];
        }
        this->last_corr = rank_correlation(p, m, k);
        this->last_corr_n = k;
        free(p);
        free(m);
    }
    this->eval_n = this->eval_measured = 0;
}

/* ---- planning ----------------------------------------------------------------- */

static bool in_plan(const XgbTuner *this, uint64_t index) {
    for (int i = 0; i < this->plan_n; i++)
        if (this->plan[i] == index) return true;
    return false;
}

static void plan_push(XgbTuner *this, uint64_t index, bool marked) {
    this->plan[this->plan_n] = index;
    this->plan_pred[this->plan_n] = NAN;
    this->plan_marked[this->plan_n++] = marked;
}

/* Appends up to `want` random valid unvisited configs to the plan. */
static void add_random(XgbTuner *this, VisitedSet *visited, int want) {
    uint64_t total = this->space->total;
    int target = this->plan_n + want;
    if (target > this->plan_cap) target = this->plan_cap;
    /* Rejection draws: cheap while the space is far from exhausted. When the
     * plan would stay empty keep drawing longer: an empty plan means "done". */
    long tries = (long)RANDOM_TRIES * want;
    for (long t = 0; this->plan_n < target; t++) {
        if (t >= tries && (this->plan_n > 0 || t >= 100000)) break;
        uint64_t idx = Rng_below(&this->rng, total);
        if (VisitedSet_has(visited, idx) || in_plan(this, idx)) continue;
        bool valid;
        features_of(this, idx, &valid);
        if (valid) plan_push(this, idx, false);
    }
    if (this->plan_n >= target || this->plan_n > 0) return;
    /* Nearly exhausted or nearly all invalid: walk what is left. Invalid
     * configs drawn here stay marked visited: they can never be measured. */
    uint64_t buf[64];
    while (this->plan_n < target) {
        int ask = target - this->plan_n;
        if (ask > 64) ask = 64;
        int got = Space_sampleUnvisited(this->space, visited, &this->rng, buf, ask);
        if (got == 0) break;
        for (int i = 0; i < got; i++) {
            bool valid;
            features_of(this, buf[i], &valid);
            if (valid) plan_push(this, buf[i], true);
        }
    }
}

static int cmp_gflops_desc(const void *a, const void *b, void *arg) {
    const double *g = arg;
    double x = g[*(const int *)a], y = g[*(const int *)b];
    return x > y ? -1 : x < y ? 1 : 0;
}

/* First annealing with a model: start half the chains at the best measured
 * configs (a warm start begins where the log left off), the rest at random
 * valid configs. */
static void place_chains(XgbTuner *this, VisitedSet *visited) {
    int nc = this->annealer.params.n_chains;
    uint64_t *pts = malloc(sizeof(uint64_t) * (size_t)nc);
    int *order = malloc(sizeof(int) * (size_t)(this->n_data ? this->n_data : 1));
    if (!pts || !order) abort();
    int k = 0;
    for (int i = 0; i < this->n_data; i++)
        order[i] = i;
    qsort_r(order, (size_t)this->n_data, sizeof(int), cmp_gflops_desc, this->data_gflops);
    for (int i = 0; i < this->n_data && k < nc / 2; i++) {
        if (this->data_gflops[order[i]] <= 0) break;
        pts[k++] = this->data_index[order[i]];
    }
    for (int tries = 0; k < nc && tries < 64 * nc; tries++) {
        uint64_t idx = Rng_below(&this->rng, this->space->total);
        bool valid;
        features_of(this, idx, &valid);
        if (valid) pts[k++] = idx;
    }
    Annealer_setPoints(&this->annealer, pts, k);
    this->annealer_placed = true;
    free(pts);
    free(order);
}

/* Picks `want` of the n annealing candidates (best first) into the plan,
 * greedily: each pick maximises its rank among the candidates (1 for the
 * best, 0 for the worst) plus DIVERSITY_WEIGHT for every knob whose value no
 * pick so far has. Without it a plan spends itself on variants of the one
 * or two configs the young model likes best (the knobs that barely matter
 * change, the ones that do stay put); with it the plan still follows the
 * model but covers more of what the model has not seen measured. */
static void pick_diverse(XgbTuner *this, const uint64_t *cand, const float *score, int n, int want) {
    const Space *sp = this->space;
    int nk = sp->n_knobs;
    int32_t *choice = malloc(sizeof(int32_t) * (size_t)(n ? n : 1) * (size_t)(nk ? nk : 1));
    bool *taken = calloc((size_t)(n ? n : 1), sizeof(bool));
    int *picked = malloc(sizeof(int) * (size_t)(want ? want : 1));
    if (!choice || !taken || !picked) abort();
    for (int i = 0; i < n; i++)
        Space_decode(sp, cand[i], choice + (size_t)i * (size_t)nk);
    int n_picked = 0;
    while (n_picked < want && n_picked < n) {
        int best = -1;
        double best_gain = -1;
        for (int i = 0; i < n; i++) {
            if (taken[i]) continue;
            double gain = n > 1 ? 1.0 - (double)i / (double)(n - 1) : 1.0;
            const int32_t *c = choice + (size_t)i * (size_t)nk;
            for (int k = 0; k < nk; k++) {
                bool seen = false;
                for (int j = 0; j < n_picked && !seen; j++)
                    seen = choice[(size_t)picked[j] * (size_t)nk + k] == c[k];
                if (!seen) gain += DIVERSITY_WEIGHT;
            }
            if (gain > best_gain) {
                best_gain = gain;
                best = i;
            }
        }
        taken[best] = true;
        picked[n_picked++] = best;
        this->plan[this->plan_n] = cand[best];
        this->plan_pred[this->plan_n] = score[best];
        this->plan_marked[this->plan_n++] = false;
    }
    free(choice);
    free(taken);
    free(picked);
}

/* Builds the next plan; false when nothing is left to propose. */
static bool build_plan(XgbTuner *this, VisitedSet *visited) {
    double now = clock_mono();
    if (this->last_build > 0 && fit_in_flight(this)) {
        double grace = GRACE_FRACTION * (now - this->last_build);
        wait_for_fit(this, grace < GRACE_MAX_S ? grace : GRACE_MAX_S);
    }
    this->last_build = clock_mono();
    take_ready(this);
    if (!this->model && can_train(this)) fit_now(this);
    finish_eval(this);
    this->plan_n = this->plan_pos = 0;

    int size = this->plan_cap;
    int n_random = size;
    if (this->model) {
        n_random = (int)lround(size * 0.05);
        if (n_random < 1 && size > 1) n_random = 1;
        if (!this->annealer_placed) place_chains(this, visited);
        char err[TT_ERRLEN];
        int got = 0;
        double t0 = clock_mono();
        int want = size - n_random;
        if (Annealer_run(&this->annealer, score_configs, this, visited, CANDIDATE_FACTOR * want, this->cand,
                         this->cand_score, &got, err) != TT_OK) {
            this->failed_fits++;
            snprintf(this->last_err, sizeof this->last_err, "%s", err);
            got = 0;
        }
        pick_diverse(this, this->cand, this->cand_score, got, want);
        this->anneal_s = clock_mono() - t0;
    }
    int first_random = this->plan_n;
    add_random(this, visited, size - this->plan_n);
    if (this->model && this->plan_n > first_random) {
        /* Score the random tail too, so the rank correlation covers the whole plan. */
        char err[TT_ERRLEN];
        int m = this->plan_n - first_random;
        float *s = malloc(sizeof(float) * (size_t)m);
        if (!s) abort();
        if (score_configs(this, this->plan + first_random, m, s, err) == TT_OK)
            memcpy(this->plan_pred + first_random, s, sizeof(float) * (size_t)m);
        free(s);
    }
    return this->plan_n > 0;
}

/* ---- the Strategy interface --------------------------------------------------- */

static int xgb_propose(void *self, VisitedSet *visited, uint64_t *out, int n) {
    XgbTuner *this = self;
    int count = 0, empty_builds = 0;
    while (count < n) {
        if (this->plan_pos >= this->plan_n && !build_plan(this, visited)) break;
        int i = this->plan_pos++;
        uint64_t idx = this->plan[i];
        if (!this->plan_marked[i] && !VisitedSet_add(visited, idx)) {
            /* planned, then visited by someone else: skip; never loop forever */
            if (this->plan_pos >= this->plan_n && ++empty_builds > 4) break;
            continue;
        }
        out[count++] = idx;
        if (!isnan(this->plan_pred[i]) && this->eval_n < this->plan_cap) {
            this->eval_idx[this->eval_n] = idx;
            this->eval_pred[this->eval_n] = this->plan_pred[i];
            this->eval_done[this->eval_n++] = false;
        }
    }
    return count;
}

static void xgb_update(void *self, const uint64_t *index, const double *gflops, int n) {
    XgbTuner *this = self;
    if (this->n_data + n > this->cap_data) {
        int cap = this->cap_data ? this->cap_data : 256;
        while (cap < this->n_data + n)
            cap *= 2;
        this->data_index = realloc(this->data_index, sizeof(uint64_t) * (size_t)cap);
        this->data_gflops = realloc(this->data_gflops, sizeof(double) * (size_t)cap);
        this->data_x = realloc(this->data_x, sizeof(float) * (size_t)cap * (size_t)this->nf);
        if (!this->data_index || !this->data_gflops || !this->data_x) abort();
        this->cap_data = cap;
    }
    for (int i = 0; i < n; i++) {
        if (index[i] >= this->space->total) continue; /* not a config of this space (a foreign log) */
        double g = gflops[i] > 0 && isfinite(gflops[i]) ? gflops[i] : 0;
        bool valid;
        const float *f = features_of(this, index[i], &valid);
        memcpy(this->data_x + (size_t)this->n_data * (size_t)this->nf, f, sizeof(float) * (size_t)this->nf);
        this->data_index[this->n_data] = index[i];
        this->data_gflops[this->n_data++] = g;
        if (g > this->best_gflops) this->best_gflops = g;
        for (int e = 0; e < this->eval_n; e++) {
            if (this->eval_idx[e] != index[i] || this->eval_done[e]) continue;
            this->eval_meas[e] = g;
            this->eval_done[e] = true;
            this->eval_measured++;
            break;
        }
    }
    if (this->eval_n > 0 && this->eval_measured == this->eval_n && this->plan_pos >= this->plan_n) finish_eval(this);
    take_ready(this);
    /* Refit every plan. Before the first model, the first plan will fit synchronously. */
    if (this->model && this->n_data - this->launched_at >= this->plan_cap) launch_fit(this);
}

static bool xgb_status(void *self, char *buf, size_t n) {
    XgbTuner *this = self;
    take_ready(this);
    int len;
    if (!this->model) {
        if (this->n_data == 0)
            len = snprintf(buf, n, "model: none yet, first plan random");
        else
            len = snprintf(buf, n, "model: fits on its %d points before the next plan (this plan was random%s)",
                           this->n_data, this->best_gflops <= 0 ? ", none ran" : "");
    } else {
        len = snprintf(buf, n, "model: fitted on %d points", CostModel_trainedOn(this->model));
        if (this->model_other && len >= 0 && (size_t)len < n)
            len += snprintf(buf + len, n - (size_t)len, " (%d of other tasks)", this->model_other);
        if (len >= 0 && (size_t)len < n) {
            if (this->last_corr_n)
                len += snprintf(buf + len, n - (size_t)len, ", rank corr %.2f on last plan", this->last_corr);
            else
                len += snprintf(buf + len, n - (size_t)len, ", no plan measured yet");
        }
        if (fit_in_flight(this) && len >= 0 && (size_t)len < n)
            len += snprintf(buf + len, n - (size_t)len, ", refitting");
    }
    if (this->last_err[0] && len >= 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, "; last fit failed: %s", this->last_err);
    return true;
}

static void xgb_destroy(void *self) {
    XgbTuner *this = self;
    if (!this) return;
    if (this->have_thread) {
        pthread_mutex_lock(&this->lock);
        this->quit = true;
        pthread_cond_broadcast(&this->cond);
        pthread_mutex_unlock(&this->lock);
        pthread_join(this->thread, NULL);
    }
    FitJob_free(this->job);
    CostModel_delete(this->ready);
    CostModel_delete(this->model);
    pthread_mutex_destroy(&this->lock);
    pthread_cond_destroy(&this->cond);
    Annealer_done(&this->annealer);
    free(this->data_index);
    free(this->data_gflops);
    free(this->data_x);
    free(this->xfer_x);
    free(this->xfer_g);
    free(this->xfer_src);
    free(this->src_task);
    free(this->src_best);
    free(this->plan);
    free(this->plan_pred);
    free(this->cand);
    free(this->cand_score);
    free(this->plan_marked);
    free(this->eval_idx);
    free(this->eval_pred);
    free(this->eval_meas);
    free(this->eval_done);
    free(this->cache_key);
    free(this->cache_ok);
    free(this->cache_x);
    free(this->scratch_x);
    free(this->scratch_out);
    free(this->scratch_row);
    free(this);
}

/* Strategy.learn_other: appends results of another task of the template
 * (configs of its own space). Also how --transfer records are loaded. */
static void xgb_learnOther(void *self, const Task *task, const uint64_t *index, const double *gflops, int n) {
    XgbTuner *this = self;
    if (!task || task == this->ctx.task || task->tmpl != this->ctx.task->tmpl) return;
    int src = 0;
    while (src < this->n_src && this->src_task[src] != task)
        src++;
    if (src == this->n_src) {
        if (this->n_src == this->cap_src) {
            this->cap_src = this->cap_src ? 2 * this->cap_src : 8;
            this->src_task = realloc(this->src_task, sizeof(Task *) * (size_t)this->cap_src);
            this->src_best = realloc(this->src_best, sizeof(double) * (size_t)this->cap_src);
            if (!this->src_task || !this->src_best) abort();
        }
        this->src_task[src] = task;
        this->src_best[src] = 0;
        this->n_src++;
    }
    StrategyContext sub = this->ctx;
    sub.task = task;
    for (int i = 0; i < n; i++) {
        if (index[i] >= task->space.total) continue;
        if (this->n_xfer == this->cap_xfer) {
            this->cap_xfer = this->cap_xfer ? 2 * this->cap_xfer : 256;
            this->xfer_x = realloc(this->xfer_x, sizeof(float) * (size_t)this->cap_xfer * (size_t)this->nf);
            this->xfer_g = realloc(this->xfer_g, sizeof(double) * (size_t)this->cap_xfer);
            this->xfer_src = realloc(this->xfer_src, sizeof(int) * (size_t)this->cap_xfer);
            if (!this->xfer_x || !this->xfer_g || !this->xfer_src) abort();
        }
        float tmp[MAX_FEATURES];
        if (Strategy_features(&sub, index[i], tmp, MAX_FEATURES) != this->nf) continue;
        memcpy(this->xfer_x + (size_t)this->n_xfer * (size_t)this->nf, tmp, sizeof(float) * (size_t)this->nf);
        double g = gflops[i] > 0 && isfinite(gflops[i]) ? gflops[i] : 0;
        this->xfer_g[this->n_xfer] = g;
        this->xfer_src[this->n_xfer++] = src;
        if (g > this->src_best[src]) this->src_best[src] = g;
    }
}

static void *xgb_create(const StrategyContext *ctx, uint64_t seed, char *err) {
    if (!CostModel_available(err)) return NULL;
    if (!ctx || !ctx->task) {
        tt_fail(err, "xgb tuner: no task");
        return NULL;
    }
    float probe[MAX_FEATURES];
    int nf = Strategy_features(ctx, 0, probe, MAX_FEATURES);
    if (nf <= 0) {
        tt_fail(err, "xgb tuner: task %s has no cost-model features", ctx->task->key);
        return NULL;
    }
    if (ctx->task->space.total == 0) {
        tt_fail(err, "xgb tuner: task %s has an empty space", ctx->task->key);
        return NULL;
    }
    XgbTuner *this = calloc(1, sizeof *this);
    if (!this) abort();
    this->ctx = *ctx;
    this->space = &ctx->task->space;
    this->nf = nf;
    CostModelParams_defaults(&this->params);
    this->params.seed = seed;
    const char *loss = getenv("TUNETOP_XGB_LOSS");
    if (loss && *loss && CostLoss_parse(loss, &this->params.loss, err) != TT_OK) {
        free(this);
        return NULL;
    }
    /* Mixed so that the random first plan differs from other strategies' with the same seed. */
    Rng_seed(&this->rng, seed * 0xd1342543de82ef95ULL + 0x5851f42d4c957f2dULL);
    AnnealParams ap;
    AnnealParams_defaults(&ap);
    Annealer_init(&this->annealer, this->space, &ap, seed ^ 0x9e3779b97f4a7c15ULL);
    pthread_mutex_init(&this->lock, NULL);
    pthread_cond_init(&this->cond, NULL);

    this->plan_cap = ctx->plan_size > 0 ? ctx->plan_size : 64;
    size_t pc = (size_t)this->plan_cap;
    this->plan = malloc(sizeof(uint64_t) * pc);
    this->plan_pred = malloc(sizeof(float) * pc);
    this->cand = malloc(sizeof(uint64_t) * pc * CANDIDATE_FACTOR);
    this->cand_score = malloc(sizeof(float) * pc * CANDIDATE_FACTOR);
    this->plan_marked = malloc(sizeof(bool) * pc);
    this->eval_idx = malloc(sizeof(uint64_t) * pc);
    this->eval_pred = malloc(sizeof(double) * pc);
    this->eval_meas = malloc(sizeof(double) * pc);
    this->eval_done = malloc(sizeof(bool) * pc);
    this->cache_key = malloc(sizeof(uint64_t) * CACHE_SLOTS);
    this->cache_ok = malloc(CACHE_SLOTS);
    this->cache_x = malloc(sizeof(float) * CACHE_SLOTS * (size_t)nf);
    if (!this->plan || !this->plan_pred || !this->plan_marked || !this->cand || !this->cand_score || !this->eval_idx ||
        !this->eval_pred || !this->eval_meas || !this->eval_done || !this->cache_key || !this->cache_ok ||
        !this->cache_x)
        abort();
    memset(this->cache_key, 0xff, sizeof(uint64_t) * CACHE_SLOTS);
    for (int i = 0; i < ctx->n_transfer && ctx->transfer_index && ctx->transfer_gflops && ctx->transfer_task; i++)
        xgb_learnOther(this, ctx->transfer_task[i], &ctx->transfer_index[i], &ctx->transfer_gflops[i], 1);
    return this;
}

const Strategy strategy_xgb = {
    .name = "xgb",
    .create = xgb_create,
    .propose = xgb_propose,
    .update = xgb_update,
    .learn_other = xgb_learnOther,
    .status = xgb_status,
    .destroy = xgb_destroy,
};
