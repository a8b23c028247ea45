/* kernels/worker/reaper.c: see reaper.h. */
#include "kernels/worker/reaper.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

bool Reaper_become(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

/* The parent pid in /proc/PID/stat (after the command name's closing ')'). */
static long parent_of(const char *pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *close_paren = strrchr(buf, ')');
    long ppid = -1;
    if (!close_paren || sscanf(close_paren + 1, " %*c %ld", &ppid) != 1) return -1;
    return ppid;
}

/* Kills every child of this process; returns how many. */
static int kill_children(void) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    long self = (long)getpid();
    int killed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        if (parent_of(e->d_name) == self && kill((pid_t)atol(e->d_name), SIGKILL) == 0) killed++;
    }
    closedir(d);
    return killed;
}

int Reaper_killLeftovers(void) {
    int reaped = 0;
    for (int round = 0; round < 100; round++) {
        int killed = kill_children(); /* a zombie counts too: it is reaped below */
        int now = 0;
        while (waitpid(-1, NULL, WNOHANG) > 0)
            now++;
        reaped += now;
        if (!killed && !now && waitpid(-1, NULL, WNOHANG) < 0) break; /* no child left at all */
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);     /* orphans are reparented */
    }
    return reaped;
}
