/* kernels/templates/cpu/conv2d_cpu.c: conv2d on the CPU with input and output
 * channels blocked to the vector width (NCHW[x]c).
 *
 * Layouts inside the kernel (both canonical layouts, NCHW and NHWC, map to them):
 *   input  [n][ci/ic_bn][h + 2 pad (+ right margin)][w...][ic_bn]  zero padded, packed in tt_pack
 *   weight [co/oc_bn][ci/ic_bn][kh][kw][ic_bn][oc_bn]               packed once in tt_setup
 *   output [n][co/oc_bn][oh][ow rounded up to reg_n][oc_bn]         unpacked in tt_finish
 * Padding the input (spatial padding, plus a right margin so that the output
 * width is a multiple of reg_n) and the output channels (a multiple of oc_bn)
 * removes every boundary test from the innermost loops: each config is a
 * loop nest around a register tile of oc_vec x reg_n vectors. The taps that
 * would only read zero padding are skipped: per output row the kh range is
 * trimmed, and the tiles at the left and right borders are written out with
 * the kw taps of each column that read real input (on 7x7 3x3 pad 1 that is
 * 19/21 per dimension, 0.82 of the nominal multiply-adds).
 *
 * Knobs: ic_bn (divisor of ci), oc_vec (output-channel vectors in the tile,
 * oc_bn = oc_vec * VF), reg_n (output columns in the tile), order (parallel
 * loop order), red (reduction loop order), unroll_kw, unroll_ic, out_direct,
 * split (on more than one core: how the threads share the work).
 *
 * The parallel split: the loops (n, occ, oh) (order 0) or (n, oh, occ)
 * (order 1) are one collapsed parallel loop. split 0 gives each thread one
 * contiguous range of it: with order 0 its own output-channel blocks (so its
 * own slice of the weights, which stays in its L2, and every input row), with
 * order 1 its own band of rows (every weight, a band of the input). split 1
 * deals the iterations out one at a time (order 0: alternate rows of every
 * block, order 1: alternate blocks of every row): both threads read the same
 * weights and input lines at about the same time (the shared L3 serves them
 * once), and the rows whose padding taps are skipped (cheaper) are spread
 * evenly. The input is packed once for all threads (tt_pack, timed apart). */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "kernels/template.h"
#include "kernels/templates/cpu/cpu_gen.h"

/* Everything the generator and the features need, derived from a config. */
typedef struct ConvPlan {
    int vf, vregs;
    int64_t N, CI, H, W, CO, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
    int64_t ICB, ICC, OCV, OCB, OCC, RN, OWP, HP, WP;
    int order, red, unroll_kw, unroll_ic;
    int split;    /* 0: a contiguous range of the parallel loop per thread, 1: iterations dealt one at a time */
    int64_t OSTR; /* floats between two output columns: oc_bn (blocked) or co (direct) */
    bool direct;  /* NHWC only: tt_run writes the canonical output itself (no tt_finish) */
    int ai_res, ai_out;
    bool nhwc, bias, relu, residual;
    int act; /* CpuGen_act */
} ConvPlan;

static const int64_t REG_N[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 14, 16, 28};
static const int64_t OC_VEC[] = {1, 2, 3, 4};
static const int64_t UNROLL_IC[] = {1, 2, 4};
/* unrolled multiply-adds per loop body above which gcc -O3 takes too long (> ~0.3 s) */
#define MAX_UNROLLED_FMAS 512

static bool conv2d_applies(const Workload *wl) { return wl->op == OP_CONV2D; }

