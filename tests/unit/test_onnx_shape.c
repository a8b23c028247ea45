/* tests/unit/test_onnx_shape.c: the shape family of ONNX ops (ops/shape*.c,
 * ops/reduce.c) on nodes built by hand, against values worked out by hand. */
#include <stdarg.h>

#include "tests/check.h"
#include "tuner/net/ops/op.h"

/* ---- building nodes ---- */

typedef struct {
    NetNode node;
    NetAttr attrs[8];
    int64_t ints[8][8];
    double floats[8][8];
} TNode;

static NetNode *node(TNode *t, const char *op) {
    memset(t, 0, sizeof *t);
    t->node.name = "n";
    t->node.op = (char *)op;
    t->node.domain = "";
    t->node.attrs = t->attrs;
    return &t->node;
}

/* The attribute helpers take a TNode or the NetNode node() returned: both
 * are the same address (the node is the TNode's first member). */
static NetAttr *add_attr(void *tn, const char *name, NetAttrKind kind) {
    TNode *t = tn;
    NetAttr *a = &t->attrs[t->node.n_attrs++];
    a->name = (char *)name;
    a->kind = kind;
    return a;
}

static void attr_int(void *t, const char *name, int64_t v) { add_attr(t, name, NATTR_INT)->i = v; }
static void attr_str(void *t, const char *name, const char *s) { add_attr(t, name, NATTR_STRING)->s = (char *)s; }

static void attr_ints(void *tn, const char *name, int n, ...) {
    TNode *t = tn;
    int k = t->node.n_attrs;
    NetAttr *a = add_attr(t, name, NATTR_INTS);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        t->ints[k][i] = va_arg(ap, long long);
    va_end(ap);
    a->n = n;
    a->ints = t->ints[k];
}

/* ---- tensors ---- */

static NdTensor tensor(NdType type, int rank, const int64_t *dims, const double *vals) {
    NdTensor t = {0};
    NdShape s = {.rank = rank};
    for (int i = 0; i < rank; i++)
        s.dim[i] = dims[i];
    NdTensor_alloc(&t, type, &s, NULL);
    for (int64_t i = 0; vals && i < t.count; i++)
        NdTensor_set(&t, i, vals[i]);
    return t;
}

/* 0, 1, 2, ... (plus `first`) in a float tensor. */
static NdTensor iota(int rank, const int64_t *dims, double first) {
    NdTensor t = tensor(ND_F32, rank, dims, NULL);
    for (int64_t i = 0; i < t.count; i++)
        NdTensor_set(&t, i, first + (double)i);
    return t;
}

static NdTensor ints1(int n, const int64_t *v) {
    int64_t d = n;
    NdTensor t = tensor(ND_I64, 1, &d, NULL);
    for (int i = 0; i < n; i++)
        ((int64_t *)t.data)[i] = v[i];
    return t;
}

static NdTensor floats1(int n, const double *v) {
    int64_t d = n;
    return tensor(ND_F32, 1, &d, v);
}

/* Runs the node on the inputs (NULL: omitted) into out[0..n_out). */
static Status run(NetNode *n, int64_t opset, NdTensor **in, int n_in, NdTensor *out, int n_out, char *err) {
    const OpDef *d = Op_find("", n->op);
    if (!d) return tt_fail(err, "no op %s", n->op);
    n->n_in = n_in;
    n->n_out = n_out;
    if (d->check && d->check(n, NULL, err) != TT_OK) return TT_ERR;
    const NdTensor *ins[8];
    for (int i = 0; i < n_in; i++)
        ins[i] = in[i];
    memset(out, 0, sizeof *out * (size_t)n_out);
    OpCtx ctx = {.node = n, .opset = opset, .in = ins, .n_in = n_in, .out = out, .n_out = n_out, .err = err};
    return d->run(&ctx);
}

static bool shape_is(const NdTensor *t, int rank, ...) {
    if (t->shape.rank != rank) return false;
    va_list ap;
    va_start(ap, rank);
    bool ok = true;
    for (int i = 0; i < rank; i++)
        ok &= t->shape.dim[i] == va_arg(ap, long long);
    va_end(ap);
    return ok;
}

static bool values_are(const NdTensor *t, int n, const double *want, double tol) {
    if (t->count != n) return false;
    for (int i = 0; i < n; i++)
        if (!(fabs(NdTensor_get(t, i) - want[i]) <= tol)) {
            fprintf(stderr, "  element %d: %g, expected %g\n", i, NdTensor_get(t, i), want[i]);
            return false;
        }
    return true;
}

static void free_all(NdTensor *t, int n) {
    for (int i = 0; i < n; i++)
        NdTensor_free(&t[i]);
}

/* ---- Slice ---- */

