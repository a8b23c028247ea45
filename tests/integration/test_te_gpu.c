/* tests/integration/test_te_gpu.c: OpenCL and CUDA code of random GPU
 * schedules (bound block and thread loops) of the same twelve expressions as
 * test_te_cpu: the OpenCL code runs on the OpenCL device (PoCL on machines
 * without a GPU) and agrees with the interpreter; the CUDA code compiles
 * through NVRTC. TT_TE_SAMPLES schedules per expression (default 20); each
 * expression's schedules are one OpenCL program and one NVRTC compile. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/templates/te/te_lower.h"
#include "tests/check.h"
#ifdef TT_HAVE_OPENCL
#include "kernels/targets/opencl/ocl.h"
#endif
#ifdef TT_HAVE_CUDA
#include <nvrtc.h>
#endif

#include "te_exprs.h"

typedef struct Sample {
    Steps steps;
    int n_launch;
    TeLaunch launch[TE_MAX_LAUNCHES];
} Sample;

#ifdef TT_HAVE_OPENCL
static int run_opencl(const OclDevice *dev, cl_program prog, const TeProgram *g, const Sample *s, double **ref, int k,
                      int e) {
    cl_mem bufs[TE_MAX_TENSORS];
    cl_int rc;
    for (int t = 0; t < g->n_tensors; t++) {
        int64_t n = TeProgram_numel(g, t);
        float *host = malloc(sizeof(float) * n);
        for (int64_t i = 0; i < n; i++)
            host[i] = g->tensors[t].is_input ? (float)ref[t][i] : NAN;
        bufs[t] = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(float) * n, host, &rc);
        free(host);
        if (rc != CL_SUCCESS) return fprintf(stderr, "clCreateBuffer: %d\n", rc), 1;
    }
    int bad = 0;
    for (int l = 0; l < s->n_launch && !bad; l++) {
        cl_kernel kern = clCreateKernel(prog, s->launch[l].name, &rc);
        if (rc != CL_SUCCESS) {
            fprintf(stderr, "clCreateKernel %s: %d\n", s->launch[l].name, rc);
            bad = 1;
            break;
        }
        for (int t = 0; t < g->n_tensors; t++)
            clSetKernelArg(kern, t, sizeof(cl_mem), &bufs[t]);
        size_t global[3], local[3];
        for (int a = 0; a < 3; a++)
            local[a] = (size_t)s->launch[l].block[a],
            global[a] = (size_t)(s->launch[l].grid[a] * s->launch[l].block[a]);
        rc = clEnqueueNDRangeKernel(dev->queue, kern, 3, NULL, global, local, 0, NULL, NULL);
        if (rc != CL_SUCCESS) fprintf(stderr, "launch %s: %d\n", s->launch[l].name, rc), bad = 1;
        clReleaseKernel(kern);
    }
    clFinish(dev->queue);
    for (int t = 0; t < g->n_tensors && !bad; t++) {
        if (!g->tensors[t].is_output) continue;
        int64_t n = TeProgram_numel(g, t);
        float *host = malloc(sizeof(float) * n);
        clEnqueueReadBuffer(dev->queue, bufs[t], CL_TRUE, 0, sizeof(float) * n, host, 0, NULL, NULL);
        for (int64_t i = 0; i < n && !bad; i++) {
            double r = ref[t][i], v = host[i];
            if (!(fabs(r - v) <= 1e-4 + 1e-4 * fabs(r))) {
                StrBuf text;
                StrBuf_init(&text);
                Steps_encode(&s->steps, &text);
                fprintf(stderr, "expression %d sample %d '%s': %s[%lld] = %g, expected %g\n", e, k, text.data,
                        g->tensors[t].name, (long long)i, v, r);
                StrBuf_done(&text);
                bad = 1;
            }
        }
        free(host);
    }
    for (int t = 0; t < g->n_tensors; t++)
        clReleaseMemObject(bufs[t]);
    return bad;
}
#endif

/* what this machine could not do (a skip after the lowering checks), or NULL */
static const char *missing_dep;
static char missing_why[TT_ERRLEN + 64];