static Status conv2d_defineSpace(const Workload *wl, const DeviceInfo *dev, Space *space, char *err) {
    int vf = CpuGen_vf(dev);
    int64_t ow = Workload_outW(wl);
    if (wl->ci <= 0 || wl->co <= 0 || ow <= 0) return tt_fail(err, "conv2d: degenerate extents (ci, co, out width)");
    int64_t vals[OPTION_MAX_VALUES];
    int n = CpuGen_divisors(wl->ci, 64, vals, 8);
    if (Space_addOption(space, "ic_bn", vals, n, err) != TT_OK) return TT_ERR;
    int64_t co_vecs = (wl->co + vf - 1) / vf;
    n = CpuGen_filterLE(OC_VEC, 4, co_vecs, vals);
    if (Space_addOption(space, "oc_vec", vals, n, err) != TT_OK) return TT_ERR;
    n = CpuGen_filterLE(REG_N, 12, ow, vals);
    if (Space_addOption(space, "reg_n", vals, n, err) != TT_OK) return TT_ERR;
    const int64_t two[] = {0, 1};
    if (Space_addOption(space, "order", two, 2, err) != TT_OK) return TT_ERR;
    if (Space_addOption(space, "red", two, 2, err) != TT_OK) return TT_ERR;
    if (Space_addOption(space, "unroll_kw", two, wl->kw > 1 ? 2 : 1, err) != TT_OK) return TT_ERR;
    n = CpuGen_filterLE(UNROLL_IC, 3, wl->ci, vals);
    if (Space_addOption(space, "unroll_ic", vals, n, err) != TT_OK) return TT_ERR;
    /* NHWC output rows are [ow][co]: an oc_bn-vector tile can be stored in place */
    if (Space_addOption(space, "out_direct", two, wl->layout == LAYOUT_NHWC ? 2 : 1, err) != TT_OK) return TT_ERR;
    /* the parallel split (last, so that the configs of logs written before it keep their index) */
    return Space_addOption(space, "split", two, dev->cores > 1 ? 2 : 1, err);
}

static void conv_plan(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                      ConvPlan *p) {
    memset(p, 0, sizeof *p);
    p->vf = CpuGen_vf(dev);
    p->vregs = CpuGen_vregs(dev);
    p->N = wl->n, p->CI = wl->ci, p->H = wl->h, p->W = wl->w, p->CO = wl->co, p->KH = wl->kh, p->KW = wl->kw;
    p->SH = wl->stride_h, p->SW = wl->stride_w, p->PH = wl->pad_h, p->PW = wl->pad_w;
    p->DH = wl->dil_h, p->DW = wl->dil_w;
    p->OH = Workload_outH(wl);
    p->OW = Workload_outW(wl);
    p->ICB = Space_optionByName(space, choice, "ic_bn");
    p->ICC = p->CI / p->ICB;
    p->OCV = Space_optionByName(space, choice, "oc_vec");
    p->OCB = p->OCV * p->vf;
    p->OCC = (p->CO + p->OCB - 1) / p->OCB;
    p->RN = Space_optionByName(space, choice, "reg_n");
    p->OWP = (p->OW + p->RN - 1) / p->RN * p->RN;
    p->HP = CpuGen_paddedExtent(p->H, p->PH, p->OH, p->SH, p->DH, p->KH);
    p->WP = CpuGen_paddedExtent(p->W, p->PW, p->OWP, p->SW, p->DW, p->KW);
    p->order = (int)Space_optionByName(space, choice, "order");
    p->red = (int)Space_optionByName(space, choice, "red");
    p->unroll_kw = (int)Space_optionByName(space, choice, "unroll_kw");
    p->unroll_ic = (int)Space_optionByName(space, choice, "unroll_ic");
    p->direct = Space_optionByName(space, choice, "out_direct") != 0;
    p->split = (int)Space_optionByName(space, choice, "split");
    p->OSTR = p->direct ? p->CO : p->OCB;
    p->nhwc = wl->layout == LAYOUT_NHWC;
    p->bias = wl->bias, p->relu = wl->relu, p->residual = wl->residual;
    p->act = CpuGen_act(wl);
    int ai = 2;
    if (p->bias) ai++;
    p->ai_res = p->residual ? ai++ : -1;
    p->ai_out = ai;
}

/* accumulators + one register per weight vector. The broadcast register is not
 * counted: gcc then spills one accumulator per reduction step, which measured
 * well (4x7 is the best tile of the 14x14 and 7x7 ResNet layers); bigger tiles
 * spill more and are rejected. */
static int conv_regsNeeded(const ConvPlan *p) { return (int)(p->OCV * p->RN + p->OCV); }

static int64_t conv_unrolledFmas(const ConvPlan *p) {
    int64_t ic = p->unroll_ic < p->ICB ? p->unroll_ic : p->ICB;
    return p->OCV * p->RN * ic * (p->unroll_kw ? p->KW : 1);
}

