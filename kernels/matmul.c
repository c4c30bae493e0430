// kernels/matmul.c: a BLIS-style GEMM. B is packed into KC x NR slivers so the micro-kernel streams
// it from cache; the micro-kernel keeps an MR x NR tile of C in registers. It is written once on
// the vectors of kernels/vec.h (16 lanes with AVX-512, 8 with AVX2, 4 with NEON), with the tile
// chosen per width; it reads a row-major A in place and a transposed one packed into MR x KC
// slivers. Without a vector unit a plain C loop over packed slivers does the same sums.
//
// Every element of C is one chain of fused multiply-adds over k in increasing order within each
// GEMM_KC-deep block, started from zero, and the blocks' sums are added onto C in order. Nothing
// else in the arithmetic depends on the tile or the vector width, so the 16-wide, 8-wide, 4-wide
// and scalar builds of a machine with FMA give bit-identical products.
#include "kernels/matmul.h"
#include "kernels/regtile.h"
#include "kernels/vec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

// The register tile: MR rows of C by NV vectors. MR * NV accumulators, NV vectors of B and one
// broadcast of A must fit the register file: 12 x 2 of AVX-512's 32, 6 x 2 of AVX2's 16, 6 x 4
// of NEON's 32. Many independent accumulators cover the FMA latency times the FMA pipes.
#if VEC_BYTES == 64
#define MR 12
#define NV 2
#elif VEC_BYTES == 32
#define MR 6
#define NV 2
#elif VEC_BYTES == 16
#define MR 6
#define NV 4
#endif
#if VEC_BYTES
#define NR (NV * VL)
#else
#define MR 6
#define NR 16
#endif
#define KC GEMM_KC
#define MC (MR * (96 / MR))    // rows of A packed at once (a multiple of MR)
#define NC (NR * (3072 / NR))  // columns of B packed at once (a multiple of NR)
// A packed sliver is copied a whole number of vectors per depth; the last depth's copy may run
// this far past the sliver
#if VEC_BYTES
#define A_SLACK ((MR + VL - 1) / VL * VL - MR)
#else
#define A_SLACK 0
#endif

// Each thread packs into its own buffers, so the threads of a GEMM never wait for each other
// (one join at the end: under load, every barrier can cost a scheduler time slice). They are
// thread-local, allocated at a thread's first GEMM and reused: a GEMM called from inside a
// parallel region (one thread per share of the batch, see gpt_forward_backward) then needs no
// coordination either.
typedef struct {
    real *a, *b;
} PackBuffers;
static _Thread_local PackBuffers t_pack;

static PackBuffers *thread_pack(void) {
    if (!t_pack.a) {
        t_pack.a = xmalloc_aligned(sizeof(real) * (MC * KC + A_SLACK), "GEMM packing buffer");
        t_pack.b = xmalloc_aligned(sizeof(real) * KC * NC, "GEMM packing buffer");
    }
    return &t_pack;
}

const char *matmul_simd_path(void) {
#if VEC_BYTES
#define STR_(x) #x
#define STR(x)  STR_(x)
#if VEC_BYTES == 64
#define LANES32 "16"
#elif VEC_BYTES == 32
#define LANES32 "8"
#else
#define LANES32 "4"
#endif
    return VEC_ISA ", " LANES32 "-wide float32 vectors, " STR(MR) "x" STR(NV) "-vector tiles";
#else
    return "portable C";
#endif
}

int matmul_vector_lanes(void) {
#if VEC_BYTES
    return VEC_BYTES / 4;
#else
    return 1;
#endif
}

