/* kernels/worker/timing.h: the timing loop the worker's modes share. */
#ifndef TT_KERNELS_WORKER_TIMING_H
#define TT_KERNELS_WORKER_TIMING_H

#include "kernels/worker/protocol.h"

/* Timing helper shared by the modes: runs `run(ctx)`
 * `number` times per repeat, raising number until one repeat lasts at least
 * min_repeat_ms, then `repeat` repeats; costs are seconds per run. `timer`
 * may be NULL (monotonic clock around the loop); a GPU mode passes a timer
 * that returns the device time of `n` runs. Fills rep->costs, n_costs, number. */
typedef double (*WorkerTimerFn)(void *ctx, int n);
void WorkerMode_time(void (*run)(void *ctx), WorkerTimerFn timer, void *ctx, const WorkerMeasureReq *req,
                     WorkerReply *rep);

/* A repeat of runs that each last `first_s` or more is capped near this
 * length (see WorkerMode_timeAfter). */
#define WORKER_REPEAT_CAP_S 0.1

/* WorkerMode_time for a mode that has already run the kernel once (its
 * correctness run), `first_s` seconds, untimed for the costs: when that run
 * was slower than the slow cutoff, one repeat of one run is enough (the
 * candidate is far behind the best, the engine notes it was timed once);
 * otherwise, without min_repeat_ms, `number` is lowered so that a repeat lasts
 * about WORKER_REPEAT_CAP_S (at least one run): a kernel of 50 ms is timed by
 * repeats of 2 runs, not 4, one of 300 ms by repeats of 1. Short kernels are
 * timed exactly as WorkerMode_time does. first_s <= 0 is WorkerMode_time. */
void WorkerMode_timeAfter(void (*run)(void *ctx), WorkerTimerFn timer, void *ctx, const WorkerMeasureReq *req,
                          double first_s, WorkerReply *rep);

#endif
