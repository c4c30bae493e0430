// tools/bench_gemm.c: the GEMM alone on the products of one training worker (docs/PERFORMANCE.md).
// For each linear layer of W1 or W2 (qkv, attention projection, MLP up, MLP down) it times the
// forward product (gemm_nn), dinp (gemm_nt) and dweight (gemm_tn) on one worker's rows (W1: 384,
// W2: 1024, half a batch), best of REPS calls, and prints GFLOP/s per layout and overall, the
// best call's and the mean over the calls (each shape's under its best). `--rows N` times N rows
// instead: a one-thread step runs the whole batch, B*T rows (W1: 768, W2: 2048), on its one
// worker. `--step` times the step's own list of weight products: q, k and v as three C x C
// products (as qkv_forward computes them) instead of one C x 3C. `--epilogues` runs each product
// with the epilogue the step fuses into it (model.h): the residual added after the attention and
// MLP projections, GELU and GELU' after W_fc, GELU' multiplied into the MLP projection's dinp;
// their arithmetic is then in the times, as it is in the step's phases. `--cold` writes over 64 MB
// between calls, so every call finds its operands in memory instead of in the caches.
//   make tools/bench_gemm && OMP_NUM_THREADS=1 ./tools/bench_gemm W2 10 [cpu] [--rows N] [--step]
//   [--epilogues] [--cold]
// With `cpu` each call is timed on the thread's own CPU clock instead of the wall clock: on a
// shared machine the time the thread spent descheduled is then not counted (one thread only).
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "kernels/matmul.h"
#include "kernels/model_engine.h"

static double thread_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static real *random_matrix(size_t n) {
    real *p = xmalloc_aligned(n * sizeof(real), "matrix");
    for (size_t i = 0; i < n; i++) p[i] = (real)((rand() % 2001) - 1000) / 1000;
    return p;
}

