// tests/test_report.c: compare.csv, report.md and the SVG panels from synthetic comparison logs
// of 2 to 4 variants: the scale (--compare-scaling), a leak (attn_mask, softmax_axis) and any
// other key.
#define _POSIX_C_SOURCE 200809L
#include "report/attention_map.h"
#include "base/config.h"
#include "report/compare.h"
#include "page_check.h"
#include "test.h"
#include "run/probe.h"

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
    static const char *const names[] = {"compare.csv", "report.md", "scaling.svg", "compare.svg",
                                        "report.html"};
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof(path), "%s/%s", g_dir, names[i]);
        unlink(path);
    }
    rmdir(g_dir);
}

// The whole of a file as a string (malloc'd), or NULL.
static char *slurp_path(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) break;
        if (n + 1024 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
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

// The whole of DIR/name as a string (malloc'd), or NULL.
static char *slurp(const char *name) {
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    return slurp_path(path);
}

static int count_substr(const char *s, const char *sub) {
    int n = 0;
    size_t len = strlen(sub);
    for (const char *p = strstr(s, sub); p; p = strstr(p + len, sub)) n++;
    return n;
}

// The line of md that starts with `start` (a copy, malloc'd), or NULL: the readings are one
// bullet per line, so checks on a variant's bullet look only there.
static char *line_starting(const char *md, const char *start) {
    size_t n = strlen(start);
    for (const char *p = md; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, start, n) != 0) continue;
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *line = malloc(len + 1);
        if (!line) return NULL;
        memcpy(line, p, len);
        line[len] = '\0';
        return line;
    }
    return NULL;
}

static int has(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

// Whether DIR/name exists.
static int exists(const char *name) {
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    return access(path, F_OK) == 0;
}

// Whether every element of an XML text is closed in order (comments and declarations skipped).
static int xml_balanced(const char *s) {
    char stack[64][32];
    int depth = 0;
    for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<')) {
        if (p[1] == '?' || p[1] == '!') continue;
        int closing = p[1] == '/';
        const char *name = p + 1 + closing;
        size_t len = strcspn(name, " \t\n/>");
        const char *gt = strchr(p, '>');
        if (!gt || len == 0 || len >= sizeof stack[0]) return 0;
        if (closing) {
            if (depth == 0 || strlen(stack[depth - 1]) != len ||
                strncmp(stack[depth - 1], name, len) != 0)
                return 0;
            depth--;
        } else if (gt[-1] != '/') {
            if (depth == 64) return 0;
            memcpy(stack[depth], name, len);
            stack[depth++][len] = '\0';
        }
    }
    return depth == 0;
}

// The number of drawn curves (path elements) with a colour.
static int paths_in_colour(const char *svg, const char *colour) {
    char attr[64];
    snprintf(attr, sizeof attr, "fill=\"none\" stroke=\"%s\"", colour);
    return count_substr(svg, attr);
}

static const char *const COLOURS[4] = {"#1f66b0", "#e0620d", "#2a9d3c", "#8e44ad"};

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
    h.max_logit = 2 + mw;
    h.mean_max_logit = 1 + mw;
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

static const char *const SCALE_VALUES[2] = {"sqrt", "none"};

// The probe sequence's attention weights for report.html: L = 2 layers of NH = 2 heads over
// T = 6 characters. In variant v at `step`, row t puts a = min(0.3 + 0.06 step + 0.1 v, 0.95)
// on its own key and spreads the rest evenly over the other keys it sees: those before it, or
// (leaky) every other key; a row with no other key puts 1 on its own.
#define MAP_L  2
#define MAP_NH 2
#define MAP_T  6
static const uint32_t MAP_TEXT[MAP_T] = {'h', 'i', ' ', 'y', 'o', '\n'};

static void synthetic_P(real *P, int T, int v, long step, int leaky) {
    double a = fmin(0.3 + 0.06 * (double)step + 0.1 * v, 0.95);
    for (int lh = 0; lh < MAP_L * MAP_NH; lh++)
        for (int t = 0; t < T; t++) {
            int others = leaky ? T - 1 : t;
            for (int u = 0; u < T; u++) {
                double w = u == t ? (others ? a : 1) : (leaky || u < t) ? (1 - a) / others : 0;
                P[((size_t)lh * T + t) * T + u] = (real)w;
            }
        }
}

static void log_synthetic_P(CompareLog *log, int v, long step, int leaky) {
    real P[MAP_L * MAP_NH * MAP_T * MAP_T];
    synthetic_P(P, MAP_T, v, step, leaky);
    compare_log_attention(log, v, step, P, MAP_L, MAP_NH, MAP_T, MAP_TEXT);
}

static void final_losses(CompareLog *log, int v, double train, double val) {
    CompareFinal f = {train, val, NAN, NAN, NULL};
    compare_log_final(log, v, &f);
}

#define N_STEPS 10

// --compare-scaling's log: a 10-step run in train.c's order: probes at 0, 5 and 10, validation
// at 5 and 10. Scaled: loss 3.0 - 0.1 s, val 2.55 / 2.10, final val 2.05. Unscaled: when
// scaled_wins, loss 3.1 - 0.05 s, val 2.90 / 2.65, final 2.65 (gap 0.600); otherwise loss
// 2.9 - 0.12 s, val 2.40 / 1.85, final 1.80 (gap 0.250 the other way). gen_loss is evaluated
// with the validation loss (val + 0.01) but the scale's report leaves it out of its text.
static int run_synthetic(int scaled_wins, char *err, size_t errlen) {
    Config cfg;
    small_config(&cfg);
    CompareLog *log = compare_log_open(g_dir, N_STEPS, "model.attn_scale", SCALE_VALUES, 2);
    if (!log) return 0;
    HeadStats p0[2] = {stats(0.95, 0.15, 0.0, 0.3, 0.25, 0.01),
                       stats(0.60, 0.55, 0.125, 0.05, 0.0025, 0.012)};
    HeadStats p5[2] = {stats(0.80, 0.30, 0.0, 0.2, 0.15, 0.02),
                       stats(0.40, 0.70, 0.25, 0.04, 0.002, 0.03)};
    HeadStats p10[2] = {stats(0.70, 0.40, 0.0625, 0.15, 0.1, 0.03),
                        stats(0.35, 0.75, 0.375, 0.03, 0.001, 0.05)};
    for (long step = 0; step < N_STEPS; step++) {
        if (step % 5 == 0)
            for (int v = 0; v < 2; v++) {
                compare_log_probe(log, v, step, step == 0 ? &p0[v] : &p5[v]);
                log_synthetic_P(log, v, step, 0);
            }
        long done = step + 1;
        double s_loss = 3.0 - 0.1 * (double)done;
        double u_loss = scaled_wins ? 3.1 - 0.05 * (double)done : 2.9 - 0.12 * (double)done;
        double s_val = done == 5 ? 2.55 : done == 10 ? 2.10 : NAN;
        double u_val = done == 5    ? (scaled_wins ? 2.90 : 2.40)
                       : done == 10 ? (scaled_wins ? 2.65 : 1.85)
                                    : NAN;
        compare_log_step(log, 0, done, s_loss, s_val, s_val + 0.01);
        compare_log_step(log, 1, done, u_loss, u_val, u_val + 0.01);
    }
    for (int v = 0; v < 2; v++) {
        compare_log_probe(log, v, N_STEPS, &p10[v]);
        log_synthetic_P(log, v, N_STEPS, 0);
    }
    compare_log_command(log, "./train cfg.json --compare-scaling");
    CompareFinal fs = {2.0, 2.05, 2.06, 2.06, "scaled sample"};
    CompareFinal fu = {scaled_wins ? 2.6 : 1.75, scaled_wins ? 2.65 : 1.80, 2.7, 2.7,
                       "unscaled sample"};
    compare_log_final(log, 0, &fs);
    compare_log_final(log, 1, &fu);
    return compare_log_finish(log, &cfg, err, errlen);
}

// A synthetic run of any key: 10 steps, probes at 0, 5 and 10, evaluations at 5 and 10.
// Variant v ends with the teacher-forced validation loss val[v] (val + 0.3 at step 5), gen_loss
// gen[v] (gen + 0.3 at step 5), the teacher-forced loss tf[v] on the generation windows, and
// future_mass fm[v] at the end (half of it at step 5, 0 at step 0).
typedef struct {
    const char *key;
    const char *values[COMPARE_MAX_VARIANTS];
    int n;
    double val[COMPARE_MAX_VARIANTS], gen[COMPARE_MAX_VARIANTS], tf[COMPARE_MAX_VARIANTS],
        fm[COMPARE_MAX_VARIANTS];
    const char *sample[COMPARE_MAX_VARIANTS];
    const char *softmax_axis;  // the shared configuration's, when not the default
} Scenario;

