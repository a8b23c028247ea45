/* tests/unit/test_netrt.c: the untuned-op runtime (tuner/net/netrt.c) against the
 * graph reference (tuner/net/graph_ref.c), op by op, on seeded data, and the
 * reference's convolution and dense against the workload reference. */
#include <math.h>

#include "base/rng.h"
#include "tests/check.h"
#include "tuner/net/graph_ref.h"
#include "tuner/net/netrt.h"

static void randomize(float *p, int64_t n, uint64_t seed) {
    Rng rng;
    Rng_seed(&rng, seed);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(4.0 * Rng_uniform(&rng) - 2.0);
}

static float *tensor(const Graph *g, int t, uint64_t seed) {
    int64_t n = GraphTensor_count(&g->tensors[t]);
    float *p = malloc((size_t)n * sizeof(float));
    randomize(p, n, seed);
    return p;
}

static bool close_all(const float *a, const float *b, int64_t n, double tol) {
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)a[i] - b[i]) <= tol * (1 + fabs((double)b[i])))) {
            fprintf(stderr, "element %lld: runtime %.7g, reference %.7g\n", (long long)i, a[i], b[i]);
            return false;
        }
    return true;
}

/* Runs op i of g through the runtime call `rt` and the reference; compares. */
#define OP_CASE(g, i, params, rt_call)                                                                                 \
    do {                                                                                                               \
        const GraphOp *op = &(g)->ops[i];                                                                              \
        const float *ins[GRAPH_MAX_IN];                                                                                \
        for (int j = 0; j < op->n_in; j++)                                                                             \
            ins[j] = in_of(op->in[j]);                                                                                 \
        int64_t n_out = GraphTensor_count(&(g)->tensors[op->out]);                                                     \
        float *want = malloc((size_t)n_out * sizeof(float)), *y = calloc((size_t)n_out, sizeof(float));                \
        Graph_referenceOp(g, op, params, ins, want);                                                                   \
        const float *x = ins[0];                                                                                       \
        (void)x;                                                                                                       \
        rt_call;                                                                                                       \
        if (!close_all(y, want, n_out, 1e-5)) {                                                                        \
            fprintf(stderr, "op %s\n", GraphOp_kindName(op->kind));                                                    \
            CHECK(0);                                                                                                  \
        }                                                                                                              \
        free(want);                                                                                                    \
        free(y);                                                                                                       \
    } while (0)

static float *BUF[256];
static const float *in_of(int t) { return BUF[t]; }

