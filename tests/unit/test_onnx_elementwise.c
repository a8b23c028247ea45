/* tests/unit/test_onnx_elementwise.c: the elementwise ONNX ops (tuner/net/ops/
 * elementwise*.c) on hand-computed values: broadcasting, the block walk of
 * converted types, float16, integer division and Mod signs, Cast's edges,
 * Clip's two forms, the variadic ops and the refusals. Nodes are built by hand
 * (a node carries only the op and its attributes). */
#include <math.h>
#include <stdint.h>

#include "tests/check.h"
#include "tuner/net/ops/elementwise.h"
#include "tuner/net/ops/op.h"

static NetAttr A_F(const char *name, double v) { return (NetAttr){.name = (char *)name, .kind = NATTR_FLOAT, .f = v}; }
static NetAttr A_I(const char *name, int64_t v) { return (NetAttr){.name = (char *)name, .kind = NATTR_INT, .i = v}; }
static NetAttr A_S(const char *name, const char *v) {
    return (NetAttr){.name = (char *)name, .kind = NATTR_STRING, .s = (char *)v};
}

#define SHAPE(...)                                                                                                     \
    (NdShape) {                                                                                                        \
        .rank = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), .dim = { __VA_ARGS__ }                      \
    }
#define SCALAR ((NdShape){.rank = 0})

/* A tensor of this type and shape holding vals (converted as NdTensor_set
 * does); zeros when vals is NULL. */
static NdTensor tens(NdType type, NdShape shape, const double *vals) {
    NdTensor t = {0};
    char err[TT_ERRLEN];
    CHECK(NdTensor_alloc(&t, type, &shape, err) == TT_OK);
    for (int64_t i = 0; i < t.count && vals; i++)
        NdTensor_set(&t, i, vals[i]);
    return t;
}

typedef struct Run {
    Status status;
    NdTensor out;
    char err[TT_ERRLEN];
} Run;

/* Runs op over the inputs (NULL entries: omitted) with the attributes, at this opset. */
static Run run_op(const char *op, int64_t opset, NetAttr *attrs, int n_attrs, const NdTensor **in, int n_in) {
    Run r = {.status = TT_ERR};
    const OpDef *def = Op_find("", op);
    CHECK(def != NULL);
    if (!def) return r;
    NetNode node = {.name = "n",
                    .op = (char *)op,
                    .domain = "",
                    .n_in = n_in,
                    .n_out = 1,
                    .n_attrs = n_attrs,
                    .attrs = attrs,
                    .def = def};
    OpCtx ctx = {.node = &node, .opset = opset, .in = in, .n_in = n_in, .out = &r.out, .n_out = 1, .err = r.err};
    r.status = def->check ? def->check(&node, NULL, r.err) : TT_OK;
    if (r.status == TT_OK) r.status = def->run(&ctx);
    return r;
}

static Run run1(const char *op, NetAttr *attrs, int n_attrs, NdTensor a) {
    const NdTensor *in[1] = {&a};
    Run r = run_op(op, 17, attrs, n_attrs, in, 1);
    NdTensor_free(&a);
    return r;
}

static Run run2(const char *op, NetAttr *attrs, int n_attrs, NdTensor a, NdTensor b) {
    const NdTensor *in[2] = {&a, &b};
    Run r = run_op(op, 17, attrs, n_attrs, in, 2);
    NdTensor_free(&a);
    NdTensor_free(&b);
    return r;
}

/* The output has this type, shape and values (within tol; NaN matches NaN). */
static void expect(Run *r, NdType type, NdShape shape, const double *vals, double tol) {
    CHECK(r->status == TT_OK);
    if (r->status != TT_OK) {
        fprintf(stderr, "  error: %s\n", r->err);
        return;
    }
    CHECK_STR(NdType_name(r->out.type), NdType_name(type));
    CHECK(NdShape_equal(&r->out.shape, &shape));
    for (int64_t i = 0; i < r->out.count && r->out.type == type; i++) {
        double got = NdTensor_get(&r->out, i);
        if (isnan(vals[i]))
            CHECK(isnan(got));
        else if (isinf(vals[i]))
            CHECK(got == vals[i]);
        else
            CHECK_NEAR(got, vals[i], tol);
    }
    NdTensor_free(&r->out);
}

#define V(...) ((const double[]){__VA_ARGS__})

