/* kernels/templates/cpu/gemm_cpu.c: dense (out = data * weight^T [+ bias] [relu]) and
 * batch_matmul (out[b] = a[b] * b[b]^T) on the CPU, BLIS-style.
 *
 * The right operand is packed into panels of NR = nr_vec * VF columns,
 * [batch][n / NR][k][NR] (zero padded past n): once in tt_setup for dense
 * (weights are constant, as in a deployed model), in tt_pack for
 * batch_matmul (both operands are data; packing is timed apart). The left
 * operand is read in place. An MR x NR register micro-kernel (broadcast one
 * element of each of MR rows, FMA into MR x nr_vec accumulators) runs over a
 * k block of KC; loops over n blocks (NC panels), k blocks and m blocks (MC
 * rows) give the cache blocking, and OpenMP splits (m block, n panel) pairs.
 * Row tails (m % MR) get their own micro-kernel; the last, partial n panel
 * goes through a small tile buffer, so no store ever passes the end of a row.
 *
 * Knobs: mr, nr_vec, kc, nc (panels per n block), mc (rows per m block),
 * order (m blocks outside or inside n panels), unroll_k. */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "kernels/template.h"
#include "kernels/templates/cpu/cpu_gen.h"

typedef struct GemmPlan {
    int vf, vregs;
    bool batched, bias, relu;
    int64_t B, M, N, K;
    int64_t MR, NRV, NR, NP, KC, NCB, MC, MT;
    int order, unroll_k;
} GemmPlan;

static const int64_t MR_VALUES[] = {1, 2, 3, 4, 6, 8, 12, 14};
static const int64_t NR_VEC[] = {1, 2, 3, 4};
static const int64_t KC_VALUES[] = {32, 64, 128, 256, 512};
static const int64_t NC_VALUES[] = {1, 4, 16, 64};    /* n block, in panels */
static const int64_t MC_VALUES[] = {8, 32, 128, 512}; /* m block, in rows (rounded up to a multiple of mr) */

/* The values below `whole` plus the smallest one >= whole (they all mean "the
 * whole extent"), so that a small extent does not fill the space with duplicates. */
static int gemm_blockValues(const int64_t *in, int n, int64_t whole, int64_t *out) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (in[i] < whole)
            out[m++] = in[i];
        else {
            out[m++] = in[i];
            break;
        }
    }
    return m;
}
static const int64_t UNROLL_K[] = {1, 2, 4, 8};

static bool dense_applies(const Workload *wl) { return wl->op == OP_DENSE; }
static bool bmm_applies(const Workload *wl) { return wl->op == OP_BATCH_MATMUL; }

static Status gemm_defineSpace(const Workload *wl, const DeviceInfo *dev, Space *space, char *err) {
    int vf = CpuGen_vf(dev);
    if (wl->m <= 0 || wl->n <= 0 || wl->k <= 0)
        return tt_fail(err, "%s: degenerate extents (m, n, k)", Op_name(wl->op));
    int64_t vals[OPTION_MAX_VALUES];
    int n = CpuGen_filterLE(MR_VALUES, 8, wl->m, vals);
    if (Space_addOption(space, "mr", vals, n, err) != TT_OK) return TT_ERR;
    n = CpuGen_filterLE(NR_VEC, 4, (wl->n + vf - 1) / vf, vals);
    if (Space_addOption(space, "nr_vec", vals, n, err) != TT_OK) return TT_ERR;
    n = 0;
    for (int i = 0; i < 5; i++)
        if (KC_VALUES[i] < wl->k) vals[n++] = KC_VALUES[i];
    vals[n++] = wl->k; /* no k blocking */
    if (Space_addOption(space, "kc", vals, n, err) != TT_OK) return TT_ERR;
    n = gemm_blockValues(NC_VALUES, 4, (wl->n + vf - 1) / vf, vals);
    if (Space_addOption(space, "nc", vals, n, err) != TT_OK) return TT_ERR;
    n = gemm_blockValues(MC_VALUES, 4, wl->m, vals);
    if (Space_addOption(space, "mc", vals, n, err) != TT_OK) return TT_ERR;
    const int64_t two[] = {0, 1};
    if (Space_addOption(space, "order", two, 2, err) != TT_OK) return TT_ERR;
    return Space_addOption(space, "unroll_k", UNROLL_K, 4, err);
}

