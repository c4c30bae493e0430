// tests/test_sweep.c: the learning-rate sweep (./train --sweep train.lr=A..B/N, run/sweep.c) as
// a user runs it: bad input refused before anything is written, the outputs (sweep.csv, sweep.svg,
// report.md) and the sensitivity they state, every run an ordinary run from the same weights,
// a divergence that ends one run only, and a stop and resume that keep the finished runs and end
// with the same numbers as a sweep never stopped. Runs ./train and build/train-test from the
// repository root (make test does).
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/sweep.h"
#include "programs.h"
#include "test.h"

static void slurpf(char *buf, size_t n, const char *fmt, ...) {
    char path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    slurp(path, buf, n);
}

static int exists(const char *fmt, ...) {
    char path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    struct stat st;
    return stat(path, &st) == 0;
}


static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

// A tiny model: each run of a sweep trains in a fraction of a second.
static void write_tiny_config(int steps) {
    char path[128];
    snprintf(path, sizeof path, "%s/cfg.json", g_dir);
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); exit(1); }
    fprintf(f,
            "{\"name\": \"tiny\",\n"
            " \"model\": {\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 16, \"block_size\": 16},\n"
            " \"data\": {\"path\": \"data/default.txt\", \"val_fraction\": 0.02},\n"
            " \"train\": {\"batch_size\": 4, \"max_steps\": %d, \"warmup_steps\": 3, \"lr\": 1e-2, \"min_lr\": 1e-3,\n"
            "           \"ckpt_interval\": 5, \"out_dir\": \"%s/out\", \"seed\": 7, \"threads\": 2},\n"
            " \"log\": {\"log_interval\": 10, \"eval_interval\": 10, \"eval_steps\": 2, \"attn_interval\": 5},\n"
            " \"sample\": {\"tokens\": 0}}\n",
            steps, g_dir);
    fclose(f);
}

