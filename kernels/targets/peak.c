/* kernels/targets/peak.c: see peak.h. */
#include "kernels/targets/peak.h"

#include <math.h>
#include <stdio.h>

double Device_peakEstimateGflops(const DeviceInfo *dev) {
    if (dev->cores > 0 && dev->vector_floats > 0) return dev->cores * dev->vector_floats * 2.0 * 4.0;
    if (dev->multiprocessors > 0) return dev->multiprocessors * 128 * 2.0 * 2.5;
    return 0;
}

bool Device_beyondPeak(const DeviceInfo *dev, double gflops, char *why, size_t n) {
    double peak = Device_peakEstimateGflops(dev);
    if (!(peak > 0)) return false;
    if (isfinite(gflops) && gflops <= PEAK_FLAG_MULTIPLE * peak) return false;
    snprintf(why, n,
             "%.1f GFLOPS is more than %gx the device's peak estimate (%.0f GFLOPS): a damaged or mis-measured "
             "record?",
             gflops, PEAK_FLAG_MULTIPLE, peak);
    return true;
}
