// attention.h: multi-head self-attention, forward and backward, in two implementations with one
// interface:
//   attention.c       the definition: plain loops, one per equation of the lesson (start here);
//   kernels/attention_engine.c  the engine: the same function, tiled and vectorised, for training
//   speed.
// The tests prove the two equal. The statistics of the weights P and of the gradient that
// survives the softmax are computed by the definition only (attention_stats.c).
#ifndef ATTENTION_H
#define ATTENTION_H

#include "base/common.h"

// ---- what is computed ----
// The causal mask and the softmax axis of the correct model, and the classic mistakes.
typedef enum {
    ATTN_MASK_CAUSAL = 0,  // S[t][u] = -inf for u > t: a position never sees the future
    ATTN_MASK_ZERO = 1,    // the mistake: S[t][u] = 0 for u > t, so the future keeps some weight
    ATTN_MASK_NONE = 2,    // no mask: every position sees the whole window
} AttnMask;
typedef enum {
    SOFTMAX_OVER_KEYS = 0,     // each query's row of weights sums to 1
    SOFTMAX_OVER_QUERIES = 1,  // the mistake: each key's column is normalised over the queries
} SoftmaxAxis;
typedef struct {
    real scale;  // multiplies Q K^T: 1/sqrt(head_dim) by default
    AttnMask mask;
    SoftmaxAxis axis;
    int window;  // 0: every earlier key; W > 0: query t sees only keys t-W+1 .. t (causal mask
                 // only)
    // Attention knockout (teach/explain.c): NULL, or (B,NH,T) key indices, one per row: S[t][u]
    // = -inf for u = knockout[(b*NH + h)*T + t] (-1: none), then the softmax renormalises the
    // rest. A row left with no key gets P = 0 (its output is 0). Only the definition computes it.
    const int *knockout;
} AttnSpec;

// ---- statistics, summed over the batch (zero them first); see attention_stats.c ----
// Per (layer, head), the sums from which attention.csv's columns are computed.
typedef struct {
    double rows;          // rows counted: those that see at least two keys
    double entropy;       // sum of row entropies (nats)
    double entropy_norm;  // sum of entropy / ln(visible keys)
    double max_weight;    // sum of row max weights
    double rows_gt_090;   // rows whose max weight > 0.9
    double rows_gt_099;   // rows whose max weight > 0.99
    double future_mass;   // sum over rows of the weight on positions after the query's own
    double score_n, score_sum, score_sumsq, score_absmax;  // over the visible scaled scores S
    // the largest S the mask keeps (signed; meaningful once score_rows > 0), and over every row
    // (a row that sees one key included) the count and the sum of the row's largest kept S
    double score_max, score_rows, score_rowmax_sum;
    double ds_sumsq, dp_sumsq;  // ||dL/dS||^2 and ||dL/dP||^2 over the head (all rows)
} AttnStats;

// ---- the interface both implementations share ----
// The shape of a call: B sequences of T positions, C channels split into NH heads of hd = C/NH
// columns each (head h in columns [h*hd, (h+1)*hd) of every row).
typedef struct {
    int B, T, C, NH;
} AttnShape;
// The heads' queries, keys and values, each (B,T,C).
typedef struct {
    const real *q, *k, *v;
} AttnQKV;
// Their gradients dL/dq, dL/dk, dL/dv, each (B,T,C).
typedef struct {
    real *dq, *dk, *dv;
} AttnGradQKV;
// out (B,T,C) receives O = P V; saved receives what the backward needs besides out and the
// inputs: the definition keeps the weights P (B,NH,T,T), the engine each row's log-sum-exp
// L = log sum_u exp(S[t][u]) as its parts m = max_u S[t][u] and 1 / l, l = sum_u exp(S[t][u] - m)
// (B,NH,T,2), from which its backward recomputes P. scratch holds the
// implementation's scratch_reals(T, hd) reals for each thread (thread_max() threads).
// stats (NH entries, may be NULL) receives the statistics of S and P, summed over the batch.
typedef void AttentionForwardFn(real *out, real *saved, real *scratch, AttnQKV in, AttnShape shape,
                                const AttnSpec *spec, AttnStats *stats);
