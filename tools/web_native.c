// tools/web_native.c: web/web_main.c's entry points driven natively, to compare the page's numbers
// with a native build of the same sources: ./web_native STEPS prints the loss of each step of the
// default preset (4 layers, 4 heads, 128 wide, block 64, batch 12, lr 1e-3, seed 1337, scale
// 1/sqrt(d)) on data/default.txt, one per line with 9 significant digits. ./web_native STEPS
// --rate WARM also prints to stderr the wall time of the steps after the first WARM, in steps/s
// (tools/bench-web.sh compares it with the module's in Chromium).
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *pg_alloc(int n);
int pg_set_text(const unsigned char *bytes, int n, int block);
long pg_init(int n_layer, int n_head, int n_embd, int block, int batch, double learning_rate, unsigned seed,
             double scale0, double scale1, int mask, int axis);
int pg_step(int n);
double pg_loss(int v);
const char *pg_message(void);

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 50;
    int warm = argc > 3 && strcmp(argv[2], "--rate") == 0 ? atoi(argv[3]) : -1;
    FILE *f = fopen("data/default.txt", "rb");
    if (!f) { fprintf(stderr, "web_native: cannot open data/default.txt (run from the repository)\n"); return 1; }
    static unsigned char buf[1 << 22];
    int n = (int)fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (!pg_set_text(buf, n, 64) || !pg_init(4, 4, 128, 64, 12, 1e-3, 1337, -1, 1, 0, 0)) {
        fprintf(stderr, "web_native: %s\n", pg_message());
        return 1;
    }
    struct timespec t0 = {0, 0}, t1;
    for (int i = 0; i < steps; i++) {
        if (i == warm) clock_gettime(CLOCK_MONOTONIC, &t0);
        pg_step(1);
        printf("%d %.9g\n", i + 1, pg_loss(0));
    }
    if (warm >= 0 && warm < steps) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        fprintf(stderr, "rate %.4f steps/s (%d steps in %.3f s)\n", (steps - warm) / s, steps - warm, s);
    }
    return 0;
}
