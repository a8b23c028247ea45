/* kernels/templates/gpu/dense_gpu.c: dense (out[m][n] = sum_k data[m][k] * weight[n][k])
 * for GPUs, in two shapes:
 *
 *  - small batch (m < 32): every output needs a long dot product and there are
 *    few of them, so the reduction is spread over threads. tile_k = [ko, ki]:
 *    ki threads along x each sum a strided share of k, with the data row's
 *    chunk of ki values staged in shared memory per ko step (all rows of the
 *    block reuse it); tile_n = [nb, nt]: nt outputs per block along y. The
 *    partial sums meet in a shared-memory tree reduction.
 *  - large batch (m >= 32): a 2-D register-tiled GEMM. tile_y (m) and tile_x
 *    (n) are split block / virtual thread / thread / inner; tile_k = [ko, km,
 *    ki] stages km * ki columns of both operands in shared memory per ko step.
 *
 * Both have auto_unroll_max_step {0, 512, 1500} and unroll_explicit {0, 1};
 * optional fused bias and relu. */
#include <stdio.h>

#include "kernels/templates/gpu/gpu.h"

#define LARGE_BATCH 32
#define L(v) ((long long)(v))

typedef struct Dense {
    int64_t M, N, K;
    bool large;
    GpuUnroll unroll;
    /* small */
    int64_t k2[2], n2[2];
    /* large */
    int64_t y[4], x[4], k3[3], MB, NB, KT, VT, AY, AX;
} Dense;

static bool dense_applies(const Workload *wl) { return wl->op == OP_DENSE; }

static Status dense_space(const Workload *wl, const DeviceInfo *dev, Space *s, char *err) {
    static const int64_t UNROLL[] = {0, 512, 1500}, EXPL[] = {0, 1};
    if (wl->m < LARGE_BATCH) {
        if (Space_addSplit(s, "tile_k", wl->k, 2, SPLIT_FACTORS, 0, err) ||
            Space_addSplit(s, "tile_n", wl->n, 2, SPLIT_FACTORS, 0, err))
            return TT_ERR;
    } else {
        if (Space_addSplit(s, "tile_y", wl->m, 4, SPLIT_FACTORS, 0, err) ||
            Space_addSplit(s, "tile_x", wl->n, 4, SPLIT_FACTORS, 0, err) ||
            Space_addSplit(s, "tile_k", wl->k, 3, SPLIT_FACTORS, 0, err))
            return TT_ERR;
    }
    if (Space_addOption(s, "auto_unroll_max_step", UNROLL, 3, err) ||
        Space_addOption(s, "unroll_explicit", EXPL, 2, err))
        return TT_ERR;
    return TT_OK;
}

static void dense_load(Dense *d, const Workload *wl, const Space *s, const int32_t *choice) {
    d->M = wl->m, d->N = wl->n, d->K = wl->k;
    d->large = wl->m >= LARGE_BATCH;
    d->unroll.max_step = Space_optionByName(s, choice, "auto_unroll_max_step");
    d->unroll.explicit_ = Space_optionByName(s, choice, "unroll_explicit") != 0;
    if (!d->large) {
        const int64_t *v = Space_splitByName(s, choice, "tile_k");
        d->k2[0] = v[0], d->k2[1] = v[1];
        v = Space_splitByName(s, choice, "tile_n");
        d->n2[0] = v[0], d->n2[1] = v[1];
        return;
    }
    const int64_t *v = Space_splitByName(s, choice, "tile_y");
    for (int i = 0; i < 4; i++)
        d->y[i] = v[i];
    v = Space_splitByName(s, choice, "tile_x");
    for (int i = 0; i < 4; i++)
        d->x[i] = v[i];
    v = Space_splitByName(s, choice, "tile_k");
    for (int i = 0; i < 3; i++)
        d->k3[i] = v[i];
    d->MB = d->y[1] * d->y[2] * d->y[3];
    d->NB = d->x[1] * d->x[2] * d->x[3];
    d->KT = d->k3[1] * d->k3[2];
    d->VT = d->y[1] * d->x[1];
    d->AY = d->y[1] * d->y[3];
    d->AX = d->x[1] * d->x[3];
}

static void dense_geometry(const Dense *d, int64_t grid[3], int64_t block[3], int64_t *shared, int64_t *vthreads,
                           int64_t *tile) {
    if (!d->large) {
        block[0] = d->k2[1], block[1] = d->n2[1], block[2] = 1;
        grid[0] = d->n2[0], grid[1] = d->M, grid[2] = 1;
        *shared = 4 * (d->k2[1] + d->n2[1] * d->k2[1]);
        *vthreads = 1;
        *tile = 1;
        return;
    }
    block[0] = d->x[2], block[1] = d->y[2], block[2] = 1;
    grid[0] = d->x[0], grid[1] = d->y[0], grid[2] = 1;
    *shared = 4 * (d->MB + d->NB) * d->KT;
    *vthreads = d->VT;
    *tile = d->AY * d->AX;
}

