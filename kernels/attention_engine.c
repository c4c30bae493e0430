// kernels/attention_engine.c: the attention engine. It computes the function of attention.c (the
// definition: read that first) for the correct model (causal mask, softmax over keys, an optional
// window), fused in the manner of FlashAttention (Dao et al. 2022; FlashAttention-2, Dao 2023), so
// that nothing of size T x T is ever stored; the tests prove it equal to the definition.
//
// Forward, for each head and each tile of TR query rows, over the blocks of KB keys the rows see:
//   S = Q K^T * scale                 for the block only (TR x KB)
//   m_new = max(m, rowmax S)          the running maximum of each row
//   P = exp(S - m_new)                masked keys: exactly 0
//   l = l * exp(m - m_new) + rowsum P the running sum of the row's weights
//   O = O * exp(m - m_new) + P V      the running output, rescaled when the maximum grows
// and at the end O = O / l. The row's log-sum-exp L = m + log l is kept for the backward, as its
// two parts m and 1 / l: 2 T numbers per head instead of the T x T weights. (exp(S - L) in float
// would round S - L, near -log l for the largest weights, to about log l ulps; exp(S - m) / l
// keeps those weights as accurate as the forward's.)
// Backward, for each block of queries, over the blocks of keys its rows see, P recomputed from m,
// l:
//   P = exp(S - m) / l,  dP = dO V^T  every block of the rows' keys first (a strip, QB x the keys)
//   D = rowsum(dP * P)                per row (equal to rowsum(dO * O); see
//                                     docs/backprop-through-softmax.md for why this one)
//   dS = P * (dP - D)
//   dV += P^T dO,  dQ += scale dS K,  dK += scale dS^T Q
// Blocks of keys a row does not see (above the diagonal, before the window) are skipped, so the
// time is O(T^2 / 2) under the causal mask and O(T W) under a window of W keys.
//
// The products run on register tiles (kernels/attention_tiles.h) of TR x TW outputs (2 TR x 32 for
// a head of 32 columns on AVX-512) over K^T, V^T and the head's rows copied into a contiguous,
// padded scratch, so every inner loop reads memory in order. Each (batch, head) is one task of an
// OpenMP loop that writes only its own head's columns: the same bits for any thread count. Every
// score is one multiply-add chain over the head's columns in increasing order and every block's
// update is one function (online_block), which decoding calls too: generation with the KV cache
// reproduces the forward bit for bit.
#include "attention.h"

#include "kernels/attention_tiles.h"  // TR, TW, SR, Product, tiles_mm: the register-tile products
#include "kernels/fastmath.h"
#include "kernels/regtile.h"
#include "kernels/vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

// Keys per block of the forward's online softmax (FK), and keys and queries per block of the
// backward (KB, QB): whole numbers of tiles wide. The forward's rows carry their running maximum,
// sum and output from block to block, so its blocks are long (fewer rescalings); the backward's
// P and dS blocks are kept small enough for their products to read them from L1.
#define FK 256
#define KB 64
#define QB 64
_Static_assert(FK % TW == 0 && KB % TW == 0 && FK % KB == 0,
               "blocks of keys are whole numbers of tiles wide");
_Static_assert(QB == KB, "the backward's query block i0 is the first to see key block i0");
// ---------------------------------------------------------------------------------------------
// the pieces of a row

// The largest of s[0..n) (n >= 1): a vector of running maxima, then its lanes. A maximum is
// exact, so every order gives the same value.
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

// D's lanes: sums in double of products of floats (exact in double), VL of them, so a row's sum
// over its blocks is one pass per block and one reduction at the end.
#if VEC_BYTES
#define DLANES VL
#else
#define DLANES 1
#endif
// lane[j] += x_i y_i for i = j, j + DLANES, ... < n in order, the rest onto lane 0
static void dot_lanes(double *lane, const real *x, const real *y, int n) {
    int i = 0;
#if VEC_BYTES
    for (; i + VL <= n; i += VL) {
#pragma omp simd
        for (int j = 0; j < VL; j++) lane[j] += (double)x[i + j] * y[i + j];
    }
#endif
    for (; i < n; i++) lane[0] += (double)x[i] * y[i];
}

