// tests/test_crash.c: nothing lost on a crash. SIGKILL at random moments never leaves an
// unreadable checkpoint.bin; SIGINT saves, says how to resume, and the resumed run is bit-exact.
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/checkpoint.h"
#include "programs.h"
#include "test.h"

static char g_cdir[64];

static void crash_tmpdir(void) {
    snprintf(g_cdir, sizeof g_cdir, "/tmp/tgpt_crash_XXXXXX");
    if (!mkdtemp(g_cdir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void crash_cleanup(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_cdir);
    if (system(cmd) != 0) fprintf(stderr, "  (could not remove %s)\n", g_cdir);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

// Start ./train with the given arguments, stdout/stderr to files in the test directory.
static pid_t spawn_train(char *const argv[], const char *log_name) {
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", g_cdir, log_name);
        if (!freopen(path, "w", stdout) || !freopen(path, "a", stderr)) _exit(99);
        execv("./train", argv);
        _exit(98);
    }
    return pid;
}

// Wait (up to 20 s) until the trainer writing to log_name has started its training loop, so
// the kills below land during training whatever the start-up costs (an MPI build's ./train
// starts its runtime first).
static void wait_started(const char *log_name) {
    char path[256], buf[4096];
    snprintf(path, sizeof path, "%s/%s", g_cdir, log_name);
    for (int i = 0; i < 2000; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            buf[n] = 0;
            fclose(f);
            if (strstr(buf, "writing to") || strstr(buf, "continuing from")) return;
        }
        sleep_ms(10);
    }
    fprintf(stderr, "  note: the trainer writing %s did not start its loop within 20 s\n",
            log_name);
}

static int wait_exit(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st)
                         : -(WIFSIGNALED(st) ? WTERMSIG(st) : 1000);  // killed: -signal
}

static void write_config(const char *name, int n_embd) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_cdir, name);
    FILE *f = fopen(path, "w");
    fprintf(
        f,
        "{\"name\": \"crash\",\n"
        " \"model\": {\"n_layer\": 2, \"n_head\": 2, \"n_embd\": %d, \"block_size\": 16},\n"
        " \"data\": {\"path\": \"data/default.txt\", \"val_fraction\": 0.02},\n"
        " \"train\": {\"batch_size\": 4, \"max_steps\": 400, \"lr_decay_steps\": 400, "
        "\"warmup_steps\": 5,\n"
        "           \"ckpt_interval\": 1, \"out_dir\": \"%s/out\", \"seed\": 3, \"threads\": 1},\n"
        " \"log\": {\"log_interval\": 50, \"eval_interval\": 100, \"eval_steps\": 2, "
        "\"attn_interval\": 50},\n"
        " \"sample\": {\"tokens\": 0}}\n",
        n_embd, g_cdir);
    fclose(f);
}

