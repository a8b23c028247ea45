/* tuner/net/netprog.h: the execution plan of a network graph and the C program
 * that runs it with exported kernels.
 *
 * The plan turns the graph into steps, in an order where every step's inputs
 * are ready. A tensor lives in one or more places ("views"): its own NCHW
 * buffer, or the blocked buffers of a kernel (the exporter's
 * PREFIX_blocked_input / _output / _residual, laid out as the
 * PREFIX_BLOCKED_IN_* / _OUT_* macros say). Steps:
 *   - a kernel step per tunable op: the op's exported kernel (an instance per
 *     op, created with that op's weights) computes the op and the epilogue
 *     parts its kernel fuses (NetOpKernel: the task's kernel, or a variant of
 *     it with the same config that fuses this occurrence's whole epilogue).
 *     A blocked kernel reads its input from its blocked input buffer and
 *     writes its blocked output buffer (run_blocked);
 *   - a move step (netrt's ttrt_move): one pass from one view to another that
 *     also applies a chain of elementwise ops (bias_add / batch_norm, a
 *     residual add, relu / clip) — so batch-norm + ReLU, a residual add, an
 *     unfused epilogue or a ReLU6 read a kernel's blocked output and write the
 *     next kernel's blocked input directly; a move without arithmetic is a
 *     layout transform (NCHW -> blocked, blocked -> NCHW, blocked -> blocked);
 *   - a runtime step per other op (tuner/net/netrt.c, NCHW; max pooling reads and
 *     writes any layout); flatten is a view.
 * A tensor is written once, where its first reader wants it (the blocked
 * input of a kernel, the residual buffer of a kernel, else NCHW); a reader
 * that wants it elsewhere gets a move from an existing view just before it
 * runs. So tensors stay blocked from kernel to kernel through the runtime's
 * elementwise ops and pools, and NCHW appears only where an op needs it.
 *
 * NetProg_write writes main.c of a program that reads the parameters and the
 * input from a file, creates the kernels, runs the network once and writes
 * the output, then times it (see the protocol in netprog.c). */
#ifndef TT_TUNER_NETPROG_H
#define TT_TUNER_NETPROG_H

#include <stdbool.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "kernels/template.h"
#include "tuner/net/graph.h"
#include "tuner/net/subgraph.h"

typedef enum {
    NSTEP_KERNEL = 0, /* a tuned kernel (run, or run_blocked when it holds a blocked layout) */
    NSTEP_RUNTIME,    /* an untuned op, or a move that applies elementwise ops */
    NSTEP_PACK,       /* a move without arithmetic: NCHW -> blocked */
    NSTEP_UNPACK,     /* blocked -> NCHW */
    NSTEP_REBLOCK     /* blocked -> blocked (one kernel's layout into another's) */
} NetStepKind;

/* Where a view of a tensor is: its NCHW buffer, a blocked buffer of op's
 * kernel, or a blocked buffer of its own ([n][c / cb][h][w][cb], no padding). */
typedef enum { LOC_NCHW = 0, LOC_IN, LOC_OUT, LOC_RES, LOC_BUF } NetLocKind;

typedef struct NetView {
    int tensor; /* -1 for a kernel's partial output (its unfused epilogue follows) */
    NetLocKind loc;
    int op; /* LOC_IN / LOC_OUT / LOC_RES: the kernel's op; LOC_BUF: the block size cb */
} NetView;

/* The kernel that computes a tunable op: kernel = index into NetProg_write's
 * prefixes; mask = BLOCKED_INPUT | BLOCKED_OUTPUT of its exported config (with
 * the layouts in, out); bias / residual / relu: the epilogue it fuses. */
typedef struct NetOpKernel {
    int kernel;
    int mask;
    BlockedLayout in, out;
    bool bias, residual, relu;
    bool relu6; /* the activation fused is a clip to [0, 6] (Workload.relu6) */
} NetOpKernel;

typedef struct NetStep {
    NetStepKind kind;
    bool move;  /* a ttrt_move (kind RUNTIME when it applies elementwise ops) */
    int op;     /* the op heading the step (moves: the op the moved tensor is for, or -1) */
    int op2;    /* runtime steps: a second op of the same pass, or -1 */
    int kernel; /* kernel steps: index into the prefixes */
    int out;    /* tensor written (-1: a kernel's partial output) */
    /* kernel steps: NCHW tensors passed as data / second input / output (-1: none, the kernel's buffer) */
    int in_t, in2_t, out_t;
    bool blocked; /* run_blocked (else run) */
    /* moves */
    NetView src, res, dst; /* res.tensor < -1: none */
    int scale_op;          /* batch_norm op (scale = param 0, shift = param 1), or -1 */
    int shift_op;          /* bias_add op (shift = param 0), or -1 */
    int act;               /* 0 none, 1 relu, 2 clip [lo, hi] */
    double lo, hi;
    char label[96]; /* the profile's row: "task 3 conv2d 1x64x56x56" or the untuned listing name */
} NetStep;

typedef struct NetPlan {
    const Graph *g;
    const GraphTasks *gt;
    const NetOpKernel *ok; /* per op (copied), NULL when none is blocked and kernels are the tasks' */
    NetStep *steps;
    int n_steps, cap_steps;
    int *alias; /* per tensor: the tensor whose NCHW buffer it uses (itself when it owns one; -1: no NCHW view) */
    NetView *views;
    int n_views, cap_views;
    int kept_blocked; /* tensors never converted to NCHW though a blocked kernel wrote or read them */
} NetPlan;

/* Fills ok[op] for every tunable op with its task's kernel: kernel = task,
 * mask = blocked[task] (NULL: 0) with layouts from layouts_in/out[task] (NULL:
 * zero), the task's epilogue flags. */
void NetPlan_taskKernels(const Graph *g, const GraphTasks *gt, const int *blocked, const BlockedLayout *layouts_in,
                         const BlockedLayout *layouts_out, NetOpKernel *ok);

/* ok: per op (NULL = the task kernels, nothing blocked). flat: every tensor
 * goes through NCHW between ops (blocked kernels pack and unpack around
 * themselves), for comparison. */
Status NetPlan_make(const Graph *g, const GraphTasks *gt, const NetOpKernel *ok, bool flat, NetPlan *plan, char *err);
void NetPlan_done(NetPlan *this);

/* The text of main.c. prefixes[k] is the symbol prefix of kernel k (its
 * header is "PREFIX.h"; without NetOpKernels, kernel = task); n_kernels of them. The runtime is compiled beside it as
 * netrt.c (NetProg_runtimeSource). */
void NetProg_write(const NetPlan *plan, const char *const *prefixes, int n_kernels, StrBuf *out);

/* main.c of the network run as subgraphs (tuner/net/subgraph.h): one step per
 * subgraph, in sg->order, running its task's kernel (prefixes[task]) on the
 * NCHW tensors and parameters of its arguments; the same protocol and timing
 * as NetProg_write. */
void NetProg_writeSubgraphs(const Graph *g, const Subgraphs *sg, const char *const *prefixes, StrBuf *out);
/* A kernel in the cpu ABI (kernels/targets/cpu/abi.h; a tensor expression's,
 * TeTask_source) with its entry points renamed PREFIX_setup, PREFIX_run, ...
 * so that several are linked into one program. */
void NetProg_renameKernel(const char *prefix, const char *source, StrBuf *out);

/* The runtime's header and source as one translation unit (netrt.c of the program). */
const char *NetProg_runtimeSource(void);
const char *NetProg_runtimeHeader(void); /* netrt.h of the program */

#endif
