/* tests/unit/test_integrity.c: nothing lost and nothing silently wrong.
 * Checksums (CRC-32C values, sealing, a flipped bit anywhere in a record),
 * costs that are not latencies, old logs without checksums, readers that
 * refuse FIFOs without blocking, a log deleted or replaced under its writer,
 * failed writes and syncs through the fault seam, and a crash cut at every
 * byte of the last batch. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernels/targets/peak.h"
#include "records/codec.h"
#include "records/crc32c.h"
#include "records/history.h"
#include "records/log.h"
#include "records/logio.h"
#include "records/record.h"
#include "tests/check.h"
#include "ui/logview.h"

static char tmpdir[64];

#include "app/cli.c" /* the option tables and the help printer cmd_records.c uses */
#include "app/cmd_records.c"

static char cli_out[16384], cli_err[4096];
static int run_cmd(int (*cmd)(int, char **), int argc, char **argv);

static int count_newlines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static const char *tmp_path(const char *name) {
    static char buf[8][320];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 320, "%s/%s", tmpdir, name);
    return p;
}

static char *slurp(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    *len = got;
    return buf;
}

static void spit(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (len) fwrite(data, 1, len, f);
    fclose(f);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void make_record(Record *r, int i) {
    Record_done(r);
    Record_init(r);
    snprintf(r->task_key, sizeof r->task_key, "dense:m=%d,n=64,k=32", 1 + i % 2);
    snprintf(r->template_name, sizeof r->template_name, "dense.cpu");
    snprintf(r->target, sizeof r->target, "cpu");
    r->index = (uint64_t)i * 7 + 1;
    r->n_choice = 2;
    r->choice[0] = i;
    r->choice[1] = -i;
    snprintf(r->config, sizeof r->config, "tile=[%d] unroll=%d", i, i % 2);
    r->n_costs = 2;
    r->costs[0] = 1.38e-6 * (1 + i % 5);
    r->costs[1] = 1.40e-6 * (1 + i % 5);
    if (i % 7 == 6) {
        Record_setError(r, 4, "wrong answer at element 3");
        r->n_costs = 0;
    }
    r->build_s = 0.2;
    r->run_s = 0.05;
    r->timestamp = 1763791792.5 + i;
}

static bool same_record(const Record *a, const Record *b) {
    if (strcmp(a->task_key, b->task_key) || a->index != b->index || a->n_costs != b->n_costs ||
        a->error_no != b->error_no || strcmp(a->config, b->config))
        return false;
    for (int k = 0; k < a->n_costs; k++)
        if (a->costs[k] != b->costs[k]) return false;
    return a->timestamp == b->timestamp;
}

/* Writes n records; offs[i] = where record i starts, offs[n] = the file size. */
static void write_log_once(const char *path, int n, long *offs);

/* A log whose last byte is zero is written again (the header's creation time
 * changes every checksum): a last record that ends in a zero byte, damaged,
 * reads as a torn write followed by zeros (records/log.c, torn_then_zeros),
 * which the tests below would count as a miss. */
static void write_log(const char *path, int n, long *offs) {
    for (int tries = 0; tries < 100; tries++) {
        write_log_once(path, n, offs);
        size_t len;
        char *bytes = slurp(path, &len);
        bool zero_end = len > 0 && bytes[len - 1] == 0;
        free(bytes);
        if (!zero_end) return;
    }
    abort();
}

static void write_log_once(const char *path, int n, long *offs) {
    unlink(path);
    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    if (LogWriter_open(path, "cpu", &w, &trunc, err)) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    Record r;
    Record_init(&r);
    for (int i = 0; i < n; i++) {
        if (offs) offs[i] = file_size(path);
        make_record(&r, i);
        if (LogWriter_append(w, &r, err)) abort();
    }
    Record_done(&r);
    LogWriter_close(w);
    if (offs) offs[n] = file_size(path);
}

/* Reads a log: how many records came out, each checked against make_record. */
static int read_back(const char *path, LogReadStatus *end, char *msg, int *wrong) {
    LogReader *rd;
    char err[TT_ERRLEN];
    *end = LOG_DAMAGED;
    *wrong = 0;
    if (LogReader_open(path, &rd, NULL, err)) {
        snprintf(msg, TT_ERRLEN, "%s", err);
        return -1;
    }
    Record r, want;
    Record_init(&r);
    Record_init(&want);
    int n = 0;
    LogReadStatus st;
    while ((st = LogReader_next(rd, &r, msg)) == LOG_RECORD) {
        make_record(&want, n);
        if (!same_record(&r, &want)) (*wrong)++;
        n++;
    }
    Record_done(&r);
    Record_done(&want);
    LogReader_close(rd);
    *end = st;
    return n;
}

/* ---- checksums -------------------------------------------------------------- */

TEST(crc32c_known_values_and_both_forms_agree) {
    CHECK_EQ_INT(Crc32c_update(0, "123456789", 9), 0xe3069283u); /* the standard check value */
    CHECK_EQ_INT(Crc32c_update(0, "", 0), 0);
    unsigned char zeros[32] = {0};
    CHECK_EQ_INT(Crc32c_update(0, zeros, 32), 0x8a9136aau); /* RFC 3720 B.4 */
    unsigned char buf[300];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)((s = s * 1103515245u + 12345u) >> 16);
    for (size_t off = 0; off < 9; off++)
        for (size_t n = 0; n + off <= sizeof buf; n += 13)
            CHECK_EQ_INT(Crc32c_update(0, buf + off, n), Crc32c_updateTable(0, buf + off, n));
    /* continuing a CRC over a second piece is the CRC of the whole */
    CHECK_EQ_INT(Crc32c_update(Crc32c_update(0, buf, 100), buf + 100, 200), Crc32c_update(0, buf, 300));
}

