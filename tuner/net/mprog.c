/* tuner/net/mprog.c: a model as a standalone C library (see mprog.h). */
#include "tuner/net/mprog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "tuner/net/runtime_text.h" /* generated: NET_RUNTIME_FILES, the runtime's sources */

/* A C string literal of s (quotes and backslashes escaped, other bytes as octal). */
static void append_literal(StrBuf *sb, const char *s) {
    StrBuf_append(sb, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            StrBuf_printf(sb, "\\%c", *p);
        else if (*p < 32 || *p > 126)
            StrBuf_printf(sb, "\\%03o", *p);
        else
            StrBuf_printf(sb, "%c", *p);
    }
    StrBuf_append(sb, "\"");
}

/* NAME_INPUT_NAMES / _TYPES / _COUNTS (or OUTPUT) for the values ids[0..n). */
static void io_tables(StrBuf *sb, const char *N, const char *what, const NetModel *m, const int *ids, int n) {
    StrBuf_printf(sb, "const char *const %s_%s_NAMES[] = {", N, what);
    for (int i = 0; i < n; i++) {
        append_literal(sb, m->values[ids[i]].name);
        StrBuf_append(sb, i + 1 < n ? ", " : "");
    }
    StrBuf_printf(sb, "};\nconst int %s_%s_TYPES[] = {", N, what);
    for (int i = 0; i < n; i++)
        StrBuf_printf(sb, "%d%s", (int)m->values[ids[i]].type, i + 1 < n ? ", " : "");
    StrBuf_printf(sb, "};\nconst int64_t %s_%s_COUNTS[] = {", N, what);
    for (int i = 0; i < n; i++) {
        const NdShape *s = &m->values[ids[i]].shape;
        int64_t c = 1;
        for (int d = 0; d < s->rank; d++)
            c *= s->dim[d];
        StrBuf_printf(sb, "%lld%s", (long long)c, i + 1 < n ? ", " : "");
    }
    StrBuf_append(sb, "};\n");
}

static const char *HEADER_TOP = "/* @N@.h: the network @N@ as a C library, exported by tunetop.\n"
                                " *\n"
                                " * @N@_create loads the model file (@N@.weights: the graph and its weights) and\n"
                                " * packs every kernel's weights; @N@_run runs the network on dense row-major\n"
                                " * inputs and writes dense outputs (element types are ONNX's numbers: 1\n"
                                " * float32, 7 int64, 9 bool, ...; counts are elements); 0 is success. On\n"
                                " * failure @N@_error() says why. One context runs one inference at a time. */\n"
                                "#ifndef @N@_H\n#define @N@_H\n\n#include <stdint.h>\n\n"
                                "typedef struct @N@_ctx @N@_ctx;\n\n"
                                "@N@_ctx *@N@_create(const char *weights_path);\n"
                                "int @N@_run(@N@_ctx *ctx, const void *const *inputs, void *const *outputs);\n"
                                "void @N@_destroy(@N@_ctx *ctx);\n"
                                "const char *@N@_error(void);\n\n"
                                "/* Profile: the nodes as the runtime runs them, and seconds spent in each\n"
                                " * over every run since create (a kernel node's layout transforms: the\n"
                                " * pack, or the copy of the blocked tensor it is handed, and the unpack,\n"
                                " * apart too). */\n"
                                "int @N@_n_nodes(const @N@_ctx *ctx);\n"
                                "const char *@N@_node_op(const @N@_ctx *ctx, int i);\n"
                                "double @N@_node_seconds(const @N@_ctx *ctx, int i);\n"
                                "double @N@_node_xform_seconds(const @N@_ctx *ctx, int i);\n"
                                "/* How many kernel outputs go to the next kernel in its blocked layout,\n"
                                " * never unpacked to the dense layout. */\n"
                                "int @N@_n_handoffs(const @N@_ctx *ctx);\n"
                                "/* Of the tensors handed over, how many the reader reads in the producer's\n"
                                " * buffer (no copy: the two layouts are one). */\n"
                                "int @N@_n_borrowed(const @N@_ctx *ctx);\n\n";

static void append_subst(StrBuf *sb, const char *text, const char *N);

