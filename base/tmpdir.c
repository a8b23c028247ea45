/* base/tmpdir.c: see tmpdir.h. */
#include "base/tmpdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_NAME ".session.lock"

const char *TmpDir_root(void) {
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

int TmpDir_lock(const char *dir) {
    char path[1024];
    snprintf(path, sizeof path, "%s/" LOCK_NAME, dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void TmpDir_remove(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* "tunetop-" then a mode ("cpu-") or nothing, then mkdtemp's 6 characters. */
static int is_session_folder(const char *name) {
    size_t n = strlen(name);
    return strncmp(name, "tunetop-", 8) == 0 && n >= 14 && (n == 14 || name[n - 7] == '-');
}

int TmpDir_sweepStale(const char *root) {
    DIR *d = opendir(root);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_session_folder(e->d_name)) continue;
        char dir[1024], lock[1100];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        snprintf(lock, sizeof lock, "%s/" LOCK_NAME, dir);
        int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_uid == getuid() && flock(fd, LOCK_EX | LOCK_NB) == 0) {
            TmpDir_remove(dir);
            removed++;
        }
        close(fd);
    }
    closedir(d);
    return removed;
}
