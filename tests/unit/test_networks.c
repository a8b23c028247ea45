/* tests/unit/test_networks.c: built-in networks and task extraction.
 *
 * Expected layer counts are derived here from each architecture's formula
 * (units per stage, blocks, layers), never read from the network tables. */
#include "tests/check.h"
#include "tuner/net/network.h"

typedef struct Extracted {
    NetworkTask *tasks;
    int n;
    NetworkUntuned *untuned;
    int n_untuned;
} Extracted;

static Status extract(const char *name, const NetworkOptions *opt, Extracted *x, char *err) {
    return Network_extract(name, opt, &x->tasks, &x->n, &x->untuned, &x->n_untuned, err);
}

static void Extracted_done(Extracted *x) {
    free(x->tasks);
    free(x->untuned);
}

static int count_op(const Extracted *x, OpKind op, int *weight_sum) {
    int n = 0, w = 0;
    for (int i = 0; i < x->n; i++)
        if (x->tasks[i].wl.op == op) n++, w += x->tasks[i].weight;
    if (weight_sum) *weight_sum = w;
    return n;
}

static int untuned_count(const Extracted *x, const char *prefix) {
    int c = 0;
    for (int i = 0; i < x->n_untuned; i++)
        if (strncmp(x->untuned[i].name, prefix, strlen(prefix)) == 0) c += x->untuned[i].count;
    return c;
}

/* Every task valid, unique, with a positive weight. */
static void check_tasks_sane(const char *net, const Extracted *x) {
    char err[TT_ERRLEN];
    for (int i = 0; i < x->n; i++) {
        CHECK(x->tasks[i].weight >= 1);
        if (Workload_validate(&x->tasks[i].wl, err) != TT_OK) {
            fprintf(stderr, "%s task %d invalid: %s\n", net, i, err);
            CHECK(0);
        }
        /* the key parses back to the same workload (logs and resume rely on it) */
        char key[WORKLOAD_KEY_LEN];
        Workload_key(&x->tasks[i].wl, key, sizeof key);
        Workload back;
        CHECK(Workload_parse(key, &back, err) == TT_OK);
        CHECK(Workload_equal(&back, &x->tasks[i].wl));
        for (int j = 0; j < i; j++) {
            Workload a = x->tasks[i].wl, b = x->tasks[j].wl;
            a.bias = a.relu = a.residual = b.bias = b.relu = b.residual = false;
            if (Workload_equal(&a, &b)) {
                fprintf(stderr, "%s: tasks %d and %d have the same shape\n", net, j, i);
                CHECK(0);
            }
        }
    }
}

/* Extracts with all ops and checks per-op weight sums against expected layer counts. */
static void check_network(const char *net, const int expected[OP_COUNT]) {
    NetworkOptions opt;
    NetworkOptions_defaults(&opt);
    Extracted x;
    char err[TT_ERRLEN] = "";
    if (extract(net, &opt, &x, err) != TT_OK) {
        fprintf(stderr, "%s: %s\n", net, err);
        CHECK(0);
        return;
    }
    check_tasks_sane(net, &x);
    for (int op = 0; op < OP_COUNT; op++) {
        int w;
        int n = count_op(&x, (OpKind)op, &w);
        CHECK_EQ_INT(Network_layerCount(net, &opt, (OpKind)op), expected[op]);
        CHECK_EQ_INT(w, expected[op]);
        CHECK(n <= expected[op]);
        if (expected[op] > 0) CHECK(n >= 1);
    }
    Extracted_done(&x);
}

static double conv_flops(const Workload *w) {
    int64_t oh = (w->h + 2 * w->pad_h - w->kh) / w->stride_h + 1, ow = (w->w + 2 * w->pad_w - w->kw) / w->stride_w + 1;
    int64_t cin = w->op == OP_DEPTHWISE_CONV2D ? 1 : w->ci;
    return 2.0 * (double)(w->n * w->co * oh * ow * cin * w->kh * w->kw);
}

