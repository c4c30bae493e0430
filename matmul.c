// matmul.c: a BLIS-style GEMM. B is packed into KC x NR slivers so the micro-kernel streams it
// from cache; the micro-kernel keeps an MR x NR tile of C in registers (AVX2+FMA intrinsics
// when compiled for them, reading a row-major A in place and a transposed one packed into
// MR x KC slivers; a plain C loop the compiler vectorises otherwise, and always in the
// double-precision build, over A packed).
#include "matmul.h"
#include "simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>  // the FMA probe uses it in the float64 build too (simd.h only in float32)
#endif

#define MR 6
#define NR 16
#define KC 256
#define MC 96    // rows of A packed at once (multiple of MR)
#define NC 3072  // columns of B packed at once (multiple of NR)

// Each thread packs into its own buffers, so the threads of a GEMM never wait for each other
// (one join at the end: under load, every barrier can cost a scheduler time slice). They are
// thread-local, allocated at a thread's first GEMM and reused: a GEMM called from inside a
// parallel region (one thread per share of the batch, see gpt_forward_backward) then needs no
// coordination either.
typedef struct { real *a, *b; } PackBuffers;
static _Thread_local PackBuffers t_pack;

static PackBuffers *thread_pack(void) {
    if (!t_pack.a) {
        t_pack.a = xmalloc_aligned(sizeof(real) * (MC * KC + 8), "GEMM packing buffer");
        t_pack.b = xmalloc_aligned(sizeof(real) * KC * NC, "GEMM packing buffer");
    }
    return &t_pack;
}

const char *matmul_simd_path(void) {
#if SIMD_AVX2
    return "avx2+fma";
#else
    return "portable C";
#endif
}

// Pack rows [i0, i0+MR) x depth [p0, p0+kc) of A into dst laid out as kc groups of MR values;
// rows past M are zero so edge tiles run the same kernel.
static void pack_a_sliver(real *restrict dst, const real *A, long a_rs, long a_cs,
                          int M, int i0, int p0, int kc) {
    if (a_rs == 1 && i0 + MR <= M) {
        // A is a transposed view (columns contiguous): the MR values of one k are adjacent, so
        // read them together instead of walking MR strided columns
#if SIMD_AVX2
        // one 8-wide copy per depth while 8 values exist in the row: the 2 extra land where the
        // next depth's values go and are overwritten by them (the buffer has room past the end)
        if (i0 + 8 <= M) {
            for (int k = 0; k < kc; k++)
                _mm256_storeu_ps(dst + k * MR, _mm256_loadu_ps(A + i0 + (long)(p0 + k) * a_cs));
            return;
        }
#endif
        for (int k = 0; k < kc; k++) {
            const real *src = A + i0 + (long)(p0 + k) * a_cs;
            for (int i = 0; i < MR; i++) dst[k * MR + i] = src[i];
        }
        return;
    }
    for (int i = 0; i < MR; i++) {
        if (i0 + i < M) {
            const real *row = A + (long)(i0 + i) * a_rs + (long)p0 * a_cs;
            for (int k = 0; k < kc; k++) dst[k * MR + i] = row[(long)k * a_cs];
        } else {
            for (int k = 0; k < kc; k++) dst[k * MR + i] = 0;
        }
    }
}