static char *header_text(const char *N, const NetModel *m) {
    StrBuf sb;
    StrBuf_init(&sb);
    append_subst(&sb, HEADER_TOP, N);
    StrBuf_printf(&sb, "#define %s_N_INPUTS %d\n#define %s_N_OUTPUTS %d\n", N, m->n_inputs, N, m->n_outputs);
    const char *what[2] = {"INPUT", "OUTPUT"};
    for (int w = 0; w < 2; w++)
        StrBuf_printf(&sb,
                      "extern const char *const %s_%s_NAMES[];\nextern const int %s_%s_TYPES[];\n"
                      "extern const int64_t %s_%s_COUNTS[];\n",
                      N, what[w], N, what[w], N, what[w]);
    StrBuf_append(&sb, "\n#endif\n");
    char *r = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return r;
}

/* Appends text with every "@N@" replaced by N. */
static void append_subst(StrBuf *sb, const char *text, const char *N) {
    for (const char *p = text;;) {
        const char *q = strstr(p, "@N@");
        if (!q) {
            StrBuf_append(sb, p);
            return;
        }
        StrBuf_appendn(sb, p, (size_t)(q - p));
        StrBuf_append(sb, N);
        p = q + 3;
    }
}

/* The part of NAME.c that does not depend on the kernels: the Kernel op,
 * create, run, destroy and the profile. */
