/* kernels/workerproc.c: spawning and talking to the measurement worker, the
 * message framing, the task file, and the timing loop the worker modes share. */
#include "kernels/workerproc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

extern char **environ;

/* ---- framing ------------------------------------------------------------- */

/* Sends all bytes; MSG_NOSIGNAL so a dead peer is EPIPE, not a signal. */
static Status send_all(int fd, const void *buf, size_t n, char *err) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return tt_fail(err, "worker connection: send failed: %s", strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
    return TT_OK;
}

Status WorkerMsg_write(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen, char *err) {
    if (alen + blen > WORKER_MAX_PAYLOAD) return tt_fail(err, "worker message of %zu bytes is too long", alen + blen);
    WorkerMsgHeader h = {WORKER_MAGIC, type, (uint32_t)(alen + blen)};
    if (send_all(fd, &h, sizeof h, err) != TT_OK) return TT_ERR;
    if (alen && send_all(fd, a, alen, err) != TT_OK) return TT_ERR;
    if (blen && send_all(fd, b, blen, err) != TT_OK) return TT_ERR;
    return TT_OK;
}

enum { RD_OK = 0, RD_EOF, RD_ERR, RD_TIMEOUT };

/* Reads exactly n bytes before `deadline` (clock_mono seconds; < 0 = wait forever). */
static int recv_all(int fd, void *buf, size_t n, double deadline) {
    char *p = buf;
    while (n > 0) {
        if (deadline >= 0) {
            double left = deadline - clock_mono();
            if (left <= 0) return RD_TIMEOUT;
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int ms = left > 1e6 ? 1000000000 : (int)ceil(left * 1000.0);
            int pr = poll(&pfd, 1, ms);
            if (pr < 0) {
                if (errno == EINTR) continue;
                return RD_ERR;
            }
            if (pr == 0) continue; /* re-checks the deadline */
        }
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return errno == ECONNRESET ? RD_EOF : RD_ERR;
        }
        if (r == 0) return RD_EOF;
        p += r;
        n -= (size_t)r;
    }
    return RD_OK;
}

static int read_msg(int fd, WorkerMsgHeader *h, char **payload, double deadline, char *err) {
    *payload = NULL;
    int rc = recv_all(fd, h, sizeof *h, deadline);
    if (rc != RD_OK) {
        if (rc == RD_EOF)
            tt_fail(err, "connection closed");
        else if (rc == RD_ERR)
            tt_fail(err, "worker connection: receive failed: %s", strerror(errno));
        return rc;
    }
    if (h->magic != WORKER_MAGIC || h->len > WORKER_MAX_PAYLOAD) {
        tt_fail(err, "worker protocol error: bad header (magic %08x, length %u)", h->magic, h->len);
        return RD_ERR;
    }
    char *p = malloc((size_t)h->len + 1);
    if (!p) {
        tt_fail(err, "out of memory for a worker message of %u bytes", h->len);
        return RD_ERR;
    }
    rc = recv_all(fd, p, h->len, deadline);
    if (rc != RD_OK) {
        free(p);
        if (rc == RD_EOF)
            tt_fail(err, "connection closed");
        else if (rc == RD_ERR)
            tt_fail(err, "worker connection: receive failed: %s", strerror(errno));
        return rc;
    }
    p[h->len] = '\0';
    *payload = p;
    return RD_OK;
}

Status WorkerMsg_read(int fd, WorkerMsgHeader *h, char **payload, char *err) {
    return read_msg(fd, h, payload, -1, err) == RD_OK ? TT_OK : TT_ERR;
}

/* ---- task file ----------------------------------------------------------- */

#define TASK_MAGIC 0x54544b31u /* "TTK1" */
#define TASK_SEED 0x7475u
#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

/* Offsets are from the start of the file; slot nargs-1 is the reference. */
typedef struct TaskFileHeader {
    uint32_t magic;
    uint32_t workload_size;
    Workload wl;
    int32_t nargs;
    uint64_t counts[WORKLOAD_MAX_ARGS];
    uint64_t offsets[WORKLOAD_MAX_ARGS];
    uint64_t total;
} TaskFileHeader;