// the lanes' sum, pairwise (lane j + lane j + DLANES/2, ...)
static double lanes_sum(double *lane) {
    for (int w = DLANES / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) lane[j] += lane[j + w];
    return lane[0];
}

// One score S[t][u] = (q . k) * scale, the products summed in increasing i from 0: the chain
// every tile of S computes for its entry (vectorised across keys instead of across i).
static real score_dot(const real *q, const real *k, int hd, real scale) {
    real s = 0;
    for (int i = 0; i < hd; i++)
        s = smadd(q[i], k[i], s);  // no simd reduction: the order is the contract
    return s * scale;
}

// y += alpha x, each entry one fused multiply-add, as the tiles add P V
static void axpy(real *restrict y, real alpha, const real *restrict x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] = smadd(alpha, x[i], y[i]);
}

// One row's step of the online softmax over one block of keys. s[0..n) holds the row's scaled
// scores of the block's keys, of which s[vis0..vis1] are visible (none when vis0 > vis1); it
// receives the unnormalised weights p = exp(s - m_new), exactly 0 for the keys not seen (s has
// room for VL - 1 more entries past n). *m and *l are the row's running maximum and sum (-inf and
// 0 before its first visible key), and o (hd) its running output: rescaled by exp(m - m_new)
// here, before the caller adds p V. The block's sum is taken in VL lanes counted from the first
// visible key (lane j: keys vis0 + j, vis0 + j + VL, ...), then the lanes in order: it depends on
// the visible keys alone, not on where they lie in s. Forward and decoding both call this one
// function (not inlined: one compiled body, one rounding), so they agree bit for bit.
static NOINLINE void online_block(real *s, int n, int vis0, int vis1, real *m, real *l, real *o,
                                  int hd) {
    real m_old = *m;
    if (vis0 > vis1) {  // nothing seen here: p = 0, and m, l, o stay (o starts at 0)
        memset(s, 0, (size_t)n * sizeof(real));
        if (m_old == -INFINITY) memset(o, 0, (size_t)hd * sizeof(real));
        return;
    }
    real bm = row_max(s + vis0, vis1 - vis0 + 1);
    real m_new = bm > m_old ? bm : m_old;
    // exp over whole vectors from the first visible key; the entries past the last are 0, which
    // the lanes' sum only adds as +0
    int u1 = vis1 + 1;
#if VEC_BYTES
    u1 = vis0 + (u1 - vis0 + VL - 1) / VL * VL;
#endif
    memset(s, 0, (size_t)vis0 * sizeof(real));
#pragma omp simd
    for (int u = vis0; u < u1; u++) {
        real e = fast_exp(s[u] - m_new);
        s[u] = u <= vis1 ? e : 0;
    }
    if (u1 < n) memset(s + u1, 0, (size_t)(n - u1) * sizeof(real));
    real sum = 0;
#if VEC_BYTES
    vreal lanes = vzero();
    for (int u = vis0; u < u1; u += VL) lanes += vload(s + u);
    sum = vsum(lanes);
#else
    for (int u = vis0; u < u1; u++) sum += s[u];
#endif
    if (m_old == -INFINITY) {  // the row's first visible keys
        memset(o, 0, (size_t)hd * sizeof(real));
        *l = sum;
    } else {
        real alpha = fast_exp(m_old - m_new);
        if (alpha != 1)
            for (int i = 0; i < hd; i++) o[i] *= alpha;
        *l = smadd(*l, alpha, sum);
    }
    *m = m_new;
}

// The row's end: O = O / l, and what the backward needs to recompute P = exp(S - m) / l: its
// log-sum-exp L = m + log l, kept as its two parts, stat = {m, 1 / l}
static NOINLINE void online_finish(real *o, int hd, real m, real l, real *stat) {
    real inv = 1 / l;
    for (int i = 0; i < hd; i++) o[i] *= inv;
    stat[0] = m;
    stat[1] = inv;
}

// ---------------------------------------------------------------------------------------------
// scratch

// Keys padded to whole tiles, and one more: the transposed K (or V) has this leading dimension (a
// tile of S reads TW columns from its first key, which under a window may be any key).
static int padded_keys(int T) { return (T + TW - 1) / TW * TW + TW; }

