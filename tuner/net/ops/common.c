/* tuner/net/ops/common.c: helpers the op files share (see op.h). */
#include <stdio.h>
#include <stdlib.h>

#include "tuner/net/ops/op.h"

Status Op_int64s(const NdTensor *t, int64_t **out, int64_t *n, char *err) {
    if (NdType_isFloat(t->type) || !NdType_supported(t->type))
        return tt_fail(err, "expected an integer tensor, got %s", NdType_name(t->type));
    int64_t *v = malloc(sizeof *v * (size_t)(t->count > 0 ? t->count : 1));
    if (!v) return tt_fail(err, "out of memory");
    for (int64_t i = 0; i < t->count; i++)
        v[i] = NdTensor_getInt(t, i);
    *out = v;
    *n = t->count;
    return TT_OK;
}

Status Op_inferBroadcast(OpCtx *ctx, NdType type) {
    NdShape s = {.rank = 0};
    for (int i = 0; i < ctx->n_in; i++) {
        if (!ctx->in[i]) continue;
        if (NdShape_broadcast(&s, &ctx->in[i]->shape, &s, ctx->err) != TT_OK) return TT_ERR;
    }
    ctx->out[0].type = type;
    ctx->out[0].shape = s;
    return TT_OK;
}

Status Op_requireType(const OpCtx *ctx, int i, const NdType *allowed) {
    if (i >= ctx->n_in || !ctx->in[i] || ctx->in[i]->type == ND_UNDEF) return TT_OK;
    NdType t = ctx->in[i]->type;
    char names[256];
    size_t used = 0;
    names[0] = '\0';
    for (const NdType *a = allowed; *a != ND_UNDEF; a++) {
        if (*a == t) return TT_OK;
        used += (size_t)snprintf(names + used, used < sizeof names ? sizeof names - used : 0, "%s%s",
                                 a == allowed ? "" : ", ", NdType_name(*a));
        if (used >= sizeof names) used = sizeof names - 1;
    }
    return tt_fail(ctx->err, "input %d is %s; %s takes %s", i, NdType_name(t), ctx->node ? ctx->node->op : "the op",
                   names);
}