static Status write_all(int fd, const void *buf, size_t n, const char *path, char *err) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return tt_fail(err, "cannot write task file %s: %s", path, strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
    return TT_OK;
}

Status WorkerTask_write(const Workload *wl, const char *path, char *err) {
    ArgInfo info[WORKLOAD_MAX_ARGS];
    int nargs = Workload_args(wl, info);
    if (nargs < 2 || nargs > WORKLOAD_MAX_ARGS) return tt_fail(err, "workload has %d arguments", nargs);

    TaskFileHeader h;
    memset(&h, 0, sizeof h);
    h.magic = TASK_MAGIC;
    h.workload_size = sizeof(Workload);
    h.wl = *wl;
    h.nargs = nargs;
    size_t off = ALIGN64(sizeof h);
    for (int i = 0; i < nargs; i++) {
        h.counts[i] = info[i].count;
        h.offsets[i] = off;
        off = ALIGN64(off + info[i].count * sizeof(float));
    }
    h.total = off;

    float *args[WORKLOAD_MAX_ARGS] = {0};
    Status st = TT_ERR;
    int fd = -1;
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    for (int i = 0; i < nargs; i++) {
        args[i] = aligned_alloc(64, ALIGN64(info[i].count * sizeof(float)));
        if (!args[i]) {
            tt_fail(err, "out of memory for %s (%zu floats)", info[i].name, info[i].count);
            goto out;
        }
    }
    Workload_fillInputs(wl, args, TASK_SEED);
    Workload_reference(wl, args);

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        tt_fail(err, "cannot create task file %s: %s", tmp, strerror(errno));
        goto out;
    }
    static const char zeros[64];
    if (write_all(fd, &h, sizeof h, tmp, err) != TT_OK) goto out;
    size_t at = sizeof h;
    for (int i = 0; i < nargs; i++) {
        if (write_all(fd, zeros, h.offsets[i] - at, tmp, err) != TT_OK) goto out;
        if (write_all(fd, args[i], h.counts[i] * sizeof(float), tmp, err) != TT_OK) goto out;
        at = h.offsets[i] + h.counts[i] * sizeof(float);
    }
    if (write_all(fd, zeros, h.total - at, tmp, err) != TT_OK) goto out;
    if (close(fd) != 0) {
        fd = -1;
        tt_fail(err, "cannot write task file %s: %s", tmp, strerror(errno));
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        tt_fail(err, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        goto out;
    }
    st = TT_OK;
out:
    if (fd >= 0) close(fd);
    if (st != TT_OK) unlink(tmp);
    for (int i = 0; i < nargs; i++)
        free(args[i]);
    return st;
}

Status WorkerTask_map(WorkerTask *this, const char *path, char *err) {
    memset(this, 0, sizeof *this);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return tt_fail(err, "cannot open task file %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < sizeof(TaskFileHeader)) {
        close(fd);
        return tt_fail(err, "task file %s is truncated", path);
    }
    size_t len = (size_t)sb.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return tt_fail(err, "cannot map task file %s: %s", path, strerror(errno));

    const TaskFileHeader *h = map;
    if (h->magic != TASK_MAGIC || h->workload_size != sizeof(Workload) || h->nargs < 2 ||
        h->nargs > WORKLOAD_MAX_ARGS || h->total != len) {
        munmap(map, len);
        return tt_fail(err, "task file %s is not from this build of tunetop", path);
    }
    for (int i = 0; i < h->nargs; i++) {
        if (h->offsets[i] % 64 || h->offsets[i] + h->counts[i] * sizeof(float) > len) {
            munmap(map, len);
            return tt_fail(err, "task file %s: argument %d lies outside the file", path, i);
        }
    }
    this->wl = h->wl;
    this->nargs = h->nargs;
    int last = h->nargs - 1;
    for (int i = 0; i < h->nargs; i++) {
        this->counts[i] = h->counts[i];
        if (i < last) this->args[i] = (float *)((char *)map + h->offsets[i]);
    }
    this->ref = (const float *)((const char *)map + h->offsets[last]);
    this->args[last] = aligned_alloc(64, ALIGN64(h->counts[last] * sizeof(float)));
    if (!this->args[last]) {
        munmap(map, len);
        memset(this, 0, sizeof *this);
        return tt_fail(err, "out of memory for the output (%zu floats)", (size_t)h->counts[last]);
    }
    this->map = map;
    this->map_len = len;
    return TT_OK;
}

