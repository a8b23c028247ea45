/* tests/fuzz/fuzz_task_spec.c: the task-spec parser (`--task op:key=value,...`).
 * Properties: a spec it accepts has positive FLOPs, and its canonical key
 * parses back to an equal workload with the same key; a spec it refuses
 * says why in one line (unless it quotes a newline of the spec itself). */
#include <math.h>
#include <stdint.h>

#include "kernels/workload.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *spec = malloc(size + 1);
    memcpy(spec, data, size);
    spec[size] = '\0';
    Workload wl;
    char err[TT_ERRLEN] = "";
    if (Workload_parse(spec, &wl, err) == TT_OK) {
        double f = Workload_flops(&wl);
        PROPERTY(isfinite(f) && f > 0, "spec '%s': %g FLOPs", spec, f);
        char key[512], key2[512];
        Workload_key(&wl, key, sizeof key);
        Workload back;
        PROPERTY(Workload_parse(key, &back, err) == TT_OK, "key '%s' of '%s' does not parse: %s", key, spec, err);
        PROPERTY(Workload_equal(&wl, &back), "key '%s' of '%s' parses to another workload", key, spec);
        Workload_key(&back, key2, sizeof key2);
        PROPERTY(strcmp(key, key2) == 0, "key '%s' becomes '%s'", key, key2);
    } else {
        /* (the message may quote the spec: a newline in it is the caller's) */
        PROPERTY(err[0] && (strchr(spec, '\n') || !strchr(err, '\n')), "refused '%s' without one line: '%s'", spec,
                 err);
    }
    free(spec);
    return 0;
}
