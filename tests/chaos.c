// tests/chaos.c: `make test-chaos`. Signals at random moments in every phase of ./train (start-up,
// steps, checkpoint writes, evaluation, the final evaluation, sampling, compare mode): SIGKILL,
// SIGTERM and SIGINT, six rounds per phase (two of each signal): 42; then two trainers on one
// out_dir, and a real divergence. Between each kill and its resume, the run's directory stays, is
// moved (mv) or is copied (cp -a), a third of the rounds each. After each: every checkpoint present
// loads in ./sample, --resume continues where the checkpoint is now (a moved run's old directory
// is not re-created, a copied run's original does not change), no temporary file is left
// (after a SIGKILL: once the next run in that directory has started), and no finished run's
// files changed (md5 before and after).
// Usage: tests/chaos [SEED] (from the repository root; the seed is printed to repeat a run).
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/checkpoint.h"
#include "test.h"

int g_test_failed = 0;
int g_test_skipped = 0;
const char *g_test_name = "chaos";

static char g_dir[64];
static char g_out[1 << 16];

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void slurp(const char *path, char *buf, size_t n) {
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
}

// Run a shell command, its stdout and stderr in g_out; returns the exit code.
static int sh(const char *fmt, ...) {
    char cmd[4096], full[4400], path[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/.sh_out", g_dir);
    snprintf(full, sizeof full, "(%s) > '%s' 2>&1 < /dev/null", cmd, path);
    int st = system(full);
    slurp(path, g_out, sizeof g_out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

// ---- the configurations: each makes one phase take most of a run's time ----
typedef struct {
    const char *phase;
    const char *model;  // the "model" object
    const char *train;  // extra "train" members
    const char *log;    // the "log" object
    int sample_tokens;
    double val_fraction;
    const char *args;    // extra command-line arguments
    const char *marker;  // stdout text after which the phase runs ("" = from the start)
    int max_delay_ms;    // the signal comes 0..max_delay_ms after the marker
} Phase;

#define TINY "{\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 16, \"block_size\": 16}"
static const Phase PHASES[] = {
    {"start-up", TINY, "\"max_steps\": 200, \"ckpt_interval\": 50",
     "{\"log_interval\": 50, \"eval_interval\": 100, \"eval_steps\": 2, \"attn_interval\": 50}", 0,
     0.05, "", "", 60},
    {"steps", TINY, "\"max_steps\": 3000, \"ckpt_interval\": 100",
     "{\"log_interval\": 100, \"eval_interval\": 1000, \"eval_steps\": 2, \"attn_interval\": 100}",
     0, 0.05, "", "writing to", 600},
    {"checkpoint writes", "{\"n_layer\": 4, \"n_head\": 4, \"n_embd\": 128, \"block_size\": 16}",
     "\"max_steps\": 3000, \"ckpt_interval\": 1, \"keep_checkpoints\": 2",
     "{\"log_interval\": 100, \"eval_interval\": 1000, \"eval_steps\": 2, \"attn_interval\": 0}", 0,
     0.05, "", "writing to", 800},
    {"evaluation", TINY, "\"max_steps\": 3000, \"ckpt_interval\": 7",
     "{\"log_interval\": 100, \"eval_interval\": 1, \"eval_steps\": 40, \"attn_interval\": 10}", 0,
     0.05, "", "writing to", 800},
    {"final evaluation", "{\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 64, \"block_size\": 64}",
     "\"max_steps\": 2, \"ckpt_interval\": 1",
     "{\"log_interval\": 1, \"eval_interval\": 100, \"eval_steps\": 2, \"attn_interval\": 0}", 0,
     0.9, "", "step     2/2", 600},
    {"sampling", TINY, "\"max_steps\": 3, \"ckpt_interval\": 1",
     "{\"log_interval\": 1, \"eval_interval\": 100, \"eval_steps\": 2, \"attn_interval\": 0}",
     400000, 0.05, "", "---- sample", 500},
    {"compare mode", TINY, "\"max_steps\": 3000, \"ckpt_interval\": 25",
     "{\"log_interval\": 100, \"eval_interval\": 50, \"eval_steps\": 2, \"attn_interval\": 25}", 20,
     0.05, "--compare-scaling", "writing to", 800},
};
#define N_PHASES ((int)(sizeof PHASES / sizeof PHASES[0]))

static void write_config(const char *path, const Phase *p, const char *out_dir) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f,
            "{\"name\": \"chaos\", \"model\": %s,\n \"data\": {\"path\": \"data/default.txt\", "
            "\"val_fraction\": %g},\n"
            " \"train\": {\"batch_size\": 4, \"warmup_steps\": 5, \"seed\": 5, \"threads\": 1, "
            "\"out_dir\": \"%s\", %s},\n"
            " \"log\": %s,\n \"sample\": {\"tokens\": %d}}\n",
            p->model, p->val_fraction, out_dir, p->train, p->log, p->sample_tokens);
    fclose(f);
}

// ---- running ./train ----
static pid_t spawn(const char *cmd, const char *log) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        if (!freopen(log, "w", stdout) || !freopen(log, "a", stderr)) _exit(99);
        setvbuf(stderr, NULL, _IONBF, 0);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(98);
    }
    return pid;
}

