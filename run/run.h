// run/run.h: one training run's life: its model and state, a step, the attention probe, evaluation,
// its output files (logs, checkpoints, summary) and the final evaluation and sample. ./train
// trains one run, or (--compare-scaling) several side by side on the same batches.
#ifndef RUN_H
#define RUN_H

#include <stdio.h>

#include "run/checkpoint.h"
#include "base/config.h"
#include "base/data.h"
#include "model.h"
#include "run/probe.h"
#include "run/induction.h"

#define RUN_ERRLEN            1024
#define MAX_VARIANTS          4
#define MAX_VARIANT_OVERRIDES 4

// A variant is a name (its directory under out_dir) and overrides applied on top of the base
// config, e.g. {"unscaled", {"model.attn_scale=none"}}. The overrides may not change a shape.
typedef struct {
    const char *name;
    const char *overrides[MAX_VARIANT_OVERRIDES];  // "section.key=value"; NULL-terminated if fewer
} Variant;

// The loss-spike detector's window: the losses of the last `size` good steps (a ring), and the
// z-score above their mean that marks a spike. loss is NULL while the detector is off.
typedef struct {
    double *loss;
    int size, n, pos;  // capacity, losses held, where the next goes
    double zscore;
} SpikeWindow;
void spike_window_init(SpikeWindow *w, int size, double zscore);
void spike_window_free(SpikeWindow *w);

typedef struct {
    const char *variant;  // NULL for a normal run, else the variant's name
    Config cfg;
    int rows,
        row0;  // this rank's rows [row0, row0 + rows) of every batch (all of it in one process)
    char *cfg_json;
    GPT model;
    TrainState st;
    char dir[1100];
    FILE *metrics, *attn_csv;
    // divergence guard
    int bad_streak;
    double last_finite_loss;
    SpikeWindow spikes;  // the loss-spike detector (train.spike_zscore > 0)
    // results of the last step / probe / evaluation
    double loss, grad_norm, lr, ms;
    double lse_mean,
        max_logit;  // the step's batch's output logits: mean log Z = log sum_v exp(z_v), largest z
    int skipped;
    const char *skip_reason;
    double step_start;  // now_seconds() at the start of the step's forward
    ThreadPace pace;    // the threads each step runs on: the configured count or one, as measured
    double train_seconds, comm_seconds;  // comm: time in the gradient allreduce (MPI)
    double elapsed_before;  // wall-clock seconds of the run's earlier segments (st.elapsed_s at the
                            // resume)
    long tokens_trained;
    HeadStats probe;  // last attention probe (averages over layers and heads)
    int have_probe;
    real *probe_P;  // (L,NH,T,T) the probe batch's first sequence's weights P at the last probe,
                    // when kept (run_keep_probe_weights; a comparison's report draws them)
    Induction
        *induction;  // the induction probe and its last scores (rank 0, when probing; else NULL)
    double eval_train, eval_val;
    double eval_gen;       // gen_loss at the last evaluation (NaN when not measured)
    double eval_gen_tf;    // the teacher-forced loss on gen_loss's windows at the last evaluation
    int eval_gen_windows;  // how many windows those two were measured on
    int evaluated;  // whether the last step's evaluation ran to its end (a stop signal cuts it
                    // short)
    // checkpoints
    long saved_step;   // step of the last checkpoint.bin this process wrote; -1 = none yet
    int ckpt_pending;  // a checkpoint fell due during skipped steps and waits for a good one
} Run;

// Batch buffers, (B,T) each, shared by the runs of one session.
typedef struct {
    int *x, *y;    // training batch: inputs, next-token targets
    int *ex, *ey;  // evaluation batch
    int *px, *py;  // the fixed attention-probe batch
} Batches;

