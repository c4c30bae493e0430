// run/safetensors.c: a safetensors file under nanoGPT's tensor names read, checked and converted
// into a checkpoint, and a model file of either kind opened by its content (see run/safetensors.h
// and docs/FORMAT.md).
#define _POSIX_C_SOURCE 200809L
#include "run/safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "base/config.h"
#include "base/outfile.h"
#include "run/safetensors_names.h"  // NameRow, row_of, their_name: nanoGPT's names of the tensors

// nanoGPT's Linear biases (bias=True) and its causal-mask buffer: no weights of this architecture
static const char *const LINEAR_BIASES[] = {"attn.c_attn.bias", "attn.c_proj.bias", "mlp.c_fc.bias",
                                            "mlp.c_proj.bias"};
#define MASK_BUFFER "attn.bias"
// The reference implementation's bound on the header (100 MB).
#define HEADER_MAX 100000000ull
// The most tensors a file of this architecture holds: per layer ln_1 and ln_2 (weight, bias),
// c_attn, attn.c_proj, c_fc, mlp.c_proj and their four Linear biases, QK-norm's q_norm and k_norm
// (weight, bias) (16), at most 64 layers; wte, wpe, lm_head and ln_f's weight and bias (5).
#define MAX_LAYERS  64
#define MAX_TENSORS (16 * MAX_LAYERS + 5)
static int is_qk_norm(const char *theirs) {
    return strncmp(theirs, "attn.q_norm.", 12) == 0 || strncmp(theirs, "attn.k_norm.", 12) == 0;
}

typedef enum { ST_F32, ST_F16, ST_BF16, ST_F64 } StDtype;
static const struct {
    const char *name;
    int bytes;
} ST_DTYPES[] = {{"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}};

typedef struct {
    const char *name;
    int dtype;
    int ndim;
    uint64_t shape[8];
    uint64_t count, begin, end;  // element count, byte range in the data
    int used;
} Entry;

// A JSON number that is a whole number in [0, 2^53].
static int whole_number(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return 0;
    *out = (uint64_t)d;
    return 1;
}

// Parse and check one tensor entry of the header.
static int parse_entry(const cJSON *j, Entry *e, uint64_t data_len, const char *path, char *err,
                       size_t errlen) {
    memset(e, 0, sizeof *e);
    e->name = j->string;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype"),
                *sh = cJSON_GetObjectItemCaseSensitive(j, "shape"),
                *of = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
    if (!cJSON_IsObject(j) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of))
        return refuse(err, errlen,
                      "'%s': tensor '%s' in its header lacks a dtype, shape or data_offsets", path,
                      e->name);
    e->dtype = -1;
    for (int i = 0; i < (int)(sizeof ST_DTYPES / sizeof ST_DTYPES[0]); i++)
        if (strcmp(dt->valuestring, ST_DTYPES[i].name) == 0) e->dtype = i;
    if (e->dtype < 0)
        return refuse(
            err, errlen,
            "'%s': tensor '%s' has dtype %s; expected F32 (F16, BF16 and F64 are converted)", path,
            e->name, dt->valuestring);
    e->ndim = cJSON_GetArraySize(sh);
    if (e->ndim > 8)
        return refuse(err, errlen, "'%s': tensor '%s' has %d dimensions (at most 8)", path, e->name,
                      e->ndim);
    e->count = 1;
    for (int d = 0; d < e->ndim; d++) {
        if (!whole_number(cJSON_GetArrayItem(sh, d), &e->shape[d]) || e->shape[d] > 0xFFFFFFFFull)
            return refuse(err, errlen, "'%s': tensor '%s' has a shape that is not a list of sizes",
                          path, e->name);
        if (e->shape[d] && e->count > UINT64_MAX / 8 / e->shape[d])
            return refuse(err, errlen, "'%s': tensor '%s' is too large", path, e->name);
        e->count *= e->shape[d];
    }
    if (cJSON_GetArraySize(of) != 2 || !whole_number(cJSON_GetArrayItem(of, 0), &e->begin) ||
        !whole_number(cJSON_GetArrayItem(of, 1), &e->end) || e->begin > e->end)
        return refuse(err, errlen, "'%s': tensor '%s' has data_offsets that are not [begin, end]",
                      path, e->name);
    if (e->end > data_len)
        return refuse(
            err, errlen,
            "'%s': tensor '%s' ends at data offset %llu, beyond the %llu bytes of data in the file",
            path, e->name, (unsigned long long)e->end, (unsigned long long)data_len);
    uint64_t bytes = e->count * (uint64_t)ST_DTYPES[e->dtype].bytes;
    if (e->end - e->begin != bytes)
        return refuse(err, errlen,
                      "'%s': tensor '%s' of shape and dtype %s takes %llu bytes but its "
                      "data_offsets span %llu",
                      path, e->name, ST_DTYPES[e->dtype].name, (unsigned long long)bytes,
                      (unsigned long long)(e->end - e->begin));
    return 1;
}

static int by_begin(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    return x->begin < y->begin   ? -1
           : x->begin > y->begin ? 1
                                 : (x->end > y->end) - (x->end < y->end);
}

// The tensors cover the data exactly: no overlap, no hole, nothing after the last.
static int check_coverage(Entry *e, int n, uint64_t data_len, const char *path, char *err,
                          size_t errlen) {
    qsort(e, (size_t)n, sizeof *e, by_begin);
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].begin < at)
            return refuse(err, errlen, "'%s': tensors '%s' and '%s' overlap in the data", path,
                          e[i - 1].name, e[i].name);
        if (e[i].begin > at)
            return refuse(err, errlen, "'%s': the data bytes %llu to %llu belong to no tensor",
                          path, (unsigned long long)at, (unsigned long long)e[i].begin);
        at = e[i].end;
    }
    if (at != data_len)
        return refuse(err, errlen,
                      "'%s': %llu bytes of data after the last tensor belong to no tensor", path,
                      (unsigned long long)(data_len - at));
    return 1;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const Entry *)a)->name, ((const Entry *)b)->name);
}

