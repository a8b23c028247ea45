/* kernels/targets/cpu/cpu_target.c: the "cpu" target. Generated C is compiled by
 * the system compiler into a shared object (many builds at once, one compiler
 * process each, no shell), and measured by tunetop-worker in "cpu" mode. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "kernels/target.h"
#include "kernels/targets/cpu/abi.h"
#include "kernels/targets/runner.h"
#include "kernels/worker/mode.h"

extern char **environ;

/* ---- probe --------------------------------------------------------------- */

static void cpu_model(char *out, size_t n) {
    snprintf(out, n, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t len = strcspn(v, "\n");
        while (len > 0 && v[len - 1] == ' ')
            len--;
        if (len > 0) snprintf(out, n, "%.*s", (int)len, v);
        break;
    }
    fclose(f);
}

static int cpu_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c > 0) return c;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

static Status cpu_probe(DeviceInfo *out, char *err) {
    memset(out, 0, sizeof *out);
    const char *isa = "SSE";
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        out->vector_floats = 16;
        isa = "AVX-512";
        snprintf(out->arch, sizeof out->arch, "x86_64-avx512");
    } else if (__builtin_cpu_supports("avx2")) {
        out->vector_floats = 8;
        isa = "AVX2";
        snprintf(out->arch, sizeof out->arch, "x86_64-avx2");
    } else {
        out->vector_floats = 4;
        snprintf(out->arch, sizeof out->arch, "x86_64-sse");
    }
#elif defined(__aarch64__)
    out->vector_floats = 4;
    isa = "NEON";
    snprintf(out->arch, sizeof out->arch, "aarch64-neon");
#else
    out->vector_floats = 4;
    isa = "scalar";
    snprintf(out->arch, sizeof out->arch, "generic");
#endif
    out->cores = cpu_cores();
    char model[96];
    cpu_model(model, sizeof model);
    snprintf(out->name, sizeof out->name, "%s (%d cores, %s)", model, out->cores, isa);
    out->present = true;
    return TT_OK;
}

/* ---- build --------------------------------------------------------------- */

#define LOG_CAP (64 * 1024) /* compiler output kept in BuildResult.msg */

static Status write_file(const char *path, const char *text, char *err) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return tt_fail(err, "cannot create %s: %s", path, strerror(errno));
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t w = write(fd, text, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            tt_fail(err, "cannot write %s: %s", path, strerror(errno));
            close(fd);
            return TT_ERR;
        }
        text += w;
        n -= (size_t)w;
    }
    if (close(fd) != 0) return tt_fail(err, "cannot write %s: %s", path, strerror(errno));
    return TT_OK;
}

/* argv for: cc TT_CPU_CFLAGS -pipe -Wl,-z,defs -o so c -lm. Returns the count;
 * words point into `flags`. -z defs makes a reference to a function that does
 * not exist a link error here (COMPILE_HOST, in the builder pool) instead of
 * a dlopen failure in the worker; -pipe spares the temporary files. */
static int compiler_argv(char *flags, const char *so, const char *c, char **argv, int cap) {
    int n = 0;
    argv[n++] = "cc";
    for (char *save = NULL, *w = strtok_r(flags, " ", &save); w && n < cap - 8; w = strtok_r(NULL, " ", &save))
        argv[n++] = w;
    argv[n++] = "-pipe";
    argv[n++] = "-Wl,-z,defs";
    argv[n++] = "-o";
    argv[n++] = (char *)so;
    argv[n++] = (char *)c;
    argv[n++] = "-lm";
    argv[n] = NULL;
    return n;
}

/* Kills the compiler and everything it started (cc1, as, ld share its group). */
static void kill_group(pid_t pid) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
}

static void set_msg(BuildResult *out, const char *msg) {
    free(out->msg);
    out->msg = msg && *msg ? strdup(msg) : NULL;
}

