/* base/keyindex.h: a string-keyed index over the entries of an array that the
 * caller owns (open addressing, kept at most half full). The index stores
 * entry numbers; the key of entry i comes from the caller's key_of, so the
 * array may hold any struct. The logs' per-task tables use it: a few to a few
 * hundred tasks, looked up once per record. */
#ifndef TT_BASE_KEYINDEX_H
#define TT_BASE_KEYINDEX_H

#include <stddef.h>

typedef const char *(*KeyOfFn)(const void *entries, int i);

typedef struct KeyIndex {
    int *slots; /* -1: empty; else an entry number */
    size_t n_slots;
    KeyOfFn key_of;
    KeyOfFn sub_of; /* NULL, or the second part of an entry's identity (KeyIndex_initPair) */
} KeyIndex;

void KeyIndex_init(KeyIndex *this, KeyOfFn key_of);
/* An index whose entries are told apart by (key, sub), e.g. a task key and a
 * template name (one workload under two templates is two tasks). It hashes
 * the key only; KeyIndex_findPair matches the sub as well, where an empty
 * sub (of the query or of the entry) matches any. */
void KeyIndex_initPair(KeyIndex *this, KeyOfFn key_of, KeyOfFn sub_of);
/* The entry of (key, sub) (sub NULL or "": the first entry with the key), or -1. */
int KeyIndex_findPair(const KeyIndex *this, const void *entries, const char *key, const char *sub);
void KeyIndex_done(KeyIndex *this);
/* The entry whose key is key, or -1. */
int KeyIndex_find(const KeyIndex *this, const void *entries, const char *key);
/* Indexes entry n_entries - 1, just appended to entries (growing the index
 * when it would be more than half full). */
void KeyIndex_added(KeyIndex *this, const void *entries, int n_entries);
/* Indexes entries 0..n_entries-1 afresh (after the array was reordered). */
void KeyIndex_rebuild(KeyIndex *this, const void *entries, int n_entries);

#endif
