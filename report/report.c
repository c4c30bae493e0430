// report/report.c: the outputs of a side-by-side comparison of 2 to 4 variants of one config key. The
// log keeps every step's losses and the sparse attention probes of each variant in growing
// arrays, and the attention weights of the probe sequence at three probes; compare_log_finish
// writes compare.csv (every step, every variant), report.md (a side-by-side table and a reading
// generated from the numbers, for the kind of key compared), the SVG panels sharing the step axis
// (scaling.svg for the scale, compare.svg otherwise) and report.html (report.md's text and
// tables, the same panels inline, the attention maps of every variant side by side).
#define _POSIX_C_SOURCE 200809L
#include "report/report.h"

#include "report/attention_map.h"
#include "base/data.h"
#include "report/html.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Thresholds of the readings, in nats of loss.
#define LEVEL 0.01      // final losses closer than this "end level"
#define GAP_DATED 0.05  // the reading dates the step at which a loss gap first exceeded this
#define FAR 0.1         // a difference above this is "far" above or below
#define ROUNDING 1e-3   // gen_loss and the teacher-forced loss on the same windows within this agree up to rounding
#define FUTURE_EPS 1e-6 // a future_mass above this puts weight on positions after the query's own

// ---------------------------------------------------------------------------------------------
// what is compared

// The scale has the reading of --compare-scaling; a leak (a model that sees the future) the
// teacher-forced loss against gen_loss; any other key the losses only.
typedef enum { KIND_SCALE, KIND_LEAK, KIND_OTHER } CompareKind;

static const struct {
    const char *key;
    CompareKind kind;
    const char *title;  // of report.md and the SVG
} KNOWN_KEYS[] = {
    {"model.attn_scale", KIND_SCALE, "Attention scale"},
    {"model.attn_mask", KIND_LEAK, "Attention mask"},
    {"model.softmax_axis", KIND_LEAK, "Softmax axis"},
};

// What each value of the leak keys computes, for report.md's introduction.
static const struct {
    const char *key, *value, *what;
} VALUE_MEANING[] = {
    {"model.attn_mask", "causal", "sets the scores above the diagonal to -inf, so a position sees only itself and the "
                                  "past (correct)"},
    {"model.attn_mask", "zero", "sets the scores above the diagonal to 0 instead of -inf, so the future positions "
                                "keep weight after the softmax (the mistake)"},
    {"model.attn_mask", "none", "masks nothing: every position sees the whole window (the mistake)"},
    {"model.softmax_axis", "keys", "normalises each query's row of weights over the keys, so every row sums to 1 "
                                   "(correct)"},
    {"model.softmax_axis", "queries", "normalises each key's column over the queries that see it, after the causal "
                                      "mask (the mistake)"},
};

static const char *value_meaning(const char *key, const char *value) {
    for (size_t i = 0; i < sizeof VALUE_MEANING / sizeof VALUE_MEANING[0]; i++)
        if (strcmp(VALUE_MEANING[i].key, key) == 0 && strcmp(VALUE_MEANING[i].value, value) == 0)
            return VALUE_MEANING[i].what;
    return NULL;
}

// ---------------------------------------------------------------------------------------------
// the log

// Every record starts with this: the step it belongs to and its arrival order (a later record
// for the same step wins).
typedef struct {
    long step;
    size_t seq;
} RecKey;

typedef struct {
    RecKey k;
    double loss, val, gen;  // val and gen are NaN when not evaluated
} StepRec;

typedef struct {
    RecKey k;
    HeadStats s;
} ProbeRec;

// The attention weights of the probe sequence at one probe: (L,NH,Tm,Tm), the first Tm queries
// and keys of each head (float: a picture's precision).
typedef struct {
    long step;  // -1: none kept
    float *P;
} MapSnap;

// The probes whose weights the log keeps: report.html's columns.
enum { SNAP_FIRST, SNAP_MIDDLE, SNAP_LAST, N_SNAPS };

typedef struct {
    char *value;  // the compared key's value, as given
    char *name;   // the subdirectory and the name in the files
    StepRec *steps;
    size_t n_steps, cap_steps;
    ProbeRec *probes;
    size_t n_probes, cap_probes;
    double final_train, final_val, final_gen, final_gen_tf;
    char *sample;
    int has_final;
    MapSnap snap[N_SNAPS];
} VarLog;

struct CompareLog {
    char *out_dir;
    long max_steps;
    size_t seq;
    char *key;
    CompareKind kind;
    const char *title;
    int n;
    VarLog v[COMPARE_MAX_VARIANTS];
    // the attention maps: the shape of the first compare_log_attention call, the sequence
    int map_L, map_NH, map_T, map_Tm;  // map_Tm = min(map_T, COMPARE_MAP_T)
    uint32_t *map_text;                // (map_Tm) code points; NULL before the first call
    char *command;                     // the command line, for report.html (NULL: "./train")
};

static char *xstrdup(const char *s, const char *what) {
    size_t n = strlen(s);
    char *c = xmalloc(n + 1, what);
    memcpy(c, s, n + 1);
    return c;
}

// Grow *p (of *cap elements of `elem` bytes) to hold at least `need`; dies on overflow or OOM.
static void *grow(void *p, size_t *cap, size_t need, size_t elem, const char *what) {
    if (need <= *cap) return p;
    size_t ncap = *cap ? *cap : 256;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) die(EXIT_RUNTIME, "size overflow growing %s", what);
        ncap *= 2;
    }
    size_t bytes;
    if (!mul_size(ncap, elem, &bytes)) die(EXIT_RUNTIME, "size overflow growing %s", what);
    void *q = realloc(p, bytes);
    if (!q) die(EXIT_RUNTIME, "out of memory growing %s to %zu bytes", what, bytes);
    *cap = ncap;
    return q;
}

// A variant's name: the value, except the scale's "sqrt" and "none" (--compare-scaling's names).
static const char *variant_name(CompareKind kind, const char *value) {
    if (kind == KIND_SCALE && strcmp(value, "sqrt") == 0) return "scaled";
    if (kind == KIND_SCALE && strcmp(value, "none") == 0) return "unscaled";
    return value;
}

CompareLog *compare_log_open(const char *out_dir, long max_steps, const char *key, const char *const *values, int n) {
    if (!key || !values || n < 2 || n > COMPARE_MAX_VARIANTS) return NULL;
    for (int i = 0; i < n; i++)
        if (!values[i]) return NULL;
    CompareLog *log = xcalloc(1, sizeof(CompareLog), "comparison log");
    log->out_dir = xstrdup(out_dir ? out_dir : ".", "comparison log");
    log->max_steps = max_steps;
    log->key = xstrdup(key, "comparison log");
    log->kind = KIND_OTHER;
    log->title = NULL;
    for (size_t k = 0; k < sizeof KNOWN_KEYS / sizeof KNOWN_KEYS[0]; k++)
        if (strcmp(KNOWN_KEYS[k].key, key) == 0) {
            log->kind = KNOWN_KEYS[k].kind;
            log->title = KNOWN_KEYS[k].title;
        }
    log->n = n;
    for (int i = 0; i < n; i++) {
        VarLog *v = &log->v[i];
        v->value = xstrdup(values[i], "comparison log");
        v->name = xstrdup(variant_name(log->kind, values[i]), "comparison log");
        v->final_train = v->final_val = v->final_gen = v->final_gen_tf = NAN;
        for (int k = 0; k < N_SNAPS; k++) v->snap[k].step = -1;
    }
    return log;
}

static VarLog *variant(CompareLog *log, int i) { return log && i >= 0 && i < log->n ? &log->v[i] : NULL; }

void compare_log_probe(CompareLog *log, int i, long step, const HeadStats *mean) {
    VarLog *v = variant(log, i);
    if (!v || !mean) return;
    v->probes = grow(v->probes, &v->cap_probes, v->n_probes + 1, sizeof(ProbeRec), "attention probes");
    ProbeRec *r = &v->probes[v->n_probes++];
    r->k.step = step;
    r->k.seq = log->seq++;
    r->s = *mean;
}

void compare_log_step(CompareLog *log, int i, long step, double loss, double val_loss, double gen_loss) {
    VarLog *v = variant(log, i);
    if (!v) return;
    v->steps = grow(v->steps, &v->cap_steps, v->n_steps + 1, sizeof(StepRec), "step losses");
    StepRec *r = &v->steps[v->n_steps++];
    r->k.step = step;
    r->k.seq = log->seq++;
    r->loss = loss;
    r->val = val_loss;
    r->gen = gen_loss;
}

// Keep P (L,NH,T,T) as snapshot k of step `step`, cropped to the first map_Tm positions.
static void keep_snap(const CompareLog *log, MapSnap *sn, long step, const real *P) {
    int NH = log->map_NH, T = log->map_T, Tm = log->map_Tm;
    size_t heads = (size_t)log->map_L * NH, n;
    if (!mul_size(heads, (size_t)Tm * Tm, &n) || !mul_size(n, sizeof(float), &n))
        die(EXIT_RUNTIME, "size overflow keeping the attention maps");
    if (!sn->P) sn->P = xmalloc(n, "attention maps");
    for (size_t h = 0; h < heads; h++)
        for (int t = 0; t < Tm; t++)
            for (int u = 0; u < Tm; u++)
                sn->P[(h * Tm + t) * Tm + u] = (float)P[(h * T + t) * T + u];
    sn->step = step;
}

void compare_log_attention(CompareLog *log, int i, long step, const real *P, int L, int NH, int T,
                           const uint32_t *text) {
    VarLog *v = variant(log, i);
    if (!v || !P || !text || L < 1 || NH < 1 || T < 1) return;
    if (!log->map_text) {
        log->map_L = L;
        log->map_NH = NH;
        log->map_T = T;
        log->map_Tm = T < COMPARE_MAP_T ? T : COMPARE_MAP_T;
        log->map_text = xmalloc((size_t)log->map_Tm * sizeof(uint32_t), "probe sequence");
        memcpy(log->map_text, text, (size_t)log->map_Tm * sizeof(uint32_t));
    } else if (L != log->map_L || NH != log->map_NH || T != log->map_T) {
        return;
    }
    double mid = (double)log->max_steps / 2;
    if (v->snap[SNAP_FIRST].step < 0) keep_snap(log, &v->snap[SNAP_FIRST], step, P);
    if (v->snap[SNAP_MIDDLE].step < 0 || fabs((double)step - mid) < fabs((double)v->snap[SNAP_MIDDLE].step - mid))
        keep_snap(log, &v->snap[SNAP_MIDDLE], step, P);
    if (step >= v->snap[SNAP_LAST].step) keep_snap(log, &v->snap[SNAP_LAST], step, P);
}

void compare_log_command(CompareLog *log, const char *command) {
    if (!log || !command) return;
    free(log->command);
    log->command = xstrdup(command, "command line");
}

void compare_log_final(CompareLog *log, int i, const CompareFinal *f) {
    VarLog *v = variant(log, i);
    if (!v || !f) return;
    v->final_train = f->train_loss;
    v->final_val = f->val_loss;
    v->final_gen = f->gen_loss;
    v->final_gen_tf = f->gen_loss_tf;
    free(v->sample);
    v->sample = f->sample ? xstrdup(f->sample, "sample text") : NULL;
    v->has_final = 1;
}

const char *compare_variant_name(const CompareLog *log, int i) {
    return log && i >= 0 && i < log->n ? log->v[i].name : NULL;
}

const char *compare_svg_name(const CompareLog *log) {
    return log && log->kind == KIND_SCALE ? "scaling.svg" : "compare.svg";
}

static int cmp_rec(const void *a, const void *b) {
    const RecKey *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

// Sort records (each starting with a RecKey) by step, as they normally arrive, and keep the
// last record of any repeated step. Returns the new count.
static size_t sort_dedupe(void *recs, size_t n, size_t elem) {
    char *r = recs;
    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = ((const RecKey *)(r + (i - 1) * elem))->step < ((const RecKey *)(r + i * elem))->step;
    if (sorted) return n;
    qsort(r, n, elem, cmp_rec);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        int same = j > 0 && ((const RecKey *)(r + (j - 1) * elem))->step == ((const RecKey *)(r + i * elem))->step;
        memmove(r + (same ? j - 1 : j) * elem, r + i * elem, elem);
        if (!same) j++;
    }
    return j;
}

static void prepare(VarLog *v) {
    v->n_steps = sort_dedupe(v->steps, v->n_steps, sizeof(StepRec));
    v->n_probes = sort_dedupe(v->probes, v->n_probes, sizeof(ProbeRec));
}

// Number of step records with step <= s (binary search).
static size_t steps_upto(const VarLog *v, long s) {
    size_t lo = 0, hi = v->n_steps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->steps[mid].k.step <= s) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static const StepRec *step_at(const VarLog *v, long s) {
    size_t n = steps_upto(v, s);
    return n > 0 && v->steps[n - 1].k.step == s ? &v->steps[n - 1] : NULL;
}

static const HeadStats *probe_at(const VarLog *v, long s) {
    size_t lo = 0, hi = v->n_probes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->probes[mid].k.step < s) lo = mid + 1;
        else hi = mid;
    }
    return lo < v->n_probes && v->probes[lo].k.step == s ? &v->probes[lo].s : NULL;
}

// The latest evaluated (finite) value of a step field (val or gen) at or before step s; NaN if none.
static double evaluated_upto(const VarLog *v, size_t field, long s) {
    for (size_t i = steps_upto(v, s); i > 0; i--) {
        double x;
        memcpy(&x, (const char *)&v->steps[i - 1] + field, sizeof x);
        if (isfinite(x)) return x;
    }
    return NAN;
}

static double val_upto(const VarLog *v, long s) { return evaluated_upto(v, offsetof(StepRec, val), s); }
static double gen_upto(const VarLog *v, long s) { return evaluated_upto(v, offsetof(StepRec, gen), s); }

#define TRAIN_AVG_WINDOW 20

// Mean of the finite training losses among the last TRAIN_AVG_WINDOW steps at or before s.
static double train_avg_upto(const VarLog *v, long s) {
    size_t n = steps_upto(v, s), k = 0;
    double sum = 0;
    for (size_t i = n; i > 0 && n - i < TRAIN_AVG_WINDOW; i--)
        if (isfinite(v->steps[i - 1].loss)) { sum += v->steps[i - 1].loss; k++; }
    return k ? sum / (double)k : NAN;
}

// The last step of the run: the largest step with a loss, else the largest probe step.
static long last_step(const CompareLog *log) {
    long end = 0;
    for (int i = 0; i < log->n; i++) {
        const VarLog *v = &log->v[i];
        if (v->n_steps && v->steps[v->n_steps - 1].k.step > end) end = v->steps[v->n_steps - 1].k.step;
        if (v->n_probes && v->probes[v->n_probes - 1].k.step > end) end = v->probes[v->n_probes - 1].k.step;
    }
    return end;
}