// grad receives dq, dk, dv given dout = dL/dO (B,T,C) and the forward's out, saved and inputs:
// added on (GRAD_ADD) or stored (GRAD_STORE). stats (may be NULL) receives ||dS||^2 and ||dP||^2
// per head; row_gain (B,NH,T, may be NULL) receives ||dS_row|| / ||dP_row|| of every row that
// sees at least two keys.
typedef void AttentionBackwardFn(AttnGradQKV grad, real *scratch, const real *dout, const real *out,
                                 const real *saved, AttnQKV in, AttnShape shape,
                                 const AttnSpec *spec, AttnStats *stats, real *row_gain,
                                 GradWrite write);
// One new position of one sequence during generation (a key/value cache): q (C) is its query;
// k and v (pos+1, C) hold the keys and values of the pos+1 positions it sees, oldest first and
// itself last (every earlier position, or under a window of W the last min(pos+1, W)); out (C)
// receives its row of O = P V; scores holds attention_decode_scratch_reals(T) reals for rows of up
// to T keys. Bit for bit the last row of the same implementation's forward over those positions
// (causal mask, softmax over keys, spec's scale and window).
typedef void AttentionDecodeFn(real *out, real *scores, const real *q, const real *k, const real *v,
                               int pos, int C, int NH, const AttnSpec *spec);
// QK-norm (model.qk_norm): each head's query and key vectors normalised over the head's hd
// columns after the projections and before the scores, with a learned gain (and, for LayerNorm,
// a bias) per head column, shared by the heads. NONE leaves q and k as the projections made them.
typedef enum { QK_NORM_NONE = 0, QK_NORM_LAYERNORM = 1, QK_NORM_RMSNORM = 2 } QkNorm;
#define QK_NORM_EPS 1e-5
// The normalisation of the N*NH head rows of x (N,C) (row n, head h: columns h*hd .. h*hd+hd-1),
// into out (N,C): mean and rstd (N,NH) receive each row's mean (0 under RMSNorm) and 1/sqrt(var +
// eps) (of mean(x^2) + eps under RMSNorm); w and b (hd) are the gain and bias (b unused, may be
// NULL, under RMSNorm).
typedef struct {
    int N, C, NH;  // N rows of C channels, NH heads of hd = C / NH columns
    QkNorm kind;
} QkNormShape;
typedef void QkNormForwardFn(real *out, real *mean, real *rstd, const real *x, const real *w,
                             const real *b, QkNormShape shape);
// Its backward given dout = dL/dout (N,C): dx (N,C; may be dout itself: the gradient turned into
// the input's in place) is stored, dw and db (hd; db unused under RMSNorm) are added onto.
typedef void QkNormBackwardFn(real *dx, real *dw, real *db, const real *dout, const real *x,
                              const real *w, const real *mean, const real *rstd, QkNormShape shape);
typedef struct {
    const char *name;
    AttentionForwardFn *forward;
    AttentionBackwardFn *backward;
    // whether it computes this spec (the engine: the causal mask over keys only) and the statistics
    int (*supports)(const AttnSpec *spec);
    int has_stats;
    AttentionDecodeFn *decode;  // generation's step, matching this forward's rows
    // reals of `saved` for a call of this shape, and of scratch per thread for T positions and
    // heads of hd
    size_t (*saved_reals)(AttnShape shape);
    size_t (*scratch_reals)(int T, int hd);
    QkNormForwardFn *qk_norm_forward;  // QK-norm's pair, the same function in both implementations
    QkNormBackwardFn *qk_norm_backward;
} AttentionImpl;

