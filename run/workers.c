// run/workers.c: a training batch split by rows into shares: one worker per share, each a GPT
// that shares the model's parameters but owns its gradients and activations, runs the whole
// network on its rows; their losses and gradients are combined, weighted by rows, in share order.
// The shares are fixed when the workers are made (one per configured thread); the threads that
// run take them one at a time, whichever is free next, so a thread that the machine keeps
// waiting does not hold the others up, and the result does not depend on how many threads run
// them or which thread runs which share.
#include "run/workers.h"

#include <math.h>
#include <stddef.h>

#include "base/common.h"  // thread_max, xcalloc

void gpt_enable_batch_threads(GPT *m, int n_threads, int B, int T) {
    if (n_threads > B) n_threads = B;
    if (n_threads > MAX_BATCH_SHARES) n_threads = MAX_BATCH_SHARES;
    if (n_threads < 2 || m->n_workers) return;
    m->workers = xcalloc((size_t)n_threads, sizeof(GPT), "batch workers");
    m->n_workers = n_threads;
    int rows = (B + n_threads - 1) / n_threads;  // the largest share
    for (int i = 0; i < n_threads; i++) gpt_build_worker(&m->workers[i], m, rows, T);
}

// First row of share k when B rows are split into n shares.
static int share_start(int B, int n, int k) { return (int)((long)B * k / n); }

// Shares of a batch of B rows: min(workers, B) when that is at least two, else 0 (the model's
// own pass).
static int batch_shares(const GPT *m, int B) {
    int n = m->n_workers < B ? m->n_workers : B;
    return n < 2 ? 0 : n;
}

// Threads that run n shares: as many as a parallel region would use now, at most n.
static int share_threads(int n) {
    int t = thread_max();
    return t < n ? t : n;
}

// The next unit of work (a share, a chunk) for the calling thread: units are handed out in
// order, one each, to whichever thread asks first.
static int take_next(int *next) {
    int k;
#ifdef _OPENMP
#pragma omp atomic capture
#endif
    k = (*next)++;
    return k;
}

// Share k (rows [B*k/n, B*(k+1)/n)) runs on worker k, on whichever thread takes it. The layers'
// own parallel regions, nested in this one, run on one thread each.
double gpt_batch_forward(GPT *m, const int *x, const int *y, int B, int T) {
    int n = batch_shares(m, B);
    if (!n) return gpt_forward(m, x, y, B, T);
    m->split_B = B;
    double share_loss[MAX_BATCH_SHARES];
    int next = 0;
#pragma omp parallel num_threads(share_threads(n))
    for (int k; (k = take_next(&next)) < n;) {
        int r0 = share_start(B, n, k), r1 = share_start(B, n, k + 1);
        share_loss[k] =
            gpt_forward(&m->workers[k], x + (size_t)r0 * T, y + (size_t)r0 * T, r1 - r0, T);
    }
    // loss = sum over shares of (rows / B) * share loss, in share order
    double loss = 0.0;
    for (int k = 0; k < n; k++)
        loss += share_loss[k] * (share_start(B, n, k + 1) - share_start(B, n, k)) / B;
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

// The gradient combine's unit: parameters [c * COMBINE_CHUNK, (c + 1) * COMBINE_CHUNK), taken
// like the shares (a chunk's sums do not depend on who computes it).
#define COMBINE_CHUNK 16384

void gpt_batch_backward(GPT *m) {
    int B = m->split_B, n = B ? batch_shares(m, B) : 0;
    if (!n) {
        gpt_backward(m);
        return;
    }
    size_t P = m->n_params;
    int chunks = (int)((P + COMBINE_CHUNK - 1) / COMBINE_CHUNK), next_share = 0, next_chunk = 0;
    real f[MAX_BATCH_SHARES];
    for (int k = 0; k < n; k++)
        f[k] = (real)((double)(share_start(B, n, k + 1) - share_start(B, n, k)) / B);
#pragma omp parallel num_threads(share_threads(n))
    {
        for (int k; (k = take_next(&next_share)) < n;) gpt_backward(&m->workers[k]);
#ifdef _OPENMP
#pragma omp barrier
#endif
        // grads = sum over shares of (rows / B) * share grads, summed in share order, chunk by
        // chunk
        real *restrict g = m->grads;
        for (int c; (c = take_next(&next_chunk)) < chunks;) {
            size_t lo = (size_t)c * COMBINE_CHUNK,
                   hi = lo + COMBINE_CHUNK < P ? lo + COMBINE_CHUNK : P;
            for (int k = 0; k < n; k++) {
                const real *restrict wg = m->workers[k].grads;
                real fk = f[k];
                if (k == 0)
                    for (size_t i = lo; i < hi; i++) g[i] = fk * wg[i];
                else
                    for (size_t i = lo; i < hi; i++) g[i] += fk * wg[i];
            }
        }
    }
}
