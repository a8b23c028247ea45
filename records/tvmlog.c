/* records/tvmlog.c: see tvmlog.h. */
#include "records/tvmlog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/strbuf.h"
#include "records/tvmjson.h"

#define TVM_MAX_LINE (64u * 1024 * 1024) /* a longer "line" is damage, not a record */
#define MS_RECORDS "database_tuning_record.json"
#define MS_WORKLOADS "database_workload.json"

const char *TvmFormat_name(TvmFormat f) {
    switch (f) {
    case TVM_FMT_TUNETOP:
        return "tunetop";
    case TVM_FMT_AUTOTVM:
        return "autotvm";
    case TVM_FMT_ANSOR:
        return "autoscheduler";
    case TVM_FMT_METASCHEDULE:
        return "metaschedule";
    default:
        return "unknown";
    }
}

Status TvmFormat_parse(const char *s, TvmFormat *out, char *err) {
    if (strcmp(s, "tunetop") == 0)
        *out = TVM_FMT_TUNETOP;
    else if (strcmp(s, "autotvm") == 0)
        *out = TVM_FMT_AUTOTVM;
    else if (strcmp(s, "autoscheduler") == 0 || strcmp(s, "ansor") == 0)
        *out = TVM_FMT_ANSOR;
    else if (strcmp(s, "metaschedule") == 0)
        *out = TVM_FMT_METASCHEDULE;
    else
        return tt_fail(err, "--format wants tunetop, autotvm, autoscheduler or metaschedule, not '%s'", s);
    return TT_OK;
}

/* ---- small JSON helpers --------------------------------------------------------- */

/* Shorthands over the line's tree (records/tvmjson.h); D is the current JDoc. */
#define AT(n, i) JDoc_at(D, (n), (i))
#define GET(n, k) JDoc_get(D, (n), (k))
#define STR(n) JDoc_str(D, (n))
#define IS_ARR(n) (JDoc_type(D, (n)) == JV_ARR)
#define IS_OBJ(n) (JDoc_type(D, (n)) == JV_OBJ)
#define IS_NUM(n) (JDoc_type(D, (n)) == JV_INT || JDoc_type(D, (n)) == JV_REAL)
#define SIZE(n) JDoc_size(D, (n))
#define get_i64(n, out) JDoc_int(D, (n), (out))
#define IS_STR(n) (STR(n) != NULL)
#define IS_REAL(n) (JDoc_type(D, (n)) == JV_REAL)
#define IS_INT(n) (JDoc_type(D, (n)) == JV_INT)
#define NUM(n) num(D, (n))
/* Walking an array: AT(n, i) walks i siblings, so a loop over a long array
 * steps with these (x = FIRST(n), then x = NEXT(x); JDOC_NONE past the end
 * and for anything but an array, as AT gives). */
#define FIRST(n) (IS_ARR(n) ? JDoc_first(D, (n)) : JDOC_NONE)
#define NEXT(x) JDoc_next(D, (x))

static double num(const JDoc *D, int32_t n) {
    double v = 0;
    JDoc_num(D, n, &v);
    return v;
}

