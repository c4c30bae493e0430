// attention.c: causal multi-head self-attention, the part of the model this project is about.
//
// For one head, with Q, K, V of shape (T, hd) taken from the head's columns of q, k, v:
//   S = Q K^T * scale                      (scores; scale = 1/sqrt(hd) by default)
//   S[t][u] = -inf for u > t                (causal mask: a position never sees the future)
//   P = softmax(S) row by row               (weights; masked entries come out exactly 0)
//   O = P V                                 (out)
// and backward, given dO:
//   dV = P^T dO,  dP = dO V^T,
//   dS = P * (dP - rowsum(dP * P))          (softmax VJP, O(T) per row, never the T x T Jacobian)
//   dQ = scale * dS K,  dK = scale * dS^T Q.
// The projections X -> Q, K, V and O -> out (Wq, Wk, Wv, Wo) are ordinary linear layers, applied
// in model.c with matmul_forward/matmul_backward; this file holds everything between them.
#include "attention.h"

#include "fastmath.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int g_attention_break_backward = 0;

void softmax_forward(real *p, const real *s, int n) {
    real maxv = s[0];
    for (int i = 1; i < n; i++) if (s[i] > maxv) maxv = s[i];
    // subtracting the max keeps exp() from overflowing and does not change the result
    real sum = 0;
#pragma omp simd reduction(+:sum)
    for (int i = 0; i < n; i++) { p[i] = fast_exp(s[i] - maxv); sum += p[i]; }
    real inv = 1 / sum;
    for (int i = 0; i < n; i++) p[i] *= inv;
}

void softmax_backward(real *ds, const real *dp, const real *p, int n) {
    // dS_i = sum_j J_ji dP_j with J = diag(p) - p p^T, i.e. p_i * (dP_i - sum_j dP_j p_j)
    double rowsum = 0.0;
    for (int i = 0; i < n; i++) rowsum += (double)dp[i] * p[i];
    if (g_attention_break_backward) rowsum = 0.0;
    for (int i = 0; i < n; i++) ds[i] += p[i] * (dp[i] - (real)rowsum);
}

void attention_row_stats(const real *p, int n, double *entropy, double *max_weight) {
    double h = 0.0, m = 0.0;
    for (int i = 0; i < n; i++) {
        double pi = p[i];
        if (pi > 0.0) h -= pi * log(pi);  // 0 log 0 = 0
        if (pi > m) m = pi;
    }
    *entropy = h;
    *max_weight = m;
}

static real dot(const real *restrict a, const real *restrict b, int n) {
    real s = 0;
#pragma omp simd reduction(+:s)
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static void axpy(real *restrict y, real alpha, const real *restrict x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] += alpha * x[i];
}

size_t attention_scratch_size(int T) { return (size_t)T; }

// Statistics of one row: its scaled scores S (before the softmax) and its weights P (after).
static void stats_add_scores(AttnStats *st, const real *s, int n) {
    for (int i = 0; i < n; i++) {
        double x = s[i];
        st->score_n += 1;
        st->score_sum += x;
        st->score_sumsq += x * x;
        if (fabs(x) > st->score_absmax) st->score_absmax = fabs(x);
    }
}

static void stats_add_weights(AttnStats *st, const real *p, int n) {
    if (n < 2) return;  // row 0 sees one key: its weight is 1 whatever the scores
    double h, m;
    attention_row_stats(p, n, &h, &m);
    st->rows += 1;
    st->entropy += h;
    st->entropy_norm += h / log((double)n);  // 1 = uniform over the visible keys, 0 = one-hot
    st->max_weight += m;
    if (m > 0.9) st->rows_gt_090 += 1;
    if (m > 0.99) st->rows_gt_099 += 1;
}

static void stats_merge(AttnStats *dst, const AttnStats *src) {
    dst->rows += src->rows;
    dst->entropy += src->entropy;
    dst->entropy_norm += src->entropy_norm;
    dst->max_weight += src->max_weight;
    dst->rows_gt_090 += src->rows_gt_090;
    dst->rows_gt_099 += src->rows_gt_099;
    dst->score_n += src->score_n;
    dst->score_sum += src->score_sum;
    dst->score_sumsq += src->score_sumsq;
    if (src->score_absmax > dst->score_absmax) dst->score_absmax = src->score_absmax;
    dst->ds_sumsq += src->ds_sumsq;
    dst->dp_sumsq += src->dp_sumsq;
}