/* A map of k entries {"kN": N}, encoded by msgpack itself. */
static void encode_map(int k, char **bytes, size_t *len) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, (size_t)k);
    for (int i = 0; i < k; i++) {
        char key[16];
        int n = snprintf(key, sizeof key, "k%d", i);
        msgpack_pack_str_with_body(&pk, key, (size_t)n);
        msgpack_pack_int(&pk, i);
    }
    *len = sb.size;
    *bytes = msgpack_sbuffer_release(&sb);
    msgpack_sbuffer_destroy(&sb);
}

TEST(seal_grows_any_map_by_one_checked_entry) {
    char err[TT_ERRLEN];
    for (int k = 0; k <= 17; k++) { /* fixmaps, the 15 -> map16 step, map16 */
        char *b;
        size_t n;
        encode_map(k, &b, &n);
        CHECK(Msgpack_checkSeal((unsigned char *)b, n, NULL, NULL) == SEAL_NONE);
        CHECK(Msgpack_seal(&b, &n, err) == TT_OK);
        CHECK(Msgpack_checkSeal((unsigned char *)b, n, NULL, NULL) == SEAL_OK);
        size_t len = 0;
        CHECK_EQ_INT(Msgpack_scan((unsigned char *)b, n, &len), SCAN_COMPLETE);
        CHECK_EQ_INT(len, n);
        msgpack_unpacked up;
        msgpack_unpacked_init(&up);
        size_t off = 0;
        CHECK(msgpack_unpack_next(&up, b, n, &off) == MSGPACK_UNPACK_SUCCESS);
        CHECK(up.data.type == MSGPACK_OBJECT_MAP && up.data.via.map.size == (uint32_t)k + 1);
        if (up.data.type == MSGPACK_OBJECT_MAP && up.data.via.map.size == (uint32_t)k + 1) {
            const msgpack_object_kv *last = &up.data.via.map.ptr[k];
            CHECK(last->key.type == MSGPACK_OBJECT_STR && last->key.via.str.size == 3 &&
                  memcmp(last->key.via.str.ptr, "crc", 3) == 0);
        }
        msgpack_unpacked_destroy(&up);
        /* every single flipped bit is caught */
        int caught = 0;
        for (size_t i = 0; i < n; i++)
            for (int bit = 0; bit < 8; bit++) {
                b[i] ^= (char)(1 << bit);
                caught += Msgpack_checkSeal((unsigned char *)b, n, NULL, NULL) != SEAL_OK;
                b[i] ^= (char)(1 << bit);
            }
        CHECK_EQ_INT(caught, (long long)n * 8);
        free(b);
    }
    char *arr = malloc(1);
    arr[0] = (char)0x90; /* an empty array is not a map */
    size_t one = 1;
    CHECK(Msgpack_seal(&arr, &one, err) == TT_ERR);
    free(arr);
}

/* A copy of the log at path with one bit flipped, read by the reader, by
 * `best`'s History and by the resuming writer: each must call it damage (at
 * or before the flipped record) and never hand out a changed record. */
/* 1 when the flip is reported as damage, 0 when not, -1 when the flip leaves
 * the file's last byte zero: a damaged last record that ends in a zero byte
 * reads as a torn write followed by zeros (records/log.c, torn_then_zeros). */
static int flip_reports(const char *path, const char *copy, long at, int bit, long rec_start, int *bad) {
    size_t n;
    char *bytes = slurp(path, &n);
    bytes[at] ^= (char)(1 << bit);
    bool zero_end = bytes[n - 1] == 0;
    spit(copy, bytes, n);
    free(bytes);
    if (zero_end) return -1;
    LogReadStatus end;
    char msg[TT_ERRLEN] = "";
    int wrong;
    read_back(copy, &end, msg, &wrong);
    int ok = 1;
    if (end != LOG_DAMAGED || wrong) ok = 0;
    char off[32];
    snprintf(off, sizeof off, "offset %ld", rec_start);
    if (!strstr(msg, "damaged at byte offset")) ok = 0;
    History h;
    char err[TT_ERRLEN];
    if (History_load(&h, copy, err) != TT_ERR || h.end != LOG_DAMAGED) ok = 0;
    History_done(&h);
    LogWriter *w;
    off_t trunc;
    if (LogWriter_open(copy, "cpu", &w, &trunc, err) == TT_OK) {
        LogWriter_close(w);
        ok = 0;
    } else if (!strstr(err, "damaged")) {
        ok = 0;
    }
    if (!ok && *bad < 5) {
        fprintf(stderr, "  flip byte %ld bit %d (record at %ld): end %d wrong %d: %s\n", at, bit, rec_start, end, wrong,
                msg);
        (*bad)++;
    }
    return ok;
}

TEST(a_flipped_bit_anywhere_in_a_record_is_damage) {
    const char *path = tmp_path("flip.log"), *copy = tmp_path("flip-copy.log");
    long offs[8];
    write_log(path, 7, offs);
    int bad = 0, flips = 0, reported = 0, zero_end = 0;
    /* every bit of a record in the middle and of the last record */
    int which[2] = {3, 6};
    for (int w = 0; w < 2; w++) {
        int r = which[w];
        for (long at = offs[r]; at < offs[r + 1]; at++)
            for (int bit = 0; bit < 8; bit++) {
                int k = flip_reports(path, copy, at, bit, offs[r], &bad);
                if (k < 0) {
                    zero_end++;
                    continue;
                }
                flips++;
                reported += k;
            }
    }
    printf("  %d single-bit flips in two records: %d reported as damage (%d more left the last byte zero)\n", flips,
           reported, zero_end);
    CHECK_EQ_INT(reported, flips);
}

