/* kernels/targets/launch_plan.c: see launch_plan.h. */
#include "kernels/targets/launch_plan.h"

#include <stdio.h>
#include <string.h>

#define PLAN_TAG "/* tunetop launches: params"

void LaunchPlan_format(const LaunchPlan *this, StrBuf *out) {
    StrBuf_append(out, PLAN_TAG);
    for (int i = 0; i < this->n_params; i++)
        if (this->param[i] >= 0)
            StrBuf_printf(out, " A%d", this->param[i]);
        else
            StrBuf_printf(out, " S%lld", (long long)this->scratch[i]);
    for (int k = 0; k < this->n_launches; k++) {
        const int64_t *g = this->launch[k].grid, *b = this->launch[k].block;
        StrBuf_printf(out, "; %s %lld %lld %lld %lld %lld %lld", this->launch[k].entry, (long long)g[0],
                      (long long)g[1], (long long)g[2], (long long)b[0], (long long)b[1], (long long)b[2]);
    }
    StrBuf_append(out, " */\n");
}

int LaunchPlan_parse(const char *source, LaunchPlan *out, char *err) {
    memset(out, 0, sizeof *out);
    if (strncmp(source, PLAN_TAG, strlen(PLAN_TAG)) != 0) return 0;
    const char *p = source + strlen(PLAN_TAG);
    const char *end = strstr(p, " */");
    if (!end) return tt_fail(err, "launch plan: no end of the line"), -1;
    while (p < end && *p == ' ') {
        char kind;
        long long v;
        int used;
        if (sscanf(p, " %c%lld%n", &kind, &v, &used) != 2 || (kind != 'A' && kind != 'S') || v < 0 ||
            out->n_params == PLAN_MAX_PARAMS)
            break;
        out->param[out->n_params] = kind == 'A' ? (int)v : -1;
        out->scratch[out->n_params++] = kind == 'S' ? v : 0;
        p += used;
    }
    while (p < end && *p == ';') {
        if (out->n_launches == PLAN_MAX_LAUNCHES) return tt_fail(err, "launch plan: too many kernels"), -1;
        PlanLaunch *l = &out->launch[out->n_launches++];
        long long g[3], b[3];
        int used = 0;
        if (sscanf(p, "; %63s %lld %lld %lld %lld %lld %lld%n", l->entry, &g[0], &g[1], &g[2], &b[0], &b[1], &b[2],
                   &used) != 7 ||
            used == 0)
            return tt_fail(err, "launch plan: kernel %d is not 'entry g0 g1 g2 b0 b1 b2'", out->n_launches - 1), -1;
        for (int a = 0; a < 3; a++)
            l->grid[a] = g[a], l->block[a] = b[a];
        p += used;
    }
    if (p != end || out->n_params == 0 || out->n_launches == 0)
        return tt_fail(err, "launch plan: cannot read '%.*s'", (int)(end - source), source), -1;
    return 1;
}