TEST(arithmetic_broadcast) {
    Run r = run2("Add", NULL, 0, tens(ND_F32, SHAPE(2, 3), V(1, 2, 3, 4, 5, 6)), tens(ND_F32, SHAPE(3), V(10, 20, 30)));
    expect(&r, ND_F32, SHAPE(2, 3), V(11, 22, 33, 14, 25, 36), 0);
    r = run2("Sub", NULL, 0, tens(ND_F32, SHAPE(2, 1), V(1, 2)), tens(ND_F32, SHAPE(1, 3), V(10, 20, 30)));
    expect(&r, ND_F32, SHAPE(2, 3), V(-9, -19, -29, -8, -18, -28), 0);
    r = run2("Mul", NULL, 0, tens(ND_F32, SCALAR, V(2)), tens(ND_F32, SHAPE(2, 2), V(1, 2, 3, 4)));
    expect(&r, ND_F32, SHAPE(2, 2), V(2, 4, 6, 8), 0);
    /* a per-channel bias over 1x2x2x2: held for each channel's H*W run */
    r = run2("Add", NULL, 0, tens(ND_F64, SHAPE(1, 2, 2, 2), V(0, 1, 2, 3, 4, 5, 6, 7)),
             tens(ND_F64, SHAPE(2, 1, 1), V(100, 200)));
    expect(&r, ND_F64, SHAPE(1, 2, 2, 2), V(100, 101, 102, 103, 204, 205, 206, 207), 0);
    r = run2("Div", NULL, 0, tens(ND_F32, SHAPE(2), V(1, -1)), tens(ND_F32, SHAPE(1), V(0)));
    expect(&r, ND_F32, SHAPE(2), V(INFINITY, -INFINITY), 0);
    r = run2("Add", NULL, 0, tens(ND_F32, SHAPE(2, 3), NULL), tens(ND_F32, SHAPE(2), NULL));
    CHECK(r.status == TT_ERR);
    CHECK_CONTAINS(r.err, "do not broadcast");
}

/* float16 inputs compute in float and round back to half. */
TEST(float16) {
    Run r = run2("Add", NULL, 0, tens(ND_F16, SHAPE(3), V(1, 0.5, 65504)),
                 tens(ND_F16, SHAPE(3), V(0.0009765625, 0.25, 65504)));
    /* 1 + 2^-10 is exact in half; 65504 + 65504 overflows to inf */
    expect(&r, ND_F16, SHAPE(3), V(1.0009765625, 0.75, INFINITY), 0);
    r = run2("Mul", NULL, 0, tens(ND_F16, SHAPE(2), V(3, -2)), tens(ND_F16, SCALAR, V(1.5)));
    expect(&r, ND_F16, SHAPE(2), V(4.5, -3), 0);
    r = run1("Sqrt", NULL, 0, tens(ND_F16, SHAPE(2), V(4, 2)));
    expect(&r, ND_F16, SHAPE(2), V(2, 1.4140625), 0); /* sqrt(2) rounded to half */
}

/* 3x1x700 + 1x5x1 of float16: 15 runs of 700, each converted in blocks. */
TEST(converted_blocks) {
    static double a[3 * 700], b[5], want[3 * 5 * 700];
    for (int i = 0; i < 3 * 700; i++)
        a[i] = (i % 97) - 48;
    for (int j = 0; j < 5; j++)
        b[j] = j * 0.25;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 700; k++)
                want[(i * 5 + j) * 700 + k] = a[i * 700 + k] * b[j];
    Run r = run2("Mul", NULL, 0, tens(ND_F16, SHAPE(3, 1, 700), a), tens(ND_F16, SHAPE(1, 5, 1), b));
    expect(&r, ND_F16, SHAPE(3, 5, 700), want, 0);
    r = run2("Mul", NULL, 0, tens(ND_I8, SHAPE(3, 1, 700), a), tens(ND_I8, SHAPE(1, 5, 1), V(0, 1, 2, -1, 3)));
    CHECK(r.status == TT_OK);
    CHECK_EQ_INT(r.out.count, 3 * 5 * 700);
    for (int64_t i = 0; i < r.out.count; i++) {
        int64_t x = (int64_t)a[(i / 3500) * 700 + i % 700], m = (int64_t[]){0, 1, 2, -1, 3}[(i / 700) % 5];
        if (NdTensor_getInt(&r.out, i) != (int8_t)(x * m)) {
            CHECK(0);
            break;
        }
    }
    NdTensor_free(&r.out);
}

