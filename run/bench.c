// run/bench.c: --bench (make bench): the training step timed, with its phases and their FLOP
// rates, MFU against the measured FMA peak, the allreduce under MPI and the sampling speed.
#define _POSIX_C_SOURCE 200809L
#include "run/bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/common.h"     // now_seconds, thread_max, xmalloc
#include "base/dist.h"       // the ranks: their sums, barrier and rank
#include "base/rng.h"        // the batches' random tokens
#include "kernels/matmul.h"  // gemm_clock_*, gemm_ledger_*: the products' seconds; matmul_simd_path
#include "kernels/peak.h"    // the sustained FMA peak behind MFU
#include "kernels/model_engine.h"  // the attention's clock; epi_gelu, epi_times, epi_residual
#include "run/flops.h"             // the FLOPs of a step and of its phases
#include "run/generate.h"          // the sampling speed

// ---------------------------------------------------------------------------------------------
// the benchmark

// The phases of a step: the products of the forward and of the backward (the GEMM's clock), the
// attention (the engine's clock), the rest of the forward and backward, and the update (the step
// splits them: forward, backward, update).
enum {
    PHASE_MATMUL_FWD,
    PHASE_MATMUL_BWD,
    PHASE_ATTENTION,
    PHASE_OTHER,
    PHASE_OPTIMIZER,
    PHASE_COUNT
};
static const char *const phase_names[PHASE_COUNT] = {"matmul_fwd", "matmul_bwd", "attention",
                                                     "other", "optimizer"};

// CPU seconds used by the whole process (every thread); on a shared machine the timed steps' wall
// time also counts the moments the threads waited for a core, their CPU time does not.
static double process_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// One step on (x, y), its phases' seconds added to phase: the products and attention are the
// calling thread's (worker 0's when the batch is split), "other" is the rest of the forward and
// backward (the other layers, combining the workers' gradients, waiting for the other threads).
static void timed_step(Run *r, const int *x, const int *y, long step, double *phase,
                       double *mm_cpu) {
    gemm_clock_start();
    engine_attention_clock_start();
    double t0 = now_seconds();
    gemm_ledger_phase(PHASE_MATMUL_FWD);
    run_forward(r, x, y, step);
    double mm_fwd = gemm_clock_seconds(), cpu_fwd = gemm_clock_cpu_seconds();
    gemm_ledger_phase(PHASE_MATMUL_BWD);
    run_backward(r);
    double t2 = now_seconds(), mm = gemm_clock_seconds();
    mm_cpu[0] += cpu_fwd;
    mm_cpu[1] += gemm_clock_cpu_seconds() - cpu_fwd;
    run_update(r, step);
    double t3 = now_seconds();
    gemm_clock_stop();
    engine_attention_clock_stop();
    double att = engine_attention_clock_seconds();
    phase[PHASE_MATMUL_FWD] += mm_fwd;
    phase[PHASE_MATMUL_BWD] += mm - mm_fwd;
    phase[PHASE_ATTENTION] += att;
    phase[PHASE_OTHER] += t2 - t0 - mm - att;
    phase[PHASE_OPTIMIZER] += t3 - t2;
}

// What follows a product, by its epilogue (model.c's)
static const char *epilogue_name(void (*fn)(const void *, real *, size_t, int)) {
    return !fn                  ? ""
           : fn == epi_gelu     ? ", then GELU and GELU'"
           : fn == epi_times    ? ", then times GELU'"
           : fn == epi_residual ? ", then + the residual"
                                : ", then an epilogue";
}

// The step's products one by one: each kind's calls, time and rate per timed step, on the thread
// the clock ran on (its share of each product), to set beside tools/bench_gemm's rates on the same
// shapes (`--step`, and `--epilogues` for the same work)
static void print_products(int steps) {
    const GemmLedgerLine *lines;
    long unlisted;
    int n = gemm_ledger_lines(&lines, &unlisted);
    printf("the step's products one by one (this thread's share; C (M x N) of depth K):\n");
    for (int i = 0; i < n; i++) {
        const GemmLedgerLine *l = &lines[i];
        char what[96];
        snprintf(what, sizeof what, "%s %4d x %4d, K %4d%s", l->layout, l->M, l->N, l->K,
                 epilogue_name(l->epilogue));
        printf("  %-10s %-46s %3ld a step %7.3f ms %6.1f GFLOP/s\n", phase_names[l->phase], what,
               l->calls / steps, 1000.0 * l->seconds / steps,
               l->seconds > 0 ? l->flops / l->seconds / 1e9 : 0.0);
    }
    if (unlisted) printf("  (and %ld calls of further kinds)\n", unlisted / steps);
}

