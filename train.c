// train.c: the front door of ./train: the configuration (and the checkpoint a run resumes from),
// the data, and the modes: training one run, or several side by side on the same batches
// (--compare-scaling, --compare), or a learning-rate sweep (--sweep, run/sweep.c); timing steps
// (--bench, run/bench.c); a debug dump
// (--dump-state). The command line is read by run/args.c; one run's life (a step, evaluation,
// checkpoints, the finish) is in run/run.c.
#define _POSIX_C_SOURCE 200809L
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

#include "base/common.h"      // die, now_seconds, thread_max
#include "base/config.h"      // Config: loading, overrides, finalizing
#include "base/data.h"        // Dataset: the text, its vocabulary, the batches
#include "base/dist.h"        // the ranks of a data-parallel run
#include "base/outfile.h"     // out_is_input: an output that would replace an input
#include "base/rng.h"         // the batch sampler's state
#include "model.h"            // GPT, ModelDims, gpt_memory_bytes
#include "report/compare.h"   // the comparison's log and outputs
#include "run/args.h"         // the command line
#include "run/bench.h"        // --bench
#include "run/checkpoint.h"   // the checkpoint a run resumes from
#include "run/decode.h"       // gpt_attention_is_causal for the progress line
#include "run/outdir.h"       // claiming the output directories
#include "run/optimizer.h"    // the schedule's decay horizon
#include "run/run.h"          // one run's life: its step, evaluation, checkpoints, finish
#include "run/safetensors.h"  // --init-from's model files
#include "run/stop.h"         // stopping on a signal
#include "run/sweep.h"        // --sweep

#define ERRLEN      RUN_ERRLEN
#define BENCH_VOCAB 65

// ---------------------------------------------------------------------------------------------
// the configuration and the data

// The directory a path's file is in (a usage error when it does not fit in n bytes).
static void dir_of(const char *path, char *dir, size_t n) {
    const char *slash = strrchr(path, '/');
    size_t len = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (len >= n)
        die(EXIT_USAGE, "the directory of '%.200s...' is too long (at most %zu bytes)", path,
            n - 1);
    if (!slash)
        memcpy(dir, ".", 2);
    else {
        memcpy(dir, path, len);
        dir[len] = 0;
    }
}

