// run/stop.h: stopping ./train on a signal. SIGINT, SIGTERM, SIGHUP and SIGPIPE (stdout closed, as
// in
// `./train | head`) ask it to stop at the next consistent point: the end of a step, an
// evaluation batch, a sampled character. It saves what is consistent and exits with 128 + the
// signal (130, 143, 129, 141). A second SIGINT stops at once without saving, printing one line
// that names the latest checkpoint.
#ifndef STOP_H
#define STOP_H

#include <signal.h>

// The first stop signal received, 0 while none.
extern volatile sig_atomic_t g_stop_signal;

void stop_install(void);
// The stop signal as every MPI rank agrees on it (the largest of the ranks'), 0 = go on. A
// collective call under MPI: every rank calls it at the same points.
int stop_agreed(void);
// What a second Ctrl-C prints after "stopped without saving; ": e.g. "the latest checkpoint is
// out/x/checkpoint.bin (step 40)". Called from the main thread after every checkpoint.
void stop_note_latest(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
// How the stop is told: "interrupted" (SIGINT), "terminated" (SIGTERM), "hung up (SIGHUP)",
// "output closed (SIGPIPE)".
const char *stop_reason(int sig);
static inline int stop_exit_code(int sig) { return 128 + sig; }

// Test builds only (build/train-test, -DTGPT_TEST_HOOKS): TGPT_TEST_SIGNAL="NAME:PHASE:N[:TIMES]"
// raises SIGNAME (INT, TERM, HUP or PIPE), TIMES times (default 1), the Nth time the trainer
// enters PHASE ("startup", "step", "eval", "checkpoint", "final-eval", "report", "sample"), so
// the tests can stop it in any phase at a known point. Nothing of it is in the shipped ./train.
#ifdef TGPT_TEST_HOOKS
void stop_test_point(const char *phase);
#else
#define stop_test_point(phase) ((void)0)
#endif

#endif
