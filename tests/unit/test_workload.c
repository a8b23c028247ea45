/* tests/unit/test_workload.c: spec parsing, keys, FLOPs, the reference and the comparison. */
#include "kernels/workload.h"
#include "tests/check.h"

static void parse_fails(const char *spec, const char *needle) {
    Workload wl;
    char err[TT_ERRLEN] = "";
    Status st = Workload_parse(spec, &wl, err);
    CHECK(st == TT_ERR);
    if (st == TT_ERR) {
        CHECK_CONTAINS(err, needle);
    } else {
        fprintf(stderr, "  spec '%s' parsed but should not\n", spec);
    }
}

TEST(test_parse_errors) {
    parse_fails("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,foo=1", "foo: unknown key");
    parse_fails("conv2d:ci=64,h=56,w=56,kh=3,kw=3", "co: missing key");
    parse_fails("conv2d:ci=64,h=56,w=56,co=64,kh=3", "kw: missing key");
    parse_fails("conv2d:ci=64,h=5x6,w=56,co=64,kh=3,kw=3", "h: '5x6' is not a number");
    parse_fails("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=", "stride: missing value");
    parse_fails("conv2d:ci=0,h=56,w=56,co=64,kh=3,kw=3", "ci: extent 0 must be positive");
    parse_fails("conv2d:ci=64,h=56,w=56,co=-4,kh=3,kw=3", "co: extent -4 must be positive");
    parse_fails("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=-1", "pad: -1 must be >= 0");
    parse_fails("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=0", "stride: extent 0");
    parse_fails("conv2d:ci=64,h=2,w=56,co=64,kh=3,kw=3", "output height < 1");
    parse_fails("conv2d:ci=64,h=8,w=8,co=64,kh=3,kw=3,dil_w=4", "output width < 1");
    parse_fails("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,layout=NCWH", "layout: 'NCWH'");
    parse_fails("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,relu=2", "relu: 2 must be 0 or 1");
    parse_fails("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,relu=1,relu6=1", "relu6: one activation only");
    parse_fails("dense:m=1,n=1000,k=512,relu6=1", "relu6: unknown key for dense");
    parse_fails("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=1,stride_h=2", "stride_h: given twice");
    parse_fails("conv2d:ci=64,ci=32,h=56,w=56,co=64,kh=3,kw=3", "ci: given twice");
    parse_fails("depthwise_conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3", "co: unknown key for depthwise_conv2d");
    parse_fails("dense:m=1,n=1000", "k: missing key");
    parse_fails("dense:m=1,n=1000,k=512,residual=1", "residual: unknown key");
    parse_fails("batch_matmul:b=2,m=3,n=4,k=5,bias=1", "bias: unknown key");
    parse_fails("matmul:m=1", "'matmul' is not an operator");
    parse_fails("dense", "expected 'dense:key=value");
    parse_fails("dense:m=1,n,k=3", "n: expected key=value");
    parse_fails("dense:m=1,n=99999999999999999999,k=3", "n: '99999999999999999999' is not a number");
}

