/* tuner/net/netfile.c: regular files only, with a size limit (see netfile.h). */
#include "tuner/net/netfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

Status NetFile_open(const char *path, int *fd, int64_t *size, char *err) {
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) return tt_fail(err, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return tt_fail(err, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return tt_fail(err, "'%s' is not a regular file (a folder, FIFO or device is not read)", path);
    }
    *fd = f;
    *size = (int64_t)st.st_size;
    return TT_OK;
}

Status NetFile_readAt(int fd, int64_t offset, void *buf, size_t len, const char *path, char *err) {
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(offset + (int64_t)done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return tt_fail(err, "cannot read '%s': %s", path, strerror(errno));
        if (r == 0) return tt_fail(err, "'%s' ended after %lld of %zu bytes", path, (long long)done, len);
        done += (size_t)r;
    }
    return TT_OK;
}

Status NetFile_read(const char *path, int64_t max_bytes, void **data, size_t *len, char *err) {
    int fd;
    int64_t size;
    if (NetFile_open(path, &fd, &size, err) != TT_OK) return TT_ERR;
    if (size > max_bytes) {
        close(fd);
        return tt_fail(err, "'%s' has %lld bytes, more than the %lld this reader takes", path, (long long)size,
                       (long long)max_bytes);
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        close(fd);
        return tt_fail(err, "out of memory for the %lld bytes of '%s'", (long long)size, path);
    }
    Status st = NetFile_readAt(fd, 0, buf, (size_t)size, path, err);
    close(fd);
    if (st != TT_OK) {
        free(buf);
        return TT_ERR;
    }
    buf[size] = '\0';
    *data = buf;
    *len = (size_t)size;
    return TT_OK;
}

char *NetFile_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (slash == path) n = 1; /* "/model.onnx": the root */
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, slash ? path : ".", n);
    d[n] = '\0';
    return d;
}
