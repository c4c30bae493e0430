// tests/test_sweep.c: the learning-rate sweep (./train --sweep train.lr=A..B/N, run/sweep.c) as
// a user runs it: bad input refused before anything is written, the outputs (sweep.csv, sweep.svg,
// report.md) and the sensitivity they state, every run an ordinary run from the same weights,
// a divergence that ends one run only, and a stop and resume that keep the finished runs and end
// with the same numbers as a sweep never stopped. Runs ./train and build/train-test from the
// repository root (make test does).
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(
        f,
        "{\"name\": \"tiny\",\n"
        " \"model\": {\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 16, \"block_size\": 16},\n"
        " \"data\": {\"path\": \"data/default.txt\", \"val_fraction\": 0.02},\n"
        " \"train\": {\"batch_size\": 4, \"max_steps\": %d, \"warmup_steps\": 3, \"lr\": 1e-2, "
        "\"min_lr\": 1e-3,\n"
        "           \"ckpt_interval\": 5, \"out_dir\": \"%s/out\", \"seed\": 7, \"threads\": 2},\n"
        " \"log\": {\"log_interval\": 10, \"eval_interval\": 10, \"eval_steps\": 2, "
        "\"attn_interval\": 5},\n"
        " \"sample\": {\"tokens\": 0}}\n",
        steps, g_dir);
    fclose(f);
}

// ---- bad input: one line, exit 2, nothing written ----
static void test_sweep_bad_input(void) {
    tmpdir("sweep");
    write_tiny_config(10);
    static const struct {
        const char *args, *needle;
    } BAD[] = {
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
        char args[512];
        expand_at(args, sizeof args, BAD[i].args, g_dir);
        // the resume row without a config: --resume and a config together is its own error
        int code = strstr(args, "--resume") ? run("./train %s", args)
                                            : run("./train %s/cfg.json %s", g_dir, args);
        CHECK_MSG(code == 2, "'%s': exit %d, expected 2; stderr: %s", args, code, g_err);
        CHECK_MSG(count_lines(g_err) == 1, "'%s': stderr has %d lines: %s", args,
                  count_lines(g_err), g_err);
        CHECK_MSG(strstr(g_err, BAD[i].needle) != NULL, "'%s': stderr lacks '%s': %s", args,
                  BAD[i].needle, g_err);
        CHECK_MSG(!exists("%s/out", g_dir), "'%s' wrote %s/out", args, g_dir);
    }
    // an out_dir whose runs' directories (<out_dir>/base_lr0) are longer than a run's out_dir may
    // be: refused before the first run, nothing created
    char longdir[1100];
    int w = snprintf(longdir, sizeof longdir, "%s/", g_dir);
    while (w < 1015)
        w += snprintf(longdir + w, sizeof longdir - (size_t)w, "%s", w % 200 == 199 ? "/" : "d");
    int code =
        run("./train %s/cfg.json --sweep train.lr=1e-3..1e-2/2 --train.out_dir=%s", g_dir, longdir);
    CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, "train.out_dir"), "exit %d: %s",
              code, g_err);
    const char *slash = strchr(longdir + strlen(g_dir) + 1, '/');
    CHECK_MSG(slash && !exists("%.*s", (int)(slash - longdir), longdir),
              "a sweep refused created its directory");
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
    for (int i = 1; i < 5; i++)
        CHECK_NEAR(sweep_lr(&g, i) / sweep_lr(&g, i - 1), sqrt(10.0), 1e-12);
    // S = mean_i min(L_i, L0) - min_i L_i; a diverged run (NaN) and a loss above L0 count as L0
    double loss[4] = {2.0, 1.5, NAN, 5.0};
    CHECK_NEAR(sweep_sensitivity(loss, 4, 4.0), (2.0 + 1.5 + 4.0 + 4.0) / 4 - 1.5, 1e-12);
    double flat[3] = {1.5, 1.5, 1.5};
    CHECK(sweep_sensitivity(flat, 3, 4.0) == 0);
}