// Pack depth [p0, p0+kc) x columns [j0, j0+NR) of B into kc groups of NR values.
static void pack_b_sliver(real *restrict dst, const real *B, long b_rs, long b_cs,
                          int N, int j0, int p0, int kc) {
    int nv = N - j0 < NR ? N - j0 : NR;
    if (b_cs == 1) {  // rows of B are contiguous: copy NR-wide runs
#if SIMD_AVX2
        if (nv == NR) {  // two vector moves per k (a library memcpy call per 64 bytes costs more)
            for (int k = 0; k < kc; k++) {
                const real *src = B + (long)(p0 + k) * b_rs + j0;
                _mm256_store_ps(dst + k * NR, _mm256_loadu_ps(src));
                _mm256_store_ps(dst + k * NR + 8, _mm256_loadu_ps(src + 8));
            }
            return;
        }
#endif
        for (int k = 0; k < kc; k++) {
            const real *src = B + (long)(p0 + k) * b_rs + j0;
            real *d = dst + k * NR;
            for (int j = 0; j < nv; j++) d[j] = src[j];
            for (int j = nv; j < NR; j++) d[j] = 0;
        }
    } else {          // columns of B are contiguous (B is a transposed view): read down them
#if SIMD_AVX2
        if (nv == NR) {   // 8x8 blocks transposed in registers (scalar stores 64 bytes apart cost more)
            int k = 0;
            for (; k + 8 <= kc; k += 8)
                for (int h = 0; h < NR; h += 8) {
                    const real *src = B + (long)(p0 + k) * b_rs + (long)(j0 + h) * b_cs;
                    transpose8_store(dst + k * NR + h, NR, src, b_cs);
                }
            for (; k < kc; k++)
                for (int j = 0; j < NR; j++) dst[k * NR + j] = B[(long)(p0 + k) * b_rs + (long)(j0 + j) * b_cs];
            return;
        }
#endif
        for (int j = 0; j < NR; j++) {
            if (j < nv) {
                const real *src = B + (long)p0 * b_rs + (long)(j0 + j) * b_cs;
                for (int k = 0; k < kc; k++) dst[k * NR + j] = src[(long)k * b_rs];
            } else {
                for (int k = 0; k < kc; k++) dst[k * NR + j] = 0;
            }
        }
    }
}

#if SIMD_AVX2
// acc (MR,NR) = sum over k of a(:,k) (MR) outer b[k] (NR), with row i of A at depth k at
// a[i * a_rs + k * a_cs]. With c non-NULL (a full tile), the sums go straight to C instead:
// c = acc, or c += acc when add is set; the same roundings as the caller's edge-tile path (acc
// summed from zero, then one addition onto C).
// A row-major A (a_cs == 1: the activations of the forward and dinp products) is read where it
// lies: its 6 rows are 6 contiguous streams, and packing them (a copy of every activation, a
// tenth of a small product's time) is not needed. A packed sliver is the case (1, MR).
static void micro_kernel_strided(int kc, const real *a, long a_rs, long a_cs, const real *restrict b,
                                 real *restrict acc, real *restrict c, long ldc, int add) {
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
    __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
    __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
    __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
    // rows 0-2 are read off a0 and rows 3-5 off a3, at offsets 0, a_rs, 2 a_rs: x86 addressing
    // (base + index) covers them without six pointers to advance
    const real *a0 = a, *a3 = a + 3 * a_rs;
    // The tile of C is read (or written) only after the k loop, and in a W2 step it is usually
    // in L3 or memory by then (an activation of several MB): ask for its lines now, so the
    // misses overlap the FMAs instead of stalling the end of the tile (BLIS does the same).
    // Alternating W2 runs: 2-3% faster; W1, whose C stays in cache, unchanged.
    if (c)
        for (int i = 0; i < MR; i++) {
            _mm_prefetch((const char *)(c + (long)i * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(c + (long)i * ldc + NR - 1), _MM_HINT_T0);  // a row may span two lines
        }
    const long r1 = a_rs, r2 = 2 * a_rs;
    for (int k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        __m256 x;
        x = _mm256_broadcast_ss(a0);      c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(a0 + r1); c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(a0 + r2); c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(a3);      c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
        x = _mm256_broadcast_ss(a3 + r1); c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
        x = _mm256_broadcast_ss(a3 + r2); c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
        a0 += a_cs;
        a3 += a_cs;
        b += NR;
    }
    if (c) {
#define TILE_ROW(i, lo, hi) do { real *ci = c + (long)(i) * ldc; \
        if (add) { lo = _mm256_add_ps(_mm256_loadu_ps(ci), lo); hi = _mm256_add_ps(_mm256_loadu_ps(ci + 8), hi); } \
        _mm256_storeu_ps(ci, lo); _mm256_storeu_ps(ci + 8, hi); } while (0)
        TILE_ROW(0, c00, c01); TILE_ROW(1, c10, c11); TILE_ROW(2, c20, c21);
        TILE_ROW(3, c30, c31); TILE_ROW(4, c40, c41); TILE_ROW(5, c50, c51);
#undef TILE_ROW
        return;
    }
    _mm256_store_ps(acc + 0 * NR, c00); _mm256_store_ps(acc + 0 * NR + 8, c01);
    _mm256_store_ps(acc + 1 * NR, c10); _mm256_store_ps(acc + 1 * NR + 8, c11);
    _mm256_store_ps(acc + 2 * NR, c20); _mm256_store_ps(acc + 2 * NR + 8, c21);
    _mm256_store_ps(acc + 3 * NR, c30); _mm256_store_ps(acc + 3 * NR + 8, c31);
    _mm256_store_ps(acc + 4 * NR, c40); _mm256_store_ps(acc + 4 * NR + 8, c41);
    _mm256_store_ps(acc + 5 * NR, c50); _mm256_store_ps(acc + 5 * NR + 8, c51);
}

