/* kernels/templates/cpu/cpu_gen.c: helpers shared by the CPU templates. */
#include "kernels/templates/cpu/cpu_gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int CpuGen_vf(const DeviceInfo *dev) {
    int vf = dev ? dev->vector_floats : 0;
    return vf == 16 || vf == 8 || vf == 4 ? vf : 4;
}

int CpuGen_vregs(const DeviceInfo *dev) { return CpuGen_vf(dev) == 16 ? 32 : 16; }

/* tt_transpose(src, ss, dst, ds, ni, nj): dst[j * ds + i] = src[i * ss + j] for i < ni, j < nj, in
 * VF x VF tiles through registers (tt_tile: VF loads, log2(VF) rounds of shuffles that swap the
 * off-diagonal blocks of size VF/2, VF/4, ..., 1, VF stores), the edges one float at a time. The
 * layout transforms between canonical and blocked tensors go through it. */
static void emit_transpose(StrBuf *sb, int vf) {
    StrBuf_append(sb, "static inline void tt_tile(const float *src, size_t ss, float *dst, size_t ds) {\n");
    for (int i = 0; i < vf; i++)
        StrBuf_printf(sb, "    vf r%d = LD(src + %d * ss);\n", i, i);
    for (int d = vf / 2; d >= 1; d /= 2)
        for (int i = 0; i < vf; i++) {
            if (i & d) continue;
            StrBuf_printf(sb, "    { vf lo = __builtin_shuffle(r%d, r%d, (vi){", i, i + d);
            for (int l = 0; l < vf; l++)
                StrBuf_printf(sb, "%s%d", l ? ", " : "", (l & d) == 0 ? l : vf + l - d);
            StrBuf_printf(sb, "});\n      r%d = __builtin_shuffle(r%d, r%d, (vi){", i + d, i, i + d);
            for (int l = 0; l < vf; l++)
                StrBuf_printf(sb, "%s%d", l ? ", " : "", (l & d) == 0 ? l + d : vf + l);
            StrBuf_printf(sb, "}); r%d = lo; }\n", i);
        }
    for (int i = 0; i < vf; i++)
        StrBuf_printf(sb, "    ST(dst + %d * ds, r%d);\n", i, i);
    StrBuf_append(sb, "}\n"
                      "static void tt_transpose(const float *src, size_t ss, float *dst, size_t ds, int ni, int nj) {\n"
                      "    int i = 0;\n"
                      "    for (; i + VF <= ni; i += VF) {\n"
                      "        int j = 0;\n"
                      "        for (; j + VF <= nj; j += VF) tt_tile(src + i * ss + j, ss, dst + j * ds + i, ds);\n"
                      "        for (; j < nj; j++)\n"
                      "            for (int k = i; k < i + VF; k++) dst[j * ds + k] = src[k * ss + j];\n"
                      "    }\n"
                      "    for (; i < ni; i++)\n"
                      "        for (int j = 0; j < nj; j++) dst[j * ds + i] = src[i * ss + j];\n"
                      "}\n");
}

void CpuGen_prelude(StrBuf *sb, int vf) {
    StrBuf_printf(sb,
                  "#include <stdlib.h>\n"
                  "#include <string.h>\n"
                  "#define VF %d\n"
                  "typedef float vf __attribute__((vector_size(%d), aligned(4)));\n"
                  "typedef int vi __attribute__((vector_size(%d), aligned(4)));\n"
                  "#define LD(p) (*(const vf *)(p))\n"
                  "#define ST(p, v) (*(vf *)(p) = (v))\n"
                  /* relu without a vector ?: (C has none): keep lanes where v > 0 */
                  "#define RELU(v) ((vf)((vi)(v) & ((v) > (vf){0})))\n"
                  /* ReLU6 (MobileNet-v2): relu, then the lanes at or above 6 set to 6 */
                  "static inline vf tt_relu6(vf x) {\n"
                  "    x = RELU(x);\n"
                  "    vf six = (vf){0} + 6.0f;\n"
                  "    vi m = x < six;\n"
                  "    return (vf)(((vi)x & m) | ((vi)six & ~m));\n"
                  "}\n"
                  "#define RELU6(v) tt_relu6(v)\n"
                  "#define MIN(a, b) ((a) < (b) ? (a) : (b))\n"
                  "static float *tt_alloc(size_t n) {\n"
                  "    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;\n"
                  "    float *p = aligned_alloc(64, bytes ? bytes : 64);\n"
                  "    if (p) memset(p, 0, bytes);\n"
                  "    return p;\n"
                  "}\n",
                  vf, vf * 4, vf * 4);
}