static int count_file_lines(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

// The test directory's file `name` into buf ("" when missing).
static void slurp_file(const char *name, char *buf, size_t n) {
    char path[300];
    snprintf(path, sizeof path, "%s/%s", g_cdir, name);
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

// Kill the trainer with SIGKILL at 24 random moments while it writes a checkpoint every step;
// after each kill, checkpoint.bin (when it exists) must load, and the run must resume. The run is
// far longer than the test (max_steps 10^6), so every kill lands in a running trainer.
static void test_sigkill_never_leaves_a_broken_checkpoint(void) {
    crash_tmpdir();
    write_config("cfg.json", 32);
    char cfg[256], ckpt[256];
    snprintf(cfg, sizeof cfg, "%s/cfg.json", g_cdir);
    snprintf(ckpt, sizeof ckpt, "%s/out/checkpoint.bin", g_cdir);
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    srand(seed);
    int kills = 0, loaded = 0;
    for (int i = 0; i < 24; i++) {
        struct stat st;
        int have = stat(ckpt, &st) == 0;
        char *resume_argv[] = {"./train", "--resume", ckpt, NULL};
        char *fresh_argv[] = {"./train", cfg, "--train.overwrite=true", "--train.max_steps=1000000",
                              NULL};  // over a run killed before its first checkpoint
        pid_t pid = spawn_train(have ? resume_argv : fresh_argv, "log.txt");
        wait_started("log.txt");
        sleep_ms(rand() % 300);
        kill(pid, SIGKILL);
        int code = wait_exit(pid);
        kills += code == -SIGKILL;           // killed while running (not exited before the signal)
        if (stat(ckpt, &st) != 0) continue;  // killed before the first checkpoint
        Checkpoint ck;
        char err[512];
        int ok = checkpoint_open(&ck, ckpt, err, sizeof err);
        CHECK_MSG(ok, "after kill %d (seed %u, exit %d): %s", i, seed, code, err);
        if (ok) {
            loaded++;
            checkpoint_close(&ck);
        }
    }
    CHECK_MSG(kills >= 20, "only %d of 24 trainers were killed while running", kills);
    CHECK_MSG(loaded >= 10, "only %d of the kills left a checkpoint to check", loaded);
    // and the survivor resumes: 10 more steps, to the end
    Checkpoint ck;
    char err[512], end[64], want[96], log[8192];
    CHECK(checkpoint_open(&ck, ckpt, err, sizeof err));
    long step = ck.state.step;
    checkpoint_close(&ck);
    snprintf(end, sizeof end, "--train.max_steps=%ld", step + 10);
    char *resume_argv[] = {"./train", "--resume", ckpt, "--train.ckpt_interval=100", end, NULL};
    int code = wait_exit(spawn_train(resume_argv, "final.txt"));
    slurp_file("final.txt", log, sizeof log);
    snprintf(want, sizeof want, "final: step=%ld ", step + 10);
    CHECK_MSG(code == 0 && strstr(log, want), "final resume from step %ld exited %d: %s", step,
              code, log);
    crash_cleanup();
}

static int metrics_losses(const char *path, char *out, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512];
    size_t o = 0;
    while (fgets(line, sizeof line, f) && o + 200 < n) {
        // keep step, loss, lr, grad_norm (drop ms, which is wall-clock time)
        char *c = line;
        for (int k = 0; k < 4 && c; k++) c = strchr(c + 1, ',');
        if (c) *c = 0;
        o += (size_t)snprintf(out + o, n - o, "%s\n", line);
    }
    fclose(f);
    return 1;
}

// SIGINT mid-run: exit 130, a checkpoint, the resume command printed; resuming then gives the
// same losses and weights as the uninterrupted run.
static void test_sigint_saves_and_resume_is_exact(void) {
    crash_tmpdir();
    write_config("cfg.json", 32);
    char cfg[256], out[256], path[300], straight[65536], resumed[65536], saved[300];
    snprintf(cfg, sizeof cfg, "%s/cfg.json", g_cdir);
    snprintf(out, sizeof out, "%s/out", g_cdir);
    char *straight_argv[] = {"./train", cfg, "--train.ckpt_interval=50", NULL};
    CHECK(wait_exit(spawn_train(straight_argv, "straight.txt")) == 0);
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    metrics_losses(path, straight, sizeof straight);
    snprintf(path, sizeof path, "%s/checkpoint.bin", out);
    snprintf(saved, sizeof saved, "%s/straight.bin", g_cdir);
    CHECK(rename(path, saved) == 0);

    snprintf(path, sizeof path, "%s/metrics.csv", out);
    remove(path);  // so the wait below sees the new run's rows
    char *again_argv[] = {"./train", cfg, "--train.ckpt_interval=50", "--train.overwrite=true",
                          NULL};
    pid_t pid = spawn_train(again_argv, "interrupted.txt");
    for (int i = 0; i < 4000 && count_file_lines(path) < 60; i++) sleep_ms(2);
    kill(pid, SIGINT);
    int code = wait_exit(pid);
    char logp[300], log[8192] = {0};
    snprintf(logp, sizeof logp, "%s/interrupted.txt", g_cdir);
    FILE *lf = fopen(logp, "r");
    if (lf) {
        size_t n = fread(log, 1, sizeof log - 1, lf);
        log[n] = 0;
        fclose(lf);
    }
    if (code == 0) {
        SKIP("the run finished before the signal arrived (machine too fast for this test)");
    }
    CHECK_MSG(code == 130, "exit code %d after SIGINT", code);
    CHECK_MSG(strstr(log, "./train --resume ") != NULL, "no resume command in: %s", log);
    snprintf(path, sizeof path, "%s/checkpoint.bin", out);
    char *resume_argv[] = {"./train", "--resume", path, NULL};
    CHECK(wait_exit(spawn_train(resume_argv, "resumed.txt")) == 0);
    char mpath[300];
    snprintf(mpath, sizeof mpath, "%s/metrics.csv", out);
    metrics_losses(mpath, resumed, sizeof resumed);
    CHECK_MSG(strcmp(straight, resumed) == 0, "losses differ after a SIGINT and resume");
    Checkpoint a, b;
    char err[512];
    CHECK(checkpoint_open(&a, saved, err, sizeof err) &&
          checkpoint_open(&b, path, err, sizeof err));
    const TRecord *ra = tfile_find(&a.file, "layer1.wq"), *rb = tfile_find(&b.file, "layer1.wq");
    CHECK(ra && rb && ra->count == rb->count && memcmp(ra->data, rb->data, ra->count * 4) == 0);
    const TRecord *ma = tfile_find(&a.file, "adam_v.wte"), *mb = tfile_find(&b.file, "adam_v.wte");
    CHECK(ma && mb && memcmp(ma->data, mb->data, ma->count * 4) == 0);
    CHECK(a.state.step == b.state.step &&
          memcmp(a.state.rng.s, b.state.rng.s, sizeof a.state.rng.s) == 0);
    checkpoint_close(&a);
    checkpoint_close(&b);
    crash_cleanup();
}

// A non-finite loss never reaches the parameters: the step is skipped and counted; too many in a
// row stop the run with a message naming the step and the last finite loss, with a checkpoint.
static void test_divergence_guard(void) {
    crash_tmpdir();
    write_config("cfg.json", 16);
    char cmd[1024], path[300], log[8192];
    snprintf(cmd, sizeof cmd,
             "TGPT_TEST_NONFINITE=5:2 build/train-test %s/cfg.json --train.max_steps=20 "
             "--train.ckpt_interval=10 "
             "--log.log_interval=1 > %s/log.txt 2>&1",
             g_cdir, g_cdir);
    int st = system(cmd);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "two bad steps must not stop the run");
    snprintf(path, sizeof path, "%s/log.txt", g_cdir);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(log, 1, sizeof log - 1, f) : 0;
    log[n] = 0;
    if (f) fclose(f);
    CHECK_MSG(strstr(log, "SKIPPED (non-finite loss)") != NULL,
              "the progress line must say a step was skipped");
    snprintf(path, sizeof path, "%s/out/summary.json", g_cdir);
    f = fopen(path, "r");
    n = f ? fread(log, 1, sizeof log - 1, f) : 0;
    log[n] = 0;
    if (f) fclose(f);
    CHECK(strstr(log, "\"skipped_steps\": 2") != NULL);
    Checkpoint ck;
    char err[512];
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_cdir);
    CHECK_MSG(checkpoint_open(&ck, path, err, sizeof err), "%s", err);
    CHECK(ck.state.skipped_steps == 2);
    checkpoint_close(&ck);
    // five in a row (train.max_bad_steps): stop with exit 1, one line naming the step, the last
    // checkpoint from finite steps (step 10, kept: the skipped steps' state is not written over
    // it) and the command that resumes it
    snprintf(cmd, sizeof cmd,
             "TGPT_TEST_NONFINITE=12:100 build/train-test %s/cfg.json --train.max_steps=40 "
             "--train.ckpt_interval=10 "
             "--train.overwrite=true > %s/out.txt 2> %s/err.txt",
             g_cdir, g_cdir, g_cdir);
    st = system(cmd);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit %d",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    slurp_file("err.txt", log, sizeof log);
    char want[512];
    snprintf(want, sizeof want, "%s/out/checkpoint.bin (step 10)", g_cdir);
    CHECK_MSG(strstr(log, "stopping at step 17") && strstr(log, "last finite loss") &&
                  strstr(log, want) && strstr(log, "./train --resume ") &&
                  strstr(log, "--train.lr=") && count_lines(log) == 1,
              "%s", log);
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_cdir);
    CHECK_MSG(checkpoint_open(&ck, path, err, sizeof err), "%s", err);
    CHECK_MSG(ck.state.step == 10 && ck.state.skipped_steps == 0,
              "checkpoint at step %ld, %ld skipped", ck.state.step, ck.state.skipped_steps);
    checkpoint_close(&ck);
    snprintf(path, sizeof path, "%s/out/summary.json", g_cdir);
    CHECK_MSG(access(path, F_OK) != 0, "a diverged run wrote summary.json");
    // diverging before the first checkpoint writes none, and says so
    snprintf(cmd, sizeof cmd,
             "TGPT_TEST_NONFINITE=3:100 build/train-test %s/cfg.json --train.max_steps=40 "
             "--train.ckpt_interval=10 "
             "--train.overwrite=true > %s/out.txt 2> %s/err.txt",
             g_cdir, g_cdir, g_cdir);
    st = system(cmd);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit %d",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    slurp_file("err.txt", log, sizeof log);
    CHECK_MSG(strstr(log, "stopping at step 8") && strstr(log, "No checkpoint was written"), "%s",
              log);
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_cdir);
    CHECK_MSG(access(path, F_OK) != 0, "a checkpoint was written during the divergence");
    crash_cleanup();
}