// A packed sliver: MR values per depth, contiguous
static void micro_kernel(int kc, const real *restrict a, const real *restrict b, real *restrict acc,
                         real *restrict c, long ldc, int add) {
    micro_kernel_strided(kc, a, 1, MR, b, acc, c, ldc, add);
}
#else
// The portable tile: acc (MR,NR) = sum over k of a[k] (MR) outer b[k] (NR) from a packed sliver;
// with c non-NULL the sums go to C (c = acc, or c += acc when add is set).
static void micro_kernel(int kc, const real *restrict a, const real *restrict b, real *restrict acc,
                         real *restrict c, long ldc, int add) {
    for (int i = 0; i < MR * NR; i++) acc[i] = 0;
    for (int k = 0; k < kc; k++) {
        for (int i = 0; i < MR; i++) {
            real ai = a[k * MR + i];
            real *restrict row = acc + i * NR;
            const real *restrict bk = b + k * NR;
            for (int j = 0; j < NR; j++) row[j] += ai * bk[j];
        }
    }
    if (c)
        for (int i = 0; i < MR; i++) {
            real *restrict ci = c + (long)i * ldc;
            const real *restrict t = acc + i * NR;
            if (add) for (int j = 0; j < NR; j++) ci[j] += t[j];
            else     for (int j = 0; j < NR; j++) ci[j] = t[j];
        }
}
#endif

// A single row of C (generation: one position at a time). Packing B would copy the whole
// weight matrix for every token, so stream it instead. Each element is summed in exactly the
// micro-kernel's order (FMAs over k within a KC block from zero, then added onto C block by
// block), so the result is bit-identical to the packed path.
#define ROW_CHUNK 512
static void gemm_row(int j_lo, int j_hi, int K, const real *a, long a_cs, const real *B, long b_rs, long b_cs,
                     real *c, int accumulate) {
    _Alignas(64) real acc[ROW_CHUNK];
    for (int j0 = j_lo; j0 < j_hi; j0 += ROW_CHUNK) {
        int nj = j_hi - j0 < ROW_CHUNK ? j_hi - j0 : ROW_CHUNK;
        for (int p0 = 0; p0 < K; p0 += KC) {
            int kc = K - p0 < KC ? K - p0 : KC;
            for (int j = 0; j < nj; j++) acc[j] = 0;
            for (int k = p0; k < p0 + kc; k++) {
                real ak = a[(long)k * a_cs];
                const real *restrict bk = B + (long)k * b_rs + (long)j0 * b_cs;
#if SIMD_AVX2
                // fused multiply-adds, exactly as the AVX2 micro-kernel rounds them, whatever
                // the optimisation level (plain C would be fused only where the compiler contracts)
                int j = 0;
                if (b_cs == 1) {
                    __m256 av = _mm256_set1_ps(ak);
                    for (; j + 8 <= nj; j += 8)
                        _mm256_store_ps(acc + j, _mm256_fmadd_ps(av, _mm256_loadu_ps(bk + j), _mm256_load_ps(acc + j)));
                }
                for (; j < nj; j++) acc[j] = fmaf(ak, bk[(long)j * b_cs], acc[j]);
#else
                // the portable micro-kernel's expression, so both round alike
                for (int j = 0; j < nj; j++) acc[j] += ak * bk[(long)j * b_cs];
#endif
            }
            real *restrict cj = c + j0;
            if (accumulate || p0 > 0) for (int j = 0; j < nj; j++) cj[j] += acc[j];
            else                      for (int j = 0; j < nj; j++) cj[j] = acc[j];
        }
    }
}

