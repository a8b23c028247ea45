/* tuner/search/strategy_evolution.c: evolutionary search over annotated sketches,
 * the strategy of te.sketch tasks (tensor expressions; Template.strategy).
 *
 * A candidate is a sketch (kernels/templates/te/te_sketch.h) and an annotation
 * of it; its steps go into the task's schedule table (te_task.h), whose index
 * (a hash of the steps) is what the engine measures and records. A round:
 *   1. first of all, the zero-trial default of every sketch (a heuristic
 *      annotation), so a task starts from it;
 *   2. a population of `population` candidates: the best measured ones (up to
 *      a fifth of it) and random annotations of the sketches;
 *   3. `generations` times: score the population, and build the next one from
 *      parents drawn in proportion to their score: with probability
 *      `mutation` a mutated copy (tile size, parallel granularity, unroll,
 *      vectorize, compute location), else a crossover of two parents of the
 *      same sketch (each stage's annotation from one of them);
 *   4. measure the n best-scored candidates not measured yet, except that a
 *      share `eps` of them are fresh random annotations (epsilon-greedy).
 *      A candidate whose loop nest (hence its C code) equals one proposed
 *      before under other steps is passed over.
 * Scores come from the learned cost model (tuner/search/te_model.h: XGBoost on
 * program features, pack-sum loss), one model shared by every sketch-searched
 * task of the process, fed with every measured schedule and refit before a
 * round when it has new results. Until it has been fit (two measured
 * schedules), or when XGBoost is not built in, a candidate scores the
 * throughput its nearest measured ancestor measured (fresh random annotations
 * score 0): a local search around the best schedules measured so far.
 *
 * On resume the engine replays the measured records through update(); their
 * schedules are in the task's table again (Template.adopt), and the ones an
 * annotation of a sketch reproduces (Sketch_recover) join the parents. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_sketch.h"
#include "kernels/templates/te/te_task.h"
#include "tuner/search/strategy.h"
#include "tuner/search/te_model.h"

/* The cost model every evolution strategy of the process shares (engine thread only). */
static TeModel *g_model;
static int g_model_users, g_model_dirty;
static char g_model_why[TT_ERRLEN];

static TeModel *model_acquire(void) {
    if (!g_model) {
        g_model = TeModel_new(NULL, g_model_why);
        g_model_dirty = 0;
    }
    if (g_model) g_model_users++;
    return g_model;
}

static void model_release(void) {
    if (--g_model_users == 0) {
        TeModel_delete(g_model);
        g_model = NULL;
    }
}

/* Warm start: the reference it holds on the model, the programs it added. */
static int g_warm_held, g_warm_added;

Status Evolution_warmStart(const char *path, const TeDag *const *dags, int n_dags, int *added, char *err) {
    *added = 0;
    if (!g_warm_held) {
        if (!model_acquire()) return tt_fail(err, "%s", g_model_why);
        g_warm_held = 1;
    }
    Status st = TeModel_addLog(g_model, path, dags, n_dags, added, err);
    g_warm_added += *added;
    if (*added) g_model_dirty = 1;
    return st;
}

int Evolution_warmPrograms(void) { return g_warm_added; }

void Evolution_warmEnd(void) {
    if (g_warm_held) model_release();
    g_warm_held = 0;
    g_warm_added = 0;
}

typedef struct Cand {
    int sketch;
    SketchAnn *ann; /* n_stages */
    double score;
} Cand;

typedef struct Measured {
    uint64_t index;
    int sketch;     /* -1: its annotation is not known (a schedule this search cannot rebuild) */
    SketchAnn *ann; /* NULL when sketch < 0 */
    double gflops;  /* -1 until its result arrives */
} Measured;

typedef struct Evo {
    StrategyContext ctx;
    const TeTask *te;
    const TeDag *dag;
    int n_st;
    Sketch sk[SKETCH_MAX];
    int n_sk;
    Rng rng;
    EvolutionOptions opt;
    Measured *m;
    int n_m, cap_m;
    uint64_t *nests; /* open addressing: hashes of the loop nests proposed (0: empty slot) */
    int n_nests, cap_nests;
    int defaults_done; /* the zero-trial defaults of sketches 0.. this - 1 were proposed */
    int generation;    /* rounds of evolution so far */
    TeModel *model;    /* shared; NULL without XGBoost */
    char model_note[96];
} Evo;

