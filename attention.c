// attention.c: multi-head self-attention, the definition. Start here.
//
// Each head h of each sequence b attends on its own. Its queries, keys and values Q, K, V are
// (T, hd) matrices: the head's hd columns of q, k, v, so Q[t][i] = q[(b*T + t)*C + h*hd + i].
// Forward:
//   S = Q K^T * scale                  scores (scale = 1/sqrt(hd) unless configured otherwise)
//   S[t][u] = -inf for u > t           the causal mask: a position never sees the future
//   S[t][u] = -inf for u <= t - W      a window of W keys (model.attn_window): nor the distant past
//   P = softmax(S), row by row         weights: each row sums to 1, masked entries are exactly 0
//   O = P V                            the output: each position's mix of the values
// Backward, given dO = dL/dO:
//   dV = P^T dO
//   dP = dO V^T
//   dS = P * (dP - rowsum(dP * P))     the softmax's vector-Jacobian product, row by row
//   dQ = scale * dS K
//   dK = scale * dS^T Q
// With QK-norm (model.qk_norm, below), Q and K are first normalised row by row over the head's hd
// columns, and S is computed from the normalised rows: the scale then acts as a temperature.
// The projections into q, k, v and out of O (Wq, Wk, Wv, Wo) are ordinary linear layers in
// model.c. This file is what the float64 build, ./lab, the attention statistics and the tests
// use; kernels/attention_engine.c computes the same function faster for training, and the tests
// prove the two equal. The mask and the softmax axis can also be set to the classic mistakes
// (AttnSpec).
#include "attention.h"

#include <math.h>

// ---------------------------------------------------------------------------------------------
// the softmax on its own

// p = softmax(s): p_i = exp(s_i - max s) / sum_j exp(s_j - max s)
void softmax_forward(real *p, const real *s, int n) {
    real maxv = s[0];
    for (int i = 1; i < n; i++) maxv = s[i] > maxv ? s[i] : maxv;
    real sum = 0;
    for (int i = 0; i < n; i++) {
        p[i] = real_exp(s[i] - maxv);
        sum += p[i];
    }
    for (int i = 0; i < n; i++) p[i] /= sum;
}

// ds_i = sum_j J_ji dp_j with J = diag(p) - p p^T, which is p_i * (dp_i - sum_j dp_j p_j)
void softmax_backward(real *ds, const real *dp, const real *p, int n) {
    real dot = 0;
    for (int i = 0; i < n; i++) dot += dp[i] * p[i];
    for (int i = 0; i < n; i++) ds[i] = p[i] * (dp[i] - dot);
}

// ---------------------------------------------------------------------------------------------
// one head