static bool conv2d_precheck(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                            char *reason, size_t n) {
    ConvPlan p;
    conv_plan(wl, space, choice, dev, &p);
    int regs = conv_regsNeeded(&p);
    if (regs > p.vregs) {
        snprintf(reason, n, "register tile %lldx%lld vectors needs %d vector registers > %d", (long long)p.OCV,
                 (long long)p.RN, regs, p.vregs);
        return false;
    }
    if (p.direct && (p.CO % p.OCB != 0 || p.OW % p.RN != 0)) {
        snprintf(reason, n,
                 "direct NHWC output needs co %% oc_bn == 0 and ow %% reg_n == 0 (co %lld, oc_bn %lld, ow %lld,"
                 " reg_n %lld)",
                 (long long)p.CO, (long long)p.OCB, (long long)p.OW, (long long)p.RN);
        return false;
    }
    int64_t fmas = conv_unrolledFmas(&p);
    if (fmas > MAX_UNROLLED_FMAS) {
        snprintf(reason, n, "unrolled loop body of %lld vector FMAs > %d (compile time)", (long long)fmas,
                 MAX_UNROLLED_FMAS);
        return false;
    }
    return true;
}

/* The body of the reduction at one (kh, kw, ic chunk): ip / wp are set. When
 * cols is not NULL only the columns r with cols[r] get the step (an edge tile:
 * the others would read zero padding at this kw). */
static void conv_emitInner(StrBuf *sb, const ConvPlan *p, const bool *cols, int unroll) {
    StrBuf_printf(sb, "#pragma GCC unroll %d\n", unroll);
    StrBuf_printf(sb, "for (int ic = 0; ic < %lld; ic++) {\n", (long long)p->ICB);
    for (int v = 0; v < p->OCV; v++)
        StrBuf_printf(sb, "vf w%d = LD(wp + ic * %lld + %d);\n", v, (long long)p->OCB, v * p->vf);
    for (int r = 0; r < p->RN; r++) {
        if (cols && !cols[r]) continue;
        StrBuf_printf(sb, "{ float x = ip[ic + %lld];", (long long)(r * p->SW * p->ICB));
        for (int v = 0; v < p->OCV; v++)
            StrBuf_printf(sb, " a%d_%d += w%d * x;", v, r, v);
        StrBuf_append(sb, " }\n");
    }
    StrBuf_append(sb, "}\n");
}

/* The kh loop covers only the taps that read real input rows: khlo / khhi
 * are set per output row in tt_run (the border rows skip the padding rows). */
static void conv_emitReductionHead(StrBuf *sb, const ConvPlan *p) {
    const char *icc = "for (int icc = 0; icc < ICC; icc++)\n";
    const char *kh = "for (int kh = khlo; kh < khhi; kh++)\n";
    StrBuf_append(sb, p->red == 0 ? icc : kh);
    StrBuf_append(sb, p->red == 0 ? kh : icc);
}

static void conv_emitReduction(StrBuf *sb, const ConvPlan *p) {
    conv_emitReductionHead(sb, p);
    StrBuf_printf(sb, "#pragma GCC unroll %d\nfor (int kw = 0; kw < KW; kw++) {\n", p->unroll_kw ? (int)p->KW : 1);
    StrBuf_append(sb, "const float *ip = ib + (size_t)icc * IN_C + kh * DH * IN_H + kw * DW * ICB;\n"
                      "const float *wp = wb + (size_t)((icc * KH + kh) * KW + kw) * ICB * OCB;\n");
    conv_emitInner(sb, p, NULL, p->unroll_ic);
    StrBuf_append(sb, "}\n");
}

/* Column r of the tile at owo reads real input at tap kw (not the zero
 * padding, not past the output width). */
static bool conv_colValid(const ConvPlan *p, int64_t owo, int r, int64_t kw) {
    int64_t ow = owo + r;
    int64_t x = ow * p->SW + kw * p->DW - p->PW;
    return ow < p->OW && x >= 0 && x < p->W;
}

static bool conv_tileFull(const ConvPlan *p, int64_t owo) {
    for (int r = 0; r < p->RN; r++)
        for (int64_t kw = 0; kw < p->KW; kw++)
            if (!conv_colValid(p, owo, r, kw)) return false;
    return true;
}

