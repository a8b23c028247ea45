/* te/parse.c: lexer and recursive-descent parser of `.te` files (see te.h).
 *
 * The whole file is tokenised first, so that a reduction can read its axis
 * declarations (which follow the body) before it parses the body that uses
 * them. Newlines end statements except inside brackets and parentheses and
 * right after the '=' of a definition (so a long body can start below). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "te/te.h"

typedef enum { T_EOF, T_NL, T_IDENT, T_NUM, T_PUNCT } TokKind;

typedef struct Tok {
    TokKind kind;
    char text[TE_NAME_LEN + 32];
    double num;
    int is_int;
    int line, col;
} Tok;

typedef struct Parser {
    TeProgram *prog;
    Tok *toks;
    int n_toks, pos;
    char *err;
    const TeSet *sets;
    int n_sets;
    int *set_used;
    int scope[TE_MAX_VARS]; /* variables in scope (indices into prog->vars) */
    int n_scope;
    int nest; /* parse_unary calls in progress: parentheses and unary operators nested */
} Parser;

static Status fail_at(Parser *p, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static Status fail_at(Parser *p, int line, int col, const char *fmt, ...) {
    char msg[TT_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tt_fail(p->err, "%s:%d:%d: %s", p->prog->file, line, col, msg);
}

/* ---- lexer ------------------------------------------------------------------ */

static const char *const PUNCT2[] = {"<=", ">=", "==", "!=", "&&", "||"};

static Status lex(Parser *p, const char *s) {
    int line = 1, col = 1, depth = 0, cap = 256;
    p->toks = malloc(sizeof(Tok) * cap);
    p->n_toks = 0;
    for (;;) {
        if (p->n_toks + 1 >= cap) {
            cap *= 2;
            p->toks = realloc(p->toks, sizeof(Tok) * cap);
        }
        Tok *t = &p->toks[p->n_toks];
        memset(t, 0, sizeof *t);
        int after_eq = p->n_toks > 0 && strcmp(p->toks[p->n_toks - 1].text, "=") == 0;
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '#' || (*s == '\n' && (depth > 0 || after_eq))) {
            if (*s == '#') {
                while (*s && *s != '\n')
                    s++, col++;
                continue;
            }
            if (*s == '\n') line++, col = 0;
            s++, col++;
        }
        t->line = line;
        t->col = col;
        if (!*s) {
            t->kind = T_EOF;
            p->n_toks++;
            return TT_OK;
        }
        if (*s == '\n') {
            t->kind = T_NL;
            strcpy(t->text, "end of line");
            s++, line++, col = 1;
        } else if (isalpha((unsigned char)*s) || *s == '_') {
            int n = 0;
            while (isalnum((unsigned char)s[n]) || s[n] == '_')
                n++;
            if (n >= TE_NAME_LEN) return fail_at(p, line, col, "name longer than %d characters", TE_NAME_LEN - 1);
            t->kind = T_IDENT;
            memcpy(t->text, s, n);
            s += n, col += n;
        } else if (isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))) {
            int n = 0, is_int = 1;
            while (isdigit((unsigned char)s[n]))
                n++;
            if (s[n] == '.') {
                is_int = 0, n++;
                while (isdigit((unsigned char)s[n]))
                    n++;
            }
            if ((s[n] == 'e' || s[n] == 'E') &&
                (isdigit((unsigned char)s[n + 1]) ||
                 ((s[n + 1] == '-' || s[n + 1] == '+') && isdigit((unsigned char)s[n + 2])))) {
                is_int = 0, n += 2;
                while (isdigit((unsigned char)s[n]))
                    n++;
            }
            if (isalpha((unsigned char)s[n]) || s[n] == '_' || s[n] == '.')
                return fail_at(p, line, col, "malformed number");
            if (n >= (int)sizeof t->text) return fail_at(p, line, col, "number too long");
            t->kind = T_NUM;
            memcpy(t->text, s, n);
            errno = 0;
            t->num = strtod(t->text, NULL);
            if (errno == ERANGE || !isfinite(t->num)) return fail_at(p, line, col, "number %s out of range", t->text);
            t->is_int = is_int;
            if (is_int && t->num > 9.0e15) return fail_at(p, line, col, "integer %s too large", t->text);
            s += n, col += n;
        } else {
            int n = 0;
            for (size_t i = 0; i < sizeof PUNCT2 / sizeof *PUNCT2; i++)
                if (s[0] == PUNCT2[i][0] && s[1] == PUNCT2[i][1]) n = 2;
            if (!n) {
                if (!strchr("[](),=<>+-*/%!", *s)) {
                    if (isprint((unsigned char)*s)) return fail_at(p, line, col, "unexpected character '%c'", *s);
                    return fail_at(p, line, col, "unexpected byte 0x%02x", (unsigned char)*s);
                }
                n = 1;
            }
            if (*s == '(' || *s == '[') depth++;
            if ((*s == ')' || *s == ']') && depth > 0) depth--;
            t->kind = T_PUNCT;
            memcpy(t->text, s, n);
            s += n, col += n;
        }
        p->n_toks++;
    }
}

