/* app/cli.c: see cli.h. */
#include "app/cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/target.h"
#include "tuner/scheduler.h"
#include "tuner/search/strategy.h"

/* ---- task selection ---- */

static const struct {
    unsigned bit;
    const char *name;
    int has_arg;
} SELECT[] = {
    {SEL_TASK, "task", required_argument},
    {SEL_NETWORK, "network", required_argument},
    {SEL_BATCH_SIZE, "batch-size", required_argument},
    {SEL_LAYOUT, "layout", required_argument},
    {SEL_IMAGE_SIZE, "image-size", required_argument},
    {SEL_SEQ_LEN, "seq-len", required_argument},
    {SEL_OPS, "ops", required_argument},
    {SEL_EXPR, "expr", required_argument},
    {SEL_SET, "set", required_argument},
    {SEL_SUBGRAPHS, "subgraphs", no_argument},
    {SEL_BATCH_ALIAS, "batch", required_argument},
    {SEL_MODEL, "model", required_argument},
    {SEL_INPUT_SHAPE, "input-shape", required_argument},
};
enum { N_SELECT = sizeof SELECT / sizeof SELECT[0] };

static int bit_index(unsigned bit) {
    int i = 0;
    while (bit > 1u)
        bit >>= 1, i++;
    return i;
}

const char *TaskSelect_shapeGiven(const TaskSelect *this, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_SELECT; i++)
        if ((SELECT[i].bit & SEL_SHAPE) && (this->given & SELECT[i].bit) && o < n)
            o += (size_t)snprintf(buf + o, n - o, "%s--%s", o ? ", " : "", SELECT[i].name);
    return buf;
}

/* ---- option tables ---- */

int Cli_longopts(const CmdOptions *co, struct option *out, int cap) {
    int n = 0;
    for (const struct option *o = co->own; o && o->name && n < cap - 1; o++)
        out[n++] = *o;
    for (int i = 0; i < N_SELECT && n < cap - 1; i++) {
        if (!(co->select & SELECT[i].bit)) continue;
        int val = SEL_VAL_BASE + bit_index(SELECT[i].bit);
        out[n++] = (struct option){SELECT[i].name, SELECT[i].has_arg, NULL,
                                   SELECT[i].bit == SEL_BATCH_ALIAS ? val | OPT_HIDDEN : val};
    }
    out[n] = (struct option){0, 0, 0, 0};
    return n;
}

/* "cpu, cuda, opencl" -> "cpu cuda opencl" */
static void words(const char *list, FILE *out) {
    for (const char *p = list; *p; p++)
        if (*p != ',') fputc(*p, out);
}

static void print_values(const char *cmd, const char *opt, FILE *out) {
    static const struct {
        const char *opt, *values;
    } FIXED[] = {
        {"layout", "NCHW NHWC"},
        {"format", "tunetop autotvm autoscheduler metaschedule"},
        {"local-measure", "yes no"},
        {"cost-model", "xgb none"},
        {"ops", "conv2d depthwise_conv2d dense batch_matmul"},
        {"log", "@file"},
        {"expr", "@file"},
        {"model", "@file"},
        {"warm-start", "@file"},
        {"output", "@dir"},
    };
    if (strcmp(opt, "target") == 0 && strcmp(cmd, "import") == 0) {
        fputs("cpu cuda", out); /* the targets TVM's AutoTVM records map to */
        return;
    }
    if (strcmp(opt, "target") == 0) return words(Target_names(), out);
    if (strcmp(opt, "network") == 0) return words(Network_names(), out);
    if (strcmp(opt, "tuner") == 0) return words(Strategy_names(), out);
    if (strcmp(opt, "scheduler") == 0) return words(TaskScheduler_names(), out);
    if (strcmp(opt, "keep") == 0 && strcmp(cmd, "run") == 0) {
        fputs("@dir", out);
        return;
    }
    for (size_t i = 0; i < sizeof FIXED / sizeof FIXED[0]; i++)
        if (strcmp(opt, FIXED[i].opt) == 0) {
            fputs(FIXED[i].values, out);
            return;
        }
}

