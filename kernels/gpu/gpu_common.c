/* kernels/gpu/gpu_common.c: dialect preludes, the loop-nest emitter, launch
 * checks and the per-architecture limits table shared by the GPU templates. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/gpu/gpu.h"

static const char PRELUDE_CUDA[] =
    "/* tunetop GPU prelude: CUDA */\n"
    "#define TT_KERNEL(x, y, z) extern \"C\" __global__ void __launch_bounds__((x) * (y) * (z))\n"
    "#define GLOBAL\n"
    "#define RESTRICT __restrict__\n"
    "#define SHARED __shared__\n"
    "#define BARRIER() __syncthreads()\n"
    "#define BIDX_X ((int)blockIdx.x)\n"
    "#define BIDX_Y ((int)blockIdx.y)\n"
    "#define BIDX_Z ((int)blockIdx.z)\n"
    "#define TIDX_X ((int)threadIdx.x)\n"
    "#define TIDX_Y ((int)threadIdx.y)\n"
    "#define TIDX_Z ((int)threadIdx.z)\n"
    "#define TT_UNROLL _Pragma(\"unroll\")\n"
    "\n";

static const char PRELUDE_OPENCL[] =
    "/* tunetop GPU prelude: OpenCL C */\n"
    "#define TT_KERNEL(x, y, z) __kernel __attribute__((reqd_work_group_size(x, y, z))) void\n"
    "#define GLOBAL __global\n"
    "#define RESTRICT restrict\n"
    "#define SHARED __local\n"
    "#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)\n"
    "#define BIDX_X ((int)get_group_id(0))\n"
    "#define BIDX_Y ((int)get_group_id(1))\n"
    "#define BIDX_Z ((int)get_group_id(2))\n"
    "#define TIDX_X ((int)get_local_id(0))\n"
    "#define TIDX_Y ((int)get_local_id(1))\n"
    "#define TIDX_Z ((int)get_local_id(2))\n"
    "#define TT_UNROLL _Pragma(\"unroll\")\n"
    "\n";

const char *Gpu_prelude(Dialect dialect) { return dialect == DIALECT_OPENCL ? PRELUDE_OPENCL : PRELUDE_CUDA; }

void Gpu_appendParams(StrBuf *sb, const Workload *wl) {
    ArgInfo args[WORKLOAD_MAX_ARGS];
    int n = Workload_args(wl, args);
    StrBuf_append(sb, "(");
    for (int i = 0; i < n; i++) {
        bool out = i == n - 1;
        StrBuf_printf(sb, "%sGLOBAL %sfloat *RESTRICT %s", i ? ", " : "", out ? "" : "const ", args[i].name);
    }
    StrBuf_append(sb, ")");
}

static void indent_to(StrBuf *sb, int indent) {
    for (int i = 0; i < indent; i++) StrBuf_append(sb, "    ");
}

/* Appends body, re-indented line by line. */
static void append_body(StrBuf *sb, const char *body, int indent) {
    const char *p = body;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len) {
            indent_to(sb, indent);
            StrBuf_appendn(sb, p, len);
        }
        StrBuf_append(sb, "\n");
        p += len + (nl ? 1 : 0);
    }
}

void Gpu_emitNest(StrBuf *sb, const GpuLoop *loops, int n, const char *body, const GpuUnroll *unroll, int indent) {
    if (n == 0) {
        append_body(sb, body, indent);
        return;
    }
    int64_t nest = 1;
    for (int i = 0; i < n; i++) nest *= loops[i].extent;
    const GpuLoop *l = &loops[0];
    bool unrolled = unroll && unroll->max_step > 0 && nest <= unroll->max_step;
    if (l->extent == 1 || (unrolled && unroll->explicit_)) {
        /* Each copy binds the variable to a constant the compiler folds. */
        for (int64_t k = 0; k < l->extent; k++) {
            indent_to(sb, indent);
            StrBuf_printf(sb, "{ const int %s = %lld;\n", l->var, (long long)k);
            Gpu_emitNest(sb, loops + 1, n - 1, body, unroll, indent + 1);
            indent_to(sb, indent);
            StrBuf_append(sb, "}\n");
        }
        return;
    }
    if (unrolled) {
        indent_to(sb, indent);
        StrBuf_append(sb, "TT_UNROLL\n");
    }
    indent_to(sb, indent);
    StrBuf_printf(sb, "for (int %s = 0; %s < %lld; ++%s) {\n", l->var, l->var, (long long)l->extent, l->var);
    Gpu_emitNest(sb, loops + 1, n - 1, body, unroll, indent + 1);
    indent_to(sb, indent);
    StrBuf_append(sb, "}\n");
}

void Gpu_formatKiB(int64_t bytes, char *buf, size_t n) {
    if (bytes % 1024 == 0)
        snprintf(buf, n, "%lld KiB", (long long)(bytes / 1024));
    else
        snprintf(buf, n, "%.1f KiB", (double)bytes / 1024.0);
}

