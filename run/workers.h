// run/workers.h: a training batch split by rows between threads (run/workers.c).
#ifndef RUN_WORKERS_H
#define RUN_WORKERS_H

#include "model.h"  // GPT: the model and its workers

// Give the model n_threads batch workers (none when n_threads < 2), each with room for its
// share of a batch of B rows; gpt_batch_forward then splits batches between them.
void gpt_enable_batch_threads(GPT *m, int n_threads, int B, int T);
// A batch's forward with targets, split by rows between the workers: each thread runs the whole
// network on its rows (no synchronisation inside the pass); returns the mean loss, the workers'
// losses weighted by rows in a fixed order. Without workers, gpt_forward.
double gpt_batch_forward(GPT *m, const int *x, const int *y, int B, int T);
// Its backward: each worker's on its rows, then their gradients combined, weighted by rows, in a
// fixed order into m->grads, the gradient of the mean loss (deterministic for a given thread
// count, equal to the one-thread result up to float rounding). Without workers, gpt_backward.
void gpt_batch_backward(GPT *m);

#endif
