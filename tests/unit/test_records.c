/* tests/unit/test_records.c: the record codec, the log (torn tails, damage,
 * locking, concurrent appends), the JSON form and the in-memory history. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "records/codec.h"
#include "records/history.h"
#include "records/log.h"
#include "records/record.h"
#include "tests/check.h"

static char tmpdir[64];

static const char *tmp_path(const char *name) {
    static char buf[8][320];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 320, "%s/%s", tmpdir, name);
    return p;
}

static char *slurp(const char *path, size_t *len) {
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

/* A record whose every field depends on i (and on task, for history tests). */
static void make_record(Record *r, int task, int i) {
    Record_done(r);
    Record_init(r);
    snprintf(r->task_key, sizeof r->task_key, "dense:m=%d,n=64,k=32", task + 1);
    snprintf(r->template_name, sizeof r->template_name, "dense_cpu_v%d", task);
    snprintf(r->target, sizeof r->target, "cpu");
    r->index = 1000003ull * (uint64_t)i + 7;
    r->n_choice = 1 + i % REC_MAX_KNOBS;
    for (int k = 0; k < r->n_choice; k++)
        r->choice[k] = (int32_t)(k * 3 - i);
    snprintf(r->config, sizeof r->config, "tile_x=[%d,%d] unroll=%d", i, i + 1, i % 2);
    r->n_costs = 1 + i % 3;
    for (int k = 0; k < r->n_costs; k++)
        r->costs[k] = 1e-5 * (1 + i % 17) + k * 1e-7;
    if (i % 5 == 4) Record_setError(r, 1 + i % 8, "error \"quoted\"\nsecond line");
    r->build_s = 0.25 + i;
    r->run_s = 1.0 / 3.0 + i;
    r->pack_s = 1e-3 * i;
    r->timestamp = 1763791792.125 + i;
    if (i % 2) {
        r->regs = 32 + i % 200;
        r->spills = i % 3;
        r->shared_bytes = 49152 + i;
        r->local_bytes = (int64_t)1 << 33;
    }
}

static int records_equal(const Record *a, const Record *b) {
    if (strcmp(a->task_key, b->task_key) || strcmp(a->template_name, b->template_name) || strcmp(a->target, b->target))
        return 0;
    if (a->index != b->index || a->n_choice != b->n_choice || a->n_costs != b->n_costs) return 0;
    if (memcmp(a->choice, b->choice, sizeof(int32_t) * (size_t)a->n_choice)) return 0;
    if (strcmp(a->config, b->config)) return 0;
    for (int k = 0; k < a->n_costs; k++)
        if (a->costs[k] != b->costs[k]) return 0;
    if (a->error_no != b->error_no) return 0;
    if (!a->error_msg != !b->error_msg || (a->error_msg && strcmp(a->error_msg, b->error_msg))) return 0;
    if (a->build_s != b->build_s || a->run_s != b->run_s || a->pack_s != b->pack_s || a->timestamp != b->timestamp)
        return 0;
    return a->regs == b->regs && a->spills == b->spills && a->shared_bytes == b->shared_bytes &&
           a->local_bytes == b->local_bytes;
}

/* Writes a log of n records (make_record(task 0, i)) and returns the offset
 * where each record starts in offs[0..n] (offs[n] = file size). */
static void write_log(const char *path, int n, long *offs) {
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
        make_record(&r, 0, i);
        if (LogWriter_append(w, &r, err)) abort();
    }
    Record_done(&r);
    LogWriter_close(w);
    if (offs) offs[n] = file_size(path);
}

/* Reads a log; returns the number of records, the final status and message. */
static int read_all(const char *path, LogReadStatus *end, char *msg, off_t *good) {
    LogReader *rd;
    LogHeader h;
    char err[TT_ERRLEN];
    *end = LOG_DAMAGED;
    if (LogReader_open(path, &rd, &h, err)) {
        snprintf(msg, TT_ERRLEN, "%s", err);
        return -1;
    }
    Record r;
    Record_init(&r);
    int n = 0;
    LogReadStatus st;
    while ((st = LogReader_next(rd, &r, msg)) == LOG_RECORD)
        n++;
    Record_done(&r);
    *end = st;
    if (good) *good = LogReader_goodOffset(rd);
    LogReader_close(rd);
    return n;
}

/* ---- codec -------------------------------------------------------------------- */

TEST(round_trip_every_field) {
    Record a, b;
    Record_init(&a);
    Record_init(&b);
    snprintf(a.task_key, sizeof a.task_key, "conv2d:n=1,ci=256,h=14,w=14,co=256,kh=3,kw=3,stride=1,pad=1");
    snprintf(a.template_name, sizeof a.template_name, "conv2d_direct.gpu");
    snprintf(a.target, sizeof a.target, "cuda");
    a.index = UINT64_C(18446744073709551000);
    a.n_choice = REC_MAX_KNOBS;
    for (int k = 0; k < REC_MAX_KNOBS; k++)
        a.choice[k] = k % 2 ? INT32_MIN + k : INT32_MAX - k;
    snprintf(a.config, sizeof a.config, "tile_f=[-1,2,4,8] \"auto_unroll\"=1500");
    a.n_costs = REC_MAX_COSTS;
    for (int k = 0; k < REC_MAX_COSTS; k++)
        a.costs[k] = 1.0 / (k + 3);
    Record_setError(&a, 4, "illegal address\nat \"kernel0\"\tline 3\\ \xc3\xa9");
    a.build_s = 1.5, a.run_s = 0.1, a.pack_s = 1e-300, a.timestamp = 1763791792.123456;
    a.regs = 255, a.spills = 12, a.shared_bytes = 232448, a.local_bytes = 4096;

    char *bytes;
    size_t len;
    char err[TT_ERRLEN];
    CHECK(Record_encode(&a, &bytes, &len, err) == TT_OK);
    CHECK(Record_decode(bytes, len, &b, err) == TT_OK);
    CHECK(records_equal(&a, &b));
    CHECK_STR(b.error_msg, a.error_msg);
    CHECK_EQ_INT(b.regs, 255);
    CHECK_EQ_INT(b.shared_bytes, 232448);
    free(bytes);

    /* where it was measured: host, rank, device round trip; absent (older logs) = "", -1, "" */
    snprintf(a.host, sizeof a.host, "node17.cluster");
    a.rank = 3;
    snprintf(a.device, sizeof a.device, "NVIDIA H100 80GB HBM3");
    CHECK(Record_encode(&a, &bytes, &len, err) == TT_OK);
    CHECK(Record_decode(bytes, len, &b, err) == TT_OK);
    CHECK_STR(b.host, "node17.cluster");
    CHECK_EQ_INT(b.rank, 3);
    CHECK_STR(b.device, "NVIDIA H100 80GB HBM3");
    free(bytes);
    char *js = Record_toJson(&a);
    CHECK(strstr(js, "\"host\":\"node17.cluster\",\"rank\":3,\"dev\":\"NVIDIA H100 80GB HBM3\"") != NULL);
    free(js);

    /* absent resources and message: the keys are not written and read back as -1 / NULL */
    Record c;
    Record_init(&c);
    make_record(&c, 2, 0);
    CHECK(c.error_msg == NULL && c.regs == -1);
    CHECK(Record_encode(&c, &bytes, &len, err) == TT_OK);
    CHECK(memmem(bytes, len, "regs", 4) == NULL);
    CHECK(memmem(bytes, len, "msg", 3) == NULL);
    CHECK(Record_decode(bytes, len, &b, err) == TT_OK);
    CHECK(records_equal(&c, &b));
    CHECK(b.error_msg == NULL);
    CHECK_EQ_INT(b.regs, -1);
    CHECK_EQ_INT(b.spills, -1);
    CHECK_EQ_INT(b.shared_bytes, -1);
    CHECK_EQ_INT(b.local_bytes, -1);
    CHECK(memmem(bytes, len, "host", 4) == NULL);
    CHECK(b.host[0] == '\0' && b.rank == -1 && b.device[0] == '\0');
    /* a trailing byte is not one record */
    bytes = realloc(bytes, len + 1);
    bytes[len] = 0x01;
    CHECK(Record_decode(bytes, len + 1, &b, err) == TT_ERR);
    CHECK(Record_decode(bytes, len - 1, &b, err) == TT_ERR);
    free(bytes);
    Record_done(&a);
    Record_done(&b);
    Record_done(&c);
}

