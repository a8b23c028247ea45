/* records/tvmimport.c: see tvmimport.h. */
#include "records/tvmimport.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *TvmMapReason_text(TvmMapReason r) {
    switch (r) {
    case TVM_MAP_OK:
        return "mapped";
    case TVM_MAP_FAILED:
        return "failed measurement in TVM";
    case TVM_MAP_TARGET:
        return "target with no tunetop counterpart";
    case TVM_MAP_TASK:
        return "unknown template";
    case TVM_MAP_WORKLOAD:
        return "workload tunetop cannot run";
    case TVM_MAP_NO_TEMPLATE:
        return "no tunetop template on this target";
    case TVM_MAP_KNOB_MISSING:
        return "knob missing";
    case TVM_MAP_KNOB_EXTRA:
        return "knob not in tunetop's space";
    case TVM_MAP_KNOB_SHAPE:
        return "split with another number of factors";
    case TVM_MAP_VALUE:
        return "value outside the space";
    case TVM_MAP_OTHER_TARGET:
        return "another target than the output log's";
    default:
        return "?";
    }
}

const char *TvmTarget_tunetop(const char *t) {
    /* the first word is the target kind: "cuda -model=titanx", "llvm -mcpu=skylake-avx512" */
    size_t n = strcspn(t, " ");
    if (n == 4 && strncmp(t, "cuda", 4) == 0) return "cuda";
    if (n == 4 && strncmp(t, "llvm", 4) == 0) {
        /* llvm for an ARM board is not this machine's CPU family of templates' tuning */
        if (strstr(t, "-device=arm_cpu") || strstr(t, "aarch64") || strstr(t, "-mtriple=arm")) return NULL;
        return "cpu";
    }
    return NULL;
}

/* ---- workloads from task arguments ---------------------------------------------------- */

typedef enum { K_NONE, K_CONV, K_DEPTHWISE, K_DENSE, K_BMM } TaskKind;

static TaskKind task_kind(const char *name) {
    static const struct {
        const char *name;
        TaskKind kind;
    } NAMES[] = {
        {"conv2d_nchw.cuda", K_CONV},
        {"conv2d_nchw.x86", K_CONV},
        {"conv2d_NCHWc.x86", K_CONV},
        {"topi_nn_conv2d", K_CONV},
        {"topi_x86_conv2d_NCHWc", K_CONV},
        {"depthwise_conv2d_nchw.cuda", K_DEPTHWISE},
        {"depthwise_conv2d_nchw.x86", K_DEPTHWISE},
        {"depthwise_conv2d_NCHWc.x86", K_DEPTHWISE},
        {"topi_nn_depthwise_conv2d_nchw", K_DEPTHWISE},
        {"dense_small_batch.cuda", K_DENSE},
        {"dense_large_batch.cuda", K_DENSE},
        {"dense.cuda", K_DENSE},
        {"dense_nopack.x86", K_DENSE},
        {"dense_pack.x86", K_DENSE},
        {"topi_nn_dense", K_DENSE},
        {"batch_matmul.cuda", K_BMM},
        {"batch_matmul.x86", K_BMM},
        {"topi_nn_batch_matmul", K_BMM},
    };
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (strcmp(name, NAMES[i].name) == 0) return NAMES[i].kind;
    return K_NONE;
}

static const TvmArg *tensor_arg(const TvmRecord *rec, int k, int dims) {
    if (k >= rec->n_args || rec->args[k].kind != TVM_ARG_TENSOR || rec->args[k].n != dims) return NULL;
    return &rec->args[k];
}

/* An int pair from an int, a pair, or (padding) a quadruple top,left,bottom,right. */
static bool pair_arg(const TvmRecord *rec, int k, int64_t *a, int64_t *b, bool padding, char *why) {
    if (k >= rec->n_args) return snprintf(why, TT_ERRLEN, "argument %d missing", k), false;
    const TvmArg *g = &rec->args[k];
    if (g->kind == TVM_ARG_INT || (g->kind == TVM_ARG_INTS && g->n == 1)) {
        *a = *b = g->v[0];
        return true;
    }
    if (g->kind == TVM_ARG_INTS && g->n == 2) {
        *a = g->v[0], *b = g->v[1];
        return true;
    }
    if (padding && g->kind == TVM_ARG_INTS && g->n == 4) {
        if (g->v[0] != g->v[2] || g->v[1] != g->v[3])
            return snprintf(why, TT_ERRLEN, "asymmetric padding [%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "]",
                            g->v[0], g->v[1], g->v[2], g->v[3]),
                   false;
        *a = g->v[0], *b = g->v[1];
        return true;
    }
    return snprintf(why, TT_ERRLEN, "argument %d is not an int pair", k), false;
}

