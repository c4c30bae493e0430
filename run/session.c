// run/session.c: a training session's start and end: the runs built with their first weights,
// the output directories claimed, the batch buffers, logs and first lines, and everything freed.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/session.h"

#include "base/common.h"  // die, err_print, xmalloc, thread_max
#include "base/dist.h"    // the ranks of a data-parallel run
#include "base/rng.h"     // the initial weights' and the probe batch's draws
#include "model.h"        // gpt_dims, gpt_init, gpt_copy_params
#include "run/outdir.h"   // claiming the output directories
#include "run/setup.h"    // dir_of: the checkpoint's directory

#define ERRLEN RUN_ERRLEN

// The runs, built, with their first weights: from the seed (every variant gets a copy) or from
// the checkpoint.
void setup_runs(Session *s, const Config *cfg, const Args *args, const Checkpoint *resume,
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
void claim_out_dirs(Session *s) {
    char err[4096] = "";
    int code = s->writes ? claim_out_dirs_root(s, err, sizeof err) : 0;
    code = dist_max_int(code);
    if (code) {
        if (dist_is_root()) err_print("%s", err);
        dist_exit(code);
    }
}

// The batch buffers and the fixed probe batch, the logs, the comparison's log; the first lines.
void start_training(Session *s) {
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

// Free everything (so leak checkers see a clean exit on every path).
void release_session(Session *s) {
    for (int i = 0; i < s->n_runs; i++) run_release(&s->runs[i]);
    int *bufs[6] = {s->b.x, s->b.y, s->b.ex, s->b.ey, s->b.px, s->b.py};
    for (int i = 0; i < 6; i++) free(bufs[i]);
    if (s->cmp) compare_log_discard(s->cmp);
    s->cmp = NULL;
    free(s->probe_text);
    s->probe_text = NULL;
}