void CpuGen_beginHelpers(StrBuf *sb) { StrBuf_append(sb, "#pragma GCC push_options\n#pragma GCC optimize(\"O1\")\n"); }

void CpuGen_endHelpers(StrBuf *sb) { StrBuf_append(sb, "#pragma GCC pop_options\n"); }

void CpuGen_beginPackHelpers(StrBuf *sb, int vf) {
    StrBuf_append(sb, "#ifndef TT_HOT_HELPERS\n#pragma GCC push_options\n#pragma GCC optimize(\"O1\")\n#endif\n");
    emit_transpose(sb, vf);
}

void CpuGen_endPackHelpers(StrBuf *sb) {
    StrBuf_append(sb, "#ifndef TT_HOT_HELPERS\n#pragma GCC pop_options\n#endif\n");
}

int CpuGen_divisors(int64_t x, int64_t cap, int64_t *out, int max) {
    int64_t all[4096];
    int n = 0;
    for (int64_t d = 1; d <= x && d <= cap && n < 4096; d++)
        if (x % d == 0) all[n++] = d;
    int start = n > max ? n - max : 0;
    for (int i = start; i < n; i++)
        out[i - start] = all[i];
    return n - start;
}

int64_t CpuGen_paddedExtent(int64_t in, int64_t pad, int64_t out, int64_t stride, int64_t dil, int64_t k) {
    int64_t need = (out - 1) * stride + dil * (k - 1) + 1;
    return need > in + 2 * pad ? need : in + 2 * pad;
}

int CpuGen_filterLE(const int64_t *in, int n, int64_t cap, int64_t *out) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (in[i] <= cap || i == 0) out[m++] = in[i];
    return m;
}

float CpuGen_log2p(double x) { return (float)log2(1.0 + (x > 0 ? x : 0)); }

/* The NCHW <-> blocked copies go one blocked row (n, channel block, y) at a time, so that the
 * row of the blocked tensor ([W][B] floats) stays in L1 while B canonical rows stream through. */
void CpuGen_emitResidualAndFinish(StrBuf *sb, bool nhwc, int ai_res, int ai_out) {
    if (nhwc) { /* channel-innermost on both sides: the loops follow the canonical layout */
        const char *blk = "(((size_t)n * OCC + c / OCB) * OH + oh) * OWP * OCB + (size_t)ow * OCB + c % OCB";
        const char *canon = "(((size_t)n * OH + oh) * OW + ow) * CO + c";
        const char *loops = "    for (int n = 0; n < N; n++) for (int oh = 0; oh < OH; oh++)\n"
                            "    for (int ow = 0; ow < OW; ow++) for (int c = 0; c < CO; c++)\n";
        if (ai_res >= 0)
            StrBuf_printf(sb,
                          "    const float *rs = s->args[%d];\n#pragma omp parallel for collapse(2) schedule(static)\n"
                          "%s        s->res[%s] = rs[%s];\n",
                          ai_res, loops, blk, canon);
        StrBuf_append(sb, "}\n");
        StrBuf_printf(sb,
                      "void tt_finish(void *sv) {\n    St *s = sv;\n    float *dst = s->args[%d];\n"
                      "#pragma omp parallel for collapse(2) schedule(static)\n%s        dst[%s] = s->out[%s];\n}\n",
                      ai_out, loops, canon, blk);
        return;
    }
    /* per blocked row (n, channel block, oh): [OW][OCB] <-> cn canonical rows of OW */
    const char *rows =
        "#pragma omp parallel for collapse(3) schedule(static)\n"
        "    for (int n = 0; n < N; n++) for (int cc = 0; cc < OCC; cc++) for (int oh = 0; oh < OH; oh++) {\n"
        "        const size_t row = (((size_t)n * OCC + cc) * OH + oh) * OWP * OCB;\n"
        "        const size_t line = (((size_t)n * CO + cc * OCB) * OH + oh) * OW;\n"
        "        const int cn = CO - cc * OCB < OCB ? CO - cc * OCB : OCB;\n";
    if (ai_res >= 0)
        StrBuf_printf(sb,
                      "    const float *rs = s->args[%d];\n%s"
                      "        tt_transpose(rs + line, (size_t)OH * OW, s->res + row, OCB, cn, OW);\n    }\n",
                      ai_res, rows);
    StrBuf_append(sb, "}\n");
    StrBuf_printf(sb,
                  "void tt_finish(void *sv) {\n    St *s = sv;\n    float *dst = s->args[%d];\n%s"
                  "        tt_transpose(s->out + row, OCB, dst + line, (size_t)OH * OW, OW, cn);\n    }\n}\n",
                  ai_out, rows);
}

