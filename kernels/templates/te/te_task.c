/* kernels/templates/te/te_task.c: a tensor expression as a tuning task, and the "te.cpu"
 * template whose candidates are random schedules (see te_task.h). */
#include "kernels/templates/te/te_task.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/rng.h"
#include "base/strbuf.h"
#include "kernels/targets/launch_plan.h"
#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_sketch.h"

#define SAMPLE_KNOBS 5 /* 16^5 = TE_SAMPLES */

/* ---- the schedule table (te.sketch candidates) ------------------------------ */

typedef struct SchedEntry {
    uint64_t index; /* UINT64_MAX: empty slot */
    int sketch;
    char *text;
} SchedEntry;

typedef struct TeSchedTable {
    pthread_mutex_t lock;
    SchedEntry *slot;
    int cap, count;
} TeSchedTable;

static TeSchedTable *TeSchedTable_new(void) {
    TeSchedTable *t = tt_calloc(1, sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

static void TeSchedTable_delete(TeSchedTable *t) {
    if (!t) return;
    for (int i = 0; i < t->cap; i++)
        free(t->slot[i].text);
    free(t->slot);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* The slot of index (or the empty slot where it would go); the table is locked. */
static SchedEntry *table_slot(const TeSchedTable *t, uint64_t index) {
    uint64_t mask = (uint64_t)t->cap - 1;
    for (uint64_t i = (index * 0x9e3779b97f4a7c15ULL) >> 20 & mask;; i = (i + 1) & mask)
        if (t->slot[i].index == index || t->slot[i].index == UINT64_MAX) return &t->slot[i];
}

static void table_grow(TeSchedTable *t) {
    if (2 * (t->count + 1) <= t->cap) return;
    SchedEntry *old = t->slot;
    int old_cap = t->cap;
    t->cap = t->cap ? 2 * t->cap : 256;
    t->slot = tt_malloc((size_t)t->cap * sizeof *t->slot);
    for (int i = 0; i < t->cap; i++)
        t->slot[i] = (SchedEntry){.index = UINT64_MAX};
    for (int i = 0; i < old_cap; i++)
        if (old[i].index != UINT64_MAX) *table_slot(t, old[i].index) = old[i];
    free(old);
}

uint64_t TeSched_index(const char *text) {
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, folded to TE_SCHED_BITS */
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return (h ^ (h >> TE_SCHED_BITS)) & ((1ULL << TE_SCHED_BITS) - 1);
}

/* Adds text under index (TT_ERR when other text holds it). */
static Status table_add(TeSchedTable *t, uint64_t index, const char *text, int sketch, char *err) {
    pthread_mutex_lock(&t->lock);
    table_grow(t);
    SchedEntry *e = table_slot(t, index);
    Status st = TT_OK;
    if (e->index == UINT64_MAX) {
        *e = (SchedEntry){.index = index, .sketch = sketch, .text = tt_strdup(text)};
        t->count++;
    } else if (strcmp(e->text, text) != 0) {
        st = tt_fail(err, "schedule %010llx: two step lists have this hash", (unsigned long long)index);
    } else if (e->sketch < 0) {
        e->sketch = sketch;
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

Status TeTask_addSchedule(const TeTask *this, const Steps *steps, int sketch, uint64_t *index, char *err) {
    StrBuf text;
    StrBuf_init(&text);
    Steps_encode(steps, &text);
    const char *s = text.len ? text.data : "";
    *index = TeSched_index(s);
    Status st = table_add(this->table, *index, s, sketch, err);
    StrBuf_done(&text);
    return st;
}

bool TeTask_schedule(const TeTask *this, uint64_t index, Steps *out, int *sketch) {
    TeSchedTable *t = this->table;
    char *text = NULL;
    int sk = -1;
    pthread_mutex_lock(&t->lock);
    if (t->cap) {
        SchedEntry *e = table_slot(t, index);
        if (e->index == index) {
            text = tt_strdup(e->text);
            sk = e->sketch;
        }
    }
    pthread_mutex_unlock(&t->lock);
    if (!text) return false;
    char err[TT_ERRLEN];
    bool ok = Steps_decode(text, out, err) == TT_OK; /* the table holds Steps_encode's text */
    free(text);
    if (sketch) *sketch = sk;
    return ok;
}

int TeTask_scheduleCount(const TeTask *this) {
    pthread_mutex_lock(&this->table->lock);
    int n = this->table->count;
    pthread_mutex_unlock(&this->table->lock);
    return n;
}

void TeSched_label(uint64_t index, int sketch, char *buf, size_t n) {
    if (sketch >= 0)
        snprintf(buf, n, "sketch %d, schedule %010llx", sketch, (unsigned long long)index);
    else
        snprintf(buf, n, "schedule %010llx", (unsigned long long)index);
}

/* The task of a parsed program (owned by the task from here on), named by `base`. */
static Status task_of(TeProgram *prog, const char *path, const char *base, TeTask **out, Workload *wl, char *err);

Status TeTask_load(const char *path, const TeSet *sets, int n_sets, TeTask **out, Workload *wl, char *err) {
    *out = NULL;
    TeProgram *prog = TeProgram_load(path, sets, n_sets, err);
    if (!prog) return TT_ERR;
    const char *base = strrchr(path, '/');
    return task_of(prog, path, base ? base + 1 : path, out, wl, err);
}

Status TeTask_fromText(const char *text, const char *name, TeTask **out, Workload *wl, char *err) {
    *out = NULL;
    TeProgram *prog = TeProgram_parse(text, name, NULL, 0, err);
    if (!prog) return TT_ERR;
    return task_of(prog, name, name, out, wl, err);
}

static Status task_of(TeProgram *prog, const char *path, const char *base, TeTask **out, Workload *wl, char *err) {
    TeTask *t = calloc(1, sizeof *t);
    if (!t) {
        TeProgram_delete(prog);
        return tt_fail(err, "out of memory");
    }
    t->table = TeSchedTable_new();
    t->prog = prog;
    if (TeDag_build(&t->dag, t->prog, err) != TT_OK) {
        TeTask_delete(t);
        return TT_ERR;
    }
    const TeProgram *g = t->prog;
    int n_out = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        if (g->tensors[i].is_output) {
            t->out = i;
            n_out++;
        }
        if (g->tensors[i].is_input) {
            if (t->n_in == WORKLOAD_MAX_ARGS - 1) {
                TeTask_delete(t);
                return tt_fail(err, "%s: tuning takes at most %d inputs; this file has more", path,
                               WORKLOAD_MAX_ARGS - 1);
            }
            t->in[t->n_in++] = i;
        }
    }
    if (n_out != 1) {
        TeTask_delete(t);
        return tt_fail(err, "%s: tuning takes one output; this file has %d", path, n_out);
    }
    memset(wl, 0, sizeof *wl);
    wl->op = OP_EXPR;
    size_t len = strcspn(base, ".,:= ");
    if (len == 0) base = "expr", len = 4;
    if (len >= sizeof wl->expr_name) len = sizeof wl->expr_name - 1;
    memcpy(wl->expr_name, base, len);
    snprintf(wl->expr_te, sizeof wl->expr_te, "%s", t->dag.key);
    wl->expr_flops = t->dag.flops >= 1 ? t->dag.flops : 1; /* a pure copy: rank by latency all the same */
    double bytes = 4.0 * (double)TeProgram_numel(g, t->out);
    for (int i = 0; i < t->n_in; i++)
        bytes += 4.0 * (double)TeProgram_numel(g, t->in[i]);
    wl->expr_bytes = bytes;
    wl->expr_out = TeProgram_numel(g, t->out);
    wl->expr_red = 1;
    for (int s = 0; s < t->dag.n_stages; s++) {
        int64_t r = 1;
        for (int a = 0; a < t->dag.stages[s].n_reduce; a++)
            r *= g->vars[t->dag.stages[s].reduce[a]].extent;
        if (r > wl->expr_red) wl->expr_red = r;
    }
    wl->expr = t;
    *out = t;
    return TT_OK;
}

void TeTask_delete(TeTask *this) {
    if (!this) return;
    TeSchedTable_delete(this->table);
    TeProgram_delete(this->prog);
    free(this);
}

int TeTask_args(const TeTask *this, ArgInfo *args) {
    int n = 0;
    for (int i = 0; i < this->n_in; i++)
        args[n++] = (ArgInfo){this->prog->tensors[this->in[i]].name, (size_t)TeProgram_numel(this->prog, this->in[i])};
    args[n++] = (ArgInfo){this->prog->tensors[this->out].name, (size_t)TeProgram_numel(this->prog, this->out)};
    return n;
}

Status TeTask_reference(const TeTask *this, float **args, char *err) {
    const TeProgram *g = this->prog;
    double *values[TE_MAX_TENSORS] = {0};
    for (int t = 0; t < g->n_tensors; t++) {
        size_t n = (size_t)TeProgram_numel(g, t); /* at most TE_MAX_ELEMS: no overflow below */
        values[t] = malloc(n * sizeof(double));
        if (!values[t]) {
            tt_fail(err, "out of memory for the reference values of tensor '%s' (%zu elements, %.3g GB)",
                    g->tensors[t].name, n, (double)n * sizeof(double) / 1e9);
            for (int k = 0; k < t; k++)
                free(values[k]);
            return TT_ERR;
        }
    }
    for (int i = 0; i < this->n_in; i++) {
        int t = this->in[i];
        size_t n = (size_t)TeProgram_numel(g, t);
        for (size_t k = 0; k < n; k++) {
            /* an f16 input holds f16 values: the kernel reads them as floats */
            args[i][k] = (float)te_round_to(g->tensors[t].dtype, args[i][k]);
            values[t][k] = args[i][k];
        }
    }
    TeProgram_eval(g, values);
    size_t n = (size_t)TeProgram_numel(g, this->out);
    for (size_t k = 0; k < n; k++)
        args[this->n_in][k] = (float)values[this->out][k];
    for (int t = 0; t < g->n_tensors; t++)
        free(values[t]);
    return TT_OK;
}

void TeTask_sample(const TeTask *this, uint64_t sample, Steps *out) {
    Rng rng;
    Rng_seed(&rng, sample * 0x9e3779b97f4a7c15ULL + 0x7465u);
    TeSchedule_sample(&this->dag, &rng, 0, out);
}

Status TeTask_source(const TeTask *this, const Steps *steps, KernelSource *out, char *err) {
    LoopNest ln;
    if (LoopNest_lower(&ln, &this->dag, steps, err) != TT_OK) return TT_ERR;
    const TeProgram *g = this->prog;
    StrBuf s;
    StrBuf_init(&s);
    StrBuf_printf(&s, "/* %s: a schedule of a tensor expression, generated by tunetop */\n", g->file);
    LoopNest_emit_c(&ln, "tt_te_kernel", &s);
    LoopNest_done(&ln);
    /* The cpu ABI around it: t[] holds every program tensor; intermediate
     * ones are scratch of the kernel's own, aligned to a cache line as the
     * worker's inputs and output are (malloc's 16 bytes past a page boundary
     * split every other 32-byte load of a row in two: ResNet-18's Winograd
     * GEMM on an AVX2 EPYC, 0.71 ms aligned against 1.09; softmax's E,
     * 74 us against 85). The operands are read from args at each run: the
     * ABI lets the caller change them after tt_setup (an exported kernel's
     * run takes new inputs and output every call). */
    StrBuf_printf(&s, "\n#include <stdlib.h>\ntypedef struct { float *t[%d]; float **args; } TtState;\n", g->n_tensors);
    StrBuf_append(&s, "static void tt_operands(TtState *s) {\n");
    for (int i = 0; i < this->n_in; i++)
        StrBuf_printf(&s, "    s->t[%d] = s->args[%d];\n", this->in[i], i);
    StrBuf_printf(&s, "    s->t[%d] = s->args[%d];\n}\n", this->out, this->n_in);
    StrBuf_append(&s, "int tt_setup(float **args, void **state) {\n"
                      "    TtState *s = calloc(1, sizeof *s);\n"
                      "    if (!s) return 1;\n"
                      "    s->args = args;\n");
    for (int t = 0; t < g->n_tensors; t++) {
        if (!te_is_defined(&g->tensors[t]) || t == this->out) continue; /* a constant is in the code */
        /* whole cache lines: 16 floats */
        StrBuf_printf(&s, "    if (!(s->t[%d] = aligned_alloc(64, %lld * sizeof(float)))) return 1;\n", t,
                      (long long)((TeProgram_numel(g, t) + 15) / 16 * 16));
    }
    StrBuf_append(&s, "    *state = s;\n    return 0;\n}\n"
                      "void tt_pack(void *state) { (void)state; }\n"
                      "void tt_run(void *state) {\n"
                      "    tt_operands(state);\n"
                      "    tt_te_kernel(((TtState *)state)->t);\n"
                      "}\n"
                      "void tt_finish(void *state) { (void)state; }\n"
                      "void tt_teardown(void *state) {\n"
                      "    TtState *s = state;\n");
    for (int t = 0; t < g->n_tensors; t++) {
        if (!te_is_defined(&g->tensors[t]) || t == this->out) continue; /* a constant is in the code */
        StrBuf_printf(&s, "    free(s->t[%d]);\n", t);
    }
    StrBuf_append(&s, "    free(s);\n}\n");
    StrBuf text;
    StrBuf_init(&text);
    Steps_encode(steps, &text);
    free(out->source);
    free(out->steps);
    out->source = StrBuf_take(&s);
    out->steps = StrBuf_take(&text);
    StrBuf_done(&s);
    StrBuf_done(&text);
    snprintf(out->entry, sizeof out->entry, "tt_run");
    return TT_OK;
}

Status TeTask_gpu_fits(const TeTask *this, Dialect dialect, char *err) {
    const TeProgram *g = this->prog;
    if (dialect == DIALECT_OPENCL) return TT_OK; /* intermediates: scratch buffers of a launch plan */
    /* the cuda worker launches one kernel with the inputs in file order, then the output */
    bool fits = g->n_tensors == this->n_in + 1 && this->out == this->n_in;
    for (int i = 0; i < this->n_in && fits; i++)
        fits = this->in[i] == i;
    if (fits) return TT_OK;
    return tt_fail(err,
                   "%s: on the cuda target an expression is tuned when it defines one tensor, its output, after its "
                   "inputs (this one has %d tensors, %d of them inputs); tune it on the opencl or cpu target",
                   g->file, g->n_tensors, this->n_in);
}

/* The launch plan of an OpenCL program: every program tensor is a parameter
 * (an input or the output is the task's argument, an intermediate scratch). */
static void plan_of(const TeTask *this, const TeLaunch *launches, int n, LaunchPlan *plan) {
    memset(plan, 0, sizeof *plan);
    const TeProgram *g = this->prog;
    for (int t = 0; t < g->n_tensors; t++) {
        int arg = t == this->out ? this->n_in : -1;
        for (int i = 0; i < this->n_in; i++)
            if (this->in[i] == t) arg = i;
        plan->param[plan->n_params] = arg;
        /* a constant's parameter is unused (its values are in the code): one float */
        plan->scratch[plan->n_params++] = arg < 0 ? (g->tensors[t].is_const ? 1 : TeProgram_numel(g, t)) : 0;
    }
    for (int k = 0; k < n; k++) {
        PlanLaunch *l = &plan->launch[plan->n_launches++];
        memcpy(l->entry, launches[k].name, sizeof launches[k].name); /* 32 of its 64 */
        memcpy(l->grid, launches[k].grid, sizeof l->grid);
        memcpy(l->block, launches[k].block, sizeof l->block);
    }
}

static Status source_gpu(const TeTask *this, const Steps *steps, Dialect dialect, KernelSource *out, int *n_launches,
                         char *err) {
    *n_launches = 0;
    if (TeTask_gpu_fits(this, dialect, err) != TT_OK) return TT_ERR;
    LoopNest ln;
    if (LoopNest_lower(&ln, &this->dag, steps, err) != TT_OK) return TT_ERR;
    StrBuf body;
    StrBuf_init(&body);
    StrBuf_printf(&body, "/* %s: a schedule of a tensor expression, generated by tunetop */\n", this->prog->file);
    TeLaunch launches[TE_MAX_LAUNCHES];
    int n = 0;
    Status st = LoopNest_emit_gpu(&ln, dialect == DIALECT_CUDA, "tt_te_k", &body, launches, &n, err);
    LoopNest_done(&ln);
    if (st == TT_OK) *n_launches = n;
    if (st == TT_OK && n > PLAN_MAX_LAUNCHES) st = tt_fail(err, "the schedule needs %d kernel launches", n);
    if (st == TT_OK && n != 1 && dialect == DIALECT_CUDA)
        st = tt_fail(err, "the schedule needs %d kernel launches; a cuda candidate is one", n);
    if (st != TT_OK) {
        StrBuf_done(&body);
        return TT_ERR;
    }
    StrBuf s;
    StrBuf_init(&s);
    if (n > 1 || this->prog->n_tensors > this->n_in + 1) { /* the worker runs the plan */
        LaunchPlan plan;
        plan_of(this, launches, n, &plan);
        LaunchPlan_format(&plan, &s);
    }
    StrBuf_append(&s, body.data);
    StrBuf_done(&body);
    StrBuf text;
    StrBuf_init(&text);
    Steps_encode(steps, &text);
    free(out->source);
    free(out->steps);
    out->source = StrBuf_take(&s);
    out->steps = StrBuf_take(&text);
    StrBuf_done(&s);
    StrBuf_done(&text);
    snprintf(out->entry, sizeof out->entry, "%s", launches[0].name);
    for (int a = 0; a < 3; a++)
        out->grid[a] = launches[0].grid[a], out->block[a] = launches[0].block[a];
    out->shared_bytes = 4 * launches[0].shared_floats;
    return TT_OK;
}

Status TeTask_source_gpu(const TeTask *this, const Steps *steps, Dialect dialect, KernelSource *out, char *err) {
    int n;
    return source_gpu(this, steps, dialect, out, &n, err);
}

void TeTask_defaultSteps(const TeTask *this, const DeviceInfo *dev, Steps *out) {
    Sketch sk[SKETCH_MAX];
    SketchAnn ann[TE_MAX_TENSORS];
    Sketch_generate(&this->dag, 0, dev->cores, sk);
    Sketch_heuristic(&sk[0], &this->dag, dev->vector_floats, ann);
    Sketch_steps(&sk[0], &this->dag, ann, out);
}

/* ---- the templates --------------------------------------------------------- */

/* The dialect a GPU device's candidates are built in (offline cuda arches are "sm_XY"). */
static Dialect gpu_dialect(const DeviceInfo *dev) {
    return dev && !strncmp(dev->arch, "sm_", 3) ? DIALECT_CUDA : DIALECT_OPENCL;
}

/* A space of 16^n numbers as n knobs of one hexadecimal digit each, named
 * PREFIX0.. (an option knob holds at most 16 values). */
static Status hex_digit_knobs(Space *space, const char *prefix, int n, char *err) {
    int64_t digits[16];
    for (int i = 0; i < 16; i++)
        digits[i] = i;
    for (int k = 0; k < n; k++) {
        char name[16];
        snprintf(name, sizeof name, "%s%d", prefix, k);
        if (Space_addOption(space, name, digits, 16, err) != TT_OK) return TT_ERR;
    }
    return TT_OK;
}

static Status define_space(const Workload *wl, const DeviceInfo *dev, bool gpu, Space *space, char *err) {
    (void)dev;
    if (!wl->expr)
        return tt_fail(err, "the expression %s (%s) is not loaded: tune it with --expr FILE.te", wl->expr_name,
                       wl->expr_te);
    if (gpu && TeTask_gpu_fits(wl->expr, gpu_dialect(dev), err) != TT_OK) return TT_ERR;
    return hex_digit_knobs(space, "sample", SAMPLE_KNOBS, err); /* TE_SAMPLES schedule numbers */
}

static Status te_generate(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                          Dialect dialect, KernelSource *out, char *err) {
    (void)dev;
    if (dialect != DIALECT_C) return tt_fail(err, "tensor expressions are tuned on the cpu target only");
    if (!wl->expr) return tt_fail(err, "the expression %s is not loaded", wl->expr_name);
    Steps steps;
    TeTask_sample(wl->expr, Space_encode(space, choice), &steps);
    return TeTask_source(wl->expr, &steps, out, err);
}

static Status te_define_space(const Workload *wl, const DeviceInfo *dev, Space *space, char *err) {
    return define_space(wl, dev, false, space, err);
}

static Status te_gpu_define_space(const Workload *wl, const DeviceInfo *dev, Space *space, char *err) {
    return define_space(wl, dev, true, space, err);
}

/* Candidate n on a GPU: the gpu sampler's schedule drawn from seed n (on
 * cuda the first of them that is one kernel launch: a reduction whose loops
 * are not innermost initialises in a kernel of its own); the same n gives
 * the same schedule. */
static Status te_gpu_generate(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                              Dialect dialect, KernelSource *out, char *err) {
    (void)dev;
    if (dialect == DIALECT_C) return tt_fail(err, "te.gpu generates OpenCL or CUDA");
    if (!wl->expr) return tt_fail(err, "the expression %s is not loaded", wl->expr_name);
    const TeTask *t = wl->expr;
    if (TeTask_gpu_fits(t, dialect, err) != TT_OK) return TT_ERR;
    Rng rng;
    Rng_seed(&rng, Space_encode(space, choice) * 0x9e3779b97f4a7c15ULL + 0x677075u);
    for (int attempt = 0; attempt < 64; attempt++) {
        Steps steps;
        TeSchedule_sample(&t->dag, &rng, 1, &steps);
        int n = 0;
        if (source_gpu(t, &steps, dialect, out, &n, err) == TT_OK) return TT_OK;
        if (n <= 1) return TT_ERR; /* an error other than the launch count */
    }
    return tt_fail(err, "64 gpu schedules of this number all need more than one kernel launch");
}

static bool te_applies(const Workload *wl) { return wl->op == OP_EXPR; }

static void te_label(const Workload *wl, uint64_t index, char *buf, size_t n) {
    (void)wl;
    snprintf(buf, n, "sample %llu", (unsigned long long)index);
}

/* ---- te.sketch: candidates are schedules of the task's table ------------------ */

static Status sketch_define_space(const Workload *wl, const DeviceInfo *dev, Space *space, char *err) {
    (void)dev;
    if (!wl->expr)
        return tt_fail(err, "the expression %s (%s) is not loaded: tune it with --expr FILE.te", wl->expr_name,
                       wl->expr_te);
    return hex_digit_knobs(space, "hash", TE_SCHED_BITS / 4, err); /* 2^TE_SCHED_BITS indices */
}

static Status sketch_generate(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *dev,
                              Dialect dialect, KernelSource *out, char *err) {
    (void)dev;
    if (!wl->expr) return tt_fail(err, "the expression %s is not loaded", wl->expr_name);
    uint64_t index = Space_encode(space, choice);
    Steps steps;
    if (!TeTask_schedule(wl->expr, index, &steps, NULL))
        return tt_fail(err, "schedule %010llx is not one the sketch search made for this task",
                       (unsigned long long)index);
    return dialect == DIALECT_C ? TeTask_source(wl->expr, &steps, out, err)
                                : TeTask_source_gpu(wl->expr, &steps, dialect, out, err);
}

static Status sketch_gpu_define_space(const Workload *wl, const DeviceInfo *dev, Space *space, char *err) {
    if (wl->expr && TeTask_gpu_fits(wl->expr, gpu_dialect(dev), err) != TT_OK) return TT_ERR;
    return sketch_define_space(wl, dev, space, err);
}

static void sketch_label(const Workload *wl, uint64_t index, char *buf, size_t n) {
    Steps steps;
    int sketch = -1;
    if (!wl->expr || !TeTask_schedule(wl->expr, index, &steps, &sketch)) sketch = -1;
    TeSched_label(index, sketch, buf, n);
}

static Status sketch_adopt(const Workload *wl, uint64_t index, const char *steps, const char *config, char *err) {
    if (!wl->expr) return tt_fail(err, "the expression %s is not loaded", wl->expr_name);
    Steps parsed;
    if (!steps || Steps_decode(steps, &parsed, err) != TT_OK)
        return tt_fail(err, "schedule %010llx: the record holds no steps that parse", (unsigned long long)index);
    int sketch = -1;
    if (config && strncmp(config, "sketch ", 7) == 0) sketch = atoi(config + 7);
    uint64_t got;
    if (TeTask_addSchedule(wl->expr, &parsed, sketch, &got, err) != TT_OK) return TT_ERR;
    if (got != index)
        return tt_fail(err, "schedule %010llx: its steps hash to %010llx", (unsigned long long)index,
                       (unsigned long long)got);
    return TT_OK;
}

const Template tmpl_te_cpu = {
    .name = "te.cpu",
    .op = OP_EXPR,
    .family = FAMILY_CPU,
    .applies = te_applies,
    .define_space = te_define_space,
    .precheck = NULL,
    .generate = te_generate,
    .features = NULL,
    .blocked = NULL,
    .label = te_label,
};

const Template tmpl_te_gpu = {
    .name = "te.gpu",
    .op = OP_EXPR,
    .family = FAMILY_GPU,
    .applies = te_applies,
    .define_space = te_gpu_define_space,
    .precheck = NULL,
    .generate = te_gpu_generate,
    .features = NULL,
    .blocked = NULL,
    .label = te_label,
};

/* The default template of an expression on the cpu target: candidates are the
 * schedules evolution makes from the sketches (table above). */
const Template tmpl_te_sketch = {
    .name = "te.sketch",
    .op = OP_EXPR,
    .family = FAMILY_CPU,
    .applies = te_applies,
    .define_space = sketch_define_space,
    .precheck = NULL,
    .generate = sketch_generate,
    .features = NULL,
    .blocked = NULL,
    .label = sketch_label,
    .adopt = sketch_adopt,
    .strategy = "evolution",
};

/* The same on the opencl and cuda targets (what TeTask_gpu_fits takes: on cuda
 * one-stage expressions, one kernel per schedule; on opencl a launch plan). */
const Template tmpl_te_sketch_gpu = {
    .name = "te.sketch.gpu",
    .op = OP_EXPR,
    .family = FAMILY_GPU,
    .applies = te_applies,
    .define_space = sketch_gpu_define_space,
    .precheck = NULL,
    .generate = sketch_generate,
    .features = NULL,
    .blocked = NULL,
    .label = sketch_label,
    .adopt = sketch_adopt,
    .strategy = "evolution",
};
