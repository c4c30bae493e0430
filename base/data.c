// base/data.c: strict UTF-8 decoding, the character vocabulary, and loading/tokenizing/splitting
// the training text.
#define _POSIX_C_SOURCE 200809L
#include "base/data.h"
#include "base/common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Largest data file accepted: token positions must fit in an int everywhere downstream.
#define DATA_MAX_BYTES ((size_t)2147483647)  // 2 GiB - 1

#define UNICODE_MAX  0x10FFFFu
#define UNICODE_SIZE 0x110000u

// ---------------------------------------------------------------------------------------------
// UTF-8

// Length (1 to 4) of the valid UTF-8 sequence at bytes[i] and its code point in *cp, or 0 when
// the bytes there are not one. Table 3-7 of the Unicode Standard: the allowed range of the
// second byte depends on the lead byte (this excludes overlongs, surrogates and values above
// U+10FFFF); the remaining continuation bytes are always 80..BF.
static inline size_t utf8_sequence(const unsigned char *bytes, size_t len, size_t i, uint32_t *cp) {
    unsigned c = bytes[i];
    if (c < 0x80) {  // ASCII, U+0000 included
        *cp = c;
        return 1;
    }
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        v = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0;  // overlong below U+0800
        else if (c == 0xED)
            hi = 0x9F;  // surrogates U+D800..DFFF
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        v = c & 0x07;
        if (c == 0xF0)
            lo = 0x90;  // overlong below U+10000
        else if (c == 0xF4)
            hi = 0x8F;  // above U+10FFFF
    } else {
        // 80..BF stray continuation, C0/C1 overlong 2-byte lead, F5..FF beyond Unicode
        return 0;
    }
    if (len - i <= need) return 0;  // truncated sequence at the end of the input
    for (size_t j = 1; j <= need; j++) {
        unsigned cb = bytes[i + j];
        unsigned jlo = j == 1 ? lo : 0x80, jhi = j == 1 ? hi : 0xBF;
        if (cb < jlo || cb > jhi) return 0;
        v = (v << 6) | (cb & 0x3F);
    }
    *cp = v;
    return need + 1;
}

int utf8_decode(const unsigned char *bytes, size_t len, uint32_t **out, size_t *n,
                size_t *bad_offset) {
    size_t cap_bytes;
    *out = NULL;
    *n = 0;
    if (!mul_size(len, sizeof(uint32_t), &cap_bytes))
        die(EXIT_RUNTIME, "size overflow decoding %zu bytes of UTF-8", len);
    uint32_t *cps = xmalloc(cap_bytes, "decoded text");
    size_t i = 0, k = 0;
    while (i < len) {
        size_t step = utf8_sequence(bytes, len, i, &cps[k]);
        if (step == 0) {
            free(cps);
            if (bad_offset) *bad_offset = i;
            return 0;
        }
        k++;
        i += step;
    }
    *out = cps;
    *n = k;
    return 1;
}

size_t utf8_invalid_offset(const unsigned char *bytes, size_t len) {
    size_t i = 0;
    uint32_t cp;
    while (i < len) {
        size_t step = utf8_sequence(bytes, len, i, &cp);
        if (step == 0) return i;
        i += step;
    }
    return len;
}

int unicode_scalar(uint32_t cp) { return cp <= UNICODE_MAX && !(cp >= 0xD800 && cp <= 0xDFFF); }

