// kernels/model_engine.c: the engine, model.c's GPT computed fast. The same layers in the same
// order, with these tricks (tests/test_model_engine.c proves the result equal to model.c's):
//   - every linear layer is the tiled GEMM of kernels/matmul.c, and the elementwise step after a
//     product runs in the product's epilogue while C is in L1: the residual adds (epi_residual),
//     GELU (epi_gelu), and in the backward GELU's derivative (epi_times);
//   - the forward keeps GELU'(x) instead of x = ln2 W_fc: all the backward needs, one multiply;
//   - LayerNorm sums rows in fixed lanes (kernels/lanesum.h), exp and erf are vectorised
//     (kernels/fastmath.h), every loop splits its rows between the threads in a fixed way;
//   - backward passes store (GRAD_STORE) the gradients they are the only writer of, so nothing
//     is cleared first, and add (+=) only into those summed over rows (clear_summed_grads);
//   - attention is the chosen AttentionImpl (kernels/attention_engine.c unless configured).
// A batch can also be split between threads (run/workers.c), each worker a GPT running this.
#include "kernels/model_engine.h"

#include <math.h>
#include <string.h>

#include "kernels/fastmath.h"  // vectorisable exp and erf: GELU, the loss
#include "kernels/lanesum.h"   // row sums in fixed lanes: LayerNorm's statistics
#include "kernels/matmul.h"    // the products of every linear layer and their epilogues

// ---------------------------------------------------------------------------------------------
// layers

// inp is (B,T) token ids, wte (V,C), wpe (T_max,C); out is (B,T,C) = wte[token] + wpe[t]
static void encoder_engine_forward(real *out, const int *inp, const real *wte, const real *wpe,
                                   int B, int T, int C) {
#pragma omp parallel for schedule(static) if (par_worth((double)B * T * C))
    for (int bt = 0; bt < B * T; bt++) {
        real *o = out + (size_t)bt * C;
        const real *we = wte + (size_t)inp[bt] * C;
        const real *pe = wpe + (size_t)(bt % T) * C;
        for (int i = 0; i < C; i++) o[i] = we[i] + pe[i];
    }
}

// dwte[token] += dout, dwpe[t] += dout. Tokens repeat, so threads split the channels, not the
// rows: each thread owns columns [c0, c1) of both tables and visits rows in order.
static void encoder_engine_backward(real *dwte, real *dwpe, const real *dout, const int *inp, int B,
                                    int T, int C) {
#pragma omp parallel if (par_worth((double)B * T * C))
    {
        int tid = thread_index(), nth = thread_count();
        int c0 = (int)((long)C * tid / nth), c1 = (int)((long)C * (tid + 1) / nth);
        for (int bt = 0; bt < B * T; bt++) {
            const real *d = dout + (size_t)bt * C;
            real *we = dwte + (size_t)inp[bt] * C;
            real *pe = dwpe + (size_t)(bt % T) * C;
            for (int i = c0; i < c1; i++) {
                we[i] += d[i];
                pe[i] += d[i];
            }
        }
    }
}

// LayerNorm backward's two row sums, of dnorm = dout * w and of dnorm * norm (each product in
// real, as the loop applying them computes it). Two passes over the row (in L1): the compiler
// vectorises each, not the two sums in one loop.
static inline double row_sum_dnorm(const real *d, const real *w, int C) {
    LANE_SUM(C, (double)(d[k] * w[k]));
}

static inline double row_sum_dnorm_norm(const real *x, const real *d, const real *w, real mu,
                                        real s, int C) {
    LANE_SUM(C, (double)(d[k] * w[k]) * (double)((x[k] - mu) * s));
}
#undef LANE_SUM

// inp, out are (N,C); mean, rstd are (N). out = (inp - mean) * rstd * w + b
void layernorm_engine_forward(real *out, real *mean, real *rstd, const real *inp, const real *w,
                              const real *b, int N, int C) {
    const double eps = 1e-5;
#pragma omp parallel for schedule(static) if (par_worth((double)N * C * 8))
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C;
        double m = row_sum(x, C) / C;
        double v = row_sum_sq_dev(x, m, C);
        v /= C;
        real s = (real)(1.0 / sqrt(v + eps));
        real mr = (real)m;
        real *o = out + (size_t)n * C;
        for (int i = 0; i < C; i++) o[i] = (x[i] - mr) * s * w[i] + b[i];
        mean[n] = mr;
        rstd[n] = s;
    }
}

