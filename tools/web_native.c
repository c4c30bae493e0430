// tools/web_native.c: web/web_main.c's entry points driven natively, to compare the page's numbers
// with a native build of the same sources: ./web_native CONFIG STEPS prints the loss of each of
// STEPS steps of the page's training with CONFIG (a ./train config) on data/default.txt, one per
// line as "STEP LOSS" with 17 significant digits (every bit of the double). The memory file system's files are files in
// PG_DIR here.
// ./web_native CONFIG STEPS --rate WARM also prints to stderr the wall time of the steps after
// the first WARM, in steps/s (tools/bench-web.sh compares it with the module's in Chromium).
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *pg_alloc(int n);
int pg_set_text(const unsigned char *bytes, int n);
long pg_init(const char *json, int n, int compare);
int pg_step(int n);
double pg_loss(int v);
double pg_info(int v, int what);
const char *pg_message(void);

static char *slurp(const char *path, int *n) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "web_native: cannot open %s (run from the repository)\n", path); exit(1); }
    static char buf[2][1 << 22];
    static int k;
    char *b = buf[k++ & 1];
    *n = (int)fread(b, 1, sizeof buf[0] - 1, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: web_native CONFIG STEPS [--rate WARM]\n"); return 2; }
    int steps = atoi(argv[2]), nt, nc;
    int warm = argc > 4 && strcmp(argv[3], "--rate") == 0 ? atoi(argv[4]) : -1;
    const char *text = slurp("data/default.txt", &nt), *cfg = slurp(argv[1], &nc);
    if (!pg_set_text((const unsigned char *)text, nt) || !pg_init(cfg, nc, 0)) {
        fprintf(stderr, "web_native: %s\n", pg_message());
        return 1;
    }
    struct timespec t0 = {0, 0}, t1;
    for (int i = 0; i < steps; i++) {
        if (i == warm) clock_gettime(CLOCK_MONOTONIC, &t0);
        pg_step(1);
        printf("%.0f %.17g\n", pg_info(0, 2), pg_loss(0));
    }
    if (warm >= 0 && warm < steps) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        fprintf(stderr, "rate %.4f steps/s (%d steps in %.3f s)\n", (steps - warm) / s, steps - warm, s);
    }
    return 0;
}
