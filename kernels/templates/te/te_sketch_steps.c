/* kernels/templates/te/te_sketch_steps.c: the steps of an annotated sketch (see
 * te_sketch.h), and the questions about the DAG that the rules, annotation and
 * the zero-trial default ask too (te_sketch_impl.h). Steps are written through
 * a small model of each stage's loops, so every step names a loop that exists.
 * The rules are in te_sketch_rules.c, annotation, mutation, the zero-trial
 * default, recovery and printing in te_sketch_{annotate,mutate,heuristic,
 * recover,print}.c. */
#include "kernels/templates/te/te_sketch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_sketch_impl.h"

/* ---- questions about the DAG ----------------------------------------------------- */

int64_t sk_axes_product(const TeDag *dag, const int *vars, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= dag->prog->vars[vars[i]].extent;
    return p;
}

/* rfactor pays when the reduction is longer than the spatial work and the
 * spatial loops alone cannot keep the cores busy */
int sk_needs_rfactor(const TeDag *dag, const TeStage *ts, int cores) {
    if (!ts->red || ts->data_reuse) return 0;
    int64_t sp = sk_axes_product(dag, ts->spatial, ts->n_spatial), red = sk_axes_product(dag, ts->reduce, ts->n_reduce);
    return !(sp > red || sp > (int64_t)cores * 16);
}

int sk_uses_var(const TeExpr *e, int var) {
    if (e->kind == TE_VAR) return e->var == var;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && sk_uses_var(e->kid[i], var)) return 1;
    return 0;
}

/* Whether some read of stage ts moves with variable var in its innermost index. */
/* Whether a read of stage ts that moves along variable vx has an index
 * that adds variables y and r (a sliding window: X[.., y + r, ..]): copies of
 * r's loop then share rows of y's. */
int sk_slides(const TeStage *ts, int vx, int y, int r) {
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        if (!ts->access[i].in_reduce || !sk_uses_var(at, vx)) continue;
        for (int d = 0; d < at->n_kids; d++)
            if (at->kid[d] && sk_uses_var(at->kid[d], y) && sk_uses_var(at->kid[d], r)) return 1;
    }
    return 0;
}

int sk_reads_along(const TeStage *ts, int var) {
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        if (at->n_kids > 0 && sk_uses_var(at->kid[at->n_kids - 1], var)) return 1;
    }
    return 0;
}

/* The reduction axis rfactor splits on cpu, or -1: the one along which the
 * reads' innermost index moves (step 1) when no read's innermost index moves
 * with the last spatial axis (a dense layer's W[j, k]: vectorizing j would
 * gather, k is contiguous), or the last reduction axis when the reduction is
 * long and the spatial work small (needs_rfactor); the axis needs a divisor
 * between 2 and 64. Reads of a constant tensor do not count. */
int sk_rfactor_axis(const TeDag *dag, int k, int cores) {
    const TeStage *ts = &dag->stages[k];
    if (!ts->red || ts->n_spatial == 0) return -1;
    int found = -1, spatial_inner = 0, last = ts->spatial[ts->n_spatial - 1];
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        if (!ts->access[i].in_reduce || at->n_kids == 0 || dag->prog->tensors[ts->access[i].tensor].is_const)
            continue; /* a constant's elements are numbers of the code, not loads */
        TeLin lin;
        if (!te_linear(at->kid[at->n_kids - 1], &lin)) continue;
        int moves = 0; /* along the reduction (a read invariant along it, such as a row's mean, does not count) */
        for (int d = 0; d < at->n_kids; d++)
            for (int r = 0; r < ts->n_reduce; r++)
                moves |= sk_uses_var(at->kid[d], ts->reduce[r]);
        for (int v = 0; v < lin.n; v++) {
            if (lin.var[v] == last && moves) spatial_inner = 1;
            for (int r = 0; r < ts->n_reduce; r++)
                if (lin.var[v] == ts->reduce[r] && lin.coef[v] == 1 && found < 0) found = r;
        }
    }
    if (spatial_inner) found = -1;
    if (found < 0 && sk_needs_rfactor(dag, ts, cores)) found = ts->n_reduce - 1;
    if (found < 0) return -1;
    int64_t e = dag->prog->vars[ts->reduce[found]].extent;
    for (int64_t f = 2; f <= 64 && f <= e; f++)
        if (e % f == 0) return found;
    return -1;
}

/* Whether e calls exp, log, tanh or erf: tens of instructions per element. */
int sk_transcendental(const TeExpr *e) {
    if (e->kind == TE_CALL && (e->op == TE_EXP || e->op == TE_LOG || e->op == TE_TANH || e->op == TE_ERF)) return 1;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && sk_transcendental(e->kid[i])) return 1;
    return 0;
}

/* ---- the loop model --------------------------------------------------------- */

typedef struct Loops {
    int n;
    int64_t ext[32];
    int red[32];
} Loops;

typedef struct Writer {
    const TeDag *dag;
    int cores;
    Steps *out;
    Loops L[TE_MAX_TENSORS];
    int front[TE_MAX_TENSORS]; /* loops fused into the stage's first loop (0: none) */
    int idx[TE_MAX_TENSORS];   /* the stage index steps use for DAG stage k (cache_write shifts them) */
    int tensors;               /* program tensors so far: the given ones and one per cache stage and rfactor */
} Writer;

static void put_raw(Writer *w, StepKind kind, int stage, const int64_t *args, int n) {
    Steps_add(w->out, kind, stage, args, n, NULL); /* the writer stays within the limits */
    w->tensors += kind == STEP_CACHE_WRITE || kind == STEP_CACHE_READ || kind == STEP_RFACTOR;
}

static void put(Writer *w, StepKind kind, int k, const int64_t *args, int n) { put_raw(w, kind, w->idx[k], args, n); }

/* cache_write of DAG stage k: the accumulation becomes a new stage at k's
 * index (returned) and k, a copy, moves up by one, as every stage after it. */
static int w_cache_write(Writer *w, int k) {
    int at = w->idx[k];
    put_raw(w, STEP_CACHE_WRITE, at, NULL, 0);
    for (int j = 0; j < w->dag->n_stages; j++)
        if (w->idx[j] >= at) w->idx[j]++;
    Loops *L = &w->L[k]; /* the copy keeps the spatial loops */
    int n = 0;
    for (int i = 0; i < L->n; i++)
        if (!L->red[i]) L->ext[n] = L->ext[i], L->red[n++] = 0;
    L->n = n;
    return at;
}

/* cache_read of tensor t for DAG stage k (memory m, rounding r when > 0): a new stage just before k, which moves
 * up with every later stage; the new tensor's index. */
static int w_cache_read(Writer *w, int k, int t, int m, int r) {
    int64_t args[3] = {t, m, r};
    int at = w->idx[k];
    put_raw(w, STEP_CACHE_READ, at, args, r > 0 ? 3 : 2);
    for (int j = 0; j < w->dag->n_stages; j++)
        if (w->idx[j] >= at) w->idx[j]++;
    return w->tensors - 1;
}

/* The padded copies of the inputs stage k reads through padding (cache_read k t 2 each): new stages at root just
 * before k. */
static void w_pad(Writer *w, const SketchStage *st, int k) {
    for (int t = 0; t < 64; t++)
        if (st->pad >> t & 1) w_cache_read(w, k, t, 2, 0);
}

