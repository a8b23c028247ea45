/* tests/unit/test_onnx_fuse.c: NetPass_fuseElementwise and op
 * tunetop.Elementwise on models built here with the real op library. Every
 * model runs through the executor before and after the pass, and the outputs
 * must agree bit for bit (the fused node runs the ops' own kernels in their
 * order); the structure after the pass is checked too: what was fused, what
 * had to stay. */
#include <stdint.h>
#include <unistd.h>

#include "base/rng.h"
#include "tests/check.h"
#include "tuner/net/exec.h"
#include "tuner/net/modelfile.h"
#include "tuner/net/ops/op.h"
#include "tuner/net/passes.h"

#define SIDE 37 /* 2 x 3 x 37 x 37 = 8214 elements: 16 blocks of the fused op and a partial one */

static const int64_t DIMS[4] = {2, 3, SIDE, SIDE};

static int val(NetModel *m, const char *name) {
    int v = NetModel_find(m, name);
    return v >= 0 ? v : NetModel_addValue(m, name);
}

static void add_input(NetModel *m, const char *name) {
    int v = val(m, name);
    m->values[v].is_input = true;
    m->values[v].type = ND_F32;
    m->values[v].shape.rank = 4;
    memcpy(m->values[v].shape.dim, DIMS, sizeof DIMS);
    m->inputs = realloc(m->inputs, sizeof *m->inputs * (size_t)(m->n_inputs + 1));
    m->inputs[m->n_inputs++] = v;
}

static void add_output(NetModel *m, const char *name) {
    int v = val(m, name);
    m->values[v].is_output = true;
    m->outputs = realloc(m->outputs, sizeof *m->outputs * (size_t)(m->n_outputs + 1));
    m->outputs[m->n_outputs++] = v;
}

/* A constant of the given rank (all dimensions 1 but the last, which is n). */
static void add_const(NetModel *m, const char *name, int rank, int64_t n, float value) {
    int v = val(m, name);
    NdShape s = {.rank = rank};
    for (int d = 0; d < rank; d++)
        s.dim[d] = d == rank - 1 ? n : 1;
    char err[TT_ERRLEN];
    m->values[v].is_const = true;
    m->values[v].type = ND_F32;
    m->values[v].shape = s;
    if (NdTensor_alloc(&m->values[v].constant, ND_F32, &s, err) != TT_OK) abort();
    for (int64_t i = 0; i < m->values[v].constant.count; i++)
        ((float *)m->values[v].constant.data)[i] = value + 0.25f * (float)i;
}

/* A node "op(a[, b[, c]]) -> y"; b and c may be NULL, "" for an omitted input. */
static int node(NetModel *m, const char *op, const char *a, const char *b, const char *c, const char *y) {
    const char *in[3] = {a, b, c};
    int n_in = c ? 3 : b ? 2 : 1;
    int i = NetModel_addNode(m, y, op, "", n_in, 1, 0);
    for (int k = 0; k < n_in; k++)
        m->nodes[i].in[k] = in[k][0] ? val(m, in[k]) : -1;
    m->nodes[i].out[0] = val(m, y);
    return i;
}

