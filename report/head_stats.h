// report/head_stats.h: what the attention probe (run/probe.c) measures of a head during training,
// which the logs and the reports show.
#ifndef REPORT_HEAD_STATS_H
#define REPORT_HEAD_STATS_H

// One (layer, head)'s statistics, or their average over all layers and heads.
typedef struct {
    double entropy;         // mean row entropy of P (nats), rows t >= 1
    double entropy_norm;    // mean of entropy / ln(visible keys): 1 = uniform, 0 = one-hot
    double max_weight;      // mean row max weight
    double frac_gt_090;     // fraction of rows whose max weight > 0.9
    double frac_gt_099;     // ... > 0.99
    double future_mass;     // mean weight a row puts on positions after its own: 0 when causal
    double score_std;       // standard deviation of the scaled scores S (unmasked entries)
    double score_absmax;    // max |S|
    double max_logit;       // max S (signed), over every probe row
    double mean_max_logit;  // mean over the probe rows (every row) of the row's max S
    double gnorm_wq, gnorm_wk, gnorm_wv, gnorm_wo;  // ||dL/dW|| of the layer's whole matrices
    double ds_over_dp;       // ||dL/dS|| / ||dL/dP|| over the head: gradient surviving the softmax
    double row_gain_median;  // median over rows of ||dL/dS_row|| / ||dL/dP_row||
    double loss;             // the probe batch's loss
} HeadStats;

#endif