static void copy_str(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Appends printf text to buf (capacity cap) at *pos, cutting at the end. */
static void put(char *buf, size_t cap, size_t *pos, const char *fmt, ...) {
    if (*pos + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *pos, cap - *pos, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    *pos += (size_t)n;
    if (*pos >= cap) *pos = cap - 1;
}

/* The same for a plain string and for an integer, without printf (the readers
 * format a few dozen of these per line, and printf was most of the time). */
static void put_s(char *buf, size_t cap, size_t *pos, const char *s) {
    size_t p = *pos;
    while (*s && p + 1 < cap)
        buf[p++] = *s++;
    buf[p] = '\0';
    *pos = p;
}

static void put_i(char *buf, size_t cap, size_t *pos, int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) tmp[n++] = '-';
    size_t p = *pos;
    while (n > 0 && p + 1 < cap)
        buf[p++] = tmp[--n];
    buf[p] = '\0';
    *pos = p;
}

static uint64_t fnv(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* A key that did not fit is cut and ends with a hash of the whole text, so two
 * long keys that differ only at the end stay distinct. */
static void set_key(TvmRecord *rec, const char *text, size_t len) {
    if (len < sizeof rec->key) {
        memcpy(rec->key, text, len);
        rec->key[len] = '\0';
        return;
    }
    char tail[24];
    int t = snprintf(tail, sizeof tail, "~%016" PRIx64, fnv(text, len));
    size_t keep = sizeof rec->key - 1 - (size_t)t;
    memcpy(rec->key, text, keep);
    memcpy(rec->key + keep, tail, (size_t)t + 1);
}

static void parse_args(const JDoc *D, TvmRecord *rec, int32_t args) {
    rec->n_args = 0;
    size_t n = SIZE(args);
    for (size_t i = 0; i < n && rec->n_args < TVM_MAX_ARGS; i++) {
        int32_t a = AT(args, i);
        TvmArg *g = &rec->args[rec->n_args++];
        memset(g, 0, sizeof *g);
        g->kind = TVM_ARG_OTHER;
        if (IS_ARR(a) && IS_STR(AT(a, 0)) && strcmp(STR(AT(a, 0)), "TENSOR") == 0) {
            g->kind = TVM_ARG_TENSOR;
            int32_t shape = AT(a, 1);
            for (int d = 0; d < SIZE(shape) && g->n < TVM_MAX_DIMS; d++)
                if (!get_i64(AT(shape, d), &g->v[g->n++])) g->v[g->n - 1] = -1;
            int32_t dt = AT(a, 2);
            if (IS_STR(dt)) copy_str(g->s, sizeof g->s, STR(dt));
        } else if (IS_ARR(a)) {
            g->kind = TVM_ARG_INTS;
            for (int d = 0; d < SIZE(a) && g->n < TVM_MAX_DIMS; d++)
                if (!get_i64(AT(a, d), &g->v[g->n++])) g->kind = TVM_ARG_OTHER;
        } else if (get_i64(a, &g->v[0])) {
            g->kind = TVM_ARG_INT;
            g->n = 1;
        } else if (IS_STR(a)) {
            g->kind = TVM_ARG_STR;
            copy_str(g->s, sizeof g->s, STR(a));
        }
    }
}

/* "conv2d_nchw.cuda(1x64x56x56,64x64x3x3,[1,1],[1,1,1,1],[1,1],float32) cuda -model=titanx" */
static void autotvm_key(TvmRecord *rec) {
    char buf[1024];
    size_t p = 0;
    put_s(buf, sizeof buf, &p, rec->task);
    put_s(buf, sizeof buf, &p, "(");
    for (int i = 0; i < rec->n_args; i++) {
        const TvmArg *g = &rec->args[i];
        if (i) put_s(buf, sizeof buf, &p, ",");
        switch (g->kind) {
        case TVM_ARG_TENSOR:
            for (int d = 0; d < g->n; d++) {
                if (d) put_s(buf, sizeof buf, &p, "x");
                put_i(buf, sizeof buf, &p, g->v[d]);
            }
            break;
        case TVM_ARG_INTS:
            put_s(buf, sizeof buf, &p, "[");
            for (int d = 0; d < g->n; d++) {
                if (d) put_s(buf, sizeof buf, &p, ",");
                put_i(buf, sizeof buf, &p, g->v[d]);
            }
            put_s(buf, sizeof buf, &p, "]");
            break;
        case TVM_ARG_INT:
            put_i(buf, sizeof buf, &p, g->v[0]);
            break;
        case TVM_ARG_STR:
            put_s(buf, sizeof buf, &p, g->s);
            break;
        default:
            put_s(buf, sizeof buf, &p, "?");
            break;
        }
    }
    put_s(buf, sizeof buf, &p, ") ");
    put_s(buf, sizeof buf, &p, rec->target);
    set_key(rec, buf, p);
}

static bool parse_entity(const JDoc *D, TvmRecord *rec, int32_t entity, char *why) {
    rec->n_knobs = 0;
    size_t p = 0;
    rec->config[0] = '\0';
    if (!IS_ARR(entity)) {
        snprintf(why, TT_ERRLEN, "config has no entity list");
        return false;
    }
    int32_t e = FIRST(entity);
    for (int i = 0; i < SIZE(entity); i++, e = NEXT(e)) {
        int32_t name = AT(e, 0), kind = AT(e, 1), val = AT(e, 2);
        if (!IS_STR(name) || !IS_STR(kind) || val == JDOC_NONE) {
            snprintf(why, TT_ERRLEN, "entity item %d is not [knob, kind, value]", i);
            return false;
        }
        if (p) put_s(rec->config, sizeof rec->config, &p, " ");
        put_s(rec->config, sizeof rec->config, &p, STR(name));
        put_s(rec->config, sizeof rec->config, &p, "=");
        if (rec->n_knobs == TVM_MAX_KNOBS) continue; /* kept in the text, not for import */
        TvmKnob *k = &rec->knobs[rec->n_knobs++];
        memset(k, 0, sizeof *k);
        copy_str(k->name, sizeof k->name, STR(name));
        copy_str(k->kind, sizeof k->kind, STR(kind));
        if (IS_ARR(val)) {
            k->is_list = true;
            put_s(rec->config, sizeof rec->config, &p, "[");
            int32_t x = FIRST(val);
            for (int d = 0; d < SIZE(val); d++, x = NEXT(x)) {
                int64_t v;
                if (get_i64(x, &v)) {
                    if (k->n < TVM_MAX_DIMS) k->v[k->n++] = v;
                    if (d) put_s(rec->config, sizeof rec->config, &p, ",");
                    put_i(rec->config, sizeof rec->config, &p, v);
                } else {
                    k->is_list = false; /* annotations: strings */
                    put(rec->config, sizeof rec->config, &p, "%s%s", d ? "," : "", IS_STR(x) ? STR(x) : "?");
                }
            }
            put_s(rec->config, sizeof rec->config, &p, "]");
        } else if (get_i64(val, &k->v[0])) {
            k->is_int = true;
            k->n = 1;
            put_i(rec->config, sizeof rec->config, &p, k->v[0]);
        } else if (IS_STR(val)) {
            put(rec->config, sizeof rec->config, &p, "%s", STR(val));
        } else if (IS_REAL(val)) {
            put(rec->config, sizeof rec->config, &p, "%g", NUM(val));
        } else {
            put(rec->config, sizeof rec->config, &p, "?");
        }
    }
    return true;
}

/* [[costs...], error_no, all_cost, timestamp] */
static bool parse_result(const JDoc *D, TvmRecord *rec, int32_t r, char *why) {
    int32_t costs = AT(r, 0);
    int64_t e;
    if (!IS_ARR(r) || !get_i64(AT(r, 1), &e)) {
        snprintf(why, TT_ERRLEN, "result is not [costs, error_no, all_cost, timestamp]");
        return false;
    }
    rec->error_no = (int)e;
    rec->n_costs = 0;
    int32_t c = FIRST(costs);
    for (int i = 0; i < SIZE(costs) && rec->n_costs < REC_MAX_COSTS; i++, c = NEXT(c))
        if (IS_NUM(c)) rec->costs[rec->n_costs++] = NUM(c);
    if (IS_ARR(costs) == false && IS_NUM(costs)) rec->costs[rec->n_costs++] = NUM(costs);
    int32_t ac = AT(r, 2), ts = AT(r, 3);
    rec->all_cost = IS_NUM(ac) ? NUM(ac) : 0;
    rec->timestamp = IS_NUM(ts) ? NUM(ts) : 0;
    return true;
}

static bool parse_autotvm(const JDoc *D, TvmRecord *rec, int32_t root, char *why) {
    int32_t input = GET(root, "input"), config = GET(root, "config");
    int32_t result = GET(root, "result");
    if (input == JDOC_NONE) { /* the compact form: "i": [target, name, args, kwargs, workload, config] */
        input = GET(root, "i");
        result = GET(root, "r");
        config = AT(input, 5);
    }
    if (!IS_ARR(input) || !IS_STR(AT(input, 0)) || !IS_STR(AT(input, 1))) {
        snprintf(why, TT_ERRLEN, "not an AutoTVM record (no [target, task_name, args, ...] input)");
        return false;
    }
    if (!IS_OBJ(config)) {
        snprintf(why, TT_ERRLEN, "AutoTVM record without a config");
        return false;
    }
    copy_str(rec->target, sizeof rec->target, STR(AT(input, 0)));
    copy_str(rec->task, sizeof rec->task, STR(AT(input, 1)));
    parse_args(D, rec, AT(input, 2));
    int32_t idx = GET(config, "index");
    if (idx == JDOC_NONE) idx = GET(config, "i");
    rec->has_index = get_i64(idx, &rec->index);
    int32_t entity = GET(config, "entity");
    if (entity == JDOC_NONE) entity = GET(config, "e");
    if (!parse_entity(D, rec, entity, why)) return false;
    if (!parse_result(D, rec, result, why)) return false;
    autotvm_key(rec);
    return true;
}

static const char *ANN[] = {"none",        "unroll",     "vectorize",   "parallel",   "vthread",    "blockIdx.x",
                            "threadIdx.x", "blockIdx.y", "threadIdx.y", "blockIdx.z", "threadIdx.z"};

/* A short text of an auto-scheduler state: its split factors and pragmas. */
static void ansor_config(const JDoc *D, TvmRecord *rec, int32_t steps) {
    size_t p = 0;
    rec->config[0] = '\0';
    int n = SIZE(steps);
    put(rec->config, sizeof rec->config, &p, "%d steps:", n);
    int32_t s = FIRST(steps);
    for (int i = 0; i < n; i++, s = NEXT(s)) {
        const char *code = STR(AT(s, 0));
        if (!code) continue;
        if (strcmp(code, "SP") == 0) {
            int32_t f = AT(s, 4);
            put(rec->config, sizeof rec->config, &p, " SP[");
            int32_t x = FIRST(f);
            for (int d = 0; d < SIZE(f); d++, x = NEXT(x)) {
                int64_t v = 0;
                get_i64(x, &v);
                put(rec->config, sizeof rec->config, &p, "%s%" PRId64, d ? "," : "", v);
            }
            put(rec->config, sizeof rec->config, &p, "]");
        } else if (strcmp(code, "PR") == 0) {
            const char *pr = STR(AT(s, 3));
            if (pr) put(rec->config, sizeof rec->config, &p, " %s", pr);
        } else if (strcmp(code, "AN") == 0) {
            int64_t a = 0;
            if (get_i64(AT(s, 3), &a) && a > 1 && a < (int64_t)(sizeof ANN / sizeof ANN[0]))
                put(rec->config, sizeof rec->config, &p, " %s", ANN[a]);
        }
    }
}

static bool parse_ansor(const JDoc *D, TvmRecord *rec, int32_t root, char *why) {
    int32_t i = GET(root, "i");
    int32_t task = AT(i, 0), state = AT(i, 1);
    int32_t wkey = AT(task, 0), target = AT(task, 1);
    if (!IS_ARR(task) || !IS_STR(wkey) || !IS_STR(target)) {
        snprintf(why, TT_ERRLEN, "not an auto-scheduler record (no [workload_key, target, ...] task)");
        return false;
    }
    copy_str(rec->target, sizeof rec->target, STR(target));
    /* the workload key is itself JSON: ["hash", dims...]; its hash names the task */
    const char *wk = STR(wkey);
    const char *q1 = strchr(wk, '"'), *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
    if (q1 && q2 && q2 - q1 - 1 > 0) {
        size_t n = (size_t)(q2 - q1 - 1);
        if (n >= sizeof rec->task) n = sizeof rec->task - 1;
        memcpy(rec->task, q1 + 1, n);
        rec->task[n] = '\0';
    } else {
        copy_str(rec->task, sizeof rec->task, wk);
    }
    char buf[1024];
    size_t p = 0;
    put(buf, sizeof buf, &p, "%s %s", wk, rec->target);
    set_key(rec, buf, p);
    ansor_config(D, rec, AT(state, 1));
    rec->has_index = false;
    return parse_result(D, rec, GET(root, "r"), why);
}

/* ---- detection ------------------------------------------------------------------- */

/* Which JSON-lines format a parsed line is, or TVM_FMT_UNKNOWN. */
static TvmFormat classify(const JDoc *D, int32_t root) {
    if (IS_ARR(root) && IS_INT(AT(root, 0)) && IS_ARR(AT(root, 1))) return TVM_FMT_METASCHEDULE;
    if (!IS_OBJ(root)) return TVM_FMT_UNKNOWN;
    if (GET(root, "input") != JDOC_NONE && GET(root, "config") != JDOC_NONE) return TVM_FMT_AUTOTVM;
    int32_t i = GET(root, "i");
    if (!IS_ARR(i) || GET(root, "r") == JDOC_NONE) return TVM_FMT_UNKNOWN;
    int32_t v = GET(root, "v");
    if (IS_ARR(AT(i, 0)) || (IS_STR(v) && STR(v)[0] == 'v')) return TVM_FMT_ANSOR;
    if (IS_STR(AT(i, 0))) return TVM_FMT_AUTOTVM;
    return TVM_FMT_UNKNOWN;
}

static bool dir_has(const char *dir, const char *name) {
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* "a FIFO", "a character device", ...: what a path that is no log file is. */
static const char *file_kind(mode_t m) {
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
           : S_ISDIR(m)  ? "a directory"
                         : "not a regular file";
}

/* ---- line reading ------------------------------------------------------------------ */

typedef struct LineFile {
    int fd;                 /* -1 for bytes in memory */
    char *buf;              /* in memory: the caller's bytes, never written nor freed */
    size_t start, len, cap; /* unconsumed bytes are buf[start..len) */
    bool eof;
    bool tail_taken; /* the last line was taken before its newline came */
    long line;       /* complete lines consumed */
} LineFile;

static Status LineFile_open(LineFile *this, const char *path, char *err) {
    memset(this, 0, sizeof *this);
    /* O_NONBLOCK: a FIFO must not wait for a writer; the type check refuses it */
    this->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (this->fd < 0) return tt_fail(err, "%s: %s", path, strerror(errno));
    struct stat sb = {0};
    if (fstat(this->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        Status st = tt_fail(err, "%s is %s, not a log file", path, file_kind(sb.st_mode));
        close(this->fd);
        this->fd = -1;
        return st;
    }
    fcntl(this->fd, F_SETFL, fcntl(this->fd, F_GETFL) & ~O_NONBLOCK);
    this->cap = 1 << 20;
    this->buf = malloc(this->cap);
    if (!this->buf) abort();
    return TT_OK;
}

/* The lines of bytes[0..len), read in place: all of them are there already. */
static void LineFile_openMemory(LineFile *this, const void *bytes, size_t len) {
    memset(this, 0, sizeof *this);
    this->fd = -1;
    this->buf = (char *)bytes; /* read only: at the end of the data LineFile_next neither moves nor reads */
    this->len = this->cap = len;
    this->eof = true;
}

static void LineFile_close(LineFile *this) {
    if (this->fd >= 0) {
        close(this->fd);
        free(this->buf);
    }
    this->fd = -1;
    this->buf = NULL;
}

/* The next complete line (without its newline) in line and n: 1. At the end: 0,
 * with *n the bytes of an unfinished last line (left in the buffer). -1 on a
 * read error or an over-long line (err says which). */
static int LineFile_next(LineFile *this, const char **line, size_t *n, char *err) {
    for (;;) {
        char *s = this->buf + this->start;
        size_t avail = this->len - this->start;
        char *nl = memchr(s, '\n', avail);
        if (nl) {
            *line = s;
            *n = (size_t)(nl - s);
            this->start += *n + 1;
            bool ends_taken = this->tail_taken && *n == 0;
            this->tail_taken = false;
            if (ends_taken) continue; /* the newline of a line already counted */
            this->line++;
            return 1;
        }
        if (this->eof || this->fd < 0) {
            *line = s;
            *n = avail;
            return 0;
        }
        /* compact, grow, read more */
        if (this->start > 0) {
            memmove(this->buf, s, avail);
            this->start = 0;
            this->len = avail;
        }
        if (this->len == this->cap) {
            if (this->cap >= TVM_MAX_LINE) {
                tt_fail(err, "line %ld is longer than %u MiB", this->line + 1, TVM_MAX_LINE >> 20);
                return -1;
            }
            this->cap *= 2;
            this->buf = realloc(this->buf, this->cap);
            if (!this->buf) abort();
        }
        ssize_t r = read(this->fd, this->buf + this->len, this->cap - this->len);
        if (r < 0) {
            if (errno == EINTR) continue;
            tt_fail(err, "read: %s", strerror(errno));
            return -1;
        }
        if (r == 0) this->eof = true;
        this->len += (size_t)r;
    }
}

/* Consumes an unfinished last line that turned out to be a whole record. */
static void LineFile_takeTail(LineFile *this) {
    this->start = this->len;
    this->line++;
    this->tail_taken = true;
}

static bool blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
    return true;
}

/* ---- format detection ------------------------------------------------------------- */

/* tunetop's log starts with a msgpack map whose first key is "format". */
static bool tunetop_head(const unsigned char *head, size_t got) {
    return got >= 8 && (head[0] & 0xf0) == 0x80 &&
           memcmp(head + 1,
                  "\xa6"
                  "format",
                  7) == 0;
}

/* JSON lines: the first of the first 16 non-empty lines that parses decides. */
static TvmFormat detect_lines(LineFile *lf) {
    const char *line;
    size_t n;
    int got, tried = 0;
    char err[TT_ERRLEN];
    TvmFormat fmt = TVM_FMT_UNKNOWN;
    JDoc doc;
    JDoc_init(&doc);
    /* an unfinished last line (got == 0, n > 0) is tried as it is */
    while (fmt == TVM_FMT_UNKNOWN && tried < 16 && (got = LineFile_next(lf, &line, &n, err)) >= 0) {
        size_t k = 0;
        while (k < n && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r'))
            k++;
        if (k < n && line[k] != '#') {                   /* not blank, nor a comment as TVM's loader allows */
            if (line[k] != '{' && line[k] != '[') break; /* not JSON lines at all */
            tried++;
            char why[128];
            if (JDoc_parse(&doc, line, n, why, sizeof why)) fmt = classify(&doc, 0);
        }
        if (got == 0) break;
    }
    JDoc_done(&doc);
    return fmt;
}

static Status detect_unknown(const char *name, char *err) {
    return tt_fail(err,
                   "%s is not a tunetop log, nor an AutoTVM or auto-scheduler record file, nor a "
                   "MetaSchedule work directory (--format names one)",
                   name);
}

Status TvmLog_detect(const char *path, TvmFormat *out, char *err) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) return tt_fail(err, "log %s does not exist", path);
        return tt_fail(err, "%s: %s", path, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode))
        /* a FIFO or a device: it could block, or never end; no log of any format is one */
        return tt_fail(err, "%s is %s, not a log file", path, file_kind(sb.st_mode));
    if (S_ISDIR(sb.st_mode)) {
        if (dir_has(path, MS_RECORDS)) {
            *out = TVM_FMT_METASCHEDULE;
            return TT_OK;
        }
        return tt_fail(err, "%s: a directory without " MS_RECORDS " (not a MetaSchedule work directory)", path);
    }
    LineFile lf;
    if (LineFile_open(&lf, path, err) != TT_OK) return TT_ERR;
    unsigned char head[16];
    ssize_t got = pread(lf.fd, head, sizeof head, 0); /* at offset 0: lf reads on from the start */
    if (got <= 0) {
        Status st = got < 0 ? tt_fail(err, "%s: %s", path, strerror(errno))
                            : tt_fail(err, "%s: empty file (no format to tell; --format names one)", path);
        LineFile_close(&lf);
        return st;
    }
    if (tunetop_head(head, (size_t)got)) {
        LineFile_close(&lf);
        *out = TVM_FMT_TUNETOP;
        return TT_OK;
    }
    TvmFormat fmt = detect_lines(&lf);
    LineFile_close(&lf);
    if (fmt == TVM_FMT_METASCHEDULE) {
        /* the record file of a work directory, named directly */
        const char *slash = strrchr(path, '/');
        char dir[1024];
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
        if (!dir_has(dir, MS_WORKLOADS))
            return tt_fail(err, "%s: MetaSchedule records without " MS_WORKLOADS " beside them", path);
    }
    if (fmt == TVM_FMT_UNKNOWN) return detect_unknown(path, err);
    *out = fmt;
    return TT_OK;
}

Status TvmLog_detectMemory(const void *bytes, size_t len, const char *name, TvmFormat *out, char *err) {
    if (len == 0) return tt_fail(err, "%s: empty file (no format to tell; --format names one)", name);
    if (tunetop_head(bytes, len)) {
        *out = TVM_FMT_TUNETOP;
        return TT_OK;
    }
    LineFile lf;
    LineFile_openMemory(&lf, bytes, len);
    TvmFormat fmt = detect_lines(&lf);
    if (fmt == TVM_FMT_METASCHEDULE)
        return tt_fail(err, "%s: MetaSchedule records, which are read from their work directory", name);
    if (fmt == TVM_FMT_UNKNOWN) return detect_unknown(name, err);
    *out = fmt;
    return TT_OK;
}

/* ---- MetaSchedule ---------------------------------------------------------------------- */

typedef struct MsWorkload {
    char hash[40];
} MsWorkload;

struct TvmReader {
    TvmFormat fmt;
    char path[1024];
    LineFile lf;
    long bad;
    /* MetaSchedule */
    char wl_path[1100];
    LineFile wl;
    MsWorkload *wls;
    int n_wls, cap_wls;
    JDoc doc;  /* the current line's tree, reused */
    JDoc wdoc; /* a workload line's */
};

/* Reads the workload lines appended since the last call. */
static Status ms_read_workloads(TvmReader *this, char *err) {
    const char *line;
    size_t n;
    int r;
    this->wl.eof = false;
    while ((r = LineFile_next(&this->wl, &line, &n, err)) == 1) {
        if (blank(line, n)) continue;
        if (this->n_wls == this->cap_wls) {
            this->cap_wls = this->cap_wls ? this->cap_wls * 2 : 16;
            this->wls = realloc(this->wls, (size_t)this->cap_wls * sizeof *this->wls);
            if (!this->wls) abort();
        }
        MsWorkload *w = &this->wls[this->n_wls++];
        snprintf(w->hash, sizeof w->hash, "?");
        /* [structural_hash, module]: only the hash is kept (the module can be megabytes) */
        char why[128];
        const JDoc *D = &this->wdoc; /* not doc: a record line may be half read when this runs */
        if (JDoc_parse(&this->wdoc, line, n, why, sizeof why)) {
            int32_t h = AT(0, 0);
            int64_t v;
            if (IS_STR(h))
                copy_str(w->hash, sizeof w->hash, STR(h));
            else if (get_i64(h, &v))
                snprintf(w->hash, sizeof w->hash, "%" PRId64, v);
        }
    }
    return r < 0 ? TT_ERR : TT_OK;
}

static void ms_target(const JDoc *D, TvmRecord *rec, int32_t t) {
    if (IS_STR(t)) {
        copy_str(rec->target, sizeof rec->target, STR(t));
    } else if (IS_OBJ(t)) {
        int32_t kind = GET(t, "kind"), mcpu = GET(t, "mcpu");
        int32_t arch = GET(t, "arch");
        snprintf(rec->target, sizeof rec->target, "%s%s%s", IS_STR(kind) ? STR(kind) : "?",
                 IS_STR(mcpu) || IS_STR(arch) ? " " : "",
                 IS_STR(mcpu)   ? STR(mcpu)
                 : IS_STR(arch) ? STR(arch)
                                : "");
    } else {
        snprintf(rec->target, sizeof rec->target, "?");
    }
}

static bool parse_ms(TvmReader *this, const JDoc *D, TvmRecord *rec, int32_t root, char *why, char *err) {
    int64_t w;
    int32_t body = AT(root, 1);
    if (!get_i64(AT(root, 0), &w) || w < 0 || !IS_ARR(body)) {
        snprintf(why, TT_ERRLEN, "not a MetaSchedule record ([workload_index, [trace, run_secs, target, args_info]])");
        return false;
    }
    if (w >= this->n_wls && ms_read_workloads(this, err) != TT_OK) return false;
    if (w >= this->n_wls) {
        snprintf(why, TT_ERRLEN, "workload %" PRId64 " is not in " MS_WORKLOADS " (%d workloads)", w, this->n_wls);
        return false;
    }
    int32_t trace = AT(body, 0), secs = AT(body, 1);
    ms_target(D, rec, AT(body, 2));
    snprintf(rec->task, sizeof rec->task, "workload %" PRId64, w);
    /* args_info: [["TENSOR", dtype, shape], ...] */
    int32_t ai = AT(body, 3);
    rec->n_args = 0;
    for (int i = 0; i < SIZE(ai) && rec->n_args < TVM_MAX_ARGS; i++) {
        int32_t a = AT(ai, i), shape = AT(a, 2);
        TvmArg *g = &rec->args[rec->n_args++];
        memset(g, 0, sizeof *g);
        g->kind = TVM_ARG_TENSOR;
        if (IS_STR(AT(a, 1))) copy_str(g->s, sizeof g->s, STR(AT(a, 1)));
        for (int d = 0; d < SIZE(shape) && g->n < TVM_MAX_DIMS; d++)
            if (!get_i64(AT(shape, d), &g->v[g->n++])) g->v[g->n - 1] = -1;
    }
    char buf[512];
    size_t p = 0;
    put(buf, sizeof buf, &p, "workload %" PRId64 " %s(", w, this->wls[w].hash);
    for (int i = 0; i < rec->n_args; i++) {
        put(buf, sizeof buf, &p, "%s", i ? "," : "");
        for (int d = 0; d < rec->args[i].n; d++)
            put(buf, sizeof buf, &p, "%s%" PRId64, d ? "x" : "", rec->args[i].v[d]);
    }
    put(buf, sizeof buf, &p, ") %s", rec->target);
    set_key(rec, buf, p);
    /* the trace: [instructions, decisions] */
    snprintf(rec->config, sizeof rec->config, "trace of %d instructions, %d decisions", SIZE(AT(trace, 0)),
             SIZE(AT(trace, 1)));
    rec->n_costs = 0;
    rec->error_no = 0;
    int32_t c = FIRST(secs);
    for (int i = 0; i < SIZE(secs) && rec->n_costs < REC_MAX_COSTS; i++, c = NEXT(c))
        if (IS_NUM(c)) rec->costs[rec->n_costs++] = NUM(c);
    /* no run time, or MetaSchedule's 1e10 "failed" marker: not a measurement */
    bool failed = rec->n_costs == 0;
    for (int i = 0; i < rec->n_costs; i++)
        if (!(rec->costs[i] > 0) || rec->costs[i] >= 1e9) failed = true;
    if (failed) {
        rec->error_no = 8; /* UNKNOWN_ERROR: MetaSchedule keeps no reason, only the 1e10 s marker */
        rec->n_costs = 0;
    }
    rec->has_index = false;
    return true;
}

/* ---- the reader ------------------------------------------------------------------- */

Status TvmReader_open(const char *path, TvmFormat fmt, TvmReader **out, char *err) {
    if (fmt != TVM_FMT_AUTOTVM && fmt != TVM_FMT_ANSOR && fmt != TVM_FMT_METASCHEDULE)
        return tt_fail(err, "%s: format %s is not read by the TVM reader", path, TvmFormat_name(fmt));
    TvmReader *r = calloc(1, sizeof *r);
    if (!r) abort();
    r->fmt = fmt;
    r->lf.fd = r->wl.fd = -1;
    JDoc_init(&r->doc);
    JDoc_init(&r->wdoc);
    snprintf(r->path, sizeof r->path, "%s", path);
    char rec_path[1100];
    snprintf(rec_path, sizeof rec_path, "%s", path);
    if (fmt == TVM_FMT_METASCHEDULE) {
        struct stat sb;
        char dir[1024];
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            snprintf(dir, sizeof dir, "%s", path);
            snprintf(rec_path, sizeof rec_path, "%s/" MS_RECORDS, dir);
        } else {
            const char *slash = strrchr(path, '/');
            snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
        }
        snprintf(r->wl_path, sizeof r->wl_path, "%s/" MS_WORKLOADS, dir);
        if (LineFile_open(&r->wl, r->wl_path, err) != TT_OK || ms_read_workloads(r, err) != TT_OK) {
            TvmReader_close(r);
            return TT_ERR;
        }
    }
    if (LineFile_open(&r->lf, rec_path, err) != TT_OK) {
        TvmReader_close(r);
        return TT_ERR;
    }
    *out = r;
    return TT_OK;
}