// A statistic of a probe (a HeadStats field at offset `off`), NaN without a probe.
static double stat_or_nan(const HeadStats *p, size_t off) {
    if (!p) return NAN;
    double x;
    memcpy(&x, (const char *)p + off, sizeof x);
    return x;
}

// The SVG's panels, top to bottom; the leak's two only in a leak comparison.
typedef enum {
    PANEL_LOSS, PANEL_ENTROPY, PANEL_MAX_WEIGHT, PANEL_GRADIENT, PANEL_GEN_LOSS, PANEL_FUTURE_MASS
} PanelKind;

static const struct {
    PanelKind kind;
    const char *title;    // after its letter: "(a) "
    const char *ylabel;
    const char *summary;  // in report.md's list of files
    int leak_only;
} PANELS[] = {
    {PANEL_LOSS, "Loss", "cross-entropy loss", "loss", 0},
    {PANEL_ENTROPY, "Normalised attention entropy (1 = uniform, 0 = one-hot)", "entropy / ln(keys)",
     "normalised entropy", 0},
    {PANEL_MAX_WEIGHT, "Mean max attention weight", "weight", "max weight", 0},
    {PANEL_GRADIENT, "Gradient surviving the softmax (log scale)", "‖dL/dS‖ / ‖dL/dP‖",
     "the gradient surviving the softmax", 0},
    {PANEL_GEN_LOSS, "gen_loss vs the teacher-forced val_loss", "cross-entropy loss",
     "gen_loss against the teacher-forced val_loss", 1},
    {PANEL_FUTURE_MASS, "Future mass: the mean weight on positions after the query's own", "weight", "future_mass", 1},
};
#define N_PANELS (sizeof PANELS / sizeof PANELS[0])

static int panel_shown(const CompareLog *log, size_t i) { return !PANELS[i].leak_only || log->kind == KIND_LEAK; }

// ---------------------------------------------------------------------------------------------
// checked writing

typedef struct {
    FILE *f;
    int ok;
    int err_no;
} Out;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void out(Out *o, const char *fmt, ...) {
    if (!o->ok) return;
    va_list ap;
    va_start(ap, fmt);
    errno = 0;
    int r = vfprintf(o->f, fmt, ap);
    va_end(ap);
    if (r < 0) { o->ok = 0; o->err_no = errno; }
}

static int out_open(Out *o, const char *dir, const char *name, char *path, size_t pathlen,
                    char *err, size_t errlen) {
    int n = snprintf(path, pathlen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= pathlen) {
        snprintf(err, errlen, "cannot write %s in '%s': path too long", name, dir);
        return 0;
    }
    errno = 0;
    o->f = fopen(path, "w");
    o->ok = o->f != NULL;
    o->err_no = errno;
    if (!o->f) {
        snprintf(err, errlen, "cannot create '%s': %s", path, strerror(o->err_no ? o->err_no : EIO));
        return 0;
    }
    return 1;
}

static int out_close(Out *o, const char *path, char *err, size_t errlen) {
    if (o->ok && ferror(o->f)) { o->ok = 0; o->err_no = EIO; }
    errno = 0;
    if (fclose(o->f) != 0 && o->ok) { o->ok = 0; o->err_no = errno; }
    o->f = NULL;
    if (!o->ok) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(o->err_no ? o->err_no : EIO));
        return 0;
    }
    return 1;
}

// ---------------------------------------------------------------------------------------------
// compare.csv: one row per (step, variant) that has a loss or a probe. The columns after
// `variant`, in order; new columns go at the end so that existing readers keep working.

typedef enum { FROM_STEP, FROM_PROBE } CsvSource;

static const struct {
    const char *name;
    CsvSource src;
    size_t off;      // into StepRec or HeadStats
    int nan_empty;   // a NaN is "not evaluated": an empty field (else written as nan)
} CSV_COLS[] = {
    {"loss", FROM_STEP, offsetof(StepRec, loss), 0},
    {"val_loss", FROM_STEP, offsetof(StepRec, val), 1},
    {"entropy_norm", FROM_PROBE, offsetof(HeadStats, entropy_norm), 0},
    {"max_weight", FROM_PROBE, offsetof(HeadStats, max_weight), 0},
    {"frac_gt_0.9", FROM_PROBE, offsetof(HeadStats, frac_gt_090), 0},
    {"frac_gt_0.99", FROM_PROBE, offsetof(HeadStats, frac_gt_099), 0},
    {"score_std", FROM_PROBE, offsetof(HeadStats, score_std), 0},
    {"gnorm_wq", FROM_PROBE, offsetof(HeadStats, gnorm_wq), 0},
    {"gnorm_wk", FROM_PROBE, offsetof(HeadStats, gnorm_wk), 0},
    {"gnorm_wv", FROM_PROBE, offsetof(HeadStats, gnorm_wv), 0},
    {"gnorm_wo", FROM_PROBE, offsetof(HeadStats, gnorm_wo), 0},
    {"ds_over_dp", FROM_PROBE, offsetof(HeadStats, ds_over_dp), 0},
    {"row_gain_median", FROM_PROBE, offsetof(HeadStats, row_gain_median), 0},
    {"gen_loss", FROM_STEP, offsetof(StepRec, gen), 1},
    {"future_mass", FROM_PROBE, offsetof(HeadStats, future_mass), 0},
};
#define N_CSV_COLS (sizeof CSV_COLS / sizeof CSV_COLS[0])

static void csv_row(Out *o, long step, const char *name, const StepRec *sr, const HeadStats *p) {
    out(o, "%ld,%s", step, name);
    for (size_t c = 0; c < N_CSV_COLS; c++) {
        const void *rec = CSV_COLS[c].src == FROM_STEP ? (const void *)sr : (const void *)p;
        double x = NAN;
        if (rec) memcpy(&x, (const char *)rec + CSV_COLS[c].off, sizeof x);
        if (!rec || (CSV_COLS[c].nan_empty && isnan(x))) out(o, ",");
        else out(o, ",%.6g", x);
    }
    out(o, "\n");
}

static int write_csv(const CompareLog *log, char *err, size_t errlen) {
    char path[2200];
    Out o;
    if (!out_open(&o, log->out_dir, "compare.csv", path, sizeof path, err, errlen)) return 0;
    out(&o, "step,variant");
    for (size_t c = 0; c < N_CSV_COLS; c++) out(&o, ",%s", CSV_COLS[c].name);
    out(&o, "\n");
    size_t is[COMPARE_MAX_VARIANTS] = {0}, ip[COMPARE_MAX_VARIANTS] = {0};
    for (;;) {
        // the next step present in any variant's sorted steps or probes
        int any = 0;
        long s = 0;
        for (int v = 0; v < log->n; v++) {
            const VarLog *L = &log->v[v];
            if (is[v] < L->n_steps && (!any || L->steps[is[v]].k.step < s)) { s = L->steps[is[v]].k.step; any = 1; }
            if (ip[v] < L->n_probes && (!any || L->probes[ip[v]].k.step < s)) { s = L->probes[ip[v]].k.step; any = 1; }
        }
        if (!any) break;
        for (int v = 0; v < log->n; v++) {
            const VarLog *L = &log->v[v];
            const StepRec *sr = is[v] < L->n_steps && L->steps[is[v]].k.step == s ? &L->steps[is[v]++] : NULL;
            const HeadStats *p = ip[v] < L->n_probes && L->probes[ip[v]].k.step == s ? &L->probes[ip[v]++].s : NULL;
            if (sr || p) csv_row(&o, s, L->name, sr, p);
        }
    }
    return out_close(&o, path, err, errlen);
}

// ---------------------------------------------------------------------------------------------
// report.md: helpers

static const char *const COUNT_WORD[] = {"no", "one", "two", "three", "four"};
static const char *const COUNT_TITLE[] = {"No", "One", "Two", "Three", "Four"};

// Format a number into buf, or an em dash when it was not measured.
static const char *fnum(char *buf, size_t n, const char *fmt, double x) {
    if (isnan(x)) snprintf(buf, n, "—");
    else snprintf(buf, n, fmt, x);
    return buf;
}

// "a / b / c" for a table cell: one number per variant.
static void cell(Out *o, const char *fmt, const double *x, int n) {
    char b[64];
    for (int i = 0; i < n; i++) out(o, "%s%s", i ? " / " : " ", fnum(b, sizeof b, fmt, x[i]));
    out(o, " |");
}

// Items i = 0..n-1 as "A", "A and B" or "A, B and C", each printed by item(o, ctx, i).
static void join(Out *o, int n, void (*item)(Out *, const void *, int), const void *ctx) {
    for (int i = 0; i < n; i++) {
        if (i > 0) out(o, i + 1 == n ? " and " : ", ");
        item(o, ctx, i);
    }
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

// A "N times" factor, with fewer decimals as it grows.
static const char *times(char *buf, size_t n, double r) {
    if (!isfinite(r)) snprintf(buf, n, "infinitely many");
    else if (r >= 10) snprintf(buf, n, "%.0f", r);
    else snprintf(buf, n, "%.1f", r);
    return buf;
}

// A variant's name in the reading: the scale's "scaled" and "unscaled" as words, any other
// value as code (so that "0.5" or "none" reads as a value, not as a number or a word).
static const char *label(char *buf, size_t n, const CompareLog *log, int i) {
    const VarLog *v = &log->v[i];
    if (strcmp(v->name, v->value) != 0) snprintf(buf, n, "%s", v->name);
    else snprintf(buf, n, "`%s`", v->name);
    return buf;
}

// Probe steps where every variant was probed, ascending (malloc'd; *n set).
static long *common_probe_steps(const CompareLog *log, size_t *n) {
    const VarLog *a = &log->v[0];
    long *s = xmalloc((a->n_probes + 1) * sizeof(long), "probe steps");
    size_t k = 0;
    for (size_t i = 0; i < a->n_probes; i++) {
        int everywhere = 1;
        for (int v = 1; v < log->n; v++) everywhere &= probe_at(&log->v[v], a->probes[i].k.step) != NULL;
        if (everywhere) s[k++] = a->probes[i].k.step;
    }
    *n = k;
    return s;
}

static long nearest(const long *s, size_t n, double target) {
    long best = s[0];
    for (size_t i = 1; i < n; i++)
        if (fabs((double)s[i] - target) < fabs((double)best - target)) best = s[i];
    return best;
}

// The loss each variant ends with and where it comes from: the whole-split validation loss when
// every variant has one, else the last evaluation, else the training loss.
static const char *final_losses(const CompareLog *log, long end, double *out_loss) {
    int whole = 1, evals = 1;
    for (int v = 0; v < log->n; v++) {
        const VarLog *L = &log->v[v];
        if (!(L->has_final && isfinite(L->final_val))) whole = 0;
        if (!isfinite(val_upto(L, end))) evals = 0;
    }
    for (int v = 0; v < log->n; v++) {
        const VarLog *L = &log->v[v];
        out_loss[v] = whole ? L->final_val : evals ? val_upto(L, end) : train_avg_upto(L, end);
    }
    return whole ? "whole-split validation loss" : evals ? "last evaluated validation loss"
                                                          : "training loss (mean of the last 20 steps)";
}

// The gen_loss each variant ends with: the final one when every variant has it, else the last
// evaluated one. Returns whether all are finite.
static int final_gens(const CompareLog *log, long end, double *gen) {
    int whole = 1, all = 1;
    for (int v = 0; v < log->n; v++) whole &= log->v[v].has_final && isfinite(log->v[v].final_gen);
    for (int v = 0; v < log->n; v++) {
        gen[v] = whole ? log->v[v].final_gen : gen_upto(&log->v[v], end);
        all &= isfinite(gen[v]) != 0;
    }
    return all;
}

// The first step at which the loss gap between variants a and b exceeded `thr`: on the common
// validation evaluations, or on the 20-step training average when there are none. Returns -1
// when it never did; *gap gets the gap (b - a) there, *what names the measure.
static long first_gap_step(const CompareLog *log, int ia, int ib, double thr, double *gap, const char **what) {
    const VarLog *a = &log->v[ia], *b = &log->v[ib];
    int any_val = 0;
    for (size_t i = 0; i < a->n_steps; i++) {
        if (!isfinite(a->steps[i].val)) continue;
        const StepRec *r = step_at(b, a->steps[i].k.step);
        if (!r || !isfinite(r->val)) continue;
        any_val = 1;
        double g = r->val - a->steps[i].val;
        if (fabs(g) > thr) { *gap = g; *what = "validation loss"; return a->steps[i].k.step; }
    }
    if (any_val) { *what = "validation loss"; return -1; }
    *what = "20-step mean training loss";
    for (size_t i = 0; i < a->n_steps; i++) {
        long s = a->steps[i].k.step;
        if (!step_at(b, s)) continue;
        double g = train_avg_upto(b, s) - train_avg_upto(a, s);
        if (isfinite(g) && fabs(g) > thr) { *gap = g; return s; }
    }
    return -1;
}

// The variant indices ordered by x ascending (NaN last), into idx.
static void order_by(const double *x, int n, int *idx) {
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            double a = x[idx[j - 1]], b = x[idx[j]];
            if (!(isnan(a) && !isnan(b)) && !(a > b)) break;
            int t = idx[j - 1];
            idx[j - 1] = idx[j];
            idx[j] = t;
        }
}

// "`a` 1.2345, `b` 1.3456 and `c` 1.4567", lowest first; returns whether the order is the same
// as `than`'s (when given).
static int ranking(Out *o, const CompareLog *log, const double *x, const int *than) {
    int idx[COMPARE_MAX_VARIANTS], same = 1;
    char b[96];
    order_by(x, log->n, idx);
    for (int r = 0; r < log->n; r++) {
        if (r > 0) out(o, r + 1 == log->n ? " and " : ", ");
        label(b, sizeof b, log, idx[r]);
        if (isfinite(x[idx[r]])) out(o, "%s %.4f", b, x[idx[r]]);
        else out(o, "%s (not finite)", b);
        if (than && than[r] != idx[r]) same = 0;
    }
    return same;
}

// Whether variant i computes the correct attention: the causal mask and the softmax over the
// keys, the compared key taken from the variant and the other from the shared configuration.
static int variant_is_correct(const CompareLog *log, const Config *cfg, int i) {
    const char *mask = strcmp(log->key, "model.attn_mask") == 0 ? log->v[i].value : cfg->attn_mask;
    const char *axis = strcmp(log->key, "model.softmax_axis") == 0 ? log->v[i].value : cfg->softmax_axis;
    return strcmp(mask, "causal") == 0 && strcmp(axis, "keys") == 0;
}

// --compare-scaling's pair: the text of the two-variant scale report as it has always been.
static int is_textbook_scale(const CompareLog *log) {
    return log->kind == KIND_SCALE && log->n == 2 && strcmp(log->v[0].value, "sqrt") == 0 &&
           strcmp(log->v[1].value, "none") == 0;
}

// ---------------------------------------------------------------------------------------------
// report.md: the reading of the scale. Each variant is read against the reference (the
// 1/sqrt(d_k) one, else the first); with two variants, sqrt and none, this is --compare-scaling's
// reading word for word.