static void gemm_plan(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                      GemmPlan *p) {
    memset(p, 0, sizeof *p);
    p->vf = CpuGen_vf(dev);
    p->vregs = CpuGen_vregs(dev);
    p->batched = wl->op == OP_BATCH_MATMUL;
    p->bias = !p->batched && wl->bias;
    p->relu = !p->batched && wl->relu;
    p->B = p->batched ? wl->b : 1;
    p->M = wl->m, p->N = wl->n, p->K = wl->k;
    p->MR = Space_optionByName(space, choice, "mr");
    p->NRV = Space_optionByName(space, choice, "nr_vec");
    p->NR = p->NRV * p->vf;
    p->NP = (p->N + p->NR - 1) / p->NR;
    p->KC = Space_optionByName(space, choice, "kc");
    p->NCB = Space_optionByName(space, choice, "nc");
    int64_t mc_rows = Space_optionByName(space, choice, "mc");
    p->MC = (mc_rows + p->MR - 1) / p->MR * p->MR;
    p->MT = p->M % p->MR;
    p->order = (int)Space_optionByName(space, choice, "order");
    p->unroll_k = (int)Space_optionByName(space, choice, "unroll_k");
}

/* accumulators + the B vectors of one k step (the A broadcast is not counted:
 * one over budget costs a single spilled accumulator, see conv2d_cpu.c) */
static int gemm_regsNeeded(const GemmPlan *p) { return (int)(p->MR * p->NRV + p->NRV); }

static bool gemm_precheck(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                          char *reason, size_t n) {
    GemmPlan p;
    gemm_plan(wl, space, choice, dev, &p);
    int regs = gemm_regsNeeded(&p);
    if (regs > p.vregs) {
        snprintf(reason, n, "register tile %lldx%lld vectors needs %d vector registers > %d", (long long)p.MR,
                 (long long)p.NRV, regs, p.vregs);
        return false;
    }
    return true;
}

/* The micro-kernel for `rows` rows: c[rows][NR] (+)= a[rows][kc] * b[kc][NR]. */
static void gemm_emitMicro(StrBuf *sb, const GemmPlan *p, int rows) {
    StrBuf_printf(sb,
                  "static inline __attribute__((always_inline)) void mk%d(int kc, const float *restrict a,"
                  " const float *restrict b, float *restrict c, long ldc, int first, int last,"
                  " const float *restrict bias) {\n",
                  rows);
    for (int i = 0; i < rows; i++) {
        StrBuf_append(sb, "vf");
        for (int j = 0; j < p->NRV; j++)
            StrBuf_printf(sb, "%s c%d_%d = {0}", j ? "," : "", i, j);
        StrBuf_append(sb, ";\n");
    }
    StrBuf_printf(sb, "#pragma GCC unroll %d\nfor (int k = 0; k < kc; k++) {\n", p->unroll_k);
    for (int j = 0; j < p->NRV; j++)
        StrBuf_printf(sb, "vf b%d = LD(b + (size_t)k * NR + %d);\n", j, j * p->vf);
    for (int i = 0; i < rows; i++) {
        StrBuf_printf(sb, "{ float x = a[(size_t)%d * K + k];", i);
        for (int j = 0; j < p->NRV; j++)
            StrBuf_printf(sb, " c%d_%d += b%d * x;", i, j, j);
        StrBuf_append(sb, " }\n");
    }
    StrBuf_append(sb, "}\nif (first) {\n");
    if (p->bias)
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < p->NRV; j++)
                StrBuf_printf(sb, "c%d_%d += LD(bias + %d);\n", i, j, j * p->vf);
    StrBuf_append(sb, "} else {\n");
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < p->NRV; j++)
            StrBuf_printf(sb, "c%d_%d += LD(c + %d * ldc + %d);\n", i, j, i, j * p->vf);
    StrBuf_append(sb, "}\n");
    if (p->relu) {
        StrBuf_append(sb, "if (last) {\n");
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < p->NRV; j++)
                StrBuf_printf(sb, "c%d_%d = RELU(c%d_%d);\n", i, j, i, j);
        StrBuf_append(sb, "}\n");
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < p->NRV; j++)
            StrBuf_printf(sb, "ST(c + %d * ldc + %d, c%d_%d);\n", i, j * p->vf, i, j);
    StrBuf_append(sb, "(void)last; (void)bias;\n}\n");
}