/* ---- helpers ---------------------------------------------------------------- */

/* Identifiers are shorter than TE_NAME_LEN (the lexer checks). */
static void copy_name(char *dst, const char *src) { memcpy(dst, src, strlen(src) + 1); }

static Tok *peek(Parser *p) { return &p->toks[p->pos]; }

static int is_punct(Parser *p, const char *s) {
    Tok *t = peek(p);
    return t->kind == T_PUNCT && strcmp(t->text, s) == 0;
}

static int accept(Parser *p, const char *s) {
    if (is_punct(p, s)) {
        p->pos++;
        return 1;
    }
    return 0;
}

static const char *describe(Tok *t) {
    static char buf[80];
    if (t->kind == T_EOF) return "end of file";
    if (t->kind == T_NL) return "end of line";
    snprintf(buf, sizeof buf, "'%s'", t->text);
    return buf;
}

static Status expect(Parser *p, const char *s) {
    if (accept(p, s)) return TT_OK;
    return fail_at(p, peek(p)->line, peek(p)->col, "expected '%s', found %s", s, describe(peek(p)));
}

static Status expect_ident(Parser *p, const char *what, Tok **out) {
    Tok *t = peek(p);
    if (t->kind != T_IDENT) return fail_at(p, t->line, t->col, "expected %s, found %s", what, describe(t));
    p->pos++;
    *out = t;
    return TT_OK;
}

static TeExpr *node(Parser *p, TeKind kind, Tok *at) {
    TeProgram *g = p->prog;
    if (g->n_nodes == g->cap_nodes) {
        g->cap_nodes = g->cap_nodes ? 2 * g->cap_nodes : 64;
        g->nodes = realloc(g->nodes, sizeof(TeExpr *) * g->cap_nodes);
    }
    TeExpr *e = calloc(1, sizeof *e);
    e->kind = kind;
    e->line = at->line;
    e->col = at->col;
    g->nodes[g->n_nodes++] = e;
    return e;
}

static const char *const KEYWORDS[] = {"let",  "input",    "output",   "const", "f32", "f16",  "if",
                                       "sum",  "max_over", "min_over", "exp",   "log", "sqrt", "rsqrt",
                                       "tanh", "erf",      "abs",      "max",   "min"};

static int is_keyword(const char *s) {
    for (size_t i = 0; i < sizeof KEYWORDS / sizeof *KEYWORDS; i++)
        if (strcmp(s, KEYWORDS[i]) == 0) return 1;
    return 0;
}

static int find_let(const TeProgram *g, const char *name) {
    for (int i = 0; i < g->n_lets; i++)
        if (strcmp(g->lets[i].name, name) == 0) return i;
    return -1;
}

static int find_scope(Parser *p, const char *name) {
    for (int i = p->n_scope - 1; i >= 0; i--)
        if (strcmp(p->prog->vars[p->scope[i]].name, name) == 0) return p->scope[i];
    return -1;
}

/* A new name must not shadow a keyword, a let, a tensor or a variable in scope. */
static Status check_fresh(Parser *p, Tok *t) {
    TeProgram *g = p->prog;
    if (is_keyword(t->text)) return fail_at(p, t->line, t->col, "'%s' is a reserved word", t->text);
    if (find_let(g, t->text) >= 0) return fail_at(p, t->line, t->col, "'%s' is already a let constant", t->text);
    int ti = TeProgram_find(g, t->text);
    if (ti >= 0) return fail_at(p, t->line, t->col, "'%s' is already defined at line %d", t->text, g->tensors[ti].line);
    int v = find_scope(p, t->text);
    if (v >= 0)
        return fail_at(p, t->line, t->col, "variable '%s' is bound twice (first at %d:%d)", t->text, g->vars[v].line,
                       g->vars[v].col);
    return TT_OK;
}

/* ---- expressions ------------------------------------------------------------ */

