// matmul.h: one cache-blocked, register-tiled GEMM serving every layout the model needs.
#ifndef MATMUL_H
#define MATMUL_H

#include "common.h"

// C (M,N) = C*accumulate + A (M,K) @ B (K,N), all row-major views given by strides so the one
// kernel serves NN, NT and TN: A[i][k] = A[i*a_rs + k*a_cs], B[k][j] = B[k*b_rs + j*b_cs],
// C[i][j] = C[i*ldc + j]. Parallel with OpenMP inside; every C element is summed over K in the
// same order whatever the thread count, so results are bit-identical across thread counts.
void gemm(int M, int N, int K,
          const real *A, long a_rs, long a_cs,
          const real *B, long b_rs, long b_cs,
          real *C, long ldc, int accumulate);

// The share of C that thread tid of nth computes, for use inside a parallel region so several
// independent products run without a barrier between them. Products that write the same C
// with the same (M, N) split it the same way, so each thread accumulates into the same elements
// in program order.
void gemm_part(int tid, int nth, int M, int N, int K,
               const real *A, long a_rs, long a_cs,
               const real *B, long b_rs, long b_cs,
               real *C, long ldc, int accumulate);

// The linear layer y = x W with W stored (in, out) so rows of W are contiguous along the output.
// inp is (N,C), weight is (C,OC), out is (N,OC).
void matmul_forward(real *out, const real *inp, const real *weight, int N, int C, int OC);
// dinp (N,C) += dout @ W^T ; dweight (C,OC) += inp^T @ dout. Either may be NULL to skip it.
// dinp_write and dweight_write say whether each is added to (GRAD_ADD) or overwritten.
void matmul_backward(real *dinp, real *dweight, const real *dout, const real *inp,
                     const real *weight, int N, int C, int OC, GradWrite dinp_write, GradWrite dweight_write);

void matmul_backward_part(int tid, int nth, real *dinp, real *dweight, const real *dout, const real *inp,
                          const real *weight, int N, int C, int OC, GradWrite dinp_write, GradWrite dweight_write);

// Name of the SIMD path compiled in ("avx2+fma", "portable C"), for --version and logs.
const char *matmul_simd_path(void);

// Measured FP32 FMA throughput of this machine (GFLOP/s) with all OpenMP threads: independent
// FMA chains held in registers, the ceiling that MFU is reported against.
double fma_peak_gflops(void);

#endif
