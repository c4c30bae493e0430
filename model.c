// model.c: the GPT, the definition. Read attention.c first, then this file.
//
// A character-level GPT-2: tokens in, for every position the probabilities of the next token out.
// With x (B,T,C) the residual stream, B sequences of T positions and C channels:
//   x = wte[token] + wpe[t]                                   the embeddings
//   for each of the L layers:
//     x = x + attention(ln1(x) Wq, ln1(x) Wk, ln1(x) Wv) Wo    (attention.c)
//     x = x + GELU(ln2(x) W_fc) W_proj                         the MLP, 4C wide inside
//   logits = lnf(x) wte^T                                     the LM head, tied to the embeddings
//   loss = mean over positions of -log softmax(logits)[target]
// Each layer is a pair xxx_forward / xxx_backward in the style of llm.c's train_gpt2.c, the math
// above its loops; gpt_forward is the list of forward calls and gpt_backward the same list
// backwards. The parameters and activations are named views (m->p, m->acts: model.h) into the
// buffers of kernels/model_layout.c. kernels/model_engine.c computes the same function fast, and
// is what trains unless model.impl is "definition"; tests/test_model_engine.c proves them equal.
// Everything is in `real`, float32, or float64 in the float64 build (./lab64, the gradient checks).
#include "model.h"

#include <math.h>
#include <string.h>

#include "kernels/model_engine.h"  // the engine, and the buffers a pass computes in

#define INV_SQRT2    0.7071067811865476  // 1 / sqrt(2)
#define INV_SQRT_2PI 0.3989422804014327  // 1 / sqrt(2 pi)

// ---------------------------------------------------------------------------------------------
// the layers, forward

// out (B,T,C) = wte[inp] + wpe[t]: each token's embedding plus its position's; inp (B,T) token
// ids, wte (V,C), wpe (T_max,C)
void encoder_forward(real *out, const int *inp, const real *wte, const real *wpe, int B, int T,
                     int C) {
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            real *out_bt = out + ((size_t)b * T + t) * C;
            const real *wte_ix = wte + (size_t)inp[b * T + t] * C, *wpe_t = wpe + (size_t)t * C;
            for (int i = 0; i < C; i++) out_bt[i] = wte_ix[i] + wpe_t[i];
        }
    }
}

// LayerNorm of each row x of inp (N,C), with the gain w and bias b (C):
//   mean = sum_i x_i / C,  var = sum_i (x_i - mean)^2 / C,  rstd = 1 / sqrt(var + eps)
//   out_i = (x_i - mean) * rstd * w_i + b_i
// mean and rstd (N) are kept for the backward.
void layernorm_forward(real *out, real *mean, real *rstd, const real *inp, const real *w,
                       const real *b, int N, int C) {
    const real eps = (real)1e-5;
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C;
        real m = 0, v = 0;
        for (int i = 0; i < C; i++) m += x[i];
        m /= C;
        for (int i = 0; i < C; i++) v += (x[i] - m) * (x[i] - m);
        v /= C;
        real s = 1 / real_sqrt(v + eps);
        real *out_n = out + (size_t)n * C;
        for (int i = 0; i < C; i++) out_n[i] = (x[i] - m) * s * w[i] + b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

// A linear layer (no bias): out (N,OC) = inp (N,C) W, the weight stored (C,OC):
//   out[n][o] = sum_i inp[n][i] W[i][o]
// (the threads split the rows; each output is one sum in a fixed order)
void matmul_forward(real *out, const real *inp, const real *weight, int N, int C, int OC) {
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        real *out_n = out + (size_t)n * OC;
        for (int o = 0; o < OC; o++) out_n[o] = 0;
        for (int i = 0; i < C; i++) {
            real x = inp[(size_t)n * C + i];
            const real *w_i = weight + (size_t)i * OC;
            for (int o = 0; o < OC; o++) out_n[o] += x * w_i[o];
        }
    }
}