static bool float32_tensors(const TvmRecord *rec, char *why) {
    for (int i = 0; i < rec->n_args; i++)
        if (rec->args[i].kind == TVM_ARG_TENSOR && strcmp(rec->args[i].s, "float32") != 0)
            return snprintf(why, TT_ERRLEN, "tensor %d is %s, not float32", i, rec->args[i].s), false;
    return true;
}

Status TvmRecord_workload(const TvmRecord *rec, Workload *wl, TvmMapReason *reason, char *why) {
    memset(wl, 0, sizeof *wl);
    TaskKind kind = task_kind(rec->task);
    *reason = TVM_MAP_TASK;
    if (kind == K_NONE) return tt_fail(why, "no tunetop template for TVM task %s", rec->task);
    *reason = TVM_MAP_WORKLOAD;
    if (!float32_tensors(rec, why)) return TT_ERR;
    wl->layout = LAYOUT_NCHW;
    wl->dil_h = wl->dil_w = 1;
    if (kind == K_CONV || kind == K_DEPTHWISE) {
        const TvmArg *d = tensor_arg(rec, 0, 4), *k = tensor_arg(rec, 1, 4);
        if (!d || !k) return tt_fail(why, "%s arguments are not an NCHW data and a 4-d kernel", rec->task);
        for (int i = 2; i < rec->n_args; i++)
            if (rec->args[i].kind == TVM_ARG_STR && strncmp(rec->args[i].s, "NCHW", 4) != 0 &&
                strcmp(rec->args[i].s, "float32") != 0 && strcmp(rec->args[i].s, "OIHW") != 0)
                return tt_fail(why, "layout %s (tunetop imports NCHW)", rec->args[i].s);
        wl->n = d->v[0], wl->ci = d->v[1], wl->h = d->v[2], wl->w = d->v[3];
        wl->kh = k->v[2], wl->kw = k->v[3];
        if (!pair_arg(rec, 2, &wl->stride_h, &wl->stride_w, false, why) ||
            !pair_arg(rec, 3, &wl->pad_h, &wl->pad_w, true, why) ||
            !pair_arg(rec, 4, &wl->dil_h, &wl->dil_w, false, why))
            return TT_ERR;
        if (kind == K_CONV) {
            wl->op = OP_CONV2D;
            wl->co = k->v[0];
            if (k->v[1] != wl->ci)
                return tt_fail(why, "kernel has %" PRId64 " input channels, data %" PRId64 " (grouped convolution)",
                               k->v[1], wl->ci);
        } else {
            /* TVM's depthwise NCHW kernel is [channels, multiplier, kh, kw] */
            wl->op = OP_DEPTHWISE_CONV2D;
            wl->mult = k->v[1];
            wl->co = wl->ci * wl->mult;
            if (k->v[0] != wl->ci)
                return tt_fail(why, "depthwise kernel has %" PRId64 " channels, data %" PRId64, k->v[0], wl->ci);
        }
    } else if (kind == K_DENSE) {
        const TvmArg *d = tensor_arg(rec, 0, 2), *w = tensor_arg(rec, 1, 2);
        if (!d || !w || d->v[1] != w->v[1])
            return tt_fail(why, "%s arguments are not [m,k] data and [n,k] weight", rec->task);
        wl->op = OP_DENSE;
        wl->m = d->v[0], wl->k = d->v[1], wl->n = w->v[0];
        if (tensor_arg(rec, 2, 1)) wl->bias = true;
    } else {
        const TvmArg *x = tensor_arg(rec, 0, 3), *y = tensor_arg(rec, 1, 3);
        if (!x || !y || x->v[2] != y->v[2]) return tt_fail(why, "%s arguments are not [b,m,k] and [b,n,k]", rec->task);
        if (x->v[0] != y->v[0])
            return tt_fail(why, "batch_matmul with broadcast batch (%" PRId64 " vs %" PRId64 ")", x->v[0], y->v[0]);
        wl->op = OP_BATCH_MATMUL;
        wl->b = x->v[0], wl->m = x->v[1], wl->k = x->v[2], wl->n = y->v[1];
    }
    if (Workload_validate(wl, why) != TT_OK) return TT_ERR;
    *reason = TVM_MAP_OK;
    return TT_OK;
}

