/* tuner/net/ops/elementwise.c: the elementwise family's op definitions (see
 * op.h). Each op is a spec (elementwise.h) defined beside its kernels in
 * elementwise_math.c or elementwise_logic.c; the entries here pass it to the
 * shared check/infer/run of elementwise_engine.c. The table ends with op
 * tunetop.Elementwise, the fused chains of elementwise_fused.c. */
#include <string.h>

#include "tuner/net/ops/elementwise.h"

#define EW_WRAP(N, lo, hi)                                                                                             \
    static Status N##_check(const NetNode *node, const NetModel *model, char *err) {                                   \
        return Ew_check(node, model, &EW_##N, err);                                                                    \
    }                                                                                                                  \
    static Status N##_infer(OpCtx *ctx) { return Ew_infer(ctx, &EW_##N); }                                             \
    static Status N##_run(OpCtx *ctx) { return Ew_run(ctx, &EW_##N); }                                                 \
    static double N##_flops(const OpCtx *ctx) { return Ew_flops(ctx, &EW_##N); }
EW_OPS(EW_WRAP)

#define EW_ENTRY(N, lo, hi)                                                                                            \
    {.name = #N,                                                                                                       \
     .domain = "",                                                                                                     \
     .min_in = lo,                                                                                                     \
     .max_in = hi,                                                                                                     \
     .min_out = 1,                                                                                                     \
     .max_out = 1,                                                                                                     \
     .check = N##_check,                                                                                               \
     .infer = N##_infer,                                                                                               \
     .run = N##_run,                                                                                                   \
     .flops = N##_flops},

const OpDef OPS_ELEMENTWISE[] = {
    EW_OPS(EW_ENTRY){.name = "Elementwise",
                     .domain = "tunetop",
                     .min_in = 1,
                     .max_in = -1,
                     .min_out = 1,
                     .max_out = 1,
                     .check = Ew_fusedCheck,
                     .infer = Ew_fusedInfer,
                     .run = Ew_fusedRun,
                     .flops = Ew_fusedFlops},
    {.name = NULL},
};

#define EW_NAMED(N, lo, hi) {#N, &EW_##N},
static const struct {
    const char *name;
    const EwSpec *spec;
} SPECS[] = {EW_OPS(EW_NAMED)};

const EwSpec *Ew_spec(const char *op) {
    for (size_t i = 0; op && i < sizeof SPECS / sizeof SPECS[0]; i++)
        if (!strcmp(SPECS[i].name, op)) return SPECS[i].spec;
    return NULL;
}

bool Ew_fusable(const EwSpec *spec) {
    bool f32 = false;
    for (const NdType *t = spec->types; *t != ND_UNDEF; t++)
        f32 = f32 || *t == ND_F32;
    return f32 && spec->out == EW_OUT_SAME && spec->first == 0 && !spec->mean && spec->k[0][EW_F32];
}

bool Op_fusableStep(const char *op, int n_in) {
    const EwSpec *spec = Ew_spec(op);
    return spec && Ew_fusable(spec) && n_in >= 1 && n_in <= EW_MAX_IN && (!spec->fold || n_in == 2);
}
