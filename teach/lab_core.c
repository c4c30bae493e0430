// teach/lab_core.c: the computations behind ./lab (see teach/lab_core.h). Softmax and attention
// themselves are never re-implemented here: every weight comes from attention.c, but for the online
// softmax, the other way of computing them that ./lab online-softmax compares with attention.c's.
#include "teach/lab_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#ifdef _OPENMP
#include <omp.h>
#endif

// ---------------------------------------------------------------------------------------------
// attention on explicit matrices

int lab_attention(real *out, real *weights, real *scores, const real *Q, int Tq, const real *K,
                  const real *V, int Tk, int dk, real scale, int causal) {
    if (causal && Tq != Tk) return 0;
    // raw scores, for display: S = Q K^T (the model scales them inside attention_forward)
    for (int t = 0; t < Tq; t++)
        for (int u = 0; u < Tk; u++) {
            double s = 0.0;
            for (int i = 0; i < dk; i++) s += (double)Q[(size_t)t * dk + i] * K[(size_t)u * dk + i];
            scores[(size_t)t * Tk + u] = (real)s;
        }
    if (causal) {
        // the model's attention, as defined in attention.c: B = 1 sequence, NH = 1 head of width C
        // = dk
        real *scratch = xmalloc(attention_scratch_size(Tq, dk) * sizeof(real), "attention scratch");
        AttnSpec spec = {scale, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 0, NULL};
        attention_forward(out, weights, scratch, (AttnQKV){Q, K, V}, (AttnShape){1, Tq, dk, 1},
                          &spec, NULL);
        free(scratch);
        return 1;
    }
    // no mask: every row sees every key; the softmax is attention.c's
    for (int t = 0; t < Tq; t++) {
        real *w = weights + (size_t)t * Tk;
        for (int u = 0; u < Tk; u++) w[u] = scores[(size_t)t * Tk + u] * scale;
        softmax_forward(w, w, Tk);
        for (int i = 0; i < dk; i++) {
            double o = 0.0;
            for (int u = 0; u < Tk; u++) o += (double)w[u] * V[(size_t)u * dk + i];
            out[(size_t)t * dk + i] = (real)o;
        }
    }
    return 1;
}

void lab_attention_backward(LabBackward *g, const real *dout, const real *P, const real *Q,
                            const real *K, const real *V, int T, int dk, real scale, int causal) {
    real *dP = g->dP, *dS = g->dS;
    double *rowsum = g->rowsum;
    // dP = dO V^T, for display (attention_backward forms only the entries a row sees)
    for (int t = 0; t < T; t++)
        for (int u = 0; u < T; u++) {
            double s = 0.0;
            for (int i = 0; i < dk; i++)
                s += (double)dout[(size_t)t * dk + i] * V[(size_t)u * dk + i];
            dP[(size_t)t * T + u] = (real)s;
        }
    // dS = P * (dP - rowsum(dP * P)) row by row over the visible keys: attention.c's softmax VJP
    for (int t = 0; t < T; t++) {
        int keys = causal ? t + 1 : T;
        const real *p = P + (size_t)t * T, *dp = dP + (size_t)t * T;
        real *ds = dS + (size_t)t * T;
        double r = 0.0;
        for (int u = 0; u < keys; u++) r += (double)dp[u] * p[u];
        rowsum[t] = r;
        for (int u = 0; u < T; u++) ds[u] = 0;  // masked entries stay 0
        softmax_backward(ds, dp, p, keys);
    }
    // dQ, dK, dV: the model's attention, as defined in attention.c (B = 1, NH = 1, C = dk)
    real *scratch = xmalloc(attention_scratch_size(T, dk) * sizeof(real), "attention scratch");
    AttnSpec spec = {scale, causal ? ATTN_MASK_CAUSAL : ATTN_MASK_NONE, SOFTMAX_OVER_KEYS, 0, NULL};
    attention_backward((AttnGradQKV){g->dQ, g->dK, g->dV}, scratch, dout, NULL, P,
                       (AttnQKV){Q, K, V}, (AttnShape){1, T, dk, 1}, &spec, NULL, NULL, GRAD_STORE);
    free(scratch);
}