static void w_split(Writer *w, int k, int pos, const int64_t *f, int nf) {
    Loops *L = &w->L[k];
    int64_t args[STEP_MAX_ARGS], prod = 1;
    args[0] = pos;
    for (int i = 0; i < nf; i++)
        args[1 + i] = f[i], prod *= f[i];
    put(w, STEP_SPLIT, k, args, nf + 1);
    int64_t outer = (L->ext[pos] + prod - 1) / prod;
    int red = L->red[pos];
    memmove(&L->ext[pos + nf + 1], &L->ext[pos + 1], sizeof(int64_t) * (size_t)(L->n - pos - 1));
    memmove(&L->red[pos + nf + 1], &L->red[pos + 1], sizeof(int) * (size_t)(L->n - pos - 1));
    L->ext[pos] = outer;
    L->red[pos] = red;
    for (int i = 0; i < nf; i++)
        L->ext[pos + 1 + i] = f[i], L->red[pos + 1 + i] = red;
    L->n += nf;
}

static void w_reorder(Writer *w, int k, const int64_t *perm) {
    Loops *L = &w->L[k], M = *L;
    int identity = 1;
    for (int i = 0; i < L->n; i++) {
        M.ext[i] = L->ext[perm[i]], M.red[i] = L->red[perm[i]];
        identity &= perm[i] == i;
    }
    if (identity) return;
    put(w, STEP_REORDER, k, perm, L->n);
    *L = M;
}

static void w_fuse(Writer *w, int k, int pos, int n) {
    if (n < 2) return;
    Loops *L = &w->L[k];
    if (pos == 0) w->front[k] = n;
    int64_t a[2] = {pos, n};
    put(w, STEP_FUSE, k, a, 2);
    for (int i = 1; i < n; i++)
        L->ext[pos] *= L->ext[pos + i];
    memmove(&L->ext[pos + 1], &L->ext[pos + n], sizeof(int64_t) * (size_t)(L->n - pos - n));
    memmove(&L->red[pos + 1], &L->red[pos + n], sizeof(int) * (size_t)(L->n - pos - n));
    L->n -= n - 1;
}

static void w_one(Writer *w, StepKind kind, int k, int64_t pos) { put(w, kind, k, &pos, 1); }

static void w_two(Writer *w, StepKind kind, int k, int64_t a, int64_t b) {
    int64_t v[2] = {kind == STEP_COMPUTE_AT ? w->idx[a] : a, b}; /* compute_at names its target by DAG stage */
    put(w, kind, k, v, 2);
}

/* ---- tiling layout ------------------------------------------------------------ */

/* Levels of each axis of stage k under the sketch: the structure's S (R)
 * count for a spatial (reduction) axis longer than 1, else 1; when the loops
 * would exceed what a reorder names, the shortest axes drop to one level. */
int sk_axis_levels(const TeDag *dag, int k, int how, int gpu, int *lev) {
    const TeStage *ts = &dag->stages[k];
    /* gpu SSSS; cpu: the copy SSS (outer, the local's box, the register
     * tile), its accumulation RR; a fused producer: RR inside its consumer's tile */
    int ls = (gpu && how == SK_TILED) || how == SK_INPLACE ? 4
             : how == SK_FUSED                             ? 1
                                                           : 3,
        lr = gpu || how == SK_CONSUMER ? 1 : 2;
    int n = ts->n_spatial + ts->n_reduce, total = 0;
    for (int a = 0; a < n; a++) {
        int red = a >= ts->n_spatial;
        int64_t e = dag->prog->vars[red ? ts->reduce[a - ts->n_spatial] : ts->spatial[a]].extent;
        lev[a] = e > 1 ? (red ? lr : ls) : 1;
        total += lev[a];
    }
    while (total > STEP_MAX_ARGS) {
        int best = -1;
        int64_t best_e = 0;
        for (int a = 0; a < n; a++) {
            int red = a >= ts->n_spatial;
            int64_t e = dag->prog->vars[red ? ts->reduce[a - ts->n_spatial] : ts->spatial[a]].extent;
            if (lev[a] > 1 && (best < 0 || e < best_e)) best = a, best_e = e;
        }
        if (best < 0) break;
        total -= lev[best] - 1;
        lev[best] = 1;
    }
    return n;
}

int64_t sk_axis_extent(const TeDag *dag, int k, int a) {
    const TeStage *ts = &dag->stages[k];
    return dag->prog->vars[a < ts->n_spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial]].extent;
}

/* Splits every axis of stage k into its levels (factors from ann, or 1) and
 * orders the loops as the structure says ("SSRSRS"; a consumer: "SSS"). */
static void tile(Writer *w, int k, int how, int gpu, const SketchAnn *ann) {
    const TeStage *ts = &w->dag->stages[k];
    int lev[SKETCH_AXES];
    int n = sk_axis_levels(w->dag, k, how, gpu, lev);
    if (how == SK_TILED) n = ts->n_spatial; /* the copy of the cache_write stage: spatial loops only */
    for (int a = n - 1; a >= 0; a--) {      /* last axis first: earlier positions stay put */
        if (lev[a] < 2) continue;
        int64_t f[SKETCH_LEVELS];
        for (int l = 0; l < lev[a] - 1; l++)
            f[l] = ann ? ann->f[a][l] : 1;
        w_split(w, k, a, f, lev[a] - 1);
    }
    int base[SKETCH_AXES], pos = 0;
    for (int a = 0; a < n; a++)
        base[a] = pos, pos += lev[a];
    const char *s = how == SK_INPLACE ? "SSRSRS" : gpu && how == SK_TILED ? "SSSS" : "SSS";
    int64_t perm[STEP_MAX_ARGS];
    int np = 0, seen_s = 0, seen_r = 0;
    for (const char *c = s; *c; c++) {
        int red = *c == 'R', level = red ? seen_r++ : seen_s++;
        for (int a = red ? ts->n_spatial : 0; a < (red ? n : ts->n_spatial); a++)
            if (level < lev[a]) perm[np++] = base[a] + level;
    }
    w_reorder(w, k, perm);
}

/* Leading spatial loops of stage k's current loops. */
static int leading_spatial(const Loops *L) {
    int n = 0;
    while (n < L->n && !L->red[n])
        n++;
    return n;
}

/* ---- steps ------------------------------------------------------------------------ */

/* ---- transposing copies (cpu) ----------------------------------------------------------
 * A stage without reduction whose reads run along another of its axes than its last (a copy between layouts,
 * Winograd's NCHW output from a channels-last tile: `Y[n, k, y, x] = Z2[n, y / 4, y % 4, x / 4, x % 4, k]`)
 * reads a cache line for one element and the next elements of that line one iteration of the reads' axis
 * later: that loop goes right outside the last (vectorized) one, so that a line is read again while it is in
 * the L1 cache (the rows of the other axes in between: 56 lines for Y, instead of 56 x 56). */

/* The spatial axis (not the last) along which every read of stage k that is no constant runs in its innermost
 * index, or -1. */
static int transposed_axis(const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    int axis = -1;
    if (ts->red || ts->n_spatial < 3) return -1;
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        if (dag->prog->tensors[ts->access[i].tensor].is_const || at->n_kids < 1) continue;
        const TeExpr *inner = at->kid[at->n_kids - 1];
        int along = -1;
        for (int x = 0; x < ts->n_spatial; x++)
            if (sk_uses_var(inner, ts->spatial[x])) {
                if (along >= 0) return -1;
                along = x;
            }
        if (along < 0 || along == ts->n_spatial - 1 || (axis >= 0 && along != axis)) return -1;
        axis = along;
    }
    return axis;
}

