/* tests/unit/test_readpath.c: the fast paths of reading and dumping a log
 * give exactly what the general ones give:
 *   - NumFmt (base/numfmt.h) writes the same text as snprintf (and the same
 *     choice of %.15g / %.17g as the strtod read-back), over hand-picked
 *     doubles, random bit patterns, latency-like values and near-halfway
 *     decimals;
 *   - Record_fromBytes gives the same record, or the same error, as
 *     Record_fromObject on the unpacked object, for real records and for
 *     every one of many byte-mutated copies that still scan as one object;
 *   - LogSummary (what `tunetop best` reads) agrees with History. */
#include <float.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/numfmt.h"
#include "base/rng.h"
#include "records/codec.h"
#include "records/history.h"
#include "records/log.h"
#include "records/summary.h"
#include "tests/check.h"

static int numfmt_bad;

static void check_double(double v) {
    char got[32], want[32];
    NumFmt_double(got, v);
    snprintf(want, sizeof want, "%.15g", v);
    if (strtod(want, NULL) != v) snprintf(want, sizeof want, "%.17g", v);
    if (strcmp(got, want) != 0 && numfmt_bad++ < 10)
        fprintf(stderr, "NumFmt_double(%a) = \"%s\", snprintf \"%s\"\n", v, got, want);
    for (int p = 15; p <= 17; p += 2) {
        NumFmt_g(got, v, p);
        snprintf(want, sizeof want, "%.*g", p, v);
        if (strcmp(got, want) != 0 && numfmt_bad++ < 10)
            fprintf(stderr, "NumFmt_g(%a, %d) = \"%s\", snprintf \"%s\"\n", v, p, got, want);
    }
}

static uint64_t next64(Rng *r) { return ((uint64_t)Rng_next(r) << 32) ^ Rng_next(r); }

TEST(numfmt_doubles_as_printf) {
    numfmt_bad = 0;
    static const double hand[] = {0.0,
                                  -0.0,
                                  1,
                                  -1,
                                  0.1,
                                  0.3,
                                  1e-4,
                                  1e-5,
                                  1.5e-5,
                                  2.0 / 3,
                                  1e15,
                                  1e16,
                                  1e17,
                                  123456789012345678.0,
                                  9.999999999999999e22,
                                  1e23,
                                  0.5,
                                  0.25,
                                  1024,
                                  1e-300,
                                  1e300,
                                  DBL_MAX,
                                  DBL_MIN,
                                  5e-324,
                                  1763791792.0,
                                  1763791792.1,
                                  0.15,
                                  0.06,
                                  1e-7,
                                  999999999999999.9,
                                  99999.99999999999,
                                  0.000123456789012345,
                                  1.0000000000000002,
                                  0.9999999999999999,
                                  4.35,
                                  100,
                                  1e21,
                                  1e-4 * 1.5};
    for (size_t i = 0; i < sizeof hand / sizeof hand[0]; i++) {
        check_double(hand[i]);
        check_double(-hand[i]);
    }
    Rng r;
    Rng_seed(&r, 12345);
    for (int i = 0; i < 100000; i++) {
        /* any finite bit pattern */
        uint64_t u = next64(&r);
        double v;
        memcpy(&v, &u, sizeof v);
        if (isfinite(v)) check_double(v);
        /* latencies, timestamps, timings as the log holds them */
        check_double(1e-4 * (1 + (double)(i % 97) / 97) + (i % 3) * 1e-7);
        check_double(1763791792.0 + i * 0.1);
        check_double((double)(Rng_next(&r) % 100000) * 1e-9);
        /* decimals of 16 and 17 digits ending in 5: near halfway at 15 digits */
        double d = (double)(next64(&r) % 100000000000000000ull) * 10 + 5;
        check_double(d * 1e-20);
        check_double(d * 1e-3);
        check_double(ldexp((double)(next64(&r) >> 11), (int)(Rng_next(&r) % 200) - 100));
    }
    for (int e = -60; e <= 60; e++) { /* powers of two and ten, and their neighbours */
        double p2 = ldexp(1, e), p10 = pow(10, e);
        double vs[] = {p2, nextafter(p2, 0), nextafter(p2, INFINITY), p10, nextafter(p10, 0), nextafter(p10, INFINITY)};
        for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
            check_double(vs[i]);
    }
    CHECK_EQ_INT(numfmt_bad, 0);
}