/* An edge tile at a fixed owo: the kw loop written out, each tap only for the
 * columns that read real input. */
static void conv_emitEdgeTile(StrBuf *sb, const ConvPlan *p, int64_t owo) {
    StrBuf_printf(sb, "{\nconst int owo = %lld;\nconst float *ib = ibase + (size_t)owo * SW * ICB;\n", (long long)owo);
    CpuGen_emitTileInit(sb, (int)p->OCV, (int)p->RN, p->vf, p->bias);
    conv_emitReductionHead(sb, p);
    StrBuf_append(sb, "{\n");
    for (int64_t kw = 0; kw < p->KW; kw++) {
        bool cols[64];
        int n = 0;
        for (int r = 0; r < p->RN; r++)
            n += (cols[r] = conv_colValid(p, owo, r, kw));
        if (n == 0) continue;
        StrBuf_printf(sb,
                      "{\nconst float *ip = ib + (size_t)icc * IN_C + kh * DH * IN_H + %lld * DW * ICB;\n"
                      "const float *wp = wb + (size_t)((icc * KH + kh) * KW + %lld) * ICB * OCB;\n",
                      (long long)kw, (long long)kw);
        /* the whole kw range is written out here: keep the body within the compile-time bound */
        int unroll = p->OCV * p->RN * p->KW * p->unroll_ic <= MAX_UNROLLED_FMAS ? p->unroll_ic : 1;
        conv_emitInner(sb, p, cols, unroll);
        StrBuf_append(sb, "}\n");
    }
    StrBuf_append(sb, "}\n");
    CpuGen_emitTileStore(sb, (int)p->OCV, (int)p->RN, p->vf, "(size_t)owo * OSTR", p->OSTR, p->residual, p->act);
    StrBuf_append(sb, "}\n");
}

/* Tiles of a row: at most EDGE_TILES leading and trailing tiles that touch the
 * padding are written out as edge tiles (their padding taps skipped); the rest
 * run in the ordinary loop (reading zero padding is correct, only slower). */
#define EDGE_TILES 2
static void conv_emitRowTiles(StrBuf *sb, const ConvPlan *p) {
    int64_t tiles = p->OWP / p->RN, lo = 0, hi = tiles;
    while (lo < hi && lo < EDGE_TILES && !conv_tileFull(p, lo * p->RN))
        lo++;
    while (hi > lo && tiles - hi < EDGE_TILES && !conv_tileFull(p, (hi - 1) * p->RN))
        hi--;
    for (int64_t t = 0; t < lo; t++)
        conv_emitEdgeTile(sb, p, t * p->RN);
    if (hi > lo) {
        StrBuf_printf(sb,
                      "for (int owo = %lld; owo < %lld; owo += RN) {\n"
                      "const float *ib = ibase + (size_t)owo * SW * ICB;\n",
                      (long long)(lo * p->RN), (long long)(hi * p->RN));
        CpuGen_emitTileInit(sb, (int)p->OCV, (int)p->RN, p->vf, p->bias);
        conv_emitReduction(sb, p);
        CpuGen_emitTileStore(sb, (int)p->OCV, (int)p->RN, p->vf, "(size_t)owo * OSTR", p->OSTR, p->residual, p->act);
        StrBuf_append(sb, "}\n");
    }
    for (int64_t t = hi; t < tiles; t++)
        conv_emitEdgeTile(sb, p, t * p->RN);
}

