/* kernels/templates/te/te_sketch_print.c: a sketch as `tunetop sketches`
 * prints it (Sketch_format, see te_sketch.h). */
#include "kernels/templates/te/te_sketch.h"

/* The tile structure of a tiled stage. On GPUs the reduction goes into a
 * cache_write stage computed per thread, and its copy is tiled over the
 * spatial axes: blockIdx, a level run inside the thread (where vthread would
 * be), threadIdx, the thread's tile. On cpu the copy is tiled SS and the
 * cache_write stage (the local accumulator) is computed at its second level,
 * so that its box is the register tile, and runs RRS: outer and inner
 * reduction loops around the register tile (innermost axis vectorized, the
 * others unrolled): the compiler keeps the accumulators in registers only
 * when the accumulation covers exactly the register tile. */
static const char *structure(int gpu) { return gpu ? "SSSS" : "SS(RRS)"; }

/* ---- printing --------------------------------------------------------------------- */

void Sketch_format(const Sketch *sk, const TeDag *dag, StrBuf *out) {
    for (int k = dag->n_stages - 1; k >= 0; k--) {
        const SketchStage *st = &sk->st[k];
        StrBuf_printf(out, "  stage %d %-8s", k, dag->prog->tensors[dag->stages[k].tensor].name);
        int first = 1;
        for (int r = 0; r < RULE_KINDS; r++)
            if (st->rules & (1u << r)) {
                StrBuf_printf(out, "%s%s", first ? " " : ", ", SketchRule_name((SketchRule)r));
                first = 0;
            }
        if (first) StrBuf_append(out, " (no rule: fused)");
        static const char *const HOW[] = {"own loop nest",
                                          "inlined",
                                          "tiled",
                                          "tiled SSS, producer at its tile",
                                          "computed at its consumer's tile, RRS",
                                          "tiled SSRSRS in place",
                                          "rfactor, its lanes vectorized in a local accumulator",
                                          "own loop nest over a padded copy, the window innermost"};
        StrBuf_printf(out, "  -> %s", HOW[st->how]);
        if (st->how == SK_TILED) StrBuf_printf(out, " %s", structure(sk->gpu));
        for (int t = 0; t < 64 && t < dag->prog->n_tensors; t++)
            if (st->pad >> t & 1)
                StrBuf_printf(out, ", padded copy of %s%s", dag->prog->tensors[t].name,
                              st->how == SK_POOL ? "" : " at root");
        StrBuf_append(out, "\n");
    }
    Steps steps;
    Sketch_steps(sk, dag, NULL, &steps);
    StrBuf_append(out, "  steps: ");
    if (!steps.n) StrBuf_append(out, "(none: the default loop nests)");
    for (int i = 0; i < steps.n; i++) {
        const Step *s = &steps.step[i];
        StrBuf_printf(out, "%s%s %d", i ? "; " : "", StepKind_name(s->kind), s->stage);
        for (int x = 0; x < s->n_args; x++)
            if (s->kind == STEP_SPLIT && x > 0)
                StrBuf_append(out, " ?");
            else
                StrBuf_printf(out, " %lld", (long long)s->arg[x]);
    }
    StrBuf_append(out, "\n");
    if (sk->note[0]) StrBuf_printf(out, "  note: %s\n", sk->note);
}
