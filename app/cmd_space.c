/* app/cmd_space.c: `tunetop space`: a task's knobs, their lengths and the total. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/device.h"
#include "tuner/task.h"

static void usage(FILE *out) {
    app_help(out,
             "usage: tunetop space --task SPEC [--target T] [--arch ARCH]\n"
             "\n"
             "Prints the template chosen for the task on the target, each knob with its length, and the total\n"
             "number of configs (the product of the lengths). T: %s (default %s). Without a device, a\n"
             "target with offline limits uses those of --arch (default %s).\n"
             "\n"
             "task SPEC: op:key=value,...\n"
             "  conv2d:           n ci h w co kh kw [stride pad dilation | stride_h stride_w pad_h pad_w dil_h dil_w]\n"
             "                    [layout=NCHW|NHWC] [bias=1] [relu=1 | relu6=1] [residual=1]\n"
             "  depthwise_conv2d: n ci h w mult kh kw [stride pad dilation layout bias relu]\n"
             "  dense:            m n k [bias=1] [relu=1]           (out[m][n] = data[m][k] * weight[n][k])\n"
             "  batch_matmul:     b m n k\n"
             "example: tunetop space --task conv2d:n=1,ci=512,h=7,w=7,co=512,kh=3,kw=3,stride=1,pad=1 --target cuda\n",
             Target_names(), Target_default()->name, app_arch_defaults());
}

static const struct option OWN[] = {{"task", required_argument, 0, 't'},
                                    {"target", required_argument, 0, 'T'},
                                    {"arch", required_argument, 0, 'a'},
                                    {"help", no_argument, 0, 'h'},
                                    {0, 0, 0, 0}};
const CmdOptions SPACE_OPTIONS = {"space", OWN, 0};

int cmd_space(int argc, char **argv) {
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&SPACE_OPTIONS, longopts, CLI_MAX_OPTS);
    const char *spec = NULL, *target_name = Target_default()->name, *arch = NULL;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) { /* ':': a missing value */
        switch (c) {
        case 't':
            spec = optarg;
            break;
        case 'T':
            target_name = optarg;
            break;
        case 'a':
            arch = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default: {
            char err[TT_ERRLEN];
            Cli_badOption("space", c, argv, err);
            fprintf(stderr, "tunetop space: %s\n", err);
            return 2;
        }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tunetop space: unexpected argument '%s' (see tunetop space --help)\n", argv[optind]);
        return 2;
    }
    if (!Target_find(target_name)) {
        fprintf(stderr, "tunetop space: unknown target '%s' (choose from: %s)\n", target_name, Target_names());
        return 2;
    }
    if (!spec) {
        fprintf(stderr, "tunetop space: give --task SPEC (see tunetop space --help)\n");
        return 2;
    }
    char err[TT_ERRLEN];
    Workload wl;
    if (Workload_parse(spec, &wl, err) != TT_OK) {
        fprintf(stderr, "tunetop space: --task %s: %s\n", spec, err);
        return 2;
    }
    const Target *target;
    DeviceInfo dev;
    if (app_resolve_device(target_name, arch, true, &target, &dev, err) != TT_OK) {
        fprintf(stderr, "tunetop space: %s\n", err);
        return 1;
    }
    Task task;
    if (Task_init(&task, 0, &wl, 1, target->family, &dev, err) != TT_OK) {
        fprintf(stderr, "tunetop space: %s\n", err);
        return 2;
    }
    char *text = malloc(16384);
    Space_describe(&task.space, text, 16384);
    printf("task:     %s\n", task.key);
    printf("template: %s (target %s, %s)\n", task.tmpl->name, target->name, dev.name[0] ? dev.name : dev.arch);
    printf("GFLOP:    %.4f\n", task.flops / 1e9);
    printf("ConfigSpace (len=%llu, space_map=\n%s)\n", (unsigned long long)task.space.total, text);
    free(text);
    Task_done(&task);
    return 0;
}
