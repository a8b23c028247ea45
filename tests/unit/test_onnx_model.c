/* tests/unit/test_onnx_model.c: the general graph's storage (name index,
 * Kahn's sort and its errors, binding) and the reference executor, with ops
 * defined here so that they do not depend on the op tables. */
#include <time.h>

#include "tests/check.h"
#include "tuner/net/exec.h"
#include "tuner/net/model.h"
#include "tuner/net/ops/op.h"

/* ---- two tiny ops of this test: y = a + b (same shape), y = -a ---- */

static Status add_run(OpCtx *c) {
    const NdTensor *a = c->in[0], *b = c->in[1];
    if (!NdShape_equal(&a->shape, &b->shape)) return tt_fail(c->err, "shapes differ");
    if (NdTensor_alloc(&c->out[0], ND_F32, &a->shape, c->err) != TT_OK) return TT_ERR;
    for (int64_t i = 0; i < a->count; i++)
        ((float *)c->out[0].data)[i] = ((const float *)a->data)[i] + ((const float *)b->data)[i];
    return TT_OK;
}

static Status neg_run(OpCtx *c) {
    if (NdTensor_alloc(&c->out[0], ND_F32, &c->in[0]->shape, c->err) != TT_OK) return TT_ERR;
    for (int64_t i = 0; i < c->in[0]->count; i++)
        ((float *)c->out[0].data)[i] = -((const float *)c->in[0]->data)[i];
    return TT_OK;
}

static Status lazy_run(OpCtx *c) { return TT_OK; } /* forgets its output */

static const OpDef ADD = {.name = "TestAdd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1, .run = add_run};
static const OpDef NEG = {.name = "TestNeg", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .run = neg_run};
static const OpDef LAZY = {.name = "TestLazy", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1, .run = lazy_run};

static int node(NetModel *m, const char *name, const OpDef *def, const char *a, const char *b, const char *y) {
    int i = NetModel_addNode(m, name, def->name, "", b ? 2 : 1, 1, 0);
    int va = NetModel_find(m, a), vb = b ? NetModel_find(m, b) : -1, vy = NetModel_find(m, y);
    m->nodes[i].in[0] = va >= 0 ? va : NetModel_addValue(m, a);
    if (b) m->nodes[i].in[1] = vb >= 0 ? vb : NetModel_addValue(m, b);
    m->nodes[i].out[0] = vy >= 0 ? vy : NetModel_addValue(m, y);
    m->nodes[i].def = def;
    return i;
}

static void add_input(NetModel *m, const char *name) {
    int v = NetModel_addValue(m, name);
    m->values[v].is_input = true;
    m->values[v].type = ND_F32;
    m->inputs = realloc(m->inputs, sizeof *m->inputs * (size_t)(m->n_inputs + 1));
    m->inputs[m->n_inputs++] = v;
}

static void add_output(NetModel *m, const char *name) {
    int v = NetModel_find(m, name);
    m->values[v].is_output = true;
    m->outputs = realloc(m->outputs, sizeof *m->outputs * (size_t)(m->n_outputs + 1));
    m->outputs[m->n_outputs++] = v;
}

TEST(index_finds_every_name_and_the_first_of_twins) {
    NetModel m;
    NetModel_init(&m);
    char name[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "v%d", i);
        CHECK_EQ_INT(NetModel_addValue(&m, name), i);
    }
    CHECK_EQ_INT(NetModel_addValue(&m, "v17"), 3000);
    for (int i = 0; i < 3000; i += 7) {
        snprintf(name, sizeof name, "v%d", i);
        CHECK_EQ_INT(NetModel_find(&m, name), i);
    }
    CHECK_EQ_INT(NetModel_find(&m, "v17"), 17);
    CHECK_EQ_INT(NetModel_find(&m, "nope"), -1);
    CHECK_EQ_INT(m.values[5].producer, -1);
    CHECK_EQ_INT(m.values[5].shape.rank, -1);
    NetModel_done(&m);
}

TEST(sort_orders_producers_first_and_keeps_a_long_chain_fast) {
    NetModel m;
    NetModel_init(&m);
    add_input(&m, "x");
    char a[32], y[32];
    /* a chain of 2000 nodes added back to front */
    for (int i = 1999; i >= 0; i--) {
        snprintf(a, sizeof a, i ? "t%d" : "x", i - 1);
        snprintf(y, sizeof y, "t%d", i);
        node(&m, "", &NEG, a, NULL, y);
    }
    add_output(&m, "t1999");
    char err[TT_ERRLEN] = "";
    clock_t t0 = clock();
    CHECK_EQ_INT(NetModel_sort(&m, err), TT_OK);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(secs < 0.5);
    for (int i = 0; i < m.n_nodes; i++) {
        snprintf(y, sizeof y, "t%d", i);
        CHECK_STR(m.values[m.nodes[i].out[0]].name, y);
        CHECK_EQ_INT(m.values[m.nodes[i].out[0]].producer, i);
    }
    NetModel_done(&m);
}