static Status parse_expr(Parser *p, TeExpr **out);

static Status need_type(Parser *p, TeExpr *e, TeType want, const char *what) {
    if (want == TE_TBOOL && e->type != TE_TBOOL)
        return fail_at(p, e->line, e->col, "%s must be a condition (a comparison, &&, || or !)", what);
    if (want != TE_TBOOL && e->type == TE_TBOOL)
        return fail_at(p, e->line, e->col, "%s must be a number, not a condition", what);
    if (want == TE_TINT && e->type != TE_TINT)
        return fail_at(p, e->line, e->col, "%s must be an integer expression (iteration variables, lets, integers)",
                       what);
    return TT_OK;
}

static Status parse_call(Parser *p, Tok *name, TeExpr **out);

static Status parse_primary(Parser *p, TeExpr **out) {
    TeProgram *g = p->prog;
    Tok *t = peek(p);
    if (t->kind == T_NUM) {
        p->pos++;
        TeExpr *e = node(p, TE_NUM, t);
        e->num = t->num;
        e->inum = t->is_int ? (int64_t)t->num : 0;
        e->type = t->is_int ? TE_TINT : TE_TFLOAT;
        *out = e;
        return TT_OK;
    }
    if (accept(p, "(")) {
        if (parse_expr(p, out)) return TT_ERR;
        return expect(p, ")");
    }
    if (t->kind != T_IDENT) return fail_at(p, t->line, t->col, "expected an expression, found %s", describe(t));
    p->pos++;
    if (is_punct(p, "(")) return parse_call(p, t, out);
    if (accept(p, "[")) {
        int ti = TeProgram_find(g, t->text);
        if (ti < 0) return fail_at(p, t->line, t->col, "unknown tensor '%s'", t->text);
        TeExpr *e = node(p, TE_ACCESS, t);
        e->tensor = ti;
        e->type = TE_TFLOAT;
        do {
            TeExpr *ix;
            if (e->n_kids == TE_MAX_DIMS) return fail_at(p, t->line, t->col, "more than %d indices", TE_MAX_DIMS);
            if (parse_expr(p, &ix) || need_type(p, ix, TE_TINT, "an index")) return TT_ERR;
            e->kid[e->n_kids++] = ix;
        } while (accept(p, ","));
        if (expect(p, "]")) return TT_ERR;
        if (e->n_kids != g->tensors[ti].ndim)
            return fail_at(p, t->line, t->col, "'%s' has %d dimension%s, accessed with %d ind%s", t->text,
                           g->tensors[ti].ndim, g->tensors[ti].ndim == 1 ? "" : "s", e->n_kids,
                           e->n_kids == 1 ? "ex" : "ices");
        *out = e;
        return TT_OK;
    }
    int v = find_scope(p, t->text);
    if (v >= 0) {
        TeExpr *e = node(p, TE_VAR, t);
        e->var = v;
        e->type = TE_TINT;
        *out = e;
        return TT_OK;
    }
    int l = find_let(g, t->text);
    if (l >= 0) {
        TeExpr *e = node(p, TE_NUM, t);
        e->inum = g->lets[l].value;
        e->num = (double)e->inum;
        e->type = TE_TINT;
        *out = e;
        return TT_OK;
    }
    if (TeProgram_find(g, t->text) >= 0)
        return fail_at(p, t->line, t->col, "tensor '%s' used without indices", t->text);
    return fail_at(p, t->line, t->col, "unknown variable '%s'", t->text);
}

static Status parse_unary_nested(Parser *p, TeExpr **out);

/* Every recursion of the parser passes here: its depth is bounded. */
static Status parse_unary(Parser *p, TeExpr **out) {
    Tok *t = peek(p);
    if (p->nest >= TE_MAX_DEPTH)
        return fail_at(p, t->line, t->col, "the expression nests more than %d levels deep", TE_MAX_DEPTH);
    p->nest++;
    Status st = parse_unary_nested(p, out);
    p->nest--;
    return st;
}

static Status parse_unary_nested(Parser *p, TeExpr **out) {
    Tok *t = peek(p);
    if (accept(p, "-") || accept(p, "!")) {
        int neg = t->text[0] == '-';
        TeExpr *a;
        if (parse_unary(p, &a)) return TT_ERR;
        if (neg && a->kind == TE_NUM) { /* fold: -3 is a literal */
            a->num = -a->num;
            a->inum = -a->inum;
            a->line = t->line, a->col = t->col;
            *out = a;
            return TT_OK;
        }
        if (need_type(p, a, neg ? TE_TFLOAT : TE_TBOOL, neg ? "the operand of '-'" : "the operand of '!'"))
            return TT_ERR;
        TeExpr *e = node(p, neg ? TE_NEG : TE_NOT, t);
        e->kid[0] = a;
        e->n_kids = 1;
        e->type = a->type;
        *out = e;
        return TT_OK;
    }
    return parse_primary(p, out);
}

