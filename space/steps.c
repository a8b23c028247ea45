/* space/steps.c: see steps.h. */
#include "space/steps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[STEP_KINDS] = {
    "split",  "reorder",     "fuse", "compute_at",  "compute_inline", "compute_root",  "parallel", "vectorize",
    "unroll", "auto_unroll", "bind", "cache_write", "cache_read",     "storage_align", "rfactor"};
/* fewest and most arguments of each kind */
static const int MIN_ARGS[STEP_KINDS] = {2, 1, 2, 2, 0, 0, 1, 1, 1, 2, 2, 0, 2, 3, 2};
static const int MAX_ARGS[STEP_KINDS] = {STEP_MAX_ARGS, STEP_MAX_ARGS, 2, 2, 0, 0, 1, 1, 1, 2, 2, 0, 3, 3, 2};

const char *StepKind_name(StepKind k) { return k >= 0 && k < STEP_KINDS ? NAMES[k] : "?"; }

Status Steps_add(Steps *this, StepKind kind, int stage, const int64_t *args, int n_args, char *err) {
    if (this->n == STEPS_MAX) return tt_fail(err, "more than %d steps", STEPS_MAX);
    if (n_args < MIN_ARGS[kind] || n_args > MAX_ARGS[kind])
        return tt_fail(err, "step %d (%s): %d arguments, expected %d..%d", this->n, NAMES[kind], n_args, MIN_ARGS[kind],
                       MAX_ARGS[kind]);
    Step *s = &this->step[this->n++];
    s->kind = kind;
    s->stage = stage;
    s->n_args = n_args;
    for (int i = 0; i < n_args; i++)
        s->arg[i] = args[i];
    return TT_OK;
}

void Steps_encode(const Steps *this, StrBuf *out) {
    for (int i = 0; i < this->n; i++) {
        const Step *s = &this->step[i];
        StrBuf_printf(out, "%s%s %d", i ? "; " : "", NAMES[s->kind], s->stage);
        for (int a = 0; a < s->n_args; a++)
            StrBuf_printf(out, " %lld", (long long)s->arg[a]);
    }
}

Status Steps_decode(const char *text, Steps *out, char *err) {
    out->n = 0;
    const char *p = text;
    while (*p == ' ')
        p++;
    if (!*p) return TT_OK;
    for (int idx = 0;; idx++) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ;");
        int kind = -1;
        for (int k = 0; k < STEP_KINDS; k++)
            if (strlen(NAMES[k]) == n && strncmp(p, NAMES[k], n) == 0) kind = k;
        if (kind < 0) return tt_fail(err, "step %d: unknown step '%.*s'", idx, (int)n, p);
        p += n;
        int64_t v[STEP_MAX_ARGS + 1];
        int nv = 0;
        for (;;) {
            while (*p == ' ')
                p++;
            if (!*p || *p == ';') break;
            char *end;
            errno = 0;
            long long x = strtoll(p, &end, 10);
            if (end == p || errno || (*end && *end != ' ' && *end != ';'))
                return tt_fail(err, "step %d (%s): '%.*s' is not a whole number", idx, NAMES[kind],
                               (int)strcspn(p, " ;"), p);
            if (nv == STEP_MAX_ARGS + 1) return tt_fail(err, "step %d (%s): too many arguments", idx, NAMES[kind]);
            v[nv++] = x;
            p = end;
        }
        if (nv < 1) return tt_fail(err, "step %d (%s): no stage", idx, NAMES[kind]);
        if (v[0] < 0 || v[0] > 1000)
            return tt_fail(err, "step %d (%s): stage %lld is out of range", idx, NAMES[kind], (long long)v[0]);
        if (Steps_add(out, (StepKind)kind, (int)v[0], v + 1, nv - 1, err)) return TT_ERR;
        if (!*p) return TT_OK;
        p++; /* ; */
    }
}