// out and the inputs q, k, v are (B,T,C); att is (B,NH,T,T)
void attention_forward(real *out, real *att, real *scratch, AttnQKV in, AttnShape shape,
                       const AttnSpec *spec, AttnStats *stats) {
    int B = shape.B, T = shape.T, C = shape.C, NH = shape.NH, hd = C / NH;
    real *S = scratch;  // the scores (T,T) of the current head
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            // this head's Q[t][i] is Q[t*C + i], and likewise K, V and O (a row of q is C wide)
            const real *Q = in.q + (size_t)b * T * C + h * hd;
            const real *K = in.k + (size_t)b * T * C + h * hd;
            const real *V = in.v + (size_t)b * T * C + h * hd;
            real *O = out + (size_t)b * T * C + h * hd;
            real *P = att + ((size_t)b * NH + h) * T * T;  // the weights: P[t][u] = P[t*T + u]

            // S = Q K^T * scale
            for (int t = 0; t < T; t++)
                for (int u = 0; u < T; u++) {
                    real dot = 0;
                    for (int i = 0; i < hd; i++) dot += Q[t * C + i] * K[u * C + i];
                    S[t * T + u] = dot * spec->scale;
                }

            // causal mask: S[t][u] = -inf for u > t, and for u <= t - W under a window of W (the
            // mistake "zero" writes 0 above the diagonal instead)
            for (int t = 0; t < T; t++)
                for (int u = 0; u < T; u++)
                    if (attention_masked(spec, t, u))
                        S[t * T + u] = spec->mask == ATTN_MASK_ZERO ? 0 : -INFINITY;

            // knockout: one key of each row removed (S = -inf), so the rest renormalise
            if (spec->knockout)
                for (int t = 0; t < T; t++) {
                    int u = spec->knockout[((size_t)b * NH + h) * T + t];
                    if (u >= 0 && u < T) S[t * T + u] = -INFINITY;
                }

            // P = softmax(S) row by row: P[t][u] = exp(S[t][u] - max_u' S[t][u']) / sum_u' exp(...)
            // (the mistake "queries": column by column, P[t][u] normalised over t instead of u)
            if (spec->axis == SOFTMAX_OVER_KEYS) {
                for (int t = 0; t < T; t++) {
                    real maxv = -INFINITY, sum = 0;
                    for (int u = 0; u < T; u++) maxv = S[t * T + u] > maxv ? S[t * T + u] : maxv;
                    if (maxv == -INFINITY) {  // every key knocked out: nothing flows into this row
                        for (int u = 0; u < T; u++) P[t * T + u] = 0;
                        continue;
                    }
                    for (int u = 0; u < T; u++) {
                        P[t * T + u] = real_exp(S[t * T + u] - maxv);
                        sum += P[t * T + u];
                    }
                    for (int u = 0; u < T; u++) P[t * T + u] /= sum;
                }
            } else {
                for (int u = 0; u < T; u++) {
                    real maxv = -INFINITY, sum = 0;
                    for (int t = 0; t < T; t++) maxv = S[t * T + u] > maxv ? S[t * T + u] : maxv;
                    for (int t = 0; t < T; t++) {
                        P[t * T + u] = real_exp(S[t * T + u] - maxv);
                        sum += P[t * T + u];
                    }
                    for (int t = 0; t < T; t++) P[t * T + u] /= sum;
                }
            }

            // O = P V: O[t][i] = sum_u P[t][u] V[u][i], row t of O summing rows u of V
            for (int t = 0; t < T; t++) {
                for (int i = 0; i < hd; i++) O[t * C + i] = 0;
                for (int u = 0; u < T; u++)
                    for (int i = 0; i < hd; i++) O[t * C + i] += P[t * T + u] * V[u * C + i];
            }

            if (stats) attention_stats_forward(&stats[h], S, P, T, spec);
        }
    }
}

// The gradient write of a backward pass: onto what the buffer holds, or over it.
static void write_grad(real *dst, real value, GradWrite write) {
    *dst = write == GRAD_ADD ? *dst + value : value;
}

