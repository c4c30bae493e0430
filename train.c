// train.c: the front door of ./train: the command line, the configuration (and the checkpoint
// a run resumes from), the data, and the modes: training one run, or several side by side on
// the same batches (--compare-scaling); timing steps (--bench); a debug dump (--dump-state).
// One run's life (a step, evaluation, checkpoints, the finish) is in run/run.c.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "run/checkpoint.h"
#include "run/safetensors.h"
#include "base/common.h"
#include "base/config.h"
#include "base/data.h"
#include "base/dist.h"
#include "run/generate.h"
#include "kernels/matmul.h"
#include "kernels/peak.h"
#include "model.h"
#include "base/outfile.h"
#include "run/outdir.h"
#include "report/report.h"
#include "base/rng.h"
#include "run/run.h"
#include "run/stop.h"
#include "base/version.h"

#define ERRLEN RUN_ERRLEN
#define BENCH_VOCAB 65

// ---------------------------------------------------------------------------------------------
// command line

// Runs trained side by side from the same initial weights on the same batches, each variant
// a name (its directory under out_dir) and config overrides.
// Each writes compare.csv, report.md, its panels and report.html (report/report.h) in out_dir.
typedef struct {
    const char *what;            // what is compared, for the first line: "attention scale sqrt vs none"
    const char *key;             // the config key compared, and its value in each variant
    const char *values[MAX_VARIANTS];
    int n;
    Variant v[MAX_VARIANTS];
} Comparison;

// --compare-scaling: the attention scale 1/sqrt(head_dim) against none, the alias of
// --compare model.attn_scale=sqrt,none whose variants keep their names scaled/ and unscaled/.
static const Comparison COMPARE_SCALING = {
    "attention scale sqrt vs none", "model.attn_scale", {"sqrt", "none"}, 2,
    {{"scaled", {"model.attn_scale=sqrt"}}, {"unscaled", {"model.attn_scale=none"}}},
};

// The keys --compare KEY=V1,V2[,V3,V4] may vary: those that change neither a tensor's shape nor
// anything the variants share (the data, the batches, the initial weights, the steps at which
// all of them evaluate, probe and checkpoint).
static const char *const COMPARABLE_KEYS[] = {
    "model.attn_scale", "model.attn_impl", "model.attn_mask", "model.softmax_axis", "train.lr", "train.min_lr", "train.warmup_steps", "train.lr_decay_steps", "train.beta1",
    "train.beta2", "train.eps", "train.weight_decay", "train.grad_clip", "train.max_bad_steps", "train.spike_zscore",
    "train.spike_window", NULL};

// --compare KEY=V1,V2[,V3,V4]: one variant per value, named by it (out_dir/<value>/).
static Comparison g_compare;
static char g_compare_what[600], g_compare_names[MAX_VARIANTS][64], g_compare_overrides[MAX_VARIANTS][320];

static const Comparison *parse_compare(const char *spec) {
    const char *eq = strchr(spec, '=');
    size_t klen = eq ? (size_t)(eq - spec) : 0;
    int known = 0;
    for (int i = 0; COMPARABLE_KEYS[i]; i++) known |= strlen(COMPARABLE_KEYS[i]) == klen && strncmp(COMPARABLE_KEYS[i], spec, klen) == 0;
    if (!eq || !known)
        die(EXIT_USAGE, "--compare expects KEY=V1,V2[,V3,V4] with a KEY that changes no shape and nothing the runs share"
            " (model.attn_scale, model.attn_impl, model.attn_mask, model.softmax_axis, train.lr, train.min_lr,"
            " train.warmup_steps, train.lr_decay_steps, train.beta1, train.beta2, train.eps, train.weight_decay,"
            " train.grad_clip, ...), got '%s'", spec);
    Comparison *c = &g_compare;
    memset(c, 0, sizeof *c);
    int w = snprintf(g_compare_what, sizeof g_compare_what, "%.*s", (int)klen, spec);
    static char key[128];
    snprintf(key, sizeof key, "%.*s", (int)klen, spec);
    c->key = key;
    for (const char *v = eq + 1; ; ) {
        size_t len = strcspn(v, ",");
        if (c->n == MAX_VARIANTS) die(EXIT_USAGE, "--compare takes 2 to %d values, got more in '%s'", MAX_VARIANTS, spec);
        if (len == 0 || len >= sizeof g_compare_names[0] || memchr(v, '/', len) || (len <= 2 && strncmp(v, "..", len) == 0))
            die(EXIT_USAGE, "--compare: each value names a directory under train.out_dir: '%.*s' cannot (in '%s')", (int)len, v, spec);
        snprintf(g_compare_names[c->n], sizeof g_compare_names[0], "%.*s", (int)len, v);
        for (int j = 0; j < c->n; j++)
            if (strcmp(g_compare_names[j], g_compare_names[c->n]) == 0) die(EXIT_USAGE, "--compare: '%s' is given twice", g_compare_names[j]);
        snprintf(g_compare_overrides[c->n], sizeof g_compare_overrides[0], "%.*s=%s", (int)klen, spec, g_compare_names[c->n]);
        if (w < (int)sizeof g_compare_what)
            w += snprintf(g_compare_what + w, sizeof g_compare_what - (size_t)w, "%s%s", c->n ? " vs " : " ", g_compare_names[c->n]);
        c->v[c->n].name = g_compare_names[c->n];
        c->values[c->n] = g_compare_names[c->n];
        c->v[c->n].overrides[0] = g_compare_overrides[c->n];
        c->n++;
        if (!v[len]) break;
        v += len + 1;
    }
    if (c->n < 2) die(EXIT_USAGE, "--compare takes 2 to %d values, got '%s'", MAX_VARIANTS, spec);
    c->what = g_compare_what;
    return c;
}

typedef struct {
    const char *config_path;
    const char *resume_path;
    const char *init_path;         // --init-from: a new run's first weights
    const char *vocab_text;        // --vocab-from: the vocabulary of a safetensors file without one
    const char *dump_path;
    int bench_steps;
    int rewind;                    // --rewind: resume an older checkpoint over its directory's later one
    const Comparison *comparison;  // --compare-scaling or --compare; NULL = one run
    int n_overrides;
    const char **overrides;
    char command[2048];            // the command line, as report.html names it
} Args;

static void print_usage(FILE *f) {
    fprintf(f,
            "usage: train [CONFIG.json] [--section.key=value ...] [options]\n"
            "\n"
            "Trains a character-level GPT on a UTF-8 text file. CONFIG defaults to configs/default.json;\n"
            "any config key can be overridden with its dotted path, e.g. --train.max_steps=500 or --name=mine.\n"
            "A new run refuses an out_dir that holds another run's files (resume that run, choose another\n"
            "--name or --train.out_dir, or replace it with --train.overwrite=true), and one that another\n"
            "trainer is using. Each option is given at most once.\n"
            "\n"
            "options:\n"
            "  --resume CHECKPOINT   continue the run saved in CHECKPOINT (overrides such as a larger\n"
            "                        --train.max_steps apply on top of its configuration), in the directory\n"
            "                        CHECKPOINT is in now (moved or copied runs too) unless --train.out_dir\n"
            "                        says otherwise; an older checkpoint (checkpoint_N.bin) is refused where\n"
            "                        the directory's checkpoint.bin is later, unless --rewind is given\n"
            "  --rewind              with --resume: continue from the older checkpoint on purpose, replacing\n"
            "                        checkpoint.bin and dropping the later rows of the logs\n"
            "  --init-from MODEL     start a new run from the weights of MODEL (a checkpoint, or a safetensors\n"
            "                        file with nanoGPT's names: docs/FORMAT.md); the model's shape and\n"
            "                        attention come from MODEL (model.* overrides of its attention apply\n"
            "                        on top), the optimizer starts afresh, the text must use its vocabulary\n"
            "  --vocab-from TEXT     the vocabulary of a safetensors MODEL that has none: TEXT's characters\n"
            "  --compare KEY=V1,V2   train 2 to 4 variants side by side (same initial weights, same batches),\n"
            "                        one per value of KEY (a key that changes no shape: model.attn_mask,\n"
            "                        model.softmax_axis, train.lr, ...), in out_dir/<value>/, and write\n"
            "                        compare.csv, report.md, compare.svg and report.html (the same as one\n"
            "                        page, with the attention maps of every variant)\n"
            "  --compare-scaling     --compare model.attn_scale=sqrt,none, in scaled/ and unscaled/, with\n"
            "                        scaling.svg\n"
            "  --bench=N             time N training steps on random tokens and print one 'bench' line\n"
            "  --dump-state FILE     run one forward/backward on the first batch and write a debug state\n"
            "                        (FILE - is standard output)\n"
            "  --help, --version\n"
            "\n"
            "outputs (in train.out_dir, default out/<name>): metrics.csv, attention.csv, checkpoint.bin,\n"
            "summary.json; the last line printed is\n"
            "'final: step=N train_loss=X val_loss=Y gen_loss=G (teacher-forced on the same W windows: F)\n"
            "tokens_per_s=Z' (val_loss: the whole validation split; gen_loss: the honest loss on W windows\n"
            "of it, to be compared with F, the teacher-forced loss on those same windows).\n"
            "exit codes: 0 ok, 1 runtime error (I/O, data, checkpoint, divergence), 2 usage or config error\n"
            "(also: out_dir holds another run or is in use), 128 + the signal after a stop by SIGINT (130),\n"
            "SIGTERM (143), SIGHUP (129) or SIGPIPE (141), having saved what was consistent.\n"
            "data-parallel: build with `make MPI=1` and run `mpirun -np N ./train CONFIG`; each rank trains on\n"
            "train.batch_size / N rows of every batch (see docs/DISTRIBUTED.md).\n"
            "\nconfiguration keys:\n");
    config_print_reference(f, 0);
}

