/* tuner/net/ops/elementwise.c: this family's op definitions (see op.h). */
#include "tuner/net/ops/op.h"

const OpDef OPS_ELEMENTWISE[] = {
    {.name = NULL},
};