static void conv_emitRun(StrBuf *sb, const ConvPlan *p) {
    StrBuf_printf(sb,
                  "void tt_run(void *sv) {\n    St *s = sv;\n"
                  "#pragma omp parallel for collapse(3) schedule(static%s)\n"
                  "    for (int n = 0; n < N; n++)\n",
                  p->split ? ", 1" : "");
    if (p->order == 0)
        StrBuf_append(sb, "    for (int occ = 0; occ < OCC; occ++)\n    for (int oh = 0; oh < OH; oh++) {\n");
    else
        StrBuf_append(sb, "    for (int oh = 0; oh < OH; oh++)\n    for (int occ = 0; occ < OCC; occ++) {\n");
    StrBuf_append(sb, "const float *wb = s->w + (size_t)occ * W_OCC;\n"
                      "const float *ibase = s->in + (size_t)n * IN_N + (size_t)oh * SH * IN_H;\n");
    if (p->direct) {
        StrBuf_printf(sb,
                      "size_t oofs = (((size_t)n * OH + oh) * OW) * CO + (size_t)occ * OCB;\n"
                      "float *ob = s->args[%d] + oofs;\n",
                      p->ai_out);
        if (p->residual) StrBuf_printf(sb, "const float *rb = s->args[%d] + oofs;\n", p->ai_res);
    } else {
        StrBuf_append(sb, "size_t oofs = (((size_t)n * OCC + occ) * OH + oh) * OWP * OCB;\n"
                          "float *ob = s->out + oofs;\n");
        if (p->residual) StrBuf_append(sb, "const float *rb = s->res + oofs;\n");
    }
    /* the taps of this output row that read real input rows (the others read zero padding) */
    StrBuf_append(sb, "const int kht = PH - oh * SH, khu = H - 1 + PH - oh * SH;\n"
                      "const int khlo = kht > 0 ? (kht + DH - 1) / DH : 0;\n"
                      "const int khhi = khu < 0 ? 0 : MIN(KH, khu / DH + 1);\n");
    conv_emitRowTiles(sb, p);
    StrBuf_append(sb, "}\n}\n");
}

/* Canonical index expressions of the data / output arrays for the layout. */
static void conv_emitPackFinish(StrBuf *sb, const ConvPlan *p, int ai_res, int ai_out) {
    /* tt_pack: data (and residual) into the blocked layouts; the zero border stays from tt_alloc */
    CpuGen_emitPackInput(sb, p->nhwc, "ICB", "CI", "1");
    if (p->direct) /* tt_run reads the residual and writes the output in place */
        StrBuf_append(sb, "}\nvoid tt_finish(void *sv) { (void)sv; }\n");
    else
        CpuGen_emitResidualAndFinish(sb, p->nhwc, ai_res, ai_out);
}

static void conv_emitSetup(StrBuf *sb, const ConvPlan *p, int ai_bias) {
    CpuGen_emitBlockedSetup(sb, "(size_t)N * IN_N", "(size_t)OCC * W_OCC", ai_bias);
    /* weights: canonical [co][ci][kh][kw] (NCHW) or [kh][kw][ci][co] (NHWC) -> blocked */
    const char *src = p->nhwc ? "((kh * KW + kw) * CI + ci) * CO + co" : "((co * CI + ci) * KH + kh) * KW + kw";
    StrBuf_printf(sb,
                  "    const float *wsrc = args[1];\n"
                  "    for (size_t co = 0; co < CO; co++) for (size_t ci = 0; ci < CI; ci++)\n"
                  "    for (size_t kh = 0; kh < KH; kh++) for (size_t kw = 0; kw < KW; kw++)\n"
                  "        s->w[(((co / OCB * ICC + ci / ICB) * KH + kh) * KW + kw) * ICB * OCB"
                  " + ci %% ICB * OCB + co %% OCB] = wsrc[%s];\n"
                  "    return 0;\n}\n",
                  src);
    CpuGen_emitBlockedTeardown(sb);
}

static Status conv2d_generate(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                              Dialect dialect, KernelSource *out, char *err) {
    if (dialect != DIALECT_C) return tt_fail(err, "conv2d cpu template generates C only");
    ConvPlan p;
    conv_plan(wl, space, choice, dev, &p);
    int ai_bias, ai_res;
    int ai_out = CpuGen_argIndices(p.bias, p.residual, &ai_bias, &ai_res);

    StrBuf sb;
    CpuGen_begin(&sb, "conv2d_nchwc.cpu", space, choice, p.vf);
    CpuGen_defines(&sb, "N CI H W CO KH KW SH SW PH PW DH DW OH OW ICB ICC OCB OCC RN OWP HP WP RESIDUAL OSTR", p.N,
                   p.CI, p.H, p.W, p.CO, p.KH, p.KW, p.SH, p.SW, p.PH, p.PW, p.DH, p.DW, p.OH, p.OW, p.ICB, p.ICC,
                   p.OCB, p.OCC, p.RN, p.OWP, p.HP, p.WP, p.residual && !p.direct ? 1 : 0, p.OSTR);
    StrBuf_append(&sb, "#define IN_H ((size_t)WP * ICB)\n#define IN_C ((size_t)HP * IN_H)\n"
                       "#define IN_N ((size_t)ICC * IN_C)\n#define W_OCC ((size_t)ICC * KH * KW * ICB * OCB)\n"
                       "#define O_N ((size_t)OCC * OH * OWP * OCB)\n");
    CpuGen_beginHelpers(&sb);
    conv_emitSetup(&sb, &p, ai_bias);
    CpuGen_endHelpers(&sb);
    CpuGen_beginPackHelpers(&sb, p.vf);
    conv_emitPackFinish(&sb, &p, ai_res, ai_out);
    CpuGen_endPackHelpers(&sb);
    conv_emitRun(&sb, &p);
    CpuGen_finish(&sb, out);
    return TT_OK;
}

