/* tests/fuzz/fuzz_options.c: the option value parsers (app/opts.c) and the
 * --ops list. The first byte picks the parser, the rest is the value.
 * Properties: an accepted value is in range and prints back to a value the
 * parser accepts again as the same; a refused one says why in one line that
 * names the option. */
#include <math.h>
#include <stdint.h>

#include "app/opts.h"
#include "tests/fuzz/fuzz_common.h"
#include "tuner/net/network.h"

static void one_line(const char *err, const char *name, const char *s) {
    PROPERTY(err[0] && !strchr(err, '\n'), "'%s': error not one line: '%s'", s, err);
    PROPERTY(!name || strstr(err, name), "'%s': error does not name %s: '%s'", s, name, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int which = data[0] % 5;
    char *s = malloc(size);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    char err[TT_ERRLEN] = "", back[64];
    switch (which) {
    case 0: {
        int v = 0, v2 = 0;
        if (opt_int(s, "--trials", 1, 100000000, &v, err) == TT_OK) {
            PROPERTY(v >= 1 && v <= 100000000, "'%s' -> %d", s, v);
            snprintf(back, sizeof back, "%d", v);
            PROPERTY(opt_int(back, "--trials", 1, 100000000, &v2, err) == TT_OK && v2 == v, "'%s'", back);
        } else {
            one_line(err, "--trials", s);
        }
        break;
    }
    case 1: {
        double v = 0, v2 = 0;
        if (opt_double(s, "--timeout", 0.01, 3600, &v, err) == TT_OK) {
            PROPERTY(v >= 0.01 && v <= 3600, "'%s' -> %g", s, v);
            snprintf(back, sizeof back, "%.17g", v);
            PROPERTY(opt_double(back, "--timeout", 0.01, 3600, &v2, err) == TT_OK && v2 == v, "'%s'", back);
        } else {
            one_line(err, "--timeout", s);
        }
        break;
    }
    case 2: {
        uint64_t v = 0, v2 = 0;
        if (opt_u64(s, "--seed", &v, err) == TT_OK) {
            PROPERTY(!strchr(s, '-'), "'%s' accepted as a seed", s);
            snprintf(back, sizeof back, "%llu", (unsigned long long)v);
            PROPERTY(opt_u64(back, "--seed", &v2, err) == TT_OK && v2 == v, "'%s'", back);
        } else {
            one_line(err, "--seed", s);
        }
        break;
    }
    case 3: {
        Layout l;
        if (opt_layout(s, &l, err) == TT_OK)
            PROPERTY(l == LAYOUT_NCHW || l == LAYOUT_NHWC, "'%s'", s);
        else
            one_line(err, "--layout", s);
        break;
    }
    default: {
        unsigned mask = 0;
        if (Network_parseOps(s, &mask, err) == TT_OK)
            PROPERTY(mask != 0 || s[0] == '\0', "'%s' gives no ops", s);
        else if (!strchr(s, '\n')) /* the --ops message quotes the op name as given */
            one_line(err, NULL, s);
        break;
    }
    }
    free(s);
    return 0;
}
