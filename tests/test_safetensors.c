// tests/test_safetensors.c: the safetensors export and import (run/safetensors_export.c,
// run/safetensors.c): a model that travels out and back computes bit-identical logits and samples;
// nanoGPT's layout (names, transposes, the stacked c_attn, the tied head, LayerNorm biases only
// when not zero); every malformed or foreign file refused with one line naming what is wrong; the
// programs' options.
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/rng.h"
#include "model.h"
#include "run/generate.h"
#include "run/safetensors.h"
#include "programs.h"
#include "test.h"

static const char *in_dir(const char *name) {
    static char path[4][256];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", g_dir, name);
    return path[k];
}

// ---- a small model ----
static const ModelDims DIMS = {
    5, 8, 2, 2, 8, QK_NORM_NONE};  // vocab, block_size, n_layer, n_head, n_embd, qk_norm

static char *config_of(const ModelDims *d) {
    Config c;
    char err[256];
    config_defaults(&c);
    snprintf(c.name, sizeof c.name, "st");
    c.n_layer = d->n_layer, c.n_head = d->n_head, c.n_embd = d->n_embd,
    c.block_size = d->block_size;
    if (!config_finalize(&c, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return config_to_json(&c);
}

static Vocab vocab_abcde(void) {
    Vocab v = {5, malloc(5 * sizeof(uint32_t))};
    for (int i = 0; i < 5; i++) v.chars[i] = (uint32_t)('a' + i);
    return v;
}

// A model with random weights, every value a float32 (so the float64 build travels exactly too);
// ln_bias: whether its LayerNorm biases are random (else the zeros of the initialisation).
static void build_model(GPT *m, int ln_bias, uint64_t seed) {
    gpt_build(m, &DIMS, attention_causal((real)(1.0 / sqrt((double)DIMS.n_embd / DIMS.n_head))), 1,
              DIMS.block_size);
    Rng rng;
    rng_seed(&rng, seed);
    gpt_init(m, INIT_GPT2, &rng);
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        int is_bias = strstr(t->name, "_b") != NULL && t->ndim == 1;
        for (size_t j = 0; j < t->size; j++) {
            real *p = &m->params[t->offset + j];
            if (is_bias && ln_bias) *p = (real)(0.1 * rng_normal(&rng));
            if (t->ndim == 1 && !is_bias) *p = (real)(1 + 0.1 * rng_normal(&rng));
            *p = (real)(float)*p;
        }
    }
}

static const int PROMPT[6] = {0, 3, 1, 4, 2, 2};

static void logits_of(GPT *m, real *out) {
    gpt_forward(m, PROMPT, NULL, 1, 6);
    memcpy(out, m->acts.logits, 6 * DIMS.vocab_size * sizeof(real));
}

static void sample_of(GPT *m, const Vocab *v, char *buf, size_t n) {
    FILE *f = tmpfile();
    Rng rng;
    rng_seed(&rng, 42);
    generate(m, v, PROMPT, 6, 40, 0.9, 0, &rng, f);
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
}

// Export m, import it, build the imported model; returns 1 when the import succeeded.
static int round_trip(GPT *m, const char *path, GPT *back, Checkpoint *ck, char *err,
                      size_t errlen) {
    Vocab v = vocab_abcde();
    char *cfg = config_of(&DIMS);
    int n = safetensors_export(path, m, cfg, &v, err, errlen);
    free(cfg);
    free(v.chars);
    if (!n || !safetensors_open(ck, path, NULL, err, errlen)) return 0;
    gpt_build(back, &ck->dims, attention_causal(m->attn.scale), 1, DIMS.block_size);
    return checkpoint_restore(ck, back, path, err, errlen);
}

static void test_round_trip_bit_identical(void) {
    tmpdir("st");
    for (int ln_bias = 0; ln_bias < 2; ln_bias++) {
        GPT m, back;
        Checkpoint ck;
        char err[512];
        build_model(&m, ln_bias, 11 + (uint64_t)ln_bias);
        int ok = round_trip(&m, in_dir("m.safetensors"), &back, &ck, err, sizeof err);
        CHECK_MSG(ok, "%s", err);
        if (!ok) {
            gpt_free(&m);
            continue;
        }
        CHECK(ck.has_optimizer == 0);
        CHECK(memcmp(&ck.dims, &DIMS, sizeof DIMS) == 0);
        CHECK(ck.vocab.vocab_size == 5 && ck.vocab.chars[0] == 'a' && ck.vocab.chars[4] == 'e');
        CHECK_MSG(memcmp(m.params, back.params, m.n_params * sizeof(real)) == 0,
                  "parameters differ after the trip");
        real a[6 * 5], b[6 * 5];
        logits_of(&m, a);
        logits_of(&back, b);
        CHECK_MSG(memcmp(a, b, sizeof a) == 0, "logits differ (ln_bias %d)", ln_bias);
        char sa[256], sb[256];
        Vocab v = vocab_abcde();
        sample_of(&m, &v, sa, sizeof sa);
        sample_of(&back, &ck.vocab, sb, sizeof sb);
        free(v.chars);
        CHECK_MSG(strlen(sa) == 40 && strcmp(sa, sb) == 0, "samples differ: '%s' vs '%s'", sa, sb);
        gpt_free(&m);
        gpt_free(&back);
        checkpoint_close(&ck);
    }
    cleanup();
}

// ---- the file as nanoGPT lays it out ----
typedef struct {
    unsigned char *bytes;
    size_t len;
    cJSON *header;
    const unsigned char *data;
    size_t data_len;
} StFile;

static int read_st(const char *path, StFile *f) {
    memset(f, 0, sizeof *f);
    FILE *in = fopen(path, "rb");
    if (!in) return 0;
    fseek(in, 0, SEEK_END);
    f->len = (size_t)ftell(in);
    rewind(in);
    f->bytes = malloc(f->len);
    if (fread(f->bytes, 1, f->len, in) != f->len) f->len = 0;
    fclose(in);
    uint64_t h = 0;
    for (int b = 0; b < 8; b++) h |= (uint64_t)f->bytes[b] << (8 * b);
    f->header = cJSON_ParseWithLength((const char *)f->bytes + 8, h);
    f->data = f->bytes + 8 + h;
    f->data_len = f->len - 8 - h;
    return f->header != NULL;
}

static void free_st(StFile *f) {
    cJSON_Delete(f->header);
    free(f->bytes);
}

static float st_value(const StFile *f, const char *name, size_t index) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(f->header, name);
    size_t begin =
        (size_t)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e, "data_offsets"), 0)
            ->valuedouble;
    float x;
    memcpy(&x, f->data + begin + 4 * index, 4);
    return x;
}

