// run/optimizer.h: the parameter update of a training step (run/optimizer.c).
#ifndef RUN_OPTIMIZER_H
#define RUN_OPTIMIZER_H

#include "model.h"

// Global L2 norm of the gradients, summed in a fixed order (deterministic).
double gpt_grad_norm(const GPT *m);
// Scale all gradients (clipping).
void gpt_scale_grads(GPT *m, real factor);
// One AdamW step (t is 1-based for bias correction); weight decay only on 2-D tensors.
void gpt_adamw_update(GPT *m, double lr, double beta1, double beta2, double eps,
                      double weight_decay, long t);
// The learning rate of step (0-based) in nanoGPT's schedule: linear warmup over warmup steps,
// then cosine decay from lr to min_lr at step decay, min_lr after it.
double lr_schedule(double lr, double min_lr, long warmup, long decay, long step);
// True when every parameter and moment is finite.
int gpt_all_finite(const GPT *m);

#endif
