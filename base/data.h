// base/data.h: UTF-8 text loading, the character vocabulary, train/val split and batch sampling.
#ifndef DATA_H
#define DATA_H

#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"

typedef struct {
    int vocab_size;
    uint32_t *chars;  // (vocab_size,) sorted Unicode code points; token id = index
} Vocab;

typedef struct {
    Vocab vocab;
    int *tokens;  // (n_tokens,) the whole text as token ids
    size_t n_tokens;
    size_t n_train;  // tokens [0, n_train) are train, [n_train, n_tokens) validation
} Dataset;

// Decode UTF-8. On invalid input returns 0 and sets *bad_offset to the byte offset of the first
// invalid sequence. On success returns 1 and a malloc'd array of code points in *out (length *n).
int utf8_decode(const unsigned char *bytes, size_t len, uint32_t **out, size_t *n,
                size_t *bad_offset);
// Offset of the first invalid UTF-8 sequence in bytes, or len when all of it is valid (the same
// rules as utf8_decode, without decoding).
size_t utf8_invalid_offset(const unsigned char *bytes, size_t len);
// Whether cp is a Unicode scalar value (at most U+10FFFF, not a surrogate).
int unicode_scalar(uint32_t cp);
// Encode one code point to buf (at least 4 bytes); returns the byte count.
int utf8_encode(uint32_t cp, char *buf);

// Build the vocabulary (sorted distinct code points) of a decoded text.
void vocab_build(Vocab *v, const uint32_t *cps, size_t n);
// Token id of a code point, or -1 if not in the vocabulary (binary search).
int vocab_lookup(const Vocab *v, uint32_t cp);
void vocab_free(Vocab *v);

// Load `path`, decode, build the vocabulary, tokenize and split. `min_len` is block_size + 1:
// both splits must hold at least that many tokens. On error returns 0 with a one-line message in
// err naming the file (and byte offset for invalid UTF-8).
int dataset_load(Dataset *ds, const char *path, double val_fraction, int min_len, char *err,
                 size_t errlen);
// Same, but tokenize with a given vocabulary (for resume: the checkpoint's); characters outside it
// are an error naming the character and its offset.
int dataset_load_with_vocab(Dataset *ds, const char *path, double val_fraction, int min_len,
                            const Vocab *vocab, char *err, size_t errlen);
void dataset_free(Dataset *ds);
// B random windows of T+1 tokens from one split (split_val: the validation split, else the
// training split), starts drawn from rng: inputs x and next-token targets y, (B,T) each.
void sample_batch(const Dataset *ds, int split_val, Rng *rng, int B, int T, int *x, int *y);

#endif
