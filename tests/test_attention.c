// tests/test_attention.c: attention, both implementations.
//   - The definition (attention.c) against central finite differences (every mask and axis),
//     hand-computed examples, and its formulas evaluated independently in double.
//   - The engine (kernels/attention_engine.c) proven equal to the definition: forward and backward
//   at many
//     shapes (T not a multiple of any tile, T = 1, head widths 1, 5, 64, 100), scales, batch
//     sizes and thread counts, with a stated relative bound per quantity; and bit-identical
//     results across thread counts.
//   - The statistics on hand-built weights, and the attention probe running the definition.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "attention.h"
#include "base/config.h"
#include "teach/lab_core.h"
#include "model.h"
#include "tests/set_attention.h"  // set_attention: another attention on the same weights
#include "base/rng.h"
#include "test.h"
#include "test_numeric.h"
#include "run/probe.h"
#include "run/workers.h"

// A training pass: the batch's forward (split between the workers, if any) and its backward.
static double train_pass(GPT *m, const int *x, const int *y, int B, int T) {
    double loss = gpt_batch_forward(m, x, y, B, T);
    gpt_batch_backward(m);
    return loss;
}

static AttnSpec spec_of(real scale, AttnMask mask, SoftmaxAxis axis) {
    AttnSpec s = {scale, mask, axis, 0, NULL};
    return s;
}
static AttnSpec causal(real scale) { return spec_of(scale, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS); }
static AttnSpec windowed(real scale, int window, SoftmaxAxis axis) {
    AttnSpec s = {scale, ATTN_MASK_CAUSAL, axis, window, NULL};
    return s;
}

// ---------------------------------------------------------------------------------------------
// gradient checks: L = sum(R * out) for a fixed random R

typedef struct {
    const AttentionImpl *impl;
    AttnSpec spec;
    int B, T, C, NH;
    real *q, *k, *v, *att, *out, *R, *scratch;
} AttCtx;

static double att_loss(void *vc) {
    AttCtx *c = vc;
    c->impl->forward(c->out, c->att, c->scratch, (AttnQKV){c->q, c->k, c->v},
                     (AttnShape){c->B, c->T, c->C, c->NH}, &c->spec, NULL);
    return dot_r(c->out, c->R, (size_t)c->B * c->T * c->C);
}

static void attention_gradcheck(const AttentionImpl *impl, AttnSpec spec, const char *what) {
    Rng rng;
    rng_seed(&rng, 6);
    AttCtx c = {impl, spec, 2, 5, 6, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    size_t n = (size_t)c.B * c.T * c.C;
    c.q = randn_array(n, &rng, 1);
    c.k = randn_array(n, &rng, 1);
    c.v = randn_array(n, &rng, 1);
    c.att = zeros((size_t)c.B * c.NH * c.T * c.T);
    c.out = zeros(n);
    c.R = randn_array(n, &rng, 1);
    c.scratch = attn_scratch(c.T, c.C / c.NH);
    real *dq = zeros(n), *dk = zeros(n), *dv = zeros(n);
    att_loss(&c);
    impl->backward((AttnGradQKV){dq, dk, dv}, c.scratch, c.R, c.out, c.att,
                   (AttnQKV){c.q, c.k, c.v}, (AttnShape){c.B, c.T, c.C, c.NH}, &c.spec, NULL, NULL,
                   GRAD_ADD);
    char name[128];
    snprintf(name, sizeof name, "%s %s dq", impl->name, what);
    check_grad(att_loss, &c, c.q, dq, n, name);
    snprintf(name, sizeof name, "%s %s dk", impl->name, what);
    check_grad(att_loss, &c, c.k, dk, n, name);
    snprintf(name, sizeof name, "%s %s dv", impl->name, what);
    check_grad(att_loss, &c, c.v, dv, n, name);
    free(c.q);
    free(c.k);
    free(c.v);
    free(c.att);
    free(c.out);
    free(c.R);
    free(c.scratch);
    free(dq);
    free(dk);
    free(dv);
}

static void gradcheck_attention_definition(void) {
    real s = (real)(1.0 / sqrt(3.0));
    attention_gradcheck(&attention_definition, causal(s), "scaled");
    attention_gradcheck(&attention_definition, causal(1), "unscaled");
    // the mistakes have hand-written backward passes too
    attention_gradcheck(&attention_definition, spec_of(s, ATTN_MASK_ZERO, SOFTMAX_OVER_KEYS),
                        "mask zero");
    attention_gradcheck(&attention_definition, spec_of(s, ATTN_MASK_NONE, SOFTMAX_OVER_KEYS),
                        "no mask");
    attention_gradcheck(&attention_definition, spec_of(s, ATTN_MASK_CAUSAL, SOFTMAX_OVER_QUERIES),
                        "softmax over queries");
    attention_gradcheck(&attention_definition, spec_of(s, ATTN_MASK_ZERO, SOFTMAX_OVER_QUERIES),
                        "mask zero, over queries");
    // sliding windows (T = 5): one key, two, four, and as many as T (every earlier key, as 0)
    attention_gradcheck(&attention_definition, windowed(s, 1, SOFTMAX_OVER_KEYS), "window 1");
    attention_gradcheck(&attention_definition, windowed(s, 2, SOFTMAX_OVER_KEYS), "window 2");
    attention_gradcheck(&attention_definition, windowed(1, 4, SOFTMAX_OVER_KEYS),
                        "window 4, unscaled");
    attention_gradcheck(&attention_definition, windowed(s, 5, SOFTMAX_OVER_KEYS), "window 5");
    attention_gradcheck(&attention_definition, windowed(s, 2, SOFTMAX_OVER_QUERIES),
                        "window 2, over queries");
}

static void gradcheck_attention_engine(void) {
    attention_gradcheck(&attention_engine, causal((real)(1.0 / sqrt(3.0))), "scaled");
    attention_gradcheck(&attention_engine, causal(1), "unscaled");
    AttnSpec w = causal((real)(1.0 / sqrt(3.0)));
    w.window = 2;  // query t sees keys t-1 and t
    attention_gradcheck(&attention_engine, w, "window 2");
}

// The check must catch a wrong backward: the lab's broken one drops "- rowsum(dP * P)", which
// breaks dq and dk (and leaves dv alone).
static void gradcheck_attention_catches_broken_backward(void) {
    Rng rng;
    rng_seed(&rng, 7);
    AttCtx c = {&lab_broken_attention,
                causal((real)0.5),
                1,
                4,
                4,
                1,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL,
                NULL};
    size_t n = 16;
    c.q = randn_array(n, &rng, 1);
    c.k = randn_array(n, &rng, 1);
    c.v = randn_array(n, &rng, 1);
    c.att = zeros(16);
    c.out = zeros(n);
    c.R = randn_array(n, &rng, 1);
    c.scratch = attn_scratch(4, 4);
    real *dq = zeros(n), *dk = zeros(n), *dv = zeros(n);
    att_loss(&c);
    c.impl->backward((AttnGradQKV){dq, dk, dv}, c.scratch, c.R, c.out, c.att,
                     (AttnQKV){c.q, c.k, c.v}, (AttnShape){1, 4, 4, 1}, &c.spec, NULL, NULL,
                     GRAD_ADD);
    double *num = malloc(n * sizeof(double));
    numeric_grad(att_loss, &c, c.q, n, num);
    CHECK(grad_error(dq, num, n) > 10 * FD_TOL);
    numeric_grad(att_loss, &c, c.k, n, num);
    CHECK(grad_error(dk, num, n) > 10 * FD_TOL);
    numeric_grad(att_loss, &c, c.v, n, num);
    CHECK(grad_error(dv, num, n) < FD_TOL);
    free(num);
    free(c.q);
    free(c.k);
    free(c.v);
    free(c.att);
    free(c.out);
    free(c.R);
    free(c.scratch);
    free(dq);
    free(dk);
    free(dv);
}

// softmax_backward is the VJP of softmax: compare with the full Jacobian J = diag(p) - p p^T.
static void gradcheck_softmax_vjp_matches_jacobian(void) {
    real s[5] = {2, 1, (real)0.1, -1, (real)0.5}, p[5], dp[5] = {(real)0.3, -1, 2, (real)0.7, 0},
         ds[5];
    softmax_forward(p, s, 5);
    softmax_backward(ds, dp, p, 5);
    for (int i = 0; i < 5; i++) {
        double viaJ = 0;
        for (int j = 0; j < 5; j++) viaJ += ((i == j ? p[i] : 0) - (double)p[i] * p[j]) * dp[j];
        CHECK_NEAR(ds[i], viaJ, IS_F64 ? 1e-12 : 1e-6);
    }
}

// ---------------------------------------------------------------------------------------------
// worked examples

// One query [1,0] over keys [1,0],[0,1] with values [10,0],[0,10], d_k = 2, scaled: row 1 of a
// causal T=2 attention sees exactly those two keys. Backward with dO = [1, 0] for that row (the
// loss is its first output): the complete example of docs/backprop-through-softmax.md.
static void test_attention_hand_computed_example(void) {
    real q[4] = {0, 0, 1, 0}, k[4] = {1, 0, 0, 1}, v[4] = {10, 0, 0, 10}, att[4], out[4];
    real dout[4] = {0, 0, 1, 0}, dq[4], dk[4], dv[4];
    real *scratch = attn_scratch(2, 2);
    AttnSpec spec = causal((real)(1.0 / sqrt(2.0)));
    attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){1, 2, 2, 1}, &spec, NULL);
    attention_backward((AttnGradQKV){dq, dk, dv}, scratch, dout, out, att, (AttnQKV){q, k, v},
                       (AttnShape){1, 2, 2, 1}, &spec, NULL, NULL, GRAD_STORE);
    free(scratch);
    double tol = IS_F64 ? 1e-6 : 2e-6;
    CHECK_NEAR(att[2], 0.669762, tol);
    CHECK_NEAR(att[3], 0.330238, tol);
    CHECK_NEAR(out[2], 6.697615, 10 * tol);
    CHECK_NEAR(out[3], 3.302385, 10 * tol);
    // dQ = c dS K = [1.563986, -1.563986]; dK[0] = [1.563986, 0], dK[1] = [-1.563986, 0];
    // dV[0] = [0.669762, 0], dV[1] = [0.330238, 0]; row 0 sends nothing back
    double expect_dq[4] = {0, 0, 1.563986, -1.563986}, expect_dk[4] = {1.563986, 0, -1.563986, 0};
    double expect_dv[4] = {0.669762, 0, 0.330238, 0};
    for (int i = 0; i < 4; i++) {
        CHECK_NEAR(dq[i], expect_dq[i], 10 * tol);
        CHECK_NEAR(dk[i], expect_dk[i], 10 * tol);
        CHECK_NEAR(dv[i], expect_dv[i], 10 * tol);
    }
}

