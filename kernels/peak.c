// kernels/peak.c: the sustained FMA peak (kernels/peak.h): every thread streams the widest FMA at
// once.
//
// How long, and why that is representative: the threads start together after a barrier and each
// runs back-to-back windows of independent FMA chains (50,000 rounds, about a tenth of a
// millisecond) for PROBE_WARMUP + PROBE_SECONDS, 30 ms + 200 ms. A training step keeps every core
// on the same wide FMAs for its whole length (a W1 step about ten milliseconds, a W2 step about
// half a second, a run minutes), and a core's clock under that load, with its neighbours equally
// loaded, is lower than with the neighbours idle or in the first instants of the load (the wide
// units' frequency licence and the package's power limit settle within milliseconds). The warm-up
// is not counted; the 200 ms after it run at the clock the products themselves get. The windows
// stay short so that on a shared machine a descheduling spoils a few windows rather than the whole
// measurement: a window that was preempted, or that ran while another thread was preempted (when
// this one may have run at a one-busy-core clock), is left out, and each thread's rate is its
// median counted window, not its fastest (the fastest windows are the moments a core briefly ran
// above what it sustains).
#include "kernels/peak.h"
#include "kernels/vec.h"
#include "base/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define PROBE_ITERS       50000L
#define PROBE_WARMUP      0.03
#define PROBE_SECONDS     0.2
#define PROBE_MAX_WINDOWS 20000
#define PROBE_CHAINS      12

// The chains start from different values: identical chains would be merged into one by the
// compiler, which then times one FMA's latency and reports a peak the core never reaches. 12
// chains cover the FMA latency times the FMA pipes of current x86 cores (4 cycles x 2); ARM cores
// with four pipes get 16.
#define FMA_WINDOW_BODY(V, SET1, FMA, ADD, LANES, CHAINS)                                          \
    V acc[CHAINS];                                                                                 \
    for (int c = 0; c < CHAINS; c++) acc[c] = SET1(1.0f + 0.01f * (float)c);                       \
    const V mul = SET1(0.999999f), add = SET1(1e-7f);                                              \
    for (long i = 0; i < iters; i++) {                                                             \
        _Pragma("GCC unroll 16") for (int c = 0; c < CHAINS; c++) acc[c] = FMA(acc[c], mul, add);  \
    }                                                                                              \
    V s = acc[0];                                                                                  \
    for (int c = 1; c < CHAINS; c++) s = ADD(s, acc[c]);                                           \
    float lanes[LANES];                                                                            \
    memcpy(lanes, &s, sizeof lanes);                                                               \
    *sink += lanes[0];                                                                             \
    return (double)iters * CHAINS * LANES * 2;