/* Moves stage k's transposed axis (transposed_axis) right outside its last one. */
static void transpose_order(Writer *w, int k) {
    int t = transposed_axis(w->dag, k), ns = w->dag->stages[k].n_spatial, np = 0;
    if (t < 0 || t == ns - 2) return;
    int64_t perm[STEP_MAX_ARGS];
    for (int x = 0; x < ns - 1; x++)
        if (x != t) perm[np++] = x;
    perm[np++] = t;
    perm[np++] = ns - 1;
    w_reorder(w, k, perm);
}

/* ---- products with a small constant (cpu) ------------------------------------------
 * A stage that multiplies by a small constant tensor, a Winograd transform's `sum(Bt[e, r] * X[.., r, c], r < 6)`:
 * once the loops over the constant's indices are unrolled, every element of it is a number of the code, the
 * compiler folds it (a zero term is dropped, a 1 is no multiply), and the stage becomes a few adds per element. */

/* Bit x for each axis x of stage k (spatial, then reduction) whose variable is in an index of a constant it reads. */
static unsigned const_index_axes(const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    unsigned mask = 0;
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        if (!dag->prog->tensors[ts->access[i].tensor].is_const) continue;
        for (int x = 0; x < ts->n_spatial + ts->n_reduce; x++) {
            int var = x < ts->n_spatial ? ts->spatial[x] : ts->reduce[x - ts->n_spatial];
            for (int d = 0; d < at->n_kids; d++)
                if (at->kid[d] && sk_uses_var(at->kid[d], var)) mask |= 1u << x;
        }
    }
    return mask;
}

/* The axes of stage k that its loops unroll innermost as a product with a small constant (cpu, a stage at root),
 * or 0: a reduction whose axes all index a constant, the last spatial axis not (it is the vectorized one, of at
 * least CONST_MIN_LANES elements), at most SKETCH_MAX_UNROLLED copies of the statement. */
#define CONST_MIN_LANES 8
unsigned sk_const_unrolled(const Sketch *sk, const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    if (sk->gpu || sk->st[k].how != SK_ROOT || !ts->red || ts->n_spatial < 1 ||
        sk_axis_extent(dag, k, ts->n_spatial - 1) < CONST_MIN_LANES)
        return 0;
    unsigned mask = const_index_axes(dag, k), all_red = ((1u << ts->n_reduce) - 1) << ts->n_spatial;
    if ((mask & all_red) != all_red || (mask >> (ts->n_spatial - 1) & 1)) return 0;
    int64_t copies = 1;
    for (int x = 0; x < ts->n_spatial + ts->n_reduce; x++)
        if (mask >> x & 1) copies *= sk_axis_extent(dag, k, x);
    return copies <= SKETCH_MAX_UNROLLED ? mask : 0;
}

static int bits(unsigned m) { return __builtin_popcount(m); }

/* The loops of consumer c outside its vectorized one, where a producer may be computed (all but the innermost
 * unless c's product with a constant unrolls loops inside the vectorized one). */
static int outside_simd(const Sketch *sk, const TeDag *dag, int c, const Loops *C) {
    return C->n - 1 - bits(sk_const_unrolled(sk, dag, c));
}

/* Stage k's loops as a product with a small constant (mask: const_unrolled): the other spatial axes, the last
 * spatial axis (vectorized), then the constant's spatial axes and the reduction, unrolled, so that the statement
 * of the vectorized loop is the whole element, its reduction in a register (te_emit); a stage at root runs its
 * first `par` loops fused and parallel, or each parallel when it hosts a producer (host). */
static void const_steps(Writer *w, int k, unsigned mask, const SketchAnn *a, int at_root, int host) {
    const TeStage *ts = &w->dag->stages[k];
    int ns = ts->n_spatial, n = ns + ts->n_reduce, np = 0, outer = 0;
    int64_t perm[STEP_MAX_ARGS];
    for (int x = 0; x < ns - 1; x++)
        if (!(mask >> x & 1)) perm[np++] = x, outer++;
    perm[np++] = ns - 1;
    for (int x = 0; x < n; x++)
        if (mask >> x & 1) perm[np++] = x;
    w_reorder(w, k, perm);
    Loops *L = &w->L[k];
    int par = a && at_root ? (a->par < outer ? a->par : outer) : 0;
    if (par > 0 && host) { /* a stage computed at one of its loops: each parallel, not fused (see Sketch_steps) */
        for (int i = 0; i < par; i++)
            w_one(w, STEP_PARALLEL, k, i);
    } else if (par > 0) {
        w_fuse(w, k, 0, par);
        w_one(w, STEP_PARALLEL, k, 0);
    }
    int simd = L->n - 1 - bits(mask);
    if (a && a->vec && L->ext[simd] > 1 && !(par > 0 && simd == 0)) w_one(w, STEP_VECTORIZE, k, simd);
    for (int i = simd + 1; i < L->n; i++)
        w_one(w, STEP_UNROLL, k, i);
}

int Sketch_unrollSet(int gpu, const int64_t **values) {
    static const int64_t SET[] = {0, 16, 64, 512, 1024};
    *values = SET;
    return gpu ? 5 : 4;
}

/* Stage k may be computed at its one consumer: an untiled stage that is not
 * an output, whose one consumer has loops of its own from this sketch. */
/* Whether consumer stage c reads stage k's tensor at indices linear in its
 * variables only: through floor division or modulo (a Winograd tile's
 * `Z[y / 4, y % 4]`) the region a loop of c reads is a loose box, and a
 * producer computed there would be computed many times over. */
static int reads_linear(const TeDag *dag, int c, int k) {
    const TeStage *cs = &dag->stages[c];
    for (int i = 0; i < cs->n_access; i++) {
        const TeExpr *at = cs->access[i].at;
        if (cs->access[i].tensor != dag->stages[k].tensor) continue;
        for (int d = 0; d < at->n_kids; d++) {
            TeLin lin;
            if (!te_linear(at->kid[d], &lin)) return 0;
        }
    }
    return 1;
}

int sk_may_move(const Sketch *sk, const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    if (sk->gpu || sk->st[k].how != SK_ROOT || ts->is_output || ts->n_consumers != 1) return 0;
    /* not at a consumer with a local accumulator (SK_TILED): the accumulator stage, not the consumer, reads it */
    SketchHow h = sk->st[ts->consumers[0]].how;
    return (h == SK_ROOT || h == SK_INPLACE) && reads_linear(dag, ts->consumers[0], k);
}

/* Whether rfactor stage k (cpu) may be computed, with its S.rf and local, at the outermost loop of its one
 * consumer, a stage of its own that reads it at linear indices (SketchAnn.at 0; -1 at root, 1 rf_blocks). */
int sk_rf_at_row(const Sketch *sk, const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    if (sk->gpu || sk->st[k].how != SK_RFACTOR || ts->is_output || ts->n_consumers != 1) return 0;
    int c = ts->consumers[0];
    return sk->st[c].how == SK_ROOT && dag->stages[c].n_spatial >= 2 && reads_linear(dag, c, k);
}

