// tests/test_model.c: each layer's backward against central finite differences, the attention
// worked examples, and training behaviour (overfitting one batch, determinism).
//
// Every check projects the layer's output on a fixed random tensor R and differentiates
// L = sum(R * out): a generic direction, so no term of the gradient can cancel out (unlike
// sum(softmax), which is constant). In the float64 build (`run_tests64 --only gradcheck`) the
// agreement must be within 1e-6; the float32 build runs the same checks with a looser bound.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../attention.h"
#include "../generate.h"
#include "../matmul.h"
#include "../model.h"
#include "../rng.h"
#include "test.h"

#define IS_F64 (sizeof(real) == 8)
#define FD_STEP (IS_F64 ? 1e-6 : 1e-2)
#define FD_TOL (IS_F64 ? 1e-6 : 3e-2)

static real *randn_array(size_t n, Rng *rng, double std) {
    real *a = malloc(n * sizeof(real));
    for (size_t i = 0; i < n; i++) a[i] = (real)(std * rng_normal(rng));
    return a;
}

static real *zeros(size_t n) { return calloc(n, sizeof(real)); }

// what attention_forward and attention_backward need: their scratch for every thread
static real *attn_scratch(int T, int hd) { return zeros(attention_scratch_size(T, hd) * (size_t)thread_max()); }

static double dot_r(const real *a, const real *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

// Error of an analytic gradient against the numerical one, relative to the gradient's scale:
// max_i |a_i - n_i| / max(max_i |n_i|, 1e-8).
static double grad_error(const real *analytic, const double *numeric, size_t n) {
    double maxdiff = 0, scale = 1e-8;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)analytic[i] - numeric[i]);
        if (d > maxdiff) maxdiff = d;
        if (fabs(numeric[i]) > scale) scale = fabs(numeric[i]);
    }
    return maxdiff / scale;
}

// A scalar function of the current contents of some arrays.
typedef double (*LossFn)(void *ctx);

static void numeric_grad(LossFn f, void *ctx, real *x, size_t n, double *out) {
    for (size_t i = 0; i < n; i++) {
        real saved = x[i];
        x[i] = (real)(saved + FD_STEP);
        double lp = f(ctx);
        x[i] = (real)(saved - FD_STEP);
        double lm = f(ctx);
        x[i] = saved;
        out[i] = (lp - lm) / (2 * FD_STEP);
    }
}

static double check_grad(LossFn f, void *ctx, real *x, const real *analytic, size_t n, const char *what) {
    double *num = malloc(n * sizeof(double));
    numeric_grad(f, ctx, x, n, num);
    double err = grad_error(analytic, num, n);
    CHECK_MSG(err < FD_TOL, "%s: relative error %.3g (tolerance %.1g)", what, err, FD_TOL);
    free(num);
    return err;
}

// ---- matmul ----
typedef struct { int N, C, OC; real *inp, *w, *out, *R; } MatmulCtx;
static double matmul_loss(void *vc) {
    MatmulCtx *c = vc;
    matmul_forward(c->out, c->inp, c->w, c->N, c->C, c->OC);
    return dot_r(c->out, c->R, (size_t)c->N * c->OC);
}
static void gradcheck_matmul(void) {
    Rng rng;
    rng_seed(&rng, 1);
    MatmulCtx c = {7, 5, 9, NULL, NULL, NULL, NULL};
    c.inp = randn_array(35, &rng, 1); c.w = randn_array(45, &rng, 1); c.out = zeros(63); c.R = randn_array(63, &rng, 1);
    real *dinp = zeros(35), *dw = zeros(45);
    matmul_loss(&c);
    matmul_backward(dinp, dw, c.R, c.inp, c.w, c.N, c.C, c.OC, GRAD_ADD, GRAD_ADD);
    check_grad(matmul_loss, &c, c.inp, dinp, 35, "matmul dinp");
    check_grad(matmul_loss, &c, c.w, dw, 45, "matmul dweight");
    free(c.inp); free(c.w); free(c.out); free(c.R); free(dinp); free(dw);
}

