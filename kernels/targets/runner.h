/* kernels/targets/runner.h: the Runner every target uses. A Runner owns one
 * measurement worker (kernels/worker/proc.h) in a mode ("cpu", "cuda",
 * "opencl") and a private temp directory holding the current task file and
 * the worker's log. Runner_delete stops the worker and removes the directory. */
#ifndef TT_KERNELS_RUNNER_H
#define TT_KERNELS_RUNNER_H

#include <stdbool.h>

#include "base/status.h"
#include "kernels/target.h"

Runner *Runner_new(const char *mode, char *err);
/* Writes the task file (inputs and reference) unless the worker already has
 * this workload. */
Status Runner_setTask(Runner *this, const Workload *wl, char *err);
/* Sets a variable of the worker's environment; a change restarts the worker. */
Status Runner_setEnv(Runner *this, const char *name, const char *value, char *err);
/* Measures one built kernel. source: text sent along with the request for a
 * worker that builds from source (NULL for none). */
void Runner_measure(Runner *this, const KernelSource *src, const BuildResult *built, const MeasureOptions *opt,
                    const char *source, MeasureResult *out);

/* A candidate measured with a slow cutoff (the engine sets it once the task
 * has a best: 10x the best run) gets at most RUNNER_SLOW_TIMEOUT_FACTOR x the
 * cutoff, never less than RUNNER_SLOW_TIMEOUT_FLOOR_S, before the worker is
 * killed (RUN_TIMEOUT, saying so), instead of the whole --timeout: a kernel
 * 40x slower than the best (its correctness run and one timed run) is not
 * worth 10 s. Returns that timeout, 0 without a cutoff; --timeout still caps it. */
#define RUNNER_SLOW_TIMEOUT_FACTOR 8
#define RUNNER_SLOW_TIMEOUT_FLOOR_S 2.0
double Runner_slowTimeout(double slow_cutoff_s);
void Runner_delete(Runner *this);

#endif
