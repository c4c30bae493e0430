// sample.c: generate text from a checkpoint, draw attention maps for a prompt, and export the
// weights for PyTorch.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/checkpoint.h"
#include "run/safetensors.h"
#include "base/common.h"
#include "base/config.h"
#include "base/outfile.h"
#include "base/signals.h"  // signals_install
#include "run/generate.h"
#include "model.h"
#include "report/attention_map.h"
#include "teach/explain.h"
#include "teach/explain_page.h"
#include "run/decode.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: sample MODEL [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S] "
        "[--context crop|restart]\n"
        "                     [--attention-map FILE.svg] [--probs N] [--export FILE.safetensors] "
        "[--vocab-from TEXT]\n"
        "       sample MODEL --explain --prompt TEXT [--json] [--html FILE] [--baseline C]\n"
        "       sample MODEL --explain --lines FILE [--per-kind N] [--baseline C]\n"
        "\n"
        "Generates N characters (default 500) after PROMPT (default a newline) from MODEL: a "
        "checkpoint\n"
        "written by ./train, or a safetensors file with nanoGPT's tensor names (docs/FORMAT.md).\n"
        "temperature (default 0.8) sharpens (<1) or flattens (>1) the\n"
        "distribution; 0 is greedy decoding (always the most likely character, whatever the "
        "seed).\n"
        "top-k keeps only the K most likely characters (default 40, 0 = all). Multi-word options "
        "may\n"
        "also be written with an underscore (--top_k, --attention_map).\n"
        "--attention-map writes the attention weights of every layer and head for the prompt as\n"
        "labelled heatmaps in one SVG file (then no text is generated unless --tokens is given;\n"
        "FILE - writes the SVG to standard output). Each option is given at most once.\n"
        "Generation keeps a key/value cache: each character costs one position's forward pass "
        "while the\n"
        "prompt and the output fit in block_size. Past that the context is the last block_size "
        "characters,\n"
        "recomputed for every character (--context crop, the default: what --probs and nanoGPT's "
        "generate\n"
        "see); --context restart instead restarts from the last block_size/2 characters when the "
        "window\n"
        "is full (faster; the characters after a restart see fewer characters, so they may "
        "differ).\n"
        "A model trained with an attention mistake (model.attn_mask zero or none, "
        "model.softmax_axis\n"
        "queries) sees the future, so it recomputes its window for every character instead.\n"
        "--probs N prints the N most likely next characters after the prompt and their "
        "probabilities\n"
        "(the softmax of the logits, temperature 1); then no text is generated unless --tokens is "
        "given.\n"
        "--export writes the model's weights as a safetensors file under nanoGPT's names "
        "(transformer.wte.weight,\n"
        "transformer.h.N.attn.c_attn.weight, ...) with its configuration and vocabulary in the "
        "metadata, for\n"
        "PyTorch (docs/PYTORCH.md); then no text is generated unless --tokens is given.\n"
        "--vocab-from TEXT: for a safetensors file without a vocabulary, the text it was built "
        "from (its\n"
        "distinct characters, sorted, are the vocabulary, as nanoGPT's prepare.py makes it).\n"
        "--explain puts the attention weights beside what each position actually contributes: for "
        "every\n"
        "character of the prompt but the last (the prediction of the next one) and every position "
        "j up to\n"
        "it, the weights (each layer and head, their mean, rollout, norm-weighted) and the effects "
        "on\n"
        "log p(the actual next character): leave-one-out (character j replaced by --baseline, "
        "default a\n"
        "space), attention knockout (the score set to -inf in one layer, all heads or one) and "
        "gradient x\n"
        "input; then how often they agree (top-1, Kendall tau, misattribution). --json prints "
        "every number\n"
        "as one JSON object instead of the table; --html FILE writes a page showing a chosen "
        "position's\n"
        "attention and effect rows side by side. --lines FILE measures the answer characters of a "
        "corpus\n"
        "file's copy, rev, find, kv and bracket lines (each fed as a newline and the line) against "
        "their\n"
        "known source, --per-kind N (default 1000) per kind. The prompt holds at most block_size + "
        "1\n"
        "characters; the model must be causal (a model that sees the future has no per-position "
        "effect).\n");
}

static const char *const OPTIONS[] = {
    "--prompt",   "--tokens",     "--temperature", "--top-k",   "--seed", "--attention-map",
    "--export",   "--vocab-from", "--probs",       "--explain", "--json", "--html",
    "--baseline", "--lines",      "--per-kind",    "--context"};