// the gradients, dout and the inputs are (B,T,C); att is (B,NH,T,T) and holds P from the forward
// (which is all it needs: out, the forward's O, is for the engine's backward)
void attention_backward(AttnGradQKV grad, real *scratch, const real *dout, const real *out,
                        const real *att, AttnQKV in, AttnShape shape, const AttnSpec *spec,
                        AttnStats *stats, real *row_gain, GradWrite write) {
    (void)out;
    int B = shape.B, T = shape.T, C = shape.C, NH = shape.NH, hd = C / NH;
    real *dP = scratch;                  // dL/dP (T,T) of the current head
    real *dS = scratch + (size_t)T * T;  // dL/dS (T,T)
    real *row = dS + (size_t)T * T;      // one row (hd) of a gradient being summed
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const real *Q = in.q + (size_t)b * T * C + h * hd;
            const real *K = in.k + (size_t)b * T * C + h * hd;
            const real *V = in.v + (size_t)b * T * C + h * hd;
            const real *dO = dout + (size_t)b * T * C + h * hd;
            real *dQ = grad.dq + (size_t)b * T * C + h * hd;
            real *dK = grad.dk + (size_t)b * T * C + h * hd;
            real *dV = grad.dv + (size_t)b * T * C + h * hd;
            const real *P = att + ((size_t)b * NH + h) * T * T;

            // dV = P^T dO: dV[u][i] = sum_t P[t][u] dO[t][i], row u of dV summing rows t of dO
            for (int u = 0; u < T; u++) {
                for (int i = 0; i < hd; i++) row[i] = 0;
                for (int t = 0; t < T; t++)
                    for (int i = 0; i < hd; i++) row[i] += P[t * T + u] * dO[t * C + i];
                for (int i = 0; i < hd; i++) write_grad(&dV[u * C + i], row[i], write);
            }

            // dP = dO V^T: dP[t][u] = sum_i dO[t][i] V[u][i]
            for (int t = 0; t < T; t++)
                for (int u = 0; u < T; u++) {
                    real dot = 0;
                    for (int i = 0; i < hd; i++) dot += dO[t * C + i] * V[u * C + i];
                    dP[t * T + u] = dot;
                }

            // dS = P * (dP - rowsum(dP * P)): each row's softmax VJP, as softmax_backward
            // (the mistake "queries" normalised columns, so its VJP runs down the columns)
            if (spec->axis == SOFTMAX_OVER_KEYS) {
                for (int t = 0; t < T; t++) {
                    real rowsum = 0;
                    for (int u = 0; u < T; u++) rowsum += dP[t * T + u] * P[t * T + u];
                    for (int u = 0; u < T; u++)
                        dS[t * T + u] = P[t * T + u] * (dP[t * T + u] - rowsum);
                }
            } else {
                for (int u = 0; u < T; u++) {
                    real colsum = 0;
                    for (int t = 0; t < T; t++) colsum += dP[t * T + u] * P[t * T + u];
                    for (int t = 0; t < T; t++)
                        dS[t * T + u] = P[t * T + u] * (dP[t * T + u] - colsum);
                }
            }

            // masked scores are constants (-inf or 0), not functions of Q and K: no gradient
            // passes through them (under -inf, P = 0 there and dS is already 0)
            for (int t = 0; t < T; t++)
                for (int u = 0; u < T; u++)
                    if (attention_masked(spec, t, u)) dS[t * T + u] = 0;

            // dQ = scale * dS K: dQ[t][i] = scale * sum_u dS[t][u] K[u][i]
            for (int t = 0; t < T; t++) {
                for (int i = 0; i < hd; i++) row[i] = 0;
                for (int u = 0; u < T; u++)
                    for (int i = 0; i < hd; i++) row[i] += dS[t * T + u] * K[u * C + i];
                for (int i = 0; i < hd; i++)
                    write_grad(&dQ[t * C + i], spec->scale * row[i], write);
            }

            // dK = scale * dS^T Q: dK[u][i] = scale * sum_t dS[t][u] Q[t][i]
            for (int u = 0; u < T; u++) {
                for (int i = 0; i < hd; i++) row[i] = 0;
                for (int t = 0; t < T; t++)
                    for (int i = 0; i < hd; i++) row[i] += dS[t * T + u] * Q[t * C + i];
                for (int i = 0; i < hd; i++)
                    write_grad(&dK[u * C + i], spec->scale * row[i], write);
            }

            if (stats || row_gain)
                attention_stats_backward(stats ? &stats[h] : NULL,
                                         row_gain ? row_gain + ((size_t)b * NH + h) * T : NULL, dP,
                                         dS, T, spec);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// one new position, for generation

// The row of attention_forward for the newest position t = pos of a sequence, over only the keys
// it sees (k and v hold those pos + 1 rows, oldest first: see AttentionDecodeFn). The keys the
// mask hides get weight exp(-inf) = 0 in the forward, and adding 0 changes no sum, so these are
// the forward's numbers bit for bit: the same loops, in the same order, over fewer keys.
void attention_decode(real *out, real *scores, const real *q, const real *k, const real *v, int pos,
                      int C, int NH, const AttnSpec *spec) {
    real scale = spec->scale;
    int hd = C / NH, n = pos + 1;
    for (int h = 0; h < NH; h++) {
        const real *Q = q + h * hd, *K = k + h * hd, *V = v + h * hd;
        real *O = out + h * hd, *P = scores;
        // S = q K^T * scale, one row
        for (int u = 0; u < n; u++) {
            real dot = 0;
            for (int i = 0; i < hd; i++) dot += Q[i] * K[u * C + i];
            P[u] = dot * scale;
        }
        // P = softmax(S)
        real maxv = -INFINITY, sum = 0;
        for (int u = 0; u < n; u++) maxv = P[u] > maxv ? P[u] : maxv;
        for (int u = 0; u < n; u++) {
            P[u] = real_exp(P[u] - maxv);
            sum += P[u];
        }
        for (int u = 0; u < n; u++) P[u] /= sum;
        // O = P V
        for (int i = 0; i < hd; i++) O[i] = 0;
        for (int u = 0; u < n; u++)
            for (int i = 0; i < hd; i++) O[i] += P[u] * V[u * C + i];
    }
}

// ---------------------------------------------------------------------------------------------
// QK-norm: each head's query (or key) row x of hd columns, normalised before the scores
//
// Forward, for the row x of head h at position n (x_i = x[n*C + h*hd + i]):
//   mu   = (1/hd) sum_i x_i                LayerNorm only (RMSNorm: mu = 0)
//   var  = (1/hd) sum_i (x_i - mu)^2       (RMSNorm: the mean square (1/hd) sum_i x_i^2)
//   r    = 1 / sqrt(var + eps)
//   n_i  = (x_i - mu) * r                  the normalised row
//   y_i  = w_i * n_i + b_i                 the gain and bias, one per head column (RMSNorm: no b)
// Backward, given dy = dL/dy (docs/backprop-through-softmax.md, "QK-norm", derives it):
//   dw_i += dy_i * n_i,  db_i += dy_i      summed over every row of every head
//   dn_i  = dy_i * w_i
//   dx_i  = r * (dn_i - mean(dn) - n_i * mean(dn * n))     (RMSNorm: without the - mean(dn))
void qk_norm_forward(real *out, real *mean, real *rstd, const real *x, const real *w, const real *b,
                     QkNormShape shape) {
    int N = shape.N, C = shape.C, NH = shape.NH;
    QkNorm kind = shape.kind;
    int hd = C / NH;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            const real *xr = x + (size_t)n * C + h * hd;
            real *yr = out + (size_t)n * C + h * hd;
            // mu = (1/hd) sum_i x_i (LayerNorm), else 0
            double mu = 0;
            if (kind == QK_NORM_LAYERNORM) {
                for (int i = 0; i < hd; i++) mu += xr[i];
                mu /= hd;
            }
            // var = (1/hd) sum_i (x_i - mu)^2
            double var = 0;
            for (int i = 0; i < hd; i++) var += ((double)xr[i] - mu) * ((double)xr[i] - mu);
            var /= hd;
            // r = 1 / sqrt(var + eps)
            real r = (real)(1.0 / sqrt(var + QK_NORM_EPS)), m = (real)mu;
            // y_i = w_i * (x_i - mu) * r + b_i
            for (int i = 0; i < hd; i++)
                yr[i] = w[i] * ((xr[i] - m) * r) + (kind == QK_NORM_LAYERNORM ? b[i] : 0);
            mean[(size_t)n * NH + h] = m;
            rstd[(size_t)n * NH + h] = r;
        }
}

