/* kernels/templates/te/te_sketch_annotate.c: random annotations of a sketch
 * (Sketch_annotate), within the bounds of a register tile or a GPU block that
 * mutation keeps too (see te_sketch.h). */
#include <string.h>

#include "kernels/templates/te/te_sketch.h"
#include "kernels/templates/te/te_sketch_impl.h"

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

int sk_stage_axes(const TeDag *dag, int k) { return dag->stages[k].n_spatial + dag->stages[k].n_reduce; }

int sk_levels_for(const Sketch *sk, const TeDag *dag, int k, int a) {
    int lev[SKETCH_AXES];
    SketchHow h = sk->st[k].how;
    if (h == SK_RFACTOR) /* the rows J and the lanes F */
        return a == sk_rf_rows(dag, k) || a == dag->stages[k].n_spatial + sk_rfactor_axis(dag, k, sk->cores) ? 2 : 1;
    if (h == SK_POOL) /* y and x: outer, inner */
        return a < dag->stages[k].n_spatial && a >= dag->stages[k].n_spatial - 2 ? 2 : 1;
    if (h == SK_TILED || h == SK_CONSUMER || h == SK_FUSED || h == SK_INPLACE) {
        sk_axis_levels(dag, k, h, sk->gpu, lev);
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
bool sk_tile_fits(const Sketch *sk, const TeDag *dag, int k, const SketchAnn *a) {
    SketchHow h = sk->st[k].how;
    int64_t cap = Sketch_tileFloats(sk->vector);
    if (h == SK_RFACTOR) {
        int x = sk_rf_rows(dag, k), r = sk_rfactor_axis(dag, k, sk->cores);
        return (int64_t)(x >= 0 ? a->f[x][0] : 1) * a->f[dag->stages[k].n_spatial + r][0] <= cap;
    }
    if (!sk->gpu && (h == SK_TILED || h == SK_CONSUMER)) {
        int lev[SKETCH_AXES];
        int64_t tile = 1;
        sk_axis_levels(dag, k, h, 0, lev);
        for (int x = 0; x < dag->stages[k].n_spatial; x++)
            if (lev[x] == 3) tile *= a->f[x][1];
        return tile <= cap;
    }
    if (!sk->gpu || h != SK_TILED) return true;
    int lev[SKETCH_AXES];
    sk_axis_levels(dag, k, SK_TILED, 1, lev);
    int64_t threads = 1, tile = 1;
    for (int x = 0; x < dag->stages[k].n_spatial; x++)
        if (lev[x] == 4) threads *= a->f[x][1], tile *= a->f[x][2];
    return threads <= 1024 && tile <= 64;
}

/* A random location of a pooling-like stage's padded copies: root (-1) or one of its loops outside y inner. */
int8_t sk_pool_at(const TeDag *dag, int k, Rng *rng) {
    int ns = dag->stages[k].n_spatial, outer = ns >= 2 ? ns : 1;
    return (int8_t)((int)Rng_below(rng, (uint64_t)outer + 1) - 1);
}

static void annotate_stage(const Sketch *sk, const TeDag *dag, int k, Rng *rng, SketchAnn *a) {
    memset(a, 0, sizeof *a);
    const TeStage *ts = &dag->stages[k];
    int n = sk_stage_axes(dag, k);
    for (int tries = 0; tries < 32; tries++) {
        for (int x = 0; x < n && x < SKETCH_AXES; x++) {
            for (int l = 0; l < SKETCH_LEVELS - 1; l++)
                a->f[x][l] = 1;
            int lv = sk_levels_for(sk, dag, k, x);
            if (lv > 1) factorize(rng, sk_axis_extent(dag, k, x), lv, a->f[x]);
        }
        if (sk_tile_fits(sk, dag, k, a)) break;
    }
    for (int x = 0; x < n && x < SKETCH_AXES && !sk_tile_fits(sk, dag, k, a); x++)
        a->f[x][1] = a->f[x][2] = 1;           /* rarely: threads and tiles of one axis after another back to 1 */
    if (sk->gpu && sk->st[k].how == SK_ROOT) { /* threads per block of the fused spatial loops */
        int64_t e = sk_axes_product(dag, ts->spatial, ts->n_spatial);
        a->f[0][0] = (int32_t)divisor(rng, e, 1024);
    }
    a->par = (int8_t)(1 + Rng_below(rng, (uint64_t)(ts->n_spatial > 0 ? 2 * ts->n_spatial : 1)));
    a->vec = (int8_t)(Rng_below(rng, 5) != 0);
    const int64_t *u;
    a->unroll = (int8_t)Rng_below(rng, (uint64_t)Sketch_unrollSet(sk->gpu, &u));
    a->at = -1;
    if (Sketch_packs(sk, dag, k) && Rng_below(rng, 2)) a->at = 0; /* a tiled stage's input copied by strips */
    if (sk_may_move(sk, dag, k) && Rng_below(rng, 2)) a->at = (int8_t)Rng_below(rng, 8);
    if (sk_rf_at_row(sk, dag, k) && Rng_below(rng, 2)) a->at = 0;
    if (sk->st[k].how == SK_FUSED) a->at = (int8_t)Rng_below(rng, 2);
    if (sk->st[k].how == SK_POOL) a->at = sk_pool_at(dag, k, rng);
    if (sk->st[k].how == SK_RFACTOR && sk_rf_rows(dag, k) >= 0 && Rng_below(rng, 2)) a->at = 1; /* rf_blocks */
}

void Sketch_annotate(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann) {
    for (int k = 0; k < dag->n_stages; k++)
        annotate_stage(sk, dag, k, rng, &ann[k]);
}
