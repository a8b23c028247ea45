/* kernels/templates/cpu/conv2d_winograd_cpu.c: conv2d 3x3 stride 1 on the CPU by
 * Winograd's minimal filtering F(m x m, 3 x 3): each m x m output tile comes
 * from an a x a input tile (a = m + 2) with a^2 multiplies per channel pair
 * instead of 9 m^2, i.e. 2.25x (m = 2), 4x (m = 4), 5.06x (m = 6) fewer
 * multiply-adds than the direct convolution, paid for with transforms and a
 * larger rounding error (see Workload_compare's tolerance).
 *
 * Y = A^T [ (G g G^T) (.) (B^T d B) ] A, with the matrices built here from the
 * interpolation points 0, +-1, +-2, +-1/2 and infinity (Toom-Cook):
 *   A^T[i][j] = p_j^i,  G[j][k] = p_j^k / prod_{l != j} (p_j - p_l),
 *   B^T row j = coefficients of prod_{l != j} (x - p_l), the last row (infinity)
 *   those of prod_l (x - p_l); the infinity column of A^T and row of G pick
 *   the highest power.
 *
 * Layouts inside the kernel:
 *   input  [n][ceil(ci/VF)][th*m + 2 ...][tw*m + 2 ...][VF]   zero padded, packed in tt_pack
 *   U      [co/oc_bn][a*a][ci rounded to VF][oc_bn]            G g G^T, computed once in tt_setup
 *   V      [a*a][tiles rounded to the tile block][ci rounded]  B^T d B, in tt_run (phase 1)
 *   output [n][co/oc_bn][oh][tw*m][oc_bn]                      unpacked in tt_finish
 * tt_run: phase 1 transforms every input tile (vectors over VF channels);
 * phase 2, per (tile block, output-channel block), does a^2 small GEMMs
 * (tiles x ci by ci x oc_bn, a register tile of reg_n tiles x oc_vec vectors
 * as in the direct template) into a per-thread scratch, then the output
 * transform with bias, residual and ReLU, vectors over oc_bn channels.
 *
 * Knobs: m (2, 4, 6), oc_vec, reg_n (tiles in the register tile), tb (tile
 * block = reg_n * tb), order (parallel loop order of phase 2), unroll_ci,
 * xform (on more than one core: where the input transform happens).
 *
 * The parallel split. xform 0 (shared): phase 1 transforms every tile into V,
 * shared by the threads (split over channel blocks and tile rows), then a
 * barrier, then phase 2 splits the (tile block, output-channel block) pairs:
 * order 0 gives each thread a contiguous range of tile blocks (each its own
 * tiles, every weight), order 1 a range of output-channel blocks (its own
 * weights, every tile). xform 1 (per thread): one parallel loop over tile
 * blocks; the thread that owns a block transforms its input tiles into a
 * buffer of its own (a^2 x tb x ci, kept in its L2) and runs every
 * output-channel block's GEMMs and output transform from it: no barrier, no
 * shared V written by one core and read by the other, but the work splits
 * only over tile blocks (order is unused then). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "kernels/template.h"
#include "kernels/templates/cpu/conv2d_winograd_cpu.h"
#include "kernels/templates/cpu/cpu_gen.h"

#define WG_MAX_SCRATCH (1024 * 1024)    /* bytes of the per-thread GEMM result block */
#define WG_MAX_VLOCAL (2 * 1024 * 1024) /* bytes of a per-thread input transform block (xform 1) */
#define WG_MAX_UNROLLED_FMAS 512

typedef struct WgPlan {
    int vf, vregs;
    int64_t N, CI, H, W, CO, PH, PW, OH, OW;
    int64_t M, A, A2, TH, TW, T, TB, TP, CIP, CIB, OCV, OCB, OCC, RN, OWP, HP, WP;
    int order, unroll_ci;
    int xform; /* 0: one shared input-transform phase, 1: per thread, per tile block */
    bool nhwc, bias, relu, residual;
    int act; /* CpuGen_act */
} WgPlan;

static const int64_t WG_M[] = {2, 4, 6};
static const int64_t WG_REG_N[] = {1, 2, 3, 4, 6, 8, 12, 14};
static const int64_t WG_OC_VEC[] = {1, 2, 3, 4};
static const int64_t WG_TB[] = {1, 2, 4, 8};
static const int64_t WG_UNROLL[] = {1, 2, 4};

bool WinogradCpu_applies(const Workload *wl) {
    return wl->op == OP_CONV2D && wl->kh == 3 && wl->kw == 3 && wl->stride_h == 1 && wl->stride_w == 1 &&
           wl->dil_h == 1 && wl->dil_w == 1 && wl->h + 2 * wl->pad_h >= 3 && wl->w + 2 * wl->pad_w >= 3;
}

