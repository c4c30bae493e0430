// run/args.c: ./train's command line: the options and their combinations, the variants of
// --compare KEY=V1,V2[,V3,V4] and --compare-scaling, --help (with the configuration keys'
// reference) and --version (the build, the vector path, the measured FMA peak, MPI).
#define _POSIX_C_SOURCE 200809L
#include "run/args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/common.h"     // die, option_value, option_once, command_line_text
#include "base/config.h"     // the keys' reference and their checks
#include "base/dist.h"       // dist_describe for --version
#include "base/version.h"    // TRAINER_VERSION
#include "kernels/matmul.h"  // matmul_simd_path for --version
#include "kernels/peak.h"    // the FMA peak for --version

// --compare-scaling: the attention scale 1/sqrt(head_dim) against none, the alias of
// --compare model.attn_scale=sqrt,none whose variants keep their names scaled/ and unscaled/.
static const Comparison COMPARE_SCALING = {
    "attention scale sqrt vs none",
    "model.attn_scale",
    {"sqrt", "none"},
    2,
    {{"scaled", {"model.attn_scale=sqrt"}}, {"unscaled", {"model.attn_scale=none"}}},
};

// --compare KEY=V1,V2[,V3,V4]: one variant per value, named by it (out_dir/<value>/).
static Comparison g_compare;
static char g_compare_what[600], g_compare_names[MAX_VARIANTS][64],
    g_compare_overrides[MAX_VARIANTS][320];