static bool dense_precheck(const Workload *wl, const Space *s, const int32_t *choice, const DeviceInfo *dev,
                           char *reason, size_t n) {
    Dense d;
    dense_load(&d, wl, s, choice);
    int64_t grid[3], block[3], shared, vt, tile;
    dense_geometry(&d, grid, block, &shared, &vt, &tile);
    return Gpu_checkLaunch(dev, block, vt, grid, shared, 4 * tile, reason, n);
}

static void gen_small(StrBuf *sb, const Dense *d, const Workload *wl) {
    int64_t KI = d->k2[1], NT = d->n2[1];
    StrBuf body;
    StrBuf_init(&body);
    StrBuf_printf(sb, "TT_KERNEL(%lld, %lld, 1) tt_dense", L(KI), L(NT));
    Gpu_appendParams(sb, wl);
    StrBuf_append(sb, " {\n");
    StrBuf_printf(sb, "    SHARED float As[%lld];\n", L(KI));
    StrBuf_printf(sb, "    SHARED float red[%lld];\n", L(NT * KI));
    StrBuf_append(sb, "    const int tx = TIDX_X, ty = TIDX_Y;\n");
    StrBuf_printf(sb, "    const int row = BIDX_Y, n = BIDX_X * %lld + ty;\n", L(NT));
    StrBuf_printf(sb, "    GLOBAL const float *a = data + row * %lld;\n", L(d->K));
    StrBuf_printf(sb, "    GLOBAL const float *b = weight + n * %lld;\n", L(d->K));
    StrBuf_append(sb, "    float part = 0.0f;\n");
    /* ty == 0 fetches the shared chunk of the data row; the barrier before it
     * keeps the previous chunk alive until every thread has used it. */
    StrBuf_printf(&body,
                  "BARRIER();\n"
                  "if (ty == 0) As[tx] = a[ko * %lld + tx];\n"
                  "BARRIER();\n"
                  "part += As[tx] * b[ko * %lld + tx];",
                  L(KI), L(KI));
    GpuLoop ko[] = {{"ko", d->k2[0]}};
    Gpu_emitNest(sb, ko, 1, body.data, &d->unroll, 1);
    StrBuf_printf(sb, "    red[ty * %lld + tx] = part;\n", L(KI));
    StrBuf_append(sb, "    BARRIER();\n");
    int64_t p = 1;
    while (p < KI)
        p *= 2;
    for (int64_t s = p / 2; s > 0; s /= 2) {
        StrBuf_printf(sb, "    if (tx < %lld && tx + %lld < %lld) red[ty * %lld + tx] += red[ty * %lld + tx + %lld];\n",
                      L(s), L(s), L(KI), L(KI), L(KI), L(s));
        StrBuf_append(sb, "    BARRIER();\n");
    }
    StrBuf_printf(sb, "    if (tx == 0) {\n        float v = red[ty * %lld];\n", L(KI));
    StrBuf_clear(&body);
    Gpu_appendFused(&body, wl, "n");
    Gpu_emitNest(sb, NULL, 0, body.data, NULL, 2);
    StrBuf_printf(sb, "        out[row * %lld + n] = v;\n    }\n}\n", L(d->N));
    StrBuf_done(&body);
}

