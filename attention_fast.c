// attention_fast.c: the attention engine. It computes exactly the function of attention.c (the
// definition: read that first) for the correct model (causal mask, softmax over keys), organised
// for speed; the tests prove the two equal at many shapes. What it does differently:
//   - Only the causal half is computed: row t's scores, weights and sums stop at key t, and the
//     entries above the diagonal are written as exact zeros instead of passing -inf through exp.
//   - The products (S = Q K^T, O = P V, dP = dO V^T, dQ = dS K, dV = P^T dO, dK = dS^T Q) run on
//     register tiles of TR x TW outputs (tile_mm), over one head's K^T or V^T copied into a
//     contiguous, padded scratch (transpose_head), so every inner loop reads memory in order.
//   - dS is stored already multiplied by the scale, in the buffer that held dP, row by row.
//   - Each (batch, head) is one task of an OpenMP loop; exp is fastmath.h's polynomial.
//   - Every score and output entry is one multiply-add chain in a fixed order, the same as in
//     attention_decode_step, so generation with the KV cache reproduces the forward bit for bit.
#include "attention.h"

#include "fastmath.h"
#include "simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

// The largest of s[0..n): 8 at a time where AVX2 is compiled in (the plain loop compiles to one
// scalar compare chain, and neither compiler vectorises it alone: gcc needs an omp simd max
// reduction, which clang declines). A maximum is exact, so every path gives the same value.
static real row_max(const real *s, int n) {
    real maxv = s[0];
    int i = 1;
#if SIMD_AVX2
    if (n >= 9) {
        __m256 m = _mm256_loadu_ps(s + 1);
        for (i = 9; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(s + i));
        float lanes[8];
        _mm256_storeu_ps(lanes, m);
        for (int j = 0; j < 8; j++) maxv = lanes[j] > maxv ? lanes[j] : maxv;
    }
#endif
    for (; i < n; i++) maxv = s[i] > maxv ? s[i] : maxv;
    return maxv;
}

// p = softmax(s) with fast_exp; the maximum subtracted first
static void softmax_row(real *p, const real *s, int n) {
    real maxv = row_max(s, n);
    // subtracting the max keeps exp() from overflowing and does not change the result
    real sum = 0;
#pragma omp simd reduction(+:sum)
    for (int i = 0; i < n; i++) { p[i] = fast_exp(s[i] - maxv); sum += p[i]; }
    real inv = 1 / sum;
    for (int i = 0; i < n; i++) p[i] *= inv;
}

// a * b + c for the scores and outputs. Written out because -ffp-contract=fast lets the compiler
// fuse a*b+c in one loop and not in another (a vectorised dot product keeps the products apart),
// and decoding must reproduce attention_fast_forward bit for bit: where the machine has a fused
// multiply-add, every chain uses it explicitly; where it has none, nothing can be fused.
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA) || defined(__FP_FAST_FMA)
#ifdef REAL_DOUBLE
static inline real madd(real a, real b, real c) { return fma(a, b, c); }
#else
static inline real madd(real a, real b, real c) { return fmaf(a, b, c); }
#endif
#else
static inline real madd(real a, real b, real c) { return a * b + c; }
#endif

static void axpy(real *restrict y, real alpha, const real *restrict x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] = madd(alpha, x[i], y[i]);
}

// One score S[t][u] = (q . k) * scale, the products summed in increasing i from 0. tile_mm
// computes every score of attention_forward in exactly this order (one multiply-add chain per
// entry, vectorised across keys instead of across i), so decoding reproduces it bit for bit.
static real score_dot(const real *q, const real *k, int hd, real scale) {
    real s = 0;
    for (int i = 0; i < hd; i++) s = madd(q[i], k[i], s);  // no simd reduction: the order is the contract
    return s * scale;
}