void Cli_printOptions(const CmdOptions *co, FILE *out) {
    struct option lo[CLI_MAX_OPTS];
    int n = Cli_longopts(co, lo, CLI_MAX_OPTS);
    for (int i = 0; i < n; i++) {
        if (lo[i].val & OPT_HIDDEN) continue;
        fprintf(out, "--%s\t", lo[i].name);
        if (lo[i].has_arg == no_argument)
            fputc('-', out);
        else
            print_values(co->name, lo[i].name, out);
        fputc('\n', out);
    }
}

void Cli_badOption(const char *cmd, int c, char **argv, char *err) {
    const char *arg = optind > 1 ? argv[optind - 1] : "";
    if (c == ':')
        tt_fail(err, "%s needs a value (see tunetop %s --help)", arg, cmd);
    else
        tt_fail(err, "unknown option '%s' (see tunetop %s --help)", arg, cmd);
}

/* ---- help text ---- */

/* Where a wrapped line continues: under an option line's text, else under its own indent. */
static size_t continuation(const char *line, size_t len) {
    size_t i = 0;
    while (i < len && line[i] == ' ')
        i++;
    if (i + 1 >= len || line[i] != '-') return i;
    const char *gap = strstr(line + i, "  ");
    if (!gap || (size_t)(gap - line) >= len) return i;
    size_t j = (size_t)(gap - line);
    while (j < len && line[j] == ' ')
        j++;
    return j < 48 ? j : i;
}

static void put_wrapped(FILE *out, const char *line, size_t len) {
    size_t indent = continuation(line, len), lead = 0;
    while (lead + len > CLI_HELP_COLS) {
        size_t cut = CLI_HELP_COLS - lead;
        while (cut > 0 && line[cut] != ' ')
            cut--;
        if (cut == 0 || (lead == 0 && cut <= indent)) break; /* one word wider than the line: left as it is */
        fprintf(out, "%.*s\n%*s", (int)cut, line, (int)indent, "");
        line += cut + 1;
        len -= cut + 1;
        lead = indent;
    }
    fprintf(out, "%.*s\n", (int)len, line);
}

/* The first line of TEXT and the lines after it that continue its text (same
 * indent as where the first line's text wraps, not blank): the bytes they span. */
static size_t paragraph_end(const char *text, size_t first_len, size_t indent, bool *overflow) {
    size_t end = first_len, lead = 0;
    *overflow = first_len > CLI_HELP_COLS;
    while (lead < first_len && text[lead] == ' ')
        lead++;
    /* an option's text may go on with "--set ...": a dash ends the paragraph only
     * where the paragraph is not an option's text (a new item of a list) */
    bool dash_ends = lead == indent;
    while (first_len > 0 && text[end] == '\n') {
        const char *next = text + end + 1, *nl = strchr(next, '\n');
        size_t len = nl ? (size_t)(nl - next) : strlen(next), sp = 0;
        while (sp < len && next[sp] == ' ')
            sp++;
        if (sp != indent || sp == len || (dash_ends && next[sp] == '-')) break;
        *overflow = *overflow || len > CLI_HELP_COLS;
        end += 1 + len;
    }
    return end;
}

/* A paragraph with a line wider than the help is joined and wrapped again, so
 * a value filled in by printf does not leave a one-word line behind it. */
static void put_paragraph(FILE *out, const char *text, size_t first_len) {
    size_t indent = continuation(text, first_len);
    bool overflow;
    size_t end = paragraph_end(text, first_len, indent, &overflow);
    if (!overflow || end == first_len) {
        for (size_t at = 0; at <= end;) {
            const char *nl = memchr(text + at, '\n', end - at);
            size_t len = nl ? (size_t)(nl - (text + at)) : end - at;
            put_wrapped(out, text + at, len);
            at += len + 1;
        }
        return;
    }
    char *joined = malloc(end + 1);
    if (!joined) abort();
    size_t n = 0;
    for (size_t i = 0; i < end; i++) {
        if (text[i] != '\n') {
            joined[n++] = text[i];
            continue;
        }
        joined[n++] = ' ';
        i += indent; /* the continuation's own indent */
    }
    put_wrapped(out, joined, n);
    free(joined);
}

void app_help(FILE *out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0 || !text) return;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        bool ignored;
        size_t span = paragraph_end(p, len, continuation(p, len), &ignored);
        put_paragraph(out, p, len);
        p += span;
        if (*p != '\n') break;
        p++;
    }
    free(text);
}
