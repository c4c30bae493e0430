// kernels/attention_engine.c: the attention engine. It computes exactly the function of attention.c (the
// definition: read that first) for the correct model (causal mask, softmax over keys), organised
// for speed; the tests prove the two equal at many shapes. What it does differently:
//   - Only the causal half is computed: row t's scores, weights and sums stop at key t, and the
//     entries above the diagonal are written as exact zeros instead of passing -inf through exp.
//   - The products (S = Q K^T, O = P V, dP = dO V^T, dQ = dS K, dV = P^T dO, dK = dS^T Q) run on
//     register tiles of TR x TW outputs (tile_mm), over one head's K^T or V^T copied into a
//     contiguous, padded scratch (transpose_head), so every inner loop reads memory in order.
//   - dS is stored already multiplied by the scale, in the buffer that held dP, row by row.
//   - Each (batch, head) is one task of an OpenMP loop; exp is kernels/fastmath.h's polynomial.
//   - Every score and output entry is one multiply-add chain in a fixed order, the same as in
//     attention_decode_step, so generation with the KV cache reproduces the forward bit for bit.
#include "attention.h"

#include "kernels/fastmath.h"
#include "kernels/vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__GNUC__)
#define UNROLL _Pragma("GCC unroll 16")
#else
#define UNROLL
#endif

// The register tile: TR output rows by TV vectors (TW = TV * VL columns). TR * TV accumulators,
// TV vectors of B and one broadcast of A must fit the register file: 6 x 4 of AVX-512's 32
// (the 64 columns of a 64-wide head in one tile), 6 x 2 of AVX2's 16, 6 x 4 of NEON's 32.
#if defined(ATTN_TR)
#define TR ATTN_TR
#define TV ATTN_TV
#elif VEC_BYTES == 64
#define TR 6
#define TV 4
#elif VEC_BYTES == 32
#define TR 6
#define TV 2
#elif VEC_BYTES == 16
#define TR 6
#define TV 4
#endif
#if VEC_BYTES
#define TW (TV * VL)
#else
#define TR 6
#define TW 16
#endif

// The largest of s[0..n): a vector of running maxima, then its lanes (the plain loop compiles to
// one scalar compare chain, which neither compiler vectorises alone). A maximum is exact, so
// every width gives the same value.
static real row_max(const real *s, int n) {
    real maxv = s[0];
    int i = 1;
#if VEC_BYTES
    if (n >= 1 + VL) {
        vreal m = vload(s + 1);
        for (i = 1 + VL; i + VL <= n; i += VL) m = vmax(m, vload(s + i));
        real lanes = vhmax(m);
        maxv = lanes > maxv ? lanes : maxv;
    }
#endif
    for (; i < n; i++) maxv = s[i] > maxv ? s[i] : maxv;
    return maxv;
}

// The sums over a row (the softmax's normaliser, dS's rowsum) are taken in VL lanes, where
// lane j adds the entries j, j + VL, ... in order; the last, partial vector's entries go onto
// lane 0 in order, and then the lanes are added in order from 0. (This is the order gcc gives
// an `omp simd` reduction of VL lanes; written out, the order is the program's, whatever the
// compiler, and the last vector runs in vector arithmetic too.)

// p = softmax(s) with fast_exp; the maximum subtracted first (p may be s)
static void softmax_row(real *p, const real *s, int n) {
    real maxv = row_max(s, n);
    // subtracting the max keeps exp() from overflowing and does not change the result
    real sum = 0;
#if VEC_BYTES
    vreal lanes = vzero();
    int i = 0;
    for (; i + VL <= n; i += VL) {
#pragma omp simd
        for (int j = 0; j < VL; j++) p[i + j] = fast_exp(s[i + j] - maxv);
        lanes += vload(p + i);
    }
    if (i < n) {  // the last m < VL entries: exp on a whole vector (padded with exp(0)), kept in part
        real x[VL], e[VL];
        for (int j = 0; j < VL; j++) x[j] = i + j < n ? s[i + j] : maxv;
#pragma omp simd
        for (int j = 0; j < VL; j++) e[j] = fast_exp(x[j] - maxv);
        for (int j = 0; i + j < n; j++) {
            p[i + j] = e[j];
            lanes[0] += e[j];
        }
    }
    for (int j = 0; j < VL; j++) sum += lanes[j];
#else
#pragma omp simd reduction(+:sum)
    for (int i = 0; i < n; i++) { p[i] = fast_exp(s[i] - maxv); sum += p[i]; }
#endif
    real inv = 1 / sum;
    for (int i = 0; i < n; i++) p[i] *= inv;
}

