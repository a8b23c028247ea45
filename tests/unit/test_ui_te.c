/* tests/unit/test_ui_te.c: the UI shows a tensor expression's candidates with
 * their steps: `b` opens the selected task's best candidate (config, steps,
 * the loop nest the steps replay to, the generated source); the error
 * inspector's candidate page shows a failure's steps; in a log view, where
 * the expression is not loaded, the steps are still shown and the page says
 * why there is no loop nest. */
#include <unistd.h>

#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_task.h"
#include "tests/check.h"
#include "tuner/task.h"
#include "ui/keys.h"
#include "ui/widgets.h"

static char *screen(UiState *st, int w, int h) {
    CellBuf *cb = CellBuf_new(w, h);
    Screen_render(cb, st);
    char *d = CellBuf_dump(cb);
    CellBuf_delete(cb);
    if (getenv("TT_UI_SHOW")) fprintf(stderr, "---- %dx%d ----\n%s", w, h, d);
    return d;
}

static void add(UiState *st, const Task *task, uint64_t sample, int err, double gflops) {
    Record r;
    Record_init(&r);
    snprintf(r.task_key, sizeof r.task_key, "%s", st->model.tasks[0].key);
    snprintf(r.template_name, sizeof r.template_name, "te.cpu");
    snprintf(r.config, sizeof r.config, "sample %llu", (unsigned long long)sample);
    r.index = sample;
    Steps s;
    TeTask_sample(task->wl.expr, sample, &s);
    StrBuf text;
    StrBuf_init(&text);
    Steps_encode(&s, &text);
    r.steps = StrBuf_take(&text);
    StrBuf_done(&text);
    if (err)
        Record_setError(&r, err, "out[3] (element 3 of the output of softmax): got 1, want 0.5");
    else {
        r.n_costs = 1;
        r.costs[0] = task->flops / gflops / 1e9;
    }
    UiModel_addRecord(&st->model, 0, &r, 0, gflops);
    Record_done(&r);
}

static void setup(UiState *st, const Task *task, bool loaded) {
    UiState_init(st);
    snprintf(st->model.target, sizeof st->model.target, "cpu");
    st->model.live = loaded;
    /* a log view labels a task it cannot rebuild with its key */
    UiModel_addTask(&st->model, 0, task->key, loaded ? task->label : task->key, task->flops, 1, loaded ? task : NULL);
    add(st, task, 7, ERR_WRONG_ANSWER, 0);
    add(st, task, 11, 0, 0.5);
    add(st, task, 12, 0, 0.25);
    st->utf8 = true;
    st->dialect = DIALECT_C;
    st->have_dev = true;
    st->selected = 0;
    UiState_sort(st);
}