TEST(test_runtime_ops) {
    Graph g;
    Graph_init(&g, "ops", LAYOUT_NCHW, 2);
    int64_t dim[4] = {2, 6, 9, 7};
    int x = Graph_input(&g, 4, dim);
    int bn = Graph_unary(&g, GOP_BATCH_NORM, x, 0, 0, false);
    int bias = Graph_unary(&g, GOP_BIAS_ADD, x, 0, 0, false);
    int relu = Graph_unary(&g, GOP_RELU, x, 0, 0, false);
    int clip = Graph_unary(&g, GOP_CLIP, x, 0, 6, false);
    int gelu = Graph_unary(&g, GOP_GELU, x, 0, 0, false);
    int scale = Graph_unary(&g, GOP_SCALE, x, 0.125, 0, false);
    int add = Graph_add(&g, x, bn, false);
    int mp = Graph_pool(&g, GOP_MAX_POOL, x, 3, 2, 1);
    int ap = Graph_pool(&g, GOP_AVG_POOL, x, 3, 1, 1);
    int gap = Graph_unary(&g, GOP_GLOBAL_AVG_POOL, x, 0, 0, false);
    int parts[3] = {x, bn, mp == 0 ? x : relu};
    int cat = Graph_concat(&g, parts, 3);
    int flat = Graph_unary(&g, GOP_FLATTEN, x, 0, 0, false);
    int sm = Graph_unary(&g, GOP_SOFTMAX, flat, 0, 0, false);
    int ln = Graph_unary(&g, GOP_LAYER_NORM, flat, 1e-5, 0, false);
    /* attention shapes: batch 2, seq 5, heads 3, head dim 4 */
    int64_t d2[2] = {2 * 5, 3 * 4};
    int tok = Graph_input(&g, 2, d2);
    int qh = Graph_heads(&g, GOP_SPLIT_HEADS, tok, 3, 5);
    int vt = Graph_heads(&g, GOP_SPLIT_HEADS_T, tok, 3, 5);
    int s = Graph_batchMatmul(&g, qh, qh);
    int mask = Graph_maskAdd(&g, s, 2, false);
    int merged = Graph_heads(&g, GOP_MERGE_HEADS, qh, 3, 5);
    CHECK(!g.too_small);
    CHECK(g.n_tensors < 256);
    float *params = malloc((size_t)g.n_params * sizeof(float)), *unused = NULL;
    randomize(params, g.n_params, 3);
    for (int t = 0; t < g.n_tensors; t++)
        BUF[t] = tensor(&g, t, 100 + (uint64_t)t);
    /* the mask as GraphData_make writes it: 0 or -10000 */
    for (int64_t i = 0; i < g.ops[mask - 1].param_count[0]; i++)
        params[g.ops[mask - 1].param_off[0] + i] = (i % 5 == 4 && i >= 5) ? -10000.0f : 0.0f;
    const GraphOp *o;
#define OPOF(t) (g.tensors[t].producer)
    o = &g.ops[OPOF(bn)];
    OP_CASE(&g, OPOF(bn), params,
            ttrt_affine(x, params + o->param_off[0], params + o->param_off[1], NULL, y, 2, 6, 63, 0));
    o = &g.ops[OPOF(bias)];
    OP_CASE(&g, OPOF(bias), params, ttrt_affine(x, NULL, params + o->param_off[0], NULL, y, 2, 6, 63, 0));
    OP_CASE(&g, OPOF(relu), params, ttrt_affine(x, NULL, NULL, NULL, y, 1, 1, 2 * 6 * 63, 1));
    OP_CASE(&g, OPOF(clip), params, ttrt_clip(x, y, 2 * 6 * 63, 0, 6));
    OP_CASE(&g, OPOF(gelu), params, ttrt_gelu(x, y, 2 * 6 * 63));
    OP_CASE(&g, OPOF(scale), params, ttrt_scale(x, y, 2 * 6 * 63, 0.125f));
    OP_CASE(&g, OPOF(add), params, ttrt_affine(x, NULL, NULL, ins[1], y, 1, 1, 2 * 6 * 63, 0));
    OP_CASE(&g, OPOF(mp), params, ttrt_max_pool(x, y, 12, 9, 7, 5, 4, 3, 2, 1));
    OP_CASE(&g, OPOF(ap), params, ttrt_avg_pool(x, y, 12, 9, 7, 9, 7, 3, 1, 1));
    OP_CASE(&g, OPOF(gap), params, ttrt_global_avg_pool(x, y, 12, 63));
    OP_CASE(&g, OPOF(cat), params, {
        ttrt_concat_part(ins[0], y, 2, 6, 18, 0, 63);
        ttrt_concat_part(ins[1], y, 2, 6, 18, 6, 63);
        ttrt_concat_part(ins[2], y, 2, 6, 18, 12, 63);
    });
    OP_CASE(&g, OPOF(sm), params, ttrt_softmax(x, y, 2, 6 * 63));
    o = &g.ops[OPOF(ln)];
    OP_CASE(&g, OPOF(ln), params,
            ttrt_layer_norm(x, params + o->param_off[0], params + o->param_off[1], y, 2, 378, 1e-5f));
    OP_CASE(&g, OPOF(qh), params, ttrt_heads(x, y, 0, 2, 3, 5, 4));
    OP_CASE(&g, OPOF(vt), params, ttrt_heads(x, y, 1, 2, 3, 5, 4));
    OP_CASE(&g, OPOF(merged), params, ttrt_heads(x, y, 2, 2, 3, 5, 4));
    o = &g.ops[OPOF(mask)];
    OP_CASE(&g, OPOF(mask), params, ttrt_mask_add(x, params + o->param_off[0], y, 2, 3, 5, 5));
    /* the residual/bias/relu epilogue in one pass: relu(x + b + r) */
    {
        int64_t n = 2 * 6 * 63;
        float *y = malloc((size_t)n * sizeof(float)), *want = malloc((size_t)n * sizeof(float));
        const float *b = params + g.ops[OPOF(bias)].param_off[0];
        for (int64_t i = 0; i < n; i++) {
            double v = (double)BUF[x][i] + b[(i / 63) % 6] + BUF[bn][i];
            want[i] = (float)(v > 0 ? v : 0);
        }
        memcpy(y, BUF[x], (size_t)n * sizeof(float));
        ttrt_affine(y, NULL, b, BUF[bn], y, 2, 6, 63, 1); /* in place */
        CHECK(close_all(y, want, n, 1e-6));
        free(y);
        free(want);
    }
    for (int t = 0; t < g.n_tensors; t++)
        free(BUF[t]);
    free(params);
    free(unused);
    Graph_done(&g);
}

