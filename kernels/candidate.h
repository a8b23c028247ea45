/* kernels/candidate.h: a candidate's kernel source from what a record keeps of
 * it, the one way there: the builder builds it, the UI's inspector shows it,
 * `run` links it and export writes it. The log never stores sources.
 *
 * An expression's schedule is written from the steps the record holds (te
 * tasks, for whatever template tuned them); anything else from the
 * template's choice vector. Library code: nothing here prints or exits. */
#ifndef TT_KERNELS_CANDIDATE_H
#define TT_KERNELS_CANDIDATE_H

#include "base/status.h"
#include "base/strbuf.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "space/space.h"

/* What a record keeps of a candidate. Nothing is owned: every pointer stays
 * with the caller and must outlive the call. */
typedef struct Candidate {
    const Template *tmpl;
    const Workload *wl;
    const Space *space;    /* the template's space over wl (what choice means); may be NULL with steps */
    const int32_t *choice; /* the template's knob values, n_choice of them */
    int n_choice;
    const char *steps; /* the schedule's steps as the record holds them (Steps_encode), or NULL */
} Candidate;

/* The source of candidate c for device dev in dialect into out (initialised by
 * the caller, KernelSource_done by the caller on success and on error). With
 * steps and an expression workload (OP_EXPR, loaded): the steps lowered and
 * emitted (C on a cpu template, dialect on a GPU one); else the template's
 * generate on the choice vector, which must have one value per knob. */
Status Candidate_source(const Candidate *c, const DeviceInfo *dev, Dialect dialect, KernelSource *out, char *err);

/* The loop nest of an expression candidate's steps (LoopNest_print) appended
 * to out; TT_ERR when c has no steps of a loaded expression, or they do not
 * lower. */
Status Candidate_loopNest(const Candidate *c, StrBuf *out, char *err);

#endif