// The entries sorted by name (find_entry searches them by halves).
static const Entry *find_entry(Entry *e, int n, const char *name) {
    Entry key;
    key.name = name;
    Entry *hit = bsearch(&key, e, (size_t)n, sizeof *e, by_name);
    if (hit) hit->used = 1;
    return hit;
}

// The first name that an object's members repeat (the members sorted by name: O(n log n)), or NULL.
static int by_string(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}
static const char *repeated_name(const cJSON *obj) {
    size_t n = 0;
    for (const cJSON *j = obj->child; j; j = j->next) n++;
    const char **names = xmalloc((n + 1) * sizeof *names, "safetensors header");
    n = 0;
    for (const cJSON *j = obj->child; j; j = j->next) names[n++] = j->string;
    qsort(names, n, sizeof *names, by_string);
    const char *twice = NULL;
    for (size_t i = 1; i < n && !twice; i++)
        if (strcmp(names[i - 1], names[i]) == 0) twice = names[i];
    free(names);
    return twice;
}

// Element j of an entry's data, as a double.
static double entry_value(const Entry *e, const unsigned char *data, uint64_t j) {
    const unsigned char *p = data + e->begin + j * (uint64_t)ST_DTYPES[e->dtype].bytes;
    switch (e->dtype) {
    case ST_F32: {
        float x;
        memcpy(&x, p, 4);
        return x;
    }
    case ST_F64: {
        double x;
        memcpy(&x, p, 8);
        return x;
    }
    case ST_BF16: {
        uint32_t bits = (uint32_t)(p[0] | p[1] << 8) << 16;
        float x;
        memcpy(&x, &bits, 4);
        return x;
    }
    default: {  // F16: sign, 5 exponent bits (bias 15), 10 fraction bits
        unsigned h = p[0] | p[1] << 8, ex = (h >> 10) & 31, fr = h & 1023;
        double v = ex == 0    ? ldexp(fr, -24)
                   : ex == 31 ? (fr ? NAN : INFINITY)
                              : ldexp(fr + 1024, (int)ex - 25);
        return (h & 0x8000) ? -v : v;
    }
    }
}