void WorkerTask_unmap(WorkerTask *this) {
    if (this->nargs > 0) free(this->args[this->nargs - 1]);
    if (this->map) munmap(this->map, this->map_len);
    memset(this, 0, sizeof *this);
}

/* ---- timing -------------------------------------------------------------- */

static double time_runs(void (*run)(void *), WorkerTimerFn timer, void *ctx, int n) {
    if (timer) return timer(ctx, n);
    double t0 = clock_mono();
    for (int i = 0; i < n; i++)
        run(ctx);
    return clock_mono() - t0;
}

void WorkerMode_time(void (*run)(void *ctx), WorkerTimerFn timer, void *ctx, const WorkerMeasureReq *req,
                     WorkerReply *rep) {
    int number = req->number > 0 ? req->number : 1;
    int repeat = req->repeat < 1 ? 1 : req->repeat > MEASURE_MAX_COSTS ? MEASURE_MAX_COSTS : req->repeat;
    double min_s = req->min_repeat_ms > 0 ? req->min_repeat_ms * 1e-3 : 0;
    /* Calibration for min_repeat_ms: these runs are not reported. */
    while (min_s > 0) {
        double t = time_runs(run, timer, ctx, number);
        if (t >= min_s || number >= INT_MAX / 4) break;
        double per = t > 0 ? t / number : 1e-9;
        double want = ceil(min_s * 1.2 / per);
        int next = want > (double)(INT_MAX / 4) ? INT_MAX / 4 : (int)want;
        number = next > number ? next : number * 2;
    }
    rep->n_costs = 0;
    for (int r = 0; r < repeat; r++) {
        rep->costs[r] = time_runs(run, timer, ctx, number) / number;
        rep->n_costs++;
        if (req->slow_cutoff_s > 0 && rep->costs[r] > req->slow_cutoff_s) break; /* far slower than the best */
    }
    rep->number = number;
}

/* ---- session side -------------------------------------------------------- */

Status WorkerProc_findExe(char *out, size_t n, char *err) {
    char self[PATH_MAX - 32];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    char tried[3][PATH_MAX];
    int ntried = 0;
    if (len > 0) {
        self[len] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(tried[ntried], PATH_MAX, "%s/tunetop-worker", self);
            if (access(tried[ntried], X_OK) == 0) goto found;
            ntried++;
        }
    }
#ifdef TT_WORKER_BUILD_PATH
    snprintf(tried[ntried], PATH_MAX, "%s", TT_WORKER_BUILD_PATH);
    if (access(tried[ntried], X_OK) == 0) goto found;
    ntried++;
#endif
    const char *env = getenv("TUNETOP_WORKER");
    if (env && *env) {
        snprintf(tried[ntried], PATH_MAX, "%s", env);
        if (access(tried[ntried], X_OK) == 0) goto found;
        ntried++;
    }
    {
        char list[3 * PATH_MAX + 16] = "";
        for (int i = 0; i < ntried; i++) {
            if (i) strcat(list, ", ");
            strncat(list, tried[i], PATH_MAX);
        }
        return tt_fail(err, "measurement worker tunetop-worker not found (tried %s%s); build it or set TUNETOP_WORKER",
                       ntried ? list : "nothing", env && *env ? "" : "; TUNETOP_WORKER is not set");
    }
found:
    if (strlen(tried[ntried]) >= n) return tt_fail(err, "worker path %s is too long", tried[ntried]);
    strcpy(out, tried[ntried]);
    return TT_OK;
}

void WorkerProc_init(WorkerProc *this, const char *exe, const char *mode, const char *log_path) {
    memset(this, 0, sizeof *this);
    snprintf(this->exe, sizeof this->exe, "%s", exe);
    snprintf(this->mode, sizeof this->mode, "%s", mode);
    if (log_path) snprintf(this->log_path, sizeof this->log_path, "%s", log_path);
    this->fd = -1;
}

