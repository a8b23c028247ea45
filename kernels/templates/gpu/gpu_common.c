/* kernels/templates/gpu/gpu_common.c: dialect preludes, the loop-nest emitter, launch
 * checks and the NCHW output tiling
 * (head, store, checks, features) shared by the GPU templates. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/templates/gpu/gpu.h"

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
    for (int i = 0; i < indent; i++)
        StrBuf_append(sb, "    ");
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
    for (int i = 0; i < n; i++)
        nest *= loops[i].extent;
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

/* One memory limit of Gpu_checkLaunch (limit <= 0: unknown, not checked). */
static bool bytes_fit(const char *what, int64_t bytes, int64_t limit, char *reason, size_t n) {
    if (limit <= 0 || bytes <= limit) return true;
    char a[32], b[32];
    Gpu_formatKiB(bytes, a, sizeof a);
    Gpu_formatKiB(limit, b, sizeof b);
    snprintf(reason, n, "%s %s > %s", what, a, b);
    return false;
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
            snprintf(reason, n, "threads per block %lld > %d (%lld threads x %lld virtual threads)", (long long)counted,
                     dev->max_threads_per_block, (long long)threads, (long long)vthreads);
        else
            snprintf(reason, n, "threads per block %lld > %d", (long long)counted, dev->max_threads_per_block);
        return false;
    }
    if (!bytes_fit("shared memory", shared_bytes, dev->max_shared_bytes_per_block, reason, n) ||
        !bytes_fit("local memory per thread", local_bytes, dev->max_local_bytes_per_thread, reason, n))
        return false;
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

int Gpu_launchFeatures(const int64_t block[3], int64_t vthreads, const int64_t grid[3], int64_t shared_bytes,
                       int64_t tile_floats, float *out, int cap) {
    float f[5];
    f[0] = (float)log2((double)(block[0] * block[1] * block[2]));
    f[1] = (float)log2((double)(vthreads > 0 ? vthreads : 1));
    f[2] = (float)shared_bytes / 1024.0f;
    f[3] = (float)log2((double)(tile_floats > 0 ? tile_floats : 1));
    f[4] = (float)log2((double)(grid[0] * grid[1] * grid[2]));
    int n = cap < 5 ? cap : 5;
    for (int i = 0; i < n; i++)
        out[i] = f[i];
    return n;
}

#define L(v) ((long long)(v))

void Gpu_appendFused(StrBuf *body, const Workload *wl, const char *channel) {
    if (wl->bias) StrBuf_printf(body, "v += bias[%s];\n", channel);
    if (wl->residual) StrBuf_append(body, "v += residual[o];\n");
    if (wl->relu || wl->relu6) StrBuf_append(body, "v = v > 0.0f ? v : 0.0f;\n");
    if (wl->relu6) StrBuf_append(body, "v = v < 6.0f ? v : 6.0f;\n");
}

void Gpu_tileGeometry(const int64_t f[4], const int64_t y[4], const int64_t x[4], int64_t batch, int64_t grid[3],
                      int64_t block[3]) {
    block[0] = x[2], block[1] = y[2], block[2] = f[2];
    grid[0] = x[0], grid[1] = y[0], grid[2] = f[0] * batch;
}

/* Register-tile floats per thread: every virtual thread's inner extents. */
static int64_t tile_floats(const int64_t f[4], const int64_t y[4], const int64_t x[4]) {
    return f[1] * f[3] * y[1] * y[3] * x[1] * x[3];
}

bool Gpu_checkTile(const DeviceInfo *dev, const int64_t f[4], const int64_t y[4], const int64_t x[4], int64_t batch,
                   int64_t shared_bytes, char *reason, size_t n) {
    int64_t grid[3], block[3];
    Gpu_tileGeometry(f, y, x, batch, grid, block);
    return Gpu_checkLaunch(dev, block, f[1] * y[1] * x[1], grid, shared_bytes, 4 * tile_floats(f, y, x), reason, n);
}

