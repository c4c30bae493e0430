// tests/test_mpi.c: data-parallel training under mpirun (make MPI=1), run from the repository
// root. `make test` builds build/train-mpi when MPI is installed; without it these tests skip,
// saying so. Two ranks share this machine (mpirun --oversubscribe), one thread each.
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

static char g_dir[64];
static char g_err[65536];
static double g_elapsed;  // seconds the last run() took

// mpirun refuses to start as root (CI containers) unless told it may. A hung mpirun gets
// SIGKILL 10 s after timeout's SIGTERM: one stuck after its ranks had exited ignored SIGTERM.
#define MPIRUN                                                                                     \
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 10 300 mpirun "          \
    "--oversubscribe"

static int run(const char *fmt, ...);

// 1: usable; 0: not installed; -1: installed but mpirun cannot start two processes here (the
// reason is left in g_err). Checked once.
static int mpi_state(void) {
    static int state = 2;
    if (state != 2) return state;
    if (access("build/train-mpi", X_OK) != 0 || system("command -v mpirun >/dev/null 2>&1") != 0)
        return state = 0;
    int code = run(MPIRUN " -np 2 build/train-mpi --version");
    return state = code == 0 ? 1 : -1;
}
#define NEED_MPI()                                                                                 \
    do {                                                                                           \
        int st_ = mpi_state();                                                                     \
        if (st_ == 0)                                                                              \
            SKIP("MPI is not installed (no mpirun or build/train-mpi): apt-get install "           \
                 "libopenmpi-dev openmpi-bin, then make test");                                    \
        if (st_ < 0) SKIP("mpirun cannot start 2 processes on this machine: %.300s", g_err);       \
    } while (0)

static void tmpdir(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tgpt_mpi_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void cleanup(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "  (could not remove %s)\n", g_dir);
}

// Run a shell command, stdout discarded, stderr captured in g_err; returns the exit code.
static int run(const char *fmt, ...) {
    char cmd[4096], full[4500], pe[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(pe, sizeof pe, "%s/.stderr", g_dir);
    snprintf(full, sizeof full, "(%s) >/dev/null 2>'%s' </dev/null", cmd, pe);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int st = system(full);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    g_elapsed = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    g_err[0] = 0;
    FILE *f = fopen(pe, "rb");
    if (f) {
        size_t got = fread(g_err, 1, sizeof g_err - 1, f);
        g_err[got] = 0;
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

// A small model (two layers, batch 8) that trains 50 steps in a few seconds.
static void write_config(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f, "{\"name\": \"mpi\",\n"
               " \"model\": {\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 32, \"block_size\": 32},\n"
               " \"data\": {\"path\": \"data/default.txt\", \"val_fraction\": 0.02},\n"
               " \"train\": {\"batch_size\": 8, \"max_steps\": 50, \"lr\": 3e-3, "
               "\"lr_decay_steps\": 50, \"warmup_steps\": 5,\n"
               "           \"ckpt_interval\": 25, \"seed\": 11, \"threads\": 1},\n"
               " \"log\": {\"log_interval\": 10, \"eval_interval\": 25, \"eval_steps\": 3, "
               "\"attn_interval\": 25},\n"
               " \"sample\": {\"tokens\": 0}}\n");
    fclose(f);
}

// The loss column of metrics.csv; returns the number of rows read.
static int read_losses(const char *dir, double *loss, int max) {
    char path[256], line[512];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0;
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return 0;
    }  // header
    while (n < max && fgets(line, sizeof line, f)) {
        long step;
        if (sscanf(line, "%ld,%lf", &step, &loss[n]) == 2) n++;
    }
    fclose(f);
    return n;
}

// The column `name` of metrics.csv, found by its header; returns the number of rows read (0
// without the column).
static int read_column(const char *dir, const char *name, double *out, int max) {
    char path[256], line[512];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int col = -1, n = 0;
    if (fgets(line, sizeof line, f)) {
        int c = 0;
        for (char *p = line; *p; c++) {
            size_t len = strcspn(p, ",\n");
            if (len == strlen(name) && strncmp(p, name, len) == 0) col = c;
            p += len;
            if (*p) p++;
        }
    }
    while (col >= 0 && n < max && fgets(line, sizeof line, f)) {
        char *p = line;
        for (int c = 0; c < col && p; c++) {
            p = strchr(p, ',');
            if (p) p++;
        }
        out[n++] = p && *p != ',' && *p != '\n' ? atof(p) : NAN;
    }
    fclose(f);
    return n;
}

// The "val_loss" of summary.json (NAN when missing).
static double summary_val_loss(const char *dir) {
    char path[256], buf[8192];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    FILE *f = fopen(path, "r");
    if (!f) return NAN;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    buf[got] = 0;
    fclose(f);
    const char *p = strstr(buf, "\"val_loss\":");
    return p ? atof(p + 11) : NAN;
}

static double max_rel_diff(const double *a, const double *b, int n) {
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]) / fmax(fabs(a[i]), 1e-12);
        if (!(d <= worst)) worst = d;  // NaN counts as the worst
    }
    return worst;
}

