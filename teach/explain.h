// teach/explain.h: attention weights beside the effects of each position on the prediction
// (`./sample CKPT --explain`). For every predicted position t (the prediction of token t+1 from
// tokens 0..t) and every position j <= t:
//   attention   P[t][j] of each layer and head; their mean over heads; attention rollout
//               (Abnar & Zuidema 2020: A_l = (mean_h P_l + I) / 2, R = A_{L-1} ... A_0); and the
//               norm-weighted attention (Kobayashi et al. 2020): ||sum_h P_h[t][j] v_j^h Wo^h||,
//               the length of what position j adds to row t's attention output, per layer.
//   effects     on log p(token t+1): leave-one-out (token j replaced by a baseline character,
//               the model run again); attention knockout (S[t][j] = -inf in one layer, all heads
//               or one head, the row renormalised); gradient x input (d log p / d x_j . x_j, x_j
//               the input embedding wte[token] + wpe[j], from the hand-written backward).
//   uniform     the baseline of Wiegreffe & Pinter 2019: the same measures with every P[t][j]
//               replaced by 1/(t+1) (every visible key alike), the rest of the model as it is:
//               "uniform" (the weights themselves), "uniform_rollout" ((U + I) / 2 rolled
//               through the layers: the residual alone favours t itself and the first
//               positions) and "uniform_norm_lL" (||sum_h v_j^h Wo^h|| / (t+1): the norms of
//               what is mixed, without the weights).
// Each effect is log p(original) - log p(changed): positive when position j helped.
// Agreement between a measure a and an effect e, per row t with at least two positions, with
// ties counted as an even draw among the tied positions: top-1 is the chance that a position
// drawn from a's maxima is one drawn from |e|'s maxima, |A n E| / (|A| |E|) (1 when both have
// one and the same maximum; 1/(t+1) for uniform weights against an effect with one maximum);
// Kendall's tau-b between a and |e| (undefined, and left out, when either is constant: for
// uniform weights on every row); misattribution, the share of a's maxima whose |e| is below 10%
// of max_j |e|.
#ifndef EXPLAIN_H
#define EXPLAIN_H

#include <stdio.h>

#include "base/data.h"
#include "model.h"

#define EXPLAIN_NAME           40   // room for a measure's name, e.g. "knock_l3h7"
#define EXPLAIN_MAX_NAMES      160  // room for the names of one model's measures or its effects
#define EXPLAIN_MISATTRIBUTION 0.1  // a top-attended position with |effect| < 10% of the largest

// The measures of one sequence. Matrices (n, n) are indexed [t*n + j] and hold 0 for j > t.
typedef struct {
    int n;  // predicted positions: t = 0 .. n-1 (tokens 0..n: n+1 of them)
    int L, NH;
    int *tokens;         // (n + 1)
    int baseline;        // the token leave-one-out puts at position j
    unsigned char *row;  // (n) 1 where the row's effects were computed (knockout, gradient x input)
    double *logp;        // (n) log p(token t+1 | tokens 0..t)
    int *argmax;         // (n) the model's most likely next token at t
    double *attn;        // (L, NH, n, n) P of each layer and head
    double *attn_mean;   // (L, n, n) mean over heads
    double *rollout;     // (n, n)
    double *norm;        // (L, n, n) ||sum_h P_h[t][j] v_j^h Wo^h||
    double *uniform;     // (n, n) 1/(t+1): uniform weights
    double *uniform_rollout;  // (n, n) the rollout of uniform weights
    double *uniform_norm;     // (L, n, n) ||sum_h v_j^h Wo^h|| / (t+1)
    double *loo;              // (n, n) leave-one-out
    double *knock;            // (L, n, n) knockout in layer l, all heads
    double *knock_head;       // (L, NH, n, n) knockout of one head; NULL unless asked for
    double *gxi;              // (n, n) gradient x input
} Explain;

// Measure tokens[0..n] (n >= 1, n <= block_size) on a causal model built with a batch capacity
// m->B >= 1 and m->T >= n (the variants of one row run m->B at a time). rows (n, may be NULL =
// all) selects the rows whose knockout and gradient x input are computed; leave-one-out and the
// attention measures are computed for every row. per_head: also knockout of each head.
void explain_compute(GPT *m, const int *tokens, int n, int baseline, const unsigned char *rows,
                     int per_head, Explain *e);
void explain_free(Explain *e);