int utf8_encode(uint32_t cp, char *buf) {
    unsigned char *b = (unsigned char *)buf;
    // Not a Unicode scalar value (surrogate or beyond U+10FFFF): encode U+FFFD instead, so the
    // output is always valid UTF-8.
    if (!unicode_scalar(cp)) cp = 0xFFFD;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (unsigned char)(0xF0 | (cp >> 18));
    b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    b[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

// Bytes taken by a (valid) code point in UTF-8.
static size_t utf8_len(uint32_t cp) {
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

// ---------------------------------------------------------------------------------------------
// Vocabulary

void vocab_build(Vocab *v, const uint32_t *cps, size_t n) {
    const size_t words = UNICODE_SIZE / 64;
    uint64_t *seen = xcalloc(words, sizeof(uint64_t), "vocabulary bitmap");
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = cps[i];
        if (cp > UNICODE_MAX)
            die(EXIT_RUNTIME, "vocab_build: invalid code point 0x%lX", (unsigned long)cp);
        seen[cp >> 6] |= (uint64_t)1 << (cp & 63);
    }
    int count = 0;
    for (size_t w = 0; w < words; w++)
        for (uint64_t x = seen[w]; x; x &= x - 1) count++;
    v->vocab_size = count;
    v->chars = xmalloc((size_t)count * sizeof(uint32_t), "vocabulary");
    int k = 0;
    for (size_t w = 0; w < words; w++)
        for (int bit = 0; seen[w] && bit < 64; bit++)
            if (seen[w] >> bit & 1) v->chars[k++] = (uint32_t)(w * 64 + (size_t)bit);
    free(seen);
}

int vocab_lookup(const Vocab *v, uint32_t cp) {
    if (!v || !v->chars) return -1;
    int lo = 0, hi = v->vocab_size - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        uint32_t c = v->chars[mid];
        if (c == cp) return mid;
        if (c < cp)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

void vocab_free(Vocab *v) {
    if (!v) return;
    free(v->chars);
    v->chars = NULL;
    v->vocab_size = 0;
}

// ---------------------------------------------------------------------------------------------
// Dataset loading

// Describe a code point for an error message: "U+00E9 'é'", or just "U+000A" for control and
// line-separator characters that would garble a one-line message.
static void describe_cp(uint32_t cp, char *buf, size_t buflen) {
    int printable = !(cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
                      !unicode_scalar(cp));
    if (printable) {
        char enc[5];
        int len = utf8_encode(cp, enc);
        enc[len] = '\0';
        snprintf(buf, buflen, "U+%04lX '%s'", (unsigned long)cp, enc);
    } else {
        snprintf(buf, buflen, "U+%04lX", (unsigned long)cp);
    }
}

// Read a whole file into a malloc'd buffer. Only a regular file is read (a FIFO, a device such
// as /dev/zero or a directory is refused before the first read: fopen_regular); rejects anything
// over DATA_MAX_BYTES. The read loop still grows the buffer, for a file that grows meanwhile.
static int read_file(const char *path, unsigned char **out, size_t *out_len, char *err,
                     size_t errlen) {
    *out = NULL;
    *out_len = 0;
    uint64_t size;
    const char *why;
    FILE *f = fopen_regular(path, &size, &why);
    if (!f) {
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        char near[1024];
        if (access(path, F_OK) != 0 && strcmp(base, "tinyshakespeare.txt") == 0)
            refuse(err, errlen,
                   "cannot read data file '%s': %s (run `make shakespeare` first: it downloads it "
                   "there)",
                   path, why);
        else if (access(path, F_OK) != 0 && errno == ENOENT &&
                 nearest_file(path, near, sizeof near))  // (not a link loop)
            refuse(err, errlen, "cannot read data file '%s': %s (did you mean '%s'?)", path, why,
                   near);
        else
            refuse(err, errlen, "cannot read data file '%s': %s", path, why);
        return 0;
    }
    if (size > (uint64_t)DATA_MAX_BYTES) {
        fclose(f);
        refuse(err, errlen,
               "data file '%s' is too large (%llu bytes; at most %zu bytes, 2 GiB, are supported)",
               path, (unsigned long long)size, DATA_MAX_BYTES);
        return 0;
    }
    size_t cap = (size_t)size + 1;  // +1 so EOF is seen without growing
    unsigned char *buf = xmalloc(cap, "data file contents");
    size_t len = 0;
    for (;;) {
        if (len == cap) {
            if (cap > DATA_MAX_BYTES) {
                free(buf);
                fclose(f);
                refuse(
                    err, errlen,
                    "data file '%s' is too large (more than %zu bytes, 2 GiB, are not supported)",
                    path, DATA_MAX_BYTES);
                return 0;
            }
            size_t ncap = cap * 2;
            if (ncap > DATA_MAX_BYTES + 1) ncap = DATA_MAX_BYTES + 1;
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                die(EXIT_RUNTIME, "out of memory allocating %zu bytes for data file contents",
                    ncap);
            }
            buf = nb;
            cap = ncap;
        }
        errno = 0;
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0 || len < cap) {
            if (ferror(f)) {
                int e = errno ? errno : EIO;
                free(buf);
                fclose(f);
                refuse(err, errlen, "cannot read data file '%s': %s", path, strerror(e));
                return 0;
            }
            if (feof(f)) break;
        }
    }
    if (len > DATA_MAX_BYTES) {  // a regular file that grew while being read
        free(buf);
        fclose(f);
        refuse(err, errlen,
               "data file '%s' is too large (more than %zu bytes, 2 GiB, are not supported)", path,
               DATA_MAX_BYTES);
        return 0;
    }
    errno = 0;
    if (fclose(f) != 0) {
        free(buf);
        refuse(err, errlen, "cannot read data file '%s': %s", path, strerror(errno ? errno : EIO));
        return 0;
    }
    *out = buf;
    *out_len = len;
    return 1;
}

// Read and decode; reports the earliest problem: an I/O error, an empty file, a NUL byte or the
// first invalid UTF-8 sequence (whichever comes first in the file).
static int load_text(const char *path, uint32_t **cps, size_t *n, char *err, size_t errlen) {
    unsigned char *bytes;
    size_t len;
    *cps = NULL;
    *n = 0;
    if (!read_file(path, &bytes, &len, err, errlen)) return 0;
    if (len == 0) {
        free(bytes);
        refuse(err, errlen, "data file '%s' is empty", path);
        return 0;
    }
    size_t bad = 0;
    int ok = utf8_decode(bytes, len, cps, n, &bad);
    // A NUL byte is always a single 0x00 in valid UTF-8 and never part of a multi-byte sequence,
    // so the first NUL in the raw bytes is the first U+0000 of the text.
    const unsigned char *nul = memchr(bytes, 0, ok ? len : bad);
    size_t nul_off = nul ? (size_t)(nul - bytes) : 0;
    free(bytes);
    if (nul) {
        free(*cps);
        *cps = NULL;
        *n = 0;
        refuse(err, errlen, "data file '%s' contains a NUL byte at offset %zu (binary file?)", path,
               nul_off);
        return 0;
    }
    if (!ok) {
        refuse(err, errlen, "data file '%s' is not valid UTF-8 at byte offset %zu", path, bad);
        return 0;
    }
    return 1;
}

// Split and check that both parts hold at least min_len tokens.
static int split(Dataset *ds, const char *path, double val_fraction, int min_len, char *err,
                 size_t errlen) {
    size_t n = ds->n_tokens;
    double t = floor((double)n * (1.0 - val_fraction));
    size_t n_train = t <= 0.0 ? 0 : t >= (double)n ? n : (size_t)t;
    size_t n_val = n - n_train;
    size_t need = min_len > 0 ? (size_t)min_len : 0;
    int train_short = n_train < need, val_short = n_val < need;
    if (train_short && val_short) {
        refuse(err, errlen,
               "data file '%s' has %zu characters: the training split (%zu) and the validation "
               "split (%zu) "
               "are shorter than %d characters, the least a window of block_size needs; use a "
               "longer text or a "
               "smaller model.block_size",
               path, n, n_train, n_val, min_len);
        return 0;
    }
    if (train_short) {
        refuse(
            err, errlen,
            "data file '%s' has %zu characters: the training split (%zu) is shorter than %d "
            "characters, the "
            "least a window of block_size needs; use a longer text or a smaller data.val_fraction",
            path, n, n_train, min_len);
        return 0;
    }
    if (val_short) {
        refuse(
            err, errlen,
            "data file '%s' has %zu characters: the validation split (%zu) is shorter than %d "
            "characters, the "
            "least a window of block_size needs; use a longer text or a larger data.val_fraction",
            path, n, n_val, min_len);
        return 0;
    }
    ds->n_train = n_train;
    return 1;
}

static int check_val_fraction(double val_fraction, char *err, size_t errlen) {
    if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
        refuse(err, errlen, "data.val_fraction must be in [0, 1), got %g", val_fraction);
        return 0;
    }
    return 1;
}