// ---- bad input: one line, exit 2, nothing written ----
static void test_sweep_bad_input(void) {
    tmpdir("sweep");
    write_tiny_config(10);
    static const struct { const char *args, *needle; } BAD[] = {
        {"--sweep train.lr=0..1e-2/3", "> 0"},
        {"--sweep train.lr=-1e-3..1e-2/3", "> 0"},
        {"--sweep train.lr=nan..1e-2/3", "> 0"},
        {"--sweep train.lr=1e-2..1e-3/3", "A < B"},
        {"--sweep train.lr=1e-2..1e-2/3", "A < B"},
        {"--sweep train.lr=1e-3..1e-2/1", "from 2 to 16"},
        {"--sweep train.lr=1e-3..1e-2/17", "from 2 to 16"},
        {"--sweep train.lr=1e-3..1e-2/2.5", "from 2 to 16"},
        {"--sweep train.lr=1e-3..1e-2", "A..B/N"},
        {"--sweep train.lr=1e-3..1e-2/9 --compare model.attn_scale=sqrt,none", "18 runs"},
        {"--sweep train.lr=1e-3..1e-2/6 --compare model.attn_scale=sqrt,none,1", "18 runs"},
        {"--sweep model.n_embd=16..32/2", "shape"},
        {"--sweep model.n_head=1..2/2", "shape"},
        {"--sweep train.beta2=0.9..0.99/3", "train.lr=A..B/N"},
        {"--sweep train.lr=1e-3..1e-2/3 --compare train.min_lr=1e-4,1e-5", "train.min_lr"},
        {"--sweep train.lr=1e-3..1e-2/3 --resume @/out/checkpoint.bin", "--resume"},
        {"--sweep train.lr=1e-3..1e-2/3 --sweep train.lr=1e-3..1e-2/4", "twice"},
        {"--sweep train.lr=1e-3..1e-2/3 --train.max_steps=0", "train.max_steps"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char args[512] = "";
        for (const char *p = BAD[i].args; *p && strlen(args) < sizeof args - 64; p++) {
            size_t l = strlen(args);
            if (*p == '@') snprintf(args + l, sizeof args - l, "%s", g_dir);
            else { args[l] = *p; args[l + 1] = 0; }
        }
        // the resume row without a config: --resume and a config together is its own error
        int code = strstr(args, "--resume") ? run("./train %s", args) : run("./train %s/cfg.json %s", g_dir, args);
        CHECK_MSG(code == 2, "'%s': exit %d, expected 2; stderr: %s", args, code, g_err);
        CHECK_MSG(count_lines(g_err) == 1, "'%s': stderr has %d lines: %s", args, count_lines(g_err), g_err);
        CHECK_MSG(strstr(g_err, BAD[i].needle) != NULL, "'%s': stderr lacks '%s': %s", args, BAD[i].needle, g_err);
        CHECK_MSG(!exists("%s/out", g_dir), "'%s' wrote %s/out", args, g_dir);
    }
    cleanup();
}

// ---- the grid ----
static void test_sweep_grid_and_sensitivity(void) {
    char err[256];
    SweepGrid g;
    CHECK(sweep_parse("train.lr=1e-3..1e-1/5", &g, err, sizeof err));
    CHECK(g.n == 5);
    // log-spaced: equal ratios, the ends exact
    CHECK(sweep_lr(&g, 0) == 1e-3 && sweep_lr(&g, 4) == 1e-1);
    for (int i = 1; i < 5; i++) CHECK_NEAR(sweep_lr(&g, i) / sweep_lr(&g, i - 1), sqrt(10.0), 1e-12);
    // S = mean_i min(L_i, L0) - min_i L_i; a diverged run (NaN) and a loss above L0 count as L0
    double loss[4] = {2.0, 1.5, NAN, 5.0};
    CHECK_NEAR(sweep_sensitivity(loss, 4, 4.0), (2.0 + 1.5 + 4.0 + 4.0) / 4 - 1.5, 1e-12);
    double flat[3] = {1.5, 1.5, 1.5};
    CHECK(sweep_sensitivity(flat, 3, 4.0) == 0);
}

// sweep.csv's rows as fields: variant, lr, train, val, diverged, step, max logit, min H, loss0
typedef struct { char variant[32], diverged[8]; double lr, train, val, logit, entropy, loss0; long step; } Row;

static int read_rows(const char *csv, Row *rows, int max) {
    const char *p = strchr(csv, '\n');
    int n = 0;
    while (p && p[1] && n < max) {
        p++;
        Row *r = &rows[n];
        memset(r, 0, sizeof *r);
        char f[9][64];
        int k = 0, c = 0;
        memset(f, 0, sizeof f);
        for (; *p && *p != '\n'; p++) {
            if (*p == ',') { k++; c = 0; continue; }
            if (k < 9 && c < 63) f[k][c++] = *p;
        }
        snprintf(r->variant, sizeof r->variant, "%.31s", f[0]);
        snprintf(r->diverged, sizeof r->diverged, "%.7s", f[4]);
        r->lr = atof(f[1]);
        r->train = f[2][0] ? atof(f[2]) : NAN;
        r->val = f[3][0] ? atof(f[3]) : NAN;
        r->step = f[5][0] ? atol(f[5]) : -1;
        r->logit = f[6][0] ? atof(f[6]) : NAN;
        r->entropy = f[7][0] ? atof(f[7]) : NAN;
        r->loss0 = f[8][0] ? atof(f[8]) : NAN;
        n++;
        p = strchr(p, '\n') ? p : NULL;
    }
    return n;
}

// The first data row of a CSV.
static void first_row(const char *path, char *out, size_t n) {
    char text[65536];
    slurp(path, text, sizeof text);
    const char *p = strchr(text, '\n');
    out[0] = 0;
    if (!p) return;
    const char *e = strchr(p + 1, '\n');
    snprintf(out, n, "%.*s", e ? (int)(e - p - 1) : 0, p + 1);
}

static void test_sweep_outputs(void) {
    tmpdir("sweep");
    write_tiny_config(20);
    int code = run("./train %s/cfg.json --sweep train.lr=1e-3..1e-1/3 --compare model.attn_scale=sqrt,none", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    // one progress line per run, with its loss and the time left
    for (int i = 1; i <= 6; i++) {
        char want[32];
        snprintf(want, sizeof want, "run %d/6 | ", i);
        const char *line = strstr(g_out, want);
        CHECK_MSG(line && strstr(line, "val loss") && strstr(line, "eta"), "no progress line '%s' in: %s", want, g_out);
    }
    char csv[16384];
    slurpf(csv, sizeof csv, "%s/out/sweep.csv", g_dir);
    CHECK(strncmp(csv, "variant,lr,train_loss,val_loss,diverged,diverged_step,max_attn_logit,min_entropy_norm,loss0\n",
                  91) == 0);
    Row rows[16];
    int n = read_rows(csv, rows, 16);
    CHECK_MSG(n == 6, "sweep.csv has %d rows: %s", n, csv);
    double lrs[3] = {1e-3, 1e-2, 1e-1};
    for (int i = 0; i < n; i++) {
        CHECK(strcmp(rows[i].variant, i % 2 ? "none" : "sqrt") == 0);
        CHECK_NEAR(rows[i].lr, lrs[i / 2], 1e-9);
        CHECK(strcmp(rows[i].diverged, "no") == 0 && rows[i].step == -1);
        CHECK(isfinite(rows[i].val) && isfinite(rows[i].train) && rows[i].logit > 0);
        CHECK(rows[i].entropy > 0 && rows[i].entropy <= 1.0001);
        CHECK(rows[i].loss0 == rows[i % 2].loss0);
    }
    // the same first weights and first batch at every learning rate: step 1's loss (before any
    // update) is the same in every run of a variant
    char a[256], b[256];
    for (int i = 1; i < 3; i++) {
        char pa[256], pb[256];
        snprintf(pa, sizeof pa, "%s/out/sqrt_lr0/metrics.csv", g_dir);
        snprintf(pb, sizeof pb, "%s/out/sqrt_lr%d/metrics.csv", g_dir, i);
        first_row(pa, a, sizeof a);
        first_row(pb, b, sizeof b);
        // "1,LOSS,": the step and its loss
        const char *end = strchr(a, ',') ? strchr(strchr(a, ',') + 1, ',') : NULL;
        CHECK_MSG(end && strncmp(a, b, (size_t)(end - a)) == 0, "step 1 differs: %s / %s", a, b);
    }
    // each run is the ordinary run of its learning rate (min_lr keeps the config's ratio): the
    // same metrics but for the step times
    code = run("./train %s/cfg.json --model.attn_scale=none --train.lr=0.01 --train.min_lr=0.001 --train.out_dir=%s/single"
               " && cut -d, -f1-4,6- %s/single/metrics.csv > %s/m1 && cut -d, -f1-4,6- %s/out/none_lr1/metrics.csv > %s/m2"
               " && cmp %s/m1 %s/m2", g_dir, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir);
    CHECK_MSG(code == 0, "the sweep's run differs from the single run: %s %s", g_out, g_err);
    // report.md: the sensitivity per variant, as sweep.csv's numbers give it
    char md[32768];
    slurpf(md, sizeof md, "%s/out/report.md", g_dir);
    const char *names[2] = {"sqrt", "none"};
    for (int v = 0; v < 2; v++) {
        double loss[3];
        for (int i = 0; i < 3; i++) loss[i] = rows[2 * i + v].val;
        double want = sweep_sensitivity(loss, 3, rows[v].loss0);
        char key[64];
        snprintf(key, sizeof key, "- %s: learning-rate sensitivity ", names[v]);
        const char *p = strstr(md, key);
        CHECK_MSG(p != NULL, "report.md lacks '%s'", key);
        if (p) CHECK_NEAR(atof(p + strlen(key)), want, 6e-4);  // from 4-decimal losses
        CHECK(want >= 0);
    }
    // sweep.svg: both panels, a curve per variant
    char svg[200000];
    slurpf(svg, sizeof svg, "%s/out/sweep.svg", g_dir);
    CHECK(strstr(svg, "(a) Final validation loss") && strstr(svg, "(b) Max attention logit"));
    CHECK(strstr(svg, "</svg>") != NULL);
    int curves = 0;
    for (const char *p = svg; (p = strstr(p, "<polyline")); p++) curves++;
    CHECK_MSG(curves == 2 + 6, "sweep.svg has %d polylines, expected 2 loss curves and 6 logit curves", curves);
    // a second sweep into the same directory is refused, naming the resume
    code = run("./train %s/cfg.json --sweep train.lr=1e-3..1e-1/3", g_dir);
    CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, "--resume"), "exit %d: %s", code, g_err);
    cleanup();
}

