// base/rng.h: the trainer's fast seeded generator, and NumPy's legacy MT19937 + randn for the lab.
#ifndef RNG_H
#define RNG_H

#include <stdint.h>

// xoshiro256** seeded through splitmix64: fast, 256 bits of state saved in checkpoints.
typedef struct {
    uint64_t s[4];
} Rng;

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_next(Rng *r);
// Uniform in [0, n) without modulo bias.
uint64_t rng_below(Rng *r, uint64_t n);
// Uniform double in [0, 1) with 53 random bits.
double rng_uniform(Rng *r);
// Standard normal (Box-Muller, no cached value so the state alone describes the stream).
double rng_normal(Rng *r);

// NumPy's legacy RandomState: MT19937 seeded with init_genrand(seed), random_sample() and the
// polar-method gauss with a cached second value; reproduces np.random.seed(s); np.random.randn bit
// for bit.
typedef struct {
    uint32_t mt[624];
    int mti;
    int has_gauss;
    double gauss;
} NumpyRng;

void numpy_seed(NumpyRng *r, uint32_t seed);
uint32_t numpy_genrand(NumpyRng *r);
double numpy_random_sample(NumpyRng *r);
double numpy_randn(NumpyRng *r);

#endif
