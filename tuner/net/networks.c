/* tuner/net/networks.c: the built-in networks as graphs, and task extraction.
 *
 * Each network is written once as a small program that adds ops to a Graph
 * (tuner/net/graph.h): conv(), dwconv(), dense() add a tunable op followed by its
 * epilogue ops (a folded batch-norm is a bias_add, then the residual add and
 * ReLU), and the other ops (batch-norm, pooling, concat, softmax, ...) are ops
 * of their own. Tasks and the untuned listing are derived from the graph by
 * Graph_tasks. Shapes flow through the program, so batch, layout and image
 * size change every layer consistently, and a layer whose output would be
 * empty is an error.
 *
 * The shapes are the standard test-workload definitions, so that task lists
 * read like the ones tuning users know:
 *   resnet-N      pre-activation ResNet; a 1x1 projection shortcut in the first
 *                 unit of every stage (the first included); bottleneck units
 *                 (50+) put the stride on their first 1x1 conv
 *   mobilenet     v1, alpha 1.0
 *   mobilenet-v2  the paper's inverted residuals (torchvision shape: the t=1
 *                 block has no expansion conv); its ReLU6 (a clip to
 *                 [0, 6]) is a conv epilogue (Workload.relu6)
 *   squeezenet-1.1, vgg-16 (no batch-norm), inception-v3 (299x299)
 *   bert-base     the dense and batch_matmul layers of 12 encoder layers
 *                 (hidden 768, 12 heads, FFN 3072), Q, K, V as three denses
 *   tiny-resnet   a few layers at 16x16, for tests (net_tiny_resnet)
 */
#include "tuner/net/network.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

void NetworkOptions_defaults(NetworkOptions *this) {
    memset(this, 0, sizeof *this);
    this->batch = 1;
    this->layout = LAYOUT_NCHW;
    this->image_size = 0;
    this->seq_len = 128;
    this->op_mask = 0;
}

/* ---- the builder ------------------------------------------------------- */

/* The networks are written against these helpers, which add graph ops. An
 * activation is a tensor id; its shape is in the graph. */
typedef Graph Builder;

/* Epilogue of a tunable layer, as ops after it: a folded batch-norm or a bias
 * (bias_add), the residual add, ReLU. */
enum { E_NONE = 0, E_BIAS = 1, E_RELU = 2 };

static int epilogue(Builder *this, int y, int epi, int residual) {
    if (epi & E_BIAS) y = Graph_unary(this, GOP_BIAS_ADD, y, 0, 0, false);
    if (residual >= 0) y = Graph_add(this, y, residual, false);
    if (epi & E_RELU) y = Graph_unary(this, GOP_RELU, y, 0, 0, false);
    return y;
}

static int conv_any(Builder *this, GraphOpKind kind, int x, int64_t co, int64_t kh, int64_t kw, int64_t stride,
                    int64_t ph, int64_t pw, int epi, int residual) {
    return epilogue(this, Graph_conv(this, kind, x, co, kh, kw, stride, ph, pw), epi, residual);
}

/* Square kernel, symmetric padding. */
static int conv(Builder *this, int x, int64_t co, int64_t k, int64_t stride, int64_t pad, int epi) {
    return conv_any(this, GOP_CONV2D, x, co, k, k, stride, pad, pad, epi, -1);
}

static int dwconv(Builder *this, int x, int64_t k, int64_t stride, int64_t pad, int epi) {
    return conv_any(this, GOP_DEPTHWISE, x, 0, k, k, stride, pad, pad, epi, -1);
}

static int dense(Builder *this, int x, int64_t n, int epi) { return epilogue(this, Graph_dense(this, x, n), epi, -1); }

static int64_t C(const Builder *this, int x) { return this->tensors[x].dim[1]; }

/* batch-norm (as a per-channel scale and shift) then ReLU: one untuned entry */
static int bn_relu(Builder *this, int x) {
    return Graph_unary(this, GOP_RELU, Graph_unary(this, GOP_BATCH_NORM, x, 0, 0, false), 0, 0, true);
}

static int clip6(Builder *this, int x) { return Graph_unary(this, GOP_CLIP, x, 0, 6, false); }

