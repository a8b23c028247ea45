/* kernels/targets/cuda/cuda_arch.c: the per-architecture limits table (see cuda_arch.h). */
#include "kernels/targets/cuda/cuda_arch.h"

#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"

typedef struct ArchRow {
    const char *arch;
    const char *example;
    int major, minor;
    int sms;
} ArchRow;

/* Every architecture from Volta to Hopper has 64 Ki registers per SM, at most
 * 255 per thread, 1024 threads per block and 48 KiB of static shared memory per
 * block (more needs dynamic shared memory and an opt-in, which the templates
 * do not use). The SM count is that of the architecture's flagship part. */
static const ArchRow ARCHS[] = {
    {"sm_70", "V100", 7, 0, 80},     {"sm_75", "T4", 7, 5, 40},        {"sm_80", "A100", 8, 0, 108},
    {"sm_86", "RTX 3090", 8, 6, 82}, {"sm_89", "RTX 4090", 8, 9, 128}, {"sm_90", "H100", 9, 0, 132},
};

Status CudaArch_info(const char *arch, DeviceInfo *out, char *err) {
    if (!arch || !arch[0]) arch = CUDA_DEFAULT_ARCH;
    const ArchRow *row = NULL;
    char known[128] = "";
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++) {
        if (strcmp(ARCHS[i].arch, arch) == 0) row = &ARCHS[i];
        Names_add(known, sizeof known, ARCHS[i].arch);
    }
    if (!row) return tt_fail(err, "unknown CUDA architecture '%s' (known: %s)", arch, known);
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "offline %s (%s-class limits, no device)", row->arch, row->example);
    snprintf(out->arch, sizeof out->arch, "%s", row->arch);
    out->present = false;
    out->sm_major = row->major;
    out->sm_minor = row->minor;
    out->max_threads_per_block = 1024;
    out->max_block_dim[0] = 1024;
    out->max_block_dim[1] = 1024;
    out->max_block_dim[2] = 64;
    out->max_shared_bytes_per_block = 48 * 1024;
    out->regs_per_sm = 65536;
    out->max_regs_per_thread = 255;
    out->max_local_bytes_per_thread = 512 * 1024;
    out->multiprocessors = row->sms;
    return TT_OK;
}
