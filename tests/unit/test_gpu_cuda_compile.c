/* tests/unit/test_gpu_cuda_compile.c: the GPU templates through the cuda
 * target's real compiler (NVRTC + nvJitLink) for sm_90, with no device.
 *
 * For every GPU template on small shapes, random configs are either rejected
 * by the precheck with a numeric reason, or compile with their resources
 * (registers, shared bytes, spills) read from ptxas's log, or are rejected
 * after the compile for resources only (register file): never a compile
 * error, never a failure the precheck should have caught. Two builder threads
 * share the work, as the engine's pool would. TT_GPU_CONFIGS overrides the
 * number per template (default 30, so the unit run stays short;
 * tests/integration/test_gpu_cuda_compile_full.sh runs 200). */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/rng.h"
#include "kernels/target.h"
#include "kernels/template.h"
#include "tests/check.h"

/* Under AddressSanitizer: PoCL's LLVM and NVRTC keep allocations past exit
 * (third-party, seen on a cold PoCL kernel cache); they are not tunetop's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
    return "leak:libpocl.so\nleak:libLLVM\nleak:libnvrtc\nleak:libnvJitLink\nleak:libcudart\n";
}

extern const Template tmpl_conv2d_gpu;
extern const Target target_cuda;

static DeviceInfo dev;
static atomic_ulong next_tag;
static char workdir[] = "/tmp/tt_gpu_cuda_XXXXXX";

static bool has_number_gt(const char *s) {
    const char *gt = strstr(s, " > ");
    if (!gt) return false;
    bool before = false;
    for (const char *p = s; p < gt; p++)
        before |= isdigit((unsigned char)*p) != 0;
    return before && isdigit((unsigned char)gt[3]);
}

typedef struct Case {
    const char *spec;
    const Template *tmpl;
    Workload wl;
    Space space;
    uint64_t *idx;
    int n;
    atomic_int next;
    atomic_int compiled, prechecked, post_rejected, failed;
    atomic_int max_regs, spilled;
} Case;

static void *worker(void *p) {
    Case *c = p;
    char reason[256];
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.build_timeout_s = 600; /* a bound for a hang, not a speed check: NVRTC is slow on a loaded machine */
    for (;;) {
        int i = atomic_fetch_add(&c->next, 1);
        if (i >= c->n) break;
        int32_t choice[SPACE_MAX_KNOBS];
        Space_decode(&c->space, c->idx[i], choice);
        char cfg[512];
        Space_format(&c->space, choice, cfg, sizeof cfg);
        if (!c->tmpl->precheck(&c->wl, &c->space, choice, &dev, reason, sizeof reason)) {
            if (!has_number_gt(reason)) {
                fprintf(stderr, "%s: precheck reason without numbers: \"%s\" (%s)\n", c->spec, reason, cfg);
                atomic_fetch_add(&c->failed, 1);
            }
            atomic_fetch_add(&c->prechecked, 1);
            continue;
        }
        KernelSource src;
        KernelSource_init(&src);
        char err[TT_ERRLEN];
        if (c->tmpl->generate(&c->wl, &c->space, choice, &dev, DIALECT_CUDA, &src, err) != TT_OK) {
            fprintf(stderr, "%s: generate failed: %s (%s)\n", c->spec, err, cfg);
            atomic_fetch_add(&c->failed, 1);
            continue;
        }
        BuildResult br;
        BuildResult_init(&br);
        target_cuda.build(&src, &dev, &opt, workdir, atomic_fetch_add(&next_tag, 1), &br);
        if (br.error_no == ERR_NO_ERROR) {
            if (br.regs_per_thread <= 0 || br.shared_bytes < 0 || br.spill_bytes < 0 || !br.path[0] ||
                access(br.path, R_OK) != 0) {
                fprintf(stderr, "%s: compiled without resources (regs %d shared %lld spill %d path '%s')\n", c->spec,
                        br.regs_per_thread, (long long)br.shared_bytes, br.spill_bytes, br.path);
                atomic_fetch_add(&c->failed, 1);
            } else if (br.shared_bytes > src.shared_bytes + 1024 || br.shared_bytes < src.shared_bytes) {
                fprintf(stderr, "%s: ptxas shared %lld vs template %lld (%s)\n", c->spec, (long long)br.shared_bytes,
                        (long long)src.shared_bytes, cfg);
                atomic_fetch_add(&c->failed, 1);
            } else {
                atomic_fetch_add(&c->compiled, 1);
                int m = atomic_load(&c->max_regs);
                while (br.regs_per_thread > m && !atomic_compare_exchange_weak(&c->max_regs, &m, br.regs_per_thread)) {
                }
                if (br.spill_bytes > 0) atomic_fetch_add(&c->spilled, 1);
            }
        } else if (br.error_no == ERR_INSTANTIATION && br.msg && strstr(br.msg, "register") && has_number_gt(br.msg)) {
            atomic_fetch_add(&c->post_rejected, 1);
        } else {
            fprintf(stderr, "%s: build error %s: %.600s\n(%s)\n", c->spec, MeasureError_name(br.error_no),
                    br.msg ? br.msg : "", cfg);
            atomic_fetch_add(&c->failed, 1);
        }
        BuildResult_done(&br);
        KernelSource_done(&src);
    }
    return NULL;
}

