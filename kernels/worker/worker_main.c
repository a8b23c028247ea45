/* kernels/worker/worker_main.c: tunetop-worker, the measurement worker.
 *
 * Usage: tunetop-worker TARGET   (a target's name: its worker mode), started by
 * kernels/worker/proc.c with the protocol connection on fd 3. It serves
 * requests one at a time until WMSG_QUIT or until the session goes away (EOF).
 * A kernel that crashes or hangs takes this process down, which is the point:
 * the session sees the death or the timeout and starts a fresh worker. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "base/clock.h"
#include "kernels/target.h"
#include "kernels/worker/mode.h"
#include "kernels/worker/reaper.h"

#define PROTOCOL_FD 3

/* Crash signals end the process with that signal even when a sanitizer
 * runtime would otherwise turn them into exit(1): the session reports "killed
 * by signal 11", whatever build the worker is. */
static void die_by_signal(int sig) { raise(sig); }

static void install_crash_handlers(void) {
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = die_by_signal;
        sa.sa_flags = (int)SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* The mode of the target the argument names (kernels/registry.c). */
static const WorkerMode *find_mode(const char *name) {
    const Target *t = Target_find(name);
    return t ? t->worker : NULL;
}

static int reply(int fd, const WorkerReply *rep, const char *msg) {
    char err[TT_ERRLEN];
    size_t n = msg ? strlen(msg) : 0; /* always NUL-terminated here */
    if (n > WORKER_MSG_LEN) n = WORKER_MSG_LEN;
    return WorkerMsg_write(fd, WMSG_REPLY, rep, sizeof *rep, msg, n, err) == TT_OK ? 0 : -1;
}

static int reply_error(int fd, int error_no, const char *msg) {
    WorkerReply rep;
    memset(&rep, 0, sizeof rep);
    rep.error_no = error_no;
    return reply(fd, &rep, msg);
}

int main(int argc, char **argv) {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT); /* Ctrl-C belongs to the session */
    sigprocmask(SIG_BLOCK, &block, NULL);
    install_crash_handlers();
    /* A worker must not outlive the session (a hung kernel would spin on).
     * The signal fires when the spawning thread ends; the runner's thread
     * spawns it and outlives it, and a worker killed early is restarted. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* what a kernel starts (even after fork and setsid) comes back to the
     * worker, which kills it after each request */
    Reaper_become();
    const char *parent = getenv("TT_WORKER_PARENT");
    if (parent && atol(parent) != (long)getppid()) return 0; /* the session is already gone */

    if (argc != 2 || fcntl(PROTOCOL_FD, F_GETFD) < 0) {
        fprintf(stderr, "usage: tunetop-worker TARGET (%s; started by tunetop with its connection on fd %d)\n",
                Target_names(), PROTOCOL_FD);
        return 2;
    }
    const WorkerMode *mode = find_mode(argv[1]);
    char init_err[TT_ERRLEN] = "";
    bool init_ok = false;
    if (!mode)
        snprintf(init_err, sizeof init_err, "no target \"%s\" with a worker mode in tunetop-worker", argv[1]);
    else if (!mode->init || mode->init(init_err) == TT_OK)
        init_ok = true;

    int fd = PROTOCOL_FD;
    WorkerTask task;
    bool have_task = false;
    memset(&task, 0, sizeof task);
    char *msg = malloc(WORKER_MSG_LEN);
    if (!msg) return 3;

    for (;;) {
        WorkerMsgHeader h;
        char *payload = NULL;
        char err[TT_ERRLEN];
        if (WorkerMsg_read(fd, &h, &payload, err) != TT_OK) break; /* session gone */
        double t0 = clock_mono();
        int rc = 0;
        if (h.type == WMSG_QUIT) {
            free(payload);
            break;
        } else if (h.type == WMSG_PING) {
            rc = reply_error(fd, ERR_NO_ERROR, NULL);
        } else if (h.type == WMSG_SET_TASK) {
            if (have_task) WorkerTask_unmap(&task);
            have_task = WorkerTask_map(&task, payload ? payload : "", err) == TT_OK;
            if (have_task && init_ok && mode->warm_inputs) WorkerTask_warm(&task, WORKER_WARM_S);
            rc = reply_error(fd, have_task ? ERR_NO_ERROR : ERR_UNKNOWN, have_task ? NULL : err);
        } else if (h.type == WMSG_MEASURE && h.len >= sizeof(WorkerMeasureReq)) {
            WorkerMeasureReq req;
            memcpy(&req, payload, sizeof req);
            req.entry[sizeof req.entry - 1] = '\0';
            req.path[sizeof req.path - 1] = '\0';
            WorkerReply rep;
            memset(&rep, 0, sizeof rep);
            msg[0] = '\0';
            if (!init_ok) {
                rep.error_no = ERR_RUNTIME_DEVICE;
                snprintf(msg, WORKER_MSG_LEN, "%s", init_err);
            } else {
                mode->measure(have_task ? &task : NULL, &req, payload + sizeof req, h.len - sizeof req, &rep, msg,
                              WORKER_MSG_LEN);
            }
            Reaper_killLeftovers();
            rep.busy_s = clock_mono() - t0;
            rc = reply(fd, &rep, msg);
        } else {
            snprintf(err, sizeof err, "unknown request type %u (%u bytes)", h.type, h.len);
            rc = reply_error(fd, ERR_UNKNOWN, err);
        }
        free(payload);
        if (rc != 0) break;
    }
    if (init_ok && mode->done) mode->done();
    Reaper_killLeftovers();
    if (have_task) WorkerTask_unmap(&task);
    free(msg);
    return 0;
}
