// base/rng.c: xoshiro256** (seeded through splitmix64) for the trainer, and NumPy's legacy
// RandomState (MT19937 + random_sample + polar-method gauss) reproduced bit for bit.
#include "base/rng.h"

#include <math.h>

// ---------------------------------------------------------------------------------------------
// xoshiro256** 1.0 (Blackman & Vigna), state filled by splitmix64 as the authors recommend.

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void rng_seed(Rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
    // splitmix64 is a bijection of its counter, so four consecutive outputs cannot all be zero;
    // keep the guard anyway since the all-zero state is the one fixed point of xoshiro.
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 0x9E3779B97F4A7C15ULL;
}

uint64_t rng_next(Rng *r) {
    uint64_t *s = r->s;
    const uint64_t result = rotl64(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

uint64_t rng_below(Rng *r, uint64_t n) {
    if (n <= 1) return 0;  // [0, 1) holds only 0; n == 0 is meaningless and also gives 0
    // Reject the lowest (2^64 mod n) values so the remaining range is a multiple of n. A draw is
    // rejected with probability (2^64 mod n) / 2^64 < 1/2, so 64 rejections in a row (odds below
    // 2^-64) only happen to a broken state: the all-zero state, xoshiro's fixed point, returns 0
    // for ever. The loop is bounded so that such a state cannot hang the program.
    const uint64_t threshold = (0 - n) % n;
    uint64_t x = rng_next(r);
    for (int rejected = 1; x < threshold && rejected < 64; rejected++) x = rng_next(r);
    return x % n;
}

double rng_uniform(Rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

double rng_normal(Rng *r) {
    static const double two_pi = 6.283185307179586476925286766559;
    double u1 = 1.0 - rng_uniform(r);  // in (0, 1]: log(u1) is finite
    double u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

// ---------------------------------------------------------------------------------------------
// MT19937 (Matsumoto & Nishimura reference code) as used by NumPy's legacy RandomState.

#define MT_N          624
#define MT_M          397
#define MT_MATRIX_A   0x9908b0dfU
#define MT_UPPER_MASK 0x80000000U
#define MT_LOWER_MASK 0x7fffffffU

void numpy_seed(NumpyRng *r, uint32_t seed) {
    r->mt[0] = seed;
    for (int i = 1; i < MT_N; i++) {
        uint32_t prev = r->mt[i - 1];
        r->mt[i] = (uint32_t)(1812433253U * (prev ^ (prev >> 30)) + (uint32_t)i);
    }
    r->mti = MT_N;
    r->has_gauss = 0;
    r->gauss = 0.0;
}

static void mt_generate(NumpyRng *r) {
    uint32_t *mt = r->mt;
    int k;
    for (k = 0; k < MT_N - MT_M; k++) {
        uint32_t y = (mt[k] & MT_UPPER_MASK) | (mt[k + 1] & MT_LOWER_MASK);
        mt[k] = mt[k + MT_M] ^ (y >> 1) ^ ((y & 1U) ? MT_MATRIX_A : 0U);
    }
    for (; k < MT_N - 1; k++) {
        uint32_t y = (mt[k] & MT_UPPER_MASK) | (mt[k + 1] & MT_LOWER_MASK);
        mt[k] = mt[k + (MT_M - MT_N)] ^ (y >> 1) ^ ((y & 1U) ? MT_MATRIX_A : 0U);
    }
    uint32_t y = (mt[MT_N - 1] & MT_UPPER_MASK) | (mt[0] & MT_LOWER_MASK);
    mt[MT_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ ((y & 1U) ? MT_MATRIX_A : 0U);
    r->mti = 0;
}

uint32_t numpy_genrand(NumpyRng *r) {
    // mti outside [0, MT_N] can only come from an unseeded or corrupted struct; regenerate.
    if (r->mti >= MT_N || r->mti < 0) mt_generate(r);
    uint32_t y = r->mt[r->mti++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

double numpy_random_sample(NumpyRng *r) {
    uint32_t a = numpy_genrand(r) >> 5, b = numpy_genrand(r) >> 6;
    return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

double numpy_randn(NumpyRng *r) {
    if (r->has_gauss) {
        double g = r->gauss;
        r->has_gauss = 0;
        r->gauss = 0.0;
        return g;
    }
    double x1, x2, r2;
    do {
        x1 = 2.0 * numpy_random_sample(r) - 1.0;
        x2 = 2.0 * numpy_random_sample(r) - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    double f = sqrt(-2.0 * log(r2) / r2);
    r->gauss = f * x1;
    r->has_gauss = 1;
    return f * x2;
}