/* global pool, flatten, dense to the classes, softmax */
static int classifier(Builder *this, int x, int64_t classes) {
    x = Graph_unary(this, GOP_GLOBAL_AVG_POOL, x, 0, 0, false);
    x = Graph_unary(this, GOP_FLATTEN, x, 0, 0, false);
    x = dense(this, x, classes, E_BIAS);
    return Graph_unary(this, GOP_SOFTMAX, x, 0, 0, false);
}

static int image_input(Builder *this, int64_t image) {
    int64_t dim[4] = {this->batch, 3, image, image};
    return Graph_input(this, 4, dim);
}

/* ---- ResNet -------------------------------- */

/* Pre-activation: each unit starts with BN+ReLU on its input. That cannot be
 * folded into the previous conv, because the un-normalised sum is also the
 * shortcut, so it stays an untuned op. The BN+ReLU inside a unit folds into
 * the conv before it (bias + relu); the unit's last conv takes the residual.
 * The projection shortcut reads the pre-activated input and comes after the
 * main path (so tasks keep their first-occurrence order). */
static int resnet_unit(Builder *this, int x, int64_t nf, int64_t stride, bool dim_match, bool bottleneck) {
    int act = bn_relu(this, x), last;
    if (bottleneck) {
        int a = conv(this, act, nf / 4, 1, stride, 0, E_BIAS | E_RELU);
        int b = conv(this, a, nf / 4, 3, 1, 1, E_BIAS | E_RELU);
        last = Graph_conv(this, GOP_CONV2D, b, nf, 1, 1, 1, 0, 0);
    } else {
        int a = conv(this, act, nf, 3, stride, 1, E_BIAS | E_RELU);
        last = Graph_conv(this, GOP_CONV2D, a, nf, 3, 3, 1, 1, 1);
    }
    int shortcut = dim_match ? x : conv(this, act, nf, 1, stride, 0, E_NONE);
    return Graph_add(this, last, shortcut, false);
}

static int net_resnet(Builder *this, int64_t image, int depth) {
    static const int units18[4] = {2, 2, 2, 2}, units34[4] = {3, 4, 6, 3}, units101[4] = {3, 4, 23, 3},
                     units152[4] = {3, 8, 36, 3};
    const int *units = depth == 18 ? units18 : depth == 101 ? units101 : depth == 152 ? units152 : units34;
    bool bottleneck = depth >= 50;
    static const int64_t filters_basic[5] = {64, 64, 128, 256, 512}, filters_bneck[5] = {64, 256, 512, 1024, 2048};
    const int64_t *filters = bottleneck ? filters_bneck : filters_basic;

    int x = image_input(this, image);
    x = Graph_unary(this, GOP_BATCH_NORM, x, 0, 0, false); /* bn_data: not foldable across the padded conv */
    if (image <= 32) {
        /* The small-image (CIFAR) stem: one 3x3 conv, no pooling */
        x = conv(this, x, filters[0], 3, 1, 1, E_NONE);
    } else {
        x = conv(this, x, filters[0], 7, 2, 3, E_BIAS | E_RELU);
        x = Graph_pool(this, GOP_MAX_POOL, x, 3, 2, 1);
    }
    for (int s = 0; s < 4; s++) {
        x = resnet_unit(this, x, filters[s + 1], s == 0 ? 1 : 2, false, bottleneck);
        for (int u = 1; u < units[s]; u++)
            x = resnet_unit(this, x, filters[s + 1], 1, true, bottleneck);
    }
    x = bn_relu(this, x);
    return classifier(this, x, 1000);
}

/* ---- MobileNet v1 ----------------------- */

static int net_mobilenet(Builder *this, int64_t image) {
    static const struct {
        int64_t out;
        int stride;
    } blocks[13] = {{64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1},  {512, 2}, {512, 1},
                    {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}};
    int x = image_input(this, image);
    x = conv(this, x, 32, 3, 2, 1, E_BIAS | E_RELU);
    for (int i = 0; i < 13; i++) {
        x = dwconv(this, x, 3, blocks[i].stride, 1, E_BIAS | E_RELU);
        x = conv(this, x, blocks[i].out, 1, 1, 0, E_BIAS | E_RELU);
    }
    return classifier(this, x, 1000);
}

/* ---- MobileNet v2 ----------------------------------------------------- */