/* Whether rfactor stage k reads, along its rfactor axis, a tensor that its consumer reads again and that a stage
 * of the DAG writes (softmax's sum and divide of E), or an input when the consumer computes transcendental math
 * (softmax's max of X and exp of X minus it): computed at the consumer's row, the reduction reads that row from
 * memory and the consumer from the L1 cache, where apart they are two passes over the whole tensor. Over an input
 * with cheap arithmetic after it the pass of 8 rows wins, whose chains a single row's would not cover (layer-norm's
 * variance at Y's row, 64 lanes: 24.3 against 22.2 us; softmax's max at E's row: 71.3 against 77.5 us; an AVX2
 * EPYC, one thread, the best of 30 runs). */
int sk_rf_streams_shared(const Sketch *sk, const TeDag *dag, int k) {
    if (!sk_rf_at_row(sk, dag, k)) return 0;
    const TeStage *ts = &dag->stages[k], *cs = &dag->stages[ts->consumers[0]];
    int r = sk_rfactor_axis(dag, k, sk->cores);
    int costly = sk_transcendental(dag->prog->tensors[cs->tensor].body);
    for (int i = 0; r >= 0 && i < ts->n_access; i++) {
        int t = ts->access[i].tensor;
        if (!ts->access[i].in_reduce || (dag->stage_of[t] < 0 && !costly) ||
            !sk_uses_var(ts->access[i].at, ts->reduce[r]))
            continue;
        for (int j = 0; j < cs->n_access; j++)
            if (cs->access[j].tensor == t) return 1;
    }
    return 0;
}

/* Whether annotation ann computes another stage at one of stage k's loops. */
static int hosts(const Sketch *sk, const TeDag *dag, const SketchAnn *ann, int k) {
    for (int j = 0; j < dag->n_stages; j++)
        if ((sk->st[j].how == SK_FUSED && sk->st[j].consumer == k) ||
            (((sk_may_move(sk, dag, j) && ann[j].at >= 0) || (sk_rf_at_row(sk, dag, j) && ann[j].at == 0)) &&
             dag->stages[j].consumers[0] == k))
            return 1;
    return 0;
}

/* A tiled stage on a GPU: cache_write; the copy split SSSS over its spatial
 * axes, the first level of (up to three) axes bound to blockIdx, the third to
 * threadIdx; the accumulation computed at the innermost thread loop, into a
 * buffer private to the thread. Binds each loop apart (a fused loop would hide
 * the region the thread reads). The bare sketch (ann NULL) has no binding. */
static void gpu_tile(Writer *w, int k, const SketchAnn *ann) {
    const TeDag *dag = w->dag;
    const TeStage *ts = &dag->stages[k];
    int local = w_cache_write(w, k);
    tile(w, k, SK_TILED, 1, ann);
    int lev[SKETCH_AXES], pos = 0, blocks = 0, threads = 0, last_thread = -1;
    sk_axis_levels(dag, k, SK_TILED, 1, lev);
    for (int level = 0; level < 4; level++)
        for (int x = 0; x < ts->n_spatial; x++) {
            if (level >= lev[x]) continue;
            if (ann && level == 0 && lev[x] > 1 && blocks < 3) w_two(w, STEP_BIND, k, pos, blocks++);
            if (level == 2) {
                if (ann && threads < 3) w_two(w, STEP_BIND, k, pos, 3 + threads++);
                last_thread = pos;
            }
            pos++;
        }
    if (last_thread < 0) last_thread = 0;
    int64_t at[2] = {w->idx[k], last_thread};
    put_raw(w, STEP_COMPUTE_AT, local, at, 2);
    if (!ann) return;
    const int64_t *unrolls;
    int n_unroll = Sketch_unrollSet(1, &unrolls);
    int u = ann->unroll < n_unroll ? ann->unroll : n_unroll - 1;
    if (u > 0 && unrolls[u] > 0) w_two(w, STEP_AUTO_UNROLL, k, 0, unrolls[u]);
}

/* An auto-unroll limit of `limit` statements on cpu, lowered so that the copies
 * of the innermost loop (a SIMD loop of `lanes`: one copy of `lanes`
 * statements) stay within SKETCH_MAX_UNROLLED. */
static int64_t auto_unroll_limit(int64_t limit, int gpu, int64_t lanes) {
    int64_t cap = SKETCH_MAX_UNROLLED * (lanes > 1 ? lanes : 1);
    return gpu || limit <= cap ? limit : cap;
}

/* The loops of an accumulation (step stage `raw`, ns spatial axes then nr
 * reduction axes of extents ext[]; box[] the spatial extents of the region it
 * is computed for): each reduction axis with inner[r] > 0 split by it, the
 * loops ordered outer reductions, inner reductions, then the spatial ones (the
 * register tile: the innermost vectorized, the others unrolled while the
 * copies stay within SKETCH_MAX_UNROLLED), and the auto-unroll limit on the
 * first loop. */
static void accum_loops(Writer *w, int raw, int ns, int nr, const int64_t *ext, const int64_t *box,
                        const int64_t *inner, const SketchAnn *a) {
    int split[TE_MAX_DIMS] = {0}, n = ns + nr;
    for (int r = nr - 1; r >= 0; r--) { /* the last axis first: earlier positions stay put */
        if (inner[r] < 1) continue;
        int64_t args[2] = {ns + r, inner[r]};
        put_raw(w, STEP_SPLIT, raw, args, 2);
        split[r] = 1;
    }
    int64_t perm[STEP_MAX_ARGS], pos[TE_MAX_DIMS];
    int np = 0, at = ns;
    for (int r = 0; r < nr; r++)
        pos[r] = at, at += 1 + split[r];
    for (int r = 0; r < nr; r++)
        perm[np++] = pos[r];
    for (int r = 0; r < nr; r++)
        if (split[r]) perm[np++] = pos[r] + 1;
    for (int x = 0; x < ns; x++)
        perm[np++] = x;
    n = np;
    int identity = 1;
    for (int i = 0; i < n; i++)
        identity &= perm[i] == i;
    if (!identity) put_raw(w, STEP_REORDER, raw, perm, n);
    if (!a) return;
    /* the rows of the register tile unrolled, innermost first, while their copies of the innermost loop stay
     * within the cap (gcc -O3 vectorizes each copy on its own: its time grows faster than their count); then
     * the inner reduction loops next to the tile, innermost first, while the copies stay within it: a 3x3
     * window's loops around the tile would otherwise leave the accumulators in memory (the compiler keeps them
     * in registers across one loop, not across a nest of short ones) */
    int vec = a->vec && ext[ns - 1] > 1;
    int64_t body = vec ? 1 : box[ns - 1];            /* a scalar innermost loop is unrolled too (auto-unroll, gcc) */
    int unroll_x[TE_MAX_DIMS + 1] = {0}, rolled = 0; /* rolled: a row loop left as a loop */
    for (int x = ns - 2; x >= 0; x--) {
        if (ext[x] < 2 || ext[x] > 4096) continue;
        rolled |= body * box[x] > SKETCH_MAX_UNROLLED;
        if (!rolled) unroll_x[x] = 1, body *= box[x];
    }
    for (int i = np - ns - 1, r = nr - 1; r >= 0 && !rolled; r--) {
        if (!split[r]) continue;
        if (inner[r] > 1 && body * inner[r] <= SKETCH_MAX_UNROLLED) {
            int64_t loop = i;
            put_raw(w, STEP_UNROLL, raw, &loop, 1);
            body *= inner[r];
        } else if (inner[r] > 1) {
            break;
        }
        i--;
    }
    for (int x = 0; x < ns; x++) {
        int64_t loop = n - ns + x;
        if (x == ns - 1 && vec)
            put_raw(w, STEP_VECTORIZE, raw, &loop, 1);
        else if (unroll_x[x])
            put_raw(w, STEP_UNROLL, raw, &loop, 1);
    }
    const int64_t *unrolls;
    int n_unroll = Sketch_unrollSet(0, &unrolls), u = a->unroll < n_unroll ? a->unroll : n_unroll - 1;
    if (u > 0 && unrolls[u] > 0 && n > 0) {
        int64_t v[2] = {0, auto_unroll_limit(unrolls[u], 0, vec ? box[ns - 1] : 1)};
        put_raw(w, STEP_AUTO_UNROLL, raw, v, 2);
    }
}

