/* tuner/net/ops/elementwise_logic.c: comparisons, logic, bit shifts, NaN and
 * infinity tests, Where and Cast (see elementwise.h). */
#include <math.h>
#include <string.h>

#include "tuner/net/ops/elementwise.h"

#define SCALAR(NAME, T, ARGS, EXPR)                                                                                    \
    static inline T NAME ARGS {                                                                                        \
        (void)p;                                                                                                       \
        return (T)(EXPR);                                                                                              \
    }

/* A comparison in every domain, writing bool. */
#define CMP_TYPE(N, T, SUF, EXPR)                                                                                      \
    SCALAR(N##_s##SUF, uint8_t, (T a, T b, const EwPrm *p), EXPR)                                                      \
    EW_MAP2(N##_##SUF, N##_s##SUF, T, T, uint8_t)
#define CMP(N, EXPR)                                                                                                   \
    CMP_TYPE(N, float, f32, EXPR)                                                                                      \
    CMP_TYPE(N, double, f64, EXPR)                                                                                     \
    CMP_TYPE(N, int64_t, i64, EXPR)                                                                                    \
    CMP_TYPE(N, uint64_t, u64, EXPR)                                                                                   \
    CMP_TYPE(N, uint8_t, b, EXPR)
#define K_ALL(N)                                                                                                       \
    { N##_f32, N##_f64, N##_i64, N##_u64, N##_b }

CMP(eq, a == b)
CMP(lt, a < b)
CMP(gt, a > b)
CMP(le, a <= b)
CMP(ge, a >= b)

const EwSpec EW_Equal = {.types = EW_T_ALL, .out = EW_OUT_BOOL, .flops = 1, .k = {K_ALL(eq)}};
const EwSpec EW_Less = {.types = EW_T_NUM, .out = EW_OUT_BOOL, .flops = 1, .k = {K_ALL(lt)}};
const EwSpec EW_Greater = {.types = EW_T_NUM, .out = EW_OUT_BOOL, .flops = 1, .k = {K_ALL(gt)}};
const EwSpec EW_LessOrEqual = {.types = EW_T_NUM, .out = EW_OUT_BOOL, .flops = 1, .k = {K_ALL(le)}};
const EwSpec EW_GreaterOrEqual = {.types = EW_T_NUM, .out = EW_OUT_BOOL, .flops = 1, .k = {K_ALL(ge)}};

/* ---- bool logic ---- */

SCALAR(not_s, uint8_t, (uint8_t x, const EwPrm *p), !x)
SCALAR(and_s, uint8_t, (uint8_t a, uint8_t b, const EwPrm *p), a &b)
SCALAR(or_s, uint8_t, (uint8_t a, uint8_t b, const EwPrm *p), a | b)
SCALAR(xor_s, uint8_t, (uint8_t a, uint8_t b, const EwPrm *p), a ^ b)
EW_MAP1(not_b, not_s, uint8_t, uint8_t)
EW_MAP2(and_b, and_s, uint8_t, uint8_t, uint8_t)
EW_MAP2(or_b, or_s, uint8_t, uint8_t, uint8_t)
EW_MAP2(xor_b, xor_s, uint8_t, uint8_t, uint8_t)

#define K_BOOL(K)                                                                                                      \
    { NULL, NULL, NULL, NULL, K }
const EwSpec EW_Not = {.types = EW_T_BOOL, .flops = 1, .k = {K_BOOL(not_b)}};
const EwSpec EW_And = {.types = EW_T_BOOL, .flops = 1, .k = {K_BOOL(and_b)}};
const EwSpec EW_Or = {.types = EW_T_BOOL, .flops = 1, .k = {K_BOOL(or_b)}};
const EwSpec EW_Xor = {.types = EW_T_BOOL, .flops = 1, .k = {K_BOOL(xor_b)}};

/* ---- BitShift: unsigned only; a shift by the width or more gives 0 (numpy's
 * result for uint8..uint32 computed here in uint64, and C's shift would be
 * undefined) ---- */

SCALAR(shl_s, uint64_t, (uint64_t a, uint64_t b, const EwPrm *p), b >= 64 ? 0 : a << b)
SCALAR(shr_s, uint64_t, (uint64_t a, uint64_t b, const EwPrm *p), b >= 64 ? 0 : a >> b)
EW_MAP2(shl_u64, shl_s, uint64_t, uint64_t, uint64_t)
EW_MAP2(shr_u64, shr_s, uint64_t, uint64_t, uint64_t)

static Status check_bitshift(const NetNode *node, const NetModel *model, char *err) {
    (void)model;
    const char *d = NetNode_attrString(node, "direction", "");
    if (strcmp(d, "LEFT") != 0 && strcmp(d, "RIGHT") != 0)
        return tt_fail(err, "attribute direction='%s' is not 'LEFT' or 'RIGHT'", d);
    return TT_OK;
}
static void param_bitshift(const OpCtx *ctx, EwPrm *p) {
    p->variant = strcmp(Ew_attrString(ctx, "direction", "LEFT"), "RIGHT") == 0;
}
const EwSpec EW_BitShift = {.types = EW_T_UINT,
                            .flops = 1,
                            .check = check_bitshift,
                            .param = param_bitshift,
                            .k = {{NULL, NULL, NULL, shl_u64, NULL}, {NULL, NULL, NULL, shr_u64, NULL}}};

/* ---- IsNaN, IsInf ---- */

#define IS_INF(x) (isinf(x) && ((x) > 0 ? (p->flags & 1) : (p->flags & 2)))
SCALAR(isnan_sf, uint8_t, (float x, const EwPrm *p), isnan(x))
SCALAR(isnan_sd, uint8_t, (double x, const EwPrm *p), isnan(x))
SCALAR(isinf_sf, uint8_t, (float x, const EwPrm *p), IS_INF(x))
SCALAR(isinf_sd, uint8_t, (double x, const EwPrm *p), IS_INF(x))
EW_MAP1(isnan_f32, isnan_sf, float, uint8_t)
EW_MAP1(isnan_f64, isnan_sd, double, uint8_t)
EW_MAP1(isinf_f32, isinf_sf, float, uint8_t)
EW_MAP1(isinf_f64, isinf_sd, double, uint8_t)

static void param_isinf(const OpCtx *ctx, EwPrm *p) {
    p->flags = (Ew_attrInt(ctx, "detect_positive", 1) ? 1 : 0) | (Ew_attrInt(ctx, "detect_negative", 1) ? 2 : 0);
}
const EwSpec EW_IsNaN = {
    .types = EW_T_FLOAT, .out = EW_OUT_BOOL, .flops = 1, .k = {{isnan_f32, isnan_f64, NULL, NULL, NULL}}};
const EwSpec EW_IsInf = {.types = EW_T_FLOAT,
                         .out = EW_OUT_BOOL,
                         .flops = 1,
                         .param = param_isinf,
                         .k = {{isinf_f32, isinf_f64, NULL, NULL, NULL}}};

/* ---- Where(cond, x, y) ---- */

#define WHERE_TYPE(T, SUF)                                                                                             \
    SCALAR(where_s##SUF, T, (uint8_t c, T x, T y, const EwPrm *p), c ? x : y)                                          \
    EW_MAP3(where_##SUF, where_s##SUF, uint8_t, T, T, T)
WHERE_TYPE(float, f32)
WHERE_TYPE(double, f64)
WHERE_TYPE(int64_t, i64)
WHERE_TYPE(uint64_t, u64)
WHERE_TYPE(uint8_t, b)

const EwSpec EW_Where = {.types = EW_T_ALL, .first = 1, .flops = 1, .k = {K_ALL(where)}};

/* ---- Cast, CastLike: Ew_convert over the whole tensor ----
 * float32 to bfloat16 rounds to nearest even, as ONNX Runtime, PyTorch and
 * ONNX's reference since 1.14 do; the test data of ONNX 1.12 (Debian's
 * libonnx-testdata) truncated, so its test_cast_FLOAT_to_BFLOAT16 differs in
 * the last bit of 5 of its 12 values. */

static Status check_cast(const NetNode *node, const NetModel *model, char *err) {
    (void)model;
    const NetAttr *to = NetNode_attr(node, "to");
    if (!to || to->kind != NATTR_INT) return tt_fail(err, "attribute 'to' is missing");
    if (to->i <= 0 || to->i >= ND_TYPE_MAX || !NdType_supported((NdType)to->i))
        return tt_fail(err, "attribute to=%lld (%s) is not a supported type", (long long)to->i,
                       to->i > 0 && to->i < ND_TYPE_MAX ? NdType_name((NdType)to->i) : "unknown");
    return TT_OK;
}
const EwSpec EW_Cast = {.types = EW_T_ALL, .out = EW_OUT_CAST, .flops = 1, .check = check_cast};
const EwSpec EW_CastLike = {.types = EW_T_ALL, .mixed = true, .out = EW_OUT_LIKE, .flops = 1};
