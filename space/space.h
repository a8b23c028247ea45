/* space/space.h: the configuration space of one tuning task.
 *
 * A Space is an ordered list of knobs. A split knob lists every ordered way
 * to write an axis extent as a product of num_outputs factors (policy
 * SPLIT_FACTORS: exact factorisations; SPLIT_POWER2: inner factors are powers
 * of two, the outermost factor is ceil(extent / product of the others), so
 * tails are allowed), optionally with every factor <= max_factor. An option
 * knob is one value out of a list.
 *
 * A configuration is a "choice" vector (one entity index per knob) or,
 * equivalently, a flat 64-bit index decoded mixed-radix with the FIRST knob
 * varying fastest. A space whose size does not fit in 64 bits is an error.
 *
 * Ownership: a Space owns its knobs' entity tables; Space_init/Space_done
 * bracket its life (it is usually embedded in a Task). Knob names are copied.
 */
#ifndef TT_SPACE_SPACE_H
#define TT_SPACE_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/rng.h"
#include "base/status.h"

#define SPACE_MAX_KNOBS 16
#define SPLIT_MAX_OUT 4
#define OPTION_MAX_VALUES 16
#define KNOB_NAME_LEN 32

typedef enum { KNOB_SPLIT, KNOB_OPTION } KnobKind;
typedef enum { SPLIT_FACTORS, SPLIT_POWER2 } SplitPolicy;

typedef struct Knob {
    char name[KNOB_NAME_LEN];
    KnobKind kind;
    uint64_t len; /* number of entities */
    /* split */
    int64_t extent;
    int num_outputs;
    SplitPolicy policy;
    int64_t max_factor; /* 0 = no cap */
    int64_t *factors;   /* len * num_outputs values, outermost factor first */
    /* option */
    int n_values;
    int64_t values[OPTION_MAX_VALUES];
} Knob;

typedef struct Space {
    int n_knobs;
    Knob knobs[SPACE_MAX_KNOBS];
    uint64_t total; /* product of knob lengths, valid once every add succeeded */
} Space;

void Space_init(Space *this);
void Space_done(Space *this);

/* Adds a split knob. Fails (naming the knob/axis) when extent <= 0,
 * num_outputs outside 1..SPLIT_MAX_OUT, too many knobs, or when the space
 * total would overflow 64 bits. */
Status Space_addSplit(Space *this, const char *name, int64_t extent, int num_outputs, SplitPolicy policy,
                      int64_t max_factor, char *err);
/* Adds an option knob with n values (1..OPTION_MAX_VALUES). */
Status Space_addOption(Space *this, const char *name, const int64_t *values, int n, char *err);

int Space_knobIndex(const Space *this, const char *name); /* -1 if absent */

/* flat index <-> choice vector (choice has n_knobs entries) */
void Space_decode(const Space *this, uint64_t index, int32_t *choice);
uint64_t Space_encode(const Space *this, const int32_t *choice);

/* The factors of split knob k in a choice (num_outputs values, outermost first). */
const int64_t *Space_split(const Space *this, const int32_t *choice, int k);
/* The value of option knob k in a choice. */
int64_t Space_option(const Space *this, const int32_t *choice, int k);
/* Same two, looked up by knob name; the name must exist (checked by assert). */
const int64_t *Space_splitByName(const Space *this, const int32_t *choice, const char *name);
int64_t Space_optionByName(const Space *this, const int32_t *choice, const char *name);

/* A random neighbour: the same config with exactly one knob changed (a knob
 * with len > 1). Returns index itself only when every knob has len 1. */
uint64_t Space_neighbour(const Space *this, uint64_t index, Rng *rng);

/* Human text of a config, e.g. "tile_f=[1,8,8,8] tile_y=[1,7,1,1] unroll=512". */
void Space_format(const Space *this, const int32_t *choice, char *buf, size_t n);
/* One line per knob ("0 tile_f: Split(policy=factors, product=512, num_outputs=4) len=220")
 * appended to a caller-owned buffer; used by `tunetop space`. */
void Space_describe(const Space *this, char *buf, size_t n);

/* Numeric features of a config for the cost model: for each split knob,
 * log2 of each factor; for each option knob, its value. Writes at most cap
 * floats, returns how many it wrote (Space_featureCount of them). */
int Space_featureCount(const Space *this);
int Space_features(const Space *this, uint64_t index, float *out, int cap);

/* ---- VisitedSet: a hash set of flat indices (open addressing). ------------
 * Owned by the engine per task; tuners consult it so no config is measured
 * twice, and resume fills it from the log. Not thread-safe. */
typedef struct VisitedSet {
    uint64_t *slots; /* UINT64_MAX marks an empty slot */
    uint64_t cap;
    uint64_t count;
} VisitedSet;

void VisitedSet_init(VisitedSet *this);
void VisitedSet_done(VisitedSet *this);
bool VisitedSet_has(const VisitedSet *this, uint64_t index);
/* returns true when index was newly added */
bool VisitedSet_add(VisitedSet *this, uint64_t index);

/* Draws up to n distinct indices from [0, total) that are not in visited,
 * adds them to visited, writes them to out, and returns how many it drew
 * (fewer than n only when the space is exhausted). Efficient both when the
 * space is huge (rejection) and when it is nearly exhausted (scan). */
int Space_sampleUnvisited(const Space *this, VisitedSet *visited, Rng *rng, uint64_t *out, int n);

#endif