static int net_mobilenet_v2(Builder *this, int64_t image) {
    static const struct {
        int t, c, n, s;
    } cfg[7] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    int x = image_input(this, image);
    x = clip6(this, conv(this, x, 32, 3, 2, 1, E_BIAS));
    for (int g = 0; g < 7; g++) {
        for (int i = 0; i < cfg[g].n; i++) {
            int stride = i == 0 ? cfg[g].s : 1;
            bool res = stride == 1 && C(this, x) == cfg[g].c;
            int h = x;
            if (cfg[g].t != 1) h = clip6(this, conv(this, h, C(this, x) * cfg[g].t, 1, 1, 0, E_BIAS));
            h = clip6(this, dwconv(this, h, 3, stride, 1, E_BIAS));
            x = conv_any(this, GOP_CONV2D, h, cfg[g].c, 1, 1, 1, 0, 0, E_BIAS, res ? x : -1);
        }
    }
    x = clip6(this, conv(this, x, 1280, 1, 1, 0, E_BIAS));
    return classifier(this, x, 1000);
}

/* ---- SqueezeNet 1.1 -------------------- */

static int fire(Builder *this, int x, int64_t squeeze, int64_t e1, int64_t e3) {
    int s = conv(this, x, squeeze, 1, 1, 0, E_BIAS | E_RELU);
    int lr[2] = {conv(this, s, e1, 1, 1, 0, E_BIAS | E_RELU), conv(this, s, e3, 3, 1, 1, E_BIAS | E_RELU)};
    return Graph_concat(this, lr, 2);
}

static int net_squeezenet(Builder *this, int64_t image) {
    int x = image_input(this, image);
    x = conv(this, x, 64, 3, 2, 1, E_BIAS | E_RELU);
    x = Graph_pool(this, GOP_MAX_POOL, x, 3, 2, 0);
    x = fire(this, x, 16, 64, 64);
    x = fire(this, x, 16, 64, 64);
    x = Graph_pool(this, GOP_MAX_POOL, x, 3, 2, 0);
    x = fire(this, x, 32, 128, 128);
    x = fire(this, x, 32, 128, 128);
    x = Graph_pool(this, GOP_MAX_POOL, x, 3, 2, 0);
    x = fire(this, x, 48, 192, 192);
    x = fire(this, x, 48, 192, 192);
    x = fire(this, x, 64, 256, 256);
    x = fire(this, x, 64, 256, 256);
    x = conv(this, x, 1000, 1, 1, 0, E_BIAS | E_RELU);
    x = Graph_unary(this, GOP_GLOBAL_AVG_POOL, x, 0, 0, false);
    x = Graph_unary(this, GOP_FLATTEN, x, 0, 0, false);
    return Graph_unary(this, GOP_SOFTMAX, x, 0, 0, false);
}

/* ---- VGG-16 (no batch-norm) -------------------- */

static int net_vgg16(Builder *this, int64_t image) {
    static const int per_stage[5] = {2, 2, 3, 3, 3};
    static const int64_t filters[5] = {64, 128, 256, 512, 512};
    int x = image_input(this, image);
    for (int s = 0; s < 5; s++) {
        for (int i = 0; i < per_stage[s]; i++)
            x = conv(this, x, filters[s], 3, 1, 1, E_BIAS | E_RELU);
        x = Graph_pool(this, GOP_MAX_POOL, x, 2, 2, 0);
    }
    x = Graph_unary(this, GOP_FLATTEN, x, 0, 0, false);
    x = dense(this, x, 4096, E_BIAS | E_RELU);
    x = dense(this, x, 4096, E_BIAS | E_RELU);
    x = dense(this, x, 1000, E_BIAS);
    return Graph_unary(this, GOP_SOFTMAX, x, 0, 0, false);
}

/* ---- Inception v3 -------------------- */

/* conv + BN + ReLU with a kh x kw kernel */
static int cbr(Builder *this, int x, int64_t co, int64_t kh, int64_t kw, int64_t stride, int64_t ph, int64_t pw) {
    return conv_any(this, GOP_CONV2D, x, co, kh, kw, stride, ph, pw, E_BIAS | E_RELU, -1);
}