static const Comparison *parse_compare(const char *spec) {
    const char *eq = strchr(spec, '=');
    size_t klen = eq ? (size_t)(eq - spec) : 0;
    int known = 0;
    for (int i = 0; COMPARABLE_KEYS[i]; i++)
        known |= strlen(COMPARABLE_KEYS[i]) == klen &&
                 strncmp(COMPARABLE_KEYS[i], spec, klen) == 0;  // (run/sweep.h)
    if (!eq || !known)
        die(EXIT_USAGE,
            "--compare expects KEY=V1,V2[,V3,V4] with a KEY that changes no shape and nothing the "
            "runs share"
            " (model.attn_scale, model.attn_impl, model.attn_mask, model.softmax_axis, train.lr, "
            "train.min_lr,"
            " train.warmup_steps, train.lr_decay_steps, train.beta1, train.beta2, train.eps, "
            "train.weight_decay,"
            " train.grad_clip, ...), got '%s'",
            spec);
    Comparison *c = &g_compare;
    memset(c, 0, sizeof *c);
    int w = snprintf(g_compare_what, sizeof g_compare_what, "%.*s", (int)klen, spec);
    static char key[128];
    snprintf(key, sizeof key, "%.*s", (int)klen, spec);
    c->key = key;
    for (const char *v = eq + 1;;) {
        size_t len = strcspn(v, ",");
        if (c->n == MAX_VARIANTS)
            die(EXIT_USAGE, "--compare takes 2 to %d values, got more in '%s'", MAX_VARIANTS, spec);
        if (len == 0 || len >= sizeof g_compare_names[0] || memchr(v, '/', len) ||
            (len <= 2 && strncmp(v, "..", len) == 0))
            die(EXIT_USAGE,
                "--compare: each value names a directory under train.out_dir: '%.*s' cannot (in "
                "'%s')",
                (int)len, v, spec);
        snprintf(g_compare_names[c->n], sizeof g_compare_names[0], "%.*s", (int)len, v);
        for (int j = 0; j < c->n; j++)
            if (strcmp(g_compare_names[j], g_compare_names[c->n]) == 0)
                die(EXIT_USAGE, "--compare: '%s' is given twice", g_compare_names[j]);
        snprintf(g_compare_overrides[c->n], sizeof g_compare_overrides[0], "%.*s=%s", (int)klen,
                 spec, g_compare_names[c->n]);
        if (w < (int)sizeof g_compare_what)
            w += snprintf(g_compare_what + w, sizeof g_compare_what - (size_t)w, "%s%s",
                          c->n ? " vs " : " ", g_compare_names[c->n]);
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

static void print_usage(FILE *f) {
    fprintf(
        f,
        "usage: train [CONFIG.json] [--section.key=value ...] [options]\n"
        "\n"
        "Trains a character-level GPT on a UTF-8 text file. CONFIG defaults to "
        "configs/default.json;\n"
        "any config key can be overridden with its dotted path, e.g. --train.max_steps=500 or "
        "--name=mine.\n"
        "A new run refuses an out_dir that holds another run's files (resume that run, choose "
        "another\n"
        "--name or --train.out_dir, or replace it with --train.overwrite=true), and one that "
        "another\n"
        "trainer is using. Each option is given at most once.\n"
        "\n"
        "options:\n"
        "  --resume CHECKPOINT   continue the run saved in CHECKPOINT (overrides such as a larger\n"
        "                        --train.max_steps apply on top of its configuration), in the "
        "directory\n"
        "                        CHECKPOINT is in now (moved or copied runs too) unless "
        "--train.out_dir\n"
        "                        says otherwise; an older checkpoint (checkpoint_N.bin) is refused "
        "where\n"
        "                        the directory's checkpoint.bin is later, unless --rewind is "
        "given\n"
        "  --rewind              with --resume: continue from the older checkpoint on purpose, "
        "replacing\n"
        "                        checkpoint.bin and dropping the later rows of the logs\n"
        "  --init-from MODEL     start a new run from the weights of MODEL (a checkpoint, or a "
        "safetensors\n"
        "                        file with nanoGPT's names: docs/FORMAT.md); the model's shape "
        "and\n"
        "                        attention come from MODEL (model.* overrides of its attention "
        "apply\n"
        "                        on top), the optimizer starts afresh, the text must use its "
        "vocabulary\n"
        "  --vocab-from TEXT     the vocabulary of a safetensors MODEL that has none: TEXT's "
        "characters\n"
        "  --compare KEY=V1,V2   train 2 to 4 variants side by side (same initial weights, same "
        "batches),\n"
        "                        one per value of KEY (a key that changes no shape: "
        "model.attn_mask,\n"
        "                        model.softmax_axis, train.lr, ...), in out_dir/<value>/, and "
        "write\n"
        "                        compare.csv, report.md, compare.svg and report.html (the same as "
        "one\n"
        "                        page, with the attention maps of every variant)\n"
        "  --compare-scaling     --compare model.attn_scale=sqrt,none, in scaled/ and unscaled/, "
        "with\n"
        "                        scaling.svg\n"
        "  --sweep train.lr=A..B/N  train N log-spaced learning rates from A to B (with --compare: "
        "for\n"
        "                        each variant; at most 16 runs), one after another from the same "
        "weights\n"
        "                        on the same batches; writes sweep.csv, sweep.svg and report.md "
        "(the\n"
        "                        learning-rate sensitivity); a stopped sweep resumes with\n"
        "                        ./train --resume SWEEP_DIR\n"
        "  --bench=N             time N training steps on random tokens and print one 'bench' "
        "line\n"
        "  --dump-state FILE     run one forward/backward on the first batch and write a debug "
        "state\n"
        "                        (FILE - is standard output)\n"
        "  --help, --version\n"
        "\n"
        "outputs (in train.out_dir, default out/<name>): metrics.csv, attention.csv, "
        "checkpoint.bin,\n"
        "summary.json; the last line printed is\n"
        "'final: step=N train_loss=X val_loss=Y gen_loss=G (teacher-forced on the same W windows: "
        "F)\n"
        "tokens_per_s=Z' (val_loss: the whole validation split; gen_loss: the honest loss on W "
        "windows\n"
        "of it, to be compared with F, the teacher-forced loss on those same windows).\n"
        "exit codes: 0 ok, 1 runtime error (I/O, data, checkpoint, divergence), 2 usage or config "
        "error\n"
        "(also: out_dir holds another run or is in use), 128 + the signal after a stop by SIGINT "
        "(130),\n"
        "SIGTERM (143), SIGHUP (129) or SIGPIPE (141), having saved what was consistent.\n"
        "data-parallel: build with `make MPI=1` and run `mpirun -np N ./train CONFIG`; each rank "
        "trains on\n"
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

// --sweep: its grid, its size with the comparison's variants, and the modes it cannot go with.
// (--resume of a sweep's directory resumes it: that needs no --sweep.)
static void check_sweep(const Args *a) {
    char err[512];
    SweepGrid g;
    if (!sweep_parse(a->sweep_spec, &g, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    int nv = a->comparison ? a->comparison->n : 1;
    if (g.n * nv > SWEEP_MAX_RUNS)
        die(EXIT_USAGE,
            "--sweep %s with %d variants is %d runs: at most %d in all (fewer points or variants)",
            a->sweep_spec, nv, g.n * nv, SWEEP_MAX_RUNS);
    if (a->comparison && (strcmp(a->comparison->key, "train.lr") == 0 ||
                          strcmp(a->comparison->key, "train.min_lr") == 0))
        die(EXIT_USAGE,
            "--sweep sets train.lr and train.min_lr of every run: --compare %s cannot go with it",
            a->comparison->key);
    if (a->resume_path)
        die(EXIT_USAGE,
            "--sweep starts a new sweep: it cannot be combined with --resume '%s' (a stopped sweep "
            "resumes"
            " with ./train --resume SWEEP_DIR alone)",
            a->resume_path);
    if (a->bench_steps || a->dump_path || a->init_path)
        die(EXIT_USAGE, "--sweep trains runs from a config: it cannot be combined with %s",
            a->bench_steps ? "--bench"
            : a->dump_path ? "--dump-state"
                           : "--init-from");
}

void train_parse_args(int argc, char **argv, Args *a) {
    memset(a, 0, sizeof *a);
    command_line_text(a->command, sizeof a->command, "./train", argc, argv);
    a->overrides = xcalloc((size_t)argc, sizeof(char *), "arguments");
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v = NULL;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_usage(stdout);
            exit(0);
        }
        if (strcmp(arg, "--version") == 0) {
            print_version();
            exit(0);
        }
        if (strcmp(arg, "--compare-scaling") == 0 ||
            (v = option_value(argc, argv, &i, "--compare"))) {
            if (a->comparison) die(EXIT_USAGE, "give one of --compare-scaling and --compare, once");
            a->comparison = v ? parse_compare(v) : &COMPARE_SCALING;
            continue;
        }
        if ((v = option_value(argc, argv, &i, "--sweep"))) {
            option_once("--sweep", v);
            a->sweep_spec = v;
            continue;
        }
        if ((v = option_value(argc, argv, &i, "--resume"))) {
            option_once("--resume", v);
            a->resume_path = v;
            continue;
        }
        if ((v = option_value(argc, argv, &i, "--init-from"))) {
            option_once("--init-from", v);
            a->init_path = v;
            continue;
        }
        if ((v = option_value(argc, argv, &i, "--vocab-from"))) {
            option_once("--vocab-from", v);
            a->vocab_text = v;
            continue;
        }
        if ((v = option_value(argc, argv, &i, "--dump-state"))) {
            option_once("--dump-state", v);
            a->dump_path = v;
            continue;
        }
        if (strcmp(arg, "--rewind") == 0) {
            option_once("--rewind", NULL);
            a->rewind = 1;
            continue;
        }
        if ((v = option_value(argc, argv, &i, "--bench"))) {
            option_once("--bench", v);
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1000000)
                die(EXIT_USAGE, "--bench expects a step count from 1 to 1000000, got '%s'", v);
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
        if (a->config_path)
            die(EXIT_USAGE, "more than one config file given: '%s' and '%s'", a->config_path, arg);
        a->config_path = arg;
    }
    if (a->sweep_spec) check_sweep(a);
    if (a->resume_path && a->config_path)
        die(EXIT_USAGE, "give either a config file or --resume, not both");
    if (a->resume_path && a->comparison)
        die(EXIT_USAGE,
            "--resume cannot be combined with a comparison (each variant resumes on its own)");
    // one mode at a time: a debug dump and a benchmark are of one model, and neither trains
    if (a->dump_path && a->comparison)
        die(EXIT_USAGE,
            "--dump-state writes one model's forward/backward: it cannot be combined with a "
            "comparison (%s)",
            a->comparison == &COMPARE_SCALING ? "--compare-scaling" : "--compare");
    if (a->bench_steps && a->comparison)
        die(EXIT_USAGE, "--bench times one model: it cannot be combined with a comparison (%s)",
            a->comparison == &COMPARE_SCALING ? "--compare-scaling" : "--compare");
    if (a->bench_steps && a->dump_path) die(EXIT_USAGE, "give one of --bench and --dump-state");
    if (a->init_path && (a->resume_path || a->bench_steps))
        die(EXIT_USAGE, "--init-from starts a new run: it cannot be combined with %s",
            a->resume_path ? "--resume" : "--bench");
    if (a->rewind && !a->resume_path)
        die(EXIT_USAGE, "--rewind goes with --resume (an older checkpoint of a run)");
    if (a->vocab_text && !a->init_path)
        die(EXIT_USAGE,
            "--vocab-from goes with --init-from (a safetensors file without a vocabulary)");
    if (!a->config_path && !a->resume_path) a->config_path = "configs/default.json";
}
