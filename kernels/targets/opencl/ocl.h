/* kernels/targets/opencl/ocl.h: the small OpenCL layer shared by the opencl target
 * (session side: probe, build), the worker's opencl mode (load, run, time) and
 * the tests (everything in-process). Private to kernels/ and tests/.
 *
 * Only compiled with TT_HAVE_OPENCL; callers guard their use of it. */
#ifndef TT_KERNELS_OPENCL_OCL_H
#define TT_KERNELS_OPENCL_OCL_H

#ifdef TT_HAVE_OPENCL

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <CL/cl.h>

#include "base/status.h"
#include "kernels/targets/launch_plan.h"
#include "kernels/template.h"

/* One device with its context and a profiling in-order queue. */
typedef struct OclDevice {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue queue;
} OclDevice;

/* Devices are numbered in this order: the GPUs of every platform, or, when
 * there is none, every device of every platform. OclDevice_open opens the
 * one TUNETOP_OPENCL_DEVICE names (default 0). TT_ERR with one line when
 * there is none. */
Status OclDevice_open(OclDevice *this, char *err);
/* How many devices that numbering has. */
int OclDevice_count(void);
void OclDevice_close(OclDevice *this);
/* Limits for the precheck: max work-group size and item sizes, local memory. */
void OclDevice_info(const OclDevice *this, DeviceInfo *out);

/* Builds source into *prog. On failure returns TT_ERR; *log (malloc'd, caller
 * frees) holds the build log or the reason. On success *log is the build log
 * or NULL when empty. */
Status Ocl_buildSource(const OclDevice *dev, const char *source, cl_program *prog, char **log);
/* Same from a program binary (as Ocl_programBinary gave). */
Status Ocl_buildBinary(const OclDevice *dev, const unsigned char *bin, size_t len, cl_program *prog, char **log);
/* The device binary of a built program (malloc'd, caller frees), or NULL. */
unsigned char *Ocl_programBinary(cl_program prog, size_t *len);

/* A kernel ready to launch: device buffers for every argument, inputs copied
 * in. The OclExec owns the kernel and the buffers, not the program. */
typedef struct OclExec {
    const OclDevice *dev;
    int n_kernels; /* launched in order: one run */
    cl_kernel kernel[PLAN_MAX_LAUNCHES];
    size_t global[PLAN_MAX_LAUNCHES][3], local[PLAN_MAX_LAUNCHES][3];
    cl_mem bufs[PLAN_MAX_PARAMS]; /* the task's arguments, then scratch buffers */
    int n_bufs, out;
    size_t out_bytes;
} OclExec;

/* args[0 .. nargs-2] are inputs (copied to the device), args[nargs-1] the output
 * (allocated on the device, filled with NaN markers). */
Status OclExec_init(OclExec *this, const OclDevice *dev, cl_program prog, const char *entry, const int64_t grid[3],
                    const int64_t block[3], float *const *args, const size_t *counts, int nargs, char *err);
/* The same for the kernels of a launch plan (scratch buffers NaN-filled too). */
Status OclExec_initPlan(OclExec *this, const OclDevice *dev, cl_program prog, const LaunchPlan *plan,
                        float *const *args, const size_t *counts, int nargs, char *err);
/* Enqueues n runs (each every kernel in order) and waits; *device_s is the device time from the first
 * start to the last end (profiling events). */
Status OclExec_run(OclExec *this, int n, double *device_s, char *err);
Status OclExec_readOutput(OclExec *this, float *out, char *err);
void OclExec_done(OclExec *this);

const char *Ocl_errorName(cl_int e);

#endif
#endif