static void gemm_emitPackB(StrBuf *sb, const char *src) {
    StrBuf_printf(sb,
                  "    const float *bsrc = %s;\n"
                  "#pragma omp parallel for collapse(2) schedule(static)\n"
                  "    for (int bt = 0; bt < BATCH; bt++) for (int j = 0; j < N; j++) {\n"
                  "        const float *sp = bsrc + ((size_t)bt * N + j) * K;\n"
                  "        float *dp = s->bp + ((size_t)bt * NP + j / NR) * K * NR + j %% NR;\n"
                  "        for (int k = 0; k < K; k++) dp[(size_t)k * NR] = sp[k];\n"
                  "    }\n",
                  src);
}

static Status gemm_generate(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                            Dialect dialect, KernelSource *out, char *err) {
    if (dialect != DIALECT_C) return tt_fail(err, "%s cpu template generates C only", Op_name(wl->op));
    GemmPlan p;
    gemm_plan(wl, space, choice, dev, &p);
    int ai_bias = p.bias ? 2 : -1; /* abi.h order; no residual */
    int ai_out = p.bias ? 3 : 2;

    StrBuf sb;
    CpuGen_begin(&sb, p.batched ? "batch_matmul_panel.cpu" : "dense_panel.cpu", space, choice, p.vf);
    CpuGen_defines(&sb, "BATCH M N K MR NR NP KC NCB MC MBLK", p.B, p.M, p.N, p.K, p.MR, p.NR, p.NP, p.KC, p.NCB, p.MC,
                   ((p.M + p.MC - 1) / p.MC));
    StrBuf_append(&sb, "typedef struct St { float **args; float *bp, *bias; } St;\n");
    gemm_emitMicro(&sb, &p, (int)p.MR);
    if (p.MT) gemm_emitMicro(&sb, &p, (int)p.MT);

    /* setup / pack / finish / teardown */
    CpuGen_beginHelpers(&sb);
    StrBuf_append(&sb, "int tt_setup(float **args, void **state) {\n"
                       "    St *s = calloc(1, sizeof *s);\n    if (!s) return 1;\n    s->args = args;\n"
                       "    s->bp = tt_alloc((size_t)BATCH * NP * K * NR);\n"
                       "    s->bias = tt_alloc((size_t)NP * NR);\n"
                       "    *state = s;\n    if (!s->bp || !s->bias) return 2;\n");
    if (ai_bias >= 0) StrBuf_printf(&sb, "    memcpy(s->bias, args[%d], N * sizeof(float));\n", ai_bias);
    if (!p.batched) gemm_emitPackB(&sb, "args[1]");
    StrBuf_append(&sb, "    return 0;\n}\n"
                       "void tt_teardown(void *sv) {\n    St *s = sv;\n    if (!s) return;\n"
                       "    free(s->bp); free(s->bias); free(s);\n}\n"
                       "void tt_finish(void *sv) { (void)sv; }\n"
                       "void tt_pack(void *sv) {\n    St *s = sv;\n    (void)s;\n");
    if (p.batched) gemm_emitPackB(&sb, "s->args[1]");
    StrBuf_append(&sb, "}\n");
    CpuGen_endHelpers(&sb);

    /* one (m block, n panel) pair of a k block */
    StrBuf_printf(&sb,
                  "static void tile(const St *s, int bt, int i0, int jp, int pc, int kc, int first, int last) {\n"
                  "    const float *bpan = s->bp + ((size_t)bt * NP + jp) * K * NR + (size_t)pc * NR;\n"
                  "    const float *bias = s->bias + (size_t)jp * NR;\n"
                  "    const float *A = s->args[0] + (size_t)bt * M * K + pc;\n"
                  "    float *C = s->args[%d] + (size_t)bt * M * N + (size_t)jp * NR;\n"
                  "    int i1 = MIN(i0 + MC, M);\n"
                  "    int nv = MIN(NR, N - jp * NR);\n"
                  "    for (int i = i0; i < i1; i += MR) {\n"
                  "        int rows = MIN(MR, i1 - i);\n"
                  "        const float *a = A + (size_t)i * K;\n"
                  "        float *c = C + (size_t)i * N;\n"
                  "        if (nv == NR) {\n"
                  "            if (rows == MR) mk%lld(kc, a, bpan, c, N, first, last, bias);\n",
                  ai_out, (long long)p.MR);
    if (p.MT) StrBuf_printf(&sb, "            else mk%lld(kc, a, bpan, c, N, first, last, bias);\n", (long long)p.MT);
    StrBuf_printf(&sb,
                  "        } else {\n"
                  "            float t[MR * NR];\n"
                  "            if (!first) for (int r = 0; r < rows; r++) memcpy(t + r * NR, c + (size_t)r * N, nv * "
                  "sizeof(float));\n"
                  "            if (rows == MR) mk%lld(kc, a, bpan, t, NR, first, last, bias);\n",
                  (long long)p.MR);
    if (p.MT) StrBuf_printf(&sb, "            else mk%lld(kc, a, bpan, t, NR, first, last, bias);\n", (long long)p.MT);
    StrBuf_append(
        &sb, "            for (int r = 0; r < rows; r++) memcpy(c + (size_t)r * N, t + r * NR, nv * sizeof(float));\n"
             "        }\n    }\n}\n");

    /* One parallel region per call. Every thread walks the block loops; the
     * worksharing loop has the same trip count and static schedule for every
     * k block of an n block, so OpenMP gives each thread the same tiles each
     * time and the k blocks of a tile stay in order without a barrier (nowait). */
    StrBuf_append(&sb, "void tt_run(void *sv) {\n    const St *s = sv;\n"
                       "#pragma omp parallel\n"
                       "    for (int bt = 0; bt < BATCH; bt++)\n"
                       "    for (int jc = 0; jc < NP; jc += NCB)\n"
                       "    for (int pc = 0; pc < K; pc += KC) {\n"
                       "        int kc = MIN(KC, K - pc), first = pc == 0, last = pc + kc >= K;\n"
                       "        int jn = MIN(NCB, NP - jc);\n"
                       "#pragma omp for collapse(2) schedule(static) nowait\n");
    if (p.order == 0)
        StrBuf_append(&sb, "        for (int ib = 0; ib < MBLK; ib++) for (int jr = 0; jr < jn; jr++)\n");
    else
        StrBuf_append(&sb, "        for (int jr = 0; jr < jn; jr++) for (int ib = 0; ib < MBLK; ib++)\n");
    StrBuf_append(&sb, "            tile(s, bt, ib * MC, jc + jr, pc, kc, first, last);\n    }\n}\n");

    CpuGen_finish(&sb, out);
    return TT_OK;
}