// tokens/s of one generation of n characters after the prompt (its last block_size characters
// the context): the default path (the KV cache, the crop past block_size), --context restart, or
// the whole window recomputed for each character
enum { GEN_DEFAULT, GEN_RESTART, GEN_RECOMPUTE };
static double sampling_rate(GPT *m, const Vocab *vocab, const int *prompt, int n_prompt, int n,
                            int path) {
    Rng rng;
    rng_seed(&rng, 7);
    double t0 = now_seconds();
    if (path == GEN_RECOMPUTE)
        generate_full_window(m, vocab, prompt, n_prompt, n, 1.0, 0, &rng, NULL);
    else
        generate_until(m, vocab, prompt, n_prompt, n, 1.0, 0,
                       path == GEN_DEFAULT ? CONTEXT_CROP : CONTEXT_RESTART, &rng, NULL, NULL);
    return n / (now_seconds() - t0);
}

// The sampling speed of a randomly initialised model of the shape, each path on the same
// characters: within the window (50 characters after a 1-character prompt: the KV cache against
// recomputing the prefix for each) and past it (50 after a block_size-character prompt: the crop
// against recomputing the window for each, and --context restart); then 500 characters after a
// 1-character prompt by the default path, as ./sample runs them.
static void print_sampling(Run *r) {
    GPT *m = &r->model;
    int V = m->dims.vocab_size, T = m->dims.block_size;
    Vocab vocab;
    vocab.vocab_size = V;
    vocab.chars = xmalloc(sizeof(uint32_t) * (size_t)V, "vocabulary");
    for (int i = 0; i < V; i++) vocab.chars[i] = 0x21 + (uint32_t)i;
    int *prompt = xmalloc(sizeof(int) * (size_t)T, "prompt");
    for (int i = 0; i < T; i++) prompt[i] = (i * 7) % V;
    double cache = sampling_rate(m, &vocab, prompt, 1, 50, GEN_DEFAULT);
    double prefix = sampling_rate(m, &vocab, prompt, 1, 50, GEN_RECOMPUTE);
    double crop = sampling_rate(m, &vocab, prompt, T, 50, GEN_DEFAULT);
    double window = sampling_rate(m, &vocab, prompt, T, 50, GEN_RECOMPUTE);
    double restart = sampling_rate(m, &vocab, prompt, T, 50, GEN_RESTART);
    double whole = sampling_rate(m, &vocab, prompt, 1, 500, GEN_DEFAULT);
    printf("sampling (block_size %d), tokens/s: 50 characters within the window: %.0f with the KV "
           "cache (the default), "
           "%.0f recomputing the prefix for each; 50 past it: %.0f with the crop (the default), "
           "%.0f recomputing the "
           "window for each, %.0f with --context restart; 500 characters from a 1-character "
           "prompt: %.0f (the default)\n",
           T, cache, prefix, crop, window, restart, whole);
    printf("sampling %s: cache=%.0f prefix=%.0f crop=%.0f window=%.0f restart=%.0f "
           "default_500=%.0f tokens_per_s\n",
           r->cfg.name, cache, prefix, crop, window, restart, whole);
    free(prompt);
    free(vocab.chars);
}