static void load_config(Config *cfg, const Args *a, const Checkpoint *ck) {
    char err[ERRLEN];
    config_defaults(cfg);
    if (ck) {
        if (!config_load_json(cfg, ck->config_json, strlen(ck->config_json), a->resume_path, err,
                              sizeof err))
            die(EXIT_RUNTIME, "%s", err);
        train_fix_decay_horizon(cfg);  // a checkpoint of an earlier version may hold 0: its run's
                                       // horizon was its max_steps
        // replacing another run's files is asked for on the command line, never inherited
        snprintf(cfg->overwrite, sizeof cfg->overwrite, "false");
        // a resumed run continues in its checkpoint's directory, wherever that is now (moved or
        // copied): the out_dir the checkpoint records is where the run was, not an instruction.
        // --train.out_dir on the command line (applied below) still chooses another.
        dir_of(a->resume_path, cfg->out_dir, sizeof cfg->out_dir);
    } else if (!config_load_file(cfg, a->config_path, err, sizeof err)) {
        die(EXIT_USAGE, "%s", err);
    }
    for (int i = 0; i < a->n_overrides; i++)
        if (!config_apply_override(cfg, a->overrides[i], err, sizeof err))
            die(EXIT_USAGE, "%s", err);
    if (!config_finalize(cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    train_fix_decay_horizon(cfg);
    if (ck) {
        const ModelDims *d = &ck->dims;
        if (cfg->block_size != d->block_size || cfg->n_layer != d->n_layer ||
            cfg->n_head != d->n_head || cfg->n_embd != d->n_embd)
            die(EXIT_USAGE,
                "the overrides change the model shape of '%s' (n_layer %d, n_head %d, n_embd %d, "
                "block_size %d);"
                " a resumed run keeps its shape",
                a->resume_path, d->n_layer, d->n_head, d->n_embd, d->block_size);
        if (gpt_qk_norm_kind(cfg->qk_norm) != d->qk_norm)
            die(EXIT_USAGE,
                "model.qk_norm '%s' differs from the '%s' of '%s', whose parameters are those of "
                "its own; a "
                "resumed run keeps its model",
                cfg->qk_norm, gpt_qk_norm_name(d->qk_norm), a->resume_path);
    }
}

// A run started from a model file (--init-from) takes the model's shape and attention from it;
// the command line's model.* overrides apply on top, and may not change the shape.
static void take_model_from(Config *cfg, const Args *a, const Checkpoint *init) {
    char err[ERRLEN];
    Config from;
    config_defaults(&from);
    if (!config_load_json(&from, init->config_json, strlen(init->config_json), a->init_path, err,
                          sizeof err))
        die(EXIT_RUNTIME, "%s", err);
    cfg->n_layer = from.n_layer;
    cfg->n_head = from.n_head;
    cfg->n_embd = from.n_embd;
    cfg->block_size = from.block_size;
    memcpy(cfg->attn_scale_str, from.attn_scale_str, sizeof cfg->attn_scale_str);
    memcpy(cfg->attn_mask, from.attn_mask, sizeof cfg->attn_mask);
    memcpy(cfg->softmax_axis, from.softmax_axis, sizeof cfg->softmax_axis);
    cfg->attn_window = from.attn_window;
    memcpy(cfg->qk_norm, from.qk_norm, sizeof cfg->qk_norm);
    for (int i = 0; i < a->n_overrides; i++)
        if (strncmp(a->overrides[i], "model.", 6) == 0 &&
            !config_apply_override(cfg, a->overrides[i], err, sizeof err))
            die(EXIT_USAGE, "%s", err);
    if (!config_finalize(cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    const ModelDims *d = &init->dims;
    if (cfg->block_size != d->block_size || cfg->n_layer != d->n_layer ||
        cfg->n_head != d->n_head || cfg->n_embd != d->n_embd)
        die(EXIT_USAGE,
            "the overrides change the model shape of '%s' (n_layer %d, n_head %d, n_embd %d, "
            "block_size %d);"
            " a run started from it keeps its shape",
            a->init_path, d->n_layer, d->n_head, d->n_embd, d->block_size);
    if (gpt_qk_norm_kind(cfg->qk_norm) != d->qk_norm)
        die(EXIT_USAGE,
            "model.qk_norm '%s' differs from the '%s' of '%s'; a run started from it keeps its "
            "model",
            cfg->qk_norm, gpt_qk_norm_name(d->qk_norm), a->init_path);
}

// Every variant's overrides apply to the configuration (a usage error before anything is read).
// Two values that parse to the same configuration (model.attn_scale=1,01; train.lr=0.01,1e-2)
// would train one model twice: refused, the values compared as parsed. (Different settings that
// happen to compute alike, "sqrt" and "none" with head_dim 1, stay allowed: a test relies on it.)
static void check_variants(const Config *cfg, const Comparison *cmp) {
    char err[ERRLEN];
    char *json[MAX_VARIANTS] = {NULL};
    for (int i = 0; cmp && i < cmp->n; i++) {
        Config c = *cfg;
        for (int k = 0; k < MAX_VARIANT_OVERRIDES && cmp->v[i].overrides[k]; k++)
            if (!config_apply_override(&c, cmp->v[i].overrides[k], err, sizeof err))
                die(EXIT_USAGE, "%s", err);
        if (!config_finalize(&c, err, sizeof err))
            die(EXIT_USAGE, "variant '%s': %s", cmp->v[i].name, err);
        json[i] = config_to_json(&c);
        for (int j = 0; j < i; j++)
            if (strcmp(json[i], json[j]) == 0)
                die(EXIT_USAGE,
                    "--compare: '%s' and '%s' are the same value of %s: each variant needs a value "
                    "of its own",
                    cmp->values[j], cmp->values[i], cmp->key);
    }
    for (int i = 0; cmp && i < cmp->n; i++) free(json[i]);
}

static void set_threads(const Config *cfg) {
#ifdef _OPENMP
    if (cfg->threads > 0)
        omp_set_num_threads(cfg->threads);
    else if (dist_local_size() > 1 && !getenv("OMP_NUM_THREADS")) {
        // ranks sharing a machine share its cores: oversubscribed OpenMP threads spin and crawl
        int per_rank = omp_get_num_procs() / dist_local_size();
        omp_set_num_threads(per_rank > 0 ? per_rank : 1);
    }
#else
    (void)cfg;
#endif
}

// Errors every rank sees alike: rank 0 says it once, and all ranks exit normally. (With rank 0
// in MPI_Abort while the others finalize, Open MPI's mpirun once hung after all three processes
// had exited.)
static void check_ranks(const Config *cfg, const Args *args) {
    if (dist_size() <= 1) return;
    if (cfg->batch_size % dist_size() != 0) {
        if (dist_is_root())
            err_print("train.batch_size %d does not divide over %d ranks: use a multiple of %d or "
                      "another rank count",
                      cfg->batch_size, dist_size(), dist_size());
        dist_exit(EXIT_USAGE);
    }
    if (args->dump_path) {
        if (dist_is_root())
            err_print("--dump-state runs in one process, not under mpirun -np %d", dist_size());
        dist_exit(EXIT_USAGE);
    }
}

// Refuse before allocating when the model cannot fit in this machine's memory.
static void check_memory(const ModelDims *d, int B, int T, int n_models) {
    size_t n_params = 0, bytes = gpt_memory_bytes(d, B, T, &n_params);
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (bytes == 0)
        die(EXIT_USAGE,
            "the model (n_layer %d, n_embd %d, block_size %d, batch %d) needs more memory than can "
            "be addressed",
            d->n_layer, d->n_embd, d->block_size, B);
    double need = (double)bytes * n_models;
    if (phys > 0 && need > 0.9 * phys)
        die(EXIT_USAGE,
            "the model needs %.1f GiB of memory (%zu parameters plus activations) but this machine "
            "has %.1f GiB",
            need / 1073741824.0, n_params, phys / 1073741824.0);
}

// The text (the vocabulary of the checkpoint when resuming), or for --bench no text at all.
static void load_data(Dataset *ds, const Config *cfg, const Args *args, const Checkpoint *ck,
                      const Checkpoint *init) {
    char err[ERRLEN];
    memset(ds, 0, sizeof *ds);
    if (args->bench_steps) {
        // the benchmark trains on random tokens: no data file, and the Tiny Shakespeare
        // vocabulary size (65) so the figures compare with the reference measurements
        ds->vocab.vocab_size = BENCH_VOCAB;
        return;
    }
    int min_len = cfg->block_size + 2;
    if (!ck) ck = init;
    int ok = ck ? dataset_load_with_vocab(ds, cfg->data_path, cfg->val_fraction, min_len,
                                          &ck->vocab, err, sizeof err)
                : dataset_load(ds, cfg->data_path, cfg->val_fraction, min_len, err, sizeof err);
    if (!ok) die(EXIT_RUNTIME, "%s", err);
}

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

// ---------------------------------------------------------------------------------------------
// the session: the runs trained side by side (one, or the variants of a comparison)

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

// The runs, built, with their first weights: from the seed (every variant gets a copy) or from
// the checkpoint.
static void setup_runs(Session *s, const Config *cfg, const Args *args, const Checkpoint *resume,
                       const Checkpoint *init, const Dataset *ds) {
    char err[ERRLEN];
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->args = args;
    s->ds = ds;
    s->resume = resume;
    s->cmp_set = args->comparison;
    s->n_runs = s->cmp_set ? s->cmp_set->n : 1;
    s->vocab = resume ? &resume->vocab : &ds->vocab;
    s->writes = args->bench_steps == 0 && !args->dump_path && dist_is_root();
    if (s->writes && !ensure_dir(cfg->out_dir, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    ModelDims dims = gpt_dims(cfg, ds->vocab.vocab_size);
    int rows = cfg->batch_size / dist_size();
    for (int i = 0; i < s->n_runs; i++)
        run_setup(&s->runs[i], cfg, s->cmp_set ? &s->cmp_set->v[i] : NULL, &dims, rows);
    Run *first = &s->runs[0];
    if (resume) {
        if (!checkpoint_restore(resume, &first->model, args->resume_path, err, sizeof err))
            die(EXIT_RUNTIME, "%s", err);
        first->st = resume->state;
        first->elapsed_before = resume->state.elapsed_s;
        if (!resume->has_optimizer)
            die(EXIT_RUNTIME, "'%s' holds no optimizer state and cannot be resumed",
                args->resume_path);
    } else {
        // the same seed draws the same initial weights; in a comparison every variant gets a copy
        int scheme = strcmp(cfg->init, "fan_in") == 0 ? INIT_FAN_IN : INIT_GPT2;
        Rng init_rng;
        rng_seed(&init_rng, (uint64_t)cfg->seed);
        gpt_init(&first->model, scheme, &init_rng);
        rng_seed(&first->st.rng, (uint64_t)cfg->seed + 1);
        if (init) {  // the weights only: the optimizer starts afresh
            Checkpoint weights = *init;
            weights.has_optimizer = 0;
            if (!checkpoint_restore(&weights, &first->model, args->init_path, err, sizeof err))
                die(EXIT_RUNTIME, "%s", err);
        }
        for (int i = 1; i < s->n_runs; i++) {
            // the variant's own start (a QK-norm the first run lacks: gains 1, biases 0), then the
            // first run's weights by name (the same draws, or --init-from's)
            rng_seed(&init_rng, (uint64_t)cfg->seed);
            gpt_init(&s->runs[i].model, scheme, &init_rng);
            gpt_copy_params(&s->runs[i].model, &first->model);
            s->runs[i].st = first->st;
        }
    }
    s->start_step = first->st.step;
    s->max_steps = cfg->max_steps;
}

// Rank 0's part of claim_out_dirs: 0, or the exit code with a message in err.
static int claim_out_dirs_root(Session *s, char *err, size_t errlen) {
    const Config *cfg = s->cfg;
    const char *resume_path = s->args->resume_path;
    char found[300], ckpt_dir[2048];
    int overwrite = strcmp(cfg->overwrite, "true") == 0;
    if (!outdir_lock(cfg->out_dir, err, errlen)) return EXIT_USAGE;
    // a resumed run continues the files of the directory its checkpoint is in
    if (resume_path) dir_of(resume_path, ckpt_dir, sizeof ckpt_dir);
    int own = resume_path && outdir_same_dir(ckpt_dir, cfg->out_dir);
    if (own && !s->args->rewind) {
        // continuing an older checkpoint in its own directory would replace a later checkpoint.bin
        // and drop the logs' rows after the older step (a damaged checkpoint.bin is no later one)
        char latest[2200];
        struct stat sl, sr;
        join_path(latest, sizeof latest, ckpt_dir, "checkpoint.bin");
        Checkpoint later;
        char lerr[512];
        if (stat(latest, &sl) == 0 && stat(resume_path, &sr) == 0 &&
            (sl.st_dev != sr.st_dev || sl.st_ino != sr.st_ino) &&
            checkpoint_open(&later, latest, lerr, sizeof lerr)) {
            long at = later.state.step, from = s->resume->state.step;
            checkpoint_close(&later);
            if (at > from) {
                snprintf(err, errlen,
                         "'%.600s' is at step %ld but '%.600s' is at step %ld: resuming here would "
                         "replace it and"
                         " drop the logs' rows after step %ld; branch with "
                         "--train.out_dir=ANOTHER_DIR, or rewind on purpose"
                         " with --rewind",
                         resume_path, from, latest, at, from);
                return EXIT_USAGE;
            }
        }
    }
    // the directories this session writes: out_dir, and in a comparison each variant's too
    const char *dirs[MAX_VARIANTS + 1];
    int n_dirs = 0;
    dirs[n_dirs++] = cfg->out_dir;
    for (int i = 0; s->cmp_set && i < s->n_runs; i++) dirs[n_dirs++] = s->runs[i].dir;
    for (int d = 1; d < n_dirs; d++) {
        // a variant's directory is a directory of the comparison's own: never followed elsewhere
        struct stat st;
        if (lstat(dirs[d], &st) == 0 && !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen,
                     "'%.900s' %s: a variant writes into a directory of its own inside"
                     " '%.900s'; remove it or choose another train.out_dir",
                     dirs[d],
                     S_ISLNK(st.st_mode) ? "is a symbolic link, not a directory"
                                         : "is not a directory",
                     cfg->out_dir);
            return EXIT_USAGE;
        }
    }
    for (int d = 0; d < n_dirs; d++) {
        struct stat st;
        int exists = stat(dirs[d], &st) == 0;
        if (d > 0 && exists && !outdir_lock(dirs[d], err, errlen)) return EXIT_USAGE;
        if (own || overwrite || !exists || !outdir_run_file(dirs[d], found, sizeof found)) continue;
        char resume_it[2300] = "";
        if (resume_path)
            snprintf(err, errlen,
                     "'%.600s' holds another run (%s) than the one '%.600s' comes from: resume with"
                     " --train.out_dir=%.600s (the checkpoint's directory), or replace that run "
                     "with --train.overwrite=true",
                     dirs[d], found, resume_path, ckpt_dir);
        else {
            char ckpt[2200];
            join_path(ckpt, sizeof ckpt, dirs[d], "checkpoint.bin");
            if (!s->cmp_set && access(ckpt, F_OK) == 0)
                snprintf(resume_it, sizeof resume_it, "continue it with --resume %s, ", ckpt);
            // a directory that is free, to name exactly: DIR-2, DIR-3, ...
            char fresh[700] = "";
            for (int k = 2; k < 1000; k++) {
                struct stat fst;
                snprintf(fresh, sizeof fresh, "%.600s-%d", dirs[0], k);
                if (stat(fresh, &fst) != 0) break;
            }
            snprintf(err, errlen,
                     "'%.600s' already holds a run (%s): %.1300sgive this %s another --name or "
                     "--train.out_dir"
                     " (add --train.out_dir=%s, which is free), or replace it with "
                     "--train.overwrite=true",
                     dirs[d], found, resume_it, s->cmp_set ? "comparison" : "run", fresh);
        }
        return EXIT_USAGE;
    }
    for (int d = 0; d < n_dirs; d++) {
        if (d > 0) {
            struct stat st;
            int existed = stat(dirs[d], &st) == 0;
            if (!ensure_dir(dirs[d], err, errlen)) return EXIT_RUNTIME;
            if (!existed && !outdir_lock(dirs[d], err, errlen)) return EXIT_USAGE;
        }
        if (overwrite && !own && !outdir_clear_run(dirs[d], err, errlen)) return EXIT_USAGE;
        // a run file that is a symbolic link, a FIFO or a device is never written through
        if (!outdir_check_run_files(dirs[d], err, errlen)) return EXIT_RUNTIME;
        // with the directory locked, every temporary file in it is a killed writer's
        outdir_remove_stale_temps(dirs[d]);
    }
    return 0;
}

// The directories the session writes (out_dir, and each variant's): locked for the session's
// life, so a second trainer is refused; a new run (or a resumed one writing elsewhere than its
// checkpoint's directory) refuses one that holds another run's files unless train.overwrite is
// "true", which removes them first; temporary files that killed runs left are removed. Rank 0
// decides; on a refusal every rank exits alike.
static void claim_out_dirs(Session *s) {
    char err[4096] = "";
    int code = s->writes ? claim_out_dirs_root(s, err, sizeof err) : 0;
    code = dist_max_int(code);
    if (code) {
        if (dist_is_root()) err_print("%s", err);
        dist_exit(code);
    }
}

// The latest good checkpoint of run r: the one this process wrote last, else the one it resumed
// from. 0 when there is none.
static int latest_checkpoint(const Session *s, const Run *r, char *path, size_t n, long *step) {
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
static void note_latest_checkpoint(const Session *s) {
    char path[2200];
    long step;
    if (latest_checkpoint(s, &s->runs[0], path, sizeof path, &step))
        stop_note_latest("the latest checkpoint%s is %s (step %ld)",
                         s->n_runs > 1 ? " of the first variant" : "", path, step);
    else
        stop_note_latest("no checkpoint was written");
}

// A stop signal before training: nothing trained; exit 128 + signal.
static void stop_if_signalled(const Args *args, const char *phase) {
    int sig = stop_agreed();
    if (!sig) return;
    if (dist_is_root())
        fprintf(stderr, "train: %s during %s: nothing trained%s%s\n", stop_reason(sig), phase,
                args->resume_path ? "; unchanged: " : "",
                args->resume_path ? args->resume_path : "");
    dist_exit(stop_exit_code(sig));
}

// The batch buffers and the fixed probe batch, the logs, the comparison's log; the first lines.
static void start_training(Session *s) {
    const Config *cfg = s->cfg;
    int B = cfg->batch_size, T = cfg->block_size;
    size_t BT = (size_t)B * T;
    int **bufs[6] = {&s->b.x, &s->b.y, &s->b.ex, &s->b.ey, &s->b.px, &s->b.py};
    for (int i = 0; i < 6; i++) *bufs[i] = xmalloc(BT * sizeof(int), "batch");
    {  // the probe batch is fixed for the whole run (and identical for every variant)
        Rng probe_rng;
        rng_seed(&probe_rng, (uint64_t)cfg->seed * 7919u + 101u);
        sample_batch(s->ds, 1, &probe_rng, B, T, s->b.px, s->b.py);
    }
    for (int i = 0; i < s->n_runs; i++) {
        // the induction probe (run/induction.c), measured with the attention probe
        if (cfg->attn_interval > 0 && dist_is_root())
            s->runs[i].induction =
                induction_new(s->vocab, cfg->seed, B, T, s->runs[i].model.dims.n_layer,
                              s->runs[i].model.dims.n_head);
        run_open_logs(&s->runs[i], s->resume != NULL);
        s->skipped_before[i] = s->runs[i].st.skipped_steps;
    }
    if (s->cmp_set && dist_is_root()) {
        s->cmp = compare_log_open(cfg->out_dir, cfg->max_steps, s->cmp_set->key, s->cmp_set->values,
                                  s->cmp_set->n);
        if (!s->cmp) die(EXIT_RUNTIME, "internal: cannot start the comparison's report");
        compare_log_command(s->cmp, s->args->command);
        // the maps of report.html: the weights of the probe batch's first sequence at every probe
        s->probe_text = xmalloc((size_t)T * sizeof(uint32_t), "probe sequence");
        for (int t = 0; t < T; t++) s->probe_text[t] = s->vocab->chars[s->b.px[t]];
        for (int i = 0; i < s->n_runs; i++) run_keep_probe_weights(&s->runs[i]);
    }
    note_latest_checkpoint(s);
    // resumed between two probes: probe now (not logged), so the progress line shows the
    // attention from the first step on
    if (s->resume && cfg->attn_interval > 0 && s->start_step % cfg->attn_interval != 0 &&
        s->start_step < s->max_steps && dist_is_root())
        for (int i = 0; i < s->n_runs; i++)
            run_probe(&s->runs[i], s->b.px, s->b.py, s->start_step, 0);

    char what[128];
    if (s->cmp_set)
        snprintf(what, sizeof what, "comparing %s", s->cmp_set->what);
    else
        snprintf(what, sizeof what, "with attention scale %s", cfg->attn_scale_str);
    printf("%s %s: %zu parameters, vocab %d, %zu train / %zu val tokens, %s, init %s\n",
           s->resume ? "resuming" : "training", cfg->name, s->runs[0].model.n_params,
           s->runs[0].model.dims.vocab_size, s->ds->n_train, s->ds->n_tokens - s->ds->n_train, what,
           cfg->init);
    if (dist_size() > 1)
        printf("data-parallel over %d MPI ranks: %d of the %d rows of each batch per rank, %d "
               "threads each\n",
               dist_size(), s->runs[0].rows, B, thread_max());
    for (int i = 0; i < s->n_runs; i++)
        if (run_attention_falls_back(&s->runs[i]))
            printf("%s%sattention: the engine computes the causal softmax over keys only: the "
                   "definition (attention.c) trains"
                   " attn_mask %s, softmax_axis %s\n",
                   s->runs[i].variant ? s->runs[i].variant : "", s->runs[i].variant ? ": " : "",
                   s->runs[i].cfg.attn_mask, s->runs[i].cfg.softmax_axis);
    if (s->resume)
        printf("continuing from step %ld of %ld, writing to %s\n", s->start_step, s->max_steps,
               cfg->out_dir);
    else
        printf("writing to %s (step %ld of %ld)\n", cfg->out_dir, s->start_step, s->max_steps);
}

// Run r diverged (why): stop with exit 1, keeping its last checkpoint from finite steps (a
// diverged state is never written over it); the other variants of a comparison save theirs.
static _Noreturn void stop_diverged(Session *s, Run *r, const char *why) {
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

// Run i's last probe (after `step` updates) into the comparison's log: its statistics and the
// weights of the probe sequence.
static void log_probe(Session *s, int i, long step) {
    const Run *r = &s->runs[i];
    compare_log_probe(s->cmp, i, step, &r->probe);
    compare_log_attention(s->cmp, i, step, r->probe_P, r->model.dims.n_layer, r->model.dims.n_head,
                          s->cfg->block_size, s->probe_text);
}

// One step of every run on the same batch, as llm.c's loop has it: the next batch; for each run
// its forward, backward (which stores every gradient, so none is zeroed first) and update; then
// its evaluation and metrics row. Returns whether it evaluated.
static int step_runs(Session *s, long step) {
    const Config *cfg = s->cfg;
    long done = step + 1;
    stop_test_point("step");
    int probe = cfg->attn_interval > 0 && step % cfg->attn_interval == 0 && dist_is_root();
    int eval = cfg->eval_interval > 0 && (done % cfg->eval_interval == 0 || done == s->max_steps);
    // every rank draws the whole batch from the same stream and trains on its own rows, so
    // the ranks' rows together are exactly the batch one process would draw
    sample_batch(s->ds, 0, &s->runs[0].st.rng, cfg->batch_size, cfg->block_size, s->b.x, s->b.y);
    for (int i = 1; i < s->n_runs; i++)
        s->runs[i].st.rng = s->runs[0].st.rng;  // identical batches, in order
    int evaluated = 0;
    double segment = now_seconds() - s->wall0;
    for (int i = 0; i < s->n_runs; i++) {
        Run *r = &s->runs[i];
        size_t off = (size_t)r->row0 * r->cfg.block_size;
        const int *x = s->b.x + off, *y = s->b.y + off;
        r->st.elapsed_s = r->elapsed_before + segment;  // as best.bin records it
        if (probe) run_probe(r, s->b.px, s->b.py, step, 1);
        run_forward(r, x, y, step);
        run_backward(r);
        run_update(r, step);
        if (r->bad_streak >= r->cfg.max_bad_steps) {
            char why[128];
            snprintf(why, sizeof why, "%d consecutive steps with a non-finite loss or gradient",
                     r->bad_streak);
            stop_diverged(s, r, why);
        }
        run_evaluate_and_log(r, s->ds, &s->b, s->vocab, done, eval);
        evaluated |= r->evaluated;
        if (s->cmp) {
            if (probe) log_probe(s, i, step);
            compare_log_step(s->cmp, i, done, r->loss, r->eval_val, r->eval_gen);
            compare_log_logits(s->cmp, i, done, r->lse_mean, r->max_logit);
        }
    }
    return evaluated;
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
static void report_step(Session *s, long done, int evaluated) {
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

// Checkpoint the runs (all when `due`, else those with a postponed checkpoint). A run whose
// optimizer state is no longer finite stops as diverged.
static void checkpoint_runs(Session *s, int due) {
    double segment = now_seconds() - s->wall0;
    for (int i = 0; i < s->n_runs; i++) {
        Run *r = &s->runs[i];
        r->st.elapsed_s = r->elapsed_before + segment;
        if ((due || r->ckpt_pending) && run_checkpoint(r, s->vocab) == CKPT_NONFINITE)
            stop_diverged(s, r, "the parameters or the optimizer moments are no longer finite");
    }
    note_latest_checkpoint(s);
}

// The message of a stop in the training loop after update `done`.
static void say_stopped_training(const Session *s, int sig, long done) {
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

// The training loop, from the start step to max_steps, with checkpoints every ckpt_interval
// steps and at the end. Returns 0, or the signal that stopped it (after saving what was
// consistent).
static int train_loop(Session *s) {
    const Config *cfg = s->cfg;
    s->wall0 = now_seconds();
    for (long step = s->start_step; step < s->max_steps; step++) {
        long done = step + 1;
        int evaluated = step_runs(s, step);
        report_step(s, done, evaluated);
        checkpoint_runs(s, (cfg->ckpt_interval > 0 && done % cfg->ckpt_interval == 0) ||
                               done == s->max_steps);
        // a signal may reach the ranks at different steps: they agree on it before acting (a
        // signal during the step or the checkpoint stops here, after this step)
        int sig = stop_agreed();
        if (sig) {
            checkpoint_runs(s, 1);
            for (int i = 0; i < s->n_runs; i++) run_close_logs(&s->runs[i]);
            say_stopped_training(s, sig, done);
            return sig;
        }
    }
    return 0;
}

// A run that trained steps in this process but skipped every one of them (non-finite or
// spiking, fewer in a row than the divergence guard's limit) has learned nothing: exit 1 before
// the final evaluation, naming the checkpoint that is still the latest good one.
static void stop_if_nothing_trained(Session *s) {
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
static void say_stopped_finishing(const Session *s, int sig, const char *phase,
                                  const char *missing) {
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

// After the last step: the closing probe; every run's final evaluation and summary.json; the
// samples; then the comparison's report (which shows them); then the final lines. Returns 0, or
// the signal that cut it short (what was complete stays saved).
static int finish_runs(Session *s) {
    char err[ERRLEN];
    const Config *cfg = s->cfg;
    // the statistics after the last step close the curves
    if (cfg->attn_interval > 0 && s->max_steps % cfg->attn_interval == 0 &&
        s->start_step < s->max_steps && dist_is_root())
        for (int i = 0; i < s->n_runs; i++) {
            run_probe(&s->runs[i], s->b.px, s->b.py, s->max_steps, 1);
            if (s->cmp) log_probe(s, i, s->max_steps);
        }
    if (s->start_step >= s->max_steps)
        printf("the checkpoint is already at step %ld of %ld: nothing to train\n", s->start_step,
               s->max_steps);
    FinalLosses f[MAX_VARIANTS];
    for (int i = 0; i < s->n_runs; i++) {
        if (!run_finish(&s->runs[i], s->ds, &s->b, s->vocab, s->wall0, &f[i])) {
            int sig = stop_agreed();
            say_stopped_finishing(s, sig, "the final evaluation",
                                  s->n_runs > 1
                                      ? "the report and the unfinished variants' summary.json are"
                                      : "summary.json is");
            return sig;
        }
    }
    if (!dist_is_root()) {
        if (s->cmp) compare_log_discard(s->cmp);
        s->cmp = NULL;
        return 0;
    }
    for (int i = 0; i < s->n_runs; i++) {
        char *text = NULL;
        int done = !g_stop_signal && run_sample(&s->runs[i], s->vocab, s->cmp ? &text : NULL);
        if (s->cmp) {
            CompareFinal cf = {f[i].train_loss, f[i].val_loss, f[i].gen_loss, f[i].gen_loss_tf,
                               text};
            compare_log_final(s->cmp, i, &cf);  // copies the text
        }
        free(text);
        if (!done) {
            say_stopped_finishing(s, g_stop_signal, "sampling", s->cmp ? "the report is" : NULL);
            return g_stop_signal;
        }
    }
    char svg[64] = "";
    if (s->cmp) {
        CompareLog *cmp = s->cmp;
        s->cmp = NULL;
        snprintf(svg, sizeof svg, "%s", compare_svg_name(cmp));
        stop_test_point("report");
        if (!compare_log_finish(cmp, cfg, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        if (g_stop_signal) {  // the report is written whole; the final lines are what is left
            say_stopped_finishing(s, g_stop_signal, "the report", NULL);
            return g_stop_signal;
        }
    }
    for (int i = 0; i < s->n_runs; i++) run_print_final(&s->runs[i], f[i]);
    if (svg[0])
        printf("wrote %s/compare.csv, %s/report.md, %s/%s and %s/report.html\n", cfg->out_dir,
               cfg->out_dir, cfg->out_dir, svg, cfg->out_dir);
    return 0;
}

// Free everything (so leak checkers see a clean exit on every path).
static void release_session(Session *s) {
    for (int i = 0; i < s->n_runs; i++) run_release(&s->runs[i]);
    int *bufs[6] = {s->b.x, s->b.y, s->b.ex, s->b.ey, s->b.px, s->b.py};
    for (int i = 0; i < 6; i++) free(bufs[i]);
    if (s->cmp) compare_log_discard(s->cmp);
    s->cmp = NULL;
    free(s->probe_text);
    s->probe_text = NULL;
}

// ---------------------------------------------------------------------------------------------

int main(int argc, char **argv) {
    g_progname = "train";
    dist_init(&argc, &argv);
    // only rank 0 speaks; the other ranks' errors still reach stderr
    if (!dist_is_root() && !freopen("/dev/null", "w", stdout))
        die(EXIT_RUNTIME, "cannot redirect stdout to /dev/null");
    setvbuf(stdout, NULL, _IOLBF, 0);

    // the command line, the configuration (from the checkpoint when resuming), the data
    Args args;
    train_parse_args(argc, argv, &args);
    // a sweep (or the resume of one: --resume of its directory) runs each of its runs as a
    // ./train process of its own (run/sweep.c)
    if (args.sweep_spec || (args.resume_path && sweep_dir_is_sweep(args.resume_path))) {
        int code = sweep_main(&args, argc, argv);
        free(args.overrides);
        return code;
    }
    int training = !args.bench_steps && !args.dump_path;
    if (training)
        stop_install();  // --bench and --dump-state have nothing to save: a signal ends them
    char err[ERRLEN];
    Checkpoint ck, init_file, *resume = NULL, *init = NULL;
    if (args.resume_path) {
        if (!checkpoint_open(&ck, args.resume_path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        resume = &ck;
    }
    if (args.init_path) {
        if (!model_file_open(&init_file, args.init_path, args.vocab_text, err, sizeof err))
            die(EXIT_RUNTIME, "%s", err);
        init = &init_file;
    }
    Config cfg;
    load_config(&cfg, &args, resume);
    if (init) take_model_from(&cfg, &args, init);
    {  // the dump may not replace an input
        const char *inputs[5] = {args.resume_path, args.init_path, args.vocab_text,
                                 args.config_path, cfg.data_path};
        if (out_is_input(args.dump_path, inputs, 5, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    }
    set_threads(&cfg);
    check_ranks(&cfg, &args);
    check_variants(&cfg, args.comparison);
    int n_models = args.comparison ? args.comparison->n : 1;
    {  // refuse absurd sizes before reading any data (the vocabulary adds little; count one token)
        ModelDims lower = gpt_dims(&cfg, 1);
        check_memory(&lower, cfg.batch_size, cfg.block_size, n_models);
    }
    if (training) {
        stop_test_point("startup");
        stop_if_signalled(&args, "start-up");
    }
    Dataset ds;
    load_data(&ds, &cfg, &args, resume, init);
    ModelDims dims = gpt_dims(&cfg, ds.vocab.vocab_size);
    // with batch threads, each run also holds one gradient buffer per thread and activations for
    // the batch once more: at most as much again as the model itself for up to 8 threads
    check_memory(&dims, cfg.batch_size, cfg.block_size, n_models * (thread_max() > 1 ? 2 : 1));

    // set up the runs, then train them (or time them, or dump one step)
    Session s;
    setup_runs(&s, &cfg, &args, resume, init, &ds);
    int code = 0;
    if (args.dump_path) {
        run_dump_state(&s.runs[0], &ds, args.dump_path);
    } else if (args.bench_steps) {
        run_bench(&s.runs[0], args.bench_steps);
    } else {
        claim_out_dirs(&s);
        start_training(&s);
        stop_if_signalled(&args, "start-up");
        int sig = train_loop(&s);
        if (!sig) stop_if_nothing_trained(&s);
        if (!sig) sig = finish_runs(&s);
        if (sig) code = stop_exit_code(sig);
    }
    release_session(&s);
    free(args.overrides);
    dataset_free(&ds);
    if (resume) checkpoint_close(resume);
    if (init) checkpoint_close(init);
    return code;
}