static int st_dim(const StFile *f, const char *name, int d) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(f->header, name);
    const cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e, "shape"), d);
    return s ? (int)s->valuedouble : -1;
}

static void test_nanogpt_layout(void) {
    tmpdir("st");
    GPT m;
    char err[512];
    build_model(&m, 0, 5);
    Vocab v = vocab_abcde();
    char *cfg = config_of(&DIMS);
    int n = safetensors_export(in_dir("m.safetensors"), &m, cfg, &v, err, sizeof err);
    CHECK_MSG(n == 2 + 6 * DIMS.n_layer + 1 + 1, "%d tensors: %s", n,
              err);  // no LayerNorm bias: all zero
    StFile f;
    CHECK(read_st(in_dir("m.safetensors"), &f));
    int C = DIMS.n_embd;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(f.header, "__metadata__");
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(meta, "n_head")->valuestring, "2") == 0);
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(meta, "vocab")->valuestring, "abcde") == 0);
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(meta, "layernorm_bias")->valuestring, "false") ==
          0);
    CHECK(!cJSON_GetObjectItemCaseSensitive(f.header, "transformer.h.0.ln_1.bias"));
    CHECK(st_dim(&f, "transformer.h.1.attn.c_attn.weight", 0) == 3 * C &&
          st_dim(&f, "transformer.h.1.attn.c_attn.weight", 1) == C);
    CHECK(st_dim(&f, "transformer.h.0.mlp.c_fc.weight", 0) == 4 * C &&
          st_dim(&f, "transformer.h.0.mlp.c_proj.weight", 1) == 4 * C);
    CHECK(st_dim(&f, "transformer.ln_f.weight", 1) == -1 &&
          st_dim(&f, "transformer.ln_f.weight", 0) == C);
    // nn.Linear's (out, in): c_attn row C + o, column i is Wk[i][o]; c_fc row o, column i is
    // W_fc[i][o]
    const LayerParams *L = &m.p.layers[1];
    int bad = 0;
    for (int o = 0; o < C; o++)
        for (int i = 0; i < C; i++) {
            bad += st_value(&f, "transformer.h.1.attn.c_attn.weight",
                            (size_t)(0 * C + o) * C + i) != (float)L->wq[i * C + o];
            bad += st_value(&f, "transformer.h.1.attn.c_attn.weight",
                            (size_t)(1 * C + o) * C + i) != (float)L->wk[i * C + o];
            bad += st_value(&f, "transformer.h.1.attn.c_attn.weight",
                            (size_t)(2 * C + o) * C + i) != (float)L->wv[i * C + o];
            bad += st_value(&f, "transformer.h.1.attn.c_proj.weight", (size_t)o * C + i) !=
                   (float)L->wo[i * C + o];
            bad += st_value(&f, "transformer.h.1.mlp.c_fc.weight", (size_t)o * C + i) !=
                   (float)L->w_fc[i * 4 * C + o];
            bad += st_value(&f, "transformer.h.1.mlp.c_proj.weight", (size_t)o * 4 * C + i) !=
                   (float)L->w_proj[i * C + o];
        }
    for (int j = 0; j < DIMS.vocab_size * C; j++)
        bad += st_value(&f, "lm_head.weight", (size_t)j) != (float)m.p.wte[j];
    CHECK_MSG(bad == 0, "%d values not where nanoGPT's state_dict has them", bad);
    free_st(&f);
    // a model with LayerNorm biases exports every one of them
    gpt_free(&m);
    build_model(&m, 1, 6);
    n = safetensors_export(in_dir("b.safetensors"), &m, cfg, &v, err, sizeof err);
    CHECK(n == 2 + 8 * DIMS.n_layer + 2 + 1);
    CHECK(read_st(in_dir("b.safetensors"), &f));
    meta = cJSON_GetObjectItemCaseSensitive(f.header, "__metadata__");
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(meta, "layernorm_bias")->valuestring, "true") ==
          0);
    CHECK(st_value(&f, "transformer.h.1.ln_2.bias", 3) == (float)m.p.layers[1].ln2_b[3]);
    CHECK(st_value(&f, "transformer.ln_f.bias", 0) == (float)m.p.lnf_b[0]);
    free_st(&f);
    free(cfg);
    free(v.chars);
    gpt_free(&m);
    cleanup();
}

// ---- crafted files ----
// Each case edits the header (and maybe the data) of a valid file, or writes raw bytes.
typedef void (*Craft)(cJSON *hdr, unsigned char *data, size_t *data_len);

