// base/signals.h: the programs' one way of installing their signal handlers (base/signals.c).
#ifndef BASE_SIGNALS_H
#define BASE_SIGNALS_H

#include <signal.h>

// The signals that stop ./train and a sweep: SIGINT, SIGTERM, SIGHUP and SIGPIPE (stdout closed).
#define STOP_SIGNALS_N 4
extern const int STOP_SIGNALS[STOP_SIGNALS_N];

// handler for each of the n signals sigs, with no signal blocked while it runs and no flags (an
// interrupted system call returns EINTR).
void signals_install(void (*handler)(int), const int *sigs, int n);

#endif
