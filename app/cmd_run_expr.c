/* app/cmd_run_expr.c: `tunetop run --expr FILE.te [--log LOG]` (app/expr.h).
 *
 * The kernel is the one the tuner measured: the best record's steps through
 * Candidate_source (kernels/candidate.h), built by the cpu target and run in
 * its measurement worker, which makes the random inputs, computes the
 * reference with the expression interpreter (TeTask_reference) and compares,
 * as it does for every candidate of `tune --expr`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/device.h"
#include "app/expr.h"
#include "base/strbuf.h"
#include "base/tmpdir.h"
#include "kernels/candidate.h"
#include "kernels/target.h"
#include "kernels/templates/te/te_task.h"
#include "records/history.h"
#include "space/steps.h"

/* What runs: the schedule's steps (owned), its template, where it comes from. */
typedef struct ExprPick {
    char *steps;
    const Template *tmpl;
    double logged_s; /* the log's latency of the record (0: none) */
    char from[TT_ERRLEN];
} ExprPick;

static int fail(const char *msg) {
    fprintf(stderr, "tunetop run: %s\n", msg);
    return 1;
}

/* The best record of wl in the log, or NULL; TT_ERR when the log cannot be read, is of another target or
 * has no record of the expression. */
static Status best_in_log(const ExprRun *r, const Workload *wl, History *h, const Record **best, char *err) {
    *best = NULL;
    if (History_load(h, r->log, err) != TT_OK) return TT_ERR;
    if (h->end == LOG_TORN) fprintf(stderr, "tunetop run: warning: %s (read up to there)\n", h->end_msg);
    if (h->header.target[0] && strcmp(h->header.target, r->target) != 0)
        return tt_fail(err, "log %s is for target %s, not %s", r->log, h->header.target, r->target);
    char key[WORKLOAD_KEY_LEN];
    Workload_key(wl, key, sizeof key);
    if (!History_find(h, key))
        return tt_fail(err,
                       "log %s has no records of the expression %s (%s) that %s%s gives (another file or other "
                       "--set values than the log was tuned with?)",
                       r->log, wl->expr_name, wl->expr_te, r->path, r->n_sets ? " with --set" : "");
    *best = History_bestOfKey(h, key);
    if (*best && (*best)->n_costs == 0) *best = NULL; /* compile-only: never ran */
    if (*best && !(*best)->steps) return tt_fail(err, "the best record of %s holds no schedule steps", key);
    return TT_OK;
}

/* The schedule to run: the log's best, else the zero-trial default (a warning when a log was given). */
static Status pick(const ExprRun *r, const TeTask *t, const Workload *wl, const DeviceInfo *dev, ExprPick *p,
                   char *err) {
    History h;
    History_init(&h);
    const Record *best = NULL;
    Status st = r->log ? best_in_log(r, wl, &h, &best, err) : TT_OK;
    if (st == TT_OK && best) {
        p->tmpl = Template_forRecord(wl, FAMILY_CPU, best->template_name, err);
        if (!p->tmpl) st = TT_ERR;
        p->steps = best->steps ? strdup(best->steps) : NULL;
        p->logged_s = Record_cost(best);
        snprintf(p->from, sizeof p->from, "the best schedule in %.400s (%s, %.4f ms there)", r->log,
                 best->template_name, p->logged_s * 1e3);
    } else if (st == TT_OK) {
        Steps steps;
        TeTask_defaultSteps(t, dev, &steps);
        StrBuf sb;
        StrBuf_init(&sb);
        Steps_encode(&steps, &sb);
        p->steps = StrBuf_take(&sb);
        StrBuf_done(&sb);
        p->tmpl = &tmpl_te_sketch;
        snprintf(p->from, sizeof p->from, "the zero-trial default schedule (first sketch)");
        if (r->log)
            fprintf(stderr, "tunetop run: warning: %s has no successful record of %s: running the zero-trial default\n",
                    r->log, wl->expr_name);
    }
    History_done(&h);
    return st;
}