static const char *SOURCE_BODY =
    "struct @N@_ctx {\n"
    "    NetModel m;\n"
    "    void **inst;       /* per node: its kernel's instance (Kernel nodes) */\n"
    "    double *node_s;    /* per node: seconds over every run */\n"
    "    double *xform_s;   /* per kernel node: of those, the seconds in its layout transforms */\n"
    "    HoPlan plan;       /* the blocked tensors the kernels hand on (tuner/net/handoff.h) */\n"
    "    OpDef on_def;      /* the ops that run on a kernel's blocked buffer instead (plan.on) */\n"
    "};\n\n"
    "static char last_error[TT_ERRLEN];\n"
    "const char *@N@_error(void) { return last_error; }\n\n"
    "static Status kernel_infer(OpCtx *c)\n{\n"
    "    c->out[0].type = ND_F32;\n"
    "    c->out[0].shape = c->model->values[c->node->out[0]].shape;\n"
    "    return TT_OK;\n}\n\n"
    "/* A batch_matmul's second operand [batch][k][n] as its kernel takes it: [batch][n][k]. */\n"
    "static float *transposed_b(const NdTensor *b)\n{\n"
    "    int r = b->shape.rank;\n"
    "    int64_t k = b->shape.dim[r - 2], n = b->shape.dim[r - 1], batch = k * n ? b->count / (k * n) : 0;\n"
    "    float *t = malloc(sizeof(float) * (size_t)(b->count ? b->count : 1));\n"
    "    const float *src = b->data;\n"
    "    for (int64_t i = 0; t && i < batch; i++)\n"
    "        for (int64_t x = 0; x < k; x++)\n"
    "            for (int64_t y = 0; y < n; y++)\n"
    "                t[(i * n + y) * k + x] = src[(i * k + x) * n + y];\n"
    "    return t;\n}\n\n"
    "static const KernelFns *node_fns(const NetModel *m, int node)\n{\n"
    "    return &TASKS[NetNode_attrInt(&m->nodes[node], \"task\", 0)];\n}\n\n"
    "/* An op on a kernel's blocked output (a chain or a scale in place, a pool that reads it). */\n"
    "static Status blocked_on_run(OpCtx *c)\n{\n"
    "    @N@_ctx *ctx = c->user;\n"
    "    int i = (int)(c->node - c->model->nodes), p = ctx->plan.on[i];\n"
    "    const KernelFns *fp = node_fns(c->model, p);\n"
    "    float *buf = fp->blocked_out(ctx->inst[p]);\n"
    "    switch (ctx->plan.on_kind[i]) {\n"
    "    case HO_CHAIN:\n        return Ho_runChain(c, buf, &fp->out);\n"
    "    case HO_SCALE:\n        return Ho_runScale(c, buf, &fp->out);\n"
    "    default:\n        return Ho_runPool(c, buf, &fp->out);\n    }\n}\n\n"

    "/* The handoffs (HoPlan_make) from what each kernel node's kernel says of itself. */\n"
    "static int plan_handoffs(@N@_ctx *ctx)\n{\n"
    "    NetModel *m = &ctx->m;\n"
    "    HoKernel *k = calloc((size_t)m->n_nodes + 1, sizeof *k);\n"
    "    if (!k)\n        return -1;\n"
    "    for (int i = 0; i < m->n_nodes; i++) {\n"
    "        const KernelFns *f = ctx->inst[i] ? node_fns(m, i) : NULL;\n"
    "        if (f)\n"
    "            k[i] = (HoKernel){.is_kernel = 1, .res_buffer = f->blocked_res(ctx->inst[i]) != NULL, .in = f->in,\n"
    "                              .out = f->out,\n"
    "                              .reads_inputs = f->reads_inputs || NetNode_attrInt(&m->nodes[i], \"runtime_b\", "
    "0)};\n"
    "    }\n"
    "    HoPlan_make(m, k, &ctx->plan);\n    free(k);\n"
    "    ctx->plan.n_borrowed = 0;\n"
    "    for (int i = 0; i < m->n_nodes; i++) { /* the tensors read in their producer's buffer */\n"
    "        int from = ctx->plan.data_from[i], res = ctx->plan.res_from[i];\n"
    "        if (ctx->plan.borrow_in[i] &&\n"
    "            node_fns(m, i)->borrow_in(ctx->inst[i], node_fns(m, from)->blocked_out(ctx->inst[from])) != 0)\n"
    "            ctx->plan.borrow_in[i] = 0;\n"
    "        if (ctx->plan.borrow_res[i] &&\n"
    "            node_fns(m, i)->borrow_res(ctx->inst[i], node_fns(m, res)->blocked_out(ctx->inst[res])) != 0)\n"
    "            ctx->plan.borrow_res[i] = 0;\n"
    "        ctx->plan.n_borrowed += ctx->plan.borrow_in[i] + ctx->plan.borrow_res[i];\n    }\n"
    "    for (int i = 0; i < m->n_nodes; i++)\n"
    "        if (ctx->plan.on[i] >= 0) {\n"
    "            ctx->on_def = (OpDef){.name = \"blocked\", .domain = \"tunetop\", .run = blocked_on_run};\n"
    "            m->nodes[i].def = &ctx->on_def;\n        }\n"
    "    return 0;\n}\n\n"
    "static double mono_s(void)\n{\n    struct timespec ts;\n    clock_gettime(CLOCK_MONOTONIC, &ts);\n"
    "    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;\n}\n\n"
    "/* A kernel node's computation: its blocked input packed from the dense one or copied from the\n"
    " * producer's blocked output (the residual too), the run, the unpack unless nobody reads it. The\n"
    " * time outside the run goes to xform_s (for the profile: a few clock reads per kernel). */\n"
    "static int run_node(@N@_ctx *ctx, const NetModel *m, int node, const float *const *ins, float *out)\n{\n"
    "    const KernelFns *f = node_fns(m, node);\n"
    "    void *k = ctx->inst[node];\n"
    "    int from = ctx->plan.data_from[node], res = ctx->plan.res_from[node];\n"
    "    double t0 = mono_s();\n"
    "    if (from < 0 && f->pack(k, ins))\n        return -1;\n"
    "    if (from >= 0) {\n"
    "        const KernelFns *fp = node_fns(m, from);\n"
    "        if (!ctx->plan.borrow_in[node])\n"
    "            Ho_reblock(fp->blocked_out(ctx->inst[from]), &fp->out, f->blocked_in(k), &f->in);\n"
    "        if (res >= 0 && !ctx->plan.borrow_res[node])\n"
    "            Ho_reblock(node_fns(m, res)->blocked_out(ctx->inst[res]), &node_fns(m, res)->out, f->blocked_res(k),\n"
    "                       &f->out);\n"
    "        else if (res < 0 && ins[1]) { /* a dense residual */\n"
    "            HoLayout dense = HoLayout_dense(f->out.n, f->out.c, f->out.h, f->out.w);\n"
    "            Ho_reblock(ins[1], &dense, f->blocked_res(k), &f->out);\n"
    "        }\n    }\n"
    "    double t1 = mono_s();\n"
    "    if (f->run_blocked(k, ins, out))\n        return -1;\n"
    "    double t2 = mono_s();\n"
    "    int rc = ctx->plan.skip_unpack[node] ? 0 : f->unpack(k, out);\n"
    "    ctx->xform_s[node] += t1 - t0 + mono_s() - t2;\n"
    "    return rc;\n}\n\n"
    "static Status kernel_run(OpCtx *c)\n{\n"
    "    @N@_ctx *ctx = c->user;\n"
    "    int node = (int)(c->node - c->model->nodes);\n"
    "    int task = (int)NetNode_attrInt(c->node, \"task\", -1);\n"
    "    if (!ctx || task < 0 || task >= N_TASKS || !ctx->inst[node])\n"
    "        return tt_fail(c->err, \"kernel node %d has no kernel\", node);\n"
    "    if (kernel_infer(c) != TT_OK || NdTensor_allocFull(&c->out[0], ND_F32, &c->out[0].shape, c->err) != TT_OK)\n"
    "        return TT_ERR;\n"
    "    const float *ins[2] = {c->in[0]->data, c->in[3] ? c->in[3]->data : NULL};\n"
    "    float *bt = NULL;\n"
    "    if (NetNode_attrInt(c->node, \"runtime_b\", 0) && !(ins[1] = bt = transposed_b(c->in[1])))\n"
    "        return tt_fail(c->err, \"out of memory\");\n"
    "    int rc = run_node(ctx, c->model, node, ins, c->out[0].data);\n"
    "    free(bt);\n"
    "    if (rc != 0)\n"
    "        return tt_fail(c->err, \"task %d's kernel failed\", task);\n"
    "    return TT_OK;\n}\n\n"
    "static const OpDef KERNEL_OPS[] = {\n"
    "    {.name = \"Kernel\", .domain = \"tunetop\", .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 1,\n"
    "     .infer = kernel_infer, .run = kernel_run},\n"
    "    {.name = NULL},\n};\n\n"
    "/* The constant operands of a kernel node, the weight transposed when the model stores it [k][n]. */\n"
    "static void *create_kernel(const NetModel *m, const NetNode *n)\n{\n"
    "    int task = (int)NetNode_attrInt(n, \"task\", -1);\n"
    "    const NdTensor *w = &m->values[n->in[1]].constant;\n"
    "    const float *consts[2] = {w->data, n->in[2] >= 0 ? m->values[n->in[2]].constant.data : NULL};\n"
    "    if (NetNode_attrInt(n, \"runtime_b\", 0))\n"
    "        consts[0] = NULL; /* batch_matmul: both operands come at run time */\n"
    "    float *wt = NULL;\n"
    "    if (NetNode_attrInt(n, \"transpose_weight\", 0)) {\n"
    "        int64_t k = w->shape.dim[0], cols = w->shape.dim[1];\n"
    "        wt = malloc(sizeof(float) * (size_t)(k * cols));\n"
    "        if (!wt)\n            return NULL;\n"
    "        for (int64_t i = 0; i < k; i++)\n"
    "            for (int64_t j = 0; j < cols; j++)\n"
    "                wt[j * k + i] = ((const float *)w->data)[i * cols + j];\n"
    "        consts[0] = wt;\n    }\n"
    "    void *inst = task >= 0 && task < N_TASKS ? TASKS[task].create(consts) : NULL;\n"
    "    free(wt);\n    return inst;\n}\n\n"
    "void @N@_destroy(@N@_ctx *ctx)\n{\n"
    "    if (!ctx)\n        return;\n"
    "    for (int i = 0; ctx->inst && i < ctx->m.n_nodes; i++)\n"
    "        if (ctx->inst[i])\n"
    "            TASKS[NetNode_attrInt(&ctx->m.nodes[i], \"task\", 0)].destroy(ctx->inst[i]);\n"
    "    free(ctx->inst);\n    free(ctx->node_s);\n    free(ctx->xform_s);\n    HoPlan_done(&ctx->plan);\n"
    "    NetModel_done(&ctx->m);\n    free(ctx);\n"
    "    NdCache_release();\n}\n\n"
    "static Status check_io(const NetModel *m, char *err)\n{\n"
    "    if (m->n_inputs != @N@_N_INPUTS || m->n_outputs != @N@_N_OUTPUTS)\n"
    "        return tt_fail(err, \"the model file has %d inputs and %d outputs; @N@ was built for %d and %d\",\n"
    "                       m->n_inputs, m->n_outputs, @N@_N_INPUTS, @N@_N_OUTPUTS);\n"
    "    for (int i = 0; i < m->n_inputs; i++)\n"
    "        if (strcmp(m->values[m->inputs[i]].name, @N@_INPUT_NAMES[i]))\n"
    "            return tt_fail(err, \"the model file's input %d is '%s'; @N@ was built for '%s'\", i,\n"
    "                           m->values[m->inputs[i]].name, @N@_INPUT_NAMES[i]);\n"
    "    return TT_OK;\n}\n\n"
    "@N@_ctx *@N@_create(const char *weights_path)\n{\n"
    "    @N@_ctx *ctx = calloc(1, sizeof *ctx);\n"
    "    if (!ctx) {\n        snprintf(last_error, sizeof last_error, \"out of memory\");\n        return NULL;\n    "
    "}\n"
    "    NdCache_hold(); /* every run after the first reuses the tensors' buffers (nd.h) */\n"
    "    Op_register(KERNEL_OPS);\n"
    "    NetModel_init(&ctx->m);\n"
    "    if (ModelFile_read(weights_path, &ctx->m, last_error) != TT_OK || NetModel_sort(&ctx->m, last_error) != TT_OK "
    "||\n"
    "        NetModel_bind(&ctx->m, last_error) != TT_OK || check_io(&ctx->m, last_error) != TT_OK) {\n"
    "        @N@_destroy(ctx);\n        return NULL;\n    }\n"
    "    ctx->inst = calloc((size_t)ctx->m.n_nodes + 1, sizeof *ctx->inst);\n"
    "    ctx->node_s = calloc((size_t)ctx->m.n_nodes + 1, sizeof *ctx->node_s);\n"
    "    ctx->xform_s = calloc((size_t)ctx->m.n_nodes + 1, sizeof *ctx->xform_s);\n"
    "    for (int i = 0; ctx->inst && i < ctx->m.n_nodes; i++) {\n"
    "        const NetNode *n = &ctx->m.nodes[i];\n"
    "        if (strcmp(n->op, \"Kernel\") || strcmp(n->domain, \"tunetop\"))\n            continue;\n"
    "        if (!(ctx->inst[i] = create_kernel(&ctx->m, n))) {\n"
    "            snprintf(last_error, sizeof last_error, \"cannot create the kernel of node %d\", i);\n"
    "            @N@_destroy(ctx);\n            return NULL;\n        }\n    }\n"
    "    if (!ctx->inst || !ctx->node_s || !ctx->xform_s || plan_handoffs(ctx) != 0) {\n"
    "        snprintf(last_error, sizeof last_error, \"out of memory\");\n"
    "        @N@_destroy(ctx);\n        return NULL;\n    }\n"
    "    return ctx;\n}\n\n"
    "int @N@_run(@N@_ctx *ctx, const void *const *inputs, void *const *outputs)\n{\n"
    "    NdTensor in[@N@_N_INPUTS + 1], out[@N@_N_OUTPUTS + 1];\n"
    "    memset(out, 0, sizeof out);\n"
    "    for (int i = 0; i < @N@_N_INPUTS; i++) {\n"
    "        const NetValue *v = &ctx->m.values[ctx->m.inputs[i]];\n"
    "        in[i] = (NdTensor){.type = v->type, .shape = v->shape, .data = (void *)inputs[i],\n"
    "                           .count = @N@_INPUT_COUNTS[i]};\n    }\n"
    "    NetExecOptions opt = {.user = ctx, .node_seconds = ctx->node_s};\n"
    "    if (NetExec_runWith(&ctx->m, in, @N@_N_INPUTS, out, &opt, last_error) != TT_OK)\n        return -1;\n"
    "    int rc = 0;\n"
    "    for (int i = 0; i < @N@_N_OUTPUTS; i++) {\n"
    "        if (out[i].count != @N@_OUTPUT_COUNTS[i]) {\n"
    "            snprintf(last_error, sizeof last_error, \"output %d has %lld elements, not %lld\", i,\n"
    "                     (long long)out[i].count, (long long)@N@_OUTPUT_COUNTS[i]);\n"
    "            rc = -1;\n"
    "        } else if (out[i].data)\n"
    "            memcpy(outputs[i], out[i].data, (size_t)out[i].count * NdType_size(out[i].type));\n"
    "        NdTensor_free(&out[i]);\n    }\n"
    "    return rc;\n}\n\n"
    "int @N@_n_nodes(const @N@_ctx *ctx) { return ctx->m.n_nodes; }\n"
    "const char *@N@_node_op(const @N@_ctx *ctx, int i) { return ctx->m.nodes[i].op; }\n"
    "double @N@_node_seconds(const @N@_ctx *ctx, int i) { return ctx->node_s[i]; }\n"
    "double @N@_node_xform_seconds(const @N@_ctx *ctx, int i) { return ctx->xform_s[i]; }\n"
    "int @N@_n_handoffs(const @N@_ctx *ctx) { return ctx->plan.n_handoffs; }\n"
    "int @N@_n_borrowed(const @N@_ctx *ctx) { return ctx->plan.n_borrowed; }\n";