// ---- a divergence ends its run, not the sweep ----
static void test_sweep_divergence_recorded(void) {
    tmpdir("sweep");
    write_tiny_config(20);
    // run 2 of 3 (lr 0.01): non-finite losses from step 4 on, the guard stops it at 3 in a row
    int code = run("env TGPT_TEST_SWEEP_RUN=2 TGPT_TEST_NONFINITE=4:100 build/train-test %s/cfg.json"
                   " --sweep train.lr=1e-3..1e-1/3 --train.max_bad_steps=3", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_out, "run 2/3 | base lr 0.01 | diverged at step") != NULL, "%s", g_out);
    char csv[8192];
    slurpf(csv, sizeof csv, "%s/out/sweep.csv", g_dir);
    Row rows[4];
    int n = read_rows(csv, rows, 4);
    CHECK_MSG(n == 3, "%d rows: %s", n, csv);
    CHECK(strcmp(rows[0].diverged, "no") == 0 && strcmp(rows[2].diverged, "no") == 0);
    CHECK_MSG(strcmp(rows[1].diverged, "yes") == 0 && rows[1].step >= 3 && rows[1].step < 20 && isnan(rows[1].val),
              "row 2: %s", csv);
    // the sensitivity counts it at the initial loss
    char md[16384];
    slurpf(md, sizeof md, "%s/out/report.md", g_dir);
    double loss[3] = {rows[0].val, rows[1].loss0, rows[2].val};
    const char *p = strstr(md, "- base: learning-rate sensitivity ");
    CHECK(p != NULL);
    if (p) CHECK_NEAR(atof(p + 34), sweep_sensitivity(loss, 3, rows[0].loss0), 6e-4);
    CHECK(strstr(md, "it first diverges at lr 0.01") != NULL);
    cleanup();
}

