// teach/lab_gradcheck.c: ./lab gradcheck: the whole model's gradient (gpt_backward) against
// sixth-order central differences of gpt_forward, one row per parameter tensor (the check itself
// is teach/lab_core.c's gradcheck_model): its --help, options, the model it builds and the report.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"           // attention_setup
#include "base/common.h"         // real, REAL_NAME, die, xmalloc
#include "base/config.h"         // Config, config_load_file, config_apply_override
#include "model.h"               // GPT, gpt_build, gpt_init, gpt_memory_bytes
#include "teach/lab_args.h"      // the options' parsing
#include "teach/lab_commands.h"  // cmd_gradcheck
#include "teach/lab_core.h"      // gradcheck_model, gradcheck_print, lab_broken_attention

#define GRADCHECK_TOKEN_SEED  42  // the built-in random token sequence
#define GRADCHECK_SAMPLE_SEED 7   // which elements are sampled in big tensors
#define GRADCHECK_ALL_BELOW                                                                        \
    5000                        // models up to this many parameters are checked element by element
#define GRADCHECK_SAMPLES   8   // else this many elements per tensor
#define GRADCHECK_MAX_T     16  // default sequence length: min(block_size, this)
#define GRADCHECK_MAX_BYTES (1024.0 * 1024.0 * 1024.0)

static void usage_gradcheck(FILE *f) {
    fprintf(
        f,
        "usage: lab gradcheck [CONFIG] [--section.key=value ...] [--samples N] [--T N] "
        "[--break-backward]\n"
        "\n"
        "Compares the gradient of the mean cross-entropy computed by gpt_backward with "
        "sixth-order\n"
        "central differences of gpt_forward, one row per parameter tensor: max |analytic - "
        "numeric|,\n"
        "rel err = that / the tensor's largest |gradient|, pass or FAIL. Exit code 0 when every "
        "tensor\n"
        "passes, 1 when one fails.\n"
        "\n"
        "Without CONFIG the model is tiny: n_layer 2, n_head 2, n_embd 8, block_size 6, "
        "model.init\n"
        "fan_in (queries and keys of unit size, so every gradient, wq's and wk's included, stands "
        "far\n"
        "above float32's finite-difference noise), and the trainer's defaults otherwise\n"
        "(model.attn_scale sqrt, train.seed 1337); overrides apply on top, e.g. --model.init=gpt2\n"
        "--model.attn_scale=none. With CONFIG the\n"
        "model shape, model.init, model.attn_scale and train.seed come from it. Either way the "
        "input\n"
        "is a fixed random token sequence over a vocabulary of %d (no data file is read): %d\n"
        "sequences of T tokens. Each checked element costs 6 forward passes.\n"
        "  --samples N       elements checked per tensor; 0 = every element (default: every "
        "element\n"
        "                    for models up to %d parameters, else %d per tensor, drawn with a "
        "fixed seed)\n"
        "  --T N             tokens per sequence, 1 to block_size (default min(block_size, %d))\n"
        "  --break-backward  drop the \"- rowsum(dP * P)\" term of the softmax backward\n"
        "                    (the lab's own broken backward, teach/lab_core.c): the check must "
        "then FAIL on wq and wk\n"
        "\n"
        "Tolerance: rel err <= 1e-6 with step 2e-3 in float64 (lab64); in float32 (lab) the check "
        "is\n"
        "rough: step 1e-2, rel err <= 5e-2, and tensors with tiny gradients cannot be resolved.\n",
        GRADCHECK_TINY_VOCAB, GRADCHECK_TINY_BATCH, GRADCHECK_ALL_BELOW, GRADCHECK_SAMPLES,
        GRADCHECK_MAX_T);
}

// ---------------------------------------------------------------------------------------------
// gradcheck

