/* kernels/templates/te/te_lower.c: schedule steps -> loop nest -> C (see te_lower.h).
 *
 * Each stage keeps a list of iterators, Halide style: its axes (spatial then
 * reduction) are the roots; split replaces a loop by outer..inner loops whose
 * values combine as outer*stride + inner; fuse replaces adjacent loops by one
 * whose value is divided back. The stage's loops are the current leaves in
 * order. An axis value is rebuilt from the leaves at lowering. */
#include "kernels/templates/te/te_lower.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITERS 96
#define MAX_LEAVES 32

enum { REL_NONE, REL_SPLIT, REL_FUSE };
enum { AT_ROOT, AT_INLINE, AT_STAGE };

typedef struct Iter {
    int64_t extent;
    int is_reduce;
    LnAnn ann;
    int64_t auto_unroll;
    int bind;
    /* what became of it: split into out[], or fused (with siblings in[]) into out[0] */
    int rel;
    int n_out, out[STEP_MAX_ARGS + 1];
    int n_in, in[STEP_MAX_ARGS + 1]; /* fuse: every iterator fused together, in order */
} Iter;

typedef struct Sched {
    int n_iters;
    Iter it[MAX_ITERS];
    int n_leaves;
    int leaves[MAX_LEAVES];
    int n_roots; /* spatial + reduction axes */
    int inexact; /* some split does not divide */
    int attach, at_stage, at_iter, at_step;
    int looped_step;               /* index of the first step that changed its loops, -1 */
    int64_t align[TE_MAX_DIMS][2]; /* storage_align: factor and offset of each dimension's stride (0: none) */
    int align_step;                /* the last storage_align step, -1 */
} Sched;

typedef struct Lower {
    TeDag *dag; /* the nest's own copy, which cache steps extend */
    TeProgram *prog;
    LoopNest *ln;
    Sched *s;                                    /* one per stage */
    int shared[TE_MAX_TENSORS];                  /* per tensor: cache_read asked for shared memory */
    const struct Region *region[TE_MAX_TENSORS]; /* per stage, while it is built: its box */
    char *err;
} Lower;

static Status step_fail(char *err, int idx, const Step *st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static Status step_fail(char *err, int idx, const Step *st, const char *fmt, ...) {
    char msg[TT_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tt_fail(err, "step %d (%s %d): %s", idx, StepKind_name(st->kind), st->stage, msg);
}

static const char *stage_name(const TeDag *d, int s) { return d->prog->tensors[d->stages[s].tensor].name; }

static int new_iter(Sched *s, int64_t extent, int is_reduce) {
    Iter *it = &s->it[s->n_iters];
    memset(it, 0, sizeof *it);
    it->extent = extent;
    it->is_reduce = is_reduce;
    return s->n_iters++;
}

static Status check_loop(char *err, int idx, const Step *st, const Sched *s, int64_t pos) {
    if (pos < 0 || pos >= s->n_leaves)
        return step_fail(err, idx, st, "loop %lld does not exist (the stage has %d loops)", (long long)pos,
                         s->n_leaves);
    return TT_OK;
}

static Status cache_stage(Lower *L, int idx, const Step *st);
static Status rfactor_stage(Lower *L, int idx, const Step *st);

static Status apply(Lower *L, int idx, const Step *st) {
    const TeDag *d = L->dag;
    char *err = L->err;
    if (st->stage < 0 || st->stage >= d->n_stages)
        return step_fail(err, idx, st, "stage %d does not exist (%d stages)", st->stage, d->n_stages);
    if (st->kind == STEP_CACHE_WRITE || st->kind == STEP_CACHE_READ) return cache_stage(L, idx, st);
    if (st->kind == STEP_RFACTOR) return rfactor_stage(L, idx, st);
    Sched *s = &L->s[st->stage];
    const TeStage *ts = &d->stages[st->stage];
    int loops = st->kind == STEP_SPLIT || st->kind == STEP_REORDER || st->kind == STEP_FUSE ||
                st->kind == STEP_PARALLEL || st->kind == STEP_VECTORIZE || st->kind == STEP_UNROLL ||
                st->kind == STEP_AUTO_UNROLL || st->kind == STEP_BIND;
    if (loops && s->attach == AT_INLINE)
        return step_fail(err, idx, st, "stage %s is inlined: it has no loops", stage_name(d, st->stage));
    if (loops && s->looped_step < 0) s->looped_step = idx;
    switch (st->kind) {
    case STEP_SPLIT: {
        if (check_loop(err, idx, st, s, st->arg[0])) return TT_ERR;
        int pos = (int)st->arg[0], from = s->leaves[pos];
        int nf = st->n_args - 1;
        if (s->n_leaves + nf > MAX_LEAVES || s->n_iters + nf + 1 > MAX_ITERS)
            return step_fail(err, idx, st, "too many loops");
        int64_t prod = 1;
        for (int i = 1; i <= nf; i++) {
            if (st->arg[i] < 1) return step_fail(err, idx, st, "factor %lld is not positive", (long long)st->arg[i]);
            prod *= st->arg[i];
            if (prod > s->it[from].extent)
                return step_fail(err, idx, st, "factors multiply to more than the loop's extent %lld",
                                 (long long)s->it[from].extent);
        }
        int64_t outer = (s->it[from].extent + prod - 1) / prod;
        if (outer * prod != s->it[from].extent) s->inexact = 1;
        int ids[STEP_MAX_ARGS + 1];
        ids[0] = new_iter(s, outer, s->it[from].is_reduce);
        for (int i = 1; i <= nf; i++)
            ids[i] = new_iter(s, st->arg[i], s->it[from].is_reduce);
        Iter *f = &s->it[from];
        f->rel = REL_SPLIT;
        f->n_out = nf + 1;
        memcpy(f->out, ids, sizeof(int) * (nf + 1));
        memmove(&s->leaves[pos + nf + 1], &s->leaves[pos + 1], sizeof(int) * (s->n_leaves - pos - 1));
        memcpy(&s->leaves[pos], ids, sizeof(int) * (nf + 1));
        s->n_leaves += nf;
        return TT_OK;
    }
    case STEP_REORDER: {
        if (st->n_args != s->n_leaves)
            return step_fail(err, idx, st, "%d positions for %d loops", st->n_args, s->n_leaves);
        int seen[MAX_LEAVES] = {0}, next[MAX_LEAVES];
        for (int i = 0; i < st->n_args; i++) {
            if (check_loop(err, idx, st, s, st->arg[i])) return TT_ERR;
            if (seen[st->arg[i]]++) return step_fail(err, idx, st, "loop %lld appears twice", (long long)st->arg[i]);
            next[i] = s->leaves[st->arg[i]];
        }
        memcpy(s->leaves, next, sizeof(int) * s->n_leaves);
        return TT_OK;
    }
    case STEP_FUSE: {
        int pos = (int)st->arg[0], n = (int)st->arg[1];
        if (n < 2 || n > STEP_MAX_ARGS + 1) return step_fail(err, idx, st, "fuse needs 2..%d loops", STEP_MAX_ARGS + 1);
        if (check_loop(err, idx, st, s, pos) || check_loop(err, idx, st, s, pos + n - 1)) return TT_ERR;
        if (s->n_iters == MAX_ITERS) return step_fail(err, idx, st, "too many loops");
        int64_t ext = 1;
        int red = s->it[s->leaves[pos]].is_reduce;
        for (int i = 0; i < n; i++) {
            if (s->it[s->leaves[pos + i]].is_reduce != red)
                return step_fail(err, idx, st, "cannot fuse a spatial loop with a reduction loop");
            ext *= s->it[s->leaves[pos + i]].extent;
            if (ext > ((int64_t)1 << 40)) return step_fail(err, idx, st, "fused extent too large");
        }
        int f = new_iter(s, ext, red);
        for (int i = 0; i < n; i++) {
            Iter *in = &s->it[s->leaves[pos + i]];
            in->rel = REL_FUSE;
            in->n_out = 1;
            in->out[0] = f;
            in->n_in = n;
            for (int k = 0; k < n; k++)
                in->in[k] = s->leaves[pos + k];
        }
        s->leaves[pos] = f;
        memmove(&s->leaves[pos + 1], &s->leaves[pos + n], sizeof(int) * (s->n_leaves - pos - n));
        s->n_leaves -= n - 1;
        return TT_OK;
    }
    case STEP_PARALLEL:
    case STEP_VECTORIZE:
    case STEP_UNROLL:
    case STEP_AUTO_UNROLL: {
        if (check_loop(err, idx, st, s, st->arg[0])) return TT_ERR;
        Iter *it = &s->it[s->leaves[st->arg[0]]];
        if (st->kind == STEP_AUTO_UNROLL) {
            if (st->arg[1] < 0) return step_fail(err, idx, st, "max step %lld is negative", (long long)st->arg[1]);
            it->auto_unroll = st->arg[1];
            return TT_OK;
        }
        if (st->kind != STEP_UNROLL && it->is_reduce)
            return step_fail(err, idx, st, "loop %lld is a reduction loop; its steps depend on each other",
                             (long long)st->arg[0]);
        if (st->kind == STEP_UNROLL && it->extent > 4096)
            return step_fail(err, idx, st, "loop %lld has %lld steps: too many to unroll", (long long)st->arg[0],
                             (long long)it->extent);
        it->ann = st->kind == STEP_PARALLEL ? ANN_PARALLEL : st->kind == STEP_VECTORIZE ? ANN_VECTORIZE : ANN_UNROLL;
        return TT_OK;
    }
    case STEP_BIND: {
        if (check_loop(err, idx, st, s, st->arg[0])) return TT_ERR;
        Iter *it = &s->it[s->leaves[st->arg[0]]];
        if (st->arg[1] < 0 || st->arg[1] > 8)
            return step_fail(err, idx, st,
                             "thread index %lld is not 0..8 (blockIdx.x/y/z, threadIdx.x/y/z, vthread.x/y/z)",
                             (long long)st->arg[1]);
        if (it->is_reduce) return step_fail(err, idx, st, "loop %lld is a reduction loop", (long long)st->arg[0]);
        for (int i = 0; i < s->n_iters; i++)
            if (s->it[i].bind == st->arg[1] + 1)
                return step_fail(err, idx, st, "%s is bound twice",
                                 st->arg[1] < 3   ? "a block index"
                                 : st->arg[1] < 6 ? "a thread index"
                                                  : "a virtual thread");
        it->bind = (int)st->arg[1] + 1;
        return TT_OK;
    }
    case STEP_STORAGE_ALIGN: {
        int64_t dim = st->arg[0], f = st->arg[1], o = st->arg[2];
        if (dim < 0 || dim >= ts->n_spatial)
            return step_fail(err, idx, st, "dimension %lld does not exist (%s has %d)", (long long)dim,
                             stage_name(d, st->stage), ts->n_spatial);
        if (f < 1 || o < 0 || o >= f)
            return step_fail(err, idx, st, "factor %lld and offset %lld: need factor >= 1, 0 <= offset < factor",
                             (long long)f, (long long)o);
        s->align[dim][0] = f, s->align[dim][1] = o, s->align_step = idx;
        return TT_OK;
    }
    case STEP_COMPUTE_INLINE:
        if (!ts->injective || ts->is_output)
            return step_fail(err, idx, st, "stage %s %s; only a stage without reduction that is not an output inlines",
                             stage_name(d, st->stage), ts->is_output ? "is an output" : "has a reduction");
        if (s->looped_step >= 0)
            return step_fail(err, idx, st, "stage %s was given loops by step %d", stage_name(d, st->stage),
                             s->looped_step);
        s->attach = AT_INLINE;
        return TT_OK;
    case STEP_COMPUTE_ROOT:
        s->attach = AT_ROOT;
        return TT_OK;
    case STEP_COMPUTE_AT: {
        int t = (int)st->arg[0];
        if (t < 0 || t >= d->n_stages || t == st->stage)
            return step_fail(err, idx, st, "target stage %d is not another stage", t);
        if (ts->is_output) return step_fail(err, idx, st, "stage %s is an output", stage_name(d, st->stage));
        /* at its one reader, or at a loop of the stage that reader is computed at (around that loop: checked
         * once every step is applied) */
        int r = ts->n_consumers == 1 ? ts->consumers[0] : -1;
        if (r < 0)
            return step_fail(err, idx, st, "stage %s is read by other stages than %s", stage_name(d, st->stage),
                             stage_name(d, t));
        if (r != t && (L->s[r].attach != AT_STAGE || L->s[r].at_stage != t))
            return step_fail(err, idx, st, "stage %s is read by %s, which is not %s nor computed at a loop of it",
                             stage_name(d, st->stage), stage_name(d, r), stage_name(d, t));
        if (L->s[t].attach == AT_INLINE) return step_fail(err, idx, st, "target %s is inlined", stage_name(d, t));
        if (check_loop(err, idx, st, &L->s[t], st->arg[1])) return TT_ERR;
        s->attach = AT_STAGE;
        s->at_stage = t;
        s->at_iter = L->s[t].leaves[st->arg[1]];
        s->at_step = idx;
        return TT_OK;
    }
    default:
        return step_fail(err, idx, st, "unknown step");
    }
}

/* ---- cache stages ----------------------------------------------------------- */

static void init_sched(Lower *L, int k) {
    Sched *s = &L->s[k];
    const TeStage *ts = &L->dag->stages[k];
    memset(s, 0, sizeof *s);
    s->looped_step = s->align_step = -1;
    for (int a = 0; a < ts->n_spatial; a++)
        new_iter(s, L->prog->vars[ts->spatial[a]].extent, 0);
    for (int a = 0; a < ts->n_reduce; a++)
        new_iter(s, L->prog->vars[ts->reduce[a]].extent, 1);
    s->n_roots = s->n_leaves = s->n_iters;
    for (int i = 0; i < s->n_iters; i++)
        s->leaves[i] = i;
}

/* A zeroed expression node owned by the nest. */
static TeExpr *nest_node(LoopNest *ln) {
    if (ln->n_extra == ln->cap_extra) {
        ln->cap_extra = ln->cap_extra ? 2 * ln->cap_extra : 64;
        ln->extra = realloc(ln->extra, sizeof *ln->extra * (size_t)ln->cap_extra);
    }
    return ln->extra[ln->n_extra++] = calloc(1, sizeof(TeExpr));
}

/* tensor[v0, v1, ..]: a new expression node owned by the nest. */
static TeExpr *access_of(Lower *L, int tensor, const int *vars) {
    LoopNest *ln = L->ln;
    if (!ln->pool) ln->pool = calloc(STEPS_MAX * (1 + TE_MAX_DIMS), sizeof(TeExpr));
    TeExpr *a = &ln->pool[ln->n_pool++];
    a->kind = TE_ACCESS;
    a->type = TE_TFLOAT;
    a->tensor = tensor;
    a->n_kids = L->prog->tensors[tensor].ndim;
    for (int d = 0; d < a->n_kids; d++) {
        TeExpr *v = a->kid[d] = &ln->pool[ln->n_pool++];
        v->kind = TE_VAR;
        v->type = TE_TINT;
        v->var = vars[d];
    }
    return a;
}

/* ---- padding (cache_read S T 2) ------------------------------------------------- */

static TeExpr *int_node(Lower *L, TeKind kind, int op, int64_t value, TeExpr *a, TeExpr *b);

/* Integer or condition value of e under the variable values val; 0 when e is
 * anything else (a float, a tensor access, a division by zero). */
static int int_eval(const TeExpr *e, const int64_t *val, int64_t *out) {
    int64_t a = 0, b = 0;
    switch (e->kind) {
    case TE_NUM:
        *out = e->inum;
        return e->type == TE_TINT;
    case TE_VAR:
        *out = val[e->var];
        return 1;
    case TE_NEG:
    case TE_NOT:
        if (!int_eval(e->kid[0], val, &a)) return 0;
        *out = e->kind == TE_NEG ? -a : !a;
        return 1;
    case TE_IF:
        if (!int_eval(e->kid[0], val, &a)) return 0;
        return int_eval(e->kid[a ? 1 : 2], val, out);
    case TE_CALL:
        if (e->type != TE_TINT || (e->op != TE_FMAX && e->op != TE_FMIN) || e->n_kids != 2) return 0;
        if (!int_eval(e->kid[0], val, &a) || !int_eval(e->kid[1], val, &b)) return 0;
        *out = (e->op == TE_FMAX) == (a > b) ? a : b;
        return 1;
    case TE_BIN:
        if (e->type == TE_TFLOAT || !int_eval(e->kid[0], val, &a) || !int_eval(e->kid[1], val, &b)) return 0;
        switch (e->op) {
        case TE_ADD:
            *out = a + b;
            return 1;
        case TE_SUB:
            *out = a - b;
            return 1;
        case TE_MUL:
            *out = a * b;
            return 1;
        case TE_DIV:
            if (!b) return 0;
            *out = te_floordiv(a, b);
            return 1;
        case TE_MOD:
            if (!b) return 0;
            *out = a - te_floordiv(a, b) * b;
            return 1;
        case TE_LT:
            *out = a < b;
            return 1;
        case TE_LE:
            *out = a <= b;
            return 1;
        case TE_GT:
            *out = a > b;
            return 1;
        case TE_GE:
            *out = a >= b;
            return 1;
        case TE_EQ:
            *out = a == b;
            return 1;
        case TE_NE:
            *out = a != b;
            return 1;
        case TE_AND:
            *out = a && b;
            return 1;
        case TE_OR:
            *out = a || b;
            return 1;
        }
        return 0;
    default:
        return 0;
    }
}

static void vars_of(const TeExpr *e, int *used) {
    if (e->kind == TE_VAR) used[e->var] = 1;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i]) vars_of(e->kid[i], used);
}