static void run_case(const char *spec, int n) {
    Case c;
    memset(&c, 0, sizeof c);
    c.spec = spec;
    char err[TT_ERRLEN];
    CHECK(Workload_parse(spec, &c.wl, err) == TT_OK);
    c.tmpl = Template_find(&c.wl, FAMILY_GPU, err);
    CHECK(c.tmpl != NULL);
    if (!c.tmpl) return;
    Space_init(&c.space);
    CHECK(c.tmpl->define_space(&c.wl, &dev, &c.space, err) == TT_OK);
    VisitedSet vs;
    VisitedSet_init(&vs);
    Rng rng;
    Rng_seed(&rng, 1234);
    c.idx = calloc((size_t)n, sizeof *c.idx);
    c.n = Space_sampleUnvisited(&c.space, &vs, &rng, c.idx, n);
    VisitedSet_done(&vs);
    double t0 = clock_mono();
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, worker, &c);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    double dt = clock_mono() - t0;
    printf("%-28s %-22s configs %3d: compiled %3d, precheck rejected %3d, register-file rejected %d, failed %d; "
           "max regs %d, %d spilled; %.1f s (%.1f compiles/s)\n",
           c.tmpl->name, spec, c.n, c.compiled, c.prechecked, c.post_rejected, c.failed, c.max_regs, c.spilled, dt,
           c.compiled / (dt > 0 ? dt : 1));
    CHECK_EQ_INT(c.failed, 0);
    CHECK(c.compiled > 0);
    CHECK_EQ_INT(c.compiled + c.prechecked + c.post_rejected + c.failed, c.n);
    free(c.idx);
    Space_done(&c.space);
}

static int n_configs(void) {
    const char *e = getenv("TT_GPU_CONFIGS");
    return e && atoi(e) > 0 ? atoi(e) : 30;
}

TEST(conv2d_configs) { run_case("conv2d:n=1,ci=4,h=5,w=5,co=8,kh=3,kw=3,stride=1,pad=1,bias=1,relu=1", n_configs()); }
TEST(depthwise_configs) { run_case("depthwise_conv2d:n=1,ci=4,h=7,w=7,mult=2,kh=3,kw=3,stride=2,pad=1", n_configs()); }
/* dense: its two variants share the template's count */
TEST(dense_small_configs) { run_case("dense:m=2,n=48,k=64,bias=1", (n_configs() + 1) / 2); }
TEST(dense_large_configs) { run_case("dense:m=32,n=16,k=8,relu=1", (n_configs() + 1) / 2); }

