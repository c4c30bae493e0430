// teach/lab_core.h: the computations behind ./lab, kept out of lab.c (a thin command line) so the
// tests can call them: attention on small explicit matrices, the NumPy-seeded exercise, the softmax
// Jacobian and its vector-Jacobian product, and the whole-model gradient check.
//
// Everything is computed with `real` and with attention.c's own functions (softmax_forward,
// softmax_backward, attention_forward, attention_row_stats): the definition, which the engine
// (kernels/attention_engine.c) that trains by default is proven equal to. `lab` computes in
// float32 and `lab64` (-DREAL_DOUBLE) the same code in float64.
#ifndef LAB_CORE_H
#define LAB_CORE_H

#include <stdint.h>
#include <stdio.h>

#include "base/common.h"
#include "model.h"

// Limits on the sizes the lab accepts (the command line refuses larger ones with exit code 2).
#define LAB_MAX_T      256   // sequence length of `exercise`
#define LAB_MAX_DK     4096  // key/query width of `exercise`
#define LAB_MAX_SCORES 64    // entries of `softmax --scores`

// ---- attention on explicit matrices: one head, batch 1 ----
// scores (Tq,Tk) = Q K^T, raw (before the scale and the mask);
// weights (Tq,Tk) = softmax(scale * scores) row by row, masked entries exactly 0;
// out (Tq,dk) = weights V (values have the same width dk as the keys).
// Without the mask each row goes through softmax_forward; with causal = 1 the whole thing is
// attention_forward(B=1, NH=1, C=dk), which needs Tq == Tk. Returns 0 (nothing written) when
// causal is asked with Tq != Tk, else 1.
int lab_attention(real *out, real *weights, real *scores, const real *Q, int Tq, const real *K,
                  const real *V, int Tk, int dk, real scale, int causal);

// ---- its backward on explicit matrices: one head, batch 1, Tq == Tk == T ----
// Given P (T,T) from lab_attention (same scale and mask) and dout = dL/dO (T,dk):
//   dV (T,dk) = P^T dO;  dP (T,T) = dO V^T (every entry, the masked ones too);
//   dS (T,T) = P * (dP - rowsum(dP * P)): softmax_backward row by row over the keys the row
//     sees, 0 where masked; rowsum (T) = sum_u dP[t][u] P[t][u] (the term it subtracts);
//   dQ (T,dk) = scale * dS K;  dK (T,dk) = scale * dS^T Q.
// With causal = 1, dQ, dK and dV come from the definition's attention_backward (B = 1, NH = 1,
// C = dk); without the mask from the products above (as lab_attention's forward).
// g's buffers (see LabBackward) receive dQ, dK, dV, dP, dS and rowsum.
typedef struct {
    real *dQ, *dK, *dV, *dP, *dS;  // (T,dk), (T,dk), (T,dk), (T,T), (T,T)
    double *rowsum;                // (T)
} LabBackward;
void lab_attention_backward(LabBackward *g, const real *dout, const real *P, const real *Q,
                            const real *K, const real *V, int T, int dk, real scale, int causal);

// Buffers of its own for T positions of width dk.
void lab_backward_alloc(LabBackward *g, int T, int dk);
void lab_backward_free(LabBackward *g);

// ---- the exercise: Q, K, V (and dO) from np.random.seed(seed); np.random.randn(T, dk) x 3 (x 4)
// ----
typedef struct {
    int T, dk, causal;
    uint32_t seed;
    real *Q, *K, *V;                            // (T,dk) each, drawn in that order
    real *scores;                               // (T,T) raw Q K^T (before scale and mask)
    real *weights_scaled, *weights_unscaled;    // (T,T) with scale 1/sqrt(dk) and 1
    real *out_scaled, *out_unscaled;            // (T,dk)
    double *rowmax_scaled, *rowmax_unscaled;    // (T) max weight of each row
    double *entropy_scaled, *entropy_unscaled;  // (T) entropy of each row, nats
    // The backward of each for an upstream gradient dL/dO = dout (T,dk), drawn after V:
    // dO = np.random.randn(T, dk).
    real *dout;
    LabBackward grad_scaled, grad_unscaled;
    // Means over the rows that see at least two keys (all rows without the mask, rows t >= 1
    // with it; a row with one key has weight 1 whatever the scale). stat_rows = their count.
    int stat_rows;
    double mean_max_scaled, mean_max_unscaled, mean_entropy_scaled, mean_entropy_unscaled;
} LabExercise;

// Fill out[0..n) with successive np.random.randn() values from r.
void lab_randn(real *out, size_t n, NumpyRng *r);
// Allocate and compute everything; 1 <= T <= LAB_MAX_T, 1 <= dk <= LAB_MAX_DK (else returns 0).
int lab_exercise_run(LabExercise *e, uint32_t seed, int T, int dk, int causal);
void lab_exercise_free(LabExercise *e);

