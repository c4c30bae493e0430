// run/setup.c: ./train's set-up before any run is built: the configuration (from the file, the
// checkpoint a run resumes from or the model file it starts from, with the command line's
// overrides), the checks before training (the comparison's variants, the ranks, the memory), the
// threads, and the data.
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "run/setup.h"

#include "base/common.h"    // die, err_print, the exit codes
#include "base/dist.h"      // the ranks of a data-parallel run
#include "run/optimizer.h"  // the schedule's decay horizon
#include "run/run.h"        // RUN_ERRLEN, MAX_VARIANTS, MAX_VARIANT_OVERRIDES

#define ERRLEN      RUN_ERRLEN
#define BENCH_VOCAB 65

// The directory a path's file is in (a usage error when it does not fit in n bytes).
void dir_of(const char *path, char *dir, size_t n) {
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

void load_config(Config *cfg, const Args *a, const Checkpoint *ck) {
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
void take_model_from(Config *cfg, const Args *a, const Checkpoint *init) {
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
void check_variants(const Config *cfg, const Comparison *cmp) {
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

void set_threads(const Config *cfg) {
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
void check_ranks(const Config *cfg, const Args *args) {
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
void check_memory(const ModelDims *d, int B, int T, int n_models) {
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
void load_data(Dataset *ds, const Config *cfg, const Args *args, const Checkpoint *ck,
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