Status TvmReader_openMemory(const void *bytes, size_t len, const char *name, TvmFormat fmt, TvmReader **out,
                            char *err) {
    if (fmt != TVM_FMT_AUTOTVM && fmt != TVM_FMT_ANSOR)
        return tt_fail(err, "%s: format %s is not read from memory", name, TvmFormat_name(fmt));
    TvmReader *r = calloc(1, sizeof *r);
    if (!r) abort();
    r->fmt = fmt;
    r->wl.fd = -1;
    JDoc_init(&r->doc);
    JDoc_init(&r->wdoc);
    snprintf(r->path, sizeof r->path, "%s", name);
    LineFile_openMemory(&r->lf, bytes, len);
    *out = r;
    return TT_OK;
}

static bool parse_line(TvmReader *this, const char *line, size_t n, TvmRecord *rec, char *why, char *err) {
    char jwhy[200];
    if (!JDoc_parse(&this->doc, line, n, jwhy, sizeof jwhy)) {
        snprintf(why, TT_ERRLEN, "not JSON (%s)", jwhy);
        return false;
    }
    const JDoc *D = &this->doc;
    int32_t root = 0;
    bool ok;
    memset(rec, 0, offsetof(TvmRecord, args));
    rec->format = this->fmt;
    rec->n_args = rec->n_knobs = rec->n_costs = 0;
    rec->has_index = false;
    rec->config[0] = '\0';
    if (this->fmt == TVM_FMT_METASCHEDULE) {
        ok = parse_ms(this, D, rec, root, why, err);
    } else {
        TvmFormat c = classify(D, root);
        if (c != this->fmt) {
            snprintf(why, TT_ERRLEN, "not an %s record (looks like %s)", TvmFormat_name(this->fmt),
                     c == TVM_FMT_UNKNOWN ? "no known record" : TvmFormat_name(c));
            ok = false;
        } else {
            ok = this->fmt == TVM_FMT_AUTOTVM ? parse_autotvm(D, rec, root, why) : parse_ansor(D, rec, root, why);
        }
    }
    return ok;
}