/* The graph reference's conv2d / depthwise / dense / batch_matmul agree with the workload reference. */
TEST(test_reference_tunable_ops) {
    Graph g;
    Graph_init(&g, "tun", LAYOUT_NCHW, 1);
    int64_t dim[4] = {1, 8, 11, 10};
    int x = Graph_input(&g, 4, dim);
    int c = Graph_conv(&g, GOP_CONV2D, x, 5, 3, 2, 2, 1, 0);
    int d = Graph_conv(&g, GOP_DEPTHWISE, x, 0, 3, 3, 1, 1, 1);
    int f = Graph_unary(&g, GOP_FLATTEN, x, 0, 0, false);
    int e = Graph_dense(&g, f, 7);
    int64_t d3[3] = {3, 4, 6};
    int a = Graph_input(&g, 3, d3);
    int b = Graph_input(&g, 3, d3);
    int m = Graph_batchMatmul(&g, a, b);
    float *params = malloc((size_t)g.n_params * sizeof(float));
    randomize(params, g.n_params, 9);
    for (int t = 0; t < g.n_tensors; t++)
        BUF[t] = tensor(&g, t, 50 + (uint64_t)t);
    int outs[4] = {c, d, e, m};
    for (int k = 0; k < 4; k++) {
        const GraphOp *op = &g.ops[g.tensors[outs[k]].producer];
        const float *ins[2] = {BUF[op->in[0]], op->n_in > 1 ? BUF[op->in[1]] : NULL};
        int64_t n = GraphTensor_count(&g.tensors[op->out]);
        float *got = malloc((size_t)n * sizeof(float));
        Graph_referenceOp(&g, op, params, ins, got);
        float *args[4] = {(float *)ins[0], op->n_in > 1 ? (float *)ins[1] : params + op->param_off[0], NULL, NULL};
        float *want = malloc((size_t)n * sizeof(float));
        args[2] = want;
        Workload_reference(&op->wl, args);
        char msg[256];
        int same = Workload_compare(&op->wl, want, got, msg, sizeof msg);
        if (!same) fprintf(stderr, "%s: %s\n", GraphOp_kindName(op->kind), msg);
        CHECK(same);
        free(got);
        free(want);
    }
    for (int t = 0; t < g.n_tensors; t++)
        free(BUF[t]);
    free(params);
    Graph_done(&g);
}

/* blocked layout index of canonical (n, c, y, x), first copy */
static long blk(long n, long c, long y, long x, long C, long cb, long ha, long wa, long top, long left, long rep) {
    long blocks = (C * rep + cb - 1) / cb, bc = c * rep;
    return (((n * blocks + bc / cb) * ha + y + top) * wa + x + left) * cb + bc % cb;
}

/* what the destination holds before a move: a value no move computes here, so
 * a stray write into padding shows, whatever the activation */
#define PAD_SENTINEL 12345.0f

