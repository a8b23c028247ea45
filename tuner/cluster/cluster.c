/* tuner/cluster/cluster.c: see cluster.h. The wire format is fixed-size C structs
 * (every rank runs the same tunetop binary): a job, a result (plus its
 * message text), a hello, a heartbeat, a request for work, quit. */
#include "tuner/cluster/cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "tuner/builder.h"
#include "tuner/task.h"

/* This process's rank among the ranks of its node, and their number. */
static int g_local_rank = 0, g_local_size = 1;

void Cluster_node(int *local_rank, int *local_size) {
    *local_rank = g_local_rank;
    *local_size = g_local_size;
}

bool Cluster_launched(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return true;
    }
    return false;
}

#ifndef TT_HAVE_MPI

bool Cluster_available(void) { return false; }

Status Cluster_init(int *argc, char ***argv, int *rank, int *size, char *err) {
    *rank = 0;
    *size = 1;
    return tt_fail(err, "this tunetop was built without MPI (install libopenmpi-dev and rebuild)");
}

void Cluster_finalize(void) {}
void Cluster_quitServers(int size) {}

Status ClusterServer_run(const ServerConfig *cfg, char *err) {
    return tt_fail(err, "this tunetop was built without MPI");
}

ClusterHost *ClusterHost_new(int size, double lost_after_s, const DeviceInfo *space_dev, const ServerConfig *local,
                             char *err) {
    tt_fail(err, "this tunetop was built without MPI");
    return NULL;
}

bool ClusterHost_failed(ClusterHost *this) { return false; }

const MeasureBackend *ClusterHost_backend(ClusterHost *this) { return NULL; }
void ClusterHost_finish(ClusterHost *this) {}
void ClusterHost_delete(ClusterHost *this) {}

#else

#include <mpi.h>

enum { TAG_HELLO = 1, TAG_WANT, TAG_JOB, TAG_RESULT, TAG_BEAT, TAG_QUIT, TAG_SETUP };

#define BEAT_S 0.5
#define RESULT_MSG_MAX 4000
#define CANCEL_GRACE_S 0.5

typedef struct WireJob {
    uint64_t seq;
    uint64_t index;
    double slow_cutoff_s;
    char task_key[WORKLOAD_KEY_LEN];
    char template_name[64];
} WireJob;

typedef struct WireResult {
    uint64_t seq;
    int32_t build_error, meas_error;
    int32_t machine_fault; /* MeasureResult.machine_fault: the rank's machine failed, not the candidate */
    int32_t regs, spills;
    int64_t shared_bytes, local_bytes;
    double build_s, run_s, pack_s;
    int32_t n_costs;
    int32_t msg_len;
    double costs[MEASURE_MAX_COSTS];
} WireResult;

typedef struct WireHello {
    int32_t ok;
    int32_t slots;
    char host[BACKEND_HOST_LEN];
    char device[BACKEND_DEV_LEN];
    char error[TT_ERRLEN];
} WireHello;

typedef struct WireWant {
    int32_t free_slots;
    int64_t received; /* jobs received so far: rank 0 subtracts what is still on the way */
} WireWant;

typedef struct WireBeat {
    int32_t state; /* DeviceState */
    int32_t held;
    int32_t lock_timeouts; /* times it went on without the node lock */
} WireBeat;

bool Cluster_available(void) { return true; }

/* Set once a rank was lost (rank 0) or rank 0 said so (servers): Open MPI
 * 4.1's MPI_Finalize then waits for the dead rank forever, so it is skipped
 * (mpirun --enable-recovery still ends with status 0). */
static atomic_bool g_rank_lost;

Status Cluster_init(int *argc, char ***argv, int *rank, int *size, char *err) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return tt_fail(err, "MPI_Init_thread failed");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    /* the ranks of this node (every rank makes this collective call) */
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &g_local_rank);
        MPI_Comm_size(node, &g_local_size);
        MPI_Comm_free(&node);
    }
    if (provided < MPI_THREAD_SERIALIZED) {
        /* rank 0 makes its MPI calls from a thread other than main */
        MPI_Finalize();
        return tt_fail(err, "the MPI library gives thread level %d, tunetop needs MPI_THREAD_SERIALIZED", provided);
    }
    return TT_OK;
}

void Cluster_quitServers(int size) {
    for (int r = 1; r < size; r++) {
        char q = 0;
        MPI_Send(&q, 1, MPI_BYTE, r, TAG_QUIT, MPI_COMM_WORLD);
    }
}

