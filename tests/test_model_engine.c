// tests/test_model_engine.c: the engine (kernels/model_engine.c) proven equal to the definition
// (model.c), as tests/test_attention.c proves the attention pair: the same parameters and batch
// through both, on many shapes (depth, heads, widths across the GEMM's tiles and depth blocks, a
// batch below the capacity, QK-norm of both kinds, a window, the mistakes, the z-loss), and the
// loss, the probabilities, the logits' statistics and every parameter's gradient compared. In the
// float64 build (tests/run_tests64) the two agree to float64 rounding; in float32 to float32's.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "run/workers.h"
#include "test.h"
#include "test_numeric.h"

// the largest |a - b| over a tensor, relative to the largest |b| (or to floor when that is less:
// a gradient that is zero in exact arithmetic, k_norm_b's, is float noise in both)
static double rel_diff(const real *a, const real *b, size_t n, double floor) {
    double d = 0, scale = floor;
    for (size_t i = 0; i < n; i++) {
        if (fabs((double)a[i] - b[i]) > d) d = fabs((double)a[i] - b[i]);
        if (fabs((double)b[i]) > scale) scale = fabs((double)b[i]);
    }
    return d / scale;
}

#define TOL (IS_F64 ? 1e-10 : 2e-4)

typedef struct {
    int V, T_max, L, NH, C, B, T;
    QkNorm qk_norm;
    int window;
    AttnMask mask;
    SoftmaxAxis axis;
    double z_loss;
    int row;      // >= 0: the backward of that row's loss alone (gpt_backward_row)
    int workers;  // the engine's batch split between this many workers (run/workers.c)
} Shape;

// Build the pair, both with the same parameters; returns the batch (x, y) drawn for it.
static void build_pair(GPT m[2], const Shape *s, int *x, int *y, uint64_t seed) {
    ModelDims d = {s->V, s->T_max, s->L, s->NH, s->C, s->qk_norm};
    AttnSpec spec = {(real)(1.0 / sqrt((double)s->C / s->NH)), s->mask, s->axis, s->window, NULL};
    for (int i = 0; i < 2; i++)
        gpt_build(&m[i], &d,
                  (AttnSetup){spec, &attention_engine, i ? MODEL_DEFINITION : MODEL_ENGINE}, s->B,
                  s->T_max);
    Rng rng;
    rng_seed(&rng, seed);
    gpt_init(&m[0], INIT_FAN_IN, &rng);
    // QK-norm's gains and biases start at 1 and 0: move them so their gradients are not special
    for (size_t i = 0; i < m[0].n_params; i++) m[0].params[i] += (real)(0.05 * rng_normal(&rng));
    memcpy(m[1].params, m[0].params, m[0].n_params * sizeof(real));
    for (int i = 0; i < s->B * s->T; i++) {
        x[i] = (int)rng_below(&rng, (uint64_t)s->V);
        y[i] = (int)rng_below(&rng, (uint64_t)s->V);
    }
    for (int i = 0; i < 2; i++) gpt_set_z_loss(&m[i], s->z_loss);
    if (s->workers) gpt_enable_batch_threads(&m[0], s->workers, s->B, s->T_max);
}

static void check_shape(const Shape *s, uint64_t seed) {
    GPT m[2];
    int *x = malloc(sizeof(int) * (size_t)s->B * s->T),
        *y = malloc(sizeof(int) * (size_t)s->B * s->T);
    build_pair(m, s, x, y, seed);
    double loss[2];
    for (int i = 0; i < 2; i++) {
        loss[i] = gpt_batch_forward(&m[i], x, y, s->B, s->T);
        if (s->row >= 0)
            gpt_backward_row(&m[i], s->row);
        else
            gpt_batch_backward(&m[i]);
    }
    char what[160];
    snprintf(
        what, sizeof what,
        "V %d L %d NH %d C %d B %d T %d (of %d) qk_norm %d window %d mask %d axis %d z %g row %d "
        "workers %d",
        s->V, s->L, s->NH, s->C, s->B, s->T, s->T_max, s->qk_norm, s->window, s->mask, s->axis,
        s->z_loss, s->row, s->workers);
    CHECK_MSG(fabs(loss[0] - loss[1]) <= TOL * loss[1], "%s: loss %.9g (engine) against %.9g", what,
              loss[0], loss[1]);
    CHECK_MSG(fabs(m[0].lse_mean - m[1].lse_mean) <= TOL * fabs(m[1].lse_mean) &&
                  fabs(m[0].lse_sq_mean - m[1].lse_sq_mean) <= TOL * m[1].lse_sq_mean &&
                  fabs(m[0].max_logit - m[1].max_logit) <= TOL * (1 + fabs(m[1].max_logit)),
              "%s: the logits' statistics differ", what);
    if (!s->workers) {  // the probabilities (a split batch leaves them in the workers)
        size_t n = (size_t)s->B * s->T * s->V;
        double e = rel_diff(m[0].acts.logits, m[1].acts.logits, n, 1e-30);
        CHECK_MSG(e <= TOL, "%s: the probabilities differ by %.3g", what, e);
    }
    double gmax = 0;
    // a compare, not fmax: aarch64 gcc 12 stops with an internal error vectorising fmax's reduction
    for (size_t i = 0; i < m[1].n_params; i++)
        if (fabs((double)m[1].grads[i]) > gmax) gmax = fabs((double)m[1].grads[i]);
    CHECK_MSG(gmax > 0, "%s: no gradient", what);
    for (int t = 0; t < m[1].n_tensors; t++) {
        const TensorInfo *ti = &m[1].tensors[t];
        double e =
            rel_diff(m[0].grads + ti->offset, m[1].grads + ti->offset, ti->size, 1e-3 * gmax);
        CHECK_MSG(e <= TOL, "%s: the gradient of %s differs by %.3g", what, ti->name, e);
    }
    gpt_free(&m[0]);
    gpt_free(&m[1]);
    free(x);
    free(y);
}

