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

static int8_t unroll_of(int gpu, int64_t limit) {
    const int64_t *unrolls;
    int n_unroll = Sketch_unrollSet(gpu, &unrolls);
    return unroll_index(limit, unrolls, n_unroll);
}

/* Where the pieces of each DAG stage k stand in the steps read so far: the
 * stage itself, its local accumulator, its S.rf (rfactor), its last padded
 * copy and its copy by strips (-1: none); fused: its fused outer loops. */
typedef struct StageMap {
    int n;
    int idx[TE_MAX_TENSORS], local[TE_MAX_TENSORS], rf[TE_MAX_TENSORS], pad[TE_MAX_TENSORS], strip[TE_MAX_TENSORS];
    int fused[TE_MAX_TENSORS];
} StageMap;

/* The DAG stage whose piece stands at a step index, one per kind of piece (-1: none). */
typedef struct StageAt {
    int stage, local, rf, pad, strip;
} StageAt;

static StageAt StageMap_at(const StageMap *m, int at) {
    StageAt w = {-1, -1, -1, -1, -1};
    for (int k = 0; k < m->n; k++) {
        if (m->idx[k] == at) w.stage = k;
        if (m->local[k] == at) w.local = k;
        if (m->rf[k] == at) w.rf = k;
        if (m->pad[k] == at) w.pad = k;
        if (m->strip[k] == at) w.strip = k;
    }
    return w;
}

/* A new stage at index at: the pieces from at on move up by one. Returns what stood at `at`. */
static StageAt StageMap_insert(StageMap *m, int at) {
    StageAt w = StageMap_at(m, at);
    for (int k = 0; k < m->n; k++) {
        if (m->idx[k] >= at) m->idx[k]++;
        if (m->local[k] >= at) m->local[k]++;
        if (m->rf[k] >= at) m->rf[k]++;
        if (m->pad[k] >= at) m->pad[k]++;
        if (m->strip[k] >= at) m->strip[k]++;
    }
    return w;
}

/* cache_read (a padded copy, or one by strips for a local), cache_write or rfactor: a new stage. */
static void read_new_stage(const TeDag *dag, StageMap *m, const Step *s, SketchAnn *ann) {
    StageAt w = StageMap_insert(m, s->stage);
    if (s->kind == STEP_CACHE_READ) {
        if (w.stage >= 0) m->pad[w.stage] = s->stage;
        if (w.local >= 0) m->strip[w.local] = s->stage, ann[w.local].at = 0;
    } else if (s->kind == STEP_RFACTOR && w.stage >= 0) {
        m->rf[w.stage] = s->stage;
        int x = dag->stages[w.stage].n_spatial + (int)s->arg[0];
        if (x >= 0 && x < SKETCH_AXES) ann[w.stage].f[x][0] = (int32_t)s->arg[1];
    } else if (w.stage >= 0 || w.rf >= 0) {
        m->local[w.stage >= 0 ? w.stage : w.rf] = s->stage; /* the new one is k's (or its S.rf's) local */
    }
}

/* A step of the copy of S.rf of rfactor stage k: its rows split, parallel loops, the lanes vectorized. */
static void read_rf_copy(const Sketch *sk, const StageMap *m, int k, const Step *s, SketchAnn *a) {
    if (s->kind == STEP_SPLIT && s->arg[0] >= 0 && s->arg[0] < SKETCH_AXES && s->n_args == 2)
        a->f[s->arg[0]][0] = (int32_t)s->arg[1];
    else if (s->kind == STEP_PARALLEL)
        a->par++;
    else if (s->kind == STEP_VECTORIZE)
        a->vec = 1;
    else if (s->kind == STEP_COMPUTE_AT && s->arg[0] == m->idx[k]) /* S.rf at S's rows: rf_blocks */
        a->at = 1;
    else if (s->kind == STEP_AUTO_UNROLL)
        a->unroll = unroll_of(sk->gpu, s->arg[1]);
}