double WinogradCpu_minFlops(const Workload *wl) {
    int64_t oh = wl->h + 2 * wl->pad_h - 2, ow = wl->w + 2 * wl->pad_w - 2;
    double best = 0;
    for (int i = 0; i < (int)(sizeof WG_M / sizeof WG_M[0]); i++) {
        int64_t m = WG_M[i], a = m + 2;
        double tiles = (double)wl->n * (double)((oh + m - 1) / m) * (double)((ow + m - 1) / m);
        double f = 2.0 * tiles * (double)(a * a) * (double)wl->ci * (double)wl->co;
        if (i == 0 || f < best) best = f;
    }
    return best;
}

/* The transform matrices of F(m, 3) in double: at[m][a], g[a][3], bt[a][a]. */
void WinogradCpu_matrices(int m, double at[][WG_MAX_A], double g[][3], double bt[][WG_MAX_A]) {
    static const double PTS[] = {0, 1, -1, 2, -2, 0.5, -0.5};
    int a = m + 2, np = a - 1; /* finite points, then infinity */
    memset(at, 0, sizeof(double) * WG_MAX_A * (size_t)m);
    memset(g, 0, sizeof(double) * 3 * (size_t)a);
    memset(bt, 0, sizeof(double) * WG_MAX_A * (size_t)a);
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < np; j++)
            at[i][j] = pow(PTS[j], i);
        at[i][np] = i == m - 1 ? 1 : 0;
    }
    for (int j = 0; j < np; j++) {
        double f = 1;
        for (int l = 0; l < np; l++)
            if (l != j) f *= PTS[j] - PTS[l];
        for (int k = 0; k < 3; k++)
            g[j][k] = pow(PTS[j], k) / f;
    }
    g[np][2] = 1;
    /* polynomial coefficients (low power first) of prod (x - p_l) over l != skip (skip = -1: all) */
    for (int j = 0; j <= np; j++) {
        double c[WG_MAX_A + 1] = {1};
        int deg = 0;
        for (int l = 0; l < np; l++) {
            if (l == j) continue;
            for (int d = deg + 1; d > 0; d--)
                c[d] = c[d - 1] - PTS[l] * c[d];
            c[0] = -PTS[l] * c[0];
            deg++;
        }
        for (int d = 0; d <= deg && d < a; d++)
            bt[j][d] = c[d];
    }
}

static Status wg_defineSpace(const Workload *wl, const DeviceInfo *dev, Space *space, char *err) {
    int vf = CpuGen_vf(dev);
    if (!WinogradCpu_applies(wl)) return tt_fail(err, "winograd: needs conv2d 3x3, stride 1, no dilation");
    if (wl->ci <= 0 || wl->co <= 0) return tt_fail(err, "winograd: degenerate extents (ci, co)");
    int64_t vals[OPTION_MAX_VALUES];
    if (Space_addOption(space, "m", WG_M, 3, err) != TT_OK) return TT_ERR;
    int64_t co_vecs = (wl->co + vf - 1) / vf;
    int n = CpuGen_filterLE(WG_OC_VEC, 4, co_vecs, vals);
    if (Space_addOption(space, "oc_vec", vals, n, err) != TT_OK) return TT_ERR;
    /* tiles of the smallest tile size bound the register tile */
    int64_t oh = wl->h + 2 * wl->pad_h - 2, ow = wl->w + 2 * wl->pad_w - 2;
    int64_t tiles2 = wl->n * ((oh + 1) / 2) * ((ow + 1) / 2);
    n = CpuGen_filterLE(WG_REG_N, 8, tiles2, vals);
    if (Space_addOption(space, "reg_n", vals, n, err) != TT_OK) return TT_ERR;
    if (Space_addOption(space, "tb", WG_TB, 4, err) != TT_OK) return TT_ERR;
    const int64_t two[] = {0, 1};
    if (Space_addOption(space, "order", two, 2, err) != TT_OK) return TT_ERR;
    if (Space_addOption(space, "unroll_ci", WG_UNROLL, 3, err) != TT_OK) return TT_ERR;
    /* the parallel split (last, so that the configs of logs written before it keep their index) */
    return Space_addOption(space, "xform", two, dev->cores > 1 ? 2 : 1, err);
}

