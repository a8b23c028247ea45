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
    fprintf(out, "usage: tunetop import [--target cuda|cpu] [--verbose] LOG --log OUT\n"
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

int cmd_import(int argc, char **argv) {
    static const struct option longopts[] = {{"help", no_argument, 0, 'h'},
                                             {"log", required_argument, 0, 'l'},
                                             {"target", required_argument, 0, 't'},
                                             {"verbose", no_argument, 0, 'v'},
                                             {0, 0, 0, 0}};
    const char *out_path = NULL, *target = NULL;
    bool verbose = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            import_usage(stdout);
            return 0;
        case 'l':
            out_path = optarg;
            break;
        case 't':
            target = optarg;
            break;
        case 'v':
            verbose = true;
            break;
        default:
            fprintf(stderr, "tunetop import: unknown option or missing value '%s' (see tunetop import --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind >= argc || !out_path) {
        fprintf(stderr, "tunetop import: give a TVM LOG and --log OUT (see tunetop import --help)\n");
        return 2;
    }
    if (optind + 1 < argc) {
        fprintf(stderr, "tunetop import: one LOG only ('%s' is extra)\n", argv[optind + 1]);
        return 2;
    }
    if (target && strcmp(target, "cuda") != 0 && strcmp(target, "cpu") != 0) {
        fprintf(stderr, "tunetop import: --target wants cuda or cpu, not '%s'\n", target);
        return 2;
    }
    const char *path = argv[optind];
    char err[TT_ERRLEN];
    TvmFormat fmt;
    if (TvmLog_detect(path, &fmt, err) != TT_OK) {
        fprintf(stderr, "tunetop import: %s\n", err);
        return 1;
    }
    if (fmt != TVM_FMT_AUTOTVM) {
        fprintf(stderr, "tunetop import: %s is %s, import reads AutoTVM records only (template configs)\n", path,
                fmt == TVM_FMT_TUNETOP ? "a tunetop log" : TvmFormat_name(fmt));
        return 1;
    }
    /* everything below is released at done, once */
    KeySet held = {0};
    TvmMapper *mapper = NULL;
    TvmReader *rd = NULL;
    TvmRecord *rec = NULL;
    LogWriter *w = NULL;
    Record out;
    Record_init(&out);
    int rc = 1;
    /* what OUT holds already, and its target */
    char out_target[16] = "";
    {
        LogReader *lr;
        LogHeader hdr;
        FILE *probe = fopen(out_path, "rb");
        if (probe) {
            fclose(probe);
            if (LogReader_open(out_path, &lr, &hdr, err) != TT_OK) {
                fprintf(stderr, "tunetop import: %s\n", err);
                goto done;
            }
            snprintf(out_target, sizeof out_target, "%s", hdr.target);
            Record r;
            Record_init(&r);
            char key[REC_KEY_LEN + REC_NAME_LEN + 32];
            while (LogReader_next(lr, &r, err) == LOG_RECORD) {
                held_key(&r, key, sizeof key);
                KeySet_add(&held, key);
            }
            Record_done(&r);
            LogReader_close(lr);
        }
    }
    if (target && out_target[0] && strcmp(target, out_target) != 0) {
        fprintf(stderr, "tunetop import: %s is a %s log, not %s\n", out_path, out_target, target);
        goto done;
    }
    if (!out_target[0] && target) snprintf(out_target, sizeof out_target, "%s", target);

    /* device descriptions the spaces are defined with */
    DeviceInfo cpu, gpu;
    bool have_cpu = false, have_gpu = false;
    const Target *tc = Target_find("cpu"), *tg = Target_find("cuda");
    if (tc && tc->probe && tc->probe(&cpu, err) == TT_OK) have_cpu = true;
    if (tg && tg->probe && tg->probe(&gpu, err) == TT_OK)
        have_gpu = true;
    else if (tg && tg->offline_info && tg->offline_info(NULL, &gpu, err) == TT_OK)
        have_gpu = true;
    mapper = TvmMapper_new(have_cpu ? &cpu : NULL, have_gpu ? &gpu : NULL);

    if (TvmReader_open(path, fmt, &rd, err) != TT_OK) {
        fprintf(stderr, "tunetop import: %s\n", err);
        goto done;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    rec = malloc(sizeof *rec);
    if (!rec) abort();
    long n_read = 0, bad = 0, appended = 0, held_already = 0, checked = 0, agree = 0, swapped = 0, widened = 0;
    long reasons[TVM_MAP_REASONS] = {0};
    long mapped_by_op[OP_COUNT] = {0};
    char example[TVM_MAP_REASONS][160];
    memset(example, 0, sizeof example);
    rc = 0;
    for (;;) {
        TvmReadStatus st = TvmReader_next(rd, rec, err);
        if (st == TVM_BAD || st == TVM_PARTIAL) {
            bad++;
            if (verbose) fprintf(stderr, "tunetop import: %s: skipped %s\n", path, err);
            if (st == TVM_PARTIAL) break;
            continue;
        }
        if (st == TVM_IOERR) {
            fprintf(stderr, "tunetop import: %s\n", err);
            rc = 1;
            break;
        }
        if (st != TVM_RECORD) break;
        n_read++;
        TvmMapResult res;
        TvmMapper_map(mapper, rec, base, &out, &res);
        if (res.reason == TVM_MAP_OK && out_target[0] && strcmp(out.target, out_target) != 0) {
            res.reason = TVM_MAP_OTHER_TARGET;
            snprintf(res.why, sizeof res.why, "a %s record, the output log is %s", out.target, out_target);
        }
        reasons[res.reason]++;
        if (res.reason != TVM_MAP_OK) {
            if (!example[res.reason][0])
                snprintf(example[res.reason], sizeof example[0], "line %ld: %.140s", rec->line, res.why);
            if (verbose)
                fprintf(stderr, "tunetop import: line %ld (%s): %s: %s\n", rec->line, rec->task,
                        TvmMapReason_text(res.reason), res.why);
            continue;
        }
        Workload wl;
        TvmMapReason wr;
        char why[TT_ERRLEN];
        if (TvmRecord_workload(rec, &wl, &wr, why) == TT_OK) mapped_by_op[wl.op]++;
        checked += res.tvm_index_checked;
        agree += res.tvm_index_agrees;
        swapped += res.swapped_rx_ry;
        widened += res.widened;
        if (verbose && res.tvm_index_checked && !res.tvm_index_agrees)
            fprintf(stderr, "tunetop import: line %ld: TVM's index recomputed %" PRId64 ", stored %" PRId64 "\n",
                    rec->line, res.tvm_index, rec->index);
        char key[REC_KEY_LEN + REC_NAME_LEN + 32];
        held_key(&out, key, sizeof key);
        if (!KeySet_add(&held, key)) {
            held_already++;
            continue;
        }
        if (!w) {
            if (!out_target[0]) snprintf(out_target, sizeof out_target, "%s", out.target);
            off_t torn;
            if (LogWriter_open(out_path, out_target, &w, &torn, err) != TT_OK) {
                fprintf(stderr, "tunetop import: %s\n", err);
                rc = 1;
                break;
            }
            if (torn >= 0)
                fprintf(stderr, "tunetop import: %s: cut a torn last record at byte %lld\n", out_path, (long long)torn);
        }
        if (LogWriter_append(w, &out, err) != TT_OK) {
            fprintf(stderr, "tunetop import: %s\n", err);
            rc = 1;
            break;
        }
        appended++;
    }
    if (w) {
        if (LogWriter_sync(w, err) != TT_OK || LogWriter_closeMarked(w, err) != TT_OK) {
            fprintf(stderr, "tunetop import: %s\n", err);
            rc = 1;
            LogWriter_close(w);
        }
        w = NULL;
    }

    long mapped = reasons[TVM_MAP_OK];
    printf("import %s -> %s: %ld record%s read, %ld malformed line%s skipped\n", path, out_path, n_read,
           n_read == 1 ? "" : "s", bad, bad == 1 ? "" : "s");
    printf("  mapped    %ld (conv2d %ld, depthwise_conv2d %ld, dense %ld, batch_matmul %ld)", mapped,
           mapped_by_op[OP_CONV2D], mapped_by_op[OP_DEPTHWISE_CONV2D], mapped_by_op[OP_DENSE],
           mapped_by_op[OP_BATCH_MATMUL]);
    if (swapped || widened)
        printf("; %ld with old tile_rx/tile_ry names swapped, %ld with 2-way reduction splits", swapped, widened);
    printf("\n  appended  %ld new record%s (%ld already in %s)\n", appended, appended == 1 ? "" : "s", held_already,
           out_path);
    printf(
        "  index     TVM's index recomputed for %ld of the mapped records: %ld agree with the stored one, %ld do not\n",
        checked, agree, checked - agree);
    for (int r = 1; r < TVM_MAP_REASONS; r++)
        if (reasons[r])
            printf("  unmapped  %6ld %s (first: %s)\n", reasons[r], TvmMapReason_text((TvmMapReason)r), example[r]);
done:
    if (w) LogWriter_close(w);
    Record_done(&out);
    free(rec);
    TvmReader_close(rd);
    TvmMapper_delete(mapper);
    KeySet_done(&held);
    return rc;
}
