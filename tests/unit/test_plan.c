/* tests/unit/test_plan.c: tuner/plan.h, the request -> tasks builder that
 * numbers tasks the way every command shows them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "kernels/target.h"
#include "tuner/net/network.h"
#include "tuner/plan.h"

static DeviceInfo g_dev;

/* tiny-resnet's workloads and weights on the cpu */
static int tiny(Workload **wls, double **weights) {
    NetworkOptions o;
    NetworkOptions_defaults(&o);
    NetworkTask *nt = NULL;
    NetworkUntuned *un = NULL;
    int n = 0, n_un = 0;
    char err[TT_ERRLEN];
    CHECK(Network_extract("tiny-resnet", &o, &nt, &n, &un, &n_un, err) == TT_OK);
    *wls = calloc((size_t)n + 1, sizeof **wls);
    *weights = calloc((size_t)n + 1, sizeof **weights);
    for (int i = 0; i < n; i++)
        (*wls)[i] = nt[i].wl, (*weights)[i] = nt[i].weight;
    free(nt);
    free(un);
    return n;
}

static void done(Task *tasks, int n) {
    for (int i = 0; i < n; i++)
        Task_done(&tasks[i]);
    free(tasks);
}

/* three workloads, two of them conv2d 3x3 stride 1: five tasks, IDs in order, two groups */
TEST(groups_of_alternatives) {
    Workload *wls;
    double *w;
    int n_wl = tiny(&wls, &w);
    CHECK_EQ_INT(n_wl, 3);
    PlanRequest r = {.wls = wls, .weights = w, .n_wl = n_wl, .family = FAMILY_CPU, .dev = &g_dev};
    Task *tasks;
    int n;
    char err[TT_ERRLEN] = "";
    CHECK(Plan_tasks(&r, &tasks, &n, err) == TT_OK);
    CHECK_EQ_INT(n, 5);
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(tasks[i].id, i);
    CHECK_EQ_INT(tasks[0].group, 1);
    CHECK_EQ_INT(tasks[1].group, 1);
    CHECK_EQ_INT(tasks[2].group, 3);
    CHECK_EQ_INT(tasks[3].group, 3);
    CHECK_EQ_INT(tasks[4].group, 0);
    CHECK_STR(tasks[1].tmpl->name, "conv2d_winograd.cpu");
    CHECK(tasks[4].wl.op == OP_DENSE);
    CHECK(tasks[2].weight == w[1]);
    done(tasks, n);
    free(wls);
    free(w);
}

/* --template: the workloads it applies to use only it; the others keep their default, alone */
TEST(one_template) {
    Workload *wls;
    double *w;
    int n_wl = tiny(&wls, &w);
    const Template *direct = Template_byName("conv2d_nchwc.cpu");
    CHECK(direct != NULL);
    PlanRequest r = {.wls = wls, .weights = w, .n_wl = n_wl, .family = FAMILY_CPU, .dev = &g_dev, .only = direct};
    Task *tasks;
    int n;
    char err[TT_ERRLEN] = "";
    CHECK(Plan_tasks(&r, &tasks, &n, err) == TT_OK);
    CHECK_EQ_INT(n, 3);
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(tasks[i].group, 0);
    CHECK_STR(tasks[0].tmpl->name, "conv2d_nchwc.cpu");
    CHECK_STR(tasks[2].tmpl->name, "dense_panel.cpu");
    done(tasks, n);
    free(wls);
    free(w);
}

/* a workload no template handles is an error naming its task, and nothing is left allocated */
TEST(a_bad_workload) {
    Workload wls[2];
    char err[TT_ERRLEN] = "";
    CHECK(Workload_parse("dense:m=4,n=8,k=8", &wls[0], err) == TT_OK);
    CHECK(Workload_parse("batch_matmul:b=1,m=4,n=8,k=8", &wls[1], err) == TT_OK);
    PlanRequest r = {.wls = wls, .n_wl = 2, .family = FAMILY_GPU, .dev = &g_dev};
    Task *tasks = (Task *)&r;
    int n = -1;
    CHECK(Plan_tasks(&r, &tasks, &n, err) == TT_ERR);
    CHECK(tasks == NULL);
    CHECK_EQ_INT(n, 0);
    CHECK_CONTAINS(err, "task 1: ");
}

int main(void) {
    char err[TT_ERRLEN];
    const Target *cpu = Target_find("cpu");
    if (!cpu || cpu->probe(&g_dev, err) != TT_OK) return check_skip(err);
    RUN(groups_of_alternatives);
    RUN(one_template);
    RUN(a_bad_workload);
    return check_summary();
}
