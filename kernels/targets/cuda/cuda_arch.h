/* kernels/targets/cuda/cuda_arch.h: device limits of NVIDIA architectures
 * without a device (the cuda target's offline_info). */
#ifndef TT_KERNELS_TARGETS_CUDA_CUDA_ARCH_H
#define TT_KERNELS_TARGETS_CUDA_CUDA_ARCH_H

#include "base/status.h"
#include "kernels/template.h"

/* The architecture used when none is given (Target.default_arch of cuda). */
#define CUDA_DEFAULT_ARCH "sm_90"

/* Fills the limits of an NVIDIA architecture of the table ("sm_70" ... "sm_90";
 * NULL or "" = CUDA_DEFAULT_ARCH) without a device; TT_ERR lists the known ones. */
Status CudaArch_info(const char *arch, DeviceInfo *out, char *err);

#endif
