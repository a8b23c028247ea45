/* base/rng.h: a small, fast, seedable generator (xoshiro256** seeded through
 * splitmix64). Every random choice in tunetop goes through an Rng so that a
 * session with --seed S is reproducible. Not thread-safe: one Rng per owner. */
#ifndef TT_BASE_RNG_H
#define TT_BASE_RNG_H

#include <stdint.h>

typedef struct Rng {
    uint64_t s[4];
} Rng;

void Rng_seed(Rng *this, uint64_t seed);
uint64_t Rng_next(Rng *this);
/* uniform in [0, n) without modulo bias; n > 0 */
uint64_t Rng_below(Rng *this, uint64_t n);
/* uniform in [0, 1) */
double Rng_uniform(Rng *this);

#endif
