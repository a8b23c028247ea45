/* kernels/templates/te/te_sketch_recover.c: the annotation of a sketch read
 * back from measured steps (Sketch_recover, see te_sketch.h). */
#include <string.h>

#include "kernels/templates/te/te_sketch.h"
#include "kernels/templates/te/te_sketch_impl.h"

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