/* The engine's own float16 conversion is bit for bit nd.c's: every half, and
 * floats across the whole range (every 4099th bit pattern, and each rounding
 * boundary of the halves near 1, 65504 and the subnormals). */
TEST(float16_conversion) {
    static uint16_t h[65536];
    static float f[65536];
    for (int i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    Ew_convert(ND_F32, f, ND_F16, h, 65536);
    int bad = 0;
    for (int i = 0; i < 65536; i++) {
        float r = Nd_halfToFloat((uint16_t)i);
        bad += memcmp(&r, &f[i], 4) != 0;
    }
    static uint32_t x[65536];
    static uint16_t out[65536];
    const uint32_t edges[] = {0x3f800000u, 0x477fe000u, 0x33000000u, 0x38800000u, 0x387fc000u};
    for (uint64_t base = 0; base < (1ull << 32); base += 65536ull * 4099) {
        for (uint32_t j = 0; j < 65536; j++)
            x[j] = (uint32_t)(base + (uint64_t)j * 4099);
        for (uint32_t j = 0; j < 5 * 64; j++) /* below, at and above each half-way point */
            x[j] = edges[j / 64] + (j % 64) * 0x800u - 0x1000u;
        Ew_convert(ND_F16, out, ND_F32, x, 65536);
        for (uint32_t j = 0; j < 65536; j++) {
            float v;
            memcpy(&v, &x[j], 4);
            bad += Nd_floatToHalf(v) != out[j];
        }
    }
    CHECK_EQ_INT(bad, 0);
    Run r = run2("Add", NULL, 0, tens(ND_BF16, SHAPE(2), V(1, 256)), tens(ND_BF16, SHAPE(2), V(0.5, 1)));
    expect(&r, ND_BF16, SHAPE(2), V(1.5, 256), 0); /* 257 is not a bfloat16: to even, 256 */
}

TEST(integer_division_and_mod) {
    /* Div truncates toward zero; by zero gives 0 (numpy's answer, where C's is undefined) */
    Run r =
        run2("Div", NULL, 0, tens(ND_I32, SHAPE(5), V(7, -7, 7, -7, 5)), tens(ND_I32, SHAPE(5), V(2, 2, -2, -2, 0)));
    expect(&r, ND_I32, SHAPE(5), V(3, -3, -3, 3, 0), 0);
    r = run2("Div", NULL, 0, tens(ND_I8, SHAPE(1), V(-128)), tens(ND_I8, SHAPE(1), V(-1)));
    expect(&r, ND_I8, SHAPE(1), V(-128), 0); /* wraps */
    r = run2("Div", NULL, 0, tens(ND_U8, SHAPE(2), V(255, 7)), tens(ND_U8, SHAPE(2), V(2, 0)));
    expect(&r, ND_U8, SHAPE(2), V(127, 0), 0);
    /* Mod fmod=0: the divisor's sign (Python's %) */
    r = run2("Mod", NULL, 0, tens(ND_I64, SHAPE(4), V(-7, 7, -7, 7)), tens(ND_I64, SHAPE(4), V(3, -3, -3, 3)));
    expect(&r, ND_I64, SHAPE(4), V(2, -2, -1, 1), 0);
    r = run2("Mod", NULL, 0, tens(ND_I32, SHAPE(3), V(-4, 4, 9)), tens(ND_I32, SHAPE(3), V(2, 0, -1)));
    expect(&r, ND_I32, SHAPE(3), V(0, 0, 0), 0);
    /* fmod=1: the dividend's sign (C's % and fmod) */
    NetAttr fmod1[] = {A_I("fmod", 1)};
    r = run2("Mod", fmod1, 1, tens(ND_I64, SHAPE(4), V(-7, 7, -7, 7)), tens(ND_I64, SHAPE(4), V(3, -3, -3, 3)));
    expect(&r, ND_I64, SHAPE(4), V(-1, 1, -1, 1), 0);
    r = run2("Mod", fmod1, 1, tens(ND_F32, SHAPE(2), V(-5.5, 5.5)), tens(ND_F32, SCALAR, V(2)));
    expect(&r, ND_F32, SHAPE(2), V(-1.5, 1.5), 0);
    r = run2("Mod", NULL, 0, tens(ND_F64, SHAPE(2), V(-5.5, 5.5)), tens(ND_F64, SCALAR, V(2)));
    expect(&r, ND_F64, SHAPE(2), V(0.5, 1.5), 0);
    /* broadcasting before opset 7: axis=1 puts a rank-1 input 1 at the end of a
     * rank-2 input 0, which is numpy's rule; axis=0 would not be */
    NetAttr at_end[] = {A_I("broadcast", 1), A_I("axis", 1)}, inside[] = {A_I("broadcast", 1), A_I("axis", 0)};
    r = run2("Div", at_end, 2, tens(ND_I64, SHAPE(2, 2), V(4, 6, 8, 9)), tens(ND_I64, SHAPE(2), V(2, 3)));
    expect(&r, ND_I64, SHAPE(2, 2), V(2, 2, 4, 3), 0);
    r = run2("Div", inside, 2, tens(ND_I64, SHAPE(2, 2), NULL), tens(ND_I64, SHAPE(2), NULL));
    CHECK(r.status == TT_ERR);
    CHECK_CONTAINS(r.err, "attribute axis=0 aligns input 1 (rank 1) inside input 0 (rank 2)");
    NetAttr fmod2[] = {A_I("fmod", 2)};
    r = run2("Mod", fmod2, 1, tens(ND_I64, SHAPE(1), V(1)), tens(ND_I64, SHAPE(1), V(1)));
    CHECK(r.status == TT_ERR);
    CHECK_CONTAINS(r.err, "fmod=2");
}

TEST(pow_mixed_types) {
    Run r = run2("Pow", NULL, 0, tens(ND_F32, SHAPE(3), V(2, 3, 4)), tens(ND_I64, SHAPE(3), V(3, 2, -1)));
    expect(&r, ND_F32, SHAPE(3), V(8, 9, 0.25), 1e-7);
    r = run2("Pow", NULL, 0, tens(ND_I32, SHAPE(3), V(2, 3, 5)), tens(ND_F32, SHAPE(3), V(0.5, 2, 1.5)));
    expect(&r, ND_I32, SHAPE(3), V(1, 9, 11), 0); /* 1.414, 9, 11.18 truncated */
    r = run2("Pow", NULL, 0, tens(ND_I64, SHAPE(2), V(-3, 10)), tens(ND_I64, SHAPE(2), V(3, 12)));
    expect(&r, ND_I64, SHAPE(2), V(-27, 1e12), 0);
}

TEST(cast_edges) {
    NetAttr to_i32[] = {A_I("to", ND_I32)}, to_u8[] = {A_I("to", ND_U8)}, to_bool[] = {A_I("to", ND_BOOL)};
    NetAttr to_f16[] = {A_I("to", ND_F16)}, to_i64[] = {A_I("to", ND_I64)}, to_f32[] = {A_I("to", ND_F32)};
    Run r = run1("Cast", to_i32, 1, tens(ND_F32, SHAPE(4), V(2.7, -2.7, 0.5, -0.5)));
    expect(&r, ND_I32, SHAPE(4), V(2, -2, 0, 0), 0); /* truncation toward zero */
    r = run1("Cast", to_u8, 1, tens(ND_F32, SHAPE(3), V(-1, 300, 255.9)));
    expect(&r, ND_U8, SHAPE(3), V(255, 44, 255), 0); /* through int64, then wrapping, as numpy's astype */
    r = run1("Cast", to_bool, 1, tens(ND_F32, SHAPE(4), V(0, -0.0, NAN, 1e-30)));
    expect(&r, ND_BOOL, SHAPE(4), V(0, 0, 1, 1), 0);
    r = run1("Cast", to_i64, 1, tens(ND_F64, SHAPE(3), V(1e300, -1e300, NAN)));
    expect(&r, ND_I64, SHAPE(3), V((double)INT64_MAX, (double)INT64_MIN, 0), 0); /* saturates; NaN is 0 */
    /* 1 + 2^-11 is halfway between two halves: to even (1); 1 + 3*2^-11 rounds up */
    r = run1("Cast", to_f16, 1, tens(ND_F32, SHAPE(4), V(1.00048828125, 1.00146484375, 70000, 1e-8)));
    expect(&r, ND_F16, SHAPE(4), V(1, 1.001953125, INFINITY, 0), 0);
    r = run1("Cast", to_f32, 1, tens(ND_BOOL, SHAPE(2), V(1, 0)));
    expect(&r, ND_F32, SHAPE(2), V(1, 0), 0);
    r = run1("Cast", to_f32, 1, tens(ND_I64, SHAPE(1), V(16777217))); /* 2^24 + 1 rounds to even */
    expect(&r, ND_F32, SHAPE(1), V(16777216), 0);
    NetAttr to_str[] = {A_I("to", ND_STRING)};
    r = run1("Cast", to_str, 1, tens(ND_F32, SHAPE(1), V(1)));
    CHECK(r.status == TT_ERR);
    CHECK_CONTAINS(r.err, "string");
    r = run2("CastLike", NULL, 0, tens(ND_F64, SHAPE(2), V(1.5, -1.5)), tens(ND_I8, SHAPE(3), V(0, 0, 0)));
    expect(&r, ND_I8, SHAPE(2), V(1, -1), 0); /* the target gives the type, not the shape */
}

TEST(float_functions) {
    Run r = run1("Round", NULL, 0, tens(ND_F32, SHAPE(6), V(0.5, 1.5, 2.5, -0.5, -1.5, 2.6)));
    expect(&r, ND_F32, SHAPE(6), V(0, 2, 2, 0, -2, 3), 0); /* half to even */
    r = run1("Sigmoid", NULL, 0, tens(ND_F32, SHAPE(3), V(0, -100, 100)));
    expect(&r, ND_F32, SHAPE(3), V(0.5, 3.720076e-44, 1), 1e-45);
    r = run1("Softplus", NULL, 0, tens(ND_F32, SHAPE(3), V(0, 100, -100)));
    expect(&r, ND_F32, SHAPE(3), V(log(2.0), 100, 3.720076e-44), 1e-6);
    r = run1("Gelu", NULL, 0, tens(ND_F32, SHAPE(3), V(0, 1, -1)));
    expect(&r, ND_F32, SHAPE(3), V(0, 0.8413447, -0.1586553), 1e-6);
    NetAttr tanh_form[] = {A_S("approximate", "tanh")}, bad_form[] = {A_S("approximate", "cubic")};
    r = run1("Gelu", tanh_form, 1, tens(ND_F64, SHAPE(2), V(1, -1)));
    expect(&r, ND_F64, SHAPE(2), V(0.8411919906082768, -0.15880800939172324), 1e-12);
    r = run1("Gelu", bad_form, 1, tens(ND_F32, SHAPE(1), V(1)));
    CHECK(r.status == TT_ERR);
    CHECK_CONTAINS(r.err, "approximate='cubic'");
    NetAttr alpha[] = {A_F("alpha", 0.1)};
    r = run1("LeakyRelu", alpha, 1, tens(ND_F32, SHAPE(2), V(-2, 3)));
    expect(&r, ND_F32, SHAPE(2), V(-0.2, 3), 1e-7);
    r = run1("Elu", NULL, 0, tens(ND_F32, SHAPE(2), V(-1, 2)));
    expect(&r, ND_F32, SHAPE(2), V(expm1(-1.0), 2), 1e-7);
    r = run1("Selu", NULL, 0, tens(ND_F32, SHAPE(2), V(-1, 2)));
    expect(&r, ND_F32, SHAPE(2), V(-1.1113307, 2.101402), 1e-6);
    r = run1("HardSwish", NULL, 0, tens(ND_F32, SHAPE(4), V(-4, -1, 1, 4)));
    expect(&r, ND_F32, SHAPE(4), V(0, -1.0 / 3, 2.0 / 3, 4), 1e-7);
    r = run1("HardSigmoid", NULL, 0, tens(ND_F32, SHAPE(3), V(-5, 0, 5)));
    expect(&r, ND_F32, SHAPE(3), V(0, 0.5, 1), 0);
    r = run1("Mish", NULL, 0, tens(ND_F32, SHAPE(2), V(0, 1)));
    expect(&r, ND_F32, SHAPE(2), V(0, 0.86509836), 1e-6);
    NetAttr shrink[] = {A_F("lambd", 1.5), A_F("bias", 0.5)};
    r = run1("Shrink", shrink, 2, tens(ND_F32, SHAPE(3), V(-2, 1, 2)));
    expect(&r, ND_F32, SHAPE(3), V(-1.5, 0, 1.5), 0);
    r = run1("Sqrt", NULL, 0, tens(ND_I32, SHAPE(1), V(4)));
    CHECK(r.status == TT_ERR);
    CHECK_CONTAINS(r.err, "input 0 is int32; Sqrt takes float16");
}

/* The float32 instances of Exp, Sigmoid, Tanh, Erf and Gelu (ops/fastmath.h)
 * against the double functions over every binary exponent from 2^-40 to
 * 2^7, both signs, and the special values: within the ulps fastmath.h states
 * (a subnormal result counts in units of 2^-145, 16 of its steps).
 * TT_SHOW_ULPS=1 prints each function's worst case. */
static double ulps(float got, double want) {
    float w = (float)want;
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    if (isinf(w)) return got == w ? 0 : INFINITY;
    double unit = nextafterf(fabsf(w), INFINITY) - fabsf(w);
    return fabs(got - want) / (unit > 0x1p-145 ? unit : 0x1p-145);
}

static double sigmoid_d(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }
static double gelu_d(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); } /* no cancellation below 0 */

