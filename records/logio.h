/* records/logio.h: the one seam between the record log and the kernel.
 *
 * Every open, write, fsync and ftruncate the log writer makes (and the
 * recovery copy's) goes through these four functions, so that a test can make
 * the N-th of them fail the way a full disk, a file-size limit or a dying
 * device does, and check that no record is lost or invented. Outside tests
 * they are the plain system calls.
 */
#ifndef TT_RECORDS_LOGIO_H
#define TT_RECORDS_LOGIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

int LogIo_open(const char *path, int flags, mode_t mode);
ssize_t LogIo_write(int fd, const void *buf, size_t n);
int LogIo_fsync(int fd);
int LogIo_ftruncate(int fd, off_t len);

/* Fault injection (tests only). Counting from this call, the nth seam call
 * (1 = the next one) fails with errno `error` (ENOSPC, EIO, EFBIG, ...);
 * with short_write and a write, that call instead writes half of its bytes
 * and returns their count, and the call after it fails with `error`, as a
 * file system that fills up in the middle of a write does. Only that one call
 * fails; later calls work again (a fault the writer must not paper over).
 * nth <= 0 disarms. Thread-safe. A process started with the environment
 * variable TUNETOP_LOGIO_FAIL_AT=N (or N:short) has the same fault armed
 * from its first seam call (ENOSPC), for tests that drive the program. */
void LogIo_failAt(long nth, int error, bool short_write);
/* Seam calls since the last LogIo_failAt. */
long LogIo_calls(void);
/* Faults injected since the last LogIo_failAt (0 or 1, 2 for a short write). */
int LogIo_faults(void);

#endif