/* ---- TVM's split enumeration ------------------------------------------------------------ */

static int divisors(int64_t n, int64_t *out, int cap) {
    int k = 0;
    for (int64_t d = 1; d <= n && k < cap; d++)
        if (n % d == 0) out[k++] = d;
    return k;
}

typedef struct SplitRank {
    int64_t n;
    int m;               /* factors chosen after the first: num_outputs - 1 */
    const int64_t *want; /* the entity's factors 1..m, innermost last */
    int64_t *divs;
    int n_divs;
    uint64_t count; /* entities enumerated so far */
    int64_t rank;   /* of want, -1 until found */
    int64_t stack[SPLIT_MAX_OUT + 4];
} SplitRank;

/* TVM: for each factor at depth 0..m-1 (sorted divisors), push; at depth m the
 * entity is [n / prod] + reversed(stack) when prod divides n. */
static void split_dfs(SplitRank *s, int depth, int64_t prod) {
    if (depth == s->m) {
        if (s->n % prod != 0) return;
        if (s->rank < 0) {
            bool eq = true;
            for (int i = 0; i < s->m && eq; i++)
                eq = s->stack[s->m - 1 - i] == s->want[i];
            if (eq) s->rank = (int64_t)s->count;
        }
        s->count++;
        return;
    }
    for (int i = 0; i < s->n_divs; i++) {
        if (s->divs[i] * prod > s->n) break; /* prod must divide n in the end */
        s->stack[depth] = s->divs[i];
        split_dfs(s, depth + 1, prod * s->divs[i]);
    }
}

/* Rank of factors f[0..k) (f[0] the outermost) among TVM's entities of a
 * "factors" split of n; its length in *len. -1 when not an entity. */
static int64_t tvm_split_rank(int64_t n, const int64_t *f, int k, uint64_t *len) {
    int64_t divs[1024];
    SplitRank s = {.n = n, .m = k - 1, .want = f + 1, .divs = divs, .rank = -1};
    s.n_divs = divisors(n, divs, 1024);
    if (k < 1 || k > SPLIT_MAX_OUT + 3 || s.n_divs >= 1024) return -1;
    split_dfs(&s, 0, 1);
    *len = s.count;
    return s.rank;
}

/* ---- the mapper ------------------------------------------------------------------------ */

typedef struct MapSpace {
    char key[WORKLOAD_KEY_LEN + 8];
    TargetFamily family;
    Workload wl;
    const Template *tmpl;
    Space space;
    bool ok;
    TvmMapReason reason;
    char why[TT_ERRLEN];
} MapSpace;

struct TvmMapper {
    DeviceInfo cpu, gpu;
    bool have_cpu, have_gpu;
    MapSpace *spaces;
    int n, cap;
};

TvmMapper *TvmMapper_new(const DeviceInfo *dev_cpu, const DeviceInfo *dev_gpu) {
    TvmMapper *m = calloc(1, sizeof *m);
    if (!m) abort();
    if (dev_cpu) m->cpu = *dev_cpu, m->have_cpu = true;
    if (dev_gpu) m->gpu = *dev_gpu, m->have_gpu = true;
    return m;
}

void TvmMapper_delete(TvmMapper *this) {
    if (!this) return;
    for (int i = 0; i < this->n; i++)
        Space_done(&this->spaces[i].space);
    free(this->spaces);
    free(this);
}

