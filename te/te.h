/* te/te.h: the tensor-expression language of `.te` files.
 *
 *   # comment to end of line
 *   let N = 1024                          # integer constant, overridable (--set N=512)
 *   input A[N, N] f32                     # f32 (default) or f16
 *   input B[N, N]
 *   C[i < N, j < N] = sum(A[i, k] * B[k, j], k < N)
 *   output C
 *   const G[2, 3] = [1, 0.5, 0,             # constant tensor: its values row-major,
 *                    -1, 1.0 / 3, 2]        # each an expression of numbers and lets
 *
 * TeProgram_parse reads such a text into a TeProgram: let constants are
 * folded into numbers, every name is resolved, every expression is typed
 * (integer, float or condition; integer `/` and `%` are floor division and
 * modulo) and every tensor access is proven in bounds by interval arithmetic,
 * narrowed by the conditions of the enclosing `if`s. Any failure is one
 * sentence "file:line:col: ..." in err and no program.
 *
 * TeProgram_eval is the reference interpreter: it evaluates every defined
 * tensor in file order in double precision (reductions accumulate in double)
 * and rounds each stored element to its tensor's element type.
 *
 * Ownership: a TeProgram owns its tensors, variables and expression nodes;
 * TeProgram_delete frees all of it. */
#ifndef TT_TE_TE_H
#define TT_TE_TE_H

#include <stdint.h>

#include "base/status.h"

#define TE_MAX_DIMS 8
#define TE_MAX_TENSORS 64
#define TE_MAX_VARS 256
#define TE_MAX_LETS 64
/* How deeply an expression may nest (parentheses, unary operators, and the
 * tree of its operators: a chain of 100 '+' is 100 deep). Every recursive
 * pass over an expression (bounds, lowering, evaluation) then stays far
 * inside a thread's stack; the parser refuses deeper ones with a message. */
#define TE_MAX_DEPTH 64
/* The most elements a tensor may have (16 GiB of floats): every size
 * computed from a shape (elements x bytes, aligned, summed over the
 * arguments) then stays far from overflowing. */
#define TE_MAX_ELEMS ((int64_t)1 << 32)
#define TE_NAME_LEN 32

typedef enum { TE_F32, TE_F16 } TeDtype;
typedef enum { TE_TINT, TE_TFLOAT, TE_TBOOL } TeType;

typedef enum {
    TE_NUM,    /* number literal (inum valid when type is TE_TINT) */
    TE_VAR,    /* iteration variable */
    TE_ACCESS, /* tensor[kid...] */
    TE_NEG,    /* -kid[0] */
    TE_NOT,    /* !kid[0] */
    TE_BIN,    /* kid[0] op kid[1] */
    TE_CALL,   /* func(kid...) */
    TE_IF,     /* if(kid[0], kid[1], kid[2]) */
    TE_REDUCE, /* op(kid[0], axes...) */
} TeKind;

typedef enum {
    TE_ADD,
    TE_SUB,
    TE_MUL,
    TE_DIV,
    TE_MOD,
    TE_LT,
    TE_LE,
    TE_GT,
    TE_GE,
    TE_EQ,
    TE_NE,
    TE_AND,
    TE_OR
} TeBinOp;
typedef enum { TE_EXP, TE_LOG, TE_SQRT, TE_RSQRT, TE_TANH, TE_ERF, TE_ABS, TE_FMAX, TE_FMIN } TeFunc;
typedef enum { TE_SUM, TE_MAX_OVER, TE_MIN_OVER } TeReduceOp;

typedef struct TeExpr {
    TeKind kind;
    TeType type;
    int line, col;
    int op; /* TeBinOp, TeFunc or TeReduceOp */
    double num;
    int64_t inum;
    int var;    /* TE_VAR */
    int tensor; /* TE_ACCESS */
    int n_kids;
    struct TeExpr *kid[TE_MAX_DIMS];
    int n_axes; /* TE_REDUCE: reduction variables */
    int axes[TE_MAX_DIMS];
} TeExpr;

