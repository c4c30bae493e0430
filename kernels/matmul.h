// kernels/matmul.h: one cache-blocked, register-tiled GEMM serving every layout the model needs.
#ifndef MATMUL_H
#define MATMUL_H

#include "base/common.h"

// The three products the model needs, each named by its shape. Every matrix is row-major and
// dense; "t" marks an operand read transposed:
//   gemm_nn: C (M,N) = A (M,K) @ B (K,N)
//   gemm_nt: C (M,N) = A (M,K) @ B^T, B stored (N,K)       (the tied LM head, dinp = dout W^T)
//   gemm_tn: C (M,N) = A^T @ B (K,N), A stored (K,M)       (weight gradients, dW = X^T dout)
// With MM_ADD the product is added onto C instead of overwriting it. Each is parallel with
// OpenMP inside; every C element is summed over K in the same order whatever the thread count,
// so results are bit-identical across thread counts.
typedef enum { MM_SET = 0, MM_ADD = 1 } MatWrite;
void gemm_nn(real *C, const real *A, const real *B, int M, int N, int K, MatWrite write);
void gemm_nt(real *C, const real *A, const real *B, int M, int N, int K, MatWrite write);
void gemm_tn(real *C, const real *A, const real *B, int M, int N, int K, MatWrite write);

// The share of C that thread tid of nth computes, for use inside a parallel region so several
// independent products run without a barrier between them. Products that write the same C
// with the same (M, N) split it the same way, so each thread accumulates into the same elements
// in program order.
void gemm_nn_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                  MatWrite write);
void gemm_nt_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                  MatWrite write);
void gemm_tn_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                  MatWrite write);

// An elementwise step on the elements of a product's C once their sums are complete, so that the
// operation after a product (a residual added, GELU applied, a derivative multiplied in) reads C
// from L1 instead of another pass over memory: fn(ctx, c, at, n) gets the n consecutive elements
// c[0..n) of one row of C, which are C's elements at, at+1, ... in its row-major numbering (at =
// i * ldc + j), so that ctx can find its own operands at the same offsets. Each element is passed
// once, by the thread that computed it, after its last depth block: the result is bit-identical to
// the product followed by a separate pass of the same operation.
// `operand` is the buffer laid out like C that fn reads or writes at C's offsets (or NULL): a tile
// asks for its lines with C's own before its sums start, so they are in cache when fn runs.
typedef struct {
    void (*fn)(const void *ctx, real *c, size_t at, int n);
    const void *ctx;
    const real *operand;
} GemmEpilogue;
void gemm_nn_epi_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                      MatWrite write, const GemmEpilogue *epi);
void gemm_nt_epi_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                      MatWrite write, const GemmEpilogue *epi);

// The linear layer y = x W with W stored (in, out) so rows of W are contiguous along the output.
// inp is (N,C), weight is (C,OC), out is (N,OC).
void linear_forward(real *out, const real *inp, const real *weight, int N, int C, int OC);
// dinp (N,C) += dout @ W^T ; dweight (C,OC) += inp^T @ dout. Either may be NULL to skip it.
// dinp_write and dweight_write say whether each is added to (GRAD_ADD) or overwritten.
void linear_backward(real *dinp, real *dweight, const real *dout, const real *inp,
                     const real *weight, int N, int C, int OC, GradWrite dinp_write,
                     GradWrite dweight_write);

// The same with an epilogue on out (linear_forward_epi) or on dinp (linear_backward_epi); NULL is
// none.
void linear_forward_epi(real *out, const real *inp, const real *weight, int N, int C, int OC,
                        const GemmEpilogue *epi);
void linear_backward_epi(real *dinp, real *dweight, const real *dout, const real *inp,
                         const real *weight, int N, int C, int OC, GradWrite dinp_write,
                         GradWrite dweight_write, const GemmEpilogue *dinp_epi);
// The share of thread tid of nth of a linear layer's backward, inside a parallel region: the
// gradients g, either NULL to skip it, each added onto (GRAD_ADD) or stored.
typedef struct {
    real *dinp, *dweight;  // (N,C), (C,OC)
    GradWrite dinp_write, dweight_write;
} LinearGrads;
void linear_backward_part(int tid, int nth, LinearGrads g, const real *dout, const real *inp,
                          const real *weight, int N, int C, int OC);
void linear_backward_epi_part(int tid, int nth, LinearGrads g, const real *dout, const real *inp,
                              const real *weight, int N, int C, int OC,
                              const GemmEpilogue *dinp_epi);

// Every element of C is one chain of fused multiply-adds over k in increasing order within each
// block of GEMM_KC depths, started from zero, and the blocks' sums are added onto C in order (onto
// C's old value with MM_ADD): whatever the vector width, tile or thread count.
#define GEMM_KC 256

// The products' clock (make bench's phases): from gemm_clock_start on, the calling thread adds up
// the wall-clock seconds of its share of every product it computes, until gemm_clock_stop; the
// other threads are not timed. gemm_clock_cpu_seconds is the same calls' thread CPU time: on a
// shared machine it leaves out the moments the thread was descheduled, as bench_gemm's `cpu` does.
void gemm_clock_start(void);
void gemm_clock_stop(void);
double gemm_clock_seconds(void);
double gemm_clock_cpu_seconds(void);

// The clock's ledger: the products the clock timed, one line per kind (the caller's phase tag,
// layout, shape as called, epilogue), in the order of their first call, with the FLOPs and seconds
// of the calling thread's shares, for make bench's table of the step's products one by one.
// gemm_ledger_phase tags the calls that follow (0 until it is called); gemm_ledger_clear empties
// the ledger (the clock's start does not: a benchmark's timed steps add up); gemm_ledger_lines
// gives its lines and how many, and *unlisted the calls of kinds past its GEMM_LEDGER_LINES lines.
#define GEMM_LEDGER_LINES 48
typedef struct {
    int phase;
    char
        layout[3];  // "nn", "nt" or "tn" (gemm_nn, gemm_nt, gemm_tn and the products built on them)
    int M, N, K;    // C (M,N), depth K
    void (*epilogue)(const void *ctx, real *c, size_t at, int n);  // its epilogue's fn, or NULL
    long calls;
    double flops, seconds;
} GemmLedgerLine;
void gemm_ledger_phase(int phase);
void gemm_ledger_clear(void);
int gemm_ledger_lines(const GemmLedgerLine **lines, long *unlisted);

// Name of the vector path compiled in (e.g. "avx512f, 16-wide float32 vectors, 12x2-vector
// tiles", "portable C"), for --version and logs, and its width in float32 lanes (1 without).
const char *matmul_simd_path(void);
int matmul_vector_lanes(void);

#endif