static void wg_plan(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev, WgPlan *p) {
    memset(p, 0, sizeof *p);
    p->vf = CpuGen_vf(dev);
    p->vregs = CpuGen_vregs(dev);
    p->N = wl->n, p->CI = wl->ci, p->H = wl->h, p->W = wl->w, p->CO = wl->co, p->PH = wl->pad_h, p->PW = wl->pad_w;
    p->OH = p->H + 2 * p->PH - 2;
    p->OW = p->W + 2 * p->PW - 2;
    p->M = Space_optionByName(space, choice, "m");
    p->A = p->M + 2;
    p->A2 = p->A * p->A;
    p->TH = (p->OH + p->M - 1) / p->M;
    p->TW = (p->OW + p->M - 1) / p->M;
    p->T = p->N * p->TH * p->TW;
    p->RN = Space_optionByName(space, choice, "reg_n");
    p->TB = p->RN * Space_optionByName(space, choice, "tb");
    p->TP = (p->T + p->TB - 1) / p->TB * p->TB;
    p->CIB = (p->CI + p->vf - 1) / p->vf;
    p->CIP = p->CIB * p->vf;
    p->OCV = Space_optionByName(space, choice, "oc_vec");
    p->OCB = p->OCV * p->vf;
    p->OCC = (p->CO + p->OCB - 1) / p->OCB;
    p->OWP = p->TW * p->M;
    p->HP = p->TH * p->M + 2;
    if (p->H + p->PH > p->HP) p->HP = p->H + p->PH;
    p->WP = p->TW * p->M + 2;
    if (p->W + p->PW > p->WP) p->WP = p->W + p->PW;
    p->order = (int)Space_optionByName(space, choice, "order");
    p->unroll_ci = (int)Space_optionByName(space, choice, "unroll_ci");
    p->xform = (int)Space_optionByName(space, choice, "xform");
    p->nhwc = wl->layout == LAYOUT_NHWC;
    p->bias = wl->bias, p->relu = wl->relu, p->residual = wl->residual;
    p->act = CpuGen_act(wl);
}

static int wg_regsNeeded(const WgPlan *p) { return (int)(p->OCV * p->RN + p->OCV); }
static int64_t wg_scratchBytes(const WgPlan *p) { return 4 * p->A2 * p->TB * p->OCB; }

static bool wg_precheck(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                        char *reason, size_t n) {
    WgPlan p;
    wg_plan(wl, space, choice, dev, &p);
    int regs = wg_regsNeeded(&p);
    if (regs > p.vregs) {
        snprintf(reason, n, "register tile %lldx%lld vectors needs %d vector registers > %d", (long long)p.OCV,
                 (long long)p.RN, regs, p.vregs);
        return false;
    }
    if (p.RN > p.T) {
        snprintf(reason, n, "register tile of %lld tiles > %lld tiles of m=%lld", (long long)p.RN, (long long)p.T,
                 (long long)p.M);
        return false;
    }
    if (p.TB > p.RN && p.TB - p.RN >= p.T) {
        snprintf(reason, n, "tile block %lld > %lld tiles of m=%lld", (long long)p.TB, (long long)p.T, (long long)p.M);
        return false;
    }
    if (p.xform && 4 * p.A2 * p.TB * p.CIP > WG_MAX_VLOCAL) {
        snprintf(reason, n, "per-thread input transform of %lld KiB > %d KiB",
                 (long long)(4 * p.A2 * p.TB * p.CIP / 1024), WG_MAX_VLOCAL / 1024);
        return false;
    }
    if (p.xform && p.order) {
        snprintf(reason, n, "xform=1 (per-thread input transform) splits over tile blocks only: order=1 is unused");
        return false;
    }
    if (wg_scratchBytes(&p) > WG_MAX_SCRATCH) {
        snprintf(reason, n, "GEMM block of %lld KiB per thread > %d KiB", (long long)(wg_scratchBytes(&p) / 1024),
                 WG_MAX_SCRATCH / 1024);
        return false;
    }
    int64_t fmas = p.OCV * p.RN * (p.unroll_ci < p.CIP ? p.unroll_ci : p.CIP);
    if (fmas > WG_MAX_UNROLLED_FMAS) {
        snprintf(reason, n, "unrolled loop body of %lld vector FMAs > %d (compile time)", (long long)fmas,
                 WG_MAX_UNROLLED_FMAS);
        return false;
    }
    return true;
}

/* A float literal of x ("4.0f", "0.16666666666666666f"). */
static void wg_literal(double x, char *buf, size_t n) {
    snprintf(buf, n, "%.17g", x);
    if (!strpbrk(buf, ".en")) snprintf(buf + strlen(buf), n - strlen(buf), ".0");
    snprintf(buf + strlen(buf), n - strlen(buf), "f");
}

