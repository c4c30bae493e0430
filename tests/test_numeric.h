// tests/test_numeric.h: helpers of the numeric tests: random arrays, and gradient checks by
// central differences of a scalar function of some arrays.
#ifndef TEST_NUMERIC_H
#define TEST_NUMERIC_H

#include <math.h>
#include <stdlib.h>

#include "attention.h"
#include "base/common.h"
#include "base/rng.h"
#include "test.h"

#define IS_F64  (sizeof(real) == 8)
#define FD_STEP (IS_F64 ? 1e-6 : 1e-2)
#define FD_TOL  (IS_F64 ? 1e-6 : 3e-2)

static inline real *randn_array(size_t n, Rng *rng, double std) {
    real *a = malloc(n * sizeof(real));
    for (size_t i = 0; i < n; i++) a[i] = (real)(std * rng_normal(rng));
    return a;
}

static inline real *zeros(size_t n) { return calloc(n, sizeof(real)); }

// what attention_forward and attention_backward need: their scratch for every thread
static inline real *attn_scratch(int T, int hd) {
    return zeros(attention_scratch_size(T, hd) * (size_t)thread_max());
}

static inline double dot_r(const real *a, const real *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

// Error of an analytic gradient against the numerical one, relative to the gradient's scale:
// max_i |a_i - n_i| / max(max_i |n_i|, 1e-8).
static inline double grad_error(const real *analytic, const double *numeric, size_t n) {
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

static inline void numeric_grad(LossFn f, void *ctx, real *x, size_t n, double *out) {
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

static inline double check_grad(LossFn f, void *ctx, real *x, const real *analytic, size_t n,
                                const char *what) {
    double *num = malloc(n * sizeof(double));
    numeric_grad(f, ctx, x, n, num);
    double err = grad_error(analytic, num, n);
    CHECK_MSG(err < FD_TOL, "%s: relative error %.3g (tolerance %.1g)", what, err, FD_TOL);
    free(num);
    return err;
}

#endif
