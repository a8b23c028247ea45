/* tests/data/export_check.c: a small program that links against a library
 * made by `tunetop export` (cpu) and checks every kernel of it against a
 * naive reference written here, independently of tunetop (plain loops, double
 * accumulation). Built by tests/integration/test_export_cli.sh with
 *   cc -std=gnu11 -O2 -I EXPORT_DIR -I GEN_DIR export_check.c libNAME.a -fopenmp -lm
 * where GEN_DIR/kernel_list.h holds one K(prefix) line per exported kernel and
 * EXPORT_DIR has the umbrella header. Prints one line per kernel; exit 0 when
 * every kernel matches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunetop_kernels.h"

typedef struct Spec {
    char op[32];
    long n, ci, h, w, co, kh, kw, sh, sw, ph, pw, dh, dw, mult, m, k, b, nn;
    int nhwc, bias, relu, residual;
} Spec;

static int parse(const char *key, Spec *s) {
    memset(s, 0, sizeof *s);
    s->n = 1, s->sh = s->sw = 1, s->dh = s->dw = 1, s->mult = 1;
    const char *colon = strchr(key, ':');
    if (!colon || colon - key >= (long)sizeof s->op) return -1;
    memcpy(s->op, key, (size_t)(colon - key));
    char buf[512];
    snprintf(buf, sizeof buf, "%s", colon + 1);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (!eq) return -1;
        *eq = '\0';
        const char *k = tok, *v = eq + 1;
        long x = atol(v);
        if (!strcmp(k, "n"))
            s->n = x, s->nn = x;
        else if (!strcmp(k, "ci"))
            s->ci = x;
        else if (!strcmp(k, "h"))
            s->h = x;
        else if (!strcmp(k, "w"))
            s->w = x;
        else if (!strcmp(k, "co"))
            s->co = x;
        else if (!strcmp(k, "kh"))
            s->kh = x;
        else if (!strcmp(k, "kw"))
            s->kw = x;
        else if (!strcmp(k, "stride"))
            s->sh = s->sw = x;
        else if (!strcmp(k, "stride_h"))
            s->sh = x;
        else if (!strcmp(k, "stride_w"))
            s->sw = x;
        else if (!strcmp(k, "pad"))
            s->ph = s->pw = x;
        else if (!strcmp(k, "pad_h"))
            s->ph = x;
        else if (!strcmp(k, "pad_w"))
            s->pw = x;
        else if (!strcmp(k, "dilation"))
            s->dh = s->dw = x;
        else if (!strcmp(k, "dil_h"))
            s->dh = x;
        else if (!strcmp(k, "dil_w"))
            s->dw = x;
        else if (!strcmp(k, "mult"))
            s->mult = x;
        else if (!strcmp(k, "m"))
            s->m = x;
        else if (!strcmp(k, "k"))
            s->k = x;
        else if (!strcmp(k, "b"))
            s->b = x;
        else if (!strcmp(k, "layout"))
            s->nhwc = !strcmp(v, "NHWC");
        else if (!strcmp(k, "bias"))
            s->bias = (int)x;
        else if (!strcmp(k, "relu"))
            s->relu = (int)x;
        else if (!strcmp(k, "residual"))
            s->residual = (int)x;
        else
            return -1;
    }
    if (!strcmp(s->op, "depthwise_conv2d")) s->co = s->ci * s->mult;
    return 0;
}

static int is_conv(const Spec *s) { return !strcmp(s->op, "conv2d") || !strcmp(s->op, "depthwise_conv2d"); }
static long out_h(const Spec *s) { return (s->h + 2 * s->ph - s->dh * (s->kh - 1) - 1) / s->sh + 1; }
static long out_w(const Spec *s) { return (s->w + 2 * s->pw - s->dw * (s->kw - 1) - 1) / s->sw + 1; }

/* operand sizes in Workload_args order, output last; returns the count */
static int sizes(const Spec *s, size_t *cnt, int *is_const) {
    int a = 0;
    if (is_conv(s)) {
        int dw = !strcmp(s->op, "depthwise_conv2d");
        size_t out = (size_t)(s->n * s->co * out_h(s) * out_w(s));
        cnt[a] = (size_t)(s->n * s->ci * s->h * s->w), is_const[a++] = 0;
        cnt[a] = (size_t)(s->co * (dw ? 1 : s->ci) * s->kh * s->kw), is_const[a++] = 1;
        if (s->bias) cnt[a] = (size_t)s->co, is_const[a++] = 1;
        if (s->residual) cnt[a] = out, is_const[a++] = 0;
        cnt[a] = out, is_const[a++] = 0;
    } else if (!strcmp(s->op, "dense")) {
        cnt[a] = (size_t)(s->m * s->k), is_const[a++] = 0;
        cnt[a] = (size_t)(s->nn * s->k), is_const[a++] = 1;
        if (s->bias) cnt[a] = (size_t)s->nn, is_const[a++] = 1;
        cnt[a] = (size_t)(s->m * s->nn), is_const[a++] = 0;
    } else {
        cnt[a] = (size_t)(s->b * s->m * s->k), is_const[a++] = 0;
        cnt[a] = (size_t)(s->b * s->nn * s->k), is_const[a++] = 0;
        cnt[a] = (size_t)(s->b * s->m * s->nn), is_const[a++] = 0;
    }
    return a;
}