// sweep.csv's rows as fields: variant, lr, train, val, diverged, step, max logit, min H, loss0
typedef struct {
    char variant[32], diverged[8];
    double lr, train, val, logit, entropy, loss0;
    long step;
} Row;

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
            if (*p == ',') {
                k++;
                c = 0;
                continue;
            }
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
    int code = run(
        "./train %s/cfg.json --sweep train.lr=1e-3..1e-1/3 --compare model.attn_scale=sqrt,none",
        g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    // one progress line per run, with its loss and the time left
    for (int i = 1; i <= 6; i++) {
        char want[32];
        snprintf(want, sizeof want, "run %d/6 | ", i);
        const char *line = strstr(g_out, want);
        CHECK_MSG(line && strstr(line, "val loss") && strstr(line, "eta"),
                  "no progress line '%s' in: %s", want, g_out);
    }
    char csv[16384];
    slurpf(csv, sizeof csv, "%s/out/sweep.csv", g_dir);
    CHECK(strncmp(csv,
                  "variant,lr,train_loss,val_loss,diverged,diverged_step,max_attn_logit,min_"
                  "entropy_norm,loss0\n",
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
    code = run("./train %s/cfg.json --model.attn_scale=none --train.lr=0.01 --train.min_lr=0.001 "
               "--train.out_dir=%s/single"
               " && cut -d, -f1-4,6- %s/single/metrics.csv > %s/m1 && cut -d, -f1-4,6- "
               "%s/out/none_lr1/metrics.csv > %s/m2"
               " && cmp %s/m1 %s/m2",
               g_dir, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir, g_dir);
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
    CHECK_MSG(curves == 2 + 6,
              "sweep.svg has %d polylines, expected 2 loss curves and 6 logit curves", curves);
    // a second sweep into the same directory is refused, naming the resume
    code = run("./train %s/cfg.json --sweep train.lr=1e-3..1e-1/3", g_dir);
    CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, "--resume"), "exit %d: %s",
              code, g_err);
    cleanup();
}

// ---- a divergence ends its run, not the sweep ----
static void test_sweep_divergence_recorded(void) {
    tmpdir("sweep");
    write_tiny_config(20);
    // run 2 of 3 (lr 0.01): non-finite losses from step 4 on, the guard stops it at 3 in a row
    int code =
        run("env TGPT_TEST_SWEEP_RUN=2 TGPT_TEST_NONFINITE=4:100 build/train-test %s/cfg.json"
            " --sweep train.lr=1e-3..1e-1/3 --train.max_bad_steps=3",
            g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_out, "run 2/3 | base lr 0.01 | diverged at step") != NULL, "%s", g_out);
    char csv[8192];
    slurpf(csv, sizeof csv, "%s/out/sweep.csv", g_dir);
    Row rows[4];
    int n = read_rows(csv, rows, 4);
    CHECK_MSG(n == 3, "%d rows: %s", n, csv);
    CHECK(strcmp(rows[0].diverged, "no") == 0 && strcmp(rows[2].diverged, "no") == 0);
    CHECK_MSG(strcmp(rows[1].diverged, "yes") == 0 && rows[1].step >= 3 && rows[1].step < 20 &&
                  isnan(rows[1].val),
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
    int code =
        run("./train %s/cfg.json --sweep train.lr=1e-3..1e-1/2 --compare model.attn_scale=sqrt,none"
            " --train.out_dir=%s/whole",
            g_dir, g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    // the same sweep, Ctrl-C in run 3 of 4 at its step 7 (its checkpoint of step 7 saved)
    code = run("env TGPT_TEST_SWEEP_RUN=3 TGPT_TEST_SIGNAL=INT:step:8 build/train-test %s/cfg.json"
               " --sweep train.lr=1e-3..1e-1/2 --compare model.attn_scale=sqrt,none",
               g_dir);
    CHECK_MSG(code == 130, "exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_err, "sweep stopped in run 3 of 4") && strstr(g_err, "./train --resume"),
              "%s", g_err);
    CHECK(exists("%s/out/sqrt_lr0/summary.json", g_dir) &&
          exists("%s/out/none_lr0/summary.json", g_dir));
    CHECK(exists("%s/out/sqrt_lr1/checkpoint.bin", g_dir) &&
          !exists("%s/out/sqrt_lr1/summary.json", g_dir));
    CHECK(!exists("%s/out/none_lr1", g_dir));
    char before[8192], after[8192];
    slurpf(before, sizeof before, "%s/out/sqrt_lr0/summary.json", g_dir);
    // resumed: the finished runs kept, the third from its checkpoint, the fourth fresh
    code = run("build/train-test --resume %s/out", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_out, "run 1/4 | sqrt lr 0.001 | kept") &&
                  strstr(g_out, "run 2/4 | none lr 0.001 | kept") &&
                  strstr(g_out, "run 3/4 | sqrt lr 0.1 | val loss") &&
                  strstr(g_out, "run 4/4 | none lr 0.1 | val loss"),
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
    CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, "takes no overrides"),
              "exit %d: %s", code, g_err);
    cleanup();
}

