/* app/opts.c: see opts.h. */
#include "app/opts.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <strings.h>

Status opt_int(const char *s, const char *name, long lo, long hi, int *out, char *err) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end) return tt_fail(err, "%s: '%s' is not a whole number", name, s);
    if (errno == ERANGE) return tt_fail(err, "%s: %s is out of range (%ld..%ld)", name, s, lo, hi);
    if (v < lo || v > hi) return tt_fail(err, "%s: %ld is out of range (%ld..%ld)", name, v, lo, hi);
    *out = (int)v;
    return TT_OK;
}

Status opt_double(const char *s, const char *name, double lo, double hi, double *out, char *err) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end) return tt_fail(err, "%s: '%s' is not a number", name, s);
    if (errno == ERANGE && (v > 1 || v < -1)) return tt_fail(err, "%s: %s is out of range (%g..%g)", name, s, lo, hi);
    if (!(v >= lo && v <= hi)) return tt_fail(err, "%s: %g is out of range (%g..%g)", name, v, lo, hi);
    *out = v;
    return TT_OK;
}

Status opt_u64(const char *s, const char *name, uint64_t *out, char *err) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end) return tt_fail(err, "%s: '%s' is not a whole number", name, s);
    /* strtoull accepts "-1" (as 2^64-1): a minus sign is refused by name */
    const char *p = s;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '-') return tt_fail(err, "%s: %s is negative (give a whole number from 0 to %llu)", name, s, ULLONG_MAX);
    if (errno == ERANGE) return tt_fail(err, "%s: %s is out of range (0..%llu)", name, s, ULLONG_MAX);
    *out = v;
    return TT_OK;
}

Status opt_layout(const char *s, Layout *out, char *err) {
    if (strcasecmp(s, "NCHW") == 0) *out = LAYOUT_NCHW;
    else if (strcasecmp(s, "NHWC") == 0) *out = LAYOUT_NHWC;
    else return tt_fail(err, "--layout: '%s' is not a layout (NCHW or NHWC)", s);
    return TT_OK;
}
