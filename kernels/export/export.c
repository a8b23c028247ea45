/* kernels/export/export.c: self-contained kernel sources from a template's
 * generate() (see kernels/export/export.h). The generated translation unit is kept
 * as it is; the exporter only adds a comment block, renames its entry points
 * to the caller's prefix and writes the wrapper (create / run / destroy) and
 * the header around it. */
#include "kernels/export/export.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "kernels/candidate.h"

/* ---- small helpers ------------------------------------------------------------ */

const char *Export_dialectName(Dialect d) {
    switch (d) {
    case DIALECT_CUDA:
        return "cuda";
    case DIALECT_OPENCL:
        return "opencl";
    default:
        return "cpu";
    }
}

Status Export_checkPrefix(const char *prefix, char *err) {
    if (!prefix || !prefix[0]) return tt_fail(err, "empty symbol prefix");
    size_t n = strlen(prefix);
    if (n >= EXPORT_PREFIX_LEN)
        return tt_fail(err, "symbol prefix '%s' is longer than %d characters", prefix, EXPORT_PREFIX_LEN - 1);
    if (isdigit((unsigned char)prefix[0])) return tt_fail(err, "symbol prefix '%s' starts with a digit", prefix);
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)prefix[i]) || prefix[i] == '_'))
            return tt_fail(err, "symbol prefix '%s' has a character that cannot be in a C name ('%c')", prefix,
                           prefix[i]);
    return TT_OK;
}

static void upper(const char *s, char *out, size_t n) {
    size_t i = 0;
    for (; s[i] && i + 1 < n; i++)
        out[i] = (char)toupper((unsigned char)s[i]);
    out[i] = '\0';
}

static bool arg_is_const(const char *name) { return strcmp(name, "weight") == 0 || strcmp(name, "bias") == 0; }

/* Appends text as C string literal lines. */
static void append_c_string(StrBuf *sb, const char *text) {
    StrBuf_append(sb, "    \"");
    for (const char *p = text; *p; p++) {
        switch (*p) {
        case '\\':
            StrBuf_append(sb, "\\\\");
            break;
        case '"':
            StrBuf_append(sb, "\\\"");
            break;
        case '\n':
            StrBuf_append(sb, p[1] ? "\\n\"\n    \"" : "\\n");
            break;
        case '\t':
            StrBuf_append(sb, "\\t");
            break;
        default:
            StrBuf_appendn(sb, p, 1);
        }
    }
    StrBuf_append(sb, "\"");
}

/* A comment line may not close the comment. */
static void append_comment_text(StrBuf *sb, const char *s) {
    for (const char *p = s; *p; p++) {
        if (p[0] == '*' && p[1] == '/') {
            StrBuf_append(sb, "* /");
            p++;
        } else if (*p == '\n') {
            StrBuf_append(sb, " ");
        } else {
            StrBuf_appendn(sb, p, 1);
        }
    }
}

static void comment_line(StrBuf *sb, const char *label, const char *text) {
    StrBuf_printf(sb, " * %-10s", label);
    append_comment_text(sb, text);
    StrBuf_append(sb, "\n");
}

static void meta_comment(StrBuf *sb, const ExportRequest *req, const char *what) {
    char key[WORKLOAD_KEY_LEN], cfg[512], line[640];
    Workload_key(req->wl, key, sizeof key);
    Space_format(req->space, req->choice, cfg, sizeof cfg);
    unsigned long long index = (unsigned long long)Space_encode(req->space, req->choice);
    double flops = Workload_flops(req->wl);
    StrBuf_printf(sb, "/* %s: %s kernel exported by tunetop\n *\n", req->prefix, what);
    comment_line(sb, "workload", key);
    comment_line(sb, "template", req->tmpl->name);
    snprintf(line, sizeof line, "%s  (index %llu)", cfg, index);
    comment_line(sb, "config", line);
    const ExportMeta *m = &req->meta;
    if (m->latency_s > 0) {
        snprintf(line, sizeof line, "%.4f ms, %.2f GFLOPS (kernel only)", m->latency_s * 1e3,
                 flops / m->latency_s / 1e9);
        comment_line(sb, "measured", line);
        if (m->pack_s > 0) {
            double with = m->latency_s + m->pack_s;
            snprintf(line, sizeof line, "%.4f ms, %.2f GFLOPS with the layout transforms (%.4f ms)", with * 1e3,
                     flops / with / 1e9, m->pack_s * 1e3);
            comment_line(sb, "", line);
        }
    } else {
        comment_line(sb, "measured", "not measured");
    }
    if (m->note) comment_line(sb, "note", m->note);
    comment_line(sb, "log", m->log_path ? m->log_path : "(none)");
    char date[64];
    if (m->date) {
        snprintf(date, sizeof date, "%s", m->date);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm);
    }
    comment_line(sb, "date", date);
    snprintf(line, sizeof line, "%s, %.0f FLOPs per run (a multiply-add counts 2)",
             req->dev->name[0] ? req->dev->name : "?", flops);
    comment_line(sb, "device", line);
    StrBuf_append(sb, " */\n");
}

/* The argument list split into constants and inputs (indices into info). */
typedef struct ArgSplit {
    ArgInfo info[WORKLOAD_MAX_ARGS];
    int n; /* args, output last */
    int consts[WORKLOAD_MAX_ARGS], n_consts;
    int inputs[WORKLOAD_MAX_ARGS], n_inputs;
} ArgSplit;

static void split_args(const Workload *wl, ArgSplit *a) {
    memset(a, 0, sizeof *a);
    a->n = Workload_args(wl, a->info);
    for (int i = 0; i < a->n - 1; i++) {
        if (arg_is_const(a->info[i].name))
            a->consts[a->n_consts++] = i;
        else
            a->inputs[a->n_inputs++] = i;
    }
}

static void header_args(StrBuf *sb, const char *P, const ExportRequest *req, const ArgSplit *a) {
    char key[WORKLOAD_KEY_LEN];
    Workload_key(req->wl, key, sizeof key);
    StrBuf_printf(sb, "#define %s_WORKLOAD \"%s\"\n", P, key);
    StrBuf_printf(sb, "#define %s_FLOPS %.0f\n", P, Workload_flops(req->wl));
    StrBuf_printf(sb, "#define %s_NUM_ARGS %d /* operands, output last */\n", P, a->n);
    StrBuf_printf(sb, "#define %s_NUM_CONSTS %d /* create(consts):", P, a->n_consts);
    for (int i = 0; i < a->n_consts; i++)
        StrBuf_printf(sb, " %s", a->info[a->consts[i]].name);
    StrBuf_append(sb, a->n_consts ? " */\n" : " none */\n");
    StrBuf_printf(sb, "#define %s_NUM_INPUTS %d /* run(inputs):", P, a->n_inputs);
    for (int i = 0; i < a->n_inputs; i++)
        StrBuf_printf(sb, " %s", a->info[a->inputs[i]].name);
    StrBuf_append(sb, " */\n");
    for (int i = 0; i < a->n; i++) {
        char up[32];
        upper(a->info[i].name, up, sizeof up);
        StrBuf_printf(sb, "#define %s_%s_FLOATS %zu\n", P, up, a->info[i].count);
    }
}

