// sample.c: generate text from a checkpoint, and draw attention maps for a prompt.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "common.h"
#include "config.h"
#include "generate.h"
#include "model.h"
#include "attention_map.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: sample CHECKPOINT [--prompt TEXT] [--tokens N] [--temperature T] [--top_k K] [--seed S]\n"
            "                         [--attention-map FILE.svg]\n"
            "\n"
            "Generates N characters (default 500) after PROMPT (default a newline) from a checkpoint\n"
            "written by ./train. temperature > 0 (default 0.8) sharpens (<1) or flattens (>1) the\n"
            "distribution; top_k keeps only the K most likely characters (default 40, 0 = all).\n"
            "--attention-map writes the attention weights of every layer and head for the prompt as\n"
            "labelled heatmaps in one SVG file (then no text is generated unless --tokens is given).\n"
            "Generation keeps a key/value cache: each character costs one position's forward pass. The\n"
            "context is the last block_size characters; when it is full it restarts from its last half.\n");
}

int main(int argc, char **argv) {
    g_progname = "sample";
    const char *ckpt_path = NULL, *prompt = "\n", *map_path = NULL;
    int tokens = 500, top_k = 40, tokens_given = 0;
    double temperature = 0.8;
    long seed = 1337;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { usage(stdout); return 0; }
        if (a[0] == '-' && a[1] != '-' && a[1] != 0) die(EXIT_USAGE, "unknown option '%s' (see --help)", a);
        if (a[0] == '-' && a[1] == '-') {
            const char *eq = strchr(a, '=');
            char name[64];
            size_t n = eq ? (size_t)(eq - a) : strlen(a);
            if (n >= sizeof name) die(EXIT_USAGE, "unknown option '%s' (see --help)", a);
            memcpy(name, a, n);
            name[n] = 0;
            const char *v = eq ? eq + 1 : NULL;
            int known = !strcmp(name, "--prompt") || !strcmp(name, "--tokens") || !strcmp(name, "--temperature") ||
                        !strcmp(name, "--top_k") || !strcmp(name, "--seed") || !strcmp(name, "--attention-map");
            if (!known) die(EXIT_USAGE, "unknown option '%s' (see --help)", a);
            if (!v) {
                if (i + 1 >= argc) die(EXIT_USAGE, "%s needs a value", name);
                v = argv[++i];
            }
            if (!strcmp(name, "--prompt")) prompt = v;
            else if (!strcmp(name, "--tokens")) { tokens = (int)flag_integer(name, v, 0, 10000000); tokens_given = 1; }
            else if (!strcmp(name, "--temperature")) temperature = flag_number(name, v, 1e-6, 100);
            else if (!strcmp(name, "--top_k")) top_k = (int)flag_integer(name, v, 0, 10000000);
            else if (!strcmp(name, "--seed")) seed = (long)flag_integer(name, v, 0, 2147483647);
            else map_path = v;
            continue;
        }
        if (ckpt_path) die(EXIT_USAGE, "more than one checkpoint given: '%s' and '%s'", ckpt_path, a);
        ckpt_path = a;
    }
    if (!ckpt_path) die(EXIT_USAGE, "missing the CHECKPOINT argument (see --help)");

    char err[1024];
    Checkpoint ck;
    // checkpoint_open validates the whole file (dimensions against the config record and the
    // tensors' sizes, finite values, the restored state) before anything is built from it
    if (!checkpoint_open(&ck, ckpt_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    if (!checkpoint_check_memory(&ck, 1, ck.dims.block_size, ckpt_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    Config cfg;
    config_defaults(&cfg);
    if (!config_load_json(&cfg, ck.config_json, strlen(ck.config_json), ckpt_path, err, sizeof err) ||
        !config_finalize(&cfg, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
    GPT m;
    gpt_build(&m, &ck.dims, (real)config_attn_scale(&cfg), 1, ck.dims.block_size);
    if (!checkpoint_restore(&ck, &m, ckpt_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);

    int *ptoks = xmalloc((strlen(prompt) + 1) * sizeof(int), "prompt");
    int n_prompt = encode_prompt(&ck.vocab, prompt, ptoks, err, sizeof err);
    if (n_prompt < 0) die(EXIT_USAGE, "%s", err);

    if (map_path) {
        if (n_prompt < 1) die(EXIT_USAGE, "--attention-map needs a non-empty --prompt");
        int T = n_prompt < ck.dims.block_size ? n_prompt : ck.dims.block_size;
        const int *window = ptoks + (n_prompt - T);
        gpt_forward(&m, window, NULL, 1, T);
        if (!write_attention_map(map_path, &m, &ck.vocab, window, T, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        fprintf(stderr, "wrote %s: %d layers x %d heads over %d characters\n", map_path, m.dims.n_layer, m.dims.n_head, T);
        if (!tokens_given) tokens = 0;
    }
    if (tokens > 0) {
        Rng rng;
        rng_seed(&rng, (uint64_t)seed);
        fputs(prompt, stdout);
        generate(&m, &ck.vocab, ptoks, n_prompt, tokens, temperature, top_k, &rng, stdout);
        fputc('\n', stdout);
    }
    free(ptoks);
    gpt_free(&m);
    checkpoint_close(&ck);
    return 0;
}