TEST(slice_negative_steps) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = iota(2, (int64_t[]){3, 4}, 0), y;
    NdTensor st = ints1(2, (int64_t[]){2, -1}), en = ints1(2, (int64_t[]){INT64_MIN, -100});
    NdTensor ax = ints1(2, (int64_t[]){0, 1}), sp = ints1(2, (int64_t[]){-1, -2});
    /* rows 2, 1, 0; columns 3, 1 */
    CHECK(run(node(&t, "Slice"), 13, (NdTensor *[]){&x, &st, &en, &ax, &sp}, 5, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 2, 3, 2));
    CHECK(values_are(&y, 6, (double[]){11, 9, 7, 5, 3, 1}, 0));
    NdTensor_free(&y);
    free_all((NdTensor[]){st, en, ax, sp}, 4);

    /* 1-D of 5: start 10 clamps to 4, end -100 clamps to -1: all five reversed */
    NdTensor v = iota(1, (int64_t[]){5}, 0), s1 = ints1(1, (int64_t[]){10}), e1 = ints1(1, (int64_t[]){-100}),
             p1 = ints1(1, (int64_t[]){-1});
    CHECK(run(node(&t, "Slice"), 13, (NdTensor *[]){&v, &s1, &e1, NULL, &p1}, 5, &y, 1, err) == TT_OK);
    CHECK(values_are(&y, 5, (double[]){4, 3, 2, 1, 0}, 0));
    NdTensor_free(&y);
    /* start 1, end past the end, step 2: 1, 3 */
    NdTensor s2 = ints1(1, (int64_t[]){1}), e2 = ints1(1, (int64_t[]){1000}), p2 = ints1(1, (int64_t[]){2});
    CHECK(run(node(&t, "Slice"), 13, (NdTensor *[]){&v, &s2, &e2, NULL, &p2}, 5, &y, 1, err) == TT_OK);
    CHECK(values_are(&y, 2, (double[]){1, 3}, 0));
    NdTensor_free(&y);
    /* opset 1: attributes; start -2 counts from the end */
    NetNode *n = node(&t, "Slice");
    attr_ints(&t, "starts", 1, -2LL);
    attr_ints(&t, "ends", 1, 5LL);
    CHECK(run(n, 1, (NdTensor *[]){&v}, 1, &y, 1, err) == TT_OK);
    CHECK(values_are(&y, 2, (double[]){3, 4}, 0));
    free_all((NdTensor[]){y, v, s1, e1, p1, s2, e2, p2, x}, 9);
}

/* ---- Reshape ---- */

TEST(reshape_zero_and_minus_one) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = iota(3, (int64_t[]){2, 3, 4}, 0), y;
    NdTensor s = ints1(2, (int64_t[]){0, -1});
    CHECK(run(node(&t, "Reshape"), 14, (NdTensor *[]){&x, &s}, 2, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 2, 2, 12));
    CHECK(NdTensor_get(&y, 23) == 23);
    NdTensor_free(&y);
    NdTensor_free(&s);
    s = ints1(3, (int64_t[]){-1, 0, 2}); /* 0 copies 3; -1 is 24 / 6 */
    CHECK(run(node(&t, "Reshape"), 14, (NdTensor *[]){&x, &s}, 2, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 3, 4, 3, 2));
    NdTensor_free(&y);
    /* allowzero: 0 is a real zero, and 24 elements cannot fill 0x4x2 */
    attr_int(&t, "allowzero", 1);
    NdTensor_free(&s);
    s = ints1(3, (int64_t[]){0, 4, -1});
    CHECK(run(&t.node, 14, (NdTensor *[]){&x, &s}, 2, &y, 1, err) == TT_ERR);
    CHECK(strstr(err, "-1") != NULL);
    /* two -1 are refused */
    NdTensor_free(&s);
    s = ints1(2, (int64_t[]){-1, -1});
    CHECK(run(node(&t, "Reshape"), 14, (NdTensor *[]){&x, &s}, 2, &y, 1, err) == TT_ERR);
    /* infer without the shape's data leaves the rank unknown; with it, computes the shape */
    NdTensor shape_only = {.type = ND_I64, .shape = {.rank = 1, .dim = {2}}};
    const NdTensor *ins[2] = {&x, &shape_only};
    NdTensor out = {0};
    OpCtx ctx = {.node = node(&t, "Reshape"), .opset = 14, .in = ins, .n_in = 2, .out = &out, .n_out = 1, .err = err};
    CHECK(Op_find("", "Reshape")->infer(&ctx) == TT_OK);
    CHECK(out.shape.rank == -1 && out.type == ND_F32);
    ins[1] = &s;
    NdTensor_free(&s);
    s = ints1(2, (int64_t[]){6, -1});
    CHECK(Op_find("", "Reshape")->infer(&ctx) == TT_OK);
    CHECK(shape_is(&out, 2, 6, 4));
    free_all((NdTensor[]){x, s}, 2);
}

/* ---- Resize ---- */

static Status resize(TNode *t, NdTensor *x, NdTensor *scales, NdTensor *sizes, NdTensor *y, char *err) {
    return run(&t->node, 13, (NdTensor *[]){x, NULL, scales, sizes}, 4, y, 1, err);
}

