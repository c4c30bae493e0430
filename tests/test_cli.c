// tests/test_cli.c: the programs as a user runs them: bad input of every kind (exit code, one
// clear line on stderr, no file harmed), exact resume, determinism, sampling, the debug dump.
// Runs ./train and ./sample from the repository root (make test does).
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../checkpoint.h"
#include "../config.h"
#include "test.h"

static char g_dir[64];
static char g_out[65536], g_err[65536];

// A fresh temporary directory per test.
static void tmpdir(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tgpt_cli_XXXXXX");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); exit(1); }
}

static void cleanup(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "  (could not remove %s)\n", g_dir);
}

static void slurp(const char *path, char *buf, size_t n) {
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
}

// Run a shell command with stdout and stderr captured in g_out / g_err; returns the exit code.
static int run(const char *fmt, ...) {
    char cmd[8192], full[9000], po[128], pe[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(po, sizeof po, "%s/.stdout", g_dir);
    snprintf(pe, sizeof pe, "%s/.stderr", g_dir);
    snprintf(full, sizeof full, "(%s) >'%s' 2>'%s' </dev/null", cmd, po, pe);
    int st = system(full);
    slurp(po, g_out, sizeof g_out);
    slurp(pe, g_err, sizeof g_err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void write_file(const char *name, const void *data, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}
static void write_text(const char *name, const char *text) { write_file(name, text, strlen(text)); }

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

// A tiny model that trains in about a second on the embedded corpus.
static void write_tiny_config(const char *name, int steps) {
    char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"name\": \"tiny\",\n"
             " \"model\": {\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 16, \"block_size\": 16},\n"
             " \"data\": {\"path\": \"data/default.txt\", \"val_fraction\": 0.02},\n"
             " \"train\": {\"batch_size\": 4, \"max_steps\": %d, \"lr_decay_steps\": 40, \"warmup_steps\": 5,\n"
             "           \"ckpt_interval\": 10, \"out_dir\": \"%s/out\", \"seed\": 7, \"threads\": 2},\n"
             " \"log\": {\"log_interval\": 10, \"eval_interval\": 20, \"eval_steps\": 2, \"attn_interval\": 10},\n"
             " \"sample\": {\"tokens\": 20}}\n",
             steps, g_dir);
    write_text(name, buf);
}

// Assert: exit code, exactly one line on stderr, containing every needle.
static void expect_error(int code, int expect_code, const char *n1, const char *n2) {
    CHECK_MSG(code == expect_code, "exit code %d, expected %d; stderr: %s", code, expect_code, g_err);
    CHECK_MSG(count_lines(g_err) == 1, "stderr has %d lines: %s", count_lines(g_err), g_err);
    if (n1) CHECK_MSG(strstr(g_err, n1) != NULL, "stderr lacks '%s': %s", n1, g_err);
    if (n2) CHECK_MSG(strstr(g_err, n2) != NULL, "stderr lacks '%s': %s", n2, g_err);
}

// ---- bad input: configuration and command line (exit 2) ----
typedef struct { const char *name, *json, *needle1, *needle2; } BadConfig;
static const BadConfig BAD_CONFIGS[] = {
    {"invalid_json", "{\"model\": {\"n_layer\": 2,,}}", "invalid JSON", ":1:"},
    {"unknown_key", "{\"model\": {\"n_embed\": 64}}", "model.n_embed", "model.n_embd"},
    {"duplicate_key", "{\"model\": {\"n_layer\": 2, \"n_layer\": 3}}", "duplicate", "model.n_layer"},
    {"case_variant_key", "{\"model\": {\"N_LAYER\": 2}}", "N_LAYER", "model.n_layer"},
    {"wrong_type", "{\"train\": {\"lr\": \"fast\"}}", "train.lr", "number"},
    {"negative_lr", "{\"train\": {\"lr\": -0.001}}", "train.lr", NULL},
    {"zero_batch", "{\"train\": {\"batch_size\": 0}}", "train.batch_size", NULL},
    {"head_divisibility", "{\"model\": {\"n_embd\": 30, \"n_head\": 4}}", "n_embd", "n_head"},
    {"nan_literal", "{\"train\": {\"lr\": NaN}}", "invalid JSON", NULL},
    {"infinity_literal", "{\"train\": {\"lr\": Infinity}}", "invalid JSON", NULL},
    {"huge_number", "{\"model\": {\"n_layer\": 1e300}}", "model.n_layer", NULL},
    {"fractional_int", "{\"model\": {\"n_layer\": 2.5}}", "model.n_layer", "integer"},
    {"bad_scale", "{\"model\": {\"attn_scale\": \"cube\"}}", "model.attn_scale", NULL},
    {"bad_init", "{\"model\": {\"init\": \"xavier\"}}", "model.init", NULL},
    {"top_level_array", "[1, 2]", "object", NULL},
    {"section_not_object", "{\"model\": 3}", "model", NULL},
    {"huge_model", "{\"model\": {\"n_layer\": 64, \"n_embd\": 8192, \"n_head\": 64, \"block_size\": 65536},"
                   " \"train\": {\"batch_size\": 65536}}", "memory", NULL},
};

// Pre-existing files in the output directory, which no failed start may touch.
static void write_sentinels(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/out", g_dir);
    mkdir(dir, 0777);
    write_text("out/checkpoint.bin", "previous good checkpoint");
    write_text("out/metrics.csv", "step,loss\n1,2.5\n");
}

static void check_sentinels(void) {
    char path[256], buf[256];
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "previous good checkpoint") == 0, "a failed start changed out/checkpoint.bin");
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "step,loss\n1,2.5\n") == 0, "a failed start changed out/metrics.csv");
}