// T=3: Q = K = [[1,0],[0,1],[1,1]], V = [[10,0],[0,10],[5,5]], d_k = 2. Without the mask every
// row sees all keys; with it, masked weights are exactly 0 and rows still sum to 1.
static void test_attention_t3_example(void) {
    real Q[6] = {1, 0, 0, 1, 1, 1}, V[6] = {10, 0, 0, 10, 5, 5};
    real att[9], out[6], *scratch = attn_scratch(3, 2);
    AttnSpec none = spec_of((real)(1.0 / sqrt(2.0)), ATTN_MASK_NONE, SOFTMAX_OVER_KEYS);
    attention_forward(out, att, scratch, (AttnQKV){Q, Q, V}, (AttnShape){1, 3, 2, 1}, &none, NULL);
    double tol = IS_F64 ? 1e-6 : 2e-6;
    CHECK_NEAR(att[0], 0.401112, tol);
    CHECK_NEAR(att[1], 0.197776, tol);
    CHECK_NEAR(att[2], 0.401112, tol);
    double expect[6] = {6.016681, 3.983319, 3.983319, 6.016681, 5, 5};
    for (int i = 0; i < 6; i++) CHECK_NEAR(out[i], expect[i], 10 * tol);
    AttnSpec masked = causal(none.scale);
    attention_forward(out, att, scratch, (AttnQKV){Q, Q, V}, (AttnShape){1, 3, 2, 1}, &masked,
                      NULL);
    for (int t = 0; t < 3; t++) {
        double sum = 0;
        for (int u = 0; u < 3; u++) {
            if (u > t) CHECK(att[3 * t + u] == 0);
            sum += att[3 * t + u];
        }
        CHECK_NEAR(sum, 1.0, 1e-6);
    }
    CHECK(att[0] == 1);
    CHECK_NEAR(out[0], 10, 1e-5);
    free(scratch);
}

// The mistakes on the same example: "zero" leaves weight on the future (row 0 sees keys 1 and 2
// through their score 0), "queries" makes columns, not rows, sum to 1.
static void test_attention_mistakes_t3(void) {
    real Q[6] = {1, 0, 0, 1, 1, 1}, V[6] = {10, 0, 0, 10, 5, 5}, att[9], out[6],
         *scratch = attn_scratch(3, 2);
    real s = (real)(1.0 / sqrt(2.0));
    AttnSpec zero = spec_of(s, ATTN_MASK_ZERO, SOFTMAX_OVER_KEYS);
    attention_forward(out, att, scratch, (AttnQKV){Q, Q, V}, (AttnShape){1, 3, 2, 1}, &zero, NULL);
    // row 0: scores [s, 0, 0] -> weights e^s, 1, 1 over their sum
    double z = exp(s) + 2;
    CHECK_NEAR(att[0], exp(s) / z, 1e-6);
    CHECK_NEAR(att[1], 1 / z, 1e-6);
    CHECK_NEAR(att[2], 1 / z, 1e-6);
    AttnSpec axis = spec_of(s, ATTN_MASK_CAUSAL, SOFTMAX_OVER_QUERIES);
    attention_forward(out, att, scratch, (AttnQKV){Q, Q, V}, (AttnShape){1, 3, 2, 1}, &axis, NULL);
    for (int u = 0; u < 3; u++) {
        double col = 0;
        for (int t = 0; t < 3; t++) col += att[3 * t + u];
        CHECK_NEAR(col, 1.0, 1e-6);
    }
    CHECK(att[8] == 1);  // the last key is seen by the last query only
    CHECK(fabs(att[0] + att[1] + att[2] - 1.0) > 0.1);  // rows no longer sum to 1
    free(scratch);
}

// ---------------------------------------------------------------------------------------------
// statistics

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
// row 0 (one key) left out of the row counts, and no weight on the future. Without the mask
// every row sees all T keys and puts (T-1-t)/T of its weight on the future.
static void test_attention_stats_uniform_and_row0(void) {
    int T = 6, C = 4;
    real *q = zeros((size_t)T * C), *k = zeros((size_t)T * C), *v = zeros((size_t)T * C);
    real *att = zeros((size_t)T * T), *out = zeros((size_t)T * C), *scratch = attn_scratch(T, C);
    AttnStats st;
    memset(&st, 0, sizeof st);
    AttnSpec spec = causal(1);
    attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){1, T, C, 1}, &spec, &st);
    CHECK_NEAR(st.rows, T - 1, 0);
    CHECK_NEAR(st.entropy_norm / st.rows, 1.0, 1e-6);
    double expect_max = 0;
    for (int t = 1; t < T; t++) expect_max += 1.0 / (t + 1);
    CHECK_NEAR(st.max_weight / st.rows, expect_max / (T - 1), 1e-6);
    CHECK_NEAR(st.rows_gt_090, 0, 0);
    CHECK_NEAR(st.score_n, T * (T + 1) / 2, 0);
    CHECK(st.future_mass == 0);
    // row t is uniform over t + 1 keys: entropy ln(t + 1), summed over t = 1..5: ln 720
    CHECK_NEAR(st.entropy, log(720.0), 1e-6);
    memset(&st, 0, sizeof st);
    AttnSpec none = spec_of(1, ATTN_MASK_NONE, SOFTMAX_OVER_KEYS);
    attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){1, T, C, 1}, &none, &st);
    CHECK_NEAR(st.rows, T, 0);
    double expect_future = 0;
    for (int t = 0; t < T; t++) expect_future += (double)(T - 1 - t) / T;
    CHECK_NEAR(st.future_mass, expect_future, 1e-6);
    CHECK_NEAR(st.score_n, T * T, 0);
    CHECK_NEAR(st.entropy, T * log((double)T), 1e-6);  // every row uniform over all T keys
    free(q);
    free(k);
    free(v);
    free(att);
    free(out);
    free(scratch);
}