// A real divergence, not an injected NaN, through the shipped ./train: a healthy run trained to
// step 10 is resumed with a reckless optimizer (AdamW with beta2 = 0 and eps = 1e-30, lr 0.01,
// no clipping: m / sqrt(v) explodes wherever a gradient is momentarily tiny), which drives the
// loss to NaN within a few steps. The guard stops it; the checkpoint from finite steps survives
// byte for byte, is named with its step and the resume command, samples, and resumes with the
// run's own settings to the end; best.bin never holds a non-finite loss. Under `make test-asan`
// the NaNs run through every math helper.
static void test_real_divergence(void) {
    crash_tmpdir();
    write_config("cfg.json", 16);
    char path[300], log[16384], cmd[2048];
    snprintf(cmd, sizeof cmd,
             "./train %s/cfg.json --train.max_steps=10 --train.ckpt_interval=5 "
             "--log.eval_interval=5 > %s/out.txt 2>&1",
             g_cdir, g_cdir);
    CHECK(system(cmd) == 0);
    unsigned char *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_cdir);
    CHECK(file_bytes(path, &before, &nb));
    snprintf(cmd, sizeof cmd,
             "./train --resume %s/out/checkpoint.bin --train.max_steps=400 --train.lr=0.01 "
             "--train.min_lr=0.01 "
             "--train.grad_clip=0 --train.beta2=0 --train.eps=1e-30 --train.ckpt_interval=1000 "
             "--log.log_interval=1 "
             "--log.eval_interval=5 > %s/out.txt 2> %s/err.txt",
             g_cdir, g_cdir, g_cdir);
    int st = system(cmd);
    slurp_file("err.txt", log, sizeof log);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit %d: %s",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1, log);
    char want[512];
    snprintf(want, sizeof want, "%s/out/checkpoint.bin (step 10)", g_cdir);
    CHECK_MSG(strstr(log, "stopping at step") && strstr(log, "The diverged state is not saved") &&
                  strstr(log, want) && strstr(log, "./train --resume ") && count_lines(log) == 1,
              "%s", log);
    slurp_file("out.txt", log, sizeof log);
    CHECK_MSG(strstr(log, "SKIPPED (non-finite"), "no step was non-finite:\n%.3000s", log);
    CHECK(file_bytes(path, &after, &na));
    CHECK_MSG(na == nb && nb > 0 && memcmp(before, after, nb) == 0,
              "the divergence changed checkpoint.bin");
    free(before);
    free(after);
    Checkpoint ck;
    char err[512];
    snprintf(path, sizeof path, "%s/out/best.bin", g_cdir);
    CHECK_MSG(checkpoint_open(&ck, path, err, sizeof err), "%s", err);
    CHECK_MSG(ck.file.buf && isfinite(ck.state.best_val_loss), "best.bin's best_val_loss is %g",
              ck.state.best_val_loss);
    checkpoint_close(&ck);
    // the surviving checkpoint samples text (not only newlines) ...
    snprintf(cmd, sizeof cmd,
             "./sample %s/out/checkpoint.bin --tokens 60 --seed 1 > %s/sample.txt 2>&1", g_cdir,
             g_cdir);
    st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    slurp_file("sample.txt", log, sizeof log);
    int visible = 0;
    for (const char *p = log; *p; p++) visible += *p != '\n';
    CHECK_MSG(visible >= 20, "the sample is %d visible characters: %s", visible, log);
    // ... and resumes with the run's own settings to the end, every loss finite
    snprintf(cmd, sizeof cmd,
             "./train --resume %s/out/checkpoint.bin --train.max_steps=30 --log.log_interval=1 > "
             "%s/out.txt 2> %s/err.txt",
             g_cdir, g_cdir, g_cdir);
    st = system(cmd);
    slurp_file("err.txt", log, sizeof log);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "resume: exit %d: %s",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1, log);
    slurp_file("out.txt", log, sizeof log);
    CHECK_MSG(strstr(log, "SKIPPED") == NULL && strstr(log, "final: step=30"), "%.3000s", log);
    crash_cleanup();
}