TEST(test_resnet18_conv_tasks) {
    NetworkOptions opt;
    NetworkOptions_defaults(&opt);
    char err[TT_ERRLEN] = "";
    CHECK(Network_parseOps("conv2d", &opt.op_mask, err) == TT_OK);
    Extracted x;
    CHECK(extract("resnet-18", &opt, &x, err) == TT_OK);
    /* 1 stem + 4 stages x 2 units x 2 convs + 4 projection shortcuts */
    int convs = 1 + 4 * 2 * 2 + 4, w;
    CHECK_EQ_INT(convs, 21);
    CHECK_EQ_INT(x.n, 12);
    CHECK_EQ_INT(count_op(&x, OP_CONV2D, &w), 12);
    CHECK_EQ_INT(w, convs);
    CHECK_EQ_INT(Network_layerCount("resnet-18", &opt, OP_CONV2D), convs);
    check_tasks_sane("resnet-18", &x);
    /* first occurrence order: the stem comes first and keeps its BN+ReLU */
    CHECK_EQ_INT(x.tasks[0].wl.kh, 7);
    CHECK_EQ_INT(x.tasks[0].weight, 1);
    CHECK(x.tasks[0].wl.bias && x.tasks[0].wl.relu && !x.tasks[0].wl.residual);
    /* the 3x3 64->64 conv at 56x56 occurs 4 times with BN+ReLU or residual after it: bare */
    int found = 0;
    double total = 0;
    for (int i = 0; i < x.n; i++) {
        const Workload *wl = &x.tasks[i].wl;
        total += conv_flops(wl) * x.tasks[i].weight;
        if (wl->ci == 64 && wl->co == 64 && wl->kh == 3 && wl->h == 56) {
            found++;
            CHECK_EQ_INT(x.tasks[i].weight, 4);
            CHECK(!wl->bias && !wl->relu && !wl->residual);
        }
        /* projection shortcuts: 1x1 stride 2 from the previous stage, once each */
        if (wl->kh == 1 && wl->stride_h == 2) CHECK_EQ_INT(x.tasks[i].weight, 1);
    }
    CHECK_EQ_INT(found, 1);
    /* ResNet-18 is about 1.8 GMAC = 3.6 GFLOP in its convolutions */
    CHECK(total > 3.4e9 && total < 3.8e9);
    /* the epilogues the merged tasks do not fuse are listed as untuned */
    CHECK(untuned_count(&x, "bias_add+relu") > 0);
    CHECK(untuned_count(&x, "add ") > 0);
    CHECK_EQ_INT(untuned_count(&x, "max_pool2d"), 1);
    CHECK_EQ_INT(untuned_count(&x, "softmax"), 1);
    CHECK_EQ_INT(untuned_count(&x, "batch_norm+relu"), 8 + 1); /* one per unit, one before the pool */
    Extracted_done(&x);
}

TEST(test_resnet_deeper) {
    NetworkOptions opt;
    NetworkOptions_defaults(&opt);
    opt.op_mask = 1u << OP_CONV2D;
    static const struct {
        const char *name;
        int units[4];
        int bottleneck;
        int tasks;
    } nets[] = {{"resnet-34", {3, 4, 6, 3}, 0, 12},
                {"resnet-50", {3, 4, 6, 3}, 1, 20},
                {"resnet-101", {3, 4, 23, 3}, 1, 20},
                {"resnet-152", {3, 8, 36, 3}, 1, 20}};
    for (int k = 0; k < 4; k++) {
        int units = 0;
        for (int s = 0; s < 4; s++)
            units += nets[k].units[s];
        int convs = 1 + units * (nets[k].bottleneck ? 3 : 2) + 4;
        Extracted x;
        char err[TT_ERRLEN] = "";
        CHECK(extract(nets[k].name, &opt, &x, err) == TT_OK);
        int w;
        CHECK_EQ_INT(count_op(&x, OP_CONV2D, &w), nets[k].tasks);
        CHECK_EQ_INT(w, convs);
        CHECK_EQ_INT(Network_layerCount(nets[k].name, &opt, OP_CONV2D), convs);
        CHECK_EQ_INT(Network_layerCount(nets[k].name, &opt, OP_DENSE), 1);
        check_tasks_sane(nets[k].name, &x);
        if (nets[k].bottleneck) {
            /* the stride sits on the first 1x1 conv: a 1x1 256->128 stride-2 task exists */
            int found = 0;
            for (int i = 0; i < x.n; i++) {
                const Workload *wl = &x.tasks[i].wl;
                if (wl->kh == 1 && wl->ci == 256 && wl->co == 128 && wl->stride_h == 2 && wl->h == 56) found++;
                if (wl->kh == 3) CHECK_EQ_INT(wl->stride_h, 1);
                /* bottleneck 3x3 convs are always followed by BN+ReLU: fused */
                if (wl->kh == 3) CHECK(wl->bias && wl->relu);
            }
            CHECK_EQ_INT(found, 1);
        }
        Extracted_done(&x);
    }
}

