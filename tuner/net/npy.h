/* tuner/net/npy.h: numpy's .npy files (NEP 1, versions 1.0 and 2.0, C order,
 * little-endian), the inputs `run --model --input` reads and the outputs
 * `--output-dir` writes. */
#ifndef TT_NET_NPY_H
#define TT_NET_NPY_H

#include "base/status.h"
#include "tuner/net/nd.h"

/* Reads path into an empty t. TT_ERR (naming the file) for a file that is not
 * .npy, a Fortran-order array, a dtype tunetop has no type for, or data
 * shorter than the header says. */
Status Npy_read(const char *path, NdTensor *t, char *err);
/* Writes t as version 1.0 (header padded to 64 bytes). */
Status Npy_write(const char *path, const NdTensor *t, char *err);

#endif
