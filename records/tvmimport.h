/* records/tvmimport.h: AutoTVM records as tunetop records.
 *
 * A TVM task maps when its name names an operator tunetop has a template for
 * (conv2d NCHW, depthwise conv2d NCHW, dense, batch matmul), its arguments
 * describe a float32 workload tunetop can run, and its config entity names
 * exactly the knobs of tunetop's space for that workload and target family:
 *  - a split's -1 (the factor TVM leaves implied) is resolved from the axis
 *    length; the factors must multiply to the axis length and be an entity of
 *    tunetop's knob; a two-way reduction split [outer, inner] of older TVM
 *    templates is tunetop's three-way [outer, 1, inner];
 *  - an option's value must be one of tunetop's candidates;
 *  - older records name the kernel-height reduction tile_rx and the width one
 *    tile_ry: when only the swapped names fit the kernel, they are swapped.
 * The config index is recomputed in tunetop's space. TVM's own index is
 * recomputed too, with TVM's enumeration (mixed radix over the entity's knobs
 * in order, the first fastest; a "factors" split enumerates the factors after
 * the first by depth-first search over the sorted divisors, the deepest
 * choice fastest), and compared with the index the record stores.
 *
 * An imported Record has no costs (it was not measured here): src names the
 * source file and line, src_cost is TVM's mean cost in seconds.
 */
#ifndef TT_RECORDS_TVMIMPORT_H
#define TT_RECORDS_TVMIMPORT_H

#include <stdbool.h>

#include "base/status.h"
#include "kernels/template.h"
#include "kernels/workload.h"
#include "records/record.h"
#include "records/tvmlog.h"

typedef enum {
    TVM_MAP_OK = 0,
    TVM_MAP_FAILED,       /* a failed measurement in TVM: nothing to import */
    TVM_MAP_TARGET,       /* a target tunetop has no counterpart for */
    TVM_MAP_TASK,         /* a TVM task (template) tunetop has no template for */
    TVM_MAP_WORKLOAD,     /* arguments tunetop cannot run (dtype, groups, asymmetric padding, ...) */
    TVM_MAP_NO_TEMPLATE,  /* the operator has no tunetop template on this target family */
    TVM_MAP_KNOB_MISSING, /* a knob of tunetop's space is not in the entity */
    TVM_MAP_KNOB_EXTRA,   /* the entity has a knob tunetop's space does not */
    TVM_MAP_KNOB_SHAPE,   /* a split with another number of factors */
    TVM_MAP_VALUE,        /* a value outside tunetop's space (factors, option) */
    TVM_MAP_OTHER_TARGET, /* maps, but for another target than the output log's */
    TVM_MAP_REASONS
} TvmMapReason;

const char *TvmMapReason_text(TvmMapReason r); /* "unknown template", "knob missing", ... */

/* The tunetop workload of an AutoTVM record (op from the task name, shapes
 * from the arguments). TT_ERR with why (for TVM_MAP_TASK or TVM_MAP_WORKLOAD,
 * told apart by *reason). */
Status TvmRecord_workload(const TvmRecord *rec, Workload *wl, TvmMapReason *reason, char *why);

/* The tunetop target name of a TVM target string ("cuda", "cpu"), or NULL. */
const char *TvmTarget_tunetop(const char *tvm_target);

typedef struct TvmMapper TvmMapper;

/* dev_cpu / dev_gpu: the device limits the spaces are defined with (a CPU
 * space depends on the vector width); either may be NULL (that family does
 * not map then). */
TvmMapper *TvmMapper_new(const DeviceInfo *dev_cpu, const DeviceInfo *dev_gpu);
void TvmMapper_delete(TvmMapper *this);

typedef struct TvmMapResult {
    TvmMapReason reason;
    char why[TT_ERRLEN];    /* the detail: "knob tile_rx missing", "tile_f=[3,1,1,1] does not multiply to 64" */
    bool tvm_index_checked; /* TVM's index could be recomputed */
    bool tvm_index_agrees;
    int64_t tvm_index; /* recomputed */
    bool swapped_rx_ry;
    bool widened; /* a two-way reduction split became three-way */
} TvmMapResult;

/* Maps one AutoTVM record. On TVM_MAP_OK, out is the imported Record (src set
 * from src_name and the record's line). The mapper keeps one space per
 * workload (memory grows with workloads). */
void TvmMapper_map(TvmMapper *this, const TvmRecord *rec, const char *src_name, Record *out, TvmMapResult *res);

#endif
