/* tests/unit/test_export.c: the kernel exporter (kernels/export/export.h) on the CPU.
 *
 * Exports a random sample of precheck-valid configs of every CPU template
 * (conv2d NCHW and NHWC, depthwise with a channel multiplier, dense,
 * batch_matmul, fused epilogues, odd shapes) with distinct prefixes into one
 * directory, compiles them together with a generated driver using only the
 * plain line `cc -std=gnu11 -O3 -march=native -fopenmp` (no tunetop header or
 * library), runs it, and compares with Workload_reference: both the
 * create/run path and pack_input/run_blocked/unpack_output, whose blocked
 * buffers must hold exactly what the PREFIX_BLOCKED_IN_* / PREFIX_BLOCKED_OUT_* macros say.
 * TT_EXPORT_CONFIGS sets the configs per case (default 2). Also: the prefix
 * check, and ExportBundle_write's refusals (non-empty directory, unwritable
 * place) leaving nothing behind. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/strbuf.h"
#include "kernels/export/export.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "space/space.h"
#include "tests/check.h"

extern const Template tmpl_conv2d_cpu, tmpl_conv2d_winograd_cpu, tmpl_depthwise_cpu, tmpl_dense_cpu,
    tmpl_batch_matmul_cpu;

#define MAX_KERNELS 64

static DeviceInfo g_dev;
static char g_dir[512];

typedef struct Kern {
    char prefix[32];
    Workload wl;
    ArgInfo info[WORKLOAD_MAX_ARGS];
    int nargs;
    float *args[WORKLOAD_MAX_ARGS];
    float *ref;
    char cfg[256];
} Kern;

static Kern g_k[MAX_KERNELS];
static int g_n;

static void dev_init(DeviceInfo *dev) {
    memset(dev, 0, sizeof *dev);
    snprintf(dev->name, sizeof dev->name, "test cpu");
    snprintf(dev->arch, sizeof dev->arch, "x86_64");
    dev->present = true;
    dev->cores = 2;
    dev->vector_floats = __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("avx2") ? 8 : 4;
}

static bool is_const(const char *name) { return strcmp(name, "weight") == 0 || strcmp(name, "bias") == 0; }

static void save(const char *name, const float *x, size_t n) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(x, sizeof(float), n, f) == n);
    fclose(f);
}

static float *load(const char *name, size_t n) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    float *x = malloc(n * sizeof(float));
    size_t got = fread(x, sizeof(float), n, f);
    fclose(f);
    if (got != n) {
        free(x);
        return NULL;
    }
    return x;
}

/* Exports one config as kernel number g_n into bundle b and saves its operands. */
static void add_kernel(ExportBundle *b, const Workload *wl, const Template *t, const Space *space,
                       const int32_t *choice, uint64_t seed) {
    if (g_n >= MAX_KERNELS) return;
    Kern *k = &g_k[g_n];
    memset(k, 0, sizeof *k);
    k->wl = *wl;
    snprintf(k->prefix, sizeof k->prefix, "k%d_%s", g_n, t->name[0] == 'c' ? "conv" : t->name[1] == 'e' ? "dw" : "mm");
    Space_format(space, choice, k->cfg, sizeof k->cfg);
    ExportRequest req = {.wl = wl,
                         .tmpl = t,
                         .space = space,
                         .choice = choice,
                         .dev = &g_dev,
                         .dialect = DIALECT_C,
                         .prefix = k->prefix};
    req.meta.latency_s = 1e-3 * (1 + g_n);
    req.meta.pack_s = 1e-4;
    req.meta.log_path = "test.log";
    req.meta.date = "2026-01-01 00:00:00 UTC";
    ExportKernel ek;
    char err[TT_ERRLEN] = "";
    Status st = Export_kernel(&req, &ek, err);
    CHECK(st == TT_OK);
    if (st != TT_OK) {
        fprintf(stderr, "export %s: %s\n", k->cfg, err);
        return;
    }
    CHECK_EQ_INT(ek.n_files, 2);
    CHECK(strstr(ek.files[0].text, "workload") && strstr(ek.files[0].text, t->name) &&
          strstr(ek.files[0].text, k->cfg) && strstr(ek.files[0].text, "GFLOPS") &&
          strstr(ek.files[0].text, "test.log") && strstr(ek.files[0].text, "2026-01-01"));
    CHECK(ExportBundle_add(b, &ek, err) == TT_OK);
    k->nargs = Workload_args(wl, k->info);
    for (int a = 0; a < k->nargs; a++)
        k->args[a] = calloc(k->info[a].count, sizeof(float));
    Workload_fillInputs(wl, k->args, seed);
    Workload_reference(wl, k->args);
    k->ref = k->args[k->nargs - 1];
    for (int a = 0; a < k->nargs - 1; a++) {
        char name[64];
        snprintf(name, sizeof name, "%s_arg%d.bin", k->prefix, a);
        save(name, k->args[a], k->info[a].count);
    }
    g_n++;
}

