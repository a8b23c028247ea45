/* app/device.h: turning --target / --arch / --compile-only into a Target and
 * a DeviceInfo, with the one-line messages users see when a device is missing. */
#ifndef TT_APP_DEVICE_H
#define TT_APP_DEVICE_H

#include <stdbool.h>

#include "base/status.h"
#include "kernels/target.h"

/* Finds the target and its device. Without a device: for offline-capable
 * targets with allow_offline (compile-only, listing), the limits of `arch`
 * (NULL = the target's default); otherwise TT_ERR with the reason and a
 * suggestion. */
Status app_resolve_device(const char *target_name, const char *arch, bool allow_offline, const Target **target,
                          DeviceInfo *dev, char *err);

/* The default --arch of the targets that have one: "sm_90 for cuda" (from the
 * target table; main thread only, like all of app/). */
const char *app_arch_defaults(void);

#endif
