/* kernels/templates/te/te_sketch_rules.c: the sketch rules and Sketch_generate
 * (see te_sketch.h). Each rule is a small object, as in TVM's auto-scheduler:
 * a name (SketchRule), a condition on one stage of one sketch (meet) and what
 * it does (apply). Sketch_generate runs the ordered table over every stage,
 * from the output backwards, on every sketch made so far. */
#include "kernels/templates/te/te_sketch.h"

#include <stdio.h>
#include <string.h>

#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_sketch_impl.h"

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

/* An inlinable stage that inlining would compute more than once per element: read by several stages (softmax's
 * exp, read by the sum and by the division), with transcendental math in it. Kept as a stage of its own
 * (vectorized) in a fork, it is computed once. */
static int costly_to_inline(const TeDag *dag, int k) {
    const TeStage *ts = &dag->stages[k];
    return ts->inlinable && ts->n_consumers > 1 && sk_transcendental(dag->prog->tensors[ts->tensor].body);
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
    if (!ts->red || ts->data_reuse || ts->n_spatial == 0 ||
        sk_axes_product(dag, ts->reduce, ts->n_reduce) > POOL_WINDOW)
        return 0;
    for (int i = 0; i < ts->n_access; i++)
        if (reads_padded(dag, k, ts->access[i].tensor)) return 1;
    return 0;
}

/* ---- the rule objects ------------------------------------------------------------ */

/* What a rule's condition says of stage k of a sketch (TVM's ConditionKind,
 * plus the forks and the notes of this project's rules). */
typedef enum {
    RULE_PASS,      /* the rule does not apply: the next one is tried */
    RULE_GOES_ON,   /* it applies (changes the sketch or forks it), and the next rules run */
    RULE_ENDS_STAGE /* it applies, and the stage is done */
} RuleCondition;

/* The sketches made so far: rules fork into out[n] while n < SKETCH_MAX. */
typedef struct SketchGen {
    const TeDag *dag;
    int gpu, cores;
    Sketch *out;
    int n;
} SketchGen;

typedef struct SketchRuleDef {
    SketchRule kind; /* its name (SketchRule_name) and the bit it sets in SketchStage.rules */
    RuleCondition (*meet)(const SketchGen *g, const Sketch *sk, int k);
    /* cond: what meet returned for this stage, where the rule has two outcomes */
    void (*apply)(SketchGen *g, Sketch *sk, int k, RuleCondition cond);
} SketchRuleDef;

static bool room(const SketchGen *g) { return g->n < SKETCH_MAX; }

/* A copy of sk appended to the sketches, done with the current stage (the
 * loop over sketches does not reach it before the next stage). */
static Sketch *fork_of(SketchGen *g, const Sketch *sk) {
    Sketch *f = &g->out[g->n++];
    *f = *sk;
    return f;
}

static void set_how(Sketch *sk, int k, SketchRule r, SketchHow how) {
    sk->st[k].rules |= 1u << r;
    sk->st[k].how = how;
}

/* gpu, data reuse: noted, no step yet */
static RuleCondition shared_read_meet(const SketchGen *g, const Sketch *sk, int k) {
    return g->gpu && g->dag->stages[k].data_reuse ? RULE_GOES_ON : RULE_PASS;
}
static void shared_read_apply(SketchGen *g, Sketch *sk, int k, RuleCondition cond) {
    sk->st[k].rules |= 1u << RULE_SHARED_READ;
    note_add(sk, "shared-memory cache_read: not applied (a cache stage at the block's tile could not be tiled "
                 "across the threads), inputs read from global memory");
}

/* A costly stage (cpu, room for a fork): this sketch computes it once, in its
 * own loop nest, and goes on; a fork inlines it. Else the stage is inlined. */
