// run/probe.h: the attention probe: the statistics of every head's weights P and of the gradient
// surviving its softmax, on a fixed batch during training (run/probe.c).
#ifndef RUN_PROBE_H
#define RUN_PROBE_H

#include "model.h"              // GPT: the passes that collect the statistics
#include "report/head_stats.h"  // HeadStats: what the probe measures of a head, as reports show it

// Forward and backward on (x, y) with statistics on; fills per_head (L*NH, may be NULL) and
// mean (averages over layers and heads). Leaves the gradients zeroed.
void attention_probe(GPT *m, const int *x, const int *y, int B, int T, HeadStats *per_head,
                     HeadStats *mean);

#endif