TEST(resize_nearest_modes) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = iota(4, (int64_t[]){1, 1, 2, 2}, 1), y;
    NdTensor sc = floats1(4, (double[]){1, 1, 2, 2});
    node(&t, "Resize");
    attr_str(&t, "coordinate_transformation_mode", "asymmetric");
    attr_str(&t, "nearest_mode", "floor");
    CHECK(resize(&t, &x, &sc, NULL, &y, err) == TT_OK);
    CHECK(shape_is(&y, 4, 1, 1, 4, 4));
    CHECK(values_are(&y, 16, (double[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0));
    NdTensor_free(&y);
    /* half_pixel, sizes 1x1x1x2 of 1x1x1x4: the sources are 0.5 and 2.5, so the tie rule decides */
    NdTensor r = iota(4, (int64_t[]){1, 1, 1, 4}, 1), sz = ints1(4, (int64_t[]){1, 1, 1, 2});
    node(&t, "Resize");
    CHECK(resize(&t, &r, NULL, &sz, &y, err) == TT_OK); /* round_prefer_floor by default */
    CHECK(values_are(&y, 2, (double[]){1, 3}, 0));
    NdTensor_free(&y);
    attr_str(&t, "nearest_mode", "round_prefer_ceil");
    CHECK(resize(&t, &r, NULL, &sz, &y, err) == TT_OK);
    CHECK(values_are(&y, 2, (double[]){2, 4}, 0));
    NdTensor_free(&y);
    attr_str(node(&t, "Resize"), "nearest_mode", "ceil");
    attr_str(&t, "coordinate_transformation_mode", "tf_half_pixel_for_nn"); /* 1 and 3: ceil gives 1 and 3 */
    CHECK(resize(&t, &r, NULL, &sz, &y, err) == TT_OK);
    CHECK(values_are(&y, 2, (double[]){2, 4}, 0));
    NdTensor_free(&y);
    /* a refused mode names itself */
    attr_str(node(&t, "Resize"), "mode", "area");
    CHECK(resize(&t, &r, NULL, &sz, &y, err) == TT_ERR);
    CHECK(strstr(err, "area") != NULL);
    free_all((NdTensor[]){x, sc, r, sz}, 4);
}

TEST(resize_linear_modes) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = iota(4, (int64_t[]){1, 1, 2, 2}, 1), y;
    NdTensor sc = floats1(4, (double[]){1, 1, 2, 2});
    attr_str(node(&t, "Resize"), "mode", "linear"); /* half_pixel: sources -0.25, 0.25, 0.75, 1.25 */
    CHECK(resize(&t, &x, &sc, NULL, &y, err) == TT_OK);
    CHECK(values_are(&y, 16, (double[]){1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4},
                     1e-6));
    NdTensor_free(&y);
    /* align_corners 2 -> 4 on the last axis: 0, 1/3, 2/3, 1 of the way from 0 to 3 */
    NdTensor r = tensor(ND_F32, 4, (int64_t[]){1, 1, 1, 2}, (double[]){0, 3}), sz = ints1(4, (int64_t[]){1, 1, 1, 4});
    attr_str(&t, "coordinate_transformation_mode", "align_corners");
    CHECK(resize(&t, &r, NULL, &sz, &y, err) == TT_OK);
    CHECK(values_are(&y, 4, (double[]){0, 1, 2, 3}, 1e-6));
    NdTensor_free(&y);
    /* asymmetric 2 -> 4: sources 0, 0.5, 1, 1.5 (the last clamps to 1) */
    attr_str(node(&t, "Resize"), "mode", "linear");
    attr_str(&t, "coordinate_transformation_mode", "asymmetric");
    CHECK(resize(&t, &r, NULL, &sz, &y, err) == TT_OK);
    CHECK(values_are(&y, 4, (double[]){0, 1.5, 3, 3}, 1e-6));
    NdTensor_free(&y);
    /* pytorch_half_pixel to one output: the source is 0 */
    NdTensor one = ints1(4, (int64_t[]){1, 1, 1, 1});
    attr_str(node(&t, "Resize"), "mode", "linear");
    attr_str(&t, "coordinate_transformation_mode", "pytorch_half_pixel");
    CHECK(resize(&t, &r, NULL, &one, &y, err) == TT_OK);
    CHECK(values_are(&y, 1, (double[]){0}, 1e-6));
    NdTensor_free(&y);
    /* Upsample (opset 9): scales as input 1, nearest, asymmetric */
    attr_str(node(&t, "Upsample"), "mode", "nearest");
    NdTensor sc2 = floats1(4, (double[]){1, 1, 1, 2});
    CHECK(run(&t.node, 9, (NdTensor *[]){&r, &sc2}, 2, &y, 1, err) == TT_OK);
    CHECK(values_are(&y, 4, (double[]){0, 0, 3, 3}, 0));
    NdTensor_free(&y);
    /* Resize 10 downsampling 5 -> 3 by 0.6: sources 0, 1.67, 3.33 round up to 0, 2, 4 */
    NdTensor five = iota(4, (int64_t[]){1, 1, 1, 5}, 1), sc3 = floats1(4, (double[]){1, 1, 1, 0.6});
    node(&t, "Resize");
    CHECK(run(&t.node, 10, (NdTensor *[]){&five, &sc3}, 2, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 4, 1, 1, 1, 3) && values_are(&y, 3, (double[]){1, 3, 5}, 0));
    free_all((NdTensor[]){y, x, sc, r, sz, one, sc2, five, sc3}, 9);
}