// Large scores saturate rows: with keys aligned to queries scaled by 50, every row t >= 1
// puts > 0.99 on its best key; the fractions count exactly those rows.
static void test_attention_stats_peaked(void) {
    int T = 5, C = 2;
    real q[10], k[10], v[10] = {0};
    for (int t = 0; t < T; t++) {
        q[2 * t] = 50;
        q[2 * t + 1] = 0;
        k[2 * t] = (real)(t == 0 ? 1 : 0);
        k[2 * t + 1] = 0;  // only key 0 matches
    }
    real att[25], out[10], *scratch = attn_scratch(T, C);
    AttnStats st;
    memset(&st, 0, sizeof st);
    AttnSpec spec = causal(1);
    attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){1, T, C, 1}, &spec, &st);
    free(scratch);
    CHECK_NEAR(st.rows, 4, 0);
    CHECK_NEAR(st.rows_gt_099, 4, 0);
    CHECK_NEAR(st.rows_gt_090, 4, 0);
    CHECK(st.entropy_norm / st.rows < 0.01);
    CHECK_NEAR(st.score_absmax, 50, 1e-5);
    // the visible scores: 50 where a query meets key 0 (5 of them), 0 elsewhere (10)
    CHECK_NEAR(st.score_n, 15, 0);
    CHECK_NEAR(st.score_sum, 250, 1e-3);
    CHECK_NEAR(st.score_sumsq, 12500, 1e-2);
}

// The max logits against a direct recomputation of the kept scores in double: max_logit =
// max_{b,t,u} S[t][u], mean_max_logit = mean over every row (b, t) of max_u S[t][u], over the
// entries the mask keeps, for the causal mask, a window, the "zero" mistake and no mask; and
// on hand-built scores that are all negative the maximum stays signed (-1, not 0 or |S|).
static void test_attention_stats_max_logit(void) {
    int B = 2, T = 7, C = 6, NH = 2, hd = C / NH;
    size_t n = (size_t)B * T * C;
    Rng rng;
    rng_seed(&rng, 11);
    real *q = randn_array(n, &rng, 1.5), *k = randn_array(n, &rng, 1.5),
         *v = randn_array(n, &rng, 1);
    real *att = zeros((size_t)B * NH * T * T), *out = zeros(n), *scratch = attn_scratch(T, hd);
    const AttnSpec specs[4] = {causal((real)0.7), windowed((real)0.7, 3, SOFTMAX_OVER_KEYS),
                               spec_of((real)0.7, ATTN_MASK_ZERO, SOFTMAX_OVER_KEYS),
                               spec_of((real)0.7, ATTN_MASK_NONE, SOFTMAX_OVER_KEYS)};
    for (int sp = 0; sp < 4; sp++) {
        AttnStats st[2];
        memset(st, 0, sizeof st);
        attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH},
                          &specs[sp], st);
        for (int h = 0; h < NH; h++) {
            double best = -INFINITY, row_sum = 0;
            for (int b = 0; b < B; b++)
                for (int t = 0; t < T; t++) {
                    double row_max = -INFINITY;
                    for (int u = 0; u < T; u++) {
                        if (attention_masked(&specs[sp], t, u)) continue;
                        double dot = 0;
                        for (int i = 0; i < hd; i++)
                            dot += (double)q[((size_t)b * T + t) * C + h * hd + i] *
                                   k[((size_t)b * T + u) * C + h * hd + i];
                        if (dot * 0.7 > row_max) row_max = dot * 0.7;
                    }
                    if (row_max > best) best = row_max;
                    row_sum += row_max;
                }
            CHECK_NEAR(st[h].score_rows, B * T, 0);
            CHECK_NEAR(st[h].score_max, best, 1e-5);
            CHECK_NEAR(st[h].score_rowmax_sum / st[h].score_rows, row_sum / (B * T), 1e-5);
            CHECK(st[h].score_max <= st[h].score_absmax);
        }
    }
    free(q);
    free(k);
    free(v);
    free(att);
    free(out);
    free(scratch);
    // one head, C = 1: q = 1 and key u = -(u + 1), so S[t][u] = -(u + 1) and every row's largest is
    // -1
    real q1[4] = {1, 1, 1, 1}, k1[4] = {-1, -2, -3, -4}, v1[4] = {0}, att1[16], out1[4];
    scratch = attn_scratch(4, 1);
    AttnStats st;
    memset(&st, 0, sizeof st);
    AttnSpec spec = causal(1);
    attention_forward(out1, att1, scratch, (AttnQKV){q1, k1, v1}, (AttnShape){1, 4, 1, 1}, &spec,
                      &st);
    free(scratch);
    CHECK_NEAR(st.score_max, -1, 1e-6);
    CHECK_NEAR(st.score_rowmax_sum / st.score_rows, -1, 1e-6);
    CHECK_NEAR(st.score_absmax, 4, 1e-6);
}