static void layout_comment(StrBuf *sb, const Workload *wl) {
    switch (wl->op) {
    case OP_CONV2D:
    case OP_DEPTHWISE_CONV2D:
        if (wl->layout == LAYOUT_NHWC)
            StrBuf_append(
                sb, " * Layouts (NHWC): data[n][h][w][ci], weight[kh][kw][ci][co] (depthwise: [kh][kw][ci][mult]),\n"
                    " * bias[co], residual and out[n][oh][ow][co].\n");
        else
            StrBuf_append(
                sb, " * Layouts (NCHW): data[n][ci][h][w], weight[co][ci][kh][kw] (depthwise: [ci][mult][kh][kw]),\n"
                    " * bias[co], residual and out[n][co][oh][ow].\n");
        StrBuf_append(sb, " * Epilogue: out = act(conv + bias + residual), each part when the workload has it; act is "
                          "ReLU\n * (relu=1) or ReLU6, a clip to [0, 6] (relu6=1).\n");
        break;
    case OP_DENSE:
        StrBuf_append(sb,
                      " * Layouts: data[m][k], weight[n][k], bias[n], out[m][n]; out = relu(data * weight^T + bias)\n"
                      " * (bias and relu when the workload has them).\n");
        break;
    case OP_BATCH_MATMUL:
        StrBuf_append(sb, " * Layouts: a[b][m][k], b[b][n][k], out[b][m][n]; out[i] = a[i] * b[i]^T.\n");
        break;
    default:
        break;
    }
}

static void add_file(ExportKernel *k, const char *prefix, const char *ext, StrBuf *sb) {
    ExportFile *f = &k->files[k->n_files++];
    snprintf(f->name, sizeof f->name, "%s.%s", prefix, ext);
    f->text = StrBuf_take(sb);
    StrBuf_done(sb);
}

/* ---- cpu ----------------------------------------------------------------------- */

static void blocked_macros(StrBuf *sb, const char *P, const char *W, const BlockedLayout *l) {
    StrBuf_printf(sb,
                  "#define %s_%s_N %lld\n#define %s_%s_C %lld\n#define %s_%s_H %lld\n#define %s_%s_W %lld\n"
                  "#define %s_%s_CB %lld\n#define %s_%s_H_ALLOC %lld\n#define %s_%s_W_ALLOC %lld\n"
                  "#define %s_%s_TOP %lld\n#define %s_%s_LEFT %lld\n#define %s_%s_REPEAT %lld\n"
                  "#define %s_%s_FLOATS %lld\n",
                  P, W, (long long)l->n, P, W, (long long)l->c, P, W, (long long)l->h, P, W, (long long)l->w, P, W,
                  (long long)l->cb, P, W, (long long)l->h_alloc, P, W, (long long)l->w_alloc, P, W, (long long)l->top,
                  P, W, (long long)l->left, P, W, (long long)l->repeat, P, W, (long long)BlockedLayout_floats(l));
}