// Pack rows [i0, i0+MR) x depth [p0, p0+kc) of A into dst laid out as kc groups of MR values;
// rows past M are zero so edge tiles run the same kernel.
static void pack_a_sliver(real *restrict dst, const real *A, long a_rs, long a_cs, int M, int i0,
                          int p0, int kc) {
    if (a_rs == 1 && i0 + MR <= M) {
        // A is a transposed view (columns contiguous): the MR values of one k are adjacent, so
        // read them together instead of walking MR strided columns
#if VEC_BYTES
        // whole vectors per depth while the row has that many values: the A_SLACK extra land
        // where the next depth's values go and are overwritten by them (the buffer has room
        // past the end)
        if (i0 + MR + A_SLACK <= M) {
            for (int k = 0; k < kc; k++) {
                const real *src = A + i0 + (long)(p0 + k) * a_cs;
                UNROLL
                for (int v = 0; v < MR + A_SLACK; v += VL) vstore(dst + k * MR + v, vload(src + v));
            }
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
static void pack_b_sliver(real *restrict dst, const real *B, long b_rs, long b_cs, int N, int j0,
                          int p0, int kc) {
    int nv = N - j0 < NR ? N - j0 : NR;
    if (b_cs == 1) {  // rows of B are contiguous: copy NR-wide runs (whole ones: pack_b_panel)
        for (int k = 0; k < kc; k++) {
            const real *src = B + (long)(p0 + k) * b_rs + j0;
            real *d = dst + k * NR;
            for (int j = 0; j < nv; j++) d[j] = src[j];
            for (int j = nv; j < NR; j++) d[j] = 0;
        }
    } else {  // columns of B are contiguous (B is a transposed view): read down them
#if VEC_TB
        if (nv == NR) {  // square blocks transposed in registers (scalar stores NR apart cost more)
            int k = 0;
            for (; k + VEC_TB <= kc; k += VEC_TB)
                for (int h = 0; h < NR; h += VEC_TB) {
                    const real *src = B + (long)(p0 + k) * b_rs + (long)(j0 + h) * b_cs;
                    vec_transpose_store(dst + k * NR + h, NR, src, b_cs);
                }
            for (; k < kc; k++)
                for (int j = 0; j < NR; j++)
                    dst[k * NR + j] = B[(long)(p0 + k) * b_rs + (long)(j0 + j) * b_cs];
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

// Pack depth [p0, p0+kc) x columns [j0, j0+nc) of B: the slivers of pack_b_sliver side by side,
// kc * NR values apart. With B's rows contiguous, the whole slivers are filled a row of B at a
// time, so B is read along its rows (one stream the hardware prefetches) rather than down a
// column strip of two lines a row, sliver after sliver.
static void pack_b_panel(real *restrict dst, const real *B, long b_rs, long b_cs, int N, int j0,
                         int nc, int p0, int kc) {
    int n_slivers = (nc + NR - 1) / NR, first = 0;
#if VEC_BYTES
    if (b_cs == 1) {
        int whole = (N - j0) / NR < n_slivers ? (N - j0) / NR : n_slivers;
        for (int k = 0; k < kc; k++) {
            const real *src = B + (long)(p0 + k) * b_rs + j0;
            for (int s = 0; s < whole; s++) UNROLL
            for (int v = 0; v < NR; v += VL)
                vstore(dst + ((long)s * kc + k) * NR + v, vload(src + s * NR + v));
        }
        first = whole;
    }
#endif
    for (int s = first; s < n_slivers; s++)
        pack_b_sliver(dst + (long)s * kc * NR, B, b_rs, b_cs, N, j0 + s * NR, p0, kc);
}

#if VEC_BYTES
// Ask for the lines of an MR x NR tile whose rows lie ld apart, into L2 (locality 2: prefetcht1)
static inline void prefetch_tile_to_l2(const real *p, long ld) {
    UNROLL
    for (int i = 0; i < MR; i++) {
        UNROLL
        for (int j = 0; j < NR; j += 64 / (int)sizeof(real))
            __builtin_prefetch(p + (long)i * ld + j, 0, 2);
        __builtin_prefetch(p + (long)i * ld + NR - 1, 0, 2);  // a row may span one more line
    }
}

// acc (MR,NR) = sum over k of a(:,k) (MR) outer b[k] (NR), with row i of A at depth k at
// a[i * a_rs + k * a_cs]. With c non-NULL (a full tile), the sums go straight to C instead:
// c = acc, or c += acc when add is set; the same roundings as the caller's edge-tile path (acc
// summed from zero, then one addition onto C).
// A row-major A (a_cs == 1: the activations of the forward and dinp products) is read where it
// lies: its MR rows are MR contiguous streams, and packing them (a copy of every activation, a
// tenth of a small product's time) is not needed. A packed sliver is the case (1, MR).
// The loops over i and j have constant bounds and are unrolled completely, so the MR x NV
// accumulators live in registers from the first FMA to the store.
static inline void micro_kernel_strided(int kc, const real *a, long a_rs, long a_cs,
                                        const real *restrict b, real *restrict acc,
                                        real *restrict c, long ldc, int add, const real *operand,
                                        const real *next_a) {
    vreal t[MR][NV];
    UNROLL
    for (int i = 0; i < MR; i++) UNROLL
    for (int j = 0; j < NV; j++) t[i][j] = vzero();
    // The tile of C is read (or written) only after the k loop, and in a W2 step it is usually
    // in L3 or memory by then (an activation of several MB): ask for its lines now, so the
    // misses overlap the FMAs instead of stalling the end of the tile (BLIS does the same).
    // They are asked for into L2, not L1: 48 lines bound for L1 at once
    // would hold the fill slots the tile's own loads of A and B need.
    if (c) prefetch_tile_to_l2(c, ldc);
    if (operand)
        prefetch_tile_to_l2(operand,
                            ldc);  // the epilogue's operand at the tile's offsets (GemmEpilogue)
#define GEMM_A(i) a[(i)*a_rs]
    // next_a: the MR rows of a row-major A that the next tile reads (or NULL). One of their lines
    // is asked for at each depth step, row by row, so they arrive while this tile's FMAs run
    // instead of at the next tile's first loads.
    int pf_row = 0, pf_col = 0;
    for (int k = 0; k < kc; k++) {
        REGTILE_STEP(t, MR, NV, GEMM_A, b);  // kernels/regtile.h: t[i][j] += a[i] * b[j]
        a += a_cs;
        b += NR;
        if (next_a && pf_col < kc) {
            __builtin_prefetch(next_a + (long)pf_row * a_rs + pf_col);
            if (++pf_row == MR) {
                pf_row = 0;
                pf_col += 64 / (int)sizeof(real);
            }
        }
    }
#undef GEMM_A
    UNROLL
    for (int i = 0; i < MR; i++) UNROLL
    for (int j = 0; j < NV; j++) {
        if (!c) {
            vstore(acc + i * NR + j * VL, t[i][j]);
            continue;
        }
        real *cij = c + (long)i * ldc + j * VL;
        vstore(cij, add ? vload(cij) + t[i][j] : t[i][j]);
    }
}

// A packed sliver: MR values per depth, contiguous
static void micro_kernel(int kc, const real *restrict a, const real *restrict b, real *restrict acc,
                         real *restrict c, long ldc, int add, const real *operand) {
    micro_kernel_strided(kc, a, 1, MR, b, acc, c, ldc, add, operand, NULL);
}
#else
// The portable tile: acc (MR,NR) = sum over k of a[k] (MR) outer b[k] (NR) from a packed sliver;
// with c non-NULL the sums go to C (c = acc, or c += acc when add is set).
static void micro_kernel(int kc, const real *restrict a, const real *restrict b, real *restrict acc,
                         real *restrict c, long ldc, int add, const real *operand) {
    (void)operand;
    for (int i = 0; i < MR * NR; i++) acc[i] = 0;
    for (int k = 0; k < kc; k++) {
        for (int i = 0; i < MR; i++) {
            real ai = a[k * MR + i];
            real *restrict row = acc + i * NR;
            const real *restrict bk = b + k * NR;
            for (int j = 0; j < NR; j++) row[j] = smadd(ai, bk[j], row[j]);
        }
    }
    if (c)
        for (int i = 0; i < MR; i++) {
            real *restrict ci = c + (long)i * ldc;
            const real *restrict t = acc + i * NR;
            if (add)
                for (int j = 0; j < NR; j++) ci[j] += t[j];
            else
                for (int j = 0; j < NR; j++) ci[j] = t[j];
        }
}
#endif

// An operand of a strided product: element (i, j) at p[i*rs + j*cs].
typedef struct {
    const real *p;
    long rs, cs;
} Strided;

// A single row of C (generation: one position at a time). Packing B would copy the whole
// weight matrix for every token, so stream it instead. Each element is summed in exactly the
// micro-kernel's order (FMAs over k within a KC block from zero, then added onto C block by
// block), so the result is bit-identical to the packed path.
#define ROW_CHUNK 512
// a is A's row (its element k at a.p[k * a.cs]), c C's row, `at` its first element's offset in C.
static void gemm_row(int j_lo, int j_hi, int K, Strided a_row, Strided b_op, real *c, long at,
                     int accumulate, const GemmEpilogue *epi) {
    const real *a = a_row.p, *B = b_op.p;
    long a_cs = a_row.cs, b_rs = b_op.rs, b_cs = b_op.cs;
    _Alignas(64) real acc[ROW_CHUNK];
    for (int j0 = j_lo; j0 < j_hi; j0 += ROW_CHUNK) {
        int nj = j_hi - j0 < ROW_CHUNK ? j_hi - j0 : ROW_CHUNK;
        for (int p0 = 0; p0 < K; p0 += KC) {
            int kc = K - p0 < KC ? K - p0 : KC;
            for (int j = 0; j < nj; j++) acc[j] = 0;
            for (int k = p0; k < p0 + kc; k++) {
                real ak = a[(long)k * a_cs];
                const real *restrict bk = B + (long)k * b_rs + (long)j0 * b_cs;
                int j = 0;
#if VEC_BYTES
                if (b_cs == 1) {
                    vreal av = vset1(ak);
                    for (; j + VL <= nj; j += VL)
                        vstore(acc + j, vfma(av, vload(bk + j), vload(acc + j)));
                }
#endif
                for (; j < nj; j++) acc[j] = smadd(ak, bk[(long)j * b_cs], acc[j]);
            }
            real *restrict cj = c + j0;
            if (accumulate || p0 > 0)
                for (int j = 0; j < nj; j++) cj[j] += acc[j];
            else
                for (int j = 0; j < nj; j++) cj[j] = acc[j];
            if (epi && p0 + kc >= K) epi->fn(epi->ctx, cj, (size_t)(at + j0), nj);
        }
    }
}

// A thread's share of C: rows [i_lo, i_hi) x columns [j_lo, j_hi).
typedef struct {
    int i_lo, i_hi, j_lo, j_hi;
} CBlock;

// One thread's share, the classic BLIS loop nest (NC columns of B packed, KC deep; MC rows of A
// packed; MR x NR register tiles).
static void gemm_block(CBlock blk, int K, Strided a_op, Strided b_op, real *C, long ldc,
                       int accumulate, const GemmEpilogue *epi, const PackBuffers *buf) {
    int i_lo = blk.i_lo, i_hi = blk.i_hi, j_lo = blk.j_lo, j_hi = blk.j_hi;
    const real *A = a_op.p, *B = b_op.p;
    long a_rs = a_op.rs, a_cs = a_op.cs, b_rs = b_op.rs, b_cs = b_op.cs;
    if (i_hi - i_lo == 1) {
        gemm_row(j_lo, j_hi, K, (Strided){A + (long)i_lo * a_rs, 0, a_cs}, b_op,
                 C + (long)i_lo * ldc, (long)i_lo * ldc, accumulate, epi);
        return;
    }
    _Alignas(64) real acc[MR * NR];
    // whole MR-row slivers of a row-major A are read in place (see micro_kernel_strided); only a
    // last, partial sliver is packed (with its zero rows). A transposed A (the weight gradients'
    // X^T) is packed: in place, the MR values of each depth sit a row of X apart, 0.5-6 KB, and
    // lines at such strides fall into a few L1 sets and evict each other every sliver
    // (docs/PERFORMANCE.md, the GEMM).
    const int direct_a = VEC_BYTES && a_cs == 1;
    for (int j0 = j_lo; j0 < j_hi; j0 += NC) {
        int nc = j_hi - j0 < NC ? j_hi - j0 : NC;
        int n_slivers = (nc + NR - 1) / NR;
        for (int p0 = 0; p0 < K; p0 += KC) {
            int kc = K - p0 < KC ? K - p0 : KC;
            int add = accumulate || p0 > 0;  // later depth blocks add onto the partial sums
            int last = p0 + kc >= K;         // the sums are complete after this block
            pack_b_panel(buf->b, B, b_rs, b_cs, j_hi, j0, nc, p0, kc);
            for (int i0 = i_lo; i0 < i_hi; i0 += MC) {
                int mc = i_hi - i0 < MC ? i_hi - i0 : MC;
                int m_slivers = (mc + MR - 1) / MR;
                for (int s = 0; s < m_slivers; s++)
                    if (!direct_a || i0 + (s + 1) * MR > i_hi)
                        pack_a_sliver(buf->a + (long)s * kc * MR, A, a_rs, a_cs, i_hi, i0 + s * MR,
                                      p0, kc);
                for (int sj = 0; sj < n_slivers; sj++) {
                    for (int si = 0; si < m_slivers; si++) {
                        int row0 = i0 + si * MR, col0 = j0 + sj * NR;
                        int mv = i_hi - row0 < MR ? i_hi - row0 : MR;
                        int nv = j_hi - col0 < NR ? j_hi - col0 : NR;
                        const real *pa = buf->a + (long)si * kc * MR,
                                   *pb = buf->b + (long)sj * kc * NR;
                        real *c_tile = mv == MR && nv == NR ? C + (long)row0 * ldc + col0 : NULL;
                        const real *operand = epi && last && epi->operand && c_tile
                                                  ? epi->operand + (long)row0 * ldc + col0
                                                  : NULL;
#if VEC_BYTES
                        if (direct_a && mv == MR) {  // a full tile writes C itself
                            // the next tile: the next MR rows, with the same sliver of B
                            const real *next_a =
                                si + 1 < m_slivers && row0 + 2 * MR <= i_hi
                                    ? A + (long)(row0 + MR) * a_rs + (long)p0 * a_cs
                                    : NULL;
                            micro_kernel_strided(kc, A + (long)row0 * a_rs + (long)p0 * a_cs, a_rs,
                                                 a_cs, pb, acc, c_tile, ldc, add, operand, next_a);
                        } else
#endif
                            micro_kernel(kc, pa, pb, acc, c_tile, ldc, add, operand);
                        if (!c_tile)
                            for (int i = 0; i < mv; i++) {
                                real *restrict c = C + (long)(row0 + i) * ldc + col0;
                                const real *restrict t = acc + i * NR;
                                if (add)
                                    for (int j = 0; j < nv; j++) c[j] += t[j];
                                else
                                    for (int j = 0; j < nv; j++) c[j] = t[j];
                            }
                        // the tile's elements are complete: the epilogue runs on them while
                        // they are in L1
                        if (epi && last)
                            for (int i = 0; i < mv; i++) {
                                long at = (long)(row0 + i) * ldc + col0;
                                epi->fn(epi->ctx, C + at, (size_t)at, nv);
                            }
                    }
                }
            }
        }
    }
}

// The clock of make bench's phases: the thread that started it adds up the seconds of its share
// of every product (the other threads' shares run at the same time).
static _Thread_local int t_clock_on;
static _Thread_local double t_clock_seconds, t_clock_cpu_seconds;

void gemm_clock_start(void) {
    t_clock_on = 1;
    t_clock_seconds = 0;
    t_clock_cpu_seconds = 0;
}
void gemm_clock_stop(void) { t_clock_on = 0; }
double gemm_clock_seconds(void) { return t_clock_seconds; }
double gemm_clock_cpu_seconds(void) { return t_clock_cpu_seconds; }

static _Thread_local GemmLedgerLine t_ledger[GEMM_LEDGER_LINES];
static _Thread_local int t_ledger_n;
static _Thread_local long t_ledger_unlisted;
static _Thread_local int t_ledger_phase;

void gemm_ledger_phase(int phase) { t_ledger_phase = phase; }
void gemm_ledger_clear(void) {
    t_ledger_n = 0;
    t_ledger_unlisted = 0;
}
int gemm_ledger_lines(const GemmLedgerLine **lines, long *unlisted) {
    *lines = t_ledger;
    *unlisted = t_ledger_unlisted;
    return t_ledger_n;
}

// One timed call on the ledger: its kind's line, or a new one
static void ledger_add(const char *layout, int M, int N, int K, const GemmEpilogue *epi,
                       double flops, double seconds) {
    void (*fn)(const void *, real *, size_t, int) = epi ? epi->fn : NULL;
    GemmLedgerLine *l = t_ledger;
    while (l < t_ledger + t_ledger_n &&
           !(l->phase == t_ledger_phase && l->M == M && l->N == N && l->K == K &&
             l->epilogue == fn && !strcmp(l->layout, layout)))
        l++;
    if (l == t_ledger + t_ledger_n) {
        if (t_ledger_n == GEMM_LEDGER_LINES) {
            t_ledger_unlisted++;
            return;
        }
        *l = (GemmLedgerLine){t_ledger_phase, {layout[0], layout[1], 0}, M, N, K, fn, 0, 0, 0};
        t_ledger_n++;
    }
    l->calls++;
    l->flops += flops;
    l->seconds += seconds;
}

static double gemm_share(int tid, int nth, int M, int N, int K, Strided A, Strided B, real *C,
                         long ldc, int accumulate, const GemmEpilogue *epi);

// The one strided product behind the named ones: C (M,N) = A (M,K) B (K,N), A and B strided,
// C(i,j) = C[i*ldc + j]; thread tid of nth computes its share of C (timed on the clock's thread).
static void gemm_part(int tid, int nth, int M, int N, int K, Strided A, Strided B, real *C,
                      long ldc, int accumulate, const GemmEpilogue *epi) {
    if (!t_clock_on) {
        gemm_share(tid, nth, M, N, K, A, B, C, ldc, accumulate, epi);
        return;
    }
    double t0 = now_seconds(), c0 = thread_cpu_seconds();
    double flops = gemm_share(tid, nth, M, N, K, A, B, C, ldc, accumulate, epi);
    t_clock_cpu_seconds += thread_cpu_seconds() - c0;
    double seconds = now_seconds() - t0;
    t_clock_seconds += seconds;
    // a row-major A is read along its rows (a_cs 1), a transposed one down its columns
    ledger_add(A.cs == 1 ? (B.cs == 1 ? "nn" : "nt") : "tn", M, N, K, epi, flops, seconds);
}

// Thread tid's share of C, computed; returns its FLOPs (2 per multiply-add)
static double gemm_share(int tid, int nth, int M, int N, int K, Strided A, Strided B, real *C,
                         long ldc, int accumulate, const GemmEpilogue *epi) {
    if (M <= 0 || N <= 0) return 0;
    // Split the longer side of C between the threads, in whole register tiles; each thread
    // packs what it needs itself. Every C element is summed over K in the same order whatever
    // the split, so results are bit-identical across thread counts.
    int split_rows = M >= N;
    int unit = split_rows ? MR : NR, len = split_rows ? M : N;
    long tiles = (len + unit - 1) / unit;
    int lo = (int)(tiles * tid / nth) * unit, hi = (int)(tiles * (tid + 1) / nth) * unit;
    if (hi > len) hi = len;
    if (lo >= hi) return 0;
    if (K <= 0) {  // empty sum: C = 0 unless accumulating
        for (int i = split_rows ? lo : 0; i < (split_rows ? hi : M); i++) {
            long at = (long)i * ldc + (split_rows ? 0 : lo);
            int n = split_rows ? N : hi - lo;
            if (!accumulate) memset(C + at, 0, sizeof(real) * (size_t)n);
            if (epi) epi->fn(epi->ctx, C + at, (size_t)at, n);
        }
        return 0;
    }
    if (split_rows)
        gemm_block((CBlock){lo, hi, 0, N}, K, A, B, C, ldc, accumulate, epi, thread_pack());
    else
        gemm_block((CBlock){0, M, lo, hi}, K, A, B, C, ldc, accumulate, epi, thread_pack());
    return 2.0 * (hi - lo) * (split_rows ? N : M) * K;
}

// The named products are the strided one with their layout's strides.
void gemm_nn_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                  MatWrite write) {
    gemm_part(tid, nth, M, N, K, (Strided){A, K, 1}, (Strided){B, N, 1}, C, N, write == MM_ADD,
              NULL);  // A (M,K), B (K,N)
}
void gemm_nt_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                  MatWrite write) {
    gemm_part(tid, nth, M, N, K, (Strided){A, K, 1}, (Strided){B, 1, K}, C, N, write == MM_ADD,
              NULL);  // A (M,K), B stored (N,K)
}
void gemm_nn_epi_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                      MatWrite write, const GemmEpilogue *epi) {
    gemm_part(tid, nth, M, N, K, (Strided){A, K, 1}, (Strided){B, N, 1}, C, N, write == MM_ADD,
              epi);
}
void gemm_nt_epi_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                      MatWrite write, const GemmEpilogue *epi) {
    gemm_part(tid, nth, M, N, K, (Strided){A, K, 1}, (Strided){B, 1, K}, C, N, write == MM_ADD,
              epi);
}
void gemm_tn_part(int tid, int nth, real *C, const real *A, const real *B, int M, int N, int K,
                  MatWrite write) {
    gemm_part(tid, nth, M, N, K, (Strided){A, 1, M}, (Strided){B, N, 1}, C, N, write == MM_ADD,
              NULL);  // A stored (K,M), B (K,N)
}

void gemm_nn(real *C, const real *A, const real *B, int M, int N, int K, MatWrite write) {
#pragma omp parallel if (par_worth((double)M * N * K))
    gemm_nn_part(thread_index(), thread_count(), C, A, B, M, N, K, write);
}
void gemm_nt(real *C, const real *A, const real *B, int M, int N, int K, MatWrite write) {
#pragma omp parallel if (par_worth((double)M * N * K))
    gemm_nt_part(thread_index(), thread_count(), C, A, B, M, N, K, write);
}
void gemm_tn(real *C, const real *A, const real *B, int M, int N, int K, MatWrite write) {
#pragma omp parallel if (par_worth((double)M * N * K))
    gemm_tn_part(thread_index(), thread_count(), C, A, B, M, N, K, write);
}

void linear_forward(real *out, const real *inp, const real *weight, int N, int C, int OC) {
    // out (N,OC) = inp (N,C) @ weight (C,OC)
    gemm_nn(out, inp, weight, N, OC, C, MM_SET);
}

void linear_forward_epi(real *out, const real *inp, const real *weight, int N, int C, int OC,
                        const GemmEpilogue *epi) {
#pragma omp parallel if (par_worth((double)N * C * OC))
    gemm_nn_epi_part(thread_index(), thread_count(), out, inp, weight, N, OC, C, MM_SET, epi);
}

void linear_backward_part(int tid, int nth, LinearGrads g, const real *dout, const real *inp,
                          const real *weight, int N, int C, int OC) {
    linear_backward_epi_part(tid, nth, g, dout, inp, weight, N, C, OC, NULL);
}

void linear_backward_epi_part(int tid, int nth, LinearGrads g, const real *dout, const real *inp,
                              const real *weight, int N, int C, int OC,
                              const GemmEpilogue *dinp_epi) {
    // dinp (N,C) += dout (N,OC) @ weight^T
    if (g.dinp)
        gemm_nt_epi_part(tid, nth, g.dinp, dout, weight, N, C, OC,
                         g.dinp_write == GRAD_ADD ? MM_ADD : MM_SET, dinp_epi);
    // dweight (C,OC) += inp^T @ dout
    if (g.dweight)
        gemm_tn_part(tid, nth, g.dweight, inp, dout, C, OC, N,
                     g.dweight_write == GRAD_ADD ? MM_ADD : MM_SET);
}

void linear_backward(real *dinp, real *dweight, const real *dout, const real *inp,
                     const real *weight, int N, int C, int OC, GradWrite dinp_write,
                     GradWrite dweight_write) {
    // both products in one parallel region: they write different outputs, so no barrier between
#pragma omp parallel if (par_worth(2.0 * N * C * OC))
    {
        int tid = thread_index(), nth = thread_count();
        linear_backward_part(tid, nth, (LinearGrads){dinp, dweight, dinp_write, dweight_write},
                             dout, inp, weight, N, C, OC);
    }
}

void linear_backward_epi(real *dinp, real *dweight, const real *dout, const real *inp,
                         const real *weight, int N, int C, int OC, GradWrite dinp_write,
                         GradWrite dweight_write, const GemmEpilogue *dinp_epi) {
#pragma omp parallel if (par_worth(2.0 * N * C * OC))
    {
        int tid = thread_index(), nth = thread_count();
        linear_backward_epi_part(tid, nth, (LinearGrads){dinp, dweight, dinp_write, dweight_write},
                                 dout, inp, weight, N, C, OC, dinp_epi);
    }
}