// ---- layernorm ----
typedef struct { int N, C; real *inp, *w, *b, *out, *mean, *rstd, *R; } LnCtx;
static double ln_loss(void *vc) {
    LnCtx *c = vc;
    layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->C);
    return dot_r(c->out, c->R, (size_t)c->N * c->C);
}
static void gradcheck_layernorm(void) {
    Rng rng;
    rng_seed(&rng, 2);
    LnCtx c = {4, 6, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n = 24;
    c.inp = randn_array(n, &rng, 1); c.w = randn_array(6, &rng, 1); c.b = randn_array(6, &rng, 1);
    c.out = zeros(n); c.mean = zeros(4); c.rstd = zeros(4); c.R = randn_array(n, &rng, 1);
    real *dinp = zeros(n), *dw = zeros(6), *db = zeros(6);
    ln_loss(&c);
    layernorm_backward(dinp, dw, db, c.R, c.inp, c.w, c.mean, c.rstd, c.N, c.C);
    check_grad(ln_loss, &c, c.inp, dinp, n, "layernorm dinp");
    check_grad(ln_loss, &c, c.w, dw, 6, "layernorm dweight");
    check_grad(ln_loss, &c, c.b, db, 6, "layernorm dbias");
    free(c.inp); free(c.w); free(c.b); free(c.out); free(c.mean); free(c.rstd); free(c.R);
    free(dinp); free(dw); free(db);
}

// ---- gelu ----
typedef struct { size_t n; real *inp, *out, *dgelu, *R; } GeluCtx;
static double gelu_loss(void *vc) {
    GeluCtx *c = vc;
    gelu_forward(c->out, c->dgelu, c->inp, c->n);
    return dot_r(c->out, c->R, c->n);
}
static void gradcheck_gelu(void) {
    Rng rng;
    rng_seed(&rng, 3);
    GeluCtx c = {40, NULL, NULL, NULL, NULL};
    c.inp = randn_array(40, &rng, 2); c.out = zeros(40); c.dgelu = zeros(40); c.R = randn_array(40, &rng, 1);
    real *dinp = zeros(40);
    gelu_forward(c.out, c.dgelu, c.inp, 40);
    gelu_backward(dinp, c.dgelu, c.R, 40, GRAD_ADD);  // before check_grad reuses c.dgelu as scratch
    check_grad(gelu_loss, &c, c.inp, dinp, 40, "gelu dinp");
    free(c.inp); free(c.out); free(c.dgelu); free(c.R); free(dinp);
}

// The model saves GELU' over GELU's own input (dgelu == inp): the same values as into a separate
// buffer, and the same output, at a length that exercises the vector body and its tail.
static void test_gelu_derivative_in_place(void) {
    Rng rng;
    rng_seed(&rng, 5);
    size_t n = 1003;
    real *x = randn_array(n, &rng, 3), *x_copy = zeros(n), *out = zeros(n), *out2 = zeros(n), *dg = zeros(n);
    memcpy(x_copy, x, n * sizeof(real));
    gelu_forward(out, dg, x, n);
    gelu_forward(out2, x_copy, x_copy, n);
    int same = 1;
    for (size_t i = 0; i < n; i++) same &= out[i] == out2[i] && dg[i] == x_copy[i];
    CHECK_MSG(same, "gelu_forward with dgelu == inp differs from a separate buffer");
    // and GELU' is the derivative: the slope of GELU at x = 1 (Phi(1) + phi(1) = 1.0833155)
    real one = 1, o, d;
    gelu_forward(&o, &d, &one, 1);
    CHECK_MSG(fabs(d - 1.0833155) < 1e-5, "GELU'(1) = %g, expected 1.0833155", (double)d);
    free(x); free(x_copy); free(out); free(out2); free(dg);
}

// GELU and GELU' (fast exp and erf in float, one exponential shared) against libm in double
// over [-10, 10]: within a few float roundings everywhere.
static void test_gelu_matches_libm(void) {
    size_t n = 20001;
    real *x = zeros(n), *out = zeros(n), *dg = zeros(n);
    for (size_t i = 0; i < n; i++) x[i] = (real)(-10.0 + 20.0 * (double)i / (double)(n - 1));
    gelu_forward(out, dg, x, n);
    double worst_out = 0, worst_dg = 0;
    for (size_t i = 0; i < n; i++) {
        double xi = x[i], phi = 0.5 * (1 + erf(xi / sqrt(2.0))), pdf = exp(-0.5 * xi * xi) / 2.5066282746310002;  // sqrt(2 pi)
        double e_out = fabs(out[i] - xi * phi) / (1 + fabs(xi)), e_dg = fabs(dg[i] - (phi + xi * pdf));
        if (e_out > worst_out) worst_out = e_out;
        if (e_dg > worst_dg) worst_dg = e_dg;
    }
    CHECK_MSG(worst_out < 1e-6, "GELU off by %.3g (relative to 1 + |x|)", worst_out);
    CHECK_MSG(worst_dg < 1e-6, "GELU' off by %.3g", worst_dg);
    free(x); free(out); free(dg);
}

// ---- cross-entropy: mean over rows of logsumexp(logits) - logits[target] ----
typedef struct { int N, V; real *logits, *work, *losses; int *targets; } CeCtx;
static double ce_loss(void *vc) {
    CeCtx *c = vc;
    memcpy(c->work, c->logits, sizeof(real) * (size_t)c->N * c->V);
    crossentropy_forward(c->work, c->losses, c->targets, c->N, c->V);
    double s = 0;
    for (int i = 0; i < c->N; i++) s += c->losses[i];
    return s / c->N;
}
static void gradcheck_crossentropy(void) {
    Rng rng;
    rng_seed(&rng, 4);
    int targets[5] = {0, 3, 6, 2, 2};
    CeCtx c = {5, 7, NULL, NULL, NULL, targets};
    c.logits = randn_array(35, &rng, 2); c.work = zeros(35); c.losses = zeros(5);
    ce_loss(&c);
    real *dlogits = zeros(35);
    crossentropy_backward(dlogits, c.work, targets, 5, 7);
    check_grad(ce_loss, &c, c.logits, dlogits, 35, "crossentropy dlogits");
    // stability: huge logits must not overflow
    for (int i = 0; i < 35; i++) c.logits[i] = (real)(1e4 * (i % 3));
    CHECK(isfinite(ce_loss(&c)));
    free(c.logits); free(c.work); free(c.losses); free(dlogits);
}

// ---- encoder ----
typedef struct { int B, T, C, V; int *inp; real *wte, *wpe, *out, *R; } EncCtx;
static double enc_loss(void *vc) {
    EncCtx *c = vc;
    encoder_forward(c->out, c->inp, c->wte, c->wpe, c->B, c->T, c->C);
    return dot_r(c->out, c->R, (size_t)c->B * c->T * c->C);
}
static void gradcheck_encoder(void) {
    Rng rng;
    rng_seed(&rng, 5);
    int inp[6] = {1, 1, 3, 0, 1, 2};  // repeated tokens accumulate
    EncCtx c = {2, 3, 4, 5, inp, NULL, NULL, NULL, NULL};
    c.wte = randn_array(20, &rng, 1); c.wpe = randn_array(12, &rng, 1); c.out = zeros(24); c.R = randn_array(24, &rng, 1);
    real *dwte = zeros(20), *dwpe = zeros(12);
    encoder_backward(dwte, dwpe, c.R, inp, 2, 3, 4);
    check_grad(enc_loss, &c, c.wte, dwte, 20, "encoder dwte");
    check_grad(enc_loss, &c, c.wpe, dwpe, 12, "encoder dwpe");
    free(c.wte); free(c.wpe); free(c.out); free(c.R); free(dwte); free(dwpe);
}

// ---- the attention core (scale, causal mask, softmax, P V) ----
typedef struct { int B, T, C, NH; real scale; real *q, *k, *v, *att, *out, *R, *scratch; } AttCtx;
static double att_loss(void *vc) {
    AttCtx *c = vc;
    attention_forward(c->out, c->att, c->scratch, c->q, c->k, c->v, c->B, c->T, c->C, c->NH, c->scale, NULL);
    return dot_r(c->out, c->R, (size_t)c->B * c->T * c->C);
}
static void attention_gradcheck_with(real scale_override, double std) {
    Rng rng;
    rng_seed(&rng, 6);
    AttCtx c = {2, 5, 6, 2, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n = (size_t)c.B * c.T * c.C;
    c.scale = scale_override > 0 ? scale_override : (real)(1.0 / sqrt(c.C / c.NH));
    c.q = randn_array(n, &rng, std); c.k = randn_array(n, &rng, std); c.v = randn_array(n, &rng, 1);
    c.att = zeros((size_t)c.B * c.NH * c.T * c.T); c.out = zeros(n); c.R = randn_array(n, &rng, 1);
    real *dq = zeros(n), *dk = zeros(n), *dv = zeros(n), *scratch = attn_scratch(c.T, c.C / c.NH);
    c.scratch = scratch;
    att_loss(&c);
    attention_backward(dq, dk, dv, scratch, c.R, c.att, c.q, c.k, c.v, c.B, c.T, c.C, c.NH, c.scale, NULL, NULL, GRAD_ADD);
    check_grad(att_loss, &c, c.q, dq, n, "attention dq");
    check_grad(att_loss, &c, c.k, dk, n, "attention dk");
    check_grad(att_loss, &c, c.v, dv, n, "attention dv");
    free(c.q); free(c.k); free(c.v); free(c.att); free(c.out); free(c.R); free(dq); free(dk); free(dv); free(scratch);
}
static void gradcheck_attention_scaled(void) { attention_gradcheck_with(0, 1.0); }
static void gradcheck_attention_unscaled(void) { attention_gradcheck_with(1, 1.0); }

// The check must catch a wrong backward: dropping "- rowsum(dP * P)" breaks dq and dk.
static void gradcheck_attention_catches_broken_backward(void) {
    Rng rng;
    rng_seed(&rng, 7);
    AttCtx c = {1, 4, 4, 1, (real)0.5, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n = 16;
    c.q = randn_array(n, &rng, 1); c.k = randn_array(n, &rng, 1); c.v = randn_array(n, &rng, 1);
    c.att = zeros(16); c.out = zeros(n); c.R = randn_array(n, &rng, 1);
    real *dq = zeros(n), *dk = zeros(n), *dv = zeros(n), *scratch = attn_scratch(4, 4);
    c.scratch = scratch;
    att_loss(&c);
    g_attention_break_backward = 1;
    attention_backward(dq, dk, dv, scratch, c.R, c.att, c.q, c.k, c.v, 1, 4, 4, 1, c.scale, NULL, NULL, GRAD_ADD);
    g_attention_break_backward = 0;
    double *num = malloc(n * sizeof(double));
    numeric_grad(att_loss, &c, c.q, n, num);
    CHECK(grad_error(dq, num, n) > 10 * FD_TOL);
    free(num);
    free(c.q); free(c.k); free(c.v); free(c.att); free(c.out); free(c.R); free(dq); free(dk); free(dv); free(scratch);
}

// softmax_backward is the VJP of softmax: compare with the full Jacobian J = diag(p) - p p^T.
static void gradcheck_softmax_vjp_matches_jacobian(void) {
    real s[5] = {2, 1, (real)0.1, -1, (real)0.5}, p[5], dp[5] = {(real)0.3, -1, 2, (real)0.7, 0}, ds[5] = {0};
    softmax_forward(p, s, 5);
    softmax_backward(ds, dp, p, 5);
    for (int i = 0; i < 5; i++) {
        double viaJ = 0;
        for (int j = 0; j < 5; j++) viaJ += ((i == j ? p[i] : 0) - (double)p[i] * p[j]) * dp[j];
        CHECK_NEAR(ds[i], viaJ, IS_F64 ? 1e-12 : 1e-6);
    }
}

// ---- worked examples ----
// One query [1,0] over keys [1,0],[0,1] with values [10,0],[0,10], d_k = 2, scaled: row 1 of a
// causal T=2 attention sees exactly those two keys.
static void test_attention_hand_computed_example(void) {
    real q[4] = {0, 0, 1, 0}, k[4] = {1, 0, 0, 1}, v[4] = {10, 0, 0, 10}, att[4], out[4];
    real *scratch = attn_scratch(2, 2);
    attention_forward(out, att, scratch, q, k, v, 1, 2, 2, 1, (real)(1.0 / sqrt(2.0)), NULL);
    free(scratch);
    double tol = IS_F64 ? 1e-6 : 2e-6;
    CHECK_NEAR(att[2], 0.669762, tol);
    CHECK_NEAR(att[3], 0.330238, tol);
    CHECK_NEAR(out[2], 6.697615, 10 * tol);
    CHECK_NEAR(out[3], 3.302385, 10 * tol);
}

// T=3: Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2, no mask: every row
// sees all keys, which is row-by-row softmax of the scaled scores.
static void test_attention_t3_example(void) {
    real Q[6] = {1, 0, 0, 1, 1, 1}, V[6] = {10, 0, 0, 10, 5, 5};
    real scale = (real)(1.0 / sqrt(2.0)), P[9], out[6] = {0};
    for (int t = 0; t < 3; t++) {
        real srow[3];
        for (int u = 0; u < 3; u++) srow[u] = (Q[2 * t] * Q[2 * u] + Q[2 * t + 1] * Q[2 * u + 1]) * scale;
        softmax_forward(P + 3 * t, srow, 3);
        for (int u = 0; u < 3; u++) { out[2 * t] += P[3 * t + u] * V[2 * u]; out[2 * t + 1] += P[3 * t + u] * V[2 * u + 1]; }
    }
    double tol = IS_F64 ? 1e-6 : 2e-6;
    CHECK_NEAR(P[0], 0.401112, tol);
    CHECK_NEAR(P[1], 0.197776, tol);
    CHECK_NEAR(P[2], 0.401112, tol);
    double expect[6] = {6.016681, 3.983319, 3.983319, 6.016681, 5, 5};
    for (int i = 0; i < 6; i++) CHECK_NEAR(out[i], expect[i], 10 * tol);
    // with the causal mask: masked weights exactly 0, rows summing to 1
    real att[9], cout_[6], *scratch = attn_scratch(3, 2);
    attention_forward(cout_, att, scratch, Q, Q, V, 1, 3, 2, 1, scale, NULL);
    free(scratch);
    for (int t = 0; t < 3; t++) {
        double sum = 0;
        for (int u = 0; u < 3; u++) {
            if (u > t) CHECK(att[3 * t + u] == 0);
            sum += att[3 * t + u];
        }
        CHECK_NEAR(sum, 1.0, 1e-6);
    }
    CHECK(att[0] == 1);
    CHECK_NEAR(cout_[0], 10, 1e-5);
}

// ---- attention statistics on a hand-built P ----
static void test_attention_row_stats(void) {
    real uniform[4] = {0.25, 0.25, 0.25, 0.25}, onehot[3] = {0, 1, 0};
    double h, m;
    attention_row_stats(uniform, 4, &h, &m);
    CHECK_NEAR(h, log(4.0), 1e-6);
    CHECK_NEAR(m, 0.25, 1e-7);
    attention_row_stats(onehot, 3, &h, &m);
    CHECK_NEAR(h, 0.0, 1e-12);
    CHECK_NEAR(m, 1.0, 1e-12);
}

// Equal scores give uniform causal rows: normalised entropy exactly 1 for every row t >= 1,
// and row 0 (one key) is left out of the row counts.
static void test_attention_stats_uniform_and_row0(void) {
    int T = 6, C = 4;
    real *q = zeros((size_t)T * C), *k = zeros((size_t)T * C), *v = zeros((size_t)T * C);
    real *att = zeros((size_t)T * T), *out = zeros((size_t)T * C), *scratch = attn_scratch(T, C);
    AttnStats st;
    memset(&st, 0, sizeof st);
    attention_forward(out, att, scratch, q, k, v, 1, T, C, 1, 1, &st);
    CHECK_NEAR(st.rows, T - 1, 0);
    CHECK_NEAR(st.entropy_norm / st.rows, 1.0, 1e-6);
    double expect_max = 0;
    for (int t = 1; t < T; t++) expect_max += 1.0 / (t + 1);
    CHECK_NEAR(st.max_weight / st.rows, expect_max / (T - 1), 1e-6);
    CHECK_NEAR(st.rows_gt_090, 0, 0);
    CHECK_NEAR(st.score_n, T * (T + 1) / 2, 0);
    free(q); free(k); free(v); free(att); free(out); free(scratch);
}

// Large scores saturate rows: with keys aligned to queries scaled by 50, every row t >= 1
// puts > 0.99 on its best key; the fractions count exactly those rows.
static void test_attention_stats_peaked(void) {
    int T = 5, C = 2;
    real q[10], k[10], v[10] = {0};
    for (int t = 0; t < T; t++) {
        q[2 * t] = 50; q[2 * t + 1] = 0;
        k[2 * t] = (real)(t == 0 ? 1 : 0); k[2 * t + 1] = 0;  // only key 0 matches
    }
    real att[25], out[10], *scratch = attn_scratch(T, C);
    AttnStats st;
    memset(&st, 0, sizeof st);
    attention_forward(out, att, scratch, q, k, v, 1, T, C, 1, 1, &st);
    free(scratch);
    CHECK_NEAR(st.rows, 4, 0);
    CHECK_NEAR(st.rows_gt_099, 4, 0);
    CHECK_NEAR(st.rows_gt_090, 4, 0);
    CHECK(st.entropy_norm / st.rows < 0.01);
    CHECK_NEAR(st.score_absmax, 50, 1e-5);
}

// ---- the blocked kernels against plain loops, on shapes that end mid-tile ----
// Decoding one position must give row `pos` of attention_forward bit for bit (KV-cache
// generation relies on it), whatever the head width and however the rows fall into tiles.
static void test_attention_decode_matches_forward_rows(void) {
    int shapes[][3] = {{37, 40, 2}, {19, 96, 3}, {8, 3, 1}, {70, 128, 2}};  // T, C, NH
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int T = shapes[s][0], C = shapes[s][1], NH = shapes[s][2];
        Rng rng;
        rng_seed(&rng, 11 + (uint64_t)s);
        size_t n = (size_t)T * C;
        real *q = randn_array(n, &rng, 1), *k = randn_array(n, &rng, 1), *v = randn_array(n, &rng, 1);
        real *att = zeros((size_t)NH * T * T), *out = zeros(n), *scratch = attn_scratch(T, C / NH);
        real *row = zeros((size_t)C), *scores = zeros((size_t)T);
        real scale = (real)(1.0 / sqrt((double)C / NH));
        attention_forward(out, att, scratch, q, k, v, 1, T, C, NH, scale, NULL);
        int rows_equal = 0, p_equal = 0;
        for (int pos = 0; pos < T; pos++) {
            attention_decode_step(row, scores, q + (size_t)pos * C, k, v, pos, C, NH, scale);
            rows_equal += memcmp(row, out + (size_t)pos * C, (size_t)C * sizeof(real)) == 0;
            // scores keeps the last head's weights
            p_equal += memcmp(scores, att + ((size_t)(NH - 1) * T + pos) * T, (size_t)(pos + 1) * sizeof(real)) == 0;
        }
        CHECK_MSG(rows_equal == T && p_equal == T, "T %d C %d NH %d: %d/%d output rows and %d/%d weight rows equal",
                  T, C, NH, rows_equal, T, p_equal, T);
        free(q); free(k); free(v); free(att); free(out); free(scratch); free(row); free(scores);
    }
}

// Forward, backward and the backward's statistics against the formulas evaluated by plain loops
// in double, per head: S = scale Q K^T (masked), P = softmax(S), O = P V, dV = P^T dO,
// dP = dO V^T, dS = P * (dP - rowsum(dP * P)), dQ = scale dS K, dK = scale dS^T Q.
static void test_attention_matches_reference(void) {
    int B = 2, T = 37, C = 40, NH = 2, hd = C / NH;
    Rng rng;
    rng_seed(&rng, 21);
    size_t n = (size_t)B * T * C;
    real *q = randn_array(n, &rng, 1), *k = randn_array(n, &rng, 1), *v = randn_array(n, &rng, 1);
    real *dout = randn_array(n, &rng, 1), *dq = randn_array(n, &rng, 1), *dk = zeros(n), *dv = zeros(n);
    real *dq0 = malloc(n * sizeof(real));
    memcpy(dq0, dq, n * sizeof(real));  // backward adds to what is there
    real *att = zeros((size_t)B * NH * T * T), *out = zeros(n), *scratch = attn_scratch(T, hd);
    real *row_gain = zeros((size_t)B * NH * T);
    real scale = (real)(1.0 / sqrt((double)hd));
    AttnStats st[2];
    memset(st, 0, sizeof st);
    attention_forward(out, att, scratch, q, k, v, B, T, C, NH, scale, NULL);
    attention_backward(dq, dk, dv, scratch, dout, att, q, k, v, B, T, C, NH, scale, st, row_gain, GRAD_ADD);
    double tol = IS_F64 ? 1e-12 : 2e-5, worst = 0, ds_sumsq[2] = {0, 0}, gain_err = 0;
    int masked_zero = 1;
    double *P = malloc((size_t)T * T * sizeof(double)), *dS = malloc((size_t)T * T * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t off = (size_t)b * T * C + (size_t)h * hd;
#define AT(x, t, i) ((double)(x)[off + (size_t)(t) * C + (i)])
            const real *ph = att + ((size_t)b * NH + h) * T * T;
            for (int t = 0; t < T; t++) {
                double mx = -1e300, sum = 0, rowsum = 0, ds2 = 0, dp2 = 0, dp[64];
                for (int u = 0; u <= t; u++) {
                    double s = 0;
                    for (int i = 0; i < hd; i++) s += AT(q, t, i) * AT(k, u, i);
                    P[t * T + u] = s * scale;
                    if (s * scale > mx) mx = s * scale;
                }
                for (int u = 0; u <= t; u++) sum += P[t * T + u] = exp(P[t * T + u] - mx);
                for (int u = 0; u <= t; u++) P[t * T + u] /= sum;
                // not fmax: Debian 12's gcc 12.2 for ARM64 crashes vectorising an fmax reduction over
                // floats widened to double (internal compiler error in vect_transform_reduction)
                for (int u = 0; u <= t; u++) { double e = fabs(P[t * T + u] - ph[t * T + u]); worst = e > worst ? e : worst; }
                for (int u = t + 1; u < T; u++) masked_zero &= ph[t * T + u] == 0;
                for (int i = 0; i < hd; i++) {
                    double o = 0;
                    for (int u = 0; u <= t; u++) o += P[t * T + u] * AT(v, u, i);
                    worst = fmax(worst, fabs(o - AT(out, t, i)));
                }
                for (int u = 0; u <= t; u++) {
                    dp[u] = 0;
                    for (int i = 0; i < hd; i++) dp[u] += AT(dout, t, i) * AT(v, u, i);
                    rowsum += dp[u] * P[t * T + u];
                }
                for (int u = 0; u <= t; u++) {
                    dS[t * T + u] = P[t * T + u] * (dp[u] - rowsum);
                    ds2 += dS[t * T + u] * dS[t * T + u];
                    dp2 += dp[u] * dp[u];
                }
                ds_sumsq[h] += ds2;
                if (t >= 1) gain_err = fmax(gain_err, fabs(sqrt(ds2 / dp2) - row_gain[((size_t)b * NH + h) * T + t]));
            }
            for (int t = 0; t < T; t++)
                for (int i = 0; i < hd; i++) {
                    double gq = AT(dq0, t, i), gk = 0, gv = 0;
                    for (int u = 0; u <= t; u++) gq += scale * dS[t * T + u] * AT(k, u, i);
                    for (int u = t; u < T; u++) {  // here t plays the key: rows u >= t see it
                        gk += scale * dS[u * T + t] * AT(q, u, i);
                        gv += P[u * T + t] * AT(dout, u, i);
                    }
                    worst = fmax(worst, fabs(gq - AT(dq, t, i)));
                    worst = fmax(worst, fabs(gk - AT(dk, t, i)));
                    worst = fmax(worst, fabs(gv - AT(dv, t, i)));
                }
#undef AT
        }
    CHECK_MSG(worst <= tol, "largest difference from the reference %g (tol %g)", worst, tol);
    CHECK(masked_zero);
    CHECK_NEAR(st[0].ds_sumsq, ds_sumsq[0], 1e-4 * ds_sumsq[0]);
    CHECK_NEAR(st[1].ds_sumsq, ds_sumsq[1], 1e-4 * ds_sumsq[1]);
    CHECK(gain_err <= (IS_F64 ? 1e-10 : 1e-4));
    free(q); free(k); free(v); free(dout); free(dq); free(dk); free(dv); free(dq0); free(att); free(out);
    free(scratch); free(row_gain); free(P); free(dS);
}

// ---- the whole model ----
static void build_tiny(GPT *m, int init, real scale, int V) {
    ModelDims d = {V, 8, 2, 2, 8};
    gpt_build(m, &d, scale, 2, 8);
    Rng rng;
    rng_seed(&rng, 42);
    gpt_init(m, init, &rng);
}

// Overfitting one batch drives the loss near zero: forward, backward and AdamW work together.
static void test_overfit_one_batch(void) {
    GPT m;
    int V = 11;
    build_tiny(&m, INIT_GPT2, (real)0.5, V);
    int x[16], y[16];
    Rng rng;
    rng_seed(&rng, 9);
    for (int i = 0; i < 16; i++) { x[i] = (int)rng_below(&rng, V); y[i] = (int)rng_below(&rng, V); }
    double first = 0, loss = 0;
    for (int step = 0; step < 300; step++) {
        gpt_zero_grad(&m);
        loss = gpt_forward(&m, x, y, 2, 8);
        if (step == 0) first = loss;
        gpt_backward(&m);
        gpt_adamw_update(&m, 1e-2, 0.9, 0.99, 1e-8, 0.0, step + 1);
    }
    CHECK_NEAR(first, log((double)V), 0.2);  // starts near uniform
    CHECK_MSG(loss < 0.05, "loss after 300 steps %.4f", loss);
    gpt_free(&m);
}

// Same seed, same batch: bit-identical parameters after a few steps.
static void test_model_determinism(void) {
    real *snap = NULL;
    for (int run = 0; run < 2; run++) {
        GPT m;
        build_tiny(&m, INIT_FAN_IN, (real)1.0, 9);
        int x[16], y[16];
        for (int i = 0; i < 16; i++) { x[i] = (i * 7) % 9; y[i] = (i * 5 + 1) % 9; }
        for (int step = 0; step < 5; step++) {
            gpt_zero_grad(&m);
            gpt_forward(&m, x, y, 2, 8);
            gpt_backward(&m);
            gpt_adamw_update(&m, 1e-2, 0.9, 0.99, 1e-8, 0.1, step + 1);
        }
        if (run == 0) {
            snap = malloc(m.n_params * sizeof(real));
            memcpy(snap, m.params, m.n_params * sizeof(real));
        } else {
            CHECK(memcmp(snap, m.params, m.n_params * sizeof(real)) == 0);
        }
        gpt_free(&m);
    }
    free(snap);
}

// A batch smaller than the model's capacity (an MPI rank's share of the batch, the last group of
// validation windows) gives the same loss and gradients as a model built for exactly that batch,
// twice in a row (a buffer cleared for the wrong extent would leave stale values behind).
// Two small models (V 9, T 8, 2 layers) with the same initial parameters and batch capacities
// cap_a and cap_b; x and y get n tokens of a fixed pattern.
static void build_twins(GPT *a, int cap_a, GPT *b, int cap_b, uint64_t seed, int *x, int *y, int n) {
    ModelDims d = {9, 8, 2, 2, 8};
    gpt_build(a, &d, (real)0.5, cap_a, 8);
    gpt_build(b, &d, (real)0.5, cap_b, 8);
    Rng rng;
    rng_seed(&rng, seed);
    gpt_init(a, INIT_GPT2, &rng);
    memcpy(b->params, a->params, a->n_params * sizeof(real));
    for (int i = 0; i < n; i++) { x[i] = (i * 7) % 9; y[i] = (i * 5 + 1) % 9; }
}

static void test_partial_batch_matches_exact_capacity(void) {
    GPT big, exact;
    int x[32], y[32];
    build_twins(&big, 4, &exact, 2, 5, x, y, 32);
    for (int rep = 0; rep < 2; rep++) {
        // the capacity-4 model first sees a full batch, leaving its buffers dirty
        gpt_zero_grad(&big);
        gpt_forward(&big, x, y, 4, 8);
        gpt_backward(&big);
        gpt_zero_grad(&big);
        gpt_zero_grad(&exact);
        double lb = gpt_forward(&big, x + 8 * rep, y + 8 * rep, 2, 8);
        double le = gpt_forward(&exact, x + 8 * rep, y + 8 * rep, 2, 8);
        gpt_backward(&big);
        gpt_backward(&exact);
        CHECK(lb == le);
        CHECK(memcmp(big.grads, exact.grads, big.n_params * sizeof(real)) == 0);
    }
    gpt_free(&big);
    gpt_free(&exact);
}

// Batch-parallel training: two threads, each running the whole network on half of the rows,
// give the one-thread loss and gradients up to float rounding, and the same bits every time.
static void test_batch_threads_match_one_thread(void) {
    if (thread_max() < 2) SKIP("needs 2 OpenMP threads (this build or OMP_NUM_THREADS has %d)", thread_max());
    GPT one, split;
    int x[24], y[24];
    build_twins(&one, 4, &split, 4, 9, x, y, 24);
    gpt_enable_batch_threads(&split, 2, 3, 8);  // 3 rows: shares of 1 and 2, weighted by rows
    CHECK(split.n_workers == 2);
    double l1 = gpt_forward_backward(&one, x, y, 3, 8);
    double l2 = gpt_forward_backward(&split, x, y, 3, 8);
    CHECK_NEAR(l2, l1, 1e-6 * fabs(l1));
    double num = 0, den = 0;
    for (size_t i = 0; i < one.n_params; i++) {
        double e = (double)split.grads[i] - one.grads[i];
        num += e * e;
        den += (double)one.grads[i] * one.grads[i];
    }
    CHECK_MSG(den > 0 && sqrt(num / den) < 1e-5, "gradients differ by relative %.3g", sqrt(num / den));
    real *first = malloc(split.n_params * sizeof(real));
    memcpy(first, split.grads, split.n_params * sizeof(real));
    double l3 = gpt_forward_backward(&split, x, y, 3, 8);
    CHECK(l3 == l2);
    CHECK(memcmp(first, split.grads, split.n_params * sizeof(real)) == 0);
    free(first);
    gpt_free(&one);
    gpt_free(&split);
}

// The three named GEMMs against a double-precision reference, overwriting and accumulating onto
// C. M spans two 96-row blocks and ends in a partial 6-row sliver, K spans two 256-deep blocks:
// the in-place, packed (8-wide and element-wise) and edge paths all run.
static void test_gemm_matches_reference(void) {
    Rng rng;
    rng_seed(&rng, 11);
    int M = 131, N = 53, K = 300;
    real *A = randn_array((size_t)M * K, &rng, 1), *B = randn_array((size_t)K * N, &rng, 1);
    real *C0 = randn_array((size_t)M * N, &rng, 1), *C = zeros((size_t)M * N);
    static const char *const names[3] = {"gemm_nn", "gemm_nt", "gemm_tn"};
    for (int op = 0; op < 3; op++) {
        for (int add = 0; add < 2; add++) {
            // A(i,k) and B(k,j) as each product reads its operands
            long a_rs = op == 2 ? 1 : K, a_cs = op == 2 ? M : 1, b_rs = op == 1 ? 1 : N, b_cs = op == 1 ? K : 1;
            memcpy(C, C0, (size_t)M * N * sizeof(real));
            MatWrite w = add ? MM_ADD : MM_SET;
            if (op == 0) gemm_nn(C, A, B, M, N, K, w);
            else if (op == 1) gemm_nt(C, A, B, M, N, K, w);
            else gemm_tn(C, A, B, M, N, K, w);
            double maxerr = 0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double s = add ? C0[i * N + j] : 0.0;
                    for (int k = 0; k < K; k++) s += (double)A[i * a_rs + k * a_cs] * B[k * b_rs + j * b_cs];
                    double e = fabs(s - C[i * N + j]);
                    if (e > maxerr) maxerr = e;
                }
            CHECK_MSG(maxerr < (IS_F64 ? 1e-10 : 1e-3), "%s (%s): max error %g", names[op], add ? "add" : "set", maxerr);
        }
    }
    free(A); free(B); free(C0); free(C);
}

static void test_param_count_and_names(void) {
    GPT m;
    build_tiny(&m, INIT_GPT2, 1, 7);
    int C = 8, L = 2;
    size_t expect = 7 * C + 8 * C + (size_t)L * (12 * C * C + 4 * C) + 2 * C;
    CHECK(m.n_params == expect);
    CHECK(gpt_find_tensor(&m, "layer1.wq") >= 0);
    CHECK(gpt_find_tensor(&m, "layer0.wk") >= 0);
    CHECK(gpt_find_tensor(&m, "layer0.wv") >= 0);
    CHECK(gpt_find_tensor(&m, "layer1.wo") >= 0);
    // views agree with the tensor table
    CHECK(m.p.layers[1].wq == m.params + m.tensors[gpt_find_tensor(&m, "layer1.wq")].offset);
    gpt_free(&m);
}

static void test_memory_estimate_overflow(void) {
    ModelDims huge = {65, 65536, 64, 64, 8192};
    size_t n_params = 0;
    size_t bytes = gpt_memory_bytes(&huge, 65536, 65536, &n_params);
    CHECK(bytes == 0 || bytes > ((size_t)1 << 40));
}

// The float32 suite also runs the numeric tests of the float64 build (the same sources compiled
// with -DREAL_DOUBLE), where the gradient checks must agree to 1e-6. `make test` builds it.
static void test_float64_build_passes(void) {
    if (IS_F64) SKIP("this is the float64 build");
    if (access("tests/run_tests64", X_OK) != 0) {
        CHECK_MSG(0, "tests/run_tests64 is missing: run `make test`, which builds it");
        return;
    }
    int rc = system("./tests/run_tests64 --skip cli_ --skip crash_ --skip mpi_ > tests/run_tests64.log 2>&1");
    FILE *f = fopen("tests/run_tests64.log", "r");
    char line[512], last[512] = "";
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "FAIL", 4) == 0) fprintf(stderr, "  float64: %s", line);
        snprintf(last, sizeof last, "%s", line);
    }
    if (f) fclose(f);
    fprintf(stderr, "  float64 suite: %s", last);
    CHECK_MSG(rc == 0 && strstr(last, " 0 failed"), "the float64 suite failed (see tests/run_tests64.log)");
}