// ---- a sweep trusts none of its own files ----

// Whether the file holds exactly text.
static int holds(const char *path, const char *text) {
    char buf[256];
    slurp(path, buf, sizeof buf);
    return strcmp(buf, text) == 0;
}

// A resumed sweep never reports another sweep's runs as its own: an overwrite removes the runs
// it replaces, and each finished run's summary.json (and a stopped run's checkpoint) must be the
// run it stands for (lr, steps, config) or the resume is refused.
static void test_sweep_resume_refuses_other_runs(void) {
    tmpdir("sweep");
    write_tiny_config(12);
    // an older sweep of 4 steps at lr 1e-3 .. 1e-1, then a new one of 20 steps at 1e-4 .. 1e-2
    // over it, stopped in its run 2: run 3's directory still held the older sweep's lr 0.1 run
    int code = run("./train %s/cfg.json --train.max_steps=4 --sweep train.lr=1e-3..1e-1/3", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    code = run("env TGPT_TEST_SWEEP_RUN=2 TGPT_TEST_SIGNAL=INT:step:8 build/train-test %s/cfg.json"
               " --sweep train.lr=1e-4..1e-2/3 --train.overwrite=true",
               g_dir);
    CHECK_MSG(code == 130, "exit %d: %s", code, g_err);
    CHECK_MSG(!exists("%s/out/base_lr2", g_dir),
              "the overwrite left the older sweep's run 3 in %s/out/base_lr2", g_dir);
    code = run("build/train-test --resume %s/out", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_out, "run 3/3 | base lr 0.01 | val loss") != NULL,
              "run 3 was not trained: %s", g_out);
    char csv[8192];
    slurpf(csv, sizeof csv, "%s/out/sweep.csv", g_dir);
    Row rows[4];
    int n = read_rows(csv, rows, 4);
    CHECK_MSG(n == 3, "%d rows: %s", n, csv);
    for (int i = 0; i < 3; i++) {
        char summary[16384];
        slurpf(summary, sizeof summary, "%s/out/base_lr%d/summary.json", g_dir, i);
        const char *steps = strstr(summary, "\"steps\": ");
        const char *lr = strstr(summary, "\"lr\": ");
        CHECK_MSG(steps && atol(steps + 9) == 12, "run %d's summary.json: %s", i + 1, summary);
        CHECK_MSG(lr && i < n && fabs(atof(lr + 6) - rows[i].lr) < 1e-12,
                  "row %d (lr %g) from a run of another lr: %s", i + 1, i < n ? rows[i].lr : NAN,
                  summary);
    }
    // a sweep over a plain run's directory (overwrite) leaves none of that run's files beside it
    code = run("./train %s/cfg.json --train.max_steps=4 --train.out_dir=%s/plain && ./train "
               "%s/cfg.json --train.max_steps=4"
               " --sweep train.lr=1e-3..1e-1/2 --train.out_dir=%s/plain --train.overwrite=true",
               g_dir, g_dir, g_dir, g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    static const char *const PLAIN[] = {"checkpoint.bin", "best.bin", "metrics.csv",
                                        "attention.csv", "summary.json"};
    for (int i = 0; i < 5; i++)
        CHECK_MSG(!exists("%s/plain/%s", g_dir, PLAIN[i]),
                  "the overwrite left the run's %s beside the sweep", PLAIN[i]);
    // a run of another sweep put in a stopped sweep's directory by hand: refused, naming it
    code = run("./train %s/cfg.json --sweep train.lr=1e-3..1e-1/2 --train.out_dir=%s/other", g_dir,
               g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    code = run("env TGPT_TEST_SWEEP_RUN=2 TGPT_TEST_SIGNAL=INT:step:8 build/train-test %s/cfg.json"
               " --sweep train.lr=1e-4..1e-2/2 --train.out_dir=%s/mixed",
               g_dir, g_dir);
    CHECK_MSG(code == 130, "exit %d: %s", code, g_err);
    static const struct {
        const char *file, *needle;
    } FOREIGN[] = {
        {"base_lr0/summary.json", "train.lr is 0.001, expected 0.0001"},  // a finished run
        {"base_lr1/checkpoint.bin", "train.lr is 0.1, expected 0.01"},    // the stopped run
    };
    for (int i = 0; i < 2; i++) {
        const char *file = FOREIGN[i].file;
        code = run("rm -rf %s/m && cp -a %s/mixed %s/m && cp %s/other/%s %s/m/%s && "
                   "build/train-test --resume %s/m",
                   g_dir, g_dir, g_dir, g_dir, file, g_dir, file, g_dir);
        CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, file) &&
                      strstr(g_err, FOREIGN[i].needle),
                  "%s of another sweep: exit %d: %s", file, code, g_err);
    }
    cleanup();
}