// With norm = (x - mean) * rstd and dnorm = dout * w:
//   dinp += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)),  dw += dout * norm,  db +=
//   dout
static void layernorm_engine_backward(real *dinp, real *dw, real *db, const real *dout,
                                      const real *inp, const real *w, const real *mean,
                                      const real *rstd, int N, int C) {
#pragma omp parallel for schedule(static) if (par_worth((double)N * C * 8))
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        real mu = mean[n], s = rstd[n];
        double mean_dnorm = row_sum_dnorm(d, w, C) / C;
        double mean_dnorm_norm = row_sum_dnorm_norm(x, d, w, mu, s, C) / C;
        real a = (real)mean_dnorm, bb = (real)mean_dnorm_norm;
        real *di = dinp + (size_t)n * C;
        for (int i = 0; i < C; i++) {
            real norm = (x[i] - mu) * s;
            di[i] += s * (d[i] * w[i] - a - norm * bb);
        }
    }
    // parameter gradients sum over rows: threads split the channels so the order is fixed
#pragma omp parallel if (par_worth((double)N * C * 2))
    {
        int tid = thread_index(), nth = thread_count();
        int c0 = (int)((long)C * tid / nth), c1 = (int)((long)C * (tid + 1) / nth);
        for (int n = 0; n < N; n++) {
            const real *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
            real mu = mean[n], s = rstd[n];
            for (int i = c0; i < c1; i++) {
                dw[i] += d[i] * (x[i] - mu) * s;
                db[i] += d[i];
            }
        }
    }
}

// GELU(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), the exact form (PyTorch's default).
// dGELU/dx = Phi(x) + x phi(x), with phi the standard normal density.
// The forward also writes dGELU/dx into dgelu (which may be inp itself: each value is read
// before it is overwritten). Backward then needs one multiply per value: Phi is the forward's
// erf anyway, and computing erf again in the backward would be most of GELU's time.
// The if clause names `parallel`: unnamed, it applies to the simd part too (OpenMP 5.0), and a
// loop too short for threads then ran unvectorised (generation's one position).
#define INV_SQRT2    0.7071067811865476
#define INV_SQRT_2PI 0.3989422804014327
static inline void gelu_at(real x, real *out, real *dgelu) {
    real erf_term = (real)1 + fast_erf(x * (real)INV_SQRT2);
    real cdf = (real)0.5 * erf_term;
    real pdf = (real)INV_SQRT_2PI * fast_exp_nonpositive((real)-0.5 * x * x);
    *out = (real)0.5 * x * erf_term;
    *dgelu = cdf + x * pdf;
}

void gelu_engine_forward(real *out, real *dgelu, const real *inp, size_t n) {
#ifdef REAL_DOUBLE  // libm's erf is a call: nothing to vectorise in the float64 build
#pragma omp parallel for schedule(static) if (par_worth((double)n * 24))
#else
#pragma omp parallel for simd schedule(static) if (parallel : par_worth((double)n * 24))
#endif
    for (size_t i = 0; i < n; i++) gelu_at(inp[i], out + i, dgelu + i);
}

// The products' epilogues (kernels/matmul.h): the operation that follows a product, on each run of
// its finished elements, the same arithmetic as the separate passes above.
// C = x W_fc: GELU(x) to ctx's out, GELU'(x) over x itself (as gelu_engine_forward(out, x, x))
void epi_gelu(const void *ctx, real *c, size_t at, int n) {
    real *out = ((const GeluOut *)ctx)->out + at;
#ifndef REAL_DOUBLE
#pragma omp simd
#endif
    for (int i = 0; i < n; i++) gelu_at(c[i], out + i, c + i);
}
// C = dL/dGELU(x): times GELU'(x), ctx (as gelu_backward(c, dgelu, c, GRAD_STORE))
void epi_times(const void *ctx, real *c, size_t at, int n) {
    const real *m = (const real *)ctx + at;
#pragma omp simd
    for (int i = 0; i < n; i++) c[i] = c[i] * m[i];
}
// C = the branch's output: plus the residual stream, ctx (as residual_forward(c, c, ctx))
void epi_residual(const void *ctx, real *c, size_t at, int n) {
    const real *r = (const real *)ctx + at;
#pragma omp simd
    for (int i = 0; i < n; i++) c[i] = c[i] + r[i];
}