static MapSpace *space_for(TvmMapper *this, const Workload *wl, TargetFamily fam) {
    char key[WORKLOAD_KEY_LEN];
    Workload_key(wl, key, sizeof key);
    for (int i = 0; i < this->n; i++)
        if (this->spaces[i].family == fam && strcmp(this->spaces[i].key, key) == 0) return &this->spaces[i];
    if (this->n == this->cap) {
        this->cap = this->cap ? this->cap * 2 : 16;
        this->spaces = realloc(this->spaces, (size_t)this->cap * sizeof *this->spaces);
        if (!this->spaces) abort();
    }
    MapSpace *s = &this->spaces[this->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->key, sizeof s->key, "%s", key);
    s->family = fam;
    s->wl = *wl;
    Space_init(&s->space);
    const DeviceInfo *dev =
        fam == FAMILY_CPU ? (this->have_cpu ? &this->cpu : NULL) : (this->have_gpu ? &this->gpu : NULL);
    char err[TT_ERRLEN];
    s->tmpl = Template_find(wl, fam, err);
    if (!dev) {
        s->reason = TVM_MAP_TARGET;
        snprintf(s->why, sizeof s->why, "no %s device description to define the space with",
                 fam == FAMILY_CPU ? "cpu" : "gpu");
    } else if (!s->tmpl) {
        s->reason = TVM_MAP_NO_TEMPLATE;
        snprintf(s->why, sizeof s->why, "%s", err);
    } else if (s->tmpl->define_space(wl, dev, &s->space, err) != TT_OK) {
        s->reason = TVM_MAP_WORKLOAD;
        snprintf(s->why, sizeof s->why, "%s", err);
    } else {
        s->ok = true;
    }
    return s;
}

static const TvmKnob *entity_knob(const TvmRecord *rec, const char *name) {
    for (int i = 0; i < rec->n_knobs; i++)
        if (strcmp(rec->knobs[i].name, name) == 0) return &rec->knobs[i];
    return NULL;
}

/* Resolves a split's -1 from the extent; false (why set) when impossible. */
static bool resolve_split(const TvmKnob *k, int64_t extent, int64_t *f, char *why) {
    int64_t prod = 1;
    int minus = -1;
    for (int i = 0; i < k->n; i++) {
        f[i] = k->v[i];
        if (f[i] == -1 && minus < 0) {
            minus = i;
            continue;
        }
        if (f[i] <= 0) return snprintf(why, TT_ERRLEN, "%s has factor %" PRId64, k->name, f[i]), false;
        prod *= f[i];
    }
    if (minus >= 0) {
        if (extent <= 0 || extent % prod != 0)
            return snprintf(why, TT_ERRLEN,
                            "%s: the other factors (%" PRId64 ") do not divide the axis length %" PRId64, k->name, prod,
                            extent),
                   false;
        f[minus] = extent / prod;
        prod = extent;
    }
    if (prod != extent)
        return snprintf(why, TT_ERRLEN, "%s factors multiply to %" PRId64 ", the axis length is %" PRId64, k->name,
                        prod, extent),
               false;
    return true;
}

static int64_t knob_extent_of(const Space *sp, const char *name) {
    int i = Space_knobIndex(sp, name);
    return i >= 0 && sp->knobs[i].kind == KNOB_SPLIT ? sp->knobs[i].extent : -1;
}

/* Which entity knob feeds which tunetop knob (alias[i]: the tunetop knob's name, NULL = none): by
 * name, except the old tile_rx/tile_ry naming (heights under rx), detected from the kernel. */
static void knob_aliases(const TvmRecord *rec, const Space *sp, const char **alias, TvmMapResult *res) {
    for (int i = 0; i < rec->n_knobs; i++)
        alias[i] = Space_knobIndex(sp, rec->knobs[i].name) >= 0 ? rec->knobs[i].name : NULL;
    const TvmKnob *rx = entity_knob(rec, "tile_rx"), *ry = entity_knob(rec, "tile_ry");
    int64_t ext_rx = knob_extent_of(sp, "tile_rx"), ext_ry = knob_extent_of(sp, "tile_ry");
    if (!rx || !ry || ext_rx <= 0 || ext_ry <= 0 || ext_rx == ext_ry) return;
    int64_t f[TVM_MAX_DIMS];
    char w[TT_ERRLEN];
    bool straight = resolve_split(rx, ext_rx, f, w) && resolve_split(ry, ext_ry, f, w);
    bool swapped = resolve_split(rx, ext_ry, f, w) && resolve_split(ry, ext_rx, f, w);
    if (straight || !swapped) return;
    res->swapped_rx_ry = true;
    for (int i = 0; i < rec->n_knobs; i++) {
        if (&rec->knobs[i] == rx)
            alias[i] = "tile_ry";
        else if (&rec->knobs[i] == ry)
            alias[i] = "tile_rx";
    }
}