/* The byte offset of the first cost (0xcb + 8 bytes after "costs" and the array header). */
static long first_cost_at(const char *bytes, size_t n, long from) {
    for (size_t i = (size_t)from; i + 6 < n; i++)
        if (memcmp(bytes + i,
                   "\xa5"
                   "costs",
                   6) == 0)
            return (long)i + 6 + 1 + 1; /* key, array header, 0xcb */
    return -1;
}

TEST(a_cost_bit_flip_is_reported_by_best_and_dump) {
    /* the case: 1.38e-06 s with one exponent bit flipped reads as 4.06e-45 s */
    const char *path = tmp_path("cost.log"), *copy = tmp_path("cost-flip.log");
    long offs[4];
    write_log(path, 3, offs);
    size_t n;
    char *bytes = slurp(path, &n);
    long c = first_cost_at(bytes, n, offs[1]);
    CHECK(c > offs[1] && c < offs[2]);
    double before, after;
    uint64_t u;
    memcpy(&u, bytes + c, 8);
    u = __builtin_bswap64(u);
    memcpy(&before, &u, 8);
    bytes[c] ^= 0x10; /* an exponent bit */
    memcpy(&u, bytes + c, 8);
    u = __builtin_bswap64(u);
    memcpy(&after, &u, 8);
    CHECK(before > 1e-6 && after > 0 && after < 1e-30); /* still a valid, positive, tiny number */
    spit(copy, bytes, n);
    free(bytes);
    LogReadStatus end;
    char msg[TT_ERRLEN] = "";
    int wrong;
    CHECK_EQ_INT(read_back(copy, &end, msg, &wrong), 1);
    CHECK_EQ_INT(end, LOG_DAMAGED);
    char want[64];
    snprintf(want, sizeof want, "damaged at byte offset %ld: checksum mismatch", offs[1]);
    CHECK_CONTAINS(msg, want);
    char *best_argv[] = {"best", (char *)copy, NULL}, *dump_argv[] = {"dump", (char *)copy, NULL};
    CHECK_EQ_INT(run_cmd(cmd_best, 2, best_argv), 1);
    CHECK_CONTAINS(cli_err, want);
    CHECK_EQ_INT(run_cmd(cmd_dump, 2, dump_argv), 1);
    CHECK_CONTAINS(cli_err, want);
    CHECK_EQ_INT(count_newlines(cli_out), 1); /* the record before it only */
    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    CHECK(LogWriter_open(copy, "cpu", &w, &trunc, err) == TT_ERR); /* what tune does on resume */
    CHECK_CONTAINS(err, want);
}

/* Re-seals a record whose first cost was replaced by v (a log the writer
 * never writes, but whose checksum is right): decoding must still refuse it. */
static bool write_log_with_cost_once(const char *path, double v);

/* Written again while the re-sealed record ends in a zero byte (see write_log). */
static void write_log_with_cost(const char *path, double v) {
    for (int tries = 0; tries < 100; tries++)
        if (write_log_with_cost_once(path, v)) return;
    abort();
}

/* false when the re-sealed record ends in a zero byte */
static bool write_log_with_cost_once(const char *path, double v) {
    long offs[3];
    write_log(path, 2, offs);
    size_t n;
    char *bytes = slurp(path, &n);
    long c = first_cost_at(bytes, n, offs[1]);
    uint64_t u;
    memcpy(&u, &v, 8);
    u = __builtin_bswap64(u);
    memcpy(bytes + c, &u, 8);
    size_t rlen = (size_t)(offs[2] - offs[1]) - SEAL_LEN;
    char *rec = malloc(rlen);
    memcpy(rec, bytes + offs[1], rlen);
    /* take the old seal off: map count back by one, then seal again */
    unsigned char *m = (unsigned char *)rec;
    if (m[0] == 0xde)
        m[2]--;
    else
        m[0]--;
    char err[TT_ERRLEN];
    if (Msgpack_seal(&rec, &rlen, err)) abort();
    FILE *f = fopen(path, "wb");
    fwrite(bytes, 1, (size_t)offs[1], f);
    fwrite(rec, 1, rlen, f);
    fclose(f);
    bool zero_end = rec[rlen - 1] == 0;
    free(rec);
    free(bytes);
    return !zero_end;
}

TEST(costs_that_are_not_latencies_are_refused) {
    const double bad[] = {-1.38e-6, 0.0, -0.0, INFINITY, -INFINITY, NAN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *path = tmp_path("badcost.log");
        write_log_with_cost(path, bad[i]);
        LogReadStatus end;
        char msg[TT_ERRLEN] = "";
        int wrong;
        CHECK_EQ_INT(read_back(path, &end, msg, &wrong), 1);
        CHECK_EQ_INT(end, LOG_DAMAGED);
        CHECK_CONTAINS(msg, "a latency must be finite and positive");
        History h;
        char err[TT_ERRLEN];
        CHECK(History_load(&h, path, err) == TT_ERR);
        /* the record before it is the only best there is */
        const HistoryTask *t = History_find(&h, "dense:m=1,n=64,k=32");
        CHECK(t && HistoryTask_best(t) && HistoryTask_best(t)->costs[0] > 0);
        CHECK(History_find(&h, "dense:m=2,n=64,k=32") == NULL);
        History_done(&h);
    }
    /* and the writer never writes one */
    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    const char *path = tmp_path("neg.log");
    unlink(path);
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    Record r;
    Record_init(&r);
    make_record(&r, 0);
    r.costs[1] = -r.costs[1];
    CHECK(LogWriter_append(w, &r, err) == TT_ERR);
    CHECK_CONTAINS(err, "finite and positive");
    Record_done(&r);
    LogWriter_close(w);
}