// Generation with the KV cache reproduces generation by full recomputation exactly while the
// context fits in block_size (same logits, so the same samples), and keeps going past it.
static void read_back(FILE *f, char *buf, size_t n) {
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
}

static void test_kv_cache_generation_matches_full_recompute(void) {
    GPT m;
    int V = 9;
    build_tiny(&m, INIT_FAN_IN, (real)0.5, V);  // block_size 8
    Vocab vocab;
    uint32_t chars[9];
    for (int i = 0; i < V; i++) chars[i] = 'a' + (uint32_t)i;
    vocab.vocab_size = V;
    vocab.chars = chars;
    int prompt[3] = {1, 4, 2};
    char a[256], b[256];
    FILE *fa = tmpfile(), *fb = tmpfile();
    Rng ra, rb;
    rng_seed(&ra, 5);
    rng_seed(&rb, 5);
    generate(&m, &vocab, prompt, 3, 5, 1.0, 0, &ra, fa);               // 3 + 5 = block_size
    generate_full_window(&m, &vocab, prompt, 3, 5, 1.0, 0, &rb, fb);
    read_back(fa, a, sizeof a);
    read_back(fb, b, sizeof b);
    CHECK(strlen(a) == 5);
    CHECK_MSG(strcmp(a, b) == 0, "cached '%s' vs recomputed '%s'", a, b);
    // the cached logits equal the last row of a full forward, bit for bit
    KVCache c;
    kv_cache_init(&c, &m);
    real logits[9];
    int seq[6] = {3, 1, 4, 1, 5, 2};
    for (int t = 0; t < 6; t++) gpt_decode_step(&m, &c, seq[t], logits);
    gpt_forward(&m, seq, NULL, 1, 6);
    CHECK(memcmp(logits, m.acts.logits + 5 * V, sizeof logits) == 0);
    // and a batched prefill leaves the same cache and logits as the decode steps
    KVCache c2;
    kv_cache_init(&c2, &m);
    real logits2[9];
    gpt_prefill(&m, &c2, seq, 6, logits2);
    CHECK(c2.len == 6 && memcmp(logits, logits2, sizeof logits) == 0);
    size_t L_T_C = (size_t)m.dims.n_layer * m.dims.block_size * m.dims.n_embd;
    int same = 1;
    for (int l = 0; l < m.dims.n_layer; l++)
        same &= memcmp(c.k + (size_t)l * m.dims.block_size * m.dims.n_embd, c2.k + (size_t)l * m.dims.block_size * m.dims.n_embd,
                       6 * (size_t)m.dims.n_embd * sizeof(real)) == 0;
    CHECK(same && L_T_C > 0);
    kv_cache_free(&c2);
    kv_cache_free(&c);
    // past the window: still one character per token
    rewind(fa);
    generate(&m, &vocab, prompt, 3, 40, 1.0, 0, &ra, fa);
    fflush(fa);
    CHECK(ftell(fa) == 40);
    fclose(fa);
    fclose(fb);
    gpt_free(&m);
}