typedef struct {
    int a, b;              // the reference and the variant read against it
    char la[96], lb[96];   // their names in the text
    char ta[128], tb[128]; // their names at the start of a headline
    int textbook;          // a is sqrt and b none: the explanations of dropping the scale apply
    double factor;         // b's scale / a's
    char change[256];      // what b does to the scale: "dropping the scale", ...
    char without[128];     // "without the scale", "with `0.5`"
} ScalePair;

// A variant of the scale at the start of a headline: "Scaled attention", "Unscaled attention",
// "Scale `0.5`".
static void headline_name(char *buf, size_t n, const char *value, const char *name) {
    if (strcmp(value, "sqrt") == 0) snprintf(buf, n, "Scaled attention");
    else if (strcmp(value, "none") == 0) snprintf(buf, n, "Unscaled attention");
    else snprintf(buf, n, "Scale %s", name);
}

static void scale_pair(ScalePair *p, const CompareLog *log, int a, int b, int head_dim) {
    p->a = a;
    p->b = b;
    label(p->la, sizeof p->la, log, a);
    label(p->lb, sizeof p->lb, log, b);
    const char *va = log->v[a].value, *vb = log->v[b].value;
    p->textbook = strcmp(va, "sqrt") == 0 && strcmp(vb, "none") == 0;
    p->factor = config_scale_factor(vb, head_dim) / config_scale_factor(va, head_dim);
    headline_name(p->ta, sizeof p->ta, va, p->la);
    headline_name(p->tb, sizeof p->tb, vb, p->lb);
    if (p->textbook) {
        snprintf(p->change, sizeof p->change, "dropping the scale");
        snprintf(p->without, sizeof p->without, "without the scale");
    } else {
        snprintf(p->change, sizeof p->change, "changing the scale from %s to %s", p->la, p->lb);
        snprintf(p->without, sizeof p->without, "with %s", p->lb);
    }
}

// Peakedness of b's rows against a's at one probe.
static void read_peakedness(Out *o, const ScalePair *pr, const char *when, const HeadStats *s, const HeadStats *u) {
    char b[32];
    double r = s->entropy_norm > 0 ? u->entropy_norm / s->entropy_norm : NAN;
    out(o, "- **Peakedness, %s.** Normalised entropy %.3f %s vs %.3f %s", when, s->entropy_norm, pr->la,
        u->entropy_norm, pr->lb);
    if (!isfinite(r)) out(o, ". ");
    else if (r < 0.9) out(o, ": %s rows are more peaked, at %.2f× the %s entropy. ", pr->lb, r, pr->la);
    else if (r <= 1.1) out(o, ": about equally peaked (ratio %.2f). ", r);
    else out(o, ": %s rows are *flatter* here, at %.2f× the %s entropy. ", pr->lb, r, pr->la);
    out(o, "%.1f%% of %s rows put more than 0.99 of their weight on a single key (%s: %.1f%%)",
        100 * u->frac_gt_099, pr->lb, pr->la, 100 * s->frac_gt_099);
    out(o, "; mean max weight %.3f vs %.3f", u->max_weight, s->max_weight);
    if (s->score_std > 0 && u->score_std > 0)
        out(o, "; the scores' standard deviation is %.3g vs %.3g (%s× %s)", u->score_std, s->score_std,
            times(b, sizeof b, u->score_std / s->score_std), pr->la);
    out(o, ".\n");
}

// How much gradient passes the softmax, a against b, at one probe.
static void read_survival(Out *o, const ScalePair *pr, const char *when, const HeadStats *s, const HeadStats *u) {
    char b[32];
    out(o, "- **Gradient through the softmax, %s.** ", when);
    double a = s->ds_over_dp, c = u->ds_over_dp;
    if (isfinite(a) && isfinite(c) && a > 0 && c > 0) {
        double r = a / c;
        out(o, "Over whole heads, ‖dL/dS‖/‖dL/dP‖ is %.3g %s vs %.3g %s (%s/%s = %.3g): ", a, pr->la, c, pr->lb,
            pr->la, pr->lb, r);
        if (r > 1.25)
            out(o, "%s times less of the gradient survives the softmax %s. ", times(b, sizeof b, r), pr->without);
        else if (r < 0.8) out(o, "the %s model passes %s times *more* gradient through the softmax. ", pr->lb,
                              times(b, sizeof b, 1 / r));
        else out(o, "about the same fraction survives in both. ");
    } else {
        out(o, "‖dL/dS‖/‖dL/dP‖ is %.3g %s vs %.3g %s. ", a, pr->la, c, pr->lb);
    }
    a = s->row_gain_median, c = u->row_gain_median;
    if (isfinite(a) && isfinite(c) && a > 0 && c > 0) {
        double r = a / c;
        out(o, "The median row gain is %.3g vs %.3g (%s/%s = %.3g): ", a, c, pr->la, pr->lb, r);
        if (r > 1.25) out(o, "%s times less gradient survives the softmax per row.\n", times(b, sizeof b, r));
        else if (r < 0.8) out(o, "the typical %s row passes %s times *more*.\n", pr->lb, times(b, sizeof b, 1 / r));
        else out(o, "the typical row passes about the same in both.\n");
    } else if (isfinite(a) && a > 0 && c == 0) {
        out(o, "The median %s row passes no gradient at all (median row gain 0, %s %.3g).\n", pr->lb, pr->la, a);
    } else {
        out(o, "The median row gain is %.3g %s vs %.3g %s.\n", a, pr->la, c, pr->lb);
    }
}

// "smaller", "about the same" or "larger" for a ratio b/a; NULL when not finite.
static const char *size_word(double q) {
    if (!isfinite(q)) return NULL;
    return q < 0.8 ? "smaller" : q <= 1.25 ? "about the same" : "larger";
}

// Why b's ||dWq|| is not smaller although its rows saturate (starved) or do not: the scale is
// a factor of dQ and dK too.
static void explain_wq_not_smaller(Out *o, const ScalePair *pr, int starved, int smaller, int head_dim) {
    double sq = sqrt((double)(head_dim > 0 ? head_dim : 1));
    if (pr->textbook && starved)
        out(o, "%s against the textbook story (saturation makes Wq's gradient vanish): dropping the scale also "
               "drops the 1/sqrt(d_k) = 1/%.3g factor from dQ and dK, so whatever does get through the softmax "
               "is %.3g times larger, and the unsaturated rows dominate the matrix norm. The loss of gradient is "
               "per row (above), not visible in the whole-matrix norm.",
            smaller ? "Where it is not smaller, that goes" : "That goes", sq, sq);
    else if (pr->textbook)
        out(o, "%s: the per-row gains above show the unscaled softmax is not starving the gradient here, so "
               "dropping the scale simply removes the 1/sqrt(d_k) = 1/%.3g factor from dQ and dK, making the "
               "same gradient through the softmax up to %.3g times larger.",
            smaller ? "Where it is not smaller, there is no saturation story to tell" : "No saturation story here",
            sq, sq);
    else if (starved)
        out(o, "%s against the textbook story (saturation makes Wq's gradient vanish): the scale is a factor of dQ "
               "and dK as well (%s's is %.3g times %s's), and the unsaturated rows dominate the matrix norm. The "
               "loss of gradient is per row (above), not visible in the whole-matrix norm.",
            smaller ? "Where it is not smaller, that goes" : "That goes", pr->lb, pr->factor, pr->la);
    else
        out(o, "%s: the per-row gains above show the %s softmax is not starving the gradient here; the scale is a "
               "factor of dQ and dK as well (%s's is %.3g times %s's).",
            smaller ? "Where it is not smaller, there is no saturation story to tell" : "No saturation story here",
            pr->lb, pr->lb, pr->factor, pr->la);
}

// ||dL/dWq||, b against a: stated as measured, explained for each outcome.
static void read_wq(Out *o, const ScalePair *pr, const char *when0, const HeadStats *s0, const HeadStats *u0,
                    const char *when1, const HeadStats *s1, const HeadStats *u1, int head_dim) {
    double q0 = s0->gnorm_wq > 0 ? u0->gnorm_wq / s0->gnorm_wq : NAN, q1 = NAN;
    out(o, "- **Whole-matrix ‖dL/dWq‖.** %s: %.3g %s vs %.3g %s", when0, s0->gnorm_wq, pr->la, u0->gnorm_wq,
        pr->lb);
    if (isfinite(q0)) out(o, " (%s/%s = %.3g)", pr->lb, pr->la, q0);
    if (s1 && u1) {
        q1 = s1->gnorm_wq > 0 ? u1->gnorm_wq / s1->gnorm_wq : NAN;
        out(o, "; %s: %.3g vs %.3g", when1, s1->gnorm_wq, u1->gnorm_wq);
        if (isfinite(q1)) out(o, " (%.3g)", q1);
    }
    out(o, ". ");
    const char *w0 = size_word(q0), *w1 = size_word(q1);
    if (!w0 && !w1) {
        out(o, "The gradient norms were not measurable, so no reading is given.\n");
        return;
    }
    if (w0 && w1 && strcmp(w0, w1) != 0)
        out(o, "So %s it is %s at %s and %s at %s. ", pr->lb, w0, when0, w1, when1);
    else
        out(o, "So %s it is %s%s. ", pr->lb, w0 ? w0 : w1, w0 && w1 ? " at both probes" : "");
    int smaller = (w0 && w0[0] == 's') || (w1 && w1[0] == 's');
    int not_smaller = (w0 && w0[0] != 's') || (w1 && w1[0] != 's');
    // did less gradient survive the softmax per row in b at either probe?
    int starved = 0;
    const HeadStats *ss[2] = {s0, s1}, *us[2] = {u0, u1};
    for (int i = 0; i < 2; i++) {
        if (!ss[i] || !us[i]) continue;
        double a = ss[i]->row_gain_median, c = us[i]->row_gain_median;
        if (isfinite(a) && isfinite(c) && a > 0 && (c == 0 || a / c > 1.25)) starved = 1;
    }
    if (smaller) {
        if (starved)
            out(o, "%s the textbook story: saturated rows pass almost no gradient back to the queries and keys. ",
                not_smaller ? "Where it is smaller, that is" : "That is");
        else
            out(o, "%s the textbook direction, although the per-row gains above show no extra saturation "
                   "%s, so it comes from how differently the two models have trained, not from the softmax. ",
                not_smaller ? "Where it is smaller, that matches" : "That matches", pr->lb);
    }
    if (not_smaller) explain_wq_not_smaller(o, pr, starved, smaller, head_dim);
    out(o, "\n");
}

// Which of the pair ends ahead on the final loss, and when their gap opened.
static void read_scale_outcome(Out *o, const CompareLog *log, const ScalePair *pr, const Config *cfg,
                               const long *ps, size_t np, long end) {
    const VarLog *S = &log->v[pr->a], *U = &log->v[pr->b];
    double fl[COMPARE_MAX_VARIANTS];
    const char *measure = final_losses(log, end, fl);
    double fa = fl[pr->a], fb = fl[pr->b];
    if (!isfinite(fa) || !isfinite(fb)) {
        char which[128];
        if (!isfinite(fa) && !isfinite(fb)) snprintf(which, sizeof which, "either variant");
        else snprintf(which, sizeof which, "the %s variant", !isfinite(fa) ? pr->la : pr->lb);
        out(o, "- No finite final loss for %s, so the outcome cannot be compared.\n", which);
        return;
    }
    double gap = fb - fa;
    if (gap >= LEVEL) {
        out(o, "- **%s ends ahead.** Final %s: %.4f %s vs %.4f %s; the %s model is lower by %.3f (%.1f%% below %s).\n",
            pr->ta, measure, fa, pr->la, fb, pr->lb, pr->la, gap, 100 * gap / fb, pr->lb);
    } else if (gap <= -LEVEL) {
        out(o, "- **%s ends ahead.** Final %s: %.4f %s vs %.4f %s; the %s model is lower by %.3f (%.1f%% below %s). ",
            pr->tb, measure, fa, pr->la, fb, pr->lb, pr->lb, -gap, 100 * -gap / fa, pr->la);
        const HeadStats *se = np ? probe_at(S, ps[np - 1]) : NULL, *ue = np ? probe_at(U, ps[np - 1]) : NULL;
        if (se && ue && se->entropy_norm > 0 && ue->entropy_norm / se->entropy_norm < 0.9)
            out(o, "Its attention was more peaked (normalised entropy %.3f vs %.3f at step %ld), but within this "
                   "run that peakedness did not hurt the loss.", ue->entropy_norm, se->entropy_norm, ps[np - 1]);
        else if (se && ue)
            out(o, "Its attention did not end up much more peaked (normalised entropy %.3f vs %.3f at step %ld), "
                   "so saturation had little to hurt within this run.", ue->entropy_norm, se->entropy_norm, ps[np - 1]);
        else
            out(o, "Within this run, %s did not hurt the loss.", pr->change);
        const HeadStats *s0 = np ? probe_at(S, ps[0]) : NULL, *u0 = np ? probe_at(U, ps[0]) : NULL;
        const char *small_init = strcmp(cfg->init, "gpt2") == 0 ? ": with the small GPT-2 style init (std 0.02) the "
                                                                  "raw scores start small" : "";
        if (s0 && u0 && ps[0] == 0 && u0->entropy_norm >= 0.9 * s0->entropy_norm && u0->frac_gt_099 < 0.05) {
            if (pr->textbook)
                out(o, " At step 0 the unscaled softmax was not saturated (normalised entropy %.3f vs %.3f, %.1f%% "
                       "of rows above 0.99)%s, so leaving the scale out mainly let the same weight update move the "
                       "scores sqrt(d_k) times further, which can speed up learning.", u0->entropy_norm,
                    s0->entropy_norm, 100 * u0->frac_gt_099, small_init);
            else if (pr->factor > 1)
                out(o, " At step 0 the %s softmax was not saturated (normalised entropy %.3f vs %.3f, %.1f%% of rows "
                       "above 0.99)%s, so its %.3g times larger scale mainly let the same weight update move the "
                       "scores further, which can speed up learning.", pr->lb, u0->entropy_norm, s0->entropy_norm,
                    100 * u0->frac_gt_099, small_init, pr->factor);
        }
        out(o, " Longer training or a larger head_dim can change the outcome.\n");
    } else {
        out(o, "- **The two variants end level.** Final %s: %.4f %s vs %.4f %s, a gap of %.3f, within 0.01: within "
               "this run, %s neither helped nor hurt the loss.\n", measure, fa, pr->la, fb, pr->lb, fabs(gap),
            pr->change);
    }
    double g = 0;
    const char *what = "";
    long gs = first_gap_step(log, pr->a, pr->b, GAP_DATED, &g, &what);
    if (gs >= 0)
        out(o, "- The %s gap first exceeded 0.05 at step %ld (%s ahead by %.3f there%s).\n", what, gs,
            g > 0 ? pr->la : pr->lb, fabs(g),
            (g > 0 && gap <= -LEVEL) || (g < 0 && gap >= LEVEL) ? "; the lead changed later" : "");
    else if (fabs(gap) > GAP_DATED)
        out(o, "- The %s gap stayed within 0.05 at every evaluated step; it exceeds 0.05 only in the final "
               "measurement.\n", what);
    else
        out(o, "- The %s gap never exceeded 0.05.\n", what);
}

