/* tests/unit/test_te_records.c: a schedule's step list stored in a record
 * (the "steps" key), written to a log, read back and replayed gives the
 * identical loop nest; records without steps read as before. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/te_lower.h"
#include "records/log.h"
#include "tests/check.h"

static const char *const EXAMPLES[] = {"softmax", "layer_norm", "max_pool", "dense_bias_gelu", "matmul", "conv2d"};
#define N_EXAMPLES ((int)(sizeof EXAMPLES / sizeof *EXAMPLES))
#define PER_EXAMPLE 12

static TeProgram *load_example(const char *name, char *err) {
    const char *data = getenv("TT_TEST_DATA");
    char path[512];
    snprintf(path, sizeof path, "%s/../../examples/te/%s.te", data ? data : "tests/data", name);
    return TeProgram_load(path, NULL, 0, err);
}

static void print_nest(const TeDag *d, const Steps *s, StrBuf *out, char *err) {
    LoopNest ln;
    if (LoopNest_lower(&ln, d, s, err) != TT_OK) {
        StrBuf_printf(out, "(does not lower: %s)", err);
        return;
    }
    LoopNest_print(&ln, out);
    LoopNest_done(&ln);
}

TEST(steps_round_trip_through_a_log) {
    char path[] = "/tmp/tt-te-records.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    char err[TT_ERRLEN] = "";
    LogWriter *w = NULL;
    off_t torn = 0;
    CHECK(LogWriter_open(path, "cpu", &w, &torn, err) == TT_OK);
    if (!w) return;

    static TeDag dags[N_EXAMPLES];
    TeProgram *progs[N_EXAMPLES] = {0};
    StrBuf nests[N_EXAMPLES][PER_EXAMPLE];
    Rng rng;
    Rng_seed(&rng, 2026);
    /* one template record without steps among them */
    Record plain;
    Record_init(&plain);
    snprintf(plain.task_key, sizeof plain.task_key, "dense:m=4,n=4,k=4");
    snprintf(plain.template_name, sizeof plain.template_name, "dense.cpu");
    snprintf(plain.target, sizeof plain.target, "cpu");
    plain.n_costs = 1;
    plain.costs[0] = 1e-6;
    CHECK(LogWriter_append(w, &plain, err) == TT_OK);
    for (int e = 0; e < N_EXAMPLES; e++) {
        progs[e] = load_example(EXAMPLES[e], err);
        if (!progs[e]) fprintf(stderr, "%s: %s\n", EXAMPLES[e], err);
        CHECK(progs[e] && TeDag_build(&dags[e], progs[e], err) == TT_OK);
        for (int k = 0; k < PER_EXAMPLE; k++) {
            StrBuf_init(&nests[e][k]);
            if (!progs[e]) continue;
            Steps s;
            TeSchedule_sample(&dags[e], &rng, 0, &s);
            print_nest(&dags[e], &s, &nests[e][k], err);
            StrBuf text;
            StrBuf_init(&text);
            Steps_encode(&s, &text);
            Record rec;
            Record_init(&rec);
            snprintf(rec.task_key, sizeof rec.task_key, "expr:name=%s,te=%s", EXAMPLES[e], dags[e].key);
            snprintf(rec.template_name, sizeof rec.template_name, "te.cpu");
            snprintf(rec.target, sizeof rec.target, "cpu");
            rec.index = (uint64_t)(e * PER_EXAMPLE + k);
            rec.n_costs = 1;
            rec.costs[0] = 1e-3 * (k + 1);
            rec.steps = StrBuf_take(&text);
            StrBuf_done(&text);
            CHECK(LogWriter_append(w, &rec, err) == TT_OK);
            Record_done(&rec);
        }
    }
    LogWriter_close(w);

    LogReader *r = NULL;
    LogHeader h;
    CHECK(LogReader_open(path, &r, &h, err) == TT_OK);
    int replayed = 0, plain_seen = 0;
    Record rec;
    Record_init(&rec);
    char msg[TT_ERRLEN];
    while (r && LogReader_next(r, &rec, msg) == LOG_RECORD) {
        if (strcmp(rec.template_name, "dense.cpu") == 0) {
            CHECK(rec.steps == NULL);
            char *json = Record_toJson(&rec);
            CHECK(strstr(json, "\"steps\"") == NULL);
            free(json);
            plain_seen++;
            continue;
        }
        CHECK(rec.steps != NULL);
        if (!rec.steps) continue;
        int e = (int)(rec.index / PER_EXAMPLE), k = (int)(rec.index % PER_EXAMPLE);
        CHECK(e < N_EXAMPLES);
        if (e >= N_EXAMPLES) continue;
        Steps s;
        CHECK(Steps_decode(rec.steps, &s, err) == TT_OK);
        StrBuf again;
        StrBuf_init(&again);
        print_nest(&dags[e], &s, &again, err);
        CHECK_STR(again.data, nests[e][k].data);
        if (strcmp(again.data, nests[e][k].data) == 0) replayed++;
        StrBuf_done(&again);
        char *json = Record_toJson(&rec);
        CHECK(strstr(json, "\"steps\":\"") != NULL);
        free(json);
    }
    Record_done(&rec);
    if (r) LogReader_close(r);
    CHECK_EQ_INT(plain_seen, 1);
    CHECK_EQ_INT(replayed, N_EXAMPLES * PER_EXAMPLE);
    for (int e = 0; e < N_EXAMPLES; e++) {
        for (int k = 0; k < PER_EXAMPLE; k++) StrBuf_done(&nests[e][k]);
        TeProgram_delete(progs[e]);
    }
    unlink(path);
}

/* Record_copy gives the copy its own steps; Record_done frees them. */
TEST(record_copy_owns_steps) {
    Record a, b;
    Record_init(&a);
    Record_init(&b);
    a.steps = strdup("split 0 1 8; parallel 0 0");
    Record_copy(&b, &a);
    CHECK(b.steps != a.steps);
    CHECK_STR(b.steps, "split 0 1 8; parallel 0 0");
    Record_done(&a);
    CHECK(a.steps == NULL);
    CHECK_STR(b.steps, "split 0 1 8; parallel 0 0");
    Record_done(&b);
}

int main(void) {
    RUN(steps_round_trip_through_a_log);
    RUN(record_copy_owns_steps);
    return check_summary();
}
