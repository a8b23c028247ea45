/* ui/inspector.c: the detail page of a failed candidate and the bug report
 * file (see state.h). The source is regenerated from the record
 * (kernels/candidate.h), so the log never has to store sources. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "kernels/candidate.h"
#include "kernels/target.h"
#include "ui/state.h"

void Inspector_freeDetail(Inspector *this) {
    for (int i = 0; i < this->n_lines; i++)
        free(this->lines[i]);
    free(this->lines);
    free(this->attrs);
    this->lines = NULL;
    this->attrs = NULL;
    this->n_lines = 0;
    this->mark_line = -1;
}

typedef struct Page {
    char **lines;
    uint8_t *attrs;
    int n, cap;
} Page;

static void Page_add(Page *p, const char *s, size_t len, CellAttr attr) {
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->lines = realloc(p->lines, (size_t)p->cap * sizeof *p->lines);
        p->attrs = realloc(p->attrs, (size_t)p->cap * sizeof *p->attrs);
        if (!p->lines || !p->attrs) abort();
    }
    char *l = malloc(len + 1);
    if (!l) abort();
    memcpy(l, s, len);
    l[len] = '\0';
    p->lines[p->n] = l;
    p->attrs[p->n++] = (uint8_t)attr;
}

static void Page_addText(Page *p, const char *text, CellAttr attr) {
    for (const char *s = text; s && *s;) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        Page_add(p, s, len, attr);
        if (!e) break;
        s = e + 1;
    }
}

/* Regenerates the candidate's source; NULL with the reason in err. Caller frees. */
static char *regenerate(const UiState *st, const UiTask *t, const Record *rec, char *err) {
    if (!t->task || !t->task->tmpl) {
        snprintf(err, TT_ERRLEN, "no template for this task here (task not rebuilt from its key)");
        return NULL;
    }
    if (!st->have_dev) {
        snprintf(err, TT_ERRLEN, "no device information for target %s", st->model.target);
        return NULL;
    }
    const Task *task = t->task;
    Candidate c = {.tmpl = task->tmpl,
                   .wl = &task->wl,
                   .space = &task->space,
                   .choice = rec->choice,
                   .n_choice = rec->n_choice,
                   .steps = rec->steps};
    KernelSource ks;
    KernelSource_init(&ks);
    if (Candidate_source(&c, &st->dev, st->dialect, &ks, err) != TT_OK) {
        KernelSource_done(&ks);
        return NULL;
    }
    char *src = ks.source;
    ks.source = NULL;
    KernelSource_done(&ks);
    return src;
}

/* head, then the words of text after it, wrapped before column 76 onto lines indented by indent
 * columns. A word runs to the next sep: a ';' stays with the word before it, a space does not. */
static void append_wrapped(StrBuf *sb, const char *head, const char *text, char sep, int indent) {
    StrBuf_append(sb, head);
    int col = (int)strlen(head);
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        const char *end = strchr(p, sep);
        int len = end ? (int)(end - p) + (sep != ' ') : (int)strlen(p);
        if (len == 0) break;
        if (col + 1 + len > 76 && col > indent + 1) {
            StrBuf_printf(sb, "\n%*s", indent, "");
            col = indent;
        }
        StrBuf_append(sb, " ");
        StrBuf_appendn(sb, p, (size_t)len);
        col += 1 + len;
        p += len;
    }
    StrBuf_append(sb, "\n");
}