static void read_scale_pair(Out *o, const CompareLog *log, const ScalePair *pr, const Config *cfg, const long *ps,
                            size_t np, long end, int head_dim) {
    const VarLog *S = &log->v[pr->a], *U = &log->v[pr->b];
    read_scale_outcome(o, log, pr, cfg, ps, np, end);
    if (np == 0) {
        out(o, "- No attention probes were recorded (log.attn_interval = %d), so only the losses can be "
               "compared.\n", cfg->attn_interval);
        return;
    }
    long s0 = ps[0], s1 = ps[np - 1];
    char w0[64], w1[64];
    snprintf(w0, sizeof w0, "step %ld%s", s0, s0 == 0 ? " (identical weights)" : "");
    snprintf(w1, sizeof w1, "step %ld%s", s1, s1 == end ? " (end)" : "");
    read_peakedness(o, pr, w0, probe_at(S, s0), probe_at(U, s0));
    if (s1 != s0) read_peakedness(o, pr, w1, probe_at(S, s1), probe_at(U, s1));
    read_survival(o, pr, w0, probe_at(S, s0), probe_at(U, s0));
    if (s1 != s0) read_survival(o, pr, w1, probe_at(S, s1), probe_at(U, s1));
    read_wq(o, pr, w0, probe_at(S, s0), probe_at(U, s0), w1, s1 != s0 ? probe_at(S, s1) : NULL,
            s1 != s0 ? probe_at(U, s1) : NULL, head_dim);
}

static void read_scale(Out *o, const CompareLog *log, const Config *cfg, const long *ps, size_t np, long end,
                       int head_dim) {
    int ref = 0;
    for (int i = log->n - 1; i >= 0; i--)
        if (strcmp(log->v[i].value, "sqrt") == 0) ref = i;
    int first = 1;
    for (int b = 0; b < log->n; b++) {
        if (b == ref) continue;
        ScalePair pr;
        scale_pair(&pr, log, ref, b, head_dim);
        if (log->n > 2) out(o, "%s### %s against %s\n\n", first ? "" : "\n", pr.lb, pr.la);
        first = 0;
        read_scale_pair(o, log, &pr, cfg, ps, np, end, head_dim);
    }
}

// ---------------------------------------------------------------------------------------------
// report.md: the reading of a leak (model.attn_mask, model.softmax_axis). A model that sees the
// future is rewarded by the teacher-forced loss and pays in generation: each variant's
// teacher-forced loss and gen_loss against the correct model's, the gap between its gen_loss and
// its teacher-forced loss on the same windows (the measured size of the cheat), its future_mass.

// How x stands to the reference's r: -2 far below, -1 below, 0 level, 1 above, 2 far above (a
// difference that prints as 0.010 is level, whatever the rounding of the subtraction).
static int standing(double x, double r) {
    double d = x - r, e = 1e-9;
    return d < -FAR - e ? -2 : d < -LEVEL - e ? -1 : d <= LEVEL + e ? 0 : d <= FAR + e ? 1 : 2;
}

// " Its <what> is far below `causal`'s: 1.2050 vs 1.7550 (0.550 lower)." Returns the standing,
// or 3 (and says nothing) when either number is missing.
static int state_against(Out *o, const char *what, double x, double r, const char *ref) {
    static const char *const WORD[5] = {"far below", "below", "level with", "above", "far above"};
    if (!isfinite(x) || !isfinite(r)) return 3;
    int st = standing(x, r);
    out(o, " Its %s is %s %s's: %.4f vs %.4f", what, WORD[st + 2], ref, x, r);
    if (st != 0) out(o, " (%.3f %s)", fabs(x - r), x < r ? "lower" : "higher");
    out(o, ".");
    return st;
}

// The final gen_loss minus the teacher-forced loss on the same windows: the measured size of the
// cheat (NaN when either was not measured).
static double cheat(const VarLog *L) { return L->has_final ? L->final_gen - L->final_gen_tf : NAN; }

// The final gen_loss against the teacher-forced loss on the same windows (or, when that was not
// recorded, against the validation loss `val`, on other windows).
static void read_same_windows(Out *o, const VarLog *L, double val, int correct) {
    double gen = L->has_final ? L->final_gen : NAN, tf = L->has_final ? L->final_gen_tf : NAN;
    if (!isfinite(gen)) return;
    if (!isfinite(tf)) {
        if (isfinite(val))
            out(o, " Its gen_loss is %.4f against a teacher-forced %.4f on other windows (the teacher-forced loss on "
                   "the generation windows was not recorded), a gap of %.3f.", gen, val, gen - val);
        return;
    }
    double c = cheat(L);
    if (fabs(c) <= ROUNDING)
        out(o, " On the same windows its gen_loss and its teacher-forced loss agree up to rounding: %.4f vs %.4f "
               "(difference %.2g)%s.", gen, tf, c, correct ? "" : ": no cheat measured");
    else if (c > 0)
        out(o, " On the same windows its gen_loss is %.3f above its teacher-forced loss (%.4f vs %.4f)%s.", c, gen, tf,
            correct ? ", more than rounding: the correct model should not see the future"
                    : ": the measured size of the cheat");
    else
        out(o, " On the same windows its gen_loss is %.3f *below* its teacher-forced loss (%.4f vs %.4f)%s.", -c, gen,
            tf, correct ? ", more than rounding" : ": no cheat measured");
}

// future_mass at the last common probe.
static void read_future_mass(Out *o, const CompareLog *log, const VarLog *L, const long *ps, size_t np, int correct,
                             int cheat_measured) {
    if (np == 0) {
        out(o, " Its future_mass was not measured (no attention probes).");
        return;
    }
    double fm = stat_or_nan(probe_at(L, ps[np - 1]), offsetof(HeadStats, future_mass));
    if (fm > FUTURE_EPS) {
        out(o, " Its future_mass is %.3g at step %ld: on average %.1f%% of a row's weight lands on positions after "
               "its own%s.", fm, ps[np - 1], 100 * fm, correct ? ", which a causal model must not do" : "");
    } else if (isfinite(fm)) {
        out(o, " Its future_mass is %.3g at step %ld: no weight lands on a position after the query's own", fm,
            ps[np - 1]);
        if (!correct && cheat_measured && strcmp(log->key, "model.softmax_axis") == 0)
            out(o, "; the leak is in the normalisation instead: each weight is divided by a sum over the queries "
                   "that see its key, the later ones included");
        out(o, ".");
    }
}

// A variant that is not the correct model, against the correct one (ref, or -1 when none is).
static void read_leak_variant(Out *o, const CompareLog *log, int i, int ref, const double *val, const double *gen,
                              const char *measure, const long *ps, size_t np) {
    const VarLog *L = &log->v[i];
    char li[96], lr[96];
    label(li, sizeof li, log, i);
    out(o, "- **%s.**", li);
    if (ref >= 0) {
        char what[128];
        label(lr, sizeof lr, log, ref);
        snprintf(what, sizeof what, "teacher-forced %s", measure);
        int sv = state_against(o, what, val[i], val[ref], lr), sg = state_against(o, "gen_loss", gen[i], gen[ref], lr);
        int val_below = sv < 0, gen_above = sg == 1 || sg == 2;
        if (val_below && gen_above)
            out(o, " That is the signature of a leak: the teacher-forced loss rewards seeing the future, and "
                   "generation, which has no future to see, pays for it.");
        else if (val_below && sg != 3)
            out(o, " The teacher-forced loss rewards it, but its gen_loss is not above %s's: generation did not pay "
                   "for seeing the future in this run.", lr);
        else if (gen_above && sv != 3)
            out(o, " Its teacher-forced loss is not below %s's, so the usual loss does not show a cheat here; "
                   "gen_loss shows the cost.", lr);
        else if (sv != 3 && sg != 3)
            out(o, " Neither loss shows the symptom of a leak against %s in this run.", lr);
    } else {
        if (isfinite(val[i])) out(o, " Its teacher-forced %s is %.4f.", measure, val[i]);
        if (isfinite(gen[i])) out(o, " Its gen_loss is %.4f.", gen[i]);
    }
    read_same_windows(o, L, val[i], 0);
    read_future_mass(o, log, L, ps, np, 0, cheat(L) > ROUNDING);
    out(o, "\n");
}

static void read_leak(Out *o, const CompareLog *log, const Config *cfg, const long *ps, size_t np, long end) {
    double val[COMPARE_MAX_VARIANTS], gen[COMPARE_MAX_VARIANTS];
    const char *measure = final_losses(log, end, val);
    int gens = final_gens(log, end, gen);
    int vidx[COMPARE_MAX_VARIANTS];
    order_by(val, log->n, vidx);
    out(o, "- **Ranking.** By the teacher-forced %s, lowest first: ", measure);
    ranking(o, log, val, NULL);
    if (gens) {
        out(o, ". By gen_loss: ");
        int same = ranking(o, log, gen, vidx);
        out(o, same ? ". Both rank the variants the same way.\n"
                    : ". The orders differ: the teacher-forced loss does not rank the models as generation does.\n");
    } else {
        out(o, ". gen_loss was not measured for every variant.\n");
    }
    int ref = -1;
    for (int i = log->n - 1; i >= 0; i--)
        if (variant_is_correct(log, cfg, i)) ref = i;
    if (ref >= 0) {
        char lr[96];
        out(o, "- **%s is the correct model** (the causal mask, the softmax over the keys): a position sees only "
               "itself and the past.", label(lr, sizeof lr, log, ref));
        read_same_windows(o, &log->v[ref], val[ref], 1);
        read_future_mass(o, log, &log->v[ref], ps, np, 1, 0);
        out(o, "\n");
    } else {
        out(o, "- **No variant here is the correct model** (model.attn_mask = causal with model.softmax_axis = keys), "
               "so each is read on its own numbers.\n");
    }
    for (int i = 0; i < log->n; i++)
        if (i != ref) read_leak_variant(o, log, i, ref, val, gen, measure, ps, np);
}

// ---------------------------------------------------------------------------------------------
// report.md: the reading of any other key: the final losses, which variant ends ahead and by how
// much, when the gaps opened, and whether gen_loss tells the same story.

static void read_other(Out *o, const CompareLog *log, long end) {
    double fl[COMPARE_MAX_VARIANTS], gen[COMPARE_MAX_VARIANTS];
    int idx[COMPARE_MAX_VARIANTS];
    char lw[96], lj[96];
    const char *measure = final_losses(log, end, fl);
    order_by(fl, log->n, idx);
    out(o, "- **Final %s**, lowest first: ", measure);
    ranking(o, log, fl, NULL);
    out(o, ".\n");
    int w = idx[0];
    if (!isfinite(fl[w])) {
        out(o, "- No variant has a finite final loss, so the outcome cannot be compared.\n");
        return;
    }
    label(lw, sizeof lw, log, w);
    double widest = 0;
    for (int r = 1; r < log->n; r++)
        if (isfinite(fl[idx[r]]) && fl[idx[r]] - fl[w] > widest) widest = fl[idx[r]] - fl[w];
    if (widest <= LEVEL) {
        out(o, "- **The variants end level**: every final loss is within 0.01 of %s's %.4f.\n", lw, fl[w]);
    } else {
        out(o, "- **%s ends ahead.** Its final loss is lower than ", lw);
        for (int r = 1; r < log->n; r++) {
            int j = idx[r];
            if (r > 1) out(o, r + 1 == log->n ? " and " : ", ");
            label(lj, sizeof lj, log, j);
            double d = fl[j] - fl[w];
            if (!isfinite(d)) out(o, "%s's (which has none)", lj);
            else if (d <= LEVEL) out(o, "%s's by only %.3f (level, within 0.01)", lj, d);
            else out(o, "%s's by %.3f (%.1f%% below it)", lj, d, 100 * d / fl[j]);
        }
        out(o, ".\n");
    }
    for (int r = 1; r < log->n; r++) {
        int j = idx[r];
        double g = 0;
        const char *what = "";
        long gs = first_gap_step(log, w, j, GAP_DATED, &g, &what);
        label(lj, sizeof lj, log, j);
        double d = fl[j] - fl[w];
        if (gs >= 0)
            out(o, "- The %s gap between %s and %s first exceeded 0.05 at step %ld (%s ahead by %.3f there%s).\n", what,
                lw, lj, gs, g > 0 ? lw : lj, fabs(g), g < 0 && d > LEVEL ? "; the lead changed later" : "");
        else if (fabs(d) > GAP_DATED)
            out(o, "- The %s gap between %s and %s stayed within 0.05 at every evaluated step; it exceeds 0.05 only "
                   "in the final measurement.\n", what, lw, lj);
        else
            out(o, "- The %s gap between %s and %s never exceeded 0.05.\n", what, lw, lj);
    }
    if (final_gens(log, end, gen)) {
        out(o, "- **gen_loss**, lowest first: ");
        int same = ranking(o, log, gen, idx);
        out(o, same ? ": the same order as the %s.\n" : ": a different order from the %s.\n", measure);
    }
    // the same windows: any gap is a model seeing the future
    int honest = 0;
    double largest = 0;
    for (int i = 0; i < log->n; i++) {
        const VarLog *L = &log->v[i];
        double c = cheat(L);
        if (!isfinite(c)) continue;
        if (fabs(c) <= ROUNDING) {
            honest++;
            if (fabs(c) > largest) largest = fabs(c);
        } else {
            out(o, "- On the same windows %s's gen_loss is %.3f %s its teacher-forced loss (%.4f vs %.4f)%s.\n",
                label(lj, sizeof lj, log, i), fabs(c), c > 0 ? "above" : "below", L->final_gen, L->final_gen_tf,
                c > 0 ? ": it sees the future, and its teacher-forced losses flatter it" : "");
        }
    }
    if (honest == log->n)
        out(o, "- For every variant gen_loss and the teacher-forced loss on the same windows agree up to rounding "
               "(largest difference %.2g): none sees the future.\n", largest);
}

// ---------------------------------------------------------------------------------------------
// report.md: the document

// The table's columns after `step`; `honest` ones (gen_loss, future_mass) are left out of the
// scale's report, whose table stays as --compare-scaling has always written it.
typedef enum { MD_VAL, MD_GEN, MD_TRAIN, MD_PROBE } MdSource;

