// web/web_main.c: the page's entry points into the trainer (web/playground.html runs them in a Web
// Worker). The web build's only difference from the native one lives here: one thread (no
// OpenMP), the text and checkpoints passed through memory instead of files. The model, attention,
// kernels, data code and RNG are the native sources, compiled to wasm32 with 128-bit SIMD.
#define _POSIX_C_SOURCE 200809L  // fmemopen: the sampler writes the page's sample into memory
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "base/data.h"
#include "base/rng.h"
#include "model.h"
#include "run/optimizer.h"  // AdamW, the gradient norm, the finiteness check

// exported to the page's script under its own name; a plain function natively (tools/web_native.c)
#ifdef __wasm__
#define EXPORT(name) __attribute__((export_name(name)))
#else
#define EXPORT(name)
#endif

// One trained variant (the page's compare mode runs two from the same init on the same batches).
typedef struct {
    GPT m;
    int built;
    long step;  // AdamW updates made
} Variant;

static Dataset ds;
static int have_data;
static Variant var[2];
static int B = 8, T = 64;
static Rng batch_rng;
static int *bx, *by;
static double lr = 1e-3;
static char msg[256];

EXPORT("pg_alloc") void *pg_alloc(int n) { return malloc((size_t)n); }
EXPORT("pg_free") void pg_free(void *p) { free(p); }
EXPORT("pg_message") const char *pg_message(void) { return msg; }

// Text (UTF-8, n bytes) -> the character vocabulary and tokens, the last 10% held out for
// validation. Both splits need block + 1 tokens; returns 0 with the reason in pg_message().
EXPORT("pg_set_text") int pg_set_text(const unsigned char *bytes, int n, int block) {
    uint32_t *cps = NULL;
    size_t ncp = 0, bad = 0;
    if (!utf8_decode(bytes, (size_t)n, &cps, &ncp, &bad)) {
        snprintf(msg, sizeof msg, "the text is not UTF-8: invalid byte sequence at offset %zu (a binary file?)", bad);
        return 0;
    }
    size_t n_train = (size_t)((double)ncp * 0.9);
    if (n_train < (size_t)block + 1 || ncp - n_train < (size_t)block + 1) {
        snprintf(msg, sizeof msg, "the text has %zu characters; with block size %d it needs at least %zu", ncp, block,
                 (size_t)(block + 1) * 10 + 1);
        free(cps);
        return 0;
    }
    Dataset d = {0};
    vocab_build(&d.vocab, cps, ncp);
    d.tokens = malloc(ncp * sizeof(int));
    for (size_t i = 0; i < ncp; i++) d.tokens[i] = vocab_lookup(&d.vocab, cps[i]);
    d.n_tokens = ncp;
    d.n_train = n_train;
    free(cps);
    if (have_data) dataset_free(&ds);
    ds = d;
    have_data = 1;
    return d.vocab.vocab_size;
}

// Build both variants from one seed: the same initial weights, attention scale scale[v] (< 0:
// 1/sqrt(head size)), the mask (0 causal, 1 zero, 2 none) and softmax axis (0 keys, 1 queries).
// Returns the parameter count, or 0 with the reason in pg_message().
EXPORT("pg_init") long pg_init(int n_layer, int n_head, int n_embd, int block, int batch, double learning_rate,
                                unsigned seed, double scale0, double scale1, int mask, int axis) {
    if (!have_data) { snprintf(msg, sizeof msg, "no text loaded"); return 0; }
    if (n_embd % n_head) { snprintf(msg, sizeof msg, "n_embd %d is not a multiple of n_head %d", n_embd, n_head); return 0; }
    ModelDims d = {ds.vocab.vocab_size, block, n_layer, n_head, n_embd, QK_NORM_NONE};
    size_t n_params = 0, bytes = gpt_memory_bytes(&d, batch, block, &n_params);
    // the page's memory: wasm32 addresses 4 GiB; two variants must fit well below that
    if (bytes == 0 || bytes > (size_t)512 << 20) {
        snprintf(msg, sizeof msg, "this preset needs %zu MiB per variant; the page allows 512 MiB", bytes >> 20);
        return 0;
    }
    for (int v = 0; v < 2; v++) {
        if (var[v].built) gpt_free(&var[v].m);
        var[v].built = 0;
    }
    B = batch, T = block, lr = learning_rate;
    free(bx), free(by);
    bx = malloc((size_t)B * T * sizeof(int));
    by = malloc((size_t)B * T * sizeof(int));
    double hd = (double)n_embd / n_head;
    for (int v = 0; v < 2; v++) {
        double s = v ? scale1 : scale0;
        AttnSetup a = attention_causal((real)(s < 0 ? 1.0 / sqrt(hd) : s));
        a.spec.mask = (AttnMask)mask;
        a.spec.axis = (SoftmaxAxis)axis;
        if (!a.impl->supports(&a.spec)) a.impl = &attention_definition;
        gpt_build(&var[v].m, &d, a, B, T);
        Rng r;
        rng_seed(&r, seed);
        gpt_init(&var[v].m, INIT_GPT2, &r);
        var[v].m.collect_stats = 0;  // training runs the engine; pg_measure collects the statistics
        var[v].built = 1;
        var[v].step = 0;
    }
    rng_seed(&batch_rng, (uint64_t)seed + 1);
    return (long)n_params;
}