// The optional loss-spike guard (train.spike_zscore) skips an outlier step; off by default.
static void test_spike_guard(void) {
    crash_tmpdir();
    write_config("cfg.json", 16);
    char cmd[1024], path[300], log[8192];
    for (int guard = 0; guard < 2; guard++) {
        snprintf(cmd, sizeof cmd,
                 "TGPT_TEST_SPIKE=30 build/train-test %s/cfg.json --train.max_steps=40 "
                 "--train.ckpt_interval=100 "
                 "--log.log_interval=1 --train.overwrite=true %s > %s/log.txt 2>&1",
                 g_cdir, guard ? "--train.spike_zscore=6 --train.spike_window=20" : "", g_cdir);
        int st = system(cmd);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        snprintf(path, sizeof path, "%s/log.txt", g_cdir);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(log, 1, sizeof log - 1, f) : 0;
        log[n] = 0;
        if (f) fclose(f);
        if (guard)
            CHECK_MSG(strstr(log, "SKIPPED (loss spike)") != NULL,
                      "the spike at step 31 was not skipped");
        else
            CHECK_MSG(strstr(log, "SKIPPED") == NULL, "the guard is off by default");
    }
    crash_cleanup();
}

// The fault injection lives in the test build (build/train-test) only: the shipped ./train holds
// none of its code or names, and the environment variables change nothing in it.
static void test_shipped_train_has_no_test_hooks(void) {
    crash_tmpdir();
    FILE *f = fopen("./train", "rb");
    CHECK(f != NULL);
    size_t cap = 1 << 20, len = 0, n;
    char *bin = malloc(cap);
    while (f && (n = fread(bin + len, 1, cap - len, f)) > 0)
        if ((len += n) == cap) bin = realloc(bin, cap *= 2);
    if (f) fclose(f);
    int found = 0;
    for (size_t i = 0; i + 9 <= len && !found; i++) found = memcmp(bin + i, "TGPT_TEST", 9) == 0;
    free(bin);
    CHECK_MSG(len > 0 && !found, "./train contains the string TGPT_TEST (%zu bytes read)", len);
    write_config("cfg.json", 16);
    char cmd[1024], path[300], log[8192];
    snprintf(cmd, sizeof cmd,
             "TGPT_TEST_NONFINITE=0:100 TGPT_TEST_SPIKE=3 ./train %s/cfg.json --train.max_steps=10 "
             "--log.log_interval=1 > %s/log.txt 2>&1",
             g_cdir, g_cdir);
    int st = system(cmd);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d",
              WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    snprintf(path, sizeof path, "%s/log.txt", g_cdir);
    f = fopen(path, "r");
    n = f ? fread(log, 1, sizeof log - 1, f) : 0;
    log[n] = 0;
    if (f) fclose(f);
    CHECK_MSG(strstr(log, "SKIPPED") == NULL && strstr(log, "final: step=10") != NULL, "%s", log);
    crash_cleanup();
}