/* Binary levels from loosest to tightest. */
static const char *const LEVELS[][7] = {
    {"||"}, {"&&"}, {"<", "<=", ">", ">=", "==", "!="}, {"+", "-"}, {"*", "/", "%"},
};
static const char *const OPNAMES[] = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};

static Status parse_level(Parser *p, int level, TeExpr **out) {
    if (level == 5) return parse_unary(p, out);
    TeExpr *a;
    if (parse_level(p, level + 1, &a)) return TT_ERR;
    for (;;) {
        Tok *t = peek(p);
        int op = -1;
        for (int i = 0; i < 7 && LEVELS[level][i]; i++)
            if (is_punct(p, LEVELS[level][i]))
                for (int k = 0; k < 13; k++)
                    if (strcmp(OPNAMES[k], LEVELS[level][i]) == 0) op = k;
        if (op < 0) break;
        p->pos++;
        TeExpr *b;
        if (parse_level(p, level + 1, &b)) return TT_ERR;
        TeExpr *e = node(p, TE_BIN, t);
        e->op = op;
        e->kid[0] = a, e->kid[1] = b, e->n_kids = 2;
        if (op == TE_AND || op == TE_OR) {
            if (need_type(p, a, TE_TBOOL, "an operand of && or ||") ||
                need_type(p, b, TE_TBOOL, "an operand of && or ||"))
                return TT_ERR;
            e->type = TE_TBOOL;
        } else {
            char what[40];
            snprintf(what, sizeof what, "an operand of '%s'", OPNAMES[op]);
            if (need_type(p, a, TE_TFLOAT, what) || need_type(p, b, TE_TFLOAT, what)) return TT_ERR;
            if (op >= TE_LT)
                e->type = TE_TBOOL;
            else
                e->type = (a->type == TE_TINT && b->type == TE_TINT) ? TE_TINT : TE_TFLOAT;
            if (op == TE_MOD && e->type != TE_TINT) return fail_at(p, t->line, t->col, "'%%' needs integer operands");
            if ((op == TE_DIV || op == TE_MOD) && e->type == TE_TINT && b->kind == TE_NUM && b->inum == 0)
                return fail_at(p, t->line, t->col, "integer division by zero");
        }
        a = e;
    }
    *out = a;
    return TT_OK;
}

static Status parse_expr(Parser *p, TeExpr **out) { return parse_level(p, 0, out); }

/* An extent or dimension: an integer expression of numbers and lets. */
static Status eval_const(Parser *p, TeExpr *e, int64_t *v) {
    switch (e->kind) {
    case TE_NUM:
        *v = e->inum;
        return TT_OK;
    case TE_NEG:
        if (eval_const(p, e->kid[0], v)) return TT_ERR;
        *v = -*v;
        return TT_OK;
    case TE_BIN: {
        int64_t a, b;
        if (eval_const(p, e->kid[0], &a) || eval_const(p, e->kid[1], &b)) return TT_ERR;
        switch (e->op) {
        case TE_ADD:
            *v = a + b;
            return TT_OK;
        case TE_SUB:
            *v = a - b;
            return TT_OK;
        case TE_MUL:
            *v = a * b;
            return TT_OK;
        case TE_DIV:
        case TE_MOD:
            if (b == 0) return fail_at(p, e->line, e->col, "integer division by zero");
            *v = e->op == TE_DIV ? te_floordiv(a, b) : te_floormod(a, b);
            return TT_OK;
        default:
            break;
        }
        break;
    }
    default:
        break;
    }
    return fail_at(p, e->line, e->col, "expected a constant integer expression (numbers and lets)");
}

static Status parse_const(Parser *p, int64_t *v) {
    TeExpr *e;
    if (parse_expr(p, &e) || need_type(p, e, TE_TINT, "a constant")) return TT_ERR;
    return eval_const(p, e, v);
}