// Wait until log holds marker (at most 60 s, then go on: the delivery is still random, just not
// in the intended phase). Returns whether it was seen.
static int wait_marker(const char *log, const char *marker, pid_t pid) {
    if (!marker[0]) return 1;
    static char buf[1 << 16];
    double t0 = now_s();
    while (now_s() - t0 < 60) {
        slurp(log, buf, sizeof buf);
        if (strstr(buf, marker)) return 1;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return 0;  // (never happens before the marker in these configs)
        sleep_ms(5);
    }
    return 0;
}

static int wait_code(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : -(WIFSIGNALED(st) ? WTERMSIG(st) : 1000);
}

// ---- what must hold after each delivery ----

// Temporary files (names holding ".tmp") under dir: their list in g_out; returns how many.
static int temporaries(const char *dir) {
    sh("find '%s' -name '*.tmp*' 2>/dev/null", dir);
    int n = 0;
    for (const char *p = g_out; *p; p++) n += *p == '\n';
    return n;
}

// The finished runs (directories under g_dir) and the md5 of every file in them, in name order.
static char g_finished[1 << 14];  // their names, space-separated
static char g_finished_md5[1 << 18];

static void fingerprint(char *buf, size_t n) {
    sh("cd '%s' && find %s -type f | LC_ALL=C sort | xargs md5sum", g_dir, g_finished);
    snprintf(buf, n, "%s", g_out);
}

static int n_finished(void) {
    int n = 0;
    for (const char *p = g_finished; *p; p++) n += *p == ' ';
    return n;
}

static void add_finished(const char *name) {
    size_t len = strlen(g_finished);
    snprintf(g_finished + len, sizeof g_finished - len, "%s ", name);
    fingerprint(g_finished_md5, sizeof g_finished_md5);
}

static void check_finished_unchanged(const char *when) {
    static char now[1 << 18];
    fingerprint(now, sizeof now);
    CHECK_MSG(strcmp(now, g_finished_md5) == 0,
              "%s: a finished run changed:\nbefore:\n%s\nafter:\n%s", when, g_finished_md5, now);
}

// Every checkpoint file under dir loads in ./sample. Returns how many there were.
static int check_checkpoints_load(const char *dir, const char *when) {
    sh("find '%s' -name '*.bin' 2>/dev/null | LC_ALL=C sort", dir);
    static char list[1 << 16];
    snprintf(list, sizeof list, "%s", g_out);
    int n = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n")) {
        int code = sh("./sample '%s' --tokens 3 --seed 1", line);
        CHECK_MSG(code == 0, "%s: ./sample %s: exit %d: %s", when, line, code, g_out);
        n++;
    }
    return n;
}