// One thread's share: C rows [i_lo, i_hi) x columns [j_lo, j_hi), the classic BLIS loop nest
// (NC columns of B packed, KC deep; MC rows of A packed; MR x NR register tiles).
static void gemm_block(int i_lo, int i_hi, int j_lo, int j_hi, int K,
                       const real *A, long a_rs, long a_cs, const real *B, long b_rs, long b_cs,
                       real *C, long ldc, int accumulate, const PackBuffers *buf) {
    if (i_hi - i_lo == 1) {
        gemm_row(j_lo, j_hi, K, A + (long)i_lo * a_rs, a_cs, B, b_rs, b_cs, C + (long)i_lo * ldc, accumulate);
        return;
    }
    _Alignas(64) real acc[MR * NR];
    // whole 6-row slivers of a row-major A are read in place (see micro_kernel_strided); only a
    // last, partial sliver is packed (with its zero rows). A transposed A (the weight gradients'
    // X^T) is packed: in place, the 6 values of each depth sit a row of X apart, 0.5-6 KB, and
    // lines at such strides fall into a few L1 sets and evict each other every sliver (in the
    // W2 step the products ran 10-25% slower).
    const int direct_a = SIMD_AVX2 && a_cs == 1;
    for (int j0 = j_lo; j0 < j_hi; j0 += NC) {
        int nc = j_hi - j0 < NC ? j_hi - j0 : NC;
        int n_slivers = (nc + NR - 1) / NR;
        for (int p0 = 0; p0 < K; p0 += KC) {
            int kc = K - p0 < KC ? K - p0 : KC;
            int add = accumulate || p0 > 0;  // later depth blocks add onto the partial sums
            for (int s = 0; s < n_slivers; s++)
                pack_b_sliver(buf->b + (long)s * kc * NR, B, b_rs, b_cs, j_hi, j0 + s * NR, p0, kc);
            for (int i0 = i_lo; i0 < i_hi; i0 += MC) {
                int mc = i_hi - i0 < MC ? i_hi - i0 : MC;
                int m_slivers = (mc + MR - 1) / MR;
                for (int s = 0; s < m_slivers; s++)
                    if (!direct_a || i0 + (s + 1) * MR > i_hi)
                        pack_a_sliver(buf->a + (long)s * kc * MR, A, a_rs, a_cs, i_hi, i0 + s * MR, p0, kc);
                for (int sj = 0; sj < n_slivers; sj++) {
                    for (int si = 0; si < m_slivers; si++) {
                        int row0 = i0 + si * MR, col0 = j0 + sj * NR;
                        int mv = i_hi - row0 < MR ? i_hi - row0 : MR;
                        int nv = j_hi - col0 < NR ? j_hi - col0 : NR;
                        const real *pa = buf->a + (long)si * kc * MR, *pb = buf->b + (long)sj * kc * NR;
                        real *c_tile = mv == MR && nv == NR ? C + (long)row0 * ldc + col0 : NULL;
#if SIMD_AVX2
                        if (direct_a && mv == MR)  // a full tile writes C itself
                            micro_kernel_strided(kc, A + (long)row0 * a_rs + (long)p0 * a_cs, a_rs, a_cs,
                                                 pb, acc, c_tile, ldc, add);
                        else
#endif
                            micro_kernel(kc, pa, pb, acc, c_tile, ldc, add);
                        if (c_tile) continue;
                        for (int i = 0; i < mv; i++) {
                            real *restrict c = C + (long)(row0 + i) * ldc + col0;
                            const real *restrict t = acc + i * NR;
                            if (add) for (int j = 0; j < nv; j++) c[j] += t[j];
                            else     for (int j = 0; j < nv; j++) c[j] = t[j];
                        }
                    }
                }
            }
        }
    }
}

