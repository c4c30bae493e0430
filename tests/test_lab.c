// tests/test_lab.c: the computations behind ./lab (teach/lab_core.c): the course's worked examples,
// the causal mask, the NumPy-seeded exercise, the softmax VJP against its Jacobian and finite
// differences, and the whole-model gradient check (gradcheck_model), which must pass in float64
// for both attention scales and both inits and must fail when the softmax backward is broken.
// Tolerances: 1e-6 on printed numbers in float64, 1e-5 in float32. The gradcheck_* tests are the
// float64 ones (`run_tests64 --only gradcheck`); in float32 they check only what float32 finite
// differences can resolve (the fan_in init) and skip the rest.
#define _POSIX_C_SOURCE 200809L  // popen
#include "test.h"
#include "attention.h"
#include "teach/lab_core.h"
#include "model.h"
#include "tests/set_attention.h"  // set_attention: another attention on the same weights
#include "base/rng.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL (sizeof(real) == 8 ? 1e-6 : 1e-5)

// ---------------------------------------------------------------------------------------------
// worked examples

static const real EX_Q[] = {1, 0, 0, 1, 1, 1};  // Q = K
static const real EX_V[] = {10, 0, 0, 10, 5, 5};

static void lab_example_t3_scaled(void) {
    real w[9], out[6], s[9];
    CHECK(lab_attention(out, w, s, EX_Q, 3, EX_Q, EX_V, 3, 2, (real)(1.0 / sqrt(2.0)), 0));
    static const double rows0[] = {0.401112, 0.197776, 0.401112};
    for (int u = 0; u < 3; u++) CHECK_NEAR(w[u], rows0[u], TOL);
    static const double outs[] = {6.016681, 3.983319, 3.983319, 6.016681, 5, 5};
    for (int i = 0; i < 6; i++) CHECK_NEAR(out[i], outs[i], TOL);
    // raw scores are Q K^T, unscaled
    static const double scores[] = {1, 0, 1, 0, 1, 1, 1, 1, 2};
    for (int i = 0; i < 9; i++) CHECK_NEAR(s[i], scores[i], 0);
    for (int t = 0; t < 3; t++) CHECK_NEAR(w[t * 3] + w[t * 3 + 1] + w[t * 3 + 2], 1.0, TOL);
}

static void lab_example_t3_unscaled_more_peaked(void) {
    // without the scale the same scores give a more peaked row: max weight grows
    real ws[9], wu[9], out[6], s[9];
    lab_attention(out, ws, s, EX_Q, 3, EX_Q, EX_V, 3, 2, (real)(1.0 / sqrt(2.0)), 0);
    lab_attention(out, wu, s, EX_Q, 3, EX_Q, EX_V, 3, 2, 1, 0);
    CHECK_NEAR(wu[0], exp(1.0) / (2 * exp(1.0) + 1), TOL);
    CHECK_NEAR(out[0], 10 * exp(1.0) / (2 * exp(1.0) + 1) + 5 * exp(1.0) / (2 * exp(1.0) + 1),
               1e-4);
    for (int t = 0; t < 3; t++) {
        double mu = 0, ms = 0;
        for (int u = 0; u < 3; u++) {
            if (wu[t * 3 + u] > mu) mu = wu[t * 3 + u];
            if (ws[t * 3 + u] > ms) ms = ws[t * 3 + u];
        }
        CHECK(mu > ms);
    }
}

static void lab_example_single_query(void) {
    static const real q[] = {1, 0}, K[] = {1, 0, 0, 1}, V[] = {10, 0, 0, 10};
    real w[2], out[2], s[2];
    CHECK(lab_attention(out, w, s, q, 1, K, V, 2, 2, (real)(1.0 / sqrt(2.0)), 0));
    CHECK_NEAR(w[0], 0.669762, TOL);
    CHECK_NEAR(w[1], 0.330238, TOL);
    CHECK_NEAR(out[0], 6.697615, TOL);
    CHECK_NEAR(out[1], 3.302385, TOL);
    // a single query cannot be causal against two keys: refused
    CHECK(!lab_attention(out, w, s, q, 1, K, V, 2, 2, 1, 1));
}