static void sample_case(ExportBundle *b, const char *spec, const Template *t, int n_configs, uint64_t seed,
                        bool with_default) {
    Workload wl;
    char err[TT_ERRLEN] = "";
    CHECK(Workload_parse(spec, &wl, err) == TT_OK);
    Space space;
    Space_init(&space);
    CHECK(t->define_space(&wl, &g_dev, &space, err) == TT_OK);
    Rng rng;
    Rng_seed(&rng, seed);
    int32_t choice[SPACE_MAX_KNOBS];
    int done = 0;
    for (int tries = 0; tries < 2000 && done < n_configs; tries++) {
        Space_decode(&space, Rng_below(&rng, space.total), choice);
        char reason[256];
        if (!t->precheck(&wl, &space, choice, &g_dev, reason, sizeof reason)) continue;
        add_kernel(b, &wl, t, &space, choice, seed + (uint64_t)done);
        done++;
    }
    CHECK_EQ_INT(done, n_configs);
    if (with_default) {
        CHECK(Export_defaultChoice(t, &wl, &space, &g_dev, choice, err) == TT_OK);
        add_kernel(b, &wl, t, &space, choice, seed + 99);
    }
    /* NHWC conv2d: one config that writes the canonical output in place (no blocked output) */
    if (t == &tmpl_conv2d_cpu && wl.layout == LAYOUT_NHWC) {
        for (uint64_t i = 0; i < space.total; i++) {
            Space_decode(&space, i, choice);
            char reason[256];
            if (Space_optionByName(&space, choice, "out_direct") != 1) continue;
            if (!t->precheck(&wl, &space, choice, &g_dev, reason, sizeof reason)) continue;
            add_kernel(b, &wl, t, &space, choice, seed + 7);
            break;
        }
    }
    Space_done(&space);
}