TvmReadStatus TvmReader_next(TvmReader *this, TvmRecord *rec, char *msg) {
    char err[TT_ERRLEN] = "", why[TT_ERRLEN];
    for (;;) {
        const char *line;
        size_t n;
        int got = LineFile_next(&this->lf, &line, &n, err);
        if (got < 0) {
            snprintf(msg, TT_ERRLEN, "%.400s: %.100s", this->path, err);
            return TVM_IOERR;
        }
        long lineno = this->lf.line + (got == 0);
        if (got == 0 && n == 0) return TVM_END;
        if (blank(line, n)) {
            if (got == 0) return TVM_END; /* spaces with no newline yet */
            continue;
        }
        if (line[0] == '#') {             /* a comment line, skipped as TVM's own loader does */
            if (got == 0) return TVM_END; /* its newline may still come */
            continue;
        }
        why[0] = err[0] = '\0';
        bool ok = parse_line(this, line, n, rec, why, err);
        if (err[0]) {
            snprintf(msg, TT_ERRLEN, "%.400s: %.100s", this->wl_path, err);
            return TVM_IOERR;
        }
        if (got == 0) {
            /* no newline yet: whole when it parses, else a writer is mid-line */
            if (!ok) {
                snprintf(msg, TT_ERRLEN, "line %ld is unfinished (%zu bytes, no newline yet)", lineno, n);
                return TVM_PARTIAL;
            }
            LineFile_takeTail(&this->lf);
        }
        if (!ok) {
            this->bad++;
            snprintf(msg, TT_ERRLEN, "line %ld: %.480s", lineno, why);
            return TVM_BAD;
        }
        rec->line = lineno;
        return TVM_RECORD;
    }
}