// xt (hd, ldx) = x^T for one head's rows x (T, hd, row stride C); the padding columns are zeroed.
// Blocks of 8 keys: each row of x is read once, contiguously, and the 8 entries written per row
// of xt share a cache line.
static void transpose_head(real *restrict xt, int ldx, const real *restrict x, int T, int C,
                           int hd) {
    int u0 = 0;
    for (; u0 + 8 <= T; u0 += 8) {
        int i = 0;
#if VEC_TB
        // VEC_TB keys x VEC_TB columns through registers (kernels/vec.h)
        for (; i + VEC_TB <= hd; i += VEC_TB)
            for (int u = 0; u < 8; u += VEC_TB)
                vec_transpose_store(xt + (size_t)i * ldx + u0 + u, ldx,
                                    x + (size_t)(u0 + u) * C + i, C);
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

// xc (T, hd) = one head's rows x (T, hd, row stride C), contiguous. The products read the rows of
// V, K, Q and dO one per step of their depth; copied, a block's rows are consecutive lines rather
// than C apart (which at C = 128 puts them in a quarter of L1's sets).
static void copy_head(real *restrict xc, const real *restrict x, int T, int C, int hd) {
    for (int u = 0; u < T; u++)
        memcpy(xc + (size_t)u * hd, x + (size_t)u * C, (size_t)hd * sizeof(real));
}

// Blocks of KB keys in a query block's strip: the keys from a KB edge to the block's diagonal.
static int strip_blocks(int T) { return (T + KB - 1) / KB + 1; }

// Reals of a row of the forward's scores: a block of FK keys, or under a window a strip's whole
// span (at most T + SR - 1 keys), and room for a vector past it (online_block reads whole ones).
static size_t score_row_reals(int T) {
    return (size_t)((T + SR > FK ? T + SR : FK) + 16) / 16 * 16;
}

// Per thread: the forward's K^T (hd, ldk), scores (SR, score_row_reals) and V (T, hd), or the
// backward's K^T and V^T (hd, ldk) each, a query block's strip of P and of dS blocks
// (strip_blocks x QB x KB each), the sums of its dQ (QB, hd) and of the head's dK and dV (T, hd),
// and the head's Q, K and dO (T, hd) each; a multiple of 16 reals, so each thread's share stays
// 64-byte aligned.
static size_t engine_scratch_reals(int T, int hd) {
    size_t ldk = padded_keys(T), forward = hd * ldk + SR * score_row_reals(T) + (size_t)T * hd;
    size_t backward =
        2 * hd * ldk + 2 * (size_t)strip_blocks(T) * QB * KB + ((size_t)QB + 5 * (size_t)T) * hd;
    size_t n = forward > backward ? forward : backward;
    return (n + 15) / 16 * 16;
}

size_t attention_scratch_size(int T, int hd) {
    size_t engine = engine_scratch_reals(T, hd),
           definition = attention_definition_scratch_reals(T, hd);
    return engine > definition ? engine : definition;
}

// What the backward needs from the forward besides O: each row's {m, 1 / l} (B,NH,T,2).
static size_t engine_saved_reals(AttnShape s) { return 2 * (size_t)s.B * s.NH * s.T; }

// Whether the engine computes this spec: the correct model, its windows included (the mistakes
// and a knockout run the definition).
static int engine_supports(const AttnSpec *spec) {
    return spec->mask == ATTN_MASK_CAUSAL && spec->axis == SOFTMAX_OVER_KEYS && !spec->knockout;
}

static void require_engine_spec(const AttnSpec *spec, const AttnStats *stats,
                                const real *row_gain) {
    if (!engine_supports(spec) || stats || row_gain)
        die(EXIT_RUNTIME, "internal: the attention engine computes the causal softmax over keys "
                          "without statistics");
}

// ---------------------------------------------------------------------------------------------
// forward

// One head: qh, kh, vh, oh (T, hd) with row stride C; stat (T, 2) each row's {m, 1 / l}. The
// queries go in strips of SR rows; the blocks of keys: under the causal mask, [0, FK),
// [FK, 2 FK), ... up to the strip's last row; under a window, one block, from the strip's first
// row's first key to its last row (at most W + SR - 1 keys), so that each row's blocks begin at
// its own first key, as decoding's do.
static void forward_head(real *oh, real *stat, real *scratch, const real *qh, const real *kh,
                         const real *vh, int T, int C, int hd, const AttnSpec *spec) {
    int ldk = padded_keys(T);
    size_t sw = score_row_reals(T);
    real *kt = scratch, *sb = scratch + (size_t)hd * ldk, *vc = sb + SR * sw;  // K^T, the scores, V
    transpose_head(kt, ldk, kh, T, C, hd);
    copy_head(vc, vh, T, C, hd);
    for (int t0 = 0; t0 < T; t0 += SR) {
        int nr = T - t0 < SR ? T - t0 : SR, t1 = t0 + nr - 1;
        real m[SR], l[SR];
        for (int r = 0; r < nr; r++) {
            m[r] = -INFINITY;
            l[r] = 0;
        }
        int j_first = spec->window > 0 ? attention_first_key(spec, t0) : 0,
            block = spec->window > 0 ? t1 + 1 - j_first : FK;
        for (int j0 = j_first; j0 <= t1; j0 += block) {
            int kw = t1 + 1 - j0 < block ? t1 + 1 - j0 : block;
            // S = Q K^T * scale for the block (the entries a row does not see are overwritten)
            tiles_mm(&(Product){.out = sb,
                                .ldo = sw,
                                .rows = nr,
                                .cols = kw,
                                .alpha = spec->scale,
                                .a = qh + (size_t)t0 * C,
                                .a_row = C,
                                .a_depth = 1,
                                .b = kt + j0,
                                .ldb = ldk,
                                .depth = hd,
                                .b_padded = 1,
                                .out_padded = 1});
            for (int r = 0; r < nr; r++) {
                int t = t0 + r, vis0 = attention_first_key(spec, t) - j0, vis1 = t - j0;
                online_block(sb + r * sw, kw, vis0 > 0 ? vis0 : 0, vis1 < kw - 1 ? vis1 : kw - 1,
                             &m[r], &l[r], oh + (size_t)t * C, hd);
            }
            // O += P V over the block's keys, in increasing u (the weights of unseen keys are 0)
            tiles_mm(&(Product){.out = oh + (size_t)t0 * C,
                                .ldo = C,
                                .rows = nr,
                                .cols = hd,
                                .accumulate = 1,
                                .alpha = 1,
                                .a = sb,
                                .a_row = sw,
                                .a_depth = 1,
                                .b = vc + (size_t)j0 * hd,
                                .ldb = hd,
                                .depth = kw});
        }
        for (int r = 0; r < nr; r++)
            online_finish(oh + (size_t)(t0 + r) * C, hd, m[r], l[r], stat + 2 * (t0 + r));
    }
}

void attention_engine_forward(real *out, real *stat, real *scratch, AttnQKV in, AttnShape shape,
                              const AttnSpec *spec, AttnStats *stats) {
    require_engine_spec(spec, stats, NULL);
    int B = shape.B, T = shape.T, C = shape.C, NH = shape.NH, hd = C / NH;
    size_t per_thread = engine_scratch_reals(T, hd);
#pragma omp parallel if (par_worth((double)B * NH * T * T * hd))
    {
        real *mine = scratch + (size_t)thread_index() * per_thread;
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                size_t off = (size_t)b * T * C + (size_t)h * hd;
                forward_head(out + off, stat + 2 * ((size_t)b * NH + h) * T, mine, in.q + off,
                             in.k + off, in.v + off, T, C, hd, spec);
            }
    }
}

// ---------------------------------------------------------------------------------------------
// backward

// Row r (query t) of the strip: P = exp(S - m) / l where the row sees the key, then
// D = rowsum(dP * P) over those keys, then scale * dS = scale * P * (dP - D); 0 elsewhere. The
// blocks hold S and dP on entry, P and scale * dS on return. D is taken from the P and dP that dS
// uses (not from dO * O, its equal in exact arithmetic), so each row of dS sums to 0 to rounding,
// as the definition's does: the error of dQ and dK against float64 stays that of the definition.
static void dS_row(real *pb, real *dsb, int r, int t, int klo, int khi, int T, const real *stat,
                   const AttnSpec *spec) {
    real mt = stat[2 * t], inv = stat[2 * t + 1], scale = spec->scale, Dt = 0;
    double lane[DLANES] = {0};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) Dt = (real)lanes_sum(lane);
        for (int j0 = klo; j0 < khi; j0 += KB) {
            int kb = T - j0 < KB ? T - j0 : KB, vis0 = attention_first_key(spec, t) - j0,
                vis1 = t - j0;
            real *p = pb + (size_t)(j0 - klo) / KB * QB * KB + r * KB,
                 *ds = dsb + (size_t)(j0 - klo) / KB * QB * KB + r * KB;
            // the products read up to SR - 1 entries either side of the row's visible keys: those
            // are written as 0 too
            int u0 = vis0 - (SR - 1) > 0 ? vis0 - (SR - 1) : 0,
                u1 = vis1 + SR < kb ? vis1 + SR : kb;
            if (u0 >= u1) continue;
#if VEC_BYTES
            u0 = u0 / VL * VL;  // whole vectors (the blocks are KB wide)
            u1 = (u1 + VL - 1) / VL * VL;
#endif
            if (pass == 0) {
#pragma omp simd
                for (int u = u0; u < u1; u++) {
                    int seen = u >= vis0 && u <= vis1;
                    real pu = fast_exp(p[u] - mt) * inv;
                    p[u] = seen ? pu : 0;
                }
                int a = vis0 > 0 ? vis0 : 0, b = vis1 < kb - 1 ? vis1 : kb - 1;
                if (a <= b) dot_lanes(lane, p + a, ds + a, b - a + 1);
            } else {
#pragma omp simd
                for (int u = u0; u < u1; u++) {
                    int seen = u >= vis0 && u <= vis1;
                    real dsu = scale * (p[u] * (ds[u] - Dt));
                    ds[u] = seen ? dsu : 0;
                }
            }
        }
    }
}

