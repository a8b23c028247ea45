/* tests/unit/test_onnx_conformance.c: ONNX's backend test suite (Debian's
 * libonnx-testdata) through tunetop's reader, binder, shape inference and
 * reference executor.
 *
 * Every test_* folder of node, pytorch-converted, pytorch-operator and simple
 * (real ships no models) runs in a forked child with a 20 s limit:
 *   passed   every output of every test_data_set_N matches (numpy's allclose
 *            with rtol 1e-3, atol 1e-7, NaN equal to NaN; integers and bools
 *            exactly; same type and shape)
 *   refused  read, bind or shape inference said no, in one line (printed)
 *   failed   a wrong answer or an error at run time, also after the graph
 *            passes (Identity removal, constant and batch-norm folding) and
 *            after fusing elementwise chains (the program's pass)
 *   crash    the child died or ran out of time
 * A table by op follows (a node test's op is its one node's op type; other
 * tests go by folder), and every test's outcome goes to
 * $TT_BINARY_DIR/onnx_conformance.txt.
 *
 * The test fails on any crash, and when a test listed in
 * tests/data/onnx_expected_pass.txt does not pass. The list is rewritten from
 * a run with --write-expected FILE. --only TEXT runs the tests whose name
 * contains TEXT; TT_JOBS sets how many run at once (2; 0 runs them in this
 * process, for LeakSanitizer or a debugger). Without the test data
 * it skips (77), unless TUNETOP_REQUIRE contains "onnx". */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onnx/onnx.pb-c.h"
#include "tuner/net/exec.h"
#include "tuner/net/netfile.h"
#include "tuner/net/onnx_read.h"
#include "tuner/net/passes.h"

#define TIMEOUT_MS 20000
#define MAX_IO 64

static const char *const SUITES[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};

typedef enum { PASSED, REFUSED, FAILED, CRASHED, N_OUTCOMES } Outcome;
static const char *const OUTCOME_NAMES[] = {"passed", "refused", "failed", "crash"};

typedef struct Case {
    char name[160]; /* "node/test_abs" */
    char op[96];
    Outcome outcome;
    char message[TT_ERRLEN];
} Case;

/* snprintf that tells whether the text fitted (paths here are short; a
 * longer one is cut, and then fails to open with its name in the message). */
__attribute__((format(printf, 3, 4))) static bool fmt(char *buf, size_t n, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int w = vsnprintf(buf, n, f, ap);
    va_end(ap);
    return w >= 0 && (size_t)w < n;
}

/* ---- the child: one test ---- */

/* The op a test is counted under: a node test's single node, else its folder. */
static void test_op(const char *suite, const char *folder, const char *model, char *op, size_t n) {
    fmt(op, n, "%s", strcmp(suite, "node") ? folder : "(multi-node)");
    void *data;
    size_t len;
    if (strcmp(suite, "node") || NetFile_read(model, ONNX_MAX_MODEL_BYTES, &data, &len, NULL) != TT_OK) return;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (mp && mp->graph && mp->graph->n_node == 1 && mp->graph->node[0]->op_type)
        fmt(op, n, "%s", mp->graph->node[0]->op_type);
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    free(data);
}

static bool close_enough(double got, double want) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs(got - want) <= 1e-7 + 1e-3 * fabs(want);
}

static Status compare(const NdTensor *got, const NdTensor *want, char *why) {
    char a[128], b[128];
    NdShape_str(&got->shape, a, sizeof a);
    NdShape_str(&want->shape, b, sizeof b);
    if (got->type != want->type)
        return tt_fail(why, "is %s %s, expected %s %s", NdType_name(got->type), a, NdType_name(want->type), b);
    if (!NdShape_equal(&got->shape, &want->shape)) return tt_fail(why, "has shape %s, expected %s", a, b);
    int64_t bad = 0, first = -1;
    bool fl = NdType_isFloat(want->type);
    for (int64_t i = 0; i < want->count; i++) {
        bool ok = fl ? close_enough(NdTensor_get(got, i), NdTensor_get(want, i))
                     : NdTensor_getInt(got, i) == NdTensor_getInt(want, i);
        if (!ok && bad++ == 0) first = i;
    }
    if (bad)
        return tt_fail(why, "%lld of %lld elements differ; element %lld is %.9g, expected %.9g", (long long)bad,
                       (long long)want->count, (long long)first, NdTensor_get(got, first), NdTensor_get(want, first));
    return TT_OK;
}