// The LM head, tied to the token embedding: logits (N,V) = inp (N,C) wte^T, wte (V,C):
//   logits[n][v] = sum_i inp[n][i] wte[v][i], the row's dot product with token v's embedding
void lm_head_forward(real *logits, const real *inp, const real *wte, int N, int C, int V) {
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C;
        for (int v = 0; v < V; v++) {
            const real *e = wte + (size_t)v * C;
            real sum = 0;
            for (int i = 0; i < C; i++) sum += x[i] * e[i];
            logits[(size_t)n * V + v] = sum;
        }
    }
}

// GELU(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), Phi the standard normal's distribution
// function: the exact form (PyTorch's default), n values
void gelu_forward(real *out, const real *inp, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (real)(0.5 * inp[i] * (1 + erf(inp[i] * INV_SQRT2)));
}

// out = a + b, n values: a residual connection
void residual_forward(real *out, const real *a, const real *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// Softmax and cross-entropy, row by row over logits (N,V), which become the probabilities p:
//   log Z = log sum_v exp(logit_v)       (computed as max + log sum_v exp(logit_v - max): exp
//                                         never overflows)
//   p_v = exp(logit_v - log Z),  loss = -log p_target = log Z - logit_target
// lse and rowmax (N; may be NULL) receive each row's log Z and largest logit.
void crossentropy_forward(real *logits, real *losses, real *lse, real *rowmax, const int *targets,
                          int N, int V) {
    for (int n = 0; n < N; n++) {
        real *row = logits + (size_t)n * V;
        real maxv = row[0], sum = 0;
        for (int v = 1; v < V; v++) maxv = row[v] > maxv ? row[v] : maxv;
        for (int v = 0; v < V; v++) sum += real_exp(row[v] - maxv);
        real log_z = maxv + (real)log(sum);
        losses[n] = log_z - row[targets[n]];
        if (lse) lse[n] = log_z;
        if (rowmax) rowmax[n] = maxv;
        for (int v = 0; v < V; v++) row[v] = real_exp(row[v] - log_z);
    }
}

// ---------------------------------------------------------------------------------------------
// the GPT, forward

// Forward over inputs (B,T); with targets (B,T), returns the mean loss (model.h).
double gpt_forward(GPT *m, const int *inputs, const int *targets, int B, int T) {
    if (m->impl == MODEL_ENGINE) return model_engine_forward(m, inputs, targets, B, T);
    gpt_begin_pass(m, &attention_definition, inputs, targets, B, T);  // the buffers for (B,T)
    int L = m->dims.n_layer, C = m->dims.n_embd, NH = m->dims.n_head, V = m->dims.vocab_size;
    int N = B * T;
    QkNorm qk_norm = (QkNorm)m->dims.qk_norm;
    QkNormShape qk_shape = {N, C, NH, qk_norm};
    Acts *a = &m->acts;

    encoder_forward(a->encoded, inputs, m->p.wte, m->p.wpe, B, T, C);
    const real *residual = a->encoded;  // (B,T,C), the stream each layer reads and adds to
    for (int l = 0; l < L; l++) {
        const LayerParams *P = &m->p.layers[l];
        LayerActs *A = &a->layers[l];
        AttnSpec spec = gpt_layer_spec(m, l);
        AttnStats *stats = m->collect_stats ? &m->attn_stats[l * NH] : NULL;
        // attention: res2 = residual + attention(q, k, v) Wo, q = ln1 Wq, k = ln1 Wk, v = ln1 Wv
        layernorm_forward(A->ln1, A->ln1_mean, A->ln1_rstd, residual, P->ln1_w, P->ln1_b, N, C);
        real *q = qk_norm ? A->q_in : A->q, *k = qk_norm ? A->k_in : A->k;
        matmul_forward(q, A->ln1, P->wq, N, C, C);
        matmul_forward(k, A->ln1, P->wk, N, C, C);
        matmul_forward(A->v, A->ln1, P->wv, N, C, C);
        if (qk_norm) {  // each head's rows of q and k normalised (attention.c)
            qk_norm_forward(A->q, A->q_mean, A->q_rstd, q, P->q_norm_w, P->q_norm_b, qk_shape);
            qk_norm_forward(A->k, A->k_mean, A->k_rstd, k, P->k_norm_w, P->k_norm_b, qk_shape);
        }
        attention_forward(A->atty, A->att, m->attn_scratch, (AttnQKV){A->q, A->k, A->v},
                          (AttnShape){B, T, C, NH}, &spec, stats);
        matmul_forward(A->res2, A->atty, P->wo, N, C, C);
        residual_forward(A->res2, residual, A->res2, (size_t)N * C);
        // MLP: res3 = res2 + GELU(fch) W_proj, fch = ln2 W_fc
        layernorm_forward(A->ln2, A->ln2_mean, A->ln2_rstd, A->res2, P->ln2_w, P->ln2_b, N, C);
        matmul_forward(A->fch, A->ln2, P->w_fc, N, C, 4 * C);
        gelu_forward(A->fch_gelu, A->fch, (size_t)N * 4 * C);
        matmul_forward(A->res3, A->fch_gelu, P->w_proj, N, 4 * C, C);
        residual_forward(A->res3, A->res2, A->res3, (size_t)N * C);
        residual = A->res3;
    }
    layernorm_forward(a->lnf, a->lnf_mean, a->lnf_rstd, residual, m->p.lnf_w, m->p.lnf_b, N, C);
    lm_head_forward(a->logits, a->lnf, m->p.wte, N, C, V);
    if (!targets) return 0.0;
    crossentropy_forward(a->logits, a->losses, a->lse, a->logit_max, targets, N, V);
    return gpt_mean_loss(m, N);
}

// The loss of the batch: the mean over its N rows; and the statistics of the logits the run
// logs and the z-loss needs: the mean of log Z, of (log Z)^2, and the largest logit.
double gpt_mean_loss(GPT *m, int N) {
    double loss = 0.0, lse = 0.0, lse_sq = 0.0, max_logit = -INFINITY;
    for (int i = 0; i < N; i++) {
        loss += m->acts.losses[i];
        lse += m->acts.lse[i];
        lse_sq += (double)m->acts.lse[i] * m->acts.lse[i];
        if (m->acts.logit_max[i] > max_logit) max_logit = m->acts.logit_max[i];
    }
    m->lse_mean = lse / N;
    m->lse_sq_mean = lse_sq / N;
    m->max_logit = max_logit;
    return loss / N;
}

// The attention layer l computes: the model's, with layer l's knockouts when they are set
// (teach/explain.c: (L, B, NH, T) for the shape of the pass).
AttnSpec gpt_layer_spec(const GPT *m, int l) {
    AttnSpec spec = m->attn;
    if (m->attn_knockout)
        spec.knockout = m->attn_knockout + (size_t)l * m->cur_B * m->dims.n_head * m->cur_T;
    return spec;
}

// ---------------------------------------------------------------------------------------------
// the layers, backward: each adds (+=) its gradients into what it is given, as in llm.c (the
// caller zeroes them first), except where it says "stores"

// dwte[inp] += dout, dwpe[t] += dout
void encoder_backward(real *dwte, real *dwpe, const real *dout, const int *inp, int B, int T,
                      int C) {
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const real *dout_bt = dout + ((size_t)b * T + t) * C;
            real *dwte_ix = dwte + (size_t)inp[b * T + t] * C, *dwpe_t = dwpe + (size_t)t * C;
            for (int i = 0; i < C; i++) {
                dwte_ix[i] += dout_bt[i];
                dwpe_t[i] += dout_bt[i];
            }
        }
    }
}