static int run_scenario(const Scenario *sc, char *err, size_t errlen) {
    Config cfg;
    small_config(&cfg);
    if (sc->softmax_axis)
        snprintf(cfg.softmax_axis, sizeof cfg.softmax_axis, "%s", sc->softmax_axis);
    CompareLog *log = compare_log_open(g_dir, N_STEPS, sc->key, sc->values, sc->n);
    if (!log) {
        snprintf(err, errlen, "compare_log_open refused %d variants of %s", sc->n, sc->key);
        return 0;
    }
    for (long step = 0; step <= N_STEPS; step++) {
        if (step % 5 == 0)
            for (int v = 0; v < sc->n; v++) {
                HeadStats h = stats(0.9 - 0.02 * (double)step, 0.2 + 0.03 * (double)step, 0.01,
                                    0.05, 0.04, 0.1);
                h.future_mass = sc->fm[v] * (double)step / N_STEPS;
                compare_log_probe(log, v, step, &h);
                log_synthetic_P(log, v, step,
                                strcmp(sc->key, "model.attn_mask") == 0 &&
                                    strcmp(sc->values[v], "causal") != 0);
            }
        if (step == N_STEPS) break;
        long done = step + 1;
        for (int v = 0; v < sc->n; v++) {
            double late = done == 5 ? 0.3 : 0.0;
            int eval = done % 5 == 0;
            compare_log_step(log, v, done, 3.0 - 0.1 * (double)done + 0.01 * v,
                             eval ? sc->val[v] + late : NAN, eval ? sc->gen[v] + late : NAN);
        }
    }
    for (int v = 0; v < sc->n; v++) {
        CompareFinal f = {sc->val[v] - 0.05, sc->val[v], sc->gen[v], sc->tf[v], sc->sample[v]};
        compare_log_final(log, v, &f);
    }
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

// --compare-scaling's columns, then the ones added at the end
static const char *const CSV_HEADER =
    "step,variant,loss,val_loss,entropy_norm,max_weight,frac_gt_0.9,frac_gt_0.99,score_std,"
    "gnorm_wq,gnorm_wk,gnorm_wv,gnorm_wo,ds_over_dp,row_gain_median,gen_loss,future_mass";
#define CSV_FIELDS 17

// ----------------------------------------------------------------------------
// the scale: --compare-scaling's files

static void test_csv_layout_and_values(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    char err[256] = "";
    CHECK_MSG(run_synthetic(1, err, sizeof(err)), "%s", err);
    char *csv = slurp("compare.csv");
    CHECK(csv != NULL);
    if (!csv) {
        tmp_cleanup();
        return;
    }
    char *save = NULL;
    char *line = strtok_r(csv, "\n", &save);
    CHECK(line && strcmp(line, CSV_HEADER) == 0);
    int row = 0;
    long prev_step = -1;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        char *f[20];
        int nf = split_csv(line, f, 20);
        CHECK_MSG(nf == CSV_FIELDS, "row %d has %d fields", row, nf);
        if (nf != CSV_FIELDS) {
            row++;
            continue;
        }
        long step = strtol(f[0], NULL, 10);
        const char *want_variant = row % 2 == 0 ? "scaled" : "unscaled";
        CHECK_MSG(strcmp(f[1], want_variant) == 0, "row %d: variant %s", row, f[1]);
        CHECK_MSG(step == row / 2, "row %d: step %ld", row, step);
        CHECK(step >= prev_step);
        prev_step = step;
        int probed = step % 5 == 0;
        // loss: empty only at step 0
        if (step == 0)
            CHECK_MSG(f[2][0] == '\0', "loss at step 0: '%s'", f[2]);
        else
            CHECK_MSG(f[2][0] != '\0', "no loss at step %ld", step);
        // val_loss and gen_loss: only at 5 and 10
        int evaluated = step == 5 || step == 10;
        CHECK_MSG((f[3][0] != '\0') == evaluated, "val at step %ld: '%s'", step, f[3]);
        CHECK_MSG((f[15][0] != '\0') == evaluated, "gen_loss at step %ld: '%s'", step, f[15]);
        // attention columns: only where probed
        for (int i = 4; i < 15; i++)
            CHECK_MSG((f[i][0] != '\0') == probed, "step %ld column %d: '%s'", step, i, f[i]);
        CHECK_MSG((f[16][0] != '\0') == probed, "future_mass at step %ld: '%s'", step, f[16]);
        // round trips
        if (step == 3 && row % 2 == 0) CHECK_NEAR(strtod(f[2], NULL), 2.7, 1e-6);
        if (step == 3 && row % 2 == 1) CHECK_NEAR(strtod(f[2], NULL), 2.95, 1e-6);
        if (step == 5 && row % 2 == 1) CHECK_NEAR(strtod(f[3], NULL), 2.90, 1e-6);
        if (step == 5 && row % 2 == 1) CHECK_NEAR(strtod(f[15], NULL), 2.91, 1e-6);
        if (step == 0 && row % 2 == 1) {
            CHECK_NEAR(strtod(f[4], NULL), 0.60, 1e-6);     // entropy_norm
            CHECK_NEAR(strtod(f[5], NULL), 0.55, 1e-6);     // max_weight
            CHECK_NEAR(strtod(f[6], NULL), 0.1875, 1e-6);   // frac_gt_0.9
            CHECK_NEAR(strtod(f[7], NULL), 0.125, 1e-6);    // frac_gt_0.99
            CHECK_NEAR(strtod(f[8], NULL), 1.05, 1e-6);     // score_std
            CHECK_NEAR(strtod(f[9], NULL), 0.012, 1e-9);    // gnorm_wq
            CHECK_NEAR(strtod(f[12], NULL), 0.048, 1e-9);   // gnorm_wo
            CHECK_NEAR(strtod(f[13], NULL), 0.05, 1e-9);    // ds_over_dp
            CHECK_NEAR(strtod(f[14], NULL), 0.0025, 1e-9);  // row_gain_median
            CHECK_NEAR(strtod(f[16], NULL), 0.0, 1e-12);    // future_mass
        }
        if (step == 10 && row % 2 == 0) CHECK_NEAR(strtod(f[14], NULL), 0.1, 1e-9);
        row++;
    }
    CHECK_MSG(row == 2 * (N_STEPS + 1), "%d rows", row);
    free(csv);
    tmp_cleanup();
}

// The first `ncols` comma-separated fields of every line of text, as one string (malloc'd).
static char *first_fields(const char *text, int ncols) {
    char *outbuf = malloc(strlen(text) + 1), *o = outbuf;
    if (!outbuf) return NULL;
    for (const char *p = text; *p;) {
        int col = 0;
        for (; *p && *p != '\n'; p++) {
            if (*p == ',' && ++col >= ncols) {
                p += strcspn(p, "\n");
                break;
            }
            *o++ = *p;
        }
        if (*p == '\n') *o++ = *p++;
    }
    *o = '\0';
    return outbuf;
}

// --compare-scaling's report.md and compare.csv are what they were before the comparison took
// any key: tests/golden holds the files commit 06eaed6 wrote from this very log, report.md's
// list of files naming the max attention logit's panel since. report.md is byte-identical;
// compare.csv is, up to the columns added at its end.
static void test_scale_output_unchanged(void) {
    static const char *const CASES[2] = {"unscaled_wins", "scaled_wins"};
    for (int scaled_wins = 0; scaled_wins <= 1; scaled_wins++) {
        if (!tmp_setup()) SKIP("mkdtemp failed");
        char err[256] = "", path[128];
        CHECK_MSG(run_synthetic(scaled_wins, err, sizeof(err)), "%s", err);
        snprintf(path, sizeof path, "tests/golden/scale_%s_report.md", CASES[scaled_wins]);
        char *want_md = slurp_path(path), *md = slurp("report.md");
        snprintf(path, sizeof path, "tests/golden/scale_%s_compare.csv", CASES[scaled_wins]);
        char *want_csv = slurp_path(path), *csv = slurp("compare.csv");
        char *csv15 = csv ? first_fields(csv, 15) : NULL;
        CHECK_MSG(want_md && want_csv, "missing %s (run the tests from the repository's root)",
                  path);
        CHECK(md && csv15);
        if (want_md && md)
            CHECK_MSG(strcmp(md, want_md) == 0, "%s: report.md differs from the golden file",
                      CASES[scaled_wins]);
        if (want_csv && csv15)
            CHECK_MSG(strcmp(csv15, want_csv) == 0, "%s: compare.csv's first 15 columns differ",
                      CASES[scaled_wins]);
        free(want_md);
        free(md);
        free(want_csv);
        free(csv);
        free(csv15);
        tmp_cleanup();
    }
}

