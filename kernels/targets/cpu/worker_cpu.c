/* kernels/targets/cpu/worker_cpu.c: the "cpu" mode of tunetop-worker. Loads a
 * kernel shared object built by the cpu target (kernels/targets/cpu/abi.h), runs it
 * once, checks it against the task's reference and times tt_run. */
#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "kernels/targets/cpu/abi.h"
#include "kernels/worker/mode.h"

typedef struct CpuKernel {
    void *lib;
    tt_setup_fn setup;
    tt_state_fn pack, run, finish, teardown;
    void *state;
} CpuKernel;

static Status cpu_init(char *err) {
    /* Keep the OpenMP runtime loaded for the worker's life: otherwise the
     * dlclose of each kernel could unload it and its thread pool, and every
     * measurement would pay for starting the threads again. Kernels that do
     * not use OpenMP do not need it, so a failure is not an error. */
    dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    return TT_OK;
}

static void run_once(void *ctx) {
    CpuKernel *k = ctx;
    k->run(k->state);
}

static void cpu_measure(const WorkerTask *task, const WorkerMeasureReq *req, const char *source, size_t source_len,
                        WorkerReply *rep, char *msg, size_t cap) {
    if (!task) {
        rep->error_no = ERR_UNKNOWN;
        snprintf(msg, cap, "no task set in the worker");
        return;
    }
    CpuKernel k;
    memset(&k, 0, sizeof k);
    k.lib = dlopen(req->path, RTLD_NOW | RTLD_LOCAL);
    if (!k.lib) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        snprintf(msg, cap, "cannot load the kernel: %s", dlerror());
        return;
    }
    const char *missing = NULL;
    *(void **)&k.setup = dlsym(k.lib, "tt_setup");
    *(void **)&k.pack = dlsym(k.lib, "tt_pack");
    *(void **)&k.run = dlsym(k.lib, req->entry[0] ? req->entry : TT_CPU_ENTRY);
    *(void **)&k.finish = dlsym(k.lib, "tt_finish");
    *(void **)&k.teardown = dlsym(k.lib, "tt_teardown");
    if (!k.setup)
        missing = "tt_setup";
    else if (!k.pack)
        missing = "tt_pack";
    else if (!k.run)
        missing = req->entry[0] ? req->entry : TT_CPU_ENTRY;
    else if (!k.finish)
        missing = "tt_finish";
    else if (!k.teardown)
        missing = "tt_teardown";
    if (missing) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        snprintf(msg, cap, "the kernel does not export %s", missing);
        dlclose(k.lib);
        return;
    }

    /* The kernel may keep the pointer array; give it a copy that lives as long as the state. */
    float *args[WORKLOAD_MAX_ARGS];
    memcpy(args, task->args, sizeof args);
    int last = task->nargs - 1;
    size_t out_n = task->counts[last];
    float *out = task->args[last];
    int rc = k.setup(args, &k.state);
    if (rc != 0) {
        rep->error_no = ERR_RUNTIME_DEVICE;
        snprintf(msg, cap, "tt_setup failed (returned %d)", rc);
        dlclose(k.lib);
        return;
    }

    for (size_t i = 0; i < out_n; i++)
        out[i] = NAN; /* so an element never written cannot pass */
    /* The correctness run, timed: it sets how many runs a repeat needs
     * (WorkerMode_timeAfter) and, for a slow kernel, gives the layout
     * transforms' time. */
    double c0 = clock_mono();
    k.pack(k.state);
    double c1 = clock_mono();
    k.run(k.state);
    double c2 = clock_mono();
    k.finish(k.state);
    double c3 = clock_mono();
    if (req->check_correctness && !Workload_compare(&task->wl, task->ref, out, msg, cap))
        rep->error_no = ERR_WRONG_ANSWER; /* NaN fails the compare too */
    if (rep->error_no == ERR_NO_ERROR) {
        WorkerMode_timeAfter(run_once, NULL, &k, req, c2 - c1, rep);
        if (c2 - c1 >= WORKER_REPEAT_CAP_S) {
            /* a run as long as a repeat: the pack and finish of the
             * correctness run, rather than one more run to time them */
            rep->pack_s = (c1 - c0) + (c3 - c2);
        } else {
            /* Layout transforms, timed apart: one pack and one finish around an untimed run. */
            double t0 = clock_mono();
            k.pack(k.state);
            double t1 = clock_mono();
            k.run(k.state);
            double t2 = clock_mono();
            k.finish(k.state);
            rep->pack_s = (t1 - t0) + (clock_mono() - t2);
        }
    }
    k.teardown(k.state);
    dlclose(k.lib);
}

const WorkerMode worker_mode_cpu = {
    .name = "cpu",
    .init = cpu_init,
    .measure = cpu_measure,
    .done = NULL,
    .warm_inputs = true,
};
