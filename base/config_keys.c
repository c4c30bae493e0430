// base/config_keys.c: the key table: everything about a key in one row, its dotted path, type,
// where it is stored in Config, its default, its allowed range (or names) and its help text.
#include "base/config_keys.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

#define FIELD(f)  .offset = offsetof(Config, f), .size = sizeof(((Config *)0)->f)
#define STEPS_MAX 1000000000.0  // any step count above this is a typo, not a plan

static const char *const INIT_NAMES[] = {"gpt2", "fan_in", NULL};
static const char *const ATTN_IMPL_NAMES[] = {"engine", "definition", NULL};
// the names of older configurations and checkpoints
static const char *const ATTN_IMPL_ALIASES[] = {"fast", "engine", "reference", "definition", NULL};
static const char *const ATTN_MASK_NAMES[] = {"causal", "zero", "none", NULL};
static const char *const SOFTMAX_AXIS_NAMES[] = {"keys", "queries", NULL};
static const char *const BOOL_NAMES[] = {"false", "true", NULL};
static const char *const QK_NORM_NAMES[] = {"none", "layernorm", "rmsnorm", NULL};
static const char *const MODEL_IMPL_NAMES[] = {"engine", "definition", NULL};

// Rows of one section must be contiguous (config_to_json writes them as one JSON object).
const KeySpec CONFIG_KEYS[] = {
    {.key = "name",
     .type = T_STR,
     FIELD(name),
     .def_str = "",
     .min = 0,
     .max = 127,
     .help = "run name; empty = the config file's base name without .json, else \"run\""},

    {.key = "model.n_layer",
     .type = T_INT,
     FIELD(n_layer),
     .def = 4,
     .min = 1,
     .max = 64,
     .help = "number of transformer blocks"},
    {.key = "model.n_head",
     .type = T_INT,
     FIELD(n_head),
     .def = 4,
     .min = 1,
     .max = 256,
     .help = "attention heads per block; must divide model.n_embd"},
    {.key = "model.n_embd",
     .type = T_INT,
     FIELD(n_embd),
     .def = 128,
     .min = 1,
     .max = 8192,
     .help = "embedding width (channels)"},
    {.key = "model.block_size",
     .type = T_INT,
     FIELD(block_size),
     .def = 64,
     .min = 1,
     .max = 65536,
     .help = "context length in characters"},
    {.key = "model.attn_scale",
     .type = T_SCALE,
     FIELD(attn_scale_str),
     .def_str = "sqrt",
     .min = 0,
     .min_open = 1,
     .max = 100,
     .help = "attention logit scale: \"sqrt\" = 1/sqrt(head_dim), \"none\" = 1, or a fixed "
             "positive factor"},
    {.key = "model.init",
     .type = T_STR,
     FIELD(init),
     .def_str = "gpt2",
     .min = 1,
     .max = 15,
     .enums = INIT_NAMES,
     .help = "weight initialization scheme"},
    {.key = "model.attn_impl",
     .type = T_STR,
     FIELD(attn_impl),
     .def_str = "engine",
     .min = 1,
     .max = 15,
     .enums = ATTN_IMPL_NAMES,
     .aliases = ATTN_IMPL_ALIASES,
     .help = "which attention trains: \"engine\" (kernels/attention_engine.c) or \"definition\" "
             "(attention.c); same function, the tests prove them equal (the older names \"fast\" "
             "and \"reference\" are read as these)"},
    {.key = "model.attn_mask",
     .type = T_STR,
     FIELD(attn_mask),
     .def_str = "causal",
     .min = 1,
     .max = 15,
     .enums = ATTN_MASK_NAMES,
     .help = "\"causal\" = scores above the diagonal set to -inf; the mistakes: \"zero\" = set to "
             "0 (the future keeps weight), \"none\" = no mask"},
    {.key = "model.softmax_axis",
     .type = T_STR,
     FIELD(softmax_axis),
     .def_str = "keys",
     .min = 1,
     .max = 15,
     .enums = SOFTMAX_AXIS_NAMES,
     .help = "\"keys\" = each query's row of weights sums to 1; the mistake \"queries\" = each "
             "key's column is normalised over the queries"},
    {.key = "model.attn_window",
     .type = T_INT,
     FIELD(attn_window),
     .def = 0,
     .min = 0,
     .max = 65536,
     .help = "sliding-window attention: 0 = every earlier key, W > 0 = query t sees only keys "
             "t-W+1 .. t; at most "
             "model.block_size, and only with model.attn_mask \"causal\" (the window narrows the "
             "causal mask; the "
             "mistakes \"zero\" and \"none\" have none to narrow)"},
    {.key = "model.qk_norm",
     .type = T_STR,
     FIELD(qk_norm),
     .def_str = "none",
     .min = 1,
     .max = 15,
     .enums = QK_NORM_NAMES,
     .omit_default = 1,
     .help = "QK-norm: \"none\", or each head's query and key rows normalised over the head's "
             "columns before the "
             "scores, \"layernorm\" (learned gain and bias per head column) or \"rmsnorm\" (gain); "
             "model.attn_scale "
             "then acts as a temperature"},
    {.key = "model.impl",
     .type = T_STR,
     FIELD(impl),
     .def_str = "engine",
     .min = 1,
     .max = 15,
     .enums = MODEL_IMPL_NAMES,
     .omit_default = 1,
     .help = "which code computes the model: \"engine\" (kernels/model_engine.c, its attention by "
             "model.attn_impl) or \"definition\" (model.c's plain loops with attention.c's "
             "attention: slow); "
             "same function, the tests prove them equal"},

    {.key = "data.path",
     .type = T_STR,
     FIELD(data_path),
     .def_str = "data/default.txt",
     .min = 1,
     .max = 1023,
     .help = "UTF-8 text file to train on (one Unicode character = one token)"},
    {.key = "data.val_fraction",
     .type = T_NUM,
     FIELD(val_fraction),
     .def = 0.1,
     .min = 0,
     .min_open = 1,
     .max = 1,
     .max_open = 1,
     .help = "fraction of the text held out for validation"},

    {.key = "train.batch_size",
     .type = T_INT,
     FIELD(batch_size),
     .def = 12,
     .min = 1,
     .max = 65536,
     .help = "sequences per optimizer step"},
    {.key = "train.max_steps",
     .type = T_INT,
     FIELD(max_steps),
     .def = 2000,
     .min = 1,
     .max = STEPS_MAX,
     .help = "number of optimizer steps"},
    {.key = "train.lr",
     .type = T_NUM,
     FIELD(lr),
     .def = 1e-3,
     .min = 0,
     .min_open = 1,
     .max = 10,
     .help = "peak learning rate (reached after warmup)"},
    {.key = "train.min_lr",
     .type = T_NUM,
     FIELD(min_lr),
     .def = 1e-4,
     .min = 0,
     .max = 10,
     .help = "learning rate at the end of the cosine decay; must be <= train.lr"},
    {.key = "train.warmup_steps",
     .type = T_INT,
     FIELD(warmup_steps),
     .def = 100,
     .min = 0,
     .max = STEPS_MAX,
     .help = "steps of linear learning-rate warmup"},
    {.key = "train.lr_decay_steps",
     .type = T_INT,
     FIELD(lr_decay_steps),
     .def = 0,
     .min = 0,
     .max = STEPS_MAX,
     .help = "step at which the cosine decay reaches train.min_lr; 0 = train.max_steps"},
    {.key = "train.beta1",
     .type = T_NUM,
     FIELD(beta1),
     .def = 0.9,
     .min = 0,
     .max = 1,
     .max_open = 1,
     .help = "AdamW first-moment decay"},
    {.key = "train.beta2",
     .type = T_NUM,
     FIELD(beta2),
     .def = 0.99,
     .min = 0,
     .max = 1,
     .max_open = 1,
     .help = "AdamW second-moment decay"},
    {.key = "train.eps",
     .type = T_NUM,
     FIELD(eps),
     .def = 1e-8,
     .min = 0,
     .min_open = 1,
     .max = 1,
     .help = "AdamW epsilon"},
    {.key = "train.weight_decay",
     .type = T_NUM,
     FIELD(weight_decay),
     .def = 0.1,
     .min = 0,
     .max = 10,
     .help = "AdamW decoupled weight decay"},
    {.key = "train.grad_clip",
     .type = T_NUM,
     FIELD(grad_clip),
     .def = 1.0,
     .min = 0,
     .max = 1e6,
     .help = "clip the global gradient norm to this; 0 = no clipping"},
    {.key = "train.z_loss",
     .type = T_NUM,
     FIELD(z_loss),
     .def = 0,
     .min = 0,
     .max = 1,
     .omit_default = 1,
     .help = "z-loss coefficient: adds z_loss * mean(log(Z)^2) of the output logits to the "
             "objective (Z the "
             "softmax's normaliser; PaLM used 1e-4); 0 = off"},
    {.key = "train.seed",
     .type = T_INT,
     FIELD(seed),
     .def = 1337,
     .min = 0,
     .max = INT_MAX,
     .help = "random seed"},
    {.key = "train.threads",
     .type = T_INT,
     FIELD(threads),
     .def = 0,
     .min = 0,
     .max = 1024,
     .help = "OpenMP threads; 0 = OMP_NUM_THREADS or all cores"},
    {.key = "train.ckpt_interval",
     .type = T_INT,
     FIELD(ckpt_interval),
     .def = 500,
     .min = 0,
     .max = STEPS_MAX,
     .help = "steps between checkpoints; 0 = only at the end"},
    {.key = "train.keep_checkpoints",
     .type = T_INT,
     FIELD(keep_checkpoints),
     .def = 0,
     .min = 0,
     .max = 1000000,
     .help = "keep the last N checkpoint_<step>.bin besides checkpoint.bin"},
    {.key = "train.max_bad_steps",
     .type = T_INT,
     FIELD(max_bad_steps),
     .def = 5,
     .min = 1,
     .max = 1000000,
     .help = "consecutive non-finite steps before stopping"},
    {.key = "train.spike_zscore",
     .type = T_NUM,
     FIELD(spike_zscore),
     .def = 0,
     .min = 0,
     .max = 1000,
     .help =
         "loss-spike guard: z-score threshold over the last train.spike_window losses; 0 = off"},
    {.key = "train.spike_window",
     .type = T_INT,
     FIELD(spike_window),
     .def = 50,
     .min = 2,
     .max = 1000000,
     .help = "number of recent losses the spike guard looks at"},
    {.key = "train.out_dir",
     .type = T_STR,
     FIELD(out_dir),
     .def_str = "",
     .min = 0,
     .max = 1023,
     .help = "output directory; empty = out/<name>"},
    {.key = "train.overwrite",
     .type = T_STR,
     FIELD(overwrite),
     .def_str = "false",
     .min = 1,
     .max = 5,
     .enums = BOOL_NAMES,
     .help = "\"true\": a new run replaces a run already in train.out_dir (its files are removed); "
             "else it is refused"},

    {.key = "log.log_interval",
     .type = T_INT,
     FIELD(log_interval),
     .def = 10,
     .min = 1,
     .max = STEPS_MAX,
     .help = "steps between training log lines"},
    {.key = "log.eval_interval",
     .type = T_INT,
     FIELD(eval_interval),
     .def = 250,
     .min = 1,
     .max = STEPS_MAX,
     .help = "steps between validation evaluations"},
    {.key = "log.eval_steps",
     .type = T_INT,
     FIELD(eval_steps),
     .def = 20,
     .min = 1,
     .max = 1000000,
     .help = "batches of each split (train and val) averaged per evaluation"},
    {.key = "log.gen_windows",
     .type = T_INT,
     FIELD(gen_windows),
     .def = 8,
     .min = 0,
     .max = 4096,
     .help = "gen_loss, the honest loss (each character predicted from the ones before it only, as "
             "generation sees "
             "them), over the first N block_size windows of the validation split (all (n_val - 1) "
             "/ block_size of them "
             "when it holds fewer) at every evaluation and at the end, printed beside the "
             "teacher-forced loss on the "
             "same windows; 0 = off"},
    {.key = "log.attn_interval",
     .type = T_INT,
     FIELD(attn_interval),
     .def = 50,
     .min = 0,
     .max = STEPS_MAX,
     .help = "attention statistics every N steps (and at step 0); 0 = off"},

    {.key = "sample.tokens",
     .type = T_INT,
     FIELD(sample_tokens),
     .def = 300,
     .min = 0,
     .max = 1000000,
     .help = "characters sampled at the end of training; 0 = no sample"},
    {.key = "sample.temperature",
     .type = T_NUM,
     FIELD(sample_temperature),
     .def = 0.8,
     .min = 0,
     .max = 100,
     .help = "sampling temperature; 0 = greedy (always the most likely character)"},
    {.key = "sample.top_k",
     .type = T_INT,
     FIELD(sample_top_k),
     .def = 40,
     .min = 0,
     .max = 1000000,
     .help = "sample only from the k most likely characters; 0 = off"},
    {.key = "sample.prompt",
     .type = T_STR,
     FIELD(sample_prompt),
     .def_str = "\n",
     .min = 1,
     .max = 255,
     .help = "text the sample continues"},
};
const int CONFIG_N_KEYS = (int)(sizeof CONFIG_KEYS / sizeof CONFIG_KEYS[0]);
_Static_assert(sizeof CONFIG_KEYS / sizeof CONFIG_KEYS[0] <= CONFIG_MAX_KEYS,
               "raise CONFIG_MAX_KEYS");