/* ---- reductions ---- */

/* x[i][j][k] = 6i + 2j + k + 1 over 2x3x2 */
static NdTensor reduce_input(void) { return iota(3, (int64_t[]){2, 3, 2}, 1); }

TEST(reduce_several_axes) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = reduce_input(), y;
    attr_ints(node(&t, "ReduceSum"), "axes", 2, 0LL, 2LL);
    CHECK(run(&t.node, 11, (NdTensor *[]){&x}, 1, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 3, 1, 3, 1));
    CHECK(values_are(&y, 3, (double[]){18, 26, 34}, 1e-5));
    NdTensor_free(&y);
    attr_ints(node(&t, "ReduceMean"), "axes", 2, 0LL, -1LL);
    CHECK(run(&t.node, 13, (NdTensor *[]){&x}, 1, &y, 1, err) == TT_OK);
    CHECK(values_are(&y, 3, (double[]){4.5, 6.5, 8.5}, 1e-5));
    NdTensor_free(&y);
    attr_ints(node(&t, "ReduceMax"), "axes", 2, 2LL, 0LL);
    attr_int(&t, "keepdims", 0);
    CHECK(run(&t.node, 13, (NdTensor *[]){&x}, 1, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 1, 3));
    CHECK(values_are(&y, 3, (double[]){8, 10, 12}, 0));
    NdTensor_free(&y);
    /* no axes: all of them; sqrt(1^2 + ... + 12^2) = sqrt(650) */
    attr_int(node(&t, "ReduceL2"), "keepdims", 0);
    CHECK(run(&t.node, 13, (NdTensor *[]){&x}, 1, &y, 1, err) == TT_OK);
    CHECK(y.shape.rank == 0);
    CHECK(values_are(&y, 1, (double[]){sqrt(650.0)}, 1e-4));
    NdTensor_free(&y);
    /* LogSumExp over axis 1 of the first column: log(e^1 + e^3 + e^5) */
    attr_ints(node(&t, "ReduceLogSumExp"), "axes", 1, 1LL);
    CHECK(run(&t.node, 13, (NdTensor *[]){&x}, 1, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 3, 2, 1, 2));
    CHECK_NEAR(NdTensor_get(&y, 0), log(exp(1.0) + exp(3.0) + exp(5.0)), 1e-5);
    NdTensor_free(&y);
    free_all(&x, 1);
}

TEST(reduce_axes_input) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = reduce_input(), y, ax = ints1(1, (int64_t[]){-1});
    attr_int(node(&t, "ReduceProd"), "keepdims", 0); /* opset 18: axes is input 1 */
    CHECK(run(&t.node, 18, (NdTensor *[]){&x, &ax}, 2, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 2, 2, 3));
    CHECK(values_are(&y, 6, (double[]){2, 12, 30, 56, 90, 132}, 1e-3));
    NdTensor_free(&y);
    /* empty axes with noop_with_empty_axes: the input unchanged */
    NdTensor none = ints1(0, NULL);
    attr_int(node(&t, "ReduceSum"), "noop_with_empty_axes", 1);
    CHECK(run(&t.node, 13, (NdTensor *[]){&x, &none}, 2, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 3, 2, 3, 2) && NdTensor_get(&y, 11) == 12);
    NdTensor_free(&y);
    /* without it: every axis; ReduceSumSquare of 1..12 is 650, ReduceL1 of -x is 78 */
    node(&t, "ReduceSumSquare");
    CHECK(run(&t.node, 18, (NdTensor *[]){&x, &none}, 2, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 3, 1, 1, 1) && values_are(&y, 1, (double[]){650}, 1e-3));
    NdTensor_free(&y);
    /* ArgMax with ties and select_last_index */
    NdTensor a = tensor(ND_F32, 2, (int64_t[]){2, 3}, (double[]){1, 5, 5, 7, 2, 7});
    attr_int(node(&t, "ArgMax"), "axis", 1);
    CHECK(run(&t.node, 13, (NdTensor *[]){&a}, 1, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 2, 2, 1) && y.type == ND_I64 && values_are(&y, 2, (double[]){1, 0}, 0));
    NdTensor_free(&y);
    attr_int(&t, "select_last_index", 1);
    CHECK(run(&t.node, 13, (NdTensor *[]){&a}, 1, &y, 1, err) == TT_OK);
    CHECK(values_are(&y, 2, (double[]){2, 2}, 0));
    free_all((NdTensor[]){y, x, ax, none, a}, 5);
}

/* ---- movement ---- */