bool Gpu_checkLaunch(const DeviceInfo *dev, const int64_t block[3], int64_t vthreads, const int64_t grid[3],
                     int64_t shared_bytes, int64_t local_bytes, char *reason, size_t n) {
    static const char AXIS[3] = {'x', 'y', 'z'};
    for (int i = 0; i < 3; i++) {
        if (dev->max_block_dim[i] > 0 && block[i] > dev->max_block_dim[i]) {
            snprintf(reason, n, "thread %c %lld > %d", AXIS[i], (long long)block[i], dev->max_block_dim[i]);
            return false;
        }
    }
    int64_t threads = block[0] * block[1] * block[2];
    int64_t counted = threads * (vthreads > 0 ? vthreads : 1);
    if (counted > dev->max_threads_per_block) {
        if (counted != threads)
            snprintf(reason, n, "threads per block %lld > %d (%lld threads x %lld virtual threads)",
                     (long long)counted, dev->max_threads_per_block, (long long)threads, (long long)vthreads);
        else
            snprintf(reason, n, "threads per block %lld > %d", (long long)counted, dev->max_threads_per_block);
        return false;
    }
    if (dev->max_shared_bytes_per_block > 0 && shared_bytes > dev->max_shared_bytes_per_block) {
        char a[32], b[32];
        Gpu_formatKiB(shared_bytes, a, sizeof a);
        Gpu_formatKiB(dev->max_shared_bytes_per_block, b, sizeof b);
        snprintf(reason, n, "shared memory %s > %s", a, b);
        return false;
    }
    if (dev->max_local_bytes_per_thread > 0 && local_bytes > dev->max_local_bytes_per_thread) {
        char a[32], b[32];
        Gpu_formatKiB(local_bytes, a, sizeof a);
        Gpu_formatKiB(dev->max_local_bytes_per_thread, b, sizeof b);
        snprintf(reason, n, "local memory per thread %s > %s", a, b);
        return false;
    }
    /* Grid limits of CUDA (x: 2^31-1, y and z: 65535); OpenCL devices have no
     * smaller ones in practice. */
    static const int64_t GRID_MAX[3] = {2147483647LL, 65535, 65535};
    for (int i = 0; i < 3; i++) {
        if (grid[i] > GRID_MAX[i]) {
            snprintf(reason, n, "grid %c %lld > %lld", AXIS[i], (long long)grid[i], (long long)GRID_MAX[i]);
            return false;
        }
    }
    return true;
}

typedef struct ArchRow {
    const char *arch;
    const char *example;
    int major, minor;
    int sms;
} ArchRow;

/* Every architecture from Volta to Hopper has 64 Ki registers per SM, at most
 * 255 per thread, 1024 threads per block and 48 KiB of static shared memory per
 * block (more needs dynamic shared memory and an opt-in, which the templates
 * do not use). The SM count is that of the architecture's flagship part. */
static const ArchRow ARCHS[] = {
    {"sm_70", "V100", 7, 0, 80},     {"sm_75", "T4", 7, 5, 40},        {"sm_80", "A100", 8, 0, 108},
    {"sm_86", "RTX 3090", 8, 6, 82}, {"sm_89", "RTX 4090", 8, 9, 128}, {"sm_90", "H100", 9, 0, 132},
};

Status Gpu_archInfo(const char *arch, DeviceInfo *out, char *err) {
    if (!arch || !arch[0]) arch = "sm_90";
    const ArchRow *row = NULL;
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++)
        if (strcmp(ARCHS[i].arch, arch) == 0) row = &ARCHS[i];
    if (!row) return tt_fail(err, "unknown CUDA architecture '%s' (known: sm_70 sm_75 sm_80 sm_86 sm_89 sm_90)", arch);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "offline %s (%s-class limits, no device)", row->arch, row->example);
    snprintf(out->arch, sizeof out->arch, "%s", row->arch);
    out->present = false;
    out->sm_major = row->major;
    out->sm_minor = row->minor;
    out->max_threads_per_block = 1024;
    out->max_block_dim[0] = 1024;
    out->max_block_dim[1] = 1024;
    out->max_block_dim[2] = 64;
    out->max_shared_bytes_per_block = 48 * 1024;
    out->regs_per_sm = 65536;
    out->max_regs_per_thread = 255;
    out->max_local_bytes_per_thread = 512 * 1024;
    out->multiprocessors = row->sms;
    return TT_OK;
}

int Gpu_launchFeatures(const int64_t block[3], int64_t vthreads, const int64_t grid[3], int64_t shared_bytes,
                       int64_t tile_floats, float *out, int cap) {
    float f[5];
    f[0] = (float)log2((double)(block[0] * block[1] * block[2]));
    f[1] = (float)log2((double)(vthreads > 0 ? vthreads : 1));
    f[2] = (float)shared_bytes / 1024.0f;
    f[3] = (float)log2((double)(tile_floats > 0 ? tile_floats : 1));
    f[4] = (float)log2((double)(grid[0] * grid[1] * grid[2]));
    int n = cap < 5 ? cap : 5;
    for (int i = 0; i < n; i++) out[i] = f[i];
    return n;
}
