// run/sweep.h: the learning-rate sweep (--sweep train.lr=A..B/N, run/sweep.c): N log-spaced
// learning rates for each variant of an optional --compare, trained one run after another from
// the same initial weights on the same batches; sweep.csv, sweep.svg and report.md in out_dir,
// with the learning-rate sensitivity of Wortsman et al. 2023 (arXiv 2309.14322) per variant.
#ifndef RUN_SWEEP_H
#define RUN_SWEEP_H

#include <stddef.h>

#define SWEEP_MAX_RUNS 16

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