// The one strided product behind the named ones: A(i,k) = A[i*a_rs + k*a_cs], B(k,j) =
// B[k*b_rs + j*b_cs], C(i,j) = C[i*ldc + j]; thread tid of nth computes its share of C.
static void gemm_part(int tid, int nth, int M, int N, int K,
               const real *A, long a_rs, long a_cs,
               const real *B, long b_rs, long b_cs,
               real *C, long ldc, int accumulate) {
    if (M <= 0 || N <= 0) return;
    // Split the longer side of C between the threads, in whole register tiles; each thread
    // packs what it needs itself. Every C element is summed over K in the same order whatever
    // the split, so results are bit-identical across thread counts.
    int split_rows = M >= N;
    int unit = split_rows ? MR : NR, len = split_rows ? M : N;
    long tiles = (len + unit - 1) / unit;
    int lo = (int)(tiles * tid / nth) * unit, hi = (int)(tiles * (tid + 1) / nth) * unit;
    if (hi > len) hi = len;
    if (lo >= hi) return;
    if (K <= 0) {  // empty sum: C = 0 unless accumulating
        if (!accumulate)
            for (int i = split_rows ? lo : 0; i < (split_rows ? hi : M); i++)
                memset(C + (long)i * ldc + (split_rows ? 0 : lo), 0, sizeof(real) * (size_t)(split_rows ? N : hi - lo));
        return;
    }
    if (split_rows) gemm_block(lo, hi, 0, N, K, A, a_rs, a_cs, B, b_rs, b_cs, C, ldc, accumulate, thread_pack());
    else gemm_block(0, M, lo, hi, K, A, a_rs, a_cs, B, b_rs, b_cs, C, ldc, accumulate, thread_pack());
}

// The named products are the strided one with their layout's strides.
void gemm_nn_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K, MatWrite write) {
    gemm_part(tid, nth, M, N, K, A, K, 1, B, N, 1, C, N, write == MM_ADD);  // A (M,K), B (K,N)
}
void gemm_nt_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K, MatWrite write) {
    gemm_part(tid, nth, M, N, K, A, K, 1, B, 1, K, C, N, write == MM_ADD);  // A (M,K), B stored (N,K)
}
void gemm_tn_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K, MatWrite write) {
    gemm_part(tid, nth, M, N, K, A, 1, M, B, N, 1, C, N, write == MM_ADD);  // A stored (K,M), B (K,N)
}

void gemm_nn(real *C, const real *A, const real *B, int M, int N, int K, MatWrite write) {
#pragma omp parallel if(par_worth((double)M * N * K))
    gemm_nn_part(thread_index(), thread_count(), C, A, B, M, N, K, write);
}
void gemm_nt(real *C, const real *A, const real *B, int M, int N, int K, MatWrite write) {
#pragma omp parallel if(par_worth((double)M * N * K))
    gemm_nt_part(thread_index(), thread_count(), C, A, B, M, N, K, write);
}
void gemm_tn(real *C, const real *A, const real *B, int M, int N, int K, MatWrite write) {
#pragma omp parallel if(par_worth((double)M * N * K))
    gemm_tn_part(thread_index(), thread_count(), C, A, B, M, N, K, write);
}

void matmul_forward(real *out, const real *inp, const real *weight, int N, int C, int OC) {
    // out (N,OC) = inp (N,C) @ weight (C,OC)
    gemm_nn(out, inp, weight, N, OC, C, MM_SET);
}

void matmul_backward_part(int tid, int nth, real *dinp, real *dweight, const real *dout, const real *inp,
                          const real *weight, int N, int C, int OC, GradWrite dinp_write, GradWrite dweight_write) {
    // dinp (N,C) += dout (N,OC) @ weight^T
    if (dinp) gemm_nt_part(tid, nth, dinp, dout, weight, N, C, OC, dinp_write == GRAD_ADD ? MM_ADD : MM_SET);
    // dweight (C,OC) += inp^T @ dout
    if (dweight) gemm_tn_part(tid, nth, dweight, inp, dout, C, OC, N, dweight_write == GRAD_ADD ? MM_ADD : MM_SET);
}

