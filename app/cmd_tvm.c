/* app/cmd_tvm.c: `tunetop import`: AutoTVM records into a tunetop log. */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "kernels/target.h"
#include "kernels/workload.h"
#include "records/log.h"
#include "records/tvmimport.h"
#include "records/tvmlog.h"

/* ---- import ------------------------------------------------------------------------------ */

static void import_usage(FILE *out) {
    app_help(out, "usage: tunetop import [--target cuda|cpu] [--verbose] LOG --log OUT\n"
                  "\n"
                  "Turns the AutoTVM records of LOG (TVM's JSON lines, TopHub logs included) into tunetop records\n"
                  "appended to the tunetop log OUT (created when missing). A record maps when its TVM task has a\n"
                  "tunetop template (conv2d NCHW, depthwise conv2d NCHW, dense, batch matmul) for its target and its\n"
                  "knobs are those of tunetop's space: the -1 split factor is resolved from the axis length and\n"
                  "the config index is recomputed in tunetop's space. TVM's own index is recomputed too and\n"
                  "compared with the one stored. Records that do not map are counted by reason (--verbose: one\n"
                  "line each).\n"
                  "\n"
                  "Imported records carry their source (file:line) and TVM's cost; they were not measured on\n"
                  "this machine and have no costs of their own: `tune --log OUT` measures them first (best\n"
                  "first), and best/view label them. Records OUT already holds (same task and config) are not\n"
                  "appended again. LOG is only read.\n"
                  "\n"
                  "  --target T   the output log's target (default: that of OUT, else of the first record that maps)\n"
                  "Exit status: 0, 1 when LOG or OUT cannot be read or written, 2 for a usage error.\n");
}

/* A set of "task_key#index" strings: what OUT already holds. */
typedef struct KeySet {
    char **keys;
    size_t n, cap;
} KeySet;

static uint64_t ks_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool KeySet_add(KeySet *this, const char *key) { /* true when new */
    if ((this->n + 1) * 2 > this->cap) {
        size_t cap = this->cap ? this->cap * 2 : 1024;
        char **nk = calloc(cap, sizeof *nk);
        if (!nk) abort();
        for (size_t i = 0; i < this->cap; i++) {
            if (!this->keys[i]) continue;
            size_t s = ks_hash(this->keys[i]) & (cap - 1);
            while (nk[s])
                s = (s + 1) & (cap - 1);
            nk[s] = this->keys[i];
        }
        free(this->keys);
        this->keys = nk;
        this->cap = cap;
    }
    size_t s = ks_hash(key) & (this->cap - 1);
    for (; this->keys[s]; s = (s + 1) & (this->cap - 1))
        if (strcmp(this->keys[s], key) == 0) return false;
    this->keys[s] = strdup(key);
    this->n++;
    return true;
}

static void KeySet_done(KeySet *this) {
    for (size_t i = 0; i < this->cap; i++)
        free(this->keys[i]);
    free(this->keys);
}

static void held_key(const Record *r, char *buf, size_t n) {
    snprintf(buf, n, "%s#%s#%" PRIu64, r->task_key, r->template_name, r->index);
}

static const struct option OWN[] = {{"help", no_argument, 0, 'h'},
                                    {"log", required_argument, 0, 'l'},
                                    {"target", required_argument, 0, 't'},
                                    {"verbose", no_argument, 0, 'v'},
                                    {0, 0, 0, 0}};
const CmdOptions IMPORT_OPTIONS = {"import", OWN, 0};

/* One import: the options, OUT's records and target, the mapping and its tally. */
typedef struct Import {
    const char *path, *base, *out_path, *target;
    bool verbose;
    char out_target[16];
    KeySet held; /* task key, template and index of every record OUT holds */
    TvmMapper *mapper;
    LogWriter *w;
    long n_read, bad, appended, held_already, checked, agree, swapped, widened;
    long reasons[TVM_MAP_REASONS];
    long mapped_by_op[OP_COUNT];
    char example[TVM_MAP_REASONS][160];
} Import;

/* The command line into im: -1 to go on, else the exit code. */
static int import_parse(Import *im, int argc, char **argv) {
    struct option longopts[CLI_MAX_OPTS];
    Cli_longopts(&IMPORT_OPTIONS, longopts, CLI_MAX_OPTS);
    optind = 1;
    opterr = 0;
    int c;
    char err[TT_ERRLEN] = "";
    while ((c = getopt_long(argc, argv, ":hv", longopts, NULL)) != -1) {
        if (c == 'h') {
            import_usage(stdout);
            return 0;
        } else if (c == 'l' || c == 't') {
            *(c == 'l' ? &im->out_path : &im->target) = optarg;
        } else if (c == 'v') {
            im->verbose = true;
        } else {
            Cli_badOption("import", c, argv, err);
            break;
        }
    }
    if (!err[0] && (optind >= argc || !im->out_path))
        snprintf(err, sizeof err, "give a TVM LOG and --log OUT (see tunetop import --help)");
    else if (!err[0] && optind + 1 < argc)
        snprintf(err, sizeof err, "one LOG only ('%s' is extra)", argv[optind + 1]);
    else if (!err[0] && im->target && strcmp(im->target, "cuda") != 0 && strcmp(im->target, "cpu") != 0)
        snprintf(err, sizeof err, "--target wants cuda or cpu, not '%s'", im->target);
    if (err[0]) {
        fprintf(stderr, "tunetop import: %s\n", err);
        return 2;
    }
    im->path = argv[optind];
    const char *base = strrchr(im->path, '/');
    im->base = base ? base + 1 : im->path;
    return -1;
}

