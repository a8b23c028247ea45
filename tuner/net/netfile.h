/* tuner/net/netfile.h: opening the files a network reads (ONNX models, their
 * external data, .pb and .npy tensors) safely: only regular files (a FIFO or
 * a device is refused instead of blocking or reading forever), with a size
 * limit, errors as one sentence naming the path. */
#ifndef TT_NET_NETFILE_H
#define TT_NET_NETFILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Opens path read-only without blocking and checks that it is a regular
 * file; *fd (close it) and its size in bytes. */
Status NetFile_open(const char *path, int *fd, int64_t *size, char *err);
/* The whole file in *data (malloc'd, free it; one NUL byte past the end) and
 * *len; TT_ERR when it is larger than max_bytes. */
Status NetFile_read(const char *path, int64_t max_bytes, void **data, size_t *len, char *err);
/* Reads exactly len bytes at offset (pread, retried on short reads). */
Status NetFile_readAt(int fd, int64_t offset, void *buf, size_t len, const char *path, char *err);
/* The folder of path as a malloc'd string ("." when it has none). */
char *NetFile_dir(const char *path);

#endif
