/* tuner/netprog.h: the execution plan of a network graph and the C program
 * that runs it with exported kernels.
 *
 * The plan turns the graph into steps, in an order where every step's inputs
 * are ready:
 *   - a kernel step per tunable op: the task's exported kernel (an instance
 *     per op, created with that op's weights) computes the op and the epilogue
 *     parts the task fuses, straight into the tensor at the end of the op's
 *     epilogue chain; the parts the task does not fuse follow in one
 *     ttrt_affine pass over that tensor (so an epilogue chain is never
 *     materialised tensor by tensor);
 *   - a runtime step per other op, calling tuner/netrt.c; a batch_norm whose
 *     only reader is a relu runs as one pass with it; flatten is a view.
 * A kernel whose template holds its data in a blocked layout (the exporter's
 * PREFIX_INPUT_BLOCKED / PREFIX_OUTPUT_BLOCKED) runs as pack, run_blocked and
 * unpack steps, so the profile shows the layout transforms apart. When such a
 * kernel's whole epilogue is fused and its output's only reader is the next
 * kernel, which takes a blocked input and no residual, the tensor stays
 * blocked: one reblock step copies it from the first kernel's output layout
 * into the second's input layout, instead of an unpack to NCHW and a pack.
 *
 * NetProg_write writes main.c of a program that reads the parameters and the
 * input from a file, creates the kernels, runs the network once and writes
 * the output, then times it (see the protocol in netprog.c). */
#ifndef TT_TUNER_NETPROG_H
#define TT_TUNER_NETPROG_H

#include <stdbool.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "tuner/graph.h"

typedef enum {
    STEP_KERNEL = 0, /* a tuned kernel (run, or run_blocked when its template holds a blocked layout) */
    STEP_RUNTIME,    /* an untuned op, or the unfused part of an epilogue */
    STEP_PACK,       /* a blocked kernel's NCHW -> blocked transform of its inputs (pack_input) */
    STEP_UNPACK,     /* its blocked -> NCHW transform of the output (unpack_output) */
    STEP_REBLOCK     /* one kernel's blocked output straight into the next kernel's blocked input */
} StepKind;

typedef struct NetStep {
    StepKind kind;
    int op;          /* the head op */
    int op2;         /* a second op run in the same pass (batch_norm + relu), or -1 */
    int task;        /* kernel steps: the task */
    int out;         /* tensor the step writes */
    int res;         /* kernel steps: residual input tensor when the task fuses it, else -1 */
    int rest_bias;   /* kernel steps: unfused epilogue: bias_add op, add op, relu op (or -1) */
    int rest_add;
    int rest_relu;
    int to_op;       /* STEP_REBLOCK: the op whose kernel reads the blocked tensor */
    bool chain_in;   /* kernel steps: the input arrives blocked (no pack) */
    bool split;      /* kernel steps: run_blocked between pack / unpack (or reblock) steps */
    char label[96];  /* the profile's row: "task 3 conv2d 1x64x56x56" or the untuned listing name */
} NetStep;

typedef struct NetPlan {
    const Graph *g;
    const GraphTasks *gt;
    NetStep *steps;
    int n_steps;
    int *alias; /* per tensor: the tensor whose buffer it uses (itself when it owns one; -1: never materialised) */
} NetPlan;

/* blocked: per task, BLOCKED_INPUT | BLOCKED_OUTPUT (kernels/template.h) of
 * its exported kernel; NULL = no kernel is blocked. */
Status NetPlan_make(const Graph *g, const GraphTasks *gt, const int *blocked, NetPlan *plan, char *err);
void NetPlan_done(NetPlan *this);

/* The text of main.c. prefixes[t] is the exported kernel's symbol prefix of
 * task t (its header is "PREFIX.h"). The runtime is compiled beside it as
 * netrt.c (NetProg_runtimeSource). */
void NetProg_write(const NetPlan *plan, const char *const *prefixes, StrBuf *out);

/* The runtime's header and source as one translation unit (netrt.c of the program). */
const char *NetProg_runtimeSource(void);
const char *NetProg_runtimeHeader(void); /* netrt.h of the program */

#endif
