// tests/test_bench_context.c: make bench-context's outputs from rows made here (the benchmark
// itself takes minutes and is never run by the tests): the chart's two panel titles each lie
// inside their own panel (no overlap, nothing clipped at the right edge), and a noisy
// measurement (a windowed step slower than the full one, a negative growth exponent) is flagged,
// a clean one not.
#define main bench_context_main  // the tool's own main is not the runner's
#include "../tools/bench_context.c"
#undef main

#include "test.h"

// Rows for T = 64 .. 512 at 4096 tokens per step: full attention growing, the window cheaper.
static int clean_rows(Row *full, Row *win) {
    int n = 0;
    for (int T = 64; T <= 512; T *= 2, n++) {
        full[n] = (Row){T, 4096 / T, 0, 10.0 * T / 64, 1.0 * T / 64, 100 + T / 8.0, 1};
        win[n] = full[n];
        win[n].window = 128;
        if (T > 128) win[n].ms = full[n].ms * 0.6;
    }
    return n;
}

static int flagged(const Row *full, const Row *win, int n, const Options *o, char *buf,
                   size_t len) {
    FILE *f = tmpfile();
    int k = write_noise(f, full, win, n, o);
    rewind(f);
    size_t got = fread(buf, 1, len - 1, f);
    buf[got] = 0;
    fclose(f);
    return k;
}

static void test_bench_context_noise_flagged(void) {
    Row full[MAX_ROWS], win[MAX_ROWS];
    Options o = {"./train", "configs/bench_context.json", "x", 10, 4096, 64, 512, 128};
    int n = clean_rows(full, win);
    char buf[4096];
    CHECK_MSG(flagged(full, win, n, &o, buf, sizeof buf) == 0 && buf[0] == 0,
              "a clean run flagged: %s", buf);
    win[3].ms = full[3].ms * 1.2;  // T = 512: the window slower than full attention
    CHECK_MSG(flagged(full, win, n, &o, buf, sizeof buf) == 1 &&
                  strstr(buf, "noisy: T=512: the window of 128 keys"),
              "%s", buf);
    win[3].ms = full[3].ms * 0.6;
    full[2].ms = full[1].ms * 0.9;  // T = 256 faster than T = 128: a negative exponent
    int k = flagged(full, win, n, &o, buf, sizeof buf);
    CHECK_MSG(k >= 1 && strstr(buf, "noisy: T=256, full: growth exponent -") &&
                  strstr(buf, "rerun with more --steps"),
              "%d flagged: %s", k, buf);
}

// The <text class="title"> elements of the chart: x, font size and text; each must fit, at 0.6 em
// a character, between its panel's left edge and its right edge.
static void test_bench_context_titles_fit(void) {
    Row full[MAX_ROWS], win[MAX_ROWS];
    Options o = {"./train", "configs/bench_context.json", "x", 10, 4096, 64, 512, 128};
    int n = clean_rows(full, win);
    FILE *f = tmpfile();
    write_svg(f, full, win, n, &o);
    long size = ftell(f);
    rewind(f);
    char *svg = calloc((size_t)size + 1, 1);
    CHECK(fread(svg, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    double width = 0, panel_w;
    CHECK(sscanf(strstr(svg, "width=\""), "width=\"%lf\"", &width) == 1);
    panel_w = width / 2;
    int titles = 0;
    for (const char *p = strstr(svg, "<text class=\"title\""); p;
         p = strstr(p + 1, "<text class=\"title\"")) {
        double x, y, fs;
        const char *gt = strchr(p, '>'), *end = gt ? strstr(gt, "</text>") : NULL;
        CHECK(gt && end &&
              sscanf(p, "<text class=\"title\" x=\"%lf\" y=\"%lf\" font-size=\"%lf\"", &x, &y,
                     &fs) == 3);
        if (!gt || !end) break;
        int chars = (int)(end - gt - 1), panel = (int)(x / panel_w);
        double right = x + 0.6 * fs * chars;
        CHECK_MSG(right <= (panel + 1) * panel_w - 4,
                  "title '%.*s' (panel %d) reaches x = %.0f, the panel ends at %.0f", chars, gt + 1,
                  panel, right, (panel + 1) * panel_w);
        titles++;
    }
    CHECK_MSG(titles == 4, "%d title lines, expected 2 per panel", titles);
    free(svg);
}

const TestCase tests_bench_context[] = {
    {"bench_context_noise_flagged", test_bench_context_noise_flagged},
    {"bench_context_titles_fit", test_bench_context_titles_fit},
    {NULL, NULL},
};
