/* tests/unit/test_subgraph.c: networks partitioned into subgraphs
 * (tuner/net/subgraph.c): every op in exactly one subgraph, anchors fused with
 * their elementwise consumers, identical subgraphs merged with weights, and
 * the expressions, evaluated in order by the te interpreter, computing what
 * the graph's reference computes. */
#include <math.h>

#include "te/te.h"
#include "tests/check.h"
#include "tuner/net/graph_ref.h"
#include "tuner/net/network.h"
#include "tuner/net/subgraph.h"

static const char *const NETS[] = {"resnet-18",  "resnet-34",    "resnet-50",    "resnet-101",
                                   "resnet-152", "mobilenet",    "mobilenet-v2", "squeezenet-1.1",
                                   "vgg-16",     "inception-v3", "bert-base",    "tiny-resnet"};

static bool elementwise(GraphOpKind k) {
    return k == GOP_BIAS_ADD || k == GOP_BATCH_NORM || k == GOP_RELU || k == GOP_CLIP || k == GOP_GELU ||
           k == GOP_SCALE || k == GOP_ADD || k == GOP_MASK_ADD;
}

/* Covering, order, and what is read outside a subgraph. */
static void check_partition(const Graph *g, const Subgraphs *s) {
    int *seen = calloc((size_t)g->n_ops + 1, sizeof(int));
    int listed = 0;
    for (int i = 0; i < s->n_sg; i++) {
        const Subgraph *x = &s->sg[i];
        CHECK(x->n_ops >= 1);
        for (int k = 0; k < x->n_ops; k++) {
            int op = s->ops[x->first + k];
            CHECK(op >= 0 && op < g->n_ops);
            seen[op]++;
            CHECK_EQ_INT(s->of_op[op], i);
            /* after the head, only elementwise ops, each reading the one before */
            if (k > 0) {
                CHECK(elementwise(g->ops[op].kind));
                int prev = g->ops[s->ops[x->first + k - 1]].out;
                CHECK(g->ops[op].in[0] == prev || (g->ops[op].n_in > 1 && g->ops[op].in[1] == prev));
            }
        }
        CHECK_EQ_INT(x->out, g->ops[s->ops[x->first + x->n_ops - 1]].out);
        listed += x->n_ops;
    }
    CHECK_EQ_INT(listed, g->n_ops);
    for (int i = 0; i < g->n_ops; i++)
        CHECK_EQ_INT(seen[i], 1); /* every op in exactly one subgraph */
    /* a tensor read by another subgraph is a subgraph's output, ready before its reader runs */
    int *done = calloc((size_t)g->n_tensors + 1, sizeof(int));
    for (int i = 0; i < g->n_inputs; i++)
        done[g->inputs[i]] = 1;
    for (int k = 0; k < s->n_sg; k++) {
        const Subgraph *x = &s->sg[s->order[k]];
        for (int a = 0; a < x->n_args; a++)
            if (x->args[a].tensor >= 0) CHECK(done[x->args[a].tensor]);
        done[x->out] = 1;
    }
    CHECK(done[g->output]);
    /* weights count the subgraphs; a task's subgraphs have its key's computation */
    int total = 0;
    for (int t = 0; t < s->n_tasks; t++) {
        CHECK(s->tasks[t].weight >= 1);
        CHECK_EQ_INT(s->sg[s->tasks[t].sg].task, t);
        CHECK(strncmp(s->tasks[t].key, "te-", 3) == 0);
        total += s->tasks[t].weight;
    }
    CHECK_EQ_INT(total, s->n_sg);
    free(done);
    free(seen);
}

TEST(every_network_is_covered) {
    for (size_t n = 0; n < sizeof NETS / sizeof NETS[0]; n++) {
        NetworkOptions o;
        NetworkOptions_defaults(&o);
        Graph g;
        char err[TT_ERRLEN];
        CHECK(Network_graph(NETS[n], &o, &g, err) == TT_OK);
        Subgraphs s;
        Status st = Subgraphs_make(&g, &s, err);
        if (st != TT_OK) fprintf(stderr, "%s: %s\n", NETS[n], err);
        CHECK(st == TT_OK);
        if (st == TT_OK) {
            check_partition(&g, &s);
            CHECK(s.n_tasks <= s.n_sg);
            Subgraphs_done(&s);
        }
        Graph_done(&g);
    }
}

static int count_label(const Subgraphs *s, const char *prefix) {
    int n = 0;
    for (int i = 0; i < s->n_sg; i++)
        n += strncmp(s->sg[i].label, prefix, strlen(prefix)) == 0;
    return n;
}

static const SubgraphTask *task_of_label(const Subgraphs *s, const char *label) {
    for (int t = 0; t < s->n_tasks; t++)
        if (strcmp(s->sg[s->tasks[t].sg].label, label) == 0) return &s->tasks[t];
    return NULL;
}

/* resnet-18 (pre-activation): 21 convolutions, each heading a subgraph with
 * the bias + ReLU or the residual add after it; the two identical 3x3
 * 64-channel layers with bias + ReLU are one task of weight 2. */