// The names in dir (and its subdirectories scaled/ and unscaled/) that hold ".tmp": temporary
// files a stop left behind. Returns how many, listed in buf.
static int temp_files(const char *dir, char *buf, size_t n) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "find '%s' -name '*.tmp*' > %s/temps.txt 2>/dev/null", dir, g_cdir);
    if (system(cmd) != 0) return 0;
    slurp_file("temps.txt", buf, n);
    return count_lines(buf);
}

// A stop signal in each phase, raised by the test build at a known point of it
// (TGPT_TEST_SIGNAL): exit 128 + the signal, a message saying what is saved, a consistent
// checkpoint, no temporary file left; and the run resumes.
typedef struct {
    const char *name, *signal, *extra;  // TGPT_TEST_SIGNAL and extra arguments
    int code;                           // expected exit code
    const char *message;                // expected in stderr
    long ckpt_step;                     // step of checkpoint.bin after the stop; -1 = none
    int summary;                        // whether summary.json exists
} PhaseStop;

static const PhaseStop PHASE_STOPS[] = {
    {"start-up", "TERM:startup:1", "", 143, "terminated during start-up: nothing trained", -1, 0},
    {"a step", "HUP:step:7", "", 129, "hung up (SIGHUP) at step 7: checkpoint saved", 7, 0},
    {"an evaluation", "TERM:eval:2", "", 143, "terminated at step 10: checkpoint saved", 10, 0},
    {"a checkpoint write", "INT:checkpoint:2", "", 130, "interrupted at step 10: checkpoint saved",
     10, 0},
    {"the final evaluation", "TERM:final-eval:1", "", 143,
     "during the final evaluation: the checkpoint at step 20 is saved; summary.json is not written",
     20, 0},
    {"sampling", "TERM:sample:1", "--sample.tokens=100000", 143,
     "during sampling: the checkpoint at step 20 is saved; the run is complete", 20, 1},
    {"comparison steps", "INT:step:4", "--compare-scaling", 130,
     "scaled: checkpoint saved; unscaled: checkpoint saved", -1, 0},
    {"comparison report", "TERM:report:1", "--compare-scaling", 143, "during the report", -1, 0},
    {"a second Ctrl-C", "INT:step:13:2", "", 130,
     "second Ctrl-C without saving; the latest checkpoint is @/out/checkpoint.bin (step 10)", 10,
     0},
};

