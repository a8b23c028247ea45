/* tuner/backend.c: the names of a measure backend's device states (see
 * backend.h), which the UI and the headless reporter print for any backend. */
#include "tuner/backend.h"

static const char *const DEVSTATE_NAMES[] = {"starting", "idle", "building", "measuring", "lost", "failed", "done"};

const char *DeviceState_name(DeviceState s) {
    return s >= DEVSTATE_STARTING && s <= DEVSTATE_DONE ? DEVSTATE_NAMES[s] : "?";
}