// Every file a sweep reads back is opened only when it is a regular file, and read within a
// bound: a FIFO, /dev/zero, a symbolic link or a directory where a sweep's file belongs is
// refused in one line, exit 2, without waiting and without writing through it.
static void test_sweep_files_not_regular_refused(void) {
    tmpdir("sweep");
    write_tiny_config(12);
    int code =
        run("env TGPT_TEST_SWEEP_RUN=2 TGPT_TEST_SIGNAL=INT:step:8 build/train-test %s/cfg.json"
            " --sweep train.lr=1e-3..1e-1/3",
            g_dir);
    CHECK_MSG(code == 130, "exit %d: %s", code, g_err);
    static const struct {
        const char *make, *needle;
    } BAD[] = {
        {"rm @/sweep.json && mkfifo @/sweep.json", "FIFO"},
        {"rm @/sweep.json && ln -s /dev/zero @/sweep.json", "character device"},
        {"rm @/base_lr0/summary.json && mkfifo @/base_lr0/summary.json", "FIFO"},
        {"rm @/base_lr0/summary.json && ln -s /dev/zero @/base_lr0/summary.json",
         "character device"},
        {"rm @/base_lr0/metrics.csv && mkfifo @/base_lr0/metrics.csv", "FIFO"},
        {"rm @/base_lr0/attention.csv && mkfifo @/base_lr0/attention.csv", "FIFO"},
        {"mkfifo @/base_lr0/sweep_diverged.txt", "FIFO"},
        {"rm @/base_lr1/run.log && mkfifo @/base_lr1/run.log", "FIFO"},
        {"rm @/base_lr1/run.log && ln -s ../victim @/base_lr1/run.log", "symbolic link"},
        {"rm @/base_lr1/run.log && mkdir @/base_lr1/run.log", "a directory"},
        {"mkdir -p @/base_lr2 && mkfifo @/base_lr2/run.log", "FIFO"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char make[512], copy[96];
        snprintf(copy, sizeof copy, "%s/c", g_dir);
        expand_at(make, sizeof make, BAD[i].make, copy);
        code = run("rm -rf %s/c && cp -a %s/out %s/c && printf 'precious\\n' > %s/c/victim && %s",
                   g_dir, g_dir, g_dir, g_dir, make);
        CHECK_MSG(code == 0, "setting up '%s': %s", make, g_err);
        code = run("timeout 20 ./train --resume %s/c", g_dir);
        CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, BAD[i].needle) &&
                      !strstr(g_err, "cannot run"),
                  "'%s': exit %d, expected 2 with '%s': %s", BAD[i].make, code, BAD[i].needle,
                  g_err);
        char victim[256];
        snprintf(victim, sizeof victim, "%s/c/victim", g_dir);
        CHECK_MSG(holds(victim, "precious\n"), "'%s' wrote through the link", BAD[i].make);
    }
    cleanup();
}

// A sweep's state as a sweep writes it (the run's config the tiny one of g_dir), with the grid's
// size, the variants and the arguments given: D/sweep.json.
static void write_sweep_state(const char *dir, const char *n, const char *compare_key,
                              const char *variants, const char *extra_args) {
    char path[512], cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
        perror("getcwd");
        exit(1);
    }
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f,
            "{\"cwd\": \"%s\", \"key\": \"train.lr\", \"lo\": 0.001, \"hi\": 0.1, \"n\": %s, "
            "\"min_lr_ratio\": 0.1,"
            " \"compare_key\": \"%s\", \"command\": \"./train\", \"variants\": [%s],"
            " \"args\": [\"%s/cfg.json\", \"--train.max_steps=4\"%s%s]}\n",
            cwd, n, compare_key, variants, g_dir, extra_args[0] ? ", " : "", extra_args);
    fclose(f);
}

