/* tuner/networks.c: the built-in networks and task extraction.
 *
 * Each network is written once as a small program against a Builder: conv(),
 * dwconv(), dense(), bmm() record a tunable layer (with the epilogue that the
 * graph has right after it: a folded batch-norm is a bias, then ReLU, and a
 * residual add), and untuned() records a memory-bound op by name. Shapes flow
 * through the program, so batch, layout and image size change every layer
 * consistently, and a layer whose output would be empty is an error.
 *
 * The shapes are the standard test-workload definitions, so that task lists
 * read like the ones tuning users know:
 *   resnet-N      pre-activation ResNet; a 1x1 projection shortcut in the first
 *                 unit of every stage (the first included); bottleneck units
 *                 (50+) put the stride on their first 1x1 conv
 *   mobilenet     v1, alpha 1.0
 *   mobilenet-v2  the paper's inverted residuals (torchvision shape: the t=1
 *                 block has no expansion conv); ReLU6 is not a fusable
 *                 epilogue here, so it is listed as an untuned clip
 *   squeezenet-1.1, vgg-16 (no batch-norm), inception-v3 (299x299)
 *   bert-base     the dense and batch_matmul layers of 12 encoder layers
 *                 (hidden 768, 12 heads, FFN 3072), Q, K, V as three denses
 */
#include "tuner/network.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void NetworkOptions_defaults(NetworkOptions *this) {
    memset(this, 0, sizeof *this);
    this->batch = 1;
    this->layout = LAYOUT_NCHW;
    this->image_size = 0;
    this->seq_len = 128;
    this->op_mask = 0;
}

/* ---- the builder ------------------------------------------------------- */

typedef struct Builder {
    int64_t batch;
    Layout layout;
    Workload *layers; /* every tunable layer, in graph order, with its own epilogue */
    int n_layers, cap_layers;
    NetworkUntuned *untuned;
    int n_untuned, cap_untuned;
    bool too_small; /* some layer's output would be empty */
} Builder;

/* An activation: channels and spatial size (the batch is the builder's). */
typedef struct Act {
    int64_t c, h, w;
} Act;

static void Builder_init(Builder *this, const NetworkOptions *opt) {
    memset(this, 0, sizeof *this);
    this->batch = opt->batch;
    this->layout = opt->layout;
}

static void Builder_done(Builder *this) {
    free(this->layers);
    free(this->untuned);
}

static void *grow(void *p, int *cap, size_t elem) {
    int ncap = *cap ? *cap * 2 : 64;
    void *q = realloc(p, (size_t)ncap * elem);
    if (!q) abort(); /* out of memory is not recoverable here (as in base/strbuf) */
    *cap = ncap;
    return q;
}

static void add_layer(Builder *this, const Workload *wl) {
    if (this->n_layers == this->cap_layers) this->layers = grow(this->layers, &this->cap_layers, sizeof *wl);
    this->layers[this->n_layers++] = *wl;
}

/* Records an untuned op; identical names merge into one counted entry. */
static void add_untuned_n(Builder *this, const char *name, int count) {
    for (int i = 0; i < this->n_untuned; i++) {
        if (strcmp(this->untuned[i].name, name) == 0) {
            this->untuned[i].count += count;
            return;
        }
    }
    if (this->n_untuned == this->cap_untuned)
        this->untuned = grow(this->untuned, &this->cap_untuned, sizeof *this->untuned);
    NetworkUntuned *u = &this->untuned[this->n_untuned++];
    memset(u, 0, sizeof *u);
    snprintf(u->name, sizeof u->name, "%s", name);
    u->count = count;
}

