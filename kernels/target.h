/* kernels/target.h: a target is where kernels are built and measured.
 *
 * Targets are const structs of function pointers registered in one table
 * (kernels/registry.c; a target is a folder kernels/targets/<name>/ and one
 * line of that table): "cpu" (generated C, system compiler, shared object in
 * an isolated worker process), "cuda" (NVRTC + nvJitLink, CUDA Runtime in a
 * worker), "opencl" (OpenCL runtime in a worker). A target whose library was
 * not found at build time is still listed; its probe says why it cannot run.
 *
 * Threads: `build` is called concurrently from the builder pool and must be
 * thread-safe. A Runner belongs to one thread (the engine's runner) and owns
 * its measurement worker process: a crash, an illegal address or a hang kills
 * the worker, never the session; the runner records the error and restarts
 * the worker on the next call.
 */
#ifndef TT_KERNELS_TARGET_H
#define TT_KERNELS_TARGET_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/template.h"
#include "kernels/workload.h"

/* Error numbers of a measurement; their values are part of the log format. */
typedef enum {
    ERR_NO_ERROR = 0,
    ERR_INSTANTIATION = 1,
    ERR_COMPILE_HOST = 2,
    ERR_COMPILE_DEVICE = 3,
    ERR_RUNTIME_DEVICE = 4,
    ERR_WRONG_ANSWER = 5,
    ERR_BUILD_TIMEOUT = 6,
    ERR_RUN_TIMEOUT = 7,
    ERR_UNKNOWN = 8,
    ERR_COUNT
} MeasureErrorNo;

const char *MeasureError_name(int error_no); /* "NO_ERROR", "INSTANTIATION_ERROR", ... */

typedef struct MeasureOptions {
    int number;        /* runs per repeat (raised to reach min_repeat_ms) */
    int repeat;        /* timed repeats; each gives one cost */
    int min_repeat_ms; /* raise `number` until one repeat lasts this long */
    double build_timeout_s;
    double run_timeout_s;
    int threads;            /* CPU kernel threads (0 = all cores) */
    bool compile_only;      /* build and record resources, do not run */
    bool check_correctness; /* compare with the reference (default true) */
    /* Stop after the first repeat when one run takes longer than this (0 =
     * off): the engine sets it to a multiple of the task's best so that far
     * slower candidates cost one repeat, not `repeat` of them. */
    double slow_cutoff_s;
} MeasureOptions;

void MeasureOptions_defaults(MeasureOptions *this); /* number 4, repeat 3, min_repeat_ms 0, timeouts 15/10 s */

typedef struct BuildResult {
    int error_no;   /* NO_ERROR, COMPILE_HOST, COMPILE_DEVICE, BUILD_TIMEOUT, INSTANTIATION (resources) */
    char *msg;      /* owned: compiler log or reason; NULL when empty */
    char path[256]; /* artifact on disk (shared object, cubin), "" if none */
    double build_s;
    /* resources (GPU); -1 = not measured */
    int regs_per_thread;
    int spill_bytes;
    int64_t shared_bytes;
    int64_t local_bytes;
} BuildResult;

void BuildResult_init(BuildResult *this);
void BuildResult_done(BuildResult *this); /* frees msg and removes the artifact */

#define MEASURE_MAX_COSTS 16

typedef struct MeasureResult {
    int error_no;
    double costs[MEASURE_MAX_COSTS]; /* seconds per run, one per repeat */
    int n_costs;
    double run_s;       /* wall time the measurement took */
    double pack_s;      /* layout packing measured apart (0 if none) */
    char *msg;          /* owned: error message; NULL when none */
    bool machine_fault; /* the failure is the machine's, not the candidate's: the worker was killed from
                           outside (SIGKILL it was not sent), or could not take the task (memory) */
} MeasureResult;

void MeasureResult_init(MeasureResult *this);
void MeasureResult_done(MeasureResult *this);

typedef struct Runner Runner; /* opaque, per target */
struct WorkerMode;            /* kernels/worker/mode.h */

typedef struct Target {
    const char *name; /* "cpu", "cuda", "opencl" */
    TargetFamily family;
    Dialect dialect;
    /* Looks for a device. TT_ERR with one line (no driver, no device, not built in). */
    Status (*probe)(DeviceInfo *out, char *err);
    /* Device limits without a device, from a per-architecture table ("sm_90").
     * NULL for targets that need a device. */
    Status (*offline_info)(const char *arch, DeviceInfo *out, char *err);
    /* The architecture offline_info takes for NULL ("sm_90"); NULL without offline_info. */
    const char *default_arch;
    /* Several devices of a node (NULL for cpu): how many this process can
     * see, found without opening one (0: none found), and select_device(i),
     * called before the probe, which makes device i the one the probe, the
     * runner and its worker process use (through the environment the worker
     * inherits). */
    int (*device_count)(void);
    Status (*select_device)(int index, char *err);
    /* Thread-safe build of one kernel with a timeout. Never fails as a call:
     * failures are error numbers in out. `tag` makes artifact names unique. */
    void (*build)(const KernelSource *src, const DeviceInfo *dev, const MeasureOptions *opt, const char *workdir,
                  uint64_t tag, BuildResult *out);
    Runner *(*runner_new)(const DeviceInfo *dev, char *err);
    /* Sets the task the next measurements belong to: the worker builds inputs
     * and the reference output once per task. */
    Status (*runner_set_task)(Runner *r, const Workload *wl, char *err);
    /* Loads, runs, checks and times one built kernel in the worker. */
    void (*measure)(Runner *r, const KernelSource *src, const BuildResult *built, const MeasureOptions *opt,
                    MeasureResult *out);
    void (*runner_delete)(Runner *r);
    /* The measurement worker's mode for this target (worker_<name>.c beside
     * the target): tunetop-worker runs the mode of the target named on its
     * command line. */
    const struct WorkerMode *worker;
} Target;

const Target *Target_find(const char *name); /* NULL if unknown */
int Target_all(const Target *const **out);
const Target *Target_default(void); /* the first of the table: "cpu" */
const char *Target_names(void);     /* "cpu, cuda, opencl": the table's names, for help and errors */

#endif
