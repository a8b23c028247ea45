/* kernels/templates/gpu/conv2d_gpu.c: direct conv2d (NCHW) for GPUs, with the
 * classic search space (tile_f/y/x, tile_rc/ry/rx, unroll knobs) written against the neutral GPU vocabulary.
 *
 * Output axes f (channels), y, x are split four ways: block / virtual thread /
 * thread / inner. Reduction axes rc, ry, rx are split three ways: outer (one
 * shared-memory staging step each) / middle / inner. Each step the block's
 * threads cooperatively fetch the input patch and the weight slice it needs
 * into shared memory; every thread then accumulates its register tile
 * (virtual threads x inner extents) from shared memory. Optional fused bias,
 * residual and relu. The batch runs along blockIdx.z with the channel blocks. */
#include <stdio.h>

#include "kernels/templates/gpu/gpu.h"

typedef struct Conv {
    int64_t N, CI, H, W, CO, KH, KW, SH, SW, PH, PW, DH, DW;
    int64_t f[4], y[4], x[4], rc[3], ry[3], rx[3];
    GpuUnroll unroll;
    /* derived */
    int64_t FB, YB, XB, RCT, RYT, RXT, IH, IW, NT, AY, AX;
    int64_t a_size, w_size;
} Conv;

static bool conv_applies(const Workload *wl) { return wl->op == OP_CONV2D && wl->layout == LAYOUT_NCHW; }

static Status conv_space(const Workload *wl, const DeviceInfo *dev, Space *s, char *err) {
    static const int64_t UNROLL[] = {0, 512, 1500}, EXPL[] = {0, 1};
    if (Space_addSplit(s, "tile_f", wl->co, 4, SPLIT_FACTORS, 0, err) ||
        Space_addSplit(s, "tile_y", Workload_outH(wl), 4, SPLIT_FACTORS, 0, err) ||
        Space_addSplit(s, "tile_x", Workload_outW(wl), 4, SPLIT_FACTORS, 0, err) ||
        Space_addSplit(s, "tile_rc", wl->ci, 3, SPLIT_FACTORS, 0, err) ||
        Space_addSplit(s, "tile_ry", wl->kh, 3, SPLIT_FACTORS, 0, err) ||
        Space_addSplit(s, "tile_rx", wl->kw, 3, SPLIT_FACTORS, 0, err) ||
        Space_addOption(s, "auto_unroll_max_step", UNROLL, 3, err) ||
        Space_addOption(s, "unroll_explicit", EXPL, 2, err))
        return TT_ERR;
    return TT_OK;
}

static void copy_split(int64_t *dst, const Space *s, const int32_t *choice, const char *name, int n) {
    const int64_t *v = Space_splitByName(s, choice, name);
    for (int i = 0; i < n; i++)
        dst[i] = v[i];
}

static void conv_load(Conv *c, const Workload *wl, const Space *s, const int32_t *choice) {
    c->N = wl->n, c->CI = wl->ci, c->H = wl->h, c->W = wl->w, c->CO = wl->co, c->KH = wl->kh, c->KW = wl->kw;
    c->SH = wl->stride_h, c->SW = wl->stride_w, c->PH = wl->pad_h, c->PW = wl->pad_w;
    c->DH = wl->dil_h > 0 ? wl->dil_h : 1, c->DW = wl->dil_w > 0 ? wl->dil_w : 1;
    copy_split(c->f, s, choice, "tile_f", 4);
    copy_split(c->y, s, choice, "tile_y", 4);
    copy_split(c->x, s, choice, "tile_x", 4);
    copy_split(c->rc, s, choice, "tile_rc", 3);
    copy_split(c->ry, s, choice, "tile_ry", 3);
    copy_split(c->rx, s, choice, "tile_rx", 3);
    c->unroll.max_step = Space_optionByName(s, choice, "auto_unroll_max_step");
    c->unroll.explicit_ = Space_optionByName(s, choice, "unroll_explicit") != 0;
    c->FB = c->f[1] * c->f[2] * c->f[3];
    c->YB = c->y[1] * c->y[2] * c->y[3];
    c->XB = c->x[1] * c->x[2] * c->x[3];
    c->RCT = c->rc[1] * c->rc[2];
    c->RYT = c->ry[1] * c->ry[2];
    c->RXT = c->rx[1] * c->rx[2];
    c->IH = (c->YB - 1) * c->SH + (c->RYT - 1) * c->DH + 1;
    c->IW = (c->XB - 1) * c->SW + (c->RXT - 1) * c->DW + 1;
    c->NT = c->f[2] * c->y[2] * c->x[2];
    c->AY = c->y[1] * c->y[3];
    c->AX = c->x[1] * c->x[3];
    c->a_size = c->RCT * c->IH * c->IW;
    c->w_size = c->FB * c->RCT * c->RYT * c->RXT;
}

