// run/decode.h: generation with a key/value cache (one position's forward per new token) and
// the honest loss it makes cheap (run/decode.c).
#ifndef RUN_DECODE_H
#define RUN_DECODE_H

#include "base/common.h"  // real
#include "model.h"        // GPT: its parameters, attention and layer functions

// The keys and values of every layer for positions [0, len) of one sequence, so each new token
// costs one position's forward pass instead of the whole prefix's.
// Under a window of W < T_max only the last W positions are kept, as a ring of W slots (position
// p in slot p mod W) written twice, at slot and slot + W, so that the window's keys always lie in
// W consecutive slots, oldest first, for the attention's decode step.
typedef struct {
    int len;      // positions cached
    int ring;     // slots of the ring: W, or T_max (no wrap) without a window
    int slots;    // slots per layer: 2 W with a window, else T_max
    real *k, *v;  // (L, slots, C) each
    real *x, *ln, *q, *atty, *tmp, *h, *h_gelu, *scores, *stat;  // one position's scratch
    real *qk_stat;  // QK-norm's mean and rstd of each head row (2 NH)
} KVCache;

void kv_cache_init(KVCache *c, const GPT *m);
void kv_cache_free(KVCache *c);
// Feed `token` at position c->len (which must be < block_size) and write the logits (V) for the
// next token. Bit-identical to the last row of gpt_forward over the same tokens (attention by the
// implementation gpt_forward runs for the model: its own, or the definition for a spec the
// engine does not compute).
void gpt_decode_step(GPT *m, KVCache *c, int token, real *logits);
// Fill the cache with n tokens (n <= block_size) at positions 0..n-1 in one batched forward pass
// and write the logits after the last one. Same values as n decode steps.
void gpt_prefill(GPT *m, KVCache *c, const int *tokens, int n, real *logits);
// The logits (V) after the last of n tokens (n <= block_size), from one forward pass over them,
// the same rows as gpt_prefill's, without keeping their keys and values: the crop's step, whose
// window slides by one every token.
void gpt_window_logits(GPT *m, const int *tokens, int n, real *logits);

// ---- the honest loss ----
// Whether the model's attention is the correct one (causal mask, softmax over keys): position t
// then depends on tokens 0..t only, so the usual teacher-forced loss is what generation gets.
int gpt_attention_is_causal(const GPT *m);
// gen_loss: the mean cross-entropy of predicting y[w][t] (the token after x[w][t]) from
// x[w][0..t] only, exactly as generation sees them, over n windows of T tokens (x, y are (n,T)).
// For the correct model, KV-cache decoding gives every position at the cost of one forward; a
// model that sees the future (a masking or softmax-axis mistake) runs one forward per prefix,
// taking its last position. *teacher_forced (may be NULL) receives the usual loss over the same
// windows, in which every position sees the whole window. Needs T <= block_size and m->T >= T.
double gpt_generation_loss(GPT *m, const int *x, const int *y, int n, int T,
                           double *teacher_forced);

#endif