// With norm = (x - mean) * rstd and dnorm = dout * w, row by row:
//   dinp += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
//   dw += dout * norm,  db += dout
void layernorm_backward(real *dinp, real *dw, real *db, const real *dout, const real *inp,
                        const real *w, const real *mean, const real *rstd, int N, int C) {
    for (int n = 0; n < N; n++) {
        const real *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        real *dx = dinp + (size_t)n * C;
        real mean_dnorm = 0, mean_dnorm_norm = 0;
        for (int i = 0; i < C; i++) {
            real norm = (x[i] - mean[n]) * rstd[n];
            mean_dnorm += d[i] * w[i];
            mean_dnorm_norm += d[i] * w[i] * norm;
        }
        mean_dnorm /= C;
        mean_dnorm_norm /= C;
        for (int i = 0; i < C; i++) {
            real norm = (x[i] - mean[n]) * rstd[n];
            dx[i] += rstd[n] * (d[i] * w[i] - mean_dnorm - norm * mean_dnorm_norm);
            dw[i] += d[i] * norm;
            db[i] += d[i];
        }
    }
}

// out = inp W:  dinp += dout W^T,  dW += inp^T dout:
//   dinp[n][i] += sum_o dout[n][o] W[i][o],   dW[i][o] += sum_n inp[n][i] dout[n][o]
// (the threads split dinp's rows, then dW's rows)
void matmul_backward(real *dinp, real *dweight, const real *dout, const real *inp,
                     const real *weight, int N, int C, int OC) {
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const real *dout_n = dout + (size_t)n * OC;
        for (int i = 0; i < C; i++) {
            const real *w_i = weight + (size_t)i * OC;
            real sum = 0;
            for (int o = 0; o < OC; o++) sum += dout_n[o] * w_i[o];
            dinp[(size_t)n * C + i] += sum;
        }
    }