/* The driver: plain C against the exported headers only. */
static char *driver_source(void) {
    StrBuf sb;
    StrBuf_init(&sb);
    StrBuf_append(
        &sb, "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
             "#include \"kernels.h\"\n"
             "static float *load(const char *p, size_t n) {\n"
             "    FILE *f = fopen(p, \"rb\"); if (!f) { perror(p); exit(3); }\n"
             "    float *x = malloc(n * sizeof *x);\n"
             "    if (fread(x, sizeof *x, n, f) != n) { fprintf(stderr, \"short %s\\n\", p); exit(3); }\n"
             "    fclose(f); return x;\n}\n"
             "static void save(const char *p, const float *x, size_t n) {\n"
             "    FILE *f = fopen(p, \"wb\"); if (!f || fwrite(x, sizeof *x, n, f) != n) exit(4); fclose(f);\n}\n"
             "static float *nans(size_t n) { float *x = malloc(n * sizeof *x); for (size_t i = 0; i < n; i++)"
             " x[i] = NAN; return x; }\n"
             /* a blocked layout against its canonical tensor: returns the mismatches */
             "static long check_layout(const char *what, const float *blk, const float *canon, long N, long C,\n"
             "    long H, long W, long CB, long HA, long WA, long TOP, long LEFT, long REP, int nhwc) {\n"
             "    long bad = 0, CC = C / REP, CBLK = (C + CB - 1) / CB;\n"
             "    for (long n = 0; n < N; n++) for (long c = 0; c < C; c++)\n"
             "    for (long y = 0; y < H; y++) for (long x = 0; x < W; x++) {\n"
             "        long cc = c / REP;\n"
             "        size_t ci = nhwc ? (((size_t)n * H + y) * W + x) * CC + cc : (((size_t)n * CC + cc) * H + y) * W "
             "+ x;\n"
             "        size_t bi = ((((size_t)n * CBLK + c / CB) * HA + y + TOP) * WA + x + LEFT) * CB + c % CB;\n"
             "        if (blk[bi] != canon[ci]) { if (!bad) fprintf(stderr, \"%s: (%ld,%ld,%ld,%ld) %g != %g\\n\",\n"
             "            what, n, c, y, x, blk[bi], canon[ci]); bad++; }\n"
             "    }\n    return bad;\n}\n"
             "int main(void) {\n    long bad = 0;\n    char p[256];\n");
    for (int i = 0; i < g_n; i++) {
        Kern *k = &g_k[i];
        const char *P = k->prefix;
        int nhwc = k->wl.layout == LAYOUT_NHWC && (k->wl.op == OP_CONV2D || k->wl.op == OP_DEPTHWISE_CONV2D);
        StrBuf_printf(&sb, "    { /* %s */\n", P);
        int nc = 0, ni = 0, out = k->nargs - 1;
        StrBuf_append(&sb, "        float *a[8];\n");
        for (int a = 0; a < out; a++)
            StrBuf_printf(&sb, "        snprintf(p, sizeof p, \"%s_arg%d.bin\"); a[%d] = load(p, %zu);\n", P, a, a,
                          k->info[a].count);
        StrBuf_append(&sb, "        const float *consts[8], *inputs[8];\n");
        for (int a = 0; a < out; a++) {
            if (is_const(k->info[a].name))
                StrBuf_printf(&sb, "        consts[%d] = a[%d];\n", nc++, a);
            else
                StrBuf_printf(&sb, "        inputs[%d] = a[%d];\n", ni++, a);
        }
        StrBuf_printf(&sb,
                      "        %s_t *k = %s_create(consts);\n"
                      "        if (!k) { fprintf(stderr, \"%s_create failed\\n\"); return 2; }\n",
                      P, P, P);
        /* the constants need not outlive create */
        for (int a = 0; a < out; a++)
            if (is_const(k->info[a].name))
                StrBuf_printf(&sb, "        memset(a[%d], 0xff, %zu); free(a[%d]);\n", a,
                              k->info[a].count * sizeof(float), a);
        StrBuf_printf(&sb,
                      "        float *o1 = nans(%s_OUT_FLOATS), *o2 = nans(%s_OUT_FLOATS);\n"
                      "        if (%s_run(k, inputs, o1) != 0) bad++;\n"
                      "        if (%s_pack_input(k, inputs) != 0) bad++;\n"
                      "#if %s_INPUT_BLOCKED\n"
                      "        bad += check_layout(\"%s in\", %s_blocked_input(k), inputs[0], %s_BLOCKED_IN_N, "
                      "%s_BLOCKED_IN_C, %s_BLOCKED_IN_H,"
                      " %s_BLOCKED_IN_W, %s_BLOCKED_IN_CB, %s_BLOCKED_IN_H_ALLOC, %s_BLOCKED_IN_W_ALLOC, "
                      "%s_BLOCKED_IN_TOP, %s_BLOCKED_IN_LEFT, %s_BLOCKED_IN_REPEAT, %d);\n"
                      "#endif\n"
                      "        if (%s_run_blocked(k, %s_RUN_READS_INPUTS ? inputs : NULL, o2) != 0) bad++;\n"
                      "        if (%s_unpack_output(k, o2) != 0) bad++;\n"
                      "#if %s_OUTPUT_BLOCKED\n"
                      "        bad += check_layout(\"%s out\", %s_blocked_output(k), o2, %s_BLOCKED_OUT_N, "
                      "%s_BLOCKED_OUT_C, %s_BLOCKED_OUT_H,"
                      " %s_BLOCKED_OUT_W, %s_BLOCKED_OUT_CB, %s_BLOCKED_OUT_H_ALLOC, %s_BLOCKED_OUT_W_ALLOC, "
                      "%s_BLOCKED_OUT_TOP, %s_BLOCKED_OUT_LEFT, %s_BLOCKED_OUT_REPEAT, %d);\n"
                      "#endif\n"
                      "        snprintf(p, sizeof p, \"%s_out1.bin\"); save(p, o1, %s_OUT_FLOATS);\n"
                      "        snprintf(p, sizeof p, \"%s_out2.bin\"); save(p, o2, %s_OUT_FLOATS);\n"
                      "        %s_destroy(k);\n        free(o1); free(o2);\n",
                      P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, nhwc, P, P, P, P, P, P, P, P, P, P, P, P, P, P,
                      P, P, nhwc, P, P, P, P, P);
        for (int a = 0; a < out; a++)
            if (!is_const(k->info[a].name)) StrBuf_printf(&sb, "        free(a[%d]);\n", a);
        StrBuf_append(&sb, "    }\n");
    }
    StrBuf_append(&sb, "    if (bad) fprintf(stderr, \"%ld bad\\n\", bad);\n    return bad ? 1 : 0;\n}\n");
    char *r = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return r;
}