static void print_version(void) {
    printf("train %s (%s)\n", TRAINER_VERSION, REAL_NAME);
#if defined(__clang__)
    printf("compiler: clang %s\n", __clang_version__);
#elif defined(__GNUC__)
    printf("compiler: gcc %s\n", __VERSION__);
#endif
#ifdef _OPENMP
    printf("OpenMP: on, %d threads\n", omp_get_max_threads());
#else
    printf("OpenMP: off (single-threaded build)\n");
#endif
    printf("SIMD: %s\n", matmul_simd_path());
    FmaPeak peak = fma_peak_measure();
    char peak_text[256];
    fma_peak_describe(&peak, peak_text, sizeof peak_text);
    printf("FMA peak: %s\n", peak_text);
    printf("MPI: %s\n", dist_describe());
}

static void parse_args(int argc, char **argv, Args *a) {
    memset(a, 0, sizeof *a);
    command_line_text(a->command, sizeof a->command, "./train", argc, argv);
    a->overrides = xcalloc((size_t)argc, sizeof(char *), "arguments");
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v = NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) { print_usage(stdout); exit(0); }
        if (strcmp(arg, "--version") == 0) { print_version(); exit(0); }
        if (strcmp(arg, "--compare-scaling") == 0 || (v = option_value(argc, argv, &i, "--compare"))) {
            if (a->comparison) die(EXIT_USAGE, "give one of --compare-scaling and --compare, once");
            a->comparison = v ? parse_compare(v) : &COMPARE_SCALING;
            continue;
        }
        if ((v = option_value(argc, argv, &i, "--resume"))) { option_once("--resume", v); a->resume_path = v; continue; }
        if ((v = option_value(argc, argv, &i, "--init-from"))) { option_once("--init-from", v); a->init_path = v; continue; }
        if ((v = option_value(argc, argv, &i, "--vocab-from"))) { option_once("--vocab-from", v); a->vocab_text = v; continue; }
        if ((v = option_value(argc, argv, &i, "--dump-state"))) { option_once("--dump-state", v); a->dump_path = v; continue; }
        if (strcmp(arg, "--rewind") == 0) { option_once("--rewind", NULL); a->rewind = 1; continue; }
        if ((v = option_value(argc, argv, &i, "--bench"))) {
            option_once("--bench", v);
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1000000) die(EXIT_USAGE, "--bench expects a step count from 1 to 1000000, got '%s'", v);
            a->bench_steps = (int)n;
            continue;
        }
        // a config key, in a section (--train.lr=...) or at the top level (--name=...)
        if (strncmp(arg, "--", 2) == 0 && strchr(arg, '=')) {
            char key[160];
            snprintf(key, sizeof key, "%.*s", (int)(strchr(arg, '=') - arg), arg);
            option_once(key, strchr(arg, '=') + 1);
            a->overrides[a->n_overrides++] = arg + 2;
            continue;
        }
        if (strncmp(arg, "--", 2) == 0 && strchr(arg, '.'))
            die(EXIT_USAGE, "override '%s' has no value: write %s=VALUE", arg, arg);
        if (arg[0] == '-') die(EXIT_USAGE, "unknown option '%s' (see --help)", arg);
        if (a->config_path) die(EXIT_USAGE, "more than one config file given: '%s' and '%s'", a->config_path, arg);
        a->config_path = arg;
    }
    if (a->resume_path && a->config_path) die(EXIT_USAGE, "give either a config file or --resume, not both");
    if (a->resume_path && a->comparison)
        die(EXIT_USAGE, "--resume cannot be combined with a comparison (each variant resumes on its own)");
    // one mode at a time: a debug dump and a benchmark are of one model, and neither trains
    if (a->dump_path && a->comparison)
        die(EXIT_USAGE, "--dump-state writes one model's forward/backward: it cannot be combined with a comparison (%s)",
            a->comparison == &COMPARE_SCALING ? "--compare-scaling" : "--compare");
    if (a->bench_steps && a->comparison)
        die(EXIT_USAGE, "--bench times one model: it cannot be combined with a comparison (%s)",
            a->comparison == &COMPARE_SCALING ? "--compare-scaling" : "--compare");
    if (a->bench_steps && a->dump_path) die(EXIT_USAGE, "give one of --bench and --dump-state");
    if (a->init_path && (a->resume_path || a->bench_steps))
        die(EXIT_USAGE, "--init-from starts a new run: it cannot be combined with %s", a->resume_path ? "--resume" : "--bench");
    if (a->rewind && !a->resume_path) die(EXIT_USAGE, "--rewind goes with --resume (an older checkpoint of a run)");
    if (a->vocab_text && !a->init_path) die(EXIT_USAGE, "--vocab-from goes with --init-from (a safetensors file without a vocabulary)");
    if (!a->config_path && !a->resume_path) a->config_path = "configs/default.json";
}

// The learning-rate schedule's decay horizon is fixed when a run starts: train.lr_decay_steps 0
// ("train.max_steps") becomes the number, which the checkpoint's config keeps, so a resume that
// extends max_steps keeps the schedule (beyond the horizon lr stays at min_lr) unless it sets
// train.lr_decay_steps itself.
static void fix_decay_horizon(Config *cfg) {
    if (cfg->lr_decay_steps == 0) cfg->lr_decay_steps = cfg->max_steps;
}

// The directory a path's file is in (a usage error when it does not fit in n bytes).
static void dir_of(const char *path, char *dir, size_t n) {
    const char *slash = strrchr(path, '/');
    size_t len = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (len >= n) die(EXIT_USAGE, "the directory of '%.200s...' is too long (at most %zu bytes)", path, n - 1);
    if (!slash) memcpy(dir, ".", 2);
    else { memcpy(dir, path, len); dir[len] = 0; }
}

