// run/sweep.c: the learning-rate sweep (see run/sweep.h). Each run of the grid is one ./train
// process of its own (this program, started again), so that a run that diverges (the guard ends
// its process) ends only that run: run k trains variant v at lr[i] in out_dir/<variant>_lr<i>/,
// from the config's seed, so every run starts from the same weights and draws the same batches.
// The sweep's state is its directory: sweep.json (the grid and the runs' command line), and each
// run's summary.json (finished), sweep_diverged.txt (diverged) or checkpoint.bin (stopped in it).
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE   700  // realpath
#include "run/sweep.h"
#include "run/sweep_runs.h"  // Sweep, SweepRun; reading runs back, writing the outputs

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>
#include <fcntl.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "base/common.h"
#include "base/config.h"
#include "base/signals.h"  // signals_install
#include "report/writer.h"
#include "run/args.h"
#include "run/checkpoint.h"
#include "run/optimizer.h"  // train_fix_decay_horizon
#include "run/outdir.h"

// ---------------------------------------------------------------------------------------------
// the sweep's state

int sweep_dir_is_sweep(const char *path) {
    struct stat st;
    char p[PATH_MAX + 32];
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    snprintf(p, sizeof p, "%s/sweep.json", path);
    return stat(p, &st) == 0;
}

// The shortest of %.15g .. %.17g that reads back as x (0.3, not 0.29999999999999999).
static void fmt_exact(char *buf, size_t n, const char *prefix, double x) {
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, n, "%s%.*g", prefix, digits, x);
        if (strtod(buf + strlen(prefix), NULL) == x) return;
    }
}

// The arguments of run r's ./train after the sweep's common ones (run_child starts it with them).
static int run_own_args(const Sweep *s, const SweepRun *r, char lr[64], char min_lr[64],
                        char out_dir[1400], char ov[340], const char **argv) {
    int n = 0;
    fmt_exact(lr, 64, "--train.lr=", r->lr);
    fmt_exact(min_lr, 64, "--train.min_lr=", r->lr * s->min_lr_ratio);
    snprintf(out_dir, 1400, "--train.out_dir=%s", r->dir);
    argv[n++] = lr;
    argv[n++] = min_lr;
    argv[n++] = out_dir;
    if (s->v[r->variant].override[0]) {
        snprintf(ov, 340, "--%s", s->v[r->variant].override);
        argv[n++] = ov;
    }
    // the run's directory is the sweep's own: a run started again replaces what it left
    argv[n++] = "--train.overwrite=true";
    return n;
}

// Run r's resolved config, as its ./train resolves it from the sweep's arguments and its own:
// what its summary.json and checkpoint must hold (run/sweep.h: sweep_state_parse has checked
// that the arguments are a config file and overrides).
static void run_config(const Sweep *s, SweepRun *r) {
    char err[1024], lr[64], min_lr[64], out_dir[1400], ov[340];
    const char *own[8];
    Config cfg;
    config_defaults(&cfg);
    const char *file = "configs/default.json";
    for (int i = 0; i < s->n_base; i++)
        if (s->base_args[i][0] != '-') file = s->base_args[i];
    int ok = config_load_file(&cfg, file, err, sizeof err);
    for (int i = 0; ok && i < s->n_base; i++)
        if (s->base_args[i][0] == '-')
            ok = config_apply_override(&cfg, s->base_args[i] + 2, err, sizeof err);
    int n = ok ? run_own_args(s, r, lr, min_lr, out_dir, ov, own) : 0;
    for (int i = 0; ok && i < n; i++) ok = config_apply_override(&cfg, own[i] + 2, err, sizeof err);
    if (!ok || !config_finalize(&cfg, err, sizeof err))
        die(EXIT_USAGE, "the sweep's run in '%s' (%s, lr %g): %s", r->dir, s->v[r->variant].name,
            r->lr, err);
    train_fix_decay_horizon(&cfg);  // as ./train fixes it when a run starts
    free(r->config_json);
    r->config_json = config_to_json(&cfg);
    r->max_steps = cfg.max_steps;
}