static void lab_example_causal_mask(void) {
    for (int scaled = 0; scaled <= 1; scaled++) {
        real scale = scaled ? (real)(1.0 / sqrt(2.0)) : (real)1;
        real w[9], out[6], s[9];
        CHECK(lab_attention(out, w, s, EX_Q, 3, EX_Q, EX_V, 3, 2, scale, 1));
        for (int t = 0; t < 3; t++) {
            double sum = 0;
            for (int u = 0; u < 3; u++) {
                if (u > t) CHECK(w[t * 3 + u] == 0);  // exactly zero, not merely small
                sum += w[t * 3 + u];
            }
            CHECK_NEAR(sum, 1.0, TOL);
            // each causal row is the unmasked softmax over its prefix (attention_forward agrees
            // with softmax_forward)
            real pw[9], pout[6], ps[9];
            lab_attention(pout, pw, ps, EX_Q + t * 2, 1, EX_Q, EX_V, t + 1, 2, scale, 0);
            for (int u = 0; u <= t; u++) CHECK_NEAR(w[t * 3 + u], pw[u], 1e-6);
            for (int i = 0; i < 2; i++) CHECK_NEAR(out[t * 2 + i], pout[i], 1e-5);
        }
        CHECK_NEAR(w[0], 1.0, 0);  // row 0 sees only itself
        CHECK_NEAR(out[0], 10.0, TOL);
    }
    // scaled row 1 is the single-query example with the keys swapped
    real w[9], out[6], s[9];
    lab_attention(out, w, s, EX_Q, 3, EX_Q, EX_V, 3, 2, (real)(1.0 / sqrt(2.0)), 1);
    CHECK_NEAR(w[3], 0.330238, TOL);
    CHECK_NEAR(w[4], 0.669762, TOL);
    CHECK_NEAR(out[2], 3.302385, TOL);
    CHECK_NEAR(out[3], 6.697615, TOL);
}

// ---------------------------------------------------------------------------------------------
// the exercise

static void lab_exercise_seed0(void) {
    LabExercise e;
    CHECK(lab_exercise_run(&e, 0, 5, 8, 0));
    CHECK_NEAR(e.Q[0], 1.764052, TOL);
    CHECK_NEAR(e.Q[1], 0.400157, TOL);
    CHECK_NEAR(e.Q[2], 0.978738, TOL);
    static const double ms[] = {0.266858, 0.356560, 0.465683, 0.544463, 0.513327};
    static const double mu[] = {0.393390, 0.634934, 0.774480, 0.916480, 0.933617};
    // NumPy's values for the same draws (entropy in nats)
    static const double hs[] = {1.579885, 1.496579, 1.254995, 1.241361, 1.363316};
    static const double hu[] = {1.417328, 1.025023, 0.695456, 0.344573, 0.332138};
    for (int t = 0; t < 5; t++) {
        CHECK_NEAR(e.rowmax_scaled[t], ms[t], TOL);
        CHECK_NEAR(e.rowmax_unscaled[t], mu[t], TOL);
        CHECK_NEAR(e.entropy_scaled[t], hs[t], TOL);
        CHECK_NEAR(e.entropy_unscaled[t], hu[t], TOL);
    }
    CHECK(e.stat_rows == 5);
    CHECK_NEAR(e.mean_max_scaled, 0.429378, TOL);
    CHECK_NEAR(e.mean_max_unscaled, 0.730580, TOL);
    CHECK_NEAR(e.mean_entropy_scaled, 1.387227, TOL);
    CHECK_NEAR(e.mean_entropy_unscaled, 0.762904, TOL);
    lab_exercise_free(&e);
}

static void lab_exercise_draw_order(void) {
    // Q, K, V are consecutive np.random.randn draws, row-major, in that order
    int T = 4, dk = 3;
    LabExercise e;
    CHECK(lab_exercise_run(&e, 12345, T, dk, 0));
    NumpyRng r;
    numpy_seed(&r, 12345);
    const real *mats[3] = {e.Q, e.K, e.V};
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < T * dk; i++) CHECK(mats[m][i] == (real)numpy_randn(&r));
    // scores are the raw Q K^T
    for (int t = 0; t < T; t++)
        for (int u = 0; u < T; u++) {
            double s = 0;
            for (int i = 0; i < dk; i++) s += (double)e.Q[t * dk + i] * e.K[u * dk + i];
            CHECK_NEAR(e.scores[t * T + u], s, 1e-5);
        }
    lab_exercise_free(&e);
}

static void lab_exercise_causal(void) {
    LabExercise e;
    CHECK(lab_exercise_run(&e, 0, 5, 8, 1));
    for (int t = 0; t < 5; t++) {
        double ss = 0, su = 0;
        for (int u = 0; u < 5; u++) {
            if (u > t)
                CHECK(e.weights_scaled[t * 5 + u] == 0 && e.weights_unscaled[t * 5 + u] == 0);
            ss += e.weights_scaled[t * 5 + u];
            su += e.weights_unscaled[t * 5 + u];
        }
        CHECK_NEAR(ss, 1.0, TOL);
        CHECK_NEAR(su, 1.0, TOL);
    }
    CHECK_NEAR(e.rowmax_scaled[0], 1.0, 0);
    CHECK_NEAR(e.entropy_scaled[0], 0.0, 0);
    CHECK(e.stat_rows == 4);  // row 0 sees one key and is left out of the means
    // the last row sees every key: same as without the mask
    CHECK_NEAR(e.rowmax_scaled[4], 0.513327, TOL);
    CHECK_NEAR(e.rowmax_unscaled[4], 0.933617, TOL);
    lab_exercise_free(&e);
}