// ---- the common mistakes, on the T = 3 worked example ----
// Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2, computed five ways by
// attention_forward: correct (scaled, causal -inf mask, softmax over keys), without the scale,
// masking with 0 instead of -inf, the softmax over the queries (columns) instead of the keys, and
// no mask at all.
#define LAB_MISTAKES 5
typedef struct {
    const char *name;  // "correct", "no scale", "mask with 0", "softmax over queries", "no mask"
    const char *what;  // one line: what this case changes
    AttnSpec spec;
    real weights[9];  // P (3,3)
    real out[6];      // O = P V (3,2)
    double row_sums[3], col_sums[3];
    double future_weight[3];  // per row: the weight on keys after the query (u > t)
    real scores[9];  // S (3,3) as the softmax takes it: scaled, then masked (-inf, or the mistake's
                     // 0)
    real scores_unmasked[9];  // S (3,3) scaled, before any mask: what the mask replaced
} LabMistake;
void lab_mistakes(LabMistake cases[LAB_MISTAKES]);
extern const real LAB_T3_Q[6], LAB_T3_V[6];

// ---- the online softmax: each row's softmax and P V over blocks of keys (FlashAttention's
// forward) ---- Row t's scores s_u = S[t][u] are read one block of keys at a time, keeping only a
// running maximum m, a running sum l = sum over the keys seen of exp(s_u - m) and the unnormalised
// output o = sum over the keys seen of exp(s_u - m) V[u]. When a block raises the maximum from
// m_old to m_new, every term seen so far must change from exp(s_u - m_old) to exp(s_u - m_new),
// which is the same as multiplying l and o by exp(m_old - m_new) once:
//   m_new = max(m_old, max of the block's s_u)
//   l     = l * exp(m_old - m_new) + sum over the block of exp(s_u - m_new)
//   o     = o * exp(m_old - m_new) + sum over the block of exp(s_u - m_new) V[u]
// (before the first block m = -inf and l = o = 0, so the factor is exp(-inf) = 0). At the end
// P[t][u] = exp(s_u - m) / l, O[t] = o / l and L = m + ln l, the log-sum-exp the fused backward
// keeps instead of P. No mask: every row sees every key.
#define LAB_ONLINE_MAX_T  8  // the T = 3 example and the exercise's T = 5
#define LAB_ONLINE_MAX_DK 8
typedef struct {
    const char *group;           // "t3" or "exercise": the JSON group and the page's sequence
    int T, dk, block, n_blocks;  // block: keys per block (the last block may hold fewer)
    real scale;
    real Q[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_DK], K[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_DK],
        V[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_DK];
    real S[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_T];  // scale * Q K^T, as attention_forward computes it
    real P[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_T];  // attention_forward's softmax (no mask)
    real O[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_DK];  // and its P V
    // row t after block j: the maximum before and after, the block's own maximum, the factor
    // exp(m_old - m_new), l before, the block's sum of exp(s_u - m_new), l after
    real m_old[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T], block_max[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T];
    real m_new[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T], rescale[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T];
    real l_old[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T], block_sum[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T];
    real l_new[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T];
    real o[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_DK];  // [j]: o (T,dk) after block j
    real P_online[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_T],
        O_online[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_DK];
    real L[LAB_ONLINE_MAX_T];  // m + ln l of each row
    double P_diff[LAB_ONLINE_MAX_T],
        O_diff[LAB_ONLINE_MAX_T];  // per row: max |online - attention_forward|
    double max_P_diff, max_O_diff;
    // The mistake of forgetting the rescaling: l and o summed as the blocks come, each block's
    // terms relative to its own m_new and the earlier ones left relative to older maxima.
    real l_plain[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T];  // [j][t] after block j
    real o_plain[LAB_ONLINE_MAX_T][LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_DK];
    real P_plain[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_T],
        O_plain[LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_DK];
    double
        plain_rowsum[LAB_ONLINE_MAX_T];  // sum_u P_plain[t][u]: 1 only where the maximum never grew
    double O_plain_diff[LAB_ONLINE_MAX_T];  // per row: max |O_plain - attention_forward's O|
    double max_O_plain_diff;
} LabOnline;
// Compute it all for Q, K, V (T,dk) with T, dk <= LAB_ONLINE_MAX_*, blocks of `block` >= 1 keys.
// Returns 0 (nothing computed) on sizes out of range.
int lab_online_softmax(LabOnline *o, const char *group, const real *Q, const real *K, const real *V,
                       int T, int dk, real scale, int block);
// The lesson's two: the T = 3 example (Q = K = LAB_T3_Q, V = LAB_T3_V, scaled by 1/sqrt(2)) and the
// exercise's default draw (np.random.seed(0), T = 5, d_k = 8, scaled by 1/sqrt(8)).
#define LAB_ONLINE_PROBLEMS 2
int lab_online_lesson(LabOnline out[LAB_ONLINE_PROBLEMS], int block);

