/* kernels/templates/te/te_sample.c: the random schedule sampler (TeSchedule_sample in
 * te_lower.h). It keeps its own model of each stage's loops so that every
 * step it writes names a loop that exists. */
#include <string.h>

#include "kernels/templates/te/te_lower.h"

typedef struct Loops {
    int n;
    int64_t extent[32];
    int is_reduce[32];
} Loops;

static void add(Steps *out, StepKind kind, int stage, const int64_t *args, int n) {
    Steps_add(out, kind, stage, args, n, NULL); /* the sampler stays within the limits */
}

/* A factor for an axis of extent e: mostly a divisor, sometimes not. */
static int64_t factor(Rng *rng, int64_t e) {
    if (e < 2) return 1;
    if (Rng_below(rng, 5) == 0) return 2 + (int64_t)Rng_below(rng, (uint64_t)(e < 9 ? e - 1 : 7)); /* 2..min(e, 8) */
    int64_t div[64];
    int n = 0;
    for (int64_t f = 1; f <= e && n < 64; f++)
        if (e % f == 0) div[n++] = f;
    return div[Rng_below(rng, (uint64_t)n)];
}

void TeSchedule_sample(const TeDag *dag, Rng *rng, int gpu, Steps *out) {
    out->n = 0;
    int state[TE_MAX_TENSORS];     /* 0 root, 1 inlined, 2 computed at, 3 root and read through a cache stage */
    int first_ann[TE_MAX_TENSORS]; /* loops a stage may be computed at: those outside its first vectorized one */
    int at[TE_MAX_TENSORS];        /* a DAG stage's index among the stages the steps made so far */
    for (int k = 0; k < dag->n_stages; k++)
        at[k] = k;
    for (int k = dag->n_stages - 1; k >= 0; k--) {
        const TeStage *ts = &dag->stages[k];
        state[k] = 0;
        if (ts->inlinable && Rng_below(rng, 5) < 2) {
            add(out, STEP_COMPUTE_INLINE, k, NULL, 0);
            state[k] = 1;
            continue;
        }
        int c = ts->n_consumers == 1 ? ts->consumers[0] : -1;
        if (!gpu && !ts->is_output && c >= 0 && state[c] == 0 && first_ann[c] > 0 && Rng_below(rng, 5) < 2) {
            int64_t a[2] = {at[c], (int64_t)Rng_below(rng, (uint64_t)first_ann[c])};
            add(out, STEP_COMPUTE_AT, k, a, 2);
            state[k] = 2;
            continue;
        }
        /* cpu: a stage with data reuse may get a cache stage, which comes at its index (steps.h) */
        int cache = 0, n_reduce = ts->n_reduce;
        if (!gpu && ts->data_reuse && Rng_below(rng, 3) == 0) {
            cache = 1 + (int)Rng_below(rng, 2);
            if (cache == 1) {
                add(out, STEP_CACHE_WRITE, k, NULL, 0);
                n_reduce = 0; /* the stage is the copy now */
            } else {
                int64_t a[2] = {ts->access[Rng_below(rng, (uint64_t)ts->n_access)].tensor, 0};
                add(out, STEP_CACHE_READ, k, a, 2);
            }
            for (int j = k; j < dag->n_stages; j++)
                at[j]++;
            state[k] = 3;
        }
        int K = at[k];
        Loops L = {0};
        for (int a = 0; a < ts->n_spatial; a++)
            L.extent[L.n] = dag->prog->vars[ts->spatial[a]].extent, L.is_reduce[L.n++] = 0;
        for (int a = 0; a < n_reduce; a++)
            L.extent[L.n] = dag->prog->vars[ts->reduce[a]].extent, L.is_reduce[L.n++] = 1;
        /* splits, last axis first so earlier positions stay put */
        for (int pos = L.n - 1; pos >= 0; pos--) {
            int levels = 1 + (int)Rng_below(rng, L.is_reduce[pos] ? 2 : 3);
            if (levels == 1 || L.extent[pos] < 2 || L.n + levels > STEP_MAX_ARGS)
                continue; /* reorder names every loop */
            int64_t f[3] = {1, 1, 1}, prod = 1;
            for (int i = 0; i < levels - 1; i++) { /* the factors multiply to at most the extent */
                f[i] = factor(rng, L.extent[pos] / prod);
                prod *= f[i];
            }
            int64_t args[4] = {pos, f[0], f[1]};
            add(out, STEP_SPLIT, K, args, levels);
            int64_t outer = (L.extent[pos] + prod - 1) / prod;
            int red = L.is_reduce[pos];
            memmove(&L.extent[pos + levels], &L.extent[pos + 1], sizeof(int64_t) * (L.n - pos - 1));
            memmove(&L.is_reduce[pos + levels], &L.is_reduce[pos + 1], sizeof(int) * (L.n - pos - 1));
            L.extent[pos] = outer;
            L.is_reduce[pos] = red;
            for (int i = 0; i < levels - 1; i++)
                L.extent[pos + 1 + i] = f[i], L.is_reduce[pos + 1 + i] = red;
            L.n += levels - 1;
        }
        if (Rng_below(rng, 2)) { /* a random order */
            int64_t perm[32];
            for (int i = 0; i < L.n; i++)
                perm[i] = i;
            for (int i = L.n - 1; i > 0; i--) {
                int j = (int)Rng_below(rng, (uint64_t)i + 1);
                int64_t t = perm[i];
                perm[i] = perm[j], perm[j] = t;
            }
            add(out, STEP_REORDER, K, perm, L.n);
            Loops M = L;
            for (int i = 0; i < L.n; i++)
                M.extent[i] = L.extent[perm[i]], M.is_reduce[i] = L.is_reduce[perm[i]];
            L = M;
        }
        if (L.n >= 2 && L.is_reduce[0] == L.is_reduce[1] && Rng_below(rng, 10) < 3) {
            int64_t a[2] = {0, 2};
            add(out, STEP_FUSE, K, a, 2);
            L.extent[0] *= L.extent[1];
            memmove(&L.extent[1], &L.extent[2], sizeof(int64_t) * (L.n - 2));
            memmove(&L.is_reduce[1], &L.is_reduce[2], sizeof(int) * (L.n - 2));
            L.n--;
        }
        first_ann[k] = L.n;
        int64_t zero = 0, last = L.n - 1;
        if (gpu) {
            if (!L.is_reduce[0] && Rng_below(rng, 4)) {
                int64_t a[2] = {0, 0};
                add(out, STEP_BIND, K, a, 2);
            }
            int64_t p = 1 + (int64_t)Rng_below(rng, (uint64_t)(L.n > 1 ? L.n - 1 : 1));
            if (p < L.n && !L.is_reduce[p] && L.extent[p] <= 1024 && Rng_below(rng, 4)) {
                int64_t a[2] = {p, 3};
                add(out, STEP_BIND, K, a, 2);
            }
            if (Rng_below(rng, 10) < 2) {
                int64_t q = (int64_t)Rng_below(rng, (uint64_t)L.n);
                if (L.extent[q] <= 16) add(out, STEP_UNROLL, K, &q, 1);
            }
            continue;
        }
        if (!L.is_reduce[0] && Rng_below(rng, 2)) {
            add(out, STEP_PARALLEL, K, &zero, 1);
        }
        if (L.n > 1 && !L.is_reduce[last] && Rng_below(rng, 5) < 2) {
            add(out, STEP_VECTORIZE, K, &last, 1);
            if (first_ann[k] > last) first_ann[k] = (int)last;
        }
        if (Rng_below(rng, 10) < 3) {
            int64_t p = (int64_t)Rng_below(rng, (uint64_t)L.n);
            if (L.extent[p] <= 16 && p != last && p != 0) add(out, STEP_UNROLL, K, &p, 1);
        }
        if (Rng_below(rng, 10) < 3) {
            static const int64_t MAX[] = {16, 64, 512};
            int64_t a[2] = {0, MAX[Rng_below(rng, 3)]};
            add(out, STEP_AUTO_UNROLL, K, a, 2);
        }
        if (cache && first_ann[k] > 0 && Rng_below(rng, 3)) { /* else the cache stage stays at root */
            int64_t a[2] = {K, (int64_t)Rng_below(rng, (uint64_t)first_ann[k])};
            add(out, STEP_COMPUTE_AT, K - 1, a, 2);
        }
    }
}