static void lab_exercise_rejects_sizes(void) {
    LabExercise e;
    CHECK(!lab_exercise_run(&e, 0, 0, 8, 0));
    CHECK(!lab_exercise_run(&e, 0, 5, 0, 0));
    CHECK(!lab_exercise_run(&e, 0, LAB_MAX_T + 1, 8, 0));
    CHECK(!lab_exercise_run(&e, 0, 5, LAB_MAX_DK + 1, 0));
    CHECK(lab_exercise_run(&e, 0, 1, 1, 1));  // T = 1: one key, weight 1
    CHECK_NEAR(e.weights_scaled[0], 1.0, 0);
    CHECK(e.stat_rows == 0);
    lab_exercise_free(&e);
}

// ---------------------------------------------------------------------------------------------
// the softmax Jacobian and its VJP

static void lab_softmax_vjp_matches_jacobian_and_fd(void) {
    static const real s[] = {2, 1, (real)0.1, -0.7, 0.3};
    static const real g[] = {0.5, -1, 2, 0.25, -0.3};
    int n = 5;
    real p[5], ds[5], J[25];
    double fd[5];
    lab_softmax_vjp(ds, p, s, g, n);
    lab_softmax_jacobian(J, p, n);
    lab_softmax_vjp_fd(fd, s, g, n, lab_softmax_fd_step());
    double psum = 0;
    for (int i = 0; i < n; i++) psum += p[i];
    CHECK_NEAR(psum, 1.0, TOL);
    double fd_tol = sizeof(real) == 8 ? 1e-8 : 5e-4;
    for (int j = 0; j < n; j++) {
        double jg = 0, rowsum = 0;
        for (int i = 0; i < n; i++) {
            jg += (double)J[i * n + j] * g[i];
            rowsum += J[j * n + i];
            CHECK(J[i * n + j] == J[j * n + i]);  // symmetric
        }
        CHECK_NEAR(ds[j], jg, TOL);
        CHECK_NEAR(rowsum, 0.0, TOL);
        CHECK_NEAR(ds[j], fd[j], fd_tol);
    }
    // default example: p = softmax(2, 1, 0.1) = 0.659001, 0.242433, 0.098566
    real p3[3], d3[3];
    static const real g3[] = {1, 0, 0};
    lab_softmax_vjp(d3, p3, s, g3, 3);
    CHECK_NEAR(p3[0], 0.659001, TOL);
    CHECK_NEAR(p3[1], 0.242433, TOL);
    CHECK_NEAR(p3[2], 0.098566, TOL);
    CHECK_NEAR(d3[0], p3[0] * (1 - p3[0]), TOL);  // the p(1-p) term
    // a uniform upstream gradient changes nothing: softmax outputs always sum to 1
    static const real ones[] = {1, 1, 1};
    lab_softmax_vjp(d3, p3, s, ones, 3);
    for (int i = 0; i < 3; i++) CHECK_NEAR(d3[i], 0.0, TOL);
}

static void lab_softmax_saturation(void) {
    static const real s[] = {2, 1, (real)0.1};
    static const real g[] = {1, 0, 0};
    static const double factors[] = {1, 2, 4, 8, 16, 32};
    LabSoftmaxScale prev;
    lab_softmax_scale_row(&prev, s, g, 3, 0.25);
    CHECK(prev.max_p < 0.5);
    for (int k = 0; k < 6; k++) {
        LabSoftmaxScale r;
        lab_softmax_scale_row(&r, s, g, 3, factors[k]);
        CHECK(r.max_p > prev.max_p);
        CHECK(r.entropy < prev.entropy);
        CHECK(r.jac_frob < prev.jac_frob);
        CHECK(r.vjp_norm < prev.vjp_norm);
        prev = r;
    }
    CHECK(prev.vjp_norm < 1e-6);  // saturated at factor 32: the gradient has vanished
    CHECK(prev.jac_frob < 1e-6);
}

// ---------------------------------------------------------------------------------------------
// the whole-model gradient check

// The tiny model of `./lab gradcheck` with the given init and scale ("sqrt" or "none").
static void tiny_model(GPT *m, int init, int sqrt_scale, int *x, int *y) {
    ModelDims d;
    gradcheck_tiny_dims(&d);
    int B = GRADCHECK_TINY_BATCH, T = d.block_size;
    real scale = sqrt_scale ? (real)(1.0 / sqrt((double)(d.n_embd / d.n_head))) : (real)1;
    gpt_build(m, &d, attention_causal(scale), B, T);
    Rng r;
    rng_seed(&r, 1337);
    gpt_init(m, init, &r);
    gradcheck_tokens(x, y, B, T, d.vocab_size, 42);
}

