/* app/device.c: see device.h. */
#include "app/device.h"

#include <stdio.h>
#include <string.h>

const char *app_target_names(void) { return "cpu, cuda, opencl"; }

Status app_resolve_device(const char *target_name, const char *arch, bool allow_offline, const Target **target,
                          DeviceInfo *dev, char *err) {
    const Target *t = Target_find(target_name);
    if (!t) return tt_fail(err, "unknown target '%s' (choose from: %s)", target_name, app_target_names());
    *target = t;
    memset(dev, 0, sizeof *dev);
    char why[TT_ERRLEN] = "";
    /* A present device wins, except when the user asks for an architecture's
     * limits in an offline (compile-only) session. */
    bool probed = t->probe(dev, why) == TT_OK;
    if (probed && !(allow_offline && arch && t->offline_info)) return TT_OK;
    if (allow_offline && t->offline_info) {
        memset(dev, 0, sizeof *dev);
        char why2[TT_ERRLEN] = "";
        if (t->offline_info(arch, dev, why2) == TT_OK) {
            dev->present = false;
            return TT_OK;
        }
        return tt_fail(err, "%s: %s", t->name, why2);
    }
    if (probed) return TT_OK;
    if (t->offline_info)
        return tt_fail(err, "%s: %s; measure with --target cpu or --target opencl, or add --compile-only to "
                            "build candidates against the limits of --arch (default sm_90) without running them",
                       t->name, why);
    return tt_fail(err, "%s: %s; use --target cpu", t->name, why);
}
