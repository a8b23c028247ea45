/* tuner/builder.h: the builder pool, N threads that generate and compile
 * candidates in parallel (redis bio-style: a mutex and condition variable
 * around a job list). BuilderPool_run hands a batch to the pool and returns
 * when every job of the batch is done, so the engine never measures while a
 * compile runs.
 *
 * A source the pool has built before (the same text, byte for byte, and
 * entry) is not compiled again: the job gets a copy of the earlier artifact
 * (a file of its own, so the worker loads it as a new object) and its
 * resources, and is measured like any other; only successful builds are kept,
 * up to 1024 sources or 64 MiB of text, for the pool's life. Template-free
 * search proposes different schedules that lower to the same code (a fifth of
 * the candidates of a dense session). */
#ifndef TT_TUNER_BUILDER_H
#define TT_TUNER_BUILDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/target.h"
#include "tuner/task.h"

typedef struct BuildJob {
    /* in */
    const Task *task;
    uint64_t index;
    int32_t choice[SPACE_MAX_KNOBS];
    /* out (owned by the job: BuildJob_done releases them) */
    bool skipped; /* never built: the batch was cancelled first */
    KernelSource src;
    BuildResult result;
} BuildJob;

void BuildJob_init(BuildJob *this, const Task *task, uint64_t index);
void BuildJob_done(BuildJob *this);

typedef struct BuilderPool BuilderPool;

BuilderPool *BuilderPool_new(int threads, const Target *target, const DeviceInfo *dev, const MeasureOptions *opt,
                             const char *workdir);
/* Builds jobs[0..n) on the pool threads and waits for all of them. When
 * *cancel becomes true (may be NULL), jobs not started yet are marked skipped
 * instead of built; the ones in flight finish (bounded by the build timeout). */
void BuilderPool_run(BuilderPool *this, BuildJob *jobs, int n, const atomic_bool *cancel);
int BuilderPool_threads(const BuilderPool *this);
/* Jobs being built right now (for the UI's activity field). */
int BuilderPool_active(BuilderPool *this);
/* Jobs that took a copy of an earlier build of the same source. */
int BuilderPool_cacheHits(BuilderPool *this);
void BuilderPool_delete(BuilderPool *this);

#endif