/* `v < E`: binds a new variable (left in scope). */
static Status parse_binding(Parser *p, int is_reduce, int *out) {
    TeProgram *g = p->prog;
    Tok *name = NULL;
    if (expect_ident(p, "a variable name", &name) || check_fresh(p, name) || expect(p, "<")) return TT_ERR;
    Tok *at = peek(p);
    int64_t ext;
    if (parse_const(p, &ext)) return TT_ERR;
    if (ext <= 0)
        return fail_at(p, at->line, at->col, "extent of '%s' is %lld; it must be positive", name->text, (long long)ext);
    if (g->n_vars == TE_MAX_VARS || p->n_scope == TE_MAX_VARS)
        return fail_at(p, name->line, name->col, "more than %d variables", TE_MAX_VARS);
    TeVar *v = &g->vars[g->n_vars];
    copy_name(v->name, name->text);
    v->extent = ext;
    v->is_reduce = is_reduce;
    v->line = name->line, v->col = name->col;
    p->scope[p->n_scope++] = g->n_vars;
    *out = g->n_vars++;
    return TT_OK;
}

static const char *const FUNCS[] = {"exp", "log", "sqrt", "rsqrt", "tanh", "erf", "abs", "max", "min"};
static const char *const REDUCES[] = {"sum", "max_over", "min_over"};

static Status parse_args(Parser *p, Tok *name, TeExpr *e, int n) {
    if (expect(p, "(")) return TT_ERR;
    for (int i = 0; i < n; i++) {
        if (i && expect(p, ",")) return TT_ERR;
        if (parse_expr(p, &e->kid[i])) return TT_ERR;
    }
    e->n_kids = n;
    if (!is_punct(p, ")"))
        return fail_at(p, peek(p)->line, peek(p)->col, "%s takes %d argument%s; expected ')', found %s", name->text, n,
                       n == 1 ? "" : "s", describe(peek(p)));
    p->pos++;
    return TT_OK;
}

/* Skips one argument (balanced brackets) up to the next top-level ',' or ')'. */
static Status skip_arg(Parser *p) {
    int depth = 0;
    for (;;) {
        Tok *t = peek(p);
        if (t->kind == T_EOF || (t->kind == T_NL && depth == 0))
            return fail_at(p, t->line, t->col, "unclosed '(' of a reduction");
        if (depth == 0 && (is_punct(p, ",") || is_punct(p, ")"))) return TT_OK;
        if (is_punct(p, "(") || is_punct(p, "[")) depth++;
        if (is_punct(p, ")") || is_punct(p, "]")) depth--;
        p->pos++;
    }
}

static Status parse_call(Parser *p, Tok *name, TeExpr **out) {
    if (strcmp(name->text, "if") == 0) {
        TeExpr *e = node(p, TE_IF, name);
        if (parse_args(p, name, e, 3) || need_type(p, e->kid[0], TE_TBOOL, "the condition of if") ||
            need_type(p, e->kid[1], TE_TFLOAT, "a branch of if") ||
            need_type(p, e->kid[2], TE_TFLOAT, "a branch of if"))
            return TT_ERR;
        e->type = (e->kid[1]->type == TE_TINT && e->kid[2]->type == TE_TINT) ? TE_TINT : TE_TFLOAT;
        *out = e;
        return TT_OK;
    }
    for (int f = 0; f < 9; f++) {
        if (strcmp(name->text, FUNCS[f]) != 0) continue;
        TeExpr *e = node(p, TE_CALL, name);
        e->op = f;
        int n = f >= TE_FMAX ? 2 : 1;
        if (parse_args(p, name, e, n)) return TT_ERR;
        for (int i = 0; i < n; i++)
            if (need_type(p, e->kid[i], TE_TFLOAT, "an argument")) return TT_ERR;
        e->type = (f >= TE_FMAX && e->kid[0]->type == TE_TINT && e->kid[1]->type == TE_TINT) ? TE_TINT : TE_TFLOAT;
        *out = e;
        return TT_OK;
    }
    for (int r = 0; r < 3; r++) {
        if (strcmp(name->text, REDUCES[r]) != 0) continue;
        TeExpr *e = node(p, TE_REDUCE, name);
        e->op = r;
        p->pos++; /* ( */
        int body = p->pos;
        if (skip_arg(p)) return TT_ERR;
        int scope0 = p->n_scope;
        if (!is_punct(p, ","))
            return fail_at(p, peek(p)->line, peek(p)->col, "%s needs at least one axis such as 'k < N'", name->text);
        while (accept(p, ",")) {
            if (e->n_axes == TE_MAX_DIMS)
                return fail_at(p, peek(p)->line, peek(p)->col, "more than %d reduction axes", TE_MAX_DIMS);
            if (parse_binding(p, 1, &e->axes[e->n_axes++])) return TT_ERR;
        }
        if (expect(p, ")")) return TT_ERR;
        int end = p->pos;
        p->pos = body;
        if (parse_expr(p, &e->kid[0]) || need_type(p, e->kid[0], TE_TFLOAT, "the body of a reduction")) return TT_ERR;
        if (!is_punct(p, ","))
            return fail_at(p, peek(p)->line, peek(p)->col, "expected ',', found %s", describe(peek(p)));
        e->n_kids = 1;
        e->type = TE_TFLOAT;
        p->pos = end;
        p->n_scope = scope0;
        *out = e;
        return TT_OK;
    }
    return fail_at(p, name->line, name->col, "unknown function '%s'", name->text);
}