// Resume every run directory under dir that holds checkpoint.bin for two more steps: it must
// finish and leave no temporary file (a SIGKILL's are removed as it starts). Returns how many.
static int resume_runs(const char *dir, const char *when) {
    const char *subs[3] = {"", "/scaled", "/unscaled"};
    int resumed = 0;
    for (int i = 0; i < 3; i++) {
        char run_dir[300], ckpt[320], err[512];
        snprintf(run_dir, sizeof run_dir, "%s%s", dir, subs[i]);
        snprintf(ckpt, sizeof ckpt, "%s/checkpoint.bin", run_dir);
        if (access(ckpt, F_OK) != 0) continue;
        Checkpoint ck;
        if (!checkpoint_open(&ck, ckpt, err, sizeof err)) {
            CHECK_MSG(0, "%s: %s", when, err);
            continue;
        }
        long step = ck.state.step;
        checkpoint_close(&ck);
        int code = sh("./train --resume '%s' --train.max_steps=%ld --sample.tokens=0 "
                      "--log.eval_steps=1 --data.val_fraction=0.05",
                      ckpt, step + 2);
        CHECK_MSG(code == 0 && strstr(g_out, "final"), "%s: resuming %s at step %ld: exit %d: %s",
                  when, ckpt, step, code, g_out);
        CHECK_MSG(temporaries(run_dir) == 0, "%s: temporary files after resuming %s: %s", when,
                  run_dir, g_out);
        resumed++;
    }
    return resumed;
}

// ---- the rounds ----
typedef struct {
    const char *phase;
    const char *sig_name;
    int code;
    int delay_ms;
    int marker;
    int ckpts;
    const char *said;
    const char *where;  // "in place", "moved" or "copied": the directory resumed
} Round;

// The md5 of every file under dir, in name order.
static void dir_md5(const char *dir, char *buf, size_t n) {
    sh("cd '%s' && find . -type f | LC_ALL=C sort | xargs -r md5sum", dir);
    snprintf(buf, n, "%s", g_out);
}

static const char *phase_said(const char *log) {
    static const char *const kinds[] = {"during start-up", "during the final evaluation",
                                        "during sampling", "second Ctrl-C",
                                        "at step",         NULL};
    static char buf[1 << 16];
    slurp(log, buf, sizeof buf);
    for (int i = 0; kinds[i]; i++)
        if (strstr(buf, kinds[i])) return kinds[i];
    return "-";
}

