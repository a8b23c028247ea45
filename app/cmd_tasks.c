/* app/cmd_tasks.c: `tunetop tasks`: the tuning tasks of a built-in network,
 * with the template and space size each gets on a target, then the untuned
 * (memory-bound) ops and a total. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/device.h"
#include "app/expr.h"
#include "app/opts.h"
#include "tuner/net/model_load.h"
#include "tuner/net/network.h"
#include "tuner/net/subgraph.h"
#include "tuner/task.h"

static void usage(FILE *out) {
    NetworkOptions d;
    NetworkOptions_defaults(&d);
    app_help(out,
             "usage: tunetop tasks --network NAME [--target T] [--batch-size B] [--layout NCHW|NHWC]\n"
             "                     [--image-size S] [--seq-len L] [--ops OP,...] [--arch ARCH]\n"
             "       tunetop tasks --network NAME --subgraphs [--batch-size B] [--image-size S] [--seq-len L]\n"
             "                     [--show ID]\n"
             "       tunetop tasks --expr FILE.te [--set NAME=VALUE ...]\n"
             "\n"
             "Lists the tuning tasks of a built-in network: identical operator workloads (same operator and\n"
             "shape) are one task whose weight is the number of times it occurs. For each task: its ID, weight,\n"
             "GFLOP of one occurrence, the template chosen on the target and the size of its configuration\n"
             "space, and the workload key (what `tune --task` and the logs use). A task fuses an epilogue part\n"
             "(bias, residual add) only when every occurrence has it, and relu only when all occurrences have\n"
             "the same epilogue; what is not fused is listed with the untuned ops, the memory-bound ops that\n"
             "have no template (pooling, softmax, batch-norm, elementwise). Without a device, a target with\n"
             "offline limits uses those of --arch (default %s); a target that is not available prints '-'\n"
             "for template and space.\n"
             "\n"
             "  --network NAME   %s\n"
             "  --target T       %s (default %s)\n"
             "  --batch-size B   the network's batch size (default %d)\n"
             "  --layout L       NCHW or NHWC, for the convolutions (default %s)\n"
             "  --image-size S   input image side (default %s)\n"
             "  --seq-len L      sequence length for bert-base (default %d)\n"
             "  --ops LIST       keep only these ops: conv2d, depthwise_conv2d, dense, batch_matmul\n"
             "  --expr FILE.te   print the compute DAG of a tensor expression instead: stages, axes, reads,\n"
             "                   and what each analysis found (inlinable, data reuse, fusible consumer)\n"
             "  --set NAME=V     override `let NAME` of the expression (repeatable)\n"
             "  --subgraphs      list the network as subgraphs instead: each anchor op (conv2d, dense, ...) or\n"
             "                   other non-elementwise op with the elementwise ops after it, as a tensor\n"
             "                   expression (what `tune --network NAME --subgraphs` tunes without templates);\n"
             "                   identical ones are one task whose weight counts them\n"
             "  --show ID        with --subgraphs: print task ID's tensor expression (a .te file)\n"
             "example: tunetop tasks --network resnet-18 --target cpu --ops conv2d\n",
             app_arch_defaults(), Network_names(), Target_names(), Target_default()->name, d.batch,
             Layout_name(d.layout), Network_imageSizes(), d.seq_len);
}

static int list_subgraphs(const char *network, const NetworkOptions *nopt, int show);
static int list_tasks(const TaskSelect *sel, const char *target_name, const char *arch);

static int usage_error(const char *msg) {
    fprintf(stderr, "tunetop tasks: %s\n", msg);
    return 2;
}

static const struct option OWN[] = {{"target", required_argument, 0, 'T'},
                                    {"arch", required_argument, 0, 'a'},
                                    {"show", required_argument, 0, 'W'},
                                    {"help", no_argument, 0, 'h'},
                                    {0, 0, 0, 0}};
const CmdOptions TASKS_OPTIONS = {"tasks", OWN,
                                  SEL_NETWORK | SEL_SHAPE | SEL_EXPR | SEL_SET | SEL_SUBGRAPHS | SEL_BATCH_ALIAS |
                                      SEL_MODEL | SEL_INPUT_SHAPE};

/* The selection's checks; -1 when the network's tasks are to be listed, else the exit code. */
static int tasks_other(TaskSelect *sel, int show) {
    if (show >= 0 && !sel->subgraphs) return usage_error("--show ID needs --subgraphs");
    if (sel->subgraphs && (sel->n_exprs || sel->n_sets || sel->ops || sel->nopt.layout != LAYOUT_NCHW))
        return usage_error("--subgraphs lists a --network's subgraphs (NCHW, every op); --expr, --set, --ops and "
                           "--layout do not apply");
    if (sel->subgraphs && !sel->network) return usage_error("--subgraphs needs --network NAME");
    if (sel->subgraphs) return list_subgraphs(sel->network, &sel->nopt, show);
    if (sel->n_exprs > 1) return usage_error("one --expr FILE.te at a time");
    if (sel->n_exprs || sel->n_sets) {
        if (!sel->n_exprs) return usage_error("--set needs --expr FILE.te");
        if (sel->network) return usage_error("give --network or --expr, not both");
        return app_tasks_expr(sel->exprs[0], sel->sets, sel->n_sets);
    }
    return -1;
}