// sweep.json is checked against what a sweep can have written before anything runs: a grid
// whose size overflows, stored arguments that are not a config and its overrides, variant names
// that leave the sweep's directory, too many variants; and --resume of a sweep takes none of
// the options it would otherwise ignore.
static void test_sweep_crafted_state_refused(void) {
    tmpdir("sweep");
    write_tiny_config(4);
    const char *BASE = "{\"name\": \"base\", \"override\": \"\"}";
    const char *TWO = "{\"name\": \"sqrt\", \"override\": \"model.attn_scale=sqrt\"},"
                      " {\"name\": \"none\", \"override\": \"model.attn_scale=none\"}";
    char nine[1024] = "";
    for (int v = 0; v < 9; v++) {
        size_t l = strlen(nine);
        snprintf(nine + l, sizeof nine - l,
                 "%s{\"name\": \"%d\", \"override\": \"model.attn_scale=%d\"}", v ? ", " : "",
                 v + 1, v + 1);
    }
    char victim_arg[256];
    snprintf(victim_arg, sizeof victim_arg, "\"--dump-state\", \"%s/victim\"", g_dir);
    static const char *const ESCAPE =
        "{\"name\": \"..\", \"override\": \"model.attn_scale=sqrt\"},"
        " {\"name\": \"../escape\", \"override\": \"model.attn_scale=none\"}";
    const struct {
        const char *n, *key, *variants, *args, *needle;
    } BAD[] = {
        {"1073741824", "model.attn_scale", TWO, "", "\"n\" is 1.07374e+09"},
        {"2147483648", "", BASE, "", "\"n\""},
        {"3", "", BASE, victim_arg, "'--dump-state'"},
        {"3", "", BASE, "\"--bench=5\"", "'--bench=5'"},
        {"3", "", BASE, "\"--train.out_dir=/tmp\"", "'--train.out_dir=/tmp'"},
        {"3", "", BASE, "\"--resume\"", "'--resume'"},
        {"3", "model.attn_scale", ESCAPE, "", "directory name"},
        {"2", "model.attn_scale", nine, "", "1 to 4 variants"},
        {"3", "", BASE, "\"--train.no_such_key=1\"", "no_such_key"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        run("rm -rf %s/c %s/escape* && mkdir %s/c && printf 'precious\\n' > %s/victim", g_dir,
            g_dir, g_dir, g_dir);
        char dir[256];
        snprintf(dir, sizeof dir, "%s/c", g_dir);
        write_sweep_state(dir, BAD[i].n, BAD[i].key, BAD[i].variants, BAD[i].args);
        int code = run("timeout 20 ./train --resume %s/c", g_dir);
        CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, "sweep.json") &&
                      strstr(g_err, BAD[i].needle),
                  "case %zu: exit %d, expected 2 with '%s': %s", i + 1, code, BAD[i].needle, g_err);
        char victim[256];
        snprintf(victim, sizeof victim, "%s/victim", g_dir);
        CHECK_MSG(holds(victim, "precious\n"), "case %zu wrote over %s", i + 1, victim);
        CHECK_MSG(!exists("%s/escape_lr0", g_dir) && !exists("%s/c/base_lr0", g_dir),
                  "case %zu trained a run", i + 1);
    }
    // the state as a sweep writes it resumes; no option that the resume would ignore is taken
    run("rm -rf %s/c && mkdir %s/c", g_dir, g_dir);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/c", g_dir);
    write_sweep_state(dir, "2", "", BASE, "");
    for (int i = 0; i < 3; i++) {
        char opt[256];
        if (i == 0)
            snprintf(opt, sizeof opt, "--bench=5");
        else if (i == 1)
            snprintf(opt, sizeof opt, "--dump-state %s/dump", g_dir);
        else
            snprintf(opt, sizeof opt, "--rewind");
        int code = run("timeout 20 ./train --resume %s/c %s", g_dir, opt);
        CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, "takes no"),
                  "--resume SWEEP %s: exit %d: %s", opt, code, g_err);
        CHECK(!exists("%s/c/base_lr0", g_dir) && !exists("%s/dump", g_dir));
    }
    int code = run("timeout 60 ./train --resume %s/c", g_dir);
    CHECK_MSG(code == 0 && strstr(g_out, "run 2/2 | base lr 0.1 | val loss"),
              "the state as written: exit %d: %s %s", code, g_out, g_err);
    cleanup();
}

