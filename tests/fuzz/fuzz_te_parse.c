/* tests/fuzz/fuzz_te_parse.c: the .te parser, with the bounds pass it runs on
 * every definition. Properties: it never crashes or overflows its stack (the
 * nesting limit), a program it accepts has an output and tensors of at most
 * TE_MAX_ELEMS elements (so no size computed from a shape can wrap), and a
 * program it refuses says why, naming the file. */
#include <stdint.h>

#include "te/te.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    char err[TT_ERRLEN] = "";
    TeProgram *g = TeProgram_parse(text, "fuzz.te", NULL, 0, err);
    if (g) {
        bool output = false;
        for (int t = 0; t < g->n_tensors; t++) {
            int64_t n = TeProgram_numel(g, t);
            PROPERTY(n > 0 && n <= TE_MAX_ELEMS, "tensor %s has %lld elements", g->tensors[t].name, (long long)n);
            output = output || g->tensors[t].is_output;
        }
        PROPERTY(output, "a program without an output was accepted");
        TeProgram_delete(g);
    } else {
        PROPERTY(strncmp(err, "fuzz.te:", 8) == 0, "refused without naming the file: '%s'", err);
    }
    free(text);
    return 0;
}