static void test_bad_configs(void) {
    tmpdir();
    write_sentinels();
    for (size_t i = 0; i < sizeof BAD_CONFIGS / sizeof BAD_CONFIGS[0]; i++) {
        const BadConfig *b = &BAD_CONFIGS[i];
        write_text("bad.json", b->json);
        int code = run("./train %s/bad.json --train.out_dir=%s/out", g_dir, g_dir);
        if (code != 2 || !strstr(g_err, b->needle1)) fprintf(stderr, "  case %s:\n", b->name);
        expect_error(code, 2, b->needle1, b->needle2);
        struct stat st;
        CHECK_MSG(stat("out", &st) != 0 || 1, "%s", b->name);
    }
    // deep nesting must not crash the parser
    char *deep = malloc(200010);
    size_t n = 0;
    deep[n++] = '{';
    memcpy(deep + n, "\"model\": ", 9);
    n += 9;
    for (int i = 0; i < 100000; i++) deep[n++] = '[';
    deep[n] = 0;
    write_text("deep.json", deep);
    free(deep);
    expect_error(run("./train %s/deep.json", g_dir), 2, "invalid JSON", NULL);
    check_sentinels();
    cleanup();
}

static void test_bad_command_lines(void) {
    tmpdir();
    expect_error(run("./train %s/missing.json", g_dir), 2, "missing.json", NULL);
    expect_error(run("./train --no-such-option"), 2, "--no-such-option", NULL);
    expect_error(run("./train --train.max_steps"), 2, "train.max_steps", NULL);
    expect_error(run("./train --train.max_step=5"), 2, "train.max_step", "train.max_steps");
    expect_error(run("./train --train.max_steps=abc"), 2, "train.max_steps", NULL);
    expect_error(run("./train --model.attn_scale=-1"), 2, "model.attn_scale", NULL);
    expect_error(run("./train --bench=0"), 2, "--bench", NULL);
    expect_error(run("./train a.json b.json"), 2, "b.json", NULL);
    expect_error(run("./sample"), 2, NULL, NULL);
    expect_error(run("./sample x.bin --temperature=-1"), 2, "--temperature", NULL);
    CHECK(run("./train --help") == 0 && strstr(g_out, "model.attn_scale") && strstr(g_out, "--resume"));
    CHECK(run("./train --version") == 0 && strstr(g_out, "OpenMP") && strstr(g_out, "SIMD"));
    CHECK(run("./sample --help") == 0 && strstr(g_out, "--prompt"));
    cleanup();
}

