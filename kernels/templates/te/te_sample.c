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

/* Random loops for stage k (its current index) whose loops are L: splits, a
 * random order, maybe a fuse, then annotations (on cpu parallel only at root).
 * Returns how many loops come before the first vectorized one: a stage may be
 * computed at those. */
static int tile(Rng *rng, int gpu, int k, int root, Loops L, Steps *out) {
    /* splits, last axis first so earlier positions stay put */
    for (int pos = L.n - 1; pos >= 0; pos--) {
        int levels = 1 + (int)Rng_below(rng, L.is_reduce[pos] ? 2 : 3);
        if (levels == 1 || L.extent[pos] < 2 || L.n + levels > STEP_MAX_ARGS) continue; /* reorder names every loop */
        int64_t f[3] = {1, 1, 1}, prod = 1;
        for (int i = 0; i < levels - 1; i++) { /* the factors multiply to at most the extent */
            f[i] = factor(rng, L.extent[pos] / prod);
            prod *= f[i];
        }
        int64_t args[4] = {pos, f[0], f[1]};
        add(out, STEP_SPLIT, k, args, levels);
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
        add(out, STEP_REORDER, k, perm, L.n);
        Loops M = L;
        for (int i = 0; i < L.n; i++)
            M.extent[i] = L.extent[perm[i]], M.is_reduce[i] = L.is_reduce[perm[i]];
        L = M;
    }
    if (L.n >= 2 && L.is_reduce[0] == L.is_reduce[1] && Rng_below(rng, 10) < 3) {
        int64_t a[2] = {0, 2};
        add(out, STEP_FUSE, k, a, 2);
        L.extent[0] *= L.extent[1];
        memmove(&L.extent[1], &L.extent[2], sizeof(int64_t) * (L.n - 2));
        memmove(&L.is_reduce[1], &L.is_reduce[2], sizeof(int) * (L.n - 2));
        L.n--;
    }
    int first_vec = L.n;
    int64_t zero = 0, last = L.n - 1;
    if (gpu) { /* a stage computed at a loop runs inside its consumer's threads */
        if (root && !L.is_reduce[0] && Rng_below(rng, 4)) {
            int64_t a[2] = {0, 0};
            add(out, STEP_BIND, k, a, 2);
        }
        int64_t p = 1 + (int64_t)Rng_below(rng, (uint64_t)(L.n > 1 ? L.n - 1 : 1));
        if (root && p < L.n && !L.is_reduce[p] && L.extent[p] <= 1024 && Rng_below(rng, 4)) {
            int64_t a[2] = {p, 3};
            add(out, STEP_BIND, k, a, 2);
        }
        int64_t v = 1 + (int64_t)Rng_below(rng, (uint64_t)(L.n > 1 ? L.n - 1 : 1)); /* a virtual thread */
        if (root && v < L.n && v != p && !L.is_reduce[v] && L.extent[v] <= 8 && Rng_below(rng, 4) == 0) {
            int64_t a[2] = {v, 6};
            add(out, STEP_BIND, k, a, 2);
        }
        if (Rng_below(rng, 10) < 2) {
            int64_t q = (int64_t)Rng_below(rng, (uint64_t)L.n);
            if (L.extent[q] <= 16) add(out, STEP_UNROLL, k, &q, 1);
        }
        return first_vec;
    }
    if (root && !L.is_reduce[0] && Rng_below(rng, 2)) add(out, STEP_PARALLEL, k, &zero, 1);
    if (L.n > 1 && !L.is_reduce[last] && Rng_below(rng, 5) < 2) {
        add(out, STEP_VECTORIZE, k, &last, 1);
        first_vec = (int)last;
    }
    if (Rng_below(rng, 10) < 3) {
        int64_t p = (int64_t)Rng_below(rng, (uint64_t)L.n);
        if (L.extent[p] <= 16 && p != last && p != 0) add(out, STEP_UNROLL, k, &p, 1);
    }
    if (Rng_below(rng, 10) < 3) {
        static const int64_t MAX[] = {16, 64, 512};
        int64_t a[2] = {0, MAX[Rng_below(rng, 3)]};
        add(out, STEP_AUTO_UNROLL, k, a, 2);
    }
    return first_vec;
}