static SketchAnn *ann_new(const Evo *e) { return tt_calloc((size_t)e->n_st, sizeof(SketchAnn)); }

static SketchAnn *ann_dup(const Evo *e, const SketchAnn *a) {
    SketchAnn *b = ann_new(e);
    memcpy(b, a, (size_t)e->n_st * sizeof *a);
    return b;
}

static Measured *measured_find(Evo *e, uint64_t index) {
    for (int i = e->n_m - 1; i >= 0; i--)
        if (e->m[i].index == index) return &e->m[i];
    return NULL;
}

static Measured *measured_add(Evo *e, uint64_t index, int sketch, SketchAnn *ann) {
    if (e->n_m == e->cap_m) {
        e->cap_m = e->cap_m ? 2 * e->cap_m : 64;
        e->m = tt_realloc(e->m, (size_t)e->cap_m * sizeof *e->m);
    }
    Measured *m = &e->m[e->n_m++];
    *m = (Measured){.index = index, .sketch = sketch, .ann = ann, .gflops = -1};
    return m;
}

static void *evo_create(const StrategyContext *ctx, uint64_t seed, char *err) {
    const Task *t = ctx->task;
    if (t->wl.op != OP_EXPR || !t->wl.expr || !t->tmpl->adopt)
        return tt_fail(err, "the evolution tuner searches schedules of tensor expressions (tune --expr FILE.te)"), NULL;
    Evo *e = tt_calloc(1, sizeof *e);
    e->ctx = *ctx;
    e->te = t->wl.expr;
    e->dag = &e->te->dag;
    e->n_st = e->dag->n_stages;
    e->opt = ctx->evolution;
    if (e->opt.population < 2) e->opt = EvolutionOptions_default();
    int cores = ctx->dev->cores > 0 ? ctx->dev->cores : 1; /* those the kernel runs on: --threads caps them */
    if (ctx->threads > 0 && ctx->threads < cores) cores = ctx->threads;
    e->n_sk = Sketch_generate(e->dag, t->tmpl->family == FAMILY_GPU, cores, e->sk);
    for (int i = 0; i < e->n_sk; i++) /* the register tile's cap follows the machine's vector registers */
        e->sk[i].vector = ctx->dev->vector_floats;
    Rng_seed(&e->rng, seed);
    e->model = e->opt.cost_model ? model_acquire() : NULL; /* NULL: the measured-ancestor scores */
    return e;
}

/* Registers a candidate's steps in the task's table; its index, or UINT64_MAX
 * when it is measured already (or its hash is taken by other steps). */
static uint64_t register_cand(Evo *e, VisitedSet *visited, int sketch, const SketchAnn *ann) {
    Steps steps;
    Sketch_steps(&e->sk[sketch], e->dag, ann, &steps);
    uint64_t index;
    char err[TT_ERRLEN];
    if (TeTask_addSchedule(e->te, &steps, sketch, &index, err) != TT_OK) return UINT64_MAX;
    if (VisitedSet_has(visited, index)) return UINT64_MAX;
    return index;
}

/* Whether the loop nest of these steps (what the C code is made of) was
 * proposed before, under other steps (a tile of 1, an unroll limit that
 * changes nothing, ...); records it otherwise. */
