/* kernels/templates/cpu/depthwise_cpu.c: depthwise conv2d on the CPU, channels
 * blocked to the vector width (NCHW[x]c).
 *
 * Output channel oc = c * mult + j reads input channel c. tt_pack lays the
 * input out per OUTPUT channel (each input channel repeated mult times, zero
 * padded), so the timed loop is a pure per-lane multiply-add:
 *   input  [n][co/c_bn][h + pads][w + pads][c_bn]     (tt_pack)
 *   weight [co/c_bn][kh][kw][c_bn]                    (tt_setup)
 *   output [n][co/c_bn][oh][ow rounded up to reg_n][c_bn]  (tt_finish unpacks)
 * Knobs: c_vec (channel vectors in the tile, c_bn = c_vec * VF), reg_n
 * (output columns in the tile), order (parallel loop order), unroll_kw,
 * unroll_kh. */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "kernels/template.h"
#include "kernels/templates/cpu/cpu_gen.h"

typedef struct DwPlan {
    int vf, vregs;
    int64_t N, CI, MULT, H, W, CO, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
    int64_t CV, OCB, OCC, RN, OWP, HP, WP;
    int order, unroll_kw, unroll_kh;
    bool nhwc, bias, relu, residual;
    int act; /* CpuGen_act */
} DwPlan;

static const int64_t REG_N[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 14, 16, 28};
static const int64_t C_VEC[] = {1, 2, 4};

static bool dw_applies(const Workload *wl) { return wl->op == OP_DEPTHWISE_CONV2D; }

static Status dw_defineSpace(const Workload *wl, const DeviceInfo *dev, Space *space, char *err) {
    int vf = CpuGen_vf(dev);
    int64_t mult = wl->mult > 0 ? wl->mult : 1;
    int64_t co = wl->ci * mult;
    int64_t ow = Workload_outW(wl);
    if (co <= 0 || ow <= 0) return tt_fail(err, "depthwise_conv2d: degenerate extents (channels, out width)");
    int64_t vals[OPTION_MAX_VALUES];
    int n = CpuGen_filterLE(C_VEC, 3, (co + vf - 1) / vf, vals);
    if (Space_addOption(space, "c_vec", vals, n, err) != TT_OK) return TT_ERR;
    n = CpuGen_filterLE(REG_N, 12, ow, vals);
    if (Space_addOption(space, "reg_n", vals, n, err) != TT_OK) return TT_ERR;
    const int64_t two[] = {0, 1};
    if (Space_addOption(space, "order", two, 2, err) != TT_OK) return TT_ERR;
    if (Space_addOption(space, "unroll_kw", two, wl->kw > 1 ? 2 : 1, err) != TT_OK) return TT_ERR;
    return Space_addOption(space, "unroll_kh", two, wl->kh > 1 ? 2 : 1, err);
}

static void dw_plan(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev, DwPlan *p) {
    memset(p, 0, sizeof *p);
    p->vf = CpuGen_vf(dev);
    p->vregs = CpuGen_vregs(dev);
    p->N = wl->n, p->CI = wl->ci, p->MULT = wl->mult > 0 ? wl->mult : 1, p->H = wl->h, p->W = wl->w;
    p->CO = p->CI * p->MULT, p->KH = wl->kh, p->KW = wl->kw;
    p->SH = wl->stride_h, p->SW = wl->stride_w, p->PH = wl->pad_h, p->PW = wl->pad_w;
    p->DH = wl->dil_h, p->DW = wl->dil_w;
    p->OH = Workload_outH(wl);
    p->OW = Workload_outW(wl);
    p->CV = Space_optionByName(space, choice, "c_vec");
    p->OCB = p->CV * p->vf;
    p->OCC = (p->CO + p->OCB - 1) / p->OCB;
    p->RN = Space_optionByName(space, choice, "reg_n");
    p->OWP = (p->OW + p->RN - 1) / p->RN * p->RN;
    p->HP = CpuGen_paddedExtent(p->H, p->PH, p->OH, p->SH, p->DH, p->KH);
    p->WP = CpuGen_paddedExtent(p->W, p->PW, p->OWP, p->SW, p->DW, p->KW);
    p->order = (int)Space_optionByName(space, choice, "order");
    p->unroll_kw = (int)Space_optionByName(space, choice, "unroll_kw");
    p->unroll_kh = (int)Space_optionByName(space, choice, "unroll_kh");
    p->nhwc = wl->layout == LAYOUT_NHWC;
    p->bias = wl->bias, p->relu = wl->relu, p->residual = wl->residual;
    p->act = CpuGen_act(wl);
}