TEST(fast_float_functions) {
    enum { PER = 2000, N = 48 * 2 * PER + 8 };
    static const double SPECIAL[8] = {0, -0.0, INFINITY, -INFINITY, NAN, 88.7, -103.9, 1e-45};
    NdShape shape = {.rank = 1, .dim = {N}};
    NdTensor x = tens(ND_F32, shape, NULL);
    float *xv = x.data;
    int64_t n = 0;
    for (int e = -40; e < 8; e++)
        for (int i = 0; i < PER; i++) {
            float v = ldexpf(1.0f + (float)i / PER, e);
            xv[n++] = v;
            xv[n++] = -v;
        }
    for (int i = 0; i < 8; i++)
        xv[n++] = (float)SPECIAL[i];
    static const struct {
        const char *op;
        double (*ref)(double);
        double max_ulps;
    } FNS[] = {{"Exp", exp, 1}, {"Sigmoid", sigmoid_d, 3}, {"Tanh", tanh, 2}, {"Erf", erf, 3}, {"Gelu", gelu_d, 6}};
    for (size_t f = 0; f < sizeof FNS / sizeof FNS[0]; f++) {
        const NdTensor *in[1] = {&x};
        Run r = run_op(FNS[f].op, 20, NULL, 0, in, 1);
        CHECK(r.status == TT_OK);
        double worst = 0;
        int64_t at = 0;
        for (int64_t i = 0; r.status == TT_OK && i < N; i++) {
            double u = ulps(((const float *)r.out.data)[i], FNS[f].ref(xv[i]));
            if (u > worst) worst = u, at = i;
        }
        if (worst > FNS[f].max_ulps || getenv("TT_SHOW_ULPS"))
            fprintf(stderr, "  %s(%a): %.2f ulps from the double function\n", FNS[f].op, xv[at], worst);
        CHECK(worst <= FNS[f].max_ulps);
        NdTensor_free(&r.out);
    }
    NdTensor_free(&x);
}