// Run the check and require every tensor to pass (none too small) below tol.
static void expect_pass_with(int init, int sqrt_scale, double tol, AttnMask mask, SoftmaxAxis axis,
                             int window) {
    GPT m;
    int x[64], y[64];
    tiny_model(&m, init, sqrt_scale, x, y);
    set_attention(
        &m, (AttnSetup){{m.attn.scale, mask, axis, window, NULL}, &attention_engine, MODEL_ENGINE});
    GradcheckRow *rows = calloc((size_t)m.n_tensors, sizeof *rows);
    int failed = gradcheck_model(&m, x, y, GRADCHECK_TINY_BATCH, m.dims.block_size, 0, 1, rows);
    CHECK(failed == 0);
    CHECK(m.n_tensors == 2 + 10 * m.dims.n_layer + 2);
    for (int i = 0; i < m.n_tensors; i++) {
        CHECK_MSG(rows[i].status == GRADCHECK_PASS && rows[i].rel_err < tol,
                  "%s: rel err %.3e, status %d", rows[i].name, rows[i].rel_err, rows[i].status);
        CHECK(rows[i].checked == rows[i].size);
        CHECK(rows[i].max_grad > 0);
    }
    free(rows);
    gpt_free(&m);
}

static void expect_pass(int init, int sqrt_scale, double tol) {
    expect_pass_with(init, sqrt_scale, tol, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 0);
}

// The mistakes' hand-written backward passes, through the whole model (the definition trains them).
static void gradcheck_model_mistakes(void) {
    double tol = sizeof(real) == 8 ? 1e-6 : 5e-2;
    expect_pass_with(INIT_FAN_IN, 1, tol, ATTN_MASK_ZERO, SOFTMAX_OVER_KEYS, 0);
    expect_pass_with(INIT_FAN_IN, 1, tol, ATTN_MASK_NONE, SOFTMAX_OVER_KEYS, 0);
    expect_pass_with(INIT_FAN_IN, 1, tol, ATTN_MASK_CAUSAL, SOFTMAX_OVER_QUERIES, 0);
}

// Sliding windows of 2 and 3 keys (block_size 6, so rows 2.. and 3.. lose their oldest keys),
// through the whole model: under fan_in in both builds, under gpt2 in float64; and over queries.
static void gradcheck_model_window(void) {
    double tol = sizeof(real) == 8 ? 1e-6 : 5e-2;
    expect_pass_with(INIT_FAN_IN, 1, tol, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 2);
    expect_pass_with(INIT_FAN_IN, 0, tol, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 3);
    expect_pass_with(INIT_FAN_IN, 1, tol, ATTN_MASK_CAUSAL, SOFTMAX_OVER_QUERIES, 2);
    if (sizeof(real) == 8)
        expect_pass_with(INIT_GPT2, 1, tol, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 2);
}