static void cpu_build(const KernelSource *src, const DeviceInfo *dev, const MeasureOptions *opt, const char *workdir,
                      uint64_t tag, BuildResult *out) {
    double t0 = clock_mono();
    double timeout = opt && opt->build_timeout_s > 0 ? opt->build_timeout_s : 15.0;
    double deadline = t0 + timeout;
    char c_path[512], so_path[512], err[TT_ERRLEN];
    out->error_no = ERR_NO_ERROR;
    out->path[0] = '\0';
    snprintf(c_path, sizeof c_path, "%s/k%" PRIu64 ".c", workdir, tag);
    int k = snprintf(so_path, sizeof so_path, "%s/k%" PRIu64 ".so", workdir, tag);
    if (k < 0 || (size_t)k >= sizeof out->path) {
        out->error_no = ERR_UNKNOWN;
        set_msg(out, "work directory path is too long");
        goto done;
    }
    if (!src || !src->source) {
        out->error_no = ERR_UNKNOWN;
        set_msg(out, "no source to build");
        goto done;
    }
    if (write_file(c_path, src->source, err) != TT_OK) {
        out->error_no = ERR_UNKNOWN;
        set_msg(out, err);
        goto done;
    }

    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        out->error_no = ERR_UNKNOWN;
        snprintf(err, sizeof err, "cannot create a pipe for the compiler: %s", strerror(errno));
        set_msg(out, err);
        goto done;
    }
    char flags[] = TT_CPU_CFLAGS;
    char *argv[48];
    compiler_argv(flags, so_path, c_path, argv, 48);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGCHLD);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &defaults);
    posix_spawnattr_setpgroup(&at, 0); /* own group: a timeout kills cc1/as/ld too */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, "cc", &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(pfd[1]);
    if (rc != 0) {
        close(pfd[0]);
        out->error_no = ERR_COMPILE_HOST;
        snprintf(err, sizeof err, "cannot run the C compiler cc: %s", strerror(rc));
        set_msg(out, err);
        goto done;
    }

    StrBuf log;
    StrBuf_init(&log);
    bool timed_out = false;
    char buf[4096];
    for (;;) {
        double left = deadline - clock_mono();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int pr = poll(&p, 1, left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) break;
        if (pr == 0) continue;
        ssize_t r = read(pfd[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break; /* EOF: every process of the compiler closed its output */
        if (log.len < LOG_CAP) StrBuf_appendn(&log, buf, (size_t)r);
    }
    close(pfd[0]);

    int status = 0;
    while (!timed_out) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) break;
        if (clock_mono() >= deadline) {
            timed_out = true;
            break;
        }
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
    if (timed_out) {
        kill_group(pid);
        out->error_no = ERR_BUILD_TIMEOUT;
        StrBuf m;
        StrBuf_init(&m);
        StrBuf_printf(&m, "compile took longer than %.3g s; compiler killed", timeout);
        if (log.len) StrBuf_printf(&m, "\n%s", log.data);
        set_msg(out, m.data);
        StrBuf_done(&m);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && access(so_path, R_OK) == 0) {
        out->error_no = ERR_NO_ERROR;
        memcpy(out->path, so_path, strlen(so_path) + 1); /* length checked above */
        set_msg(out, log.len ? log.data : NULL);
    } else {
        out->error_no = ERR_COMPILE_HOST;
        StrBuf m;
        StrBuf_init(&m);
        if (log.len)
            StrBuf_append(&m, log.data);
        else if (WIFSIGNALED(status))
            StrBuf_printf(&m, "cc killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
            StrBuf_printf(&m, "cc exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        set_msg(out, m.data);
        StrBuf_done(&m);
    }
    StrBuf_done(&log);
    if (out->error_no != ERR_NO_ERROR) unlink(so_path); /* a killed linker may leave a partial file */

done:
    /* The source is gone after the build, failed or not: the compiler's
     * message quotes the offending lines, and the template can regenerate it. */
    unlink(c_path);
    out->build_s = clock_mono() - t0;
}

/* ---- runner -------------------------------------------------------------- */

static Runner *cpu_runner_new(const DeviceInfo *dev, char *err) { return Runner_new("cpu", err); }

static Status cpu_runner_set_task(Runner *r, const Workload *wl, char *err) { return Runner_setTask(r, wl, err); }

static void cpu_measure(Runner *r, const KernelSource *src, const BuildResult *built, const MeasureOptions *opt,
                        MeasureResult *out) {
    char err[TT_ERRLEN], threads[16];
    snprintf(threads, sizeof threads, "%d", opt->threads > 0 ? opt->threads : cpu_cores());
    if (Runner_setEnv(r, "OMP_NUM_THREADS", threads, err) != TT_OK) {
        out->error_no = ERR_UNKNOWN;
        free(out->msg);
        out->msg = strdup(err);
        return;
    }
    KernelSource entry = *src;
    if (!entry.entry[0]) snprintf(entry.entry, sizeof entry.entry, "%s", TT_CPU_ENTRY);
    Runner_measure(r, &entry, built, opt, NULL, out);
}

extern const WorkerMode worker_mode_cpu; /* worker_cpu.c */

const Target target_cpu = {
    .name = "cpu",
    .family = FAMILY_CPU,
    .dialect = DIALECT_C,
    .probe = cpu_probe,
    .offline_info = NULL,
    .build = cpu_build,
    .runner_new = cpu_runner_new,
    .runner_set_task = cpu_runner_set_task,
    .measure = cpu_measure,
    .runner_delete = Runner_delete,
    .worker = &worker_mode_cpu,
};