// logits (N,V) are replaced by probabilities; losses (N) = logsumexp(logits) - logits[target];
// lse and rowmax (N, may be NULL) receive log Z = logsumexp(logits) and max(logits) of each row.
static void crossentropy_engine_forward(real *logits, real *losses, real *lse, real *rowmax,
                                        const int *targets, int N, int V) {
#pragma omp parallel for schedule(static) if (par_worth((double)N * V * 8))
    for (int n = 0; n < N; n++) {
        real *row = logits + (size_t)n * V;
        real maxv = row[0];
        for (int i = 1; i < V; i++)
            if (row[i] > maxv) maxv = row[i];
        real target_logit = row[targets[n]];
        // subtract the max so exp never overflows: log-sum-exp = max + log(sum exp(x - max))
        real sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int i = 0; i < V; i++) {
            row[i] = fast_exp(row[i] - maxv);
            sum += row[i];
        }
        double log_z = (double)maxv + log((double)sum);
        losses[n] = (real)(log_z - (double)target_logit);
        if (lse) lse[n] = (real)log_z;
        if (rowmax) rowmax[n] = maxv;
        real inv = 1 / sum;
        for (int i = 0; i < V; i++) row[i] *= inv;
    }
}

// z-loss = z * (1/N) sum_n (log Z_n)^2 with log Z_n = logsumexp(logits_n), whose derivative
// d log Z_n / d logit_{n,i} = p_{n,i}: dlogits_{n,i} += z * 2 * log Z_n * p_{n,i} / N
static void zloss_engine_backward(real *dlogits, const real *probs, const real *lse, double z,
                                  int N, int V) {
#pragma omp parallel for schedule(static) if (par_worth((double)N * V))
    for (int n = 0; n < N; n++) {
        const real *p = probs + (size_t)n * V;
        real *d = dlogits + (size_t)n * V;
        real f = (real)(2.0 * z * (double)lse[n] / N);
        for (int i = 0; i < V; i++) d[i] += f * p[i];
    }
}

// d(mean loss)/dlogits = (probs - onehot(target)) / N
static void crossentropy_engine_backward(real *dlogits, const real *probs, const int *targets,
                                         int N, int V) {
    real inv = (real)(1.0 / N);
#pragma omp parallel for schedule(static) if (par_worth((double)N * V))
    for (int n = 0; n < N; n++) {
        const real *p = probs + (size_t)n * V;
        real *d = dlogits + (size_t)n * V;
        for (int i = 0; i < V; i++) d[i] += p[i] * inv;
        d[targets[n]] -= inv;
    }
}

// q, k, v (N,C) = inp (N,C) @ Wq, Wk, Wv (C,C): three products in one parallel region.
static void qkv_forward(real *q, real *k, real *v, const real *inp, const real *wq, const real *wk,
                        const real *wv, int N, int C) {
#pragma omp parallel if (par_worth(3.0 * N * C * C))
    {
        int tid = thread_index(), nth = thread_count();
        gemm_nn_part(tid, nth, q, inp, wq, N, C, C, MM_SET);
        gemm_nn_part(tid, nth, k, inp, wk, N, C, C, MM_SET);
        gemm_nn_part(tid, nth, v, inp, wv, N, C, C, MM_SET);
    }
}

