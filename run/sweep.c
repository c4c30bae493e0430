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
#include <unistd.h>
#include <fcntl.h>

#include "base/common.h"
#include "base/config.h"
#include "base/signals.h"  // signals_install
#include "report/writer.h"
#include "run/args.h"
#include "run/outdir.h"

#define SWEEP_VARIANTS 8

// ---------------------------------------------------------------------------------------------
// the sweep's state

typedef struct {
    char name[64];       // the variant's name ("sqrt"; "base" without a comparison)
    char override[320];  // its override ("model.attn_scale=sqrt"; "" without a comparison)
} SweepVariant;

typedef struct {
    int variant, point;
    double lr;
    char dir[1300];
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
    SweepVariant v[SWEEP_VARIANTS];
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

static int file_exists(const char *dir, const char *name) {
    char p[1600];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap, "a file");
    for (;;) {
        if (n + 1 >= cap) { cap *= 2; char *nb = realloc(buf, cap); if (!nb) { free(buf); fclose(f); return NULL; } buf = nb; }
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        if (k == 0) break;
        n += k;
    }
    fclose(f);
    buf[n] = 0;
    return buf;
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
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    char *text = read_text(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *cwd = cJSON_GetObjectItem(root, "cwd"), *lo = cJSON_GetObjectItem(root, "lo"),
                *hi = cJSON_GetObjectItem(root, "hi"), *n = cJSON_GetObjectItem(root, "n"),
                *ratio = cJSON_GetObjectItem(root, "min_lr_ratio"), *vs = cJSON_GetObjectItem(root, "variants"),
                *args = cJSON_GetObjectItem(root, "args"), *ck = cJSON_GetObjectItem(root, "compare_key"),
                *cmd = cJSON_GetObjectItem(root, "command");
    if (!cJSON_IsString(cwd) || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) || !cJSON_IsNumber(n) || !cJSON_IsNumber(ratio)
        || !cJSON_IsArray(vs) || !cJSON_IsArray(args) || !cJSON_IsString(ck) || !cJSON_IsString(cmd))
        die(EXIT_RUNTIME, "'%s' is not a sweep's state (expected the sweep.json ./train --sweep writes)", path);
    snprintf(s->cwd, sizeof s->cwd, "%s", cwd->valuestring);
    snprintf(s->grid.key, sizeof s->grid.key, "train.lr");
    s->grid.lo = lo->valuedouble;
    s->grid.hi = hi->valuedouble;
    s->grid.n = n->valueint;
    s->min_lr_ratio = ratio->valuedouble;
    snprintf(s->compare_key, sizeof s->compare_key, "%s", ck->valuestring);
    snprintf(s->command, sizeof s->command, "%s", cmd->valuestring);
    s->nv = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, vs) {
        const cJSON *nm = cJSON_GetObjectItem(it, "name"), *ov = cJSON_GetObjectItem(it, "override");
        if (s->nv == SWEEP_VARIANTS || !cJSON_IsString(nm) || !cJSON_IsString(ov))
            die(EXIT_RUNTIME, "'%s': a variant is not a name and an override", path);
        snprintf(s->v[s->nv].name, sizeof s->v[0].name, "%s", nm->valuestring);
        snprintf(s->v[s->nv].override, sizeof s->v[0].override, "%s", ov->valuestring);
        s->nv++;
    }
    if (s->grid.n < 2 || s->nv < 1 || s->grid.n * s->nv > SWEEP_MAX_RUNS || !(s->grid.lo > 0 && s->grid.lo < s->grid.hi))
        die(EXIT_RUNTIME, "'%s': the grid (%d points, %d variants) is not one ./train --sweep runs", path, s->grid.n, s->nv);
    s->n_base = cJSON_GetArraySize(args);
    s->base_args = xcalloc((size_t)s->n_base + 1, sizeof(char *), "the sweep's arguments");
    int k = 0;
    cJSON_ArrayForEach(it, args) {
        if (!cJSON_IsString(it)) die(EXIT_RUNTIME, "'%s': an argument is not a string", path);
        s->base_args[k++] = xstrdup(it->valuestring, "an argument");
    }
    cJSON_Delete(root);
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

// The max attention logit of attention.csv: its column score_absmax, the largest |S| of the
// scaled scores before the softmax over the probe rows, per head (docs/scaling.md's measure; the
// signed max_logit beside it is smaller whenever the most negative score is the larger in size).
static void read_run_logs(SweepRun *r) {
    char path[1400], line[4096];
    snprintf(path, sizeof path, "%s/metrics.csv", r->dir);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(line, sizeof line, f)) {
            int lc = csv_col(line, "loss");
            if (fgets(line, sizeof line, f)) r->loss0 = csv_field(line, lc);  // step 1: the loss before any update
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
    f = fopen(path, "r");
    if (!f) return;
    if (!fgets(line, sizeof line, f)) { fclose(f); return; }
    int cl = csv_col(line, "score_absmax");
    int ce = csv_col(line, "entropy_norm");
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        long step = strtol(line, NULL, 10);
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
    fclose(f);
}

