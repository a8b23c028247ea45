/* app/opts.c: see opts.h. */
#include "app/opts.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

/* The value as a message shows it: control characters escaped, so that
 * every message stays one line whatever the command line held. */
static const char *shown(const char *s, char *buf, size_t n) {
    size_t o = 0;
    for (; *s && o + 5 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n')
            o += (size_t)snprintf(buf + o, n - o, "\\n");
        else if (c < 0x20 || c == 0x7f)
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    if (*s && o + 4 <= n) o += (size_t)snprintf(buf + o, n - o, "...");
    buf[o < n ? o : n - 1] = '\0';
    return buf;
}

Status opt_int(const char *s, const char *name, long lo, long hi, int *out, char *err) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    char q[96];
    if (end == s || *end) return tt_fail(err, "%s: '%s' is not a whole number", name, shown(s, q, sizeof q));
    if (errno == ERANGE) return tt_fail(err, "%s: %s is out of range (%ld..%ld)", name, shown(s, q, sizeof q), lo, hi);
    if (v < lo || v > hi) return tt_fail(err, "%s: %ld is out of range (%ld..%ld)", name, v, lo, hi);
    *out = (int)v;
    return TT_OK;
}

Status opt_double(const char *s, const char *name, double lo, double hi, double *out, char *err) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    char q[96];
    if (end == s || *end) return tt_fail(err, "%s: '%s' is not a number", name, shown(s, q, sizeof q));
    if (errno == ERANGE && (v > 1 || v < -1))
        return tt_fail(err, "%s: %s is out of range (%g..%g)", name, shown(s, q, sizeof q), lo, hi);
    if (!(v >= lo && v <= hi)) return tt_fail(err, "%s: %g is out of range (%g..%g)", name, v, lo, hi);
    *out = v;
    return TT_OK;
}

Status opt_u64(const char *s, const char *name, uint64_t *out, char *err) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    char q[96];
    if (end == s || *end) return tt_fail(err, "%s: '%s' is not a whole number", name, shown(s, q, sizeof q));
    /* strtoull accepts "-1" (as 2^64-1): a minus sign is refused by name */
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++; /* what strtoull skips */
    if (*p == '-')
        return tt_fail(err, "%s: %s is negative (give a whole number from 0 to %llu)", name, shown(s, q, sizeof q),
                       ULLONG_MAX);
    if (errno == ERANGE)
        return tt_fail(err, "%s: %s is out of range (0..%llu)", name, shown(s, q, sizeof q), ULLONG_MAX);
    *out = v;
    return TT_OK;
}

Status opt_layout(const char *s, Layout *out, char *err) {
    if (strcasecmp(s, "NCHW") == 0)
        *out = LAYOUT_NCHW;
    else if (strcasecmp(s, "NHWC") == 0)
        *out = LAYOUT_NHWC;
    else {
        char q[96];
        return tt_fail(err, "--layout: '%s' is not a layout (NCHW or NHWC)", shown(s, q, sizeof q));
    }
    return TT_OK;
}