// dinp = dq Wq^T + dk Wk^T + dv Wv^T ; dWq = inp^T dq, and likewise for k and v (all stored:
// the step's only writers). The three dinp products split rows identically, so each thread adds
// into its own rows in a fixed order.
// The layer's weights are P's Wq, Wk, Wv; their gradients go to dP's; d holds dq, dk, dv.
static void qkv_backward(real *dinp, LayerParams *dP, AttnGradQKV d, const real *inp,
                         const LayerParams *P, int N, int C) {
#pragma omp parallel if (par_worth(6.0 * N * C * C))
    {
        int tid = thread_index(), nth = thread_count();
        linear_backward_part(tid, nth, (LinearGrads){dinp, dP->wq, GRAD_STORE, GRAD_STORE}, d.dq,
                             inp, P->wq, N, C, C);
        linear_backward_part(tid, nth, (LinearGrads){dinp, dP->wk, GRAD_ADD, GRAD_STORE}, d.dk, inp,
                             P->wk, N, C, C);
        linear_backward_part(tid, nth, (LinearGrads){dinp, dP->wv, GRAD_ADD, GRAD_STORE}, d.dv, inp,
                             P->wv, N, C, C);
    }
}

const AttentionImpl *gpt_decoding_attention(const GPT *m) {
    return attention_engine.supports(&m->attn) ? &attention_engine : &attention_definition;
}

// What a pass runs, decided here only.
typedef enum {
    PASS_MODEL,    // training, evaluation, statistics: the model's implementation
    PASS_PREFILL,  // decoding's prefill: rows that the same implementation's decode step continues
                   // bit for bit
} PassKind;

// the attention's clock: the calling thread's seconds in attention, while it is on
static _Thread_local int t_attention_clock_on;
static _Thread_local double t_attention_seconds;

void engine_attention_clock_start(void) {
    t_attention_clock_on = 1;
    t_attention_seconds = 0;
}
void engine_attention_clock_stop(void) { t_attention_clock_on = 0; }
double engine_attention_clock_seconds(void) { return t_attention_seconds; }
static double attention_clock_begin(void) { return t_attention_clock_on ? now_seconds() : 0; }
static void attention_clock_end(double t0) {
    if (t_attention_clock_on) t_attention_seconds += now_seconds() - t0;
}

// For a prefill (and the decode steps after it) gpt_decoding_attention; for the other passes the
// model's implementation, unless the pass collects statistics or keeps the weights P (the maps:
// both the definition's) or the implementation cannot compute the model's spec: the definition
// (attention.c) then runs.
static const AttentionImpl *attention_for_pass(const GPT *m, PassKind pass) {
    if (pass == PASS_PREFILL) return gpt_decoding_attention(m);
    if (((m->collect_stats || m->keep_weights) && !m->attn_impl->has_stats) ||
        !m->attn_impl->supports(&m->attn) || m->attn_knockout)
        return &attention_definition;
    return m->attn_impl;
}

// ---------------------------------------------------------------------------------------------
// forward and backward

