/* tuner/net/ops/elementwise.h: what the elementwise op files share (not a
 * public header: ops outside this family go through op.h).
 *
 * An elementwise op is one EwSpec: the types it takes, how its output type
 * follows, and one kernel per compute domain. A kernel is a loop over a run of
 * contiguous elements in one domain (float, double, int64, uint64, bool); the
 * engine (elementwise_engine.c) walks the broadcast output, converts inputs of
 * other types into the domain a block at a time (float16 and bfloat16 compute
 * in float, int8..int32 in int64, uint8..uint32 in uint64) and converts the
 * kernel's block into the output type. Same-typed float32 inputs are read in
 * place, so the common case is one kernel call over the whole run.
 *
 * Files: elementwise_engine.c (conversion, broadcast walk, the generic
 * check/infer/run), elementwise_math.c (arithmetic and activations),
 * elementwise_logic.c (comparisons, logic, Where, Cast, classification),
 * elementwise.c (the op list and OPS_ELEMENTWISE). */
#ifndef TT_NET_OPS_ELEMENTWISE_H
#define TT_NET_OPS_ELEMENTWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "tuner/net/ops/op.h"

#define EW_MAX_IN                                                                                                      \
    OP_FUSED_ARGS /* the most inputs one kernel call reads (3: Where, Clip); variadic ops fold pairwise                \
                   */

typedef enum { EW_F32, EW_F64, EW_I64, EW_U64, EW_BOOL, EW_NDOM } EwDom;

/* An op's attributes, read once per run by its spec's param function. */
typedef struct EwPrm {
    double alpha, beta, gamma;
    int64_t flags;
    int variant; /* which row of EwSpec.k the attributes select (Gelu's tanh form, Mod's fmod, BitShift's RIGHT) */
} EwPrm;

typedef struct EwArgs {
    void *out;
    const void *in[EW_MAX_IN]; /* NULL: an omitted optional input */
    int st[EW_MAX_IN];         /* 1: one element per output element; 0: one element for the whole run */
    const EwPrm *p;
} EwArgs;

/* Computes n output elements of one domain (see EwArgs). */
typedef void (*EwKernel)(const EwArgs *a, int64_t n);

typedef enum {
    EW_OUT_SAME, /* the type of the typed input */
    EW_OUT_BOOL,
    EW_OUT_CAST, /* the 'to' attribute (Cast) */
    EW_OUT_LIKE  /* the type of input 1 (CastLike) */
} EwOut;

typedef struct EwSpec {
    const NdType *types; /* what the typed input may be (ND_UNDEF ends the list) */
    int first;           /* the typed input; the inputs before it are bool conditions (Where) */
    bool mixed;          /* inputs after `first` may have another type (Pow's exponent) */
    bool ints_in_f64;    /* integer inputs compute in float64 and convert back (Pow, Shrink) */
    bool fold;           /* variadic: folded pairwise from the left (Sum, Max, Min, Mean) */
    bool mean;           /* the fold is divided by the input count (Mean) */
    EwOut out;
    double flops; /* per output element */
    Status (*check)(const NetNode *node, const NetModel *model, char *err);
    void (*param)(const OpCtx *ctx, EwPrm *p);
    EwKernel k[2][EW_NDOM]; /* [variant][domain]; NULL where the domain is not taken */
} EwSpec;

/* Type lists for EwSpec.types (elementwise_engine.c). */
extern const NdType EW_T_FLOAT[];  /* float16, bfloat16, float32, float64 */
extern const NdType EW_T_SIGNED[]; /* the floats and int8..int64 */
extern const NdType EW_T_NUM[];    /* the signed ones and uint8..uint64 */
extern const NdType EW_T_ALL[];    /* the numeric ones and bool */
extern const NdType EW_T_BOOL[];
extern const NdType EW_T_UINT[];

/* The compute domain of a type, and the type that stores a domain. */
EwDom Ew_domain(NdType t);
NdType Ew_domainType(EwDom d);
/* n contiguous elements of type st into type dt: floats to integers truncate
 * toward zero (saturating at int64, NaN to 0, then wrapping into narrower
 * integers as numpy's astype does), anything to bool is x != 0, float16 and
 * bfloat16 round to nearest even. */
void Ew_convert(NdType dt, void *dst, NdType st, const void *src, int64_t n);

