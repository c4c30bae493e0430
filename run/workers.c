// run/workers.c: a training batch split by rows between threads: one worker per thread, each a
// GPT that shares the model's parameters but owns its gradients and activations, runs the whole
// network on its rows; their losses and gradients are combined, weighted by rows, in a fixed order.
#include "run/workers.h"

#include <math.h>
#include <stddef.h>

#include "base/common.h"  // thread_max, thread_index, thread_count, xcalloc

void gpt_enable_batch_threads(GPT *m, int n_threads, int B, int T) {
    if (n_threads > B) n_threads = B;
    if (n_threads < 2 || m->n_workers) return;
    m->workers = xcalloc((size_t)n_threads, sizeof(GPT), "batch workers");
    m->n_workers = n_threads;
    int rows = (B + n_threads - 1) / n_threads;  // the largest share
    for (int i = 0; i < n_threads; i++) gpt_build_worker(&m->workers[i], m, rows, T);
}

// First row of worker k's share when B rows are split between n workers.
static int share_start(int B, int n, int k) { return (int)((long)B * k / n); }

// Workers that share a batch of B rows: min(workers, B), when that is at least two and there are
// as many threads; else 0 (the model's own pass).
static int split_workers(const GPT *m, int B) {
    int n = m->n_workers < B ? m->n_workers : B;
    if (n < 2 || thread_max() < n) return 0;
    return n < 64 ? n : 64;
}

// Worker k takes rows [B*k/n, B*(k+1)/n); thread t of the region runs workers t, t + nth, ... (one
// each unless the runtime gave fewer threads than asked). The layers' own parallel regions,
// nested in this one, run on one thread each.
double gpt_batch_forward(GPT *m, const int *x, const int *y, int B, int T) {
    int n = split_workers(m, B);
    if (!n) return gpt_forward(m, x, y, B, T);
    m->split_B = B;
    double share_loss[64];
#pragma omp parallel num_threads(n)
    {
        int t = thread_index(), nth = thread_count();
        for (int k = t; k < n; k += nth) {
            int r0 = share_start(B, n, k), r1 = share_start(B, n, k + 1);
            share_loss[k] = gpt_forward(&m->workers[k], x + (size_t)r0 * T, y + (size_t)r0 * T, r1 - r0, T);
        }
    }
    // loss = sum over workers of (rows / B) * worker loss, in worker order
    double loss = 0.0;
    for (int k = 0; k < n; k++) loss += share_loss[k] * (share_start(B, n, k + 1) - share_start(B, n, k)) / B;
    // the logits' statistics likewise, and the largest logit of all
    m->lse_mean = m->lse_sq_mean = 0.0;
    m->max_logit = -INFINITY;
    for (int k = 0; k < n; k++) {
        double f = (double)(share_start(B, n, k + 1) - share_start(B, n, k)) / B;
        m->lse_mean += f * m->workers[k].lse_mean;
        m->lse_sq_mean += f * m->workers[k].lse_sq_mean;
        if (m->workers[k].max_logit > m->max_logit) m->max_logit = m->workers[k].max_logit;
    }
    return loss;
}

void gpt_batch_backward(GPT *m) {
    int B = m->split_B, n = B ? split_workers(m, B) : 0;
    if (!n) {
        gpt_backward(m);
        return;
    }
#pragma omp parallel num_threads(n)
    {
        int t = thread_index(), nth = thread_count();
        for (int k = t; k < n; k += nth) gpt_backward(&m->workers[k]);
#ifdef _OPENMP
#pragma omp barrier
#endif
        // grads = sum over workers of (rows / B) * worker grads, summed in worker order; each
        // thread combines its own slice of the parameters
        size_t P = m->n_params, lo = P * (size_t)t / (size_t)nth, hi = P * (size_t)(t + 1) / (size_t)nth;
        real *restrict g = m->grads;
        for (int k = 0; k < n; k++) {
            real f = (real)((double)(share_start(B, n, k + 1) - share_start(B, n, k)) / B);
            const real *restrict wg = m->workers[k].grads;
            if (k == 0)
                for (size_t i = lo; i < hi; i++) g[i] = f * wg[i];
            else
                for (size_t i = lo; i < hi; i++) g[i] += f * wg[i];
        }
    }
}
