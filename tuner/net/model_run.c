/* tuner/net/model_run.c: `run --model` as a library call (see model_run.h). */
#include "tuner/net/model_run.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/strbuf.h"
#include "tuner/net/exec.h"
#include "tuner/net/model_load.h"
#include "tuner/net/modelfile.h"
#include "tuner/net/mprog.h"
#include "tuner/net/npy.h"
#include "tuner/net/onnx_read.h"
#include "tuner/net/passes.h"

#define BUILD_TIMEOUT_S 600
#define RUN_TIMEOUT_S 1800

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs argv in dir with stdout and stderr into log; TT_ERR when it does not
 * exit 0 within timeout_s (the message carries the log's last line). */
static Status run_child(char *const *argv, const char *dir, const char *log, int threads, int timeout_s, char *err) {
    pid_t pid = fork();
    if (pid < 0) return tt_fail(err, "cannot start %s: %s", argv[0], strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || chdir(dir) != 0) _exit(127);
        dup2(fd, 1);
        dup2(fd, 2);
        if (threads > 0) {
            char t[16];
            snprintf(t, sizeof t, "%d", threads);
            setenv("OMP_NUM_THREADS", t, 1);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    double end = now_s() + timeout_s;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return tt_fail(err, "lost %s: %s", argv[0], strerror(errno));
        if (now_s() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return tt_fail(err, "%s did not finish within %d s", argv[0], timeout_s);
        }
        usleep(20000);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return TT_OK;
    char last[256] = "", line[256];
    FILE *f = fopen(log, "r");
    while (f && fgets(line, sizeof line, f))
        if (line[0] != '\n') snprintf(last, sizeof last, "%s", line);
    if (f) fclose(f);
    last[strcspn(last, "\n")] = '\0';
    if (WIFSIGNALED(status))
        return tt_fail(err, "%s was killed by signal %d%s%s", argv[0], WTERMSIG(status), last[0] ? ": " : "", last);
    return tt_fail(err, "%s failed (exit %d)%s%s", argv[0], WEXITSTATUS(status), last[0] ? ": " : "", last);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* The file given for graph input `name` ("NAME=FILE"), or NULL. */
static const char *input_file(const ModelRunRequest *req, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < req->n_inputs; i++)
        if (!strncmp(req->inputs[i], name, n) && req->inputs[i][n] == '=') return req->inputs[i] + n + 1;
    return NULL;
}

static Status check_input_names(const ModelRunRequest *req, const NetModel *m, char *err) {
    for (int i = 0; i < req->n_inputs; i++) {
        const char *eq = strchr(req->inputs[i], '=');
        if (!eq) return tt_fail(err, "--input %s: give NAME=FILE", req->inputs[i]);
        bool found = false;
        for (int j = 0; j < m->n_inputs && !found; j++) {
            const char *name = m->values[m->inputs[j]].name;
            found = strlen(name) == (size_t)(eq - req->inputs[i]) && !strncmp(name, req->inputs[i], strlen(name));
        }
        if (!found)
            return tt_fail(err, "--input %.*s: the model has no input of that name", (int)(eq - req->inputs[i]),
                           req->inputs[i]);
    }
    return TT_OK;
}

/* Random data for an input: floats in [-1, 1), integers in [0, 16) (valid
 * token ids and masks), bools 0/1. */
static void fill_random(NdTensor *t, uint64_t seed) {
    Rng r;
    Rng_seed(&r, seed);
    for (int64_t i = 0; i < t->count; i++) {
        double u = Rng_uniform(&r);
        NdTensor_set(t, i, NdType_isFloat(t->type) ? 2 * u - 1 : t->type == ND_BOOL ? u < 0.5 : floor(16 * u));
    }
}

static Status load_input(const ModelRunRequest *req, const NetValue *v, int i, NdTensor *t, char *err) {
    const char *file = input_file(req, v->name);
    char shape[128], want[128];
    if (!file) {
        if (NdTensor_alloc(t, v->type, &v->shape, err) != TT_OK) return tt_fail(err, "input '%s': %s", v->name, err);
        fill_random(t, req->seed + (uint64_t)i);
        return TT_OK;
    }
    size_t n = strlen(file);
    char name[256];
    Status st = n > 3 && !strcmp(file + n - 3, ".pb") ? Onnx_readTensor(file, t, name, sizeof name, err)
                                                      : Npy_read(file, t, err);
    if (st != TT_OK) return TT_ERR;
    NdShape_str(&t->shape, shape, sizeof shape);
    NdShape_str(&v->shape, want, sizeof want);
    if (t->type != v->type || !NdShape_equal(&t->shape, &v->shape)) {
        Status r = tt_fail(err, "input '%s': %s holds %s %s; the model takes %s %s", v->name, file,
                           NdType_name(t->type), shape, NdType_name(v->type), want);
        NdTensor_free(t);
        return r;
    }
    return TT_OK;
}

static Status write_raw(const char *path, const NdTensor *t, char *err) {
    FILE *f = fopen(path, "wb");
    size_t n = (size_t)t->count * NdType_size(t->type);
    bool ok = f && (n == 0 || fwrite(t->data, 1, n, f) == n);
    if (f && fclose(f) != 0) ok = false;
    return ok ? TT_OK : tt_fail(err, "cannot write %s", path);
}

static Status read_raw(const char *path, NdTensor *t, char *err) {
    FILE *f = fopen(path, "rb");
    size_t n = (size_t)t->count * NdType_size(t->type);
    bool ok = f && (n == 0 || fread(t->data, 1, n, f) == n);
    if (f) fclose(f);
    return ok ? TT_OK : tt_fail(err, "the program wrote no complete %s", path);
}

/* The program's Makefile: the kernels, NAME.c and main.c, linked with the
 * runtime tunetop was built with (libtunetop_modelrt.a), or with the
 * runtime's sources the library carries when that archive is not found. */
static char *makefile(const char *runtime_lib) {
    StrBuf sb;
    StrBuf_init(&sb);
    StrBuf_append(&sb, "# the program of `tunetop run --model`: the exported library and main.c\n"
                       "CFLAGS = -std=gnu11 -O3 -march=native -fopenmp -w -I.\n");
    if (runtime_lib)
        StrBuf_printf(&sb, "SRCS = $(wildcard *.c)\nLIBS = %s\n", runtime_lib);
    else
        StrBuf_append(&sb, "SRCS = $(wildcard *.c base/*.c tuner/net/*.c tuner/net/ops/*.c)\nLIBS =\n");
    StrBuf_append(&sb, "prog: $(SRCS:.c=.o)\n\t$(CC) -fopenmp -o $@ $^ $(LIBS) -lm\n");
    char *r = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return r;
}

/* libtunetop_modelrt.a beside the running tunetop, else where the build put it, else NULL. */
static const char *runtime_lib(char *buf, size_t n) {
    ssize_t len = readlink("/proc/self/exe", buf, n - 32);
    if (len > 0) {
        buf[len] = '\0';
        char *slash = strrchr(buf, '/');
        if (slash) {
            snprintf(slash, 32, "/libtunetop_modelrt.a");
            if (access(buf, R_OK) == 0) return buf;
        }
    }
#ifdef TT_MODELRT_BUILD_PATH
    snprintf(buf, n, "%s", TT_MODELRT_BUILD_PATH);
    if (access(buf, R_OK) == 0) return buf;
#endif
    return NULL;
}

static Status write_text(const char *dir, const char *name, const char *text, char *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = false;
    return ok ? TT_OK : tt_fail(err, "cannot write %s", path);
}

/* Loads the model again, rewrites its kernel nodes and builds the program in dir/lib. */
static Status build_program(const ModelRunRequest *req, const char *dir, ModelRunResult *res, char *err) {
    NetModel prog;
    NetModel_init(&prog);
    if (Model_load(req->model_path, req->input_shapes, req->n_input_shapes, &prog, err) != TT_OK) return TT_ERR;
    Status st = ModelTasks_build(&prog, 0, &res->tasks, err);
    if (st == TT_OK) st = ModelTasks_rewrite(&prog, &res->tasks, err);
    if (st == TT_OK) st = NetPass_fuseElementwise(&prog, NULL, err);
    ExportBundle b;
    ExportBundle_init(&b, "net", DIALECT_C, req->dev);
    res->build = calloc((size_t)res->tasks.n_tasks + 1, sizeof *res->build);
    if (st == TT_OK) st = ModelBuild_bundle(&prog, &res->tasks, req->history, req->dev, "net", &b, res->build, err);
    char path[2048], log[4096];
    snprintf(path, sizeof path, "%s/lib", dir);
    if (st == TT_OK) st = ExportBundle_write(&b, path, true, err);
    char *driver = st == TT_OK ? ModelProg_driver("net") : NULL;
    if (st == TT_OK) st = write_text(path, "main.c", driver, err);
    char lib[4096];
    char *mk = makefile(runtime_lib(lib, sizeof lib));
    if (st == TT_OK) st = write_text(path, "Makefile", mk, err);
    free(mk);
    snprintf(log, sizeof log, "%s/model.ttnet", dir);
    if (st == TT_OK) st = ModelFile_write(&prog, log, err);
    res->node_task = malloc(sizeof *res->node_task * (size_t)(prog.n_nodes + 1));
    res->n_prog_nodes = prog.n_nodes;
    for (int i = 0; i < prog.n_nodes; i++)
        res->node_task[i] = strcmp(prog.nodes[i].op, "Kernel") ? -1 : (int)NetNode_attrInt(&prog.nodes[i], "task", -1);
    free(driver);
    ExportBundle_done(&b);
    NetModel_done(&prog);
    if (st != TT_OK) return TT_ERR;
    char jobs[16];
    snprintf(jobs, sizeof jobs, "-j%ld", sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1);
    char *argv[] = {"make", "-s", jobs, "prog", NULL};
    snprintf(log, sizeof log, "%s/build.log", dir);
    double t0 = now_s();
    st = run_child(argv, path, log, 0, BUILD_TIMEOUT_S, err);
    res->compile_s = now_s() - t0;
    return st;
}

/* max |got - want| / max |want| (NaN where want is NaN agrees; exact for integers). */
static double rel_error(const NdTensor *got, const NdTensor *want) {
    if (got->count != want->count || got->type != want->type) return INFINITY;
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < want->count; i++) {
        double w = NdTensor_get(want, i);
        if (isfinite(w) && fabs(w) > scale) scale = fabs(w);
    }
    for (int64_t i = 0; i < want->count; i++) {
        double g = NdTensor_get(got, i), w = NdTensor_get(want, i);
        if (isnan(w) || isnan(g)) {
            if (isnan(w) != isnan(g)) return INFINITY;
        } else if (isinf(w) || isinf(g)) {
            if (g != w) return INFINITY;
        } else if (fabs(g - w) > worst)
            worst = fabs(g - w);
    }
    if (!NdType_isFloat(want->type)) return worst > 0 ? INFINITY : 0;
    return worst / (scale > 0 ? scale : 1);
}

/* Reads the "run_ms T", "handoffs N B" and "node_ms I T OP X" lines of the program's output. */
static Status parse_times(const char *path, int repeat, ModelRunResult *res, char *err) {
    FILE *f = fopen(path, "r");
    if (!f) return tt_fail(err, "the program printed no timings");
    res->run_ms = calloc((size_t)repeat + 1, sizeof *res->run_ms);
    char line[256];
    while (fgets(line, sizeof line, f)) {
        double t, x = 0;
        int i;
        char op[32];
        if (sscanf(line, "run_ms %lf", &t) == 1 && res->n_runs < repeat)
            res->run_ms[res->n_runs++] = t;
        else if (sscanf(line, "handoffs %d %d", &i, &res->borrowed) >= 1)
            res->handoffs = i;
        else if (sscanf(line, "node_ms %d %lf %31s %lf", &i, &t, op, &x) == 4 && i == res->n_nodes) {
            res->nodes = realloc(res->nodes, sizeof *res->nodes * (size_t)(res->n_nodes + 1));
            snprintf(res->nodes[res->n_nodes].op, sizeof res->nodes[0].op, "%s", op);
            res->nodes[res->n_nodes].task = i < res->n_prog_nodes && !strcmp(op, "Kernel") ? res->node_task[i] : -1;
            res->nodes[res->n_nodes].xform_ms = x;
            res->nodes[res->n_nodes++].ms = t;
        }
    }
    fclose(f);
    return res->n_runs == repeat ? TT_OK : tt_fail(err, "the program printed %d of %d timings", res->n_runs, repeat);
}

static Status write_outputs(const ModelRunRequest *req, const NetModel *m, const NdTensor *got, char *err) {
    if (!req->output_dir) return TT_OK;
    if (mkdir(req->output_dir, 0755) != 0 && errno != EEXIST)
        return tt_fail(err, "cannot create %s: %s", req->output_dir, strerror(errno));
    for (int o = 0; o < m->n_outputs; o++) {
        char path[4096], name[256];
        snprintf(name, sizeof name, "%s", m->values[m->outputs[o]].name);
        for (char *c = name; *c; c++) /* an output named like a path ("/head/Gemm_output_0") stays in the folder */
            if (*c == '/' || (c == name && *c == '.')) *c = '_';
        snprintf(path, sizeof path, "%s/%s.npy", req->output_dir, name);
        if (Npy_write(path, &got[o], err) != TT_OK) return TT_ERR;
    }
    return TT_OK;
}

/* Runs the built program on the inputs in dir and compares with the reference. */
static Status run_and_check(const ModelRunRequest *req, const char *dir, NdTensor *in, ModelRunResult *res, char *err) {
    const NetModel *m = &res->model;
    char *argv[MODEL_MAX_IO + 8], bufs[MODEL_MAX_IO + 6][4096];
    int a = 0;
    snprintf(bufs[a], sizeof bufs[0], "%s/lib/prog", dir), argv[a] = bufs[a], a++;
    snprintf(bufs[a], sizeof bufs[0], "%s/model.ttnet", dir), argv[a] = bufs[a], a++;
    for (int i = 0; i < m->n_inputs; i++, a++)
        snprintf(bufs[a], sizeof bufs[0], "%s/in_%d.bin", dir, i), argv[a] = bufs[a];
    snprintf(bufs[a], sizeof bufs[0], "%s", dir), argv[a] = bufs[a], a++;
    snprintf(bufs[a], sizeof bufs[0], "%d", req->repeat), argv[a] = bufs[a], a++;
    snprintf(bufs[a], sizeof bufs[0], "%d", req->profile ? 1 : 0), argv[a] = bufs[a], a++;
    argv[a] = NULL;
    char log[4096];
    snprintf(log, sizeof log, "%s/run.log", dir);
    if (run_child(argv, dir, log, req->threads, RUN_TIMEOUT_S, err) != TT_OK) return TT_ERR;
    NdTensor want[MODEL_MAX_IO], got[MODEL_MAX_IO];
    memset(want, 0, sizeof want);
    memset(got, 0, sizeof got);
    Status st = NetExec_run(m, in, m->n_inputs, want, err);
    res->matches = st == TT_OK;
    for (int o = 0; st == TT_OK && o < m->n_outputs; o++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/out_%d.bin", dir, o);
        st = NdTensor_alloc(&got[o], want[o].type, &want[o].shape, err);
        if (st == TT_OK) st = read_raw(path, &got[o], err);
        double e = st == TT_OK ? rel_error(&got[o], &want[o]) : INFINITY;
        if (e > res->max_err || o == 0) res->max_err = e, res->worst_output = o;
        if (!(e <= req->rtol)) res->matches = false;
    }
    if (st == TT_OK) st = write_outputs(req, m, got, err);
    if (st == TT_OK) st = parse_times(log, req->repeat, res, err);
    for (int o = 0; o < m->n_outputs; o++)
        NdTensor_free(&want[o]), NdTensor_free(&got[o]);
    return st;
}

Status ModelRun_run(const ModelRunRequest *req, ModelRunResult *res, char *err) {
    memset(res, 0, sizeof *res);
    NetModel_init(&res->model);
    if (Model_load(req->model_path, req->input_shapes, req->n_input_shapes, &res->model, err) != TT_OK) return TT_ERR;
    const NetModel *m = &res->model;
    if (m->n_inputs > MODEL_MAX_IO || m->n_outputs > MODEL_MAX_IO)
        return tt_fail(err, "the model has %d inputs and %d outputs; run takes at most %d of each", m->n_inputs,
                       m->n_outputs, MODEL_MAX_IO);
    if (check_input_names(req, m, err) != TT_OK) return TT_ERR;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", req->keep_dir ? req->keep_dir : "/tmp/tunetop-model-XXXXXX");
    if (req->keep_dir ? (mkdir(dir, 0755) != 0 && errno != EEXIST) : !mkdtemp(dir))
        return tt_fail(err, "cannot create %s: %s", dir, strerror(errno));
    NdTensor in[MODEL_MAX_IO];
    memset(in, 0, sizeof in);
    Status st = TT_OK;
    for (int i = 0; st == TT_OK && i < m->n_inputs; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/in_%d.bin", dir, i);
        st = load_input(req, &m->values[m->inputs[i]], i, &in[i], err);
        if (st == TT_OK) st = write_raw(path, &in[i], err);
    }
    if (st == TT_OK) st = build_program(req, dir, res, err);
    if (st == TT_OK) st = run_and_check(req, dir, in, res, err);
    for (int i = 0; i < m->n_inputs; i++)
        NdTensor_free(&in[i]);
    if (!req->keep_dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return st;
}

void ModelRunResult_done(ModelRunResult *res) {
    NetModel_done(&res->model);
    ModelTasks_done(&res->tasks);
    free(res->build);
    free(res->run_ms);
    free(res->nodes);
    free(res->node_task);
    memset(res, 0, sizeof *res);
}