void TvmReader_follow(TvmReader *this) {
    if (this->lf.fd >= 0) this->lf.eof = false;
}
long TvmReader_lines(const TvmReader *this) { return this->lf.line; }
long TvmReader_bad(const TvmReader *this) { return this->bad; }
long TvmReader_partialBytes(const TvmReader *this) { return (long)(this->lf.len - this->lf.start); }

void TvmReader_close(TvmReader *this) {
    if (!this) return;
    LineFile_close(&this->lf);
    LineFile_close(&this->wl);
    free(this->wls);
    JDoc_done(&this->doc);
    JDoc_done(&this->wdoc);
    free(this);
}

/* ---- records ----------------------------------------------------------------------- */

const char *const TVM_COST_FAULTS[4] = {"", "a cost <= 0", "a NaN or infinite cost", "no cost"};

int TvmRecord_costFault(const TvmRecord *this) {
    if (this->n_costs <= 0) return 3;
    for (int i = 0; i < this->n_costs; i++) {
        if (!isfinite(this->costs[i])) return 2;
        if (this->costs[i] <= 0) return 1;
    }
    return 0;
}

double TvmRecord_mean(const TvmRecord *this) {
    if (this->error_no != 0 || TvmRecord_costFault(this)) return INFINITY;
    double s = 0;
    for (int i = 0; i < this->n_costs; i++)
        s += this->costs[i];
    return s / this->n_costs;
}

