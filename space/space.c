/* space/space.c: knobs, the mixed-radix flat index, sampling without
 * replacement, neighbours and cost-model features of a configuration space. */
#include "space/space.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A knob with more entities than this is a template bug (or a wild extent);
 * refusing it keeps a typo from allocating gigabytes. */
#define KNOB_MAX_ENTITIES (1u << 22)
/* Divisors are found by trial division up to sqrt(extent): 2^40 keeps that
 * under a million steps. No real loop extent comes near it. */
#define SPLIT_MAX_EXTENT ((int64_t)1 << 40)

void Space_init(Space *this) {
    memset(this, 0, sizeof *this);
    this->total = 1;
}

void Space_done(Space *this) {
    for (int i = 0; i < this->n_knobs; i++)
        free(this->knobs[i].factors);
    memset(this, 0, sizeof *this);
    this->total = 1;
}

static Status check_room(const Space *this, const char *name, uint64_t len, uint64_t *total, char *err) {
    if (this->n_knobs >= SPACE_MAX_KNOBS) return tt_fail(err, "%s: too many knobs (at most %d)", name, SPACE_MAX_KNOBS);
    if (__builtin_mul_overflow(this->total, len, total))
        return tt_fail(err, "%s: the space size overflows 64 bits (%llu configs so far, knob has %llu)", name,
                       (unsigned long long)this->total, (unsigned long long)len);
    return TT_OK;
}

/* ---- split enumeration ----------------------------------------------------- */

typedef struct Enum {
    int64_t extent;
    int n_inner; /* num_outputs - 1 */
    SplitPolicy policy;
    const int64_t *cands; /* candidate inner factors, ascending */
    int n_cands;
    int64_t stack[SPLIT_MAX_OUT];
    int64_t *out; /* NULL while counting */
    uint64_t len;
} Enum;

/* Depth-first over the inner factors, innermost first (the order in which
 * the entities are listed). The outermost factor is whatever remains:
 * extent / product for exact factorisations, ceil(extent / product) for
 * power-of-two splits (a tail is allowed there). */
static void enum_dfs(Enum *e, int depth, int64_t prod) {
    if (e->len >= KNOB_MAX_ENTITIES) return;
    if (depth == e->n_inner) {
        if (e->out) {
            int m = e->n_inner + 1;
            int64_t *row = e->out + e->len * (uint64_t)m;
            row[0] = (e->extent + prod - 1) / prod; /* exact when prod divides extent */
            /* stack[0] is the innermost factor, which goes last */
            for (int i = 0; i < e->n_inner; i++)
                row[m - 1 - i] = e->stack[i];
        }
        e->len++;
        return;
    }
    for (int c = 0; c < e->n_cands; c++) {
        int64_t f = e->cands[c];
        if (f > e->extent / prod) break; /* cands ascending: product would exceed the extent */
        int64_t p = prod * f;
        if (e->policy == SPLIT_FACTORS && e->extent % p != 0) continue;
        e->stack[depth] = f;
        enum_dfs(e, depth + 1, p);
    }
}

/* Candidate inner factors: divisors (factors) or powers of two (power2) of
 * the extent, each <= max_factor when a cap is set. Caller frees. */
static int64_t *split_candidates(int64_t extent, SplitPolicy policy, int64_t max_factor, int *count) {
    int64_t cap = max_factor > 0 && max_factor < extent ? max_factor : extent;
    size_t n = 0, room = 64;
    int64_t *c = malloc(room * sizeof *c);
    if (!c) abort();
    if (policy == SPLIT_POWER2) {
        for (int64_t f = 1; f <= cap; f *= 2) {
            c[n++] = f;
            if (f > INT64_MAX / 2) break;
        }
    } else {
        /* divisors up to sqrt ascending, then their cofactors descending */
        size_t lo = 0;
        int64_t *hi = malloc(room * sizeof *hi);
        size_t nhi = 0, roomhi = room;
        if (!hi) abort();
        for (int64_t d = 1; d <= extent / d; d++) {
            if (extent % d) continue;
            if (lo == room) {
                room *= 2;
                c = realloc(c, room * sizeof *c);
                if (!c) abort();
            }
            c[lo++] = d;
            if (d != extent / d) {
                if (nhi == roomhi) {
                    roomhi *= 2;
                    hi = realloc(hi, roomhi * sizeof *hi);
                    if (!hi) abort();
                }
                hi[nhi++] = extent / d;
            }
        }
        c = realloc(c, (lo + nhi + 1) * sizeof *c);
        if (!c) abort();
        n = lo;
        for (size_t i = nhi; i-- > 0;)
            c[n++] = hi[i];
        free(hi);
        size_t keep = 0;
        while (keep < n && c[keep] <= cap)
            keep++;
        n = keep;
    }
    *count = (int)n;
    return c;
}