static char *pack_map(int with_task, int err_as_str, int extra_key) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 5 + with_task + extra_key);
#define KEY(s) msgpack_pack_str_with_body(&pk, s, strlen(s))
    if (with_task) KEY("task"), KEY("dense:m=1,n=2,k=3");
    KEY("tmpl"), KEY("dense");
    KEY("target"), KEY("cpu");
    KEY("index"), msgpack_pack_uint64(&pk, 5);
    KEY("costs"), msgpack_pack_array(&pk, 1), msgpack_pack_double(&pk, 0.5);
    KEY("err");
    if (err_as_str)
        KEY("zero");
    else
        msgpack_pack_int(&pk, 0);
    if (extra_key) KEY("from_the_future"), msgpack_pack_array(&pk, 2), msgpack_pack_nil(&pk), KEY("x");
#undef KEY
    char *out = malloc(sb.size + sizeof(size_t));
    memcpy(out, &sb.size, sizeof(size_t));
    memcpy(out + sizeof(size_t), sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    return out;
}

TEST(decode_checks_keys_and_types) {
    Record r;
    Record_init(&r);
    char err[TT_ERRLEN];
    char *m = pack_map(1, 0, 1);
    size_t len;
    memcpy(&len, m, sizeof len);
    CHECK(Record_decode(m + sizeof len, len, &r, err) == TT_OK); /* unknown keys are ignored */
    CHECK_STR(r.task_key, "dense:m=1,n=2,k=3");
    CHECK_EQ_INT(r.n_costs, 1);
    CHECK_EQ_INT(r.n_choice, 0);
    free(m);
    m = pack_map(0, 0, 0);
    memcpy(&len, m, sizeof len);
    CHECK(Record_decode(m + sizeof len, len, &r, err) == TT_ERR);
    CHECK_CONTAINS(err, "\"task\"");
    free(m);
    m = pack_map(1, 1, 0);
    memcpy(&len, m, sizeof len);
    CHECK(Record_decode(m + sizeof len, len, &r, err) == TT_ERR);
    CHECK_CONTAINS(err, "\"err\" is not an integer");
    free(m);
    Record_done(&r);
}

TEST(encode_limits) {
    Record r;
    Record_init(&r);
    make_record(&r, 0, 1);
    char *bytes = NULL;
    size_t len;
    char err[TT_ERRLEN];
    r.n_choice = REC_MAX_KNOBS + 1;
    CHECK(Record_encode(&r, &bytes, &len, err) == TT_ERR);
    CHECK_CONTAINS(err, "knob");
    r.n_choice = 2;
    r.n_costs = -1;
    CHECK(Record_encode(&r, &bytes, &len, err) == TT_ERR);
    r.n_costs = 1;
    /* a huge compiler log is cut to REC_MSG_MAX bytes with a visible mark */
    size_t big = 3 * REC_MSG_MAX;
    char *msg = malloc(big + 1);
    memset(msg, 'e', big);
    msg[big] = '\0';
    Record_setError(&r, 2, msg);
    free(msg);
    CHECK(Record_encode(&r, &bytes, &len, err) == TT_OK);
    CHECK(len < LOG_MAX_RECORD);
    Record back;
    Record_init(&back);
    CHECK(Record_decode(bytes, len, &back, err) == TT_OK);
    CHECK_EQ_INT(strlen(back.error_msg), REC_MSG_MAX);
    CHECK(strstr(back.error_msg, "[truncated]") != NULL);
    free(bytes);
    Record_done(&back);
    Record_done(&r);
}

/* ---- JSON --------------------------------------------------------------------- */

TEST(json_escaping) {
    Record r;
    Record_init(&r);
    snprintf(r.task_key, sizeof r.task_key, "dense:m=1,n=2,k=3");
    snprintf(r.template_name, sizeof r.template_name, "dense");
    snprintf(r.target, sizeof r.target, "cpu");
    r.index = 42;
    r.n_choice = 2;
    r.choice[0] = 3;
    r.choice[1] = -1;
    snprintf(r.config, sizeof r.config, "tile=[4,\"x\"]");
    r.n_costs = 2;
    r.costs[0] = 1.5e-05;
    r.costs[1] = 0.1;
    r.timestamp = 1763791792.5;
    char *j = Record_toJson(&r);
    CHECK_STR(j, "{\"task\":\"dense:m=1,n=2,k=3\",\"tmpl\":\"dense\",\"target\":\"cpu\",\"index\":42,"
                 "\"choice\":[3,-1],\"config\":\"tile=[4,\\\"x\\\"]\",\"costs\":[1.5e-05,0.1],\"err\":0,"
                 "\"msg\":null,\"build_s\":0,\"run_s\":0,\"pack_s\":0,\"ts\":1763791792.5,"
                 "\"regs\":null,\"spills\":null,\"smem\":null,\"lmem\":null}");
    free(j);

    Record_setError(&r, 5, "a\"b\\c\nd\re\tf\x01g\x7fh \xc3\xa9 \xe2\x82\xac \xff\xc3 end");
    r.regs = 40;
    r.costs[0] = 1.0 / 3.0;
    j = Record_toJson(&r);
    CHECK_CONTAINS(j, "\"msg\":\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u007fh \xc3\xa9 \xe2\x82\xac \\ufffd\\ufffd end\"");
    CHECK_CONTAINS(j, "\"err\":5");
    CHECK_CONTAINS(j, "\"regs\":40,\"spills\":null");
    CHECK_CONTAINS(j, "0.33333333333333331"); /* 17 digits when 15 do not read back */
    CHECK(strchr(j, '\n') == NULL);
    for (const char *p = j; *p; p++)
        CHECK((unsigned char)*p >= 0x20);
    free(j);
    r.costs[0] = INFINITY;
    j = Record_toJson(&r);
    CHECK_CONTAINS(j, "\"costs\":[null,0.1]");
    free(j);
    Record_done(&r);
}

/* ---- the log ------------------------------------------------------------------ */

TEST(log_many_records_read_back_equal) {
    const char *path = tmp_path("many.log");
    enum { N = 2000 };
    write_log(path, N, NULL);
    LogReader *rd;
    LogHeader h;
    char err[TT_ERRLEN];
    CHECK(LogReader_open(path, &rd, &h, err) == TT_OK);
    CHECK_STR(h.target, "cpu");
    CHECK_EQ_INT(h.version, LOG_FORMAT_VERSION);
    CHECK(h.created > 1.7e9);
    Record got, want;
    Record_init(&got);
    Record_init(&want);
    int n = 0, bad = 0;
    LogReadStatus st;
    while ((st = LogReader_next(rd, &got, err)) == LOG_RECORD) {
        make_record(&want, 0, n++);
        if (!records_equal(&got, &want)) bad++;
    }
    CHECK_EQ_INT(st, LOG_END);
    CHECK_EQ_INT(n, N);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(LogReader_goodOffset(rd), file_size(path));
    CHECK_EQ_INT(LogReader_next(rd, &got, err), LOG_END); /* stays at the end */
    LogReader_close(rd);

    /* reopening for append keeps everything and adds after it */
    LogWriter *w;
    off_t trunc = 0;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    CHECK_EQ_INT(trunc, -1);
    make_record(&want, 1, 7);
    CHECK(LogWriter_append(w, &want, err) == TT_OK);
    CHECK(LogWriter_sync(w, err) == TT_OK);
    LogWriter_close(w);
    LogReadStatus end;
    CHECK_EQ_INT(read_all(path, &end, err, NULL), N + 1);
    CHECK_EQ_INT(end, LOG_END);
    Record_done(&got);
    Record_done(&want);
}