void TvmRecord_toRecord(const TvmRecord *this, Record *out) {
    Record_done(out);
    Record_init(out);
    copy_str(out->task_key, sizeof out->task_key, this->key);
    copy_str(out->template_name, sizeof out->template_name, this->task);
    copy_str(out->target, sizeof out->target, this->target);
    out->index = this->has_index && this->index >= 0 ? (uint64_t)this->index : 0;
    memcpy(out->config, this->config, sizeof out->config);
    out->n_costs = this->n_costs;
    memcpy(out->costs, this->costs, sizeof out->costs);
    out->error_no = this->error_no;
    out->timestamp = this->timestamp;
    out->build_s = this->all_cost;
}

static void put_jstr(StrBuf *b, const char *s) {
    StrBuf_append(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[3] = {'\\', (char)*p, 0};
            StrBuf_append(b, e);
        } else if (*p < 0x20) {
            StrBuf_printf(b, "\\u%04x", *p);
        } else {
            StrBuf_appendn(b, (const char *)p, 1);
        }
    }
    StrBuf_append(b, "\"");
}

static void put_num(StrBuf *b, double v) {
    if (!isfinite(v)) {
        StrBuf_append(b, "null");
        return;
    }
    char tmp[40];
    snprintf(tmp, sizeof tmp, "%.15g", v);
    if (strtod(tmp, NULL) != v) snprintf(tmp, sizeof tmp, "%.17g", v);
    StrBuf_append(b, tmp);
}