static const struct {
    const char *head;
    const char *fmt;
    double mult;
    MdSource src;
    size_t off;  // MD_PROBE: into HeadStats
    int honest;
} MD_COLS[] = {
    {"val loss", "%.4f", 1, MD_VAL, 0, 0},
    {"gen loss", "%.4f", 1, MD_GEN, 0, 1},
    {"train loss", "%.4f", 1, MD_TRAIN, 0, 0},
    {"future mass", "%.3g", 1, MD_PROBE, offsetof(HeadStats, future_mass), 1},
    {"entropy_norm", "%.3f", 1, MD_PROBE, offsetof(HeadStats, entropy_norm), 0},
    {"max weight", "%.3f", 1, MD_PROBE, offsetof(HeadStats, max_weight), 0},
    {"rows > 0.99", "%.1f%%", 100, MD_PROBE, offsetof(HeadStats, frac_gt_099), 0},
    {"score std", "%.3g", 1, MD_PROBE, offsetof(HeadStats, score_std), 0},
    {"‖dS‖/‖dP‖", "%.3g", 1, MD_PROBE, offsetof(HeadStats, ds_over_dp), 0},
    {"row gain (median)", "%.3g", 1, MD_PROBE, offsetof(HeadStats, row_gain_median), 0},
    {"‖dWq‖", "%.3g", 1, MD_PROBE, offsetof(HeadStats, gnorm_wq), 0},
};
#define N_MD_COLS (sizeof MD_COLS / sizeof MD_COLS[0])

static int md_col_shown(const CompareLog *log, size_t c) { return !MD_COLS[c].honest || log->kind != KIND_SCALE; }

// Column c of variant L's row at step s (the whole-split losses at the end; the probe batch's
// loss as the training loss before any step).
static double md_value(const VarLog *L, size_t c, long s, long end) {
    const HeadStats *p = probe_at(L, s);
    switch (MD_COLS[c].src) {
    case MD_VAL: return s == end && L->has_final && isfinite(L->final_val) ? L->final_val : val_upto(L, s);
    case MD_GEN: return s == end && L->has_final && isfinite(L->final_gen) ? L->final_gen : gen_upto(L, s);
    case MD_TRAIN: return steps_upto(L, s) == 0 && p ? p->loss : train_avg_upto(L, s);
    case MD_PROBE: return MD_COLS[c].mult * stat_or_nan(p, MD_COLS[c].off);
    }
    return NAN;
}

// The steps the table shows: the first and last probes, the probes nearest to a quarter, half
// and three quarters of the run, and the end (into rows, at least 8; returns the count).
static size_t table_steps(const CompareLog *log, const long *ps, size_t np, long end, long *rows) {
    const VarLog *S = &log->v[0];
    size_t nr = 0;
    if (np > 0) {
        rows[nr++] = ps[0];
        for (int q = 1; q <= 3; q++) rows[nr++] = nearest(ps, np, 0.25 * q * (double)end);
        rows[nr++] = ps[np - 1];
    } else if (S->n_steps > 0) {  // no probes: pick the rows from the loss steps
        long *ls = xmalloc(S->n_steps * sizeof(long), "table steps");
        for (size_t i = 0; i < S->n_steps; i++) ls[i] = S->steps[i].k.step;
        for (int q = 1; q <= 3; q++) rows[nr++] = nearest(ls, S->n_steps, 0.25 * q * (double)end);
        free(ls);
    }
    rows[nr++] = end;
    qsort(rows, nr, sizeof(long), cmp_long);
    size_t k = 0;
    for (size_t i = 0; i < nr; i++)
        if (k == 0 || rows[k - 1] != rows[i]) rows[k++] = rows[i];
    return k;
}

static void md_table(Out *o, const CompareLog *log, const long *ps, size_t np, long end) {
    long rows[8];
    size_t nr = table_steps(log, ps, np, end, rows);
    out(o, "## Side by side\n\nEach cell: **");
    for (int v = 0; v < log->n; v++) out(o, "%s%s", v ? " / " : "", log->v[v].name);
    out(o, "**.\n\n| step |");
    for (size_t c = 0; c < N_MD_COLS; c++)
        if (md_col_shown(log, c)) out(o, " %s |", MD_COLS[c].head);
    out(o, "\n|:---|");
    for (size_t c = 0; c < N_MD_COLS; c++)
        if (md_col_shown(log, c)) out(o, "---:|");
    out(o, "\n");
    for (size_t i = 0; i < nr; i++) {
        long s = rows[i];
        out(o, "| %ld%s |", s, s == end ? " (end)" : s == 0 ? " (init)" : "");
        for (size_t c = 0; c < N_MD_COLS; c++) {
            if (!md_col_shown(log, c)) continue;
            double x[COMPARE_MAX_VARIANTS];
            for (int v = 0; v < log->n; v++) x[v] = md_value(&log->v[v], c, s, end);
            cell(o, MD_COLS[c].fmt, x, log->n);
        }
        out(o, "\n");
    }
    out(o, "\nval loss: the last evaluation at or before the step; at the end, the whole validation split. "
           "train loss: mean of the last %d training losses up to the step (at step 0, the loss of the fixed "
           "probe batch before any update). Attention columns are averages over all layers and heads on the "
           "fixed probe batch; — = not measured at that step. entropy_norm: row entropy / ln(visible keys), "
           "1 = uniform, 0 = one-hot. ‖dS‖/‖dP‖: the fraction of the gradient reaching the weights P that "
           "survives the softmax into the scores S, over whole heads; row gain: the same per row, median over "
           "rows. ‖dWq‖: the norm of the gradient of the whole query matrix.", TRAIN_AVG_WINDOW);
    if (log->kind != KIND_SCALE)
        out(o, " gen loss: the honest loss on the fixed generation windows, each character predicted from the "
               "characters before it only, as in generation (val loss and train loss are teacher-forced: every "
               "position is computed with the whole window in view); the last evaluation at or before the step, "
               "at the end the final one. future mass: the mean weight a row puts on positions after its own (0 "
               "for a causal model).");
    out(o, "\n\n");
}

// What a variant of the scale or a leak computes, for the introduction.
static void md_variant_meaning(Out *o, const CompareLog *log, int i, int head_dim) {
    const VarLog *v = &log->v[i];
    const char *what = value_meaning(log->key, v->value);
    out(o, "**%s** ", v->name);
    int scale = log->kind == KIND_SCALE;
    if (what) out(o, "%s", what);
    else if (scale && strcmp(v->value, "sqrt") == 0)
        out(o, "multiplies the attention scores Q·Kᵀ by 1/sqrt(d_k) = 1/sqrt(%d) = %.4g", head_dim,
            config_scale_factor(v->value, head_dim));
    else if (scale && strcmp(v->value, "none") == 0) out(o, "does not scale the attention scores");
    else if (scale) out(o, "multiplies the attention scores by %s", v->value);
    else out(o, "has `%s` = %s", log->key, v->value);
}

static void variant_value(Out *o, const void *ctx, int i) {
    const CompareLog *log = ctx;
    out(o, "**%s**", log->v[i].value);
}

static void md_intro(Out *o, const CompareLog *log, const Config *cfg, int head_dim) {
    const char *run = cfg->name[0] ? cfg->name : "comparison";
    if (is_textbook_scale(log)) {
        out(o, "# Attention scale: 1/sqrt(d_k) vs none — %s\n\n", run);
        out(o, "Two models trained side by side from identical initial weights on identical batches. The only "
               "difference: **scaled** multiplies the attention scores Q·Kᵀ by 1/sqrt(d_k) = 1/sqrt(%d) = %.4g; "
               "**unscaled** does not.\n\n", head_dim, config_scale_factor("sqrt", head_dim));
        return;
    }
    if (log->title) out(o, "# %s: ", log->title);
    else out(o, "# `%s`: ", log->key);
    for (int i = 0; i < log->n; i++) out(o, "%s%s", i ? " vs " : "", log->v[i].value);
    out(o, " — %s\n\n", run);
    out(o, "%s models trained side by side from identical initial weights on identical batches. The only "
           "difference is `%s`: ", COUNT_TITLE[log->n], log->key);
    if (log->kind == KIND_OTHER) {
        join(o, log->n, variant_value, log);
    } else {
        for (int i = 0; i < log->n; i++) {
            if (i > 0) out(o, "; ");
            md_variant_meaning(o, log, i, head_dim);
        }
    }
    out(o, ".");
    // the attention settings the variants share
    static const struct { const char *key; size_t off; } SHARED[] = {
        {"model.attn_scale", offsetof(Config, attn_scale_str)},
        {"model.attn_mask", offsetof(Config, attn_mask)},
        {"model.softmax_axis", offsetof(Config, softmax_axis)},
    };
    int first = 1;
    for (size_t k = 0; k < sizeof SHARED / sizeof SHARED[0]; k++) {
        if (strcmp(SHARED[k].key, log->key) == 0) continue;
        out(o, "%s`%s` = %s", first ? " Shared by all: " : ", ", SHARED[k].key, (const char *)cfg + SHARED[k].off);
        first = 0;
    }
    out(o, "%s\n\n", first ? "" : ".");
}

static void md_config(Out *o, const Config *cfg, int head_dim) {
    out(o, "## Configuration\n\n");
    out(o, "| n_layer | n_head | n_embd | head_dim | block_size | batch_size | max_steps | init | lr | seed |\n");
    out(o, "|---:|---:|---:|---:|---:|---:|---:|:---|---:|---:|\n");
    out(o, "| %d | %d | %d | %d | %d | %d | %d | %s | %g | %d |\n\n", cfg->n_layer, cfg->n_head, cfg->n_embd,
        head_dim, cfg->block_size, cfg->batch_size, cfg->max_steps, cfg->init, cfg->lr, cfg->seed);
    out(o, "Data: `%s`. Attention probed every %d steps, validation every %d steps.\n\n", cfg->data_path,
        cfg->attn_interval, cfg->eval_interval);
}

// A fence of backticks longer than any run of backticks in the text, so the text needs no escaping.
static int fence_length(const char *s) {
    int longest = 0, run = 0;
    for (; *s; s++) {
        run = *s == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    return longest < 3 ? 3 : longest + 1;
}

static void md_samples(Out *o, const CompareLog *log) {
    int any = 0;
    for (int i = 0; i < log->n; i++) any |= log->v[i].sample != NULL;
    if (!any) return;
    out(o, "\n## Samples\n\nThe text each variant generated at the end of training, as the run printed it.\n");
    for (int i = 0; i < log->n; i++) {
        const char *s = log->v[i].sample;
        out(o, "\n**%s**:\n\n", log->v[i].name);
        if (!s) {
            out(o, "(no sample)\n");
            continue;
        }
        int fl = fence_length(s);
        size_t n = strlen(s);
        for (int k = 0; k < fl; k++) out(o, "`");
        out(o, "\n%s%s", s, n > 0 && s[n - 1] == '\n' ? "" : "\n");
        for (int k = 0; k < fl; k++) out(o, "`");
        out(o, "\n");
    }
}

typedef struct {
    const CompareLog *log;
    const char *file;
} VariantFile;

static void variant_file(Out *o, const void *ctx, int i) {
    const VariantFile *vf = ctx;
    out(o, "`%s/%s`", vf->log->v[i].name, vf->file);
}

static void panel_summary(Out *o, const void *ctx, int k) {
    const CompareLog *log = ctx;
    for (size_t i = 0; i < N_PANELS; i++)
        if (panel_shown(log, i) && k-- == 0) out(o, "%s", PANELS[i].summary);
}

static void md_files(Out *o, const CompareLog *log) {
    char all[32];
    if (log->n == 2) snprintf(all, sizeof all, "both variants");
    else snprintf(all, sizeof all, "all %s variants", COUNT_WORD[log->n]);
    int np = 0;
    for (size_t i = 0; i < N_PANELS; i++) np += panel_shown(log, i);
    out(o, "\n## Files\n\n- `%s`: ", compare_svg_name(log));
    join(o, np, panel_summary, log);
    out(o, " over training, %s overlaid.\n", all);
    out(o, "- `compare.csv`: every step of %s (losses, and the attention averages where probed).\n", all);
    VariantFile attention = {log, "attention.csv"}, metrics = {log, "metrics.csv"};
    out(o, "- ");
    join(o, log->n, variant_file, &attention);
    out(o, ": the statistics per layer and head at every probe; ");
    join(o, log->n, variant_file, &metrics);
    out(o, ": the training logs.\n");
}

// The whole of report.md.
static void md_document(Out *o, const CompareLog *log, const Config *cfg) {
    int head_dim = cfg->n_head > 0 ? cfg->n_embd / cfg->n_head : 0;
    long end = last_step(log);
    size_t np = 0;
    long *ps = common_probe_steps(log, &np);
    md_intro(o, log, cfg, head_dim);
    md_config(o, cfg, head_dim);
    md_table(o, log, ps, np, end);
    out(o, "## What the numbers show\n\n");
    if (log->kind == KIND_SCALE) read_scale(o, log, cfg, ps, np, end, head_dim);
    else if (log->kind == KIND_LEAK) read_leak(o, log, cfg, ps, np, end);
    else read_other(o, log, end);
    free(ps);
    if (log->kind != KIND_SCALE) md_samples(o, log);
    md_files(o, log);
}

// report.md's text, built in memory (report.html shows the same): malloc'd, or NULL with a
// message in err.
static char *md_text(const CompareLog *log, const Config *cfg, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    Out o = {open_memstream(&text, &len), 1, 0};
    if (!o.f) {
        snprintf(err, errlen, "cannot build report.md in memory: %s", strerror(errno ? errno : ENOMEM));
        return NULL;
    }
    md_document(&o, log, cfg);
    int ok = o.ok && !ferror(o.f);
    if (fclose(o.f) != 0 || !ok) {
        snprintf(err, errlen, "cannot build report.md in memory: %s", strerror(o.err_no ? o.err_no : ENOMEM));
        free(text);
        return NULL;
    }
    return text;
}

static int write_md(const CompareLog *log, const char *md, char *err, size_t errlen) {
    char path[2200];
    Out o;
    if (!out_open(&o, log->out_dir, "report.md", path, sizeof path, err, errlen)) return 0;
    out(&o, "%s", md);
    return out_close(&o, path, err, errlen);
}

// ---------------------------------------------------------------------------------------------
// the SVG: one panel per PANELS row, sharing the step axis. Each variant has its colour and its
// dash pattern; within a panel, the main measure is drawn thick (with markers where few) and a
// second measure thin and faded.

#define SVG_W 900
#define PLOT_X0 82.0
#define PLOT_X1 872.0
#define PANEL_TOP 118.0
#define PANEL_H 168.0
#define PANEL_PITCH 220.0

static const char *const COLOR[COMPARE_MAX_VARIANTS] = {"#1f66b0", "#e0620d", "#2a9d3c", "#8e44ad"};
static const char *const DASH[COMPARE_MAX_VARIANTS] = {NULL, "7 4", "2 3", "10 3 2 3"};

typedef struct {
    double x0, y0, w, h;     // plot area in pixels
    double xmin, xmax;
    double ymin, ymax;       // data units, or log10 decades when logy
    int logy;
    int id;
} Panel;

// How a measure is drawn: the main one thick with markers, a second one thin and faded.
typedef struct {
    double width, opacity, marker_r;  // marker_r 0: no markers
} LineStyle;

static const LineStyle MAIN_LINE = {2, 1, 2.6}, SECOND_LINE = {1.2, 0.55, 0};

static double px(const Panel *p, double x) { return p->x0 + (x - p->xmin) / (p->xmax - p->xmin) * p->w; }
static double py(const Panel *p, double y) {
    double t = p->logy ? (log10(y) - p->ymin) / (p->ymax - p->ymin) : (y - p->ymin) / (p->ymax - p->ymin);
    return p->y0 + p->h - t * p->h;
}
static int usable(const Panel *p, double y) { return isfinite(y) && (!p->logy || y > 0); }

// Text with XML special characters escaped.
static void xml_text(Out *o, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': out(o, "&amp;"); break;
        case '<': out(o, "&lt;"); break;
        case '>': out(o, "&gt;"); break;
        case '"': out(o, "&quot;"); break;
        default:
            if ((unsigned char)*s < 0x20) out(o, " ");
            else out(o, "%c", *s);
        }
    }
}