/* Waits up to `secs` for the worker to exit; returns true and fills *status when reaped. */
static bool reap_within(pid_t pid, double secs, int *status) {
    double end = clock_mono() + secs;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return true;
        if (r < 0 && errno != EINTR) {
            *status = 0; /* not our child any more (reaped elsewhere): treat as gone */
            return true;
        }
        if (clock_mono() >= end) return false;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void close_conn(WorkerProc *this) {
    if (this->fd >= 0) close(this->fd);
    this->fd = -1;
    this->pid = 0;
    this->task_sent = false;
}

void WorkerProc_kill(WorkerProc *this) {
    if (this->pid > 0) {
        kill(-this->pid, SIGKILL); /* its group: anything it started goes too */
        kill(this->pid, SIGKILL);
        int st;
        while (waitpid(this->pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    close_conn(this);
}

void WorkerProc_done(WorkerProc *this) {
    if (this->pid > 0) {
        char err[TT_ERRLEN];
        int st;
        if (WorkerMsg_write(this->fd, WMSG_QUIT, NULL, 0, NULL, 0, err) == TT_OK && reap_within(this->pid, 2.0, &st))
            close_conn(this);
        else
            WorkerProc_kill(this);
    }
    close_conn(this);
}

Status WorkerProc_setEnv(WorkerProc *this, const char *name, const char *value, char *err) {
    char entry[128];
    int k = snprintf(entry, sizeof entry, "%s=%s", name, value);
    if (k < 0 || (size_t)k >= sizeof entry) return tt_fail(err, "environment entry %s is too long", name);
    size_t nl = strlen(name);
    int slot = this->n_env;
    for (int i = 0; i < this->n_env; i++) {
        if (strncmp(this->env[i], name, nl) == 0 && this->env[i][nl] == '=') {
            if (strcmp(this->env[i], entry) == 0) return TT_OK;
            slot = i;
            break;
        }
    }
    if (slot == WORKER_MAX_ENV) return tt_fail(err, "too many worker environment overrides (%d)", WORKER_MAX_ENV);
    strcpy(this->env[slot], entry);
    if (slot == this->n_env) this->n_env++;
    if (this->pid > 0) WorkerProc_done(this); /* the new value needs a new process */
    return TT_OK;
}

void WorkerProc_setTask(WorkerProc *this, const char *path) {
    if (strcmp(this->task_path, path ? path : "") == 0) return;
    snprintf(this->task_path, sizeof this->task_path, "%s", path ? path : "");
    this->task_sent = false;
}

/* environ with our overrides replacing entries of the same name. Caller frees
 * the array (not the strings). */
static char **build_env(const WorkerProc *this, const char *parent) {
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **envp = calloc(n + (size_t)this->n_env + 2, sizeof *envp);
    if (!envp) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool overridden = strncmp(environ[i], "TT_WORKER_PARENT=", 17) == 0;
        for (int j = 0; j < this->n_env && !overridden; j++) {
            size_t nl = (size_t)(strchr(this->env[j], '=') - this->env[j]);
            overridden = strncmp(environ[i], this->env[j], nl) == 0 && environ[i][nl] == '=';
        }
        if (!overridden) envp[k++] = environ[i];
    }
    for (int j = 0; j < this->n_env; j++)
        envp[k++] = (char *)this->env[j];
    envp[k++] = (char *)parent;
    envp[k] = NULL;
    return envp;
}

#define WORKER_FD 3 /* the worker's end of the socketpair, by convention */

Status WorkerProc_start(WorkerProc *this, char *err) {
    if (this->pid > 0) return TT_OK;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return tt_fail(err, "cannot create the worker connection: %s", strerror(errno));
    /* dup2 onto the same number would keep close-on-exec set: move it away first. */
    if (sv[1] == WORKER_FD) {
        int moved = fcntl(sv[1], F_DUPFD_CLOEXEC, WORKER_FD + 1);
        close(sv[1]);
        sv[1] = moved;
        if (moved < 0) {
            close(sv[0]);
            return tt_fail(err, "cannot create the worker connection: %s", strerror(errno));
        }
    }

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, sv[1], WORKER_FD);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, this->log_path[0] ? this->log_path : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644); /* this worker's output only */

    sigset_t mask, defaults;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT); /* Ctrl-C belongs to the session */
    sigemptyset(&defaults);
    int defsigs[] = {SIGPIPE, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGHUP, SIGCHLD, SIGALRM};
    for (size_t i = 0; i < sizeof defsigs / sizeof defsigs[0]; i++)
        sigaddset(&defaults, defsigs[i]);
    posix_spawnattr_setsigmask(&at, &mask);
    posix_spawnattr_setsigdefault(&at, &defaults);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    char *argv[] = {this->exe, this->mode, NULL};
    /* The worker checks that its parent is still this process (see worker_main.c). */
    char parent[48];
    snprintf(parent, sizeof parent, "TT_WORKER_PARENT=%ld", (long)getpid());
    char **envp = build_env(this, parent);
    pid_t pid = 0;
    int rc = envp ? posix_spawn(&pid, this->exe, &fa, &at, argv, envp) : ENOMEM;
    free(envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        return tt_fail(err, "cannot start the measurement worker %s: %s", this->exe, strerror(rc));
    }
    this->pid = pid;
    this->fd = sv[0];
    this->spawns++;
    this->task_sent = false;
    return TT_OK;
}

