/* app/cmd_sketch.c: `tunetop sketches --expr FILE.te [--target T]`: the sketches
 * of a tensor expression, each as the rules that made it and its step list,
 * and the zero-trial default schedule of each. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "app/device.h"
#include "app/expr.h"
#include "kernels/target.h"
#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_sketch.h"

static void usage(FILE *out) {
    app_help(out,
             "usage: tunetop sketches --expr FILE.te [--set NAME=VALUE ...] [--target T] [--cores N] [--vector N]\n"
             "\n"
             "Prints the sketches of a tensor expression on a target (%s; default %s): the rules that\n"
             "made each (applied per stage from the output backwards: cpu always-inline, padded window,\n"
             "rfactor, add cache stage, multi-level tiling with fusion, multi-level tiling SSRSRS, skip; gpu\n"
             "shared-memory cache_read, always-inline, cross-thread reduction, rfactor, multi-level tiling\n"
             "SSSRRSRS, skip), its step list with the tile sizes an annotation fills in shown as ?, what the\n"
             "schedule IR cannot express yet, and the zero-trial default schedule of the sketch (a heuristic\n"
             "annotation).\n"
             "  --cores N    cores the rfactor rule assumes (default: on cpu this machine's, as tune\n"
             "               uses; on a gpu target 2)\n"
             "  --vector N   floats per SIMD register the default schedule assumes (default: on cpu this\n"
             "               machine's widest, as tune uses: 16 with AVX-512, 8 with AVX2; on a gpu target 16)\n",
             Target_names(), Target_default()->name);
}

static int positive(const char *opt, const char *v, int *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < 1 || x > 4096) {
        fprintf(stderr, "tunetop sketches: %s %s: expected a whole number in 1..4096\n", opt, v);
        return 0;
    }
    *out = (int)x;
    return 1;
}

static const struct option OWN[] = {{"expr", required_argument, 0, 'e'},
                                    {"set", required_argument, 0, 's'},
                                    {"target", required_argument, 0, 'T'},
                                    {"cores", required_argument, 0, 'c'},
                                    {"vector", required_argument, 0, 'v'},
                                    {"help", no_argument, 0, 'h'},
                                    {0, 0, 0, 0}};
const CmdOptions SKETCHES_OPTIONS = {"sketches", OWN, 0};

/* Each sketch of the DAG on the target, with its zero-trial default; 0, or 1 when a default does not lower. */
static int print_sketches(const TeDag *dag, const Target *target, const char *path, int cores, int vector) {
    int rc = 0;
    int gpu = target->family == FAMILY_GPU;
    /* what tune would assume on this machine; a gpu sketch's defaults do not depend on them */
    DeviceInfo dev;
    char derr[TT_ERRLEN];
    const Target *host;
    int probed = !gpu && app_resolve_device(target->name, NULL, false, &host, &dev, derr) == TT_OK;
    if (!cores) cores = probed && dev.cores > 0 ? dev.cores : 2;
    if (!vector) vector = probed && dev.vector_floats > 0 ? dev.vector_floats : 16;
    Sketch *sk = calloc(SKETCH_MAX, sizeof *sk);
    SketchAnn *ann = calloc((size_t)dag->n_stages, sizeof *ann);
    int n = Sketch_generate(dag, gpu, cores, sk);
    for (int i = 0; i < n; i++)
        sk[i].vector = vector;
    printf("Sketches of %s on %s (defaults for %d floats per vector, %d cores): %d\n", path, target->name, vector,
           cores, n);
    StrBuf s;
    StrBuf_init(&s);
    for (int i = 0; i < n; i++) {
        StrBuf_clear(&s);
        Sketch_format(&sk[i], dag, &s);
        printf("\nsketch %d\n%s", i, s.data);
        Steps steps;
        Sketch_heuristic(&sk[i], dag, vector, ann);
        Sketch_steps(&sk[i], dag, ann, &steps);
        StrBuf_clear(&s);
        Steps_encode(&steps, &s);
        LoopNest ln;
        char lerr[TT_ERRLEN];
        if (LoopNest_lower(&ln, dag, &steps, lerr) == TT_OK) {
            LoopNest_done(&ln);
            printf("  zero-trial default: %s\n", s.len ? s.data : "(no steps)");
        } else { /* a bug of the sketch rules: say it rather than hide it */
            printf("  zero-trial default: %s\n  (does not lower: %s)\n", s.data, lerr);
            rc = 1;
        }
    }
    StrBuf_done(&s);
    free(sk);
    free(ann);
    return rc;
}

int cmd_sketches(int argc, char **argv) {
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&SKETCHES_OPTIONS, longopts, CLI_MAX_OPTS);
    const char *path = NULL, *target_name = Target_default()->name;
    TeSet sets[APP_MAX_SETS];
    int n_sets = 0, cores = 0, vector = 0, rc = 0; /* 0: not given */
    char err[TT_ERRLEN] = "";
    optind = 1;
    opterr = 0;
    int c;
    while (rc == 0 && (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'e':
            path = optarg;
            break;
        case 's':
            if (n_sets == APP_MAX_SETS) {
                fprintf(stderr, "tunetop sketches: at most %d --set\n", APP_MAX_SETS);
                rc = 2;
            } else if (app_parse_set(optarg, &sets[n_sets], err) != TT_OK) {
                fprintf(stderr, "tunetop sketches: %s\n", err);
                rc = 2;
            } else {
                n_sets++;
            }
            break;
        case 'T':
            target_name = optarg;
            break;
        case 'c':
            if (!positive("--cores", optarg, &cores)) rc = 2;
            break;
        case 'v':
            if (!positive("--vector", optarg, &vector)) rc = 2;
            break;
        case 'h':
            usage(stdout);
            rc = -1;
            break;
        default:
            Cli_badOption("sketches", c, argv, err);
            fprintf(stderr, "tunetop sketches: %s\n", err);
            rc = 2;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "tunetop sketches: unexpected argument '%s' (see tunetop sketches --help)\n", argv[optind]);
        rc = 2;
    }
    const Target *target = rc == 0 ? Target_find(target_name) : NULL;
    if (rc == 0 && !target) {
        fprintf(stderr, "tunetop sketches: unknown target '%s' (choose from: %s)\n", target_name, Target_names());
        rc = 2;
    }
    if (rc == 0 && !path) {
        fprintf(stderr, "tunetop sketches: give --expr FILE.te (see tunetop sketches --help)\n");
        rc = 2;
    }
    TeProgram *g = NULL;
    TeDag *dag = NULL;
    if (rc == 0) {
        g = TeProgram_load(path, sets, n_sets, err);
        dag = calloc(1, sizeof *dag);
        if (!g || TeDag_build(dag, g, err) != TT_OK) {
            fprintf(stderr, "tunetop sketches: %s\n", err);
            rc = 2;
        }
    }
    if (rc == 0) rc = print_sketches(dag, target, path, cores, vector);
    for (int i = 0; i < n_sets; i++)
        free((char *)sets[i].name);
    TeProgram_delete(g);
    free(dag);
    return rc < 0 ? 0 : rc;
}
