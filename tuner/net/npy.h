/* tuner/net/npy.h: numpy's .npy files (NEP 1: format versions 1.0 to 3.0 read,
 * 1.0 written), for `run --input NAME=FILE.npy` and `--output-dir`.
 *
 * Types: '<f4' '<f8' '<f2' '<i8' '<i4' '<i2' '|i1' '<u8' '<u4' '<u2' '|u1'
 * '|b1' (and '=' or '|' for native order where it means the same). C order
 * only: a Fortran-order array is refused, as is any other dtype. Errors are
 * one sentence naming the file. */
#ifndef TT_NET_NPY_H
#define TT_NET_NPY_H

#include "base/status.h"
#include "tuner/net/nd.h"

/* Reads path into an empty t (allocated here; NdTensor_free it). */
Status Npy_read(const char *path, NdTensor *t, char *err);
Status Npy_readMemory(const void *data, size_t len, const char *what, NdTensor *t, char *err);
/* Writes t to path (version 1.0, header padded to 64 bytes). bfloat16 has
 * no numpy type and is refused. */
Status Npy_write(const char *path, const NdTensor *t, char *err);

#endif
