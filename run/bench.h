// run/bench.h: --bench, the training step timed by phase.
#ifndef RUN_BENCH_H
#define RUN_BENCH_H

#include "run/run.h"  // Run: the step that is timed

// Time `steps` training steps (after 3 untimed ones) of run r on random tokens and print the
// phases, the FLOP rates, MFU, the allreduce under MPI and the sampling speed.
void run_bench(Run *r, int steps);

#endif