// One training step of variant v on batch x,y: loss, backward, clip at 1, AdamW.
static double train_on(Variant *w) {
    double loss = gpt_forward(&w->m, bx, by, B, T);
    gpt_zero_grad(&w->m);
    gpt_backward(&w->m);
    double norm = gpt_grad_norm(&w->m);
    if (!isfinite(loss) || !isfinite(norm)) return loss;
    if (norm > 1.0) gpt_scale_grads(&w->m, (real)(1.0 / norm));
    w->step++;
    gpt_adamw_update(&w->m, lr, 0.9, 0.99, 1e-8, 0.1, w->step);
    return loss;
}

static double losses[2];
// One step of both variants (n = 1 or 2) on the same batch; pg_loss(v) reads each loss.
EXPORT("pg_step") int pg_step(int n) {
    if (!var[0].built) return 0;
    sample_batch(&ds, 0, &batch_rng, B, T, bx, by);
    for (int v = 0; v < n && v < 2; v++) losses[v] = train_on(&var[v]);
    return 1;
}
EXPORT("pg_loss") double pg_loss(int v) { return losses[v & 1]; }

// The attention statistics of the last step's batch for variants 0..n-1: a forward and backward
// pass with the statistics collected and no update. Training itself runs without statistics
// (the engine's path), so how often the page looks does not change what it trains.
EXPORT("pg_measure") int pg_measure(int n) {
    if (!var[0].built) return 0;
    for (int v = 0; v < n && v < 2; v++) {
        GPT *m = &var[v].m;
        m->collect_stats = 1;
        gpt_forward(m, bx, by, B, T);
        gpt_zero_grad(m);
        gpt_backward(m);
        m->collect_stats = 0;
    }
    return 1;
}

// Mean validation loss of variant v over k batches drawn from a fixed seed (the same windows each call).
EXPORT("pg_val_loss") double pg_val_loss(int v, int k) {
    Rng r;
    rng_seed(&r, 12345);
    double s = 0;
    for (int i = 0; i < k; i++) {
        sample_batch(&ds, 1, &r, B, T, bx, by);
        s += gpt_forward(&var[v & 1].m, bx, by, B, T);
    }
    return s / k;
}

// pg_measure's peakedness per (layer, head): mean normalised entropy and mean max weight.
EXPORT("pg_entropy") double pg_entropy(int v, int lh) {
    const AttnStats *a = &var[v & 1].m.attn_stats[lh];
    return a->rows > 0 ? a->entropy_norm / a->rows : NAN;
}
EXPORT("pg_max_weight") double pg_max_weight(int v, int lh) {
    const AttnStats *a = &var[v & 1].m.attn_stats[lh];
    return a->rows > 0 ? a->max_weight / a->rows : NAN;
}
// The softmax's gradient gain of (layer, head): ||dL/dS|| / ||dL/dP||.
EXPORT("pg_grad_gain") double pg_grad_gain(int v, int lh) {
    const AttnStats *a = &var[v & 1].m.attn_stats[lh];
    return a->dp_sumsq > 0 ? sqrt(a->ds_sumsq / a->dp_sumsq) : NAN;
}

// ---- the views: the probe prompt's attention map and a sample of generated text ----
// Both run a forward pass of one sequence after pg_measure; the next pg_step starts with its own
// forward, so neither changes what is trained.
#include "report/attention_map.h"  // ATTENTION_NOT_EXPLANATION, the line every map carries
#include "run/generate.h"          // the native sampler (run/generate.c, with the KV cache of run/decode.c)

EXPORT("pg_caveat") const char *pg_caveat(void) { return ATTENTION_NOT_EXPLANATION; }

static int *view_tokens;   // the prompt's tokens (at most block_size)
static double *view_map;   // (T, T) the weights P of the last pg_attention
static char *view_text;    // the last pg_sample's characters, UTF-8, 0-terminated