static int cbr1(Builder *this, int x, int64_t co) { return cbr(this, x, co, 1, 1, 1, 0, 0); }

static int incep_a(Builder *this, int x, int64_t proj) {
    int t1 = cbr1(this, x, 64);
    int t5 = cbr(this, cbr1(this, x, 48), 64, 5, 5, 1, 2, 2);
    int t3 = cbr1(this, x, 64);
    t3 = cbr(this, t3, 96, 3, 3, 1, 1, 1);
    t3 = cbr(this, t3, 96, 3, 3, 1, 1, 1);
    int p = Graph_pool(this, GOP_AVG_POOL, x, 3, 1, 1);
    int parts[4] = {t1, t5, t3, cbr1(this, p, proj)};
    return Graph_concat(this, parts, 4);
}

static int incep_b(Builder *this, int x) {
    int t3 = cbr(this, x, 384, 3, 3, 2, 0, 0);
    int d = cbr1(this, x, 64);
    d = cbr(this, d, 96, 3, 3, 1, 1, 1);
    d = cbr(this, d, 96, 3, 3, 2, 0, 0);
    int parts[3] = {t3, d, Graph_pool(this, GOP_MAX_POOL, x, 3, 2, 0)};
    return Graph_concat(this, parts, 3);
}

static int incep_c(Builder *this, int x, int64_t c7) {
    int t1 = cbr1(this, x, 192);
    int d = cbr1(this, x, c7);
    d = cbr(this, d, c7, 1, 7, 1, 0, 3);
    d = cbr(this, d, 192, 7, 1, 1, 3, 0);
    int q = cbr1(this, x, c7);
    q = cbr(this, q, c7, 7, 1, 1, 3, 0);
    q = cbr(this, q, c7, 1, 7, 1, 0, 3);
    q = cbr(this, q, c7, 7, 1, 1, 3, 0);
    q = cbr(this, q, 192, 1, 7, 1, 0, 3);
    int p = Graph_pool(this, GOP_AVG_POOL, x, 3, 1, 1);
    int parts[4] = {t1, d, q, cbr1(this, p, 192)};
    return Graph_concat(this, parts, 4);
}

static int incep_d(Builder *this, int x) {
    int t = cbr1(this, x, 192);
    t = cbr(this, t, 320, 3, 3, 2, 0, 0);
    int d = cbr1(this, x, 192);
    d = cbr(this, d, 192, 1, 7, 1, 0, 3);
    d = cbr(this, d, 192, 7, 1, 1, 3, 0);
    d = cbr(this, d, 192, 3, 3, 2, 0, 0);
    int parts[3] = {t, d, Graph_pool(this, GOP_MAX_POOL, x, 3, 2, 0)};
    return Graph_concat(this, parts, 3);
}

static int incep_e(Builder *this, int x, GraphOpKind pool_kind) {
    int t1 = cbr1(this, x, 320);
    int d = cbr1(this, x, 384);
    int da = cbr(this, d, 384, 1, 3, 1, 0, 1);
    int db = cbr(this, d, 384, 3, 1, 1, 1, 0);
    int e = cbr1(this, x, 448);
    e = cbr(this, e, 384, 3, 3, 1, 1, 1);
    int ea = cbr(this, e, 384, 1, 3, 1, 0, 1);
    int eb = cbr(this, e, 384, 3, 1, 1, 1, 0);
    int p = Graph_pool(this, pool_kind, x, 3, 1, 1);
    int parts[6] = {t1, da, db, ea, eb, cbr1(this, p, 192)};
    return Graph_concat(this, parts, 6);
}

static int net_inception_v3(Builder *this, int64_t image) {
    int x = image_input(this, image);
    x = cbr(this, x, 32, 3, 3, 2, 0, 0);
    x = cbr(this, x, 32, 3, 3, 1, 0, 0);
    x = cbr(this, x, 64, 3, 3, 1, 1, 1);
    x = Graph_pool(this, GOP_MAX_POOL, x, 3, 2, 0);
    x = cbr1(this, x, 80);
    x = cbr(this, x, 192, 3, 3, 1, 0, 0);
    x = Graph_pool(this, GOP_MAX_POOL, x, 3, 2, 0);
    x = incep_a(this, x, 32);
    x = incep_a(this, x, 64);
    x = incep_a(this, x, 64);
    x = incep_b(this, x);
    x = incep_c(this, x, 128);
    x = incep_c(this, x, 160);
    x = incep_c(this, x, 160);
    x = incep_c(this, x, 192);
    x = incep_d(this, x);
    x = incep_e(this, x, GOP_AVG_POOL);
    x = incep_e(this, x, GOP_MAX_POOL);
    return classifier(this, x, 1000);
}