TEST(numfmt_integers_as_printf) {
    char got[24], want[24];
    static const int64_t v[] = {0,   1,         -1,        9,         10,        99,
                                100, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 1000003ll * 4 + 7};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        NumFmt_i64(got, v[i]);
        snprintf(want, sizeof want, "%" PRId64, v[i]);
        CHECK_STR(got, want);
    }
    Rng r;
    Rng_seed(&r, 7);
    for (int i = 0; i < 100000; i++) {
        uint64_t u = next64(&r) >> (Rng_next(&r) % 64);
        NumFmt_u64(got, u);
        snprintf(want, sizeof want, "%" PRIu64, u);
        if (strcmp(got, want) != 0) {
            CHECK_STR(got, want);
            break;
        }
    }
}

static void full_record(Record *r, int i) {
    Record_init(r);
    snprintf(r->task_key, sizeof r->task_key, "conv2d:n=1,ci=%d,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1", 64 + i % 5);
    snprintf(r->template_name, sizeof r->template_name, "conv2d_nchwc.cpu");
    snprintf(r->target, sizeof r->target, "cpu");
    r->index = (uint64_t)i * 1000003u;
    r->n_choice = 5;
    for (int k = 0; k < 5; k++)
        r->choice[k] = (k - 2) * (i + 1) * 1000;
    snprintf(r->config, sizeof r->config, "tile=[%d,4] unroll=%d", i, i % 3);
    if (i % 4 == 3) {
        Record_setError(r, 2 + i % 3, "compile error: \"x\"\n\tline 2");
    } else {
        r->n_costs = 1 + i % 3;
        for (int k = 0; k < r->n_costs; k++)
            r->costs[k] = 1e-4 * (1 + k + i % 7);
    }
    r->build_s = 0.1 * i, r->run_s = 0.05, r->pack_s = i % 2 ? 1e-5 : 0, r->timestamp = 1763791792.5 + i;
    r->regs = i % 2 ? 64 : -1, r->spills = i % 2 ? 0 : -1;
    r->shared_bytes = i % 2 ? 49152 : -1, r->local_bytes = -1;
    if (i % 5 == 1) snprintf(r->src, sizeof r->src, "autotvm x.log:%d", i), r->src_cost = 2e-4;
    if (i % 3 == 0)
        r->roof_gflops = 123.5, r->roof_bound = 4, snprintf(r->machine_key, sizeof r->machine_key, "0123abcd");
    if (i % 6 == 2) r->steps = strdup("split(0, 4); reorder(1, 0); vectorize(2)"); /* a tensor expression's schedule */
    if (i % 4 == 1)
        snprintf(r->host, sizeof r->host, "node%d", i), r->rank = i % 3, snprintf(r->device, sizeof r->device, "cpu");
}

/* Both decoders on the same bytes: same status, message and record. */
static int compare_decoders(const unsigned char *p, size_t n) {
    size_t len = 0;
    if (Msgpack_scan(p, n, &len) != SCAN_COMPLETE || len != n || Msgpack_depth(p, n, LOG_MAX_DEPTH) > LOG_MAX_DEPTH)
        return 0; /* the reader never hands such bytes to a decoder */
    Record a, b;
    Record_init(&a);
    Record_init(&b);
    char ea[TT_ERRLEN] = "", eb[TT_ERRLEN] = "";
    bool has_kind;
    Status sa = Record_fromBytes(p, n, &a, &has_kind, ea);
    int bad = 0;
    if (!has_kind) {
        msgpack_unpacked up;
        msgpack_unpacked_init(&up);
        size_t off = 0;
        if (msgpack_unpack_next(&up, (const char *)p, n, &off) != MSGPACK_UNPACK_SUCCESS) {
            bad = 1;
        } else {
            Status sb = Record_fromObject(&up.data, &b, eb);
            if (sa != sb || (sa && strcmp(ea, eb) != 0)) {
                bad = 1;
            } else if (!sa) {
                char *ja = Record_toJson(&a), *jb = Record_toJson(&b);
                bad = strcmp(ja, jb) != 0;
                free(ja);
                free(jb);
            }
            if (bad) fprintf(stderr, "decoders differ: bytes %d \"%s\", object %d \"%s\"\n", (int)sa, ea, (int)sb, eb);
        }
        msgpack_unpacked_destroy(&up);
    }
    Record_done(&a);
    Record_done(&b);
    return bad;
}