// QK-norm (LayerNorm and RMSNorm of each head's q and k, with their gains and biases) through
// the whole model, definition and engine: every tensor, the norms' included, against finite
// differences. Under fan_in only: under gpt2 a head's q and k rows (hd = 4) have a variance near
// the norm's eps, where the lab's finite-difference step (2e-3 in float64) is no longer small and
// the central difference itself is off by ~3e-5 (the definition's as much as the engine's).
static void expect_qk_pass(int init, QkNorm kind, const AttentionImpl *impl, double tol) {
    GPT m;
    ModelDims d;
    gradcheck_tiny_dims(&d);
    d.qk_norm = kind;
    int x[64], y[64];
    gpt_build(&m, &d, attention_causal((real)(1.0 / sqrt((double)(d.n_embd / d.n_head)))),
              GRADCHECK_TINY_BATCH, d.block_size);
    set_attention(&m, (AttnSetup){{m.attn.scale, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS, 0, NULL},
                                  impl,
                                  MODEL_ENGINE});
    Rng r;
    rng_seed(&r, 1337);
    gpt_init(&m, init, &r);
    // gains and biases away from 1 and 0, so that a gradient that ignored them would show
    for (int l = 0; l < d.n_layer; l++) {
        LayerParams *P = &m.p.layers[l];
        int hd = d.n_embd / d.n_head;
        for (int i = 0; i < hd; i++) {
            P->q_norm_w[i] = (real)(1 + 0.1 * i);
            P->k_norm_w[i] = (real)(1 - 0.05 * i);
            if (P->q_norm_b) {
                P->q_norm_b[i] = (real)(0.02 * i);
                P->k_norm_b[i] = (real)(-0.03 * i);
            }
        }
    }
    gradcheck_tokens(x, y, GRADCHECK_TINY_BATCH, d.block_size, d.vocab_size, 42);
    GradcheckRow *rows = calloc((size_t)m.n_tensors, sizeof *rows);
    int failed = gradcheck_model(&m, x, y, GRADCHECK_TINY_BATCH, m.dims.block_size, 0, 1, rows);
    CHECK(failed == 0);
    CHECK(m.n_tensors == 2 + (10 + (kind == QK_NORM_LAYERNORM ? 4 : 2)) * m.dims.n_layer + 2);
    int norms = 0;
    for (int i = 0; i < m.n_tensors; i++) {
        CHECK(rows[i].checked == rows[i].size);
        if (strstr(rows[i].name, "k_norm_b")) {
            // The keys' bias adds q . b to every score of a row, which the softmax cancels: its
            // gradient is exactly 0, so finite differences measure only rounding.
            CHECK_MSG(rows[i].status != GRADCHECK_FAIL &&
                          rows[i].max_grad < (sizeof(real) == 8 ? 1e-12 : 1e-5),
                      "%s: gradient %.3e, status %d (should vanish)", rows[i].name,
                      rows[i].max_grad, rows[i].status);
            norms++;
            continue;
        }
        CHECK_MSG(rows[i].status == GRADCHECK_PASS && rows[i].rel_err < tol,
                  "%s (qk_norm %d, %s): rel err %.3e, status %d", rows[i].name, kind, impl->name,
                  rows[i].rel_err, rows[i].status);
        norms += strstr(rows[i].name, "_norm_") != NULL;
    }
    CHECK(norms == (kind == QK_NORM_LAYERNORM ? 4 : 2) * m.dims.n_layer);
    free(rows);
    gpt_free(&m);
}
static void gradcheck_model_qk_norm(void) {
    double tol = sizeof(real) == 8 ? 1e-6 : 5e-2;
    expect_qk_pass(INIT_FAN_IN, QK_NORM_LAYERNORM, &attention_definition, tol);
    expect_qk_pass(INIT_FAN_IN, QK_NORM_RMSNORM, &attention_definition, tol);
    expect_qk_pass(INIT_FAN_IN, QK_NORM_LAYERNORM, &attention_engine, tol);
    expect_qk_pass(INIT_FAN_IN, QK_NORM_RMSNORM, &attention_engine, tol);
}

static void gradcheck_model_gpt2_sqrt(void) {
    if (sizeof(real) != 8) SKIP("the gpt2 init's wq/wk gradients (~1e-5) need the float64 build");
    expect_pass(INIT_GPT2, 1, 1e-6);
}
static void gradcheck_model_gpt2_none(void) {
    if (sizeof(real) != 8) SKIP("the gpt2 init's wq/wk gradients (~1e-5) need the float64 build");
    expect_pass(INIT_GPT2, 0, 1e-6);
}
static void gradcheck_model_fan_in_sqrt(void) {
    expect_pass(INIT_FAN_IN, 1, sizeof(real) == 8 ? 1e-6 : 5e-2);
}
static void gradcheck_model_fan_in_none(void) {
    expect_pass(INIT_FAN_IN, 0, sizeof(real) == 8 ? 1e-6 : 5e-2);
}

// With the "- rowsum(dP * P)" term dropped, wq and wk of every layer must fail clearly.
static void expect_broken_caught(int init) {
    GPT m;
    int x[64], y[64];
    tiny_model(&m, init, 1, x, y);
    GradcheckRow *rows = calloc((size_t)m.n_tensors, sizeof *rows);
    set_attention(&m, (AttnSetup){m.attn, &lab_broken_attention, MODEL_ENGINE});
    int failed = gradcheck_model(&m, x, y, GRADCHECK_TINY_BATCH, m.dims.block_size, 0, 1, rows);
    CHECK(failed > 0);
    for (int l = 0; l < m.dims.n_layer; l++) {
        const char *which[] = {"wq", "wk"};
        for (int k = 0; k < 2; k++) {
            char name[TENSOR_NAME_MAX];
            snprintf(name, sizeof name, "layer%d.%s", l, which[k]);
            int ti = gpt_find_tensor(&m, name);
            CHECK(ti >= 0);
            if (ti < 0) continue;
            CHECK_MSG(rows[ti].status == GRADCHECK_FAIL && rows[ti].rel_err > 0.2,
                      "%s: rel err %.3e, status %d", name, rows[ti].rel_err, rows[ti].status);
        }
    }
    // the value path does not go through the softmax backward: the last layer's wv is still right
    int tv = gpt_find_tensor(&m, "layer1.wv");
    CHECK(tv >= 0 && rows[tv].status == GRADCHECK_PASS);
    free(rows);
    gpt_free(&m);
}

static void gradcheck_model_catches_broken_backward(void) {
    expect_broken_caught(INIT_FAN_IN);
    if (sizeof(real) == 8) expect_broken_caught(INIT_GPT2);
}