/* ---- old logs --------------------------------------------------------------- */

/* A log as versions before checksums wrote it: no seal anywhere. */
static void write_old_log(const char *path, int n) {
    FILE *f = fopen(path, "wb");
    LogHeader hd = {.version = 1, .created = 1763791792.0};
    snprintf(hd.target, sizeof hd.target, "cpu");
    char *b, err[TT_ERRLEN];
    size_t len;
    if (LogHeader_encode(&hd, &b, &len, err)) abort();
    fwrite(b, 1, len, f);
    free(b);
    Record r;
    Record_init(&r);
    for (int i = 0; i < n; i++) {
        make_record(&r, i);
        if (Record_encode(&r, &b, &len, err)) abort();
        fwrite(b, 1, len, f);
        free(b);
    }
    Record_done(&r);
    fclose(f);
}

TEST(old_logs_without_checksums_still_read_unchecked) {
    const char *path = tmp_path("old.log");
    write_old_log(path, 5);
    LogReader *rd;
    char err[TT_ERRLEN], msg[TT_ERRLEN];
    CHECK(LogReader_open(path, &rd, NULL, err) == TT_OK);
    Record r;
    Record_init(&r);
    int n = 0;
    while (LogReader_next(rd, &r, msg) == LOG_RECORD)
        n++;
    CHECK_EQ_INT(n, 5);
    CHECK_EQ_INT(LogReader_uncheckedRecords(rd), 5);
    LogReader_close(rd);

    /* resuming appends checked records; from the first of them on, a record
     * without a checksum is damage */
    LogWriter *w;
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    for (int i = 5; i < 8; i++) {
        make_record(&r, i);
        CHECK(LogWriter_append(w, &r, err) == TT_OK);
    }
    LogWriter_close(w);
    LogReadStatus end;
    int wrong;
    CHECK_EQ_INT(read_back(path, &end, msg, &wrong), 8);
    CHECK_EQ_INT(end, LOG_END);
    CHECK_EQ_INT(wrong, 0);
    char *b;
    size_t len;
    make_record(&r, 8);
    CHECK(Record_encode(&r, &b, &len, err) == TT_OK);
    FILE *f = fopen(path, "ab");
    fwrite(b, 1, len, f);
    fclose(f);
    free(b);
    CHECK_EQ_INT(read_back(path, &end, msg, &wrong), 8);
    CHECK_EQ_INT(end, LOG_DAMAGED);
    CHECK_CONTAINS(msg, "without its checksum");
    Record_done(&r);
}

/* ---- readers never block ---------------------------------------------------- */

static int run_cmd(int (*cmd)(int, char **), int argc, char **argv) {
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    char out_path[160], err_path[160];
    snprintf(out_path, sizeof out_path, "%s/cli.out", tmpdir);
    snprintf(err_path, sizeof err_path, "%s/cli.err", tmpdir);
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644),
        fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, 1);
    dup2(fe, 2);
    close(fo);
    close(fe);
    int rc = cmd(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    size_t n;
    char *o = slurp(out_path, &n);
    snprintf(cli_out, sizeof cli_out, "%.*s", (int)n, o ? o : "");
    free(o);
    char *e = slurp(err_path, &n);
    snprintf(cli_err, sizeof cli_err, "%.*s", (int)n, e ? e : "");
    free(e);
    return rc;
}

TEST(readers_refuse_a_fifo_at_once) {
    const char *fifo = tmp_path("fifo");
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    LogReader *rd;
    char err[TT_ERRLEN];
    CHECK(LogReader_open(fifo, &rd, NULL, err) == TT_ERR);
    CHECK_CONTAINS(err, "is a FIFO, not a log file");
    char *best_argv[] = {"best", (char *)fifo, NULL}, *dump_argv[] = {"dump", (char *)fifo, NULL};
    CHECK_EQ_INT(run_cmd(cmd_best, 2, best_argv), 1);
    CHECK_CONTAINS(cli_err, "is a FIFO");
    CHECK_EQ_INT(count_newlines(cli_err), 1);
    CHECK_EQ_INT(run_cmd(cmd_dump, 2, dump_argv), 1);
    CHECK_CONTAINS(cli_err, "is a FIFO");
    UiState st;
    UiState_init(&st);
    UiLogView v;
    CHECK(UiLogView_open(&v, &st, fifo, err) == TT_ERR); /* what `view` opens */
    CHECK_CONTAINS(err, "is a FIFO");
    UiLogView_done(&v);
    UiState_done(&st);
    const char *dir = tmp_path("adir");
    mkdir(dir, 0700);
    CHECK(LogReader_open(dir, &rd, NULL, err) == TT_ERR);
    CHECK_CONTAINS(err, "is a directory");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((t1.tv_sec - t0.tv_sec) < 5); /* nothing waited for a writer */
    unlink(fifo);
    rmdir(dir);
}