TEST(numeric_unary) {
    Run r = run1("Abs", NULL, 0, tens(ND_I8, SHAPE(3), V(-128, -5, 5)));
    expect(&r, ND_I8, SHAPE(3), V(-128, 5, 5), 0); /* -(-128) wraps, as numpy's abs of int8 */
    r = run1("Neg", NULL, 0, tens(ND_I64, SHAPE(2), V(3, -4)));
    expect(&r, ND_I64, SHAPE(2), V(-3, 4), 0);
    r = run1("Sign", NULL, 0, tens(ND_F32, SHAPE(4), V(-2, 0, 3, NAN)));
    expect(&r, ND_F32, SHAPE(4), V(-1, 0, 1, NAN), 0);
    r = run1("Relu", NULL, 0, tens(ND_I32, SHAPE(2), V(-3, 4)));
    expect(&r, ND_I32, SHAPE(2), V(0, 4), 0);
    r = run1("Neg", NULL, 0, tens(ND_U8, SHAPE(1), V(1)));
    CHECK(r.status == TT_ERR);
}

TEST(clip_forms) {
    NdTensor x = tens(ND_F32, SHAPE(4), V(-3, -1, 1, 3)), lo = tens(ND_F32, SCALAR, V(-2)),
             hi = tens(ND_F32, SCALAR, V(2));
    const NdTensor *both[3] = {&x, &lo, &hi}, *max_only[3] = {&x, NULL, &hi};
    Run r = run_op("Clip", 13, NULL, 0, both, 3);
    expect(&r, ND_F32, SHAPE(4), V(-2, -1, 1, 2), 0);
    r = run_op("Clip", 13, NULL, 0, max_only, 3);
    expect(&r, ND_F32, SHAPE(4), V(-3, -1, 1, 2), 0);
    r = run_op("Clip", 13, NULL, 0, both, 1);
    expect(&r, ND_F32, SHAPE(4), V(-3, -1, 1, 3), 0);
    NetAttr attrs[] = {A_F("min", -0.5), A_F("max", 0.5)};
    r = run_op("Clip", 6, attrs, 2, both, 1); /* before opset 11 the bounds are attributes */
    expect(&r, ND_F32, SHAPE(4), V(-0.5, -0.5, 0.5, 0.5), 0);
    NdTensor_free(&x);
    NdTensor_free(&lo);
    NdTensor_free(&hi);
    NdTensor xi = tens(ND_I8, SHAPE(3), V(-100, 0, 100)), loi = tens(ND_I8, SCALAR, V(-10));
    const NdTensor *ints[2] = {&xi, &loi};
    r = run_op("Clip", 13, NULL, 0, ints, 2);
    expect(&r, ND_I8, SHAPE(3), V(-10, 0, 100), 0);
    NdTensor_free(&xi);
    NdTensor_free(&loi);
}