/* reblock between two blocked layouts, with the bias + relu and the clip it can apply on the way */
TEST(test_reblock) {
    const long N = 2, C = 5, H = 3, W = 4;
    /* src: cb 4, output-like (no padding, width rounded up to 6); dst: cb 8, padded by 1, right margin 2 */
    const long scb = 4, sha = 3, swa = 6, dcb = 8, dha = 5, dwa = 8, dtop = 1, dleft = 1;
    long s_n = N * ((C + scb - 1) / scb) * sha * swa * scb, d_n = N * ((C + dcb - 1) / dcb) * dha * dwa * dcb;
    float *src = malloc((size_t)s_n * sizeof(float)), *dst = malloc((size_t)d_n * sizeof(float));
    float shift[5] = {0.5f, -0.25f, 1.0f, -2.0f, 0.0f};
    randomize(src, s_n, 4);
    bool *mine = malloc((size_t)d_n);
    for (int act = 0; act < 3; act++) {
        for (long i = 0; i < d_n; i++)
            dst[i] = PAD_SENTINEL;
        memset(mine, 0, (size_t)d_n);
        ttrt_reblock(src, scb, sha, swa, 0, 0, 1, dst, dcb, dha, dwa, dtop, dleft, 1, N, C, H, W,
                     act == 1 ? shift : NULL, act, -0.5f, 0.75f);
        long written = 0;
        for (long n = 0; n < N; n++)
            for (long c = 0; c < C; c++)
                for (long y = 0; y < H; y++)
                    for (long x = 0; x < W; x++) {
                        double v = src[blk(n, c, y, x, C, scb, sha, swa, 0, 0, 1)] + (act == 1 ? shift[c] : 0);
                        if (act == 1) v = v > 0 ? v : 0;
                        if (act == 2) v = v < -0.5 ? -0.5 : v > 0.75 ? 0.75 : v;
                        CHECK_NEAR(dst[blk(n, c, y, x, C, dcb, dha, dwa, dtop, dleft, 1)], v, 1e-6);
                        mine[blk(n, c, y, x, C, dcb, dha, dwa, dtop, dleft, 1)] = true;
                        written++;
                    }
        /* everything else (padding, channels past C) is untouched: still the sentinel, exactly */
        long touched = 0;
        for (long i = 0; i < d_n; i++)
            touched += !mine[i] && dst[i] != PAD_SENTINEL;
        CHECK_EQ_INT(touched, 0);
        CHECK(written > 0 && written < d_n);
    }
    free(mine);
    free(src);
    free(dst);
}

/* index of blocked channel bc (not canonical) at (n, y, x) */
static long at(const ttrt_layout *l, long C, long n, long bc, long y, long x) {
    long blocks = (C * l->repeat + l->cb - 1) / l->cb;
    return (((n * blocks + bc / l->cb) * l->h_alloc + y + l->top) * l->w_alloc + x + l->left) * l->cb + bc % l->cb;
}

static long floats(const ttrt_layout *l, long N, long C) {
    return N * ((C * l->repeat + l->cb - 1) / l->cb) * l->h_alloc * l->w_alloc * l->cb;
}

/* ttrt_move between every pair of layouts (NCHW, blocked without and with
 * padding, a channel multiplier, and the same block size on both sides, whose
 * path is the fast one), with scale, shift, a residual in a third layout and
 * each activation; and max pooling between layouts */