static void cpu_header(StrBuf *sb, const ExportRequest *req, const ArgSplit *a, int mask, const BlockedLayout *in,
                       const BlockedLayout *out, int out_index) {
    const char *P = req->prefix;
    char guard[EXPORT_PREFIX_LEN + 8];
    upper(P, guard, sizeof guard);
    meta_comment(sb, req, "cpu");
    StrBuf_printf(sb,
                  "/*\n"
                  " * ABI (C11; build the .c with cc -O3 -march=native -fopenmp):\n"
                  " *\n"
                  " *   %s_t *%s_create(const float *const *consts);\n"
                  " *       consts: the constant operands (%s_NUM_CONSTS of them, in this order:",
                  P, P, P);
    for (int i = 0; i < a->n_consts; i++)
        StrBuf_printf(sb, " %s", a->info[a->consts[i]].name);
    if (!a->n_consts) StrBuf_append(sb, " none; pass any pointer");
    StrBuf_printf(sb,
                  "),\n"
                  " *       packed once into the kernel's own layout; they need not outlive the call.\n"
                  " *       Returns NULL when out of memory.\n"
                  " *   int %s_run(%s_t *k, const float *const *inputs, float *output);\n"
                  " *       inputs: the other operands (in this order:",
                  P, P);
    for (int i = 0; i < a->n_inputs; i++)
        StrBuf_printf(sb, " %s", a->info[a->inputs[i]].name);
    StrBuf_printf(sb,
                  "), canonical layout;\n"
                  " *       output: %s_OUT_FLOATS floats, canonical layout. Returns 0, or -1 on a NULL argument.\n"
                  " *   void %s_destroy(%s_t *k);\n"
                  " *\n",
                  P, P, P);
    layout_comment(sb, req->wl);
    StrBuf_printf(sb,
                  " *\n"
                  " * Blocked layouts, so that consecutive layers can stay blocked: %s_run is\n"
                  " *   %s_pack_input(k, inputs)            canonical inputs -> the kernel's buffers\n"
                  " *   %s_run_blocked(k, inputs, output)   the computation (the timed part when tuning)\n"
                  " *   %s_unpack_output(k, output)         the kernel's blocked output -> canonical\n"
                  " * %s_INPUT_BLOCKED: the data input is held in the layout %s_BLOCKED_IN_* at %s_blocked_input(k)\n"
                  " * (write it there directly instead of calling pack_input; keep its padding zero).\n"
                  " * %s_OUTPUT_BLOCKED: run_blocked writes the layout %s_BLOCKED_OUT_* at %s_blocked_output(k)\n"
                  " * (and reads a residual, if any, from %s_blocked_residual(k), same layout); otherwise it\n"
                  " * writes `output` directly and unpack_output does nothing. A layout X is\n"
                  " * float[X_N][ceil(X_C / X_CB)][X_H_ALLOC][X_W_ALLOC][X_CB] with element (n, c, y, x) of\n"
                  " * the canonical tensor at [n][c / X_CB][y + X_TOP][x + X_LEFT][c %% X_CB]; when X_REPEAT > 1\n"
                  " * blocked channel c holds canonical channel c / X_REPEAT (depthwise channel multiplier).\n"
                  " * %s_RUN_READS_INPUTS: run_blocked reads canonical inputs (pass them; else NULL is fine).\n"
                  " * %s_borrow_blocked_input(k, buf) makes run_blocked read its blocked input from buf, a\n"
                  " * buffer of the same layout that the caller keeps (another kernel's blocked output, say);\n"
                  " * buf NULL gives it back its own. pack_input would write buf: do not call it meanwhile.\n"
                  " * %s_borrow_blocked_residual likewise for the residual.\n"
                  " *\n"
                  " * A %s_t is not thread-safe; the kernel itself runs on OpenMP threads (OMP_NUM_THREADS).\n"
                  " */\n",
                  P, P, P, P, P, P, P, P, P, P, P, P, P, P, P);
    StrBuf_printf(sb, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n\n", guard, guard);
    StrBuf_append(sb, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    header_args(sb, P, req, a);
    bool run_reads = !(mask & BLOCKED_INPUT) || (req->wl->residual && !(mask & BLOCKED_OUTPUT));
    StrBuf_printf(sb, "#define %s_OUT_INDEX %d\n", P, out_index);
    StrBuf_printf(sb, "#define %s_INPUT_BLOCKED %d\n#define %s_OUTPUT_BLOCKED %d\n#define %s_RUN_READS_INPUTS %d\n", P,
                  (mask & BLOCKED_INPUT) ? 1 : 0, P, (mask & BLOCKED_OUTPUT) ? 1 : 0, P, run_reads ? 1 : 0);
    if (mask & BLOCKED_INPUT) blocked_macros(sb, P, "BLOCKED_IN", in);
    if (mask & BLOCKED_OUTPUT) blocked_macros(sb, P, "BLOCKED_OUT", out);
    StrBuf_printf(sb,
                  "\ntypedef struct %s_s %s_t;\n\n"
                  "%s_t *%s_create(const float *const *consts);\n"
                  "int %s_run(%s_t *k, const float *const *inputs, float *output);\n"
                  "void %s_destroy(%s_t *k);\n"
                  "int %s_pack_input(%s_t *k, const float *const *inputs);\n"
                  "int %s_run_blocked(%s_t *k, const float *const *inputs, float *output);\n"
                  "int %s_unpack_output(%s_t *k, float *output);\n"
                  "float *%s_blocked_input(%s_t *k);    /* NULL unless %s_INPUT_BLOCKED */\n"
                  "float *%s_blocked_output(%s_t *k);   /* NULL unless %s_OUTPUT_BLOCKED */\n"
                  "float *%s_blocked_residual(%s_t *k); /* NULL unless blocked output and a residual */\n"
                  "int %s_borrow_blocked_input(%s_t *k, float *buf);    /* -1 unless %s_INPUT_BLOCKED */\n"
                  "int %s_borrow_blocked_residual(%s_t *k, float *buf); /* -1 without a blocked residual */\n",
                  P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P);
    StrBuf_printf(sb, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s_H */\n", guard);
}

/* NAME_borrow_blocked_input and _residual: the state's buffer pointer set to the caller's (its own kept
 * in own_in / own_res), or back to its own (NULL); -1 where the kernel has no such buffer. */
static void borrow_fns(StrBuf *sb, const char *P, bool in_on, bool res_on) {
    const char *what[2] = {"input", "residual"}, *field[2] = {"in", "res"};
    bool on[2] = {in_on, res_on};
    for (int i = 0; i < 2; i++) {
        if (!on[i]) {
            StrBuf_printf(sb,
                          "int %s_borrow_blocked_%s(%s_t *k, float *buf) {\n    (void)k; (void)buf;\n"
                          "    return -1;\n}\n\n",
                          P, what[i], P);
            continue;
        }
        StrBuf_printf(sb,
                      "int %1$s_borrow_blocked_%2$s(%1$s_t *k, float *buf) {\n    if (!k) return -1;\n"
                      "    if (!k->own_%3$s) {\n        if (!buf) return 0;\n"
                      "        k->own_%3$s = %1$s_state_%3$s(k->state);\n    }\n"
                      "    %1$s_state_set_%3$s(k->state, buf ? buf : k->own_%3$s);\n"
                      "    if (!buf) k->own_%3$s = NULL;\n    return 0;\n}\n\n",
                      P, what[i], field[i]);
    }
}

/* NAME_create: the constants in, tt_setup (which copies what it keeps), the constants out again. */
static void cpu_create(StrBuf *sb, const char *P, const ArgSplit *a) {
    StrBuf_printf(sb, "%s_t *%s_create(const float *const *consts) {\n", P, P);
    if (a->n_consts)
        StrBuf_append(sb, "    if (!consts) return NULL;\n");
    else
        StrBuf_append(sb, "    (void)consts;\n");
    StrBuf_printf(sb, "    %s_t *k = calloc(1, sizeof *k);\n    if (!k) return NULL;\n", P);
    for (int i = 0; i < a->n_consts; i++)
        StrBuf_printf(sb, "    k->args[%d] = (float *)consts[%d]; /* %s: only read */\n", a->consts[i], i,
                      a->info[a->consts[i]].name);
    StrBuf_printf(sb, "    if (tt_setup(k->args, &k->state) != 0) {\n"
                      "        if (k->state) tt_teardown(k->state);\n        free(k);\n        return NULL;\n    }\n");
    for (int i = 0; i < a->n_consts; i++)
        StrBuf_printf(sb, "    k->args[%d] = NULL;\n", a->consts[i]);
    StrBuf_append(sb, "    return k;\n}\n\n");
}

/* The inputs' setter, NAME_pack_input, NAME_run_blocked, NAME_unpack_output and NAME_run. */
static void cpu_runs(StrBuf *sb, const char *P, const ExportRequest *req, const ArgSplit *a, int mask) {
    int out = a->n - 1;
    bool out_blocked = (mask & BLOCKED_OUTPUT) != 0;
    StrBuf_printf(sb, "static void %s_set_inputs(%s_t *k, const float *const *inputs) {\n", P, P);
    if (!a->n_inputs) StrBuf_append(sb, "    (void)k; (void)inputs;\n");
    for (int i = 0; i < a->n_inputs; i++)
        StrBuf_printf(sb, "    k->args[%d] = (float *)inputs[%d]; /* %s */\n", a->inputs[i], i,
                      a->info[a->inputs[i]].name);
    StrBuf_append(sb, "}\n\n");
    StrBuf_printf(sb,
                  "int %s_pack_input(%s_t *k, const float *const *inputs) {\n"
                  "    if (!k || !inputs) return -1;\n    %s_set_inputs(k, inputs);\n    tt_pack(k->state);\n"
                  "    return 0;\n}\n\n",
                  P, P, P);
    bool run_reads = !(mask & BLOCKED_INPUT) || (req->wl->residual && !(mask & BLOCKED_OUTPUT));
    StrBuf_printf(
        sb, "int %s_run_blocked(%s_t *k, const float *const *inputs, float *output) {\n    if (!k) return -1;\n", P, P);
    if (run_reads) StrBuf_append(sb, "    if (!inputs) return -1;\n");
    if (!out_blocked) StrBuf_append(sb, "    if (!output) return -1;\n");
    StrBuf_printf(sb,
                  "    if (inputs) %s_set_inputs(k, inputs);\n    k->args[%d] = output;\n    tt_run(k->state);\n"
                  "    return 0;\n}\n\n",
                  P, out);
    StrBuf_printf(sb,
                  "int %s_unpack_output(%s_t *k, float *output) {\n    if (!k || !output) return -1;\n"
                  "    k->args[%d] = output;\n    tt_finish(k->state);\n    return 0;\n}\n\n",
                  P, P, out);
    StrBuf_printf(sb,
                  "int %s_run(%s_t *k, const float *const *inputs, float *output) {\n"
                  "    if (!k || !inputs || !output) return -1;\n    %s_set_inputs(k, inputs);\n"
                  "    k->args[%d] = output;\n    tt_pack(k->state);\n    tt_run(k->state);\n    tt_finish(k->state);\n"
                  "    return 0;\n}\n\n",
                  P, P, P, out);
}

static void cpu_source(StrBuf *sb, const ExportRequest *req, const ArgSplit *a, int mask, const char *generated) {
    const char *P = req->prefix;
    meta_comment(sb, req, "cpu");
    StrBuf_printf(sb, "#include <stddef.h>\n#include <stdlib.h>\n#include <string.h>\n\n#include \"%s.h\"\n\n", P);
    StrBuf_append(sb, "/* The template's generated kernel (at the end of this file) defines tt_setup, tt_pack,\n"
                      " * tt_run, tt_finish and tt_teardown; they are renamed to this kernel's prefix and hidden\n"
                      " * from a shared library's symbol table. */\n");
    const char *fns[] = {"tt_setup", "tt_pack", "tt_run", "tt_finish", "tt_teardown"};
    for (int i = 0; i < 5; i++)
        StrBuf_printf(sb, "#define %s %s_%s\n", fns[i], P, fns[i]);
    StrBuf_append(sb, "#define TT_HIDDEN __attribute__((visibility(\"hidden\")))\n"
                      "TT_HIDDEN int tt_setup(float **args, void **state);\n"
                      "TT_HIDDEN void tt_pack(void *state);\n"
                      "TT_HIDDEN void tt_run(void *state);\n"
                      "TT_HIDDEN void tt_finish(void *state);\n"
                      "TT_HIDDEN void tt_teardown(void *state);\n");
    bool out_blocked = (mask & BLOCKED_OUTPUT) != 0;
    const char *acc_names[3] = {"blocked_input", "blocked_output", "blocked_residual"};
    const char *acc_state[3] = {"in", "out", "res"};
    bool acc_on[3] = {(mask & BLOCKED_INPUT) != 0, out_blocked, out_blocked && req->wl->residual};
    for (int i = 0; i < 3; i++)
        if (acc_on[i])
            StrBuf_printf(
                sb, "static float *%s_state_%s(void *state);\nstatic void %s_state_set_%s(void *state, float *p);\n", P,
                acc_state[i], P, acc_state[i]);
    StrBuf_printf(sb,
                  "\nstruct %s_s {\n    float *args[%d]; /* Workload_args order, output last */\n"
                  "    void *state;\n"
                  "    float *own_in, *own_res; /* its own buffers while it borrows another's (else NULL) */\n};\n\n",
                  P, a->n);
    cpu_create(sb, P, a);
    cpu_runs(sb, P, req, a, mask);
    borrow_fns(sb, P, acc_on[0], acc_on[2]);
    StrBuf_printf(sb,
                  "void %s_destroy(%s_t *k) {\n    if (!k) return;\n    %s_borrow_blocked_input(k, NULL);\n"
                  "    %s_borrow_blocked_residual(k, NULL);\n    tt_teardown(k->state);\n    free(k);\n}\n\n",
                  P, P, P, P);
    for (int i = 0; i < 3; i++) {
        if (acc_on[i])
            StrBuf_printf(sb, "float *%s_%s(%s_t *k) { return k ? %s_state_%s(k->state) : NULL; }\n", P, acc_names[i],
                          P, P, acc_state[i]);
        else
            StrBuf_printf(sb, "float *%s_%s(%s_t *k) { (void)k; return NULL; }\n", P, acc_names[i], P);
    }
    StrBuf_append(sb, "\n");
    StrBuf_append(sb, "/* ---- generated by the template (unchanged) ---- */\n"
                      "#define TT_HOT_HELPERS 1 /* its pack and unpack run with every call: at -O3 */\n");
    StrBuf_append(sb, generated);
    if (mask) StrBuf_append(sb, "\n/* ---- accessors of the generated state (CpuGen_emitBlockedSetup's St) ---- */\n");
    for (int i = 0; i < 3; i++)
        if (acc_on[i])
            StrBuf_printf(sb,
                          "static float *%1$s_state_%2$s(void *state) { return ((St *)state)->%2$s; }\n"
                          "static void %1$s_state_set_%2$s(void *state, float *p) { ((St *)state)->%2$s = p; }\n",
                          P, acc_state[i]);
}

static Status export_cpu(const ExportRequest *req, const KernelSource *src, ExportKernel *out, char *err) {
    ArgSplit a;
    split_args(req->wl, &a);
    BlockedLayout in, outl;
    memset(&in, 0, sizeof in);
    memset(&outl, 0, sizeof outl);
    int mask = req->tmpl->blocked ? req->tmpl->blocked(req->wl, req->space, req->choice, req->dev, &in, &outl) : 0;
    StrBuf sb;
    StrBuf_init(&sb);
    cpu_header(&sb, req, &a, mask, &in, &outl, a.n - 1);
    add_file(out, req->prefix, "h", &sb);
    StrBuf_init(&sb);
    cpu_source(&sb, req, &a, mask, src->source);
    add_file(out, req->prefix, "c", &sb);
    (void)err;
    return TT_OK;
}

/* ---- gpu: shared header -------------------------------------------------------- */

static void gpu_header(StrBuf *sb, const ExportRequest *req, const ArgSplit *a, const KernelSource *src) {
    const char *P = req->prefix;
    bool ocl = req->dialect == DIALECT_OPENCL;
    char guard[EXPORT_PREFIX_LEN + 8];
    upper(P, guard, sizeof guard);
    meta_comment(sb, req, ocl ? "OpenCL" : "CUDA");
    StrBuf_printf(sb,
                  "/*\n"
                  " * ABI (%s; link with %s):\n"
                  " *\n"
                  " *   %s_t *%s_create(const float *const *consts);\n"
                  " *       %s; consts: the constant operands (in this order:",
                  ocl ? "host C on the OpenCL 1.2 API, kernel in the .cl file and embedded in the .c"
                      : "the .cu holds the kernel and host code on the CUDA Runtime API, extern \"C\"",
                  ocl ? "-lOpenCL" : "-lcudart", P, P,
                  ocl ? "builds the kernel on the first OpenCL device found" : "uses the current CUDA device");
    for (int i = 0; i < a->n_consts; i++)
        StrBuf_printf(sb, " %s", a->info[a->consts[i]].name);
    if (!a->n_consts) StrBuf_append(sb, " none; pass any pointer");
    StrBuf_printf(sb,
                  "),\n"
                  " *       copied once to device buffers. Returns NULL on failure (%s_last_error() says why).\n",
                  P);
    if (ocl)
        StrBuf_printf(sb,
                      " *   %s_t *%s_create_on(cl_context ctx, cl_device_id dev, cl_command_queue queue,\n"
                      " *                          const float *const *consts);  the same on the caller's queue\n",
                      P, P);
    StrBuf_printf(sb,
                  " *   int %s_run(%s_t *k, const float *const *inputs, float *output);\n"
                  " *       inputs (in this order:",
                  P, P);
    for (int i = 0; i < a->n_inputs; i++)
        StrBuf_printf(sb, " %s", a->info[a->inputs[i]].name);
    StrBuf_printf(sb,
                  ") host arrays, copied in; the output is copied back.\n"
                  " *       Returns 0, or non-zero (%s_last_error()).\n"
                  " *   int %s_run_device(%s_t *k);  runs on the device buffers as they are (no copies)\n"
                  " *   %s %s_buffer(%s_t *k, int arg);  device buffer of operand arg (Workload_args order,\n"
                  " *       output last, %s_NUM_ARGS in all), so that layers can chain on the device\n"
                  " *   void %s_destroy(%s_t *k);\n"
                  " *   const char *%s_last_error(void);\n"
                  " *\n",
                  P, P, P, ocl ? "cl_mem" : "float *", P, P, P, P, P, P);
    layout_comment(sb, req->wl);
    StrBuf_printf(sb,
                  " * Launch: grid %lld x %lld x %lld blocks of %lld x %lld x %lld threads%s.\n"
                  " */\n",
                  (long long)src->grid[0], (long long)src->grid[1], (long long)src->grid[2], (long long)src->block[0],
                  (long long)src->block[1], (long long)src->block[2], ocl ? " (global size = grid * block)" : "");
    StrBuf_printf(sb, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n", guard, guard);
    if (ocl)
        StrBuf_append(sb, "#ifndef CL_TARGET_OPENCL_VERSION\n#define CL_TARGET_OPENCL_VERSION 120\n#endif\n"
                          "#include <CL/cl.h>\n");
    StrBuf_append(sb, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    header_args(sb, P, req, a);
    StrBuf_printf(sb, "#define %s_OUT_INDEX %d\n", P, a->n - 1);
    StrBuf_printf(sb,
                  "\ntypedef struct %s_s %s_t;\n\n"
                  "%s_t *%s_create(const float *const *consts);\n",
                  P, P, P, P);
    if (ocl)
        StrBuf_printf(sb,
                      "%s_t *%s_create_on(cl_context ctx, cl_device_id dev, cl_command_queue queue,\n"
                      "    const float *const *consts);\n",
                      P, P);
    StrBuf_printf(sb,
                  "int %s_run(%s_t *k, const float *const *inputs, float *output);\n"
                  "int %s_run_device(%s_t *k);\n"
                  "%s %s_buffer(%s_t *k, int arg);\n"
                  "void %s_destroy(%s_t *k);\n"
                  "const char *%s_last_error(void);\n",
                  P, P, P, P, ocl ? "cl_mem" : "float *", P, P, P, P, P);
    StrBuf_printf(sb, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s_H */\n", guard);
}

/* ---- opencl ---------------------------------------------------------------------- */

/* The GPU hosts' tables of the arguments: each one's size in floats, which
 * are constants (uploaded once) and which are per-call inputs ({-1} when none,
 * so that the arrays are never empty). */
static void arg_tables(StrBuf *sb, const char *P, const ArgSplit *a) {
    StrBuf_printf(sb, "static const size_t %s_floats[%d] = {", P, a->n);
    for (int i = 0; i < a->n; i++)
        StrBuf_printf(sb, "%s%zu", i ? ", " : "", a->info[i].count);
    StrBuf_append(sb, "};\n");
    StrBuf_printf(sb, "static const int %s_const_args[%d] = {", P, a->n_consts ? a->n_consts : 1);
    for (int i = 0; i < a->n_consts; i++)
        StrBuf_printf(sb, "%s%d", i ? ", " : "", a->consts[i]);
    StrBuf_printf(sb, "%s};\nstatic const int %s_input_args[%d] = {", a->n_consts ? "" : "-1", P,
                  a->n_inputs ? a->n_inputs : 1);
    for (int i = 0; i < a->n_inputs; i++)
        StrBuf_printf(sb, "%s%d", i ? ", " : "", a->inputs[i]);
    StrBuf_printf(sb, "%s};\n", a->n_inputs ? "" : "-1");
}

static void ocl_host(StrBuf *sb, const ExportRequest *req, const ArgSplit *a, const KernelSource *src,
                     const char *kernel_text) {
    const char *P = req->prefix;
    int out = a->n - 1;
    meta_comment(sb, req, "OpenCL host");
    StrBuf_printf(sb, "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n#include \"%s.h\"\n\n", P);
    StrBuf_printf(sb, "/* %s.cl */\nstatic const char %s_source[] =\n", P, P);
    append_c_string(sb, kernel_text);
    StrBuf_append(sb, ";\n\n");
    arg_tables(sb, P, a);
    StrBuf_printf(sb,
                  "static const size_t %s_local[3] = {%lld, %lld, %lld};\n"
                  "static const size_t %s_global[3] = {%lld, %lld, %lld};\n\n",
                  P, (long long)src->block[0], (long long)src->block[1], (long long)src->block[2], P,
                  (long long)(src->grid[0] * src->block[0]), (long long)(src->grid[1] * src->block[1]),
                  (long long)(src->grid[2] * src->block[2]));
    StrBuf_printf(sb,
                  "struct %s_s {\n"
                  "    cl_context ctx;\n    cl_command_queue queue;\n    int owns; /* created ctx and queue */\n"
                  "    cl_program prog;\n    cl_kernel kern;\n    cl_mem buf[%d];\n};\n\n"
                  "static _Thread_local char %s_err[512];\n"
                  "const char *%s_last_error(void) { return %s_err; }\n"
                  "static int %s_fail(const char *what, cl_int e) {\n"
                  "    snprintf(%s_err, sizeof %s_err, \"%%s failed (OpenCL error %%d)\", what, (int)e);\n"
                  "    return -1;\n}\n\n",
                  P, a->n, P, P, P, P, P, P);
    StrBuf_printf(sb,
                  "void %s_destroy(%s_t *k) {\n    if (!k) return;\n"
                  "    for (int i = 0; i < %d; i++) if (k->buf[i]) clReleaseMemObject(k->buf[i]);\n"
                  "    if (k->kern) clReleaseKernel(k->kern);\n    if (k->prog) clReleaseProgram(k->prog);\n"
                  "    if (k->owns) {\n        if (k->queue) clReleaseCommandQueue(k->queue);\n"
                  "        if (k->ctx) clReleaseContext(k->ctx);\n    }\n    free(k);\n}\n\n",
                  P, P, a->n);
    /* create_on */
    StrBuf_printf(
        sb,
        "static %s_t *%s_build(%s_t *k, cl_device_id dev, const float *const *consts) {\n"
        "    cl_int e;\n    const char *text = %s_source;\n"
        "    k->prog = clCreateProgramWithSource(k->ctx, 1, &text, NULL, &e);\n"
        "    if (!k->prog) { %s_fail(\"clCreateProgramWithSource\", e); goto fail; }\n"
        "    e = clBuildProgram(k->prog, 1, &dev, \"-cl-std=CL1.2\", NULL, NULL);\n"
        "    if (e != CL_SUCCESS) {\n"
        "        char log[400] = \"\";\n"
        "        clGetProgramBuildInfo(k->prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);\n"
        "        snprintf(%s_err, sizeof %s_err, \"clBuildProgram failed (%%d): %%s\", (int)e, log);\n"
        "        goto fail;\n    }\n"
        "    k->kern = clCreateKernel(k->prog, \"%s_kernel\", &e);\n"
        "    if (!k->kern) { %s_fail(\"clCreateKernel\", e); goto fail; }\n"
        "    for (int i = 0; i < %d; i++) {\n"
        "        k->buf[i] = clCreateBuffer(k->ctx, CL_MEM_READ_WRITE, %s_floats[i] * sizeof(float), NULL, &e);\n"
        "        if (!k->buf[i]) { %s_fail(\"clCreateBuffer\", e); goto fail; }\n"
        "        e = clSetKernelArg(k->kern, (cl_uint)i, sizeof(cl_mem), &k->buf[i]);\n"
        "        if (e != CL_SUCCESS) { %s_fail(\"clSetKernelArg\", e); goto fail; }\n"
        "    }\n"
        "    for (int i = 0; i < %d; i++) {\n"
        "        int a = %s_const_args[i];\n"
        "        e = clEnqueueWriteBuffer(k->queue, k->buf[a], CL_TRUE, 0, %s_floats[a] * sizeof(float),"
        " consts[i], 0, NULL, NULL);\n"
        "        if (e != CL_SUCCESS) { %s_fail(\"clEnqueueWriteBuffer\", e); goto fail; }\n"
        "    }\n"
        "    return k;\nfail:\n    %s_destroy(k);\n    return NULL;\n}\n\n",
        P, P, P, P, P, P, P, P, P, a->n, P, P, P, a->n_consts, P, P, P, P);
    StrBuf_printf(sb,
                  "%s_t *%s_create_on(cl_context ctx, cl_device_id dev, cl_command_queue queue,\n"
                  "    const float *const *consts) {\n"
                  "    if (!ctx || !queue || (%d && !consts)) { snprintf(%s_err, sizeof %s_err, \"NULL argument\");"
                  " return NULL; }\n"
                  "    %s_t *k = calloc(1, sizeof *k);\n"
                  "    if (!k) { snprintf(%s_err, sizeof %s_err, \"out of memory\"); return NULL; }\n"
                  "    k->ctx = ctx;\n    k->queue = queue;\n"
                  "    return %s_build(k, dev, consts);\n}\n\n",
                  P, P, a->n_consts ? 1 : 0, P, P, P, P, P, P);
    StrBuf_printf(sb,
                  "%s_t *%s_create(const float *const *consts) {\n"
                  "    if (%d && !consts) { snprintf(%s_err, sizeof %s_err, \"NULL argument\"); return NULL; }\n"
                  "    cl_platform_id plats[8];\n    cl_uint np = 0;\n    cl_device_id dev = NULL;\n"
                  "    if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS || np == 0) {\n"
                  "        snprintf(%s_err, sizeof %s_err, \"no OpenCL platform\");\n        return NULL;\n    }\n"
                  "    for (cl_uint i = 0; i < np && !dev; i++)\n"
                  "        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) dev = NULL;\n"
                  "    if (!dev) { snprintf(%s_err, sizeof %s_err, \"no OpenCL device\"); return NULL; }\n"
                  "    %s_t *k = calloc(1, sizeof *k);\n"
                  "    if (!k) { snprintf(%s_err, sizeof %s_err, \"out of memory\"); return NULL; }\n"
                  "    k->owns = 1;\n    cl_int e;\n"
                  "    k->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);\n"
                  "    if (!k->ctx) { %s_fail(\"clCreateContext\", e); %s_destroy(k); return NULL; }\n"
                  "    k->queue = clCreateCommandQueue(k->ctx, dev, 0, &e);\n"
                  "    if (!k->queue) { %s_fail(\"clCreateCommandQueue\", e); %s_destroy(k); return NULL; }\n"
                  "    return %s_build(k, dev, consts);\n}\n\n",
                  P, P, a->n_consts ? 1 : 0, P, P, P, P, P, P, P, P, P, P, P, P, P, P);
    StrBuf_printf(
        sb,
        "int %s_run_device(%s_t *k) {\n    if (!k) return -1;\n"
        "    cl_int e = clEnqueueNDRangeKernel(k->queue, k->kern, 3, NULL, %s_global, %s_local, 0, NULL, NULL);\n"
        "    if (e != CL_SUCCESS) return %s_fail(\"clEnqueueNDRangeKernel\", e);\n"
        "    e = clFinish(k->queue);\n"
        "    return e == CL_SUCCESS ? 0 : %s_fail(\"clFinish\", e);\n}\n\n",
        P, P, P, P, P, P);
    StrBuf_printf(
        sb,
        "int %s_run(%s_t *k, const float *const *inputs, float *output) {\n"
        "    if (!k || (%d && !inputs) || !output) { snprintf(%s_err, sizeof %s_err, \"NULL argument\"); return -1; }\n"
        "    for (int i = 0; i < %d; i++) {\n"
        "        int a = %s_input_args[i];\n"
        "        cl_int e = clEnqueueWriteBuffer(k->queue, k->buf[a], CL_FALSE, 0, %s_floats[a] * sizeof(float),"
        " inputs[i], 0, NULL, NULL);\n"
        "        if (e != CL_SUCCESS) return %s_fail(\"clEnqueueWriteBuffer\", e);\n"
        "    }\n"
        "    if (%s_run_device(k) != 0) return -1;\n"
        "    cl_int e = clEnqueueReadBuffer(k->queue, k->buf[%d], CL_TRUE, 0, %s_floats[%d] * sizeof(float),"
        " output, 0, NULL, NULL);\n"
        "    return e == CL_SUCCESS ? 0 : %s_fail(\"clEnqueueReadBuffer\", e);\n}\n\n",
        P, P, a->n_inputs ? 1 : 0, P, P, a->n_inputs, P, P, P, P, out, P, out, P);
    StrBuf_printf(sb, "cl_mem %s_buffer(%s_t *k, int arg) { return k && arg >= 0 && arg < %d ? k->buf[arg] : NULL; }\n",
                  P, P, a->n);
}

/* ---- cuda ------------------------------------------------------------------------ */

static void cuda_source(StrBuf *sb, const ExportRequest *req, const ArgSplit *a, const KernelSource *src,
                        const char *kernel_text) {
    const char *P = req->prefix;
    int out = a->n - 1;
    meta_comment(sb, req, "CUDA");
    StrBuf_printf(sb,
                  "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <cuda_runtime.h>\n\n"
                  "#include \"%s.h\"\n\n",
                  P);
    StrBuf_printf(sb, "/* ---- generated by the template (unchanged; its kernel renamed %s_kernel) ---- */\n", P);
    StrBuf_printf(sb, "#define %s %s_kernel\n", src->entry, P);
    StrBuf_append(sb, kernel_text);
    StrBuf_printf(sb, "#undef %s\n\n/* ---- host code ---- */\n", src->entry);
    arg_tables(sb, P, a);
    StrBuf_append(sb, "\n");
    StrBuf_printf(sb,
                  "struct %s_s {\n    float *buf[%d];\n};\n\n"
                  "static thread_local char %s_err[512];\n"
                  "extern \"C\" const char *%s_last_error(void) { return %s_err; }\n"
                  "static int %s_fail(const char *what, cudaError_t e) {\n"
                  "    snprintf(%s_err, sizeof %s_err, \"%%s failed: %%s\", what, cudaGetErrorString(e));\n"
                  "    return -1;\n}\n\n",
                  P, a->n, P, P, P, P, P, P);
    StrBuf_printf(sb,
                  "extern \"C\" void %s_destroy(%s_t *k) {\n    if (!k) return;\n"
                  "    for (int i = 0; i < %d; i++) if (k->buf[i]) cudaFree(k->buf[i]);\n    free(k);\n}\n\n",
                  P, P, a->n);
    StrBuf_printf(sb,
                  "extern \"C\" %s_t *%s_create(const float *const *consts) {\n"
                  "    if (%d && !consts) { snprintf(%s_err, sizeof %s_err, \"NULL argument\"); return NULL; }\n"
                  "    %s_t *k = (%s_t *)calloc(1, sizeof *k);\n"
                  "    if (!k) { snprintf(%s_err, sizeof %s_err, \"out of memory\"); return NULL; }\n"
                  "    for (int i = 0; i < %d; i++) {\n"
                  "        cudaError_t e = cudaMalloc((void **)&k->buf[i], %s_floats[i] * sizeof(float));\n"
                  "        if (e != cudaSuccess) { %s_fail(\"cudaMalloc\", e); %s_destroy(k); return NULL; }\n"
                  "    }\n"
                  "    for (int i = 0; i < %d; i++) {\n"
                  "        int a = %s_const_args[i];\n"
                  "        cudaError_t e = cudaMemcpy(k->buf[a], consts[i], %s_floats[a] * sizeof(float),"
                  " cudaMemcpyHostToDevice);\n"
                  "        if (e != cudaSuccess) { %s_fail(\"cudaMemcpy\", e); %s_destroy(k); return NULL; }\n"
                  "    }\n    return k;\n}\n\n",
                  P, P, a->n_consts ? 1 : 0, P, P, P, P, P, P, a->n, P, P, P, a->n_consts, P, P, P, P);
    StrBuf_printf(sb,
                  "extern \"C\" int %s_run_device(%s_t *k) {\n    if (!k) return -1;\n"
                  "    %s_kernel<<<dim3(%lld, %lld, %lld), dim3(%lld, %lld, %lld)>>>(",
                  P, P, P, (long long)src->grid[0], (long long)src->grid[1], (long long)src->grid[2],
                  (long long)src->block[0], (long long)src->block[1], (long long)src->block[2]);
    for (int i = 0; i < a->n; i++)
        StrBuf_printf(sb, "%sk->buf[%d]", i ? ", " : "", i);
    StrBuf_printf(sb,
                  ");\n    cudaError_t e = cudaGetLastError();\n"
                  "    if (e != cudaSuccess) return %s_fail(\"kernel launch\", e);\n"
                  "    e = cudaDeviceSynchronize();\n"
                  "    return e == cudaSuccess ? 0 : %s_fail(\"kernel\", e);\n}\n\n",
                  P, P);
    StrBuf_printf(
        sb,
        "extern \"C\" int %s_run(%s_t *k, const float *const *inputs, float *output) {\n"
        "    if (!k || (%d && !inputs) || !output) { snprintf(%s_err, sizeof %s_err, \"NULL argument\"); return -1; }\n"
        "    for (int i = 0; i < %d; i++) {\n"
        "        int a = %s_input_args[i];\n"
        "        cudaError_t e = cudaMemcpy(k->buf[a], inputs[i], %s_floats[a] * sizeof(float),"
        " cudaMemcpyHostToDevice);\n"
        "        if (e != cudaSuccess) return %s_fail(\"cudaMemcpy\", e);\n"
        "    }\n"
        "    if (%s_run_device(k) != 0) return -1;\n"
        "    cudaError_t e = cudaMemcpy(output, k->buf[%d], %s_floats[%d] * sizeof(float), cudaMemcpyDeviceToHost);\n"
        "    return e == cudaSuccess ? 0 : %s_fail(\"cudaMemcpy\", e);\n}\n\n",
        P, P, a->n_inputs ? 1 : 0, P, P, a->n_inputs, P, P, P, P, out, P, out, P);
    StrBuf_printf(
        sb,
        "extern \"C\" float *%s_buffer(%s_t *k, int arg) { return k && arg >= 0 && arg < %d ? k->buf[arg] : NULL; }\n",
        P, P, a->n);
}

static Status export_gpu(const ExportRequest *req, const KernelSource *src, ExportKernel *out, char *err) {
    ArgSplit a;
    split_args(req->wl, &a);
    const char *P = req->prefix;
    StrBuf sb;
    StrBuf_init(&sb);
    gpu_header(&sb, req, &a, src);
    add_file(out, P, "h", &sb);
    if (req->dialect == DIALECT_OPENCL) {
        StrBuf_init(&sb);
        meta_comment(&sb, req, "OpenCL");
        /* the entry renamed to the prefix (OpenCL C has a preprocessor) */
        StrBuf_printf(&sb, "#define %s %s_kernel\n", src->entry, P);
        StrBuf_append(&sb, src->source);
        char *cl = StrBuf_take(&sb);
        StrBuf_done(&sb);
        StrBuf_init(&sb);
        ocl_host(&sb, req, &a, src, cl);
        add_file(out, P, "c", &sb);
        ExportFile *f = &out->files[out->n_files++];
        snprintf(f->name, sizeof f->name, "%s.cl", P);
        f->text = cl;
    } else {
        StrBuf_init(&sb);
        cuda_source(&sb, req, &a, src, src->source);
        add_file(out, P, "cu", &sb);
    }
    (void)err;
    return TT_OK;
}

/* ---- the kernel ----------------------------------------------------------------- */

void ExportKernel_done(ExportKernel *this) {
    for (int i = 0; i < this->n_files; i++)
        free(this->files[i].text);
    memset(this, 0, sizeof *this);
}

Status Export_kernel(const ExportRequest *req, ExportKernel *out, char *err) {
    memset(out, 0, sizeof *out);
    if (Export_checkPrefix(req->prefix, err) != TT_OK) return TT_ERR;
    bool want_cpu = req->dialect == DIALECT_C;
    if (want_cpu != (req->tmpl->family == FAMILY_CPU))
        return tt_fail(err, "template %s does not generate %s code", req->tmpl->name, Export_dialectName(req->dialect));
    char reason[TT_ERRLEN];
    if (req->tmpl->precheck && !req->tmpl->precheck(req->wl, req->space, req->choice, req->dev, reason, sizeof reason))
        return tt_fail(err, "%s: config rejected on this device: %s", req->tmpl->name, reason);
    KernelSource src;
    KernelSource_init(&src);
    char why[TT_ERRLEN] = "";
    Candidate c = {.tmpl = req->tmpl,
                   .wl = req->wl,
                   .space = req->space,
                   .choice = req->choice,
                   .n_choice = req->space->n_knobs,
                   .steps = req->steps};
    if (Candidate_source(&c, req->dev, req->dialect, &src, why) != TT_OK) {
        KernelSource_done(&src);
        return tt_fail(err, "%s: %s", req->tmpl->name, why);
    }
    snprintf(out->prefix, sizeof out->prefix, "%s", req->prefix);
    out->dialect = req->dialect;
    Workload_key(req->wl, out->workload_key, sizeof out->workload_key);
    Status st = want_cpu ? export_cpu(req, &src, out, err) : export_gpu(req, &src, out, err);
    KernelSource_done(&src);
    if (st != TT_OK) ExportKernel_done(out);
    return st;
}

Status Export_defaultChoice(const Template *tmpl, const Workload *wl, const Space *space, const DeviceInfo *dev,
                            int32_t *choice, char *err) {
    uint64_t limit = space->total < 1000000 ? space->total : 1000000;
    char reason[TT_ERRLEN];
    /* the template's own pick from the workload and the device, when it has one and it is valid */
    if (tmpl->default_config) {
        char why[TT_ERRLEN] = "";
        if (tmpl->default_config(wl, space, dev, choice, why) == TT_OK &&
            (!tmpl->precheck || tmpl->precheck(wl, space, choice, dev, reason, sizeof reason)))
            return TT_OK;
    }
    for (uint64_t i = 0; i < limit; i++) {
        Space_decode(space, i, choice);
        if (!tmpl->precheck || tmpl->precheck(wl, space, choice, dev, reason, sizeof reason)) return TT_OK;
    }
    return tt_fail(err, "%s: no valid config among the first %llu of the space", tmpl->name, (unsigned long long)limit);
}

/* ---- bundle --------------------------------------------------------------------- */

void ExportBundle_init(ExportBundle *this, const char *name, Dialect dialect, const DeviceInfo *dev) {
    memset(this, 0, sizeof *this);
    snprintf(this->name, sizeof this->name, "%s", name);
    this->dialect = dialect;
    snprintf(this->cuda_arch, sizeof this->cuda_arch, "90");
    if (dev && strncmp(dev->arch, "sm_", 3) == 0 && dev->arch[3])
        snprintf(this->cuda_arch, sizeof this->cuda_arch, "%s", dev->arch + 3);
}

void ExportBundle_done(ExportBundle *this) {
    for (int i = 0; i < this->n_kernels; i++)
        ExportKernel_done(&this->kernels[i]);
    free(this->kernels);
    for (int i = 0; i < this->n_extra; i++)
        free(this->extra[i].text);
    free(this->extra);
    for (int i = 0; i < this->n_extra_sources; i++)
        free(this->extra_sources[i]);
    free(this->extra_sources);
    memset(this, 0, sizeof *this);
}

Status ExportBundle_add(ExportBundle *this, ExportKernel *k, char *err) {
    for (int i = 0; i < this->n_kernels; i++)
        if (strcmp(this->kernels[i].prefix, k->prefix) == 0)
            return tt_fail(err, "two kernels with the prefix '%s'", k->prefix);
    if (this->n_kernels == this->cap) {
        int cap = this->cap ? this->cap * 2 : 16;
        ExportKernel *p = realloc(this->kernels, (size_t)cap * sizeof *p);
        if (!p) return tt_fail(err, "out of memory");
        this->kernels = p;
        this->cap = cap;
    }
    this->kernels[this->n_kernels++] = *k;
    memset(k, 0, sizeof *k);
    return TT_OK;
}

Status ExportBundle_addFile(ExportBundle *this, const char *name, const char *text, bool compile, char *err) {
    /* a relative name, folders allowed ("tuner/net/nd.c"), never above the bundle's directory */
    if (!name[0] || name[0] == '/' || strstr(name, "..") || strcmp(name, ".") == 0)
        return tt_fail(err, "bad file name '%s'", name);
    if (this->n_extra == this->extra_cap) {
        int cap = this->extra_cap ? this->extra_cap * 2 : 4;
        ExportFile *p = realloc(this->extra, (size_t)cap * sizeof *p);
        if (!p) return tt_fail(err, "out of memory");
        this->extra = p;
        this->extra_cap = cap;
    }
    ExportFile *f = &this->extra[this->n_extra];
    if (strlen(name) >= sizeof f->name) return tt_fail(err, "file name '%s' too long", name);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->text = strdup(text);
    if (!f->text) return tt_fail(err, "out of memory");
    this->n_extra++;
    if (compile) {
        char **p = realloc(this->extra_sources, (size_t)(this->n_extra_sources + 1) * sizeof *p);
        if (!p) return tt_fail(err, "out of memory");
        this->extra_sources = p;
        p[this->n_extra_sources] = strdup(name);
        if (!p[this->n_extra_sources]) return tt_fail(err, "out of memory");
        this->n_extra_sources++;
    }
    return TT_OK;
}

char *ExportBundle_umbrella(const ExportBundle *this) {
    StrBuf sb;
    StrBuf_init(&sb);
    char guard[EXPORT_PREFIX_LEN + 8];
    upper(this->name, guard, sizeof guard);
    StrBuf_printf(&sb,
                  "/* %s.h: the %d %s kernel%s exported by tunetop into this library, one header each\n"
                  " * (each documents its ABI and where its config comes from). */\n"
                  "#ifndef %s_ALL_H\n#define %s_ALL_H\n\n",
                  this->name, this->n_kernels, Export_dialectName(this->dialect), this->n_kernels == 1 ? "" : "s",
                  guard, guard);
    for (int i = 0; i < this->n_kernels; i++)
        StrBuf_printf(&sb, "#include \"%s.h\" /* %s */\n", this->kernels[i].prefix, this->kernels[i].workload_key);
    StrBuf_append(&sb, "\n#endif\n");
    char *r = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return r;
}

static void cmake_sources(StrBuf *sb, const ExportBundle *this) {
    for (int i = 0; i < this->n_kernels; i++)
        for (int f = 0; f < this->kernels[i].n_files; f++) {
            const char *n = this->kernels[i].files[f].name;
            size_t len = strlen(n);
            if ((len > 2 && strcmp(n + len - 2, ".c") == 0) || (len > 3 && strcmp(n + len - 3, ".cu") == 0))
                StrBuf_printf(sb, "  %s\n", n);
        }
    for (int i = 0; i < this->n_extra_sources; i++)
        StrBuf_printf(sb, "  %s\n", this->extra_sources[i]);
}

char *ExportBundle_cmake(const ExportBundle *this) {
    StrBuf sb;
    StrBuf_init(&sb);
    const char *N = this->name;
    bool cuda = this->dialect == DIALECT_CUDA, ocl = this->dialect == DIALECT_OPENCL;
    StrBuf_printf(&sb,
                  "# Builds the kernels exported by tunetop into lib%s.a and lib%s.so (headers: %s.h and one per\n"
                  "# kernel). Needs no tunetop header or library.\n"
                  "#   cmake -S . -B build && cmake --build build\n"
                  "cmake_minimum_required(VERSION 3.13)\n"
                  "project(%s LANGUAGES C%s)\n\n",
                  N, N, N, N, cuda ? " CUDA" : "");
    StrBuf_append(&sb, "set(SOURCES\n");
    cmake_sources(&sb, this);
    StrBuf_append(&sb, ")\n\n");
    if (this->dialect == DIALECT_C) {
        StrBuf_append(&sb,
                      "# The plain compile line of the kernels: cc -O3 -march=native -fopenmp (GNU C11: vector types)\n"
                      "set(KERNEL_FLAGS -std=gnu11 -O3 -march=native -fopenmp)\n");
    } else if (ocl) {
        StrBuf_append(&sb, "find_package(OpenCL REQUIRED)\nset(KERNEL_FLAGS -std=gnu11 -O2)\n");
    } else {
        StrBuf_printf(&sb,
                      "find_package(CUDAToolkit REQUIRED)\nset(CMAKE_CUDA_ARCHITECTURES %s)\n"
                      "set(KERNEL_FLAGS $<$<COMPILE_LANGUAGE:C>:-std=gnu11> -O3)\n",
                      this->cuda_arch);
    }
    StrBuf_printf(&sb,
                  "add_library(%s_objects OBJECT ${SOURCES})\n"
                  "set_target_properties(%s_objects PROPERTIES POSITION_INDEPENDENT_CODE ON)\n"
                  "target_compile_options(%s_objects PRIVATE ${KERNEL_FLAGS})\n"
                  "target_include_directories(%s_objects PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n",
                  N, N, N, N);
    if (ocl) StrBuf_printf(&sb, "target_link_libraries(%s_objects PUBLIC OpenCL::OpenCL)\n", N);
    if (cuda) StrBuf_printf(&sb, "target_link_libraries(%s_objects PUBLIC CUDA::cudart)\n", N);
    StrBuf_printf(&sb,
                  "\nadd_library(%s STATIC $<TARGET_OBJECTS:%s_objects>)\n"
                  "add_library(%s_shared SHARED $<TARGET_OBJECTS:%s_objects>)\n"
                  "set_target_properties(%s_shared PROPERTIES OUTPUT_NAME %s)\n",
                  N, N, N, N, N, N);
    const char *dep = this->dialect == DIALECT_C ? "-fopenmp m" : ocl ? "OpenCL::OpenCL" : "CUDA::cudart";
    StrBuf_printf(&sb,
                  "foreach(lib %s %s_shared)\n"
                  "  target_include_directories(${lib} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n"
                  "  target_link_libraries(${lib} PUBLIC %s)\n"
                  "endforeach()\n",
                  N, N, dep);
    char *r = StrBuf_take(&sb);
    StrBuf_done(&sb);
    return r;
}

/* Writes one file completely (and fsyncs it), or fails with the path and reason. */
static Status write_file(const char *dir, const char *name, const char *text, char *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    /* a name with folders ("runtime/nd.c"): create them below dir */
    for (char *slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return tt_fail(err, "cannot create %s: %s", path, strerror(errno));
        *slash = '/';
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return tt_fail(err, "cannot create %s: %s", path, strerror(errno));
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            close(fd);
            return tt_fail(err, "cannot write %s: %s", path, strerror(e));
        }
        done += (size_t)w;
    }
    if (fsync(fd) != 0 && errno != EINVAL) {
        int e = errno;
        close(fd);
        return tt_fail(err, "cannot write %s: %s", path, strerror(e));
    }
    if (close(fd) != 0) return tt_fail(err, "cannot write %s: %s", path, strerror(errno));
    return TT_OK;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tree(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* 1 = missing, 0 = an empty directory, -1 = something else (err says what; "not empty" for a
 * non-empty directory) */
static int dir_state(const char *dir, char *err) {
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno == ENOENT) return 1;
        tt_fail(err, "cannot look at %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        tt_fail(err, "%s exists and is not a directory", dir);
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        tt_fail(err, "cannot read %s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    if (n) {
        tt_fail(err, "output directory %s exists and is not empty (use --force to replace it)", dir);
        return -1;
    }
    return 0;
}

Status ExportBundle_write(const ExportBundle *this, const char *dir, bool force, char *err) {
    char clean[4096];
    snprintf(clean, sizeof clean, "%s", dir);
    size_t len = strlen(clean);
    while (len > 1 && clean[len - 1] == '/')
        clean[--len] = '\0';
    if (!len) return tt_fail(err, "empty output directory name");
    char why[TT_ERRLEN];
    int state = dir_state(clean, why);
    if (state < 0 && !(force && strstr(why, "not empty"))) return tt_fail(err, "%s", why);
    /* an empty directory is replaced by the rename below (rename(2) may replace an empty one) */

    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", clean);
    if (!mkdtemp(tmp)) return tt_fail(err, "cannot create a directory beside %s: %s", clean, strerror(errno));
    chmod(tmp, 0755);
    Status st = TT_OK;
    for (int i = 0; i < this->n_kernels && st == TT_OK; i++)
        for (int f = 0; f < this->kernels[i].n_files && st == TT_OK; f++)
            st = write_file(tmp, this->kernels[i].files[f].name, this->kernels[i].files[f].text, err);
    for (int i = 0; i < this->n_extra && st == TT_OK; i++)
        st = write_file(tmp, this->extra[i].name, this->extra[i].text, err);
    char name[EXPORT_PREFIX_LEN + 8];
    snprintf(name, sizeof name, "%s.h", this->name);
    bool own_header = false; /* an extra file is NAME.h (a model library's API): it replaces the umbrella */
    for (int i = 0; i < this->n_extra; i++)
        own_header = own_header || !strcmp(this->extra[i].name, name);
    if (st == TT_OK && !own_header) {
        char *u = ExportBundle_umbrella(this);
        st = write_file(tmp, name, u, err);
        free(u);
    }
    if (st == TT_OK) {
        char *c = ExportBundle_cmake(this);
        st = write_file(tmp, "CMakeLists.txt", c, err);
        free(c);
    }
    if (st != TT_OK) {
        remove_tree(tmp);
        return TT_ERR;
    }
    char old[4300] = "";
    if (state < 0) { /* --force over a non-empty directory: move it aside, then drop it */
        snprintf(old, sizeof old, "%s.old-XXXXXX", clean);
        if (!mkdtemp(old) || rename(clean, old) != 0) {
            tt_fail(err, "cannot replace %s: %s", clean, strerror(errno));
            if (old[0]) rmdir(old);
            remove_tree(tmp);
            return TT_ERR;
        }
    }
    if (rename(tmp, clean) != 0) {
        tt_fail(err, "cannot rename %s to %s: %s", tmp, clean, strerror(errno));
        if (old[0]) rename(old, clean);
        remove_tree(tmp);
        return TT_ERR;
    }
    if (old[0]) remove_tree(old);
    return TT_OK;
}
