/* kernels/export/export.h: turning a tuned config into source that builds and runs
 * without tunetop.
 *
 * Export_kernel wraps what a template's generate() writes for one (workload,
 * config, dialect) into self-contained files whose every external symbol
 * starts with a prefix the caller chooses, so that many kernels link into one
 * program. Each kernel carries a comment block (workload, template, config
 * text and index, measured latency and GFLOPS, source log, date) and its own
 * header PREFIX.h, which documents the ABI:
 *
 *   cpu (PREFIX.h, PREFIX.c; C11 with GNU vector extensions, OpenMP):
 *     PREFIX_t *PREFIX_create(const float *const *consts);
 *         the constant operands (weight, then bias when the workload has
 *         one) in Workload_args order, packed once; they need not outlive
 *         the call. NULL on failure (out of memory).
 *     int PREFIX_run(PREFIX_t *k, const float *const *inputs, float *output);
 *         inputs = the non-constant operands (data, residual; batch_matmul:
 *         a, b) in Workload_args order, canonical layout in and out. 0 = ok.
 *     void PREFIX_destroy(PREFIX_t *k);
 *     blocked layouts (PREFIX_INPUT_BLOCKED / PREFIX_OUTPUT_BLOCKED say which;
 *     their shape is given by the PREFIX_BLOCKED_IN_* / PREFIX_BLOCKED_OUT_* macros, the
 *     meaning of BlockedLayout in kernels/template.h):
 *       int PREFIX_pack_input(PREFIX_t *k, const float *const *inputs);
 *       int PREFIX_run_blocked(PREFIX_t *k, const float *const *inputs, float *output);
 *       int PREFIX_unpack_output(PREFIX_t *k, float *output);
 *       float *PREFIX_blocked_input(PREFIX_t *k), *PREFIX_blocked_output(PREFIX_t *k),
 *             *PREFIX_blocked_residual(PREFIX_t *k);
 *     PREFIX_run is pack_input + run_blocked + unpack_output.
 *   opencl (PREFIX.h, PREFIX.c host code on the OpenCL API, PREFIX.cl the
 *   kernel, also embedded in PREFIX.c) and cuda (PREFIX.h, PREFIX.cu: the
 *   kernel and host code on the CUDA Runtime API, extern "C"): the same
 *   create / run / destroy, with device buffers per operand and the launch
 *   geometry of the template's KernelSource.
 *
 * An ExportBundle collects kernels (and any extra files, e.g. a network
 * program) and writes them to a directory with one umbrella header and a
 * CMakeLists.txt that builds a static and a shared library; it writes into a
 * temporary directory beside the target and renames it at the end, so a
 * failure leaves nothing half-written.
 *
 * Library code: returns a Status and a message, never prints.
 */
#ifndef TT_KERNELS_EXPORT_H
#define TT_KERNELS_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "space/space.h"

#define EXPORT_PREFIX_LEN 48
#define EXPORT_MAX_FILES 4

/* What the comment block says about where a config comes from. */
typedef struct ExportMeta {
    double latency_s;     /* mean measured cost of the kernel (<= 0: not measured, e.g. a default config) */
    double pack_s;        /* layout transforms timed apart (< 0: unknown) */
    const char *log_path; /* the log the config comes from (NULL: none) */
    const char *date;     /* NULL: now, UTC */
    const char *note;     /* one more line (NULL: none), e.g. why the default config was used */
} ExportMeta;

typedef struct ExportRequest {
    const Workload *wl;
    const Template *tmpl;
    const Space *space; /* tmpl->define_space(wl, dev) */
    const int32_t *choice;
    const DeviceInfo *dev;
    Dialect dialect;
    const char *prefix; /* a C identifier (letters, digits, '_'; not starting with a digit) */
    const char *steps;  /* an expression's schedule (Steps_encode text, the record's "steps"), or NULL (choice) */
    ExportMeta meta;
} ExportRequest;

typedef struct ExportFile {
    char name[EXPORT_PREFIX_LEN + 48]; /* may hold folders: "tuner/net/ops/nn_conv.c" */
    char *text;                        /* owned */
} ExportFile;

typedef struct ExportKernel {
    char prefix[EXPORT_PREFIX_LEN];
    Dialect dialect;
    char workload_key[WORKLOAD_KEY_LEN];
    int n_files;
    ExportFile files[EXPORT_MAX_FILES]; /* PREFIX.h first */
} ExportKernel;

void ExportKernel_done(ExportKernel *this);

/* Checks that a prefix can name C symbols; err says why not. */
Status Export_checkPrefix(const char *prefix, char *err);

/* Generates the files of one kernel. TT_ERR when the prefix is bad, the
 * template cannot generate the config in the dialect, or the config fails the
 * template's precheck. */
Status Export_kernel(const ExportRequest *req, ExportKernel *out, char *err);

/* The template's default config, used when a task has no measured one: the
 * template's default_config when it has one and that config passes its
 * precheck, else the lowest flat index that passes the precheck. */
Status Export_defaultChoice(const Template *tmpl, const Workload *wl, const Space *space, const DeviceInfo *dev,
                            int32_t *choice, char *err);

/* The file name extension of sources in a dialect: "c", "cu", "cl". */
const char *Export_dialectName(Dialect d); /* "cpu", "cuda", "opencl" */

typedef struct ExportBundle {
    char name[EXPORT_PREFIX_LEN]; /* library name: libNAME.a, libNAME.so, NAME.h */
    Dialect dialect;
    char cuda_arch[16]; /* cuda: "90" from DeviceInfo.arch "sm_90" */
    ExportKernel *kernels;
    int n_kernels, cap;
    ExportFile *extra; /* further files written as they are (netrun's network program, ...) */
    int n_extra, extra_cap;
    char **extra_sources; /* names of extra files that CMake compiles into the library */
    int n_extra_sources;
} ExportBundle;

void ExportBundle_init(ExportBundle *this, const char *name, Dialect dialect, const DeviceInfo *dev);
void ExportBundle_done(ExportBundle *this);
/* Moves *k into the bundle (k is left empty). TT_ERR on a duplicate prefix. */
Status ExportBundle_add(ExportBundle *this, ExportKernel *k, char *err);
/* Adds a file (name copied, text copied); compile = also a source of the library. */
Status ExportBundle_addFile(ExportBundle *this, const char *name, const char *text, bool compile, char *err);
/* The umbrella header and the CMakeLists.txt text (malloc'd). */
char *ExportBundle_umbrella(const ExportBundle *this);
char *ExportBundle_cmake(const ExportBundle *this);
/* Writes every file into dir. dir must not exist or be empty, unless force
 * (then its contents are replaced). Writes into "DIR.tmp-XXXXXX" beside it,
 * then renames; on any failure (unwritable, disk full) removes the temporary
 * directory and leaves dir as it was. */
Status ExportBundle_write(const ExportBundle *this, const char *dir, bool force, char *err);

#endif