void qk_norm_backward(real *dx, real *dw, real *db, const real *dout, const real *x, const real *w,
                      const real *mean, const real *rstd, QkNormShape shape) {
    int N = shape.N, C = shape.C, NH = shape.NH;
    QkNorm kind = shape.kind;
    int hd = C / NH;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < NH; h++) {
            const real *xr = x + (size_t)n * C + h * hd, *dy = dout + (size_t)n * C + h * hd;
            real *dxr = dx + (size_t)n * C + h * hd;
            real m = mean[(size_t)n * NH + h], r = rstd[(size_t)n * NH + h];
            // dw_i += dy_i * n_i, db_i += dy_i
            for (int i = 0; i < hd; i++) {
                dw[i] += dy[i] * ((xr[i] - m) * r);
                if (kind == QK_NORM_LAYERNORM) db[i] += dy[i];
            }
            // mean(dn) and mean(dn * n), dn_i = dy_i * w_i
            double mean_dn = 0, mean_dn_n = 0;
            for (int i = 0; i < hd; i++) {
                mean_dn += (double)(dy[i] * w[i]);
                mean_dn_n += (double)(dy[i] * w[i]) * (double)((xr[i] - m) * r);
            }
            mean_dn /= hd;
            mean_dn_n /= hd;
            if (kind != QK_NORM_LAYERNORM) mean_dn = 0;
            // dx_i = r * (dn_i - mean(dn) - n_i * mean(dn * n)); dy_i is read before dx_i is
            // written
            real a = (real)mean_dn, c = (real)mean_dn_n;
            for (int i = 0; i < hd; i++) dxr[i] = r * (dy[i] * w[i] - a - ((xr[i] - m) * r) * c);
        }
}

static int supports_everything(const AttnSpec *spec) {
    (void)spec;
    return 1;
}

// It keeps the weights P (B,NH,T,T) for the backward; its scratch holds S, then dP and dS (T,T)
// each, and a row of hd.
size_t attention_definition_saved_reals(AttnShape s) { return (size_t)s.B * s.NH * s.T * s.T; }
size_t attention_definition_scratch_reals(int T, int hd) { return 2 * (size_t)T * T + hd; }

const AttentionImpl attention_definition = {"definition",
                                            attention_forward,
                                            attention_backward,
                                            supports_everything,
                                            1,
                                            attention_decode,
                                            attention_definition_saved_reals,
                                            attention_definition_scratch_reals,
                                            qk_norm_forward,
                                            qk_norm_backward};
