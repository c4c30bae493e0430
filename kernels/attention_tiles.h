// kernels/attention_tiles.h: the register-tile products the attention engine
// (kernels/attention_engine.c) computes every product with: the tile's size for the vector unit,
// the Product each pass describes (out = alpha * (out or 0) + alpha * A B, A read straight or
// transposed), and its tiles, vector (kernels/regtile.h), tall (AVX-512) or portable, each entry
// one chain of multiply-adds in increasing depth, so every tile gives the same bits. Included by
// the engine alone: its functions are static, compiled into the engine's own object.
#ifndef KERNELS_ATTENTION_TILES_H
#define KERNELS_ATTENTION_TILES_H

#include <stddef.h>

#include "base/common.h"      // real
#include "kernels/regtile.h"  // REGTILE_STEP, UNROLL: the register tile's depth step
#include "kernels/vec.h"      // vreal, VL, VEC_BYTES, smadd: the vector unit

// The register tile: TR output rows by TV vectors (TW = TV * VL columns). TR * TV accumulators,
// TV vectors of B and one broadcast of A must fit the register file: 6 x 4 of AVX-512's 32
// (the 64 columns of a 64-wide head in one tile), 6 x 2 of AVX2's 16, 6 x 4 of NEON's 32.
#if VEC_BYTES == 64
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

// The forward's queries, and the backward's keys and queries for dV, dK and dQ, go in strips of
// SR: two tiles tall where the tall tile runs (AVX-512: see tile_tall), else one (a strip's
// products include zero terms for the entries its rows do not see, more in a taller strip)
#if VEC_BYTES == 64
#define TALL 1
#define SR   (2 * TR)
#else
#define TALL 0
#define SR   TR
#endif

// ---------------------------------------------------------------------------------------------
// the tiles: every product of the engine is tiles_mm over a Product

// out (rows, cols) = alpha * (out if accumulate, else 0) + alpha * A B, over the depth k < depth:
//   A(r, k) = a[r * a_row + k * a_depth]  (so A may be read transposed)
//   B(k, j) = b[k * ldb + j]
//   out[r][j] at out[r * ldo + j]
// Each entry is one chain of multiply-adds in increasing k, started from the old value or 0.
// b_padded: B may be read a whole tile (TW columns) wide past cols (a padded K^T or V^T);
// out_padded: out may be written so (a block of scratch), its extra columns left undefined.
typedef struct {
    real *out;
    size_t ldo;
    int rows, cols;
    int accumulate;
    real alpha;
    const real *a;
    size_t a_row, a_depth;
    const real *b;
    size_t ldb;
    int depth;
    int b_padded, out_padded;
} Product;

// One tile of a product: its rows [r0, r0 + nr) and columns [j0, j0 + nc), nr <= TR, nc <= TW.
typedef struct {
    real *out;
    const real *a, *b;
    int nr, nc;
} Tile;

static Tile tile_at(const Product *p, int r0, int j0) {
    Tile t = {p->out + (size_t)r0 * p->ldo + j0, p->a + (size_t)r0 * p->a_row, p->b + j0,
              p->rows - r0 < TR ? p->rows - r0 : TR, p->cols - j0 < TW ? p->cols - j0 : TW};
    return t;
}

// A(r, k) of the tile's row r: rows r >= nr repeat the last and are not stored
static size_t tile_row(const Product *p, const Tile *t, int r) {
    return (size_t)(r < t->nr ? r : t->nr - 1) * p->a_row;
}

// The portable tile: its accumulators in memory, entry by entry. The vector tile below computes
// the same chains, so both give the same bits.
static void tile_scalar(const Product *p, const Tile *t) {
    real acc[TR][TW];
    size_t ro[TR];
    for (int r = 0; r < TR; r++) ro[r] = tile_row(p, t, r);
    for (int r = 0; r < TR; r++)
        for (int j = 0; j < TW; j++)
            acc[r][j] = p->accumulate && r < t->nr && j < t->nc ? t->out[r * p->ldo + j] : 0;
    for (int k = 0; k < p->depth; k++) {
        const real *ak = t->a + (size_t)k * p->a_depth, *bk = t->b + (size_t)k * p->ldb;
        for (int r = 0; r < TR; r++) {
            real ar = ak[ro[r]];
            for (int j = 0; j < t->nc; j++) acc[r][j] = smadd(ar, bk[j], acc[r][j]);
        }
    }
    for (int r = 0; r < t->nr; r++)
        for (int j = 0; j < t->nc; j++) t->out[r * p->ldo + j] = acc[r][j] * p->alpha;
}

#if VEC_BYTES
// the first m lanes of v (m < VL: a tile's last, partial vector)
static inline void vstore_part(real *dst, vreal v, int m) {
    real lanes[VL];
    vstore(lanes, v);
    for (int i = 0; i < m; i++) dst[i] = lanes[i];
}
static inline vreal vload_part(const real *src, int m) {
    real lanes[VL] = {0};
    for (int i = 0; i < m; i++) lanes[i] = src[i];
    return vload(lanes);
}