static void check_common_md(const char *md) {
    CHECK(strncmp(md, "# ", 2) == 0);
    CHECK(strstr(md, "synthetic") != NULL);
    CHECK(strstr(md, "| step | val loss | train loss |") != NULL);
    CHECK(strstr(md, "| 0 (init) |") != NULL);
    CHECK(strstr(md, "| 5 |") != NULL);
    CHECK(strstr(md, "| 10 (end) |") != NULL);
    CHECK(strstr(md, "| 2 | 2 | 16 | 8 |") != NULL);  // n_layer, n_head, n_embd, head_dim
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
    // the scale's report keeps its table and says nothing of gen_loss or samples
    CHECK(strstr(md, "gen loss") == NULL && strstr(md, "gen_loss") == NULL);
    CHECK(strstr(md, "sample") == NULL);
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

// Checks every SVG must pass: well-formed, self-contained, the panels titled, one curve per
// variant in each, and no other variant's colour.
static void check_svg(const char *svg, int n_variants, int n_panels, int curves_per_variant) {
    size_t n = strlen(svg);
    CHECK(strncmp(svg, "<svg", 4) == 0);
    CHECK(n >= 7 && strcmp(svg + n - 7, "</svg>\n") == 0);
    CHECK_MSG(xml_balanced(svg), "unbalanced tags");
    CHECK(strstr(svg, "<script") == NULL);
    CHECK(strstr(svg, "href") == NULL);
    CHECK(strstr(svg, "sans-serif") != NULL);
    CHECK(strstr(svg, "nan") == NULL && strstr(svg, "inf") == NULL);
    CHECK(strstr(svg, ">step<") != NULL);
    CHECK(strstr(svg, "synthetic") != NULL);
    static const char *const LETTERS[9] = {"(a) ", "(b) ", "(c) ", "(d) ", "(e) ",
                                           "(f) ", "(g) ", "(h) ", "(i) "};
    for (int p = 0; p < 9; p++)
        CHECK_MSG(has(svg, LETTERS[p]) == (p < n_panels), "panel %s", LETTERS[p]);
    for (int v = 0; v < 4; v++) {
        int curves = paths_in_colour(svg, COLOURS[v]);
        if (v < n_variants)
            CHECK_MSG(curves == curves_per_variant, "variant %d: %d curves", v, curves);
        else
            CHECK_MSG(curves == 0 && !has(svg, COLOURS[v]),
                      "colour of a variant %d that does not exist", v);
    }
}

static void test_svg(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    char err[256] = "";
    CHECK_MSG(run_synthetic(1, err, sizeof(err)), "%s", err);
    char *svg = slurp("scaling.svg");
    CHECK(svg != NULL);
    CHECK(!exists("compare.svg"));
    if (svg) {
        // loss: train and validation; entropy; max attention logit and the rows' mean; max weight
        // and rows > 0.99; whole head and row gain (no output logits logged: no panel of them)
        check_svg(svg, 2, 5, 2 + 1 + 2 + 2 + 2);
        CHECK(strstr(svg, "(a) Loss") != NULL);
        CHECK(strstr(svg, "(b) Normalised attention entropy") != NULL);
        CHECK(strstr(svg, "(c) Max attention logit") != NULL);
        CHECK(strstr(svg, "(d) Mean max attention weight") != NULL);
        CHECK(strstr(svg, "(e) Gradient surviving the softmax") != NULL);
        CHECK(strstr(svg, "Output logits") == NULL);
        CHECK(strstr(svg, ">1e-3<") != NULL);  // log decades: data spans 0.001 .. 0.3
        CHECK(strstr(svg, ">1e-1<") != NULL);
        CHECK(strstr(svg, "scaled (") != NULL);
        CHECK(strstr(svg, "unscaled (") != NULL);
        CHECK(strstr(svg, "no data") == NULL);
        CHECK(strstr(svg, "future") == NULL);
    }
    free(svg);
    tmp_cleanup();
}

// The output logits' panel: drawn, after the gradient's, when the log has the output logits of
// the steps (compare_log_logits), two curves per variant (mean log Z and the largest logit), its
// y axis spanning both; a call for a step other than the last logged one is ignored; the list
// of files in report.md and report.html's charts name it.
static void test_output_logits_panel(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Config cfg;
    small_config(&cfg);
    cfg.attn_interval = 0;
    CompareLog *log = compare_log_open(g_dir, 4, "model.attn_scale", SCALE_VALUES, 2);
    for (long s = 1; s <= 4; s++)
        for (int v = 0; v < 2; v++) {
            compare_log_step(log, v, s, 3.0 - 0.1 * (double)s, s == 4 ? 2.5 : NAN, NAN);
            compare_log_logits(log, v, s, 4.25 + 0.25 * (double)s, 6.0 + v + (double)s);
            compare_log_logits(log, v, s + 1, 100, 100);  // not the step just logged: ignored
        }
    final_losses(log, 0, 2.6, 2.55);
    final_losses(log, 1, 2.8, 2.85);
    char err[256] = "";
    CHECK_MSG(compare_log_finish(log, &cfg, err, sizeof(err)), "%s", err);
    char *md = slurp("report.md"), *svg = slurp("scaling.svg"), *html = slurp("report.html");
    CHECK(md && svg && html);
    if (svg) {
        // loss: train and validation; the output logits: two; the four probe panels without data
        check_svg(svg, 2, 6, 2 + 2);
        const char *f = strstr(svg, "(f) Output logits of the training batch");
        CHECK(f != NULL && strstr(svg, "(e) Gradient surviving the softmax") < f);
        CHECK(count_substr(svg, "no data") == 4);
        // lse 4.5 .. 5.25 and the largest logits 7 .. 11 on one axis: ticks up to 12 (the step axis
        // ends at 4), none at 100
        CHECK(f && strstr(f, ">10<") && strstr(f, ">12<") && !strstr(f, ">100<"));
        CHECK(f && strstr(f, "mean log Z") && strstr(f, "largest logit"));
    }
    if (md)
        CHECK(has(
            md,
            "the gradient surviving the softmax and the output logits' mean log Z over training"));
    if (html)
        CHECK(count_substr(html, "<svg class=\"chart\"") == 6 &&
              has(html, "aria-label=\"(f) Output logits"));
    free(md);
    free(svg);
    free(html);
    tmp_cleanup();
}

// Without probes (log.attn_interval = 0) and with a NaN loss: the files are still written, the
// attention panels say "no data", and the CSV shows the non-finite loss.
static void test_no_probes(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Config cfg;
    small_config(&cfg);
    cfg.attn_interval = 0;
    CompareLog *log = compare_log_open(g_dir, 4, "model.attn_scale", SCALE_VALUES, 2);
    for (long s = 1; s <= 4; s++) {
        compare_log_step(log, 0, s, 3.0 - 0.1 * (double)s, s == 4 ? 2.5 : NAN, NAN);
        compare_log_step(log, 1, s, s == 2 ? NAN : 3.0 - 0.05 * (double)s, s == 4 ? 2.8 : NAN, NAN);
    }
    final_losses(log, 0, 2.6, 2.55);
    final_losses(log, 1, 2.8, 2.85);
    char err[256] = "";
    CHECK_MSG(compare_log_finish(log, &cfg, err, sizeof(err)), "%s", err);
    char *csv = slurp("compare.csv"), *md = slurp("report.md"), *svg = slurp("scaling.svg");
    CHECK(csv && md && svg);
    if (csv) {
        CHECK(count_substr(csv, "\n") == 1 + 8);
        CHECK(strstr(csv, "\n1,scaled,2.9,,,,,,,,,,,,,,\n") != NULL);
        CHECK(strstr(csv, "\n2,unscaled,nan,,") != NULL);
        CHECK(strstr(csv, "\n4,unscaled,2.8,2.8,") != NULL);
    }
    if (md) {
        CHECK(strstr(md, "No attention probes") != NULL);
        CHECK(strstr(md, "Scaled attention ends ahead") != NULL);
        CHECK(strstr(md, "lower by 0.300") != NULL);
    }
    if (svg) CHECK(count_substr(svg, "no data") == 4);
    char *html = slurp("report.html");
    CHECK(html && has(html, "No attention weights were kept") &&
          count_substr(html, "<svg class=\"hm\"") == 0);
    free(html);
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
    CompareLog *log = compare_log_open(g_dir, 3, "model.attn_scale", SCALE_VALUES, 2);
    HeadStats h = stats(0.5, 0.5, 0.1, 0.1, 0.01, 0.01);
    compare_log_step(log, 1, 2, 2.0, NAN, NAN);
    compare_log_step(log, 0, 3, 1.5, NAN, NAN);
    compare_log_step(log, 0, 1, 2.5, NAN, NAN);
    compare_log_step(log, 0, 1, 2.25, NAN, NAN);  // replaces the 2.5
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
    CompareLog *log = compare_log_open("/nonexistent_test_report_dir/sub", 2, "model.attn_scale",
                                       SCALE_VALUES, 2);
    compare_log_step(log, 0, 1, 2.0, NAN, NAN);
    compare_log_step(log, 1, 1, 2.1, NAN, NAN);
    char err[256] = "";
    CHECK(!compare_log_finish(log, &cfg, err, sizeof(err)));
    CHECK_MSG(strstr(err, "compare.csv") != NULL, "%s", err);
    CHECK(strchr(err, '\n') == NULL);
}

// ----------------------------------------------------------------------------
// the API: 2 to 4 variants, named after their values (the scale's sqrt and none as before)

static void test_open_and_names(void) {
    const char *vals[5] = {"causal", "zero", "none", "x", "y"};
    CHECK(compare_log_open(".", 10, "model.attn_mask", vals, 1) == NULL);
    CHECK(compare_log_open(".", 10, "model.attn_mask", vals, 5) == NULL);
    CHECK(compare_log_open(".", 10, NULL, vals, 2) == NULL);
    CompareLog *log = compare_log_open(".", 10, "model.attn_mask", vals, 3);
    CHECK(log != NULL);
    if (log) {
        CHECK(strcmp(compare_variant_name(log, 0), "causal") == 0);
        CHECK(strcmp(compare_variant_name(log, 2), "none") == 0);
        CHECK(compare_variant_name(log, 3) == NULL && compare_variant_name(log, -1) == NULL);
        CHECK(strcmp(compare_svg_name(log), "compare.svg") == 0);
        compare_log_step(log, 7, 1, 1.0, NAN, NAN);  // out of range: ignored
        compare_log_discard(log);
    }
    const char *scale[3] = {"none", "0.5", "sqrt"};
    log = compare_log_open(".", 10, "model.attn_scale", scale, 3);
    CHECK(log != NULL);
    if (log) {
        CHECK(strcmp(compare_variant_name(log, 0), "unscaled") == 0);
        CHECK(strcmp(compare_variant_name(log, 1), "0.5") == 0);
        CHECK(strcmp(compare_variant_name(log, 2), "scaled") == 0);
        CHECK(strcmp(compare_svg_name(log), "scaling.svg") == 0);
        compare_log_discard(log);
    }
}

// ----------------------------------------------------------------------------
// a leak: attn_mask and softmax_axis

// causal, zero and none as the lesson says: the leaking models' teacher-forced loss far below
// causal's, their gen_loss far above it, weight on the future; causal's gen_loss and
// teacher-forced loss on the same windows equal up to rounding.
static const Scenario MASK3 = {
    "model.attn_mask",
    {"causal", "zero", "none"},
    3,
    {1.75, 1.20, 0.90},
    {1.7512, 3.40, 4.10},
    {1.7507, 1.21, 0.91},
    {0, 0.31, 0.48},
    {"ROMEO:\nWhat light through yonder window breaks?", "ROMEO:\nthe ``` the\n", "none's text"},
    NULL,
};

static void test_leak_mask_symptoms(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    char err[256] = "";
    CHECK_MSG(run_scenario(&MASK3, err, sizeof err), "%s", err);
    char *md = slurp("report.md"), *csv = slurp("compare.csv"), *svg = slurp("compare.svg");
    CHECK(md && csv && svg);
    CHECK(!exists("scaling.svg"));
    if (md) {
        CHECK(has(md, "# Attention mask: causal vs zero vs none — synthetic"));
        CHECK(has(md, "Each cell: **causal / zero / none**."));
        CHECK(has(md, "| step | val loss | gen loss | train loss | future mass |"));
        CHECK(has(md, "| 10 (end) | 1.7500 / 1.2000 / 0.9000 | 1.7512 / 3.4000 / 4.1000 |"));
        CHECK(has(md, "| 5 | 2.0500 / 1.5000 / 1.2000 | 2.0512 / 3.7000 / 4.4000 |"));
        char *ref = line_starting(md, "- **`causal` is the correct model**");
        CHECK_MSG(ref && has(ref, "agree up to rounding: 1.7512 vs 1.7507") &&
                      has(ref, "future_mass is 0 at step 10"),
                  "%s", ref ? ref : "no bullet for causal");
        const char *names[2] = {"zero", "none"};
        const char *numbers[2][3] = {
            {"1.2000 vs 1.7500 (0.550 lower)", "3.4000 vs 1.7512 (1.649 higher)",
             "2.190 above its teacher-forced loss (3.4000 vs 1.2100)"},
            {"0.9000 vs 1.7500 (0.850 lower)", "4.1000 vs 1.7512 (2.349 higher)",
             "3.190 above its teacher-forced loss (4.1000 vs 0.9100)"}};
        const char *mass[2] = {"future_mass is 0.31 at step 10: on average 31.0%",
                               "future_mass is 0.48 at step 10: "
                               "on average 48.0%"};
        for (int i = 0; i < 2; i++) {
            char start[32];
            snprintf(start, sizeof start, "- **`%s`.**", names[i]);
            char *b = line_starting(md, start);
            CHECK_MSG(b != NULL, "no bullet for %s", names[i]);
            if (!b) continue;
            CHECK_MSG(
                has(b, "teacher-forced whole-split validation loss is far below `causal`'s") &&
                    has(b, numbers[i][0]),
                "%s", b);
            CHECK_MSG(has(b, "gen_loss is far above `causal`'s") && has(b, numbers[i][1]), "%s", b);
            CHECK_MSG(has(b, "signature of a leak"), "%s", b);
            CHECK_MSG(has(b, numbers[i][2]) && has(b, "the measured size of the cheat"), "%s", b);
            CHECK_MSG(has(b, mass[i]), "%s", b);
            free(b);
        }
        free(ref);
        CHECK(has(md, "lowest first: `none` 0.9000, `zero` 1.2000 and `causal` 1.7500"));
        CHECK(has(
            md,
            "By gen_loss: `causal` 1.7512, `zero` 3.4000 and `none` 4.1000. The orders differ"));
        // the samples, each in a fence longer than any run of backticks in it
        CHECK(
            has(md, "**causal**:\n\n```\nROMEO:\nWhat light through yonder window breaks?\n```\n"));
        CHECK(has(md, "**zero**:\n\n````\nROMEO:\nthe ``` the\n````\n"));
        CHECK(has(md, "**none**:\n\n```\nnone's text\n```\n"));
        CHECK(has(md, "`compare.svg`: loss, normalised entropy, max attention logit, max weight, "
                      "the gradient surviving the softmax, "
                      "gen_loss against the teacher-forced val_loss and future_mass over training, "
                      "all three variants"));
        CHECK(has(md, "`causal/attention.csv`, `zero/attention.csv` and `none/attention.csv`"));
    }
    if (csv) {
        CHECK(strncmp(csv, CSV_HEADER, strlen(CSV_HEADER)) == 0);
        CHECK(count_substr(csv, "\n") == 1 + 3 * (N_STEPS + 1));
        CHECK(has(csv, "\n10,none,2.02,0.9,"));
        CHECK(has(csv, ",4.1,0.48\n"));  // none at step 10: gen_loss, future_mass
        CHECK(has(csv, "\n5,zero,2.51,1.5,"));
        CHECK(has(csv, ",3.7,0.155\n"));                    // zero at step 5
        CHECK(has(csv, "\n3,causal,2.7,,,,,,,,,,,,,,\n"));  // neither evaluated nor probed
        CHECK(has(csv, "\n0,causal,,,0.9,"));               // probed before any step: no losses
        CHECK(has(csv, ",0.04,,0\n"));  // ... its row gain, no gen_loss, future_mass 0
    }
    if (svg) {
        // the four panels (7 curves per variant) and gen vs val (2) and future_mass (1)
        check_svg(svg, 3, 7, 7 + 2 + 2 + 1);
        CHECK(has(svg, "(f) gen_loss vs the teacher-forced val_loss"));
        CHECK(has(svg, "(g) Future mass"));
        CHECK(has(svg, ">causal (correct)<") && has(svg, ">zero<") && has(svg, ">none<"));
        CHECK(has(svg, "stroke-dasharray=\"7 4\"") && has(svg, "stroke-dasharray=\"2 3\""));
    }
    free(md);
    free(csv);
    free(svg);
    tmp_cleanup();
}

// A "zero" model whose numbers do not show the symptoms: its teacher-forced loss is not below
// causal's and its gen_loss is below causal's; the report says so and claims no cheat.
static void test_leak_without_symptoms(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Scenario sc = {"model.attn_mask", {"causal", "zero"}, 2,
                   {1.75, 1.80},      {1.7505, 1.70},     {1.7505, 1.81},
                   {0, 0.05},         {NULL, NULL},       NULL};
    char err[256] = "";
    CHECK_MSG(run_scenario(&sc, err, sizeof err), "%s", err);
    char *md = slurp("report.md");
    CHECK(md != NULL);
    char *b = md ? line_starting(md, "- **`zero`.**") : NULL;
    CHECK(b != NULL);
    if (b) {
        CHECK_MSG(has(b, "validation loss is above `causal`'s: 1.8000 vs 1.7500 (0.050 higher)"),
                  "%s", b);
        CHECK_MSG(has(b, "gen_loss is below `causal`'s: 1.7000 vs 1.7505 (0.050 lower)"), "%s", b);
        CHECK_MSG(has(b, "Neither loss shows the symptom of a leak"), "%s", b);
        CHECK_MSG(has(b, "0.110 *below* its teacher-forced loss") && has(b, "no cheat measured"),
                  "%s", b);
        CHECK(!has(b, "signature of a leak") && !has(b, "far ") && !has(b, "size of the cheat"));
        CHECK_MSG(has(b, "future_mass is 0.05 at step 10"), "%s", b);
    }
    if (md) {
        CHECK(has(md, "lowest first: `causal` 1.7500 and `zero` 1.8000. By gen_loss: `zero` 1.7000 "
                      "and `causal` "
                      "1.7505. The orders differ"));
        CHECK(!has(md, "## Samples"));
    }
    free(b);
    free(md);
    // only the teacher-forced loss rewards the leak: gen_loss level with causal's
    tmp_cleanup();
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Scenario level = {"model.attn_mask", {"causal", "none"}, 2,
                      {1.75, 1.20},      {1.7505, 1.755},    {1.7505, 1.21},
                      {0, 0.4},          {NULL, NULL},       NULL};
    CHECK_MSG(run_scenario(&level, err, sizeof err), "%s", err);
    md = slurp("report.md");
    b = md ? line_starting(md, "- **`none`.**") : NULL;
    CHECK(b != NULL);
    if (b) {
        CHECK_MSG(has(b, "far below `causal`'s") &&
                      has(b, "gen_loss is level with `causal`'s: 1.7550 vs 1.7505"),
                  "%s", b);
        CHECK_MSG(has(b, "its gen_loss is not above `causal`'s"), "%s", b);
        CHECK(!has(b, "signature of a leak"));
        CHECK_MSG(has(b, "0.545 above its teacher-forced loss") && has(b, "size of the cheat"),
                  "%s", b);
    }
    free(b);
    free(md);
    tmp_cleanup();
}

// The softmax over the queries leaks with no weight on future positions: the report says the
// future_mass is 0 and puts the leak in the normalisation, and only because a cheat is measured.
static void test_leak_softmax_axis(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Scenario sc = {"model.softmax_axis",
                   {"keys", "queries"},
                   2,
                   {1.75, 1.10},
                   {1.7505, 3.9},
                   {1.7505, 1.11},
                   {0, 0},
                   {"a", "b"},
                   NULL};
    char err[256] = "";
    CHECK_MSG(run_scenario(&sc, err, sizeof err), "%s", err);
    char *md = slurp("report.md");
    CHECK(md != NULL);
    char *b = md ? line_starting(md, "- **`queries`.**") : NULL;
    CHECK(b != NULL);
    if (b) {
        CHECK_MSG(has(b, "far below `keys`'s") && has(b, "far above `keys`'s") &&
                      has(b, "signature of a leak"),
                  "%s", b);
        CHECK_MSG(has(b, "future_mass is 0 at step 10: no weight lands on a position after the "
                         "query's own; the leak "
                         "is in the normalisation"),
                  "%s", b);
        CHECK(!has(b, "% of a row's weight"));
    }
    if (md) {
        CHECK(has(md, "# Softmax axis: keys vs queries"));
        CHECK(has(md, "- **`keys` is the correct model**"));
        CHECK(has(md, "difference 0)"));
        CHECK(has(md, "Shared by all: `model.attn_scale` = sqrt, `model.attn_mask` = causal."));
    }
    free(b);
    free(md);
    tmp_cleanup();
    // no cheat measured (gen_loss equal to the teacher-forced loss): no leak to place anywhere
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Scenario honest = {"model.softmax_axis",
                       {"keys", "queries"},
                       2,
                       {1.75, 1.755},
                       {1.7505, 1.7555},
                       {1.7505, 1.7555},
                       {0, 0},
                       {NULL, NULL},
                       NULL};
    CHECK_MSG(run_scenario(&honest, err, sizeof err), "%s", err);
    md = slurp("report.md");
    b = md ? line_starting(md, "- **`queries`.**") : NULL;
    CHECK(b != NULL);
    if (b) {
        CHECK_MSG(
            has(b, "agree up to rounding: 1.7555 vs 1.7555 (difference 0): no cheat measured"),
            "%s", b);
        CHECK_MSG(has(b, "future_mass is 0 at step 10") && !has(b, "normalisation"), "%s", b);
        CHECK_MSG(has(b, "is level with `keys`'s: 1.7550 vs 1.7500.") &&
                      has(b, "Neither loss shows the symptom of a leak"),
                  "%s", b);
    }
    free(b);
    free(md);
    tmp_cleanup();
}

// No variant is correct: zero and none, or causal with the softmax over the queries shared.
static void test_leak_without_correct_model(void) {
    Scenario a = {"model.attn_mask", {"zero", "none"}, 2,   {1.2, 0.9}, {3.4, 4.1}, {1.21, 0.91},
                  {0.3, 0.5},        {NULL, NULL},     NULL};
    Scenario b = {"model.attn_mask", {"causal", "none"}, 2,
                  {1.2, 0.9},        {3.4, 4.1},         {1.21, 0.91},
                  {0.0, 0.5},        {NULL, NULL},       "queries"};
    const Scenario *cases[2] = {&a, &b};
    for (int k = 0; k < 2; k++) {
        if (!tmp_setup()) SKIP("mkdtemp failed");
        char err[256] = "";
        CHECK_MSG(run_scenario(cases[k], err, sizeof err), "%s", err);
        char *md = slurp("report.md");
        CHECK(md != NULL);
        if (md) {
            CHECK_MSG(has(md, "- **No variant here is the correct model**"), "case %d", k);
            CHECK(!has(md, "` is the correct model**"));
            CHECK(!has(md, "'s:"));  // nothing compared with a reference
            CHECK(has(md, "Its teacher-forced whole-split validation loss is 0.9000. Its gen_loss "
                          "is 4.1000."));
            CHECK(has(md, "3.190 above its teacher-forced loss"));
        }
        free(md);
        tmp_cleanup();
    }
}

// ----------------------------------------------------------------------------
// any other key

static void test_other_key_four_variants(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Scenario sc = {"train.lr",
                   {"0.001", "0.003", "0.01", "0.0003"},
                   4,
                   {1.75, 1.60, 1.605, 2.10},
                   {1.7505, 1.6005, 1.6055, 2.1005},
                   {1.7505, 1.6005, 1.6055, 2.1005},
                   {0, 0, 0, 0},
                   {"s1", NULL, "s3", "s4"},
                   NULL};
    char err[256] = "";
    CHECK_MSG(run_scenario(&sc, err, sizeof err), "%s", err);
    char *md = slurp("report.md"), *svg = slurp("compare.svg"), *csv = slurp("compare.csv");
    CHECK(md && svg && csv);
    if (md) {
        CHECK(has(md, "# `train.lr`: 0.001 vs 0.003 vs 0.01 vs 0.0003 — synthetic"));
        CHECK(has(
            md,
            "The only difference is `train.lr`: **0.001**, **0.003**, **0.01** and **0.0003**."));
        CHECK(has(md, "Each cell: **0.001 / 0.003 / 0.01 / 0.0003**."));
        CHECK(has(md, "| 10 (end) | 1.7500 / 1.6000 / 1.6050 / 2.1000 |"));
        CHECK(has(
            md,
            "lowest first: `0.003` 1.6000, `0.01` 1.6050, `0.001` 1.7500 and `0.0003` 2.1000."));
        CHECK(has(
            md,
            "- **`0.003` ends ahead.** Its final loss is lower than `0.01`'s by only 0.005 (level, "
            "within "
            "0.01), `0.001`'s by 0.150 (8.6% below it) and `0.0003`'s by 0.500 (23.8% below it)."));
        CHECK(has(md, "gap between `0.003` and `0.01` never exceeded 0.05"));
        CHECK(has(md, "gap between `0.003` and `0.001` first exceeded 0.05 at step 5 (`0.003` "
                      "ahead by 0.150 there)"));
        CHECK(has(md, "gap between `0.003` and `0.0003` first exceeded 0.05 at step 5 (`0.003` "
                      "ahead by 0.500 there)"));
        CHECK(has(md, ": the same order as the whole-split validation loss."));
        CHECK(has(md, "agree up to rounding (largest difference 0): none sees the future."));
        CHECK(!has(md, "leak") && !has(md, "cheat"));
        CHECK(has(md, "**0.003**:\n\n(no sample)\n"));
        CHECK(has(md, "**0.0003**:\n\n```\ns4\n```\n"));
        CHECK(has(md, "`0.001/metrics.csv`, `0.003/metrics.csv`, `0.01/metrics.csv` and "
                      "`0.0003/metrics.csv`"));
        CHECK(has(md, "all four variants overlaid"));
    }
    if (svg) {
        check_svg(svg, 4, 5, 9);
        CHECK(has(svg, ">lr = 0.0003<"));
    }
    if (csv) CHECK(count_substr(csv, "\n") == 1 + 4 * (N_STEPS + 1));
    free(md);
    free(svg);
    free(csv);
    tmp_cleanup();
}

// A generic comparison in which one variant's gen_loss is above its teacher-forced loss on the
// same windows (it sees the future), and the variants end level.
static void test_other_key_level_and_leaking(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Scenario sc = {"model.attn_impl",
                   {"engine", "definition"},
                   2,
                   {1.75, 1.755},
                   {1.7505, 2.5},
                   {1.7505, 1.76},
                   {0, 0},
                   {NULL, NULL},
                   NULL};
    char err[256] = "";
    CHECK_MSG(run_scenario(&sc, err, sizeof err), "%s", err);
    char *md = slurp("report.md");
    CHECK(md != NULL);
    if (md) {
        CHECK(has(
            md,
            "- **The variants end level**: every final loss is within 0.01 of `engine`'s 1.7500."));
        CHECK(!has(md, "ends ahead"));
        CHECK(has(md, "- On the same windows `definition`'s gen_loss is 0.740 above its "
                      "teacher-forced loss (2.5000 vs "
                      "1.7600): it sees the future"));
        CHECK(!has(md, "none sees the future"));
        CHECK(has(
            md,
            "gen_loss**, lowest first: `engine` 1.7505 and `definition` 2.5000: the same order"));
    }
    free(md);
    tmp_cleanup();
}

// ----------------------------------------------------------------------------
// the scale with three variants: each read against the 1/sqrt(d_k) one

static void test_scale_three_variants(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Scenario sc = {"model.attn_scale", {"none", "sqrt", "0.5"}, 3,
                   {2.1, 1.75, 1.80},  {2.1, 1.75, 1.80},       {2.1, 1.75, 1.80},
                   {0, 0, 0},          {"x", "y", "z"},         NULL};
    char err[256] = "";
    CHECK_MSG(run_scenario(&sc, err, sizeof err), "%s", err);
    char *md = slurp("report.md"), *svg = slurp("scaling.svg"), *csv = slurp("compare.csv");
    CHECK(md && svg && csv);
    if (md) {
        CHECK(has(md, "# Attention scale: none vs sqrt vs 0.5 — synthetic"));
        CHECK(has(md, "Each cell: **unscaled / scaled / 0.5**."));
        CHECK(has(md, "**unscaled** does not scale the attention scores; **scaled** multiplies the "
                      "attention scores "
                      "Q·Kᵀ by 1/sqrt(d_k) = 1/sqrt(8) = 0.3536; **0.5** multiplies the attention "
                      "scores by 0.5."));
        CHECK(has(md,
                  "### unscaled against scaled\n\n- **Scaled attention ends ahead.** Final "
                  "whole-split validation "
                  "loss: 1.7500 scaled vs 2.1000 unscaled; the scaled model is lower by 0.350"));
        CHECK(has(md, "### `0.5` against scaled\n\n- **Scaled attention ends ahead.** Final "
                      "whole-split validation "
                      "loss: 1.7500 scaled vs 1.8000 `0.5`; the scaled model is lower by 0.050"));
        // the scale's report: no gen_loss column, no samples
        CHECK(!has(md, "gen loss") && !has(md, "## Samples"));
        CHECK(has(md, "`unscaled/attention.csv`, `scaled/attention.csv` and `0.5/attention.csv`"));
        CHECK(has(md, "`scaling.svg`"));
        // dQ and dK carry the scale: 0.5 is 0.5 / (1/sqrt(8)) = 1.41 times the reference's
        CHECK(has(md, "(`0.5`'s is 1.41 times scaled's)"));
    }
    if (svg) {
        check_svg(svg, 3, 5, 9);
        CHECK(has(svg, ">0.5 (scores × 0.5)<") && has(svg, ">scaled (scores × 1/√d_k)<"));
    }
    if (csv) CHECK(has(csv, "\n10,unscaled,") && has(csv, "\n10,scaled,") && has(csv, "\n10,0.5,"));
    free(md);
    free(svg);
    free(csv);
    tmp_cleanup();
}

// ----------------------------------------------------------------------------
// report.html

// Whether every element of an HTML page is closed in order: the void elements (meta) need no end
// tag, a "/>" closes itself, <style> is skipped whole, comments and <!DOCTYPE> too.
static int html_balanced(const char *s) {
    static const char *const VOID[] = {"meta", "br", "hr", "img", "input", "link", "wbr", NULL};
    char stack[256][16];
    int depth = 0;
    for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<')) {
        if (p[1] == '!') continue;
        int closing = p[1] == '/';
        const char *name = p + 1 + closing;
        size_t len = strcspn(name, " \t\n/>");
        const char *gt = strchr(p, '>');
        if (!gt || len == 0 || len >= sizeof stack[0]) return 0;
        int is_void = 0;
        for (int i = 0; VOID[i]; i++)
            is_void |= strlen(VOID[i]) == len && strncmp(VOID[i], name, len) == 0;
        if (closing) {
            if (depth == 0 || strlen(stack[depth - 1]) != len ||
                strncmp(stack[depth - 1], name, len) != 0)
                return 0;
            depth--;
        } else if (gt[-1] != '/' && !is_void) {
            if (depth == 256) return 0;
            memcpy(stack[depth], name, len);
            stack[depth++][len] = '\0';
            if (len == 5 && strncmp(name, "style", 5) == 0) {
                p = strstr(gt, "</style>");
                if (!p) return 0;
                p--;
            }
        }
    }
    return depth == 0;
}

