/* kernels/targets/cuda/cuda_arch.h: device limits of NVIDIA architectures
 * without a device (the cuda target's offline_info). */
#ifndef TT_KERNELS_TARGETS_CUDA_CUDA_ARCH_H
#define TT_KERNELS_TARGETS_CUDA_CUDA_ARCH_H

#include "base/status.h"
#include "kernels/template.h"

/* Fills the limits of an NVIDIA architecture ("sm_70", "sm_75", "sm_80", "sm_86",
 * "sm_89", "sm_90"; NULL or "" = sm_90) without a device. */
Status Gpu_archInfo(const char *arch, DeviceInfo *out, char *err);

#endif
