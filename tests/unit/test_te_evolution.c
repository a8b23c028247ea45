/* tests/unit/test_te_evolution.c: whole sessions of the evolution strategy on
 * te.sketch tasks (real cpu target, tiny expressions). Every candidate the
 * evolution measures replays from its record to the same code: a fresh task,
 * which knows nothing but the record, gives back exactly the source that was
 * built (captured by a spy around the template's generate). The zero-trial
 * defaults are measured first, no schedule is measured twice, and a resumed
 * session knows the measured schedules again (they rebuild as annotations)
 * and measures none of them again. */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "kernels/target.h"
#include "kernels/templates/te/te_sketch.h"
#include "kernels/templates/te/te_task.h"
#include "records/log.h"
#include "tests/check.h"
#include "tuner/engine.h"

static char dir[64], log_path[128];
static DeviceInfo dev;
static const Target *cpu;

/* ---- the spy: every source te.sketch generated, by index --------------------- */

#define SPY_MAX 256
static pthread_mutex_t spy_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t spy_index[SPY_MAX];
static char *spy_source[SPY_MAX];
static int spy_n;

static Status spy_generate(const Workload *wl, const Space *space, const int32_t *choice, const DeviceInfo *d,
                           Dialect dialect, KernelSource *out, char *err) {
    Status st = tmpl_te_sketch.generate(wl, space, choice, d, dialect, out, err);
    if (st == TT_OK) {
        pthread_mutex_lock(&spy_lock);
        if (spy_n < SPY_MAX) {
            spy_index[spy_n] = Space_encode(space, choice);
            spy_source[spy_n++] = strdup(out->source);
        }
        pthread_mutex_unlock(&spy_lock);
    }
    return st;
}

static const char *spied(uint64_t index) {
    for (int i = 0; i < spy_n; i++)
        if (spy_index[i] == index) return spy_source[i];
    return NULL;
}

static Template spy;

static void example_path(const char *name, char *path, size_t n) {
    const char *data = getenv("TT_TEST_DATA");
    snprintf(path, n, "%s/../../examples/te/%s.te", data ? data : "tests/data", name);
}

static TeTask *load(const char *name, const TeSet *sets, int n_sets, Workload *wl) {
    char path[512], err[TT_ERRLEN] = "";
    example_path(name, path, sizeof path);
    TeTask *t = NULL;
    if (TeTask_load(path, sets, n_sets, &t, wl, err) != TT_OK) fprintf(stderr, "%s: %s\n", name, err);
    return t;
}

typedef struct Seen {
    int finished, results;
    char strategy[256];
} Seen;

static void drain(Engine *e, Seen *seen) {
    EngineEvent ev[64];
    int k;
    while ((k = Engine_drainEvents(e, ev, 64)) > 0)
        for (int i = 0; i < k; i++) {
            if (ev[i].kind == EV_FINISHED) seen->finished++;
            if (ev[i].kind == EV_RESULT) seen->results++;
            if (ev[i].kind == EV_STRATEGY) snprintf(seen->strategy, sizeof seen->strategy, "%s", ev[i].text);
            EngineEvent_done(&ev[i]);
        }
}

/* One session of `trials` on the expression; false when it could not run. */
static bool session(const char *name, const TeSet *sets, int n_sets, int trials, Seen *seen, TeTask **keep) {
    char err[TT_ERRLEN] = "";
    Task *task = calloc(1, sizeof *task);
    Workload wl;
    TeTask *t = load(name, sets, n_sets, &wl);
    CHECK(t != NULL);
    if (!t) return false;
    CHECK(Task_initWith(task, 0, &wl, 1, &spy, &dev, err) == TT_OK);
    EngineConfig cfg;
    EngineConfig_defaults(&cfg);
    cfg.target = cpu;
    cfg.dev = dev;
    cfg.trials = trials;
    cfg.batch = 8;
    cfg.builders = 2;
    cfg.log_path = log_path;
    cfg.seed = 3;
    cfg.measure.number = 1;
    cfg.measure.repeat = 1;
    cfg.measure.min_repeat_ms = 0;
    cfg.measure.threads = 1;
    cfg.evolution.population = 64;
    cfg.evolution.generations = 2;
    Engine *e = Engine_new(&cfg, task, 1, err);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s\n", err);
        TeTask_delete(t);
        return false;
    }
    char summary[512] = "";
    bool ok = Engine_start(e, summary, sizeof summary, err) == TT_OK;
    CHECK(ok);
    struct pollfd p = {.fd = Engine_eventFd(e), .events = POLLIN};
    double t0 = clock_mono();
    while (ok && !seen->finished && clock_mono() - t0 < 300) {
        poll(&p, 1, 100);
        drain(e, seen);
    }
    CHECK(seen->finished);
    Engine_wait(e);
    drain(e, seen);
    Engine_delete(e); /* frees the task */
    *keep = t;
    return ok;
}

/* The log's records, in order. */
static int read_log(Record *recs, int cap) {
    LogReader *lr = NULL;
    LogHeader hdr;
    char err[TT_ERRLEN];
    if (LogReader_open(log_path, &lr, &hdr, err) != TT_OK) return 0;
    int n = 0;
    Record r;
    Record_init(&r);
    while (n < cap && LogReader_next(lr, &r, err) == LOG_RECORD) {
        Record_init(&recs[n]);
        Record_copy(&recs[n++], &r);
    }
    Record_done(&r);
    LogReader_close(lr);
    return n;
}

