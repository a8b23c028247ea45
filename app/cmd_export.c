/* app/cmd_export.c: `tunetop export LOG -o DIR`: the best config of each task
 * of a record log as self-contained source (kernels/export/export.h), with an
 * umbrella header and a CMakeLists.txt that builds a static and a shared
 * library. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/commands.h"
#include "app/device.h"
#include "app/opts.h"
#include "kernels/export/export.h"
#include "kernels/target.h"
#include "records/history.h"
#include "tuner/net/network.h"

static void usage(FILE *out) {
    NetworkOptions nd;
    NetworkOptions_defaults(&nd);
    fprintf(out,
            "usage: tunetop export LOG -o DIR [options]\n"
            "\n"
            "Writes, for the best successful record of each task of the record log LOG, source that builds and\n"
            "runs without tunetop: one kernel per task with its own header (the ABI: create with the weights,\n"
            "packed once; run; destroy; the blocked-layout pack / run / unpack steps as functions of their own),\n"
            "one umbrella header DIR/NAME.h and a DIR/CMakeLists.txt that builds libNAME.a and libNAME.so.\n"
            "The dialect follows the log's target: cpu gives C (compiled with cc -O3 -march=native -fopenmp),\n"
            "opencl gives .cl kernels plus host C on the OpenCL API, cuda gives .cu files on the CUDA Runtime API.\n"
            "Every kernel starts with a comment naming its workload, template, config (text and index), measured\n"
            "latency and GFLOPS, this log and the date. A task whose trials all failed gets the template's\n"
            "default config (the first valid one) with a warning; --strict refuses instead.\n"
            "\n"
            "which tasks (default: every task of the log):\n"
            "  --task SPEC           a task, e.g. dense:m=64,n=1024,k=1024 (repeatable)\n"
            "  --network NAME        every task of a built-in network (%s)\n"
            "  --batch-size B --layout NCHW|NHWC --image-size S --seq-len L --ops conv2d,dense,...\n"
            "                        network options, as given to tune (defaults %d, %s, the network's, %d, all)\n"
            "output:\n"
            "  -o, --output DIR      the directory to write; it must not exist or be empty\n"
            "  --force               replace DIR even when it is not empty\n"
            "  --name NAME           library and umbrella header name (default tunetop_kernels)\n"
            "  --strict              refuse tasks without a successful record instead of using the default config\n"
            "  --target T            check that the log is of target T (the log says which)\n"
            "  --arch ARCH           the architecture whose limits configs are checked against (default %s)\n"
            "\n"
            "Errors (one line, exit status 1; nothing is written): requested tasks the log has no record of\n"
            "(named), a log of another target than --target, an output directory that is not empty (without\n"
            "--force), a directory that cannot be written or a full disk. Usage errors exit with status 2.\n",
            Network_names(), nd.batch, Layout_name(nd.layout), nd.seq_len, app_arch_defaults());
}

enum {
    O_TASK = 256,
    O_NETWORK,
    O_BATCHSIZE,
    O_LAYOUT,
    O_IMAGE,
    O_SEQ,
    O_OPS,
    O_FORCE,
    O_NAME,
    O_STRICT,
    O_TARGET,
    O_ARCH,
    O_HELP
};

typedef struct Want {
    Workload wl;
    char key[WORKLOAD_KEY_LEN];
} Want;

static Dialect dialect_of(const Target *t) { return t->dialect; }

/* "conv2d_3": op name and 1-based position */
static void make_prefix(const Workload *wl, int i, char *buf, size_t n) {
    snprintf(buf, n, "%s_%d", Op_name(wl->op), i);
}