static void gradcheck_model_restores_and_samples(void) {
    // a model above the tiny size, sampled: parameters come back bit for bit, the analytic
    // gradient is left in m->grads, and each tensor checks min(size, k) elements
    ModelDims d = {5, 8, 1, 2, 16, QK_NORM_NONE};
    GPT m;
    gpt_build(&m, &d, attention_causal((real)(1.0 / sqrt(8.0))), 2, 8);
    Rng r;
    rng_seed(&r, 7);
    gpt_init(&m, INIT_FAN_IN, &r);
    int x[16], y[16];
    gradcheck_tokens(x, y, 2, 8, 5, 3);
    real *before = malloc(m.n_params * sizeof(real));
    memcpy(before, m.params, m.n_params * sizeof(real));
    GradcheckRow *rows = calloc((size_t)m.n_tensors, sizeof *rows);
    int failed = gradcheck_model(&m, x, y, 2, 8, 5, 11, rows);
    CHECK(failed == 0);
    CHECK(memcmp(before, m.params, m.n_params * sizeof(real)) == 0);
    for (int i = 0; i < m.n_tensors; i++) {
        CHECK(rows[i].checked == (rows[i].size < 5 ? rows[i].size : 5));
        CHECK(rows[i].status == GRADCHECK_PASS);
    }
    // m->grads still holds the analytic gradient of the unperturbed parameters
    real *g = malloc(m.n_params * sizeof(real));
    memcpy(g, m.grads, m.n_params * sizeof(real));
    gpt_zero_grad(&m);
    gpt_forward(&m, x, y, 2, 8);
    gpt_backward(&m);
    CHECK(memcmp(g, m.grads, m.n_params * sizeof(real)) == 0);
    free(g);
    free(before);
    free(rows);
    gpt_free(&m);
}

// ---------------------------------------------------------------------------------------------
// the common mistakes

// The five cases of `lab mistakes` against the formulas evaluated in double: scores
// S = c Q Q^T, then each case's mask and normalisation.
static void lab_mistakes_match_formulas(void) {
    LabMistake c[LAB_MISTAKES];
    lab_mistakes(c);
    for (int k = 0; k < LAB_MISTAKES; k++) {
        double scale = c[k].spec.scale, S[9], P[9];
        for (int t = 0; t < 3; t++)
            for (int u = 0; u < 3; u++) {
                double dot =
                    LAB_T3_Q[t * 2] * LAB_T3_Q[u * 2] + LAB_T3_Q[t * 2 + 1] * LAB_T3_Q[u * 2 + 1];
                S[t * 3 + u] = u > t && c[k].spec.mask != ATTN_MASK_NONE
                                   ? (c[k].spec.mask == ATTN_MASK_ZERO ? 0 : -INFINITY)
                                   : scale * dot;
                CHECK_NEAR(c[k].scores_unmasked[t * 3 + u], scale * dot,
                           1e-6);  // what the mask replaced
            }
        for (int a = 0; a < 3; a++) {  // a row (softmax over keys) or a column (over queries)
            double z = 0;
            for (int b = 0; b < 3; b++)
                z += exp(c[k].spec.axis == SOFTMAX_OVER_KEYS ? S[a * 3 + b] : S[b * 3 + a]);
            for (int b = 0; b < 3; b++) {
                int idx = c[k].spec.axis == SOFTMAX_OVER_KEYS ? a * 3 + b : b * 3 + a;
                P[idx] = exp(S[idx]) / z;
            }
        }
        for (int i = 0; i < 9; i++) CHECK_NEAR(c[k].weights[i], P[i], 1e-6);
        for (int t = 0; t < 3; t++)
            for (int j = 0; j < 2; j++) {
                double o = 0;
                for (int u = 0; u < 3; u++) o += P[t * 3 + u] * LAB_T3_V[u * 2 + j];
                CHECK_NEAR(c[k].out[t * 2 + j], o, 1e-5);
            }
    }
    // the symptoms the command marks: only "mask with 0" and "no mask" put weight on the future
    // (no mask: the lesson's unmasked example, row 0 = 0.401112 0.197776 0.401112); only the
    // softmax over queries leaves rows that do not sum to 1 (its columns do)
    CHECK(!strcmp(c[2].name, "mask with 0") && c[2].future_weight[0] > 0.49 &&
          c[2].future_weight[2] == 0);
    CHECK(!strcmp(c[4].name, "no mask") && c[4].future_weight[0] > c[2].future_weight[0] &&
          c[4].future_weight[2] == 0);
    CHECK_NEAR(c[4].weights[1], 0.197776, 1e-6);
    CHECK(c[0].future_weight[0] == 0 && c[1].future_weight[0] == 0 && c[3].future_weight[0] == 0);
    CHECK(fabs(c[3].row_sums[2] - 1) > 0.5 && fabs(c[3].col_sums[0] - 1) < 1e-6);
    for (int k = 0; k < 3; k++)
        CHECK(fabs(c[k].row_sums[0] - 1) < 1e-6 && fabs(c[k].row_sums[2] - 1) < 1e-6);
}