/* Reads dir/prefix_K.pb for K = 0.. into t; *n set to the count. */
static Status read_tensors(const char *dir, const char *prefix, NdTensor *t, int *n, char *err) {
    *n = 0;
    for (int k = 0; k < MAX_IO; k++) {
        char path[1200];
        fmt(path, sizeof path, "%s/%s_%d.pb", dir, prefix, k);
        if (access(path, F_OK) != 0) return TT_OK;
        memset(&t[k], 0, sizeof t[k]);
        if (Onnx_readTensor(path, &t[k], NULL, 0, err) != TT_OK) return TT_ERR;
        (*n)++;
    }
    return TT_OK;
}

static void free_tensors(NdTensor *t, int n) {
    for (int k = 0; k < n; k++)
        NdTensor_free(&t[k]);
}

/* ONNX's test data stores bfloat16 tensors as uint16 (numpy has no
 * bfloat16): the same bits, taken as the bfloat16 the model declares. */
static void as_bf16(NdTensor *t, NdType declared) {
    if (t->type == ND_U16 && declared == ND_BF16) t->type = ND_BF16;
}

/* One test_data_set: runs the model on its inputs and compares the outputs. */
static Outcome run_set(const NetModel *m, const char *set, char *msg) {
    NdTensor in[MAX_IO], want[MAX_IO], got[MAX_IO];
    int n_in = 0, n_want = 0;
    char why[TT_ERRLEN];
    Outcome o = FAILED;
    memset(got, 0, sizeof got);
    if (read_tensors(set, "input", in, &n_in, msg) != TT_OK || read_tensors(set, "output", want, &n_want, msg) != TT_OK)
        goto done;
    if (n_want != m->n_outputs) {
        tt_fail(msg, "the test data has %d outputs; the model %d", n_want, m->n_outputs);
        goto done;
    }
    for (int k = 0; k < n_in && k < m->n_inputs; k++)
        as_bf16(&in[k], m->values[m->inputs[k]].type);
    for (int k = 0; k < n_want; k++)
        as_bf16(&want[k], m->values[m->outputs[k]].type);
    if (NetExec_run(m, in, n_in, got, msg) != TT_OK) goto done;
    for (int k = 0; k < n_want; k++) {
        const NetValue *v = &m->values[m->outputs[k]];
        char a[128], b[128];
        NdShape_str(&v->shape, a, sizeof a);
        NdShape_str(&got[k].shape, b, sizeof b);
        if (compare(&got[k], &want[k], why) != TT_OK) {
            tt_fail(msg, "output %d ('%s') %s", k, v->name, why);
            goto done;
        }
        if ((v->type != ND_UNDEF && v->type != got[k].type) || (v->shape.rank >= 0 && strcmp(a, b))) {
            tt_fail(msg, "output %d ('%s') was inferred as %s %s, but is %s %s", k, v->name, NdType_name(v->type), a,
                    NdType_name(got[k].type), b);
            goto done;
        }
    }
    o = PASSED;
done:
    free_tensors(in, n_in), free_tensors(want, n_want), free_tensors(got, m->n_outputs);
    return o;
}

/* The graph inputs take the first data set's shapes, for shape inference. */
static Outcome prepare(NetModel *m, const char *dir, char *msg) {
    char set[1100];
    NdTensor in[MAX_IO];
    int n = 0;
    fmt(set, sizeof set, "%s/test_data_set_0", dir);
    if (read_tensors(set, "input", in, &n, msg) != TT_OK) return FAILED;
    Outcome o = PASSED;
    if (n != m->n_inputs) o = FAILED, tt_fail(msg, "the test data has %d inputs; the model takes %d", n, m->n_inputs);
    for (int k = 0; o == PASSED && k < n; k++) {
        NetValue *v = &m->values[m->inputs[k]];
        bool fits = v->shape.rank < 0 || v->shape.rank == in[k].shape.rank;
        for (int d = 0; fits && v->shape.rank > 0 && d < v->shape.rank; d++)
            fits = v->shape.dim[d] < 0 || v->shape.dim[d] == in[k].shape.dim[d];
        if (fits) v->shape = in[k].shape;
    }
    free_tensors(in, n);
    /* an inference that contradicts the model's own declaration is a wrong
     * answer, not a refusal */
    if (o == PASSED && NetPass_inferShapes(m, msg) != TT_OK)
        o = strstr(msg, "but the model declares") ? FAILED : REFUSED;
    return o;
}

