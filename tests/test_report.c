// tests/test_report.c: compare.csv, report.md and scaling.svg from synthetic comparison logs.
#define _POSIX_C_SOURCE 200809L
#include "../config.h"
#include "../report.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ----------------------------------------------------------------------------
// helpers

static char g_dir[64];

static int tmp_setup(void) {
    snprintf(g_dir, sizeof(g_dir), "/tmp/test_report_XXXXXX");
    return mkdtemp(g_dir) != NULL;
}

static void tmp_cleanup(void) {
    static const char *const names[] = {"compare.csv", "report.md", "scaling.svg"};
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof(path), "%s/%s", g_dir, names[i]);
        unlink(path);
    }
    rmdir(g_dir);
}

// The whole of DIR/name as a string (malloc'd), or NULL.
static char *slurp(const char *name) {
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        if (n + 1024 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static int count_substr(const char *s, const char *sub) {
    int n = 0;
    size_t len = strlen(sub);
    for (const char *p = strstr(s, sub); p; p = strstr(p + len, sub)) n++;
    return n;
}

static HeadStats stats(double en, double mw, double f99, double ds_dp, double row_gain, double gq) {
    HeadStats h;
    memset(&h, 0, sizeof(h));
    h.entropy = 2 * en;
    h.entropy_norm = en;
    h.max_weight = mw;
    h.frac_gt_090 = f99 + 0.0625;
    h.frac_gt_099 = f99;
    h.score_std = 0.5 + mw;
    h.score_absmax = 3 + mw;
    h.gnorm_wq = gq;
    h.gnorm_wk = 2 * gq;
    h.gnorm_wv = 3 * gq;
    h.gnorm_wo = 4 * gq;
    h.ds_over_dp = ds_dp;
    h.row_gain_median = row_gain;
    h.loss = 4.25;
    return h;
}

static void small_config(Config *cfg) {
    config_defaults(cfg);
    snprintf(cfg->name, sizeof(cfg->name), "synthetic");
    cfg->n_layer = 2;
    cfg->n_head = 2;
    cfg->n_embd = 16;
    cfg->max_steps = 10;
    cfg->attn_interval = 5;
    cfg->eval_interval = 5;
}

#define N_STEPS 10

// Feed a 10-step run in train.c's order: probes at 0, 5 and 10, validation at 5 and 10.
// Scaled: loss 3.0 - 0.1 s, val 2.55 / 2.10, final val 2.05. Unscaled: when scaled_wins, loss
// 3.1 - 0.05 s, val 2.90 / 2.65, final 2.65 (gap 0.600); otherwise loss 2.9 - 0.12 s, val
// 2.40 / 1.85, final 1.80 (gap 0.250 the other way).
static int run_synthetic(int scaled_wins, char *err, size_t errlen) {
    Config cfg;
    small_config(&cfg);
    CompareLog *log = compare_log_open(g_dir, N_STEPS);
    if (!log) return 0;
    HeadStats p0[2] = {stats(0.95, 0.15, 0.0, 0.3, 0.25, 0.01), stats(0.60, 0.55, 0.125, 0.05, 0.0025, 0.012)};
    HeadStats p5[2] = {stats(0.80, 0.30, 0.0, 0.2, 0.15, 0.02), stats(0.40, 0.70, 0.25, 0.04, 0.002, 0.03)};
    HeadStats p10[2] = {stats(0.70, 0.40, 0.0625, 0.15, 0.1, 0.03), stats(0.35, 0.75, 0.375, 0.03, 0.001, 0.05)};
    for (long step = 0; step < N_STEPS; step++) {
        if (step % 5 == 0)
            for (int v = 0; v < 2; v++) compare_log_probe(log, v, step, step == 0 ? &p0[v] : &p5[v]);
        long done = step + 1;
        double s_loss = 3.0 - 0.1 * (double)done;
        double u_loss = scaled_wins ? 3.1 - 0.05 * (double)done : 2.9 - 0.12 * (double)done;
        double s_val = done == 5 ? 2.55 : done == 10 ? 2.10 : NAN;
        double u_val = done == 5 ? (scaled_wins ? 2.90 : 2.40) : done == 10 ? (scaled_wins ? 2.65 : 1.85) : NAN;
        compare_log_step(log, 0, done, s_loss, s_val);
        compare_log_step(log, 1, done, u_loss, u_val);
    }
    for (int v = 0; v < 2; v++) compare_log_probe(log, v, N_STEPS, &p10[v]);
    compare_log_final(log, 0, 2.0, 2.05);
    compare_log_final(log, 1, scaled_wins ? 2.6 : 1.75, scaled_wins ? 2.65 : 1.80);
    return compare_log_finish(log, &cfg, err, errlen);
}

// Split one CSV line (no quoting) into fields, keeping empty ones. Returns the field count.
static int split_csv(char *line, char **fields, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        if (n < max) fields[n] = p;
        n++;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

static const char *const CSV_HEADER =
    "step,variant,loss,val_loss,entropy_norm,max_weight,frac_gt_0.9,frac_gt_0.99,score_std,"
    "gnorm_wq,gnorm_wk,gnorm_wv,gnorm_wo,ds_over_dp,row_gain_median";

// ----------------------------------------------------------------------------
// tests

static void test_csv_layout_and_values(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    char err[256] = "";
    CHECK_MSG(run_synthetic(1, err, sizeof(err)), "%s", err);
    char *csv = slurp("compare.csv");
    CHECK(csv != NULL);
    if (!csv) { tmp_cleanup(); return; }
    char *save = NULL;
    char *line = strtok_r(csv, "\n", &save);
    CHECK(line && strcmp(line, CSV_HEADER) == 0);
    int row = 0;
    long prev_step = -1;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        char *f[20];
        int nf = split_csv(line, f, 20);
        CHECK_MSG(nf == 15, "row %d has %d fields", row, nf);
        if (nf != 15) { row++; continue; }
        long step = strtol(f[0], NULL, 10);
        const char *want_variant = row % 2 == 0 ? "scaled" : "unscaled";
        CHECK_MSG(strcmp(f[1], want_variant) == 0, "row %d: variant %s", row, f[1]);
        CHECK_MSG(step == row / 2, "row %d: step %ld", row, step);
        CHECK(step >= prev_step);
        prev_step = step;
        int probed = step % 5 == 0;
        // loss: empty only at step 0
        if (step == 0) CHECK_MSG(f[2][0] == '\0', "loss at step 0: '%s'", f[2]);
        else CHECK_MSG(f[2][0] != '\0', "no loss at step %ld", step);
        // val_loss: only at 5 and 10
        if (step == 5 || step == 10) CHECK_MSG(f[3][0] != '\0', "no val at step %ld", step);
        else CHECK_MSG(f[3][0] == '\0', "val at step %ld: '%s'", step, f[3]);
        // attention columns: only where probed
        for (int i = 4; i < 15; i++) {
            if (probed) CHECK_MSG(f[i][0] != '\0', "step %ld column %d empty", step, i);
            else CHECK_MSG(f[i][0] == '\0', "step %ld column %d: '%s'", step, i, f[i]);
        }
        // round trips
        if (step == 3 && row % 2 == 0) CHECK_NEAR(strtod(f[2], NULL), 2.7, 1e-6);
        if (step == 3 && row % 2 == 1) CHECK_NEAR(strtod(f[2], NULL), 2.95, 1e-6);
        if (step == 5 && row % 2 == 1) CHECK_NEAR(strtod(f[3], NULL), 2.90, 1e-6);
        if (step == 0 && row % 2 == 1) {
            CHECK_NEAR(strtod(f[4], NULL), 0.60, 1e-6);   // entropy_norm
            CHECK_NEAR(strtod(f[5], NULL), 0.55, 1e-6);   // max_weight
            CHECK_NEAR(strtod(f[6], NULL), 0.1875, 1e-6); // frac_gt_0.9
            CHECK_NEAR(strtod(f[7], NULL), 0.125, 1e-6);  // frac_gt_0.99
            CHECK_NEAR(strtod(f[8], NULL), 1.05, 1e-6);   // score_std
            CHECK_NEAR(strtod(f[9], NULL), 0.012, 1e-9);  // gnorm_wq
            CHECK_NEAR(strtod(f[12], NULL), 0.048, 1e-9); // gnorm_wo
            CHECK_NEAR(strtod(f[13], NULL), 0.05, 1e-9);  // ds_over_dp
            CHECK_NEAR(strtod(f[14], NULL), 0.0025, 1e-9); // row_gain_median
        }
        if (step == 10 && row % 2 == 0) CHECK_NEAR(strtod(f[14], NULL), 0.1, 1e-9);
        row++;
    }
    CHECK_MSG(row == 2 * (N_STEPS + 1), "%d rows", row);
    free(csv);
    tmp_cleanup();
}

static void check_common_md(const char *md) {
    CHECK(strncmp(md, "# ", 2) == 0);
    CHECK(strstr(md, "synthetic") != NULL);
    CHECK(strstr(md, "| step | val loss | train loss |") != NULL);
    CHECK(strstr(md, "| 0 (init) |") != NULL);
    CHECK(strstr(md, "| 5 |") != NULL);
    CHECK(strstr(md, "| 10 (end) |") != NULL);
    CHECK(strstr(md, "| 2 | 2 | 16 | 8 |") != NULL);   // n_layer, n_head, n_embd, head_dim
    CHECK(strstr(md, "## What the numbers show") != NULL);
    // step 0 peakedness and gradient survival, from the synthetic numbers
    CHECK(strstr(md, "0.950 scaled vs 0.600 unscaled") != NULL);
    CHECK(strstr(md, "12.5% of unscaled rows") != NULL);
    CHECK(strstr(md, "6.0 times less of the gradient survives") != NULL);
    CHECK(strstr(md, "100 times less gradient survives the softmax per row") != NULL);
    // ||dWq||: 0.012 vs 0.01 at step 0 (about the same), 0.05 vs 0.03 at the end (larger)
    CHECK(strstr(md, "about the same at step 0") != NULL);
    CHECK(strstr(md, "larger at step 10") != NULL);
    CHECK(strstr(md, "scaling.svg") != NULL);
    CHECK(strstr(md, "scaled/attention.csv") != NULL);
    CHECK(strstr(md, "unscaled/attention.csv") != NULL);
}

static void test_md_scaled_wins(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    char err[256] = "";
    CHECK_MSG(run_synthetic(1, err, sizeof(err)), "%s", err);
    char *md = slurp("report.md");
    CHECK(md != NULL);
    if (md) {
        check_common_md(md);
        CHECK(strstr(md, "Scaled attention ends ahead") != NULL);
        CHECK(strstr(md, "Unscaled attention ends ahead") == NULL);
        CHECK(strstr(md, "2.0500 scaled vs 2.6500 unscaled") != NULL);
        CHECK(strstr(md, "lower by 0.600") != NULL);
        CHECK(strstr(md, "first exceeded 0.05 at step 5 (scaled ahead by 0.350") != NULL);
        CHECK(strstr(md, "| 10 (end) | 2.0500 / 2.6500 |") != NULL);  // whole-split val at the end
        CHECK(strstr(md, "| 5 | 2.5500 / 2.9000 |") != NULL);         // evaluated val at step 5
    }
    free(md);
    tmp_cleanup();
}

static void test_md_unscaled_wins(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    char err[256] = "";
    CHECK_MSG(run_synthetic(0, err, sizeof(err)), "%s", err);
    char *md = slurp("report.md");
    CHECK(md != NULL);
    if (md) {
        check_common_md(md);
        CHECK(strstr(md, "Unscaled attention ends ahead") != NULL);
        CHECK(strstr(md, "Scaled attention ends ahead") == NULL);
        CHECK(strstr(md, "2.0500 scaled vs 1.8000 unscaled") != NULL);
        CHECK(strstr(md, "lower by 0.250") != NULL);
        CHECK(strstr(md, "did not hurt") != NULL);
        CHECK(strstr(md, "first exceeded 0.05 at step 5 (unscaled ahead by 0.150") != NULL);
    }
    free(md);
    tmp_cleanup();
}

static void test_svg(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    char err[256] = "";
    CHECK_MSG(run_synthetic(1, err, sizeof(err)), "%s", err);
    char *svg = slurp("scaling.svg");
    CHECK(svg != NULL);
    if (svg) {
        size_t n = strlen(svg);
        while (n > 0 && (svg[n - 1] == '\n' || svg[n - 1] == ' ')) svg[--n] = '\0';
        CHECK(strncmp(svg, "<svg", 4) == 0);
        CHECK(n >= 6 && strcmp(svg + n - 6, "</svg>") == 0);
        CHECK(strstr(svg, "(a) Loss") != NULL);
        CHECK(strstr(svg, "(b) Normalised attention entropy") != NULL);
        CHECK(strstr(svg, "(c) Mean max attention weight") != NULL);
        CHECK(strstr(svg, "(d) Gradient surviving the softmax") != NULL);
        CHECK(strstr(svg, ">1e-3<") != NULL);  // log decades: data spans 0.001 .. 0.3
        CHECK(strstr(svg, ">1e-1<") != NULL);
        CHECK(strstr(svg, "scaled (") != NULL);
        CHECK(strstr(svg, "unscaled (") != NULL);
        CHECK(strstr(svg, ">step<") != NULL);
        CHECK(strstr(svg, "synthetic") != NULL);
        CHECK(strstr(svg, "no data") == NULL);
        CHECK(strstr(svg, "<script") == NULL);
        CHECK(strstr(svg, "href") == NULL);
        CHECK(strstr(svg, "sans-serif") != NULL);
        CHECK(strstr(svg, "nan") == NULL && strstr(svg, "inf") == NULL);
        CHECK_MSG(count_substr(svg, "<g") == count_substr(svg, "</g>"), "unbalanced <g>: %d vs %d",
                  count_substr(svg, "<g"), count_substr(svg, "</g>"));
    }
    free(svg);
    tmp_cleanup();
}

// Without probes (log.attn_interval = 0) and with a NaN loss: the files are still written, the
// attention panels say "no data", and the CSV shows the non-finite loss.
static void test_no_probes(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Config cfg;
    small_config(&cfg);
    cfg.attn_interval = 0;
    CompareLog *log = compare_log_open(g_dir, 4);
    for (long s = 1; s <= 4; s++) {
        compare_log_step(log, 0, s, 3.0 - 0.1 * (double)s, s == 4 ? 2.5 : NAN);
        compare_log_step(log, 1, s, s == 2 ? NAN : 3.0 - 0.05 * (double)s, s == 4 ? 2.8 : NAN);
    }
    compare_log_final(log, 0, 2.6, 2.55);
    compare_log_final(log, 1, 2.8, 2.85);
    char err[256] = "";
    CHECK_MSG(compare_log_finish(log, &cfg, err, sizeof(err)), "%s", err);
    char *csv = slurp("compare.csv"), *md = slurp("report.md"), *svg = slurp("scaling.svg");
    CHECK(csv && md && svg);
    if (csv) {
        CHECK(count_substr(csv, "\n") == 1 + 8);
        CHECK(strstr(csv, "\n1,scaled,2.9,,,,,,,,,,,,\n") != NULL);
        CHECK(strstr(csv, "\n2,unscaled,nan,,") != NULL);
        CHECK(strstr(csv, "\n4,unscaled,2.8,2.8,") != NULL);
    }
    if (md) {
        CHECK(strstr(md, "No attention probes") != NULL);
        CHECK(strstr(md, "Scaled attention ends ahead") != NULL);
        CHECK(strstr(md, "lower by 0.300") != NULL);
    }
    if (svg) CHECK(count_substr(svg, "no data") == 3);
    free(csv);
    free(md);
    free(svg);
    tmp_cleanup();
}

// Records that arrive out of order are sorted; a repeated step keeps the last record.
static void test_unordered_input(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Config cfg;
    small_config(&cfg);
    CompareLog *log = compare_log_open(g_dir, 3);
    HeadStats h = stats(0.5, 0.5, 0.1, 0.1, 0.01, 0.01);
    compare_log_step(log, 1, 2, 2.0, NAN);
    compare_log_step(log, 0, 3, 1.5, NAN);
    compare_log_step(log, 0, 1, 2.5, NAN);
    compare_log_step(log, 0, 1, 2.25, NAN);  // replaces the 2.5
    compare_log_probe(log, 1, 0, &h);
    char err[256] = "";
    CHECK_MSG(compare_log_finish(log, &cfg, err, sizeof(err)), "%s", err);
    char *csv = slurp("compare.csv");
    CHECK(csv != NULL);
    if (csv) {
        const char *body = strchr(csv, '\n');
        CHECK(body && strncmp(body + 1, "0,unscaled,,,0.5,", 17) == 0);
        const char *a = strstr(csv, "\n1,scaled,2.25,"), *b = strstr(csv, "\n2,unscaled,2,"),
                   *c = strstr(csv, "\n3,scaled,1.5,");
        CHECK(a && b && c && a < b && b < c);
        CHECK(strstr(csv, "2.5,") == NULL);
        CHECK(count_substr(csv, "\n") == 5);
    }
    free(csv);
    tmp_cleanup();
}

// An unwritable output directory: 0 and a one-line message naming the file.
static void test_io_error(void) {
    Config cfg;
    small_config(&cfg);
    CompareLog *log = compare_log_open("/nonexistent_test_report_dir/sub", 2);
    compare_log_step(log, 0, 1, 2.0, NAN);
    compare_log_step(log, 1, 1, 2.1, NAN);
    char err[256] = "";
    CHECK(!compare_log_finish(log, &cfg, err, sizeof(err)));
    CHECK_MSG(strstr(err, "compare.csv") != NULL, "%s", err);
    CHECK(strchr(err, '\n') == NULL);
}

const TestCase tests_report[] = {
    {"report_csv_layout_and_values", test_csv_layout_and_values},
    {"report_md_scaled_wins", test_md_scaled_wins},
    {"report_md_unscaled_wins", test_md_unscaled_wins},
    {"report_svg", test_svg},
    {"report_no_probes", test_no_probes},
    {"report_unordered_input", test_unordered_input},
    {"report_io_error", test_io_error},
    {NULL, NULL},
};