void Cluster_finalize(void) {
    if (atomic_load(&g_rank_lost)) return;
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static void abs_deadline(struct timespec *ts, double s) {
    clock_gettime(CLOCK_REALTIME, ts);
    long ns = ts->tv_nsec + (long)(s * 1e9);
    ts->tv_sec += ns / 1000000000L;
    ts->tv_nsec = ns % 1000000000L;
}

/* ==== measure server (ranks >= 1) ========================================= */

typedef struct SJob {
    WireJob w;
} SJob;

typedef struct Server {
    const ServerConfig *cfg;
    int rank;
    int slots;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    SJob *queue; /* received, not started */
    int n_queue;
    int held;  /* received and not yet answered */
    char *out; /* results to send: packed WireResult + text, one after another */
    size_t out_len, out_cap;
    atomic_bool quit;
    atomic_int state;         /* DeviceState */
    int lock_fd;              /* node lock (cpu), -1 = none */
    atomic_int lock_timeouts; /* times it went on without the node lock */
    char hold[256];           /* tests only: server_hold's file, "" = none */
    int queue_cap;
    pthread_t worker;
    bool have_worker;
    DeviceInfo space_dev; /* rank 0's limits for the tasks' spaces (TAG_SETUP) */
    bool have_space_dev;
    double unlocked_at; /* when it last let go of the node lock */
} Server;

/* Tests only: TUNETOP_TEST_HOLD=RANK:FILE makes rank RANK hold each job it
 * was given, before timing it, until FILE exists: a slow device, to show that
 * the other ranks go on measuring meanwhile (tests/mpi/test_mpi_session.sh). */
static void server_hold_init(Server *this) {
    const char *h = getenv("TUNETOP_TEST_HOLD");
    char *end = NULL;
    long r = h ? strtol(h, &end, 10) : -1;
    if (h && end && *end == ':' && r == this->rank) snprintf(this->hold, sizeof this->hold, "%s", end + 1);
}

static void server_hold(Server *this) {
    while (this->hold[0] && access(this->hold, F_OK) != 0 && !atomic_load(&this->quit))
        sleep_s(0.05);
}

static void server_push_result(Server *this, const WireResult *res, const char *msg) {
    WireResult r = *res;
    size_t n = msg ? strlen(msg) : 0;
    if (n > RESULT_MSG_MAX) n = RESULT_MSG_MAX;
    r.msg_len = (int32_t)n;
    pthread_mutex_lock(&this->lock);
    size_t need = this->out_len + sizeof r + n;
    if (need > this->out_cap) {
        this->out_cap = need * 2;
        this->out = realloc(this->out, this->out_cap);
        if (!this->out) abort();
    }
    memcpy(this->out + this->out_len, &r, sizeof r);
    if (n) memcpy(this->out + this->out_len + sizeof r, msg, n);
    this->out_len = need;
    pthread_mutex_unlock(&this->lock);
}

typedef struct TaskCache {
    Task **tasks;
    int n;
} TaskCache;

static const Task *task_for(TaskCache *tc, const Server *this, const WireJob *w, char *err) {
    for (int i = 0; i < tc->n; i++)
        if (strcmp(tc->tasks[i]->key, w->task_key) == 0 && strcmp(tc->tasks[i]->tmpl->name, w->template_name) == 0)
            return tc->tasks[i];
    Workload wl;
    char why[TT_ERRLEN];
    if (Workload_parse(w->task_key, &wl, why) != TT_OK) {
        tt_fail(err, "rank %d cannot read the task %s: %s", this->rank, w->task_key, why);
        return NULL;
    }
    Task t;
    /* rank 0's template (conv2d 3x3 stride 1 has two: direct and Winograd) */
    const Template *tmpl = Template_byName(w->template_name);
    if (!tmpl || tmpl->family != this->cfg->target->family) {
        tt_fail(err, "rank %d has no template %s for %s (is it the same tunetop?)", this->rank, w->template_name,
                w->task_key);
        return NULL;
    }
    /* the space from rank 0's limits, so that an index is the same config here */
    const DeviceInfo *limits = this->have_space_dev ? &this->space_dev : &this->cfg->dev;
    if (Task_initWith(&t, tc->n, &wl, 1, tmpl, limits, why) != TT_OK) {
        tt_fail(err, "rank %d cannot set up the task: %s", this->rank, why);
        return NULL;
    }
    /* each task in an allocation of its own: the jobs of a chunk keep pointers to theirs */
    tc->tasks = realloc(tc->tasks, (size_t)(tc->n + 1) * sizeof *tc->tasks);
    Task *kept = malloc(sizeof *kept);
    if (!tc->tasks || !kept) abort();
    *kept = t;
    tc->tasks[tc->n++] = kept;
    return kept;
}

/* Takes the node lock (LOCK_SH to build, LOCK_EX to time, LOCK_UN). A rank
 * that dies releases it; one that hangs holding it would stall the node, so
 * after NODE_LOCK_WAIT_S this rank goes on without it for the rest of the
 * session (rank 0 says so). */
#define NODE_LOCK_WAIT_S 60.0
/* A rank that just let go of the lock waits this long before it asks again,
 * so that another rank of its node, polling for it every 5 ms, gets its turn
 * (flock is not fair: without the gap the rank that builds and times without
 * a pause keeps the lock and the others starve). */
#define NODE_LOCK_GAP_S 0.02
static void node_lock(Server *this, int how) {
    if (this->lock_fd < 0) return;
    if (how == LOCK_UN) {
        flock(this->lock_fd, LOCK_UN);
        this->unlocked_at = clock_mono();
        return;
    }
    double since = clock_mono() - this->unlocked_at;
    if (g_local_size > 1 && since < NODE_LOCK_GAP_S) sleep_s(NODE_LOCK_GAP_S - since);
    double t0 = clock_mono();
    while (flock(this->lock_fd, how | LOCK_NB) != 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || clock_mono() - t0 > NODE_LOCK_WAIT_S) {
            /* from now on without it: its holder is not coming back */
            atomic_fetch_add(&this->lock_timeouts, 1);
            close(this->lock_fd);
            this->lock_fd = -1;
            return;
        }
        sleep_s(0.005);
    }
}