#pragma omp parallel for
    for (int i = 0; i < C; i++) {
        real *dw_i = dweight + (size_t)i * OC;
        for (int n = 0; n < N; n++) {
            real x = inp[(size_t)n * C + i];
            const real *dout_n = dout + (size_t)n * OC;
            for (int o = 0; o < OC; o++) dw_i[o] += x * dout_n[o];
        }
    }
}

// logits = inp wte^T:  dinp += dlogits wte,  dwte += dlogits^T inp:
//   dinp[n][i] += sum_v dlogits[n][v] wte[v][i],   dwte[v][i] += sum_n dlogits[n][v] inp[n][i]
void lm_head_backward(real *dinp, real *dwte, const real *dlogits, const real *inp, const real *wte,
                      int N, int C, int V) {
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        for (int v = 0; v < V; v++) {
            real d = dlogits[(size_t)n * V + v];
            for (int i = 0; i < C; i++) dinp[(size_t)n * C + i] += d * wte[(size_t)v * C + i];
        }
    }
#pragma omp parallel for
    for (int v = 0; v < V; v++) {
        for (int n = 0; n < N; n++) {
            real d = dlogits[(size_t)n * V + v];
            for (int i = 0; i < C; i++) dwte[(size_t)v * C + i] += d * inp[(size_t)n * C + i];
        }
    }
}

// dGELU/dx = Phi(x) + x phi(x), phi the standard normal's density: dinp = dout * GELU'(inp),
// stored (dinp may be dout itself: the gradient turned into the input's in place)
void gelu_backward(real *dinp, const real *inp, const real *dout, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double x = inp[i], cdf = 0.5 * (1 + erf(x * INV_SQRT2)),
               pdf = INV_SQRT_2PI * exp(-0.5 * x * x);
        dinp[i] = (real)(dout[i] * (cdf + x * pdf));
    }
}

