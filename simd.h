// simd.h: whether the hand-written AVX2 kernels of attention.c apply (SIMD_AVX2: the float32
// build compiled for AVX2 + FMA, AVX-512 machines included), and the 8x8 register transpose they
// share with the GEMM (vec.h's vec_transpose_store). New code uses vec.h directly.
#ifndef SIMD_H
#define SIMD_H

#include "common.h"
#include "vec.h"

#if defined(__AVX2__) && defined(__FMA__) && !defined(REAL_DOUBLE)
#define SIMD_AVX2 1
// dst[t * ld_dst + r] = src[r * ld_src + t] for an 8x8 block: rows of src become columns of dst.
static inline void transpose8_store(real *dst, long ld_dst, const real *src, long ld_src) {
    vec_transpose_store(dst, ld_dst, src, ld_src);
}
#else
#define SIMD_AVX2 0
#endif

#endif