static int gemm_features(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                         float *out, int cap) {
    GemmPlan p;
    gemm_plan(wl, space, choice, dev, &p);
    double f = 4.0;
    int64_t kc = p.KC < p.K ? p.KC : p.K;
    int64_t nc = p.NCB < p.NP ? p.NCB : p.NP;
    int64_t mc = p.MC < p.M ? p.MC : p.M;
    double l1 = f * (p.MR * kc + kc * p.NR);                         /* one micro-kernel call */
    double l2 = f * (mc * kc + kc * p.NR * (p.order == 0 ? nc : 1)); /* reused block */
    double l3 = f * (p.M * p.K + p.NP * p.NR * p.K + p.M * p.N);
    float v[] = {
        (float)(p.MR * p.NRV),
        (float)gemm_regsNeeded(&p),
        (float)p.vf,
        (float)p.NR,
        (float)p.MR,
        (float)kc,
        (float)p.unroll_k,
        CpuGen_log2p(l1),
        CpuGen_log2p(l2),
        CpuGen_log2p(l3),
        l1 <= CPU_L1_BYTES ? 1.0f : 0.0f,
        l2 <= CPU_L2_BYTES ? 1.0f : 0.0f,
        (float)((double)(p.NP * p.NR) / (double)p.N), /* padded columns */
        (float)(p.MT ? 1 : 0),
        (float)(((p.M + p.MC - 1) / p.MC) * nc), /* parallel iterations per k block */
    };
    return CpuGen_copyFeatures(v, (int)(sizeof v / sizeof v[0]), out, cap);
}

/* The micro-kernel of the zero-trial default: the most accumulators that fit
 * the vector registers (gemm_regsNeeded), discounted by the padding of the
 * last n panel and by loads: each k step loads nr_vec vectors and broadcasts
 * mr floats for mr x nr_vec FMAs, and below ~1.5 FMAs per load the loads
 * bound it (14 x 1 loses to 6 x 2). On a tie, two vectors of columns. On
 * AVX2 that is 6 x 2 (the BLIS 6 x 16 kernel), on AVX-512 14 x 2. */