/* The seed 003 space: same knobs, lengths and total as the classic space. */
TEST(seed003_space) {
    Workload wl;
    char err[TT_ERRLEN];
    CHECK(Workload_parse("conv2d:n=1,ci=512,h=7,w=7,co=512,kh=3,kw=3,stride=1,pad=1", &wl, err) == TT_OK);
    Space s;
    Space_init(&s);
    CHECK(tmpl_conv2d_gpu.define_space(&wl, &dev, &s, err) == TT_OK);
    static const uint64_t LENS[] = {220, 4, 4, 55, 3, 3, 3, 2};
    static const char *NAMES[] = {
        "tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx", "auto_unroll_max_step", "unroll_explicit"};
    CHECK_EQ_INT(s.n_knobs, 8);
    for (int i = 0; i < 8 && i < s.n_knobs; i++) {
        CHECK_STR(s.knobs[i].name, NAMES[i]);
        CHECK_EQ_INT(s.knobs[i].len, LENS[i]);
    }
    CHECK_EQ_INT(s.total, 10454400);
    /* Seed 003's "No: 1" config is an invalid GPU kernel:
     * tile_f [1,8,8,8] x tile_y [1,7,1,1] x tile_x [1,7,1,1] counts 8 x 8*7*7 virtual threads. */
    int32_t choice[SPACE_MAX_KNOBS] = {0};
    for (uint64_t i = 0; i < s.knobs[0].len; i++) {
        const int64_t *f = s.knobs[0].factors + i * 4;
        if (f[0] == 1 && f[1] == 8 && f[2] == 8 && f[3] == 8) choice[0] = (int32_t)i;
    }
    for (uint64_t i = 0; i < s.knobs[1].len; i++) {
        const int64_t *f = s.knobs[1].factors + i * 4;
        if (f[1] == 7) choice[1] = choice[2] = (int32_t)i;
    }
    char reason[256] = "";
    CHECK(!tmpl_conv2d_gpu.precheck(&wl, &s, choice, &dev, reason, sizeof reason));
    CHECK_CONTAINS(reason, "threads per block 3136 > 1024");
    Space_done(&s);
}

/* A config by its split factors (each row: knob name then factors; options by value). */
static void pick(const Space *s, int32_t *choice, const char *name, const int64_t *want) {
    int k = Space_knobIndex(s, name);
    CHECK(k >= 0);
    if (k < 0) return;
    const Knob *kb = &s->knobs[k];
    for (uint64_t i = 0; i < kb->len; i++) {
        bool eq = true;
        if (kb->kind == KNOB_SPLIT) {
            for (int j = 0; j < kb->num_outputs; j++)
                eq &= kb->factors[i * kb->num_outputs + j] == want[j];
        } else {
            eq = kb->values[i] == want[0];
        }
        if (eq) {
            choice[k] = (int32_t)i;
            return;
        }
    }
    CHECK(!"config value not in the space");
}

/* Without compiling: on the seed 003 layer, every precheck verdict agrees with
 * the generated launch (accepted: within every limit; rejected: a numeric
 * reason naming a limit the launch really exceeds). */
/* Published limits of compute capability 9.0 (NVIDIA CUDA C++ Programming
 * Guide, "Technical Specifications per Compute Capability"), written here as
 * constants: the precheck is compared with them, not with tunetop's own
 * device table or formula. */
enum {
    PUB_THREADS_PER_BLOCK = 1024,
    PUB_BLOCK_X = 1024,
    PUB_BLOCK_Y = 1024,
    PUB_BLOCK_Z = 64,
    PUB_SHARED_PER_BLOCK = 48 * 1024, /* static shared memory per block, without the dynamic opt-in */
    PUB_GRID_YZ = 65535,
};
#define PUB_GRID_X 2147483647LL

/* What a launch on a compute capability 9.0 device accepts, by the published limits. */
static bool launchable(const KernelSource *src) {
    const int64_t *b = src->block, *g = src->grid;
    return b[0] <= PUB_BLOCK_X && b[1] <= PUB_BLOCK_Y && b[2] <= PUB_BLOCK_Z &&
           b[0] * b[1] * b[2] <= PUB_THREADS_PER_BLOCK && src->shared_bytes <= PUB_SHARED_PER_BLOCK &&
           g[0] <= PUB_GRID_X && g[1] <= PUB_GRID_YZ && g[2] <= PUB_GRID_YZ;
}

