/* kernels/workerproc.h: the measurement worker process, shared by every target.
 *
 * Kernels are loaded, run and timed in `tunetop-worker`, a small separate
 * executable (kernels/worker/), so that a crash or a hang kills the worker and
 * never the session. The session side (a Runner) owns one WorkerProc; this
 * module spawns the worker with posix_spawn (never a bare fork of the
 * multi-threaded session), talks to it over a socketpair (a full-duplex pipe
 * that lets us send with MSG_NOSIGNAL, so a dead worker is an error and not a
 * SIGPIPE for the session), waits for replies with poll and a timeout, kills
 * and reaps a hung worker, and respawns it lazily on the next request.
 *
 * The worker runs in its own process group with SIGINT blocked (the session
 * handles Ctrl-C; a kernel in flight must not die from it), stdin and stdout
 * on /dev/null (a kernel that prints cannot corrupt the protocol or the
 * terminal), stderr to a log file chosen by the runner (truncated at each
 * start; its last line is quoted when the worker dies).
 *
 * Protocol: every message is a WorkerMsgHeader followed by `len` payload
 * bytes, both in host order (the worker is built from the same tree on the
 * same machine). Requests and their replies:
 *   WMSG_SET_TASK  payload: the path of a task file (no NUL) -> WMSG_REPLY
 *   WMSG_MEASURE   payload: WorkerMeasureReq, then optional source bytes -> WMSG_REPLY
 *   WMSG_PING      no payload -> WMSG_REPLY (error_no 0); for overhead figures
 *   WMSG_QUIT      no payload, no reply; the worker exits
 *   WMSG_REPLY     payload: WorkerReply, then the message bytes (no NUL), if any
 *
 * Task file: the inputs and the reference output of one task, computed once in
 * the session (WorkerTask_write) and mmapped read-only by the worker
 * (WorkerTask_map), so a restarted worker gets them back without recomputing
 * the reference. Inputs are read-only in the worker: a kernel that writes into
 * its inputs crashes there (RUNTIME_DEVICE) instead of corrupting later runs.
 *
 * Modes: the worker's first argument names a mode ("cpu", "cuda", "opencl").
 * A mode is a WorkerMode (below) defined in kernels/worker/worker_<mode>.c;
 * worker_main.c owns the message loop, the task file, and dispatches
 * WMSG_MEASURE to the mode's measure function.
 */
#ifndef TT_KERNELS_WORKERPROC_H
#define TT_KERNELS_WORKERPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/status.h"
#include "kernels/target.h"
#include "kernels/workload.h"

/* ---- protocol ------------------------------------------------------------ */

#define WORKER_MAGIC 0x54545731u /* "TTW1" */
#define WORKER_MAX_PAYLOAD (64u << 20)
#define WORKER_MSG_LEN 2048 /* longest message a reply carries (truncated beyond) */

typedef enum {
    WMSG_SET_TASK = 1,
    WMSG_MEASURE = 2,
    WMSG_PING = 3,
    WMSG_QUIT = 4,
    WMSG_REPLY = 5,
} WorkerMsgType;

typedef struct WorkerMsgHeader {
    uint32_t magic; /* WORKER_MAGIC */
    uint32_t type;  /* WorkerMsgType */
    uint32_t len;   /* payload bytes that follow */
} WorkerMsgHeader;

/* One measurement request. The artifact is a file (shared object for cpu,
 * cubin for cuda, program binary or nothing for opencl); a target that needs
 * the source text in the worker appends it after the struct. */
typedef struct WorkerMeasureReq {
    int32_t number;        /* runs per repeat (>= 1) */
    int32_t repeat;        /* repeats, 1..MEASURE_MAX_COSTS */
    int32_t min_repeat_ms; /* raise number until one repeat lasts this long */
    int32_t check_correctness;
    double slow_cutoff_s;  /* stop after the first repeat when a run is slower (0 = off) */
    int64_t grid[3], block[3]; /* GPU launch geometry (from KernelSource) */
    int64_t shared_bytes;
    char entry[64]; /* kernel / entry name */
    char path[256]; /* artifact on disk ("" if none) */
} WorkerMeasureReq;

typedef struct WorkerReply {
    int32_t error_no; /* MeasureErrorNo */
    int32_t n_costs;
    int32_t number; /* runs per repeat actually used (after min_repeat_ms raised it) */
    int32_t reserved;
    double costs[MEASURE_MAX_COSTS]; /* seconds per run, one per repeat */
    double pack_s;
    double busy_s; /* time the worker spent on the request */
} WorkerReply;

/* Low-level framing, used by both sides. Blocking, retried on EINTR; sends use
 * MSG_NOSIGNAL. Return TT_ERR with a sentence on EOF ("connection closed") or
 * error. WorkerMsg_read allocates *payload (NUL-terminated for convenience,
 * caller frees; NULL when len is 0). */
Status WorkerMsg_write(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen, char *err);
Status WorkerMsg_read(int fd, WorkerMsgHeader *h, char **payload, char *err);

/* ---- task file ----------------------------------------------------------- */

/* Session side: fills the inputs (seed fixed per workload), computes the
 * reference output and writes both to `path` (replaced atomically). */
Status WorkerTask_write(const Workload *wl, const char *path, char *err);

/* Worker side: a mapped task. args[0 .. nargs-2] point into the read-only
 * mapping; args[nargs-1] is a private, 64-byte aligned output buffer that the
 * task owns; ref is the reference output (read-only). */
typedef struct WorkerTask {
    Workload wl;
    int nargs;
    size_t counts[WORKLOAD_MAX_ARGS]; /* elements per argument */
    float *args[WORKLOAD_MAX_ARGS];
    const float *ref;
    void *map;
    size_t map_len;
} WorkerTask;