TEST(variadic) {
    NdTensor a = tens(ND_F32, SHAPE(2, 2), V(1, 5, NAN, 2)), b = tens(ND_F32, SHAPE(2), V(3, 3)),
             c = tens(ND_F32, SCALAR, V(4));
    const NdTensor *three[3] = {&a, &b, &c};
    Run r = run_op("Max", 13, NULL, 0, three, 3);
    expect(&r, ND_F32, SHAPE(2, 2), V(4, 5, NAN, 4), 0); /* NaN propagates */
    r = run_op("Min", 13, NULL, 0, three, 3);
    expect(&r, ND_F32, SHAPE(2, 2), V(1, 3, NAN, 2), 0);
    r = run_op("Sum", 13, NULL, 0, three, 3);
    expect(&r, ND_F32, SHAPE(2, 2), V(8, 12, NAN, 9), 0);
    r = run_op("Mean", 13, NULL, 0, three, 3);
    expect(&r, ND_F32, SHAPE(2, 2), V(8.0 / 3, 4, NAN, 3), 1e-6);
    r = run_op("Mean", 13, NULL, 0, three, 1);
    expect(&r, ND_F32, SHAPE(2, 2), V(1, 5, NAN, 2), 0);
    NdTensor_free(&a);
    NdTensor_free(&b);
    NdTensor_free(&c);
    r = run2("Max", NULL, 0, tens(ND_U64, SHAPE(2), V(1, 4e18)), tens(ND_U64, SHAPE(2), V(2, 3)));
    expect(&r, ND_U64, SHAPE(2), V(2, 4e18), 0);
}