TEST(precheck_agrees_with_launch) {
    /* the sm_90 table holds the published figures */
    CHECK_EQ_INT(dev.max_threads_per_block, PUB_THREADS_PER_BLOCK);
    CHECK_EQ_INT(dev.max_block_dim[0], PUB_BLOCK_X);
    CHECK_EQ_INT(dev.max_block_dim[1], PUB_BLOCK_Y);
    CHECK_EQ_INT(dev.max_block_dim[2], PUB_BLOCK_Z);
    CHECK_EQ_INT(dev.max_shared_bytes_per_block, PUB_SHARED_PER_BLOCK);
    Workload wl;
    char err[TT_ERRLEN], reason[256];
    CHECK(Workload_parse("conv2d:n=1,ci=512,h=7,w=7,co=512,kh=3,kw=3,stride=1,pad=1", &wl, err) == TT_OK);
    Space s;
    Space_init(&s);
    CHECK(tmpl_conv2d_gpu.define_space(&wl, &dev, &s, err) == TT_OK);
    Rng rng;
    Rng_seed(&rng, 99);
    int accepted = 0, by_threads = 0, by_vthreads = 0, by_axis = 0, by_shared = 0;
    for (int i = 0; i < 3000; i++) {
        int32_t choice[SPACE_MAX_KNOBS];
        Space_decode(&s, Rng_below(&rng, s.total), choice);
        bool ok = tmpl_conv2d_gpu.precheck(&wl, &s, choice, &dev, reason, sizeof reason);
        KernelSource src;
        KernelSource_init(&src);
        CHECK(tmpl_conv2d_gpu.generate(&wl, &s, choice, &dev, DIALECT_CUDA, &src, err) == TT_OK);
        bool fits = launchable(&src);
        int64_t threads = src.block[0] * src.block[1] * src.block[2];
        /* never accepts what the device would refuse */
        CHECK(!ok || fits);
        if (ok) {
            accepted++;
        } else {
            CHECK(has_number_gt(reason));
            if (strstr(reason, "virtual threads")) {
                /* tunetop's own rule, stricter than the device's: register pressure of virtual threads */
                by_vthreads++;
            } else if (strncmp(reason, "threads per block", 17) == 0) {
                by_threads++;
                CHECK(threads > PUB_THREADS_PER_BLOCK);
            } else if (strncmp(reason, "thread z", 8) == 0) {
                by_axis++;
                CHECK(src.block[2] > PUB_BLOCK_Z);
            } else if (strncmp(reason, "shared memory", 13) == 0) {
                by_shared++;
                CHECK(src.shared_bytes > PUB_SHARED_PER_BLOCK);
            } else {
                CHECK(!"unexpected precheck reason");
            }
            /* a config the device accepts is refused only by the virtual-thread rule */
            if (fits) CHECK(strstr(reason, "virtual threads") != NULL);
        }
        KernelSource_done(&src);
    }
    printf("seed 003 layer, 3000 random configs: %d accepted, rejected by threads per block %d, virtual threads %d, "
           "thread z %d, shared memory %d\n",
           accepted, by_threads, by_vthreads, by_axis, by_shared);
    CHECK(accepted > 0 && by_threads + by_vthreads > 0 && by_axis > 0 && by_shared > 0);
    Space_done(&s);
}