// The shape the model expects of a tensor, or 0 when it must be refused by its name. `layer` is
// the layer of a "transformer.h.N." name (suffix after it), -1 otherwise.
static int expected_shape(const char *suffix, int layer, const ModelDims *d, uint64_t shape[2],
                          int *ndim) {
    uint64_t V = (uint64_t)d->vocab_size, T = (uint64_t)d->block_size, C = (uint64_t)d->n_embd;
    static const char *const names[] = {"transformer.wte.weight",
                                        "transformer.wpe.weight",
                                        LM_HEAD,
                                        "ln_1.weight",
                                        "ln_1.bias",
                                        "ln_2.weight",
                                        "ln_2.bias",
                                        "transformer.ln_f.weight",
                                        "transformer.ln_f.bias",
                                        "attn.c_attn.weight",
                                        "attn.c_proj.weight",
                                        "mlp.c_fc.weight",
                                        "mlp.c_proj.weight",
                                        "attn.c_attn.bias",
                                        "attn.c_proj.bias",
                                        "mlp.c_fc.bias",
                                        "mlp.c_proj.bias"};
    const uint64_t shapes[][2] = {{V, C},     {T, C},     {V, C}, {C, 0},     {C, 0}, {C, 0},
                                  {C, 0},     {C, 0},     {C, 0}, {3 * C, C}, {C, C}, {4 * C, C},
                                  {C, 4 * C}, {3 * C, 0}, {C, 0}, {4 * C, 0}, {C, 0}};
    const int in_layer_from = 3, in_layer_to = 7, layer_from = 9;
    // QK-norm's tensors (hd) in a layer: the weights under either norm, the biases under LayerNorm;
    // with d's sizes 0 (the check of names alone, before the dimensions are known) any of them
    if (layer >= 0 && is_qk_norm(suffix) &&
        (!strcmp(suffix + 12, "weight") || !strcmp(suffix + 12, "bias"))) {
        int bias = !strcmp(suffix + 12, "bias");
        if (d->n_head > 0 &&
            (d->qk_norm == QK_NORM_NONE || (bias && d->qk_norm != QK_NORM_LAYERNORM)))
            return 0;
        shape[0] = d->n_head > 0 ? (uint64_t)(d->n_embd / d->n_head) : 0;
        shape[1] = 0;
        *ndim = 1;
        return 1;
    }
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
        int layered = (i >= in_layer_from && i < in_layer_to) || i >= layer_from;
        if (layered != (layer >= 0) || strcmp(suffix, names[i]) != 0) continue;
        shape[0] = shapes[i][0];
        shape[1] = shapes[i][1];
        *ndim = shapes[i][1] ? 2 : 1;
        return 1;
    }
    return 0;
}

// Split "transformer.h.N.rest" into N and rest; returns 0 for another name.
static int layer_name(const char *name, int *layer, const char **rest) {
    const char *p = "transformer.h.";
    size_t n = strlen(p);
    if (strncmp(name, p, n) != 0 || name[n] < '0' || name[n] > '9') return 0;
    long v = 0;
    const char *q = name + n;
    while (*q >= '0' && *q <= '9' && v < 1000) v = v * 10 + (*q++ - '0');
    if (*q != '.' || (q - (name + n) > 1 && name[n] == '0')) return 0;
    *layer = (int)v;
    *rest = q + 1;
    return 1;
}

