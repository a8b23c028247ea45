/* tests/unit/test_export_opencl.c: every GPU template exported in the OpenCL
 * dialect (kernels/export/export.h): the .cl kernels and their host C, built with a
 * plain `cc ... -lOpenCL` together with a driver that uses only the exported
 * headers, run on the OpenCL device present (PoCL on the CPU here) and
 * compared with Workload_reference. TT_EXPORT_CONFIGS sets the configs per
 * template (default 1: PoCL compiles are slow). Skips (exit 77) when OpenCL
 * is not built in or there is no device. */
#include <unistd.h>

#include "kernels/target.h"
#include "tests/unit/export_gpu_common.h"

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libpocl.so\nleak:libLLVM\n"; }

static DeviceInfo g_dev;

TEST(opencl_export_build_run_match) {
    const char *env = getenv("TT_EXPORT_CONFIGS");
    int per = env && atoi(env) > 0 ? atoi(env) : 1;
    ExportBundle b;
    ExportBundle_init(&b, "clk", DIALECT_OPENCL, &g_dev);
    gk_export_all(&b, &g_dev, DIALECT_OPENCL, per, 41);
    char err[TT_ERRLEN] = "";
    char *drv = gk_driver("clk");
    CHECK(ExportBundle_addFile(&b, "driver.c", drv, false, err) == TT_OK);
    free(drv);
    char *cm = ExportBundle_cmake(&b);
    CHECK(strstr(cm, "find_package(OpenCL") != NULL);
    free(cm);
    char out[600];
    snprintf(out, sizeof out, "%s/clk", gk_dir);
    CHECK(ExportBundle_write(&b, out, false, err) == TT_OK);
    for (int i = 0; i < gk_n; i++) {
        char cl[700];
        snprintf(cl, sizeof cl, "%.600s/%.40s.cl", out, gk[i].prefix);
        CHECK(access(cl, R_OK) == 0);
    }
    ExportBundle_done(&b);
    StrBuf cmd;
    StrBuf_init(&cmd);
    StrBuf_printf(&cmd, "cd %s && cc -std=gnu11 -O2 -o driver driver.c", out);
    for (int i = 0; i < gk_n; i++)
        StrBuf_printf(&cmd, " %s.c", gk[i].prefix);
    StrBuf_append(&cmd, " -lOpenCL -lm 2> cc.log || { cat cc.log >&2; exit 1; }");
    CHECK(system(cmd.data) == 0);
    StrBuf_clear(&cmd);
    StrBuf_printf(&cmd, "cd %s && ./clk/driver", gk_dir);
    CHECK(system(cmd.data) == 0);
    StrBuf_done(&cmd);
    gk_compare();
    fprintf(stderr, "exported, built and ran %d OpenCL kernels\n", gk_n);
    gk_free();
}

int main(void) {
    const Target *t = Target_find("opencl");
    char err[TT_ERRLEN] = "";
    if (!t || t->probe(&g_dev, err) != TT_OK) {
        char why[TT_ERRLEN + 32];
        snprintf(why, sizeof why, "no OpenCL device (%s)", err);
        return check_skip("opencl", why);
    }
    snprintf(gk_dir, sizeof gk_dir, "/tmp/tt_export_ocl_XXXXXX");
    if (!mkdtemp(gk_dir)) return 1;
    RUN(opencl_export_build_run_match);
    int rc = check_summary();
    if (rc == 0 && !getenv("TT_KEEP")) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf %s", gk_dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", gk_dir);
    } else {
        fprintf(stderr, "files kept in %s\n", gk_dir);
    }
    return rc;
}