TEST(precheck_messages) {
    Workload wl;
    char err[TT_ERRLEN], reason[256];
    CHECK(Workload_parse("conv2d:n=1,ci=64,h=16,w=16,co=128,kh=3,kw=3,stride=1,pad=1", &wl, err) == TT_OK);
    Space s;
    Space_init(&s);
    CHECK(tmpl_conv2d_gpu.define_space(&wl, &dev, &s, err) == TT_OK);
    int32_t choice[SPACE_MAX_KNOBS] = {0};
    /* 128 threads along z */
    pick(&s, choice, "tile_f", (const int64_t[]){1, 1, 128, 1});
    pick(&s, choice, "tile_y", (const int64_t[]){16, 1, 1, 1});
    pick(&s, choice, "tile_x", (const int64_t[]){16, 1, 1, 1});
    CHECK(!tmpl_conv2d_gpu.precheck(&wl, &s, choice, &dev, reason, sizeof reason));
    CHECK_STR(reason, "thread z 128 > 64");
    /* 32 x 8 x 8 = 2048 real threads */
    pick(&s, choice, "tile_f", (const int64_t[]){4, 1, 32, 1});
    pick(&s, choice, "tile_y", (const int64_t[]){2, 1, 8, 1});
    pick(&s, choice, "tile_x", (const int64_t[]){2, 1, 8, 1});
    CHECK(!tmpl_conv2d_gpu.precheck(&wl, &s, choice, &dev, reason, sizeof reason));
    CHECK_STR(reason, "threads per block 2048 > 1024");
    /* shared: input 64 ch x 18 x 18 + weights 16 x 64 x 3 x 3 floats = 20736 + 9216 floats = 117 KiB */
    pick(&s, choice, "tile_f", (const int64_t[]){8, 1, 16, 1});
    pick(&s, choice, "tile_y", (const int64_t[]){1, 1, 4, 4});
    pick(&s, choice, "tile_x", (const int64_t[]){1, 1, 4, 4});
    pick(&s, choice, "tile_rc", (const int64_t[]){1, 64, 1});
    pick(&s, choice, "tile_ry", (const int64_t[]){1, 3, 1});
    pick(&s, choice, "tile_rx", (const int64_t[]){1, 1, 3});
    CHECK(!tmpl_conv2d_gpu.precheck(&wl, &s, choice, &dev, reason, sizeof reason));
    CHECK_STR(reason, "shared memory 117 KiB > 48 KiB");
    /* the same tile with rc staged 16 channels at a time fits: 29.25 KiB */
    pick(&s, choice, "tile_rc", (const int64_t[]){4, 16, 1});
    CHECK(tmpl_conv2d_gpu.precheck(&wl, &s, choice, &dev, reason, sizeof reason));
    Space_done(&s);
}

TEST(compile_error_has_nvrtc_log) {
    KernelSource src;
    KernelSource_init(&src);
    src.source = strdup("extern \"C\" __global__ void tt_bad(float *out) { out[0] = undefined_name; }\n");
    snprintf(src.entry, sizeof src.entry, "tt_bad");
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.build_timeout_s = 600; /* the outcome checked is not a timeout, even on a loaded machine */
    BuildResult br;
    BuildResult_init(&br);
    target_cuda.build(&src, &dev, &opt, workdir, 999999, &br);
    CHECK_EQ_INT(br.error_no, ERR_COMPILE_DEVICE);
    CHECK_CONTAINS(br.msg, "undefined_name");
    CHECK_STR(br.path, "");
    BuildResult_done(&br);
    KernelSource_done(&src);
}

/* A kernel without launch bounds that keeps 64 values live per thread: ptxas
 * gives it well over 64 registers, so 1024 threads cannot fit 64 Ki registers. */
TEST(register_file_rejects_with_numbers) {
    KernelSource src;
    KernelSource_init(&src);
    src.source = strdup("extern \"C\" __global__ void tt_regs(const float *a, float *o) {\n"
                        "    float l[64];\n"
                        "    for (int i = 0; i < 64; i++) l[i] = a[i * blockDim.x + threadIdx.x];\n"
                        "    float v = 0.0f;\n"
                        "    for (int j = 0; j < 64; j++)\n"
                        "        for (int i = 0; i < 64; i++) v += l[i] * l[(i + j) & 63];\n"
                        "    o[threadIdx.x] = v;\n"
                        "}\n");
    src.block[0] = 1024;
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.build_timeout_s = 600; /* the outcome checked is not a timeout, even on a loaded machine */
    BuildResult br;
    BuildResult_init(&br);
    target_cuda.build(&src, &dev, &opt, workdir, 999997, &br);
    printf("register check: %s: %s\n", MeasureError_name(br.error_no), br.msg ? br.msg : "");
    CHECK(br.regs_per_thread > 64);
    CHECK_EQ_INT(br.error_no, ERR_INSTANTIATION);
    CHECK_CONTAINS(br.msg, "x threads 1024 = ");
    CHECK_CONTAINS(br.msg, "> register file 65536");
    CHECK_STR(br.path, "");
    BuildResult_done(&br);
    /* the same kernel on 64 threads fits */
    src.block[0] = 64;
    BuildResult_init(&br);
    target_cuda.build(&src, &dev, &opt, workdir, 999996, &br);
    CHECK_EQ_INT(br.error_no, ERR_NO_ERROR);
    BuildResult_done(&br);
    KernelSource_done(&src);
}

