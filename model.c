// model.c: the GPT around the attention: its parameters, embeddings, LayerNorm, MLP, residuals,
// the tied LM head, cross-entropy, the forward and backward passes, and AdamW. Each layer is a
// *_forward / *_backward pair in the style of llm.c; backward passes accumulate (+=) into
// gradients, or overwrite them (GRAD_STORE) where the training step's backward is the only
// writer of a buffer.
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/fastmath.h"  // vectorisable exp and erf: GELU, the loss
#include "kernels/lanesum.h"   // row sums in fixed lanes: LayerNorm's statistics
#include "kernels/matmul.h"    // the products of every linear layer and their epilogues


// ---------------------------------------------------------------------------------------------
// layers

// inp is (B,T) token ids, wte (V,C), wpe (T_max,C); out is (B,T,C) = wte[token] + wpe[t]
void encoder_forward(real *out, const int *inp, const real *wte, const real *wpe, int B, int T, int C) {
#pragma omp parallel for schedule(static) if(par_worth((double)B * T * C))
    for (int bt = 0; bt < B * T; bt++) {
        real *o = out + (size_t)bt * C;
        const real *we = wte + (size_t)inp[bt] * C;
        const real *pe = wpe + (size_t)(bt % T) * C;
        for (int i = 0; i < C; i++) o[i] = we[i] + pe[i];
    }
}

// dwte[token] += dout, dwpe[t] += dout. Tokens repeat, so threads split the channels, not the
// rows: each thread owns columns [c0, c1) of both tables and visits rows in order.
void encoder_backward(real *dwte, real *dwpe, const real *dout, const int *inp, int B, int T, int C) {
#pragma omp parallel if(par_worth((double)B * T * C))
    {
        int tid = thread_index(), nth = thread_count();
        int c0 = (int)((long)C * tid / nth), c1 = (int)((long)C * (tid + 1) / nth);
        for (int bt = 0; bt < B * T; bt++) {
            const real *d = dout + (size_t)bt * C;
            real *we = dwte + (size_t)inp[bt] * C;
            real *pe = dwpe + (size_t)(bt % T) * C;
            for (int i = c0; i < c1; i++) { we[i] += d[i]; pe[i] += d[i]; }
        }
    }
}

// LayerNorm backward's two row sums, of dnorm = dout * w and of dnorm * norm (each product in
// real, as the loop applying them computes it). Two passes over the row (in L1): the compiler
// vectorises each, not the two sums in one loop.
static inline double row_sum_dnorm(const real *d, const real *w, int C) {
    LANE_SUM(C, (double)(d[k] * w[k]));
}

static inline double row_sum_dnorm_norm(const real *x, const real *d, const real *w, real mu, real s, int C) {
    LANE_SUM(C, (double)(d[k] * w[k]) * (double)((x[k] - mu) * s));
}
#undef LANE_SUM