int cmd_gradcheck(int argc, char **argv) {
    const char *config_path = NULL;
    const char **overrides = xcalloc((size_t)argc, sizeof(char *), "arguments");
    int n_overrides = 0, break_backward = 0;
    long long samples = -1, seq = -1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v;
        if (is_help(a)) {
            usage_gradcheck(stdout);
            free(overrides);
            return 0;
        }
        if (lab_switch(a, "--break-backward")) {
            break_backward = 1;
            continue;
        }
        if ((v = lab_option(argc, argv, &i, "--samples"))) {
            samples = parse_int("--samples", v, 0, 1000000000);
            continue;
        }
        if ((v = lab_option(argc, argv, &i, "--T"))) {
            seq = parse_int("--T", v, 1, 65536);
            continue;
        }
        if (strncmp(a, "--", 2) == 0 && strchr(a, '.') && strchr(a, '=')) {
            char key[160];
            snprintf(key, sizeof key, "%.*s", (int)(strchr(a, '=') - a), a);
            option_once(key, strchr(a, '=') + 1);
            overrides[n_overrides++] = a + 2;
            continue;
        }
        if (strncmp(a, "--", 2) == 0 && strchr(a, '.'))
            die(EXIT_USAGE, "gradcheck: override '%s' has no value: write %s=VALUE", a, a);
        if (a[0] == '-') unknown_option("gradcheck", a);
        if (config_path)
            die(EXIT_USAGE, "gradcheck: more than one config file given: '%s' and '%s'",
                config_path, a);
        config_path = a;
    }
    Config cfg;
    char err[1024];
    config_defaults(&cfg);
    if (config_path) {
        if (!config_load_file(&cfg, config_path, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    } else {
        ModelDims tiny;
        gradcheck_tiny_dims(&tiny);
        cfg.n_layer = tiny.n_layer;
        cfg.n_head = tiny.n_head;
        cfg.n_embd = tiny.n_embd;
        cfg.block_size = tiny.block_size;
        // unit-size queries and keys: under GPT-2's init (std 0.02) the gradients of wq and wk are
        // ~1e-5, below what float32 finite differences resolve, and those are the tensors the
        // softmax backward is checked by
        snprintf(cfg.init, sizeof cfg.init, "fan_in");
    }
    for (int i = 0; i < n_overrides; i++)
        if (!config_apply_override(&cfg, overrides[i], err, sizeof err)) die(EXIT_USAGE, "%s", err);
    if (!config_finalize(&cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    free(overrides);

    ModelDims d = gpt_dims(&cfg, GRADCHECK_TINY_VOCAB);
    if (seq > cfg.block_size)
        die(EXIT_USAGE, "gradcheck: --T %lld exceeds model.block_size %d", seq, cfg.block_size);
    int B = GRADCHECK_TINY_BATCH;
    int T = seq > 0                            ? (int)seq
            : cfg.block_size < GRADCHECK_MAX_T ? cfg.block_size
                                               : GRADCHECK_MAX_T;
    size_t n_params = 0, bytes = gpt_memory_bytes(&d, B, T, &n_params);
    if (bytes == 0 || (double)bytes > GRADCHECK_MAX_BYTES)
        die(EXIT_USAGE,
            "gradcheck: the model (n_layer %d, n_embd %d, block_size %d) is too large for a "
            "gradient check "
            "(limit %.0f MiB): use a small model",
            d.n_layer, d.n_embd, d.block_size, GRADCHECK_MAX_BYTES / 1048576.0);
    int per_tensor = samples >= 0                      ? (int)samples
                     : n_params <= GRADCHECK_ALL_BELOW ? 0
                                                       : GRADCHECK_SAMPLES;

    int init = strcmp(cfg.init, "fan_in") == 0 ? INIT_FAN_IN : INIT_GPT2;
    GPT m;
    AttnSetup attn = attention_setup(&cfg);
    if (break_backward)
        attn.impl = &lab_broken_attention;  // the softmax backward without its rowsum term
    gpt_build(&m, &d, attn, B, T);
    Rng rng;
    rng_seed(&rng, (uint64_t)cfg.seed);
    gpt_init(&m, init, &rng);
    int *x = xmalloc((size_t)B * T * sizeof(int), "tokens"),
        *y = xmalloc((size_t)B * T * sizeof(int), "tokens");
    gradcheck_tokens(x, y, B, T, d.vocab_size, GRADCHECK_TOKEN_SEED);

    size_t checked = 0;
    for (int i = 0; i < m.n_tensors; i++)
        checked += per_tensor > 0 && m.tensors[i].size > (size_t)per_tensor ? (size_t)per_tensor
                                                                            : m.tensors[i].size;
    printf("gradient check [%s]: n_layer %d, n_head %d, n_embd %d, block_size %d, vocab %d\n",
           REAL_NAME, d.n_layer, d.n_head, d.n_embd, d.block_size, d.vocab_size);
    printf("init %s, attn_scale %s (%.6g), train.seed %d; %zu parameters, %zu checked (%s)\n",
           cfg.init, cfg.attn_scale_str, cfg.attn_scale, cfg.seed, n_params, checked,
           per_tensor == 0 ? "every element" : "a seeded sample per tensor");
    printf("attention: mask %s, softmax over %s, %s", cfg.attn_mask, cfg.softmax_axis,
           cfg.attn_window > 0 ? "window of " : "every earlier key\n");
    if (cfg.attn_window > 0) printf("%d key%s\n", cfg.attn_window, cfg.attn_window == 1 ? "" : "s");
    printf("input: %d fixed random sequences of %d tokens; loss: mean cross-entropy (gpt_forward "
           "with targets)\n",
           B, T);
    printf("numeric gradient: sixth-order central differences, step %g (%zu forward passes)\n",
           gradcheck_step(), 6 * checked);
    if (sizeof(real) != 8)
        printf("note: float32 build: finite differences in float32 are a rough check only "
               "(tolerance %g);"
               " run ./lab64 gradcheck for the float64 check\n",
               gradcheck_tolerance());
    if (break_backward) {
        printf("--break-backward: the softmax backward drops \"- rowsum(dP * P)\": expect FAIL on "
               "wq and wk, and on\n"
               "every tensor their wrong gradient flows into (LayerNorms and layers below, wte, "
               "wpe)\n");
        if (sizeof(real) != 8 && init == INIT_GPT2)
            printf("note: under the gpt2 init the wq/wk gradients are too small for float32 finite "
                   "differences:"
                   " use ./lab64 or model.init fan_in (the default without CONFIG) to see the "
                   "failure\n");
    }
    printf("\n");

    GradcheckRow *rows = xcalloc((size_t)m.n_tensors, sizeof(GradcheckRow), "gradient check rows");
    gradcheck_model(&m, x, y, B, T, per_tensor, GRADCHECK_SAMPLE_SEED, rows);
    int failed = gradcheck_print(stdout, rows, m.n_tensors);
    free(rows);
    free(x);
    free(y);
    gpt_free(&m);
    return failed ? 1 : 0;
}