static double nice_step(double range, int target) {
    if (!(range > 0)) return 1;
    double raw = range / target, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

// Decimals needed to print multiples of `step`.
static int step_decimals(double step) {
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 6 ? 6 : d;
}

// The stroke attributes of variant v's line in a style.
static void stroke_attrs(char *buf, size_t n, int v, LineStyle st) {
    char op[48] = "", dash[48] = "";
    if (st.opacity < 1) snprintf(op, sizeof op, " stroke-opacity=\"%.2f\"", st.opacity);
    if (DASH[v]) snprintf(dash, sizeof dash, " stroke-dasharray=\"%s\"", DASH[v]);
    snprintf(buf, n, "stroke=\"%s\" stroke-width=\"%.1f\"%s%s stroke-linejoin=\"round\"", COLOR[v], st.width, op, dash);
}

// A polyline through (x[i], y[i]), broken where y is not drawable.
static void svg_series(Out *o, const Panel *p, const double *x, const double *y, size_t n, const char *attrs) {
    int pen = 0;
    size_t drawn = 0;
    for (size_t i = 0; i < n; i++) {
        if (!usable(p, y[i])) { pen = 0; continue; }
        if (drawn == 0) out(o, "<path d=\"");
        out(o, "%c%.1f %.1f", pen ? 'L' : 'M', px(p, x[i]), py(p, y[i]));
        pen = 1;
        drawn++;
    }
    if (drawn) out(o, "\" fill=\"none\" %s/>\n", attrs);
}

static void svg_markers(Out *o, const Panel *p, const double *x, const double *y, size_t n, const char *color,
                        double r) {
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++) cnt += usable(p, y[i]);
    if (cnt == 0 || cnt > 80) return;
    out(o, "<g fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.8\">", color);
    for (size_t i = 0; i < n; i++)
        if (usable(p, y[i])) out(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>", px(p, x[i]), py(p, y[i]), r);
    out(o, "</g>\n");
}

// Variant v's curve in a style: the line, and its markers when the style has them. Returns
// whether any point was drawable.
static int svg_curve(Out *o, const Panel *p, const double *x, const double *y, size_t n, int v, LineStyle st) {
    char attrs[200];
    int has = 0;
    for (size_t i = 0; i < n; i++) has |= usable(p, y[i]);
    stroke_attrs(attrs, sizeof attrs, v, st);
    svg_series(o, p, x, y, n, attrs);
    if (st.marker_r > 0) svg_markers(o, p, x, y, n, COLOR[v], st.marker_r);
    return has;
}

// Frame, grid, ticks, title and labels of a panel; opens its clipped group for the data.
static void svg_panel_begin(Out *o, const Panel *p, const char *title, const char *ylabel, int x_label) {
    double x1 = p->x0 + p->w, y1 = p->y0 + p->h;
    out(o, "<g>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\" fill=\"#222\">", p->x0,
        p->y0 - 10);
    xml_text(o, title);
    out(o, "</text>\n");
    out(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fcfcfc\" stroke=\"none\"/>\n", p->x0,
        p->y0, p->w, p->h);
    // y grid and tick labels
    out(o, "<g font-size=\"11\" fill=\"#555\" text-anchor=\"end\">\n");
    if (p->logy) {
        int lo = (int)p->ymin, hi = (int)p->ymax, span = hi - lo, every = span > 8 ? 2 : 1;
        for (int d = lo; d <= hi; d++) {
            double y = py(p, pow(10, d));
            out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>", p->x0, y, x1, y);
            if ((d - lo) % every == 0)
                out(o, "<text x=\"%.1f\" y=\"%.1f\">1e%d</text>\n", p->x0 - 6, y + 4, d);
            if (span <= 6 && d < hi)
                for (int m = 2; m <= 9; m++) {
                    double ym = py(p, m * pow(10, d));
                    out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#f0f0f0\"/>", p->x0, ym, x1, ym);
                    if (span <= 2 && (m == 2 || m == 5))  // few decades: label 2 and 5 as well
                        out(o, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#888\">%de%d</text>", p->x0 - 6, ym + 4, m, d);
                }
        }
    } else {
        double st = nice_step(p->ymax - p->ymin, 5);
        int dec = step_decimals(st);
        for (long k = (long)ceil(p->ymin / st - 1e-9); k * st <= p->ymax + 1e-9 * st; k++) {
            double v = k * st, y = py(p, v);
            out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>", p->x0, y, x1, y);
            out(o, "<text x=\"%.1f\" y=\"%.1f\">%.*f</text>\n", p->x0 - 6, y + 4, dec, v);
        }
    }
    out(o, "</g>\n");
    // x grid and tick labels
    out(o, "<g font-size=\"11\" fill=\"#555\" text-anchor=\"middle\">\n");
    double st = nice_step(p->xmax - p->xmin, 8);
    if (st < 1) st = 1;
    for (long k = 0; k * st <= p->xmax + 1e-9; k++) {
        double x = px(p, k * st);
        out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eeeeee\"/>", x, p->y0, x, y1);
        out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>", x, y1, x, y1 + 4);
        out(o, "<text x=\"%.1f\" y=\"%.1f\">%.0f</text>\n", x, y1 + 16, k * st);
    }
    out(o, "</g>\n");
    out(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#888\"/>\n", p->x0,
        p->y0, p->w, p->h);
    out(o, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" font-size=\"12\" fill=\"#333\" "
           "text-anchor=\"middle\">", 24.0, p->y0 + p->h / 2);
    xml_text(o, ylabel);
    out(o, "</text>\n");
    if (x_label)
        out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#333\" text-anchor=\"middle\">step</text>\n",
            p->x0 + p->w / 2, y1 + 34);
    out(o, "<clipPath id=\"clip%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath>\n",
        p->id, p->x0 - 4, p->y0 - 4, p->w + 8, p->h + 8);
    out(o, "<g clip-path=\"url(#clip%d)\">\n", p->id);
}

static void svg_panel_end(Out *o, const Panel *p, int has_data) {
    out(o, "</g>\n");
    if (!has_data)
        out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" fill=\"#999\" text-anchor=\"middle\">no data</text>\n",
            p->x0 + p->w / 2, p->y0 + p->h / 2 + 5);
    out(o, "</g>\n");
}

// Estimated width in pixels of a label at about 11 px (UTF-8 code points x 6.1).
static double text_width(const char *s, double per_char) {
    size_t chars = 0;
    for (; *s; s++) chars += ((unsigned char)*s & 0xC0) != 0x80;
    return per_char * (double)chars;
}

// A key to a panel's measures at the right of its title row, drawn in grey.
typedef struct {
    LineStyle style;
    const char *label;
} KeyItem;

static void svg_measure_key(Out *o, const Panel *p, const KeyItem *items, int n) {
    // laid out right to left
    double x = p->x0 + p->w;
    double y = p->y0 - 14;
    for (int i = n - 1; i >= 0; i--) {
        x -= text_width(items[i].label, 6.1);
        out(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444\">", x, y + 4);
        xml_text(o, items[i].label);
        out(o, "</text>");
        x -= 30;
        out(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" stroke-width=\"%.1f\"", x, y,
            x + 24, y, items[i].style.width);
        if (items[i].style.opacity < 1) out(o, " stroke-opacity=\"%.2f\"", items[i].style.opacity);
        out(o, "/>");
        if (items[i].style.marker_r > 0) out(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.8\" fill=\"#555\"/>", x + 12, y);
        out(o, "\n");
        x -= 18;
    }
}

// The probe series of one statistic for one variant, as (step, value) arrays; returns the count.
static size_t probe_curve(const VarLog *v, size_t off, double *x, double *y) {
    for (size_t i = 0; i < v->n_probes; i++) {
        x[i] = (double)v->probes[i].k.step;
        y[i] = stat_or_nan(&v->probes[i].s, off);
    }
    return v->n_probes;
}

// The evaluated (finite) values of a step field (val or gen) as (step, value); returns the count.
static size_t evaluated_curve(const VarLog *v, size_t field, double *x, double *y) {
    size_t n = 0;
    for (size_t i = 0; i < v->n_steps; i++) {
        double val;
        memcpy(&val, (const char *)&v->steps[i] + field, sizeof val);
        if (!isfinite(val)) continue;
        x[n] = (double)v->steps[i].k.step;
        y[n++] = val;
    }
    return n;
}

// The training loss as a trailing moving average over `win` steps, every `stride`-th step,
// starting from the step-0 probe loss so that every variant starts at the same point.
static size_t train_curve(const VarLog *v, size_t win, size_t stride, double *x, double *y) {
    size_t n = 0, cnt = 0;
    double sum = 0;
    if (v->n_probes && v->probes[0].k.step == 0 && isfinite(v->probes[0].s.loss)) {
        x[n] = 0;
        y[n++] = v->probes[0].s.loss;
    }
    for (size_t i = 0; i < v->n_steps; i++) {
        double l = v->steps[i].loss;
        if (isfinite(l)) { sum += l; cnt++; }
        if (i >= win) {
            double old = v->steps[i - win].loss;
            if (isfinite(old)) { sum -= old; cnt--; }
        }
        if ((i % stride == 0 || i + 1 == v->n_steps) && cnt > 0) {
            x[n] = (double)v->steps[i].k.step;
            y[n++] = sum / (double)cnt;
        }
    }
    return n;
}

// Widen [*lo, *hi] to the finite values of y.
static void extend(double *lo, double *hi, const double *y, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (isfinite(y[i])) {
            if (y[i] < *lo) *lo = y[i];
            if (y[i] > *hi) *hi = y[i];
        }
}

// A linear y axis over [lo, hi] with a little room and round ends (a unit range when empty).
static void linear_range(Panel *p, double lo, double hi) {
    if (!(lo <= hi)) { lo = 0; hi = 1; }
    if (hi - lo < 1e-6) { lo -= 0.5; hi += 0.5; }
    double pad = 0.04 * (hi - lo), st = nice_step(hi - lo + 2 * pad, 5);
    p->ymin = floor((lo - pad) / st) * st;
    p->ymax = ceil((hi + pad) / st) * st;
}

// Scratch for the curves: room for any variant's steps or probes.
typedef struct {
    double *x, *y;
} Scratch;

static void draw_loss(Out *o, const CompareLog *log, Panel *p, const char *title, const char *ylabel, int x_label,
                      Scratch *sc) {
    size_t nmax = 0;
    for (int v = 0; v < log->n; v++)
        if (log->v[v].n_steps > nmax) nmax = log->v[v].n_steps;
    size_t win = nmax / 100 > 1 ? nmax / 100 : 1;
    size_t stride = nmax > 1200 ? (nmax + 1199) / 1200 : 1;
    const LineStyle train = SECOND_LINE, val = {2.2, 1, 3.2};
    double lo = INFINITY, hi = -INFINITY;
    for (int v = 0; v < log->n; v++) {
        extend(&lo, &hi, sc->y, train_curve(&log->v[v], win, stride, sc->x, sc->y));
        extend(&lo, &hi, sc->y, evaluated_curve(&log->v[v], offsetof(StepRec, val), sc->x, sc->y));
    }
    linear_range(p, lo, hi);
    svg_panel_begin(o, p, title, ylabel, x_label);
    for (int v = 0; v < log->n; v++)
        svg_curve(o, p, sc->x, sc->y, train_curve(&log->v[v], win, stride, sc->x, sc->y), v, train);
    for (int v = 0; v < log->n; v++)
        svg_curve(o, p, sc->x, sc->y, evaluated_curve(&log->v[v], offsetof(StepRec, val), sc->x, sc->y), v, val);
    svg_panel_end(o, p, lo <= hi);
    char tl[64];
    if (win > 1) snprintf(tl, sizeof tl, "train (%zu-step moving average)", win);
    else snprintf(tl, sizeof tl, "train");
    KeyItem keys[2] = {{train, tl}, {val, "validation"}};
    svg_measure_key(o, p, keys, 2);
}

// A statistic between 0 and 1 from the probes, with an optional second one drawn thin.
static void draw_unit_stat(Out *o, const CompareLog *log, Panel *p, const char *title, const char *ylabel,
                           int x_label, Scratch *sc, size_t off, size_t second_off, const KeyItem *keys) {
    p->ymin = 0;
    p->ymax = 1;
    svg_panel_begin(o, p, title, ylabel, x_label);
    int has = 0;
    for (int v = 0; v < log->n; v++) {
        has |= svg_curve(o, p, sc->x, sc->y, probe_curve(&log->v[v], off, sc->x, sc->y), v, MAIN_LINE);
        if (keys) svg_curve(o, p, sc->x, sc->y, probe_curve(&log->v[v], second_off, sc->x, sc->y), v, SECOND_LINE);
    }
    svg_panel_end(o, p, has);
    if (keys) svg_measure_key(o, p, keys, 2);
}

// The gradient surviving the softmax, whole heads and the median row, on log y.
static void draw_gradient(Out *o, const CompareLog *log, Panel *p, const char *title, const char *ylabel,
                          int x_label, Scratch *sc) {
    const size_t offs[2] = {offsetof(HeadStats, ds_over_dp), offsetof(HeadStats, row_gain_median)};
    double lo = INFINITY, hi = -INFINITY;
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++) {
            size_t n = probe_curve(&log->v[v], offs[j], sc->x, sc->y);
            for (size_t i = 0; i < n; i++)
                if (isfinite(sc->y[i]) && sc->y[i] > 0) {
                    if (sc->y[i] < lo) lo = sc->y[i];
                    if (sc->y[i] > hi) hi = sc->y[i];
                }
        }
    int has = lo <= hi;
    double dlo = has ? floor(log10(lo)) : -3, dhi = has ? ceil(log10(hi)) : 0;
    if (dhi <= dlo) dhi = dlo + 1;
    if (dhi - dlo > 16) dlo = dhi - 16;
    p->logy = 1;
    p->ymin = dlo;
    p->ymax = dhi;
    svg_panel_begin(o, p, title, ylabel, x_label);
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++)
            svg_curve(o, p, sc->x, sc->y, probe_curve(&log->v[v], offs[j], sc->x, sc->y), v,
                      j ? SECOND_LINE : MAIN_LINE);
    svg_panel_end(o, p, has);
    KeyItem keys[2] = {{MAIN_LINE, "whole head (‖dS‖/‖dP‖)"}, {SECOND_LINE, "median row gain"}};
    svg_measure_key(o, p, keys, 2);
}