// GRAD_STORE overwrites what a gradient buffer held (NaN here, which any read would carry into
// the result) with exactly what GRAD_ADD adds onto zeros; GRAD_ADD adds onto what is there.
static void fill(real *x, size_t n, real v) { for (size_t i = 0; i < n; i++) x[i] = v; }
static void test_backward_store_overwrites(void) {
    Rng rng;
    rng_seed(&rng, 12);
    // matmul, shapes with edge tiles and more depth than one KC block
    int N = 13, C = 7, OC = 300;
    real *inp = randn_array((size_t)N * C, &rng, 1), *w = randn_array((size_t)C * OC, &rng, 1);
    real *dout = randn_array((size_t)N * OC, &rng, 1);
    real *dinp_add = zeros((size_t)N * C), *dw_add = zeros((size_t)C * OC);
    real *dinp_set = zeros((size_t)N * C), *dw_set = zeros((size_t)C * OC);
    fill(dinp_set, (size_t)N * C, NAN); fill(dw_set, (size_t)C * OC, NAN);
    matmul_backward(dinp_add, dw_add, dout, inp, w, N, C, OC, GRAD_ADD, GRAD_ADD);
    matmul_backward(dinp_set, dw_set, dout, inp, w, N, C, OC, GRAD_STORE, GRAD_STORE);
    CHECK(memcmp(dinp_add, dinp_set, (size_t)N * C * sizeof(real)) == 0);
    CHECK(memcmp(dw_add, dw_set, (size_t)C * OC * sizeof(real)) == 0);
    // GRAD_ADD really adds: a second pass doubles (up to rounding: the depth is added in blocks)
    matmul_backward(dinp_add, NULL, dout, inp, w, N, C, OC, GRAD_ADD, GRAD_ADD);
    for (int i = 0; i < N * C; i++) CHECK_NEAR(dinp_add[i], 2 * dinp_set[i], 1e-4 * (1 + fabs(dinp_set[i])));
    free(inp); free(w); free(dout); free(dinp_add); free(dw_add); free(dinp_set); free(dw_set);

    // attention, with a head width and length that leave partial tiles
    int B = 2, T = 11, AC = 20, NH = 2;
    size_t n = (size_t)B * T * AC;
    real *q = randn_array(n, &rng, 1), *k = randn_array(n, &rng, 1), *v = randn_array(n, &rng, 1);
    real *ado = randn_array(n, &rng, 1), *att = zeros((size_t)B * NH * T * T), *out = zeros(n);
    real *scratch = attn_scratch(T, AC / NH);
    real scale = (real)(1.0 / sqrt(AC / NH));
    attention_forward(out, att, scratch, q, k, v, B, T, AC, NH, scale, NULL);
    real *g_add[3], *g_set[3];
    for (int i = 0; i < 3; i++) { g_add[i] = zeros(n); g_set[i] = zeros(n); fill(g_set[i], n, NAN); }
    attention_backward(g_add[0], g_add[1], g_add[2], scratch, ado, att, q, k, v, B, T, AC, NH, scale, NULL, NULL, GRAD_ADD);
    attention_backward(g_set[0], g_set[1], g_set[2], scratch, ado, att, q, k, v, B, T, AC, NH, scale, NULL, NULL, GRAD_STORE);
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(memcmp(g_add[i], g_set[i], n * sizeof(real)) == 0, "attention gradient %d", i);
        free(g_add[i]); free(g_set[i]);
    }
    free(q); free(k); free(v); free(ado); free(att); free(out); free(scratch);

    // GELU in place: the gradient of the output becomes that of the input
    real *x = randn_array(40, &rng, 2), *gout = zeros(40), *dg = zeros(40), *d = randn_array(40, &rng, 1);
    real *expect = zeros(40);
    gelu_forward(gout, dg, x, 40);
    gelu_backward(expect, dg, d, 40, GRAD_ADD);
    gelu_backward(d, dg, d, 40, GRAD_STORE);
    CHECK(memcmp(expect, d, 40 * sizeof(real)) == 0);
    free(x); free(gout); free(dg); free(d); free(expect);

    // the whole model: gpt_backward on gradients and activation gradients full of NaN gives the
    // gradient it gives after gpt_zero_grad
    GPT m;
    build_tiny(&m, INIT_FAN_IN, (real)0.5, 9);
    int xs[16], ys[16];
    for (int i = 0; i < 16; i++) { xs[i] = (i * 7) % 9; ys[i] = (i * 5 + 1) % 9; }
    gpt_zero_grad(&m);
    gpt_forward(&m, xs, ys, 2, 8);
    gpt_backward(&m);
    real *g = malloc(m.n_params * sizeof(real));
    memcpy(g, m.grads, m.n_params * sizeof(real));
    fill(m.grads, m.n_params, NAN);
    GradActs *G = &m.gacts;
    size_t NC = 16 * 8;
    fill(G->ln, NC, NAN); fill(G->q, NC, NAN); fill(G->k, NC, NAN); fill(G->v, NC, NAN);
    fill(G->atty, NC, NAN); fill(G->fch, 4 * NC, NAN);
    gpt_forward(&m, xs, ys, 2, 8);
    gpt_backward(&m);
    CHECK(memcmp(g, m.grads, m.n_params * sizeof(real)) == 0);
    free(g);
    gpt_free(&m);
}