/* accumulators + the weight vectors (the input vector can be an FMA memory operand) */
static int dw_regsNeeded(const DwPlan *p) { return (int)(p->CV * p->RN + p->CV); }

static bool dw_precheck(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                        char *reason, size_t n) {
    DwPlan p;
    dw_plan(wl, space, choice, dev, &p);
    int regs = dw_regsNeeded(&p);
    if (regs > p.vregs) {
        snprintf(reason, n, "register tile %lldx%lld vectors needs %d vector registers > %d", (long long)p.CV,
                 (long long)p.RN, regs, p.vregs);
        return false;
    }
    return true;
}

static void dw_emitRun(StrBuf *sb, const DwPlan *p) {
    StrBuf_append(sb, "void tt_run(void *sv) {\n    St *s = sv;\n"
                      "#pragma omp parallel for collapse(3) schedule(static)\n"
                      "    for (int n = 0; n < N; n++)\n");
    if (p->order == 0)
        StrBuf_append(sb, "    for (int occ = 0; occ < OCC; occ++)\n    for (int oh = 0; oh < OH; oh++) {\n");
    else
        StrBuf_append(sb, "    for (int oh = 0; oh < OH; oh++)\n    for (int occ = 0; occ < OCC; occ++) {\n");
    StrBuf_append(sb, "const float *wb = s->w + (size_t)occ * KH * KW * OCB;\n"
                      "const float *ibase = s->in + ((size_t)n * OCC + occ) * IN_C + (size_t)oh * SH * IN_H;\n"
                      "size_t oofs = (((size_t)n * OCC + occ) * OH + oh) * OWP * OCB;\n"
                      "float *ob = s->out + oofs;\n");
    if (p->residual) StrBuf_append(sb, "const float *rb = s->res + oofs;\n");
    StrBuf_append(sb, "for (int owo = 0; owo < OWP; owo += RN) {\n"
                      "const float *ib = ibase + (size_t)owo * SW * OCB;\n");
    CpuGen_emitTileInit(sb, (int)p->CV, (int)p->RN, p->vf, p->bias);
    StrBuf_printf(sb, "#pragma GCC unroll %d\nfor (int kh = 0; kh < KH; kh++)\n", p->unroll_kh ? (int)p->KH : 1);
    StrBuf_printf(sb, "#pragma GCC unroll %d\nfor (int kw = 0; kw < KW; kw++) {\n", p->unroll_kw ? (int)p->KW : 1);
    StrBuf_append(sb, "const float *ip = ib + (size_t)kh * DH * IN_H + (size_t)kw * DW * OCB;\n"
                      "const float *wp = wb + (size_t)(kh * KW + kw) * OCB;\n");
    for (int v = 0; v < p->CV; v++)
        StrBuf_printf(sb, "vf w%d = LD(wp + %d);\n", v, v * p->vf);
    for (int r = 0; r < p->RN; r++)
        for (int v = 0; v < p->CV; v++)
            StrBuf_printf(sb, "a%d_%d += LD(ip + %lld) * w%d;\n", v, r, (long long)(r * p->SW * p->OCB + v * p->vf), v);
    StrBuf_append(sb, "}\n");
    CpuGen_emitTileStore(sb, (int)p->CV, (int)p->RN, p->vf, "owo * OCB", p->OCB, p->residual, p->act);
    StrBuf_append(sb, "}\n}\n}\n");
}