// ---- stop and resume ----
static void test_sweep_stop_and_resume(void) {
    tmpdir("sweep");
    write_tiny_config(20);
    // a sweep never stopped, for the numbers
    int code = run("./train %s/cfg.json --sweep train.lr=1e-3..1e-1/2 --compare model.attn_scale=sqrt,none"
                   " --train.out_dir=%s/whole", g_dir, g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    // the same sweep, Ctrl-C in run 3 of 4 at its step 7 (its checkpoint of step 7 saved)
    code = run("env TGPT_TEST_SWEEP_RUN=3 TGPT_TEST_SIGNAL=INT:step:8 build/train-test %s/cfg.json"
               " --sweep train.lr=1e-3..1e-1/2 --compare model.attn_scale=sqrt,none", g_dir);
    CHECK_MSG(code == 130, "exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_err, "sweep stopped in run 3 of 4") && strstr(g_err, "./train --resume"), "%s", g_err);
    CHECK(exists("%s/out/sqrt_lr0/summary.json", g_dir) && exists("%s/out/none_lr0/summary.json", g_dir));
    CHECK(exists("%s/out/sqrt_lr1/checkpoint.bin", g_dir) && !exists("%s/out/sqrt_lr1/summary.json", g_dir));
    CHECK(!exists("%s/out/none_lr1", g_dir));
    char before[8192], after[8192];
    slurpf(before, sizeof before, "%s/out/sqrt_lr0/summary.json", g_dir);
    // resumed: the finished runs kept, the third from its checkpoint, the fourth fresh
    code = run("build/train-test --resume %s/out", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_out, "run 1/4 | sqrt lr 0.001 | kept") && strstr(g_out, "run 2/4 | none lr 0.001 | kept") &&
              strstr(g_out, "run 3/4 | sqrt lr 0.1 | val loss") && strstr(g_out, "run 4/4 | none lr 0.1 | val loss"),
              "%s", g_out);
    slurpf(after, sizeof after, "%s/out/sqrt_lr0/summary.json", g_dir);
    CHECK_MSG(strcmp(before, after) == 0, "a finished run was trained again");
    char log[65536];
    slurpf(log, sizeof log, "%s/out/sqrt_lr1/run.log", g_dir);
    CHECK_MSG(strstr(log, "resum") != NULL, "run 3 did not resume from its checkpoint: %s", log);
    // the same numbers as the sweep never stopped
    char whole[8192], resumed[8192];
    slurpf(whole, sizeof whole, "%s/whole/sweep.csv", g_dir);
    slurpf(resumed, sizeof resumed, "%s/out/sweep.csv", g_dir);
    CHECK_MSG(strcmp(whole, resumed) == 0, "sweep.csv differs:\n%s\n---\n%s", whole, resumed);
    // a sweep resumes as it was started
    code = run("./train --resume %s/out --train.lr=0.5", g_dir);
    CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, "takes no overrides"), "exit %d: %s", code, g_err);
    cleanup();
}

const TestCase tests_sweep[] = {
    {"sweep_bad_input", test_sweep_bad_input},
    {"sweep_grid_and_sensitivity", test_sweep_grid_and_sensitivity},
    {"sweep_outputs", test_sweep_outputs},
    {"sweep_divergence_recorded", test_sweep_divergence_recorded},
    {"sweep_stop_and_resume", test_sweep_stop_and_resume},
    {NULL, NULL},
};