TEST(best_verbose_says_once_that_old_records_are_unchecked) {
    const char *path = tmp_path("old-best.log");
    write_old_log(path, 4);
    char *argv[] = {"best", "--verbose", (char *)path, NULL};
    CHECK_EQ_INT(run_cmd(cmd_best, 3, argv), 0);
    CHECK_CONTAINS(cli_err, "4 records carry no checksum");
    char *plain[] = {"best", (char *)path, NULL};
    CHECK_EQ_INT(run_cmd(cmd_best, 2, plain), 0);
    CHECK(strstr(cli_err, "checksum") == NULL);
    write_log(path, 4, NULL);
    CHECK_EQ_INT(run_cmd(cmd_best, 3, argv), 0);
    CHECK_CONTAINS(cli_err, "every record's checksum is correct");
}

/* ---- the log stays the log -------------------------------------------------- */

TEST(a_deleted_renamed_or_replaced_log_is_noticed_and_copied) {
    for (int how = 0; how < 3; how++) {
        const char *path = tmp_path("moved.log"), *other = tmp_path("moved-elsewhere.log");
        char rec_path[400];
        snprintf(rec_path, sizeof rec_path, "%s.recovered", path);
        unlink(path);
        unlink(other);
        unlink(rec_path);
        LogWriter *w;
        char err[TT_ERRLEN];
        off_t trunc;
        CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
        Record r;
        Record_init(&r);
        for (int i = 0; i < 4; i++) {
            make_record(&r, i);
            CHECK(LogWriter_append(w, &r, err) == TT_OK);
        }
        CHECK(LogWriter_sync(w, err) == TT_OK);
        if (how == 0) unlink(path);
        if (how == 1) rename(path, other);
        if (how == 2) {
            rename(path, other);
            spit(path, "x", 1);
        }
        make_record(&r, 4);
        CHECK(LogWriter_append(w, &r, err) == TT_OK); /* lands in the open file */
        CHECK(LogWriter_sync(w, err) == TT_ERR);
        CHECK(LogWriter_moved(w));
        CHECK_CONTAINS(err, how == 0 ? "was deleted" : how == 1 ? "renamed or deleted" : "replaced by another file");
        CHECK(LogWriter_append(w, &r, err) == TT_ERR); /* final */
        char dest[512];
        CHECK(LogWriter_saveCopy(w, dest, sizeof dest, err) == TT_OK);
        CHECK_STR(dest, rec_path);
        LogWriter_close(w);
        LogReadStatus end;
        char msg[TT_ERRLEN];
        int wrong;
        CHECK_EQ_INT(read_back(rec_path, &end, msg, &wrong), 5);
        CHECK_EQ_INT(end, LOG_END);
        CHECK_EQ_INT(wrong, 0);
        Record_done(&r);
        unlink(path);
        unlink(other);
        unlink(rec_path);
    }
}

/* ---- the fault seam --------------------------------------------------------- */

TEST(a_failed_write_leaves_the_log_as_it_was_and_is_final) {
    const int errs[] = {ENOSPC, EFBIG, EIO};
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < 3; e++) {
            const char *path = tmp_path("fail.log");
            unlink(path);
            LogWriter *w;
            char err[TT_ERRLEN];
            off_t trunc;
            CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
            Record r;
            Record_init(&r);
            make_record(&r, 0);
            CHECK(LogWriter_append(w, &r, err) == TT_OK);
            long size = file_size(path);
            LogIo_failAt(1, errs[e], s == 1);
            make_record(&r, 1);
            CHECK(LogWriter_append(w, &r, err) == TT_ERR);
            CHECK_CONTAINS(err, strerror(errs[e]));
            CHECK_EQ_INT(file_size(path), size); /* the partial record was cut off again */
            CHECK_EQ_INT(LogWriter_records(w), 1);
            CHECK(LogWriter_append(w, &r, err) == TT_ERR); /* no second try */
            CHECK(LogWriter_sync(w, err) == TT_ERR);       /* syncs what is there, still failed */
            CHECK_EQ_INT(LogWriter_unsynced(w), 0);
            LogWriter_close(w);
            LogIo_failAt(0, 0, false);
            LogReadStatus end;
            char msg[TT_ERRLEN];
            int wrong;
            CHECK_EQ_INT(read_back(path, &end, msg, &wrong), 1);
            CHECK_EQ_INT(end, LOG_END);
            Record_done(&r);
        }
}

TEST(a_failed_fsync_is_final) {
    const char *path = tmp_path("fsync.log");
    unlink(path);
    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    Record r;
    Record_init(&r);
    make_record(&r, 0);
    CHECK(LogWriter_append(w, &r, err) == TT_OK);
    LogIo_failAt(1, EIO, false);
    CHECK(LogWriter_sync(w, err) == TT_ERR);
    CHECK_CONTAINS(err, "cannot sync");
    long calls = LogIo_calls();
    CHECK(LogWriter_sync(w, err) == TT_ERR); /* never retried: a later success would prove nothing */
    CHECK(LogWriter_append(w, &r, err) == TT_ERR);
    CHECK_EQ_INT(LogIo_calls(), calls); /* no system call was even tried */
    CHECK(LogWriter_failed(w));
    CHECK_EQ_INT(LogWriter_unsynced(w), 1);
    LogWriter_close(w);
    LogIo_failAt(0, 0, false);
    Record_done(&r);
}

/* ---- a crash at every byte of the last batch -------------------------------- */

