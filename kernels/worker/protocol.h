/* kernels/worker/protocol.h: the measurement worker process, shared by every target.
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
 * A mode is a WorkerMode (below) defined in kernels/targets/<mode>/worker_<mode>.c;
 * worker_main.c owns the message loop and dispatches WMSG_MEASURE to the
 * mode's measure function.
 *
 * Files: protocol.h + framing.c (messages on the socket), taskfile.h/.c (the
 * task file), timing.h/.c (the timing loop of the modes), mode.h (what a mode
 * implements), proc.h/.c (the session side: spawn, call, kill, reap),
 * worker_main.c (the executable's message loop).
 */
#ifndef TT_KERNELS_WORKER_PROTOCOL_H
#define TT_KERNELS_WORKER_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/target.h"

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
    double slow_cutoff_s;      /* stop after the first repeat when a run is slower (0 = off) */
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
/* WorkerMsg_read with a deadline (clock_mono seconds; < 0 = wait forever).
 * WORKER_READ_TIMEOUT leaves err untouched; EOF writes "connection closed". */
typedef enum { WORKER_READ_OK = 0, WORKER_READ_EOF, WORKER_READ_ERR, WORKER_READ_TIMEOUT } WorkerReadStatus;
WorkerReadStatus WorkerMsg_readUntil(int fd, WorkerMsgHeader *h, char **payload, double deadline, char *err);

#endif