int main(int argc, char **argv) {
    unsigned seed =
        argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
    srand(seed);
    printf("chaos: seed %u (repeat with tests/chaos %u)\n", seed, seed);
    snprintf(g_dir, sizeof g_dir, "/tmp/tgpt_chaos_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    double t_start = now_s();

    // a finished run, which nothing below may change
    char cfg[300], dir[300], log[300];
    snprintf(cfg, sizeof cfg, "%s/finished.json", g_dir);
    snprintf(dir, sizeof dir, "%s/finished", g_dir);
    write_config(cfg, &PHASES[0], dir);
    CHECK_MSG(sh("./train '%s' --train.max_steps=30", cfg) == 0, "the finished run: %s", g_out);
    add_finished("finished");

    static const int sigs[3] = {SIGKILL, SIGTERM, SIGINT};
    static const char *const sig_names[3] = {"KILL", "TERM", "INT"};
    enum { ROUNDS_PER_PHASE = 6 };
    Round rounds[N_PHASES * ROUNDS_PER_PHASE];
    int n_rounds = 0;
    for (int k = 0; k < ROUNDS_PER_PHASE; k++) {
        for (int ph = 0; ph < N_PHASES; ph++) {
            const Phase *p = &PHASES[ph];
            int si = (k + ph) % 3;
            Round *r = &rounds[n_rounds];
            char when[160];
            snprintf(when, sizeof when, "round %d (%s, SIG%s)", n_rounds, p->phase, sig_names[si]);
            snprintf(dir, sizeof dir, "%s/r%02d", g_dir, n_rounds);
            snprintf(cfg, sizeof cfg, "%s/r%02d.json", g_dir, n_rounds);
            snprintf(log, sizeof log, "%s/r%02d.log", g_dir, n_rounds);
            write_config(cfg, p, dir);
            char cmd[1024];
            snprintf(cmd, sizeof cmd, "exec ./train '%s' %s", cfg, p->args);
            pid_t pid = spawn(cmd, log);
            r->marker = wait_marker(log, p->marker, pid);
            r->delay_ms = p->max_delay_ms ? rand() % p->max_delay_ms : 0;
            sleep_ms(r->delay_ms);
            kill(pid, sigs[si]);
            r->code = wait_code(pid);
            r->phase = p->phase;
            r->sig_name = sig_names[si];
            r->said = phase_said(log);
            // the exit: killed, or the documented code of a handled stop, or (when the signal
            // came before the handlers were installed) the signal's default action; 0 when the
            // run had already finished
            int handled = sigs[si] == SIGTERM ? 143 : 130;
            CHECK_MSG(r->code == -sigs[si] || r->code == handled || r->code == 0, "%s: exit %d",
                      when, r->code);
            if (sigs[si] != SIGKILL && r->code >= 0)
                CHECK_MSG(temporaries(dir) == 0, "%s: temporary files left after the stop: %s",
                          when, g_out);
            r->ckpts = check_checkpoints_load(dir, when);
            // the directory stays, is moved or is copied before the resume
            int how = access(dir, F_OK) == 0 ? rand() % 3 : 0;
            static const char *const wheres[3] = {"in place", "moved", "copied"};
            r->where = wheres[how];
            char target[340];
            static char original_md5[2][1 << 18];
            snprintf(target, sizeof target, "%s%s", dir,
                     how == 1   ? "_moved"
                     : how == 2 ? "_copy"
                                : "");
            if (how == 1)
                CHECK_MSG(sh("mv '%s' '%s'", dir, target) == 0, "%s: mv: %s", when, g_out);
            if (how == 2) {
                CHECK_MSG(sh("cp -a '%s' '%s'", dir, target) == 0, "%s: cp -a: %s", when, g_out);
                dir_md5(dir, original_md5[0], sizeof original_md5[0]);
            }
            if (!resume_runs(target, when)) {
                // nothing to resume: the next start in that directory clears a killed writer's
                // temporary files and trains
                int code = sh(
                    "./train '%s' %s --train.overwrite=true --train.max_steps=2 --sample.tokens=0"
                    " --train.out_dir='%s'",
                    cfg, p->args, target);
                CHECK_MSG(code == 0, "%s: a new run in the directory: exit %d: %s", when, code,
                          g_out);
                CHECK_MSG(temporaries(target) == 0, "%s: temporary files after a new start: %s",
                          when, g_out);
            }
            if (how == 1)
                CHECK_MSG(access(dir, F_OK) != 0,
                          "%s: the resume re-created the directory the run was moved from", when);
            if (how == 2) {
                dir_md5(dir, original_md5[1], sizeof original_md5[1]);
                CHECK_MSG(strcmp(original_md5[0], original_md5[1]) == 0,
                          "%s: resuming the copy changed the original:\n%s\n%s", when,
                          original_md5[0], original_md5[1]);
            }
            check_finished_unchanged(when);
            // a new run over a finished run is refused and changes nothing
            if (n_rounds % 6 == 0) {
                snprintf(cfg, sizeof cfg, "%s/finished.json", g_dir);
                int code = sh("./train '%s'", cfg);
                CHECK_MSG(code == 2 && strstr(g_out, "already holds a run"),
                          "%s: a new run over the finished run: exit %d: %s", when, code, g_out);
                check_finished_unchanged(when);
            }
            char name[32];
            snprintf(name, sizeof name, "r%02d%s", n_rounds, how == 1 ? "_moved" : "");
            add_finished(name);
            if (how == 2) {
                snprintf(name, sizeof name, "r%02d_copy", n_rounds);
                add_finished(name);
            }
            n_rounds++;
        }
    }

    // two trainers on one out_dir: the second is refused at start, three times, and changes nothing
    snprintf(dir, sizeof dir, "%s/busy", g_dir);
    snprintf(cfg, sizeof cfg, "%s/busy.json", g_dir);
    snprintf(log, sizeof log, "%s/busy.log", g_dir);
    write_config(cfg, &PHASES[1], dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "exec ./train '%s'", cfg);
    pid_t first = spawn(cmd, log);
    wait_marker(log, "writing to", first);
    for (int i = 0; i < 3; i++) {
        // a new run, one that asks to overwrite, and a resume of another run writing there
        int code = i < 2 ? sh("./train '%s' %s", cfg, i ? "--train.overwrite=true" : "")
                         : sh("./train --resume '%s/finished/checkpoint.bin' --train.out_dir='%s'",
                              g_dir, dir);
        CHECK_MSG(code == 2 && strstr(g_out, "in use by another trainer"),
                  "second trainer %d: exit %d: %s", i, code, g_out);
    }
    kill(first, SIGTERM);
    int code = wait_code(first);
    CHECK_MSG(code == 143, "the first trainer: exit %d", code);
    check_checkpoints_load(dir, "two trainers");
    CHECK_MSG(resume_runs(dir, "two trainers") == 1, "the first trainer's run did not resume");
    check_finished_unchanged("two trainers");

    // a real divergence: a healthy run resumed with a reckless optimizer (see tests/test_crash.c)
    // stops; its checkpoints from finite steps are unchanged (md5), load, and resume
    snprintf(dir, sizeof dir, "%s/diverge", g_dir);
    snprintf(cfg, sizeof cfg, "%s/diverge.json", g_dir);
    write_config(cfg, &PHASES[1], dir);
    code = sh("./train '%s' --train.max_steps=10 --train.ckpt_interval=5", cfg);
    CHECK_MSG(code == 0, "before the divergence: exit %d: %s", code, g_out);
    static char ckpt_md5[2][1 << 16];
    sh("cd '%s' && md5sum best.bin checkpoint.bin", dir);
    snprintf(ckpt_md5[0], sizeof ckpt_md5[0], "%s", g_out);
    code = sh("./train --resume '%s/checkpoint.bin' --train.max_steps=400 --train.lr=0.01 "
              "--train.min_lr=0.01 --train.grad_clip=0 "
              "--train.beta2=0 --train.eps=1e-30 --train.ckpt_interval=1000 "
              "--log.eval_interval=1000 2>&1 >/dev/null",
              dir);
    CHECK_MSG(code == 1 && strstr(g_out, "The diverged state is not saved"),
              "divergence: exit %d: %s", code, g_out);
    CHECK_MSG(temporaries(dir) == 0, "temporary files after the divergence: %s", g_out);
    sh("cd '%s' && md5sum best.bin checkpoint.bin", dir);
    snprintf(ckpt_md5[1], sizeof ckpt_md5[1], "%s", g_out);
    CHECK_MSG(strcmp(ckpt_md5[0], ckpt_md5[1]) == 0, "the divergence changed a checkpoint:\n%s\n%s",
              ckpt_md5[0], ckpt_md5[1]);
    CHECK_MSG(check_checkpoints_load(dir, "divergence") == 2,
              "the checkpoints do not load after the divergence");
    code = sh("./train --resume '%s/checkpoint.bin' --train.max_steps=30 --sample.tokens=0", dir);
    CHECK_MSG(code == 0, "resuming after the divergence: exit %d: %s", code, g_out);
    CHECK_MSG(temporaries(dir) == 0, "temporary files after the divergence: %s", g_out);
    check_finished_unchanged("divergence");

    printf("%-18s %-5s %6s %6s %-28s %-9s %s\n", "phase", "sig", "delay", "exit", "stop reported",
           "resumed", "checkpoints");
    int moved = 0, copied = 0;
    for (int i = 0; i < n_rounds; i++) {
        printf("%-18s %-5s %4dms %6d %-28s %-9s %d%s\n", rounds[i].phase, rounds[i].sig_name,
               rounds[i].delay_ms, rounds[i].code, rounds[i].said, rounds[i].where, rounds[i].ckpts,
               rounds[i].marker ? "" : " (marker not seen)");
        moved += strcmp(rounds[i].where, "moved") == 0;
        copied += strcmp(rounds[i].where, "copied") == 0;
    }
    printf("chaos: %d deliveries in %d phases (%d runs moved and %d copied before their resume), "
           "two trainers on one"
           " out_dir, a real divergence; %d finished runs unchanged; %.0f s; %s\n",
           n_rounds, N_PHASES, moved, copied, n_finished(), now_s() - t_start,
           g_test_failed ? "FAILED" : "all held");
    if (!g_test_failed)
        sh("rm -rf '%s'", g_dir);
    else
        printf("chaos: the files are kept in %s\n", g_dir);
    return g_test_failed ? 1 : 0;
}