TEST(a_crash_cut_at_every_byte_of_the_last_batch_resumes_whole_records) {
    const char *path = tmp_path("crash.log"), *cut = tmp_path("crash-cut.log");
    enum { N = 12, BATCH_START = 8 }; /* the last batch: records 8..11 */
    long offs[N + 1];
    write_log(path, N, offs);
    size_t n;
    char *bytes = slurp(path, &n);
    int cuts = 0, kept_ok = 0, warned = 0;
    for (int zeros = 0; zeros < 2; zeros++)
        for (long at = offs[BATCH_START]; at <= offs[N]; at++) {
            /* zeros: the rest of a torn last page reads back as zero bytes */
            size_t len = (size_t)at;
            char *img = malloc(n + 4096);
            memcpy(img, bytes, len);
            if (zeros) {
                size_t page = (len / 4096 + 1) * 4096;
                memset(img + len, 0, page - len);
                len = page;
            }
            spit(cut, img, len);
            free(img);
            int whole = 0;
            while (whole < N && offs[whole + 1] <= at)
                whole++;
            /* the zero fill completes a record whose missing bytes are all zero: it is whole */
            if (zeros && whole < N && offs[whole + 1] <= (long)len) {
                bool missing_zero = true;
                for (long b = at; b < offs[whole + 1]; b++)
                    missing_zero = missing_zero && bytes[b] == 0;
                if (missing_zero) whole++;
            }
            LogWriter *w;
            char err[TT_ERRLEN];
            off_t trunc;
            cuts++;
            if (LogWriter_open(cut, "cpu", &w, &trunc, err) != TT_OK) {
                fprintf(stderr, "  cut at %ld%s: %s\n", at, zeros ? " + zeros" : "", err);
                continue;
            }
            bool torn = at != offs[whole] || (zeros && len != (size_t)at);
            if (torn == (trunc >= 0)) warned++;
            if (torn && trunc != offs[whole])
                fprintf(stderr, "  cut at %ld: truncated at %ld, not %ld\n", at, (long)trunc, offs[whole]);
            Record r;
            Record_init(&r);
            make_record(&r, whole); /* resume appends the next record */
            CHECK(LogWriter_append(w, &r, err) == TT_OK);
            Record_done(&r);
            LogWriter_close(w);
            LogReadStatus end;
            char msg[TT_ERRLEN];
            int wrong;
            int got = read_back(cut, &end, msg, &wrong);
            if (got == whole + 1 && end == LOG_END && wrong == 0)
                kept_ok++;
            else
                fprintf(stderr, "  cut at %ld: read %d records (want %d), end %d, %d wrong\n", at, got, whole + 1, end,
                        wrong);
        }
    free(bytes);
    printf("  %d cuts of the last batch (%ld bytes, half with a zeroed last page): %d kept every whole record, %d "
           "warned exactly when a record was torn\n",
           cuts, offs[N] - offs[BATCH_START], kept_ok, warned);
    CHECK_EQ_INT(kept_ok, cuts);
    CHECK_EQ_INT(warned, cuts);
}

/* ---- buffer reader and follower --------------------------------------------- */

TEST(the_buffer_reader_reads_what_the_file_reader_reads) {
    const char *path = tmp_path("buf.log");
    long offs[10];
    write_log(path, 9, offs);
    size_t n;
    char *bytes = slurp(path, &n);
    LogReader *rd;
    char err[TT_ERRLEN], msg[TT_ERRLEN];
    CHECK(LogReader_openBuffer(bytes, n, "mem", &rd, NULL, err) == TT_OK);
    Record r, want;
    Record_init(&r);
    Record_init(&want);
    int k = 0;
    while (LogReader_next(rd, &r, msg) == LOG_RECORD) {
        make_record(&want, k++);
        CHECK(same_record(&r, &want));
    }
    CHECK_EQ_INT(k, 9);
    LogReader_close(rd);
    /* a follower that sees the bytes arrive a few at a time reads the same */
    CHECK(LogReader_openBuffer(bytes, (size_t)offs[0], "mem", &rd, NULL, err) == TT_OK);
    k = 0;
    for (size_t visible = (size_t)offs[0]; visible <= n; visible += 37) {
        LogReader_setBufferLength(rd, visible);
        LogReader_follow(rd);
        LogReadStatus st;
        while ((st = LogReader_next(rd, &r, msg)) == LOG_RECORD) {
            make_record(&want, k++);
            CHECK(same_record(&r, &want));
        }
        CHECK(st == LOG_END || st == LOG_TORN);
    }
    LogReader_setBufferLength(rd, n);
    LogReader_follow(rd);
    while (LogReader_next(rd, &r, msg) == LOG_RECORD)
        k++;
    CHECK_EQ_INT(k, 9);
    LogReader_close(rd);
    Record_done(&r);
    Record_done(&want);
    free(bytes);
}

/* ---- a best beyond the device's peak is flagged ------------------------------ */

TEST(a_best_beyond_the_peak_is_flagged) {
    DeviceInfo dev;
    memset(&dev, 0, sizeof dev);
    dev.cores = 2;
    dev.vector_floats = 16;
    char why[256];
    CHECK_NEAR(Device_peakEstimateGflops(&dev), 256, 1e-9);
    CHECK(!Device_beyondPeak(&dev, 231, why, sizeof why)); /* this machine's real best */
    CHECK(!Device_beyondPeak(&dev, 512, why, sizeof why));
    CHECK(Device_beyondPeak(&dev, 513, why, sizeof why));
    CHECK_CONTAINS(why, "more than 2x the device's peak estimate (256 GFLOPS)");
    DeviceInfo none;
    memset(&none, 0, sizeof none);
    CHECK(!Device_beyondPeak(&none, 1e9, why, sizeof why)); /* unknown shape: nothing to say */

    /* `best` on a log whose record claims 1 ns for 134 MFLOP (a valid checksum: the writer accepts it) */
    const char *path = tmp_path("fast.log");
    unlink(path);
    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    Record r;
    Record_init(&r);
    make_record(&r, 0);
    snprintf(r.task_key, sizeof r.task_key, "dense:m=64,n=1024,k=1024");
    r.costs[0] = r.costs[1] = 1e-9;
    CHECK(LogWriter_append(w, &r, err) == TT_OK);
    Record_done(&r);
    LogWriter_close(w);
    char *argv[] = {"best", (char *)path, NULL};
    CHECK_EQ_INT(run_cmd(cmd_best, 2, argv), 0);
    CHECK_CONTAINS(cli_out, "check     134217728.0 GFLOPS is more than 2x the device's peak estimate");
    CHECK_CONTAINS(cli_err, "1 best is beyond 2x the cpu device's peak estimate");
    /* a plausible best is not flagged */
    write_log(path, 3, NULL);
    CHECK_EQ_INT(run_cmd(cmd_best, 2, argv), 0);
    CHECK(strstr(cli_out, "check") == NULL);
}

