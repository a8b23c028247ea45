/* kernels/targets/gpu_build.c: a device compile with a deadline on a helper
 * thread, and reading a built artifact back (see gpu_build.h).
 *
 * NVRTC and clBuildProgram offer no cancellation, and killing a thread inside
 * them would leak or corrupt their state. So the builder thread hands the
 * compile to a detached helper and waits on a condition variable with a
 * deadline; past it the builder reports BUILD_TIMEOUT and goes on, and the
 * helper, when the compiler finally returns, frees the job itself. The cost of
 * a timeout is one core busy until the compile ends: the straggler is reniced
 * to the lowest priority so that live compiles (and measurements) go first,
 * and the number of stragglers is counted and exposed. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kernels/targets/gpu_build.h"

typedef struct TimedJob {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done, abandoned;
    pid_t tid; /* the helper's thread id once it runs, for renicing */
    void (*work)(void *);
    void (*drop)(void *);
    void *arg;
} TimedJob;

static atomic_int abandoned_running;

/* At exit, an abandoned compile still running inside NVRTC or LLVM would meet
 * its library's static destructors and could crash the exiting process. So
 * the first abandon registers a handler (it runs before those destructors,
 * which were registered when the libraries loaded) that waits for the
 * stragglers, for a bounded time. */
static pthread_mutex_t straggler_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t straggler_cv = PTHREAD_COND_INITIALIZER;
static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;

static void wait_stragglers(void) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    pthread_mutex_lock(&straggler_mu);
    while (atomic_load(&abandoned_running) > 0)
        if (pthread_cond_timedwait(&straggler_cv, &straggler_mu, &deadline) == ETIMEDOUT) break;
    pthread_mutex_unlock(&straggler_mu);
}

static void register_atexit(void) { atexit(wait_stragglers); }

static void job_free(TimedJob *job) {
    pthread_mutex_destroy(&job->mu);
    pthread_cond_destroy(&job->cv);
    free(job);
}

static void *timed_main(void *p) {
    TimedJob *job = p;
    pthread_mutex_lock(&job->mu);
    job->tid = gettid();
    if (job->abandoned) setpriority(PRIO_PROCESS, (id_t)job->tid, 19);
    pthread_mutex_unlock(&job->mu);
    job->work(job->arg);
    pthread_mutex_lock(&job->mu);
    job->done = true;
    if (job->abandoned) {
        pthread_mutex_unlock(&job->mu);
        job->drop(job->arg);
        job_free(job);
        pthread_mutex_lock(&straggler_mu);
        atomic_fetch_sub(&abandoned_running, 1);
        pthread_cond_broadcast(&straggler_cv);
        pthread_mutex_unlock(&straggler_mu);
        return NULL;
    }
    pthread_cond_signal(&job->cv);
    pthread_mutex_unlock(&job->mu);
    return NULL;
}

bool Gpu_runTimed(void (*work)(void *arg), void (*drop)(void *arg), void *arg, double timeout_s) {
    TimedJob *job = calloc(1, sizeof *job);
    if (!job) abort();
    pthread_mutex_init(&job->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&job->cv, &ca);
    pthread_condattr_destroy(&ca);
    job->work = work, job->drop = drop, job->arg = arg;

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 16u << 20); /* compilers recurse deeply */
    pthread_t th;
    if (pthread_create(&th, &attr, timed_main, job) != 0) {
        /* No thread: compile here, without a deadline, rather than fail. */
        pthread_attr_destroy(&attr);
        job_free(job);
        work(arg);
        return true;
    }
    pthread_attr_destroy(&attr);

    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    if (timeout_s > 0) {
        double whole = floor(timeout_s);
        deadline.tv_sec += (time_t)whole;
        deadline.tv_nsec += (long)((timeout_s - whole) * 1e9);
        if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&job->mu);
    while (!job->done) {
        if (timeout_s <= 0) {
            pthread_cond_wait(&job->cv, &job->mu);
        } else if (pthread_cond_timedwait(&job->cv, &job->mu, &deadline) == ETIMEDOUT && !job->done) {
            job->abandoned = true;
            /* Linux nice values are per thread: only the straggler slows down. */
            if (job->tid > 0) setpriority(PRIO_PROCESS, (id_t)job->tid, 19);
            atomic_fetch_add(&abandoned_running, 1);
            pthread_mutex_unlock(&job->mu);
            pthread_once(&atexit_once, register_atexit);
            return false;
        }
    }
    pthread_mutex_unlock(&job->mu);
    job_free(job);
    return true;
}

int Gpu_abandonedRunning(void) { return atomic_load(&abandoned_running); }

void *Gpu_readFile(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    void *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)n);
            if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            }
            *len = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}