static cJSON *entry(cJSON *hdr, const char *name) {
    return cJSON_GetObjectItemCaseSensitive(hdr, name);
}
static void set_offsets(cJSON *e, double b, double end) {
    cJSON *o = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    cJSON_ReplaceItemInArray(o, 0, cJSON_CreateNumber(b));
    cJSON_ReplaceItemInArray(o, 1, cJSON_CreateNumber(end));
}
static double offset_of(cJSON *hdr, const char *name, int which) {
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(entry(hdr, name), "data_offsets"),
                              which)
        ->valuedouble;
}
static void set_meta(cJSON *hdr, const char *key, const char *value) {
    cJSON *meta = entry(hdr, "__metadata__");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, key);
    if (value) cJSON_AddStringToObject(meta, key, value);
}
// Append a tensor of `count` float32 values (all `value`) at the end of the data.
static void append_tensor(cJSON *hdr, unsigned char *data, size_t *len, const char *name, int d0,
                          int d1, float value) {
    cJSON *e = cJSON_AddObjectToObject(hdr, name);
    cJSON_AddStringToObject(e, "dtype", "F32");
    cJSON *s = cJSON_AddArrayToObject(e, "shape"), *o = cJSON_AddArrayToObject(e, "data_offsets");
    cJSON_AddItemToArray(s, cJSON_CreateNumber(d0));
    if (d1) cJSON_AddItemToArray(s, cJSON_CreateNumber(d1));
    size_t count = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    cJSON_AddItemToArray(o, cJSON_CreateNumber((double)*len));
    for (size_t i = 0; i < count; i++) memcpy(data + *len + 4 * i, &value, 4);
    *len += 4 * count;
    cJSON_AddItemToArray(o, cJSON_CreateNumber((double)*len));
}

static void c_dtype_i8(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    cJSON_ReplaceItemInObject(entry(h, "transformer.wpe.weight"), "dtype",
                              cJSON_CreateString("I8"));
}
static void c_shape(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;  // the same bytes, another shape: [2C, 2C] where [3C, C] is expected... same
                       // count: 4C^2 != 3C^2
    cJSON *s = cJSON_CreateArray();
    cJSON_AddItemToArray(s, cJSON_CreateNumber(DIMS.n_embd));
    cJSON_AddItemToArray(s, cJSON_CreateNumber(3 * DIMS.n_embd));
    cJSON_ReplaceItemInObject(entry(h, "transformer.h.0.attn.c_attn.weight"), "shape", s);
}
// A shape of the same count given to name: 1-D [a] when b is 0, else [a, b].
static void reshape(cJSON *h, const char *name, int a, int b) {
    cJSON *s = cJSON_CreateArray();
    cJSON_AddItemToArray(s, cJSON_CreateNumber(a));
    if (b) cJSON_AddItemToArray(s, cJSON_CreateNumber(b));
    cJSON_ReplaceItemInObject(entry(h, name), "shape", s);
}
static void c_shape_2d_for_1d(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    reshape(h, "transformer.ln_f.weight", 2, DIMS.n_embd / 2);
}
static void c_shape_1d_for_2d(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    reshape(h, "transformer.h.0.attn.c_proj.weight", DIMS.n_embd * DIMS.n_embd, 0);
}
static void c_beyond(cJSON *h, unsigned char *d, size_t *n) {
    (void)d;
    cJSON *e = entry(h, "lm_head.weight");
    set_offsets(e, offset_of(h, "lm_head.weight", 0) + 8, (double)*n + 8);
}
static void c_overlap(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    set_offsets(entry(h, "transformer.wpe.weight"), offset_of(h, "transformer.wte.weight", 0),
                offset_of(h, "transformer.wte.weight", 0) + 4.0 * DIMS.block_size * DIMS.n_embd);
}
static void c_trailing(cJSON *h, unsigned char *d, size_t *n) {
    (void)h;
    memset(d + *n, 0, 16);
    *n += 16;
}
// Remove a tensor and its bytes, moving the later tensors down (no hole is left).
static void drop_tensor(cJSON *h, unsigned char *d, size_t *n, const char *name) {
    size_t b = (size_t)offset_of(h, name, 0), e = (size_t)offset_of(h, name, 1);
    memmove(d + b, d + e, *n - e);
    *n -= e - b;
    cJSON_DeleteItemFromObjectCaseSensitive(h, name);
    for (cJSON *t = h->child; t; t = t->next)
        if (strcmp(t->string, "__metadata__") && offset_of(h, t->string, 0) >= (double)e)
            set_offsets(t, offset_of(h, t->string, 0) - (double)(e - b),
                        offset_of(h, t->string, 1) - (double)(e - b));
}
static void c_missing(cJSON *h, unsigned char *d, size_t *n) {
    drop_tensor(h, d, n, "transformer.h.1.mlp.c_proj.weight");
}
static void c_extra(cJSON *h, unsigned char *d, size_t *n) {
    append_tensor(h, d, n, "transformer.h.0.attn.rotary", 4, 0, 0);
}
static void c_mask_buffer(cJSON *h, unsigned char *d, size_t *n) {
    append_tensor(h, d, n, "transformer.h.0.attn.bias", DIMS.block_size, DIMS.block_size, 1);
}
static void c_linear_bias(cJSON *h, unsigned char *d, size_t *n) {
    append_tensor(h, d, n, "transformer.h.1.mlp.c_fc.bias", 4 * DIMS.n_embd, 0, 0.5f);
}
static void c_untied(cJSON *h, unsigned char *d, size_t *n) {
    (void)n;
    float x = 7;
    memcpy(d + (size_t)offset_of(h, "lm_head.weight", 0) + 12, &x, 4);
}
static void c_no_n_head(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    set_meta(h, "n_head", NULL);
}
static void c_bad_n_head(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    set_meta(h, "n_head", "3");
}
static void c_no_vocab(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    set_meta(h, "vocab", NULL);
}
static void c_short_vocab(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    set_meta(h, "vocab", "abcd");
}
static void c_unsorted_vocab(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    set_meta(h, "vocab", "abdce");
}
static void c_nonfinite(cJSON *h, unsigned char *d, size_t *n) {
    (void)n;
    float x = INFINITY;
    memcpy(d + (size_t)offset_of(h, "transformer.h.0.mlp.c_fc.weight", 0) + 4, &x, 4);
}
static void c_not_string_meta(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    cJSON_AddNumberToObject(entry(h, "__metadata__"), "n_layer_number", 2);
}
static void c_bad_config(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    set_meta(h, "config", "{\"model\": {\"n_layer\": 3}}");
}

