// run/induction.h: what attention learns to do, measured on a probe of repeated random text: each
// head's previous-token and induction scores (attention.csv) and the in-context score, the loss on
// the second copy minus the loss on the first (metrics.csv). Definitions in run/induction.c and
// docs/FORMAT.md; the experiment in docs/induction.md.
#ifndef RUN_INDUCTION_H
#define RUN_INDUCTION_H

#include <stdint.h>

#include "base/data.h"  // Vocab: the letters the probe is drawn from
#include "model.h"

// The probe and the last measurement on it.
typedef struct {
    int B, T, L;              // rows, positions, the copy's length L = T / 2
    int *x, *y;               // (B,T) inputs x[t] = r[t mod L] and targets y[t] = r[(t+1) mod L]
    int n_heads;              // layers x heads
    long step;                // updates done when the scores below were measured (-1: none yet)
    double *prev_token;       // (L*NH) mean P[t][t-1] over t in [1, T)
    double *induction;        // (L*NH) mean P[t][t-L+1] over t in [L, 2L)
    double first_copy_loss;   // mean loss of the predictions t in [0, L-1): r[1..L-1] seen once
    double second_copy_loss;  // mean loss of the predictions t in [L, 2L-1): r[1..L-1] seen before
} Induction;

// The probe's alphabet: the vocabulary's ids of the letters a-z, in vocabulary order, or every id
// when the vocabulary holds fewer than INDUCTION_MIN_LETTERS of them. Returns how many (into ids,
// room for vocab_size).
#define INDUCTION_MIN_LETTERS 8
int induction_alphabet(const Vocab *v, int *ids);

// B rows of a random sequence r of L = T / 2 characters of the alphabet, each drawn uniformly
// (rng_below), row after row, repeated: x[b][t] = r_b[t mod L], y[b][t] = r_b[(t+1) mod L].
void induction_make_probe(int *x, int *y, int B, int T, const int *alphabet, int n_alphabet,
                          uint64_t seed);

// The probe of a run with this seed (the stream rng_seed(seed * 7919 + 103)), B rows of T; NULL
// when T < 4 (no second copy to measure).
Induction *induction_new(const Vocab *v, uint64_t seed, int B, int T, int n_layer, int n_head);
void induction_free(Induction *ind);

// The scores from a forward's weights P (B,NH,T,T) of each layer and its per-position losses
// (B,T), by their definitions: no model needed (the tests re-derive them from here).
void induction_scores(Induction *ind, const real *const *att, const real *losses, int n_layer,
                      int n_head);

// A forward of the model on the probe (keeping the weights P), then induction_scores; marks the
// scores as those after `step` updates. The model's parameters and gradients are untouched.
void induction_measure(GPT *m, Induction *ind, long step);

// The induction experiment's data made from a text (the page's, without tools/gencorpus): before
// each of the text's lines, while a draw in [0, 100) is below `percent` (0..99), a line of
// base/repeat_line.h (a random string of 6-16 letters written twice). So each line of the result
// is a repeated string with probability percent/100, else the text's next line: what
// `gencorpus --repeat P` writes when the text is the embedded corpus (data/default.txt). Draws
// from rng_seed(seed). Returns the new text (malloc'd, *out_n bytes, 0-terminated).
char *induction_mix_text(const char *text, size_t n, int percent, uint64_t seed, size_t *out_n);

#endif
