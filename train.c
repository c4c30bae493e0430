// train.c: the front door of ./train: main, the list of phases (the command line, the
// configuration and the checkpoint a run resumes from, the checks, the data, the runs set up), and
// the modes: training one run, or several side by side on the same batches (--compare-scaling,
// --compare), or a learning-rate sweep (--sweep, run/sweep.c); timing steps (--bench,
// run/bench.c); a debug dump (--dump-state). The training loop is here: each step the next batch,
// then for each run its forward, backward and update. The command line is read by run/args.c; the
// set-up before the runs is run/setup.c; the session of runs trained together starts and ends in
// run/session.c; one run's life (a step, evaluation, checkpoints, the finish) is in run/run.c.
#include <stdio.h>
#include <stdlib.h>

#include "base/common.h"      // die, now_seconds, thread_max
#include "base/config.h"      // Config
#include "base/data.h"        // Dataset: the text, its vocabulary, the batches
#include "base/dist.h"        // the ranks of a data-parallel run
#include "base/outfile.h"     // out_is_input: an output that would replace an input
#include "model.h"            // ModelDims, gpt_dims
#include "report/compare.h"   // the comparison's log and outputs
#include "run/args.h"         // the command line
#include "run/bench.h"        // --bench
#include "run/checkpoint.h"   // the checkpoint a run resumes from
#include "run/run.h"          // one run's life: its step, evaluation, checkpoints, finish
#include "run/safetensors.h"  // --init-from's model files
#include "run/session.h"      // the runs trained side by side: start, progress, stops, end
#include "run/setup.h"        // the configuration, the checks before training, the data
#include "run/stop.h"         // stopping on a signal
#include "run/sweep.h"        // --sweep

#define ERRLEN RUN_ERRLEN

// ---------------------------------------------------------------------------------------------
// the training loop: every run's step on the same batch, the checkpoints, the finish

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