TEST(test_other_networks_counts) {
    int e[OP_COUNT];
    /* mobilenet v1: stem + 13 separable blocks (depthwise + pointwise) + classifier */
    memset(e, 0, sizeof e);
    e[OP_CONV2D] = 1 + 13;
    e[OP_DEPTHWISE_CONV2D] = 13;
    e[OP_DENSE] = 1;
    check_network("mobilenet", e);

    /* mobilenet-v2: blocks (t,c,n,s); every block has a depthwise and a
     * projection, blocks with t != 1 an expansion; stem, 1x1 to 1280, classifier */
    static const int t_[7] = {1, 6, 6, 6, 6, 6, 6}, n_[7] = {1, 2, 3, 4, 3, 3, 1};
    int blocks = 0, expansions = 0;
    for (int g = 0; g < 7; g++) {
        blocks += n_[g];
        if (t_[g] != 1) expansions += n_[g];
    }
    memset(e, 0, sizeof e);
    e[OP_CONV2D] = 1 + blocks + expansions + 1;
    e[OP_DEPTHWISE_CONV2D] = blocks;
    e[OP_DENSE] = 1;
    CHECK_EQ_INT(e[OP_CONV2D], 35);
    check_network("mobilenet-v2", e);

    /* squeezenet 1.1: stem + 8 fire modules x 3 convs + final 1x1 conv */
    memset(e, 0, sizeof e);
    e[OP_CONV2D] = 1 + 8 * 3 + 1;
    check_network("squeezenet-1.1", e);

    /* vgg-16: 2+2+3+3+3 convs, 3 dense */
    memset(e, 0, sizeof e);
    e[OP_CONV2D] = 2 + 2 + 3 + 3 + 3;
    e[OP_DENSE] = 3;
    check_network("vgg-16", e);

    /* inception-v3: 5 stem convs, 3 x A (7), B (4), 4 x C (10), D (6), 2 x E (9), one dense */
    memset(e, 0, sizeof e);
    e[OP_CONV2D] = 5 + 3 * 7 + 4 + 4 * 10 + 6 + 2 * 9;
    e[OP_DENSE] = 1;
    check_network("inception-v3", e);

    /* bert-base: 12 layers x (Q, K, V, out, FFN1, FFN2) dense + 2 batch_matmul */
    memset(e, 0, sizeof e);
    e[OP_DENSE] = 12 * 6;
    e[OP_BATCH_MATMUL] = 12 * 2;
    check_network("bert-base", e);
}

TEST(test_task_counts_after_dedup) {
    static const struct {
        const char *net;
        OpKind op;
        int tasks;
    } want[] = {
        /* mobilenet v1 pointwise: 32->64, 64->128, 128->128, 128->256, 256->256, 256->512,
         * 512->512 (x5), 512->1024, 1024->1024, plus the stem */
        {"mobilenet", OP_CONV2D, 10},
        /* depthwise: 13 blocks, the five 512@14 stride-1 blocks are one task */
        {"mobilenet", OP_DEPTHWISE_CONV2D, 9},
        /* vgg-16: 3->64, 64->64, 64->128, 128->128, 128->256, 256->256 (x2), 256->512,
         * 512->512@28 (x2), 512->512@14 (x3) */
        {"vgg-16", OP_CONV2D, 9},
        {"vgg-16", OP_DENSE, 3},
        /* squeezenet: stem, 8 squeeze convs (all different inputs), 4 expand pairs, final */
        {"squeezenet-1.1", OP_CONV2D, 1 + 8 + 4 * 2 + 1},
        /* bert: 768->768 (Q, K, V, out), 768->3072, 3072->768; QK^T and PV */
        {"bert-base", OP_DENSE, 3},
        {"bert-base", OP_BATCH_MATMUL, 2},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        NetworkOptions opt;
        NetworkOptions_defaults(&opt);
        opt.op_mask = 1u << want[k].op;
        Extracted x;
        char err[TT_ERRLEN] = "";
        CHECK(extract(want[k].net, &opt, &x, err) == TT_OK);
        if (x.n != want[k].tasks) fprintf(stderr, "%s %s\n", want[k].net, Op_name(want[k].op));
        CHECK_EQ_INT(x.n, want[k].tasks);
        Extracted_done(&x);
    }
}