TEST(torn_tail_at_every_byte_is_truncated) {
    const char *full = tmp_path("torn_full.log"), *path = tmp_path("torn.log");
    enum { N = 5 };
    long offs[N + 1];
    write_log(full, N, offs);
    size_t len;
    char *data = slurp(full, &len);
    CHECK_EQ_INT(len, offs[N]);
    long good = offs[N - 1];
    int cases = 0;
    for (long cut = good + 1; cut < offs[N]; cut++, cases++) {
        spit(path, data, (size_t)cut);
        char msg[TT_ERRLEN];
        LogReadStatus end;
        off_t g = -1;
        int n = read_all(path, &end, msg, &g);
        CHECK_EQ_INT(n, N - 1);
        CHECK_EQ_INT(end, LOG_TORN);
        CHECK_EQ_INT(g, good);
        char want[64];
        snprintf(want, sizeof want, "byte offset %ld", good);
        CHECK_CONTAINS(msg, want);

        LogWriter *w;
        off_t trunc = 0;
        char err[TT_ERRLEN];
        CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
        CHECK_EQ_INT(trunc, good);
        CHECK_EQ_INT(file_size(path), good);
        Record r;
        Record_init(&r);
        make_record(&r, 3, 99);
        CHECK(LogWriter_append(w, &r, err) == TT_OK);
        LogWriter_close(w);
        n = read_all(path, &end, msg, NULL);
        CHECK_EQ_INT(n, N);
        CHECK_EQ_INT(end, LOG_END);
        /* the appended record is the last one and reads back equal */
        LogReader *rd;
        CHECK(LogReader_open(path, &rd, NULL, err) == TT_OK);
        Record got;
        Record_init(&got);
        for (int i = 0; i < N; i++)
            LogReader_next(rd, &got, msg);
        CHECK(records_equal(&got, &r));
        LogReader_close(rd);
        Record_done(&got);
        Record_done(&r);
    }
    CHECK(cases > 50);

    /* zeros after the last record (a crash that extended the file) are a torn tail too */
    char *z = calloc(1, len + 300);
    memcpy(z, data, len);
    spit(path, z, len + 300);
    char msg[TT_ERRLEN];
    LogReadStatus end;
    off_t g;
    CHECK_EQ_INT(read_all(path, &end, msg, &g), N);
    CHECK_EQ_INT(end, LOG_TORN);
    CHECK_EQ_INT(g, (off_t)len);
    free(z);
    free(data);
}

/* Puts `junk` between record k and k+1 of a log of n records; checks that
 * the reader stops after k records with LOG_DAMAGED at that offset and that
 * LogWriter_open refuses the file without changing a byte. */
static void check_damage(const char *junk, size_t junk_len, int k, int n) {
    const char *clean = tmp_path("dmg_clean.log"), *path = tmp_path("dmg.log");
    long offs[16];
    write_log(clean, n, offs);
    size_t len;
    char *data = slurp(clean, &len);
    char *bad = malloc(len + junk_len);
    memcpy(bad, data, (size_t)offs[k]);
    memcpy(bad + offs[k], junk, junk_len);
    memcpy(bad + offs[k] + junk_len, data + offs[k], len - (size_t)offs[k]);
    spit(path, bad, len + junk_len);

    char msg[TT_ERRLEN], want[64];
    LogReadStatus end;
    off_t g;
    CHECK_EQ_INT(read_all(path, &end, msg, &g), k);
    CHECK_EQ_INT(end, LOG_DAMAGED);
    CHECK_EQ_INT(g, offs[k]);
    snprintf(want, sizeof want, "damaged at byte offset %ld", offs[k]);
    CHECK_CONTAINS(msg, want);

    LogWriter *w = NULL;
    off_t trunc;
    char err[TT_ERRLEN];
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_ERR);
    CHECK_CONTAINS(err, want);
    size_t after_len;
    char *after = slurp(path, &after_len);
    CHECK(after_len == len + junk_len && memcmp(after, bad, after_len) == 0);
    free(after);
    free(bad);
    free(data);
}

TEST(damage_in_the_middle_is_refused) {
    check_damage("GARBAGE", 7, 3, 6); /* text: decodes as small integers, not maps */
    check_damage("\xc1", 1, 2, 6);    /* 0xc1 is never valid msgpack */
    check_damage("\x81\xa3"
                 "foo\x01",
                 6, 4, 6);                 /* a map, but not a record */
    check_damage("\x00\x00\x00", 3, 1, 4); /* zeros in the middle are damage, not a torn tail */
    /* a record map with a wrong type */
    static const char wrong[] = "\x86\xa4task\xa1x\xa4tmpl\xa1y\xa6target\xa3"
                                "cpu\xa5index\x01\xa5"
                                "costs\x90\xa3"
                                "err\xa1z";
    check_damage(wrong, sizeof wrong - 1, 1, 3);
    /* junk at the very end that does not start a record is damage, not a tear */
    check_damage("xyz", 3, 4, 4);
    check_damage("\xdb\x00\x00", 3, 4, 4); /* an unfinished str32 */
    /* element counts far beyond the file: never allocated, reported as damage */
    check_damage("\xdd\xff\xff\xff\xff", 5, 2, 4);
    check_damage("\xdf\x7f\xff\xff\xff\xa4task", 10, 2, 4);
    check_damage("\xdf\x7f\xff\xff\xff\xa4task", 10, 4, 4); /* at the end: no record is a map32 */
}

TEST(non_log_files_are_refused_unchanged) {
    char err[TT_ERRLEN];
    LogReader *rd;
    LogWriter *w;
    off_t trunc;

    const char *missing = tmp_path("missing.log");
    unlink(missing);
    CHECK(LogReader_open(missing, &rd, NULL, err) == TT_ERR);
    CHECK_CONTAINS(err, "does not exist");

    const char *text = tmp_path("notes.txt");
    const char *hello = "hello, world\nthis is not a log\n";
    spit(text, hello, strlen(hello));
    CHECK(LogReader_open(text, &rd, NULL, err) == TT_ERR);
    CHECK_CONTAINS(err, "is not a tunetop log");
    CHECK(LogWriter_open(text, "cpu", &w, &trunc, err) == TT_ERR);
    CHECK_CONTAINS(err, "is not a tunetop log");
    size_t len;
    char *back = slurp(text, &len);
    CHECK(len == strlen(hello) && memcmp(back, hello, len) == 0);
    free(back);

    /* a msgpack map of another format */
    const char *other = tmp_path("other.mp");
    static const char om[] = "\x82\xa6"
                             "format\xa5other\xa7version\x01";
    spit(other, om, sizeof om - 1);
    CHECK(LogWriter_open(other, "cpu", &w, &trunc, err) == TT_ERR);
    CHECK_CONTAINS(err, "not a tunetop log");
    CHECK_EQ_INT(file_size(other), sizeof om - 1);

    /* a log of another target */
    const char *cuda = tmp_path("cuda.log");
    unlink(cuda);
    CHECK(LogWriter_open(cuda, "cuda", &w, &trunc, err) == TT_OK);
    LogWriter_close(w);
    char *before = slurp(cuda, &len);
    CHECK(LogWriter_open(cuda, "cpu", &w, &trunc, err) == TT_ERR);
    CHECK_CONTAINS(err, "target cuda, not cpu");
    size_t len2;
    back = slurp(cuda, &len2);
    CHECK(len == len2 && memcmp(before, back, len) == 0);
    free(back);
    free(before);

    /* an empty file gets a header */
    const char *empty = tmp_path("empty.log");
    spit(empty, "", 0);
    CHECK(LogReader_open(empty, &rd, NULL, err) == TT_ERR);
    CHECK_CONTAINS(err, "is empty");
    CHECK(LogWriter_open(empty, "cpu", &w, &trunc, err) == TT_OK);
    LogWriter_close(w);
    LogHeader h;
    CHECK(LogReader_open(empty, &rd, &h, err) == TT_OK);
    CHECK_STR(h.target, "cpu");
    Record r;
    Record_init(&r);
    CHECK_EQ_INT(LogReader_next(rd, &r, err), LOG_END);
    LogReader_close(rd);
    Record_done(&r);

    /* a directory is not a log */
    CHECK(LogReader_open(tmpdir, &rd, NULL, err) == TT_ERR);
    CHECK(LogWriter_open(tmpdir, "cpu", &w, &trunc, err) == TT_ERR);
}