static void c_second_metadata(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;  // another n_head without a config: it would build another model
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "n_head", "4");
    cJSON_AddStringToObject(m, "vocab", "abcde");
    cJSON_AddItemToObject(h, "__metadata__", m);
}
static void c_meta_key_twice(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    cJSON_AddStringToObject(entry(h, "__metadata__"), "n_head", "4");
}
static void c_tensor_twice(cJSON *h, unsigned char *d, size_t *n) {
    append_tensor(h, d, n, "transformer.ln_f.weight", DIMS.n_embd, 0, 1);
}
static void c_meta_n_layer(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    set_meta(h, "n_layer", "3");
}
static void c_meta_vocab_size(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    set_meta(h, "vocab_size", "x");
}
static void c_meta_array(cJSON *h, unsigned char *d, size_t *n) {
    (void)d, (void)n;
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(1));
    cJSON_ReplaceItemInObject(h, "__metadata__", a);
}

static const struct {
    const char *what;
    Craft craft;
    const char *expect1, *expect2;
} CRAFTED[] = {
    {"a dtype this architecture cannot convert", c_dtype_i8, "transformer.wpe.weight", "dtype I8"},
    {"a shape other than nanoGPT's", c_shape, "transformer.h.0.attn.c_attn.weight",
     "expects [24,8]"},
    {"a 1-D tensor given two dimensions", c_shape_2d_for_1d, "has 2 dimension(s) [2,4]",
     "expects [8]"},
    {"a 2-D tensor given one dimension", c_shape_1d_for_2d, "has 1 dimension(s) [64]",
     "expects [8,8]"},
    {"offsets beyond the file", c_beyond, "lm_head.weight", "beyond the"},
    {"two tensors over the same bytes", c_overlap, "overlap", NULL},
    {"data no tensor covers", c_trailing, "belong to no tensor", NULL},
    {"a missing tensor", c_missing, "has no tensor 'transformer.h.1.mlp.c_proj.weight'", NULL},
    {"an extra tensor", c_extra, "extra tensor 'transformer.h.0.attn.rotary'", NULL},
    {"nanoGPT's mask buffer", c_mask_buffer, "causal-mask buffer", "transformer.h.0.attn.bias"},
    {"a Linear bias that is not zero", c_linear_bias, "transformer.h.1.mlp.c_fc.bias",
     "no Linear biases"},
    {"an untied LM head", c_untied, "lm_head.weight differs", NULL},
    {"no n_head", c_no_n_head, "no n_head", NULL},
    {"an n_head that does not divide n_embd", c_bad_n_head, "not a multiple of n_head 3", NULL},
    {"no vocabulary", c_no_vocab, "--vocab-from", NULL},
    {"a vocabulary of the wrong size", c_short_vocab, "4 characters", "5 rows"},
    {"a vocabulary out of order", c_unsorted_vocab, "ascending order", NULL},
    {"a value float32 cannot hold", c_nonfinite, "transformer.h.0.mlp.c_fc.weight", "index 1"},
    {"metadata that is not a string", c_not_string_meta, "n_layer_number", "not a string"},
    {"a config that disagrees with the tensors", c_bad_config, "inconsistent", NULL},
    {"a second __metadata__", c_second_metadata, "'__metadata__' twice", NULL},
    {"a metadata key given twice", c_meta_key_twice, "metadata names 'n_head' twice", NULL},
    {"a tensor given twice", c_tensor_twice, "'transformer.ln_f.weight' twice", NULL},
    {"metadata n_layer other than the tensors'", c_meta_n_layer, "n_layer is '3'",
     "tensors give 2"},
    {"metadata vocab_size that is not a number", c_meta_vocab_size, "vocab_size is 'x'",
     "tensors give 5"},
    {"metadata that is not an object", c_meta_array, "__metadata__ is not an object", NULL},
};

static void write_crafted(const char *path, const StFile *valid, Craft craft) {
    cJSON *h = cJSON_Duplicate(valid->header, 1);
    unsigned char *data = malloc(valid->data_len + 65536);
    memcpy(data, valid->data, valid->data_len);
    size_t n = valid->data_len;
    craft(h, data, &n);
    char *json = cJSON_PrintUnformatted(h);
    uint64_t hl = strlen(json);
    FILE *f = fopen(path, "wb");
    for (int b = 0; b < 8; b++) fputc((int)(hl >> (8 * b)) & 255, f);
    fwrite(json, 1, hl, f);
    fwrite(data, 1, n, f);
    fclose(f);
    free(json);
    free(data);
    cJSON_Delete(h);
}