// A prompt (UTF-8, n bytes) -> at most `cap` tokens in view_tokens; returns how many, or -1 with
// a message naming every distinct character the text's vocabulary does not have.
static int encode_view_prompt(const unsigned char *bytes, int n, int cap) {
    uint32_t *cps = NULL;
    size_t ncp = 0, bad = 0, len = 0;
    if (!utf8_decode(bytes, (size_t)n, &cps, &ncp, &bad)) {
        snprintf(msg, sizeof msg, "the prompt is not UTF-8: invalid byte sequence at offset %zu", bad);
        return -1;
    }
    if (ncp == 0) {
        snprintf(msg, sizeof msg, "the prompt is empty: type at least one character of the text");
        free(cps);
        return -1;
    }
    len = (size_t)snprintf(msg, sizeof msg, "the prompt has characters the text's vocabulary lacks:");
    int unknown = 0;
    for (size_t i = 0; i < ncp; i++) {
        if (vocab_lookup(&ds.vocab, cps[i]) >= 0) continue;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = cps[j] == cps[i];
        if (seen || len + 24 >= sizeof msg) continue;
        char ch[5] = {0};
        utf8_encode(cps[i], ch);
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s '%s' (U+%04X)", unknown++ ? "," : "",
                                cps[i] < 0x20 || cps[i] == 0x7f ? "?" : ch, (unsigned)cps[i]);
    }
    if (unknown) {
        free(cps);
        return -1;
    }
    int T = ncp < (size_t)cap ? (int)ncp : cap;
    free(view_tokens);
    view_tokens = malloc((size_t)T * sizeof(int));
    for (int t = 0; t < T; t++) view_tokens[t] = vocab_lookup(&ds.vocab, cps[t]);
    free(cps);
    return T;
}

// The attention weights P of (layer, head) of variant v for the prompt's first block_size
// characters: one forward pass of that sequence with the weights kept (the definition computes
// P; the engine keeps only each row's max and 1/sum). Returns T, the characters used, with
// P[t][u] (query t, key u) at pg_attention_map()[t * T + u]; 0 with the reason in pg_message().
EXPORT("pg_attention") int pg_attention(int v, const unsigned char *bytes, int n, int layer, int head) {
    GPT *m = &var[v & 1].m;
    if (!var[v & 1].built) { snprintf(msg, sizeof msg, "no model: press Reset"); return 0; }
    if (layer < 0 || layer >= m->dims.n_layer || head < 0 || head >= m->dims.n_head) {
        snprintf(msg, sizeof msg, "layer %d, head %d: the model has layers 0..%d and heads 0..%d", layer, head,
                 m->dims.n_layer - 1, m->dims.n_head - 1);
        return 0;
    }
    int T = encode_view_prompt(bytes, n, m->dims.block_size);
    if (T < 0) return 0;
    m->keep_weights = 1;
    gpt_forward(m, view_tokens, NULL, 1, T);
    m->keep_weights = 0;
    // the definition keeps P as (B, NH, T, T); this forward's B is 1
    const real *P = m->acts.layers[layer].att + (size_t)head * T * T;
    free(view_map);
    view_map = malloc((size_t)T * T * sizeof(double));
    for (int i = 0; i < T * T; i++) view_map[i] = P[i];
    return T;
}
EXPORT("pg_attention_map") const double *pg_attention_map(void) { return view_map; }

// k characters generated by variant v after the prompt, as ./sample does (run/generate.c: the
// context cropped to the last block_size characters), from softmax(logits / temperature)
// (temperature 0: greedy) with the RNG seeded by seed, so the same model and seed give the same
// text. Returns the text (UTF-8, 0-terminated), or NULL with the reason in pg_message().
EXPORT("pg_sample") const char *pg_sample(int v, const unsigned char *bytes, int n, int k, double temperature,
                                          unsigned seed) {
    GPT *m = &var[v & 1].m;
    if (!var[v & 1].built) { snprintf(msg, sizeof msg, "no model: press Reset"); return NULL; }
    if (k < 1 || k > 10000 || !(temperature >= 0)) {
        snprintf(msg, sizeof msg, "sample of %d characters at temperature %g: expected 1..10000 and >= 0", k, temperature);
        return NULL;
    }
    int T = encode_view_prompt(bytes, n, 1 << 20);
    if (T < 0) return NULL;
    size_t cap = (size_t)k * 4 + 1;  // a character is at most 4 bytes of UTF-8
    free(view_text);
    view_text = calloc(cap, 1);
    FILE *out = fmemopen(view_text, cap, "w");
    if (!out) { snprintf(msg, sizeof msg, "no memory for a sample of %d characters", k); return NULL; }
    Rng r;
    rng_seed(&r, seed);
    generate(m, &ds.vocab, view_tokens, T, k, temperature, 0, &r, out);
    fclose(out);
    return view_text;
}