static void read_run(SweepRun *r) {
    char path[1400];
    r->done = r->diverged = 0;
    read_run_logs(r);
    snprintf(path, sizeof path, "%s/sweep_diverged.txt", r->dir);
    char *text = read_text(path);
    if (text) {
        r->done = r->diverged = 1;
        r->diverged_step = strtol(text, NULL, 10);
        r->train_loss = r->val_loss = NAN;
        free(text);
        return;
    }
    snprintf(path, sizeof path, "%s/summary.json", r->dir);
    text = read_text(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!root) return;
    r->done = 1;
    r->train_loss = json_num(root, "train_loss");
    r->val_loss = json_num(root, "val_loss");
    r->seconds = json_num(root, "wall_s");
    if (!isfinite(r->val_loss)) { r->diverged = 1; r->diverged_step = (long)json_num(root, "steps"); }
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

// The step at which the run's log says the divergence guard stopped it, or -1.
static long diverged_at(const char *log_path) {
    char *text = read_text(log_path);
    if (!text) return -1;
    const char *p = strstr(text, "stopping at step ");
    long step = p ? strtol(p + 17, NULL, 10) : -1;
    if (step < 0 && strstr(text, "was skipped (non-finite")) step = 0;
    free(text);
    return step;
}

// The shortest of %.15g .. %.17g that reads back as x (0.3, not 0.29999999999999999).
static void fmt_exact(char *buf, size_t n, const char *prefix, double x) {
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, n, "%s%.*g", prefix, digits, x);
        if (strtod(buf + strlen(prefix), NULL) == x) return;
    }
}

// Run k in a process of its own, its output in its run.log: fresh, or resumed from its
// checkpoint. Returns the exit status (0, 1, or 128 + a signal).
static int run_child(const Sweep *s, int k, int resume, const char *exe) {
    const SweepRun *r = &s->runs[k];
    char err[1024], log_path[1400], lr[64], min_lr[64], out_dir[1400], ckpt[1400];
    if (!ensure_dir(r->dir, err, sizeof err)) die(EXIT_RUNTIME, "%s", err);
    snprintf(log_path, sizeof log_path, "%s/run.log", r->dir);
    char **argv = xcalloc((size_t)s->n_base + 8, sizeof(char *), "a run's arguments");
    int n = 0;
    argv[n++] = (char *)exe;
    if (resume) {
        snprintf(ckpt, sizeof ckpt, "%s/checkpoint.bin", r->dir);
        argv[n++] = "--resume";
        argv[n++] = ckpt;
    } else {
        for (int i = 0; i < s->n_base; i++) argv[n++] = s->base_args[i];
        fmt_exact(lr, sizeof lr, "--train.lr=", r->lr);
        fmt_exact(min_lr, sizeof min_lr, "--train.min_lr=", r->lr * s->min_lr_ratio);
        snprintf(out_dir, sizeof out_dir, "--train.out_dir=%s", r->dir);
        argv[n++] = lr;
        argv[n++] = min_lr;
        argv[n++] = out_dir;
        if (s->v[r->variant].override[0]) {
            static char ov[340];
            snprintf(ov, sizeof ov, "--%s", s->v[r->variant].override);
            argv[n++] = ov;
        }
        // the run's directory is the sweep's own: a run started again replaces what it left
        argv[n++] = "--train.overwrite=true";
    }
    argv[n] = NULL;
    char stale[1400];
    snprintf(stale, sizeof stale, "%s/sweep_diverged.txt", r->dir);
    if (!resume) unlink(stale);  // a run started again has not diverged yet
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) die(EXIT_RUNTIME, "cannot start the run in '%s': %s", r->dir, strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
#ifdef TGPT_TEST_HOOKS
        // TGPT_TEST_SWEEP_RUN=K: the fault injection of the environment (TGPT_TEST_SIGNAL,
        // TGPT_TEST_NONFINITE) reaches run K (1-based) only
        const char *only = getenv("TGPT_TEST_SWEEP_RUN");
        if (only && atoi(only) != k + 1) { unsetenv("TGPT_TEST_SIGNAL"); unsetenv("TGPT_TEST_NONFINITE"); }
#endif
        int fd = open(log_path, O_WRONLY | O_CREAT | (resume ? O_APPEND : O_TRUNC), 0666);
        if (fd < 0) _exit(127);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
        execv(exe, argv);
        _exit(127);
    }
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
        if (resuming) read_run(r);
        if (r->done) {
            printf("run %d/%d | %s lr %.3g | kept (finished before)\n", k + 1, s->n_runs, s->v[r->variant].name, r->lr);
            continue;
        }
        int resume = resuming && file_exists(r->dir, "checkpoint.bin") && !file_exists(r->dir, "summary.json");
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
            if (step < 0) die(EXIT_RUNTIME, "run %d/%d (%s, lr %g) failed with exit code %d: see %s", k + 1, s->n_runs,
                              s->v[r->variant].name, r->lr, code, log_path);
            char path[1400];
            snprintf(path, sizeof path, "%s/sweep_diverged.txt", r->dir);
            FILE *f = fopen(path, "w");
            if (!f || fprintf(f, "%ld\n", step) < 0 || fclose(f) != 0) die(EXIT_RUNTIME, "cannot write '%s'", path);
        }
        read_run(r);
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
    write_state(s);
}

static void start_resume(Sweep *s, const Args *a) {
    char err[1024], dir[PATH_MAX];
    if (a->n_overrides > 0)
        die(EXIT_USAGE, "a sweep resumes as it was started: --resume %s takes no overrides (got --%s)", a->resume_path,
            a->overrides[0]);
    if (a->comparison) die(EXIT_USAGE, "a sweep resumes as it was started: --resume %s takes no --compare", a->resume_path);
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
    for (int k = 0; k < s.n_runs; k++) { free(s.runs[k].steps); free(s.runs[k].logit); }
    for (int i = 0; i < s.n_base; i++) free(s.base_args[i]);
    free(s.base_args);
    return code;
}