// The definition's forward, backward and backward statistics against the formulas evaluated by
// plain loops in double, per head: S = scale Q K^T (masked), P = softmax(S), O = P V,
// dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(dP * P)), dQ = scale dS K, dK = scale dS^T Q.
static void test_attention_definition_matches_formulas_in_double(void) {
    int B = 2, T = 37, C = 40, NH = 2, hd = C / NH;
    Rng rng;
    rng_seed(&rng, 21);
    size_t n = (size_t)B * T * C;
    real *q = randn_array(n, &rng, 1), *k = randn_array(n, &rng, 1), *v = randn_array(n, &rng, 1);
    real *dout = randn_array(n, &rng, 1), *dq = randn_array(n, &rng, 1), *dk = zeros(n),
         *dv = zeros(n);
    real *dq0 = malloc(n * sizeof(real));
    memcpy(dq0, dq, n * sizeof(real));  // GRAD_ADD adds to what is there
    real *att = zeros((size_t)B * NH * T * T), *out = zeros(n), *scratch = attn_scratch(T, hd);
    real *row_gain = zeros((size_t)B * NH * T);
    AttnSpec spec = causal((real)(1.0 / sqrt((double)hd)));
    double scale = spec.scale;
    AttnStats st[2];
    memset(st, 0, sizeof st);
    attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH}, &spec, NULL);
    attention_backward((AttnGradQKV){dq, dk, dv}, scratch, dout, out, att, (AttnQKV){q, k, v},
                       (AttnShape){B, T, C, NH}, &spec, st, row_gain, GRAD_ADD);
    double tol = IS_F64 ? 1e-12 : 2e-5, worst = 0, ds_sumsq[2] = {0, 0}, dp_sumsq[2] = {0, 0},
           gain_err = 0;
    int masked_zero = 1;
    double *P = malloc((size_t)T * T * sizeof(double)),
           *dS = malloc((size_t)T * T * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t off = (size_t)b * T * C + (size_t)h * hd;
#define AT(x, t, i) ((double)(x)[off + (size_t)(t)*C + (i)])
            const real *ph = att + ((size_t)b * NH + h) * T * T;
            for (int t = 0; t < T; t++) {
                double mx = -1e300, sum = 0, rowsum = 0, ds2 = 0, dp2 = 0, dp[64];
                for (int u = 0; u <= t; u++) {
                    double s = 0;
                    for (int i = 0; i < hd; i++) s += AT(q, t, i) * AT(k, u, i);
                    P[t * T + u] = s * scale;
                    if (s * scale > mx) mx = s * scale;
                }
                for (int u = 0; u <= t; u++) {
                    P[t * T + u] = exp(P[t * T + u] - mx);
                    sum += P[t * T + u];
                }
                for (int u = 0; u <= t; u++) P[t * T + u] /= sum;
                // not fmax: Debian 12's gcc 12.2 for ARM64 crashes vectorising an fmax reduction
                // over floats widened to double (internal compiler error in
                // vect_transform_reduction)
                for (int u = 0; u <= t; u++) {
                    double e = fabs(P[t * T + u] - ph[t * T + u]);
                    worst = e > worst ? e : worst;
                }
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
                dp_sumsq[h] += dp2;
                if (t >= 1)
                    gain_err = fmax(gain_err,
                                    fabs(sqrt(ds2 / dp2) - row_gain[((size_t)b * NH + h) * T + t]));
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
    CHECK_MSG(worst <= tol, "largest difference from the formulas %g (tol %g)", worst, tol);
    CHECK(masked_zero);
    for (int h = 0; h < 2; h++) {
        CHECK_NEAR(st[h].ds_sumsq, ds_sumsq[h],
                   (IS_F64 ? 1e-12 : 1e-6) * ds_sumsq[h]);  // seen: 2e-16, 8e-8
        CHECK_NEAR(st[h].dp_sumsq, dp_sumsq[h], (IS_F64 ? 1e-12 : 1e-6) * dp_sumsq[h]);
    }
    CHECK_MSG(gain_err <= (IS_F64 ? 1e-14 : 1e-6), "row gain off by %g",
              gain_err);  // seen: 6e-17, 4e-8
    free(q);
    free(k);
    free(v);
    free(dout);
    free(dq);
    free(dk);
    free(dv);
    free(dq0);
    free(att);
    free(out);
    free(scratch);
    free(row_gain);
    free(P);
    free(dS);
}

// ---------------------------------------------------------------------------------------------
// the engine is the definition

// max |a - b| / max |b| over n values: the error relative to the quantity's own scale
static double rel_max_err(const real *a, const real *b, size_t n) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        diff = isnan(d) ? INFINITY : fmax(diff, d);
        scale = fmax(scale, fabs((double)b[i]));
    }
    return scale > 0 ? diff / scale : diff;
}

// max |a - b| over n values, and max |b|
static double max_abs_err(const real *a, const double *b, size_t n) {
    double diff = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        diff = isnan(d) ? INFINITY : fmax(diff, d);
    }
    return diff;
}
static double max_abs(const double *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(b[i]));
    return m;
}

// The correct model's attention in float64 from its formulas (causal mask, a window of W keys
// when W > 0, softmax over keys), independent of both implementations: O, each row's log-sum-exp
// L = m + log l as its parts {m, 1 / l}, and the gradients given dO, added onto g0 (GRAD_ADD).
typedef struct {
    double *O, *L, *dQ, *dK, *dV;
} Exact;  // L (B,NH,T,2): {m, 1 / l} per row

static void exact_attention(Exact *e, AttnQKV in, const real *dout, const real *g0, int B, int T,
                            int C, int NH, double scale, int W) {
    const real *q = in.q, *k = in.k, *v = in.v;
    int hd = C / NH;
    size_t n = (size_t)B * T * C;
    e->O = calloc(n, sizeof(double));
    e->dQ = calloc(n, sizeof(double));
    e->dK = calloc(n, sizeof(double));
    e->dV = calloc(n, sizeof(double));
    e->L = calloc(2 * (size_t)B * NH * T, sizeof(double));
    double *P = malloc((size_t)T * T * sizeof(double)),
           *dS = malloc((size_t)T * T * sizeof(double));
    double *dp = malloc((size_t)T * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t off = (size_t)b * T * C + (size_t)h * hd;
#define AT(x, t, i) ((double)(x)[off + (size_t)(t)*C + (i)])
            for (int t = 0; t < T; t++) {
                int lo = W > 0 && t - W + 1 > 0 ? t - W + 1 : 0;
                double mx = -INFINITY, sum = 0, rowsum = 0;
                double *Pt = P + (size_t)t * T, *dSt = dS + (size_t)t * T;
                for (int u = 0; u < T; u++) Pt[u] = dSt[u] = 0;
                for (int u = lo; u <= t; u++) {
                    double s = 0;
                    for (int i = 0; i < hd; i++) s += AT(q, t, i) * AT(k, u, i);
                    Pt[u] = s * scale;
                    mx = fmax(mx, Pt[u]);
                }
                for (int u = lo; u <= t; u++) sum += exp(Pt[u] - mx);
                e->L[2 * (((size_t)b * NH + h) * T + t)] = mx;
                e->L[2 * (((size_t)b * NH + h) * T + t) + 1] = 1 / sum;
                for (int u = lo; u <= t; u++) Pt[u] = exp(Pt[u] - mx) / sum;
                for (int i = 0; i < hd; i++) {
                    double o = 0;
                    for (int u = lo; u <= t; u++) o += Pt[u] * AT(v, u, i);
                    e->O[off + (size_t)t * C + i] = o;
                }
                for (int u = lo; u <= t; u++) {
                    dp[u] = 0;
                    for (int i = 0; i < hd; i++) dp[u] += AT(dout, t, i) * AT(v, u, i);
                    rowsum += dp[u] * Pt[u];
                }
                for (int u = lo; u <= t; u++) dSt[u] = Pt[u] * (dp[u] - rowsum);
            }
            for (int t = 0; t < T; t++)
                for (int i = 0; i < hd; i++) {
                    double gq = AT(g0, t, i), gk = AT(g0, t, i), gv = AT(g0, t, i);
                    for (int u = 0; u <= t; u++) gq += scale * dS[(size_t)t * T + u] * AT(k, u, i);
                    for (int u = t; u < T; u++) {  // here t plays the key: rows u >= t may see it
                        gk += scale * dS[(size_t)u * T + t] * AT(q, u, i);
                        gv += P[(size_t)u * T + t] * AT(dout, u, i);
                    }
                    e->dQ[off + (size_t)t * C + i] = gq;
                    e->dK[off + (size_t)t * C + i] = gk;
                    e->dV[off + (size_t)t * C + i] = gv;
                }
#undef AT
        }
    free(P);
    free(dS);
    free(dp);
}

static void exact_free(Exact *e) {
    free(e->O);
    free(e->L);
    free(e->dQ);
    free(e->dK);
    free(e->dV);
}

// The bound on rel_max_err of each quantity, engine against the definition (and, for each row's
// {m, 1 / l}, against float64). Every entry is a sum of about T or hd rounded terms, summed in a
// different order by each (and in float32 exp is a polynomial in the engine, libm's in the
// definition): rounding errors that grow as the square root of the terms' count, sqrt(T + hd) units
// of eps (2^-23 in float32, 2^-52 in float64). Forward (L, O): 4 eps sqrt(T + hd). Backward (dQ,
// dK, dV): 8 eps sqrt(T + hd), as it chains two such sums (dP, then dS K and dS^T Q) through dS = P
// * (dP - D). The test prints its worst each run. And FlashAttention's own rule, in the float32
// build: the engine's largest error against float64 is at most twice the plain float32 definition's
// plus 4 eps times the quantity's largest size.
#define EPS_REAL (IS_F64 ? 2.220446049250313e-16 : 1.1920928955078125e-7)

