// train.c: the command line, the training loop, evaluation, logging, checkpoints, and the
// side-by-side scaled-vs-unscaled experiment (--compare-scaling).
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "checkpoint.h"
#include "common.h"
#include "config.h"
#include "data.h"
#include "dist.h"
#include "generate.h"
#include "matmul.h"
#include "model.h"
#include "report.h"
#include "rng.h"
#include "version.h"

#define ERRLEN 1024
#define BENCH_VOCAB 65

// ---------------------------------------------------------------------------------------------
// signals: the first SIGINT/SIGTERM asks the loop to stop after the current step and save; a
// second SIGINT exits at once without writing anything.

static volatile sig_atomic_t g_stop_signal = 0;

// Test-only fault injection, so the tests can exercise the guards; unset in normal use.
// TGPT_TEST_NONFINITE="FROM:COUNT" makes the loss of steps [FROM, FROM+COUNT) NaN;
// TGPT_TEST_SPIKE="STEP" adds 100 to the loss of that step (the spike guard's input).
static long g_fault_from = -1, g_fault_count = 0, g_spike_step = -1;

static void read_fault_injection(void) {
    const char *v = getenv("TGPT_TEST_NONFINITE");
    if (v && sscanf(v, "%ld:%ld", &g_fault_from, &g_fault_count) != 2) g_fault_from = -1, g_fault_count = 0;
    v = getenv("TGPT_TEST_SPIKE");
    if (v && sscanf(v, "%ld", &g_spike_step) != 1) g_spike_step = -1;
}

static void on_signal(int sig) {
    if (g_stop_signal && sig == SIGINT) _exit(130);
    g_stop_signal = sig;
}

static void install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

// ---------------------------------------------------------------------------------------------
// small file helpers

static int ensure_dir(const char *path, char *err, size_t errlen) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char saved = *p;
            *p = 0;
            struct stat st;
            if (stat(buf, &st) != 0) {
                if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                    snprintf(err, errlen, "cannot create output directory '%.900s': %s", buf, strerror(errno));
                    return 0;
                }
            } else if (!S_ISDIR(st.st_mode)) {
                snprintf(err, errlen, "output path '%.900s' exists and is not a directory", buf);
                return 0;
            }
            *p = saved;
            if (saved == 0) break;
        }
    }
    if (access(path, W_OK) != 0) {
        snprintf(err, errlen, "output directory '%s' is not writable: %s", path, strerror(errno));
        return 0;
    }
    return 1;
}

static FILE *open_or_die(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f) die(EXIT_RUNTIME, "cannot open '%s' for writing: %s", path, strerror(errno));
    return f;
}

// Keep the header and the rows of a CSV whose first field (the step) is <= max_step, so a
// resumed run continues its logs without repeating rows written after the last checkpoint.
static void truncate_csv(const char *path, long max_step) {
    FILE *in = fopen(path, "r");
    if (!in) return;
    char tmp[2100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = open_or_die(tmp, "w");
    char line[8192];
    int first = 1;
    while (fgets(line, sizeof line, in)) {
        if (first || strtol(line, NULL, 10) <= max_step) fputs(line, out);
        first = 0;
    }
    fclose(in);
    if (fflush(out) != 0 || fclose(out) != 0) die(EXIT_RUNTIME, "cannot write '%s': %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0) die(EXIT_RUNTIME, "cannot replace '%s': %s", path, strerror(errno));
}

static void join_path(char *out, size_t n, const char *dir, const char *file) {
    int w = snprintf(out, n, "%s/%s", dir, file);
    if (w < 0 || (size_t)w >= n) die(EXIT_USAGE, "path too long: '%s/%s'", dir, file);
}

// ---------------------------------------------------------------------------------------------
// batches

// B random windows of T+1 tokens from [lo, hi): inputs x and next-token targets y, (B,T) each.
static void sample_batch(const Dataset *ds, int split_val, Rng *rng, int B, int T, int *x, int *y) {
    size_t lo = split_val ? ds->n_train : 0, hi = split_val ? ds->n_tokens : ds->n_train;
    size_t span = hi - lo - (size_t)T;  // valid starts: [lo, hi - T - 1]
    for (int b = 0; b < B; b++) {
        size_t start = lo + (size_t)rng_below(rng, span);
        for (int t = 0; t < T; t++) {
            x[b * T + t] = ds->tokens[start + t];
            y[b * T + t] = ds->tokens[start + t + 1];
        }
    }
}

// nanoGPT's schedule: linear warmup, then cosine decay from lr to min_lr at lr_decay_steps.
static double lr_at(const Config *c, long step) {
    long decay = c->lr_decay_steps > 0 ? c->lr_decay_steps : c->max_steps;
    if (step < c->warmup_steps) return c->lr * (double)(step + 1) / (double)(c->warmup_steps + 1);
    if (step >= decay) return c->min_lr;
    double ratio = (double)(step - c->warmup_steps) / (double)(decay - c->warmup_steps);
    double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * ratio));
    return c->min_lr + coeff * (c->lr - c->min_lr);
}

// ---------------------------------------------------------------------------------------------
// one training run (two of them side by side in --compare-scaling)

typedef struct {
    const char *variant;     // NULL for a normal run, else "scaled" / "unscaled"
    Config cfg;
    int rows, row0;          // this rank's rows [row0, row0 + rows) of every batch (all of it in one process)
    char *cfg_json;
    GPT model;
    TrainState st;
    char dir[1100];
    FILE *metrics, *attn_csv;
    // divergence guard
    int bad_streak;
    double last_finite_loss;
    double *spike_window;
    int spike_n, spike_pos;
    // results of the last step / probe / evaluation
    double loss, grad_norm, lr, ms;
    int skipped;
    const char *skip_reason;
    double train_seconds, comm_seconds;  // comm: time in the gradient allreduce (MPI)
    long tokens_trained;
    HeadStats probe;         // last attention probe (averages over layers and heads)
    int have_probe;
    double eval_train, eval_val;
} Run;