/* out = sum_k c[k] * name_k, with the zero terms left out and +-1 without a multiply. */
static void wg_emitSum(StrBuf *sb, const char *out, const double *c, int n, int stride, const char *fmt, int fixed,
                       bool first_fixed) {
    StrBuf_printf(sb, "vf %s =", out);
    bool any = false;
    for (int k = 0; k < n; k++) {
        double x = c[k * stride];
        if (x == 0) continue;
        char name[32];
        if (first_fixed)
            snprintf(name, sizeof name, fmt, fixed, k);
        else
            snprintf(name, sizeof name, fmt, k, fixed);
        if (x == 1)
            StrBuf_printf(sb, " %s%s", any ? "+ " : "", name);
        else if (x == -1)
            StrBuf_printf(sb, " - %s", name);
        else {
            char lit[48];
            wg_literal(x, lit, sizeof lit);
            StrBuf_printf(sb, " %s%s * %s", any ? "+ " : "", lit, name);
        }
        any = true;
    }
    if (!any) StrBuf_append(sb, " (vf){0}");
    StrBuf_append(sb, ";\n");
}

/* The input transform of one tile and channel vector, V = B^T d B: d is read
 * at ip (rows IN_H apart), the a^2 results are stored at vp, VS floats apart. */
static void wg_emitInputTile(StrBuf *sb, const WgPlan *p, double bt[][WG_MAX_A]) {
    int a = (int)p->A;
    for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++)
            StrBuf_printf(sb, "vf d%d_%d = LD(ip + %d * IN_H + %d * VF);\n", i, j, i, j);
    /* t[i][j] = sum_k bt[i][k] d[k][j] */
    for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++) {
            char out[32];
            snprintf(out, sizeof out, "t%d_%d", i, j);
            wg_emitSum(sb, out, bt[i], a, 1, "d%d_%d", j, false);
        }
    /* v[i][j] = sum_k t[i][k] bt[j][k] */
    for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++) {
            char out[32];
            snprintf(out, sizeof out, "v%d_%d", i, j);
            wg_emitSum(sb, out, bt[j], a, 1, "t%d_%d", i, true);
            StrBuf_printf(sb, "ST(vp + (size_t)%d * VS, v%d_%d);\n", i * a + j, i, j);
        }
}

/* Phase 1 (xform 0): the input transform of every tile into the shared V. */
static void wg_emitInput(StrBuf *sb, const WgPlan *p, double bt[][WG_MAX_A]) {
    StrBuf_append(sb, "#pragma omp parallel for collapse(3) schedule(static)\n"
                      "for (int n = 0; n < N; n++) for (int cb = 0; cb < CIB; cb++) for (int th = 0; th < TH; th++)\n"
                      "for (int tw = 0; tw < TW; tw++) {\n"
                      "const float *ip = s->in + (size_t)n * IN_N + (size_t)cb * IN_C + (size_t)th * M * IN_H"
                      " + (size_t)tw * M * VF;\n"
                      "float *vp = s->v + ((size_t)(n * TH + th) * TW + tw) * CIP + (size_t)cb * VF;\n");
    wg_emitInputTile(sb, p, bt);
    StrBuf_append(sb, "}\n");
}

/* xform 1: the input transform of the tiles of block tb0 into this thread's vl. */
static void wg_emitInputBlock(StrBuf *sb, const WgPlan *p, double bt[][WG_MAX_A]) {
    StrBuf_append(sb, "for (int t = 0; t < TB && tb0 + t < T; t++) {\n"
                      "const int tile = tb0 + t, n = tile / (TH * TW), th = tile / TW % TH, tw = tile % TW;\n"
                      "for (int cb = 0; cb < CIB; cb++) {\n"
                      "const float *ip = s->in + (size_t)n * IN_N + (size_t)cb * IN_C + (size_t)th * M * IN_H"
                      " + (size_t)tw * M * VF;\n"
                      "float *vp = vl + (size_t)t * CIP + (size_t)cb * VF;\n");
    wg_emitInputTile(sb, p, bt);
    StrBuf_append(sb, "}\n}\n");
}

/* Phase 2, the GEMM of one transform element xi over a tile block: register
 * tile of RN tiles x OCV vectors, reduction over CIP channels. */
