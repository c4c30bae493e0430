// kernels/qk_norm_engine.c: QK-norm in the engine, the function of attention.c's qk_norm_forward
// and qk_norm_backward (LayerNorm or RMSNorm over each head's columns of q and k, with a gain and
// bias per column) on rows taken in vectorised blocks, the sums in double lanes, the same bits for
// any thread count; the tests prove it equal to the definition.
#include <math.h>
#include <string.h>

#include "attention.h"    // QkNormShape, QK_NORM_EPS and the engine's QK-norm declared
#include "base/common.h"  // real, par_worth, thread_index, thread_count

// QK-norm (the definition's qk_norm_forward / qk_norm_backward in attention.c: the equations are
// there). The (token, head) rows are contiguous: row n*NH + h of hd columns starts at
// (n*NH + h)*hd. A row is short (hd columns), so its two sums are taken in one pass, in QN_LANES
// double lanes (lane j takes columns j, j + QN_LANES, ...), the lanes then added pairwise, then
// the tail; the variance is E[x^2] - mu^2, exact enough in double (a float's square is exact in
// double; the cancellation costs about log2(E[x^2] / var) of the 53 bits). Rows go QN_ROWS at a
// time, so the square roots and divisions of a block vectorise across its rows instead of
// waiting row by row; blocks are split between threads. The gain and bias gradients sum over
// every row: threads split the head columns, each summing its columns over the rows in order, so
// the bits do not depend on the thread count.
#define QN_LANES 8
#define QN_ROWS  16
typedef real qn_vreal __attribute__((vector_size(QN_LANES * sizeof(real))));
typedef double qn_vdouble __attribute__((vector_size(QN_LANES * sizeof(double))));

// The vectors go by pointer: a 64-byte vector passed or returned by value changes the ABI in a
// build without AVX-512 (gcc's -Wpsabi), though these never leave the file.
static inline void qn_load(qn_vdouble *out, const real *p) {
    qn_vreal v;
    memcpy(&v, p, sizeof v);
    *out = __builtin_convertvector(v, qn_vdouble);
}