/* `if(c, T[idx], v)` with T = tensor and v a number: v's node, else NULL */
static const TeExpr *pad_read(const TeExpr *e, int tensor) {
    if (e->kind != TE_IF || e->n_kids != 3) return NULL;
    const TeExpr *v = e->kid[2];
    return e->kid[1]->kind == TE_ACCESS && e->kid[1]->tensor == tensor && v->kind == TE_NUM ? v : NULL;
}

static double num_value(const TeExpr *v) { return v->type == TE_TINT ? (double)v->inum : v->num; }

#define PAD_CHECKS (1 << 20) /* most variable values a padded read's condition is checked over */

/* What the padded reads of one tensor by one body have in common: the index box they read, their value
 * outside the tensor, and why they are no padding (a code below). */
typedef enum { PAD_OK, PAD_NONE, PAD_TEST, PAD_MIXED } PadWhy;
typedef struct PadScan {
    int64_t lo[TE_MAX_DIMS], hi[TE_MAX_DIMS];
    int found;
    double fill, other; /* the value of the first padded read; PAD_MIXED: another one */
    PadWhy why;
} PadScan;

/* Checks one padded read `if(c, T[idx], v)` of T = tensor: c holds exactly where idx is inside T (over every
 * value of the variables involved), and widens p's box by the indices read. */
static int pad_check(const TeProgram *g, const TeExpr *e, int tensor, PadScan *p) {
    const TeExpr *a = e->kid[1];
    const TeTensor *t = &g->tensors[tensor];
    /* the variables of c and of the indices that share one with c: an index of none of them is inside T
     * whatever c says (the parser proved the read under c) */
    int used[TE_MAX_VARS] = {0}, vars[TE_MAX_VARS], nv = 0, dims[TE_MAX_DIMS] = {0};
    vars_of(e->kid[0], used);
    for (int d = 0; d < t->ndim; d++) {
        int of[TE_MAX_VARS] = {0};
        vars_of(a->kid[d], of);
        for (int v = 0; v < g->n_vars; v++)
            dims[d] |= of[v] && used[v];
    }
    for (int d = 0; d < t->ndim; d++)
        if (dims[d]) vars_of(a->kid[d], used);
    int64_t combos = 1, val[TE_MAX_VARS] = {0};
    for (int v = 0; v < g->n_vars; v++)
        if (used[v]) {
            vars[nv++] = v;
            combos *= g->vars[v].extent;
            if (combos > PAD_CHECKS) return 0;
        }
    for (int64_t i = 0; i < combos; i++) {
        int64_t rest = i, c, inside = 1;
        for (int j = 0; j < nv; j++)
            val[vars[j]] = rest % g->vars[vars[j]].extent, rest /= g->vars[vars[j]].extent;
        if (!int_eval(e->kid[0], val, &c)) return 0;
        for (int d = 0; d < t->ndim; d++) {
            int64_t x;
            if (!dims[d]) continue;
            if (!int_eval(a->kid[d], val, &x)) return 0;
            inside &= x >= 0 && x < t->shape[d];
            if (x < p->lo[d]) p->lo[d] = x;
            if (x > p->hi[d]) p->hi[d] = x;
        }
        if (!c != !inside) return 0;
    }
    return 1;
}

