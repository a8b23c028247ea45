/* kernels/workload.c: task specs, canonical keys, FLOPs, argument lists,
 * deterministic inputs, the reference implementation and the comparison. */
#include "kernels/workload.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/rng.h"
#include "kernels/templates/te/te_task.h"

/* A tensor larger than this is surely a typo, and its reference would not fit in memory. */
#define MAX_ARG_ELEMENTS ((int64_t)1 << 32)
/* Any single extent, pad, stride or dilation; keeps every size computation far from overflow. */
#define MAX_EXTENT ((int64_t)1 << 24)

static const char *const OP_NAMES[OP_COUNT] = {"conv2d", "depthwise_conv2d", "dense", "batch_matmul"};

const char *Op_name(OpKind op) {
    if (op == OP_EXPR) return "expr";
    return op >= 0 && op < OP_COUNT ? OP_NAMES[op] : "unknown";
}

const char *Layout_name(Layout l) { return l == LAYOUT_NHWC ? "NHWC" : "NCHW"; }

static bool is_conv(const Workload *wl) { return wl->op == OP_CONV2D || wl->op == OP_DEPTHWISE_CONV2D; }

/* ---- spec parsing ------------------------------------------------------------ */

typedef enum { V_EXTENT, V_NONNEG, V_BOOL, V_LAYOUT } ValueKind;

enum {
    M_CONV = 1 << OP_CONV2D,
    M_DW = 1 << OP_DEPTHWISE_CONV2D,
    M_DENSE = 1 << OP_DENSE,
    M_BMM = 1 << OP_BATCH_MATMUL
};
#define M_CONVS (M_CONV | M_DW)

/* Fields a key can set; a "stride"-style key sets two of them. */
typedef enum {
    F_N,
    F_CI,
    F_H,
    F_W,
    F_CO,
    F_KH,
    F_KW,
    F_SH,
    F_SW,
    F_PH,
    F_PW,
    F_DH,
    F_DW,
    F_MULT,
    F_M,
    F_K,
    F_B,
    F_LAYOUT,
    F_BIAS,
    F_RELU,
    F_RESIDUAL,
    F_RELU6,
    F_COUNT
} Field;

typedef struct KeyDef {
    const char *name;
    Field f1, f2; /* f2 == f1 when the key sets one field */
    ValueKind kind;
    int ops;      /* operators that accept the key */
    int required; /* operators that require it */
} KeyDef;

static const KeyDef KEYS[] = {
    {"n", F_N, F_N, V_EXTENT, M_CONVS | M_DENSE | M_BMM, M_DENSE | M_BMM},
    {"ci", F_CI, F_CI, V_EXTENT, M_CONVS, M_CONVS},
    {"h", F_H, F_H, V_EXTENT, M_CONVS, M_CONVS},
    {"w", F_W, F_W, V_EXTENT, M_CONVS, M_CONVS},
    {"co", F_CO, F_CO, V_EXTENT, M_CONV, M_CONV},
    {"mult", F_MULT, F_MULT, V_EXTENT, M_DW, 0},
    {"kh", F_KH, F_KH, V_EXTENT, M_CONVS, M_CONVS},
    {"kw", F_KW, F_KW, V_EXTENT, M_CONVS, M_CONVS},
    {"stride", F_SH, F_SW, V_EXTENT, M_CONVS, 0},
    {"stride_h", F_SH, F_SH, V_EXTENT, M_CONVS, 0},
    {"stride_w", F_SW, F_SW, V_EXTENT, M_CONVS, 0},
    {"pad", F_PH, F_PW, V_NONNEG, M_CONVS, 0},
    {"pad_h", F_PH, F_PH, V_NONNEG, M_CONVS, 0},
    {"pad_w", F_PW, F_PW, V_NONNEG, M_CONVS, 0},
    {"dilation", F_DH, F_DW, V_EXTENT, M_CONVS, 0},
    {"dil_h", F_DH, F_DH, V_EXTENT, M_CONVS, 0},
    {"dil_w", F_DW, F_DW, V_EXTENT, M_CONVS, 0},
    {"layout", F_LAYOUT, F_LAYOUT, V_LAYOUT, M_CONVS, 0},
    {"m", F_M, F_M, V_EXTENT, M_DENSE | M_BMM, M_DENSE | M_BMM},
    {"k", F_K, F_K, V_EXTENT, M_DENSE | M_BMM, M_DENSE | M_BMM},
    {"b", F_B, F_B, V_EXTENT, M_BMM, M_BMM},
    {"bias", F_BIAS, F_BIAS, V_BOOL, M_CONVS | M_DENSE, 0},
    {"relu", F_RELU, F_RELU, V_BOOL, M_CONVS | M_DENSE, 0},
    {"residual", F_RESIDUAL, F_RESIDUAL, V_BOOL, M_CONVS, 0},
    {"relu6", F_RELU6, F_RELU6, V_BOOL, M_CONVS, 0},
};
#define N_KEYS ((int)(sizeof KEYS / sizeof KEYS[0]))

