/* kernels/worker/proc.c: spawning, calling, killing and reaping the
 * measurement worker (see proc.h). */
#include "kernels/worker/proc.h"

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
    WorkerReadStatus rc = WorkerMsg_readUntil(this->fd, &h, &payload, deadline, err);
    if (rc == WORKER_READ_TIMEOUT) {
        WorkerProc_kill(this);
        snprintf(rep_msg, msg_cap, "no reply from the worker within %.3g s; worker killed", timeout_s);
        return WORKER_TIMEOUT;
    }
    if (rc == WORKER_READ_EOF) {
        reap_dead(this, rep_msg, msg_cap);
        return WORKER_DIED;
    }
    if (rc != WORKER_READ_OK || h.type != WMSG_REPLY || h.len < sizeof(WorkerReply)) {
        free(payload);
        WorkerProc_kill(this);
        if (rc == WORKER_READ_OK)
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
            out->machine_fault = true; /* the task file, not the candidate: it is the same for every candidate */
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
        /* SIGKILL is never a kernel's own doing (a crash is SIGSEGV, SIGBUS, SIGFPE, an abort SIGABRT; the
         * timeout's kill is WORKER_TIMEOUT): someone or something outside killed the worker */
        out->machine_fault = strstr(msg, "worker killed by signal 9 ") != NULL;
        set_msg(out, msg);
        break;
    default: /* the worker could not be started or talked to (fork, pipes, memory) */
        out->error_no = ERR_UNKNOWN;
        out->machine_fault = true;
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