static const char *meta_string(const cJSON *meta, const char *key) {
    const cJSON *j = meta ? cJSON_GetObjectItemCaseSensitive(meta, key) : NULL;
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

// The vocabulary: the metadata's "vocab" (the characters in order), else the distinct characters
// of vocab_text.
static int read_vocab(Vocab *v, const cJSON *meta, const char *vocab_text, int V, const char *path,
                      char *err, size_t errlen) {
    const char *chars = meta_string(meta, "vocab");
    if (chars && vocab_text)
        return refuse(err, errlen,
                      "'%s' has its own vocabulary in its metadata: --vocab-from '%s' is for a "
                      "file without one;"
                      " drop it",
                      path, vocab_text);
    uint32_t *cps = NULL;
    size_t n = 0, bad = 0;
    if (chars) {
        if (!utf8_decode((const unsigned char *)chars, strlen(chars), &cps, &n, &bad))
            return refuse(err, errlen, "'%s': its metadata's vocab is not valid UTF-8 (byte %zu)",
                          path, bad);
        for (size_t i = 0; i < n; i++)
            if (cps[i] == 0 || (i > 0 && cps[i] <= cps[i - 1])) {
                free(cps);
                return refuse(
                    err, errlen,
                    "'%s': its metadata's vocab is not the distinct characters in ascending order "
                    "(character %zu)",
                    path, i);
            }
        v->chars = cps;
        v->vocab_size = (int)n;
    } else if (vocab_text) {
        uint64_t size;
        const char *why;
        FILE *f = fopen_regular(vocab_text, &size, &why);
        if (!f) return refuse(err, errlen, "cannot read '%s': %s", vocab_text, why);
        char msg[64];
        if (!memory_fits((double)size * 5, "the vocabulary's text", msg, sizeof msg)) {
            fclose(f);
            return refuse(err, errlen, "'%s': too large", vocab_text);
        }
        unsigned char *bytes = xmalloc(size + 1, "vocabulary text");
        size_t got = fread(bytes, 1, size, f);
        fclose(f);
        if (got != size) {
            free(bytes);
            return refuse(err, errlen, "cannot read '%s': short read", vocab_text);
        }
        int ok = utf8_decode(bytes, size, &cps, &n, &bad);
        free(bytes);
        if (!ok) return refuse(err, errlen, "'%s' is not valid UTF-8 (byte %zu)", vocab_text, bad);
        vocab_build(v, cps, n);
        free(cps);
    } else {
        return refuse(
            err, errlen,
            "'%s' has no vocabulary in its metadata: name the text the model was built from "
            "with --vocab-from TEXT",
            path);
    }
    if (v->vocab_size != V) {
        int got = v->vocab_size;
        vocab_free(v);
        return refuse(
            err, errlen,
            "'%s': its vocabulary (%s) has %d characters but transformer.wte.weight has %d rows",
            path, chars ? "metadata" : vocab_text, got, V);
    }
    return 1;
}

// The configuration: the metadata's "config" (a file this program wrote), else the defaults with
// the file's dimensions. Either must agree with the tensors.
static char *read_config(const cJSON *meta, const ModelDims *d, const char *path, char *err,
                         size_t errlen) {
    Config c;
    char cerr[512];
    config_defaults(&c);
    const char *json = meta_string(meta, "config");
    if (json) {
        if (!config_load_json(&c, json, strlen(json), path, cerr, sizeof cerr) ||
            !config_finalize(&c, cerr, sizeof cerr)) {
            refuse(err, errlen, "'%s': its metadata's config is not a valid configuration: %s",
                   path, cerr);
            return NULL;
        }
        if (c.n_layer != d->n_layer || c.n_head != d->n_head || c.n_embd != d->n_embd ||
            c.block_size != d->block_size) {
            refuse(err, errlen,
                   "'%s' is inconsistent: its metadata's config (n_layer %d, n_head %d, n_embd %d, "
                   "block_size %d) "
                   "disagrees with its tensors (%d, %d, %d, %d)",
                   path, c.n_layer, c.n_head, c.n_embd, c.block_size, d->n_layer, d->n_head,
                   d->n_embd, d->block_size);
            return NULL;
        }
    } else {
        snprintf(c.name, sizeof c.name, "imported");
        c.n_layer = d->n_layer;
        c.n_head = d->n_head;
        c.n_embd = d->n_embd;
        c.block_size = d->block_size;
        if (!config_finalize(&c, cerr, sizeof cerr)) {
            refuse(err, errlen, "'%s': its dimensions are not a valid configuration: %s", path,
                   cerr);
            return NULL;
        }
    }
    return config_to_json(&c);
}

// The model's dimensions from the tensors and the metadata's n_head.
static int read_dims(ModelDims *d, Entry *e, int n, const cJSON *meta, const char *path, char *err,
                     size_t errlen) {
    const Entry *wte = find_entry(e, n, "transformer.wte.weight"),
                *wpe = find_entry(e, n, "transformer.wpe.weight");
    if (!wte || !wpe)
        return refuse(err, errlen, "'%s' has no tensor '%s'", path,
                      !wte ? "transformer.wte.weight" : "transformer.wpe.weight");
    if (wte->ndim != 2 || wpe->ndim != 2 || wte->shape[1] != wpe->shape[1])
        return refuse(
            err, errlen,
            "'%s': transformer.wte.weight and transformer.wpe.weight must be matrices of the same "
            "width",
            path);
    int n_layer = 0;
    for (int i = 0; i < n; i++) {
        int l;
        const char *rest;
        if (layer_name(e[i].name, &l, &rest) && l + 1 > n_layer) n_layer = l + 1;
    }
    const char *nh = meta_string(meta, "n_head");
    long long heads = 0;
    if (!nh)
        return refuse(
            err, errlen,
            "'%s' has no n_head in its metadata (the head count cannot be read from the shapes)",
            path);
    if (!parse_integer_text(nh, &heads) || heads < 1 || heads > 256)
        return refuse(err, errlen,
                      "'%s': its metadata's n_head is '%s'; expected an integer from 1 to 256",
                      path, nh);
    // the limits of the configuration keys and of checkpoint_open
    static const uint64_t lim[5] = {0x110000, 65536, 64, 256, 8192};
    uint64_t dv[5] = {wte->shape[0], wpe->shape[0], (uint64_t)n_layer, (uint64_t)heads,
                      wte->shape[1]};
    static const char *const what[5] = {"vocab_size", "block_size", "n_layer", "n_head", "n_embd"};
    for (int i = 0; i < 5; i++)
        if (dv[i] < 1 || dv[i] > lim[i])
            return refuse(err, errlen, "'%s' has an invalid %s (%llu; allowed 1..%llu)", path,
                          what[i], (unsigned long long)dv[i], (unsigned long long)lim[i]);
    *d = (ModelDims){(int)dv[0], (int)dv[1], (int)dv[2], (int)dv[3], (int)dv[4], QK_NORM_NONE};
    // the metadata's other dimensions, when it states them, are the tensors' own
    for (int i = 0; i < 5; i++) {
        const char *v = meta_string(meta, what[i]);
        long long x;
        if (i == 3 || !v) continue;
        if (!parse_integer_text(v, &x) || x != (long long)dv[i])
            return refuse(err, errlen, "'%s': its metadata's %s is '%s' but its tensors give %llu",
                          path, what[i], v, (unsigned long long)dv[i]);
    }
    if (d->n_embd % d->n_head)
        return refuse(err, errlen, "'%s': n_embd %d is not a multiple of n_head %d", path,
                      d->n_embd, d->n_head);
    return 1;
}

// The model's QK-norm: the metadata config's model.qk_norm (none without a config, as nanoGPT's
// files are); a qk_norm entry of the metadata must agree with it.
static int read_qk_norm(ModelDims *d, const cJSON *meta, const char *path, char *err,
                        size_t errlen) {
    Config c;
    char cerr[512];
    config_defaults(&c);
    const char *json = meta_string(meta, "config"), *stated = meta_string(meta, "qk_norm");
    if (json && !config_load_json(&c, json, strlen(json), path, cerr, sizeof cerr))
        return refuse(err, errlen, "'%s': its metadata's config is not a valid configuration: %s",
                      path, cerr);
    d->qk_norm = gpt_qk_norm_kind(c.qk_norm);
    if (stated && strcmp(stated, gpt_qk_norm_name(d->qk_norm)) != 0)
        return refuse(err, errlen,
                      "'%s' is inconsistent: its metadata's qk_norm is '%s' but its config's "
                      "model.qk_norm is "
                      "'%s'",
                      path, stated, gpt_qk_norm_name(d->qk_norm));
    return 1;
}

// A shape as "[48,16]", "[16]", or "[]" for a 0-D tensor.
static void shape_text(char *buf, size_t n, const uint64_t *shape, int ndim) {
    size_t w = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && w < n; d++)
        w += (size_t)snprintf(buf + w, n - w, "%s%llu", d ? "," : "", (unsigned long long)shape[d]);
    if (w < n) snprintf(buf + w, n - w, "]");
}

