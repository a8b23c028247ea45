/* kernels/targets/launch_plan.h: a GPU program of several kernels launched in
 * order (a tensor expression whose intermediate tensors live in scratch
 * buffers). The plan travels as the first line of the program's source, so
 * that the worker, which receives the source with every measurement, runs
 * what the generator meant:
 *
 *   / * tunetop launches: params A0 S120 A1; k0 4 1 1 64 1 1; k1 1 1 1 128 1 1 * /
 *
 * Every kernel takes the same parameters: A<i> is the task's argument i (the
 * inputs, then the output), S<n> a scratch buffer of n floats. Then each
 * kernel's entry, grid and block. A source without that line is one kernel
 * whose entry and shape come with the request. */
#ifndef TT_KERNELS_LAUNCH_PLAN_H
#define TT_KERNELS_LAUNCH_PLAN_H

#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"

#define PLAN_MAX_LAUNCHES 64
#define PLAN_MAX_PARAMS 64

typedef struct PlanLaunch {
    char entry[64];
    int64_t grid[3], block[3];
} PlanLaunch;

typedef struct LaunchPlan {
    int n_params;
    int param[PLAN_MAX_PARAMS];       /* >= 0: task argument; -1: scratch */
    int64_t scratch[PLAN_MAX_PARAMS]; /* floats of a scratch parameter */
    int n_launches;
    PlanLaunch launch[PLAN_MAX_LAUNCHES];
} LaunchPlan;

/* Appends the plan's line (with its newline). */
void LaunchPlan_format(const LaunchPlan *this, StrBuf *out);
/* 1 and *out filled when source starts with a plan line, 0 when it has none;
 * -1 and one sentence in err when the line is malformed. */
int LaunchPlan_parse(const char *source, LaunchPlan *out, char *err);

#endif