static void reference(const Spec *s, float **a, int nargs, float *out) {
    float *bias = s->bias ? a[2] : NULL;
    float *res = s->residual ? a[nargs - 2] : NULL;
    if (is_conv(s)) {
        int dw = !strcmp(s->op, "depthwise_conv2d");
        long OH = out_h(s), OW = out_w(s);
        for (long n = 0; n < s->n; n++)
            for (long co = 0; co < s->co; co++)
                for (long y = 0; y < OH; y++)
                    for (long x = 0; x < OW; x++) {
                        double acc = bias ? bias[co] : 0;
                        long c0 = dw ? co / s->mult : 0, c1 = dw ? c0 + 1 : s->ci;
                        for (long c = c0; c < c1; c++)
                            for (long r = 0; r < s->kh; r++)
                                for (long q = 0; q < s->kw; q++) {
                                    long iy = y * s->sh - s->ph + r * s->dh, ix = x * s->sw - s->pw + q * s->dw;
                                    if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) continue;
                                    double d = s->nhwc ? a[0][((n * s->h + iy) * s->w + ix) * s->ci + c]
                                                       : a[0][((n * s->ci + c) * s->h + iy) * s->w + ix];
                                    long wc = dw ? 0 : c, wci = dw ? 1 : s->ci;
                                    /* NHWC weights: conv [kh][kw][ci][co]; depthwise [kh][kw][ci][mult] = [kh][kw][co]
                                     */
                                    double wv = s->nhwc ? a[1][((r * s->kw + q) * wci + wc) * s->co + co]
                                                        : a[1][((co * wci + wc) * s->kh + r) * s->kw + q];
                                    acc += d * wv;
                                }
                        size_t o = s->nhwc ? (size_t)(((n * OH + y) * OW + x) * s->co + co)
                                           : (size_t)(((n * s->co + co) * OH + y) * OW + x);
                        if (res) acc += res[o];
                        if (s->relu && acc < 0) acc = 0;
                        out[o] = (float)acc;
                    }
    } else if (!strcmp(s->op, "dense")) {
        for (long i = 0; i < s->m; i++)
            for (long j = 0; j < s->nn; j++) {
                double acc = bias ? bias[j] : 0;
                for (long k = 0; k < s->k; k++)
                    acc += (double)a[0][i * s->k + k] * a[1][j * s->k + k];
                if (s->relu && acc < 0) acc = 0;
                out[i * s->nn + j] = (float)acc;
            }
    } else {
        for (long b = 0; b < s->b; b++)
            for (long i = 0; i < s->m; i++)
                for (long j = 0; j < s->nn; j++) {
                    double acc = 0;
                    for (long k = 0; k < s->k; k++)
                        acc += (double)a[0][(b * s->m + i) * s->k + k] * a[1][(b * s->nn + j) * s->k + k];
                    out[(b * s->m + i) * s->nn + j] = (float)acc;
                }
    }
}