Status Space_addSplit(Space *this, const char *name, int64_t extent, int num_outputs, SplitPolicy policy,
                      int64_t max_factor, char *err) {
    if (extent <= 0) return tt_fail(err, "%s: extent %lld must be positive", name, (long long)extent);
    if (extent > SPLIT_MAX_EXTENT)
        return tt_fail(err, "%s: extent %lld is too large to split (at most 2^40)", name, (long long)extent);
    if (num_outputs < 1 || num_outputs > SPLIT_MAX_OUT)
        return tt_fail(err, "%s: num_outputs %d outside 1..%d", name, num_outputs, SPLIT_MAX_OUT);
    if (max_factor < 0) return tt_fail(err, "%s: max_factor %lld must be >= 0", name, (long long)max_factor);
    if (strlen(name) >= KNOB_NAME_LEN)
        return tt_fail(err, "%s: knob name longer than %d characters", name, KNOB_NAME_LEN - 1);
    if (Space_knobIndex(this, name) >= 0) return tt_fail(err, "%s: knob defined twice", name);

    Enum e = {.extent = extent, .n_inner = num_outputs - 1, .policy = policy};
    e.cands = split_candidates(extent, policy, max_factor, &e.n_cands);
    enum_dfs(&e, 0, 1);
    if (e.len >= KNOB_MAX_ENTITIES) {
        free((void *)e.cands);
        return tt_fail(err, "%s: split of %lld into %d has too many entities (more than %u)", name, (long long)extent,
                       num_outputs, KNOB_MAX_ENTITIES - 1);
    }
    uint64_t total = 0;
    if (check_room(this, name, e.len, &total, err) != TT_OK) {
        free((void *)e.cands);
        return TT_ERR;
    }
    e.out = malloc(e.len * (uint64_t)num_outputs * sizeof(int64_t));
    if (!e.out) abort();
    uint64_t len = e.len;
    e.len = 0;
    enum_dfs(&e, 0, 1);
    assert(e.len == len);
    free((void *)e.cands);

    Knob *k = &this->knobs[this->n_knobs++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->kind = KNOB_SPLIT;
    k->len = len;
    k->extent = extent;
    k->num_outputs = num_outputs;
    k->policy = policy;
    k->max_factor = max_factor;
    k->factors = e.out;
    this->total = total;
    return TT_OK;
}

Status Space_addOption(Space *this, const char *name, const int64_t *values, int n, char *err) {
    if (n < 1 || n > OPTION_MAX_VALUES) return tt_fail(err, "%s: %d values, must be 1..%d", name, n, OPTION_MAX_VALUES);
    if (strlen(name) >= KNOB_NAME_LEN)
        return tt_fail(err, "%s: knob name longer than %d characters", name, KNOB_NAME_LEN - 1);
    if (Space_knobIndex(this, name) >= 0) return tt_fail(err, "%s: knob defined twice", name);
    uint64_t total = 0;
    if (check_room(this, name, (uint64_t)n, &total, err) != TT_OK) return TT_ERR;
    Knob *k = &this->knobs[this->n_knobs++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->kind = KNOB_OPTION;
    k->len = (uint64_t)n;
    k->n_values = n;
    memcpy(k->values, values, (size_t)n * sizeof *values);
    this->total = total;
    return TT_OK;
}

int Space_knobIndex(const Space *this, const char *name) {
    for (int i = 0; i < this->n_knobs; i++)
        if (strcmp(this->knobs[i].name, name) == 0) return i;
    return -1;
}

/* ---- index <-> choice ------------------------------------------------------- */

void Space_decode(const Space *this, uint64_t index, int32_t *choice) {
    for (int i = 0; i < this->n_knobs; i++) {
        uint64_t len = this->knobs[i].len;
        choice[i] = (int32_t)(index % len);
        index /= len;
    }
}

uint64_t Space_encode(const Space *this, const int32_t *choice) {
    uint64_t index = 0;
    for (int i = this->n_knobs - 1; i >= 0; i--)
        index = index * this->knobs[i].len + (uint64_t)choice[i];
    return index;
}

const int64_t *Space_split(const Space *this, const int32_t *choice, int k) {
    const Knob *kb = &this->knobs[k];
    assert(kb->kind == KNOB_SPLIT && (uint64_t)choice[k] < kb->len);
    return kb->factors + (uint64_t)choice[k] * (uint64_t)kb->num_outputs;
}

int64_t Space_option(const Space *this, const int32_t *choice, int k) {
    const Knob *kb = &this->knobs[k];
    assert(kb->kind == KNOB_OPTION && (uint64_t)choice[k] < kb->len);
    return kb->values[choice[k]];
}

const int64_t *Space_splitByName(const Space *this, const int32_t *choice, const char *name) {
    int k = Space_knobIndex(this, name);
    assert(k >= 0);
    return Space_split(this, choice, k);
}

int64_t Space_optionByName(const Space *this, const int32_t *choice, const char *name) {
    int k = Space_knobIndex(this, name);
    assert(k >= 0);
    return Space_option(this, choice, k);
}

uint64_t Space_neighbour(const Space *this, uint64_t index, Rng *rng) {
    int movable[SPACE_MAX_KNOBS], n = 0;
    for (int i = 0; i < this->n_knobs; i++)
        if (this->knobs[i].len > 1) movable[n++] = i;
    if (n == 0) return index;
    int32_t choice[SPACE_MAX_KNOBS];
    Space_decode(this, index, choice);
    int k = movable[Rng_below(rng, (uint64_t)n)];
    /* any other entity of that knob, uniformly */
    uint64_t step = 1 + Rng_below(rng, this->knobs[k].len - 1);
    choice[k] = (int32_t)(((uint64_t)choice[k] + step) % this->knobs[k].len);
    return Space_encode(this, choice);
}

/* ---- text ------------------------------------------------------------------- */

/* snprintf that never runs past the end and tracks the used length */
static void put(char *buf, size_t n, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t n, size_t *used, const char *fmt, ...) {
    if (*used >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *used, n - *used, fmt, ap);
    va_end(ap);
    if (w < 0) return;
    *used += (size_t)w;
    if (*used >= n) *used = n;
}

void Space_format(const Space *this, const int32_t *choice, char *buf, size_t n) {
    size_t used = 0;
    if (n == 0) return;
    buf[0] = '\0';
    for (int i = 0; i < this->n_knobs; i++) {
        const Knob *k = &this->knobs[i];
        put(buf, n, &used, "%s%s=", i ? " " : "", k->name);
        if (k->kind == KNOB_SPLIT) {
            const int64_t *f = Space_split(this, choice, i);
            put(buf, n, &used, "[");
            for (int j = 0; j < k->num_outputs; j++)
                put(buf, n, &used, "%s%lld", j ? "," : "", (long long)f[j]);
            put(buf, n, &used, "]");
        } else {
            put(buf, n, &used, "%lld", (long long)Space_option(this, choice, i));
        }
    }
}

void Space_describe(const Space *this, char *buf, size_t n) {
    size_t used = 0;
    if (n == 0) return;
    buf[0] = '\0';
    for (int i = 0; i < this->n_knobs; i++) {
        const Knob *k = &this->knobs[i];
        if (k->kind == KNOB_SPLIT) {
            put(buf, n, &used, "%d %s: Split(policy=%s, product=%lld, num_outputs=%d", i, k->name,
                k->policy == SPLIT_POWER2 ? "power2" : "factors", (long long)k->extent, k->num_outputs);
            if (k->max_factor > 0) put(buf, n, &used, ", max_factor=%lld", (long long)k->max_factor);
            put(buf, n, &used, ") len=%llu\n", (unsigned long long)k->len);
        } else {
            put(buf, n, &used, "%d %s: Option([", i, k->name);
            for (int j = 0; j < k->n_values; j++)
                put(buf, n, &used, "%s%lld", j ? ", " : "", (long long)k->values[j]);
            put(buf, n, &used, "]) len=%llu\n", (unsigned long long)k->len);
        }
    }
}

/* ---- features --------------------------------------------------------------- */

int Space_featureCount(const Space *this) {
    int c = 0;
    for (int i = 0; i < this->n_knobs; i++)
        c += this->knobs[i].kind == KNOB_SPLIT ? this->knobs[i].num_outputs : 1;
    return c;
}

int Space_features(const Space *this, uint64_t index, float *out, int cap) {
    int32_t choice[SPACE_MAX_KNOBS];
    Space_decode(this, index, choice);
    int c = 0;
    for (int i = 0; i < this->n_knobs && c < cap; i++) {
        const Knob *k = &this->knobs[i];
        if (k->kind == KNOB_SPLIT) {
            const int64_t *f = Space_split(this, choice, i);
            for (int j = 0; j < k->num_outputs && c < cap; j++)
                out[c++] = (float)log2((double)f[j]);
        } else {
            out[c++] = (float)Space_option(this, choice, i);
        }
    }
    return c;
}

/* ---- sampling without replacement -------------------------------------------- */

/* Rejection tries per draw before switching to a scan. */
#define REJECT_TRIES 256
/* Largest space we are willing to scan index by index (about a second). */
#define SCAN_LIMIT ((uint64_t)1 << 27)

/* Selection sampling (Knuth's algorithm S) over the unvisited indices: two
 * passes, no allocation, each unvisited index equally likely. */
static int sample_scan(const Space *this, VisitedSet *visited, Rng *rng, uint64_t *out, int n) {
    uint64_t remaining = 0;
    for (uint64_t i = 0; i < this->total; i++)
        if (!VisitedSet_has(visited, i)) remaining++;
    int got = 0;
    for (uint64_t i = 0; i < this->total && got < n && remaining > 0; i++) {
        if (VisitedSet_has(visited, i)) continue;
        if (Rng_below(rng, remaining) < (uint64_t)(n - got)) out[got++] = i;
        remaining--;
    }
    for (int i = 0; i < got; i++)
        VisitedSet_add(visited, out[i]);
    /* the scan yields ascending indices: shuffle so callers see a random order */
    for (int i = got - 1; i > 0; i--) {
        int j = (int)Rng_below(rng, (uint64_t)i + 1);
        uint64_t t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
    return got;
}

int Space_sampleUnvisited(const Space *this, VisitedSet *visited, Rng *rng, uint64_t *out, int n) {
    uint64_t total = this->total;
    int got = 0;
    while (got < n) {
        /* Dense regime: fewer than a quarter of the configs are left, so
         * rejection would waste most draws; the visited set is then at least
         * 3/4 of the space, so a scan costs about as much as the set itself. */
        uint64_t count = visited->count;
        bool dense = count >= total || (total - count) < total / 4 + 1;
        if (count >= total && total > SCAN_LIMIT) return got; /* exhausted (and too big to double-check) */
        if (dense && total <= SCAN_LIMIT) return got + sample_scan(this, visited, rng, out + got, n - got);
        bool found = false;
        for (int t = 0; t < REJECT_TRIES; t++) {
            uint64_t i = Rng_below(rng, total);
            if (VisitedSet_add(visited, i)) {
                out[got++] = i;
                found = true;
                break;
            }
        }
        if (!found && total <= SCAN_LIMIT) return got + sample_scan(this, visited, rng, out + got, n - got);
        /* beyond SCAN_LIMIT with 256 misses in a row: keep drawing (the set
         * would need > 2^27 entries to make this likely) */
    }
    return got;
}
