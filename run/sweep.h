// run/sweep.h: the learning-rate sweep (--sweep train.lr=A..B/N, run/sweep.c): N log-spaced
// learning rates for each variant of an optional --compare, trained one run after another from
// the same initial weights on the same batches; sweep.csv, sweep.svg and report.md in out_dir,
// with the learning-rate sensitivity of Wortsman et al. 2023 (arXiv 2309.14322) per variant.
#ifndef RUN_SWEEP_H
#define RUN_SWEEP_H

#include <stddef.h>

#define SWEEP_MAX_RUNS        16
#define SWEEP_MAX_VARIANTS    4          // --compare's (run/run.h MAX_VARIANTS)
#define SWEEP_STATE_MAX_BYTES (1 << 20)  // sweep.json as a sweep writes it is a few kilobytes
#define SWEEP_MAX_ARGS        256        // the runs' common command line, in sweep.json

// The grid of --sweep KEY=A..B/N: lr[i] = A * (B/A)^(i/(N-1)), i = 0..N-1.
typedef struct {
    char key[32];
    double lo, hi;
    int n;
} SweepGrid;

// Parse "train.lr=A..B/N" into g: 0 with a one-line message when the key is not train.lr (a key
// that changes a tensor's shape says so), A or B is not a finite number > 0, A >= B, or N is not
// an integer from 2 to SWEEP_MAX_RUNS.
int sweep_parse(const char *spec, SweepGrid *g, char *err, size_t errlen);
// The i-th learning rate of the grid.
double sweep_lr(const SweepGrid *g, int i);

// A variant of the sweep: its name (its runs' directories <name>_lr<i>/) and its override.
typedef struct {
    char name[64];       // the variant's name ("sqrt"; "base" without a comparison)
    char override[320];  // its override ("model.attn_scale=sqrt"; "" without a comparison)
} SweepVariant;

// sweep.json: the grid and the runs' command line, as ./train --sweep writes it.
typedef struct {
    char cwd[4096];  // where the sweep started (its runs' relative paths are from there)
    SweepGrid grid;
    char compare_key[64];  // "" without a comparison
    SweepVariant v[SWEEP_MAX_VARIANTS];
    int nv;
    double min_lr_ratio;  // each run's min_lr = its lr * min_lr_ratio
    char **args;          // the runs' common arguments: a config file and --KEY=VALUE overrides
    int n_args;
    char command[2048];
} SweepState;

// Read sweep.json's text (origin names it in messages) into st, checking it against what a sweep
// can have written: the grid as sweep_parse takes it, 1 to SWEEP_MAX_VARIANTS variants of one
// config key with names that are directory names, at most SWEEP_MAX_RUNS runs, and arguments
// that are only a config file and config overrides (no key the sweep sets for each run itself).
// 0 with one line naming the key and what was expected; sweep_state_free frees st either way.
int sweep_state_parse(const char *text, size_t len, const char *origin, SweepState *st, char *err,
                      size_t errlen);
void sweep_state_free(SweepState *st);
// The keys --compare KEY=V1,V2[,V3,V4] may vary (run/args.c), and so the keys a sweep's variants
// can differ in (NULL-terminated): those that change neither a tensor's shape nor anything the
// variants share (the data, the batches, the initial weights, the steps at which all of them
// evaluate, probe and checkpoint).
extern const char *const COMPARABLE_KEYS[];

// Whether "--KEY=VALUE" sets a key the sweep sets for each of its runs (train.lr, train.min_lr,
// train.out_dir, train.overwrite).
int sweep_owned_key(const char *arg);

// Whether path is a directory holding a sweep (its sweep.json).
int sweep_dir_is_sweep(const char *path);

struct Args;
// Run the sweep the command line asks for (a fresh one, or with --resume of a sweep directory
// the stopped one, from the run it was in), train's whole work in that mode: returns the exit
// code (0, 1 on a runtime error, 128 + the signal after a stop). Usage errors exit 2 before
// anything is written.
int sweep_main(const struct Args *a, int argc, char **argv);

// The learning-rate sensitivity of one variant over its grid (Wortsman et al. 2023, section
// 3.2): mean_i min(loss[i], loss0) - min_i loss[i], a non-finite loss (a diverged run) counted
// as loss0.
double sweep_sensitivity(const double *loss, int n, double loss0);

#endif
