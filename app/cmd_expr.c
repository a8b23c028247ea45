/* app/cmd_expr.c: `tunetop tasks --expr FILE.te [--set N=V ...]`: the
 * compute DAG of a tensor expression with what each analysis found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/expr.h"
#include "base/strbuf.h"
#include "te/dag.h"

Status app_parse_set(const char *arg, TeSet *out, char *err) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || eq - arg >= TE_NAME_LEN) return tt_fail(err, "--set: '%s' is not NAME=VALUE", arg);
    char *end;
    long long v = strtoll(eq + 1, &end, 10);
    if (end == eq + 1 || *end)
        return tt_fail(err, "--set %.*s: '%s' is not a whole number", (int)(eq - arg), arg, eq + 1);
    char *name = malloc(eq - arg + 1);
    memcpy(name, arg, eq - arg);
    name[eq - arg] = 0;
    out->name = name;
    out->value = v;
    return TT_OK;
}

static const char *yes(int b) { return b ? "yes" : "no"; }

int app_tasks_expr(const char *path, const TeSet *sets, int n_sets) {
    char err[TT_ERRLEN] = "";
    TeProgram *g = TeProgram_load(path, sets, n_sets, err);
    TeDag *dag = calloc(1, sizeof *dag);
    if (!g || TeDag_build(dag, g, err) != TT_OK) {
        fprintf(stderr, "%s\n", err);
        TeProgram_delete(g);
        free(dag);
        return 2;
    }
    printf("Expression %s: %d stage%s, %.6f GFLOP, workload key %s\n", path, dag->n_stages,
           dag->n_stages == 1 ? "" : "s", dag->flops / 1e9, dag->key);
    for (int t = 0; t < g->n_tensors; t++) {
        const TeTensor *tt = &g->tensors[t];
        if (te_is_defined(tt)) continue;
        printf("%s %s[", tt->is_input ? "Input" : "Constant", tt->name);
        for (int d = 0; d < tt->ndim; d++)
            printf("%s%lld", d ? ", " : "", (long long)tt->shape[d]);
        if (tt->is_input)
            printf("] %s\n", tt->dtype == TE_F16 ? "f16" : "f32");
        else
            printf("] f32, %lld values\n", (long long)TeProgram_numel(g, t));
    }
    StrBuf s;
    StrBuf_init(&s);
    for (int i = 0; i < dag->n_stages; i++) {
        const TeStage *st = &dag->stages[i];
        const TeTensor *tt = &g->tensors[st->tensor];
        StrBuf_clear(&s);
        TeExpr_format(g, tt->body, &s);
        printf("\nStage %d%s: %s[", i, st->is_output ? " (output)" : "", tt->name);
        for (int d = 0; d < st->n_spatial; d++)
            printf("%s%s", d ? ", " : "", g->vars[st->spatial[d]].name);
        printf("] = %s\n", s.data);
        printf("  spatial:");
        for (int d = 0; d < st->n_spatial; d++)
            printf(" %s < %lld", g->vars[st->spatial[d]].name, (long long)g->vars[st->spatial[d]].extent);
        printf("\n  reduce: ");
        if (!st->n_reduce) printf(" -");
        for (int d = 0; d < st->n_reduce; d++)
            printf(" %s < %lld (%s)", g->vars[st->reduce[d]].name, (long long)g->vars[st->reduce[d]].extent,
                   st->red->op == TE_SUM        ? "sum"
                   : st->red->op == TE_MAX_OVER ? "max"
                                                : "min");
        printf("\n  reads:  ");
        for (int a = 0; a < st->n_access; a++) {
            StrBuf_clear(&s);
            TeExpr_format(g, st->access[a].at, &s);
            printf(" %s", s.data);
            if (st->access[a].missing_spatial)
                printf(" (reused across %d ax%s)", st->access[a].missing_spatial,
                       st->access[a].missing_spatial == 1 ? "is" : "es");
        }
        printf("\n  consumers:");
        if (!st->n_consumers) printf(" -");
        for (int c = 0; c < st->n_consumers; c++)
            printf(" %s", g->tensors[dag->stages[st->consumers[c]].tensor].name);
        printf("\n  GFLOP %.6f; injective %s, elementwise %s, inlinable %s, data reuse (multi-level tiling) %s, "
               "fusible consumer %s\n",
               st->flops / 1e9, yes(st->injective), yes(st->elementwise), yes(st->inlinable), yes(st->data_reuse),
               st->fusible_consumer >= 0 ? g->tensors[dag->stages[st->fusible_consumer].tensor].name : "-");
    }
    StrBuf_done(&s);
    TeProgram_delete(g);
    free(dag);
    return 0;
}