// ---- set up and tear down ----
// The run's config (base plus the variant's overrides), directory name (out_dir, or
// out_dir/<variant>), model (built, not initialised) and guard state.
void run_setup(Run *r, const Config *base, const Variant *variant, const ModelDims *dims, int rows);
void run_release(Run *r);
// metrics.csv and attention.csv: new, or (resuming) continued after the rows of steps <= st.step.
void run_open_logs(Run *r, int resuming);
void run_close_logs(Run *r);

// ---- training ----
// One optimisation step on this rank's rows (x, y) of the batch, in three calls: the forward
// (r->lr, r->loss), the backward (the gradients), the update, which a non-finite or spiking loss
// skips (r->skipped, r->bad_streak) and which makes r->st.step = step + 1 and r->ms the step's
// milliseconds.
void run_forward(Run *r, const int *x, const int *y, long step);
void run_backward(Run *r);
void run_update(Run *r, long step);
// Attention statistics on the probe batch (rank 0) into r->probe, and when `log` into
// attention.csv as of `step`.
void run_probe(Run *r, const int *px, const int *py, long step, int log);
// From now on every probe also copies the weights P of the probe batch's first sequence into
// r->probe_P (every layer and head).
void run_keep_probe_weights(Run *r);
// After the update of step `done` - 1: the evaluation when `do_eval` (train/val loss, best.bin;
// cut short by a stop signal) and the metrics row.
void run_evaluate_and_log(Run *r, const Dataset *ds, Batches *b, const Vocab *vocab, long done,
                          int do_eval);
// checkpoint.bin (and checkpoint_<step>.bin with keep_checkpoints) at r->st.step, but only of a
// state the last step updated: a checkpoint never replaces the last good one with a state that
// may be diverging.
typedef enum {
    CKPT_SAVED,      // written (rank 0; the other ranks checked their parameters agree)
    CKPT_POSTPONED,  // not written: the last step was skipped; ckpt_pending asks again after a good
                     // step
    CKPT_NONFINITE,  // not written: the parameters or the optimizer moments are not finite
} CkptResult;
CkptResult run_checkpoint(Run *r, const Vocab *vocab);

// ---- finishing ----
// Final losses: the mean over eval batches of the training split, and the whole validation split.
// gen_loss: the honest loss over the first log.gen_windows windows of the validation split, and
// gen_loss_tf the usual (teacher-forced) loss over those same windows (NaN when log.gen_windows 0).
// gen_windows: how many windows gen_loss and gen_loss_tf were measured on (log.gen_windows, or
// (n_val - 1) / block_size when the validation split is shorter).
typedef struct {
    double train_loss, val_loss, gen_loss, gen_loss_tf;
    int gen_windows;
} FinalLosses;
// Final evaluation (and best.bin when it improved), logs closed, summary.json written (rank 0)
// with the wall-clock time of this segment (since wall0) and of the whole run. Returns 0 when a
// stop signal cut the evaluation short (then nothing is written), else 1.
int run_finish(Run *r, const Dataset *ds, Batches *b, const Vocab *vocab, double wall0,
               FinalLosses *f);
// The sample of sample.tokens characters printed to stdout (rank 0); with text non-NULL also
// returned there (malloc'd UTF-8, NULL when there is none). Returns 0 when a stop signal cut it
// short.
int run_sample(Run *r, const Vocab *vocab, char **text);
// Whether the run's attention is computed by the definition because the chosen implementation
// does not compute its mask or softmax axis (the engine computes the correct model only).
int run_attention_falls_back(const Run *r);
// The last line: "final[ VARIANT]: step=N train_loss=X val_loss=Y gen_loss=G (teacher-forced on
// the same W windows: F) tokens_per_s=Z" (without the parenthesis when gen_loss is off).
void run_print_final(const Run *r, FinalLosses f);
// --dump-state: one forward and backward on the run's first training batch, written to path (a
// TGPTDUMP tensor file, docs/FORMAT.md; "-" is standard output): the config, inputs, targets,
// logits, loss, and every parameter and its gradient.
void run_dump_state(Run *r, const Dataset *ds, const char *path);

#endif