TEST(best_page_shows_steps_loop_nest_and_source) {
    const char *data = getenv("TT_TEST_DATA");
    char path[512], err[TT_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/../../examples/te/softmax.te", data ? data : "tests/data");
    TeSet sets[] = {{"M", 4}, {"N", 8}};
    TeTask *te = NULL;
    Workload wl;
    CHECK(TeTask_load(path, sets, 2, &te, &wl, err) == TT_OK);
    if (!te) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    DeviceInfo dev = {0};
    Task task;
    CHECK(Task_initWith(&task, 0, &wl, 1, &tmpl_te_cpu, &dev, err) == TT_OK); /* the sampler's numbers */
    CHECK_STR(task.tmpl->name, "te.cpu");
    CHECK_STR(task.label, "expr softmax");

    /* the steps and loop nest of sample 11, the best */
    Steps s;
    TeTask_sample(te, 11, &s);
    StrBuf text, nest;
    StrBuf_init(&text);
    StrBuf_init(&nest);
    Steps_encode(&s, &text);
    LoopNest ln;
    CHECK(LoopNest_lower(&ln, &te->dag, &s, err) == TT_OK);
    LoopNest_print(&ln, &nest);
    LoopNest_done(&ln);
    char first_step[64];
    snprintf(first_step, sizeof first_step, "%.*s", (int)strcspn(text.data, ";"), text.data);
    char first_loop[128];
    snprintf(first_loop, sizeof first_loop, "%.*s", (int)strcspn(nest.data, "\n"), nest.data);

    UiState st;
    setup(&st, &task, true);
    CHECK(UiKeys_handle(&st, 'b') & REACT_RELAYOUT);
    CHECK(st.insp.best);
    char *d = screen(&st, 140, 60);
    CHECK_CONTAINS(d, "Best candidate of task 0 expr softmax");
    CHECK_CONTAINS(d, "Config #11: sample 11");
    CHECK_CONTAINS(d, "Steps: ");
    CHECK_CONTAINS(d, first_step);
    CHECK_CONTAINS(d, "--- loop nest (the steps replayed) ---");
    CHECK_CONTAINS(d, first_loop);
    free(d);
    /* the page holds the whole nest and the source of the steps */
    bool nest_line = false, src_line = false;
    for (int i = 0; i < st.insp.n_lines; i++) {
        if (strcmp(st.insp.lines[i], first_loop) == 0) nest_line = true;
        if (strstr(st.insp.lines[i], "tt_te_kernel(((TtState *)state)->t);")) src_line = true;
    }
    CHECK(nest_line);
    CHECK(src_line);
    UiKeys_handle(&st, 'b'); /* closes */
    CHECK(!st.insp.best);
    CHECK_EQ_INT(st.view.overlay, OVERLAY_NONE);

    /* a failure's page shows its steps */
    UiKeys_handle(&st, 'e');
    UiKeys_handle(&st, UI_KEY_ENTER);
    UiKeys_handle(&st, UI_KEY_ENTER);
    CHECK_EQ_INT(st.insp.level, INSP_DETAIL);
    d = screen(&st, 140, 60);
    CHECK_CONTAINS(d, "Config #7: sample 7");
    CHECK_CONTAINS(d, "Steps: ");
    CHECK_CONTAINS(d, "Error: WRONG_ANSWER (5)");
    free(d);
    UiState_done(&st);

    /* a log view: no program, the steps still shown */
    setup(&st, &task, false);
    CHECK(UiKeys_handle(&st, 'b') & REACT_RELAYOUT);
    d = screen(&st, 140, 60);
    CHECK_CONTAINS(d, "Best candidate of task 0 expr softmax (b or Esc: close)");
    CHECK_CONTAINS(d, first_step);
    CHECK_CONTAINS(d, "the expression is not loaded here");
    free(d);
    UiKeys_handle(&st, UI_KEY_ESC);
    CHECK_EQ_INT(st.view.overlay, OVERLAY_NONE);
    UiState_done(&st);

    StrBuf_done(&text);
    StrBuf_done(&nest);
    Task_done(&task);
    TeTask_delete(te);
}

/* On a GPU target (te.gpu) the best page's source is the OpenCL kernel the
 * steps replay to, not the cpu-ABI C. */
TEST(best_page_of_a_gpu_schedule_shows_its_kernel) {
    const char *data = getenv("TT_TEST_DATA");
    char path[512], err[TT_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/../../examples/te/dense.te", data ? data : "tests/data");
    TeSet sets[] = {{"M", 2}, {"N", 12}, {"K", 9}};
    TeTask *te = NULL;
    Workload wl;
    CHECK(TeTask_load(path, sets, 3, &te, &wl, err) == TT_OK);
    if (!te) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    DeviceInfo dev = {0};
    Task task;
    CHECK(Task_init(&task, 0, &wl, 1, FAMILY_GPU, &dev, err) == TT_OK);
    CHECK_STR(task.tmpl->name, "te.gpu");
    UiState st;
    UiState_init(&st);
    snprintf(st.model.target, sizeof st.model.target, "opencl");
    st.model.live = true;
    UiModel_addTask(&st.model, 0, task.key, task.label, task.flops, 1, &task);
    int32_t choice[16];
    Space_decode(&task.space, 5, choice);
    KernelSource ks;
    KernelSource_init(&ks);
    CHECK(task.tmpl->generate(&task.wl, &task.space, choice, &dev, DIALECT_OPENCL, &ks, err) == TT_OK);
    Record r;
    Record_init(&r);
    snprintf(r.task_key, sizeof r.task_key, "%s", task.key);
    snprintf(r.template_name, sizeof r.template_name, "te.gpu");
    snprintf(r.config, sizeof r.config, "sample 5");
    r.index = 5;
    r.steps = ks.steps ? strdup(ks.steps) : NULL;
    r.n_costs = 1;
    r.costs[0] = 1e-5;
    UiModel_addRecord(&st.model, 0, &r, 0, task.flops / 1e-5 / 1e9);
    Record_done(&r);
    st.dialect = DIALECT_OPENCL;
    st.have_dev = true;
    st.selected = 0;
    UiState_sort(&st);
    CHECK(UiKeys_handle(&st, 'b') & REACT_RELAYOUT);
    bool kernel = false, cpu_abi = false;
    for (int i = 0; i < st.insp.n_lines; i++) {
        if (strstr(st.insp.lines[i], "__kernel") && strstr(st.insp.lines[i], "tt_te_k0")) kernel = true;
        if (strstr(st.insp.lines[i], "tt_setup")) cpu_abi = true;
    }
    CHECK(kernel);
    CHECK(!cpu_abi);
    UiState_done(&st);
    KernelSource_done(&ks);
    Task_done(&task);
    TeTask_delete(te);
}

/* A sketch-searched task (te.sketch): the header shows what evolution says
 * (sketches, generation), and the best page the candidate's sketch, its
 * schedule and its steps. */
TEST(a_sketch_candidate_shows_its_sketch_and_steps) {
    const char *data = getenv("TT_TEST_DATA");
    char path[512], err[TT_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/../../examples/te/dense_bias_gelu.te", data ? data : "tests/data");
    TeSet sets[] = {{"M", 4}, {"N", 16}, {"K", 8}};
    TeTask *te = NULL;
    Workload wl;
    CHECK(TeTask_load(path, sets, 3, &te, &wl, err) == TT_OK);
    if (!te) return;
    DeviceInfo dev = {0};
    Task task;
    CHECK(Task_init(&task, 0, &wl, 1, FAMILY_CPU, &dev, err) == TT_OK);
    CHECK_STR(task.tmpl->name, "te.sketch");
    Steps s;
    CHECK(Steps_decode("split 1 1 4; compute_at 0 1 1", &s, err) == TT_OK);
    uint64_t index;
    CHECK(TeTask_addSchedule(te, &s, 1, &index, err) == TT_OK);
    UiState st;
    UiState_init(&st);
    snprintf(st.model.target, sizeof st.model.target, "cpu");
    st.model.live = true;
    UiModel_addTask(&st.model, 0, task.key, task.label, task.flops, 1, &task);
    snprintf(st.model.tasks[0].strategy, sizeof st.model.tasks[0].strategy,
             "evolution: sketches 2, generation 3, 150 schedules measured; cost model on 140 schedules (fit 0.04 s, "
             "10240 scored in 0.70 s); best 55.2 GFLOPS, predicted 50.2; last round rank correlation 0.31 over 64");
    Record r;
    Record_init(&r);
    snprintf(r.task_key, sizeof r.task_key, "%s", task.key);
    snprintf(r.template_name, sizeof r.template_name, "te.sketch");
    task.tmpl->label(&task.wl, index, r.config, sizeof r.config);
    r.index = index;
    r.steps = strdup("split 1 1 4; compute_at 0 1 1");
    r.n_costs = 1;
    r.costs[0] = 1e-5;
    UiModel_addRecord(&st.model, 0, &r, 0, task.flops / 1e-5 / 1e9);
    Record_done(&r);
    st.utf8 = true;
    st.dialect = DIALECT_C;
    st.have_dev = true;
    st.selected = 0;
    UiState_sort(&st);
    /* the search's status under the header, its parts wrapped whole over the lines the width needs */
    char *d = screen(&st, 220, 40);
    CHECK_CONTAINS(d, "task 0 search evolution: sketches 2, generation 3, 150 schedules measured; cost model on");
    CHECK_CONTAINS(d, "best 55.2 GFLOPS, predicted 50.2; last round rank correlation 0.31 over 64");
    CHECK_EQ_INT(st.view.header_extra, 1);
    free(d);
    d = screen(&st, 80, 24);
    CHECK_EQ_INT(st.view.header_extra, 3);
    const char *want_lines[] = {"task 0 search evolution: sketches 2, generation 3, 150 schedules measured;",
                                "              cost model on 140 schedules (fit 0.04 s, 10240 scored in 0.70 s);",
                                "              best 55.2 GFLOPS, predicted 50.2; last round rank correlation 0.31"};
    for (int i = 0; i < 3; i++) {
        const char *line = d;
        for (int k = 0; k < 3 + i; k++)
            line = strchr(line, '\n') + 1;
        CHECK(strncmp(line, want_lines[i], strlen(want_lines[i])) == 0);
    }
    CHECK_CONTAINS(d, "expr dense_bias_gelu"); /* the table still has its row */
    free(d);
    CHECK(UiKeys_handle(&st, 'b') & REACT_RELAYOUT);
    d = screen(&st, 140, 60);
    char want[64];
    snprintf(want, sizeof want, "sketch 1, schedule %010llx", (unsigned long long)index);
    CHECK_CONTAINS(d, want);
    CHECK_CONTAINS(d, "Steps: split 1 1 4; compute_at 0 1 1");
    CHECK_CONTAINS(d, "--- loop nest (the steps replayed) ---");
    free(d);
    UiState_done(&st);
    Task_done(&task);
    TeTask_delete(te);
}

int main(void) {
    RUN(a_sketch_candidate_shows_its_sketch_and_steps);
    RUN(best_page_of_a_gpu_schedule_shows_its_kernel);
    RUN(best_page_shows_steps_loop_nest_and_source);
    return check_summary();
}