TEST(resnet18_fusion_and_weights) {
    NetworkOptions o;
    NetworkOptions_defaults(&o);
    Graph g;
    char err[TT_ERRLEN];
    CHECK(Network_graph("resnet-18", &o, &g, err) == TT_OK);
    Subgraphs s;
    CHECK(Subgraphs_make(&g, &s, err) == TT_OK);
    CHECK_EQ_INT(count_label(&s, "conv2d"), 21);
    CHECK_EQ_INT(s.n_sg, 31);
    CHECK_EQ_INT(s.n_tasks, 30);
    CHECK_EQ_INT(count_label(&s, "conv2d+bias_add+relu "), 9);
    CHECK_EQ_INT(count_label(&s, "conv2d+add "), 4);
    CHECK_EQ_INT(count_label(&s, "conv2d+add+batch_norm+relu "), 4); /* a stage's last unit: the sum read once */
    CHECK_EQ_INT(count_label(&s, "dense+bias_add "), 1);
    CHECK_EQ_INT(count_label(&s, "softmax "), 1);
    const SubgraphTask *t = task_of_label(&s, "conv2d+bias_add+relu 1x64x56x56");
    CHECK(t && t->weight == 2);
    CHECK(t && strstr(t->te, "max(") && strstr(t->te, "sum("));
    /* the residual add reads the shortcut as an input of the expression */
    for (int i = 0; i < s.n_sg; i++)
        if (strncmp(s.sg[i].label, "conv2d+add ", 11) == 0)
            CHECK_EQ_INT(s.sg[i].n_args, 3); /* data, weight, shortcut */
    Subgraphs_done(&s);
    Graph_done(&g);
}

/* mobilenet-v2: depthwise and pointwise convolutions with batch-norm folded
 * into bias and ReLU6 are fused; repeated blocks are one task. */
TEST(mobilenet_v2_fusion_and_weights) {
    NetworkOptions o;
    NetworkOptions_defaults(&o);
    Graph g;
    char err[TT_ERRLEN];
    CHECK(Network_graph("mobilenet-v2", &o, &g, err) == TT_OK);
    Subgraphs s;
    CHECK(Subgraphs_make(&g, &s, err) == TT_OK);
    CHECK(count_label(&s, "depthwise_conv2d+bias_add+clip(0,6) ") >= 17);
    int heavy = 0;
    for (int t = 0; t < s.n_tasks; t++)
        heavy += s.tasks[t].weight > 1;
    CHECK(heavy >= 5);
    CHECK(s.n_tasks < s.n_sg);
    Subgraphs_done(&s);
    Graph_done(&g);
}

/* The expressions evaluated by the interpreter, subgraph after subgraph,
 * give the reference output of the graph. */
static void check_values(const char *net, int image, int seq) {
    NetworkOptions o;
    NetworkOptions_defaults(&o);
    o.image_size = image;
    if (seq) o.seq_len = seq;
    Graph g;
    char err[TT_ERRLEN];
    CHECK(Network_graph(net, &o, &g, err) == TT_OK);
    Subgraphs s;
    CHECK(Subgraphs_make(&g, &s, err) == TT_OK);
    float *params = NULL, *input = NULL, *ref = NULL;
    CHECK(GraphData_make(&g, 3, &params, &input, err) == TT_OK);
    CHECK(Graph_reference(&g, params, input, &ref, err) == TT_OK);
    float **buf = calloc((size_t)g.n_tensors, sizeof *buf);
    for (int i = 0; i < g.n_inputs; i++)
        buf[g.inputs[i]] = input + Graph_inputOffset(&g, i);
    for (int k = 0; k < s.n_sg; k++) {
        const Subgraph *x = &s.sg[s.order[k]];
        TeProgram *p = TeProgram_parse(s.tasks[x->task].te, "sg", NULL, 0, err);
        CHECK(p != NULL);
        if (!p) break;
        double *v[TE_MAX_TENSORS] = {0};
        int arg = 0, out = -1;
        for (int t = 0; t < p->n_tensors; t++) {
            int64_t n = TeProgram_numel(p, t);
            v[t] = calloc((size_t)n, sizeof(double));
            if (p->tensors[t].is_output) out = t;
            if (!p->tensors[t].is_input) continue;
            const SubgraphArg *a = &x->args[arg++];
            const float *src = a->tensor >= 0 ? buf[a->tensor] : params + g.ops[a->op].param_off[a->param];
            if (a->tensor < 0) CHECK_EQ_INT(n, g.ops[a->op].param_count[a->param]);
            for (int64_t e = 0; e < n; e++)
                v[t][e] = src[e];
        }
        CHECK_EQ_INT(arg, x->n_args);
        TeProgram_eval(p, v);
        int64_t n = TeProgram_numel(p, out);
        CHECK_EQ_INT(n, GraphTensor_count(&g.tensors[x->out]));
        buf[x->out] = malloc((size_t)n * sizeof(float));
        for (int64_t e = 0; e < n; e++)
            buf[x->out][e] = (float)v[out][e];
        for (int t = 0; t < p->n_tensors; t++)
            free(v[t]);
        TeProgram_delete(p);
    }
    char msg[256] = "";
    bool same = buf[g.output] && Graph_compare(&g, ref, buf[g.output], msg, sizeof msg);
    if (!same) fprintf(stderr, "%s: %s\n", net, msg);
    CHECK(same);
    for (int k = 0; k < s.n_sg; k++)
        free(buf[s.sg[k].out]);
    free(buf);
    free(params);
    free(input);
    free(ref);
    Subgraphs_done(&s);
    Graph_done(&g);
}

TEST(expressions_compute_the_graph) {
    /* small networks and images keep the interpreter quick: tiny-resnet has a ResNet's subgraph kinds
     * (conv with bias + relu, residual adds, pre-activation BN+ReLU, pooling, classifier), mobilenet-v2
     * strided, 1x1 and depthwise convolutions with ReLU6, squeezenet concatenations */
    check_values("tiny-resnet", 0, 0);
    check_values("mobilenet-v2", 32, 0);
    check_values("squeezenet-1.1", 32, 0);
}

int main(void) {
    RUN(every_network_is_covered);
    RUN(resnet18_fusion_and_weights);
    RUN(mobilenet_v2_fusion_and_weights);
    RUN(expressions_compute_the_graph);
    return check_summary();
}