// ---- bad input: data (exit 1) ----
static void test_bad_data(void) {
    tmpdir();
    write_tiny_config("cfg.json", 4);
    write_sentinels();
    write_text("short.txt", "abcabc");
    write_file("empty.txt", "", 0);
    const unsigned char bad_utf8[] = "hello world, this is fine until here \xff\xfe and then it is not valid";
    write_file("bad.txt", bad_utf8, sizeof bad_utf8 - 1);
    const unsigned char binary[] = {'a', 'b', 0, 'c', 'd', 0, 0, 1, 2, 3};
    write_file("binary.bin", binary, sizeof binary);
    expect_error(run("./train %s/cfg.json --data.path=%s/nope.txt", g_dir, g_dir), 1, "nope.txt", NULL);
    expect_error(run("./train %s/cfg.json --data.path=%s/empty.txt", g_dir, g_dir), 1, "empty", NULL);
    expect_error(run("./train %s/cfg.json --data.path=%s/short.txt", g_dir, g_dir), 1, "short.txt", "block_size");
    expect_error(run("./train %s/cfg.json --data.path=%s/bad.txt", g_dir, g_dir), 1, "UTF-8", "37");
    expect_error(run("./train %s/cfg.json --data.path=%s/binary.bin", g_dir, g_dir), 1, "binary.bin", NULL);
    expect_error(run("./train %s/cfg.json --data.path=%s", g_dir, g_dir), 1, g_dir, NULL);
    check_sentinels();
    cleanup();
}

