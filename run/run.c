// run/run.c: one training run's life: set-up, a step, the attention probe, evaluation, its logs and
// checkpoints, and the finish (final evaluation, summary.json, the sample).
#define _POSIX_C_SOURCE 200809L
#include "run/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/common.h"
#include "base/dist.h"
#include "base/outfile.h"
#include "run/generate.h"
#include "run/induction.h"
#include "run/outdir.h"
#include "base/rng.h"
#include "run/stop.h"
#include "run/decode.h"
#include "run/workers.h"
#include "run/optimizer.h"  // AdamW, the gradient norm, the finiteness check

// ---------------------------------------------------------------------------------------------
// set up and tear down

void run_setup(Run *r, const Config *base, const Variant *variant, const ModelDims *dims,
               int rows) {
    char err[RUN_ERRLEN];
    memset(r, 0, sizeof *r);
    r->cfg = *base;
    r->rows = rows;
    r->row0 = dist_rank() * rows;
    if (variant) {
        r->variant = variant->name;
        for (int k = 0; k < MAX_VARIANT_OVERRIDES && variant->overrides[k]; k++)
            if (!config_apply_override(&r->cfg, variant->overrides[k], err, sizeof err))
                die(EXIT_USAGE, "%s", err);
        if (!config_finalize(&r->cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
        // the variant's directory is its out_dir: its checkpoint resumes there
        join_path(r->cfg.out_dir, sizeof r->cfg.out_dir, base->out_dir, variant->name);
        snprintf(r->dir, sizeof r->dir, "%s", r->cfg.out_dir);
    } else {
        snprintf(r->dir, sizeof r->dir, "%s", base->out_dir);
    }
    r->cfg_json = config_to_json(&r->cfg);
    // rank 0 also runs the attention probe on the whole probe batch; the others need their share
    AttnSetup attn = attention_setup(&r->cfg);
    ModelDims d = gpt_dims(&r->cfg, dims->vocab_size);  // a variant may change model.qk_norm
    gpt_build(&r->model, &d, attn, dist_is_root() ? base->batch_size : rows, base->block_size);
    gpt_enable_batch_threads(&r->model, thread_max(), rows, base->block_size);
    pace_init(&r->pace, thread_max());
    gpt_set_z_loss(&r->model, r->cfg.z_loss);
    r->st.best_val_loss = INFINITY;
    r->last_finite_loss = NAN;
    r->saved_step = -1;
    if (r->cfg.spike_zscore > 0)
        spike_window_init(&r->spikes, r->cfg.spike_window, r->cfg.spike_zscore);
}

void run_release(Run *r) {
    // logs still open after a stop: what was written stays (errors were reported when writing)
    if (r->metrics) fclose(r->metrics);
    if (r->attn_csv) fclose(r->attn_csv);
    r->metrics = r->attn_csv = NULL;
    gpt_free(&r->model);
    free(r->probe_P);
    r->probe_P = NULL;
    free(r->cfg_json);
    r->cfg_json = NULL;
    induction_free(r->induction);
    r->induction = NULL;
    spike_window_free(&r->spikes);
}

// A log continued (resuming) or begun; exit 1 when it is not a regular file (base/outfile.h).
static FILE *open_log(const char *path, int *fresh) {
    char err[2400];
    FILE *f = out_append(path, fresh, err, sizeof err);
    if (!f) die(EXIT_RUNTIME, "%s", err);
    return f;
}

// The logs' headers; columns are added at the end, so a reader of the leading ones still works.
static const char METRICS_HEADER[] =
    "step,loss,lr,grad_norm,ms,val_loss,gen_loss,lse_mean,max_logit,"
    "first_copy_loss,second_copy_loss,in_context\n";
static const char ATTENTION_HEADER[] =
    "step,layer,head,entropy,entropy_norm,max_weight,frac_gt_0.9,frac_gt_0.99,"
    "score_std,score_absmax,gnorm_wq,gnorm_wk,gnorm_wv,gnorm_wo,ds_over_dp,"
    "row_gain_median,future_mass,max_logit,mean_max_logit,prev_token,induction\n";

void run_open_logs(Run *r, int resuming) {
    if (!dist_is_root()) return;  // metrics and attn_csv stay NULL on the other ranks
    char path[2200];
    int fresh;
    join_path(path, sizeof path, r->dir, "metrics.csv");
    if (resuming) truncate_csv(path, r->st.step, METRICS_HEADER);
    r->metrics = open_log(path, &fresh);
    if (fresh) fputs(METRICS_HEADER, r->metrics);
    join_path(path, sizeof path, r->dir, "attention.csv");
    if (resuming) truncate_csv(path, r->st.step - 1, ATTENTION_HEADER);
    r->attn_csv = open_log(path, &fresh);
    if (fresh) fputs(ATTENTION_HEADER, r->attn_csv);
}

void run_close_logs(Run *r) {
    if (r->metrics && fclose(r->metrics) != 0)
        die(EXIT_RUNTIME, "cannot write metrics.csv in '%s'", r->dir);
    if (r->attn_csv && fclose(r->attn_csv) != 0)
        die(EXIT_RUNTIME, "cannot write attention.csv in '%s'", r->dir);
    r->metrics = r->attn_csv = NULL;
}

// ---------------------------------------------------------------------------------------------
// training

#ifdef TGPT_TEST_HOOKS
// Fault injection, compiled into the test build (build/train-test) only, so the tests can drive
// the guards. TGPT_TEST_NONFINITE="FROM:COUNT" makes the loss of steps [FROM, FROM+COUNT) NaN;
// TGPT_TEST_SPIKE="STEP" adds 100 to the loss of that step (the spike guard's input).
static void inject_faults(Run *r, long step) {
    static int read = 0;
    static long fault_from = -1, fault_count = 0, spike_step = -1;
    if (!read) {
        const char *v = getenv("TGPT_TEST_NONFINITE");
        if (v && sscanf(v, "%ld:%ld", &fault_from, &fault_count) != 2)
            fault_from = -1, fault_count = 0;
        v = getenv("TGPT_TEST_SPIKE");
        if (v && sscanf(v, "%ld", &spike_step) != 1) spike_step = -1;
        read = 1;
    }
    if (step >= fault_from && step < fault_from + fault_count) r->loss = NAN;
    if (step == spike_step) r->loss += 100;
}
#else
static void inject_faults(Run *r, long step) {
    (void)r;
    (void)step;
}
#endif

// ---- the loss-spike detector: z-score of a loss against the last good steps' losses ----

void spike_window_init(SpikeWindow *w, int size, double zscore) {
    w->loss = xcalloc((size_t)size, sizeof(double), "spike window");
    w->size = size;
    w->n = w->pos = 0;
    w->zscore = zscore;
}

void spike_window_free(SpikeWindow *w) {
    free(w->loss);
    memset(w, 0, sizeof *w);
}

// Whether `loss` lies more than zscore standard deviations above the window's mean; never while
// the detector is off or the window is less than half full (or holds fewer than two losses).
static int spike_detected(const SpikeWindow *w, double loss) {
    if (!w->loss || w->n < w->size / 2 || w->n < 2) return 0;
    double mean = 0, var = 0;
    for (int i = 0; i < w->n; i++) mean += w->loss[i];
    mean /= w->n;
    for (int i = 0; i < w->n; i++) var += (w->loss[i] - mean) * (w->loss[i] - mean);
    double sd = sqrt(var / (w->n - 1));
    return sd > 0 && (loss - mean) / sd > w->zscore;
}

// A good step's loss enters the window, replacing the oldest once it is full.
static void spike_window_add(SpikeWindow *w, double loss) {
    if (!w->loss) return;
    w->loss[w->pos] = loss;
    w->pos = (w->pos + 1) % w->size;
    if (w->n < w->size) w->n++;
}

// ---- the phases of a step ----

// The learning rate of the schedule, then the forward on this rank's rows (split between the
// threads by rows when the model has batch workers): the batch's mean loss, the mean of the
// ranks' equal shares.
void run_forward(Run *r, const int *x, const int *y, long step) {
    pace_begin(&r->pace);
    r->step_start = now_seconds();
    r->lr = train_lr(&r->cfg, step);
    r->loss = gpt_batch_forward(&r->model, x, y, r->rows, r->cfg.block_size);
    r->lse_mean = r->model.lse_mean;
    r->max_logit = r->model.max_logit;
    if (dist_size() > 1) {
        dist_sum_double(&r->loss, 1);
        r->loss /= dist_size();
        // the output logits' statistics of the whole batch: the mean of the ranks' equal shares'
        // mean log Z, and the largest of their largest logits (each rank's in its own slot of a
        // sum)
        int n = dist_size();
        double *buf = xcalloc((size_t)n + 1, sizeof(double), "the output logits' statistics");
        buf[0] = r->lse_mean;
        buf[1 + dist_rank()] = r->max_logit;
        dist_sum_double(buf, n + 1);
        r->lse_mean = buf[0] / n;
        r->max_logit = buf[1];
        for (int k = 2; k <= n; k++)
            if (buf[k] > r->max_logit) r->max_logit = buf[k];
        free(buf);
    }
    inject_faults(r, step);
}

// The backward stores every gradient (none is added onto an old one): there is nothing to zero.
void run_backward(Run *r) { gpt_batch_backward(&r->model); }

// One allreduce over the one contiguous gradient buffer: the sum of the ranks' mean gradients,
// divided by their number, is the gradient of the whole batch's mean loss.
static void allreduce_gradients(Run *r) {
    if (dist_size() == 1) return;
    GPT *m = &r->model;
    double c0 = now_seconds();
    dist_sum_real(m->grads, m->n_params);
    r->comm_seconds += now_seconds() - c0;
    gpt_scale_grads(m, (real)(1.0 / dist_size()));
}

// The update (train_update: the guard, clipping, AdamW) of the whole batch's gradient, with the
// spike detector's verdict on the loss when it is on.
void run_update(Run *r, long step) {
    const Config *c = &r->cfg;
    int finite = isfinite(r->loss);
    if (finite) allreduce_gradients(r);
    int spike = finite && spike_detected(&r->spikes, r->loss);
    // AdamW's step count: the updates made so far, this one included
    r->skip_reason = train_update(&r->model, c, r->loss, r->lr, step + 1 - r->st.skipped_steps,
                                  spike, &r->grad_norm);
    r->skipped = r->skip_reason != NULL;
    if (r->skipped) {
        r->st.skipped_steps++;
        r->bad_streak++;
    } else {
        r->last_finite_loss = r->loss;
        r->bad_streak = 0;
        spike_window_add(&r->spikes, r->loss);
    }
    r->st.step = step + 1;
    r->ms = 1000.0 * (now_seconds() - r->step_start);
    pace_end(&r->pace, r->ms / 1000.0);
    r->train_seconds += r->ms / 1000.0;
    r->tokens_trained += (long)c->batch_size * c->block_size;  // the whole batch, over all ranks
}

void run_keep_probe_weights(Run *r) {
    const ModelDims *d = &r->model.dims;
    size_t n;
    if (!mul_size((size_t)d->n_layer * d->n_head, (size_t)r->cfg.block_size * r->cfg.block_size,
                  &n) ||
        !mul_size(n, sizeof(real), &n))
        die(EXIT_RUNTIME, "size overflow keeping the probe's attention weights");
    if (!r->probe_P) r->probe_P = xmalloc(n, "the probe's attention weights");
}

// A forward and backward with statistics on, which leaves the gradients zeroed again so
// training is unaffected.
void run_probe(Run *r, const int *px, const int *py, long step, int log) {
    const Config *c = &r->cfg;
    GPT *m = &r->model;
    int L = m->dims.n_layer, NH = m->dims.n_head;
    HeadStats *hs = xcalloc((size_t)L * NH, sizeof(HeadStats), "attention probe");
    // on the threads the steps run on now (the probe's numbers do not depend on their number)
    thread_set_max(pace_threads(&r->pace));
    attention_probe(m, px, py, c->batch_size, c->block_size, hs, &r->probe);
    thread_set_max(r->pace.max);
    r->have_probe = 1;
    if (r->probe_P) {  // the first sequence's: the first NH*T*T weights of each layer's att
                       // (B,NH,T,T)
        size_t head = (size_t)NH * c->block_size * c->block_size;
        for (int l = 0; l < L; l++)
            memcpy(r->probe_P + l * head, m->acts.layers[l].att, head * sizeof(real));
    }
    // the induction scores after `step` updates: measured with the metrics row of `step` unless
    // this probe is the first after a start or a resume
    if (r->induction && r->induction->step != step) induction_measure(m, r->induction, step);
    if (log && r->attn_csv) {
        for (int l = 0; l < L; l++)
            for (int h = 0; h < NH; h++) {
                const HeadStats *s = &hs[l * NH + h];
                fprintf(r->attn_csv,
                        "%ld,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6g,%.6g,%.6g,%.6g,%.6g,%."
                        "6g,%.6f,%.6f,%.6f",
                        step, l, h, s->entropy, s->entropy_norm, s->max_weight, s->frac_gt_090,
                        s->frac_gt_099, s->score_std, s->score_absmax, s->gnorm_wq, s->gnorm_wk,
                        s->gnorm_wv, s->gnorm_wo, s->ds_over_dp, s->row_gain_median, s->future_mass,
                        s->max_logit, s->mean_max_logit);
                if (r->induction)
                    fprintf(r->attn_csv, ",%.6f,%.6f", r->induction->prev_token[l * NH + h],
                            r->induction->induction[l * NH + h]);
                else
                    fputs(",,", r->attn_csv);
                fputc('\n', r->attn_csv);
            }
        fflush(r->attn_csv);
    }
    free(hs);
}

// ---------------------------------------------------------------------------------------------
// evaluation

// Mean loss over a set of fixed batches (eval_steps of them) from one split into *loss. Returns
// 0 when a stop signal cut it short.
static int estimate_loss(Run *r, const Dataset *ds, int split_val, int *x, int *y, double *loss) {
    const Config *c = &r->cfg;
    Rng eval_rng;
    rng_seed(&eval_rng, (uint64_t)c->seed * 2654435761u + (split_val ? 17 : 3));
    double total = 0.0;
    size_t off = (size_t)r->row0 * c->block_size;
    for (int i = 0; i < c->eval_steps; i++) {
        if (stop_agreed()) return 0;
        // every rank draws the whole batch and evaluates its rows: the mean over the ranks'
        // equal shares is the mean over the batch
        sample_batch(ds, split_val, &eval_rng, c->batch_size, c->block_size, x, y);
        total += gpt_batch_forward(&r->model, x + off, y + off, r->rows, c->block_size);
    }
    dist_sum_double(&total, 1);
    *loss = total / c->eval_steps / dist_size();
    return 1;
}

// Loss over the whole validation split: every non-overlapping window of block_size targets, into
// *loss. Returns 0 when a stop signal cut it short.
static int full_val_loss(Run *r, const Dataset *ds, int *x, int *y, double *loss) {
    const Config *c = &r->cfg;
    int T = c->block_size, B = c->batch_size;
    size_t n_val = ds->n_tokens - ds->n_train;
    size_t n_windows = (n_val - 1) / (size_t)T;
    // sums[0] = summed loss, sums[1] = positions counted; each rank takes its rows of each
    // group of B windows
    double sums[2] = {0.0, 0.0};
    for (size_t w0 = 0; w0 < n_windows; w0 += (size_t)B) {
        if (stop_agreed()) return 0;
        size_t first = w0 + (size_t)r->row0, end = w0 + (size_t)r->row0 + (size_t)r->rows;
        if (end > n_windows) end = n_windows;
        if (first >= end) continue;
        int nb = (int)(end - first);
        for (int b = 0; b < nb; b++) {
            size_t start = ds->n_train + (first + (size_t)b) * (size_t)T;
            for (int t = 0; t < T; t++) {
                x[b * T + t] = ds->tokens[start + t];
                y[b * T + t] = ds->tokens[start + t + 1];
            }
        }
        sums[0] += gpt_batch_forward(&r->model, x, y, nb, T) * nb * T;
        sums[1] += (double)nb * T;
    }
    dist_sum_double(sums, 2);
    *loss = sums[1] > 0 ? sums[0] / sums[1] : NAN;
    return 1;
}

// gen_loss, the honest loss, over the first log.gen_windows windows of block_size characters of
// the validation split (fewer when the split is shorter): each character predicted from the
// characters before it only, as generation sees them (gpt_generation_loss), into *gen, and the
// usual teacher-forced loss over the same windows into *tf. Window by window, so a stop signal
// ends it within one window. *windows: how many there were. Returns 0 when a stop signal cut it
// short (or it is off: NaN).
static int gen_loss(Run *r, const Dataset *ds, double *gen, double *tf, int *windows) {
    const Config *c = &r->cfg;
    int T = c->block_size;
    size_t n = (ds->n_tokens - ds->n_train - 1) / (size_t)T;
    if (n > (size_t)c->gen_windows) n = (size_t)c->gen_windows;
    *gen = *tf = NAN;
    *windows = (int)n;
    if (n == 0) return 1;
    int *x = xmalloc((size_t)T * sizeof(int), "gen_loss window"),
        *y = xmalloc((size_t)T * sizeof(int), "gen_loss window");
    double sum_gen = 0, sum_tf = 0;
    size_t w = 0;
    for (; w < n && !stop_agreed(); w++) {
        size_t start = ds->n_train + w * (size_t)T;
        for (int t = 0; t < T; t++) {
            x[t] = ds->tokens[start + t];
            y[t] = ds->tokens[start + t + 1];
        }
        double forced;
        sum_gen += gpt_generation_loss(&r->model, x, y, 1, T, &forced);
        sum_tf += forced;
    }
    free(x);
    free(y);
    if (w < n) return 0;
    *gen = sum_gen / (double)n;
    *tf = sum_tf / (double)n;
    return 1;
}

// Only rank 0 writes files; the others hold the same parameters.
static void run_save(Run *r, const Vocab *vocab, const char *file) {
    if (!dist_is_root()) return;
    char path[2200], err[RUN_ERRLEN];
    join_path(path, sizeof path, r->dir, file);
    if (!checkpoint_save(path, &r->model, r->cfg_json, vocab, &r->st, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
}

void run_evaluate_and_log(Run *r, const Dataset *ds, Batches *b, const Vocab *vocab, long done,
                          int do_eval) {
    if (do_eval) stop_test_point("eval");
    // on the threads the steps run on now (the results do not depend on their number)
    thread_set_max(pace_threads(&r->pace));
    r->evaluated = do_eval && estimate_loss(r, ds, 0, b->ex, b->ey, &r->eval_train) &&
                   estimate_loss(r, ds, 1, b->ex, b->ey, &r->eval_val) &&
                   gen_loss(r, ds, &r->eval_gen, &r->eval_gen_tf, &r->eval_gen_windows);
    thread_set_max(r->pace.max);
    if (!r->evaluated) r->eval_val = r->eval_gen = r->eval_gen_tf = NAN;
    // best.bin holds the best finite validation loss: a NaN never compares better, and a
    // diverged state is never the best
    if (r->evaluated && isfinite(r->eval_val) && r->eval_val < r->st.best_val_loss) {
        r->st.best_val_loss = r->eval_val;
        run_save(r, vocab, "best.bin");
    }
    if (r->metrics) {
        fprintf(r->metrics, "%ld,%.6f,%.6e,%.6f,%.3f,", done, r->loss, r->lr, r->grad_norm, r->ms);
        if (r->evaluated)
            fprintf(r->metrics, "%.6f,", r->eval_val);
        else
            fprintf(r->metrics, ",");
        if (r->evaluated && isfinite(r->eval_gen)) fprintf(r->metrics, "%.6f", r->eval_gen);
        fprintf(r->metrics, ",%.6f,%.6f", r->lse_mean, r->max_logit);
        // the in-context score after `done` updates, on the rows of the probe steps
        if (r->induction && r->cfg.attn_interval > 0 && done % r->cfg.attn_interval == 0) {
            induction_measure(&r->model, r->induction, done);
            const Induction *ind = r->induction;
            fprintf(r->metrics, ",%.6f,%.6f,%.6f\n", ind->first_copy_loss, ind->second_copy_loss,
                    ind->second_copy_loss - ind->first_copy_loss);
        } else {
            fputs(",,,\n", r->metrics);
        }
        fflush(r->metrics);
    }
}

// ---------------------------------------------------------------------------------------------
// checkpoints

// With keep_checkpoints N, also checkpoint_<step>.bin, keeping the newest N of them.
CkptResult run_checkpoint(Run *r, const Vocab *vocab) {
    if (r->saved_step == r->st.step) return CKPT_SAVED;  // already written at this step
    // after a skipped step the parameters are those of the last good step, but the run may be
    // diverging (a real divergence often makes every later step non-finite): keep the last
    // checkpoint until a step succeeds again
    if (r->bad_streak > 0) {
        r->ckpt_pending = 1;
        return CKPT_POSTPONED;
    }
    // finite steps can still leave non-finite optimizer moments (a gradient whose square
    // overflows); every rank holds the same values, so they agree on this
    if (!gpt_all_finite(&r->model)) return CKPT_NONFINITE;
    // every rank took the same AdamW steps from the same summed gradients, so they hold the same
    // bytes; check it (cheaply, at checkpoints only) rather than trust it
    if (!dist_same_bytes(r->model.params, r->model.n_params * sizeof(real)))
        die(EXIT_RUNTIME,
            "the ranks' parameters differ at step %ld (the MPI sum was not identical on every "
            "rank)",
            r->st.step);
    stop_test_point("checkpoint");
    r->ckpt_pending = 0;
    r->saved_step = r->st.step;
    if (!dist_is_root()) return CKPT_SAVED;
    run_save(r, vocab, "checkpoint.bin");
    int keep = r->cfg.keep_checkpoints;
    if (keep > 0) {
        char name[64];
        snprintf(name, sizeof name, "checkpoint_%ld.bin", r->st.step);
        run_save(r, vocab, name);
        outdir_prune_checkpoints(r->dir, keep, r->st.step);
    }
    return CKPT_SAVED;
}

// ---------------------------------------------------------------------------------------------
// finishing

// A JSON number, or null for NaN and infinities (which JSON cannot hold).
static void json_number(FILE *f, const char *key, double v, const char *fmt, int last) {
    fprintf(f, "  \"%s\": ", key);
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs("null", f);
    fputs(last ? "\n" : ",\n", f);
}

// summary.json, replaced whole: the final losses, counts, speed, time and the resolved config
// (config_to_json's text: valid JSON, with every string escaped).
static void write_summary(const Run *r, const char *path, const FinalLosses *fl,
                          double segment_wall) {
    FILE *f = out_begin_or_die(path, 0);
    double tps = r->train_seconds > 0 ? (double)r->tokens_trained / r->train_seconds : 0;
    fputs("{\n", f);
    json_number(f, "train_loss", fl->train_loss, "%.6f", 0);
    json_number(f, "val_loss", fl->val_loss, "%.6f", 0);
    // the honest loss and the teacher-forced loss over the same validation windows
    json_number(f, "gen_loss", fl->gen_loss, "%.6f", 0);
    json_number(f, "gen_loss_teacher_forced", fl->gen_loss_tf, "%.6f", 0);
    fprintf(f, "  \"gen_windows\": %d,\n", fl->gen_windows);  // the windows of those two
    json_number(f, "best_val_loss", r->st.best_val_loss, "%.6f", 0);
    fprintf(f, "  \"steps\": %ld,\n  \"skipped_steps\": %ld,\n  \"params\": %zu,\n", r->st.step,
            r->st.skipped_steps, r->model.n_params);
    json_number(f, "tokens_per_s", tps, "%.1f", 0);  // of this segment
    json_number(f, "wall_s", r->elapsed_before + segment_wall, "%.2f",
                0);  // every segment of the run
    json_number(f, "segment_wall_s", segment_wall, "%.2f",
                0);  // since this process's training began
    fputs("  \"config\": ", f);
    // indent the config object by two spaces to nest it
    for (const char *p = r->cfg_json; *p; p++) {
        fputc(*p, f);
        if (*p == '\n' && p[1]) fputs("  ", f);
    }
    fprintf(f, "\n}\n");
    out_end_or_die(f);
}

int run_finish(Run *r, const Dataset *ds, Batches *b, const Vocab *vocab, double wall0,
               FinalLosses *f) {
    stop_test_point("final-eval");
    f->train_loss = NAN;
    // on the threads the steps ran on last, as every evaluation
    thread_set_max(pace_threads(&r->pace));
    int done = (r->cfg.eval_steps <= 0 || estimate_loss(r, ds, 0, b->ex, b->ey, &f->train_loss)) &&
               full_val_loss(r, ds, b->ex, b->ey, &f->val_loss) &&
               gen_loss(r, ds, &f->gen_loss, &f->gen_loss_tf, &f->gen_windows);
    thread_set_max(r->pace.max);
    if (!done) return 0;
    if (isfinite(f->val_loss) && f->val_loss < r->st.best_val_loss) {
        r->st.best_val_loss = f->val_loss;
        run_save(r, vocab, "best.bin");
    }
    run_close_logs(r);
    if (dist_is_root()) {
        char path[2200];
        join_path(path, sizeof path, r->dir, "summary.json");
        write_summary(r, path, f, now_seconds() - wall0);
    }
    return 1;
}

int run_sample(Run *r, const Vocab *vocab, char **text) {
    const Config *c = &r->cfg;
    if (text) *text = NULL;
    if (c->sample_tokens <= 0 || !dist_is_root()) return 1;
    stop_test_point("sample");
    char err[RUN_ERRLEN];
    int *prompt = xmalloc((strlen(c->sample_prompt) + 1) * sizeof(int), "prompt");
    int n_prompt = encode_prompt(vocab, c->sample_prompt, prompt, err, sizeof err), done = 1;
    if (n_prompt < 0) {
        fprintf(stderr, "train: warning: no sample: %s\n", err);
    } else {
        Rng srng;
        rng_seed(&srng, (uint64_t)c->seed + 99);
        printf("---- sample%s%s (%d characters, temperature %.2f, top_k %d) ----\n%s",
               r->variant ? " from " : "", r->variant ? r->variant : "", c->sample_tokens,
               c->sample_temperature, c->sample_top_k, c->sample_prompt);
        // into memory too when asked for (the comparison's report shows every variant's sample)
        char *buf = NULL;
        size_t len = 0;
        FILE *out = text ? open_memstream(&buf, &len) : NULL;
        int n = generate_until(&r->model, vocab, prompt, n_prompt, c->sample_tokens,
                               c->sample_temperature, c->sample_top_k, CONTEXT_CROP, &srng,
                               out ? out : stdout, &g_stop_signal);
        if (out) {
            fclose(out);
            fputs(buf, stdout);
            if (text) {
                size_t plen =
                    strlen(c->sample_prompt);  // the report shows the prompt as the sample began
                *text = xmalloc(plen + len + 1, "sample text");
                memcpy(*text, c->sample_prompt, plen);
                memcpy(*text + plen, buf, len + 1);
            }
            free(buf);
        }
        done = n == c->sample_tokens;
        printf("\n----\n");
    }
    free(prompt);
    return done;
}

void run_print_final(const Run *r, FinalLosses f) {
    double tps = r->train_seconds > 0 ? (double)r->tokens_trained / r->train_seconds : 0;
    printf("final%s%s: step=%ld train_loss=%.4f val_loss=%.4f gen_loss=%.4f", r->variant ? " " : "",
           r->variant ? r->variant : "", r->st.step, f.train_loss, f.val_loss, f.gen_loss);
    // val_loss is the whole validation split, gen_loss a few windows of it: beside gen_loss, the
    // teacher-forced loss on the same windows, the figure it is to be compared with
    if (isfinite(f.gen_loss))
        printf(" (teacher-forced on the same %d window%s: %.4f)", f.gen_windows,
               f.gen_windows == 1 ? "" : "s", f.gen_loss_tf);
    printf(" tokens_per_s=%.0f\n", tps);
}

int run_attention_falls_back(const Run *r) { return gpt_attention_falls_back(&r->model); }

// ---------------------------------------------------------------------------------------------
// the debug dump

void run_dump_state(Run *r, const Dataset *ds, const char *path) {
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
    char err[RUN_ERRLEN], name[TENSOR_NAME_MAX + 8];
    TWriter *w = tw_open(path, "TGPTDUMP", err, sizeof err);
    if (!w) die(EXIT_RUNTIME, "%s", err);
    int rdt = sizeof(real) == 4 ? DT_F32 : DT_F64;
    uint32_t shape[3] = {(uint32_t)strlen(r->cfg_json), 0, 0};
    tw_record(w, "config", DT_U8, 1, shape, r->cfg_json);
    shape[0] = (uint32_t)B;
    shape[1] = (uint32_t)T;
    shape[2] = (uint32_t)V;
    tw_record(w, "inputs", DT_I32, 2, shape, x);
    tw_record(w, "targets", DT_I32, 2, shape, y);
    tw_record(w, "logits", rdt, 3, shape, logits);
    // dlogits: d(objective)/dlogits of the backward, the gradient every grad.* record descends from
    tw_record(w, "dlogits", rdt, 3, shape, m->gacts.logits);
    shape[0] = 1;
    tw_record(w, "loss", DT_F64, 1, shape, &loss);
    // the objective the gradients are of: loss + z_loss * mean(log(Z)^2) (the loss alone without
    // z-loss)
    double objective = loss + m->z_loss * m->lse_sq_mean;
    tw_record(w, "objective", DT_F64, 1, shape, &objective);
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
    // the batch is the one the next step draws: step 1's in a new run, step N+1's after a
    // checkpoint of step N
    char which[64];
    if (r->st.step > 0)
        snprintf(which, sizeof which, "the next training batch (step %ld's)", (long)r->st.step + 1);
    else
        snprintf(which, sizeof which, "the first training batch");
    fprintf(strcmp(path, "-") == 0 ? stderr : stdout,
            "wrote %s: loss %.6f on %s (%d x %d), %d tensors\n",
            strcmp(path, "-") == 0 ? "the dump to standard output" : path, loss, which, B, T,
            m->n_tensors);
    free(x);
    free(y);
    free(logits);
}
