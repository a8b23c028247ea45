/* kernels/targets/cpu/measure.c: measuring the cpu target's peak and bandwidth
 * (kernels/targets/machine.h). The two kernels are generated C that follows the cpu
 * ABI (kernels/targets/cpu/abi.h): the cpu target builds them with the candidates'
 * compiler flags and its runner times them in the measurement worker, so a
 * crash or a hang there never touches the caller, and the figures come from
 * the same compiler, flags, OpenMP runtime and timing loop as every
 * candidate's. The worker needs a task; a one-element dense workload serves
 * (the kernels do not read their arguments and are not checked). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "kernels/target.h"
#include "kernels/targets/machine.h"

char *Machine_peakSource(int vector_floats, int chains, long iters) {
    StrBuf sb;
    StrBuf_init(&sb);
    StrBuf_printf(&sb,
                  "/* tunetop machine measurement: FP32 peak, %d independent FMA chains of %d floats */\n"
                  "#include <stdlib.h>\n#include <omp.h>\n"
                  "typedef float vf __attribute__((vector_size(%d)));\n"
                  "typedef struct { volatile float a, b; volatile long iters; float sink[1024]; } St;\n"
                  "int tt_setup(float **args, void **state) {\n"
                  "    (void)args; St *s = calloc(1, sizeof *s); if (!s) return 1;\n"
                  "    s->a = 0.999999f; s->b = 1e-6f; s->iters = %ldL; *state = s; return 0;\n}\n"
                  "void tt_pack(void *state) { (void)state; }\n"
                  "void tt_finish(void *state) { (void)state; }\n"
                  "void tt_teardown(void *state) { free(state); }\n"
                  "void tt_run(void *state) {\n"
                  "    St *s = state;\n"
                  "    const long iters = s->iters;\n"
                  "    const float fa = s->a, fb = s->b;\n"
                  "#pragma omp parallel\n"
                  "    {\n"
                  "        int t = omp_get_thread_num();\n"
                  "        vf a, b;\n"
                  "        for (int l = 0; l < %d; l++) { a[l] = fa; b[l] = fb; }\n",
                  chains, vector_floats, vector_floats * 4, iters, vector_floats);
    for (int c = 0; c < chains; c++)
        StrBuf_printf(&sb, "        vf x%d = b * (float)(t + %d);\n", c, c + 1);
    StrBuf_append(&sb, "        for (long i = 0; i < iters; i++) {\n");
    for (int c = 0; c < chains; c++)
        StrBuf_printf(&sb, "            x%d = x%d * a + b;\n", c, c);
    StrBuf_append(&sb, "        }\n        vf sum = x0");
    for (int c = 1; c < chains; c++)
        StrBuf_printf(&sb, " + x%d", c);
    StrBuf_append(&sb, ";\n        float f = 0;\n");
    StrBuf_printf(&sb, "        for (int l = 0; l < %d; l++) f += sum[l];\n", vector_floats);
    StrBuf_append(&sb, "        s->sink[(t * 16) & 1023] = f;\n    }\n}\n");
    return StrBuf_take(&sb);
}