// `lab mistakes --json` is valid JSON with the same numbers, so it can be checked against numpy.
static void lab_mistakes_json(void) {
    FILE *p = popen(sizeof(real) == 8 ? "./lab64 mistakes --json" : "./lab mistakes --json",
                    "r");  // this build's numbers
    CHECK(p != NULL);
    if (!p) return;
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    CHECK(pclose(p) == 0);
    cJSON *root = cJSON_Parse(buf);
    CHECK_MSG(root != NULL, "not JSON: %.200s", buf);
    if (!root) return;
    cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    CHECK(cJSON_IsArray(cases) && cJSON_GetArraySize(cases) == LAB_MISTAKES);
    LabMistake c[LAB_MISTAKES];
    lab_mistakes(c);
    for (int k = 0; k < LAB_MISTAKES && cJSON_IsArray(cases); k++) {
        cJSON *item = cJSON_GetArrayItem(cases, k),
              *w = cJSON_GetObjectItemCaseSensitive(item, "weights");
        CHECK(cJSON_IsArray(w) && cJSON_GetArraySize(w) == 3);
        for (int t = 0; t < 3 && cJSON_IsArray(w); t++)
            for (int u = 0; u < 3; u++)
                CHECK(cJSON_GetArrayItem(cJSON_GetArrayItem(w, t), u)->valuedouble ==
                      (double)c[k].weights[t * 3 + u]);
    }
    cJSON_Delete(root);
}

// ---------------------------------------------------------------------------------------------
// the online softmax

// Each block's m, l and o against their definitions over the keys seen so far, computed here in
// double: m = the largest score seen, l = sum exp(s_u - m), o = sum exp(s_u - m) V[u]; the factor
// exp(m_old - m_new); and the end (P, O, L = log-sum-exp) against the whole row's softmax. (The
// maxima are comparisons, not fmax: gcc 12 for aarch64 fails on an fmax reduction over floats
// converted to double.)
static void check_online(const LabOnline *o) {
    int T = o->T, d = o->dk;
    double tol = sizeof(real) == 8 ? 1e-12 : 2e-6;
    for (int t = 0; t < T; t++) {
        const real *s = o->S + (size_t)t * T;
        for (int j = 0; j < o->n_blocks; j++) {
            int seen = (j + 1) * o->block < T ? (j + 1) * o->block : T;
            double m = -INFINITY, l = 0.0, acc[LAB_ONLINE_MAX_DK] = {0};
            for (int u = 0; u < seen; u++) m = s[u] > m ? s[u] : m;
            for (int u = 0; u < seen; u++) {
                double e = exp((double)s[u] - m);
                l += e;
                for (int i = 0; i < d; i++) acc[i] += e * o->V[(size_t)u * d + i];
            }
            CHECK(o->m_new[j][t] == (real)m);  // a maximum is exact
            CHECK(j == 0 ? isinf(o->m_old[j][t]) && o->m_old[j][t] < 0
                         : o->m_old[j][t] == o->m_new[j - 1][t]);
            CHECK(o->l_old[j][t] == (j ? o->l_new[j - 1][t] : 0));
            CHECK_NEAR(o->rescale[j][t], j ? exp((double)o->m_old[j][t] - m) : 0.0, tol);
            CHECK_NEAR(o->l_new[j][t], l, tol * l);
            for (int i = 0; i < d; i++)
                CHECK_NEAR(o->o[j][(size_t)t * d + i], acc[i], tol * (1 + fabs(acc[i])) * 4);
        }
        double m = -INFINITY, l = 0.0;
        for (int u = 0; u < T; u++) m = s[u] > m ? s[u] : m;
        for (int u = 0; u < T; u++) l += exp((double)s[u] - m);
        CHECK_NEAR(o->L[t], m + log(l), tol * 4);
        for (int u = 0; u < T; u++)
            CHECK_NEAR(o->P_online[(size_t)t * T + u], exp((double)s[u] - m) / l, tol);
        for (int i = 0; i < d; i++) {
            double x = 0.0;
            for (int u = 0; u < T; u++) x += exp((double)s[u] - m) / l * o->V[(size_t)u * d + i];
            CHECK_NEAR(o->O_online[(size_t)t * d + i], x, tol * 8 * (1 + fabs(x)));
        }
    }
    CHECK(o->max_P_diff <= tol && o->max_O_diff <= tol * 8 * 10);
}