static void write_raw(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
}

// A valid file, valid.safetensors in the test's directory, exported from a small model, and its
// parts (the crafted files' starting point).
static int write_valid(StFile *valid) {
    GPT m;
    char err[1024];
    build_model(&m, 0, 9);
    Vocab v = vocab_abcde();
    char *cfg = config_of(&DIMS);
    int ok = safetensors_export(in_dir("valid.safetensors"), &m, cfg, &v, err, sizeof err) > 0 &&
             read_st(in_dir("valid.safetensors"), valid);
    free(cfg);
    free(v.chars);
    gpt_free(&m);
    return ok;
}

static void test_crafted_files_refused(void) {
    tmpdir("st");
    char err[1024];
    StFile valid;
    CHECK(write_valid(&valid));
    Checkpoint ck;
    CHECK_MSG(safetensors_open(&ck, in_dir("valid.safetensors"), NULL, err, sizeof err), "%s", err);
    checkpoint_close(&ck);
    for (size_t i = 0; i < sizeof CRAFTED / sizeof CRAFTED[0]; i++) {
        const char *path = in_dir("crafted.safetensors");
        write_crafted(path, &valid, CRAFTED[i].craft);
        err[0] = 0;
        int ok = safetensors_open(&ck, path, NULL, err, sizeof err);
        CHECK_MSG(!ok, "%s: accepted", CRAFTED[i].what);
        if (ok) {
            checkpoint_close(&ck);
            continue;
        }
        CHECK_MSG(strstr(err, CRAFTED[i].expect1) &&
                      (!CRAFTED[i].expect2 || strstr(err, CRAFTED[i].expect2)) &&
                      !strchr(err, '\n') && strstr(err, path) && !strstr(err, "(null)"),
                  "%s: the message does not say what is wrong: %s", CRAFTED[i].what, err);
    }
    // raw bytes: too short, a header length past the end, a header over 100 MB, not JSON
    unsigned char raw[64] = {0};
    const struct {
        const char *what;
        size_t n;
        uint64_t hlen;
        const char *json;
        const char *expect;
    } RAW[] = {
        {"too short", 5, 0, NULL, "too short"},
        {"a header past the end", 24, 1000, "{}", "header length of 1000"},
        {"a header over 100 MB", 24, 200000000, "{}", "header length of 200000000"},
        {"not JSON", 24, 8, "{nope:1}", "not valid JSON"},
        {"JSON that is not an object", 24, 8, "[1,2,3] ", "not a UTF-8 JSON object"},
    };
    for (size_t i = 0; i < sizeof RAW / sizeof RAW[0]; i++) {
        memset(raw, ' ', sizeof raw);
        for (int b = 0; b < 8; b++) raw[b] = (unsigned char)(RAW[i].hlen >> (8 * b));
        if (RAW[i].json) memcpy(raw + 8, RAW[i].json, strlen(RAW[i].json));
        write_raw(in_dir("raw.safetensors"), raw, RAW[i].n);
        int ok = safetensors_open(&ck, in_dir("raw.safetensors"), NULL, err, sizeof err);
        CHECK_MSG(!ok && strstr(err, RAW[i].expect), "%s: %s", RAW[i].what, ok ? "accepted" : err);
        if (ok) checkpoint_close(&ck);
    }
    // a Linear bias of zeros (nanoGPT's bias=True, never trained) is accepted, as is a file
    // without a vocabulary given the text it came from
    write_crafted(in_dir("zero_bias.safetensors"), &valid, c_linear_bias);
    {
        StFile zb;
        CHECK(read_st(in_dir("zero_bias.safetensors"), &zb));
        // rewrite the appended bias with zeros
        cJSON *h = cJSON_Duplicate(zb.header, 1);
        unsigned char *data = malloc(zb.data_len);
        memcpy(data, zb.data, zb.data_len);
        size_t b0 = (size_t)offset_of(h, "transformer.h.1.mlp.c_fc.bias", 0);
        memset(data + b0, 0, zb.data_len - b0);
        char *json = cJSON_PrintUnformatted(h);
        uint64_t hl = strlen(json);
        FILE *f = fopen(in_dir("zero_bias.safetensors"), "wb");
        for (int b = 0; b < 8; b++) fputc((int)(hl >> (8 * b)) & 255, f);
        fwrite(json, 1, hl, f);
        fwrite(data, 1, zb.data_len, f);
        fclose(f);
        free(json), free(data), cJSON_Delete(h), free_st(&zb);
        CHECK_MSG(safetensors_open(&ck, in_dir("zero_bias.safetensors"), NULL, err, sizeof err),
                  "%s", err);
        checkpoint_close(&ck);
    }
    write_crafted(in_dir("novocab.safetensors"), &valid, c_no_vocab);
    FILE *t = fopen(in_dir("text.txt"), "w");
    fputs("edcba abba", t);  // 6 distinct characters: refused; then 5
    fclose(t);
    CHECK(!safetensors_open(&ck, in_dir("novocab.safetensors"), in_dir("text.txt"), err,
                            sizeof err) &&
          strstr(err, "6 characters"));
    t = fopen(in_dir("text.txt"), "w");
    fputs("edcbaabba", t);
    fclose(t);
    CHECK_MSG(
        safetensors_open(&ck, in_dir("novocab.safetensors"), in_dir("text.txt"), err, sizeof err),
        "%s", err);
    CHECK(ck.vocab.vocab_size == 5 && ck.vocab.chars[0] == 'a');
    checkpoint_close(&ck);
    free_st(&valid);
    cleanup();
}

