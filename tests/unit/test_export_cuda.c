/* tests/unit/test_export_cuda.c: every GPU template exported in the CUDA
 * dialect (kernels/export/export.h) compiles with nvcc, and a C driver that uses only
 * the exported headers links against the objects (no device is needed: the
 * program is built, not run, unless a CUDA device is present, in which case
 * its outputs are compared with the reference). Configs are checked against
 * the sm_90 limits. Skips (exit 77) when nvcc is not found (PATH, then
 * /usr/local/cuda/bin). */
#include <unistd.h>

#include "kernels/target.h"
#include "tests/unit/export_gpu_common.h"

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libnvrtc\nleak:libcudart\n"; }

static DeviceInfo g_dev;
static char g_nvcc[256];

static bool find_nvcc(void) {
    if (system("command -v nvcc >/dev/null 2>&1") == 0) {
        snprintf(g_nvcc, sizeof g_nvcc, "nvcc");
        return true;
    }
    if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0) {
        snprintf(g_nvcc, sizeof g_nvcc, "/usr/local/cuda/bin/nvcc");
        return true;
    }
    return false;
}

TEST(cuda_export_compiles_and_links) {
    const char *env = getenv("TT_EXPORT_CONFIGS");
    int per = env && atoi(env) > 0 ? atoi(env) : 1;
    ExportBundle b;
    ExportBundle_init(&b, "cuk", DIALECT_CUDA, &g_dev);
    CHECK(strcmp(b.cuda_arch, "90") == 0);
    gk_export_all(&b, &g_dev, DIALECT_CUDA, per, 51);
    char err[TT_ERRLEN] = "";
    char *drv = gk_driver("cuk");
    CHECK(ExportBundle_addFile(&b, "driver.c", drv, false, err) == TT_OK);
    free(drv);
    char *cm = ExportBundle_cmake(&b);
    CHECK(strstr(cm, "LANGUAGES C CUDA") && strstr(cm, "CMAKE_CUDA_ARCHITECTURES 90"));
    free(cm);
    char out[600];
    snprintf(out, sizeof out, "%s/cuk", gk_dir);
    CHECK(ExportBundle_write(&b, out, false, err) == TT_OK);
    ExportBundle_done(&b);
    StrBuf cmd;
    StrBuf_init(&cmd);
    StrBuf_printf(&cmd, "cd %s && cc -std=gnu11 -O2 -c driver.c -I /usr/local/cuda/include", out);
    for (int i = 0; i < gk_n; i++)
        StrBuf_printf(&cmd, " && %s -O3 -arch=sm_90 -c %s.cu", g_nvcc, gk[i].prefix);
    StrBuf_printf(&cmd, " && %s -o driver driver.o", g_nvcc);
    for (int i = 0; i < gk_n; i++)
        StrBuf_printf(&cmd, " %s.o", gk[i].prefix);
    StrBuf_append(&cmd, " > cc.log 2>&1 || { cat cc.log >&2; exit 1; }");
    CHECK(system(cmd.data) == 0);
    StrBuf_done(&cmd);
    if (g_dev.present) {
        char run[700];
        snprintf(run, sizeof run, "cd %s && ./cuk/driver", gk_dir);
        CHECK(system(run) == 0);
        gk_compare();
        fprintf(stderr, "exported, built and ran %d CUDA kernels\n", gk_n);
    } else {
        fprintf(stderr, "exported %d CUDA kernels: compiled with nvcc and linked (no device: not run)\n", gk_n);
    }
    gk_free();
}

int main(void) {
    if (!find_nvcc()) {
        return check_skip("nvcc", "nvcc not found");
    }
    const Target *t = Target_find("cuda");
    char err[TT_ERRLEN] = "";
    memset(&g_dev, 0, sizeof g_dev);
    if (!t || t->probe(&g_dev, err) != TT_OK) {
        memset(&g_dev, 0, sizeof g_dev);
        if (!t || !t->offline_info || t->offline_info("sm_90", &g_dev, err) != TT_OK) {
            char why[TT_ERRLEN + 32];
            snprintf(why, sizeof why, "no CUDA limits (%s)", err);
            return check_skip("nvrtc", why);
        }
        g_dev.present = false;
    }
    snprintf(gk_dir, sizeof gk_dir, "/tmp/tt_export_cuda_XXXXXX");
    if (!mkdtemp(gk_dir)) return 1;
    RUN(cuda_export_compiles_and_links);
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
