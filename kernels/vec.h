// kernels/vec.h: the vector unit, written once for every width. A `vreal` is VL values of `real` in
// one GNU C vector (gcc and clang, every target): 16 floats with AVX-512, 8 with AVX2 + FMA, 4 with
// NEON, chosen at compile time from the target; without a vector unit with fused multiply-add,
// VEC_BYTES is 0 and callers use their scalar loops. Ordinary operators work on vreal (a + b,
// a * b); the functions below are the operations that need care to be exact and fast:
//   vzero()                 all lanes 0
//   vset1(x)                all lanes x (a broadcast; -0 stays -0)
//   vload(p), vstore(p, v)  VL values at p, any alignment
//   vfma(a, b, c)           a * b + c with one rounding per lane, at every optimisation level
//   vmax(a, b)              lane-wise maximum
//   vsum(v), vhmax(v)       the lanes' sum (in lane order) and maximum
// and, where the target has a register transpose, VEC_TB and vec_transpose_store() for a
// VEC_TB x VEC_TB block.
//
// The vector width can be forced for testing: -DVEC_BYTES=64 on an AVX2 target builds the 16-wide
// code as two 8-wide halves (`make VEC=16`), so the AVX-512 build's logic runs on any x86-64 with
// AVX2; -DVEC_BYTES=16 builds the NEON width with SSE + FMA; -DVEC_BYTES=0 the scalar code.
#ifndef VEC_H
#define VEC_H

#include <math.h>
#include <string.h>

#include "base/common.h"

#ifndef VEC_BYTES
#if defined(__AVX512F__)
#define VEC_BYTES 64
#elif defined(__AVX2__) && defined(__FMA__)
#define VEC_BYTES 32
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define VEC_BYTES 16
#elif defined(__wasm_simd128__) && !defined(REAL_DOUBLE)
#define VEC_BYTES 16
#else
#define VEC_BYTES 0
#endif
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#endif
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

// Which instructions the vectors compile to, for --version and the bench line.
#if VEC_BYTES == 64 && defined(__AVX512F__)
#define VEC_ISA "avx512f"
#elif VEC_BYTES == 64 && defined(__AVX2__) && defined(__FMA__)
#define VEC_ISA "avx2+fma, as two 8-wide halves"
#elif VEC_BYTES == 32 && defined(__AVX2__) && defined(__FMA__)
#define VEC_ISA "avx2+fma"
#elif VEC_BYTES == 16 && defined(__aarch64__) && defined(__ARM_NEON)
#define VEC_ISA "neon"
#elif VEC_BYTES == 16 && defined(VEC_UNFUSED) && defined(__SSE__) && !defined(__FMA__)
#define VEC_ISA "sse (multiply and add rounded apart)"
#elif VEC_BYTES == 16 && defined(__FMA__)
#define VEC_ISA "sse+fma"
#elif VEC_BYTES == 16 && defined(__wasm_simd128__)
#define VEC_ISA "wasm simd128 (multiply and add rounded apart)"
#elif VEC_BYTES == 0
#define VEC_ISA "portable C"
#else
#error "VEC_BYTES is set for a target without the matching vector unit and FMA"
#endif

// a * b + c for scalars with the same rounding as vfma where the machine fuses (every target with
// vectors here has a fused multiply-add); unfused where it has none, and then nothing is fused.
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA) || defined(__FP_FAST_FMA)
#define VEC_SCALAR_FUSED 1
#ifdef REAL_DOUBLE
static inline real smadd(real a, real b, real c) { return fma(a, b, c); }
#else
static inline real smadd(real a, real b, real c) { return fmaf(a, b, c); }
#endif
#else
#define VEC_SCALAR_FUSED 0
static inline real smadd(real a, real b, real c) { return a * b + c; }
#endif

#if VEC_BYTES
#define VL (VEC_BYTES / (int)sizeof(real))  // lanes in a vreal
typedef real vreal __attribute__((vector_size(VEC_BYTES)));