TEST(second_writer_is_locked_out) {
    const char *path = tmp_path("locked.log");
    unlink(path);
    char err[TT_ERRLEN];
    LogWriter *w1, *w2 = NULL;
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w1, &trunc, err) == TT_OK);
    Record r;
    Record_init(&r);
    make_record(&r, 0, 1);
    CHECK(LogWriter_append(w1, &r, err) == TT_OK);
    LogWriter_sync(w1, err);
    size_t len, len2;
    char *before = slurp(path, &len);
    CHECK(LogWriter_open(path, "cpu", &w2, &trunc, err) == TT_ERR);
    CHECK_CONTAINS(err, "is in use by another tunetop session");
    if (access("/proc/locks", R_OK) == 0) {
        char want[64];
        snprintf(want, sizeof want, "(pid %ld)", (long)getpid());
        CHECK_CONTAINS(err, want);
    }
    char *after = slurp(path, &len2);
    CHECK(len == len2 && memcmp(before, after, len) == 0);
    free(before);
    free(after);
    /* readers are not blocked by the writer's lock */
    LogReader *rd;
    CHECK(LogReader_open(path, &rd, NULL, err) == TT_OK);
    LogReader_close(rd);
    LogWriter_close(w1);
    CHECK(LogWriter_open(path, "cpu", &w2, &trunc, err) == TT_OK);
    LogWriter_close(w2);
    Record_done(&r);
}

/* The seal of the last object in the file at path (its last 4 bytes). */
static uint32_t last_seal(const char *path) {
    unsigned char b[4] = {0};
    int fd = open(path, O_RDONLY);
    off_t end = lseek(fd, 0, SEEK_END);
    if (pread(fd, b, 4, end - 4) != 4) b[0] = b[1] = b[2] = b[3] = 0;
    close(fd);
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

TEST(reader_follows_a_growing_log) {
    const char *path = tmp_path("follow.log");
    unlink(path);
    char err[TT_ERRLEN], msg[TT_ERRLEN];
    LogWriter *w;
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    Record r, got;
    Record_init(&r);
    Record_init(&got);
    for (int i = 0; i < 3; i++) {
        make_record(&r, 0, i);
        LogWriter_append(w, &r, err);
    }
    LogReader *rd;
    CHECK(LogReader_open(path, &rd, NULL, err) == TT_OK);
    int n = 0;
    while (LogReader_next(rd, &got, msg) == LOG_RECORD)
        n++;
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_END);
    for (int i = 3; i < 5; i++) {
        make_record(&r, 0, i);
        LogWriter_append(w, &r, err);
    }
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_END); /* sticky until asked to follow */
    LogReader_follow(rd);
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_RECORD);
    make_record(&r, 0, 3);
    CHECK(records_equal(&got, &r));
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_RECORD);
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_END);
    LogWriter_close(w);

    /* a record caught half-written, then completed */
    make_record(&r, 1, 5);
    char *bytes;
    size_t len;
    /* as the writer writes it: the 6th record, chained to the file's last object */
    CHECK(Record_encode(&r, &bytes, &len, err) == TT_OK);
    CHECK(Msgpack_chain(&bytes, &len, 6, last_seal(path), err) == TT_OK);
    CHECK(Msgpack_seal(&bytes, &len, err) == TT_OK);
    int fd = open(path, O_WRONLY | O_APPEND);
    CHECK(write(fd, bytes, len / 2) == (ssize_t)(len / 2));
    LogReader_follow(rd);
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_TORN);
    CHECK(write(fd, bytes + len / 2, len - len / 2) == (ssize_t)(len - len / 2));
    LogReader_follow(rd);
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_RECORD);
    CHECK(records_equal(&got, &r));
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_END);

    /* a half record that a resuming session truncates and replaces */
    CHECK(write(fd, bytes, len / 3) == (ssize_t)(len / 3));
    close(fd);
    free(bytes);
    LogReader_follow(rd);
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_TORN);
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    CHECK_EQ_INT(trunc, LogReader_goodOffset(rd));
    make_record(&r, 2, 6);
    LogWriter_append(w, &r, err);
    LogWriter_close(w);
    LogReader_follow(rd);
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_RECORD);
    CHECK(records_equal(&got, &r));
    CHECK_EQ_INT(LogReader_next(rd, &got, msg), LOG_END);
    CHECK_EQ_INT(LogReader_goodOffset(rd), file_size(path));
    LogReader_close(rd);
    Record_done(&r);
    Record_done(&got);
}

TEST(scan_walks_objects_without_decoding) {
    Record r;
    Record_init(&r);
    char err[TT_ERRLEN];
    for (int i = 0; i < 20; i++) {
        make_record(&r, i % 3, i);
        char *bytes;
        size_t len, got = 0;
        CHECK(Record_encode(&r, &bytes, &len, err) == TT_OK);
        CHECK_EQ_INT(Msgpack_scan((unsigned char *)bytes, len, &got), SCAN_COMPLETE);
        CHECK_EQ_INT(got, len);
        int incomplete = 0, prefix = 0;
        for (size_t cut = 0; cut < len; cut++) {
            incomplete += Msgpack_scan((unsigned char *)bytes, cut, &got) == SCAN_INCOMPLETE;
            prefix += Record_isPrefix((unsigned char *)bytes, cut);
        }
        CHECK_EQ_INT(incomplete, len);
        CHECK_EQ_INT(prefix, len - 1); /* every non-empty prefix */
        free(bytes);
    }
    Record_done(&r);
    size_t at = 0;
    CHECK_EQ_INT(Msgpack_scan((const unsigned char *)"\x92\x01\xc1", 3, &at), SCAN_INVALID);
    CHECK_EQ_INT(at, 2);
    CHECK_EQ_INT(Msgpack_scan((const unsigned char *)"\xdd\xff\xff\xff\xff\x01", 6, &at), SCAN_INCOMPLETE);
    CHECK_EQ_INT(Msgpack_scan((const unsigned char *)"\xc7\x02\x05\x01\x02\x07", 6, &at), SCAN_COMPLETE);
    CHECK_EQ_INT(at, 5); /* ext8: length, type, 2 bytes */
    CHECK_EQ_INT(Msgpack_scan((const unsigned char *)"\x81\xa1x\xcb\0\0\0\0\0\0\0\0", 12, &at), SCAN_COMPLETE);
    CHECK_EQ_INT(at, 12);
    CHECK(!Record_isPrefix((const unsigned char *)"\x85\xa4tusk", 6));
    CHECK(!Record_isPrefix((const unsigned char *)"\x95", 1));
    CHECK(Record_isPrefix((const unsigned char *)"\xde\x00\x12\xa4ta", 6));
    CHECK(!Record_isPrefix((const unsigned char *)"\xde\x01\x12\xa4ta", 6));
    CHECK(!Record_isPrefix((const unsigned char *)"\xdf\x00\x00\x00\x12\xa4ta", 8));
}

/* Random bytes after a good log: the reader reports a tear or damage after
 * the good records, and never crashes or allocates wildly (run it under ASan). */
TEST(random_tails_never_crash) {
    const char *clean = tmp_path("fuzz_clean.log"), *path = tmp_path("fuzz.log");
    long offs[4];
    write_log(clean, 3, offs);
    size_t len;
    char *data = slurp(clean, &len);
    unsigned seed = 12345;
    int bad = 0;
    for (int it = 0; it < 400; it++) {
        size_t extra = 1 + (size_t)(it * 7 % 300);
        char *buf = malloc(len + extra);
        memcpy(buf, data, len);
        for (size_t i = 0; i < extra; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned c = (seed >> 16) & 0xff;
            if ((seed >> 8) % 5 == 0) c = 0xdc + (seed >> 24) % 4; /* plenty of big container headers */
            buf[len + i] = (char)c;
        }
        spit(path, buf, len + extra);
        char msg[TT_ERRLEN];
        LogReadStatus end;
        off_t g;
        int n = read_all(path, &end, msg, &g);
        if (n < 3 || end == LOG_END || end == LOG_RECORD || g < (off_t)len) bad++;
        free(buf);
    }
    CHECK_EQ_INT(bad, 0);
    free(data);
}

enum { PER_THREAD = 3000 };

typedef struct {
    LogWriter *w;
    int id;
    int failures;
} AppendJob;

static void thread_record(Record *r, int id, int i) {
    make_record(r, id, i);
    /* messages of very different lengths so that a torn or interleaved write would show */
    size_t n = 1 + (size_t)(i * 37 % 3000);
    char *msg = malloc(n + 1);
    memset(msg, 'a' + id, n);
    msg[n] = '\0';
    Record_setError(r, 3, msg);
    free(msg);
}

