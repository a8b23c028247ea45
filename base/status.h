/* base/status.h: the status convention shared by every library folder.
 *
 * Library code (space/, kernels/, records/, tuner/) never prints and never
 * exits: a function that can fail returns TT_OK or TT_ERR and, on TT_ERR,
 * writes one human sentence into the caller's error buffer (TT_ERRLEN bytes).
 * Only app/ and ui/ show these sentences to the user. */
#ifndef TT_BASE_STATUS_H
#define TT_BASE_STATUS_H

#include <stddef.h>

typedef enum { TT_OK = 0, TT_ERR = -1 } Status;

#define TT_ERRLEN 512

/* printf-style write of an error sentence into err (may be NULL); returns TT_ERR
 * so that callers can write `return tt_fail(err, "...", ...);`. */
Status tt_fail(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