// ---- output directory problems ----
static void test_bad_out_dir(void) {
    tmpdir();
    write_tiny_config("cfg.json", 4);
    write_text("afile", "precious");
    expect_error(run("./train %s/cfg.json --train.out_dir=%s/afile", g_dir, g_dir), 1, "afile", "not a directory");
    char buf[64];
    char path[128];
    snprintf(path, sizeof path, "%s/afile", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK(strcmp(buf, "precious") == 0);
    if (geteuid() != 0) {  // root ignores permissions
        char ro[128];
        snprintf(ro, sizeof ro, "%s/ro", g_dir);
        mkdir(ro, 0555);
        expect_error(run("./train %s/cfg.json --train.out_dir=%s/ro/sub", g_dir, g_dir), 1, "ro", NULL);
    }
    cleanup();
}

// ---- a real run: outputs, determinism, exact resume, checkpoints that reject damage ----
static int file_bytes(const char *path, unsigned char **out, size_t *n) {
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc((size_t)len + 1);
    *n = fread(*out, 1, (size_t)len, f);
    fclose(f);
    return 1;
}

// The metrics without the wall-clock column: step, loss, lr, grad_norm, val_loss.
static void metrics_without_ms(const char *path, char *out, size_t n) {
    char raw[65536];
    slurp(path, raw, sizeof raw);
    size_t o = 0;
    for (char *line = strtok(raw, "\n"); line && o < n - 200; line = strtok(NULL, "\n")) {
        char *f[6];
        int k = 0;
        for (char *p = line; k < 6; k++) { f[k] = p; p = strchr(p, ','); if (!p) { k++; break; } *p++ = 0; }
        o += (size_t)snprintf(out + o, n - o, "%s,%s,%s,%s,%s\n", f[0], k > 1 ? f[1] : "", k > 2 ? f[2] : "",
                              k > 3 ? f[3] : "", k > 5 ? f[5] : "");
    }
}

static int same_tensors(const char *a, const char *b) {
    Checkpoint ca, cb;
    char err[512];
    if (!checkpoint_open(&ca, a, err, sizeof err)) { fprintf(stderr, "  %s\n", err); return 0; }
    if (!checkpoint_open(&cb, b, err, sizeof err)) { fprintf(stderr, "  %s\n", err); checkpoint_close(&ca); return 0; }
    int same = ca.file.n_records == cb.file.n_records && ca.state.step == cb.state.step &&
               memcmp(ca.state.rng.s, cb.state.rng.s, sizeof ca.state.rng.s) == 0;
    for (int i = 0; same && i < ca.file.n_records; i++) {
        const TRecord *ra = &ca.file.records[i];
        if (strcmp(ra->name, "config") == 0) continue;
        const TRecord *rb = tfile_find(&cb.file, ra->name);
        size_t esz = ra->dtype == DT_U8 ? 1 : ra->dtype == DT_F64 || ra->dtype == DT_U64 || ra->dtype == DT_I64 ? 8 : 4;
        if (!rb || rb->count != ra->count || memcmp(ra->data, rb->data, ra->count * esz) != 0) {
            fprintf(stderr, "  tensor %s differs\n", ra->name);
            same = 0;
        }
    }
    checkpoint_close(&ca);
    checkpoint_close(&cb);
    return same;
}

static void test_train_outputs_and_determinism(void) {
    tmpdir();
    write_tiny_config("cfg.json", 40);
    int code = run("./train %s/cfg.json", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    // the last line of stdout
    char *last = g_out + strlen(g_out);
    while (last > g_out && last[-1] == '\n') *--last = 0;
    while (last > g_out && last[-1] != '\n') last--;
    CHECK_MSG(strncmp(last, "final: step=40 train_loss=", 26) == 0 && strstr(last, " val_loss=") && strstr(last, " tokens_per_s="),
              "last line: %s", last);
    char path[256], buf[65536], m1[65536], m2[65536];
    snprintf(path, sizeof path, "%s/out/summary.json", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK(strstr(buf, "\"val_loss\"") && strstr(buf, "\"best_val_loss\"") && strstr(buf, "\"params\"") &&
          strstr(buf, "\"tokens_per_s\"") && strstr(buf, "\"wall_s\"") && strstr(buf, "\"config\""));
    snprintf(path, sizeof path, "%s/out/attention.csv", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK(strncmp(buf, "step,layer,head,entropy,entropy_norm,max_weight,frac_gt_0.9,frac_gt_0.99,score_std,score_absmax,"
                       "gnorm_wq,gnorm_wk,gnorm_wv,gnorm_wo,ds_over_dp,row_gain_median\n", 150) == 0);
    CHECK_MSG(count_lines(buf) == 1 + 5 * 2 * 2, "attention.csv has %d lines", count_lines(buf));  // steps 0,10,..,40
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    metrics_without_ms(path, m1, sizeof m1);
    CHECK(count_lines(m1) == 41);
    snprintf(path, sizeof path, "%s/out/best.bin", g_dir);
    CHECK(access(path, R_OK) == 0);
    // a second run with the same seed and threads gives the same losses and the same weights
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    char saved[256];
    snprintf(saved, sizeof saved, "%s/first.bin", g_dir);
    CHECK(rename(path, saved) == 0);
    CHECK(run("./train %s/cfg.json", g_dir) == 0);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    metrics_without_ms(path, m2, sizeof m2);
    CHECK_MSG(strcmp(m1, m2) == 0, "metrics differ between identical runs");
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    CHECK(same_tensors(saved, path));
    // sampling from the checkpoint
    CHECK(run("./sample %s --prompt 'the ' --tokens 50 --seed 3", path) == 0);
    CHECK_MSG(strncmp(g_out, "the ", 4) == 0 && strlen(g_out) >= 54, "sample: %s", g_out);
    char first[4096];
    snprintf(first, sizeof first, "%.4000s", g_out);
    CHECK(run("./sample %s --prompt 'the ' --tokens 50 --seed 3", path) == 0 && strcmp(first, g_out) == 0);
    expect_error(run("./sample %s --prompt '\xc3\xa9t\xc3\xa9'", path), 2, "vocabulary", NULL);
    snprintf(buf, sizeof buf, "%s/map.svg", g_dir);
    CHECK(run("./sample %s --prompt 'copy: ab | ab' --attention-map %s", path, buf) == 0);
    slurp(buf, m1, sizeof m1);
    CHECK(strncmp(m1, "<svg", 4) == 0 && strstr(m1, "layer 1, head 1") && strstr(m1, "</svg>"));
    // the debug dump
    snprintf(buf, sizeof buf, "%s/dump.bin", g_dir);
    CHECK(run("./train %s/cfg.json --dump-state %s", g_dir, buf) == 0);
    TFile f;
    char err[512];
    CHECK(tfile_read(&f, buf, "TGPTDUMP", err, sizeof err));
    const TRecord *logits = tfile_find(&f, "logits"), *g = tfile_find(&f, "grad.layer1.wq"), *loss = tfile_find(&f, "loss");
    CHECK(logits && logits->ndim == 3 && logits->shape[0] == 4 && logits->shape[1] == 16);
    CHECK(g && g->ndim == 2 && g->shape[0] == 16 && g->shape[1] == 16);
    CHECK(loss && loss->count == 1 && tfile_find(&f, "inputs") && tfile_find(&f, "targets") && tfile_find(&f, "param.wte"));
    tfile_free(&f);
    cleanup();
}

static void test_resume_is_exact(void) {
    tmpdir();
    write_tiny_config("cfg.json", 40);
    char path[256], straight[65536], resumed[65536], saved[256];
    CHECK(run("./train %s/cfg.json", g_dir) == 0);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    metrics_without_ms(path, straight, sizeof straight);
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    snprintf(saved, sizeof saved, "%s/straight.bin", g_dir);
    CHECK(rename(path, saved) == 0);
    // 20 steps, stop, resume to 40: the logs continue without repeats and the weights agree bit for bit
    CHECK(run("./train %s/cfg.json --train.max_steps=20", g_dir) == 0);
    int code = run("./train --resume %s --train.max_steps=40", path);
    CHECK_MSG(code == 0, "resume exit %d: %s", code, g_err);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_dir);
    metrics_without_ms(path, resumed, sizeof resumed);
    CHECK_MSG(strcmp(straight, resumed) == 0, "metrics differ:\n%s\nvs\n%s", straight, resumed);
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    CHECK(same_tensors(saved, path));
    // a resume that changes the model's shape is refused, and the checkpoint is untouched
    unsigned char *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    CHECK(file_bytes(path, &before, &nb));
    expect_error(run("./train --resume %s --model.n_embd=32", path), 2, "shape", NULL);
    expect_error(run("./train --resume %s --train.max_steps=50 --data.path=%s/cfg.json", path, g_dir), 1, "vocabulary", NULL);
    CHECK(file_bytes(path, &after, &na));
    CHECK(nb == na && memcmp(before, after, nb) == 0);
    free(before);
    free(after);
    cleanup();
}

// A damaged, truncated, foreign or future checkpoint is refused with a message naming the file.
static void test_bad_checkpoints(void) {
    tmpdir();
    write_tiny_config("cfg.json", 10);
    CHECK(run("./train %s/cfg.json", g_dir) == 0);
    char path[256];
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_dir);
    unsigned char *good = NULL;
    size_t n = 0;
    CHECK(file_bytes(path, &good, &n));
    write_file("trunc.bin", good, n / 2);
    write_file("zero.bin", "", 0);
    write_text("foreign.bin", "#!/bin/sh\necho this is not a checkpoint at all\n");
    unsigned char *flip = malloc(n);
    memcpy(flip, good, n);
    flip[n / 3] ^= 0x10;
    write_file("flip.bin", flip, n);
    memcpy(flip, good, n);
    flip[8] = 99;  // version
    write_file("version.bin", flip, n);
    const char *names[] = {"trunc.bin", "zero.bin", "foreign.bin", "flip.bin", "version.bin"};
    const char *needles[] = {"trunc.bin", "zero.bin", "foreign.bin", "CRC", "version"};
    for (int i = 0; i < 5; i++) {
        expect_error(run("./train --resume %s/%s", g_dir, names[i]), 1, names[i], needles[i]);
        expect_error(run("./sample %s/%s", g_dir, names[i]), 1, names[i], NULL);
    }
    expect_error(run("./train --resume %s/none.bin", g_dir), 1, "none.bin", NULL);
    free(flip);
    free(good);
    cleanup();
}

// --compare-scaling trains both variants from identical initial weights on identical batches.
// With head_dim = 1, 1/sqrt(head_dim) = 1: the two variants are then the same computation, so
// their logs and final weights must agree bit for bit, which they can only do if the initial
// weights and every batch are the same.
static void test_compare_scaling_same_start_and_batches(void) {
    tmpdir();
    write_tiny_config("cfg.json", 30);
    int code = run("./train %s/cfg.json --compare-scaling --model.n_embd=4 --model.n_head=4", g_dir);
    CHECK_MSG(code == 0, "exit %d: %s", code, g_err);
    char a[256], b[256], ma[65536], mb[65536];
    snprintf(a, sizeof a, "%s/out/scaled/metrics.csv", g_dir);
    snprintf(b, sizeof b, "%s/out/unscaled/metrics.csv", g_dir);
    metrics_without_ms(a, ma, sizeof ma);
    metrics_without_ms(b, mb, sizeof mb);
    CHECK(count_lines(ma) == 31);
    CHECK_MSG(strcmp(ma, mb) == 0, "the variants' losses differ although their computations are identical");
    snprintf(a, sizeof a, "%s/out/scaled/checkpoint.bin", g_dir);
    snprintf(b, sizeof b, "%s/out/unscaled/checkpoint.bin", g_dir);
    CHECK(same_tensors(a, b));
    // the comparison files, with the documented columns
    char path[256], buf[65536];
    snprintf(path, sizeof path, "%s/out/compare.csv", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK(strncmp(buf, "step,variant,loss,val_loss,entropy_norm,max_weight,frac_gt_0.9,frac_gt_0.99,score_std,"
                       "gnorm_wq,gnorm_wk,gnorm_wv,gnorm_wo,ds_over_dp,row_gain_median\n", 130) == 0);
    CHECK(strstr(buf, ",scaled,") && strstr(buf, ",unscaled,"));
    snprintf(path, sizeof path, "%s/out/report.md", g_dir);
    CHECK(access(path, R_OK) == 0);
    snprintf(path, sizeof path, "%s/out/scaling.svg", g_dir);
    slurp(path, buf, sizeof buf);
    CHECK(strncmp(buf, "<svg", 4) == 0 || strstr(buf, "<svg") != NULL);
    // and with a real head dimension, the variants differ from the first step on
    code = run("./train %s/cfg.json --compare-scaling --train.max_steps=5 --train.out_dir=%s/out2", g_dir, g_dir);
    CHECK(code == 0);
    snprintf(a, sizeof a, "%s/out2/scaled/metrics.csv", g_dir);
    snprintf(b, sizeof b, "%s/out2/unscaled/metrics.csv", g_dir);
    metrics_without_ms(a, ma, sizeof ma);
    metrics_without_ms(b, mb, sizeof mb);
    CHECK(strcmp(ma, mb) != 0);
    cleanup();
}

// train.keep_checkpoints = N keeps checkpoint_<step>.bin for the last N checkpoint steps.
static void test_keep_checkpoints(void) {
    tmpdir();
    write_tiny_config("cfg.json", 40);  // checkpoints every 10 steps
    CHECK(run("./train %s/cfg.json --train.keep_checkpoints=2", g_dir) == 0);
    const char *expect[] = {"checkpoint_30.bin", "checkpoint_40.bin", "checkpoint.bin", "best.bin"};
    const char *gone[] = {"checkpoint_10.bin", "checkpoint_20.bin"};
    char path[256];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/out/%s", g_dir, expect[i]);
        CHECK_MSG(access(path, R_OK) == 0, "%s missing", expect[i]);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/out/%s", g_dir, gone[i]);
        CHECK_MSG(access(path, F_OK) != 0, "%s should have been removed", gone[i]);
    }
    cleanup();
}

// The committed corpus is exactly what the committed generator writes.
static void test_corpus_is_reproducible(void) {
    tmpdir();
    CHECK_MSG(access("tools/gencorpus", X_OK) == 0, "tools/gencorpus is not built (make test builds it)");
    int code = run("./tools/gencorpus -o %s/corpus.txt && cmp %s/corpus.txt data/default.txt", g_dir, g_dir);
    CHECK_MSG(code == 0, "data/default.txt differs from ./tools/gencorpus output: %s%s", g_out, g_err);
    cleanup();
}

// The README's configuration reference is the one the program prints (no key undocumented).
static void test_readme_documents_every_key(void) {
    tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/ref.md", g_dir);
    FILE *f = fopen(path, "w");
    config_print_reference(f, 1);
    fclose(f);
    static char ref[65536], readme[262144];
    slurp(path, ref, sizeof ref);
    slurp("README.md", readme, sizeof readme);
    CHECK_MSG(strlen(ref) > 100 && strstr(readme, ref) != NULL,
              "README.md's configuration reference is out of date: paste `config_print_reference` output");
    cleanup();
}

const TestCase tests_cli[] = {
    {"cli_keep_checkpoints", test_keep_checkpoints},
    {"cli_compare_scaling_same_start_and_batches", test_compare_scaling_same_start_and_batches},
    {"cli_corpus_is_reproducible", test_corpus_is_reproducible},
    {"cli_readme_documents_every_key", test_readme_documents_every_key},
    {"cli_bad_configs", test_bad_configs},
    {"cli_bad_command_lines", test_bad_command_lines},
    {"cli_bad_data", test_bad_data},
    {"cli_bad_out_dir", test_bad_out_dir},
    {"cli_train_outputs_and_determinism", test_train_outputs_and_determinism},
    {"cli_resume_is_exact", test_resume_is_exact},
    {"cli_bad_checkpoints", test_bad_checkpoints},
    {NULL, NULL},
};