// Map code points to token ids: a direct table for Latin-1 (nearly all of a typical text), binary
// search above. Returns the index of the first code point outside the vocabulary, or n.
static size_t tokenize(const Vocab *v, const uint32_t *cps, size_t n, int *tokens) {
    int small[256];
    for (uint32_t c = 0; c < 256; c++) small[c] = vocab_lookup(v, c);
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = cps[i];
        int id = cp < 256 ? small[cp] : vocab_lookup(v, cp);
        if (id < 0) return i;
        tokens[i] = id;
    }
    return n;
}

static int load_common(Dataset *ds, const char *path, double val_fraction, int min_len,
                       const Vocab *vocab, char *err, size_t errlen) {
    memset(ds, 0, sizeof *ds);
    if (err && errlen) err[0] = '\0';
    if (!check_val_fraction(val_fraction, err, errlen)) return 0;
    if (vocab) {
        if (!vocab->chars || vocab->vocab_size < 1) {
            refuse(err, errlen, "cannot tokenize data file '%s': the given vocabulary is empty",
                   path);
            return 0;
        }
        for (int i = 0; i < vocab->vocab_size; i++) {
            uint32_t c = vocab->chars[i];
            if (!unicode_scalar(c) || (i > 0 && c <= vocab->chars[i - 1])) {
                refuse(err, errlen,
                       "cannot tokenize data file '%s': the given vocabulary is not a sorted list "
                       "of distinct "
                       "Unicode characters (entry %d is 0x%lX)",
                       path, i, (unsigned long)c);
                return 0;
            }
        }
    }

    uint32_t *cps;
    size_t n;
    if (!load_text(path, &cps, &n, err, errlen)) return 0;

    if (vocab) {
        ds->vocab.vocab_size = vocab->vocab_size;
        ds->vocab.chars = xmalloc((size_t)vocab->vocab_size * sizeof(uint32_t), "vocabulary");
        memcpy(ds->vocab.chars, vocab->chars, (size_t)vocab->vocab_size * sizeof(uint32_t));
    } else {
        vocab_build(&ds->vocab, cps, n);
        if (ds->vocab.vocab_size < 2) {
            char d[32];
            describe_cp(ds->vocab.chars[0], d, sizeof d);
            refuse(err, errlen,
                   "data file '%s' needs at least 2 distinct characters (it has only %s)", path, d);
            free(cps);
            dataset_free(ds);
            return 0;
        }
    }

    size_t tok_bytes;
    if (!mul_size(n, sizeof(int), &tok_bytes)) die(EXIT_RUNTIME, "size overflow allocating tokens");
    ds->tokens = xmalloc(tok_bytes, "tokens");
    ds->n_tokens = n;
    size_t bad = tokenize(&ds->vocab, cps, n, ds->tokens);
    if (bad < n) {
        size_t off = 0;
        for (size_t i = 0; i < bad; i++) off += utf8_len(cps[i]);
        char d[32];
        describe_cp(cps[bad], d, sizeof d);
        refuse(err, errlen,
               "data file '%s' contains the character %s at byte offset %zu, which is not in the "
               "vocabulary "
               "(%d characters)",
               path, d, off, ds->vocab.vocab_size);
        free(cps);
        dataset_free(ds);
        return 0;
    }
    free(cps);

    if (!split(ds, path, val_fraction, min_len, err, errlen)) {
        dataset_free(ds);
        return 0;
    }
    return 1;
}