TEST(test_bert_shapes_and_weights) {
    NetworkOptions opt;
    NetworkOptions_defaults(&opt);
    opt.seq_len = 100; /* != head_dim 64, else QK^T and PV are the same shape and merge */
    opt.batch = 2;
    Extracted x;
    char err[TT_ERRLEN] = "";
    CHECK(extract("bert-base", &opt, &x, err) == TT_OK);
    for (int i = 0; i < x.n; i++) {
        const Workload *wl = &x.tasks[i].wl;
        if (wl->op == OP_DENSE) {
            CHECK_EQ_INT(wl->m, 2 * 100);
            if (wl->k == 768 && wl->n == 768)
                CHECK_EQ_INT(x.tasks[i].weight, 48);
            else
                CHECK_EQ_INT(x.tasks[i].weight, 12);
        } else {
            CHECK_EQ_INT(wl->op, OP_BATCH_MATMUL);
            CHECK_EQ_INT(wl->b, 2 * 12);
            CHECK_EQ_INT(wl->m, 100);
            CHECK(wl->k == 64 || wl->n == 64);
            CHECK_EQ_INT(x.tasks[i].weight, 12);
        }
    }
    CHECK_EQ_INT(untuned_count(&x, "softmax"), 12);
    Extracted_done(&x);
}

TEST(test_options_reach_workloads) {
    NetworkOptions opt;
    NetworkOptions_defaults(&opt);
    opt.batch = 4;
    opt.layout = LAYOUT_NHWC;
    Extracted x;
    char err[TT_ERRLEN] = "";
    CHECK(extract("mobilenet", &opt, &x, err) == TT_OK);
    for (int i = 0; i < x.n; i++) {
        const Workload *wl = &x.tasks[i].wl;
        if (wl->op == OP_DENSE) {
            CHECK_EQ_INT(wl->m, 4);
        } else {
            CHECK_EQ_INT(wl->n, 4);
            CHECK_EQ_INT(wl->layout, LAYOUT_NHWC);
        }
    }
    CHECK_CONTAINS(x.untuned[0].name, "4x"); /* shapes of untuned ops carry the batch too */
    Extracted_done(&x);

    /* image size: vgg-16 at 32x32 ends at 1x1, so its first dense reads 512 features */
    NetworkOptions_defaults(&opt);
    opt.image_size = 32;
    opt.op_mask = 1u << OP_DENSE;
    CHECK(extract("vgg-16", &opt, &x, err) == TT_OK);
    CHECK_EQ_INT(x.n, 3);
    CHECK_EQ_INT(x.tasks[0].wl.k, 512);
    Extracted_done(&x);
    /* default vgg: 7x7x512 */
    opt.image_size = 0;
    CHECK(extract("vgg-16", &opt, &x, err) == TT_OK);
    CHECK_EQ_INT(x.tasks[0].wl.k, 7 * 7 * 512);
    Extracted_done(&x);
}

