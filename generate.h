// generate.h: sampling text from a model (used by ./train at the end of a run and by ./sample).
#ifndef GENERATE_H
#define GENERATE_H

#include <stdio.h>

#include "data.h"
#include "model.h"
#include "rng.h"

// Encode a UTF-8 prompt with the vocabulary. Returns the token count, or -1 with a message in
// err naming the first character that is not in the vocabulary. tokens must hold strlen(prompt).
int encode_prompt(const Vocab *v, const char *prompt, int *tokens, char *err, size_t errlen);

// Sample n_tokens after the prompt tokens and write them (UTF-8) to out as they are produced.
// temperature > 0; top_k 0 = all tokens. The context is the last block_size tokens.
// The model must have been built with batch capacity >= 1 and T = block_size.
void generate(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n_tokens,
              double temperature, int top_k, Rng *rng, FILE *out);

#endif