static void *append_thread(void *arg) {
    AppendJob *job = arg;
    Record r;
    Record_init(&r);
    char err[TT_ERRLEN];
    for (int i = 0; i < PER_THREAD; i++) {
        thread_record(&r, job->id, i);
        if (LogWriter_append(job->w, &r, err)) job->failures++;
    }
    Record_done(&r);
    return NULL;
}

TEST(concurrent_appends_never_interleave) {
    const char *path = tmp_path("threads.log");
    unlink(path);
    char err[TT_ERRLEN];
    LogWriter *w;
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    AppendJob jobs[2] = {{w, 0, 0}, {w, 1, 0}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, append_thread, &jobs[t]);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    CHECK_EQ_INT(jobs[0].failures + jobs[1].failures, 0);
    LogWriter_close(w);

    LogReader *rd;
    CHECK(LogReader_open(path, &rd, NULL, err) == TT_OK);
    Record got, want;
    Record_init(&got);
    Record_init(&want);
    int next[2] = {0, 0}, bad = 0;
    LogReadStatus st;
    while ((st = LogReader_next(rd, &got, err)) == LOG_RECORD) {
        int id = got.task_key[8] - '1'; /* "dense:m=<id+1>,..." */
        if (id < 0 || id > 1) {
            bad++;
            continue;
        }
        thread_record(&want, id, next[id]++);
        if (!records_equal(&got, &want)) bad++;
    }
    CHECK_EQ_INT(st, LOG_END);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(next[0], PER_THREAD);
    CHECK_EQ_INT(next[1], PER_THREAD);
    LogReader_close(rd);
    Record_done(&got);
    Record_done(&want);
}

/* ---- history ------------------------------------------------------------------ */

/* issue 13, defects 1 and 2: the log carries the session's task list and the
 * steering; every reader shows the session's IDs and weights, LogReader_next
 * skips the new objects, a torn one is a torn tail like a torn record. */
TEST(session_and_steer_objects) {
    const char *path = tmp_path("session.log");
    unlink(path);
    char err[TT_ERRLEN];
    LogWriter *w;
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    LogSession s;
    LogSession_init(&s);
    s.timestamp = 1234.5;
    snprintf(s.network, sizeof s.network, "resnet-18");
    /* IDs 0, 1, 2 = tasks 5, 7, 9; weights 1, 4, 3 */
    int ids[] = {5, 7, 9};
    double weights[] = {1, 4, 3};
    Record r;
    Record_init(&r);
    for (int i = 0; i < 3; i++) {
        make_record(&r, ids[i], 0);
        LogSession_addTask(&s, r.task_key, r.template_name, weights[i], "resnet-18");
    }
    CHECK(LogWriter_appendSession(w, &s, err) == TT_OK);
    /* records arrive in the order 9, 7 (the user steered): task 5 never measured */
    make_record(&r, 9, 1);
    CHECK(LogWriter_append(w, &r, err) == TT_OK);
    LogSteer st = {.timestamp = 1300, .paused = true, .priority = 2};
    make_record(&r, 7, 2);
    snprintf(st.key, sizeof st.key, "%s", r.task_key);
    snprintf(st.template_name, sizeof st.template_name, "%s", r.template_name);
    CHECK(LogWriter_appendSteer(w, &st, err) == TT_OK);
    CHECK(LogWriter_append(w, &r, err) == TT_OK);
    st.paused = false;
    st.stopped = true;
    CHECK(LogWriter_appendSteer(w, &st, err) == TT_OK);
    LogWriter_close(w);

    /* records only: the two records, in file order */
    LogReadStatus end;
    off_t good;
    char msg[TT_ERRLEN];
    CHECK_EQ_INT(read_all(path, &end, msg, &good), 2);
    CHECK_EQ_INT(end, LOG_END);

    /* every object through nextEntry */
    LogReader *rd;
    LogHeader h;
    CHECK(LogReader_open(path, &rd, &h, err) == TT_OK);
    LogEntry e;
    LogEntry_init(&e);
    LogObjectKind kinds[8];
    int n = 0;
    while (n < 8 && LogReader_nextEntry(rd, &e, msg) == LOG_RECORD) {
        kinds[n++] = e.kind;
        if (e.kind == LOG_OBJ_SESSION) {
            CHECK_EQ_INT(e.session.n_tasks, 3);
            CHECK_STR(e.session.network, "resnet-18");
            CHECK_NEAR(e.session.timestamp, 1234.5, 0);
            CHECK_NEAR(e.session.tasks[1].weight, 4, 0);
            CHECK_STR(e.session.tasks[2].key, "dense:m=10,n=64,k=32");
            CHECK_STR(e.session.tasks[2].template_name, "dense_cpu_v9");
            CHECK_STR(e.session.tasks[2].network, "resnet-18");
        }
    }
    LogEntry_done(&e);
    LogReader_close(rd);
    CHECK_EQ_INT(n, 5);
    CHECK(kinds[0] == LOG_OBJ_SESSION && kinds[1] == LOG_OBJ_RECORD && kinds[2] == LOG_OBJ_STEER &&
          kinds[3] == LOG_OBJ_RECORD && kinds[4] == LOG_OBJ_STEER);

    /* History: the session's ID order and weights, the last steering per task */
    History hist;
    CHECK(History_load(&hist, path, err) == TT_OK);
    CHECK_EQ_INT(hist.n_tasks, 3);
    CHECK_EQ_INT(hist.n_sessions, 1);
    CHECK_STR(hist.tasks[0].key, "dense:m=6,n=64,k=32");
    CHECK_EQ_INT(hist.tasks[0].n_records, 0);
    CHECK_STR(hist.tasks[1].key, "dense:m=8,n=64,k=32");
    CHECK_STR(hist.tasks[2].key, "dense:m=10,n=64,k=32");
    CHECK_NEAR(hist.tasks[1].weight, 4, 0);
    CHECK_NEAR(hist.tasks[2].weight, 3, 0);
    CHECK_STR(hist.tasks[2].network, "resnet-18");
    CHECK(hist.tasks[1].steer != NULL && hist.tasks[1].steer->stopped && hist.tasks[1].steer->priority == 2);
    CHECK(hist.tasks[0].steer == NULL);
    CHECK(History_find(&hist, "dense:m=10,n=64,k=32") == &hist.tasks[2]);
    History_done(&hist);

    /* a session or steer object cut short at any byte is a torn tail, cut off on resume */
    size_t len;
    char *data = slurp(path, &len);
    const char *cut_path = tmp_path("session_torn.log");
    char *bytes;
    size_t slen;
    CHECK(LogSteer_encode(&st, &bytes, &slen, err) == TT_OK);
    CHECK(Msgpack_chain(&bytes, &slen, 0, 0, err) == TT_OK); /* as the writer writes it */
    CHECK(Msgpack_seal(&bytes, &slen, err) == TT_OK);
    for (size_t cut = len - slen + 1; cut < len; cut++) {
        spit(cut_path, data, cut);
        CHECK_EQ_INT(read_all(cut_path, &end, msg, &good), 2);
        CHECK_EQ_INT(end, LOG_TORN);
        CHECK_EQ_INT(good, (off_t)(len - slen));
    }
    free(bytes);
    free(data);
    Record_done(&r);
    LogSession_done(&s);

    /* an object of a kind this version does not know is damage, not skipped */
    const char *odd = tmp_path("odd_kind.log");
    unlink(odd);
    CHECK(LogWriter_open(odd, "cpu", &w, &trunc, err) == TT_OK);
    LogWriter_close(w);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str_with_body(&pk, "kind", 4);
    msgpack_pack_str_with_body(&pk, "future", 6);
    size_t olen = sb.size;
    char *obytes = msgpack_sbuffer_release(&sb);
    CHECK(Msgpack_chain(&obytes, &olen, 1, last_seal(odd), err) == TT_OK); /* in its place in the chain */
    CHECK(Msgpack_seal(&obytes, &olen, err) == TT_OK);
    FILE *f = fopen(odd, "ab");
    fwrite(obytes, 1, olen, f);
    fclose(f);
    free(obytes);
    msgpack_sbuffer_destroy(&sb);
    read_all(odd, &end, msg, &good);
    CHECK_EQ_INT(end, LOG_DAMAGED);
    CHECK_CONTAINS(msg, "unknown to this version");
}