/* Builds ks in dir, then measures it r->repeat times in the worker (which checks the output first). */
static Status build_and_time(const ExprRun *r, const Target *target, const DeviceInfo *dev, const Workload *wl,
                             const KernelSource *ks, const char *dir, double *costs, int *n_costs, char *err) {
    MeasureOptions mo;
    MeasureOptions_defaults(&mo);
    mo.number = r->number;
    mo.min_repeat_ms = r->min_repeat_ms;
    mo.threads = r->threads;
    mo.build_timeout_s = 120;
    mo.run_timeout_s = r->timeout_s;
    BuildResult br;
    BuildResult_init(&br);
    target->build(ks, dev, &mo, dir, 1, &br);
    if (br.error_no != ERR_NO_ERROR) {
        tt_fail(err, "the kernel did not build (%s): %.400s", MeasureError_name(br.error_no), br.msg ? br.msg : "");
        BuildResult_done(&br);
        return TT_ERR;
    }
    char why[TT_ERRLEN] = "";
    Runner *runner = target->runner_new(dev, why);
    Status st = runner ? target->runner_set_task(runner, wl, why) : TT_ERR;
    if (st != TT_OK) tt_fail(err, "cannot start the measurement worker: %s", why);
    *n_costs = 0;
    while (st == TT_OK && *n_costs < r->repeat) {
        int left = r->repeat - *n_costs;
        mo.repeat = left < MEASURE_MAX_COSTS ? left : MEASURE_MAX_COSTS;
        MeasureResult mr;
        MeasureResult_init(&mr);
        target->measure(runner, ks, &br, &mo, &mr);
        if (mr.error_no == ERR_WRONG_ANSWER)
            st = tt_fail(err, "the output does not match the expression interpreter: %.400s", mr.msg ? mr.msg : "");
        else if (mr.error_no != ERR_NO_ERROR || mr.n_costs < 1)
            st = tt_fail(err, "the kernel failed in the worker (%s): %.400s", MeasureError_name(mr.error_no),
                         mr.msg ? mr.msg : "");
        for (int i = 0; st == TT_OK && i < mr.n_costs && *n_costs < r->repeat; i++)
            costs[(*n_costs)++] = mr.costs[i];
        MeasureResult_done(&mr);
    }
    if (runner) target->runner_delete(runner);
    BuildResult_done(&br);
    return st;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_times(const Workload *wl, double *costs, int n, const ExprPick *p) {
    qsort(costs, (size_t)n, sizeof *costs, cmp_double);
    double med = n % 2 ? costs[n / 2] : (costs[n / 2 - 1] + costs[n / 2]) / 2;
    printf("output matches the expression interpreter (%lld elements)\n", (long long)wl->expr_out);
    printf("median %.4f ms over %d repeat%s (min %.4f ms, max %.4f ms), %.2f GFLOPS\n", med * 1e3, n, n == 1 ? "" : "s",
           costs[0] * 1e3, costs[n - 1] * 1e3, med > 0 ? wl->expr_flops / med / 1e9 : 0);
    if (p->logged_s > 0)
        printf("the log's latency of this schedule: %.4f ms (ratio %.2f)\n", p->logged_s * 1e3, med / p->logged_s);
}

/* The kernel of the pick, built and timed in a private temporary folder. */
static Status run_pick(const ExprRun *r, const Target *target, const DeviceInfo *dev, const Workload *wl,
                       const ExprPick *p, double *costs, int *n, char *err) {
    KernelSource ks;
    KernelSource_init(&ks);
    Candidate c = {.tmpl = p->tmpl, .wl = wl, .steps = p->steps};
    char why[TT_ERRLEN];
    if (Candidate_source(&c, dev, DIALECT_C, &ks, why) != TT_OK) {
        KernelSource_done(&ks);
        return tt_fail(err, "%s: the schedule does not apply: %s", wl->expr_name, why);
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tunetop-run-XXXXXX", TmpDir_root());
    if (!mkdtemp(dir)) {
        KernelSource_done(&ks);
        return tt_fail(err, "cannot create %s: %s", dir, strerror(errno));
    }
    int lock = TmpDir_lock(dir);
    Status st = build_and_time(r, target, dev, wl, &ks, dir, costs, n, err);
    TmpDir_remove(dir);
    if (lock >= 0) close(lock);
    KernelSource_done(&ks);
    return st;
}

int app_run_expr(const ExprRun *r) {
    char err[TT_ERRLEN] = "";
    if (strcmp(r->target, "cpu") != 0) return fail("--expr runs on the cpu target");
    TeTask *t = NULL;
    Workload wl;
    if (TeTask_load(r->path, r->sets, r->n_sets, &t, &wl, err) != TT_OK) {
        fprintf(stderr, "tunetop run: %s\n", err);
        return 2;
    }
    const Target *target;
    DeviceInfo dev;
    ExprPick p;
    memset(&p, 0, sizeof p);
    double *costs = calloc((size_t)r->repeat + 1, sizeof *costs);
    if (!costs) abort();
    int n = 0, rc = 1;
    if (app_resolve_device(r->target, NULL, false, &target, &dev, err) == TT_OK &&
        pick(r, t, &wl, &dev, &p, err) == TT_OK) {
        printf("%s (%s): %s, %d thread%s\n", wl.expr_name, wl.expr_te, p.from, r->threads > 0 ? r->threads : dev.cores,
               (r->threads > 0 ? r->threads : dev.cores) == 1 ? "" : "s");
        fflush(stdout);
        if (run_pick(r, target, &dev, &wl, &p, costs, &n, err) == TT_OK) {
            print_times(&wl, costs, n, &p);
            rc = 0;
        }
    }
    if (rc) fail(err);
    free(costs);
    free(p.steps);
    TeTask_delete(t);
    return rc;
}
