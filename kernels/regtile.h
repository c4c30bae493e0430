// kernels/regtile.h: the register tile that the GEMM (kernels/matmul.c) and the attention engine
// (kernels/attention_engine.c) both compute on. A tile holds ROWS x NV vectors of outputs in
// registers; one depth step broadcasts each row's value of A and multiplies it into NV vectors of
// B with fused multiply-adds, so each output is one chain of FMAs over the depth, in order.
#ifndef REGTILE_H
#define REGTILE_H

#include "kernels/vec.h"

// The loops of a tile have constant bounds; unrolled completely, its accumulators stay in
// registers from the first FMA to the store.
#if defined(__GNUC__)
#define UNROLL _Pragma("GCC unroll 16")
#else
#define UNROLL
#endif

#if VEC_BYTES
// One depth step: acc[r][j] = A_AT(r) * b[j*VL .. j*VL + VL) + acc[r][j], for r < ROWS, j < NV.
// A_AT names a function-like macro giving row r's value of A at this depth.
#define REGTILE_STEP(acc, ROWS, NV, A_AT, b)                                                       \
    do {                                                                                           \
        vreal regtile_b_[NV];                                                                      \
        UNROLL for (int j_ = 0; j_ < (NV); j_++) regtile_b_[j_] = vload((b) + j_ * VL);            \
        UNROLL for (int r_ = 0; r_ < (ROWS); r_++) {                                               \
            vreal x_ = vset1(A_AT(r_));                                                            \
            UNROLL for (int j_ = 0; j_ < (NV); j_++) acc[r_][j_] =                                 \
                vfma(x_, regtile_b_[j_], acc[r_][j_]);                                             \
        }                                                                                          \
    } while (0)
#endif

#endif
