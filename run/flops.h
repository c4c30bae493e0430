// run/flops.h: the FLOP count of a training step (run/flops.c).
#ifndef RUN_FLOPS_H
#define RUN_FLOPS_H

#include "model.h"  // GPT: the dimensions and the window the counts follow

// FLOPs of one training step (forward + backward) for B,T: 6 * params * tokens plus causal
// attention, as documented in docs/PERFORMANCE.md.
double gpt_flops_per_step(const GPT *m, int B, int T);
// Its terms for B rows of T (B may be a share): the weights' products of the forward, 2 FLOPs per
// weight and token (the backward's are twice that), and attention: 6 L B C (T^2 - (T - W)^2), the
// pairs of a query and a key it sees under the model's window of W keys (W = T without one).
double gpt_product_flops(const GPT *m, double B, int T);
double gpt_attention_flops(const GPT *m, double B, int T);

#endif
