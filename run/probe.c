// run/probe.c: the attention probe: a forward and backward with the statistics on
// (attention_stats.c computes them in the definition), turned into each head's entropy, max
// weight, score spread, the gradient norms of its layer's matrices, ||dS|| / ||dP|| and the
// median row gain, and their averages over the heads.
#include "run/probe.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"  // AttnStats, the keys a row sees

static int cmp_real(const void *a, const void *b) {
    real x = *(const real *)a, y = *(const real *)b;
    return (x > y) - (x < y);
}

static double slice_norm(const real *g, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];
    return sqrt(s);
}

// The per-head statistics averaged over all layers and heads (score_absmax and max_logit: the
// max over them)
static const size_t HEAD_MEAN_FIELDS[] = {
    offsetof(HeadStats, entropy),         offsetof(HeadStats, entropy_norm),
    offsetof(HeadStats, max_weight),      offsetof(HeadStats, frac_gt_090),
    offsetof(HeadStats, frac_gt_099),     offsetof(HeadStats, future_mass),
    offsetof(HeadStats, score_std),       offsetof(HeadStats, gnorm_wq),
    offsetof(HeadStats, gnorm_wk),        offsetof(HeadStats, gnorm_wv),
    offsetof(HeadStats, gnorm_wo),        offsetof(HeadStats, ds_over_dp),
    offsetof(HeadStats, row_gain_median), offsetof(HeadStats, mean_max_logit),
};
static double *head_field(HeadStats *h, size_t offset) {
    return (double *)(void *)((char *)h + offset);
}

void attention_probe(GPT *m, const int *x, const int *y, int B, int T, HeadStats *per_head,
                     HeadStats *mean) {
    int L = m->dims.n_layer, NH = m->dims.n_head, C = m->dims.n_embd;
    size_t N = (size_t)B * T, CC = (size_t)C * C;
    m->collect_stats = 1;
    double loss = gpt_forward(m, x, y, B, T);
    gpt_backward(m);
    m->collect_stats = 0;
    // the rows that see at least two keys: t >= 1 under the causal mask (none under a window of
    // 1), all of them otherwise
    real *gains = xmalloc(N * sizeof(real), "row gains");
    HeadStats sum;
    memset(&sum, 0, sizeof sum);
    sum.max_logit = -INFINITY;
    for (int l = 0; l < L; l++) {
        const LayerParams *g = &m->g.layers[l];
        double gq = slice_norm(g->wq, CC), gk = slice_norm(g->wk, CC), gv = slice_norm(g->wv, CC),
               go = slice_norm(g->wo, CC);
        for (int h = 0; h < NH; h++) {
            const AttnStats *s = &m->attn_stats[l * NH + h];
            HeadStats hs;
            double rows = s->rows > 0 ? s->rows : NAN;  // T = 1 has no row with two keys
            hs.entropy = s->entropy / rows;
            hs.entropy_norm = s->entropy_norm / rows;
            hs.max_weight = s->max_weight / rows;
            hs.frac_gt_090 = s->rows_gt_090 / rows;
            hs.frac_gt_099 = s->rows_gt_099 / rows;
            hs.future_mass = s->future_mass / rows;
            double mu = s->score_sum / s->score_n;
            double var = s->score_sumsq / s->score_n - mu * mu;
            hs.score_std = sqrt(var > 0 ? var : 0);
            hs.score_absmax = s->score_absmax;
            hs.max_logit = s->score_rows > 0 ? s->score_max : NAN;
            hs.mean_max_logit = s->score_rows > 0 ? s->score_rowmax_sum / s->score_rows : NAN;
            hs.gnorm_wq = gq;
            hs.gnorm_wk = gk;
            hs.gnorm_wv = gv;
            hs.gnorm_wo = go;
            hs.ds_over_dp = s->dp_sumsq > 0 ? sqrt(s->ds_sumsq / s->dp_sumsq) : NAN;
            // median over those rows of every sequence in the batch
            size_t n = 0;
            for (int b = 0; b < B; b++)
                for (int t = 0; t < T; t++)
                    if (attention_visible_keys(&m->attn, t, T) >= 2)
                        gains[n++] = m->row_gain[(size_t)l * N * NH + ((size_t)b * NH + h) * T + t];
            qsort(gains, n, sizeof(real), cmp_real);
            hs.row_gain_median = n == 0  ? NAN
                                 : n % 2 ? gains[n / 2]
                                         : 0.5 * ((double)gains[n / 2 - 1] + gains[n / 2]);
            hs.loss = loss;
            if (per_head) per_head[l * NH + h] = hs;
            for (size_t f = 0; f < sizeof HEAD_MEAN_FIELDS / sizeof HEAD_MEAN_FIELDS[0]; f++)
                *head_field(&sum, HEAD_MEAN_FIELDS[f]) += *head_field(&hs, HEAD_MEAN_FIELDS[f]);
            if (hs.score_absmax > sum.score_absmax) sum.score_absmax = hs.score_absmax;
            if (hs.max_logit > sum.max_logit) sum.max_logit = hs.max_logit;
        }
    }
    if (mean) {
        *mean = sum;  // score_absmax and max_logit: the max over all heads, not a mean
        for (size_t f = 0; f < sizeof HEAD_MEAN_FIELDS / sizeof HEAD_MEAN_FIELDS[0]; f++)
            *head_field(mean, HEAD_MEAN_FIELDS[f]) /= (double)L * NH;
        mean->loss = loss;
    }
    free(gains);
    gpt_zero_grad(m);
}