TEST(transpose_concat_split_tile_expand) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = iota(2, (int64_t[]){2, 3}, 0), y[3];
    CHECK(run(node(&t, "Transpose"), 13, (NdTensor *[]){&x}, 1, y, 1, err) == TT_OK);
    CHECK(shape_is(&y[0], 2, 3, 2) && values_are(&y[0], 6, (double[]){0, 3, 1, 4, 2, 5}, 0));
    NdTensor_free(&y[0]);
    attr_int(node(&t, "Concat"), "axis", -1);
    CHECK(run(&t.node, 13, (NdTensor *[]){&x, &x}, 2, y, 1, err) == TT_OK);
    CHECK(shape_is(&y[0], 2, 2, 6) && values_are(&y[0], 12, (double[]){0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}, 0));
    NdTensor_free(&y[0]);
    NdTensor sp = ints1(2, (int64_t[]){1, 2});
    attr_int(node(&t, "Split"), "axis", 1);
    CHECK(run(&t.node, 13, (NdTensor *[]){&x, &sp}, 2, y, 2, err) == TT_OK);
    CHECK(shape_is(&y[0], 2, 2, 1) && values_are(&y[0], 2, (double[]){0, 3}, 0));
    CHECK(shape_is(&y[1], 2, 2, 2) && values_are(&y[1], 4, (double[]){1, 2, 4, 5}, 0));
    free_all(y, 2);
    /* opset 18 num_outputs 3 over 7: 3, 3, 1 */
    NdTensor v = iota(1, (int64_t[]){7}, 0);
    attr_int(node(&t, "Split"), "num_outputs", 3);
    CHECK(run(&t.node, 18, (NdTensor *[]){&v}, 1, y, 3, err) == TT_OK);
    CHECK(shape_is(&y[0], 1, 3) && shape_is(&y[2], 1, 1) && NdTensor_get(&y[2], 0) == 6);
    free_all(y, 3);
    NdTensor rep = ints1(2, (int64_t[]){2, 1});
    CHECK(run(node(&t, "Tile"), 13, (NdTensor *[]){&x, &rep}, 2, y, 1, err) == TT_OK);
    CHECK(shape_is(&y[0], 2, 4, 3) && values_are(&y[0], 12, (double[]){0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}, 0));
    NdTensor_free(&y[0]);
    NdTensor col = iota(2, (int64_t[]){2, 1}, 1), es = ints1(3, (int64_t[]){2, 1, 3});
    CHECK(run(node(&t, "Expand"), 13, (NdTensor *[]){&col, &es}, 2, y, 1, err) == TT_OK);
    CHECK(shape_is(&y[0], 3, 2, 2, 3) && values_are(&y[0], 12, (double[]){1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}, 0));
    free_all((NdTensor[]){y[0], x, sp, v, rep, col, es}, 7);
}

TEST(pad_gather_topk) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = iota(1, (int64_t[]){3}, 1), y[2];
    NdTensor pads = ints1(2, (int64_t[]){2, 3});
    static const char *modes[] = {"reflect", "edge", "wrap"};
    static const double want[3][8] = {{3, 2, 1, 2, 3, 2, 1, 2}, {1, 1, 1, 2, 3, 3, 3, 3}, {2, 3, 1, 2, 3, 1, 2, 3}};
    for (int m = 0; m < 3; m++) {
        attr_str(node(&t, "Pad"), "mode", modes[m]);
        CHECK(run(&t.node, 13, (NdTensor *[]){&x, &pads}, 2, y, 1, err) == TT_OK);
        CHECK(values_are(&y[0], 8, want[m], 0));
        NdTensor_free(&y[0]);
    }
    NdTensor cv = floats1(1, (double[]){9}), crop = ints1(2, (int64_t[]){-1, 1});
    CHECK(run(node(&t, "Pad"), 13, (NdTensor *[]){&x, &crop, &cv}, 3, y, 1, err) == TT_OK);
    CHECK(values_are(&y[0], 3, (double[]){2, 3, 9}, 0));
    NdTensor_free(&y[0]);
    /* 2-D: a row of 7 above, the first column cropped, a column of 7 on the right */
    NdTensor m = iota(2, (int64_t[]){2, 3}, 0), p2 = ints1(4, (int64_t[]){1, -1, 0, 1});
    NdTensor seven = floats1(1, (double[]){7});
    CHECK(run(node(&t, "Pad"), 13, (NdTensor *[]){&m, &p2, &seven}, 3, y, 1, err) == TT_OK);
    CHECK(shape_is(&y[0], 2, 3, 3) && values_are(&y[0], 9, (double[]){7, 7, 7, 1, 2, 7, 4, 5, 7}, 0));
    free_all((NdTensor[]){y[0], m, p2, seven}, 4);
    NdTensor idx = ints1(2, (int64_t[]){-1, 0});
    CHECK(run(node(&t, "Gather"), 13, (NdTensor *[]){&x, &idx}, 2, y, 1, err) == TT_OK);
    CHECK(values_are(&y[0], 2, (double[]){3, 1}, 0));
    NdTensor_free(&y[0]);
    NdTensor bad = ints1(1, (int64_t[]){3});
    CHECK(run(node(&t, "Gather"), 13, (NdTensor *[]){&x, &bad}, 2, y, 1, err) == TT_ERR);
    CHECK(strstr(err, "out of range") != NULL);
    NdTensor_free(&y[0]);
    NdTensor s = tensor(ND_F32, 1, (int64_t[]){5}, (double[]){4, 9, 1, 9, 3}), k = ints1(1, (int64_t[]){3});
    CHECK(run(node(&t, "TopK"), 13, (NdTensor *[]){&s, &k}, 2, y, 2, err) == TT_OK);
    CHECK(values_are(&y[0], 3, (double[]){9, 9, 4}, 0) && values_are(&y[1], 3, (double[]){1, 3, 0}, 0));
    free_all((NdTensor[]){y[0], y[1], x, pads, cv, crop, idx, bad, s, k}, 10);
}