static void wg_emitGemm(StrBuf *sb, const WgPlan *p) {
    StrBuf_append(sb, "for (int xi = 0; xi < A2; xi++) {\n"
                      "const float *ub = s->w + ((size_t)occ * A2 + xi) * CIP * OCB;\n"
                      "const float *vb = VB(xi);\n"
                      "float *mb = ms + (size_t)xi * TB * OCB;\n"
                      "for (int t = 0; t < TB; t += RN) {\n");
    for (int v = 0; v < p->OCV; v++) {
        StrBuf_append(sb, "vf");
        for (int r = 0; r < p->RN; r++)
            StrBuf_printf(sb, "%s a%d_%d = (vf){0}", r ? "," : "", v, r);
        StrBuf_append(sb, ";\n");
    }
    StrBuf_printf(sb,
                  "const float *vt = vb + (size_t)t * CIP;\n#pragma GCC unroll %d\n"
                  "for (int ci = 0; ci < CIP; ci++) {\n",
                  p->unroll_ci);
    for (int v = 0; v < p->OCV; v++)
        StrBuf_printf(sb, "vf w%d = LD(ub + (size_t)ci * OCB + %d);\n", v, v * p->vf);
    for (int r = 0; r < p->RN; r++) {
        StrBuf_printf(sb, "{ float x = vt[%lld + ci];", (long long)(r * p->CIP));
        for (int v = 0; v < p->OCV; v++)
            StrBuf_printf(sb, " a%d_%d += w%d * x;", v, r, v);
        StrBuf_append(sb, " }\n");
    }
    StrBuf_append(sb, "}\n");
    for (int r = 0; r < p->RN; r++)
        for (int v = 0; v < p->OCV; v++)
            StrBuf_printf(sb, "ST(mb + (size_t)(t + %d) * OCB + %d, a%d_%d);\n", r, v * p->vf, v, r);
    StrBuf_append(sb, "}\n}\n");
}

/* Phase 2, the output transform of the tiles of the block: Y = A^T M A, then
 * bias, residual, ReLU, stored into the rows of the tile that exist. */
static void wg_emitOutput(StrBuf *sb, const WgPlan *p, double at[][WG_MAX_A]) {
    int a = (int)p->A, m = (int)p->M;
    StrBuf_append(sb, "for (int t = 0; t < TB && tb0 + t < T; t++) {\n"
                      "const int tile = tb0 + t, n = tile / (TH * TW), th = tile / TW % TH, tw = tile % TW;\n"
                      "const int rows = MIN(M, OH - th * M);\n"
                      "size_t oofs = (((size_t)n * OCC + occ) * OH + (size_t)th * M) * OWP * OCB"
                      " + (size_t)tw * M * OCB;\n"
                      "float *ob = s->out + oofs;\n");
    if (p->residual) StrBuf_append(sb, "const float *rb = s->res + oofs;\n");
    StrBuf_printf(sb, "for (int v = 0; v < %lld; v++) {\n", (long long)p->OCV);
    if (p->bias)
        StrBuf_append(sb, "vf b = LD(s->bias + (size_t)occ * OCB + v * VF);\n");
    else
        StrBuf_append(sb, "vf b = (vf){0};\n");
    for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++)
            StrBuf_printf(sb, "vf m%d_%d = LD(ms + ((size_t)%d * TB + t) * OCB + v * VF);\n", i, j, i * a + j);
    /* u[i][j] = sum_k at[i][k] m[k][j] */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < a; j++) {
            char out[32];
            snprintf(out, sizeof out, "u%d_%d", i, j);
            wg_emitSum(sb, out, at[i], a, 1, "m%d_%d", j, false);
        }
    for (int i = 0; i < m; i++) {
        StrBuf_printf(sb, "if (%d < rows) {\n", i);
        for (int j = 0; j < m; j++) {
            char out[32];
            snprintf(out, sizeof out, "y%d_%d", i, j);
            wg_emitSum(sb, out, at[j], a, 1, "u%d_%d", i, true);
            StrBuf_printf(sb, "y%d_%d += b;\n", i, j);
            char at_ofs[96];
            snprintf(at_ofs, sizeof at_ofs, "(size_t)%d * OWP * OCB + %d * OCB + v * VF", i, j);
            if (p->residual) StrBuf_printf(sb, "y%d_%d += LD(rb + %s);\n", i, j, at_ofs);
            char y[32];
            snprintf(y, sizeof y, "y%d_%d", i, j);
            CpuGen_emitAct(sb, p->act, y);
            StrBuf_printf(sb, "ST(ob + %s, y%d_%d);\n", at_ofs, i, j);
        }
        StrBuf_append(sb, "}\n");
    }
    StrBuf_append(sb, "}\n}\n");
}