/* Every test_data_set_N of the test through m; the first failure in msg. */
static Outcome run_sets(const NetModel *m, const char *dir, const char *when, char *msg) {
    Outcome o = PASSED;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && o == PASSED && (e = readdir(d))) {
        if (strncmp(e->d_name, "test_data_set_", 14)) continue;
        char set[1400];
        fmt(set, sizeof set, "%s/%s", dir, e->d_name);
        char why[TT_ERRLEN];
        if ((o = run_set(m, set, why)) != PASSED) tt_fail(msg, "%s%s: %s", when, e->d_name, why);
    }
    if (d) closedir(d);
    return o;
}

/* The graph passes, then shape inference again: what they leave must compute
 * the same outputs; then the program's elementwise fusion, where it fuses
 * something (the *_expanded tests spell activations out as chains). */
static Outcome run_passes(NetModel *m, const char *dir, char *msg) {
    char why[TT_ERRLEN];
    if (NetPass_removeIdentity(m, NULL, why) != TT_OK || NetPass_foldConstants(m, NULL, why) != TT_OK ||
        NetPass_foldBatchNorm(m, NULL, why) != TT_OK || NetPass_inferShapes(m, why) != TT_OK) {
        tt_fail(msg, "the graph passes: %s", why);
        return FAILED;
    }
    Outcome o = run_sets(m, dir, "after the graph passes, ", msg);
    int fused = 0;
    if (o == PASSED && NetPass_fuseElementwise(m, &fused, why) != TT_OK) {
        tt_fail(msg, "fusing elementwise chains: %s", why);
        return FAILED;
    }
    return o == PASSED && fused ? run_sets(m, dir, "after fusing elementwise chains, ", msg) : o;
}

static Outcome run_test(const char *dir, char *msg) {
    char model[1100];
    fmt(model, sizeof model, "%s/model.onnx", dir);
    NetModel m;
    if (Onnx_read(model, &m, msg) != TT_OK) return REFUSED;
    if (m.n_inputs > MAX_IO || m.n_outputs > MAX_IO) {
        tt_fail(msg, "the model has more than %d inputs or outputs", MAX_IO);
        NetModel_done(&m);
        return FAILED;
    }
    Outcome o = NetModel_bind(&m, msg) == TT_OK ? prepare(&m, dir, msg) : REFUSED;
    if (o == PASSED) o = run_sets(&m, dir, "", msg);
    if (o == PASSED) o = run_passes(&m, dir, msg);
    NetModel_done(&m);
    return o;
}

static void child(const char *dir, int fd) {
    char msg[TT_ERRLEN] = "";
    Outcome o = run_test(dir, msg);
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\t') *p = ' ';
    dprintf(fd, "%d\t%s\n", (int)o, msg);
    close(fd);
    _exit(0);
}

/* ---- the parent: tests in forked children, two at a time ---- */

typedef struct Job {
    pid_t pid;
    int fd;
    Case *c;
    struct timespec start;
    char buf[TT_ERRLEN + 32];
    size_t used;
} Job;

static long elapsed_ms(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static bool start_job(Job *j, Case *c, const char *root) {
    char dir[1100];
    fmt(dir, sizeof dir, "%s/%s", root, c->name);
    int p[2];
    if (pipe(p) != 0) return false;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]), close(p[1]);
        return false;
    }
    if (pid == 0) {
        close(p[0]);
        child(dir, p[1]);
    }
    close(p[1]);
    *j = (Job){.pid = pid, .fd = p[0], .c = c};
    clock_gettime(CLOCK_MONOTONIC, &j->start);
    return true;
}

