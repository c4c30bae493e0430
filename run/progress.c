// run/progress.c: what the terminal shows while a session trains: the progress line of one run or
// of a comparison's, with the time left, and the losses after an evaluation.
#include <math.h>
#include <stdio.h>

#include "run/session.h"

#include "base/common.h"  // now_seconds
#include "run/decode.h"   // gpt_attention_is_causal for the progress line

// Time left as "42s", "3m05s" or "1h07m" ("?" before it can be estimated).
static void fmt_eta(char *buf, size_t n, double seconds) {
    if (!(seconds >= 0) || seconds > 1e7) {
        snprintf(buf, n, "?");
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, n, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60)
        snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, n, "%lds", s);
}

// Print the progress line of one or two runs.
static void print_progress(Run *runs, int n_runs, long step, long max_steps, double eta_s) {
    char eta[32];
    fmt_eta(eta, sizeof eta, eta_s);
    if (n_runs == 1) {
        Run *r = &runs[0];
        printf(
            "step %5ld/%ld | loss %.4f | lr %.2e | gnorm %6.3f | %6.1f ms | %7.0f tok/s | eta %s",
            step, max_steps, r->loss, r->lr, r->grad_norm, r->ms,
            (double)r->cfg.batch_size * r->cfg.block_size / (r->ms / 1000.0), eta);
        if (r->have_probe)
            printf(" | attn H %.2f max %.2f", r->probe.entropy_norm, r->probe.max_weight);
        if (r->have_probe && !gpt_attention_is_causal(&r->model))
            printf(" future %.2f", r->probe.future_mass);
        if (run_attention_falls_back(r)) printf(" | attention: the definition");
        if (r->st.skipped_steps) printf(" | skipped %ld", r->st.skipped_steps);
        if (r->skipped) printf(" | SKIPPED (%s)", r->skip_reason);
        printf("\n");
    } else {
        printf("step %5ld/%ld |", step, max_steps);
        for (int i = 0; i < n_runs; i++) {
            Run *r = &runs[i];
            printf(" %-8s loss %.4f H %.2f max %.2f", r->variant, r->loss, r->probe.entropy_norm,
                   r->probe.max_weight);
            if (!gpt_attention_is_causal(&r->model)) printf(" future %.2f", r->probe.future_mass);
            printf("%s%s |", run_attention_falls_back(r) ? " (definition)" : "",
                   r->skipped ? " SKIPPED" : "");
        }
        printf(" eta %s\n", eta);
    }
    fflush(stdout);
}

// The time left from the mean of the recent step times (evaluations, probes and checkpoints
// included), once three steps after the first have run (the first carries start-up costs);
// -1 before ("eta ?").
static double time_left(Session *s, long done) {
    double now = now_seconds();
    s->step_end[s->n_step_ends % ETA_WINDOW] = now;
    s->n_step_ends++;
    long k = s->n_step_ends - 1 < ETA_WINDOW - 1 ? s->n_step_ends - 1
                                                 : ETA_WINDOW - 1;  // step times in the ring
    if (k < 3) return -1;
    double oldest = s->step_end[(s->n_step_ends - 1 - k) % ETA_WINDOW];
    return (now - oldest) / (double)k * (double)(s->max_steps - done);
}

// What the terminal shows after a step: the progress line every log_interval steps (and on the
// first and on skipped steps), the losses after an evaluation.
void report_step(Session *s, long done, int evaluated) {
    const Config *cfg = s->cfg;
    double eta = time_left(s, done);
    if (cfg->log_interval > 0 &&
        (done % cfg->log_interval == 0 || done == s->start_step + 1 || s->runs[0].skipped))
        print_progress(s->runs, s->n_runs, done, s->max_steps, eta);
    if (evaluated)
        for (int i = 0; i < s->n_runs; i++) {
            const Run *r = &s->runs[i];
            printf("step %5ld: %s%strain loss %.4f, val loss %.4f", done,
                   r->variant ? r->variant : "", r->variant ? " " : "", r->eval_train, r->eval_val);
            // the honest loss, beside the teacher-forced one on the same windows: in full on the
            // first evaluation (with what it means, once), then in short
            if (isfinite(r->eval_gen) && !s->gen_explained)
                printf(", gen loss %.4f (teacher-forced on the same %d window%s: %.4f)",
                       r->eval_gen, r->eval_gen_windows, r->eval_gen_windows == 1 ? "" : "s",
                       r->eval_gen_tf);
            else if (isfinite(r->eval_gen))
                printf(", gen loss %.4f (teacher-forced %.4f)", r->eval_gen, r->eval_gen_tf);
            printf("\n");
        }
    if (evaluated && !s->gen_explained && isfinite(s->runs[0].eval_gen)) {
        printf("  gen loss predicts each character from only the characters before it, as sampling "
               "does; the\n"
               "  teacher-forced loss on the same %d window%s is the usual one (every position in "
               "one pass); a causal\n"
               "  model gets the same value, a model that sees the future a lower teacher-forced "
               "one. Later lines:\n"
               "  'gen loss G (teacher-forced T)'.\n",
               s->runs[0].eval_gen_windows, s->runs[0].eval_gen_windows == 1 ? "" : "s");
        s->gen_explained = 1;
    }
}