void matmul_backward(real *dinp, real *dweight, const real *dout, const real *inp,
                     const real *weight, int N, int C, int OC, GradWrite dinp_write, GradWrite dweight_write) {
    // both products in one parallel region: they write different outputs, so no barrier between
#pragma omp parallel if(par_worth(2.0 * N * C * OC))
    {
        int tid = thread_index(), nth = thread_count();
        matmul_backward_part(tid, nth, dinp, dweight, dout, inp, weight, N, C, OC, dinp_write, dweight_write);
    }
}

static double fma_probe_once(void) {
    const long iters = 20000000;
    int threads = 1;
    double t0 = now_seconds();
    float sink = 0;
#pragma omp parallel reduction(+:sink)
    {
#ifdef _OPENMP
#pragma omp single
        threads = omp_get_num_threads();
#endif
#if defined(__AVX2__) && defined(__FMA__)
        // 10 independent accumulators cover the FMA latency x issue width of current cores. They
        // start from different values: identical chains would be merged into one by the
        // compiler, which then times one FMA's latency and reports a peak the core never reaches
        __m256 a0 = _mm256_set1_ps(1.0f), a1 = _mm256_set1_ps(1.1f), a2 = _mm256_set1_ps(1.2f),
               a3 = _mm256_set1_ps(1.3f), a4 = _mm256_set1_ps(1.4f), a5 = _mm256_set1_ps(1.5f),
               a6 = _mm256_set1_ps(1.6f), a7 = _mm256_set1_ps(1.7f), a8 = _mm256_set1_ps(1.8f),
               a9 = _mm256_set1_ps(1.9f);
        const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
        for (long i = 0; i < iters / 10; i++) {
            a0 = _mm256_fmadd_ps(a0, mul, add); a1 = _mm256_fmadd_ps(a1, mul, add);
            a2 = _mm256_fmadd_ps(a2, mul, add); a3 = _mm256_fmadd_ps(a3, mul, add);
            a4 = _mm256_fmadd_ps(a4, mul, add); a5 = _mm256_fmadd_ps(a5, mul, add);
            a6 = _mm256_fmadd_ps(a6, mul, add); a7 = _mm256_fmadd_ps(a7, mul, add);
            a8 = _mm256_fmadd_ps(a8, mul, add); a9 = _mm256_fmadd_ps(a9, mul, add);
        }
        __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                 _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)), _mm256_add_ps(a8, a9)));
        float out[8];
        _mm256_storeu_ps(out, s);
        sink += out[0];
        const double flops_per_iter = 10 * 8 * 2;
#else
        float acc[10][8];
        for (int j = 0; j < 10; j++) for (int k = 0; k < 8; k++) acc[j][k] = 1.0f + 0.1f * (float)(j * 8 + k);
        for (long i = 0; i < iters / 10; i++)
            for (int j = 0; j < 10; j++)
                for (int k = 0; k < 8; k++) acc[j][k] = acc[j][k] * 0.999999f + 1e-7f;
        sink += acc[0][0];
        const double flops_per_iter = 10 * 8 * 2;
#endif
        (void)flops_per_iter;
    }
    double t = now_seconds() - t0;
    if (sink == 12345.0f) return 0;  // keeps the loop from being optimised away
    return (double)threads * (double)(iters / 10) * 160.0 / t / 1e9;
}

// The best of short (~3 ms) probes over at least a quarter of a second: the first runs while the
// threads start and the clock ramps up, and on a shared machine a core is now and then taken away
// (right after a W2 run, five back-to-back probes once all read half the peak).
double fma_peak_gflops(void) {
    double best = 0, t0 = now_seconds();
    for (int i = 0; i < 200 && (i < 5 || now_seconds() - t0 < 0.25); i++) {
        double g = fma_probe_once();
        if (g > best) best = g;
    }
    return best;
}