typedef struct TeVar {
    char name[TE_NAME_LEN];
    int64_t extent; /* the variable ranges over [0, extent) */
    int is_reduce;
    int line, col;
} TeVar;

typedef struct TeTensor {
    char name[TE_NAME_LEN];
    int ndim;
    int64_t shape[TE_MAX_DIMS];
    TeDtype dtype;
    int is_input, is_output;
    int is_const;   /* `const`: neither an input nor defined; values holds its elements */
    double *values; /* const tensors: numel elements row-major, rounded to f32 (owned by the program) */
    int line, col;
    int axes[TE_MAX_DIMS]; /* defined tensors: the variable of each dimension */
    TeExpr *body;          /* defined tensors: the value of one element */
} TeTensor;

typedef struct TeLet {
    char name[TE_NAME_LEN];
    int64_t value;
} TeLet;

typedef struct TeSet {
    const char *name;
    int64_t value;
} TeSet;

typedef struct TeProgram {
    char file[256];
    int n_tensors;
    TeTensor tensors[TE_MAX_TENSORS];
    int n_vars;
    TeVar vars[TE_MAX_VARS];
    int n_lets;
    TeLet lets[TE_MAX_LETS];
    /* every expression node, for freeing */
    TeExpr **nodes;
    int n_nodes, cap_nodes;
} TeProgram;

/* Parses text (the contents of file, which only names it in messages) with
 * the given `let` overrides. Returns NULL and one "file:line:col: ..."
 * sentence in err on any error; the caller frees the result with
 * TeProgram_delete. */
TeProgram *TeProgram_parse(const char *text, const char *file, const TeSet *sets, int n_sets, char *err);
/* Reads path and parses it (the path names the file in messages). */
TeProgram *TeProgram_load(const char *path, const TeSet *sets, int n_sets, char *err);
void TeProgram_delete(TeProgram *this);

/* Whether t is defined by an expression (not an input, not a constant). */
static inline int te_is_defined(const TeTensor *t) { return !t->is_input && !t->is_const; }

/* Index of the tensor called name, or -1. */
int TeProgram_find(const TeProgram *this, const char *name);
/* Number of elements of tensor t. */
int64_t TeProgram_numel(const TeProgram *this, int t);

/* Reference interpreter. values[t] must point at TeProgram_numel(t) doubles
 * for every tensor t: inputs are read, defined and constant tensors written
 * (row-major).
 * Cannot fail: the parser proved every access in bounds and every integer
 * divisor non-zero. */
void TeProgram_eval(const TeProgram *this, double **values);
/* The same evaluation, walking the expression tree once per element: the
 * plain definition TeProgram_eval is tested against (same bits). */
void TeProgram_evalDirect(const TeProgram *this, double **values);

/* Rounds a double to the nearest value of an element type. */
double te_round_to(TeDtype dtype, double v);
/* Floor division and modulo (b != 0), as `/` and `%` on integers in `.te`. */
int64_t te_floordiv(int64_t a, int64_t b);
int64_t te_floormod(int64_t a, int64_t b);
/* x op y for a comparison op (TE_LT .. TE_NE): 1 or 0. */
int te_compare(int op, double x, double y);

/* A linear form sum(coef[i] * variable var[i]) + c, terms sorted by var
 * with no zero coefficient. te_linear gives 1 and fills *out when e is an
 * integer expression linear in the iteration variables, 0 otherwise. */
#define TE_LIN_TERMS 16
typedef struct TeLin {
    int n;
    int var[TE_LIN_TERMS];
    int64_t coef[TE_LIN_TERMS];
    int64_t c;
} TeLin;
int te_linear(const TeExpr *e, TeLin *out);

/* Internal to the te/ folder: bounds.c proves one defined tensor's accesses
 * in bounds (called by the parser once its body is complete). */
Status te_check_bounds(const TeProgram *this, int tensor, char *err);

#endif
