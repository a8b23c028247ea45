/* tuner/net/ops/registry.c: every op family's table, and lookup by name. */
#include <string.h>

#include "tuner/net/ops/op.h"

static const OpDef *const TABLES[] = {OPS_ELEMENTWISE, OPS_NN, OPS_SHAPE};
#define N_TABLES (sizeof TABLES / sizeof TABLES[0])
#define MAX_OPS 512

static bool same_domain(const char *a, const char *b) {
    if (!a || !strcmp(a, "ai.onnx")) a = "";
    if (!b || !strcmp(b, "ai.onnx")) b = "";
    return !strcmp(a, b);
}

static const OpDef *extra;

void Op_register(const OpDef *table) { extra = table; }

const OpDef *Op_find(const char *domain, const char *name) {
    for (const OpDef *d = extra; d && d->name; d++)
        if (!strcmp(d->name, name) && same_domain(d->domain, domain)) return d;
    for (size_t t = 0; t < N_TABLES; t++)
        for (const OpDef *d = TABLES[t]; d->name; d++)
            if (!strcmp(d->name, name) && same_domain(d->domain, domain)) return d;
    return NULL;
}

const OpDef *const *Op_all(int *n) {
    static const OpDef *all[MAX_OPS];
    static int count = -1;
    if (count < 0) { /* the tables are constant: the list is the same for every caller */
        int c = 0;
        for (size_t t = 0; t < N_TABLES; t++)
            for (const OpDef *d = TABLES[t]; d->name && c < MAX_OPS; d++)
                all[c++] = d;
        count = c;
    }
    *n = count;
    return all;
}
