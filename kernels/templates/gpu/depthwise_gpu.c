/* kernels/templates/gpu/depthwise_gpu.c: depthwise conv2d (NCHW) for GPUs.
 *
 * Output channel c reads input channel c / mult. The output axes are split
 * four ways (block / virtual thread / thread / inner) like the conv2d
 * template; there is no reduction over channels, so each block stages the
 * whole input patch of its channels (every kernel row and column) and its
 * weights in shared memory once, then each thread accumulates its register
 * tile. Knobs: tile_f, tile_y, tile_x,
 * auto_unroll_max_step {0, 256, 1500}, unroll_explicit. */
#include <stdio.h>

#include "kernels/templates/gpu/gpu.h"

typedef struct Dw {
    int64_t N, CI, M, CO, H, W, KH, KW, SH, SW, PH, PW, DH, DW;
    int64_t f[4], y[4], x[4];
    GpuUnroll unroll;
    int64_t FB, YB, XB, CT, IH, IW, NT, AY, AX, a_size, w_size;
} Dw;

static bool dw_applies(const Workload *wl) { return wl->op == OP_DEPTHWISE_CONV2D && wl->layout == LAYOUT_NCHW; }

static int64_t dw_co(const Workload *wl) { return wl->ci * (wl->mult > 0 ? wl->mult : 1); }

static Status dw_space(const Workload *wl, const DeviceInfo *dev, Space *s, char *err) {
    static const int64_t UNROLL[] = {0, 256, 1500}, EXPL[] = {0, 1};
    if (Space_addSplit(s, "tile_f", dw_co(wl), 4, SPLIT_FACTORS, 0, err) ||
        Space_addSplit(s, "tile_y", Workload_outH(wl), 4, SPLIT_FACTORS, 0, err) ||
        Space_addSplit(s, "tile_x", Workload_outW(wl), 4, SPLIT_FACTORS, 0, err) ||
        Space_addOption(s, "auto_unroll_max_step", UNROLL, 3, err) ||
        Space_addOption(s, "unroll_explicit", EXPL, 2, err))
        return TT_ERR;
    return TT_OK;
}

static void dw_load(Dw *d, const Workload *wl, const Space *s, const int32_t *choice) {
    d->N = wl->n, d->CI = wl->ci, d->M = wl->mult > 0 ? wl->mult : 1, d->CO = dw_co(wl);
    d->H = wl->h, d->W = wl->w, d->KH = wl->kh, d->KW = wl->kw;
    d->SH = wl->stride_h, d->SW = wl->stride_w, d->PH = wl->pad_h, d->PW = wl->pad_w;
    d->DH = wl->dil_h > 0 ? wl->dil_h : 1, d->DW = wl->dil_w > 0 ? wl->dil_w : 1;
    const int64_t *v = Space_splitByName(s, choice, "tile_f");
    for (int i = 0; i < 4; i++)
        d->f[i] = v[i];
    v = Space_splitByName(s, choice, "tile_y");
    for (int i = 0; i < 4; i++)
        d->y[i] = v[i];
    v = Space_splitByName(s, choice, "tile_x");
    for (int i = 0; i < 4; i++)
        d->x[i] = v[i];
    d->unroll.max_step = Space_optionByName(s, choice, "auto_unroll_max_step");
    d->unroll.explicit_ = Space_optionByName(s, choice, "unroll_explicit") != 0;
    d->FB = d->f[1] * d->f[2] * d->f[3];
    d->YB = d->y[1] * d->y[2] * d->y[3];
    d->XB = d->x[1] * d->x[2] * d->x[3];
    /* Input channels a block touches: FB / M when blocks start on a channel
     * group boundary, else one more partial group at each end. */
    d->CT = d->FB % d->M == 0 ? d->FB / d->M : (d->FB - 1) / d->M + 2;
    if (d->CT > d->CI) d->CT = d->CI;
    d->IH = (d->YB - 1) * d->SH + (d->KH - 1) * d->DH + 1;
    d->IW = (d->XB - 1) * d->SW + (d->KW - 1) * d->DW + 1;
    d->NT = d->f[2] * d->y[2] * d->x[2];
    d->AY = d->y[1] * d->y[3], d->AX = d->x[1] * d->x[3];
    d->a_size = d->CT * d->IH * d->IW;
    d->w_size = d->FB * d->KH * d->KW;
}

static bool dw_precheck(const Workload *wl, const Space *s, const int32_t *choice, const DeviceInfo *dev, char *reason,
                        size_t n) {
    Dw d;
    dw_load(&d, wl, s, choice);
    return Gpu_checkTile(dev, d.f, d.y, d.x, d.N, 4 * (d.a_size + d.w_size), reason, n);
}

#define L(v) ((long long)(v))