static void set_runs(Sweep *s) {
    s->n_runs = 0;
    // learning rate by learning rate, the variants side by side: a sweep stopped half way has
    // compared the variants at the rates it reached
    for (int i = 0; i < s->grid.n; i++)
        for (int v = 0; v < s->nv; v++) {
            SweepRun *r = &s->runs[s->n_runs++];
            memset(r, 0, sizeof *r);
            r->variant = v;
            r->point = i;
            r->lr = sweep_lr(&s->grid, i);
            char dir[sizeof r->dir];
            int w = snprintf(dir, sizeof dir, "%s/%s_lr%d", s->dir, s->v[v].name, i);
            if (w < 0 || (size_t)w >= sizeof dir)
                die(EXIT_USAGE, "the sweep's directory '%s' is too long", s->dir);
            memcpy(r->dir, dir, sizeof dir);
            r->loss0 = r->train_loss = r->val_loss = r->max_logit = r->min_entropy = NAN;
            run_config(s, r);
        }
}

static void write_state(const Sweep *s) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "cwd", s->cwd);
    cJSON_AddStringToObject(root, "key", s->grid.key);
    cJSON_AddNumberToObject(root, "lo", s->grid.lo);
    cJSON_AddNumberToObject(root, "hi", s->grid.hi);
    cJSON_AddNumberToObject(root, "n", s->grid.n);
    cJSON_AddNumberToObject(root, "min_lr_ratio", s->min_lr_ratio);
    cJSON_AddStringToObject(root, "compare_key", s->compare_key);
    cJSON_AddStringToObject(root, "command", s->command);
    cJSON *vs = cJSON_AddArrayToObject(root, "variants");
    for (int v = 0; v < s->nv; v++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", s->v[v].name);
        cJSON_AddStringToObject(o, "override", s->v[v].override);
        cJSON_AddItemToArray(vs, o);
    }
    cJSON *args = cJSON_AddArrayToObject(root, "args");
    for (int i = 0; i < s->n_base; i++)
        cJSON_AddItemToArray(args, cJSON_CreateString(s->base_args[i]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    char path[1200], err[1024];
    Out o;
    if (!out_open(&o, s->dir, "sweep.json", path, sizeof path, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
    out(&o, "%s\n", text);
    free(text);
    if (!out_close(&o, path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
}

static void read_state(Sweep *s, const char *dir) {
    char path[PATH_MAX + 16], why[160], err[1024];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    size_t len = 0;
    char *text = sweep_read_bounded(path, SWEEP_STATE_MAX_BYTES, &len, why, sizeof why);
    if (!text) die(EXIT_USAGE, "cannot read the sweep's state '%s': %s", path, why);
    SweepState st;
    int ok = sweep_state_parse(text, len, path, &st, err, sizeof err);
    free(text);
    if (!ok) die(EXIT_USAGE, "%s", err);
    snprintf(s->cwd, sizeof s->cwd, "%s", st.cwd);
    s->grid = st.grid;
    s->min_lr_ratio = st.min_lr_ratio;
    snprintf(s->compare_key, sizeof s->compare_key, "%s", st.compare_key);
    snprintf(s->command, sizeof s->command, "%s", st.command);
    s->nv = st.nv;
    memcpy(s->v, st.v, sizeof st.v);
    s->base_args = st.args;  // the sweep's now (freed by sweep_main)
    s->n_base = st.n_args;
}

// ---------------------------------------------------------------------------------------------
// running the runs

static volatile sig_atomic_t g_sweep_signal = 0;
static volatile pid_t g_child = 0;

// A signal stops the run in progress as it would stop ./train (its checkpoint saved): the run is
// in a process group of its own, so the terminal's Ctrl-C reaches this process only, which
// passes each signal on.
static void on_sweep_signal(int sig) {
    if (!g_sweep_signal) g_sweep_signal = sig;
    if (g_child > 0) kill(g_child, sig);
}

static void install_signals(void) {
    signals_install(on_sweep_signal, STOP_SIGNALS, STOP_SIGNALS_N);
}

// The end of a run's log (its last 64 KiB at most, where the guard and an error say why it
// ended), or NULL; the sweep wrote the file, as a regular file (run_child).
static char *log_tail(const char *log_path) {
    uint64_t size;
    const char *why;
    FILE *f = fopen_regular(log_path, &size, &why);
    if (!f) return NULL;
    const long keep = 65536;
    if (size > (uint64_t)keep) fseek(f, -keep, SEEK_END);
    char *text = malloc((size_t)keep + 1);
    size_t n = text ? fread(text, 1, (size_t)keep, f) : 0;
    fclose(f);
    if (text) text[n] = 0;
    return text;
}

// The step at which the run's log says the divergence guard stopped it, or -1.
static long diverged_at(const char *log_path) {
    char *text = log_tail(log_path);
    if (!text) return -1;
    const char *p = strstr(text, "stopping at step ");
    long step = p ? strtol(p + 17, NULL, 10) : -1;
    if (step < 0 && strstr(text, "was skipped (non-finite")) step = 0;
    free(text);
    return step;
}

// The last line of the run's log that says something, into buf ("" when none).
static void log_last_line(const char *log_path, char *buf, size_t n) {
    char *text = log_tail(log_path);
    buf[0] = 0;
    if (!text) return;
    size_t len = strlen(text);
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        len--;
    size_t start = len;
    while (start > 0 && text[start - 1] != '\n') start--;
    snprintf(buf, n, "%.*s", (int)(len - start), text + start);
    free(text);
}

// The run's log, opened by the sweep before the run starts: a regular file, never through a
// symbolic link; anything else there is refused (exit 2) and left as it is.
static int open_run_log(const char *log_path, int resume) {
    int fd = open(log_path,
                  O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
                      (resume ? O_APPEND : 0),
                  0666);
    struct stat st;
    if (fd < 0 && (errno == ELOOP || errno == EISDIR || errno == ENXIO)) {
        const char *what = errno == ELOOP    ? "a symbolic link"
                           : errno == EISDIR ? "a directory"
                                             : "a FIFO without a reader";
        die(EXIT_USAGE,
            "cannot write the run's log '%s': it is %s, not a regular file (remove it; the sweep "
            "writes the"
            " run's output there)",
            log_path, what);
    }
    if (fd < 0) die(EXIT_RUNTIME, "cannot write the run's log '%s': %s", log_path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        die(EXIT_USAGE,
            "cannot write the run's log '%s': it is not a regular file (remove it; the sweep "
            "writes the run's"
            " output there)",
            log_path);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (!resume && ftruncate(fd, 0) != 0)
        die(EXIT_RUNTIME, "cannot write the run's log '%s': %s", log_path, strerror(errno));
    return fd;
}

// Run k in a process of its own, its output in its run.log: fresh, or resumed from its
// checkpoint. Returns the exit status (0, 1, or 128 + a signal).
static int run_child(const Sweep *s, int k, int resume, const char *exe) {
    const SweepRun *r = &s->runs[k];
    char err[1024], log_path[1400], lr[64], min_lr[64], out_dir[1400], ckpt[1400], ov[340];
    if (!ensure_dir(r->dir, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    snprintf(log_path, sizeof log_path, "%s/run.log", r->dir);
    int log_fd = open_run_log(log_path, resume);
    char **argv = xcalloc((size_t)s->n_base + 8, sizeof(char *), "a run's arguments");
    int n = 0;
    argv[n++] = (char *)exe;
    if (resume) {
        snprintf(ckpt, sizeof ckpt, "%s/checkpoint.bin", r->dir);
        argv[n++] = "--resume";
        argv[n++] = ckpt;
    } else {
        for (int i = 0; i < s->n_base; i++) argv[n++] = s->base_args[i];
        n += run_own_args(s, r, lr, min_lr, out_dir, ov, (const char **)argv + n);
    }
    argv[n] = NULL;
    char stale[1400];
    snprintf(stale, sizeof stale, "%s/sweep_diverged.txt", r->dir);
    if (!resume) unlink(stale);  // a run started again has not diverged yet
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) die(EXIT_RUNTIME, "cannot start the run in '%s': %s", r->dir, strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
#ifdef __linux__
        // the sweep killed (kill -9 too): the run stops as a signal stops ./train, its checkpoint
        // saved, rather than go on in a directory the sweep's resume will train in
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(128 + SIGTERM);
#endif
#ifdef TGPT_TEST_HOOKS
        // TGPT_TEST_SWEEP_RUN=K: the fault injection of the environment (TGPT_TEST_SIGNAL,
        // TGPT_TEST_NONFINITE) reaches run K (1-based) only
        const char *only = getenv("TGPT_TEST_SWEEP_RUN");
        if (only && atoi(only) != k + 1) {
            unsetenv("TGPT_TEST_SIGNAL");
            unsetenv("TGPT_TEST_NONFINITE");
        }
#endif
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        execv(exe, argv);
        _exit(127);
    }
    (void)parent;
    close(log_fd);
    setpgid(pid, pid);
    g_child = pid;
    if (g_sweep_signal) kill(pid, g_sweep_signal);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            die(EXIT_RUNTIME, "waiting for the run in '%s': %s", r->dir, strerror(errno));
    g_child = 0;
    free(argv);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    if (WEXITSTATUS(status) == 127)
        die(EXIT_RUNTIME, "cannot run '%s' for the run in '%s' (see %s)", exe, r->dir, log_path);
    return WEXITSTATUS(status);
}

static void fmt_time(char *buf, size_t n, double seconds) {
    if (!(seconds >= 0)) {
        snprintf(buf, n, "?");
        return;
    }
    long t = (long)(seconds + 0.5);
    if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

static int run_sweep(Sweep *s, int resuming) {
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        die(EXIT_RUNTIME,
            "cannot find this program's own path (/proc/self/exe) to start the sweep's runs");
    exe[len] = 0;
    install_signals();
    printf("sweep: %d runs (%d learning rates from %g to %g%s%s) in %s\n", s->n_runs, s->grid.n,
           s->grid.lo, s->grid.hi, s->nv > 1 ? " x " : "", s->nv > 1 ? s->compare_key : "", s->dir);
    double spent = 0;
    int timed = 0;
    for (int k = 0; k < s->n_runs; k++) {
        SweepRun *r = &s->runs[k];
        if (resuming) sweep_read_run(s, k);
        if (r->done) {
            printf("run %d/%d | %s lr %.3g | kept (finished before)\n", k + 1, s->n_runs,
                   s->v[r->variant].name, r->lr);
            continue;
        }
        int resume = resuming && sweep_path_exists(r->dir, "checkpoint.bin") &&
                     !sweep_path_exists(r->dir, "summary.json");
        if (resume) {
            char ckpt[1400];
            snprintf(ckpt, sizeof ckpt, "%s/checkpoint.bin", r->dir);
            sweep_check_checkpoint(s, k, ckpt);
        }
        double t0 = now_seconds();
        int code = run_child(s, k, resume, exe);
        double dt = now_seconds() - t0;
        char log_path[1400];
        snprintf(log_path, sizeof log_path, "%s/run.log", r->dir);
        if (code > 128 || g_sweep_signal) {
            sweep_write_outputs(s);
            fprintf(stderr,
                    "\nsweep stopped in run %d of %d (%s, lr %.3g): the finished runs are kept. "
                    "Resume with:\n"
                    "  ./train --resume %s\n",
                    k + 1, s->n_runs, s->v[r->variant].name, r->lr, s->dir);
            return code > 128 ? code : 128 + g_sweep_signal;
        }
        if (code != 0) {
            long step = diverged_at(log_path);
            char last[400];
            log_last_line(log_path, last, sizeof last);
            if (step < 0)
                die(EXIT_RUNTIME, "run %d/%d (%s, lr %g) failed with exit code %d: %s%s(see %s)",
                    k + 1, s->n_runs, s->v[r->variant].name, r->lr, code, last[0] ? last : "",
                    last[0] ? " " : "", log_path);
            char path[1400], err[1600];
            Out o;
            if (!out_open(&o, r->dir, "sweep_diverged.txt", path, sizeof path, err, sizeof err))
                die(EXIT_RUNTIME, "%s", err);
            out(&o, "%ld\n", step);
            if (!out_close(&o, path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        }
        sweep_read_run(s, k);
        if (!r->done)
            die(EXIT_RUNTIME, "run %d/%d (%s, lr %g) left no summary.json: see %s", k + 1,
                s->n_runs, s->v[r->variant].name, r->lr, log_path);
        spent += dt;
        timed++;
        char eta[32], el[32];
        fmt_time(eta, sizeof eta, spent / timed * (s->n_runs - k - 1));
        fmt_time(el, sizeof el, dt);
        if (r->diverged)
            printf("run %d/%d | %s lr %.3g | diverged at step %ld | max logit %.2f | %s | eta %s\n",
                   k + 1, s->n_runs, s->v[r->variant].name, r->lr, r->diverged_step, r->max_logit,
                   el, eta);
        else
            printf("run %d/%d | %s lr %.3g | val loss %.4f | max logit %.2f | min H %.3f | %s | "
                   "eta %s\n",
                   k + 1, s->n_runs, s->v[r->variant].name, r->lr, r->val_loss, r->max_logit,
                   r->min_entropy, el, eta);
        fflush(stdout);
        sweep_write_outputs(s);
    }
    sweep_write_outputs(s);
    for (int v = 0; v < s->nv; v++)
        printf("sensitivity %s: %.4f\n", s->v[v].name, sweep_variant_sensitivity(s, v));
    printf("wrote %s/sweep.csv, %s/sweep.svg and %s/report.md\n", s->dir, s->dir, s->dir);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// the two ways in

// Whether argv[i] is an option the sweep sets for each run itself (and its value's index).
static int sweep_owned(int argc, char **argv, int i, int *skip) {
    const char *a = argv[i];
    *skip = 0;
    if (strcmp(a, "--compare-scaling") == 0) return 1;
    static const char *const WITH_VALUE[] = {"--sweep", "--compare", NULL};
    for (int k = 0; WITH_VALUE[k]; k++) {
        size_t n = strlen(WITH_VALUE[k]);
        if (strncmp(a, WITH_VALUE[k], n) == 0 && (a[n] == '=' || a[n] == 0)) {
            *skip = a[n] == 0 && i + 1 < argc;
            return 1;
        }
    }
    return strncmp(a, "--train.lr=", 11) == 0 || strncmp(a, "--train.min_lr=", 15) == 0 ||
           strncmp(a, "--train.out_dir=", 16) == 0 || strncmp(a, "--train.overwrite=", 18) == 0;
}

// Whether name is a sweep's run directory's, <variant>_lr<i>.
static int run_dir_name(const char *name) {
    const char *p = strstr(name, "_lr");
    if (!p || p == name) return 0;
    while (strstr(p + 1, "_lr")) p = strstr(p + 1, "_lr");
    return p[3] && strspn(p + 3, "0123456789") == strlen(p + 3);
}

// --train.overwrite=true: what the sweep replaces goes, so that nothing of it is read back as
// this sweep's: a run's files in the directory itself, and in every run directory of an earlier
// sweep (<variant>_lr<i>/) the files a run and the sweep write there (run.log,
// sweep_diverged.txt). Only regular files are removed (outdir_clear_run); a run directory left
// empty goes too; anything else there stays.
static void clear_replaced(const char *dir) {
    char err[2400], path[PATH_MAX + 64];
    if (!outdir_clear_run(dir, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    DIR *d = opendir(dir);
    if (!d) die(EXIT_RUNTIME, "cannot list '%s': %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!run_dir_name(e->d_name) || lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (!outdir_clear_run(path, err, sizeof err)) die(EXIT_USAGE, "%s", err);
        static const char *const SWEEP_FILES[] = {"run.log", "sweep_diverged.txt", NULL};
        for (int i = 0; SWEEP_FILES[i]; i++) {
            char f[PATH_MAX + 128];
            snprintf(f, sizeof f, "%s/%s", path, SWEEP_FILES[i]);
            if (lstat(f, &st) == 0 && S_ISREG(st.st_mode) && unlink(f) != 0)
                die(EXIT_RUNTIME, "cannot remove '%s': %s", f, strerror(errno));
        }
        rmdir(path);  // when empty
    }
    closedir(d);
}

static void start_fresh(Sweep *s, const Args *a, int argc, char **argv) {
    char err[1024];
    Config cfg;
    config_defaults(&cfg);
    if (!config_load_file(&cfg, a->config_path, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    for (int i = 0; i < a->n_overrides; i++)
        if (!config_apply_override(&cfg, a->overrides[i], err, sizeof err))
            die(EXIT_USAGE, "%s", err);
    if (!config_finalize(&cfg, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    if (!sweep_parse(a->sweep_spec, &s->grid, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    s->min_lr_ratio = cfg.lr > 0 ? cfg.min_lr / cfg.lr : 0.1;
    const Comparison *c = a->comparison;
    s->nv = c ? c->n : 1;
    for (int v = 0; v < s->nv; v++) {
        snprintf(s->v[v].name, sizeof s->v[v].name, "%s", c ? c->v[v].name : "base");
        snprintf(s->v[v].override, sizeof s->v[v].override, "%s", c ? c->v[v].overrides[0] : "");
    }
    snprintf(s->compare_key, sizeof s->compare_key, "%s", c ? c->key : "");
    // every run's configuration must finalize: each variant at both ends of the grid
    for (int v = 0; v < s->nv; v++)
        for (int e = 0; e < 2; e++) {
            Config rc = cfg;
            char lr[64], mlr[64];
            double x = e ? s->grid.hi : s->grid.lo;
            snprintf(lr, sizeof lr, "train.lr=%.17g", x);
            snprintf(mlr, sizeof mlr, "train.min_lr=%.17g", x * s->min_lr_ratio);
            if ((s->v[v].override[0] &&
                 !config_apply_override(&rc, s->v[v].override, err, sizeof err)) ||
                !config_apply_override(&rc, lr, err, sizeof err) ||
                !config_apply_override(&rc, mlr, err, sizeof err) ||
                !config_finalize(&rc, err, sizeof err))
                die(EXIT_USAGE, "--sweep %s: the run of %s at lr %g: %s", a->sweep_spec,
                    s->v[v].name, x, err);
        }
    snprintf(s->dir, sizeof s->dir, "%s", cfg.out_dir);
    if (sweep_dir_is_sweep(s->dir) && strcmp(cfg.overwrite, "true") != 0)
        die(EXIT_USAGE,
            "'%s' holds a sweep: resume it with ./train --resume %s, or replace it with "
            "--train.overwrite=true"
            " (or give this sweep another --train.out_dir)",
            s->dir, s->dir);
    char buf[1200];
    if (outdir_run_file(s->dir, buf, sizeof buf) && strcmp(cfg.overwrite, "true") != 0)
        die(EXIT_USAGE,
            "'%s' holds another run's files (%s): give the sweep another --train.out_dir, or"
            " --train.overwrite=true",
            s->dir, buf);
    if (!getcwd(s->cwd, sizeof s->cwd))
        die(EXIT_RUNTIME, "cannot read the current directory: %s", strerror(errno));
    s->base_args = xcalloc((size_t)argc + 1, sizeof(char *), "the sweep's arguments");
    for (int i = 1; i < argc; i++) {
        int skip;
        if (sweep_owned(argc, argv, i, &skip)) {
            i += skip;
            continue;
        }
        s->base_args[s->n_base++] = xstrdup(argv[i], "an argument");
    }
    snprintf(s->command, sizeof s->command, "%s", a->command);
    set_runs(s);
    if (!ensure_dir(s->dir, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    if (!outdir_lock(s->dir, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    if (strcmp(cfg.overwrite, "true") == 0) clear_replaced(s->dir);
    write_state(s);
}

static void start_resume(Sweep *s, const Args *a) {
    char err[1024], dir[PATH_MAX];
    if (a->n_overrides > 0)
        die(EXIT_USAGE,
            "a sweep resumes as it was started: --resume %s takes no overrides (got --%s)",
            a->resume_path, a->overrides[0]);
    if (a->comparison)
        die(EXIT_USAGE, "a sweep resumes as it was started: --resume %s takes no --compare",
            a->resume_path);
    if (a->bench_steps || a->dump_path || a->rewind || a->init_path || a->vocab_text)
        die(EXIT_USAGE, "a sweep resumes as it was started: --resume %s takes no %s",
            a->resume_path,
            a->bench_steps ? "--bench"
            : a->dump_path ? "--dump-state"
            : a->rewind    ? "--rewind (each run resumes from its"
                             " latest checkpoint)"
            : a->init_path ? "--init-from"
                           : "--vocab-from");
    if (!realpath(a->resume_path, dir))
        die(EXIT_RUNTIME, "cannot resolve '%s': %s", a->resume_path, strerror(errno));
    read_state(s, dir);
    if (strlen(dir) >= sizeof s->dir)
        die(EXIT_USAGE, "the sweep's directory '%s' is too long", dir);
    memcpy(s->dir, dir, strlen(dir) + 1);
    // the runs' config and data paths are the sweep's start directory's
    if (chdir(s->cwd) != 0)
        die(EXIT_RUNTIME, "cannot enter '%s', where the sweep started: %s", s->cwd,
            strerror(errno));
    set_runs(s);
    if (!outdir_lock(s->dir, err, sizeof err)) die(EXIT_USAGE, "%s", err);
}

int sweep_main(const Args *a, int argc, char **argv) {
    static Sweep s;
    memset(&s, 0, sizeof s);
    int resuming = a->sweep_spec == NULL;
    if (resuming)
        start_resume(&s, a);
    else
        start_fresh(&s, a, argc, argv);
    int code = run_sweep(&s, resuming);
    for (int k = 0; k < s.n_runs; k++) {
        free(s.runs[k].steps);
        free(s.runs[k].logit);
        free(s.runs[k].config_json);
    }
    for (int i = 0; i < s.n_base; i++) free(s.base_args[i]);
    free(s.base_args);
    return code;
}
