/* tests/unit/test_tmpdir.c: the temporary folders of dead sessions are
 * removed at start (base/tmpdir.h), and only those: a live session's folder
 * (its lock held), a folder without the lock file and one of another name
 * stay. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tmpdir.h"
#include "tests/check.h"

static char root[64];

static const char *folder(const char *name) {
    static char buf[8][160];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 160, "%s/%s", root, name);
    return p;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

TEST(stale_folders_of_dead_sessions_are_removed_and_only_those) {
    /* a session that died: its lock was taken, then dropped with its descriptor */
    const char *dead = folder("tunetop-AbC123"), *dead_runner = folder("tunetop-cpu-XyZ789");
    const char *live = folder("tunetop-LiVe01"), *unlocked = folder("tunetop-NoLk01"), *other = folder("other-Abc123");
    const char *all[] = {dead, dead_runner, live, unlocked, other};
    for (int i = 0; i < 5; i++)
        CHECK(mkdir(all[i], 0700) == 0);
    for (int i = 0; i < 2; i++) {
        int fd = TmpDir_lock(all[i]);
        CHECK(fd >= 0);
        char kernel[200];
        snprintf(kernel, sizeof kernel, "%s/sub", all[i]);
        mkdir(kernel, 0700); /* what a kernel left, nested */
        strcat(kernel, "/k.so");
        FILE *f = fopen(kernel, "w");
        fputs("x", f);
        fclose(f);
        close(fd); /* the process died */
    }
    int live_fd = TmpDir_lock(live);
    CHECK(live_fd >= 0);
    CHECK(TmpDir_lock(live) == -1); /* held: a second taker fails */
    CHECK_EQ_INT(TmpDir_sweepStale(root), 2);
    CHECK(!exists(dead) && !exists(dead_runner));
    CHECK(exists(live) && exists(unlocked) && exists(other));
    close(live_fd);
    CHECK_EQ_INT(TmpDir_sweepStale(root), 1); /* the live session ended without removing it */
    CHECK(!exists(live));
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/tt_tmpdir_XXXXXX");
    if (!mkdtemp(root)) return 1;
    RUN(stale_folders_of_dead_sessions_are_removed_and_only_those);
    TmpDir_remove(root);
    return check_summary();
}