void CpuGen_emitDefines(StrBuf *sb, const char *names, const int64_t *values, int n_values) {
    int i = 0;
    for (const char *p = names; *p;) {
        size_t len = strcspn(p, " ");
        if (len) {
            if (i >= n_values) abort();
            StrBuf_printf(sb, "#define %.*s %lld\n", (int)len, p, (long long)values[i++]);
        }
        p += len + (p[len] == ' ');
    }
    if (i != n_values) abort();
}

void CpuGen_emitPackInput(StrBuf *sb, bool nhwc, const char *block, const char *chans, const char *mult) {
    StrBuf_append(sb, "void tt_pack(void *sv) {\n    St *s = sv;\n    const float *src = s->args[0];\n");
    if (!nhwc)
        StrBuf_printf(
            sb,
            "#pragma omp parallel for collapse(3) schedule(static)\n"
            "    for (int n = 0; n < N; n++) for (int c0 = 0; c0 < %2$s; c0 += %1$s) for (int h = 0; h < H; h++) {\n"
            "        float *dp = s->in + ((size_t)n * ((%2$s + %1$s - 1) / %1$s) + c0 / %1$s) * IN_C"
            " + (size_t)(h + PH) * IN_H + (size_t)PW * %1$s;\n"
            "        const int cn = %2$s - c0 < %1$s ? %2$s - c0 : %1$s;\n"
            "        if (%3$s == 1) {\n"
            "            tt_transpose(src + (((size_t)n * CI + c0) * H + h) * W, (size_t)H * W, dp, %1$s, cn, W);\n"
            "            continue;\n        }\n"
            "        for (int cb = 0; cb < cn; cb++) {\n"
            "            const float *sp = src + (((size_t)n * CI + (c0 + cb) / %3$s) * H + h) * W;\n"
            "            for (int w = 0; w < W; w++) dp[(size_t)w * %1$s + cb] = sp[w];\n"
            "        }\n    }\n",
            block, chans, mult);
    else
        StrBuf_printf(
            sb,
            "#pragma omp parallel for collapse(2) schedule(static)\n"
            "    for (int n = 0; n < N; n++) for (int h = 0; h < H; h++)\n"
            "    for (int w = 0; w < W; w++) {\n"
            "        const float *sp = src + (((size_t)n * H + h) * W + w) * CI;\n"
            "        float *dp = s->in + (size_t)n * ((%2$s + %1$s - 1) / %1$s) * IN_C + (size_t)(h + PH) * IN_H"
            " + (size_t)(w + PW) * %1$s;\n"
            "        for (int c = 0; c < %2$s; c++) dp[(size_t)(c / %1$s) * IN_C + c %% %1$s] = sp[c / %3$s];\n"
            "    }\n",
            block, chans, mult);
}

void CpuGen_begin(StrBuf *sb, const char *name, const Space *space, const int32_t *choice, int vf) {
    StrBuf_init(sb);
    char cfg[256];
    Space_format(space, choice, cfg, sizeof cfg);
    StrBuf_printf(sb, "/* tunetop %s: %s */\n", name, cfg);
    CpuGen_prelude(sb, vf);
}

void CpuGen_finish(StrBuf *sb, KernelSource *out) {
    out->source = StrBuf_take(sb);
    snprintf(out->entry, sizeof out->entry, "tt_run");
    StrBuf_done(sb);
}

int CpuGen_argIndices(bool bias, bool residual, int *ai_bias, int *ai_res) {
    int ai = 2;
    *ai_bias = bias ? ai++ : -1;
    *ai_res = residual ? ai++ : -1;
    return ai;
}