// Every entry has a name and shape the model knows; the Linear biases are all zero.
static int check_entries(Entry *e, int n, const ModelDims *d, const unsigned char *data,
                         const char *path, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        int l = -1;
        const char *rest = e[i].name;
        if (layer_name(e[i].name, &l, &rest) && l >= d->n_layer) l = -1;
        if (l >= 0 && strcmp(rest, MASK_BUFFER) == 0)
            return refuse(
                err, errlen,
                "'%s': tensor '%s' is nanoGPT's causal-mask buffer, not a weight: leave it out "
                "(tools/nanogpt_to_safetensors.py does)",
                path, e[i].name);
        uint64_t shape[2];
        int ndim;
        if (!expected_shape(rest, l, d, shape, &ndim)) {
            if (l >= 0 && is_qk_norm(rest))
                return refuse(
                    err, errlen,
                    "'%s' has a tensor '%s' that its model.qk_norm '%s' does not have (the norms "
                    "must match the config)",
                    path, e[i].name, gpt_qk_norm_name(d->qk_norm));
            return refuse(err, errlen,
                          "'%s' has an extra tensor '%s' (not a weight of nanoGPT's GPT)", path,
                          e[i].name);
        }
        if (e[i].ndim != ndim || e[i].shape[0] != shape[0] ||
            (ndim == 2 && e[i].shape[1] != shape[1])) {
            char has[200], wants[64];
            shape_text(has, sizeof has, e[i].shape, e[i].ndim);
            shape_text(wants, sizeof wants, shape, ndim);
            return refuse(
                err, errlen,
                "'%s': tensor '%s' has %d dimension(s) %s; the model (n_embd %d, vocab %d, "
                "block_size %d) expects %s",
                path, e[i].name, e[i].ndim, has, d->n_embd, d->vocab_size, d->block_size, wants);
        }
        for (int b = 0; l >= 0 && b < (int)(sizeof LINEAR_BIASES / sizeof LINEAR_BIASES[0]); b++) {
            if (strcmp(rest, LINEAR_BIASES[b]) != 0) continue;
            for (uint64_t j = 0; j < e[i].count; j++)
                if (entry_value(&e[i], data, j) != 0)
                    return refuse(
                        err, errlen,
                        "'%s': tensor '%s' is a Linear bias (nanoGPT's bias=True) with a value "
                        "other than 0 (%g at index %llu); this architecture has no Linear biases",
                        path, e[i].name, entry_value(&e[i], data, j), (unsigned long long)j);
            e[i].used = 1;
        }
        for (uint64_t j = 0; j < e[i].count; j++) {
            double x = entry_value(&e[i], data, j);
            if (!isfinite(x) || fabs(x) > 3.4028234663852886e38)
                return refuse(
                    err, errlen,
                    "'%s': tensor '%s' holds a value float32 cannot hold (%g at index %llu)", path,
                    e[i].name, x, (unsigned long long)j);
        }
    }
    return 1;
}