/* Each record replays, in a task that knows only the record, to the source built for it. */
static int check_replay(const char *name, const TeSet *sets, int n_sets, Record *recs, int n) {
    Workload wl;
    TeTask *fresh = load(name, sets, n_sets, &wl);
    if (!fresh) return 0;
    Space space;
    Space_init(&space);
    char err[TT_ERRLEN] = "";
    CHECK(tmpl_te_sketch.define_space(&wl, &dev, &space, err) == TT_OK);
    int replayed = 0;
    for (int i = 0; i < n; i++) {
        const Record *r = &recs[i];
        CHECK_STR(r->template_name, "te.sketch");
        CHECK(r->steps != NULL);
        CHECK_CONTAINS(r->config, "sketch ");
        CHECK(r->error_no != ERR_WRONG_ANSWER);
        const char *built = spied(r->index);
        CHECK(built != NULL);
        if (!r->steps || !built) continue;
        CHECK(tmpl_te_sketch.adopt(&wl, r->index, r->steps, r->config, err) == TT_OK);
        int32_t choice[SPACE_MAX_KNOBS];
        Space_decode(&space, r->index, choice);
        KernelSource src, direct;
        KernelSource_init(&src);
        KernelSource_init(&direct);
        CHECK(tmpl_te_sketch.generate(&wl, &space, choice, &dev, DIALECT_C, &src, err) == TT_OK);
        Steps steps;
        CHECK(Steps_decode(r->steps, &steps, err) == TT_OK);
        CHECK(TeTask_source(fresh, &steps, &direct, err) == TT_OK);
        CHECK(src.source && strcmp(src.source, built) == 0);
        CHECK(direct.source && strcmp(direct.source, built) == 0);
        replayed += src.source && strcmp(src.source, built) == 0;
        KernelSource_done(&src);
        KernelSource_done(&direct);
    }
    Space_done(&space);
    TeTask_delete(fresh);
    return replayed;
}

static void clear_spy(void) {
    for (int i = 0; i < spy_n; i++)
        free(spy_source[i]);
    spy_n = 0;
}

static void run_and_replay(const char *name, const TeSet *sets, int n_sets) {
    unlink(log_path);
    clear_spy();
    Seen seen = {0};
    TeTask *t = NULL;
    if (!session(name, sets, n_sets, 16, &seen, &t)) return;
    Record recs[64];
    int n = read_log(recs, 64);
    CHECK_EQ_INT(n, 16);
    /* no schedule twice, and no code twice (steps that give the same loop nest are passed over) */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            CHECK(recs[i].index != recs[j].index);
            const char *a = spied(recs[i].index), *b = spied(recs[j].index);
            CHECK(a && b && strcmp(a, b) != 0);
        }
    /* the zero-trial default of sketch 0 comes first, for the cores the kernel runs on (--threads 1): no
     * parallel loop */
    Sketch sk[SKETCH_MAX];
    Sketch_generate(&t->dag, 0, 1, sk);
    SketchAnn *ann = calloc((size_t)t->dag.n_stages, sizeof *ann);
    Sketch_heuristic(&sk[0], &t->dag, dev.vector_floats, ann);
    Steps steps;
    Sketch_steps(&sk[0], &t->dag, ann, &steps);
    StrBuf s;
    StrBuf_init(&s);
    Steps_encode(&steps, &s);
    CHECK(n > 0 && recs[0].steps && strcmp(recs[0].steps, s.data) == 0);
    CHECK(n > 0 && recs[0].steps && strstr(recs[0].steps, "parallel") == NULL);
    StrBuf_done(&s);
    free(ann);
    CHECK_EQ_INT(check_replay(name, sets, n_sets, recs, n), n);
    CHECK_CONTAINS(seen.strategy, "16 schedules measured");
    /* resume: 8 more, none of the 16 again, all 16 known again */
    Seen again = {0};
    TeTask *t2 = NULL;
    session(name, sets, n_sets, 24, &again, &t2);
    Record more[64];
    int m = read_log(more, 64);
    CHECK_EQ_INT(m, 24);
    for (int i = 0; i < m; i++)
        for (int j = i + 1; j < m; j++)
            CHECK(more[i].index != more[j].index);
    CHECK_CONTAINS(again.strategy, "24 schedules measured");
    CHECK_EQ_INT(check_replay(name, sets, n_sets, more, m), m);
    for (int i = 0; i < n; i++)
        Record_done(&recs[i]);
    for (int i = 0; i < m; i++)
        Record_done(&more[i]);
    TeTask_delete(t);
    TeTask_delete(t2);
}

TEST(matmul_candidates_replay_from_their_records) {
    TeSet set[] = {{"N", 16}};
    run_and_replay("matmul", set, 1);
}

TEST(dense_gelu_candidates_of_two_sketches_replay_from_their_records) {
    TeSet set[] = {{"M", 4}, {"N", 16}, {"K", 8}};
    run_and_replay("dense_bias_gelu", set, 3);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tt_te_evo_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(log_path, sizeof log_path, "%s/e.log", dir);
    char err[TT_ERRLEN];
    cpu = Target_find("cpu");
    if (!cpu || cpu->probe(&dev, err) != TT_OK) {
        fprintf(stderr, "cpu target: %s\n", cpu ? err : "missing");
        return 1;
    }
    spy = tmpl_te_sketch;
    spy.generate = spy_generate;
    RUN(matmul_candidates_replay_from_their_records);
    RUN(dense_gelu_candidates_of_two_sketches_replay_from_their_records);
    clear_spy();
    unlink(log_path);
    rmdir(dir);
    return check_summary();
}
