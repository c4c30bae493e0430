// tests/test_gemm.c: the GEMM's arithmetic contract, bit for bit, and the FMA peak behind MFU.
//
// Every element of C is one chain of multiply-adds over k in increasing order within each
// GEMM_KC-deep block, started from zero, with the blocks' sums added onto C in order
// (kernels/matmul.h). The reference below computes exactly that one element at a time with
// kernels/vec.h's scalar smadd (fused wherever the vector code fuses), so the products must match
// it in every bit: in the 16-wide, 8-wide, 4-wide and scalar builds alike (make VEC=16/8/4/0),
// whatever the tile edges and the split between threads.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/matmul.h"
#include "kernels/peak.h"
#include "base/rng.h"
#include "kernels/vec.h"
#include "test.h"

// C (M,N) = A B, or C += A B, with A(i,k) = A[i*a_rs + k*a_cs] and B(k,j) = B[k*b_rs + j*b_cs]
static void gemm_reference(real *C, const real *A, long a_rs, long a_cs, const real *B, long b_rs,
                           long b_cs, int M, int N, int K, int add) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            real c = add ? C[(long)i * N + j] : 0;
            for (int p0 = 0; p0 < K; p0 += GEMM_KC) {
                real s = 0;
                for (int k = p0; k < K && k < p0 + GEMM_KC; k++)
                    s = smadd(A[i * a_rs + k * a_cs], B[k * b_rs + j * b_cs], s);
                c = p0 == 0 && !add ? s : c + s;
            }
            C[(long)i * N + j] = c;
        }
}

static real *random_array(size_t n, Rng *rng) {
    real *a = malloc((n ? n : 1) * sizeof(real));
    for (size_t i = 0; i < n; i++) a[i] = (real)rng_normal(rng);
    return a;
}

typedef void (*GemmPart)(int, int, real *, const real *, const real *, int, int, int, MatWrite);

// Shapes with full and partial register tiles on both sides for every tile the builds use
// (6 or 12 rows, 8 to 32 columns), more than one depth block, a last partial block, one row (the
// streaming path of generation, longer than its chunk), more columns than rows (C split by
// columns between threads), and an empty depth.
static void test_gemm_is_one_fma_chain_per_element(void) {
    static const int shapes[][3] = {{131, 67, 600}, {1, 700, 300}, {40, 200, GEMM_KC}, {13, 1, 257},
                                    {2, 3, 5},      {97, 33, 1},   {5, 7, 0}};
    static const char *const names[3] = {"gemm_nn", "gemm_nt", "gemm_tn"};
    static const GemmPart parts[3] = {gemm_nn_part, gemm_nt_part, gemm_tn_part};
    Rng rng;
    rng_seed(&rng, 20);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        size_t mn = (size_t)M * N;
        real *A = random_array((size_t)M * K, &rng), *B = random_array((size_t)K * N, &rng);
        real *C0 = random_array(mn, &rng), *C = malloc(mn * sizeof(real)),
             *R = malloc(mn * sizeof(real));
        for (int op = 0; op < 3; op++)
            for (int add = 0; add < 2; add++) {
                // A(i,k) and B(k,j) as each product reads its operands
                long a_rs = op == 2 ? 1 : K, a_cs = op == 2 ? M : 1, b_rs = op == 1 ? 1 : N,
                     b_cs = op == 1 ? K : 1;
                MatWrite w = add ? MM_ADD : MM_SET;
                memcpy(R, C0, mn * sizeof(real));
                gemm_reference(R, A, a_rs, a_cs, B, b_rs, b_cs, M, N, K, add);
                // all threads at once, then three shares one after another
                memcpy(C, C0, mn * sizeof(real));
                if (op == 0)
                    gemm_nn(C, A, B, M, N, K, w);
                else if (op == 1)
                    gemm_nt(C, A, B, M, N, K, w);
                else
                    gemm_tn(C, A, B, M, N, K, w);
                CHECK_MSG(memcmp(C, R, mn * sizeof(real)) == 0,
                          "%s (%s), %d x %d x %d: not the reference's bits", names[op],
                          add ? "add" : "set", M, N, K);
                memcpy(C, C0, mn * sizeof(real));
                for (int tid = 0; tid < 3; tid++) parts[op](tid, 3, C, A, B, M, N, K, w);
                CHECK_MSG(memcmp(C, R, mn * sizeof(real)) == 0,
                          "%s (%s), %d x %d x %d in 3 shares: not the reference's bits", names[op],
                          add ? "add" : "set", M, N, K);
            }
        free(A);
        free(B);
        free(C0);
        free(C);
        free(R);
    }
}

