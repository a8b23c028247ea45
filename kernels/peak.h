/* kernels/peak.h: a bound on what a device can compute, to flag a best that
 * no real kernel reaches (a damaged or mis-measured record, a broken timer).
 *
 * Until measured peaks exist, the peak is estimated from the device's shape:
 * a CPU core does one FMA (2 flops) per SIMD lane per cycle at 4 GHz, a GPU
 * compute unit 128 FMA lanes at 2.5 GHz. A best above PEAK_FLAG_MULTIPLE (2)
 * times that estimate is flagged by `best` and the UI: the multiple covers
 * cores with two FMA units and any clock below 8 GHz, so no real kernel is
 * flagged (here: 2 cores x 16 floats x 2 x 4 GHz = 256, flagged above 512;
 * the machine's measured peak is about 231).
 * Device_peakEstimateGflops is the one function to swap for measured figures
 * (`tunetop devices` measuring each target's peak). */
#ifndef TT_KERNELS_PEAK_H
#define TT_KERNELS_PEAK_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/template.h"

#define PEAK_FLAG_MULTIPLE 2.0

/* FP32 GFLOPS the device cannot exceed; 0 when its shape is unknown. */
double Device_peakEstimateGflops(const DeviceInfo *dev);

/* True when gflops is more than PEAK_FLAG_MULTIPLE x the estimate; then
 * `why` (n bytes) says so with both figures. */
bool Device_beyondPeak(const DeviceInfo *dev, double gflops, char *why, size_t n);

#endif