static void test_engine_equals_definition(void) {
    const AttnMask CA = ATTN_MASK_CAUSAL;
    const SoftmaxAxis K = SOFTMAX_OVER_KEYS;
    const Shape shapes[] = {
        // V  Tmax L NH  C  B  T  qk_norm             window mask axis z     row workers
        {11, 8, 1, 1, 4, 1, 8, QK_NORM_NONE, 0, CA, K, 0, -1, 0},
        {13, 16, 2, 2, 8, 3, 16, QK_NORM_NONE, 0, CA, K, 0, -1, 0},
        {17, 12, 2, 4, 16, 2, 9, QK_NORM_LAYERNORM, 0, CA, K, 0, -1, 0},  // T below the capacity
        {9, 16, 3, 2, 12, 2, 16, QK_NORM_RMSNORM, 5, CA, K, 0, -1, 0},
        {29, 20, 1, 3, 24, 4, 20, QK_NORM_NONE, 7, CA, K, 1e-2, -1, 0},
        {7, 10, 2, 2, 8, 2, 10, QK_NORM_NONE, 0, ATTN_MASK_ZERO, K, 0, -1, 0},
        {7, 10, 2, 2, 8, 2, 10, QK_NORM_LAYERNORM, 0, CA, SOFTMAX_OVER_QUERIES, 0, -1, 0},
        {65, 40, 2, 4, 80, 2, 33, QK_NORM_LAYERNORM, 0, CA, K, 0, -1,
         0},                                                          // 4C = 320: two depth blocks
        {23, 12, 2, 2, 16, 3, 12, QK_NORM_NONE, 0, CA, K, 0, 17, 0},  // one row's loss alone
        {19, 12, 2, 2, 16, 5, 12, QK_NORM_RMSNORM, 3, CA, K, 1e-3, -1, 3},  // the batch split
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_shape(&shapes[i], 100 + i);
}

// The definition is what the engine is checked against: its own gradient against central
// differences of its loss, through the whole model (QK-norm and the z-loss included).
typedef struct {
    GPT *m;
    const int *x, *y;
    int B, T;
} LossCtx;
static double objective(void *vc) {
    LossCtx *c = vc;
    double ce = gpt_forward(c->m, c->x, c->y, c->B, c->T);
    return ce + c->m->z_loss * c->m->lse_sq_mean;
}
static void gradcheck_definition_model(void) {
    GPT m[2];
    Shape s = {7,   6,  2, 2, 8, 2, 6, QK_NORM_LAYERNORM, 4, ATTN_MASK_CAUSAL, SOFTMAX_OVER_KEYS,
               0.1, -1, 0};
    int x[12], y[12];
    build_pair(m, &s, x, y, 7);
    LossCtx c = {&m[1], x, y, s.B, s.T};
    objective(&c);
    gpt_backward(&m[1]);
    real *g = malloc(m[1].n_params * sizeof(real));
    memcpy(g, m[1].grads, m[1].n_params * sizeof(real));
    // every parameter in float64; in float32 (slower per pass, looser) the first 400: the
    // embeddings and the first layer's attention
    size_t n = IS_F64 || m[1].n_params < 400 ? m[1].n_params : 400;
    check_grad(objective, &c, m[1].params, g, n, "the definition's gradient of the whole model");
    free(g);
    gpt_free(&m[0]);
    gpt_free(&m[1]);
}

const TestCase tests_model_engine[] = {
    {"model_engine_equals_definition", test_engine_equals_definition},
    {"gradcheck_model_definition", gradcheck_definition_model},
    {NULL, NULL},
};