// An epilogue that records each element it was given: it adds 1000 + the element's own number
// (its offset `at`), and counts the visits in ctx.
static void epi_mark(const void *ctx, real *c, size_t at, int n) {
    int *visits = (int *)(uintptr_t)ctx;
    for (int j = 0; j < n; j++) {
        c[j] = c[j] + (real)(1000 + (double)(at + (size_t)j));
        visits[at + (size_t)j]++;
    }
}

// With an epilogue, each element of C is the product's own bits (as the reference sums them)
// passed once through the epilogue after its last depth block, whatever the split between threads.
static void test_gemm_epilogue_sees_each_finished_element_once(void) {
    static const int shapes[][3] = {
        {131, 67, 600}, {1, 700, 300}, {40, 200, GEMM_KC}, {97, 33, 1}, {5, 7, 0}};
    Rng rng;
    rng_seed(&rng, 21);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        size_t mn = (size_t)M * N;
        real *A = random_array((size_t)M * K, &rng), *B = random_array((size_t)K * N, &rng);
        real *C0 = random_array(mn, &rng), *C = malloc(mn * sizeof(real)),
             *R = malloc(mn * sizeof(real));
        int *visits = calloc(mn, sizeof(int));
        for (int op = 0; op < 2; op++)
            for (int add = 0; add < 2; add++)
                for (int nth = 1; nth <= 3; nth += 2) {
                    long a_rs = K, a_cs = 1, b_rs = op == 1 ? 1 : N, b_cs = op == 1 ? K : 1;
                    MatWrite w = add ? MM_ADD : MM_SET;
                    memcpy(R, C0, mn * sizeof(real));
                    gemm_reference(R, A, a_rs, a_cs, B, b_rs, b_cs, M, N, K, add);
                    for (size_t i = 0; i < mn; i++) R[i] = R[i] + (real)(1000 + (double)i);
                    memcpy(C, C0, mn * sizeof(real));
                    memset(visits, 0, mn * sizeof(int));
                    GemmEpilogue e = {
                        epi_mark, visits,
                        add ? C0 : NULL};  // an operand only to prefetch: C0 is laid out like C
                    for (int tid = 0; tid < nth; tid++)
                        (op == 0 ? gemm_nn_epi_part : gemm_nt_epi_part)(tid, nth, C, A, B, M, N, K,
                                                                        w, &e);
                    int once = 1;
                    for (size_t i = 0; i < mn; i++) once &= visits[i] == 1;
                    CHECK_MSG(once,
                              "%s (%s), %d x %d x %d in %d shares: an element not given to the "
                              "epilogue once",
                              op ? "gemm_nt" : "gemm_nn", add ? "add" : "set", M, N, K, nth);
                    CHECK_MSG(memcmp(C, R, mn * sizeof(real)) == 0,
                              "%s (%s), %d x %d x %d in %d shares: "
                              "not the product's bits then the epilogue",
                              op ? "gemm_nt" : "gemm_nn", add ? "add" : "set", M, N, K, nth);
                }
        free(A);
        free(B);
        free(C0);
        free(C);
        free(R);
        free(visits);
    }
}

static void epi_nothing(const void *ctx, real *c, size_t at, int n) {
    (void)ctx;
    (void)c;
    (void)at;
    (void)n;
}