static void test_stop_in_every_phase(void) {
    crash_tmpdir();
    write_config("cfg.json", 16);
    char cmd[2048], log[16384], path[300];
    for (size_t i = 0; i < sizeof PHASE_STOPS / sizeof PHASE_STOPS[0]; i++) {
        const PhaseStop *p = &PHASE_STOPS[i];
        snprintf(
            cmd, sizeof cmd,
            "rm -rf %s/out; TGPT_TEST_SIGNAL=%s build/train-test %s/cfg.json --train.max_steps=20 "
            "--train.ckpt_interval=5 --log.eval_interval=5 %s > %s/out.txt 2> %s/err.txt",
            g_cdir, p->signal, g_cdir, p->extra, g_cdir, g_cdir);
        int st = system(cmd), code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        slurp_file("err.txt", log, sizeof log);
        char want[512];  // the message with '@' standing for the test directory
        expand_at(want, sizeof want, p->message, g_cdir);
        CHECK_MSG(code == p->code && strstr(log, want), "%s: exit %d (expected %d), stderr: %s",
                  p->name, code, p->code, log);
        Checkpoint ck;
        char err[512];
        snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_cdir);
        if (p->ckpt_step >= 0) {
            CHECK_MSG(checkpoint_open(&ck, path, err, sizeof err), "%s: %s", p->name, err);
            if (ck.file.buf)
                CHECK_MSG(ck.state.step == p->ckpt_step, "%s: checkpoint at step %ld", p->name,
                          ck.state.step);
            checkpoint_close(&ck);
        } else if (!strstr(p->extra, "compare")) {
            CHECK_MSG(access(path, F_OK) != 0, "%s: a checkpoint was written", p->name);
        }
        snprintf(path, sizeof path, "%s/out/summary.json", g_cdir);
        CHECK_MSG((access(path, F_OK) == 0) == p->summary, "%s: summary.json %s", p->name,
                  p->summary ? "missing" : "written");
        snprintf(path, sizeof path, "%s/out", g_cdir);
        char temps[4096];
        CHECK_MSG(temp_files(path, temps, sizeof temps) == 0, "%s: temporary files left: %s",
                  p->name, temps);
        if (p->ckpt_step < 0) continue;
        // and the run resumes to its end
        snprintf(
            cmd, sizeof cmd,
            "./train --resume %s/out/checkpoint.bin --sample.tokens=0 > %s/out.txt 2> %s/err.txt",
            g_cdir, g_cdir, g_cdir);
        st = system(cmd);
        slurp_file("err.txt", log, sizeof log);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: resume exit %d: %s", p->name,
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1, log);
        slurp_file("out.txt", log, sizeof log);
        CHECK_MSG(strstr(log, "final: step=20"), "%s: resume: %.2000s", p->name, log);
    }
    crash_cleanup();
}