/* The table entry's functions of kernel P and its layouts as HoLayout initializers P_LIN, P_LOUT. */
static void kernel_fns(StrBuf *sb, const char *P) {
    StrBuf_printf(
        sb,
        "static void *%1$s_c(const float *const *c) { return %1$s_create(c); }\n"
        "static void %1$s_d(void *k) { %1$s_destroy(k); }\n"
        "static int %1$s_p(void *k, const float *const *in) { return %1$s_pack_input(k, in); }\n"
        "static int %1$s_rb(void *k, const float *const *in, float *out) { return %1$s_run_blocked(k, in, out); "
        "}\n"
        "static int %1$s_u(void *k, float *out) { return %1$s_unpack_output(k, out); }\n"
        "static float *%1$s_bi(void *k) { return %1$s_blocked_input(k); }\n"
        "static float *%1$s_bo(void *k) { return %1$s_blocked_output(k); }\n"
        "static float *%1$s_br(void *k) { return %1$s_blocked_residual(k); }\n"
        "static int %1$s_bbi(void *k, float *b) { return %1$s_borrow_blocked_input(k, b); }\n"
        "static int %1$s_bbr(void *k, float *b) { return %1$s_borrow_blocked_residual(k, b); }\n",
        P);
    for (int out = 0; out < 2; out++)
        StrBuf_printf(sb,
                      "#if %1$s_%2$s_BLOCKED\n#define %1$s_%3$s {%1$s_%4$s_N, %1$s_%4$s_C, %1$s_%4$s_H, %1$s_%4$s_W, "
                      "%1$s_%4$s_CB, %1$s_%4$s_H_ALLOC, %1$s_%4$s_W_ALLOC, %1$s_%4$s_TOP, %1$s_%4$s_LEFT, "
                      "%1$s_%4$s_REPEAT}\n#else\n#define %1$s_%3$s {0}\n#endif\n",
                      P, out ? "OUTPUT" : "INPUT", out ? "LOUT" : "LIN", out ? "BLOCKED_OUT" : "BLOCKED_IN");
}