static void untuned(Builder *this, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void untuned(Builder *this, const char *fmt, ...) {
    char name[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    add_untuned_n(this, name, 1);
}

/* "1x64x56x56" in the builder's layout order. */
static void shape_str(const Builder *this, Act a, char *buf, size_t n) {
    if (this->layout == LAYOUT_NHWC)
        snprintf(buf, n, "%lldx%lldx%lldx%lld", (long long)this->batch, (long long)a.h, (long long)a.w, (long long)a.c);
    else
        snprintf(buf, n, "%lldx%lldx%lldx%lld", (long long)this->batch, (long long)a.c, (long long)a.h, (long long)a.w);
}

static void untuned_act(Builder *this, const char *op, Act a) {
    char s[96];
    shape_str(this, a, s, sizeof s);
    untuned(this, "%s %s", op, s);
}

static int64_t out_extent(int64_t in, int64_t k, int64_t stride, int64_t pad) {
    int64_t span = in + 2 * pad - k;
    return span < 0 ? 0 : span / stride + 1;
}

/* Epilogue flags of a tunable layer. */
enum { E_NONE = 0, E_BIAS = 1, E_RELU = 2, E_RES = 4 };

static Act conv_any(Builder *this, OpKind op, Act x, int64_t co, int64_t kh, int64_t kw, int64_t stride, int64_t ph,
                    int64_t pw, int epi) {
    Workload wl;
    memset(&wl, 0, sizeof wl);
    wl.op = op;
    wl.layout = this->layout;
    wl.n = this->batch;
    wl.ci = x.c;
    wl.h = x.h;
    wl.w = x.w;
    wl.co = op == OP_DEPTHWISE_CONV2D ? x.c : co;
    wl.mult = 1;
    wl.kh = kh;
    wl.kw = kw;
    wl.stride_h = wl.stride_w = stride;
    wl.pad_h = ph;
    wl.pad_w = pw;
    wl.dil_h = wl.dil_w = 1;
    wl.bias = (epi & E_BIAS) != 0;
    wl.relu = (epi & E_RELU) != 0;
    wl.residual = (epi & E_RES) != 0;
    Act y = {wl.co, out_extent(x.h, kh, stride, ph), out_extent(x.w, kw, stride, pw)};
    if (y.h < 1 || y.w < 1) {
        this->too_small = true;
        y.h = y.h < 1 ? 1 : y.h;
        y.w = y.w < 1 ? 1 : y.w;
        return y;
    }
    add_layer(this, &wl);
    return y;
}

/* Square kernel, symmetric padding. */
static Act conv(Builder *this, Act x, int64_t co, int64_t k, int64_t stride, int64_t pad, int epi) {
    return conv_any(this, OP_CONV2D, x, co, k, k, stride, pad, pad, epi);
}

static Act dwconv(Builder *this, Act x, int64_t k, int64_t stride, int64_t pad, int epi) {
    return conv_any(this, OP_DEPTHWISE_CONV2D, x, 0, k, k, stride, pad, pad, epi);
}

static void dense(Builder *this, int64_t m, int64_t k, int64_t n, int epi) {
    Workload wl;
    memset(&wl, 0, sizeof wl);
    wl.op = OP_DENSE;
    wl.layout = LAYOUT_NCHW; /* meaningless for dense; fixed so that keys agree */
    wl.m = m;
    wl.k = k;
    wl.n = n;
    wl.bias = (epi & E_BIAS) != 0;
    wl.relu = (epi & E_RELU) != 0;
    add_layer(this, &wl);
}

static void bmm(Builder *this, int64_t b, int64_t m, int64_t n, int64_t k) {
    Workload wl;
    memset(&wl, 0, sizeof wl);
    wl.op = OP_BATCH_MATMUL;
    wl.layout = LAYOUT_NCHW;
    wl.b = b;
    wl.m = m;
    wl.n = n;
    wl.k = k;
    add_layer(this, &wl);
}

static Act pool(Builder *this, const char *kind, Act x, int64_t k, int64_t stride, int64_t pad) {
    char s[96];
    shape_str(this, x, s, sizeof s);
    untuned(this, "%s %s %lldx%lld s%lld", kind, s, (long long)k, (long long)k, (long long)stride);
    Act y = {x.c, out_extent(x.h, k, stride, pad), out_extent(x.w, k, stride, pad)};
    if (y.h < 1 || y.w < 1) {
        this->too_small = true;
        y.h = y.h < 1 ? 1 : y.h;
        y.w = y.w < 1 ? 1 : y.w;
    }
    return y;
}

/* global pool, flatten, dense to the classes, softmax */
static void classifier(Builder *this, Act x, int64_t classes) {
    untuned_act(this, "global_avg_pool2d", x);
    dense(this, this->batch, x.c, classes, E_BIAS);
    untuned(this, "softmax %lldx%lld", (long long)this->batch, (long long)classes);
}

/* ---- ResNet -------------------------------- */

/* Pre-activation: each unit starts with BN+ReLU on its input. That cannot be
 * folded into the previous conv, because the un-normalised sum is also the
 * shortcut, so it stays an untuned op. The BN+ReLU inside a unit folds into
 * the conv before it (bias + relu); the unit's last conv takes the residual. */
static Act resnet_unit(Builder *this, Act x, int64_t nf, int64_t stride, bool dim_match, bool bottleneck) {
    untuned_act(this, "batch_norm+relu", x);
    Act y;
    if (bottleneck) {
        Act a = conv(this, x, nf / 4, 1, stride, 0, E_BIAS | E_RELU);
        Act b = conv(this, a, nf / 4, 3, 1, 1, E_BIAS | E_RELU);
        y = conv(this, b, nf, 1, 1, 0, E_RES);
    } else {
        Act a = conv(this, x, nf, 3, stride, 1, E_BIAS | E_RELU);
        y = conv(this, a, nf, 3, 1, 1, E_RES);
    }
    if (!dim_match) conv(this, x, nf, 1, stride, 0, E_NONE);
    return y;
}

static void net_resnet(Builder *this, int64_t image, int depth) {
    static const int units18[4] = {2, 2, 2, 2}, units34[4] = {3, 4, 6, 3}, units101[4] = {3, 4, 23, 3},
                     units152[4] = {3, 8, 36, 3};
    const int *units = depth == 18 ? units18 : depth == 101 ? units101 : depth == 152 ? units152 : units34;
    bool bottleneck = depth >= 50;
    static const int64_t filters_basic[5] = {64, 64, 128, 256, 512}, filters_bneck[5] = {64, 256, 512, 1024, 2048};
    const int64_t *filters = bottleneck ? filters_bneck : filters_basic;

    Act x = {3, image, image};
    untuned_act(this, "batch_norm", x); /* bn_data on the input: not foldable across the padded conv */
    if (image <= 32) {
        /* The small-image (CIFAR) stem: one 3x3 conv, no pooling */
        x = conv(this, x, filters[0], 3, 1, 1, E_NONE);
    } else {
        x = conv(this, x, filters[0], 7, 2, 3, E_BIAS | E_RELU);
        x = pool(this, "max_pool2d", x, 3, 2, 1);
    }
    for (int s = 0; s < 4; s++) {
        x = resnet_unit(this, x, filters[s + 1], s == 0 ? 1 : 2, false, bottleneck);
        for (int u = 1; u < units[s]; u++)
            x = resnet_unit(this, x, filters[s + 1], 1, true, bottleneck);
    }
    untuned_act(this, "batch_norm+relu", x);
    classifier(this, x, 1000);
}

/* ---- MobileNet v1 ----------------------- */

static void net_mobilenet(Builder *this, int64_t image) {
    static const struct {
        int64_t out;
        int stride;
    } blocks[13] = {{64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1},  {512, 2}, {512, 1},
                    {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}};
    Act x = {3, image, image};
    x = conv(this, x, 32, 3, 2, 1, E_BIAS | E_RELU);
    for (int i = 0; i < 13; i++) {
        x = dwconv(this, x, 3, blocks[i].stride, 1, E_BIAS | E_RELU);
        x = conv(this, x, blocks[i].out, 1, 1, 0, E_BIAS | E_RELU);
    }
    classifier(this, x, 1000);
}

/* ---- MobileNet v2 ----------------------------------------------------- */

static void net_mobilenet_v2(Builder *this, int64_t image) {
    static const struct {
        int t, c, n, s;
    } cfg[7] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    Act x = {3, image, image};
    x = conv(this, x, 32, 3, 2, 1, E_BIAS);
    untuned_act(this, "clip(0,6)", x);
    for (int g = 0; g < 7; g++) {
        for (int i = 0; i < cfg[g].n; i++) {
            int stride = i == 0 ? cfg[g].s : 1;
            bool res = stride == 1 && x.c == cfg[g].c;
            Act h = x;
            if (cfg[g].t != 1) {
                h = conv(this, h, x.c * cfg[g].t, 1, 1, 0, E_BIAS);
                untuned_act(this, "clip(0,6)", h);
            }
            h = dwconv(this, h, 3, stride, 1, E_BIAS);
            untuned_act(this, "clip(0,6)", h);
            x = conv(this, h, cfg[g].c, 1, 1, 0, res ? E_BIAS | E_RES : E_BIAS);
        }
    }
    x = conv(this, x, 1280, 1, 1, 0, E_BIAS);
    untuned_act(this, "clip(0,6)", x);
    classifier(this, x, 1000);
}

/* ---- SqueezeNet 1.1 -------------------- */

static Act fire(Builder *this, Act x, int64_t squeeze, int64_t e1, int64_t e3) {
    Act s = conv(this, x, squeeze, 1, 1, 0, E_BIAS | E_RELU);
    Act l = conv(this, s, e1, 1, 1, 0, E_BIAS | E_RELU);
    Act r = conv(this, s, e3, 3, 1, 1, E_BIAS | E_RELU);
    Act y = {l.c + r.c, l.h, l.w};
    untuned_act(this, "concatenate", y);
    return y;
}

static void net_squeezenet(Builder *this, int64_t image) {
    Act x = {3, image, image};
    x = conv(this, x, 64, 3, 2, 1, E_BIAS | E_RELU);
    x = pool(this, "max_pool2d", x, 3, 2, 0);
    x = fire(this, x, 16, 64, 64);
    x = fire(this, x, 16, 64, 64);
    x = pool(this, "max_pool2d", x, 3, 2, 0);
    x = fire(this, x, 32, 128, 128);
    x = fire(this, x, 32, 128, 128);
    x = pool(this, "max_pool2d", x, 3, 2, 0);
    x = fire(this, x, 48, 192, 192);
    x = fire(this, x, 48, 192, 192);
    x = fire(this, x, 64, 256, 256);
    x = fire(this, x, 64, 256, 256);
    x = conv(this, x, 1000, 1, 1, 0, E_BIAS | E_RELU);
    untuned_act(this, "global_avg_pool2d", x);
    untuned(this, "softmax %lldx%d", (long long)this->batch, 1000);
}

/* ---- VGG-16 (no batch-norm) -------------------- */

static void net_vgg16(Builder *this, int64_t image) {
    static const int per_stage[5] = {2, 2, 3, 3, 3};
    static const int64_t filters[5] = {64, 128, 256, 512, 512};
    Act x = {3, image, image};
    for (int s = 0; s < 5; s++) {
        for (int i = 0; i < per_stage[s]; i++)
            x = conv(this, x, filters[s], 3, 1, 1, E_BIAS | E_RELU);
        x = pool(this, "max_pool2d", x, 2, 2, 0);
    }
    dense(this, this->batch, x.c * x.h * x.w, 4096, E_BIAS | E_RELU);
    dense(this, this->batch, 4096, 4096, E_BIAS | E_RELU);
    dense(this, this->batch, 4096, 1000, E_BIAS);
    untuned(this, "softmax %lldx%d", (long long)this->batch, 1000);
}

/* ---- Inception v3 -------------------- */

/* conv + BN + ReLU with a kh x kw kernel */
static Act cbr(Builder *this, Act x, int64_t co, int64_t kh, int64_t kw, int64_t stride, int64_t ph, int64_t pw) {
    return conv_any(this, OP_CONV2D, x, co, kh, kw, stride, ph, pw, E_BIAS | E_RELU);
}

static Act cbr1(Builder *this, Act x, int64_t co) { return cbr(this, x, co, 1, 1, 1, 0, 0); }

static Act concat(Builder *this, Act like, int64_t channels) {
    Act y = {channels, like.h, like.w};
    untuned_act(this, "concatenate", y);
    return y;
}

static Act incep_a(Builder *this, Act x, int64_t proj) {
    Act t1 = cbr1(this, x, 64);
    Act t5 = cbr(this, cbr1(this, x, 48), 64, 5, 5, 1, 2, 2);
    Act t3 = cbr1(this, x, 64);
    t3 = cbr(this, t3, 96, 3, 3, 1, 1, 1);
    t3 = cbr(this, t3, 96, 3, 3, 1, 1, 1);
    Act p = pool(this, "avg_pool2d", x, 3, 1, 1);
    Act cp = cbr1(this, p, proj);
    return concat(this, t1, t1.c + t5.c + t3.c + cp.c);
}

static Act incep_b(Builder *this, Act x) {
    Act t3 = cbr(this, x, 384, 3, 3, 2, 0, 0);
    Act d = cbr1(this, x, 64);
    d = cbr(this, d, 96, 3, 3, 1, 1, 1);
    d = cbr(this, d, 96, 3, 3, 2, 0, 0);
    Act p = pool(this, "max_pool2d", x, 3, 2, 0);
    return concat(this, t3, t3.c + d.c + p.c);
}

static Act incep_c(Builder *this, Act x, int64_t c7) {
    Act t1 = cbr1(this, x, 192);
    Act d = cbr1(this, x, c7);
    d = cbr(this, d, c7, 1, 7, 1, 0, 3);
    d = cbr(this, d, 192, 7, 1, 1, 3, 0);
    Act q = cbr1(this, x, c7);
    q = cbr(this, q, c7, 7, 1, 1, 3, 0);
    q = cbr(this, q, c7, 1, 7, 1, 0, 3);
    q = cbr(this, q, c7, 7, 1, 1, 3, 0);
    q = cbr(this, q, 192, 1, 7, 1, 0, 3);
    Act p = pool(this, "avg_pool2d", x, 3, 1, 1);
    Act cp = cbr1(this, p, 192);
    return concat(this, t1, t1.c + d.c + q.c + cp.c);
}

static Act incep_d(Builder *this, Act x) {
    Act t = cbr1(this, x, 192);
    t = cbr(this, t, 320, 3, 3, 2, 0, 0);
    Act d = cbr1(this, x, 192);
    d = cbr(this, d, 192, 1, 7, 1, 0, 3);
    d = cbr(this, d, 192, 7, 1, 1, 3, 0);
    d = cbr(this, d, 192, 3, 3, 2, 0, 0);
    Act p = pool(this, "max_pool2d", x, 3, 2, 0);
    return concat(this, t, t.c + d.c + p.c);
}

static Act incep_e(Builder *this, Act x, const char *pool_kind) {
    Act t1 = cbr1(this, x, 320);
    Act d = cbr1(this, x, 384);
    Act da = cbr(this, d, 384, 1, 3, 1, 0, 1);
    Act db = cbr(this, d, 384, 3, 1, 1, 1, 0);
    Act e = cbr1(this, x, 448);
    e = cbr(this, e, 384, 3, 3, 1, 1, 1);
    Act ea = cbr(this, e, 384, 1, 3, 1, 0, 1);
    Act eb = cbr(this, e, 384, 3, 1, 1, 1, 0);
    Act p = pool(this, pool_kind, x, 3, 1, 1);
    Act cp = cbr1(this, p, 192);
    return concat(this, t1, t1.c + da.c + db.c + ea.c + eb.c + cp.c);
}

static void net_inception_v3(Builder *this, int64_t image) {
    Act x = {3, image, image};
    x = cbr(this, x, 32, 3, 3, 2, 0, 0);
    x = cbr(this, x, 32, 3, 3, 1, 0, 0);
    x = cbr(this, x, 64, 3, 3, 1, 1, 1);
    x = pool(this, "max_pool2d", x, 3, 2, 0);
    x = cbr1(this, x, 80);
    x = cbr(this, x, 192, 3, 3, 1, 0, 0);
    x = pool(this, "max_pool2d", x, 3, 2, 0);
    x = incep_a(this, x, 32);
    x = incep_a(this, x, 64);
    x = incep_a(this, x, 64);
    x = incep_b(this, x);
    x = incep_c(this, x, 128);
    x = incep_c(this, x, 160);
    x = incep_c(this, x, 160);
    x = incep_c(this, x, 192);
    x = incep_d(this, x);
    x = incep_e(this, x, "avg_pool2d");
    x = incep_e(this, x, "max_pool2d");
    classifier(this, x, 1000);
}

/* ---- BERT-base encoder ------------------------------------------------ */

static void net_bert_base(Builder *this, int64_t seq) {
    const int64_t hidden = 768, heads = 12, ffn = 3072, head_dim = hidden / heads;
    const int64_t tokens = this->batch * seq;
    for (int layer = 0; layer < 12; layer++) {
        dense(this, tokens, hidden, hidden, E_BIAS);        /* query */
        dense(this, tokens, hidden, hidden, E_BIAS);        /* key */
        dense(this, tokens, hidden, hidden, E_BIAS);        /* value */
        bmm(this, this->batch * heads, seq, seq, head_dim); /* Q K^T */
        untuned(this, "scale+mask %lldx%lldx%lld", (long long)(this->batch * heads), (long long)seq, (long long)seq);
        untuned(this, "softmax %lldx%lldx%lld", (long long)(this->batch * heads), (long long)seq, (long long)seq);
        bmm(this, this->batch * heads, seq, head_dim, seq); /* P V (V transposed to [d][seq]) */
        dense(this, tokens, hidden, hidden, E_BIAS);        /* attention output */
        untuned(this, "add+layer_norm %lldx%lld", (long long)tokens, (long long)hidden);
        dense(this, tokens, hidden, ffn, E_BIAS);
        untuned(this, "gelu %lldx%lld", (long long)tokens, (long long)ffn);
        dense(this, tokens, ffn, hidden, E_BIAS);
        untuned(this, "add+layer_norm %lldx%lld", (long long)tokens, (long long)hidden);
    }
}

/* ---- the table -------------------------------------------------------- */

typedef enum {
    KIND_RESNET,
    KIND_MOBILENET,
    KIND_MOBILENET_V2,
    KIND_SQUEEZENET,
    KIND_VGG16,
    KIND_INCEPTION,
    KIND_BERT
} NetKind;

static const struct NetDef {
    const char *name;
    NetKind kind;
    int depth;
    int default_image;
} NETS[] = {
    {"resnet-18", KIND_RESNET, 18, 224},
    {"resnet-34", KIND_RESNET, 34, 224},
    {"resnet-50", KIND_RESNET, 50, 224},
    {"resnet-101", KIND_RESNET, 101, 224},
    {"resnet-152", KIND_RESNET, 152, 224},
    {"mobilenet", KIND_MOBILENET, 0, 224},
    {"mobilenet-v2", KIND_MOBILENET_V2, 0, 224},
    {"squeezenet-1.1", KIND_SQUEEZENET, 0, 224},
    {"vgg-16", KIND_VGG16, 0, 224},
    {"inception-v3", KIND_INCEPTION, 0, 299},
    {"bert-base", KIND_BERT, 0, 0},
};

#define N_NETS ((int)(sizeof NETS / sizeof NETS[0]))

const char *Network_names(void) {
    return "resnet-18, resnet-34, resnet-50, resnet-101, resnet-152, mobilenet, mobilenet-v2, squeezenet-1.1, "
           "vgg-16, inception-v3, bert-base";
}

static const struct NetDef *find_net(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < N_NETS; i++)
        if (strcmp(NETS[i].name, name) == 0) return &NETS[i];
    return NULL;
}

/* Runs a network's program into b. TT_ERR for an unknown name or bad options. */
static Status build(const char *name, const NetworkOptions *opt_in, Builder *b, char *err) {
    NetworkOptions opt;
    if (opt_in)
        opt = *opt_in;
    else
        NetworkOptions_defaults(&opt);
    const struct NetDef *def = find_net(name);
    if (!def) return tt_fail(err, "unknown network '%s'; known networks: %s", name ? name : "", Network_names());
    if (opt.batch < 1) return tt_fail(err, "batch must be >= 1 (got %d)", opt.batch);
    if (opt.layout != LAYOUT_NCHW && opt.layout != LAYOUT_NHWC)
        return tt_fail(err, "unknown layout %d", (int)opt.layout);
    if (opt.image_size < 0) return tt_fail(err, "image size must be >= 1 (got %d)", opt.image_size);
    if (opt.seq_len < 0) return tt_fail(err, "sequence length must be >= 1 (got %d)", opt.seq_len);
    int64_t image = opt.image_size ? opt.image_size : def->default_image;
    int64_t seq = opt.seq_len ? opt.seq_len : 128;

    Builder_init(b, &opt);
    switch (def->kind) {
    case KIND_RESNET:
        net_resnet(b, image, def->depth);
        break;
    case KIND_MOBILENET:
        net_mobilenet(b, image);
        break;
    case KIND_MOBILENET_V2:
        net_mobilenet_v2(b, image);
        break;
    case KIND_SQUEEZENET:
        net_squeezenet(b, image);
        break;
    case KIND_VGG16:
        net_vgg16(b, image);
        break;
    case KIND_INCEPTION:
        net_inception_v3(b, image);
        break;
    case KIND_BERT:
        net_bert_base(b, seq);
        break;
    }
    if (b->too_small) {
        Builder_done(b);
        return tt_fail(err, "image size %lld is too small for %s: a layer's output would be empty", (long long)image,
                       def->name);
    }
    return TT_OK;
}

int Network_layerCount(const char *name, const NetworkOptions *opt, OpKind op) {
    Builder b;
    if (build(name, opt, &b, NULL) != TT_OK) return -1;
    int count = 0;
    for (int i = 0; i < b.n_layers; i++)
        count += b.layers[i].op == op;
    Builder_done(&b);
    return count;
}

/* ---- extraction ------------------------------------------------------- */

/* Same operator and shape: the identity of what the template tunes. */
static bool same_shape(const Workload *a, const Workload *b) {
    Workload x = *a, y = *b;
    x.bias = x.relu = x.residual = false;
    y.bias = y.relu = y.residual = false;
    return memcmp(&x, &y, sizeof x) == 0; /* both were zeroed before filling, so padding is equal */
}

static void out_act_str(const Builder *b, const Workload *wl, char *buf, size_t n) {
    switch (wl->op) {
    case OP_CONV2D:
    case OP_DEPTHWISE_CONV2D: {
        Act y = {wl->co, out_extent(wl->h, wl->kh, wl->stride_h, wl->pad_h),
                 out_extent(wl->w, wl->kw, wl->stride_w, wl->pad_w)};
        shape_str(b, y, buf, n);
        break;
    }
    case OP_DENSE:
        snprintf(buf, n, "%lldx%lld", (long long)wl->m, (long long)wl->n);
        break;
    default:
        snprintf(buf, n, "%lldx%lldx%lld", (long long)wl->b, (long long)wl->m, (long long)wl->n);
    }
}

/* Records, for one occurrence, the part of its epilogue that its task does
 * not fuse: it then runs as a separate elementwise op. */
static void add_unfused(Builder *b, const Workload *occ, const Workload *task) {
    bool bias = occ->bias && !task->bias, res = occ->residual && !task->residual, relu = occ->relu && !task->relu;
    if (!bias && !res && !relu) return;
    char shape[96];
    out_act_str(b, occ, shape, sizeof shape);
    untuned(b, "%s%s%s%s%s %s", bias ? "bias_add" : "", bias && (res || relu) ? "+" : "", res ? "add" : "",
            res && relu ? "+" : "", relu ? "relu" : "", shape);
}

/* Merging rule. In a network the same operator shape often occurs with
 * different epilogues: in pre-activation ResNet, a 3x3 conv is followed by
 * BN+ReLU in one place and by the residual add in another. Tasks merge by
 * operator and shape (what the template tunes), which gives the usual counts
 * (resnet-18: 12 conv tasks for 21 convs, resnet-50: 20). A task then fuses
 * only the epilogue parts that are correct for every occurrence, in the
 * evaluation order out = relu(op + bias + residual):
 *   - bias is fused when every occurrence has a bias;
 *   - residual is fused when every occurrence has one;
 *   - relu is fused only when all occurrences have exactly the same
 *     epilogue, since relu must come after every add of the occurrence.
 * What a task does not fuse for an occurrence is listed as an untuned
 * elementwise op ("bias_add+relu 1x128x28x28"), so the listing stays a true
 * account of the work. */
Status Network_extract(const char *name, const NetworkOptions *opt, NetworkTask **tasks_out, int *n_tasks_out,
                       NetworkUntuned **untuned_out, int *n_untuned_out, char *err) {
    *tasks_out = NULL;
    *n_tasks_out = 0;
    *untuned_out = NULL;
    *n_untuned_out = 0;
    Builder b;
    if (build(name, opt, &b, err) != TT_OK) return TT_ERR;
    unsigned mask = opt ? opt->op_mask : 0;

    NetworkTask *tasks = calloc((size_t)(b.n_layers ? b.n_layers : 1), sizeof *tasks);
    int *group = calloc((size_t)(b.n_layers ? b.n_layers : 1), sizeof *group);
    if (!tasks || !group) abort();
    int n = 0;
    bool *all_bias = calloc((size_t)(b.n_layers ? b.n_layers : 1), 4 * sizeof(bool));
    if (!all_bias) abort();
    bool *all_res = all_bias + b.n_layers, *all_same = all_res + b.n_layers;

    for (int i = 0; i < b.n_layers; i++) {
        const Workload *wl = &b.layers[i];
        group[i] = -1;
        if (mask && !(mask & (1u << wl->op))) continue;
        int t = 0;
        while (t < n && !same_shape(&tasks[t].wl, wl))
            t++;
        if (t == n) {
            tasks[n].wl = *wl;
            tasks[n].weight = 0;
            all_bias[n] = all_res[n] = all_same[n] = true;
            n++;
        }
        const Workload *first = &tasks[t].wl;
        all_bias[t] = all_bias[t] && wl->bias;
        all_res[t] = all_res[t] && wl->residual;
        all_same[t] =
            all_same[t] && wl->bias == first->bias && wl->relu == first->relu && wl->residual == first->residual;
        tasks[t].weight++;
        group[i] = t;
    }
    for (int t = 0; t < n; t++) {
        tasks[t].wl.bias = all_bias[t];
        tasks[t].wl.residual = all_res[t];
        tasks[t].wl.relu = all_same[t] && tasks[t].wl.relu;
    }
    for (int i = 0; i < b.n_layers; i++)
        if (group[i] >= 0) add_unfused(&b, &b.layers[i], &tasks[group[i]].wl);

    free(all_bias);
    free(group);
    free(b.layers);
    if (n == 0) {
        free(tasks);
        tasks = NULL;
    }
    *tasks_out = tasks;
    *n_tasks_out = n;
    *untuned_out = b.untuned;
    *n_untuned_out = b.n_untuned;
    return TT_OK;
}

Status Network_parseOps(const char *list, unsigned *mask, char *err) {
    *mask = 0;
    if (!list) return TT_OK;
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int found = -1;
        for (int op = 0; op < OP_COUNT && found < 0; op++) {
            const char *nm = Op_name((OpKind)op);
            if (strlen(nm) == len && strncmp(nm, p, len) == 0) found = op;
        }
        if (found < 0 && len == 9 && strncmp(p, "depthwise", 9) == 0) found = OP_DEPTHWISE_CONV2D;
        if (found < 0) {
            char valid[128] = "";
            for (int op = 0; op < OP_COUNT; op++) {
                strncat(valid, Op_name((OpKind)op), sizeof valid - strlen(valid) - 1);
                if (op + 1 < OP_COUNT) strncat(valid, ", ", sizeof valid - strlen(valid) - 1);
            }
            return tt_fail(err, "unknown op '%.*s'; valid ops: %s", (int)len, p, valid);
        }
        *mask |= 1u << found;
        if (!end) break;
        p = end + 1;
    }
    if (*mask == 0) return tt_fail(err, "empty op list");
    return TT_OK;
}