/* A record's latency is the median of its repeats: one repeat preempted on a busy machine (3x its
 * neighbours) does not move it, so the faster kernel stays the best; an even count takes the middle two. */
TEST(latency_is_the_median_of_repeats) {
    Record a, b;
    Record_init(&a);
    Record_init(&b);
    double ca[] = {3.1e-3, 9.0e-3, 3.0e-3}, cb[] = {3.5e-3, 3.4e-3, 3.6e-3};
    a.n_costs = b.n_costs = 3;
    memcpy(a.costs, ca, sizeof ca);
    memcpy(b.costs, cb, sizeof cb);
    CHECK_NEAR(Record_cost(&a), 3.1e-3, 1e-15);
    CHECK(Record_cost(&a) < Record_cost(&b)); /* the mean would rank a (5.03 ms) behind b (3.5 ms) */
    CHECK_NEAR(Record_gflops(&a, 3.1e6), 1.0, 1e-12);
    a.n_costs = 4;
    a.costs[3] = 1.0e-3; /* sorted 1, 3, 3.1, 9 ms: the middle two */
    CHECK_NEAR(Record_cost(&a), 3.05e-3, 1e-15);
    CHECK_NEAR(a.costs[1], 9.0e-3, 0); /* the costs themselves are left in their order */
    a.n_costs = 1;
    CHECK_NEAR(Record_cost(&a), 3.1e-3, 0);
    a.n_costs = 0;
    CHECK(isinf(Record_cost(&a)));
    b.n_costs = 3;
    Record_setError(&b, 4, "runtime error");
    CHECK(isinf(Record_cost(&b)) && Record_gflops(&b, 1e9) == 0);
    Record_done(&a);
    Record_done(&b);
}

TEST(history_groups_by_task) {
    const char *path = tmp_path("history.log");
    unlink(path);
    char err[TT_ERRLEN];
    LogWriter *w;
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    Record r;
    Record_init(&r);
    /* tasks appear in the order 2, 0, 1; task 1 never succeeds */
    int order[] = {2, 0, 1, 0, 2, 2, 1, 0, 0, 2};
    double cost[] = {3e-3, 5e-3, 1, 2e-3, 1e-3, 1e-3, 1, 4e-3, 2e-3, 7e-3};
    for (int i = 0; i < 10; i++) {
        make_record(&r, order[i], i);
        Record_setError(&r, 0, NULL);
        r.n_costs = 1;
        r.costs[0] = cost[i];
        if (order[i] == 1) Record_setError(&r, i == 2 ? 1 : 5, "bad");
        if (i == 7) Record_setError(&r, 42, "from a later version");
        CHECK(LogWriter_append(w, &r, err) == TT_OK);
    }
    /* 300 more tasks, to grow the index */
    for (int t = 0; t < 300; t++) {
        make_record(&r, 10 + t, t);
        Record_setError(&r, 0, NULL);
        CHECK(LogWriter_append(w, &r, err) == TT_OK);
    }
    LogWriter_close(w);

    History h;
    CHECK(History_load(&h, path, err) == TT_OK);
    CHECK_EQ_INT(h.n_tasks, 303);
    CHECK_EQ_INT(h.n_records, 310);
    CHECK_EQ_INT(h.end, LOG_END);
    CHECK_STR(h.header.target, "cpu");
    CHECK_STR(h.tasks[0].key, "dense:m=3,n=64,k=32");
    CHECK_STR(h.tasks[1].key, "dense:m=1,n=64,k=32");
    CHECK_STR(h.tasks[2].key, "dense:m=2,n=64,k=32");
    CHECK_STR(h.tasks[0].template_name, "dense_cpu_v2");
    /* task 2: records 0,4,5,9 with costs 3,1,1,7 ms: the first 1 ms one is best */
    const HistoryTask *t2 = History_find(&h, "dense:m=3,n=64,k=32");
    CHECK(t2 == &h.tasks[0]);
    CHECK_EQ_INT(t2->n_records, 4);
    CHECK_EQ_INT(t2->best, 1);
    CHECK_EQ_INT(HistoryTask_best(t2)->index, 1000003ull * 4 + 7);
    /* task 0: records 1,3,7(error),8 with costs 5,2,-,2 ms */
    const HistoryTask *t0 = History_find(&h, "dense:m=1,n=64,k=32");
    CHECK_EQ_INT(t0->n_records, 4);
    CHECK_EQ_INT(t0->best, 1);
    CHECK_EQ_INT(t0->n_errors, 1);
    CHECK_EQ_INT(t0->errno_count[0], 3);
    CHECK_EQ_INT(t0->errno_count[HISTORY_ERRNO_SLOTS - 1], 1);
    for (int i = 1; i < t0->n_records; i++)
        CHECK(t0->records[i].timestamp > t0->records[i - 1].timestamp);
    const HistoryTask *t1 = History_find(&h, "dense:m=2,n=64,k=32");
    CHECK(HistoryTask_best(t1) == NULL);
    CHECK_EQ_INT(t1->n_errors, 2);
    CHECK_EQ_INT(t1->errno_count[1], 1);
    CHECK_EQ_INT(t1->errno_count[5], 1);
    CHECK(History_find(&h, "dense:m=999,n=64,k=32") == NULL);
    int found = 0;
    for (int t = 0; t < 300; t++) {
        char key[64];
        snprintf(key, sizeof key, "dense:m=%d,n=64,k=32", 11 + t);
        const HistoryTask *ht = History_find(&h, key);
        found += ht && ht->n_records == 1 && ht->best == 0;
    }
    CHECK_EQ_INT(found, 300);
    History_done(&h);

    /* a torn tail loads what is complete; damage is an error but keeps what came before */
    size_t len;
    char *data = slurp(path, &len);
    const char *torn = tmp_path("history_torn.log");
    spit(torn, data, len - 3);
    CHECK(History_load(&h, torn, err) == TT_OK);
    CHECK_EQ_INT(h.end, LOG_TORN);
    CHECK_EQ_INT(h.n_records, 309);
    CHECK_CONTAINS(h.end_msg, "torn");
    History_done(&h);
    data = realloc(data, len + 40);
    memset(data + len, 0x11, 40);
    spit(torn, data, len + 40);
    CHECK(History_load(&h, torn, err) == TT_ERR);
    CHECK_CONTAINS(err, "damaged at byte offset");
    CHECK_EQ_INT(h.end, LOG_DAMAGED);
    CHECK_EQ_INT(h.n_records, 310);
    CHECK_EQ_INT(h.good_offset, (off_t)len);
    History_done(&h);
    CHECK(History_load(&h, tmp_path("nope.log"), err) == TT_ERR);
    CHECK_EQ_INT(h.n_records, 0);
    History_done(&h);
    free(data);
    Record_done(&r);
}

/* ---- the `best` and `dump` commands ------------------------------------------ */

/* app/ is not a library the tests link, so the command file is compiled into
 * this test; its functions run in-process with stdout/stderr sent to files. */
#include "app/cli.c" /* the option tables and the help printer cmd_records.c uses */
#include "app/cmd_records.c"

static char cli_out[1 << 16], cli_err[1 << 12];

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

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void append_task_record(LogWriter *w, const char *key, int error_no, double cost_s, uint64_t index) {
    Record r;
    Record_init(&r);
    snprintf(r.task_key, sizeof r.task_key, "%s", key);
    snprintf(r.template_name, sizeof r.template_name, "tmpl_%c", key[0]);
    snprintf(r.target, sizeof r.target, "cpu");
    r.index = index;
    snprintf(r.config, sizeof r.config, "tile=[%llu]", (unsigned long long)index);
    r.n_costs = error_no ? 0 : 2; /* a failed trial has no latency */
    r.costs[0] = cost_s * 0.5;
    r.costs[1] = cost_s * 1.5;
    if (error_no) Record_setError(&r, error_no, "failed\nhere");
    if (key[0] == 'd') r.regs = 40, r.shared_bytes = 4096;
    char err[TT_ERRLEN];
    if (LogWriter_append(w, &r, err)) abort();
    Record_done(&r);
}

