/* records/logio.c: see logio.h. */
#include "records/logio.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_long calls;
static atomic_long fail_at; /* call number that fails, 0 = none */
static atomic_int fail_errno;
static atomic_bool fail_short;
static atomic_int faults;

void LogIo_failAt(long nth, int error, bool short_write) {
    atomic_store(&calls, 0);
    atomic_store(&faults, 0);
    atomic_store(&fail_errno, error);
    atomic_store(&fail_short, short_write);
    atomic_store(&fail_at, nth > 0 ? nth : 0);
}

long LogIo_calls(void) { return atomic_load(&calls); }
int LogIo_faults(void) { return atomic_load(&faults); }

/* TUNETOP_LOGIO_FAIL_AT=N[:short]: the same fault, armed for a whole
 * process, so that a test can fail the N-th call of a real session. */
static void arm_from_env(void) {
    const char *v = getenv("TUNETOP_LOGIO_FAIL_AT");
    if (!v || !v[0]) return;
    char *end;
    long n = strtol(v, &end, 10);
    if (n > 0) LogIo_failAt(n, ENOSPC, end && strcmp(end, ":short") == 0);
}

/* True when this call is the one to fail (errno set). */
static bool inject(bool *short_now) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, arm_from_env);
    long n = atomic_fetch_add(&calls, 1) + 1;
    long at = atomic_load(&fail_at);
    if (!at || n != at) return false;
    if (short_now && atomic_load(&fail_short)) {
        *short_now = true;
        atomic_store(&fail_short, false);
        atomic_store(&fail_at, n + 1); /* the next call fails for real */
        atomic_fetch_add(&faults, 1);
        return false;
    }
    atomic_fetch_add(&faults, 1);
    errno = atomic_load(&fail_errno);
    return true;
}

int LogIo_open(const char *path, int flags, mode_t mode) {
    if (inject(NULL)) return -1;
    return open(path, flags, mode);
}

ssize_t LogIo_write(int fd, const void *buf, size_t n) {
    bool short_now = false;
    if (inject(&short_now)) return -1;
    if (short_now && n > 1) n /= 2;
    return write(fd, buf, n);
}

int LogIo_fsync(int fd) {
    if (inject(NULL)) return -1;
    return fsync(fd);
}

int LogIo_ftruncate(int fd, off_t len) {
    if (inject(NULL)) return -1;
    return ftruncate(fd, len);
}