int Gpu_tileFeatures(const int64_t f[4], const int64_t y[4], const int64_t x[4], int64_t batch, int64_t shared_bytes,
                     float *out, int cap) {
    int64_t grid[3], block[3];
    Gpu_tileGeometry(f, y, x, batch, grid, block);
    return Gpu_launchFeatures(block, f[1] * y[1] * x[1], grid, shared_bytes, tile_floats(f, y, x), out, cap);
}

void Gpu_emitTileHead(StrBuf *sb, const char *entry, const Workload *wl, const int64_t f[4], const int64_t y[4],
                      const int64_t x[4], int64_t a_size, int64_t w_size, const GpuUnroll *unroll) {
    StrBuf_printf(sb, "TT_KERNEL(%lld, %lld, %lld) %s", L(x[2]), L(y[2]), L(f[2]), entry);
    Gpu_appendParams(sb, wl);
    StrBuf_append(sb, " {\n");
    StrBuf_printf(sb, "    SHARED float AA[%lld];\n", L(a_size));
    StrBuf_printf(sb, "    SHARED float WW[%lld];\n", L(w_size));
    StrBuf_printf(sb, "    float acc[%lld];\n", L(tile_floats(f, y, x)));
    StrBuf_append(sb, "    const int tx = TIDX_X, ty = TIDX_Y, tz = TIDX_Z;\n");
    StrBuf_printf(sb, "    const int tid = (tz * %lld + ty) * %lld + tx;\n", L(y[2]), L(x[2]));
    StrBuf_printf(sb, "    const int nb = BIDX_Z / %lld, bf = BIDX_Z %% %lld;\n", L(f[0]), L(f[0]));
    StrBuf_printf(sb, "    const int f0 = bf * %lld, y0 = BIDX_Y * %lld, x0 = BIDX_X * %lld;\n", L(f[1] * f[2] * f[3]),
                  L(y[1] * y[2] * y[3]), L(x[1] * x[2] * x[3]));
    StrBuf_printf(sb, "    GLOBAL const float *dn = data + nb * %lld;\n", L(wl->ci * wl->h * wl->w));
    GpuLoop init[] = {{"i", tile_floats(f, y, x)}};
    Gpu_emitNest(sb, init, 1, "acc[i] = 0.0f;", unroll, 1);
}

void Gpu_emitTileStore(StrBuf *sb, const Workload *wl, const int64_t f[4], const int64_t y[4], const int64_t x[4],
                       int64_t co, const GpuUnroll *unroll) {
    StrBuf body;
    StrBuf_init(&body);
    StrBuf_printf(&body,
                  "const int f = f0 + vf * %lld + tz * %lld + fi;\n"
                  "const int oy = y0 + vy * %lld + ty * %lld + yi;\n"
                  "const int ox = x0 + vx * %lld + tx * %lld + xi;\n"
                  "const int o = ((nb * %lld + f) * %lld + oy) * %lld + ox;\n"
                  "float v = acc[((vf * %lld + fi) * %lld + vy * %lld + yi) * %lld + vx * %lld + xi];\n",
                  L(f[2] * f[3]), L(f[3]), L(y[2] * y[3]), L(y[3]), L(x[2] * x[3]), L(x[3]), L(co),
                  L(Workload_outH(wl)), L(Workload_outW(wl)), L(f[3]), L(y[1] * y[3]), L(y[3]), L(x[1] * x[3]),
                  L(x[3]));
    Gpu_appendFused(&body, wl, "f");
    StrBuf_append(&body, "out[o] = v;");
    GpuLoop epi[] = {{"vf", f[1]}, {"fi", f[3]}, {"vy", y[1]}, {"yi", y[3]}, {"vx", x[1]}, {"xi", x[3]}};
    Gpu_emitNest(sb, epi, 6, body.data, unroll, 1);
    StrBuf_append(sb, "}\n");
    StrBuf_done(&body);
}