/* A task is a key under one template: conv2d 3x3 stride 1 tuned direct and
 * Winograd is two tasks of History and LogSummary (the session's IDs), found
 * by (key, template) or by the key alone (the first); History_bestOfKey is the
 * faster of the two (what run and export build); a steer names its template. */
TEST(one_key_under_two_templates_is_two_tasks) {
    const char *path = tmp_path("groups.log");
    unlink(path);
    const char *key = "conv2d:n=1,ci=8,h=8,w=8,co=8,kh=3,kw=3,stride=1,pad=1";
    char err[TT_ERRLEN];
    LogWriter *w;
    CHECK(LogWriter_open(path, "cpu", &w, NULL, err) == TT_OK);
    LogSession ses;
    LogSession_init(&ses);
    LogSession_addTask(&ses, key, "conv2d_nchwc.cpu", 2, "");
    LogSession_addTask(&ses, key, "conv2d_winograd.cpu", 2, "");
    CHECK(LogWriter_appendSession(w, &ses, err) == TT_OK);
    LogSession_done(&ses);
    const char *tmpl[] = {"conv2d_nchwc.cpu", "conv2d_winograd.cpu", "conv2d_nchwc.cpu", "conv2d_winograd.cpu"};
    double cost[] = {3e-3, 2e-3, 4e-3, 1e-3};
    for (int i = 0; i < 4; i++) {
        Record r;
        Record_init(&r);
        snprintf(r.task_key, sizeof r.task_key, "%s", key);
        snprintf(r.template_name, sizeof r.template_name, "%s", tmpl[i]);
        snprintf(r.target, sizeof r.target, "cpu");
        r.index = (uint64_t)i / 2; /* the same index under both templates */
        r.n_costs = 1;
        r.costs[0] = cost[i];
        CHECK(LogWriter_append(w, &r, err) == TT_OK);
        Record_done(&r);
    }
    LogSteer st = {.priority = 2};
    snprintf(st.key, sizeof st.key, "%s", key);
    snprintf(st.template_name, sizeof st.template_name, "conv2d_winograd.cpu");
    CHECK(LogWriter_appendSteer(w, &st, err) == TT_OK);
    LogWriter_close(w);

    History h;
    CHECK(History_load(&h, path, err) == TT_OK);
    CHECK_EQ_INT(h.n_tasks, 2);
    CHECK_STR(h.tasks[0].template_name, "conv2d_nchwc.cpu");
    CHECK_STR(h.tasks[1].template_name, "conv2d_winograd.cpu");
    CHECK_EQ_INT(h.tasks[0].n_records, 2);
    CHECK_EQ_INT(h.tasks[1].n_records, 2);
    CHECK(History_find(&h, key) == &h.tasks[0]);
    CHECK(History_findTemplate(&h, key, "conv2d_winograd.cpu") == &h.tasks[1]);
    CHECK(History_findTemplate(&h, key, "other.cpu") == NULL);
    const Record *best = History_bestOfKey(&h, key);
    CHECK(best && strcmp(best->template_name, "conv2d_winograd.cpu") == 0 && best->costs[0] == 1e-3);
    CHECK(h.tasks[0].steer == NULL);
    CHECK(h.tasks[1].steer && h.tasks[1].steer->priority == 2);
    History_done(&h);

    LogSummary sm;
    CHECK(LogSummary_load(&sm, path, err) == TT_OK);
    CHECK_EQ_INT(sm.n_tasks, 2);
    CHECK_NEAR(Record_cost(&sm.tasks[0].best), 3e-3, 1e-12);
    CHECK_NEAR(Record_cost(&sm.tasks[1].best), 1e-3, 1e-12);
    CHECK(!sm.tasks[0].steered);
    CHECK(sm.tasks[1].steered && sm.tasks[1].steer.priority == 2);
    CHECK(LogSummary_findTemplate(&sm, key, "conv2d_nchwc.cpu") == &sm.tasks[0]);
    LogSummary_done(&sm);
}

/* `best --model`: a task list from outside the log (a model's) orders the
 * summary: its tasks first with its weights, one without records there empty,
 * then its workloads under another template; other workloads are dropped and
 * counted. LogSummary_bestOfKey is History_bestOfKey's pick. */
TEST(a_task_list_orders_the_summary) {
    const char *path = tmp_path("list.log");
    unlink(path);
    char err[TT_ERRLEN];
    LogWriter *w;
    CHECK(LogWriter_open(path, "cpu", &w, NULL, err) == TT_OK);
    /* key dense:m=1 under v0 (2 records) and under "alt" (the fastest), key m=2 (another workload, 2 records) */
    const char *tmpl[] = {"dense_cpu_v0", "dense_cpu_v0", "alt", "dense_cpu_v1", "dense_cpu_v1"};
    int task[] = {0, 0, 0, 1, 1};
    double cost[] = {3e-5, 2e-5, 1e-5, 4e-5, 5e-5};
    Record r;
    Record_init(&r);
    for (int i = 0; i < 5; i++) {
        make_record(&r, task[i], 0);
        snprintf(r.template_name, sizeof r.template_name, "%s", tmpl[i]);
        r.n_costs = 1;
        r.costs[0] = cost[i];
        CHECK(LogWriter_append(w, &r, err) == TT_OK);
    }
    Record_done(&r);
    LogWriter_close(w);

    LogSession list;
    LogSession_init(&list);
    snprintf(list.network, sizeof list.network, "m.onnx");
    LogSession_addTask(&list, "dense:m=3,n=64,k=32", "dense_cpu_v2", 1, "m.onnx"); /* never measured */
    LogSession_addTask(&list, "dense:m=1,n=64,k=32", "dense_cpu_v0", 4, "m.onnx");
    LogSummary sm;
    CHECK(LogSummary_load(&sm, path, err) == TT_OK);
    int other_tasks;
    long other_records;
    LogSummary_useTasks(&sm, &list, &other_tasks, &other_records);
    CHECK_EQ_INT(sm.n_tasks, 3);
    CHECK_STR(sm.tasks[0].key, "dense:m=3,n=64,k=32");
    CHECK_EQ_INT(sm.tasks[0].n_records, 0);
    CHECK(!sm.tasks[0].has_best);
    CHECK_STR(sm.tasks[1].template_name, "dense_cpu_v0");
    CHECK_EQ_INT(sm.tasks[1].n_records, 2);
    CHECK_NEAR(sm.tasks[1].weight, 4, 0);
    CHECK_STR(sm.tasks[2].template_name, "alt"); /* the workload under a template the list does not name */
    CHECK_NEAR(sm.tasks[2].weight, 4, 0);
    CHECK_EQ_INT(other_tasks, 1);
    CHECK_EQ_INT(other_records, 2);
    CHECK(LogSummary_findTemplate(&sm, "dense:m=1,n=64,k=32", "alt") == &sm.tasks[2]);
    CHECK(LogSummary_find(&sm, "dense:m=2,n=64,k=32") == NULL);
    const Record *best = LogSummary_bestOfKey(&sm, "dense:m=1,n=64,k=32");
    CHECK(best && strcmp(best->template_name, "alt") == 0);
    CHECK(LogSummary_bestOfKey(&sm, "dense:m=3,n=64,k=32") == NULL);
    History h;
    CHECK(History_load(&h, path, err) == TT_OK);
    CHECK(Record_cost(History_bestOfKey(&h, "dense:m=1,n=64,k=32")) == Record_cost(best));
    History_done(&h);
    LogSummary_done(&sm);
    LogSession_done(&list);
}

#define CONV_KEY "conv2d:n=1,ci=64,h=56,w=56,co=64,kh=3,kw=3,stride=1,pad=1"
#define DENSE_KEY "dense:m=1,n=1000,k=512"
#define BMM_KEY "batch_matmul:b=4,m=32,n=32,k=32"

