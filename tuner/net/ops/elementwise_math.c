/* tuner/net/ops/elementwise_math.c: arithmetic, activations and float
 * functions (see elementwise.h).
 *
 * Each op is one scalar expression per domain; <tgmath.h> makes exp, erf,
 * tanh ... the float functions in the float instance and the double ones in
 * the double instance, so a float32 tensor computes in float32 as ONNX's
 * reference does. Integer arithmetic wraps (it goes through uint64, where C
 * defines overflow) and divides by zero to 0, as numpy's does. */
#include <string.h>
#include <tgmath.h>

#include "tuner/net/ops/elementwise.h"
#include "tuner/net/ops/fastmath.h"

/* Scalar functions NAME_sf (float), NAME_sd (double) [, NAME_si (int64), NAME_su
 * (uint64)] from one expression per kind; T names the instance's type. */
#define SCALAR(NAME, T, ARGS, EXPR)                                                                                    \
    static inline T NAME ARGS {                                                                                        \
        (void)p;                                                                                                       \
        return (T)(EXPR);                                                                                              \
    }
/* A float op of one input: kernels N_f32 and N_f64. */
#define FLOAT1(N, EXPR)                                                                                                \
    SCALAR(N##_sf, float, (float x, const EwPrm *p), EXPR)                                                             \
    SCALAR(N##_sd, double, (double x, const EwPrm *p), EXPR)                                                           \
    EW_MAP1(N##_f32, N##_sf, float, float)                                                                             \
    EW_MAP1(N##_f64, N##_sd, double, double)
/* A float op whose float32 instance is an expression of its own (fastmath.h). */
#define FLOAT1_F32(N, FEXPR, DEXPR)                                                                                    \
    SCALAR(N##_sf, float, (float x, const EwPrm *p), FEXPR)                                                            \
    SCALAR(N##_sd, double, (double x, const EwPrm *p), DEXPR)                                                          \
    EW_MAP1(N##_f32, N##_sf, float, float)                                                                             \
    EW_MAP1(N##_f64, N##_sd, double, double)

/* A numeric op of one input: float expression F, int64 I, uint64 U. */
#define NUM1(N, F, I, U)                                                                                               \
    FLOAT1(N, F)                                                                                                       \
    SCALAR(N##_si, int64_t, (int64_t x, const EwPrm *p), I)                                                            \
    SCALAR(N##_su, uint64_t, (uint64_t x, const EwPrm *p), U)                                                          \
    EW_MAP1(N##_i64, N##_si, int64_t, int64_t)                                                                         \
    EW_MAP1(N##_u64, N##_su, uint64_t, uint64_t)

#define FLOAT2(N, EXPR)                                                                                                \
    SCALAR(N##_sf, float, (float a, float b, const EwPrm *p), EXPR)                                                    \
    SCALAR(N##_sd, double, (double a, double b, const EwPrm *p), EXPR)                                                 \
    EW_MAP2(N##_f32, N##_sf, float, float, float)                                                                      \
    EW_MAP2(N##_f64, N##_sd, double, double, double)

#define NUM2(N, F, I, U)                                                                                               \
    FLOAT2(N, F)                                                                                                       \
    SCALAR(N##_si, int64_t, (int64_t a, int64_t b, const EwPrm *p), I)                                                 \
    SCALAR(N##_su, uint64_t, (uint64_t a, uint64_t b, const EwPrm *p), U)                                              \
    EW_MAP2(N##_i64, N##_si, int64_t, int64_t, int64_t)                                                                \
    EW_MAP2(N##_u64, N##_su, uint64_t, uint64_t, uint64_t)

#define K_FLOAT(N)                                                                                                     \
    { N##_f32, N##_f64, NULL, NULL, NULL }
#define K_NUM(N)                                                                                                       \
    { N##_f32, N##_f64, N##_i64, N##_u64, NULL }

/* int64 arithmetic through uint64, where overflow wraps instead of being undefined */
#define WRAP(a, op, b) ((int64_t)((uint64_t)(a)op(uint64_t)(b)))

/* ---- arithmetic ---- */

NUM2(add, a + b, WRAP(a, +, b), a + b)
NUM2(sub, a - b, WRAP(a, -, b), a - b)
NUM2(mul, a *b, WRAP(a, *, b), a *b)
NUM2(div, a / b, b == 0 ? 0 : b == -1 ? WRAP(0, -, a) : a / b, b ? a / b : 0)
NUM2(max, isnan(a) || a > b ? a : b, a > b ? a : b, a > b ? a : b)
NUM2(min, isnan(a) || a < b ? a : b, a < b ? a : b, a < b ? a : b)
NUM2(prelu, a < 0 ? b * a : a, a < 0 ? WRAP(a, *, b) : a, a)
FLOAT2(pow, pow(a, b))

/* Mod: fmod=1 takes the dividend's sign (C's % and fmod); fmod=0 the
 * divisor's (Python's %). */
static inline int64_t pymod_i(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
static inline float pymod_f(float a, float b) {
    float r = fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
static inline double pymod_d(double a, double b) {
    double r = fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
NUM2(fmod, fmod(a, b), b == 0 || b == -1 ? 0 : a % b, b ? a % b : 0)
NUM2(pymod, _Generic(a, float : pymod_f, default : pymod_d)(a, b), pymod_i(a, b), b ? a % b : 0)

const EwSpec EW_Add = {.types = EW_T_NUM, .flops = 1, .k = {K_NUM(add)}};
const EwSpec EW_Sub = {.types = EW_T_NUM, .flops = 1, .k = {K_NUM(sub)}};
const EwSpec EW_Mul = {.types = EW_T_NUM, .flops = 1, .k = {K_NUM(mul)}};
const EwSpec EW_Div = {.types = EW_T_NUM, .flops = 1, .k = {K_NUM(div)}};
/* Pow: the exponent may have another type; integer bases compute in double
 * and truncate back, as numpy's power followed by astype does. */
const EwSpec EW_Pow = {.types = EW_T_NUM, .mixed = true, .ints_in_f64 = true, .flops = 10, .k = {K_FLOAT(pow)}};
const EwSpec EW_PRelu = {.types = EW_T_NUM, .flops = 2, .k = {K_NUM(prelu)}};
const EwSpec EW_Max = {.types = EW_T_NUM, .fold = true, .flops = 1, .k = {K_NUM(max)}};
const EwSpec EW_Min = {.types = EW_T_NUM, .fold = true, .flops = 1, .k = {K_NUM(min)}};
const EwSpec EW_Sum = {.types = EW_T_FLOAT, .fold = true, .flops = 1, .k = {K_NUM(add)}};
const EwSpec EW_Mean = {.types = EW_T_FLOAT, .fold = true, .mean = true, .flops = 1, .k = {K_NUM(add)}};

static Status check_mod(const NetNode *node, const NetModel *model, char *err) {
    (void)model;
    int64_t f = NetNode_attrInt(node, "fmod", 0);
    if (f != 0 && f != 1) return tt_fail(err, "attribute fmod=%lld is not 0 or 1", (long long)f);
    return TT_OK;
}
static void param_mod(const OpCtx *ctx, EwPrm *p) { p->variant = Ew_attrInt(ctx, "fmod", 0) ? 0 : 1; }
const EwSpec EW_Mod = {
    .types = EW_T_NUM, .flops = 4, .check = check_mod, .param = param_mod, .k = {K_NUM(fmod), K_NUM(pymod)}};

/* Clip: min(max(x, lo), hi); an omitted bound is the domain's extreme, or
 * before opset 11 the attribute (p->alpha, p->beta). */
#define CLIP_KERNEL(NAME, T, LO, HI)                                                                                   \
    static void NAME(const EwArgs *a, int64_t n) {                                                                     \
        const T *restrict x = a->in[0], *restrict lo = a->in[1], *restrict hi = a->in[2];                              \
        T *restrict y = a->out;                                                                                        \
        const EwPrm *p = a->p;                                                                                         \
        (void)p;                                                                                                       \
        const int64_t sx = a->st[0], sl = a->st[1], sh = a->st[2];                                                     \
        for (int64_t i = 0; i < n; i++) {                                                                              \
            T l = lo ? lo[i * sl] : (LO), h = hi ? hi[i * sh] : (HI), v = x[i * sx];                                   \
            v = v < l ? l : v;                                                                                         \
            y[i] = v > h ? h : v;                                                                                      \
        }                                                                                                              \
    }
CLIP_KERNEL(clip_f32, float, (float)p->alpha, (float)p->beta)
CLIP_KERNEL(clip_f64, double, p->alpha, p->beta)
CLIP_KERNEL(clip_i64, int64_t, INT64_MIN, INT64_MAX)
CLIP_KERNEL(clip_u64, uint64_t, 0, UINT64_MAX)

static void param_clip(const OpCtx *ctx, EwPrm *p) {
    bool attrs = ctx->opset < 11;
    p->alpha = attrs ? Ew_attrFloat(ctx, "min", -INFINITY) : -INFINITY;
    p->beta = attrs ? Ew_attrFloat(ctx, "max", INFINITY) : INFINITY;
}
const EwSpec EW_Clip = {.types = EW_T_NUM, .flops = 2, .param = param_clip, .k = {K_NUM(clip)}};

/* ---- one input, any numeric type ---- */

NUM1(neg, -x, WRAP(0, -, x), 0 - x)
NUM1(abs, fabs(x), x < 0 ? WRAP(0, -, x) : x, x)
NUM1(sign, x > 0 ? 1 : x < 0 ? -1 : x, (x > 0) - (x < 0), x > 0)
NUM1(relu, x < 0 ? 0 : x, x < 0 ? 0 : x, x)
FLOAT1(shrink, x<-p->alpha ? x + p->beta : x> p->alpha ? x - p->beta : 0)

const EwSpec EW_Neg = {.types = EW_T_SIGNED, .flops = 1, .k = {K_NUM(neg)}};
const EwSpec EW_Abs = {.types = EW_T_NUM, .flops = 1, .k = {K_NUM(abs)}};
const EwSpec EW_Sign = {.types = EW_T_NUM, .flops = 1, .k = {K_NUM(sign)}};
const EwSpec EW_Relu = {.types = EW_T_SIGNED, .flops = 1, .k = {K_NUM(relu)}};

static void param_shrink(const OpCtx *ctx, EwPrm *p) {
    p->alpha = Ew_attrFloat(ctx, "lambd", 0.5);
    p->beta = Ew_attrFloat(ctx, "bias", 0.0);
}
const EwSpec EW_Shrink = {
    .types = EW_T_NUM, .ints_in_f64 = true, .flops = 2, .param = param_shrink, .k = {K_FLOAT(shrink)}};

/* ---- float functions ---- */

#define SQRT1_2 0.70710678118654752440
#define SQRT_2_PI 0.79788456080286535588
/* into [0, 1], NaN kept */
#define CLAMP01(v) ((v) < 0 ? 0 : (v) > 1 ? 1 : (v))
/* log(1 + e^x) without overflow for large x */
#define SOFTPLUS(x) ((x) > 0 ? (x) + log1p(exp(-(x))) : log1p(exp(x)))

FLOAT1(sqrt_, sqrt(x))
FLOAT1(recip, 1 / x)
FLOAT1_F32(exp_, ff_exp(x), exp(x))
FLOAT1(log_, log(x))
FLOAT1_F32(erf_, ff_erf(x), erf(x))
FLOAT1_F32(tanh_, ff_tanh(x), tanh(x))
FLOAT1_F32(sigmoid, ff_sigmoid(x), x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)))
FLOAT1(leaky, x < 0 ? p->alpha * x : x)
FLOAT1(elu, x < 0 ? p->alpha * expm1(x) : x)
FLOAT1(selu, x > 0 ? p->beta * x : p->beta * (p->alpha * exp(x) - p->alpha))
FLOAT1(celu, x > 0 ? x : p->alpha * expm1(x / p->alpha))
FLOAT1(thresh, x > p->alpha ? x : 0)
FLOAT1(hardsig, CLAMP01(p->alpha *x + p->beta))
FLOAT1(hardswish, x *CLAMP01(x / 6 + 0.5f))
FLOAT1_F32(gelu, x *ff_gelu_cdf(x), 0.5 * x * (1 + erf(x * SQRT1_2)))
/* (1 + tanh(y)) / 2 = sigmoid(2y), which keeps the tail */
FLOAT1_F32(gelu_tanh, x *ff_sigmoid(2 * (float)SQRT_2_PI * (x + 0.044715f * x * x * x)),
           0.5 * x * (1 + tanh(SQRT_2_PI * (x + 0.044715 * x * x * x))))
FLOAT1(softplus, SOFTPLUS(x))
FLOAT1(softsign, x / (1 + fabs(x)))
FLOAT1(mish, x *tanh(SOFTPLUS(x)))
FLOAT1(floor_, floor(x))
FLOAT1(ceil_, ceil(x))
FLOAT1(round_, nearbyint(x)) /* the default rounding mode: half to even */
FLOAT1(sin_, sin(x))
FLOAT1(cos_, cos(x))
FLOAT1(tan_, tan(x))
FLOAT1(asin_, asin(x))
FLOAT1(acos_, acos(x))
FLOAT1(atan_, atan(x))
FLOAT1(sinh_, sinh(x))
FLOAT1(cosh_, cosh(x))
FLOAT1(asinh_, asinh(x))
FLOAT1(acosh_, acosh(x))
FLOAT1(atanh_, atanh(x))

static void param_leaky(const OpCtx *ctx, EwPrm *p) { p->alpha = Ew_attrFloat(ctx, "alpha", 0.01); }
static void param_alpha1(const OpCtx *ctx, EwPrm *p) { p->alpha = Ew_attrFloat(ctx, "alpha", 1.0); }
static void param_selu(const OpCtx *ctx, EwPrm *p) {
    p->alpha = Ew_attrFloat(ctx, "alpha", 1.67326319217681884765625);
    p->beta = Ew_attrFloat(ctx, "gamma", 1.05070102214813232421875);
}
static void param_hardsig(const OpCtx *ctx, EwPrm *p) {
    p->alpha = Ew_attrFloat(ctx, "alpha", 0.2);
    p->beta = Ew_attrFloat(ctx, "beta", 0.5);
}
static Status check_gelu(const NetNode *node, const NetModel *model, char *err) {
    (void)model;
    const char *a = NetNode_attrString(node, "approximate", "none");
    if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0)
        return tt_fail(err, "attribute approximate='%s' is not 'none' or 'tanh'", a);
    return TT_OK;
}
static void param_gelu(const OpCtx *ctx, EwPrm *p) {
    p->variant = strcmp(Ew_attrString(ctx, "approximate", "none"), "tanh") == 0;
}

#define FLOAT_SPEC(N, K, FLOPS, PARAM)                                                                                 \
    const EwSpec EW_##N = {.types = EW_T_FLOAT, .flops = FLOPS, .param = PARAM, .k = {K_FLOAT(K)}};
FLOAT_SPEC(Sqrt, sqrt_, 4, NULL)
FLOAT_SPEC(Reciprocal, recip, 1, NULL)
FLOAT_SPEC(Exp, exp_, 10, NULL)
FLOAT_SPEC(Log, log_, 10, NULL)
FLOAT_SPEC(Erf, erf_, 10, NULL)
FLOAT_SPEC(Tanh, tanh_, 10, NULL)
FLOAT_SPEC(Sigmoid, sigmoid, 12, NULL)
FLOAT_SPEC(LeakyRelu, leaky, 2, param_leaky)
FLOAT_SPEC(Elu, elu, 12, param_alpha1)
FLOAT_SPEC(Selu, selu, 12, param_selu)
FLOAT_SPEC(Celu, celu, 12, param_alpha1)
FLOAT_SPEC(ThresholdedRelu, thresh, 1, param_alpha1)
FLOAT_SPEC(HardSigmoid, hardsig, 4, param_hardsig)
FLOAT_SPEC(HardSwish, hardswish, 5, NULL)
FLOAT_SPEC(Softplus, softplus, 20, NULL)
FLOAT_SPEC(Softsign, softsign, 3, NULL)
FLOAT_SPEC(Mish, mish, 30, NULL)
FLOAT_SPEC(Floor, floor_, 1, NULL)
FLOAT_SPEC(Ceil, ceil_, 1, NULL)
FLOAT_SPEC(Round, round_, 1, NULL)
FLOAT_SPEC(Sin, sin_, 10, NULL)
FLOAT_SPEC(Cos, cos_, 10, NULL)
FLOAT_SPEC(Tan, tan_, 10, NULL)
FLOAT_SPEC(Asin, asin_, 10, NULL)
FLOAT_SPEC(Acos, acos_, 10, NULL)
FLOAT_SPEC(Atan, atan_, 10, NULL)
FLOAT_SPEC(Sinh, sinh_, 10, NULL)
FLOAT_SPEC(Cosh, cosh_, 10, NULL)
FLOAT_SPEC(Asinh, asinh_, 10, NULL)
FLOAT_SPEC(Acosh, acosh_, 10, NULL)
FLOAT_SPEC(Atanh, atanh_, 10, NULL)

const EwSpec EW_Gelu = {.types = EW_T_FLOAT,
                        .flops = 14,
                        .check = check_gelu,
                        .param = param_gelu,
                        .k = {K_FLOAT(gelu), K_FLOAT(gelu_tanh)}};