/* infer computes a shape from constant driving inputs and leaves rank -1 without them */
static int infer_rank(const char *op, const NdTensor **ins, int n_in, NdTensor *out, char *err) {
    TNode t;
    memset(out, 0, sizeof *out);
    out->shape.rank = -1;
    OpCtx ctx = {.node = node(&t, op), .opset = 13, .in = ins, .n_in = n_in, .out = out, .n_out = 1, .err = err};
    t.node.n_in = n_in;
    t.node.n_out = 1;
    return Op_find("", op)->infer(&ctx) == TT_OK ? out->shape.rank : -2;
}

TEST(infer_from_constants) {
    char err[TT_ERRLEN] = "";
    NdTensor x = iota(2, (int64_t[]){2, 1}, 0), out;
    NdTensor shp = ints1(3, (int64_t[]){4, 2, 3}), rep = ints1(2, (int64_t[]){3, 5});
    NdTensor unknown = {.type = ND_I64, .shape = {.rank = 1, .dim = {3}}}; /* no data: not a constant */
    CHECK(infer_rank("Expand", (const NdTensor *[]){&x, &shp}, 2, &out, err) == 3 && shape_is(&out, 3, 4, 2, 3));
    CHECK(infer_rank("Expand", (const NdTensor *[]){&x, &unknown}, 2, &out, err) == -1);
    CHECK(infer_rank("Tile", (const NdTensor *[]){&x, &rep}, 2, &out, err) == 2 && shape_is(&out, 2, 6, 5));
    CHECK(infer_rank("ConstantOfShape", (const NdTensor *[]){&shp}, 1, &out, err) == 3 && out.type == ND_F32);
    CHECK(infer_rank("ConstantOfShape", (const NdTensor *[]){&unknown}, 1, &out, err) == -1);
    NdTensor a = ints1(1, (int64_t[]){1}), b = ints1(1, (int64_t[]){10}), d = ints1(1, (int64_t[]){3});
    a.shape.rank = b.shape.rank = d.shape.rank = 0; /* scalars */
    CHECK(infer_rank("Range", (const NdTensor *[]){&a, &b, &d}, 3, &out, err) == 1 && shape_is(&out, 1, 3));
    CHECK(infer_rank("Range", (const NdTensor *[]){&a, &unknown, &d}, 3, &out, err) == -1);
    NdTensor st = ints1(1, (int64_t[]){1}), en = ints1(1, (int64_t[]){2});
    CHECK(infer_rank("Slice", (const NdTensor *[]){&x, &st, &en}, 3, &out, err) == 2 && shape_is(&out, 2, 1, 1));
    CHECK(infer_rank("Slice", (const NdTensor *[]){&x, &st, &unknown}, 3, &out, err) == -1);
    CHECK(infer_rank("Shape", (const NdTensor *[]){&x}, 1, &out, err) == 1 && shape_is(&out, 1, 2));
    free_all((NdTensor[]){x, shp, rep, a, b, d, st, en}, 8);
}