// the mean loss (1/N) sum_n -log p_n[target_n]:  dlogits_n += (p_n - onehot(target_n)) / N
void crossentropy_backward(real *dlogits, const real *probs, const int *targets, int N, int V) {
    for (int n = 0; n < N; n++) {
        for (int v = 0; v < V; v++) dlogits[(size_t)n * V + v] += probs[(size_t)n * V + v] / N;
        dlogits[(size_t)n * V + targets[n]] -= (real)1 / N;
    }
}

// z-loss = z * (1/N) sum_n (log Z_n)^2, and d log Z_n / d logit_{n,v} = p_{n,v}:
//   dlogits_{n,v} += z * 2 * log Z_n * p_{n,v} / N
void zloss_backward(real *dlogits, const real *probs, const real *lse, double z, int N, int V) {
    for (int n = 0; n < N; n++) {
        real f = (real)(2.0 * z * lse[n] / N);
        for (int v = 0; v < V; v++) dlogits[(size_t)n * V + v] += f * probs[(size_t)n * V + v];
    }
}

// ---------------------------------------------------------------------------------------------
// the GPT, backward: gpt_forward's calls in reverse order

static void zero(real *x, size_t n) { memset(x, 0, n * sizeof(real)); }

// The backward of the last forward, of its mean loss (row < 0) or of row `row`'s loss alone.
static void backward(GPT *m, int row) {
    if (m->impl == MODEL_ENGINE) {
        model_engine_backward(m, row);
        return;
    }
    int B = m->cur_B, T = m->cur_T, N = B * T;
    int L = m->dims.n_layer, C = m->dims.n_embd, NH = m->dims.n_head, V = m->dims.vocab_size;
    QkNorm qk_norm = (QkNorm)m->dims.qk_norm;
    QkNormShape qk_shape = {N, C, NH, qk_norm};
    const Acts *a = &m->acts;
    GradActs *G = &m->gacts;  // the gradients of one layer's activations, reused layer by layer
    gpt_zero_grad(m);
    zero(G->logits, (size_t)N * V);
    zero(G->residual, (size_t)N * C);

    if (row < 0)
        crossentropy_backward(G->logits, a->logits, m->targets, N, V);
    else
        crossentropy_backward(G->logits + (size_t)row * V, a->logits + (size_t)row * V,
                              m->targets + row, 1, V);
    if (row < 0 && m->z_loss > 0) zloss_backward(G->logits, a->logits, a->lse, m->z_loss, N, V);
    zero(G->ln, (size_t)N * C);
    lm_head_backward(G->ln, m->g.wte, G->logits, a->lnf, m->p.wte, N, C, V);
    const real *last = L > 0 ? a->layers[L - 1].res3 : a->encoded;
    layernorm_backward(G->residual, m->g.lnf_w, m->g.lnf_b, G->ln, last, m->p.lnf_w, a->lnf_mean,
                       a->lnf_rstd, N, C);

    // G->residual holds dL/d(output of layer l): the residual connections pass it down unchanged,
    // and each branch's LayerNorm adds the branch's share
    for (int l = L - 1; l >= 0; l--) {
        const LayerParams *P = &m->p.layers[l];
        LayerParams *dP = &m->g.layers[l];
        const LayerActs *A = &a->layers[l];
        const real *res_in = l == 0 ? a->encoded : a->layers[l - 1].res3;
        AttnSpec spec = gpt_layer_spec(m, l);
        AttnStats *stats = m->collect_stats ? &m->attn_stats[l * NH] : NULL;
        real *row_gain = m->collect_stats ? m->row_gain + (size_t)l * N * NH : NULL;
        // MLP: res3 = res2 + GELU(fch) W_proj, fch = ln2 W_fc
        zero(G->fch, (size_t)N * 4 * C);
        matmul_backward(G->fch, dP->w_proj, G->residual, A->fch_gelu, P->w_proj, N, 4 * C, C);
        gelu_backward(G->fch, A->fch, G->fch, (size_t)N * 4 * C);
        zero(G->ln, (size_t)N * C);
        matmul_backward(G->ln, dP->w_fc, G->fch, A->ln2, P->w_fc, N, C, 4 * C);
        layernorm_backward(G->residual, dP->ln2_w, dP->ln2_b, G->ln, A->res2, P->ln2_w, A->ln2_mean,
                           A->ln2_rstd, N, C);
        // attention: res2 = res_in + attention(q, k, v) Wo
        zero(G->atty, (size_t)N * C);
        matmul_backward(G->atty, dP->wo, G->residual, A->atty, P->wo, N, C, C);
        attention_backward((AttnGradQKV){G->q, G->k, G->v}, m->attn_scratch, G->atty, A->atty,
                           A->att, (AttnQKV){A->q, A->k, A->v}, (AttnShape){B, T, C, NH}, &spec,
                           stats, row_gain, GRAD_STORE);
        if (qk_norm) {  // dL/dq and dL/dk turned into the projections' gradients, in place
            qk_norm_backward(G->q, dP->q_norm_w, dP->q_norm_b, G->q, A->q_in, P->q_norm_w,
                             A->q_mean, A->q_rstd, qk_shape);
            qk_norm_backward(G->k, dP->k_norm_w, dP->k_norm_b, G->k, A->k_in, P->k_norm_w,
                             A->k_mean, A->k_rstd, qk_shape);
        }
        zero(G->ln, (size_t)N * C);
        matmul_backward(G->ln, dP->wq, G->q, A->ln1, P->wq, N, C, C);
        matmul_backward(G->ln, dP->wk, G->k, A->ln1, P->wk, N, C, C);
        matmul_backward(G->ln, dP->wv, G->v, A->ln1, P->wv, N, C, C);
        layernorm_backward(G->residual, dP->ln1_w, dP->ln1_b, G->ln, res_in, P->ln1_w, A->ln1_mean,
                           A->ln1_rstd, N, C);
    }
    encoder_backward(m->g.wte, m->g.wpe, G->residual, m->inputs, B, T, C);
}