// One head, as forward_head; dq, dk, dv receive the head's gradients (GRAD_ADD: onto them).
// Query blocks outer: for a block of QB rows, S and dP of every key block the rows see are taken
// first (a strip of blocks, QB x KB each), then each row's P, D and dS, then the products.
static void backward_head(AttnGradQKV dh, real *scratch, const real *doh, const real *stat,
                          AttnQKV h, int T, int C, int hd, const AttnSpec *spec, GradWrite write) {
    real *dqh = dh.dq, *dkh = dh.dk, *dvh = dh.dv;
    const real *qh = h.q, *kh = h.k, *vh = h.v;
    int ldk = padded_keys(T), nblk = strip_blocks(T);
    real *kt = scratch, *vt = kt + (size_t)hd * ldk;
    real *pb = vt + (size_t)hd * ldk,
         *dsb = pb + (size_t)nblk * QB * KB;  // the strip's P and dS blocks
    // The sums are taken where they are stored, each entry's from 0 in its first block. Under
    // GRAD_ADD they are taken apart, a query block's dQ (QB, hd) and the head's dK and dV (T, hd),
    // and added on once at the end: each entry then rounds its sum once onto the old value, as the
    // definition does.
    int add = write == GRAD_ADD;
    real *dq_sum = dsb + (size_t)nblk * QB * KB, *dk_sum = dq_sum + (size_t)QB * hd,
         *dv_sum = dk_sum + (size_t)T * hd;
    real *qc = dv_sum + (size_t)T * hd, *kc = qc + (size_t)T * hd,
         *doc = kc + (size_t)T * hd;  // Q, K, dO
    real *dkt = add ? dk_sum : dkh, *dvt = add ? dv_sum : dvh;
    size_t ldkv = add ? (size_t)hd : (size_t)C;
    transpose_head(kt, ldk, kh, T, C, hd);
    transpose_head(vt, ldk, vh, T, C, hd);
    copy_head(qc, qh, T, C, hd);
    copy_head(kc, kh, T, C, hd);
    copy_head(doc, doh, T, C, hd);
    real scale = spec->scale;
    for (int i0 = 0; i0 < T; i0 += QB) {
        int qb = T - i0 < QB ? T - i0 : QB;
        // the key blocks the rows see: from the one holding the first row's first key to the
        // diagonal's
        int klo = attention_first_key(spec, i0) / KB * KB, khi = i0 + qb;
        real *dqt = add ? dq_sum : dqh + (size_t)i0 * C;
        size_t ldq = add ? (size_t)hd : (size_t)C;
        // S (into pb) and dP = dO V^T (into dsb), block by block, strip by strip of TR queries,
        // over the keys [c0, c1) of the block that the strip's rows see (c0 at a tile's edge)
        for (int j0 = klo; j0 < khi; j0 += KB) {
            int kb = T - j0 < KB ? T - j0 : KB;
            real *p_blk = pb + (size_t)(j0 - klo) / KB * QB * KB,
                 *ds_blk = dsb + (size_t)(j0 - klo) / KB * QB * KB;
            for (int r0 = 0; r0 < qb; r0 += TR) {
                int nr = qb - r0 < TR ? qb - r0 : TR, c0 = attention_first_key(spec, i0 + r0) - j0,
                    c1 = i0 + r0 + nr - j0;
                c0 = c0 > 0 ? c0 / TW * TW : 0;
                c1 = c1 < kb ? c1 : kb;
                if (c1 <= c0) continue;
                tiles_mm(&(Product){.out = p_blk + r0 * KB + c0,
                                    .ldo = KB,
                                    .rows = nr,
                                    .cols = c1 - c0,
                                    .alpha = scale,
                                    .a = qc + (size_t)(i0 + r0) * hd,
                                    .a_row = hd,
                                    .a_depth = 1,
                                    .b = kt + j0 + c0,
                                    .ldb = ldk,
                                    .depth = hd,
                                    .b_padded = 1,
                                    .out_padded = 1});
                tiles_mm(&(Product){.out = ds_blk + r0 * KB + c0,
                                    .ldo = KB,
                                    .rows = nr,
                                    .cols = c1 - c0,
                                    .alpha = 1,
                                    .a = doc + (size_t)(i0 + r0) * hd,
                                    .a_row = hd,
                                    .a_depth = 1,
                                    .b = vt + j0 + c0,
                                    .ldb = ldk,
                                    .depth = hd,
                                    .b_padded = 1,
                                    .out_padded = 1});
            }
        }
        for (int r = 0; r < qb; r++) dS_row(pb, dsb, r, i0 + r, klo, khi, T, stat, spec);
        for (int j0 = klo; j0 < khi; j0 += KB) {
            int kb = T - j0 < KB ? T - j0 : KB;
            const real *p_blk = pb + (size_t)(j0 - klo) / KB * QB * KB,
                       *ds_blk = dsb + (size_t)(j0 - klo) / KB * QB * KB;
            // query block i0 is the first to see the keys of block j0 when i0 == j0 (query j0 sees
            // key j0, no earlier query does); block klo is the first key block of every row strip
            int first_i = i0 == j0, first_j = j0 == klo;
            // dV[u] += sum_t P[t][u] dO[t] and dK[u] += sum_t (scale dS[t][u]) Q[t], strip by strip
            // of SR keys over the queries [d0, d1) of the block that see them; P and dS read
            // transposed
            for (int u0 = 0; u0 < kb; u0 += SR) {
                int nr = kb - u0 < SR ? kb - u0 : SR, d0 = j0 + u0 - i0;
                int d1 = spec->window > 0 ? j0 + u0 + nr - 1 + spec->window - i0 : qb;
                d0 = d0 > 0 ? d0 : 0;
                d1 = d1 < qb ? d1 : qb;
                int depth = d1 > d0 ? d1 - d0 : 0, acc = !first_i;
                tiles_mm(&(Product){.out = dvt + (size_t)(j0 + u0) * ldkv,
                                    .ldo = ldkv,
                                    .rows = nr,
                                    .cols = hd,
                                    .accumulate = acc,
                                    .alpha = 1,
                                    .a = p_blk + d0 * KB + u0,
                                    .a_row = 1,
                                    .a_depth = KB,
                                    .b = doc + (size_t)(i0 + d0) * hd,
                                    .ldb = hd,
                                    .depth = depth});
                tiles_mm(&(Product){.out = dkt + (size_t)(j0 + u0) * ldkv,
                                    .ldo = ldkv,
                                    .rows = nr,
                                    .cols = hd,
                                    .accumulate = acc,
                                    .alpha = 1,
                                    .a = ds_blk + d0 * KB + u0,
                                    .a_row = 1,
                                    .a_depth = KB,
                                    .b = qc + (size_t)(i0 + d0) * hd,
                                    .ldb = hd,
                                    .depth = depth});
            }
            // dQ[t] += sum_u (scale dS[t][u]) K[u], strip by strip over the keys the rows see
            for (int r0 = 0; r0 < qb; r0 += SR) {
                int nr = qb - r0 < SR ? qb - r0 : SR, c0 = attention_first_key(spec, i0 + r0) - j0,
                    c1 = i0 + r0 + nr - j0;
                c0 = c0 > 0 ? c0 : 0;
                c1 = c1 < kb ? c1 : kb;
                tiles_mm(&(Product){.out = dqt + (size_t)r0 * ldq,
                                    .ldo = ldq,
                                    .rows = nr,
                                    .cols = hd,
                                    .accumulate = !first_j,
                                    .alpha = 1,
                                    .a = ds_blk + r0 * KB + c0,
                                    .a_row = KB,
                                    .a_depth = 1,
                                    .b = kc + (size_t)(j0 + c0) * hd,
                                    .ldb = hd,
                                    .depth = c1 > c0 ? c1 - c0 : 0});
            }
        }
        if (add)
            for (int r = 0; r < qb; r++)
                for (int i = 0; i < hd; i++)
                    dqh[(size_t)(i0 + r) * C + i] += dq_sum[(size_t)r * hd + i];
    }
    if (add)
        for (int u = 0; u < T; u++)
            for (int i = 0; i < hd; i++) {
                dkh[(size_t)u * C + i] += dk_sum[(size_t)u * hd + i];
                dvh[(size_t)u * C + i] += dv_sum[(size_t)u * hd + i];
            }
}