TEST(bad_inputs_are_refused) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = iota(2, (int64_t[]){2, 3}, 0), y, z = iota(2, (int64_t[]){3, 3}, 0);
    NdTensor st = ints1(1, (int64_t[]){0}), en = ints1(1, (int64_t[]){2}), zero = ints1(1, (int64_t[]){0});
    CHECK(run(node(&t, "Slice"), 13, (NdTensor *[]){&x, &st, &en, NULL, &zero}, 5, &y, 1, err) == TT_ERR);
    CHECK(strstr(err, "step") != NULL);
    CHECK(run(node(&t, "Concat"), 13, (NdTensor *[]){&x, &z}, 2, &y, 1, err) == TT_OK); /* axis 0: 2 + 3 rows */
    CHECK(shape_is(&y, 2, 5, 3));
    NdTensor_free(&y);
    attr_int(node(&t, "Concat"), "axis", 1); /* axis 1: the rows differ */
    CHECK(run(&t.node, 13, (NdTensor *[]){&x, &z}, 2, &y, 1, err) == TT_ERR);
    NdTensor shp = ints1(2, (int64_t[]){4, 3});
    CHECK(run(node(&t, "Expand"), 13, (NdTensor *[]){&x, &shp}, 2, &y, 1, err) == TT_ERR);
    CHECK(strstr(err, "broadcast") != NULL);
    NdTensor rep = ints1(1, (int64_t[]){2});
    CHECK(run(node(&t, "Tile"), 13, (NdTensor *[]){&x, &rep}, 2, &y, 1, err) == TT_ERR);
    CHECK(run(node(&t, "Squeeze"), 13, (NdTensor *[]){&x, &zero}, 2, &y, 1, err) == TT_ERR);
    NdTensor nan = floats1(2, (double[]){1, NAN});
    CHECK(run(node(&t, "Resize"), 13, (NdTensor *[]){&x, NULL, &nan}, 3, &y, 1, err) == TT_ERR);
    attr_str(node(&t, "Pad"), "mode", "mirror");
    CHECK(run(&t.node, 13, (NdTensor *[]){&x, &shp}, 2, &y, 1, err) == TT_ERR && strstr(err, "mirror"));
    add_attr(node(&t, "Constant"), "sparse_value", NATTR_OTHER);
    CHECK(run(&t.node, 13, NULL, 0, &y, 1, err) == TT_ERR && strstr(err, "sparse_value"));
    attr_str(node(&t, "Resize"), "coordinate_transformation_mode", "nonsense");
    CHECK(run(&t.node, 13, (NdTensor *[]){&x}, 1, &y, 1, err) == TT_ERR && strstr(err, "nonsense"));
    /* what random nodes found: each is an error, not a read out of bounds or an overflow */
    NdTensor wide = tensor(ND_I64, 2, (int64_t[]){3, 4}, NULL); /* 4 columns of indices for 3 of data */
    CHECK(run(node(&t, "GatherElements"), 13, (NdTensor *[]){&x, &wide}, 2, &y, 1, err) == TT_ERR);
    NdTensor batch = tensor(ND_I64, 2, (int64_t[]){3, 1}, NULL); /* batch 3 against data's 2 */
    attr_int(node(&t, "GatherND"), "batch_dims", 1);
    CHECK(run(&t.node, 13, (NdTensor *[]){&x, &batch}, 2, &y, 1, err) == TT_ERR);
    NdTensor sizes = ints1(2, (int64_t[]){INT64_MAX, INT64_MAX});
    CHECK(run(node(&t, "Split"), 13, (NdTensor *[]){&x, &sizes}, 2, (NdTensor[2]){{0}}, 2, err) == TT_ERR);
    CHECK(run(node(&t, "Reshape"), 13, (NdTensor *[]){&x, &sizes}, 2, &y, 1, err) == TT_ERR);
    NdTensor empty = tensor(ND_F32, 2, (int64_t[]){0, 2}, NULL), to = ints1(2, (int64_t[]){2, 2});
    CHECK(run(node(&t, "Resize"), 13, (NdTensor *[]){&empty, NULL, NULL, &to}, 4, &y, 1, err) == TT_ERR);
    NdTensor_free(&y); /* an op may have allocated its output before it failed: the caller frees it, as exec.c does */
    free_all((NdTensor[]){x, z, st, en, zero, shp, rep, nan, wide, batch, sizes, empty, to}, 13);
}

TEST(newer_opset_inputs) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = iota(2, (int64_t[]){2, 2}, 1), y;
    NdTensor pads = ints1(2, (int64_t[]){1, 1}), axes = ints1(1, (int64_t[]){1});
    CHECK(run(node(&t, "Pad"), 18, (NdTensor *[]){&x, &pads, NULL, &axes}, 4, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 2, 2, 4) && values_are(&y, 8, (double[]){0, 1, 2, 0, 0, 3, 4, 0}, 0));
    NdTensor_free(&y);
    /* Resize over axes 2 and 3 with not_larger: sizes 3x8 of 2x2 keep the smaller scale, 1.5 */
    NdTensor r = iota(4, (int64_t[]){1, 1, 2, 2}, 1), sz = ints1(2, (int64_t[]){3, 8});
    attr_ints(node(&t, "Resize"), "axes", 2, 2LL, 3LL);
    attr_str(&t, "keep_aspect_ratio_policy", "not_larger");
    CHECK(run(&t.node, 18, (NdTensor *[]){&r, NULL, NULL, &sz}, 4, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 4, 1, 1, 3, 3) && values_are(&y, 9, (double[]){1, 1, 2, 1, 1, 2, 3, 3, 4}, 0));
    NdTensor_free(&y);
    NdTensor big = reduce_input(), a0 = ints1(1, (int64_t[]){0});
    CHECK(run(node(&t, "ReduceMax"), 18, (NdTensor *[]){&big, &a0}, 2, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 3, 1, 3, 2) && values_are(&y, 6, (double[]){7, 8, 9, 10, 11, 12}, 0));
    NdTensor_free(&y);
    attr_ints(node(&t, "Unsqueeze"), "axes", 2, 0LL, 3LL); /* opset 11: an attribute */
    CHECK(run(&t.node, 11, (NdTensor *[]){&x}, 1, &y, 1, err) == TT_OK);
    CHECK(shape_is(&y, 4, 1, 2, 2, 1));
    NdTensor_free(&y);
    attr_ints(node(&t, "Constant"), "value_ints", 2, 5LL, -7LL);
    CHECK(run(&t.node, 13, NULL, 0, &y, 1, err) == TT_OK);
    CHECK(y.type == ND_I64 && shape_is(&y, 1, 2) && values_are(&y, 2, (double[]){5, -7}, 0));
    free_all((NdTensor[]){y, x, pads, axes, r, sz, big, a0}, 8);
}

