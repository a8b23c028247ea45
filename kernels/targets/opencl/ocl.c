/* kernels/targets/opencl/ocl.c: device, build, launch and profiling-event timing for
 * OpenCL (see ocl.h). */
#ifdef TT_HAVE_OPENCL

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/targets/opencl/ocl.h"

const char *Ocl_errorName(cl_int e) {
    switch (e) {
    case CL_SUCCESS:
        return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND:
        return "CL_DEVICE_NOT_FOUND";
    case CL_OUT_OF_RESOURCES:
        return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:
        return "CL_OUT_OF_HOST_MEMORY";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_BUILD_PROGRAM_FAILURE:
        return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:
        return "CL_INVALID_VALUE";
    case CL_INVALID_BINARY:
        return "CL_INVALID_BINARY";
    case CL_INVALID_PROGRAM_EXECUTABLE:
        return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME:
        return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS:
        return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE:
        return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE:
        return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE:
        return "CL_INVALID_GLOBAL_WORK_SIZE";
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL platform installed)";
    default:
        return "OpenCL error";
    }
}

#define OCL_MAX_DEVICES 64

/* The devices of one type on every platform, in platform order; returns the count. */
static int list_type(cl_device_type type, cl_platform_id *plat, cl_device_id *dev, int max) {
    cl_uint np = 0;
    if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) return 0;
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    clGetPlatformIDs(np, plats, NULL);
    int n = 0;
    for (cl_uint i = 0; i < np && n < max; i++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[i], type, (cl_uint)(max - n), dev + n, &nd) != CL_SUCCESS) continue;
        if (nd > (cl_uint)(max - n)) nd = (cl_uint)(max - n);
        for (cl_uint k = 0; k < nd; k++)
            plat[n + (int)k] = plats[i];
        n += (int)nd;
    }
    return n;
}

/* tunetop's numbering (ocl.h): the GPUs, or every device when there is none. */
static int list_devices(cl_platform_id *plat, cl_device_id *dev) {
    int n = list_type(CL_DEVICE_TYPE_GPU, plat, dev, OCL_MAX_DEVICES);
    return n ? n : list_type(CL_DEVICE_TYPE_ALL, plat, dev, OCL_MAX_DEVICES);
}

int OclDevice_count(void) {
    cl_platform_id plat[OCL_MAX_DEVICES];
    cl_device_id dev[OCL_MAX_DEVICES];
    return list_devices(plat, dev);
}

Status OclDevice_open(OclDevice *this, char *err) {
    memset(this, 0, sizeof *this);
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(0, NULL, &np);
    if (e != CL_SUCCESS || np == 0)
        return tt_fail(err, "opencl: no OpenCL platform found (%s); install an ICD such as pocl-opencl-icd",
                       e != CL_SUCCESS ? Ocl_errorName(e) : "0 platforms");
    cl_platform_id plat[OCL_MAX_DEVICES];
    cl_device_id dev[OCL_MAX_DEVICES];
    int nd = list_devices(plat, dev);
    if (nd == 0) return tt_fail(err, "opencl: %u platform(s) but no OpenCL device", np);
    const char *pick = getenv("TUNETOP_OPENCL_DEVICE");
    int index = pick && *pick ? atoi(pick) : 0;
    if (index < 0 || index >= nd)
        return tt_fail(err, "opencl: no device %d (TUNETOP_OPENCL_DEVICE): this node has %d", index, nd);
    this->platform = plat[index];
    this->device = dev[index];
    this->ctx = clCreateContext(NULL, 1, &this->device, NULL, NULL, &e);
    if (!this->ctx) return tt_fail(err, "opencl: clCreateContext failed: %s", Ocl_errorName(e));
    this->queue = clCreateCommandQueue(this->ctx, this->device, CL_QUEUE_PROFILING_ENABLE, &e);
    if (!this->queue) {
        clReleaseContext(this->ctx);
        this->ctx = NULL;
        return tt_fail(err, "opencl: clCreateCommandQueue failed: %s", Ocl_errorName(e));
    }
    return TT_OK;
}

void OclDevice_close(OclDevice *this) {
    if (this->queue) clReleaseCommandQueue(this->queue);
    if (this->ctx) clReleaseContext(this->ctx);
    memset(this, 0, sizeof *this);
}