TEST(cli_best_and_dump) {
    const char *path = tmp_path("cli.log");
    unlink(path);
    char err[TT_ERRLEN];
    LogWriter *w;
    off_t trunc;
    CHECK(LogWriter_open(path, "cpu", &w, &trunc, err) == TT_OK);
    append_task_record(w, CONV_KEY, 0, 2e-3, 11);
    append_task_record(w, DENSE_KEY, 0, 1e-3, 21);
    append_task_record(w, CONV_KEY, 0, 1e-3, 12); /* best conv2d: 1 ms */
    append_task_record(w, BMM_KEY, 1, 0, 31);
    append_task_record(w, CONV_KEY, 1, 0, 13);
    append_task_record(w, CONV_KEY, 5, 0, 14);
    append_task_record(w, BMM_KEY, 5, 0, 32);
    CHECK(LogWriter_closeMarked(w, err) == TT_OK); /* a clean stop: no warning below */

    char *best_argv[] = {"best", (char *)path, NULL};
    CHECK_EQ_INT(run_cmd(cmd_best, 2, best_argv), 0);
    CHECK_STR(cli_err, "");
    CHECK_CONTAINS(cli_out, "7 records, 3 tasks (2 with a result), 4 failed trials");
    /* first-seen order */
    char *c = strstr(cli_out, "task 0  " CONV_KEY "\n"), *d = strstr(cli_out, "task 1  " DENSE_KEY "\n"),
         *b = strstr(cli_out, "task 2  " BMM_KEY "\n");
    CHECK(c && d && b && c < d && d < b);
    /* conv2d: 2*64*56*56*64*9 = 231211008 FLOPs in 1 ms */
    CHECK_CONTAINS(cli_out, "  template  tmpl_c\n  ID        0  weight 1\n  best      tile=[12]  (config index 12)\n"
                            "  latency   1.0000 ms  (median of 2 repeats)\n  speed     231.21 GFLOPS\n"
                            "  trials    4 (2 errors: INSTANTIATION_ERROR 1, WRONG_ANSWER 1)\n");
    /* dense: 2*1000*512 FLOPs in 1 ms */
    CHECK_CONTAINS(cli_out,
                   "  speed     1.02 GFLOPS\n  resources 40 registers 4096 B shared\n  trials    1 (no errors)\n");
    CHECK_CONTAINS(cli_out, "  best      none: no successful record (2 trials, all failed)\n"
                            "  trials    2 (2 errors: INSTANTIATION_ERROR 1, WRONG_ANSWER 1)\n");
    /* weights 1 (an older log has no task list): 1 ms + 1 ms, the failed task left out */
    CHECK_CONTAINS(cli_out,
                   "estimated total latency 2 ms (sum of weight x best latency; 1 task without a result left out)");

    char *dump_argv[] = {"dump", (char *)path, NULL};
    CHECK_EQ_INT(run_cmd(cmd_dump, 2, dump_argv), 0);
    CHECK_STR(cli_err, "");
    CHECK_EQ_INT(count_lines(cli_out), 7);
    /* each line is exactly Record_toJson of the record, in file order */
    LogReader *rd;
    CHECK(LogReader_open(path, &rd, NULL, err) == TT_OK);
    Record r;
    Record_init(&r);
    const char *line = cli_out;
    while (LogReader_next(rd, &r, err) == LOG_RECORD) {
        char *j = Record_toJson(&r);
        size_t n = strlen(j);
        CHECK(strncmp(line, j, n) == 0 && line[n] == '\n');
        line = strchr(line, '\n') + 1;
        free(j);
    }
    LogReader_close(rd);
    Record_done(&r);
    CHECK_CONTAINS(cli_out, "\"msg\":\"failed\\nhere\"");

    /* a torn tail: a warning, exit 0, the complete records are printed */
    size_t len;
    char *data = slurp(path, &len);
    const char *torn = tmp_path("cli_torn.log");
    /* the close marker is the last object ({"kind": "close", ...}, a fixmap): cut inside the record before it */
    size_t marker = len;
    for (size_t i = len - 6; i > 6 && marker == len; i--)
        if (memcmp(data + i,
                   "\xa5"
                   "close",
                   6) == 0)
            marker = i - 6;
    CHECK(marker < len);
    spit(torn, data, marker - 4);
    char *torn_argv[] = {"dump", (char *)torn, NULL};
    CHECK_EQ_INT(run_cmd(cmd_dump, 2, torn_argv), 0);
    CHECK_EQ_INT(count_lines(cli_out), 6);
    CHECK_CONTAINS(cli_err, "warning");
    CHECK_CONTAINS(cli_err, "torn last record at byte offset");
    CHECK_EQ_INT(count_lines(cli_err), 1);
    torn_argv[0] = "best";
    CHECK_EQ_INT(run_cmd(cmd_best, 2, torn_argv), 0);
    CHECK_CONTAINS(cli_err, "warning");

    /* damage: an error naming the offset, exit 1 */
    data = realloc(data, len + 1);
    data[len] = (char)0xc1;
    spit(torn, data, len + 1);
    char want[64];
    snprintf(want, sizeof want, "damaged at byte offset %zu", len);
    CHECK_EQ_INT(run_cmd(cmd_dump, 2, dump_argv), 0); /* the clean log still reads */
    dump_argv[1] = (char *)torn;
    CHECK_EQ_INT(run_cmd(cmd_dump, 2, dump_argv), 1);
    CHECK_CONTAINS(cli_err, want);
    CHECK_EQ_INT(count_lines(cli_out), 7);
    CHECK_EQ_INT(run_cmd(cmd_best, 2, torn_argv), 1);
    CHECK_CONTAINS(cli_err, want);
    free(data);

    /* missing file, not a log, usage */
    dump_argv[1] = (char *)tmp_path("cli_missing.log");
    CHECK_EQ_INT(run_cmd(cmd_dump, 2, dump_argv), 1);
    CHECK_CONTAINS(cli_err, "does not exist");
    CHECK_EQ_INT(count_lines(cli_err), 1);
    CHECK_STR(cli_out, "");
    const char *text = tmp_path("cli.txt");
    spit(text, "{\"a\": 1}\n", 9);
    best_argv[1] = (char *)text;
    CHECK_EQ_INT(run_cmd(cmd_best, 2, best_argv), 1);
    CHECK_CONTAINS(cli_err, "is not a tunetop log");
    CHECK_EQ_INT(count_lines(cli_err), 1);
    char *help_argv[] = {"best", "--help", NULL};
    CHECK_EQ_INT(run_cmd(cmd_best, 2, help_argv), 0);
    CHECK_CONTAINS(cli_out, "usage: tunetop best [--verbose] LOG");
    help_argv[0] = "dump";
    CHECK_EQ_INT(run_cmd(cmd_dump, 2, help_argv), 0);
    CHECK_CONTAINS(cli_out, "usage: tunetop dump LOG");
    char *none_argv[] = {"dump", NULL};
    CHECK_EQ_INT(run_cmd(cmd_dump, 1, none_argv), 2);
    char *extra_argv[] = {"best", "a.log", "b.log", NULL};
    CHECK_EQ_INT(run_cmd(cmd_best, 3, extra_argv), 2);
    char *bad_argv[] = {"best", "--frobnicate", "a.log", NULL};
    CHECK_EQ_INT(run_cmd(cmd_best, 3, bad_argv), 2);
    CHECK_CONTAINS(cli_err, "--frobnicate");
}

static void remove_tmpdir(void) {
    DIR *d = opendir(tmpdir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(tmp_path(e->d_name));
        closedir(d);
    }
    rmdir(tmpdir);
}

int main(void) {
    /* tmpfs when there is one: the torn-tail test opens a log hundreds of times, and each open and close fsyncs */
    snprintf(tmpdir, sizeof tmpdir, "%s/tt_records_XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(round_trip_every_field);
    RUN(decode_checks_keys_and_types);
    RUN(encode_limits);
    RUN(json_escaping);
    RUN(scan_walks_objects_without_decoding);
    RUN(log_many_records_read_back_equal);
    RUN(torn_tail_at_every_byte_is_truncated);
    RUN(damage_in_the_middle_is_refused);
    RUN(non_log_files_are_refused_unchanged);
    RUN(second_writer_is_locked_out);
    RUN(reader_follows_a_growing_log);
    RUN(random_tails_never_crash);
    RUN(concurrent_appends_never_interleave);
    RUN(latency_is_the_median_of_repeats);
    RUN(history_groups_by_task);
    RUN(one_key_under_two_templates_is_two_tasks);
    RUN(session_and_steer_objects);
    RUN(a_task_list_orders_the_summary);
    RUN(cli_best_and_dump);
    remove_tmpdir();
    return check_summary();
}
