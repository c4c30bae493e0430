// run/optimizer.c: a training step's update of the parameters: the gradient's global norm (for
// clipping), scaling the gradients, AdamW, and the check that the parameters and moments are
// finite (the divergence guard's).
#include "run/optimizer.h"

#include <math.h>

#include "kernels/lanesum.h"  // row_sum_sq_dev: squares summed in fixed lanes

#define GRAD_NORM_CHUNK 16384  // fixed chunking makes the norm independent of the thread count

double gpt_grad_norm(const GPT *m) {
    size_t n = m->n_params;
    long n_chunks = (long)((n + GRAD_NORM_CHUNK - 1) / GRAD_NORM_CHUNK);
    double total = 0.0;
    // partial sums per fixed chunk, combined in chunk order: the same bits for any thread count
    double partial[256];
    for (long base = 0; base < n_chunks; base += 256) {
        long cnt = n_chunks - base < 256 ? n_chunks - base : 256;
#pragma omp parallel for schedule(static) if (par_worth((double)n_chunks * GRAD_NORM_CHUNK))
        for (long c = 0; c < cnt; c++) {
            size_t lo = (size_t)(base + c) * GRAD_NORM_CHUNK;
            size_t hi = lo + GRAD_NORM_CHUNK < n ? lo + GRAD_NORM_CHUNK : n;
            // squares (deviations from 0) in LayerNorm's fixed lanes, not one chain of dependent
            // adds
            partial[c] = row_sum_sq_dev(m->grads + lo, 0.0, (int)(hi - lo));
        }
        for (long c = 0; c < cnt; c++) total += partial[c];
    }
    return sqrt(total);
}

void gpt_scale_grads(GPT *m, real factor) {
    real *g = m->grads;
    size_t n = m->n_params;
#pragma omp parallel for schedule(static) if (par_worth((double)n * 2))
    for (size_t i = 0; i < n; i++) g[i] *= factor;
}

void gpt_adamw_update(GPT *m, double lr, double beta1, double beta2, double eps,
                      double weight_decay, long t) {
    real b1 = (real)beta1, b2 = (real)beta2;
    real bc1 = (real)(1.0 - pow(beta1, (double)t)), bc2 = (real)(1.0 - pow(beta2, (double)t));
    real lr_r = (real)lr, eps_r = (real)eps;
#pragma omp parallel if (par_worth((double)m->n_params * 8))
    for (int ti = 0; ti < m->n_tensors; ti++) {
        const TensorInfo *ten = &m->tensors[ti];
        // decoupled weight decay on matrices only; LayerNorm gains and biases are not decayed
        real wd = ten->ndim == 2 ? (real)weight_decay : 0;
        real *restrict p = m->params + ten->offset;
        const real *restrict g = m->grads + ten->offset;
        real *restrict mm = m->adam_m + ten->offset;
        real *restrict vv = m->adam_v + ten->offset;
        size_t n = ten->size;
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < n; i++) {
            real gi = g[i];
            real mi = b1 * mm[i] + (1 - b1) * gi;
            real vi = b2 * vv[i] + (1 - b2) * gi * gi;
            mm[i] = mi;
            vv[i] = vi;
            real mhat = mi / bc1, vhat = vi / bc2;
            p[i] -= lr_r * (mhat / (real_sqrt(vhat) + eps_r) + wd * p[i]);
        }
    }
}

int gpt_all_finite(const GPT *m) {
    const real *arrays[3] = {m->params, m->adam_m, m->adam_v};
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < m->n_params; i++)
            if (!isfinite(arrays[a][i])) return 0;
    return 1;
}

double lr_schedule(double lr, double min_lr, long warmup, long decay, long step) {
    if (step < warmup) return lr * (double)(step + 1) / (double)(warmup + 1);
    if (step >= decay) return min_lr;
    double ratio = (double)(step - warmup) / (double)(decay - warmup);
    double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * ratio));
    return min_lr + coeff * (lr - min_lr);
}

long train_decay_horizon(const Config *c) {
    return c->lr_decay_steps > 0 ? c->lr_decay_steps : c->max_steps;
}

void train_fix_decay_horizon(Config *c) { c->lr_decay_steps = (int)train_decay_horizon(c); }

double train_lr(const Config *c, long step) {
    return lr_schedule(c->lr, c->min_lr, c->warmup_steps, train_decay_horizon(c), step);
}

const char *train_update(GPT *m, const Config *c, double loss, double lr, long updates, int spike,
                         double *grad_norm) {
    *grad_norm = NAN;
    if (!isfinite(loss)) return "non-finite loss";
    *grad_norm = gpt_grad_norm(m);
    if (!isfinite(*grad_norm)) return "non-finite gradient";
    if (spike) return "loss spike";
    // clipping: the gradients scaled down to norm train.grad_clip when their norm is above it
    if (c->grad_clip > 0 && *grad_norm > c->grad_clip)
        gpt_scale_grads(m, (real)(c->grad_clip / *grad_norm));
    gpt_adamw_update(m, lr, c->beta1, c->beta2, c->eps, c->weight_decay, updates);
    return NULL;
}