// A LayerNorm QK-norm file needs its biases: one without them (but with the other LayerNorm
// biases) is refused, not read as zeros (the probabilities would differ from the model's).
static void test_qk_layernorm_biases_required(void) {
    tmpdir("st");
    const ModelDims qd = {5, 8, 2, 2, 8, QK_NORM_LAYERNORM};
    GPT m;
    char err[1024];
    gpt_build(&m, &qd, attention_causal((real)(1.0 / sqrt((double)qd.n_embd / qd.n_head))), 1,
              qd.block_size);
    Rng rng;
    rng_seed(&rng, 3);
    gpt_init(&m, INIT_GPT2, &rng);
    for (int i = 0; i < m.n_tensors;
         i++)  // LayerNorm biases that are not zero: the file holds them all
        if (strstr(m.tensors[i].name, "_b") && m.tensors[i].ndim == 1)
            for (size_t j = 0; j < m.tensors[i].size; j++)
                m.params[m.tensors[i].offset + j] = (real)(float)(0.1 * rng_normal(&rng));
    Config c;
    config_defaults(&c);
    snprintf(c.name, sizeof c.name, "st");
    c.n_layer = qd.n_layer, c.n_head = qd.n_head, c.n_embd = qd.n_embd,
    c.block_size = qd.block_size;
    CHECK(config_apply_override(&c, "model.qk_norm=layernorm", err, sizeof err) &&
          config_finalize(&c, err, sizeof err));
    char *cfg = config_to_json(&c);
    Vocab v = vocab_abcde();
    CHECK_MSG(safetensors_export(in_dir("qk.safetensors"), &m, cfg, &v, err, sizeof err) > 0, "%s",
              err);
    free(cfg);
    free(v.chars);
    gpt_free(&m);
    StFile f;
    CHECK(read_st(in_dir("qk.safetensors"), &f));
    Checkpoint ck;
    CHECK_MSG(safetensors_open(&ck, in_dir("qk.safetensors"), NULL, err, sizeof err), "%s", err);
    checkpoint_close(&ck);
    static const char *const BIASES[] = {"transformer.h.1.attn.q_norm.bias",
                                         "transformer.h.0.attn.k_norm.bias"};
    for (int i = 0; i < 2; i++) {
        cJSON *h = cJSON_Duplicate(f.header, 1);
        unsigned char *data = malloc(f.data_len);
        memcpy(data, f.data, f.data_len);
        size_t n = f.data_len;
        drop_tensor(h, data, &n, BIASES[i]);
        char *json = cJSON_PrintUnformatted(h);
        uint64_t hl = strlen(json);
        FILE *out = fopen(in_dir("nobias.safetensors"), "wb");
        for (int b = 0; b < 8; b++) fputc((int)(hl >> (8 * b)) & 255, out);
        fwrite(json, 1, hl, out);
        fwrite(data, 1, n, out);
        fclose(out);
        free(json), free(data), cJSON_Delete(h);
        err[0] = 0;
        int ok = safetensors_open(&ck, in_dir("nobias.safetensors"), NULL, err, sizeof err);
        CHECK_MSG(!ok && strstr(err, BIASES[i]) && strstr(err, "LayerNorm bias"), "without %s: %s",
                  BIASES[i], ok ? "accepted" : err);
        if (ok) checkpoint_close(&ck);
    }
    free_st(&f);
    cleanup();
}