// The tile on NV vectors per row, its TR x NV accumulators in registers (kernels/regtile.h). B
// is read NV whole vectors wide, so it must hold that many columns (nc > (NV - 1) VL); the last
// vector may be stored in part. The same chains as tile_scalar.
// (its backslashes kept at column 100 by hand: clang-format 14 misplaces one after the ternary)
// clang-format off
#define TILE_VEC(NV)                                                                               \
    static void tile_vec##NV(const Product *p, const Tile *t) {                                    \
        vreal acc[TR][NV];                                                                         \
        size_t ro[TR];                                                                             \
        UNROLL for (int r = 0; r < TR; r++) ro[r] = tile_row(p, t, r);                             \
        int last = t->nc - (NV - 1) * VL; /* columns in the last vector */                         \
        int whole = last == VL || p->out_padded;                                                   \
        size_t ldo = p->ldo, a_depth = p->a_depth, ldb = p->ldb;                                   \
        UNROLL for (int r = 0; r < TR; r++) UNROLL for (int j = 0; j < NV; j++) {                  \
            const real *o = t->out + r * ldo + j * VL;                                             \
            acc[r][j] = !p->accumulate || r >= t->nr ? vzero()                                     \
                        : j < NV - 1 || last == VL   ? vload(o)                                    \
                                                     : vload_part(o, last);                        \
        }                                                                                          \
        const real *ak = t->a, *bk = t->b;                                                         \
        for (int k = 0, depth = p->depth; k < depth; k++, ak += a_depth, bk += ldb)                \
            REGTILE_STEP(acc, TR, NV, TILE_A, bk);                                                 \
        vreal al = vset1(p->alpha);                                                                \
        UNROLL for (int r = 0; r < TR; r++) {                                                      \
            if (r >= t->nr) break;                                                                 \
            UNROLL for (int j = 0; j < NV; j++) {                                                  \
                real *o = t->out + r * ldo + j * VL;                                               \
                if (j < NV - 1 || whole)                                                           \
                    vstore(o, acc[r][j] * al);                                                     \
                else                                                                               \
                    vstore_part(o, acc[r][j] * al, last);                                          \
            }                                                                                      \
        }                                                                                          \
    }
// clang-format on
#define TILE_A(r) ak[ro[r]]
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
#undef TILE_A
#endif

#if TALL
// A tall tile: 2 TR rows by two whole vectors (a head of 32 columns), where the register file
// has room for its 24 accumulators. Twice tile_vec2's accumulators for the same loads of B. Its
// rows of A are read from four pointers three rows apart, so that every read is one pointer and
// a multiple of the row stride (kept in registers, not reloaded). The same chains as tile_vec2.
_Static_assert(TR == 6, "the tall tile reads its 12 rows of A from 4 pointers 3 rows apart");
static void tile_tall(const Product *p, int r0) {
    vreal acc[2 * TR][2];
    size_t ldo = p->ldo, ldb = p->ldb, ar = p->a_row, ad = p->a_depth;
    real *out = p->out + (size_t)r0 * ldo;
    UNROLL for (int r = 0; r < 2 * TR; r++) UNROLL for (int j = 0; j < 2; j++) acc[r][j] =
        p->accumulate ? vload(out + r * ldo + j * VL) : vzero();
    const real *a0 = p->a + (size_t)r0 * ar, *a3 = a0 + 3 * ar, *a6 = a0 + 6 * ar,
               *a9 = a0 + 9 * ar, *bk = p->b;
#define TALL_A(r) ((r) < 3 ? a0 : (r) < 6 ? a3 : (r) < 9 ? a6 : a9)[((r) % 3) * ar]
    for (int k = 0, depth = p->depth; k < depth;
         k++, a0 += ad, a3 += ad, a6 += ad, a9 += ad, bk += ldb)
        REGTILE_STEP(acc, 2 * TR, 2, TALL_A, bk);
#undef TALL_A
    vreal al = vset1(p->alpha);
    UNROLL for (int r = 0; r < 2 * TR; r++) UNROLL for (int j = 0; j < 2; j++)
        vstore(out + r * ldo + j * VL, acc[r][j] * al);
}
#endif

// One tile. The vector tile runs when B may be read whole vectors wide.
static void tile_mm(const Product *p, const Tile *t) {
#if VEC_BYTES
    if (p->b_padded || t->nc % VL == 0) {
        switch ((t->nc + VL - 1) / VL) {
        case 1:
            tile_vec1(p, t);
            return;
#if TV >= 2
        case 2:
            tile_vec2(p, t);
            return;
#endif
#if TV >= 3
        case 3:
            tile_vec3(p, t);
            return;
#endif
#if TV >= 4
        case 4:
            tile_vec4(p, t);
            return;
#endif
        }
    }
#endif
    tile_scalar(p, t);
}

// The whole product, tile by tile (each output entry is computed by exactly one tile).
static void tiles_mm(const Product *p) {
    int r0 = 0;
#if TALL
    if (p->cols == 2 * VL)
        for (; r0 + 2 * TR <= p->rows; r0 += 2 * TR) tile_tall(p, r0);
#endif
    for (; r0 < p->rows; r0 += TR)
        for (int j0 = 0; j0 < p->cols; j0 += TW) {
            Tile t = tile_at(p, r0, j0);
            tile_mm(p, &t);
        }
}

#endif