void run_bench(Run *r, int steps) {
    const Config *c = &r->cfg;
    int B = c->batch_size, T = c->block_size, V = r->model.dims.vocab_size;
    size_t BT = (size_t)B * T, local = (size_t)r->rows * T;  // this rank's share of the batch
    int *x = xmalloc(BT * sizeof(int), "batch"), *y = xmalloc(BT * sizeof(int), "batch");
    Rng rng;
    rng_seed(&rng, 12345 + (uint64_t)dist_rank());
    int warmup = 3;
    double *ms = xmalloc(sizeof(double) * (size_t)steps, "timings");
    double phase[PHASE_COUNT] = {0}, warm[PHASE_COUNT] = {0};
    double mm_cpu[2] = {0, 0},
           warm_cpu[2] = {0, 0};  // the products' thread CPU seconds, forward and backward
    // The peak is probed before and after the steps: on a shared machine the two disagree when
    // it was too busy to measure, and then no MFU is printed (fma_peak_mfu).
    FmaPeak peak_before = fma_peak_measure();
    double cpu_start = 0;
    for (int i = 0; i < warmup + steps; i++) {
        for (size_t j = 0; j < local; j++) {
            x[j] = (int)rng_below(&rng, (uint64_t)V);
            y[j] = (int)rng_below(&rng, (uint64_t)V);
        }
        if (i == warmup) {  // account the timed steps only
            r->comm_seconds = 0;
            gemm_ledger_clear();
            cpu_start = process_cpu_seconds();
        }
        timed_step(r, x, y, i, i < warmup ? warm : phase, i < warmup ? warm_cpu : mm_cpu);
        if (i >= warmup) ms[i - warmup] = r->ms;
    }
    double cpu_ms = 1000.0 * (process_cpu_seconds() - cpu_start) / steps;
    // median by insertion sort (N is small)
    for (int i = 1; i < steps; i++) {
        double v = ms[i];
        int j = i - 1;
        while (j >= 0 && ms[j] > v) {
            ms[j + 1] = ms[j];
            j--;
        }
        ms[j + 1] = v;
    }
    double median = steps % 2 ? ms[steps / 2] : 0.5 * (ms[steps / 2 - 1] + ms[steps / 2]);
    double flops = gpt_flops_per_step(&r->model, B, T);
    double gflops = flops / (median / 1000.0) / 1e9;
    FmaPeak peak_after = fma_peak_measure();
    dist_sum_double(&peak_before.gflops,
                    1);  // with MPI, the ranks' cores together (each measures its own at once)
    dist_sum_double(&peak_after.gflops, 1);
    char peak_text[256];
    double mfu = fma_peak_mfu(gflops, &peak_before, &peak_after, peak_text, sizeof peak_text);
    double total = 0;
    for (int p = 0; p < PHASE_COUNT; p++) total += phase[p];
    char workers[64];
    if (dist_size() > 1)
        snprintf(workers, sizeof workers, "%d ranks x %d threads", dist_size(), thread_max());
    else
        snprintf(workers, sizeof workers, "%d threads", thread_max());
    printf("%s: %zu params, B=%d T=%d, %.2f GFLOP/step, %s, GEMM: %s\n%s\n", c->name,
           r->model.n_params, B, T, flops / 1e9, workers, matmul_simd_path(), peak_text);
    printf("phases (ms/step):");
    for (int p = 0; p < PHASE_COUNT; p++)
        printf(" %s %.2f (%.0f%%)", phase_names[p], 1000.0 * phase[p] / steps,
               total > 0 ? 100.0 * phase[p] / total : 0.0);
    printf("\n");
    {
        // The products and attention are worker 0's (one thread's share of the rows when the
        // batch is split between threads): its FLOPs by phase (docs/PERFORMANCE.md, the FLOP
        // count: the weights' products 2 FLOPs per weight and token forward, 4 backward;
        // attention's two products over the pairs it computes, forward and backward) over its
        // time, against one thread's share of the peak.
        int n = r->model.n_workers < r->rows ? r->model.n_workers : r->rows;
        int split = n >= 2 && thread_max() >= n;
        double rows0 = split ? (double)(r->rows / n) : r->rows;
        double mat = gpt_product_flops(&r->model, rows0, T);
        double att = gpt_attention_flops(&r->model, rows0, T);
        double per_thread_peak =
            peak_before.gflops > peak_after.gflops ? peak_before.gflops : peak_after.gflops;
        per_thread_peak /= (split ? n : 1) * dist_size();
        double fs[3] = {mat, 2 * mat, att};
        printf("per thread (GFLOP/s):");
        for (int p = 0; p < 3; p++) {
            double g = phase[p] > 0 ? fs[p] * steps / phase[p] / 1e9 : 0;
            printf(" %s %.1f", phase_names[p], g);
            if (mfu >= 0) printf(" (%.0f%%)", 100 * g / per_thread_peak);
        }
        if (mfu >= 0) printf(", of a thread's share of the sustained peak, %.1f", per_thread_peak);
        printf("\n");
        // the same products over their thread CPU time: on a shared machine, without the moments
        // worker 0 waited for a core (tools/bench_gemm's `cpu` clock)
        printf("per thread, CPU time (GFLOP/s): matmul_fwd %.1f matmul_bwd %.1f\n",
               mm_cpu[0] > 0 ? mat * steps / mm_cpu[0] / 1e9 : 0,
               mm_cpu[1] > 0 ? 2 * mat * steps / mm_cpu[1] / 1e9 : 0);
    }
    print_products(steps);
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
        printf("data-parallel: %d ranks x %d rows, %d threads each; gradient allreduce of %zu "
               "floats (%.1f MB): "
               "%.2f ms/step in training, %.2f ms alone (%.2f GB/s of buffer)\n",
               dist_size(), r->rows, thread_max(), r->model.n_params, mb,
               1000.0 * r->comm_seconds / steps, 1000.0 * best, mb / 1000.0 / best);
    }
    if (dist_is_root()) print_sampling(r);
    char mfu_text[16] = "n/a";  // the machine too busy to measure the peak
    if (mfu >= 0) snprintf(mfu_text, sizeof mfu_text, "%.3f", mfu);
    printf("bench %s: ms_per_step=%.2f min=%.2f max=%.2f tokens_per_s=%.0f gflops=%.1f mfu=%s "
           "cpu_ms_per_step=%.2f\n",
           c->name, median, ms[0], ms[steps - 1], (double)BT / (median / 1000.0), gflops, mfu_text,
           cpu_ms);
    free(ms);
    free(x);
    free(y);
}