/* The spatial extents of the region of tiled stage (or consumer) t on cpu
 * (annotation a) that a stage computed at its tile covers: the register tile
 * (at the last level-1 loop), or the level-1 block and the tile (at the last
 * level-0 loop). */
void sk_tile_box(const TeDag *dag, int t, SketchHow how, const SketchAnn *a, int at_level0, int64_t *box) {
    int lev[SKETCH_AXES];
    sk_axis_levels(dag, t, how, 0, lev);
    for (int x = 0; x < dag->stages[t].n_spatial; x++)
        box[x] = !a || lev[x] < 3 ? 1 : (int64_t)a->f[x][1] * (at_level0 ? a->f[x][0] : 1);
}

static void local_loops(Writer *w, int raw, int k, const int64_t *box, const SketchAnn *a) {
    const TeDag *dag = w->dag;
    const TeStage *ts = &dag->stages[k];
    int64_t ext[SKETCH_AXES], inner[TE_MAX_DIMS];
    for (int x = 0; x < ts->n_spatial + ts->n_reduce; x++)
        ext[x] = sk_axis_extent(dag, k, x);
    for (int r = 0; r < ts->n_reduce; r++)
        inner[r] = ext[ts->n_spatial + r] < 2 ? 0 : a ? a->f[ts->n_spatial + r][0] : 1;
    accum_loops(w, raw, ts->n_spatial, ts->n_reduce, ext, box, inner, a);
}

/* Loops at tile level 0 of a tiled stage or consumer on cpu (the ones that may run in parallel). */
int sk_level0_loops(const TeDag *dag, int k) { return dag->stages[k].n_spatial; }

/* The vector axis of tiled stage k on cpu: its last spatial axis tiled in three levels, or -1. */
static int vector_axis(const TeDag *dag, int k, SketchHow how) {
    int lev[SKETCH_AXES], vx = -1;
    sk_axis_levels(dag, k, how, 0, lev);
    for (int x = 0; x < dag->stages[k].n_spatial; x++)
        if (lev[x] == 3) vx = x;
    return vx;
}

/* The tensor that tiled stage k (a local accumulator, cpu) reads along its vector axis in its last index only,
 * with a reduction variable and no other tiled spatial variable (matmul's B[k, j]), or -1. Every register tile
 * reads its column strip along the reduction at the row stride (4 KiB for 1024 floats: the strip's lines share
 * a few cache sets and come from L3); an annotation may copy that strip, contiguous, at the copy's level-0 loop
 * of the vector axis (Sketch_packs), once for every register tile of the strip. */
int sk_packed_input(const TeDag *dag, const SketchStage *st, int k) {
    const TeStage *ts = &dag->stages[k];
    int vx = st->how == SK_TILED ? vector_axis(dag, k, SK_TILED) : -1, found = -1, lev[SKETCH_AXES];
    if (vx < 0) return -1;
    sk_axis_levels(dag, k, SK_TILED, 0, lev);
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        int t = ts->access[i].tensor, n = at->n_kids, ok = n >= 1, red = 0;
        if (dag->prog->tensors[t].is_const || (t < 64 && st->pad >> t & 1)) continue;
        for (int d = 0; d < n; d++)
            ok &= sk_uses_var(at->kid[d], ts->spatial[vx]) == (d == n - 1);
        for (int x = 0; x < ts->n_spatial; x++)
            ok &= x == vx || lev[x] < 3 || !sk_uses_var(at, ts->spatial[x]);
        for (int r = 0; r < ts->n_reduce; r++)
            red |= sk_uses_var(at, ts->reduce[r]);
        if (!ok || !red) continue;
        if (found >= 0 && found != t) return -1; /* one such tensor */
        found = t;
    }
    return found;
}

int Sketch_packs(const Sketch *sk, const TeDag *dag, int k) {
    return !sk->gpu && sk->vector >= 1 && sk->vector < 16 && k >= 0 && k < dag->n_stages &&
           sk_packed_input(dag, &sk->st[k], k) >= 0;
}

/* A tiled stage on cpu: cache_write; the copy tiled SSS, its level-0 loops
 * fused and parallel, its innermost loop vectorized; the accumulation
 * computed at the copy's last level-1 loop (its box: the register tile) with
 * the loops of local_loops. */
static void cpu_tile(Writer *w, const SketchStage *st, int k, const SketchAnn *a) {
    const TeStage *ts = &w->dag->stages[k];
    w_pad(w, st, k);
    int local = w_cache_write(w, k), pk = a && a->at >= 0 ? sk_packed_input(w->dag, st, k) : -1, copy = -1;
    if (pk >= 0) { /* a copy of pk for the accumulation, just before it */
        int64_t args[2] = {pk, 0};
        put_raw(w, STEP_CACHE_READ, local, args, 2);
        for (int j = 0; j < w->dag->n_stages; j++)
            if (w->idx[j] >= local) w->idx[j]++;
        copy = local++;
    }
    tile(w, k, SK_TILED, 0, a);
    int lev[SKETCH_AXES], at = -1, pos = 0;
    sk_axis_levels(w->dag, k, SK_TILED, 0, lev);
    for (int level = 0; level < 3; level++)
        for (int x = 0; x < ts->n_spatial; x++)
            if (level < lev[x]) {
                if (level <= 1) at = pos;
                pos++;
            }
    Loops *L = &w->L[k];
    if (a) {
        int par = a->par < sk_level0_loops(w->dag, k) ? a->par : sk_level0_loops(w->dag, k);
        if (par > 0 && par > at) par = at; /* the loop the accumulation is computed at stays */
        for (int i = 0; i < par; i++)      /* not fused: the box of a fused loop's body would be the whole tensor */
            w_one(w, STEP_PARALLEL, k, i);
        if (a->vec && L->n >= 2 && L->ext[L->n - 1] > 1 && at < L->n - 1) w_one(w, STEP_VECTORIZE, k, L->n - 1);
    }
    int64_t where[2] = {w->idx[k], at < 0 ? 0 : at};
    put_raw(w, STEP_COMPUTE_AT, local, where, 2);
    int64_t box[TE_MAX_DIMS];
    sk_tile_box(w->dag, k, SK_TILED, a, 0, box);
    local_loops(w, local, k, box, a);
    if (copy >= 0) { /* at the level-0 loop of the vector axis (the copy's loop vx), its rows vectorized */
        int64_t strip[2] = {w->idx[k], vector_axis(w->dag, k, SK_TILED)}, last = w->dag->prog->tensors[pk].ndim - 1;
        put_raw(w, STEP_COMPUTE_AT, copy, strip, 2);
        put_raw(w, STEP_VECTORIZE, copy, &last, 1);
    }
}

/* The rows of an rfactor sketch: its last spatial axis longer than 1, or -1. */
int sk_rf_rows(const TeDag *dag, int k) {
    int x = -1;
    for (int i = 0; i < dag->stages[k].n_spatial; i++)
        if (sk_axis_extent(dag, k, i) > 1) x = i;
    return x;
}