void attention_engine_backward(AttnGradQKV grad, real *scratch, const real *dout, const real *out,
                               const real *stat, AttnQKV in, AttnShape shape, const AttnSpec *spec,
                               AttnStats *stats, real *row_gain, GradWrite write) {
    require_engine_spec(spec, stats, row_gain);
    (void)out;  // D is taken from P and dP (dS_row), not from dO * O
    int B = shape.B, T = shape.T, C = shape.C, NH = shape.NH, hd = C / NH;
    size_t per_thread = engine_scratch_reals(T, hd);
#pragma omp parallel if (par_worth((double)B * NH * T * T * hd))
    {
        real *mine = scratch + (size_t)thread_index() * per_thread;
        // every (b, h) writes only its own head's columns of dq, dk, dv: no two threads collide
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                size_t off = (size_t)b * T * C + (size_t)h * hd;
                backward_head((AttnGradQKV){grad.dq + off, grad.dk + off, grad.dv + off}, mine,
                              dout + off, stat + 2 * ((size_t)b * NH + h) * T,
                              (AttnQKV){in.q + off, in.k + off, in.v + off}, T, C, hd, spec, write);
            }
    }
}

// ---------------------------------------------------------------------------------------------
// decoding

size_t attention_decode_scratch_reals(int T) { return (size_t)(T > FK ? T : FK) + 16; }