// `./train ... | head`: once head is gone, the next progress line raises SIGPIPE, which stops
// the run like SIGTERM: a checkpoint, exit 141, the reason on stderr.
static void test_sigpipe_saves(void) {
    crash_tmpdir();
    write_config("cfg.json", 16);
    char cmd[1024], log[8192], path[300];
    snprintf(cmd, sizeof cmd,
             "(./train %s/cfg.json --train.max_steps=100000 --log.log_interval=1 2> %s/err.txt; "
             "echo $? > %s/rc.txt)"
             " | head -n 3 > /dev/null",
             g_cdir, g_cdir, g_cdir);
    CHECK(system(cmd) == 0);
    slurp_file("rc.txt", log, sizeof log);
    CHECK_MSG(atoi(log) == 141, "exit %s", log);
    slurp_file("err.txt", log, sizeof log);
    CHECK_MSG(strstr(log, "output closed (SIGPIPE) at step") && strstr(log, "checkpoint saved"),
              "%s", log);
    Checkpoint ck;
    char err[512];
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_cdir);
    CHECK_MSG(checkpoint_open(&ck, path, err, sizeof err), "%s", err);
    CHECK(ck.state.step >= 1);
    checkpoint_close(&ck);
    crash_cleanup();
}

// Two trainers on one out_dir: the second is refused at start (exit 2) and changes nothing.
static void test_second_trainer_refused(void) {
    crash_tmpdir();
    write_config("cfg.json", 32);
    char cfg[256], log[8192], cmd[1024], path[300];
    snprintf(cfg, sizeof cfg, "%s/cfg.json", g_cdir);
    char *argv[] = {"./train", cfg, "--train.max_steps=100000", "--train.ckpt_interval=1000", NULL};
    pid_t pid = spawn_train(argv, "first.txt");
    wait_started("first.txt");
    snprintf(cmd, sizeof cmd, "./train %s/cfg.json --train.max_steps=30 > %s/second.txt 2>&1",
             g_cdir, g_cdir);
    int st = system(cmd);
    slurp_file("second.txt", log, sizeof log);
    CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(log, "in use by another trainer") &&
                  count_lines(log) == 1,
              "exit %d: %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, log);
    // also when the second asks to overwrite, and when it resumes there
    snprintf(cmd, sizeof cmd, "./train %s/cfg.json --train.overwrite=true > %s/second.txt 2>&1",
             g_cdir, g_cdir);
    st = system(cmd);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    kill(pid, SIGTERM);
    CHECK(wait_exit(pid) == 143);
    slurp_file("first.txt", log, sizeof log);
    CHECK_MSG(strstr(log, "terminated at step"), "%s", log);
    snprintf(path, sizeof path, "%s/out/metrics.csv", g_cdir);
    int rows = count_file_lines(path) - 1;
    Checkpoint ck;
    char err[512];
    snprintf(path, sizeof path, "%s/out/checkpoint.bin", g_cdir);
    CHECK_MSG(checkpoint_open(&ck, path, err, sizeof err), "%s", err);
    CHECK_MSG(ck.file.buf && ck.state.step == rows, "checkpoint step %ld, %d metrics rows",
              ck.state.step, rows);
    checkpoint_close(&ck);
    // with the first one gone, the directory is free again (for its own resume)
    snprintf(cmd, sizeof cmd,
             "./train --resume %s/out/checkpoint.bin --train.max_steps=%d > %s/third.txt 2>&1",
             g_cdir, rows + 2, g_cdir);
    CHECK(system(cmd) == 0);
    crash_cleanup();
}