// Register tiles of the blocked products: TR output rows by TW output columns. 6 x 16 floats are
// 12 AVX2 accumulators, which with a row of B and a broadcast fill the 16 vector registers.
#define TR 6
#define TW 16

#if SIMD_AVX2
// tile_mm (below) on a whole TR x TW tile, with its 12 accumulators in registers from the first
// FMA to the store (the generic loop keeps acc[][] in memory around its k loop; the measured
// difference is in docs/PERFORMANCE.md). The same arithmetic: one fused multiply-add chain per
// entry in increasing k, init (beta) first, times alpha at the end.
static inline void tile_mm_full(real *restrict out, size_t ldo, int beta, real alpha,
                                const real *restrict a, size_t ars, size_t aks,
                                const real *restrict b, size_t ldb, int n) {
    // named accumulators, not an array: the compiler then keeps all twelve in registers
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
#define TILE_INIT(r, lo, hi) do { lo = beta ? _mm256_loadu_ps(out + (r) * ldo) : _mm256_setzero_ps(); \
        hi = beta ? _mm256_loadu_ps(out + (r) * ldo + 8) : _mm256_setzero_ps(); } while (0)
    TILE_INIT(0, c00, c01); TILE_INIT(1, c10, c11); TILE_INIT(2, c20, c21);
    TILE_INIT(3, c30, c31); TILE_INIT(4, c40, c41); TILE_INIT(5, c50, c51);
#undef TILE_INIT
    for (int k = 0; k < n; k++) {
        const real *ak = a + (size_t)k * aks, *bk = b + (size_t)k * ldb;
        __m256 b0 = _mm256_loadu_ps(bk), b1 = _mm256_loadu_ps(bk + 8), x;
        x = _mm256_broadcast_ss(ak);           c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(ak + ars);     c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(ak + 2 * ars); c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(ak + 3 * ars); c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
        x = _mm256_broadcast_ss(ak + 4 * ars); c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
        x = _mm256_broadcast_ss(ak + 5 * ars); c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
    }
    __m256 al = _mm256_set1_ps(alpha);
#define TILE_STORE(r, lo, hi) do { _mm256_storeu_ps(out + (r) * ldo, _mm256_mul_ps(lo, al)); \
        _mm256_storeu_ps(out + (r) * ldo + 8, _mm256_mul_ps(hi, al)); } while (0)
    TILE_STORE(0, c00, c01); TILE_STORE(1, c10, c11); TILE_STORE(2, c20, c21);
    TILE_STORE(3, c30, c31); TILE_STORE(4, c40, c41); TILE_STORE(5, c50, c51);
#undef TILE_STORE
}
#endif

