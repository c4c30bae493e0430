// run/probe.h: the attention probe: the statistics of every head's weights P and of the gradient
// surviving its softmax, on a fixed batch during training (run/probe.c).
#ifndef RUN_PROBE_H
#define RUN_PROBE_H

#include "model.h"  // GPT: the passes that collect the statistics

// One (layer, head)'s statistics, or their average over all layers and heads.
typedef struct {
    double entropy;          // mean row entropy of P (nats), rows t >= 1
    double entropy_norm;     // mean of entropy / ln(visible keys): 1 = uniform, 0 = one-hot
    double max_weight;       // mean row max weight
    double frac_gt_090;      // fraction of rows whose max weight > 0.9
    double frac_gt_099;      // ... > 0.99
    double future_mass;      // mean weight a row puts on positions after its own: 0 when causal
    double score_std;        // standard deviation of the scaled scores S (unmasked entries)
    double score_absmax;     // max |S|
    double max_logit;        // max S (signed), over every probe row
    double mean_max_logit;   // mean over the probe rows (every row) of the row's max S
    double gnorm_wq, gnorm_wk, gnorm_wv, gnorm_wo;  // ||dL/dW|| of the layer's whole matrices
    double ds_over_dp;       // ||dL/dS|| / ||dL/dP|| over the head: gradient surviving the softmax
    double row_gain_median;  // median over rows of ||dL/dS_row|| / ||dL/dP_row||
    double loss;             // the probe batch's loss
} HeadStats;

// Forward and backward on (x, y) with statistics on; fills per_head (L*NH, may be NULL) and
// mean (averages over layers and heads). Leaves the gradients zeroed.
void attention_probe(GPT *m, const int *x, const int *y, int B, int T, HeadStats *per_head, HeadStats *mean);

#endif