// sum_i x_i y_i over n entries, in double, in the lanes' order above
static double dot_double(const real *x, const real *y, int n) {
    double sum = 0.0;
#if VEC_BYTES
    double lane[VL] = {0};
    int i = 0;
    for (; i + VL <= n; i += VL) {
#pragma omp simd
        for (int j = 0; j < VL; j++) lane[j] += (double)x[i + j] * y[i + j];
    }
    for (; i < n; i++) lane[0] += (double)x[i] * y[i];
    for (int j = 0; j < VL; j++) sum += lane[j];
#else
#pragma omp simd reduction(+:sum)
    for (int i = 0; i < n; i++) sum += (double)x[i] * y[i];
#endif
    return sum;
}

// y += alpha x, each entry one fused multiply-add (kernels/vec.h's smadd: -ffp-contract=fast would fuse
// a*b+c in one loop and not in another, and decoding must reproduce the tiles bit for bit)
static void axpy(real *restrict y, real alpha, const real *restrict x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] = smadd(alpha, x[i], y[i]);
}

// One score S[t][u] = (q . k) * scale, the products summed in increasing i from 0. The tiles
// compute every score of attention_engine_forward in exactly this order (one multiply-add chain
// per entry, vectorised across keys instead of across i), so decoding reproduces it bit for bit.
static real score_dot(const real *q, const real *k, int hd, real scale) {
    real s = 0;
    for (int i = 0; i < hd; i++) s = smadd(q[i], k[i], s);  // no simd reduction: the order is the contract
    return s * scale;
}

// ---------------------------------------------------------------------------------------------
// the tiles: every product of the engine is tile_mm (below) over a TR x TW block of its output

// The operands of one tile: A(r,k) = a[r*ars + k*aks] (so A may be read transposed), B(k,j) =
// b[k*ldb + j], out[r][j] at out[r*ldo + j]; nr rows and w columns of it are computed, over the
// depth k < n. beta: start from the old out (else 0); alpha multiplies the sums. tri: the rows
// go on past n into a lower triangle, row r over k < n + r (for O = P V, where row t0 + r of the
// block sees the keys u <= t0 + r).
typedef struct {
    real *out;
    size_t ldo;
    int nr, w, beta;
    real alpha;
    const real *a;
    size_t ars, aks;
    const real *b;
    size_t ldb;
    int n, tri;
} Tile;

// A(r,k) for row r of the tile: rows r >= nr repeat row nr - 1 and are not stored
static size_t tile_row(const Tile *t, int r) { return (size_t)(r < t->nr ? r : t->nr - 1) * t->ars; }