void attention_forward(real *out, real *att, const real *q, const real *k, const real *v,
                       int B, int T, int C, int NH, real scale, AttnStats *stats) {
    int hd = C / NH;
    // Statistics are gathered per (b, h) in parallel, then summed in a fixed order.
    AttnStats *local = stats ? xcalloc((size_t)B * NH, sizeof(AttnStats), "attention statistics") : NULL;
#pragma omp parallel for collapse(2) schedule(static) if(par_worth((double)B * NH * T * T * (C / NH)))
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const real *qh = q + (size_t)b * T * C + h * hd;
            const real *kh = k + (size_t)b * T * C + h * hd;
            const real *vh = v + (size_t)b * T * C + h * hd;
            real *oh = out + (size_t)b * T * C + h * hd;
            real *ph = att + ((size_t)b * NH + h) * T * T;
            for (int t = 0; t < T; t++) {
                real *prow = ph + (size_t)t * T;
                const real *qt = qh + (size_t)t * C;
                // scores S[t][u] for the visible keys u <= t, written into the row of P
                for (int u = 0; u <= t; u++) prow[u] = dot(qt, kh + (size_t)u * C, hd) * scale;
                if (local) stats_add_scores(&local[b * NH + h], prow, t + 1);
                softmax_forward(prow, prow, t + 1);
                for (int u = t + 1; u < T; u++) prow[u] = 0;  // masked: exactly zero weight
                if (local) stats_add_weights(&local[b * NH + h], prow, t + 1);
                // out[t] = sum_u P[t][u] V[u]
                real *ot = oh + (size_t)t * C;
                for (int i = 0; i < hd; i++) ot[i] = 0;
                for (int u = 0; u <= t; u++) axpy(ot, prow[u], vh + (size_t)u * C, hd);
            }
        }
    }
    if (local) {
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) stats_merge(&stats[h], &local[b * NH + h]);
        free(local);
    }
}

void attention_backward(real *dq, real *dk, real *dv, real *scratch, const real *dout,
                        const real *att, const real *q, const real *k, const real *v,
                        int B, int T, int C, int NH, real scale, AttnStats *stats, real *row_gain) {
    int hd = C / NH;
    AttnStats *local = stats ? xcalloc((size_t)B * NH, sizeof(AttnStats), "attention statistics") : NULL;
#pragma omp parallel if(par_worth((double)B * NH * T * T * (C / NH)))
    {
        int tid = thread_index();
        real *dp = scratch + (size_t)tid * attention_scratch_size(T);
        // every (b, h) writes only its own head's columns of dq, dk, dv: no two threads collide
#pragma omp for collapse(2) schedule(static)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                size_t off = (size_t)b * T * C + h * hd;
                const real *qh = q + off, *kh = k + off, *vh = v + off, *doh = dout + off;
                real *dqh = dq + off, *dkh = dk + off, *dvh = dv + off;
                const real *ph = att + ((size_t)b * NH + h) * T * T;
                for (int t = 0; t < T; t++) {
                    const real *prow = ph + (size_t)t * T;
                    const real *dot_t = doh + (size_t)t * C;
                    // dP[t][u] = dO[t] . V[u] ; dV[u] += P[t][u] dO[t]
                    double rowsum = 0.0;
                    for (int u = 0; u <= t; u++) {
                        dp[u] = dot(dot_t, vh + (size_t)u * C, hd);
                        axpy(dvh + (size_t)u * C, prow[u], dot_t, hd);
                        rowsum += (double)dp[u] * prow[u];
                    }
                    if (g_attention_break_backward) rowsum = 0.0;
                    // dS = P * (dP - rowsum(dP * P)); then dQ[t] += scale dS[t][u] K[u],
                    // dK[u] += scale dS[t][u] Q[t]. Masked entries have P = 0, so dS = 0 there.
                    double ds2 = 0.0, dp2 = 0.0;
                    const real *qt = qh + (size_t)t * C;
                    real *dqt = dqh + (size_t)t * C;
                    for (int u = 0; u <= t; u++) {
                        real ds = prow[u] * (dp[u] - (real)rowsum);
                        ds2 += (double)ds * ds;
                        dp2 += (double)dp[u] * dp[u];
                        axpy(dqt, scale * ds, kh + (size_t)u * C, hd);
                        axpy(dkh + (size_t)u * C, scale * ds, qt, hd);
                    }
                    if (local) {
                        local[b * NH + h].ds_sumsq += ds2;
                        local[b * NH + h].dp_sumsq += dp2;
                    }
                    if (row_gain) row_gain[((size_t)b * NH + h) * T + t] = dp2 > 0 ? (real)sqrt(ds2 / dp2) : 0;
                }
            }
        }
    }
    if (local) {
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) stats_merge(&stats[h], &local[b * NH + h]);
        free(local);
    }
}

void attention_decode_step(real *out, real *scores, const real *q, const real *k_cache, const real *v_cache,
                           int pos, int C, int NH, real scale) {
    int hd = C / NH;
    for (int h = 0; h < NH; h++) {
        const real *qh = q + h * hd;
        // the same arithmetic as row `pos` of attention_forward, so the results agree bit for bit
        for (int u = 0; u <= pos; u++) scores[u] = dot(qh, k_cache + (size_t)u * C + h * hd, hd) * scale;
        softmax_forward(scores, scores, pos + 1);
        real *oh = out + h * hd;
        for (int i = 0; i < hd; i++) oh[i] = 0;
        for (int u = 0; u <= pos; u++) axpy(oh, scores[u], v_cache + (size_t)u * C + h * hd, hd);
    }
}