/* Checks the padded reads of T = tensor in body e (recursively) into p; 0 (p->why set) at the first that is no
 * padding or whose value outside T differs from the others'. */
static int pad_scan(const TeProgram *g, const TeExpr *e, int tensor, PadScan *p) {
    const TeExpr *v = pad_read(e, tensor);
    if (v) {
        double x = num_value(v);
        if (p->found && memcmp(&x, &p->fill, sizeof x)) { /* one value, to the bit (0 and -0 differ) */
            p->other = x;
            p->why = PAD_MIXED;
            return 0;
        }
        if (!pad_check(g, e, tensor, p)) {
            p->why = PAD_TEST;
            return 0;
        }
        p->fill = x;
        p->found = 1;
        return 1;
    }
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && !pad_scan(g, e->kid[i], tensor, p)) return 0;
    return 1;
}

/* The scans already made, by program key, stage and tensor: a padded read's check walks every value of its
 * variables (a max pooling's 10^5 and more), and every candidate of a task lowers the same reads again. */
#define PAD_MEMO 32
static struct PadMemo {
    char key[TE_KEY_LEN];
    int stage, tensor, ok;
    PadScan p;
} pad_memo[PAD_MEMO];
static int pad_memo_next;
static pthread_mutex_t pad_memo_lock = PTHREAD_MUTEX_INITIALIZER;

/* pad_scan of the stage's body for T = tensor into *p (its box starting as T's own), through pad_memo */
static int pad_scan_memo(const TeDag *dag, int stage, int tensor, PadScan *p) {
    const TeProgram *g = dag->prog;
    const TeTensor *t = &g->tensors[tensor];
    pthread_mutex_lock(&pad_memo_lock);
    for (int i = 0; i < PAD_MEMO; i++) {
        struct PadMemo *m = &pad_memo[i];
        if (m->key[0] && m->stage == stage && m->tensor == tensor && strcmp(m->key, dag->key) == 0) {
            *p = m->p;
            int ok = m->ok;
            pthread_mutex_unlock(&pad_memo_lock);
            return ok;
        }
    }
    pthread_mutex_unlock(&pad_memo_lock);
    *p = (PadScan){.why = PAD_NONE};
    for (int d = 0; d < t->ndim; d++)
        p->lo[d] = 0, p->hi[d] = t->shape[d] - 1;
    int ok = pad_scan(g, g->tensors[dag->stages[stage].tensor].body, tensor, p) && p->found;
    if (!dag->key[0]) return ok; /* a DAG without a key (built by hand) is not remembered */
    pthread_mutex_lock(&pad_memo_lock);
    struct PadMemo *m = &pad_memo[pad_memo_next];
    pad_memo_next = (pad_memo_next + 1) % PAD_MEMO;
    snprintf(m->key, sizeof m->key, "%s", dag->key);
    m->stage = stage, m->tensor = tensor, m->ok = ok, m->p = *p;
    pthread_mutex_unlock(&pad_memo_lock);
    return ok;
}

int LoopNest_padded(const TeDag *dag, int stage, int tensor, int64_t *lo, int64_t *shape, double *fill, char *why) {
    const TeProgram *g = dag->prog;
    if (stage < 0 || stage >= dag->n_stages || tensor < 0 || tensor >= g->n_tensors) return 0;
    const TeTensor *t = &g->tensors[tensor];
    const char *sn = g->tensors[dag->stages[stage].tensor].name, *tn = t->name;
    PadScan p;
    if (pad_scan_memo(dag, stage, tensor, &p)) {
        for (int d = 0; d < t->ndim; d++)
            lo[d] = -p.lo[d], shape[d] = p.hi[d] - p.lo[d] + 1;
        *fill = p.fill;
        return 1;
    }
    if (!why) return 0;
    if (p.why == PAD_MIXED)
        snprintf(why, TT_ERRLEN, "stage %s reads tensor %s padded with %g and with %g: a padded copy holds one value",
                 sn, tn, p.fill, p.other);
    else if (p.why == PAD_TEST)
        snprintf(why, TT_ERRLEN,
                 "stage %s reads tensor %s through a test `if(c, %s[..], v)` whose c is not shown to hold exactly "
                 "where the index is inside %s",
                 sn, tn, tn, tn);
    else
        snprintf(why, TT_ERRLEN, "stage %s reads tensor %s through no padding `if(c, %s[..], v)` (v a number)", sn, tn,
                 tn);
    return 0;
}

/* The phases of T's last dimension in body e (recursively): every read of T has a last index linear in the
 * variables, with one spatial variable (*v, the same in every read) of coefficient *a >= 2 (the same) and only
 * reduction variables besides; 0 when a read does not. */
static int phase_scan(const TeProgram *g, const TeExpr *e, int tensor, int *v, int64_t *a) {
    if (e->kind == TE_ACCESS && e->tensor == tensor) {
        TeLin lin;
        int spatial = -1;
        if (!te_linear(e->kid[e->n_kids - 1], &lin)) return 0;
        for (int i = 0; i < lin.n; i++)
            if (!g->vars[lin.var[i]].is_reduce) {
                if (spatial >= 0) return 0;
                spatial = i;
            }
        if (spatial < 0 || lin.coef[spatial] < 2) return 0;
        if (*a && (*v != lin.var[spatial] || *a != lin.coef[spatial])) return 0;
        *v = lin.var[spatial], *a = lin.coef[spatial];
        return 1;
    }
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && !phase_scan(g, e->kid[i], tensor, v, a)) return 0;
    return 1;
}

int64_t LoopNest_phases(const TeDag *dag, int stage, int tensor) {
    const TeProgram *g = dag->prog;
    if (stage < 0 || stage >= dag->n_stages || tensor < 0 || tensor >= g->n_tensors) return 0;
    int v = -1;
    int64_t a = 0;
    if (g->tensors[tensor].ndim < 1 || g->tensors[tensor].ndim >= TE_MAX_DIMS) return 0;
    return phase_scan(g, g->tensors[dag->stages[stage].tensor].body, tensor, &v, &a) ? a : 0;
}

/* Index p of a padded copy's last dimension laid out by `phases` phases at (phase, q): p = phases * q + phase. */
static TeExpr *phase_pos(Lower *L, const int *axes, int last, int64_t phases) {
    TeExpr *q = int_node(L, TE_VAR, 0, axes[last + 1], NULL, NULL),
           *ph = int_node(L, TE_VAR, 0, axes[last], NULL, NULL);
    TeExpr *aq = int_node(L, TE_BIN, TE_MUL, 0, int_node(L, TE_NUM, 0, phases, NULL, NULL), q);
    return int_node(L, TE_BIN, TE_ADD, 0, aq, ph);
}

/* Last index e of a read (lo added) as (phase, q) of the copy by phases: e + lo = a * v + rest, phase = rest mod a
 * and q = v + rest div a (floor): with the reduction variables of rest unrolled, both fold, and q moves with v
 * at unit stride. */
static void phase_index(Lower *L, const TeExpr *e, int64_t lo, int64_t a, TeExpr **phase, TeExpr **q) {
    TeLin lin;
    te_linear(e, &lin); /* checked by phase_scan */
    TeExpr *rest = int_node(L, TE_NUM, 0, lin.c + lo, NULL, NULL), *v = NULL;
    for (int i = 0; i < lin.n; i++) {
        TeExpr *x = int_node(L, TE_VAR, 0, lin.var[i], NULL, NULL);
        if (!L->prog->vars[lin.var[i]].is_reduce) {
            v = x;
            continue;
        }
        if (lin.coef[i] != 1) x = int_node(L, TE_BIN, TE_MUL, 0, int_node(L, TE_NUM, 0, lin.coef[i], NULL, NULL), x);
        rest = int_node(L, TE_BIN, TE_ADD, 0, x, rest);
    }
    *phase = int_node(L, TE_BIN, TE_MOD, 0, rest, int_node(L, TE_NUM, 0, a, NULL, NULL));
    *q = int_node(L, TE_BIN, TE_ADD, 0, v, int_node(L, TE_BIN, TE_DIV, 0, rest, int_node(L, TE_NUM, 0, a, NULL, NULL)));
}

/* A copy of e (reader body) whose reads of src, padded or not, read nt at the indices shifted by lo; the
 * accesses of e and their copies listed in from[] / to[], the reduction's copy in *red. */
static TeExpr *clone_padded(Lower *L, const TeExpr *e, int src, int nt, const int64_t *lo, int64_t phases,
                            const TeExpr *old_red, TeExpr **red, const TeExpr **from, TeExpr **to, int *n) {
    const TeExpr *acc = !phases && pad_read(e, src) ? e->kid[1] : e->kind == TE_ACCESS && e->tensor == src ? e : NULL;
    if (acc) {
        TeExpr *a = nest_node(L->ln);
        *a = *acc;
        a->tensor = nt;
        int last = acc->n_kids - 1;
        for (int d = 0; d < acc->n_kids; d++)
            if (lo[d] && !(phases && d == last))
                a->kid[d] = int_node(L, TE_BIN, TE_ADD, 0, acc->kid[d], int_node(L, TE_NUM, 0, lo[d], NULL, NULL));
        if (phases) {
            phase_index(L, acc->kid[last], 0, phases, &a->kid[last], &a->kid[last + 1]);
            a->n_kids++;
        }
        if (*n < TE_MAX_ACCESSES) from[*n] = acc, to[(*n)++] = a;
        return a;
    }
    TeExpr *c = nest_node(L->ln);
    *c = *e;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i]) c->kid[i] = clone_padded(L, e->kid[i], src, nt, lo, phases, old_red, red, from, to, n);
    if (e->kind == TE_ACCESS && *n < TE_MAX_ACCESSES) from[*n] = e, to[(*n)++] = c;
    if (e == old_red) *red = c;
    return c;
}