// The portable tile: its accumulators in memory, entry by entry; any width.
//   out[r][j] = alpha * (init[r][j] + sum_{k < n (+ r when tri)} A(r,k) B(k,j))
// Each entry is one chain of multiply-adds in increasing k; the vector tile below computes the
// same chains, so both give the same bits.
static void tile_scalar(const Tile *t) {
    real acc[TR][TW];
    size_t ro[TR];
    for (int r = 0; r < TR; r++) ro[r] = tile_row(t, r);
    for (int r = 0; r < TR; r++)
        for (int j = 0; j < TW; j++) acc[r][j] = t->beta && r < t->nr && j < t->w ? t->out[r * t->ldo + j] : 0;
    for (int k = 0; k < t->n; k++) {
        const real *ak = t->a + (size_t)k * t->aks, *bk = t->b + (size_t)k * t->ldb;
        for (int r = 0; r < TR; r++) {
            real ar = ak[ro[r]];
            for (int j = 0; j < t->w; j++) acc[r][j] = smadd(ar, bk[j], acc[r][j]);
        }
    }
    // the triangle: at depth n - 1 + d, rows r >= d
    for (int d = 1; t->tri && d < t->nr; d++) {
        size_t k = (size_t)(t->n - 1 + d);
        const real *ak = t->a + k * t->aks, *bk = t->b + k * t->ldb;
        for (int r = d; r < t->nr; r++)
            for (int j = 0; j < t->w; j++) acc[r][j] = smadd(ak[ro[r]], bk[j], acc[r][j]);
    }
    for (int r = 0; r < t->nr; r++)
        for (int j = 0; j < t->w; j++) t->out[r * t->ldo + j] = acc[r][j] * t->alpha;
}

#if VEC_BYTES
// vstore of the first m lanes of v (m < VL: a tile's last, partial vector)
static inline void vstore_part(real *p, vreal v, int m) {
    real lanes[VL];
    vstore(lanes, v);
    for (int i = 0; i < m; i++) p[i] = lanes[i];
}
static inline vreal vload_part(const real *p, int m) {
    real lanes[VL] = {0};
    for (int i = 0; i < m; i++) lanes[i] = p[i];
    return vload(lanes);
}

// The tile on NV vectors per row, its TR x NV accumulators in registers from the first FMA to
// the store (the loops have constant bounds and unroll completely). B is read NV whole vectors
// wide, so it must hold that many columns (w > (NV - 1) VL); the last vector may be stored in
// part. The same chains as tile_scalar.
#define TILE_VEC(NV)                                                                               \
    static void tile_vec##NV(const Tile *t) {                                                      \
        vreal acc[TR][NV];                                                                         \
        size_t ro[TR];                                                                             \
        UNROLL for (int r = 0; r < TR; r++) ro[r] = tile_row(t, r);                                \
        int last = t->w - (NV - 1) * VL;  /* columns in the last vector */                         \
        UNROLL for (int r = 0; r < TR; r++)                                                        \
            UNROLL for (int j = 0; j < NV; j++) {                                                  \
                const real *o = t->out + r * t->ldo + j * VL;                                      \
                acc[r][j] = !t->beta || r >= t->nr ? vzero() : j < NV - 1 || last == VL ? vload(o) \
                                                                 : vload_part(o, last);            \
            }                                                                                      \
        const real *ak = t->a, *bk = t->b;                                                         \
        for (int k = 0; k < t->n; k++, ak += t->aks, bk += t->ldb) {                               \
            vreal bv[NV];                                                                          \
            UNROLL for (int j = 0; j < NV; j++) bv[j] = vload(bk + j * VL);                        \
            UNROLL for (int r = 0; r < TR; r++) {                                                  \
                vreal x = vset1(ak[ro[r]]);                                                        \
                UNROLL for (int j = 0; j < NV; j++) acc[r][j] = vfma(x, bv[j], acc[r][j]);         \
            }                                                                                      \
        }                                                                                          \
        if (t->tri)  /* the triangle: at depth n - 1 + d, rows r >= d */                           \
            UNROLL for (int d = 1; d < TR; d++) {                                                  \
                if (d >= t->nr) break;                                                             \
                const real *ad = ak + (size_t)(d - 1) * t->aks, *bd = bk + (size_t)(d - 1) * t->ldb; \
                vreal bv[NV];                                                                      \
                UNROLL for (int j = 0; j < NV; j++) bv[j] = vload(bd + j * VL);                    \
                UNROLL for (int r = d; r < TR; r++) {                                              \
                    vreal x = vset1(ad[ro[r]]);                                                    \
                    UNROLL for (int j = 0; j < NV; j++) acc[r][j] = vfma(x, bv[j], acc[r][j]);     \
                }                                                                                  \
            }                                                                                      \
        vreal al = vset1(t->alpha);                                                                \
        UNROLL for (int r = 0; r < TR; r++) {                                                      \
            if (r >= t->nr) break;                                                                 \
            UNROLL for (int j = 0; j < NV; j++) {                                                  \
                real *o = t->out + r * t->ldo + j * VL;                                            \
                if (j < NV - 1 || last == VL) vstore(o, acc[r][j] * al);                           \
                else vstore_part(o, acc[r][j] * al, last);                                         \
            }                                                                                      \
        }                                                                                          \
    }