/* The loops of a stage's axes (the reduction ones when with_reduce). */
static Loops axes(const TeDag *dag, const TeStage *ts, int with_reduce) {
    Loops L = {0};
    for (int a = 0; a < ts->n_spatial; a++)
        L.extent[L.n] = dag->prog->vars[ts->spatial[a]].extent, L.is_reduce[L.n++] = 0;
    for (int a = 0; with_reduce && a < ts->n_reduce; a++)
        L.extent[L.n] = dag->prog->vars[ts->reduce[a]].extent, L.is_reduce[L.n++] = 1;
    return L;
}

/* Cache stage k (index now, dims dimensions) computed at a random one of
 * the first n loops of stage t, or (on cpu, where it has a buffer there) left
 * at root; on a GPU sometimes with padded rows (storage_align). */
static int maybe_at(Rng *rng, int gpu, int k, int dims, int t, int n, Steps *out) {
    if (gpu && Rng_below(rng, 3) == 0) {
        int64_t a[3] = {dims >= 2 ? dims - 2 : 0, Rng_below(rng, 2) ? 32 : 16, 1};
        add(out, STEP_STORAGE_ALIGN, k, a, 3);
    }
    if (n < 1 || (!gpu && Rng_below(rng, 3) == 0)) return 1;
    int64_t a[2] = {t, (int64_t)Rng_below(rng, (uint64_t)n)};
    add(out, STEP_COMPUTE_AT, k, a, 2);
    return 0;
}

/* One draw; with plain set no cache stage and no compute_at. */
static void sample(const TeDag *dag, Rng *rng, int gpu, int plain, Steps *out) {
    out->n = 0;
    int state[TE_MAX_TENSORS];     /* 0 root, 1 inlined, 2 computed at, 3 read through a cache stage */
    int first_vec[TE_MAX_TENSORS]; /* loops a stage may be computed at: those outside its first vectorized one */
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
        int c = ts->n_consumers == 1 ? ts->consumers[0] : -1, root = 1;
        if (!plain && !ts->is_output && c >= 0 && state[c] == 0 && first_vec[c] > 0 && Rng_below(rng, 5) < 2) {
            int64_t a[2] = {at[c], (int64_t)Rng_below(rng, (uint64_t)first_vec[c])};
            add(out, STEP_COMPUTE_AT, k, a, 2);
            state[k] = 2;
            root = 0;
        }
        /* a stage with data reuse may get cache stages, which come at its index (steps.h); on a GPU
         * the read one is in shared memory */
        int cache = !plain && root && ts->data_reuse && Rng_below(rng, 3) == 0 ? 1 + (int)Rng_below(rng, 3) : 0;
        int read = cache & 2, write = cache & 1;
        int64_t a[2] = {0, gpu};
        if (read) {
            a[0] = ts->access[Rng_below(rng, (uint64_t)ts->n_access)].tensor;
            add(out, STEP_CACHE_READ, k, a, 2);
        }
        int read_dims = dag->prog->tensors[a[0]].ndim;
        if (write) add(out, STEP_CACHE_WRITE, k + !!read, NULL, 0);
        if (cache) state[k] = 3;
        for (int j = k; j < dag->n_stages && cache; j++)
            at[j] += !!read + write;
        int K = at[k];
        first_vec[k] = tile(rng, gpu, K, root, axes(dag, ts, !write), out);
        if (write) { /* the computing stage, at K - 1, at a loop of the copy */
            int at_root = maybe_at(rng, gpu, K - 1, ts->n_spatial, K, first_vec[k], out);
            int n = tile(rng, gpu, K - 1, at_root, axes(dag, ts, 1), out);
            if (read) maybe_at(rng, gpu, K - 2, read_dims, K - 1, n, out);
        } else if (read) {
            maybe_at(rng, gpu, K - 1, read_dims, K, first_vec[k], out);
        }
    }
}

/* Whether steps lower and emit as GPU code (buffers within the limits). */
static int emits(const TeDag *dag, const Steps *steps) {
    char err[TT_ERRLEN];
    LoopNest ln;
    if (LoopNest_lower(&ln, dag, steps, err) != TT_OK) return 0;
    StrBuf src;
    StrBuf_init(&src);
    TeLaunch l[TE_MAX_LAUNCHES];
    int n;
    Status st = LoopNest_emit_gpu(&ln, 0, "k", &src, l, &n, err);
    StrBuf_done(&src);
    LoopNest_done(&ln);
    return st == TT_OK;
}

void TeSchedule_sample(const TeDag *dag, Rng *rng, int gpu, Steps *out) {
    sample(dag, rng, gpu, 0, out);
    if (gpu && !emits(dag, out)) sample(dag, rng, gpu, 1, out); /* a buffer too large: a plain schedule */
}