// One tile of a small matrix product, accumulated in registers:
//   out[r][j] = alpha * (init[r][j] + sum_{k<n} A(r,k) B(k,j))   for r < nr, j < w,
// A(r,k) = a[r*ars + k*aks] (so A may be read transposed), B(k,j) = b[k*ldb + j], and init the old
// out when beta, else 0. Each entry is one chain of multiply-adds in increasing k. Rows r >= nr
// repeat row nr-1 and are not stored. bfull: b may be read TW columns wide even when w < TW.
static inline void tile_mm(real *restrict out, size_t ldo, int nr, int w, int beta, real alpha,
                           const real *restrict a, size_t ars, size_t aks,
                           const real *restrict b, size_t ldb, int n, int bfull) {
#if SIMD_AVX2
    if (nr == TR && w == TW) {
        tile_mm_full(out, ldo, beta, alpha, a, ars, aks, b, ldb, n);
        return;
    }
#endif
    real acc[TR][TW];
    size_t ro[TR];
    int full = nr == TR && w == TW;  // whole tiles get fixed-size loops, which vectorise
    for (int r = 0; r < TR; r++) ro[r] = (size_t)(r < nr ? r : nr - 1) * ars;
    if (full && beta) {
        for (int r = 0; r < TR; r++)
            for (int j = 0; j < TW; j++) acc[r][j] = out[r * ldo + j];
    } else {
        for (int r = 0; r < TR; r++)
            for (int j = 0; j < TW; j++) acc[r][j] = beta && r < nr && j < w ? out[r * ldo + j] : 0;
    }
    if (w == TW || bfull) {
        for (int k = 0; k < n; k++) {
            const real *ak = a + (size_t)k * aks, *bk = b + (size_t)k * ldb;
            for (int r = 0; r < TR; r++) {
                real ar = ak[ro[r]];
#pragma omp simd
                for (int j = 0; j < TW; j++) acc[r][j] = madd(ar, bk[j], acc[r][j]);
            }
        }
    } else {
        for (int k = 0; k < n; k++) {
            const real *ak = a + (size_t)k * aks, *bk = b + (size_t)k * ldb;
            for (int r = 0; r < TR; r++) {
                real ar = ak[ro[r]];
                for (int j = 0; j < w; j++) acc[r][j] = madd(ar, bk[j], acc[r][j]);
            }
        }
    }
    if (full) {
        for (int r = 0; r < TR; r++)
            for (int j = 0; j < TW; j++) out[r * ldo + j] = acc[r][j] * alpha;
    } else {
        for (int r = 0; r < nr; r++)
            for (int j = 0; j < w; j++) out[r * ldo + j] = acc[r][j] * alpha;
    }
}

// Keys padded to whole tiles: the transposed K (or V) has this leading dimension.
static int padded_keys(int T) { return (T + TW - 1) / TW * TW; }

// xt (hd, ldx) = x^T for one head's rows x (T, hd, row stride C); the padding columns are zeroed.
// Blocks of 8 keys: each row of x is read once, contiguously, and the 8 entries written per row
// of xt share a cache line. (Row by row of xt, reading x a row apart, would fetch each line of
// K once per column it holds.)
static void transpose_head(real *restrict xt, int ldx, const real *restrict x, int T, int C, int hd) {
    int u0 = 0;
    for (; u0 + 8 <= T; u0 += 8) {
        int i = 0;
#if SIMD_AVX2
        // 8 keys x 8 columns through registers: 8 row loads and 8 stores instead of 64 of each
        for (; i + 8 <= hd; i += 8) transpose8_store(xt + (size_t)i * ldx + u0, ldx, x + (size_t)u0 * C + i, C);
#endif
        for (; i < hd; i++)
            for (int u = 0; u < 8; u++) xt[(size_t)i * ldx + u0 + u] = x[(size_t)(u0 + u) * C + i];
    }
    for (int i = 0; i < hd; i++) {
        real *row = xt + (size_t)i * ldx;
        for (int u = u0; u < T; u++) row[u] = x[(size_t)u * C + i];
        for (int u = T; u < ldx; u++) row[u] = 0;
    }
}

// Per thread: K^T or V^T (hd, ldx) for either pass, then dS (T, ldx) for the backward; the
// definition needs S, then dP and dS, each (T,T), and a row of hd, for one call.
size_t attention_scratch_size(int T, int hd) {
    size_t engine = ((size_t)hd + T) * padded_keys(T), definition = 2 * (size_t)T * T + hd;
    return engine > definition ? engine : definition;
}

// Whether the engine computes this spec: the correct model only (the mistakes train on the
// definition); the statistics are the definition's too.
static int engine_supports(const AttnSpec *spec) { return spec->mask == ATTN_MASK_CAUSAL && spec->axis == SOFTMAX_OVER_KEYS; }

static void require_engine_spec(const AttnSpec *spec, const AttnStats *stats, const real *row_gain) {
    if (!engine_supports(spec) || stats || row_gain)
        die(EXIT_RUNTIME, "internal: the attention engine computes the causal softmax over keys without statistics");
}