TEST(cpu_templates_export_build_and_match) {
    const char *env = getenv("TT_EXPORT_CONFIGS");
    int per = env && atoi(env) > 0 ? atoi(env) : 2;
    ExportBundle b;
    ExportBundle_init(&b, "kernels", DIALECT_C, &g_dev);
    g_n = 0;
    sample_case(&b, "conv2d:n=1,ci=8,h=9,w=11,co=20,kh=3,kw=3,stride=1,pad=1,bias=1,relu=1,residual=1",
                &tmpl_conv2d_cpu, per, 11, true);
    sample_case(&b, "conv2d:n=2,ci=6,h=10,w=10,co=32,kh=3,kw=3,stride=2,pad=1,layout=NHWC,bias=1,residual=1",
                &tmpl_conv2d_cpu, per, 12, false);
    sample_case(&b, "depthwise_conv2d:n=1,ci=5,mult=2,h=9,w=9,kh=3,kw=3,stride=2,pad=1,bias=1,relu=1",
                &tmpl_depthwise_cpu, per, 13, false);
    sample_case(&b, "depthwise_conv2d:n=1,ci=16,h=8,w=8,kh=3,kw=3,pad=1,layout=NHWC,residual=1", &tmpl_depthwise_cpu,
                per, 14, false);
    sample_case(&b, "dense:m=5,n=37,k=19,bias=1,relu=1", &tmpl_dense_cpu, per, 15, true);
    sample_case(&b, "batch_matmul:b=2,m=7,n=13,k=9", &tmpl_batch_matmul_cpu, per, 16, false);
    /* Winograd: its own state (transformed weights, per-thread scratch) behind the same ABI */
    sample_case(&b, "conv2d:n=1,ci=8,h=9,w=11,co=20,kh=3,kw=3,stride=1,pad=1,bias=1,relu=1,residual=1",
                &tmpl_conv2d_winograd_cpu, per, 17, true);

    char err[TT_ERRLEN] = "";
    char *drv = driver_source();
    CHECK(ExportBundle_addFile(&b, "driver.c", drv, false, err) == TT_OK);
    free(drv);
    char out[512];
    snprintf(out, sizeof out, "%.400s/kernels", g_dir);
    Status st = ExportBundle_write(&b, out, false, err);
    CHECK(st == TT_OK);
    if (st != TT_OK) fprintf(stderr, "write: %s\n", err);
    char *cm = ExportBundle_cmake(&b);
    for (int i = 0; i < g_n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%.40s.c", g_k[i].prefix);
        CHECK(strstr(cm, name) != NULL);
    }
    CHECK(strstr(cm, "STATIC") && strstr(cm, "SHARED") && strstr(cm, "-march=native") && strstr(cm, "-fopenmp"));
    free(cm);
    ExportBundle_done(&b);

    /* one plain compile line, in the exported directory, nothing of tunetop on the include path */
    StrBuf cmd;
    StrBuf_init(&cmd);
    StrBuf_printf(&cmd, "cd %s && cc -std=gnu11 -O3 -march=native -fopenmp -o driver driver.c", out);
    for (int i = 0; i < g_n; i++)
        StrBuf_printf(&cmd, " %s.c", g_k[i].prefix);
    StrBuf_append(&cmd, " -lm 2> cc.log || { cat cc.log >&2; exit 1; }");
    CHECK(system(cmd.data) == 0);
    StrBuf_clear(&cmd);
    StrBuf_printf(&cmd, "cd %s && OMP_NUM_THREADS=2 ./kernels/driver", g_dir);
    CHECK(system(cmd.data) == 0);
    StrBuf_done(&cmd);

    for (int i = 0; i < g_n; i++) {
        Kern *k = &g_k[i];
        size_t n = k->info[k->nargs - 1].count;
        for (int path = 1; path <= 2; path++) {
            char name[64], msg[256] = "";
            snprintf(name, sizeof name, "%.40s_out%d.bin", k->prefix, path);
            float *got = load(name, n);
            CHECK(got != NULL);
            if (!got) continue;
            bool ok = Workload_compare(&k->wl, k->ref, got, msg, sizeof msg);
            if (!ok) fprintf(stderr, "%s (%s) path %d: %s\n", k->prefix, k->cfg, path, msg);
            CHECK(ok);
            free(got);
        }
        for (int a = 0; a < k->nargs; a++)
            free(k->args[a]);
    }
    fprintf(stderr, "exported and checked %d kernels\n", g_n);
}