char *Machine_triadSource(int64_t elements, int sweeps) {
    StrBuf sb;
    StrBuf_init(&sb);
    StrBuf_printf(
        &sb,
        "/* tunetop machine measurement: bandwidth, STREAM triad over %lld floats per array, %d sweep(s) */\n"
        "#include <stdlib.h>\n#include <stddef.h>\n"
        "#define N %lldL\n#define SWEEPS %d\n"
        "typedef struct { float *a, *b, *c; volatile float s; } St;\n"
        "int tt_setup(float **args, void **state) {\n"
        "    (void)args; St *s = calloc(1, sizeof *s); if (!s) return 1;\n"
        "    size_t bytes = ((size_t)N * sizeof(float) + 63) / 64 * 64;\n"
        "    s->a = aligned_alloc(64, bytes); s->b = aligned_alloc(64, bytes); s->c = aligned_alloc(64, bytes);\n"
        "    if (!s->a || !s->b || !s->c) { free(s->a); free(s->b); free(s->c); free(s); return 2; }\n"
        "    float *a = s->a, *b = s->b, *c = s->c;\n"
        "    /* first touch by the threads that use the pages (the same static split as tt_run) */\n"
        "#pragma omp parallel for schedule(static)\n"
        "    for (long i = 0; i < N; i++) { a[i] = 0.0f; b[i] = 1.0f; c[i] = 2.0f; }\n"
        "    s->s = 3.0f; *state = s; return 0;\n}\n"
        "void tt_pack(void *state) { (void)state; }\n"
        "void tt_finish(void *state) { (void)state; }\n"
        "void tt_teardown(void *state) { St *s = state; free(s->a); free(s->b); free(s->c); free(s); }\n"
        "void tt_run(void *state) {\n"
        "    St *s = state;\n"
        "    float *restrict a = s->a; const float *restrict b = s->b, *restrict c = s->c;\n"
        "    const float q = s->s;\n"
        "#pragma omp parallel\n"
        "    for (int r = 0; r < SWEEPS; r++) {\n"
        "#pragma omp for schedule(static)\n"
        "        for (long i = 0; i < N; i++) a[i] = b[i] + (q + (float)r) * c[i];\n"
        "    }\n"
        "}\n",
        (long long)elements, sweeps, (long long)elements, sweeps);
    return StrBuf_take(&sb);
}

char *Machine_readSource(int vector_floats, int64_t elements, int sweeps) {
    StrBuf sb;
    StrBuf_init(&sb);
    StrBuf_printf(&sb,
                  "/* tunetop machine measurement: read bandwidth, a sum over %lld floats, %d sweep(s) */\n"
                  "#include <stdlib.h>\n#include <string.h>\n#include <omp.h>\n"
                  "#define N %lldL\n#define SWEEPS %d\n#define VF %d\n"
                  "typedef float vf __attribute__((vector_size(VF * 4)));\n"
                  "typedef struct { float *a; float sink[1024]; } St;\n"
                  "int tt_setup(float **args, void **state) {\n"
                  "    (void)args; St *s = calloc(1, sizeof *s); if (!s) return 1;\n"
                  "    size_t bytes = ((size_t)N * sizeof(float) + 63) / 64 * 64;\n"
                  "    s->a = aligned_alloc(64, bytes); if (!s->a) { free(s); return 2; }\n"
                  "    float *a = s->a;\n"
                  "#pragma omp parallel for schedule(static)\n"
                  "    for (long i = 0; i < N; i++) a[i] = 1.0f;\n"
                  "    *state = s; return 0;\n}\n"
                  "void tt_pack(void *state) { (void)state; }\n"
                  "void tt_finish(void *state) { (void)state; }\n"
                  "void tt_teardown(void *state) { St *s = state; free(s->a); free(s); }\n"
                  "void tt_run(void *state) {\n"
                  "    St *s = state;\n"
                  "    const float *a = s->a;\n"
                  "#pragma omp parallel\n"
                  "    {\n"
                  "        int t = omp_get_thread_num(), nt = omp_get_num_threads();\n"
                  "        long chunk = (N / (8 * VF) + nt - 1) / nt * (8 * VF);\n"
                  "        long lo = t * chunk, hi = lo + chunk > N ? N : lo + chunk;\n"
                  "        vf s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0}, s7 = {0};\n"
                  "        for (int r = 0; r < SWEEPS; r++)\n"
                  "            for (long i = lo; i + 8 * VF <= hi; i += 8 * VF) {\n"
                  "                vf x[8];\n"
                  "                memcpy(x, a + i, sizeof x);\n"
                  "                s0 += x[0]; s1 += x[1]; s2 += x[2]; s3 += x[3];\n"
                  "                s4 += x[4]; s5 += x[5]; s6 += x[6]; s7 += x[7];\n"
                  "            }\n"
                  "        vf v = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;\n"
                  "        float f = 0;\n"
                  "        for (int l = 0; l < VF; l++) f += v[l];\n"
                  "        s->sink[(t * 16) & 1023] = f;\n"
                  "    }\n"
                  "}\n",
                  (long long)elements, sweeps, (long long)elements, sweeps, vector_floats);
    return StrBuf_take(&sb);
}