/* ---- statements ------------------------------------------------------------- */

static Status end_of_statement(Parser *p) {
    Tok *t = peek(p);
    if (t->kind == T_NL) {
        p->pos++;
        return TT_OK;
    }
    if (t->kind == T_EOF) return TT_OK;
    return fail_at(p, t->line, t->col, "expected end of line, found %s", describe(t));
}

static Status parse_let(Parser *p) {
    TeProgram *g = p->prog;
    Tok *name = NULL;
    if (expect_ident(p, "a constant name", &name) || check_fresh(p, name) || expect(p, "=")) return TT_ERR;
    int64_t v;
    if (parse_const(p, &v)) return TT_ERR;
    if (g->n_lets == TE_MAX_LETS) return fail_at(p, name->line, name->col, "more than %d lets", TE_MAX_LETS);
    for (int i = 0; i < p->n_sets; i++)
        if (strcmp(p->sets[i].name, name->text) == 0) v = p->sets[i].value, p->set_used[i] = 1;
    copy_name(g->lets[g->n_lets].name, name->text);
    g->lets[g->n_lets++].value = v;
    return TT_OK;
}

static TeTensor *new_tensor(Parser *p, Tok *name) {
    TeProgram *g = p->prog;
    if (g->n_tensors == TE_MAX_TENSORS) {
        fail_at(p, name->line, name->col, "more than %d tensors", TE_MAX_TENSORS);
        return NULL;
    }
    TeTensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    copy_name(t->name, name->text);
    t->line = name->line, t->col = name->col;
    return t;
}

/* A new tensor's `NAME[d0, d1, ...]` (after its keyword) in *out, with at most max_elems elements, *numel. */
static Status parse_declared(Parser *p, int64_t max_elems, TeTensor **out, int64_t *numel) {
    Tok *name = NULL;
    if (expect_ident(p, "a tensor name", &name) || check_fresh(p, name)) return TT_ERR;
    TeTensor *t = new_tensor(p, name);
    if (!t || expect(p, "[")) return TT_ERR;
    *numel = 1;
    do {
        Tok *at = peek(p);
        if (t->ndim == TE_MAX_DIMS) return fail_at(p, at->line, at->col, "more than %d dimensions", TE_MAX_DIMS);
        if (parse_const(p, &t->shape[t->ndim])) return TT_ERR;
        int64_t d = t->shape[t->ndim];
        if (d <= 0)
            return fail_at(p, at->line, at->col, "dimension %d of '%s' is %lld; it must be positive", t->ndim, t->name,
                           (long long)d);
        if (d > max_elems / *numel)
            return fail_at(p, t->line, t->col, "'%s' has more than %lld elements", t->name, (long long)max_elems);
        *numel *= d;
        t->ndim++;
    } while (accept(p, ","));
    *out = t;
    return expect(p, "]");
}

static Status parse_input(Parser *p) {
    int64_t numel;
    TeTensor *t = NULL;
    if (parse_declared(p, TE_MAX_ELEMS, &t, &numel)) return TT_ERR;
    t->is_input = 1;
    Tok *ty = peek(p);
    if (ty->kind == T_IDENT) {
        if (strcmp(ty->text, "f32") == 0)
            t->dtype = TE_F32;
        else if (strcmp(ty->text, "f16") == 0)
            t->dtype = TE_F16;
        else
            return fail_at(p, ty->line, ty->col, "unknown element type '%s' (f32 or f16)", ty->text);
        p->pos++;
    }
    p->prog->n_tensors++;
    return TT_OK;
}

/* A value of a constant tensor: an expression of numbers and lets, with the
 * language's arithmetic (integer `/` is floor division). */