// The clock's ledger (make bench's table of the step's products): one line per phase, layout, shape
// and epilogue, in the order of the first call, each with its calls and its FLOPs (the calling
// thread's shares: all of each product here); products outside the clock are not on it, and the
// clock's restart does not empty it.
static void test_gemm_ledger_lists_each_kind_of_product_once(void) {
    enum { M = 40, N = 24, K = 30 };
    Rng rng;
    rng_seed(&rng, 5);
    real *A = random_array((size_t)M * K, &rng), *B = random_array((size_t)K * N, &rng),
         *C = malloc(sizeof(real) * M * N);
    real *D = random_array((size_t)K * N, &rng);
    GemmEpilogue e = {epi_nothing, NULL, NULL};
    gemm_ledger_clear();
    gemm_nn_part(0, 1, C, A, B, M, N, K, MM_SET);  // before the clock: not on the ledger
    gemm_clock_start();
    gemm_ledger_phase(0);
    gemm_nn_part(0, 1, C, A, B, M, N, K, MM_SET);
    gemm_nn_epi_part(0, 1, C, A, B, M, N, K, MM_SET, &e);
    gemm_clock_start();  // the next step
    gemm_nn_part(0, 1, C, A, B, M, N, K, MM_ADD);
    gemm_ledger_phase(1);
    gemm_nn_part(0, 1, C, A, B, M, N, K, MM_SET);
    gemm_nt_part(0, 1, C, A, D, M, N, K, MM_SET);  // D stored (N,K)
    gemm_tn_part(0, 1, D, A, C, K, N, M, MM_SET);  // D (K,N) = A^T C, A stored (M,K)
    gemm_nn_part(0, 1, C, A, B, 0, N, K, MM_SET);  // an empty product: no FLOPs
    gemm_clock_stop();
    gemm_nn_part(0, 1, C, A, B, M, N, K, MM_SET);  // after the clock: not on it
    const GemmLedgerLine *l;
    long unlisted;
    int n = gemm_ledger_lines(&l, &unlisted);
    const struct {
        int phase;
        const char *layout;
        int M, N, K;
        int epi;
        long calls;
    } want[] = {{0, "nn", M, N, K, 0, 2}, {0, "nn", M, N, K, 1, 1}, {1, "nn", M, N, K, 0, 1},
                {1, "nt", M, N, K, 0, 1}, {1, "tn", K, N, M, 0, 1}, {1, "nn", 0, N, K, 0, 1}};
    int nw = (int)(sizeof want / sizeof want[0]);
    CHECK_MSG(n == nw && unlisted == 0, "the ledger has %d lines (%ld calls unlisted), expected %d",
              n, unlisted, nw);
    for (int i = 0; i < n && i < nw; i++) {
        int M_ = want[i].M, N_ = want[i].N, K_ = want[i].K;
        CHECK_MSG(l[i].phase == want[i].phase && !strcmp(l[i].layout, want[i].layout) &&
                      l[i].M == M_ && l[i].N == N_ && l[i].K == K_ &&
                      (l[i].epilogue == epi_nothing) == want[i].epi && l[i].calls == want[i].calls,
                  "ledger line %d: phase %d %s %d x %d x %d, epilogue %s, %ld calls; expected "
                  "phase %d %s %d x %d x %d, %ld calls",
                  i, l[i].phase, l[i].layout, l[i].M, l[i].N, l[i].K, l[i].epilogue ? "yes" : "no",
                  l[i].calls, want[i].phase, want[i].layout, M_, N_, K_, want[i].calls);
        double flops = 2.0 * M_ * N_ * K_ * (double)want[i].calls;
        CHECK_MSG(l[i].flops == flops, "ledger line %d: %.0f FLOPs, expected %.0f", i, l[i].flops,
                  flops);
        CHECK_MSG(l[i].seconds >= 0, "ledger line %d: %g seconds", i, l[i].seconds);
    }
    gemm_ledger_clear();
    n = gemm_ledger_lines(&l, &unlisted);
    CHECK_MSG(n == 0, "the cleared ledger has %d lines", n);
    free(A);
    free(B);
    free(C);
    free(D);
}

// The build says which vector width it compiled, and it is the one kernels/vec.h chose for this
// target.
static void test_gemm_reports_its_vector_width(void) {
    int lanes = matmul_vector_lanes();
    CHECK_MSG(lanes == (VEC_BYTES ? VEC_BYTES / 4 : 1),
              "kernels/matmul.c has %d lanes, kernels/vec.h %d bytes", lanes, VEC_BYTES);
    CHECK(strstr(matmul_simd_path(), VEC_ISA) != NULL);
}

// MFU from two peak probes: the higher probe is the peak; a run faster than it, probes that
// disagree, or probes whose windows rarely reached their best (a busy machine) give no MFU.
static void test_fma_peak_mfu_is_never_above_one(void) {
    char text[256];
    FmaPeak a = {400, 0.9, 16, 2, 0.2, "avx512f"}, b = {420, 0.95, 16, 2, 0.2, "avx512f"};
    double mfu = fma_peak_mfu(210, &a, &b, text, sizeof text);
    CHECK_NEAR(mfu, 0.5, 1e-12);
    CHECK(strstr(text, "420.0") && strstr(text, "16-wide avx512f"));
    CHECK_NEAR(fma_peak_mfu(210, &b, &a, text, sizeof text), 0.5, 1e-12);
    CHECK(fma_peak_mfu(421, &a, &b, text, sizeof text) < 0);  // faster than the peak
    CHECK(strstr(text, "too busy") != NULL);
    FmaPeak slow = {62, 0.9, 16, 2, 0.2, "avx512f"};  // issue 19's probe
    CHECK(fma_peak_mfu(113, &slow, &b, text, sizeof text) < 0);
    CHECK(strstr(text, "62.0") && strstr(text, "420.0"));
    FmaPeak unsteady = {420, 0.1, 16, 2, 0.2, "avx512f"};
    CHECK(fma_peak_mfu(210, &a, &unsteady, text, sizeof text) < 0);
}