int dataset_load(Dataset *ds, const char *path, double val_fraction, int min_len, char *err,
                 size_t errlen) {
    return load_common(ds, path, val_fraction, min_len, NULL, err, errlen);
}

int dataset_load_with_vocab(Dataset *ds, const char *path, double val_fraction, int min_len,
                            const Vocab *vocab, char *err, size_t errlen) {
    return load_common(ds, path, val_fraction, min_len, vocab, err, errlen);
}

void dataset_free(Dataset *ds) {
    if (!ds) return;
    vocab_free(&ds->vocab);
    free(ds->tokens);
    ds->tokens = NULL;
    ds->n_tokens = 0;
    ds->n_train = 0;
}

void sample_batch(const Dataset *ds, int split_val, Rng *rng, int B, int T, int *x, int *y) {
    size_t lo = split_val ? ds->n_train : 0, hi = split_val ? ds->n_tokens : ds->n_train;
    size_t span = hi - lo - (size_t)T;  // valid starts: [lo, hi - T - 1]
    for (int b = 0; b < B; b++) {
        size_t start = lo + (size_t)rng_below(rng, span);
        for (int t = 0; t < T; t++) {
            x[b * T + t] = ds->tokens[start + t];
            y[b * T + t] = ds->tokens[start + t + 1];
        }
    }
}