char *TvmRecord_toJson(const TvmRecord *this) {
    StrBuf b;
    StrBuf_init(&b);
    StrBuf_printf(&b, "{\"format\":\"%s\",\"line\":%ld,\"target\":", TvmFormat_name(this->format), this->line);
    put_jstr(&b, this->target);
    StrBuf_append(&b, ",\"task\":");
    put_jstr(&b, this->task);
    StrBuf_append(&b, ",\"workload\":");
    put_jstr(&b, this->key);
    if (this->has_index)
        StrBuf_printf(&b, ",\"index\":%" PRId64, this->index);
    else
        StrBuf_append(&b, ",\"index\":null");
    StrBuf_append(&b, ",\"config\":");
    put_jstr(&b, this->config);
    StrBuf_append(&b, ",\"costs\":[");
    for (int i = 0; i < this->n_costs; i++) {
        if (i) StrBuf_append(&b, ",");
        put_num(&b, this->costs[i]);
    }
    StrBuf_printf(&b, "],\"err\":%d,\"all_cost\":", this->error_no);
    put_num(&b, this->all_cost);
    StrBuf_append(&b, ",\"ts\":");
    put_num(&b, this->timestamp);
    StrBuf_append(&b, "}");
    char *s = StrBuf_take(&b);
    StrBuf_done(&b);
    return s;
}

