/* kernels/templates/te/te_sketch.c: sketch rules, annotation and the steps of
 * an annotated sketch (see te_sketch.h). Steps are written through a small
 * model of each stage's loops, so every step names a loop that exists. */
#include "kernels/templates/te/te_sketch.h"

#include <stdio.h>
#include <string.h>

static const char *const RULE_NAMES[RULE_KINDS] = {"always-inline",          "rfactor",
                                                   "add cache stage",        "multi-level tiling with fusion",
                                                   "multi-level tiling",     "shared-memory cache_read",
                                                   "cross-thread reduction", "skip"};

const char *SketchRule_name(SketchRule r) { return r >= 0 && r < RULE_KINDS ? RULE_NAMES[r] : "?"; }

static const char *structure(int gpu) { return gpu ? "SSSRRSRS" : "SSRSRS"; }

static int count_of(const char *s, char c) {
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

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

static void note_add(Sketch *sk, const char *text) {
    if (strstr(sk->note, text)) return;
    size_t len = strlen(sk->note);
    snprintf(sk->note + len, sizeof sk->note - len, "%s%s", len ? "; " : "", text);
}

int Sketch_generate(const TeDag *dag, int gpu, int cores, Sketch *out) {
    int n = 1;
    memset(&out[0], 0, sizeof out[0]);
    out[0].gpu = gpu;
    out[0].n_stages = dag->n_stages;
    for (int k = 0; k < dag->n_stages; k++)
        out[0].st[k] = (SketchStage){.how = SK_ROOT, .consumer = -1};
    for (int k = dag->n_stages - 1; k >= 0; k--) {
        const TeStage *ts = &dag->stages[k];
        int n_now = n;
        for (int i = 0; i < n_now; i++) {
            Sketch *sk = &out[i];
            SketchStage *st = &sk->st[k];
            if (gpu && ts->data_reuse) {
                st->rules |= 1u << RULE_SHARED_READ;
                note_add(sk, "shared-memory cache_read: no step yet, inputs read from global memory");
            }
            if (ts->inlinable) {
                st->rules |= 1u << RULE_INLINE;
                st->how = SK_INLINE;
                continue;
            }
            if (gpu && ts->red && !ts->data_reuse) {
                st->rules |= 1u << RULE_CROSS_THREAD;
                note_add(sk, "cross-thread reduction: no step yet, one thread per output element");
            }
            if (needs_rfactor(dag, ts, cores)) {
                st->rules |= 1u << RULE_RFACTOR;
                note_add(sk, "rfactor: no step yet, the reduction stays serial");
            }
            if (!gpu && ts->data_reuse && ts->fusible_consumer < 0) {
                st->rules |= 1u << RULE_CACHE_WRITE;
                note_add(sk, "add cache stage: no cache_write step yet, the tile accumulates in place");
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
                st->how = SK_TILED;
                continue;
            }
            st->rules |= 1u << RULE_SKIP;
        }
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
    Steps *out;
    Loops L[TE_MAX_TENSORS];
    int fill; /* print split factors as written (1) or as the placeholders of a bare sketch (0) */
} Writer;

static void put(Writer *w, StepKind kind, int stage, const int64_t *args, int n) {
    Steps_add(w->out, kind, stage, args, n, NULL); /* the writer stays within the limits */
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
    int64_t v[2] = {a, b};
    put(w, kind, k, v, 2);
}

/* ---- tiling layout ------------------------------------------------------------ */

/* Levels of each axis of stage k under the sketch: the structure's S (R)
 * count for a spatial (reduction) axis longer than 1, else 1; when the loops
 * would exceed what a reorder names, the shortest axes drop to one level. */
static int axis_levels(const TeDag *dag, int k, int how, int gpu, int *lev) {
    const TeStage *ts = &dag->stages[k];
    const char *s = structure(gpu);
    int ls = how == SK_CONSUMER ? 3 : count_of(s, 'S'), lr = count_of(s, 'R');
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
    for (int a = n - 1; a >= 0; a--) { /* last axis first: earlier positions stay put */
        if (lev[a] < 2) continue;
        int64_t f[SKETCH_LEVELS];
        for (int l = 0; l < lev[a] - 1; l++)
            f[l] = ann ? ann->f[a][l] : 1;
        w_split(w, k, a, f, lev[a] - 1);
    }
    int base[SKETCH_AXES], pos = 0;
    for (int a = 0; a < n; a++)
        base[a] = pos, pos += lev[a];
    const char *s = how == SK_CONSUMER ? "SSS" : structure(gpu);
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

int Sketch_unrollSet(int gpu, const int64_t **values) {
    static const int64_t SET[] = {0, 16, 64, 512, 1024};
    *values = SET;
    return gpu ? 5 : 4;
}

/* Stage k may be computed at its one consumer: an untiled stage that is not
 * an output, whose one consumer has loops of its own from this sketch. */
static int may_move(const Sketch *sk, const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    if (sk->gpu || sk->st[k].how != SK_ROOT || ts->is_output || ts->n_consumers != 1) return 0;
    SketchHow h = sk->st[ts->consumers[0]].how;
    return h == SK_ROOT || h == SK_TILED;
}

void Sketch_steps(const Sketch *sk, const TeDag *dag, const SketchAnn *ann, Steps *out) {
    out->n = 0;
    Writer w = {.dag = dag, .out = out};
    int hosts[TE_MAX_TENSORS] = {0}; /* a producer will be computed at the stage: no parallel loop */
    for (int k = 0; k < dag->n_stages; k++) {
        const TeStage *ts = &dag->stages[k];
        Loops *L = &w.L[k];
        L->n = 0;
        for (int a = 0; a < ts->n_spatial; a++)
            L->ext[L->n] = dag->prog->vars[ts->spatial[a]].extent, L->red[L->n++] = 0;
        for (int a = 0; a < ts->n_reduce; a++)
            L->ext[L->n] = dag->prog->vars[ts->reduce[a]].extent, L->red[L->n++] = 1;
        if (ann && may_move(sk, dag, k) && ann[k].at >= 0) hosts[ts->consumers[0]] = 1;
        if (sk->st[k].how == SK_FUSED) hosts[sk->st[k].consumer] = 1;
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
            if (pos >= w.L[c].n - 1) pos = w.L[c].n - 2; /* never at the vectorized loop */
            if (pos < 0) pos = 0;
            w_two(&w, STEP_COMPUTE_AT, k, c, pos);
            continue;
        }
        case SK_ROOT:
            if (a && may_move(sk, dag, k) && a->at >= 0) {
                const Loops *C = &w.L[ts->consumers[0]];
                int room = C->n - 1; /* not at or inside the consumer's innermost loop */
                if (room > 0) {
                    w_two(&w, STEP_COMPUTE_AT, k, ts->consumers[0], a->at % room);
                    continue;
                }
            }
            if (!ts->red && a && a->vec && !sk->gpu && L->n >= 1 && a->f[ts->n_spatial - 1][0] > 1) {
                int64_t f = a->f[ts->n_spatial - 1][0];
                w_split(&w, k, ts->n_spatial - 1, &f, 1);
            }
            break;
        case SK_TILED:
        case SK_CONSUMER:
            tile(&w, k, st->how, sk->gpu, a);
            break;
        }
        if (!a) continue; /* the bare sketch */
        if (sk->gpu) {
            int lead = leading_spatial(L);
            if (st->how == SK_TILED) {
                /* S0 -> blockIdx.x, S1 stays in the thread (no vthread step yet), S2 -> threadIdx.x */
                int lev[SKETCH_AXES], cnt[3] = {0};
                int na = axis_levels(dag, k, SK_TILED, 1, lev);
                for (int x = 0; x < ts->n_spatial && x < na; x++)
                    for (int l = 0; l < 3 && l < lev[x]; l++)
                        cnt[l]++;
                w_fuse(&w, k, 0, cnt[0]);
                w_two(&w, STEP_BIND, k, 0, 0);
                if (cnt[2] > 0) {
                    w_fuse(&w, k, 1 + cnt[1], cnt[2]);
                    if (L->ext[1 + cnt[1]] <= 1024) w_two(&w, STEP_BIND, k, 1 + cnt[1], 3);
                }
            } else if (lead > 0) {
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
            int par = hosts[k] ? 0 : a->par < lead ? a->par : lead;
            if (par > 0 && a->vec && par >= L->n) par = L->n - 1; /* keep the innermost loop to vectorize */
            if (par > 0) {
                w_fuse(&w, k, 0, par);
                w_one(&w, STEP_PARALLEL, k, 0);
            }
            if (a->vec && L->n >= 2 && !L->red[L->n - 1] && L->ext[L->n - 1] > 1 && !(par > 0 && L->n - 1 == 0))
                w_one(&w, STEP_VECTORIZE, k, L->n - 1);
        }
        int u = a->unroll < n_unroll ? a->unroll : n_unroll - 1;
        if (u > 0 && unrolls[u] > 0) w_two(&w, STEP_AUTO_UNROLL, k, 0, unrolls[u]);
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
    if (h == SK_TILED || h == SK_CONSUMER) {
        axis_levels(dag, k, h, sk->gpu, lev);
        return lev[a];
    }
    return 2; /* a root stage: one split of its innermost spatial axis (cpu: vectorize; gpu: threads) */
}

static void annotate_stage(const Sketch *sk, const TeDag *dag, int k, Rng *rng, SketchAnn *a) {
    memset(a, 0, sizeof *a);
    const TeStage *ts = &dag->stages[k];
    int n = stage_axes(dag, k);
    for (int x = 0; x < n && x < SKETCH_AXES; x++) {
        for (int l = 0; l < SKETCH_LEVELS - 1; l++)
            a->f[x][l] = 1;
        int lv = levels_for(sk, dag, k, x);
        if (lv > 1) factorize(rng, axis_extent(dag, k, x), lv, a->f[x]);
    }
    if (sk->gpu && sk->st[k].how == SK_ROOT) { /* threads per block of the fused spatial loops */
        int64_t e = axes_product(dag, ts->spatial, ts->n_spatial);
        a->f[0][0] = (int32_t)divisor(rng, e, 1024);
    }
    a->par = (int8_t)(1 + Rng_below(rng, (uint64_t)(ts->n_spatial > 0 ? 2 * ts->n_spatial : 1)));
    a->vec = (int8_t)(Rng_below(rng, 5) != 0);
    const int64_t *u;
    a->unroll = (int8_t)Rng_below(rng, (uint64_t)Sketch_unrollSet(sk->gpu, &u));
    a->at = -1;
    if (may_move(sk, dag, k) && Rng_below(rng, 2)) a->at = (int8_t)Rng_below(rng, 8);
    if (sk->st[k].how == SK_FUSED) a->at = (int8_t)Rng_below(rng, 2);
}

void Sketch_annotate(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann) {
    for (int k = 0; k < dag->n_stages; k++)
        annotate_stage(sk, dag, k, rng, &ann[k]);
}

void Sketch_mutate(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann) {
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

void Sketch_heuristic(const Sketch *sk, const TeDag *dag, int vector, SketchAnn *ann) {
    if (vector < 1) vector = 8;
    for (int k = 0; k < dag->n_stages; k++) {
        SketchAnn *a = &ann[k];
        memset(a, 0, sizeof *a);
        const TeStage *ts = &dag->stages[k];
        int n = stage_axes(dag, k);
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
        a->par = (int8_t)(ts->n_spatial > 1 ? 2 : 1);
        a->vec = 1;
        a->unroll = 2; /* 64 */
        a->at = sk->st[k].how == SK_FUSED ? 1 : -1;
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
    int fused[TE_MAX_TENSORS] = {0};
    for (int i = 0; i < steps->n; i++) {
        const Step *s = &steps->step[i];
        if (s->stage < 0 || s->stage >= dag->n_stages) return false;
        SketchAnn *a = &ann[s->stage];
        SketchHow h = sk->st[s->stage].how;
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
            if (!sk->gpu && s->arg[0] == 0) fused[s->stage] = (int)s->arg[1];
            break;
        case STEP_PARALLEL:
            a->par = (int8_t)(fused[s->stage] ? fused[s->stage] : 1);
            break;
        case STEP_VECTORIZE:
            a->vec = 1;
            break;
        case STEP_AUTO_UNROLL:
            for (int u = 0; u < n_unroll; u++)
                if (unrolls[u] == s->arg[1]) a->unroll = (int8_t)u;
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
        static const char *const HOW[] = {"own loop nest", "inlined", "tiled", "tiled, producer at its tile",
                                          "computed at its consumer's tile"};
        StrBuf_printf(out, "  -> %s", HOW[st->how]);
        if (st->how == SK_TILED) StrBuf_printf(out, " %s", structure(sk->gpu));
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