typedef double (*FmaWindow)(long iters,
                            volatile float *sink);  // runs one window, returns its FLOPs

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__)
__attribute__((target("avx512f")))
#endif
static double
fma_window_avx512(long iters, volatile float *sink) {
    FMA_WINDOW_BODY(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, 16, PROBE_CHAINS)
}
#if defined(__GNUC__)
__attribute__((target("avx2,fma")))
#endif
static double
fma_window_avx2(long iters, volatile float *sink) {
    FMA_WINDOW_BODY(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, 8, PROBE_CHAINS)
}
// no FMA: a multiply and an add, 2 FLOPs as well
static inline __m128 sse_madd(__m128 a, __m128 b, __m128 c) {
    return _mm_add_ps(_mm_mul_ps(a, b), c);
}
static double fma_window_sse(long iters, volatile float *sink) {
    FMA_WINDOW_BODY(__m128, _mm_set1_ps, sse_madd, _mm_add_ps, 4, PROBE_CHAINS)
}
#elif defined(__aarch64__) && defined(__ARM_NEON)
static inline float32x4_t neon_fma(float32x4_t a, float32x4_t b, float32x4_t c) {
    return vfmaq_f32(c, a, b);
}
static double fma_window_neon(long iters, volatile float *sink) {
    FMA_WINDOW_BODY(float32x4_t, vdupq_n_f32, neon_fma, vaddq_f32, 4, 16)
}
#else
static inline float scalar_madd(float a, float b, float c) { return a * b + c; }
static inline float scalar_add(float a, float b) { return a + b; }
static inline float scalar_set1(float x) { return x; }
static double fma_window_scalar(long iters, volatile float *sink) {
    FMA_WINDOW_BODY(float, scalar_set1, scalar_madd, scalar_add, 1, 16)
}
#endif

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// the median of v[0..n) (sorts v)
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// the window of thread j's bounds b (n windows) that contains time t, or -1
static int window_at(const double *b, int n, double t) {
    if (n <= 0 || t < b[0] || t >= b[n]) return -1;
    int lo = 0, hi = n;  // b[lo] <= t < b[hi]
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (b[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

double fma_peak_sustained(int nth, const int *n, const double *const *bounds, double flops,
                          double *steady) {
    int most = 1;
    for (int t = 0; t < nth; t++) most = n[t] > most ? n[t] : most;
    double *d = xmalloc(sizeof(double) * (size_t)most, "FMA probe windows");
    double *limit = xmalloc(sizeof(double) * (size_t)nth, "FMA probe windows");
    for (int t = 0; t < nth; t++) {  // a window longer than this was preempted
        for (int k = 0; k < n[t]; k++) d[k] = bounds[t][k + 1] - bounds[t][k];
        limit[t] = n[t] > 0 ? 1.25 * median(d, n[t]) : 0;
    }
    double total = 0, share = 1;
    for (int t = 0; t < nth; t++) {
        int counted = 0;
        for (int k = 0; k < n[t]; k++) {
            double dt = bounds[t][k + 1] - bounds[t][k], mid = bounds[t][k] + 0.5 * dt;
            int ok = dt <= limit[t];
            for (int j = 0; j < nth && ok; j++) {
                if (j == t) continue;
                int w = window_at(bounds[j], n[j], mid);
                ok = w >= 0 && bounds[j][w + 1] - bounds[j][w] <= limit[j];
            }
            if (ok) d[counted++] = dt;
        }
        if (counted == 0) {
            total = 0;
            share = 0;
            break;
        }
        total += flops / median(d, counted) / 1e9;
        share = (double)counted / n[t] < share ? (double)counted / n[t] : share;
    }
    free(d);
    free(limit);
    *steady = share;
    return total;
}

// One stream of every thread together (the header of this file); fma_peak_measure repeats it.
static FmaPeak stream_once(void) {
    FmaPeak p = {0, 1, 1, 1, PROBE_SECONDS, "scalar"};
    FmaWindow window;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        window = fma_window_avx512;
        p.lanes = 16;
        p.isa = "avx512f";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        window = fma_window_avx2;
        p.lanes = 8;
        p.isa = "avx2+fma";
    } else {
        window = fma_window_sse;
        p.lanes = 4;
        p.isa = "sse, no fma";
    }
#elif defined(__aarch64__) && defined(__ARM_NEON)
    window = fma_window_neon;
    p.lanes = 4;
    p.isa = "neon";
#else
    window = fma_window_scalar;
#endif
    int nth = thread_max();
    double *bounds =
        xmalloc(sizeof(double) * (size_t)nth * (PROBE_MAX_WINDOWS + 1), "FMA probe windows");
    int *n = xcalloc((size_t)nth, sizeof(int), "FMA probe windows");
    double flops = 0, t_start = 0;
#pragma omp parallel num_threads(nth)
    {
        int t = thread_index();
        volatile float sink = 0;
        double *b = bounds + (size_t)t * (PROBE_MAX_WINDOWS + 1);
        double f = window(PROBE_ITERS / 10, &sink);  // the code and the vector unit warm
#ifdef _OPENMP  // without OpenMP the region is one thread (and gcc's -fopenmp-simd warns on single)
#pragma omp single
#endif
        t_start = now_seconds();  // the barrier at the end of single starts every thread together
        double t_count = t_start + PROBE_WARMUP, t_end = t_count + PROBE_SECONDS,
               now = now_seconds();
        while (now < t_count) {
            window(PROBE_ITERS, &sink);
            now = now_seconds();
        }
        int k = 0;
        b[0] = now;
        while (k < PROBE_MAX_WINDOWS && now < t_end) {
            f = window(PROBE_ITERS, &sink);
            b[++k] = now = now_seconds();
        }
        n[t] = k;
#pragma omp masked
        flops = f;
    }
    const double **rows = xmalloc(sizeof(double *) * (size_t)nth, "FMA probe windows");
    for (int t = 0; t < nth; t++) rows[t] = bounds + (size_t)t * (PROBE_MAX_WINDOWS + 1);
    p.gflops = fma_peak_sustained(nth, n, rows, flops, &p.steady);
    p.threads = nth;
    free(rows);
    free(n);
    free(bounds);
    return p;
}

// On a shared machine one thread can lose its core for most of a stream, and then few windows,
// or none, ran with every thread busy: the stream is run again, up to three times, until half of
// each thread's windows counted, and the stream with the most counted is kept.
FmaPeak fma_peak_measure(void) {
    FmaPeak best = stream_once();
    for (int attempt = 1; attempt < 3 && best.steady < 0.5; attempt++) {
        FmaPeak p = stream_once();
        if (p.steady > best.steady) best = p;
    }
    return best;
}

double fma_peak_gflops(void) { return fma_peak_measure().gflops; }

double fma_peak_mfu(double achieved, const FmaPeak *before, const FmaPeak *after, char *text,
                    size_t n) {
    const FmaPeak *hi = after->gflops > before->gflops ? after : before;
    const FmaPeak *lo = hi == after ? before : after;
    // Busy: the two probes disagree, too few windows counted, or the steps ran faster than the
    // "peak" (a probe that lost its cores); then no MFU is worth printing.
    int busy = lo->gflops < 0.9 * hi->gflops || lo->steady < 0.25 || hi->steady < 0.25 ||
               achieved > hi->gflops;
    if (busy) {
        snprintf(
            text, n,
            "FMA peak not measured: the machine was too busy (probes before and after the steps "
            "read %.1f and %.1f GFLOP/s, %.0f%% and %.0f%% of their windows counted)",
            before->gflops, after->gflops, 100 * before->steady, 100 * after->steady);
        return -1;
    }
    snprintf(
        text, n,
        "FMA peak %.1f GFLOP/s sustained (%d-wide %s, %d threads streaming together for %.1f s; "
        "probes before and after the steps %.1f and %.1f)",
        hi->gflops, hi->lanes, hi->isa, hi->threads, hi->seconds, before->gflops, after->gflops);
    return achieved / hi->gflops;
}

void fma_peak_describe(const FmaPeak *p, char *text, size_t n) {
    snprintf(text, n,
             "%.1f GFLOP/s sustained (%d-wide %s FMA, %d threads streaming together for %.1f s, "
             "%.0f%% of the windows counted)",
             p->gflops, p->lanes, p->isa, p->threads, p->seconds, 100 * p->steady);
}
