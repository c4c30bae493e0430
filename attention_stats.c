// attention_stats.c: what the attention statistics measure (attention.csv, the progress line,
// the --compare reports), computed by the definition (attention.c) from one head's S, P, dP, dS.
//   entropy of a row of weights       H = -sum_u P[t][u] ln P[t][u]   (0 ln 0 = 0)
//   normalised entropy                H / ln(keys the row sees): 1 uniform, 0 one-hot (a window of
//   W
//                                     keys: the row sees min(t + 1, W))
//   max weight                        max_u P[t][u], and whether it exceeds 0.9 and 0.99
//   future mass                       sum_{u>t} P[t][u]: 0 for a correct causal model
//   score spread                      mean, std and max |S| of the scores the mask keeps
//   max logit                         max_{t,u} S[t][u] over the kept scores (signed), and the mean
//                                     over rows t of max_u S[t][u]: every row counts, a row that
//                                     sees one key too (its one score is still a logit)
//   gradient through the softmax      ||dS|| / ||dP|| per head, and per row (the row gain)
// Rows that see a single key are left out of the row statistics: their weight is 1 whatever
// the scores.
#include "attention.h"

#include <math.h>

void attention_row_stats(const real *p, int n, double *entropy, double *max_weight) {
    double h = 0.0, m = 0.0;
    for (int i = 0; i < n; i++) {
        double pi = p[i];
        if (pi > 0.0) h -= pi * log(pi);
        if (pi > m) m = pi;
    }
    *entropy = h;
    *max_weight = m;
}

// scores and weights are (T,T): S after the mask, and P
void attention_stats_forward(AttnStats *st, const real *scores, const real *weights, int T,
                             const AttnSpec *spec) {
    for (int t = 0; t < T; t++) {
        // the scores computed from Q K^T: the ones the mask did not replace (key t always among
        // them, so every row has a largest one)
        double row_max = -INFINITY;
        for (int u = 0; u < T; u++) {
            if (attention_masked(spec, t, u)) continue;
            double x = scores[t * T + u];
            st->score_n += 1;
            st->score_sum += x;
            st->score_sumsq += x * x;
            if (fabs(x) > st->score_absmax) st->score_absmax = fabs(x);
            if (x > row_max) row_max = x;
        }
        if (st->score_rows == 0 || row_max > st->score_max) st->score_max = row_max;
        st->score_rows += 1;
        st->score_rowmax_sum += row_max;
        int n = attention_visible_keys(spec, t, T);
        if (n < 2) continue;
        double h, m, future = 0.0;
        attention_row_stats(weights + (size_t)t * T + attention_first_key(spec, t), n, &h, &m);
        for (int u = t + 1; u < T; u++) future += weights[t * T + u];
        st->rows += 1;
        st->entropy += h;
        st->entropy_norm += h / log((double)n);
        st->max_weight += m;
        if (m > 0.9) st->rows_gt_090 += 1;
        if (m > 0.99) st->rows_gt_099 += 1;
        st->future_mass += future;
    }
}

// dweights (dP) and dscores (dS) are (T,T); row_gain is (T)
void attention_stats_backward(AttnStats *st, real *row_gain, const real *dweights,
                              const real *dscores, int T, const AttnSpec *spec) {
    for (int t = 0; t < T; t++) {
        double ds2 = 0.0, dp2 = 0.0;
        for (int u = 0; u < T; u++) {
            if (!attention_visible(spec, t, u)) continue;
            ds2 += (double)dscores[t * T + u] * dscores[t * T + u];
            dp2 += (double)dweights[t * T + u] * dweights[t * T + u];
        }
        if (st) {
            st->ds_sumsq += ds2;
            st->dp_sumsq += dp2;
        }
        if (row_gain) row_gain[t] = dp2 > 0 ? (real)sqrt(ds2 / dp2) : 0;
    }
}
