#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>

Status tt_fail(char *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, TT_ERRLEN, fmt, ap);
        va_end(ap);
    }
    return TT_ERR;
}