/* Reads what the child wrote; at its end (or its time's end) sets the outcome. */
static bool finish_job(Job *j, bool timed_out) {
    if (!timed_out) {
        ssize_t r = read(j->fd, j->buf + j->used, sizeof j->buf - 1 - j->used);
        if (r < 0 && errno == EINTR) return false;
        if (r > 0) {
            j->used += (size_t)r;
            if (j->used < sizeof j->buf - 1) return false;
        }
    } else
        kill(j->pid, SIGKILL);
    int status = 0;
    waitpid(j->pid, &status, 0);
    close(j->fd);
    j->buf[j->used] = '\0';
    Case *c = j->c;
    int o = -1;
    char *tab = strchr(j->buf, '\t');
    if (!timed_out && tab && sscanf(j->buf, "%d", &o) == 1 && o >= PASSED && o < CRASHED) {
        c->outcome = (Outcome)o;
        fmt(c->message, sizeof c->message, "%s", tab + 1);
        c->message[strcspn(c->message, "\n")] = '\0';
    } else {
        c->outcome = CRASHED;
        if (timed_out)
            fmt(c->message, sizeof c->message, "timed out after %d s", TIMEOUT_MS / 1000);
        else if (WIFSIGNALED(status))
            fmt(c->message, sizeof c->message, "killed by signal %d (%s)", WTERMSIG(status),
                strsignal(WTERMSIG(status)));
        else
            fmt(c->message, sizeof c->message, "exited with status %d without a result",
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    return true;
}

/* TT_JOBS=0: every test in this process, one after the other (for a
 * debugger or LeakSanitizer; a crash ends the run). */
static void run_inline(Case *cases, int n, const char *root) {
    for (int i = 0; i < n; i++) {
        char dir[1100];
        fmt(dir, sizeof dir, "%s/%s", root, cases[i].name);
        cases[i].outcome = run_test(dir, cases[i].message);
    }
}

static void run_all(Case *cases, int n, const char *root, int jobs) {
    if (jobs == 0) {
        run_inline(cases, n, root);
        return;
    }
    Job job[8];
    int running = 0, next = 0;
    while (next < n || running > 0) {
        while (running < jobs && next < n) {
            Case *c = &cases[next++];
            if (!start_job(&job[running], c, root)) {
                c->outcome = CRASHED;
                fmt(c->message, sizeof c->message, "could not fork: %s", strerror(errno));
                continue;
            }
            running++;
        }
        struct pollfd pf[8];
        for (int i = 0; i < running; i++)
            pf[i] = (struct pollfd){.fd = job[i].fd, .events = POLLIN};
        poll(pf, (nfds_t)running, 200);
        for (int i = running - 1; i >= 0; i--) { /* downwards: a job moved into slot i was seen already */
            bool late = elapsed_ms(&job[i].start) > TIMEOUT_MS;
            if (((pf[i].revents & (POLLIN | POLLHUP | POLLERR)) || late) && finish_job(&job[i], late && !pf[i].revents))
                job[i] = job[--running];
        }
    }
}

/* ---- listing, the expected list, the table ---- */

static int by_name(const void *a, const void *b) { return strcmp(((const Case *)a)->name, ((const Case *)b)->name); }

static Case *list_cases(const char *root, const char *only, int *n) {
    int cap = 2048, count = 0;
    Case *cases = calloc((size_t)cap, sizeof *cases);
    for (size_t s = 0; cases && s < sizeof SUITES / sizeof SUITES[0]; s++) {
        char dir[1100];
        fmt(dir, sizeof dir, "%s/%s", root, SUITES[s]);
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d)) && count < cap) {
            char model[1400];
            fmt(model, sizeof model, "%s/%s/model.onnx", dir, e->d_name);
            Case *c = &cases[count];
            fmt(c->name, sizeof c->name, "%s/%s", SUITES[s], e->d_name);
            if (strncmp(e->d_name, "test_", 5) || access(model, R_OK) != 0 || (only && !strstr(c->name, only)))
                continue;
            test_op(SUITES[s], e->d_name, model, c->op, sizeof c->op);
            count++;
        }
        if (d) closedir(d);
    }
    if (cases) qsort(cases, (size_t)count, sizeof *cases, by_name);
    *n = count;
    return cases;
}

/* The expected list's names, one a line ('#' starts a comment), as one
 * string of "\nname\n" entries for strstr. */
static char *read_expected(const char *path) {
    void *data;
    size_t len;
    if (NetFile_read(path, 1 << 24, &data, &len, NULL) != TT_OK) return NULL;
    char *out = malloc(len + 3), *o = out;
    *o++ = '\n';
    for (char *line = data, *end; line && *line; line = end ? end + 1 : NULL) {
        end = strchr(line, '\n');
        size_t k = end ? (size_t)(end - line) : strlen(line);
        if (k && line[0] != '#') {
            memcpy(o, line, k);
            o += k;
            *o++ = '\n';
        }
    }
    *o = '\0';
    free(data);
    return out;
}

static bool expected(const char *list, const char *name) {
    char key[200];
    fmt(key, sizeof key, "\n%s\n", name);
    return list && strstr(list, key);
}

static int by_op(const void *a, const void *b) {
    int c = strcmp(((const Case *)a)->op, ((const Case *)b)->op);
    return c ? c : by_name(a, b);
}

