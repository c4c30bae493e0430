// tools/web_native.c: web/web_main.c's entry points driven natively, to compare the page's numbers
// with a native build of the same sources: ./web_native CONFIG STEPS prints the loss of each of
// STEPS steps of the page's training with CONFIG (a ./train config) on data/default.txt, one per
// line as "STEP LOSS" with 17 significant digits (every bit of the double). The memory file
// system's files are files in PG_DIR here.
// ./web_native CONFIG STEPS --rate WARM also prints to stderr the wall time of the steps after
// the first WARM, in steps/s (tools/bench-web.sh compares it with the module's in Chromium).
// ./web_native CONFIG STEPS --compare EVERY [PAIR] trains the page's compare mode (the config and
// the same config with PAIR, "model.attn_scale=none" unless given, one init, the same batches)
// and every EVERY steps prints what the page shows:
// ./web_native CONFIG STEPS --induction EVERY trains the page's "induction head" preset: the text
// is data/default.txt with repeated strings mixed in as the page mixes them (pg_set_induction_text,
// 50%, seed 57), compare mode (scaled, unscaled), and every EVERY steps it prints "STEP loss
// loss_unscaled | induction in_context first_copy second_copy prev_token (scaled) | the same
// unscaled" (induction: the largest of the last layer's heads; prev_token: of layer 0's), the
// probe measured as the page measures it (pg_induction).
// "STEP loss loss_unscaled | entropy max_weight grad_gain max_logit (means over the heads, scaled)
// | the same unscaled", the statistics measured as the page measures them (pg_measure).
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *pg_alloc(int n);
int pg_set_text(const unsigned char *bytes, int n);
long pg_init(const char *json, int n, int compare);
long pg_init_pair(const char *json, int n, const char *override, int which);
int pg_step(int n);
double pg_loss(int v);
double pg_info(int v, int what);
int pg_measure(int n);
double pg_entropy(int v, int lh);
double pg_max_weight(int v, int lh);
double pg_grad_gain(int v, int lh);
double pg_max_logit(int v, int lh);
const char *pg_message(void);
int pg_set_induction_text(const unsigned char *bytes, int n, int percent, unsigned seed);
int pg_induction(int n);
double pg_induction_score(int v, int what, int lh);

static char *slurp(const char *path, int *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "web_native: cannot open %s (run from the repository)\n", path);
        exit(1);
    }
    static char buf[2][1 << 22];
    static int k;
    char *b = buf[k++ & 1];
    *n = (int)fread(b, 1, sizeof buf[0] - 1, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

// the means over the heads of variant v's statistics, as the page's curves show them
static void print_means(int v) {
    int heads = (int)(pg_info(v, 0) * pg_info(v, 1));
    double s[4] = {0, 0, 0, 0};
    for (int i = 0; i < heads; i++) {
        s[0] += pg_entropy(v, i), s[1] += pg_max_weight(v, i);
        s[2] += pg_grad_gain(v, i), s[3] += pg_max_logit(v, i);
    }
    printf(" | %.4f %.4f %.4f %.3f", s[0] / heads, s[1] / heads, s[2] / heads, s[3] / heads);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: web_native CONFIG STEPS [--rate WARM | --compare EVERY [PAIR] | "
                        "--induction EVERY]\n");
        return 2;
    }
    int steps = atoi(argv[2]), nt, nc;
    int warm = argc > 4 && strcmp(argv[3], "--rate") == 0 ? atoi(argv[4]) : -1;
    int every = argc > 4 && strcmp(argv[3], "--compare") == 0 ? atoi(argv[4]) : 0;
    int ind_every = argc > 4 && strcmp(argv[3], "--induction") == 0 ? atoi(argv[4]) : 0;
    const char *text = slurp("data/default.txt", &nt), *cfg = slurp(argv[1], &nc);
    const char *pair = every > 0       ? (argc > 5 ? argv[5] : "model.attn_scale=none")
                       : ind_every > 0 ? "model.attn_scale=none"
                                       : NULL;
    int have_text = ind_every > 0
                        ? pg_set_induction_text((const unsigned char *)text, nt, 50, 57) > 0
                        : pg_set_text((const unsigned char *)text, nt);
    if (!have_text || !pg_init_pair(cfg, nc, pair, -1)) {
        fprintf(stderr, "web_native: %s\n", pg_message());
        return 1;
    }
    struct timespec t0 = {0, 0}, t1;
    for (int i = 0; i < steps; i++) {
        if (i == warm) clock_gettime(CLOCK_MONOTONIC, &t0);
        if (ind_every > 0) {
            pg_step(2);
            if ((i + 1) % ind_every) continue;
            pg_induction(2);
            printf("%.0f %.9g %.9g", pg_info(0, 2), pg_loss(0), pg_loss(1));
            for (int v = 0; v < 2; v++) {
                printf(" |");
                static const int order[5] = {
                    5, 4, 2, 3, 6};  // induction, in-context, first, second, prev_token
                for (int k = 0; k < 5; k++) printf(" %.9g", pg_induction_score(v, order[k], 0));
            }
            printf("\n");
            fflush(stdout);
            continue;
        }
        if (every > 0) {
            pg_step(2);
            if ((i + 1) % every) continue;
            pg_measure(2);
            printf("%.0f %.4f %.4f", pg_info(0, 2), pg_loss(0), pg_loss(1));
            print_means(0), print_means(1);
            printf("\n");
            fflush(stdout);
            continue;
        }
        pg_step(1);
        printf("%.0f %.17g\n", pg_info(0, 2), pg_loss(0));
    }
    if (warm >= 0 && warm < steps) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        fprintf(stderr, "rate %.4f steps/s (%d steps in %.3f s)\n", (steps - warm) / s,
                steps - warm, s);
    }
    return 0;
}