static bool nest_seen(Evo *e, const Steps *steps) {
    LoopNest ln;
    char err[TT_ERRLEN];
    if (LoopNest_lower(&ln, e->dag, steps, err) != TT_OK) return false; /* the build reports it */
    StrBuf text;
    StrBuf_init(&text);
    LoopNest_print(&ln, &text);
    LoopNest_done(&ln);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < text.len; i++)
        h = (h ^ (unsigned char)text.data[i]) * 1099511628211ULL;
    StrBuf_done(&text);
    if (h == 0) h = 1;
    if (2 * (e->n_nests + 1) > e->cap_nests) { /* grow, rehash */
        int cap = e->cap_nests ? 2 * e->cap_nests : 256;
        uint64_t *t = tt_calloc((size_t)cap, sizeof *t);
        for (int i = 0; i < e->cap_nests; i++)
            if (e->nests[i])
                for (size_t j = e->nests[i] % (uint64_t)cap;; j = (j + 1) % (size_t)cap)
                    if (!t[j]) {
                        t[j] = e->nests[i];
                        break;
                    }
        free(e->nests);
        e->nests = t;
        e->cap_nests = cap;
    }
    for (size_t j = h % (uint64_t)e->cap_nests;; j = (j + 1) % (size_t)e->cap_nests) {
        if (e->nests[j] == h) return true;
        if (!e->nests[j]) {
            e->nests[j] = h;
            e->n_nests++;
            return false;
        }
    }
}

static int take(Evo *e, VisitedSet *visited, int sketch, const SketchAnn *ann, uint64_t *out) {
    uint64_t index = register_cand(e, visited, sketch, ann);
    if (index == UINT64_MAX) return 0;
    Steps steps;
    Sketch_steps(&e->sk[sketch], e->dag, ann, &steps);
    if (nest_seen(e, &steps)) return 0; /* the same code as a candidate already proposed */
    VisitedSet_add(visited, index);
    measured_add(e, index, sketch, ann_dup(e, ann));
    *out = index;
    return 1;
}

static void random_cand(Evo *e, Cand *c) {
    c->sketch = (int)Rng_below(&e->rng, (uint64_t)e->n_sk);
    if (!c->ann) c->ann = ann_new(e);
    Sketch_annotate(&e->sk[c->sketch], e->dag, &e->rng, c->ann);
    c->score = 0;
}

/* Scores with the model once it is trained, else leaves the inherited scores. */
#define SCORE_CHUNK 256
static void score(Evo *e, Cand *pop, int n) {
    if (!e->model || !TeModel_trained(e->model)) return;
    Steps *steps = tt_malloc(SCORE_CHUNK * sizeof *steps);
    float out[SCORE_CHUNK];
    for (int at = 0; at < n; at += SCORE_CHUNK) {
        int k = n - at < SCORE_CHUNK ? n - at : SCORE_CHUNK;
        for (int i = 0; i < k; i++)
            Sketch_steps(&e->sk[pop[at + i].sketch], e->dag, pop[at + i].ann, &steps[i]);
        char err[TT_ERRLEN];
        if (TeModel_predict(e->model, e->dag, steps, k, out, err) != TT_OK) break; /* keep the inherited scores */
        for (int i = 0; i < k; i++)
            pop[at + i].score = out[i];
    }
    free(steps);
}

/* A parent drawn in proportion to its score above the population's lowest
 * (uniformly when they all score the same). */
static int pick(Evo *e, const Cand *pop, int n, double lo, double total) {
    if (!(total > 0)) return (int)Rng_below(&e->rng, (uint64_t)n);
    double r = Rng_uniform(&e->rng) * total;
    for (int i = 0; i < n; i++) {
        double w = isfinite(pop[i].score) ? pop[i].score - lo : 0;
        if (r < w) return i;
        r -= w;
    }
    return n - 1;
}

static int by_score_desc(const void *a, const void *b) {
    double x = ((const Cand *)a)->score, y = ((const Cand *)b)->score;
    return (x < y) - (x > y);
}

static int measured_by_gflops_desc(const void *a, const void *b) {
    double x = (*(const Measured *const *)a)->gflops, y = (*(const Measured *const *)b)->gflops;
    return (x < y) - (x > y);
}