static Status dw_generate(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                          Dialect dialect, KernelSource *out, char *err) {
    if (dialect != DIALECT_C) return tt_fail(err, "depthwise cpu template generates C only");
    DwPlan p;
    dw_plan(wl, space, choice, dev, &p);
    int ai_bias, ai_res;
    int ai_out = CpuGen_argIndices(p.bias, p.residual, &ai_bias, &ai_res);

    StrBuf sb;
    CpuGen_begin(&sb, "depthwise_nchwc.cpu", space, choice, p.vf);
    CpuGen_defines(&sb, "N CI MULT H W CO KH KW SH SW PH PW DH DW OH OW OCB OCC RN OWP HP WP RESIDUAL", p.N, p.CI,
                   p.MULT, p.H, p.W, p.CO, p.KH, p.KW, p.SH, p.SW, p.PH, p.PW, p.DH, p.DW, p.OH, p.OW, p.OCB, p.OCC,
                   p.RN, p.OWP, p.HP, p.WP, p.residual ? 1 : 0);
    StrBuf_append(&sb, "#define IN_H ((size_t)WP * OCB)\n#define IN_C ((size_t)HP * IN_H)\n"
                       "#define O_N ((size_t)OCC * OH * OWP * OCB)\n");
    CpuGen_beginHelpers(&sb);
    /* setup: state, weights [oc][kh][kw] (NCHW: [ci][mult][kh][kw]; NHWC: [kh][kw][ci][mult]) -> blocked */
    CpuGen_emitBlockedSetup(&sb, "(size_t)N * OCC * IN_C", "(size_t)OCC * KH * KW * OCB", ai_bias);
    StrBuf_printf(&sb,
                  "    const float *wsrc = args[1];\n"
                  "    for (size_t oc = 0; oc < CO; oc++) for (size_t kh = 0; kh < KH; kh++)\n"
                  "    for (size_t kw = 0; kw < KW; kw++)\n"
                  "        s->w[((oc / OCB * KH + kh) * KW + kw) * OCB + oc %% OCB] = wsrc[%s];\n"
                  "    return 0;\n}\n",
                  p.nhwc ? "(kh * KW + kw) * CO + oc" : "(oc * KH + kh) * KW + kw");
    CpuGen_emitBlockedTeardown(&sb);
    CpuGen_endHelpers(&sb);
    /* pack: input channel oc / MULT into lane oc of the blocked, padded layout */
    CpuGen_beginPackHelpers(&sb, p.vf);
    CpuGen_emitPackInput(&sb, p.nhwc, "OCB", "CO", "MULT");
    CpuGen_emitResidualAndFinish(&sb, p.nhwc, ai_res, ai_out);
    CpuGen_endPackHelpers(&sb);
    dw_emitRun(&sb, &p);
    CpuGen_finish(&sb, out);
    return TT_OK;
}

static int dw_features(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev, float *out,
                       int cap) {
    DwPlan p;
    dw_plan(wl, space, choice, dev, &p);
    double f = 4.0;
    double l1 = f * (p.KH * p.KW * p.OCB + p.KH * p.OCB * ((p.RN - 1) * p.SW + p.DW * (p.KW - 1) + 1));
    double l2 = f * (p.KH * p.WP * p.OCB + p.OWP * p.OCB);
    double l3 = f * (p.N * p.OCC * p.OCB * (p.HP * p.WP + p.OH * p.OWP));
    double waste = (double)(p.OWP * p.OCC * p.OCB) / (double)(p.OW * p.CO);
    float v[] = {
        (float)(p.CV * p.RN),
        (float)dw_regsNeeded(&p),
        (float)p.vf,
        (float)p.OCB,
        (float)p.RN,
        (float)p.KW,                                                  /* innermost reduction extent */
        (float)((p.unroll_kw ? p.KW : 1) * (p.unroll_kh ? p.KH : 1)), /* unrolled steps */
        CpuGen_log2p(l1),
        CpuGen_log2p(l2),
        CpuGen_log2p(l3),
        l1 <= CPU_L1_BYTES ? 1.0f : 0.0f,
        l2 <= CPU_L2_BYTES ? 1.0f : 0.0f,
        (float)waste,
        (float)(p.N * p.OCC * p.OH),
    };
    return CpuGen_copyFeatures(v, (int)(sizeof v / sizeof v[0]), out, cap);
}