TEST(logic_and_where) {
    Run r = run2("Less", NULL, 0, tens(ND_I64, SHAPE(3), V(1, 2, 3)), tens(ND_I64, SCALAR, V(2)));
    expect(&r, ND_BOOL, SHAPE(3), V(1, 0, 0), 0);
    r = run2("GreaterOrEqual", NULL, 0, tens(ND_F16, SHAPE(2), V(1, 2)), tens(ND_F16, SHAPE(2), V(2, 2)));
    expect(&r, ND_BOOL, SHAPE(2), V(0, 1), 0);
    r = run2("Equal", NULL, 0, tens(ND_BOOL, SHAPE(2, 1), V(1, 0)), tens(ND_BOOL, SHAPE(2), V(1, 0)));
    expect(&r, ND_BOOL, SHAPE(2, 2), V(1, 0, 0, 1), 0);
    r = run2("Xor", NULL, 0, tens(ND_BOOL, SHAPE(4), V(0, 0, 1, 1)), tens(ND_BOOL, SHAPE(4), V(0, 1, 0, 1)));
    expect(&r, ND_BOOL, SHAPE(4), V(0, 1, 1, 0), 0);
    r = run1("Not", NULL, 0, tens(ND_BOOL, SHAPE(2), V(1, 0)));
    expect(&r, ND_BOOL, SHAPE(2), V(0, 1), 0);
    r = run2("Equal", NULL, 0, tens(ND_I32, SHAPE(1), V(1)), tens(ND_F32, SHAPE(1), V(1)));
    CHECK(r.status == TT_ERR);
    CHECK_CONTAINS(r.err, "takes inputs of one type");
    NetAttr left[] = {A_S("direction", "LEFT")}, right[] = {A_S("direction", "RIGHT")};
    r = run2("BitShift", left, 1, tens(ND_U8, SHAPE(3), V(1, 255, 3)), tens(ND_U8, SHAPE(3), V(3, 1, 8)));
    expect(&r, ND_U8, SHAPE(3), V(8, 254, 0), 0);
    r = run2("BitShift", right, 1, tens(ND_U64, SHAPE(2), V(16, 1)), tens(ND_U64, SHAPE(2), V(2, 70)));
    expect(&r, ND_U64, SHAPE(2), V(4, 0), 0);
    NetAttr neg_only[] = {A_I("detect_positive", 0)};
    r = run1("IsInf", neg_only, 1, tens(ND_F32, SHAPE(3), V(INFINITY, -INFINITY, 1)));
    expect(&r, ND_BOOL, SHAPE(3), V(0, 1, 0), 0);
    r = run1("IsNaN", NULL, 0, tens(ND_F64, SHAPE(2), V(NAN, 1)));
    expect(&r, ND_BOOL, SHAPE(2), V(1, 0), 0);
    NdTensor c = tens(ND_BOOL, SHAPE(2, 1), V(1, 0)), x = tens(ND_I64, SHAPE(3), V(1, 2, 3)),
             y = tens(ND_I64, SCALAR, V(-1));
    const NdTensor *in[3] = {&c, &x, &y};
    r = run_op("Where", 16, NULL, 0, in, 3);
    expect(&r, ND_I64, SHAPE(2, 3), V(1, 2, 3, -1, -1, -1), 0);
    NdTensor_free(&c);
    NdTensor_free(&x);
    NdTensor_free(&y);
}