/* ---- the streaming summary ------------------------------------------------------------- */

static const char *key_of(const void *tasks, int i) { return ((const TvmTaskSummary *)tasks)[i].key; }

void TvmSummary_init(TvmSummary *this, TvmFormat fmt) {
    memset(this, 0, sizeof *this);
    KeyIndex_init(&this->index, key_of);
    this->format = fmt;
}

void TvmSummary_done(TvmSummary *this) {
    free(this->tasks);
    for (int i = 0; i < this->n_task_names; i++)
        free(this->task_names[i]);
    free(this->task_names);
    KeyIndex_done(&this->index);
    memset(this, 0, sizeof *this);
}

static void note_task_name(TvmSummary *this, const char *name) {
    for (int i = 0; i < this->n_task_names; i++)
        if (strcmp(this->task_names[i], name) == 0) return;
    this->task_names = tt_realloc(this->task_names, (size_t)(this->n_task_names + 1) * sizeof *this->task_names);
    this->task_names[this->n_task_names++] = tt_strdup(name);
}

void TvmSummary_add(TvmSummary *this, const TvmRecord *rec) {
    int found = KeyIndex_find(&this->index, this->tasks, rec->key);
    TvmTaskSummary *t;
    if (found >= 0) {
        t = &this->tasks[found];
    } else {
        if (this->n_tasks == this->cap) {
            this->cap = this->cap ? this->cap * 2 : 16;
            this->tasks = realloc(this->tasks, (size_t)this->cap * sizeof *this->tasks);
            if (!this->tasks) abort();
        }
        t = &this->tasks[this->n_tasks++];
        memset(t, 0, sizeof *t);
        copy_str(t->key, sizeof t->key, rec->key);
        copy_str(t->task, sizeof t->task, rec->task);
        copy_str(t->target, sizeof t->target, rec->target);
        t->best_mean = INFINITY;
        note_task_name(this, rec->task);
        KeyIndex_added(&this->index, this->tasks, this->n_tasks);
    }
    this->n_records++;
    t->n_records++;
    int e = rec->error_no < 0 ? 9 : rec->error_no > 9 ? 9 : rec->error_no;
    t->errno_count[e]++;
    if (rec->error_no) {
        t->n_errors++;
        return;
    }
    int fault = TvmRecord_costFault(rec);
    if (fault) { /* counted by its reason, never a best */
        t->cost_faults[fault]++;
        return;
    }
    double m = TvmRecord_mean(rec);
    if (isfinite(m) && m < t->best_mean) {
        t->best_mean = m;
        t->best_line = rec->line;
        t->best_has_index = rec->has_index;
        t->best_index = rec->index;
        memcpy(t->best_config, rec->config, sizeof t->best_config);
    }
}