/* The padded copy's body (c = its axes): if(c inside T's box at lo, T[c - lo], fill). */
static TeExpr *padded_body(Lower *L, int src, const int *axes, const int64_t *lo, const int64_t *shape, double fill,
                           TeExpr **access) {
    const TeTensor *t = &L->prog->tensors[src];
    TeExpr *a = access_of(L, src, axes), *cond = NULL;
    for (int d = 0; d < t->ndim; d++) {
        if (lo[d]) a->kid[d] = int_node(L, TE_BIN, TE_SUB, 0, a->kid[d], int_node(L, TE_NUM, 0, lo[d], NULL, NULL));
        if (shape[d] == t->shape[d]) continue;
        TeExpr *v = int_node(L, TE_VAR, 0, axes[d], NULL, NULL);
        TeExpr *ge = int_node(L, TE_BIN, TE_GE, 0, v, int_node(L, TE_NUM, 0, lo[d], NULL, NULL));
        TeExpr *lt = int_node(L, TE_BIN, TE_LT, 0, v, int_node(L, TE_NUM, 0, lo[d] + t->shape[d], NULL, NULL));
        ge->type = lt->type = TE_TBOOL;
        TeExpr *both = int_node(L, TE_BIN, TE_AND, 0, ge, lt);
        both->type = TE_TBOOL;
        if (cond) {
            cond = int_node(L, TE_BIN, TE_AND, 0, cond, both);
            cond->type = TE_TBOOL;
        } else {
            cond = both;
        }
    }
    *access = a;
    if (!cond) return a;
    TeExpr *outside = nest_node(L->ln), *x = nest_node(L->ln);
    outside->kind = TE_NUM;
    outside->type = TE_TFLOAT;
    outside->num = fill;
    x->kind = TE_IF;
    x->type = TE_TFLOAT;
    x->n_kids = 3;
    x->kid[0] = cond, x->kid[1] = a, x->kid[2] = outside;
    return x;
}

/* cache_write S / cache_read S T m: a new tensor and its stage at index S (see steps.h). */
/* A new stage may be inserted at S: S is at root, has no loops yet and nothing is computed at it. */
static Status may_insert(Lower *L, int idx, const Step *st) {
    TeDag *d = L->dag;
    int S = st->stage;
    const char *name = stage_name(d, S);
    if (L->s[S].attach != AT_ROOT)
        return step_fail(L->err, idx, st, "stage %s is %s", name,
                         L->s[S].attach == AT_INLINE ? "inlined" : "computed at another stage");
    if (L->s[S].looped_step >= 0)
        return step_fail(L->err, idx, st, "stage %s was given loops by step %d", name, L->s[S].looped_step);
    for (int k = 0; k < d->n_stages; k++)
        if (L->s[k].attach == AT_STAGE && L->s[k].at_stage == S)
            return step_fail(L->err, idx, st, "stage %s is computed at %s (step %d)", stage_name(d, k), name,
                             L->s[k].at_step);
    if (d->n_stages == TE_MAX_TENSORS || L->prog->n_tensors == TE_MAX_TENSORS)
        return step_fail(L->err, idx, st, "more than %d stages", TE_MAX_TENSORS);
    return TT_OK;
}

/* Stage ns (of the new tensor nt) goes in at index S: the stages from S on
 * move up by one (the caller has moved the consumer entries). */
static void insert_stage(Lower *L, int S, const TeStage *ns, int nt) {
    TeDag *d = L->dag;
    for (int t = 0; t < nt; t++)
        if (d->stage_of[t] >= S) d->stage_of[t]++;
    d->stage_of[nt] = S;
    memmove(&d->stages[S + 1], &d->stages[S], sizeof(TeStage) * (d->n_stages - S));
    d->stages[S] = *ns;
    d->n_stages++;
    L->s = realloc(L->s, sizeof(Sched) * d->n_stages);
    memmove(&L->s[S + 1], &L->s[S], sizeof(Sched) * (d->n_stages - 1 - S));
    for (int k = 0; k < d->n_stages; k++)
        if (L->s[k].attach == AT_STAGE && L->s[k].at_stage >= S) L->s[k].at_stage++;
    init_sched(L, S);
}

static Status cache_stage(Lower *L, int idx, const Step *st) {
    TeDag *d = L->dag;
    TeProgram *g = L->prog;
    int S = st->stage, write = st->kind == STEP_CACHE_WRITE;
    const char *name = stage_name(d, S);
    if (may_insert(L, idx, st)) return TT_ERR;
    int src = d->stages[S].tensor, reads = 0, pad = !write && st->arg[1] == 2;
    int64_t pad_lo[TE_MAX_DIMS] = {0}, pad_shape[TE_MAX_DIMS] = {0}, phases = 0;
    double fill = 0;
    if (!write) {
        src = (int)st->arg[0];
        for (int a = 0; a < d->stages[S].n_access; a++)
            reads |= d->stages[S].access[a].tensor == src;
        if (!reads)
            return step_fail(L->err, idx, st, "stage %s does not read tensor %lld", name, (long long)st->arg[0]);
        if (st->arg[1] < 0 || st->arg[1] > 3)
            return step_fail(L->err, idx, st, "memory %lld is not 0 (local), 1 (shared), 2 (padded) or 3 (by phases)",
                             (long long)st->arg[1]);
        if (st->n_args > 2 && (st->arg[1] != 2 || st->arg[2] < 1))
            return step_fail(L->err, idx, st, "a third argument is a padded copy's (memory 2) rounding, at least 1");
        char why[TT_ERRLEN];
        if (pad && !LoopNest_padded(d, S, src, pad_lo, pad_shape, &fill, why))
            return step_fail(L->err, idx, st, "%s", why);
        int last = g->tensors[src].ndim - 1;
        if (pad && st->n_args > 2) /* the last extent rounded up: more border on the high side */
            pad_shape[last] = (pad_shape[last] + st->arg[2] - 1) / st->arg[2] * st->arg[2];
        if (st->arg[1] == 3 && !(phases = LoopNest_phases(d, S, src)))
            return step_fail(L->err, idx, st,
                             "stage %s reads %s at last indices other than a * v + (reduction variables) with one "
                             "spatial variable v and one stride a >= 2: no phases",
                             name, g->tensors[src].name);
        if (phases && g->tensors[src].shape[last] % phases)
            return step_fail(L->err, idx, st, "the last extent %lld of %s is no multiple of its %lld phases",
                             (long long)g->tensors[src].shape[last], g->tensors[src].name, (long long)phases);
        if (g->n_vars + g->tensors[src].ndim + 1 > TE_MAX_VARS) return step_fail(L->err, idx, st, "too many variables");
    }
    int nt = g->n_tensors++;
    TeTensor *c = &g->tensors[nt];
    *c = g->tensors[src];
    char src_name[TE_NAME_LEN];
    memcpy(src_name, c->name, sizeof src_name);
    snprintf(c->name, sizeof c->name, "%.24s.%s", src_name,
             pad                    ? "pad"
             : phases               ? "ph"
             : !write && st->arg[1] ? "shared"
                                    : "local");
    c->is_input = c->is_output = 0;
    c->dtype = TE_F32;
    L->shared[nt] = !write && st->arg[1] == 1;
    if (pad) memcpy(c->shape, pad_shape, sizeof(int64_t) * (size_t)c->ndim);
    if (phases) { /* the last dimension as (phase, q) */
        int last = c->ndim++ - 1;
        c->shape[last + 1] = c->shape[last] / phases;
        c->shape[last] = phases;
    }
    TeStage ns;
    if (write) { /* the new stage computes S's value; S copies it */
        ns = d->stages[S];
        ns.tensor = nt;
        ns.is_output = ns.inlinable = 0;
        ns.n_consumers = 1;
        ns.consumers[0] = S + 1;
        ns.fusible_consumer = ns.data_reuse ? S + 1 : -1;
        TeExpr *a = access_of(L, nt, c->axes);
        g->tensors[src].body = a;
        TeStage *old = &d->stages[S];
        old->red = NULL;
        old->n_reduce = 0;
        old->n_access = 1;
        old->access[0] = (TeAccess){.tensor = nt, .at = a};
        old->injective = old->elementwise = 1;
        old->data_reuse = 0;
        old->fusible_consumer = -1;
        old->flops = 0;
        old->inlinable = !old->is_output;
    } else { /* the new stage copies src over variables of its own; S reads the copy */
        memset(&ns, 0, sizeof ns);
        for (int k = 0; k < c->ndim; k++) {
            TeVar *v = &g->vars[g->n_vars];
            memset(v, 0, sizeof *v);
            snprintf(v->name, sizeof v->name, "c%d", k);
            v->extent = c->shape[k];
            c->axes[k] = ns.spatial[k] = g->n_vars++;
        }
        TeExpr *read = NULL;
        if (pad) {
            c->body = padded_body(L, src, c->axes, pad_lo, pad_shape, fill, &read);
        } else {
            c->body = read = access_of(L, src, c->axes);
            if (phases) read->kid[read->n_kids - 1] = phase_pos(L, c->axes, read->n_kids - 1, phases);
        }
        ns.tensor = nt;
        ns.n_spatial = c->ndim;
        ns.n_access = 1;
        ns.access[0] = (TeAccess){.tensor = src, .at = read};
        if (pad || phases) { /* S reads the copy at shifted indices, without the tests (or by phases) */
            TeStage *r = &d->stages[S];
            const TeExpr *from[TE_MAX_ACCESSES];
            TeExpr *to[TE_MAX_ACCESSES], *red = NULL;
            int n = 0;
            TeTensor *rt = &g->tensors[r->tensor];
            rt->body = clone_padded(L, rt->body, src, nt, pad_lo, phases, r->red, &red, from, to, &n);
            if (r->red) r->red = red;
            for (int a = 0; a < r->n_access; a++)
                for (int i = 0; i < n; i++)
                    if (r->access[a].at == from[i]) r->access[a].at = to[i];
        }
        ns.n_consumers = 1;
        ns.consumers[0] = S + 1;
        ns.injective = ns.elementwise = 1;
        ns.fusible_consumer = -1;
        for (int a = 0; a < d->stages[S].n_access; a++)
            if (d->stages[S].access[a].tensor == src) d->stages[S].access[a].tensor = nt;
    }
    /* stages from S on move up by one; a consumer entry S stays where the reads moved to the new stage */
    for (int k = 0; k < d->n_stages; k++)
        for (int i = 0; i < d->stages[k].n_consumers; i++) {
            int *e = &d->stages[k].consumers[i];
            if (*e > S || (*e == S && !write && d->stage_of[src] != k)) ++*e;
        }
    insert_stage(L, S, &ns, nt);
    if (write) init_sched(L, S + 1);
    return TT_OK;
}

