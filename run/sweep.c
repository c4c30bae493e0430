// run/sweep.c: the learning-rate sweep (see run/sweep.h). Each run of the grid is one ./train
// process of its own (this program, started again), so that a run that diverges (the guard ends
// its process) ends only that run: run k trains variant v at lr[i] in out_dir/<variant>_lr<i>/,
// from the config's seed, so every run starts from the same weights and draws the same batches.
// The sweep's state is its directory: sweep.json (the grid and the runs' command line), and each
// run's summary.json (finished), sweep_diverged.txt (diverged) or checkpoint.bin (stopped in it).
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700  // realpath
#include "run/sweep.h"

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
#include "run/outdir.h"

#define SWEEP_VARIANTS 8

// ---------------------------------------------------------------------------------------------
// the sweep's state

typedef struct {
    int variant, point;
    double lr;
    char dir[1300];
    char *config_json;    // the run's resolved config (config_to_json), what its files must hold
    long max_steps;
    // results
    int done, diverged;
    long diverged_step;
    double loss0, train_loss, val_loss, max_logit, min_entropy;
    long *steps;          // the probes' steps and the max attention logit at each
    double *logit;
    int n_probes;
    double seconds;
} SweepRun;

typedef struct {
    char dir[1100];              // out_dir
    char cwd[PATH_MAX];
    SweepGrid grid;
    char compare_key[64];
    SweepVariant v[SWEEP_MAX_VARIANTS];
    int nv;
    double min_lr_ratio;         // each run's min_lr = lr * the config's min_lr / lr
    char **base_args;            // the runs' common command line (config and overrides)
    int n_base;
    SweepRun runs[SWEEP_MAX_RUNS];
    int n_runs;
    char command[2048];
} Sweep;

int sweep_dir_is_sweep(const char *path) {
    struct stat st;
    char p[PATH_MAX + 32];
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    snprintf(p, sizeof p, "%s/sweep.json", path);
    return stat(p, &st) == 0;
}