static Status eval_value(Parser *p, const TeTensor *t, TeExpr *e, double *v) {
    if (e->type == TE_TINT) {
        int64_t i;
        if (eval_const(p, e, &i)) return TT_ERR;
        *v = (double)i;
        return TT_OK;
    }
    double a, b;
    switch (e->kind) {
    case TE_NUM:
        *v = e->num;
        return TT_OK;
    case TE_NEG:
        if (eval_value(p, t, e->kid[0], &a)) return TT_ERR;
        *v = -a;
        return TT_OK;
    case TE_BIN:
        if (e->op > TE_DIV) break;
        if (eval_value(p, t, e->kid[0], &a) || eval_value(p, t, e->kid[1], &b)) return TT_ERR;
        *v = e->op == TE_ADD ? a + b : e->op == TE_SUB ? a - b : e->op == TE_MUL ? a * b : a / b;
        return TT_OK;
    default:
        break;
    }
    return fail_at(p, e->line, e->col, "a value of '%s' must be a number (an expression of numbers and lets)", t->name);
}

#define TE_MAX_CONST_ELEMS 65536

/* `const NAME[d0, ...] = [v, v, ...]`: the values row-major. */
static Status parse_constant(Parser *p) {
    int64_t numel;
    TeTensor *t = NULL;
    if (parse_declared(p, TE_MAX_CONST_ELEMS, &t, &numel) || expect(p, "=") || expect(p, "[")) return TT_ERR;
    t->is_const = 1;
    /* the tensor is counted now, so that its values are freed with the program whatever follows */
    t->values = calloc((size_t)numel, sizeof(double));
    if (!t->values) return fail_at(p, t->line, t->col, "out of memory");
    p->prog->n_tensors++;
    int64_t n = 0;
    do {
        TeExpr *e;
        double v;
        Tok *at = peek(p);
        if (parse_expr(p, &e) || need_type(p, e, TE_TFLOAT, "a value") || eval_value(p, t, e, &v)) return TT_ERR;
        if (!(fabs(v) <= FLT_MAX))
            return fail_at(p, at->line, at->col, "value %lld of '%s' is %g, not a finite float", (long long)n, t->name,
                           v);
        if (n < numel) t->values[n] = te_round_to(TE_F32, v);
        n++;
    } while (accept(p, ","));
    if (expect(p, "]")) return TT_ERR;
    if (n != numel)
        return fail_at(p, t->line, t->col, "'%s' has %lld element%s; %lld value%s given", t->name, (long long)numel,
                       numel == 1 ? "" : "s", (long long)n, n == 1 ? "" : "s");
    return TT_OK;
}

static Status parse_output(Parser *p) {
    Tok *name = NULL;
    if (expect_ident(p, "a tensor name", &name)) return TT_ERR;
    int ti = TeProgram_find(p->prog, name->text);
    if (ti < 0) return fail_at(p, name->line, name->col, "unknown tensor '%s'", name->text);
    TeTensor *t = &p->prog->tensors[ti];
    if (!te_is_defined(t))
        return fail_at(p, name->line, name->col, "'%s' is %s; an output must be defined", t->name,
                       t->is_input ? "an input" : "a constant");
    if (t->is_output) return fail_at(p, name->line, name->col, "'%s' is already an output", t->name);
    t->is_output = 1;
    return TT_OK;
}

/* True when e nests deeper than limit (the recursion stops there). */
static bool too_deep(const TeExpr *e, int limit) {
    if (limit < 0) return true;
    for (int i = 0; i < e->n_kids; i++)
        if (e->kid[i] && too_deep(e->kid[i], limit - 1)) return true;
    return false;
}

static Status parse_definition(Parser *p, Tok *name) {
    if (check_fresh(p, name)) return TT_ERR;
    TeTensor *t = new_tensor(p, name);
    if (!t || expect(p, "[")) return TT_ERR;
    p->n_scope = 0;
    int64_t numel = 1;
    do {
        if (t->ndim == TE_MAX_DIMS)
            return fail_at(p, peek(p)->line, peek(p)->col, "more than %d dimensions", TE_MAX_DIMS);
        if (parse_binding(p, 0, &t->axes[t->ndim])) return TT_ERR;
        t->shape[t->ndim] = p->prog->vars[t->axes[t->ndim]].extent;
        if (t->shape[t->ndim] > TE_MAX_ELEMS / numel)
            return fail_at(p, name->line, name->col, "'%s' has more than %lld elements", t->name,
                           (long long)TE_MAX_ELEMS);
        numel *= t->shape[t->ndim];
        t->ndim++;
    } while (accept(p, ","));
    if (expect(p, "]") || expect(p, "=")) return TT_ERR;
    if (parse_expr(p, &t->body) || need_type(p, t->body, TE_TFLOAT, "a tensor's value")) return TT_ERR;
    if (too_deep(t->body, TE_MAX_DEPTH))
        return fail_at(p, name->line, name->col,
                       "the value of '%s' nests more than %d levels deep (a chain of operators counts each)",
                       name->text, TE_MAX_DEPTH);
    p->n_scope = 0;
    p->prog->n_tensors++;
    return te_check_bounds(p->prog, p->prog->n_tensors - 1, p->err);
}