typedef struct {
    int B, T, C, NH;
    double scale;  // 0: 1/sqrt(head_dim); otherwise the factor (1 = unscaled)
    int window;    // 0: every earlier key; W: the last W keys
} TestShape;

static const TestShape SHAPES[] = {
    {1, 1, 1, 1, 0, 0},       // T = 1, head_dim 1
    {2, 1, 8, 2, 0, 0},       // T = 1
    {1, 5, 5, 1, 0, 0},       // head_dim 5, T below one tile
    {3, 7, 10, 2, 1, 0},      // unscaled, T = one tile + 1
    {2, 13, 128, 2, 0, 0},    // head_dim 64
    {1, 17, 100, 1, 0, 0},    // head_dim 100 (not a multiple of the tile width)
    {2, 37, 64, 1, 1, 0},     // head_dim 64 unscaled: saturated rows
    {2, 63, 10, 2, 0, 0},     // one key short of a backward block
    {3, 64, 256, 4, 0, 0},    // the default model's T, head_dim 64: one backward block
    {1, 65, 15, 3, 0.37, 0},  // one key past a block, head_dim 5, a fixed factor
    {1, 100, 64, 1, 0, 0},    // long T, one head
    {4, 23, 12, 12, 0, 0},    // head_dim 1, many heads
    {1, 256, 64, 1, 1, 0},    // long T unscaled: one forward block
    {1, 300, 40, 2, 0, 0},    // past one forward block
    {4, 64, 128, 2, 0, 0},    // more (batch, head) tasks than threads: the threads share the work
    {2, 45, 96, 3, 0, 0},     {1, 1000, 64, 1, 0, 0},
    {1, 2048, 32, 1, 0, 0},   {1, 65, 10, 2, 0, 1},   // a window of 1: each row sees itself only
    {2, 200, 64, 2, 0, 37},                           // windows across the blocks' edges
    {1, 300, 40, 2, 1, 64},   {2, 64, 20, 4, 0, 64},  // a window as long as T: the causal mask
    {1, 600, 64, 1, 0, 300},                          // a window longer than a forward block
    {1, 1000, 64, 1, 0, 100},
};

static void test_attention_engine_equals_definition(void) {
    // the largest rel_max_err / (eps sqrt(T + hd)) of L, O, dQ, dK, dV, and of the engine's error
    // against float64 over the definition's
    double worst[5] = {0, 0, 0, 0, 0}, worst_ratio[4] = {0, 0, 0, 0};
    static const char *const names[5] = {"{m, 1/l}", "O", "dQ", "dK", "dV"};
#ifdef _OPENMP
    int threads_before = omp_get_max_threads();
#endif
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        const TestShape *sh = &SHAPES[s];
        int B = sh->B, T = sh->T, C = sh->C, NH = sh->NH, hd = C / NH;
        AttnSpec spec = causal((real)(sh->scale > 0 ? sh->scale : 1.0 / sqrt((double)hd)));
        spec.window = sh->window;
        Rng rng;
        rng_seed(&rng, 100 + s);
        size_t n = (size_t)B * T * C, nl = 2 * (size_t)B * NH * T;
        real *q = randn_array(n, &rng, 1), *k = randn_array(n, &rng, 1),
             *v = randn_array(n, &rng, 1);
        real *dout = randn_array(n, &rng, 1), *dq_start = randn_array(n, &rng, 1);
        Exact ex;
        exact_attention(&ex, (AttnQKV){q, k, v}, dout, dq_start, B, T, C, NH, spec.scale,
                        spec.window);
        const double *exact[5] = {ex.L, ex.O, ex.dQ, ex.dK, ex.dV};
        real *scratch = zeros(attention_scratch_size(T, hd) * 4);
        // the definition: forward, then the gradients added onto dq_start (GRAD_ADD)
        real *out_r = NULL, *g_r[3] = {NULL, NULL, NULL};
        {
            real *att_r = zeros((size_t)B * NH * T * T);
            out_r = zeros(n);
            attention_forward(out_r, att_r, scratch, (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH},
                              &spec, NULL);
            for (int i = 0; i < 3; i++) {
                g_r[i] = zeros(n);
                memcpy(g_r[i], dq_start, n * sizeof(real));
            }
            attention_backward((AttnGradQKV){g_r[0], g_r[1], g_r[2]}, scratch, dout, out_r, att_r,
                               (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH}, &spec, NULL, NULL,
                               GRAD_ADD);
            free(att_r);
        }
        const real *defn[5] = {NULL, out_r, g_r[0], g_r[1], g_r[2]};
        real *stat_1 = NULL, *out_1 = NULL, *g_1[3] = {NULL, NULL, NULL};
        // 1 thread, then 2 and 3 threads three times each (a race between threads shows only now
        // and then)
        for (int pass = 0; pass < 7; pass++) {
            int threads = pass == 0 ? 1 : 2 + (pass - 1) % 2;
#ifdef _OPENMP
            if (threads > omp_get_thread_limit())
                break;  // OMP_THREAD_LIMIT (the ARM64 run under QEMU)
            omp_set_num_threads(threads);
#else
            if (threads > 1) break;  // a single-threaded build: the thread-count check cannot run
#endif
            real *stat = zeros(nl), *out = zeros(n), *g[3] = {zeros(n), zeros(n), zeros(n)};
            for (size_t i = 0; i < nl; i++) stat[i] = NAN;  // every entry must be written
            for (size_t i = 0; i < n; i++) out[i] = NAN;
            attention_engine_forward(out, stat, scratch, (AttnQKV){q, k, v},
                                     (AttnShape){B, T, C, NH}, &spec, NULL);
            for (int i = 0; i < 3; i++) memcpy(g[i], dq_start, n * sizeof(real));
            attention_engine_backward((AttnGradQKV){g[0], g[1], g[2]}, scratch, dout, out, stat,
                                      (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH}, &spec, NULL,
                                      NULL, GRAD_ADD);
            const real *got[5] = {stat, out, g[0], g[1], g[2]};
            for (int i = 0; i < 5; i++) {
                size_t len = i == 0 ? nl : n;
                double bound = (i < 2 ? 4 : 8) * EPS_REAL * sqrt((double)T + hd);
                // against the definition where it computes the spec, else (and for {m, 1/l})
                // float64
                double scale_i = max_abs(exact[i], len), e;
                if (!defn[i]) {
                    e = scale_i > 0 ? max_abs_err(got[i], exact[i], len) / scale_i
                                    : max_abs_err(got[i], exact[i], len);
                } else {
                    e = rel_max_err(got[i], defn[i], len);
                    // (in the float64 build the reference is no more exact than either)
                    double mine = max_abs_err(got[i], exact[i], len),
                           theirs = max_abs_err(defn[i], exact[i], len);
                    double allowed = 2 * theirs + 4 * EPS_REAL * scale_i;
                    CHECK_MSG(IS_F64 || mine <= allowed,
                              "B %d T %d C %d NH %d W %d, %d threads: %s's error %.3g "
                              "against float64, the definition's %.3g",
                              B, T, C, NH, spec.window, threads, names[i], mine, theirs);
                    if (!IS_F64) worst_ratio[i - 1] = fmax(worst_ratio[i - 1], mine / allowed);
                }
                CHECK_MSG(e <= bound,
                          "B %d T %d C %d NH %d scale %g W %d, %d threads: %s differs by %.3g "
                          "(bound %.1g)",
                          B, T, C, NH, (double)spec.scale, spec.window, threads, names[i], e,
                          bound);
                worst[i] = fmax(worst[i], e / (EPS_REAL * sqrt((double)T + hd)));
            }
            if (threads == 1) {
                stat_1 = stat;
                out_1 = out;
                for (int i = 0; i < 3; i++) g_1[i] = g[i];
                continue;
            }
            // the engine gives the same bits for any thread count
            int same = memcmp(stat, stat_1, nl * sizeof(real)) == 0 &&
                       memcmp(out, out_1, n * sizeof(real)) == 0;
            for (int i = 0; i < 3; i++) same &= memcmp(g[i], g_1[i], n * sizeof(real)) == 0;
            CHECK_MSG(same, "B %d T %d C %d NH %d W %d: %d threads differ from one", B, T, C, NH,
                      spec.window, threads);
            free(stat);
            free(out);
            for (int i = 0; i < 3; i++) free(g[i]);
        }
        free(stat_1);
        free(out_1);
        free(out_r);
        for (int i = 0; i < 3; i++) {
            free(g_1[i]);
            free(g_r[i]);
        }
        free(q);
        free(k);
        free(v);
        free(dout);
        free(dq_start);
        free(scratch);
        exact_free(&ex);
    }
