/* tuner/net/ops/elementwise_engine.c: type conversion, the broadcast walk and
 * the generic check/infer/run of the elementwise ops (see elementwise.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tuner/net/ops/elementwise.h"
#include "tuner/net/ops/par.h"

#define EW_BLOCK 512 /* elements converted at a time when an input or the output is not in its domain's type */

const NdType EW_T_FLOAT[] = {ND_F16, ND_BF16, ND_F32, ND_F64, ND_UNDEF};
const NdType EW_T_SIGNED[] = {ND_F16, ND_BF16, ND_F32, ND_F64, ND_I8, ND_I16, ND_I32, ND_I64, ND_UNDEF};
const NdType EW_T_NUM[] = {ND_F16, ND_BF16, ND_F32, ND_F64, ND_I8,  ND_I16,  ND_I32,
                           ND_I64, ND_U8,   ND_U16, ND_U32, ND_U64, ND_UNDEF};
const NdType EW_T_ALL[] = {ND_F16, ND_BF16, ND_F32, ND_F64, ND_I8,  ND_I16,  ND_I32,
                           ND_I64, ND_U8,   ND_U16, ND_U32, ND_U64, ND_BOOL, ND_UNDEF};
const NdType EW_T_BOOL[] = {ND_BOOL, ND_UNDEF};
const NdType EW_T_UINT[] = {ND_U8, ND_U16, ND_U32, ND_U64, ND_UNDEF};

static const NdType DOMAIN_TYPE[EW_NDOM] = {ND_F32, ND_F64, ND_I64, ND_U64, ND_BOOL};

EwDom Ew_domain(NdType t) {
    switch (t) {
    case ND_F64:
        return EW_F64;
    case ND_I8:
    case ND_I16:
    case ND_I32:
    case ND_I64:
        return EW_I64;
    case ND_U8:
    case ND_U16:
    case ND_U32:
    case ND_U64:
        return EW_U64;
    case ND_BOOL:
        return EW_BOOL;
    default:
        return EW_F32;
    }
}

NdType Ew_domainType(EwDom d) { return DOMAIN_TYPE[d]; }

/* ---- conversion ---- */

/* Float to int64 without C's undefined cases: NaN is 0, the rest saturates. */
static inline int64_t f2i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) /* 2^63 */
        return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static inline uint64_t f2u64(double v) {
    if (v >= 18446744073709551615.0) /* 2^64 */
        return UINT64_MAX;
    if (v >= 9223372036854775807.0) return (uint64_t)v;
    return (uint64_t)f2i64(v); /* negative values wrap, as numpy's astype does */
}

/* float16 both ways, branch-light so that a block converts fast; bit for bit
 * what Nd_halfToFloat and Nd_floatToHalf give (round to nearest even, a NaN
 * to the quiet NaN 0x7e00), which test_onnx_elementwise checks. */