static void gen_large(StrBuf *sb, const Dense *d, const Workload *wl) {
    StrBuf body;
    StrBuf_init(&body);
    int64_t NTH = d->x[2] * d->y[2];
    StrBuf_printf(sb, "TT_KERNEL(%lld, %lld, 1) tt_dense", L(d->x[2]), L(d->y[2]));
    Gpu_appendParams(sb, wl);
    StrBuf_append(sb, " {\n");
    StrBuf_printf(sb, "    SHARED float As[%lld];\n", L(d->MB * d->KT));
    StrBuf_printf(sb, "    SHARED float Bs[%lld];\n", L(d->NB * d->KT));
    StrBuf_printf(sb, "    float acc[%lld];\n", L(d->AY * d->AX));
    StrBuf_append(sb, "    const int tx = TIDX_X, ty = TIDX_Y;\n");
    StrBuf_printf(sb, "    const int tid = ty * %lld + tx;\n", L(d->x[2]));
    StrBuf_printf(sb, "    const int m0 = BIDX_Y * %lld, n0 = BIDX_X * %lld;\n", L(d->MB), L(d->NB));
    GpuLoop init[] = {{"i", d->AY * d->AX}};
    Gpu_emitNest(sb, init, 1, "acc[i] = 0.0f;", &d->unroll, 1);
    StrBuf_printf(sb, "    for (int ko = 0; ko < %lld; ++ko) {\n", L(d->k3[0]));
    StrBuf_append(sb, "        BARRIER();\n");
    StrBuf_printf(sb, "        const int k0 = ko * %lld;\n", L(d->KT));
    StrBuf_printf(&body,
                  "const int i = k * %lld + tid;\n"
                  "if (i < %lld) As[i] = data[(m0 + i / %lld) * %lld + k0 + i %% %lld];",
                  L(NTH), L(d->MB * d->KT), L(d->KT), L(d->K), L(d->KT));
    GpuLoop fa[] = {{"k", (d->MB * d->KT + NTH - 1) / NTH}};
    Gpu_emitNest(sb, fa, 1, body.data, &d->unroll, 2);
    StrBuf_clear(&body);
    StrBuf_printf(&body,
                  "const int i = k * %lld + tid;\n"
                  "if (i < %lld) Bs[i] = weight[(n0 + i / %lld) * %lld + k0 + i %% %lld];",
                  L(NTH), L(d->NB * d->KT), L(d->KT), L(d->K), L(d->KT));
    GpuLoop fb[] = {{"k", (d->NB * d->KT + NTH - 1) / NTH}};
    Gpu_emitNest(sb, fb, 1, body.data, &d->unroll, 2);
    StrBuf_append(sb, "        BARRIER();\n");
    StrBuf_clear(&body);
    StrBuf_printf(&body,
                  "const int kk = km * %lld + ki;\n"
                  "const int ml = vy * %lld + ty * %lld + yi;\n"
                  "const int nl = vx * %lld + tx * %lld + xi;\n"
                  "acc[(vy * %lld + yi) * %lld + vx * %lld + xi] += As[ml * %lld + kk] * Bs[nl * %lld + kk];",
                  L(d->k3[2]), L(d->y[2] * d->y[3]), L(d->y[3]), L(d->x[2] * d->x[3]), L(d->x[3]), L(d->y[3]), L(d->AX),
                  L(d->x[3]), L(d->KT), L(d->KT));
    GpuLoop comp[] = {{"km", d->k3[1]}, {"ki", d->k3[2]}, {"vy", d->y[1]},
                      {"yi", d->y[3]},  {"vx", d->x[1]},  {"xi", d->x[3]}};
    Gpu_emitNest(sb, comp, 6, body.data, &d->unroll, 2);
    StrBuf_append(sb, "    }\n");
    StrBuf_clear(&body);
    StrBuf_printf(&body,
                  "const int m = m0 + vy * %lld + ty * %lld + yi;\n"
                  "const int n = n0 + vx * %lld + tx * %lld + xi;\n"
                  "float v = acc[(vy * %lld + yi) * %lld + vx * %lld + xi];\n",
                  L(d->y[2] * d->y[3]), L(d->y[3]), L(d->x[2] * d->x[3]), L(d->x[3]), L(d->y[3]), L(d->AX), L(d->x[3]));
    Gpu_appendFused(&body, wl, "n");
    StrBuf_printf(&body, "out[m * %lld + n] = v;", L(d->N));
    GpuLoop epi[] = {{"vy", d->y[1]}, {"yi", d->y[3]}, {"vx", d->x[1]}, {"xi", d->x[3]}};
    Gpu_emitNest(sb, epi, 4, body.data, &d->unroll, 1);
    StrBuf_append(sb, "}\n");
    StrBuf_done(&body);
}

static Status dense_generate(const Workload *wl, const Space *s, const int32_t *choice, const DeviceInfo *dev,
                             Dialect dialect, KernelSource *out, char *err) {
    Dense d;
    dense_load(&d, wl, s, choice);
    int64_t vt, tile;
    dense_geometry(&d, out->grid, out->block, &out->shared_bytes, &vt, &tile);
    snprintf(out->entry, sizeof out->entry, "tt_dense");
    StrBuf sb;
    StrBuf_init(&sb);
    StrBuf_append(&sb, Gpu_prelude(dialect));
    if (d.large)
        gen_large(&sb, &d, wl);
    else
        gen_small(&sb, &d, wl);
    out->source = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return TT_OK;
}

static int dense_features(const Workload *wl, const Space *s, const int32_t *choice, const DeviceInfo *dev, float *out,
                          int cap) {
    Dense d;
    dense_load(&d, wl, s, choice);
    int64_t grid[3], block[3], shared, vt, tile;
    dense_geometry(&d, grid, block, &shared, &vt, &tile);
    return Gpu_launchFeatures(block, vt, grid, shared, tile, out, cap);
}

const Template tmpl_dense_gpu = {
    .name = "dense.gpu",
    .op = OP_DENSE,
    .family = FAMILY_GPU,
    .applies = dense_applies,
    .define_space = dense_space,
    .precheck = dense_precheck,
    .generate = dense_generate,
    .features = dense_features,
};