/* Another location for rfactor stage k than at: root (-1), at its consumer's row (0: rf_at_row) or S.rf per
 * block of rows (1: rf_blocks), of those its DAG allows. */
int8_t sk_rf_other_at(const Sketch *sk, const TeDag *dag, int k, int8_t at, Rng *rng) {
    int8_t opt[3];
    int n = 0;
    opt[n++] = -1;
    if (sk_rf_at_row(sk, dag, k)) opt[n++] = 0;
    if (sk_rf_rows(dag, k) >= 0) opt[n++] = 1;
    int cur = 0;
    while (cur < n && opt[cur] != at)
        cur++;
    return opt[(cur + 1 + (n > 2 ? (int)Rng_below(rng, (uint64_t)(n - 1)) : 0)) % n];
}

/* Whether rfactor stage k is a sum of products of rows of a matrix with a vector (a dense layer of one row,
 * `sum(X[i, k] * W[j, k], k < K)`, M = 1): its only spatial axis longer than 1 is the row axis, some read moves
 * along the row axis and the rfactor axis, another along the rfactor axis and not the rows; each element of the
 * matrix is used once, so the kernel streams it from the cache. Its default computes S.rf per row (rf_blocks, J = 1, F
 * of four vectors: four independent accumulators): W is then read row after row, one contiguous stream, as the dense
 * template reads its packed panels (an AVX2 EPYC, one thread, CPU time: 37 against 42 us for 8 rows of 8 lanes at root,
 * the template 37-39). */
int sk_rf_streams_rows(const TeDag *dag, int k, int cores) {
    const TeStage *ts = &dag->stages[k];
    int x = sk_rf_rows(dag, k), r = sk_rfactor_axis(dag, k, cores);
    if (x < 0 || r < 0 || ts->red->op != TE_SUM) return 0;
    if (sk_axes_product(dag, ts->spatial, ts->n_spatial) != sk_axis_extent(dag, k, x)) return 0; /* one row of X */
    int vx = ts->spatial[x], vr = ts->reduce[r], rows = 0, vector = 0;
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        if (!ts->access[i].in_reduce || dag->prog->tensors[ts->access[i].tensor].is_const || !sk_uses_var(at, vr))
            continue;
        if (sk_uses_var(at, vx))
            rows = 1;
        else
            vector = 1;
    }
    return rows && vector;
}

/* S.rf's loops (stage rf, computed at a loop): the reduction loops outside, then its J rows unrolled and F
 * lanes vectorized (accum_loops). */
static void rf_accumulate(Writer *w, int k, int rf, int x, int64_t J, int64_t F, const SketchAnn *a) {
    const TeDag *dag = w->dag;
    const TeStage *ts = &dag->stages[k];
    int ns = ts->n_spatial, nr = ts->n_reduce, r = sk_rfactor_axis(dag, k, w->cores);
    int64_t ext[SKETCH_AXES], none[TE_MAX_DIMS] = {0}, box[TE_MAX_DIMS + 1];
    for (int i = 0; i < ns; i++)
        ext[i] = sk_axis_extent(dag, k, i), box[i] = i == x ? J : 1;
    ext[ns] = box[ns] = F;
    for (int i = 0; i < nr; i++)
        ext[ns + 1 + i] = i == r ? sk_axis_extent(dag, k, ns + i) / F : sk_axis_extent(dag, k, ns + i);
    accum_loops(w, rf, ns + 1, nr, ext, box, none, a);
}

/* S.rf per block of J rows of S (a->at 1): S's row axis x split by J, its outer loops parallel, S.rf
 * computed at the outer row loop (a buffer of J x F the compiler keeps in registers), S's sum of each row's F
 * lanes unrolled (for a sum, a SIMD reduction: te_emit). No S.rf of every row goes through memory, and J = 1
 * reads a weight W[j, k] row after row, one contiguous stream. */
static void rf_blocks(Writer *w, int k, int rf, int x, int64_t J, int64_t F, const SketchAnn *a) {
    int ns = w->dag->stages[k].n_spatial;
    for (int j = 0; j < w->dag->n_stages; j++)
        if (w->idx[j] >= rf) w->idx[j]++;
    int64_t sa[2] = {x, J};
    put(w, STEP_SPLIT, k, sa, 2);
    int par = a->par < x + 1 ? a->par : x + 1;
    for (int i = 0; i < par; i++)
        w_one(w, STEP_PARALLEL, k, i);
    int64_t where[2] = {w->idx[k], x};
    put_raw(w, STEP_COMPUTE_AT, rf, where, 2);
    rf_accumulate(w, k, rf, x, J, F, a);
    if (F > 1 && F <= 4096) w_one(w, STEP_UNROLL, k, ns + 1); /* k's loops: spatial.. (x split), the F lanes */
}

/* rfactor on cpu (stage k, reduction axis r = rf_axis): rfactor k r F; the
 * new stage S.rf[spatial.., inner] gets a local accumulator (cache_write),
 * its copy's row axis split by J and the accumulation computed at the outer
 * part, so that its box is J rows of F: outer reductions, then the rows
 * unrolled and the F lanes vectorized; the outer loops parallel; k sums the
 * F lanes of each element, unrolled. With a->at 1 (rf_blocks) S.rf is
 * instead computed per block of J rows of S, into a buffer of J x F local to
 * that loop, and S sums each row's lanes right after. */
static void rf_tile(Writer *w, int k, const SketchAnn *a) {
    const TeDag *dag = w->dag;
    const TeStage *ts = &dag->stages[k];
    int ns = ts->n_spatial, r = sk_rfactor_axis(dag, k, w->cores), x = sk_rf_rows(dag, k);
    int64_t F = a ? a->f[ns + r][0] : 1, J = a && x >= 0 ? a->f[x][0] : 1;
    int64_t args[2] = {r, F};
    put(w, STEP_RFACTOR, k, args, 2);
    int rf = w->idx[k]; /* S.rf goes in at k's index, then its cache stage at the same one */
    if (a && a->at == 1 && x >= 0) {
        rf_blocks(w, k, rf, x, J, F, a);
        return;
    }
    for (int step = 0; step < 2; step++) {
        if (step) put_raw(w, STEP_CACHE_WRITE, rf, NULL, 0);
        for (int j = 0; j < dag->n_stages; j++)
            if (w->idx[j] >= rf) w->idx[j]++;
    }
    int copy = rf + 1, at = 0;
    if (x >= 0) {
        int64_t sa[2] = {x, J};
        put_raw(w, STEP_SPLIT, copy, sa, 2);
        at = x;
    }
    if (a) {
        int par = a->at == 0 ? 0 : a->par < at + 1 ? a->par : at + 1; /* at a row: inside the consumer's loop */
        for (int i = 0; i < par; i++) {
            int64_t loop = i;
            put_raw(w, STEP_PARALLEL, copy, &loop, 1);
        }
        int64_t last = ns + (x >= 0 ? 1 : 0);
        if (a->vec && F > 1) put_raw(w, STEP_VECTORIZE, copy, &last, 1);
    }
    int64_t where[2] = {copy, at};
    put_raw(w, STEP_COMPUTE_AT, rf, where, 2);
    rf_accumulate(w, k, rf, x, J, F, a);
    if (a && F > 1 && F <= 4096) w_one(w, STEP_UNROLL, k, ns); /* k's loops: spatial.., the F lanes */
}

