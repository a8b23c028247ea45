/* tests/unit/test_cpu_defaults.c: the zero-trial defaults of the CPU templates
 * (Template.default_config). For a sweep of shapes (odd ones and the layers of
 * ResNet, MobileNet-V2 and BERT) and three vector widths, each template's
 * default passes its precheck, is what Export_defaultChoice returns, and fills
 * the vector registers; on this machine's width the default kernels are
 * compiled and match Workload_reference. */
#include "kernels/export/export.h"
#include "kernels/templates/cpu/cpu_gen.h"
#include "tests/unit/cpu_templates_common.h"

typedef struct DefaultCase {
    const char *spec;
    const Template *t;
} DefaultCase;

#define D_CONV &tmpl_conv2d_cpu
#define D_WG &tmpl_conv2d_winograd_cpu
#define D_DW &tmpl_depthwise_cpu
#define D_DENSE &tmpl_dense_cpu
#define D_BMM &tmpl_batch_matmul_cpu

static const DefaultCase CASES[] = {
    /* odd shapes: channels below a vector, widths no tile divides, a batch, NHWC, every epilogue */
    {"conv2d:n=1,ci=3,h=11,w=13,co=7,kh=3,kw=3,pad=1", D_CONV},
    {"conv2d:n=2,ci=17,h=9,w=7,co=33,kh=3,kw=3,pad=0,bias=1,relu=1", D_CONV},
    {"conv2d:n=1,ci=5,h=10,w=7,co=17,kh=3,kw=3,pad=2,layout=NHWC,bias=1,relu=1,residual=1", D_CONV},
    {"conv2d:n=1,ci=20,h=1,w=5,co=1,kh=1,kw=1,stride=2", D_CONV},
    /* ResNet-18 / -50 */
    {"conv2d:n=1,ci=3,h=224,w=224,co=64,kh=7,kw=7,stride=2,pad=3,bias=1,relu=1", D_CONV},
    {"conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1,bias=1,relu=1", D_CONV},
    {"conv2d:n=1,ci=128,h=56,w=56,co=256,kh=1,kw=1,stride=2,bias=1", D_CONV},
    {"conv2d:n=1,ci=512,h=7,w=7,co=512,kh=3,kw=3,pad=1,bias=1,residual=1,relu=1", D_CONV},
    {"conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,pad=1,bias=1,relu=1", D_WG},
    {"conv2d:n=1,ci=256,h=14,w=14,co=256,kh=3,kw=3,pad=1,bias=1,residual=1", D_WG},
    {"conv2d:n=1,ci=512,h=7,w=7,co=512,kh=3,kw=3,pad=1", D_WG},
    {"conv2d:n=1,ci=3,h=2,w=2,co=5,kh=3,kw=3,pad=1", D_WG},
    /* MobileNet-V2 */
    {"depthwise_conv2d:n=1,ci=32,h=112,w=112,kh=3,kw=3,pad=1,bias=1,relu6=1", D_DW},
    {"depthwise_conv2d:n=1,ci=144,h=56,w=56,kh=3,kw=3,stride=2,pad=1,bias=1,relu6=1", D_DW},
    {"depthwise_conv2d:n=1,ci=960,h=7,w=7,kh=3,kw=3,pad=1,bias=1", D_DW},
    {"depthwise_conv2d:n=1,ci=3,mult=2,h=9,w=5,kh=5,kw=5,pad=2", D_DW},
    {"conv2d:n=1,ci=96,h=56,w=56,co=24,kh=1,kw=1,bias=1", D_CONV},
    /* BERT-base and odd GEMMs */
    {"dense:m=128,n=768,k=768,bias=1", D_DENSE},
    {"dense:m=128,n=3072,k=768,bias=1,relu=1", D_DENSE},
    {"dense:m=1,n=1000,k=512,bias=1", D_DENSE},
    {"dense:m=7,n=13,k=5", D_DENSE},
    {"batch_matmul:b=12,m=128,n=128,k=64", D_BMM},
    {"batch_matmul:b=12,m=128,n=64,k=128", D_BMM},
    {"batch_matmul:b=3,m=5,n=9,k=300", D_BMM},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

/* Vector registers the default's register tile takes (feature 1 of every CPU template). */
static float default_regs(const DefaultCase *c, const Workload *wl, const Space *space, const int32_t *choice,
                          const DeviceInfo *dev) {
    float f[64];
    return c->t->features(wl, space, choice, dev, f, 64) > 1 ? f[1] : 0;
}

/* The default of one case on one device: valid, Export_defaultChoice's, and
 * (on big enough shapes) a register tile that fills most of the registers.
 * Writes the generated source to src when src is not NULL. */
static bool check_default(const DefaultCase *c, const DeviceInfo *dev, const char *src) {
    char err[TT_ERRLEN] = "", reason[TT_ERRLEN] = "";
    Workload wl;
    CHECK(Workload_parse(c->spec, &wl, err) == TT_OK);
    CHECK(c->t->applies(&wl));
    Space space;
    Space_init(&space);
    CHECK(c->t->define_space(&wl, dev, &space, err) == TT_OK);
    int32_t mine[SPACE_MAX_KNOBS], exported[SPACE_MAX_KNOBS];
    bool ok = c->t->default_config != NULL;
    CHECK(ok);
    if (ok) ok = c->t->default_config(&wl, &space, dev, mine, err) == TT_OK;
    if (!ok) fprintf(stderr, "%s (vf %d): %s\n", c->spec, dev->vector_floats, err);
    CHECK(ok);
    if (ok) {
        CHECK(c->t->precheck(&wl, &space, mine, dev, reason, sizeof reason));
        CHECK(Export_defaultChoice(c->t, &wl, &space, dev, exported, err) == TT_OK);
        CHECK(Space_encode(&space, mine) == Space_encode(&space, exported));
        /* the big layers: at least half of the registers hold the tile (the lowest index holds 2) */
        bool big = wl.op == OP_DENSE || wl.op == OP_BATCH_MATMUL ? wl.m >= 16 && wl.n >= 64 : wl.ci >= 32;
        float regs = default_regs(c, &wl, &space, mine, dev);
        if (big && regs < CpuGen_vregs(dev) / 2)
            fprintf(stderr, "%s (vf %d): %.0f of %d registers\n", c->spec, dev->vector_floats, regs, CpuGen_vregs(dev));
        if (big) CHECK(regs >= CpuGen_vregs(dev) / 2);
    }
    if (ok && src) {
        KernelSource ks;
        KernelSource_init(&ks);
        CHECK(c->t->generate(&wl, &space, mine, dev, DIALECT_C, &ks, err) == TT_OK);
        FILE *f = fopen(src, "w");
        CHECK(f != NULL);
        if (f) fputs(ks.source ? ks.source : "", f), fclose(f);
        KernelSource_done(&ks);
    }
    Space_done(&space);
    return ok;
}

/* Valid on AVX-512, AVX2 and SSE widths, 1 and 2 cores (nothing compiled). */
TEST(defaults_valid_every_width) {
    static const int VFS[] = {16, 8, 4};
    for (int v = 0; v < 3; v++)
        for (int cores = 1; cores <= 2; cores++) {
            DeviceInfo dev = g_dev;
            dev.vector_floats = VFS[v];
            dev.cores = cores;
            for (int i = 0; i < N_CASES; i++)
                check_default(&CASES[i], &dev, NULL);
        }
}

/* The defaults on this machine compute the right answer. */
TEST(defaults_match_reference) {
    static Job jobs[N_CASES];
    bool have[N_CASES];
    for (int i = 0; i < N_CASES; i++) {
        snprintf(jobs[i].src, sizeof jobs[i].src, "%s/d%d.c", g_dir, i);
        snprintf(jobs[i].so, sizeof jobs[i].so, "%s/d%d.so", g_dir, i);
        have[i] = check_default(&CASES[i], &g_dev, jobs[i].src);
    }
    compile_all(jobs, N_CASES);
    for (int i = 0; i < N_CASES; i++) {
        if (!have[i]) continue;
        CHECK_EQ_INT(jobs[i].status, 0);
        Workload wl;
        char err[TT_ERRLEN], why[512] = "";
        if (jobs[i].status != 0 || Workload_parse(CASES[i].spec, &wl, err) != TT_OK) continue;
        ArgInfo info[WORKLOAD_MAX_ARGS];
        int nargs;
        float **args = alloc_args(&wl, &nargs, info);
        Workload_fillInputs(&wl, args, 1000 + (uint64_t)i);
        size_t out_n = info[nargs - 1].count;
        float *ref = malloc(out_n * sizeof(float));
        Workload_reference(&wl, args);
        memcpy(ref, args[nargs - 1], out_n * sizeof(float));
        for (size_t e = 0; e < out_n; e++)
            args[nargs - 1][e] = 12345.0f;
        bool same =
            run_so(jobs[i].so, args, why, sizeof why) && Workload_compare(&wl, ref, args[nargs - 1], why, sizeof why);
        if (!same) fprintf(stderr, "%s: %s (%s)\n", CASES[i].spec, why, jobs[i].src);
        CHECK(same);
        if (same) unlink(jobs[i].src);
        unlink(jobs[i].so);
        free(ref);
        free_args(args, nargs);
    }
}

int main(void) {
    dev_init(&g_dev);
    /* kernels bring libgomp; keep it loaded so that dlclose never unmaps code its idle threads run */
    if (!dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL)) fprintf(stderr, "note: libgomp not preloaded\n");
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tt_cpu_dflt_XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    (void)check_case; /* the shared header's random-config check: not used here */
    RUN(defaults_valid_every_width);
    RUN(defaults_match_reference);
    if (!check_failed) rmdir(g_dir); /* failed sources stay for inspection */
    return check_summary();
}
