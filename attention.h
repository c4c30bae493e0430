// attention.h: causal multi-head self-attention, forward and backward, and the statistics of
// the attention weights P and of the gradient that survives the softmax.
#ifndef ATTENTION_H
#define ATTENTION_H

#include "common.h"

// ---- the softmax on its own (used by attention and by ./lab) ----
// p = softmax(s) over n entries, with max-subtraction for stability.
void softmax_forward(real *p, const real *s, int n);
// ds += p * (dp - sum_j dp_j p_j): the vector-Jacobian product of softmax, O(n) instead of the
// O(n^2) product with the Jacobian J = diag(p) - p p^T.
void softmax_backward(real *ds, const real *dp, const real *p, int n);

// Test-only switch: when set, attention and softmax backward drop the "- rowsum(dP * P)" term, so
// gradient checks can prove that they catch a wrong backward. Never set in normal use.
extern int g_attention_break_backward;

// ---- statistics gathered while the passes run (accumulated, so zero them first) ----
// Per (layer, head), the sums from which attention.csv's columns are computed.
typedef struct {
    double rows;              // causal rows counted (row 0, with one key, is left out)
    double entropy;           // sum of row entropies (nats)
    double entropy_norm;      // sum of entropy / ln(visible keys)
    double max_weight;        // sum of row max weights
    double rows_gt_090;       // rows whose max weight > 0.9
    double rows_gt_099;       // rows whose max weight > 0.99
    double score_n, score_sum, score_sumsq, score_absmax;  // over unmasked scaled scores S
    double ds_sumsq, dp_sumsq;  // ||dL/dS||^2 and ||dL/dP||^2 over the head (all rows)
} AttnStats;

// ---- the attention core: P = softmax(mask(Q K^T * scale)), out = P V ----
// q, k, v are (B,T,C) with head h in columns [h*hd, (h+1)*hd); att is (B,NH,T,T) and keeps P
// (entries above the diagonal are exactly 0); out is (B,T,C). scratch holds
// attention_scratch_size(T, hd) reals per thread (thread_max() threads).
// stats (NH entries, may be NULL) receives the statistics of S and P, summed over the batch.
void attention_forward(real *out, real *att, real *scratch, const real *q, const real *k, const real *v,
                       int B, int T, int C, int NH, real scale, AttnStats *stats);
// dq, dk, dv (B,T,C) += the gradients given dout (B,T,C), or = with write GRAD_STORE. scratch
// as for attention_forward.
// stats (may be NULL) receives ||dS||^2 and ||dP||^2 per head, and
// row_gain (B,NH,T, may be NULL) receives ||dS_row|| / ||dP_row|| for each causal row t >= 1.
void attention_backward(real *dq, real *dk, real *dv, real *scratch, const real *dout,
                        const real *att, const real *q, const real *k, const real *v,
                        int B, int T, int C, int NH, real scale, AttnStats *stats, real *row_gain,
                        GradWrite write);
// Reals of scratch per thread for either pass over T positions with heads of hd columns.
size_t attention_scratch_size(int T, int hd);

// One new position of one sequence during generation: q (C) is the query at position `pos`,
// k_cache and v_cache (pos+1, C) hold the keys and values of positions 0..pos (this one
// included); out (C) receives P V for that row; scores holds pos+1 reals of scratch.
void attention_decode_step(real *out, real *scores, const real *q, const real *k_cache, const real *v_cache,
                           int pos, int C, int NH, real scale);

// Statistics of one row of weights p over n visible keys (n >= 2): entropy (nats) and max.
void attention_row_stats(const real *p, int n, double *entropy, double *max_weight);

#endif