TEST(test_move_layouts) {
    const long N = 2, C = 5, H = 3, W = 4;
    const ttrt_layout L[] = {{1, H, W, 0, 0, 1},
                             {4, H, 6, 0, 0, 1},
                             {8, H + 2, W + 4, 1, 1, 1},
                             {4, H, W, 0, 0, 2},
                             {4, H + 2, W + 2, 1, 1, 1}};
    const int NL = (int)(sizeof L / sizeof L[0]);
    float scale[5] = {1.5f, -0.5f, 2.0f, 0.25f, 1.0f}, shift[5] = {0.5f, -0.25f, 1.0f, -2.0f, 0.0f};
    for (int a = 0; a < NL; a++)
        for (int b = 0; b < NL; b++)
            for (int mode = 0; mode < 4; mode++) {
                const ttrt_layout *lx = &L[a], *ly = &L[b], *lr = &L[(a + b + mode) % NL];
                long nx = floats(lx, N, C), ny = floats(ly, N, C), nr = floats(lr, N, C);
                float *x = malloc((size_t)nx * sizeof(float)), *y = malloc((size_t)ny * sizeof(float));
                bool *mine = calloc((size_t)ny, 1);
                for (long i = 0; i < ny; i++)
                    y[i] = PAD_SENTINEL;
                float *r = malloc((size_t)nr * sizeof(float));
                randomize(x, nx, 7 + (uint64_t)a);
                randomize(r, nr, 9 + (uint64_t)b);
                int act = mode % 3;
                bool with_res = mode >= 2, affine = mode != 0;
                ttrt_move(x, lx, with_res ? r : NULL, lr, y, ly, N, C, H, W, affine ? scale : NULL,
                          affine ? shift : NULL, act, -0.5f, 0.75f);
                long written = 0;
                for (long n = 0; n < N; n++)
                    for (long c = 0; c < C; c++)
                        for (long yy = 0; yy < H; yy++)
                            for (long xx = 0; xx < W; xx++) {
                                double v = x[at(lx, C, n, c * lx->repeat, yy, xx)];
                                if (affine) v = v * scale[c] + shift[c];
                                if (with_res) v += r[at(lr, C, n, c * lr->repeat, yy, xx)];
                                if (act == 1) v = v > 0 ? v : 0;
                                if (act == 2) v = v < -0.5 ? -0.5 : v > 0.75 ? 0.75 : v;
                                for (long k = 0; k < ly->repeat; k++) {
                                    CHECK_NEAR(y[at(ly, C, n, c * ly->repeat + k, yy, xx)], v, 1e-5);
                                    mine[at(ly, C, n, c * ly->repeat + k, yy, xx)] = true;
                                    written++;
                                }
                            }
                long touched = 0;
                for (long i = 0; i < ny; i++)
                    touched += !mine[i] && y[i] != PAD_SENTINEL;
                CHECK_EQ_INT(touched, 0); /* padding and channels past C untouched, exactly */
                CHECK(written > 0 && written <= ny);
                free(mine);
                /* max pooling 2x2 stride 1 pad 1 -> 4 x 5, from x's layout into y's (output extents) */
                const long OH = H + 1, OW = W + 1;
                ttrt_layout lo = *ly;
                if (lo.h_alloc < OH + 2 * lo.top) lo.h_alloc = OH + 2 * lo.top;
                if (lo.w_alloc < OW + 2 * lo.left) lo.w_alloc = OW + 2 * lo.left;
                long no = floats(&lo, N, C);
                float *p = calloc((size_t)no, sizeof(float));
                ttrt_max_pool_layout(x, lx, p, &lo, N, C, H, W, OH, OW, 2, 1, 1);
                for (long n = 0; n < N; n++)
                    for (long c = 0; c < C; c++)
                        for (long oy = 0; oy < OH; oy++)
                            for (long ox = 0; ox < OW; ox++) {
                                float m = -3.0e38f;
                                for (long i = oy - 1; i <= oy; i++)
                                    for (long j = ox - 1; j <= ox; j++)
                                        if (i >= 0 && i < H && j >= 0 && j < W &&
                                            x[at(lx, C, n, c * lx->repeat, i, j)] > m)
                                            m = x[at(lx, C, n, c * lx->repeat, i, j)];
                                for (long k = 0; k < lo.repeat; k++)
                                    CHECK_NEAR(p[at(&lo, C, n, c * lo.repeat + k, oy, ox)], m, 0);
                            }
                free(p);
                free(x);
                free(y);
                free(r);
            }
}

int main(void) {
    RUN(test_runtime_ops);
    RUN(test_reblock);
    RUN(test_move_layouts);
    RUN(test_reference_tunable_ops);
    return check_summary();
}