static bool conv_precheck(const Workload *wl, const Space *s, const int32_t *choice, const DeviceInfo *dev,
                          char *reason, size_t n) {
    Conv c;
    conv_load(&c, wl, s, choice);
    return Gpu_checkTile(dev, c.f, c.y, c.x, c.N, 4 * (c.a_size + c.w_size), reason, n);
}

static Status conv_generate(const Workload *wl, const Space *s, const int32_t *choice, const DeviceInfo *dev,
                            Dialect dialect, KernelSource *out, char *err) {
    Conv c;
    conv_load(&c, wl, s, choice);
    Gpu_tileGeometry(c.f, c.y, c.x, c.N, out->grid, out->block);
    out->shared_bytes = 4 * (c.a_size + c.w_size);
    snprintf(out->entry, sizeof out->entry, "tt_conv2d");

    StrBuf sb, body;
    StrBuf_init(&sb);
    StrBuf_init(&body);
    StrBuf_append(&sb, Gpu_prelude(dialect));
    Gpu_emitTileHead(&sb, "tt_conv2d", wl, c.f, c.y, c.x, c.a_size, c.w_size, &c.unroll);

    StrBuf_printf(&sb, "    for (int rco = 0; rco < %lld; ++rco)\n", (long long)c.rc[0]);
    StrBuf_printf(&sb, "    for (int ryo = 0; ryo < %lld; ++ryo)\n", (long long)c.ry[0]);
    StrBuf_printf(&sb, "    for (int rxo = 0; rxo < %lld; ++rxo) {\n", (long long)c.rx[0]);
    StrBuf_append(&sb, "        BARRIER();\n");
    StrBuf_printf(&sb, "        const int c0 = rco * %lld, ky0 = ryo * %lld, kx0 = rxo * %lld;\n", (long long)c.RCT,
                  (long long)c.RYT, (long long)c.RXT);
    StrBuf_printf(&sb, "        const int ih0 = y0 * %lld - %lld + ky0 * %lld, iw0 = x0 * %lld - %lld + kx0 * %lld;\n",
                  (long long)c.SH, (long long)c.PH, (long long)c.DH, (long long)c.SW, (long long)c.PW, (long long)c.DW);
    /* cooperative fetch of the input patch (zero outside the padded image) */
    StrBuf_printf(
        &body,
        "const int i = k * %lld + tid;\n"
        "if (i < %lld) {\n"
        "    const int cc = i / %lld, r = i %% %lld;\n"
        "    const int ih = ih0 + r / %lld, iw = iw0 + r %% %lld;\n"
        "    AA[i] = (ih >= 0 && ih < %lld && iw >= 0 && iw < %lld) ? dn[((c0 + cc) * %lld + ih) * %lld + iw] "
        ": 0.0f;\n"
        "}",
        (long long)c.NT, (long long)c.a_size, (long long)(c.IH * c.IW), (long long)(c.IH * c.IW), (long long)c.IW,
        (long long)c.IW, (long long)c.H, (long long)c.W, (long long)c.H, (long long)c.W);
    GpuLoop fa[] = {{"k", (c.a_size + c.NT - 1) / c.NT}};
    Gpu_emitNest(&sb, fa, 1, body.data, &c.unroll, 2);
    /* cooperative fetch of the weight slice */
    StrBuf_clear(&body);
    int64_t wr = c.RCT * c.RYT * c.RXT;
    StrBuf_printf(
        &body,
        "const int i = k * %lld + tid;\n"
        "if (i < %lld) {\n"
        "    const int ff = i / %lld, r = i %% %lld;\n"
        "    const int cc = r / %lld, r2 = r %% %lld;\n"
        "    WW[i] = weight[((f0 + ff) * %lld + c0 + cc) * %lld + (ky0 + r2 / %lld) * %lld + kx0 + r2 %% %lld];\n"
        "}",
        (long long)c.NT, (long long)c.w_size, (long long)wr, (long long)wr, (long long)(c.RYT * c.RXT),
        (long long)(c.RYT * c.RXT), (long long)c.CI, (long long)(c.KH * c.KW), (long long)c.RXT, (long long)c.KW,
        (long long)c.RXT);
    GpuLoop fw[] = {{"k", (c.w_size + c.NT - 1) / c.NT}};
    Gpu_emitNest(&sb, fw, 1, body.data, &c.unroll, 2);
    StrBuf_append(&sb, "        BARRIER();\n");

    /* compute: rcm, rym, rxm, rci, ryi, rxi, then the register tile */
    StrBuf_clear(&body);
    StrBuf_printf(&body,
                  "const int cc = rcm * %lld + rci, ky = rym * %lld + ryi, kx = rxm * %lld + rxi;\n"
                  "const int fl = vf * %lld + tz * %lld + fi;\n"
                  "const int yl = vy * %lld + ty * %lld + yi;\n"
                  "const int xl = vx * %lld + tx * %lld + xi;\n"
                  "acc[((vf * %lld + fi) * %lld + vy * %lld + yi) * %lld + vx * %lld + xi] +=\n"
                  "    AA[(cc * %lld + yl * %lld + ky * %lld) * %lld + xl * %lld + kx * %lld] *\n"
                  "    WW[((fl * %lld + cc) * %lld + ky) * %lld + kx];",
                  (long long)c.rc[2], (long long)c.ry[2], (long long)c.rx[2], (long long)(c.f[2] * c.f[3]),
                  (long long)c.f[3], (long long)(c.y[2] * c.y[3]), (long long)c.y[3], (long long)(c.x[2] * c.x[3]),
                  (long long)c.x[3], (long long)c.f[3], (long long)c.AY, (long long)c.y[3], (long long)c.AX,
                  (long long)c.x[3], (long long)c.IH, (long long)c.SH, (long long)c.DH, (long long)c.IW,
                  (long long)c.SW, (long long)c.DW, (long long)c.RCT, (long long)c.RYT, (long long)c.RXT);
    GpuLoop comp[] = {{"rcm", c.rc[1]}, {"rym", c.ry[1]}, {"rxm", c.rx[1]}, {"rci", c.rc[2]},
                      {"ryi", c.ry[2]}, {"rxi", c.rx[2]}, {"vf", c.f[1]},   {"fi", c.f[3]},
                      {"vy", c.y[1]},   {"yi", c.y[3]},   {"vx", c.x[1]},   {"xi", c.x[3]}};
    Gpu_emitNest(&sb, comp, 12, body.data, &c.unroll, 2);
    StrBuf_append(&sb, "    }\n");

    Gpu_emitTileStore(&sb, wl, c.f, c.y, c.x, c.CO, &c.unroll);

    StrBuf_done(&body);
    out->source = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return TT_OK;
}

static int conv_features(const Workload *wl, const Space *s, const int32_t *choice, const DeviceInfo *dev, float *out,
                         int cap) {
    Conv c;
    conv_load(&c, wl, s, choice);
    return Gpu_tileFeatures(c.f, c.y, c.x, c.N, 4 * (c.a_size + c.w_size), out, cap);
}

const Template tmpl_conv2d_gpu = {
    .name = "conv2d_direct.gpu",
    .op = OP_CONV2D,
    .family = FAMILY_GPU,
    .applies = conv_applies,
    .define_space = conv_space,
    .precheck = conv_precheck,
    .generate = conv_generate,
    .features = conv_features,
};