// inp, out are (N,C); mean, rstd are (N). out = (inp - mean) * rstd * w + b
void layernorm_forward(real *out, real *mean, real *rstd, const real *inp,
                              const real *w, const real *b, int N, int C) {
    const double eps = 1e-5;
#pragma omp parallel for schedule(static) if(par_worth((double)N * C * 8))
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
//   dinp += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)),  dw += dout * norm,  db += dout
void layernorm_backward(real *dinp, real *dw, real *db, const real *dout, const real *inp,
                               const real *w, const real *mean, const real *rstd, int N, int C) {
#pragma omp parallel for schedule(static) if(par_worth((double)N * C * 8))
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
#pragma omp parallel if(par_worth((double)N * C * 2))
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
#define INV_SQRT2 0.7071067811865476
#define INV_SQRT_2PI 0.3989422804014327
static inline void gelu_at(real x, real *out, real *dgelu) {
    real erf_term = (real)1 + fast_erf(x * (real)INV_SQRT2);
    real cdf = (real)0.5 * erf_term;
    real pdf = (real)INV_SQRT_2PI * fast_exp_nonpositive((real)-0.5 * x * x);
    *out = (real)0.5 * x * erf_term;
    *dgelu = cdf + x * pdf;
}

void gelu_forward(real *out, real *dgelu, const real *inp, size_t n) {
#ifdef REAL_DOUBLE  // libm's erf is a call: nothing to vectorise in the float64 build
#pragma omp parallel for schedule(static) if(par_worth((double)n * 24))
#else
#pragma omp parallel for simd schedule(static) if(parallel: par_worth((double)n * 24))
#endif
    for (size_t i = 0; i < n; i++) gelu_at(inp[i], out + i, dgelu + i);
}

// The products' epilogues (kernels/matmul.h): the operation that follows a product, on each run of
// its finished elements, the same arithmetic as the separate passes above.
// C = x W_fc: GELU(x) to ctx's out, GELU'(x) over x itself (as gelu_forward(out, x, x))
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

// dinp += dout * dGELU/dx (or =), the derivative as gelu_forward saved it
void gelu_backward(real *dinp, const real *dgelu, const real *dout, size_t n, GradWrite write) {
    if (write == GRAD_STORE) {  // no restrict: dinp may be dout
#pragma omp parallel for simd schedule(static) if(parallel: par_worth((double)n))
        for (size_t i = 0; i < n; i++) dinp[i] = dout[i] * dgelu[i];
    } else {
#pragma omp parallel for simd schedule(static) if(parallel: par_worth((double)n))
        for (size_t i = 0; i < n; i++) dinp[i] += dout[i] * dgelu[i];
    }
}

void residual_forward(real *out, const real *a, const real *b, size_t n) {
#pragma omp parallel for schedule(static) if(par_worth((double)n))
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

// logits (N,V) are replaced by probabilities; losses (N) = logsumexp(logits) - logits[target];
// lse and rowmax (N, may be NULL) receive log Z = logsumexp(logits) and max(logits) of each row.
void crossentropy_lse_forward(real *logits, real *losses, real *lse, real *rowmax, const int *targets, int N, int V) {
#pragma omp parallel for schedule(static) if(par_worth((double)N * V * 8))
    for (int n = 0; n < N; n++) {
        real *row = logits + (size_t)n * V;
        real maxv = row[0];
        for (int i = 1; i < V; i++) if (row[i] > maxv) maxv = row[i];
        real target_logit = row[targets[n]];
        // subtract the max so exp never overflows: log-sum-exp = max + log(sum exp(x - max))
        real sum = 0;
#pragma omp simd reduction(+:sum)
        for (int i = 0; i < V; i++) { row[i] = fast_exp(row[i] - maxv); sum += row[i]; }
        double log_z = (double)maxv + log((double)sum);
        losses[n] = (real)(log_z - (double)target_logit);
        if (lse) lse[n] = (real)log_z;
        if (rowmax) rowmax[n] = maxv;
        real inv = 1 / sum;
        for (int i = 0; i < V; i++) row[i] *= inv;
    }
}

void crossentropy_forward(real *logits, real *losses, const int *targets, int N, int V) {
    crossentropy_lse_forward(logits, losses, NULL, NULL, targets, N, V);
}

// z-loss = z * (1/N) sum_n (log Z_n)^2 with log Z_n = logsumexp(logits_n), whose derivative
// d log Z_n / d logit_{n,i} = p_{n,i}: dlogits_{n,i} += z * 2 * log Z_n * p_{n,i} / N
void zloss_backward(real *dlogits, const real *probs, const real *lse, double z, int N, int V) {
#pragma omp parallel for schedule(static) if(par_worth((double)N * V))
    for (int n = 0; n < N; n++) {
        const real *p = probs + (size_t)n * V;
        real *d = dlogits + (size_t)n * V;
        real f = (real)(2.0 * z * (double)lse[n] / N);
        for (int i = 0; i < V; i++) d[i] += f * p[i];
    }
}

// d(mean loss)/dlogits = (probs - onehot(target)) / N
void crossentropy_backward(real *dlogits, const real *probs, const int *targets, int N, int V) {
    real inv = (real)(1.0 / N);
#pragma omp parallel for schedule(static) if(par_worth((double)N * V))
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
#pragma omp parallel if(par_worth(3.0 * N * C * C))
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
static void qkv_backward(real *dinp, LayerParams *dP, AttnGradQKV d, const real *inp, const LayerParams *P, int N,
                         int C) {
#pragma omp parallel if(par_worth(6.0 * N * C * C))
    {
        int tid = thread_index(), nth = thread_count();
        matmul_backward_part(tid, nth, (LinearGrads){dinp, dP->wq, GRAD_STORE, GRAD_STORE}, d.dq, inp, P->wq, N, C, C);
        matmul_backward_part(tid, nth, (LinearGrads){dinp, dP->wk, GRAD_ADD, GRAD_STORE}, d.dk, inp, P->wk, N, C, C);
        matmul_backward_part(tid, nth, (LinearGrads){dinp, dP->wv, GRAD_ADD, GRAD_STORE}, d.dv, inp, P->wv, N, C, C);
    }
}

// ---------------------------------------------------------------------------------------------
// building the model

// The layout, written once. Each table lists buffers in the order they are laid out: a row's
// shape is in units of the model's dimensions (V vocabulary, T_max block size, C width, and for
// activations B, T of the batch, NH heads), and `view` is where the buffer's pointer lives.
// Sizing, carving a buffer into views, the tensor list of checkpoints and the initialisation
// all read these tables.
typedef enum { D1, DV, DTMAX, DC, D4C, DHD } ParamDim;  // DHD: the head size C / NH

typedef struct {
    const char *name;
    ParamDim d0, d1;    // shape (d0, d1); d1 = D1 for a vector
    size_t view;        // offset of the pointer in ParamViews (global rows) or LayerParams
    ParamInit init;
    int grad_summed;
} ParamRow;

// checkpoint order: the head, each layer's rows (named layer<l>.<name>), the tail
static const ParamRow PARAMS_HEAD[] = {
    {"wte", DV, DC, offsetof(ParamViews, wte), PINIT_EMBEDDING, 0},     // also the tied LM head
    {"wpe", DTMAX, DC, offsetof(ParamViews, wpe), PINIT_EMBEDDING, 1},  // summed over the batch
};
static const ParamRow PARAMS_LAYER[] = {
    {"ln1_w", DC, D1, offsetof(LayerParams, ln1_w), PINIT_ONES, 1},
    {"ln1_b", DC, D1, offsetof(LayerParams, ln1_b), PINIT_ZEROS, 1},
    {"wq", DC, DC, offsetof(LayerParams, wq), PINIT_MATRIX, 0},
    {"wk", DC, DC, offsetof(LayerParams, wk), PINIT_MATRIX, 0},
    {"wv", DC, DC, offsetof(LayerParams, wv), PINIT_MATRIX, 0},
    {"wo", DC, DC, offsetof(LayerParams, wo), PINIT_RESIDUAL, 0},
    {"ln2_w", DC, D1, offsetof(LayerParams, ln2_w), PINIT_ONES, 1},
    {"ln2_b", DC, D1, offsetof(LayerParams, ln2_b), PINIT_ZEROS, 1},
    {"w_fc", DC, D4C, offsetof(LayerParams, w_fc), PINIT_MATRIX, 0},
    {"w_proj", D4C, DC, offsetof(LayerParams, w_proj), PINIT_RESIDUAL, 0},
};
// with QK-norm, each layer's rows go on with its gains (and LayerNorm's biases), one per head column
static const ParamRow PARAMS_QK_LAYERNORM[] = {
    {"q_norm_w", DHD, D1, offsetof(LayerParams, q_norm_w), PINIT_ONES, 1},
    {"q_norm_b", DHD, D1, offsetof(LayerParams, q_norm_b), PINIT_ZEROS, 1},
    {"k_norm_w", DHD, D1, offsetof(LayerParams, k_norm_w), PINIT_ONES, 1},
    {"k_norm_b", DHD, D1, offsetof(LayerParams, k_norm_b), PINIT_ZEROS, 1},
};
static const ParamRow PARAMS_QK_RMSNORM[] = {
    {"q_norm_w", DHD, D1, offsetof(LayerParams, q_norm_w), PINIT_ONES, 1},
    {"k_norm_w", DHD, D1, offsetof(LayerParams, k_norm_w), PINIT_ONES, 1},
};
static const ParamRow PARAMS_TAIL[] = {
    {"lnf_w", DC, D1, offsetof(ParamViews, lnf_w), PINIT_ONES, 1},
    {"lnf_b", DC, D1, offsetof(ParamViews, lnf_b), PINIT_ZEROS, 1},
};
#define ROWS(table) (int)(sizeof(table) / sizeof(table[0]))

static size_t param_dim(const ModelDims *d, ParamDim dim) {
    switch (dim) {
    case DV: return (size_t)d->vocab_size;
    case DTMAX: return (size_t)d->block_size;
    case DC: return (size_t)d->n_embd;
    case D4C: return 4 * (size_t)d->n_embd;
    case DHD: return (size_t)(d->n_embd / d->n_head);
    default: return 1;
    }
}

// The QK-norm rows of each layer for dims (count in *n; none without QK-norm).
static const ParamRow *qk_rows(const ModelDims *d, int *n) {
    *n = d->qk_norm == QK_NORM_LAYERNORM ? ROWS(PARAMS_QK_LAYERNORM) : d->qk_norm == QK_NORM_RMSNORM ? ROWS(PARAMS_QK_RMSNORM) : 0;
    return d->qk_norm == QK_NORM_LAYERNORM ? PARAMS_QK_LAYERNORM : PARAMS_QK_RMSNORM;
}
static int layer_rows(const ModelDims *d) {
    int nq;
    qk_rows(d, &nq);
    return ROWS(PARAMS_LAYER) + nq;
}

static int n_tensors(const ModelDims *d) { return ROWS(PARAMS_HEAD) + d->n_layer * layer_rows(d) + ROWS(PARAMS_TAIL); }

// Tensor i of the checkpoint order: its table row and, for a layer's row, the layer (else -1).
static const ParamRow *param_row(int i, const ModelDims *d, int *layer) {
    int head = ROWS(PARAMS_HEAD), per = layer_rows(d), nq;
    const ParamRow *qk = qk_rows(d, &nq);
    *layer = -1;
    if (i < head) return &PARAMS_HEAD[i];
    i -= head;
    if (i < d->n_layer * per) {
        *layer = i / per;
        int j = i % per;
        return j < ROWS(PARAMS_LAYER) ? &PARAMS_LAYER[j] : &qk[j - ROWS(PARAMS_LAYER)];
    }
    return &PARAMS_TAIL[i - d->n_layer * per];
}

// The tensor list (names, shapes, offsets) for dims; returns the parameter count, or 0 when it
// overflows size_t. t may be NULL to count only.
static size_t list_tensors(const ModelDims *d, TensorInfo *t) {
    size_t offset = 0;
    for (int i = 0; i < n_tensors(d); i++) {
        int l;
        const ParamRow *row = param_row(i, d, &l);
        size_t d0 = param_dim(d, row->d0), d1 = param_dim(d, row->d1), n;
        if (!mul_size(d0, d1, &n) || offset + n < offset) return 0;
        if (t) {
            if (l >= 0) snprintf(t[i].name, sizeof t[i].name, "layer%d.%s", l, row->name);
            else snprintf(t[i].name, sizeof t[i].name, "%s", row->name);
            t[i].ndim = row->d1 == D1 ? 1 : 2;
            t[i].shape[0] = (int)d0;
            t[i].shape[1] = (int)d1;
            t[i].offset = offset;
            t[i].size = n;
            t[i].init = row->init;
            t[i].grad_summed = row->grad_summed;
        }
        offset += n;
    }
    return offset;
}

int gpt_tensor_table(const ModelDims *d, TensorInfo **out) {
    *out = xcalloc((size_t)n_tensors(d), sizeof(TensorInfo), "tensor table");
    if (list_tensors(d, *out) == 0) {
        free(*out);
        *out = NULL;
        return 0;
    }
    return n_tensors(d);
}

// Point each view of v at its tensor in base.
static void set_param_views(ParamViews *v, real *base, const GPT *m) {
    for (int i = 0; i < m->n_tensors; i++) {
        int l;
        const ParamRow *row = param_row(i, &m->dims, &l);
        char *owner = l >= 0 ? (char *)&v->layers[l] : (char *)v;
        *(real **)(void *)(owner + row->view) = base + m->tensors[i].offset;
    }
}

// Activations: sizes in units of the batch's dimensions.
typedef enum { A_BT, A_BTC, A_4BTC, A_BTV, A_BTH } ActSize;  // A_BTH: B*T*NH, one per head row
typedef struct { ActSize size; size_t view; } ActRow;

static const ActRow ACTS_HEAD[] = {{A_BTC, offsetof(Acts, encoded)}};
static const ActRow ACTS_LAYER[] = {
    {A_BTC, offsetof(LayerActs, ln1)},     {A_BT, offsetof(LayerActs, ln1_mean)}, {A_BT, offsetof(LayerActs, ln1_rstd)},
    {A_BTC, offsetof(LayerActs, q)},       {A_BTC, offsetof(LayerActs, k)},       {A_BTC, offsetof(LayerActs, v)},
    {A_BTC, offsetof(LayerActs, atty)},    {A_BTC, offsetof(LayerActs, res2)},
    {A_BTC, offsetof(LayerActs, ln2)},     {A_BT, offsetof(LayerActs, ln2_mean)}, {A_BT, offsetof(LayerActs, ln2_rstd)},
    {A_4BTC, offsetof(LayerActs, fc_dgelu)}, {A_4BTC, offsetof(LayerActs, fch_gelu)}, {A_BTC, offsetof(LayerActs, res3)},
};
// with QK-norm, each layer's rows go on with these
static const ActRow ACTS_QK[] = {
    {A_BTC, offsetof(LayerActs, q_in)},   {A_BTC, offsetof(LayerActs, k_in)},
    {A_BTH, offsetof(LayerActs, q_mean)}, {A_BTH, offsetof(LayerActs, q_rstd)},
    {A_BTH, offsetof(LayerActs, k_mean)}, {A_BTH, offsetof(LayerActs, k_rstd)},
};
static const ActRow ACTS_TAIL[] = {
    {A_BTC, offsetof(Acts, lnf)}, {A_BT, offsetof(Acts, lnf_mean)}, {A_BT, offsetof(Acts, lnf_rstd)},
    {A_BTV, offsetof(Acts, logits)}, {A_BT, offsetof(Acts, losses)}, {A_BT, offsetof(Acts, lse)},
    {A_BT, offsetof(Acts, logit_max)},
};
static const ActRow GRAD_ACTS[] = {
    {A_BTC, offsetof(GradActs, residual)}, {A_BTC, offsetof(GradActs, ln)}, {A_BTC, offsetof(GradActs, q)},
    {A_BTC, offsetof(GradActs, k)},        {A_BTC, offsetof(GradActs, v)},  {A_BTC, offsetof(GradActs, atty)},
    {A_4BTC, offsetof(GradActs, fch)},     {A_BTV, offsetof(GradActs, logits)},
};

// The reals of one size class for a batch (B,T), or 0 on overflow.
static size_t act_reals(const ModelDims *d, int B, int T, ActSize size) {
    size_t bt, n;
    if (!mul_size((size_t)B, (size_t)T, &bt)) return 0;
    switch (size) {
    case A_BT: return bt;
    case A_BTC: return mul_size(bt, (size_t)d->n_embd, &n) ? n : 0;
    case A_4BTC: return mul_size(bt, 4 * (size_t)d->n_embd, &n) ? n : 0;
    case A_BTH: return mul_size(bt, (size_t)d->n_head, &n) ? n : 0;
    default: return mul_size(bt, (size_t)d->vocab_size, &n) ? n : 0;
    }
}

// Lay rows out from *cursor (advancing it), pointing each view of `owner` at its buffer; with
// owner NULL, only add the sizes to *total. Returns 0 on overflow.
static int carve_acts(const ActRow *rows, int n, char *owner, real **cursor, size_t *total, const ModelDims *d, int B,
                      int T) {
    for (int i = 0; i < n; i++) {
        size_t reals = act_reals(d, B, T, rows[i].size);
        if (reals == 0 || *total + reals < *total) return 0;
        *total += reals;
        if (owner) {
            *(real **)(void *)(owner + rows[i].view) = *cursor;
            *cursor += reals;
        }
    }
    return 1;
}

// The activation and activation-gradient buffers' sizes in reals, or 0 on overflow.
typedef struct { size_t acts, grads; } ActSizes;
static int act_sizes(const ModelDims *d, int B, int T, ActSizes *out) {
    size_t layer = 0, total = 0, grads = 0;
    if (!carve_acts(ACTS_LAYER, ROWS(ACTS_LAYER), NULL, NULL, &layer, d, B, T)) return 0;
    if (d->qk_norm && !carve_acts(ACTS_QK, ROWS(ACTS_QK), NULL, NULL, &layer, d, B, T)) return 0;
    if (!mul_size(layer, (size_t)d->n_layer, &total)) return 0;
    if (!carve_acts(ACTS_HEAD, ROWS(ACTS_HEAD), NULL, NULL, &total, d, B, T) ||
        !carve_acts(ACTS_TAIL, ROWS(ACTS_TAIL), NULL, NULL, &total, d, B, T) ||
        !carve_acts(GRAD_ACTS, ROWS(GRAD_ACTS), NULL, NULL, &grads, d, B, T))
        return 0;
    out->acts = total;
    out->grads = grads;
    return 1;
}

size_t gpt_memory_bytes(const ModelDims *d, int B, int T, size_t *n_params_out) {
    size_t n_params = list_tensors(d, NULL);
    if (n_params == 0) return 0;
    if (n_params_out) *n_params_out = n_params;
    ActSizes a;
    if (!act_sizes(d, B, T, &a)) return 0;
    size_t reals = 0, parts[4], bytes;
    if (!mul_size(n_params, 4, &parts[0])) return 0;  // params, grads, adam m, adam v
    parts[1] = a.acts;
    parts[2] = a.grads;
    // what the engine keeps for the backward: each row's maximum and 1/sum, per layer (B,NH,T,2)
    if (!mul_size((size_t)B * T, 2 * (size_t)d->n_head * d->n_layer, &parts[3])) return 0;
    for (int i = 0; i < 4; i++) {
        if (reals + parts[i] < reals) return 0;
        reals += parts[i];
    }
    if (!mul_size(reals, sizeof(real), &bytes)) return 0;
    return bytes;
}

// shared_params: NULL for a model of its own, else the master's parameters (a batch worker,
// which then has no optimizer state).
static void build(GPT *m, const ModelDims *d, AttnSetup attn, int B, int T, real *shared_params) {
    memset(m, 0, sizeof *m);
    m->dims = *d;
    m->attn = attn.spec;
    m->attn_impl = attn.impl;
    m->head_dim = d->n_embd / d->n_head;
    int L = d->n_layer, NH = d->n_head;

    m->n_tensors = n_tensors(d);
    m->tensors = xcalloc((size_t)m->n_tensors, sizeof(TensorInfo), "tensor table");
    m->n_params = list_tensors(d, m->tensors);
    if (m->n_params == 0) die(EXIT_RUNTIME, "model size overflows memory");
    size_t pbytes = m->n_params * sizeof(real);
    m->shares_params = shared_params != NULL;
    m->params = shared_params ? shared_params : xmalloc_aligned(pbytes, "parameters");
    m->grads = xmalloc_aligned(pbytes, "gradients");
    if (!shared_params) {
        m->adam_m = xmalloc_aligned(pbytes, "AdamW first moments");
        m->adam_v = xmalloc_aligned(pbytes, "AdamW second moments");
    }
    m->p.layers = xcalloc((size_t)L, sizeof(LayerParams), "layer views");
    m->g.layers = xcalloc((size_t)L, sizeof(LayerParams), "layer views");
    set_param_views(&m->p, m->params, m);
    set_param_views(&m->g, m->grads, m);

    // the activations, what attention keeps for the backward, its scratch and the row gains are
    // allocated by the first pass that needs them, for what it computes (prepare_pass)
    ActSizes as;
    if (!act_sizes(d, B, T, &as)) die(EXIT_RUNTIME, "activation size overflows memory");
    m->B = B;
    m->T = T;
    m->acts.layers = xcalloc((size_t)L, sizeof(LayerActs), "activation views");
    size_t BT = (size_t)B * T;
    m->inputs = xcalloc(BT, sizeof(int), "inputs");
    m->targets = xcalloc(BT, sizeof(int), "targets");
    m->attn_stats = xcalloc((size_t)L * NH, sizeof(AttnStats), "attention statistics");
}

// A buffer of at least n reals: *buf is kept when it is large enough (*have), else replaced by
// a new one (its content is not kept: every pass writes what it reads).
static real *grow(real **buf, size_t *have, size_t n, const char *what) {
    if (n > *have) {
        free(*buf);
        *buf = xmalloc_aligned(n * sizeof(real), what);
        *have = n;
    }
    return *buf;
}

// Threads that a parallel region inside this pass would run: one when it is nested in an active
// region that takes all the levels OpenMP allows (a batch worker's), else thread_max().
static int pass_threads(void) {
#ifdef _OPENMP
    if (omp_get_active_level() >= omp_get_max_active_levels()) return 1;
#endif
    return thread_max();
}

// Ready the buffers of a pass over (B,T) whose attention is `impl`: the activations and their
// gradients for B*T positions (laid out densely for this B and T), what impl keeps for the
// backward in every layer (the definition's T x T weights only when the definition runs), its
// scratch for the threads that run, and the row gains when statistics are collected.
static void prepare_pass(GPT *m, const AttentionImpl *impl, int B, int T) {
    const ModelDims *d = &m->dims;
    int L = d->n_layer, NH = d->n_head;
    ActSizes as;
    if (!act_sizes(d, B, T, &as)) die(EXIT_RUNTIME, "activation size overflows memory");
    real *a = grow(&m->act_memory, &m->act_reals, as.acts, "activations");
    real *g = grow(&m->gact_memory, &m->gact_reals, as.grads, "activation gradients");
    size_t total = 0;
    carve_acts(ACTS_HEAD, ROWS(ACTS_HEAD), (char *)&m->acts, &a, &total, d, B, T);
    for (int l = 0; l < L; l++) {
        carve_acts(ACTS_LAYER, ROWS(ACTS_LAYER), (char *)&m->acts.layers[l], &a, &total, d, B, T);
        if (d->qk_norm) carve_acts(ACTS_QK, ROWS(ACTS_QK), (char *)&m->acts.layers[l], &a, &total, d, B, T);
    }
    carve_acts(ACTS_TAIL, ROWS(ACTS_TAIL), (char *)&m->acts, &a, &total, d, B, T);
    carve_acts(GRAD_ACTS, ROWS(GRAD_ACTS), (char *)&m->gacts, &g, &total, d, B, T);
    size_t per_layer = impl->saved_reals((AttnShape){B, T, d->n_embd, NH}), saved;
    if (!mul_size(per_layer, (size_t)L, &saved)) die(EXIT_RUNTIME, "attention's saved tensors overflow memory");
    real *sv = grow(&m->saved_memory, &m->saved_reals, saved, "attention's saved tensors");
    for (int l = 0; l < L; l++) m->acts.layers[l].att = sv + (size_t)l * per_layer;
    // 16 reals of slack: each thread's share starts 64-byte aligned when scratch_reals is a multiple of 16
    size_t scratch = impl->scratch_reals(T, m->head_dim) * (size_t)pass_threads() + 16;
    grow(&m->attn_scratch, &m->scratch_reals, scratch, "attention scratch");
    if (m->collect_stats) grow(&m->row_gain, &m->row_gain_reals, (size_t)L * B * T * NH, "row gains");
}

void gpt_build(GPT *m, const ModelDims *d, AttnSetup attn, int B, int T) { build(m, d, attn, B, T, NULL); }

void gpt_build_worker(GPT *w, const GPT *m, int B, int T) {
    build(w, &m->dims, (AttnSetup){m->attn, m->attn_impl}, B, T, m->params);
    w->z_loss = m->z_loss;
}

void gpt_set_z_loss(GPT *m, double z_loss) {
    m->z_loss = z_loss;
    for (int i = 0; i < m->n_workers; i++) gpt_set_z_loss(&m->workers[i], z_loss);
}

// index of `name` in the NULL-terminated `names`; config_finalize has checked that it is there
static int name_index(const char *const *names, const char *name, const char *key) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) return i;
    die(EXIT_RUNTIME, "internal: '%s' = '%s' was not checked by config_finalize", key, name);
}

AttnSetup attention_setup(const Config *cfg) {
    static const char *const impls[] = {"engine", "definition", NULL};
    static const char *const masks[] = {"causal", "zero", "none", NULL}, *const axes[] = {"keys", "queries", NULL};
    static const AttentionImpl *const impl_of[] = {&attention_engine, &attention_definition};
    AttnSetup a;
    a.impl = impl_of[name_index(impls, cfg->attn_impl, "model.attn_impl")];
    // the enums follow the names' order
    a.spec = (AttnSpec){(real)cfg->attn_scale, (AttnMask)name_index(masks, cfg->attn_mask, "model.attn_mask"),
                        (SoftmaxAxis)name_index(axes, cfg->softmax_axis, "model.softmax_axis"), cfg->attn_window, NULL};
    return a;
}

int gpt_qk_norm_kind(const char *name) {
    static const char *const names[] = {"none", "layernorm", "rmsnorm", NULL};  // QkNorm's order
    return name_index(names, name, "model.qk_norm");
}

void gpt_copy_params(GPT *dst, const GPT *src) {
    for (int i = 0; i < dst->n_tensors; i++) {
        int j = gpt_find_tensor(src, dst->tensors[i].name);
        if (j >= 0 && src->tensors[j].size == dst->tensors[i].size)
            memcpy(dst->params + dst->tensors[i].offset, src->params + src->tensors[j].offset,
                   dst->tensors[i].size * sizeof(real));
    }
}

AttnSetup attention_causal(real scale) {
    return (AttnSetup){{scale, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 0, NULL}, &attention_engine};
}

void gpt_set_attention(GPT *m, AttnSetup setup) {
    m->attn_impl = setup.impl;
    m->attn = setup.spec;
    for (int i = 0; i < m->n_workers; i++) gpt_set_attention(&m->workers[i], setup);
}

int gpt_attention_falls_back(const GPT *m) { return !m->attn_impl->supports(&m->attn); }

const AttentionImpl *gpt_decoding_attention(const GPT *m) {
    return attention_engine.supports(&m->attn) ? &attention_engine : &attention_definition;
}

// What a pass runs, decided here only.
typedef enum {
    PASS_MODEL,    // training, evaluation, statistics: the model's implementation
    PASS_PREFILL,  // decoding's prefill: rows that the same implementation's decode step continues bit for bit
} PassKind;

// For a prefill (and the decode steps after it) gpt_decoding_attention; for the other passes the
// model's implementation, unless the pass collects statistics or keeps the weights P (the maps:
// both the definition's) or the
// implementation cannot compute the model's spec: the definition (attention.c) then runs.
static const AttentionImpl *attention_for_pass(const GPT *m, PassKind pass) {
    if (pass == PASS_PREFILL) return gpt_decoding_attention(m);
    if (((m->collect_stats || m->keep_weights) && !m->attn_impl->has_stats) || !m->attn_impl->supports(&m->attn) || m->attn_knockout)
        return &attention_definition;
    return m->attn_impl;
}

// The attention layer l computes: the model's, with layer l's knockouts when they are set.
static AttnSpec layer_spec(const GPT *m, int l, int B, int T) {
    AttnSpec spec = m->attn;
    if (m->attn_knockout) spec.knockout = m->attn_knockout + (size_t)l * B * m->dims.n_head * T;
    return spec;
}

void gpt_free(GPT *m) {
    for (int i = 0; i < m->n_workers; i++) gpt_free(&m->workers[i]);
    free(m->workers);
    free(m->tensors);
    if (!m->shares_params) free(m->params);
    free(m->grads);
    free(m->adam_m);
    free(m->adam_v);
    free(m->p.layers);
    free(m->g.layers);
    free(m->act_memory);
    free(m->gact_memory);
    free(m->saved_memory);
    free(m->acts.layers);
    free(m->attn_scratch);
    free(m->inputs);
    free(m->targets);
    free(m->attn_stats);
    free(m->row_gain);
    memset(m, 0, sizeof *m);
}

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

// ---------------------------------------------------------------------------------------------
// forward and backward

static double forward(GPT *m, const int *inputs, const int *targets, int B, int T, PassKind pass) {
    if (B > m->B || T > m->T || T > m->dims.block_size)
        die(EXIT_RUNTIME, "internal: batch (%d,%d) exceeds capacity (%d,%d)", B, T, m->B, m->T);
    int L = m->dims.n_layer, C = m->dims.n_embd, NH = m->dims.n_head, V = m->dims.vocab_size;
    int N = B * T;
    // activations are laid out for the capacity (m->B, m->T) but used densely for (B, T)
    m->cur_B = B;
    m->cur_T = T;
    m->split_B = 0;
    memcpy(m->inputs, inputs, (size_t)N * sizeof(int));
    if (targets) memcpy(m->targets, targets, (size_t)N * sizeof(int));
    if (m->collect_stats) memset(m->attn_stats, 0, (size_t)L * NH * sizeof(AttnStats));
    m->pass_attn = attention_for_pass(m, pass);
    prepare_pass(m, m->pass_attn, B, T);

    encoder_forward(m->acts.encoded, inputs, m->p.wte, m->p.wpe, B, T, C);
    const real *residual = m->acts.encoded;
    for (int l = 0; l < L; l++) {
        LayerParams *P = &m->p.layers[l];
        LayerActs *A = &m->acts.layers[l];
        AttnStats *stats = m->collect_stats ? &m->attn_stats[l * NH] : NULL;
        AttnSpec spec = layer_spec(m, l, B, T);
        // attention branch: res2 = residual + attention(ln1 Wq, ln1 Wk, ln1 Wv) Wo, the residual
        // added by the product's epilogue
        layernorm_forward(A->ln1, A->ln1_mean, A->ln1_rstd, residual, P->ln1_w, P->ln1_b, N, C);
        if (m->dims.qk_norm) {
            // QK-norm: q = norm(ln1 Wq), k = norm(ln1 Wk), head row by head row
            QkNorm kind = (QkNorm)m->dims.qk_norm;
            qkv_forward(A->q_in, A->k_in, A->v, A->ln1, P->wq, P->wk, P->wv, N, C);
            m->pass_attn->qk_norm_forward(A->q, A->q_mean, A->q_rstd, A->q_in, P->q_norm_w, P->q_norm_b, N, C, NH, kind);
            m->pass_attn->qk_norm_forward(A->k, A->k_mean, A->k_rstd, A->k_in, P->k_norm_w, P->k_norm_b, N, C, NH, kind);
        } else {
            qkv_forward(A->q, A->k, A->v, A->ln1, P->wq, P->wk, P->wv, N, C);
        }
        m->pass_attn->forward(A->atty, A->att, m->attn_scratch, (AttnQKV){A->q, A->k, A->v},
                                               (AttnShape){B, T, C, NH}, &spec, stats);
        matmul_forward_epi(A->res2, A->atty, P->wo, N, C, C, &(GemmEpilogue){epi_residual, residual, residual});
        // MLP branch: res3 = res2 + GELU(ln2 W_fc) W_proj; x = ln2 W_fc is not needed after
        // GELU(x): GELU'(x) replaces it, all backward needs
        layernorm_forward(A->ln2, A->ln2_mean, A->ln2_rstd, A->res2, P->ln2_w, P->ln2_b, N, C);
        matmul_forward_epi(A->fc_dgelu, A->ln2, P->w_fc, N, C, 4 * C,
                                             &(GemmEpilogue){epi_gelu, &(GeluOut){A->fch_gelu}, A->fch_gelu});
        matmul_forward_epi(A->res3, A->fch_gelu, P->w_proj, N, 4 * C, C,
                                             &(GemmEpilogue){epi_residual, A->res2, A->res2});
        residual = A->res3;
    }
    layernorm_forward(m->acts.lnf, m->acts.lnf_mean, m->acts.lnf_rstd, residual, m->p.lnf_w, m->p.lnf_b,
                                   N, C);
    // tied LM head: logits (N,V) = lnf (N,C) @ wte^T, wte being (V,C)
    gemm_nt(m->acts.logits, m->acts.lnf, m->p.wte, N, V, C, MM_SET);
    if (!targets) return 0.0;
    crossentropy_lse_forward(m->acts.logits, m->acts.losses, m->acts.lse, m->acts.logit_max, targets, N, V);
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

double gpt_forward(GPT *m, const int *inputs, const int *targets, int B, int T) {
    return forward(m, inputs, targets, B, T, PASS_MODEL);
}

void gpt_forward_prefill(GPT *m, const int *tokens, int n) { forward(m, tokens, NULL, 1, n, PASS_PREFILL); }

void gpt_zero_grad(GPT *m) { memset(m->grads, 0, m->n_params * sizeof(real)); }

// Zero what the backward adds onto: the gradients summed over rows or the batch (LayerNorm gains
// and biases, wpe), dlogits (crossentropy_backward) and the residual stream's gradient (every
// branch adds its own). Every other gradient is stored by its one product, which needs no
// clearing; wte is stored by the LM head and the encoder adds to it.
static void clear_summed_grads(GPT *m, int N) {
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        if (t->grad_summed) memset(m->grads + t->offset, 0, t->size * sizeof(real));
    }
    memset(m->gacts.logits, 0, (size_t)N * m->dims.vocab_size * sizeof(real));
    memset(m->gacts.residual, 0, (size_t)N * m->dims.n_embd * sizeof(real));
}

static void backward_from(GPT *m, int row);

void gpt_backward(GPT *m) { backward_from(m, -1); }

void gpt_backward_row(GPT *m, int row) {
    if (row < 0 || row >= m->cur_B * m->cur_T) die(EXIT_RUNTIME, "internal: backward of row %d of %d", row, m->cur_B * m->cur_T);
    backward_from(m, row);
}

// The backward of the last forward from the gradient of its mean loss (row < 0), or of the loss
// -log p(target) of one row only.
static void backward_from(GPT *m, int row) {
    int B = m->cur_B, T = m->cur_T;
    int L = m->dims.n_layer, C = m->dims.n_embd, NH = m->dims.n_head, V = m->dims.vocab_size;
    int N = B * T;
    GradActs *G = &m->gacts;

    clear_summed_grads(m, N);
    if (row < 0) crossentropy_backward(G->logits, m->acts.logits, m->targets, N, V);
    else crossentropy_backward(G->logits + (size_t)row * V, m->acts.logits + (size_t)row * V, m->targets + row, 1, V);
    // the z-loss's gradient, of the mean loss only
    if (row < 0 && m->z_loss > 0) zloss_backward(G->logits, m->acts.logits, m->acts.lse, m->z_loss, N, V);
    // LM head: dlnf = dlogits @ wte ; dwte = dlogits^T @ lnf
    gemm_nn(G->ln, G->logits, m->p.wte, N, C, V, MM_SET);
    gemm_tn(m->g.wte, G->logits, m->acts.lnf, V, C, N, MM_SET);
    const real *last = L > 0 ? m->acts.layers[L - 1].res3 : m->acts.encoded;
    layernorm_backward(G->residual, m->g.lnf_w, m->g.lnf_b, G->ln, last, m->p.lnf_w, m->acts.lnf_mean,
                                    m->acts.lnf_rstd, N, C);

    // G->residual holds dL/d(output of layer l); the residual connections pass it through
    // unchanged, and each branch adds its own contribution. The branches' own buffers (G->ln,
    // G->fch, G->atty, G->q/k/v) are stored by the pass that produces them.
    for (int l = L - 1; l >= 0; l--) {
        LayerParams *P = &m->p.layers[l], *dP = &m->g.layers[l];
        LayerActs *A = &m->acts.layers[l];
        const real *res_in = l == 0 ? m->acts.encoded : m->acts.layers[l - 1].res3;
        AttnStats *stats = m->collect_stats ? &m->attn_stats[l * NH] : NULL;
        AttnSpec spec = layer_spec(m, l, B, T);
        real *row_gain = m->collect_stats ? m->row_gain + (size_t)l * N * NH : NULL;
        // MLP branch: res3 = res2 + gelu(ln2 @ w_fc) @ w_proj
        matmul_backward_epi(G->fch, dP->w_proj, G->residual, A->fch_gelu, P->w_proj, N, 4 * C, C,
                                              GRAD_STORE, GRAD_STORE, &(GemmEpilogue){epi_times, A->fc_dgelu, A->fc_dgelu});
        matmul_backward(G->ln, dP->w_fc, G->fch, A->ln2, P->w_fc, N, C, 4 * C, GRAD_STORE,
                                          GRAD_STORE);
        layernorm_backward(G->residual, dP->ln2_w, dP->ln2_b, G->ln, A->res2, P->ln2_w, A->ln2_mean,
                                        A->ln2_rstd, N, C);
        // attention branch: res2 = res_in + attention(ln1 Wq, ln1 Wk, ln1 Wv) @ Wo
        matmul_backward(G->atty, dP->wo, G->residual, A->atty, P->wo, N, C, C, GRAD_STORE,
                                          GRAD_STORE);
        m->pass_attn->backward((AttnGradQKV){G->q, G->k, G->v}, m->attn_scratch, G->atty, A->atty, A->att,
                                                (AttnQKV){A->q, A->k, A->v}, (AttnShape){B, T, C, NH}, &spec,
                                                stats, row_gain, GRAD_STORE);
        if (m->dims.qk_norm) {
            // QK-norm's backward turns dL/dq and dL/dk into the projections' gradients, in place
            QkNorm kind = (QkNorm)m->dims.qk_norm;
            m->pass_attn->qk_norm_backward(G->q, dP->q_norm_w, dP->q_norm_b, G->q, A->q_in, P->q_norm_w, A->q_mean,
                                           A->q_rstd, N, C, NH, kind);
            m->pass_attn->qk_norm_backward(G->k, dP->k_norm_w, dP->k_norm_b, G->k, A->k_in, P->k_norm_w, A->k_mean,
                                           A->k_rstd, N, C, NH, kind);
        }
        qkv_backward(G->ln, dP, (AttnGradQKV){G->q, G->k, G->v}, A->ln1, P, N, C);
        layernorm_backward(G->residual, dP->ln1_w, dP->ln1_b, G->ln, res_in, P->ln1_w, A->ln1_mean,
                                        A->ln1_rstd, N, C);
    }
    encoder_backward(m->g.wte, m->g.wpe, G->residual, m->inputs, B, T, C);
}

int gpt_find_tensor(const GPT *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return i;
    return -1;
}