static void lab_online_softmax_blocks(void) {
    for (int block = 1; block <= LAB_ONLINE_MAX_T; block++) {
        LabOnline o[LAB_ONLINE_PROBLEMS];
        CHECK(lab_online_lesson(o, block));
        CHECK(o[0].T == 3 && o[0].dk == 2 && o[1].T == 5 && o[1].dk == 8);
        for (int k = 0; k < LAB_ONLINE_PROBLEMS; k++) {
            CHECK(o[k].n_blocks == (o[k].T + block - 1) / block);
            check_online(&o[k]);
        }
    }
    // the T = 3 example, blocks of 2: row 2 (q = [1,1]) scores 1/sqrt(2) twice in block 1, then
    // sqrt(2) in block 2, which rescales its l = 2 by exp(-1/sqrt(2)) before adding exp(0) = 1
    LabOnline o[LAB_ONLINE_PROBLEMS];
    CHECK(lab_online_lesson(o, 2));
    CHECK_NEAR(o[0].l_new[0][2], 2.0, TOL);
    CHECK_NEAR(o[0].rescale[1][2], exp(-1.0 / sqrt(2.0)), TOL);
    CHECK_NEAR(o[0].l_new[1][2], 2.0 * exp(-1.0 / sqrt(2.0)) + 1.0, TOL);
    CHECK(o[0].rescale[1][0] == 1 &&
          o[0].rescale[1][1] == 1);  // rows 0 and 1 already saw their maximum
    // without the rescaling row 2 keeps l = 2 + 1: its weights sum to (2 exp(-1/sqrt(2)) + 1) / 3,
    // the rows whose maximum never grew stay right
    CHECK_NEAR(o[0].l_plain[1][2], 3.0, TOL);
    CHECK_NEAR(o[0].plain_rowsum[2], (2.0 * exp(-1.0 / sqrt(2.0)) + 1.0) / 3.0, TOL);
    CHECK_NEAR(o[0].plain_rowsum[0], 1.0, TOL);
    CHECK(o[1].max_O_plain_diff > 0.1);  // the exercise's outputs go wrong too
    // the exercise's draw is `./lab exercise`'s
    LabExercise e;
    CHECK(lab_exercise_run(&e, 0, 5, 8, 0));
    CHECK(memcmp(e.Q, o[1].Q, 40 * sizeof(real)) == 0 &&
          memcmp(e.V, o[1].V, 40 * sizeof(real)) == 0);
    for (int i = 0; i < 25; i++) CHECK_NEAR(o[1].P[i], e.weights_scaled[i], TOL);
    lab_exercise_free(&e);
    // sizes out of range are refused
    LabOnline bad;
    CHECK(!lab_online_softmax(&bad, "x", EX_Q, EX_Q, EX_V, 3, 2, 1, 0));
    CHECK(!lab_online_softmax(&bad, "x", EX_Q, EX_Q, EX_V, LAB_ONLINE_MAX_T + 1, 2, 1, 2));
}

const TestCase tests_lab[] = {
    {"gradcheck_model_mistakes", gradcheck_model_mistakes},
    {"gradcheck_model_window", gradcheck_model_window},
    {"gradcheck_model_qk_norm", gradcheck_model_qk_norm},
    {"lab_mistakes_match_formulas", lab_mistakes_match_formulas},
    {"lab_mistakes_json", lab_mistakes_json},
    {"lab_online_softmax_blocks", lab_online_softmax_blocks},
    {"lab_example_t3_scaled", lab_example_t3_scaled},
    {"lab_example_t3_unscaled_more_peaked", lab_example_t3_unscaled_more_peaked},
    {"lab_example_single_query", lab_example_single_query},
    {"lab_example_causal_mask", lab_example_causal_mask},
    {"lab_exercise_seed0", lab_exercise_seed0},
    {"lab_exercise_draw_order", lab_exercise_draw_order},
    {"lab_exercise_causal", lab_exercise_causal},
    {"lab_exercise_rejects_sizes", lab_exercise_rejects_sizes},
    {"lab_softmax_vjp_matches_jacobian_and_fd", lab_softmax_vjp_matches_jacobian_and_fd},
    {"lab_softmax_saturation", lab_softmax_saturation},
    {"gradcheck_model_gpt2_sqrt", gradcheck_model_gpt2_sqrt},
    {"gradcheck_model_gpt2_none", gradcheck_model_gpt2_none},
    {"gradcheck_model_fan_in_sqrt", gradcheck_model_fan_in_sqrt},
    {"gradcheck_model_fan_in_none", gradcheck_model_fan_in_none},
    {"gradcheck_model_catches_broken_backward", gradcheck_model_catches_broken_backward},
    {"gradcheck_model_restores_and_samples", gradcheck_model_restores_and_samples},
    {NULL, NULL},
};