static inline vreal vzero(void) { return (vreal){0}; }
static inline vreal vload(const real *p) {
    vreal v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void vstore(real *p, vreal v) { memcpy(p, &v, sizeof v); }

#if VEC_BYTES == 64 && defined(__AVX512F__) && !defined(REAL_DOUBLE)
static inline vreal vset1(real x) { return (vreal)_mm512_set1_ps(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
}
static inline vreal vmax(vreal a, vreal b) { return (vreal)_mm512_max_ps((__m512)a, (__m512)b); }
#elif VEC_BYTES == 64 && defined(__AVX512F__)
static inline vreal vset1(real x) { return (vreal)_mm512_set1_pd(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
}
static inline vreal vmax(vreal a, vreal b) { return (vreal)_mm512_max_pd((__m512d)a, (__m512d)b); }
#elif VEC_BYTES == 32 && !defined(REAL_DOUBLE)
static inline vreal vset1(real x) { return (vreal)_mm256_set1_ps(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
}
static inline vreal vmax(vreal a, vreal b) { return (vreal)_mm256_max_ps((__m256)a, (__m256)b); }
#elif VEC_BYTES == 32
static inline vreal vset1(real x) { return (vreal)_mm256_set1_pd(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
}
static inline vreal vmax(vreal a, vreal b) { return (vreal)_mm256_max_pd((__m256d)a, (__m256d)b); }
#elif VEC_BYTES == 16 && defined(__aarch64__) && !defined(REAL_DOUBLE)
static inline vreal vset1(real x) { return (vreal)vdupq_n_f32(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)vfmaq_f32((float32x4_t)c, (float32x4_t)a, (float32x4_t)b);
}
static inline vreal vmax(vreal a, vreal b) {
    return (vreal)vmaxq_f32((float32x4_t)a, (float32x4_t)b);
}
#elif VEC_BYTES == 16 && defined(__aarch64__)
static inline vreal vset1(real x) { return (vreal)vdupq_n_f64(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)vfmaq_f64((float64x2_t)c, (float64x2_t)a, (float64x2_t)b);
}
static inline vreal vmax(vreal a, vreal b) {
    return (vreal)vmaxq_f64((float64x2_t)a, (float64x2_t)b);
}
#elif VEC_BYTES == 16 && defined(__wasm_simd128__)
// WebAssembly's 128-bit SIMD has no fused multiply-add (only the relaxed-simd proposal, whose
// rounding is left to the engine): vfma rounds the product and the sum apart, the same in every
// browser; smadd matches it (VEC_SCALAR_FUSED is 0). vmax is pmax(b, a) = (a > b ? a : b), the
// x86 maxps rule.
static inline vreal vset1(real x) { return (vreal)wasm_f32x4_splat(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)wasm_f32x4_add(wasm_f32x4_mul((v128_t)a, (v128_t)b), (v128_t)c);
}
static inline vreal vmax(vreal a, vreal b) { return (vreal)wasm_f32x4_pmax((v128_t)b, (v128_t)a); }
#elif VEC_BYTES == 16 && defined(VEC_UNFUSED) && !defined(__FMA__) && !defined(REAL_DOUBLE)
// The wasm module's rounding natively (-mno-fma -DVEC_UNFUSED -ffp-contract=off, VEC=4): the
// product and the sum rounded apart, to tell the cost and the digits of the missing FMA.
static inline vreal vset1(real x) { return (vreal)_mm_set1_ps(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)_mm_add_ps(_mm_mul_ps((__m128)a, (__m128)b), (__m128)c);
}
static inline vreal vmax(vreal a, vreal b) { return (vreal)_mm_max_ps((__m128)a, (__m128)b); }
#elif VEC_BYTES == 16 && !defined(REAL_DOUBLE)
static inline vreal vset1(real x) { return (vreal)_mm_set1_ps(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)_mm_fmadd_ps((__m128)a, (__m128)b, (__m128)c);
}
static inline vreal vmax(vreal a, vreal b) { return (vreal)_mm_max_ps((__m128)a, (__m128)b); }
#elif VEC_BYTES == 16
static inline vreal vset1(real x) { return (vreal)_mm_set1_pd(x); }
static inline vreal vfma(vreal a, vreal b, vreal c) {
    return (vreal)_mm_fmadd_pd((__m128d)a, (__m128d)b, (__m128d)c);
}
static inline vreal vmax(vreal a, vreal b) { return (vreal)_mm_max_pd((__m128d)a, (__m128d)b); }
#else
// A vector wider than the machine's (the 16-wide test build on AVX2): the same operations on
// each half, so every lane is rounded exactly as the native width would round it.
typedef real vhalf __attribute__((vector_size(VEC_BYTES / 2)));
typedef union {
    vreal v;
    vhalf h[2];
} vsplit;
#ifdef REAL_DOUBLE
#define VHALF_SET1(x)      (vhalf) _mm256_set1_pd(x)
#define VHALF_FMA(a, b, c) (vhalf) _mm256_fmadd_pd((__m256d)(a), (__m256d)(b), (__m256d)(c))
#define VHALF_MAX(a, b)    (vhalf) _mm256_max_pd((__m256d)(a), (__m256d)(b))
#else
#define VHALF_SET1(x)      (vhalf) _mm256_set1_ps(x)
#define VHALF_FMA(a, b, c) (vhalf) _mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c))
#define VHALF_MAX(a, b)    (vhalf) _mm256_max_ps((__m256)(a), (__m256)(b))
#endif
static inline vreal vset1(real x) {
    vsplit r;
    r.h[0] = r.h[1] = VHALF_SET1(x);
    return r.v;
}
static inline vreal vfma(vreal a, vreal b, vreal c) {
    vsplit x = {a}, y = {b}, z = {c}, r;
    r.h[0] = VHALF_FMA(x.h[0], y.h[0], z.h[0]);
    r.h[1] = VHALF_FMA(x.h[1], y.h[1], z.h[1]);
    return r.v;
}
static inline vreal vmax(vreal a, vreal b) {
    vsplit x = {a}, y = {b}, r;
    r.h[0] = VHALF_MAX(x.h[0], y.h[0]);
    r.h[1] = VHALF_MAX(x.h[1], y.h[1]);
    return r.v;
}
#endif

// The lanes' sum, added in lane order (0 + 1, then + 2, ...), and their maximum.
static inline real vsum(vreal v) {
    real s = v[0];
    for (int i = 1; i < VL; i++) s += v[i];
    return s;
}
static inline real vhmax(vreal v) {
    real m = v[0];
    for (int i = 1; i < VL; i++) m = v[i] > m ? v[i] : m;
    return m;
}
#endif  // VEC_BYTES

// A square block transposed through registers: dst[t * ld_dst + r] = src[r * ld_src + t] for r, t
// in [0, VEC_TB). 8 x 8 with AVX (float32), 4 x 4 with NEON (float32); VEC_TB is 0 where there is
// none (callers then copy element by element).
#if defined(__AVX2__) && !defined(REAL_DOUBLE)
#define VEC_TB 8
static inline void vec_transpose_store(real *dst, long ld_dst, const real *src, long ld_src) {
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ld_src);
    __m256 r2 = _mm256_loadu_ps(src + 2 * ld_src), r3 = _mm256_loadu_ps(src + 3 * ld_src);
    __m256 r4 = _mm256_loadu_ps(src + 4 * ld_src), r5 = _mm256_loadu_ps(src + 5 * ld_src);
    __m256 r6 = _mm256_loadu_ps(src + 6 * ld_src), r7 = _mm256_loadu_ps(src + 7 * ld_src);
    // interleave pairs of rows, then pairs of pairs, then swap 128-bit halves
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst + 0 * ld_dst, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + 1 * ld_dst, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * ld_dst, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * ld_dst, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * ld_dst, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * ld_dst, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * ld_dst, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * ld_dst, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#elif defined(__aarch64__) && defined(__ARM_NEON) && !defined(REAL_DOUBLE)
#define VEC_TB 4
static inline void vec_transpose_store(real *dst, long ld_dst, const real *src, long ld_src) {
    float32x4_t r0 = vld1q_f32(src), r1 = vld1q_f32(src + ld_src);
    float32x4_t r2 = vld1q_f32(src + 2 * ld_src), r3 = vld1q_f32(src + 3 * ld_src);
    // interleave pairs of rows, then take 64-bit halves of the pairs
    float32x4_t t0 = vtrn1q_f32(r0, r1), t1 = vtrn2q_f32(r0, r1);
    float32x4_t t2 = vtrn1q_f32(r2, r3), t3 = vtrn2q_f32(r2, r3);
    vst1q_f32(dst + 0 * ld_dst, vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0),
                                                                 vreinterpretq_f64_f32(t2))));
    vst1q_f32(dst + 1 * ld_dst, vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1),
                                                                 vreinterpretq_f64_f32(t3))));
    vst1q_f32(dst + 2 * ld_dst, vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0),
                                                                 vreinterpretq_f64_f32(t2))));
    vst1q_f32(dst + 3 * ld_dst, vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1),
                                                                 vreinterpretq_f64_f32(t3))));
}
#else
#define VEC_TB 0
#endif

#endif