/* The choice of split knob kb for the record's knob tk (a two-way reduction split widens to three
 * ways); false with the reason in res when its factors are not an entity of the space. */
static bool map_split(const Knob *kb, const TvmKnob *tk, const MapSpace *ms, int32_t *choice, TvmMapResult *res) {
    if (!tk->is_list) {
        res->reason = TVM_MAP_KNOB_SHAPE;
        snprintf(res->why, sizeof res->why, "%s is not a split in the record", tk->name);
        return false;
    }
    int64_t f[TVM_MAX_DIMS], want[SPLIT_MAX_OUT];
    if (!resolve_split(tk, kb->extent, f, res->why)) {
        res->reason = TVM_MAP_VALUE;
        return false;
    }
    if (tk->n == kb->num_outputs) {
        for (int i = 0; i < tk->n; i++)
            want[i] = f[i];
    } else if (tk->n == 2 && kb->num_outputs == 3) {
        want[0] = f[0], want[1] = 1, want[2] = f[1];
        res->widened = true;
    } else {
        res->reason = TVM_MAP_KNOB_SHAPE;
        snprintf(res->why, sizeof res->why, "%s has %d factors, %d in %s's space", tk->name, tk->n, kb->num_outputs,
                 ms->tmpl->name);
        return false;
    }
    for (uint64_t j = 0; j < kb->len && *choice < 0; j++) {
        const int64_t *g = kb->factors + j * (uint64_t)kb->num_outputs;
        bool eq = true;
        for (int i = 0; i < kb->num_outputs && eq; i++)
            eq = g[i] == want[i];
        if (eq) *choice = (int32_t)j;
    }
    if (*choice < 0) {
        res->reason = TVM_MAP_VALUE;
        snprintf(res->why, sizeof res->why, "%s factors are not an entity of %s's space", tk->name, ms->tmpl->name);
        return false;
    }
    return true;
}

/* The choice of option knob kb for the record's knob tk; false with the reason in res when the
 * value is not one of its candidates. */
static bool map_option(const Knob *kb, const TvmKnob *tk, const MapSpace *ms, int32_t *choice, TvmMapResult *res) {
    if (!tk->is_int) {
        res->reason = TVM_MAP_VALUE;
        snprintf(res->why, sizeof res->why, "%s is not an integer option", tk->name);
        return false;
    }
    for (int j = 0; j < kb->n_values && *choice < 0; j++)
        if (kb->values[j] == tk->v[0]) *choice = j;
    if (*choice < 0) {
        res->reason = TVM_MAP_VALUE;
        snprintf(res->why, sizeof res->why, "%s=%" PRId64 " is not a candidate of %s's space", tk->name, tk->v[0],
                 ms->tmpl->name);
        return false;
    }
    return true;
}

/* The choice of every knob of ms's space from the record's knobs (named by alias); false with the
 * reason in res when a knob is extra, missing or has no matching value. */
static bool map_choice(const TvmRecord *rec, const MapSpace *ms, const char *const *alias, int32_t *choice,
                       TvmMapResult *res) {
    const Space *sp = &ms->space;
    for (int i = 0; i < rec->n_knobs; i++) {
        if (!alias[i]) {
            res->reason = TVM_MAP_KNOB_EXTRA;
            snprintf(res->why, sizeof res->why, "knob %s is not in %s's space", rec->knobs[i].name, ms->tmpl->name);
            return false;
        }
    }
    for (int k = 0; k < sp->n_knobs; k++) {
        const Knob *kb = &sp->knobs[k];
        int e = -1;
        for (int i = 0; i < rec->n_knobs; i++)
            if (strcmp(alias[i], kb->name) == 0) e = i;
        if (e < 0) {
            res->reason = TVM_MAP_KNOB_MISSING;
            snprintf(res->why, sizeof res->why, "knob %s of %s is not in the record", kb->name, ms->tmpl->name);
            return false;
        }
        choice[k] = -1;
        bool ok = kb->kind == KNOB_SPLIT ? map_split(kb, &rec->knobs[e], ms, &choice[k], res)
                                         : map_option(kb, &rec->knobs[e], ms, &choice[k], res);
        if (!ok) return false;
    }
    return true;
}

/* TVM's index of the choice, recomputed over the entity in the entity's order (first knob
 * fastest) with TVM's enumeration, and whether it agrees with the record's. */
