// base/config.h: the run configuration, its defaults, strict JSON loading and --section.key=value
// overrides.
#ifndef CONFIG_H
#define CONFIG_H

#include <stddef.h>

// Every configurable value. The table in base/config.c (one row per key: dotted path, type, field
// offset, default, allowed range, help text) is the single source for defaults, parsing,
// validation, `--help`, the resolved-config JSON and docs/CONFIG.md's key reference.
typedef struct {
    char name[128];  // run name; default: config file's base name without .json

    // model
    int n_layer;
    int n_head;
    int n_embd;
    int block_size;
    double attn_scale;  // the factor of Q K^T, resolved by config_finalize from attn_scale_str
    char attn_scale_str[64];  // as configured: "sqrt", "none", or a positive number
    char init[16];            // "gpt2" or "fan_in"
    char attn_impl[16];       // "engine" (kernels/attention_engine.c) or "definition" (attention.c)
    char attn_mask[16];       // "causal", or the mistakes "zero" and "none"
    char softmax_axis[16];    // "keys", or the mistake "queries"
    int attn_window;          // 0: every earlier key; W > 0: query t sees keys t-W+1 .. t
    char impl[16];            // "engine" (kernels/model_engine.c) or "definition" (model.c)
    char qk_norm[16];  // "none", "layernorm" or "rmsnorm": queries and keys normalised per head

    // data
    char data_path[1024];
    double val_fraction;

    // train
    int batch_size;
    int max_steps;
    double lr;
    double min_lr;
    int warmup_steps;
    int lr_decay_steps;  // cosine decay reaches min_lr here; 0 = max_steps
    double beta1, beta2, eps;
    double weight_decay;
    double grad_clip;  // 0 = no clipping
    double z_loss;     // coefficient of z_loss * mean(log(Z)^2) of the output logits; 0 = off
    int seed;
    int threads;           // 0 = OpenMP default (OMP_NUM_THREADS or all cores)
    int ckpt_interval;     // steps between checkpoints; 0 = only at the end
    int keep_checkpoints;  // keep the last N checkpoint_<step>.bin besides checkpoint.bin
    int max_bad_steps;     // consecutive non-finite steps before stopping
    double spike_zscore;   // loss-spike guard threshold; 0 = off
    int spike_window;
    char out_dir[1024];  // default: out/<name>
    char overwrite[8];   // "true": a new run replaces the run in out_dir; "false": refused

    // log
    int log_interval;
    int eval_interval;
    int eval_steps;
    int attn_interval;  // attention statistics every N steps (and step 0); 0 = off
    int gen_windows;    // validation windows of the honest loss gen_loss; 0 = off

    // sample (printed at the end of training)
    int sample_tokens;
    double sample_temperature;
    int sample_top_k;
    char sample_prompt[256];
} Config;

// Fill every field with its default.
void config_defaults(Config *cfg);

// Load a JSON config file over the defaults. Strict: rejects invalid JSON (with line and column),
// unknown keys (suggesting the closest valid one), duplicate keys, keys that differ only in case,
// wrong types, non-finite or out-of-range values. On error writes one line to `err` (size errlen)
// and returns 0. Sets cfg->name from the file's base name when the file has no "name".
int config_load_file(Config *cfg, const char *path, char *err, size_t errlen);

// Same, from a JSON text (`origin` names it in messages, e.g. a checkpoint path).
int config_load_json(Config *cfg, const char *json, size_t len, const char *origin, char *err,
                     size_t errlen);

// Apply one "--section.key=value" override (arg without the leading "--"). Returns 0 with a
// message in err on an unknown key, a bad value or a missing '='.
int config_apply_override(Config *cfg, const char *arg, char *err, size_t errlen);

// Cross-field validation (n_embd divisible by n_head, min_lr <= lr, ...) and derived fields
// (attn_scale from attn_scale_str, out_dir default). Returns 0 with a message on error.
int config_finalize(Config *cfg, char *err, size_t errlen);

// The resolved configuration as a JSON object text (malloc'd; caller frees). Loading it back with
// config_load_json gives the same Config.
char *config_to_json(const Config *cfg);

// The factor a value of model.attn_scale gives for heads of head_dim columns: 1/sqrt(head_dim)
// for "sqrt", 1 for "none", the number itself otherwise; NaN for any other text. config_finalize
// resolves attn_scale with it.
double config_scale_factor(const char *text, int head_dim);

// Print the key reference (path, type, default, range, meaning) to `f`, for --help and
// docs/CONFIG.md.
#include <stdio.h>
void config_print_reference(FILE *f, int markdown);
// Whether key is a configuration key and, when value is not NULL, a value it takes under its
// current name (an enum key's names, not the older ones it still reads; a number within its
// range): what the docs may name.
int config_names_value(const char *key, const char *value);

#endif
