// run/induction.c: the induction probe (Olsson et al. 2022, "In-context learning and induction
// heads"): B rows of a random sequence r of L = T / 2 letters, repeated once. A model that has
// formed an induction head predicts the second copy from the first: at a position t of the second
// copy (token r[t-L]) it attends to t-L+1, the position after the same token's earlier occurrence,
// and copies what stands there, r[t-L+1], the next token. With P one head's weights (B,NH,T,T):
//   previous-token score   mean over b and t in [1, T) of P[t][t-1]
//   induction score        mean over b and t in [L, 2L) of P[t][t-L+1]
//   first copy loss        mean over b and t in [0, L-1) of -ln p(y[t]) (r[1..L-1] unseen)
//   second copy loss       mean over b and t in [L, 2L-1) of -ln p(y[t]) (the same r[1..L-1], seen)
//   in-context score       second copy loss - first copy loss: below 0 when the model copies
// A uniform head over the t + 1 keys it sees scores 1/(t+1) on each, so both scores start near
// the mean of 1/(t+1) over their rows; a perfect previous-token or induction head scores 1.
#include "run/induction.h"

#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "base/repeat_line.h"
#include "base/rng.h"

int induction_alphabet(const Vocab *v, int *ids) {
    int n = 0;
    for (int i = 0; i < v->vocab_size; i++)
        if (v->chars[i] >= 'a' && v->chars[i] <= 'z') ids[n++] = i;
    if (n >= INDUCTION_MIN_LETTERS) return n;
    for (int i = 0; i < v->vocab_size; i++) ids[i] = i;
    return v->vocab_size;
}

void induction_make_probe(int *x, int *y, int B, int T, const int *alphabet, int n_alphabet,
                          uint64_t seed) {
    int L = T / 2;
    Rng rng;
    rng_seed(&rng, seed);
    int *r = xmalloc((size_t)L * sizeof(int), "induction probe");
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < L; i++) r[i] = alphabet[rng_below(&rng, (uint64_t)n_alphabet)];
        for (int t = 0; t < T; t++) {
            x[(size_t)b * T + t] = r[t % L];
            y[(size_t)b * T + t] = r[(t + 1) % L];
        }
    }
    free(r);
}

Induction *induction_new(const Vocab *v, uint64_t seed, int B, int T, int n_layer, int n_head) {
    if (T < 4 || B < 1) return NULL;
    Induction *ind = xcalloc(1, sizeof *ind, "induction probe");
    ind->B = B;
    ind->T = T;
    ind->L = T / 2;
    ind->n_heads = n_layer * n_head;
    ind->step = -1;
    ind->x = xmalloc((size_t)B * T * sizeof(int), "induction probe");
    ind->y = xmalloc((size_t)B * T * sizeof(int), "induction probe");
    ind->prev_token = xcalloc((size_t)ind->n_heads, sizeof(double), "induction scores");
    ind->induction = xcalloc((size_t)ind->n_heads, sizeof(double), "induction scores");
    int *alphabet = xmalloc((size_t)v->vocab_size * sizeof(int), "induction alphabet");
    int n = induction_alphabet(v, alphabet);
    induction_make_probe(ind->x, ind->y, B, T, alphabet, n, seed * 7919u + 103u);
    free(alphabet);
    return ind;
}

void induction_free(Induction *ind) {
    if (!ind) return;
    free(ind->x);
    free(ind->y);
    free(ind->prev_token);
    free(ind->induction);
    free(ind);
}

void induction_scores(Induction *ind, const real *const *att, const real *losses, int n_layer,
                      int n_head) {
    int B = ind->B, T = ind->T, L = ind->L;
    for (int l = 0; l < n_layer; l++)
        for (int h = 0; h < n_head; h++) {
            double prev = 0.0, induct = 0.0;
            for (int b = 0; b < B; b++) {
                const real *P =
                    att[l] + ((size_t)b * n_head + h) * T * T;  // (T,T) of row b, head h
                for (int t = 1; t < T; t++) prev += P[(size_t)t * T + t - 1];
                for (int t = L; t < 2 * L; t++) induct += P[(size_t)t * T + t - L + 1];
            }
            ind->prev_token[l * n_head + h] = prev / ((double)B * (T - 1));
            ind->induction[l * n_head + h] = induct / ((double)B * L);
        }
    double first = 0.0, second = 0.0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < L - 1; t++) {
            first += losses[(size_t)b * T + t];
            second += losses[(size_t)b * T + L + t];
        }
    ind->first_copy_loss = first / ((double)B * (L - 1));
    ind->second_copy_loss = second / ((double)B * (L - 1));
}

void induction_measure(GPT *m, Induction *ind, long step) {
    int L = m->dims.n_layer;
    m->keep_weights = 1;  // the weights P in acts.layers[l].att (the engine keeps 2 numbers a row)
    gpt_forward(m, ind->x, ind->y, ind->B, ind->T);
    m->keep_weights = 0;
    const real **att = xmalloc((size_t)L * sizeof(real *), "induction probe");
    for (int l = 0; l < L; l++) att[l] = m->acts.layers[l].att;
    induction_scores(ind, att, m->acts.losses, L, m->dims.n_head);
    free(att);
    ind->step = step;
}

static int mix_pick(void *rng, int k) { return (int)rng_below((Rng *)rng, (uint64_t)k); }

// The mixed text into out (NULL: only counted); returns its length.
static size_t mix_text(const char *text, size_t n, int percent, uint64_t seed, char *out) {
    Rng rng;
    rng_seed(&rng, seed);
    char line[REPEAT_LINE_MAX];
    size_t len = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i;
        while (end < n && text[end] != '\n') end++;
        if (end < n) end++;  // the line with its newline
        while ((int)rng_below(&rng, 100) < percent) {
            int k = repeat_line_write(line, mix_pick, &rng);
            if (out) memcpy(out + len, line, (size_t)k), out[len + (size_t)k] = '\n';
            len += (size_t)k + 1;
        }
        if (out) memcpy(out + len, text + i, end - i);
        len += end - i;
        i = end;
    }
    return len;
}

char *induction_mix_text(const char *text, size_t n, int percent, uint64_t seed, size_t *out_n) {
    if (percent < 0) percent = 0;
    if (percent > 99) percent = 99;
    size_t len = mix_text(text, n, percent, seed, NULL);
    char *out = xmalloc(len + 1, "induction text");
    mix_text(text, n, percent, seed, out);
    out[len] = 0;
    *out_n = len;
    return out;
}