// The model's tensors, converted: ck->file gets one float32 record per tensor of the model.
static int convert_tensors(Checkpoint *ck, Entry *e, int n, const unsigned char *data,
                           const char *path, char *err, size_t errlen) {
    TensorInfo *ti = NULL;
    int nt = gpt_tensor_table(&ck->dims, &ti);
    if (nt == 0)
        return refuse(err, errlen, "'%s': its dimensions overflow the address space", path);
    size_t total = 0;
    for (int i = 0; i < nt; i++) total += ti[i].size;
    TFile *f = &ck->file;
    f->buf = xmalloc(total * sizeof(float), "imported tensors");
    f->len = total * sizeof(float);
    f->records = xcalloc((size_t)nt, sizeof(TRecord), "imported tensors");
    f->n_records = nt;
    float *out = (float *)f->buf;
    int ok = 1;
    // the LayerNorm biases (the blocks', the final one's, QK-norm's) are all in the file or none
    // is: one left out of a file that has the others would be read as zeros the model never had
    const char *ln_biases = NULL;
    for (int i = 0; i < nt && !ln_biases; i++) {
        int l;
        const NameRow *r = row_of(ti[i].name, &l);
        char theirs[96];
        their_name(theirs, sizeof theirs, r, l);
        if (is_layernorm_bias(r) && find_entry(e, n, theirs))
            ln_biases = find_entry(e, n, theirs)->name;
    }
    for (int i = 0; i < nt && ok; i++) {
        int l;
        const NameRow *r = row_of(ti[i].name, &l);
        char theirs[96];
        their_name(theirs, sizeof theirs, r, l);
        const Entry *src = find_entry(e, n, theirs);
        float *dst = out + ti[i].offset;
        size_t d0 = (size_t)ti[i].shape[0], d1 = ti[i].ndim == 2 ? (size_t)ti[i].shape[1] : 1;
        if (!src && is_layernorm_bias(r) && ln_biases) {
            ok = refuse(
                err, errlen,
                "'%s' has no tensor '%s' but has other LayerNorm biases (%s): a file holds every"
                " LayerNorm bias or none (nanoGPT's bias=False)",
                path, theirs, ln_biases);
        } else if (!src && is_layernorm_bias(r)) {
            memset(dst, 0,
                   ti[i].size *
                       sizeof(float));  // nanoGPT's bias=False: no LayerNorm bias is a zero one
        } else if (!src && is_qk_norm(r->theirs)) {
            ok = refuse(
                err, errlen,
                "'%s' has no tensor '%s', which its model.qk_norm '%s' needs (the norms must match "
                "the config)",
                path, theirs, gpt_qk_norm_name(ck->dims.qk_norm));
        } else if (!src) {
            ok = refuse(err, errlen, "'%s' has no tensor '%s'", path, theirs);
        } else {
            for (size_t a = 0; a < d0; a++)
                for (size_t b = 0; b < d1; b++) {
                    uint64_t j = r->layout == TRANSPOSED ? b * d0 + a
                                 : r->layout == QKV_ROWS ? ((uint64_t)r->part * d1 + b) * d0 + a
                                                         : a * d1 + b;
                    dst[a * d1 + b] = (float)entry_value(src, data, j);
                }
        }
        TRecord *rec = &f->records[i];
        snprintf(rec->name, sizeof rec->name, "%s", ti[i].name);
        rec->dtype = DT_F32;
        rec->ndim = ti[i].ndim;
        rec->shape[0] = (uint32_t)ti[i].shape[0];
        rec->shape[1] = (uint32_t)(ti[i].ndim == 2 ? ti[i].shape[1] : 0);
        rec->count = ti[i].size;
        rec->data = dst;
    }
    // the LM head, when the file has one, is the embedding (tied)
    const Entry *head = ok ? find_entry(e, n, LM_HEAD) : NULL,
                *wte = find_entry(e, n, "transformer.wte.weight");
    for (uint64_t j = 0; head && j < head->count; j++)
        if ((float)entry_value(head, data, j) != (float)entry_value(wte, data, j)) {
            ok = refuse(
                err, errlen,
                "'%s': its lm_head.weight differs from transformer.wte.weight (index %llu); this "
                "architecture ties them",
                path, (unsigned long long)j);
            break;
        }
    free(ti);
    return ok;
}

