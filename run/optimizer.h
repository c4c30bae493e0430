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
// The decay horizon of c's schedule: train.lr_decay_steps, or train.max_steps when that is 0.
long train_decay_horizon(const Config *c);
// The horizon fixed when a run starts (./train, the page, each run of a sweep):
// train.lr_decay_steps 0 becomes the number, which the checkpoint's config keeps, so a resume that
// extends max_steps keeps the schedule (beyond the horizon lr stays at min_lr) unless it sets
// lr_decay_steps itself.
void train_fix_decay_horizon(Config *c);
// The learning rate of step (0-based) under c's schedule (lr_schedule with c's rates, warmup and
// decay horizon).
double train_lr(const Config *c, long step);
// The update of a training step after its backward, the one ./train, the page and make bench
// make: the guard skips it (nothing of the step reaches the parameters) for a non-finite loss,
// then a non-finite gradient norm, then a loss spike (spike: the caller's detector flagged the
// loss); else the gradients are clipped to norm train.grad_clip (0: never) and AdamW updates the
// parameters at rate lr with c's betas, eps and weight decay, its step count `updates` (the
// updates made so far, this one included). Returns NULL, or why the update was skipped;
// *grad_norm receives the gradients' norm before clipping (NaN when the loss is not finite).
const char *train_update(GPT *m, const Config *c, double loss, double lr, long updates, int spike,
                         double *grad_norm);
// True when every parameter and moment is finite.
int gpt_all_finite(const GPT *m);

#endif