/* A copy of expression e owned by the nest, with variable v replaced by `by`;
 * the accesses of e and their copies are listed in from[] / to[] (at most max). */
static TeExpr *clone_subst(Lower *L, const TeExpr *e, int v, TeExpr *by, const TeExpr **from, TeExpr **to, int *n,
                           int max) {
    if (e->kind == TE_VAR && e->var == v) return by;
    TeExpr *c = nest_node(L->ln);
    *c = *e;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i]) c->kid[i] = clone_subst(L, e->kid[i], v, by, from, to, n, max);
    if (e->kind == TE_ACCESS && *n < max) from[*n] = e, to[(*n)++] = c;
    return c;
}

/* e with node `old` replaced by `by`: the nodes on the way to it copied, the rest shared. */
static TeExpr *replace_node(Lower *L, TeExpr *e, const TeExpr *old, TeExpr *by) {
    if (e == old) return by;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i]) {
            TeExpr *k = replace_node(L, e->kid[i], old, by);
            if (k != e->kid[i]) {
                TeExpr *c = nest_node(L->ln);
                *c = *e;
                c->kid[i] = k;
                return c;
            }
        }
    return e;
}

static int new_var(TeProgram *g, int base, const char *suffix, int64_t extent, int is_reduce) {
    char name[TE_NAME_LEN];
    memcpy(name, g->vars[base].name, sizeof name);
    TeVar *v = &g->vars[g->n_vars];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%.24s.%s", name, suffix);
    v->extent = extent;
    v->is_reduce = is_reduce;
    return g->n_vars++;
}

static TeExpr *int_node(Lower *L, TeKind kind, int op, int64_t value, TeExpr *a, TeExpr *b) {
    TeExpr *x = nest_node(L->ln);
    x->kind = kind;
    x->type = TE_TINT;
    x->op = op;
    x->inum = value;
    x->num = (double)value;
    x->var = (int)value;
    x->kid[0] = a, x->kid[1] = b;
    x->n_kids = a ? (b ? 2 : 1) : 0;
    return x;
}

/* rfactor S r f (see steps.h): reduction axis k = outer * f + inner; the new
 * stage S.rf[spatial.., inner] reduces over outer (and S's other reduction
 * axes), S reduces S.rf over a new axis of f steps. */
static Status rfactor_stage(Lower *L, int idx, const Step *st) {
    TeDag *d = L->dag;
    TeProgram *g = L->prog;
    int S = st->stage;
    const char *name = stage_name(d, S);
    TeStage *old = &d->stages[S];
    if (!old->red) return step_fail(L->err, idx, st, "stage %s has no reduction", name);
    int64_t r = st->arg[0], f = st->arg[1];
    if (r < 0 || r >= old->n_reduce)
        return step_fail(L->err, idx, st, "reduction axis %lld does not exist (%s has %d)", (long long)r, name,
                         old->n_reduce);
    int kv = old->reduce[r];
    int64_t E = g->vars[kv].extent;
    if (f < 1 || E % f)
        return step_fail(L->err, idx, st, "factor %lld does not divide the axis' extent %lld", (long long)f,
                         (long long)E);
    if (may_insert(L, idx, st)) return TT_ERR;
    const TeTensor *src = &g->tensors[old->tensor];
    if (src->ndim == TE_MAX_DIMS || old->n_spatial == TE_MAX_DIMS || g->n_vars + 3 > TE_MAX_VARS)
        return step_fail(L->err, idx, st, "too many dimensions or variables");
    int vo = new_var(g, kv, "o", E / f, 1), vi = new_var(g, kv, "i", f, 0), vr = new_var(g, kv, "r", f, 1);
    int nt = g->n_tensors++;
    TeTensor *c = &g->tensors[nt];
    *c = *src;
    char src_name[TE_NAME_LEN];
    memcpy(src_name, c->name, sizeof src_name);
    snprintf(c->name, sizeof c->name, "%.24s.rf", src_name);
    c->is_input = c->is_output = 0;
    c->dtype = TE_F32;
    c->shape[c->ndim] = f;
    c->axes[c->ndim++] = vi;
    /* S.rf's value: the reduction with k = outer * f + inner */
    TeExpr *k_of =
        int_node(L, TE_BIN, TE_ADD, 0,
                 int_node(L, TE_BIN, TE_MUL, 0, int_node(L, TE_VAR, 0, vo, 0, 0), int_node(L, TE_NUM, 0, f, 0, 0)),
                 int_node(L, TE_VAR, 0, vi, 0, 0));
    const TeExpr *from[TE_MAX_ACCESSES];
    TeExpr *to[TE_MAX_ACCESSES];
    int n_acc = 0;
    TeExpr *red = nest_node(L->ln);
    *red = *old->red;
    red->kid[0] = clone_subst(L, old->red->kid[0], kv, k_of, from, to, &n_acc, TE_MAX_ACCESSES);
    red->axes[r] = vo;
    c->body = red;
    TeStage ns = *old;
    ns.tensor = nt;
    ns.spatial[ns.n_spatial++] = vi;
    ns.reduce[r] = vo;
    ns.red = red;
    ns.is_output = ns.inlinable = ns.injective = ns.elementwise = 0;
    ns.n_consumers = 1;
    ns.consumers[0] = S + 1;
    ns.fusible_consumer = -1;
    ns.n_access = 0;
    for (int a = 0; a < old->n_access; a++)
        for (int i = 0; i < n_acc; i++)
            if (old->access[a].at == from[i])
                ns.access[ns.n_access] = old->access[a], ns.access[ns.n_access++].at = to[i];
    /* S: its reduction replaced by the sum (max, min) of S.rf over vr */
    int axes[TE_MAX_DIMS];
    for (int x = 0; x < src->ndim; x++)
        axes[x] = src->axes[x];
    axes[src->ndim] = vr;
    TeExpr *sred = nest_node(L->ln);
    *sred = *old->red;
    sred->kid[0] = access_of(L, nt, axes);
    sred->n_axes = 1;
    sred->axes[0] = vr;
    g->tensors[old->tensor].body = replace_node(L, g->tensors[old->tensor].body, old->red, sred);
    int n = 0, reads_inside[TE_MAX_TENSORS] = {0}, reads_outside[TE_MAX_TENSORS] = {0};
    for (int a = 0; a < old->n_access; a++) {
        int t = old->access[a].tensor;
        if (old->access[a].in_reduce)
            reads_inside[t] = 1;
        else
            reads_outside[t] = 1, old->access[n++] = old->access[a];
    }
    old->access[n++] = (TeAccess){.tensor = nt, .at = sred->kid[0], .in_reduce = 1};
    old->n_access = n;
    old->red = sred;
    old->n_reduce = 1;
    old->reduce[0] = vr;
    old->data_reuse = 0;
    old->fusible_consumer = -1;
    old->flops = (double)f; /* a small share (f steps per element); the rest is S.rf's */
    for (int x = 0; x < old->n_spatial; x++)
        old->flops *= (double)g->vars[old->spatial[x]].extent;
    /* consumer entries: a producer read inside the reduction is now read by S.rf (at S), one read outside
     * by S (at S + 1), one read in both by both */
    for (int k = 0; k < d->n_stages; k++) {
        TeStage *p = &d->stages[k];
        int m = p->n_consumers;
        for (int i = 0; i < m; i++) {
            int *e = &p->consumers[i];
            if (*e > S) {
                ++*e;
            } else if (*e == S) {
                int t = p->tensor;
                if (!reads_inside[t])
                    ++*e;
                else if (reads_outside[t] && p->n_consumers < TE_MAX_TENSORS)
                    p->consumers[p->n_consumers++] = S + 1;
            }
        }
    }
    insert_stage(L, S, &ns, nt);
    init_sched(L, S + 1);
    return TT_OK;
}

/* ---- building the tree ------------------------------------------------------ */

static LnNode *node_new(int is_loop) {
    LnNode *n = calloc(1, sizeof *n);
    n->is_loop = is_loop;
    return n;
}

static void node_add(LnNode *parent, LnNode *kid) {
    if (parent->n_kids == parent->cap_kids) {
        parent->cap_kids = parent->cap_kids ? 2 * parent->cap_kids : 4;
        parent->kids = realloc(parent->kids, sizeof(LnNode *) * parent->cap_kids);
    }
    parent->kids[parent->n_kids++] = kid;
}

static void node_free(LnNode *n) {
    if (!n) return;
    for (int i = 0; i < n->n_kids; i++)
        node_free(n->kids[i]);
    for (int i = 0; i < 2 * TE_MAX_DIMS; i++)
        free(n->axis[i]);
    free(n->guard);
    free(n->kids);
    free(n);
}

static LnNode *loop_new(const char *var, int64_t extent) {
    LnNode *l = node_new(1);
    snprintf(l->var, sizeof l->var, "%s", var);
    l->extent = extent;
    return l;
}