static void *server_work(void *arg) {
    Server *this = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    const ServerConfig *cfg = this->cfg;
    char workdir[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(workdir, sizeof workdir, "%s/tunetop-rank%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", this->rank);
    bool have_dir = mkdtemp(workdir) != NULL;
    int builders = cfg->builders > 0 ? cfg->builders : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (builders < 1) builders = 1;
    BuilderPool *pool = BuilderPool_new(builders, cfg->target, &cfg->dev, &cfg->measure, have_dir ? workdir : "/tmp");
    Runner *runner = NULL;
    char runner_err[TT_ERRLEN] = "";
    if (!cfg->measure.compile_only) runner = cfg->target->runner_new(&cfg->dev, runner_err);
    const Task *runner_task = NULL;
    TaskCache tc = {0};
    SJob *chunk = malloc((size_t)this->slots * sizeof *chunk);
    BuildJob *jobs = malloc((size_t)this->slots * sizeof *jobs);
    const Task **jtask = malloc((size_t)this->slots * sizeof *jtask);
    if (!chunk || !jobs || !jtask) abort();
    for (;;) {
        pthread_mutex_lock(&this->lock);
        while (this->n_queue == 0 && !atomic_load(&this->quit)) {
            struct timespec ts;
            abs_deadline(&ts, 0.2);
            pthread_cond_timedwait(&this->cond, &this->lock, &ts);
        }
        if (atomic_load(&this->quit)) {
            pthread_mutex_unlock(&this->lock);
            break;
        }
        int n = this->n_queue;
        memcpy(chunk, this->queue, (size_t)n * sizeof *chunk);
        this->n_queue = 0;
        pthread_mutex_unlock(&this->lock);

        atomic_store(&this->state, DEVSTATE_BUILDING);
        int nb = 0;
        for (int i = 0; i < n; i++) {
            char err[TT_ERRLEN];
            const Task *task = task_for(&tc, this, &chunk[i].w, err);
            if (!task || chunk[i].w.index >= task->space.total) {
                WireResult r = {.seq = chunk[i].w.seq,
                                .build_error = ERR_UNKNOWN,
                                .regs = -1,
                                .spills = -1,
                                .shared_bytes = -1,
                                .local_bytes = -1};
                if (task)
                    snprintf(err, sizeof err, "rank %d: config %llu is outside the task's space", this->rank,
                             (unsigned long long)chunk[i].w.index);
                server_push_result(this, &r, err);
                continue;
            }
            jtask[nb] = task;
            chunk[nb] = chunk[i];
            BuildJob_init(&jobs[nb], task, chunk[i].w.index);
            nb++;
        }
        node_lock(this, LOCK_SH);
        BuilderPool_run(pool, jobs, nb, &this->quit);
        node_lock(this, LOCK_UN);
        atomic_store(&this->state, DEVSTATE_MEASURING);
        for (int i = 0; i < nb; i++) {
            BuildJob *job = &jobs[i];
            WireResult r = {.seq = chunk[i].w.seq,
                            .build_error = job->result.error_no,
                            .build_s = job->result.build_s,
                            .regs = job->result.regs_per_thread,
                            .spills = job->result.spill_bytes,
                            .shared_bytes = job->result.shared_bytes,
                            .local_bytes = job->result.local_bytes};
            if (job->skipped || atomic_load(&this->quit)) {
                BuildJob_done(job);
                continue; /* quitting: rank 0 no longer waits for it */
            }
            const char *msg = job->result.msg;
            MeasureResult mr;
            MeasureResult_init(&mr);
            char err[TT_ERRLEN];
            if (job->result.error_no == ERR_NO_ERROR && !cfg->measure.compile_only) {
                server_hold(this);
                if (!runner) {
                    mr.error_no = ERR_RUNTIME_DEVICE;
                    snprintf(err, sizeof err, "rank %d has no runner: %.400s", this->rank, runner_err);
                    msg = err;
                } else if (runner_task != jtask[i] &&
                           cfg->target->runner_set_task(runner, &jtask[i]->wl, err) != TT_OK) {
                    mr.error_no = ERR_UNKNOWN;
                    mr.machine_fault = true; /* the same task file for every candidate */
                    msg = err;
                    runner_task = NULL;
                } else {
                    runner_task = jtask[i];
                    MeasureOptions opt = cfg->measure;
                    opt.slow_cutoff_s = chunk[i].w.slow_cutoff_s;
                    node_lock(this, LOCK_EX);
                    cfg->target->measure(runner, &job->src, &job->result, &opt, &mr);
                    node_lock(this, LOCK_UN);
                    if (mr.error_no == ERR_RUNTIME_DEVICE || mr.error_no == ERR_RUN_TIMEOUT) runner_task = NULL;
                    msg = mr.msg;
                }
            }
            r.meas_error = mr.error_no;
            r.machine_fault = mr.machine_fault && mr.error_no != ERR_NO_ERROR;
            r.n_costs = mr.n_costs < MEASURE_MAX_COSTS ? mr.n_costs : MEASURE_MAX_COSTS;
            memcpy(r.costs, mr.costs, sizeof(double) * (size_t)r.n_costs);
            r.run_s = mr.run_s;
            r.pack_s = mr.pack_s;
            server_push_result(this, &r, msg);
            MeasureResult_done(&mr);
            BuildJob_done(job);
        }
        atomic_store(&this->state, DEVSTATE_IDLE);
    }
    free(chunk);
    free(jobs);
    free(jtask);
    for (int i = 0; i < tc.n; i++) {
        Task_done(tc.tasks[i]);
        free(tc.tasks[i]);
    }
    free(tc.tasks);
    if (runner) cfg->target->runner_delete(runner);
    BuilderPool_delete(pool);
    if (have_dir) rmdir(workdir);
    return NULL;
}

/* Starts a server's work thread (with its node lock and, in tests, its
 * hold); false when it has none (no device, or no thread). Both the MPI
 * servers and rank 0's own measuring (--local-measure) run one. */
static bool server_start(Server *sv, const ServerConfig *cfg, int rank) {
    memset(sv, 0, sizeof *sv);
    sv->cfg = cfg;
    sv->rank = rank;
    sv->lock_fd = -1;
    server_hold_init(sv);
    int builders = cfg->builders > 0 ? cfg->builders : (int)sysconf(_SC_NPROCESSORS_ONLN);
    sv->slots = 2 * (builders < 1 ? 1 : builders);
    /* the node rule of the cpu target (cluster.h) */
    if (cfg->target->family == FAMILY_CPU && !cfg->measure.compile_only && !cfg->device_error) {
        char path[320];
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/tunetop-node-%u.lock", tmp && *tmp ? tmp : "/tmp", (unsigned)getuid());
        sv->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    }
    pthread_mutex_init(&sv->lock, NULL);
    pthread_cond_init(&sv->cond, NULL);
    sv->queue_cap = sv->slots * 4;
    sv->queue = malloc((size_t)sv->queue_cap * sizeof *sv->queue);
    if (!sv->queue) abort();
    atomic_store(&sv->state, cfg->device_error ? DEVSTATE_FAILED : DEVSTATE_IDLE);
    sv->have_worker = !cfg->device_error && pthread_create(&sv->worker, NULL, server_work, sv) == 0;
    return sv->have_worker;
}

/* A job for the work thread. */
static void server_enqueue(Server *sv, const WireJob *w) {
    pthread_mutex_lock(&sv->lock);
    if (sv->n_queue == sv->queue_cap) {
        sv->queue_cap *= 2;
        sv->queue = realloc(sv->queue, (size_t)sv->queue_cap * sizeof *sv->queue);
        if (!sv->queue) abort();
    }
    sv->queue[sv->n_queue++].w = *w;
    sv->held++;
    pthread_cond_signal(&sv->cond);
    pthread_mutex_unlock(&sv->lock);
}

/* Free slots: jobs it could take now. */
static int server_free(Server *sv) {
    pthread_mutex_lock(&sv->lock);
    int n = sv->slots - sv->held;
    pthread_mutex_unlock(&sv->lock);
    return n;
}

/* Moves the results ready (packed WireResult + text, one after another) into
 * *buf; returns their bytes. The caller answers each (server_answered). */
static size_t server_take(Server *sv, char **buf, size_t *cap) {
    pthread_mutex_lock(&sv->lock);
    size_t n = sv->out_len;
    if (n) {
        if (n > *cap) {
            *cap = n * 2;
            *buf = realloc(*buf, *cap);
            if (!*buf) abort();
        }
        memcpy(*buf, sv->out, n);
        sv->out_len = 0;
    }
    pthread_mutex_unlock(&sv->lock);
    return n;
}

static void server_answered(Server *sv) {
    pthread_mutex_lock(&sv->lock);
    sv->held--;
    pthread_mutex_unlock(&sv->lock);
}

static void server_stop(Server *sv) {
    atomic_store(&sv->quit, true);
    if (sv->have_worker) {
        pthread_mutex_lock(&sv->lock);
        pthread_cond_signal(&sv->cond);
        pthread_mutex_unlock(&sv->lock);
        pthread_join(sv->worker, NULL);
        sv->have_worker = false;
    }
    if (sv->lock_fd >= 0) close(sv->lock_fd);
    sv->lock_fd = -1;
    free(sv->out);
    free(sv->queue);
    pthread_mutex_destroy(&sv->lock);
    pthread_cond_destroy(&sv->cond);
}

/* A rank's hello: its host and device, or why it has none. */
static void hello_fill(WireHello *hello, const ServerConfig *cfg) {
    memset(hello, 0, sizeof *hello);
    hello->ok = cfg->device_error == NULL;
    if (gethostname(hello->host, sizeof hello->host) != 0) snprintf(hello->host, sizeof hello->host, "?");
    hello->host[sizeof hello->host - 1] = '\0';
    snprintf(hello->device, sizeof hello->device, "%s", cfg->dev.name[0] ? cfg->dev.name : cfg->target->name);
    if (cfg->device_error) snprintf(hello->error, sizeof hello->error, "%s", cfg->device_error);
}

Status ClusterServer_run(const ServerConfig *cfg, char *err) {
    Server sv;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    bool have_worker = server_start(&sv, cfg, rank);
    WireHello hello;
    hello_fill(&hello, cfg);
    hello.slots = sv.slots;
    /* Tests only: TUNETOP_TEST_DEVICE=RANK:NAME gives rank RANK another device
     * name, as a node with another GPU model would (tests/mpi). */
    const char *fake = getenv("TUNETOP_TEST_DEVICE");
    char *end = NULL;
    if (fake && strtol(fake, &end, 10) == rank && end && *end == ':')
        snprintf(hello.device, sizeof hello.device, "%s", end + 1);
    MPI_Send(&hello, (int)sizeof hello, MPI_BYTE, 0, TAG_HELLO, MPI_COMM_WORLD);

    int64_t received = 0;
    WireWant last_want = {-1, -1};
    double last_beat = 0;
    char *sendbuf = NULL;
    size_t sendcap = 0;
    Status st = TT_OK;
    while (!atomic_load(&sv.quit)) {
        bool busy = false;
        int flag = 0;
        MPI_Status ms;
        if (MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &ms) != MPI_SUCCESS) {
            st = tt_fail(err, "rank %d lost rank 0", sv.rank);
            break;
        }
        if (flag) {
            busy = true;
            if (ms.MPI_TAG == TAG_JOB) {
                WireJob w;
                MPI_Recv(&w, (int)sizeof w, MPI_BYTE, 0, TAG_JOB, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                received++;
                server_enqueue(&sv, &w);
            } else if (ms.MPI_TAG == TAG_SETUP) { /* before any job */
                DeviceInfo d;
                MPI_Recv(&d, (int)sizeof d, MPI_BYTE, 0, TAG_SETUP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                pthread_mutex_lock(&sv.lock);
                sv.space_dev = d;
                sv.have_space_dev = true;
                pthread_mutex_unlock(&sv.lock);
            } else {
                char junk[64];
                MPI_Recv(junk, (int)sizeof junk, MPI_BYTE, 0, ms.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (ms.MPI_TAG == TAG_QUIT) {
                    atomic_store(&sv.quit, true);
                    if (junk[0]) atomic_store(&g_rank_lost, true);
                }
            }
        }
        /* results, one message each */
        size_t n = server_take(&sv, &sendbuf, &sendcap);
        for (size_t off = 0; off < n;) {
            WireResult r;
            memcpy(&r, sendbuf + off, sizeof r);
            size_t len = sizeof r + (size_t)r.msg_len;
            MPI_Send(sendbuf + off, (int)len, MPI_BYTE, 0, TAG_RESULT, MPI_COMM_WORLD);
            off += len;
            server_answered(&sv);
            busy = true;
        }
        /* ask for work when slots are free */
        if (have_worker && !atomic_load(&sv.quit)) {
            WireWant want = {.free_slots = server_free(&sv), .received = received};
            if (want.free_slots > 0 &&
                (want.free_slots != last_want.free_slots || want.received != last_want.received)) {
                MPI_Send(&want, (int)sizeof want, MPI_BYTE, 0, TAG_WANT, MPI_COMM_WORLD);
                last_want = want;
            }
        }
        double now = clock_mono();
        if (now - last_beat >= BEAT_S) {
            pthread_mutex_lock(&sv.lock);
            WireBeat beat = {
                .state = atomic_load(&sv.state), .held = sv.held, .lock_timeouts = atomic_load(&sv.lock_timeouts)};
            pthread_mutex_unlock(&sv.lock);
            MPI_Send(&beat, (int)sizeof beat, MPI_BYTE, 0, TAG_BEAT, MPI_COMM_WORLD);
            last_beat = now;
        }
        if (!busy) sleep_s(0.001);
    }
    server_stop(&sv);
    free(sendbuf);
    return st;
}

/* ==== rank 0 ============================================================== */

typedef struct HJob {
    uint64_t seq;
    BackendJob job;
    int rank;        /* holding it, QUEUED = none yet */
    bool cancelled;  /* the engine no longer wants it: unmeasured unless it comes back in the grace */
    double deadline; /* cancelled in flight: when to give up on it */
} HJob;
#define QUEUED (-1)

typedef struct RankInfo {
    DeviceState state;
    char host[BACKEND_HOST_LEN];
    char device[BACKEND_DEV_LEN];
    char kind[BACKEND_DEV_LEN]; /* the device's name without its number on the node (" #1") */
    int want;                   /* free slots it reported, less what is on the way */
    int64_t sent;               /* jobs sent to it */
    int measured, errors, in_flight;
    int lock_timeouts;
    double last_heard, first_job;
} RankInfo;

struct ClusterHost {
    int size;
    double lost_after_s;
    MeasureBackend be;
    pthread_t thread;
    bool started;
    atomic_bool quit;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* outcomes ready */
    RankInfo *ranks;
    HJob *jobs; /* queued and in flight */
    int n_jobs, cap_jobs;
    uint64_t next_seq;
    BackendOutcome *out; /* for the engine */
    int n_out, cap_out;
    bool fatal_said;
    /* --local-measure: rank 0 builds and measures too, in a server of its
     * own (ranks[0]) that the communication thread feeds without MPI */
    int first;              /* the first rank that measures: 0 with a local server, else 1 */
    ServerConfig local_cfg; /* a copy: the server keeps a pointer to it */
    Server local;
    char *local_buf;
    size_t local_cap;
    DeviceInfo space_dev; /* sent to every server first (TAG_SETUP) */
    /* each task's (job group's) kind of device, "" = none yet (cluster.h) */
    char (*bound)[BACKEND_DEV_LEN];
    int n_bound;
    atomic_bool failed;
};

/* A device's kind: its name without the node-local number tunetop appends. */
static void set_kind(RankInfo *ri) {
    snprintf(ri->kind, sizeof ri->kind, "%s", ri->device);
    char *hash = strrchr(ri->kind, '#');
    if (hash && hash > ri->kind && hash[-1] == ' ' && hash[1] && strspn(hash + 1, "0123456789") == strlen(hash + 1))
        hash[-1] = '\0';
}

/* Whether a live rank has that kind of device. */
static bool kind_live(const ClusterHost *this, const char *kind) {
    for (int r = this->first; r < this->size; r++) {
        const RankInfo *ri = &this->ranks[r];
        if (ri->state != DEVSTATE_LOST && ri->state != DEVSTATE_FAILED && strcmp(ri->kind, kind) == 0) return true;
    }
    return false;
}

/* Whether rank ri may take a job of group g: the group has no kind yet, or
 * ri's, or one no live rank has any more. */
static bool kind_fits(const ClusterHost *this, const RankInfo *ri, int g) {
    if (g < 0 || g >= this->n_bound || !this->bound[g][0]) return true;
    return strcmp(this->bound[g], ri->kind) == 0 || !kind_live(this, this->bound[g]);
}

static void kind_bind(ClusterHost *this, const RankInfo *ri, int g) {
    if (g < 0) return;
    if (g >= this->n_bound) {
        int n = g + 16;
        this->bound = realloc(this->bound, (size_t)n * sizeof *this->bound);
        if (!this->bound) abort();
        memset(this->bound + this->n_bound, 0, (size_t)(n - this->n_bound) * sizeof *this->bound);
        this->n_bound = n;
    }
    snprintf(this->bound[g], sizeof this->bound[g], "%s", ri->kind);
}

static void host_push_out(ClusterHost *this, const BackendOutcome *o) {
    if (this->n_out == this->cap_out) {
        this->cap_out = this->cap_out ? this->cap_out * 2 : 64;
        this->out = realloc(this->out, (size_t)this->cap_out * sizeof *this->out);
        if (!this->out) abort();
    }
    this->out[this->n_out++] = *o;
    pthread_cond_signal(&this->cond);
}

static void host_note(ClusterHost *this, bool warn, const char *text) {
    BackendOutcome o = {.kind = OUTCOME_NOTE, .warn = warn, .rank = -1};
    MeasureResult_init(&o.mr);
    snprintf(o.note, sizeof o.note, "%s", text);
    host_push_out(this, &o);
}

static void host_unmeasured(ClusterHost *this, int i) {
    BackendOutcome o = {.kind = OUTCOME_UNMEASURED, .cookie = this->jobs[i].job.cookie, .rank = -1};
    MeasureResult_init(&o.mr);
    host_push_out(this, &o);
    this->jobs[i] = this->jobs[--this->n_jobs];
}

static int host_find(const ClusterHost *this, uint64_t seq) {
    for (int i = 0; i < this->n_jobs; i++)
        if (this->jobs[i].seq == seq) return i;
    return -1;
}

static bool host_any_live(const ClusterHost *this) {
    for (int r = this->first; r < this->size; r++)
        if (this->ranks[r].state != DEVSTATE_LOST && this->ranks[r].state != DEVSTATE_FAILED) return true;
    return false;
}

/* Under the lock: a result from rank src (count bytes: WireResult + text). */
static void host_result(ClusterHost *this, int src, const char *buf, int count) {
    RankInfo *ri = &this->ranks[src];
    if (count < (int)sizeof(WireResult)) return;
    WireResult r;
    memcpy(&r, buf, sizeof r);
    int i = host_find(this, r.seq);
    if (i < 0 || this->jobs[i].rank != src) return; /* given up on (cancelled, or re-queued) */
    ri->measured++;
    ri->in_flight--;
    if (r.build_error != ERR_NO_ERROR || r.meas_error != ERR_NO_ERROR) ri->errors++;
    BackendOutcome o = {.kind = OUTCOME_MEASURED, .cookie = this->jobs[i].job.cookie, .rank = src};
    MeasureResult_init(&o.mr);
    o.build_error = r.build_error;
    o.build_s = r.build_s;
    o.regs = r.regs;
    o.spills = r.spills;
    o.shared_bytes = r.shared_bytes;
    o.local_bytes = r.local_bytes;
    o.mr.error_no = r.meas_error;
    o.mr.machine_fault = r.machine_fault != 0;
    o.mr.n_costs = r.n_costs >= 0 && r.n_costs <= MEASURE_MAX_COSTS ? r.n_costs : 0;
    memcpy(o.mr.costs, r.costs, sizeof(double) * (size_t)o.mr.n_costs);
    o.mr.run_s = r.run_s;
    o.mr.pack_s = r.pack_s;
    int len = count - (int)sizeof r;
    if (r.msg_len > 0 && r.msg_len <= len) o.mr.msg = strndup(buf + sizeof r, (size_t)r.msg_len);
    snprintf(o.host, sizeof o.host, "%s", ri->host);
    snprintf(o.device, sizeof o.device, "%s", ri->device);
    host_push_out(this, &o);
    this->jobs[i] = this->jobs[--this->n_jobs];
}

static void host_receive(ClusterHost *this, const MPI_Status *ms, char **buf, int *cap) {
    int count = 0;
    MPI_Get_count(ms, MPI_BYTE, &count);
    if (count > *cap) {
        *cap = count * 2;
        *buf = realloc(*buf, (size_t)*cap);
        if (!*buf) abort();
    }
    int src = ms->MPI_SOURCE;
    MPI_Recv(*buf, count, MPI_BYTE, src, ms->MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (src < 1 || src >= this->size) return;
    pthread_mutex_lock(&this->lock);
    RankInfo *ri = &this->ranks[src];
    if (ri->state == DEVSTATE_LOST) {
        /* declared lost: its jobs went to others, so what it says now is never recorded */
        pthread_mutex_unlock(&this->lock);
        return;
    }
    ri->last_heard = clock_mono();
    switch (ms->MPI_TAG) {
    case TAG_HELLO:
        if (count >= (int)sizeof(WireHello)) {
            WireHello h;
            memcpy(&h, *buf, sizeof h);
            h.host[sizeof h.host - 1] = h.device[sizeof h.device - 1] = h.error[sizeof h.error - 1] = '\0';
            snprintf(ri->host, sizeof ri->host, "%s", h.host);
            snprintf(ri->device, sizeof ri->device, "%s", h.device);
            set_kind(ri);
            ri->state = h.ok ? DEVSTATE_IDLE : DEVSTATE_FAILED;
            char line[256];
            for (int o = this->first; o < this->size && h.ok; o++)
                if (o != src && this->ranks[o].kind[0] && this->ranks[o].state != DEVSTATE_FAILED &&
                    strcmp(this->ranks[o].kind, ri->kind) != 0) {
                    /* timings of one task come from one kind of device (cluster.h) */
                    snprintf(line, sizeof line,
                             "rank %d on %.16s has %.40s, rank %d on %.16s %.40s: devices differ; a task is "
                             "measured on the kind that takes its first job",
                             src, h.host, h.device, o, this->ranks[o].host, this->ranks[o].device);
                    host_note(this, true, line);
                    break;
                }
            if (!h.ok) {
                snprintf(line, sizeof line, "rank %d on %.48s cannot open its device: %.150s", src, h.host, h.error);
                host_note(this, true, line);
            }
        }
        break;
    case TAG_WANT:
        if (count >= (int)sizeof(WireWant)) {
            WireWant w;
            memcpy(&w, *buf, sizeof w);
            ri->want = w.free_slots - (int)(ri->sent - w.received);
            if (ri->want > 0) pthread_cond_signal(&this->cond); /* the engine may send more work */
        }
        break;
    case TAG_BEAT:
        if (count >= (int)sizeof(WireBeat)) {
            WireBeat b;
            memcpy(&b, *buf, sizeof b);
            if (ri->state != DEVSTATE_FAILED && b.state >= DEVSTATE_IDLE && b.state <= DEVSTATE_MEASURING)
                ri->state = (DeviceState)b.state;
            if (b.lock_timeouts > ri->lock_timeouts) {
                ri->lock_timeouts = b.lock_timeouts;
                char line[256];
                snprintf(line, sizeof line,
                         "rank %d on %.48s waited %.0f s for its node's lock and goes on without it "
                         "(a hung rank on that node?): its timings may overlap builds",
                         src, ri->host, NODE_LOCK_WAIT_S);
                host_note(this, true, line);
            }
        }
        break;
    case TAG_RESULT:
        host_result(this, src, *buf, count);
        break;
    default:
        break;
    }
    pthread_mutex_unlock(&this->lock);
}

/* Under the lock: hands queued jobs to ranks with free slots (oldest first). */
static void host_dispatch(ClusterHost *this) {
    for (int r = this->first; r < this->size; r++) {
        RankInfo *ri = &this->ranks[r];
        if (ri->state == DEVSTATE_LOST || ri->state == DEVSTATE_FAILED || ri->state == DEVSTATE_STARTING) continue;
        if (r == 0) { /* rank 0's own server: its free slots, nothing on the way */
            int free_slots = server_free(&this->local);
            if (free_slots > 0 && ri->want <= 0) pthread_cond_signal(&this->cond); /* the engine may send more */
            ri->want = free_slots;
        }
        while (ri->want > 0) {
            int best = -1;
            for (int i = 0; i < this->n_jobs; i++)
                if (this->jobs[i].rank == QUEUED && !this->jobs[i].cancelled &&
                    (best < 0 || this->jobs[i].seq < this->jobs[best].seq) &&
                    kind_fits(this, ri, this->jobs[i].job.group))
                    best = i;
            if (best < 0) break; /* nothing this rank may take */
            HJob *j = &this->jobs[best];
            WireJob w = {.seq = j->seq, .index = j->job.index, .slow_cutoff_s = j->job.slow_cutoff_s};
            snprintf(w.task_key, sizeof w.task_key, "%s", j->job.task_key);
            snprintf(w.template_name, sizeof w.template_name, "%s", j->job.template_name);
            if (r == 0)
                server_enqueue(&this->local, &w);
            else if (MPI_Send(&w, (int)sizeof w, MPI_BYTE, r, TAG_JOB, MPI_COMM_WORLD) != MPI_SUCCESS) {
                ri->want = 0;
                break;
            }
            j->rank = r;
            kind_bind(this, ri, j->job.group);
            ri->want--;
            ri->sent++;
            ri->in_flight++;
            if (ri->first_job <= 0) ri->first_job = clock_mono();
        }
    }
}

/* Under the lock: lost ranks, cancelled jobs past their grace, no rank left. */
static void host_check(ClusterHost *this) {
    double now = clock_mono();
    for (int r = 1; r < this->size; r++) {
        RankInfo *ri = &this->ranks[r];
        if (ri->state == DEVSTATE_LOST || ri->state == DEVSTATE_FAILED) continue;
        if (now - ri->last_heard < this->lost_after_s) continue;
        ri->state = DEVSTATE_LOST;
        atomic_store(&g_rank_lost, true);
        int requeued = 0, given_up = 0;
        for (int i = 0; i < this->n_jobs;) {
            if (this->jobs[i].rank != r) {
                i++;
                continue;
            }
            if (this->jobs[i].cancelled) {
                host_unmeasured(this, i);
                given_up++;
                continue;
            }
            this->jobs[i].rank = QUEUED; /* back to the queue, ahead of newer jobs (lowest seq first) */
            requeued++;
            i++;
        }
        ri->in_flight = 0;
        char line[256];
        snprintf(line, sizeof line, "rank %d on %s lost: nothing heard for %.0f s; %d candidate%s re-queued", r,
                 ri->host[0] ? ri->host : "?", now - ri->last_heard, requeued, requeued == 1 ? "" : "s");
        host_note(this, true, line);
        (void)given_up;
    }
    for (int i = 0; i < this->n_jobs;) {
        HJob *j = &this->jobs[i];
        if (j->cancelled && (j->rank == QUEUED || now >= j->deadline))
            host_unmeasured(this, i);
        else
            i++;
    }
    if (this->n_jobs && !host_any_live(this)) {
        if (!this->fatal_said) {
            this->fatal_said = true;
            atomic_store(&this->failed, true);
            BackendOutcome o = {.kind = OUTCOME_NOTE, .warn = true, .fatal = true, .rank = -1};
            MeasureResult_init(&o.mr);
            snprintf(o.note, sizeof o.note, "no measure server left (every rank lost or without a device): stopping");
            host_push_out(this, &o);
        }
        while (this->n_jobs)
            host_unmeasured(this, 0);
    }
}

/* Under the lock: rank 0's own server's results and state. */
static bool host_local(ClusterHost *this) {
    RankInfo *ri = &this->ranks[0];
    if (ri->state != DEVSTATE_FAILED) ri->state = (DeviceState)atomic_load(&this->local.state);
    ri->last_heard = clock_mono();
    size_t n = server_take(&this->local, &this->local_buf, &this->local_cap);
    for (size_t off = 0; off < n;) {
        WireResult r;
        memcpy(&r, this->local_buf + off, sizeof r);
        int len = (int)(sizeof r + (size_t)r.msg_len);
        host_result(this, 0, this->local_buf + off, len);
        server_answered(&this->local);
        off += (size_t)len;
    }
    return n > 0;
}

static void *host_main(void *arg) {
    ClusterHost *this = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    char *buf = NULL;
    int cap = 0;
    double last_check = 0;
    /* rank 0's limits come before any job (messages between two ranks keep their order) */
    for (int r = 1; r < this->size; r++)
        MPI_Send(&this->space_dev, (int)sizeof this->space_dev, MPI_BYTE, r, TAG_SETUP, MPI_COMM_WORLD);
    while (!atomic_load(&this->quit)) {
        bool busy = false;
        for (int k = 0; k < 64; k++) {
            int flag = 0;
            MPI_Status ms;
            if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &ms) != MPI_SUCCESS || !flag) break;
            host_receive(this, &ms, &buf, &cap);
            busy = true;
        }
        pthread_mutex_lock(&this->lock);
        if (this->first == 0) busy |= host_local(this);
        host_dispatch(this);
        double now = clock_mono();
        if (now - last_check >= 0.1) {
            host_check(this);
            last_check = now;
        }
        pthread_mutex_unlock(&this->lock);
        if (!busy) sleep_s(0.001);
    }
    /* every server, lost ones too: a rank that was only slow must not wait forever */
    char q = atomic_load(&g_rank_lost) ? 1 : 0; /* 1: skip MPI_Finalize */
    for (int r = 1; r < this->size; r++)
        MPI_Send(&q, 1, MPI_BYTE, r, TAG_QUIT, MPI_COMM_WORLD);
    free(buf);
    return NULL;
}

static void be_submit(void *ctx, const BackendJob *jobs, int n) {
    ClusterHost *this = ctx;
    pthread_mutex_lock(&this->lock);
    if (this->n_jobs + n > this->cap_jobs) {
        this->cap_jobs = (this->n_jobs + n) * 2;
        this->jobs = realloc(this->jobs, (size_t)this->cap_jobs * sizeof *this->jobs);
        if (!this->jobs) abort();
    }
    for (int i = 0; i < n; i++)
        this->jobs[this->n_jobs++] = (HJob){.seq = ++this->next_seq, .job = jobs[i], .rank = QUEUED};
    pthread_mutex_unlock(&this->lock);
}

static bool be_next(void *ctx, BackendOutcome *out, double timeout_s) {
    ClusterHost *this = ctx;
    pthread_mutex_lock(&this->lock);
    if (this->n_out == 0 && timeout_s > 0) {
        struct timespec ts;
        abs_deadline(&ts, timeout_s);
        pthread_cond_timedwait(&this->cond, &this->lock, &ts);
    }
    bool got = this->n_out > 0;
    if (got) {
        *out = this->out[0];
        memmove(this->out, this->out + 1, (size_t)(this->n_out - 1) * sizeof *this->out);
        this->n_out--;
    }
    pthread_mutex_unlock(&this->lock);
    return got;
}

static void be_cancel(void *ctx, int group) {
    ClusterHost *this = ctx;
    pthread_mutex_lock(&this->lock);
    double deadline = clock_mono() + CANCEL_GRACE_S;
    for (int i = 0; i < this->n_jobs;) {
        HJob *j = &this->jobs[i];
        if (group >= 0 && j->job.group != group) {
            i++;
            continue;
        }
        if (j->rank == QUEUED) {
            host_unmeasured(this, i);
            continue;
        }
        if (!j->cancelled) {
            j->cancelled = true;
            j->deadline = deadline;
        }
        i++;
    }
    pthread_mutex_unlock(&this->lock);
}

static int be_want(void *ctx) {
    ClusterHost *this = ctx;
    pthread_mutex_lock(&this->lock);
    int want = 0;
    for (int r = this->first; r < this->size; r++) {
        const RankInfo *ri = &this->ranks[r];
        if (ri->state != DEVSTATE_LOST && ri->state != DEVSTATE_FAILED && ri->want > 0) want += ri->want;
    }
    /* less the queued jobs a rank with free slots may take (a job bound to a busy
     * kind of device leaves another kind's free slots wanting) */
    for (int i = 0; i < this->n_jobs && want > 0; i++) {
        const HJob *j = &this->jobs[i];
        if (j->rank != QUEUED || j->cancelled) continue;
        bool fits = false;
        for (int r = this->first; r < this->size && !fits; r++) {
            const RankInfo *ri = &this->ranks[r];
            fits = ri->want > 0 && ri->state != DEVSTATE_LOST && ri->state != DEVSTATE_FAILED &&
                   kind_fits(this, ri, j->job.group);
        }
        want -= fits;
    }
    pthread_mutex_unlock(&this->lock);
    return want;
}

static int be_devices(void *ctx, DeviceRow *out, int max) {
    ClusterHost *this = ctx;
    int n = 0;
    pthread_mutex_lock(&this->lock);
    double now = clock_mono();
    for (int r = this->first; r < this->size && n < max; r++) {
        const RankInfo *ri = &this->ranks[r];
        DeviceRow *d = &out[n++];
        memset(d, 0, sizeof *d);
        d->rank = r;
        snprintf(d->host, sizeof d->host, "%s", ri->host[0] ? ri->host : "?");
        size_t kl = strlen(ri->kind);
        if (ri->device[kl]) /* its number on the node first, where a narrow column still shows it: "#1 NAME" */
            snprintf(d->device, sizeof d->device, "%s %.*s", ri->device + kl + 1, (int)kl, ri->device);
        else
            snprintf(d->device, sizeof d->device, "%s", ri->device);
        d->state = atomic_load(&this->quit) && ri->state != DEVSTATE_LOST && ri->state != DEVSTATE_FAILED
                       ? DEVSTATE_DONE
                       : ri->state;
        d->measured = ri->measured;
        d->errors = ri->errors;
        d->in_flight = ri->in_flight;
        d->cand_per_s = ri->first_job > 0 && now > ri->first_job ? ri->measured / (now - ri->first_job) : 0;
        d->last_heard_s = now - ri->last_heard;
    }
    pthread_mutex_unlock(&this->lock);
    return n;
}

bool ClusterHost_failed(ClusterHost *this) { return this && atomic_load(&this->failed); }

ClusterHost *ClusterHost_new(int size, double lost_after_s, const DeviceInfo *space_dev, const ServerConfig *local,
                             char *err) {
    if (size < 2) {
        tt_fail(err, "an MPI session needs at least 2 ranks (rank 0 and a measure server)");
        return NULL;
    }
    ClusterHost *this = calloc(1, sizeof *this);
    if (!this) abort();
    this->size = size;
    this->space_dev = *space_dev;
    this->lost_after_s = lost_after_s > 0 ? lost_after_s : 20;
    this->ranks = calloc((size_t)size, sizeof *this->ranks);
    if (!this->ranks) abort();
    double now = clock_mono();
    for (int r = 1; r < size; r++) {
        this->ranks[r].state = DEVSTATE_STARTING;
        this->ranks[r].last_heard = now;
    }
    pthread_mutex_init(&this->lock, NULL);
    pthread_cond_init(&this->cond, NULL);
    this->first = 1;
    if (local) {
        RankInfo *ri = &this->ranks[0];
        WireHello h;
        hello_fill(&h, local);
        snprintf(ri->host, sizeof ri->host, "%s", h.host);
        snprintf(ri->device, sizeof ri->device, "%s", h.device);
        set_kind(ri);
        ri->last_heard = now;
        this->first = 0;
        this->local_cfg = *local;
        this->local_cfg.device_error = NULL;
        if (!server_start(&this->local, &this->local_cfg, 0)) {
            server_stop(&this->local);
            this->first = 1;
            tt_fail(err, "rank 0 cannot start its measuring thread");
            ClusterHost_delete(this);
            return NULL;
        }
        ri->state = DEVSTATE_IDLE;
    }
    this->be = (MeasureBackend){
        .ctx = this, .submit = be_submit, .next = be_next, .cancel = be_cancel, .want = be_want, .devices = be_devices};
    if (pthread_create(&this->thread, NULL, host_main, this) != 0) {
        tt_fail(err, "cannot start the MPI communication thread");
        if (this->first == 0) server_stop(&this->local);
        ClusterHost_delete(this);
        return NULL;
    }
    this->started = true;
    return this;
}

const MeasureBackend *ClusterHost_backend(ClusterHost *this) { return &this->be; }

void ClusterHost_finish(ClusterHost *this) {
    if (!this || !this->started) return;
    atomic_store(&this->quit, true);
    pthread_join(this->thread, NULL);
    this->started = false;
    if (this->first == 0) server_stop(&this->local);
}

void ClusterHost_delete(ClusterHost *this) {
    if (!this) return;
    ClusterHost_finish(this);
    for (int i = 0; i < this->n_out; i++)
        MeasureResult_done(&this->out[i].mr);
    free(this->out);
    free(this->jobs);
    free(this->ranks);
    free(this->local_buf);
    free(this->bound);
    pthread_mutex_destroy(&this->lock);
    pthread_cond_destroy(&this->cond);
    free(this);
}

#endif