#ifdef _OPENMP
    omp_set_num_threads(threads_before);
    if (omp_get_thread_limit() < 3)
        fprintf(stderr,
                "  note: OMP_THREAD_LIMIT=%d: the engine's results across thread counts compared "
                "up to it\n",
                omp_get_thread_limit());
#else
    fprintf(stderr, "  note: built without OpenMP: the engine's results across thread counts are "
                    "not compared\n");
#endif
    fprintf(stderr,
            "  engine vs definition (%s), worst difference in units of eps sqrt(T + hd): {m, 1/l} "
            "%.2f, O %.2f, "
            "dQ %.2f, dK %.2f, dV %.2f\n",
            REAL_NAME, worst[0], worst[1], worst[2], worst[3], worst[4]);
    if (!IS_F64)
        fprintf(stderr,
                "  engine's error against float64 over the allowed (2x the float32 definition's): "
                "O %.2f, dQ %.2f, "
                "dK %.2f, dV %.2f\n",
                worst_ratio[0], worst_ratio[1], worst_ratio[2], worst_ratio[3]);
}

// GRAD_STORE overwrites what the gradient buffers held (NaN here, which any read would carry)
// with exactly what GRAD_ADD adds onto zeros, in both implementations.
static void fill(real *x, size_t n, real v) {
    for (size_t i = 0; i < n; i++) x[i] = v;
}
static void test_attention_store_overwrites(void) {
    const AttentionImpl *impls[2] = {&attention_definition, &attention_engine};
    Rng rng;
    rng_seed(&rng, 12);
    int B = 2, T = 11, C = 20, NH = 2;
    size_t n = (size_t)B * T * C;
    real *q = randn_array(n, &rng, 1), *k = randn_array(n, &rng, 1), *v = randn_array(n, &rng, 1);
    real *dout = randn_array(n, &rng, 1), *att = zeros((size_t)B * NH * T * T), *out = zeros(n);
    real *scratch = attn_scratch(T, C / NH);
    AttnSpec spec = causal((real)(1.0 / sqrt(C / NH)));
    for (int m = 0; m < 2; m++) {
        impls[m]->forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH}, &spec,
                          NULL);
        real *g_add[3], *g_set[3];
        for (int i = 0; i < 3; i++) {
            g_add[i] = zeros(n);
            g_set[i] = zeros(n);
            fill(g_set[i], n, NAN);
        }
        impls[m]->backward((AttnGradQKV){g_add[0], g_add[1], g_add[2]}, scratch, dout, out, att,
                           (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH}, &spec, NULL, NULL,
                           GRAD_ADD);
        impls[m]->backward((AttnGradQKV){g_set[0], g_set[1], g_set[2]}, scratch, dout, out, att,
                           (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH}, &spec, NULL, NULL,
                           GRAD_STORE);
        for (int i = 0; i < 3; i++) {
            CHECK_MSG(memcmp(g_add[i], g_set[i], n * sizeof(real)) == 0, "%s: gradient %d",
                      impls[m]->name, i);
            free(g_add[i]);
            free(g_set[i]);
        }
    }
    free(q);
    free(k);
    free(v);
    free(dout);
    free(att);
    free(out);
    free(scratch);
}

// Decoding one position must give row `pos` of the engine's forward bit for bit (KV-cache
// generation relies on it), whatever the head width, however the rows fall into tiles and the
// keys into blocks, and under a window from the window's keys alone (as a ring cache holds them).
static void test_attention_decode_matches_engine_rows(void) {
    int shapes[][4] = {{37, 40, 2, 0},  {19, 96, 3, 0},  {8, 3, 1, 0},     {70, 128, 2, 0},
                       {300, 64, 2, 0}, {600, 32, 1, 0}, {300, 40, 2, 64}, {600, 32, 1, 300},
                       {40, 20, 2, 1},  {90, 24, 3, 7}};  // T, C, NH, W
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int T = shapes[s][0], C = shapes[s][1], NH = shapes[s][2], W = shapes[s][3];
        Rng rng;
        rng_seed(&rng, 11 + (uint64_t)s);
        size_t n = (size_t)T * C;
        real *q = randn_array(n, &rng, 1), *k = randn_array(n, &rng, 1),
             *v = randn_array(n, &rng, 1);
        real *stat = zeros(2 * (size_t)NH * T), *out = zeros(n), *scratch = attn_scratch(T, C / NH);
        real *row = zeros((size_t)C), *scores = zeros(attention_decode_scratch_reals(T));
        AttnSpec spec = causal((real)(1.0 / sqrt((double)C / NH)));
        spec.window = W;
        attention_engine_forward(out, stat, scratch, (AttnQKV){q, k, v}, (AttnShape){1, T, C, NH},
                                 &spec, NULL);
        int rows_equal = 0;
        for (int pos = 0; pos < T; pos++) {
            int first =
                W > 0 && pos - W + 1 > 0 ? pos - W + 1 : 0;  // the keys it sees, first .. pos
            attention_decode_step(row, scores, q + (size_t)pos * C, k + (size_t)first * C,
                                  v + (size_t)first * C, pos - first, C, NH, &spec);
            rows_equal += memcmp(row, out + (size_t)pos * C, (size_t)C * sizeof(real)) == 0;
        }
        CHECK_MSG(rows_equal == T, "T %d C %d NH %d W %d: %d/%d output rows equal", T, C, NH, W,
                  rows_equal, T);
        free(q);
        free(k);
        free(v);
        free(stat);
        free(out);
        free(scratch);
        free(row);
        free(scores);
    }
}