TILE_VEC(1)
#if TV >= 2
TILE_VEC(2)
#endif
#if TV >= 3
TILE_VEC(3)
#endif
#if TV >= 4
TILE_VEC(4)
#endif
#if TV > 4
#error "tiles wider than 4 vectors need more TILE_VEC instances"
#endif
#endif

// One tile of a product, w <= TW columns. bfull: b may be read TW columns wide even when w < TW
// (a padded K^T or V^T); otherwise the vector tile runs only on whole vectors of B.
static void tile_mm(real *restrict out, size_t ldo, int nr, int w, int beta, real alpha,
                    const real *restrict a, size_t ars, size_t aks,
                    const real *restrict b, size_t ldb, int n, int bfull, int tri) {
    Tile t = {out, ldo, nr, w, beta, alpha, a, ars, aks, b, ldb, n, tri};
    (void)bfull;  // (the portable build reads b only w columns wide)
#if VEC_BYTES
    if (bfull || w % VL == 0) {
        switch ((w + VL - 1) / VL) {
        case 1: tile_vec1(&t); return;
#if TV >= 2
        case 2: tile_vec2(&t); return;
#endif
#if TV >= 3
        case 3: tile_vec3(&t); return;
#endif
#if TV >= 4
        case 4: tile_vec4(&t); return;
#endif
        }
    }
#endif
    tile_scalar(&t);
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
#if VEC_TB
        // VEC_TB keys x VEC_TB columns through registers (kernels/vec.h): VEC_TB row loads and stores
        // instead of VEC_TB^2 of each
        for (; i + VEC_TB <= hd; i += VEC_TB)
            for (int u = 0; u < 8; u += VEC_TB)
                vec_transpose_store(xt + (size_t)i * ldx + u0 + u, ldx, x + (size_t)(u0 + u) * C + i, C);
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
// the causal softmax over keys; a window (model.attn_window) runs the definition
static int engine_supports(const AttnSpec *spec) {
    return spec->mask == ATTN_MASK_CAUSAL && spec->axis == SOFTMAX_OVER_KEYS && spec->window == 0;
}

static void require_engine_spec(const AttnSpec *spec, const AttnStats *stats, const real *row_gain) {
    if (!engine_supports(spec) || stats || row_gain)
        die(EXIT_RUNTIME, "internal: the attention engine computes the causal softmax over keys without statistics");
}

void attention_engine_forward(real *out, real *att, real *scratch, AttnQKV in, AttnShape shape,
                              const AttnSpec *spec, AttnStats *stats) {
    require_engine_spec(spec, stats, NULL);
    const real *q = in.q, *k = in.k, *v = in.v;
    int B = shape.B, T = shape.T, C = shape.C, NH = shape.NH;
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
                                qh + (size_t)t0 * C, C, 1, kt + j0, ldk, hd, 1, 0);
                    // P = softmax(S) over the visible keys u <= t; masked entries exactly zero
                    for (int t = t0; t < t0 + nr; t++) {
                        real *prow = ph + (size_t)t * T;
                        softmax_row(prow, prow, t + 1);
                        for (int u = t + 1; u < T; u++) prow[u] = 0;
                    }
                    // O[t] = sum_{u<=t} P[t][u] V[u], summed in increasing u from 0 (as decoding
                    // does): the keys u <= t0 that every row sees, then the triangle of the rest
                    for (int i0 = 0; i0 < hd; i0 += TW)
                        tile_mm(oh + (size_t)t0 * C + i0, C, nr, hd - i0 < TW ? hd - i0 : TW, 0, 1,
                                ph + (size_t)t0 * T, T, 1, vh + i0, C, t0 + 1, 0, 1);
                }
            }
        }
    }
}