TEST(movement_keeps_every_bit) {
    char err[TT_ERRLEN] = "";
    TNode t;
    NdTensor x = tensor(ND_I64, 2, (int64_t[]){2, 2}, NULL), y;
    int64_t *v = x.data;
    v[0] = ((int64_t)1 << 62) + 1, v[1] = -3, v[2] = INT64_MIN, v[3] = ((int64_t)1 << 53) + 1;
    CHECK(run(node(&t, "Transpose"), 13, (NdTensor *[]){&x}, 1, &y, 1, err) == TT_OK);
    int64_t *w = y.data;
    CHECK(w[0] == v[0] && w[1] == v[2] && w[2] == v[1] && w[3] == v[3]);
    NdTensor_free(&y);
    NdTensor h = tensor(ND_F16, 1, (int64_t[]){3}, (double[]){0.5, -2, 65504}), idx = ints1(2, (int64_t[]){2, 0});
    CHECK(run(node(&t, "Gather"), 13, (NdTensor *[]){&h, &idx}, 2, &y, 1, err) == TT_OK);
    CHECK(y.type == ND_F16 && values_are(&y, 2, (double[]){65504, 0.5}, 0));
    free_all((NdTensor[]){y, x, h, idx}, 4);
}

TEST(flops) {
    static const char *moves[] = {"Reshape", "Transpose", "Slice", "Concat", "Gather", "Pad", "Expand", "Tile"};
    for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++)
        CHECK(Op_find("", moves[i])->flops == NULL); /* pure movement costs nothing */
    TNode t;
    NdTensor x = reduce_input(), y = {.type = ND_F32, .shape = {.rank = 4, .dim = {1, 1, 4, 6}}};
    const NdTensor *in[1] = {&x};
    OpCtx ctx = {.node = node(&t, "ReduceSum"), .in = in, .n_in = 1, .out = &y, .n_out = 1};
    CHECK_NEAR(Op_find("", "ReduceSum")->flops(&ctx), 12, 0);
    NdTensor r = iota(4, (int64_t[]){1, 1, 2, 3}, 0);
    in[0] = &r;
    attr_str(node(&t, "Resize"), "mode", "linear"); /* 24 outputs, 2 resized axes: 4 taps, a multiply and an add each */
    CHECK_NEAR(Op_find("", "Resize")->flops(&ctx), 2 * 4 * 24, 0);
    free_all((NdTensor[]){x, r}, 2);
}

TEST(every_op_is_registered) {
    static const char *ops[] = {"Constant",
                                "ConstantOfShape",
                                "Shape",
                                "Size",
                                "Reshape",
                                "Flatten",
                                "Transpose",
                                "Squeeze",
                                "Unsqueeze",
                                "Concat",
                                "Split",
                                "Slice",
                                "Gather",
                                "GatherElements",
                                "GatherND",
                                "ScatterElements",
                                "ScatterND",
                                "Expand",
                                "Tile",
                                "Pad",
                                "Resize",
                                "Upsample",
                                "Range",
                                "Identity",
                                "DepthToSpace",
                                "SpaceToDepth",
                                "Trilu",
                                "OneHot",
                                "CumSum",
                                "NonZero",
                                "TopK",
                                "ArgMax",
                                "ArgMin",
                                "ReduceMean",
                                "ReduceSum",
                                "ReduceMax",
                                "ReduceMin",
                                "ReduceProd",
                                "ReduceL1",
                                "ReduceL2",
                                "ReduceLogSum",
                                "ReduceLogSumExp",
                                "ReduceSumSquare",
                                "EyeLike"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        CHECK(Op_find("", ops[i]) != NULL);
}

int main(void) {
    RUN(slice_negative_steps);
    RUN(reshape_zero_and_minus_one);
    RUN(resize_nearest_modes);
    RUN(resize_linear_modes);
    RUN(reduce_several_axes);
    RUN(reduce_axes_input);
    RUN(transpose_concat_split_tile_expand);
    RUN(pad_gather_topk);
    RUN(infer_from_constants);
    RUN(bad_inputs_are_refused);
    RUN(newer_opset_inputs);
    RUN(movement_keeps_every_bit);
    RUN(flops);
    RUN(every_op_is_registered);
    return check_summary();
}