// A window of W: row t of P is the softmax of the scores of keys t-W+1 .. t alone (computed here
// by softmax_forward on those), exactly 0 elsewhere; the statistics' visibility functions say
// the same; W >= T is the full causal mask bit for bit; the gradient outside the window is 0
// through dS (dK and dV of a key get nothing from queries that do not see it).
static void test_attention_window_definition(void) {
    int B = 2, T = 9, C = 6, NH = 2, hd = 3;
    Rng rng;
    rng_seed(&rng, 21);
    size_t n = (size_t)B * T * C;
    real *q = randn_array(n, &rng, 1), *k = randn_array(n, &rng, 1), *v = randn_array(n, &rng, 1);
    real *att = zeros((size_t)B * NH * T * T), *out = zeros(n), *scratch = attn_scratch(T, hd);
    real *att_full = zeros((size_t)B * NH * T * T), *out_full = zeros(n);
    real scale = (real)(1.0 / sqrt(3.0));
    AttnSpec full = causal(scale);
    attention_forward(out_full, att_full, scratch, (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH},
                      &full, NULL);
    for (int W = 1; W <= T + 2; W++) {
        AttnSpec spec = windowed(scale, W, SOFTMAX_OVER_KEYS);
        attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH}, &spec,
                          NULL);
        int rows_ok = 0, vis_ok = 1;
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++)
                for (int t = 0; t < T; t++) {
                    int first = t - W + 1 > 0 ? t - W + 1 : 0, keys = t - first + 1;
                    real srow[16], prow[16];
                    for (int u = first; u <= t; u++) {
                        real dot = 0;
                        for (int i = 0; i < hd; i++)
                            dot += q[((size_t)b * T + t) * C + h * hd + i] *
                                   k[((size_t)b * T + u) * C + h * hd + i];
                        srow[u - first] = dot * scale;
                    }
                    softmax_forward(prow, srow, keys);
                    const real *P = att + (((size_t)b * NH + h) * T + t) * T;
                    int ok = 1;
                    for (int u = 0; u < T; u++) {
                        int inside = u >= first && u <= t;
                        ok &= inside ? fabs((double)P[u] - prow[u - first]) <= 2e-6 : P[u] == 0;
                        vis_ok &= attention_visible(&spec, t, u) == inside;
                    }
                    vis_ok &= attention_visible_keys(&spec, t, T) == keys &&
                              attention_first_key(&spec, t) == first;
                    rows_ok += ok;
                }
        CHECK_MSG(rows_ok == B * NH * T, "window %d: %d of %d rows are the softmax over the window",
                  W, rows_ok, B * NH * T);
        CHECK_MSG(
            vis_ok,
            "window %d: attention_visible / _visible_keys / _first_key disagree with the mask", W);
        if (W >= T)
            CHECK_MSG(memcmp(att, att_full, (size_t)B * NH * T * T * sizeof(real)) == 0 &&
                          memcmp(out, out_full, n * sizeof(real)) == 0,
                      "window %d >= T differs from the causal mask", W);
        // the statistics count the window's keys: a row sees min(t + 1, W) of them
        AttnStats st[2];
        memset(st, 0, sizeof st);
        attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){B, T, C, NH}, &spec,
                          st);
        double scores = 0, rows = 0;
        for (int t = 0; t < T; t++) {
            int keys = t + 1 < W ? t + 1 : W;
            scores += keys;
            rows += keys >= 2;
        }
        CHECK_MSG(st[0].score_n == B * scores && st[0].rows == B * rows && st[0].future_mass == 0,
                  "window %d: %g scores and %g rows counted, expected %g and %g", W, st[0].score_n,
                  st[0].rows, B * scores, B * rows);
    }
    // the backward: a key outside every window gets no gradient from the rows that do not see it
    AttnSpec spec = windowed(scale, 2, SOFTMAX_OVER_KEYS);
    attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){1, T, C, NH}, &spec, NULL);
    real *dout = zeros(n), *dq = zeros(n), *dk = zeros(n), *dv = zeros(n);
    for (int i = 0; i < C; i++)
        dout[(size_t)(T - 1) * C + i] = 1;  // only the last row's output matters
    attention_backward((AttnGradQKV){dq, dk, dv}, scratch, dout, out, att, (AttnQKV){q, k, v},
                       (AttnShape){1, T, C, NH}, &spec, NULL, NULL, GRAD_STORE);
    int outside_zero = 1, inside_nonzero = 0;
    for (int u = 0; u < T; u++)
        for (int i = 0; i < C; i++) {
            if (u < T - 2)
                outside_zero &= dk[(size_t)u * C + i] == 0 && dv[(size_t)u * C + i] == 0;
            else
                inside_nonzero += dv[(size_t)u * C + i] != 0;
        }
    CHECK_MSG(outside_zero && inside_nonzero == 2 * C,
              "the last row's window of 2 keys: gradient outside it");
    free(q);
    free(k);
    free(v);
    free(att);
    free(out);
    free(scratch);
    free(att_full);
    free(out_full);
    free(dout);
    free(dq);
    free(dk);
    free(dv);
}

// The engine computes windows (skipping the blocks outside them): its supports() says so, and a
// windowed model trains and evaluates with it; the mistakes still run the definition.
static void test_attention_window_runs_the_engine(void) {
    AttnSpec spec = windowed((real)0.5, 4, SOFTMAX_OVER_KEYS), full = causal((real)0.5);
    CHECK(attention_engine.supports(&spec) && attention_engine.supports(&full));
    CHECK(!attention_engine.supports(
        &(AttnSpec){(real)0.5, ATTN_MASK_ZERO, SOFTMAX_OVER_KEYS, 0, NULL}));
    CHECK(attention_definition.supports(&spec));
    ModelDims d = {9, 8, 2, 2, 8, QK_NORM_NONE};
    GPT m;
    gpt_build(&m, &d, attention_causal((real)0.5), 2, 8);
    // the configuration's window reaches the model, whose engine computes it
    Config cfg;
    char err[256];
    config_defaults(&cfg);
    CHECK(config_apply_override(&cfg, "model.attn_window=4", err, sizeof err) &&
          config_finalize(&cfg, err, sizeof err));
    set_attention(&m, attention_setup(&cfg));
    CHECK(m.attn.window == 4 && m.attn_impl == &attention_engine && !gpt_attention_falls_back(&m));
    config_defaults(&cfg);
    CHECK(config_finalize(&cfg, err, sizeof err));
    set_attention(&m, attention_setup(&cfg));
    CHECK(m.attn.window == 0 && !gpt_attention_falls_back(&m));
    gpt_free(&m);
}

// The definition's decode step is row `pos` of its forward bit for bit, with and without a
// window (the keys given: those the row sees, oldest first).
static void test_attention_decode_matches_definition_rows(void) {
    int shapes[][4] = {{37, 40, 2, 0},
                       {37, 40, 2, 5},
                       {19, 96, 3, 1},
                       {8, 3, 1, 3},
                       {70, 128, 2, 16}};  // T, C, NH, W
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int T = shapes[s][0], C = shapes[s][1], NH = shapes[s][2], W = shapes[s][3];
        Rng rng;
        rng_seed(&rng, 31 + (uint64_t)s);
        size_t n = (size_t)T * C;
        real *q = randn_array(n, &rng, 1), *k = randn_array(n, &rng, 1),
             *v = randn_array(n, &rng, 1);
        real *att = zeros((size_t)NH * T * T), *out = zeros(n), *scratch = attn_scratch(T, C / NH);
        real *row = zeros((size_t)C), *scores = zeros((size_t)T);
        AttnSpec spec = windowed((real)(1.0 / sqrt((double)C / NH)), W, SOFTMAX_OVER_KEYS);
        attention_forward(out, att, scratch, (AttnQKV){q, k, v}, (AttnShape){1, T, C, NH}, &spec,
                          NULL);
        int rows_equal = 0, p_equal = 0;
        for (int pos = 0; pos < T; pos++) {
            int first = attention_first_key(&spec, pos);
            attention_definition.decode(row, scores, q + (size_t)pos * C, k + (size_t)first * C,
                                        v + (size_t)first * C, pos - first, C, NH, &spec);
            rows_equal += memcmp(row, out + (size_t)pos * C, (size_t)C * sizeof(real)) == 0;
            p_equal += memcmp(scores, att + ((size_t)(NH - 1) * T + pos) * T + first,
                              (size_t)(pos - first + 1) * sizeof(real)) == 0;
        }
        CHECK_MSG(rows_equal == T && p_equal == T,
                  "T %d C %d NH %d W %d: %d/%d output rows and %d/%d weight rows equal", T, C, NH,
                  W, rows_equal, T, p_equal, T);
        free(q);
        free(k);
        free(v);
        free(att);
        free(out);
        free(scratch);
        free(row);
        free(scores);
    }
}