// A line of 10,000 bytes in a log a sweep or a resumed run reads back is one line: read whole
// (a sweep's attention.csv), kept whole (a resumed run's metrics.csv); a step that is not one of
// the run's is refused, naming the file and line.
static void test_sweep_long_csv_lines(void) {
    tmpdir("sweep");
    write_tiny_config(12);
    int code = run("./train %s/cfg.json --sweep train.lr=1e-3..1e-1/2", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    char path[256];
    snprintf(path, sizeof path, "%s/out/base_lr0/attention.csv", g_dir);
    FILE *f = fopen(path, "a");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs("5,", f);
    for (int i = 0; i < 9998; i++) fputc('9', f);
    fputc('\n', f);
    fclose(f);
    code = run("./train --resume %s/out", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    char svg[200000];
    slurpf(svg, sizeof svg, "%s/out/sweep.svg", g_dir);
    // panel (b)'s last step tick is the runs' last probe (step 10), not a step read from the line's
    // tail
    CHECK_MSG(strstr(svg, "text-anchor=\"middle\">10</text>") && !strstr(svg, "99999999") &&
                  !strstr(svg, "922337"),
              "sweep.svg's step axis: %s", strstr(svg, "(b) Max") ? strstr(svg, "(b) Max") : svg);
    code = run("printf '99999999999999999999,0,0,1,1,1,1\\n' >> %s && ./train --resume %s/out",
               path, g_dir);
    CHECK_MSG(code == 2 && count_lines(g_err) == 1 && strstr(g_err, "attention.csv' line") &&
                  strstr(g_err, "step"),
              "exit %d: %s", code, g_err);
    // a plain run's resume keeps a long row of its metrics.csv as it is
    code =
        run("env TGPT_TEST_SIGNAL=INT:step:8 build/train-test %s/cfg.json --train.out_dir=%s/one",
            g_dir, g_dir);
    CHECK_MSG(code == 130, "exit %d: %s", code, g_err);
    char long_row[10002];
    memset(long_row, '9', sizeof long_row - 2);
    long_row[0] = '1';
    long_row[1] = ',';
    long_row[sizeof long_row - 2] = '\n';
    long_row[sizeof long_row - 1] = 0;
    snprintf(path, sizeof path, "%s/one/row", g_dir);
    f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(long_row, f);
    fclose(f);
    code = run("cd %s/one && { head -n 1 metrics.csv; cat row; tail -n +2 metrics.csv; } > m && mv "
               "m metrics.csv",
               g_dir);
    CHECK_MSG(code == 0, "%s", g_err);
    code = run("build/train-test --resume %s/one/checkpoint.bin", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    unsigned char *text = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/one/metrics.csv", g_dir);
    CHECK(file_bytes(path, &text, &n));
    const char *row = text ? strstr((const char *)text, "\n1,999") : NULL;
    CHECK_MSG(row && strncmp(row + 1, long_row, strlen(long_row)) == 0,
              "the long row was not kept whole");
    free(text);
    cleanup();
}

// sweep.json's reading itself (run/sweep_grid.c, the fuzz target's function): the fuzz seeds (as
// sweeps write them) are accepted, the crafted regressions refused in one line naming the key.
static void test_sweep_state_checked(void) {
    static const char *const SEEDS[] = {"base.json", "compare_scaling.json", "qk_norm.json"};
    static const struct {
        const char *file, *needle;
    } CRAFTED[] = {
        {"grid_overflow.json", "\"n\" is 1.07374e+09"},
        {"n_past_int.json", "\"n\" is 2.14748e+09"},
        {"args_dump_state.json", "argument 2 '--dump-state'"},
        {"nine_variants.json", "1 to 4 variants"},
        {"variant_escapes.json", "variant 1's name '..'"},
        {"compare_data_path.json", "\"compare_key\" 'data.path'"},
    };
    char path[256], err[1024];
    for (int i = 0; i < 9; i++) {
        int seed = i < 3;
        snprintf(path, sizeof path, "tests/fuzz/%s/sweep_state/%s", seed ? "corpus" : "regressions",
                 seed ? SEEDS[i] : CRAFTED[i - 3].file);
        unsigned char *text = NULL;
        size_t n = 0;
        if (!file_bytes(path, &text, &n)) {
            CHECK_MSG(0, "cannot read %s", path);
            continue;
        }
        SweepState st;
        err[0] = 0;
        int ok = sweep_state_parse((const char *)text, n, path, &st, err, sizeof err);
        if (seed)
            CHECK_MSG(ok && st.grid.n * st.nv <= SWEEP_MAX_RUNS, "%s refused: %s", path, err);
        else
            CHECK_MSG(!ok && strstr(err, path) && strstr(err, CRAFTED[i - 3].needle) &&
                          !strchr(err, '\n'),
                      "%s: %s", path, ok ? "accepted" : err);
        if (ok) sweep_state_free(&st);
        free(text);
    }
    // the ranges as --train.lr takes its value: no space, no hexadecimal
    SweepGrid g;
    static const char *const BAD_RANGES[] = {"train.lr= 1e-3..1e-1/3",  "train.lr=0x1p-10..1e-1/3",
                                             "train.lr=1e-3..1e-1/ 3",  "train.lr=1e-3..0x1p-2/3",
                                             "train.lr=1e-3..1e-1/0x3", "train.lr=inf..1e-1/3"};
    for (int i = 0; i < 6; i++)
        CHECK_MSG(!sweep_parse(BAD_RANGES[i], &g, err, sizeof err), "'%s' accepted", BAD_RANGES[i]);
    CHECK(sweep_parse("train.lr=1e-3..1.5e-1/3", &g, err, sizeof err) && g.hi == 1.5e-1);
}

// Whether the file holds needle, waiting for it up to `seconds` (polled every 50 ms).
static int wait_for_text(const char *path, const char *needle, double seconds) {
    static char buf[65536];
    for (int i = 0; i < (int)(seconds * 20); i++) {
        slurp(path, buf, sizeof buf);
        if (strstr(buf, needle)) return 1;
        nanosleep(&(struct timespec){0, 50000000}, NULL);
    }
    return 0;
}

// A sweep killed with SIGKILL (it cannot pass a signal on) takes its run down with it: the run
// stops as a signal stops ./train, its checkpoint saved, instead of training on in a directory
// the sweep's resume will train in.
static void test_sweep_killed_stops_its_run(void) {
    tmpdir("sweep");
    write_tiny_config(3000);
    int code = run("(./train %s/cfg.json --sweep train.lr=1e-3..1e-1/2 > %s/sweep.out 2>&1 & echo "
                   "$! > %s/pid)",
                   g_dir, g_dir, g_dir);
    CHECK_MSG(code == 0, "%s", g_err);
    char path[256], pid[32];
    snprintf(path, sizeof path, "%s/out/base_lr0/metrics.csv", g_dir);
    CHECK_MSG(wait_for_text(path, "\n1,", 60), "run 1 did not start");
    snprintf(path, sizeof path, "%s/pid", g_dir);
    slurp(path, pid, sizeof pid);
    CHECK(atoi(pid) > 1 && kill((pid_t)atoi(pid), SIGKILL) == 0);
    snprintf(path, sizeof path, "%s/out/base_lr0/run.log", g_dir);
    int stopped = wait_for_text(path, "checkpoint saved", 30);
    char log[65536];
    slurp(path, log, sizeof log);
    CHECK_MSG(stopped && strstr(log, "terminated"),
              "the run went on after its sweep was killed: %s",
              strrchr(log, '\n') ? log + (strlen(log) > 300 ? strlen(log) - 300 : 0) : log);
    cleanup();
}

const TestCase tests_sweep[] = {
    {"sweep_bad_input", test_sweep_bad_input},
    {"sweep_grid_and_sensitivity", test_sweep_grid_and_sensitivity},
    {"sweep_outputs", test_sweep_outputs},
    {"sweep_divergence_recorded", test_sweep_divergence_recorded},
    {"sweep_stop_and_resume", test_sweep_stop_and_resume},
    {"sweep_resume_refuses_other_runs", test_sweep_resume_refuses_other_runs},
    {"sweep_files_not_regular_refused", test_sweep_files_not_regular_refused},
    {"sweep_crafted_state_refused", test_sweep_crafted_state_refused},
    {"sweep_long_csv_lines", test_sweep_long_csv_lines},
    {"sweep_state_checked", test_sweep_state_checked},
    {"sweep_killed_stops_its_run", test_sweep_killed_stops_its_run},
    {NULL, NULL},
};