extern const AttentionImpl attention_definition;  // attention.c
extern const AttentionImpl attention_engine;      // kernels/attention_engine.c

// Reals of scratch per thread that either implementation needs for T positions, heads of hd.
size_t attention_scratch_size(int T, int hd);
// The definition's (attention.c): it saves P (B,NH,T,T); its scratch holds S, then dP and dS,
// each (T,T), and a row of hd.
size_t attention_definition_saved_reals(AttnShape shape);
size_t attention_definition_scratch_reals(int T, int hd);

// ---- the definition (attention.c) ----
AttentionForwardFn attention_forward;
AttentionBackwardFn attention_backward;
AttentionDecodeFn attention_decode;
// p = softmax(s) over n entries, the maximum subtracted first (exp never overflows).
void softmax_forward(real *p, const real *s, int n);
// ds = p * (dp - sum_j dp_j p_j): the vector-Jacobian product of softmax, O(n), never the n x n
// Jacobian J = diag(p) - p p^T.
void softmax_backward(real *ds, const real *dp, const real *p, int n);

// QK-norm, the definition: one plain loop per equation (see attention.c)
QkNormForwardFn qk_norm_forward;
QkNormBackwardFn qk_norm_backward;

// ---- the engine (kernels/attention_engine.c) ----
AttentionForwardFn attention_engine_forward;
AttentionBackwardFn attention_engine_backward;
AttentionDecodeFn attention_decode_step;
// QK-norm in the engine: kernels/qk_norm_engine.c
QkNormForwardFn qk_norm_engine_forward;
QkNormBackwardFn qk_norm_engine_backward;
// Reals of `scores` that either implementation's decode step needs for rows of up to T keys.
size_t attention_decode_scratch_reals(int T);

// ---- statistics (attention_stats.c) ----
// Statistics of one row of weights p over n visible keys (n >= 2): entropy (nats) and max.
void attention_row_stats(const real *p, int n, double *entropy, double *max_weight);
// Add one head's forward statistics: scores S and weights P are (T,T), over the keys the mask
// leaves.
void attention_stats_forward(AttnStats *st, const real *scores, const real *weights, int T,
                             const AttnSpec *spec);
// Add one head's backward statistics from dP and dS (T,T); row_gain (T, may be NULL) per row.
void attention_stats_backward(AttnStats *st, real *row_gain, const real *dweights,
                              const real *dscores, int T, const AttnSpec *spec);
// ---- the mask, the one test of which keys a query sees (the definition, the statistics and the
// engine all ask it) ----
// The first key query t sees: t - W + 1 under a window of W with the causal mask (0 if that is
// negative), else 0.
static inline int attention_first_key(const AttnSpec *spec, int t) {
    return spec->mask == ATTN_MASK_CAUSAL && spec->window > 0 && t - spec->window + 1 > 0
               ? t - spec->window + 1
               : 0;
}
// Whether S[t][u] is replaced by the mask (-inf, or 0 for the "zero" mistake): the entries above
// the diagonal unless there is no mask, and under a window the keys before attention_first_key.
static inline int attention_masked(const AttnSpec *spec, int t, int u) {
    return spec->mask != ATTN_MASK_NONE && (u > t || u < attention_first_key(spec, t));
}
// Whether query t sees key u: every key it is not masked from, and under the "zero" mistake the
// future keys too (their score 0 keeps some weight).
static inline int attention_visible(const AttnSpec *spec, int t, int u) {
    return spec->mask != ATTN_MASK_CAUSAL || !attention_masked(spec, t, u);
}
// Keys query t sees, from attention_first_key on: t + 1 under the causal mask (min(t + 1, W) under
// a window of W), T otherwise.
static inline int attention_visible_keys(const AttnSpec *spec, int t, int T) {
    return spec->mask == ATTN_MASK_CAUSAL ? t + 1 - attention_first_key(spec, t) : T;
}

#endif