int config_find_key(const char *key) {
    for (int i = 0; i < CONFIG_N_KEYS; i++)
        if (strcmp(CONFIG_KEYS[i].key, key) == 0) return i;
    return -1;
}

// Length of the section prefix of a key ("model.n_layer" -> 5), 0 for a top-level key.
size_t config_section_len(const char *key) {
    const char *dot = strchr(key, '.');
    return dot ? (size_t)(dot - key) : 0;
}

int config_enum_index(const char *key, const char *value) {
    int k = config_find_key(key);
    const char *const *names = k >= 0 ? CONFIG_KEYS[k].enums : NULL;
    for (int i = 0; names && names[i]; i++)
        if (strcmp(names[i], value) == 0) return i;
    return -1;
}

const char *config_enum_name(const char *key, int index) {
    int k = config_find_key(key);
    const char *const *names = k >= 0 ? CONFIG_KEYS[k].enums : NULL;
    for (int i = 0; names && names[i]; i++)
        if (i == index) return names[i];
    return "?";
}

// Index of the first row of section `name`, or -1 when no key lives in such a section.
int config_find_section(const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < CONFIG_N_KEYS; i++)
        if (config_section_len(CONFIG_KEYS[i].key) == n && n > 0 &&
            strncmp(CONFIG_KEYS[i].key, name, n) == 0)
            return i;
    return -1;
}