void attention_decode_step(real *out, real *scores, const real *q, const real *k, const real *v,
                           int pos, int C, int NH, const AttnSpec *spec) {
    int hd = C / NH, block = spec->window > 0 ? pos + 1 : FK;  // the forward's blocks for this row
    for (int h = 0; h < NH; h++) {
        const real *qh = q + h * hd;
        real *oh = out + h * hd, m = -INFINITY, l = 0;
        for (int j0 = 0; j0 <= pos; j0 += block) {
            int last = pos - j0 < block - 1 ? pos - j0 : block - 1;
            for (int u = 0; u <= last; u++)
                scores[u] = score_dot(qh, k + (size_t)(j0 + u) * C + h * hd, hd, spec->scale);
            online_block(scores, last + 1, 0, last, &m, &l, oh, hd);
            for (int u = 0; u <= last; u++)
                axpy(oh, scores[u], v + (size_t)(j0 + u) * C + h * hd, hd);
        }
        real stat[2];
        online_finish(oh, hd, m, l, stat);
    }
}

const AttentionImpl attention_engine = {"engine",
                                        attention_engine_forward,
                                        attention_engine_backward,
                                        engine_supports,
                                        0,
                                        attention_decode_step,
                                        engine_saved_reals,
                                        engine_scratch_reals,
                                        qk_norm_engine_forward,
                                        qk_norm_engine_backward};