void gpt_backward(GPT *m) { backward(m, -1); }

void gpt_backward_row(GPT *m, int row) {
    if (row < 0 || row >= m->cur_B * m->cur_T)
        die(EXIT_RUNTIME, "internal: backward of row %d of %d", row, m->cur_B * m->cur_T);
    backward(m, row);
}

void gpt_zero_grad(GPT *m) { memset(m->grads, 0, m->n_params * sizeof(real)); }

// ---------------------------------------------------------------------------------------------
// the initial parameters

// Draw the initial parameters from rng, tensor by tensor in checkpoint order.
void gpt_init(GPT *m, int init_scheme, Rng *rng) {
    int L = m->dims.n_layer, C = m->dims.n_embd;
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        real *p = m->params + t->offset;
        if (t->init == PINIT_ONES || t->init == PINIT_ZEROS) {  // LayerNorm: gain 1, bias 0
            for (size_t j = 0; j < t->size; j++) p[j] = t->init == PINIT_ONES ? 1 : 0;
            continue;
        }
        double std;
        if (init_scheme == INIT_GPT2) {
            std = 0.02;
            // residual projections add into the stream once per layer: scale them down so the
            // stream's variance does not grow with depth (GPT-2)
            if (t->init == PINIT_RESIDUAL) std /= sqrt(2.0 * L);
        } else {
            // fan_in: unit-variance inputs give unit-variance outputs; the embeddings feed the
            // tied head, whose fan-in is C
            std = 1.0 / sqrt(t->init == PINIT_EMBEDDING ? (double)C : (double)t->shape[0]);
        }
        for (size_t j = 0; j < t->size; j++) p[j] = (real)(std * rng_normal(rng));
    }
    memset(m->adam_m, 0, m->n_params * sizeof(real));
    memset(m->adam_v, 0, m->n_params * sizeof(real));
    memset(m->grads, 0, m->n_params * sizeof(real));
}
