// run/generate.h: sampling text from a model (used by ./train at the end of a run and by ./sample).
#ifndef GENERATE_H
#define GENERATE_H

#include <signal.h>
#include <stdio.h>

#include "base/data.h"
#include "model.h"
#include "base/rng.h"

// Encode a UTF-8 prompt with the vocabulary. Returns the token count, or -1 with a message in
// err naming the first character that is not in the vocabulary. tokens must hold strlen(prompt).
int encode_prompt(const Vocab *v, const char *prompt, int *tokens, char *err, size_t errlen);

// What the context becomes once prompt and output outgrow block_size.
// CONTEXT_CROP: the last block_size tokens, recomputed for every new token (one batched forward
// of block_size positions per token), exactly as nanoGPT's generate and `./sample --probs` see it.
// CONTEXT_RESTART: restart from the last block_size/2 tokens when the window fills, then extend
// the cache one position at a time (one forward of block_size/2 positions per block_size/2
// tokens): cheaper, but each character after the first restart sees between block_size/2 and
// block_size characters, so it can differ from the crop's.
typedef enum { CONTEXT_CROP, CONTEXT_RESTART } ContextPolicy;

// Sample n_tokens after the prompt tokens and write them (UTF-8) to out (may be NULL) as they
// are produced. temperature >= 0, 0 = greedy (the most likely token; seed-independent); top_k 0
// = all tokens. Uses a key/value cache: while prompt and output fit in block_size each token costs
// one position's forward pass (a model with an attention mistake, which sees the future, runs
// generate_full_window instead: positions may only see what came before them). The context past
// block_size is CONTEXT_CROP's: the result is identical to generate_full_window throughout.
void generate(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n_tokens,
              double temperature, int top_k, Rng *rng, FILE *out);
// The same with the given context policy, stopping early once *stop (may be NULL) is non-zero
// (checked before every token; a signal handler sets it). Returns the number of tokens written.
int generate_until(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n_tokens,
                   double temperature, int top_k, ContextPolicy policy, Rng *rng, FILE *out,
                   const volatile sig_atomic_t *stop);
// The same without a cache: a full forward pass over the last block_size tokens for every new
// token (the reference for the tests and the benchmark). The model needs T capacity block_size.
void generate_full_window(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n_tokens,
                          double temperature, int top_k, Rng *rng, FILE *out);

#endif
