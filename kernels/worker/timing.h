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

#endif
