/* kernels/templates/te/te_sketch_mutate.c: one random change of an annotation
 * (Sketch_mutate), the evolution's mutation (see te_sketch.h). */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "kernels/templates/te/te_sketch.h"
#include "kernels/templates/te/te_sketch_impl.h"

static void mutate_once(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann);

void Sketch_mutate(const Sketch *sk, const TeDag *dag, Rng *rng, SketchAnn *ann) {
    SketchAnn *keep = tt_malloc((size_t)dag->n_stages * sizeof *keep);
    for (int tries = 0; tries < 8; tries++) {
        memcpy(keep, ann, (size_t)dag->n_stages * sizeof *keep);
        mutate_once(sk, dag, rng, ann);
        bool fits = true;
        for (int k = 0; k < dag->n_stages; k++)
            fits = fits && sk_tile_fits(sk, dag, k, &ann[k]);
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
            int n = sk_stage_axes(dag, k);
            int x = (int)Rng_below(rng, (uint64_t)n), lv = sk_levels_for(sk, dag, k, x);
            if (lv < 2) break;
            int64_t e = sk_axis_extent(dag, k, x), inner = 1;
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
                a->at = sk_pool_at(dag, k, rng);
                return;
            }
            if (h == SK_RFACTOR && (sk_rf_at_row(sk, dag, k) || sk_rf_rows(dag, k) >= 0)) {
                a->at = sk_rf_other_at(sk, dag, k, a->at, rng);
                return;
            }
            if (Sketch_packs(sk, dag, k)) {
                a->at = (int8_t)(a->at >= 0 ? -1 : 0);
                return;
            }
            if (!sk_may_move(sk, dag, k)) break;
            a->at = (int8_t)(a->at >= 0 && Rng_below(rng, 3) == 0 ? -1 : (int)Rng_below(rng, 8));
            return;
        case 4:
            if (sk->gpu) break;
            a->vec = (int8_t)!a->vec;
            return;
        }
    }
}