TEST(sort_names_the_node_of_a_cycle_a_missing_value_and_a_twin_producer) {
    NetModel m;
    char err[TT_ERRLEN] = "";
    NetModel_init(&m);
    add_input(&m, "x");
    node(&m, "first", &ADD, "x", "c", "b");
    node(&m, "second", &NEG, "b", NULL, "c");
    add_output(&m, "c");
    CHECK_EQ_INT(NetModel_sort(&m, err), TT_ERR);
    CHECK_CONTAINS(err, "cycle");
    CHECK(strstr(err, "'first' (TestAdd)") || strstr(err, "'second' (TestNeg)"));
    NetModel_done(&m);

    NetModel_init(&m);
    add_input(&m, "x");
    node(&m, "adder", &ADD, "x", "w", "y");
    add_output(&m, "y");
    CHECK_EQ_INT(NetModel_sort(&m, err), TT_ERR);
    CHECK_CONTAINS(err, "node 'adder' (TestAdd) reads 'w', which nothing produces");
    NetModel_done(&m);

    NetModel_init(&m);
    add_input(&m, "x");
    node(&m, "one", &NEG, "x", NULL, "y");
    node(&m, "two", &NEG, "x", NULL, "y");
    add_output(&m, "y");
    CHECK_EQ_INT(NetModel_sort(&m, err), TT_ERR);
    CHECK_CONTAINS(err, "'two' (TestNeg) writes 'y', which node 'one' (TestNeg) writes too");
    NetModel_done(&m);
}

TEST(bind_refuses_an_unknown_op_naming_node_and_domain) {
    NetModel m;
    char err[TT_ERRLEN] = "";
    NetModel_init(&m);
    add_input(&m, "x");
    int i = NetModel_addNode(&m, "mystery", "Foo", "", 1, 1, 0);
    m.nodes[i].in[0] = 0;
    m.nodes[i].out[0] = NetModel_addValue(&m, "y");
    CHECK_EQ_INT(NetModel_bind(&m, err), TT_ERR);
    CHECK_STR(err, "node 'mystery' (Foo): unsupported op Foo (domain ai.onnx)");
    free(m.nodes[i].domain);
    m.nodes[i].domain = strdup("com.example");
    CHECK_EQ_INT(NetModel_bind(&m, err), TT_ERR);
    CHECK_CONTAINS(err, "(domain com.example)");
    NetModel_done(&m);
}

TEST(attribute_getters_return_values_or_defaults) {
    NetModel m;
    NetModel_init(&m);
    int i = NetModel_addNode(&m, "n", "Conv", "", 0, 0, 3);
    NetNode *n = &m.nodes[i];
    n->attrs[0] = (NetAttr){.name = strdup("group"), .kind = NATTR_INT, .i = 4};
    n->attrs[1] = (NetAttr){.name = strdup("pads"), .kind = NATTR_INTS, .n = 2, .ints = malloc(16)};
    n->attrs[1].ints[0] = 1, n->attrs[1].ints[1] = 2;
    n->attrs[2] = (NetAttr){.name = strdup("mode"), .kind = NATTR_STRING, .s = strdup("linear")};
    int count;
    CHECK_EQ_INT(NetNode_attrInt(n, "group", 1), 4);
    CHECK_EQ_INT(NetNode_attrInt(n, "absent", 7), 7);
    CHECK_EQ_INT(NetNode_attrInt(n, "mode", 7), 7);
    CHECK_NEAR(NetNode_attrFloat(n, "group", 0), 4.0, 0);
    CHECK_STR(NetNode_attrString(n, "mode", "x"), "linear");
    const int64_t *pads = NetNode_attrInts(n, "pads", &count);
    CHECK_EQ_INT(count, 2);
    CHECK(pads && pads[1] == 2);
    CHECK(NetNode_attrInts(n, "strides", &count) == NULL && count == 0);
    char label[64];
    NetNode_label(n, 3, label, sizeof label);
    CHECK_STR(label, "'n' (Conv)");
    NetNode_label(&(NetNode){.name = "", .op = "Relu"}, 12, label, sizeof label);
    CHECK_STR(label, "#12 (Relu)");
    NetModel_done(&m);
}

static NdTensor vec(const float *v, int n) {
    NdTensor t = {0};
    NdShape s = {.rank = 1, .dim = {n}};
    NdTensor_alloc(&t, ND_F32, &s, NULL);
    memcpy(t.data, v, sizeof *v * (size_t)n);
    return t;
}