static int conv2d_features(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                           float *out, int cap) {
    ConvPlan p;
    conv_plan(wl, space, choice, dev, &p);
    double f = 4.0;
    /* innermost working set: weights of one (kh, kw, ic chunk) step + the input columns the tile touches */
    double l1 = f * (p.ICB * p.OCB * p.KW + p.ICB * ((p.RN - 1) * p.SW + p.DW * (p.KW - 1) + 1));
    /* per (oh, oc chunk): all weights of the oc chunk + KH input rows */
    double l2 = f * (p.CI * p.KH * p.KW * p.OCB + p.CI * p.KH * p.WP);
    double l3 =
        f * (p.OCC * p.OCB * p.CI * p.KH * p.KW + p.N * p.CI * p.HP * p.WP + p.N * p.OCC * p.OCB * p.OH * p.OWP);
    double waste = (double)(p.OWP * p.OCC * p.OCB) / (double)(p.OW * p.CO);
    float v[] = {
        (float)(p.OCV * p.RN),      /* accumulators */
        (float)conv_regsNeeded(&p), /* vector registers needed */
        (float)p.vf,                /* vector width */
        (float)p.OCB,               /* innermost output extent */
        (float)p.RN,                /* register tile width */
        (float)p.ICB,               /* innermost reduction extent */
        (float)(p.unroll_kw ? p.KW : 1) * (float)(p.unroll_ic < p.ICB ? p.unroll_ic : p.ICB), /* unrolled steps */
        CpuGen_log2p(l1),
        CpuGen_log2p(l2),
        CpuGen_log2p(l3),
        l1 <= CPU_L1_BYTES ? 1.0f : 0.0f,
        l2 <= CPU_L2_BYTES ? 1.0f : 0.0f,
        (float)waste,
        (float)(p.N * p.OCC * p.OH), /* parallel iterations */
        (float)p.split,
    };
    return CpuGen_copyFeatures(v, (int)(sizeof v / sizeof v[0]), out, cap);
}

static int conv2d_blocked(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                          BlockedLayout *in, BlockedLayout *out) {
    ConvPlan p;
    conv_plan(wl, space, choice, dev, &p);
    *in = (BlockedLayout){p.N, p.CI, p.H, p.W, p.ICB, p.HP, p.WP, p.PH, p.PW, 1};
    if (p.direct) return BLOCKED_INPUT;
    *out = (BlockedLayout){p.N, p.CO, p.OH, p.OW, p.OCB, p.OH, p.OWP, 0, 0, 1};
    return BLOCKED_INPUT | BLOCKED_OUTPUT;
}

/* The register tile of the zero-trial default: the most accumulators that fit
 * the vector registers (conv_regsNeeded), discounted by the padding of the
 * output row (ow rounded up to reg_n) and of the channels (co rounded up to
 * oc_bn), and by loads (each ic step loads oc_vec weight vectors and
 * broadcasts reg_n inputs for oc_vec x reg_n FMAs: below ~1.5 FMAs per load
 * the loads bound it, so 1 x 14 loses to 2 x 7); on a tie
 * CPU_DEFAULT_BLOCK_VECS vectors of channels (the block the next layer reads
 * without a layout change). On AVX2 that is 2 x 7 (14 accumulators + 2
 * weight vectors = 16 registers), on AVX-512 2 x 14. */