// gen_loss (thick) against the teacher-forced validation loss (thin) at the evaluations.
static void draw_gen_loss(Out *o, const CompareLog *log, Panel *p, const char *title, const char *ylabel,
                          int x_label, Scratch *sc) {
    const size_t fields[2] = {offsetof(StepRec, gen), offsetof(StepRec, val)};
    const LineStyle styles[2] = {MAIN_LINE, {1.2, 0.55, 2.2}};
    double lo = INFINITY, hi = -INFINITY;
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++) extend(&lo, &hi, sc->y, evaluated_curve(&log->v[v], fields[j], sc->x, sc->y));
    linear_range(p, lo, hi);
    svg_panel_begin(o, p, title, ylabel, x_label);
    int has = 0;
    for (int v = 0; v < log->n; v++)
        for (int j = 0; j < 2; j++)
            has |= svg_curve(o, p, sc->x, sc->y, evaluated_curve(&log->v[v], fields[j], sc->x, sc->y), v, styles[j]);
    svg_panel_end(o, p, has);
    KeyItem keys[2] = {{styles[0], "gen_loss (past only)"}, {styles[1], "val_loss (teacher-forced)"}};
    svg_measure_key(o, p, keys, 2);
}

// future_mass from the probes, from 0 up.
static void draw_future_mass(Out *o, const CompareLog *log, Panel *p, const char *title, const char *ylabel,
                             int x_label, Scratch *sc) {
    const size_t off = offsetof(HeadStats, future_mass);
    double lo = 0, hi = -INFINITY;
    for (int v = 0; v < log->n; v++) extend(&lo, &hi, sc->y, probe_curve(&log->v[v], off, sc->x, sc->y));
    linear_range(p, 0, hi > 0 ? hi : 0.1);
    p->ymin = 0;
    svg_panel_begin(o, p, title, ylabel, x_label);
    int has = 0;
    for (int v = 0; v < log->n; v++)
        has |= svg_curve(o, p, sc->x, sc->y, probe_curve(&log->v[v], off, sc->x, sc->y), v, MAIN_LINE);
    svg_panel_end(o, p, has);
}

// A variant's name in the SVG's key.
static void svg_variant_label(char *buf, size_t n, const CompareLog *log, const Config *cfg, int i) {
    const VarLog *v = &log->v[i];
    const char *dot = strrchr(log->key, '.');
    if (log->kind == KIND_SCALE && strcmp(v->value, "sqrt") == 0) snprintf(buf, n, "scaled (scores × 1/√d_k)");
    else if (log->kind == KIND_SCALE && strcmp(v->value, "none") == 0) snprintf(buf, n, "unscaled (scores × 1)");
    else if (log->kind == KIND_SCALE) snprintf(buf, n, "%s (scores × %s)", v->name, v->value);
    else if (log->kind == KIND_LEAK)
        snprintf(buf, n, "%s%s", v->name, variant_is_correct(log, cfg, i) ? " (correct)" : "");
    else snprintf(buf, n, "%s = %s", dot ? dot + 1 : log->key, v->value);
}

// Title, configuration line and the key to the variants' colours and dashes.
static void svg_heading(Out *o, const CompareLog *log, const Config *cfg, double height) {
    char buf[512];
    int head_dim = cfg->n_head > 0 ? cfg->n_embd / cfg->n_head : 0;
    const char *run = cfg->name[0] ? cfg->name : "comparison";
    int at = 0;
    if (is_textbook_scale(log)) {
        out(o, "<title>Attention scale: 1/sqrt(d_k) vs none</title>\n");
        snprintf(buf, sizeof buf, "Attention scale 1/√d_k vs none — %s", run);
    } else {
        at = snprintf(buf, sizeof buf, "%s:", log->title ? log->title : log->key);
        for (int i = 0; i < log->n && at > 0 && (size_t)at < sizeof buf; i++)
            at += snprintf(buf + at, sizeof buf - (size_t)at, "%s%s", i ? " vs " : " ", log->v[i].value);
        out(o, "<title>");
        xml_text(o, buf);
        out(o, "</title>\n");
        if (at > 0 && (size_t)at < sizeof buf) snprintf(buf + at, sizeof buf - (size_t)at, " — %s", run);
    }
    out(o, "<rect width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n", SVG_W, height);
    out(o, "<text x=\"%d\" y=\"30\" font-size=\"19\" font-weight=\"bold\" fill=\"#111\" text-anchor=\"middle\">",
        SVG_W / 2);
    xml_text(o, buf);
    out(o, "</text>\n");
    snprintf(buf, sizeof buf, "%d layers · %d heads · n_embd %d (d_k = %d) · block %d · batch %d · %d steps · "
                              "init %s · lr %g · seed %d", cfg->n_layer, cfg->n_head, cfg->n_embd, head_dim,
             cfg->block_size, cfg->batch_size, cfg->max_steps, cfg->init, cfg->lr, cfg->seed);
    out(o, "<text x=\"%d\" y=\"51\" font-size=\"12\" fill=\"#555\" text-anchor=\"middle\">", SVG_W / 2);
    xml_text(o, buf);
    out(o, "</text>\n");
    // the variants, centred
    char labels[COMPARE_MAX_VARIANTS][160];
    double width = 0;
    for (int v = 0; v < log->n; v++) {
        svg_variant_label(labels[v], sizeof labels[v], log, cfg, v);
        width += 36 + text_width(labels[v], 7.2) + (v + 1 < log->n ? 28 : 0);
    }
    double x = SVG_W / 2.0 - width / 2;
    for (int v = 0; v < log->n; v++) {
        out(o, "<line x1=\"%.1f\" y1=\"73\" x2=\"%.1f\" y2=\"73\" stroke=\"%s\" stroke-width=\"3\"", x, x + 28,
            COLOR[v]);
        if (DASH[v]) out(o, " stroke-dasharray=\"%s\"", DASH[v]);
        out(o, "/>");
        out(o, "<text x=\"%.1f\" y=\"77.5\" font-size=\"13\" fill=\"#222\">", x + 36);
        xml_text(o, labels[v]);
        out(o, "</text>\n");
        x += 36 + text_width(labels[v], 7.2) + 28;
    }
}

// Scratch for the curves of any panel (free sc->x).
static void panel_scratch(const CompareLog *log, Scratch *sc) {
    size_t cap = 2;
    for (int v = 0; v < log->n; v++) {
        if (log->v[v].n_steps + 2 > cap) cap = log->v[v].n_steps + 2;
        if (log->v[v].n_probes + 2 > cap) cap = log->v[v].n_probes + 2;
    }
    size_t bytes;
    if (!mul_size(cap, 2 * sizeof(double), &bytes))
        die(EXIT_RUNTIME, "size overflow drawing %s", compare_svg_name(log));
    sc->x = xmalloc(bytes, "plot series");
    sc->y = sc->x + cap;
}

static int shown_panels(const CompareLog *log) {
    int n = 0;
    for (size_t i = 0; i < N_PANELS; i++) n += panel_shown(log, i);
    return n;
}

// The k-th shown panel, PANELS[i], at its place in the SVG (its top PANEL_TOP + k * PANEL_PITCH).
static void draw_panel(Out *o, const CompareLog *log, size_t i, int k, int x_label, long end, Scratch *sc) {
    Panel p = {PLOT_X0, PANEL_TOP + k * PANEL_PITCH, PLOT_X1 - PLOT_X0, PANEL_H, 0, end > 0 ? (double)end : 1,
               0, 1, 0, k};
    char title[160];
    snprintf(title, sizeof title, "(%c) %s", 'a' + k, PANELS[i].title);
    const char *yl = PANELS[i].ylabel;
    switch (PANELS[i].kind) {
    case PANEL_LOSS: draw_loss(o, log, &p, title, yl, x_label, sc); break;
    case PANEL_ENTROPY:
        draw_unit_stat(o, log, &p, title, yl, x_label, sc, offsetof(HeadStats, entropy_norm), 0, NULL);
        break;
    case PANEL_MAX_WEIGHT: {
        const KeyItem keys[2] = {{MAIN_LINE, "mean max weight"}, {SECOND_LINE, "fraction of rows > 0.99"}};
        draw_unit_stat(o, log, &p, title, yl, x_label, sc, offsetof(HeadStats, max_weight),
                       offsetof(HeadStats, frac_gt_099), keys);
        break;
    }
    case PANEL_GRADIENT: draw_gradient(o, log, &p, title, yl, x_label, sc); break;
    case PANEL_GEN_LOSS: draw_gen_loss(o, log, &p, title, yl, x_label, sc); break;
    case PANEL_FUTURE_MASS: draw_future_mass(o, log, &p, title, yl, x_label, sc); break;
    }
}

static int write_svg(const CompareLog *log, const Config *cfg, char *err, size_t errlen) {
    char path[2200];
    Out o;
    if (!out_open(&o, log->out_dir, compare_svg_name(log), path, sizeof path, err, errlen)) return 0;
    int n_panels = shown_panels(log);
    double height = PANEL_TOP + (n_panels - 1) * PANEL_PITCH + PANEL_H + 54;
    out(&o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
            "font-family=\"sans-serif\">\n", SVG_W, height, SVG_W, height);
    svg_heading(&o, log, cfg, height);
    Scratch sc;
    panel_scratch(log, &sc);
    long end = last_step(log);
    int k = 0;
    for (size_t i = 0; i < N_PANELS; i++) {
        if (!panel_shown(log, i)) continue;
        draw_panel(&o, log, i, k, k + 1 == n_panels, end, &sc);
        k++;
    }
    free(sc.x);
    out(&o, "</svg>\n");
    return out_close(&o, path, err, errlen);
}

// ---------------------------------------------------------------------------------------------
// report.html: report.md's text and tables (html_markdown), the panels of the SVG inline, one
// <svg> each, drawn by the same functions, and the attention maps of every variant at the kept
// probes. One self-contained file, like the lab's pages (report/html.c): no script, no other file.

// The page's own style rules, after the lab pages' (report/html.c).
static const char REPORT_CSS[] =
    "main{display:block}\n"
    "h2{margin-top:26px;border-bottom:1px solid #ddd;padding-bottom:2px}\n"
    "li{margin:4px 0;max-width:80ch}\n"
    "table.md{margin:6px 0}\n"
    "table.md .l{text-align:left}\n"
    "table.md th{white-space:normal;vertical-align:bottom}\n"
    "pre{background:#f6f6f6;border:1px solid #e2e2e2;border-radius:4px;padding:6px 8px;overflow-x:auto;"
    "font-size:13px;line-height:1.35;max-height:22em}\n"
    ".variants{display:flex;flex-wrap:wrap;gap:4px 22px;margin:8px 0;font-size:.95rem}\n"
    ".vk{display:inline-flex;align-items:center;gap:6px}\n"
    ".vk svg{flex:none}\n"
    "figure.chart{margin:6px 0 18px;max-width:900px}\n"
    "svg.chart{display:block;width:100%;height:auto}\n"
    ".bar{display:flex;flex-wrap:wrap;align-items:center;gap:6px 18px;font-size:.85rem;color:#333;margin:8px 0}\n"
    ".bar svg{display:block}\n"
    ".probe{font-family:ui-monospace,\"DejaVu Sans Mono\",Menlo,Consolas,monospace;font-size:.85rem;background:#f6f6f6;"
    "border:1px solid #e2e2e2;padding:4px 6px;overflow-wrap:anywhere;white-space:pre-wrap;max-width:80ch}\n"
    "figure.layer{margin:16px 0 22px}\n"
    "figure.layer>figcaption{font-weight:700;margin-bottom:4px}\n"
    ".mapgrid{display:grid;gap:8px 16px;align-items:center}\n"
    ".mapgrid.n1{grid-template-columns:max-content minmax(0,340px)}\n"
    ".mapgrid.n2{grid-template-columns:max-content repeat(2,minmax(0,340px))}\n"
    ".mapgrid.n3{grid-template-columns:max-content repeat(3,minmax(0,340px))}\n"
    ".mapgrid .when{font-size:.85rem;font-weight:600;color:#333;text-align:center}\n"
    ".mapgrid .who{font-size:.9rem}\n"
    ".heads{display:flex;gap:5px}\n"
    ".heads>figure{flex:1 1 0;min-width:0;margin:0}\n"
    ".heads figcaption{font-size:.72rem;color:#555;text-align:center;line-height:1.2}\n"
    "svg.hm{display:block;width:100%;height:auto;border:1px solid #888;shape-rendering:crispEdges}\n"
    ".narrow{display:none}\n"
    "@media (max-width:600px){figure.chart{overflow-x:auto}svg.chart{min-width:640px}.narrow{display:block}}\n"
    "@media (max-width:600px){.mapgrid{gap:4px 8px}.mapgrid.n1{grid-template-columns:minmax(0,1fr)}"
    ".mapgrid.n2{grid-template-columns:repeat(2,minmax(0,1fr))}.mapgrid.n3{grid-template-columns:"
    "repeat(3,minmax(0,1fr))}.mapgrid .corner{display:none}.mapgrid .who{grid-column:1/-1;margin-top:6px}"
    ".heads{gap:3px}.heads figcaption{font-size:.65rem}}\n";

// Which mask variant v computes: the compared key's value, or the shared one.
static const char *variant_mask(const CompareLog *log, const Config *cfg, int v) {
    return strcmp(log->key, "model.attn_mask") == 0 ? log->v[v].value : cfg->attn_mask;
}

// A short sample of variant v's line (colour and dash, as in the panels) and its name.
static void html_variant_key(Out *o, const CompareLog *log, const Config *cfg, int v) {
    char label[160];
    svg_variant_label(label, sizeof label, log, cfg, v);
    out(o, "<span class=\"vk\"><svg width=\"34\" height=\"10\" viewBox=\"0 0 34 10\" aria-hidden=\"true\">"
           "<line x1=\"1\" y1=\"5\" x2=\"33\" y2=\"5\" stroke=\"%s\" stroke-width=\"3\"", COLOR[v]);
    if (DASH[v]) out(o, " stroke-dasharray=\"%s\"", DASH[v]);
    out(o, "/></svg>");
    html_escape(o->f, label);
    out(o, "</span>");
}

static void html_variant_keys(Out *o, const CompareLog *log, const Config *cfg) {
    out(o, "<p class=\"variants\">");
    for (int v = 0; v < log->n; v++) html_variant_key(o, log, cfg, v);
    out(o, "</p>\n");
}

