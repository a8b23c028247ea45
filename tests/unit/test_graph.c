/* tests/unit/test_graph.c: network graphs, their execution plans, and the
 * reference execution on seeded data at small sizes. */
#include <math.h>

#include "kernels/template.h"
#include "tests/check.h"
#include "tuner/graph_ref.h"
#include "tuner/netprog.h"
#include "tuner/network.h"

static const char *const NETS[] = {"resnet-18",    "resnet-34",      "resnet-50", "resnet-101",
                                   "resnet-152",   "mobilenet",      "mobilenet-v2", "squeezenet-1.1",
                                   "vgg-16",       "inception-v3",   "bert-base"};

/* Every op's inputs are produced before it in Graph_order; the plan runs every
 * tunable op once as a kernel step and writes every tensor a later step reads. */
static void check_plan(const Graph *g, const GraphTasks *gt, const int *blocked) {
    NetPlan plan;
    char err[TT_ERRLEN] = "";
    CHECK(NetPlan_make(g, gt, blocked, &plan, err) == TT_OK);
    bool *reblocked = calloc((size_t)g->n_ops, sizeof(bool));
    int kernels = 0, tunable = 0;
    for (int i = 0; i < g->n_ops; i++)
        tunable += GraphOp_isTunable(g->ops[i].kind);
    bool *written = calloc((size_t)g->n_tensors, sizeof(bool));
    for (int i = 0; i < g->n_inputs; i++)
        written[g->inputs[i]] = true;
    for (int s = 0; s < plan.n_steps; s++) {
        const NetStep *st = &plan.steps[s];
        const GraphOp *op = &g->ops[st->op];
        kernels += st->kind == STEP_KERNEL;
        bool epilogue = st->rest_bias >= 0 || st->rest_add >= 0 || st->rest_relu >= 0;
        if (st->kind == STEP_REBLOCK) {
            /* blocked straight into the only reader of the tensor, a kernel with a blocked input */
            CHECK(blocked && (blocked[st->task] & BLOCKED_OUTPUT));
            /* straight, or through a clip that is the only reader */
            int via = st->op2 >= 0 ? g->ops[st->op2].out : st->out;
            if (st->op2 >= 0) CHECK(g->ops[st->op2].kind == GOP_CLIP && g->ops[st->op2].in[0] == st->out);
            CHECK(g->ops[st->to_op].in[0] == via && Graph_consumers(g, via) == 1 && Graph_consumers(g, st->out) == 1);
            CHECK(st->rest_add < 0);
            CHECK(blocked[gt->task[st->to_op]] & BLOCKED_INPUT);
            reblocked[st->to_op] = true;
            continue; /* the tensor itself is not written */
        }
        if (st->kind == STEP_UNPACK) {
            written[st->out] = true;
            continue;
        }
        if (st->chain_in) {
            CHECK(reblocked[st->op]);
            CHECK(st->kind == STEP_KERNEL);
        } else if (epilogue) {
            CHECK(written[plan.alias[st->out]]);
        } else {
            for (int j = 0; j < op->n_in; j++)
                if (!written[plan.alias[op->in[j]]]) {
                    fprintf(stderr, "%s step %d (%s) reads tensor %d before it is written\n", g->name, s, st->label,
                            op->in[j]);
                    CHECK(0);
                }
        }
        if (st->res >= 0) CHECK(written[plan.alias[st->res]]);
        CHECK(plan.alias[st->out] == st->out);
        if (st->kind == STEP_PACK) continue;
        /* a split kernel writes its tensor in its unpack step (or keeps it blocked) */
        if (!(st->kind == STEP_KERNEL && st->split && blocked && (blocked[st->task] & BLOCKED_OUTPUT))) written[st->out] = true;
        /* a flatten's view is written when its source is */
        for (int t = 0; t < g->n_tensors; t++)
            if (plan.alias[t] >= 0 && written[plan.alias[t]]) written[t] = true;
    }
    CHECK_EQ_INT(kernels, tunable);
    CHECK(written[g->output]);
    free(written);
    free(reblocked);
    NetPlan_done(&plan);
}