/* ---- sequence numbers, chaining, the close marker, another hand ------------- */

/* write_log, then a clean stop's close marker. */
static void write_closed_log(const char *path, int n, long *offs) {
    write_log(path, n, offs);
    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    if (LogWriter_open(path, "cpu", &w, &trunc, err) || LogWriter_closeMarked(w, err)) abort();
}

/* The bytes of path rearranged: pieces [from, to) of the original, in order. */
static void rearrange(const char *src, const char *dst, const long *pieces, int n_pieces) {
    size_t len;
    char *data = slurp(src, &len);
    char *out = malloc(len * 2);
    size_t k = 0;
    for (int i = 0; i < n_pieces; i++) {
        memcpy(out + k, data + pieces[2 * i], (size_t)(pieces[2 * i + 1] - pieces[2 * i]));
        k += (size_t)(pieces[2 * i + 1] - pieces[2 * i]);
    }
    spit(dst, out, k);
    free(out);
    free(data);
}

TEST(a_cut_at_a_record_boundary_a_duplicate_a_reordering_or_a_gap_is_told) {
    const char *path = tmp_path("chain.log"), *bad = tmp_path("chain_bad.log");
    long offs[7];
    write_closed_log(path, 6, offs);
    long size = file_size(path);
    LogReadStatus end;
    char msg[TT_ERRLEN];
    int wrong;
    CHECK_EQ_INT(read_back(path, &end, msg, &wrong), 6);
    CHECK_EQ_INT(end, LOG_END);
    char *argv[] = {"best", (char *)bad, NULL}, *dargv[] = {"dump", (char *)bad, NULL};
    rearrange(path, bad, (long[]){0, size}, 1);
    CHECK_EQ_INT(run_cmd(cmd_best, 2, argv), 0);
    CHECK(strstr(cli_err, "close marker") == NULL); /* a clean stop */
    /* cut exactly at a record boundary: the close marker is gone, and both commands say so */
    rearrange(path, bad, (long[]){0, offs[4]}, 1);
    CHECK_EQ_INT(read_back(bad, &end, msg, &wrong), 4);
    CHECK_EQ_INT(end, LOG_END);
    CHECK_EQ_INT(run_cmd(cmd_best, 2, argv), 0);
    CHECK_CONTAINS(cli_err, "has no close marker (it ended by a crash, or the log was cut): it holds 4 records");
    CHECK_EQ_INT(run_cmd(cmd_dump, 2, dargv), 0);
    CHECK_CONTAINS(cli_err, "it holds 4 records");
    /* a duplicate, a reordering, a gap: damage at the record that does not follow */
    const long dup[] = {0, offs[4], offs[3], size},
               swap[] = {0, offs[2], offs[3], offs[4], offs[2], offs[3], offs[4], size},
               gap[] = {0, offs[2], offs[3], size};
    const long *cases[] = {dup, swap, gap};
    const int n_pieces[] = {2, 4, 2}, good[] = {4, 2, 2};
    for (int c = 0; c < 3; c++) {
        rearrange(path, bad, cases[c], n_pieces[c]);
        CHECK_EQ_INT(read_back(bad, &end, msg, &wrong), good[c]);
        CHECK_EQ_INT(end, LOG_DAMAGED);
        CHECK_CONTAINS(msg, "duplicated, reordered or missing");
        CHECK_EQ_INT(run_cmd(cmd_best, 2, argv), 1);
    }
}

/* Changes the file at path the way another program would, keeping its inode. */
static void change_in_place(const char *path, int how, const char *other) {
    size_t n;
    char *o = slurp(other, &n);
    if (how == 0) { /* cp other.log LOG */
        int fd = open(path, O_WRONLY | O_TRUNC);
        if (write(fd, o, n) != (ssize_t)n) abort();
        close(fd);
    } else if (how == 1 || how == 2) { /* truncate -s 0 / -s 200 */
        if (truncate(path, how == 1 ? 0 : 200) != 0) abort();
    } else if (how == 3) { /* cat other.log >> LOG */
        int fd = open(path, O_WRONLY | O_APPEND);
        if (write(fd, o, n) != (ssize_t)n) abort();
        close(fd);
    } else { /* the same size, other bytes at the end */
        int fd = open(path, O_WRONLY);
        off_t end = lseek(fd, 0, SEEK_END);
        if (pwrite(fd, "XXXX", 4, end - 4) != 4) abort();
        close(fd);
    }
    free(o);
}