/* ---- BERT-base encoder ------------------------------------------------ */

/* Input: the embeddings [batch*seq][768]; output: the last layer's hidden states. */
static int net_bert_base(Builder *this, int64_t seq) {
    const int64_t hidden = 768, heads = 12, ffn = 3072, head_dim = hidden / heads;
    const int64_t tokens = this->batch * seq;
    int64_t dim[2] = {tokens, hidden};
    int x = Graph_input(this, 2, dim);
    for (int layer = 0; layer < 12; layer++) {
        int q = dense(this, x, hidden, E_BIAS); /* query */
        int k = dense(this, x, hidden, E_BIAS); /* key */
        int v = dense(this, x, hidden, E_BIAS); /* value */
        int qh = Graph_heads(this, GOP_SPLIT_HEADS, q, heads, seq);
        int kh = Graph_heads(this, GOP_SPLIT_HEADS, k, heads, seq);
        int s = Graph_batchMatmul(this, qh, kh); /* Q K^T */
        s = Graph_unary(this, GOP_SCALE, s, 1.0 / 8.0 /* 1/sqrt(head_dim) */, 0, false);
        s = Graph_maskAdd(this, s, this->batch, true);
        s = Graph_unary(this, GOP_SOFTMAX, s, 0, 0, false);
        int vt = Graph_heads(this, GOP_SPLIT_HEADS_T, v, heads, seq);
        int ctx = Graph_batchMatmul(this, s, vt); /* P V (V transposed to [d][seq]) */
        ctx = Graph_heads(this, GOP_MERGE_HEADS, ctx, heads, seq);
        int o = dense(this, ctx, hidden, E_BIAS); /* attention output */
        int x1 = Graph_unary(this, GOP_LAYER_NORM, Graph_add(this, o, x, false), 1e-12, 0, true);
        int f = Graph_unary(this, GOP_GELU, dense(this, x1, ffn, E_BIAS), 0, 0, false);
        int f2 = dense(this, f, hidden, E_BIAS);
        x = Graph_unary(this, GOP_LAYER_NORM, Graph_add(this, f2, x1, false), 1e-12, 0, true);
    }
    (void)head_dim;
    return x;
}

/* ---- a tiny network for tests ------------------------------------------ */

/* tiny-resnet: a 3x3 conv, max pooling, two pre-activation residual units,
 * BN+ReLU and the classifier (10 classes), at 16x16 by default: every kind of
 * subgraph a ResNet has (and identical ones), tuned in seconds. */
static int net_tiny_resnet(Builder *this, int64_t image) {
    int x = image_input(this, image);
    x = conv(this, x, 16, 3, 1, 1, E_BIAS | E_RELU);
    x = Graph_pool(this, GOP_MAX_POOL, x, 2, 2, 0);
    x = resnet_unit(this, x, 16, 1, true, false);
    x = resnet_unit(this, x, 16, 1, true, false);
    x = bn_relu(this, x);
    return classifier(this, x, 10);
}

/* ---- the table -------------------------------------------------------- */

typedef enum {
    KIND_RESNET,
    KIND_MOBILENET,
    KIND_MOBILENET_V2,
    KIND_SQUEEZENET,
    KIND_VGG16,
    KIND_INCEPTION,
    KIND_BERT,
    KIND_TINY_RESNET
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
    {"tiny-resnet", KIND_TINY_RESNET, 0, 16},
};

#define N_NETS ((int)(sizeof NETS / sizeof NETS[0]))

static char net_names[256], net_images[128];
static pthread_once_t net_names_once = PTHREAD_ONCE_INIT;

/* The names, and the default image sizes: the first network's, then the
 * networks that differ ("224; 299 for inception-v3"; bert-base has none). */
