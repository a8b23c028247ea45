/* kernels/registry.c: the one table of templates and the one table of targets,
 * and the small shared helpers of template.h / target.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "kernels/target.h"
#include "kernels/template.h"

extern const Template tmpl_conv2d_cpu, tmpl_conv2d_winograd_cpu, tmpl_depthwise_cpu, tmpl_dense_cpu,
    tmpl_batch_matmul_cpu;
extern const Template tmpl_conv2d_gpu, tmpl_depthwise_gpu, tmpl_dense_gpu;
extern const Template tmpl_te_sketch, tmpl_te_cpu, tmpl_te_gpu;
extern const Target target_cpu, target_cuda, target_opencl;

static const Template *const TEMPLATES[] = {
    &tmpl_conv2d_cpu, &tmpl_conv2d_winograd_cpu, &tmpl_depthwise_cpu, &tmpl_dense_cpu, &tmpl_batch_matmul_cpu,
    &tmpl_conv2d_gpu, &tmpl_depthwise_gpu,       &tmpl_dense_gpu,     &tmpl_te_sketch, &tmpl_te_cpu,
    &tmpl_te_gpu,
};
/* The first target is the default of --target. */
static const Target *const TARGETS[] = {&target_cpu, &target_cuda, &target_opencl};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

int64_t BlockedLayout_floats(const BlockedLayout *this) {
    int64_t cb = this->cb > 0 ? this->cb : 1;
    return this->n * ((this->c + cb - 1) / cb) * this->h_alloc * this->w_alloc * cb;
}

int Template_all(const Template *const **out) {
    *out = TEMPLATES;
    return COUNT(TEMPLATES);
}

const Template *Template_find(const Workload *wl, TargetFamily family, char *err) {
    for (int i = 0; i < COUNT(TEMPLATES); i++) {
        const Template *t = TEMPLATES[i];
        if (t->op == wl->op && t->family == family && (!t->applies || t->applies(wl))) return t;
    }
    tt_fail(err, "no %s template for %s (layout %s)", family == FAMILY_CPU ? "cpu" : "gpu", Op_name(wl->op),
            Layout_name(wl->layout));
    return NULL;
}

const Template *Template_byName(const char *name) {
    for (int i = 0; i < COUNT(TEMPLATES); i++)
        if (strcmp(TEMPLATES[i]->name, name) == 0) return TEMPLATES[i];
    return NULL;
}

const Template *Template_forRecord(const Workload *wl, TargetFamily family, const char *name, char *err) {
    const Template *t = name && *name ? Template_byName(name) : NULL;
    if (t && t->op == wl->op && t->family == family && (!t->applies || t->applies(wl))) return t;
    return Template_find(wl, family, err);
}

int Template_alternatives(const Workload *wl, TargetFamily family, const Template **out, int cap) {
    int n = 0;
    for (int i = 0; i < COUNT(TEMPLATES); i++) {
        const Template *t = TEMPLATES[i];
        if (t->op != wl->op || t->family != family || (t->applies && !t->applies(wl))) continue;
        if (n < cap) out[n] = t;
        n++;
    }
    return n;
}

bool Template_effective(const Template *this) { return this && this->min_flops; }

double Template_executedGflops(const Template *this, const Workload *wl, double gflops) {
    double flops = Workload_flops(wl);
    return Template_effective(this) && flops > 0 ? gflops * this->min_flops(wl) / flops : gflops;
}

int Target_all(const Target *const **out) {
    *out = TARGETS;
    return COUNT(TARGETS);
}

const Target *Target_default(void) { return TARGETS[0]; }

static char target_names[128];
static pthread_once_t target_names_once = PTHREAD_ONCE_INIT;

static void target_names_init(void) {
    for (int i = 0; i < COUNT(TARGETS); i++)
        Names_add(target_names, sizeof target_names, TARGETS[i]->name);
}

const char *Target_names(void) {
    pthread_once(&target_names_once, target_names_init);
    return target_names;
}

const Target *Target_find(const char *name) {
    for (int i = 0; i < COUNT(TARGETS); i++)
        if (strcmp(TARGETS[i]->name, name) == 0) return TARGETS[i];
    return NULL;
}

static const char *const ERROR_NAMES[ERR_COUNT] = {
    "NO_ERROR",     "INSTANTIATION_ERROR", "COMPILE_HOST", "COMPILE_DEVICE", "RUNTIME_DEVICE",
    "WRONG_ANSWER", "BUILD_TIMEOUT",       "RUN_TIMEOUT",  "UNKNOWN_ERROR",
};

const char *MeasureError_name(int error_no) {
    return error_no >= 0 && error_no < ERR_COUNT ? ERROR_NAMES[error_no] : "UNKNOWN_ERROR";
}

void MeasureOptions_defaults(MeasureOptions *this) {
    memset(this, 0, sizeof *this);
    this->number = 4;
    this->repeat = 3;
    this->min_repeat_ms = 0;
    this->build_timeout_s = 15;
    this->run_timeout_s = 10;
    this->threads = 0;
    this->check_correctness = true;
}

void KernelSource_init(KernelSource *this) {
    memset(this, 0, sizeof *this);
    for (int i = 0; i < 3; i++)
        this->grid[i] = this->block[i] = 1;
}

void KernelSource_done(KernelSource *this) {
    free(this->source);
    this->source = NULL;
    free(this->steps);
    this->steps = NULL;
}

void BuildResult_init(BuildResult *this) {
    memset(this, 0, sizeof *this);
    this->regs_per_thread = -1;
    this->spill_bytes = -1;
    this->shared_bytes = -1;
    this->local_bytes = -1;
}

void BuildResult_done(BuildResult *this) {
    free(this->msg);
    this->msg = NULL;
    if (this->path[0]) unlink(this->path);
    this->path[0] = '\0';
}

void MeasureResult_init(MeasureResult *this) { memset(this, 0, sizeof *this); }

void MeasureResult_done(MeasureResult *this) {
    free(this->msg);
    this->msg = NULL;
}
