// base/signals.c: the programs' one way of installing their signal handlers.
#define _POSIX_C_SOURCE 200809L
#include "base/signals.h"

#include <string.h>

const int STOP_SIGNALS[STOP_SIGNALS_N] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

void signals_install(void (*handler)(int), const int *sigs, int n) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < n; i++) sigaction(sigs[i], &sa, NULL);
}
