// web/web_main.c: the page's entry points into the trainer (web/playground.html runs them in a Web
// Worker). The web build's only difference from the native one lives here: one thread (no
// OpenMP), and files live in the worker's memory file system (its WASI layer), where the page puts
// the text and a checkpoint to load and takes a saved checkpoint from. The model, attention,
// kernels, config, data, checkpoint code and RNG are the native sources, compiled to wasm32 with
// 128-bit SIMD.
#define _POSIX_C_SOURCE 200809L  // fmemopen: the sampler writes the page's sample into memory
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "base/common.h"  // now_seconds: the steps' wall-clock time
#include "base/config.h"  // the page's config: ./train's keys, validation and messages
#include "base/data.h"
#include "base/rng.h"
#include "model.h"
#include "run/checkpoint.h"  // checkpoints through the memory file system
#include "run/optimizer.h"   // the schedule and the update: ./train's step

// exported to the page's script under its own name; a plain function natively (tools/web_native.c)
#ifdef __wasm__
#define EXPORT(name) __attribute__((export_name(name)))
#else
#define EXPORT(name)
#endif

// One trained variant (the page's compare mode runs two from the same init on the same batches):
// its resolved config and training state, as ./train keeps them for a run.
typedef struct {
    GPT m;
    Config cfg;
    char *cfg_json;  // config_to_json(&cfg): what a checkpoint records
    TrainState st;   // steps done, skipped, the batch sampler's state
    int built;
} Variant;

// The memory file system's paths (the worker's WASI layer; natively, files in PG_DIR).
#ifndef PG_DIR
#define PG_DIR "/"
#endif
#define TEXT_PATH PG_DIR "page_text.txt"
#define SAVE_PATH PG_DIR "checkpoint.bin"

static Dataset ds;
static int have_data;
static Variant var[2];
static int B = 8, T = 64;
static int *bx, *by;
static char msg[1024];

EXPORT("pg_alloc") void *pg_alloc(int n) { return malloc((size_t)n); }
EXPORT("pg_free") void pg_free(void *p) { free(p); }
EXPORT("pg_message") const char *pg_message(void) { return msg; }

