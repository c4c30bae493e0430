// kernels/fastmath.h: exp and erf for the float32 hot loops (softmax, cross-entropy, GELU), written
// so the compiler can vectorise them (libm's expf/erff are calls it cannot inline). exp uses the
// classic range reduction x = n ln2 + r, |r| <= ln2/2, a degree-6 polynomial for e^r and 2^n built
// in the exponent bits; relative error about 2e-7 (a couple of float ulps). The float64 build uses
// libm so the gradient checks see exact math.
#ifndef FASTMATH_H
#define FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/common.h"

// Every helper is defined for every input, NaN and +-infinity included (tests/test_robust.c).
#ifdef REAL_DOUBLE
static inline real fast_exp(real x) { return exp(x); }
static inline real fast_exp_nonpositive(real x) { return exp(x); }
static inline real fast_erf(real x) { return erf(x); }
#else
// e^x for x in [-87, 88], the range the callers clamp to: the range reduction above
static inline float exp_clamped(float x) {
    // round x / ln2 to the nearest integer by adding and removing 1.5 * 2^23 (no libm call, so
    // the loop vectorises)
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f;  // ln2 split in two so n*ln2 is exact in the first part
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    // n is an integer in [-126, 127], so the biased exponent n + 127 is in [1, 254]
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static inline float fast_exp(float x) {
    // Defined for every input: -inf and +inf are clamped like any large value, and NaN is
    // clamped too (every comparison with NaN is false, so the first select takes the bound)
    // so that the conversion to int32_t stays in range; the NaN itself is returned.
    float in = x;
    // clamp to the float range: exp(-87.3) is the smallest normal, exp(88.7) the largest
    x = x > -87.0f ? x : -87.0f;
    x = x > 88.0f ? 88.0f : x;
    return in != in ? in : exp_clamped(x);
}

// e^x for an x that is never positive, as in e^{-x^2}: fast_exp's value bit for bit, without the
// upper clamp and the NaN select, which GELU's two exponentials per element do not need. A NaN
// comes out finite: the callers' other terms carry it (fast_erf's t, GELU's Phi).
static inline float fast_exp_nonpositive(float x) { return exp_clamped(x > -87.0f ? x : -87.0f); }

// erf by Abramowitz & Stegun 7.1.26 (defined for every input: +-inf give +-1, NaN gives NaN) (error
// < 1.5e-7 in exact arithmetic, 5e-7 measured in float), odd-symmetric: erf(|x|) = 1 - (a1 t + a2
// t^2 + a3 t^3 + a4 t^4 + a5 t^5) e^{-x^2}, t = 1 / (1 + p |x|)
static inline float fast_erf(float x) {
    float ax = x < 0 ? -x : x;
    float t = 1.0f / (1.0f + 0.3275911f * ax);
    float poly =
        t * (0.254829592f +
             t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    float y = 1.0f - poly * fast_exp_nonpositive(-ax * ax);
    return x < 0 ? -y : y;
}
#endif

#endif
