/* kernels/candidate.c: a candidate's kernel source (see candidate.h). */
#include "kernels/candidate.h"

#include "kernels/templates/te/te_lower.h"
#include "kernels/templates/te/te_task.h"
#include "space/steps.h"

static bool replays_steps(const Candidate *c) { return c->steps && c->wl->op == OP_EXPR && c->wl->expr; }

Status Candidate_source(const Candidate *c, const DeviceInfo *dev, Dialect dialect, KernelSource *out, char *err) {
    if (replays_steps(c)) {
        Steps steps;
        if (Steps_decode(c->steps, &steps, err) != TT_OK) return TT_ERR;
        return c->tmpl->family == FAMILY_GPU ? TeTask_source_gpu(c->wl->expr, &steps, dialect, out, err)
                                             : TeTask_source(c->wl->expr, &steps, out, err);
    }
    if (!c->space || c->n_choice != c->space->n_knobs)
        return tt_fail(err, "record has %d knobs, the template's space has %d", c->n_choice,
                       c->space ? c->space->n_knobs : 0);
    return c->tmpl->generate(c->wl, c->space, c->choice, dev, dialect, out, err);
}

Status Candidate_loopNest(const Candidate *c, StrBuf *out, char *err) {
    if (!replays_steps(c)) return tt_fail(err, "no steps of a loaded expression");
    Steps steps;
    LoopNest ln;
    if (Steps_decode(c->steps, &steps, err) != TT_OK || LoopNest_lower(&ln, &c->wl->expr->dag, &steps, err) != TT_OK)
        return TT_ERR;
    LoopNest_print(&ln, out);
    LoopNest_done(&ln);
    return TT_OK;
}
