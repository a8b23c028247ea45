/* kernels/templates/te/te_sketch.c: sketch rules, annotation and the steps of
 * an annotated sketch (see te_sketch.h). Steps are written through a small
 * model of each stage's loops, so every step names a loop that exists. */
#include "kernels/templates/te/te_sketch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "kernels/templates/te/te_lower.h"

static const char *const RULE_NAMES[RULE_KINDS] = {"always-inline",
                                                   "rfactor",
                                                   "add cache stage",
                                                   "multi-level tiling with fusion",
                                                   "multi-level tiling",
                                                   "shared-memory cache_read",
                                                   "cross-thread reduction",
                                                   "padded window",
                                                   "skip"};

const char *SketchRule_name(SketchRule r) { return r >= 0 && r < RULE_KINDS ? RULE_NAMES[r] : "?"; }

/* The tile structure of a tiled stage. On GPUs the reduction goes into a
 * cache_write stage computed per thread, and its copy is tiled over the
 * spatial axes: blockIdx, a level run inside the thread (where vthread would
 * be), threadIdx, the thread's tile. On cpu the copy is tiled SS and the
 * cache_write stage (the local accumulator) is computed at its second level,
 * so that its box is the register tile, and runs RRS: outer and inner
 * reduction loops around the register tile (innermost axis vectorized, the
 * others unrolled): the compiler keeps the accumulators in registers only
 * when the accumulation covers exactly the register tile. */
static const char *structure(int gpu) { return gpu ? "SSSS" : "SS(RRS)"; }

/* ---- rules -------------------------------------------------------------------- */

static int64_t axes_product(const TeDag *dag, const int *vars, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= dag->prog->vars[vars[i]].extent;
    return p;
}

/* rfactor pays when the reduction is longer than the spatial work and the
 * spatial loops alone cannot keep the cores busy */
static int needs_rfactor(const TeDag *dag, const TeStage *ts, int cores) {
    if (!ts->red || ts->data_reuse) return 0;
    int64_t sp = axes_product(dag, ts->spatial, ts->n_spatial), red = axes_product(dag, ts->reduce, ts->n_reduce);
    return !(sp > red || sp > (int64_t)cores * 16);
}

static int uses_var(const TeExpr *e, int var) {
    if (e->kind == TE_VAR) return e->var == var;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && uses_var(e->kid[i], var)) return 1;
    return 0;
}

/* Whether some read of stage ts moves with variable var in its innermost index. */
/* Whether a read of stage ts that moves along variable vx has an index
 * that adds variables y and r (a sliding window: X[.., y + r, ..]): copies of
 * r's loop then share rows of y's. */
static int slides(const TeStage *ts, int vx, int y, int r) {
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        if (!ts->access[i].in_reduce || !uses_var(at, vx)) continue;
        for (int d = 0; d < at->n_kids; d++)
            if (at->kid[d] && uses_var(at->kid[d], y) && uses_var(at->kid[d], r)) return 1;
    }
    return 0;
}

static int reads_along(const TeStage *ts, int var) {
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        if (at->n_kids > 0 && uses_var(at->kid[at->n_kids - 1], var)) return 1;
    }
    return 0;
}

/* The reduction axis rfactor splits on cpu, or -1: the one along which the
 * reads' innermost index moves (step 1) when no read's innermost index moves
 * with the last spatial axis (a dense layer's W[j, k]: vectorizing j would
 * gather, k is contiguous), or the last reduction axis when the reduction is
 * long and the spatial work small (needs_rfactor); the axis needs a divisor
 * between 2 and 64. Reads of a constant tensor do not count. */
static int rfactor_axis(const TeDag *dag, int k, int cores) {
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
                moves |= uses_var(at->kid[d], ts->reduce[r]);
        for (int v = 0; v < lin.n; v++) {
            if (lin.var[v] == last && moves) spatial_inner = 1;
            for (int r = 0; r < ts->n_reduce; r++)
                if (lin.var[v] == ts->reduce[r] && lin.coef[v] == 1 && found < 0) found = r;
        }
    }
    if (spatial_inner) found = -1;
    if (found < 0 && needs_rfactor(dag, ts, cores)) found = ts->n_reduce - 1;
    if (found < 0) return -1;
    int64_t e = dag->prog->vars[ts->reduce[found]].extent;
    for (int64_t f = 2; f <= 64 && f <= e; f++)
        if (e % f == 0) return found;
    return -1;
}

/* Whether e calls exp, log, tanh or erf: tens of instructions per element. */
static int transcendental(const TeExpr *e) {
    if (e->kind == TE_CALL && (e->op == TE_EXP || e->op == TE_LOG || e->op == TE_TANH || e->op == TE_ERF)) return 1;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && transcendental(e->kid[i])) return 1;
    return 0;
}

/* An inlinable stage that inlining would compute more than once per element: read by several stages (softmax's
 * exp, read by the sum and by the division), with transcendental math in it. Kept as a stage of its own
 * (vectorized) in a fork, it is computed once. */
static int costly_to_inline(const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    return ts->inlinable && ts->n_consumers > 1 && transcendental(dag->prog->tensors[ts->tensor].body);
}

static void note_add(Sketch *sk, const char *text) {
    if (strstr(sk->note, text)) return;
    size_t len = strlen(sk->note);
    snprintf(sk->note + len, sizeof sk->note - len, "%s%s", len ? "; " : "", text);
}

static int rfactor_stages(const Sketch *sk) {
    int n = 0;
    for (int k = 0; k < sk->n_stages; k++)
        n += sk->st[k].how == SK_RFACTOR;
    return n;
}

#define POOL_WINDOW 64 /* most elements a pooling-like stage's window has */

/* Whether stage k reads tensor t through padding (a padded copy applies). */
static int reads_padded(const TeDag *dag, int k, int t) {
    int64_t lo[TE_MAX_DIMS], shape[TE_MAX_DIMS];
    double fill;
    return LoopNest_padded(dag, k, t, lo, shape, &fill, NULL);
}

int Sketch_pooling(const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    if (!ts->red || ts->data_reuse || ts->n_spatial == 0 || axes_product(dag, ts->reduce, ts->n_reduce) > POOL_WINDOW)
        return 0;
    for (int i = 0; i < ts->n_access; i++)
        if (reads_padded(dag, k, ts->access[i].tensor)) return 1;
    return 0;
}

int Sketch_generate(const TeDag *dag, int gpu, int cores, Sketch *out) {
    int n = 1;
    memset(&out[0], 0, sizeof out[0]);
    out[0].gpu = gpu;
    out[0].cores = cores > 0 ? cores : 1;
    out[0].n_stages = dag->n_stages;
    for (int k = 0; k < dag->n_stages; k++)
        out[0].st[k] = (SketchStage){.how = SK_ROOT, .consumer = -1};
    for (int k = 0; k < dag->n_stages && !gpu; k++) { /* forks copy it */
        int tiled = dag->stages[k].data_reuse || Sketch_pooling(dag, k);
        for (int i = 0; i < dag->stages[k].n_access && tiled; i++) {
            int t = dag->stages[k].access[i].tensor;
            if (t < 64 && !(out[0].st[k].pad >> t & 1) && reads_padded(dag, k, t)) out[0].st[k].pad |= (uint64_t)1 << t;
        }
    }
    for (int k = dag->n_stages - 1; k >= 0; k--) {
        const TeStage *ts = &dag->stages[k];
        int n_now = n;
        for (int i = 0; i < n_now; i++) {
            Sketch *sk = &out[i];
            SketchStage *st = &sk->st[k];
            if (gpu && ts->data_reuse) {
                st->rules |= 1u << RULE_SHARED_READ;
                note_add(sk,
                         "shared-memory cache_read: not applied (a cache stage at the block's tile could not be tiled "
                         "across the threads), inputs read from global memory");
            }
            if (ts->inlinable && !gpu && costly_to_inline(dag, k) && n < SKETCH_MAX) {
                /* this one computes it once, in its own loop nest (skip below); a fork inlines it */
                Sketch *f = &out[n++];
                *f = *sk;
                f->st[k].rules |= 1u << RULE_INLINE;
                f->st[k].how = SK_INLINE;
            } else if (ts->inlinable) {
                st->rules |= 1u << RULE_INLINE;
                st->how = SK_INLINE;
                continue;
            }
            if (!gpu && Sketch_pooling(dag, k)) { /* over a padded copy, the window innermost */
                st->rules |= 1u << RULE_WINDOW;
                st->how = SK_POOL;
                continue;
            }
            if (gpu && ts->red && !ts->data_reuse) {
                st->rules |= 1u << RULE_CROSS_THREAD;
                note_add(sk, "cross-thread reduction: no step yet, one thread per output element");
            }
            if (gpu && needs_rfactor(dag, ts, cores)) {
                st->rules |= 1u << RULE_RFACTOR;
                note_add(sk, "rfactor: no step yet, the reduction stays serial");
            }
            if (!gpu && rfactor_axis(dag, k, cores) >= 0 &&
                n < SKETCH_MAX) { /* fork: the reduction split, its inner part vectorized; this one goes on */
                Sketch *f = &out[n++];
                *f = *sk;
                f->st[k].rules |= 1u << RULE_RFACTOR;
                f->st[k].how = SK_RFACTOR;
            }
            if (!gpu && ts->data_reuse && ts->fusible_consumer < 0) {
                /* this one gets the local accumulator (tiled SS(RRS)); a fork tiles in place */
                if (n < SKETCH_MAX) {
                    Sketch *f = &out[n++];
                    *f = *sk;
                    f->st[k].rules |= 1u << RULE_TILE;
                    f->st[k].how = SK_INPLACE;
                }
                st->rules |= 1u << RULE_CACHE_WRITE | 1u << RULE_TILE;
                st->how = SK_TILED;
                continue;
            }
            int c = ts->fusible_consumer;
            if (!gpu && ts->data_reuse && c >= 0 && sk->st[c].how == SK_ROOT && n < SKETCH_MAX) {
                /* fork: the fused sketch, and this one with plain tiling */
                Sketch *f = &out[n++];
                *f = *sk;
                f->st[k].rules |= 1u << RULE_TILE_FUSION;
                f->st[k].how = SK_FUSED;
                f->st[k].consumer = c;
                f->st[c].how = SK_CONSUMER;
                f->st[c].rules = (f->st[c].rules & ~(1u << RULE_SKIP)) | 1u << RULE_TILE_FUSION;
            }
            if (ts->data_reuse) {
                st->rules |= 1u << RULE_TILE;
                st->how = gpu ? SK_TILED : SK_INPLACE;
                continue;
            }
            st->rules |= 1u << RULE_SKIP;
        }
    }
    /* the sketches with more rfactor stages first (stable): sketch 0's default is the zero-trial choice, and a
     * reduction whose reads run along it is vectorized only there */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && rfactor_stages(&out[j]) > rfactor_stages(&out[j - 1]); j--) {
            Sketch t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        int any = 0;
        for (int k = 0; k < dag->n_stages; k++)
            any |= out[i].st[k].rules & ~(1u << RULE_SKIP);
        if (!any) note_add(&out[i], "no rule but skip applies: every stage keeps its own loop nest, annotated only");
    }
    return n;
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
static int axis_levels(const TeDag *dag, int k, int how, int gpu, int *lev) {
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

static int64_t axis_extent(const TeDag *dag, int k, int a) {
    const TeStage *ts = &dag->stages[k];
    return dag->prog->vars[a < ts->n_spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial]].extent;
}