// Mean loss over a set of fixed batches (eval_steps of them) from one split.
static double estimate_loss(Run *r, const Dataset *ds, int split_val, int *x, int *y) {
    const Config *c = &r->cfg;
    Rng eval_rng;
    rng_seed(&eval_rng, (uint64_t)c->seed * 2654435761u + (split_val ? 17 : 3));
    double total = 0.0;
    size_t off = (size_t)r->row0 * c->block_size;
    for (int i = 0; i < c->eval_steps; i++) {
        // every rank draws the whole batch and evaluates its rows: the mean over the ranks'
        // equal shares is the mean over the batch
        sample_batch(ds, split_val, &eval_rng, c->batch_size, c->block_size, x, y);
        total += gpt_loss(&r->model, x + off, y + off, r->rows, c->block_size);
    }
    dist_sum_double(&total, 1);
    return total / c->eval_steps / dist_size();
}

// Loss over the whole validation split: every non-overlapping window of block_size targets.
static double full_val_loss(Run *r, const Dataset *ds, int *x, int *y) {
    const Config *c = &r->cfg;
    int T = c->block_size, B = c->batch_size;
    size_t n_val = ds->n_tokens - ds->n_train;
    size_t n_windows = (n_val - 1) / (size_t)T;
    // sums[0] = summed loss, sums[1] = positions counted; each rank takes its rows of each
    // group of B windows
    double sums[2] = {0.0, 0.0};
    for (size_t w0 = 0; w0 < n_windows; w0 += (size_t)B) {
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
        sums[0] += gpt_loss(&r->model, x, y, nb, T) * nb * T;
        sums[1] += (double)nb * T;
    }
    dist_sum_double(sums, 2);
    return sums[1] > 0 ? sums[0] / sums[1] : NAN;
}

// One optimisation step on batch (x, y). A non-finite loss or gradient norm (or a loss spike,
// when the guard is on) skips the update: nothing reaches the parameters.
static void run_step(Run *r, const int *x, const int *y, long step) {
    const Config *c = &r->cfg;
    GPT *m = &r->model;
    double t0 = now_seconds();
    r->lr = lr_at(c, step);
    // forward and backward (split between the threads by rows when the model has batch workers);
    // a non-finite loss is caught below, before anything reaches the parameters
    r->loss = gpt_forward_backward(m, x, y, r->rows, c->block_size);
    if (dist_size() > 1) {  // the batch loss is the mean of the ranks' equal shares
        double loss = r->loss;
        dist_sum_double(&loss, 1);
        r->loss = loss / dist_size();
    }
    if (step >= g_fault_from && step < g_fault_from + g_fault_count) r->loss = NAN;  // test-only fault injection
    if (step == g_spike_step) r->loss += 100;
    r->skipped = 0;
    r->skip_reason = NULL;
    if (!isfinite(r->loss)) {
        r->skipped = 1;
        r->skip_reason = "non-finite loss";
        r->grad_norm = NAN;
    } else {
        gpt_phase(m, PHASE_OPTIMIZER);
        if (dist_size() > 1) {
            // one allreduce over the one contiguous gradient buffer: the sum of the ranks' mean
            // gradients, divided by their number, is the gradient of the whole batch's mean loss
            double c0 = now_seconds();
            dist_sum_real(m->grads, m->n_params);
            r->comm_seconds += now_seconds() - c0;
            gpt_scale_grads(m, (real)(1.0 / dist_size()));
        }
        r->grad_norm = gpt_grad_norm(m);
        if (!isfinite(r->grad_norm)) { r->skipped = 1; r->skip_reason = "non-finite gradient"; }
    }
    if (!r->skipped && c->spike_zscore > 0 && r->spike_n >= c->spike_window / 2 && r->spike_n >= 2) {
        double mean = 0, var = 0;
        for (int i = 0; i < r->spike_n; i++) mean += r->spike_window[i];
        mean /= r->spike_n;
        for (int i = 0; i < r->spike_n; i++) var += (r->spike_window[i] - mean) * (r->spike_window[i] - mean);
        double sd = sqrt(var / (r->spike_n - 1));
        if (sd > 0 && (r->loss - mean) / sd > c->spike_zscore) { r->skipped = 1; r->skip_reason = "loss spike"; }
    }
    if (!r->skipped) {
        if (c->grad_clip > 0 && r->grad_norm > c->grad_clip) gpt_scale_grads(m, (real)(c->grad_clip / r->grad_norm));
        gpt_adamw_update(m, r->lr, c->beta1, c->beta2, c->eps, c->weight_decay, step + 1 - r->st.skipped_steps);
        r->last_finite_loss = r->loss;
        r->bad_streak = 0;
        if (c->spike_zscore > 0) {
            r->spike_window[r->spike_pos] = r->loss;
            r->spike_pos = (r->spike_pos + 1) % c->spike_window;
            if (r->spike_n < c->spike_window) r->spike_n++;
        }
    } else {
        r->st.skipped_steps++;
        r->bad_streak++;
    }
    gpt_phase(m, PHASE_NONE);
    r->ms = 1000.0 * (now_seconds() - t0);
    r->train_seconds += r->ms / 1000.0;
    r->tokens_trained += (long)c->batch_size * c->block_size;  // the whole batch, over all ranks
}

// Attention statistics on the fixed probe batch: a forward and backward with statistics on,
// which leaves the gradients zeroed again so training is unaffected.
static void run_probe(Run *r, const int *px, const int *py, long step) {
    const Config *c = &r->cfg;
    GPT *m = &r->model;
    int L = m->dims.n_layer, NH = m->dims.n_head;
    HeadStats *hs = xcalloc((size_t)L * NH, sizeof(HeadStats), "attention probe");
    attention_probe(m, px, py, c->batch_size, c->block_size, hs, &r->probe);
    r->have_probe = 1;
    if (r->attn_csv) {
        for (int l = 0; l < L; l++)
            for (int h = 0; h < NH; h++) {
                const HeadStats *s = &hs[l * NH + h];
                fprintf(r->attn_csv, "%ld,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n",
                        step, l, h, s->entropy, s->entropy_norm, s->max_weight, s->frac_gt_090, s->frac_gt_099,
                        s->score_std, s->score_absmax, s->gnorm_wq, s->gnorm_wk, s->gnorm_wv, s->gnorm_wo,
                        s->ds_over_dp, s->row_gain_median);
            }
        fflush(r->attn_csv);
    }
    free(hs);
}