static double forward(GPT *m, const int *inputs, const int *targets, int B, int T, PassKind pass) {
    gpt_begin_pass(m, attention_for_pass(m, pass), inputs, targets, B, T);
    int L = m->dims.n_layer, C = m->dims.n_embd, NH = m->dims.n_head, V = m->dims.vocab_size;
    int N = B * T;

    encoder_engine_forward(m->acts.encoded, inputs, m->p.wte, m->p.wpe, B, T, C);
    const real *residual = m->acts.encoded;
    for (int l = 0; l < L; l++) {
        LayerParams *P = &m->p.layers[l];
        LayerActs *A = &m->acts.layers[l];
        AttnStats *stats = m->collect_stats ? &m->attn_stats[l * NH] : NULL;
        AttnSpec spec = gpt_layer_spec(m, l);
        // attention branch: res2 = residual + attention(ln1 Wq, ln1 Wk, ln1 Wv) Wo, the residual
        // added by the product's epilogue
        layernorm_engine_forward(A->ln1, A->ln1_mean, A->ln1_rstd, residual, P->ln1_w, P->ln1_b, N,
                                 C);
        if (m->dims.qk_norm) {
            // QK-norm: q = norm(ln1 Wq), k = norm(ln1 Wk), head row by head row
            QkNorm kind = (QkNorm)m->dims.qk_norm;
            qkv_forward(A->q_in, A->k_in, A->v, A->ln1, P->wq, P->wk, P->wv, N, C);
            m->pass_attn->qk_norm_forward(A->q, A->q_mean, A->q_rstd, A->q_in, P->q_norm_w,
                                          P->q_norm_b, (QkNormShape){N, C, NH, kind});
            m->pass_attn->qk_norm_forward(A->k, A->k_mean, A->k_rstd, A->k_in, P->k_norm_w,
                                          P->k_norm_b, (QkNormShape){N, C, NH, kind});
        } else {
            qkv_forward(A->q, A->k, A->v, A->ln1, P->wq, P->wk, P->wv, N, C);
        }
        double t0 = attention_clock_begin();
        m->pass_attn->forward(A->atty, A->att, m->attn_scratch, (AttnQKV){A->q, A->k, A->v},
                              (AttnShape){B, T, C, NH}, &spec, stats);
        attention_clock_end(t0);
        linear_forward_epi(A->res2, A->atty, P->wo, N, C, C,
                           &(GemmEpilogue){epi_residual, residual, residual});
        // MLP branch: res3 = res2 + GELU(ln2 W_fc) W_proj; x = ln2 W_fc is not needed after
        // GELU(x): GELU'(x) replaces it, all backward needs
        layernorm_engine_forward(A->ln2, A->ln2_mean, A->ln2_rstd, A->res2, P->ln2_w, P->ln2_b, N,
                                 C);
        linear_forward_epi(A->fch, A->ln2, P->w_fc, N, C, 4 * C,
                           &(GemmEpilogue){epi_gelu, &(GeluOut){A->fch_gelu}, A->fch_gelu});
        linear_forward_epi(A->res3, A->fch_gelu, P->w_proj, N, 4 * C, C,
                           &(GemmEpilogue){epi_residual, A->res2, A->res2});
        residual = A->res3;
    }
    layernorm_engine_forward(m->acts.lnf, m->acts.lnf_mean, m->acts.lnf_rstd, residual, m->p.lnf_w,
                             m->p.lnf_b, N, C);
    // tied LM head: logits (N,V) = lnf (N,C) @ wte^T, wte being (V,C)
    gemm_nt(m->acts.logits, m->acts.lnf, m->p.wte, N, V, C, MM_SET);
    if (!targets) return 0.0;
    crossentropy_engine_forward(m->acts.logits, m->acts.losses, m->acts.lse, m->acts.logit_max,
                                targets, N, V);
    return gpt_mean_loss(m, N);
}

double model_engine_forward(GPT *m, const int *inputs, const int *targets, int B, int T) {
    return forward(m, inputs, targets, B, T, PASS_MODEL);
}

void gpt_forward_prefill(GPT *m, const int *tokens, int n) {
    forward(m, tokens, NULL, 1, n, PASS_PREFILL);
}

// Zero what the backward adds onto: the gradients summed over rows or the batch (LayerNorm gains
// and biases, wpe), dlogits (crossentropy_engine_backward) and the residual stream's gradient
// (every branch adds its own). Every other gradient is stored by its one product, which needs no
// clearing; wte is stored by the LM head and the encoder adds to it.
static void clear_summed_grads(GPT *m, int N) {
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        if (t->grad_summed) memset(m->grads + t->offset, 0, t->size * sizeof(real));
    }
    memset(m->gacts.logits, 0, (size_t)N * m->dims.vocab_size * sizeof(real));
    memset(m->gacts.residual, 0, (size_t)N * m->dims.n_embd * sizeof(real));
}