static Status parse_program(Parser *p, const char *text) {
    if (lex(p, text)) return TT_ERR;
    int any_output = 0;
    while (peek(p)->kind != T_EOF) {
        Tok *t = peek(p);
        if (t->kind == T_NL) {
            p->pos++;
            continue;
        }
        if (t->kind != T_IDENT) return fail_at(p, t->line, t->col, "expected a statement, found %s", describe(t));
        p->pos++;
        Status st;
        if (strcmp(t->text, "let") == 0)
            st = parse_let(p);
        else if (strcmp(t->text, "input") == 0)
            st = parse_input(p);
        else if (strcmp(t->text, "const") == 0)
            st = parse_constant(p);
        else if (strcmp(t->text, "output") == 0)
            st = parse_output(p), any_output = 1;
        else if (is_punct(p, "["))
            st = parse_definition(p, t);
        else
            st = fail_at(p, t->line, t->col,
                         "expected 'let', 'input', 'const', 'output' or a definition NAME[...] = ..., found %s",
                         describe(t));
        if (st || end_of_statement(p)) return TT_ERR;
    }
    Tok *eof = peek(p);
    if (!any_output) return fail_at(p, eof->line, eof->col, "no 'output' line");
    for (int i = 0; i < p->n_sets; i++)
        if (!p->set_used[i])
            return fail_at(p, 1, 1, "--set %s: the file has no 'let %s'", p->sets[i].name, p->sets[i].name);
    return TT_OK;
}

TeProgram *TeProgram_parse(const char *text, const char *file, const TeSet *sets, int n_sets, char *err) {
    TeProgram *g = calloc(1, sizeof *g);
    snprintf(g->file, sizeof g->file, "%s", file);
    Parser p = {.prog = g, .err = err, .sets = sets, .n_sets = n_sets};
    p.set_used = calloc(n_sets + 1, sizeof(int));
    Status st = parse_program(&p, text);
    free(p.toks);
    free(p.set_used);
    if (st) {
        TeProgram_delete(g);
        return NULL;
    }
    return g;
}

#define TE_MAX_FILE (16 << 20) /* far more than any expression file: a larger one is not one */

TeProgram *TeProgram_load(const char *path, const TeSet *sets, int n_sets, char *err) {
    /* O_NONBLOCK: a FIFO must not wait for a writer; the type check refuses it */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        tt_fail(err, "%s:1:1: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb = {0};
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > TE_MAX_FILE) {
        tt_fail(err, "%s:1:1: %s", path,
                !S_ISREG(sb.st_mode) ? "not a regular file (a FIFO, a device or a directory)"
                                     : "larger than 16 MiB: not an expression file");
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)sb.st_size + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf) abort();
    ssize_t n = 0;
    while (len + 1 < cap && ((n = read(fd, buf + len, cap - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0) len += (size_t)n;
    int bad = n < 0;
    close(fd);
    buf[len] = 0;
    if (bad || memchr(buf, 0, len)) {
        free(buf);
        tt_fail(err, "%s:1:1: %s", path, bad ? "read error" : "not a text file (contains a NUL byte)");
        return NULL;
    }
    TeProgram *g = TeProgram_parse(buf, path, sets, n_sets, err);
    free(buf);
    return g;
}

void TeProgram_delete(TeProgram *this) {
    if (!this) return;
    for (int t = 0; t < this->n_tensors; t++)
        if (this->tensors[t].is_const) free(this->tensors[t].values);
    for (int i = 0; i < this->n_nodes; i++)
        free(this->nodes[i]);
    free(this->nodes);
    free(this);
}

int TeProgram_find(const TeProgram *this, const char *name) {
    for (int i = 0; i < this->n_tensors; i++)
        if (strcmp(this->tensors[i].name, name) == 0) return i;
    return -1;
}