TEST(a_log_changed_in_place_by_another_hand_stops_the_writer_with_a_copy) {
    const char *other = tmp_path("other.log");
    write_log(other, 12, NULL);
    const char *what[] = {"grown from", "cut from", "cut from", "grown from", "overwritten"};
    for (int how = 0; how < 5; how++) {
        const char *path = tmp_path("inplace.log");
        char rec_path[400];
        snprintf(rec_path, sizeof rec_path, "%s.recovered", path);
        unlink(path);
        unlink(rec_path);
        LogWriter *w;
        char err[TT_ERRLEN];
        off_t trunc;
        CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
        Record r;
        Record_init(&r);
        for (int i = 0; i < 4; i++) {
            make_record(&r, i);
            CHECK(LogWriter_append(w, &r, err) == TT_OK);
        }
        CHECK(LogWriter_sync(w, err) == TT_OK);
        change_in_place(path, how, other);
        make_record(&r, 4);
        /* noticed at the next append or sync, whichever comes first */
        Status st = LogWriter_append(w, &r, err);
        if (st == TT_OK) st = LogWriter_sync(w, err);
        CHECK(st == TT_ERR);
        CHECK(LogWriter_moved(w));
        CHECK_CONTAINS(err, "was changed by another program while this session was writing it");
        CHECK_CONTAINS(err, what[how]);
        CHECK(LogWriter_append(w, &r, err) == TT_ERR); /* final */
        char dest[512];
        CHECK(LogWriter_saveCopy(w, dest, sizeof dest, err) == TT_OK);
        CHECK_STR(dest, rec_path);
        CHECK_EQ_INT(LogWriter_records(w), 4);
        LogWriter_close(w);
        LogReadStatus end;
        char msg[TT_ERRLEN];
        int wrong;
        CHECK_EQ_INT(read_back(rec_path, &end, msg, &wrong), 4); /* what this writer measured, whole */
        CHECK_EQ_INT(end, LOG_END);
        CHECK_EQ_INT(wrong, 0);
        Record_done(&r);
    }
}

/* As SQLite's tests do: a session of 3 batches of 4 records, its every write,
 * fsync, open and truncate failed in turn. Each run must fail (never report
 * success), and the log must read (to its end, or to a torn tail) with every
 * record whose append returned TT_OK, in order. */
TEST(every_write_and_sync_of_a_session_failed_in_turn) {
    const char *path = tmp_path("failpoint.log");
    int runs = 0, failed_runs = 0;
    for (long nth = 1; nth < 200; nth++) {
        unlink(path);
        LogIo_failAt(nth, nth % 2 ? ENOSPC : EIO, nth % 3 == 0);
        LogWriter *w = NULL;
        char err[TT_ERRLEN];
        off_t trunc;
        bool ok = LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK;
        int appended = 0;
        Record r;
        Record_init(&r);
        for (int b = 0; ok && b < 3; b++) {
            for (int i = 0; ok && i < 4; i++) {
                make_record(&r, appended);
                ok = LogWriter_append(w, &r, err) == TT_OK;
                appended += ok;
            }
            if (ok) ok = LogWriter_sync(w, err) == TT_OK;
        }
        if (ok) ok = LogWriter_closeMarked(w, err) == TT_OK; /* closes it on success */
        if (!ok && w) LogWriter_close(w);
        Record_done(&r);
        int faults = LogIo_faults();
        LogIo_failAt(0, 0, false);
        if (!faults) { /* the session made fewer calls than nth: every point was tried */
            CHECK(ok);
            break;
        }
        runs++;
        failed_runs += !ok;
        CHECK(!ok);
        if (access(path, F_OK) != 0 || file_size(path) == 0) {
            CHECK_EQ_INT(appended, 0);
            continue;
        }
        LogReadStatus end;
        char msg[TT_ERRLEN];
        int wrong;
        int n = read_back(path, &end, msg, &wrong);
        CHECK(n == appended || (n == -1 && appended == 0));
        CHECK(end != LOG_DAMAGED || n == -1);
        CHECK_EQ_INT(wrong, 0);
    }
    printf("  %d fault points of a 3-batch session: %d ended with a failure, every log readable\n", runs, failed_runs);
    CHECK(runs >= 20 && failed_runs == runs); /* open, header, its sync, 12 appends, 3 syncs, the marker, its sync */
}

int main(void) {
    /* tmpfs when there is one: the crash test opens and syncs a log 1550 times */
    snprintf(tmpdir, sizeof tmpdir, "%s/tt_integrity_XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(tmpdir)) return 1;
    RUN(crc32c_known_values_and_both_forms_agree);
    RUN(seal_grows_any_map_by_one_checked_entry);
    RUN(a_flipped_bit_anywhere_in_a_record_is_damage);
    RUN(a_cost_bit_flip_is_reported_by_best_and_dump);
    RUN(costs_that_are_not_latencies_are_refused);
    RUN(old_logs_without_checksums_still_read_unchecked);
    RUN(readers_refuse_a_fifo_at_once);
    RUN(best_verbose_says_once_that_old_records_are_unchecked);
    RUN(a_deleted_renamed_or_replaced_log_is_noticed_and_copied);
    RUN(a_failed_write_leaves_the_log_as_it_was_and_is_final);
    RUN(a_failed_fsync_is_final);
    RUN(a_crash_cut_at_every_byte_of_the_last_batch_resumes_whole_records);
    RUN(the_buffer_reader_reads_what_the_file_reader_reads);
    RUN(a_best_beyond_the_peak_is_flagged);
    RUN(a_cut_at_a_record_boundary_a_duplicate_a_reordering_or_a_gap_is_told);
    RUN(a_log_changed_in_place_by_another_hand_stops_the_writer_with_a_copy);
    RUN(every_write_and_sync_of_a_session_failed_in_turn);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_summary();
}