void lab_backward_alloc(LabBackward *g, int T, int dk) {
    size_t td = (size_t)T * dk, tt = (size_t)T * T;
    g->dQ = xmalloc(td * sizeof(real), "backward dQ");
    g->dK = xmalloc(td * sizeof(real), "backward dK");
    g->dV = xmalloc(td * sizeof(real), "backward dV");
    g->dP = xmalloc(tt * sizeof(real), "backward dP");
    g->dS = xmalloc(tt * sizeof(real), "backward dS");
    g->rowsum = xmalloc((size_t)T * sizeof(double), "backward row sums");
}

void lab_backward_free(LabBackward *g) {
    free(g->dQ);
    free(g->dK);
    free(g->dV);
    free(g->dP);
    free(g->dS);
    free(g->rowsum);
    memset(g, 0, sizeof *g);
}

// ---------------------------------------------------------------------------------------------
// the common mistakes

const real LAB_T3_Q[6] = {1, 0, 0, 1, 1, 1};
const real LAB_T3_V[6] = {10, 0, 0, 10, 5, 5};

void lab_mistakes(LabMistake cases[LAB_MISTAKES]) {
    real s = (real)(1.0 / sqrt(2.0));
    const LabMistake setup[LAB_MISTAKES] = {
        {"correct",
         "scaled by 1/sqrt(d_k), -inf above the diagonal, softmax over each row (keys)",
         {s, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 0, NULL},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0}},
        {"no scale",
         "the scores are not divided by sqrt(d_k)",
         {1, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 0, NULL},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0}},
        {"mask with 0",
         "scores above the diagonal set to 0 instead of -inf",
         {s, ATTN_MASK_ZERO, SOFTMAX_OVER_KEYS, 0, NULL},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0}},
        {"softmax over queries",
         "each column (key) normalised over the queries instead of each row over the keys",
         {s, ATTN_MASK_CAUSAL, SOFTMAX_OVER_QUERIES, 0, NULL},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0}},
        {"no mask",
         "every query sees every key, the ones after it included",
         {s, ATTN_MASK_NONE, SOFTMAX_OVER_KEYS, 0, NULL},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0},
         {0}},
    };
    real scratch[2 * 9 + 2];  // attention_scratch_size(3, 2) for the definition
    for (int c = 0; c < LAB_MISTAKES; c++) {
        LabMistake *m = &cases[c];
        *m = setup[c];
        attention_forward(m->out, m->weights, scratch, (AttnQKV){LAB_T3_Q, LAB_T3_Q, LAB_T3_V},
                          (AttnShape){1, 3, 2, 1}, &m->spec, NULL);
        memcpy(m->scores, scratch,
               sizeof m->scores);     // the definition's scratch holds the last head's S
        AttnSpec unmasked = m->spec;  // the same scores with no mask: what the mask replaced
        unmasked.mask = ATTN_MASK_NONE;
        real w[9], o[6];
        attention_forward(o, w, scratch, (AttnQKV){LAB_T3_Q, LAB_T3_Q, LAB_T3_V},
                          (AttnShape){1, 3, 2, 1}, &unmasked, NULL);
        memcpy(m->scores_unmasked, scratch, sizeof m->scores_unmasked);
        for (int t = 0; t < 3; t++) {
            m->row_sums[t] = m->col_sums[t] = m->future_weight[t] = 0;
            for (int u = 0; u < 3; u++) {
                m->row_sums[t] += m->weights[t * 3 + u];
                m->col_sums[t] += m->weights[u * 3 + t];
                if (u > t) m->future_weight[t] += m->weights[t * 3 + u];
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the exercise

void lab_randn(real *out, size_t n, NumpyRng *r) {
    for (size_t i = 0; i < n; i++) out[i] = (real)numpy_randn(r);
}

// Row statistics of a (T,T) weight matrix; row t sees t+1 keys under the mask, T without.
static void row_stats(const real *w, int T, int causal, double *rowmax, double *entropy,
                      double *mean_max, double *mean_ent, int *rows) {
    double sm = 0.0, se = 0.0;
    int n = 0;
    for (int t = 0; t < T; t++) {
        int keys = causal ? t + 1 : T;
        attention_row_stats(w + (size_t)t * T, keys, &entropy[t], &rowmax[t]);
        if (keys >= 2) {
            sm += rowmax[t];
            se += entropy[t];
            n++;
        }
    }
    *mean_max = n ? sm / n : NAN;
    *mean_ent = n ? se / n : NAN;
    *rows = n;
}

int lab_exercise_run(LabExercise *e, uint32_t seed, int T, int dk, int causal) {
    memset(e, 0, sizeof *e);
    if (T < 1 || T > LAB_MAX_T || dk < 1 || dk > LAB_MAX_DK) return 0;
    e->T = T;
    e->dk = dk;
    e->causal = causal ? 1 : 0;
    e->seed = seed;
    size_t td = (size_t)T * dk, tt = (size_t)T * T;
    e->Q = xmalloc(td * sizeof(real), "exercise Q");
    e->K = xmalloc(td * sizeof(real), "exercise K");
    e->V = xmalloc(td * sizeof(real), "exercise V");
    e->scores = xmalloc(tt * sizeof(real), "exercise scores");
    e->weights_scaled = xmalloc(tt * sizeof(real), "exercise weights");
    e->weights_unscaled = xmalloc(tt * sizeof(real), "exercise weights");
    e->out_scaled = xmalloc(td * sizeof(real), "exercise outputs");
    e->out_unscaled = xmalloc(td * sizeof(real), "exercise outputs");
    e->rowmax_scaled = xmalloc((size_t)T * sizeof(double), "exercise row maxima");
    e->rowmax_unscaled = xmalloc((size_t)T * sizeof(double), "exercise row maxima");
    e->entropy_scaled = xmalloc((size_t)T * sizeof(double), "exercise row entropies");
    e->entropy_unscaled = xmalloc((size_t)T * sizeof(double), "exercise row entropies");

    // np.random.seed(seed); Q = np.random.randn(T, dk); K = ...; V = ...  (row-major, in order)
    NumpyRng r;
    numpy_seed(&r, seed);
    lab_randn(e->Q, td, &r);
    lab_randn(e->K, td, &r);
    lab_randn(e->V, td, &r);
    e->dout = xmalloc(td * sizeof(real), "exercise dO");
    lab_randn(e->dout, td, &r);

    real scale = (real)(1.0 / sqrt((double)dk));
    lab_attention(e->out_scaled, e->weights_scaled, e->scores, e->Q, T, e->K, e->V, T, dk, scale,
                  e->causal);
    lab_attention(e->out_unscaled, e->weights_unscaled, e->scores, e->Q, T, e->K, e->V, T, dk, 1,
                  e->causal);
    lab_backward_alloc(&e->grad_scaled, T, dk);
    lab_backward_alloc(&e->grad_unscaled, T, dk);
    LabBackward *gs = &e->grad_scaled, *gu = &e->grad_unscaled;
    lab_attention_backward(gs, e->dout, e->weights_scaled, e->Q, e->K, e->V, T, dk, scale,
                           e->causal);
    lab_attention_backward(gu, e->dout, e->weights_unscaled, e->Q, e->K, e->V, T, dk, 1, e->causal);
    row_stats(e->weights_scaled, T, e->causal, e->rowmax_scaled, e->entropy_scaled,
              &e->mean_max_scaled, &e->mean_entropy_scaled, &e->stat_rows);
    row_stats(e->weights_unscaled, T, e->causal, e->rowmax_unscaled, e->entropy_unscaled,
              &e->mean_max_unscaled, &e->mean_entropy_unscaled, &e->stat_rows);
    return 1;
}

void lab_exercise_free(LabExercise *e) {
    free(e->Q);
    free(e->K);
    free(e->V);
    free(e->scores);
    free(e->weights_scaled);
    free(e->weights_unscaled);
    free(e->out_scaled);
    free(e->out_unscaled);
    free(e->rowmax_scaled);
    free(e->rowmax_unscaled);
    free(e->entropy_scaled);
    free(e->entropy_unscaled);
    free(e->dout);
    lab_backward_free(&e->grad_scaled);
    lab_backward_free(&e->grad_unscaled);
    memset(e, 0, sizeof *e);
}

// ---------------------------------------------------------------------------------------------
// the online softmax

// The largest |a[i] - b[i]| over n entries, in double (a NaN difference is skipped, as fmax
// skips it; written as a comparison because gcc 12 for aarch64 fails on an fmax reduction whose
// operands are converted from float)
static double max_abs_diff(const real *a, const real *b, int n) {
    double d = 0.0;
    for (int i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        d = e > d ? e : d;
    }
    return d;
}

int lab_online_softmax(LabOnline *o, const char *group, const real *Q, const real *K, const real *V,
                       int T, int dk, real scale, int block) {
    memset(o, 0, sizeof *o);
    if (T < 1 || T > LAB_ONLINE_MAX_T || dk < 1 || dk > LAB_ONLINE_MAX_DK || block < 1) return 0;
    o->group = group;
    o->T = T;
    o->dk = dk;
    o->block = block < T ? block : T;
    o->n_blocks = (T + o->block - 1) / o->block;
    o->scale = scale;
    memcpy(o->Q, Q, (size_t)T * dk * sizeof(real));
    memcpy(o->K, K, (size_t)T * dk * sizeof(real));
    memcpy(o->V, V, (size_t)T * dk * sizeof(real));
    // the softmax to reach: attention.c's, whose scratch keeps the scores S it computed
    real scratch[2 * LAB_ONLINE_MAX_T * LAB_ONLINE_MAX_T + LAB_ONLINE_MAX_DK];
    AttnSpec spec = {scale, ATTN_MASK_NONE, SOFTMAX_OVER_KEYS, 0, NULL};
    attention_forward(o->O, o->P, scratch, (AttnQKV){Q, K, V}, (AttnShape){1, T, dk, 1}, &spec,
                      NULL);
    memcpy(o->S, scratch, (size_t)T * T * sizeof(real));

    for (int t = 0; t < T; t++) {
        const real *s = o->S + (size_t)t * T;
        real m = -INFINITY, l = 0, acc[LAB_ONLINE_MAX_DK] = {0};
        real lp = 0, accp[LAB_ONLINE_MAX_DK] = {0};  // the same without the rescaling
        for (int j = 0; j < o->n_blocks; j++) {
            int u0 = j * o->block, u1 = u0 + o->block < T ? u0 + o->block : T;
            real bmax = s[u0];
            for (int u = u0 + 1; u < u1; u++) bmax = s[u] > bmax ? s[u] : bmax;
            real m_new = bmax > m ? bmax : m;
            real c = real_exp(m - m_new);  // exp(-inf) = 0 before the first block
            real bsum = 0;
            for (int i = 0; i < dk; i++) acc[i] *= c;
            for (int u = u0; u < u1; u++) {
                real e = real_exp(s[u] - m_new);
                bsum += e;
                for (int i = 0; i < dk; i++) acc[i] += e * V[(size_t)u * dk + i];
                for (int i = 0; i < dk; i++) accp[i] += e * V[(size_t)u * dk + i];
            }
            lp += bsum;
            o->l_plain[j][t] = lp;
            for (int i = 0; i < dk; i++) o->o_plain[j][(size_t)t * dk + i] = accp[i];
            o->m_old[j][t] = m;
            o->block_max[j][t] = bmax;
            o->m_new[j][t] = m_new;
            o->rescale[j][t] = c;
            o->l_old[j][t] = l;
            o->block_sum[j][t] = bsum;
            l = l * c + bsum;
            o->l_new[j][t] = l;
            m = m_new;
            for (int i = 0; i < dk; i++) o->o[j][(size_t)t * dk + i] = acc[i];
        }
        o->L[t] = m + (real)log((double)l);
        for (int u = 0; u < T; u++) o->P_online[(size_t)t * T + u] = real_exp(s[u] - m) / l;
        for (int i = 0; i < dk; i++) o->O_online[(size_t)t * dk + i] = acc[i] / l;
        double dp = max_abs_diff(o->P_online + (size_t)t * T, o->P + (size_t)t * T, T);
        double dO = max_abs_diff(o->O_online + (size_t)t * dk, o->O + (size_t)t * dk, dk);
        double rs = 0.0, dOp;
        for (int u = 0; u < T; u++) {
            o->P_plain[(size_t)t * T + u] = real_exp(s[u] - m) / lp;
            rs += o->P_plain[(size_t)t * T + u];
        }
        for (int i = 0; i < dk; i++) o->O_plain[(size_t)t * dk + i] = accp[i] / lp;
        dOp = max_abs_diff(o->O_plain + (size_t)t * dk, o->O + (size_t)t * dk, dk);
        o->plain_rowsum[t] = rs;
        o->O_plain_diff[t] = dOp;
        o->max_O_plain_diff = fmax(o->max_O_plain_diff, dOp);
        o->P_diff[t] = dp;
        o->O_diff[t] = dO;
        o->max_P_diff = fmax(o->max_P_diff, dp);
        o->max_O_diff = fmax(o->max_O_diff, dO);
    }
    return 1;
}

int lab_online_lesson(LabOnline out[LAB_ONLINE_PROBLEMS], int block) {
    if (!lab_online_softmax(&out[0], "t3", LAB_T3_Q, LAB_T3_Q, LAB_T3_V, 3, 2,
                            (real)(1.0 / sqrt(2.0)), block))
        return 0;
    LabExercise e;  // `./lab exercise`'s default draw
    if (!lab_exercise_run(&e, 0, 5, 8, 0)) return 0;
    int ok = lab_online_softmax(&out[1], "exercise", e.Q, e.K, e.V, 5, 8, (real)(1.0 / sqrt(8.0)),
                                block);
    lab_exercise_free(&e);
    return ok;
}

// ---------------------------------------------------------------------------------------------
// the softmax on its own

void lab_softmax_jacobian(real *J, const real *p, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) J[(size_t)i * n + j] = (i == j ? p[i] : 0) - p[i] * p[j];
}

void lab_softmax_vjp(real *ds, real *p, const real *s, const real *upstream, int n) {
    softmax_forward(p, s, n);
    softmax_backward(ds, upstream, p, n);
}

static double upstream_dot_softmax(const real *s, const real *upstream, real *p, int n) {
    softmax_forward(p, s, n);
    double f = 0.0;
    for (int i = 0; i < n; i++) f += (double)upstream[i] * p[i];
    return f;
}

void lab_softmax_vjp_fd(double *ds, const real *s, const real *upstream, int n, double h) {
    real *x = xmalloc((size_t)n * sizeof(real), "finite differences");
    real *p = xmalloc((size_t)n * sizeof(real), "finite differences");
    memcpy(x, s, (size_t)n * sizeof(real));
    for (int i = 0; i < n; i++) {
        real orig = x[i];
        real plus = (real)(orig + h), minus = (real)(orig - h);
        x[i] = plus;
        double fp = upstream_dot_softmax(x, upstream, p, n);
        x[i] = minus;
        double fm = upstream_dot_softmax(x, upstream, p, n);
        x[i] = orig;
        // divide by the step actually taken (orig + h is rounded to `real`)
        ds[i] = (fp - fm) / ((double)plus - (double)minus);
    }
    free(x);
    free(p);
}

double lab_softmax_fd_step(void) { return sizeof(real) == 8 ? 1e-6 : 1e-3; }

void lab_softmax_scale_row(LabSoftmaxScale *row, const real *s, const real *upstream, int n,
                           double factor) {
    real *x = xmalloc((size_t)n * sizeof(real), "softmax scale row");
    real *p = xmalloc((size_t)n * sizeof(real), "softmax scale row");
    real *ds = xmalloc((size_t)n * sizeof(real), "softmax scale row");
    real *J = xmalloc((size_t)n * n * sizeof(real), "softmax Jacobian");
    for (int i = 0; i < n; i++) x[i] = (real)(factor * s[i]);
    lab_softmax_vjp(ds, p, x, upstream, n);
    lab_softmax_jacobian(J, p, n);
    row->factor = factor;
    attention_row_stats(p, n, &row->entropy, &row->max_p);
    double f2 = 0.0, v2 = 0.0;
    for (size_t i = 0; i < (size_t)n * n; i++) f2 += (double)J[i] * J[i];
    for (int i = 0; i < n; i++) v2 += (double)ds[i] * ds[i];
    row->jac_frob = sqrt(f2);
    row->vjp_norm = sqrt(v2);
    free(x);
    free(p);
    free(ds);
    free(J);
}

// ---------------------------------------------------------------------------------------------
// the whole-model gradient check

double gradcheck_step(void) { return sizeof(real) == 8 ? 2e-3 : 1e-2; }
double gradcheck_tolerance(void) { return sizeof(real) == 8 ? 1e-6 : 5e-2; }

void gradcheck_tiny_dims(ModelDims *d) {
    d->vocab_size = GRADCHECK_TINY_VOCAB;
    d->block_size = 6;
    d->n_layer = 2;
    d->n_head = 2;
    d->n_embd = 8;
    d->qk_norm = QK_NORM_NONE;
}

void gradcheck_tokens(int *x, int *y, int B, int T, int V, uint64_t seed) {
    Rng r;
    rng_seed(&r, seed);
    for (int b = 0; b < B; b++) {
        int prev = (int)rng_below(&r, (uint64_t)V);
        for (int t = 0; t < T; t++) {
            int next = (int)rng_below(&r, (uint64_t)V);
            x[(size_t)b * T + t] = prev;
            y[(size_t)b * T + t] = next;
            prev = next;
        }
    }
}

// Indices of the elements to check: all of [0, n) when n <= k (or k <= 0), else k distinct ones
// by Floyd's algorithm, sorted. Returns the count.
static size_t pick_elements(size_t *idx, size_t n, int k, Rng *r) {
    if (k <= 0 || n <= (size_t)k) {
        for (size_t i = 0; i < n; i++) idx[i] = i;
        return n;
    }
    size_t m = 0;
    for (size_t j = n - (size_t)k; j < n; j++) {
        size_t t = (size_t)rng_below(r, (uint64_t)j + 1);
        int seen = 0;
        for (size_t i = 0; i < m; i++)
            if (idx[i] == t) {
                seen = 1;
                break;
            }
        idx[m++] = seen ? j : t;
    }
    for (size_t i = 1; i < m; i++)  // insertion sort: m <= k is small
        for (size_t j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
            size_t tmp = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = tmp;
        }
    return m;
}

// d(loss)/d(*param) by the sixth-order central difference
//   (45 (L(+h) - L(-h)) - 9 (L(+2h) - L(-2h)) + (L(+3h) - L(-3h))) / (60 h),
// whose truncation error is O(h^6): it allows a step large enough that round-off in the loss
// (about one ulp of L, divided by h) stays far below even the small gradients of wq and wk.
static double numeric_grad(GPT *m, const int *x, const int *y, int B, int T, real *param,
                           double h) {
    real orig = *param;
    double l[6];
    for (int i = 0; i < 6; i++) {
        double k = (double)(i / 2 + 1) * (i % 2 ? -1.0 : 1.0);  // +1, -1, +2, -2, +3, -3
        // orig + k h is rounded to `real`; the error (half an ulp of orig) is below 1e-13 of h in
        // float64 and about 1e-6 of h in float32, far inside either tolerance
        *param = (real)(orig + k * h);
        l[i] = gpt_forward(m, x, y, B, T);
    }
    *param = orig;
    return (45.0 * (l[0] - l[1]) - 9.0 * (l[2] - l[3]) + (l[4] - l[5])) / (60.0 * h);
}

// The broken backward is the definition's plus what the dropped term takes away. That term is
// r_t = rowsum(dP * P)[t] = sum_u (dO[t] . V[u]) P[t][u] = dO[t] . O[t], so with E = P * r
// (E[t][u] = P[t][u] r_t):  dQ_broken = dQ + scale * E K,  dK_broken = dK + scale * E^T Q.
static void broken_attention_backward(AttnGradQKV grad, real *scratch, const real *dout,
                                      const real *out, const real *att, AttnQKV in, AttnShape shape,
                                      const AttnSpec *spec, AttnStats *stats, real *row_gain,
                                      GradWrite write) {
    attention_backward(grad, scratch, dout, out, att, in, shape, spec, stats, row_gain, write);
    int B = shape.B, T = shape.T, C = shape.C, NH = shape.NH, hd = C / NH;
    const real *q = in.q, *k = in.k, *v = in.v;
    real *dq = grad.dq, *dk = grad.dk;
    real *r = scratch;  // r_t of the current head (T)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t off = (size_t)b * T * C + h * hd;
            const real *P = att + ((size_t)b * NH + h) * T * T;
            // r_t = dO[t] . O[t], with O[t] = sum_u P[t][u] V[u]
            for (int t = 0; t < T; t++) {
                r[t] = 0;
                for (int i = 0; i < hd; i++) {
                    real o = 0;
                    for (int u = 0; u < T; u++) o += P[t * T + u] * v[off + (size_t)u * C + i];
                    r[t] += dout[off + (size_t)t * C + i] * o;
                }
            }
            // dQ[t] += scale * sum_u P[t][u] r_t K[u];  dK[u] += scale * sum_t P[t][u] r_t Q[t]
            for (int t = 0; t < T; t++)
                for (int u = 0; u < T; u++) {
                    real e = spec->scale * P[t * T + u] * r[t];
                    for (int i = 0; i < hd; i++) {
                        dq[off + (size_t)t * C + i] += e * k[off + (size_t)u * C + i];
                        dk[off + (size_t)u * C + i] += e * q[off + (size_t)t * C + i];
                    }
                }
        }
}

static int broken_supports(const AttnSpec *spec) {
    return spec->mask == ATTN_MASK_CAUSAL && spec->axis == SOFTMAX_OVER_KEYS;
}

const AttentionImpl lab_broken_attention = {"broken (no rowsum term)",
                                            attention_forward,
                                            broken_attention_backward,
                                            broken_supports,
                                            1,
                                            attention_decode,
                                            attention_definition_saved_reals,
                                            attention_definition_scratch_reals,
                                            qk_norm_forward,
                                            qk_norm_backward};

int gradcheck_model(GPT *m, const int *x, const int *y, int B, int T, int max_per_tensor,
                    uint64_t seed, GradcheckRow *rows) {
#ifdef _OPENMP
    // A tiny model spends its time in OpenMP barriers: run the thousands of forwards on one
    // thread (the kernels give the same bits for any thread count) and restore afterwards.
    int threads = omp_get_max_threads();
    if ((size_t)B * T * m->dims.n_embd <= 1024) omp_set_num_threads(1);
#endif
    // the analytic gradient of the mean cross-entropy (gpt_backward overwrites m->grads)
    double loss = gpt_forward(m, x, y, B, T);
    gpt_backward(m);

    double h = gradcheck_step(), tol = gradcheck_tolerance();
    double eps = sizeof(real) == 8 ? 2.220446049250313e-16 : 1.1920928955078125e-7;
    double noise = eps * fmax(fabs(loss), 1.0) / h;
    Rng r;
    rng_seed(&r, seed);
    size_t max_size = 1;
    for (int ti = 0; ti < m->n_tensors; ti++)
        if (m->tensors[ti].size > max_size) max_size = m->tensors[ti].size;
    size_t cap =
        max_per_tensor > 0 && (size_t)max_per_tensor < max_size ? (size_t)max_per_tensor : max_size;
    size_t *idx = xmalloc(cap * sizeof(size_t), "gradient check indices");

    int failed = 0;
    for (int ti = 0; ti < m->n_tensors; ti++) {
        const TensorInfo *t = &m->tensors[ti];
        GradcheckRow *row = &rows[ti];
        memset(row, 0, sizeof *row);
        snprintf(row->name, sizeof row->name, "%s", t->name);
        row->size = t->size;
        row->noise = noise;
        row->checked = pick_elements(idx, t->size, max_per_tensor, &r);
        real *p = m->params + t->offset;
        const real *g = m->grads + t->offset;
        double scale = 0.0;
        for (size_t j = 0; j < row->checked; j++) {
            double a = g[idx[j]];
            double n = numeric_grad(m, x, y, B, T, p + idx[j], h);
            double d = fabs(a - n);
            if (isnan(d) || isnan(row->max_abs_err))
                row->max_abs_err = NAN;  // a NaN anywhere fails
            else if (d > row->max_abs_err)
                row->max_abs_err = d;
            if (fabs(a) > row->max_grad) row->max_grad = fabs(a);
            scale = fmax(scale, fmax(fabs(a), fabs(n)));
        }
        row->rel_err =
            scale > 0 ? row->max_abs_err / scale : (row->max_abs_err > 0 ? INFINITY : 0.0);
        if (isnan(row->max_abs_err)) row->rel_err = NAN;
        if (row->rel_err <= tol)
            row->status = GRADCHECK_PASS;
        else if (scale < GRADCHECK_RESOLUTION * noise && !isnan(row->rel_err))
            row->status = GRADCHECK_TOO_SMALL;
        else
            row->status = GRADCHECK_FAIL;
        if (row->status == GRADCHECK_FAIL) failed++;
    }
    // leave the activations of the unperturbed parameters (m->grads was never touched above)
    gpt_forward(m, x, y, B, T);
    free(idx);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    return failed;
}

int gradcheck_print(FILE *f, const GradcheckRow *rows, int n) {
    int failed = 0, small = 0, w = 6;
    for (int i = 0; i < n; i++)
        if ((int)strlen(rows[i].name) > w) w = (int)strlen(rows[i].name);
    double tol = gradcheck_tolerance();
    fprintf(f, "%-*s  %7s  %7s  %10s  %11s  %11s  %s\n", w, "tensor", "size", "checked",
            "max|grad|", "max abs err", "rel err", "result");
    for (int i = 0; i < n; i++) {
        const GradcheckRow *r = &rows[i];
        const char *res = r->status == GRADCHECK_PASS   ? "pass"
                          : r->status == GRADCHECK_FAIL ? "FAIL"
                                                        : "too small";
        fprintf(f, "%-*s  %7zu  %7zu  %10.3e  %11.3e  %11.3e  %s\n", w, r->name, r->size,
                r->checked, r->max_grad, r->max_abs_err, r->rel_err, res);
        if (r->status == GRADCHECK_FAIL) failed++;
        if (r->status == GRADCHECK_TOO_SMALL) small++;
    }
    fprintf(f,
            "rel err = max |analytic - numeric| / max(|analytic|, |numeric|) over the tensor; pass "
            "if <= %g\n",
            tol);
    if (small)
        fprintf(f,
                "too small: the tensor's gradient is below %g x the finite-difference noise (%.1e) "
                "of %s; "
                "check it with the float64 build\n",
                GRADCHECK_RESOLUTION, n > 0 ? rows[0].noise : 0.0, REAL_NAME);
    if (failed == 0)
        fprintf(f, "verdict: PASS: %d of %d tensors agree with finite differences%s\n", n - small,
                n, small ? " (the rest too small to check)" : "");
    else
        fprintf(f, "verdict: FAIL: %d of %d tensors disagree with finite differences\n", failed, n);
    return failed;
}