int cmd_export(int argc, char **argv) {
    if (app_names_model(argc, argv)) return cmd_export_model(argc, argv);
    static const struct option longopts[] = {{"task", required_argument, 0, O_TASK},
                                             {"network", required_argument, 0, O_NETWORK},
                                             {"batch-size", required_argument, 0, O_BATCHSIZE},
                                             {"layout", required_argument, 0, O_LAYOUT},
                                             {"image-size", required_argument, 0, O_IMAGE},
                                             {"seq-len", required_argument, 0, O_SEQ},
                                             {"ops", required_argument, 0, O_OPS},
                                             {"output", required_argument, 0, 'o'},
                                             {"force", no_argument, 0, O_FORCE},
                                             {"name", required_argument, 0, O_NAME},
                                             {"strict", no_argument, 0, O_STRICT},
                                             {"target", required_argument, 0, O_TARGET},
                                             {"arch", required_argument, 0, O_ARCH},
                                             {"help", no_argument, 0, O_HELP},
                                             {0, 0, 0, 0}};
    const char *out_dir = NULL, *network = NULL, *ops = NULL, *name = "tunetop_kernels", *want_target = NULL,
               *arch = NULL;
    bool force = false, strict = false, net_opts = false;
    NetworkOptions nopt;
    NetworkOptions_defaults(&nopt);
    const char **specs = calloc((size_t)argc + 1, sizeof *specs);
    int n_specs = 0;
    char err[TT_ERRLEN] = "";
    int rc = 2;
    Want *want = NULL;
    int n_want = 0;
    History h;
    History_init(&h);
    ExportBundle b;
    memset(&b, 0, sizeof b);
    Space space; /* the space of the task being exported; freed at done */
    Space_init(&space);

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:", longopts, NULL)) != -1) {
        Status ok = TT_OK;
        switch (c) {
        case O_TASK:
            specs[n_specs++] = optarg;
            break;
        case O_NETWORK:
            network = optarg;
            break;
        case O_BATCHSIZE:
            ok = opt_int(optarg, "--batch-size", 1, 4096, &nopt.batch, err), net_opts = true;
            break;
        case O_LAYOUT:
            ok = opt_layout(optarg, &nopt.layout, err), net_opts = true;
            break;
        case O_IMAGE:
            ok = opt_int(optarg, "--image-size", 8, 4096, &nopt.image_size, err), net_opts = true;
            break;
        case O_SEQ:
            ok = opt_int(optarg, "--seq-len", 1, 65536, &nopt.seq_len, err), net_opts = true;
            break;
        case O_OPS:
            ops = optarg, net_opts = true;
            break;
        case 'o':
            out_dir = optarg;
            break;
        case O_FORCE:
            force = true;
            break;
        case O_NAME:
            name = optarg;
            break;
        case O_STRICT:
            strict = true;
            break;
        case O_TARGET:
            want_target = optarg;
            break;
        case O_ARCH:
            arch = optarg;
            break;
        case O_HELP:
            usage(stdout);
            rc = 0;
            goto done;
        case ':':
            snprintf(err, sizeof err, "option '%s' needs a value", argv[optind - 1]);
            ok = TT_ERR;
            break;
        default:
            snprintf(err, sizeof err, "unknown option '%s'", argv[optind - 1]);
            ok = TT_ERR;
            break;
        }
        if (ok != TT_OK) goto usage_error;
    }
    if (optind >= argc) {
        snprintf(err, sizeof err, "give a LOG file");
        goto usage_error;
    }
    if (optind + 1 < argc) {
        snprintf(err, sizeof err, "one LOG file only ('%s' is extra)", argv[optind + 1]);
        goto usage_error;
    }
    const char *log_path = argv[optind];
    if (!out_dir) {
        snprintf(err, sizeof err, "give the output directory with -o DIR");
        goto usage_error;
    }
    if (network && n_specs) {
        snprintf(err, sizeof err, "give --task or --network, not both");
        goto usage_error;
    }
    if (net_opts && !network) {
        snprintf(err, sizeof err, "network options need --network");
        goto usage_error;
    }
    if (Export_checkPrefix(name, err) != TT_OK) {
        snprintf(err, sizeof err, "--name '%s' must be a C name (letters, digits, '_')", name);
        goto usage_error;
    }
    if (want_target && !Target_find(want_target)) {
        snprintf(err, sizeof err, "unknown target '%s' (choose from: %s)", want_target, Target_names());
        goto usage_error;
    }
    if (ops && Network_parseOps(ops, &nopt.op_mask, err) != TT_OK) goto usage_error;

    /* which tasks */
    if (n_specs) {
        want = calloc((size_t)n_specs, sizeof *want);
        for (int i = 0; i < n_specs; i++) {
            char why[TT_ERRLEN];
            if (Workload_parse(specs[i], &want[n_want].wl, why) != TT_OK) {
                fprintf(stderr, "tunetop export: --task %s: %s\n", specs[i], why);
                rc = 2;
                goto done;
            }
            Workload_key(&want[n_want].wl, want[n_want].key, sizeof want[n_want].key);
            n_want++;
        }
    } else if (network) {
        NetworkTask *nt = NULL;
        NetworkUntuned *un = NULL;
        int n_nt = 0, n_un = 0;
        if (Network_extract(network, &nopt, &nt, &n_nt, &un, &n_un, err) != TT_OK) goto usage_error;
        want = calloc((size_t)n_nt + 1, sizeof *want);
        for (int i = 0; i < n_nt; i++) {
            want[n_want].wl = nt[i].wl;
            Workload_key(&nt[i].wl, want[n_want].key, sizeof want[n_want].key);
            n_want++;
        }
        free(nt);
        free(un);
    }

    rc = 1;
    Status st = History_load(&h, log_path, err);
    if (st != TT_OK) {
        fprintf(stderr, "tunetop export: %s\n", err);
        goto done;
    }
    if (h.end == LOG_TORN) fprintf(stderr, "tunetop export: warning: %s (read up to there)\n", h.end_msg);
    const char *target_name = h.header.target;
    if (want_target && strcmp(want_target, target_name) != 0) {
        fprintf(stderr, "tunetop export: %s is a log of target %s, not %s\n", log_path, target_name, want_target);
        goto done;
    }
    if (!n_specs && !network) {
        if (h.n_tasks == 0) {
            fprintf(stderr, "tunetop export: %s has no records\n", log_path);
            goto done;
        }
        want = calloc((size_t)h.n_tasks, sizeof *want);
        for (int i = 0; i < h.n_tasks; i++) {
            char why[TT_ERRLEN];
            /* a workload tuned under two templates is one kernel: the faster (History_bestOfKey) */
            if (History_find(&h, h.tasks[i].key) != &h.tasks[i]) continue;
            if (Workload_parse(h.tasks[i].key, &want[n_want].wl, why) != TT_OK) {
                fprintf(stderr, "tunetop export: %s: task key '%s' does not parse: %s\n", log_path, h.tasks[i].key,
                        why);
                goto done;
            }
            snprintf(want[n_want].key, sizeof want[n_want].key, "%s", h.tasks[i].key);
            n_want++;
        }
    }
    /* every requested task must have records in the log */
    int missing = 0;
    char names[TT_ERRLEN] = "";
    for (int i = 0; i < n_want; i++) {
        if (History_find(&h, want[i].key)) continue;
        if (missing < 3) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", missing ? "; " : "", want[i].key);
        }
        missing++;
    }
    if (missing) {
        fprintf(stderr, "tunetop export: %s has no records for %d of the %d requested task%s: %s%s\n", log_path,
                missing, n_want, n_want == 1 ? "" : "s", names, missing > 3 ? "; ..." : "");
        goto done;
    }

    const Target *target;
    DeviceInfo dev;
    const Target *named = Target_find(target_name);
    bool offline = named && named->offline_info; /* no device needed to export for it */
    if (app_resolve_device(target_name, arch, offline, &target, &dev, err) != TT_OK) {
        fprintf(stderr, "tunetop export: %s\n", err);
        goto done;
    }
    Dialect dialect = dialect_of(target);
    ExportBundle_init(&b, name, dialect, &dev);
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm);

    int defaults = 0;
    for (int i = 0; i < n_want; i++) {
        const HistoryTask *ht = History_find(&h, want[i].key);
        const Record *best = History_bestOfKey(&h, want[i].key);
        if (best && best->n_costs == 0) best = NULL; /* compile-only records: nothing measured */
        const Template *tmpl = Template_forRecord(&want[i].wl, target->family, best ? best->template_name : NULL, err);
        if (!tmpl) {
            fprintf(stderr, "tunetop export: %s: %s\n", want[i].key, err);
            goto done;
        }
        Space_done(&space); /* the previous task's */
        char why[TT_ERRLEN];
        if (tmpl->define_space(&want[i].wl, &dev, &space, why) != TT_OK) {
            fprintf(stderr, "tunetop export: %s: %s\n", want[i].key, why);
            goto done;
        }
        int32_t choice[SPACE_MAX_KNOBS] = {0};
        ExportRequest req = {
            .wl = &want[i].wl, .tmpl = tmpl, .space = &space, .choice = choice, .dev = &dev, .dialect = dialect};
        req.meta.log_path = log_path;
        req.meta.date = date;
        req.meta.pack_s = -1;
        char note[TT_ERRLEN] = "";
        if (best) {
            if (strcmp(best->template_name, tmpl->name) != 0) {
                fprintf(stderr, "tunetop export: %s: the log's best record is of template %s, this build has %s\n",
                        want[i].key, best->template_name, tmpl->name);
                goto done;
            }
            if (best->n_choice == space.n_knobs)
                memcpy(choice, best->choice, (size_t)space.n_knobs * sizeof *choice);
            else
                Space_decode(&space, best->index, choice);
            char text[REC_CONFIG_LEN];
            Space_format(&space, choice, text, sizeof text);
            if (best->config[0] && strcmp(text, best->config) != 0) {
                fprintf(stderr,
                        "tunetop export: %s: the log's best config (%s) is not in this machine's space for the "
                        "template (here: %s); was the log tuned on another kind of %s?\n",
                        want[i].key, best->config, text, target_name);
                goto done;
            }
            req.meta.latency_s = Record_cost(best);
            req.meta.pack_s = best->pack_s;
        } else {
            if (strict) {
                fprintf(stderr, "tunetop export: %s has no successful record for %s (--strict)\n", log_path,
                        want[i].key);
                goto done;
            }
            if (Export_defaultChoice(tmpl, &want[i].wl, &space, &dev, choice, why) != TT_OK) {
                fprintf(stderr, "tunetop export: %s: %s\n", want[i].key, why);
                goto done;
            }
            snprintf(note, sizeof note, "no successful record among the log's %d trials: the template's default config",
                     ht->n_records);
            req.meta.note = note;
            fprintf(stderr,
                    "tunetop export: warning: %s has no successful record (%d trial%s): exported with the "
                    "template's default config (index %llu)\n",
                    want[i].key, ht->n_records, ht->n_records == 1 ? "" : "s",
                    (unsigned long long)Space_encode(&space, choice));
            defaults++;
        }
        char prefix[EXPORT_PREFIX_LEN];
        make_prefix(&want[i].wl, i + 1, prefix, sizeof prefix);
        req.prefix = prefix;
        ExportKernel k;
        st = Export_kernel(&req, &k, err);
        if (st != TT_OK || ExportBundle_add(&b, &k, err) != TT_OK) {
            fprintf(stderr, "tunetop export: %s: %s\n", want[i].key, err);
            if (st == TT_OK) ExportKernel_done(&k);
            goto done;
        }
    }
    if (ExportBundle_write(&b, out_dir, force, err) != TT_OK) {
        fprintf(stderr, "tunetop export: %s\n", err);
        goto done;
    }
    printf("exported %d %s kernel%s to %s (%d with the default config): %s.h, CMakeLists.txt -> lib%s.a, lib%s.so\n",
           b.n_kernels, Export_dialectName(dialect), b.n_kernels == 1 ? "" : "s", out_dir, defaults, name, name, name);
    printf("build: cmake -S %s -B %s/build && cmake --build %s/build\n", out_dir, out_dir, out_dir);
    rc = 0;
    goto done;

usage_error:
    fprintf(stderr, "tunetop export: %s (see tunetop export --help)\n", err);
    rc = 2;
done:
    Space_done(&space);
    ExportBundle_done(&b);
    History_done(&h);
    free(want);
    free(specs);
    return rc;
}