static void describe(const UiState *st, const UiTask *t, const Record *rec, StrBuf *sb) {
    StrBuf_printf(sb, "Task %d: %s\n", t->id, t->label);
    StrBuf_printf(sb, "Workload: %s\n", rec->task_key);
    StrBuf_printf(sb, "Template: %s   target: %s\n", rec->template_name, rec->target);
    /* long configs (GPU templates have many knobs) wrap at knob boundaries to fit 80 columns */
    char head[48];
    snprintf(head, sizeof head, "Config #%llu:", (unsigned long long)rec->index);
    append_wrapped(sb, head, rec->config, ' ', 3);
    /* a tensor expression's schedule: the steps, wrapped between steps */
    if (rec->steps) append_wrapped(sb, "Steps:", rec->steps, ';', 5);
    StrBuf_printf(sb, "Error: %s (%d)   build %.2f s   run %.2f s\n", MeasureError_name(rec->error_no), rec->error_no,
                  rec->build_s, rec->run_s);
    if (rec->regs >= 0 || rec->shared_bytes >= 0)
        StrBuf_printf(sb, "Resources: %d registers/thread, %lld B shared, %d B spilled\n", rec->regs,
                      (long long)rec->shared_bytes, rec->spills);
    (void)st;
}

void Inspector_openDetail(UiState *this, int ti, int fail) {
    Inspector *in = &this->insp;
    Inspector_freeDetail(in);
    if (ti < 0 || ti >= this->model.n_tasks) return;
    const UiTask *t = &this->model.tasks[ti];
    if (fail < 0 || fail >= t->n_fails) return;
    const Record *rec = &t->fails[fail];
    in->best = false;
    Page p = {0};
    StrBuf sb;
    StrBuf_init(&sb);
    describe(this, t, rec, &sb);
    Page_addText(&p, sb.data, ATTR_NORMAL);
    StrBuf_done(&sb);
    Page_add(&p, "", 0, ATTR_NORMAL);
    Page_addText(&p, "--- message ---", ATTR_TITLE);
    Page_addText(&p, rec->error_msg && rec->error_msg[0] ? rec->error_msg : "(no message)", ATTR_FAILED);
    Page_add(&p, "", 0, ATTR_NORMAL);
    int bad = Ui_failingLine(rec->error_msg);
    char err[TT_ERRLEN] = "";
    char *src = regenerate(this, t, rec, err);
    in->mark_line = -1;
    if (src) {
        char title[96];
        snprintf(title, sizeof title, "--- generated source%s ---",
                 bad ? " (>> marks the line the compiler names)" : "");
        Page_addText(&p, title, ATTR_TITLE);
        int no = 1;
        for (const char *s = src; *s; no++) {
            const char *e = strchr(s, '\n');
            size_t len = e ? (size_t)(e - s) : strlen(s);
            char head[16];
            snprintf(head, sizeof head, "%s%4d  ", no == bad ? ">>" : "  ", no);
            char *line = malloc(len + sizeof head);
            if (!line) abort();
            snprintf(line, len + sizeof head, "%s%.*s", head, (int)len, s);
            if (no == bad) in->mark_line = p.n;
            Page_add(&p, line, strlen(line), no == bad ? ATTR_MARK : ATTR_NORMAL);
            free(line);
            if (!e) break;
            s = e + 1;
        }
        free(src);
    } else {
        Page_addText(&p, "--- generated source ---", ATTR_TITLE);
        char line[TT_ERRLEN + 32];
        snprintf(line, sizeof line, "cannot regenerate: %s", err);
        Page_addText(&p, line, ATTR_WARN);
    }
    in->lines = p.lines;
    in->attrs = p.attrs;
    in->n_lines = p.n;
}