int cmd_tasks(int argc, char **argv) {
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&TASKS_OPTIONS, longopts, CLI_MAX_OPTS);
    const char *target_name = Target_default()->name, *arch = NULL;
    int show = -1;
    TaskSelect sel;
    TaskSelect_init(&sel);
    char err[TT_ERRLEN] = "";
    optind = 1;
    opterr = 0;
    int c, rc = -1;
    while (rc < 0 && (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) { /* ':': a missing value */
        Status st = TT_OK;
        if (TaskSelect_parse(&sel, OPT_VAL(c), optarg, &st, err)) {
        } else if (c == 'T') {
            target_name = optarg;
        } else if (c == 'a') {
            arch = optarg;
        } else if (c == 'W') {
            st = opt_int(optarg, "--show", 0, 1 << 20, &show, err);
        } else if (c == 'h') {
            usage(stdout);
            rc = 0;
        } else {
            Cli_badOption("tasks", c, argv, err);
            st = TT_ERR;
        }
        if (st != TT_OK) rc = usage_error(err);
    }
    if (rc < 0 && optind < argc) {
        snprintf(err, sizeof err, "unexpected argument '%s' (see tunetop tasks --help)", argv[optind]);
        rc = usage_error(err);
    }
    if (rc < 0 && !Target_find(target_name)) {
        snprintf(err, sizeof err, "unknown target '%s' (choose from: %s)", target_name, Target_names());
        rc = usage_error(err);
    }
    if (rc < 0) rc = tasks_other(&sel, show);
    if (rc < 0 && sel.model && (sel.network || (sel.given & (SEL_SHAPE & ~SEL_OPS))))
        rc = usage_error("--model takes --input-shape and --ops; --network and its shape options do not apply");
    if (rc < 0 && !sel.network && !sel.model) {
        snprintf(err, sizeof err, "give --network NAME (one of: %s) or --model FILE.onnx", Network_names());
        rc = usage_error(err);
    }
    if (rc < 0) rc = list_tasks(&sel, target_name, arch);
    TaskSelect_done(&sel);
    return rc;
}

/* The untuned ops and their count; left_out gets the layers of tunable ops --ops left out, so the total
 * does not hide them. */
static int print_untuned(const char *network, const NetworkOptions *nopt, const NetworkUntuned *untuned, int n_untuned,
                         char *left_out, size_t n_left_out) {
    int untuned_ops = 0;
    if (n_untuned) {
        printf("\nUntuned ops (memory-bound, no template):\n%6s  %s\n", "Count", "Op");
        for (int i = 0; i < n_untuned; i++) {
            printf("%6d  %s\n", untuned[i].count, untuned[i].name);
            untuned_ops += untuned[i].count;
        }
    }
    for (int op = 0; network && nopt->op_mask && op < OP_COUNT; op++) {
        if (nopt->op_mask & (1u << op)) continue;
        int n = Network_layerCount(network, nopt, (OpKind)op);
        if (n > 0) {
            size_t used = strlen(left_out);
            snprintf(left_out + used, n_left_out - used, "%s%d %s", used ? ", " : "", n, Op_name((OpKind)op));
        }
    }
    return untuned_ops;
}