static long reduction(const Spec *s) {
    if (is_conv(s)) return (!strcmp(s->op, "depthwise_conv2d") ? 1 : s->ci) * s->kh * s->kw;
    return s->k;
}

static int g_failed;

/* Fills the operands, checks the sizes against the header's, runs, compares. */
#define K(P)                                                                                                           \
    do {                                                                                                               \
        Spec s;                                                                                                        \
        size_t cnt[8];                                                                                                 \
        int isc[8];                                                                                                    \
        if (parse(P##_WORKLOAD, &s) != 0) {                                                                            \
            printf("%s: cannot parse %s\n", #P, P##_WORKLOAD);                                                         \
            g_failed++;                                                                                                \
            break;                                                                                                     \
        }                                                                                                              \
        int na = sizes(&s, cnt, isc);                                                                                  \
        if (na != P##_NUM_ARGS || cnt[na - 1] != (size_t)P##_OUT_FLOATS) {                                             \
            printf("%s: operand count or output size differs from the header\n", #P);                                  \
            g_failed++;                                                                                                \
            break;                                                                                                     \
        }                                                                                                              \
        float *a[8];                                                                                                   \
        const float *consts[8], *inputs[8];                                                                            \
        int nc = 0, ni = 0;                                                                                            \
        unsigned long long st = 12345;                                                                                 \
        for (int i = 0; i < na; i++) {                                                                                 \
            a[i] = malloc(cnt[i] * sizeof(float));                                                                     \
            for (size_t j = 0; j < cnt[i]; j++) {                                                                      \
                st = st * 6364136223846793005ULL + 1442695040888963407ULL;                                             \
                a[i][j] = (float)((double)(st >> 11) / 9007199254740992.0 * 2 - 1);                                    \
            }                                                                                                          \
            if (i < na - 1) {                                                                                          \
                if (isc[i])                                                                                            \
                    consts[nc++] = a[i];                                                                               \
                else                                                                                                   \
                    inputs[ni++] = a[i];                                                                               \
            }                                                                                                          \
        }                                                                                                              \
        float *ref = malloc(cnt[na - 1] * sizeof(float));                                                              \
        reference(&s, a, na, ref);                                                                                     \
        P##_t *k = P##_create(consts);                                                                                 \
        int rc = k ? P##_run(k, inputs, a[na - 1]) : -1;                                                               \
        double tol = 1e-4 * sqrt((double)reduction(&s)) + 1e-5, worst = 0;                                             \
        size_t bad = 0, first = 0;                                                                                     \
        for (size_t j = 0; rc == 0 && j < cnt[na - 1]; j++) {                                                          \
            double d = fabs((double)a[na - 1][j] - ref[j]), lim = tol * (1 + fabs(ref[j]));                            \
            if (!(d <= lim)) {                                                                                         \
                if (!bad) first = j;                                                                                   \
                bad++;                                                                                                 \
            }                                                                                                          \
            if (d > worst) worst = d;                                                                                  \
        }                                                                                                              \
        if (rc != 0)                                                                                                   \
            printf("FAIL %s: create/run failed\n", #P), g_failed++;                                                    \
        else if (bad)                                                                                                  \
            printf("FAIL %s: %zu of %zu elements differ, first at %zu: %g vs reference %g\n", #P, bad, cnt[na - 1],    \
                   first, a[na - 1][first], ref[first]),                                                               \
                g_failed++;                                                                                            \
        else                                                                                                           \
            printf("ok   %s %s: %zu outputs match the reference (max abs diff %.2g)\n", #P, P##_WORKLOAD, cnt[na - 1], \
                   worst);                                                                                             \
        P##_destroy(k);                                                                                                \
        for (int i = 0; i < na; i++)                                                                                   \
            free(a[i]);                                                                                                \
        free(ref);                                                                                                     \
    } while (0);

int main(void) {
#include "kernel_list.h"
    printf("%s\n", g_failed ? "MISMATCH" : "all kernels match the reference");
    return g_failed ? 1 : 0;
}