static RuleCondition inline_meet(const SketchGen *g, const Sketch *sk, int k) {
    if (!g->dag->stages[k].inlinable) return RULE_PASS;
    return !g->gpu && costly_to_inline(g->dag, k) && room(g) ? RULE_GOES_ON : RULE_ENDS_STAGE;
}
static void inline_apply(SketchGen *g, Sketch *sk, int k, RuleCondition cond) {
    set_how(cond == RULE_GOES_ON ? fork_of(g, sk) : sk, k, RULE_INLINE, SK_INLINE);
}

/* cpu, pooling-like: over a padded copy, the window innermost */
static RuleCondition window_meet(const SketchGen *g, const Sketch *sk, int k) {
    return !g->gpu && Sketch_pooling(g->dag, k) ? RULE_ENDS_STAGE : RULE_PASS;
}
static void window_apply(SketchGen *g, Sketch *sk, int k, RuleCondition cond) { set_how(sk, k, RULE_WINDOW, SK_POOL); }

/* gpu, a reduction without data reuse: noted, one thread per output element */
static RuleCondition cross_thread_meet(const SketchGen *g, const Sketch *sk, int k) {
    const TeStage *ts = &g->dag->stages[k];
    return g->gpu && ts->red && !ts->data_reuse ? RULE_GOES_ON : RULE_PASS;
}
static void cross_thread_apply(SketchGen *g, Sketch *sk, int k, RuleCondition cond) {
    sk->st[k].rules |= 1u << RULE_CROSS_THREAD;
    note_add(sk, "cross-thread reduction: no step yet, one thread per output element");
}

/* gpu: noted, the reduction stays serial; cpu: a fork splits the reduction,
 * its inner part vectorized, and this sketch goes on */
static RuleCondition rfactor_meet(const SketchGen *g, const Sketch *sk, int k) {
    if (g->gpu) return sk_needs_rfactor(g->dag, &g->dag->stages[k], g->cores) ? RULE_GOES_ON : RULE_PASS;
    return sk_rfactor_axis(g->dag, k, g->cores) >= 0 && room(g) ? RULE_GOES_ON : RULE_PASS;
}
static void rfactor_apply(SketchGen *g, Sketch *sk, int k, RuleCondition cond) {
    if (!g->gpu) {
        set_how(fork_of(g, sk), k, RULE_RFACTOR, SK_RFACTOR);
        return;
    }
    sk->st[k].rules |= 1u << RULE_RFACTOR;
    note_add(sk, "rfactor: no step yet, the reduction stays serial");
}

/* cpu, data reuse and no fusible consumer: this sketch gets the local
 * accumulator (tiled SS(RRS)); a fork tiles in place */
static RuleCondition cache_write_meet(const SketchGen *g, const Sketch *sk, int k) {
    const TeStage *ts = &g->dag->stages[k];
    return !g->gpu && ts->data_reuse && ts->fusible_consumer < 0 ? RULE_ENDS_STAGE : RULE_PASS;
}
static void cache_write_apply(SketchGen *g, Sketch *sk, int k, RuleCondition cond) {
    if (room(g)) set_how(fork_of(g, sk), k, RULE_TILE, SK_INPLACE);
    sk->st[k].rules |= 1u << RULE_CACHE_WRITE | 1u << RULE_TILE;
    sk->st[k].how = SK_TILED;
}

/* cpu, data reuse and a fusible consumer still at root: a fork fuses them;
 * this sketch goes on to plain tiling */
static RuleCondition tile_fusion_meet(const SketchGen *g, const Sketch *sk, int k) {
    const TeStage *ts = &g->dag->stages[k];
    int c = ts->fusible_consumer;
    return !g->gpu && ts->data_reuse && c >= 0 && sk->st[c].how == SK_ROOT && room(g) ? RULE_GOES_ON : RULE_PASS;
}
static void tile_fusion_apply(SketchGen *g, Sketch *sk, int k, RuleCondition cond) {
    int c = g->dag->stages[k].fusible_consumer;
    Sketch *f = fork_of(g, sk);
    set_how(f, k, RULE_TILE_FUSION, SK_FUSED);
    f->st[k].consumer = c;
    f->st[c].how = SK_CONSUMER;
    f->st[c].rules = (f->st[c].rules & ~(1u << RULE_SKIP)) | 1u << RULE_TILE_FUSION;
}