/* The tasks of --network or --model, and the line that says what was read; 0, or the exit code. */
static int extract(const TaskSelect *sel, NetworkTask **tasks, int *n_tasks, NetworkUntuned **untuned, int *n_untuned,
                   char *what, size_t n_what) {
    char err[TT_ERRLEN] = "";
    if (sel->model) {
        if (Model_extract(sel->model, sel->input_shapes, sel->n_input_shapes, sel->nopt.op_mask, tasks, n_tasks,
                          untuned, n_untuned, err) != TT_OK) {
            fprintf(stderr, "tunetop tasks: %s\n", err);
            return 1;
        }
        snprintf(what, n_what, "Model %s (ONNX): every Conv, Gemm and MatMul a template fits is a task", sel->model);
        return 0;
    }
    const NetworkOptions *nopt = &sel->nopt;
    if (Network_extract(sel->network, nopt, tasks, n_tasks, untuned, n_untuned, err) != TT_OK) return usage_error(err);
    char image[48] = "";
    int default_image = Network_defaultImage(sel->network);
    if (!default_image)
        snprintf(image, sizeof image, "sequence %d", nopt->seq_len);
    else
        snprintf(image, sizeof image, "image %d", nopt->image_size ? nopt->image_size : default_image);
    snprintf(what, n_what, "Network %s: batch %d, layout %s, %s", sel->network, nopt->batch, Layout_name(nopt->layout),
             image);
    return 0;
}

/* The rows of a workload as `tune` numbers its tasks from *id: a workload several templates handle
 * is a group of alternatives (conv2d 3x3 stride 1 on the cpu: direct and Winograd), one task each.
 * target NULL: no device, '-' columns. *failed counts the workloads without a template here,
 * first_fail (TT_ERRLEN) says the first. */
static void print_task_rows(const NetworkTask *task, const Target *target, const DeviceInfo *dev, int *id, int *failed,
                            char *first_fail) {
    char key[WORKLOAD_KEY_LEN];
    Workload_key(&task->wl, key, sizeof key);
    double flops = Workload_flops(&task->wl);
    const Template *alts[8] = {0};
    int n_alt = target ? Template_alternatives(&task->wl, target->family, alts, 8) : 0;
    if (n_alt > 8) n_alt = 8;
    int first = *id;
    for (int a = 0; a < (n_alt > 1 ? n_alt : 1); a++) {
        char tmpl[64] = "-", space[32] = "-";
        bool ok = true;
        if (target) {
            Task t;
            char why[TT_ERRLEN] = "";
            Status st = n_alt > 1 ? Task_initWith(&t, *id, &task->wl, task->weight, alts[a], dev, why)
                                  : Task_init(&t, *id, &task->wl, task->weight, target->family, dev, why);
            if (st == TT_OK) {
                snprintf(tmpl, sizeof tmpl, "%s", t.tmpl->name);
                snprintf(space, sizeof space, "%llu", (unsigned long long)t.space.total);
            } else if (a == 0) {
                if (!*failed) snprintf(first_fail, TT_ERRLEN, "task %d: %s", *id, why);
                (*failed)++;
            } else {
                ok = false; /* an alternative with no space here is not a task of `tune` */
            }
            Task_done(&t);
        }
        if (!ok) continue;
        char alt[48] = "";
        if (a > 0) snprintf(alt, sizeof alt, "  (alternative of ID %d)", first);
        printf("%4d %6d %9.4f  %-26s %20s  %s%s\n", (*id)++, task->weight, flops / 1e9, tmpl, space, key, alt);
    }
}