TEST(prefix_check) {
    char err[TT_ERRLEN];
    CHECK(Export_checkPrefix("conv_1", err) == TT_OK);
    CHECK(Export_checkPrefix("1conv", err) == TT_ERR);
    CHECK(Export_checkPrefix("a-b", err) == TT_ERR);
    CHECK(strstr(err, "'-'") != NULL);
    CHECK(Export_checkPrefix("", err) == TT_ERR);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

TEST(bundle_write_refusals) {
    char err[TT_ERRLEN] = "";
    ExportBundle b;
    ExportBundle_init(&b, "lib", DIALECT_C, &g_dev);
    CHECK(ExportBundle_addFile(&b, "x.c", "int x;\n", true, err) == TT_OK);
    CHECK(ExportBundle_addFile(&b, "../y.c", "", false, err) == TT_ERR);
    char root[560], dir[640], path[720];
    snprintf(root, sizeof root, "%.500s/refuse", g_dir);
    mkdir(root, 0755);
    snprintf(dir, sizeof dir, "%s/out", root);
    /* an empty existing directory is fine */
    mkdir(dir, 0755);
    CHECK(ExportBundle_write(&b, dir, false, err) == TT_OK);
    snprintf(path, sizeof path, "%s/x.c", dir);
    CHECK(access(path, F_OK) == 0);
    /* not empty: refused, untouched, nothing left beside it */
    CHECK(ExportBundle_write(&b, dir, false, err) == TT_ERR);
    CHECK(strstr(err, "not empty") && strstr(err, "--force"));
    CHECK_EQ_INT(count_entries(root), 1);
    /* --force replaces it */
    FILE *f = fopen(path, "w");
    fputs("old", f);
    fclose(f);
    CHECK(ExportBundle_write(&b, dir, true, err) == TT_OK);
    f = fopen(path, "r");
    char buf[16] = "";
    CHECK(f && fgets(buf, sizeof buf, f));
    if (f) fclose(f);
    CHECK(strcmp(buf, "int x;\n") == 0);
    CHECK_EQ_INT(count_entries(root), 1);
    /* a place that cannot be written */
    snprintf(dir, sizeof dir, "%s/missing/out", root);
    CHECK(ExportBundle_write(&b, dir, false, err) == TT_ERR);
    CHECK(strstr(err, "missing") != NULL);
    /* a file in the way */
    snprintf(dir, sizeof dir, "%s/out/x.c", root);
    CHECK(ExportBundle_write(&b, dir, true, err) == TT_ERR);
    CHECK(strstr(err, "not a directory") != NULL);
    CHECK_EQ_INT(count_entries(root), 1);
    ExportBundle_done(&b);
}

int main(void) {
    dev_init(&g_dev);
    snprintf(g_dir, sizeof g_dir, "/tmp/tt_export_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(prefix_check);
    RUN(bundle_write_refusals);
    RUN(cpu_templates_export_build_and_match);
    int rc = check_summary();
    if (rc == 0 && !getenv("TT_KEEP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    } else {
        fprintf(stderr, "files kept in %s\n", g_dir);
    }
    return rc;
}
