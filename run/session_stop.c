// run/session_stop.c: how a training session stops short: a signal before training or in the
// loop or while finishing, divergence, or every step skipped, each message naming the latest
// checkpoint and how to resume from it.
#include <math.h>
#include <stdio.h>

#include "run/session.h"

#include "base/common.h"  // err_print, the exit codes
#include "base/dist.h"    // the ranks of a data-parallel run
#include "run/outdir.h"   // join_path
#include "run/stop.h"     // stop_agreed, stop_reason, stop_note_latest

// The latest good checkpoint of run r: the one this process wrote last, else the one it resumed
// from. 0 when there is none.
int latest_checkpoint(const Session *s, const Run *r, char *path, size_t n, long *step) {
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
void note_latest_checkpoint(const Session *s) {
    char path[2200];
    long step;
    if (latest_checkpoint(s, &s->runs[0], path, sizeof path, &step))
        stop_note_latest("the latest checkpoint%s is %s (step %ld)",
                         s->n_runs > 1 ? " of the first variant" : "", path, step);
    else
        stop_note_latest("no checkpoint was written");
}

// A stop signal before training: nothing trained; exit 128 + signal.
void stop_if_signalled(const Args *args, const char *phase) {
    int sig = stop_agreed();
    if (!sig) return;
    if (dist_is_root())
        fprintf(stderr, "train: %s during %s: nothing trained%s%s\n", stop_reason(sig), phase,
                args->resume_path ? "; unchanged: " : "",
                args->resume_path ? args->resume_path : "");
    dist_exit(stop_exit_code(sig));
}

// Run r diverged (why): stop with exit 1, keeping its last checkpoint from finite steps (a
// diverged state is never written over it); the other variants of a comparison save theirs.
_Noreturn void stop_diverged(Session *s, Run *r, const char *why) {
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
        if (isfinite(r->last_finite_loss))
            snprintf(last, sizeof last, "last finite loss %.4f", r->last_finite_loss);
        else
            snprintf(last, sizeof last, "no finite loss since step %ld", s->start_step);
        if (latest_checkpoint(s, r, path, sizeof path, &step))
            err_print("%s%sstopping at step %ld: %s (%s). The diverged state is not saved; the "
                      "last checkpoint from finite"
                      " steps is %s (step %ld). Resume it with a lower learning rate: ./train "
                      "--resume %s %s (or a smaller"
                      " train.grad_clip, or model.attn_scale=sqrt)",
                      r->variant ? r->variant : "", r->variant ? ": " : "", r->st.step, why, last,
                      path, step, path, lr);
        else
            err_print("%s%sstopping at step %ld: %s (%s). No checkpoint was written before it: "
                      "start again with %s (or a"
                      " smaller train.grad_clip, or model.attn_scale=sqrt)",
                      r->variant ? r->variant : "", r->variant ? ": " : "", r->st.step, why, last,
                      lr);
    }
    dist_exit(EXIT_RUNTIME);
}

// The message of a stop in the training loop after update `done`.
void say_stopped_training(const Session *s, int sig, long done) {
    if (!dist_is_root()) return;
    fprintf(stderr, "\n%s at step %ld: ", stop_reason(sig), done);
    for (int i = 0; i < s->n_runs; i++) {
        const Run *r = &s->runs[i];
        char path[2200];
        long step;
        if (s->n_runs > 1) fprintf(stderr, "%s%s: ", i ? "; " : "", r->variant);
        if (r->saved_step == done)
            fprintf(stderr, "checkpoint saved");
        else if (latest_checkpoint(s, r, path, sizeof path, &step))
            fprintf(stderr,
                    "not saved (the last %d steps were skipped as non-finite); the latest "
                    "checkpoint is %s (step %ld)",
                    r->bad_streak, path, step);
        else
            fprintf(stderr, "not saved (the last %d steps were skipped as non-finite)",
                    r->bad_streak);
    }
    char path[2200];
    long step;
    if (latest_checkpoint(s, &s->runs[0], path, sizeof path, &step)) {
        if (s->n_runs > 1)
            fprintf(stderr,
                    ". A comparison does not resume as one; each variant resumes on its own, e.g.");
        fprintf(stderr, ". Resume with:\n  ./train --resume %s\n", path);
    } else {
        fprintf(stderr, ".\n");
    }
}

// A run that trained steps in this process but skipped every one of them (non-finite or
// spiking, fewer in a row than the divergence guard's limit) has learned nothing: exit 1 before
// the final evaluation, naming the checkpoint that is still the latest good one.
void stop_if_nothing_trained(Session *s) {
    long trained = s->max_steps - s->start_step;
    for (int i = 0; i < s->n_runs && trained > 0; i++) {
        Run *r = &s->runs[i];
        if (r->st.skipped_steps - s->skipped_before[i] < trained) continue;
        for (int k = 0; k < s->n_runs; k++) run_close_logs(&s->runs[k]);
        if (dist_is_root()) {
            char path[2200], where[2400] = "no checkpoint was written";
            long step;
            if (latest_checkpoint(s, r, path, sizeof path, &step))
                snprintf(where, sizeof where, "the latest checkpoint is still %s (step %ld)", path,
                         step);
            err_print("%s%severy one of the %ld steps from step %ld to %ld was skipped (non-finite "
                      "loss or gradient, or a"
                      " loss spike): nothing was trained; %s",
                      r->variant ? r->variant : "", r->variant ? ": " : "", trained,
                      s->start_step + 1, s->max_steps, where);
        }
        dist_exit(EXIT_RUNTIME);
    }
}

// The message of a stop while finishing: what is saved and what is not.
void say_stopped_finishing(const Session *s, int sig, const char *phase, const char *missing) {
    if (!dist_is_root()) return;
    char path[2200];
    long step = -1;
    fprintf(stderr, "\n%s during %s: ", stop_reason(sig), phase);
    if (latest_checkpoint(s, &s->runs[0], path, sizeof path, &step))
        fprintf(stderr, "the checkpoint%s at step %ld %s saved", s->n_runs > 1 ? "s" : "", step,
                s->n_runs > 1 ? "are" : "is");
    if (missing) {
        fprintf(stderr, "; %s not written.", missing);
        if (s->n_runs == 1 && step >= s->max_steps)
            fprintf(stderr, " Finish the run with:\n  ./train --resume %s", path);
        fprintf(stderr, "\n");
    } else {
        fprintf(stderr, "; the run is complete.\n");
    }
}