typedef struct Probe {
    const Target *cpu;
    const DeviceInfo *dev;
    Runner *runner;
    char workdir[512];
    bool own_workdir;
    uint64_t tag;
} Probe;

/* Builds src and returns the best seconds per run at `threads` threads over
 * `calls` measurements of `repeats` repeats of one run each. Runs are a few
 * milliseconds, shorter than a time slice: on a busy machine some of them
 * still run undisturbed, and the best is the one that did. */
static Status time_kernel(Probe *p, const char *source, int threads, int repeats, int calls, double *best_s,
                          char *err) {
    KernelSource src;
    KernelSource_init(&src);
    src.source = strdup(source);
    if (!src.source) abort();
    snprintf(src.entry, sizeof src.entry, "tt_run");
    MeasureOptions mo;
    MeasureOptions_defaults(&mo);
    mo.number = 1;
    mo.repeat = repeats;
    mo.min_repeat_ms = 0;
    mo.build_timeout_s = 60;
    mo.run_timeout_s = 60;
    mo.threads = threads;
    mo.check_correctness = false;
    BuildResult br;
    BuildResult_init(&br);
    p->cpu->build(&src, p->dev, &mo, p->workdir, ++p->tag, &br);
    Status st = TT_OK;
    if (br.error_no != ERR_NO_ERROR) {
        st = tt_fail(err, "the measurement kernel did not build (%s): %.300s", MeasureError_name(br.error_no),
                     br.msg ? br.msg : "");
    } else {
        double best = INFINITY;
        for (int c = 0; c < calls && st == TT_OK; c++) {
            MeasureResult mr;
            MeasureResult_init(&mr);
            p->cpu->measure(p->runner, &src, &br, &mo, &mr);
            if (mr.error_no != ERR_NO_ERROR || mr.n_costs < 1) {
                st = tt_fail(err, "the measurement kernel failed in the worker (%s): %.300s",
                             MeasureError_name(mr.error_no), mr.msg ? mr.msg : "");
            } else {
                for (int i = 0; i < mr.n_costs; i++)
                    if (mr.costs[i] > 0 && mr.costs[i] < best) best = mr.costs[i];
            }
            MeasureResult_done(&mr);
        }
        if (st == TT_OK && !isfinite(best)) st = tt_fail(err, "the measurement kernel reported no positive time");
        *best_s = best;
    }
    BuildResult_done(&br);
    KernelSource_done(&src);
    return st;
}