static Status dw_generate(const Workload *wl, const Space *s, const int32_t *choice, const DeviceInfo *dev,
                          Dialect dialect, KernelSource *out, char *err) {
    Dw d;
    dw_load(&d, wl, s, choice);
    Gpu_tileGeometry(d.f, d.y, d.x, d.N, out->grid, out->block);
    out->shared_bytes = 4 * (d.a_size + d.w_size);
    snprintf(out->entry, sizeof out->entry, "tt_depthwise");

    StrBuf sb, body;
    StrBuf_init(&sb);
    StrBuf_init(&body);
    StrBuf_append(&sb, Gpu_prelude(dialect));
    Gpu_emitTileHead(&sb, "tt_depthwise", wl, d.f, d.y, d.x, d.a_size, d.w_size, &d.unroll);
    StrBuf_printf(&sb, "    const int cin0 = f0 / %lld;\n", L(d.M));
    StrBuf_printf(&sb, "    const int ih0 = y0 * %lld - %lld, iw0 = x0 * %lld - %lld;\n", L(d.SH), L(d.PH), L(d.SW),
                  L(d.PW));

    StrBuf_printf(&body,
                  "const int i = k * %lld + tid;\n"
                  "if (i < %lld) {\n"
                  "    const int cc = cin0 + i / %lld, r = i %% %lld;\n"
                  "    const int ih = ih0 + r / %lld, iw = iw0 + r %% %lld;\n"
                  "    AA[i] = (cc < %lld && ih >= 0 && ih < %lld && iw >= 0 && iw < %lld) ?\n"
                  "        dn[(cc * %lld + ih) * %lld + iw] : 0.0f;\n"
                  "}",
                  L(d.NT), L(d.a_size), L(d.IH * d.IW), L(d.IH * d.IW), L(d.IW), L(d.IW), L(d.CI), L(d.H), L(d.W),
                  L(d.H), L(d.W));
    GpuLoop fa[] = {{"k", (d.a_size + d.NT - 1) / d.NT}};
    Gpu_emitNest(&sb, fa, 1, body.data, &d.unroll, 1);
    StrBuf_clear(&body);
    StrBuf_printf(&body,
                  "const int i = k * %lld + tid;\n"
                  "if (i < %lld) WW[i] = weight[f0 * %lld + i];",
                  L(d.NT), L(d.w_size), L(d.KH * d.KW));
    GpuLoop fw[] = {{"k", (d.w_size + d.NT - 1) / d.NT}};
    Gpu_emitNest(&sb, fw, 1, body.data, &d.unroll, 1);
    StrBuf_append(&sb, "    BARRIER();\n");

    StrBuf_clear(&body);
    StrBuf_printf(&body,
                  "const int fl = vf * %lld + tz * %lld + fi;\n"
                  "const int cl = (f0 + fl) / %lld - cin0;\n"
                  "const int yl = vy * %lld + ty * %lld + yi;\n"
                  "const int xl = vx * %lld + tx * %lld + xi;\n"
                  "acc[((vf * %lld + fi) * %lld + vy * %lld + yi) * %lld + vx * %lld + xi] +=\n"
                  "    AA[(cl * %lld + yl * %lld + ky * %lld) * %lld + xl * %lld + kx * %lld] *\n"
                  "    WW[(fl * %lld + ky) * %lld + kx];",
                  L(d.f[2] * d.f[3]), L(d.f[3]), L(d.M), L(d.y[2] * d.y[3]), L(d.y[3]), L(d.x[2] * d.x[3]), L(d.x[3]),
                  L(d.f[3]), L(d.AY), L(d.y[3]), L(d.AX), L(d.x[3]), L(d.IH), L(d.SH), L(d.DH), L(d.IW), L(d.SW),
                  L(d.DW), L(d.KH), L(d.KW));
    GpuLoop comp[] = {{"ky", d.KH},   {"kx", d.KW},   {"vf", d.f[1]}, {"fi", d.f[3]},
                      {"vy", d.y[1]}, {"yi", d.y[3]}, {"vx", d.x[1]}, {"xi", d.x[3]}};
    Gpu_emitNest(&sb, comp, 8, body.data, &d.unroll, 1);

    Gpu_emitTileStore(&sb, wl, d.f, d.y, d.x, d.CO, &d.unroll);

    StrBuf_done(&body);
    out->source = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return TT_OK;
}

static int dw_features(const Workload *wl, const Space *s, const int32_t *choice, const DeviceInfo *dev, float *out,
                       int cap) {
    Dw d;
    dw_load(&d, wl, s, choice);
    return Gpu_tileFeatures(d.f, d.y, d.x, d.N, 4 * (d.a_size + d.w_size), out, cap);
}

const Template tmpl_depthwise_gpu = {
    .name = "depthwise_conv2d_direct.gpu",
    .op = OP_DEPTHWISE_CONV2D,
    .family = FAMILY_GPU,
    .applies = dw_applies,
    .define_space = dw_space,
    .precheck = dw_precheck,
    .generate = dw_generate,
    .features = dw_features,
};