// ---- the softmax on its own ----
// J (n,n) = diag(p) - p p^T, the Jacobian dp_i/ds_j of p = softmax(s).
void lab_softmax_jacobian(real *J, const real *p, int n);
// p = softmax(s) and ds = the VJP of `upstream` (dL/dp) through it, from softmax_backward().
void lab_softmax_vjp(real *ds, real *p, const real *s, const real *upstream, int n);
// The same VJP by central differences of f(s) = upstream . softmax(s):
// ds_i = (f(s + h e_i) - f(s - h e_i)) / (2h), with the step h actually representable in `real`.
void lab_softmax_vjp_fd(double *ds, const real *s, const real *upstream, int n, double h);
// Step for lab_softmax_vjp_fd: 1e-6 in float64, 1e-3 in float32.
double lab_softmax_fd_step(void);

// One row of the saturation table: the scores multiplied by `factor`.
typedef struct {
    double factor;
    double max_p;     // largest weight
    double entropy;   // nats
    double jac_frob;  // ||diag(p) - p p^T||_F
    double vjp_norm;  // ||softmax_backward(upstream)||_2
} LabSoftmaxScale;
void lab_softmax_scale_row(LabSoftmaxScale *row, const real *s, const real *upstream, int n,
                           double factor);

// ---- the whole-model gradient check ----
// One row per parameter tensor. For the checked elements i of a tensor, with a_i = analytic
// (gpt_backward) and n_i = numeric (sixth-order central difference of the mean cross-entropy
// returned by gpt_forward, step gradcheck_step()):
//   abs_err = max_i |a_i - n_i|
//   rel_err = abs_err / max_i max(|a_i|, |n_i|)
// i.e. the worst disagreement relative to the tensor's own gradient scale. This is scale-free
// (a tensor whose gradients are all 1e-5, like wq under the gpt2 init, is judged as strictly as
// one whose gradients are 1), is not fooled by single elements whose gradient is ~0, and still
// fails a backward that drops or distorts a term (rel_err is then O(1)).
// The tensor passes when rel_err <= gradcheck_tolerance(). Finite differences cannot see a
// gradient buried in round-off: the loss is known to about eps * |L| (eps of `real`), so the
// difference quotient carries noise of about eps * |L| / h. A tensor whose largest |a_i| and
// |n_i| are both below GRADCHECK_RESOLUTION times that noise is reported as too small to check
// (never in float64 for the models here; in float32, wq/wk and LayerNorm under the gpt2 init).
#define GRADCHECK_RESOLUTION 100.0

enum { GRADCHECK_PASS = 0, GRADCHECK_FAIL = 1, GRADCHECK_TOO_SMALL = 2 };

typedef struct {
    char name[TENSOR_NAME_MAX];
    size_t size;         // elements in the tensor
    size_t checked;      // elements compared (all, or a seeded sample of max_per_tensor)
    double max_grad;     // max |a_i| over the checked elements
    double max_abs_err;  // max |a_i - n_i|
    double rel_err;      // max_abs_err / max(|a_i|, |n_i|); 0 when both are all zero
    double noise;        // eps * |L| / h: the finite-difference noise level
    int status;          // GRADCHECK_PASS, _FAIL or _TOO_SMALL
} GradcheckRow;

// Central-difference step: 2e-3 in float64, 1e-2 in float32 (where the check is only rough).
double gradcheck_step(void);
// Pass threshold on rel_err: 1e-6 in float64; 5e-2 in float32.
double gradcheck_tolerance(void);

// Compare gpt_backward's gradient of the mean cross-entropy on (x, y) of shape (B,T) with finite
// differences, for every element of every tensor when max_per_tensor <= 0 or the tensor is that
// small, else for max_per_tensor distinct elements drawn with `seed`. Parameters are restored bit
// for bit and m->grads is left holding the analytic gradient. rows has m->n_tensors entries.
// Returns the number of failing tensors (too-small ones are not failures).
// The attention the gradient check's --break-backward trains: the definition's forward, and its
// backward with the classic mistake of dropping the softmax VJP's "- rowsum(dP * P)" term, so
// that dS = P * dP. (Causal mask, softmax over keys.) Build the model with it (AttnSetup.impl).
extern const AttentionImpl lab_broken_attention;

int gradcheck_model(GPT *m, const int *x, const int *y, int B, int T, int max_per_tensor,
                    uint64_t seed, GradcheckRow *rows);
// The table (one line per tensor) and a verdict line. Returns the number of failing rows.
int gradcheck_print(FILE *f, const GradcheckRow *rows, int n);

// The built-in setting of `./lab gradcheck` without a config: vocab 7, block 6, 2 layers, 2 heads,
// n_embd 8; batch 2.
#define GRADCHECK_TINY_VOCAB 7
#define GRADCHECK_TINY_BATCH 2
void gradcheck_tiny_dims(ModelDims *d);
// A fixed random token stream: B rows of T+1 tokens in [0, V) drawn with rng_seed(seed);
// x = the first T, y = the last T of each row.
void gradcheck_tokens(int *x, int *y, int B, int T, int V, uint64_t seed);

#endif
