/* base/numfmt.h: numbers to text, fast, for output written a million times
 * (tunetop dump). Each function writes exactly what the printf form named in
 * its comment writes (so the text does not depend on which one ran), NUL
 * terminated, and returns its length. */
#ifndef TT_BASE_NUMFMT_H
#define TT_BASE_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

/* snprintf "%.15g" when that reads back (strtod) as exactly v, else "%.17g":
 * the shortest of the two that keeps the double. v finite. out: 32 bytes. */
size_t NumFmt_double(char *out, double v);
/* snprintf "%.*g" with precision 15 or 17. out: 32 bytes. */
size_t NumFmt_g(char *out, double v, int precision);
/* "%" PRIu64 / "%" PRId64. out: 24 bytes. */
size_t NumFmt_u64(char *out, uint64_t v);
size_t NumFmt_i64(char *out, int64_t v);

#endif