/* The value of iterator i of stage st, from the current leaves. */
static void iter_value(const Sched *s, int st, int i, StrBuf *out) {
    const Iter *it = &s->it[i];
    if (it->rel == REL_SPLIT) {
        int64_t stride[STEP_MAX_ARGS + 1], acc = 1;
        for (int k = it->n_out - 1; k >= 0; k--)
            stride[k] = acc, acc *= s->it[it->out[k]].extent;
        StrBuf_append(out, "(");
        for (int k = 0; k < it->n_out; k++) {
            if (k) StrBuf_append(out, " + ");
            iter_value(s, st, it->out[k], out);
            if (stride[k] != 1) StrBuf_printf(out, " * %lld", (long long)stride[k]);
        }
        StrBuf_append(out, ")");
    } else if (it->rel == REL_FUSE) {
        int64_t stride = 1;
        int k = it->n_in - 1;
        for (; it->in[k] != i; k--)
            stride *= s->it[it->in[k]].extent;
        StrBuf_append(out, "(");
        iter_value(s, st, it->out[0], out);
        if (stride != 1) StrBuf_printf(out, " / %lld", (long long)stride);
        if (k) StrBuf_printf(out, " %% %lld", (long long)it->extent);
        StrBuf_append(out, ")");
    } else {
        StrBuf_printf(out, "i%d_%d", st, i);
    }
}

/* Where a stage is built: for each spatial axis the box its loops cover,
 * from lo (NULL: 0) over span elements. At root, the whole tensor. */
#define LF_TERMS 32

/* c + sum coef * loop variable (a loop is its stage and iterator), terms sorted. */
typedef struct LinForm {
    int n;
    int st[LF_TERMS], it[LF_TERMS];
    int64_t coef[LF_TERMS];
    int64_t c;
} LinForm;

typedef struct Region {
    char *lo[TE_MAX_DIMS]; /* the text of form[] */
    LinForm form[TE_MAX_DIMS];
    int64_t span[TE_MAX_DIMS];
} Region;

/* Adds coef * loop (st, it); 0 when the form is full. */
static int lf_add(LinForm *f, int st, int it, int64_t coef) {
    int i = 0;
    while (i < f->n && (f->st[i] < st || (f->st[i] == st && f->it[i] < it)))
        i++;
    if (i < f->n && f->st[i] == st && f->it[i] == it) {
        f->coef[i] += coef;
        return 1;
    }
    if (f->n == LF_TERMS) return 0;
    memmove(&f->st[i + 1], &f->st[i], sizeof(int) * (f->n - i));
    memmove(&f->it[i + 1], &f->it[i], sizeof(int) * (f->n - i));
    memmove(&f->coef[i + 1], &f->coef[i], sizeof(int64_t) * (f->n - i));
    f->st[i] = st, f->it[i] = it, f->coef[i] = coef;
    f->n++;
    return 1;
}

static int lf_equal(const LinForm *a, const LinForm *b) {
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (a->st[i] != b->st[i] || a->it[i] != b->it[i] || a->coef[i] != b->coef[i]) return 0;
    return 1;
}

/* Whether the box of axis a (lo over span elements) stays inside 0..extent-1
 * for every value of the loops in lo (each at least 0, at most its extent - 1). */
static int box_inside(const Lower *L, const Region *R, int a, int64_t extent) {
    const LinForm *f = &R->form[a];
    int64_t lo = f->c, hi = f->c;
    for (int i = 0; i < f->n; i++) {
        int64_t x = f->coef[i] * (L->s[f->st[i]].it[f->it[i]].extent - 1);
        *(x < 0 ? &lo : &hi) += x;
    }
    return lo >= 0 && hi + R->span[a] <= extent;
}

/* A statement of stage st: each axis the part needs is lo + the value of its
 * root loop (or of the plain nest's variable in axis_override), guarded to
 * the box when a split leaves a tail and to the tensor when the box can
 * reach outside it (not when its loops keep it inside). */
static LnNode *stmt_new(const Lower *L, int st, LnPart part, const Region *R, char **axis_override) {
    const Sched *s = &L->s[st];
    const TeStage *ts = &L->dag->stages[st];
    LnNode *n = node_new(0);
    n->stage = st;
    n->part = part;
    StrBuf b, g, root;
    StrBuf_init(&g);
    int n_axes = part == LN_UPDATE ? s->n_roots : ts->n_spatial;
    for (int a = 0; a < n_axes; a++) {
        int spatial = a < ts->n_spatial;
        const TeVar *v = &L->prog->vars[spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial]];
        const char *lo = spatial ? R->lo[a] : NULL;
        StrBuf_init(&root);
        StrBuf_init(&b);
        if (axis_override) {
            StrBuf_append(&root, axis_override[a]);
        } else {
            iter_value(s, st, a, &root);
            if (s->inexact)
                StrBuf_printf(&g, "%s%s < %lld", g.len ? " && " : "", root.data,
                              (long long)(spatial ? R->span[a] : v->extent));
        }
        if (lo) {
            StrBuf_printf(&b, "%s + %s", lo, root.data);
            if (!box_inside(L, R, a, v->extent))
                StrBuf_printf(&g, "%s0 <= %s && %s < %lld", g.len ? " && " : "", b.data, b.data, (long long)v->extent);
        } else {
            StrBuf_append(&b, root.data);
        }
        n->axis[a] = StrBuf_take(&b);
        StrBuf_done(&b);
        StrBuf_done(&root);
    }
    if (g.len) n->guard = StrBuf_take(&g);
    StrBuf_done(&g);
    return n;
}

/* ---- compute_at regions ----------------------------------------------------- */

/* A linear combination of a stage's iterators (dense over iterator ids) and
 * of the box offsets (lo) of its spatial axes. */
typedef struct ItLin {
    int64_t coef[MAX_ITERS];
    int64_t lo_coef[TE_MAX_DIMS];
    int64_t c;
} ItLin;

/* Iterator i as a combination of leaves; 0 when a fuse makes it non-linear. */
static int iter_lin(const Sched *s, int i, int64_t scale, ItLin *out) {
    const Iter *it = &s->it[i];
    if (it->rel == REL_FUSE) return 0;
    if (it->rel == REL_NONE) {
        out->coef[i] += scale;
        return 1;
    }
    int64_t stride = 1;
    for (int k = it->n_out - 1; k >= 0; k--) {
        if (!iter_lin(s, it->out[k], scale * stride, out)) return 0;
        stride *= s->it[it->out[k]].extent;
    }
    return 1;
}

/* Index e of an access in target stage t as a combination of t's leaves and box offsets. */
static int access_lin(const Lower *L, int t, const TeExpr *e, ItLin *out) {
    const TeStage *ts = &L->dag->stages[t];
    TeLin lin;
    memset(out, 0, sizeof *out);
    if (!te_linear(e, &lin)) return 0;
    out->c = lin.c;
    for (int k = 0; k < lin.n; k++) {
        int root = -1;
        for (int a = 0; a < ts->n_spatial; a++)
            if (ts->spatial[a] == lin.var[k]) root = a;
        for (int a = 0; a < ts->n_reduce; a++)
            if (ts->reduce[a] == lin.var[k]) root = ts->n_spatial + a;
        if (root < 0 || !iter_lin(&L->s[t], root, lin.coef[k], out)) return 0;
        if (root < ts->n_spatial && L->region[t]->lo[root]) out->lo_coef[root] += lin.coef[k];
    }
    return 1;
}

/* A loop the box of a shared buffer covers whole: one bound to a thread index. */
static int thread_loop(const Lower *L, int st, int it) {
    return L->s[st].it[it].bind >= 4 && L->s[st].it[it].bind <= 6;
}

/* The region of producer p's spatial axis d that target t reads under its
 * loop at leaf position pos: lo (a form of the loops at and around pos) and
 * span. The loops inside pos vary over the region; for a shared buffer so do
 * the thread loops around it (the whole block fills and reads the buffer).
 * With host >= 0, t is computed at a loop of stage host (t's box offsets are
 * forms of host's loops) and p at host's loop at leaf position host_pos around
 * it: host's loops inside that one vary too. Returns 0 (whole axis) when an
 * index is not linear in the leaves or two accesses differ in the outer loops. */
static int region(const Lower *L, int p, int t, int pos, int host, int host_pos, int d, LinForm *lo, int64_t *span) {
    const TeDag *D = L->dag;
    const Sched *ts = &L->s[t];
    const TeStage *tst = &D->stages[t];
    int shared = L->shared[D->stages[p].tensor];
    int inner[MAX_ITERS] = {0}, host_inner[MAX_ITERS] = {0};
    for (int i = pos + 1; i < ts->n_leaves; i++)
        inner[ts->leaves[i]] = 1;
    for (int i = host_pos + 1; host >= 0 && i < L->s[host].n_leaves; i++)
        host_inner[L->s[host].leaves[i]] = 1;
    int found = 0;
    int64_t lo_c = 0, hi_c = 0;
    for (int a = 0; a < tst->n_access; a++) {
        const TeExpr *at = tst->access[a].at;
        if (tst->access[a].tensor != D->stages[p].tensor) continue;
        ItLin l;
        if (!access_lin(L, t, at->kid[d], &l)) return 0;
        LinForm f;
        memset(&f, 0, sizeof f);
        int64_t lo_k = l.c, hi_k = l.c;
        /* (coef, stage, iterator) terms: t's leaves, then the loops of t's box offsets */
        for (int i = 0; i < ts->n_iters + tst->n_spatial; i++) {
            const LinForm *box = i >= ts->n_iters ? &L->region[t]->form[i - ts->n_iters] : NULL;
            int64_t scale = box ? l.lo_coef[i - ts->n_iters] : 1;
            if (!scale) continue;
            if (box) lo_k += scale * box->c, hi_k += scale * box->c;
            for (int k = 0; k < (box ? box->n : 1); k++) {
                int st = box ? box->st[k] : t, it = box ? box->it[k] : i;
                int64_t coef = box ? scale * box->coef[k] : l.coef[i];
                if (!coef) continue;
                if ((st == t && !box && inner[it]) || (shared && thread_loop(L, st, it)) ||
                    (box && st == host && host_inner[it])) {
                    int64_t x = coef * (L->s[st].it[it].extent - 1);
                    *(x < 0 ? &lo_k : &hi_k) += x;
                } else if (!lf_add(&f, st, it, coef)) {
                    return 0;
                }
            }
        }
        if (!found)
            *lo = f, lo_c = lo_k, hi_c = hi_k, found = 1;
        else {
            if (!lf_equal(lo, &f)) return 0;
            if (lo_k < lo_c) lo_c = lo_k;
            if (hi_k > hi_c) hi_c = hi_k;
        }
    }
    if (!found) return 0;
    lo->c = lo_c;
    *span = hi_c - lo_c + 1;
    return 1;
}

