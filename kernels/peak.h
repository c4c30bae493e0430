// kernels/peak.h: the sustained FP32 FMA throughput of this machine, the ceiling MFU is reported
// against.
#ifndef PEAK_H
#define PEAK_H

#include <stddef.h>

// What a sustained stream of the widest FMA the processor has (16-wide with AVX-512, even in a
// build that uses 8-wide vectors) achieves with every OpenMP thread busy at once: independent FMA
// chains held in registers, all threads started together and kept running for the same stretch,
// each timing short back-to-back windows (kernels/peak.c says how long, and why). A thread's rate
// is its median window among those during which every other thread was running too; the peak is
// the sum of the threads' rates, and `steady` the smallest share, over the threads, of windows
// that counted (near 1 on an idle machine).
typedef struct {
    double gflops;
    double steady;
    int lanes;        // float32 lanes of the FMA probed: 16, 8, 4, or 1
    int threads;      // threads that ran the stream together
    double seconds;   // how long each of them ran it (measured part, after the warm-up)
    const char *isa;  // "avx512f", "avx2+fma", "neon", ...
} FmaPeak;
FmaPeak fma_peak_measure(void);
double fma_peak_gflops(void);  // fma_peak_measure().gflops

// The analysis behind fma_peak_measure, on the windows' timestamps: thread t ran n[t] windows of
// `flops` FLOPs each, window k from bounds[t][k] to bounds[t][k + 1] (seconds, one clock for all
// threads). A window was preempted when it took over 1.25 times its thread's median window; it
// counts when neither it nor any other thread's window running at its midpoint was preempted (and
// every other thread was running then). Returns the sum over the threads of flops over their
// median counted window, in GFLOP/s (0 when a thread has none), and the smallest share of counted
// windows in *steady.
double fma_peak_sustained(int nth, const int *n, const double *const *bounds, double flops,
                          double *steady);

// The MFU of a run at `achieved` GFLOP/s, given probes taken before and after it, with one line
// describing the peak in text. Returns -1 (and says so in text) when the machine was too busy to
// measure the peak: the probes disagree by more than 10%, either had under a quarter of its
// windows counted, or the run itself exceeded the peak. So an MFU above 1 is never returned.
double fma_peak_mfu(double achieved, const FmaPeak *before, const FmaPeak *after, char *text,
                    size_t n);

// One line for --version: the peak and how it was measured.
void fma_peak_describe(const FmaPeak *p, char *text, size_t n);

#endif
