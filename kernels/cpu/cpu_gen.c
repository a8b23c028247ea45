/* kernels/cpu/cpu_gen.c: helpers shared by the CPU templates. */
#include "kernels/cpu/cpu_gen.h"

#include <math.h>

int CpuGen_vf(const DeviceInfo *dev) {
    int vf = dev ? dev->vector_floats : 0;
    return vf == 16 || vf == 8 || vf == 4 ? vf : 4;
}

int CpuGen_vregs(const DeviceInfo *dev) { return CpuGen_vf(dev) == 16 ? 32 : 16; }

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

int CpuGen_filterLE(const int64_t *in, int n, int64_t cap, int64_t *out) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (in[i] <= cap || i == 0) out[m++] = in[i];
    return m;
}

float CpuGen_log2p(double x) { return (float)log2(1.0 + (x > 0 ? x : 0)); }

void CpuGen_emitResidualAndFinish(StrBuf *sb, bool nhwc, int ai_res, int ai_out) {
    /* blocked output index of (n, c, oh, ow) */
    const char *blk = "(((size_t)n * OCC + c / OCB) * OH + oh) * OWP * OCB + (size_t)ow * OCB + c % OCB";
    const char *canon =
        nhwc ? "(((size_t)n * OH + oh) * OW + ow) * CO + c" : "(((size_t)n * CO + c) * OH + oh) * OW + ow";
    /* loops in the order of the canonical layout, so that it is read / written contiguously */
    const char *loops = nhwc ? "    for (int n = 0; n < N; n++) for (int oh = 0; oh < OH; oh++)\n"
                               "    for (int ow = 0; ow < OW; ow++) for (int c = 0; c < CO; c++)\n"
                             : "    for (int n = 0; n < N; n++) for (int c = 0; c < CO; c++)\n"
                               "    for (int oh = 0; oh < OH; oh++) for (int ow = 0; ow < OW; ow++)\n";
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
}
