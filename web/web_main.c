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
        snprintf(msg, sizeof msg,
                 "'train.spike_zscore' = %g: the page has no loss-spike detector; leave it 0",
                 c->spike_zscore);
        return 0;
    }
    ModelDims d = gpt_dims(c, V);
    size_t n_params = 0, bytes = gpt_memory_bytes(&d, c->batch_size, c->block_size, &n_params);
    if (bytes == 0) {  // the size overflows size_t: more than wasm32's 4 GiB of addresses
        snprintf(msg, sizeof msg,
                 "this config needs more than 4 GiB per variant; the page allows 512 MiB");
        return 0;
    }
    if (bytes > (size_t)512 << 20) {
        snprintf(msg, sizeof msg, "this config needs %zu MiB per variant; the page allows 512 MiB",
                 bytes >> 20);
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
    if (!config_load_json(c, json, n, origin, msg, sizeof msg) ||
        !config_finalize(c, msg, sizeof msg))
        return 0;
    train_fix_decay_horizon(c);
    return 1;
}

// Build from a config (JSON text, n bytes: ./train's keys, validation and messages) on the page's
// text: the model initialised from train.seed as ./train does, the batch sampler seeded with
// seed + 1. With a pair (override, a "key=value" as ./train --compare takes it, e.g.
// "model.attn_scale=none" or "model.qk_norm=layernorm"), a second variant: the same config with
// the override, the same initial weights (copied by name, as ./train --compare does: QK-norm's
// gains and biases start at 1 and 0), trained on the same batches. which: -1 builds both variants
// in this module; 0 or 1 builds only that one (in slot 0), so that two Web Workers, each with its
// own module, train the pair on two cores with the same numbers as one module training both.
// Returns the parameter count, or 0 with the reason in pg_message() (the previous model kept).
static char pair_override[128];  // the override of variant 1 (empty: none), for pg_retune
static int pair_which = -1;
EXPORT("pg_init_pair") long pg_init_pair(const char *json, int n, const char *override, int which) {
    Config c[2];
    int has_pair = override && override[0];
    if (!has_pair) which = -1;
    if (has_pair && strlen(override) >= sizeof pair_override) {
        snprintf(msg, sizeof msg, "the pair's override '%.60s...' is too long", override);
        return 0;
    }
    if (!resolve_config(&c[0], json, (size_t)n, "the page's config")) return 0;
    c[1] = c[0];
    if (has_pair && (!config_apply_override(&c[1], override, msg, sizeof msg) ||
                     !config_finalize(&c[1], msg, sizeof msg)))
        return 0;
    Dataset d;
    if (!dataset_load(&d, TEXT_PATH, c[0].val_fraction, c[0].block_size + 2, msg, sizeof msg))
        return 0;
    if (!page_can_run(&c[0], d.vocab.vocab_size) ||
        (has_pair && !page_can_run(&c[1], d.vocab.vocab_size))) {
        dataset_free(&d);
        return 0;
    }
    int nv = has_pair ? 2 : 1;
    Variant w[2];
    for (int v = 0; v < nv; v++) variant_build(&w[v], &c[v], d.vocab.vocab_size);
    Rng r;
    rng_seed(&r, (uint64_t)c[0].seed);
    gpt_init(&w[0].m, strcmp(c[0].init, "fan_in") == 0 ? INIT_FAN_IN : INIT_GPT2, &r);
    if (nv == 2) {
        // the tensors variant 0 lacks (QK-norm's gains and biases) start as gpt_init starts them,
        // 1 and 0; every other tensor is variant 0's
        rng_seed(&r, (uint64_t)c[0].seed);
        gpt_init(&w[1].m, strcmp(c[1].init, "fan_in") == 0 ? INIT_FAN_IN : INIT_GPT2, &r);
        gpt_copy_params(&w[1].m, &w[0].m);
    }
    for (int v = 0; v < nv; v++) rng_seed(&w[v].st.rng, (uint64_t)c[0].seed + 1);
    if (which >= 0) {  // only that variant, in slot 0
        variant_free(&w[1 - which]);
        w[0] = w[which];
        nv = 1;
    }
    install(w, nv, &d);
    snprintf(pair_override, sizeof pair_override, "%s", has_pair ? override : "");
    pair_which = which;
    return (long)var[0].m.n_params;
}
// The config alone (compare 0), or with its unscaled twin (compare 1: "model.attn_scale=none"),
// both in this module.
EXPORT("pg_init") long pg_init(const char *json, int n, int compare) {
    return pg_init_pair(json, n, compare ? "model.attn_scale=none" : NULL, -1);
}