static void print_table(Case *cases, int n) {
    qsort(cases, (size_t)n, sizeof *cases, by_op);
    int total[N_OUTCOMES] = {0}, row[N_OUTCOMES] = {0};
    printf("\n%-52s %7s %7s %7s %7s\n", "op", "passed", "refused", "failed", "crash");
    for (int i = 0; i < n; i++) {
        row[cases[i].outcome]++;
        total[cases[i].outcome]++;
        if (i + 1 == n || strcmp(cases[i].op, cases[i + 1].op)) {
            printf("%-52s %7d %7d %7d %7d\n", cases[i].op, row[0], row[1], row[2], row[3]);
            memset(row, 0, sizeof row);
        }
    }
    printf("%-52s %7d %7d %7d %7d   (%d tests)\n", "TOTAL", total[0], total[1], total[2], total[3], n);
    qsort(cases, (size_t)n, sizeof *cases, by_name);
}

static void write_outcomes(const Case *cases, int n, const char *path, bool passed_only) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    if (passed_only) fprintf(f, "# ONNX backend tests that pass (test_onnx_conformance --write-expected)\n");
    for (int i = 0; i < n; i++) {
        if (passed_only && cases[i].outcome == PASSED)
            fprintf(f, "%s\n", cases[i].name);
        else if (!passed_only)
            fprintf(f, "%s\t%s\t%s\t%s\n", cases[i].name, OUTCOME_NAMES[cases[i].outcome], cases[i].op,
                    cases[i].message);
    }
    fclose(f);
}

/* The verdict: every crash, and every listed test that does not pass. */
static int verdict(const Case *cases, int n, const char *list) {
    int bad = 0;
    fflush(stdout); /* the table first, then the failures on stderr */
    for (int i = 0; i < n; i++) {
        const Case *c = &cases[i];
        if (c->outcome == CRASHED || (c->outcome != PASSED && expected(list, c->name))) {
            fprintf(stderr, "FAIL %s: %s%s: %s\n", c->name, OUTCOME_NAMES[c->outcome],
                    c->outcome == CRASHED ? "" : " (listed as passing)", c->message);
            bad++;
        }
    }
    printf("%d listed tests regressed or crashed\n", bad);
    return bad ? 1 : 0;
}

static const char *arg_after(int argc, char **argv, const char *flag) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], flag)) return argv[i + 1];
    return NULL;
}

int main(int argc, char **argv) {
    const char *root = getenv("TT_ONNX_TESTDATA") ? getenv("TT_ONNX_TESTDATA") : "/usr/share/libonnx-testdata/data";
    const char *req = getenv("TUNETOP_REQUIRE");
    struct stat st;
    if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("no ONNX test data at %s (Debian's libonnx-testdata, scripts/install-deps.sh)\n", root);
        return req && strstr(req, "onnx") ? 1 : 77;
    }
    const char *data = getenv("TT_TEST_DATA") ? getenv("TT_TEST_DATA") : "tests/data";
    const char *bin = getenv("TT_BINARY_DIR") ? getenv("TT_BINARY_DIR") : ".";
    char list_path[1100], out_path[1100];
    fmt(list_path, sizeof list_path, "%s/onnx_expected_pass.txt", data);
    fmt(out_path, sizeof out_path, "%s/onnx_conformance.txt", bin);
    const char *jobs_env = getenv("TT_JOBS");
    int jobs = jobs_env ? atoi(jobs_env) : 2, n;
    jobs = jobs < 0 ? 1 : jobs > 8 ? 8 : jobs;
    Case *cases = list_cases(root, arg_after(argc, argv, "--only"), &n);
    if (!cases) return 1;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    run_all(cases, n, root, jobs);
    for (int i = 0; i < n; i++)
        if (cases[i].outcome != PASSED)
            printf("%-8s %s [%s]: %s\n", OUTCOME_NAMES[cases[i].outcome], cases[i].name, cases[i].op, cases[i].message);
    print_table(cases, n);
    printf("%d tests in %.1f s; every outcome in %s\n", n, elapsed_ms(&t0) / 1000.0, out_path);
    write_outcomes(cases, n, out_path, false);
    const char *write_list = arg_after(argc, argv, "--write-expected");
    if (write_list) write_outcomes(cases, n, write_list, true);
    char *list = read_expected(list_path);
    if (!list) printf("no list of expected passes at %s: only crashes fail the test\n", list_path);
    int rc = verdict(cases, n, list);
    free(list);
    free(cases);
    return rc;
}