static void evolve(Evo *e, Cand *pop, Cand *next, int n) {
    double lo = INFINITY, total = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(pop[i].score) && pop[i].score < lo) lo = pop[i].score;
    for (int i = 0; i < n; i++)
        if (isfinite(pop[i].score)) total += pop[i].score - lo;
    for (int i = 0; i < n; i++) {
        const Cand *p = &pop[pick(e, pop, n, lo, total)];
        Cand *c = &next[i];
        c->sketch = p->sketch;
        memcpy(c->ann, p->ann, (size_t)e->n_st * sizeof *c->ann);
        c->score = p->score;
        if (Rng_uniform(&e->rng) < e->opt.mutation) {
            Sketch_mutate(&e->sk[c->sketch], e->dag, &e->rng, c->ann);
        } else {
            /* crossover: each stage's annotation from either parent of the same sketch */
            const Cand *q = &pop[pick(e, pop, n, lo, total)];
            if (q->sketch != c->sketch) continue;
            for (int k = 0; k < e->n_st; k++)
                if (Rng_below(&e->rng, 2)) c->ann[k] = q->ann[k];
            c->score = (p->score + q->score) / 2;
        }
    }
}

static int evo_propose(void *self, VisitedSet *visited, uint64_t *out, int n) {
    Evo *e = self;
    int got = 0;
    /* 1. the zero-trial default of every sketch */
    if (e->defaults_done < e->n_sk) { /* (over as many rounds as the engine's first batches need) */
        SketchAnn *a = ann_new(e);
        for (; e->defaults_done < e->n_sk && got < n; e->defaults_done++) {
            Sketch_heuristic(&e->sk[e->defaults_done], e->dag, e->ctx.dev->vector_floats, a);
            got += take(e, visited, e->defaults_done, a, out + got);
        }
        free(a);
        if (got) return got;
    }
    if (e->model && g_model_dirty) { /* new results since the last fit */
        char err[TT_ERRLEN] = "";
        g_model_dirty = 0;
        if (TeModel_programs(e->model) >= 2 && TeModel_fit(e->model, err) != TT_OK)
            snprintf(e->model_note, sizeof e->model_note, "cost model: %.80s", err);
    }
    /* 2. the first population: the best measured (a fifth at most), then random annotations */
    int np = e->opt.population;
    Cand *pop = tt_calloc((size_t)np, sizeof *pop), *next = tt_calloc((size_t)np, sizeof *next);
    for (int i = 0; i < np; i++) {
        pop[i].ann = ann_new(e);
        next[i].ann = ann_new(e);
    }
    Measured **best = tt_calloc((size_t)(e->n_m ? e->n_m : 1), sizeof *best);
    int nb = 0;
    for (int i = 0; i < e->n_m; i++)
        if (e->m[i].sketch >= 0 && e->m[i].gflops > 0) best[nb++] = &e->m[i];
    qsort(best, (size_t)nb, sizeof *best, measured_by_gflops_desc);
    if (nb > np / 5) nb = np / 5;
    for (int i = 0; i < np; i++) {
        if (i < nb) {
            pop[i].sketch = best[i]->sketch;
            memcpy(pop[i].ann, best[i]->ann, (size_t)e->n_st * sizeof *pop[i].ann);
            pop[i].score = best[i]->gflops;
        } else {
            random_cand(e, &pop[i]);
        }
    }
    free(best);
    /* 3. generations */
    score(e, pop, np);
    for (int g = 0; g < e->opt.generations; g++) {
        evolve(e, pop, next, np);
        Cand *t = pop;
        pop = next;
        next = t;
        score(e, pop, np);
    }
    /* 4. the best-scored unmeasured ones, and a share eps of fresh random ones */
    qsort(pop, (size_t)np, sizeof *pop, by_score_desc);
    int n_random = (int)floor(e->opt.eps * n + Rng_uniform(&e->rng)); /* eps * n on average */
    for (int i = 0; i < np && got < n - n_random; i++)
        got += take(e, visited, pop[i].sketch, pop[i].ann, out + got);
    Cand c = {0};
    for (int tries = 0; got < n && tries < 64 * n; tries++) {
        random_cand(e, &c);
        got += take(e, visited, c.sketch, c.ann, out + got);
    }
    free(c.ann);
    for (int i = 0; i < np; i++) {
        free(pop[i].ann);
        free(next[i].ann);
    }
    free(pop);
    free(next);
    e->generation++;
    return got;
}