bool Inspector_openBest(UiState *this, int ti) {
    Inspector *in = &this->insp;
    Inspector_freeDetail(in);
    if (ti < 0 || ti >= this->model.n_tasks) return false;
    const UiTask *t = &this->model.tasks[ti];
    if (!t->best.task_key[0]) return false;
    const Record *rec = &t->best;
    in->best = true;
    in->task = ti;
    Page p = {0};
    StrBuf sb;
    StrBuf_init(&sb);
    describe(this, t, rec, &sb);
    StrBuf_printf(&sb, "Latency: %.4g ms   %.2f %sGFLOPS   (median of %d repeat%s)", Record_cost(rec) * 1e3,
                  Record_gflops(rec, t->flops),
                  Template_effective(Template_byName(rec->template_name)) ? "effective " : "", rec->n_costs,
                  rec->n_costs == 1 ? "" : "s");
    Page_addText(&p, sb.data, ATTR_NORMAL);
    StrBuf_done(&sb);
    char err[TT_ERRLEN] = "";
    const Task *task = t->task;
    if (rec->steps) {
        Page_add(&p, "", 0, ATTR_NORMAL);
        Page_addText(&p, "--- loop nest (the steps replayed) ---", ATTR_TITLE);
        if (!task || task->wl.op != OP_EXPR || !task->wl.expr) {
            Page_addText(&p, "the expression is not loaded here (tune --expr shows it; a log view has only the steps)",
                         ATTR_WARN);
        } else {
            Candidate c = {.tmpl = task->tmpl, .wl = &task->wl, .steps = rec->steps};
            StrBuf nest;
            StrBuf_init(&nest);
            if (Candidate_loopNest(&c, &nest, err) != TT_OK)
                Page_addText(&p, err, ATTR_WARN);
            else
                Page_addText(&p, nest.data, ATTR_NORMAL);
            StrBuf_done(&nest);
        }
    }
    Page_add(&p, "", 0, ATTR_NORMAL);
    Page_addText(&p, "--- generated source ---", ATTR_TITLE);
    err[0] = '\0';
    char *src = regenerate(this, t, rec, err);
    if (src) {
        Page_addText(&p, src, ATTR_NORMAL);
        free(src);
    } else {
        char line[TT_ERRLEN + 32];
        snprintf(line, sizeof line, "cannot regenerate: %s", err);
        Page_addText(&p, line, ATTR_WARN);
    }
    in->lines = p.lines;
    in->attrs = p.attrs;
    in->n_lines = p.n;
    in->mark_line = -1;
    in->level = INSP_DETAIL;
    in->scroll = in->hscroll = 0;
    return true;
}

bool Inspector_writeReport(UiState *this, char *path, size_t n) {
    Inspector *in = &this->insp;
    if (in->task < 0 || in->task >= this->model.n_tasks) {
        snprintf(path, n, "no candidate selected");
        return false;
    }
    const UiTask *t = &this->model.tasks[in->task];
    if (t->n_groups == 0 || in->group >= t->n_groups || in->cand >= t->groups[in->group].n_members) {
        snprintf(path, n, "no candidate selected");
        return false;
    }
    const Record *rec = &t->fails[t->groups[in->group].members[in->cand]];
    snprintf(path, n, "%s/tunetop-bug-task%d-%llu.txt", this->report_dir ? this->report_dir : ".", t->id,
             (unsigned long long)rec->index);
    FILE *f = fopen(path, "w");
    if (!f) {
        char why[256];
        snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
        snprintf(path, n, "%s", why);
        return false;
    }
    StrBuf sb;
    StrBuf_init(&sb);
    describe(this, t, rec, &sb);
    fprintf(f, "tunetop failed candidate report\n\n%s", sb.data ? sb.data : "");
    StrBuf_done(&sb);
    fprintf(f, "Choice vector: [");
    for (int i = 0; i < rec->n_choice; i++)
        fprintf(f, "%s%d", i ? ", " : "", (int)rec->choice[i]);
    fprintf(f, "]\nTimestamp: %.3f\n", rec->timestamp);
    fprintf(f, "\n--- message ---\n%s\n", rec->error_msg ? rec->error_msg : "(no message)");
    char err[TT_ERRLEN] = "";
    char *src = regenerate(this, t, rec, err);
    if (src)
        fprintf(f, "\n--- generated source ---\n%s%s", src, src[0] && src[strlen(src) - 1] != '\n' ? "\n" : "");
    else
        fprintf(f, "\n--- generated source ---\ncannot regenerate: %s\n", err);
    free(src);
    bool ok = fclose(f) == 0;
    if (!ok) snprintf(path, n, "write failed: %s", strerror(errno));
    return ok;
}