// The header's own rules: the JSON object fills it (only spaces after it); a --dump-state file is
// named as what it is; a header of many entries is refused at once, by their count or their names.
static void write_header(const char *path, const char *json, const unsigned char *data, size_t n) {
    uint64_t hl = strlen(json);
    FILE *f = fopen(path, "wb");
    for (int b = 0; b < 8; b++) fputc((int)(hl >> (8 * b)) & 255, f);
    fwrite(json, 1, hl, f);
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_header_rules(void) {
    tmpdir("st");
    char err[1024];
    StFile valid;
    CHECK(write_valid(&valid));
    Checkpoint ck;
    // {...}{}: bytes after the object; {...} and spaces: padding, accepted
    char *json = cJSON_PrintUnformatted(valid.header);
    size_t jn = strlen(json);
    char *text = malloc(jn + 16);
    snprintf(text, jn + 16, "%s{}", json);
    write_header(in_dir("trailing.safetensors"), text, valid.data, valid.data_len);
    int ok = safetensors_open(&ck, in_dir("trailing.safetensors"), NULL, err, sizeof err);
    CHECK_MSG(!ok && strstr(err, "trailing.safetensors") &&
                  strstr(err, "2 more bytes after its JSON object"),
              "%s", ok ? "accepted" : err);
    if (ok) checkpoint_close(&ck);
    snprintf(text, jn + 16, "%s   ", json);
    write_header(in_dir("padded.safetensors"), text, valid.data, valid.data_len);
    ok = safetensors_open(&ck, in_dir("padded.safetensors"), NULL, err, sizeof err);
    CHECK_MSG(ok, "%s", err);
    if (ok) checkpoint_close(&ck);
    free(text);
    free(json);
    // a --dump-state file (TGPTDUMP) is no model, and says so
    TWriter *w = tw_open(in_dir("dump.bin"), "TGPTDUMP", err, sizeof err);
    uint32_t shape[3] = {4, 0, 0};
    tw_record(w, "config", DT_U8, 1, shape, "{}  ");
    CHECK(tw_commit(w, err, sizeof err));
    ok = model_file_open(&ck, in_dir("dump.bin"), NULL, err, sizeof err);
    CHECK_MSG(!ok && strstr(err, "dump.bin") && strstr(err, "--dump-state") &&
                  !strstr(err, "header length"),
              "%s", ok ? "accepted" : err);
    if (ok) checkpoint_close(&ck);
    // 300,000 empty entries (17 MB of header): refused by their count in well under the time of
    // comparing each name with every other (n^2 / 2 = 4.5e10 comparisons)
    const int many = 300000;
    size_t cap = (size_t)many * 80 + 16, at = 0;
    char *big = malloc(cap);
    at += (size_t)snprintf(big + at, cap - at, "{");
    for (int i = 0; i < many; i++)
        at += (size_t)snprintf(big + at, cap - at,
                               "%s\"transformer.h.0.x%d\":{\"dtype\":\"F32\",\"shape\":[0],"
                               "\"data_offsets\":[0,0]}",
                               i ? "," : "", i);
    snprintf(big + at, cap - at, "}");
    write_header(in_dir("many.safetensors"), big, NULL, 0);
    double t0 = seconds_now();
    ok = safetensors_open(&ck, in_dir("many.safetensors"), NULL, err, sizeof err);
    double took = seconds_now() - t0;
    CHECK_MSG(!ok && strstr(err, "300000 entries") && strstr(err, "at most 1029 tensors"), "%s",
              ok ? "accepted" : err);
    CHECK_MSG(took < 10, "%.1f s to refuse a header of %d entries", took, many);
    if (ok) checkpoint_close(&ck);
    // within the count, the first name the model does not have is refused as it is read
    at = 0;
    at += (size_t)snprintf(big + at, cap - at, "{");
    for (int i = 0; i < 700; i++)
        at +=
            (size_t)snprintf(big + at, cap - at,
                             "%s\"transformer.h.%d.ln_1.weight\":{\"dtype\":\"F32\",\"shape\":[0],"
                             "\"data_offsets\":[0,0]}",
                             i ? "," : "", i);
    snprintf(big + at, cap - at, "}");
    write_header(in_dir("layers.safetensors"), big, NULL, 0);
    ok = safetensors_open(&ck, in_dir("layers.safetensors"), NULL, err, sizeof err);
    CHECK_MSG(!ok && strstr(err, "extra tensor 'transformer.h.64.ln_1.weight'") &&
                  strstr(err, "at most 64 layers"),
              "%s", ok ? "accepted" : err);
    if (ok) checkpoint_close(&ck);
    free(big);
    free_st(&valid);
    cleanup();
}

// F16, BF16 and F64 tensors are converted to float32 (values exact in each).
static void test_other_dtypes_converted(void) {
    tmpdir("st");
    GPT m;
    char err[512];
    build_model(&m, 0, 3);
    Vocab v = vocab_abcde();
    char *cfg = config_of(&DIMS);
    CHECK(safetensors_export(in_dir("v.safetensors"), &m, cfg, &v, err, sizeof err) > 0);
    StFile f;
    CHECK(read_st(in_dir("v.safetensors"), &f));
    // wpe as F64, ln_f.weight as F16 (1.5 everywhere), transformer.h.0.ln_1.weight as BF16 (-0.375)
    cJSON *h = cJSON_Duplicate(f.header, 1);
    size_t C = (size_t)DIMS.n_embd, T = (size_t)DIMS.block_size, cap = f.data_len * 3;
    unsigned char *data = calloc(1, cap);
    size_t n = 0;
    for (cJSON *e = h->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) continue;
        size_t b = (size_t)offset_of(h, e->string, 0), end = (size_t)offset_of(h, e->string, 1),
               count = (end - b) / 4;
        size_t start = n;
        if (!strcmp(e->string, "transformer.wpe.weight")) {
            cJSON_ReplaceItemInObject(e, "dtype", cJSON_CreateString("F64"));
            for (size_t j = 0; j < count; j++) {
                float x;
                memcpy(&x, f.data + b + 4 * j, 4);
                double d = x;
                memcpy(data + n, &d, 8), n += 8;
            }
        } else if (!strcmp(e->string, "transformer.ln_f.weight")) {
            cJSON_ReplaceItemInObject(e, "dtype", cJSON_CreateString("F16"));
            for (size_t j = 0; j < count; j++) data[n++] = 0x00, data[n++] = 0x3E;  // 1.5
        } else if (!strcmp(e->string, "transformer.h.0.ln_1.weight")) {
            cJSON_ReplaceItemInObject(e, "dtype", cJSON_CreateString("BF16"));
            for (size_t j = 0; j < count; j++) data[n++] = 0xC0, data[n++] = 0xBE;  // -0.375
        } else {
            memcpy(data + n, f.data + b, end - b), n += end - b;
        }
        set_offsets(e, (double)start, (double)n);
    }
    char *json = cJSON_PrintUnformatted(h);
    uint64_t hl = strlen(json);
    FILE *out = fopen(in_dir("mixed.safetensors"), "wb");
    for (int b = 0; b < 8; b++) fputc((int)(hl >> (8 * b)) & 255, out);
    fwrite(json, 1, hl, out);
    fwrite(data, 1, n, out);
    fclose(out);
    Checkpoint ck;
    int ok = safetensors_open(&ck, in_dir("mixed.safetensors"), NULL, err, sizeof err);
    CHECK_MSG(ok, "%s", err);
    if (ok) {
        GPT back;
        gpt_build(&back, &ck.dims, attention_causal(m.attn.scale), 1, DIMS.block_size);
        CHECK_MSG(checkpoint_restore(&ck, &back, "mixed", err, sizeof err), "%s", err);
        CHECK(memcmp(back.p.wpe, m.p.wpe, T * C * sizeof(real)) == 0);
        CHECK(back.p.lnf_w[0] == (real)1.5 && back.p.lnf_w[C - 1] == (real)1.5);
        CHECK(back.p.layers[0].ln1_w[2] == (real)-0.375);
        gpt_free(&back);
        checkpoint_close(&ck);
    }
    free(json), free(data), cJSON_Delete(h), free_st(&f), free(cfg), free(v.chars);
    gpt_free(&m);
    cleanup();
}