// A measure's row t (n entries, 0 beyond t), by name: "attn_lL" (mean over heads of layer L),
// "attn_lLhH", "rollout", "norm_lL", "uniform", "uniform_rollout", "uniform_norm_lL", "loo",
// "knock_lL", "knock_lLhH", "gxi". NULL if unknown.
const double *explain_row(const Explain *e, const char *name, int t);

// The agreement of a with |e| over the computed rows (t >= 1), summed: rows counted, top-1 hits
// (a fraction where there are ties), tau-b summed over the rows where it is defined (neither side
// constant) and their count, and misattributions over the rows where max |e| > 0.
typedef struct {
    double rows, top1, tau_sum, tau_rows, mis, mis_rows;
} Agreement;
void agreement_add(Agreement *g, const double *a, const double *e, int n_keys);
// to += from, field by field (the sums of one row's agreement added to several tables)
void agreement_merge(Agreement *to, const Agreement *from);
// a / b, or NaN when b is 0: a sum over rows divided by their count, undefined over no rows
double explain_ratio(double a, double b);
// Kendall's tau-b of x and y (n entries); NaN when either is constant.
double kendall_tau_b(const double *x, const double *y, int n);
// argmax_j |x_j| (abs) or argmax_j x_j, the first of equals.
int explain_argmax(const double *x, int n, int abs);

// The names of the attention measures (the uniform baseline's among them) and of the effects of
// a model with L layers and NH heads (per_head: the per-head ones too), written into names (each at
// most EXPLAIN_NAME - 1 chars). Returns the count.
int explain_attention_names(int L, int NH, int per_head, char names[][EXPLAIN_NAME], int max);
int explain_effect_names(int L, int NH, int per_head, char names[][EXPLAIN_NAME], int max);

// Whether the model has learned the prompt: the mean of p(next) over the prompt's last
// EXPLAIN_LEARNED_ROWS characters (each predicted from what comes before it; fewer in a shorter
// prompt) is at least EXPLAIN_LEARNED_P. *mean_p (may be NULL) receives that mean. Below it the
// explanation is of the model's mistakes, which every output says in one line
// (EXPLAIN_NOT_LEARNED).
#define EXPLAIN_LEARNED_ROWS 3
#define EXPLAIN_LEARNED_P    0.5
int explain_learned(const Explain *e, double *mean_p);
#define EXPLAIN_NOT_LEARNED                                                                        \
    "this model has not learned this prompt; the explanation is of its mistakes"
// That line with its figures, e.g. "... mistakes (mean p(next) 0.06 over the last 3 characters,
// under 0.5)", or "" when the model has learned the prompt. buf holds at least 160 bytes.
void explain_learned_line(const Explain *e, char *buf, size_t len);

// The report (teach/explain_report.c). The terminal table: each row's prediction, its most attended
// and most effective positions, then the agreement of every attention measure with every effect and
// of the effects with each other (the ceiling).
void explain_print(FILE *f, const Explain *e, const Vocab *v);
// The same numbers, all of them, as one JSON object (schema in docs/EXPLAIN.md,
// its --json section); prompt_text and checkpoint are strings recorded in it.
void explain_json(FILE *f, const Explain *e, const Vocab *v, const char *checkpoint);

// ---- the controlled experiment (teach/explain_experiment.c): held-out lines whose source is
// known (data/README.md) ----
enum { KIND_COPY, KIND_REV, KIND_FIND, KIND_KV, KIND_BRACKETS, KIND_COUNT };
extern const char *const EXPLAIN_KIND_NAMES[KIND_COUNT];
// The kind of a corpus line (without its newline) and, for each character i of it, the position
// in the line of the character that decides it (-1 where none does). Returns the kind, or -1
// for a line of another kind (a sentence) or one that does not parse.
int explain_line_sources(const char *line, int len, int *source);
// Measure the answer characters of the lines of `path` (a corpus file of the generator's format),
// each line fed as "\n" + line, until every kind has per_kind predictions (or the file ends);
// print the per-kind accuracy, where each measure's top position lies (the first position, the
// predicting one, a delimiter, the source) and the agreement tables, as "label: numbers" lines,
// to f. Returns 0 with a one-line reason in err.
int explain_experiment(FILE *f, GPT *m, const Vocab *v, const char *path, int per_kind,
                       int baseline, char *err, size_t errlen);

#endif