// A file of the sweep's read back whole: a regular file only (a FIFO would block, /dev/zero never
// ends) of at most max bytes. NULL with *why set when it cannot be: errno's text, what the file
// is instead, or "is larger than ..." (why is a buffer of whylen bytes).
static char *read_bounded(const char *path, size_t max, size_t *len, char *why, size_t whylen) {
    uint64_t size;
    const char *reason;
    FILE *f = fopen_regular(path, &size, &reason);
    if (!f) { snprintf(why, whylen, "%s", reason); return NULL; }
    char *buf = size <= max ? malloc((size_t)size + 2) : NULL;
    size_t n = buf ? fread(buf, 1, (size_t)size + 1, f) : 0;  // one byte more: a file that grew
    fclose(f);
    if (!buf || n > max) {
        free(buf);
        snprintf(why, whylen, "is larger than %zu bytes, more than a sweep writes there", max);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

// Whether dir/name exists (lstat: a dangling symbolic link counts).
static int path_exists(const char *dir, const char *name) {
    char p[1600];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

// The shortest of %.15g .. %.17g that reads back as x (0.3, not 0.29999999999999999).
static void fmt_exact(char *buf, size_t n, const char *prefix, double x) {
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, n, "%s%.*g", prefix, digits, x);
        if (strtod(buf + strlen(prefix), NULL) == x) return;
    }
}

// The arguments of run r's ./train after the sweep's common ones (run_child starts it with them).
static int run_own_args(const Sweep *s, const SweepRun *r, char lr[64], char min_lr[64], char out_dir[1400], char ov[340],
                        const char **argv) {
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
        if (s->base_args[i][0] == '-') ok = config_apply_override(&cfg, s->base_args[i] + 2, err, sizeof err);
    int n = ok ? run_own_args(s, r, lr, min_lr, out_dir, ov, own) : 0;
    for (int i = 0; ok && i < n; i++) ok = config_apply_override(&cfg, own[i] + 2, err, sizeof err);
    if (!ok || !config_finalize(&cfg, err, sizeof err))
        die(EXIT_USAGE, "the sweep's run in '%s' (%s, lr %g): %s", r->dir, s->v[r->variant].name, r->lr, err);
    if (cfg.lr_decay_steps == 0) cfg.lr_decay_steps = cfg.max_steps;  // as ./train fixes it when a run starts
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
            if (w < 0 || (size_t)w >= sizeof dir) die(EXIT_USAGE, "the sweep's directory '%s' is too long", s->dir);
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
    for (int i = 0; i < s->n_base; i++) cJSON_AddItemToArray(args, cJSON_CreateString(s->base_args[i]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    char path[1200], err[1024];
    Out o;
    if (!out_open(&o, s->dir, "sweep.json", path, sizeof path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    out(&o, "%s\n", text);
    free(text);
    if (!out_close(&o, path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
}

static void read_state(Sweep *s, const char *dir) {
    char path[PATH_MAX + 16], why[160], err[1024];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    size_t len = 0;
    char *text = read_bounded(path, SWEEP_STATE_MAX_BYTES, &len, why, sizeof why);
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
// reading a run's files

static double json_num(const cJSON *root, const char *key) {
    const cJSON *x = cJSON_GetObjectItem(root, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

// The column index of `name` in a CSV header line (-1 when absent).
static int csv_col(const char *header, const char *name) {
    int col = 0;
    size_t n = strlen(name);
    for (const char *p = header; *p; col++) {
        const char *e = strpbrk(p, ",\n\r");
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return col;
        if (!e || *e != ',') break;
        p = e + 1;
    }
    return -1;
}

static double csv_field(const char *line, int col) {
    const char *p = line;
    for (int c = 0; c < col && p; c++) { p = strchr(p, ','); if (p) p++; }
    if (!p || *p == ',' || *p == '\n' || *p == 0) return NAN;
    return strtod(p, NULL);
}

// A log of the run's read back: NULL when it was never written; a file by that name that is not
// a regular file is refused (exit 2).
static FILE *open_run_file(const char *path) {
    uint64_t size;
    const char *why;
    struct stat st;
    if (lstat(path, &st) != 0) return NULL;
    FILE *f = fopen_regular(path, &size, &why);
    if (!f) die(EXIT_USAGE, "cannot read the sweep's file '%s': %s", path, why);
    return f;
}

// A log's step field (its first): an integer from 0 to the run's max_steps, else the log is
// damaged (exit 2, naming the file and line).
static long csv_step(const char *line, const char *path, long lineno, long max_steps) {
    char *end;
    errno = 0;
    long step = strtol(line, &end, 10);
    if (end == line || *end != ',' || errno == ERANGE || step < 0 || step > max_steps)
        die(EXIT_USAGE, "'%s' line %ld: the step '%.20s' is not an integer from 0 to %ld, as the run writes it: a damaged"
            " log (remove the run's directory to train the run again)", path, lineno, line, max_steps);
    return step;
}

// The max attention logit of attention.csv: its column score_absmax, the largest |S| of the
// scaled scores before the softmax over the probe rows, per head (docs/scaling.md's measure; the
// signed max_logit beside it is smaller whenever the most negative score is the larger in size).
// Lines of any length are read whole (getline).
static void read_run_logs(SweepRun *r) {
    char path[1400];
    char *line = NULL;
    size_t cap_line = 0;
    snprintf(path, sizeof path, "%s/metrics.csv", r->dir);
    FILE *f = open_run_file(path);
    if (f) {
        if (getline(&line, &cap_line, f) > 0) {
            int lc = csv_col(line, "loss");
            if (getline(&line, &cap_line, f) > 0) {  // step 1: the loss before any update
                csv_step(line, path, 2, r->max_steps);
                r->loss0 = csv_field(line, lc);
            }
        }
        fclose(f);
    }
    free(r->steps);
    free(r->logit);
    r->steps = NULL;
    r->logit = NULL;
    r->n_probes = 0;
    r->max_logit = NAN;
    r->min_entropy = NAN;
    snprintf(path, sizeof path, "%s/attention.csv", r->dir);
    f = open_run_file(path);
    if (!f || getline(&line, &cap_line, f) <= 0) {
        if (f) fclose(f);
        free(line);
        return;
    }
    int cl = csv_col(line, "score_absmax");
    int ce = csv_col(line, "entropy_norm");
    int cap = 0;
    for (long lineno = 2; getline(&line, &cap_line, f) > 0; lineno++) {
        long step = csv_step(line, path, lineno, r->max_steps);
        double lg = csv_field(line, cl), en = csv_field(line, ce);
        if (r->n_probes == 0 || r->steps[r->n_probes - 1] != step) {
            if (r->n_probes == cap) {
                cap = cap ? 2 * cap : 64;
                long *ns = realloc(r->steps, (size_t)cap * sizeof *ns);
                if (ns) r->steps = ns;
                double *nl = realloc(r->logit, (size_t)cap * sizeof *nl);
                if (nl) r->logit = nl;
                if (!ns || !nl) die(EXIT_RUNTIME, "out of memory reading '%s'", path);
            }
            r->steps[r->n_probes] = step;
            r->logit[r->n_probes] = -INFINITY;
            r->n_probes++;
        }
        // the max over the layers and heads at this probe, and over the whole run
        if (lg > r->logit[r->n_probes - 1]) r->logit[r->n_probes - 1] = lg;
        if (isfinite(lg) && !(lg <= r->max_logit)) r->max_logit = lg;
        if (isfinite(en) && !(en >= r->min_entropy)) r->min_entropy = en;
    }
    free(line);
    fclose(f);
}

// The first key of the run's config (want, config_to_json's object) that the file's config
// (got) does not hold as it is, with both values, into what; 1 when every key matches. Where
// the run writes is left out (train.out_dir: a sweep's directory may have moved since; and
// train.overwrite, which a resumed run does not repeat).
static int config_matches(const cJSON *want, const cJSON *got, char *what, size_t n) {
    const cJSON *sec, *item;
    cJSON_ArrayForEach(sec, want) {
        const cJSON *gsec = cJSON_GetObjectItemCaseSensitive(got, sec->string);
        int object = cJSON_IsObject(sec);
        const cJSON *first = object ? sec->child : sec;
        for (item = first; item; item = object ? item->next : NULL) {
            if (object && strcmp(sec->string, "train") == 0 &&
                (strcmp(item->string, "out_dir") == 0 || strcmp(item->string, "overwrite") == 0))
                continue;
            const cJSON *g = object ? cJSON_GetObjectItemCaseSensitive(gsec, item->string) : gsec;
            if (g && cJSON_Compare(item, g, 1)) continue;
            char *ws = cJSON_PrintUnformatted(item), *gs = g ? cJSON_PrintUnformatted(g) : NULL;
            snprintf(what, n, "%s%s%s is %.60s, expected %.60s", sec->string, object ? "." : "", object ? item->string : "",
                     gs ? gs : "missing", ws ? ws : "?");
            free(ws);
            free(gs);
            return 0;
        }
    }
    return 1;
}

// Refuse a file in run r's directory that is another run's: "'PATH' is not run K/N's (...)".
static _Noreturn void foreign_run(const Sweep *s, int k, const char *path, const char *what) {
    const SweepRun *r = &s->runs[k];
    die(EXIT_USAGE, "'%s' is not run %d/%d's (%s, lr %g): %s; it is another sweep's or run's (remove '%s' to train this"
        " run again)", path, k + 1, s->n_runs, s->v[r->variant].name, r->lr, what, r->dir);
}

// A run's config text (a summary's "config", a checkpoint's record) against the run's.
static void check_run_config(const Sweep *s, int k, const char *path, const cJSON *got) {
    char what[256];
    cJSON *want = cJSON_Parse(s->runs[k].config_json);
    if (!want) die(EXIT_RUNTIME, "out of memory checking '%s'", path);
    int ok = cJSON_IsObject(got) && config_matches(want, got, what, sizeof what);
    cJSON_Delete(want);
    if (!ok) foreign_run(s, k, path, cJSON_IsObject(got) ? what : "it holds no config");
}

// A stopped run's checkpoint, before the run resumes from it: the run's own config.
static void check_run_checkpoint(const Sweep *s, int k, const char *path) {
    Checkpoint ck;
    char err[1200];
    if (!checkpoint_open(&ck, path, err, sizeof err)) die(EXIT_USAGE, "%s", err);
    cJSON *got = cJSON_Parse(ck.config_json);
    checkpoint_close(&ck);
    check_run_config(s, k, path, got);
    cJSON_Delete(got);
}

static void read_run(const Sweep *s, int k) {
    SweepRun *r = (SweepRun *)&s->runs[k];
    char path[1400], why[160];
    r->done = r->diverged = 0;
    read_run_logs(r);
    snprintf(path, sizeof path, "%s/sweep_diverged.txt", r->dir);
    if (path_exists(r->dir, "sweep_diverged.txt")) {
        char *text = read_bounded(path, 64, NULL, why, sizeof why);
        if (!text) die(EXIT_USAGE, "cannot read the sweep's file '%s': %s", path, why);
        long long step = -1;
        text[strcspn(text, "\n")] = 0;
        int ok = parse_integer_text(text, &step) && step >= 0 && step <= r->max_steps;
        free(text);
        if (!ok) die(EXIT_USAGE, "'%s' is not the step at which run %d/%d diverged (an integer from 0 to %ld, as the sweep"
                     " writes it)", path, k + 1, s->n_runs, r->max_steps);
        r->done = r->diverged = 1;
        r->diverged_step = (long)step;
        r->train_loss = r->val_loss = NAN;
        return;
    }
    snprintf(path, sizeof path, "%s/summary.json", r->dir);
    if (!path_exists(r->dir, "summary.json")) return;
    size_t len = 0;
    char *text = read_bounded(path, SWEEP_STATE_MAX_BYTES, &len, why, sizeof why);
    if (!text) die(EXIT_USAGE, "cannot read the sweep's file '%s': %s", path, why);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(root)) die(EXIT_USAGE, "'%s' is not a run's summary (expected the JSON object ./train writes)", path);
    // the run it stands for: its config, its steps, its losses
    check_run_config(s, k, path, cJSON_GetObjectItemCaseSensitive(root, "config"));
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(root, "steps");
    r->train_loss = json_num(root, "train_loss");
    r->val_loss = json_num(root, "val_loss");
    r->seconds = json_num(root, "wall_s");
    char what[160];
    if (!cJSON_IsNumber(steps) || steps->valuedouble != floor(steps->valuedouble) || steps->valuedouble < 0 ||
        steps->valuedouble > r->max_steps || (isfinite(r->val_loss) && steps->valuedouble != r->max_steps)) {
        snprintf(what, sizeof what, "its \"steps\" is %.20g, expected %ld", cJSON_IsNumber(steps) ? steps->valuedouble : NAN,
                 r->max_steps);
        cJSON_Delete(root);
        foreign_run(s, k, path, what);
    }
    r->done = 1;
    if (!isfinite(r->val_loss)) { r->diverged = 1; r->diverged_step = (long)steps->valuedouble; }
    cJSON_Delete(root);
}

// ---------------------------------------------------------------------------------------------
// the outputs: sweep.csv, sweep.svg, report.md

static double variant_loss0(const Sweep *s, int v) {
    for (int k = 0; k < s->n_runs; k++)
        if (s->runs[k].variant == v && isfinite(s->runs[k].loss0)) return s->runs[k].loss0;
    return NAN;
}

// The variant's final validation losses over the grid (NaN for a run not finished) and whether
// every run of it finished.
static int variant_losses(const Sweep *s, int v, double *loss) {
    int all = 1;
    for (int k = 0; k < s->n_runs; k++) {
        const SweepRun *r = &s->runs[k];
        if (r->variant != v) continue;
        loss[r->point] = r->done && !r->diverged ? r->val_loss : NAN;
        all &= r->done;
    }
    return all;
}

static void fmt_num(char *buf, size_t n, double x, const char *fmt) {
    if (isfinite(x)) snprintf(buf, n, fmt, x);
    else buf[0] = 0;
}

static int write_csv(const Sweep *s, char *err, size_t errlen) {
    char path[1200];
    Out o;
    if (!out_open(&o, s->dir, "sweep.csv", path, sizeof path, err, errlen)) return 0;
    out(&o, "variant,lr,train_loss,val_loss,diverged,diverged_step,max_attn_logit,min_entropy_norm,loss0\n");
    for (int k = 0; k < s->n_runs; k++) {
        const SweepRun *r = &s->runs[k];
        if (!r->done) continue;
        char tl[32], vl[32], ml[32], me[32], l0[32], ds[32] = "";
        fmt_num(tl, sizeof tl, r->train_loss, "%.4f");
        fmt_num(vl, sizeof vl, r->val_loss, "%.4f");
        fmt_num(ml, sizeof ml, r->max_logit, "%.3f");
        fmt_num(me, sizeof me, r->min_entropy, "%.4f");
        fmt_num(l0, sizeof l0, r->loss0, "%.4f");
        if (r->diverged) snprintf(ds, sizeof ds, "%ld", r->diverged_step);
        out(&o, "%s,%.6g,%s,%s,%s,%s,%s,%s,%s\n", s->v[r->variant].name, r->lr, tl, vl, r->diverged ? "yes" : "no", ds,
            ml, me, l0);
    }
    return out_close(&o, path, err, errlen);
}

static const char *const SWEEP_COLOR[SWEEP_VARIANTS] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                        "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
static const char *const SWEEP_DASH[SWEEP_VARIANTS] = {NULL, "6,3", "2,2", "8,2,2,2", NULL, "6,3", "2,2", "8,2,2,2"};

// A panel's axes: x from x0 to x1 (data), y from y0 to y1, inside the box (px0, py0)-(px1, py1).
typedef struct { double x0, x1, y0, y1, px0, px1, py0, py1; int logx, logy; } Axes;

static double ax_x(const Axes *a, double x) {
    double t = a->logx ? (log10(x) - log10(a->x0)) / (log10(a->x1) - log10(a->x0)) : (x - a->x0) / (a->x1 - a->x0);
    return a->px0 + t * (a->px1 - a->px0);
}
static double ax_y(const Axes *a, double y) {
    double t = a->logy ? (log10(y) - log10(a->y0)) / (log10(a->y1) - log10(a->y0)) : (y - a->y0) / (a->y1 - a->y0);
    return a->py1 - t * (a->py1 - a->py0);
}

static void draw_frame(Out *o, const Axes *a, const char *title, const char *xlabel, const char *ylabel) {
    out(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", a->px0, a->py0,
        a->px1 - a->px0, a->py1 - a->py0);
    out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", a->px0, a->py0 - 10, title);
    out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n", (a->px0 + a->px1) / 2,
        a->py1 + 34, xlabel);
    out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
        a->px0 - 52, (a->py0 + a->py1) / 2, a->px0 - 52, (a->py0 + a->py1) / 2, ylabel);
    if (a->logy) {  // a tick at every power of ten inside the axis
        for (int e = (int)ceil(log10(a->y0)); e <= (int)floor(log10(a->y1)); e++) {
            double y = pow(10, e);
            out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n", a->px0 - 6,
                ax_y(a, y) + 4, y);
            out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", a->px0, ax_y(a, y), a->px1,
                ax_y(a, y));
        }
        return;
    }
    for (int k = 0; k <= 4; k++) {  // five y ticks
        double y = a->y0 + (a->y1 - a->y0) * k / 4;
        out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.3g</text>\n", a->px0 - 6, ax_y(a, y) + 4, y);
        out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", a->px0, ax_y(a, y), a->px1, ax_y(a, y));
    }
}

static int write_svg(const Sweep *s, char *err, size_t errlen) {
    char path[1200];
    Out o;
    if (!out_open(&o, s->dir, "sweep.svg", path, sizeof path, err, errlen)) return 0;
    const double W = 900, H = 740;
    out(&o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\""
        " font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
    out(&o, "<text x=\"82\" y=\"28\" font-size=\"17\" font-weight=\"bold\">Learning-rate sweep: %d learning rates from"
        " %.3g to %.3g%s%s</text>\n", s->grid.n, s->grid.lo, s->grid.hi, s->compare_key[0] ? ", variants of " : "",
        s->compare_key);
    // (a) final validation loss against lr, diverged runs at the initial loss (crosses)
    Axes a = {s->grid.lo, s->grid.hi, INFINITY, -INFINITY, 82, 872, 80, 330, 1, 0};
    for (int k = 0; k < s->n_runs; k++) {
        const SweepRun *r = &s->runs[k];
        if (!r->done) continue;
        double l = r->diverged ? r->loss0 : r->val_loss;
        double vals[2] = {l, r->loss0};
        for (int j = 0; j < 2; j++)
            if (isfinite(vals[j])) { if (vals[j] < a.y0) a.y0 = vals[j]; if (vals[j] > a.y1) a.y1 = vals[j]; }
    }
    if (!(a.y0 < a.y1)) { a.y0 = isfinite(a.y0) ? a.y0 - 1 : 0; a.y1 = a.y0 + 2; }
    double pad = 0.05 * (a.y1 - a.y0);
    a.y0 -= pad;
    a.y1 += pad;
    draw_frame(&o, &a, "(a) Final validation loss (diverged runs at the initial loss, crossed)", "learning rate (log scale)",
               "val loss");
    for (int i = 0; i < s->grid.n; i++)
        out(&o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%.2g</text>\n",
            ax_x(&a, sweep_lr(&s->grid, i)), a.py1 + 16, sweep_lr(&s->grid, i));
    double l0 = variant_loss0(s, 0);
    if (isfinite(l0))
        out(&o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"1,3\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#666\">loss at initialisation %.3f</text>\n", a.px0,
            ax_y(&a, l0), a.px1, ax_y(&a, l0), a.px0 + 6, ax_y(&a, l0) - 4, l0);
    for (int v = 0; v < s->nv; v++) {
        const char *dash = SWEEP_DASH[v % SWEEP_VARIANTS];
        out(&o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"", SWEEP_COLOR[v % SWEEP_VARIANTS],
            dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
        for (int k = 0; k < s->n_runs; k++) {
            const SweepRun *r = &s->runs[k];
            double l = r->diverged ? r->loss0 : r->val_loss;
            if (r->variant == v && r->done && isfinite(l)) out(&o, "%.1f,%.1f ", ax_x(&a, r->lr), ax_y(&a, l));
        }
        out(&o, "\"/>\n");
        for (int k = 0; k < s->n_runs; k++) {
            const SweepRun *r = &s->runs[k];
            double l = r->diverged ? r->loss0 : r->val_loss;
            if (r->variant != v || !r->done || !isfinite(l)) continue;
            double x = ax_x(&a, r->lr), y = ax_y(&a, l);
            if (r->diverged)
                out(&o, "<path d=\"M%.1f %.1fl8 8M%.1f %.1fl-8 8\" stroke=\"%s\" stroke-width=\"2\"/>\n", x - 4, y - 4,
                    x + 4, y - 4, SWEEP_COLOR[v % SWEEP_VARIANTS]);
            else out(&o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x, y, SWEEP_COLOR[v % SWEEP_VARIANTS]);
        }
        out(&o, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"%s%s%s/>"
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">%s</text>\n", 660.0, 96.0 + 16 * v, 690.0, 96.0 + 16 * v,
            SWEEP_COLOR[v % SWEEP_VARIANTS], dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "",
            696.0, 100.0 + 16 * v, s->v[v].name);
    }
    // (b) the max attention logit over training, one line per run: the colour of its variant,
    // lighter for a lower learning rate
    long last = 1;
    // a log axis: the logits of a high learning rate grow by orders of magnitude
    Axes b = {0, 1, INFINITY, -INFINITY, 82, 872, 420, 670, 0, 1};
    for (int k = 0; k < s->n_runs; k++)
        for (int p = 0; p < s->runs[k].n_probes; p++) {
            double x = s->runs[k].logit[p];
            if (s->runs[k].steps[p] > last) last = s->runs[k].steps[p];
            if (isfinite(x) && x > 0 && x > b.y1) b.y1 = x;
            if (isfinite(x) && x > 0 && x < b.y0) b.y0 = x;
        }
    b.x1 = (double)last;
    if (!(b.y0 < b.y1)) { b.y0 = 0.1; b.y1 = 10; }
    b.y0 /= 1.2;
    b.y1 *= 1.2;
    draw_frame(&o, &b, "(b) Max attention logit (largest |scaled score| before the softmax) over training, log scale",
               "step", "max attention logit");
    for (int k = 0; k <= 4; k++)
        out(&o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%ld</text>\n",
            ax_x(&b, (double)last * k / 4), b.py1 + 16, last * k / 4);
    for (int k = 0; k < s->n_runs; k++) {
        const SweepRun *r = &s->runs[k];
        if (r->n_probes == 0) continue;
        const char *dash = SWEEP_DASH[r->variant % SWEEP_VARIANTS];
        double opacity = 0.25 + 0.75 * (s->grid.n > 1 ? (double)r->point / (s->grid.n - 1) : 1);
        out(&o, "<polyline fill=\"none\" stroke=\"%s\" stroke-opacity=\"%.2f\" stroke-width=\"1.6\"%s%s%s points=\"",
            SWEEP_COLOR[r->variant % SWEEP_VARIANTS], opacity, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
            dash ? "\"" : "");
        for (int p = 0; p < r->n_probes; p++)
            if (isfinite(r->logit[p]) && r->logit[p] > 0)
                out(&o, "%.1f,%.1f ", ax_x(&b, (double)r->steps[p]), ax_y(&b, r->logit[p]));
        out(&o, "\"><title>%s lr %.3g</title></polyline>\n", s->v[r->variant].name, r->lr);
    }
    out(&o, "<text x=\"82\" y=\"728\" font-size=\"11\">(b): one line per run, darker for a higher learning rate;"
        " a diverged run's line ends where it stopped.</text>\n</svg>\n");
    return out_close(&o, path, err, errlen);
}

static int write_report(const Sweep *s, char *err, size_t errlen) {
    char path[1200];
    Out o;
    if (!out_open(&o, s->dir, "report.md", path, sizeof path, err, errlen)) return 0;
    out(&o, "# Learning-rate sweep\n\n`%s`\n\n", s->command);
    out(&o, "%d learning rates from %g to %g (log-spaced)%s%s; every run starts from the same weights and trains on the same"
        " batches. Final loss: the validation loss over the whole validation split; a diverged run counts at the"
        " loss at initialisation (loss_0, the loss of the first batch before any update).\n\n", s->grid.n, s->grid.lo,
        s->grid.hi, s->compare_key[0] ? ", for each value of " : "", s->compare_key);
    out(&o, "| variant | lr | train loss | val loss | diverged (step) | max attention logit | min normalised entropy |\n"
        "|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < s->n_runs; k++) {
        const SweepRun *r = &s->runs[k];
        if (!r->done) continue;
        char tl[32], vl[32], ml[32], me[32];
        fmt_num(tl, sizeof tl, r->train_loss, "%.4f");
        fmt_num(vl, sizeof vl, r->val_loss, "%.4f");
        fmt_num(ml, sizeof ml, r->max_logit, "%.2f");
        fmt_num(me, sizeof me, r->min_entropy, "%.3f");
        if (r->diverged) out(&o, "| %s | %.3g | %s | %s | yes (%ld) | %s | %s |\n", s->v[r->variant].name, r->lr, tl, vl,
                             r->diverged_step, ml, me);
        else out(&o, "| %s | %.3g | %s | %s | no | %s | %s |\n", s->v[r->variant].name, r->lr, tl, vl, ml, me);
    }
    out(&o, "\n## Learning-rate sensitivity\n\nAs Wortsman et al. 2023 (arXiv 2309.14322) define it: the mean over the"
        " grid of min(loss(lr), loss_0) minus the best loss of the grid (lower: the loss depends less on the learning"
        " rate).\n\n");
    for (int v = 0; v < s->nv; v++) {
        double loss[SWEEP_MAX_RUNS];
        int all = variant_losses(s, v, loss);
        double l0 = variant_loss0(s, v);
        if (!all || !isfinite(l0)) {
            out(&o, "- %s: not measured (the sweep has not finished its runs).\n", s->v[v].name);
            continue;
        }
        int first_div = -1;
        for (int k = 0; k < s->n_runs && first_div < 0; k++)
            if (s->runs[k].variant == v && s->runs[k].diverged) first_div = k;
        char div[96] = "no run diverged";
        if (first_div >= 0) snprintf(div, sizeof div, "it first diverges at lr %.3g", s->runs[first_div].lr);
        out(&o, "- %s: learning-rate sensitivity %.4f (loss_0 %.4f; %s).\n", s->v[v].name,
            sweep_sensitivity(loss, s->grid.n, l0), l0, div);
    }
    out(&o, "\nFiles: sweep.csv (one row per finished run), sweep.svg ((a) final loss against the learning rate,"
        " (b) the max attention logit over training), and each run's directory <variant>_lr<i>/ with its run.log.\n");
    return out_close(&o, path, err, errlen);
}

static void write_outputs(const Sweep *s) {
    char err[1024];
    if (!write_csv(s, err, sizeof err) || !write_svg(s, err, sizeof err) || !write_report(s, err, sizeof err))
        die(EXIT_RUNTIME, "%s", err);
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
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ')) len--;
    size_t start = len;
    while (start > 0 && text[start - 1] != '\n') start--;
    snprintf(buf, n, "%.*s", (int)(len - start), text + start);
    free(text);
}

// The run's log, opened by the sweep before the run starts: a regular file, never through a
// symbolic link; anything else there is refused (exit 2) and left as it is.
static int open_run_log(const char *log_path, int resume) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (resume ? O_APPEND : 0), 0666);
    struct stat st;
    if (fd < 0 && (errno == ELOOP || errno == EISDIR || errno == ENXIO)) {
        const char *what = errno == ELOOP ? "a symbolic link" : errno == EISDIR ? "a directory" : "a FIFO without a reader";
        die(EXIT_USAGE, "cannot write the run's log '%s': it is %s, not a regular file (remove it; the sweep writes the"
            " run's output there)", log_path, what);
    }
    if (fd < 0) die(EXIT_RUNTIME, "cannot write the run's log '%s': %s", log_path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        die(EXIT_USAGE, "cannot write the run's log '%s': it is not a regular file (remove it; the sweep writes the run's"
            " output there)", log_path);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (!resume && ftruncate(fd, 0) != 0) die(EXIT_RUNTIME, "cannot write the run's log '%s': %s", log_path, strerror(errno));
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
        if (only && atoi(only) != k + 1) { unsetenv("TGPT_TEST_SIGNAL"); unsetenv("TGPT_TEST_NONFINITE"); }
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
        if (errno != EINTR) die(EXIT_RUNTIME, "waiting for the run in '%s': %s", r->dir, strerror(errno));
    g_child = 0;
    free(argv);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    if (WEXITSTATUS(status) == 127) die(EXIT_RUNTIME, "cannot run '%s' for the run in '%s' (see %s)", exe, r->dir, log_path);
    return WEXITSTATUS(status);
}

static void fmt_time(char *buf, size_t n, double seconds) {
    if (!(seconds >= 0)) { snprintf(buf, n, "?"); return; }
    long t = (long)(seconds + 0.5);
    if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

static int run_sweep(Sweep *s, int resuming) {
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) die(EXIT_RUNTIME, "cannot find this program's own path (/proc/self/exe) to start the sweep's runs");
    exe[len] = 0;
    install_signals();
    printf("sweep: %d runs (%d learning rates from %g to %g%s%s) in %s\n", s->n_runs, s->grid.n, s->grid.lo, s->grid.hi,
           s->nv > 1 ? " x " : "", s->nv > 1 ? s->compare_key : "", s->dir);
    double spent = 0;
    int timed = 0;
    for (int k = 0; k < s->n_runs; k++) {
        SweepRun *r = &s->runs[k];
        if (resuming) read_run(s, k);
        if (r->done) {
            printf("run %d/%d | %s lr %.3g | kept (finished before)\n", k + 1, s->n_runs, s->v[r->variant].name, r->lr);
            continue;
        }
        int resume = resuming && path_exists(r->dir, "checkpoint.bin") && !path_exists(r->dir, "summary.json");
        if (resume) {
            char ckpt[1400];
            snprintf(ckpt, sizeof ckpt, "%s/checkpoint.bin", r->dir);
            check_run_checkpoint(s, k, ckpt);
        }
        double t0 = now_seconds();
        int code = run_child(s, k, resume, exe);
        double dt = now_seconds() - t0;
        char log_path[1400];
        snprintf(log_path, sizeof log_path, "%s/run.log", r->dir);
        if (code > 128 || g_sweep_signal) {
            write_outputs(s);
            fprintf(stderr, "\nsweep stopped in run %d of %d (%s, lr %.3g): the finished runs are kept. Resume with:\n"
                    "  ./train --resume %s\n", k + 1, s->n_runs, s->v[r->variant].name, r->lr, s->dir);
            return code > 128 ? code : 128 + g_sweep_signal;
        }
        if (code != 0) {
            long step = diverged_at(log_path);
            char last[400];
            log_last_line(log_path, last, sizeof last);
            if (step < 0) die(EXIT_RUNTIME, "run %d/%d (%s, lr %g) failed with exit code %d: %s%s(see %s)", k + 1, s->n_runs,
                              s->v[r->variant].name, r->lr, code, last[0] ? last : "", last[0] ? " " : "", log_path);
            char path[1400], err[1600];
            Out o;
            if (!out_open(&o, r->dir, "sweep_diverged.txt", path, sizeof path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
            out(&o, "%ld\n", step);
            if (!out_close(&o, path, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
        }
        read_run(s, k);
        if (!r->done) die(EXIT_RUNTIME, "run %d/%d (%s, lr %g) left no summary.json: see %s", k + 1, s->n_runs,
                          s->v[r->variant].name, r->lr, log_path);
        spent += dt;
        timed++;
        char eta[32], el[32];
        fmt_time(eta, sizeof eta, spent / timed * (s->n_runs - k - 1));
        fmt_time(el, sizeof el, dt);
        if (r->diverged)
            printf("run %d/%d | %s lr %.3g | diverged at step %ld | max logit %.2f | %s | eta %s\n", k + 1, s->n_runs,
                   s->v[r->variant].name, r->lr, r->diverged_step, r->max_logit, el, eta);
        else
            printf("run %d/%d | %s lr %.3g | val loss %.4f | max logit %.2f | min H %.3f | %s | eta %s\n", k + 1,
                   s->n_runs, s->v[r->variant].name, r->lr, r->val_loss, r->max_logit, r->min_entropy, el, eta);
        fflush(stdout);
        write_outputs(s);
    }
    write_outputs(s);
    for (int v = 0; v < s->nv; v++) {
        double loss[SWEEP_MAX_RUNS];
        variant_losses(s, v, loss);
        printf("sensitivity %s: %.4f\n", s->v[v].name, sweep_sensitivity(loss, s->grid.n, variant_loss0(s, v)));
    }
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
        if (!config_apply_override(&cfg, a->overrides[i], err, sizeof err)) die(EXIT_USAGE, "%s", err);
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
            if ((s->v[v].override[0] && !config_apply_override(&rc, s->v[v].override, err, sizeof err)) ||
                !config_apply_override(&rc, lr, err, sizeof err) || !config_apply_override(&rc, mlr, err, sizeof err) ||
                !config_finalize(&rc, err, sizeof err))
                die(EXIT_USAGE, "--sweep %s: the run of %s at lr %g: %s", a->sweep_spec, s->v[v].name, x, err);
        }
    snprintf(s->dir, sizeof s->dir, "%s", cfg.out_dir);
    if (sweep_dir_is_sweep(s->dir) && strcmp(cfg.overwrite, "true") != 0)
        die(EXIT_USAGE, "'%s' holds a sweep: resume it with ./train --resume %s, or replace it with --train.overwrite=true"
            " (or give this sweep another --train.out_dir)", s->dir, s->dir);
    char buf[1200];
    if (outdir_run_file(s->dir, buf, sizeof buf) && strcmp(cfg.overwrite, "true") != 0)
        die(EXIT_USAGE, "'%s' holds another run's files (%s): give the sweep another --train.out_dir, or"
            " --train.overwrite=true", s->dir, buf);
    if (!getcwd(s->cwd, sizeof s->cwd)) die(EXIT_RUNTIME, "cannot read the current directory: %s", strerror(errno));
    s->base_args = xcalloc((size_t)argc + 1, sizeof(char *), "the sweep's arguments");
    for (int i = 1; i < argc; i++) {
        int skip;
        if (sweep_owned(argc, argv, i, &skip)) { i += skip; continue; }
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
        die(EXIT_USAGE, "a sweep resumes as it was started: --resume %s takes no overrides (got --%s)", a->resume_path,
            a->overrides[0]);
    if (a->comparison) die(EXIT_USAGE, "a sweep resumes as it was started: --resume %s takes no --compare", a->resume_path);
    if (a->bench_steps || a->dump_path || a->rewind || a->init_path || a->vocab_text)
        die(EXIT_USAGE, "a sweep resumes as it was started: --resume %s takes no %s", a->resume_path,
            a->bench_steps ? "--bench" : a->dump_path ? "--dump-state" : a->rewind ? "--rewind (each run resumes from its"
            " latest checkpoint)" : a->init_path ? "--init-from" : "--vocab-from");
    if (!realpath(a->resume_path, dir)) die(EXIT_RUNTIME, "cannot resolve '%s': %s", a->resume_path, strerror(errno));
    read_state(s, dir);
    if (strlen(dir) >= sizeof s->dir) die(EXIT_USAGE, "the sweep's directory '%s' is too long", dir);
    memcpy(s->dir, dir, strlen(dir) + 1);
    // the runs' config and data paths are the sweep's start directory's
    if (chdir(s->cwd) != 0) die(EXIT_RUNTIME, "cannot enter '%s', where the sweep started: %s", s->cwd, strerror(errno));
    set_runs(s);
    if (!outdir_lock(s->dir, err, sizeof err)) die(EXIT_USAGE, "%s", err);
}

int sweep_main(const Args *a, int argc, char **argv) {
    static Sweep s;
    memset(&s, 0, sizeof s);
    int resuming = a->sweep_spec == NULL;
    if (resuming) start_resume(&s, a);
    else start_fresh(&s, a, argc, argv);
    int code = run_sweep(&s, resuming);
    for (int k = 0; k < s.n_runs; k++) { free(s.runs[k].steps); free(s.runs[k].logit); free(s.runs[k].config_json); }
    for (int i = 0; i < s.n_base; i++) free(s.base_args[i]);
    free(s.base_args);
    return code;
}