int safetensors_open(Checkpoint *ck, const char *path, const char *vocab_text, char *err,
                     size_t errlen) {
    memset(ck, 0, sizeof *ck);
    uint64_t size;
    const char *why;
    const uint16_t one = 1;
    if (*(const unsigned char *)&one != 1)
        return refuse(err, errlen, "'%s': big-endian hosts are not supported", path);
    FILE *f = fopen_regular(path, &size, &why);
    if (!f) return refuse(err, errlen, "cannot read '%s': %s", path, why);
    unsigned char len8[8];
    uint64_t hlen = 0;
    if (size < 8 || fread(len8, 1, 8, f) != 8) {
        fclose(f);
        return refuse(
            err, errlen,
            "'%s' is too short for a safetensors file (%llu bytes; it starts with an 8-byte header "
            "length)",
            path, (unsigned long long)size);
    }
    for (int b = 0; b < 8; b++) hlen |= (uint64_t)len8[b] << (8 * b);
    if (hlen < 2 || hlen > HEADER_MAX || hlen > size - 8) {
        fclose(f);
        return refuse(err, errlen,
                      "'%s' has a header length of %llu bytes, but %llu follow it (a safetensors "
                      "header holds "
                      "2 to %llu bytes of JSON)",
                      path, (unsigned long long)hlen, (unsigned long long)(size - 8),
                      (unsigned long long)HEADER_MAX);
    }
    char msg[256];
    if (!memory_fits((double)size * 2, "reading the file", msg, sizeof msg)) {
        fclose(f);
        return refuse(err, errlen, "'%s': %s", path, msg);
    }
    unsigned char *buf = xmalloc(size, "safetensors file");
    memcpy(buf, len8, 8);
    size_t got = fread(buf + 8, 1, size - 8, f);
    fclose(f);
    if (got != size - 8) {
        free(buf);
        return refuse(err, errlen, "cannot read '%s': short read", path);
    }
    const char *hdr = (const char *)buf + 8;
    if (hdr[0] != '{' || utf8_invalid_offset((const unsigned char *)hdr, hlen) != hlen ||
        memchr(hdr, 0, hlen)) {
        free(buf);
        return refuse(err, errlen, "'%s': its header is not a UTF-8 JSON object", path);
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, hlen, &end, 0);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        free(buf);
        return refuse(err, errlen, "'%s': its header is not valid JSON", path);
    }
    // the object fills the header; only whitespace may pad it
    size_t after = end ? (size_t)(end - hdr) : hlen, extra = after;
    while (extra < hlen && strchr(" \t\r\n", hdr[extra])) extra++;
    if (extra < hlen) {
        cJSON_Delete(root);
        free(buf);
        return refuse(err, errlen,
                      "'%s': its header has %llu more bytes after its JSON object (from header "
                      "byte %zu); only "
                      "spaces may follow the object",
                      path, (unsigned long long)(hlen - after), after);
    }
    uint64_t data_len = size - 8 - hlen;
    const unsigned char *data = buf + 8 + hlen;
    int n = 0, ok = 1;
    const cJSON *meta = NULL;
    for (const cJSON *j = root->child; j; j = j->next) n++;
    const char *twice = repeated_name(root);
    if (twice)
        ok = refuse(err, errlen, "'%s' names '%s' twice in its header; each name is given once",
                    path, twice);
    else if (n > MAX_TENSORS + 1)
        ok = refuse(err, errlen,
                    "'%s' has %d entries in its header; a model of at most %d layers has at most "
                    "%d tensors",
                    path, n, MAX_LAYERS, MAX_TENSORS);
    Entry *e = xcalloc((size_t)n + 1, sizeof *e, "safetensors header");
    n = 0;
    for (const cJSON *j = root->child; j && ok; j = j->next) {
        if (strcmp(j->string, "__metadata__") == 0) {
            meta = j;
            if (!cJSON_IsObject(j)) {
                ok =
                    refuse(err, errlen, "'%s': its __metadata__ is not an object of strings", path);
                break;
            }
            for (const cJSON *m = j->child; m && ok; m = m->next)
                if (!cJSON_IsString(m))
                    ok = refuse(err, errlen, "'%s': its metadata's '%s' is not a string", path,
                                m->string);
            if (ok && (twice = repeated_name(j)))
                ok = refuse(err, errlen,
                            "'%s': its metadata names '%s' twice; each key is given once", path,
                            twice);
            continue;
        }
        // a name the model does not have is refused before its entry is read
        int l = -1;
        const char *rest = j->string;
        uint64_t shape[2];
        int ndim;
        const ModelDims none = {0, 0, 0, 0, 0, QK_NORM_NONE};
        if (layer_name(j->string, &l, &rest) && l >= MAX_LAYERS)
            ok =
                refuse(err, errlen, "'%s' has an extra tensor '%s' (a model has at most %d layers)",
                       path, j->string, MAX_LAYERS);
        else if (l >= 0 && strcmp(rest, MASK_BUFFER) == 0)
            ok = refuse(
                err, errlen,
                "'%s': tensor '%s' is nanoGPT's causal-mask buffer, not a weight: leave it out "
                "(tools/nanogpt_to_safetensors.py does)",
                path, j->string);
        else if (!expected_shape(rest, l, &none, shape, &ndim))
            ok =
                refuse(err, errlen, "'%s' has an extra tensor '%s' (not a weight of nanoGPT's GPT)",
                       path, j->string);
        if (ok) ok = parse_entry(j, &e[n++], data_len, path, err, errlen);
    }
    if (ok) ok = check_coverage(e, n, data_len, path, err, errlen);
    if (ok) qsort(e, (size_t)n, sizeof *e, by_name);
    if (ok) ok = read_dims(&ck->dims, e, n, meta, path, err, errlen);
    if (ok) ok = read_qk_norm(&ck->dims, meta, path, err, errlen);
    if (ok) ok = check_entries(e, n, &ck->dims, data, path, err, errlen);
    if (ok) {
        size_t n_params = 0, bytes = gpt_memory_bytes(&ck->dims, 1, 1, &n_params);
        ok = bytes ? memory_fits((double)bytes, "the model", msg, sizeof msg) : 0;
        if (!ok)
            refuse(err, errlen, "'%s': %s", path,
                   bytes ? msg : "its dimensions overflow the address space");
    }
    if (ok) ok = convert_tensors(ck, e, n, data, path, err, errlen);
    for (int i = 0; i < n && ok; i++)
        if (!e[i].used) ok = refuse(err, errlen, "'%s' has an extra tensor '%s'", path, e[i].name);
    if (ok) ok = read_vocab(&ck->vocab, meta, vocab_text, ck->dims.vocab_size, path, err, errlen);
    if (ok) ok = (ck->config_json = read_config(meta, &ck->dims, path, err, errlen)) != NULL;
    ck->state.best_val_loss = INFINITY;
    free(e);
    cJSON_Delete(root);
    free(buf);
    if (!ok) checkpoint_close(ck);
    return ok;
}