// The text a reader sees: tags (and <style>) dropped, the writer's entities decoded, runs of white
// space as one space (malloc'd).
static char *html_plain_text(const char *html) {
    size_t n = strlen(html), k = 0;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    static const struct {
        const char *ent;
        char ch;
    } ENT[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''}};
    for (const char *p = html; *p;) {
        if (strncmp(p, "<style", 6) == 0) {
            const char *e = strstr(p, "</style>");
            p = e ? e + 8 : p + strlen(p);
            continue;
        }
        if (*p == '<') {
            const char *e = strchr(p, '>');
            p = e ? e + 1 : p + strlen(p);
            continue;
        }
        char c = *p++;
        if (c == '&')
            for (size_t i = 0; i < sizeof ENT / sizeof ENT[0]; i++)
                if (strncmp(p - 1, ENT[i].ent, strlen(ENT[i].ent)) == 0) {
                    c = ENT[i].ch;
                    p += strlen(ENT[i].ent) - 1;
                    break;
                }
        if (c == '\n' || c == '\t') c = ' ';
        if (c == ' ' && (k == 0 || out[k - 1] == ' ')) continue;
        out[k++] = c;
    }
    out[k] = '\0';
    return out;
}

// A line of report.md as html_markdown shows it in text: the markers **, * and ` dropped, runs of
// white space as one space.
static void md_plain(char *out, size_t n, const char *line, size_t len) {
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < n; i++) {
        if (line[i] == '*' || line[i] == '`') continue;
        if (line[i] == ' ' && k > 0 && out[k - 1] == ' ') continue;
        out[k++] = line[i];
    }
    while (k > 0 && out[k - 1] == ' ') k--;
    out[k] = '\0';
}

