/* base/keyindex.c: see keyindex.h. */
#include "base/keyindex.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

/* FNV-1a: keys are short strings */
static uint64_t key_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void KeyIndex_init(KeyIndex *this, KeyOfFn key_of) { KeyIndex_initPair(this, key_of, NULL); }

void KeyIndex_initPair(KeyIndex *this, KeyOfFn key_of, KeyOfFn sub_of) {
    memset(this, 0, sizeof *this);
    this->key_of = key_of;
    this->sub_of = sub_of;
}

void KeyIndex_done(KeyIndex *this) {
    free(this->slots);
    KeyIndex_initPair(this, this->key_of, this->sub_of);
}

/* The slot holding (key, sub), or the empty one where it goes. exact: the sub
 * must be equal (to place an entry); else an empty sub on either side, or a
 * NULL one, matches any (to look one up). */
static size_t slot_of(const KeyIndex *this, const void *entries, const char *key, const char *sub, bool exact) {
    size_t mask = this->n_slots - 1;
    for (size_t s = (size_t)key_hash(key) & mask;; s = (s + 1) & mask) {
        int e = this->slots[s];
        if (e < 0) return s;
        if (strcmp(this->key_of(entries, e), key) != 0) continue;
        if (!this->sub_of || !sub) return s;
        const char *es = this->sub_of(entries, e);
        if (strcmp(es, sub) == 0 || (!exact && (!es[0] || !sub[0]))) return s;
    }
}

static const char *sub_or_null(const KeyIndex *this, const void *entries, int e) {
    return this->sub_of ? this->sub_of(entries, e) : NULL;
}

int KeyIndex_find(const KeyIndex *this, const void *entries, const char *key) {
    return this->n_slots ? this->slots[slot_of(this, entries, key, NULL, false)] : -1;
}

int KeyIndex_findPair(const KeyIndex *this, const void *entries, const char *key, const char *sub) {
    return this->n_slots ? this->slots[slot_of(this, entries, key, sub, false)] : -1;
}

static void resize(KeyIndex *this, const void *entries, int n_entries, size_t n_slots) {
    free(this->slots);
    this->slots = tt_realloc(NULL, n_slots * sizeof *this->slots);
    this->n_slots = n_slots;
    for (size_t s = 0; s < n_slots; s++)
        this->slots[s] = -1;
    for (int e = 0; e < n_entries; e++)
        this->slots[slot_of(this, entries, this->key_of(entries, e), sub_or_null(this, entries, e), true)] = e;
}

void KeyIndex_added(KeyIndex *this, const void *entries, int n_entries) {
    if ((size_t)n_entries * 2 > this->n_slots)
        resize(this, entries, n_entries, this->n_slots ? this->n_slots * 2 : 64);
    else
        this->slots[slot_of(this, entries, this->key_of(entries, n_entries - 1),
                            sub_or_null(this, entries, n_entries - 1), true)] = n_entries - 1;
}

void KeyIndex_rebuild(KeyIndex *this, const void *entries, int n_entries) {
    size_t n_slots = this->n_slots ? this->n_slots : 64;
    while ((size_t)n_entries * 2 > n_slots)
        n_slots *= 2;
    resize(this, entries, n_entries, n_slots);
}