/* The generic OpDef functions, given the op's spec. */
Status Ew_check(const NetNode *node, const NetModel *model, const EwSpec *spec, char *err);
Status Ew_infer(OpCtx *ctx, const EwSpec *spec);
Status Ew_run(OpCtx *ctx, const EwSpec *spec);
double Ew_flops(const OpCtx *ctx, const EwSpec *spec);

/* Attribute getters that take a missing node as "every attribute absent". */
double Ew_attrFloat(const OpCtx *ctx, const char *name, double def);
int64_t Ew_attrInt(const OpCtx *ctx, const char *name, int64_t def);
const char *Ew_attrString(const OpCtx *ctx, const char *name, const char *def);

/* ---- kernel loops: each instantiates one scalar function (FN(x..., p), inlined) over a run ---- */

#define EW_MAP1(NAME, FN, TI, TO)                                                                                      \
    static void NAME(const EwArgs *a, int64_t n) {                                                                     \
        const TI *restrict x = a->in[0];                                                                               \
        TO *restrict y = a->out;                                                                                       \
        const EwPrm *p = a->p;                                                                                         \
        if (a->st[0])                                                                                                  \
            for (int64_t i = 0; i < n; i++)                                                                            \
                y[i] = FN(x[i], p);                                                                                    \
        else                                                                                                           \
            for (int64_t i = 0; i < n; i++)                                                                            \
                y[i] = FN(x[0], p);                                                                                    \
    }

/* Both contiguous, and each side held for the run, as separate loops so that
 * the compiler vectorizes the common cases. The engine never writes into an
 * input (restrict); two inputs may be one tensor, which is only read. */
#define EW_MAP2(NAME, FN, TA, TB, TO)                                                                                  \
    static void NAME(const EwArgs *a, int64_t n) {                                                                     \
        const TA *restrict x = a->in[0];                                                                               \
        const TB *restrict z = a->in[1];                                                                               \
        TO *restrict y = a->out;                                                                                       \
        const EwPrm *p = a->p;                                                                                         \
        if (a->st[0] && a->st[1])                                                                                      \
            for (int64_t i = 0; i < n; i++)                                                                            \
                y[i] = FN(x[i], z[i], p);                                                                              \
        else if (a->st[0]) {                                                                                           \
            const TB b = z[0];                                                                                         \
            for (int64_t i = 0; i < n; i++)                                                                            \
                y[i] = FN(x[i], b, p);                                                                                 \
        } else if (a->st[1]) {                                                                                         \
            const TA b = x[0];                                                                                         \
            for (int64_t i = 0; i < n; i++)                                                                            \
                y[i] = FN(b, z[i], p);                                                                                 \
        } else                                                                                                         \
            for (int64_t i = 0; i < n; i++)                                                                            \
                y[i] = FN(x[0], z[0], p);                                                                              \
    }

/* Three inputs, any of them held (Where, Clip): strided, since these are rarer. */
#define EW_MAP3(NAME, FN, TA, TB, TC, TO)                                                                              \
    static void NAME(const EwArgs *a, int64_t n) {                                                                     \
        const TA *restrict x = a->in[0];                                                                               \
        const TB *restrict z = a->in[1];                                                                               \
        const TC *restrict w = a->in[2];                                                                               \
        TO *restrict y = a->out;                                                                                       \
        const int64_t sx = a->st[0], sz = a->st[1], sw = a->st[2];                                                     \
        for (int64_t i = 0; i < n; i++)                                                                                \
            y[i] = FN(x[i * sx], z[i * sz], w[i * sw], a->p);                                                          \
    }

/* Every op of the family: X(Name, min_in, max_in). elementwise.c makes the
 * OpDef entries; each op's spec is EW_<Name>, defined beside its kernels. */
