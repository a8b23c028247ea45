/* app/opts.c: see opts.h. */
#include "app/opts.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>

Status opt_int(const char *s, const char *name, long lo, long hi, int *out, char *err) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) return tt_fail(err, "%s: '%s' is not a whole number", name, s);
    if (v < lo || v > hi) return tt_fail(err, "%s: %ld is out of range (%ld..%ld)", name, v, lo, hi);
    *out = (int)v;
    return TT_OK;
}

Status opt_double(const char *s, const char *name, double lo, double hi, double *out, char *err) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) return tt_fail(err, "%s: '%s' is not a number", name, s);
    if (!(v >= lo && v <= hi)) return tt_fail(err, "%s: %g is out of range (%g..%g)", name, v, lo, hi);
    *out = v;
    return TT_OK;
}

Status opt_u64(const char *s, const char *name, uint64_t *out, char *err) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') return tt_fail(err, "%s: '%s' is not a whole number", name, s);
    *out = v;
    return TT_OK;
}

Status opt_layout(const char *s, Layout *out, char *err) {
    if (strcasecmp(s, "NCHW") == 0) *out = LAYOUT_NCHW;
    else if (strcasecmp(s, "NHWC") == 0) *out = LAYOUT_NHWC;
    else return tt_fail(err, "--layout: '%s' is not a layout (NCHW or NHWC)", s);
    return TT_OK;
}
