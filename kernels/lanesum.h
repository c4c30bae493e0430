// kernels/lanesum.h: row sums in fixed lanes, the same bits wherever a row lies in memory.
#ifndef KERNELS_LANESUM_H
#define KERNELS_LANESUM_H

#include "base/common.h"

// Row sums for LayerNorm (and the gradient norm's chunks, run/optimizer.c) in LN_LANES partial sums
// (lane j takes elements j, j + LN_LANES, ...), added in lane order, then the tail. The compiler
// vectorises the lanes (one chain of dependent adds waits on each add), and unlike an omp simd
// reduction the order does not follow the row's alignment, so a row gets the same statistics
// wherever it lies (the KV cache relies on it).
#define LN_LANES 8
// returns the sum of TERM over k in [0, n), TERM an expression in k, in the lanes above
#define LANE_SUM(n, TERM)                                                                          \
    do {                                                                                           \
        double part_[LN_LANES] = {0};                                                              \
        int i_ = 0;                                                                                \
        for (; i_ + LN_LANES <= (n); i_ += LN_LANES)                                               \
            for (int j_ = 0; j_ < LN_LANES; j_++) {                                                \
                int k = i_ + j_;                                                                   \
                part_[j_] += (TERM);                                                               \
            }                                                                                      \
        double sum_ = 0.0;                                                                         \
        for (int j_ = 0; j_ < LN_LANES; j_++) sum_ += part_[j_];                                   \
        for (int k = i_; k < (n); k++) sum_ += (TERM);                                             \
        return sum_;                                                                               \
    } while (0)

static inline double row_sum(const real *x, int C) { LANE_SUM(C, (double)x[k]); }

// sum of (x - m)^2 over the row
static inline double row_sum_sq_dev(const real *x, double m, int C) {
    LANE_SUM(C, (x[k] - m) * (x[k] - m));
}

#endif