// Settings that apply at the next step while training, as TensorFlow Playground's do: the
// learning rate and its schedule, the AdamW settings, clipping and the z-loss. The config (JSON
// text) is resolved as at Reset; each built variant takes these keys from it (the pair's override
// kept) and records them for its checkpoints. Returns 1 when nothing else differs from the built
// config, 2 when other keys differ too (they apply at Reset), 0 with the reason in pg_message().
static void take_optimizer(Config *dst, const Config *src) {
    dst->lr = src->lr, dst->min_lr = src->min_lr, dst->warmup_steps = src->warmup_steps;
    dst->lr_decay_steps = src->lr_decay_steps, dst->max_steps = src->max_steps;
    dst->beta1 = src->beta1, dst->beta2 = src->beta2, dst->eps = src->eps;
    dst->weight_decay = src->weight_decay, dst->grad_clip = src->grad_clip,
    dst->z_loss = src->z_loss;
}
EXPORT("pg_retune") int pg_retune(const char *json, int n) {
    if (!var[0].built) {
        snprintf(msg, sizeof msg, "no model: press Reset");
        return 0;
    }
    Config c;
    if (!resolve_config(&c, json, (size_t)n, "the page's config")) return 0;
    int other = 0;
    for (int v = 0; v < 2; v++) {
        Variant *w = &var[v];
        if (!w->built) continue;
        int is_pair = pair_override[0] && (pair_which == 1 || (pair_which < 0 && v == 1));
        Config want = c;
        if (is_pair && (!config_apply_override(&want, pair_override, msg, sizeof msg) ||
                        !config_finalize(&want, msg, sizeof msg)))
            return 0;
        // what differs besides these keys: the config as built with them taken from the new one
        Config t = w->cfg;
        take_optimizer(&t, &want);
        char *a = config_to_json(&t), *b = config_to_json(&want);
        other |= strcmp(a, b) != 0;
        free(a), free(b);
        take_optimizer(&w->cfg, &want);
        gpt_set_z_loss(&w->m, w->cfg.z_loss);
        free(w->cfg_json);
        w->cfg_json = config_to_json(&w->cfg);
    }
    return other ? 2 : 1;
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
    if (train_update(&w->m, c, loss, lr, step + 1 - w->st.skipped_steps, 0, &norm))
        w->st.skipped_steps++;
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
// whether it is built, 5 parameters, 6 train.seed.
EXPORT("pg_info") double pg_info(int v, int what) {
    const Variant *w = &var[v & 1];
    if (!w->built) return 0;
    switch (what) {
    case 0:
        return w->m.dims.n_layer;
    case 1:
        return w->m.dims.n_head;
    case 2:
        return (double)w->st.step;
    case 3:
        return w->m.dims.vocab_size;
    case 4:
        return 1;
    case 5:
        return (double)w->m.n_params;
    case 6:
        return (double)w->cfg.seed;
    }
    return 0;
}

// ---- checkpoints (through the worker's memory file system) ----

// Variant v as a checkpoint at SAVE_PATH, by run/checkpoint.c (what ./train --resume and
// ./sample read). Returns 1, or 0 with the reason in pg_message().
EXPORT("pg_save") int pg_save(int v) {
    Variant *w = &var[v & 1];
    if (!w->built) {
        snprintf(msg, sizeof msg, "no model to save");
        return 0;
    }
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
    if (!ck.has_optimizer) {
        snprintf(msg, sizeof msg, "'%s' holds no optimizer state and cannot be resumed", path);
        goto done;
    }
    if (!dataset_load_with_vocab(&d, TEXT_PATH, c.val_fraction, c.block_size + 2, &ck.vocab, msg,
                                 sizeof msg)) {
        char why[sizeof msg];
        snprintf(why, sizeof why, "%s", msg);
        // the reason after the sentence, cut at the buffer's end when the two do not fit
        int at = snprintf(
            msg, sizeof msg,
            "the page's text does not fit '%s' (choose the text it was trained on): ", path);
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

// Mean validation loss of variant v over k batches drawn from a fixed seed (the same windows each
// call).
EXPORT("pg_val_loss") double pg_val_loss(int v, int k) {
    if (!var[v & 1].built) return NAN;
    Rng r;
    rng_seed(&r, 12345);
    // batches of their own: bx, by keep the training batch pg_measure reads
    int *vx = malloc((size_t)B * T * sizeof(int)), *vy = malloc((size_t)B * T * sizeof(int));
    if (!vx || !vy) {
        free(vx), free(vy);
        snprintf(msg, sizeof msg, "out of memory for the validation batch");
        return NAN;
    }
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
// The largest attention logit of (layer, head): max over the batch's rows of the largest score S
// the mask keeps (attention_stats.c's max logit, as ./train's attention.csv reports it).
EXPORT("pg_max_logit") double pg_max_logit(int v, int lh) {
    if (!var[v & 1].built) return NAN;
    const AttnStats *a = &var[v & 1].m.attn_stats[lh];
    return a->score_rows > 0 ? a->score_max : NAN;
}

// The page's curves: over the heads of variant v, the mean of pg_entropy (what 0), of
// pg_max_weight (1), of pg_grad_gain (2), and the largest pg_max_logit (3, as ./train's max_logit
// is the largest over the layers and heads).
EXPORT("pg_summary") double pg_summary(int v, int what) {
    if (!var[v & 1].built) return NAN;
    int heads = var[v & 1].m.dims.n_layer * var[v & 1].m.dims.n_head, k = 0;
    double s = what == 3 ? -INFINITY : 0;
    for (int lh = 0; lh < heads; lh++) {
        double x = what == 0   ? pg_entropy(v, lh)
                   : what == 1 ? pg_max_weight(v, lh)
                   : what == 2 ? pg_grad_gain(v, lh)
                               : pg_max_logit(v, lh);
        if (isnan(x)) continue;
        s = what == 3 ? (x > s ? x : s) : s + x;
        k++;
    }
    return k == 0 ? NAN : what == 3 ? s : s / k;
}
// Whether the model of variant v replaces the score of query t, key u (attention_masked): the
// cells the page's maps hatch.
EXPORT("pg_masked") int pg_masked(int v, int t, int u) {
    return var[v & 1].built && attention_masked(&var[v & 1].m.attn, t, u);
}

// ---- the views: the probe prompt's attention map and a sample of generated text ----
// Both run a forward pass of one sequence after pg_measure; the next pg_step starts with its own
// forward, so neither changes what is trained.
#include "report/attention_map.h"  // ATTENTION_NOT_EXPLANATION, the line every map carries
#include "run/generate.h"  // the native sampler (run/generate.c, with the KV cache of run/decode.c)

EXPORT("pg_caveat") const char *pg_caveat(void) { return ATTENTION_NOT_EXPLANATION; }

static int *view_tokens;  // the prompt's tokens (at most block_size)
static double *view_map;  // (T, T) the weights P of the last pg_attention
static char *view_text;   // the last pg_sample's characters, UTF-8, 0-terminated

// A prompt (UTF-8, n bytes) -> at most `cap` tokens in view_tokens; returns how many, or -1 with
// a message naming every distinct character the text's vocabulary does not have.
static int encode_view_prompt(const unsigned char *bytes, int n, int cap) {
    uint32_t *cps = NULL;
    size_t ncp = 0, bad = 0, len = 0;
    if (!utf8_decode(bytes, (size_t)n, &cps, &ncp, &bad)) {
        snprintf(msg, sizeof msg, "the prompt is not UTF-8: invalid byte sequence at offset %zu",
                 bad);
        return -1;
    }
    if (ncp == 0) {
        snprintf(msg, sizeof msg, "the prompt is empty: type at least one character of the text");
        free(cps);
        return -1;
    }
    len =
        (size_t)snprintf(msg, sizeof msg, "the prompt has characters the text's vocabulary lacks:");
    int unknown = 0;
    for (size_t i = 0; i < ncp; i++) {
        if (vocab_lookup(&ds.vocab, cps[i]) >= 0) continue;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = cps[j] == cps[i];
        if (seen || len + 24 >= sizeof msg) continue;
        char ch[5] = {0};
        utf8_encode(cps[i], ch);
        len +=
            (size_t)snprintf(msg + len, sizeof msg - len, "%s '%s' (U+%04X)", unknown++ ? "," : "",
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

// Variant v's model when it is built and has that layer and head; NULL with the reason in msg.
static GPT *view_model(int v, int layer, int head) {
    GPT *m = &var[v & 1].m;
    if (!var[v & 1].built) {
        snprintf(msg, sizeof msg, "no model: press Reset");
        return NULL;
    }
    if (layer < 0 || layer >= m->dims.n_layer || head < 0 || head >= m->dims.n_head) {
        snprintf(msg, sizeof msg, "layer %d, head %d: the model has layers 0..%d and heads 0..%d",
                 layer, head, m->dims.n_layer - 1, m->dims.n_head - 1);
        return NULL;
    }
    return m;
}

// The attention weights P of (layer, head) of variant v for the prompt's first block_size
// characters: one forward pass of that sequence with the weights kept (the definition computes
// P; the engine keeps only each row's max and 1/sum). Returns T, the characters used, with
// P[t][u] (query t, key u) at pg_attention_map()[t * T + u]; 0 with the reason in pg_message().
EXPORT("pg_attention")
int pg_attention(int v, const unsigned char *bytes, int n, int layer, int head) {
    GPT *m = view_model(v, layer, head);
    if (!m) return 0;
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
EXPORT("pg_sample")
const char *pg_sample(int v, const unsigned char *bytes, int n, int k, double temperature,
                      unsigned seed) {
    GPT *m = &var[v & 1].m;
    if (!var[v & 1].built) {
        snprintf(msg, sizeof msg, "no model: press Reset");
        return NULL;
    }
    if (k < 1 || k > 10000 || !(temperature >= 0)) {
        snprintf(msg, sizeof msg,
                 "sample of %d characters at temperature %g: expected 1..10000 and >= 0", k,
                 temperature);
        return NULL;
    }
    int T = encode_view_prompt(bytes, n, 1 << 20);
    if (T < 0) return NULL;
    size_t cap = (size_t)k * 4 + 1;  // a character is at most 4 bytes of UTF-8
    free(view_text);
    view_text = calloc(cap, 1);
    FILE *out = fmemopen(view_text, cap, "w");
    if (!out) {
        snprintf(msg, sizeof msg, "no memory for a sample of %d characters", k);
        return NULL;
    }
    Rng r;
    rng_seed(&r, seed);
    generate(m, &ds.vocab, view_tokens, T, k, temperature, 0, &r, out);
    fclose(out);
    return view_text;
}

// ---- the five steps of attention for one query, computed by the definition (attention.c) ----
// S = Q K^T (score), times the scale (scale), the mask (mask), P = softmax(S) (softmax), O = P V
// (mix); and the gradient that survives the softmax: J = diag(p) - p p^T for the query's row p,
// each column computed by softmax_backward (the vector-Jacobian product the backward uses), with
// ||J||_F, and, for a trained model, the row's gain ||dS_row|| / ||dP_row|| of the probe's
// next-character loss (the statistic ./train reports as the grad gain, for this row alone).
// Layout of pg_five_view() (doubles): [0] T, [1] hd, [2] query, [3] scale, [4] row gain (NaN:
// none), [5] ||J||_F, [6] the row's normalised entropy, [7] its max weight, [8] keys the row
// sees; then raw[T], scaled[T], masked[T] (-inf where the mask removes a key, 0 under the "zero"
// mistake), hidden[T] (1 where the mask replaced the score: attention_masked), p[T], J[T*T],
// V[T*hd], out[hd].
#define FIVE_HEAD 9
static double *five;
EXPORT("pg_five_view") const double *pg_five_view(void) { return five; }

// The five steps of query t of one head: Q, K, V are (T, hd) rows; spec as the model's.
// row_gain: the row's gain when known; with dO (T, hd; may be NULL) it is computed here instead, by
// the definition's backward (attention_backward) from dL/dO = dO.
static int five_compute(const real *Q, const real *K, const real *V, int T, int hd,
                        const AttnSpec *spec, int t, double row_gain, const real *dO) {
    size_t nfive = FIVE_HEAD + 5 * (size_t)T + (size_t)T * T + (size_t)T * hd + (size_t)hd;
    real *S = malloc(attention_definition_scratch_reals(T, hd) * sizeof(real));
    real *P = malloc((size_t)T * T * sizeof(real)), *O = malloc((size_t)T * hd * sizeof(real));
    real *e = malloc((size_t)T * sizeof(real)), *col = malloc((size_t)T * sizeof(real));
    double *f = realloc(five, nfive * sizeof(double));
    if (!S || !P || !O || !e || !col || !f) {
        free(S), free(P), free(O), free(e), free(col);
        if (f) five = f;
        snprintf(msg, sizeof msg, "out of memory for the five steps of %d positions", T);
        return 0;
    }
    five = f;
    double *raw = f + FIVE_HEAD, *scaled = raw + T, *masked = scaled + T, *hidden = masked + T,
           *p = hidden + T, *J = p + T;
    double *vrows = J + (size_t)T * T, *out = vrows + (size_t)T * hd;
    AttnShape sh = {1, T, hd, 1};
    AttnQKV in = {Q, K, V};
    // the scores the definition computes, stopped after each step: no scale and no mask, the
    // scale and no mask, then the whole spec (scratch holds S after the mask; P and O its result)
    AttnSpec steps[3] = {*spec, *spec, *spec};
    steps[0].scale = 1, steps[0].mask = ATTN_MASK_NONE, steps[0].window = 0;
    steps[1].mask = ATTN_MASK_NONE, steps[1].window = 0;
    double *dst[3] = {raw, scaled, masked};
    for (int k = 0; k < 3; k++) {
        attention_forward(O, P, S, in, sh, &steps[k], NULL);
        for (int u = 0; u < T; u++) dst[k][u] = S[t * T + u];
    }
    for (int u = 0; u < T; u++) p[u] = P[t * T + u], hidden[u] = attention_masked(spec, t, u);
    if (dO) {
        real *g = malloc(((size_t)3 * T * hd + T) * sizeof(real));
        if (!g) {
            snprintf(msg, sizeof msg, "out of memory");
            free(S), free(P), free(O), free(e), free(col);
            return 0;
        }
        attention_backward((AttnGradQKV){g, g + T * hd, g + 2 * T * hd}, S, dO, O, P, in, sh, spec,
                           NULL, g + 3 * T * hd, GRAD_STORE);
        row_gain = g[3 * T * hd + t];
        free(g);
    }
    for (int u = 0; u < T * hd; u++) vrows[u] = V[u];
    for (int i = 0; i < hd; i++) out[i] = O[t * hd + i];
    // J's column j = J e_j (J is symmetric), over the whole row: a masked key has p = 0, so its
    // row and column of J are 0
    double jf = 0;
    for (int u = 0; u < T; u++) col[u] = (real)p[u];
    for (int j = 0; j < T; j++) {
        for (int u = 0; u < T; u++) e[u] = u == j;
        softmax_backward(S, e, col, T);  // S reused as the column
        for (int u = 0; u < T; u++) J[(size_t)u * T + j] = S[u], jf += (double)S[u] * S[u];
    }
    int first = attention_first_key(spec, t), n = attention_visible_keys(spec, t, T);
    double h = NAN, mw = NAN;
    if (n >= 2) {
        attention_row_stats(col + first, n, &h, &mw);
        h /= log((double)n);
    }
    double head[FIVE_HEAD] = {T, hd, t, spec->scale, row_gain, sqrt(jf), h, mw, n};
    memcpy(f, head, sizeof head);
    free(S), free(P), free(O), free(e), free(col);
    return 1;
}

// The five steps of the lesson's own numbers (./lab examples: Q, K, V given, T rows of d, and
// dL/dO = dO for the gradient, may be NULL), with scale (0: 1/sqrt(d)) and the mask (0 causal, 2
// none). Returns 1, or 0 with the reason.
EXPORT("pg_five_qkv")
int pg_five_qkv(const double *q, const double *k, const double *v, const double *dO, int T, int d,
                double scale, int mask, int query) {
    if (T < 1 || T > 64 || d < 1 || d > 64 || query < 0 || query >= T || (mask != 0 && mask != 2)) {
        snprintf(
            msg, sizeof msg,
            "the example: %d rows of %d, query %d, mask %d: expected 1..64 rows, 1..64 columns, "
            "a query of the rows, mask 0 or 2",
            T, d, query, mask);
        return 0;
    }
    real *buf = malloc((size_t)4 * T * d * sizeof(real));
    if (!buf) {
        snprintf(msg, sizeof msg, "out of memory");
        return 0;
    }
    for (int i = 0; i < T * d; i++)
        buf[i] = (real)q[i], buf[T * d + i] = (real)k[i], buf[2 * T * d + i] = (real)v[i],
        buf[3 * T * d + i] = dO ? (real)dO[i] : 0;
    AttnSpec spec = {scale > 0 ? (real)scale : (real)(1.0 / sqrt((double)d)), (AttnMask)mask,
                     SOFTMAX_OVER_KEYS, 0, NULL};
    int ok = five_compute(buf, buf + T * d, buf + 2 * T * d, T, d, &spec, query, NAN,
                          dO ? buf + 3 * T * d : NULL);
    free(buf);
    return ok;
}

// The five steps of query `query` of (layer, head) of variant v on the probe prompt (its first
// block_size characters): the head's Q, K, V from a forward pass of the prompt, the model's spec;
// the row gain from a forward and backward of the prompt's next-character loss (the last
// character has no next one: its gain is NaN). Returns T, or 0 with the reason.
EXPORT("pg_five")
int pg_five(int v, const unsigned char *bytes, int n, int layer, int head, int query) {
    GPT *m = view_model(v, layer, head);
    if (!m) return 0;
    int T = encode_view_prompt(bytes, n, m->dims.block_size);
    if (T < 0) return 0;
    if (query < 0 || query >= T) query = T - 1;
    int C = m->dims.n_embd, NH = m->dims.n_head, hd = C / NH;
    double gain = NAN;
    if (query < T - 1) {  // the loss of predicting characters 1..T-1 from 0..T-2
        m->collect_stats = 1;
        gpt_forward(m, view_tokens, view_tokens + 1, 1, T - 1);
        gpt_backward(m);
        m->collect_stats = 0;
        gain = m->row_gain[(size_t)layer * (T - 1) * NH + (size_t)head * (T - 1) + query];
    }
    m->keep_weights = 1;
    gpt_forward(m, view_tokens, NULL, 1, T);
    m->keep_weights = 0;
    real *qkv = malloc((size_t)3 * T * hd * sizeof(real));
    if (!qkv) {
        snprintf(msg, sizeof msg, "out of memory");
        return 0;
    }
    const LayerActs *A = &m->acts.layers[layer];
    for (int t = 0; t < T; t++)
        for (int i = 0; i < hd; i++) {
            size_t at = (size_t)t * C + (size_t)head * hd + i;
            qkv[t * hd + i] = A->q[at], qkv[T * hd + t * hd + i] = A->k[at],
                         qkv[2 * T * hd + t * hd + i] = A->v[at];
        }
    int ok = five_compute(qkv, qkv + T * hd, qkv + 2 * T * hd, T, hd, &m->attn, query, gain, NULL);
    free(qkv);
    return ok ? T : 0;
}

// ---- the induction head (docs/induction.md): its data and its probe, by run/induction.c ----
#include "run/induction.h"

// The page's text (n bytes) with repeated random strings mixed in (induction_mix_text: each line
// a string of 6-16 letters written twice with probability percent/100, else the text's next line;
// draws from seed) becomes TEXT_PATH, as pg_set_text makes it. Returns the bytes written, 0 with
// the reason in pg_message().
EXPORT("pg_set_induction_text")
int pg_set_induction_text(const unsigned char *bytes, int n, int percent, unsigned seed) {
    if (percent < 0 || percent > 99) {
        snprintf(msg, sizeof msg, "the share of repeated lines is %d%%: expected 0..99", percent);
        return 0;
    }
    size_t len = 0;
    char *text = induction_mix_text((const char *)bytes, (size_t)n, percent, seed, &len);
    int ok = len < (size_t)1 << 30 && pg_set_text((const unsigned char *)text, (int)len);
    free(text);
    return ok ? (int)len : 0;
}

// The induction probe of each variant, as ./train builds it (induction_new: train.seed,
// batch_size rows of block_size characters of the text's letters) and measures it
// (induction_measure); built again at each measurement (a few hundred draws), so it always
// follows the built model and text.
static Induction *probe_of[2];

// Measures the first n variants on their induction probes (a forward of the probe; the parameters
// and the next step untouched). Returns 1, or 0 with the reason in pg_message().
EXPORT("pg_induction") int pg_induction(int n) {
    for (int v = 0; v < n && v < 2; v++) {
        Variant *w = &var[v];
        if (!w->built) {
            snprintf(msg, sizeof msg, "no model: press Reset");
            return 0;
        }
        induction_free(probe_of[v]);
        Induction *ind = probe_of[v] =
            induction_new(&ds.vocab, (uint64_t)w->cfg.seed, w->cfg.batch_size, w->cfg.block_size,
                          w->m.dims.n_layer, w->m.dims.n_head);
        if (!ind) {
            snprintf(msg, sizeof msg, "block_size %d: the induction probe needs at least 4",
                     w->cfg.block_size);
            return 0;
        }
        induction_measure(&w->m, ind, w->st.step);
    }
    return 1;
}

// The last pg_induction of variant v: what 0 the previous-token score of head lh (layer * n_head
// + head), 1 its induction score; 2 the loss on the first copy, 3 on the second, 4 the in-context
// score (second - first); 5 the largest induction score of the last layer's heads
// (docs/induction.md's threshold is on those), 6 the largest previous-token score of layer 0's
// heads. NaN if none.
EXPORT("pg_induction_score") double pg_induction_score(int v, int what, int lh) {
    const Induction *ind = probe_of[v & 1];
    if (!var[v & 1].built || !ind || ind->step < 0) return NAN;
    int NH = var[v & 1].m.dims.n_head, from = what == 5 ? ind->n_heads - NH : 0,
        to = what == 5 ? ind->n_heads : NH;
    double best = -INFINITY;
    switch (what) {
    case 0:
    case 1:
        if (lh < 0 || lh >= ind->n_heads) return NAN;
        return what == 0 ? ind->prev_token[lh] : ind->induction[lh];
    case 2:
        return ind->first_copy_loss;
    case 3:
        return ind->second_copy_loss;
    case 4:
        return ind->second_copy_loss - ind->first_copy_loss;
    case 5:
    case 6:
        for (int i = from; i < to; i++) {
            double x = what == 5 ? ind->induction[i] : ind->prev_token[i];
            if (x > best) best = x;
        }
        return best;
    default:
        return NAN;
    }
}
