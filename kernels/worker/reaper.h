/* kernels/worker/reaper.h: the worker side of "a kernel leaves nothing
 * behind". The worker makes itself a subreaper (PR_SET_CHILD_SUBREAPER), so
 * that a process a kernel started is reparented to it even after a double
 * fork and setsid (which escape the process-group kill of proc.c), and
 * after each request it kills and reaps every process still below it. */
#ifndef TT_KERNELS_WORKER_REAPER_H
#define TT_KERNELS_WORKER_REAPER_H

#include <stdbool.h>

/* Makes the calling process a subreaper; false when the kernel refuses. */
bool Reaper_become(void);
/* Kills (SIGKILL) and reaps every child of the calling process, again and
 * again as the orphans of the killed ones are reparented to it, until none
 * is left or about a second has passed. Returns how many it reaped. */
int Reaper_killLeftovers(void);

#endif
