// tools/bench_gemm.c: the GEMM alone on the products of one training worker (docs/PERFORMANCE.md).
// For each linear layer of W1 or W2 (qkv, attention projection, MLP up, MLP down) it times the
// forward product (gemm_nn), dinp (gemm_nt) and dweight (gemm_tn) on one worker's rows (W1: 384,
// W2: 1024, half a batch), best of REPS calls, and prints GFLOP/s per layout and overall, the
// best call's and the mean over the calls. `--rows N` times N rows instead: a one-thread step
// runs the whole batch, B*T rows (W1: 768, W2: 2048), on its one worker. `--step` times the
// step's own list of weight products: q, k and v as three C x C products (as qkv_forward computes
// them) instead of one C x 3C.
//   make tools/bench_gemm && OMP_NUM_THREADS=1 ./tools/bench_gemm W2 10 [cpu] [--rows N] [--step]
// With `cpu` each call is timed on the thread's own CPU clock instead of the wall clock: on a
// shared machine the time the thread spent descheduled is then not counted (one thread only).
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "kernels/matmul.h"

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
    int cpu = 0, rows = 0, step = 0, bad = argc < 3 || (strcmp(argv[1], "W1") && strcmp(argv[1], "W2")) || atoi(argv[2]) < 1;
    for (int i = 3; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "cpu")) cpu = 1;
        else if (!strcmp(argv[i], "--step")) step = 1;
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc && atoi(argv[i + 1]) >= 1) rows = atoi(argv[++i]);
        else bad = 1;
    }
    if (bad) {
        fprintf(stderr, "usage: bench_gemm W1|W2 REPS [cpu] [--rows N] [--step]  (N a positive row count)\n");
        return 2;
    }
    int w1 = strcmp(argv[1], "W1") == 0, reps = atoi(argv[2]);
    double (*clock)(void) = cpu ? thread_seconds : now_seconds;
    int M = rows ? rows : w1 ? 384 : 1024, C = w1 ? 128 : 384;
    // (in, out): qkv (one C x 3C, or with --step three C x C), the attention projection, the MLP's two
    const int fused[4][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
    const int split[6][2] = {{C, C}, {C, C}, {C, C}, {C, C}, {C, 4 * C}, {4 * C, C}};
    const int (*layers)[2] = step ? split : fused;
    int n_layers = step ? 6 : 4;
    static const char *const names[3] = {"nn (forward)", "nt (dinp)", "tn (dweight)"};
    double flops = 0, seconds[3] = {0, 0, 0}, mean_seconds[3] = {0, 0, 0};
    printf("%s, %d rows, GEMM: %s, best of %d calls (%s)\n", argv[1], M,
           matmul_simd_path(), reps, cpu ? "thread CPU time" : "wall time");
    for (int l = 0; l < n_layers; l++) {
        int in = layers[l][0], out = layers[l][1];
        real *x = random_matrix((size_t)M * in), *w = random_matrix((size_t)in * out);
        real *y = random_matrix((size_t)M * out), *dx = random_matrix((size_t)M * in), *dw = random_matrix((size_t)in * out);
        double f = 2.0 * M * in * out;
        printf("%4d x %4d:", in, out);
        for (int op = 0; op < 3; op++) {
            double best = 1e30, sum = 0;
            for (int r = 0; r < reps; r++) {
                double t0 = clock();
                if (op == 0) gemm_nn(y, x, w, M, out, in, MM_SET);         // y = x W
                else if (op == 1) gemm_nt(dx, y, w, M, in, out, MM_SET);   // dx = dy W^T
                else gemm_tn(dw, x, y, in, out, M, MM_SET);               // dW = x^T dy
                double t = clock() - t0;
                best = t < best ? t : best;
                sum += t;
            }
            seconds[op] += best;
            mean_seconds[op] += sum / reps;
            printf("  %s %6.1f GFLOP/s", names[op], f / best / 1e9);
        }
        printf("\n");
        flops += f;
        free(x); free(w); free(y); free(dx); free(dw);
    }
    printf("overall: nn %.1f, nt %.1f, tn %.1f, all three %.1f GFLOP/s\n", flops / seconds[0] / 1e9,
           flops / seconds[1] / 1e9, flops / seconds[2] / 1e9, 3 * flops / (seconds[0] + seconds[1] + seconds[2]) / 1e9);
    // the step's phases are totals over its calls, so their rates compare with the mean's
    printf("overall, mean of the calls: nn %.1f, nt %.1f, tn %.1f, all three %.1f GFLOP/s\n",
           flops / mean_seconds[0] / 1e9, flops / mean_seconds[1] / 1e9, flops / mean_seconds[2] / 1e9,
           3 * flops / (mean_seconds[0] + mean_seconds[1] + mean_seconds[2]) / 1e9);
    return 0;
}