// SIGTERM: the same orderly stop, exit 143.
static void test_sigterm_saves(void) {
    crash_tmpdir();
    write_config("cfg.json", 32);
    char cfg[256], metrics[300], ckpt[300];
    snprintf(cfg, sizeof cfg, "%s/cfg.json", g_cdir);
    snprintf(metrics, sizeof metrics, "%s/out/metrics.csv", g_cdir);
    snprintf(ckpt, sizeof ckpt, "%s/out/checkpoint.bin", g_cdir);
    char *argv[] = {"./train", cfg, "--train.ckpt_interval=1000", "--train.max_steps=100000", NULL};
    pid_t pid = spawn_train(argv, "term.txt");
    for (int i = 0; i < 4000 && count_file_lines(metrics) < 30; i++) sleep_ms(2);
    kill(pid, SIGTERM);
    int code = wait_exit(pid);
    CHECK_MSG(code == 143, "exit code %d after SIGTERM", code);
    Checkpoint ck;
    char err[512];
    CHECK_MSG(checkpoint_open(&ck, ckpt, err, sizeof err), "%s", err);
    CHECK(ck.state.step >= 29);
    checkpoint_close(&ck);
    crash_cleanup();
}

const TestCase tests_crash[] = {
    {"crash_shipped_train_has_no_test_hooks", test_shipped_train_has_no_test_hooks},
    {"crash_spike_guard", test_spike_guard},
    {"crash_sigterm_saves", test_sigterm_saves},
    {"crash_divergence_guard", test_divergence_guard},
    {"crash_real_divergence", test_real_divergence},
    {"crash_stop_in_every_phase", test_stop_in_every_phase},
    {"crash_sigpipe_saves", test_sigpipe_saves},
    {"crash_second_trainer_refused", test_second_trainer_refused},
    {"crash_sigkill_never_leaves_a_broken_checkpoint",
     test_sigkill_never_leaves_a_broken_checkpoint},
    {"crash_sigint_saves_and_resume_is_exact", test_sigint_saves_and_resume_is_exact},
    {NULL, NULL},
};