static int dw_blocked(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                      BlockedLayout *in, BlockedLayout *out) {
    DwPlan p;
    dw_plan(wl, space, choice, dev, &p);
    /* the input is laid out per output channel: channel oc holds data channel oc / mult */
    *in = (BlockedLayout){p.N, p.CO, p.H, p.W, p.OCB, p.HP, p.WP, p.PH, p.PW, p.MULT};
    *out = (BlockedLayout){p.N, p.CO, p.OH, p.OW, p.OCB, p.OH, p.OWP, 0, 0, 1};
    return BLOCKED_INPUT | BLOCKED_OUTPUT;
}

/* Zero-trial default (Template.default_config): the register tile with the
 * most accumulators that fit the vector registers (dw_regsNeeded), discounted
 * by the padding of the output row and of the channels, on a tie
 * CPU_DEFAULT_BLOCK_VECS vectors of channels (the block the convolutions'
 * defaults use, so the pointwise layers around it need no layout change);
 * the kh and kw taps unrolled while the body stays small; the parallel loop
 * over (channel block, row), contiguous per thread. */
#define DW_MAX_UNROLLED_FMAS 512
static Status dw_defaultConfig(const Workload *wl, const Space *space, const DeviceInfo *dev, int32_t *choice,
                               char *err) {
    int vf = CpuGen_vf(dev), vregs = CpuGen_vregs(dev);
    int64_t co = wl->ci * (wl->mult > 0 ? wl->mult : 1), ow = Workload_outW(wl);
    const int64_t *cvs, *rns;
    int n_cv = CpuGen_values(space, "c_vec", &cvs), n_rn = CpuGen_values(space, "reg_n", &rns);
    int64_t cv = cvs[0], rn = rns[0];
    double best = -1;
    for (int i = 0; i < n_cv; i++)
        for (int j = 0; j < n_rn; j++) {
            int64_t c = cvs[i], r = rns[j], cb = c * vf;
            if (c * r + c > vregs) continue;
            double eff_w = (double)ow / (double)((ow + r - 1) / r * r);
            double eff_c = (double)co / (double)((co + cb - 1) / cb * cb);
            double score = (double)(c * r) * eff_w * eff_c * (c == CPU_DEFAULT_BLOCK_VECS ? 1.05 : 1.0);
            if (score > best) best = score, cv = c, rn = r;
        }
    CpuGen_clearChoice(space, choice);
    CpuGen_pick(space, choice, "c_vec", cv);
    CpuGen_pick(space, choice, "reg_n", rn);
    CpuGen_pick(space, choice, "unroll_kw", wl->kw > 1 && cv * rn * wl->kw <= DW_MAX_UNROLLED_FMAS ? 1 : 0);
    CpuGen_pick(space, choice, "unroll_kh", wl->kh > 1 && cv * rn * wl->kw * wl->kh <= DW_MAX_UNROLLED_FMAS ? 1 : 0);
    char reason[TT_ERRLEN];
    if (!dw_precheck(wl, space, choice, dev, reason, sizeof reason))
        return tt_fail(err, "depthwise default: %s", reason);
    return TT_OK;
}

const Template tmpl_depthwise_cpu = {
    .name = "depthwise_nchwc.cpu",
    .op = OP_DEPTHWISE_CONV2D,
    .family = FAMILY_CPU,
    .applies = dw_applies,
    .define_space = dw_defineSpace,
    .precheck = dw_precheck,
    .default_config = dw_defaultConfig,
    .generate = dw_generate,
    .features = dw_features,
    .blocked = dw_blocked,
};