// Two ranks, each with half of every batch, train like one process: losses of every step and the
// final validation loss agree to relative 1e-5 (the gradient sums differ only in rounding).
static void test_two_ranks_match_one_process(void) {
    tmpdir();
    if (mpi_state() != 1) cleanup();
    NEED_MPI();
    write_config("cfg.json");
    int code = run("build/train-mpi %s/cfg.json --train.out_dir=%s/one", g_dir, g_dir);
    CHECK_MSG(code == 0, "one process: exit %d: %s", code, g_err);
    code = run(MPIRUN " -np 2 build/train-mpi %s/cfg.json --train.out_dir=%s/two", g_dir, g_dir);
    CHECK_MSG(code == 0, "mpirun -np 2: exit %d: %s", code, g_err);
    double a[64], b[64];
    char d1[128], d2[128];
    snprintf(d1, sizeof d1, "%s/one", g_dir);
    snprintf(d2, sizeof d2, "%s/two", g_dir);
    int na = read_losses(d1, a, 64), nb = read_losses(d2, b, 64);
    CHECK_MSG(na == 50 && nb == 50, "metrics rows: %d and %d, expected 50", na, nb);
    double rel = max_rel_diff(a, b, na < nb ? na : nb);
    CHECK_MSG(rel <= 1e-5, "losses differ by relative %.3g", rel);
    CHECK_MSG(a[49] < 0.9 * a[0], "the model did not learn: loss %.4f -> %.4f", a[0], a[49]);
    // the output logits' statistics are the whole batch's: the ranks' mean log Z averaged, the
    // largest of their largest logits
    static const char *const logit_cols[2] = {"lse_mean", "max_logit"};
    for (int k = 0; k < 2; k++) {
        na = read_column(d1, logit_cols[k], a, 64);
        nb = read_column(d2, logit_cols[k], b, 64);
        CHECK_MSG(na == 50 && nb == 50, "%s rows: %d and %d, expected 50", logit_cols[k], na, nb);
        rel = max_rel_diff(a, b, na < nb ? na : nb);
        CHECK_MSG(rel <= 1e-5, "%s differs by relative %.3g", logit_cols[k], rel);
    }
    double va = summary_val_loss(d1), vb = summary_val_loss(d2);
    CHECK_MSG(fabs(va - vb) <= 1e-5 * fabs(va), "final val_loss %.6f vs %.6f", va, vb);
    // only rank 0 writes: one checkpoint, one metrics file, no stray per-rank files: the two-rank
    // run's directory holds the files of a one-process run and nothing else
    char path[256], cmd[600], listing[4096];
    snprintf(path, sizeof path, "%s/checkpoint.bin", d2);
    CHECK(access(path, R_OK) == 0);
    snprintf(
        cmd, sizeof cmd,
        "ls -A '%s' | grep -v -x -e checkpoint.bin -e best.bin -e metrics.csv -e attention.csv "
        "-e summary.json -e .lock > '%s/stray.txt'",
        d2, g_dir);
    CHECK(system(cmd) >= 0);
    snprintf(path, sizeof path, "%s/stray.txt", g_dir);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(listing, 1, sizeof listing - 1, f) : 0;
    listing[n] = 0;
    if (f) fclose(f);
    CHECK_MSG(n == 0, "files besides one run's in the two-rank directory: %s", listing);
    cleanup();
}

