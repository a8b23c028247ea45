/* app/opts.h: option value parsing shared by the subcommands; each writes an
 * error naming the option on failure. */
#ifndef TT_APP_OPTS_H
#define TT_APP_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "kernels/workload.h"

Status opt_int(const char *s, const char *name, long lo, long hi, int *out, char *err);
Status opt_double(const char *s, const char *name, double lo, double hi, double *out, char *err);
Status opt_u64(const char *s, const char *name, uint64_t *out, char *err);
Status opt_layout(const char *s, Layout *out, char *err);

#endif