TEST(infer_and_flops) {
    NdTensor a = {.type = ND_F32, .shape = SHAPE(4, 1, 3)}, b = {.type = ND_F32, .shape = SHAPE(5, 1)};
    const NdTensor *in[2] = {&a, &b};
    NdTensor out = {0};
    char err[TT_ERRLEN];
    NetNode node = {.name = "n", .op = "Add"};
    OpCtx ctx = {.node = &node, .opset = 17, .in = in, .n_in = 2, .out = &out, .n_out = 1, .err = err};
    const OpDef *add = Op_find("ai.onnx", "Add");
    CHECK(add && add->infer(&ctx) == TT_OK);
    CHECK(NdShape_equal(&out.shape, &SHAPE(4, 5, 3)));
    CHECK_NEAR(add->flops(&ctx), 60, 0);
    b.type = ND_UNDEF; /* unknown types pass; the known one names the output */
    CHECK(add->infer(&ctx) == TT_OK && out.type == ND_F32);
    /* every op of the family is found by name, and no other family claims one of its names */
    int n, count = 0;
    const OpDef *const *all = Op_all(&n);
    for (const OpDef *d = OPS_ELEMENTWISE; d->name; d++, count++) {
        CHECK(Op_find(d->domain, d->name) == d && d->infer && d->run && d->flops);
        for (int i = 0; i < n; i++)
            if (all[i] != d && !strcmp(all[i]->name, d->name)) {
                fprintf(stderr, "  %s is defined twice\n", d->name);
                CHECK(0);
            }
    }
    CHECK_EQ_INT(count, 65); /* 64 ONNX ops and tunetop.Elementwise, the fused chains */
    CHECK(Op_find("", "Elementwise") == NULL);
}

int main(void) {
    RUN(arithmetic_broadcast);
    RUN(float16);
    RUN(converted_blocks);
    RUN(float16_conversion);
    RUN(integer_division_and_mod);
    RUN(pow_mixed_types);
    RUN(cast_edges);
    RUN(float_functions);
    RUN(fast_float_functions);
    RUN(numeric_unary);
    RUN(clip_forms);
    RUN(variadic);
    RUN(logic_and_where);
    RUN(infer_and_flops);
    return check_summary();
}