static void conv_defaultTile(const Space *space, int vf, int vregs, int64_t co, int64_t ow, int64_t *ov_out,
                             int64_t *rn_out) {
    const int64_t *ovs, *rns;
    int n_ov = CpuGen_values(space, "oc_vec", &ovs), n_rn = CpuGen_values(space, "reg_n", &rns);
    double best = -1;
    *ov_out = ovs[0], *rn_out = rns[0];
    for (int i = 0; i < n_ov; i++)
        for (int j = 0; j < n_rn; j++) {
            int64_t ov = ovs[i], rn = rns[j], ocb = ov * vf;
            if (ov * rn + ov > vregs) continue;
            double eff_w = (double)ow / (double)((ow + rn - 1) / rn * rn);
            double eff_c = (double)co / (double)((co + ocb - 1) / ocb * ocb);
            double acc = (double)(ov * rn), per_load = acc / (double)(ov + rn) / 1.5;
            double score = acc * (per_load < 1 ? per_load : 1) * eff_w * eff_c;
            if (ov == CPU_DEFAULT_BLOCK_VECS) score *= 1.05;
            if (score > best) best = score, *ov_out = ov, *rn_out = rn;
        }
}

/* Zero-trial default (Template.default_config): the register tile above; the
 * reduction block ic_bn of the same channel block (the previous layer's
 * output block, so its blocked output is this layer's input), else the
 * largest divisor of ci below it; the kw taps unrolled and 2 input
 * channels per step when that divides ic_bn and the body stays within
 * MAX_UNROLLED_FMAS; the parallel loop over (output-channel block, row) in
 * contiguous ranges per thread (order 0, split 0: each core its own slice of
 * the weights in its L2), rows outside when the weights are under an eighth
 * of the input. The output stays blocked for the next layer (out_direct 0).
 * On ResNet-18 at 1 thread this is within the noise of the best of a 24-trial
 * search on the 3x3 layers (bench/results/default_bench.md). */
static Status conv2d_defaultConfig(const Workload *wl, const Space *space, const DeviceInfo *dev, int32_t *choice,
                                   char *err) {
    int vf = CpuGen_vf(dev), vregs = CpuGen_vregs(dev);
    int64_t ov, rn;
    CpuGen_clearChoice(space, choice);
    conv_defaultTile(space, vf, vregs, wl->co, Workload_outW(wl), &ov, &rn);
    CpuGen_pick(space, choice, "oc_vec", ov);
    CpuGen_pick(space, choice, "reg_n", rn);
    CpuGen_pick(space, choice, "ic_bn", (int64_t)CPU_DEFAULT_BLOCK_VECS * vf);
    int64_t icb = Space_optionByName(space, choice, "ic_bn");
    bool unroll_kw = wl->kw > 1 && ov * rn * wl->kw <= MAX_UNROLLED_FMAS;
    CpuGen_pick(space, choice, "unroll_kw", unroll_kw ? 1 : 0);
    int64_t uic = 2; /* a divisor of ic_bn: no remainder iterations */
    while (uic > 1 && (icb % uic != 0 || ov * rn * uic * (unroll_kw ? wl->kw : 1) > MAX_UNROLLED_FMAS))
        uic /= 2;
    CpuGen_pick(space, choice, "unroll_ic", uic);
    /* rows outside the channel blocks when the weights are small beside the input (the first layer,
     * ci 3): each band of input rows is read once, every weight stays in the L2 */
    int64_t weights = wl->ci * wl->kh * wl->kw * wl->co,
            input = wl->ci * (wl->h + 2 * wl->pad_h) * (wl->w + 2 * wl->pad_w);
    CpuGen_pick(space, choice, "order", 8 * weights < input ? 1 : 0);
    char reason[TT_ERRLEN];
    if (!conv2d_precheck(wl, space, choice, dev, reason, sizeof reason))
        return tt_fail(err, "conv2d default: %s", reason);
    return TT_OK;
}

const Template tmpl_conv2d_cpu = {
    .name = "conv2d_nchwc.cpu",
    .op = OP_CONV2D,
    .family = FAMILY_CPU,
    .applies = conv2d_applies,
    .define_space = conv2d_defineSpace,
    .precheck = conv2d_precheck,
    .generate = conv2d_generate,
    .features = conv2d_features,
    .blocked = conv2d_blocked,
    .default_config = conv2d_defaultConfig,
};