static void wg_emitRun(StrBuf *sb, const WgPlan *p, double at[][WG_MAX_A], double bt[][WG_MAX_A]) {
    StrBuf_append(sb, "void tt_run(void *sv) {\n    St *s = sv;\n");
    if (p->xform) {
        /* per thread: one parallel loop over tile blocks, each transforming its own tiles */
        StrBuf_append(sb, "#pragma omp parallel for schedule(static) num_threads(MIN(TT_NTH, s->nth))\n"
                          "for (int tbi = 0; tbi < TP / TB; tbi++) {\n"
                          "const int tb0 = tbi * TB;\n"
                          "float *ms = s->ms + (size_t)TT_TID * MS_N;\n"
                          "float *vl = s->v + (size_t)TT_TID * VL_N;\n");
        wg_emitInputBlock(sb, p, bt);
        StrBuf_append(sb, "for (int occ = 0; occ < OCC; occ++) {\n");
        wg_emitGemm(sb, p);
        wg_emitOutput(sb, p, at);
        StrBuf_append(sb, "}\n}\n}\n");
        return;
    }
    wg_emitInput(sb, p, bt);
    /* never more threads than tt_setup gave scratch blocks to */
    StrBuf_append(sb, "#pragma omp parallel for collapse(2) schedule(static) num_threads(MIN(TT_NTH, s->nth))\n");
    if (p->order == 0)
        StrBuf_append(sb, "for (int tbi = 0; tbi < TP / TB; tbi++) for (int occ = 0; occ < OCC; occ++) {\n");
    else
        StrBuf_append(sb, "for (int occ = 0; occ < OCC; occ++) for (int tbi = 0; tbi < TP / TB; tbi++) {\n");
    StrBuf_append(sb, "const int tb0 = tbi * TB;\n"
                      "float *ms = s->ms + (size_t)TT_TID * MS_N;\n");
    wg_emitGemm(sb, p);
    wg_emitOutput(sb, p, at);
    StrBuf_append(sb, "}\n}\n");
}

static void wg_emitPack(StrBuf *sb, const WgPlan *p, int ai_res, int ai_out) {
    CpuGen_emitPackInput(sb, p->nhwc, "VF", "CI", "1");
    CpuGen_emitResidualAndFinish(sb, p->nhwc, ai_res, ai_out);
}

/* tt_setup: buffers, and the weight transform U = G g G^T (in double) done once. */
static void wg_emitSetup(StrBuf *sb, const WgPlan *p, int ai_bias, double g[][3]) {
    int a = (int)p->A;
    StrBuf_append(sb, "typedef struct St { float **args; float *in, *w, *bias, *res, *out, *v, *ms; int nth; } St;\n"
                      "static const double G[A][3] = {");
    for (int i = 0; i < a; i++)
        StrBuf_printf(sb, "%s{%.17g, %.17g, %.17g}", i ? ", " : "", g[i][0], g[i][1], g[i][2]);
    StrBuf_append(sb, "};\n"
                      "int tt_setup(float **args, void **state) {\n"
                      "    St *s = calloc(1, sizeof *s);\n    if (!s) return 1;\n    s->args = args;\n"
                      "    *state = s;\n"
                      "    s->in = tt_alloc((size_t)N * IN_N);\n"
                      "    s->w = tt_alloc((size_t)OCC * A2 * CIP * OCB);\n"
                      "    s->out = tt_alloc((size_t)N * O_N);\n"
                      "    s->bias = tt_alloc((size_t)OCC * OCB);\n"
                      "    s->res = tt_alloc(RESIDUAL ? (size_t)N * O_N : 1);\n"
                      "    s->nth = TT_NTH;\n"
                      "    s->v = tt_alloc(XFORM ? (size_t)s->nth * VL_N : (size_t)A2 * V_X);\n"
                      "    s->ms = tt_alloc((size_t)s->nth * MS_N);\n"
                      "    if (!s->in || !s->w || !s->out || !s->bias || !s->res || !s->v || !s->ms) return 2;\n");
    if (ai_bias >= 0) StrBuf_printf(sb, "    memcpy(s->bias, args[%d], CO * sizeof(float));\n", ai_bias);
    const char *src = p->nhwc ? "((kh * 3 + kw) * CI + ci) * CO + co" : "((co * CI + ci) * 3 + kh) * 3 + kw";
    StrBuf_printf(sb,
                  "    const float *wsrc = args[1];\n"
                  "    for (size_t co = 0; co < CO; co++) for (size_t ci = 0; ci < CI; ci++) {\n"
                  "        double gg[3][3], tg[A][3];\n"
                  "        for (int kh = 0; kh < 3; kh++) for (int kw = 0; kw < 3; kw++) gg[kh][kw] = wsrc[%s];\n"
                  "        for (int i = 0; i < A; i++) for (int k = 0; k < 3; k++)\n"
                  "            tg[i][k] = G[i][0] * gg[0][k] + G[i][1] * gg[1][k] + G[i][2] * gg[2][k];\n"
                  "        for (int i = 0; i < A; i++) for (int j = 0; j < A; j++)\n"
                  "            s->w[(((co / OCB) * A2 + i * A + j) * CIP + ci) * OCB + co %% OCB] =\n"
                  "                (float)(tg[i][0] * G[j][0] + tg[i][1] * G[j][1] + tg[i][2] * G[j][2]);\n"
                  "    }\n    return 0;\n}\n",
                  src);
    StrBuf_append(sb, "void tt_teardown(void *sv) {\n    St *s = sv;\n    if (!s) return;\n"
                      "    free(s->in); free(s->w); free(s->out); free(s->bias); free(s->res); free(s->v);"
                      " free(s->ms); free(s);\n}\n");
}