// ---- the programs ----
static int same_file(const char *a, const char *b) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

static void test_programs_export_and_import(void) {
    tmpdir("st");
    const char *tiny =
        "--model.n_layer=2 --model.n_head=2 --model.n_embd=16 --model.block_size=16 "
        "--train.batch_size=4 "
        "--data.val_fraction=0.02 --train.max_steps=6 --log.eval_interval=6 --log.eval_steps=1 "
        "--sample.tokens=0 --train.threads=1";
    int code = run("./train configs/default.json %s --train.out_dir=%s/run", tiny, g_dir);
    CHECK_MSG(code == 0, "training: %s", g_err);
    code = run("./sample %s/run/checkpoint.bin --export %s/m.safetensors", g_dir, g_dir);
    CHECK_MSG(code == 0 && strstr(g_err, "wrote") && !g_out[0], "export: %d %s", code, g_err);
    // ./sample reads either file and writes the same text
    code = run("./sample %s/run/checkpoint.bin --tokens 60 --seed 9 --prompt 'copy: ab'", g_dir);
    static char a[sizeof g_out];
    memcpy(a, g_out, sizeof a);
    CHECK(code == 0 && strlen(a) > 60);
    code = run("./sample %s/m.safetensors --tokens 60 --seed 9 --prompt 'copy: ab'", g_dir);
    CHECK_MSG(code == 0 && strcmp(a, g_out) == 0, "samples differ:\n%s\n%s\n%s", a, g_out, g_err);
    // ./train --init-from: the first batch's logits (--dump-state) are the checkpoint's
    code =
        run("./train configs/default.json %s --init-from %s/m.safetensors --dump-state %s/d1.bin",
            tiny, g_dir, g_dir);
    CHECK_MSG(code == 0, "%s", g_err);
    code = run(
        "./train configs/default.json %s --init-from %s/run/checkpoint.bin --dump-state %s/d2.bin",
        tiny, g_dir, g_dir);
    CHECK_MSG(code == 0, "%s", g_err);
    CHECK(same_file(in_dir("d1.bin"), in_dir("d2.bin")));
    // it trains on from there, and refuses a shape change
    code = run("./train configs/default.json %s --init-from %s/m.safetensors --train.out_dir=%s/ft",
               tiny, g_dir, g_dir);
    CHECK_MSG(code == 0 && strstr(g_out, "final: step=6"), "%s", g_err);
    code = run("./train configs/default.json --init-from %s/m.safetensors --model.n_embd=32 "
               "--dump-state %s/x.bin",
               g_dir, g_dir);
    CHECK_MSG(code == 2 && strstr(g_err, "keeps its shape"), "%d %s", code, g_err);
    code = run("./train --resume %s/run/checkpoint.bin --init-from %s/m.safetensors", g_dir, g_dir);
    CHECK_MSG(code == 2 && strstr(g_err, "--init-from"), "%d %s", code, g_err);
    // a bad file: one line, exit 1
    FILE *f = fopen(in_dir("bad.safetensors"), "wb");
    fputs("\x10\0\0\0\0\0\0\0{\"x\":", f);
    fclose(f);
    code = run("./sample %s/bad.safetensors", g_dir);
    CHECK_MSG(code == 1 && strstr(g_err, "bad.safetensors") &&
                  strchr(g_err, '\n') == g_err + strlen(g_err) - 1,
              "%d %s", code, g_err);
    cleanup();
}

// tools/nanogpt_to_safetensors.py under tests/converter_check.py (the converter's own checks: the
// crafted ckpt.pt and meta.pkl run nothing, one-line errors, regular files only, the output by a
// rename). Skips, saying so, without Python; the checks that need PyTorch skip inside it.
static void test_converter_checks(void) {
    tmpdir("st");
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    if (run("command -v %s", py) != 0) {
        cleanup();
        SKIP("no python3: tools/nanogpt_to_safetensors.py is not checked");
    }
    int code = run("%s tests/converter_check.py", py);
    const char *skip = strstr(g_out, "\nskip ");
    if (skip) fprintf(stderr, "  %.*s\n", (int)strcspn(skip + 1, "\n"), skip + 1);
    CHECK_MSG(code == 0 && strstr(g_out, " 0 failed"), "exit %d:\n%s%s", code, g_out, g_err);
    cleanup();
}

const TestCase tests_safetensors[] = {
    {"safetensors_round_trip_bit_identical", test_round_trip_bit_identical},
    {"safetensors_nanogpt_layout", test_nanogpt_layout},
    {"safetensors_crafted_files_refused", test_crafted_files_refused},
    {"safetensors_other_dtypes_converted", test_other_dtypes_converted},
    {"safetensors_header_rules", test_header_rules},
    {"safetensors_programs_export_and_import", test_programs_export_and_import},
    {"safetensors_converter_checks", test_converter_checks},
    {"safetensors_qk_layernorm_biases_required", test_qk_layernorm_biases_required},
    {NULL, NULL},
};