static void check_tvm_index(const TvmRecord *rec, const Space *sp, const char *const *alias, const int32_t *choice,
                            TvmMapResult *res) {
    uint64_t tvm_index = 0, radix = 1;
    bool tvm_ok = rec->has_index;
    for (int i = 0; i < rec->n_knobs && tvm_ok; i++) {
        const TvmKnob *tk = &rec->knobs[i];
        int k = Space_knobIndex(sp, alias[i]);
        const Knob *kb = &sp->knobs[k];
        if (kb->kind == KNOB_SPLIT) {
            int64_t f[TVM_MAX_DIMS];
            uint64_t len = 0;
            char w[TT_ERRLEN];
            int64_t r = resolve_split(tk, kb->extent, f, w) ? tvm_split_rank(kb->extent, f, tk->n, &len) : -1;
            if (r < 0) tvm_ok = false;
            tvm_index += (uint64_t)r * radix;
            radix *= len;
        } else {
            tvm_index += (uint64_t)choice[k] * radix;
            radix *= (uint64_t)kb->n_values;
        }
    }
    if (tvm_ok) {
        res->tvm_index_checked = true;
        res->tvm_index = (int64_t)tvm_index;
        res->tvm_index_agrees = (int64_t)tvm_index == rec->index;
    }
}

/* The imported record: the workload's key, ms's template, the choice, and where it came from. */
static void fill_record(const TvmRecord *rec, const Workload *wl, const MapSpace *ms, const char *tt_target,
                        const int32_t *choice, const char *src_name, Record *out) {
    const Space *sp = &ms->space;
    Record_done(out);
    Record_init(out);
    Workload_key(wl, out->task_key, sizeof out->task_key);
    snprintf(out->template_name, sizeof out->template_name, "%s", ms->tmpl->name);
    snprintf(out->target, sizeof out->target, "%s", tt_target);
    out->index = Space_encode(sp, choice);
    out->n_choice = sp->n_knobs;
    for (int k = 0; k < sp->n_knobs; k++)
        out->choice[k] = choice[k];
    Space_format(sp, choice, out->config, sizeof out->config);
    out->timestamp = rec->timestamp;
    snprintf(out->src, sizeof out->src, "autotvm %.70s:%ld", src_name, rec->line);
    out->src_cost = TvmRecord_mean(rec);
}

/* One AutoTVM record mapped onto its template's space (tvmimport.h): the checks in order, each
 * leaving its reason. */
void TvmMapper_map(TvmMapper *this, const TvmRecord *rec, const char *src_name, Record *out, TvmMapResult *res) {
    memset(res, 0, sizeof *res);
    res->why[0] = '\0';
    if (rec->error_no != 0 || !isfinite(TvmRecord_mean(rec))) {
        res->reason = TVM_MAP_FAILED;
        if (rec->error_no != 0)
            snprintf(res->why, sizeof res->why, "error %d in TVM", rec->error_no);
        else
            snprintf(res->why, sizeof res->why, "no error in TVM, but %s", TVM_COST_FAULTS[TvmRecord_costFault(rec)]);
        return;
    }
    const char *tt_target = TvmTarget_tunetop(rec->target);
    if (!tt_target) {
        res->reason = TVM_MAP_TARGET;
        snprintf(res->why, sizeof res->why, "target %.100s", rec->target);
        return;
    }
    Workload wl;
    if (TvmRecord_workload(rec, &wl, &res->reason, res->why) != TT_OK) return;
    TargetFamily fam = strcmp(tt_target, "cpu") == 0 ? FAMILY_CPU : FAMILY_GPU;
    MapSpace *ms = space_for(this, &wl, fam);
    if (!ms->ok) {
        res->reason = ms->reason;
        snprintf(res->why, sizeof res->why, "%s", ms->why);
        return;
    }
    const char *alias[TVM_MAX_KNOBS];
    knob_aliases(rec, &ms->space, alias, res);
    int32_t choice[SPACE_MAX_KNOBS];
    if (!map_choice(rec, ms, alias, choice, res)) return;
    check_tvm_index(rec, &ms->space, alias, choice, res);
    fill_record(rec, &wl, ms, tt_target, choice, src_name, out);
    res->reason = TVM_MAP_OK;
}