void attention_fast_forward(real *out, real *att, real *scratch, const real *q, const real *k, const real *v,
                            int B, int T, int C, int NH, const AttnSpec *spec, AttnStats *stats) {
    require_engine_spec(spec, stats, NULL);
    int hd = C / NH, ldk = padded_keys(T);
    real scale = spec->scale;
#pragma omp parallel if(par_worth((double)B * NH * T * T * (C / NH)))
    {
        real *kt = scratch + (size_t)thread_index() * attention_scratch_size(T, hd);  // K^T (hd, ldk)
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                size_t off = (size_t)b * T * C + h * hd;
                const real *qh = q + off, *kh = k + off, *vh = v + off;
                real *oh = out + off;
                real *ph = att + ((size_t)b * NH + h) * T * T;
                transpose_head(kt, ldk, kh, T, C, hd);
                // rows t0 .. t0+nr-1 at a time; together they see the keys u < t0 + nr
                for (int t0 = 0; t0 < T; t0 += TR) {
                    int nr = T - t0 < TR ? T - t0 : TR, nk = t0 + nr;
                    // S = Q K^T * scale for the tile's rows, written into their rows of P; the few
                    // masked entries computed on the way are overwritten below
                    for (int j0 = 0; j0 < nk; j0 += TW)
                        tile_mm(ph + (size_t)t0 * T + j0, T, nr, nk - j0 < TW ? nk - j0 : TW, 0, scale,
                                qh + (size_t)t0 * C, C, 1, kt + j0, ldk, hd, 1);
                    // P = softmax(S) over the visible keys u <= t; masked entries exactly zero
                    for (int t = t0; t < t0 + nr; t++) {
                        real *prow = ph + (size_t)t * T;
                        softmax_row(prow, prow, t + 1);
                        for (int u = t + 1; u < T; u++) prow[u] = 0;
                    }
                    // O[t] = sum_{u<=t} P[t][u] V[u], summed in increasing u from 0 (as decoding
                    // does): the keys u <= t0 that every row sees as one tile, then each row's rest
                    for (int i0 = 0; i0 < hd; i0 += TW)
                        tile_mm(oh + (size_t)t0 * C + i0, C, nr, hd - i0 < TW ? hd - i0 : TW, 0, 1,
                                ph + (size_t)t0 * T, T, 1, vh + i0, C, t0 + 1, 0);
                    for (int t = t0 + 1; t < t0 + nr; t++)
                        for (int u = t0 + 1; u <= t; u++)
                            axpy(oh + (size_t)t * C, ph[(size_t)t * T + u], vh + (size_t)u * C, hd);
                }
            }
        }
    }
}