// The probe's statistics are the definition's whichever implementation trains: a model training
// on the engine and one training on the definition report identical statistics. Each head's
// figures follow from the sums the passes gathered (score_std, ds_over_dp, the row gains'
// median); and with wq = wk = 0 every score is 0, every causal row uniform, and the figures are
// known exactly.
static void test_probe_statistics_come_from_the_definition(void) {
    ModelDims d = {9, 8, 2, 2, 8, QK_NORM_NONE};
    GPT a, b;
    gpt_build(&a, &d, attention_causal((real)0.5), 2, 8);
    gpt_build(&b, &d, attention_causal((real)0.5), 2, 8);
    Rng rng;
    rng_seed(&rng, 3);
    gpt_init(&a, INIT_FAN_IN, &rng);
    memcpy(b.params, a.params, a.n_params * sizeof(real));
    set_attention(&b, (AttnSetup){a.attn, &attention_definition, MODEL_ENGINE});
    CHECK(a.attn_impl == &attention_engine);
    int x[16], y[16];
    for (int i = 0; i < 16; i++) {
        x[i] = (i * 7) % 9;
        y[i] = (i * 5 + 1) % 9;
    }
    HeadStats ha[4], hb[4], ma, mb;
    attention_probe(&a, x, y, 2, 8, ha, &ma);
    attention_probe(&b, x, y, 2, 8, hb, &mb);
    CHECK(memcmp(ha, hb, sizeof ha) == 0 && memcmp(&ma, &mb, sizeof ma) == 0);
    CHECK(ma.entropy_norm > 0 && ma.entropy_norm <= 1 && ma.ds_over_dp > 0);
    // each head's figures from its sums (the probe leaves them in attn_stats and row_gain)
    for (int k = 0; k < 4; k++) {
        const AttnStats *s = &a.attn_stats[k];
        double mu = s->score_sum / s->score_n;
        CHECK_NEAR(ha[k].score_std, sqrt(s->score_sumsq / s->score_n - mu * mu), 1e-9);
        CHECK_NEAR(ha[k].ds_over_dp, sqrt(s->ds_sumsq / s->dp_sumsq), 1e-12);
        CHECK_NEAR(ha[k].entropy, s->entropy / s->rows, 1e-12);
        real gains[14];
        int n = 0, l = k / 2, h = k % 2;
        for (int bb = 0; bb < 2; bb++)
            for (int t = 1; t < 8; t++)
                gains[n++] = a.row_gain[(size_t)l * 16 * 2 + ((size_t)bb * 2 + h) * 8 + t];
        for (int i = 1; i < n; i++)  // insertion sort, then the median of 14
            for (int j = i; j > 0 && gains[j - 1] > gains[j]; j--) {
                real t = gains[j];
                gains[j] = gains[j - 1];
                gains[j - 1] = t;
            }
        CHECK_NEAR(ha[k].row_gain_median, 0.5 * ((double)gains[6] + gains[7]), 1e-12);
    }
    double mean_gq = 0;
    for (int k = 0; k < 4; k++) mean_gq += ha[k].gnorm_wq / 4;
    CHECK_NEAR(ma.gnorm_wq, mean_gq, 1e-12);
    CHECK(ha[0].gnorm_wq != ha[0].gnorm_wk);
    // and the training passes of the two differ only by rounding
    double la = train_pass(&a, x, y, 2, 8), lb = train_pass(&b, x, y, 2, 8);
    CHECK_NEAR(la, lb, IS_F64 ? 1e-12 : 1e-5);
    // wq = wk = 0: uniform causal rows over t + 1 keys, t = 1..7
    for (int l = 0; l < 2; l++) {
        memset(a.p.layers[l].wq, 0, 64 * sizeof(real));
        memset(a.p.layers[l].wk, 0, 64 * sizeof(real));
    }
    attention_probe(&a, x, y, 2, 8, ha, &ma);
    double harmonic = 0;
    for (int t = 2; t <= 8; t++) harmonic += 1.0 / t;
    CHECK_NEAR(ma.entropy, log(40320.0) / 7, 1e-6);  // ln(8!) / 7
    CHECK_NEAR(ma.entropy_norm, 1.0, 1e-6);
    CHECK_NEAR(ma.max_weight, harmonic / 7, 1e-6);
    CHECK(ma.frac_gt_090 == 0 && ma.frac_gt_099 == 0 && ma.future_mass == 0);
    CHECK(ma.score_std == 0 && ma.score_absmax == 0 && ma.gnorm_wq == 0 && ma.gnorm_wk == 0);
    CHECK(ma.max_logit == 0 &&
          ma.mean_max_logit == 0);  // every score 0: the largest is 0, not -inf
    gpt_free(&a);
    gpt_free(&b);
}

// The probe's numbers do not depend on the thread count (training runs it on the threads its
// steps run on now, which the machine's load chooses): the same statistics, bit for bit, and the
// same attention weights on one thread and on two.
static void test_probe_same_bits_for_any_thread_count(void) {
    if (thread_max() < 2)
        SKIP("needs 2 OpenMP threads (this build or OMP_NUM_THREADS has %d)", thread_max());
    enum { B = 4, T = 32, C = 64, NH = 4, L = 2, V = 11 };
    ModelDims d = {V, T, L, NH, C, QK_NORM_NONE};
    GPT m;
    gpt_build(&m, &d, attention_causal((real)0.125), B, T);
    Rng rng;
    rng_seed(&rng, 8);
    gpt_init(&m, INIT_FAN_IN, &rng);
    int x[B * T], y[B * T];
    for (int i = 0; i < B * T; i++) {
        x[i] = (i * 7 + i / 5) % V;
        y[i] = (i * 5 + 1) % V;
    }
    size_t nP = (size_t)B * NH * T * T;
    HeadStats h[2][L * NH], mean[2];
    real *P[2];
    int threads_before = thread_max();
    for (int run = 0; run < 2; run++) {
        thread_set_max(run ? 2 : 1);
        attention_probe(&m, x, y, B, T, h[run], &mean[run]);
        P[run] = malloc(L * nP * sizeof(real));
        for (int l = 0; l < L; l++)
            memcpy(P[run] + l * nP, m.acts.layers[l].att, nP * sizeof(real));
    }
    thread_set_max(threads_before);
    CHECK_MSG(memcmp(h[0], h[1], sizeof h[0]) == 0 &&
                  memcmp(&mean[0], &mean[1], sizeof mean[0]) == 0,
              "statistics differ between one and two threads (entropy %.9g and %.9g)",
              mean[0].entropy, mean[1].entropy);
    CHECK_MSG(memcmp(P[0], P[1], L * nP * sizeof(real)) == 0,
              "attention weights differ between one and two threads");
    CHECK(mean[0].entropy > 0 && mean[0].gnorm_wq > 0);
    free(P[0]);
    free(P[1]);
    gpt_free(&m);
}

const TestCase tests_attention[] = {
    {"gradcheck_attention_definition", gradcheck_attention_definition},
    {"gradcheck_attention_engine", gradcheck_attention_engine},
    {"gradcheck_attention_catches_broken_backward", gradcheck_attention_catches_broken_backward},
    {"gradcheck_softmax_vjp_matches_jacobian", gradcheck_softmax_vjp_matches_jacobian},
    {"attention_hand_computed_example", test_attention_hand_computed_example},
    {"attention_t3_example", test_attention_t3_example},
    {"attention_mistakes_t3", test_attention_mistakes_t3},
    {"attention_row_stats", test_attention_row_stats},
    {"attention_stats_uniform_and_row0", test_attention_stats_uniform_and_row0},
    {"attention_stats_peaked", test_attention_stats_peaked},
    {"attention_stats_max_logit", test_attention_stats_max_logit},
    {"attention_definition_matches_formulas_in_double",
     test_attention_definition_matches_formulas_in_double},
    {"attention_engine_equals_definition", test_attention_engine_equals_definition},
    {"attention_store_overwrites", test_attention_store_overwrites},
    {"attention_decode_matches_engine_rows", test_attention_decode_matches_engine_rows},
    {"attention_decode_matches_definition_rows", test_attention_decode_matches_definition_rows},
    {"attention_window_definition", test_attention_window_definition},
    {"attention_window_runs_the_engine", test_attention_window_runs_the_engine},
    {"probe_statistics_come_from_the_definition", test_probe_statistics_come_from_the_definition},
    {"probe_same_bits_for_any_thread_count", test_probe_same_bits_for_any_thread_count},
    {NULL, NULL},
};