TEST(test_errors) {
    NetworkOptions opt;
    NetworkOptions_defaults(&opt);
    Extracted x;
    char err[TT_ERRLEN] = "";
    CHECK(extract("resnet-19", &opt, &x, err) == TT_ERR);
    CHECK_CONTAINS(err, "resnet-19");
    CHECK_CONTAINS(err, "resnet-18");
    CHECK_CONTAINS(err, "bert-base");
    CHECK(x.tasks == NULL && x.n == 0);
    CHECK_EQ_INT(Network_layerCount("nope", &opt, OP_CONV2D), -1);
    opt.batch = 0;
    CHECK(extract("resnet-18", &opt, &x, err) == TT_ERR);
    CHECK_CONTAINS(err, "batch");
    NetworkOptions_defaults(&opt);
    opt.image_size = 64; /* inception-v3 needs about 75 pixels */
    CHECK(extract("inception-v3", &opt, &x, err) == TT_ERR);
    CHECK_CONTAINS(err, "too small");
    opt.image_size = 75;
    CHECK(extract("inception-v3", &opt, &x, err) == TT_OK);
    Extracted_done(&x);

    unsigned mask = 0;
    CHECK(Network_parseOps("conv2d,dense", &mask, err) == TT_OK);
    CHECK_EQ_INT(mask, (1u << OP_CONV2D) | (1u << OP_DENSE));
    CHECK(Network_parseOps("depthwise_conv2d,batch_matmul", &mask, err) == TT_OK);
    CHECK_EQ_INT(mask, (1u << OP_DEPTHWISE_CONV2D) | (1u << OP_BATCH_MATMUL));
    CHECK(Network_parseOps("conv2d,conv3d", &mask, err) == TT_ERR);
    CHECK_CONTAINS(err, "conv3d");
    CHECK_CONTAINS(err, "batch_matmul");
    CHECK(Network_parseOps("", &mask, err) == TT_ERR);
}

TEST(test_fused_epilogues) {
    NetworkOptions opt;
    NetworkOptions_defaults(&opt);
    Extracted x;
    char err[TT_ERRLEN] = "";
    /* squeezenet: every conv is conv + bias + relu everywhere it occurs */
    CHECK(extract("squeezenet-1.1", &opt, &x, err) == TT_OK);
    for (int i = 0; i < x.n; i++)
        CHECK(x.tasks[i].wl.bias && x.tasks[i].wl.relu && !x.tasks[i].wl.residual);
    CHECK_EQ_INT(untuned_count(&x, "concatenate"), 8);
    CHECK_EQ_INT(untuned_count(&x, "bias_add"), 0);
    Extracted_done(&x);
    /* mobilenet-v2: projections with a residual connection fuse the add */
    CHECK(extract("mobilenet-v2", &opt, &x, err) == TT_OK);
    int with_res = 0;
    for (int i = 0; i < x.n; i++) {
        CHECK(!x.tasks[i].wl.relu); /* ReLU6 is not a relu */
        if (x.tasks[i].wl.residual) with_res += x.tasks[i].weight;
    }
    /* blocks after the first of each group, where in == out and stride 1: n - 1 per group except (1,16,1,1) */
    CHECK_EQ_INT(with_res, (2 - 1) + (3 - 1) + (4 - 1) + (3 - 1) + (3 - 1));
    Extracted_done(&x);
}

/* MobileNet-v2's ReLU6 is a conv epilogue (relu6=1): every expansion and
 * depthwise conv fuses its clip, and no clip is left untuned. */
TEST(test_relu6_fused) {
    NetworkOptions opt;
    NetworkOptions_defaults(&opt);
    Extracted x;
    char err[TT_ERRLEN] = "";
    CHECK(extract("mobilenet-v2", &opt, &x, err) == TT_OK);
    int dw = 0, dw6 = 0, clipped_layers = 0;
    for (int i = 0; i < x.n; i++) {
        const Workload *wl = &x.tasks[i].wl;
        CHECK(!wl->relu); /* MobileNet-v2 has no plain ReLU */
        if (wl->op == OP_DEPTHWISE_CONV2D) dw++, dw6 += wl->relu6;
        if (wl->relu6) clipped_layers += x.tasks[i].weight;
    }
    CHECK(dw > 0 && dw6 == dw);
    /* the stem, 17 depthwise, 16 expansions and the 1x1 to 1280 end in ReLU6 */
    CHECK_EQ_INT(clipped_layers, 1 + 17 + 16 + 1);
    for (int i = 0; i < x.n_untuned; i++)
        CHECK(strstr(x.untuned[i].name, "clip") == NULL);
    Extracted_done(&x);
}

int main(void) {
    RUN(test_resnet18_conv_tasks);
    RUN(test_resnet_deeper);
    RUN(test_other_networks_counts);
    RUN(test_task_counts_after_dedup);
    RUN(test_bert_shapes_and_weights);
    RUN(test_options_reach_workloads);
    RUN(test_errors);
    RUN(test_fused_epilogues);
    RUN(test_relu6_fused);
    return check_summary();
}