// Only rank 0 writes files; the others hold the same parameters.
static void run_save(Run *r, const Vocab *vocab, const char *file) {
    if (!dist_is_root()) return;
    char path[2200], err[ERRLEN];
    join_path(path, sizeof path, r->dir, file);
    if (!checkpoint_save(path, &r->model, r->cfg_json, vocab, &r->st, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
}

// Write checkpoint.bin and, with keep_checkpoints N, checkpoint_<step>.bin, removing the one
// that falls out of the window of the last N.
static void run_checkpoint(Run *r, const Vocab *vocab) {
    // every rank took the same AdamW steps from the same summed gradients, so they hold the same
    // bytes; check it (cheaply, at checkpoints only) rather than trust it
    if (!dist_same_bytes(r->model.params, r->model.n_params * sizeof(real)))
        die(EXIT_RUNTIME, "the ranks' parameters differ at step %ld (the MPI sum was not identical on every rank)",
            r->st.step);
    if (!dist_is_root()) return;
    run_save(r, vocab, "checkpoint.bin");
    int keep = r->cfg.keep_checkpoints;
    if (keep > 0) {
        char name[64], path[2200];
        snprintf(name, sizeof name, "checkpoint_%ld.bin", r->st.step);
        run_save(r, vocab, name);
        long interval = r->cfg.ckpt_interval > 0 ? r->cfg.ckpt_interval : r->cfg.max_steps;
        long old = r->st.step - (long)keep * interval;
        if (old > 0) {
            snprintf(name, sizeof name, "checkpoint_%ld.bin", old);
            join_path(path, sizeof path, r->dir, name);
            remove(path);
        }
    }
}

static void run_open_logs(Run *r, int resuming) {
    if (!dist_is_root()) return;  // metrics and attn_csv stay NULL on the other ranks
    char path[2200];
    join_path(path, sizeof path, r->dir, "metrics.csv");
    if (resuming) truncate_csv(path, r->st.step);
    struct stat st;
    int exists = resuming && stat(path, &st) == 0 && st.st_size > 0;
    r->metrics = open_or_die(path, exists ? "a" : "w");
    if (!exists) fprintf(r->metrics, "step,loss,lr,grad_norm,ms,val_loss\n");
    join_path(path, sizeof path, r->dir, "attention.csv");
    if (resuming) truncate_csv(path, r->st.step - 1);
    exists = resuming && stat(path, &st) == 0 && st.st_size > 0;
    r->attn_csv = open_or_die(path, exists ? "a" : "w");
    if (!exists)
        fprintf(r->attn_csv, "step,layer,head,entropy,entropy_norm,max_weight,frac_gt_0.9,frac_gt_0.99,"
                             "score_std,score_absmax,gnorm_wq,gnorm_wk,gnorm_wv,gnorm_wo,ds_over_dp,row_gain_median\n");
}

static void run_close_logs(Run *r) {
    if (r->metrics && fclose(r->metrics) != 0) die(EXIT_RUNTIME, "cannot write metrics.csv in '%s'", r->dir);
    if (r->attn_csv && fclose(r->attn_csv) != 0) die(EXIT_RUNTIME, "cannot write attention.csv in '%s'", r->dir);
    r->metrics = r->attn_csv = NULL;
}

// ---------------------------------------------------------------------------------------------
// command line

typedef struct {
    const char *config_path;
    const char *resume_path;
    const char *dump_path;
    int bench_steps;
    int compare_scaling;
    int n_overrides;
    const char **overrides;
} Args;

static void print_usage(FILE *f) {
    fprintf(f,
            "usage: train [CONFIG.json] [--section.key=value ...] [options]\n"
            "\n"
            "Trains a character-level GPT on a UTF-8 text file. CONFIG defaults to configs/default.json;\n"
            "any config key can be overridden with its dotted path, e.g. --train.max_steps=500.\n"
            "\n"
            "options:\n"
            "  --resume CHECKPOINT   continue the run saved in CHECKPOINT (overrides such as a larger\n"
            "                        --train.max_steps apply on top of its configuration)\n"
            "  --compare-scaling     train attn_scale \"sqrt\" and \"none\" side by side (same initial\n"
            "                        weights, same batches) and write compare.csv, report.md, scaling.svg\n"
            "  --bench=N             time N training steps on random tokens and print one 'bench' line\n"
            "  --dump-state FILE     run one forward/backward on the first batch and write a debug state\n"
            "  --help, --version\n"
            "\n"
            "outputs (in train.out_dir, default out/<name>): metrics.csv, attention.csv, checkpoint.bin,\n"
            "summary.json; the last line printed is 'final: step=N train_loss=X val_loss=Y tokens_per_s=Z'.\n"
            "exit codes: 0 ok, 1 runtime error (I/O, data, checkpoint, divergence), 2 usage or config error,\n"
            "130/143 stopped by SIGINT/SIGTERM after saving a checkpoint.\n"
            "data-parallel: build with `make MPI=1` and run `mpirun -np N ./train CONFIG`; each rank trains on\n"
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
    printf("MPI: %s\n", dist_describe());
}

static void parse_args(int argc, char **argv, Args *a) {
    memset(a, 0, sizeof *a);
    a->overrides = xcalloc((size_t)argc, sizeof(char *), "arguments");
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) { print_usage(stdout); exit(0); }
        if (strcmp(arg, "--version") == 0) { print_version(); exit(0); }
        if (strcmp(arg, "--compare-scaling") == 0) { a->compare_scaling = 1; continue; }
        if ((v = option_value(argc, argv, &i, "--resume"))) { a->resume_path = v; continue; }
        if ((v = option_value(argc, argv, &i, "--dump-state"))) { a->dump_path = v; continue; }
        if ((v = option_value(argc, argv, &i, "--bench"))) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 1000000) die(EXIT_USAGE, "--bench expects a step count from 1 to 1000000, got '%s'", v);
            a->bench_steps = (int)n;
            continue;
        }
        if (strncmp(arg, "--", 2) == 0 && strchr(arg, '.') && strchr(arg, '=')) { a->overrides[a->n_overrides++] = arg + 2; continue; }
        if (strncmp(arg, "--", 2) == 0 && strchr(arg, '.'))
            die(EXIT_USAGE, "override '%s' has no value: write %s=VALUE", arg, arg);
        if (arg[0] == '-') die(EXIT_USAGE, "unknown option '%s' (see --help)", arg);
        if (a->config_path) die(EXIT_USAGE, "more than one config file given: '%s' and '%s'", a->config_path, arg);
        a->config_path = arg;
    }
    if (a->resume_path && a->config_path) die(EXIT_USAGE, "give either a config file or --resume, not both");
    if (a->resume_path && a->compare_scaling) die(EXIT_USAGE, "--resume cannot be combined with --compare-scaling");
    if (!a->config_path && !a->resume_path) a->config_path = "configs/default.json";
}

