// run/session.h: a training session, the runs ./train trains side by side (one, or the variants
// of a comparison) on the same batches, as its files share it: run/session.c starts and ends it,
// run/progress.c prints what the terminal shows after a step, run/session_stop.c stops it short;
// train.c runs its loop.
#ifndef RUN_SESSION_H
#define RUN_SESSION_H

#include <stdint.h>

#include "base/config.h"     // Config
#include "base/data.h"       // Dataset, Vocab
#include "report/compare.h"  // CompareLog: the comparison's report log
#include "run/args.h"        // Args, Comparison: the command line
#include "run/checkpoint.h"  // Checkpoint: the one resumed from
#include "run/run.h"         // Run, Batches, MAX_VARIANTS

#define ETA_WINDOW 50  // the time left is estimated from the last ETA_WINDOW - 1 step times

typedef struct {
    Run runs[MAX_VARIANTS];
    int n_runs;
    const Comparison *cmp_set;  // NULL for a single run
    const Config *cfg;          // the base configuration
    const Args *args;
    const Dataset *ds;
    const Vocab *vocab;        // the checkpoint's when resuming, else the data's
    const Checkpoint *resume;  // NULL for a fresh start
    int writes;                // whether this process writes files (rank 0 of a training run)
    Batches b;
    CompareLog *cmp;       // the comparison's report log, in a comparison (rank 0)
    uint32_t *probe_text;  // the probe batch's first sequence (block_size characters), for its maps
    long start_step, max_steps;
    long skipped_before[MAX_VARIANTS];  // each run's skipped steps when this process began
    double wall0;                       // when this process's training began
    double step_end[ETA_WINDOW];        // when the last steps ended (a ring), for the time left
    long n_step_ends;
    int gen_explained;  // whether an evaluation line has explained gen loss (the first one does)
} Session;

// ---- run/session.c: the start and the end ----

// The runs, built, with their first weights: from the seed (every variant gets a copy), from the
// checkpoint resume, or from the model file init's weights.
void setup_runs(Session *s, const Config *cfg, const Args *args, const Checkpoint *resume,
                const Checkpoint *init, const Dataset *ds);

// The directories the session writes (out_dir, and each variant's), locked for the session's life
// and checked not to hold another run's files (unless train.overwrite); on a refusal every rank
// exits alike.
void claim_out_dirs(Session *s);

// The batch buffers and the fixed probe batch, the logs, the comparison's log; the first lines.
void start_training(Session *s);

// Free everything the session holds.
void release_session(Session *s);

// ---- run/progress.c: the terminal ----

// What the terminal shows after update `done`: the progress line every log_interval steps (and on
// the first and on skipped steps), the losses after an evaluation (`evaluated`).
void report_step(Session *s, long done, int evaluated);

// ---- run/session_stop.c: stopping short ----

// The latest good checkpoint of run r into path (n bytes) and its step: the one this process wrote
// last, else the one it resumed from. 0 when there is none.
int latest_checkpoint(const Session *s, const Run *r, char *path, size_t n, long *step);

// The line a second Ctrl-C prints names the latest checkpoint (of the first run in a comparison).
void note_latest_checkpoint(const Session *s);

// A stop signal before training (during `phase`): nothing trained; exit 128 + signal.
void stop_if_signalled(const Args *args, const char *phase);

// Run r diverged (why): stop with exit 1, keeping its last checkpoint from finite steps; the other
// variants of a comparison save theirs.
_Noreturn void stop_diverged(Session *s, Run *r, const char *why);

// The message of a stop by signal sig in the training loop after update `done`.
void say_stopped_training(const Session *s, int sig, long done);

// A run that skipped every step this process trained: exit 1 before the final evaluation, naming
// the checkpoint that is still the latest good one.
void stop_if_nothing_trained(Session *s);

// The message of a stop by signal sig while finishing (during `phase`): what is saved, and what
// is not (`missing`, or NULL when the run is complete).
void say_stopped_finishing(const Session *s, int sig, const char *phase, const char *missing);

#endif