static inline double qn_lanes_total(const qn_vdouble *v) {
    const qn_vdouble s = *v;
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

// *sum = sum_i x_i, *sum_sq = sum_i x_i^2 over a row of n
static inline void qn_sums(const real *x, int n, double *sum, double *sum_sq) {
    qn_vdouble s1 = {0}, s2 = {0};
    int i = 0;
    for (; i + QN_LANES <= n; i += QN_LANES) {
        qn_vdouble v;
        qn_load(&v, x + i);
        s1 += v;
        s2 += v * v;
    }
    double t1 = qn_lanes_total(&s1), t2 = qn_lanes_total(&s2);
    for (; i < n; i++) {
        t1 += x[i];
        t2 += (double)x[i] * x[i];
    }
    *sum = t1;
    *sum_sq = t2;
}

// with dn_i = dy_i w_i and n_i = (x_i - m) r: *sum_dn = sum_i dn_i, *sum_dn_n = sum_i dn_i n_i
static inline void qn_grad_sums(const real *dy, const real *w, const real *x, real m, real r, int n,
                                double *sum_dn, double *sum_dn_n) {
    qn_vdouble s1 = {0}, s2 = {0};
    int i = 0;
    for (; i + QN_LANES <= n; i += QN_LANES) {
        qn_vreal vdy, vw, vx;
        memcpy(&vdy, dy + i, sizeof vdy);
        memcpy(&vw, w + i, sizeof vw);
        memcpy(&vx, x + i, sizeof vx);
        qn_vdouble dn = __builtin_convertvector(vdy * vw, qn_vdouble);
        qn_vdouble nn = __builtin_convertvector((vx - m) * r, qn_vdouble);
        s1 += dn;
        s2 += dn * nn;
    }
    double t1 = qn_lanes_total(&s1), t2 = qn_lanes_total(&s2);
    for (; i < n; i++) {
        double dn = (double)(dy[i] * w[i]);
        t1 += dn;
        t2 += dn * (double)((x[i] - m) * r);
    }
    *sum_dn = t1;
    *sum_dn_n = t2;
}

void qk_norm_engine_forward(real *out, real *mean, real *rstd, const real *x, const real *w,
                            const real *b, QkNormShape shape) {
    int N = shape.N, C = shape.C, NH = shape.NH;
    QkNorm kind = shape.kind;
    int hd = C / NH, ln = kind == QK_NORM_LAYERNORM, rows = N * NH,
        blocks = (rows + QN_ROWS - 1) / QN_ROWS;
    double inv_hd = 1.0 / hd;
#pragma omp parallel for schedule(static) if (par_worth((double)N * C * 8))
    for (int blk = 0; blk < blocks; blk++) {
        int r0 = blk * QN_ROWS, nr = rows - r0 < QN_ROWS ? rows - r0 : QN_ROWS;
        double sum[QN_ROWS] = {0}, sum_sq[QN_ROWS] = {0};
        for (int j = 0; j < nr; j++) {
            const real *xr = x + (size_t)(r0 + j) * hd;
            qn_sums(xr, hd, &sum[j], &sum_sq[j]);
        }
        // mu = sum / hd (LayerNorm, else 0), var = sum_sq / hd - mu^2, r = 1 / sqrt(var + eps)
        for (int j = 0; j < QN_ROWS; j++) {
            double mu = ln ? sum[j] * inv_hd : 0.0, var = sum_sq[j] * inv_hd - mu * mu;
            sum[j] = mu;
            sum_sq[j] = 1.0 / sqrt((var > 0.0 ? var : 0.0) + QK_NORM_EPS);
        }
        for (int j = 0; j < nr; j++) {
            const real *xr = x + (size_t)(r0 + j) * hd;
            real *yr = out + (size_t)(r0 + j) * hd;
            real m = (real)sum[j], r = (real)sum_sq[j];
            if (ln) {
#pragma omp simd
                for (int i = 0; i < hd; i++) yr[i] = w[i] * ((xr[i] - m) * r) + b[i];
            } else {
#pragma omp simd
                for (int i = 0; i < hd; i++) yr[i] = w[i] * (xr[i] * r);
            }
            mean[r0 + j] = m;
            rstd[r0 + j] = r;
        }
    }
}

void qk_norm_engine_backward(real *dx, real *dw, real *db, const real *dout, const real *x,
                             const real *w, const real *mean, const real *rstd, QkNormShape shape) {
    int N = shape.N, C = shape.C, NH = shape.NH;
    QkNorm kind = shape.kind;
    int hd = C / NH, ln = kind == QK_NORM_LAYERNORM, rows = N * NH;
    // dw_i += dy_i n_i and db_i += dy_i first: dx may be dout, which the second loop overwrites
#pragma omp parallel if (par_worth((double)N * C * 2))
    {
        int tid = thread_index(), nth = thread_count();
        int c0 = (int)((long)hd * tid / nth), c1 = (int)((long)hd * (tid + 1) / nth);
        for (int row = 0; row < rows; row++) {
            const real *xr = x + (size_t)row * hd, *dy = dout + (size_t)row * hd;
            real m = mean[row], r = rstd[row];
            if (ln) {
#pragma omp simd
                for (int i = c0; i < c1; i++) {
                    dw[i] += dy[i] * ((xr[i] - m) * r);
                    db[i] += dy[i];
                }
            } else {
#pragma omp simd
                for (int i = c0; i < c1; i++) dw[i] += dy[i] * (xr[i] * r);
            }
        }
    }
    // dn_i = dy_i w_i; a = mean(dn) (LayerNorm, else 0), c = mean(dn * n), QN_ROWS rows at a time
    int blocks = (rows + QN_ROWS - 1) / QN_ROWS;
    double inv_hd = 1.0 / hd;
#pragma omp parallel for schedule(static) if (par_worth((double)N * C * 8))
    for (int blk = 0; blk < blocks; blk++) {
        int r0 = blk * QN_ROWS, nr = rows - r0 < QN_ROWS ? rows - r0 : QN_ROWS;
        double sum_dn[QN_ROWS], sum_dn_n[QN_ROWS];
        for (int j = 0; j < nr; j++) {
            size_t at = (size_t)(r0 + j) * hd;
            qn_grad_sums(dout + at, w, x + at, mean[r0 + j], rstd[r0 + j], hd, &sum_dn[j],
                         &sum_dn_n[j]);
        }
        for (int j = 0; j < nr; j++) {
            size_t at = (size_t)(r0 + j) * hd;
            const real *xr = x + at, *dy = dout + at;
            real *dxr = dx + at;
            real m = mean[r0 + j], r = rstd[r0 + j];
            real a = ln ? (real)(sum_dn[j] * inv_hd) : 0, c = (real)(sum_dn_n[j] * inv_hd);
#pragma omp simd
            for (int i = 0; i < hd; i++) dxr[i] = r * (dy[i] * w[i] - a - ((xr[i] - m) * r) * c);
        }
    }
}