TEST(test_parse_defaults_and_keys) {
    Workload wl;
    char err[TT_ERRLEN] = "", key[WORKLOAD_KEY_LEN];
    CHECK(Workload_parse("conv2d:ci=256,h=14,w=14,co=256,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    CHECK_EQ_INT(wl.n, 1);
    CHECK_EQ_INT(wl.stride_h, 1);
    CHECK_EQ_INT(wl.dil_w, 1);
    CHECK_EQ_INT(wl.layout, LAYOUT_NCHW);
    Workload_key(&wl, key, sizeof key);
    CHECK_STR(key, "conv2d:n=1,ci=256,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1,dilation=1,layout=NCHW");

    const char *specs[] = {
        "conv2d:n=2,ci=3,h=224,w=224,co=64,kh=7,kw=7,stride=2,pad=3,layout=NHWC,bias=1,relu=1",
        "conv2d:ci=8,h=9,w=10,co=4,kh=3,kw=1,stride_h=2,pad_w=1,dil_h=2,residual=1,relu=1",
        "depthwise_conv2d:ci=32,h=112,w=112,mult=2,kh=3,kw=3,stride=2,pad=1,layout=nhwc,bias=1",
        "depthwise_conv2d:ci=32,h=112,w=112,kh=3,kw=3,stride=2,pad=1,bias=1,relu6=1",
        " dense : m=1 , n=1000, k=512, bias=1,",
        "batch_matmul:b=12,m=128,n=128,k=64",
    };
    for (int i = 0; i < 5; i++) {
        Workload a, b;
        char ka[WORKLOAD_KEY_LEN], kb[WORKLOAD_KEY_LEN];
        CHECK(Workload_parse(specs[i], &a, err) == TT_OK);
        Workload_key(&a, ka, sizeof ka);
        CHECK(Workload_parse(ka, &b, err) == TT_OK);
        Workload_key(&b, kb, sizeof kb);
        CHECK_STR(ka, kb);
        CHECK(Workload_equal(&a, &b));
        CHECK(memcmp(&a, &b, sizeof a) == 0);
    }
    CHECK(Workload_parse(specs[1], &wl, err) == TT_OK);
    Workload_key(&wl, key, sizeof key);
    CHECK_STR(key, "conv2d:n=1,ci=8,h=9,w=10,co=4,kh=3,kw=1,stride_h=2,stride_w=1,pad_h=0,pad_w=1,dil_h=2,dil_w=1,"
                   "layout=NCHW,relu=1,residual=1");
    CHECK(Workload_parse(specs[2], &wl, err) == TT_OK);
    CHECK_EQ_INT(wl.co, 64);
    CHECK_EQ_INT(wl.layout, LAYOUT_NHWC);
    Workload other;
    CHECK(Workload_parse("dense:m=1,n=1000,k=512", &other, err) == TT_OK);
    CHECK(Workload_parse(specs[3], &wl, err) == TT_OK);
    CHECK(!Workload_equal(&wl, &other)); /* bias differs */
}

TEST(test_flops_and_args) {
    Workload wl;
    char err[TT_ERRLEN];
    CHECK(Workload_parse("conv2d:ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    CHECK_NEAR(Workload_flops(&wl), 231211008.0, 0.5); /* ResNet-18 stage 1: 231.2 MFLOP */
    CHECK(Workload_parse("conv2d:ci=3,h=224,w=224,co=64,kh=7,kw=7,stride=2,pad=3", &wl, err) == TT_OK);
    CHECK_EQ_INT(Workload_outH(&wl), 112);
    CHECK_NEAR(Workload_flops(&wl), 2.0 * 64 * 112 * 112 * 3 * 49, 0.5); /* 236.0 MFLOP */
    CHECK(Workload_parse("conv2d:ci=512,h=7,w=7,co=512,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    CHECK_NEAR(Workload_flops(&wl), 231211008.0, 0.5);
    CHECK(Workload_parse("dense:m=1,n=1000,k=512,bias=1", &wl, err) == TT_OK);
    CHECK_NEAR(Workload_flops(&wl), 1024000.0, 0.5);
    ArgInfo a[WORKLOAD_MAX_ARGS];
    CHECK_EQ_INT(Workload_args(&wl, a), 4);
    CHECK_STR(a[2].name, "bias");
    CHECK_EQ_INT(a[2].count, 1000);
    CHECK_STR(a[3].name, "out");
    CHECK_EQ_INT(a[3].count, 1000);
    CHECK(Workload_parse("depthwise_conv2d:ci=32,h=112,w=112,mult=2,kh=3,kw=3,stride=2,pad=1,residual=1", &wl, err) ==
          TT_OK);
    CHECK_NEAR(Workload_flops(&wl), 2.0 * 64 * 56 * 56 * 9, 0.5);
    CHECK_EQ_INT(Workload_args(&wl, a), 4);
    CHECK_EQ_INT(a[1].count, 64 * 9);
    CHECK_STR(a[2].name, "residual");
    CHECK_EQ_INT(a[2].count, 64 * 56 * 56);
    CHECK(Workload_parse("batch_matmul:b=12,m=128,n=64,k=32", &wl, err) == TT_OK);
    CHECK_NEAR(Workload_flops(&wl), 2.0 * 12 * 128 * 64 * 32, 0.5);
    CHECK_EQ_INT(Workload_args(&wl, a), 3);
    CHECK_EQ_INT(a[1].count, 12 * 64 * 32);
}

/* Allocates the argument buffers of a workload. */
static int alloc_args(const Workload *wl, float **args, ArgInfo *info) {
    int n = Workload_args(wl, info);
    for (int i = 0; i < n; i++)
        args[i] = calloc(info[i].count, sizeof(float));
    return n;
}

static void free_args(float **args, int n) {
    for (int i = 0; i < n; i++)
        free(args[i]);
}

TEST(test_reference_hand_cases) {
    Workload wl;
    char err[TT_ERRLEN];
    float *args[WORKLOAD_MAX_ARGS];
    ArgInfo info[WORKLOAD_MAX_ARGS];

    /* 1 channel 3x3 input, 2x2 kernel of ones, pad 0: sums of 2x2 windows */
    CHECK(Workload_parse("conv2d:ci=1,h=3,w=3,co=1,kh=2,kw=2", &wl, err) == TT_OK);
    int na = alloc_args(&wl, args, info);
    for (int i = 0; i < 9; i++)
        args[0][i] = (float)(i + 1);
    for (int i = 0; i < 4; i++)
        args[1][i] = 1;
    Workload_reference(&wl, args);
    float want1[] = {12, 16, 24, 28};
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(args[na - 1][i], want1[i], 1e-6);
    free_args(args, na);

    /* pad 1, stride 2, 2 input channels, bias and relu */
    CHECK(Workload_parse("conv2d:ci=2,h=3,w=3,co=1,kh=3,kw=3,pad=1,stride=2,bias=1,relu=1", &wl, err) == TT_OK);
    CHECK_EQ_INT(Workload_outH(&wl), 2);
    na = alloc_args(&wl, args, info);
    for (int i = 0; i < 9; i++)
        args[0][i] = (float)(i + 1), args[0][9 + i] = -1;
    for (int i = 0; i < 18; i++)
        args[1][i] = 1; /* channel 1 contributes -(window size) */
    args[2][0] = 0.5f;
    Workload_reference(&wl, args);
    /* out(0,0): window rows 0..1 cols 0..1 of ch0 = 1+2+4+5 = 12, ch1 = -4, +0.5 -> 8.5
     * out(0,1): rows 0..1 cols 1..2 = 2+3+5+6 = 16 - 4 + .5 = 12.5; out(1,0) = 4+5+7+8 - 4 + .5 = 20.5;
     * out(1,1) = 5+6+8+9 - 4 + .5 = 24.5 */
    float want2[] = {8.5f, 12.5f, 20.5f, 24.5f};
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(args[na - 1][i], want2[i], 1e-6);
    args[2][0] = -100;
    Workload_reference(&wl, args);
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(args[na - 1][i], 0, 0); /* relu */
    free_args(args, na);

    /* ReLU6 (relu6=1): the same sums clipped to [0, 6] */
    CHECK(Workload_parse("conv2d:ci=2,h=3,w=3,co=1,kh=3,kw=3,pad=1,stride=2,bias=1,relu6=1", &wl, err) == TT_OK);
    na = alloc_args(&wl, args, info);
    for (int i = 0; i < 9; i++)
        args[0][i] = (float)(i + 1), args[0][9 + i] = -1;
    for (int i = 0; i < 18; i++)
        args[1][i] = 1;
    args[2][0] = -8;
    Workload_reference(&wl, args);
    float want6[] = {0, 4, 6, 6}; /* 8 - 8, 12 - 8, 20 - 8 and 24 - 8 clipped to 6 */
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(args[na - 1][i], want6[i], 1e-6);
    args[2][0] = -100;
    Workload_reference(&wl, args);
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(args[na - 1][i], 0, 0);
    free_args(args, na);

    /* dilation 2: 1x5 input, 1x2 kernel [1,10] -> x[i] + 10 x[i+2] */
    CHECK(Workload_parse("conv2d:ci=1,h=1,w=5,co=1,kh=1,kw=2,dilation=2", &wl, err) == TT_OK);
    na = alloc_args(&wl, args, info);
    CHECK_EQ_INT(info[na - 1].count, 3);
    for (int i = 0; i < 5; i++)
        args[0][i] = (float)(i + 1);
    args[1][0] = 1, args[1][1] = 10;
    Workload_reference(&wl, args);
    for (int i = 0; i < 3; i++)
        CHECK_NEAR(args[na - 1][i], (i + 1) + 10 * (i + 3), 1e-6);
    free_args(args, na);

    /* depthwise, mult 2: channel c*2+q uses input channel c and its own 1x1 weight; residual added */
    CHECK(Workload_parse("depthwise_conv2d:ci=2,h=1,w=2,mult=2,kh=1,kw=1,residual=1", &wl, err) == TT_OK);
    na = alloc_args(&wl, args, info);
    args[0][0] = 1, args[0][1] = 2, args[0][2] = 3, args[0][3] = 4; /* ch0 = [1,2], ch1 = [3,4] */
    args[1][0] = 1, args[1][1] = 2, args[1][2] = 3, args[1][3] = 4; /* out channels 0..3 */
    for (int i = 0; i < 8; i++)
        args[2][i] = 100;
    Workload_reference(&wl, args);
    float want3[] = {101, 102, 102, 104, 109, 112, 112, 116};
    for (int i = 0; i < 8; i++)
        CHECK_NEAR(args[na - 1][i], want3[i], 1e-6);
    free_args(args, na);

    /* dense: [1 2; 3 4] * [1 0; 1 1]^T + bias [10, 20] */
    CHECK(Workload_parse("dense:m=2,n=2,k=2,bias=1", &wl, err) == TT_OK);
    na = alloc_args(&wl, args, info);
    float d[] = {1, 2, 3, 4}, w[] = {1, 0, 1, 1};
    memcpy(args[0], d, sizeof d);
    memcpy(args[1], w, sizeof w);
    args[2][0] = 10, args[2][1] = 20;
    Workload_reference(&wl, args);
    float want4[] = {11, 23, 13, 27};
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(args[na - 1][i], want4[i], 1e-6);
    free_args(args, na);

    /* batch_matmul: two batches of 1x2 * (1x2)^T */
    CHECK(Workload_parse("batch_matmul:b=2,m=1,n=1,k=2", &wl, err) == TT_OK);
    na = alloc_args(&wl, args, info);
    args[0][0] = 1, args[0][1] = 2, args[0][2] = 3, args[0][3] = 4;
    args[1][0] = 5, args[1][1] = 6, args[1][2] = 7, args[1][3] = 8;
    Workload_reference(&wl, args);
    CHECK_NEAR(args[na - 1][0], 17, 1e-6);
    CHECK_NEAR(args[na - 1][1], 53, 1e-6);
    free_args(args, na);
}

/* Transposes an NCHW reference problem into NHWC and checks both layouts agree. */
static void layouts_agree(const char *nchw_spec) {
    Workload a, b;
    char err[TT_ERRLEN], spec[256];
    CHECK(Workload_parse(nchw_spec, &a, err) == TT_OK);
    snprintf(spec, sizeof spec, "%s,layout=NHWC", nchw_spec);
    CHECK(Workload_parse(spec, &b, err) == TT_OK);
    float *pa[WORKLOAD_MAX_ARGS], *pb[WORKLOAD_MAX_ARGS];
    ArgInfo ia[WORKLOAD_MAX_ARGS], ib[WORKLOAD_MAX_ARGS];
    int na = alloc_args(&a, pa, ia), nb = alloc_args(&b, pb, ib);
    CHECK_EQ_INT(na, nb);
    Workload_fillInputs(&a, pa, 42);
    int64_t N = a.n, C = a.ci, H = a.h, W = a.w, CO = a.co, KH = a.kh, KW = a.kw;
    int64_t OH = Workload_outH(&a), OW = Workload_outW(&a);
    bool dw = a.op == OP_DEPTHWISE_CONV2D;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++)
                    pb[0][((n * H + y) * W + x) * C + c] = pa[0][((n * C + c) * H + y) * W + x];
    int64_t WC = dw ? 1 : C;
    for (int64_t o = 0; o < CO; o++)
        for (int64_t c = 0; c < WC; c++)
            for (int64_t r = 0; r < KH; r++)
                for (int64_t s = 0; s < KW; s++) {
                    float v = pa[1][((o * WC + c) * KH + r) * KW + s];
                    /* depthwise NHWC weight [kh][kw][ci][mult] is [kh][kw][co] */
                    if (dw)
                        pb[1][(r * KW + s) * CO + o] = v;
                    else
                        pb[1][((r * KW + s) * C + c) * CO + o] = v;
                }
    for (int i = 2; i < na - 1; i++) {
        if (strcmp(ia[i].name, "bias") == 0)
            memcpy(pb[i], pa[i], ia[i].count * sizeof(float));
        else /* residual: out-shaped */
            for (int64_t n = 0; n < N; n++)
                for (int64_t o = 0; o < CO; o++)
                    for (int64_t y = 0; y < OH; y++)
                        for (int64_t x = 0; x < OW; x++)
                            pb[i][((n * OH + y) * OW + x) * CO + o] = pa[i][((n * CO + o) * OH + y) * OW + x];
    }
    Workload_reference(&a, pa);
    Workload_reference(&b, pb);
    int bad = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < CO; o++)
            for (int64_t y = 0; y < OH; y++)
                for (int64_t x = 0; x < OW; x++) {
                    float u = pa[na - 1][((n * CO + o) * OH + y) * OW + x];
                    float v = pb[na - 1][((n * OH + y) * OW + x) * CO + o];
                    if (fabsf(u - v) > 1e-5f) bad++;
                }
    CHECK_EQ_INT(bad, 0);
    /* and the output is not trivially zero */
    double sum = 0;
    for (size_t i = 0; i < ia[na - 1].count; i++)
        sum += fabs(pa[na - 1][i]);
    CHECK(sum > 0);
    free_args(pa, na);
    free_args(pb, nb);
}

TEST(test_nchw_nhwc_agree) {
    layouts_agree("conv2d:n=2,ci=5,h=9,w=7,co=6,kh=3,kw=3,pad=1");
    layouts_agree("conv2d:ci=4,h=11,w=10,co=3,kh=3,kw=2,stride_h=2,stride_w=3,pad_h=2,pad_w=1,dil_h=2,bias=1,relu=1");
    layouts_agree("conv2d:ci=3,h=8,w=8,co=4,kh=1,kw=1,residual=1,bias=1,relu=1");
    layouts_agree("depthwise_conv2d:ci=4,h=9,w=9,mult=3,kh=3,kw=3,stride=2,pad=1,bias=1");
    layouts_agree("depthwise_conv2d:n=2,ci=3,h=7,w=6,kh=5,kw=3,pad=2,dilation=1,residual=1,relu=1");
}

TEST(test_fill_and_compare) {
    Workload wl;
    char err[TT_ERRLEN], msg[256] = "";
    CHECK(Workload_parse("conv2d:ci=64,h=8,w=8,co=8,kh=3,kw=3,pad=1", &wl, err) == TT_OK);
    float *a1[WORKLOAD_MAX_ARGS], *a2[WORKLOAD_MAX_ARGS];
    ArgInfo info[WORKLOAD_MAX_ARGS];
    int na = alloc_args(&wl, a1, info);
    alloc_args(&wl, a2, info);
    Workload_fillInputs(&wl, a1, 5);
    Workload_fillInputs(&wl, a2, 5);
    CHECK(memcmp(a1[0], a2[0], info[0].count * sizeof(float)) == 0);
    CHECK(memcmp(a1[1], a2[1], info[1].count * sizeof(float)) == 0);
    float lo = 1, hi = -1;
    for (size_t i = 0; i < info[0].count; i++)
        lo = fminf(lo, a1[0][i]), hi = fmaxf(hi, a1[0][i]);
    CHECK(lo >= -1 && hi < 1 && hi - lo > 1.5f);
    Workload_fillInputs(&wl, a2, 6);
    CHECK(memcmp(a1[0], a2[0], info[0].count * sizeof(float)) != 0);

    Workload_reference(&wl, a1);
    float *ref = a1[na - 1], *got = a2[na - 1];
    size_t cnt = info[na - 1].count;
    /* a float32 sum in a different order (reversed) passes */
    int64_t K = wl.ci * 9;
    (void)K;
    for (size_t i = 0; i < cnt; i++)
        got[i] = ref[i] * (1.0f + 2e-7f);
    CHECK(Workload_compare(&wl, ref, got, msg, sizeof msg));
    /* one wrong element is caught and described */
    memcpy(got, ref, cnt * sizeof(float));
    size_t bad = 1 * 64 + 2 * 8 + 3; /* c=1 y=2 x=3 */
    got[bad] += 0.05f;
    CHECK(!Workload_compare(&wl, ref, got, msg, sizeof msg));
    CHECK_CONTAINS(msg, "out[83]");
    CHECK_CONTAINS(msg, "c=1 y=2 x=3");
    CHECK_CONTAINS(msg, "1 of 512 elements differ");
    /* NaN is caught */
    memcpy(got, ref, cnt * sizeof(float));
    got[7] = NAN;
    CHECK(!Workload_compare(&wl, ref, got, msg, sizeof msg));
    /* a genuinely float32 computation with a different summation order passes */
    for (int64_t c = 0; c < wl.co; c++)
        for (int64_t y = 0; y < 8; y++)
            for (int64_t x = 0; x < 8; x++) {
                float s = 0;
                for (int64_t ci = wl.ci - 1; ci >= 0; ci--)
                    for (int64_t r = 2; r >= 0; r--)
                        for (int64_t q = 2; q >= 0; q--) {
                            int64_t iy = y - 1 + r, ix = x - 1 + q;
                            if (iy < 0 || iy >= 8 || ix < 0 || ix >= 8) continue;
                            s += a1[0][(ci * 8 + iy) * 8 + ix] * a1[1][((c * wl.ci + ci) * 3 + r) * 3 + q];
                        }
                got[(c * 8 + y) * 8 + x] = s;
            }
    CHECK(Workload_compare(&wl, ref, got, msg, sizeof msg));
    /* dropping one term of the sum is caught somewhere */
    got[0] -= a1[0][0] * a1[1][4]; /* the centre tap of input (0,0) for output (0,0) */
    bool caught = !Workload_compare(&wl, ref, got, msg, sizeof msg);
    CHECK(caught == (fabsf(a1[0][0] * a1[1][4]) > 1e-4f * 24 + 1e-4f * fabsf(ref[0])));
    free_args(a1, na);
    free_args(a2, na);
}

TEST(test_validate_structs) {
    /* workloads built in code (networks) rather than parsed */
    Workload wl;
    char err[TT_ERRLEN] = "";
    memset(&wl, 0, sizeof wl);
    wl.op = OP_DEPTHWISE_CONV2D;
    wl.n = 1, wl.ci = 32, wl.h = wl.w = 14, wl.kh = wl.kw = 3, wl.mult = 1, wl.co = 64;
    wl.stride_h = wl.stride_w = wl.dil_h = wl.dil_w = 1, wl.pad_h = wl.pad_w = 1;
    CHECK(Workload_validate(&wl, err) == TT_ERR);
    CHECK_CONTAINS(err, "co: depthwise output channels 64 must equal ci * mult = 32");
    wl.co = 32;
    CHECK(Workload_validate(&wl, err) == TT_OK);
    wl.dil_h = 0;
    CHECK(Workload_validate(&wl, err) == TT_ERR);
    CHECK_CONTAINS(err, "dilation");
    wl.dil_h = 1;
    wl.h = 1 << 25;
    CHECK(Workload_validate(&wl, err) == TT_ERR);
    CHECK_CONTAINS(err, "h: extent 33554432 is too large");
    /* fields an operator does not use do not change its key or equality */
    Workload a, b;
    CHECK(Workload_parse("dense:m=4,n=8,k=16", &a, err) == TT_OK);
    b = a;
    b.ci = 77, b.kh = 5, b.layout = LAYOUT_NHWC;
    CHECK(Workload_equal(&a, &b));
    b.k = 17;
    CHECK(!Workload_equal(&a, &b));
    /* huge but valid extents: the tensor size check fires, naming the tensor */
    CHECK(Workload_parse("dense:m=100000,n=100000,k=1000", &a, err) == TT_ERR);
    CHECK_CONTAINS(err, "output tensor has more than");
    CHECK(!strcmp(Op_name(OP_BATCH_MATMUL), "batch_matmul"));
    CHECK(!strcmp(Layout_name(LAYOUT_NHWC), "NHWC"));
}

/* A reference holding NaN or an infinity (sqrt of a negative, exp of a large
 * value) compares as numpy's allclose(equal_nan=True): NaN equals NaN, an
 * infinity only the same one; a NaN or an infinity where a number is wanted,
 * or the other infinity, still fails. */
TEST(test_compare_nan_and_inf_as_allclose_equal_nan) {
    Workload wl;
    char err[TT_ERRLEN], msg[256];
    CHECK(Workload_parse("dense:m=1,n=4,k=4", &wl, err) == TT_OK);
    float ref[4] = {NAN, INFINITY, -INFINITY, 0.5f};
    float same[4] = {NAN, INFINITY, -INFINITY, 0.5f};
    CHECK(Workload_compare(&wl, ref, same, msg, sizeof msg));
    float cases[4][4] = {{0.0f, INFINITY, -INFINITY, 0.5f},
                         {NAN, -INFINITY, -INFINITY, 0.5f},
                         {NAN, INFINITY, 1e30f, 0.5f},
                         {NAN, INFINITY, -INFINITY, NAN}};
    for (int c = 0; c < 4; c++) {
        CHECK(!Workload_compare(&wl, ref, cases[c], msg, sizeof msg));
        CHECK_CONTAINS(msg, "1 of 4 elements differ");
    }
}

int main(void) {
    RUN(test_parse_errors);
    RUN(test_parse_defaults_and_keys);
    RUN(test_flops_and_args);
    RUN(test_reference_hand_cases);
    RUN(test_nchw_nhwc_agree);
    RUN(test_fill_and_compare);
    RUN(test_validate_structs);
    RUN(test_compare_nan_and_inf_as_allclose_equal_nan);
    return check_summary();
}