// Every line of md shows in the page's text: headings, paragraphs, list items (the reading), each
// table cell; a sample's lines (fenced) verbatim in a <pre>.
static void check_md_text_in_html(const char *md, const char *html) {
    char *text = html_plain_text(html);
    CHECK(text != NULL);
    if (!text) return;
    int in_fence = 0, missing = 0;
    for (const char *p = md; *p;) {
        size_t len = strcspn(p, "\n");
        char plain[4096];
        if (len >= 3 && strspn(p, "`") == len)
            in_fence = !in_fence;
        else if (in_fence) {
            char esc[1024];  // verbatim, escaped
            size_t k = 0;
            for (size_t i = 0; i < len && k + 8 < sizeof esc; i++)
                k += (size_t)snprintf(esc + k, sizeof esc - k, "%s",
                                      p[i] == '<'   ? "&lt;"
                                      : p[i] == '>' ? "&gt;"
                                      : p[i] == '&' ? "&amp;"
                                                    : (char[2]){p[i], 0});
            if (!strstr(html, esc)) missing++;
        } else if (len > 0 && p[0] == '|') {
            if (strspn(p, "|:- ") != len)
                for (const char *c = p + 1; c < p + len;) {
                    size_t cl = strcspn(c, "|");
                    if (c + cl > p + len) cl = (size_t)(p + len - c);
                    const char *a = c;
                    size_t al = cl;
                    while (al && *a == ' ') {
                        a++;
                        al--;
                    }
                    md_plain(plain, sizeof plain, a, al);
                    if (plain[0] && !strstr(text, plain)) {
                        missing++;
                        fprintf(stderr, "  table cell not on the page: \"%s\"\n", plain);
                    }
                    c += cl + 1;
                }
        } else if (len > 0) {
            const char *a = p;
            size_t al = len;
            while (al && (*a == '#' || *a == '-' || *a == ' ')) {
                a++;
                al--;
            }
            md_plain(plain, sizeof plain, a, al);
            if (plain[0] && !strstr(text, plain)) {
                missing++;
                fprintf(stderr, "  line not on the page: \"%.300s\"\n", plain);
            }
        }
        p += len + (p[len] == '\n');
    }
    CHECK_MSG(missing == 0, "%d lines of report.md are not on report.html", missing);
    free(text);
}