int model_file_open(Checkpoint *ck, const char *path, const char *vocab_text, char *err,
                    size_t errlen) {
    uint64_t size;
    const char *why;
    char magic[8] = {0};
    FILE *f = fopen_regular(path, &size, &why);
    if (f) {
        if (fread(magic, 1, 8, f) != 8) memset(magic, 0, 8);
        fclose(f);
    }
    // ./train --dump-state's file is in the checkpoints' format but holds no model
    if (f && memcmp(magic, "TGPTDUMP", 8) == 0)
        return refuse(
            err, errlen,
            "'%s' is a debug dump of ./train --dump-state (TGPTDUMP), not a model: expected a "
            "checkpoint (TGPTCKPT) or a safetensors file",
            path);
    if (f && memcmp(magic, "TGPTCKPT", 8) != 0 && size >= 9)
        return safetensors_open(ck, path, vocab_text, err, errlen);
    // a checkpoint holds its vocabulary: a --vocab-from TEXT would be left unread
    if (vocab_text)
        return refuse(err, errlen,
                      "'%s' is a checkpoint, which holds its own vocabulary: --vocab-from '%s' is "
                      "for a safetensors"
                      " file without one; drop it",
                      path, vocab_text);
    return checkpoint_open(ck, path, err, errlen);
}