const TestCase tests_model[] = {
    {"kv_cache_generation_matches_full_recompute", test_kv_cache_generation_matches_full_recompute},
    {"float64_build_passes", test_float64_build_passes},
    {"gradcheck_matmul", gradcheck_matmul},
    {"gradcheck_layernorm", gradcheck_layernorm},
    {"gradcheck_gelu", gradcheck_gelu},
    {"gelu_derivative_in_place", test_gelu_derivative_in_place},
    {"gelu_matches_libm", test_gelu_matches_libm},
    {"gradcheck_crossentropy", gradcheck_crossentropy},
    {"gradcheck_encoder", gradcheck_encoder},
    {"gradcheck_attention_scaled", gradcheck_attention_scaled},
    {"gradcheck_attention_unscaled", gradcheck_attention_unscaled},
    {"gradcheck_attention_catches_broken_backward", gradcheck_attention_catches_broken_backward},
    {"gradcheck_softmax_vjp_matches_jacobian", gradcheck_softmax_vjp_matches_jacobian},
    {"test_attention_hand_computed_example", test_attention_hand_computed_example},
    {"test_attention_t3_example", test_attention_t3_example},
    {"attention_row_stats", test_attention_row_stats},
    {"attention_stats_uniform_and_row0", test_attention_stats_uniform_and_row0},
    {"attention_stats_peaked", test_attention_stats_peaked},
    {"attention_decode_matches_forward_rows", test_attention_decode_matches_forward_rows},
    {"attention_matches_reference", test_attention_matches_reference},
    {"overfit_one_batch", test_overfit_one_batch},
    {"model_determinism", test_model_determinism},
    {"partial_batch_matches_exact_capacity", test_partial_batch_matches_exact_capacity},
    {"batch_threads_match_one_thread", test_batch_threads_match_one_thread},
    {"gemm_matches_reference", test_gemm_matches_reference},
    {"backward_store_overwrites", test_backward_store_overwrites},
    {"param_count_and_names", test_param_count_and_names},
    {"memory_estimate_overflow", test_memory_estimate_overflow},
    {NULL, NULL},
};