static void lf_print(const LinForm *f, StrBuf *out) {
    StrBuf_printf(out, "(%lld", (long long)f->c);
    for (int i = 0; i < f->n; i++)
        if (f->coef[i]) StrBuf_printf(out, " + %lld * i%d_%d", (long long)f->coef[i], f->st[i], f->it[i]);
    StrBuf_append(out, ")");
}

/* The extents of stage s's loops when its spatial axes cover only span[]:
 * each split keeps its factors, capped at what is left (innermost first),
 * and the outer loop takes the rest; a fused loop is the product. */
static void reinfer(Sched *s, const int64_t *span, int n_spatial) {
    s->inexact = 0;
    for (int i = 0; i < s->n_iters; i++) {
        Iter *it = &s->it[i];
        if (i < n_spatial) it->extent = span[i];
        for (int j = 0; j < i; j++)
            if (s->it[j].rel == REL_FUSE && s->it[j].out[0] == i) {
                it->extent = 1;
                for (int k = 0; k < s->it[j].n_in; k++)
                    it->extent *= s->it[s->it[j].in[k]].extent;
                break;
            }
        if (it->rel != REL_SPLIT) continue;
        int64_t left = it->extent, prod = 1;
        for (int k = it->n_out - 1; k >= 1; k--) {
            Iter *o = &s->it[it->out[k]];
            if (o->extent > left) o->extent = left;
            left = (left + o->extent - 1) / o->extent;
            prod *= o->extent;
        }
        s->it[it->out[0]].extent = left;
        if (left * prod != it->extent) s->inexact = 1;
    }
}

/* The buffer of stage k's tensor, declared at the start of block: the box
 * ext[] at base[] (NULL: the whole tensor). */
static void alloc_here(Lower *L, int k, LnNode *block, const int64_t *ext, char **base) {
    int t = L->dag->stages[k].tensor;
    LnBuffer *b = &L->ln->buf[t];
    b->scope = L->shared[t] ? BUF_SHARED : BUF_LOCAL;
    int nd = L->prog->tensors[t].ndim;
    for (int d = 0; d < nd; d++) {
        b->ext[d] = ext ? ext[d] : L->prog->tensors[t].shape[d];
        b->base[d] = base && base[d] ? strdup(base[d]) : NULL;
    }
    for (int d = nd - 1; d >= 0; d--) { /* row-major, each stride padded as storage_align asks */
        int64_t s = d == nd - 1 ? 1 : b->stride[d + 1] * b->ext[d + 1], f = L->s[k].align[d][0];
        if (f > 0) s += ((L->s[k].align[d][1] - s) % f + f) % f;
        b->stride[d] = s;
    }
    b->floats = nd ? b->stride[0] * b->ext[0] : 1;
    LnNode *n = node_new(0);
    n->stage = k;
    n->part = LN_ALLOC;
    node_add(block, n);
}

static void build_stage(Lower *L, int st, const Region *R, LnNode *parent);

/* Stage p computed at stage t's loop at leaf position pos: its buffer, the
 * box its consumer reads under that loop, then its own loops over the box. */
/* The box R of stage p read by stage t under t's loop at leaf position pos
 * (host >= 0: t is computed at a loop of host inside host's loop at leaf
 * position host_pos, where p is computed, and pos is -1). */
static void box_of(Lower *L, int p, int t, int pos, int host, int host_pos, Region *R) {
    const TeStage *ps = &L->dag->stages[p];
    memset(R, 0, sizeof *R);
    for (int d = 0; d < ps->n_spatial; d++) {
        int64_t ext = L->prog->vars[ps->spatial[d]].extent, span = ext;
        if (region(L, p, t, pos, host, host_pos, d, &R->form[d], &span) && span < ext) {
            StrBuf lo;
            StrBuf_init(&lo);
            lf_print(&R->form[d], &lo);
            R->lo[d] = StrBuf_take(&lo);
            StrBuf_done(&lo);
        } else {
            memset(&R->form[d], 0, sizeof R->form[d]);
            span = ext;
        }
        R->span[d] = span;
    }
}

/* The leaf position of the loop stage k is computed at in its target. */
static int at_pos(const Lower *L, int k) {
    const Sched *t = &L->s[L->s[k].at_stage];
    for (int i = 0; i < t->n_leaves; i++)
        if (t->leaves[i] == L->s[k].at_iter) return i;
    return -1;
}

static void build_at(Lower *L, int p, int t, int pos, LnNode *parent) {
    const TeStage *ps = &L->dag->stages[p];
    Region R;
    int r = ps->consumers[0];
    if (r == t) {
        box_of(L, p, t, pos, -1, -1, &R);
    } else { /* p's reader r is computed inside this loop of t: r's box under its own loop, then what r reads */
        Region RR;
        box_of(L, r, t, at_pos(L, r), -1, -1, &RR);
        reinfer(&L->s[r], RR.span, L->dag->stages[r].n_spatial);
        const Region *keep = L->region[r];
        L->region[r] = &RR;
        box_of(L, p, r, -1, t, pos, &R);
        L->region[r] = keep;
        for (int d = 0; d < L->dag->stages[r].n_spatial; d++)
            free(RR.lo[d]);
    }
    alloc_here(L, p, parent, R.span, R.lo);
    int at = parent->n_kids;
    reinfer(&L->s[p], R.span, ps->n_spatial);
    build_stage(L, p, &R, parent);
    parent->kids[at - 1]->extent = parent->n_kids - at; /* the nodes that fill the buffer */
    for (int d = 0; d < ps->n_spatial; d++)
        free(R.lo[d]);
}

/* Stages computed at the loop at leaf position pos of stage st go first in its body. */
static void attach_here(Lower *L, int st, int pos, LnNode *loop) {
    for (int k = 0; k < L->dag->n_stages; k++)
        if (L->s[k].attach == AT_STAGE && L->s[k].at_stage == st && L->s[k].at_iter == L->s[st].leaves[pos])
            build_at(L, k, st, pos, loop);
}

/* A plain nest over the box (for INIT / POST apart from the main nest). */
static void plain_nest(Lower *L, int st, LnPart part, const Region *R, LnNode *parent) {
    const TeStage *ts = &L->dag->stages[st];
    LnNode *cur = parent;
    char *axis[TE_MAX_DIMS];
    for (int a = 0; a < ts->n_spatial; a++) {
        char var[24];
        snprintf(var, sizeof var, "%c%d_%d", part == LN_INIT ? 'z' : 'p', st, a);
        LnNode *l = loop_new(var, R->span[a]);
        node_add(cur, l);
        cur = l;
        axis[a] = l->var;
    }
    node_add(cur, stmt_new(L, st, part, R, axis));
}

static void build_stage(Lower *L, int st, const Region *R, LnNode *parent) {
    const Sched *s = &L->s[st];
    const TeStage *ts = &L->dag->stages[st];
    L->region[st] = R;
    int first_red = -1, fused_form = 1;
    for (int i = 0; i < s->n_leaves; i++) {
        if (s->it[s->leaves[i]].is_reduce && first_red < 0) first_red = i;
        if (!s->it[s->leaves[i]].is_reduce && first_red >= 0) fused_form = 0;
    }
    int has_post = ts->red && ts->red != L->prog->tensors[ts->tensor].body;
    if (ts->red && !fused_form) plain_nest(L, st, LN_INIT, R, parent);
    LnNode *cur = parent, *post_parent = NULL;
    for (int i = 0; i < s->n_leaves; i++) {
        if (ts->red && fused_form && i == first_red) {
            node_add(cur, stmt_new(L, st, LN_INIT, R, NULL));
            post_parent = cur;
        }
        const Iter *it = &s->it[s->leaves[i]];
        char var[24];
        snprintf(var, sizeof var, "i%d_%d", st, s->leaves[i]);
        LnNode *l = loop_new(var, it->extent);
        l->ann = it->ann;
        l->bind = it->bind;
        if (it->ann == ANN_UNROLL)
            l->unroll = it->extent;
        else if (it->auto_unroll > 0)
            l->unroll = -it->auto_unroll; /* resolved by resolve_auto_unroll */
        node_add(cur, l);
        attach_here(L, st, i, l);
        cur = l;
    }
    node_add(cur, stmt_new(L, st, ts->red ? LN_UPDATE : LN_STORE, R, NULL));
    if (post_parent && has_post) node_add(post_parent, stmt_new(L, st, LN_POST, R, NULL));
    if (ts->red && !fused_form && has_post) plain_nest(L, st, LN_POST, R, parent);
}

/* Largest number of statement executions under a node (its trip count). */
static int64_t trips(const LnNode *n) {
    if (!n->is_loop) return 1;
    int64_t t = 0;
    for (int i = 0; i < n->n_kids; i++)
        t += trips(n->kids[i]);
    return t * (n->extent > 0 ? n->extent : 1);
}

/* auto_unroll n on a loop: unroll every loop under it whose own trip count is <= n. */
static void resolve_auto_unroll(LnNode *n, int64_t limit) {
    if (!n->is_loop) return;
    if (n->unroll < 0) {
        limit = -n->unroll;
        n->unroll = 0;
    } else if (limit > 0 && n->unroll == 0 && n->ann == ANN_NONE && trips(n) <= limit) {
        n->unroll = n->extent;
    }
    for (int i = 0; i < n->n_kids; i++)
        resolve_auto_unroll(n->kids[i], limit);
}

/* Vectorized loops must not hold a computed-at stage (its loops would be
 * inside a SIMD loop); parallel ones may, since each iteration has its own buffer. */
