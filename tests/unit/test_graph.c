/* tests/unit/test_graph.c: network graphs, their execution plans, and the
 * reference execution on seeded data at small sizes. */
#include <math.h>

#include "kernels/template.h"
#include "tests/check.h"
#include "tuner/net/graph_ref.h"
#include "tuner/net/netprog.h"
#include "tuner/net/network.h"

static const char *const NETS[] = {"resnet-18",  "resnet-34",    "resnet-50",    "resnet-101",
                                   "resnet-152", "mobilenet",    "mobilenet-v2", "squeezenet-1.1",
                                   "vgg-16",     "inception-v3", "bert-base"};

static bool same_view(NetView a, NetView b) {
    return a.tensor == b.tensor && a.loc == b.loc && (a.loc == LOC_NCHW || a.op == b.op);
}

typedef struct Seen {
    NetView v[4096];
    int n;
} Seen;

static bool seen(const Seen *w, const NetPlan *plan, NetView v) {
    if (v.loc == LOC_NCHW && v.tensor >= 0) v.tensor = plan->alias[v.tensor]; /* flatten is a view */
    for (int i = 0; i < w->n; i++)
        if (same_view(w->v[i], v)) return true;
    return false;
}

static void mark(Seen *w, NetView v) {
    CHECK(w->n < 4096);
    if (w->n < 4096) w->v[w->n++] = v;
}

/* The plan runs every tunable op once as a kernel step, and every step reads
 * views of tensors (NCHW, a kernel's blocked buffers, a blocked buffer of the
 * tensor) that an earlier step wrote: a blocked kernel's input is in its input
 * buffer, a fused residual in its residual buffer, the output ends in NCHW. */
static void check_plan(const Graph *g, const GraphTasks *gt, const int *blocked, bool flat) {
    NetPlan plan;
    char err[TT_ERRLEN] = "";
    NetOpKernel *ok = NULL;
    if (blocked) {
        BlockedLayout *lin = calloc((size_t)gt->n_tasks + 1, sizeof *lin),
                      *lout = calloc((size_t)gt->n_tasks + 1, sizeof *lout);
        for (int t = 0; t < gt->n_tasks; t++)
            lin[t].cb = 8, lout[t].cb = 16, lin[t].repeat = lout[t].repeat = 1;
        ok = calloc((size_t)g->n_ops + 1, sizeof *ok);
        NetPlan_taskKernels(g, gt, blocked, lin, lout, ok);
        free(lin);
        free(lout);
    }
    CHECK(NetPlan_make(g, gt, ok, flat, &plan, err) == TT_OK);
    free(ok);
    int kernels = 0, tunable = 0;
    for (int i = 0; i < g->n_ops; i++)
        tunable += GraphOp_isTunable(g->ops[i].kind);
    Seen *w = calloc(1, sizeof *w);
    for (int i = 0; i < g->n_inputs; i++)
        mark(w, (NetView){g->inputs[i], LOC_NCHW, -1});
    for (int s = 0; s < plan.n_steps; s++) {
        const NetStep *st = &plan.steps[s];
        const GraphOp *op = st->op >= 0 ? &g->ops[st->op] : NULL;
        bool ok_step = true;
        if (st->kind == NSTEP_KERNEL) {
            kernels++;
            int mask = plan.ok ? plan.ok[st->op].mask : 0;
            bool res = plan.ok ? plan.ok[st->op].residual : gt->tasks[gt->task[st->op]].wl.residual;
            ok_step &= seen(w, &plan, (NetView){op->in[0], (mask & BLOCKED_INPUT) ? LOC_IN : LOC_NCHW, st->op});
            if (op->kind == GOP_BATCH_MATMUL) ok_step &= seen(w, &plan, (NetView){op->in[1], LOC_NCHW, -1});
            if (res) {
                int r = g->ops[gt->epi_add[st->op]].in[1];
                ok_step &= seen(w, &plan, (NetView){r, (mask & BLOCKED_OUTPUT) ? LOC_RES : LOC_NCHW, st->op});
            }
            NetView out = {st->out, (mask & BLOCKED_OUTPUT) ? LOC_OUT : LOC_NCHW, st->op};
            if (flat && !(mask & BLOCKED_OUTPUT)) CHECK(st->out_t >= 0 || st->out < 0);
            mark(w, out);
            if (st->out_t >= 0)
                mark(w, (NetView){st->out_t, LOC_NCHW, -1}); /* partial: its epilogue follows in place */
        } else if (st->move) {
            ok_step &=
                st->src.tensor < 0 ? seen(w, &plan, (NetView){-1, LOC_OUT, st->src.op}) : seen(w, &plan, st->src);
            if (st->res.tensor >= 0) ok_step &= seen(w, &plan, st->res);
            if (flat) CHECK(st->dst.loc != LOC_BUF && (st->src.loc == LOC_NCHW || st->dst.loc == LOC_NCHW));
            mark(w, st->dst);
        } else if (op->kind == GOP_MAX_POOL) {
            ok_step &= seen(w, &plan, st->src);
            mark(w, st->dst);
        } else {
            for (int j = 0; j < op->n_in; j++)
                ok_step &= seen(w, &plan, (NetView){op->in[j], LOC_NCHW, -1});
            mark(w, (NetView){st->out, LOC_NCHW, -1});
        }
        if (!ok_step) fprintf(stderr, "%s step %d (%s) reads a view before it is written\n", g->name, s, st->label);
        CHECK(ok_step);
    }
    CHECK_EQ_INT(kernels, tunable);
    CHECK(seen(w, &plan, (NetView){g->output, LOC_NCHW, -1}));
    free(w);
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
        check_plan(&g, &gt, NULL, false);
        /* every convolution kernel blocked in and out: tensors between kernels stay blocked where they can */
        int *blocked = calloc((size_t)gt.n_tasks, sizeof(int));
        for (int t = 0; t < gt.n_tasks; t++)
            blocked[t] = gt.tasks[t].wl.op == OP_CONV2D || gt.tasks[t].wl.op == OP_DEPTHWISE_CONV2D
                             ? BLOCKED_INPUT | BLOCKED_OUTPUT
                             : 0;
        check_plan(&g, &gt, blocked, false);
        check_plan(&g, &gt, blocked, true);
        free(blocked);
        /* the reference on three cheap ones (test_run_networks runs every network against it; BERT's 85 M
         * parameters and double loops took most of this test's time in the sanitizer pass) */
        if (!(strcmp(NETS[k], "resnet-18") == 0 || strcmp(NETS[k], "mobilenet-v2") == 0 ||
              strcmp(NETS[k], "squeezenet-1.1") == 0)) {
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
