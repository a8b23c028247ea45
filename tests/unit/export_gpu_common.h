/* tests/unit/export_gpu_common.h: what the GPU export tests share (included
 * by test_export_opencl.c and test_export_cuda.c): the cases (every GPU
 * template, fused epilogues, odd shapes), exporting sampled configs of them
 * into one bundle, and a driver that runs each kernel through its exported
 * ABI only (create / run / destroy) on operands saved by the test. */
#ifndef TT_TESTS_EXPORT_GPU_COMMON_H
#define TT_TESTS_EXPORT_GPU_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/strbuf.h"
#include "kernels/export/export.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "space/space.h"
#include "tests/check.h"

#define GK_MAX 32

typedef struct GpuKern {
    char prefix[32];
    Workload wl;
    ArgInfo info[WORKLOAD_MAX_ARGS];
    int nargs;
    float *args[WORKLOAD_MAX_ARGS];
    char cfg[256];
} GpuKern;

static GpuKern gk[GK_MAX];
static int gk_n;
static char gk_dir[512];

static const char *const GK_CASES[] = {
    "conv2d:n=1,ci=6,h=11,w=9,co=10,kh=3,kw=3,stride=2,pad=1,bias=1,relu=1,residual=1",
    "depthwise_conv2d:n=1,ci=6,mult=2,h=10,w=10,kh=3,kw=3,pad=1,bias=1,relu=1",
    "dense:m=3,n=29,k=40,bias=1,relu=1",
};

static bool gk_const(const char *name) { return strcmp(name, "weight") == 0 || strcmp(name, "bias") == 0; }

/* Exports `per` precheck-valid random configs of every case into b and saves the operands. */
static void gk_export_all(ExportBundle *b, const DeviceInfo *dev, Dialect dialect, int per, uint64_t seed) {
    gk_n = 0;
    for (size_t c = 0; c < sizeof GK_CASES / sizeof GK_CASES[0]; c++) {
        Workload wl;
        char err[TT_ERRLEN] = "";
        CHECK(Workload_parse(GK_CASES[c], &wl, err) == TT_OK);
        const Template *t = Template_find(&wl, FAMILY_GPU, err);
        CHECK(t != NULL);
        if (!t) continue;
        Space space;
        Space_init(&space);
        CHECK(t->define_space(&wl, dev, &space, err) == TT_OK);
        Rng rng;
        Rng_seed(&rng, seed + c);
        int done = 0;
        int32_t choice[SPACE_MAX_KNOBS];
        for (int tries = 0; tries < 5000 && done < per && gk_n < GK_MAX; tries++) {
            Space_decode(&space, Rng_below(&rng, space.total), choice);
            char reason[256];
            if (!t->precheck(&wl, &space, choice, dev, reason, sizeof reason)) continue;
            GpuKern *k = &gk[gk_n];
            memset(k, 0, sizeof *k);
            k->wl = wl;
            snprintf(k->prefix, sizeof k->prefix, "g%d_%s", gk_n, Op_name(wl.op));
            Space_format(&space, choice, k->cfg, sizeof k->cfg);
            ExportRequest req = {.wl = &wl,
                                 .tmpl = t,
                                 .space = &space,
                                 .choice = choice,
                                 .dev = dev,
                                 .dialect = dialect,
                                 .prefix = k->prefix};
            req.meta.latency_s = 2e-4;
            req.meta.log_path = "gpu.log";
            ExportKernel ek;
            Status st = Export_kernel(&req, &ek, err);
            CHECK(st == TT_OK);
            if (st != TT_OK) {
                fprintf(stderr, "export %s: %s\n", k->cfg, err);
                continue;
            }
            CHECK(strstr(ek.files[0].text, k->cfg) != NULL);
            CHECK(ExportBundle_add(b, &ek, err) == TT_OK);
            k->nargs = Workload_args(&wl, k->info);
            for (int a = 0; a < k->nargs; a++)
                k->args[a] = calloc(k->info[a].count, sizeof(float));
            Workload_fillInputs(&wl, k->args, seed + (uint64_t)gk_n);
            Workload_reference(&wl, k->args);
            for (int a = 0; a < k->nargs - 1; a++) {
                char path[700];
                snprintf(path, sizeof path, "%s/%.40s_arg%d.bin", gk_dir, k->prefix, a);
                FILE *f = fopen(path, "wb");
                CHECK(f && fwrite(k->args[a], sizeof(float), k->info[a].count, f) == k->info[a].count);
                if (f) fclose(f);
            }
            gk_n++;
            done++;
        }
        CHECK_EQ_INT(done, per);
        Space_done(&space);
    }
}