static void load_config(Config *cfg, const Args *a, const Checkpoint *ck) {
    char err[ERRLEN];
    config_defaults(cfg);
    if (ck) {
        if (!config_load_json(cfg, ck->config_json, strlen(ck->config_json), a->resume_path, err, sizeof err))
            die(EXIT_RUNTIME, "%s", err);
        fix_decay_horizon(cfg);  // a checkpoint of an earlier version may hold 0: its run's horizon was its max_steps
        // replacing another run's files is asked for on the command line, never inherited
        snprintf(cfg->overwrite, sizeof cfg->overwrite, "false");
        // a resumed run continues in its checkpoint's directory, wherever that is now (moved or
        // copied): the out_dir the checkpoint records is where the run was, not an instruction.
        // --train.out_dir on the command line (applied below) still chooses another.
        dir_of(a->resume_path, cfg->out_dir, sizeof cfg->out_dir);
    } else if (!config_load_file(cfg, a->config_path, err, sizeof err)) {
        die(EXIT_USAGE, "%s", err);
    }
    for (int i = 0; i < a->n_overrides; i++)
        if (!config_apply_override(cfg, a->overrides[i], err, sizeof err)) die(EXIT_USAGE, "%s", err);
    if (!config_finalize(cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    fix_decay_horizon(cfg);
    if (ck) {
        const ModelDims *d = &ck->dims;
        if (cfg->block_size != d->block_size || cfg->n_layer != d->n_layer || cfg->n_head != d->n_head ||
            cfg->n_embd != d->n_embd)
            die(EXIT_USAGE, "the overrides change the model shape of '%s' (n_layer %d, n_head %d, n_embd %d, block_size %d);"
                " a resumed run keeps its shape", a->resume_path, d->n_layer, d->n_head, d->n_embd, d->block_size);
    }
}

// A run started from a model file (--init-from) takes the model's shape and attention from it;
// the command line's model.* overrides apply on top, and may not change the shape.
static void take_model_from(Config *cfg, const Args *a, const Checkpoint *init) {
    char err[ERRLEN];
    Config from;
    config_defaults(&from);
    if (!config_load_json(&from, init->config_json, strlen(init->config_json), a->init_path, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
    cfg->n_layer = from.n_layer;
    cfg->n_head = from.n_head;
    cfg->n_embd = from.n_embd;
    cfg->block_size = from.block_size;
    memcpy(cfg->attn_scale_str, from.attn_scale_str, sizeof cfg->attn_scale_str);
    memcpy(cfg->attn_mask, from.attn_mask, sizeof cfg->attn_mask);
    memcpy(cfg->softmax_axis, from.softmax_axis, sizeof cfg->softmax_axis);
    cfg->attn_window = from.attn_window;
    for (int i = 0; i < a->n_overrides; i++)
        if (strncmp(a->overrides[i], "model.", 6) == 0 && !config_apply_override(cfg, a->overrides[i], err, sizeof err))
            die(EXIT_USAGE, "%s", err);
    if (!config_finalize(cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    const ModelDims *d = &init->dims;
    if (cfg->block_size != d->block_size || cfg->n_layer != d->n_layer || cfg->n_head != d->n_head || cfg->n_embd != d->n_embd)
        die(EXIT_USAGE, "the overrides change the model shape of '%s' (n_layer %d, n_head %d, n_embd %d, block_size %d);"
            " a run started from it keeps its shape", a->init_path, d->n_layer, d->n_head, d->n_embd, d->block_size);
}

// Every variant's overrides apply to the configuration (a usage error before anything is read).
// Two values that parse to the same configuration (model.attn_scale=1,01; train.lr=0.01,1e-2)
// would train one model twice: refused, the values compared as parsed. (Different settings that
// happen to compute alike, "sqrt" and "none" with head_dim 1, stay allowed: a test relies on it.)
static void check_variants(const Config *cfg, const Comparison *cmp) {
    char err[ERRLEN];
    char *json[MAX_VARIANTS] = {NULL};
    for (int i = 0; cmp && i < cmp->n; i++) {
        Config c = *cfg;
        for (int k = 0; k < MAX_VARIANT_OVERRIDES && cmp->v[i].overrides[k]; k++)
            if (!config_apply_override(&c, cmp->v[i].overrides[k], err, sizeof err)) die(EXIT_USAGE, "%s", err);
        if (!config_finalize(&c, err, sizeof err)) die(EXIT_USAGE, "variant '%s': %s", cmp->v[i].name, err);
        json[i] = config_to_json(&c);
        for (int j = 0; j < i; j++)
            if (strcmp(json[i], json[j]) == 0)
                die(EXIT_USAGE, "--compare: '%s' and '%s' are the same value of %s: each variant needs a value of its own",
                    cmp->values[j], cmp->values[i], cmp->key);
    }
    for (int i = 0; cmp && i < cmp->n; i++) free(json[i]);
}

static void set_threads(const Config *cfg) {
#ifdef _OPENMP
    if (cfg->threads > 0) omp_set_num_threads(cfg->threads);
    else if (dist_local_size() > 1 && !getenv("OMP_NUM_THREADS")) {
        // ranks sharing a machine share its cores: oversubscribed OpenMP threads spin and crawl
        int per_rank = omp_get_num_procs() / dist_local_size();
        omp_set_num_threads(per_rank > 0 ? per_rank : 1);
    }
#else
    (void)cfg;
#endif
}

// Errors every rank sees alike: rank 0 says it once, and all ranks exit normally. (With rank 0
// in MPI_Abort while the others finalize, Open MPI's mpirun once hung after all three processes
// had exited.)
static void check_ranks(const Config *cfg, const Args *args) {
    if (dist_size() <= 1) return;
    if (cfg->batch_size % dist_size() != 0) {
        if (dist_is_root())
            err_print("train.batch_size %d does not divide over %d ranks: use a multiple of %d or another rank count",
                      cfg->batch_size, dist_size(), dist_size());
        dist_exit(EXIT_USAGE);
    }
    if (args->dump_path) {
        if (dist_is_root()) err_print("--dump-state runs in one process, not under mpirun -np %d", dist_size());
        dist_exit(EXIT_USAGE);
    }
}

// Refuse before allocating when the model cannot fit in this machine's memory.
static void check_memory(const ModelDims *d, int B, int T, int n_models) {
    size_t n_params = 0, bytes = gpt_memory_bytes(d, B, T, &n_params);
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (bytes == 0)
        die(EXIT_USAGE, "the model (n_layer %d, n_embd %d, block_size %d, batch %d) needs more memory than can be addressed",
            d->n_layer, d->n_embd, d->block_size, B);
    double need = (double)bytes * n_models;
    if (phys > 0 && need > 0.9 * phys)
        die(EXIT_USAGE, "the model needs %.1f GiB of memory (%zu parameters plus activations) but this machine has %.1f GiB",
            need / 1073741824.0, n_params, phys / 1073741824.0);
}

// The text (the vocabulary of the checkpoint when resuming), or for --bench no text at all.
static void load_data(Dataset *ds, const Config *cfg, const Args *args, const Checkpoint *ck, const Checkpoint *init) {
    char err[ERRLEN];
    memset(ds, 0, sizeof *ds);
    if (args->bench_steps) {
        // the benchmark trains on random tokens: no data file, and the Tiny Shakespeare
        // vocabulary size (65) so the figures compare with the reference measurements
        ds->vocab.vocab_size = BENCH_VOCAB;
        return;
    }
    int min_len = cfg->block_size + 2;
    if (!ck) ck = init;
    int ok = ck ? dataset_load_with_vocab(ds, cfg->data_path, cfg->val_fraction, min_len, &ck->vocab, err, sizeof err)
                : dataset_load(ds, cfg->data_path, cfg->val_fraction, min_len, err, sizeof err);
    if (!ok) die(EXIT_RUNTIME, "%s", err);
}

// Time left as "42s", "3m05s" or "1h07m" ("?" before it can be estimated).
static void fmt_eta(char *buf, size_t n, double seconds) {
    if (!(seconds >= 0) || seconds > 1e7) { snprintf(buf, n, "?"); return; }
    long s = (long)(seconds + 0.5);
    if (s >= 3600) snprintf(buf, n, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60) snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
    else snprintf(buf, n, "%lds", s);
}

// Print the progress line of one or two runs.
static void print_progress(Run *runs, int n_runs, long step, long max_steps, double eta_s) {
    char eta[32];
    fmt_eta(eta, sizeof eta, eta_s);
    if (n_runs == 1) {
        Run *r = &runs[0];
        printf("step %5ld/%ld | loss %.4f | lr %.2e | gnorm %6.3f | %6.1f ms | %7.0f tok/s | eta %s", step, max_steps,
               r->loss, r->lr, r->grad_norm, r->ms, (double)r->cfg.batch_size * r->cfg.block_size / (r->ms / 1000.0), eta);
        if (r->have_probe) printf(" | attn H %.2f max %.2f", r->probe.entropy_norm, r->probe.max_weight);
        if (r->have_probe && !gpt_attention_is_causal(&r->model)) printf(" future %.2f", r->probe.future_mass);
        if (run_attention_falls_back(r)) printf(" | attention: the definition");
        if (r->st.skipped_steps) printf(" | skipped %ld", r->st.skipped_steps);
        if (r->skipped) printf(" | SKIPPED (%s)", r->skip_reason);
        printf("\n");
    } else {
        printf("step %5ld/%ld |", step, max_steps);
        for (int i = 0; i < n_runs; i++) {
            Run *r = &runs[i];
            printf(" %-8s loss %.4f H %.2f max %.2f", r->variant, r->loss, r->probe.entropy_norm, r->probe.max_weight);
            if (!gpt_attention_is_causal(&r->model)) printf(" future %.2f", r->probe.future_mass);
            printf("%s%s |", run_attention_falls_back(r) ? " (definition)" : "", r->skipped ? " SKIPPED" : "");
        }
        printf(" eta %s\n", eta);
    }
    fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// modes

static void dump_state(Run *r, const Dataset *ds, const char *path) {
    const Config *c = &r->cfg;
    int B = c->batch_size, T = c->block_size, V = r->model.dims.vocab_size;
    size_t BT = (size_t)B * T;
    int *x = xmalloc(BT * sizeof(int), "batch"), *y = xmalloc(BT * sizeof(int), "batch");
    Rng rng = r->st.rng;
    sample_batch(ds, 0, &rng, B, T, x, y);
    GPT *m = &r->model;
    gpt_forward(m, x, NULL, B, T);
    real *logits = xmalloc(BT * (size_t)V * sizeof(real), "logits");
    memcpy(logits, m->acts.logits, BT * (size_t)V * sizeof(real));
    double loss = gpt_forward(m, x, y, B, T);
    gpt_backward(m);
    char err[ERRLEN], name[TENSOR_NAME_MAX + 8];
    TWriter *w = tw_open(path, "TGPTDUMP", err, sizeof err);
    if (!w) die(EXIT_RUNTIME, "%s", err);
    int rdt = sizeof(real) == 4 ? DT_F32 : DT_F64;
    uint32_t shape[3] = {(uint32_t)strlen(r->cfg_json), 0, 0};
    tw_record(w, "config", DT_U8, 1, shape, r->cfg_json);
    shape[0] = (uint32_t)B; shape[1] = (uint32_t)T; shape[2] = (uint32_t)V;
    tw_record(w, "inputs", DT_I32, 2, shape, x);
    tw_record(w, "targets", DT_I32, 2, shape, y);
    tw_record(w, "logits", rdt, 3, shape, logits);
    shape[0] = 1;
    tw_record(w, "loss", DT_F64, 1, shape, &loss);
    for (int i = 0; i < m->n_tensors; i++) {
        const TensorInfo *t = &m->tensors[i];
        shape[0] = (uint32_t)t->shape[0];
        shape[1] = (uint32_t)t->shape[1];
        snprintf(name, sizeof name, "param.%s", t->name);
        tw_record(w, name, rdt, t->ndim, shape, m->params + t->offset);
        snprintf(name, sizeof name, "grad.%s", t->name);
        tw_record(w, name, rdt, t->ndim, shape, m->grads + t->offset);
    }
    if (!tw_commit(w, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    // with "-" the dump is standard output and the line goes to stderr
    fprintf(strcmp(path, "-") == 0 ? stderr : stdout, "wrote %s: loss %.6f on the first training batch (%d x %d), %d tensors\n",
            strcmp(path, "-") == 0 ? "the dump to standard output" : path, loss, B, T, m->n_tensors);
    free(x); free(y); free(logits);
}

// CPU seconds used by the whole process (every thread); on a shared machine the timed steps' wall
// time also counts the moments the threads waited for a core, their CPU time does not.
static double process_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench(Run *r, int steps) {
    const Config *c = &r->cfg;
    int B = c->batch_size, T = c->block_size, V = r->model.dims.vocab_size;
    size_t BT = (size_t)B * T, local = (size_t)r->rows * T;  // this rank's share of the batch
    int *x = xmalloc(BT * sizeof(int), "batch"), *y = xmalloc(BT * sizeof(int), "batch");
    Rng rng;
    rng_seed(&rng, 12345 + (uint64_t)dist_rank());
    int warmup = 3;
    double *ms = xmalloc(sizeof(double) * (size_t)steps, "timings");
    // The peak is probed before and after the steps: on a shared machine the two disagree when
    // it was too busy to measure, and then no MFU is printed (fma_peak_mfu).
    FmaPeak peak_before = fma_peak_measure();
    double cpu_start = 0;
    for (int i = 0; i < warmup + steps; i++) {
        for (size_t j = 0; j < local; j++) { x[j] = (int)rng_below(&rng, (uint64_t)V); y[j] = (int)rng_below(&rng, (uint64_t)V); }
        if (i == warmup) {  // account the timed steps only
            r->model.profile = 1;
            memset(r->model.phase_seconds, 0, sizeof r->model.phase_seconds);
            r->comm_seconds = 0;
            cpu_start = process_cpu_seconds();
        }
        run_step(r, x, y, i);
        if (i >= warmup) ms[i - warmup] = r->ms;
    }
    double cpu_ms = 1000.0 * (process_cpu_seconds() - cpu_start) / steps;
    // median by insertion sort (N is small)
    for (int i = 1; i < steps; i++) {
        double v = ms[i];
        int j = i - 1;
        while (j >= 0 && ms[j] > v) { ms[j + 1] = ms[j]; j--; }
        ms[j + 1] = v;
    }
    double median = steps % 2 ? ms[steps / 2] : 0.5 * (ms[steps / 2 - 1] + ms[steps / 2]);
    double flops = gpt_flops_per_step(&r->model, B, T);
    double gflops = flops / (median / 1000.0) / 1e9;
    FmaPeak peak_after = fma_peak_measure();
    dist_sum_double(&peak_before.gflops, 1);  // with MPI, the ranks' cores together (each measures its own at once)
    dist_sum_double(&peak_after.gflops, 1);
    char peak_text[256];
    double mfu = fma_peak_mfu(gflops, &peak_before, &peak_after, peak_text, sizeof peak_text);
    static const char *const phase_names[PHASE_COUNT] = {"matmul_fwd", "matmul_bwd", "attention", "other", "optimizer"};
    double total = 0;
    for (int p = 0; p < PHASE_COUNT; p++) total += r->model.phase_seconds[p];
    char workers[64];
    if (dist_size() > 1) snprintf(workers, sizeof workers, "%d ranks x %d threads", dist_size(), thread_max());
    else snprintf(workers, sizeof workers, "%d threads", thread_max());
    printf("%s: %zu params, B=%d T=%d, %.2f GFLOP/step, %s, GEMM: %s\n%s\n", c->name,
           r->model.n_params, B, T, flops / 1e9, workers, matmul_simd_path(), peak_text);
    printf("phases (ms/step):");
    for (int p = 0; p < PHASE_COUNT; p++)
        printf(" %s %.2f (%.0f%%)", phase_names[p], 1000.0 * r->model.phase_seconds[p] / steps,
               total > 0 ? 100.0 * r->model.phase_seconds[p] / total : 0.0);
    printf("\n");
    {
        // The phases are worker 0's (one thread's share of the rows when the batch is split
        // between threads): its FLOPs by phase (docs/PERFORMANCE.md, the FLOP count: the weights'
        // products 2 FLOPs per weight and token forward, 4 backward; attention's two products
        // over the pairs it computes, forward and backward) over its time, against one thread's
        // share of the peak.
        int n = r->model.n_workers < r->rows ? r->model.n_workers : r->rows;
        int split = n >= 2 && thread_max() >= n;
        double rows0 = split ? (double)(r->rows / n) : r->rows;
        double mat = gpt_product_flops(&r->model, rows0, T);
        double att = gpt_attention_flops(&r->model, rows0, T);
        double per_thread_peak = peak_before.gflops > peak_after.gflops ? peak_before.gflops : peak_after.gflops;
        per_thread_peak /= (split ? n : 1) * dist_size();
        double fs[3] = {mat, 2 * mat, att};
        printf("per thread (GFLOP/s):");
        for (int p = 0; p < 3; p++) {
            double g = r->model.phase_seconds[p] > 0 ? fs[p] * steps / r->model.phase_seconds[p] / 1e9 : 0;
            printf(" %s %.1f", phase_names[p], g);
            if (mfu >= 0) printf(" (%.0f%%)", 100 * g / per_thread_peak);
        }
        if (mfu >= 0) printf(", of a thread's share of the sustained peak, %.1f", per_thread_peak);
        printf("\n");
    }
    if (dist_size() > 1) {
        // the allreduce inside a step also waits for the slowest rank; time it alone as well
        // (ranks lined up by a barrier, best of 10) for the network figures of DISTRIBUTED.md
        double best = INFINITY;
        for (int i = 0; i < 10; i++) {
            dist_barrier();
            double t0 = now_seconds();
            dist_sum_real(r->model.grads, r->model.n_params);
            double t = now_seconds() - t0;
            dist_sum_double(&t, 1);  // the mean over the ranks
            t /= dist_size();
            if (t < best) best = t;
        }
        double mb = r->model.n_params * sizeof(real) / 1e6;
        printf("data-parallel: %d ranks x %d rows, %d threads each; gradient allreduce of %zu floats (%.1f MB): "
               "%.2f ms/step in training, %.2f ms alone (%.2f GB/s of buffer)\n", dist_size(), r->rows, thread_max(),
               r->model.n_params, mb, 1000.0 * r->comm_seconds / steps, 1000.0 * best, mb / 1000.0 / best);
    }
    if (dist_is_root()) {   // sampling speed: 500 characters with the KV cache; the full recompute is timed on 50
        Vocab vocab;
        vocab.vocab_size = V;
        vocab.chars = xmalloc(sizeof(uint32_t) * (size_t)V, "vocabulary");
        for (int i = 0; i < V; i++) vocab.chars[i] = 0x21 + (uint32_t)i;
        int prompt = 0;
        Rng srng;
        rng_seed(&srng, 7);
        double t0 = now_seconds();
        generate(&r->model, &vocab, &prompt, 1, 500, 1.0, 0, &srng, NULL);
        double cached = 500 / (now_seconds() - t0);
        t0 = now_seconds();
        generate_full_window(&r->model, &vocab, &prompt, 1, 50, 1.0, 0, &srng, NULL);
        double full = 50 / (now_seconds() - t0);
        printf("sampling: %.0f tokens/s with the KV cache (500 characters), %.0f tokens/s recomputing the prefix for each (50)\n",
               cached, full);
        free(vocab.chars);
    }
    char mfu_text[16] = "n/a";  // the machine too busy to measure the peak
    if (mfu >= 0) snprintf(mfu_text, sizeof mfu_text, "%.3f", mfu);
    printf("bench %s: ms_per_step=%.2f min=%.2f max=%.2f tokens_per_s=%.0f gflops=%.1f mfu=%s cpu_ms_per_step=%.2f\n",
           c->name, median, ms[0], ms[steps - 1], (double)BT / (median / 1000.0), gflops, mfu_text, cpu_ms);
    free(ms); free(x); free(y);
}

// ---------------------------------------------------------------------------------------------
// the session: the runs trained side by side (one, or the variants of a comparison)

#define ETA_WINDOW 50  // the time left is estimated from the last ETA_WINDOW - 1 step times

typedef struct {
    Run runs[MAX_VARIANTS];
    int n_runs;
    const Comparison *cmp_set;   // NULL for a single run
    const Config *cfg;           // the base configuration
    const Args *args;
    const Dataset *ds;
    const Vocab *vocab;          // the checkpoint's when resuming, else the data's
    const Checkpoint *resume;    // NULL for a fresh start
    int writes;                  // whether this process writes files (rank 0 of a training run)
    Batches b;
    CompareLog *cmp;             // the comparison's report log, in a comparison (rank 0)
    uint32_t *probe_text;        // the probe batch's first sequence (block_size characters), for its maps
    long start_step, max_steps;
    long skipped_before[MAX_VARIANTS];  // each run's skipped steps when this process began
    double wall0;                // when this process's training began
    double step_end[ETA_WINDOW]; // when the last steps ended (a ring), for the time left
    long n_step_ends;
} Session;

// The runs, built, with their first weights: from the seed (every variant gets a copy) or from
// the checkpoint.
static void setup_runs(Session *s, const Config *cfg, const Args *args, const Checkpoint *resume, const Checkpoint *init,
                       const Dataset *ds) {
    char err[ERRLEN];
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->args = args;
    s->ds = ds;
    s->resume = resume;
    s->cmp_set = args->comparison;
    s->n_runs = s->cmp_set ? s->cmp_set->n : 1;
    s->vocab = resume ? &resume->vocab : &ds->vocab;
    s->writes = args->bench_steps == 0 && !args->dump_path && dist_is_root();
    if (s->writes && !ensure_dir(cfg->out_dir, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    ModelDims dims = {ds->vocab.vocab_size, cfg->block_size, cfg->n_layer, cfg->n_head, cfg->n_embd};
    int rows = cfg->batch_size / dist_size();
    for (int i = 0; i < s->n_runs; i++) run_setup(&s->runs[i], cfg, s->cmp_set ? &s->cmp_set->v[i] : NULL, &dims, rows);
    Run *first = &s->runs[0];
    if (resume) {
        if (!checkpoint_restore(resume, &first->model, args->resume_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        first->st = resume->state;
        first->elapsed_before = resume->state.elapsed_s;
        if (!resume->has_optimizer) die(EXIT_RUNTIME, "'%s' holds no optimizer state and cannot be resumed", args->resume_path);
    } else {
        // the same seed draws the same initial weights; in a comparison every variant gets a copy
        Rng init_rng;
        rng_seed(&init_rng, (uint64_t)cfg->seed);
        gpt_init(&first->model, strcmp(cfg->init, "fan_in") == 0 ? INIT_FAN_IN : INIT_GPT2, &init_rng);
        rng_seed(&first->st.rng, (uint64_t)cfg->seed + 1);
        if (init) {  // the weights only: the optimizer starts afresh
            Checkpoint weights = *init;
            weights.has_optimizer = 0;
            if (!checkpoint_restore(&weights, &first->model, args->init_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        }
        for (int i = 1; i < s->n_runs; i++) {
            memcpy(s->runs[i].model.params, first->model.params, first->model.n_params * sizeof(real));
            s->runs[i].st = first->st;
        }
    }
    s->start_step = first->st.step;
    s->max_steps = cfg->max_steps;
}

// Rank 0's part of claim_out_dirs: 0, or the exit code with a message in err.
static int claim_out_dirs_root(Session *s, char *err, size_t errlen) {
    const Config *cfg = s->cfg;
    const char *resume_path = s->args->resume_path;
    char found[300], ckpt_dir[2048];
    int overwrite = strcmp(cfg->overwrite, "true") == 0;
    if (!outdir_lock(cfg->out_dir, err, errlen)) return EXIT_USAGE;
    // a resumed run continues the files of the directory its checkpoint is in
    if (resume_path) dir_of(resume_path, ckpt_dir, sizeof ckpt_dir);
    int own = resume_path && outdir_same_dir(ckpt_dir, cfg->out_dir);
    if (own && !s->args->rewind) {
        // continuing an older checkpoint in its own directory would replace a later checkpoint.bin
        // and drop the logs' rows after the older step (a damaged checkpoint.bin is no later one)
        char latest[2200];
        struct stat sl, sr;
        join_path(latest, sizeof latest, ckpt_dir, "checkpoint.bin");
        Checkpoint later;
        char lerr[512];
        if (stat(latest, &sl) == 0 && stat(resume_path, &sr) == 0 && (sl.st_dev != sr.st_dev || sl.st_ino != sr.st_ino) &&
            checkpoint_open(&later, latest, lerr, sizeof lerr)) {
            long at = later.state.step, from = s->resume->state.step;
            checkpoint_close(&later);
            if (at > from) {
                snprintf(err, errlen, "'%.600s' is at step %ld but '%.600s' is at step %ld: resuming here would replace it and"
                         " drop the logs' rows after step %ld; branch with --train.out_dir=ANOTHER_DIR, or rewind on purpose"
                         " with --rewind", resume_path, from, latest, at, from);
                return EXIT_USAGE;
            }
        }
    }
    // the directories this session writes: out_dir, and in a comparison each variant's too
    const char *dirs[MAX_VARIANTS + 1];
    int n_dirs = 0;
    dirs[n_dirs++] = cfg->out_dir;
    for (int i = 0; s->cmp_set && i < s->n_runs; i++) dirs[n_dirs++] = s->runs[i].dir;
    for (int d = 1; d < n_dirs; d++) {
        // a variant's directory is a directory of the comparison's own: never followed elsewhere
        struct stat st;
        if (lstat(dirs[d], &st) == 0 && !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "'%.900s' %s: a variant writes into a directory of its own inside"
                     " '%.900s'; remove it or choose another train.out_dir", dirs[d],
                     S_ISLNK(st.st_mode) ? "is a symbolic link, not a directory" : "is not a directory", cfg->out_dir);
            return EXIT_USAGE;
        }
    }
    for (int d = 0; d < n_dirs; d++) {
        struct stat st;
        int exists = stat(dirs[d], &st) == 0;
        if (d > 0 && exists && !outdir_lock(dirs[d], err, errlen)) return EXIT_USAGE;
        if (own || overwrite || !exists || !outdir_run_file(dirs[d], found, sizeof found)) continue;
        char resume_it[2300] = "";
        if (resume_path)
            snprintf(err, errlen, "'%.600s' holds another run (%s) than the one '%.600s' comes from: resume with"
                     " --train.out_dir=%.600s (the checkpoint's directory), or replace that run with --train.overwrite=true",
                     dirs[d], found, resume_path, ckpt_dir);
        else {
            char ckpt[2200];
            join_path(ckpt, sizeof ckpt, dirs[d], "checkpoint.bin");
            if (!s->cmp_set && access(ckpt, F_OK) == 0) snprintf(resume_it, sizeof resume_it, "continue it with --resume %s, ", ckpt);
            snprintf(err, errlen, "'%.600s' already holds a run (%s): %.1300sgive this %s another --name or --train.out_dir, or replace"
                     " it with --train.overwrite=true", dirs[d], found, resume_it, s->cmp_set ? "comparison" : "run");
        }
        return EXIT_USAGE;
    }
    for (int d = 0; d < n_dirs; d++) {
        if (d > 0) {
            struct stat st;
            int existed = stat(dirs[d], &st) == 0;
            if (!ensure_dir(dirs[d], err, errlen)) return EXIT_RUNTIME;
            if (!existed && !outdir_lock(dirs[d], err, errlen)) return EXIT_USAGE;
        }
        if (overwrite && !own && !outdir_clear_run(dirs[d], err, errlen)) return EXIT_USAGE;
        // a run file that is a symbolic link, a FIFO or a device is never written through
        if (!outdir_check_run_files(dirs[d], err, errlen)) return EXIT_RUNTIME;
        // with the directory locked, every temporary file in it is a killed writer's
        outdir_remove_stale_temps(dirs[d]);
    }
    return 0;
}

// The directories the session writes (out_dir, and each variant's): locked for the session's
// life, so a second trainer is refused; a new run (or a resumed one writing elsewhere than its
// checkpoint's directory) refuses one that holds another run's files unless train.overwrite is
// "true", which removes them first; temporary files that killed runs left are removed. Rank 0
// decides; on a refusal every rank exits alike.
static void claim_out_dirs(Session *s) {
    char err[4096] = "";
    int code = s->writes ? claim_out_dirs_root(s, err, sizeof err) : 0;
    code = dist_max_int(code);
    if (code) {
        if (dist_is_root()) err_print("%s", err);
        dist_exit(code);
    }
}

// The latest good checkpoint of run r: the one this process wrote last, else the one it resumed
// from. 0 when there is none.
static int latest_checkpoint(const Session *s, const Run *r, char *path, size_t n, long *step) {
    if (r->saved_step >= 0) {
        join_path(path, n, r->dir, "checkpoint.bin");
        *step = r->saved_step;
        return 1;
    }
    if (s->resume) {
        snprintf(path, n, "%s", s->args->resume_path);
        *step = s->resume->state.step;
        return 1;
    }
    return 0;
}

// The line a second Ctrl-C prints names the latest checkpoint (of the first run in a comparison).
static void note_latest_checkpoint(const Session *s) {
    char path[2200];
    long step;
    if (latest_checkpoint(s, &s->runs[0], path, sizeof path, &step))
        stop_note_latest("the latest checkpoint%s is %s (step %ld)", s->n_runs > 1 ? " of the first variant" : "", path, step);
    else
        stop_note_latest("no checkpoint was written");
}

// A stop signal before training: nothing trained; exit 128 + signal.
static void stop_if_signalled(const Args *args, const char *phase) {
    int sig = stop_agreed();
    if (!sig) return;
    if (dist_is_root())
        fprintf(stderr, "train: %s during %s: nothing trained%s%s\n", stop_reason(sig), phase,
                args->resume_path ? "; unchanged: " : "", args->resume_path ? args->resume_path : "");
    dist_exit(stop_exit_code(sig));
}

// The batch buffers and the fixed probe batch, the logs, the comparison's log; the first lines.
static void start_training(Session *s) {
    const Config *cfg = s->cfg;
    int B = cfg->batch_size, T = cfg->block_size;
    size_t BT = (size_t)B * T;
    int **bufs[6] = {&s->b.x, &s->b.y, &s->b.ex, &s->b.ey, &s->b.px, &s->b.py};
    for (int i = 0; i < 6; i++) *bufs[i] = xmalloc(BT * sizeof(int), "batch");
    {   // the probe batch is fixed for the whole run (and identical for every variant)
        Rng probe_rng;
        rng_seed(&probe_rng, (uint64_t)cfg->seed * 7919u + 101u);
        sample_batch(s->ds, 1, &probe_rng, B, T, s->b.px, s->b.py);
    }
    for (int i = 0; i < s->n_runs; i++) {
        run_open_logs(&s->runs[i], s->resume != NULL);
        s->skipped_before[i] = s->runs[i].st.skipped_steps;
    }
    if (s->cmp_set && dist_is_root()) {
        s->cmp = compare_log_open(cfg->out_dir, cfg->max_steps, s->cmp_set->key, s->cmp_set->values, s->cmp_set->n);
        if (!s->cmp) die(EXIT_RUNTIME, "internal: cannot start the comparison's report");
        compare_log_command(s->cmp, s->args->command);
        // the maps of report.html: the weights of the probe batch's first sequence at every probe
        s->probe_text = xmalloc((size_t)T * sizeof(uint32_t), "probe sequence");
        for (int t = 0; t < T; t++) s->probe_text[t] = s->vocab->chars[s->b.px[t]];
        for (int i = 0; i < s->n_runs; i++) run_keep_probe_weights(&s->runs[i]);
    }
    note_latest_checkpoint(s);
    // resumed between two probes: probe now (not logged), so the progress line shows the
    // attention from the first step on
    if (s->resume && cfg->attn_interval > 0 && s->start_step % cfg->attn_interval != 0 && s->start_step < s->max_steps &&
        dist_is_root())
        for (int i = 0; i < s->n_runs; i++) run_probe(&s->runs[i], s->b.px, s->b.py, s->start_step, 0);

    char what[128];
    if (s->cmp_set) snprintf(what, sizeof what, "comparing %s", s->cmp_set->what);
    else snprintf(what, sizeof what, "with attention scale %s", cfg->attn_scale_str);
    printf("%s %s: %zu parameters, vocab %d, %zu train / %zu val tokens, %s, init %s\n",
           s->resume ? "resuming" : "training", cfg->name, s->runs[0].model.n_params, s->runs[0].model.dims.vocab_size,
           s->ds->n_train, s->ds->n_tokens - s->ds->n_train, what, cfg->init);
    if (dist_size() > 1)
        printf("data-parallel over %d MPI ranks: %d of the %d rows of each batch per rank, %d threads each\n", dist_size(),
               s->runs[0].rows, B, thread_max());
    for (int i = 0; i < s->n_runs; i++)
        if (run_attention_falls_back(&s->runs[i]))
            printf("%s%sattention: the engine computes the causal softmax over keys only: the definition (attention.c) trains"
                   " attn_mask %s, softmax_axis %s\n", s->runs[i].variant ? s->runs[i].variant : "", s->runs[i].variant ? ": " : "",
                   s->runs[i].cfg.attn_mask, s->runs[i].cfg.softmax_axis);
    if (s->resume) printf("continuing from step %ld of %ld, writing to %s\n", s->start_step, s->max_steps, cfg->out_dir);
    else printf("writing to %s (step %ld of %ld)\n", cfg->out_dir, s->start_step, s->max_steps);
}

// Run r diverged (why): stop with exit 1, keeping its last checkpoint from finite steps (a
// diverged state is never written over it); the other variants of a comparison save theirs.
static _Noreturn void stop_diverged(Session *s, Run *r, const char *why) {
    // every rank gets here at the same step: the guard's inputs are the same on every rank
    for (int i = 0; i < s->n_runs; i++) {
        Run *other = &s->runs[i];
        run_close_logs(other);
        // a variant after r in the session has not taken this step yet: its last checkpoint stays
        if (other != r && other->st.step == r->st.step) run_checkpoint(other, s->vocab);
    }
    dist_barrier();  // let rank 0 finish writing
    if (dist_is_root()) {
        char path[2200], lr[128], last[64];
        long step;
        const Config *c = &r->cfg;
        snprintf(lr, sizeof lr, "--train.lr=%g --train.min_lr=%g", c->lr / 10, c->min_lr / 10);
        if (isfinite(r->last_finite_loss)) snprintf(last, sizeof last, "last finite loss %.4f", r->last_finite_loss);
        else snprintf(last, sizeof last, "no finite loss since step %ld", s->start_step);
        if (latest_checkpoint(s, r, path, sizeof path, &step))
            err_print("%s%sstopping at step %ld: %s (%s). The diverged state is not saved; the last checkpoint from finite"
                      " steps is %s (step %ld). Resume it with a lower learning rate: ./train --resume %s %s (or a smaller"
                      " train.grad_clip, or model.attn_scale=sqrt)", r->variant ? r->variant : "", r->variant ? ": " : "",
                      r->st.step, why, last, path, step, path, lr);
        else
            err_print("%s%sstopping at step %ld: %s (%s). No checkpoint was written before it: start again with %s (or a"
                      " smaller train.grad_clip, or model.attn_scale=sqrt)", r->variant ? r->variant : "",
                      r->variant ? ": " : "", r->st.step, why, last, lr);
    }
    dist_exit(EXIT_RUNTIME);
}

// Run i's last probe (after `step` updates) into the comparison's log: its statistics and the
// weights of the probe sequence.
static void log_probe(Session *s, int i, long step) {
    const Run *r = &s->runs[i];
    compare_log_probe(s->cmp, i, step, &r->probe);
    compare_log_attention(s->cmp, i, step, r->probe_P, r->model.dims.n_layer, r->model.dims.n_head,
                          s->cfg->block_size, s->probe_text);
}

// One step of every run on the same batch. Returns whether it evaluated.
static int step_runs(Session *s, long step) {
    const Config *cfg = s->cfg;
    long done = step + 1;
    stop_test_point("step");
    int probe = cfg->attn_interval > 0 && step % cfg->attn_interval == 0 && dist_is_root();
    int eval = cfg->eval_interval > 0 && (done % cfg->eval_interval == 0 || done == s->max_steps);
    // every rank draws the whole batch from the same stream and trains on its own rows, so
    // the ranks' rows together are exactly the batch one process would draw
    sample_batch(s->ds, 0, &s->runs[0].st.rng, cfg->batch_size, cfg->block_size, s->b.x, s->b.y);
    for (int i = 1; i < s->n_runs; i++) s->runs[i].st.rng = s->runs[0].st.rng;  // identical batches, in order
    int evaluated = 0;
    double segment = now_seconds() - s->wall0;
    for (int i = 0; i < s->n_runs; i++) {
        Run *r = &s->runs[i];
        r->st.elapsed_s = r->elapsed_before + segment;  // as best.bin records it
        if (run_advance(r, s->ds, &s->b, s->vocab, step, probe, eval) == RUN_DIVERGED) {
            char why[128];
            snprintf(why, sizeof why, "%d consecutive steps with a non-finite loss or gradient", r->bad_streak);
            stop_diverged(s, r, why);
        }
        evaluated |= r->evaluated;
        if (s->cmp) {
            if (probe) log_probe(s, i, step);
            compare_log_step(s->cmp, i, done, r->loss, r->eval_val, r->eval_gen);
        }
    }
    return evaluated;
}

// The time left from the mean of the recent step times (evaluations, probes and checkpoints
// included), once three steps after the first have run (the first carries start-up costs);
// -1 before ("eta ?").
static double time_left(Session *s, long done) {
    double now = now_seconds();
    s->step_end[s->n_step_ends % ETA_WINDOW] = now;
    s->n_step_ends++;
    long k = s->n_step_ends - 1 < ETA_WINDOW - 1 ? s->n_step_ends - 1 : ETA_WINDOW - 1;  // step times in the ring
    if (k < 3) return -1;
    double oldest = s->step_end[(s->n_step_ends - 1 - k) % ETA_WINDOW];
    return (now - oldest) / (double)k * (double)(s->max_steps - done);
}

// What the terminal shows after a step: the progress line every log_interval steps (and on the
// first and on skipped steps), the losses after an evaluation.
static void report_step(Session *s, long done, int evaluated) {
    const Config *cfg = s->cfg;
    double eta = time_left(s, done);
    if (cfg->log_interval > 0 && (done % cfg->log_interval == 0 || done == s->start_step + 1 || s->runs[0].skipped))
        print_progress(s->runs, s->n_runs, done, s->max_steps, eta);
    if (evaluated)
        for (int i = 0; i < s->n_runs; i++) {
            const Run *r = &s->runs[i];
            printf("step %5ld: %s%strain loss %.4f, val loss %.4f", done, r->variant ? r->variant : "",
                   r->variant ? " " : "", r->eval_train, r->eval_val);
            if (isfinite(r->eval_gen))  // the honest loss, beside the teacher-forced one on the same windows
                printf(", gen loss %.4f (teacher-forced on the same %d window%s: %.4f)", r->eval_gen,
                       r->eval_gen_windows, r->eval_gen_windows == 1 ? "" : "s", r->eval_gen_tf);
            printf("\n");
        }
}

// Checkpoint the runs (all when `due`, else those with a postponed checkpoint). A run whose
// optimizer state is no longer finite stops as diverged.
static void checkpoint_runs(Session *s, int due) {
    double segment = now_seconds() - s->wall0;
    for (int i = 0; i < s->n_runs; i++) {
        Run *r = &s->runs[i];
        r->st.elapsed_s = r->elapsed_before + segment;
        if ((due || r->ckpt_pending) && run_checkpoint(r, s->vocab) == CKPT_NONFINITE)
            stop_diverged(s, r, "the parameters or the optimizer moments are no longer finite");
    }
    note_latest_checkpoint(s);
}

// The message of a stop in the training loop after update `done`.
static void say_stopped_training(const Session *s, int sig, long done) {
    if (!dist_is_root()) return;
    fprintf(stderr, "\n%s at step %ld: ", stop_reason(sig), done);
    for (int i = 0; i < s->n_runs; i++) {
        const Run *r = &s->runs[i];
        char path[2200];
        long step;
        if (s->n_runs > 1) fprintf(stderr, "%s%s: ", i ? "; " : "", r->variant);
        if (r->saved_step == done) fprintf(stderr, "checkpoint saved");
        else if (latest_checkpoint(s, r, path, sizeof path, &step))
            fprintf(stderr, "not saved (the last %d steps were skipped as non-finite); the latest checkpoint is %s (step %ld)",
                    r->bad_streak, path, step);
        else fprintf(stderr, "not saved (the last %d steps were skipped as non-finite)", r->bad_streak);
    }
    char path[2200];
    long step;
    if (latest_checkpoint(s, &s->runs[0], path, sizeof path, &step)) {
        if (s->n_runs > 1) fprintf(stderr, ". A comparison does not resume as one; each variant resumes on its own, e.g.");
        fprintf(stderr, ". Resume with:\n  ./train --resume %s\n", path);
    } else {
        fprintf(stderr, ".\n");
    }
}

// The training loop, from the start step to max_steps, with checkpoints every ckpt_interval
// steps and at the end. Returns 0, or the signal that stopped it (after saving what was
// consistent).
static int train_loop(Session *s) {
    const Config *cfg = s->cfg;
    s->wall0 = now_seconds();
    for (long step = s->start_step; step < s->max_steps; step++) {
        long done = step + 1;
        int evaluated = step_runs(s, step);
        report_step(s, done, evaluated);
        checkpoint_runs(s, (cfg->ckpt_interval > 0 && done % cfg->ckpt_interval == 0) || done == s->max_steps);
        // a signal may reach the ranks at different steps: they agree on it before acting (a
        // signal during the step or the checkpoint stops here, after this step)
        int sig = stop_agreed();
        if (sig) {
            checkpoint_runs(s, 1);
            for (int i = 0; i < s->n_runs; i++) run_close_logs(&s->runs[i]);
            say_stopped_training(s, sig, done);
            return sig;
        }
    }
    return 0;
}

// A run that trained steps in this process but skipped every one of them (non-finite or
// spiking, fewer in a row than the divergence guard's limit) has learned nothing: exit 1 before
// the final evaluation, naming the checkpoint that is still the latest good one.
static void stop_if_nothing_trained(Session *s) {
    long trained = s->max_steps - s->start_step;
    for (int i = 0; i < s->n_runs && trained > 0; i++) {
        Run *r = &s->runs[i];
        if (r->st.skipped_steps - s->skipped_before[i] < trained) continue;
        for (int k = 0; k < s->n_runs; k++) run_close_logs(&s->runs[k]);
        if (dist_is_root()) {
            char path[2200], where[2400] = "no checkpoint was written";
            long step;
            if (latest_checkpoint(s, r, path, sizeof path, &step))
                snprintf(where, sizeof where, "the latest checkpoint is still %s (step %ld)", path, step);
            err_print("%s%severy one of the %ld steps from step %ld to %ld was skipped (non-finite loss or gradient, or a"
                      " loss spike): nothing was trained; %s", r->variant ? r->variant : "", r->variant ? ": " : "",
                      trained, s->start_step + 1, s->max_steps, where);
        }
        dist_exit(EXIT_RUNTIME);
    }
}

// The message of a stop while finishing: what is saved and what is not.
static void say_stopped_finishing(const Session *s, int sig, const char *phase, const char *missing) {
    if (!dist_is_root()) return;
    char path[2200];
    long step = -1;
    fprintf(stderr, "\n%s during %s: ", stop_reason(sig), phase);
    if (latest_checkpoint(s, &s->runs[0], path, sizeof path, &step))
        fprintf(stderr, "the checkpoint%s at step %ld %s saved", s->n_runs > 1 ? "s" : "", step, s->n_runs > 1 ? "are" : "is");
    if (missing) {
        fprintf(stderr, "; %s not written.", missing);
        if (s->n_runs == 1 && step >= s->max_steps) fprintf(stderr, " Finish the run with:\n  ./train --resume %s", path);
        fprintf(stderr, "\n");
    } else {
        fprintf(stderr, "; the run is complete.\n");
    }
}

// After the last step: the closing probe; every run's final evaluation and summary.json; the
// samples; then the comparison's report (which shows them); then the final lines. Returns 0, or
// the signal that cut it short (what was complete stays saved).
static int finish_runs(Session *s) {
    char err[ERRLEN];
    const Config *cfg = s->cfg;
    // the statistics after the last step close the curves
    if (cfg->attn_interval > 0 && s->max_steps % cfg->attn_interval == 0 && s->start_step < s->max_steps && dist_is_root())
        for (int i = 0; i < s->n_runs; i++) {
            run_probe(&s->runs[i], s->b.px, s->b.py, s->max_steps, 1);
            if (s->cmp) log_probe(s, i, s->max_steps);
        }
    if (s->start_step >= s->max_steps)
        printf("the checkpoint is already at step %ld of %ld: nothing to train\n", s->start_step, s->max_steps);
    FinalLosses f[MAX_VARIANTS];
    for (int i = 0; i < s->n_runs; i++) {
        if (!run_finish(&s->runs[i], s->ds, &s->b, s->vocab, s->wall0, &f[i])) {
            int sig = stop_agreed();
            say_stopped_finishing(s, sig, "the final evaluation",
                                  s->n_runs > 1 ? "the report and the unfinished variants' summary.json are" : "summary.json is");
            return sig;
        }
    }
    if (!dist_is_root()) {
        if (s->cmp) compare_log_discard(s->cmp);
        s->cmp = NULL;
        return 0;
    }
    for (int i = 0; i < s->n_runs; i++) {
        char *text = NULL;
        int done = !g_stop_signal && run_sample(&s->runs[i], s->vocab, s->cmp ? &text : NULL);
        if (s->cmp) {
            CompareFinal cf = {f[i].train_loss, f[i].val_loss, f[i].gen_loss, f[i].gen_loss_tf, text};
            compare_log_final(s->cmp, i, &cf);  // copies the text
        }
        free(text);
        if (!done) {
            say_stopped_finishing(s, g_stop_signal, "sampling", s->cmp ? "the report is" : NULL);
            return g_stop_signal;
        }
    }
    char svg[64] = "";
    if (s->cmp) {
        CompareLog *cmp = s->cmp;
        s->cmp = NULL;
        snprintf(svg, sizeof svg, "%s", compare_svg_name(cmp));
        stop_test_point("report");
        if (!compare_log_finish(cmp, cfg, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        if (g_stop_signal) {  // the report is written whole; the final lines are what is left
            say_stopped_finishing(s, g_stop_signal, "the report", NULL);
            return g_stop_signal;
        }
    }
    for (int i = 0; i < s->n_runs; i++) run_print_final(&s->runs[i], f[i]);
    if (svg[0])
        printf("wrote %s/compare.csv, %s/report.md, %s/%s and %s/report.html\n", cfg->out_dir, cfg->out_dir,
               cfg->out_dir, svg, cfg->out_dir);
    return 0;
}

// Free everything (so leak checkers see a clean exit on every path).
static void release_session(Session *s) {
    for (int i = 0; i < s->n_runs; i++) run_release(&s->runs[i]);
    int *bufs[6] = {s->b.x, s->b.y, s->b.ex, s->b.ey, s->b.px, s->b.py};
    for (int i = 0; i < 6; i++) free(bufs[i]);
    if (s->cmp) compare_log_discard(s->cmp);
    s->cmp = NULL;
    free(s->probe_text);
    s->probe_text = NULL;
}

// ---------------------------------------------------------------------------------------------

int main(int argc, char **argv) {
    g_progname = "train";
    dist_init(&argc, &argv);
    // only rank 0 speaks; the other ranks' errors still reach stderr
    if (!dist_is_root() && !freopen("/dev/null", "w", stdout)) die(EXIT_RUNTIME, "cannot redirect stdout to /dev/null");
    setvbuf(stdout, NULL, _IOLBF, 0);

    // the command line, the configuration (from the checkpoint when resuming), the data
    Args args;
    parse_args(argc, argv, &args);
    int training = !args.bench_steps && !args.dump_path;
    if (training) stop_install();  // --bench and --dump-state have nothing to save: a signal ends them
    char err[ERRLEN];
    Checkpoint ck, init_file, *resume = NULL, *init = NULL;
    if (args.resume_path) {
        if (!checkpoint_open(&ck, args.resume_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        resume = &ck;
    }
    if (args.init_path) {
        if (!model_file_open(&init_file, args.init_path, args.vocab_text, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        init = &init_file;
    }
    Config cfg;
    load_config(&cfg, &args, resume);
    if (init) take_model_from(&cfg, &args, init);
    {   // the dump may not replace an input
        const char *inputs[5] = {args.resume_path, args.init_path, args.vocab_text, args.config_path, cfg.data_path};
        if (out_is_input(args.dump_path, inputs, 5, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    }
    set_threads(&cfg);
    check_ranks(&cfg, &args);
    check_variants(&cfg, args.comparison);
    int n_models = args.comparison ? args.comparison->n : 1;
    {   // refuse absurd sizes before reading any data (the vocabulary adds little; count one token)
        ModelDims lower = {1, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd};
        check_memory(&lower, cfg.batch_size, cfg.block_size, n_models);
    }
    if (training) {
        stop_test_point("startup");
        stop_if_signalled(&args, "start-up");
    }
    Dataset ds;
    load_data(&ds, &cfg, &args, resume, init);
    ModelDims dims = {ds.vocab.vocab_size, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd};
    // with batch threads, each run also holds one gradient buffer per thread and activations for
    // the batch once more: at most as much again as the model itself for up to 8 threads
    check_memory(&dims, cfg.batch_size, cfg.block_size, n_models * (thread_max() > 1 ? 2 : 1));

    // set up the runs, then train them (or time them, or dump one step)
    Session s;
    setup_runs(&s, &cfg, &args, resume, init, &ds);
    int code = 0;
    if (args.dump_path) {
        dump_state(&s.runs[0], &ds, args.dump_path);
    } else if (args.bench_steps) {
        bench(&s.runs[0], args.bench_steps);
    } else {
        claim_out_dirs(&s);
        start_training(&s);
        stop_if_signalled(&args, "start-up");
        int sig = train_loop(&s);
        if (!sig) stop_if_nothing_trained(&s);
        if (!sig) sig = finish_runs(&s);
        if (sig) code = stop_exit_code(sig);
    }
    release_session(&s);
    free(args.overrides);
    dataset_free(&ds);
    if (resume) checkpoint_close(resume);
    if (init) checkpoint_close(init);
    return code;
}
