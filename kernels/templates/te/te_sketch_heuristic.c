/* kernels/templates/te/te_sketch_heuristic.c: the zero-trial default of a
 * sketch, a heuristic annotation (Sketch_heuristic, see te_sketch.h). */
#include <string.h>

#include "kernels/templates/te/te_sketch.h"
#include "kernels/templates/te/te_sketch_impl.h"

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
    sk_axis_levels(dag, t, sk->st[t].how, 0, lev);
    for (int x = 0; x < ns; x++)
        if (lev[x] == 3) vx = x;
    if (vx < 0) return 0;
    int64_t e = sk_axis_extent(dag, t, vx);
    int64_t reg = simd_factor(e, 2 * vector); /* whole registers, or halves: no scalar remainder */
    /* no read moves along the vector axis in its innermost index (a dense layer's W[j, k] along j): a SIMD
     * loop there would gather; a few scalar accumulators instead (rfactor sketches vectorize such reductions) */
    int contiguous = vx < as->n_spatial && sk_reads_along(as, as->spatial[vx]);
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
            score[x] +=
                sk_uses_var(as->access[i].at, as->spatial[vx]) && !sk_uses_var(as->access[i].at, as->spatial[x]);
    /* a window's row axis (y of X[.., y + r, ..]) takes two rows first: the unrolled copies of r then load
     * rows that its two rows share */
    for (int x = ns - 1; x >= 0 && vx < as->n_spatial && budget >= 4; x--) {
        if (lev[x] != 3 || x == vx || x >= as->n_spatial || sk_axis_extent(dag, t, x) % 2) continue;
        int window = 0;
        for (int r = 0; r < as->n_reduce; r++) {
            int64_t e = sk_axis_extent(dag, acc, as->n_spatial + r);
            window |= e >= 2 && e <= 8 && sk_slides(as, as->spatial[vx], as->spatial[x], as->reduce[r]);
        }
        if (!window) continue;
        a->f[x][1] = 2;
        a->f[x][0] = (int32_t)(sk_axis_extent(dag, t, x) / 2);
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
        int64_t ex = sk_axis_extent(dag, t, best), r = largest_divisor(ex, budget);
        a->f[best][1] = (int32_t)r;
        a->f[best][0] = (int32_t)(ex / r);
        budget /= r;
    }
    /* at least `cores` iterations at the outer level: factors move up from the level above the tile */
    int64_t outer = 1;
    for (int x = 0; x < ns; x++)
        if (lev[x] == 3) outer *= sk_axis_extent(dag, t, x) / ((int64_t)a->f[x][0] * a->f[x][1]);
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
    sk_axis_levels(dag, k, SK_TILED, 0, lev);
    for (int x = 0; x < ts->n_spatial; x++)
        if (lev[x] == 3) vx = x;
    for (int x = 0; x < ts->n_spatial; x++) {
        batch[x] = lev[x] == 3 && x != vx && sk_axis_extent(dag, k, x) > 1;
        for (int i = 0; i < ts->n_access && batch[x]; i++)
            batch[x] =
                dag->prog->tensors[ts->access[i].tensor].is_const || sk_uses_var(ts->access[i].at, ts->spatial[x]);
        any |= batch[x];
    }
    if (vx < 0 || !any) return;
    a->f[vx][0] = (int32_t)(sk_axis_extent(dag, k, vx) / a->f[vx][1]);
    int64_t outer = 1;
    for (int x = 0; x < ts->n_spatial; x++)
        if (lev[x] == 3) outer *= sk_axis_extent(dag, k, x) / ((int64_t)a->f[x][0] * a->f[x][1]);
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
    a->f[ns - 1][0] = (int32_t)largest_divisor(sk_axis_extent(dag, k, ns - 1), 64);
    if (ns >= 2) a->f[ns - 2][0] = (int32_t)largest_divisor(sk_axis_extent(dag, k, ns - 2), 8);
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
    sk_tile_box(dag, t, how, at, 0, box);
    for (int x = 0; x < nt - 1; x++)
        body *= box[x];
    for (int pass = 0; pass < 2; pass++) /* first the axes that slide along a row axis of the tile */
        for (int r = ts->n_reduce - 1; r >= 0; r--) {
            int64_t e = sk_axis_extent(dag, k, ns + r);
            if (ns + r >= SKETCH_AXES || a->f[ns + r][0] > 1) continue;
            if (e > 8 && (longest < 0 || e > sk_axis_extent(dag, k, ns + longest))) longest = r;
            if (e < 2 || e > 8) continue;
            int row = 0;
            for (int x = 0; x < nt - 1 && x < ns; x++)
                row |= box[x] > 1 && sk_slides(ts, ts->spatial[ns - 1], ts->spatial[x], ts->reduce[r]);
            if (pass == 0 && !row) continue;
            if (body * e > SKETCH_MAX_UNROLLED) {
                left += pass;
                continue;
            }
            a->f[ns + r][0] = (int32_t)e;
            body *= e;
        }
    /* a short axis left as a loop around the tile: a long one (16 of the longest axis) goes inside it */
    if (left && longest >= 0)
        a->f[ns + longest][0] = (int32_t)largest_divisor(sk_axis_extent(dag, k, ns + longest), 16);
}

