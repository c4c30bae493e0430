// run/workers.h: a training batch split by rows into shares between threads (run/workers.c).
#ifndef RUN_WORKERS_H
#define RUN_WORKERS_H

#include "model.h"  // GPT: the model and its workers

// The most shares a batch is split into.
#define MAX_BATCH_SHARES 64

// Give the model n_threads batch workers (none when n_threads < 2), each with room for its
// share of a batch of B rows; gpt_batch_forward then splits batches into that many shares.
void gpt_enable_batch_threads(GPT *m, int n_threads, int B, int T);
// A batch's forward with targets, split by rows into the workers' shares, which the threads of
// the moment (thread_max(), at most one per share) take one at a time: each runs the whole
// network on a share's rows (no synchronisation inside the pass); returns the mean loss, the
// shares' losses weighted by rows in share order. Without workers, gpt_forward.
double gpt_batch_forward(GPT *m, const int *x, const int *y, int B, int T);
// Its backward: each share's on its rows, then their gradients combined, weighted by rows, in
// share order into m->grads, the gradient of the mean loss (equal to the one-thread result up to
// float rounding; the same bits for any number of threads running the shares, so the count may
// change between steps). Without workers, gpt_backward.
void gpt_batch_backward(GPT *m);

#endif
