/* tuner/search/anneal.c: batched simulated annealing with a top-k set. */
#include "tuner/search/anneal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void AnnealParams_defaults(AnnealParams *this) {
    this->n_chains = 128;
    this->max_steps = 500;
    this->early_stop = 50;
    this->temp_start = 1.0;
    this->temp_end = 0.0;
}

void Annealer_init(Annealer *this, const Space *space, const AnnealParams *params, uint64_t seed) {
    memset(this, 0, sizeof *this);
    this->space = space;
    this->params = *params;
    if (this->params.n_chains < 1) this->params.n_chains = 1;
    Rng_seed(&this->rng, seed);
    this->points = calloc((size_t)this->params.n_chains, sizeof(uint64_t));
    this->scores = calloc((size_t)this->params.n_chains, sizeof(float));
    if (!this->points || !this->scores) abort();
}

void Annealer_done(Annealer *this) {
    free(this->points);
    free(this->scores);
    this->points = NULL;
    this->scores = NULL;
}

void Annealer_setPoints(Annealer *this, const uint64_t *points, int n) {
    if (n > this->params.n_chains) n = this->params.n_chains;
    memcpy(this->points, points, sizeof(uint64_t) * (size_t)n);
    if (n > this->n_points) this->n_points = n;
}

/* The top set: a min-heap on score of at most cap distinct configs. k is a
 * plan (64 by default), so membership is a linear scan, done only for a
 * candidate that would enter the heap. */
typedef struct TopSet {
    int n, cap;
    uint64_t *idx;
    float *score;
} TopSet;

static void TopSet_swap(TopSet *t, int a, int b) {
    uint64_t i = t->idx[a];
    float s = t->score[a];
    t->idx[a] = t->idx[b];
    t->score[a] = t->score[b];
    t->idx[b] = i;
    t->score[b] = s;
}

static void TopSet_siftDown(TopSet *t, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < t->n && t->score[l] < t->score[m]) m = l;
        if (r < t->n && t->score[r] < t->score[m]) m = r;
        if (m == i) return;
        TopSet_swap(t, i, m);
        i = m;
    }
}

static bool TopSet_has(const TopSet *t, uint64_t idx) {
    for (int i = 0; i < t->n; i++)
        if (t->idx[i] == idx) return true;
    return false;
}

/* Returns true when the set changed. */
static bool TopSet_offer(TopSet *t, uint64_t idx, float score) {
    if (t->cap <= 0) return false;
    if (t->n == t->cap && score <= t->score[0]) return false;
    if (TopSet_has(t, idx)) return false;
    if (t->n < t->cap) {
        int i = t->n++;
        t->idx[i] = idx;
        t->score[i] = score;
        while (i > 0) {
            int p = (i - 1) / 2;
            if (t->score[p] <= t->score[i]) break;
            TopSet_swap(t, i, p);
            i = p;
        }
    } else {
        t->idx[0] = idx;
        t->score[0] = score;
        TopSet_siftDown(t, 0);
    }
    return true;
}

static bool offer(TopSet *top, const VisitedSet *exclude, uint64_t idx, float score) {
    if (isinf(score) && score < 0) return false;
    if (isnan(score)) return false;
    if (exclude && VisitedSet_has(exclude, idx)) return false;
    return TopSet_offer(top, idx, score);
}

Status Annealer_run(Annealer *this, AnnealScoreFn score, void *ctx, const VisitedSet *exclude, int k, uint64_t *out,
                    float *out_scores, int *n_out, char *err) {
    *n_out = 0;
    this->last_steps = 0;
    int nc = this->params.n_chains;
    uint64_t total = this->space->total;
    if (total == 0 || k <= 0) return TT_OK;
    for (int i = this->n_points; i < nc; i++)
        this->points[i] = Rng_below(&this->rng, total);
    this->n_points = nc;

    TopSet top = {0, k, malloc(sizeof(uint64_t) * (size_t)k), malloc(sizeof(float) * (size_t)k)};
    uint64_t *next = malloc(sizeof(uint64_t) * (size_t)nc);
    float *next_scores = malloc(sizeof(float) * (size_t)nc);
    if (!top.idx || !top.score || !next || !next_scores) abort();
    Status st = TT_OK;

    /* The model changed since the last run: rescore where the chains stand. */
    if (score(ctx, this->points, nc, this->scores, err) != TT_OK) {
        st = TT_ERR;
        goto out;
    }
    for (int i = 0; i < nc; i++)
        offer(&top, exclude, this->points[i], this->scores[i]);

    int max_steps = this->params.max_steps, quiet = 0;
    double t0 = this->params.temp_start, t1 = this->params.temp_end;
    for (int step = 0; step < max_steps; step++) {
        double temp = t0 - (t0 - t1) * (double)step / (double)max_steps;
        for (int i = 0; i < nc; i++)
            next[i] = Space_neighbour(this->space, this->points[i], &this->rng);
        if (score(ctx, next, nc, next_scores, err) != TT_OK) {
            st = TT_ERR;
            goto out;
        }
        bool changed = false;
        for (int i = 0; i < nc; i++) {
            float old = this->scores[i], new = next_scores[i];
            if (offer(&top, exclude, next[i], new)) changed = true;
            bool accept;
            if (isinf(new) && new < 0)
                accept = false; /* never walk onto an invalid config */
            else if (isinf(old) && old < 0)
                accept = true; /* leave an invalid start at once */
            else {
                double d = ((double)new - (double)old) / (temp + 1e-5);
                accept = Rng_uniform(&this->rng) < exp(d < 1 ? d : 1);
            }
            if (accept) {
                this->points[i] = next[i];
                this->scores[i] = new;
            }
        }
        this->last_steps = step + 1;
        quiet = changed ? 0 : quiet + 1;
        if (this->params.early_stop > 0 && quiet >= this->params.early_stop) break;
    }

    /* Heap -> best first: pop the minimum to the back. */
    int n = top.n;
    while (top.n > 1) {
        TopSet_swap(&top, 0, top.n - 1);
        top.n--;
        TopSet_siftDown(&top, 0);
    }
    for (int i = 0; i < n; i++) {
        out[i] = top.idx[i];
        if (out_scores) out_scores[i] = top.score[i];
    }
    *n_out = n;
out:
    free(top.idx);
    free(top.score);
    free(next);
    free(next_scores);
    return st;
}