// The map of variant `name` at step s, layer l, head h: the text of its <svg> (malloc'd), or NULL.
static char *map_svg(const char *html, const char *name, long s, int l, int h) {
    char key[160];
    snprintf(key, sizeof key,
             "data-variant=\"%s\" data-step=\"%ld\" data-layer=\"%d\" data-head=\"%d\">", name, s,
             l, h);
    const char *a = strstr(html, key), *b = a ? strstr(a, "</svg>") : NULL;
    if (!a || !b) return NULL;
    char *m = malloc((size_t)(b - a) + 1);
    if (!m) return NULL;
    memcpy(m, a, (size_t)(b - a));
    m[b - a] = '\0';
    return m;
}

// Whether map m draws the run of `len` cells from (t, u) in the colour of weight w (on the
// maps' scale: w rounded to a multiple of 1/64).
static int map_draws(const char *m, int t, int u, int len, double w) {
    int rgb[3];
    attention_weight_colour(floor(w * 64 + 0.5) / 64, rgb);
    char fill[48], run[48];
    snprintf(fill, sizeof fill, "<path fill=\"#%02x%02x%02x\" d=\"", rgb[0], rgb[1], rgb[2]);
    snprintf(run, sizeof run, "M%d %dh%dv1h-%dz", u, t, len, len);
    const char *p = m ? strstr(m, fill) : NULL;
    if (!p) return 0;
    const char *e = strchr(p + strlen(fill), '"'), *r = strstr(p, run);
    return r && r < e && (r[-1] == '"' || r[-1] == 'z');
}

