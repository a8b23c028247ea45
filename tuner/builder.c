/* tuner/builder.c: see builder.h. */
#include "tuner/builder.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"

struct BuilderPool {
    pthread_mutex_t lock;
    pthread_cond_t work; /* jobs available or quitting */
    pthread_cond_t done; /* a job finished */
    BuildJob *jobs;
    int n_jobs;
    int next;     /* next job to take */
    int finished; /* jobs finished in this batch */
    const atomic_bool *cancel;
    atomic_int active;
    int quit;
    int n_threads;
    pthread_t *threads;
    const Target *target;
    const DeviceInfo *dev;
    const MeasureOptions *opt;
    const char *workdir;
    atomic_uint_fast64_t tag;
};

void BuildJob_init(BuildJob *this, const Task *task, uint64_t index) {
    memset(this, 0, sizeof *this);
    this->task = task;
    this->index = index;
    Space_decode(&task->space, index, this->choice);
    KernelSource_init(&this->src);
    BuildResult_init(&this->result);
}

void BuildJob_done(BuildJob *this) {
    KernelSource_done(&this->src);
    BuildResult_done(&this->result);
}

static void build_one(BuilderPool *this, BuildJob *job) {
    const Task *t = job->task;
    char err[TT_ERRLEN] = "";
    double t0 = clock_mono();
    Dialect d = this->target->dialect;
    if (t->tmpl->generate(&t->wl, &t->space, job->choice, this->dev, d, &job->src, err) != TT_OK) {
        job->result.error_no = ERR_INSTANTIATION;
        job->result.msg = tt_strdup(err[0] ? err : "template could not generate this config");
        job->result.build_s = clock_mono() - t0;
        return;
    }
    uint64_t tag = atomic_fetch_add(&this->tag, 1);
    this->target->build(&job->src, this->dev, this->opt, this->workdir, tag, &job->result);
    job->result.build_s = clock_mono() - t0;
}

static void *worker(void *arg) {
    BuilderPool *this = arg;
    /* Only the main thread takes signals (Ctrl-C is the session's business). */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&this->lock);
    for (;;) {
        while (!this->quit && this->next >= this->n_jobs)
            pthread_cond_wait(&this->work, &this->lock);
        if (this->quit) break;
        BuildJob *job = &this->jobs[this->next++];
        if (this->cancel && atomic_load(this->cancel)) {
            job->skipped = true;
            this->finished++;
            pthread_cond_broadcast(&this->done);
            continue;
        }
        atomic_fetch_add(&this->active, 1);
        pthread_mutex_unlock(&this->lock);
        build_one(this, job);
        pthread_mutex_lock(&this->lock);
        atomic_fetch_sub(&this->active, 1);
        this->finished++;
        pthread_cond_broadcast(&this->done);
    }
    pthread_mutex_unlock(&this->lock);
    return NULL;
}

BuilderPool *BuilderPool_new(int threads, const Target *target, const DeviceInfo *dev, const MeasureOptions *opt,
                             const char *workdir) {
    BuilderPool *this = calloc(1, sizeof *this);
    if (!this) abort();
    pthread_mutex_init(&this->lock, NULL);
    pthread_cond_init(&this->work, NULL);
    pthread_cond_init(&this->done, NULL);
    this->target = target;
    this->dev = dev;
    this->opt = opt;
    this->workdir = workdir;
    this->n_threads = threads < 1 ? 1 : threads;
    this->threads = calloc((size_t)this->n_threads, sizeof(pthread_t));
    if (!this->threads) abort();
    for (int i = 0; i < this->n_threads; i++)
        pthread_create(&this->threads[i], NULL, worker, this);
    return this;
}

void BuilderPool_run(BuilderPool *this, BuildJob *jobs, int n, const atomic_bool *cancel) {
    pthread_mutex_lock(&this->lock);
    this->cancel = cancel;
    this->jobs = jobs;
    this->n_jobs = n;
    this->next = 0;
    this->finished = 0;
    pthread_cond_broadcast(&this->work);
    while (this->finished < n)
        pthread_cond_wait(&this->done, &this->lock);
    this->jobs = NULL;
    this->n_jobs = 0;
    this->next = 0;
    pthread_mutex_unlock(&this->lock);
}

int BuilderPool_threads(const BuilderPool *this) { return this->n_threads; }

int BuilderPool_active(BuilderPool *this) { return atomic_load(&this->active); }

void BuilderPool_delete(BuilderPool *this) {
    if (!this) return;
    pthread_mutex_lock(&this->lock);
    this->quit = 1;
    pthread_cond_broadcast(&this->work);
    pthread_mutex_unlock(&this->lock);
    for (int i = 0; i < this->n_threads; i++)
        pthread_join(this->threads[i], NULL);
    pthread_mutex_destroy(&this->lock);
    pthread_cond_destroy(&this->work);
    pthread_cond_destroy(&this->done);
    free(this->threads);
    free(this);
}
