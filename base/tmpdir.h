/* base/tmpdir.h: the temporary folders a session makes (its work directory,
 * a runner's directory), and removing those of sessions that died.
 *
 * A session makes each folder with mkdtemp as PREFIX-XXXXXX under $TMPDIR (or
 * /tmp) and holds a flock on a lock file inside it for as long as it lives.
 * The kernel drops the lock when the process dies, kill -9 included, so a
 * later session that finds a tunetop-* folder whose lock it can take knows
 * that its owner is gone, and removes it. Folders without the lock file (of
 * another program, or of an older tunetop) are never touched.
 */
#ifndef TT_BASE_TMPDIR_H
#define TT_BASE_TMPDIR_H

#include <stddef.h>

/* $TMPDIR, or /tmp when it is unset or empty. */
const char *TmpDir_root(void);
/* Takes the lock of the folder dir (creating its lock file): the descriptor
 * to keep open while the folder is in use (close it after removing the
 * folder), or -1 when the lock cannot be had. */
int TmpDir_lock(const char *dir);
/* Removes dir and everything in it (no symbolic link is followed). */
void TmpDir_remove(const char *dir);
/* Removes the tunetop-* folders of root whose lock no process holds; returns
 * how many it removed. */
int TmpDir_sweepStale(const char *root);

#endif