Status WorkerTask_map(WorkerTask *this, const char *path, char *err); /* this is zeroed on failure */
void WorkerTask_unmap(WorkerTask *this);                              /* safe on a zeroed task */

/* ---- worker side: modes -------------------------------------------------- */

typedef struct WorkerMode {
    const char *name; /* "cpu", "cuda", "opencl" */
    /* Once at worker start (load a runtime, create a context). May be NULL.
     * A failure makes every measure reply RUNTIME_DEVICE with this sentence. */
    Status (*init)(char *err);
    /* Loads, runs, checks and times one kernel. `task` is NULL when no task
     * was set (the mode replies UNKNOWN_ERROR). source/source_len: the bytes
     * after the request (may be 0). Writes error message into msg (msg_cap
     * bytes, "" when none). */
    void (*measure)(const WorkerTask *task, const WorkerMeasureReq *req, const char *source, size_t source_len,
                    WorkerReply *rep, char *msg, size_t msg_cap);
    void (*done)(void); /* may be NULL */
} WorkerMode;

/* Defined in kernels/worker/worker_<mode>.c (the worker executable only);
 * worker_main.c refers to them weakly, so a mode not written yet is reported
 * as "mode not built" rather than breaking the link. */
extern const WorkerMode worker_mode_cpu, worker_mode_cuda, worker_mode_opencl;

/* Timing helper shared by the modes: runs `run(ctx)`
 * `number` times per repeat, raising number until one repeat lasts at least
 * min_repeat_ms, then `repeat` repeats; costs are seconds per run. `timer`
 * may be NULL (monotonic clock around the loop); a GPU mode passes a timer
 * that returns the device time of `n` runs. Fills rep->costs, n_costs, number. */
typedef double (*WorkerTimerFn)(void *ctx, int n);
void WorkerMode_time(void (*run)(void *ctx), WorkerTimerFn timer, void *ctx, const WorkerMeasureReq *req,
                     WorkerReply *rep);

/* ---- session side: the process ------------------------------------------- */

#define WORKER_MAX_ENV 8

typedef struct WorkerProc {
    char exe[512];
    char mode[16];
    char log_path[512];            /* worker stderr ("" = /dev/null) */
    char env[WORKER_MAX_ENV][128]; /* "NAME=value" overrides */
    int n_env;
    pid_t pid;           /* 0 when not running */
    int fd;              /* session end of the socketpair, -1 when not running */
    unsigned spawns;     /* how many times the worker was started */
    char task_path[512]; /* current task file ("" none) */
    bool task_sent;      /* the running worker has mapped task_path */
} WorkerProc;

/* Locates tunetop-worker: next to the running executable (/proc/self/exe),
 * else TT_WORKER_BUILD_PATH (compile definition), else $TUNETOP_WORKER. */
Status WorkerProc_findExe(char *out, size_t n, char *err);

/* Does not start anything (the worker starts on the first request). exe from
 * WorkerProc_findExe; mode "cpu", "cuda", "opencl"; log_path may be NULL. */
void WorkerProc_init(WorkerProc *this, const char *exe, const char *mode, const char *log_path);
/* Asks the worker to quit, kills it if it does not, reaps it. */
void WorkerProc_done(WorkerProc *this);

/* Sets NAME=value in the worker's environment; when it changes, a running
 * worker is stopped (the next request starts one with the new value). */
Status WorkerProc_setEnv(WorkerProc *this, const char *name, const char *value, char *err);
/* The task file the next measurements use; sent to the worker before the
 * next measure, and again after every restart. path is copied. */
void WorkerProc_setTask(WorkerProc *this, const char *path);

Status WorkerProc_start(WorkerProc *this, char *err); /* no-op when running */
void WorkerProc_kill(WorkerProc *this);               /* SIGKILL to its group, reap */

typedef enum {
    WORKER_OK = 0,  /* reply received */
    WORKER_TIMEOUT, /* no reply in time: the worker was killed and reaped */
    WORKER_DIED,    /* the worker died (msg: "worker killed by signal 11 (Segmentation fault)", then
                     * "; its last output: ..." when it wrote to its log) */
    WORKER_FAILED,  /* could not start or talk to it (msg says why) */
} WorkerCallStatus;

/* Sends one request and waits up to timeout_s for its reply (starting the
 * worker first if needed). On WORKER_OK, *rep and rep_msg (the reply's
 * message, "" when none) are filled. On any other status the worker is dead
 * and reaped, and rep_msg holds the reason. rep_msg holds msg_cap bytes. */
WorkerCallStatus WorkerProc_call(WorkerProc *this, uint32_t type, const void *a, size_t alen, const void *b,
                                 size_t blen, double timeout_s, WorkerReply *rep, char *rep_msg, size_t msg_cap);

/* The whole measurement of one kernel, for a Runner: starts the worker if
 * needed, sends the task if the worker does not have it, sends the request
 * and waits up to run_timeout_s from now. Maps the outcome to out: the
 * worker's reply; a hang -> RUN_TIMEOUT; a death -> RUNTIME_DEVICE with the
 * signal; no task set or no worker -> UNKNOWN_ERROR. Sets out->run_s. */
void WorkerProc_measure(WorkerProc *this, const WorkerMeasureReq *req, const char *source, size_t source_len,
                        double run_timeout_s, MeasureResult *out);

/* Fills a request from the options and the built kernel (number >= 1,
 * repeat clamped to 1..MEASURE_MAX_COSTS). */
void WorkerMeasureReq_fill(WorkerMeasureReq *this, const MeasureOptions *opt, const KernelSource *src,
                           const BuildResult *built);

#endif