/* The one tensor stage k reads through padding when its reads of it have phases (2 * x + s: LoopNest_phases), or
 * -1. */
static int pool_phased(const TeDag *dag, const SketchStage *st, int k, int64_t *phases) {
    int t = -1;
    for (int i = 0; i < 64; i++)
        if (st->pad >> i & 1) {
            if (t >= 0) return -1;
            t = i;
        }
    return t >= 0 && (*phases = LoopNest_phases(dag, k, t)) >= 2 ? t : -1;
}

/* The loops of a copy by phases (stage `copy`, of a tensor of ndim dimensions: ..., phase, q) reordered ..., q,
 * phase, the phase loop unrolled: the copy reads its source at unit stride, both phases of a pair of source
 * elements in one iteration, which the compiler vectorizes as contiguous loads and shuffles (phase outer, each
 * iteration of q reads every a-th element: a strided load that costs twice as much). */
static void phase_inner(Writer *w, int copy, int ndim) {
    int64_t perm[STEP_MAX_ARGS], ph = ndim;
    for (int i = 0; i < ndim - 1; i++)
        perm[i] = i;
    perm[ndim - 1] = ndim, perm[ndim] = ndim - 1;
    put_raw(w, STEP_REORDER, copy, perm, ndim + 1);
    put_raw(w, STEP_UNROLL, copy, &ph, 1);
}

/* A pooling-like stage k on cpu (SK_POOL): its padded copies (cache_read k t 2); when its reads of the one padded
 * tensor have a stride a >= 2 in their last index (2 * x + s), that copy's last extent rounded to a multiple of a
 * and a copy of it by phases (cache_read k pad 3, its phase loop innermost: phase_inner), which k reads at unit
 * stride along x; its last spatial axis x
 * and the one before it y split by the annotation's factors; the loops ordered outer axes, y outer, x outer, y
 * inner, x inner, the window; the first a->par loops parallel (each apart: a copy computed at one has a buffer per
 * iteration), x inner vectorized and the window's loops unrolled, so that the window is accumulated in a register
 * per lane (te_emit); the copies computed at loop a->at (or at root), the padded copy at its copy by phases. */
static void pool_steps(Writer *w, const SketchStage *st, int k, const SketchAnn *a) {
    const TeStage *ts = &w->dag->stages[k];
    int ns = ts->n_spatial, nr = ts->n_reduce, first_pad = w->idx[k];
    int64_t phases = 0;
    int phased = pool_phased(w->dag, st, k, &phases);
    if (phased >= 0) {
        w_cache_read(w, k, w_cache_read(w, k, phased, 2, (int)phases), 3, 0);
        phase_inner(w, first_pad + 1, w->dag->prog->tensors[phased].ndim);
    } else {
        w_pad(w, st, k);
    }
    int n_copies = w->idx[k] - first_pad, two = ns >= 2;
    int64_t fx = a ? a->f[ns - 1][0] : 1, fy = a && two ? a->f[ns - 2][0] : 1;
    w_split(w, k, ns - 1, &fx, 1);
    if (two) w_split(w, k, ns - 2, &fy, 1);
    int64_t perm[STEP_MAX_ARGS];
    int np = 0, yo = two ? ns - 2 : -1, xo = two ? ns : ns - 1;
    for (int i = 0; i < ns - 2; i++)
        perm[np++] = i;
    if (two) perm[np++] = yo;
    perm[np++] = xo;
    if (two) perm[np++] = yo + 1;
    perm[np++] = xo + 1;
    for (int r = 0; r < nr; r++)
        perm[np++] = xo + 2 + r;
    w_reorder(w, k, perm);
    if (!a) return;
    int outer = two ? ns : 1, xi = outer + two; /* loops outside y inner; x inner's position */
    int par = a->par < outer ? a->par : outer;
    for (int i = 0; i < par; i++)
        w_one(w, STEP_PARALLEL, k, i);
    if (a->vec && fx > 1) w_one(w, STEP_VECTORIZE, k, xi);
    for (int r = 0; r < nr; r++)
        if (w->L[k].ext[xi + 1 + r] > 1) w_one(w, STEP_UNROLL, k, xi + 1 + r);
    const int64_t *unrolls;
    int n_unroll = Sketch_unrollSet(0, &unrolls), u = a->unroll < n_unroll ? a->unroll : n_unroll - 1;
    int64_t lanes = a->at >= 0 ? 1 : a->vec && fx > 1 ? fx : 1; /* the limit reaches copies computed inside */
    if (u > 0 && unrolls[u] > 0) w_two(w, STEP_AUTO_UNROLL, k, 0, auto_unroll_limit(unrolls[u], 0, lanes));
    if (a->at < 0) return;
    int64_t where[2] = {w->idx[k], a->at < outer ? a->at : outer - 1};
    if (phased >= 0) { /* the copy by phases at k's loop, the padded copy at the first loop of that one */
        int64_t at_ph[2] = {first_pad + 1, 0};
        put_raw(w, STEP_COMPUTE_AT, first_pad + 1, where, 2);
        put_raw(w, STEP_COMPUTE_AT, first_pad, at_ph, 2);
        return;
    }
    for (int p = 0; p < n_copies; p++)
        put_raw(w, STEP_COMPUTE_AT, first_pad + p, where, 2);
}

/* The loops of every stage before any step: its spatial axes, then its reduction axes. */
static void init_loops(Writer *w, const TeDag *dag) {
    for (int k = 0; k < dag->n_stages; k++) {
        const TeStage *ts = &dag->stages[k];
        Loops *L = &w->L[k];
        w->idx[k] = k;
        L->n = 0;
        for (int a = 0; a < ts->n_spatial; a++)
            L->ext[L->n] = dag->prog->vars[ts->spatial[a]].extent, L->red[L->n++] = 0;
        for (int a = 0; a < ts->n_reduce; a++)
            L->ext[L->n] = dag->prog->vars[ts->reduce[a]].extent, L->red[L->n++] = 1;
    }
}

/* A fused stage: at its consumer's tile, after its first (at = 0) or second level of spatial loops. */
static void fused_steps(Writer *w, const Sketch *sk, const TeDag *dag, const SketchAnn *ann, int k) {
    const SketchStage *st = &sk->st[k];
    const SketchAnn *a = ann ? &ann[k] : NULL;
    int lev[SKETCH_AXES], per_level[3] = {0};
    int c = st->consumer, nc = sk_axis_levels(dag, c, SK_CONSUMER, sk->gpu, lev);
    for (int x = 0; x < nc; x++)
        for (int l = 0; l < lev[x] && l < 3; l++)
            per_level[l]++;
    int level = a && a->at == 1 ? 1 : 0;
    int pos = per_level[0] + (level ? per_level[1] : 0) - 1;
    if (w->front[c] > 1) pos = pos < w->front[c] ? 0 : pos - w->front[c] + 1; /* the consumer's outer loops fused */
    if (pos >= w->L[c].n - 1) pos = w->L[c].n - 2;                            /* never at the vectorized loop */
    if (pos < 0) pos = 0;
    if (!sk->gpu) w_pad(w, st, k);
    w_two(w, STEP_COMPUTE_AT, k, c, pos);
    if (!sk->gpu) {
        int64_t box[TE_MAX_DIMS];
        sk_tile_box(dag, c, SK_CONSUMER, ann ? &ann[c] : NULL, !level, box);
        local_loops(w, w->idx[k], k, box, a);
    }
}