void OclDevice_info(const OclDevice *this, DeviceInfo *out) {
    memset(out, 0, sizeof *out);
    char name[256] = "", plat[256] = "";
    clGetDeviceInfo(this->device, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetPlatformInfo(this->platform, CL_PLATFORM_NAME, sizeof plat, plat, NULL);
    snprintf(out->name, sizeof out->name, "%.80s (%.40s)", name, plat);
    snprintf(out->arch, sizeof out->arch, "opencl");
    out->present = true;
    size_t wg = 0, items[3] = {0, 0, 0};
    cl_ulong local = 0, global = 0;
    cl_uint cus = 0;
    clGetDeviceInfo(this->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    clGetDeviceInfo(this->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL);
    clGetDeviceInfo(this->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    clGetDeviceInfo(this->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    clGetDeviceInfo(this->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
    out->max_threads_per_block = (int)(wg > 1u << 30 ? 1u << 30 : wg);
    for (int i = 0; i < 3; i++)
        out->max_block_dim[i] = (int)(items[i] > 1u << 30 ? 1u << 30 : items[i]);
    out->max_shared_bytes_per_block = (int64_t)local;
    out->global_mem_bytes = (int64_t)global;
    out->multiprocessors = (int)cus;
    out->cores = (int)cus;
}

static char *program_log(const OclDevice *dev, cl_program prog, const char *head) {
    size_t n = 0;
    clGetProgramBuildInfo(prog, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    size_t hl = head ? strlen(head) : 0;
    char *log = malloc(hl + n + 2);
    if (!log) abort();
    if (hl) memcpy(log, head, hl);
    log[hl] = '\0';
    if (n > 1) clGetProgramBuildInfo(prog, dev->device, CL_PROGRAM_BUILD_LOG, n, log + hl, NULL);
    log[hl + n] = '\0';
    /* trim trailing blank lines */
    size_t len = strlen(log);
    while (len > 0 && (log[len - 1] == '\n' || log[len - 1] == ' '))
        log[--len] = '\0';
    if (len == 0) {
        free(log);
        return NULL;
    }
    return log;
}

static Status finish_build(const OclDevice *dev, cl_program prog, cl_program *out, char **log) {
    cl_int e = clBuildProgram(prog, 1, &dev->device, "-cl-std=CL1.2", NULL, NULL);
    if (e != CL_SUCCESS) {
        char head[96];
        snprintf(head, sizeof head, "clBuildProgram: %s\n", Ocl_errorName(e));
        *log = program_log(dev, prog, head);
        clReleaseProgram(prog);
        return TT_ERR;
    }
    *log = program_log(dev, prog, NULL);
    *out = prog;
    return TT_OK;
}

Status Ocl_buildSource(const OclDevice *dev, const char *source, cl_program *out, char **log) {
    cl_int e;
    *log = NULL;
    cl_program prog = clCreateProgramWithSource(dev->ctx, 1, &source, NULL, &e);
    if (!prog) {
        char buf[96];
        snprintf(buf, sizeof buf, "clCreateProgramWithSource: %s", Ocl_errorName(e));
        *log = strdup(buf);
        return TT_ERR;
    }
    return finish_build(dev, prog, out, log);
}

Status Ocl_buildBinary(const OclDevice *dev, const unsigned char *bin, size_t len, cl_program *out, char **log) {
    cl_int e, st;
    *log = NULL;
    cl_program prog = clCreateProgramWithBinary(dev->ctx, 1, &dev->device, &len, &bin, &st, &e);
    if (!prog) {
        char buf[96];
        snprintf(buf, sizeof buf, "clCreateProgramWithBinary: %s", Ocl_errorName(e));
        *log = strdup(buf);
        return TT_ERR;
    }
    return finish_build(dev, prog, out, log);
}

unsigned char *Ocl_programBinary(cl_program prog, size_t *len) {
    size_t n = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS || n == 0) return NULL;
    unsigned char *bin = malloc(n);
    if (!bin) abort();
    unsigned char *ptrs[1] = {bin};
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof ptrs, ptrs, NULL) != CL_SUCCESS) {
        free(bin);
        return NULL;
    }
    *len = n;
    return bin;
}

/* A device buffer of n floats: a copy of host, or NaN-filled (an element a
 * kernel forgets to write cannot pass the check). */
static cl_mem device_buffer(const OclDevice *dev, const float *host, size_t n, char *err) {
    cl_int e;
    size_t bytes = (n ? n : 1) * sizeof(float);
    cl_mem m = clCreateBuffer(dev->ctx, host ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR : CL_MEM_READ_WRITE, bytes,
                              (void *)host, &e);
    if (!m) return tt_fail(err, "clCreateBuffer (%zu bytes): %s", bytes, Ocl_errorName(e)), NULL;
    float nan = NAN;
    if (!host && (e = clEnqueueFillBuffer(dev->queue, m, &nan, sizeof nan, 0, bytes, 0, NULL, NULL)) != CL_SUCCESS) {
        clReleaseMemObject(m);
        return tt_fail(err, "clEnqueueFillBuffer: %s", Ocl_errorName(e)), NULL;
    }
    return m;
}

Status OclExec_initPlan(OclExec *this, const OclDevice *dev, cl_program prog, const LaunchPlan *plan,
                        float *const *args, const size_t *counts, int nargs, char *err) {
    memset(this, 0, sizeof *this);
    this->dev = dev;
    this->out = nargs - 1;
    this->out_bytes = counts[nargs - 1] * sizeof(float);
    cl_mem param[PLAN_MAX_PARAMS];
    for (int i = 0; i < nargs; i++) {
        this->bufs[this->n_bufs] = device_buffer(dev, i == nargs - 1 ? NULL : args[i], counts[i], err);
        if (!this->bufs[this->n_bufs++]) goto fail;
    }
    for (int i = 0; i < plan->n_params; i++) {
        if (plan->param[i] >= nargs) {
            tt_fail(err, "launch plan: argument %d of %d", plan->param[i], nargs);
            goto fail;
        }
        if (plan->param[i] < 0) {
            if (this->n_bufs == PLAN_MAX_PARAMS) {
                tt_fail(err, "launch plan: too many buffers");
                goto fail;
            }
            this->bufs[this->n_bufs] = device_buffer(dev, NULL, (size_t)plan->scratch[i], err);
            if (!this->bufs[this->n_bufs++]) goto fail;
        }
        param[i] = plan->param[i] >= 0 ? this->bufs[plan->param[i]] : this->bufs[this->n_bufs - 1];
    }
    for (int k = 0; k < plan->n_launches; k++) {
        const PlanLaunch *l = &plan->launch[k];
        cl_int e;
        cl_kernel kern = this->kernel[this->n_kernels++] = clCreateKernel(prog, l->entry, &e);
        if (!kern) {
            this->n_kernels--;
            tt_fail(err, "clCreateKernel(%s): %s", l->entry, Ocl_errorName(e));
            goto fail;
        }
        for (int i = 0; i < plan->n_params; i++)
            if ((e = clSetKernelArg(kern, (cl_uint)i, sizeof(cl_mem), &param[i])) != CL_SUCCESS) {
                tt_fail(err, "clSetKernelArg(%s, %d): %s", l->entry, i, Ocl_errorName(e));
                goto fail;
            }
        for (int a = 0; a < 3; a++) {
            this->local[k][a] = (size_t)l->block[a];
            this->global[k][a] = (size_t)(l->grid[a] * l->block[a]);
        }
    }
    return TT_OK;
fail:
    OclExec_done(this);
    return TT_ERR;
}

Status OclExec_init(OclExec *this, const OclDevice *dev, cl_program prog, const char *entry, const int64_t grid[3],
                    const int64_t block[3], float *const *args, const size_t *counts, int nargs, char *err) {
    LaunchPlan plan = {.n_params = nargs, .n_launches = 1};
    for (int i = 0; i < nargs; i++)
        plan.param[i] = i;
    snprintf(plan.launch[0].entry, sizeof plan.launch[0].entry, "%s", entry);
    for (int a = 0; a < 3; a++)
        plan.launch[0].grid[a] = grid[a], plan.launch[0].block[a] = block[a];
    return OclExec_initPlan(this, dev, prog, &plan, args, counts, nargs, err);
}

Status OclExec_run(OclExec *this, int n, double *device_s, char *err) {
    cl_event first = NULL, last = NULL;
    for (int i = 0; i < n * this->n_kernels; i++) {
        int k = i % this->n_kernels;
        cl_event ev;
        cl_int e = clEnqueueNDRangeKernel(this->dev->queue, this->kernel[k], 3, NULL, this->global[k], this->local[k],
                                          0, NULL, &ev);
        if (e != CL_SUCCESS) {
            if (first) clReleaseEvent(first);
            if (last && last != first) clReleaseEvent(last);
            clFinish(this->dev->queue);
            return tt_fail(err, "clEnqueueNDRangeKernel: %s", Ocl_errorName(e));
        }
        if (!first) {
            first = ev;
        } else {
            if (last) clReleaseEvent(last);
            last = ev;
        }
    }
    if (!last) last = first;
    cl_int e = clFinish(this->dev->queue);
    Status st = TT_OK;
    if (e != CL_SUCCESS) {
        st = tt_fail(err, "clFinish: %s", Ocl_errorName(e));
    } else if (device_s && first) {
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        *device_s = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
    }
    if (first) clReleaseEvent(first);
    if (last && last != first) clReleaseEvent(last);
    return st;
}

Status OclExec_readOutput(OclExec *this, float *out, char *err) {
    cl_int e =
        clEnqueueReadBuffer(this->dev->queue, this->bufs[this->out], CL_TRUE, 0, this->out_bytes, out, 0, NULL, NULL);
    if (e != CL_SUCCESS) return tt_fail(err, "clEnqueueReadBuffer: %s", Ocl_errorName(e));
    return TT_OK;
}

void OclExec_done(OclExec *this) {
    for (int i = 0; i < this->n_bufs; i++)
        if (this->bufs[i]) clReleaseMemObject(this->bufs[i]);
    for (int k = 0; k < this->n_kernels; k++)
        clReleaseKernel(this->kernel[k]);
    memset(this, 0, sizeof *this);
}

#endif