static RuleCondition tile_meet(const SketchGen *g, const Sketch *sk, int k) {
    return g->dag->stages[k].data_reuse ? RULE_ENDS_STAGE : RULE_PASS;
}
static void tile_apply(SketchGen *g, Sketch *sk, int k, RuleCondition cond) {
    set_how(sk, k, RULE_TILE, g->gpu ? SK_TILED : SK_INPLACE);
}

static RuleCondition skip_meet(const SketchGen *g, const Sketch *sk, int k) { return RULE_ENDS_STAGE; }
static void skip_apply(SketchGen *g, Sketch *sk, int k, RuleCondition cond) { sk->st[k].rules |= 1u << RULE_SKIP; }

/* The rules in the order they are tried; the first rule that ends the stage
 * ends it. Rules whose condition holds only on one kind of target say so in
 * their condition (te_sketch.h lists the order per target). */
static const SketchRuleDef RULES[] = {
    {RULE_SHARED_READ, shared_read_meet, shared_read_apply},
    {RULE_INLINE, inline_meet, inline_apply},
    {RULE_WINDOW, window_meet, window_apply},
    {RULE_CROSS_THREAD, cross_thread_meet, cross_thread_apply},
    {RULE_RFACTOR, rfactor_meet, rfactor_apply},
    {RULE_CACHE_WRITE, cache_write_meet, cache_write_apply},
    {RULE_TILE_FUSION, tile_fusion_meet, tile_fusion_apply},
    {RULE_TILE, tile_meet, tile_apply},
    {RULE_SKIP, skip_meet, skip_apply},
};

/* ---- generation ------------------------------------------------------------------ */

/* The first sketch: every stage at root; on cpu a stage that is tiled (data
 * reuse, or pooling-like) gets a padded copy of each input it reads through
 * padding (forks copy it). */
static void first_sketch(const TeDag *dag, int gpu, int cores, Sketch *sk) {
    memset(sk, 0, sizeof *sk);
    sk->gpu = gpu;
    sk->cores = cores > 0 ? cores : 1;
    sk->n_stages = dag->n_stages;
    for (int k = 0; k < dag->n_stages; k++)
        sk->st[k] = (SketchStage){.how = SK_ROOT, .consumer = -1};
    for (int k = 0; k < dag->n_stages && !gpu; k++) {
        int tiled = dag->stages[k].data_reuse || Sketch_pooling(dag, k);
        for (int i = 0; i < dag->stages[k].n_access && tiled; i++) {
            int t = dag->stages[k].access[i].tensor;
            if (t < 64 && !(sk->st[k].pad >> t & 1) && reads_padded(dag, k, t)) sk->st[k].pad |= (uint64_t)1 << t;
        }
    }
}

static void apply_rules(SketchGen *g, Sketch *sk, int k) {
    for (size_t r = 0; r < sizeof RULES / sizeof RULES[0]; r++) {
        RuleCondition cond = RULES[r].meet(g, sk, k);
        if (cond == RULE_PASS) continue;
        RULES[r].apply(g, sk, k, cond);
        if (cond == RULE_ENDS_STAGE) return;
    }
}

int Sketch_generate(const TeDag *dag, int gpu, int cores, Sketch *out) {
    SketchGen g = {.dag = dag, .gpu = gpu, .cores = cores, .out = out, .n = 1};
    first_sketch(dag, gpu, cores, &out[0]);
    for (int k = dag->n_stages - 1; k >= 0; k--) {
        int n_now = g.n; /* forks made at stage k wait for the next stage */
        for (int i = 0; i < n_now; i++)
            apply_rules(&g, &out[i], k);
    }
    int n = g.n;
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