// A checkpoint written by two ranks resumes in one process and the other way round; both give the
// losses of a straight 50-step run.
static void test_checkpoints_cross_rank_counts(void) {
    tmpdir();
    if (mpi_state() != 1) cleanup();
    NEED_MPI();
    write_config("cfg.json");
    int code = run("./train %s/cfg.json --train.out_dir=%s/straight", g_dir, g_dir);
    CHECK_MSG(code == 0, "straight: exit %d: %s", code, g_err);
    code =
        run(MPIRUN " -np 2 build/train-mpi %s/cfg.json --train.max_steps=25 --train.out_dir=%s/a",
            g_dir, g_dir);
    CHECK_MSG(code == 0, "2 ranks to step 25: exit %d: %s", code, g_err);
    code = run("./train --resume %s/a/checkpoint.bin --train.max_steps=50", g_dir);
    CHECK_MSG(code == 0, "1 process resuming: exit %d: %s", code, g_err);
    code = run("./train %s/cfg.json --train.max_steps=25 --train.out_dir=%s/b", g_dir, g_dir);
    CHECK_MSG(code == 0, "1 process to step 25: exit %d: %s", code, g_err);
    code = run(MPIRUN " -np 2 build/train-mpi --resume %s/b/checkpoint.bin --train.max_steps=50",
               g_dir);
    CHECK_MSG(code == 0, "2 ranks resuming: exit %d: %s", code, g_err);
    double s[64], a[64], b[64];
    char d[128];
    snprintf(d, sizeof d, "%s/straight", g_dir);
    int ns = read_losses(d, s, 64);
    snprintf(d, sizeof d, "%s/a", g_dir);
    int na = read_losses(d, a, 64);
    snprintf(d, sizeof d, "%s/b", g_dir);
    int nb = read_losses(d, b, 64);
    CHECK_MSG(ns == 50 && na == 50 && nb == 50, "metrics rows %d %d %d, expected 50", ns, na, nb);
    if (ns == 50 && na == 50 && nb == 50) {
        CHECK_MSG(max_rel_diff(s, a, 50) <= 1e-5, "2 ranks then 1: relative %.3g",
                  max_rel_diff(s, a, 50));
        CHECK_MSG(max_rel_diff(s, b, 50) <= 1e-5, "1 then 2 ranks: relative %.3g",
                  max_rel_diff(s, b, 50));
    }
    cleanup();
}

// Whether the last run() hung until MPIRUN's timeout: status 124 when SIGTERM ended it, and
// when SIGKILL had to, 137 (also a killed rank's status), so the time it took tells.
static int hung(int code) { return code == 124 || g_elapsed >= 299; }

// Failures stop every rank with a clear message, never a hang:
// a batch that does not split, one rank that cannot read the data, one rank killed mid-run.
static void test_failures_stop_every_rank(void) {
    tmpdir();
    if (mpi_state() != 1) cleanup();
    NEED_MPI();
    write_config("cfg.json");
    int code = run(MPIRUN " -np 3 build/train-mpi %s/cfg.json --train.out_dir=%s/x", g_dir, g_dir);
    CHECK_MSG(code == 2, "batch 8 over 3 ranks: exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_err, "does not divide over 3 ranks") != NULL, "stderr: %s", g_err);
    // MPMD launch: rank 1 is given a data file that does not exist
    code = run(MPIRUN " -np 1 build/train-mpi %s/cfg.json --train.out_dir=%s/y : -np 1 "
                      "build/train-mpi %s/cfg.json "
                      "--train.out_dir=%s/y --data.path=%s/missing.txt",
               g_dir, g_dir, g_dir, g_dir, g_dir);
    CHECK_MSG(code != 0 && !hung(code), "rank 1 without data: exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_err, "(rank 1)") && strstr(g_err, "missing.txt"), "stderr: %s", g_err);
    // rank 1 (told apart by its log_interval, which only rank 0 uses) is killed during training
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             MPIRUN
             " -np 1 build/train-mpi %s/cfg.json --train.max_steps=100000 --train.out_dir=%s/z : "
             "-np 1 build/train-mpi %s/cfg.json --train.max_steps=100000 --train.out_dir=%s/z "
             "--log.log_interval=97 & "
             "pid=$!; for i in $(seq 1 200); do [ -s %s/z/metrics.csv ] && break; sleep 0.1; done; "
             "pkill -KILL -f '^build/train-mpi .*log_interval=97'; wait $pid",
             g_dir, g_dir, g_dir, g_dir, g_dir);
    code = run("%s", cmd);
    CHECK_MSG(code != 0 && !hung(code), "rank 1 killed: exit %d: %s", code, g_err);
    CHECK_MSG(strstr(g_err, "rank 1") != NULL, "stderr does not name rank 1: %s", g_err);
    if (getenv("TGPT_TEST_VERBOSE"))
        fprintf(stderr, "  rank 1 killed: exit %d, stderr:\n%s\n", code, g_err);
    cleanup();
}

const TestCase tests_mpi[] = {
    {"mpi_two_ranks_match_one_process", test_two_ranks_match_one_process},
    {"mpi_checkpoints_cross_rank_counts", test_checkpoints_cross_rank_counts},
    {"mpi_failures_stop_every_rank", test_failures_stop_every_rank},
    {NULL, NULL},
};
