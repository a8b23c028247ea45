/* kernels/worker/timing.c: see timing.h. */
#include "kernels/worker/timing.h"

#include <limits.h>
#include <math.h>

#include "base/clock.h"

/* ---- timing -------------------------------------------------------------- */

static double time_runs(void (*run)(void *), WorkerTimerFn timer, void *ctx, int n) {
    if (timer) return timer(ctx, n);
    double t0 = clock_mono();
    for (int i = 0; i < n; i++)
        run(ctx);
    return clock_mono() - t0;
}

void WorkerMode_time(void (*run)(void *ctx), WorkerTimerFn timer, void *ctx, const WorkerMeasureReq *req,
                     WorkerReply *rep) {
    WorkerMode_timeAfter(run, timer, ctx, req, 0, rep);
}

void WorkerMode_timeAfter(void (*run)(void *ctx), WorkerTimerFn timer, void *ctx, const WorkerMeasureReq *req,
                          double first_s, WorkerReply *rep) {
    int number = req->number > 0 ? req->number : 1;
    int repeat = req->repeat < 1 ? 1 : req->repeat > MEASURE_MAX_COSTS ? MEASURE_MAX_COSTS : req->repeat;
    double min_s = req->min_repeat_ms > 0 ? req->min_repeat_ms * 1e-3 : 0;
    if (first_s > 0 && req->slow_cutoff_s > 0 && first_s > req->slow_cutoff_s) {
        number = 1; /* far slower than the best already: one run tells enough */
        repeat = 1;
        min_s = 0;
    } else if (first_s > 0 && min_s == 0 && (double)number * first_s > WORKER_REPEAT_CAP_S) {
        int cap = (int)(WORKER_REPEAT_CAP_S / first_s);
        number = cap < 1 ? 1 : cap;
    }
    /* Calibration for min_repeat_ms: these runs are not reported. */
    while (min_s > 0) {
        double t = time_runs(run, timer, ctx, number);
        if (t >= min_s || number >= INT_MAX / 4) break;
        double per = t > 0 ? t / number : 1e-9;
        double want = ceil(min_s * 1.2 / per);
        int next = want > (double)(INT_MAX / 4) ? INT_MAX / 4 : (int)want;
        number = next > number ? next : number * 2;
    }
    rep->n_costs = 0;
    for (int r = 0; r < repeat; r++) {
        rep->costs[r] = time_runs(run, timer, ctx, number) / number;
        rep->n_costs++;
        if (req->slow_cutoff_s > 0 && rep->costs[r] > req->slow_cutoff_s) break; /* far slower than the best */
    }
    rep->number = number;
}
