/* tests/unit/test_reaper.c: the measurement worker's subreaper
 * (kernels/worker/reaper.h): processes a kernel started and left behind,
 * even in a session of their own (setsid) and orphaned, come back to the
 * worker and are killed, so none outlives the request. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/worker/reaper.h"
#include "tests/check.h"

TEST(orphans_of_a_kernel_in_their_own_session_are_killed) {
    CHECK(Reaper_become());
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t kernel = fork();
    if (kernel == 0) { /* a kernel that starts 3 processes in a new session, then ends */
        setsid();
        for (int i = 0; i < 3; i++)
            if (fork() == 0) {
                close(pipefd[0]);
                for (;;)
                    pause();
            }
        _exit(0);
    }
    close(pipefd[1]);
    CHECK(waitpid(kernel, NULL, 0) == kernel);
    /* the 3 were orphaned: as a subreaper, this process is their parent now */
    CHECK_EQ_INT(Reaper_killLeftovers(), 3);
    CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD); /* none left */
    char c;
    CHECK(read(pipefd[0], &c, 1) == 0); /* every holder of the pipe's write end is gone */
    close(pipefd[0]);
    CHECK_EQ_INT(Reaper_killLeftovers(), 0); /* nothing to do */
}

int main(void) {
    RUN(orphans_of_a_kernel_in_their_own_session_are_killed);
    return check_summary();
}