void attention_engine_backward(AttnGradQKV grad, real *scratch, const real *dout, const real *att, AttnQKV in,
                               AttnShape shape, const AttnSpec *spec, AttnStats *stats, real *row_gain,
                               GradWrite write) {
    require_engine_spec(spec, stats, row_gain);
    const real *q = in.q, *k = in.k, *v = in.v;
    real *dq = grad.dq, *dk = grad.dk, *dv = grad.dv;
    int B = shape.B, T = shape.T, C = shape.C, NH = shape.NH;
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
                                doh + (size_t)t0 * C, C, 1, vt + j0, ldk, hd, 1, 0);
                    // dS = P * (dP - rowsum(dP * P)), stored as scale * dS over its row's dP.
                    // Masked entries (P = 0) get dS = 0; the TR - 1 after the diagonal are written
                    // as 0 so the tiles below can run over them.
                    for (int t = t0; t < nk; t++) {
                        const real *prow = ph + (size_t)t * T;
                        real *row = ds + (size_t)t * ldk;
                        real rs = (real)dot_double(row, prow, t + 1);
#pragma omp simd
                        for (int u = 0; u <= t; u++) row[u] = scale * (prow[u] * (row[u] - rs));
                        for (int u = t + 1; u <= t + TR - 1 && u < ldk; u++) row[u] = 0;
                    }
                    // dQ[t] += sum_{u<=t} (scale dS[t][u]) K[u]
                    for (int i0 = 0; i0 < hd; i0 += TW)
                        tile_mm(dqh + (size_t)t0 * C + i0, C, nr, hd - i0 < TW ? hd - i0 : TW, beta, 1,
                                ds + (size_t)t0 * ldk, ldk, 1, kh + i0, C, nk, 0, 0);
                }
                // dV[u] += sum_{t>=u} P[t][u] dO[t] and dK[u] += sum_{t>=u} (scale dS[t][u]) Q[t]:
                // P and dS read transposed, starting at t = u0 (entries with t < u are zero)
                for (int u0 = 0; u0 < T; u0 += TR) {
                    int nr = T - u0 < TR ? T - u0 : TR;
                    for (int i0 = 0; i0 < hd; i0 += TW) {
                        int w = hd - i0 < TW ? hd - i0 : TW;
                        tile_mm(dvh + (size_t)u0 * C + i0, C, nr, w, beta, 1, ph + (size_t)u0 * T + u0, 1, T,
                                doh + (size_t)u0 * C + i0, C, T - u0, 0, 0);
                        tile_mm(dkh + (size_t)u0 * C + i0, C, nr, w, beta, 1, ds + (size_t)u0 * ldk + u0, 1, ldk,
                                qh + (size_t)u0 * C + i0, C, T - u0, 0, 0);
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
        // the same arithmetic as row `pos` of attention_engine_forward, so the results agree bit for bit:
        // each score one multiply-add chain over i, each output entry one chain over u from 0
        for (int u = 0; u <= pos; u++) scores[u] = score_dot(qh, k_cache + (size_t)u * C + h * hd, hd, scale);
        softmax_row(scores, scores, pos + 1);
        real *oh = out + h * hd;
        for (int i = 0; i < hd; i++) oh[i] = 0;
        for (int u = 0; u <= pos; u++) axpy(oh, scores[u], v_cache + (size_t)u * C + h * hd, hd);
    }
}

const AttentionImpl attention_engine = {"engine", attention_engine_forward, attention_engine_backward, engine_supports, 0,
                                        attention_decode_step};