/* A step of stage k's local: the reduction splits (at their axes' positions), vectorize, unroll. */
static void read_local(const Sketch *sk, const TeDag *dag, int k, const Step *s, SketchAnn *a) {
    int ns = dag->stages[k].n_spatial;
    if (s->kind == STEP_SPLIT && s->arg[0] >= ns && s->arg[0] < SKETCH_AXES && s->n_args == 2)
        a->f[s->arg[0]][0] = (int32_t)s->arg[1];
    else if (s->kind == STEP_VECTORIZE)
        a->vec = 1;
    else if (s->kind == STEP_AUTO_UNROLL)
        a->unroll = unroll_of(sk->gpu, s->arg[1]);
}

/* A step of DAG stage k itself; false when no annotation gives it. */
static bool read_stage(const Sketch *sk, StageMap *m, int k, const Step *s, SketchAnn *a) {
    switch (s->kind) {
    case STEP_SPLIT: {
        /* splits come first, one per axis at the axis' own position (last axis
         * first); a GPU root stage splits its fused loop for the threads */
        int x = sk->gpu && sk->st[k].how == SK_ROOT ? 0 : (int)s->arg[0];
        if (x < 0 || x >= SKETCH_AXES || s->n_args - 1 > SKETCH_LEVELS - 1) return false;
        for (int l = 0; l < s->n_args - 1; l++)
            a->f[x][l] = (int32_t)s->arg[1 + l];
        break;
    }
    case STEP_FUSE:
        if (!sk->gpu && s->arg[0] == 0) m->fused[k] = (int)s->arg[1];
        break;
    case STEP_PARALLEL: /* the fused outer loops, or each of several outer loops */
        a->par = (int8_t)(m->fused[k] ? m->fused[k] : a->par + 1);
        break;
    case STEP_VECTORIZE:
        a->vec = 1;
        break;
    case STEP_AUTO_UNROLL:
        a->unroll = unroll_of(sk->gpu, s->arg[1]);
        break;
    case STEP_COMPUTE_AT:
        a->at = (int8_t)s->arg[1];
        break;
    default:
        break;
    }
    return true;
}

/* One step read into the annotation; false when no annotation gives it. */
static bool read_step(const Sketch *sk, const TeDag *dag, StageMap *m, const Step *s, SketchAnn *ann) {
    if (s->kind == STEP_CACHE_READ || s->kind == STEP_CACHE_WRITE || s->kind == STEP_RFACTOR) {
        read_new_stage(dag, m, s, ann);
        return true;
    }
    StageAt w = StageMap_at(m, s->stage); /* the DAG stage the step acts on, or whose piece it acts on */
    if (w.strip >= 0) return true;
    if (w.pad >= 0) { /* a pooling-like stage's padded copy computed at one of its loops */
        if (s->kind == STEP_COMPUTE_AT) ann[w.pad].at = (int8_t)s->arg[1];
        return true;
    }
    if (w.rf >= 0) {
        read_rf_copy(sk, m, w.rf, s, &ann[w.rf]);
        return true;
    }
    if (w.stage < 0 && w.local >= 0) {
        read_local(sk, dag, w.local, s, &ann[w.local]);
        return true;
    }
    return w.stage < 0 || read_stage(sk, m, w.stage, s, &ann[w.stage]);
}

bool Sketch_recover(const Sketch *sk, const TeDag *dag, const Steps *steps, SketchAnn *ann) {
    StageMap m = {.n = dag->n_stages};
    for (int k = 0; k < dag->n_stages; k++) {
        memset(&ann[k], 0, sizeof ann[k]);
        for (int x = 0; x < SKETCH_AXES; x++)
            for (int l = 0; l < SKETCH_LEVELS - 1; l++)
                ann[k].f[x][l] = 1;
        ann[k].at = -1;
        m.idx[k] = k, m.local[k] = m.rf[k] = m.pad[k] = m.strip[k] = -1;
    }
    for (int i = 0; i < steps->n; i++)
        if (!read_step(sk, dag, &m, &steps->step[i], ann)) return false;
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