static void net_names_init(void) {
    int common = NETS[0].default_image;
    snprintf(net_images, sizeof net_images, "%d", common);
    for (int i = 0; i < N_NETS; i++) {
        Names_add(net_names, sizeof net_names, NETS[i].name);
        if (NETS[i].default_image && NETS[i].default_image != common) {
            size_t len = strlen(net_images);
            snprintf(net_images + len, sizeof net_images - len, "; %d for %s", NETS[i].default_image, NETS[i].name);
        }
    }
}

const char *Network_names(void) {
    pthread_once(&net_names_once, net_names_init);
    return net_names;
}

const char *Network_imageSizes(void) {
    pthread_once(&net_names_once, net_names_init);
    return net_images;
}

static const struct NetDef *find_net(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < N_NETS; i++)
        if (strcmp(NETS[i].name, name) == 0) return &NETS[i];
    return NULL;
}

int Network_defaultImage(const char *name) {
    const struct NetDef *def = find_net(name);
    return def ? def->default_image : -1;
}

Status Network_graph(const char *name, const NetworkOptions *opt_in, Graph *g, char *err) {
    NetworkOptions opt;
    if (opt_in)
        opt = *opt_in;
    else
        NetworkOptions_defaults(&opt);
    memset(g, 0, sizeof *g);
    const struct NetDef *def = find_net(name);
    if (!def) return tt_fail(err, "unknown network '%s'; known networks: %s", name ? name : "", Network_names());
    if (opt.batch < 1) return tt_fail(err, "batch must be >= 1 (got %d)", opt.batch);
    if (opt.layout != LAYOUT_NCHW && opt.layout != LAYOUT_NHWC)
        return tt_fail(err, "unknown layout %d", (int)opt.layout);
    if (opt.image_size < 0) return tt_fail(err, "image size must be >= 1 (got %d)", opt.image_size);
    if (opt.seq_len < 0) return tt_fail(err, "sequence length must be >= 1 (got %d)", opt.seq_len);
    int64_t image = opt.image_size ? opt.image_size : def->default_image;
    int64_t seq = opt.seq_len ? opt.seq_len : 128;

    Graph_init(g, def->name, opt.layout, opt.batch);
    int out = -1;
    switch (def->kind) {
    case KIND_RESNET:
        out = net_resnet(g, image, def->depth);
        break;
    case KIND_MOBILENET:
        out = net_mobilenet(g, image);
        break;
    case KIND_MOBILENET_V2:
        out = net_mobilenet_v2(g, image);
        break;
    case KIND_SQUEEZENET:
        out = net_squeezenet(g, image);
        break;
    case KIND_VGG16:
        out = net_vgg16(g, image);
        break;
    case KIND_INCEPTION:
        out = net_inception_v3(g, image);
        break;
    case KIND_BERT:
        out = net_bert_base(g, seq);
        break;
    case KIND_TINY_RESNET:
        out = net_tiny_resnet(g, image);
        break;
    }
    g->output = out;
    if (g->too_small) {
        Graph_done(g);
        return tt_fail(err, "image size %lld is too small for %s: a layer's output would be empty", (long long)image,
                       def->name);
    }
    return TT_OK;
}