Status Machine_measureCpu(const DeviceInfo *dev, const MachineMeasureOptions *opt, MachineFigures *out, char *err) {
    double t0 = clock_mono();
    memset(out, 0, sizeof *out);
    bool quick = opt && opt->quick;
    /* calls of MEASURE_MAX_COSTS runs each; all cores get twice the calls: on
     * a shared machine they are the likelier to meet another process */
    int calls = opt && opt->repeats > 0 ? opt->repeats : quick ? 1 : 4;
    int repeats = quick ? 4 : MEASURE_MAX_COSTS;
    Probe p;
    memset(&p, 0, sizeof p);
    p.cpu = Target_find("cpu");
    p.dev = dev;
    if (!p.cpu) return tt_fail(err, "the cpu target is not built in");
    if (opt && opt->workdir) {
        snprintf(p.workdir, sizeof p.workdir, "%s", opt->workdir);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(p.workdir, sizeof p.workdir, "%s/tunetop-machine-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(p.workdir)) return tt_fail(err, "cannot create %s: %s", p.workdir, strerror(errno));
        p.own_workdir = true;
    }
    char why[TT_ERRLEN] = "";
    p.runner = p.cpu->runner_new(dev, why);
    Status st = TT_OK;
    if (!p.runner) st = tt_fail(err, "cannot start the measurement worker: %s", why);
    Workload tiny;
    if (st == TT_OK && (Workload_parse("dense:m=1,n=1,k=1", &tiny, err) != TT_OK ||
                        p.cpu->runner_set_task(p.runner, &tiny, err) != TT_OK))
        st = TT_ERR;

    int vf = dev->vector_floats == 16 || dev->vector_floats == 8 || dev->vector_floats == 4 ? dev->vector_floats : 4;
    /* Enough independent chains to cover the FMA latency (4-5 cycles) on two
     * FMA ports, within the architectural registers (32 with AVX-512, else 16). */
    int chains = vf == 16 ? 16 : 12;
    long iters = quick ? 20000 : 200000; /* about a millisecond at 100 GFLOPS */
    int cores = dev->cores > 0 ? dev->cores : 1;
    Machine_cacheSizes(&out->l1d_bytes, &out->l2_bytes, &out->l3_bytes);
    /* Three arrays together four times the last-level cache (at least 64 MiB). */
    int64_t llc = out->l3_bytes > 0 ? out->l3_bytes : out->l2_bytes > 0 ? out->l2_bytes : 8 << 20;
    int64_t total = quick ? (int64_t)12 << 20 : (4 * llc > ((int64_t)64 << 20) ? 4 * llc : (int64_t)64 << 20);
    int64_t elems = total / 12 / 16 * 16;

    double fma_s[2] = {0, 0}, triad_s[2] = {0, 0};
    int threads[2] = {1, cores};
    if (st == TT_OK) {
        char *peak = Machine_peakSource(vf, chains, iters);
        for (int i = 0; i < 2 && st == TT_OK; i++)
            st = time_kernel(&p, peak, threads[i], repeats, i ? 2 * calls : calls, &fma_s[i], err);
        free(peak);
    }
    /* the triad within half the L2, within half the L3 (many sweeps a run, so
     * that starting the threads is not what is timed), and in memory */
    int64_t level_bytes[3] = {out->l2_bytes / 2, out->l3_bytes / 2, total};
    if (quick) level_bytes[0] = level_bytes[1] = 0; /* the memory's triad only */
    double level_s[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    int64_t level_elems[3] = {0, 0, 0};
    int level_sweeps[3] = {1, 1, 1};
    for (int l = 0; l < 3 && st == TT_OK; l++) {
        int64_t e = level_bytes[l] / 12 / 16 * 16;
        if (e < 1024) continue; /* level size unknown */
        if (l < 2) {
            int64_t sweeps = ((int64_t)16 << 20) / (e * 12);
            level_sweeps[l] = sweeps < 1 ? 1 : sweeps > 1000 ? 1000 : (int)sweeps;
        }
        level_elems[l] = e;
        char *triad = Machine_triadSource(e, level_sweeps[l]);
        for (int i = 0; i < 2 && st == TT_OK; i++)
            st = time_kernel(&p, triad, threads[i], repeats, i ? 2 * calls : calls, &level_s[l][i], err);
        free(triad);
    }
    /* the read-only sum over the same footprints (not in the quick mode) */
    double read_s[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    int64_t read_elems[3] = {0, 0, 0};
    int read_sweeps[3] = {1, 1, 1};
    for (int l = 0; l < 3 && st == TT_OK && !quick; l++) {
        int64_t e = level_bytes[l] / 4 / 1024 * 1024;
        if (e < 1024) continue;
        if (l < 2) {
            int64_t sweeps = ((int64_t)16 << 20) / (e * 4);
            read_sweeps[l] = sweeps < 1 ? 1 : sweeps > 1000 ? 1000 : (int)sweeps;
        }
        read_elems[l] = e;
        char *rd = Machine_readSource(vf, e, read_sweeps[l]);
        for (int i = 0; i < 2 && st == TT_OK; i++)
            st = time_kernel(&p, rd, threads[i], repeats, i ? 2 * calls : calls, &read_s[l][i], err);
        free(rd);
    }
    elems = level_elems[2];
    triad_s[0] = level_s[2][0];
    triad_s[1] = level_s[2][1];
    if (p.runner) p.cpu->runner_delete(p.runner);
    if (p.own_workdir) rmdir(p.workdir);
    if (st != TT_OK) return TT_ERR;

    double flops_per_thread = (double)iters * chains * vf * 2.0;
    double bytes = 3.0 * (double)elems * sizeof(float);
    snprintf(out->target, sizeof out->target, "cpu");
    Machine_cpuKey(out->key, out->model, sizeof out->model);
    snprintf(out->isa, sizeof out->isa, "%s", vf == 16 ? "AVX-512" : vf == 8 ? "AVX2" : "SSE/NEON");
    out->cores = cores;
    out->vector_floats = vf;
    out->quick = quick;
    out->peak1_gflops = flops_per_thread / fma_s[0] * 1e-9;
    out->peak_gflops = flops_per_thread * cores / fma_s[1] * 1e-9;
    out->bw1_gbs = bytes / triad_s[0] * 1e-9;
    out->bw_gbs = bytes / triad_s[1] * 1e-9;
    double gbs[3][2] = {{0, 0}, {0, 0}};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 2; i++)
            if (level_s[l][i] > 0)
                gbs[l][i] = 3.0 * (double)level_elems[l] * sizeof(float) * level_sweeps[l] / level_s[l][i] * 1e-9;
    out->l2_bw1_gbs = gbs[0][0];
    out->l2_bw_gbs = gbs[0][1];
    out->l3_bw1_gbs = gbs[1][0];
    out->l3_bw_gbs = gbs[1][1];
    double rgbs[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < 2; i++)
            if (read_s[l][i] > 0)
                rgbs[l][i] = (double)read_elems[l] * sizeof(float) * read_sweeps[l] / read_s[l][i] * 1e-9;
    out->l2_rd1_gbs = rgbs[0][0];
    out->l2_rd_gbs = rgbs[0][1];
    out->l3_rd1_gbs = rgbs[1][0];
    out->l3_rd_gbs = rgbs[1][1];
    out->rd_bw1_gbs = rgbs[2][0];
    out->rd_bw_gbs = rgbs[2][1];
    out->triad_bytes = (int64_t)bytes;
    out->measured_at = clock_wall();
    out->measure_s = clock_mono() - t0;
    return TT_OK;
}

/* ---- load or measure (machine.h: the cached figures, else measured here)
 * --------------------------------------------------------------- */

Status Machine_getCpu(const DeviceInfo *dev, bool remeasure, const MachineMeasureOptions *opt, MachineFigures *out,
                      char *note, size_t note_len, char *err) {
    if (note && note_len) note[0] = '\0';
    char key[MACHINE_KEY_LEN], path[1024], why[TT_ERRLEN] = "";
    Machine_cpuKey(key, NULL, 0);
    bool have_path = Machine_cachePath("cpu", path, sizeof path, why) == TT_OK;
    if (have_path && !remeasure && Machine_load(path, key, out, why) == TT_OK) return TT_OK;
    if (Machine_measureCpu(dev, opt, out, err) != TT_OK) return TT_ERR;
    if (note && note_len) {
        if (remeasure)
            snprintf(note, note_len, "measured anew (--remeasure)");
        else if (strncmp(why, "no cached", 9) == 0)
            snprintf(note, note_len, "measured now (%s)", why);
        else
            snprintf(note, note_len, "measured anew: %s", why);
    }
    if (have_path) {
        char serr[TT_ERRLEN];
        if (Machine_save(path, out, serr) != TT_OK && note && note_len) {
            size_t len = strlen(note);
            snprintf(note + len, note_len - len, "; not cached: %s", serr);
        }
    }
    return TT_OK;
}
