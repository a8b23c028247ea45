/* tuner/net/ops/elementwise.c: the elementwise family's op definitions (see
 * op.h). Each op is a spec (elementwise.h) defined beside its kernels in
 * elementwise_math.c or elementwise_logic.c; the entries here pass it to the
 * shared check/infer/run of elementwise_engine.c. */
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
    EW_OPS(EW_ENTRY){.name = NULL},
};