/* Results, and on resume the measured records: a schedule this strategy did
 * not propose in this session is read back from the table and recovered as
 * an annotation of one of the sketches when one reproduces it. */
static void evo_update(void *self, const uint64_t *index, const double *gflops, int n) {
    Evo *e = self;
    Steps *steps = e->model ? tt_malloc((size_t)(n ? n : 1) * sizeof *steps) : NULL;
    double *g = e->model ? tt_malloc((size_t)(n ? n : 1) * sizeof *g) : NULL;
    int k = 0;
    for (int i = 0; i < n; i++) {
        Measured *m = measured_find(e, index[i]);
        Steps one;
        int sketch = -1;
        bool known = TeTask_schedule(e->te, index[i], &one, &sketch);
        if (!m) {
            SketchAnn *a = ann_new(e);
            int found = -1;
            for (int s = 0; known && s < e->n_sk && found < 0; s++) {
                int try = sketch >= 0 && sketch < e->n_sk ? (s == 0 ? sketch : s == sketch ? 0 : s) : s;
                if (Sketch_recover(&e->sk[try], e->dag, &one, a)) found = try;
            }
            if (found < 0) {
                free(a);
                a = NULL;
            }
            m = measured_add(e, index[i], found, a);
            e->defaults_done = e->n_sk; /* a resumed task has had its defaults measured */
        }
        m->gflops = gflops[i];
        if (e->model && known) {
            steps[k] = one;
            g[k++] = gflops[i];
        }
    }
    char err[TT_ERRLEN];
    int added = 0;
    if (k && TeModel_add(e->model, e->dag, steps, g, k, &added, err) == TT_OK && added) g_model_dirty = 1;
    free(steps);
    free(g);
}

static bool evo_status(void *self, char *buf, size_t n) {
    Evo *e = self;
    int len = snprintf(buf, n, "evolution: sketches %d, generation %d, %d schedules measured", e->n_sk, e->generation,
                       e->n_m);
    if (len < 0 || (size_t)len >= n) return true;
    if (e->model_note[0])
        snprintf(buf + len, n - (size_t)len, "; %s", e->model_note);
    else if (!e->model && !e->opt.cost_model)
        snprintf(buf + len, n - (size_t)len, "; cost model off: ranked by measured ancestors");
    else if (!e->model)
        snprintf(buf + len, n - (size_t)len, "; no cost model (%.60s): ranked by measured ancestors", g_model_why);
    else if (!TeModel_trained(e->model))
        snprintf(buf + len, n - (size_t)len, "; cost model not fit yet: ranked by measured ancestors");
    else {
        TeModelTimes t = TeModel_times(e->model);
        len += snprintf(buf + len, n - (size_t)len, "; cost model on %d schedules (fit %.2f s, %d scored in %.2f s)",
                        TeModel_trainedOn(e->model), t.fit_s, t.since_fit_programs, t.since_fit_s);
        if (g_warm_added && len > 0 && (size_t)len < n) /* the fit counts them (the most recent ones at its cap) */
            len += snprintf(buf + len, n - (size_t)len, "; warm start: %d schedules of other tasks", g_warm_added);
        TeModelQuality q;
        if (len > 0 && (size_t)len < n && TeModel_quality(e->model, e->dag->key, &q)) {
            len += snprintf(buf + len, n - (size_t)len, "; best %.1f GFLOPS, predicted %.1f", q.best_gflops,
                            q.best_predicted);
            if (len > 0 && (size_t)len < n && q.round_n >= 2)
                snprintf(buf + len, n - (size_t)len, "; last round rank correlation %.2f over %d", q.round_rho,
                         q.round_n);
        }
    }
    return true;
}

static void evo_destroy(void *self) {
    Evo *e = self;
    for (int i = 0; i < e->n_m; i++)
        free(e->m[i].ann);
    free(e->m);
    free(e->nests);
    if (e->model) model_release();
    free(e);
}

const Strategy strategy_evolution = {
    .name = "evolution",
    .create = evo_create,
    .propose = evo_propose,
    .update = evo_update,
    .status = evo_status,
    .destroy = evo_destroy,
};