Status Network_taskGraph(const Workload *wl, Graph *g, char *err) {
    memset(g, 0, sizeof *g);
    if (wl->layout != LAYOUT_NCHW && (wl->op == OP_CONV2D || wl->op == OP_DEPTHWISE_CONV2D))
        return tt_fail(err, "layout %s: graphs run in NCHW only", Layout_name(wl->layout));
    if (wl->op == OP_DEPTHWISE_CONV2D && wl->mult != 1)
        return tt_fail(err, "depthwise_conv2d with mult=%lld: graphs have multiplier 1 only", (long long)wl->mult);
    Graph_init(g, Op_name(wl->op), LAYOUT_NCHW, wl->op == OP_DENSE ? wl->m : wl->op == OP_BATCH_MATMUL ? wl->b : wl->n);
    int y;
    if (wl->op == OP_CONV2D || wl->op == OP_DEPTHWISE_CONV2D) {
        int64_t dim[4] = {wl->n, wl->ci, wl->h, wl->w};
        int x = Graph_input(g, 4, dim);
        y = Graph_conv(g, wl->op == OP_CONV2D ? GOP_CONV2D : GOP_DEPTHWISE, x, wl->co, wl->kh, wl->kw, wl->stride_h,
                       wl->pad_h, wl->pad_w);
        GraphOp *op = &g->ops[g->n_ops - 1];
        op->wl.stride_w = wl->stride_w;
        op->wl.dil_h = wl->dil_h;
        op->wl.dil_w = wl->dil_w;
        if (wl->stride_w != wl->stride_h || wl->dil_h != 1 || wl->dil_w != 1) {
            Graph_done(g);
            return tt_fail(err, "conv2d with unequal strides or dilation: graphs do not run those");
        }
        if (wl->bias) y = Graph_unary(g, GOP_BIAS_ADD, y, 0, 0, false);
        if (wl->residual) {
            GraphTensor t = g->tensors[y];
            y = Graph_add(g, y, Graph_input(g, 4, t.dim), false);
        }
    } else if (wl->op == OP_DENSE) {
        int64_t dim[2] = {wl->m, wl->k};
        y = Graph_dense(g, Graph_input(g, 2, dim), wl->n);
        if (wl->bias) y = Graph_unary(g, GOP_BIAS_ADD, y, 0, 0, false);
    } else {
        int64_t da[3] = {wl->b, wl->m, wl->k}, db[3] = {wl->b, wl->n, wl->k};
        int a = Graph_input(g, 3, da);
        y = Graph_batchMatmul(g, a, Graph_input(g, 3, db));
    }
    if (wl->relu) y = Graph_unary(g, GOP_RELU, y, 0, 0, false);
    if (wl->relu6) y = Graph_unary(g, GOP_CLIP, y, 0, 6, false);
    g->output = y;
    GraphTasks gt;
    Graph_tasks(g, 0, &gt);
    bool same = gt.n_tasks == 1 && Workload_equal(&gt.tasks[0].wl, wl);
    GraphTasks_done(&gt);
    if (!same) {
        Graph_done(g);
        return tt_fail(err, "%s: this operator cannot be run as a graph", Op_name(wl->op));
    }
    return TT_OK;
}

int Network_layerCount(const char *name, const NetworkOptions *opt, OpKind op) {
    Graph g;
    if (Network_graph(name, opt, &g, NULL) != TT_OK) return -1;
    int count = 0;
    for (int i = 0; i < g.n_ops; i++)
        count += GraphOp_isTunable(g.ops[i].kind) && g.ops[i].wl.op == op;
    Graph_done(&g);
    return count;
}

/* ---- extraction ------------------------------------------------------- */

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
 * account of the work. Graph_tasks does the work on the network's graph. */
Status Network_extract(const char *name, const NetworkOptions *opt, NetworkTask **tasks_out, int *n_tasks_out,
                       NetworkUntuned **untuned_out, int *n_untuned_out, char *err) {
    *tasks_out = NULL;
    *n_tasks_out = 0;
    *untuned_out = NULL;
    *n_untuned_out = 0;
    Graph g;
    if (Network_graph(name, opt, &g, err) != TT_OK) return TT_ERR;
    GraphTasks gt;
    Graph_tasks(&g, opt ? opt->op_mask : 0, &gt);
    NetworkTask *tasks = NULL;
    NetworkUntuned *untuned = NULL;
    if (gt.n_tasks) {
        tasks = calloc((size_t)gt.n_tasks, sizeof *tasks);
        if (!tasks) abort();
        for (int t = 0; t < gt.n_tasks; t++)
            tasks[t].wl = gt.tasks[t].wl, tasks[t].weight = gt.tasks[t].weight;
    }
    if (gt.n_untuned) {
        untuned = calloc((size_t)gt.n_untuned, sizeof *untuned);
        if (!untuned) abort();
        for (int u = 0; u < gt.n_untuned; u++) {
            snprintf(untuned[u].name, sizeof untuned[u].name, "%s", gt.untuned[u].name);
            untuned[u].count = gt.untuned[u].count;
        }
    }
    *tasks_out = tasks;
    *n_tasks_out = gt.n_tasks;
    *untuned_out = untuned;
    *n_untuned_out = gt.n_untuned;
    GraphTasks_done(&gt);
    Graph_done(&g);
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