static Status check_annotations(const Lower *L, const Steps *steps) {
    for (int k = 0; k < L->dag->n_stages; k++) {
        const Sched *p = &L->s[k];
        for (int i = 0; i < p->n_iters && L->shared[L->dag->stages[k].tensor]; i++)
            if (p->it[i].bind >= 1 && p->it[i].bind <= 6)
                return step_fail(L->err, p->looped_step, &steps->step[p->looped_step],
                                 "stage %s fills shared memory with every thread of the block: its loops are not bound",
                                 stage_name(L->dag, k));
        if (p->align_step >= 0 && p->attach != AT_STAGE && L->dag->stages[k].tensor < L->ln->n_args)
            return step_fail(L->err, p->align_step, &steps->step[p->align_step],
                             "stage %s has no buffer of its own: align a cache stage or one computed at a loop",
                             stage_name(L->dag, k));
        if (p->attach != AT_STAGE) continue;
        const Sched *t = &L->s[p->at_stage];
        if (t->attach == AT_INLINE)
            return step_fail(L->err, p->at_step, &steps->step[p->at_step], "its target %s was inlined by a later step",
                             stage_name(L->dag, p->at_stage));
        int pos = -1;
        for (int i = 0; i < t->n_leaves; i++)
            if (t->leaves[i] == p->at_iter) pos = i;
        if (pos < 0)
            return step_fail(L->err, p->at_step, &steps->step[p->at_step],
                             "the loop it computes at was split or fused by a later step");
        int r = L->dag->stages[k].consumers[0];
        if (r != p->at_stage && (L->s[r].attach != AT_STAGE || L->s[r].at_stage != p->at_stage || at_pos(L, r) < pos ||
                                 (at_pos(L, r) == pos && r < k)))
            return step_fail(L->err, p->at_step, &steps->step[p->at_step],
                             "its reader %s is not computed inside this loop of %s", stage_name(L->dag, r),
                             stage_name(L->dag, p->at_stage));
        for (int i = 0; i <= pos; i++) {
            LnAnn a = t->it[t->leaves[i]].ann;
            if (a == ANN_VECTORIZE)
                return step_fail(L->err, p->at_step, &steps->step[p->at_step],
                                 "loop %d of %s, at or around this point, is vectorized", i,
                                 stage_name(L->dag, p->at_stage));
        }
    }
    return TT_OK;
}

/* Whether a and b are the same expression (structurally). */
static int same_expr(const TeExpr *a, const TeExpr *b) {
    if (a->kind != b->kind || a->op != b->op || a->n_kids != b->n_kids || a->type != b->type) return 0;
    if ((a->kind == TE_VAR && a->var != b->var) || (a->kind == TE_ACCESS && a->tensor != b->tensor) ||
        (a->kind == TE_NUM && (a->num != b->num || a->inum != b->inum)) || a->kind == TE_REDUCE)
        return 0;
    for (int i = 0; i < a->n_kids; i++)
        if (!same_expr(a->kid[i], b->kid[i])) return 0;
    return 1;
}

int LoopNest_expAtMost0(const TeProgram *prog, const TeExpr *e) {
    if (e->kind != TE_CALL || e->op != TE_EXP || e->n_kids != 1) return 0;
    const TeExpr *d = e->kid[0];
    if (d->kind != TE_BIN || d->op != TE_SUB || d->kid[0]->kind != TE_ACCESS || d->kid[1]->kind != TE_ACCESS) return 0;
    const TeExpr *x = d->kid[0], *m = d->kid[1];
    const TeTensor *B = &prog->tensors[m->tensor];
    const TeExpr *r = B->body;
    if (B->is_input || B->is_const || !r || r->kind != TE_REDUCE || r->op != TE_MAX_OVER) return 0;
    const TeExpr *in = r->kid[0]; /* A[e..]: the element the max takes in */
    if (in->kind != TE_ACCESS || in->tensor != x->tensor || in->n_kids != x->n_kids) return 0;
    int seen[TE_MAX_DIMS] = {0};
    for (int i = 0; i < in->n_kids; i++) {
        const TeExpr *v = in->kid[i];
        if (v->kind != TE_VAR) return 0;
        int hit = 0;
        for (int a = 0; a < B->ndim && !hit; a++) /* one of B's axes: x's index is the subtrahend's there */
            if (B->axes[a] == v->var) {
                if (!same_expr(x->kid[i], m->kid[a])) return 0;
                hit = 1;
            }
        for (int a = 0; a < r->n_axes && !hit; a++) /* a reduction axis, once, over all of A's dimension */
            if (r->axes[a] == v->var) {
                if (seen[a]++ || prog->vars[v->var].extent != prog->tensors[in->tensor].shape[i]) return 0;
                hit = 1;
            }
        if (!hit) return 0;
    }
    return 1;
}

static void find_exp_at_most0(LoopNest *ln, const TeProgram *prog, const TeExpr *e) {
    if (LoopNest_expAtMost0(prog, e) && ln->n_exp_le0 < TE_MAX_TENSORS) ln->exp_le0[ln->n_exp_le0++] = e;
    for (int i = 0; i < e->n_kids; i++)
        find_exp_at_most0(ln, prog, e->kid[i]);
}

Status LoopNest_lower(LoopNest *out, const TeDag *dag, const Steps *steps, char *err) {
    memset(out, 0, sizeof *out);
    out->own_dag = malloc(sizeof *out->own_dag);
    out->own_prog = malloc(sizeof *out->own_prog);
    *out->own_dag = *dag;
    *out->own_prog = *dag->prog;
    out->own_prog->nodes = NULL; /* the nodes stay the given program's */
    out->own_prog->n_nodes = out->own_prog->cap_nodes = 0;
    out->own_dag->prog = out->own_prog;
    out->dag = out->own_dag;
    out->n_args = dag->prog->n_tensors;
    Lower L = {.dag = out->own_dag, .prog = out->own_prog, .ln = out, .err = err};
    L.s = calloc(dag->n_stages, sizeof(Sched));
    for (int k = 0; k < dag->n_stages; k++)
        init_sched(&L, k);
    Status st = TT_OK;
    for (int i = 0; i < steps->n && st == TT_OK; i++)
        st = apply(&L, i, &steps->step[i]);
    if (st == TT_OK) st = check_annotations(&L, steps);
    if (st != TT_OK) {
        free(L.s);
        LoopNest_done(out);
        return TT_ERR;
    }
    out->root = loop_new("", 1);
    for (int t = 0; t < dag->prog->n_tensors; t++)
        if (dag->prog->tensors[t].body) find_exp_at_most0(out, dag->prog, dag->prog->tensors[t].body);
    for (int k = 0; k < L.dag->n_stages; k++) {
        out->inlined[k] = L.s[k].attach == AT_INLINE;
        if (L.s[k].attach != AT_ROOT) continue;
        if (L.dag->stages[k].tensor >= out->n_args) alloc_here(&L, k, out->root, NULL, NULL);
        Region whole;
        memset(&whole, 0, sizeof whole);
        for (int d = 0; d < L.dag->stages[k].n_spatial; d++)
            whole.span[d] = L.prog->vars[L.dag->stages[k].spatial[d]].extent;
        build_stage(&L, k, &whole, out->root);
    }
    resolve_auto_unroll(out->root, 0);
    free(L.s);
    return TT_OK;
}

void LoopNest_done(LoopNest *this) {
    node_free(this->root);
    for (int t = 0; t < TE_MAX_TENSORS; t++)
        for (int d = 0; d < TE_MAX_DIMS; d++)
            free(this->buf[t].base[d]);
    free(this->own_dag);
    free(this->own_prog);
    free(this->pool);
    for (int i = 0; i < this->n_extra; i++)
        free(this->extra[i]);
    free(this->extra);
    memset(this, 0, sizeof *this);
}

/* ---- printing --------------------------------------------------------------- */

static const char *const PART[] = {"store", "init", "update", "post", "alloc"};
static const char *const ANN[] = {"", " parallel", " vectorize", ""}; /* unroll shows as its count */

static void print_node(const LoopNest *ln, const LnNode *n, int depth, StrBuf *out) {
    if (n->is_loop) {
        static const char *const BIND[] = {
            "",           " blockIdx.x", " blockIdx.y", " blockIdx.z", " threadIdx.x", " threadIdx.y", " threadIdx.z",
            " vthread.x", " vthread.y",  " vthread.z"};
        StrBuf_printf(out, "%*sfor %s < %lld%s%s", 2 * depth, "", n->var, (long long)n->extent, ANN[n->ann],
                      BIND[n->bind]);
        if (n->unroll) StrBuf_printf(out, " unroll %lld", (long long)n->unroll);
        StrBuf_append(out, "\n");
        for (int i = 0; i < n->n_kids; i++)
            print_node(ln, n->kids[i], depth + 1, out);
        return;
    }
    const TeStage *ts = &ln->dag->stages[n->stage];
    StrBuf_printf(out, "%*s%s %s", 2 * depth, "", PART[n->part], stage_name(ln->dag, n->stage));
    if (n->part == LN_ALLOC) {
        const LnBuffer *b = &ln->buf[ts->tensor];
        StrBuf_append(out, "[");
        for (int d = 0; d < ln->dag->prog->tensors[ts->tensor].ndim; d++)
            StrBuf_printf(out, "%s%lld", d ? ", " : "", (long long)b->ext[d]);
        StrBuf_append(out, "]");
        int64_t dense = 1;
        for (int d = ln->dag->prog->tensors[ts->tensor].ndim - 1; d >= 0; d--) {
            if (b->stride[d] != dense) StrBuf_printf(out, " stride%d=%lld", d, (long long)b->stride[d]);
            dense = b->stride[d] * b->ext[d];
        }
        StrBuf_append(out, b->scope == BUF_SHARED ? " shared\n" : "\n");
        return;
    }
    int n_axes = n->part == LN_UPDATE ? ts->n_spatial + ts->n_reduce : ts->n_spatial;
    for (int a = 0; a < n_axes; a++) {
        int v = a < ts->n_spatial ? ts->spatial[a] : ts->reduce[a - ts->n_spatial];
        StrBuf_printf(out, " %s=%s", ln->dag->prog->vars[v].name, n->axis[a]);
    }
    if (n->guard) StrBuf_printf(out, " if %s", n->guard);
    StrBuf_append(out, "\n");
}

void LoopNest_print(const LoopNest *this, StrBuf *out) {
    for (int i = 0; i < this->root->n_kids; i++)
        print_node(this, this->root->kids[i], 0, out);
}