/* `tasks --network NAME` or `--model FILE`: the tasks on the target, the untuned ops, the total. */
static int list_tasks(const TaskSelect *sel, const char *target_name, const char *arch) {
    const char *network = sel->network;
    NetworkOptions nopt = sel->nopt;
    NetworkTask *tasks = NULL;
    NetworkUntuned *untuned = NULL;
    int n_tasks = 0, n_untuned = 0;
    char what[512];
    int rc = extract(sel, &tasks, &n_tasks, &untuned, &n_untuned, what, sizeof what);
    if (rc) return rc;

    /* The device whose limits shape the spaces; without one, '-' columns. */
    const Target *target = NULL;
    DeviceInfo dev;
    char dev_err[TT_ERRLEN] = "";
    bool have_dev = false;
    if (app_resolve_device(target_name, arch, true, &target, &dev, dev_err) == TT_OK) have_dev = true;

    char left_out[256] = "";
    printf("%s\n", what);
    if (have_dev)
        printf("Target %s: %s%s\n", target->name, dev.name[0] ? dev.name : dev.arch,
               dev.present || strstr(dev.name, "no device") ? "" : " (limits only, no device)");
    else
        printf("Target %s: not available (%s); template and space shown as '-'\n", target_name, dev_err);

    printf("\n%4s %6s %9s  %-26s %20s  %s\n", "ID", "Weight", "GFLOP", "Template", "Space", "Workload");
    int layers = 0, failed = 0, id = 0;
    double total_flops = 0;
    char first_fail[TT_ERRLEN] = "";
    for (int i = 0; i < n_tasks; i++) {
        print_task_rows(&tasks[i], have_dev ? target : NULL, &dev, &id, &failed, first_fail);
        layers += tasks[i].weight;
        total_flops += Workload_flops(&tasks[i].wl) * tasks[i].weight;
    }
    if (failed) printf("(%d task(s) without a template on %s; first: %s)\n", failed, target_name, first_fail);

    int untuned_ops = print_untuned(network, &nopt, untuned, n_untuned, left_out, sizeof left_out);
    if (sel->model && n_untuned)
        printf("(the untuned ops run in tunetop's op library: `run --model` builds them into the program)\n");
    printf("\nTotal: %d tasks for %d layers, %.3f GFLOP per inference in tuned layers; %d untuned ops in %d kinds\n",
           id, layers, total_flops / 1e9, untuned_ops, n_untuned);
    if (id > n_tasks)
        printf("(%d workloads: %d of them are tuned under two templates, and the faster counts)\n", n_tasks,
               id - n_tasks);
    if (left_out[0]) printf("Not listed (--ops): %s\n", left_out);
    free(tasks);
    free(untuned);
    return 0;
}

/* `tasks --network NAME --subgraphs`: the subgraph tasks (tuner/net/subgraph.h). */
static int list_subgraphs(const char *network, const NetworkOptions *nopt, int show) {
    char err[TT_ERRLEN];
    Graph g;
    if (Network_graph(network, nopt, &g, err) != TT_OK) return usage_error(err);
    Subgraphs sg;
    if (Subgraphs_make(&g, &sg, err) != TT_OK) {
        fprintf(stderr, "tunetop tasks: %s\n", err);
        Graph_done(&g);
        return 1;
    }
    int rc = 0;
    if (show >= 0) {
        if (show < sg.n_tasks)
            fputs(sg.tasks[show].te, stdout);
        else
            rc = usage_error("--show: no such task ID (see tunetop tasks --network NAME --subgraphs)");
        Subgraphs_done(&sg);
        Graph_done(&g);
        return rc;
    }
    int default_image = Network_defaultImage(network);
    char image[48];
    if (!default_image)
        snprintf(image, sizeof image, "sequence %d", nopt->seq_len);
    else
        snprintf(image, sizeof image, "image %d", nopt->image_size ? nopt->image_size : default_image);
    printf("Network %s: batch %d, %s; %d ops in %d subgraphs, %d tasks (tensor expressions, template te.sketch)\n",
           network, nopt->batch, image, g.n_ops, sg.n_sg, sg.n_tasks);
    printf("\n%4s %6s %9s  %-19s  %-20s  %s\n", "ID", "Weight", "GFLOP", "Key", "Name", "Ops (the first occurrence)");
    double total = 0;
    for (int t = 0; t < sg.n_tasks; t++) {
        const SubgraphTask *k = &sg.tasks[t];
        printf("%4d %6d %9.4f  %-19s  %-20s  %s\n", t, k->weight, k->flops / 1e9, k->key, k->name, sg.sg[k->sg].label);
        total += k->flops * k->weight;
    }
    printf("\nTotal: %d tasks for %d subgraphs covering all %d ops, %.3f GFLOP per inference\n", sg.n_tasks, sg.n_sg,
           g.n_ops, total / 1e9);
    Subgraphs_done(&sg);
    Graph_done(&g);
    return rc;
}