static void heuristic_stages(const Sketch *sk, const TeDag *dag, int vector, SketchAnn *ann);

/* An rfactor stage computed at its consumer's row (rf_streams_shared): one row, so its chains are the F lanes'
 * registers, up to 8 of them (half the vector registers, as a tile's rows), F a multiple of the SIMD width that
 * divides the axis (softmax's 1000: 40, 5 registers). */
static void rf_row_default(const TeDag *dag, int k, int x, int r, int vector, SketchAnn *a) {
    int64_t e = sk_axis_extent(dag, k, r), F = a->f[r][0];
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
            if ((mask >> d & 1) && at->kid[d] && sk_uses_var(at->kid[d], var)) return 1;
    }
    return 0;
}

/* The zero-trial location of stage k at root (cpu), or -1: a product with a small constant whose one consumer is
 * one too and reads it at plain variables (Winograd's output transform by columns, then by rows) is computed at
 * the consumer's innermost loop outside its vectorized one that fixes none of k's constant axes, so that k's
 * elements stay in L1 between the two and k's unrolled loops still reach the constant's indices as numbers
 * (ResNet-18's layer on an AVX2 EPYC: the two stages 66 -> 49 us of CPU). */
static int chain_loop(const Sketch *sk, const TeDag *dag, int k) {
    unsigned mk = sk_const_unrolled(sk, dag, k);
    if (!mk || !sk_may_move(sk, dag, k)) return -1;
    int c = dag->stages[k].consumers[0];
    unsigned mc = sk_const_unrolled(sk, dag, c);
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

/* An rfactor stage: F lanes of the SIMD width, rows for 16 accumulator registers, at most 8. */
static void rf_default(const Sketch *sk, const TeDag *dag, int k, int vector, SketchAnn *a) {
    const TeStage *ts = &dag->stages[k];
    for (int x = 0; x < SKETCH_AXES; x++)
        for (int l = 0; l < SKETCH_LEVELS - 1; l++)
            a->f[x][l] = 1;
    int x = sk_rf_rows(dag, k), r = ts->n_spatial + sk_rfactor_axis(dag, k, sk->cores);
    int64_t e = sk_axis_extent(dag, k, r), F = simd_factor(e, vector);
    a->f[r][0] = (int32_t)F;
    if (x >= 0)
        a->f[x][0] = (int32_t)largest_divisor(
            sk_axis_extent(dag, k, x), 16 / ((F + vector - 1) / vector) < 8 ? 16 / ((F + vector - 1) / vector) : 8);
    a->par = (int8_t)(x >= 0 ? x + 1 : 1);
    a->vec = 1;
    a->unroll = 0;
    a->at = -1;
    if (sk_rf_streams_shared(sk, dag, k)) {
        rf_row_default(dag, k, x, r, vector, a);
    } else if (sk_rf_streams_rows(dag, k, sk->cores)) { /* one row of four vectors of lanes (rf_blocks) */
        int64_t F4 = 4 * vector;
        while (F4 > vector && e % F4)
            F4 -= vector;
        if (e % F4 == 0 && F4 > vector) a->f[r][0] = (int32_t)F4, a->f[x][0] = 1, a->at = 1;
    }
}

/* A tiled stage, a consumer or a fused producer on cpu (see Sketch_heuristic). */
static void cpu_tiled_default(const Sketch *sk, const TeDag *dag, int k, int vector, SketchAnn *a) {
    SketchHow how = sk->st[k].how;
    for (int x = 0; x < SKETCH_AXES; x++)
        for (int l = 0; l < SKETCH_LEVELS - 1; l++)
            a->f[x][l] = 1;
    int acc = k;
    for (int p = 0; p < dag->n_stages && how == SK_CONSUMER; p++)
        if (sk->st[p].how == SK_FUSED && sk->st[p].consumer == k) acc = p;
    /* AVX2 and narrower: matmul's B strip copied (see packed_input) */
    int pack = vector < 16 && how == SK_TILED && sk_packed_input(dag, &sk->st[k], k) >= 0;
    a->vec = (int8_t)(how == SK_FUSED || cpu_tile_default(sk, dag, k, acc, vector, pack, a));
    if (how == SK_TILED && a->vec) batch_default(sk, dag, k, a);
    if (how == SK_TILED) window_default(dag, k, k, SK_TILED, a, a);
    a->par = (int8_t)sk_level0_loops(dag, k);
    a->unroll = 0;
    a->at = how == SK_FUSED ? 1 : pack ? 0 : -1; /* a fused stage: at tile level 1 */
}

/* A tiled stage on a GPU: a 2..4 tile per thread, 8..16 threads per axis. */
static void gpu_tiled_default(const TeDag *dag, int k, SketchAnn *a) {
    const TeStage *ts = &dag->stages[k];
    int lev[SKETCH_AXES], wide = 0;
    sk_axis_levels(dag, k, SK_TILED, 1, lev);
    for (int x = 0; x < ts->n_spatial; x++)
        wide += lev[x] == 4;
    for (int x = 0; x < ts->n_spatial; x++) {
        if (lev[x] != 4) continue;
        int64_t e = sk_axis_extent(dag, k, x), f, g;
        for (f = 4; f > 1 && e % f; f--)
            ;
        for (g = wide > 2 ? 8 : 16; g > 1 && (e / f) % g; g--)
            ;
        a->f[x][0] = 1, a->f[x][1] = (int32_t)g, a->f[x][2] = (int32_t)f;
    }
}

/* Any other stage: the SIMD width, accumulators and a cache-sized block per axis, the outer loops parallel. */
static void plain_default(const Sketch *sk, const TeDag *dag, int k, int vector, SketchAnn *a) {
    const TeStage *ts = &dag->stages[k];
    int n = sk_stage_axes(dag, k);
    SketchHow how = sk->st[k].how;
    for (int x = 0; x < n && x < SKETCH_AXES; x++) {
        for (int l = 0; l < SKETCH_LEVELS - 1; l++)
            a->f[x][l] = 1;
        int lv = sk_levels_for(sk, dag, k, x);
        if (lv < 2) continue;
        int64_t e = sk_axis_extent(dag, k, x);
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
        int64_t e = sk_axes_product(dag, ts->spatial, ts->n_spatial), f;
        for (f = 256; f > 1 && e % f; f--)
            ;
        a->f[0][0] = (int32_t)f;
    }
    if (sk->gpu && sk->st[k].how == SK_TILED) gpu_tiled_default(dag, k, a);
    a->par = (int8_t)(ts->n_spatial > 1 ? 2 : 1);
    a->vec = 1;
    a->unroll = 2; /* 64 */
    a->at = sk->st[k].how == SK_FUSED ? 1 : -1;
}

static void heuristic_stages(const Sketch *sk, const TeDag *dag, int vector, SketchAnn *ann) {
    if (vector < 1) vector = 8;
    for (int k = 0; k < dag->n_stages; k++) {
        SketchAnn *a = &ann[k];
        memset(a, 0, sizeof *a);
        SketchHow how = sk->st[k].how;
        if (how == SK_RFACTOR)
            rf_default(sk, dag, k, vector, a);
        else if (how ==
                 SK_POOL) /* rows of x whole (up to 64), one row of y, the copy per iteration of the loop before y */
            pool_default(dag, k, a);
        else if (!sk->gpu && (how == SK_TILED || how == SK_CONSUMER || how == SK_FUSED))
            cpu_tiled_default(sk, dag, k, vector, a);
        else
            plain_default(sk, dag, k, vector, a);
    }
    for (int k = 0; k < dag->n_stages && !sk->gpu; k++) { /* a fused producer: once its consumer's tile is known */
        if (sk->st[k].how == SK_FUSED)
            window_default(dag, k, sk->st[k].consumer, SK_CONSUMER, &ann[sk->st[k].consumer], &ann[k]);
        ann[k].at = sk->st[k].how == SK_ROOT ? (int8_t)chain_loop(sk, dag, k) : ann[k].at;
    }
}
