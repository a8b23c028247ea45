/* app/device.c: see device.h. */
#include "app/device.h"

#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"

const char *app_arch_defaults(void) {
    static char list[128];
    if (list[0]) return list;
    const Target *const *all;
    int n = Target_all(&all);
    char buf[128] = "";
    for (int i = 0; i < n; i++) {
        if (!all[i]->default_arch) continue;
        char one[64];
        snprintf(one, sizeof one, "%s for %s", all[i]->default_arch, all[i]->name);
        Names_add(buf, sizeof buf, one);
    }
    snprintf(list, sizeof list, "%s", buf[0] ? buf : "none");
    return list;
}

Status app_resolve_device(const char *target_name, const char *arch, bool allow_offline, const Target **target,
                          DeviceInfo *dev, char *err) {
    const Target *t = Target_find(target_name);
    if (!t) return tt_fail(err, "unknown target '%s' (choose from: %s)", target_name, Target_names());
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
    char others[128] = "";
    const Target *const *all;
    int n = Target_all(&all);
    for (int i = 0; i < n; i++)
        if (all[i] != t) Names_add(others, sizeof others, all[i]->name);
    if (t->offline_info)
        return tt_fail(err,
                       "%s: %s; measure with another --target (%s), or add --compile-only to "
                       "build candidates against the limits of --arch (default %s) without running them",
                       t->name, why, others, t->default_arch);
    return tt_fail(err, "%s: %s; use --target %s", t->name, why, Target_default()->name);
}
