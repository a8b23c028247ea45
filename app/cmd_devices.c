/* app/cmd_devices.c: `tunetop devices`: what targets this machine has. */
#include <stdio.h>
#include <string.h>

#include "app/commands.h"
#include "kernels/target.h"

int cmd_devices(int argc, char **argv) {
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: tunetop devices\n\nLists each target with its device and limits, or the one-line reason it "
               "cannot run here.\n");
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "tunetop devices: unexpected argument '%s'\n", argv[1]);
        return 2;
    }
    const Target *const *targets;
    int n = Target_all(&targets);
    int usable = 0;
    for (int i = 0; i < n; i++) {
        const Target *t = targets[i];
        if (!t) continue;
        DeviceInfo d;
        memset(&d, 0, sizeof d);
        char err[TT_ERRLEN] = "";
        if (t->probe(&d, err) != TT_OK) {
            printf("%-7s unavailable: %s\n", t->name, err);
            continue;
        }
        usable++;
        printf("%-7s %s [%s]\n", t->name, d.name, d.arch);
        if (t->family == FAMILY_CPU) {
            printf("        %d cores, %d floats per vector register\n", d.cores, d.vector_floats);
        } else {
            printf("        max threads/block %d (x %d, y %d, z %d), shared/block %lld KiB", d.max_threads_per_block,
                   d.max_block_dim[0], d.max_block_dim[1], d.max_block_dim[2],
                   (long long)(d.max_shared_bytes_per_block / 1024));
            if (d.regs_per_sm > 0) printf(", registers/SM %d, max registers/thread %d", d.regs_per_sm, d.max_regs_per_thread);
            if (d.multiprocessors > 0) printf(", %d compute units", d.multiprocessors);
            if (d.global_mem_bytes > 0) printf(", %.1f GiB", (double)d.global_mem_bytes / (1 << 30));
            printf("\n");
        }
    }
    return usable ? 0 : 1;
}