TEST(record_from_bytes_as_from_object) {
    Rng r;
    Rng_seed(&r, 99);
    int bad = 0, compared = 0;
    char err[TT_ERRLEN];
    for (int i = 0; i < 30; i++) {
        Record rec;
        full_record(&rec, i);
        char *bytes;
        size_t len;
        CHECK(Record_encodeSealed(&rec, &bytes, &len, err) == TT_OK);
        Record_done(&rec);
        bad += compare_decoders((const unsigned char *)bytes, len);
        unsigned char *m = malloc(len);
        for (int k = 0; k < 2000; k++) {
            memcpy(m, bytes, len);
            int flips = 1 + (int)(Rng_next(&r) % 3);
            for (int f = 0; f < flips; f++) {
                size_t at = Rng_next(&r) % len;
                m[at] = Rng_next(&r) % 2 ? (unsigned char)(m[at] ^ (1u << (Rng_next(&r) % 8)))
                                         : (unsigned char)Rng_next(&r);
            }
            size_t whole = 0;
            if (Msgpack_scan(m, len, &whole) == SCAN_COMPLETE) {
                compared++;
                bad += compare_decoders(m, whole);
            }
        }
        free(m);
        free(bytes);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(compared > 6000); /* the mutations do reach the decoders */
}

TEST(summary_as_history) {
    char path[] = "/tmp/tt_readpath_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    LogWriter *w;
    char err[TT_ERRLEN];
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    LogSession s;
    LogSession_init(&s);
    LogSession_addTask(&s, "conv2d:n=1,ci=66,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1", "conv2d_nchwc.cpu", 2, "net");
    LogSession_addTask(&s, "dense:m=1,n=8,k=8", "dense.cpu", 1, "");
    for (int i = 0; i < 200; i++) {
        if (i == 50) CHECK(LogWriter_appendSession(w, &s, err) == TT_OK);
        if (i % 40 == 7) {
            LogSteer st = {.timestamp = i, .paused = i % 80 == 7, .priority = i % 3 - 1};
            snprintf(st.key, sizeof st.key, "conv2d:n=1,ci=%d,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1", 64 + i % 5);
            CHECK(LogWriter_appendSteer(w, &st, err) == TT_OK);
        }
        Record rec;
        full_record(&rec, i);
        CHECK(LogWriter_append(w, &rec, err) == TT_OK);
        Record_done(&rec);
    }
    LogSession_done(&s);
    LogWriter_close(w);
    History h;
    LogSummary sum;
    CHECK(History_load(&h, path, err) == TT_OK);
    CHECK(LogSummary_load(&sum, path, err) == TT_OK);
    CHECK_EQ_INT(sum.n_records, h.n_records);
    CHECK_EQ_INT(sum.n_tasks, h.n_tasks);
    for (int t = 0; t < h.n_tasks && t < sum.n_tasks; t++) {
        const HistoryTask *ht = &h.tasks[t];
        const SummaryTask *st = &sum.tasks[t];
        CHECK_STR(st->key, ht->key);
        CHECK_STR(st->template_name, ht->template_name);
        CHECK_EQ_INT(st->n_records, ht->n_records);
        CHECK_EQ_INT(st->n_errors, ht->n_errors);
        for (int e = 0; e < HISTORY_ERRNO_SLOTS; e++)
            CHECK_EQ_INT(st->errno_count[e], ht->errno_count[e]);
        CHECK(st->weight == ht->weight);
        CHECK_STR(st->network, ht->network);
        CHECK_EQ_INT(st->steered, ht->steer != NULL);
        if (st->steered && ht->steer) CHECK(memcmp(&st->steer, ht->steer, sizeof st->steer) == 0);
        const Record *hb = HistoryTask_best(ht);
        CHECK_EQ_INT(st->has_best, hb != NULL);
        if (hb && st->has_best) {
            char *a = Record_toJson(hb), *b = Record_toJson(&st->best);
            CHECK_STR(b, a);
            free(a);
            free(b);
        }
        long imported = 0, built = 0;
        const Record *bi = NULL;
        for (int k = 0; k < ht->n_records; k++) {
            const Record *rr = &ht->records[k];
            if (Record_isImported(rr)) {
                imported++;
                if (!bi || rr->src_cost < bi->src_cost) bi = rr;
            } else if (rr->error_no == 0 && rr->n_costs == 0) {
                built++;
            }
        }
        CHECK_EQ_INT(st->n_imported, imported);
        CHECK_EQ_INT(st->n_built, built);
        CHECK_EQ_INT(st->has_best_imported, bi != NULL);
        if (bi && st->has_best_imported) CHECK_EQ_INT(st->best_imported.index, bi->index);
    }
    History_done(&h);
    LogSummary_done(&sum);
    unlink(path);
}

/* The one-pass scan agrees with Msgpack_scan and Msgpack_depth on every input. */
static int compare_scans(const unsigned char *p, size_t n) {
    size_t la = 0, lb = 0;
    int depth = -1;
    ScanResult a = Msgpack_scanDepth(p, n, &la, LOG_MAX_DEPTH, &depth);
    ScanResult b = Msgpack_scan(p, n, &lb);
    if (a != b || (a != SCAN_INCOMPLETE && la != lb)) return 1;
    return a == SCAN_COMPLETE && depth != Msgpack_depth(p, lb, LOG_MAX_DEPTH);
}

TEST(scan_depth_as_scan_and_depth) {
    Rng r;
    Rng_seed(&r, 5);
    int bad = 0;
    char err[TT_ERRLEN];
    unsigned char m[4096];
    for (int i = 0; i < 20; i++) {
        Record rec;
        full_record(&rec, i);
        char *bytes;
        size_t len;
        CHECK(Record_encodeSealed(&rec, &bytes, &len, err) == TT_OK);
        Record_done(&rec);
        if (len > sizeof m) len = sizeof m;
        for (size_t cut = 0; cut <= len; cut += 7) /* every prefix length class */
            bad += compare_scans((const unsigned char *)bytes, cut);
        for (int k = 0; k < 3000; k++) {
            memcpy(m, bytes, len);
            for (int f = 1 + (int)(Rng_next(&r) % 4); f > 0; f--)
                m[Rng_next(&r) % len] = (unsigned char)Rng_next(&r);
            bad += compare_scans(m, len);
        }
        free(bytes);
    }
    /* nesting: arrays of arrays of every depth around the limit, whole and cut */
    for (int d = 0; d < 40; d++) {
        unsigned char nest[64];
        for (int k = 0; k < d; k++)
            nest[k] = 0x91; /* [ */
        nest[d] = 0x01;
        for (size_t cut = 0; cut <= (size_t)d + 1; cut++)
            bad += compare_scans(nest, cut);
    }
    for (int k = 0; k < 100000; k++) { /* short random bytes, biased to containers */
        size_t n = 1 + Rng_next(&r) % 24;
        for (size_t j = 0; j < n; j++)
            m[j] = Rng_next(&r) % 3 ? (unsigned char)(0x80 + Rng_next(&r) % 0x20) : (unsigned char)Rng_next(&r);
        bad += compare_scans(m, n);
    }
    CHECK_EQ_INT(bad, 0);
}

int main(void) {
    RUN(scan_depth_as_scan_and_depth);
    RUN(numfmt_doubles_as_printf);
    RUN(numfmt_integers_as_printf);
    RUN(record_from_bytes_as_from_object);
    RUN(summary_as_history);
    return check_summary();
}