static void float_attr(NetModel *m, int i, const char *name, double f) {
    NetNode *n = &m->nodes[i];
    n->attrs = realloc(n->attrs, sizeof *n->attrs * (size_t)(n->n_attrs + 1));
    NetAttr *a = &n->attrs[n->n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = strdup(name);
    a->kind = NATTR_FLOAT;
    a->f = f;
}

static bool prepare(NetModel *m) {
    char err[TT_ERRLEN] = "";
    m->opset = 17;
    bool ok = NetModel_sort(m, err) == TT_OK && NetModel_bind(m, err) == TT_OK && NetPass_inferShapes(m, err) == TT_OK;
    if (!ok) fprintf(stderr, "prepare: %s\n", err);
    return ok;
}

static void fill(NdTensor *t, uint64_t seed) {
    Rng r;
    Rng_seed(&r, seed);
    for (int64_t i = 0; i < t->count; i++)
        ((float *)t->data)[i] = (float)(Rng_uniform(&r) * 8 - 4);
}

/* Runs m on seeded inputs; outputs into out (m->n_outputs tensors). */
static bool run(const NetModel *m, NdTensor *out) {
    NdTensor in[4] = {{0}};
    char err[TT_ERRLEN] = "";
    NdShape s = {.rank = 4};
    memcpy(s.dim, DIMS, sizeof DIMS);
    for (int i = 0; i < m->n_inputs; i++) {
        if (NdTensor_alloc(&in[i], ND_F32, &s, err) != TT_OK) abort();
        fill(&in[i], 100 + (uint64_t)i);
    }
    bool ok = NetExec_run(m, in, m->n_inputs, out, err) == TT_OK;
    if (!ok) fprintf(stderr, "run: %s\n", err);
    for (int i = 0; i < m->n_inputs; i++)
        NdTensor_free(&in[i]);
    return ok;
}

static bool same_bits(const NdTensor *a, const NdTensor *b) {
    return a->type == b->type && NdShape_equal(&a->shape, &b->shape) && a->count == b->count &&
           !memcmp(a->data, b->data, (size_t)a->count * NdType_size(a->type));
}

static int live(const NetModel *m, const char *op) {
    int c = 0;
    for (int i = 0; i < m->n_nodes; i++)
        c += !m->nodes[i].dead && (!op || !strcmp(m->nodes[i].op, op));
    return c;
}

/* Runs m, fuses it, runs it again: the outputs agree bit for bit. *made: fused nodes. */
static bool fuse_agrees(NetModel *m, int *made) {
    NdTensor before[24] = {{0}}, after[24] = {{0}}; /* outputs: random models have up to 14 */
    char err[TT_ERRLEN] = "";
    bool ok = run(m, before);
    if (ok && NetPass_fuseElementwise(m, made, err) != TT_OK) {
        fprintf(stderr, "fuse: %s\n", err);
        ok = false;
    }
    ok = ok && run(m, after);
    for (int o = 0; ok && o < m->n_outputs; o++)
        ok = same_bits(&before[o], &after[o]);
    for (int o = 0; o < m->n_outputs; o++) {
        NdTensor_free(&before[o]);
        NdTensor_free(&after[o]);
    }
    return ok;
}

/* GELU as exporters write it: x * 0.5 * (1 + erf(x / sqrt 2)), x read twice. */
TEST(gelu_chain_becomes_one_node) {
    NetModel m;
    NetModel_init(&m);
    add_input(&m, "x");
    add_const(&m, "sqrt2", 0, 1, 1.4142135f);
    add_const(&m, "one", 0, 1, 1.0f);
    add_const(&m, "half", 0, 1, 0.5f);
    node(&m, "Div", "x", "sqrt2", NULL, "a");
    node(&m, "Erf", "a", NULL, NULL, "b");
    node(&m, "Add", "b", "one", NULL, "c");
    node(&m, "Mul", "x", "c", NULL, "d");
    node(&m, "Mul", "d", "half", NULL, "y");
    add_output(&m, "y");
    CHECK(prepare(&m));
    int made = -1;
    CHECK(fuse_agrees(&m, &made));
    CHECK_EQ_INT(made, 1);
    CHECK_EQ_INT(live(&m, NULL), 1);
    CHECK_EQ_INT(live(&m, "Elementwise"), 1);
    const NetNode *f = &m.nodes[0];
    CHECK_STR(f->name, "Div+Erf+Add+Mul+Mul");
    CHECK_EQ_INT(f->n_in, 4); /* x and the three constants */
    CHECK_EQ_INT(f->in[0], NetModel_find(&m, "x"));
    NetModel_done(&m);
}

/* SiLU after an op that is no step (Softmax): x * sigmoid(x) fuses, the Softmax stays. */
TEST(silu_after_another_op) {
    NetModel m;
    NetModel_init(&m);
    add_input(&m, "x");
    node(&m, "Softmax", "x", NULL, NULL, "s");
    node(&m, "Sigmoid", "s", NULL, NULL, "g");
    node(&m, "Mul", "s", "g", NULL, "y");
    add_output(&m, "y");
    CHECK(prepare(&m));
    int made = 0;
    CHECK(fuse_agrees(&m, &made));
    CHECK_EQ_INT(made, 1);
    CHECK_EQ_INT(live(&m, "Softmax"), 1);
    CHECK_EQ_INT(live(&m, "Sigmoid"), 0);
    NetModel_done(&m);
}

/* What must not fuse: a result read by another op, a per-channel (not single)
 * constant, a single op, and int64 math. */
TEST(what_stays_unfused) {
    NetModel m;
    NetModel_init(&m);
    add_input(&m, "x");
    add_const(&m, "bias", 3, SIDE, 0.5f); /* [1, 1, SIDE]: broadcast over the last axis, no single element */
    node(&m, "Tanh", "x", NULL, NULL, "t");
    node(&m, "Exp", "t", NULL, NULL, "e");
    node(&m, "Softmax", "t", NULL, NULL, "sm"); /* t is read outside the chain */
    node(&m, "Relu", "x", NULL, NULL, "r");
    node(&m, "Add", "r", "bias", NULL, "rb"); /* broadcast: not a step */
    add_output(&m, "e");
    add_output(&m, "sm");
    add_output(&m, "rb");
    CHECK(prepare(&m));
    int made = -1;
    CHECK(fuse_agrees(&m, &made));
    CHECK_EQ_INT(made, 0);
    CHECK_EQ_INT(live(&m, NULL), 5);
    NetModel_done(&m);
}

/* An intermediate result that is also a graph output ends the chain there: the
 * rest (at least two steps) still fuses, and both outputs stay right. */
TEST(graph_output_inside_a_chain) {
    NetModel m;
    NetModel_init(&m);
    add_input(&m, "x");
    add_const(&m, "three", 0, 1, 3.0f);
    add_const(&m, "six", 1, 1, 6.0f);
    node(&m, "Abs", "x", NULL, NULL, "a");
    node(&m, "Neg", "a", NULL, NULL, "b"); /* a graph output */
    node(&m, "Add", "b", "three", NULL, "c");
    node(&m, "Clip", "c", "", "six", "d"); /* min omitted */
    node(&m, "Div", "d", "six", NULL, "y");
    add_output(&m, "b");
    add_output(&m, "y");
    CHECK(prepare(&m));
    int made = -1;
    CHECK(fuse_agrees(&m, &made));
    CHECK(made >= 1);
    CHECK_EQ_INT(live(&m, "Elementwise"), made);
    CHECK(live(&m, NULL) < 5);
    NetModel_done(&m);
}

/* A second tensor of the same shape that depends on the chain's first result
 * through an op that is no step: taking it in would make the fused node read
 * its own output, so the chain stops before it; the model still sorts and runs. */
TEST(no_cycle_through_an_outside_op) {
    NetModel m;
    NetModel_init(&m);
    add_input(&m, "x");
    node(&m, "Sigmoid", "x", NULL, NULL, "a");
    node(&m, "Tanh", "a", NULL, NULL, "b");
    node(&m, "Softmax", "a", NULL, NULL, "s"); /* reads a */
    node(&m, "Mul", "b", "s", NULL, "y");      /* reads the chain and s */
    add_output(&m, "y");
    CHECK(prepare(&m));
    int made = -1;
    CHECK(fuse_agrees(&m, &made));
    CHECK_EQ_INT(live(&m, "Softmax"), 1);
    NetModel_done(&m);
}

/* Attributes travel with their step: LeakyRelu's alpha and a second input of
 * the chain's shape; the fused node survives the model file. */
TEST(attributes_inputs_and_the_model_file) {
    NetModel m;
    NetModel_init(&m);
    add_input(&m, "x");
    add_input(&m, "z");
    int lr = node(&m, "LeakyRelu", "x", NULL, NULL, "a");
    float_attr(&m, lr, "alpha", 0.3);
    node(&m, "Add", "a", "z", NULL, "b");
    int el = node(&m, "Elu", "b", NULL, NULL, "y");
    float_attr(&m, el, "alpha", 0.7);
    add_output(&m, "y");
    CHECK(prepare(&m));
    int made = -1;
    CHECK(fuse_agrees(&m, &made));
    CHECK_EQ_INT(made, 1);
    CHECK(NetNode_attr(&m.nodes[0], "0.alpha") && NetNode_attr(&m.nodes[0], "2.alpha"));
    CHECK_NEAR(NetNode_attrFloat(&m.nodes[0], "2.alpha", 0), 0.7, 1e-7);
    char path[] = "/tmp/tunetop-test-fuse-XXXXXX", err[TT_ERRLEN] = "";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    NetModel back;
    NetModel_init(&back);
    CHECK(ModelFile_write(&m, path, err) == TT_OK);
    bool read = ModelFile_read(path, &back, err) == TT_OK && NetModel_bind(&back, err) == TT_OK;
    CHECK(read);
    NdTensor a[1] = {{0}}, b[1] = {{0}};
    if (read) {
        CHECK(run(&m, a) && run(&back, b));
        CHECK(same_bits(&a[0], &b[0]));
        NetModel_done(&back);
    }
    NdTensor_free(&a[0]);
    NdTensor_free(&b[0]);
    unlink(path);
    NetModel_done(&m);
}

/* The fused op refuses what it cannot compute, in one sentence. */
TEST(fused_op_checks_its_attributes) {
    NetModel m;
    NetModel_init(&m);
    add_input(&m, "x");
    int i = NetModel_addNode(&m, "f", "Elementwise", "tunetop", 1, 1, 2);
    m.nodes[i].in[0] = val(&m, "x");
    m.nodes[i].out[0] = val(&m, "y");
    NetAttr *a = m.nodes[i].attrs;
    a[0].name = strdup("ops");
    a[0].kind = NATTR_STRINGS;
    a[0].n = 1;
    a[0].strings = calloc(1, sizeof(char *));
    a[0].strings[0] = strdup("Equal");
    a[1].name = strdup("args");
    a[1].kind = NATTR_INTS;
    a[1].n = 3;
    a[1].ints = calloc(3, sizeof(int64_t));
    add_output(&m, "y");
    char err[TT_ERRLEN] = "";
    CHECK(NetModel_sort(&m, err) == TT_OK);
    CHECK(NetModel_bind(&m, err) == TT_ERR);
    CHECK(strstr(err, "Equal is not a float32 elementwise op") != NULL);
    free(a[0].strings[0]);
    a[0].strings[0] = strdup("Exp");
    a[1].ints[0] = 5; /* no such input */
    CHECK(NetModel_bind(&m, err) == TT_ERR);
    CHECK(strstr(err, "refers to 5") != NULL);
    free(a[0].strings[0]);
    a[0].strings[0] = strdup("Add"); /* a damaged file: Add with its second input omitted */
    a[1].ints[0] = 0, a[1].ints[1] = -1, a[1].ints[2] = -1;
    CHECK(NetModel_bind(&m, err) == TT_ERR);
    CHECK(strstr(err, "Add's input 1 is omitted") != NULL);
    free(a[0].strings[0]);
    a[0].strings[0] = strdup("Max"); /* Max of three: a fold, fused only as a pair */
    a[1].ints[1] = 0, a[1].ints[2] = 0;
    CHECK(NetModel_bind(&m, err) == TT_ERR);
    CHECK(strstr(err, "does not take 3 inputs") != NULL);
    NetModel_done(&m);
}

/* ---- random chains ---- */

typedef struct RandOp {
    const char *op;
    int arity; /* 1: unary; 2: with a second operand */
} RandOp;

static const RandOp OPS[] = {{"Sigmoid", 1}, {"Tanh", 1}, {"Relu", 1},     {"Abs", 1},       {"Neg", 1},
                             {"Erf", 1},     {"Exp", 1},  {"Softsign", 1}, {"HardSwish", 1}, {"Add", 2},
                             {"Sub", 2},     {"Mul", 2},  {"Div", 2},      {"Max", 2},       {"Min", 2}};
#define N_OPS (int)(sizeof OPS / sizeof OPS[0])

/* A random DAG over x and z: each node reads a recent value and, for a binary
 * op, another value, a single constant or z; some results are graph outputs. */
static void random_model(NetModel *m, Rng *r) {
    add_input(m, "x");
    add_input(m, "z");
    add_const(m, "k", 1, 1, 0.75f);
    int n = 2 + (int)Rng_below(r, 12);
    char names[20][16];
    strcpy(names[0], "x");
    for (int i = 0; i < n; i++) {
        const RandOp *o = &OPS[Rng_below(r, N_OPS)];
        snprintf(names[i + 1], sizeof names[i + 1], "v%d", i);
        const char *a = names[i - (int)Rng_below(r, (uint64_t)(i < 2 ? i + 1 : 3))]; /* one of the last three */
        const char *b = NULL;
        if (o->arity == 2) {
            int pick = (int)Rng_below(r, 4);
            b = pick == 0 ? "k" : pick == 1 ? "z" : names[Rng_below(r, (uint64_t)i + 1)];
        }
        node(m, o->op, a, b, NULL, names[i + 1]);
        if (i < n - 1 && Rng_below(r, 5) == 0) add_output(m, names[i + 1]);
    }
    add_output(m, names[n]);
}

TEST(random_chains_agree_bit_for_bit) {
    Rng r;
    Rng_seed(&r, 2026);
    int fused_models = 0;
    for (int t = 0; t < 150; t++) {
        NetModel m;
        NetModel_init(&m);
        random_model(&m, &r);
        CHECK(prepare(&m));
        int made = 0;
        bool ok = fuse_agrees(&m, &made);
        if (!ok) fprintf(stderr, "random model %d disagrees after fusing %d chains\n", t, made);
        CHECK(ok);
        fused_models += made > 0;
        NetModel_done(&m);
    }
    CHECK(fused_models >= 100); /* most random chains do fuse */
}

int main(void) {
    RUN(gelu_chain_becomes_one_node);
    RUN(silu_after_another_op);
    RUN(what_stays_unfused);
    RUN(graph_output_inside_a_chain);
    RUN(no_cycle_through_an_outside_op);
    RUN(attributes_inputs_and_the_model_file);
    RUN(fused_op_checks_its_attributes);
    RUN(random_chains_agree_bit_for_bit);
    return check_summary();
}
