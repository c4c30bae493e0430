// run/args.h: ./train's command line (run/args.c): the options, the comparison of --compare and
// --compare-scaling, --help and --version.
#ifndef RUN_ARGS_H
#define RUN_ARGS_H

#include "run/run.h"    // Variant, MAX_VARIANTS: a comparison's runs
#include "run/sweep.h"  // the grid of --sweep

// Runs trained side by side from the same initial weights on the same batches, each variant
// a name (its directory under out_dir) and config overrides.
// Each writes compare.csv, report.md, its panels and report.html (report/compare.h) in out_dir.
typedef struct {
    const char *what;  // what is compared, for the first line: "attention scale sqrt vs none"
    const char *key;   // the config key compared, and its value in each variant
    const char *values[MAX_VARIANTS];
    int n;
    Variant v[MAX_VARIANTS];
} Comparison;

// What the command line asks for.
typedef struct Args {
    const char *config_path;
    const char *resume_path;
    const char *init_path;   // --init-from: a new run's first weights
    const char *vocab_text;  // --vocab-from: the vocabulary of a safetensors file without one
    const char *dump_path;
    int bench_steps;
    int rewind;  // --rewind: resume an older checkpoint over its directory's later one
    const Comparison *comparison;  // --compare-scaling or --compare; NULL = one run
    const char *sweep_spec;        // --sweep train.lr=A..B/N (run/sweep.h); NULL = no sweep
    int n_overrides;
    const char **overrides;
    char command[2048];  // the command line, as report.html names it
} Args;

// Read the command line into a (exits after --help and --version; dies on a usage error).
void train_parse_args(int argc, char **argv, Args *a);

#endif