TEST(build_timeout_abandons_nvrtc) {
    KernelSource src;
    KernelSource_init(&src);
    src.source = strdup("extern \"C\" __global__ void tt_k(float *out) { out[threadIdx.x] = 1.0f; }\n");
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    opt.build_timeout_s = 1e-4; /* far below NVRTC's start-up alone */
    BuildResult br;
    BuildResult_init(&br);
    target_cuda.build(&src, &dev, &opt, workdir, 999998, &br);
    CHECK_EQ_INT(br.error_no, ERR_BUILD_TIMEOUT);
    CHECK_CONTAINS(br.msg, "abandoned");
    CHECK(br.build_s >= opt.build_timeout_s); /* abandoned at its limit, not before (how soon after is bench/'s) */
    BuildResult_done(&br);
    KernelSource_done(&src);
}

TEST(probe_is_one_line) {
    DeviceInfo d;
    char err[TT_ERRLEN] = "";
    if (target_cuda.probe(&d, err) == TT_OK) {
        printf("cuda device present: %s (%s)\n", d.name, d.arch);
        CHECK(d.present);
    } else {
        printf("probe: %s\n", err);
        CHECK(err[0] != '\0');
        CHECK(strchr(err, '\n') == NULL);
        CHECK_CONTAINS(err, "CUDA"); /* "no CUDA driver found (...)", "not built in (CUDA toolkit ...)" */
    }
}

TEST(offline_tables) {
    const char *archs[] = {"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"};
    char err[TT_ERRLEN];
    DeviceInfo d;
    for (int i = 0; i < 6; i++) {
        CHECK(target_cuda.offline_info(archs[i], &d, err) == TT_OK);
        CHECK_STR(d.arch, archs[i]);
        CHECK_EQ_INT(d.max_threads_per_block, 1024);
        CHECK_EQ_INT(d.regs_per_sm, 65536);
        CHECK(!d.present);
    }
    CHECK(target_cuda.offline_info("sm_91x", &d, err) == TT_ERR);
    CHECK_CONTAINS(err, "sm_91x");
}

int main(void) {
    char err[TT_ERRLEN];
    if (target_cuda.offline_info("sm_90", &dev, err) != TT_OK) {
        printf("offline sm_90 limits unavailable: %s\n", err);
        return 1;
    }
    KernelSource probe_src;
    KernelSource_init(&probe_src);
    probe_src.source = strdup("extern \"C\" __global__ void k(float *o) { o[0] = 1.0f; }\n");
    BuildResult br;
    BuildResult_init(&br);
    MeasureOptions opt;
    MeasureOptions_defaults(&opt);
    target_cuda.build(&probe_src, &dev, &opt, NULL, 0, &br);
    bool built_in = !(br.msg && strstr(br.msg, "not built in"));
    BuildResult_done(&br);
    KernelSource_done(&probe_src);
    if (!built_in) {
        return check_skip("nvrtc", "CUDA (NVRTC + nvJitLink) not built in");
    }
    if (!mkdtemp(workdir)) {
        printf("cannot create %s\n", workdir);
        return 1;
    }
    RUN(offline_tables);
    RUN(probe_is_one_line);
    RUN(seed003_space);
    RUN(precheck_messages);
    RUN(precheck_agrees_with_launch);
    RUN(compile_error_has_nvrtc_log);
    RUN(register_file_rejects_with_numbers);
    RUN(build_timeout_abandons_nvrtc);
    RUN(conv2d_configs);
    RUN(depthwise_configs);
    RUN(dense_small_configs);
    RUN(dense_large_configs);
    rmdir(workdir);
    return check_summary();
}