#define EW_OPS(X)                                                                                                      \
    X(Add, 2, 2)                                                                                                       \
    X(Sub, 2, 2)                                                                                                       \
    X(Mul, 2, 2)                                                                                                       \
    X(Div, 2, 2)                                                                                                       \
    X(Pow, 2, 2)                                                                                                       \
    X(Mod, 2, 2)                                                                                                       \
    X(PRelu, 2, 2)                                                                                                     \
    X(Max, 1, -1)                                                                                                      \
    X(Min, 1, -1)                                                                                                      \
    X(Sum, 1, -1)                                                                                                      \
    X(Mean, 1, -1)                                                                                                     \
    X(Clip, 1, 3)                                                                                                      \
    X(Neg, 1, 1)                                                                                                       \
    X(Abs, 1, 1)                                                                                                       \
    X(Sign, 1, 1)                                                                                                      \
    X(Relu, 1, 1)                                                                                                      \
    X(Shrink, 1, 1)                                                                                                    \
    X(Sqrt, 1, 1)                                                                                                      \
    X(Reciprocal, 1, 1)                                                                                                \
    X(Exp, 1, 1)                                                                                                       \
    X(Log, 1, 1)                                                                                                       \
    X(Erf, 1, 1)                                                                                                       \
    X(Tanh, 1, 1)                                                                                                      \
    X(Sigmoid, 1, 1)                                                                                                   \
    X(LeakyRelu, 1, 1)                                                                                                 \
    X(Elu, 1, 1)                                                                                                       \
    X(Selu, 1, 1)                                                                                                      \
    X(Celu, 1, 1)                                                                                                      \
    X(ThresholdedRelu, 1, 1)                                                                                           \
    X(HardSigmoid, 1, 1)                                                                                               \
    X(HardSwish, 1, 1)                                                                                                 \
    X(Gelu, 1, 1)                                                                                                      \
    X(Softplus, 1, 1)                                                                                                  \
    X(Softsign, 1, 1)                                                                                                  \
    X(Mish, 1, 1)                                                                                                      \
    X(Floor, 1, 1)                                                                                                     \
    X(Ceil, 1, 1)                                                                                                      \
    X(Round, 1, 1)                                                                                                     \
    X(Sin, 1, 1)                                                                                                       \
    X(Cos, 1, 1)                                                                                                       \
    X(Tan, 1, 1)                                                                                                       \
    X(Asin, 1, 1)                                                                                                      \
    X(Acos, 1, 1)                                                                                                      \
    X(Atan, 1, 1)                                                                                                      \
    X(Sinh, 1, 1)                                                                                                      \
    X(Cosh, 1, 1)                                                                                                      \
    X(Asinh, 1, 1)                                                                                                     \
    X(Acosh, 1, 1)                                                                                                     \
    X(Atanh, 1, 1)                                                                                                     \
    X(Equal, 2, 2)                                                                                                     \
    X(Less, 2, 2)                                                                                                      \
    X(Greater, 2, 2)                                                                                                   \
    X(LessOrEqual, 2, 2)                                                                                               \
    X(GreaterOrEqual, 2, 2)                                                                                            \
    X(Not, 1, 1)                                                                                                       \
    X(And, 2, 2)                                                                                                       \
    X(Or, 2, 2)                                                                                                        \
    X(Xor, 2, 2)                                                                                                       \
    X(BitShift, 2, 2)                                                                                                  \
    X(IsNaN, 1, 1)                                                                                                     \
    X(IsInf, 1, 1)                                                                                                     \
    X(Where, 3, 3)                                                                                                     \
    X(Cast, 1, 1)                                                                                                      \
    X(CastLike, 2, 2)

/* The spec of an op of the family by its op type, or NULL. */
const EwSpec *Ew_spec(const char *op);
/* Whether a fused chain (op tunetop.Elementwise) can compute the op as one of
 * its float32 steps: a float32 kernel whose output is its input's type,
 * neither a condition (Where) nor a Mean. */
bool Ew_fusable(const EwSpec *spec);

/* Op tunetop.Elementwise (elementwise_fused.c): a fused chain of at most
 * OP_FUSED_MAX_STEPS float32 steps (op.h). */
Status Ew_fusedCheck(const NetNode *node, const NetModel *model, char *err);
Status Ew_fusedInfer(OpCtx *ctx);
Status Ew_fusedRun(OpCtx *ctx);
/* The chain over ctx->in[0]'s elements (whatever its shape) into y, which may
 * be ctx->in[0]'s own data (each block reads its elements before it writes
 * them): a program runs a chain in place on a kernel's blocked output. The
 * other inputs must be single elements then. ctx->node may also be a lone
 * node of an op a chain can hold (a step of one: HardSwish, Sigmoid, ...). */
Status Ew_fusedRunInto(OpCtx *ctx, float *y);
double Ew_fusedFlops(const OpCtx *ctx);

#define EW_DECLARE(N, lo, hi) extern const EwSpec EW_##N;
EW_OPS(EW_DECLARE)
#undef EW_DECLARE

#endif