// The page's text (n bytes) becomes the file TEXT_PATH, which pg_init and pg_load read as
// ./train reads data.path (dataset_load: UTF-8, the vocabulary, the split). Returns 0 with the
// reason in pg_message() when it cannot be written.
EXPORT("pg_set_text") int pg_set_text(const unsigned char *bytes, int n) {
    FILE *f = fopen(TEXT_PATH, "wb");
    if (!f || fwrite(bytes, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0) {
        snprintf(msg, sizeof msg, "cannot write the text to '%s'", TEXT_PATH);
        return 0;
    }
    return 1;
}

static void variant_free(Variant *w) {
    if (w->built) gpt_free(&w->m);
    free(w->cfg_json);
    memset(w, 0, sizeof *w);
}

// The model of config c for vocabulary size V, as ./train builds it (attention_setup, QK-norm,
// z-loss), with activations for one batch.
static void variant_build(Variant *w, const Config *c, int V) {
    memset(w, 0, sizeof *w);
    w->cfg = *c;
    w->cfg_json = config_to_json(c);
    ModelDims d = gpt_dims(c, V);
    gpt_build(&w->m, &d, attention_setup(c), c->batch_size, c->block_size);
    gpt_set_z_loss(&w->m, c->z_loss);
    w->m.collect_stats = 0;  // training runs the engine; pg_measure collects the statistics
    w->st.best_val_loss = INFINITY;
    w->built = 1;
}

// What the page cannot do as ./train does; and the memory a model needs (wasm32 addresses 4 GiB;
// two variants must fit well below that). 0 with the reason in msg.
static int page_can_run(const Config *c, int V) {
    if (c->spike_zscore > 0) {
        snprintf(msg, sizeof msg, "'train.spike_zscore' = %g: the page has no loss-spike detector; leave it 0", c->spike_zscore);
        return 0;
    }
    ModelDims d = gpt_dims(c, V);
    size_t n_params = 0, bytes = gpt_memory_bytes(&d, c->batch_size, c->block_size, &n_params);
    if (bytes == 0) {  // the size overflows size_t: more than wasm32's 4 GiB of addresses
        snprintf(msg, sizeof msg, "this config needs more than 4 GiB per variant; the page allows 512 MiB");
        return 0;
    }
    if (bytes > (size_t)512 << 20) {
        snprintf(msg, sizeof msg, "this config needs %zu MiB per variant; the page allows 512 MiB", bytes >> 20);
        return 0;
    }
    return 1;
}

// The new variants replace the old ones, the new data the old data.
static void install(Variant *nv, int n, Dataset *d) {
    for (int v = 0; v < 2; v++) variant_free(&var[v]);
    for (int v = 0; v < n; v++) var[v] = nv[v];
    if (have_data) dataset_free(&ds);
    ds = *d;
    have_data = 1;
    B = var[0].cfg.batch_size, T = var[0].cfg.block_size;
    free(bx), free(by);
    bx = malloc((size_t)B * T * sizeof(int));
    by = malloc((size_t)B * T * sizeof(int));
}

// The resolved config as ./train resolves it: defaults, the JSON, config_finalize, and the decay
// horizon made explicit (lr_decay_steps 0 is max_steps), which a checkpoint records.
static int resolve_config(Config *c, const char *json, size_t n, const char *origin) {
    config_defaults(c);
    if (!config_load_json(c, json, n, origin, msg, sizeof msg) || !config_finalize(c, msg, sizeof msg)) return 0;
    if (c->lr_decay_steps == 0) c->lr_decay_steps = c->max_steps;
    return 1;
}

// Build from a config (JSON text, n bytes: ./train's keys, validation and messages) on the page's
// text: the model initialised from train.seed as ./train does, the batch sampler seeded with
// seed + 1. With compare, a second variant: the same config with model.attn_scale "none", the
// same initial weights, trained on the same batches. Returns the parameter count, or 0 with the
// reason in pg_message() (the previous model kept).
EXPORT("pg_init") long pg_init(const char *json, int n, int compare) {
    Config c[2];
    if (!resolve_config(&c[0], json, (size_t)n, "the page's config")) return 0;
    c[1] = c[0];
    if (compare && (!config_apply_override(&c[1], "model.attn_scale=none", msg, sizeof msg) ||
                    !config_finalize(&c[1], msg, sizeof msg)))
        return 0;
    Dataset d;
    if (!dataset_load(&d, TEXT_PATH, c[0].val_fraction, c[0].block_size + 2, msg, sizeof msg)) return 0;
    if (!page_can_run(&c[0], d.vocab.vocab_size)) {
        dataset_free(&d);
        return 0;
    }
    int nv = compare ? 2 : 1;
    Variant w[2];
    for (int v = 0; v < nv; v++) variant_build(&w[v], &c[v], d.vocab.vocab_size);
    Rng r;
    rng_seed(&r, (uint64_t)c[0].seed);
    gpt_init(&w[0].m, strcmp(c[0].init, "fan_in") == 0 ? INIT_FAN_IN : INIT_GPT2, &r);
    if (nv == 2) gpt_copy_params(&w[1].m, &w[0].m);
    for (int v = 0; v < nv; v++) rng_seed(&w[v].st.rng, (uint64_t)c[0].seed + 1);
    install(w, nv, &d);
    return (long)var[0].m.n_params;
}

// One step of a variant on the batch in bx, by, as run/run.c takes it: the schedule's learning
// rate, the loss (with the config's z-loss in the gradient), the backward, the guard (a non-finite
// loss or gradient norm skips the update), clipping at train.grad_clip, AdamW with the config's
// betas, eps and weight decay and the count of updates made; the step's wall-clock seconds added
// to the run's elapsed_s, as ./train counts the time spent training (a pause is not counted).
static double train_on(Variant *w) {
    const Config *c = &w->cfg;
    long step = w->st.step;
    double t0 = now_seconds();
    double lr = train_lr(c, step), norm;
    double loss = gpt_forward(&w->m, bx, by, B, T);
    gpt_backward(&w->m);
    if (train_update(&w->m, c, loss, lr, step + 1 - w->st.skipped_steps, 0, &norm)) w->st.skipped_steps++;
    w->st.step = step + 1;
    w->st.elapsed_s += now_seconds() - t0;
    return loss;
}

static double losses[2];
// One step of both variants (n = 1 or 2) on the same batch, drawn as ./train draws it (variant 0's
// sampler; the other's follows it); pg_loss(v) reads each loss.
EXPORT("pg_step") int pg_step(int n) {
    if (!var[0].built) return 0;
    sample_batch(&ds, 0, &var[0].st.rng, B, T, bx, by);
    for (int v = 1; v < n && v < 2; v++) var[v].st.rng = var[0].st.rng;
    for (int v = 0; v < n && v < 2; v++)
        if (var[v].built) losses[v] = train_on(&var[v]);
    return 1;
}
EXPORT("pg_loss") double pg_loss(int v) { return losses[v & 1]; }

// What the page shows of variant v: 0 n_layer, 1 n_head, 2 steps done, 3 vocabulary size, 4
// whether it is built, 5 parameters.
EXPORT("pg_info") double pg_info(int v, int what) {
    const Variant *w = &var[v & 1];
    if (!w->built) return 0;
    switch (what) {
    case 0: return w->m.dims.n_layer;
    case 1: return w->m.dims.n_head;
    case 2: return (double)w->st.step;
    case 3: return w->m.dims.vocab_size;
    case 4: return 1;
    case 5: return (double)w->m.n_params;
    }
    return 0;
}

// ---- checkpoints (through the worker's memory file system) ----

// Variant v as a checkpoint at SAVE_PATH, by run/checkpoint.c (what ./train --resume and
// ./sample read). Returns 1, or 0 with the reason in pg_message().
EXPORT("pg_save") int pg_save(int v) {
    Variant *w = &var[v & 1];
    if (!w->built) { snprintf(msg, sizeof msg, "no model to save"); return 0; }
    return checkpoint_save(SAVE_PATH, &w->m, w->cfg_json, &ds.vocab, &w->st, msg, sizeof msg);
}

// The checkpoint at path (the page wrote the chosen file there) replaces the model, read as
// ./train --resume reads it: checkpoint_open's validation, its config resolved, the page's text
// tokenized with its vocabulary, checkpoint_restore; then training continues from its step with
// its batch sampler. Any refusal leaves the previous model as it was. Returns the step, or -1
// with the reason (the native message) in pg_message().
EXPORT("pg_load") long pg_load(const char *path) {
    Checkpoint ck;
    if (!checkpoint_open(&ck, path, msg, sizeof msg)) return -1;
    long ret = -1;
    Config c;
    Dataset d;
    int have_d = 0;
    Variant w;
    memset(&w, 0, sizeof w);
    if (!resolve_config(&c, ck.config_json, strlen(ck.config_json), path)) goto done;
    if (!ck.has_optimizer) { snprintf(msg, sizeof msg, "'%s' holds no optimizer state and cannot be resumed", path); goto done; }
    if (!dataset_load_with_vocab(&d, TEXT_PATH, c.val_fraction, c.block_size + 2, &ck.vocab, msg, sizeof msg)) {
        char why[sizeof msg];
        snprintf(why, sizeof why, "%s", msg);
        // the reason after the sentence, cut at the buffer's end when the two do not fit
        int at = snprintf(msg, sizeof msg, "the page's text does not fit '%s' (choose the text it was trained on): ", path);
        if (at > 0 && (size_t)at < sizeof msg - 1) {
            size_t room = sizeof msg - 1 - (size_t)at, n = strlen(why);
            memcpy(msg + at, why, n < room ? n : room);
            msg[(size_t)at + (n < room ? n : room)] = 0;
        }
        goto done;
    }
    have_d = 1;
    if (!checkpoint_check_memory(&ck, c.batch_size, c.block_size, path, msg, sizeof msg) ||
        !page_can_run(&c, d.vocab.vocab_size))
        goto done;
    variant_build(&w, &c, d.vocab.vocab_size);
    if (!checkpoint_restore(&ck, &w.m, path, msg, sizeof msg)) goto done;
    w.st = ck.state;
    install(&w, 1, &d);
    have_d = 0;
    memset(&w, 0, sizeof w);
    ret = var[0].st.step;
done:
    variant_free(&w);
    if (have_d) dataset_free(&d);
    checkpoint_close(&ck);
    return ret;
}

// The attention statistics of the last step's batch for variants 0..n-1: a forward and backward
// pass with the statistics collected and no update. Training itself runs without statistics
// (the engine's path), so how often the page looks does not change what it trains.
EXPORT("pg_measure") int pg_measure(int n) {
    if (!var[0].built) return 0;
    for (int v = 0; v < n && v < 2 && var[v].built; v++) {
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
    if (!var[v & 1].built) return NAN;
    Rng r;
    rng_seed(&r, 12345);
    // batches of their own: bx, by keep the training batch pg_measure reads
    int *vx = malloc((size_t)B * T * sizeof(int)), *vy = malloc((size_t)B * T * sizeof(int));
    if (!vx || !vy) { free(vx), free(vy); snprintf(msg, sizeof msg, "out of memory for the validation batch"); return NAN; }
    double s = 0;
    for (int i = 0; i < k; i++) {
        sample_batch(&ds, 1, &r, B, T, vx, vy);
        s += gpt_forward(&var[v & 1].m, vx, vy, B, T);
    }
    free(vx), free(vy);
    return s / k;
}

// pg_measure's peakedness per (layer, head): mean normalised entropy and mean max weight.
EXPORT("pg_entropy") double pg_entropy(int v, int lh) {
    if (!var[v & 1].built) return NAN;
    const AttnStats *a = &var[v & 1].m.attn_stats[lh];
    return a->rows > 0 ? a->entropy_norm / a->rows : NAN;
}
EXPORT("pg_max_weight") double pg_max_weight(int v, int lh) {
    if (!var[v & 1].built) return NAN;
    const AttnStats *a = &var[v & 1].m.attn_stats[lh];
    return a->rows > 0 ? a->max_weight / a->rows : NAN;
}
// The softmax's gradient gain of (layer, head): ||dL/dS|| / ||dL/dP||.
EXPORT("pg_grad_gain") double pg_grad_gain(int v, int lh) {
    if (!var[v & 1].built) return NAN;
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