static char *source_text(const char *N, const NetModel *m, int n_tasks, const char *const *prefix) {
    StrBuf sb;
    StrBuf_init(&sb);
    StrBuf_printf(&sb,
                  "/* %s.c: the network %s, exported by tunetop: the model runtime runs every\n"
                  " * node, and each node of op tunetop.Kernel runs its task's tuned kernel. */\n"
                  "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n\n"
                  "#include \"%s.h\"\n#include \"base/status.h\"\n#include \"tuner/net/exec.h\"\n"
                  "#include \"tuner/net/modelfile.h\"\n#include \"tuner/net/ops/op.h\"\n",
                  N, N, N);
    for (int t = 0; t < n_tasks; t++)
        StrBuf_printf(&sb, "#include \"%s.h\"\n", prefix[t]);
    StrBuf_append(&sb, "#include \"tuner/net/handoff.h\"\n\n"
                       "typedef struct KernelFns {\n    void *(*create)(const float *const *consts);\n"
                       "    void (*destroy)(void *k);\n"
                       "    int (*pack)(void *k, const float *const *inputs);\n"
                       "    int (*run_blocked)(void *k, const float *const *inputs, float *output);\n"
                       "    int (*unpack)(void *k, float *output);\n"
                       "    float *(*blocked_in)(void *k);\n    float *(*blocked_out)(void *k);\n"
                       "    float *(*blocked_res)(void *k);\n"
                       "    int (*borrow_in)(void *k, float *buf);\n    int (*borrow_res)(void *k, float *buf);\n"
                       "    int reads_inputs; /* run_blocked reads the dense inputs */\n"
                       "    HoLayout in, out; /* its blocked layouts (n == 0: none) */\n} KernelFns;\n\n");
    for (int t = 0; t < n_tasks; t++)
        kernel_fns(&sb, prefix[t]);
    StrBuf_printf(&sb, "\n#define N_TASKS %d\nstatic const KernelFns TASKS[N_TASKS + 1] = {\n", n_tasks);
    for (int t = 0; t < n_tasks; t++) {
        const char *P = prefix[t];
        StrBuf_printf(&sb,
                      "    {%1$s_c, %1$s_d, %1$s_p, %1$s_rb, %1$s_u, %1$s_bi, %1$s_bo, %1$s_br, %1$s_bbi, %1$s_bbr,\n"
                      "     %1$s_RUN_READS_INPUTS, %1$s_LIN, %1$s_LOUT},\n",
                      P);
    }
    StrBuf_append(&sb, "    {NULL},\n};\n\n");
    io_tables(&sb, N, "INPUT", m, m->inputs, m->n_inputs);
    io_tables(&sb, N, "OUTPUT", m, m->outputs, m->n_outputs);
    StrBuf_append(&sb, "\n");
    append_subst(&sb, SOURCE_BODY, N);
    char *r = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return r;
}