/* Splits every axis of stage k into its levels (factors from ann, or 1) and
 * orders the loops as the structure says ("SSRSRS"; a consumer: "SSS"). */
static void tile(Writer *w, int k, int how, int gpu, const SketchAnn *ann) {
    const TeStage *ts = &w->dag->stages[k];
    int lev[SKETCH_AXES];
    int n = axis_levels(w->dag, k, how, gpu, lev);
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
            if (uses_var(inner, ts->spatial[x])) {
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
                if (at->kid[d] && uses_var(at->kid[d], var)) mask |= 1u << x;
        }
    }
    return mask;
}

/* The axes of stage k that its loops unroll innermost as a product with a small constant (cpu, a stage at root),
 * or 0: a reduction whose axes all index a constant, the last spatial axis not (it is the vectorized one, of at
 * least CONST_MIN_LANES elements), at most SKETCH_MAX_UNROLLED copies of the statement. */
#define CONST_MIN_LANES 8
static unsigned const_unrolled(const Sketch *sk, const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    if (sk->gpu || sk->st[k].how != SK_ROOT || !ts->red || ts->n_spatial < 1 ||
        axis_extent(dag, k, ts->n_spatial - 1) < CONST_MIN_LANES)
        return 0;
    unsigned mask = const_index_axes(dag, k), all_red = ((1u << ts->n_reduce) - 1) << ts->n_spatial;
    if ((mask & all_red) != all_red || (mask >> (ts->n_spatial - 1) & 1)) return 0;
    int64_t copies = 1;
    for (int x = 0; x < ts->n_spatial + ts->n_reduce; x++)
        if (mask >> x & 1) copies *= axis_extent(dag, k, x);
    return copies <= SKETCH_MAX_UNROLLED ? mask : 0;
}

static int bits(unsigned m) { return __builtin_popcount(m); }

/* The loops of consumer c outside its vectorized one, where a producer may be computed (all but the innermost
 * unless c's product with a constant unrolls loops inside the vectorized one). */