void CpuGen_emitBlockedSetup(StrBuf *sb, const char *in_floats, const char *w_floats, int ai_bias) {
    StrBuf_printf(sb,
                  "typedef struct St { float **args; float *in, *w, *bias, *res, *out; } St;\n"
                  "int tt_setup(float **args, void **state) {\n"
                  "    St *s = calloc(1, sizeof *s);\n    if (!s) return 1;\n    s->args = args;\n"
                  "    s->in = tt_alloc(%s);\n"
                  "    s->w = tt_alloc(%s);\n"
                  "    s->out = tt_alloc((size_t)N * O_N);\n"
                  "    s->bias = tt_alloc((size_t)OCC * OCB);\n"
                  "    s->res = tt_alloc(RESIDUAL ? (size_t)N * O_N : 1);\n"
                  "    *state = s;\n"
                  "    if (!s->in || !s->w || !s->out || !s->bias || !s->res) return 2;\n",
                  in_floats, w_floats);
    if (ai_bias >= 0) StrBuf_printf(sb, "    memcpy(s->bias, args[%d], CO * sizeof(float));\n", ai_bias);
}

void CpuGen_emitBlockedTeardown(StrBuf *sb) {
    StrBuf_append(sb, "void tt_teardown(void *sv) {\n    St *s = sv;\n    if (!s) return;\n"
                      "    free(s->in); free(s->w); free(s->out); free(s->bias); free(s->res); free(s);\n}\n");
}

void CpuGen_emitTileInit(StrBuf *sb, int nv, int rn, int vf, bool bias) {
    for (int v = 0; v < nv; v++) {
        if (bias)
            StrBuf_printf(sb, "vf b%d = LD(s->bias + occ * OCB + %d);\n", v, v * vf);
        else
            StrBuf_printf(sb, "vf b%d = (vf){0};\n", v);
    }
    for (int v = 0; v < nv; v++) {
        StrBuf_append(sb, "vf");
        for (int r = 0; r < rn; r++)
            StrBuf_printf(sb, "%s a%d_%d = b%d", r ? "," : "", v, r, v);
        StrBuf_append(sb, ";\n");
    }
}

int CpuGen_act(const Workload *wl) { return wl->relu6 ? CPU_ACT_RELU6 : wl->relu ? CPU_ACT_RELU : CPU_ACT_NONE; }

void CpuGen_emitAct(StrBuf *sb, int act, const char *v) {
    if (act != CPU_ACT_NONE) StrBuf_printf(sb, "%s = %s(%s);\n", v, act == CPU_ACT_RELU6 ? "RELU6" : "RELU", v);
}

void CpuGen_emitTileStore(StrBuf *sb, int nv, int rn, int vf, const char *col, int64_t rstride, bool residual,
                          int act) {
    for (int r = 0; r < rn; r++) {
        for (int v = 0; v < nv; v++) {
            char acc[32];
            snprintf(acc, sizeof acc, "a%d_%d", v, r);
            long long ofs = (long long)(r * rstride + v * vf);
            if (residual) StrBuf_printf(sb, "%s += LD(rb + %s + %lld);\n", acc, col, ofs);
            CpuGen_emitAct(sb, act, acc);
            StrBuf_printf(sb, "ST(ob + %s + %lld, %s);\n", col, ofs, acc);
        }
    }
}

int CpuGen_copyFeatures(const float *v, int n, float *out, int cap) {
    if (n > cap) n = cap;
    memcpy(out, v, (size_t)n * sizeof(float));
    return n;
}

int CpuGen_values(const Space *space, const char *name, const int64_t **out) {
    int k = Space_knobIndex(space, name);
    if (k < 0 || space->knobs[k].kind != KNOB_OPTION) return 0;
    *out = space->knobs[k].values;
    return space->knobs[k].n_values;
}

bool CpuGen_pick(const Space *space, int32_t *choice, const char *name, int64_t want) {
    int k = Space_knobIndex(space, name);
    if (k < 0 || space->knobs[k].kind != KNOB_OPTION) return false;
    const Knob *kn = &space->knobs[k];
    int best = 0;
    for (int i = 0; i < kn->n_values; i++)
        if (kn->values[i] <= want && (kn->values[best] > want || kn->values[i] > kn->values[best])) best = i;
    choice[k] = best;
    return true;
}

void CpuGen_clearChoice(const Space *space, int32_t *choice) {
    for (int k = 0; k < space->n_knobs; k++)
        choice[k] = 0;
}