static void gemm_defaultTile(const Space *space, int vf, int vregs, int64_t n, int64_t *mr_out, int64_t *nrv_out) {
    const int64_t *mrs, *nrvs;
    int n_mr = CpuGen_values(space, "mr", &mrs), n_nrv = CpuGen_values(space, "nr_vec", &nrvs);
    double best = -1;
    *mr_out = mrs[0], *nrv_out = nrvs[0];
    for (int i = 0; i < n_mr; i++)
        for (int j = 0; j < n_nrv; j++) {
            int64_t mr = mrs[i], nrv = nrvs[j], nr = nrv * vf;
            if (mr * nrv + nrv > vregs) continue;
            double acc = (double)(mr * nrv);
            double per_load = acc / (double)(mr + nrv) / 1.5;
            double eff_n = (double)n / (double)((n + nr - 1) / nr * nr);
            double score = acc * (per_load < 1 ? per_load : 1) * eff_n * (nrv == CPU_DEFAULT_BLOCK_VECS ? 1.05 : 1.0);
            if (score > best) best = score, *mr_out = mr, *nrv_out = nrv;
        }
}

/* Zero-trial default (Template.default_config): the micro-kernel above; a k
 * block whose B panel (kc x NR) fills half the L1; an m block whose A block
 * (mc x kc) takes a quarter of the L2 and an n block whose B panels take
 * half of it; the m block shrunk until the (m block, n panel) pairs give
 * every core at least two; k unrolled by 4 (2 for the largest tiles). */
static Status gemm_defaultConfig(const Workload *wl, const Space *space, const DeviceInfo *dev, int32_t *choice,
                                 char *err) {
    int vf = CpuGen_vf(dev), vregs = CpuGen_vregs(dev);
    int cores = dev && dev->cores > 0 ? dev->cores : 1;
    int64_t mr, nrv;
    CpuGen_clearChoice(space, choice);
    gemm_defaultTile(space, vf, vregs, wl->n, &mr, &nrv);
    CpuGen_pick(space, choice, "mr", mr);
    CpuGen_pick(space, choice, "nr_vec", nrv);
    int64_t nr = nrv * vf;
    CpuGen_pick(space, choice, "kc", CPU_L1_BYTES / 2 / (4 * nr));
    int64_t kc = Space_optionByName(space, choice, "kc");
    CpuGen_pick(space, choice, "nc", CPU_L2_BYTES / 2 / (4 * kc * nr));
    int64_t np = (wl->n + nr - 1) / nr, nc = Space_optionByName(space, choice, "nc");
    int64_t jn = nc < np ? nc : np;
    const int64_t *mcs;
    int n_mc = CpuGen_values(space, "mc", &mcs);
    CpuGen_pick(space, choice, "mc", CPU_L2_BYTES / 4 / (4 * kc));
    for (int i = n_mc - 1; i >= 0; i--) { /* from the largest that fits the L2 down */
        int64_t rows = (mcs[i] + mr - 1) / mr * mr;
        if (mcs[i] > Space_optionByName(space, choice, "mc")) continue;
        CpuGen_pick(space, choice, "mc", mcs[i]);
        if ((wl->m + rows - 1) / rows * jn >= 2 * cores) break;
    }
    CpuGen_pick(space, choice, "unroll_k", mr * nrv <= 16 ? 4 : 2);
    char reason[TT_ERRLEN];
    if (!gemm_precheck(wl, space, choice, dev, reason, sizeof reason))
        return tt_fail(err, "%s default: %s", Op_name(wl->op), reason);
    return TT_OK;
}

const Template tmpl_dense_cpu = {
    .name = "dense_panel.cpu",
    .op = OP_DENSE,
    .family = FAMILY_CPU,
    .applies = dense_applies,
    .define_space = gemm_defineSpace,
    .precheck = gemm_precheck,
    .default_config = gemm_defaultConfig,
    .generate = gemm_generate,
    .features = gemm_features,
};

const Template tmpl_batch_matmul_cpu = {
    .name = "batch_matmul_panel.cpu",
    .op = OP_BATCH_MATMUL,
    .family = FAMILY_CPU,
    .applies = bmm_applies,
    .define_space = gemm_defineSpace,
    .precheck = gemm_precheck,
    .default_config = gemm_defaultConfig,
    .generate = gemm_generate,
    .features = gemm_features,
};
