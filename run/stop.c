// run/stop.c: stopping ./train on a signal (see run/stop.h).
#define _POSIX_C_SOURCE 200809L
#include "run/stop.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/dist.h"
#include "base/outfile.h"
#include "base/signals.h"  // signals_install

volatile sig_atomic_t g_stop_signal = 0;

// The line a second Ctrl-C prints, double-buffered: the main thread writes the buffer not in use
// and then switches `g_latest_buf`, so the handler always reads a complete line.
static char g_latest[2][2304];
static volatile sig_atomic_t g_latest_buf = 0;

static void on_signal(int sig) {
    if (g_stop_signal && sig == SIGINT) {
        // only async-signal-safe calls here: write, unlink, _exit
        const char *line = g_latest[g_latest_buf];
        ssize_t ignored = write(STDERR_FILENO, line, strlen(line));
        (void)ignored;
        out_remove_temps_now();
        _exit(130);
    }
    if (!g_stop_signal) g_stop_signal = sig;  // the first signal decides the exit code
}

void stop_install(void) {
    stop_note_latest("no checkpoint was written");
    signals_install(on_signal, STOP_SIGNALS, STOP_SIGNALS_N);
}

int stop_agreed(void) { return dist_max_int((int)g_stop_signal); }

void stop_note_latest(const char *fmt, ...) {
    int next = !g_latest_buf;
    char what[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(g_latest[next], sizeof g_latest[next],
             "\ntrain: stopped by a second Ctrl-C without saving; %s\n", what);
    g_latest_buf = next;
}

const char *stop_reason(int sig) {
    switch (sig) {
    case SIGINT:
        return "interrupted";
    case SIGTERM:
        return "terminated";
    case SIGHUP:
        return "hung up (SIGHUP)";
    case SIGPIPE:
        return "output closed (SIGPIPE)";
    default:
        return "stopped";
    }
}

#ifdef TGPT_TEST_HOOKS
void stop_test_point(const char *phase) {
    const char *spec = getenv("TGPT_TEST_SIGNAL");
    char name[8], at[32];
    int n = 0, times = 1;
    if (!spec || sscanf(spec, "%7[A-Z]:%31[a-z-]:%d:%d", name, at, &n, &times) < 3 ||
        strcmp(at, phase) != 0)
        return;
    static int seen = 0;  // entries into the named phase so far
    if (++seen != n) return;
    int sig = strcmp(name, "INT") == 0    ? SIGINT
              : strcmp(name, "TERM") == 0 ? SIGTERM
              : strcmp(name, "HUP") == 0  ? SIGHUP
              : strcmp(name, "PIPE") == 0 ? SIGPIPE
                                          : 0;
    for (int i = 0; sig && i < times; i++) raise(sig);
}
#endif