/* A C driver using only the exported headers: runs each kernel once, saves PREFIX_out.bin. */
static char *gk_driver(const char *umbrella) {
    StrBuf sb;
    StrBuf_init(&sb);
    StrBuf_printf(&sb,
                  "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include \"%s.h\"\n"
                  "static float *load(const char *p, size_t n) {\n"
                  "    FILE *f = fopen(p, \"rb\"); if (!f) { perror(p); exit(3); }\n"
                  "    float *x = malloc(n * sizeof *x);\n"
                  "    if (fread(x, sizeof *x, n, f) != n) exit(3);\n    fclose(f); return x;\n}\n"
                  "int main(void) {\n    int bad = 0;\n",
                  umbrella);
    for (int i = 0; i < gk_n; i++) {
        GpuKern *k = &gk[i];
        const char *P = k->prefix;
        int out = k->nargs - 1, nc = 0, ni = 0;
        StrBuf_printf(&sb, "    {\n        float *a[8];\n        const float *consts[8], *inputs[8];\n");
        for (int a = 0; a < out; a++) {
            StrBuf_printf(&sb, "        a[%d] = load(\"%s_arg%d.bin\", %zu);\n", a, P, a, k->info[a].count);
            if (gk_const(k->info[a].name))
                StrBuf_printf(&sb, "        consts[%d] = a[%d];\n", nc++, a);
            else
                StrBuf_printf(&sb, "        inputs[%d] = a[%d];\n", ni++, a);
        }
        StrBuf_printf(&sb,
                      "        float *o = malloc(%s_OUT_FLOATS * sizeof *o);\n"
                      "        for (size_t i = 0; i < %s_OUT_FLOATS; i++) o[i] = NAN;\n"
                      "        %s_t *k = %s_create(consts);\n"
                      "        if (!k || %s_run(k, inputs, o) != 0) { fprintf(stderr, \"%s: %%s\\n\", "
                      "%s_last_error()); bad++; }\n"
                      "        FILE *f = fopen(\"%s_out.bin\", \"wb\");\n"
                      "        if (!f || fwrite(o, sizeof *o, %s_OUT_FLOATS, f) != %s_OUT_FLOATS) bad++;\n"
                      "        if (f) fclose(f);\n"
                      "        %s_destroy(k);\n        free(o);\n",
                      P, P, P, P, P, P, P, P, P, P, P);
        for (int a = 0; a < out; a++)
            StrBuf_printf(&sb, "        free(a[%d]);\n", a);
        StrBuf_append(&sb, "    }\n");
    }
    StrBuf_append(&sb, "    return bad ? 1 : 0;\n}\n");
    char *r = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return r;
}

/* Compares every kernel's saved output with the reference. */
static void gk_compare(void) {
    for (int i = 0; i < gk_n; i++) {
        GpuKern *k = &gk[i];
        size_t n = k->info[k->nargs - 1].count;
        char path[700], msg[256] = "";
        snprintf(path, sizeof path, "%s/%.40s_out.bin", gk_dir, k->prefix);
        float *got = malloc(n * sizeof(float));
        FILE *f = fopen(path, "rb");
        bool read = f && fread(got, sizeof(float), n, f) == n;
        if (f) fclose(f);
        CHECK(read);
        if (read) {
            bool ok = Workload_compare(&k->wl, k->args[k->nargs - 1], got, msg, sizeof msg);
            if (!ok) fprintf(stderr, "%s (%s): %s\n", k->prefix, k->cfg, msg);
            CHECK(ok);
        }
        free(got);
    }
}

static void gk_free(void) {
    for (int i = 0; i < gk_n; i++)
        for (int a = 0; a < gk[i].nargs; a++)
            free(gk[i].args[a]);
}

#endif