Status ModelProg_bundle(ExportBundle *b, const char *name, const NetModel *m, int n_tasks,
                        const char *const *task_prefix, char *err) {
    for (size_t i = 0; i < NET_RUNTIME_N_FILES; i++) {
        const char *p = NET_RUNTIME_FILES[i].path;
        bool is_c = strlen(p) > 2 && !strcmp(p + strlen(p) - 2, ".c");
        if (ExportBundle_addFile(b, p, NET_RUNTIME_FILES[i].text, is_c, err) != TT_OK) return TT_ERR;
    }
    char fname[EXPORT_PREFIX_LEN + 8];
    char *h = header_text(name, m), *c = source_text(name, m, n_tasks, task_prefix);
    snprintf(fname, sizeof fname, "%s.h", name);
    Status st = ExportBundle_addFile(b, fname, h, false, err);
    snprintf(fname, sizeof fname, "%s.c", name);
    if (st == TT_OK) st = ExportBundle_addFile(b, fname, c, true, err);
    free(h);
    free(c);
    return st;
}

static const char *DRIVER_BODY =
    "/* main.c: runs the network @N@ for `tunetop run --model`:\n"
    " *   prog MODEL_FILE IN_0.bin ... OUT_DIR REPEAT PROFILE */\n"
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n\n"
    "#include \"@N@.h\"\n\n"
    "static size_t type_size(int t)\n{\n"
    "    switch (t) {\n    case 2: case 3: case 9: return 1;\n    case 4: case 5: case 10: case 16: return 2;\n"
    "    case 1: case 6: case 12: return 4;\n    default: return 8;\n    }\n}\n\n"
    "static double now(void)\n{\n    struct timespec ts;\n    clock_gettime(CLOCK_MONOTONIC, &ts);\n"
    "    return ts.tv_sec + ts.tv_nsec * 1e-9;\n}\n\n"
    "static void *read_all(const char *path, size_t want)\n{\n"
    "    FILE *f = fopen(path, \"rb\");\n    void *p = malloc(want + 1);\n"
    "    size_t got = f && p ? fread(p, 1, want, f) : 0;\n    if (f)\n        fclose(f);\n"
    "    if (got != want) {\n        fprintf(stderr, \"cannot read %zu bytes from %s\\n\", want, path);\n        "
    "exit(1);\n    }\n"
    "    return p;\n}\n\n"
    "int main(int argc, char **argv)\n{\n"
    "    if (argc != 5 + @N@_N_INPUTS) {\n        fprintf(stderr, \"usage: %s MODEL IN... OUT_DIR REPEAT PROFILE\\n\", "
    "argv[0]);\n"
    "        return 2;\n    }\n"
    "    @N@_ctx *ctx = @N@_create(argv[1]);\n"
    "    if (!ctx) {\n        fprintf(stderr, \"%s\\n\", @N@_error());\n        return 1;\n    }\n"
    "    void *in[@N@_N_INPUTS + 1], *out[@N@_N_OUTPUTS + 1];\n"
    "    for (int i = 0; i < @N@_N_INPUTS; i++)\n"
    "        in[i] = read_all(argv[2 + i], (size_t)@N@_INPUT_COUNTS[i] * type_size(@N@_INPUT_TYPES[i]));\n"
    "    for (int i = 0; i < @N@_N_OUTPUTS; i++)\n"
    "        out[i] = calloc((size_t)@N@_OUTPUT_COUNTS[i] + 1, type_size(@N@_OUTPUT_TYPES[i]));\n"
    "    if (@N@_run(ctx, (const void *const *)in, out) != 0) {\n        fprintf(stderr, \"%s\\n\", @N@_error());\n"
    "        return 1;\n    }\n"
    "    const char *dir = argv[2 + @N@_N_INPUTS];\n"
    "    for (int i = 0; i < @N@_N_OUTPUTS; i++) {\n"
    "        char path[4096];\n        snprintf(path, sizeof path, \"%s/out_%d.bin\", dir, i);\n"
    "        FILE *f = fopen(path, \"wb\");\n"
    "        size_t n = (size_t)@N@_OUTPUT_COUNTS[i] * type_size(@N@_OUTPUT_TYPES[i]);\n"
    "        if (!f || fwrite(out[i], 1, n, f) != n || fclose(f) != 0) {\n"
    "            fprintf(stderr, \"cannot write %s\\n\", path);\n            return 1;\n        }\n    }\n"
    "    int repeat = atoi(argv[3 + @N@_N_INPUTS]), profile = atoi(argv[4 + @N@_N_INPUTS]);\n"
    "    int n_nodes = @N@_n_nodes(ctx);\n"
    "    double *base = calloc(2 * (size_t)n_nodes + 1, sizeof *base), *base_x = base + n_nodes;\n"
    "    for (int i = 0; i < n_nodes; i++)\n"
    "        base[i] = @N@_node_seconds(ctx, i), base_x[i] = @N@_node_xform_seconds(ctx, i);\n"
    "    for (int r = 0; r < repeat; r++) {\n"
    "        double t = now();\n"
    "        if (@N@_run(ctx, (const void *const *)in, out) != 0) {\n"
    "            fprintf(stderr, \"%s\\n\", @N@_error());\n            return 1;\n        }\n"
    "        printf(\"run_ms %.6f\\n\", (now() - t) * 1e3);\n    }\n"
    "    if (profile)\n        printf(\"handoffs %d %d\\n\", @N@_n_handoffs(ctx), @N@_n_borrowed(ctx));\n"
    "    for (int i = 0; profile && repeat > 0 && i < n_nodes; i++)\n"
    "        printf(\"node_ms %d %.6f %s %.6f\\n\", i, (@N@_node_seconds(ctx, i) - base[i]) * 1e3 / repeat,\n"
    "               @N@_node_op(ctx, i), (@N@_node_xform_seconds(ctx, i) - base_x[i]) * 1e3 / repeat);\n"
    "    for (int i = 0; i < @N@_N_INPUTS; i++)\n        free(in[i]);\n"
    "    for (int i = 0; i < @N@_N_OUTPUTS; i++)\n        free(out[i]);\n"
    "    free(base);\n    @N@_destroy(ctx);\n    return 0;\n}\n";

char *ModelProg_driver(const char *name) {
    StrBuf sb;
    StrBuf_init(&sb);
    append_subst(&sb, DRIVER_BODY, name);
    char *r = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return r;
}