static void load_config(Config *cfg, const Args *a, const Checkpoint *ck) {
    char err[ERRLEN];
    config_defaults(cfg);
    if (ck) {
        if (!config_load_json(cfg, ck->config_json, strlen(ck->config_json), a->resume_path, err, sizeof err))
            die(EXIT_RUNTIME, "%s", err);
    } else if (!config_load_file(cfg, a->config_path, err, sizeof err)) {
        die(EXIT_USAGE, "%s", err);
    }
    for (int i = 0; i < a->n_overrides; i++)
        if (!config_apply_override(cfg, a->overrides[i], err, sizeof err)) die(EXIT_USAGE, "%s", err);
    if (!config_finalize(cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    if (ck) {
        const ModelDims *d = &ck->dims;
        if (cfg->block_size != d->block_size || cfg->n_layer != d->n_layer || cfg->n_head != d->n_head ||
            cfg->n_embd != d->n_embd)
            die(EXIT_USAGE, "the overrides change the model shape of '%s' (n_layer %d, n_head %d, n_embd %d, block_size %d);"
                " a resumed run keeps its shape", a->resume_path, d->n_layer, d->n_head, d->n_embd, d->block_size);
    }
}

// Refuse before allocating when the model cannot fit in this machine's memory.
static void check_memory(const ModelDims *d, int B, int T, int n_models) {
    size_t n_params = 0, bytes = gpt_memory_bytes(d, B, T, &n_params);
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (bytes == 0)
        die(EXIT_USAGE, "the model (n_layer %d, n_embd %d, block_size %d, batch %d) needs more memory than can be addressed",
            d->n_layer, d->n_embd, d->block_size, B);
    double need = (double)bytes * n_models;
    if (phys > 0 && need > 0.9 * phys)
        die(EXIT_USAGE, "the model needs %.1f GiB of memory (%zu parameters plus activations) but this machine has %.1f GiB",
            need / 1073741824.0, n_params, phys / 1073741824.0);
}

// Time left as "42s", "3m05s" or "1h07m" ("?" before it can be estimated).
static void fmt_eta(char *buf, size_t n, double seconds) {
    if (!(seconds >= 0) || seconds > 1e7) { snprintf(buf, n, "?"); return; }
    long s = (long)(seconds + 0.5);
    if (s >= 3600) snprintf(buf, n, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60) snprintf(buf, n, "%ldm%02lds", s / 60, s % 60);
    else snprintf(buf, n, "%lds", s);
}

static void write_summary(const Run *r, const char *path, double train_loss, double val_loss, double wall) {
    FILE *f = open_or_die(path, "w");
    double tps = r->train_seconds > 0 ? (double)r->tokens_trained / r->train_seconds : 0;
    fprintf(f, "{\n  \"train_loss\": %.6f,\n  \"val_loss\": %.6f,\n", train_loss, val_loss);
    if (isfinite(r->st.best_val_loss)) fprintf(f, "  \"best_val_loss\": %.6f,\n", r->st.best_val_loss);
    else fprintf(f, "  \"best_val_loss\": null,\n");
    fprintf(f, "  \"steps\": %ld,\n  \"skipped_steps\": %ld,\n  \"params\": %zu,\n  \"tokens_per_s\": %.1f,\n"
               "  \"wall_s\": %.2f,\n  \"config\": ",
            r->st.step, r->st.skipped_steps, r->model.n_params, tps, wall);
    // indent the config object by two spaces to nest it
    for (const char *p = r->cfg_json; *p; p++) {
        fputc(*p, f);
        if (*p == '\n' && p[1]) fputs("  ", f);
    }
    fprintf(f, "\n}\n");
    if (fclose(f) != 0) die(EXIT_RUNTIME, "cannot write '%s'", path);
}

// ---------------------------------------------------------------------------------------------
// modes

static void dump_state(Run *r, const Dataset *ds, const char *path) {
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
    char err[ERRLEN], name[TENSOR_NAME_MAX + 8];
    TWriter *w = tw_open(path, "TGPTDUMP", err, sizeof err);
    if (!w) die(EXIT_RUNTIME, "%s", err);
    int rdt = sizeof(real) == 4 ? DT_F32 : DT_F64;
    uint32_t shape[3] = {(uint32_t)strlen(r->cfg_json), 0, 0};
    tw_record(w, "config", DT_U8, 1, shape, r->cfg_json);
    shape[0] = (uint32_t)B; shape[1] = (uint32_t)T; shape[2] = (uint32_t)V;
    tw_record(w, "inputs", DT_I32, 2, shape, x);
    tw_record(w, "targets", DT_I32, 2, shape, y);
    tw_record(w, "logits", rdt, 3, shape, logits);
    shape[0] = 1;
    tw_record(w, "loss", DT_F64, 1, shape, &loss);
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
    printf("wrote %s: loss %.6f on the first training batch (%d x %d), %d tensors\n", path, loss, B, T, m->n_tensors);
    free(x); free(y); free(logits);
}

static void bench(Run *r, int steps) {
    const Config *c = &r->cfg;
    int B = c->batch_size, T = c->block_size, V = r->model.dims.vocab_size;
    size_t BT = (size_t)B * T, local = (size_t)r->rows * T;  // this rank's share of the batch
    int *x = xmalloc(BT * sizeof(int), "batch"), *y = xmalloc(BT * sizeof(int), "batch");
    Rng rng;
    rng_seed(&rng, 12345 + (uint64_t)dist_rank());
    int warmup = 3;
    double *ms = xmalloc(sizeof(double) * (size_t)steps, "timings");
    // The peak is probed before and after the steps: on a shared machine the two disagree when
    // it was too busy to measure, and then no MFU is printed (fma_peak_mfu).
    FmaPeak peak_before = fma_peak_measure();
    for (int i = 0; i < warmup + steps; i++) {
        for (size_t j = 0; j < local; j++) { x[j] = (int)rng_below(&rng, (uint64_t)V); y[j] = (int)rng_below(&rng, (uint64_t)V); }
        if (i == warmup) {  // account the timed steps only
            r->model.profile = 1;
            memset(r->model.phase_seconds, 0, sizeof r->model.phase_seconds);
            r->comm_seconds = 0;
        }
        run_step(r, x, y, i);
        if (i >= warmup) ms[i - warmup] = r->ms;
    }
    // median by insertion sort (N is small)
    for (int i = 1; i < steps; i++) {
        double v = ms[i];
        int j = i - 1;
        while (j >= 0 && ms[j] > v) { ms[j + 1] = ms[j]; j--; }
        ms[j + 1] = v;
    }
    double median = steps % 2 ? ms[steps / 2] : 0.5 * (ms[steps / 2 - 1] + ms[steps / 2]);
    double flops = gpt_flops_per_step(&r->model, B, T);
    double gflops = flops / (median / 1000.0) / 1e9;
    FmaPeak peak_after = fma_peak_measure();
    dist_sum_double(&peak_before.gflops, 1);  // with MPI, the ranks' cores together (each measures its own at once)
    dist_sum_double(&peak_after.gflops, 1);
    char peak_text[256];
    double mfu = fma_peak_mfu(gflops, &peak_before, &peak_after, peak_text, sizeof peak_text);
    static const char *const phase_names[PHASE_COUNT] = {"matmul_fwd", "matmul_bwd", "attention", "other", "optimizer"};
    double total = 0;
    for (int p = 0; p < PHASE_COUNT; p++) total += r->model.phase_seconds[p];
    char workers[64];
    if (dist_size() > 1) snprintf(workers, sizeof workers, "%d ranks x %d threads", dist_size(), thread_max());
    else snprintf(workers, sizeof workers, "%d threads", thread_max());
    printf("%s: %zu params, B=%d T=%d, %.2f GFLOP/step, %s, GEMM: %s\n%s\n", c->name,
           r->model.n_params, B, T, flops / 1e9, workers, matmul_simd_path(), peak_text);
    printf("phases (ms/step):");
    for (int p = 0; p < PHASE_COUNT; p++)
        printf(" %s %.2f (%.0f%%)", phase_names[p], 1000.0 * r->model.phase_seconds[p] / steps,
               total > 0 ? 100.0 * r->model.phase_seconds[p] / total : 0.0);
    printf("\n");
    if (dist_size() > 1) {
        // the allreduce inside a step also waits for the slowest rank; time it alone as well
        // (ranks lined up by a barrier, best of 10) for the network figures of DISTRIBUTED.md
        double best = INFINITY;
        for (int i = 0; i < 10; i++) {
            dist_barrier();
            double t0 = now_seconds();
            dist_sum_real(r->model.grads, r->model.n_params);
            double t = now_seconds() - t0;
            dist_sum_double(&t, 1);  // the mean over the ranks
            t /= dist_size();
            if (t < best) best = t;
        }
        double mb = r->model.n_params * sizeof(real) / 1e6;
        printf("data-parallel: %d ranks x %d rows, %d threads each; gradient allreduce of %zu floats (%.1f MB): "
               "%.2f ms/step in training, %.2f ms alone (%.2f GB/s of buffer)\n", dist_size(), r->rows, thread_max(),
               r->model.n_params, mb, 1000.0 * r->comm_seconds / steps, 1000.0 * best, mb / 1000.0 / best);
    }
    if (dist_is_root()) {   // sampling speed: 500 characters with the KV cache; the full recompute is timed on 50
        Vocab vocab;
        vocab.vocab_size = V;
        vocab.chars = xmalloc(sizeof(uint32_t) * (size_t)V, "vocabulary");
        for (int i = 0; i < V; i++) vocab.chars[i] = 0x21 + (uint32_t)i;
        int prompt = 0;
        Rng srng;
        rng_seed(&srng, 7);
        double t0 = now_seconds();
        generate(&r->model, &vocab, &prompt, 1, 500, 1.0, 0, &srng, NULL);
        double cached = 500 / (now_seconds() - t0);
        t0 = now_seconds();
        generate_full_window(&r->model, &vocab, &prompt, 1, 50, 1.0, 0, &srng, NULL);
        double full = 50 / (now_seconds() - t0);
        printf("sampling: %.0f tokens/s with the KV cache (500 characters), %.0f tokens/s recomputing the prefix for each (50)\n",
               cached, full);
        free(vocab.chars);
    }
    char mfu_text[16] = "n/a";  // the machine too busy to measure the peak
    if (mfu >= 0) snprintf(mfu_text, sizeof mfu_text, "%.3f", mfu);
    printf("bench %s: ms_per_step=%.2f min=%.2f max=%.2f tokens_per_s=%.0f gflops=%.1f mfu=%s\n", c->name, median,
           ms[0], ms[steps - 1], (double)BT / (median / 1000.0), gflops, mfu_text);
    free(ms); free(x); free(y);
}

// Print the progress line of one or two runs.
static void print_progress(Run *runs, int n_runs, long step, long max_steps, double eta_s) {
    char eta[32];
    fmt_eta(eta, sizeof eta, eta_s);
    if (n_runs == 1) {
        Run *r = &runs[0];
        printf("step %5ld/%ld | loss %.4f | lr %.2e | gnorm %6.3f | %6.1f ms | %7.0f tok/s | eta %s", step, max_steps,
               r->loss, r->lr, r->grad_norm, r->ms, (double)r->cfg.batch_size * r->cfg.block_size / (r->ms / 1000.0), eta);
        if (r->have_probe) printf(" | attn H %.2f max %.2f", r->probe.entropy_norm, r->probe.max_weight);
        if (r->st.skipped_steps) printf(" | skipped %ld", r->st.skipped_steps);
        if (r->skipped) printf(" | SKIPPED (%s)", r->skip_reason);
        printf("\n");
    } else {
        printf("step %5ld/%ld |", step, max_steps);
        for (int i = 0; i < n_runs; i++) {
            Run *r = &runs[i];
            printf(" %-8s loss %.4f H %.2f max %.2f%s |", r->variant, r->loss, r->probe.entropy_norm,
                   r->probe.max_weight, r->skipped ? " SKIPPED" : "");
        }
        printf(" eta %s\n", eta);
    }
    fflush(stdout);
}

// Free everything main() allocated (so leak checkers see a clean exit on every path).
static void release(Run *runs, int n_runs, Dataset *ds, Checkpoint *ck, Args *args, int **batches, int n_batches) {
    for (int i = 0; i < n_runs; i++) {
        gpt_free(&runs[i].model);
        free(runs[i].cfg_json);
        free(runs[i].spike_window);
    }
    for (int i = 0; i < n_batches; i++) free(batches[i]);
    free(args->overrides);
    dataset_free(ds);
    if (ck) checkpoint_close(ck);
}

int main(int argc, char **argv) {
    g_progname = "train";
    dist_init(&argc, &argv);
    // only rank 0 speaks; the other ranks' errors still reach stderr
    if (!dist_is_root() && !freopen("/dev/null", "w", stdout)) die(EXIT_RUNTIME, "cannot redirect stdout to /dev/null");
    setvbuf(stdout, NULL, _IOLBF, 0);
    read_fault_injection();
    Args args;
    parse_args(argc, argv, &args);
    char err[ERRLEN];

    Checkpoint ck;
    int resuming = args.resume_path != NULL;
    if (resuming && !checkpoint_open(&ck, args.resume_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    Config cfg;
    load_config(&cfg, &args, resuming ? &ck : NULL);
#ifdef _OPENMP
    if (cfg.threads > 0) omp_set_num_threads(cfg.threads);
    else if (dist_local_size() > 1 && !getenv("OMP_NUM_THREADS")) {
        // ranks sharing a machine share its cores: oversubscribed OpenMP threads spin and crawl
        int per_rank = omp_get_num_procs() / dist_local_size();
        omp_set_num_threads(per_rank > 0 ? per_rank : 1);
    }
#endif
    if (dist_size() > 1) {
        // Errors every rank sees alike: rank 0 says it once, and all ranks exit normally. (With
        // rank 0 in MPI_Abort while the others finalize, Open MPI's mpirun once hung after all
        // three processes had exited.)
        if (cfg.batch_size % dist_size() != 0) {
            if (dist_is_root())
                err_print("train.batch_size %d does not divide over %d ranks: use a multiple of %d or another rank count",
                          cfg.batch_size, dist_size(), dist_size());
            dist_exit(EXIT_USAGE);
        }
        if (args.dump_path) {
            if (dist_is_root()) err_print("--dump-state runs in one process, not under mpirun -np %d", dist_size());
            dist_exit(EXIT_USAGE);
        }
    }
    int rows = cfg.batch_size / dist_size();

    int n_runs = args.compare_scaling ? 2 : 1;
    {   // refuse absurd sizes before reading any data (the vocabulary adds little; count one token)
        ModelDims lower = {1, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd};
        check_memory(&lower, cfg.batch_size, cfg.block_size, n_runs);
    }
    Dataset ds;
    memset(&ds, 0, sizeof ds);
    if (args.bench_steps) {
        // the benchmark trains on random tokens: no data file, and the Tiny Shakespeare
        // vocabulary size (65) so the figures compare with the reference measurements
        ds.vocab.vocab_size = BENCH_VOCAB;
    } else {
        int min_len = cfg.block_size + 2;
        int ok = resuming ? dataset_load_with_vocab(&ds, cfg.data_path, cfg.val_fraction, min_len, &ck.vocab, err, sizeof err)
                          : dataset_load(&ds, cfg.data_path, cfg.val_fraction, min_len, err, sizeof err);
        if (!ok) die(EXIT_RUNTIME, "%s", err);
    }

    ModelDims dims = {ds.vocab.vocab_size, cfg.block_size, cfg.n_layer, cfg.n_head, cfg.n_embd};
    // with batch threads, each run also holds one gradient buffer per thread and activations for
    // the batch once more: at most as much again as the model itself for up to 8 threads
    check_memory(&dims, cfg.batch_size, cfg.block_size, n_runs * (thread_max() > 1 ? 2 : 1));
    int writes = args.bench_steps == 0 && !args.dump_path && dist_is_root();
    if (writes && !ensure_dir(cfg.out_dir, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);

    Run runs[2];
    memset(runs, 0, sizeof runs);
    for (int i = 0; i < n_runs; i++) {
        Run *r = &runs[i];
        r->cfg = cfg;
        r->rows = rows;
        r->row0 = dist_rank() * rows;
        if (args.compare_scaling) {
            r->variant = i == 0 ? "scaled" : "unscaled";
            snprintf(r->cfg.attn_scale_str, sizeof r->cfg.attn_scale_str, "%s", i == 0 ? "sqrt" : "none");
            if (!config_finalize(&r->cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
            snprintf(r->dir, sizeof r->dir, "%s/%s", cfg.out_dir, r->variant);
            if (writes && !ensure_dir(r->dir, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        } else {
            snprintf(r->dir, sizeof r->dir, "%s", cfg.out_dir);
        }
        if (writes && checkpoint_remove_stale_temps(r->dir, err, sizeof err) < 0) die(EXIT_RUNTIME, "%s", err);
        r->cfg_json = config_to_json(&r->cfg);
        // rank 0 also runs the attention probe on the whole probe batch; the others need their share
        gpt_build(&r->model, &dims, (real)config_attn_scale(&r->cfg), dist_is_root() ? cfg.batch_size : rows, cfg.block_size);
        if (!gpt_configure_attention(&r->model, r->cfg.attn_impl, r->cfg.attn_mask, r->cfg.softmax_axis))
            die(EXIT_USAGE, "internal: unknown attention setting");
        gpt_enable_batch_threads(&r->model, thread_max(), rows, cfg.block_size);
        r->st.best_val_loss = INFINITY;
        r->last_finite_loss = NAN;
        if (cfg.spike_zscore > 0) r->spike_window = xcalloc((size_t)cfg.spike_window, sizeof(double), "spike window");
    }
    if (resuming) {
        if (!checkpoint_restore(&ck, &runs[0].model, args.resume_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        runs[0].st = ck.state;
        if (!ck.has_optimizer) die(EXIT_RUNTIME, "'%s' holds no optimizer state and cannot be resumed", args.resume_path);
    } else {
        // the same seed draws the same initial weights; in --compare-scaling both variants get a copy
        Rng init_rng;
        rng_seed(&init_rng, (uint64_t)cfg.seed);
        gpt_init(&runs[0].model, strcmp(cfg.init, "fan_in") == 0 ? INIT_FAN_IN : INIT_GPT2, &init_rng);
        rng_seed(&runs[0].st.rng, (uint64_t)cfg.seed + 1);
        if (n_runs == 2) {
            memcpy(runs[1].model.params, runs[0].model.params, runs[0].model.n_params * sizeof(real));
            runs[1].st = runs[0].st;
        }
    }
    const Vocab *vocab = resuming ? &ck.vocab : &ds.vocab;

    Checkpoint *ckp = resuming ? &ck : NULL;
    if (args.dump_path || args.bench_steps) {
        if (args.dump_path) dump_state(&runs[0], &ds, args.dump_path);
        else bench(&runs[0], args.bench_steps);
        release(runs, n_runs, &ds, ckp, &args, NULL, 0);
        return 0;
    }

    int B = cfg.batch_size, T = cfg.block_size;
    size_t BT = (size_t)B * T;
    int *batches[6];  // training x, y; evaluation x, y; probe x, y
    for (int i = 0; i < 6; i++) batches[i] = xmalloc(BT * sizeof(int), "batch");
    int *x = batches[0], *y = batches[1], *ex = batches[2], *ey = batches[3], *px = batches[4], *py = batches[5];
    {   // the probe batch is fixed for the whole run (and identical for both variants)
        Rng probe_rng;
        rng_seed(&probe_rng, (uint64_t)cfg.seed * 7919u + 101u);
        sample_batch(&ds, 1, &probe_rng, B, T, px, py);
    }
    for (int i = 0; i < n_runs; i++) run_open_logs(&runs[i], resuming);
    CompareLog *cmp = n_runs == 2 && dist_is_root() ? compare_log_open(cfg.out_dir, cfg.max_steps) : NULL;

    long start_step = runs[0].st.step, max_steps = cfg.max_steps;
    printf("%s %s: %zu parameters, vocab %d, %zu train / %zu val tokens, %s attention scale %s, init %s\n",
           resuming ? "resuming" : "training", cfg.name, runs[0].model.n_params, dims.vocab_size, ds.n_train,
           ds.n_tokens - ds.n_train, n_runs == 2 ? "comparing" : "with", n_runs == 2 ? "sqrt vs none" : cfg.attn_scale_str,
           cfg.init);
    if (dist_size() > 1)
        printf("data-parallel over %d MPI ranks: %d of the %d rows of each batch per rank, %d threads each\n", dist_size(),
               rows, B, thread_max());
    if (resuming) printf("continuing from step %ld of %ld, writing to %s\n", start_step, max_steps, cfg.out_dir);
    else printf("writing to %s (step %ld of %ld)\n", cfg.out_dir, start_step, max_steps);
    install_signal_handlers();
    double wall0 = now_seconds();

    for (long step = start_step; step < max_steps; step++) {
        if (cfg.attn_interval > 0 && step % cfg.attn_interval == 0 && dist_is_root())
            for (int i = 0; i < n_runs; i++) {
                run_probe(&runs[i], px, py, step);
                if (cmp) compare_log_probe(cmp, i, step, &runs[i].probe);
            }
        // every rank draws the whole batch from the same stream and trains on its own rows, so
        // the ranks' rows together are exactly the batch one process would draw
        sample_batch(&ds, 0, &runs[0].st.rng, B, T, x, y);
        for (int i = 1; i < n_runs; i++) runs[i].st.rng = runs[0].st.rng;  // identical batches, in order
        for (int i = 0; i < n_runs; i++) {
            Run *r = &runs[i];
            run_step(r, x + (size_t)r->row0 * T, y + (size_t)r->row0 * T, step);
            r->st.step = step + 1;
            if (r->bad_streak >= cfg.max_bad_steps) {
                // the skipped steps left the parameters as they were after the last good step:
                // save them so nothing is lost, then stop
                run_close_logs(r);
                run_checkpoint(r, vocab);
                dist_barrier();  // every rank got here at the same step; let rank 0 finish writing
                if (!dist_is_root()) dist_exit(EXIT_RUNTIME);
                die(EXIT_RUNTIME, "%s%sstopping at step %ld: %d consecutive steps with a non-finite loss or gradient"
                    " (last finite loss %.4f; checkpoint saved). Try a lower train.lr (now %g), a smaller"
                    " train.grad_clip, or model.attn_scale=sqrt.", r->variant ? r->variant : "", r->variant ? ": " : "",
                    step + 1, r->bad_streak, r->last_finite_loss, cfg.lr);
            }
        }
        long done = step + 1;
        int do_eval = cfg.eval_interval > 0 && (done % cfg.eval_interval == 0 || done == max_steps);
        for (int i = 0; i < n_runs; i++) {
            Run *r = &runs[i];
            r->eval_val = NAN;
            if (do_eval) {
                r->eval_train = estimate_loss(r, &ds, 0, ex, ey);
                r->eval_val = estimate_loss(r, &ds, 1, ex, ey);
                if (r->eval_val < r->st.best_val_loss) {
                    r->st.best_val_loss = r->eval_val;
                    run_save(r, vocab, "best.bin");
                }
            }
            if (r->metrics) {
                fprintf(r->metrics, "%ld,%.6f,%.6e,%.6f,%.3f,", done, r->loss, r->lr, r->grad_norm, r->ms);
                if (do_eval) fprintf(r->metrics, "%.6f", r->eval_val);
                fprintf(r->metrics, "\n");
                fflush(r->metrics);
            }
            if (cmp) compare_log_step(cmp, i, done, r->loss, r->eval_val);
        }
        double elapsed = now_seconds() - wall0;
        double eta = elapsed / (double)(done - start_step) * (double)(max_steps - done);
        if (cfg.log_interval > 0 && (done % cfg.log_interval == 0 || done == start_step + 1 || runs[0].skipped))
            print_progress(runs, n_runs, done, max_steps, eta);
        if (do_eval) {
            for (int i = 0; i < n_runs; i++)
                printf("step %5ld: %s%strain loss %.4f, val loss %.4f\n", done, runs[i].variant ? runs[i].variant : "",
                       runs[i].variant ? " " : "", runs[i].eval_train, runs[i].eval_val);
        }
        // a signal may reach the ranks at different steps: they agree on it before acting
        int sig = dist_max_int((int)g_stop_signal), stop = sig != 0;
        if (stop || (cfg.ckpt_interval > 0 && done % cfg.ckpt_interval == 0) || done == max_steps)
            for (int i = 0; i < n_runs; i++) run_checkpoint(&runs[i], vocab);
        if (stop) {
            for (int i = 0; i < n_runs; i++) run_close_logs(&runs[i]);
            if (dist_is_root())
                fprintf(stderr, "\n%s at step %ld: checkpoint saved. Resume with:\n  ./train --resume %s/checkpoint.bin\n",
                        sig == SIGINT ? "interrupted" : "terminated", done, runs[0].dir);
            if (cmp) compare_log_discard(cmp);
            release(runs, n_runs, &ds, ckp, &args, batches, 6);
            return sig == SIGINT ? 130 : 143;
        }
    }
    // the statistics after the last step close the curves
    if (cfg.attn_interval > 0 && max_steps % cfg.attn_interval == 0 && start_step < max_steps && dist_is_root())
        for (int i = 0; i < n_runs; i++) {
            run_probe(&runs[i], px, py, max_steps);
            if (cmp) compare_log_probe(cmp, i, max_steps, &runs[i].probe);
        }

    for (int i = 0; i < n_runs; i++) {
        Run *r = &runs[i];
        if (start_step >= max_steps) printf("the checkpoint is already at step %ld of %ld: nothing to train\n", start_step, max_steps);
        double train_loss = cfg.eval_steps > 0 ? estimate_loss(r, &ds, 0, ex, ey) : NAN;
        double val_loss = full_val_loss(r, &ds, ex, ey);
        if (val_loss < r->st.best_val_loss) {
            r->st.best_val_loss = val_loss;
            run_save(r, vocab, "best.bin");
        }
        run_close_logs(r);
        if (!dist_is_root()) continue;
        char path[2200];
        join_path(path, sizeof path, r->dir, "summary.json");
        write_summary(r, path, train_loss, val_loss, now_seconds() - wall0);
        if (cmp) compare_log_final(cmp, i, train_loss, val_loss);
        if (cfg.sample_tokens > 0) {
            int *prompt = xmalloc((strlen(cfg.sample_prompt) + 1) * sizeof(int), "prompt");
            int n_prompt = encode_prompt(vocab, cfg.sample_prompt, prompt, err, sizeof err);
            if (n_prompt < 0) {
                fprintf(stderr, "train: warning: no sample: %s\n", err);
            } else {
                Rng srng;
                rng_seed(&srng, (uint64_t)cfg.seed + 99);
                printf("---- sample%s%s (%d characters, temperature %.2f, top_k %d) ----\n%s", r->variant ? " from " : "",
                       r->variant ? r->variant : "", cfg.sample_tokens, cfg.sample_temperature, cfg.sample_top_k, cfg.sample_prompt);
                generate(&r->model, vocab, prompt, n_prompt, cfg.sample_tokens, cfg.sample_temperature, cfg.sample_top_k, &srng, stdout);
                printf("\n----\n");
            }
            free(prompt);
        }
        double tps = r->train_seconds > 0 ? (double)r->tokens_trained / r->train_seconds : 0;
        if (n_runs == 1)
            printf("final: step=%ld train_loss=%.4f val_loss=%.4f tokens_per_s=%.0f\n", r->st.step, train_loss, val_loss, tps);
        else
            printf("final %s: step=%ld train_loss=%.4f val_loss=%.4f tokens_per_s=%.0f\n", r->variant, r->st.step, train_loss, val_loss, tps);
    }
    if (cmp) {
        if (!compare_log_finish(cmp, &cfg, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        printf("wrote %s/compare.csv, %s/report.md and %s/scaling.svg\n", cfg.out_dir, cfg.out_dir, cfg.out_dir);
    }
    release(runs, n_runs, &ds, ckp, &args, batches, 6);
    return 0;
}
