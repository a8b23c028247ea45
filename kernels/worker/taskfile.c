/* kernels/worker/taskfile.c: writing and mapping the task file (see taskfile.h). */
#include "kernels/worker/taskfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"

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
    if (Workload_computeReference(wl, args, err) != TT_OK) goto out;

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

int WorkerTask_warm(const WorkerTask *this, double seconds) {
    volatile float sink = 0; /* the reads must happen */
    double t0 = clock_mono();
    int passes = 0;
    do {
        for (int a = 0; a < this->nargs; a++) {
            const float *p = this->args[a];
            float acc = 0;
            for (size_t i = 0; i < this->counts[a]; i += 64 / sizeof(float))
                acc += p[i];
            sink += acc;
        }
        passes++;
    } while (clock_mono() - t0 < seconds);
    (void)sink;
    return passes;
}

void WorkerTask_unmap(WorkerTask *this) {
    if (this->nargs > 0) free(this->args[this->nargs - 1]);
    if (this->map) munmap(this->map, this->map_len);
    memset(this, 0, sizeof *this);
}