static inline float h2f(uint16_t h) {
    uint32_t em = h & 0x7fffu, bits;
    float f;
    bits = em << 13;
    memcpy(&f, &bits, 4);
    f *= 0x1p112f; /* rebias: exact for normal and subnormal halves */
    memcpy(&bits, &f, 4);
    if (em >= 0x7c00u) bits = 0x7f800000u | (em << 13);
    bits |= (uint32_t)(h & 0x8000u) << 16;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t f2h(float v) {
    uint32_t x, h;
    memcpy(&x, &v, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u)
        h = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
    else if (x >= 0x477ff000u) /* 65520 and up round to infinity */
        h = 0x7c00u;
    else if (x < 0x38800000u) { /* a subnormal half: the float adder rounds it in the low bits of 0.5 + |v| */
        float a;
        memcpy(&a, &x, 4);
        a += 0.5f;
        memcpy(&h, &a, 4);
        h -= 0x3f000000u;
    } else /* rebias, round to nearest even on the 13 dropped bits */
        h = (x - 0x38000000u + 0xfffu + ((x >> 13) & 1u)) >> 13;
    return (uint16_t)(h | sign);
}

static inline int64_t i64_id(int64_t v) { return v; }
static inline uint64_t u64_id(uint64_t v) { return v; }

#define TO_I64(v) _Generic((v), float : f2i64, double : f2i64, default : i64_id)(v)
#define TO_U64(v) _Generic((v), float : f2u64, double : f2u64, default : u64_id)(v)

#define WR_F32(v) ((float)(v))
#define WR_F64(v) ((double)(v))
#define WR_F16(v) f2h((float)(v))
#define WR_BF16(v) Nd_floatToBf16((float)(v))
#define WR_I8(v) ((int8_t)TO_I64(v))
#define WR_I16(v) ((int16_t)TO_I64(v))
#define WR_I32(v) ((int32_t)TO_I64(v))
#define WR_I64(v) TO_I64(v)
#define WR_U8(v) ((uint8_t)TO_I64(v))
#define WR_U16(v) ((uint16_t)TO_I64(v))
#define WR_U32(v) ((uint32_t)TO_I64(v))
#define WR_U64(v) TO_U64(v)
#define WR_BOOL(v) ((uint8_t)((v) != 0))
#define RD_ID(v) (v)

#define CONV_LOOP(DT, WR, ST, RD)                                                                                      \
    {                                                                                                                  \
        const ST *s = src;                                                                                             \
        DT *d = dst;                                                                                                   \
        for (int64_t i = 0; i < n; i++)                                                                                \
            d[i] = WR(RD(s[i]));                                                                                       \
        break;                                                                                                         \
    }

#define FROM_ANY(DT, WR)                                                                                               \
    switch (st) {                                                                                                      \
    case ND_F32:                                                                                                       \
        CONV_LOOP(DT, WR, float, RD_ID)                                                                                \
    case ND_F64:                                                                                                       \
        CONV_LOOP(DT, WR, double, RD_ID)                                                                               \
    case ND_F16:                                                                                                       \
        CONV_LOOP(DT, WR, uint16_t, h2f)                                                                               \
    case ND_BF16:                                                                                                      \
        CONV_LOOP(DT, WR, uint16_t, Nd_bf16ToFloat)                                                                    \
    case ND_I8:                                                                                                        \
        CONV_LOOP(DT, WR, int8_t, RD_ID)                                                                               \
    case ND_I16:                                                                                                       \
        CONV_LOOP(DT, WR, int16_t, RD_ID)                                                                              \
    case ND_I32:                                                                                                       \
        CONV_LOOP(DT, WR, int32_t, RD_ID)                                                                              \
    case ND_I64:                                                                                                       \
        CONV_LOOP(DT, WR, int64_t, RD_ID)                                                                              \
    case ND_U8:                                                                                                        \
        CONV_LOOP(DT, WR, uint8_t, RD_ID)                                                                              \
    case ND_U16:                                                                                                       \
        CONV_LOOP(DT, WR, uint16_t, RD_ID)                                                                             \
    case ND_U32:                                                                                                       \
        CONV_LOOP(DT, WR, uint32_t, RD_ID)                                                                             \
    case ND_U64:                                                                                                       \
        CONV_LOOP(DT, WR, uint64_t, RD_ID)                                                                             \
    case ND_BOOL:                                                                                                      \
        CONV_LOOP(DT, WR, uint8_t, RD_ID)                                                                              \
    default:                                                                                                           \
        break;                                                                                                         \
    }                                                                                                                  \
    break;

void Ew_convert(NdType dt, void *dst, NdType st, const void *src, int64_t n) {
    if (dt == st) {
        memcpy(dst, src, (size_t)n * NdType_size(dt));
        return;
    }
    switch (dt) {
    case ND_F32:
        FROM_ANY(float, WR_F32)
    case ND_F64:
        FROM_ANY(double, WR_F64)
    case ND_F16:
        FROM_ANY(uint16_t, WR_F16)
    case ND_BF16:
        FROM_ANY(uint16_t, WR_BF16)
    case ND_I8:
        FROM_ANY(int8_t, WR_I8)
    case ND_I16:
        FROM_ANY(int16_t, WR_I16)
    case ND_I32:
        FROM_ANY(int32_t, WR_I32)
    case ND_I64:
        FROM_ANY(int64_t, WR_I64)
    case ND_U8:
        FROM_ANY(uint8_t, WR_U8)
    case ND_U16:
        FROM_ANY(uint16_t, WR_U16)
    case ND_U32:
        FROM_ANY(uint32_t, WR_U32)
    case ND_U64:
        FROM_ANY(uint64_t, WR_U64)
    case ND_BOOL:
        FROM_ANY(uint8_t, WR_BOOL)
    default:
        break;
    }
}

/* ---- the broadcast walk ---- */

typedef struct EwPlan {
    EwKernel kern;
    const EwPrm *p;
    int n;                     /* inputs */
    NdType in_type[EW_MAX_IN]; /* the domain type each input is read in */
    NdType out_type;           /* the domain type the kernel writes */
    double cost;               /* element operations per output element (EwSpec.flops) */
} EwPlan;

/* The output's dimensions with size-1 dimensions dropped and neighbours merged
 * where every input steps through them as through one (same-shape inputs
 * become one run; a per-channel bias becomes a held value over H*W). */
typedef struct EwWalk {
    int rank; /* >= 1 */
    int64_t dim[ND_MAX_RANK];
    int64_t st[EW_MAX_IN][ND_MAX_RANK];
} EwWalk;

static void walk_init(EwWalk *w, const NdTensor *const *in, int n, const NdShape *out) {
    int64_t st[EW_MAX_IN][ND_MAX_RANK] = {{0}};
    for (int k = 0; k < n; k++)
        if (in[k]) NdShape_broadcastStrides(&in[k]->shape, out, st[k]);
    memset(w, 0, sizeof *w);
    for (int d = 0; d < out->rank; d++) {
        if (out->dim[d] == 1) continue;
        int r = w->rank;
        bool merge = r > 0;
        for (int k = 0; k < n && merge; k++)
            merge = w->st[k][r - 1] == st[k][d] * out->dim[d];
        if (merge)
            w->dim[r - 1] *= out->dim[d];
        else
            w->dim[w->rank++] = out->dim[d];
        for (int k = 0; k < n; k++)
            w->st[k][w->rank - 1] = st[k][d];
    }
    if (w->rank == 0) {
        w->rank = 1;
        w->dim[0] = 1;
    }
}

/* One run of m elements: inputs at element offsets off[] (stepping st[] per
 * element), the output at ooff. */
static void run_block(const EwPlan *pl, const NdTensor *const *in, const int64_t *off, const int *st, NdTensor *out,
                      int64_t ooff, int64_t m) {
    uint64_t buf[EW_MAX_IN][EW_BLOCK], obuf[EW_BLOCK];
    EwArgs a = {.p = pl->p};
    for (int k = 0; k < pl->n; k++) {
        if (!in[k]) continue;
        const char *src = (const char *)in[k]->data + off[k] * (int64_t)NdType_size(in[k]->type);
        a.st[k] = st[k];
        if (in[k]->type == pl->in_type[k])
            a.in[k] = src;
        else {
            Ew_convert(pl->in_type[k], buf[k], in[k]->type, src, st[k] ? m : 1);
            a.in[k] = buf[k];
        }
    }
    char *dst = (char *)out->data + ooff * (int64_t)NdType_size(out->type);
    a.out = out->type == pl->out_type ? (void *)dst : (void *)obuf;
    pl->kern(&a, m);
    if (a.out == obuf) Ew_convert(out->type, dst, pl->out_type, obuf, m);
}

/* One piece of ew_apply's work: the plan, the walk and the run length. */
typedef struct EwJob {
    const EwPlan *pl;
    const NdTensor *const *in;
    NdTensor *out;
    const EwWalk *w;
    int64_t blk; /* elements per kernel call */
    int st[EW_MAX_IN];
} EwJob;

/* The output elements [lo, hi) (flat, row-major): the odometer set at lo's
 * row, then each row's part in runs of at most blk. An element's value does
 * not depend on where its run starts, so any split gives the same bits. */
static void ew_range(void *arg, int64_t lo, int64_t hi) {
    const EwJob *jb = arg;
    const EwWalk *w = jb->w;
    const EwPlan *pl = jb->pl;
    int r = w->rank;
    int64_t len = w->dim[r - 1], row = lo / len, j = lo % len, off[EW_MAX_IN] = {0}, idx[ND_MAX_RANK] = {0};
    for (int d = r - 2; d >= 0; d--) {
        idx[d] = row % w->dim[d];
        row /= w->dim[d];
        for (int k = 0; k < pl->n; k++)
            off[k] += idx[d] * w->st[k][d];
    }
    for (int64_t o = lo; o < hi;) {
        int64_t end = len - j < hi - o ? len : j + (hi - o); /* this row's part: [j, end) */
        for (int64_t c = j; c < end; c += jb->blk) {
            int64_t at[EW_MAX_IN];
            for (int k = 0; k < pl->n; k++)
                at[k] = off[k] + c * jb->st[k];
            run_block(pl, jb->in, at, jb->st, jb->out, o + (c - j), end - c < jb->blk ? end - c : jb->blk);
        }
        o += end - j;
        j = 0;
        for (int d = r - 2; d >= 0; d--) { /* the odometer over the outer dimensions */
            for (int k = 0; k < pl->n; k++)
                off[k] += w->st[k][d];
            if (++idx[d] < w->dim[d]) break;
            for (int k = 0; k < pl->n; k++)
                off[k] -= w->st[k][d] * w->dim[d];
            idx[d] = 0;
        }
    }
}

/* out (allocated, of the broadcast shape) = the kernel over the inputs, split
 * over the threads by output elements when it is large enough (par.h; cost:
 * the op's FLOPs per element). */
static void ew_apply(const EwPlan *pl, const NdTensor *const *in, NdTensor *out) {
    if (out->count == 0) return;
    EwWalk w;
    walk_init(&w, in, pl->n, &out->shape);
    int r = w.rank;
    EwJob jb = {.pl = pl, .in = in, .out = out, .w = &w, .blk = w.dim[r - 1]};
    bool direct = out->type == pl->out_type;
    for (int k = 0; k < pl->n; k++) {
        jb.st[k] = (int)w.st[k][r - 1];
        direct = direct && (!in[k] || in[k]->type == pl->in_type[k]);
    }
    if (!direct && jb.blk > EW_BLOCK) jb.blk = EW_BLOCK;
    Par_range(out->count, (double)out->count * (pl->cost > 1 ? pl->cost : 1), ew_range, &jb);
}

/* ---- attributes ---- */

double Ew_attrFloat(const OpCtx *ctx, const char *name, double def) {
    return ctx->node ? NetNode_attrFloat(ctx->node, name, def) : def;
}

int64_t Ew_attrInt(const OpCtx *ctx, const char *name, int64_t def) {
    return ctx->node ? NetNode_attrInt(ctx->node, name, def) : def;
}

const char *Ew_attrString(const OpCtx *ctx, const char *name, const char *def) {
    return ctx->node ? NetNode_attrString(ctx->node, name, def) : def;
}

/* ---- the generic OpDef functions ---- */

Status Ew_check(const NetNode *node, const NetModel *model, const EwSpec *spec, char *err) {
    return spec->check ? spec->check(node, model, err) : TT_OK;
}

static const char *op_name(const OpCtx *ctx) { return ctx->node ? ctx->node->op : "the op"; }

/* Before opset 7, Add, Mul, And ... took broadcast=1 with an axis that aligns
 * input 1 anywhere in input 0; numpy's rule is the case of the end. */
static Status legacy_axis(const OpCtx *ctx) {
    if (!ctx->node || !NetNode_attr(ctx->node, "axis") || ctx->n_in < 2 || !ctx->in[0] || !ctx->in[1]) return TT_OK;
    int ra = ctx->in[0]->shape.rank, rb = ctx->in[1]->shape.rank;
    int64_t axis = NetNode_attrInt(ctx->node, "axis", 0);
    if (ra < 0 || rb < 0 || (axis < 0 ? axis + ra : axis) + rb == ra) return TT_OK;
    return tt_fail(ctx->err, "attribute axis=%lld aligns input 1 (rank %d) inside input 0 (rank %d), not at its end",
                   (long long)axis, rb, ra);
}

/* The inputs after the typed one must share its type (unless mixed). */
static Status same_types(const OpCtx *ctx, const EwSpec *spec) {
    const NdTensor *t = ctx->in[spec->first];
    for (int k = spec->first + 1; k < ctx->n_in && !spec->mixed; k++) {
        const NdTensor *u = ctx->in[k];
        if (u && u->type != ND_UNDEF && t->type != ND_UNDEF && u->type != t->type)
            return tt_fail(ctx->err, "input %d is %s but input %d is %s; %s takes inputs of one type", spec->first,
                           NdType_name(t->type), k, NdType_name(u->type), op_name(ctx));
    }
    return TT_OK;
}

Status Ew_infer(OpCtx *ctx, const EwSpec *spec) {
    for (int k = 0; k <= spec->first; k++)
        if (k >= ctx->n_in || !ctx->in[k]) return tt_fail(ctx->err, "input %d is missing", k);
    for (int k = 0; k < spec->first; k++)
        if (Op_requireType(ctx, k, EW_T_BOOL) != TT_OK) return TT_ERR;
    if (Op_requireType(ctx, spec->first, spec->types) != TT_OK || same_types(ctx, spec) != TT_OK ||
        legacy_axis(ctx) != TT_OK)
        return TT_ERR;
    NdType t = ctx->in[spec->first]->type;
    switch (spec->out) {
    case EW_OUT_SAME:
        break;
    case EW_OUT_BOOL:
        t = ND_BOOL;
        break;
    case EW_OUT_CAST:
        t = (NdType)Ew_attrInt(ctx, "to", ND_UNDEF);
        break;
    case EW_OUT_LIKE:
        t = ctx->in[1] ? ctx->in[1]->type : ND_UNDEF;
        break;
    }
    if (spec->out == EW_OUT_CAST || spec->out == EW_OUT_LIKE) {
        if (t != ND_UNDEF && !NdType_supported(t))
            return tt_fail(ctx->err, "%s to %s is not supported", op_name(ctx), NdType_name(t));
        ctx->out[0].type = t;
        ctx->out[0].shape = ctx->in[0]->shape; /* CastLike's target gives only its type */
        return TT_OK;
    }
    return Op_inferBroadcast(ctx, t);
}

/* Sum, Max, Min, Mean: out = ((in0 op in1) op in2) ..., divided by the count for Mean. */
static Status ew_fold(OpCtx *ctx, const EwSpec *spec, EwPlan *pl) {
    const NdTensor *cur = ctx->in[0];
    NdTensor acc = {0};
    pl->n = 2;
    Status s = TT_OK;
    if (ctx->n_in == 1) s = NdTensor_copy(&acc, cur, ctx->err);
    for (int k = 1; k < ctx->n_in && s == TT_OK; k++) {
        NdTensor next = {0};
        NdShape sh;
        const NdTensor *two[2] = {cur, ctx->in[k]};
        s = NdShape_broadcast(&cur->shape, &ctx->in[k]->shape, &sh, ctx->err);
        if (s == TT_OK) s = NdTensor_alloc(&next, cur->type, &sh, ctx->err);
        if (s == TT_OK) ew_apply(pl, two, &next);
        NdTensor_free(&acc);
        acc = next;
        cur = &acc;
    }
    if (s == TT_OK && spec->mean && ctx->n_in > 1) {
        NdTensor count = {0}, mean = {0};
        NdShape scalar = {.rank = 0};
        s = NdTensor_alloc(&count, acc.type, &scalar, ctx->err);
        if (s == TT_OK) s = NdTensor_alloc(&mean, acc.type, &acc.shape, ctx->err);
        if (s == TT_OK) {
            const NdTensor *two[2] = {&acc, &count};
            NdTensor_set(&count, 0, ctx->n_in);
            pl->kern = EW_Div.k[0][Ew_domain(acc.type)];
            ew_apply(pl, two, &mean);
            NdTensor_free(&acc);
            acc = mean;
        } else
            NdTensor_free(&mean);
        NdTensor_free(&count);
    }
    if (s != TT_OK) {
        NdTensor_free(&acc);
        return TT_ERR;
    }
    ctx->out[0] = acc;
    return TT_OK;
}

/* Cast and CastLike: Ew_convert of elements [lo, hi). */
typedef struct EwConvJob {
    NdType dt, st;
    void *dst;
    const void *src;
} EwConvJob;

static void convert_range(void *arg, int64_t lo, int64_t hi) {
    const EwConvJob *c = arg;
    Ew_convert(c->dt, (char *)c->dst + lo * (int64_t)NdType_size(c->dt), c->st,
               (const char *)c->src + lo * (int64_t)NdType_size(c->st), hi - lo);
}

Status Ew_run(OpCtx *ctx, const EwSpec *spec) {
    if (Ew_infer(ctx, spec) != TT_OK) return TT_ERR;
    NdTensor *out = &ctx->out[0];
    NdType type = out->type;
    NdShape shape = out->shape;
    out->type = ND_UNDEF;
    if (spec->out == EW_OUT_CAST || spec->out == EW_OUT_LIKE) {
        if (NdTensor_allocFull(out, type, &shape, ctx->err) != TT_OK) return TT_ERR;
        EwConvJob c = {.dt = type, .dst = out->data, .st = ctx->in[0]->type, .src = ctx->in[0]->data};
        Par_range(out->count, (double)out->count, convert_range, &c);
        return TT_OK;
    }
    EwPrm prm = {0};
    if (spec->param) spec->param(ctx, &prm);
    NdType t = ctx->in[spec->first]->type;
    EwDom dom = Ew_domain(t);
    if (spec->ints_in_f64 && (dom == EW_I64 || dom == EW_U64)) dom = EW_F64;
    EwPlan pl = {.kern = spec->k[prm.variant][dom],
                 .p = &prm,
                 .n = ctx->n_in < EW_MAX_IN ? ctx->n_in : EW_MAX_IN,
                 .cost = spec->flops};
    if (!pl.kern) return tt_fail(ctx->err, "%s does not compute %s", op_name(ctx), NdType_name(t));
    for (int k = 0; k < EW_MAX_IN; k++)
        pl.in_type[k] = k < spec->first ? ND_BOOL : DOMAIN_TYPE[dom];
    pl.out_type = spec->out == EW_OUT_BOOL ? ND_BOOL : DOMAIN_TYPE[dom];
    if (spec->fold) {
        for (int k = 0; k < ctx->n_in; k++)
            if (!ctx->in[k]) return tt_fail(ctx->err, "input %d is missing", k);
        return ew_fold(ctx, spec, &pl);
    }
    if (NdTensor_allocFull(out, type, &shape, ctx->err) != TT_OK) return TT_ERR;
    ew_apply(&pl, ctx->in, out);
    return TT_OK;
}

double Ew_flops(const OpCtx *ctx, const EwSpec *spec) {
    NdShape s = {.rank = 0};
    char err[TT_ERRLEN];
    for (int k = 0; k < ctx->n_in; k++)
        if (ctx->in[k] && NdShape_broadcast(&s, &ctx->in[k]->shape, &s, err) != TT_OK) return 0;
    if (spec->out == EW_OUT_CAST || spec->out == EW_OUT_LIKE) s = ctx->in[0] ? ctx->in[0]->shape : s;
    int64_t count;
    if (s.rank < 0 || NdShape_count(&s, ND_F32, &count, err) != TT_OK) return 0;
    double per = spec->flops;
    if (spec->fold && ctx->n_in > 2) per *= ctx->n_in - 1;
    return per * (double)count;
}
