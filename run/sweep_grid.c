// run/sweep_grid.c: the grid of --sweep and the learning-rate sensitivity (see run/sweep.h):
// no I/O, so the tests call it directly.
#define _POSIX_C_SOURCE 200809L
#include "run/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"  // refuse

int sweep_parse(const char *spec, SweepGrid *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    const char *eq = strchr(spec, '=');
    size_t klen = eq ? (size_t)(eq - spec) : strlen(spec);
    static const char *const SHAPE_KEYS[] = {"model.n_layer", "model.n_head", "model.n_embd", "model.block_size", NULL};
    for (int i = 0; SHAPE_KEYS[i]; i++)
        if (strlen(SHAPE_KEYS[i]) == klen && strncmp(spec, SHAPE_KEYS[i], klen) == 0)
            return refuse(err, errlen, "--sweep %.*s: it changes a tensor's shape, and every run of a sweep starts from"
                          " the same weights: sweep train.lr (--sweep train.lr=A..B/N)", (int)klen, spec);
    if (klen != 8 || strncmp(spec, "train.lr", 8) != 0 || !eq)
        return refuse(err, errlen, "--sweep expects train.lr=A..B/N (N log-spaced learning rates from A to B), got '%s'", spec);
    snprintf(g->key, sizeof g->key, "train.lr");
    const char *p = eq + 1, *dots = strstr(p, ".."), *slash = dots ? strchr(dots + 2, '/') : NULL;
    if (!dots || !slash)
        return refuse(err, errlen, "--sweep expects train.lr=A..B/N, e.g. train.lr=1e-3..1e-1/5, got '%s'", spec);
    char a[64], b[64], n[32];
    if ((size_t)(dots - p) >= sizeof a || (size_t)(slash - dots - 2) >= sizeof b || strlen(slash + 1) >= sizeof n)
        return refuse(err, errlen, "--sweep: '%s' is too long for train.lr=A..B/N", spec);
    snprintf(a, sizeof a, "%.*s", (int)(dots - p), p);
    snprintf(b, sizeof b, "%.*s", (int)(slash - dots - 2), dots + 2);
    snprintf(n, sizeof n, "%s", slash + 1);
    char *end1, *end2, *end3;
    g->lo = strtod(a, &end1);
    g->hi = strtod(b, &end2);
    long cnt = strtol(n, &end3, 10);
    if (!a[0] || *end1 || !b[0] || *end2 || !isfinite(g->lo) || !isfinite(g->hi) || g->lo <= 0 || g->hi <= 0)
        return refuse(err, errlen, "--sweep %s: A and B must be learning rates > 0 (finite numbers)", spec);
    if (g->lo >= g->hi)
        return refuse(err, errlen, "--sweep %s: the range must go up, A < B (got %g..%g)", spec, g->lo, g->hi);
    if (!n[0] || *end3 || cnt < 2 || cnt > SWEEP_MAX_RUNS)
        return refuse(err, errlen, "--sweep %s: N must be a whole number of points from 2 to %d, got '%s'", spec,
                      SWEEP_MAX_RUNS, n);
    g->n = (int)cnt;
    return 1;
}

// lr_i = A (B/A)^(i/(N-1)): equal steps in log lr
double sweep_lr(const SweepGrid *g, int i) {
    if (i == 0) return g->lo;
    if (i == g->n - 1) return g->hi;
    return g->lo * pow(g->hi / g->lo, (double)i / (double)(g->n - 1));
}

// S = (1/N) sum_i min(L_i, L_0) - min_i L_i, a diverged run's L_i taken as L_0
double sweep_sensitivity(const double *loss, int n, double loss0) {
    double sum = 0, best = INFINITY;
    for (int i = 0; i < n; i++) {
        double l = isfinite(loss[i]) && loss[i] < loss0 ? loss[i] : loss0;
        sum += l;
        if (l < best) best = l;
    }
    return n > 0 ? sum / n - best : NAN;
}