// What every report.html holds: a well-formed page that needs no other file (the lab pages' CSP,
// no script), the command that wrote it, report.md's text and tables, one inline <svg> per panel,
// and the maps of every variant at each kept step, every layer and head.
static void check_report_html(const char *html, const char *md, int n_panels,
                              const CompareLog *names_of, int n, const char *const *names,
                              const long *steps, int n_steps) {
    (void)names_of;
    size_t len = strlen(html);
    CHECK(strncmp(html, "<!DOCTYPE html>\n", 16) == 0);
    CHECK(len > 8 && strcmp(html + len - 8, "</html>\n") == 0);
    CHECK_MSG(html_balanced(html), "unbalanced tags");
    CHECK(strstr(html, "<script") == NULL);
    PcPage page;
    memset(&page, 0, sizeof page);
    const char *csp = strstr(html, "http-equiv=\"Content-Security-Policy\" content=\"");
    CHECK(csp != NULL);
    if (csp) {
        csp += strlen("http-equiv=\"Content-Security-Policy\" content=\"");
        snprintf(page.csp, sizeof page.csp, "%.*s", (int)strcspn(csp, "\""), csp);
    }
    char err[512];
    CHECK_MSG(pc_check_offline(&page, html, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(count_substr(html, "<svg class=\"chart\"") == n_panels, "%d charts, expected %d",
              count_substr(html, "<svg class=\"chart\""), n_panels);
    static const char *const LETTERS[9] = {"(a) ", "(b) ", "(c) ", "(d) ", "(e) ",
                                           "(f) ", "(g) ", "(h) ", "(i) "};
    for (int p = 0; p < n_panels && p < 9; p++) {
        char label[32];
        snprintf(label, sizeof label, "aria-label=\"%s", LETTERS[p]);
        CHECK_MSG(has(html, label), "no chart %s", LETTERS[p]);
    }
    // md's title is the page's, as text: without its Markdown markers
    const char *nl = strchr(md, '\n');
    if (nl && strncmp(md, "# ", 2) == 0) {
        char h1[600], title[512];
        size_t k = 0;
        for (const char *c = md + 2; c < nl && k + 1 < sizeof title; c++)
            if (*c != '`' && *c != '*') title[k++] = *c;
        title[k] = 0;
        snprintf(h1, sizeof h1, "<h1>%s</h1>", title);
        CHECK_MSG(has(html, h1), "no %s", h1);
        snprintf(h1, sizeof h1, "<title>%s</title>", title);
        CHECK_MSG(has(html, h1), "no %s", h1);
    }
    // the diagonal's legend only when a map draws it (a mask that lets the future through)
    CHECK(has(html, "the diagonal, where a mask lets the future through") ==
          has(html, "stroke=\"#d00000\" stroke-opacity"));
    CHECK(has(html, "with 64 colour levels") && !has(html, "in 64 steps"));
    check_md_text_in_html(md, html);
    CHECK_MSG(count_substr(html, "<svg class=\"hm\"") == n * n_steps * MAP_L * MAP_NH, "%d maps",
              count_substr(html, "<svg class=\"hm\""));
    for (int v = 0; v < n; v++)
        for (int j = 0; j < n_steps; j++)
            for (int l = 0; l < MAP_L; l++)
                for (int h = 0; h < MAP_NH; h++) {
                    char *m = map_svg(html, names[v], steps[j], l, h);
                    // the 6 x 6 cells, each row and column labelled with its character
                    CHECK_MSG(m && has(m, "<rect width=\"6\" height=\"6\" fill=") &&
                                  count_substr(m, ">h</text>") == 2 &&
                                  count_substr(m, ">␣</text>") == 2 &&
                                  count_substr(m, ">↵</text>") == 2,
                              "no labelled map of %s at step %ld, layer %d, head %d", names[v],
                              steps[j], l, h);
                    free(m);
                }
    // the probe sequence, with the stand-ins for whitespace
    CHECK(has(html, "<p class=\"probe\">hi␣yo↵</p>"));
    CHECK(!exists("report.html.tmp"));
}

// --compare-scaling's report.html: md's text and tables, the four panels, the maps at steps 0, 5
// and 10, each cell in the colour of its weight, the masked future greyed.
static void test_html_scale(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    char err[256] = "";
    CHECK_MSG(run_synthetic(1, err, sizeof(err)), "%s", err);
    char *html = slurp("report.html"), *md = slurp("report.md");
    CHECK(html && md);
    if (html && md) {
        static const char *const names[2] = {"scaled", "unscaled"};
        static const long steps[3] = {0, 5, 10};
        check_report_html(html, md, 5, NULL, 2, names, steps, 3);
        CHECK(has(html, "<code class=\"cmd\">./train cfg.json --compare-scaling</code>"));
        CHECK(has(html, "step 0 (start)") && has(html, "step 5 (middle)") &&
              has(html, "step 10 (end)"));
        // scaled at step 0: row 3 gives 0.3 to its key and 0.7/3 to keys 0-2 (one run); row 0 all
        // to key 0
        char *m = map_svg(html, "scaled", 0, 1, 1);
        CHECK(map_draws(m, 3, 0, 3, 0.7 / 3) && map_draws(m, 3, 3, 1, 0.3) &&
              map_draws(m, 0, 0, 1, 1.0));
        CHECK(m && has(m, "fill=\"#d9d9d9\"") && !has(m, "#d00000"));  // causal: the future greyed
        free(m);
        // unscaled at the end: 0.95 on its own key
        m = map_svg(html, "unscaled", 10, 0, 0);
        CHECK(map_draws(m, 4, 4, 1, 0.95) &&
              map_draws(m, 4, 0, 4, 0.05 / 4) == (floor(0.05 / 4 * 64 + 0.5) > 0));
        CHECK(!map_draws(m, 4, 4, 1, 0.3));
        free(m);
        // the reading is report.md's
        char *b = line_starting(md, "- **Scaled attention ends ahead.**");
        CHECK(b != NULL);
        free(b);
    }
    free(html);
    free(md);
    tmp_cleanup();
}

// A leak: six panels, and the maps show the leaking variants' weights right of the causal
// boundary (a red staircase) where the causal one's are greyed; a sample line that starts with
// "## " stays in its sample.
static void test_html_leak(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Scenario sc = MASK3;
    sc.sample[2] = "## not a heading\n<b>&";
    char err[256] = "";
    CHECK_MSG(run_scenario(&sc, err, sizeof err), "%s", err);
    char *html = slurp("report.html"), *md = slurp("report.md");
    CHECK(html && md);
    if (html && md) {
        static const char *const names[3] = {"causal", "zero", "none"};
        static const long steps[3] = {0, 5, 10};
        check_report_html(html, md, 7, NULL, 3, names, steps, 3);
        char *m = map_svg(html, "causal", 5, 0, 1);
        CHECK(m && has(m, "fill=\"#d9d9d9\"") && !has(m, "#d00000"));
        free(m);
        m = map_svg(html, "none", 5, 0, 1);
        CHECK(m && !has(m, "fill=\"#d9d9d9\"") && has(m, "stroke=\"#d00000\""));
        // row 0 of a leaky head gives (1 - a) / 5 to each later key: drawn right of the staircase
        double a = fmin(0.3 + 0.06 * 5 + 0.1 * 2, 0.95);
        CHECK(map_draws(m, 0, 1, 5, (1 - a) / 5));
        free(m);
        CHECK(has(html, "<pre><code>## not a heading\n&lt;b&gt;&amp;</code></pre>"));
        CHECK(!has(html, "<h2>not a heading</h2>"));
        CHECK(has(html, "(correct)"));
    }
    free(html);
    free(md);
    tmp_cleanup();
}

// Which probes the log keeps: the first, the one nearest max_steps / 2 (the earlier of two) and
// the last; a longer sequence is drawn from its first COMPARE_MAP_T positions; a call of another
// shape is ignored.
static void test_html_kept_probes(void) {
    if (!tmp_setup()) SKIP("mkdtemp failed");
    Config cfg;
    small_config(&cfg);
    CompareLog *log =
        compare_log_open(g_dir, 10, "train.lr", (const char *const[]){"0.001", "0.01"}, 2);
    enum { T = COMPARE_MAP_T + 6 };
    real *P = calloc((size_t)MAP_L * MAP_NH * T * T, sizeof(real));
    uint32_t text[T];
    for (int t = 0; t < T; t++) text[t] = (uint32_t)('a' + t % 26);
    for (int t = 0; t < T; t++) P[(size_t)t * T + t] = 1;  // layer 0, head 0: each query on itself
    for (long step = 0; step <= 10; step += 2)
        for (int v = 0; v < 2; v++) {
            compare_log_step(log, v, step + 1, 2.0, NAN, NAN);
            compare_log_attention(log, v, step, P, MAP_L, MAP_NH, T, text);
            compare_log_attention(log, v, step + 1, P, 1, MAP_NH, T,
                                  text);  // another shape: ignored
        }
    char err[256] = "";
    CHECK_MSG(compare_log_finish(log, &cfg, err, sizeof err), "%s", err);
    free(P);
    char *html = slurp("report.html");
    CHECK(html != NULL);
    if (html) {
        CHECK(has(html, "step 0 (start)") && has(html, "step 4 (middle)") &&
              has(html, "step 10 (end)"));
        CHECK(!has(html, "data-step=\"6\"") && !has(html, "data-step=\"2\"") &&
              !has(html, "data-step=\"11\""));
        CHECK(count_substr(html, "<svg class=\"hm\"") == 2 * 3 * MAP_L * MAP_NH);
        CHECK(has(html, "<rect width=\"64\" height=\"64\" fill=") &&
              has(html, "for the first 64 of the sequence's 70 positions"));
        // 64 positions, 2 heads side by side: every 6th labelled (0, 6, ..., 60: 11 a side)
        char *m0 = map_svg(html, "0.01", 4, 0, 0);
        CHECK(m0 && count_substr(m0, "</text>") == 2 * 11 &&
              has(html, "every 6th row and column, from the first"));
        free(m0);
        char *m = map_svg(html, "0.01", 4, 0, 0);
        CHECK(map_draws(m, 63, 63, 1, 1.0) && !map_draws(m, 64, 64, 1, 1.0));
        free(m);
        CHECK(html_balanced(html));
        // the compared train.lr: each variant's value in the configuration table and the SVG's
        // subtitle, not the configuration's (which neither variant ran)
        char *md = slurp("report.md"), *svg = slurp("compare.svg");
        CHECK_MSG(md && has(md, "| 0.001 / 0.01 |"), "%.600s", md ? md : "no report.md");
        CHECK(svg && has(svg, " · lr 0.001 / 0.01 · "));
        CHECK(has(html, "<td>0.001 / 0.01</td>"));
        free(md);
        free(svg);
    }
    free(html);
    tmp_cleanup();
}

const TestCase tests_report[] = {
    {"report_csv_layout_and_values", test_csv_layout_and_values},
    {"report_scale_output_unchanged", test_scale_output_unchanged},
    {"report_md_scaled_wins", test_md_scaled_wins},
    {"report_md_unscaled_wins", test_md_unscaled_wins},
    {"report_svg", test_svg},
    {"report_no_probes", test_no_probes},
    {"report_output_logits_panel", test_output_logits_panel},
    {"report_unordered_input", test_unordered_input},
    {"report_io_error", test_io_error},
    {"report_open_and_names", test_open_and_names},
    {"report_leak_mask_symptoms", test_leak_mask_symptoms},
    {"report_leak_without_symptoms", test_leak_without_symptoms},
    {"report_leak_softmax_axis", test_leak_softmax_axis},
    {"report_leak_without_correct_model", test_leak_without_correct_model},
    {"report_other_key_four_variants", test_other_key_four_variants},
    {"report_other_key_level_and_leaking", test_other_key_level_and_leaking},
    {"report_scale_three_variants", test_scale_three_variants},
    {"report_html_scale", test_html_scale},
    {"report_html_leak", test_html_leak},
    {"report_html_kept_probes", test_html_kept_probes},
    {NULL, NULL},
};