// The backward of the last forward from the gradient of its mean loss (row < 0), or of the loss
// -log p(target) of one row only.
void model_engine_backward(GPT *m, int row) {
    int B = m->cur_B, T = m->cur_T;
    int L = m->dims.n_layer, C = m->dims.n_embd, NH = m->dims.n_head, V = m->dims.vocab_size;
    int N = B * T;
    GradActs *G = &m->gacts;

    clear_summed_grads(m, N);
    if (row < 0)
        crossentropy_engine_backward(G->logits, m->acts.logits, m->targets, N, V);
    else
        crossentropy_engine_backward(G->logits + (size_t)row * V, m->acts.logits + (size_t)row * V,
                                     m->targets + row, 1, V);
    // the z-loss's gradient, of the mean loss only
    if (row < 0 && m->z_loss > 0)
        zloss_engine_backward(G->logits, m->acts.logits, m->acts.lse, m->z_loss, N, V);
    // LM head: dlnf = dlogits @ wte ; dwte = dlogits^T @ lnf
    gemm_nn(G->ln, G->logits, m->p.wte, N, C, V, MM_SET);
    gemm_tn(m->g.wte, G->logits, m->acts.lnf, V, C, N, MM_SET);
    const real *last = L > 0 ? m->acts.layers[L - 1].res3 : m->acts.encoded;
    layernorm_engine_backward(G->residual, m->g.lnf_w, m->g.lnf_b, G->ln, last, m->p.lnf_w,
                              m->acts.lnf_mean, m->acts.lnf_rstd, N, C);

    // G->residual holds dL/d(output of layer l); the residual connections pass it through
    // unchanged, and each branch adds its own contribution. The branches' own buffers (G->ln,
    // G->fch, G->atty, G->q/k/v) are stored by the pass that produces them.
    for (int l = L - 1; l >= 0; l--) {
        LayerParams *P = &m->p.layers[l], *dP = &m->g.layers[l];
        LayerActs *A = &m->acts.layers[l];
        const real *res_in = l == 0 ? m->acts.encoded : m->acts.layers[l - 1].res3;
        AttnStats *stats = m->collect_stats ? &m->attn_stats[l * NH] : NULL;
        AttnSpec spec = gpt_layer_spec(m, l);
        real *row_gain = m->collect_stats ? m->row_gain + (size_t)l * N * NH : NULL;
        // MLP branch: res3 = res2 + gelu(ln2 @ w_fc) @ w_proj
        linear_backward_epi(G->fch, dP->w_proj, G->residual, A->fch_gelu, P->w_proj, N, 4 * C, C,
                            GRAD_STORE, GRAD_STORE, &(GemmEpilogue){epi_times, A->fch, A->fch});
        linear_backward(G->ln, dP->w_fc, G->fch, A->ln2, P->w_fc, N, C, 4 * C, GRAD_STORE,
                        GRAD_STORE);
        layernorm_engine_backward(G->residual, dP->ln2_w, dP->ln2_b, G->ln, A->res2, P->ln2_w,
                                  A->ln2_mean, A->ln2_rstd, N, C);
        // attention branch: res2 = res_in + attention(ln1 Wq, ln1 Wk, ln1 Wv) @ Wo
        linear_backward(G->atty, dP->wo, G->residual, A->atty, P->wo, N, C, C, GRAD_STORE,
                        GRAD_STORE);
        double t0 = attention_clock_begin();
        m->pass_attn->backward((AttnGradQKV){G->q, G->k, G->v}, m->attn_scratch, G->atty, A->atty,
                               A->att, (AttnQKV){A->q, A->k, A->v}, (AttnShape){B, T, C, NH}, &spec,
                               stats, row_gain, GRAD_STORE);
        attention_clock_end(t0);
        if (m->dims.qk_norm) {
            // QK-norm's backward turns dL/dq and dL/dk into the projections' gradients, in place
            QkNorm kind = (QkNorm)m->dims.qk_norm;
            m->pass_attn->qk_norm_backward(G->q, dP->q_norm_w, dP->q_norm_b, G->q, A->q_in,
                                           P->q_norm_w, A->q_mean, A->q_rstd,
                                           (QkNormShape){N, C, NH, kind});
            m->pass_attn->qk_norm_backward(G->k, dP->k_norm_w, dP->k_norm_b, G->k, A->k_in,
                                           P->k_norm_w, A->k_mean, A->k_rstd,
                                           (QkNormShape){N, C, NH, kind});
        }
        qkv_backward(G->ln, dP, (AttnGradQKV){G->q, G->k, G->v}, A->ln1, P, N, C);
        layernorm_engine_backward(G->residual, dP->ln1_w, dP->ln1_b, G->ln, res_in, P->ln1_w,
                                  A->ln1_mean, A->ln1_rstd, N, C);
    }
    encoder_engine_backward(m->g.wte, m->g.wpe, G->residual, m->inputs, B, T, C);
}