static Status wg_generate(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                          Dialect dialect, KernelSource *out, char *err) {
    if (dialect != DIALECT_C) return tt_fail(err, "winograd cpu template generates C only");
    if (!WinogradCpu_applies(wl)) return tt_fail(err, "winograd: needs conv2d 3x3, stride 1, no dilation");
    WgPlan p;
    wg_plan(wl, space, choice, dev, &p);
    double at[WG_MAX_A][WG_MAX_A], g[WG_MAX_A][3], bt[WG_MAX_A][WG_MAX_A];
    WinogradCpu_matrices((int)p.M, at, g, bt);
    int ai_bias, ai_res;
    int ai_out = CpuGen_argIndices(p.bias, p.residual, &ai_bias, &ai_res);

    StrBuf sb;
    CpuGen_begin(&sb, "conv2d_winograd.cpu", space, choice, p.vf);
    StrBuf_append(&sb, "#ifdef _OPENMP\n#include <omp.h>\n#define TT_TID omp_get_thread_num()\n"
                       "#define TT_NTH omp_get_max_threads()\n#else\n#define TT_TID 0\n#define TT_NTH 1\n#endif\n");
    CpuGen_defines(&sb, "N CI H W CO PH PW OH OW M A A2 TH TW T TB TP CIB CIP OCB OCC RN OWP HP WP RESIDUAL XFORM", p.N,
                   p.CI, p.H, p.W, p.CO, p.PH, p.PW, p.OH, p.OW, p.M, p.A, p.A2, p.TH, p.TW, p.T, p.TB, p.TP, p.CIB,
                   p.CIP, p.OCB, p.OCC, p.RN, p.OWP, p.HP, p.WP, p.residual ? 1 : 0, p.xform);
    StrBuf_append(&sb, "#define IN_H ((size_t)WP * VF)\n#define IN_C ((size_t)HP * IN_H)\n"
                       "#define IN_N ((size_t)CIB * IN_C)\n#define V_X ((size_t)TP * CIP)\n"
                       "#define MS_N ((size_t)A2 * TB * OCB)\n#define O_N ((size_t)OCC * OH * OWP * OCB)\n"
                       /* V: shared [a^2][TP][CIP] (xform 0) or per thread [a^2][TB][CIP] (xform 1) */
                       "#define VL_N ((size_t)A2 * TB * CIP)\n");
    if (p.xform)
        StrBuf_append(&sb, "#define VS ((size_t)TB * CIP)\n#define VB(xi) (vl + (size_t)(xi) * VS)\n");
    else
        StrBuf_append(&sb, "#define VS V_X\n#define VB(xi) (s->v + (size_t)(xi) * V_X + (size_t)tb0 * CIP)\n");
    CpuGen_beginHelpers(&sb);
    wg_emitSetup(&sb, &p, ai_bias, g);
    CpuGen_endHelpers(&sb);
    CpuGen_beginPackHelpers(&sb, p.vf);
    wg_emitPack(&sb, &p, ai_res, ai_out);
    CpuGen_endPackHelpers(&sb);
    wg_emitRun(&sb, &p, at, bt);
    CpuGen_finish(&sb, out);
    return TT_OK;
}

static int wg_features(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev, float *out,
                       int cap) {
    WgPlan p;
    wg_plan(wl, space, choice, dev, &p);
    double f = 4.0;
    double l1 = f * (p.CIP * p.OCB + p.RN * p.CIP);                        /* one GEMM step: U panel + V rows */
    double l2 = f * (p.A2 * p.CIP * (p.OCB + p.TB) + p.A2 * p.TB * p.OCB); /* a block: U, V, scratch */
    double l3 = f * (p.OCC * p.A2 * p.CIP * p.OCB + p.A2 * p.TP * p.CIP + p.N * p.CIB * p.HP * p.WP * p.vf);
    double waste = (double)(p.TH * p.M * p.TW * p.M * p.OCC * p.OCB) / (double)(p.OH * p.OW * p.CO);
    float v[] = {
        (float)(p.OCV * p.RN),
        (float)wg_regsNeeded(&p),
        (float)p.vf,
        (float)p.OCB,
        (float)p.RN,
        (float)p.CIP,
        (float)(p.unroll_ci < p.CIP ? p.unroll_ci : p.CIP),
        CpuGen_log2p(l1),
        CpuGen_log2p(l2),
        CpuGen_log2p(l3),
        l1 <= CPU_L1_BYTES ? 1.0f : 0.0f,
        l2 <= CPU_L2_BYTES ? 1.0f : 0.0f,
        (float)waste,
        (float)(p.TP / p.TB * p.OCC), /* parallel iterations of phase 2 */
        (float)p.M,
        (float)p.order,
        (float)p.xform,
    };
    return CpuGen_copyFeatures(v, (int)(sizeof v / sizeof v[0]), out, cap);
}