void attention_fast_backward(real *dq, real *dk, real *dv, real *scratch, const real *dout, const real *att,
                             const real *q, const real *k, const real *v, int B, int T, int C, int NH,
                             const AttnSpec *spec, AttnStats *stats, real *row_gain, GradWrite write) {
    require_engine_spec(spec, stats, row_gain);
    int hd = C / NH, ldk = padded_keys(T);
    real scale = spec->scale;
    // each entry of dq, dk, dv is one tile_mm sum below, which starts from the old value or 0
    int beta = write == GRAD_ADD;
#pragma omp parallel if(par_worth((double)B * NH * T * T * (C / NH)))
    {
        real *vt = scratch + (size_t)thread_index() * attention_scratch_size(T, hd);  // V^T (hd, ldk)
        real *ds = vt + (size_t)hd * ldk;  // dP, then scale * dS, row by row (T, ldk)
        // every (b, h) writes only its own head's columns of dq, dk, dv: no two threads collide
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                size_t off = (size_t)b * T * C + h * hd;
                const real *qh = q + off, *kh = k + off, *vh = v + off, *doh = dout + off;
                real *dqh = dq + off, *dkh = dk + off, *dvh = dv + off;
                const real *ph = att + ((size_t)b * NH + h) * T * T;
                transpose_head(vt, ldk, vh, T, C, hd);
                for (int t0 = 0; t0 < T; t0 += TR) {
                    int nr = T - t0 < TR ? T - t0 : TR, nk = t0 + nr;
                    // dP = dO V^T for the tile's rows (the visible keys u < nk)
                    for (int j0 = 0; j0 < nk; j0 += TW)
                        tile_mm(ds + (size_t)t0 * ldk + j0, ldk, nr, nk - j0 < TW ? nk - j0 : TW, 0, 1,
                                doh + (size_t)t0 * C, C, 1, vt + j0, ldk, hd, 1);
                    // dS = P * (dP - rowsum(dP * P)), stored as scale * dS over its row's dP.
                    // Masked entries (P = 0) get dS = 0; the TR - 1 after the diagonal are written
                    // as 0 so the tiles below can run over them.
                    for (int t = t0; t < nk; t++) {
                        const real *prow = ph + (size_t)t * T;
                        real *row = ds + (size_t)t * ldk;
                        // (a vector reduction: a fixed order for a given build, whatever the threads)
                        double rowsum = 0.0;
#pragma omp simd reduction(+:rowsum)
                        for (int u = 0; u <= t; u++) rowsum += (double)row[u] * prow[u];
                        real rs = (real)rowsum;
#pragma omp simd
                        for (int u = 0; u <= t; u++) row[u] = scale * (prow[u] * (row[u] - rs));
                        for (int u = t + 1; u <= t + TR - 1 && u < ldk; u++) row[u] = 0;
                    }
                    // dQ[t] += sum_{u<=t} (scale dS[t][u]) K[u]
                    for (int i0 = 0; i0 < hd; i0 += TW)
                        tile_mm(dqh + (size_t)t0 * C + i0, C, nr, hd - i0 < TW ? hd - i0 : TW, beta, 1,
                                ds + (size_t)t0 * ldk, ldk, 1, kh + i0, C, nk, 0);
                }
                // dV[u] += sum_{t>=u} P[t][u] dO[t] and dK[u] += sum_{t>=u} (scale dS[t][u]) Q[t]:
                // P and dS read transposed, starting at t = u0 (entries with t < u are zero)
                for (int u0 = 0; u0 < T; u0 += TR) {
                    int nr = T - u0 < TR ? T - u0 : TR;
                    for (int i0 = 0; i0 < hd; i0 += TW) {
                        int w = hd - i0 < TW ? hd - i0 : TW;
                        tile_mm(dvh + (size_t)u0 * C + i0, C, nr, w, beta, 1, ph + (size_t)u0 * T + u0, 1, T,
                                doh + (size_t)u0 * C + i0, C, T - u0, 0);
                        tile_mm(dkh + (size_t)u0 * C + i0, C, nr, w, beta, 1, ds + (size_t)u0 * ldk + u0, 1, ldk,
                                qh + (size_t)u0 * C + i0, C, T - u0, 0);
                    }
                }
            }
        }
    }
}

void attention_decode_step(real *out, real *scores, const real *q, const real *k_cache, const real *v_cache,
                           int pos, int C, int NH, real scale) {
    int hd = C / NH;
    for (int h = 0; h < NH; h++) {
        const real *qh = q + h * hd;
        // the same arithmetic as row `pos` of attention_fast_forward, so the results agree bit for bit:
        // each score one multiply-add chain over i, each output entry one chain over u from 0
        for (int u = 0; u <= pos; u++) scores[u] = score_dot(qh, k_cache + (size_t)u * C + h * hd, hd, scale);
        softmax_row(scores, scores, pos + 1);
        real *oh = out + h * hd;
        for (int i = 0; i < hd; i++) oh[i] = 0;
        for (int u = 0; u <= pos; u++) axpy(oh, scores[u], v_cache + (size_t)u * C + h * hd, hd);
    }
}

const AttentionImpl attention_fast = {"fast", attention_fast_forward, attention_fast_backward, engine_supports, 0};