/* What OUT holds already, and its target (none when OUT does not exist). */
static Status read_held(Import *im, char *err) {
    FILE *probe = fopen(im->out_path, "rb");
    if (!probe) return TT_OK;
    fclose(probe);
    LogReader *lr;
    LogHeader hdr;
    if (LogReader_open(im->out_path, &lr, &hdr, err) != TT_OK) return TT_ERR;
    snprintf(im->out_target, sizeof im->out_target, "%s", hdr.target);
    Record r;
    Record_init(&r);
    char key[REC_KEY_LEN + REC_NAME_LEN + 32];
    while (LogReader_next(lr, &r, err) == LOG_RECORD) {
        held_key(&r, key, sizeof key);
        KeySet_add(&im->held, key);
    }
    Record_done(&r);
    LogReader_close(lr);
    return TT_OK;
}

/* The mapper, with the device descriptions the spaces are defined with. */
static TvmMapper *make_mapper(void) {
    char err[TT_ERRLEN];
    DeviceInfo cpu, gpu;
    bool have_cpu = false, have_gpu = false;
    const Target *tc = Target_find("cpu"), *tg = Target_find("cuda");
    if (tc && tc->probe && tc->probe(&cpu, err) == TT_OK) have_cpu = true;
    if (tg && tg->probe && tg->probe(&gpu, err) == TT_OK)
        have_gpu = true;
    else if (tg && tg->offline_info && tg->offline_info(NULL, &gpu, err) == TT_OK)
        have_gpu = true;
    return TvmMapper_new(have_cpu ? &cpu : NULL, have_gpu ? &gpu : NULL);
}

/* A mapped record into OUT unless OUT holds it (opened on the first); TT_ERR with err. */
static Status append_mapped(Import *im, const Record *out, char *err) {
    char key[REC_KEY_LEN + REC_NAME_LEN + 32];
    held_key(out, key, sizeof key);
    if (!KeySet_add(&im->held, key)) {
        im->held_already++;
        return TT_OK;
    }
    if (!im->w) {
        if (!im->out_target[0]) snprintf(im->out_target, sizeof im->out_target, "%s", out->target);
        off_t torn;
        if (LogWriter_open(im->out_path, im->out_target, &im->w, &torn, err) != TT_OK) return TT_ERR;
        if (torn >= 0)
            fprintf(stderr, "tunetop import: %s: cut a torn last record at byte %lld\n", im->out_path, (long long)torn);
    }
    if (LogWriter_append(im->w, out, err) != TT_OK) return TT_ERR;
    im->appended++;
    return TT_OK;
}

/* One TVM record: mapped and appended, or counted by the reason it is not. */
static Status import_record(Import *im, const TvmRecord *rec, Record *out, char *err) {
    im->n_read++;
    TvmMapResult res;
    TvmMapper_map(im->mapper, rec, im->base, out, &res);
    if (res.reason == TVM_MAP_OK && im->out_target[0] && strcmp(out->target, im->out_target) != 0) {
        res.reason = TVM_MAP_OTHER_TARGET;
        snprintf(res.why, sizeof res.why, "a %s record, the output log is %s", out->target, im->out_target);
    }
    im->reasons[res.reason]++;
    if (res.reason != TVM_MAP_OK) {
        if (!im->example[res.reason][0])
            snprintf(im->example[res.reason], sizeof im->example[0], "line %ld: %.140s", rec->line, res.why);
        if (im->verbose)
            fprintf(stderr, "tunetop import: line %ld (%s): %s: %s\n", rec->line, rec->task,
                    TvmMapReason_text(res.reason), res.why);
        return TT_OK;
    }
    Workload wl;
    TvmMapReason wr;
    char why[TT_ERRLEN];
    if (TvmRecord_workload(rec, &wl, &wr, why) == TT_OK) im->mapped_by_op[wl.op]++;
    im->checked += res.tvm_index_checked;
    im->agree += res.tvm_index_agrees;
    im->swapped += res.swapped_rx_ry;
    im->widened += res.widened;
    if (im->verbose && res.tvm_index_checked && !res.tvm_index_agrees)
        fprintf(stderr, "tunetop import: line %ld: TVM's index recomputed %" PRId64 ", stored %" PRId64 "\n", rec->line,
                res.tvm_index, rec->index);
    return append_mapped(im, out, err);
}