static void set_field(Workload *wl, Field f, int64_t v) {
    switch (f) {
    case F_N:
        wl->n = v;
        break;
    case F_CI:
        wl->ci = v;
        break;
    case F_H:
        wl->h = v;
        break;
    case F_W:
        wl->w = v;
        break;
    case F_CO:
        wl->co = v;
        break;
    case F_KH:
        wl->kh = v;
        break;
    case F_KW:
        wl->kw = v;
        break;
    case F_SH:
        wl->stride_h = v;
        break;
    case F_SW:
        wl->stride_w = v;
        break;
    case F_PH:
        wl->pad_h = v;
        break;
    case F_PW:
        wl->pad_w = v;
        break;
    case F_DH:
        wl->dil_h = v;
        break;
    case F_DW:
        wl->dil_w = v;
        break;
    case F_MULT:
        wl->mult = v;
        break;
    case F_M:
        wl->m = v;
        break;
    case F_K:
        wl->k = v;
        break;
    case F_B:
        wl->b = v;
        break;
    case F_LAYOUT:
        wl->layout = (Layout)v;
        break;
    case F_BIAS:
        wl->bias = v != 0;
        break;
    case F_RELU:
        wl->relu = v != 0;
        break;
    case F_RESIDUAL:
        wl->residual = v != 0;
        break;
    case F_RELU6:
        wl->relu6 = v != 0;
        break;
    case F_COUNT:
        break;
    }
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* One "key=value" item; `given` tracks which fields were set already. */
static Status parse_item(Workload *wl, char *item, bool *given, char *err) {
    char *eq = strchr(item, '=');
    if (!eq) return tt_fail(err, "%s: expected key=value", trim(item));
    *eq = '\0';
    char *key = trim(item), *val = trim(eq + 1);
    const KeyDef *kd = NULL;
    for (int i = 0; i < N_KEYS && !kd; i++)
        if (strcmp(KEYS[i].name, key) == 0) kd = &KEYS[i];
    if (!kd || !(kd->ops & (1 << wl->op)))
        return tt_fail(err, "%s: unknown key for %s", *key ? key : "(empty key)", Op_name(wl->op));
    if (given[kd->f1] || given[kd->f2])
        return tt_fail(err, "%s: given twice (directly or through a combined key such as stride/stride_h)", key);
    if (!*val) return tt_fail(err, "%s: missing value", key);
    int64_t v;
    if (kd->kind == V_LAYOUT) {
        if (strcasecmp(val, "NCHW") == 0)
            v = LAYOUT_NCHW;
        else if (strcasecmp(val, "NHWC") == 0)
            v = LAYOUT_NHWC;
        else
            return tt_fail(err, "%s: '%s' is not NCHW or NHWC", key, val);
    } else {
        char *end;
        errno = 0;
        long long x = strtoll(val, &end, 10);
        if (*end || errno) return tt_fail(err, "%s: '%s' is not a number", key, val);
        v = x;
        if (kd->kind == V_EXTENT && v <= 0) return tt_fail(err, "%s: extent %lld must be positive", key, x);
        if (kd->kind == V_NONNEG && v < 0) return tt_fail(err, "%s: %lld must be >= 0", key, x);
        if (kd->kind == V_BOOL && v != 0 && v != 1) return tt_fail(err, "%s: %lld must be 0 or 1", key, x);
    }
    set_field(wl, kd->f1, v);
    set_field(wl, kd->f2, v);
    given[kd->f1] = given[kd->f2] = true;
    return TT_OK;
}

/* "expr:name=N,te=te-HEX,flops=F,bytes=B,out=O,red=R" (Workload_key of an OP_EXPR). */
static Status parse_expr(char *rest, Workload *out, char *err) {
    Workload wl;
    memset(&wl, 0, sizeof wl);
    wl.op = OP_EXPR;
    int given = 0;
    char *save = NULL;
    for (char *item = strtok_r(rest, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq) return tt_fail(err, "expr: '%s' is not key=value", item);
        *eq = '\0';
        const char *k = trim(item), *v = trim(eq + 1);
        char *end = NULL;
        if (strcmp(k, "name") == 0 || strcmp(k, "te") == 0) {
            char *dst = k[0] == 'n' ? wl.expr_name : wl.expr_te;
            size_t cap = k[0] == 'n' ? sizeof wl.expr_name : sizeof wl.expr_te;
            if (!*v || strlen(v) >= cap) return tt_fail(err, "expr: %s '%s' is empty or too long", k, v);
            snprintf(dst, cap, "%s", v);
            given |= k[0] == 'n' ? 1 : 2;
            continue;
        }
        double d = strtod(v, &end);
        if (end == v || *end || !(d >= 0) || d > 1e30) return tt_fail(err, "expr: %s '%s' is not a size", k, v);
        if (strcmp(k, "flops") == 0 && d >= 1)
            wl.expr_flops = d, given |= 4;
        else if (strcmp(k, "bytes") == 0 && d >= 1)
            wl.expr_bytes = d, given |= 8;
        else if (strcmp(k, "out") == 0 && d >= 1 && d <= (double)MAX_ARG_ELEMENTS)
            wl.expr_out = (int64_t)d, given |= 16;
        else if (strcmp(k, "red") == 0 && d >= 1 && d <= (double)MAX_ARG_ELEMENTS)
            wl.expr_red = (int64_t)d, given |= 32;
        else
            return tt_fail(err, "expr: unknown or out-of-range key %s=%s", k, v);
    }
    static const char *const names[] = {"name", "te", "flops", "bytes", "out", "red"};
    for (int b = 0; b < 6; b++)
        if (!(given & (1 << b))) return tt_fail(err, "%s: missing key for expr", names[b]);
    *out = wl;
    return TT_OK;
}

Status Workload_parse(const char *spec, Workload *out, char *err) {
    char buf[1024];
    if (strlen(spec) >= sizeof buf) return tt_fail(err, "task spec longer than %zu characters", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", spec);
    char *colon = strchr(buf, ':');
    if (colon) *colon = '\0';
    char *opname = trim(buf);
    if (strcmp(opname, "expr") == 0) {
        if (!colon) return tt_fail(err, "expr: expected 'expr:key=value,...'");
        return parse_expr(colon + 1, out, err);
    }
    Workload wl;
    memset(&wl, 0, sizeof wl);
    int op = -1;
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(opname, OP_NAMES[i]) == 0) op = i;
    if (op < 0) return tt_fail(err, "'%s' is not an operator (conv2d, depthwise_conv2d, dense, batch_matmul)", opname);
    if (!colon) return tt_fail(err, "%s: expected '%s:key=value,...'", opname, opname);
    wl.op = (OpKind)op;
    wl.layout = LAYOUT_NCHW;
    if (is_conv(&wl)) {
        wl.n = 1;
        wl.mult = 1;
        wl.stride_h = wl.stride_w = 1;
        wl.dil_h = wl.dil_w = 1;
    }
    bool given[F_COUNT] = {false};
    char *rest = colon + 1, *save = NULL;
    for (char *item = strtok_r(rest, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (!*trim(item)) continue; /* tolerate "a=1,,b=2" and a trailing comma */
        if (parse_item(&wl, item, given, err) != TT_OK) return TT_ERR;
    }
    for (int i = 0; i < N_KEYS; i++)
        if ((KEYS[i].required & (1 << op)) && !given[KEYS[i].f1])
            return tt_fail(err, "%s: missing key for %s", KEYS[i].name, Op_name(wl.op));
    /* (a product of two huge values would overflow: validation refuses them first) */
    if (wl.op == OP_DEPTHWISE_CONV2D) wl.co = wl.ci <= MAX_EXTENT && wl.mult <= MAX_EXTENT ? wl.ci * wl.mult : 0;
    if (Workload_validate(&wl, err) != TT_OK) return TT_ERR;
    *out = wl;
    return TT_OK;
}

/* ---- sizes -------------------------------------------------------------------- */

static int64_t out_extent(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
    int64_t span = in + 2 * pad - dil * (k - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
}

int64_t Workload_outH(const Workload *this) {
    return is_conv(this) ? out_extent(this->h, this->kh, this->stride_h, this->pad_h, this->dil_h) : 1;
}

int64_t Workload_outW(const Workload *this) {
    return is_conv(this) ? out_extent(this->w, this->kw, this->stride_w, this->pad_w, this->dil_w) : 1;
}

/* Reduction length: the number of products summed into one output. */
static int64_t reduction(const Workload *this) {
    switch (this->op) {
    case OP_CONV2D:
        return this->ci * this->kh * this->kw;
    case OP_DEPTHWISE_CONV2D:
        return this->kh * this->kw;
    case OP_EXPR:
        return this->expr_red;
    default:
        return this->k;
    }
}

static size_t out_count(const Workload *this) {
    switch (this->op) {
    case OP_CONV2D:
    case OP_DEPTHWISE_CONV2D:
        return (size_t)(this->n * this->co * Workload_outH(this) * Workload_outW(this));
    case OP_DENSE:
        return (size_t)(this->m * this->n);
    case OP_EXPR:
        return (size_t)this->expr_out;
    default:
        return (size_t)(this->b * this->m * this->n);
    }
}

/* a * b * ... with an overflow/size check; 0 on overflow */
static int64_t safe_prod(const int64_t *v, int n) {
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        if (v[i] <= 0 || __builtin_mul_overflow(p, v[i], &p) || p > MAX_ARG_ELEMENTS) return 0;
    return p;
}

Status Workload_validate(const Workload *this, char *err) {
    if (this->op < 0 || this->op >= OP_COUNT) return tt_fail(err, "operator %d is unknown", (int)this->op);
    const char *op = Op_name(this->op);
    struct {
        const char *name;
        int64_t v;
    } ext[8];
    int ne = 0;
    if (this->relu && this->relu6) return tt_fail(err, "relu6: one activation only (relu=1 or relu6=1)");
    if (is_conv(this)) {
        if (this->layout != LAYOUT_NCHW && this->layout != LAYOUT_NHWC)
            return tt_fail(err, "layout: %d is not NCHW or NHWC", (int)this->layout);
        ext[ne].name = "n", ext[ne++].v = this->n;
        ext[ne].name = "ci", ext[ne++].v = this->ci;
        ext[ne].name = "h", ext[ne++].v = this->h;
        ext[ne].name = "w", ext[ne++].v = this->w;
        ext[ne].name = this->op == OP_CONV2D ? "co" : "mult";
        ext[ne++].v = this->op == OP_CONV2D ? this->co : this->mult;
        ext[ne].name = "kh", ext[ne++].v = this->kh;
        ext[ne].name = "kw", ext[ne++].v = this->kw;
        for (int i = 0; i < ne; i++) {
            if (ext[i].v <= 0)
                return tt_fail(err, "%s: extent %lld must be positive", ext[i].name, (long long)ext[i].v);
            if (ext[i].v > MAX_EXTENT)
                return tt_fail(err, "%s: extent %lld is too large", ext[i].name, (long long)ext[i].v);
        }
        if (this->pad_h > MAX_EXTENT || this->pad_w > MAX_EXTENT || this->stride_h > MAX_EXTENT ||
            this->stride_w > MAX_EXTENT || this->dil_h > MAX_EXTENT || this->dil_w > MAX_EXTENT)
            return tt_fail(err, "pad/stride/dilation: value too large");
        if (this->stride_h <= 0 || this->stride_w <= 0)
            return tt_fail(err, "stride: %lldx%lld must be positive", (long long)this->stride_h,
                           (long long)this->stride_w);
        if (this->dil_h <= 0 || this->dil_w <= 0)
            return tt_fail(err, "dilation: %lldx%lld must be positive", (long long)this->dil_h, (long long)this->dil_w);
        if (this->pad_h < 0 || this->pad_w < 0)
            return tt_fail(err, "pad: %lldx%lld must be >= 0", (long long)this->pad_h, (long long)this->pad_w);
        if (this->op == OP_DEPTHWISE_CONV2D && this->co != this->ci * this->mult)
            return tt_fail(err, "co: depthwise output channels %lld must equal ci * mult = %lld", (long long)this->co,
                           (long long)(this->ci * this->mult));
        /* the kernel extent after dilation must fit inside the padded input */
        if (Workload_outH(this) < 1)
            return tt_fail(err, "kh: output height < 1 (h=%lld, kh=%lld, pad_h=%lld, dil_h=%lld)", (long long)this->h,
                           (long long)this->kh, (long long)this->pad_h, (long long)this->dil_h);
        if (Workload_outW(this) < 1)
            return tt_fail(err, "kw: output width < 1 (w=%lld, kw=%lld, pad_w=%lld, dil_w=%lld)", (long long)this->w,
                           (long long)this->kw, (long long)this->pad_w, (long long)this->dil_w);
    } else {
        if (this->op == OP_BATCH_MATMUL) ext[ne].name = "b", ext[ne++].v = this->b;
        ext[ne].name = "m", ext[ne++].v = this->m;
        ext[ne].name = "n", ext[ne++].v = this->n;
        ext[ne].name = "k", ext[ne++].v = this->k;
        for (int i = 0; i < ne; i++) {
            if (ext[i].v <= 0)
                return tt_fail(err, "%s: extent %lld must be positive", ext[i].name, (long long)ext[i].v);
            if (ext[i].v > MAX_EXTENT)
                return tt_fail(err, "%s: extent %lld is too large", ext[i].name, (long long)ext[i].v);
        }
        if (this->residual) return tt_fail(err, "residual: not supported for %s", op);
        if (this->op == OP_BATCH_MATMUL && (this->bias || this->relu))
            return tt_fail(err, "%s: not supported for batch_matmul", this->bias ? "bias" : "relu");
    }
    /* every argument must fit in memory and in size_t arithmetic */
    int64_t dims[3][4];
    if (is_conv(this)) {
        int64_t d[3][4] = {{this->n, this->ci, this->h, this->w},
                           {this->co, this->op == OP_CONV2D ? this->ci : 1, this->kh, this->kw},
                           {this->n, this->co, Workload_outH(this), Workload_outW(this)}};
        memcpy(dims, d, sizeof d);
    } else {
        int64_t bb = this->op == OP_BATCH_MATMUL ? this->b : 1;
        int64_t d[3][4] = {{bb, this->m, this->k, 1}, {bb, this->n, this->k, 1}, {bb, this->m, this->n, 1}};
        memcpy(dims, d, sizeof d);
    }
    static const char *const what[3] = {"input", "weight", "output"};
    for (int i = 0; i < 3; i++)
        if (!safe_prod(dims[i], 4))
            return tt_fail(err, "%s: the %s tensor has more than %lld elements", op, what[i],
                           (long long)MAX_ARG_ELEMENTS);
    return TT_OK;
}

/* ---- keys --------------------------------------------------------------------- */

static void put_pair(char *buf, size_t n, size_t *used, const char *one, const char *h, const char *w, int64_t vh,
                     int64_t vw) {
    int k;
    if (vh == vw)
        k = snprintf(buf + *used, n - *used, ",%s=%lld", one, (long long)vh);
    else
        k = snprintf(buf + *used, n - *used, ",%s=%lld,%s=%lld", h, (long long)vh, w, (long long)vw);
    if (k > 0) *used = *used + (size_t)k < n ? *used + (size_t)k : n - 1;
}

void Workload_key(const Workload *this, char *buf, size_t n) {
    if (n == 0) return;
    size_t used = 0;
    int k = 0;
    const Workload *w = this;
    switch (w->op) {
    case OP_CONV2D:
    case OP_DEPTHWISE_CONV2D:
        if (w->op == OP_CONV2D)
            k = snprintf(buf, n, "conv2d:n=%lld,ci=%lld,h=%lld,w=%lld,co=%lld,kh=%lld,kw=%lld", (long long)w->n,
                         (long long)w->ci, (long long)w->h, (long long)w->w, (long long)w->co, (long long)w->kh,
                         (long long)w->kw);
        else
            k = snprintf(buf, n, "depthwise_conv2d:n=%lld,ci=%lld,h=%lld,w=%lld,mult=%lld,kh=%lld,kw=%lld",
                         (long long)w->n, (long long)w->ci, (long long)w->h, (long long)w->w, (long long)w->mult,
                         (long long)w->kh, (long long)w->kw);
        used = k < 0 ? 0 : ((size_t)k < n ? (size_t)k : n - 1);
        put_pair(buf, n, &used, "stride", "stride_h", "stride_w", w->stride_h, w->stride_w);
        put_pair(buf, n, &used, "pad", "pad_h", "pad_w", w->pad_h, w->pad_w);
        put_pair(buf, n, &used, "dilation", "dil_h", "dil_w", w->dil_h, w->dil_w);
        k = snprintf(buf + used, n - used, ",layout=%s", Layout_name(w->layout));
        break;
    case OP_DENSE:
        k = snprintf(buf, n, "dense:m=%lld,n=%lld,k=%lld", (long long)w->m, (long long)w->n, (long long)w->k);
        break;
    case OP_BATCH_MATMUL:
        k = snprintf(buf, n, "batch_matmul:b=%lld,m=%lld,n=%lld,k=%lld", (long long)w->b, (long long)w->m,
                     (long long)w->n, (long long)w->k);
        break;
    case OP_EXPR:
        snprintf(buf, n, "expr:name=%s,te=%s,flops=%.0f,bytes=%.0f,out=%lld,red=%lld", w->expr_name, w->expr_te,
                 w->expr_flops, w->expr_bytes, (long long)w->expr_out, (long long)w->expr_red);
        return;
    default:
        snprintf(buf, n, "unknown");
        return;
    }
    used = strlen(buf);
    if (w->bias) used += (size_t)snprintf(buf + used, n - used, ",bias=1");
    if (used < n && w->relu) used += (size_t)snprintf(buf + used, n - used, ",relu=1");
    if (used < n && w->residual && is_conv(w)) used += (size_t)snprintf(buf + used, n - used, ",residual=1");
    if (used < n && w->relu6 && is_conv(w)) snprintf(buf + used, n - used, ",relu6=1");
    (void)k;
}

bool Workload_equal(const Workload *a, const Workload *b) {
    /* The key spells out every field that matters for the operator, so two
     * workloads are equal exactly when their keys are (fields an operator
     * does not use are ignored). */
    char ka[WORKLOAD_KEY_LEN], kb[WORKLOAD_KEY_LEN];
    Workload_key(a, ka, sizeof ka);
    Workload_key(b, kb, sizeof kb);
    return strcmp(ka, kb) == 0;
}

double Workload_flops(const Workload *this) {
    if (this->op == OP_EXPR) return this->expr_flops;
    return 2.0 * (double)out_count(this) * (double)reduction(this);
}

/* Pairs (output position, kernel tap) along one axis whose input lies inside
 * the tensor, not in its zero padding. */
static double valid_taps(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
    double n = 0;
    for (int64_t o = 0; o < out; o++)
        for (int64_t t = 0; t < k; t++) {
            int64_t i = o * stride - pad + t * dil;
            n += i >= 0 && i < in;
        }
    return n;
}

double Workload_usefulFlops(const Workload *this) {
    double all = Workload_flops(this);
    if (!is_conv(this) || (this->pad_h == 0 && this->pad_w == 0)) return all;
    int64_t oh = Workload_outH(this), ow = Workload_outW(this);
    double taps = (double)oh * (double)this->kh * (double)ow * (double)this->kw;
    if (taps <= 0) return all;
    double valid = valid_taps(this->h, oh, this->kh, this->stride_h, this->pad_h, this->dil_h) *
                   valid_taps(this->w, ow, this->kw, this->stride_w, this->pad_w, this->dil_w);
    return all * valid / taps;
}

double Workload_compulsoryBytes(const Workload *this) {
    if (this->op == OP_EXPR) return this->expr_bytes;
    ArgInfo args[WORKLOAD_MAX_ARGS];
    int n = Workload_args(this, args);
    double bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += (double)args[i].count * sizeof(float);
    return bytes;
}

int Workload_args(const Workload *this, ArgInfo *args) {
    int n = 0;
    if (this->op == OP_EXPR && this->expr) return TeTask_args(this->expr, args);
    switch (this->op) {
    case OP_CONV2D:
    case OP_DEPTHWISE_CONV2D: {
        int64_t wci = this->op == OP_CONV2D ? this->ci : 1; /* depthwise: one input channel per output */
        args[n++] = (ArgInfo){"data", (size_t)(this->n * this->ci * this->h * this->w)};
        args[n++] = (ArgInfo){"weight", (size_t)(this->co * wci * this->kh * this->kw)};
        if (this->bias) args[n++] = (ArgInfo){"bias", (size_t)this->co};
        if (this->residual) args[n++] = (ArgInfo){"residual", out_count(this)};
        break;
    }
    case OP_DENSE:
        args[n++] = (ArgInfo){"data", (size_t)(this->m * this->k)};
        args[n++] = (ArgInfo){"weight", (size_t)(this->n * this->k)};
        if (this->bias) args[n++] = (ArgInfo){"bias", (size_t)this->n};
        break;
    case OP_BATCH_MATMUL:
        args[n++] = (ArgInfo){"a", (size_t)(this->b * this->m * this->k)};
        args[n++] = (ArgInfo){"b", (size_t)(this->b * this->n * this->k)};
        break;
    default:
        break;
    }
    args[n++] = (ArgInfo){"out", out_count(this)};
    return n;
}

void Workload_fillInputs(const Workload *this, float **args, uint64_t seed) {
    ArgInfo info[WORKLOAD_MAX_ARGS];
    int n = Workload_args(this, info);
    for (int a = 0; a < n - 1; a++) {
        Rng rng;
        /* one stream per argument, so adding bias does not change the data */
        Rng_seed(&rng, seed * 0x9e3779b97f4a7c15ULL + (uint64_t)a * 0xbf58476d1ce4e5b9ULL + 1);
        for (size_t i = 0; i < info[a].count; i++)
            args[a][i] = (float)(2.0 * Rng_uniform(&rng) - 1.0);
    }
}

/* ---- reference ------------------------------------------------------------------ */

/* Accumulates in double so the reference is the closest float to the exact result. */

static void conv_nchw(const Workload *wl, const float *data, const float *weight, double *acc, int64_t n, int64_t co) {
    int64_t oh = Workload_outH(wl), ow = Workload_outW(wl);
    bool dw = wl->op == OP_DEPTHWISE_CONV2D;
    int64_t c0 = dw ? co / wl->mult : 0, c1 = dw ? c0 + 1 : wl->ci;
    int64_t wci = dw ? 1 : wl->ci;
    for (int64_t i = 0; i < oh * ow; i++)
        acc[i] = 0;
    for (int64_t c = c0; c < c1; c++) {
        const float *in = data + (n * wl->ci + c) * wl->h * wl->w;
        for (int64_t r = 0; r < wl->kh; r++)
            for (int64_t s = 0; s < wl->kw; s++) {
                /* depthwise weight [ci][mult][kh][kw] is [co][1][kh][kw] with co = ci*mult+q */
                double wv = weight[((co * wci + (c - c0)) * wl->kh + r) * wl->kw + s];
                for (int64_t y = 0; y < oh; y++) {
                    int64_t iy = y * wl->stride_h - wl->pad_h + r * wl->dil_h;
                    if (iy < 0 || iy >= wl->h) continue;
                    for (int64_t x = 0; x < ow; x++) {
                        int64_t ix = x * wl->stride_w - wl->pad_w + s * wl->dil_w;
                        if (ix < 0 || ix >= wl->w) continue;
                        acc[y * ow + x] += wv * in[iy * wl->w + ix];
                    }
                }
            }
    }
}

static void conv_nhwc(const Workload *wl, const float *data, const float *weight, double *acc, int64_t n, int64_t y,
                      int64_t x) {
    bool dw = wl->op == OP_DEPTHWISE_CONV2D;
    for (int64_t c = 0; c < wl->co; c++)
        acc[c] = 0;
    for (int64_t r = 0; r < wl->kh; r++) {
        int64_t iy = y * wl->stride_h - wl->pad_h + r * wl->dil_h;
        if (iy < 0 || iy >= wl->h) continue;
        for (int64_t s = 0; s < wl->kw; s++) {
            int64_t ix = x * wl->stride_w - wl->pad_w + s * wl->dil_w;
            if (ix < 0 || ix >= wl->w) continue;
            const float *in = data + ((n * wl->h + iy) * wl->w + ix) * wl->ci;
            if (dw) {
                /* weight [kh][kw][ci][mult]: output channel c*mult+q is contiguous */
                const float *wt = weight + (r * wl->kw + s) * wl->co;
                for (int64_t c = 0; c < wl->co; c++)
                    acc[c] += (double)in[c / wl->mult] * wt[c];
            } else {
                for (int64_t c = 0; c < wl->ci; c++) {
                    const float *wt = weight + ((r * wl->kw + s) * wl->ci + c) * wl->co;
                    double v = in[c];
                    for (int64_t o = 0; o < wl->co; o++)
                        acc[o] += v * wt[o];
                }
            }
        }
    }
}

static float epilogue(const Workload *wl, double v, const float *bias, const float *residual, int64_t ch, size_t i) {
    if (bias) v += bias[ch];
    if (residual) v += residual[i];
    if ((wl->relu || wl->relu6) && v < 0) v = 0;
    if (wl->relu6 && v > 6) v = 6;
    return (float)v;
}

void Workload_reference(const Workload *this, float **args) {
    char err[TT_ERRLEN];
    if (Workload_computeReference(this, args, err) != TT_OK) abort(); /* tests: out of memory */
}

static void reference_builtin(const Workload *this, float **args);

Status Workload_computeReference(const Workload *this, float **args, char *err) {
    if (this->op == OP_EXPR) return this->expr ? TeTask_reference(this->expr, args, err) : TT_OK;
    reference_builtin(this, args);
    return TT_OK;
}

static void reference_builtin(const Workload *this, float **args) {
    const Workload *wl = this;
    ArgInfo info[WORKLOAD_MAX_ARGS];
    int na = Workload_args(wl, info);
    float *out = args[na - 1];
    const float *bias = NULL, *residual = NULL;
    for (int a = 2; a < na - 1; a++) {
        if (strcmp(info[a].name, "bias") == 0) bias = args[a];
        if (strcmp(info[a].name, "residual") == 0) residual = args[a];
    }
    if (is_conv(wl)) {
        int64_t oh = Workload_outH(wl), ow = Workload_outW(wl);
        if (wl->layout == LAYOUT_NCHW) {
            double *acc = malloc((size_t)(oh * ow) * sizeof *acc);
            if (!acc) abort();
            for (int64_t n = 0; n < wl->n; n++)
                for (int64_t c = 0; c < wl->co; c++) {
                    conv_nchw(wl, args[0], args[1], acc, n, c);
                    size_t base = (size_t)((n * wl->co + c) * oh * ow);
                    for (int64_t i = 0; i < oh * ow; i++)
                        out[base + (size_t)i] = epilogue(wl, acc[i], bias, residual, c, base + (size_t)i);
                }
            free(acc);
        } else {
            double *acc = malloc((size_t)wl->co * sizeof *acc);
            if (!acc) abort();
            for (int64_t n = 0; n < wl->n; n++)
                for (int64_t y = 0; y < oh; y++)
                    for (int64_t x = 0; x < ow; x++) {
                        conv_nhwc(wl, args[0], args[1], acc, n, y, x);
                        size_t base = (size_t)(((n * oh + y) * ow + x) * wl->co);
                        for (int64_t c = 0; c < wl->co; c++)
                            out[base + (size_t)c] = epilogue(wl, acc[c], bias, residual, c, base + (size_t)c);
                    }
            free(acc);
        }
        return;
    }
    int64_t batches = wl->op == OP_BATCH_MATMUL ? wl->b : 1;
    for (int64_t b = 0; b < batches; b++) {
        const float *A = args[0] + b * wl->m * wl->k, *B = args[1] + b * wl->n * wl->k;
        float *C = out + b * wl->m * wl->n;
        for (int64_t i = 0; i < wl->m; i++)
            for (int64_t j = 0; j < wl->n; j++) {
                double s = 0;
                for (int64_t p = 0; p < wl->k; p++)
                    s += (double)A[i * wl->k + p] * B[j * wl->k + p];
                C[i * wl->n + j] = epilogue(wl, s, bias, NULL, j, 0);
            }
    }
}

/* ---- comparison -------------------------------------------------------------------- */

/* Where element i of the output sits, in words, for the mismatch message. */
static void describe_index(const Workload *wl, size_t i, char *buf, size_t n) {
    if (wl->op == OP_EXPR) {
        snprintf(buf, n, "element %zu of the output of %s", i, wl->expr_name);
    } else if (is_conv(wl)) {
        int64_t oh = Workload_outH(wl), ow = Workload_outW(wl), c, y, x, b;
        int64_t v = (int64_t)i;
        if (wl->layout == LAYOUT_NCHW) {
            x = v % ow, v /= ow, y = v % oh, v /= oh, c = v % wl->co, b = v / wl->co;
        } else {
            c = v % wl->co, v /= wl->co, x = v % ow, v /= ow, y = v % oh, b = v / oh;
        }
        snprintf(buf, n, "n=%lld c=%lld y=%lld x=%lld", (long long)b, (long long)c, (long long)y, (long long)x);
    } else {
        int64_t v = (int64_t)i, j = v % wl->n, r = (v / wl->n) % wl->m, b = v / (wl->n * wl->m);
        if (wl->op == OP_BATCH_MATMUL)
            snprintf(buf, n, "b=%lld i=%lld j=%lld", (long long)b, (long long)r, (long long)j);
        else
            snprintf(buf, n, "i=%lld j=%lld", (long long)r, (long long)j);
    }
}

bool Workload_compare(const Workload *this, const float *ref, const float *got, char *msg, size_t n) {
    /* Tolerance |got - ref| <= atol + rtol * |ref|, atol = 1e-4 * sqrt(K), rtol = 1e-4.
     * Inputs are in [-1, 1), so each product has standard deviation 1/3 and an
     * output is a sum of K of them, typically of size sqrt(K)/3. A float32
     * kernel summing in any order accumulates rounding errors of about
     * 2^-24 * |partial sum| per step, a random walk whose size is near
     * 6e-8 * sqrt(K)/3 * sqrt(K) ~ 2e-8 * K; blocked kernels do better. For
     * K up to ~5000 (512 channels x 3x3) that is ~1e-4, while the tolerance
     * is 7e-3: no false alarms. A real indexing bug (a missing, doubled or
     * misplaced term) moves the output by a whole product, ~1/3, far above
     * it. rtol covers the bias/residual terms added on top. */
    double K = (double)reduction(this);
    double atol = 1e-4 * sqrt(K > 1 ? K : 1), rtol = 1e-4;
    size_t count = out_count(this), bad = 0, first = 0;
    if (this->op == OP_EXPR && count > 0) {
        /* An expression's outputs need not be of size sqrt(K)/3 (a softmax's
         * are ~1/N): scale the absolute part by the reference's RMS, ten
         * times tighter than above, so that a missing or doubled term of any
         * size fails while float32 summation order passes. */
        double ss = 0;
        size_t finite = 0;
        for (size_t i = 0; i < count; i++)
            if (isfinite(ref[i])) { /* an inf or NaN of the reference is compared apart */
                ss += (double)ref[i] * ref[i];
                finite++;
            }
        atol = finite ? 1e-5 * sqrt(K > 1 ? K : 1) * sqrt(ss / (double)finite) : 0;
        if (!isfinite(atol)) atol = 0; /* huge values: the relative part alone */
    }
    double worst = 0;
    for (size_t i = 0; i < count; i++) {
        double r = ref[i], g = got[i], d = fabs(g - r);
        /* as numpy's allclose(equal_nan=True): NaN equals NaN, an infinity
         * only the same infinity; any other NaN fails */
        if (isnan(r) ? isnan(g) : isinf(r) ? g == r : d <= atol + rtol * fabs(r)) continue;
        if (bad++ == 0) first = i;
        if (!(d <= worst)) worst = d;
    }
    if (bad == 0) return true;
    if (msg && n) {
        char where[96];
        describe_index(this, first, where, sizeof where);
        snprintf(msg, n,
                 "out[%zu] (%s): got %.6g, want %.6g (tolerance %.3g); %zu of %zu elements differ, worst by %.3g",
                 first, where, (double)got[first], (double)ref[first], atol + rtol * fabs((double)ref[first]), bad,
                 count, worst);
    }
    return false;
}
