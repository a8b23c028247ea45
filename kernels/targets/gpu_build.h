/* kernels/targets/gpu_build.h: what the GPU targets (cuda, opencl) share:
 * a device compile with a deadline (gpu_build.c) and reading a built
 * artifact back in the measurement worker. */
#ifndef TT_KERNELS_TARGETS_GPU_BUILD_H
#define TT_KERNELS_TARGETS_GPU_BUILD_H

#include <stdbool.h>
#include <stddef.h>

/* Runs work(arg) on a detached helper thread and waits at most timeout_s for
 * it (timeout_s <= 0: no limit). Device compilers (NVRTC, an OpenCL runtime's
 * clBuildProgram) cannot be interrupted, so past the timeout the helper is
 * abandoned: it runs to completion in the background and then calls
 * drop(arg), which must free everything arg owns. Returns true when work
 * finished in time (the caller then owns arg again), false when abandoned
 * (the caller must not touch arg any more). */
bool Gpu_runTimed(void (*work)(void *arg), void (*drop)(void *arg), void *arg, double timeout_s);

/* Number of abandoned compiles still running in the background. */
int Gpu_abandonedRunning(void);

/* The whole file at path (a cubin or program binary a GPU target wrote, read
 * back by the measurement worker), malloc'd (the caller frees it) with its
 * size in *len; NULL when missing, empty or unreadable. */
void *Gpu_readFile(const char *path, size_t *len);

#endif