int main(int argc, char **argv) {
    int cpu = 0, rows = 0, step = 0, epilogues = 0, cold = 0,
        bad = argc < 3 || (strcmp(argv[1], "W1") && strcmp(argv[1], "W2")) || atoi(argv[2]) < 1;
    for (int i = 3; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "cpu"))
            cpu = 1;
        else if (!strcmp(argv[i], "--step"))
            step = 1;
        else if (!strcmp(argv[i], "--epilogues"))
            epilogues = 1;
        else if (!strcmp(argv[i], "--cold"))
            cold = 1;
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc && atoi(argv[i + 1]) >= 1)
            rows = atoi(argv[++i]);
        else
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "usage: bench_gemm W1|W2 REPS [cpu] [--rows N] [--step] [--epilogues] "
                        "[--cold]  (N a positive row count)\n");
        return 2;
    }
    int w1 = strcmp(argv[1], "W1") == 0, reps = atoi(argv[2]);
    double (*clock)(void) = cpu ? thread_seconds : now_seconds;
    int M = rows ? rows : w1 ? 384 : 1024, C = w1 ? 128 : 384;
    // (in, out) and the epilogues the step fuses into the forward product and into dinp: qkv (one
    // C x 3C, or with --step three C x C), the attention projection, the MLP's two
    enum { NONE, RESIDUAL, GELU, TIMES };
    typedef struct {
        int in, out, fwd_epi, dinp_epi;
    } Layer;
    const Layer fused[4] = {{C, 3 * C, NONE, NONE},
                            {C, C, RESIDUAL, NONE},
                            {C, 4 * C, GELU, NONE},
                            {4 * C, C, RESIDUAL, TIMES}};
    const Layer split[6] = {{C, C, NONE, NONE},     {C, C, NONE, NONE},
                            {C, C, NONE, NONE},     {C, C, RESIDUAL, NONE},
                            {C, 4 * C, GELU, NONE}, {4 * C, C, RESIDUAL, TIMES}};
    const Layer *layers = step ? split : fused;
    int n_layers = step ? 6 : 4;
    static const char *const names[3] = {"nn (forward)", "nt (dinp)", "tn (dweight)"};
    // --cold: a buffer larger than the caches, written over before each call
    size_t evict_n = cold ? ((size_t)64 << 20) / sizeof(float) : 0;
    float *evict = cold ? xmalloc_aligned(evict_n * sizeof(float), "eviction buffer") : NULL;
    double flops = 0, seconds[3] = {0, 0, 0}, mean_seconds[3] = {0, 0, 0};
    printf("%s, %d rows, GEMM: %s, best of %d calls (%s)%s%s\n", argv[1], M, matmul_simd_path(),
           reps, cpu ? "thread CPU time" : "wall time",
           epilogues ? ", with the step's epilogues" : "",
           cold ? ", caches evicted before each call" : "");
    for (int l = 0; l < n_layers; l++) {
        int in = layers[l].in, out = layers[l].out;
        real *x = random_matrix((size_t)M * in), *w = random_matrix((size_t)in * out);
        real *y = random_matrix((size_t)M * out), *dx = random_matrix((size_t)M * in),
             *dw = random_matrix((size_t)in * out);
        // the epilogues' operands: the residual stream (M, out), GELU's output (M, out), GELU' (M,
        // in)
        real *fwd_operand = random_matrix((size_t)M * out),
             *dinp_operand = random_matrix((size_t)M * in);
        GeluOut gelu_out = {fwd_operand};
        GemmEpilogue fwd = {layers[l].fwd_epi == GELU ? epi_gelu : epi_residual,
                            layers[l].fwd_epi == GELU ? (const void *)&gelu_out : fwd_operand,
                            fwd_operand};
        GemmEpilogue dinp = {epi_times, dinp_operand, dinp_operand};
        const GemmEpilogue *fwd_epi = epilogues && layers[l].fwd_epi != NONE ? &fwd : NULL;
        const GemmEpilogue *dinp_epi = epilogues && layers[l].dinp_epi != NONE ? &dinp : NULL;
        double f = 2.0 * M * in * out;
        printf("%4d x %4d:", in, out);
        double shape_mean[3];
        for (int op = 0; op < 3; op++) {
            double best = 1e30, sum = 0;
            // one untimed call first: the program's first product allocates the thread's packing
            // buffers (a few MB of page faults), which no call of a training step pays
            for (int r = -1; r < reps; r++) {
                for (size_t i = 0; i < evict_n; i += 16) evict[i] += 1;  // one write per cache line
                double t0 = clock();
                if (op == 0)
                    linear_forward_epi(y, x, w, M, in, out, fwd_epi);  // y = x W
                else if (op == 1)                                      // dx = dy W^T
                    linear_backward_epi(dx, NULL, y, x, w, M, in, out, GRAD_STORE, GRAD_STORE,
                                        dinp_epi);
                else
                    gemm_tn(dw, x, y, in, out, M, MM_SET);  // dW = x^T dy
                double t = clock() - t0;
                if (r < 0) continue;
                best = t < best ? t : best;
                sum += t;
            }
            seconds[op] += best;
            mean_seconds[op] += sum / reps;
            shape_mean[op] = f / (sum / reps) / 1e9;
            printf("  %s %6.1f GFLOP/s", names[op], f / best / 1e9);
        }
        // the mean of the calls under each best (make bench's table of the step's products is a
        // mean)
        printf("\n %11s %21.1f %26.1f %29.1f  (mean of the calls)\n", "", shape_mean[0],
               shape_mean[1], shape_mean[2]);
        flops += f;
        free(x);
        free(w);
        free(y);
        free(dx);
        free(dw);
        free(fwd_operand);
        free(dinp_operand);
    }
    printf("overall: nn %.1f, nt %.1f, tn %.1f, all three %.1f GFLOP/s\n", flops / seconds[0] / 1e9,
           flops / seconds[1] / 1e9, flops / seconds[2] / 1e9,
           3 * flops / (seconds[0] + seconds[1] + seconds[2]) / 1e9);
    // the step's phases are totals over its calls, so their rates compare with the mean's
    printf("overall, mean of the calls: nn %.1f, nt %.1f, tn %.1f, all three %.1f GFLOP/s\n",
           flops / mean_seconds[0] / 1e9, flops / mean_seconds[1] / 1e9,
           flops / mean_seconds[2] / 1e9,
           3 * flops / (mean_seconds[0] + mean_seconds[1] + mean_seconds[2]) / 1e9);
    free(evict);
    return 0;
}
