// run/sweep_runs.h: the sweep in memory, its grid's runs and their results, as the sweep's three
// files share it: run/sweep.c runs the grid, run/sweep_results.c reads each run's files back and
// checks that they are that run's, run/sweep_outputs.c writes sweep.csv, sweep.svg and report.md.
#ifndef RUN_SWEEP_RUNS_H
#define RUN_SWEEP_RUNS_H

#include <limits.h>  // PATH_MAX: its includers define _POSIX_C_SOURCE
#include <stddef.h>

#include "run/sweep.h"

typedef struct {
    int variant, point;
    double lr;
    char dir[1300];
    char *config_json;  // the run's resolved config (config_to_json), what its files must hold
    long max_steps;
    // results
    int done, diverged;
    long diverged_step;
    double loss0, train_loss, val_loss, max_logit, min_entropy;
    long *steps;  // the probes' steps and the max attention logit at each
    double *logit;
    int n_probes;
    double seconds;
} SweepRun;

typedef struct {
    char dir[1100];  // out_dir
    char cwd[PATH_MAX];
    SweepGrid grid;
    char compare_key[64];
    SweepVariant v[SWEEP_MAX_VARIANTS];
    int nv;
    double min_lr_ratio;  // each run's min_lr = lr * the config's min_lr / lr
    char **base_args;     // the runs' common command line (config and overrides)
    int n_base;
    SweepRun runs[SWEEP_MAX_RUNS];
    int n_runs;
    char command[2048];
} Sweep;

// A file of the sweep's read back whole: a regular file only (a FIFO would block, /dev/zero never
// ends) of at most max bytes. NULL with *why set when it cannot be: errno's text, what the file
// is instead, or "is larger than ..." (why is a buffer of whylen bytes).
char *sweep_read_bounded(const char *path, size_t max, size_t *len, char *why, size_t whylen);
// Whether dir/name exists (lstat: a dangling symbolic link counts).
int sweep_path_exists(const char *dir, const char *name);
// Run k's results from its directory: its logs' loss at step 1 and attention statistics, and
// whether it finished (summary.json) or diverged (sweep_diverged.txt). A file that is not what
// the sweep writes there, or that belongs to another run, ends the program (exit 2, one line).
void sweep_read_run(const Sweep *s, int k);
// A stopped run's checkpoint, before the run resumes from it: refused (exit 2) unless its config is
// the run's own.
void sweep_check_checkpoint(const Sweep *s, int k, const char *path);
// sweep.csv, sweep.svg and report.md from the runs read so far (exit 1 when one cannot be written).
void sweep_write_outputs(const Sweep *s);
// Variant v's learning-rate sensitivity over the grid (sweep_sensitivity of its final validation
// losses, a run not finished or diverged counted at its loss at initialisation).
double sweep_variant_sensitivity(const Sweep *s, int v);

#endif
