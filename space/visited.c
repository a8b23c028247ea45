/* space/visited.c: VisitedSet, an open-addressing hash set of flat indices. */
#include <stdlib.h>

#include "space/space.h"

#define EMPTY UINT64_MAX

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

void VisitedSet_init(VisitedSet *this) {
    this->cap = 1024;
    this->count = 0;
    this->slots = malloc(this->cap * sizeof(uint64_t));
    if (!this->slots) abort();
    for (uint64_t i = 0; i < this->cap; i++)
        this->slots[i] = EMPTY;
}

void VisitedSet_done(VisitedSet *this) {
    free(this->slots);
    this->slots = NULL;
    this->cap = this->count = 0;
}

static uint64_t *find(const VisitedSet *this, uint64_t index) {
    uint64_t mask = this->cap - 1;
    uint64_t i = mix(index) & mask;
    while (this->slots[i] != EMPTY && this->slots[i] != index)
        i = (i + 1) & mask;
    return &this->slots[i];
}

/* UINT64_MAX marks an empty slot, so it can never be a member (no space has
 * 2^64 configs); rejecting it here keeps the table from being corrupted. */
bool VisitedSet_has(const VisitedSet *this, uint64_t index) {
    if (index == EMPTY || this->cap == 0) return false;
    return *find(this, index) == index;
}

static void grow(VisitedSet *this) {
    uint64_t *old = this->slots, oldcap = this->cap;
    this->cap *= 2;
    this->slots = malloc(this->cap * sizeof(uint64_t));
    if (!this->slots) abort();
    for (uint64_t i = 0; i < this->cap; i++)
        this->slots[i] = EMPTY;
    for (uint64_t i = 0; i < oldcap; i++)
        if (old[i] != EMPTY) *find(this, old[i]) = old[i];
    free(old);
}

bool VisitedSet_add(VisitedSet *this, uint64_t index) {
    if (index == EMPTY) return false;
    if ((this->count + 1) * 10 > this->cap * 7) grow(this);
    uint64_t *slot = find(this, index);
    if (*slot == index) return false;
    *slot = index;
    this->count++;
    return true;
}