/* The last non-empty line the worker wrote to its log (an assertion, a
 * sanitizer report, a message of the kernel), which often says why it died. */
static bool log_last_line(const char *path, char *out, size_t n) {
    if (!path[0]) return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[1024];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
    ssize_t r = size > 0 ? pread(fd, buf, (size_t)(size - from), from) : 0;
    close(fd);
    if (r <= 0) return false;
    buf[r] = '\0';
    while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' ' || buf[r - 1] == '\r'))
        buf[--r] = '\0';
    if (r == 0) return false;
    char *line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    size_t len = strlen(line);
    if (len >= n) len = n - 1;
    memcpy(out, line, len);
    out[len] = '\0';
    return true;
}

/* After EOF or a send error: the worker is dying; reap it and say how it ended. */
static void reap_dead(WorkerProc *this, char *msg, size_t cap) {
    int st = 0;
    pid_t pid = this->pid;
    if (!reap_within(pid, 2.0, &st)) {
        WorkerProc_kill(this);
        snprintf(msg, cap, "worker closed its connection and did not exit; killed");
        return;
    }
    close_conn(this);
    int k;
    if (WIFSIGNALED(st))
        k = snprintf(msg, cap, "worker killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (WIFEXITED(st))
        k = snprintf(msg, cap, "worker exited with status %d", WEXITSTATUS(st));
    else
        k = snprintf(msg, cap, "worker ended (wait status %d)", st);
    char last[300];
    if (k > 0 && (size_t)k < cap && log_last_line(this->log_path, last, sizeof last))
        snprintf(msg + k, cap - (size_t)k, "; its last output: %s", last);
}

WorkerCallStatus WorkerProc_call(WorkerProc *this, uint32_t type, const void *a, size_t alen, const void *b,
                                 size_t blen, double timeout_s, WorkerReply *rep, char *rep_msg, size_t msg_cap) {
    char err[TT_ERRLEN];
    double deadline = clock_mono() + (timeout_s > 0 ? timeout_s : 0);
    memset(rep, 0, sizeof *rep);
    if (msg_cap) rep_msg[0] = '\0';
    if (WorkerProc_start(this, err) != TT_OK) {
        snprintf(rep_msg, msg_cap, "%s", err);
        return WORKER_FAILED;
    }
    if (WorkerMsg_write(this->fd, type, a, alen, b, blen, err) != TT_OK) {
        reap_dead(this, rep_msg, msg_cap);
        return WORKER_DIED;
    }
    WorkerMsgHeader h;
    char *payload = NULL;
    int rc = read_msg(this->fd, &h, &payload, deadline, err);
    if (rc == RD_TIMEOUT) {
        WorkerProc_kill(this);
        snprintf(rep_msg, msg_cap, "no reply from the worker within %.3g s; worker killed", timeout_s);
        return WORKER_TIMEOUT;
    }
    if (rc == RD_EOF) {
        reap_dead(this, rep_msg, msg_cap);
        return WORKER_DIED;
    }
    if (rc != RD_OK || h.type != WMSG_REPLY || h.len < sizeof(WorkerReply)) {
        free(payload);
        WorkerProc_kill(this);
        if (rc == RD_OK)
            snprintf(rep_msg, msg_cap, "worker protocol error: unexpected reply (type %u, %u bytes)", h.type, h.len);
        else
            snprintf(rep_msg, msg_cap, "%s", err);
        return WORKER_FAILED;
    }
    memcpy(rep, payload, sizeof *rep);
    if (msg_cap) snprintf(rep_msg, msg_cap, "%.*s", (int)(h.len - sizeof *rep), payload + sizeof *rep);
    free(payload);
    return WORKER_OK;
}

static void set_msg(MeasureResult *out, const char *msg) {
    free(out->msg);
    out->msg = msg && *msg ? strdup(msg) : NULL;
}

void WorkerProc_measure(WorkerProc *this, const WorkerMeasureReq *req, const char *source, size_t source_len,
                        double run_timeout_s, MeasureResult *out) {
    double t0 = clock_mono();
    char msg[WORKER_MSG_LEN];
    WorkerReply rep;
    out->n_costs = 0;
    out->pack_s = 0;
    if (!this->task_path[0]) {
        out->error_no = ERR_UNKNOWN;
        set_msg(out, "no task set on the runner");
        out->run_s = clock_mono() - t0;
        return;
    }
    WorkerCallStatus cs = WORKER_OK;
    if (this->pid <= 0 || !this->task_sent) {
        cs = WorkerProc_call(this, WMSG_SET_TASK, this->task_path, strlen(this->task_path), NULL, 0, run_timeout_s,
                             &rep, msg, sizeof msg);
        if (cs == WORKER_OK && rep.error_no != ERR_NO_ERROR) {
            out->error_no = ERR_UNKNOWN;
            set_msg(out, msg);
            out->run_s = clock_mono() - t0;
            return;
        }
        if (cs == WORKER_OK) this->task_sent = true;
    }
    if (cs == WORKER_OK) {
        double left = run_timeout_s - (clock_mono() - t0);
        cs = WorkerProc_call(this, WMSG_MEASURE, req, sizeof *req, source, source_len, left > 0 ? left : 1e-3, &rep,
                             msg, sizeof msg);
    }
    switch (cs) {
    case WORKER_OK:
        out->error_no = rep.error_no;
        out->n_costs = rep.n_costs < 0 ? 0 : rep.n_costs > MEASURE_MAX_COSTS ? MEASURE_MAX_COSTS : rep.n_costs;
        memcpy(out->costs, rep.costs, sizeof out->costs);
        out->pack_s = rep.pack_s;
        set_msg(out, msg);
        break;
    case WORKER_TIMEOUT:
        out->error_no = ERR_RUN_TIMEOUT;
        snprintf(msg, sizeof msg, "kernel did not finish within %.3g s; worker killed", run_timeout_s);
        set_msg(out, msg);
        break;
    case WORKER_DIED:
        out->error_no = ERR_RUNTIME_DEVICE;
        set_msg(out, msg);
        break;
    default:
        out->error_no = ERR_UNKNOWN;
        set_msg(out, msg);
        break;
    }
    out->run_s = clock_mono() - t0;
}

void WorkerMeasureReq_fill(WorkerMeasureReq *this, const MeasureOptions *opt, const KernelSource *src,
                           const BuildResult *built) {
    memset(this, 0, sizeof *this);
    this->number = opt->number > 0 ? opt->number : 1;
    this->repeat = opt->repeat < 1 ? 1 : opt->repeat > MEASURE_MAX_COSTS ? MEASURE_MAX_COSTS : opt->repeat;
    this->min_repeat_ms = opt->min_repeat_ms > 0 ? opt->min_repeat_ms : 0;
    this->check_correctness = opt->check_correctness ? 1 : 0;
    this->slow_cutoff_s = opt->slow_cutoff_s > 0 ? opt->slow_cutoff_s : 0;
    if (src) {
        for (int i = 0; i < 3; i++) {
            this->grid[i] = src->grid[i];
            this->block[i] = src->block[i];
        }
        this->shared_bytes = src->shared_bytes;
        snprintf(this->entry, sizeof this->entry, "%s", src->entry);
    }
    if (built) snprintf(this->path, sizeof this->path, "%s", built->path);
}