TEST(exec_runs_nodes_in_order_with_constants_and_gives_the_outputs) {
    NetModel m;
    char err[TT_ERRLEN] = "";
    NetModel_init(&m);
    add_input(&m, "x");
    int w = NetModel_addValue(&m, "w");
    m.values[w].is_const = true;
    m.values[w].constant = vec((float[]){10, 20, 30}, 3);
    node(&m, "s", &ADD, "n", "w", "y"); /* out of order: sort fixes it */
    node(&m, "n", &NEG, "x", NULL, "n");
    node(&m, "twice", &ADD, "y", "y", "z");
    add_output(&m, "z");
    add_output(&m, "y");
    CHECK_EQ_INT(NetModel_sort(&m, err), TT_OK);
    NdTensor in = vec((float[]){1, 2, 3}, 3), out[2] = {{0}, {0}};
    CHECK_EQ_INT(NetExec_run(&m, &in, 1, out, err), TT_OK);
    CHECK_EQ_INT(out[0].count, 3);
    CHECK_NEAR(((float *)out[0].data)[2], 54, 0);
    CHECK_NEAR(((float *)out[1].data)[0], 9, 0);
    NdTensor_free(&out[0]);
    NdTensor_free(&out[1]);

    NdTensor bad = vec((float[]){1, 2}, 2);
    m.values[m.inputs[0]].shape = (NdShape){.rank = 1, .dim = {3}};
    CHECK_EQ_INT(NetExec_run(&m, &bad, 1, out, err), TT_ERR);
    CHECK_CONTAINS(err, "input 'x' has shape 2; the model takes 3");
    NdTensor_free(&bad);
    NdTensor_free(&in);
    NetModel_done(&m);
}

TEST(exec_names_the_node_that_fails_or_forgets_an_output) {
    NetModel m;
    char err[TT_ERRLEN] = "";
    NetModel_init(&m);
    add_input(&m, "x");
    add_input(&m, "x2");
    node(&m, "sum", &ADD, "x", "x2", "y");
    node(&m, "idle", &LAZY, "y", NULL, "z");
    add_output(&m, "z");
    CHECK_EQ_INT(NetModel_sort(&m, err), TT_OK);
    NdTensor in[2] = {vec((float[]){1, 2, 3}, 3), vec((float[]){1, 2}, 2)}, out = {0};
    CHECK_EQ_INT(NetExec_run(&m, in, 2, &out, err), TT_ERR);
    CHECK_STR(err, "node 'sum' (TestAdd): shapes differ");
    NdTensor_free(&in[1]);
    in[1] = vec((float[]){1, 2, 3}, 3);
    CHECK_EQ_INT(NetExec_run(&m, in, 2, &out, err), TT_ERR);
    CHECK_CONTAINS(err, "node 'idle' (TestLazy): the op left output 0 ('z') unset");
    CHECK_EQ_INT(NetExec_run(&m, in, 1, &out, err), TT_ERR);
    CHECK_CONTAINS(err, "takes 2 inputs; 1 were given");
    NdTensor_free(&in[0]);
    NdTensor_free(&in[1]);
    NetModel_done(&m);
}

/* The buffer cache (nd.h): held, a freed large buffer comes back zeroed for
 * the same byte count, and only for it; small ones and the unheld cache
 * are plain malloc and free. */
TEST(buffer_cache_hands_back_zeroed_buffers_of_the_same_size) {
    char err[TT_ERRLEN];
    NdShape big = {.rank = 2, .dim = {256, 1024}}, other = {.rank = 2, .dim = {256, 1000}};
    NdTensor a = {0}, b = {0}, c = {0};
    NdCache_hold();
    CHECK(NdTensor_alloc(&a, ND_F32, &big, err) == TT_OK);
    void *first = a.data;
    memset(a.data, 0x5a, (size_t)a.count * 4);
    NdTensor_free(&a);
    CHECK(a.data == NULL && a.shape.rank == -1);
    CHECK(NdTensor_alloc(&c, ND_F32, &other, err) == TT_OK); /* another size: not the kept buffer */
    CHECK(c.data != first);
    CHECK(NdTensor_alloc(&b, ND_F32, &big, err) == TT_OK);
    CHECK(b.data == first);
    bool zero = true;
    for (int64_t i = 0; i < b.count; i++)
        zero = zero && ((float *)b.data)[i] == 0;
    CHECK(zero);
    NdTensor_free(&b);
    NdTensor_free(&c);
    NdCache_release(); /* frees what it kept (LeakSanitizer would say otherwise) */
    CHECK(NdTensor_alloc(&a, ND_I64, &big, err) == TT_OK && a.count == 256 * 1024);
    NdTensor_free(&a);
}

int main(void) {
    RUN(index_finds_every_name_and_the_first_of_twins);
    RUN(sort_orders_producers_first_and_keeps_a_long_chain_fast);
    RUN(sort_names_the_node_of_a_cycle_a_missing_value_and_a_twin_producer);
    RUN(bind_refuses_an_unknown_op_naming_node_and_domain);
    RUN(attribute_getters_return_values_or_defaults);
    RUN(exec_runs_nodes_in_order_with_constants_and_gives_the_outputs);
    RUN(exec_names_the_node_that_fails_or_forgets_an_output);
    RUN(buffer_cache_hands_back_zeroed_buffers_of_the_same_size);
    return check_summary();
}