// The panels, each an <svg class="chart"> showing its part of the SVG file's drawing.
static void html_charts(Out *o, const CompareLog *log, const Config *cfg) {
    out(o, "<h2>Over training</h2>\n<p>The panels of <code>%s</code>, every variant overlaid in its colour and "
           "dash:</p>\n", compare_svg_name(log));
    out(o, "<p class=\"narrow\">On a narrow screen each panel is wider than the page: scroll it sideways.</p>\n");
    html_variant_keys(o, log, cfg);
    Scratch sc;
    panel_scratch(log, &sc);
    long end = last_step(log);
    int k = 0;
    for (size_t i = 0; i < N_PANELS; i++) {
        if (!panel_shown(log, i)) continue;
        double top = PANEL_TOP + k * PANEL_PITCH - 32, h = PANEL_H + 32 + 42;
        out(o, "<figure class=\"chart\"><svg class=\"chart\" viewBox=\"0 %.0f %d "
               "%.0f\" font-family=\"sans-serif\" role=\"img\" aria-label=\"", top, SVG_W, h);
        char title[160];
        snprintf(title, sizeof title, "(%c) %s", 'a' + k, PANELS[i].title);
        html_escape(o->f, title);
        out(o, "\">\n<rect x=\"0\" y=\"%.0f\" width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n", top, SVG_W, h);
        draw_panel(o, log, i, k, 1, end, &sc);
        out(o, "</svg></figure>\n");
        k++;
    }
    free(sc.x);
}

// The colour of weight p as the maps draw it: p rounded to a multiple of 1/MAP_LEVELS (level 0,
// below 1/(2 MAP_LEVELS), is the background: no weight).
#define MAP_LEVELS 64

static int map_level(float p) {
    double x = (double)p * MAP_LEVELS + 0.5;
    return x <= 0 ? 0 : x >= MAP_LEVELS ? MAP_LEVELS : (int)x;
}

static void level_colour(char *buf, size_t n, int level) {
    int rgb[3];
    attention_weight_colour((double)level / MAP_LEVELS, rgb);
    snprintf(buf, n, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

// The colour bar of the maps: every level in its colour, ticks at 0, 0.25, ..., 1; and the
// swatch of the masked cells when a variant is causal.
static void html_colour_bar(Out *o, int any_causal) {
    char c[16];
    out(o, "<div class=\"bar\"><span>weight P[t][u]:</span><svg width=\"272\" height=\"30\" viewBox=\"0 0 272 30\" "
           "font-family=\"sans-serif\" role=\"img\" aria-label=\"colour scale from 0 to 1\">");
    for (int l = 0; l <= MAP_LEVELS; l++) {
        level_colour(c, sizeof c, l);
        out(o, "<rect x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"14\" fill=\"%s\"/>", 6 + l * 260.0 / (MAP_LEVELS + 1),
            260.0 / (MAP_LEVELS + 1) + 0.3, c);
    }
    out(o, "<rect x=\"6\" y=\"0\" width=\"260\" height=\"14\" fill=\"none\" stroke=\"#888\"/>");
    for (int k = 0; k <= 4; k++)
        out(o, "<line x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"18\" stroke=\"#444\"/><text x=\"%.1f\" y=\"29\" "
               "font-size=\"10\" text-anchor=\"middle\" fill=\"#333\">%g</text>", 6 + k * 65.0, 6 + k * 65.0,
            6 + k * 65.0, k / 4.0);
    out(o, "</svg>");
    if (any_causal)
        out(o, "<span><svg width=\"14\" height=\"14\" viewBox=\"0 0 14 14\" aria-hidden=\"true\" style=\"display:inline;"
               "vertical-align:-2px\"><rect width=\"14\" height=\"14\" fill=\"#d9d9d9\" stroke=\"#888\"/></svg> masked "
               "(a future key, weight exactly 0)</span>");
    out(o, "<span><svg width=\"14\" height=\"14\" viewBox=\"0 0 14 14\" aria-hidden=\"true\" style=\"display:inline;"
           "vertical-align:-2px\"><path d=\"M1 1H13V13\" fill=\"none\" stroke=\"#d00000\" stroke-width=\"2\"/></svg> "
           "the diagonal, where a mask lets the future through</span></div>\n");
}

// One head's (Tm,Tm) weights as a heatmap: cell (t, u) at x = u, y = t in a Tm x Tm view box, one
// path per colour level of horizontal runs of cells.
static void html_heatmap(Out *o, const float *P, int Tm, int causal, const char *label) {
    unsigned char *lv = xmalloc((size_t)Tm * Tm, "heatmap");
    int used[MAP_LEVELS + 1] = {0};
    for (int i = 0; i < Tm * Tm; i++) used[lv[i] = (unsigned char)map_level(P[i])] = 1;
    char c[16];
    level_colour(c, sizeof c, 0);
    out(o, "<svg class=\"hm\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", Tm, Tm);
    html_escape(o->f, label);
    out(o, "\"><title>");
    html_escape(o->f, label);
    out(o, "</title><rect width=\"%d\" height=\"%d\" fill=\"%s\"/>", Tm, Tm, c);
    if (causal && Tm > 1) {  // the masked cells u > t: the triangle right of the staircase
        out(o, "<path fill=\"#d9d9d9\" d=\"M1 0H%dV%d", Tm, Tm - 1);
        for (int x = Tm - 1; x >= 1; x--) out(o, "H%dV%d", x, x - 1);
        out(o, "Z\"/>");
    }
    for (int l = 1; l <= MAP_LEVELS; l++) {
        if (!used[l]) continue;
        level_colour(c, sizeof c, l);
        out(o, "<path fill=\"%s\" d=\"", c);
        for (int t = 0; t < Tm; t++)
            for (int u = 0; u < Tm;) {
                if (lv[t * Tm + u] != l) { u++; continue; }
                int run = 1;
                while (u + run < Tm && lv[t * Tm + u + run] == l) run++;
                out(o, "M%d %dh%dv1h-%dz", u, t, run, run);
                u += run;
            }
        out(o, "\"/>");
    }
    if (!causal) {  // keys after the query are right of this staircase
        out(o, "<path fill=\"none\" stroke=\"#d00000\" stroke-opacity=\"0.8\" stroke-width=\"1\" "
               "vector-effect=\"non-scaling-stroke\" d=\"M1 0");
        for (int t = 0; t < Tm; t++) out(o, "V%dH%d", t + 1, t + 2 <= Tm ? t + 2 : Tm);
        out(o, "\"/>");
    }
    out(o, "</svg>");
    free(lv);
}

// The probe steps the maps show: the kept first, middle and last probes of variant 0, each once.
static int map_steps(const CompareLog *log, long *steps) {
    int n = 0;
    for (int k = 0; k < N_SNAPS; k++) {
        long s = log->v[0].snap[k].step;
        if (s < 0) continue;
        int seen = 0;
        for (int j = 0; j < n; j++) seen |= steps[j] == s;
        if (!seen) steps[n++] = s;
    }
    qsort(steps, (size_t)n, sizeof(long), cmp_long);
    return n;
}

// The weights variant v kept of step s, or NULL.
static const float *snap_at(const VarLog *v, long s) {
    for (int k = 0; k < N_SNAPS; k++)
        if (v->snap[k].step == s && v->snap[k].P) return v->snap[k].P;
    return NULL;
}

static void html_maps(Out *o, const CompareLog *log, const Config *cfg) {
    out(o, "<h2 id=\"maps\">Attention maps</h2>\n");
    long steps[N_SNAPS];
    int ns = log->map_text ? map_steps(log, steps) : 0;
    if (ns == 0) {
        out(o, "<p>No attention weights were kept (no probe ran: log.attn_interval = %d), so there are no maps.</p>\n",
            cfg->attn_interval);
        return;
    }
    const char *when[N_SNAPS];  // the first probe kept is the start, the last the end
    for (int j = 0; j < ns; j++)
        when[j] = steps[j] == log->v[0].snap[SNAP_FIRST].step  ? "start"
                  : steps[j] == log->v[0].snap[SNAP_LAST].step ? "end"
                                                               : "middle";
    int L = log->map_L, NH = log->map_NH, T = log->map_T, Tm = log->map_Tm;
    out(o, "<p>The attention weights P of one sequence, the first of the fixed probe batch, in every layer and head, "
           "at step");
    for (int j = 0; j < ns; j++)
        out(o, "%s %ld (%s)", j == 0 ? "" : j + 1 == ns ? " and" : ",", steps[j], when[j]);
    out(o, ": one row per variant, the same weights as the probe's statistics. In each map row t is query t (top "
           "to bottom) and column u is key u (left to right)");
    if (Tm < T) out(o, ", for the first %d of the sequence's %d positions", Tm, T);
    out(o, "; the colour of a cell is its weight, on the colour scale of <code>./sample --attention-map</code> in %d "
           "steps (a weight below 1/%d is drawn as 0). A peaked row is one dark cell in a pale row.</p>\n",
        MAP_LEVELS, 2 * MAP_LEVELS);
    out(o, "<p>The sequence%s (␣ is a space, ↵ a newline):</p>\n<p class=\"probe\">",
        Tm < T ? ", its first positions" : "");
    for (int t = 0; t < Tm; t++) {
        char ch[8] = {0};
        utf8_encode(attention_visible_char(log->map_text[t]), ch);
        html_escape(o->f, ch);
    }
    out(o, "</p>\n");
    int any_causal = 0;
    for (int v = 0; v < log->n; v++) any_causal |= strcmp(variant_mask(log, cfg, v), "causal") == 0;
    html_colour_bar(o, any_causal);
    size_t head = (size_t)Tm * Tm;
    for (int l = 0; l < L; l++) {
        out(o, "<figure class=\"layer\"><figcaption>Layer %d</figcaption>\n<div class=\"mapgrid n%d\">"
               "<div class=\"corner\"></div>", l, ns);
        for (int j = 0; j < ns; j++) out(o, "<div class=\"when\">step %ld (%s)</div>", steps[j], when[j]);
        out(o, "\n");
        for (int v = 0; v < log->n; v++) {
            int causal = strcmp(variant_mask(log, cfg, v), "causal") == 0;
            out(o, "<div class=\"who\">");
            html_variant_key(o, log, cfg, v);
            out(o, "</div>");
            for (int j = 0; j < ns; j++) {
                const float *P = snap_at(&log->v[v], steps[j]);
                out(o, "<div class=\"heads\">");
                for (int h = 0; h < NH; h++) {
                    out(o, "<figure data-variant=\"");
                    html_escape(o->f, log->v[v].name);
                    out(o, "\" data-step=\"%ld\" data-layer=\"%d\" data-head=\"%d\">", steps[j], l, h);
                    char label[256];
                    snprintf(label, sizeof label, "%s, step %ld, layer %d, head %d", log->v[v].name, steps[j], l, h);
                    if (P) html_heatmap(o, P + ((size_t)l * NH + h) * head, Tm, causal, label);
                    else out(o, "<p>not kept</p>");
                    out(o, "<figcaption>head %d</figcaption></figure>", h);
                }
                out(o, "</div>");
            }
            out(o, "\n");
        }
        out(o, "</div></figure>\n");
    }
}

// The lines of md from p up to (not including) the next line outside a code fence that starts
// with "## ", or the end: a NUL-terminated copy (malloc'd); *next is where that line starts.
static char *md_section(const char *p, const char **next) {
    const char *q = p;
    size_t fence = 0;  // the open fence's length (html_markdown's rule: a line of 3 or more backquotes)
    for (int first = 1; *q; first = 0) {
        size_t n = strcspn(q, "\n"), ticks = strspn(q, "`");
        if (!first && !fence && strncmp(q, "## ", 3) == 0) break;
        if (ticks >= 3 && ticks == n) fence = fence == 0 ? ticks : fence == ticks ? 0 : fence;
        q += n + (q[n] == '\n');
    }
    *next = q;
    size_t n = (size_t)(q - p);
    char *c = xmalloc(n + 1, "report section");
    memcpy(c, p, n);
    c[n] = 0;
    return c;
}

static int write_html(const CompareLog *log, const Config *cfg, const char *md, char *err, size_t errlen) {
    char path[2200], tmp[2200];
    Out o;
    if (!out_open(&o, log->out_dir, "report.html.tmp", tmp, sizeof tmp, err, errlen)) return 0;
    snprintf(path, sizeof path, "%s/report.html", log->out_dir);
    // the title: report.md's first line
    const char *body = md;
    char title[512] = "Comparison";
    if (strncmp(md, "# ", 2) == 0) {
        const char *nl = strchr(md, '\n');
        size_t n = nl ? (size_t)(nl - md - 2) : strlen(md + 2);
        snprintf(title, sizeof title, "%.*s", (int)(n < sizeof title ? n : sizeof title - 1), md + 2);
        body = nl ? nl + 1 : md + strlen(md);
    }
    html_write_head_css(o.f, title, log->command ? log->command : "./train", REPORT_CSS);
    out(&o, "<main>\n");
    // report.md section by section; the panels and the maps go before the reading
    int placed = 0;
    for (const char *p = body; *p;) {
        const char *next;
        char *sec = md_section(p, &next);
        if (!placed && strncmp(sec, "## What the numbers show", 24) == 0) {
            html_charts(&o, log, cfg);
            html_maps(&o, log, cfg);
            placed = 1;
        }
        html_markdown(o.f, sec);
        if (p == body) html_variant_keys(&o, log, cfg);
        free(sec);
        p = next;
    }
    if (!placed) {
        html_charts(&o, log, cfg);
        html_maps(&o, log, cfg);
    }
    out(&o, "</main>\n<footer>\n<p>The same text and tables as <code>report.md</code> and the panels of "
            "<code>%s</code>, written by the same run; every number is the program's own. The page needs no "
            "network and no other file.</p>\n</footer>\n", compare_svg_name(log));
    html_write_tail(o.f, 0);
    if (!out_close(&o, tmp, err, errlen)) {
        remove(tmp);
        return 0;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
        remove(tmp);
        return 0;
    }
    return 1;
}

// ---------------------------------------------------------------------------------------------

int compare_log_finish(CompareLog *log, const Config *cfg, char *err, size_t errlen) {
    if (!log) {
        snprintf(err, errlen, "no comparison log to write");
        return 0;
    }
    for (int v = 0; v < log->n; v++) prepare(&log->v[v]);
    char *md = md_text(log, cfg, err, errlen);
    int ok = md && write_csv(log, err, errlen) && write_md(log, md, err, errlen) && write_svg(log, cfg, err, errlen) &&
             write_html(log, cfg, md, err, errlen);
    free(md);
    compare_log_discard(log);
    return ok;
}

void compare_log_discard(CompareLog *log) {
    if (!log) return;
    for (int v = 0; v < log->n; v++) {
        free(log->v[v].value);
        free(log->v[v].name);
        free(log->v[v].steps);
        free(log->v[v].probes);
        free(log->v[v].sample);
        for (int k = 0; k < N_SNAPS; k++) free(log->v[v].snap[k].P);
    }
    free(log->map_text);
    free(log->command);
    free(log->key);
    free(log->out_dir);
    free(log);
}
