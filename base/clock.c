#define _POSIX_C_SOURCE 200809L
#include "base/clock.h"

#include <time.h>

static double ts(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double clock_mono(void) { return ts(CLOCK_MONOTONIC); }
double clock_wall(void) { return ts(CLOCK_REALTIME); }