// the options that take no value
static int is_switch(const char *canon) {
    return !strcmp(canon, "--explain") || !strcmp(canon, "--json");
}

// The variants of one row that --explain runs in one forward pass.
#define EXPLAIN_BATCH 16
#define N_OPTIONS     (int)(sizeof OPTIONS / sizeof OPTIONS[0])

// An option's canonical spelling: "--top_k" is "--top-k" (both styles are accepted).
static void canonical_option(char *name) {
    for (char *p = name + 2; *p; p++)
        if (*p == '_') *p = '-';
}

static _Noreturn void unknown_option(const char *arg, const char *name) {
    const char *guess = closest_name(name, OPTIONS, N_OPTIONS);
    if (guess) die(EXIT_USAGE, "unknown option '%s' (did you mean '%s'?)", arg, guess);
    die(EXIT_USAGE, "unknown option '%s' (see --help)", arg);
}

// The n most likely characters after the prompt (its last block_size characters) and their
// probabilities p = softmax(logits), most likely first; ties in token order.
static void print_next_probs(GPT *m, const Vocab *v, const int *prompt, int n_prompt, int n) {
    int T = n_prompt < m->dims.block_size ? n_prompt : m->dims.block_size, V = m->dims.vocab_size;
    gpt_forward(m, prompt + (n_prompt - T), NULL, 1, T);
    const real *logits = m->acts.logits + (size_t)(T - 1) * V;
    double max = logits[0], sum = 0;
    for (int i = 1; i < V; i++) max = logits[i] > max ? logits[i] : max;
    for (int i = 0; i < V; i++) sum += exp(logits[i] - max);
    int *order = xmalloc((size_t)V * sizeof(int), "ranking");
    for (int i = 0; i < V; i++) order[i] = i;
    for (int i = 1; i < V; i++)  // insertion sort, descending by logit, stable
        for (int j = i; j > 0 && logits[order[j]] > logits[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (int i = 0; i < n && i < V; i++) {
        char ch[8];
        uint32_t c = v->chars[order[i]];
        if (c == '\n')
            snprintf(ch, sizeof ch, "\\n");
        else
            ch[utf8_encode(c, ch)] = 0;
        printf("'%s'%*s %.6f\n", ch, c == '\n' ? 1 : 2, "", exp(logits[order[i]] - max) / sum);
    }
    free(order);
}

// --explain: the checkpoint's model built for a batch of variants, then the measures of the
// prompt (a table, JSON or a page) or of a corpus file's lines.
static int explain_main(const char *ckpt_path, const char *vocab_text, const char *prompt,
                        const char *baseline_text, int json, const char *html_path,
                        const char *lines_path, int per_kind) {
    char err[1024];
    Checkpoint ck;
    if (!model_file_open(&ck, ckpt_path, vocab_text, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    int T = ck.dims.block_size;
    if (!checkpoint_check_memory(&ck, EXPLAIN_BATCH, T, ckpt_path, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
    Config cfg;
    config_defaults(&cfg);
    if (!config_load_json(&cfg, ck.config_json, strlen(ck.config_json), ckpt_path, err,
                          sizeof err) ||
        !config_finalize(&cfg, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
    // one thread: a batch of EXPLAIN_BATCH variants of one short line is too little work to
    // split, and a team of threads spends its time waiting at each barrier of the many small
    // forward passes (the more so on a busy machine)
    thread_set_max(1);
    GPT m;
    AttnSetup attn = attention_setup(&cfg);
    gpt_build(&m, &ck.dims, attn, EXPLAIN_BATCH, T);
    if (!gpt_attention_is_causal(&m))
        die(EXIT_USAGE,
            "'%s': its attention sees the future (model.attn_mask=%s, model.softmax_axis=%s), so "
            "the "
            "prediction at t depends on later characters and no per-position effect on it exists; "
            "--explain needs "
            "the causal model (attn_mask causal, softmax_axis keys)",
            ckpt_path, cfg.attn_mask, cfg.softmax_axis);
    if (!checkpoint_restore(&ck, &m, ckpt_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);

    // the baseline character of leave-one-out: --baseline, or a space, or the vocabulary's first
    int baseline;
    if (baseline_text) {
        int bt[8];
        if (strlen(baseline_text) > 4 ||
            encode_prompt(&ck.vocab, baseline_text, bt, err, sizeof err) != 1)
            die(EXIT_USAGE, "--baseline '%s': expected one character of the model's vocabulary",
                baseline_text);
        baseline = bt[0];
    } else {
        baseline = vocab_lookup(&ck.vocab, ' ');
        if (baseline < 0) baseline = 0;
    }
    if (lines_path) {
        if (!explain_experiment(stdout, &m, &ck.vocab, lines_path, per_kind, baseline, err,
                                sizeof err))
            die(EXIT_RUNTIME, "%s", err);
    } else {
        if (!prompt || !*prompt)
            die(EXIT_USAGE, "--explain needs a --prompt of at least 2 characters (each but the "
                            "last predicts the next)");
        int *ptoks = xmalloc((strlen(prompt) + 1) * sizeof(int), "prompt");
        int n_prompt = encode_prompt(&ck.vocab, prompt, ptoks, err, sizeof err);
        if (n_prompt < 0) die(EXIT_USAGE, "%s", err);
        if (n_prompt < 2)
            die(EXIT_USAGE, "--explain needs a --prompt of at least 2 characters (each but the "
                            "last predicts the next)");
        if (n_prompt > T + 1)
            die(EXIT_USAGE,
                "--prompt has %d characters; --explain reads at most block_size + 1 = %d "
                "(block_size "
                "positions, each predicting the next)",
                n_prompt, T + 1);
        Explain e;
        explain_compute(&m, ptoks, n_prompt - 1, baseline, NULL, 1, &e);
        int page_on_stdout = html_path && !strcmp(html_path, "-");
        if (json && page_on_stdout)
            die(EXIT_USAGE,
                "--json and --html - both write to standard output: name a file for --html");
        if (json)
            explain_json(stdout, &e, &ck.vocab, ckpt_path);
        else if (!page_on_stdout)
            explain_print(stdout, &e, &ck.vocab);
        if (html_path) {
            char cmd[512];
            snprintf(cmd, sizeof cmd, "./sample %s --explain --prompt ... --html %s", ckpt_path,
                     html_path);
            if (!explain_page_write(html_path, &e, &ck.vocab, cmd, err, sizeof err))
                die(EXIT_RUNTIME, "%s", err);
            fprintf(stderr, "wrote %s: %d positions\n",
                    page_on_stdout ? "the page to standard output" : html_path, e.n);
        }
        explain_free(&e);
        free(ptoks);
    }
    gpt_free(&m);
    checkpoint_close(&ck);
    return 0;
}

// SIGINT and SIGTERM end the program as they would, the temporary file of a file being written
// removed first.
static void on_stop_signal(int sig) {
    out_remove_temps_now();
    signal(sig, SIG_DFL);
    raise(sig);
}

// At exit, standard output flushed and checked: output lost to a full disk or /dev/full ends the
// program with exit 1 and one line, not exit 0.
static void check_stdout(void) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return;
    fprintf(stderr, "%s: error: cannot write to standard output: %s\n", g_progname,
            strerror(errno ? errno : EIO));
    _exit(EXIT_RUNTIME);
}

int main(int argc, char **argv) {
    g_progname = "sample";
    atexit(check_stdout);
    signals_install(on_stop_signal, (const int[]){SIGINT, SIGTERM}, 2);
    const char *ckpt_path = NULL, *prompt = "\n", *map_path = NULL, *export_path = NULL,
               *vocab_text = NULL;
    const char *html_path = NULL, *baseline_text = NULL, *lines_path = NULL;
    int tokens = 500, top_k = 40, tokens_given = 0, n_probs = 0, prompt_given = 0, explain = 0,
        json = 0, per_kind = 1000;
    int per_kind_given = 0, context_given = 0;
    ContextPolicy policy = CONTEXT_CROP;
    double temperature = 0.8;
    long seed = 1337;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (a[0] == '-' && a[1] != '-' && a[1] != 0)
            die(EXIT_USAGE, "unknown option '%s' (see --help)", a);
        if (a[0] == '-' && a[1] == '-') {
            const char *eq = strchr(a, '=');
            char name[64];
            size_t n = eq ? (size_t)(eq - a) : strlen(a);
            if (n >= sizeof name) die(EXIT_USAGE, "unknown option '%s' (see --help)", a);
            memcpy(name, a, n);
            name[n] = 0;
            char
                canon[64];  // errors name the option as typed; matching uses the canonical spelling
            memcpy(canon, name, n + 1);
            canonical_option(canon);
            const char *v = eq ? eq + 1 : NULL;
            int known = 0;
            for (int k = 0; k < N_OPTIONS; k++) known |= !strcmp(canon, OPTIONS[k]);
            if (!known) unknown_option(a, canon);
            if (is_switch(canon)) {
                if (v) die(EXIT_USAGE, "%s takes no value (got '%s')", name, v);
                option_once(canon, NULL);
                if (!strcmp(canon, "--explain"))
                    explain = 1;
                else
                    json = 1;
                continue;
            }
            if (!v) {
                if (i + 1 >= argc) die(EXIT_USAGE, "%s needs a value", name);
                v = argv[++i];
            }
            option_once(canon, v);  // --top_k and --top-k are one option
            if (!strcmp(canon, "--prompt"))
                prompt = v, prompt_given = 1;
            else if (!strcmp(canon, "--html"))
                html_path = v;
            else if (!strcmp(canon, "--baseline"))
                baseline_text = v;
            else if (!strcmp(canon, "--lines"))
                lines_path = v;
            else if (!strcmp(canon, "--per-kind"))
                per_kind = (int)flag_integer(name, v, 1, 100000000), per_kind_given = 1;
            else if (!strcmp(canon, "--tokens")) {
                tokens = (int)flag_integer(name, v, 0, 10000000);
                tokens_given = 1;
            } else if (!strcmp(canon, "--temperature"))
                temperature = flag_number(name, v, 0, 100);
            else if (!strcmp(canon, "--top-k"))
                top_k = (int)flag_integer(name, v, 0, 10000000);
            else if (!strcmp(canon, "--seed"))
                seed = (long)flag_integer(name, v, 0, 2147483647);
            else if (!strcmp(canon, "--export"))
                export_path = v;
            else if (!strcmp(canon, "--probs"))
                n_probs = (int)flag_integer(name, v, 1, 0x110000);
            else if (!strcmp(canon, "--vocab-from"))
                vocab_text = v;
            else if (!strcmp(canon, "--context")) {
                if (!strcmp(v, "crop"))
                    policy = CONTEXT_CROP;
                else if (!strcmp(v, "restart"))
                    policy = CONTEXT_RESTART;
                else
                    die(EXIT_USAGE, "%s: '%s' is not a context policy (expected crop or restart)",
                        name, v);
                context_given = 1;
            } else
                map_path = v;
            continue;
        }
        if (ckpt_path)
            die(EXIT_USAGE, "more than one checkpoint given: '%s' and '%s'", ckpt_path, a);
        ckpt_path = a;
    }
    if (!ckpt_path) die(EXIT_USAGE, "missing the CHECKPOINT argument (see --help)");
    if (!explain && (json || html_path || baseline_text || lines_path))
        die(EXIT_USAGE, "%s belongs to --explain (see --help)",
            json            ? "--json"
            : html_path     ? "--html"
            : baseline_text ? "--baseline"
                            : "--lines");
    if (explain && (map_path || tokens_given || export_path || n_probs || context_given))
        die(EXIT_USAGE, "--explain does not generate, draw maps, export or print odds: drop %s",
            map_path       ? "--attention-map"
            : tokens_given ? "--tokens"
            : export_path  ? "--export"
            : n_probs      ? "--probs"
                           : "--context");
    if (explain && lines_path && (prompt_given || json || html_path))
        die(EXIT_USAGE, "--explain --lines measures a corpus file: drop %s",
            prompt_given ? "--prompt"
            : json       ? "--json"
                         : "--html");
    if (per_kind_given && !(explain && lines_path))
        die(EXIT_USAGE, "--per-kind belongs to --explain --lines FILE (the answer characters "
                        "measured per kind); drop it "
                        "or give both");
    {  // no output may replace an input
        const char *inputs[3] = {ckpt_path, vocab_text, lines_path},
                   *outputs[3] = {export_path, map_path, html_path};
        char err[2048];
        for (int i = 0; i < 3; i++)
            if (out_is_input(outputs[i], inputs, 3, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    }
    if (explain)
        return explain_main(ckpt_path, vocab_text, prompt_given ? prompt : NULL, baseline_text,
                            json, html_path, lines_path, per_kind);
    {  // "-" is standard output: then it is all that goes there
        int map_out = map_path && strcmp(map_path, "-") == 0,
            export_out = export_path && strcmp(export_path, "-") == 0;
        const char *users[4];
        int n = 0;
        if (export_out) users[n++] = "--export -";
        if (map_out) users[n++] = "--attention-map -";
        if (n_probs > 0) users[n++] = "--probs";
        if (tokens_given && tokens > 0) users[n++] = "--tokens";
        if ((map_out || export_out) && n > 1)
            die(EXIT_USAGE, "%s writes to standard output: it cannot share it with %s", users[0],
                users[1]);
    }

    char err[1024];
    Checkpoint ck;
    // model_file_open validates the whole file (dimensions against the config record and the
    // tensors' sizes, finite values, the restored state) before anything is built from it
    if (!model_file_open(&ck, ckpt_path, vocab_text, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    if (!checkpoint_check_memory(&ck, 1, ck.dims.block_size, ckpt_path, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
    Config cfg;
    config_defaults(&cfg);
    if (!config_load_json(&cfg, ck.config_json, strlen(ck.config_json), ckpt_path, err,
                          sizeof err) ||
        !config_finalize(&cfg, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
    GPT m;
    AttnSetup attn = attention_setup(&cfg);
    gpt_build(&m, &ck.dims, attn, 1, ck.dims.block_size);
    if (!checkpoint_restore(&ck, &m, ckpt_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);

    if (export_path) {
        int n = safetensors_export(export_path, &m, ck.config_json, &ck.vocab, err, sizeof err);
        if (!n) die(EXIT_RUNTIME, "%s", err);
        fprintf(stderr, "wrote %s: %d tensors under nanoGPT's names\n",
                strcmp(export_path, "-") == 0 ? "the export to standard output" : export_path, n);
        if (!safetensors_attention_is_nanogpts(&m))
            fprintf(stderr,
                    "note: this model's attention (scale, mask, softmax axis, window or QK-norm) "
                    "is not nanoGPT's: "
                    "PyTorch's nanoGPT would compute another function with these weights\n");
        if (m.dims.qk_norm)
            fprintf(
                stderr,
                "note: model.qk_norm is %s: the file holds its gains%s as "
                "transformer.h.N.attn.q_norm.* and "
                "attn.k_norm.*; nanoGPT has no such tensors (its load_state_dict refuses them)\n",
                gpt_qk_norm_name(m.dims.qk_norm),
                m.dims.qk_norm == QK_NORM_LAYERNORM ? " and biases" : "");
        if (!tokens_given) tokens = 0;
    }
    int *ptoks = xmalloc((strlen(prompt) + 1) * sizeof(int), "prompt");
    int n_prompt = encode_prompt(&ck.vocab, prompt, ptoks, err, sizeof err);
    if (n_prompt < 0) die(EXIT_USAGE, "%s", err);

    if (map_path) {
        if (n_prompt < 1) die(EXIT_USAGE, "--attention-map needs a non-empty --prompt");
        int T = n_prompt < ck.dims.block_size ? n_prompt : ck.dims.block_size;
        const int *window = ptoks + (n_prompt - T);
        m.keep_weights =
            1;  // the weights P, which the definition keeps (the engine keeps T numbers per row)
        gpt_forward(&m, window, NULL, 1, T);
        m.keep_weights = 0;
        if (!write_attention_map(map_path, &m, cfg.attn_scale_str, &ck.vocab, window, T, err,
                                 sizeof err))
            die(EXIT_RUNTIME, "%s", err);
        fprintf(stderr, "wrote %s: %d layers x %d heads over %d characters\n",
                strcmp(map_path, "-") == 0 ? "the map to standard output" : map_path,
                m.dims.n_layer, m.dims.n_head, T);
        if (!tokens_given) tokens = 0;
    }
    if (n_probs > 0) {
        if (n_prompt < 1) die(EXIT_USAGE, "--probs needs a non-empty --prompt");
        print_next_probs(&m, &ck.vocab, ptoks, n_prompt, n_probs);
        if (!tokens_given) tokens = 0;
    }
    if (tokens > 0) {
        Rng rng;
        rng_seed(&rng, (uint64_t)seed);
        fputs(prompt, stdout);
        generate_until(&m, &ck.vocab, ptoks, n_prompt, tokens, temperature, top_k, policy, &rng,
                       stdout, NULL);
        fputc('\n', stdout);
    }
    free(ptoks);
    gpt_free(&m);
    checkpoint_close(&ck);
    return 0;
}