TEST(random_gpu_schedules) {
    int per = te_test_samples(), ran = 0, wrong = 0, compiled = 0, cached = 0, at = 0, aligned = 0, vthread = 0;
#ifdef TT_HAVE_OPENCL
    OclDevice dev;
    char derr[TT_ERRLEN] = "";
    int have_cl = OclDevice_open(&dev, derr) == TT_OK;
    if (!have_cl) {
        missing_dep = "opencl";
        snprintf(missing_why, sizeof missing_why, "no OpenCL device (%s): schedules lowered, none run", derr);
    }
#else
    int have_cl = 0;
    missing_dep = "opencl";
    snprintf(missing_why, sizeof missing_why, "OpenCL not built in: schedules lowered, none run");
#endif
#ifndef TT_HAVE_CUDA
    if (!missing_dep) {
        missing_dep = "nvrtc";
        snprintf(missing_why, sizeof missing_why, "CUDA (NVRTC) not built in: the CUDA code was not compiled");
    }
#endif
    Rng rng;
    Rng_seed(&rng, 777);
    for (int e = 0; e < TE_TEST_N_EXPRS; e++) {
        char err[TT_ERRLEN] = "";
        TeProgram *g = te_test_load(&TE_TEST_EXPRS[e], err);
        static TeDag d;
        if (!g || TeDag_build(&d, g, err) != TT_OK) {
            fprintf(stderr, "expression %d: %s\n", e, err);
            CHECK(0);
            TeProgram_delete(g);
            continue;
        }
        double *ref[TE_MAX_TENSORS];
        for (int t = 0; t < g->n_tensors; t++) {
            int64_t n = TeProgram_numel(g, t);
            ref[t] = malloc(sizeof(double) * n);
            for (int64_t i = 0; i < n; i++)
                ref[t][i] = g->tensors[t].is_input ? te_round_to(TE_F32, Rng_uniform(&rng) * 2 - 1) : NAN;
        }
        TeProgram_eval(g, ref);
        Sample *samples = calloc(per, sizeof(Sample));
        StrBuf cl, cu;
        StrBuf_init(&cl);
        StrBuf_init(&cu);
        for (int k = 0; k < per; k++) {
            Sample *s = &samples[k];
            TeSchedule_sample(&d, &rng, 1, &s->steps);
            cached += te_test_has(&s->steps, STEP_CACHE_READ) || te_test_has(&s->steps, STEP_CACHE_WRITE);
            at += te_test_has(&s->steps, STEP_COMPUTE_AT);
            aligned += te_test_has(&s->steps, STEP_STORAGE_ALIGN);
            for (int i = 0; i < s->steps.n; i++)
                vthread += s->steps.step[i].kind == STEP_BIND && s->steps.step[i].arg[1] >= 6;
            LoopNest ln;
            char prefix[24];
            snprintf(prefix, sizeof prefix, "s%d_", k);
            int n_cu;
            TeLaunch cu_launch[TE_MAX_LAUNCHES];
            if (LoopNest_lower(&ln, &d, &s->steps, err) != TT_OK ||
                LoopNest_emit_gpu(&ln, 0, prefix, &cl, s->launch, &s->n_launch, err) != TT_OK ||
                LoopNest_emit_gpu(&ln, 1, prefix, &cu, cu_launch, &n_cu, err) != TT_OK) {
                fprintf(stderr, "expression %d sample %d: %s\n", e, k, err);
                CHECK(0);
                s->n_launch = -1;
            }
            if (ln.root) LoopNest_done(&ln);
        }
        (void)cu;
#ifdef TT_HAVE_CUDA
        {
            nvrtcProgram prog;
            CHECK(nvrtcCreateProgram(&prog, cu.data, "te.cu", 0, NULL, NULL) == NVRTC_SUCCESS);
            const char *opts[] = {"--gpu-architecture=compute_80", "--std=c++17"};
            nvrtcResult r = nvrtcCompileProgram(prog, 2, opts);
            if (r != NVRTC_SUCCESS) {
                size_t n = 0;
                nvrtcGetProgramLogSize(prog, &n);
                char *log = malloc(n + 1);
                nvrtcGetProgramLog(prog, log);
                fprintf(stderr, "expression %d: NVRTC: %.2000s\n", e, log);
                free(log);
            }
            CHECK(r == NVRTC_SUCCESS);
            if (r == NVRTC_SUCCESS) compiled += per;
            nvrtcDestroyProgram(&prog);
        }
#endif
#ifdef TT_HAVE_OPENCL
        if (have_cl) {
            cl_program prog;
            char *log = NULL;
            if (Ocl_buildSource(&dev, cl.data, &prog, &log) != TT_OK) {
                fprintf(stderr, "expression %d: OpenCL build: %.2000s\n", e, log ? log : "?");
                CHECK(0);
            } else {
                for (int k = 0; k < per; k++) {
                    if (samples[k].n_launch < 0) continue;
                    wrong += run_opencl(&dev, prog, g, &samples[k], ref, k, e);
                    ran++;
                }
                clReleaseProgram(prog);
            }
            free(log);
        }
#endif
        StrBuf_done(&cl);
        StrBuf_done(&cu);
        free(samples);
        for (int t = 0; t < g->n_tensors; t++)
            free(ref[t]);
        TeProgram_delete(g);
    }
    printf("%d schedules over %d expressions run on OpenCL (%d wrong); CUDA code of %d compiled through NVRTC; %d "
           "with a cache stage (shared or local), %d with compute_at, %d with storage_align, %d vthread binds\n",
           ran, TE_TEST_N_EXPRS, wrong, compiled, cached, at, aligned, vthread);
    CHECK_EQ_INT(wrong, 0);
    CHECK(cached >= per / 4 && at >= per / 2 && aligned >= 1 && vthread >= 1); /* the new steps are exercised */
    if (have_cl) CHECK_EQ_INT(ran, per * TE_TEST_N_EXPRS);
#ifdef TT_HAVE_CUDA
    CHECK_EQ_INT(compiled, per * TE_TEST_N_EXPRS);
#endif
#ifdef TT_HAVE_OPENCL
    if (have_cl) OclDevice_close(&dev);
#endif
}

int main(void) {
    RUN(random_gpu_schedules);
    if (missing_dep) return check_skip(missing_dep, missing_why);
    return check_summary();
}