static int wg_blocked(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                      BlockedLayout *in, BlockedLayout *out) {
    WgPlan p;
    wg_plan(wl, space, choice, dev, &p);
    *in = (BlockedLayout){p.N, p.CI, p.H, p.W, p.vf, p.HP, p.WP, p.PH, p.PW, 1};
    *out = (BlockedLayout){p.N, p.CO, p.OH, p.OW, p.OCB, p.OH, p.OWP, 0, 0, 1};
    return BLOCKED_INPUT | BLOCKED_OUTPUT;
}

/* With m, unroll_ci and xform set in choice: the first tile block (4 register
 * tiles down to 1) that passes the precheck for this register tile. */
static bool wg_defaultBlock(const Workload *wl, const Space *space, const DeviceInfo *dev, int32_t *choice, int64_t ov,
                            int64_t rn, char *reason, size_t n) {
    const int64_t *tbs;
    int n_tb = CpuGen_values(space, "tb", &tbs);
    CpuGen_pick(space, choice, "oc_vec", ov);
    CpuGen_pick(space, choice, "reg_n", rn);
    for (int j = n_tb - 1; j >= 0; j--) {
        if (tbs[j] > 4) continue;
        CpuGen_pick(space, choice, "tb", tbs[j]);
        if (wg_precheck(wl, space, choice, dev, reason, n)) return true;
    }
    return false;
}

/* Zero-trial default (Template.default_config): F(4x4, 3x3) (4x fewer
 * multiplies than direct at a moderate rounding error; F(2x2) when the output
 * is smaller than one 4x4 tile); the register tile (reg_n tiles x oc_vec
 * vectors) with the most accumulators that fit the vector registers and the
 * tiles there are, on a tie CPU_DEFAULT_BLOCK_VECS vectors of channels (6 x 2
 * on AVX2, 14 x 2 on AVX-512; a 7x7 layer has 4 tiles: 4 x 4 on AVX-512);
 * tile blocks of up to 4 register tiles; the shared input transform (xform 0)
 * with the GEMMs split over contiguous tile blocks (order 0). A tile that
 * fails the precheck (scratch, few tiles) gives way to the next best. */
static Status wg_defaultConfig(const Workload *wl, const Space *space, const DeviceInfo *dev, int32_t *choice,
                               char *err) {
    int vregs = CpuGen_vregs(dev);
    int64_t oh = wl->h + 2 * wl->pad_h - 2, ow = wl->w + 2 * wl->pad_w - 2;
    CpuGen_clearChoice(space, choice);
    int64_t m = oh >= 4 && ow >= 4 ? 4 : 2;
    CpuGen_pick(space, choice, "m", m);
    CpuGen_pick(space, choice, "unroll_ci", 2);
    int64_t tiles = wl->n * ((oh + m - 1) / m) * ((ow + m - 1) / m);
    const int64_t *ovs, *rns;
    int n_ov = CpuGen_values(space, "oc_vec", &ovs), n_rn = CpuGen_values(space, "reg_n", &rns);
    char reason[TT_ERRLEN] = "no register tile fits";
    bool tried[OPTION_MAX_VALUES][OPTION_MAX_VALUES] = {{false}};
    for (;;) { /* the best untried register tile, until one passes */
        int bi = -1, bj = -1;
        double best = -1;
        for (int i = 0; i < n_ov; i++)
            for (int j = 0; j < n_rn; j++) {
                if (tried[i][j] || ovs[i] * rns[j] + ovs[i] > vregs || rns[j] > tiles) continue;
                double score = (double)(ovs[i] * rns[j]) * (ovs[i] == CPU_DEFAULT_BLOCK_VECS ? 1.05 : 1.0);
                if (score > best) best = score, bi = i, bj = j;
            }
        if (bi < 0) break;
        tried[bi][bj] = true;
        if (wg_defaultBlock(wl, space, dev, choice, ovs[bi], rns[bj], reason, sizeof reason)) return TT_OK;
    }
    return tt_fail(err, "winograd default: %s", reason);
}

const Template tmpl_conv2d_winograd_cpu = {
    .name = "conv2d_winograd.cpu",
    .op = OP_CONV2D,
    .family = FAMILY_CPU,
    .applies = WinogradCpu_applies,
    .define_space = wg_defineSpace,
    .precheck = wg_precheck,
    .default_config = wg_defaultConfig,
    .generate = wg_generate,
    .features = wg_features,
    .blocked = wg_blocked,
    .min_flops = WinogradCpu_minFlops,
};