static int outside_simd(const Sketch *sk, const TeDag *dag, int c, const Loops *C) {
    return C->n - 1 - bits(const_unrolled(sk, dag, c));
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

static int may_move(const Sketch *sk, const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    if (sk->gpu || sk->st[k].how != SK_ROOT || ts->is_output || ts->n_consumers != 1) return 0;
    /* not at a consumer with a local accumulator (SK_TILED): the accumulator stage, not the consumer, reads it */
    SketchHow h = sk->st[ts->consumers[0]].how;
    return (h == SK_ROOT || h == SK_INPLACE) && reads_linear(dag, ts->consumers[0], k);
}

/* Whether rfactor stage k (cpu) may be computed, with its S.rf and local, at the outermost loop of its one
 * consumer, a stage of its own that reads it at linear indices (SketchAnn.at 0; -1 at root, 1 rf_blocks). */
static int rf_at_row(const Sketch *sk, const TeDag *dag, int k) {
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
static int rf_streams_shared(const Sketch *sk, const TeDag *dag, int k) {
    if (!rf_at_row(sk, dag, k)) return 0;
    const TeStage *ts = &dag->stages[k], *cs = &dag->stages[ts->consumers[0]];
    int r = rfactor_axis(dag, k, sk->cores);
    int costly = transcendental(dag->prog->tensors[cs->tensor].body);
    for (int i = 0; r >= 0 && i < ts->n_access; i++) {
        int t = ts->access[i].tensor;
        if (!ts->access[i].in_reduce || (dag->stage_of[t] < 0 && !costly) || !uses_var(ts->access[i].at, ts->reduce[r]))
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
            (((may_move(sk, dag, j) && ann[j].at >= 0) || (rf_at_row(sk, dag, j) && ann[j].at == 0)) &&
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
    axis_levels(dag, k, SK_TILED, 1, lev);
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
static void tile_box(const TeDag *dag, int t, SketchHow how, const SketchAnn *a, int at_level0, int64_t *box) {
    int lev[SKETCH_AXES];
    axis_levels(dag, t, how, 0, lev);
    for (int x = 0; x < dag->stages[t].n_spatial; x++)
        box[x] = !a || lev[x] < 3 ? 1 : (int64_t)a->f[x][1] * (at_level0 ? a->f[x][0] : 1);
}

static void local_loops(Writer *w, int raw, int k, const int64_t *box, const SketchAnn *a) {
    const TeDag *dag = w->dag;
    const TeStage *ts = &dag->stages[k];
    int64_t ext[SKETCH_AXES], inner[TE_MAX_DIMS];
    for (int x = 0; x < ts->n_spatial + ts->n_reduce; x++)
        ext[x] = axis_extent(dag, k, x);
    for (int r = 0; r < ts->n_reduce; r++)
        inner[r] = ext[ts->n_spatial + r] < 2 ? 0 : a ? a->f[ts->n_spatial + r][0] : 1;
    accum_loops(w, raw, ts->n_spatial, ts->n_reduce, ext, box, inner, a);
}

/* Loops at tile level 0 of a tiled stage or consumer on cpu (the ones that may run in parallel). */
static int level0_loops(const TeDag *dag, int k) { return dag->stages[k].n_spatial; }

/* The vector axis of tiled stage k on cpu: its last spatial axis tiled in three levels, or -1. */
static int vector_axis(const TeDag *dag, int k, SketchHow how) {
    int lev[SKETCH_AXES], vx = -1;
    axis_levels(dag, k, how, 0, lev);
    for (int x = 0; x < dag->stages[k].n_spatial; x++)
        if (lev[x] == 3) vx = x;
    return vx;
}

/* The tensor that tiled stage k (a local accumulator, cpu) reads along its vector axis in its last index only,
 * with a reduction variable and no other tiled spatial variable (matmul's B[k, j]), or -1. Every register tile
 * reads its column strip along the reduction at the row stride (4 KiB for 1024 floats: the strip's lines share
 * a few cache sets and come from L3); an annotation may copy that strip, contiguous, at the copy's level-0 loop
 * of the vector axis (Sketch_packs), once for every register tile of the strip. */
static int packed_input(const TeDag *dag, const SketchStage *st, int k) {
    const TeStage *ts = &dag->stages[k];
    int vx = st->how == SK_TILED ? vector_axis(dag, k, SK_TILED) : -1, found = -1, lev[SKETCH_AXES];
    if (vx < 0) return -1;
    axis_levels(dag, k, SK_TILED, 0, lev);
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        int t = ts->access[i].tensor, n = at->n_kids, ok = n >= 1, red = 0;
        if (dag->prog->tensors[t].is_const || (t < 64 && st->pad >> t & 1)) continue;
        for (int d = 0; d < n; d++)
            ok &= uses_var(at->kid[d], ts->spatial[vx]) == (d == n - 1);
        for (int x = 0; x < ts->n_spatial; x++)
            ok &= x == vx || lev[x] < 3 || !uses_var(at, ts->spatial[x]);
        for (int r = 0; r < ts->n_reduce; r++)
            red |= uses_var(at, ts->reduce[r]);
        if (!ok || !red) continue;
        if (found >= 0 && found != t) return -1; /* one such tensor */
        found = t;
    }
    return found;
}

int Sketch_packs(const Sketch *sk, const TeDag *dag, int k) {
    return !sk->gpu && sk->vector >= 1 && sk->vector < 16 && k >= 0 && k < dag->n_stages &&
           packed_input(dag, &sk->st[k], k) >= 0;
}

/* A tiled stage on cpu: cache_write; the copy tiled SSS, its level-0 loops
 * fused and parallel, its innermost loop vectorized; the accumulation
 * computed at the copy's last level-1 loop (its box: the register tile) with
 * the loops of local_loops. */
static void cpu_tile(Writer *w, const SketchStage *st, int k, const SketchAnn *a) {
    const TeStage *ts = &w->dag->stages[k];
    w_pad(w, st, k);
    int local = w_cache_write(w, k), pk = a && a->at >= 0 ? packed_input(w->dag, st, k) : -1, copy = -1;
    if (pk >= 0) { /* a copy of pk for the accumulation, just before it */
        int64_t args[2] = {pk, 0};
        put_raw(w, STEP_CACHE_READ, local, args, 2);
        for (int j = 0; j < w->dag->n_stages; j++)
            if (w->idx[j] >= local) w->idx[j]++;
        copy = local++;
    }
    tile(w, k, SK_TILED, 0, a);
    int lev[SKETCH_AXES], at = -1, pos = 0;
    axis_levels(w->dag, k, SK_TILED, 0, lev);
    for (int level = 0; level < 3; level++)
        for (int x = 0; x < ts->n_spatial; x++)
            if (level < lev[x]) {
                if (level <= 1) at = pos;
                pos++;
            }
    Loops *L = &w->L[k];
    if (a) {
        int par = a->par < level0_loops(w->dag, k) ? a->par : level0_loops(w->dag, k);
        if (par > 0 && par > at) par = at; /* the loop the accumulation is computed at stays */
        for (int i = 0; i < par; i++)      /* not fused: the box of a fused loop's body would be the whole tensor */
            w_one(w, STEP_PARALLEL, k, i);
        if (a->vec && L->n >= 2 && L->ext[L->n - 1] > 1 && at < L->n - 1) w_one(w, STEP_VECTORIZE, k, L->n - 1);
    }
    int64_t where[2] = {w->idx[k], at < 0 ? 0 : at};
    put_raw(w, STEP_COMPUTE_AT, local, where, 2);
    int64_t box[TE_MAX_DIMS];
    tile_box(w->dag, k, SK_TILED, a, 0, box);
    local_loops(w, local, k, box, a);
    if (copy >= 0) { /* at the level-0 loop of the vector axis (the copy's loop vx), its rows vectorized */
        int64_t strip[2] = {w->idx[k], vector_axis(w->dag, k, SK_TILED)}, last = w->dag->prog->tensors[pk].ndim - 1;
        put_raw(w, STEP_COMPUTE_AT, copy, strip, 2);
        put_raw(w, STEP_VECTORIZE, copy, &last, 1);
    }
}

/* The rows of an rfactor sketch: its last spatial axis longer than 1, or -1. */
static int rf_rows(const TeDag *dag, int k) {
    int x = -1;
    for (int i = 0; i < dag->stages[k].n_spatial; i++)
        if (axis_extent(dag, k, i) > 1) x = i;
    return x;
}

/* Another location for rfactor stage k than at: root (-1), at its consumer's row (0: rf_at_row) or S.rf per
 * block of rows (1: rf_blocks), of those its DAG allows. */
static int8_t rf_other_at(const Sketch *sk, const TeDag *dag, int k, int8_t at, Rng *rng) {
    int8_t opt[3];
    int n = 0;
    opt[n++] = -1;
    if (rf_at_row(sk, dag, k)) opt[n++] = 0;
    if (rf_rows(dag, k) >= 0) opt[n++] = 1;
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
static int rf_streams_rows(const TeDag *dag, int k, int cores) {
    const TeStage *ts = &dag->stages[k];
    int x = rf_rows(dag, k), r = rfactor_axis(dag, k, cores);
    if (x < 0 || r < 0 || ts->red->op != TE_SUM) return 0;
    if (axes_product(dag, ts->spatial, ts->n_spatial) != axis_extent(dag, k, x)) return 0; /* one row of X */
    int vx = ts->spatial[x], vr = ts->reduce[r], rows = 0, vector = 0;
    for (int i = 0; i < ts->n_access; i++) {
        const TeExpr *at = ts->access[i].at;
        if (!ts->access[i].in_reduce || dag->prog->tensors[ts->access[i].tensor].is_const || !uses_var(at, vr))
            continue;
        if (uses_var(at, vx))
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
    int ns = ts->n_spatial, nr = ts->n_reduce, r = rfactor_axis(dag, k, w->cores);
    int64_t ext[SKETCH_AXES], none[TE_MAX_DIMS] = {0}, box[TE_MAX_DIMS + 1];
    for (int i = 0; i < ns; i++)
        ext[i] = axis_extent(dag, k, i), box[i] = i == x ? J : 1;
    ext[ns] = box[ns] = F;
    for (int i = 0; i < nr; i++)
        ext[ns + 1 + i] = i == r ? axis_extent(dag, k, ns + i) / F : axis_extent(dag, k, ns + i);
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
    int ns = ts->n_spatial, r = rfactor_axis(dag, k, w->cores), x = rf_rows(dag, k);
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

void Sketch_steps(const Sketch *sk, const TeDag *dag, const SketchAnn *ann, Steps *out) {
    out->n = 0;
    Writer w = {.dag = dag, .cores = sk->cores, .out = out, .tensors = dag->prog->n_tensors};
    for (int k = 0; k < dag->n_stages; k++) {
        const TeStage *ts = &dag->stages[k];
        Loops *L = &w.L[k];
        w.idx[k] = k;
        L->n = 0;
        for (int a = 0; a < ts->n_spatial; a++)
            L->ext[L->n] = dag->prog->vars[ts->spatial[a]].extent, L->red[L->n++] = 0;
        for (int a = 0; a < ts->n_reduce; a++)
            L->ext[L->n] = dag->prog->vars[ts->reduce[a]].extent, L->red[L->n++] = 1;
    }
    const int64_t *unrolls;
    int n_unroll = Sketch_unrollSet(sk->gpu, &unrolls);
    for (int k = dag->n_stages - 1; k >= 0; k--) {
        const TeStage *ts = &dag->stages[k];
        const SketchStage *st = &sk->st[k];
        const SketchAnn *a = ann ? &ann[k] : NULL;
        Loops *L = &w.L[k];
        switch (st->how) {
        case SK_INLINE:
            put(&w, STEP_COMPUTE_INLINE, k, NULL, 0);
            continue;
        case SK_FUSED: {
            /* at the consumer's tile: after its first (at = 0) or second level of spatial loops */
            int lev[SKETCH_AXES], per_level[3] = {0};
            int c = st->consumer, nc = axis_levels(dag, c, SK_CONSUMER, sk->gpu, lev);
            for (int x = 0; x < nc; x++)
                for (int l = 0; l < lev[x] && l < 3; l++)
                    per_level[l]++;
            int level = a && a->at == 1 ? 1 : 0;
            int pos = per_level[0] + (level ? per_level[1] : 0) - 1;
            if (w.front[c] > 1)
                pos = pos < w.front[c] ? 0 : pos - w.front[c] + 1; /* the consumer's outer loops fused */
            if (pos >= w.L[c].n - 1) pos = w.L[c].n - 2;           /* never at the vectorized loop */
            if (pos < 0) pos = 0;
            if (!sk->gpu) w_pad(&w, st, k);
            w_two(&w, STEP_COMPUTE_AT, k, c, pos);
            if (!sk->gpu) {
                int64_t box[TE_MAX_DIMS];
                tile_box(dag, c, SK_CONSUMER, ann ? &ann[c] : NULL, !level, box);
                local_loops(&w, w.idx[k], k, box, a);
            }
            continue;
        }
        case SK_ROOT:
            if (a && may_move(sk, dag, k) && a->at >= 0) {
                const Loops *C = &w.L[ts->consumers[0]];
                /* not at or inside the consumer's vectorized loop (its innermost) */
                int room = outside_simd(sk, dag, ts->consumers[0], C);
                /* nor under a fused loop: the region one of its iterations reads is the whole fused box */
                if (room > 0 && w.front[ts->consumers[0]] <= 1) {
                    w_two(&w, STEP_COMPUTE_AT, k, ts->consumers[0], a->at % room);
                    if (const_unrolled(sk, dag, k)) const_steps(&w, k, const_unrolled(sk, dag, k), a, 0, 0);
                    continue;
                }
            }
            if (const_unrolled(sk, dag, k)) {
                const_steps(&w, k, const_unrolled(sk, dag, k), a, 1, ann && hosts(sk, dag, ann, k));
                continue;
            }
            if (!sk->gpu) transpose_order(&w, k);
            if (!ts->red && a && a->vec && !sk->gpu && L->n >= 1 && a->f[ts->n_spatial - 1][0] > 1) {
                int64_t f = a->f[ts->n_spatial - 1][0];
                w_split(&w, k, ts->n_spatial - 1, &f, 1);
            }
            if (ts->red && a && a->vec && !sk->gpu && ts->n_spatial >= 1 &&
                reads_along(ts, ts->spatial[ts->n_spatial - 1])) {
                /* a reduction without reuse whose reads run along the last spatial axis (pooling): the reduction
                 * loops go outside that axis, which is vectorized */
                int64_t perm[STEP_MAX_ARGS];
                int np = 0, ns = ts->n_spatial;
                for (int x = 0; x < ns - 1; x++)
                    perm[np++] = x;
                for (int r = 0; r < ts->n_reduce; r++)
                    perm[np++] = ns + r;
                perm[np++] = ns - 1;
                w_reorder(&w, k, perm);
            }
            break;
        case SK_RFACTOR:
            rf_tile(&w, k, a);
            if (a && a->at == 0 && rf_at_row(sk, dag, k) && w.front[ts->consumers[0]] <= 1 &&
                outside_simd(sk, dag, ts->consumers[0], &w.L[ts->consumers[0]]) > 0) {
                w_two(&w, STEP_COMPUTE_AT, k, ts->consumers[0], 0); /* the reader first, then S.rf at its loop */
                int64_t where[2] = {w.idx[ts->consumers[0]], 0};
                put_raw(&w, STEP_COMPUTE_AT, w.idx[k] - 1, where, 2);
            }
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
        if (!a) continue;  /* the bare sketch */
        int64_t lanes = 1; /* of the innermost loop, when it is vectorized */
        if (sk->gpu) {
            int lead = leading_spatial(L);
            if (lead > 0) {
                w_fuse(&w, k, 0, lead);
                int64_t t = a->f[0][0] > 1 ? a->f[0][0] : 1;
                if (t > 1 && t < L->ext[0]) {
                    w_split(&w, k, 0, &t, 1);
                    w_two(&w, STEP_BIND, k, 0, 0);
                    w_two(&w, STEP_BIND, k, 1, 3);
                } else {
                    w_two(&w, STEP_BIND, k, 0, L->ext[0] <= 1024 ? 3 : 0);
                }
            }
        } else {
            int lead = leading_spatial(L);
            int par = a->par < lead ? a->par : lead; /* a stage computed inside gets a buffer per iteration */
            if (st->how == SK_CONSUMER && par > level0_loops(dag, k)) par = level0_loops(dag, k);
            if (par > 0 && a->vec && par >= L->n) par = L->n - 1; /* keep the innermost loop to vectorize */
            if (st->how == SK_CONSUMER) { /* parallel, not fused (a fused producer's box would be the whole tensor) */
                for (int i = 0; i < par; i++)
                    w_one(&w, STEP_PARALLEL, k, i);
            } else if (par > 0) {
                w_fuse(&w, k, 0, par);
                w_one(&w, STEP_PARALLEL, k, 0);
            }
            if (a->vec && L->n >= 2 && !L->red[L->n - 1] && L->ext[L->n - 1] > 1 && !(par > 0 && L->n - 1 == 0)) {
                w_one(&w, STEP_VECTORIZE, k, L->n - 1);
                lanes = L->ext[L->n - 1];
            }
        }
        int u = a->unroll < n_unroll ? a->unroll : n_unroll - 1;
        if (hosts(sk, dag, ann, k)) lanes = 1; /* the limit reaches the loops of the stage inside */
        if (u > 0 && unrolls[u] > 0) w_two(&w, STEP_AUTO_UNROLL, k, 0, auto_unroll_limit(unrolls[u], sk->gpu, lanes));
    }
}

/* ---- annotation ------------------------------------------------------------------- */

/* A random divisor of e that is at most cap. */
static int64_t divisor(Rng *rng, int64_t e, int64_t cap) {
    int64_t div[128];
    int n = 0;
    for (int64_t f = 1; f <= e && f <= cap && n < 128; f++)
        if (e % f == 0) div[n++] = f;
    return div[Rng_below(rng, (uint64_t)n)];
}

/* Random factorization of axis a's extent into its inner levels (innermost at most 64). */
static void factorize(Rng *rng, int64_t e, int levels, int32_t *f) {
    int64_t rest = e;
    for (int l = levels - 2; l >= 0; l--) {
        f[l] = (int32_t)divisor(rng, rest, l == levels - 2 ? 64 : rest);
        rest /= f[l];
    }
}

static int stage_axes(const TeDag *dag, int k) { return dag->stages[k].n_spatial + dag->stages[k].n_reduce; }

static int levels_for(const Sketch *sk, const TeDag *dag, int k, int a) {
    int lev[SKETCH_AXES];
    SketchHow h = sk->st[k].how;
    if (h == SK_RFACTOR) /* the rows J and the lanes F */
        return a == rf_rows(dag, k) || a == dag->stages[k].n_spatial + rfactor_axis(dag, k, sk->cores) ? 2 : 1;
    if (h == SK_POOL) /* y and x: outer, inner */
        return a < dag->stages[k].n_spatial && a >= dag->stages[k].n_spatial - 2 ? 2 : 1;
    if (h == SK_TILED || h == SK_CONSUMER || h == SK_FUSED || h == SK_INPLACE) {
        axis_levels(dag, k, h, sk->gpu, lev);
        return lev[a];
    }
    return 2; /* a root stage: one split of its innermost spatial axis (cpu: vectorize; gpu: threads) */
}

/* The floats of the vector register file on cpu, the most a register tile may
 * hold: 32 registers of 16 floats with AVX-512 (or an unknown width), 16 of 8
 * with AVX2 (16 of 4 narrower). A larger tile spills: on an AVX2 EPYC the
 * 200-trial matmul session's 39 tiles of 32 to 64 registers all ran 1.3x or
 * more slower than its best tile of 16 (8 x 16 floats). */
int Sketch_tileFloats(int vector) { return vector >= 16 || vector < 1 ? 32 * 16 : 16 * vector; }

/* The register tile of a tiled stage or consumer on cpu (level 2) stays
 * within Sketch_tileFloats; a GPU tiled stage's threads per block (level 2) and
 * per-thread tile (level 3) stay in bounds. */
static bool tile_fits(const Sketch *sk, const TeDag *dag, int k, const SketchAnn *a) {
    SketchHow h = sk->st[k].how;
    int64_t cap = Sketch_tileFloats(sk->vector);
    if (h == SK_RFACTOR) {
        int x = rf_rows(dag, k), r = rfactor_axis(dag, k, sk->cores);
        return (int64_t)(x >= 0 ? a->f[x][0] : 1) * a->f[dag->stages[k].n_spatial + r][0] <= cap;
    }
    if (!sk->gpu && (h == SK_TILED || h == SK_CONSUMER)) {
        int lev[SKETCH_AXES];
        int64_t tile = 1;
        axis_levels(dag, k, h, 0, lev);
        for (int x = 0; x < dag->stages[k].n_spatial; x++)
            if (lev[x] == 3) tile *= a->f[x][1];
        return tile <= cap;
    }
    if (!sk->gpu || h != SK_TILED) return true;
    int lev[SKETCH_AXES];
    axis_levels(dag, k, SK_TILED, 1, lev);
    int64_t threads = 1, tile = 1;
    for (int x = 0; x < dag->stages[k].n_spatial; x++)
        if (lev[x] == 4) threads *= a->f[x][1], tile *= a->f[x][2];
    return threads <= 1024 && tile <= 64;
}

/* A random location of a pooling-like stage's padded copies: root (-1) or one of its loops outside y inner. */
static int8_t pool_at(const TeDag *dag, int k, Rng *rng) {
    int ns = dag->stages[k].n_spatial, outer = ns >= 2 ? ns : 1;
    return (int8_t)((int)Rng_below(rng, (uint64_t)outer + 1) - 1);
}

static void annotate_stage(const Sketch *sk, const TeDag *dag, int k, Rng *rng, SketchAnn *a) {
    memset(a, 0, sizeof *a);
    const TeStage *ts = &dag->stages[k];
    int n = stage_axes(dag, k);
    for (int tries = 0; tries < 32; tries++) {
        for (int x = 0; x < n && x < SKETCH_AXES; x++) {
            for (int l = 0; l < SKETCH_LEVELS - 1; l++)
                a->f[x][l] = 1;
            int lv = levels_for(sk, dag, k, x);
            if (lv > 1) factorize(rng, axis_extent(dag, k, x), lv, a->f[x]);
        }
        if (tile_fits(sk, dag, k, a)) break;
    }
    for (int x = 0; x < n && x < SKETCH_AXES && !tile_fits(sk, dag, k, a); x++)
        a->f[x][1] = a->f[x][2] = 1;           /* rarely: threads and tiles of one axis after another back to 1 */
    if (sk->gpu && sk->st[k].how == SK_ROOT) { /* threads per block of the fused spatial loops */
        int64_t e = axes_product(dag, ts->spatial, ts->n_spatial);
        a->f[0][0] = (int32_t)divisor(rng, e, 1024);
    }
    a->par = (int8_t)(1 + Rng_below(rng, (uint64_t)(ts->n_spatial > 0 ? 2 * ts->n_spatial : 1)));
    a->vec = (int8_t)(Rng_below(rng, 5) != 0);
    const int64_t *u;
    a->unroll = (int8_t)Rng_below(rng, (uint64_t)Sketch_unrollSet(sk->gpu, &u));
    a->at = -1;
    if (Sketch_packs(sk, dag, k) && Rng_below(rng, 2)) a->at = 0; /* a tiled stage's input copied by strips */
    if (may_move(sk, dag, k) && Rng_below(rng, 2)) a->at = (int8_t)Rng_below(rng, 8);
    if (rf_at_row(sk, dag, k) && Rng_below(rng, 2)) a->at = 0;
    if (sk->st[k].how == SK_FUSED) a->at = (int8_t)Rng_below(rng, 2);
    if (sk->st[k].how == SK_POOL) a->at = pool_at(dag, k, rng);
    if (sk->st[k].how == SK_RFACTOR && rf_rows(dag, k) >= 0 && Rng_below(rng, 2)) a->at = 1; /* rf_blocks */
}

void Sketch_annotate(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann) {
    for (int k = 0; k < dag->n_stages; k++)
        annotate_stage(sk, dag, k, rng, &ann[k]);
}

static void mutate_once(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann);

void Sketch_mutate(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann) {
    SketchAnn *keep = tt_malloc((size_t)dag->n_stages * sizeof *keep);
    for (int tries = 0; tries < 8; tries++) {
        memcpy(keep, ann, (size_t)dag->n_stages * sizeof *keep);
        mutate_once(sk, dag, rng, ann);
        bool fits = true;
        for (int k = 0; k < dag->n_stages; k++)
            fits = fits && tile_fits(sk, dag, k, &ann[k]);
        if (fits) break;
        memcpy(ann, keep, (size_t)dag->n_stages * sizeof *keep); /* out of the GPU's bounds: another try */
    }
    free(keep);
}

static void mutate_once(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann) {
    for (int tries = 0; tries < 16; tries++) {
        int k = (int)Rng_below(rng, (uint64_t)dag->n_stages);
        SketchAnn *a = &ann[k];
        SketchHow h = sk->st[k].how;
        if (h == SK_INLINE) continue;
        switch (Rng_below(rng, 5)) {
        case 0: { /* tile size: move a prime factor between two levels of one axis */
            int n = stage_axes(dag, k);
            int x = (int)Rng_below(rng, (uint64_t)n), lv = levels_for(sk, dag, k, x);
            if (lv < 2) break;
            int64_t e = axis_extent(dag, k, x), inner = 1;
            for (int l = 0; l < lv - 1; l++)
                inner *= a->f[x][l];
            int from = (int)Rng_below(rng, (uint64_t)lv), to = (int)Rng_below(rng, (uint64_t)lv);
            if (from == to) break;
            /* level 0 is the outer loop: its extent is e / inner */
            int64_t have = from == 0 ? e / inner : a->f[x][from - 1];
            int64_t p = 0;
            for (int64_t d = 2; d <= have; d++)
                if (have % d == 0) {
                    p = d;
                    break;
                }
            if (!p) break;
            if (from > 0) a->f[x][from - 1] = (int32_t)(a->f[x][from - 1] / p);
            if (to > 0) {
                if (to == lv - 1 && a->f[x][to - 1] * p > 64) { /* undo: the innermost stays <= 64 */
                    if (from > 0) a->f[x][from - 1] = (int32_t)(a->f[x][from - 1] * p);
                    break;
                }
                a->f[x][to - 1] = (int32_t)(a->f[x][to - 1] * p);
            }
            return;
        }
        case 1: /* parallel granularity */
            if (sk->gpu) break;
            a->par = (int8_t)(a->par + (Rng_below(rng, 2) ? 1 : -1));
            if (a->par < 0) a->par = 0;
            if (a->par > 2 * TE_MAX_DIMS) a->par = 2 * TE_MAX_DIMS;
            return;
        case 2: { /* unroll */
            const int64_t *u;
            a->unroll = (int8_t)Rng_below(rng, (uint64_t)Sketch_unrollSet(sk->gpu, &u));
            return;
        }
        case 3: /* compute location */
            if (h == SK_FUSED) {
                a->at = (int8_t)(1 - a->at);
                return;
            }
            if (h == SK_POOL) {
                a->at = pool_at(dag, k, rng);
                return;
            }
            if (h == SK_RFACTOR && (rf_at_row(sk, dag, k) || rf_rows(dag, k) >= 0)) {
                a->at = rf_other_at(sk, dag, k, a->at, rng);
                return;
            }
            if (Sketch_packs(sk, dag, k)) {
                a->at = (int8_t)(a->at >= 0 ? -1 : 0);
                return;
            }
            if (!may_move(sk, dag, k)) break;
            a->at = (int8_t)(a->at >= 0 && Rng_below(rng, 3) == 0 ? -1 : (int)Rng_below(rng, 8));
            return;
        case 4:
            if (sk->gpu) break;
            a->vec = (int8_t)!a->vec;
            return;
        }
    }
}

static int64_t largest_divisor(int64_t e, int64_t cap) {
    int64_t f = cap < e ? cap : e;
    while (f > 1 && e % f)
        f--;
    return f > 0 ? f : 1;
}

/* Lanes for extent e on `vector`-float registers: the width when it divides
 * e, else the largest divisor below it that is a multiple of 8 (or 4: half or
 * a quarter register), else the largest divisor below it. */
static int64_t simd_factor(int64_t e, int64_t vector) {
    if (e % vector == 0) return vector;
    for (int64_t m = 8; m >= 4; m /= 2)
        for (int64_t f = vector - vector % m; f >= m; f -= m)
            if (e % f == 0) return f;
    return largest_divisor(e, vector);
}

/* The register tile and the level above it of tiled stage (or consumer) t
 * on cpu; acc is the stage that accumulates (t, or the producer fused into
 * it, whose axes match t's by position). See Sketch_heuristic. */
static int cpu_tile_default(const Sketch *sk, const TeDag *dag, int t, int acc, int vector, int pack, SketchAnn *a) {
    const TeStage *ts = &dag->stages[t], *as = &dag->stages[acc];
    int ns = ts->n_spatial, vx = -1, lev[SKETCH_AXES];
    axis_levels(dag, t, sk->st[t].how, 0, lev);
    for (int x = 0; x < ns; x++)
        if (lev[x] == 3) vx = x;
    if (vx < 0) return 0;
    int64_t e = axis_extent(dag, t, vx);
    int64_t reg = simd_factor(e, 2 * vector); /* whole registers, or halves: no scalar remainder */
    /* no read moves along the vector axis in its innermost index (a dense layer's W[j, k] along j): a SIMD
     * loop there would gather; a few scalar accumulators instead (rfactor sketches vectorize such reductions) */
    int contiguous = vx < as->n_spatial && reads_along(as, as->spatial[vx]);
    if (!contiguous) reg = largest_divisor(e, 4);
    /* 16 accumulator registers, in rows of at most half the vector registers (32 with 16-float AVX-512, 16
     * with AVX2 and narrower): a row reads one broadcast operand, so more rows of one register spill */
    int64_t budget = 16 / ((reg + vector - 1) / vector), rows = vector >= 16 ? 16 : 8;
    /* with an input copied by strips (AVX2): 12 accumulators, the strip's registers and the broadcast beside them
     * in 16 (an AVX2 EPYC, 1024^3 matmul, CPU time: 4 x 16 with the copy 35.9 ms, 8 x 16 with it 40.3, 8 x 16
     * without 43.0, whose 16 accumulators spill 3 registers; OpenBLAS 23.6) */
    if (pack) budget = 12 / ((reg + vector - 1) / vector);
    if (budget > rows) budget = rows;
    a->f[vx][1] = (int32_t)reg;
    a->f[vx][0] = 1;
    /* the other axes, those whose reuse saves the most vector loads first: an
     * access that moves along the vector axis but not along x is loaded once
     * for every row of x in the tile */
    int score[SKETCH_AXES] = {0}, done[SKETCH_AXES] = {0};
    for (int x = 0; x < ns; x++)
        for (int i = 0; i < as->n_access && x < as->n_spatial && vx < as->n_spatial; i++)
            score[x] += uses_var(as->access[i].at, as->spatial[vx]) && !uses_var(as->access[i].at, as->spatial[x]);
    /* a window's row axis (y of X[.., y + r, ..]) takes two rows first: the unrolled copies of r then load
     * rows that its two rows share */
    for (int x = ns - 1; x >= 0 && vx < as->n_spatial && budget >= 4; x--) {
        if (lev[x] != 3 || x == vx || x >= as->n_spatial || axis_extent(dag, t, x) % 2) continue;
        int window = 0;
        for (int r = 0; r < as->n_reduce; r++) {
            int64_t e = axis_extent(dag, acc, as->n_spatial + r);
            window |= e >= 2 && e <= 8 && slides(as, as->spatial[vx], as->spatial[x], as->reduce[r]);
        }
        if (!window) continue;
        a->f[x][1] = 2;
        a->f[x][0] = (int32_t)(axis_extent(dag, t, x) / 2);
        budget /= 2;
        done[x] = 1;
        break;
    }
    for (;;) {
        int best = -1;
        for (int x = ns - 1; x >= 0; x--)
            if (lev[x] == 3 && x != vx && !done[x] && (best < 0 || score[x] > score[best])) best = x;
        if (best < 0) break;
        done[best] = 1;
        int64_t ex = axis_extent(dag, t, best), r = largest_divisor(ex, budget);
        a->f[best][1] = (int32_t)r;
        a->f[best][0] = (int32_t)(ex / r);
        budget /= r;
    }
    /* at least `cores` iterations at the outer level: factors move up from the level above the tile */
    int64_t outer = 1;
    for (int x = 0; x < ns; x++)
        if (lev[x] == 3) outer *= axis_extent(dag, t, x) / ((int64_t)a->f[x][0] * a->f[x][1]);
    for (int x = 0; x < ns && outer < sk->cores; x++)
        while (lev[x] == 3 && a->f[x][0] > 1 && outer < sk->cores) {
            int64_t p = 2;
            while (a->f[x][0] % p)
                p++;
            a->f[x][0] = (int32_t)(a->f[x][0] / p);
            outer *= p;
        }
    return contiguous;
}

/* A batch of small products (tiled stage k on cpu with a vector register tile; axes that every read uses, the
 * batch, besides the vector axis: Winograd's tile position e, u, one GEMM of tiles x C by C x K each): no data is
 * shared across the batch, so the blocks of the vector axis run in the level above the tile, inside the batch,
 * where one product's operands are read again from the cache, and the outer level takes its `cores` iterations
 * from the batch axes (ResNet-18's layer on the AVX2 EPYC: its GEMM from 1.12 to 1.00 ms). */
static void batch_default(const Sketch *sk, const TeDag *dag, int k, SketchAnn *a) {
    const TeStage *ts = &dag->stages[k];
    int lev[SKETCH_AXES], vx = -1, batch[SKETCH_AXES] = {0}, any = 0;
    axis_levels(dag, k, SK_TILED, 0, lev);
    for (int x = 0; x < ts->n_spatial; x++)
        if (lev[x] == 3) vx = x;
    for (int x = 0; x < ts->n_spatial; x++) {
        batch[x] = lev[x] == 3 && x != vx && axis_extent(dag, k, x) > 1;
        for (int i = 0; i < ts->n_access && batch[x]; i++)
            batch[x] = dag->prog->tensors[ts->access[i].tensor].is_const || uses_var(ts->access[i].at, ts->spatial[x]);
        any |= batch[x];
    }
    if (vx < 0 || !any) return;
    a->f[vx][0] = (int32_t)(axis_extent(dag, k, vx) / a->f[vx][1]);
    int64_t outer = 1;
    for (int x = 0; x < ts->n_spatial; x++)
        if (lev[x] == 3) outer *= axis_extent(dag, k, x) / ((int64_t)a->f[x][0] * a->f[x][1]);
    for (int x = 0; x < ts->n_spatial && outer < sk->cores; x++)
        for (int64_t p = 2; batch[x] && a->f[x][0] > 1 && outer < sk->cores; p = 2) {
            while (a->f[x][0] % p)
                p++;
            a->f[x][0] = (int32_t)(a->f[x][0] / p);
            outer *= p;
        }
}

/* The zero-trial default of a pooling-like stage: x inner the whole axis (else its largest divisor up to 64), y
 * inner up to 8 rows, the loops outside y parallel, the copies computed at y outer (a band of 2 * 8 + 1 input
 * rows of a channel: it stays in the L1 cache from its copies to its reads), at root when there is no y. */
static void pool_default(const TeDag *dag, int k, SketchAnn *a) {
    int ns = dag->stages[k].n_spatial;
    for (int x = 0; x < SKETCH_AXES; x++)
        for (int l = 0; l < SKETCH_LEVELS - 1; l++)
            a->f[x][l] = 1;
    a->f[ns - 1][0] = (int32_t)largest_divisor(axis_extent(dag, k, ns - 1), 64);
    if (ns >= 2) a->f[ns - 2][0] = (int32_t)largest_divisor(axis_extent(dag, k, ns - 2), 8);
    a->par = (int8_t)(ns >= 3 ? ns - 2 : 1);
    a->vec = 1;
    a->unroll = 0;
    a->at = (int8_t)(ns >= 2 ? ns - 2 : -1);
}

/* The default inner reduction level of stage k computed at the register tile
 * of stage t (k itself, or the consumer it is fused into; annotation at):
 * short reduction axes (a convolution's window) whole, last axis first, while
 * the tile's rows times the copies stay within SKETCH_MAX_UNROLLED, so that
 * they are unrolled around the tile and the innermost real loop around it is
 * a long one. */
static void window_default(const TeDag *dag, int k, int t, SketchHow how, const SketchAnn *at, SketchAnn *a) {
    const TeStage *ts = &dag->stages[k];
    int ns = ts->n_spatial, nt = dag->stages[t].n_spatial, left = 0, longest = -1;
    int64_t box[TE_MAX_DIMS], body = 1;
    tile_box(dag, t, how, at, 0, box);
    for (int x = 0; x < nt - 1; x++)
        body *= box[x];
    for (int pass = 0; pass < 2; pass++) /* first the axes that slide along a row axis of the tile */
        for (int r = ts->n_reduce - 1; r >= 0; r--) {
            int64_t e = axis_extent(dag, k, ns + r);
            if (ns + r >= SKETCH_AXES || a->f[ns + r][0] > 1) continue;
            if (e > 8 && (longest < 0 || e > axis_extent(dag, k, ns + longest))) longest = r;
            if (e < 2 || e > 8) continue;
            int row = 0;
            for (int x = 0; x < nt - 1 && x < ns; x++)
                row |= box[x] > 1 && slides(ts, ts->spatial[ns - 1], ts->spatial[x], ts->reduce[r]);
            if (pass == 0 && !row) continue;
            if (body * e > SKETCH_MAX_UNROLLED) {
                left += pass;
                continue;
            }
            a->f[ns + r][0] = (int32_t)e;
            body *= e;
        }
    /* a short axis left as a loop around the tile: a long one (16 of the longest axis) goes inside it */
    if (left && longest >= 0) a->f[ns + longest][0] = (int32_t)largest_divisor(axis_extent(dag, k, ns + longest), 16);
}

static void heuristic_stages(const Sketch *sk, const TeDag *dag, int vector, SketchAnn *ann);

/* An rfactor stage computed at its consumer's row (rf_streams_shared): one row, so its chains are the F lanes'
 * registers, up to 8 of them (half the vector registers, as a tile's rows), F a multiple of the SIMD width that
 * divides the axis (softmax's 1000: 40, 5 registers). */
static void rf_row_default(const TeDag *dag, int k, int x, int r, int vector, SketchAnn *a) {
    int64_t e = axis_extent(dag, k, r), F = a->f[r][0];
    for (int64_t f = 8 * (int64_t)vector; f > F; f -= vector)
        if (e % f == 0) {
            F = f;
            break;
        }
    a->f[r][0] = (int32_t)F;
    if (x >= 0) a->f[x][0] = 1;
    a->par = 0;
    a->at = 0;
}

/* Whether every index of stage c's reads of stage k's tensor is one of c's variables (Winograd's
 * `Z1[e, n, th, tw, v, k]`): a loop of c then reads a box that no other iteration of it reads. */
static int plain_reads(const TeDag *dag, int c, int k) {
    const TeStage *cs = &dag->stages[c];
    for (int i = 0; i < cs->n_access; i++) {
        const TeExpr *at = cs->access[i].at;
        if (cs->access[i].tensor != dag->stages[k].tensor) continue;
        for (int d = 0; d < at->n_kids; d++)
            if (!at->kid[d] || at->kid[d]->kind != TE_VAR) return 0;
    }
    return 1;
}

/* Whether stage c's variable var indexes, in its reads of stage k's tensor, a dimension of k in mask. */
static int binds(const TeDag *dag, int c, int k, int var, unsigned mask) {
    const TeStage *cs = &dag->stages[c];
    for (int i = 0; i < cs->n_access; i++) {
        const TeExpr *at = cs->access[i].at;
        if (cs->access[i].tensor != dag->stages[k].tensor) continue;
        for (int d = 0; d < at->n_kids && d < dag->stages[k].n_spatial; d++)
            if ((mask >> d & 1) && at->kid[d] && uses_var(at->kid[d], var)) return 1;
    }
    return 0;
}

/* The zero-trial location of stage k at root (cpu), or -1: a product with a small constant whose one consumer is
 * one too and reads it at plain variables (Winograd's output transform by columns, then by rows) is computed at
 * the consumer's innermost loop outside its vectorized one that fixes none of k's constant axes, so that k's
 * elements stay in L1 between the two and k's unrolled loops still reach the constant's indices as numbers
 * (ResNet-18's layer on an AVX2 EPYC: the two stages 66 -> 49 us of CPU). */
static int chain_loop(const Sketch *sk, const TeDag *dag, int k) {
    unsigned mk = const_unrolled(sk, dag, k);
    if (!mk || !may_move(sk, dag, k)) return -1;
    int c = dag->stages[k].consumers[0];
    unsigned mc = const_unrolled(sk, dag, c);
    if (!mc || !plain_reads(dag, c, k)) return -1;
    const TeStage *cs = &dag->stages[c];
    int at = -1, pos = 0; /* c's loops outside its vectorized one, in const_steps' order */
    for (int x = 0; x < cs->n_spatial - 1; x++) {
        if (mc >> x & 1) continue;
        if (binds(dag, c, k, cs->spatial[x], mk)) break;
        at = pos++;
    }
    return at;
}

void Sketch_heuristic(const Sketch *sk, const TeDag *dag, int vector, SketchAnn *ann) {
    heuristic_stages(sk, dag, vector, ann);
    if (!sk->gpu && sk->cores <= 1) /* one core: an OpenMP region of one thread only costs its entry */
        for (int k = 0; k < dag->n_stages; k++)
            ann[k].par = 0;
}

static void heuristic_stages(const Sketch *sk, const TeDag *dag, int vector, SketchAnn *ann) {
    if (vector < 1) vector = 8;
    for (int k = 0; k < dag->n_stages; k++) {
        SketchAnn *a = &ann[k];
        memset(a, 0, sizeof *a);
        const TeStage *ts = &dag->stages[k];
        int n = stage_axes(dag, k);
        SketchHow how = sk->st[k].how;
        if (how == SK_RFACTOR) { /* F lanes of the SIMD width, rows for 16 accumulator registers at most 8 */
            for (int x = 0; x < SKETCH_AXES; x++)
                for (int l = 0; l < SKETCH_LEVELS - 1; l++)
                    a->f[x][l] = 1;
            int x = rf_rows(dag, k), r = ts->n_spatial + rfactor_axis(dag, k, sk->cores);
            int64_t e = axis_extent(dag, k, r), F = simd_factor(e, vector);
            a->f[r][0] = (int32_t)F;
            if (x >= 0)
                a->f[x][0] = (int32_t)largest_divisor(axis_extent(dag, k, x), 16 / ((F + vector - 1) / vector) < 8
                                                                                  ? 16 / ((F + vector - 1) / vector)
                                                                                  : 8);
            a->par = (int8_t)(x >= 0 ? x + 1 : 1);
            a->vec = 1;
            a->unroll = 0;
            a->at = -1;
            if (rf_streams_shared(sk, dag, k)) {
                rf_row_default(dag, k, x, r, vector, a);
            } else if (rf_streams_rows(dag, k, sk->cores)) { /* one row of four vectors of lanes (rf_blocks) */
                int64_t F4 = 4 * vector;
                while (F4 > vector && e % F4)
                    F4 -= vector;
                if (e % F4 == 0 && F4 > vector) a->f[r][0] = (int32_t)F4, a->f[x][0] = 1, a->at = 1;
            }
            continue;
        }
        if (how ==
            SK_POOL) { /* rows of x whole (up to 64), one row of y, the copy per iteration of the loop before y */
            pool_default(dag, k, a);
            continue;
        }
        if (!sk->gpu && (how == SK_TILED || how == SK_CONSUMER || how == SK_FUSED)) {
            for (int x = 0; x < SKETCH_AXES; x++)
                for (int l = 0; l < SKETCH_LEVELS - 1; l++)
                    a->f[x][l] = 1;
            int acc = k;
            for (int p = 0; p < dag->n_stages && how == SK_CONSUMER; p++)
                if (sk->st[p].how == SK_FUSED && sk->st[p].consumer == k) acc = p;
            /* AVX2 and narrower: matmul's B strip copied (see packed_input) */
            int pack = vector < 16 && how == SK_TILED && packed_input(dag, &sk->st[k], k) >= 0;
            a->vec = (int8_t)(how == SK_FUSED || cpu_tile_default(sk, dag, k, acc, vector, pack, a));
            if (how == SK_TILED && a->vec) batch_default(sk, dag, k, a);
            if (how == SK_TILED) window_default(dag, k, k, SK_TILED, a, a);
            a->par = (int8_t)level0_loops(dag, k);
            a->unroll = 0;
            a->at = how == SK_FUSED ? 1 : pack ? 0 : -1; /* a fused stage: at tile level 1 */
            continue;
        }
        for (int x = 0; x < n && x < SKETCH_AXES; x++) {
            for (int l = 0; l < SKETCH_LEVELS - 1; l++)
                a->f[x][l] = 1;
            int lv = levels_for(sk, dag, k, x);
            if (lv < 2) continue;
            int64_t e = axis_extent(dag, k, x);
            int red = x >= ts->n_spatial, last = x == ts->n_spatial - 1;
            /* the innermost level: the SIMD width on the last spatial axis, 2..4
             * accumulators on the others, 4..16 on a reduction; the level
             * above it a cache-sized block */
            int64_t want_in = red ? 8 : last ? vector : 4, want_mid = red ? 1 : last ? 4 : 8;
            int64_t rest = e, f;
            for (f = want_in; f > 1 && rest % f; f--)
                ;
            /* on cpu a stage at root runs its whole last axis as one SIMD loop, the axes before it outside: a value
             * along a row (a row's 1 / sqrt(variance)) is then computed once per row before the loop (te_emit) */
            if (!sk->gpu && how == SK_ROOT && last) f = 1;
            a->f[x][lv - 2] = (int32_t)f;
            rest /= f;
            if (lv >= 3) {
                for (f = want_mid; f > 1 && rest % f; f--)
                    ;
                a->f[x][lv - 3] = (int32_t)f;
            }
        }
        if (sk->gpu && sk->st[k].how == SK_ROOT) {
            int64_t e = axes_product(dag, ts->spatial, ts->n_spatial), f;
            for (f = 256; f > 1 && e % f; f--)
                ;
            a->f[0][0] = (int32_t)f;
        }
        if (sk->gpu && sk->st[k].how == SK_TILED) { /* a 2..4 tile per thread, 8..16 threads per axis */
            int lev[SKETCH_AXES], wide = 0;
            axis_levels(dag, k, SK_TILED, 1, lev);
            for (int x = 0; x < ts->n_spatial; x++)
                wide += lev[x] == 4;
            for (int x = 0; x < ts->n_spatial; x++) {
                if (lev[x] != 4) continue;
                int64_t e = axis_extent(dag, k, x), f, g;
                for (f = 4; f > 1 && e % f; f--)
                    ;
                for (g = wide > 2 ? 8 : 16; g > 1 && (e / f) % g; g--)
                    ;
                a->f[x][0] = 1, a->f[x][1] = (int32_t)g, a->f[x][2] = (int32_t)f;
            }
        }
        a->par = (int8_t)(ts->n_spatial > 1 ? 2 : 1);
        a->vec = 1;
        a->unroll = 2; /* 64 */
        a->at = sk->st[k].how == SK_FUSED ? 1 : -1;
    }
    for (int k = 0; k < dag->n_stages && !sk->gpu; k++) { /* a fused producer: once its consumer's tile is known */
        if (sk->st[k].how == SK_FUSED)
            window_default(dag, k, sk->st[k].consumer, SK_CONSUMER, &ann[sk->st[k].consumer], &ann[k]);
        ann[k].at = sk->st[k].how == SK_ROOT ? (int8_t)chain_loop(sk, dag, k) : ann[k].at;
    }
}

/* ---- reading a schedule back ------------------------------------------------------ */

static bool same_steps(const Steps *a, const Steps *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++) {
        const Step *x = &a->step[i], *y = &b->step[i];
        if (x->kind != y->kind || x->stage != y->stage || x->n_args != y->n_args) return false;
        for (int k = 0; k < x->n_args; k++)
            if (x->arg[k] != y->arg[k]) return false;
    }
    return true;
}

/* The annotation's index into the auto-unroll set of an auto_unroll step's
 * limit: the least value at least that limit (auto_unroll_limit may have
 * lowered it). */
static int8_t unroll_index(int64_t limit, const int64_t *unrolls, int n_unroll) {
    for (int u = 0; u < n_unroll; u++)
        if (unrolls[u] >= limit) return (int8_t)u;
    return (int8_t)(n_unroll - 1);
}

bool Sketch_recover(const Sketch *sk, const TeDag *dag, const Steps *steps, SketchAnn *ann) {
    for (int k = 0; k < dag->n_stages; k++) {
        memset(&ann[k], 0, sizeof ann[k]);
        for (int x = 0; x < SKETCH_AXES; x++)
            for (int l = 0; l < SKETCH_LEVELS - 1; l++)
                ann[k].f[x][l] = 1;
        ann[k].at = -1;
    }
    const int64_t *unrolls;
    int n_unroll = Sketch_unrollSet(sk->gpu, &unrolls);
    /* per DAG stage k: its step index, that of its local accumulator and of its S.rf (rfactor) */
    /* and of its last padded copy */
    int fused[TE_MAX_TENSORS] = {0}, idx[TE_MAX_TENSORS], local[TE_MAX_TENSORS], rf[TE_MAX_TENSORS],
        pad[TE_MAX_TENSORS], strip[TE_MAX_TENSORS];
    for (int k = 0; k < dag->n_stages; k++)
        idx[k] = k, local[k] = rf[k] = pad[k] = strip[k] = -1;
    for (int i = 0; i < steps->n; i++) {
        const Step *s = &steps->step[i];
        if (s->kind == STEP_CACHE_READ) { /* a padded copy, or one by strips for a local: stages move up by one */
            int owner = -1, of = -1;
            for (int k = 0; k < dag->n_stages; k++) {
                if (idx[k] == s->stage) owner = k;
                if (local[k] == s->stage) of = k;
                if (idx[k] >= s->stage) idx[k]++;
                if (local[k] >= s->stage) local[k]++;
                if (rf[k] >= s->stage) rf[k]++;
                if (pad[k] >= s->stage) pad[k]++;
                if (strip[k] >= s->stage) strip[k]++;
            }
            if (owner >= 0) pad[owner] = s->stage;
            if (of >= 0) strip[of] = s->stage, ann[of].at = 0;
            continue;
        }
        if (s->kind == STEP_CACHE_WRITE || s->kind == STEP_RFACTOR) { /* stages from its index on move up by one */
            int owner = -1, of_rf = -1;
            for (int k = 0; k < dag->n_stages; k++) {
                if (idx[k] == s->stage) owner = k;
                if (rf[k] == s->stage) of_rf = k;
                if (idx[k] >= s->stage) idx[k]++;
                if (local[k] >= s->stage) local[k]++;
                if (rf[k] >= s->stage) rf[k]++;
                if (pad[k] >= s->stage) pad[k]++;
                if (strip[k] >= s->stage) strip[k]++;
            }
            if (s->kind == STEP_RFACTOR && owner >= 0) {
                rf[owner] = s->stage;
                int x = dag->stages[owner].n_spatial + (int)s->arg[0];
                if (x >= 0 && x < SKETCH_AXES) ann[owner].f[x][0] = (int32_t)s->arg[1];
            } else if (owner >= 0 || of_rf >= 0) {
                local[owner >= 0 ? owner : of_rf] = s->stage; /* the new one is k's (or its S.rf's) local */
            }
            continue;
        }
        int stage = -1, of = -1, copy = -1, padded = -1, strips = -1; /* the DAG stage the step acts on, or whose
                                                                       * local / S.rf / padded copy / copy by
                                                                       * strips (its steps follow) it acts on */
        for (int k = 0; k < dag->n_stages; k++) {
            if (idx[k] == s->stage) stage = k;
            if (local[k] == s->stage) of = k;
            if (rf[k] == s->stage) copy = k;
            if (pad[k] == s->stage) padded = k;
            if (strip[k] == s->stage) strips = k;
        }
        if (strips >= 0) continue;
        if (padded >= 0) { /* a pooling-like stage's padded copy computed at one of its loops */
            if (s->kind == STEP_COMPUTE_AT) ann[padded].at = (int8_t)s->arg[1];
            continue;
        }
        if (copy >= 0) { /* the copy of S.rf: its rows split, parallel loops, the lanes vectorized */
            SketchAnn *a = &ann[copy];
            if (s->kind == STEP_SPLIT && s->arg[0] >= 0 && s->arg[0] < SKETCH_AXES && s->n_args == 2)
                a->f[s->arg[0]][0] = (int32_t)s->arg[1];
            else if (s->kind == STEP_PARALLEL)
                a->par++;
            else if (s->kind == STEP_VECTORIZE)
                a->vec = 1;
            else if (s->kind == STEP_COMPUTE_AT && s->arg[0] == idx[copy]) /* S.rf at S's rows: rf_blocks */
                a->at = 1;
            else if (s->kind == STEP_AUTO_UNROLL)
                a->unroll = unroll_index(s->arg[1], unrolls, n_unroll);
            continue;
        }
        if (stage < 0 && of >= 0) { /* the local's reduction splits (at their axes' positions), vectorize, unroll */
            SketchAnn *a = &ann[of];
            int ns = dag->stages[of].n_spatial;
            if (s->kind == STEP_SPLIT && s->arg[0] >= ns && s->arg[0] < SKETCH_AXES && s->n_args == 2)
                a->f[s->arg[0]][0] = (int32_t)s->arg[1];
            else if (s->kind == STEP_VECTORIZE)
                a->vec = 1;
            else if (s->kind == STEP_AUTO_UNROLL)
                a->unroll = unroll_index(s->arg[1], unrolls, n_unroll);
            continue;
        }
        if (stage < 0) continue;
        SketchAnn *a = &ann[stage];
        SketchHow h = sk->st[stage].how;
        switch (s->kind) {
        case STEP_SPLIT: {
            /* splits come first, one per axis at the axis' own position (last axis
             * first); a GPU root stage splits its fused loop for the threads */
            int x = sk->gpu && h == SK_ROOT ? 0 : (int)s->arg[0];
            if (x < 0 || x >= SKETCH_AXES || s->n_args - 1 > SKETCH_LEVELS - 1) return false;
            for (int l = 0; l < s->n_args - 1; l++)
                a->f[x][l] = (int32_t)s->arg[1 + l];
            break;
        }
        case STEP_FUSE:
            if (!sk->gpu && s->arg[0] == 0) fused[stage] = (int)s->arg[1];
            break;
        case STEP_PARALLEL: /* the fused outer loops, or each of several outer loops */
            a->par = (int8_t)(fused[stage] ? fused[stage] : a->par + 1);
            break;
        case STEP_VECTORIZE:
            a->vec = 1;
            break;
        case STEP_AUTO_UNROLL:
            a->unroll = unroll_index(s->arg[1], unrolls, n_unroll);
            break;
        case STEP_COMPUTE_AT:
            a->at = (int8_t)s->arg[1];
            break;
        default:
            break;
        }
    }
    /* a fused stage's location is a tile level, and a root stage without
     * vectorize may have been split all the same: try what the steps allow */
    for (int k = 0; k < dag->n_stages; k++)
        if (sk->st[k].how == SK_FUSED && ann[k].at > 0) ann[k].at = 1;
    Steps again;
    for (int attempt = 0; attempt < 2; attempt++) {
        Sketch_steps(sk, dag, ann, &again);
        if (same_steps(&again, steps)) return true;
        for (int k = 0; k < dag->n_stages; k++)
            if (sk->st[k].how == SK_FUSED) ann[k].at = (int8_t)(1 - ann[k].at);
    }
    return false;
}

/* ---- printing --------------------------------------------------------------------- */

void Sketch_format(const Sketch *sk, const TeDag *dag, StrBuf *out) {
    for (int k = dag->n_stages - 1; k >= 0; k--) {
        const SketchStage *st = &sk->st[k];
        StrBuf_printf(out, "  stage %d %-8s", k, dag->prog->tensors[dag->stages[k].tensor].name);
        int first = 1;
        for (int r = 0; r < RULE_KINDS; r++)
            if (st->rules & (1u << r)) {
                StrBuf_printf(out, "%s%s", first ? " " : ", ", RULE_NAMES[r]);
                first = 0;
            }
        if (first) StrBuf_append(out, " (no rule: fused)");
        static const char *const HOW[] = {"own loop nest",
                                          "inlined",
                                          "tiled",
                                          "tiled SSS, producer at its tile",
                                          "computed at its consumer's tile, RRS",
                                          "tiled SSRSRS in place",
                                          "rfactor, its lanes vectorized in a local accumulator",
                                          "own loop nest over a padded copy, the window innermost"};
        StrBuf_printf(out, "  -> %s", HOW[st->how]);
        if (st->how == SK_TILED) StrBuf_printf(out, " %s", structure(sk->gpu));
        for (int t = 0; t < 64 && t < dag->prog->n_tensors; t++)
            if (st->pad >> t & 1)
                StrBuf_printf(out, ", padded copy of %s%s", dag->prog->tensors[t].name,
                              st->how == SK_POOL ? "" : " at root");
        StrBuf_append(out, "\n");
    }
    Steps steps;
    Sketch_steps(sk, dag, NULL, &steps);
    StrBuf_append(out, "  steps: ");
    if (!steps.n) StrBuf_append(out, "(none: the default loop nests)");
    for (int i = 0; i < steps.n; i++) {
        const Step *s = &steps.step[i];
        StrBuf_printf(out, "%s%s %d", i ? "; " : "", StepKind_name(s->kind), s->stage);
        for (int x = 0; x < s->n_args; x++)
            if (s->kind == STEP_SPLIT && x > 0)
                StrBuf_append(out, " ?");
            else
                StrBuf_printf(out, " %lld", (long long)s->arg[x]);
    }
    StrBuf_append(out, "\n");
    if (sk->note[0]) StrBuf_printf(out, "  note: %s\n", sk->note);
}