// The sustained peak from the windows' timestamps: two threads of 0.1 ms windows (1e6 FLOPs, 10
// GFLOP/s each); thread 1 is preempted from 1.0 to 3.0 ms, so its window there is left out and so
// are thread 0's windows while it was off; a thread's rate is its median counted window, so one
// window that ran faster (thread 0's 0.05 ms one at 0.5 ms) does not raise the peak; the long
// window after it counts as preempted, for thread 0 and for thread 1's windows that overlap it.
static void test_fma_peak_counts_windows_with_every_thread_busy(void) {
    enum { N0 = 40, N1 = 21 };
    double b0[N0 + 1], b1[N1 + 1];
    for (int k = 0; k <= N0; k++) b0[k] = 1e-4 * k;
    b0[6] = b0[5] + 0.5e-4;  // one fast window at 0.5 ms (and a longer next one)
    for (int k = 0; k <= 10; k++) b1[k] = 1e-4 * k;  // 0 .. 1.0 ms
    for (int k = 11; k <= N1; k++)
        b1[k] = 3e-3 + 1e-4 * (k - 11) + 1e-4;  // preempted: 1.0 .. 3.1 ms
    const double *rows[2] = {b0, b1};
    int n[2] = {N0, N1};
    double steady = 0, g = fma_peak_sustained(2, n, rows, 1e6, &steady);
    CHECK_NEAR(g, 20.0, 1e-6);
    // thread 0: windows 0-9 but 6, and 31-39 counted (18 of 40); thread 1: 0-9 but 5 and 6, and
    // 11-19 (17 of 21; its last window ends after thread 0's)
    CHECK_NEAR(steady, 18.0 / 40.0, 1e-12);
    int one[1] = {N0};
    CHECK_NEAR(fma_peak_sustained(1, one, rows, 1e6, &steady), 10.0, 1e-6);
    // a thread that never ran alongside the others: no peak
    double late[3] = {1.0, 1.0001, 1.0002};
    const double *apart[2] = {b0, late};
    int n2[2] = {N0, 2};
    CHECK(fma_peak_sustained(2, n2, apart, 1e6, &steady) == 0 && steady == 0);
}

// The probe measures the widest FMA of the machine, at least as wide as the build's own. It runs
// on one thread here: alone, a thread's median window always counts, so a busy machine cannot
// leave the probe without a measurement (with every thread, it may: then no MFU is printed, and
// the test above covers which windows count).
static void test_fma_peak_probes_the_widest_fma(void) {
#ifdef _OPENMP
    int threads_before = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    FmaPeak p = fma_peak_measure();
#ifdef _OPENMP
    omp_set_num_threads(threads_before);
#endif
    CHECK(p.threads == 1);
    CHECK_MSG(p.gflops > 0 && p.steady > 0 && p.steady <= 1, "gflops %g steady %g", p.gflops,
              p.steady);
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    int widest = __builtin_cpu_supports("avx512f")                                 ? 16
                 : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8
                                                                                   : 4;
    CHECK_MSG(p.lanes == widest, "probed %d lanes (%s), the processor has %d", p.lanes, p.isa,
              widest);
#elif defined(__aarch64__)
    CHECK(p.lanes == 4 && strcmp(p.isa, "neon") == 0);
#endif
#if defined(__AVX512F__) || (VEC_BYTES && VEC_BYTES < 64)
    CHECK_MSG(p.lanes >= matmul_vector_lanes(), "probed %d lanes, the build uses %d", p.lanes,
              matmul_vector_lanes());
#endif
}

const TestCase tests_gemm[] = {
    {"gemm_is_one_fma_chain_per_element", test_gemm_is_one_fma_chain_per_element},
    {"gemm_reports_its_vector_width", test_gemm_reports_its_vector_width},
    {"gemm_epilogue_sees_each_finished_element_once",
     test_gemm_epilogue_sees_each_finished_element_once},
    {"gemm_ledger_lists_each_kind_of_product_once",
     test_gemm_ledger_lists_each_kind_of_product_once},
    {"fma_peak_mfu_is_never_above_one", test_fma_peak_mfu_is_never_above_one},
    {"fma_peak_probes_the_widest_fma", test_fma_peak_probes_the_widest_fma},
    {"fma_peak_counts_windows_with_every_thread_busy",
     test_fma_peak_counts_windows_with_every_thread_busy},
    {NULL, NULL},
};