/* A stage at root (its own loop nest, or computed at a loop of its consumer); true when its steps are all
 * written, false when the annotation's loops (parallel, vectorize, unroll) follow. */
static bool root_steps(Writer *w, const Sketch *sk, const TeDag *dag, const SketchAnn *ann, int k) {
    const TeStage *ts = &dag->stages[k];
    const SketchAnn *a = ann ? &ann[k] : NULL;
    Loops *L = &w->L[k];
    if (a && sk_may_move(sk, dag, k) && a->at >= 0) {
        const Loops *C = &w->L[ts->consumers[0]];
        /* not at or inside the consumer's vectorized loop (its innermost) */
        int room = outside_simd(sk, dag, ts->consumers[0], C);
        /* nor under a fused loop: the region one of its iterations reads is the whole fused box */
        if (room > 0 && w->front[ts->consumers[0]] <= 1) {
            w_two(w, STEP_COMPUTE_AT, k, ts->consumers[0], a->at % room);
            if (sk_const_unrolled(sk, dag, k)) const_steps(w, k, sk_const_unrolled(sk, dag, k), a, 0, 0);
            return true;
        }
    }
    if (sk_const_unrolled(sk, dag, k)) {
        const_steps(w, k, sk_const_unrolled(sk, dag, k), a, 1, ann && hosts(sk, dag, ann, k));
        return true;
    }
    if (!sk->gpu) transpose_order(w, k);
    if (!ts->red && a && a->vec && !sk->gpu && L->n >= 1 && a->f[ts->n_spatial - 1][0] > 1) {
        int64_t f = a->f[ts->n_spatial - 1][0];
        w_split(w, k, ts->n_spatial - 1, &f, 1);
    }
    if (ts->red && a && a->vec && !sk->gpu && ts->n_spatial >= 1 &&
        sk_reads_along(ts, ts->spatial[ts->n_spatial - 1])) {
        /* a reduction without reuse whose reads run along the last spatial axis (pooling): the reduction
         * loops go outside that axis, which is vectorized */
        int64_t perm[STEP_MAX_ARGS];
        int np = 0, ns = ts->n_spatial;
        for (int x = 0; x < ns - 1; x++)
            perm[np++] = x;
        for (int r = 0; r < ts->n_reduce; r++)
            perm[np++] = ns + r;
        perm[np++] = ns - 1;
        w_reorder(w, k, perm);
    }
    return false;
}

/* An rfactor stage: its tiles, and S.rf with its reader at the consumer's row when the annotation says so. */
static void rfactor_steps(Writer *w, const Sketch *sk, const TeDag *dag, const SketchAnn *a, int k) {
    const TeStage *ts = &dag->stages[k];
    rf_tile(w, k, a);
    if (a && a->at == 0 && sk_rf_at_row(sk, dag, k) && w->front[ts->consumers[0]] <= 1 &&
        outside_simd(sk, dag, ts->consumers[0], &w->L[ts->consumers[0]]) > 0) {
        w_two(w, STEP_COMPUTE_AT, k, ts->consumers[0], 0); /* the reader first, then S.rf at its loop */
        int64_t where[2] = {w->idx[ts->consumers[0]], 0};
        put_raw(w, STEP_COMPUTE_AT, w->idx[k] - 1, where, 2);
    }
}

/* The annotation's loops of stage k: the outer loops bound (gpu) or fused and parallel (cpu), the innermost
 * vectorized, the auto-unroll limit. */
static void annotation_loops(Writer *w, const Sketch *sk, const TeDag *dag, const SketchAnn *ann, int k) {
    const SketchStage *st = &sk->st[k];
    const SketchAnn *a = &ann[k];
    Loops *L = &w->L[k];
    const int64_t *unrolls;
    int n_unroll = Sketch_unrollSet(sk->gpu, &unrolls);
    int64_t lanes = 1; /* of the innermost loop, when it is vectorized */
    if (sk->gpu) {
        int lead = leading_spatial(L);
        if (lead > 0) {
            w_fuse(w, k, 0, lead);
            int64_t t = a->f[0][0] > 1 ? a->f[0][0] : 1;
            if (t > 1 && t < L->ext[0]) {
                w_split(w, k, 0, &t, 1);
                w_two(w, STEP_BIND, k, 0, 0);
                w_two(w, STEP_BIND, k, 1, 3);
            } else {
                w_two(w, STEP_BIND, k, 0, L->ext[0] <= 1024 ? 3 : 0);
            }
        }
    } else {
        int lead = leading_spatial(L);
        int par = a->par < lead ? a->par : lead; /* a stage computed inside gets a buffer per iteration */
        if (st->how == SK_CONSUMER && par > sk_level0_loops(dag, k)) par = sk_level0_loops(dag, k);
        if (par > 0 && a->vec && par >= L->n) par = L->n - 1; /* keep the innermost loop to vectorize */
        if (st->how == SK_CONSUMER) { /* parallel, not fused (a fused producer's box would be the whole tensor) */
            for (int i = 0; i < par; i++)
                w_one(w, STEP_PARALLEL, k, i);
        } else if (par > 0) {
            w_fuse(w, k, 0, par);
            w_one(w, STEP_PARALLEL, k, 0);
        }
        if (a->vec && L->n >= 2 && !L->red[L->n - 1] && L->ext[L->n - 1] > 1 && !(par > 0 && L->n - 1 == 0)) {
            w_one(w, STEP_VECTORIZE, k, L->n - 1);
            lanes = L->ext[L->n - 1];
        }
    }
    int u = a->unroll < n_unroll ? a->unroll : n_unroll - 1;
    if (hosts(sk, dag, ann, k)) lanes = 1; /* the limit reaches the loops of the stage inside */
    if (u > 0 && unrolls[u] > 0) w_two(w, STEP_AUTO_UNROLL, k, 0, auto_unroll_limit(unrolls[u], sk->gpu, lanes));
}

void Sketch_steps(const Sketch *sk, const TeDag *dag, const SketchAnn *ann, Steps *out) {
    out->n = 0;
    Writer w = {.dag = dag, .cores = sk->cores, .out = out, .tensors = dag->prog->n_tensors};
    init_loops(&w, dag);
    for (int k = dag->n_stages - 1; k >= 0; k--) {
        const SketchStage *st = &sk->st[k];
        const SketchAnn *a = ann ? &ann[k] : NULL;
        switch (st->how) {
        case SK_INLINE:
            put(&w, STEP_COMPUTE_INLINE, k, NULL, 0);
            continue;
        case SK_FUSED:
            fused_steps(&w, sk, dag, ann, k);
            continue;
        case SK_ROOT:
            if (root_steps(&w, sk, dag, ann, k)) continue;
            break;
        case SK_RFACTOR:
            rfactor_steps(&w, sk, dag, a, k);
            continue;
        case SK_POOL:
            pool_steps(&w, st, k, a);
            continue;
        case SK_TILED:
        case SK_INPLACE:
        case SK_CONSUMER:
            if (st->how == SK_TILED) {
                if (sk->gpu)
                    gpu_tile(&w, k, a);
                else
                    cpu_tile(&w, st, k, a);
                continue;
            }
            if (!sk->gpu) w_pad(&w, st, k);
            tile(&w, k, st->how, sk->gpu, a);
            break;
        }
        if (a) annotation_loops(&w, sk, dag, ann, k); /* else the bare sketch */
    }
}