/* Every record of the TVM log; 0, or 1 after an I/O error (said). */
static int import_records(Import *im, TvmFormat fmt) {
    char err[TT_ERRLEN];
    TvmReader *rd = NULL;
    if (TvmReader_open(im->path, fmt, &rd, err) != TT_OK) {
        fprintf(stderr, "tunetop import: %s\n", err);
        return 1;
    }
    TvmRecord *rec = malloc(sizeof *rec);
    if (!rec) abort();
    Record out;
    Record_init(&out);
    int rc = 0;
    for (;;) {
        TvmReadStatus st = TvmReader_next(rd, rec, err);
        if (st == TVM_BAD || st == TVM_PARTIAL) {
            im->bad++;
            if (im->verbose) fprintf(stderr, "tunetop import: %s: skipped %s\n", im->path, err);
            if (st == TVM_PARTIAL) break;
            continue;
        }
        if (st == TVM_IOERR || (st == TVM_RECORD && import_record(im, rec, &out, err) != TT_OK)) {
            fprintf(stderr, "tunetop import: %s\n", err);
            rc = 1;
            break;
        }
        if (st != TVM_RECORD) break;
    }
    if (im->w && (LogWriter_sync(im->w, err) != TT_OK || LogWriter_closeMarked(im->w, err) != TT_OK)) {
        fprintf(stderr, "tunetop import: %s\n", err);
        rc = 1;
    } else if (im->w) {
        im->w = NULL; /* closed with its close marker */
    }
    Record_done(&out);
    free(rec);
    TvmReader_close(rd);
    return rc;
}

static void import_summary(const Import *im) {
    long mapped = im->reasons[TVM_MAP_OK];
    printf("import %s -> %s: %ld record%s read, %ld malformed line%s skipped\n", im->path, im->out_path, im->n_read,
           im->n_read == 1 ? "" : "s", im->bad, im->bad == 1 ? "" : "s");
    printf("  mapped    %ld (conv2d %ld, depthwise_conv2d %ld, dense %ld, batch_matmul %ld)", mapped,
           im->mapped_by_op[OP_CONV2D], im->mapped_by_op[OP_DEPTHWISE_CONV2D], im->mapped_by_op[OP_DENSE],
           im->mapped_by_op[OP_BATCH_MATMUL]);
    if (im->swapped || im->widened)
        printf("; %ld with old tile_rx/tile_ry names swapped, %ld with 2-way reduction splits", im->swapped,
               im->widened);
    printf("\n  appended  %ld new record%s (%ld already in %s)\n", im->appended, im->appended == 1 ? "" : "s",
           im->held_already, im->out_path);
    printf(
        "  index     TVM's index recomputed for %ld of the mapped records: %ld agree with the stored one, %ld do not\n",
        im->checked, im->agree, im->checked - im->agree);
    for (int r = 1; r < TVM_MAP_REASONS; r++)
        if (im->reasons[r])
            printf("  unmapped  %6ld %s (first: %s)\n", im->reasons[r], TvmMapReason_text((TvmMapReason)r),
                   im->example[r]);
}

int cmd_import(int argc, char **argv) {
    Import *im = calloc(1, sizeof *im);
    if (!im) abort();
    int rc = import_parse(im, argc, argv);
    if (rc >= 0) {
        free(im);
        return rc;
    }
    char err[TT_ERRLEN];
    TvmFormat fmt;
    rc = 1;
    if (TvmLog_detect(im->path, &fmt, err) != TT_OK || read_held(im, err) != TT_OK) {
        fprintf(stderr, "tunetop import: %s\n", err);
    } else if (fmt != TVM_FMT_AUTOTVM) {
        fprintf(stderr, "tunetop import: %s is %s, import reads AutoTVM records only (template configs)\n", im->path,
                fmt == TVM_FMT_TUNETOP ? "a tunetop log" : TvmFormat_name(fmt));
    } else if (im->target && im->out_target[0] && strcmp(im->target, im->out_target) != 0) {
        fprintf(stderr, "tunetop import: %s is a %s log, not %s\n", im->out_path, im->out_target, im->target);
    } else {
        if (!im->out_target[0] && im->target) snprintf(im->out_target, sizeof im->out_target, "%s", im->target);
        im->mapper = make_mapper();
        rc = import_records(im, fmt);
        if (im->w) LogWriter_close(im->w);
        im->w = NULL;
        if (rc == 0 || im->n_read) import_summary(im);
    }
    TvmMapper_delete(im->mapper);
    KeySet_done(&im->held);
    free(im);
    return rc;
}