TEST(test_networks_reference) {
    for (size_t k = 0; k < sizeof NETS / sizeof NETS[0]; k++) {
        NetworkOptions opt;
        NetworkOptions_defaults(&opt);
        opt.image_size = strcmp(NETS[k], "inception-v3") == 0 ? 75 : 32;
        opt.seq_len = 4;
        opt.batch = strcmp(NETS[k], "bert-base") == 0 ? 2 : 1;
        Graph g;
        char err[TT_ERRLEN] = "";
        CHECK(Network_graph(NETS[k], &opt, &g, err) == TT_OK);
        GraphTasks gt;
        Graph_tasks(&g, 0, &gt);
        /* the derived tasks are Network_extract's */
        NetworkTask *tasks;
        NetworkUntuned *un;
        int n_tasks, n_un;
        CHECK(Network_extract(NETS[k], &opt, &tasks, &n_tasks, &un, &n_un, err) == TT_OK);
        CHECK_EQ_INT(n_tasks, gt.n_tasks);
        for (int t = 0; t < n_tasks && t < gt.n_tasks; t++)
            CHECK(Workload_equal(&tasks[t].wl, &gt.tasks[t].wl));
        free(tasks);
        free(un);
        check_plan(&g, &gt, NULL);
        /* every convolution kernel blocked in and out: tensors between kernels stay blocked where they can */
        int *blocked = calloc((size_t)gt.n_tasks, sizeof(int));
        for (int t = 0; t < gt.n_tasks; t++)
            blocked[t] = gt.tasks[t].wl.op == OP_CONV2D || gt.tasks[t].wl.op == OP_DEPTHWISE_CONV2D
                             ? BLOCKED_INPUT | BLOCKED_OUTPUT
                             : 0;
        check_plan(&g, &gt, blocked);
        free(blocked);
        /* the reference on the smaller ones (test_run_networks runs every network against it) */
        if (!(strcmp(NETS[k], "resnet-18") == 0 || strcmp(NETS[k], "mobilenet-v2") == 0 ||
              strcmp(NETS[k], "squeezenet-1.1") == 0 || strcmp(NETS[k], "bert-base") == 0)) {
            GraphTasks_done(&gt);
            Graph_done(&g);
            continue;
        }

        float *params, *input, *out;
        CHECK(GraphData_make(&g, 1, &params, &input, err) == TT_OK);
        CHECK(Graph_reference(&g, params, input, &out, err) == TT_OK);
        const GraphTensor *ot = &g.tensors[g.output];
        int64_t n = GraphTensor_count(ot), cols = ot->dim[ot->ndim - 1];
        double mx = 0, sum = 0, sq = 0;
        bool finite = true;
        for (int64_t i = 0; i < n; i++) {
            finite = finite && isfinite(out[i]);
            mx = fabs(out[i]) > mx ? fabs(out[i]) : mx;
            sum += out[i];
            sq += (double)out[i] * out[i];
        }
        double mean = sum / (double)n, sd = sqrt(sq / (double)n - mean * mean);
        fprintf(stderr, "%-15s output %s max %.4g mean %.4g sd %.4g\n", NETS[k], g.name, mx, mean, sd);
        CHECK(finite);
        if (strcmp(NETS[k], "bert-base") == 0) {
            CHECK(sd > 0.3); /* layer-normed hidden states */
        } else {
            /* class probabilities: rows sum to 1 and are not one-hot (the logits are not huge) */
            CHECK_NEAR(sum / (double)(n / cols), 1.0, 1e-3);
            CHECK(mx < 0.5);
            CHECK(sd > 1e-6);
        }
        /* a compare with itself passes, a moved element fails and is named */
        char msg[256] = "";
        CHECK(Graph_compare(&g, out, out, msg, sizeof msg));
        float *bad = malloc((size_t)n * sizeof(float));
        memcpy(bad, out, (size_t)n * sizeof(float));
        bad[n / 2] += (float)(0.01 * mx + 0.01);
        CHECK(!Graph_compare(&g, out, bad, msg, sizeof msg));
        CHECK_CONTAINS(msg, "element");
        free(bad);
        free(out);
        free(params);
        free(input);
        GraphTasks_done(&gt);
        Graph_done(&g);
    }
}

int main(void) {
    RUN(test_networks_reference);
    return check_summary();
}
