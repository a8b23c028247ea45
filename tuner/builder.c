/* tuner/builder.c: see builder.h. */
#include "tuner/builder.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "kernels/candidate.h"

/* The compile cache: sources built in this pool's life, each with a copy of
 * its artifact (see builder.h). The text is kept whole and compared whole. */
typedef struct CacheEntry {
    char *source;
    size_t len;
    char entry[64];
    char path[256];     /* the pool's copy of the artifact */
    BuildResult result; /* resources; msg and path not used */
} CacheEntry;

#define CACHE_MAX_ENTRIES 1024
#define CACHE_MAX_BYTES ((size_t)64 << 20)

struct BuilderPool {
    CacheEntry *cache;
    int n_cache;
    size_t cache_bytes;
    atomic_int cache_hits;
    pthread_mutex_t cache_lock;
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

/* Copies the file from -> to (a new file); false on any failure (to is removed). */
static bool copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0) return false;
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
    bool ok = out >= 0;
    char buf[1 << 16];
    while (ok) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        for (ssize_t w = 0; ok && w < n;) {
            ssize_t k = write(out, buf + w, (size_t)(n - w));
            if (k < 0 && errno == EINTR) continue;
            ok = k > 0;
            w += k > 0 ? k : 0;
        }
    }
    close(in);
    if (out >= 0 && close(out) != 0) ok = false;
    if (!ok && out >= 0) unlink(to);
    return ok;
}

/* The artifact's name in the work directory: NAME.EXT with EXT from like. */
static void artifact_path(const BuilderPool *this, const char *name, uint64_t tag, const char *like, char *out,
                          size_t cap) {
    const char *slash = strrchr(like, '/');
    const char *dot = strrchr(slash ? slash : like, '.');
    snprintf(out, cap, "%s/%s%llu%s", this->workdir, name, (unsigned long long)tag, dot ? dot : "");
}

static bool same_source(const CacheEntry *e, const KernelSource *src, size_t len) {
    return e->len == len && strcmp(e->entry, src->entry) == 0 && memcmp(e->source, src->source, len) == 0;
}

/* A source built before: a copy of its artifact, with its resources. */
static bool cache_take(BuilderPool *this, const KernelSource *src, BuildResult *out) {
    size_t len = strlen(src->source);
    char from[256] = "";
    BuildResult res;
    memset(&res, 0, sizeof res);
    pthread_mutex_lock(&this->cache_lock);
    for (int i = 0; i < this->n_cache; i++)
        if (same_source(&this->cache[i], src, len)) {
            snprintf(from, sizeof from, "%s", this->cache[i].path);
            res = this->cache[i].result;
            break;
        }
    pthread_mutex_unlock(&this->cache_lock);
    if (!from[0]) return false;
    char to[256];
    artifact_path(this, "c", atomic_fetch_add(&this->tag, 1), from, to, sizeof to);
    if (!copy_file(from, to)) return false;
    out->error_no = ERR_NO_ERROR;
    snprintf(out->path, sizeof out->path, "%s", to);
    out->regs_per_thread = res.regs_per_thread;
    out->spill_bytes = res.spill_bytes;
    out->shared_bytes = res.shared_bytes;
    out->local_bytes = res.local_bytes;
    atomic_fetch_add(&this->cache_hits, 1);
    return true;
}

/* Keeps a copy of a successful build's artifact for the same source later. */
static void cache_put(BuilderPool *this, const KernelSource *src, const BuildResult *built) {
    size_t len = strlen(src->source);
    pthread_mutex_lock(&this->cache_lock);
    bool room = this->n_cache < CACHE_MAX_ENTRIES && this->cache_bytes + len <= CACHE_MAX_BYTES;
    for (int i = 0; room && i < this->n_cache; i++)
        if (same_source(&this->cache[i], src, len)) room = false; /* built twice at once */
    pthread_mutex_unlock(&this->cache_lock);
    if (!room) return;
    CacheEntry e;
    memset(&e, 0, sizeof e);
    artifact_path(this, "cache", atomic_fetch_add(&this->tag, 1), built->path, e.path, sizeof e.path);
    if (!copy_file(built->path, e.path)) return;
    e.source = tt_strndup(src->source, len);
    e.len = len;
    snprintf(e.entry, sizeof e.entry, "%s", src->entry);
    e.result = *built;
    e.result.msg = NULL;
    e.result.path[0] = '\0';
    pthread_mutex_lock(&this->cache_lock);
    if (this->n_cache < CACHE_MAX_ENTRIES) {
        this->cache[this->n_cache++] = e;
        this->cache_bytes += len;
        e.source = NULL;
    }
    pthread_mutex_unlock(&this->cache_lock);
    if (e.source) { /* another thread filled the last place */
        unlink(e.path);
        free(e.source);
    }
}

static void build_one(BuilderPool *this, BuildJob *job) {
    const Task *t = job->task;
    char err[TT_ERRLEN] = "";
    double t0 = clock_mono();
    Dialect d = this->target->dialect;
    Candidate c = {
        .tmpl = t->tmpl, .wl = &t->wl, .space = &t->space, .choice = job->choice, .n_choice = t->space.n_knobs};
    if (Candidate_source(&c, this->dev, d, &job->src, err) != TT_OK) {
        job->result.error_no = ERR_INSTANTIATION;
        job->result.msg = tt_strdup(err[0] ? err : "template could not generate this config");
        job->result.build_s = clock_mono() - t0;
        return;
    }
    if (job->src.source && cache_take(this, &job->src, &job->result)) {
        job->result.build_s = clock_mono() - t0;
        return;
    }
    uint64_t tag = atomic_fetch_add(&this->tag, 1);
    this->target->build(&job->src, this->dev, this->opt, this->workdir, tag, &job->result);
    if (job->src.source && job->result.error_no == ERR_NO_ERROR && job->result.path[0])
        cache_put(this, &job->src, &job->result);
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
    this->cache = tt_calloc(CACHE_MAX_ENTRIES, sizeof(CacheEntry));
    pthread_mutex_init(&this->cache_lock, NULL);
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

int BuilderPool_cacheHits(BuilderPool *this) { return atomic_load(&this->cache_hits); }

void BuilderPool_delete(BuilderPool *this) {
    if (!this) return;
    pthread_mutex_lock(&this->lock);
    this->quit = 1;
    pthread_cond_broadcast(&this->work);
    pthread_mutex_unlock(&this->lock);
    for (int i = 0; i < this->n_threads; i++)
        pthread_join(this->threads[i], NULL);
    for (int i = 0; i < this->n_cache; i++) {
        unlink(this->cache[i].path);
        free(this->cache[i].source);
    }
    free(this->cache);
    pthread_mutex_destroy(&this->cache_lock);
    pthread_mutex_destroy(&this->lock);
    pthread_cond_destroy(&this->work);
    pthread_cond_destroy(&this->done);
    free(this->threads);
    free(this);
}
